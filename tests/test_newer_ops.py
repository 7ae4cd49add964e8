"""Operations features of Redis 7.4-8.10: the LRM eviction policies
(volatile-lrm, allkeys-lrm: least recently *modified*, 8.6), HOTKEYS (8.6)
and the INFO fields of that range.  Valkey has none of these, so the
assertions are Redis's documented replies."""

from __future__ import annotations

import pytest
import redis

from support.servers import ServerProc
from support.wait import wait_until

MAXMEM = 20 << 20
VAL = b"v" * 1000
POLICIES = ("volatile-lru, volatile-lfu, volatile-random, volatile-ttl, volatile-lrm, "
            "allkeys-lru, allkeys-lfu, allkeys-random, allkeys-lrm, noeviction")


@pytest.fixture(scope="module")
def msrv():
    s = ServerProc(["--enable-debug-command", "yes"])
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def m(msrv):
    c = msrv.client()
    c.config_set("maxmemory", "0")
    c.flushall()
    c.config_set("maxmemory-policy", "noeviction")
    c.config_resetstat()
    try:
        yield c
    finally:
        c.config_set("maxmemory", "0")
        c.config_set("maxmemory-policy", "noeviction")
        c.flushall()
        c.close()


def load(c, prefix, n, ex=None, between=None):
    p = c.pipeline(transaction=False)
    for i in range(n):
        p.set("%s:%d" % (prefix, i), VAL, ex=ex)
        if i % 500 == 499:
            p.execute()
            if between is not None:
                between()
    p.execute()


def alive(c, keys):
    p = c.pipeline(transaction=False)
    for k in keys:
        p.exists(k)
    return sum(p.execute())


# -- LRM: configuration -------------------------------------------------------------------------

def test_lrm_policies_are_config_values(m):
    for pol in ("volatile-lrm", "allkeys-lrm"):
        assert m.config_set("maxmemory-policy", pol)
        assert m.config_get("maxmemory-policy") == {"maxmemory-policy": pol}
        assert m.info("memory")["maxmemory_policy"] == pol
    with pytest.raises(redis.ResponseError) as e:
        m.config_set("maxmemory-policy", "allkeys-lrx")
    assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'maxmemory-policy') - "
                            "argument(s) must be one of the following: " + POLICIES)


def test_lrm_object_freq_refused_and_shared_integers_off(m):
    m.config_set("maxmemory-policy", "allkeys-lrm")
    m.set("a", 1)
    with pytest.raises(redis.ResponseError) as e:
        m.object("freq", "a")
    assert str(e.value).startswith("An LFU maxmemory policy is not selected, access frequency not tracked.")
    assert m.object("refcount", "a") == 2147483647       # no limit: still shared
    m.config_set("maxmemory", 1 << 30)
    assert m.object("refcount", "a") == 1                 # a limit and LRM: each key its own object


# -- LRM: what moves the clock ------------------------------------------------------------------

def _idle(c, key):
    return c.object("idletime", key)


def test_lrm_reads_leave_the_idle_time_writes_reset_it(m):
    m.config_set("maxmemory-policy", "allkeys-lrm")
    m.set("a", "1")
    m.sadd("s", "x")
    m.set("n", "5")
    wait_until(lambda: _idle(m, "a") >= 1 and _idle(m, "s") >= 1, timeout=10)
    # reads (and read-only keys of a write command) do not modify
    m.get("a")
    m.exists("a")
    m.strlen("a")
    m.smembers("s")
    m.sunionstore("dst", "s")
    assert _idle(m, "a") >= 1
    assert _idle(m, "s") >= 1
    assert _idle(m, "dst") == 0                           # the destination was written
    # a write that changes nothing is no modification
    assert m.set("a", "2", nx=True) is None
    assert m.sadd("s", "x") == 0
    assert _idle(m, "a") >= 1
    assert _idle(m, "s") >= 1
    # writes that change the key
    m.append("a", "z")
    assert _idle(m, "a") == 0
    m.sadd("s", "y")
    assert _idle(m, "s") == 0
    assert _idle(m, "n") >= 1
    m.incr("n")
    assert _idle(m, "n") == 0
    # the same reads under LRU do move the clock (the test can fail)
    m.config_set("maxmemory-policy", "allkeys-lru")
    m.set("b", "1")
    wait_until(lambda: _idle(m, "b") >= 1, timeout=10)
    m.get("b")
    assert _idle(m, "b") == 0


def test_lrm_idle_time_survives_a_reload(m):
    m.config_set("maxmemory-policy", "allkeys-lrm")
    m.set("old", "1")
    wait_until(lambda: _idle(m, "old") >= 2, timeout=10)
    m.set("new", "1")
    m.execute_command("DEBUG", "RELOAD")
    assert _idle(m, "old") >= 2
    assert _idle(m, "new") <= 1


# -- LRM: eviction order ------------------------------------------------------------------------

def _hot_keys_under(m, policy, touch):
    m.config_set("maxmemory", MAXMEM)
    m.config_set("maxmemory-policy", policy)
    hot = ["hot:%d" % i for i in range(300)]
    p = m.pipeline(transaction=False)
    for k in hot:
        p.set(k, VAL)
    p.execute()

    def use():
        q = m.pipeline(transaction=False)
        for k in hot:
            touch(q, k)
        q.execute()
    load(m, "cold", 40000, between=use)
    assert m.info()["evicted_keys"] > 20000
    return alive(m, hot)


def test_lrm_evicts_keys_only_read_lru_keeps_them(m):
    assert _hot_keys_under(m, "allkeys-lrm", lambda q, k: q.get(k)) < 30
    m.config_set("maxmemory", 0)
    m.flushall()
    m.config_resetstat()
    assert _hot_keys_under(m, "allkeys-lru", lambda q, k: q.get(k)) >= 285


def test_lrm_keeps_keys_recently_modified(m):
    assert _hot_keys_under(m, "allkeys-lrm", lambda q, k: q.set(k, VAL)) >= 285


def test_volatile_lrm_evicts_only_volatile_keys_least_recently_modified(m):
    m.config_set("maxmemory", MAXMEM)
    m.config_set("maxmemory-policy", "volatile-lrm")
    load(m, "p", 4000)
    hot = ["hot:%d" % i for i in range(200)]
    p = m.pipeline(transaction=False)
    for k in hot:
        p.set(k, VAL, ex=100000)
    p.execute()

    def modify():
        q = m.pipeline(transaction=False)
        for k in hot:
            q.setrange(k, 0, b"w")
        q.execute()
    load(m, "v", 26000, ex=100000, between=modify)
    assert m.info()["evicted_keys"] > 5000
    assert alive(m, ["p:%d" % i for i in range(4000)]) == 4000
    assert alive(m, hot) >= 190
