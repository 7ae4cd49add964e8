"""SYNC / REPLCONF: the RDB payload and the replication stream of write
commands (compared with Debian's redis-server 7.0), and CONFIG SET port
failing without losing the listener."""

import socket
import time

import pytest
import redis
from redis.exceptions import ResponseError

from support.replication import SyncStream
from support.servers import free_port
from support.wait import port_open, wait_until


def _normalize(cmds):
    """Lower-case command names; absolute times masked."""
    out = []
    for c in cmds:
        c = [c[0].lower()] + c[1:]
        if c[0] == b"pexpireat":
            c[2] = b"<ms>"
        if c[0] == b"set" and b"PXAT" in c:
            c[c.index(b"PXAT") + 1] = b"<ms>"
        out.append(c)
    return out


def _workload(c):
    c.set("foo1", "bar", ex=200)
    c.execute_command("SETEX", "foo1", 100, "bar")
    c.set("foo2", "bar")
    c.expire("foo2", 100)
    c.execute_command("GETEX", "foo2", "PERSIST")
    c.execute_command("GETDEL", "foo2")
    p = c.pipeline(transaction=True)
    p.set("x", 1)
    p.execute_command("INCR", "x")
    p.execute()
    p = c.pipeline(transaction=True)
    p.set("single", 1)
    p.execute()
    c.script_load("return 1")
    c.eval("redis.call('set', KEYS[1], 'a'); redis.call('del', KEYS[1])", 1, "zz")
    c.zadd("z", {"a": 1, "b": 2, "c": 3})
    c.execute_command("ZMPOP", 1, "z", "MIN", "COUNT", 10)
    c.incrbyfloat("fl", 1.5)
    c.set("last", "1")


EXPECTED_LEN = 20


def _run(port, client):
    client.flushall()
    s = SyncStream(port)
    try:
        assert s.payload.startswith(b"REDIS")
        _workload(client)
        return _normalize(s.commands(EXPECTED_LEN))
    finally:
        s.close()


def test_sync_stream_matches_redis(server, r, redis_server, ref, config):
    for c in (ref, r):      # no PING in the middle of the compared stream
        config(c, repl_diskless_sync="no", repl_ping_replica_period=3600)
    theirs = _run(redis_server.port, ref)
    ours = _run(server.port, r)
    assert ours == theirs
    assert ours[0] == [b"select", b"0"]
    assert [b"set", b"foo1", b"bar", b"PXAT", b"<ms>"] in ours
    assert [b"pexpireat", b"foo2", b"<ms>"] in ours
    assert [b"zpopmin", b"z", b"3"] in ours
    assert [b"set", b"fl", b"1.5", b"KEEPTTL"] in ours
    assert ours[-1] == [b"set", b"last", b"1"]


def _ttl_workload(c):
    now_ms = int(time.time() * 1000)
    c.execute_command("SET", "k1", "v", "pxat", now_ms + 100_000, "NX", "GET")
    c.execute_command("SET", "k2", "v", "EX", 100)
    c.execute_command("SET", "k3", "v", "PX", 100_000, "GET")
    c.execute_command("SET", "k4", "v", "GET")
    c.execute_command("SET", "k2", "w", "EXAT", now_ms // 1000 + 100, "XX")
    c.execute_command("SET", "k1", "w", "PXAT", now_ms + 100_000, "XX", "GET")
    c.set("last", "1")


def _masked(cmds):
    """Absolute times masked, PINGs left out (valkey-server sends "ping")."""
    return [[b"<ms>" if a.isdigit() and len(a) == 13 else a for a in c] for c in cmds
            if c[0].lower() != b"ping"]


def test_set_with_pxat_propagates_as_sent_same_as_valkey(server, r, valkey_server, vk, config):
    # Redis 7.2+ (setGenericCommand): EX/PX/EXAT become PXAT <ms>, a SET
    # given PXAT goes to replicas as it was sent (NX/XX/GET and the
    # option's case kept: Redis 7.4.1's unit/expire), GET without a TTL
    # is dropped
    streams = []
    for srv, c in ((valkey_server, vk), (server, r)):
        config(c, repl_diskless_sync="no", repl_ping_replica_period=3600)
        c.flushall()
        s = SyncStream(srv.port)
        try:
            _ttl_workload(c)
            streams.append(_masked(s.read_until(b"set") + s.commands(6)))
        finally:
            s.close()
    theirs, ours = streams
    assert ours == theirs
    assert ours[1:] == [
        [b"SET", b"k1", b"v", b"pxat", b"<ms>", b"NX", b"GET"],
        [b"SET", b"k2", b"v", b"PXAT", b"<ms>"],
        [b"SET", b"k3", b"v", b"PXAT", b"<ms>"],
        [b"SET", b"k4", b"v"],
        [b"SET", b"k2", b"w", b"PXAT", b"<ms>"],
        [b"SET", b"k1", b"w", b"PXAT", b"<ms>", b"XX", b"GET"],
        [b"SET", b"last", b"1"]]


def test_restore_of_an_expired_key_replacing_propagates_del_or_unlink_same_as_valkey(
        server, r, valkey_server, vk, config):
    # restoreCommand (7.2+): an already expired key is not stored; the key
    # it replaced goes to replicas as DEL, or UNLINK under
    # lazyfree-lazy-server-del (Redis 7.4.1's unit/dump)
    streams = []
    for srv, c in ((valkey_server, vk), (server, r)):
        config(c, repl_diskless_sync="no", repl_ping_replica_period=3600,
               lazyfree_lazy_server_del="no")
        c.flushall()
        c.set("key1", "value2")
        c.rpush("key2", *range(65))
        c.set("key", "value")
        payload = c.dump("key")
        s = SyncStream(srv.port)
        try:
            past = int(time.time() * 1000) - 5000
            assert c.restore("key1", past, payload, replace=True, absttl=True)
            c.config_set("lazyfree-lazy-server-del", "yes")
            assert c.restore("key2", past, payload, replace=True, absttl=True)
            assert c.restore("key3", past, payload, replace=True, absttl=True)   # nothing replaced
            assert c.exists("key1", "key2", "key3") == 0
            c.set("last", "1")
            streams.append(_masked(s.read_until(b"set")))
        finally:
            s.close()
    theirs, ours = streams
    assert ours == theirs
    assert ours == [[b"SELECT", b"0"], [b"DEL", b"key1"], [b"UNLINK", b"key2"], [b"SET", b"last", b"1"]]


def test_sync_payload_holds_the_dataset(server, r):
    r.set("persisted-key", "v")
    s = SyncStream(server.port)
    try:
        assert s.payload.startswith(b"REDIS") and b"persisted-key" in s.payload
        c2 = server.client(db=3)
        c2.set("k", "v")
        assert s.commands(2) == [[b"SELECT", b"3"], [b"SET", b"k", b"v"]]
        c2.close()
    finally:
        s.close()


def test_replconf_accepts_options(r):
    assert r.execute_command("REPLCONF", "listening-port", 1234) in (b"OK", "OK", True)
    assert r.execute_command("REPLCONF", "capa", "eof", "capa", "psync2") in (b"OK", "OK", True)
    with pytest.raises(ResponseError):
        r.execute_command("REPLCONF", "capa")


def test_config_set_port_in_use_fails_and_rolls_back(server, r):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    used = busy.getsockname()[1]
    try:
        with pytest.raises(ResponseError, match=r"^CONFIG SET failed \(possibly related to argument "
                                                r"'port'\) - Unable to listen on this port"):
            r.execute_command("CONFIG", "SET", "maxmemory", "10000001", "port", used,
                              "client-query-buffer-limit", "10m")
        assert r.config_get("maxmemory") == {"maxmemory": "0"}
        assert r.config_get("port") == {"port": str(server.port)}
        # The server still accepts connections on its port.
        c = redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=5)
        assert c.ping()
        c.close()
    finally:
        busy.close()


def test_config_set_port_moves_the_listener(server, r):
    new = free_port()
    try:
        assert r.config_set("port", new)
        wait_until(lambda: port_open(new), 20, what="the new port")
        c = redis.Redis(host="127.0.0.1", port=new, socket_timeout=5)
        assert c.ping()
    finally:
        c = redis.Redis(host="127.0.0.1", port=new, socket_timeout=5)
        c.config_set("port", server.port)
        c.close()
    wait_until(lambda: port_open(server.port), 20, what="the old port again")
    c = redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=5)
    assert c.ping()
    c.close()


def test_sync_client_is_a_replica_in_info_and_client_kill(server, r):
    s = SyncStream(server.port)
    try:
        info = r.info("replication")
        assert info["connected_slaves"] == 1
        assert info["slave0"]["state"] == "online"
        listed = r.execute_command("CLIENT", "LIST", "TYPE", "replica").decode().splitlines()
        assert len(listed) == 1
        assert r.execute_command("CLIENT", "KILL", "TYPE", "slave") == 1
        assert s.read_until_closed(20) == b""          # the server closed the stream
        wait_until(lambda: not r.info("replication")["connected_slaves"], 20, 0.01, what="the replica to go")
        assert r.info("replication")["connected_slaves"] == 0
    finally:
        s.close()


# One pipelined read: the request loop's fast path runs these with a
# replica attached and propagates each (rewritten, forced, or with the
# SELECTs a db switch needs) as Redis's call() does.
_PIPELINE = (("SET", "a", "1", "EX", "100"), ("INCRBYFLOAT", "f", "1.5"), ("SELECT", "2"), ("SET", "b", "2"),
             ("GET", "b"), ("SADD", "s", "x"), ("SPOP", "s"), ("SPOP", "s"), ("SELECT", "0"),
             ("FLUSHDB",), ("LPUSH", "l", "1", "2"), ("RPOP", "l"), ("INCR", "n"), ("DEL", "nosuch"),
             ("EXPIRE", "n", "100"), ("SET", "last", "1"))


def _pipelined_stream(port, c):
    c.flushall()
    s = SyncStream(port)
    try:
        with s.conn.__class__(port) as w:
            w.pipeline(*_PIPELINE)
        return _normalize(_read_to_last(s))
    finally:
        s.close()


def _read_to_last(s):
    out = []
    while True:
        out.append(s.read_command())
        if out[-1][0].lower() == b"set" and out[-1][1] == b"last":
            return out


def test_pipelined_writes_stream_as_redis(server, r, redis_server, ref, config):
    for c in (ref, r):
        config(c, repl_diskless_sync="no", repl_ping_replica_period=3600)
    theirs = _pipelined_stream(redis_server.port, ref)
    ours = _pipelined_stream(server.port, r)
    assert ours == theirs
    assert [b"select", b"2"] in ours and [b"srem", b"s", b"x"] in ours and [b"flushdb"] in ours


def _lazy_expiry_stream(port, c):
    c.flushall()
    c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        c.set("k", "v", px=50)
        c.set("k2", "v", px=50)
        c.set("k3", "v", px=50)
        c.set("k4", "v", px=50)
        s = SyncStream(port)
        try:
            time.sleep(0.2)
            with s.conn.__class__(port) as w:
                w.pipeline(("GET", "k"), ("EXISTS", "k2"), ("GET", "k"), ("MGET", "k3", "k4"), ("INCR", "n"),
                           ("SET", "last", "1"))
            return s.read_until(b"set")
        finally:
            s.close()
    finally:
        c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_lazy_expiry_in_a_pipeline_streams_as_redis(server, r, redis_server, ref, config):
    """Read commands of the fast path that find expired keys: their DELs
    reach the stream, the reads themselves do not."""
    for c in (ref, r):
        config(c, repl_diskless_sync="no", repl_ping_replica_period=3600)
    theirs = _lazy_expiry_stream(redis_server.port, ref)
    ours = _lazy_expiry_stream(server.port, r)
    assert ours == theirs, (ours, theirs)
    assert [b"DEL", b"k"] in ours and [b"DEL", b"k2"] in ours and not any(x[0] == b"GET" for x in ours)
