"""MIGRATE between real processes: Ophidis -> Ophidis, Ophidis ->
redis-server and redis-server -> Ophidis (each side restores the other's
real DUMP payloads), with every reply compared byte for byte with
redis-server doing the same MIGRATE: COPY, REPLACE, KEYS, AUTH, AUTH2,
errors of the target forwarded, the timeout against a port that accepts
and never answers, the connection cache (one connection reused, SELECT
only when the database changes, a connection closed by the target
replaced, idle ones closed after 10 s), TTLs kept, and the deletion
propagated as DEL to replicas and to the AOF."""

from __future__ import annotations

import glob
import os
import socket
import time

import pytest

from support.clients import contents
from support.cluster import cluster_ports
from support.notify import KeyspaceEvents
from support.replication import SyncStream
from support.resp import RespConn
from support.servers import ServerProc, free_port, reference_server, running_server
from support.wait import HAS_WCHAN, in_sleep, wait_until


@pytest.fixture(scope="module")
def target():
    """An Ophidis instance the sources migrate to."""
    with running_server(["--enable-debug-command", "yes"]) as s:
        yield s


@pytest.fixture(scope="module")
def redis_target():
    """A redis-server instance Ophidis migrates to."""
    yield from reference_server()


@pytest.fixture
def tgt(target):
    c = target.client()
    c.flushall()
    yield c
    c.close()


@pytest.fixture
def sources(server, redis_server, r, ref):
    """(name, port, redis-py client) of the two sources, both flushed:
    this checkout's Ophidis and Debian's redis-server."""
    return [("ophidis", server.port, r), ("redis", redis_server.port, ref)]


def cached_sockets(c) -> int:
    return c.info("stats")["migrate_cached_sockets"]


def restore_clients(c):
    """The target's clients that ran RESTORE last (the sources' cached
    connections)."""
    return [line for line in c.execute_command("CLIENT", "LIST").decode().splitlines()
            if "cmd=restore" in line]


def cmd_calls(c, name):
    st = c.info("commandstats").get("cmdstat_" + name)
    return st["calls"] if st else 0


# -- values of every type, compared by reading them back ------------------------------

def fill(c):
    """The same data set on any server: every type, small and large
    encodings, a list whose payload is more than 64 KB."""
    p = c.pipeline(transaction=False)
    p.set("s", "hello")
    p.set("n", 12345)
    p.set("bigs", "x" * 100000)
    p.rpush("l", "a", "b", "c")
    for i in range(0, 40000, 1000):
        p.rpush("biglist", *["item %d" % j for j in range(i, i + 1000)])
    p.hset("h", mapping={"f1": "v1", "f2": "2"})
    p.hset("bigh", mapping={"field%d" % i: "value %d" % i for i in range(1000)})
    p.sadd("si", 1, 2, 3)
    p.sadd("ss", *["member%d" % i for i in range(300)])
    p.zadd("z", {"a": 1, "b": 2.5})
    p.zadd("bigz", {"m%d" % i: i / 3 for i in range(500)})
    p.xadd("x", {"f": "v"}, id="1-1")
    p.xadd("x", {"f": "w"}, id="2-1")
    p.xgroup_create("x", "g", id="0")
    p.xreadgroup("g", "alice", {"x": ">"}, count=1)
    p.set("ttl", "v", px=100000)
    p.execute()


KEYS = ["s", "n", "bigs", "l", "biglist", "h", "bigh", "si", "ss", "z", "bigz", "x", "ttl"]


def snapshot(c, key):
    t = c.type(key)
    v = contents(c, key, t)
    if t == b"stream":
        v += (c.xpending(key, "g")["pending"],)
    return t, v


def snapshots(c, keys=KEYS):
    return {k: snapshot(c, k) for k in keys}


def test_every_type_moves_between_ophidis_and_redis(sources, tgt, target, redis_target):
    """Each source moves the data set to the Ophidis target; Ophidis also
    moves it to redis-server: the values read back are the ones written,
    the TTL is kept, the source keys are gone."""
    expected = None
    rt = redis_target.client()
    try:
        for name, _, src in sources:
            fill(src)
            expected = snapshots(src)
            reply = src.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 10000, "KEYS", *KEYS)
            assert reply == b"OK", name
            assert src.dbsize() == 0, name
            assert snapshots(tgt) == expected, name
            assert 90000 < tgt.pttl("ttl") <= 100000, name
            tgt.flushall()
        src = sources[0][2]
        fill(src)
        rt.flushall()
        reply = src.execute_command("MIGRATE", "127.0.0.1", redis_target.port, "", 0, 10000, "KEYS", *KEYS)
        assert reply == b"OK"
        assert src.dbsize() == 0
        assert snapshots(rt) == expected
        assert 90000 < rt.pttl("ttl") <= 100000
    finally:
        rt.flushall()
        rt.close()


def test_single_key_moves_with_its_ttl(sources, tgt, target):
    for name, _, src in sources:
        src.set("key", "Some Value")
        src.expire("key", 10)
        assert src.execute_command("MIGRATE", "127.0.0.1", target.port, "key", 9, 5000) == b"OK"
        assert src.exists("key") == 0
        t9 = target.client(db=9)
        assert t9.get("key") == b"Some Value"
        assert 7 <= t9.ttl("key") <= 10, name
        t9.flushdb()
        t9.close()


# -- replies compared with redis-server ------------------------------------------------

def both(sources, *argv, setup=None):
    """The exact reply bytes of the same MIGRATE on each source."""
    out = []
    for _, port, src in sources:
        if setup is not None:
            setup(src)
        conn = RespConn(port)
        try:
            out.append(conn.call(*argv))
        finally:
            conn.close()
    return out


CLOSED = "closed"     # replaced by a port nobody listens on


@pytest.mark.parametrize("args", [
    ["127.0.0.1", CLOSED, "k", "0", "1000"],              # refused: reported as a write error
    ["", "6379", "k", "0", "1000"],                        # no address: a connect error
    ["127.0.0.1", CLOSED, "k", "0", "1000", "foo"],
    ["127.0.0.1", CLOSED, "k", "0", "1000", "copy", "auth"],
    ["127.0.0.1", CLOSED, "k", "0", "1000", "auth2", "user"],
    ["127.0.0.1", CLOSED, "k", "0", "1000", "keys", "a"],
    ["127.0.0.1", CLOSED, "k", "0", "abc"],
    ["127.0.0.1", CLOSED, "k", "09", "1000"],
    ["127.0.0.1", CLOSED, "k", "0", "x", "bogus"],         # options are checked first
    ["127.0.0.1", CLOSED, "missing", "0", "1000"],
    ["127.0.0.1", CLOSED, "", "0", "1000", "keys", "m1", "m2"],
    ["127.0.0.1", CLOSED, "", "0", "1000", "COPY", "REPLACE", "KEYS"],
    ["127.0.0.1", CLOSED, "", "0", "1000"],
    ["127.0.0.1", CLOSED, "k", "0"],
])
def test_errors_and_nokey_as_redis(sources, args):
    port = str(free_port())
    args = [port if a == CLOSED else a for a in args]
    ours, theirs = both(sources, "MIGRATE", *args, setup=lambda c: c.set("k", "v"))
    assert ours == theirs
    assert ours.startswith((b"-", b"+NOKEY"))


def test_target_errors_are_forwarded(sources, tgt, target):
    # database out of range on the target: its SELECT error
    ours, theirs = both(sources, "MIGRATE", "127.0.0.1", target.port, "k", 99, 1000,
                        setup=lambda c: c.set("k", "v"))
    assert ours == theirs == b"-ERR Target instance replied with error: ERR DB index is out of range\r\n"
    for _, _, src in sources:
        assert src.exists("k") == 1
    tgt.flushall()
    # BUSYKEY: only the keys the target acknowledged are deleted here
    results = []
    for name, port, src in sources:
        src.flushall()
        src.mset({k: k.upper() for k in "abcdefgh"})
        tgt.mset({"c": "_", "d": "_"})
        reply = RespConn(port).call("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", *"abcdefgh")
        results.append((reply, sorted(src.keys()), tgt.dbsize(), tgt.get("c")))
        tgt.flushall()
    assert results[0] == results[1]
    assert results[0] == (b"-ERR Target instance replied with error: BUSYKEY Target key name already exists.\r\n",
                          [b"c", b"d"], 8, b"_")


def test_copy_and_replace(sources, tgt, target):
    for name, _, src in sources:
        src.rpush("list", "a", "b", "c", "d")
        tgt.set("list", "somevalue")
        conn = RespConn(src.connection_pool.connection_kwargs["port"])
        assert conn.call("MIGRATE", "127.0.0.1", target.port, "list", 0, 5000, "COPY") == (
            b"-ERR Target instance replied with error: BUSYKEY Target key name already exists.\r\n")
        assert conn.call("MIGRATE", "127.0.0.1", target.port, "list", 0, 5000, "COPY", "REPLACE") == b"+OK\r\n"
        conn.close()
        assert src.lrange("list", 0, -1) == tgt.lrange("list", 0, -1) == [b"a", b"b", b"c", b"d"]
        tgt.flushall()


def test_keys_moves_only_existing_ones(sources, tgt, target):
    for name, port, src in sources:
        src.mset({"key1": "v1", "key2": "v2", "key3": "v3"})
        conn = RespConn(port)
        assert conn.call("MIGRATE", "127.0.0.1", target.port, "", 0, 5000,
                         "KEYS", "nokey-1", "nokey-2") == b"+NOKEY\r\n"
        assert conn.call("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", "nokey-1", "key1",
                         "nokey-2", "key2", "key3", "key3") == (
            b"-ERR Target instance replied with error: BUSYKEY Target key name already exists.\r\n")
        conn.close()
        assert src.dbsize() == 0, name
        assert tgt.mget("key1", "key2", "key3") == [b"v1", b"v2", b"v3"]
        tgt.flushall()


def test_auth_and_auth2_against_ophidis(server, redis_server, start_server):
    """A target with requirepass (a fresh one per source, so the cached
    connection starts unauthenticated): NOAUTH and WRONGPASS forwarded,
    AUTH and AUTH2 default accepted; the same replies as redis-server's."""
    results = []
    for port in (server.port, redis_server.port):
        t = start_server()
        tc = t.client()
        tc.config_set("requirepass", "foobar")
        tc.execute_command("AUTH", "foobar")
        conn = RespConn(port)
        conn.call("SET", "list", "v")
        steps = [conn.call("MIGRATE", "127.0.0.1", t.port, "list", 0, 5000, "COPY"),
                 conn.call("MIGRATE", "127.0.0.1", t.port, "list", 0, 5000, "COPY", "AUTH", "wrong"),
                 conn.call("MIGRATE", "127.0.0.1", t.port, "list", 0, 5000, "AUTH", "foobar"),
                 tc.get("list")]
        conn.call("SET", "list", "w")
        steps += [conn.call("MIGRATE", "127.0.0.1", t.port, "list", 0, 5000, "REPLACE",
                            "AUTH2", "default", "foobar"), tc.get("list"), conn.call("EXISTS", "list")]
        conn.close()
        tc.close()
        t.stop()
        results.append(steps)
    assert results[0] == results[1]
    assert results[0][:3] == [
        b"-ERR Target instance replied with error: NOAUTH Authentication required.\r\n",
        b"-ERR Target instance replied with error: WRONGPASS invalid username-password pair or user "
        b"is disabled.\r\n",
        b"+OK\r\n"]
    assert results[0][3:] == [b"v", b"+OK\r\n", b"w", b":0\r\n"]


def test_auth2_with_an_acl_user_on_redis(r, redis_target):
    """Ophidis authenticates to redis-server as an ACL user."""
    rt = redis_target.client()
    rt.flushall()
    rt.execute_command("ACL", "SETUSER", "mover", "on", ">secret", "~*", "+@all")
    try:
        r.set("k", "v")
        with pytest.raises(Exception, match="Target instance replied with error: WRONGPASS"):
            r.execute_command("MIGRATE", "127.0.0.1", redis_target.port, "k", 0, 5000,
                              "AUTH2", "mover", "nope")
        assert r.exists("k") == 1
        # (the cached connection may still be the default user's: as
        # Redis, the RESTORE after the failed AUTH may have run there)
        rt.delete("k")
        assert r.execute_command("MIGRATE", "127.0.0.1", redis_target.port, "k", 0, 5000,
                                 "AUTH2", "mover", "secret") == b"OK"
        assert rt.get("k") == b"v"
        assert r.exists("k") == 0
    finally:
        rt.execute_command("ACL", "DELUSER", "mover")
        rt.flushall()
        rt.close()


def test_slowlog_redacts_credentials_as_redis(sources, config):
    argv = ["MIGRATE", "127.0.0.1", str(free_port()), "", "0", "100", "COPY", "AUTH", "pw",
            "AUTH2", "user", "pw2", "KEYS", "missing"]
    seen = []
    for _, _, src in sources:
        config(src, slowlog_log_slower_than=0)
        src.slowlog_reset()
        try:
            src.execute_command(*argv)
        except Exception:  # noqa: BLE001
            pass
        seen.append(src.execute_command("SLOWLOG", "GET", 10)[0][3])
        config.restore()
    assert seen[0] == seen[1]
    assert seen[0] == [b"MIGRATE", b"127.0.0.1", argv[2].encode(), b"", b"0", b"100", b"COPY", b"AUTH",
                       b"(redacted)", b"AUTH2", b"(redacted)", b"(redacted)", b"KEYS", b"missing"]


# -- timeouts -----------------------------------------------------------------------------

def test_timeout_against_a_port_that_never_answers(sources, r):
    """The kernel completes the connection (listen backlog) but nobody
    reads nor answers: IOERR after about the timeout, the key stays."""
    sink = socket.socket()
    sink.bind(("127.0.0.1", 0))
    sink.listen(16)
    port = sink.getsockname()[1]
    try:
        cached = cached_sockets(r)
        for name, sport, src in sources:
            src.set("k", "v")
            conn = RespConn(sport)
            t0 = time.monotonic()
            reply = conn.call("MIGRATE", "127.0.0.1", port, "k", 0, 300)
            elapsed = time.monotonic() - t0
            assert reply == b"-IOERR error or timeout reading to target instance\r\n", name
            assert 0.25 <= elapsed < 30.0, (name, elapsed)
            assert src.get("k") == b"v"
            assert conn.call("PING") == b"+PONG\r\n"
            conn.close()
        # the timed-out connection was dropped from the cache
        assert cached_sockets(r) == cached
    finally:
        sink.close()


@pytest.mark.skipif(not HAS_WCHAN, reason="needs /proc/<pid>/wchan")
def test_timeout_while_the_target_sleeps(r, target, tgt):
    """As Redis's test: the target is busy (DEBUG SLEEP) past the timeout."""
    r.set("key", "v")
    sleeper = RespConn(target.port)
    sleeper.send("DEBUG", "SLEEP", "3")
    try:
        # the target is in its sleep (its main thread in the kernel's
        # nanosleep), which outlasts the 500 ms timeout
        wait_until(lambda: in_sleep(target.pid), 20, what="the target in DEBUG SLEEP")
        with pytest.raises(Exception, match="IOERR error or timeout reading to target instance"):
            r.execute_command("MIGRATE", "127.0.0.1", target.port, "key", 0, 500)
        assert r.exists("key") == 1
    finally:
        sleeper.read(timeout=10)
        sleeper.close()


# -- the connection cache -------------------------------------------------------------------

def test_one_cached_connection_and_select_only_on_change(server, redis_server, start_server):
    results = []
    for port in (server.port, redis_server.port):
        t = start_server()
        tc = t.client()
        src = RespConn(port)
        src.call("MSET", "a", 1, "b", 2, "c", 3)
        got = [src.call("MIGRATE", "127.0.0.1", t.port, "a", 1, 5000),
               src.call("MIGRATE", "127.0.0.1", t.port, "b", 1, 5000),
               len(restore_clients(tc)), cmd_calls(tc, "select"),
               src.call("MIGRATE", "127.0.0.1", t.port, "c", 2, 5000),
               len(restore_clients(tc)), cmd_calls(tc, "select")]
        results.append(got)
        src.close()
        tc.close()
        t.stop()
    assert results[0] == results[1]
    assert results[0] == [b"+OK\r\n", b"+OK\r\n", 1, 1, b"+OK\r\n", 1, 2]


def test_connection_closed_by_the_target_is_replaced(sources, tgt, target):
    """The target kills the cached connection: the next MIGRATE finds it
    dead and retries once on a new one."""
    for name, port, src in sources:
        src.mset({"a": 1, "b": 2})
        assert src.execute_command("MIGRATE", "127.0.0.1", target.port, "a", 0, 5000) == b"OK"
        ids = [line.split()[0].split("=")[1] for line in restore_clients(tgt)]
        assert ids, name
        for i in ids:
            tgt.execute_command("CLIENT", "KILL", "ID", i)
        wait_until(lambda: not restore_clients(tgt), what="the killed connection to go")
        assert src.execute_command("MIGRATE", "127.0.0.1", target.port, "b", 0, 5000) == b"OK", name
        assert tgt.mget("a", "b") == [b"1", b"2"]
        tgt.flushall()


def test_cached_connections_are_released_after_10_seconds(start_server, target, tgt):
    src = start_server().client()
    src.set("key", "v")
    assert cached_sockets(src) == 0
    t0 = time.monotonic()           # before the connection's last use
    assert src.execute_command("MIGRATE", "127.0.0.1", target.port, "key", 9, 1000) == b"OK"
    assert cached_sockets(src) == 1
    wait_until(lambda: cached_sockets(src) == 0, timeout=30,
               what="the idle connection to be closed")
    assert time.monotonic() - t0 >= 9.5
    wait_until(lambda: not restore_clients(tgt), what="the target to see the close")
    target.client(db=9).flushdb()


# -- propagation --------------------------------------------------------------------------

def _stream_of(port, client, target_port):
    """What a replica of the source receives for: a MIGRATE of keys of
    which one is busy on the target, a COPY, a MIGRATE to a closed port,
    then a marker SET."""
    s = SyncStream(port)
    try:
        client.mset({"a": 1, "b": 2, "c": 3})
        client.execute_command("MIGRATE", "127.0.0.1", target_port, "a", 0, 5000, "COPY")
        try:
            client.execute_command("MIGRATE", "127.0.0.1", target_port, "", 0, 5000, "KEYS", "a", "busy", "b")
        except Exception:  # noqa: BLE001
            pass
        client.execute_command("MIGRATE", "127.0.0.1", target_port, "c", 0, 5000, "REPLACE")
        client.set("marker", "1")
        return [c for c in s.read_until(b"set") if c[0].lower() not in (b"ping", b"mset")]
    finally:
        s.conn.close()


def test_deletion_propagates_as_del(server, redis_server, start_server, tgt, target):
    streams = []
    for port in (server.port, redis_server.port):
        src = redis_server.client() if port == redis_server.port else server.client()
        src.flushall()
        src.set("busy", "here")
        tgt.flushall()
        tgt.set("busy", "there")
        streams.append(_stream_of(port, src, target.port))
        src.flushall()
        src.close()
    assert streams[0] == streams[1]
    assert streams[0] == [[b"SELECT", b"0"], [b"DEL", b"b"], [b"DEL", b"c"],
                          [b"SET", b"marker", b"1"]]


def test_deletion_reaches_a_replica(start_server, target, tgt):
    master = start_server()
    replica = start_server("--replicaof", "127.0.0.1", str(master.port))
    m = master.client()
    rep = replica.client()
    wait_until(lambda: rep.info("replication")["master_link_status"] == "up", what="the link")
    m.mset({"k1": "v1", "k2": "v2"})
    wait_until(lambda: rep.dbsize() == 2, what="the keys on the replica")
    assert m.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", "k1", "k2") == b"OK"
    wait_until(lambda: rep.dbsize() == 0, what="the DEL on the replica")
    assert tgt.mget("k1", "k2") == [b"v1", b"v2"]


def test_deletion_is_written_to_the_aof(start_server, target, tgt):
    src = start_server("--appendonly", "yes")
    c = src.client()
    c.mset({"moved": "v", "kept": "w"})
    assert c.execute_command("MIGRATE", "127.0.0.1", target.port, "moved", 0, 5000) == b"OK"
    assert c.execute_command("MIGRATE", "127.0.0.1", target.port, "kept", 0, 5000, "COPY",
                             "REPLACE") == b"OK"
    incr = glob.glob(os.path.join(src.dir, "appendonlydir", "*.incr.aof"))
    assert len(incr) == 1
    wait_until(lambda: b"*2\r\n$3\r\nDEL\r\n$5\r\nmoved\r\n" in open(incr[0], "rb").read(),
               what="the DEL in the AOF")
    data = open(incr[0], "rb").read()
    assert b"MIGRATE" not in data.upper() and b"kept\r\n" in data
    c.close()
    src.stop()
    again = ServerProc(["--appendonly", "yes"], cwd=src.dir)
    try:
        c = again.client()
        assert c.get("moved") is None and c.get("kept") == b"w"
        c.close()
    finally:
        again.stop()


def test_restore_asking_as_redis(raw, ref_raw, r):
    """RESTORE-ASKING is RESTORE (what MIGRATE sends in cluster mode)."""
    r.set("src", "v")
    payload = r.dump("src")
    for conn in (raw, ref_raw):
        got = [conn.call("RESTORE-ASKING", "k", 0, payload),
               conn.call("RESTORE-ASKING", "k", 0, payload),
               conn.call("RESTORE-ASKING", "k", 0, payload, "REPLACE", "ABSTTL"),
               conn.call("RESTORE-ASKING", "k", 0, b"bad payload"),
               conn.call("GET", "k")]
        if conn is raw:
            ours = got
    assert ours == got
    assert ours == [b"+OK\r\n", b"-BUSYKEY Target key name already exists.\r\n", b"+OK\r\n",
                    b"-BUSYKEY Target key name already exists.\r\n", b"$1\r\nv\r\n"]


def test_cluster_mode_sends_restore_asking(start_server, target, tgt):
    port, = cluster_ports(1)
    src = start_server("--port", str(port), "--cluster-enabled", "yes").client()
    src.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
    wait_until(lambda: b"cluster_state:ok" in src.execute_command("CLUSTER", "INFO"), 30, what="cluster ok")
    src.set("k", "v")
    before = cmd_calls(tgt, "restore-asking")
    assert src.execute_command("MIGRATE", "127.0.0.1", target.port, "k", 0, 5000) == b"OK"
    assert cmd_calls(tgt, "restore-asking") == before + 1
    assert tgt.get("k") == b"v"


def test_keyspace_events_as_redis(sources, tgt, target, config):
    """The source announces "del" for each key it moved (none for COPY)."""
    seen = []
    for _, _, src in sources:
        config(src, notify_keyspace_events="KEA")
        src.mset({"a": 1, "b": 2, "c": 3})
        tgt.set("b", "busy")
        with KeyspaceEvents(src) as ev:
            ev.collect()
            try:
                src.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", "a", "b")
            except Exception:  # noqa: BLE001
                pass
            src.execute_command("MIGRATE", "127.0.0.1", target.port, "c", 0, 5000, "COPY")
            seen.append(ev.collect())
        config.restore()
        tgt.flushall()
    assert seen[0] == seen[1]
    assert seen[0] == [(b"__keyspace@0__:a", b"del"), (b"__keyevent@0__:del", b"a")]
