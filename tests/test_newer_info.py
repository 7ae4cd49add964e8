"""The INFO / CLIENT / MEMORY figures Redis added after 7.0: INFO's keysizes
and threads sections (8.0), the eventloop_* stats (7.2), active_clients and
CLIENT LIST's read and pipeline counters (8.8), MEMORY STATS' 7.4 fields.
Field names and order are compared with valkey-server 9.1 where Valkey has
them; Redis 8's documented formats otherwise."""

import random
import re
import time

import pytest
import redis

from support.resp import RespConn, parse
from support.wait import wait_until


def info_lines(port, *sections) -> list:
    with RespConn(port) as c:
        raw = c.call("INFO", *sections)
    body = raw.split(b"\r\n", 1)[1]
    return body.decode().split("\r\n")


def section(port, name) -> list:
    """The field lines of one section (title and blank lines dropped)."""
    return [ln for ln in info_lines(port, name) if ln and not ln.startswith("#")]


def keysizes(r) -> list:
    return section(r.connection_pool.connection_kwargs["port"], "keysizes")


def titles(port, *sections) -> list:
    return [ln[2:] for ln in info_lines(port, *sections) if ln.startswith("# ")]


# -- INFO keysizes (Redis 8.0) ---------------------------------------------------------------

def test_keysizes_string_bins(r):
    assert keysizes(r) == []
    for i in range(1, 11):
        r.set("k", "x" * i)
        assert keysizes(r) == ["db0_distrib_strings_sizes:%d=1" % (1 << (i.bit_length() - 1))]
    # bytes, then K and M multiples; a string of length 0 has its own bin
    r.set("k", "x" * 1023)
    assert keysizes(r) == ["db0_distrib_strings_sizes:512=1"]
    r.set("k", "x" * 1024)
    assert keysizes(r) == ["db0_distrib_strings_sizes:1K=1"]
    r.setrange("k2", 200000, "v")
    r.set("k3", "x" * (1 << 20))
    r.set("e1", "")
    r.set("e2", "")
    assert keysizes(r) == ["db0_distrib_strings_sizes:0=2,1K=1,128K=1,1M=1"]
    r.append("k", "x" * 1024)
    r.delete("k3", "e1")
    r.set("n", 1234567)          # an integer counts its digits
    assert keysizes(r) == ["db0_distrib_strings_sizes:0=1,4=1,2K=1,128K=1"]


def test_keysizes_collections(r):
    r.rpush("l1", *range(5))
    assert keysizes(r) == ["db0_distrib_lists_items:4=1"]
    r.rpush("l1", *range(4))
    r.lpush("l2", 1)
    r.sadd("s1", *range(8))
    r.zadd("z1", {"a": 1, "b": 2, "c": 3})
    r.hset("h1", mapping={"f%d" % i: i for i in range(17)})
    assert keysizes(r) == [
        "db0_distrib_lists_items:1=1,8=1",
        "db0_distrib_sets_items:8=1",
        "db0_distrib_zsets_items:2=1",
        "db0_distrib_hashes_items:16=1",
    ]
    r.rpop("l1")
    r.spop("s1", 5)
    r.zrem("z1", "a", "b")
    r.hdel("h1", "f0")
    assert keysizes(r) == [
        "db0_distrib_lists_items:1=1,8=1",
        "db0_distrib_sets_items:2=1",
        "db0_distrib_zsets_items:1=1",
        "db0_distrib_hashes_items:16=1",
    ]
    # overwritten by a string, deleted, flushed
    r.set("h1", "1234567")
    r.delete("z1", "s1")
    assert keysizes(r) == ["db0_distrib_strings_sizes:4=1", "db0_distrib_lists_items:1=1,8=1"]
    r.flushall()
    assert keysizes(r) == []


def test_keysizes_other_types_and_dbs(r):
    # types outside the five are not counted; each db has its own lines
    r.xadd("st", {"a": "1"})
    r.execute_command("JSON.SET", "j", "$", '{"a": [1, 2]}')     # a type without a size
    r.pfadd("hll", "a", "b", "c")           # a HyperLogLog is a string
    r.execute_command("SELECT", 0)
    r2 = r.connection_pool.connection_kwargs["port"]
    with RespConn(r2) as c:
        c.call("SELECT", "3")
        c.call("RPUSH", "l", "a", "b")
        c.call("SET", "s", "abc")
    hll_len = r.strlen("hll")
    assert keysizes(r) == [
        "db0_distrib_strings_sizes:%d=1" % (1 << (hll_len.bit_length() - 1)),
        "db3_distrib_strings_sizes:2=1",
        "db3_distrib_lists_items:2=1",
    ]


LEN_CMD = {b"string": "STRLEN", b"list": "LLEN", b"set": "SCARD", b"zset": "ZCARD", b"hash": "HLEN"}
FIELD = {b"string": "distrib_strings_sizes", b"list": "distrib_lists_items", b"set": "distrib_sets_items",
         b"zset": "distrib_zsets_items", b"hash": "distrib_hashes_items"}


def expected_keysizes(r, dbs) -> list:
    """The histogram lines computed from the client side (each key's TYPE
    and length), as Redis's tests check INFO keysizes."""
    out = []
    for db in dbs:
        r.execute_command("SELECT", db)
        hist = {}
        for key in r.scan_iter(count=1000):
            t = r.type(key)
            if t not in LEN_CMD:
                continue
            n = r.execute_command(LEN_CMD[t], key)
            b = n.bit_length() - 1
            hist.setdefault(t, {})
            hist[t][b] = hist[t].get(b, 0) + 1
        for t in (b"string", b"list", b"set", b"zset", b"hash"):
            if t in hist:
                out.append("db%d_%s:%s" % (db, FIELD[t], ",".join(
                    "%s=%d" % ("0" if b < 0 else "%d%s" % (1 << (b % 10), ["", "K", "M"][b // 10]), k)
                    for b, k in sorted(hist[t].items()))))
    r.execute_command("SELECT", 0)
    return out


def test_keysizes_match_the_keys_after_a_mixed_workload(r):
    rnd = random.Random(7)
    for db in (0, 2):
        r.execute_command("SELECT", db)
        for i in range(300):
            k = "k%d" % rnd.randrange(120)
            op = rnd.randrange(14)
            try:
                if op == 0:
                    r.set(k, "x" * rnd.randrange(0, 3000))
                elif op == 1:
                    r.rpush(k, *range(rnd.randrange(1, 40)))
                elif op == 2:
                    r.sadd(k, *range(rnd.randrange(1, 70)))
                elif op == 3:
                    r.zadd(k, {str(j): j for j in range(rnd.randrange(1, 20))})
                elif op == 4:
                    r.hset(k, mapping={"f%d" % j: j for j in range(rnd.randrange(1, 150))})
                elif op == 5:
                    r.append(k, "y" * rnd.randrange(1, 600))
                elif op == 6:
                    r.setbit(k, rnd.randrange(0, 9000), 1)
                elif op == 7:
                    r.lmove(k, "k%d" % rnd.randrange(120), "LEFT", "RIGHT")
                elif op == 8:
                    r.spop(k, rnd.randrange(1, 5))
                elif op == 9:
                    r.zremrangebyrank(k, 0, rnd.randrange(0, 4))
                elif op == 10:
                    r.delete(k)
                elif op == 11:
                    r.sunionstore(k, "k%d" % rnd.randrange(120), "k%d" % rnd.randrange(120))
                elif op == 12:
                    r.incrby(k, rnd.randrange(-10 ** 12, 10 ** 12))
                else:
                    r.execute_command("BITFIELD", k, "SET", "u8", rnd.randrange(0, 4000), 255)
            except Exception:  # noqa: BLE001 - WRONGTYPE and the like: the key is unchanged
                pass
    r.execute_command("SELECT", 0)
    got = keysizes(r)
    assert got == expected_keysizes(r, (0, 2))
    assert any(ln.startswith("db2_") for ln in got) and any(ln.startswith("db0_") for ln in got)
    # a key moved between dbs, two dbs swapped, a key renamed, DEBUG RELOAD
    r.rpush("moved", 1, 2, 3)
    r.move("moved", 5)
    r.swapdb(0, 2)
    if r.exists("k1"):
        r.rename("k1", "k1-renamed")
    r.execute_command("DEBUG", "RELOAD")
    assert keysizes(r) == expected_keysizes(r, (0, 2, 5))


def test_keysizes_counts_expired_hash_fields_until_removed(r):
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        r.execute_command("HSETEX", "h", "PX", "1", "FIELDS", "2", "f1", "v1", "f2", "v2")
        time.sleep(0.02)
        # the fields are past their time but still held
        assert keysizes(r) == ["db0_distrib_hashes_items:2=1"]
        r.hget("h", "f1")          # lazily removed
        assert keysizes(r) == ["db0_distrib_hashes_items:1=1"]
        r.hget("h", "f2")
        assert keysizes(r) == []
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")


REDIS8_ORDER = ["Server", "Clients", "Memory", "Persistence", "Threads", "Stats", "Replication", "CPU",
                "Modules", "Commandstats", "Errorstats", "Latencystats", "Cluster", "Keyspace", "Keysizes"]


def test_section_order(r, server, valkey_server):
    r.set("a", "b")
    # Redis 8's order (Keysizes last, after Keyspace); keysizes, a pass over
    # the keys here, only when asked by name or with EVERYTHING (Redis: also
    # in the default and ALL sets)
    assert titles(server.port, "everything") == REDIS8_ORDER
    assert titles(server.port, "all") == REDIS8_ORDER[:-1]
    assert titles(server.port) == [t for t in REDIS8_ORDER if t not in ("Commandstats", "Latencystats",
                                                                      "Keysizes")]
    assert titles(server.port, "keysizes") == ["Keysizes"]
    assert titles(server.port, "KEYSIZES", "server") == ["Server", "Keysizes"]
    # valkey's order of the sections both have
    theirs = titles(valkey_server.port, "all")
    assert [t for t in theirs if t in REDIS8_ORDER] == [t for t in REDIS8_ORDER if t in theirs]


# -- INFO threads (Redis 8.0) ----------------------------------------------------------------

def test_threads_section(server, connect):
    c = connect()
    lines = section(server.port, "threads")
    assert len(lines) == 1
    name, value = lines[0].split(":")
    assert name == "io_thread_0"
    fields = dict(kv.split("=") for kv in value.split(","))
    assert list(fields) == ["clients", "reads", "writes"]
    reads, writes = int(fields["reads"]), int(fields["writes"])
    # our connection plus the one INFO was asked on
    assert int(fields["clients"]) >= 2
    for _ in range(5):
        c.call("PING")
    f2 = dict(kv.split("=") for kv in section(server.port, "threads")[0].split(":")[1].split(","))
    assert int(f2["reads"]) >= reads + 6 and int(f2["writes"]) >= writes + 6
    # in the default sections, between Persistence and Stats, as Redis 8
    t = titles(server.port)
    assert t.index("Threads") == t.index("Persistence") + 1 and t[t.index("Threads") + 1] == "Stats"


# -- eventloop_* (Redis 7.2) and the reads/writes counters -----------------------------------

EL_FIELDS = ["eventloop_cycles", "eventloop_duration_sum", "eventloop_duration_cmd_sum",
             "instantaneous_eventloop_cycles_per_sec", "instantaneous_eventloop_duration_usec"]


def stats_of(port) -> dict:
    return dict(ln.split(":", 1) for ln in section(port, "stats"))


def test_eventloop_fields_in_valkeys_place(server, valkey_server):
    ours = [ln.split(":")[0] for ln in section(server.port, "stats")]
    theirs = [ln.split(":")[0] for ln in section(valkey_server.port, "stats")]
    # the same fields around them, in the same order (Valkey adds io-thread
    # and ACL fields of its own elsewhere)
    common = [f for f in theirs if f in ours]
    assert [f for f in ours if f in theirs] == common
    i = ours.index("eventloop_cycles")
    assert ours[i - 1:i + 6] == ["reply_buffer_expands"] + EL_FIELDS + [BATCH_FIELDS[0]]
    assert theirs[theirs.index("eventloop_cycles") - 1:][:7] == ["reply_buffer_expands"] + EL_FIELDS + [
        "acl_access_denied_auth"]
    # Redis 8.8's figures (Valkey has none of them) come before the ACL ones
    assert ours[i + 5:i + 12] == BATCH_FIELDS + ["acl_access_denied_auth"]


def test_eventloop_counters_move(server, connect):
    c = connect()
    c.call("CONFIG", "RESETSTAT")
    s0 = stats_of(server.port)
    for _ in range(50):
        c.call("SET", "k", "v")
    c.pipeline(*[("INCR", "n")] * 100)
    s1 = stats_of(server.port)
    assert int(s1["eventloop_cycles"]) >= int(s0["eventloop_cycles"]) + 51
    assert int(s1["total_reads_processed"]) >= int(s0["total_reads_processed"]) + 51
    assert int(s1["total_writes_processed"]) >= int(s0["total_writes_processed"]) + 51
    dur, cmd = int(s1["eventloop_duration_sum"]), int(s1["eventloop_duration_cmd_sum"])
    assert 0 < cmd <= dur
    # the instantaneous figures come from the cron's samples under load
    def busy():
        for _ in range(20):
            c.call("PING")
        s = stats_of(server.port)
        return int(s["instantaneous_eventloop_cycles_per_sec"]) > 0 \
            and int(s["instantaneous_eventloop_duration_usec"]) > 0
    wait_until(busy, timeout=20, what="instantaneous eventloop figures")
    # CONFIG RESETSTAT starts them again
    c.call("CONFIG", "RESETSTAT")
    s2 = stats_of(server.port)
    assert int(s2["eventloop_duration_cmd_sum"]) < cmd
    assert int(s2["total_reads_processed"]) < int(s1["total_reads_processed"])


def test_eventloop_cmd_sum_counts_a_transaction_once(server, connect):
    """The commands EXEC and scripts run are inside their time: the sum is
    no larger than the top-level commands' (commandstats counts both)."""
    c = connect()
    c.call("CONFIG", "RESETSTAT")
    c.call("MULTI")
    for _ in range(200):
        c.call("RPUSH", "l", "x" * 100)
    c.call("EXEC")
    c.call("EVAL", "for i=1,200 do redis.call('LPUSH', KEYS[1], 'y') end return 1", "1", "l2")
    s = stats_of(server.port)
    cs = section(server.port, "commandstats")
    usec = {ln.split(":")[0]: int(ln.split("usec=")[1].split(",")[0]) for ln in cs}
    nested = usec["cmdstat_rpush"] + usec["cmdstat_lpush"]
    top = sum(usec.values()) - nested
    assert int(s["eventloop_duration_cmd_sum"]) <= top + 2        # rounding of each figure


BATCH_FIELDS = ["commands_per_parse_batch_sum", "commands_per_parse_batch_cnt",
                "commands_per_parse_batch_avg", "slowlog_commands_count",
                "slowlog_commands_time_ms_sum", "slowlog_commands_time_ms_max"]


def test_parse_batch_stats(server, connect):
    c = connect()
    c.call("CONFIG", "RESETSTAT")
    keys = [ln.split(":")[0] for ln in section(server.port, "stats")]
    i = keys.index("instantaneous_eventloop_duration_usec")
    assert keys[i + 1:i + 7] == BATCH_FIELDS
    # RESETSTAT and the INFO above each ran in a batch of one (a batch
    # counts once its read is done: not the INFO running now)
    s = stats_of(server.port)
    assert (s["commands_per_parse_batch_sum"], s["commands_per_parse_batch_cnt"]) == ("2", "2")
    assert s["commands_per_parse_batch_avg"] == "1.00"
    c.pipeline(*[("PING",)] * 10)
    s = stats_of(server.port)
    total, n = int(s["commands_per_parse_batch_sum"]), int(s["commands_per_parse_batch_cnt"])
    # 3 + 10, in 4 batches when the pipeline came in one read
    assert total == 13 and 4 <= n <= 13
    assert s["commands_per_parse_batch_avg"] == "%.2f" % (total / n)


def test_slowlog_commands_stats(server, connect, config):
    c = connect()
    r = server.client()
    config(r, **{"slowlog-log-slower-than": "10000"})      # 10 ms
    c.call("CONFIG", "RESETSTAT")
    c.call("DEBUG", "SLEEP", "0")
    s = stats_of(server.port)
    assert s["slowlog_commands_count"] == "0" and s["slowlog_commands_time_ms_sum"] == "0"
    c.call("DEBUG", "SLEEP", "0.05")
    c.call("DEBUG", "SLEEP", "0.02")
    s = stats_of(server.port)
    assert s["slowlog_commands_count"] == "2"
    assert 70 <= int(s["slowlog_commands_time_ms_sum"]) < 1000
    assert 50 <= int(s["slowlog_commands_time_ms_max"]) < 1000
    # a command under the threshold does not count
    c.call("PING")
    assert stats_of(server.port)["slowlog_commands_count"] == "2"
    # commandstats: the three figures follow failed_calls once a command was logged
    cs = dict(ln.split(":", 1) for ln in section(server.port, "commandstats"))
    fields = dict(kv.split("=") for kv in cs["cmdstat_debug"].split(","))
    assert list(fields) == ["calls", "usec", "usec_per_call", "rejected_calls", "failed_calls",
                            "slowlog_count", "slowlog_time_ms_sum", "slowlog_time_ms_max"]
    assert fields["slowlog_count"] == "2" and 70 <= int(fields["slowlog_time_ms_sum"]) < 1000
    assert fields["slowlog_time_ms_max"] == s["slowlog_commands_time_ms_max"]
    assert "slowlog_count" not in cs["cmdstat_ping"]
    # entries trimmed off the log still count
    config(r, **{"slowlog-max-len": "0"})
    c.call("DEBUG", "SLEEP", "0.015")
    assert stats_of(server.port)["slowlog_commands_count"] == "3"
    c.call("CONFIG", "RESETSTAT")
    assert stats_of(server.port)["slowlog_commands_count"] == "0"
    assert "slowlog_count" not in dict(ln.split(":", 1) for ln in section(server.port, "commandstats")).get(
        "cmdstat_debug", "")
    r.close()


# -- clients: active_clients (8.8), CLIENT LIST's read and pipeline counters (8.8) --------

def test_active_clients(server, connect):
    idle = connect()
    idle.call("PING")
    # wait until it has been quiet for longer than the window
    time.sleep(0.7)
    got = dict(ln.split(":") for ln in section(server.port, "clients"))
    fields = list(got)
    assert fields[-1] == "active_clients"
    # the connection asking, not the idle one
    assert int(got["active_clients"]) >= 1
    base = int(got["active_clients"])
    idle.call("PING")
    got = dict(ln.split(":") for ln in section(server.port, "clients"))
    assert int(got["active_clients"]) == base + 1


def client_info(c) -> dict:
    raw = c.call("CLIENT", "INFO")
    line = raw.split(b"\r\n", 1)[1].rstrip(b"\r\n").decode()
    return dict(kv.split("=", 1) for kv in line.split(" "))


def test_client_read_and_pipeline_counters(connect):
    c = connect()
    f0 = client_info(c)
    assert list(f0)[-4:] == ["tot-cmds", "read-events", "parse-batch-cmd-sum", "parse-batch-cnt"]
    # the CLIENT INFO read itself is counted; its command when it ends
    assert f0["read-events"] == "1" and f0["parse-batch-cmd-sum"] == "0"
    c.call("PING")
    f1 = client_info(c)
    assert int(f1["read-events"]) == 3
    assert (f1["parse-batch-cmd-sum"], f1["parse-batch-cnt"]) == ("2", "2")
    # three commands in one write: one read (usually) running three commands
    c.pipeline(("SET", "a", "1"), ("GET", "a"), ("DEL", "a"))
    f2 = client_info(c)
    reads = int(f2["read-events"]) - int(f1["read-events"]) - 1
    assert 1 <= reads <= 3
    assert int(f2["parse-batch-cmd-sum"]) == 2 + 1 + 3
    assert int(f2["parse-batch-cnt"]) == 2 + 1 + reads
    # a partial request is a read without a command
    c.send_raw(b"*1\r\n$4\r\nPI")
    time.sleep(0.05)
    c.send_raw(b"NG\r\n")
    assert c.read() == b"+PONG\r\n"
    f3 = client_info(c)
    assert int(f3["read-events"]) >= int(f2["read-events"]) + 3
    assert int(f3["parse-batch-cmd-sum"]) == int(f2["parse-batch-cmd-sum"]) + 2


def test_client_list_fields_follow_client_info(server, connect):
    c = connect()
    cid = client_info(c)["id"]
    raw = c.call("CLIENT", "LIST", "ID", cid)
    line = raw.split(b"\r\n", 1)[1].rstrip(b"\r\n").decode()
    keys = [kv.split("=", 1)[0] for kv in line.split(" ")]
    assert keys[-4:] == ["tot-cmds", "read-events", "parse-batch-cmd-sum", "parse-batch-cnt"]


# -- MEMORY STATS (7.4's fields) -------------------------------------------------------------

VALKEY_ONLY = {"replicas.repl.buffer", "cluster.slot_import", "cluster.slot_export"}
# Redis 7.4's MEMORY STATS (object.c), "db.<n>" maps after functions.caches
REDIS_74 = ["peak.allocated", "total.allocated", "startup.allocated", "replication.backlog",
            "clients.slaves", "clients.normal", "cluster.links", "aof.buffer", "lua.caches",
            "functions.caches", "overhead.db.hashtable.lut", "overhead.db.hashtable.rehashing",
            "overhead.total", "db.dict.rehashing.count", "keys.count", "keys.bytes-per-key",
            "dataset.bytes", "dataset.percentage", "peak.percentage", "allocator.allocated",
            "allocator.active", "allocator.resident", "allocator.muzzy",
            "allocator-fragmentation.ratio", "allocator-fragmentation.bytes", "allocator-rss.ratio",
            "allocator-rss.bytes", "rss-overhead.ratio", "rss-overhead.bytes", "fragmentation",
            "fragmentation.bytes"]


def memory_stats_keys(port, resp3=False) -> list:
    with RespConn(port, resp3=resp3) as c:
        c.call("SET", "k", "v")
        reply = c.call("MEMORY", "STATS")
    value, _ = parse(reply)
    if resp3:
        assert reply.startswith(b"%")
        return [k.decode() for k in value]
    assert reply.startswith(b"*")
    return [k.decode() for k in value[0::2]]


@pytest.mark.parametrize("resp3", [False, True])
def test_memory_stats_keys_as_valkey(server, valkey_server, resp3):
    ours = memory_stats_keys(server.port, resp3)
    theirs = [k for k in memory_stats_keys(valkey_server.port, resp3) if k not in VALKEY_ONLY]
    # a "db.<n>" map for each database whose dict was ever made (emptied
    # since too): which ones depends on the tests run before on each
    # server; db.0 (the SET above) in both, at the same place
    assert "db.0" in ours and "db.0" in theirs
    assert ([k for k in ours if not re.fullmatch(r"db\.[1-9]\d*", k)]
            == [k for k in theirs if not re.fullmatch(r"db\.[1-9]\d*", k)])
    assert [k for k in ours if not re.fullmatch(r"db\.\d+", k)] == REDIS_74
    i = ours.index("overhead.db.hashtable.lut")
    assert re.fullmatch(r"db\.\d+", ours[i - 1])
    assert ours[i:i + 4] == ["overhead.db.hashtable.lut", "overhead.db.hashtable.rehashing",
                             "overhead.total", "db.dict.rehashing.count"]
    j = ours.index("allocator.muzzy")
    assert ours[j - 1] == "allocator.resident"


def test_memory_stats_lut_follows_the_key_counts(r):
    def stats():
        flat = r.execute_command("MEMORY", "STATS")
        return dict(zip(flat[0::2], flat[1::2]))
    r.flushall()
    s = stats()
    assert s[b"overhead.db.hashtable.lut"] == 0
    assert s[b"overhead.db.hashtable.rehashing"] == 0 and s[b"db.dict.rehashing.count"] == 0
    assert s[b"allocator.muzzy"] == 0
    r.set("a", 1)
    assert stats()[b"overhead.db.hashtable.lut"] == 4 * 8       # the smallest table: 4 buckets
    # the 5th key grows the keys' table to 8 buckets: a rehash from the 4
    # (seen within a transaction, before the cron ends it: Redis 7.4.1's
    # unit/info "database and pubsub overhead and rehashing dict count")
    tx = r.pipeline(transaction=True)
    tx.mset({"k%d" % i: i for i in range(4)})
    tx.expire("a", 100)
    tx.execute_command("MEMORY", "STATS")
    tx.info("memory")
    _, _, flat, mem = tx.execute()
    s = dict(zip(flat[0::2], flat[1::2]))
    # 5 keys: 4 + 8 buckets; 1 with a TTL: 4
    assert s[b"overhead.db.hashtable.lut"] == (4 + 8 + 4) * 8
    assert s[b"overhead.db.hashtable.rehashing"] == 4 * 8 == mem["mem_overhead_db_hashtable_rehashing"]
    assert s[b"db.dict.rehashing.count"] == 1
    # the cron's pass ends the rehash
    wait_until(lambda: stats()[b"db.dict.rehashing.count"] == 0, what="the rehash's end")
    assert stats()[b"overhead.db.hashtable.lut"] == (8 + 4) * 8


# -- INFO DEBUG (7.2) ------------------------------------------------------------------------

DEBUG_FIELDS = ["eventloop_duration_aof_sum", "eventloop_duration_cron_sum", "eventloop_duration_max",
                "eventloop_cmd_per_cycle_max"]


def test_debug_section(server, valkey_server, connect):
    c = connect()
    c.call("CONFIG", "RESETSTAT")
    c.pipeline(*[("PING",)] * 7)
    # only when asked by name, last
    assert "Debug" not in titles(server.port, "everything")
    assert titles(server.port, "debug", "server") == ["Server", "Debug"]
    ours = dict(ln.split(":") for ln in section(server.port, "debug"))
    theirs = [ln.split(":")[0] for ln in section(valkey_server.port, "debug")]
    assert list(ours)[:4] == DEBUG_FIELDS == theirs[:4]
    # Redis 7.4's Lua allocator lines follow
    assert list(ours)[4:] == ["allocator_allocated_lua", "allocator_active_lua", "allocator_resident_lua",
                              "allocator_frag_bytes_lua"]
    # the pipeline of 7 came in one read (or few): more than one command a cycle
    assert 2 <= int(ours["eventloop_cmd_per_cycle_max"]) <= 7
    assert int(ours["eventloop_duration_max"]) > 0
    # the cron runs 10 times a second: its time shows within a second or two
    wait_until(lambda: int(dict(ln.split(":") for ln in section(server.port, "debug"))[
        "eventloop_duration_cron_sum"]) > 0, timeout=20, what="cron time")
    assert ours["eventloop_duration_aof_sum"] == "0"        # no AOF here


def test_debug_aof_time(start_server):
    srv = start_server("--appendonly", "yes")
    with RespConn(srv.port) as c:
        for i in range(20):
            c.call("SET", "k%d" % i, "v")
        wait_until(lambda: int(dict(ln.split(":") for ln in section(srv.port, "debug"))[
            "eventloop_duration_aof_sum"]) > 0, timeout=20, what="AOF write time")


# -- SLOWLOG GET's argument count (8.10) and slowlog-max-argc ---------------------------------

def test_slowlog_argc(r):
    """Redis 8.10: each SLOWLOG GET entry ends with the command's argument
    count before trimming; slowlog-max-argc (default 32) sets how many
    arguments an entry keeps, the last one kept saying how many more."""
    assert r.config_get("slowlog-max-argc") == {"slowlog-max-argc": "32"}
    try:
        r.config_set("slowlog-log-slower-than", 0)
        r.slowlog_reset()
        r.execute_command("SADD", "s", *range(40))
        e = r.execute_command("SLOWLOG", "GET", "1")[0]
        assert len(e) == 7 and e[6] == 42
        assert len(e[3]) == 32 and e[3][-1] == b"... (11 more arguments)"
        r.config_set("slowlog-max-argc", 4)
        r.slowlog_reset()
        r.execute_command("SADD", "s", "a", "b", "c", "d")
        e = r.execute_command("SLOWLOG", "GET", "1")[0]
        assert e[3] == [b"SADD", b"s", b"a", b"... (3 more arguments)"] and e[6] == 6
        r.slowlog_reset()
        r.execute_command("SADD", "s", "a")
        e = r.execute_command("SLOWLOG", "GET", "1")[0]
        assert e[3] == [b"SADD", b"s", b"a"] and e[6] == 3
        with pytest.raises(redis.ResponseError):
            r.config_set("slowlog-max-argc", 0)
    finally:
        r.config_set("slowlog-log-slower-than", 10000)
        r.config_set("slowlog-max-argc", 32)
        r.slowlog_reset()
