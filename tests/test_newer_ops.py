"""Operations features of Redis 7.4-8.10: the LRM eviction policies
(volatile-lrm, allkeys-lrm: least recently *modified*, 8.6), HOTKEYS (8.6)
and the INFO fields of that range.  Valkey has none of these, so the
assertions are Redis's documented replies."""

from __future__ import annotations

import time

import pytest
import redis

from ophidis.cluster.slots import key_hash_slot
from support.resp import encode
from support.servers import ServerProc, free_port
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


# -- HOTKEYS ------------------------------------------------------------------------------------

@pytest.fixture
def hk(r):
    """The session server with no HOTKEYS session, and none left after."""
    def clear():
        r.execute_command("HOTKEYS", "STOP")
        r.execute_command("HOTKEYS", "RESET")
    clear()
    yield r
    clear()


def _get(raw, resp3=False):
    """HOTKEYS GET as {field: value}, checking the reply is an array of one map."""
    v = raw.call_value("HOTKEYS", "GET")
    assert isinstance(v, list) and len(v) == 1, v
    m = v[0]
    if resp3:
        assert isinstance(m, dict), m
        return m
    assert isinstance(m, list) and len(m) % 2 == 0, m
    return dict(zip(m[::2], m[1::2]))


@pytest.mark.parametrize("args,err", [
    ((), "METRICS parameter is required"),
    (("COUNT", "1", "CPU"), "METRICS parameter is required"),
    (("METRICS", "1"), "METRICS count does not match number of metric types provided"),
    (("METRICS", "0", "CPU"), "METRICS count must be > 0 and <= 2"),
    (("METRICS", "3", "CPU"), "METRICS count must be > 0 and <= 2"),
    (("METRICS", "x", "CPU"), "METRICS count must be > 0 and <= 2"),
    (("METRICS", "2", "CPU"), "METRICS count does not match number of metric types provided"),
    (("METRICS", "2", "CPU", "cpu"), "METRICS CPU defined more than once!"),
    (("METRICS", "2", "net", "NET"), "METRICS NET defined more than once!"),
    (("METRICS", "1", "MEM"), "METRICS no valid metrics passed. Supported: CPU|NET"),
    (("METRICS", "1", "CPU", "COUNT", "0"), "COUNT must be between 1 and 64"),
    (("METRICS", "1", "CPU", "COUNT", "65"), "COUNT must be between 1 and 64"),
    (("METRICS", "1", "CPU", "COUNT", "a"), "COUNT must be between 1 and 64"),
    (("METRICS", "1", "CPU", "DURATION", "0"), "DURATION must be between 1 and 1000000"),
    (("METRICS", "1", "CPU", "DURATION", "1000001"), "DURATION must be between 1 and 1000000"),
    (("METRICS", "1", "CPU", "SAMPLE", "0"), "SAMPLE ratio must be positive"),
    (("METRICS", "1", "CPU", "SAMPLE", "2147483648"), "SAMPLE ratio must be positive"),
    (("METRICS", "1", "CPU", "SLOTS", "1", "0"), "SLOTS parameter cannot be used in non-cluster mode"),
    (("METRICS", "1", "CPU", "COUNT"), "syntax error"),
    (("METRICS", "1", "CPU", "FOO", "1"), "syntax error"),
])
def test_hotkeys_start_errors(hk, raw, args, err):
    assert raw.call("HOTKEYS", "START", *args) == b"-ERR %s\r\n" % err.encode()
    assert raw.call("HOTKEYS", "GET") == b"$-1\r\n"          # nothing was started


def test_hotkeys_without_a_session_and_arity(hk, raw, raw3):
    for sub in ("GET", "STOP"):
        assert raw.call("HOTKEYS", sub) == b"$-1\r\n"
        assert raw3.call("HOTKEYS", sub) == b"_\r\n"
    assert raw.call("HOTKEYS", "RESET") == b"+OK\r\n"
    assert raw.call("HOTKEYS") == b"-ERR wrong number of arguments for 'hotkeys' command\r\n"
    assert raw.call("HOTKEYS", "GET", "x") == b"-ERR wrong number of arguments for 'hotkeys|get' command\r\n"
    assert raw.call("HOTKEYS", "NOPE") == b"-ERR unknown subcommand 'NOPE'. Try HOTKEYS HELP.\r\n"
    help_ = raw.call_value("HOTKEYS", "HELP")
    assert help_[0] == b"HOTKEYS <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert any(line.startswith(b"START <METRICS count [CPU] [NET]>") for line in help_)


def _net(*args, reply):
    """What NET charges a command: its request as RESP and its reply."""
    return len(encode(*args)) + len(reply)


def test_hotkeys_counts_net_bytes_exactly_and_cpu_time(hk, raw, raw3):
    assert raw.call("HOTKEYS", "START", "METRICS", "2", "CPU", "NET", "COUNT", "3") == b"+OK\r\n"
    assert raw.call("HOTKEYS", "START", "METRICS", "1", "CPU") == \
        b"-ERR hotkey tracking session already in progress\r\n"
    raw.call("SET", "hot", "v")
    for _ in range(10):
        assert raw.call("GET", "hot") == b"$1\r\nv\r\n"
    raw.call("SET", "k", "v")
    raw.call("MSET", "a", "1", "b", "2")       # split between its two keys
    raw.call("PING")                           # no keys: not counted
    raw.call("DBSIZE")
    hot = _net("SET", "hot", "v", reply=b"+OK\r\n") + 10 * _net("GET", "hot", reply=b"$1\r\nv\r\n")
    k = _net("SET", "k", "v", reply=b"+OK\r\n")
    mset = _net("MSET", "a", "1", "b", "2", reply=b"+OK\r\n")
    g = _get(raw)
    assert g[b"tracking-active"] == 1
    assert g[b"sample-ratio"] == 1
    assert g[b"selected-slots"] == [[0, 16383]]
    assert g[b"net-bytes-all-commands-all-slots"] == hot + k + mset
    assert g[b"total-net-bytes"] == hot + k + mset // 2 * 2
    assert g[b"by-net-bytes"] == [b"hot", hot, b"k", k, b"a", mset // 2]
    cpu = g[b"by-cpu-time-us"]
    assert cpu[0] == b"hot" and len(cpu) <= 6
    assert g[b"all-commands-all-slots-us"] >= cpu[1] > 0
    assert g[b"collection-start-time-unix-ms"] > 1700000000000
    assert g[b"collection-duration-ms"] >= 0
    assert g[b"total-cpu-time-user-ms"] >= 0 and g[b"total-cpu-time-sys-ms"] >= 0
    assert list(g) == [b"tracking-active", b"sample-ratio", b"selected-slots", b"all-commands-all-slots-us",
                       b"net-bytes-all-commands-all-slots", b"collection-start-time-unix-ms",
                       b"collection-duration-ms", b"total-cpu-time-user-ms", b"total-cpu-time-sys-ms",
                       b"total-net-bytes", b"by-cpu-time-us", b"by-net-bytes"]
    g3 = _get(raw3, resp3=True)        # RESP3: an array holding one map
    assert g3[b"by-net-bytes"][:2] == [b"hot", hot]
    assert raw.call("HOTKEYS", "RESET") == b"-ERR hotkey tracking session in progress, stop tracking first\r\n"
    assert raw.call("HOTKEYS", "STOP") == b"+OK\r\n"
    assert raw.call("HOTKEYS", "STOP") == b"$-1\r\n"
    g = _get(raw)
    assert g[b"tracking-active"] == 0
    raw.call("GET", "hot")                     # stopped: no longer counted
    g2 = _get(raw)
    assert g2[b"by-net-bytes"] == g[b"by-net-bytes"]
    assert g2[b"collection-duration-ms"] == g[b"collection-duration-ms"]
    assert raw.call("HOTKEYS", "RESET") == b"+OK\r\n"
    assert raw.call("HOTKEYS", "GET") == b"$-1\r\n"


def test_hotkeys_one_metric_transactions_and_scripts(hk, raw):
    raw.call("HOTKEYS", "START", "METRICS", "1", "NET")
    raw.call("MULTI")
    raw.call("SET", "m", "v")
    raw.call("SET", "m", "v")
    assert raw.call("EXEC") == b"*2\r\n+OK\r\n+OK\r\n"
    # EVAL counts with its key (its request and reply); the script's own SET does not
    assert raw.call("EVAL", "redis.call('SET', KEYS[1], 'v') return 1", "1", "s") == b":1\r\n"
    g = _get(raw)
    assert b"by-cpu-time-us" not in g and b"total-cpu-time-user-ms" not in g
    # each command of the transaction counts when EXEC runs it
    assert g[b"by-net-bytes"] == [b"s", _net("EVAL", "redis.call('SET', KEYS[1], 'v') return 1", "1", "s",
                                             reply=b":1\r\n"),
                                  b"m", 2 * _net("SET", "m", "v", reply=b"+OK\r\n")]
    assert list(g)[-2:] == [b"total-net-bytes", b"by-net-bytes"]


def test_hotkeys_duration_stops_the_session(hk, raw):
    raw.call("HOTKEYS", "START", "METRICS", "1", "CPU", "DURATION", "1", "SAMPLE", "3")
    wait_until(lambda: _get(raw)[b"tracking-active"] == 0, timeout=10)
    g = _get(raw)
    assert g[b"collection-duration-ms"] == 1000
    assert g[b"sample-ratio"] == 3
    assert b"sampled-commands-selected-slots-us" not in g       # only with SLOTS
    assert raw.call("HOTKEYS", "STOP") == b"$-1\r\n"
    assert raw.call("HOTKEYS", "RESET") == b"+OK\r\n"


def test_hotkeys_slots_in_cluster_mode(start_server):
    s = start_server("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                     "--cluster-port", str(free_port()), "--cluster-require-full-coverage", "no")
    c = s.conn()
    assert c.call("CLUSTER", "ADDSLOTSRANGE", "0", "99") == b"+OK\r\n"
    wait_until(lambda: b"cluster_state:ok" in c.call_value("CLUSTER", "INFO"), timeout=30)
    assert c.call("HOTKEYS", "START", "METRICS", "1", "NET", "SLOTS", "1", "100") == \
        b"-ERR slot 100 not handled by this node\r\n"
    assert c.call("HOTKEYS", "START", "METRICS", "1", "NET", "SLOTS", "1", "16384") == \
        b"-ERR Invalid or out of range slot\r\n"
    assert c.call("HOTKEYS", "START", "METRICS", "1", "NET", "SLOTS", "2", "5", "5") == \
        b"-ERR duplicate slot number\r\n"
    assert c.call("HOTKEYS", "START", "METRICS", "1", "NET", "SLOTS", "3", "5", "6") == \
        b"-ERR not enough slot numbers provided\r\n"
    assert c.call("HOTKEYS", "START", "METRICS", "1", "NET", "SLOTS", "0", "6") == \
        b"-ERR SLOTS count must be between 1 and 16384\r\n"
    assert c.call("HOTKEYS", "START", "METRICS", "1", "NET") == b"+OK\r\n"
    assert _get(c)[b"selected-slots"] == [[0, 99]]
    c.call("HOTKEYS", "STOP")
    k3 = next(b"k%d" % i for i in range(100000) if key_hash_slot(b"k%d" % i) == 3)
    assert c.call("HOTKEYS", "START", "METRICS", "1", "NET", "SLOTS", "3", "8", "7", "3",
                  "SAMPLE", "2") == b"+OK\r\n"
    g = _get(c)
    assert g[b"selected-slots"] == [[3], [7, 8]]
    assert list(g)[3:9] == [b"sampled-commands-selected-slots-us", b"all-commands-selected-slots-us",
                            b"all-commands-all-slots-us", b"net-bytes-sampled-commands-selected-slots",
                            b"net-bytes-all-commands-selected-slots", b"net-bytes-all-commands-all-slots"]
    for _ in range(20):
        assert c.call("SET", k3, "v") == b"+OK\r\n"
    g = _get(c)
    assert g[b"net-bytes-all-commands-selected-slots"] == g[b"net-bytes-all-commands-all-slots"] > 0
    assert 0 < g[b"net-bytes-sampled-commands-selected-slots"] < g[b"net-bytes-all-commands-selected-slots"]


# -- INFO fields of 7.4-8.10 --------------------------------------------------------------------

def test_info_newer_memory_and_stats_fields_in_redis_order(r):
    mem = list(r.info("memory"))

    def after(field, prev):
        assert mem.index(field) == mem.index(prev) + 1, (field, prev)
    after("allocator_muzzy", "allocator_resident")
    after("mem_replica_full_sync_buffer", "mem_total_replication_buffers")
    after("mem_overhead_db_hashtable_rehashing", "mem_allocator")
    m = r.info("memory")
    assert m["allocator_muzzy"] == m["mem_replica_full_sync_buffer"] == m["mem_overhead_db_hashtable_rehashing"] == 0
    stats = list(r.info("stats"))
    assert stats.index("expired_keys_active") == stats.index("expired_keys") + 1
    assert stats.index("evicted_scripts") == stats.index("evicted_clients") + 1
    assert "backup_in_progress" in r.info("persistence")


def test_info_expired_keys_active_counts_the_active_cycle_only(r):
    r.config_resetstat()
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        r.set("lazy", "v", px=1)
        wait_until(lambda: r.exists("lazy") == 0, timeout=10)      # expired on access
        st = r.info("stats")
        assert st["expired_keys"] == 1 and st["expired_keys_active"] == 0
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    for i in range(5):
        r.set("active:%d" % i, "v", px=1)
    wait_until(lambda: r.info("stats")["expired_keys_active"] == 5, timeout=10)
    assert r.info("stats")["expired_keys"] == 6
    assert r.dbsize() == 0
    r.config_resetstat()
    assert r.info("stats")["expired_keys_active"] == 0


def test_info_used_memory_peak_time_follows_the_peak(r):
    mem = list(r.info("memory"))
    assert mem.index("used_memory_peak_time") == mem.index("used_memory_peak_human") + 1
    t0 = r.info("memory")["used_memory_peak_time"]
    assert 1700000000 < t0 <= time.time() + 1
    wait_until(lambda: int(time.time()) > t0, timeout=5)
    before = int(time.time())
    r.set("big", b"x" * (8 << 20))              # above any peak so far
    m = r.info("memory")
    assert m["used_memory_peak"] >= m["used_memory"]
    assert m["used_memory_peak_time"] >= before
    r.delete("big")
    assert r.info("memory")["used_memory_peak_time"] == m["used_memory_peak_time"]


def test_hotkeys_counts_a_command_that_fails(hk, raw):
    raw.call("HOTKEYS", "START", "METRICS", "1", "NET")
    raw.call("SET", "s", "v")
    assert raw.call("INCR", "s").startswith(b"-ERR")
    g = _get(raw)
    assert g[b"by-net-bytes"] == [b"s", _net("SET", "s", "v", reply=b"+OK\r\n") + len(encode("INCR", "s"))]
