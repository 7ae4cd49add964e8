"""REPLICAOF: Ophidis as a replica of Debian's redis-server and of another
Ophidis (full synchronisation, then the command stream), read-only
replicas, ROLE / INFO replication, REPLICAOF NO ONE."""

from __future__ import annotations

import contextlib
import os
import signal

import pytest
import redis
from support.clients import contents
from support.replication import SyncStream
from support.servers import REDIS_SERVER, free_port, redis_server_client
from support.wait import wait_until


@pytest.fixture
def real_master():
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (make test installs it)")
    # no diskless delay: the test does not wait 5 s for the first sync
    with redis_server_client(["--repl-diskless-sync-delay", "0"], debug=False) as c:
        yield c


def linked(replica):
    return replica.info("replication").get("master_link_status") == "up"


def caught_up(master, replica):
    return master.info("replication")["master_repl_offset"] == \
        replica.info("replication")["slave_repl_offset"]


def _workload(m):
    m.set("s", "v")
    m.set("ttl", "x", ex=1000)
    m.hset("h", mapping={"a": "1", "b": "2"})
    m.rpush("l", "x", "y", "z")
    m.sadd("set", "m1", "m2")
    m.zadd("z", {"a": 1.5, "b": 2})
    m.incr("n")
    p = m.pipeline(transaction=True)
    p.incr("n")
    p.lpop("l")
    p.execute()
    m.eval("redis.call('set', KEYS[1], 'lua'); redis.call('del', 's')", 1, "fromlua")
    m.execute_command("SELECT", 2)
    m.execute_command("SET", "db2key", "in db 2")
    m.execute_command("SELECT", 0)


def _dataset(c):
    out = {}
    for db in (0, 2):
        c.execute_command("SELECT", db)
        for k in sorted(c.keys("*")):
            ttl = c.ttl(k)
            out[(db, k)] = (c.type(k), contents(c, k), ttl > 900 if ttl > 0 else ttl)
    c.execute_command("SELECT", 0)
    return out


def test_replica_of_redis_server(real_master, start_server):
    m = real_master
    m.set("before", "sync")
    s = start_server()
    r = s.client()
    r.set("local", "goes away at the full sync")
    assert r.execute_command("REPLICAOF", "127.0.0.1", str(m.port)) == b"OK"
    assert r.execute_command("REPLICAOF", "127.0.0.1", str(m.port)) == b"OK Already connected to specified master"
    wait_until(lambda: linked(r), what="the link")
    assert r.get("before") == b"sync" and r.get("local") is None
    _workload(m)
    wait_until(lambda: caught_up(m, r), what="the stream")
    assert _dataset(r) == _dataset(m)
    # a read-only replica
    with pytest.raises(redis.exceptions.ReadOnlyError):
        r.set("x", "1")
    p = r.pipeline(transaction=True)
    p.set("x", "1")
    with pytest.raises(redis.exceptions.ResponseError):   # queued SET refused, EXEC aborted
        p.execute()
    assert r.get("s") is None and r.get("fromlua") == b"lua"
    role = r.execute_command("ROLE")
    assert role[:4] == [b"slave", b"127.0.0.1", m.port, b"connected"]
    info = r.info("replication")
    assert info["role"] == "slave" and info["master_port"] == m.port
    assert m.info("replication")["connected_slaves"] == 1
    # the master's expirations arrive as DELs
    # (the replica does not delete them itself: DBSIZE counts the key until then)
    n = r.dbsize()
    m.set("short", "x", px=300)
    wait_until(lambda: r.dbsize() == n + 1, what="the short key")
    wait_until(lambda: r.dbsize() == n, what="the master's DEL")
    # promotion keeps the data and accepts writes
    assert r.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
    assert r.set("x", "1") and r.hgetall("h") == {b"a": b"1", b"b": b"2"}
    assert r.execute_command("ROLE")[0] == b"master"
    assert r.info("replication")["role"] == "master"


def test_replica_of_ophidis_and_relink(start_server):
    master = start_server()
    m = master.client()
    _workload(m)
    s = start_server()
    r = s.client()
    assert r.execute_command("SLAVEOF", "127.0.0.1", str(master.port)) is True   # redis-py maps +OK
    wait_until(lambda: linked(r), what="the link")
    wait_until(lambda: r.get("n") == b"2", what="the dataset")
    assert _dataset(r) == _dataset(m)
    m.set("later", "1")
    wait_until(lambda: r.get("later") == b"1", what="the stream")
    # the master restarts: the replica reconnects and resynchronises
    m.close()
    master.stop()
    wait_until(lambda: not linked(r), what="the link to drop")
    assert r.info("replication")["master_link_status"] == "down"
    assert r.get("later") == b"1"          # the data stays meanwhile


def test_replicaof_errors(r):
    with pytest.raises(redis.exceptions.ResponseError) as e:
        r.execute_command("REPLICAOF", "127.0.0.1", "70000")
    assert str(e.value) == "Invalid master port"
    with pytest.raises(redis.exceptions.ResponseError) as e:
        r.execute_command("REPLICAOF", "127.0.0.1", "abc")
    assert str(e.value) == "Invalid master port"
    assert r.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
    role = r.execute_command("ROLE")
    assert role[0] == b"master" and isinstance(role[1], int) and isinstance(role[2], list)


def test_replicaof_in_the_configuration(start_server):
    master = start_server()
    m = master.client()
    m.set("k", "from master")
    s = start_server("--replicaof", "127.0.0.1", str(master.port))
    r = s.client()
    wait_until(lambda: linked(r), what="the link")
    assert r.get("k") == b"from master"
    assert r.config_get("replicaof") == {"replicaof": "127.0.0.1 %d" % master.port}


def test_min_replicas_and_stale_data(r):
    """processCommand's replication checks: NOREPLICAS for writes while
    min-replicas-to-write is not met (queued writes abort EXEC), MASTERDOWN
    for non-stale commands on a replica whose link is down with
    replica-serve-stale-data no."""
    r.set("xx", "1")
    r.config_set("min-replicas-to-write", "2")
    try:
        with pytest.raises(redis.exceptions.ResponseError) as e:
            r.incr("xx")
        assert str(e.value) == "NOREPLICAS Not enough good replicas to write."
        assert r.get("xx") == b"1"        # reads are fine
    finally:
        r.config_set("min-replicas-to-write", "0")
    assert r.incr("xx") == 2
    r.config_set("replica-serve-stale-data", "no")
    try:
        r.execute_command("REPLICAOF", "127.0.0.1", str(free_port()))   # nobody there
        with pytest.raises(redis.exceptions.ResponseError) as e:
            r.get("xx")
        assert str(e.value) == "Link with MASTER is down and replica-serve-stale-data is set to 'no'."  # redis-py strips MASTERDOWN
        assert r.info("replication")["master_link_status"] == "down"   # INFO is a stale command
    finally:
        r.execute_command("REPLICAOF", "NO", "ONE")
        r.config_set("replica-serve-stale-data", "yes")
    assert r.get("xx") == b"2"


def test_min_replicas_in_scripts(r):
    r.set("x", "some value")
    r.config_set("min-replicas-to-write", "1")
    try:
        # a script that may not write runs; one flagged for writes does not
        assert r.eval("#!lua flags=no-writes\nreturn redis.call('get','x')", 1, "x") == b"some value"
        assert r.eval("return redis.call('get','x')", 1, "x") == b"some value"
        for body in ("#!lua\nreturn redis.call('get','x')", "return redis.call('set','x', 1)"):
            with pytest.raises(redis.exceptions.ResponseError) as e:
                r.eval(body, 1, "x")
            assert str(e.value).startswith("NOREPLICAS Not enough good replicas to write.")
    finally:
        r.config_set("min-replicas-to-write", "0")
    assert r.get("x") == b"some value"


def test_client_pause_holds_the_master_stream(start_server):
    """CLIENT PAUSE WRITE on a replica holds its master's writes as any
    client's: the stream is read but not applied until the pause ends, and
    nothing answers the master meanwhile."""
    master = start_server("--repl-ping-replica-period", "3600", "--repl-diskless-sync-delay", "0")
    m = master.client()
    s = start_server()
    r = s.client()
    r.replicaof("127.0.0.1", str(master.port))
    wait_until(lambda: linked(r), what="the link")
    m.set("foo", "bar")
    wait_until(lambda: caught_up(m, r), what="the first write")
    held = r.info("replication")["slave_repl_offset"]
    r.execute_command("CLIENT", "PAUSE", 100000, "WRITE")
    try:
        m.set("foo2", "bar2")
        m.set("foo3", "bar3")
        end = m.info("replication")["master_repl_offset"]
        wait_until(lambda: r.info("replication")["slave_read_repl_offset"] == end, what="the stream read")
        assert r.info("replication")["slave_repl_offset"] == held
        assert r.get("foo2") is None
    finally:
        r.execute_command("CLIENT", "UNPAUSE")
    wait_until(lambda: caught_up(m, r), what="the stream applied")
    assert r.mget("foo2", "foo3") == [b"bar2", b"bar3"]
    assert m.info("replication")["connected_slaves"] == 1
    m.set("after", "1")
    wait_until(lambda: r.get("after") == b"1", what="the stream after the pause")


def test_replicas_share_one_replication_buffer_in_memory_figures(start_server):
    """Two replicas waiting for the same payload hold one shared buffer:
    used_memory counts it once, and mem_clients_slaves is what it holds
    beyond repl-backlog-size (Redis 7.0's figures)."""
    master = start_server("--repl-backlog-size", "16384", "--repl-diskless-sync-delay", "5",
                          "--repl-diskless-sync-max-replicas", "2",
                          "--client-output-buffer-limit", "replica 0 0 0", "--rdb-key-save-delay", "1000000")
    m = master.client()
    for i in range(10):
        m.set("k%d" % i, "v")
    servers = [start_server() for _ in range(2)]
    reps = [s.client() for s in servers]
    for r in reps:
        r.replicaof("127.0.0.1", str(master.port))
    wait_until(lambda: m.info("persistence")["rdb_bgsave_in_progress"] == 1 and
               m.info("replication")["connected_slaves"] == 2, what="both replicas waiting for the payload")
    before = m.info("memory")["used_memory"]
    p = m.pipeline(transaction=False)
    for i in range(256):
        p.set("big%d" % i, "x" * 4096)
    p.execute()
    mem = m.info("memory")
    buf = mem["mem_total_replication_buffers"]
    assert buf > 1 << 20
    assert mem["mem_clients_slaves"] == buf - 16384
    assert mem["used_memory"] - before - 256 * 4096 < 2 * buf      # not once per replica
    for s in [master] + servers:    # (a shutdown waits for the delayed payload's child)
        os.kill(s.pid, signal.SIGKILL)


def test_transaction_selects_inside_multi_reach_replicas(start_server):
    """Redis 7.2+ propagates a transaction as MULTI, SELECT, ..., EXEC (7.0
    sent the first SELECT before the MULTI): an Ophidis replica and Debian's
    redis-server 7.0 as a replica apply it into the right databases, and a
    replica fed from the stream sees it in that order."""
    master = start_server()
    m = master.client()
    s = start_server()
    r = s.client()
    with contextlib.ExitStack() as stack:
        replicas = [r]
        if REDIS_SERVER is not None:
            replicas.append(stack.enter_context(redis_server_client(debug=False)))
        for rep in replicas:
            rep.execute_command("REPLICAOF", "127.0.0.1", str(master.port))
        for rep in replicas:
            wait_until(lambda: linked(rep), what="the link")
        stream = SyncStream(master.port)
        try:
            m.execute_command("SELECT", 9)
            m.execute_command("MULTI")
            m.execute_command("SET", "a", "9")
            m.execute_command("SELECT", 3)
            m.execute_command("SET", "b", "3")
            m.execute_command("INCR", "n")
            assert m.execute_command("EXEC") == [b"OK", b"OK", b"OK", 1]
            got = []
            while not got or got[-1][0].lower() != b"exec":
                got.append(stream.read_command())
            got = [[x[0].lower()] + x[1:] for x in got if x[0].lower() != b"ping"]
            assert got == [[b"multi"], [b"select", b"9"], [b"set", b"a", b"9"], [b"select", b"3"],
                           [b"set", b"b", b"3"], [b"incr", b"n"], [b"exec"]]
        finally:
            stream.close()
        for rep in replicas:
            wait_until(lambda: caught_up(m, rep), what="the stream")
            rep.execute_command("SELECT", 9)
            assert rep.get("a") == b"9" and rep.get("b") is None
            rep.execute_command("SELECT", 3)
            assert rep.get("b") == b"3" and rep.get("n") == b"1" and rep.get("a") is None
