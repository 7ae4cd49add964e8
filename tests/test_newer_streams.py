"""The stream surface Redis added or changed after 7.0: consumers'
active time (7.2: XINFO CONSUMERS ``inactive``, XINFO STREAM FULL
``active-time``), consumers created by XCLAIM/XAUTOCLAIM/XREADGROUP before
anything is served (7.2), XREAD ... ``+`` (7.4), XDELEX/XACKDEL and the
KEEPREF/DELREF/ACKED policies (8.2), XREADGROUP ... CLAIM (8.4).  Where
valkey-server 9.1 shares the behaviour the replies are compared with it
byte for byte; the 8.x commands valkey lacks are checked against Redis's
documented replies."""

from __future__ import annotations

import re
import time

import pytest

from ophidis.persistence.rdbcodec import enc_len, enc_string
from ophidis.persistence.rdbdecode import ValueReader
from ophidis.persistence.rdbencode import stream_body
from ophidis.persistence.rdbformat import T_STREAM_LISTPACKS_4, T_STREAM_LISTPACKS_5, RdbError
from ophidis.types.stream import StreamValue
from support.replication import SyncStream
from support.resp import RespConn


def test_approx_trim_with_limit_replays_from_the_aof(start_server):
    """XADD ~ LIMIT propagates MAXLEN = n LIMIT l: the AOF's replay must
    not apply the LIMIT (nor refuse it without ~), as Redis's loader."""
    for strategy, arg in (("MAXLEN", "55"), ("MINID", "45")):
        s = start_server("--appendonly", "yes", "--stream-node-max-entries", "10",
                         "--enable-debug-command", "yes")
        c = RespConn(s.port)
        for j in range(100):
            c.call("XADD", "st", "%d-1" % (j + 1), "f", "v")
        c.call("XADD", "st", strategy, "~", arg, "LIMIT", "30", "*", "f", "v")
        assert c.call("XLEN", "st") == b":71\r\n"
        assert c.call("CONFIG", "SET", "stream-node-max-entries", "1") == b"+OK\r\n"
        assert c.call("DEBUG", "LOADAOF") == b"+OK\r\n"
        assert c.call("XLEN", "st") == b":71\r\n"
        c.call("XADD", "st", "*", "f", "v")
        assert c.call("XLEN", "st") == b":72\r\n"
        c.close()
        s.stop()


_TIMES = re.compile(rb"(idle|inactive|seen-time|active-time)\r\n:(\d+)\r\n")
_MS = re.compile(rb":1\d{12}\r\n")


def _times(reply: bytes) -> bytes:
    """Idle and inactive times and absolute times hidden (-1 kept: a
    consumer never active)."""
    return _MS.sub(b":<ms>\r\n", _TIMES.sub(rb"\1\r\n:<t>\r\n", reply))


def test_consumers_active_time_same_as_valkey(same_as_valkey):
    """7.2: XINFO CONSUMERS' inactive (-1 until the consumer gets an
    entry), XINFO STREAM FULL's active-time; XREADGROUP, XCLAIM and
    XAUTOCLAIM make the consumer even when they serve nothing."""
    same_as_valkey([
        ["XADD", "s", "1", "f", "v"], ["XADD", "s", "2", "f", "v"],
        ["XGROUP", "CREATE", "s", "g", "$"],
        ["XREADGROUP", "GROUP", "g", "idle", "STREAMS", "s", ">"],
        ["XCLAIM", "s", "g", "claimer", "0", "1"],
        ["XAUTOCLAIM", "s", "g", "auto", "0", "0"],
        ["XGROUP", "CREATECONSUMER", "s", "g", "made"],
        (["XINFO", "CONSUMERS", "s", "g"], _times),
        ["XGROUP", "SETID", "s", "g", "0"],
        ["XREADGROUP", "GROUP", "g", "reader", "COUNT", "1", "STREAMS", "s", ">"],
        ["XREADGROUP", "GROUP", "g", "noack", "NOACK", "STREAMS", "s", ">"],
        ["XREADGROUP", "GROUP", "g", "idle", "STREAMS", "s", "0"],
        ["XCLAIM", "s", "g", "claimer", "0", "1", "JUSTID"],
        (["XINFO", "CONSUMERS", "s", "g"], _times),
        (["XINFO", "STREAM", "s", "FULL"], _times),
        ["XINFO", "CONSUMERS", "s", "nogroup"],
    ])


def test_inactive_is_measured(r):
    r.xadd("s", {"f": "v"}, id="1")
    r.xgroup_create("s", "g", "0")
    r.xreadgroup("g", "c", {"s": ">"})
    r.xgroup_createconsumer("s", "g", "never")
    info = {x["name"]: x for x in r.xinfo_consumers("s", "g")}
    assert info[b"never"]["inactive"] == -1
    assert 0 <= info[b"c"]["inactive"] < 5000
    full = r.execute_command("XINFO", "STREAM", "s", "FULL")
    cons = dict(zip(full[full.index(b"groups") + 1][0][::2], full[full.index(b"groups") + 1][0][1::2]))
    by = {c[1]: dict(zip(c[::2], c[1::2])) for c in cons[b"consumers"]}
    assert by[b"never"][b"active-time"] == -1
    assert by[b"c"][b"active-time"] >= by[b"c"][b"seen-time"] - 5000 > 0


def test_reload_takes_the_seen_time_as_active_time(r):
    """Our RDB files keep type 19 (what Redis 7.0 loads), which has no
    active time: loaded, it is the seen time, as Redis loads such files."""
    r.xadd("s", {"f": "v"}, id="1")
    r.xgroup_create("s", "g", "0")
    r.xgroup_createconsumer("s", "g", "c")
    assert r.execute_command("DEBUG", "RELOAD")
    c = r.xinfo_consumers("s", "g")[0]
    assert c["inactive"] == c["idle"] or abs(c["inactive"] - c["idle"]) < 50


def test_xread_plus_and_read_errors_same_as_valkey(same_as_valkey):
    """7.4: XREAD ... + reads the last entry; XREADGROUP refuses +; the
    'Unbalanced' errors name the command; BLOCK in a script does not
    block and is no error (7.2)."""
    same_as_valkey([
        ["XREAD", "STREAMS", "s", "+"],
        ["XADD", "s", "1-1", "f", "v"], ["XADD", "s", "5-0", "f", "w"],
        ["XREAD", "STREAMS", "s", "+"],
        ["XREAD", "COUNT", "5", "STREAMS", "s", "nokey", "+", "+"],
        ["XREAD", "STREAMS", "s", "nokey", "+", "0"],
        ["XDEL", "s", "5-0"], ["XREAD", "STREAMS", "s", "+"],
        ["XADD", "t", "0-1", "f", "v"], ["XREAD", "STREAMS", "t", "+"],
        ["XGROUP", "CREATE", "e", "g", "$", "MKSTREAM"],
        ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "e", "+"],
        ["XREAD", "STREAMS", "s", "t", "+"],
        ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "t", ">"],
        ["XREAD", "BLOCK", "0", "STREAMS", "s"],
        ["EVAL", "return redis.call('XREAD', 'BLOCK', '0', 'STREAMS', 'e', '$')", "0"],
        ["EVAL", "return redis.call('XREADGROUP', 'GROUP', 'g', 'c', 'BLOCK', '0', 'STREAMS', 'e', '>')", "0"],
        ["MULTI"], ["XREAD", "BLOCK", "0", "STREAMS", "s", "+"], ["EXEC"],
    ])


def test_xread_plus_on_a_stream_never_written(raw, raw3):
    """Redis 7.4 refuses + where the last ID is 0-0 (valkey replies nil)."""
    for c in (raw, raw3):
        c.call("DEL", "e")
        c.call("XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
        assert c.call("XREAD", "STREAMS", "e", "+") == b"-ERR the stream last element ID is 0-0\r\n"
        assert c.call("XREAD", "STREAMS", "nokey", "+") == (b"*-1\r\n" if c is raw else b"_\r\n")


def test_xsetid_and_xadd_errors_same_as_valkey(same_as_valkey):
    same_as_valkey([
        ["XADD", "s", "1", "f", "v"], ["XADD", "s", "5", "f", "v"], ["XDEL", "s", "5"],
        ["XSETID", "s", "4"], ["XSETID", "s", "5"], ["XINFO", "STREAM", "s", "FULL"],
        ["XADD", "x", "3-18446744073709551615", "f", "v"], ["XADD", "x", "3-*", "f", "v"],
        ["XADD", "x", "2-*", "f", "v"], ["XADD", "x", "4-*", "f", "v"],
    ])


def test_xread_plus_in_resp2_with_redis_py(r):
    r.xadd("s", {"f": "v"}, id="3")
    r.xadd("s", {"f": "w"}, id="4")
    assert r.execute_command("XREAD", "BLOCK", "50", "STREAMS", "s", "+") == [
        [b"s", [(b"4-0", {b"f": b"w"})]]]


# ---------------------------------------------------------------------------
# 8.2: XDELEX, XACKDEL, KEEPREF | DELREF | ACKED (valkey has none of them:
# Redis's documented replies and its own suite's cases)
# ---------------------------------------------------------------------------
def _two_groups(c):
    c.call("DEL", "st")
    c.call("XADD", "st", "1-0", "f", "v")
    c.call("XADD", "st", "2-0", "f", "v")
    c.call("XGROUP", "CREATE", "st", "g1", "0")
    c.call("XGROUP", "CREATE", "st", "g2", "0")
    c.call("XREADGROUP", "GROUP", "g1", "c1", "STREAMS", "st", ">")
    c.call("XREADGROUP", "GROUP", "g2", "c2", "STREAMS", "st", ">")


_NOPEL2 = b"*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n"


def test_xackdel_policies(raw):
    _two_groups(raw)
    assert raw.call("XACKDEL", "st", "g1", "DELREF", "IDS", "2", "1-0", "2-0") == b"*2\r\n:1\r\n:1\r\n"
    assert raw.call("XLEN", "st") == b":0\r\n"
    assert raw.call("XPENDING", "st", "g1") == _NOPEL2
    assert raw.call("XPENDING", "st", "g2") == _NOPEL2
    assert raw.call("XACKDEL", "st", "g2", "DELREF", "IDS", "2", "1-0", "2-0") == b"*2\r\n:-1\r\n:-1\r\n"

    _two_groups(raw)
    assert raw.call("XACKDEL", "st", "g1", "ACKED", "IDS", "2", "1-0", "2-0") == b"*2\r\n:2\r\n:2\r\n"
    assert raw.call("XLEN", "st") == b":2\r\n"
    assert raw.call("XPENDING", "st", "g1") == _NOPEL2
    assert raw.call("XPENDING", "st", "g2").startswith(b"*4\r\n:2\r\n")
    assert raw.call("XACKDEL", "st", "g2", "acked", "IDS", "2", "1-0", "2-0") == b"*2\r\n:1\r\n:1\r\n"
    assert raw.call("XLEN", "st") == b":0\r\n"

    _two_groups(raw)
    assert raw.call("XACKDEL", "st", "g1", "KEEPREF", "IDS", "2", "1-0", "2-0") == b"*2\r\n:1\r\n:1\r\n"
    assert raw.call("XLEN", "st") == b":0\r\n"
    assert raw.call("XPENDING", "st", "g2").startswith(b"*4\r\n:2\r\n")
    # acknowledged in g2 though the entries are gone: 1
    assert raw.call("XACKDEL", "st", "g2", "IDS", "2", "1-0", "2-0") == b"*2\r\n:1\r\n:1\r\n"
    assert raw.call("XPENDING", "st", "g2") == _NOPEL2


def test_xackdel_and_xdelex_errors(raw, raw3):
    for c in (raw, raw3):
        c.call("DEL", "st")
        assert c.call("XACKDEL", "st", "g", "IDS", "2", "1-1", "2-2") == b"*2\r\n:-1\r\n:-1\r\n"
        c.call("XADD", "st", "1-0", "f", "v")
        assert c.call("XACKDEL", "st", "g", "IDS", "2", "1-1", "2-2") == b"*2\r\n:-1\r\n:-1\r\n"
        assert c.call("XDELEX", "nokey", "IDS", "1", "1") == b"*1\r\n:-1\r\n"
    c = raw
    c.call("XGROUP", "CREATE", "st", "g", "0")
    for cmd in (["XACKDEL", "st", "g"], ["XACKDEL", "st"], ["XDELEX", "st", "IDS", "1"]):
        assert c.call(*cmd) == b"-ERR wrong number of arguments for '%s' command\r\n" % cmd[0].lower().encode()
    numids = b"-ERR Number of IDs must be a positive integer\r\n"
    mismatch = b"-ERR The `numids` parameter must match the number of arguments\r\n"
    syntax = b"-ERR syntax error\r\n"
    for tail, err in ((["IDS", "abc", "1-1"], numids), (["IDS", "0", "1-1"], numids),
                      (["IDS", "-5", "1-1"], numids), (["IDS", "3", "1-1", "2-2"], mismatch),
                      (["IDS", "1", "1-1", "2-2"], syntax), (["KEEPREF", "DELREF", "IDS", "1", "1-1"], syntax),
                      (["KEEPREF", "ACKED", "IDS", "1", "1-1"], syntax),
                      (["DELREF", "ACKED", "IDS", "1", "1-1"], syntax),
                      (["IDS", "1", "+"], b"-ERR Invalid stream ID specified as stream command argument\r\n")):
        assert c.call("XACKDEL", "st", "g", *tail) == err, tail
        assert c.call("XDELEX", "st", *tail) == err, tail
    # the IDS block may come first
    assert c.call("XDELEX", "st", "IDS", "1", "1-0", "KEEPREF") == b"*1\r\n:1\r\n"
    c.call("SET", "str", "x")
    assert c.call("XDELEX", "str", "IDS", "1", "1").startswith(b"-WRONGTYPE")


def test_xdelex_acked_follows_the_groups(raw):
    raw.call("DEL", "st")
    for j in range(5):
        raw.call("XADD", "st", "%d-1" % j, "item", str(j))
    raw.call("XGROUP", "CREATE", "st", "g", "0")
    raw.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "st", ">")
    ids = ["%d-1" % j for j in range(5)]
    assert raw.call("XDELEX", "st", "ACKED", "IDS", "5", *ids) == b"*5\r\n" + b":2\r\n" * 5
    raw.call("XGROUP", "DESTROY", "st", "g")
    assert raw.call("XDELEX", "st", "ACKED", "IDS", "5", *ids) == b"*5\r\n" + b":1\r\n" * 5
    assert raw.call("XLEN", "st") == b":0\r\n"
    # a group that has not read an entry yet refers to it
    raw.call("DEL", "st")
    for j in range(1, 6):
        raw.call("XADD", "st", "%d-0" % j, "f", "v")
    raw.call("XGROUP", "CREATE", "st", "g1", "1-0")
    raw.call("XGROUP", "CREATE", "st", "g2", "3-0")
    assert raw.call("XDELEX", "st", "ACKED", "IDS", "1", "1-0") == b"*1\r\n:1\r\n"
    assert raw.call("XDELEX", "st", "ACKED", "IDS", "1", "2-0") == b"*1\r\n:2\r\n"
    raw.call("XGROUP", "DESTROY", "st", "g1")
    assert raw.call("XDELEX", "st", "ACKED", "IDS", "1", "2-0") == b"*1\r\n:1\r\n"
    # DELREF drops the references of every group; KEEPREF (the default) keeps them
    _two_groups(raw)
    assert raw.call("XDELEX", "st", "IDS", "1", "1-0") == b"*1\r\n:1\r\n"
    assert raw.call("XPENDING", "st", "g1").startswith(b"*4\r\n:2\r\n")
    assert raw.call("XDELEX", "st", "DELREF", "IDS", "2", "1-0", "2-0") == b"*2\r\n:-1\r\n:1\r\n"
    assert raw.call("XPENDING", "st", "g1") == _NOPEL2
    assert raw.call("XPENDING", "st", "g2") == _NOPEL2
    info = raw.call("XINFO", "STREAM", "st")
    assert b"max-deleted-entry-id\r\n$3\r\n2-0\r\n" in info


def test_trim_policies(raw):
    raw.call("DEL", "st")
    for j in range(1, 7):
        raw.call("XADD", "st", str(j), "f", "v")
    raw.call("XGROUP", "CREATE", "st", "g", "0")
    raw.call("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "st", ">")
    # 1 and 2 pending, 3..6 unread: every entry is referenced
    assert raw.call("XTRIM", "st", "MAXLEN", "2", "ACKED") == b":0\r\n"
    raw.call("XACK", "st", "g", "1")
    assert raw.call("XTRIM", "st", "MAXLEN", "0", "ACKED") == b":1\r\n"
    assert raw.call("XTRIM", "st", "MINID", "4", "DELREF") == b":2\r\n"       # 2 (pending) and 3
    assert raw.call("XPENDING", "st", "g") == _NOPEL2
    assert raw.call("XTRIM", "st", "MAXLEN", "1", "KEEPREF") == b":2\r\n"
    # XADD: an ACKED trim keeps what a group has not read
    raw.call("DEL", "st")
    for j in range(1, 7):
        raw.call("XADD", "st", str(j), "f", "v")
    raw.call("XGROUP", "CREATE", "st", "g", "3")
    assert raw.call("XADD", "st", "MAXLEN", "1", "ACKED", "7", "f", "v") == b"$3\r\n7-0\r\n"
    assert raw.call("XLEN", "st") == b":4\r\n"
    assert raw.call("XRANGE", "st", "-", "+", "COUNT", "1").startswith(b"*1\r\n*2\r\n$3\r\n4-0\r\n")
    for bad in (["XTRIM", "st", "MAXLEN", "1", "ACKED", "DELREF"],
                ["XTRIM", "st", "MAXLEN", "1", "KEEPREF", "KEEPREF"]):
        assert raw.call(*bad) == b"-ERR syntax error\r\n", bad
    # without groups, the policies trim as KEEPREF
    raw.call("DEL", "st")
    for j in range(1, 7):
        raw.call("XADD", "st", str(j), "f", "v")
    assert raw.call("XADD", "st", "ACKED", "MAXLEN", "2", "7", "f", "v") == b"$3\r\n7-0\r\n"
    assert raw.call("XLEN", "st") == b":2\r\n"


# ---------------------------------------------------------------------------
# 8.4: XREADGROUP ... CLAIM min-idle-time
# ---------------------------------------------------------------------------
def _age(c, key, ids, ms=1000):
    """Make pending entries look idle for ms (XCLAIM ... TIME, by their
    holder), as Redis's own suite does."""
    t = c.call("TIME").split(b"\r\n")
    now = int(t[2]) * 1000 + int(t[4]) // 1000
    for i in ids:
        owner = re.search(rb"\*4\r\n\$\d+\r\n[^\r]+\r\n\$\d+\r\n([^\r]+)\r\n",
                          c.call("XPENDING", key, "g", i, i, "1")).group(1)
        c.call("XCLAIM", key, "g", owner, "0", i, "TIME", str(now - ms), "JUSTID")


def _claim_setup(c, n=2, read=1):
    c.call("DEL", "m")
    for j in range(1, n + 1):
        c.call("XADD", "m", "%d-0" % j, "f", "v%d" % j)
    c.call("XGROUP", "CREATE", "m", "g", "0")
    if read:
        c.call("XREADGROUP", "GROUP", "g", "c1", "COUNT", str(read), "STREAMS", "m", ">")


_IDLE = re.compile(rb"(\$2\r\nv\d\r\n):([1-9]\d*)\r\n")


def _idle(reply):
    return _IDLE.sub(rb"\1:<idle>\r\n", reply)


def test_xreadgroup_claim_replies(raw, raw3):
    for c in (raw, raw3):
        _claim_setup(c)
        _age(c, "m", ["1-0"])
        r = c.call("XREADGROUP", "GROUP", "g", "c2", "CLAIM", "500", "STREAMS", "m", ">")
        # the claimed entry first (its idle time, its delivery count before),
        # then the new one with 0 0
        body = (b"$1\r\nm\r\n*2\r\n*4\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$2\r\nv1\r\n:<idle>\r\n:1\r\n"
                b"*4\r\n$3\r\n2-0\r\n*2\r\n$1\r\nf\r\n$2\r\nv2\r\n:0\r\n:0\r\n")
        assert _idle(r) == (b"*1\r\n*2\r\n" if c is raw else b"%1\r\n") + body
        assert int(re.search(rb"v1\r\n:(\d+)", r).group(1)) >= 1000
        p = c.call("XPENDING", "m", "g", "-", "+", "10")
        assert p.count(b"$2\r\nc2\r\n") == 2 and b":2\r\n*4" in p      # 1-0 delivered twice
        # nothing idle enough, nothing new: nil
        assert c.call("XREADGROUP", "GROUP", "g", "c2", "CLAIM", "100000", "STREAMS", "m", ">") == \
            (b"*-1\r\n" if c is raw else b"_\r\n")


def test_xreadgroup_claim_count_order_noack_and_history(raw):
    c = raw
    _claim_setup(c, n=6, read=6)
    _age(c, "m", ["4-0"], 50000)
    _age(c, "m", ["2-0"], 40000)
    _age(c, "m", ["6-0"], 30000)
    _age(c, "m", ["1-0"], 2000)
    r = c.call("XREADGROUP", "GROUP", "g", "c2", "CLAIM", "10000", "COUNT", "10", "STREAMS", "m", ">")
    assert re.findall(rb"\*4\r\n\$3\r\n(\d-0)", r) == [b"4-0", b"2-0", b"6-0"]    # the longest idle first
    r = c.call("XREADGROUP", "GROUP", "g", "c2", "CLAIM", "1500", "COUNT", "10", "STREAMS", "m", ">")
    assert re.findall(rb"\*4\r\n\$3\r\n(\d-0)", r) == [b"1-0"]
    # COUNT covers claimed and new entries, the claimed first
    _claim_setup(c, n=3, read=1)
    _age(c, "m", ["1-0"])
    r = c.call("XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "CLAIM", "50", "STREAMS", "m", ">")
    assert re.findall(rb"\*4\r\n\$3\r\n(\d-0)", r) == [b"1-0"]
    r = c.call("XREADGROUP", "GROUP", "g", "c1", "CLAIM", "0", "STREAMS", "m", ">")
    assert re.findall(rb"\*4\r\n\$3\r\n(\d-0)", r) == [b"1-0", b"2-0", b"3-0"]
    # CLAIM does nothing for a history read
    r = c.call("XREADGROUP", "GROUP", "g", "c1", "CLAIM", "0", "STREAMS", "m", "0")
    assert r.count(b"*2\r\n$3\r\n") == 3 and b"*4\r\n$3" not in r
    # NOACK: new entries stay out of the PEL, claimed ones stay in it
    _claim_setup(c, n=2, read=1)
    _age(c, "m", ["1-0"])
    r = c.call("XREADGROUP", "GROUP", "g", "c1", "NOACK", "CLAIM", "50", "STREAMS", "m", ">")
    assert re.findall(rb"\*4\r\n\$3\r\n(\d-0)", r) == [b"1-0", b"2-0"]
    assert c.call("XPENDING", "m", "g").startswith(b"*4\r\n:1\r\n")
    # entries gone from the stream are not claimed
    _claim_setup(c, n=2, read=2)
    c.call("XDEL", "m", "1-0")
    r = c.call("XREADGROUP", "GROUP", "g", "c2", "CLAIM", "0", "STREAMS", "m", ">")
    assert re.findall(rb"\*4\r\n\$3\r\n(\d-0)", r) == [b"2-0"]


def test_xreadgroup_claim_errors(raw):
    c = raw
    _claim_setup(c)
    not_int = b"-ERR min-idle-time is not an integer\r\n"
    for tail, err in (
            (["CLAIM", "test"], not_int), (["CLAIM", "5.5"], not_int), (["CLAIM", "+10"], not_int),
            (["CLAIM", "-0"], not_int), (["CLAIM", "10", "CLAIM", "COUNT", "1"], not_int),
            (["CLAIM", "-10"], b"-ERR min-idle-time must be a positive integer\r\n")):
        assert c.call("XREADGROUP", "GROUP", "g", "c1", *tail, "STREAMS", "m", ">") == err, tail
    assert c.call("XREADGROUP", "CLAIM", "GROUP", "g", "c1", "STREAMS", "m", ">") == not_int
    assert c.call("XREADGROUP", "GROUP", "g", "CLAIM", "50", "c1", "STREAMS", "m", ">") == b"-ERR syntax error\r\n"
    assert c.call("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "m", ">", "CLAIM", "50") == \
        b"-ERR Invalid stream ID specified as stream command argument\r\n"
    assert c.call("XREADGROUP", "GROUP", "nog", "c1", "CLAIM", "50", "STREAMS", "m", ">").startswith(
        b"-NOGROUP No such key 'm' or consumer group 'nog'")
    # a large min-idle-time only serves new entries
    r = c.call("XREADGROUP", "GROUP", "g", "c1", "CLAIM", "9223372036854775807", "STREAMS", "m", ">")
    assert re.findall(rb"\*4\r\n\$3\r\n(\d-0)", r) == [b"2-0"]


def test_xreadgroup_claim_blocks_until_new_entries(raw, connect):
    c = raw
    _claim_setup(c, n=1, read=1)
    b = connect()
    try:
        b.send("XREADGROUP", "GROUP", "g", "c2", "BLOCK", "5000", "CLAIM", "100000", "STREAMS", "m", ">")
        deadline = time.time() + 10
        while b"blocked_clients:1" not in c.call("INFO", "clients"):
            assert time.time() < deadline
            time.sleep(0.01)
        c.call("XADD", "m", "2-0", "f", "v2")
        r = b.read(5)
        assert re.findall(rb"\*4\r\n\$3\r\n(\d-0)", r) == [b"2-0"]
    finally:
        b.close()


def test_xreadgroup_claim_propagates_xclaim(start_server):
    """Each claimed entry replicates as XCLAIM (with its new delivery
    count and time), as XREADGROUP's new entries."""
    m = start_server()
    c = RespConn(m.port)
    stream = SyncStream(m.port)
    try:
        _claim_setup(c)
        _age(c, "m", ["1-0"])
        c.call("XREADGROUP", "GROUP", "g", "c2", "CLAIM", "50", "STREAMS", "m", ">")
        c.call("SET", "done", "1")
        cmds = stream.read_until(b"set")
    finally:
        stream.close()
        c.close()
    tail = cmds[cmds.index([b"MULTI"], len(cmds) - 8):]
    names = [x[0].upper() for x in tail]
    assert names == [b"MULTI", b"XCLAIM", b"XCLAIM", b"XGROUP", b"EXEC", b"SET"], tail
    first = tail[1]
    assert first[:6] == [b"XCLAIM", b"m", b"g", b"c2", b"0", b"1-0"]
    assert first[8:10] == [b"RETRYCOUNT", b"2"]


def test_entriesread_is_capped_at_the_entries_added(r):
    """Redis 8 (its own suite): an ENTRIESREAD beyond what the stream ever
    had is taken as entries-added (valkey keeps it: a negative lag)."""
    r.xadd("m", {"f": "v"})
    r.execute_command("XGROUP", "CREATE", "m", "g", "$", "ENTRIESREAD", "9999")
    g = r.xinfo_groups("m")[0]
    assert (g["entries-read"], g["lag"]) == (1, 0)
    r.execute_command("XGROUP", "SETID", "m", "g", "$", "ENTRIESREAD", "9999")
    g = r.xinfo_groups("m")[0]
    assert (g["entries-read"], g["lag"]) == (1, 0)
    r.execute_command("XGROUP", "SETID", "m", "g", "0", "ENTRIESREAD", "-1")
    assert r.xinfo_groups("m")[0]["entries-read"] is None


# ---------------------------------------------------------------------------
# 8.10: XREAD / XREADGROUP ... MAXCOUNT n MAXSIZE bytes
# ---------------------------------------------------------------------------
def _ids(reply):
    return re.findall(rb"\$\d+\r\n(\d+-\d+)\r\n\*2\r\n", reply)


def test_maxcount_and_maxsize_cap_the_whole_reply(raw):
    c = raw
    for k in ("s1", "s2", "s3"):
        c.call("DEL", k)
        for j in range(1, 6):
            c.call("XADD", k, str(j), "f", "v%d" % j)
    assert len(_ids(c.call("XREAD", "COUNT", "3", "STREAMS", "s1", "s2", "s3", "0", "0", "0"))) == 9
    r = c.call("XREAD", "COUNT", "3", "MAXCOUNT", "4", "STREAMS", "s1", "s2", "s3", "0", "0", "0")
    assert r.startswith(b"*2\r\n") and _ids(r) == [b"1-0", b"2-0", b"3-0", b"1-0"]
    r = c.call("XREAD", "MAXCOUNT", "7", "STREAMS", "s1", "s2", "0", "0")
    assert _ids(r) == [b"1-0", b"2-0", b"3-0", b"4-0", b"5-0", b"1-0", b"2-0"]
    # MAXSIZE: the first entry always goes, then what fits
    assert _ids(c.call("XREAD", "MAXSIZE", "1", "STREAMS", "s1", "s2", "0", "0")) == [b"1-0"]
    one = len(b"*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$2\r\nv1\r\n")
    assert len(_ids(c.call("XREAD", "MAXSIZE", str(2 * one), "STREAMS", "s1", "0"))) == 2
    assert len(_ids(c.call("XREAD", "MAXCOUNT", "3", "MAXSIZE", "100000", "STREAMS", "s1", "0"))) == 3
    # XREADGROUP: new entries and history alike; what MAXSIZE skips is not delivered
    c.call("XGROUP", "CREATE", "s1", "g", "0")
    c.call("XGROUP", "CREATE", "s2", "g", "0")
    r = c.call("XREADGROUP", "GROUP", "g", "c", "MAXCOUNT", "6", "STREAMS", "s1", "s2", ">", ">")
    assert len(_ids(r)) == 6
    assert c.call("XPENDING", "s2", "g").startswith(b"*4\r\n:1\r\n")
    assert len(_ids(c.call("XREADGROUP", "GROUP", "g", "c", "MAXCOUNT", "2", "STREAMS", "s1", "0"))) == 2
    assert len(_ids(c.call("XREADGROUP", "GROUP", "g", "c", "MAXSIZE", "1", "STREAMS", "s2", ">"))) == 1
    assert c.call("XPENDING", "s2", "g").startswith(b"*4\r\n:2\r\n")


def test_maxcount_and_maxsize_errors(raw):
    c = raw
    c.call("DEL", "s1")
    c.call("XADD", "s1", "1", "f", "v")
    for args in (["MAXCOUNT", "0"], ["MAXCOUNT", "-1"], ["MAXSIZE", "0"], ["COUNT", "5", "MAXCOUNT", "3"]):
        assert c.call("XREAD", *args, "STREAMS", "s1", "0").startswith(b"-ERR MAX"), args
    assert c.call("XREAD", "MAXCOUNT", "x", "STREAMS", "s1", "0") == \
        b"-ERR value is not an integer or out of range\r\n"
    assert len(_ids(c.call("XREAD", "COUNT", "3", "MAXCOUNT", "3", "STREAMS", "s1", "0"))) == 1


def test_lag_follows_redis_8(r):
    """Redis 8's lag: a group behind the first entry (no tombstone after
    it) lags by the stream's length; an emptied stream has no lag; a
    tombstone after the group's last ID makes the estimate unknown."""
    for j in range(1, 4):
        r.xadd("m", {"f": j}, id="%d-0" % j)
    r.execute_command("XGROUP", "CREATE", "m", "g", "0", "ENTRIESREAD", "7")
    g = r.xinfo_groups("m")[0]
    assert (g["entries-read"], g["lag"]) == (3, 3)          # redis-py 8.1's own case
    r.xtrim("m", maxlen=1, approximate=False)
    assert r.xinfo_groups("m")[0]["lag"] == 1
    r.xdel("m", "3-0")
    assert r.xinfo_groups("m")[0]["lag"] == 0
    for j in range(1, 6):
        r.xadd("n", {"f": j}, id="%d-0" % j)
    r.xgroup_create("n", "g", "0")
    r.xreadgroup("g", "c", {"n": ">"}, count=2)
    r.xdel("n", "4-0")
    g = r.xinfo_groups("n")[0]
    assert (g["entries-read"], g["lag"]) == (2, None)
    r.xreadgroup("g", "c", {"n": ">"})
    g = r.xinfo_groups("n")[0]
    assert (g["entries-read"], g["lag"]) == (5, 0)


def test_xreadgroup_claim_block_serves_what_becomes_idle(raw, connect):
    """A reader blocked with CLAIM gets a pending entry once it is idle
    long enough, without new entries (Redis's suite: 'messages become
    claimable during block'); without any, the BLOCK times out."""
    c = raw
    _claim_setup(c, n=1, read=1)
    b = connect()
    try:
        t0 = time.monotonic()
        b.send("XREADGROUP", "GROUP", "g", "c2", "BLOCK", "5000", "CLAIM", "300", "STREAMS", "m", ">")
        r = b.read(5)
        assert re.findall(rb"\*4\r\n\$3\r\n(\d-0)", r) == [b"1-0"]
        assert 0.2 < time.monotonic() - t0 < 4
        assert b"$2\r\nc2\r\n" in c.call("XPENDING", "m", "g", "-", "+", "1")
        t0 = time.monotonic()
        assert b.call("XREADGROUP", "GROUP", "g", "c3", "BLOCK", "200", "CLAIM", "100000",
                      "STREAMS", "m", ">") == b"*-1\r\n"
        assert time.monotonic() - t0 >= 0.15
    finally:
        b.close()


# ---------------------------------------------------------------------------
# 8.6: idempotent adds (XADD ... IDMP / IDMPAUTO, XCFGSET, XIDMPRECORD)
# ---------------------------------------------------------------------------
def _info(c, key):
    r = c.call("XINFO", "STREAM", key)
    return {k.decode(): int(v) for k, v in re.findall(rb"\$\d+\r\n([a-z-]+)\r\n:(-?\d+)\r\n", r)}


def test_idempotent_adds(raw):
    c = raw
    c.call("DEL", "m")
    first = c.call("XADD", "m", "IDMP", "p1", "m1", "*", "f", "v")
    assert c.call("XADD", "m", "IDMP", "p1", "m1", "*", "f", "other") == first     # the same entry
    assert c.call("XADD", "m", "IDMP", "p1", "m2", "*", "f", "v") != first
    assert c.call("XADD", "m", "IDMP", "p2", "m1", "*", "f", "v") != first
    auto = c.call("XADD", "m", "IDMPAUTO", "p3", "*", "f", "v")
    assert c.call("XADD", "m", "IDMPAUTO", "p3", "*", "f", "v") == auto
    assert c.call("XADD", "m", "IDMPAUTO", "p3", "*", "f", "w") != auto
    assert c.call("XLEN", "m") == b":5\r\n"
    i = _info(c, "m")
    assert (i["idmp-duration"], i["idmp-maxsize"], i["pids-tracked"], i["iids-tracked"],
            i["iids-added"], i["iids-duplicates"]) == (100, 100, 3, 5, 5, 2)
    r = c.call("XINFO", "STREAM", "m")
    assert r.startswith(b"*32\r\n") and b"recorded-first-entry-id\r\n$" in r
    assert r.index(b"iids-duplicates") < r.index(b"$6\r\ngroups")
    # defaults on a stream that never used it
    c.call("DEL", "n")
    c.call("XADD", "n", "1", "f", "v")
    i = _info(c, "n")
    assert (i["idmp-duration"], i["idmp-maxsize"], i["pids-tracked"], i["iids-added"]) == (100, 100, 0, 0)
    # XCFGSET: settings, the records cleared; MAXSIZE evicts the oldest
    assert c.call("XCFGSET", "m", "IDMP-MAXSIZE", "2", "IDMP-DURATION", "300") == b"+OK\r\n"
    assert _info(c, "m")["iids-tracked"] == 0
    ids = [c.call("XADD", "m", "IDMP", "p", "i%d" % k, "*", "f", "v") for k in range(3)]
    assert _info(c, "m")["iids-tracked"] == 2
    assert c.call("XADD", "m", "IDMP", "p", "i2", "*", "f", "v") == ids[2]
    assert c.call("XADD", "m", "IDMP", "p", "i0", "*", "f", "v") not in ids
    # a short duration forgets
    assert c.call("XCFGSET", "m", "IDMP-DURATION", "1") == b"+OK\r\n"
    one = c.call("XADD", "m", "IDMP", "q", "x", "*", "f", "v")
    deadline = time.monotonic() + 10
    while c.call("XADD", "m", "IDMP", "q", "x", "*", "f", "v") == one:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    # NOMKSTREAM still answers nil for a missing key
    assert c.call("XADD", "nokey", "NOMKSTREAM", "IDMP", "p", "i", "*", "f", "v") == b"$-1\r\n"


def test_idempotent_add_errors(raw):
    c = raw
    c.call("DEL", "m")
    c.call("XADD", "m", "1", "f", "v")
    for bad in (["XCFGSET", "m"], ["XCFGSET", "m", "IDMP-DURATION"], ["XCFGSET", "m", "DURATION", "5"],
                ["XCFGSET", "m", "IDMP-MAXSIZE", "5", "IDMP-MAXSIZE", "6"]):
        assert c.call(*bad) in (b"-ERR syntax error\r\n",
                                b"-ERR wrong number of arguments for 'xcfgset' command\r\n"), bad
    for v in ("0", "86401", "x", "-1"):
        assert c.call("XCFGSET", "m", "IDMP-DURATION", v) == b"-ERR invalid duration\r\n"
    for v in ("0", "10001", "1.5"):
        assert c.call("XCFGSET", "m", "IDMP-MAXSIZE", v) == b"-ERR invalid maxsize\r\n"
    assert c.call("XCFGSET", "nokey", "IDMP-MAXSIZE", "5") == b"-ERR no such key\r\n"
    c.call("SET", "str", "x")
    assert c.call("XCFGSET", "str", "IDMP-MAXSIZE", "5").startswith(b"-WRONGTYPE")
    assert c.call("XADD", "m", "IDMP", "p", "i", "5-0", "f", "v").startswith(b"-ERR")
    assert c.call("XADD", "m", "IDMPAUTO", "p", "5", "f", "v").startswith(b"-ERR")
    assert c.call("XLEN", "m") == b":1\r\n"
    # XIDMPRECORD
    assert c.call("XIDMPRECORD", "m", "p", "i", "1-0") == b"+OK\r\n"
    assert c.call("XIDMPRECORD", "m", "p", "i", "1-0") == b"+OK\r\n"
    assert c.call("XADD", "m", "IDMP", "p", "i", "*", "f", "v") == b"$3\r\n1-0\r\n"
    c.call("XADD", "m", "2", "f", "v")
    for bad in (["XIDMPRECORD", "m", "p", "i", "2-0"], ["XIDMPRECORD", "m", "p", "j", "9-0"],
                ["XIDMPRECORD", "m", "", "j", "2-0"], ["XIDMPRECORD", "nokey", "p", "i", "1-0"],
                ["XIDMPRECORD", "m", "p", "j", "x"]):
        assert c.call(*bad).startswith(b"-ERR"), bad


def test_idempotent_adds_replicate_and_rewrite(start_server):
    """An idempotent XADD replicates as the XADD (its ID made explicit,
    the IDMP tokens out) and an XIDMPRECORD in one transaction; a
    duplicate replicates nothing; the AOF rewrite (without an RDB
    preamble) rebuilds the settings and the records."""
    m = start_server("--appendonly", "yes", "--aof-use-rdb-preamble", "no", "--enable-debug-command", "yes")
    c = RespConn(m.port)
    stream = SyncStream(m.port)
    try:
        i1 = c.call("XADD", "m", "IDMPAUTO", "p", "*", "f", "v").split(b"\r\n")[1]
        c.call("XADD", "m", "IDMPAUTO", "p", "*", "f", "v")
        c.call("SET", "done", "1")
        cmds = stream.read_until(b"set")
    finally:
        stream.close()
    tail = cmds[cmds.index([b"MULTI"]):]
    assert tail.pop(1) == [b"SELECT", b"0"]        # Redis 7.2+: inside the MULTI
    assert tail[1] == [b"XADD", b"m", i1, b"f", b"v"]
    assert tail[2][:3] == [b"XIDMPRECORD", b"m", b"p"] and tail[2][4] == i1
    assert [x[0] for x in tail[3:]] == [b"EXEC", b"SET"]
    assert c.call("XCFGSET", "m", "IDMP-DURATION", "500", "IDMP-MAXSIZE", "7") == b"+OK\r\n"
    c.call("XADD", "m", "IDMP", "p", "k", "*", "f", "v")
    before = _info(c, "m")
    assert c.call("BGREWRITEAOF").startswith(b"+")
    deadline = time.monotonic() + 20
    while b"aof_rewrite_in_progress:0" not in c.call("INFO", "persistence") or \
            b"aof_rewrite_scheduled:0" not in c.call("INFO", "persistence"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert c.call("DEBUG", "LOADAOF") == b"+OK\r\n"
    after = _info(c, "m")
    assert (after["idmp-duration"], after["idmp-maxsize"], after["iids-tracked"]) == (500, 7, 1)
    assert before["iids-tracked"] == 1
    assert c.call("XADD", "m", "IDMP", "p", "k", "*", "f", "x") != c.call("XADD", "m", "IDMP", "p", "z", "*", "f", "x")
    c.close()


# ---------------------------------------------------------------------------
# 8.8: XNACK
# ---------------------------------------------------------------------------
def _pending_rows(c, key="m"):
    r = c.call("XPENDING", key, "g", "-", "+", "10")
    return re.findall(rb"\*4\r\n\$\d+\r\n([^\r]+)\r\n\$\d+\r\n([^\r]*)\r\n:(-?\d+)\r\n:(\d+)\r\n", r)


def test_xnack_modes_and_claims(raw):
    c = raw
    _claim_setup(c, n=4, read=4)
    assert c.call("XNACK", "m", "g", "FAIL", "IDS", "3", "3-0", "1-0", "999-0") == b":2\r\n"
    rows = _pending_rows(c)
    assert rows[0] == (b"1-0", b"", b"-1", b"1") and rows[2] == (b"3-0", b"", b"-1", b"1")
    assert rows[1][1] == b"c1"
    assert c.call("XPENDING", "m", "g").startswith(b"*4\r\n:4\r\n$3\r\n1-0\r\n$3\r\n4-0\r\n*1\r\n*2\r\n$2\r\nc1\r\n$1\r\n2\r\n")
    # released entries are claimed first, in release order, whatever min-idle-time
    r = c.call("XREADGROUP", "GROUP", "g", "c2", "CLAIM", "100000", "STREAMS", "m", ">")
    assert re.findall(rb"\*4\r\n\$3\r\n(\d-0)", r) == [b"3-0", b"1-0"]
    assert [x[1] for x in _pending_rows(c)] == [b"c2", b"c1", b"c2", b"c1"]
    # SILENT takes the delivery back, FATAL marks it, RETRYCOUNT sets it
    assert c.call("XNACK", "m", "g", "SILENT", "IDS", "1", "1-0") == b":1\r\n"
    assert c.call("XNACK", "m", "g", "FATAL", "IDS", "1", "2-0") == b":1\r\n"
    assert c.call("XNACK", "m", "g", "FAIL", "IDS", "1", "4-0", "RETRYCOUNT", "7") == b":1\r\n"
    rows = {x[0]: x for x in _pending_rows(c)}
    assert rows[b"1-0"][3] == b"1" and rows[b"2-0"][3] == b"9223372036854775807" and rows[b"4-0"][3] == b"7"
    # XCLAIM and XAUTOCLAIM take them at once
    assert c.call("XCLAIM", "m", "g", "c3", "100000", "2-0", "JUSTID") == b"*1\r\n$3\r\n2-0\r\n"
    r = c.call("XAUTOCLAIM", "m", "g", "c3", "100000", "0", "JUSTID")
    assert r == b"*3\r\n$3\r\n0-0\r\n*2\r\n$3\r\n1-0\r\n$3\r\n4-0\r\n*0\r\n"
    # FORCE: an unowned entry for an ID of the stream that is not pending
    c.call("XADD", "m", "5-0", "f", "v5")
    assert c.call("XNACK", "m", "g", "FAIL", "IDS", "2", "5-0", "6-0", "FORCE") == b":1\r\n"
    assert _pending_rows(c)[-1] == (b"5-0", b"", b"-1", b"0")
    # XACK takes a released entry out; nothing for a missing group or key
    assert c.call("XACK", "m", "g", "5-0") == b":1\r\n"
    assert c.call("XNACK", "m", "nog", "FAIL", "IDS", "1", "1-0") == b":0\r\n"
    assert c.call("XNACK", "nokey", "g", "FAIL", "IDS", "1", "1-0") == b":0\r\n"


def test_xnack_errors(raw):
    c = raw
    _claim_setup(c, n=1, read=1)
    assert c.call("XNACK", "m", "g", "BAD", "IDS", "1", "1-0") == b"-ERR mode must be SILENT, FAIL, or FATAL\r\n"
    assert c.call("XNACK", "m", "g", "FAIL", "IDS", "0", "1-0") == b"-ERR numids must be a positive integer\r\n"
    assert c.call("XNACK", "m", "g", "FAIL", "IDS", "x", "1-0") == b"-ERR numids must be a positive integer\r\n"
    assert c.call("XNACK", "m", "g", "FAIL", "IDS", "2", "1-0") == b"-ERR number of IDs doesn't match numids\r\n"
    assert c.call("XNACK", "m", "g", "FAIL", "IDS", "1", "1-0", "RETRYCOUNT", "-1") == \
        b"-ERR Invalid RETRYCOUNT value, must be >= 0\r\n"
    assert c.call("XNACK", "m", "g", "FAIL", "IDS", "1", "1-0", "BOGUS") == b"-ERR syntax error\r\n"
    assert c.call("XNACK", "m", "g", "FAIL", "X", "1", "1-0") == b"-ERR syntax error\r\n"
    assert c.call("XNACK", "m", "g", "FAIL", "IDS", "1", "+") == \
        b"-ERR Invalid stream ID specified as stream command argument\r\n"
    assert c.call("XNACK", "m", "g", "FAIL", "IDS") == b"-ERR wrong number of arguments for 'xnack' command\r\n"


def test_xnack_replicates_and_rewrites(start_server):
    m = start_server("--appendonly", "yes", "--aof-use-rdb-preamble", "no", "--enable-debug-command", "yes")
    c = RespConn(m.port)
    try:
        _claim_setup(c, n=3, read=3)
        assert c.call("XNACK", "m", "g", "FAIL", "IDS", "2", "3-0", "1-0", "RETRYCOUNT", "4") == b":2\r\n"
        rows = _pending_rows(c)
        assert c.call("BGREWRITEAOF").startswith(b"+")
        deadline = time.monotonic() + 20
        while b"aof_rewrite_in_progress:0" not in c.call("INFO", "persistence") or \
                b"aof_rewrite_scheduled:0" not in c.call("INFO", "persistence"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert c.call("DEBUG", "LOADAOF") == b"+OK\r\n"
        def shape(rs):
            return [(i, o, t if t == b"-1" else b"t", n) for i, o, t, n in rs]
        assert shape(_pending_rows(c)) == shape(rows)
        r = c.call("XREADGROUP", "GROUP", "g", "c2", "CLAIM", "100000", "STREAMS", "m", ">")
        assert re.findall(rb"\*4\r\n\$3\r\n(\d-0)", r) == [b"3-0", b"1-0"]     # the release order kept
    finally:
        c.close()


def test_new_commands_in_multi_scripts_acl_and_replication(start_server):
    m = start_server()
    c = RespConn(m.port)
    stream = SyncStream(m.port)
    try:
        _two_groups(c)
        assert c.call("MULTI") == b"+OK\r\n"
        c.call("XACKDEL", "st", "g1", "ACKED", "IDS", "1", "1-0")
        c.call("XDELEX", "st", "DELREF", "IDS", "1", "2-0")
        assert c.call("EXEC") == b"*2\r\n*1\r\n:2\r\n*1\r\n:1\r\n"
        assert c.call("EVAL", "return redis.call('XDELEX', KEYS[1], 'IDS', 1, '1-0')", "1", "st") == \
            b"*1\r\n:1\r\n"
        assert c.call("XTRIM", "st", "MAXLEN", "0", "ACKED") == b":0\r\n"
        c.call("SET", "done", "1")
        cmds = stream.read_until(b"set")
    finally:
        stream.close()
    names = [x[0].upper() for x in cmds]
    i = names.index(b"XACKDEL")
    assert cmds[i] == [b"XACKDEL", b"st", b"g1", b"ACKED", b"IDS", b"1", b"1-0"]
    assert cmds[i + 1] == [b"XDELEX", b"st", b"DELREF", b"IDS", b"1", b"2-0"]
    assert [b"XDELEX", b"st", b"IDS", b"1", b"1-0"] in cmds
    for name in (b"xdelex", b"xackdel", b"xnack", b"xcfgset", b"xidmprecord"):
        assert b"$%d\r\n%s\r\n" % (len(name), name) in c.call("ACL", "CAT", "stream")
        assert b"$%d\r\n%s\r\n" % (len(name), name) in c.call("ACL", "CAT", "write")
    c.close()


def _body_with_groups(extra_group_tail=b"", idmp=b""):
    """A stream body of RDB type 27 by hand: one entry 5-0, a group g
    (last ID 5-0, read 1) whose PEL holds 5-0 unowned (released by XNACK,
    delivery time 0, count 3) and a consumer alice without entries."""
    sv = StreamValue()
    sv.append(5 << 64, (b"a", b"1"), 4096, 100)
    head = stream_body(sv)
    assert head.endswith(b"\x00")                    # no group
    g = enc_len(1) + enc_string(b"g") + enc_len(5) + enc_len(0) + enc_len(1)
    g += enc_len(1) + (5 << 64).to_bytes(16, "big") + (0).to_bytes(8, "little") + enc_len(3)
    g += enc_len(1) + enc_string(b"alice") + (1700000000000).to_bytes(8, "little")
    g += (1700000000001).to_bytes(8, "little") + enc_len(0)
    return head[:-1] + g + extra_group_tail + idmp


def test_reader_loads_redis_86_and_88_streams():
    """RDB types 26 (8.6: idempotency state after the groups) and 27 (8.8:
    each group's XNACKed entries after its consumers)."""
    nacked = enc_len(1) + (5 << 64).to_bytes(16, "big")
    idmp = enc_len(300) + enc_len(7) + enc_len(1) + enc_string(b"p") + enc_len(1) + enc_string(b"i")
    idmp += enc_len(5) + enc_len(0) + enc_len(4) + enc_len(2)
    v = ValueReader(_body_with_groups(nacked, idmp)).load_object(T_STREAM_LISTPACKS_5)
    g = v.groups[b"g"]
    assert g.pel[5 << 64].consumer is None and list(g.nacked) == [5 << 64]
    assert g.pel[5 << 64].delivery_count == 3 and b"alice" in g.consumers
    im = v.idmp
    assert (im.duration, im.maxsize, im.added, im.duplicates) == (300, 7, 4, 2)
    assert im.producers == {b"p": {b"i": (5 << 64, 5 + 300 * 1000)}}
    # type 26: the same idempotency zone, no XNACK zone (every pending entry owned)
    sv = StreamValue()
    sv.append(5 << 64, (b"a", b"1"), 4096, 100)
    v = ValueReader(stream_body(sv) + idmp).load_object(T_STREAM_LISTPACKS_4)
    assert v.idmp.maxsize == 7 and v.length == 1
    # an unowned entry needs the XNACK zone
    with pytest.raises(RdbError):
        ValueReader(_body_with_groups(b"", idmp)).load_object(T_STREAM_LISTPACKS_4)


def test_new_state_survives_reload_dump_and_restore(raw):
    """A stream with idempotency state or XNACKed entries is written as
    RDB type 26 / 27 (the other streams keep type 19, which redis-server
    7.0 loads): DEBUG RELOAD and DUMP/RESTORE keep that state."""
    c = raw
    _claim_setup(c, n=3, read=3)
    c.call("XCFGSET", "m", "IDMP-DURATION", "600", "IDMP-MAXSIZE", "9")
    one = c.call("XADD", "m", "IDMP", "p", "i", "*", "f", "v")
    c.call("XNACK", "m", "g", "FAIL", "IDS", "2", "3-0", "1-0")
    c.call("DEL", "plain")
    c.call("XADD", "plain", "1", "f", "v")
    d = c.call("DUMP", "plain")
    assert d[d.index(b"\r\n") + 2] == 19
    dump = c.call("DUMP", "m")
    assert dump[dump.index(b"\r\n") + 2] == 27
    rows = _pending_rows(c)
    info = _info(c, "m")
    assert c.call("DEBUG", "RELOAD") == b"+OK\r\n"
    assert _info(c, "m") == info
    assert [(i, o, n) for i, o, _, n in _pending_rows(c)] == [(i, o, n) for i, o, _, n in rows]
    assert c.call("XADD", "m", "IDMP", "p", "i", "*", "f", "v") == one
    payload = c.call_value("DUMP", "m")
    c.call("DEL", "m2")
    assert c.call("RESTORE", "m2", "0", payload) == b"+OK\r\n"
    r = c.call("XREADGROUP", "GROUP", "g", "c2", "CLAIM", "100000", "STREAMS", "m2", ">")
    assert re.findall(rb"\*4\r\n\$3\r\n(\d-0)", r) == [b"3-0", b"1-0"]
    c.call("DEL", "idm")
    c.call("XADD", "idm", "IDMPAUTO", "p", "*", "f", "v")
    d = c.call("DUMP", "idm")
    assert d[d.index(b"\r\n") + 2] == 26
