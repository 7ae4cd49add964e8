"""maxmemory behaviours Redis's unit/maxmemory tests, each run on
ophidis-server and on Debian's redis-server (``each_server``) with the same
assertions: shared integers, CONFIG SET maxmemory evicting from the event
loop (after a transaction), evictions propagated as single DELs, a limit
set just above the memory in use evicting nothing, the replicas' output not
counted for eviction."""

from __future__ import annotations

import pytest

from support.replication import SyncStream
from support.servers import RedisServerProc
from support.wait import wait_until


@pytest.fixture
def c(each_server):
    cl = each_server.client()
    cl.flushall()
    cl.config_set("maxmemory", 0)
    cl.config_set("maxmemory-policy", "noeviction")
    cl.config_resetstat()
    yield cl
    cl.config_set("maxmemory", 0)
    cl.config_set("maxmemory-policy", "noeviction")
    cl.close()


def _commands(repl, n):
    """The next n commands of the replication stream, PINGs left out."""
    out = []
    while len(out) < n:
        a = repl.read_command()
        if a[0].lower() != b"ping":
            out.append(a)
    return out


def _refcount(c, key):
    return c.execute_command("OBJECT", "REFCOUNT", key)


def test_small_integers_shared_unless_lru_or_lfu_with_a_limit(c):
    c.set("a", 1)
    c.set("big", 10000)
    assert _refcount(c, "a") == 2147483647
    assert _refcount(c, "big") == 1
    assert b"refcount:2147483647 " in c.execute_command("DEBUG", "OBJECT", "a")
    c.config_set("maxmemory", 1 << 30)
    c.config_set("maxmemory-policy", "allkeys-random")
    c.set("a", 1)
    assert _refcount(c, "a") == 2147483647
    for policy in ("allkeys-lru", "volatile-lru", "allkeys-lfu", "volatile-lfu"):
        c.config_set("maxmemory-policy", policy)
        c.set("a", 1)
        assert _refcount(c, "a") == 1, policy
        assert b"refcount:1 " in c.execute_command("DEBUG", "OBJECT", "a")
    c.config_set("maxmemory", 0)
    c.set("a", 1)
    assert _refcount(c, "a") == 2147483647


def test_evictions_propagate_as_single_dels(each_server, c):
    repl = SyncStream(each_server.port)
    try:
        c.set("asdf1", 1)
        c.set("asdf2", 2)
        c.set("asdf3", 3)
        c.config_set("maxmemory-policy", "allkeys-lru")
        c.config_set("maxmemory", 1)
        wait_until(lambda: c.dbsize() == 0, timeout=20)
        c.config_set("maxmemory", 0)
        c.config_set("maxmemory-policy", "noeviction")
        c.set("asdf4", 4)
        got = _commands(repl, 1 + 3 + 3 + 1)
        names = [a[0].lower() for a in got]
        assert names == [b"select"] + [b"set"] * 3 + [b"del"] * 3 + [b"set"]
        assert sorted(a[1] for a in got if a[0].lower() == b"del") == [b"asdf1", b"asdf2", b"asdf3"]
    finally:
        repl.conn.close()


def test_config_set_maxmemory_in_multi_evicts_after_the_transaction(each_server, c):
    repl = SyncStream(each_server.port)
    try:
        c.config_set("maxmemory-policy", "allkeys-lru")
        p = c.pipeline(transaction=True)
        p.execute_command("INCR", "x")
        p.config_set("maxmemory", 1)
        p.execute_command("INCR", "x")
        assert p.execute() == [1, True, 2]
        wait_until(lambda: c.dbsize() == 0, timeout=20)
        cmds = _commands(repl, 6)
        # Redis 7.2+ (ours): the SELECT inside the MULTI; redis-server 7.0 sends it before
        head = [b"select", b"multi"] if isinstance(each_server, RedisServerProc) else [b"multi", b"select"]
        assert [a[0].lower() for a in cmds] == head + [b"incr", b"incr", b"exec", b"del"]
        assert cmds[-1][1] == b"x"
    finally:
        repl.conn.close()


def test_limit_just_above_usage_evicts_nothing(c):
    # unit/maxmemory's "Don't rehash if used memory exceeds maxmemory after
    # rehash": setting the limit must not make the structures grow past it
    # (Redis's latency histograms would: they are allocated on first use)
    c.config_set("latency-tracking", "no")
    c.config_set("maxmemory-policy", "allkeys-random")
    p = c.pipeline(transaction=False)
    for j in range(4096):
        p.set(str(j), "A")
    p.execute()
    used = c.info("memory")["used_memory"]
    c.config_set("maxmemory", used + 10 * 1024)
    c.set("k1", "v1")
    c.set("k2", "v2")
    assert c.dbsize() == 4098
    assert c.info("stats")["evicted_keys"] == 0
    c.config_set("latency-tracking", "yes")


def test_replica_output_not_counted_for_eviction(each_server, c):
    # a replica that reads nothing: what the master holds for it is
    # mem_not_counted_for_evict and mem_clients_slaves, and a limit just
    # above the rest of the memory evicts no key
    for j in range(100):
        c.setrange("key:%d" % j, 100000, "asdf")
    c.config_set("maxmemory-policy", "allkeys-random")
    c.config_set("client-output-buffer-limit", "replica 0 0 0")
    c.config_set("repl-backlog-size", 16384)   # Redis's backlog is counted, up to its size
    repl = SyncStream(each_server.port)
    try:
        mem = c.info("memory")
        limit = mem["used_memory"] - mem["mem_not_counted_for_evict"] + 256 * 1024
        c.config_set("maxmemory", limit)
        payload = "A" * 10000
        for _ in range(3000):          # ~30 MB of stream, more than the kernel buffers take
            c.setrange("key:0", 0, payload)
        mem = c.info("memory")
        assert mem["mem_not_counted_for_evict"] > 5 << 20
        assert mem["mem_clients_slaves"] > 5 << 20
        assert mem["used_memory"] > limit
        assert c.dbsize() == 100
        assert c.info("stats")["evicted_keys"] == 0
        c.execute_command("CLIENT", "KILL", "TYPE", "replica")
        wait_until(lambda: c.info("memory")["mem_clients_slaves"] == 0, timeout=10)
        assert c.info("memory")["mem_not_counted_for_evict"] < 1 << 20
    finally:
        repl.conn.close()
        c.config_set("client-output-buffer-limit", "replica 268435456 67108864 60")
        c.config_set("repl-backlog-size", 1 << 20)
