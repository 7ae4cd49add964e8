"""The connection and client surface Redis added after 7.0: CLIENT SETINFO
(7.2), CLIENT NO-TOUCH (7.2), CLIENT KILL ... MAXAGE (7.4), the CLIENT
LIST / INFO line of Redis 8 (watch, lib-name, lib-ver, io-thread and the
per-client totals) and the RESP3 order of a command's reply and the pub/sub
messages it raises for its own client (7.2).  Compared byte for byte with
valkey-server 9.1 where Valkey behaves as Redis; the rest is asserted
against Redis's documented replies."""

import re

import pytest

from support.resp import RespConn, encode
from support.wait import wait_until

# Redis 8's CLIENT LIST / CLIENT INFO fields, in order (catClientInfoString)
FIELDS = ["id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub", "ssub",
          "multi", "watch", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl", "oll",
          "omem", "tot-mem", "events", "cmd", "user", "redir", "resp", "lib-name", "lib-ver",
          "io-thread", "tot-net-in", "tot-net-out", "tot-cmds", "read-events", "parse-batch-cmd-sum",
          "parse-batch-cnt"]


def _fields(line: bytes) -> dict:
    out = {}
    for part in line.decode().strip().split(" "):
        k, _, v = part.partition("=")
        out[k] = v
    return out


def _info(conn) -> dict:
    raw = conn.call("CLIENT", "INFO")
    body = raw.split(b"\r\n", 1)[1]
    if body.startswith(b"txt:"):
        body = body[4:]
    return _fields(body.rstrip(b"\r\n"))


def test_client_setinfo_same_as_valkey(same_as_valkey):
    same_as_valkey([
        ["CLIENT", "SETINFO", "LIB-NAME", "redis-py"],
        ["CLIENT", "SETINFO", "lib-ver", "8.1.0"],
        ["CLIENT", "SETINFO", "lib-name", "a b"],
        ["CLIENT", "SETINFO", "LIB-VER", "x\ny"],
        ["CLIENT", "SETINFO", "lib-name", "caf\xe9"],
        ["CLIENT", "SETINFO", "lib-xx", "a"], ["CLIENT", "SETINFO", b"\xff\xfe", "a"],
        ["CLIENT", "SETINFO", "lib-name"],
        ["CLIENT", "SETINFO", "lib-name", "a", "b"],
        ["CLIENT", "SETINFO", "lib-name", ""],
        ["CLIENT", "SETINFO", "lib-name", "jedis(redis-om-spring_v1.0.0)"],
        ["CLIENT", "NO-TOUCH", "on"], ["CLIENT", "NO-TOUCH", "OFF"], ["CLIENT", "NO-TOUCH", "maybe"],
        ["CLIENT", "NO-TOUCH"],
        ["CLIENT", "KILL", "MAXAGE", "0"], ["CLIENT", "KILL", "MAXAGE", "-1"],
        ["CLIENT", "KILL", "MAXAGE", "abc"], ["CLIENT", "KILL", "MAXAGE", "100000"],
        ["CLIENT", "KILL", "MAXAGE"],
    ])


def test_setinfo_shows_in_client_info_and_list_and_survives_reset_and_hello(server):
    with RespConn(server.port) as c:
        assert c.call("CLIENT", "SETINFO", "LIB-NAME", "mylib") == b"+OK\r\n"
        assert c.call("CLIENT", "SETINFO", "LIB-VER", "1.2.3") == b"+OK\r\n"
        f = _info(c)
        assert (f["lib-name"], f["lib-ver"]) == ("mylib", "1.2.3")
        cid = f["id"]
        lst = c.call("CLIENT", "LIST", "ID", cid)
        g = _fields(lst.split(b"\r\n", 1)[1].rstrip(b"\r\n"))
        assert (g["lib-name"], g["lib-ver"]) == ("mylib", "1.2.3")
        # RESET and HELLO keep them: they describe the library behind the link
        assert c.call("RESET") == b"+RESET\r\n"
        c.call("HELLO", "3", "SETNAME", "n1")
        f = _info(c)
        assert (f["lib-name"], f["lib-ver"], f["name"], f["resp"]) == ("mylib", "1.2.3", "n1", "3")
        # an empty value clears the field
        assert c.call("CLIENT", "SETINFO", "lib-ver", "") == b"+OK\r\n"
        assert _info(c)["lib-ver"] == ""


def test_client_list_line_has_redis8_fields_in_order(server):
    with RespConn(server.port) as c:
        keys = [k for k in _info(c)]
        assert keys == FIELDS
        lst = c.call("CLIENT", "LIST")
        for line in lst.split(b"\r\n", 1)[1].rstrip(b"\r\n").split(b"\n"):
            assert list(_fields(line)) == FIELDS
        f = _info(c)
        assert f["io-thread"] == "0" and f["watch"] == "0" and f["redir"] == "-1"
        c.call("WATCH", "a", "b", "c")
        assert _info(c)["watch"] == "3"
        c.call("UNWATCH")
        assert _info(c)["watch"] == "0"


def test_per_client_totals_count_bytes_and_commands(server):
    with RespConn(server.port) as c:
        info_req = encode("CLIENT", "INFO")
        c.send_raw(info_req)
        first = c.read()
        a = _fields(first.split(b"\r\n", 1)[1].rstrip(b"\r\n"))
        assert c.call("PING") == b"+PONG\r\n"
        assert c.call("NOSUCHCOMMAND").startswith(b"-ERR unknown command")
        b = _info(c)
        ping = len(encode("PING"))
        bad = len(encode("NOSUCHCOMMAND"))
        assert int(b["tot-net-in"]) - int(a["tot-net-in"]) == ping + bad + len(info_req)
        err = len(b"-ERR unknown command 'NOSUCHCOMMAND', with args beginning with: \r\n")
        assert int(b["tot-net-out"]) - int(a["tot-net-out"]) == len(first) + 7 + err
        # commands run (the unknown one is not): CLIENT INFO and PING
        assert int(b["tot-cmds"]) - int(a["tot-cmds"]) == 2
        # a script's commands count for its caller, a transaction's each
        assert c.call("EVAL", "redis.call('SET', 'x', '1'); return redis.call('GET', 'x')", "0") == \
            b"$1\r\n1\r\n"
        c.call("MULTI")
        c.call("INCR", "n")
        assert c.call("EXEC") == b"*1\r\n:1\r\n"
        d = _info(c)
        # CLIENT INFO (b's), EVAL, SET, GET, MULTI, INCR, EXEC
        assert int(d["tot-cmds"]) - int(b["tot-cmds"]) == 7


def test_client_kill_maxage(server):
    with RespConn(server.port) as old, RespConn(server.port) as me:
        old_id = int(_info(old)["id"])
        wait_until(lambda: int(_fields(me.call("CLIENT", "LIST", "ID", str(old_id))
                                       .split(b"\r\n", 1)[1].rstrip(b"\r\n"))["age"]) >= 2,
                   what="a connection 2 seconds old")
        young = RespConn(server.port)
        try:
            young_id = int(_info(young)["id"])
            # MAXAGE kills the connections at least that old (SKIPME: not me)
            assert me.call("CLIENT", "KILL", "ID", str(young_id), "MAXAGE", "2") == b":0\r\n"
            assert me.call("CLIENT", "KILL", "ID", str(old_id), "MAXAGE", "2") == b":1\r\n"
            assert young.call("PING") == b"+PONG\r\n"
        finally:
            young.close()


def test_client_no_touch_flag_and_reset(server):
    with RespConn(server.port) as c:
        assert _info(c)["flags"] == "N"
        assert c.call("CLIENT", "NO-TOUCH", "on") == b"+OK\r\n"
        assert _info(c)["flags"] == "T"
        c.call("CLIENT", "NO-EVICT", "on")
        assert _info(c)["flags"] == "eT"
        assert c.call("RESET") == b"+RESET\r\n"
        assert _info(c)["flags"] == "N"


def _idle(c, key) -> int:
    return int(c.call("OBJECT", "IDLETIME", key)[1:-2])


@pytest.mark.parametrize("policy", ["allkeys-lru", "volatile-lru"])
def test_client_no_touch_leaves_access_times_alone(start_server, policy):
    s = start_server("--maxmemory-policy", policy)
    with RespConn(s.port) as w, RespConn(s.port) as nt:
        w.call("SET", "k", "v", "EX", "1000")
        w.call("SET", "k2", "v", "EX", "1000")
        wait_until(lambda: _idle(w, "k") >= 2 and _idle(w, "k2") >= 2, what="idle keys")
        assert nt.call("CLIENT", "NO-TOUCH", "ON") == b"+OK\r\n"
        assert nt.call("GET", "k") == b"$1\r\nv\r\n"
        assert nt.call("MGET", "k", "k2") == b"*2\r\n$1\r\nv\r\n$1\r\nv\r\n"
        assert nt.call("STRLEN", "k") == b":1\r\n"
        # a script run by a NO-TOUCH client reads as it
        assert nt.call("EVAL", "return redis.call('GET', KEYS[1])", "1", "k") == b"$1\r\nv\r\n"
        assert _idle(w, "k") >= 2 and _idle(w, "k2") >= 2
        # TOUCH still touches
        assert nt.call("TOUCH", "k") == b":1\r\n"
        assert _idle(w, "k") < 2 and _idle(w, "k2") >= 2
        # back to normal
        assert nt.call("CLIENT", "NO-TOUCH", "OFF") == b"+OK\r\n"
        assert nt.call("GET", "k2") == b"$1\r\nv\r\n"
        assert _idle(w, "k2") < 2


def _exchange(port, cmds, setup=()) -> bytes:
    """Every byte a RESP3 connection gets for cmds (sent one at a time)."""
    with RespConn(port) as c:
        c.call("HELLO", "3")
        c.call("FLUSHALL")
        for argv in setup:
            c.call(*argv)
        for argv in cmds:
            c.send_raw(encode(*argv))
        return c.quit_and_read()


PUSH_CMDS = [
    ["SUBSCRIBE", "ch"], ["PUBLISH", "ch", "hi"], ["PUBLISH", "other", "x"],
    ["MULTI"], ["PUBLISH", "ch", "a"], ["SET", "k", "1"], ["PUBLISH", "ch", "b"], ["EXEC"],
    ["EVAL", "redis.call('PUBLISH', 'ch', 'in-script'); return redis.call('PUBLISH', 'ch', 'x2')", "0"],
    ["PSUBSCRIBE", "c*"], ["PUBLISH", "ch", "both"],
    ["SSUBSCRIBE", "sh"], ["SPUBLISH", "sh", "shard"],
    ["PING"],
]


def test_resp3_publish_reply_before_own_message_same_as_valkey(server, valkey_server):
    ours = _exchange(server.port, PUSH_CMDS)
    theirs = _exchange(valkey_server.port, PUSH_CMDS)
    assert ours == theirs
    assert b":1\r\n>3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n" in ours


@pytest.mark.parametrize("fast", [True, False])
def test_resp3_keyspace_notification_follows_reply_same_as_valkey(server, valkey_server, fast):
    cmds = [["SUBSCRIBE", "__keyspace@0__:k"], ["SET", "k", "v"], ["INCR", "n"], ["DEL", "k"],
            ["MULTI"], ["SET", "k", "a"], ["SET", "k", "b"], ["EXEC"], ["PING"]]
    setup = [["CONFIG", "SET", "notify-keyspace-events", "KEA"]]
    if not fast:
        setup.append(["CLIENT", "TRACKING", "ON"])
    try:
        ours = _exchange(server.port, cmds, setup)
        theirs = _exchange(valkey_server.port, cmds, setup)
    finally:
        for port in (server.port, valkey_server.port):
            with RespConn(port) as c:
                c.call("CONFIG", "SET", "notify-keyspace-events", "")
    assert re.search(rb"\+OK\r\n>3\r\n\$7\r\nmessage\r\n", ours)
    assert ours == theirs


def test_resp2_subscriber_messages_unchanged(server, valkey_server):
    cmds = [["SUBSCRIBE", "ch"], ["PING"], ["PSUBSCRIBE", "c*"], ["UNSUBSCRIBE"], ["PUNSUBSCRIBE"]]
    outs = []
    for port in (server.port, valkey_server.port):
        with RespConn(port) as c, RespConn(port) as p:
            for argv in cmds[:3]:
                c.send_raw(encode(*argv))
            c.expect(b"*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n*2\r\n$4\r\npong\r\n$0\r\n\r\n"
                     b"*3\r\n$10\r\npsubscribe\r\n$2\r\nc*\r\n:2\r\n")
            assert p.call("PUBLISH", "ch", "m") == b":2\r\n"
            for argv in cmds[3:]:
                c.send_raw(encode(*argv))
            outs.append(c.quit_and_read())
    assert outs[0] == outs[1]


def test_client_no_touch_leaves_lfu_counters_alone(start_server):
    s = start_server("--maxmemory-policy", "allkeys-lfu")
    with RespConn(s.port) as w, RespConn(s.port) as nt:
        w.call("SET", "k", "v")
        base = w.call("OBJECT", "FREQ", "k")
        assert nt.call("CLIENT", "NO-TOUCH", "ON") == b"+OK\r\n"
        # (each access raises a counter this low with probability 1/11 or more:
        # 100 accesses leave it unchanged with probability < 1e-4)
        assert nt.pipeline(*[("GET", "k")] * 100) == b"$1\r\nv\r\n" * 100
        assert w.call("OBJECT", "FREQ", "k") == base
        assert nt.pipeline(*[("TOUCH", "k")] * 100) == b":1\r\n" * 100
        assert int(w.call("OBJECT", "FREQ", "k")[1:-2]) > int(base[1:-2])


def test_client_no_touch_writes_in_place_keep_the_access_time(start_server):
    s = start_server("--maxmemory-policy", "allkeys-lru")
    with RespConn(s.port) as w, RespConn(s.port) as nt:
        w.call("RPUSH", "l", "a")
        w.call("HSET", "h", "f", "v")
        w.call("SET", "s", "v")
        wait_until(lambda: all(_idle(w, k) >= 2 for k in ("l", "h", "s")), what="idle keys")
        assert nt.call("CLIENT", "NO-TOUCH", "ON") == b"+OK\r\n"
        # changed in place: their access time stays
        assert nt.call("RPUSH", "l", "b") == b":2\r\n"
        assert nt.call("HSET", "h", "g", "w") == b":1\r\n"
        assert _idle(w, "l") >= 2 and _idle(w, "h") >= 2
        # a new key is new; a replaced value is a new object (Redis's LRU too)
        assert nt.call("SET", "n", "v") == b"+OK\r\n"
        assert nt.call("SET", "s", "w") == b"+OK\r\n"
        assert _idle(w, "n") < 2 and _idle(w, "s") < 2
        # a normal client's write touches
        assert w.call("RPUSH", "l", "c") == b":3\r\n"
        assert _idle(w, "l") < 2
