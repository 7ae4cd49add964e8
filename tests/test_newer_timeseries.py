"""Redis 8's time series (RedisTimeSeries built in): the TS.* commands'
replies in RESP2 and RESP3 byte for byte as the module builds them (valkey
has no time series), its ``ERR TSDB: ...`` errors, duplicate policies and
IGNORE, retention, compaction rules with every aggregator, TS.RANGE's
options, label filters (MGET / MRANGE / QUERYINDEX / QUERYLABELS), GROUPBY,
Redis 8.10's TS.READ / TS.NRANGE, keyspace events, MULTI and scripts, and
the TSDB-TYPE module record (DUMP/RESTORE, DEBUG RELOAD, AOF rewrite,
replication)."""

import contextlib
import math
import os
import threading

import pytest
from redis.exceptions import ResponseError

from ophidis.persistence.modulerecord import ModuleWriter
from ophidis.persistence.rdbcodec import crc64, enc_len
from support.modtypes import AOF, err, follow, module_id, restart, rewrite_aof
from support.wait import wait_until


def sample2(t, v: bytes) -> bytes:
    return b"*2\r\n:%d\r\n+%s\r\n" % (t, v)


def sample3(t, v: bytes) -> bytes:
    return b"*2\r\n:%d\r\n,%s\r\n" % (t, v)


# ---------------------------------------------------------------------------
# create / add / get / range: replies
# ---------------------------------------------------------------------------

def test_add_get_range_reply_shapes(raw, raw3):
    assert raw.call("TS.CREATE", "s", "LABELS", "a", "1") == b"+OK\r\n"
    assert raw.call("TS.ADD", "s", "1", "1.5") == b":1\r\n"
    assert raw.call("TS.ADD", "s", "2", "100") == b":2\r\n"
    assert raw.call("TS.ADD", "s", "3", "0.001") == b":3\r\n"
    assert raw.call("TS.ADD", "s", "4", "-2.5e20") == b":4\r\n"
    # RESP2: values as simple strings in the module's shortest form
    assert raw.call("TS.RANGE", "s", "-", "+") == (
        b"*4\r\n" + sample2(1, b"1.5") + sample2(2, b"100") + sample2(3, b"1E-3") + sample2(4, b"-2.5E20"))
    assert raw3.call("TS.RANGE", "s", "-", "+") == (
        b"*4\r\n" + sample3(1, b"1.5") + sample3(2, b"100") + sample3(3, b"0.001") + sample3(4, b"-2.5e+20"))
    assert raw.call("TS.GET", "s") == sample2(4, b"-2.5E20")
    assert raw.call("TS.REVRANGE", "s", "2", "3") == b"*2\r\n" + sample2(3, b"1E-3") + sample2(2, b"100")
    assert raw.call("TS.RANGE", "s", "-", "+", "COUNT", "1") == b"*1\r\n" + sample2(1, b"1.5")
    raw.call("TS.CREATE", "e")
    assert raw.call("TS.GET", "e") == b"*0\r\n"
    assert raw.call("TS.RANGE", "e", "-", "+") == b"*0\r\n"
    assert raw.call("TYPE", "s") == b"+TSDB-TYPE\r\n"
    assert raw.call("OBJECT", "ENCODING", "s") == b"$3\r\nraw\r\n"


def test_info_fields(r, raw3):
    r.execute_command("TS.CREATE", "s", "RETENTION", "5000", "CHUNK_SIZE", "128", "DUPLICATE_POLICY",
                      "max", "ENCODING", "uncompressed", "IGNORE", "10", "0.5", "LABELS", "x", "y")
    for i in range(20):
        r.execute_command("TS.ADD", "s", i, i)
    info = r.execute_command("TS.INFO", "s")
    d = dict(zip(info[::2], info[1::2]))
    assert d[b"totalSamples"] == 20 and d[b"firstTimestamp"] == 0 and d[b"lastTimestamp"] == 19
    assert d[b"retentionTime"] == 5000 and d[b"chunkSize"] == 128 and d[b"chunkCount"] == 3
    assert d[b"chunkType"] == b"uncompressed" and d[b"duplicatePolicy"] == b"max"
    assert d[b"labels"] == [[b"x", b"y"]] and d[b"sourceKey"] is None and d[b"rules"] == []
    assert d[b"ignoreMaxTimeDiff"] == 10 and d[b"ignoreMaxValDiff"] == b"0.5"
    assert list(d) == [b"totalSamples", b"memoryUsage", b"firstTimestamp", b"lastTimestamp",
                       b"retentionTime", b"chunkCount", b"chunkSize", b"chunkType", b"duplicatePolicy",
                       b"labels", b"sourceKey", b"rules", b"ignoreMaxTimeDiff", b"ignoreMaxValDiff"]
    dbg = r.execute_command("TS.INFO", "s", "DEBUG")
    dd = dict(zip(dbg[::2], dbg[1::2]))
    assert dd[b"keySelfName"] == b"s" and len(dd[b"Chunks"]) == 3
    assert dd[b"Chunks"][0][:6] == [b"startTimestamp", 0, b"endTimestamp", 7, b"samples", 8]
    r.execute_command("TS.CREATE", "d")
    r.execute_command("TS.CREATERULE", "s", "d", "AGGREGATION", "avg", "10", "5")
    out = raw3.call("TS.INFO", "s")
    assert out.startswith(b"%14\r\n+totalSamples\r\n:20\r\n+memoryUsage\r\n:")
    assert (b"+labels\r\n%1\r\n$1\r\nx\r\n$1\r\ny\r\n+sourceKey\r\n_\r\n"
            b"+rules\r\n%1\r\n$1\r\nd\r\n*3\r\n:10\r\n+AVG\r\n:5\r\n"
            b"+ignoreMaxTimeDiff\r\n:10\r\n+ignoreMaxValDiff\r\n,0.5\r\n") in out
    d = dict(zip(*[iter(r.execute_command("TS.INFO", "d"))] * 2))
    assert d[b"sourceKey"] == b"s" and d[b"duplicatePolicy"] == b"block"


def test_errors(r):
    r.execute_command("TS.CREATE", "s")
    r.set("str", "x")
    assert err(r, "TS.CREATE", "s") == "TSDB: key already exists"
    assert err(r, "TS.ADD", "s", "1", "abc") == "TSDB: invalid value"
    assert err(r, "TS.ADD", "s", "x", "1") == "TSDB: invalid timestamp"
    assert err(r, "TS.ADD", "s", "-1", "1") == "TSDB: invalid timestamp, must be a nonnegative integer"
    assert err(r, "TS.ADD", "str", "1", "1") == "TSDB: the key is not a TSDB key"
    assert err(r, "TS.GET", "str") == "WRONGTYPE Operation against a key holding the wrong kind of value"
    assert err(r, "TS.GET", "nokey") == "TSDB: the key does not exist"
    assert err(r, "TS.GET", "s", "x") == "TSDB: wrong 3rd argument"
    assert err(r, "TS.CREATE", "n", "RETENTION", "x") == "TSDB: Couldn't parse RETENTION"
    assert err(r, "TS.CREATE", "n", "CHUNK_SIZE", "100") == (
        "TSDB: CHUNK_SIZE value must be a multiple of 8 in the range [48 .. 1048576]")
    assert err(r, "TS.CREATE", "n", "DUPLICATE_POLICY", "nope") == "TSDB: Unknown DUPLICATE_POLICY"
    assert err(r, "TS.CREATE", "n", "ENCODING", "zip") == "TSDB: unknown ENCODING parameter"
    assert err(r, "TS.CREATE", "n", "IGNORE", "-1", "1") == "TSDB: IGNORE arguments cannot be negative"
    assert err(r, "TS.CREATE", "n", "LABELS", "a", "(b)") == "TSDB: Couldn't parse LABELS"
    assert err(r, "TS.RANGE", "s", "x", "+") == "TSDB: wrong fromTimestamp"
    assert err(r, "TS.RANGE", "s", "-", "y") == "TSDB: wrong toTimestamp"
    assert err(r, "TS.RANGE", "s", "-", "+", "AGGREGATION", "bogus", "10") == "TSDB: Unknown aggregation type"
    assert err(r, "TS.RANGE", "s", "-", "+", "AGGREGATION", "avg", "0") == (
        "TSDB: bucketDuration must be greater than zero")
    assert err(r, "TS.RANGE", "s", "-", "+", "ALIGN", "start") == (
        "TSDB: ALIGN parameter can only be used with AGGREGATION")
    assert err(r, "TS.RANGE", "s", "-", "+", "AGGREGATION", "avg", "10", "ALIGN", "-") == (
        "TSDB: start alignment can only be used with explicit start timestamp")
    assert err(r, "TS.RANGE", "s", "-", "+", "COUNT", "0") == "TSDB: Invalid COUNT value"
    assert err(r, "TS.RANGE", "s", "-", "+", "FILTER_BY_VALUE", "1") == (
        "TSDB: FILTER_BY_VALUE one or more arguments are missing")
    assert err(r, "TS.RANGE", "s", "-", "+", "AGGREGATION", "avg,,sum", "10") == (
        "TSDB: Empty aggregation type in list")
    assert err(r, "TS.MRANGE", "-", "+", "FILTER", "a!=b") == "TSDB: please provide at least one matcher"
    assert err(r, "TS.MRANGE", "-", "+", "WITHLABELS") == "TSDB: missing FILTER argument"
    assert err(r, "TS.MGET", "FILTER", "x") == "TSDB: failed parsing labels"
    assert err(r, "TS.MRANGE", "-", "+", "FILTER", "a=b", "GROUPBY", "a", "REDUCE", "last") == (
        "TSDB: Invalid reducer type")
    assert err(r, "TS.CREATERULE", "s", "s", "AGGREGATION", "avg", "10") == (
        "TSDB: the source key and destination key should be different")
    assert err(r, "TS.DELETERULE", "s", "x") == "TSDB: compaction rule does not exist"
    assert err(r, "TS.INCRBY", "str", "1") == "WRONGTYPE Operation against a key holding the wrong kind of value"
    assert err(r, "TS.ADD", "s") == "wrong number of arguments for 'ts.add' command"
    r.execute_command("TS.ADD", "s", "10", "1")
    assert err(r, "TS.INCRBY", "s", "1", "TIMESTAMP", "5") == (
        "TSDB: timestamp must be equal to or higher than the maximum existing timestamp")
    assert err(r, "TS.ADD", "s", "10", "2") == (
        "TSDB: Error at upsert, update is not supported when DUPLICATE_POLICY is set to BLOCK mode, "
        "or either current or new value is NaN and DUPLICATE_POLICY is MAX/MIN/SUM")


def test_error_prefixes(raw):
    raw.call("TS.CREATE", "s")
    assert raw.call("TS.GET", "nokey") == b"-ERR TSDB: the key does not exist\r\n"
    # the module replies this one without ERR
    assert raw.call("TS.CREATE", "n", "RETENTION", "-1") == b"-TSDB: Couldn't parse RETENTION\r\n"


# ---------------------------------------------------------------------------
# writes: duplicates, IGNORE, retention, MADD, INCRBY
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("policy,expect", [("last", 10.0), ("first", 5.0), ("min", 5.0), ("max", 10.0),
                                           ("sum", 15.0)])
def test_duplicate_policies(r, policy, expect):
    r.execute_command("TS.CREATE", "s", "DUPLICATE_POLICY", policy)
    r.execute_command("TS.ADD", "s", 1, 5)
    assert r.execute_command("TS.ADD", "s", 1, 10) == 1
    assert float(r.execute_command("TS.GET", "s")[1]) == expect
    # ON_DUPLICATE overrides the series' policy
    r.execute_command("TS.ADD", "s", 1, 99, "ON_DUPLICATE", "LAST")
    assert r.execute_command("TS.GET", "s") == [1, b"99"]


def test_out_of_order_and_ignore(r):
    r.execute_command("TS.ADD", "s", 10, 1)
    r.execute_command("TS.ADD", "s", 5, 2)
    r.execute_command("TS.ADD", "s", 7, 3)
    assert r.execute_command("TS.RANGE", "s", "-", "+") == [[5, b"2"], [7, b"3"], [10, b"1"]]
    r.execute_command("TS.CREATE", "i", "DUPLICATE_POLICY", "LAST", "IGNORE", "5", "1")
    assert r.execute_command("TS.ADD", "i", 100, 10) == 100
    assert r.execute_command("TS.ADD", "i", 103, 10.5) == 100      # filtered: the last timestamp
    assert r.execute_command("TS.ADD", "i", 106, 10.5) == 106      # too far in time
    assert r.execute_command("TS.ADD", "i", 107, 12) == 107        # too far in value
    assert len(r.execute_command("TS.RANGE", "i", "-", "+")) == 3


def test_retention(r):
    r.execute_command("TS.CREATE", "s", "RETENTION", "10")
    for t in (1, 5, 12, 20):
        r.execute_command("TS.ADD", "s", t, t)
    assert r.execute_command("TS.RANGE", "s", "-", "+") == [[12, b"12"], [20, b"20"]]
    assert err(r, "TS.ADD", "s", "3", "1") == "TSDB: Timestamp is older than retention"
    info = dict(zip(*[iter(r.execute_command("TS.INFO", "s"))] * 2))
    assert info[b"totalSamples"] == 2 and info[b"firstTimestamp"] == 12


def test_madd_and_incrby(r, raw):
    r.execute_command("TS.CREATE", "a")
    raw.call("SET", "str", "x")
    assert raw.call("TS.MADD", "a", "1", "1", "missing", "1", "1", "a", "2", "x", "a", "3", "3") == (
        b"*4\r\n:1\r\n-ERR TSDB: the key is not a TSDB key\r\n-ERR TSDB: invalid value\r\n:3\r\n")
    assert r.execute_command("TS.INCRBY", "c", "2.5", "TIMESTAMP", "10") == 10
    assert r.execute_command("TS.INCRBY", "c", "1", "TIMESTAMP", "10") == 10
    assert r.execute_command("TS.DECRBY", "c", "0.5", "TIMESTAMP", "11") == 11
    assert r.execute_command("TS.RANGE", "c", "-", "+") == [[10, b"3.5"], [11, b"3"]]
    assert r.execute_command("TS.ADD", "now", "*", "1") > 1_600_000_000_000


# ---------------------------------------------------------------------------
# aggregation and compaction
# ---------------------------------------------------------------------------

VALUES = [(0, 1.0), (1, 4.0), (3, 2.0), (10, 5.0), (12, 1.0), (25, 7.0)]


def _expect(kind, vals):
    n = len(vals)
    m = sum(vals) / n
    var_p = sum((v - m) ** 2 for v in vals) / n
    var_s = var_p * n / (n - 1) if n > 1 else 0.0
    return {"avg": m, "sum": sum(vals), "min": min(vals), "max": max(vals), "range": max(vals) - min(vals),
            "count": n, "first": vals[0], "last": vals[-1], "std.p": math.sqrt(var_p),
            "std.s": math.sqrt(var_s), "var.p": var_p, "var.s": var_s, "countall": n, "countnan": 0}[kind]


# (countNaN takes no sample of these: its buckets are empty, see test_nan_values...)
KINDS = ["avg", "sum", "min", "max", "range", "count", "first", "last", "std.p", "std.s", "var.p", "var.s",
         "countAll"]


@pytest.mark.parametrize("kind", KINDS)
def test_compaction_rule_each_aggregator(r, kind):
    r.execute_command("TS.CREATE", "src")
    r.execute_command("TS.CREATE", "dst")
    assert r.execute_command("TS.CREATERULE", "src", "dst", "AGGREGATION", kind, "10") == b"OK"
    for t, v in VALUES:
        r.execute_command("TS.ADD", "src", t, v)
    got = r.execute_command("TS.RANGE", "dst", "-", "+")
    assert [t for t, _ in got] == [0, 10]
    buckets = {0: [1.0, 4.0, 2.0], 10: [5.0, 1.0]}
    for t, v in got:
        assert float(v) == pytest.approx(_expect(kind.lower(), buckets[t]))
    # the same buckets through TS.RANGE ... AGGREGATION (the last bucket too)
    rng = r.execute_command("TS.RANGE", "src", "-", "+", "AGGREGATION", kind, "10")
    assert [t for t, _ in rng] == [0, 10, 20]
    # LATEST: the unfinished bucket of the compaction
    assert r.execute_command("TS.GET", "dst", "LATEST")[0] == 20
    assert [t for t, _ in r.execute_command("TS.RANGE", "dst", "-", "+", "LATEST")] == [0, 10, 20]


def test_twa_and_out_of_order_recompute(r):
    for i in range(100):
        r.execute_command("TS.ADD", "s", i, i % 7)
    assert r.execute_command("TS.RANGE", "s", "0", "10", "AGGREGATION", "twa", "10") == [[0, b"2.55"], [10, b"3"]]
    r.execute_command("TS.CREATE", "src")
    r.execute_command("TS.CREATE", "dst")
    r.execute_command("TS.CREATERULE", "src", "dst", "AGGREGATION", "sum", "10")
    for t in (1, 2, 11, 21):
        r.execute_command("TS.ADD", "src", t, 1)
    assert r.execute_command("TS.RANGE", "dst", "-", "+") == [[0, b"2"], [10, b"1"]]
    r.execute_command("TS.ADD", "src", 5, 10)               # a finished bucket: recomputed
    assert r.execute_command("TS.RANGE", "dst", "-", "+") == [[0, b"12"], [10, b"1"]]
    r.execute_command("TS.ADD", "src", 22, 4)               # the current bucket
    assert r.execute_command("TS.GET", "dst", "LATEST") == [20, b"5"]
    assert r.execute_command("TS.DEL", "src", "0", "9") == 3
    assert r.execute_command("TS.RANGE", "dst", "-", "+") == [[10, b"1"]]
    assert r.execute_command("TS.DELETERULE", "src", "dst") == b"OK"
    assert dict(zip(*[iter(r.execute_command("TS.INFO", "dst"))] * 2))[b"sourceKey"] is None


def test_range_options(r, raw, raw3):
    for t, v in ((15, 1), (17, 4), (51, 3), (73, 5), (75, 3)):
        r.execute_command("TS.ADD", "t", t, v)
    q = ["TS.RANGE", "t", "0", "100", "ALIGN", "0", "AGGREGATION", "max", "10"]
    assert r.execute_command(*q) == [[10, b"4"], [50, b"3"], [70, b"5"]]
    assert r.execute_command(*q, "BUCKETTIMESTAMP", "+") == [[20, b"4"], [60, b"3"], [80, b"5"]]
    assert r.execute_command(*q, "BUCKETTIMESTAMP", "mid") == [[15, b"4"], [55, b"3"], [75, b"5"]]
    assert r.execute_command(*q, "EMPTY") == [[10, b"4"], [20, b"NaN"], [30, b"NaN"], [40, b"NaN"],
                                              [50, b"3"], [60, b"NaN"], [70, b"5"]]
    assert r.execute_command("TS.RANGE", "t", "0", "100", "AGGREGATION", "last", "10", "EMPTY")[1] == [20, b"4"]
    assert r.execute_command("TS.RANGE", "t", "0", "100", "AGGREGATION", "sum", "10", "EMPTY")[1] == [20, b"0"]
    assert r.execute_command("TS.RANGE", "t", "-", "+", "FILTER_BY_TS", "15", "51", "75",
                             "FILTER_BY_VALUE", "2", "5") == [[51, b"3"], [75, b"3"]]
    assert r.execute_command("TS.REVRANGE", "t", "-", "+", "AGGREGATION", "count", "20", "COUNT", "2") == (
        [[60, b"2"], [40, b"1"]])
    assert r.execute_command("TS.RANGE", "t", "5", "100", "ALIGN", "start", "AGGREGATION", "count", "10") == (
        [[15, b"2"], [45, b"1"], [65, b"1"], [75, b"1"]])
    # several aggregators (8.8): one row per bucket with a value each
    assert raw.call("TS.RANGE", "t", "-", "+", "AGGREGATION", "min,max", "50") == (
        b"*2\r\n*3\r\n:0\r\n+1\r\n+4\r\n*3\r\n:50\r\n+3\r\n+5\r\n")
    assert raw3.call("TS.RANGE", "t", "-", "+", "AGGREGATION", "min,max", "50") == (
        b"*2\r\n*3\r\n:0\r\n,1\r\n,4\r\n*3\r\n:50\r\n,3\r\n,5\r\n")


def test_nan_values_and_count_aggregators(r):
    for t, v in ((1, "1"), (2, "nan"), (3, "3"), (12, "nan")):
        r.execute_command("TS.ADD", "s", t, v, "ON_DUPLICATE", "LAST")
    assert r.execute_command("TS.RANGE", "s", "-", "+", "AGGREGATION", "countNaN,countAll,avg", "10") == [
        [0, b"1", b"3", b"2"], [10, b"1", b"1", b"NaN"]]
    assert err(r, "TS.INCRBY", "s", "1", "TIMESTAMP", "20") == "TSDB: cannot increment/decrement NaN value"


# ---------------------------------------------------------------------------
# filters: MGET, MRANGE, QUERYINDEX, QUERYLABELS
# ---------------------------------------------------------------------------

def _labelled(r):
    r.execute_command("TS.CREATE", "k1", "LABELS", "t", "a", "team", "ny")
    r.execute_command("TS.CREATE", "k2", "LABELS", "t", "a", "team", "sf", "x", "1")
    r.execute_command("TS.CREATE", "k3", "LABELS", "t", "b")
    for k in ("k1", "k2", "k3"):
        for i in range(4):
            r.execute_command("TS.ADD", k, i, i * (2 if k == "k2" else 1))


def test_queryindex_filters(r):
    _labelled(r)
    q = lambda *f: sorted(r.execute_command("TS.QUERYINDEX", *f))
    assert q("t=a") == [b"k1", b"k2"]
    assert q("t=(a,b)") == [b"k1", b"k2", b"k3"]
    assert q("t=a", "team!=ny") == [b"k2"]
    assert q("t=(a,b)", "x=") == [b"k1", b"k3"]
    assert q("t=(a,b)", "x!=") == [b"k2"]
    assert q("t=(a,b)", "team!=(ny,sf)") == [b"k3"]
    assert r.execute_command("TS.QUERYLABELS", "LABELS") == [b"t", b"team", b"x"]
    assert r.execute_command("TS.QUERYLABELS", "VALUES", "team", "FILTER", "t=a") == [b"ny", b"sf"]
    assert err(r, "TS.QUERYLABELS", "BOGUS") == "TSDB: unknown subtype, must be one of LABELS|VALUES"


def test_mget_mrange_shapes(raw, raw3, r):
    _labelled(r)
    assert raw.call("TS.MGET", "SELECTED_LABELS", "team", "FILTER", "t=a") == (
        b"*2\r\n*3\r\n$2\r\nk1\r\n*1\r\n*2\r\n$4\r\nteam\r\n$2\r\nny\r\n" + sample2(3, b"3")
        + b"*3\r\n$2\r\nk2\r\n*1\r\n*2\r\n$4\r\nteam\r\n$2\r\nsf\r\n" + sample2(3, b"6"))
    assert raw3.call("TS.MGET", "FILTER", "t=b") == b"%1\r\n$2\r\nk3\r\n*2\r\n%0\r\n" + sample3(3, b"3")
    assert raw.call("TS.MRANGE", "0", "1", "WITHLABELS", "FILTER", "t=b") == (
        b"*1\r\n*3\r\n$2\r\nk3\r\n*1\r\n*2\r\n$1\r\nt\r\n$1\r\nb\r\n*2\r\n" + sample2(0, b"0") + sample2(1, b"1"))
    assert raw3.call("TS.MRANGE", "0", "1", "AGGREGATION", "sum", "10", "FILTER", "t=b") == (
        b"%1\r\n$2\r\nk3\r\n*3\r\n%0\r\n%1\r\n$11\r\naggregators\r\n*1\r\n$3\r\nsum\r\n*1\r\n" + sample3(0, b"1"))
    # GROUPBY / REDUCE: a series per label value, named label=value
    res = r.execute_command("TS.MRANGE", "0", "3", "WITHLABELS", "FILTER", "t=a", "GROUPBY", "t", "REDUCE", "sum")
    assert res == [[b"t=a", [[b"t", b"a"], [b"__reducer__", b"sum"], [b"__source__", b"k1,k2"]],
                    [[0, b"0"], [1, b"3"], [2, b"6"], [3, b"9"]]]]
    assert raw3.call("TS.MREVRANGE", "0", "3", "COUNT", "1", "FILTER", "t=a", "GROUPBY", "team", "REDUCE", "max") == (
        b"%2\r\n$7\r\nteam=ny\r\n*4\r\n%0\r\n%1\r\n$8\r\nreducers\r\n*1\r\n$3\r\nmax\r\n"
        b"%1\r\n$7\r\nsources\r\n*1\r\n$2\r\nk1\r\n*1\r\n" + sample3(3, b"3")
        + b"$7\r\nteam=sf\r\n*4\r\n%0\r\n%1\r\n$8\r\nreducers\r\n*1\r\n$3\r\nmax\r\n"
        b"%1\r\n$7\r\nsources\r\n*1\r\n$2\r\nk2\r\n*1\r\n" + sample3(3, b"6"))
    r.execute_command("TS.CREATE", "k4", "LABELS", "t", "a")
    res = r.execute_command("TS.MRANGE", "-", "+", "EXCLUDEEMPTY", "FILTER", "t=a")
    assert [x[0] for x in res] == [b"k1", b"k2"]


def test_nrange(r, raw):
    for k, t, v in (("a", 1, 1), ("a", 2, 2), ("b", 2, 20), ("b", 3, 30)):
        r.execute_command("TS.ADD", k, t, v)
    assert raw.call("TS.NRANGE", "2", "a", "b", "-", "+") == (
        b"*3\r\n*2\r\n:1\r\n*2\r\n+1\r\n+NaN\r\n*2\r\n:2\r\n*2\r\n+2\r\n+20\r\n*2\r\n:3\r\n*2\r\n+NaN\r\n+30\r\n")
    assert r.execute_command("TS.NREVRANGE", "2", "a", "b", "-", "+", "COUNT", "1") == [[3, [b"NaN", b"30"]]]
    assert r.execute_command("TS.NRANGE", "2", "a", "b", "-", "+", "AGGREGATION", "sum", "min,max", "10") == [
        [0, [b"3", b"20", b"30"]]]
    assert err(r, "TS.NRANGE", "0", "a", "-", "+") == "TSDB: numkeys must be a positive integer"


# ---------------------------------------------------------------------------
# TS.READ
# ---------------------------------------------------------------------------

@contextlib.contextmanager
def _blocked(r, server, *args):
    """A new client sends args from a thread; yields (the dict its reply
    lands in as "reply", the thread) once the server counts it blocked."""
    c = server.client()
    out = {}

    def reader():
        out["reply"] = c.execute_command(*args)
    th = threading.Thread(target=reader)
    th.start()
    try:
        wait_until(lambda: r.info("clients")["blocked_clients"] == 1, what="the blocked reader")
        yield out, th
    finally:
        th.join(10)
        c.close()


def test_read_and_block(r, server):
    r.execute_command("TS.ADD", "s", 100, 1)
    assert r.execute_command("TS.READ", "s", "$") == []
    assert r.execute_command("TS.READ", "s", "+") == [[100, b"1"]]
    assert r.execute_command("TS.READ", "nokey", "0") == []
    assert err(r, "TS.READ", "s", "0", "BLOCK", "10", "0") == "TSDB: BLOCK min_count must be a positive integer"
    with _blocked(r, server, "TS.READ", "s", "101", "BLOCK", "0", "2") as (out, th):
        r.execute_command("TS.ADD", "s", 101, 2)
        assert r.info("clients")["blocked_clients"] == 1       # min_count 2 not reached yet
        r.execute_command("TS.ADD", "s", 102, 3)
        th.join(10)
        assert out["reply"] == [[101, b"2"], [102, b"3"]]
    assert r.execute_command("TS.READ", "s", "102", "BLOCK", "50", "5") == [[102, b"3"]]   # timeout flushes
    # deleting the key answers a blocked reader with an empty array
    with _blocked(r, server, "TS.READ", "s", "$", "BLOCK", "0", "1") as (out, th):
        r.delete("s")
        th.join(10)
        assert out["reply"] == []
    with pytest.raises(ResponseError, match="not allowed inside MULTI"):
        p = r.pipeline(transaction=True)
        p.execute_command("TS.READ", "s", "0", "BLOCK", "0", "1")
        p.execute()


# ---------------------------------------------------------------------------
# events, MULTI, scripts, metadata
# ---------------------------------------------------------------------------

def test_keyspace_events(r, server):
    r.config_set("notify-keyspace-events", "KEA")
    p = server.client().pubsub()
    p.psubscribe("__keyspace@0__:*")
    wait_until(lambda: p.get_message(timeout=0.1) is not None)
    r.execute_command("TS.CREATE", "s")
    r.execute_command("TS.CREATE", "d")
    r.execute_command("TS.CREATERULE", "s", "d", "AGGREGATION", "sum", "10")
    r.execute_command("TS.ADD", "s", 1, 1)
    r.execute_command("TS.ADD", "s", 11, 1)
    r.execute_command("TS.INCRBY", "s", 1, "TIMESTAMP", 12)
    r.execute_command("TS.ALTER", "s", "RETENTION", "0")
    r.execute_command("TS.DEL", "s", 0, 1)
    r.execute_command("TS.DELETERULE", "s", "d")
    got = []
    wait_until(lambda: (got.extend(m for m in [p.get_message(timeout=0.1)] if m) or len(got) >= 10))
    assert [(m["channel"][15:], m["data"]) for m in got[:10]] == [
        (b"s", b"ts.create"), (b"d", b"ts.create"), (b"s", b"ts.createrule:src"), (b"d", b"ts.createrule:dest"),
        (b"s", b"ts.add"), (b"d", b"ts.add:dest"), (b"s", b"ts.add"), (b"s", b"ts.incrby"),
        (b"s", b"ts.alter"), (b"s", b"ts.del")]
    p.close()


def test_multi_and_script(r):
    p = r.pipeline(transaction=True)
    p.execute_command("TS.ADD", "s", 1, 1)
    p.execute_command("TS.ADD", "s", 2, 2)
    p.execute_command("TS.RANGE", "s", "-", "+")
    assert p.execute()[2] == [[1, b"1"], [2, b"2"]]
    assert r.eval("return redis.call('TS.GET', KEYS[1])", 1, "s") == [2, b"2"]
    assert r.eval("return redis.call('TS.ADD', KEYS[1], 3, 3)", 1, "s") == 3


def test_module_list_acl_and_command_info(r, raw):
    mods = r.execute_command("MODULE", "LIST")
    assert [b"name", b"timeseries", b"ver", 81000] in [m[:4] for m in mods]
    assert b"timeseries" in r.execute_command("ACL", "CAT")
    cmds = set(r.execute_command("ACL", "CAT", "timeseries"))
    assert {b"ts.add", b"ts.range", b"ts.mrange", b"ts.read", b"ts.nrange", b"ts.querylabels"} <= cmds
    # categories exactly as the module registers them (nothing implied for a module command)
    assert raw.call("COMMAND", "INFO", "ts.add").startswith(
        b"*1\r\n*10\r\n$6\r\nts.add\r\n:-4\r\n*3\r\n+write\r\n+denyoom\r\n+module\r\n:1\r\n:1\r\n:1\r\n"
        b"*2\r\n+@write\r\n+@timeseries\r\n")
    assert raw.call("COMMAND", "INFO", "ts.get").startswith(
        b"*1\r\n*10\r\n$6\r\nts.get\r\n:-2\r\n*2\r\n+readonly\r\n+module\r\n:1\r\n:1\r\n:1\r\n"
        b"*3\r\n+@read\r\n+@fast\r\n+@timeseries\r\n")
    assert raw.call("COMMAND", "GETKEYS", "TS.NRANGE", "2", "a", "b", "-", "+") == (
        b"*2\r\n$1\r\na\r\n$1\r\nb\r\n")
    assert b"dont_cache" in raw.call("COMMAND", "INFO", "ts.mrange")
    docs = raw.call("COMMAND", "DOCS", "ts.get")
    assert b"$5\r\ngroup\r\n$6\r\nmodule\r\n" in docs
    assert b"$6\r\nmodule\r\n$10\r\ntimeseries\r\n" in docs
    assert raw.call("COMMAND", "LIST", "FILTERBY", "MODULE", "timeseries").startswith(b"*21\r\n")
    assert b"$5\r\ntoken\r\n$6\r\nLATEST\r\n$5\r\nflags\r\n*1\r\n+optional\r\n" in docs
    assert raw.call("COMMAND", "INFO", "ts.createrule").startswith(
        b"*1\r\n*10\r\n$13\r\nts.createrule\r\n:-6\r\n*3\r\n+write\r\n+module\r\n+fast\r\n")
    assert raw.call("COMMAND", "GETKEYS", "TS.MADD", "a", "1", "1", "b", "1", "1") == b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    assert raw.call("COMMAND", "GETKEYS", "TS.CREATERULE", "a", "b", "AGGREGATION", "avg", "1") == (
        b"*2\r\n$1\r\na\r\n$1\r\nb\r\n")


# ---------------------------------------------------------------------------
# persistence
# ---------------------------------------------------------------------------

def _fill(r):
    r.execute_command("TS.CREATE", "s", "RETENTION", "100000", "CHUNK_SIZE", "64", "DUPLICATE_POLICY", "sum",
                      "LABELS", "k", "v")
    r.execute_command("TS.CREATE", "d", "LABELS", "kind", "compaction")
    r.execute_command("TS.CREATERULE", "s", "d", "AGGREGATION", "avg", "10")
    for i in range(25):
        r.execute_command("TS.ADD", "s", i, i * 1.5)


def _snapshot(r):
    out = {}
    for k in ("s", "d"):
        info = dict(zip(*[iter(r.execute_command("TS.INFO", k))] * 2))
        out[k] = (r.execute_command("TS.RANGE", k, "-", "+"), info, r.execute_command("TS.GET", k, "LATEST"))
    return out


def test_dump_restore(r):
    _fill(r)
    payload = r.dump("s")
    assert payload[0] == 7 and payload[1:10] == b"\x81" + module_id("TSDB-TYPE", 9).to_bytes(8, "big")
    r.restore("s2", 0, payload)
    assert r.execute_command("TS.RANGE", "s2", "-", "+") == r.execute_command("TS.RANGE", "s", "-", "+")
    assert r.type("s2") == b"TSDB-TYPE"
    body = payload[:-10]
    for cut in (5, 30):                       # a record that ends too soon
        data = body[:-cut] + b"\x00" + payload[-10:-8]
        with pytest.raises(ResponseError, match="Bad data format"):
            r.restore("bad", 0, data + crc64(data).to_bytes(8, "little"))
    assert not r.exists("bad")
    r.execute_command("COPY", "s", "s3")
    assert r.execute_command("TS.RANGE", "s3", "-", "+") == r.execute_command("TS.RANGE", "s", "-", "+")
    assert r.memory_usage("s") > 64


def test_compressed_chunk_layout(r):
    # (10, 1.0) (20, 1.0) (30, 2.0): the first sample is the chunk's base;
    # then delta-of-delta 10 in the 5-bit bucket (prefix 1,0) and an
    # unchanged value (0); then delta-of-delta 0 (0) and a value whose XOR
    # with 1.0 is 0x7FF << 52: a new window (1,1), 1 leading zero in 5 bits,
    # 11 meaningful bits (stored as 10 in 6 bits), the 11 bits
    for t, v in ((10, 1), (20, 1), (30, 2)):
        r.execute_command("TS.ADD", "g", t, v)
    bits = [1, 0] + [(10 >> i) & 1 for i in range(5)] + [0]
    bits += [0] + [1, 1] + [(1 >> i) & 1 for i in range(5)] + [(10 >> i) & 1 for i in range(6)]
    bits += [(0x7FF >> i) & 1 for i in range(11)]
    data = sum(b << i for i, b in enumerate(bits)).to_bytes(8, "little")
    r.config_set("rdbcompression", "no")
    try:
        payload = r.dump("g")
    finally:
        r.config_set("rdbcompression", "yes")
    assert len(bits) == 33 and data + b"\0" * (4096 - 8) in payload
    r.restore("g2", 0, payload)
    assert r.execute_command("TS.RANGE", "g2", "-", "+") == [[10, b"1"], [20, b"1"], [30, b"2"]]
    info = dict(zip(*[iter(r.execute_command("TS.INFO", "g2"))] * 2))
    assert info[b"chunkType"] == b"compressed"


def test_debug_reload(r):
    _fill(r)
    before = _snapshot(r)
    dig = r.execute_command("DEBUG", "DIGEST-VALUE", "s")
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    assert _snapshot(r) == before
    assert r.execute_command("DEBUG", "DIGEST-VALUE", "s") == dig
    # the rule still runs after the reload
    r.execute_command("TS.ADD", "s", 31, 1)
    assert r.execute_command("TS.RANGE", "d", "-", "+")[-1][0] == 20


def test_aof_rewrite_and_restart(start_server):
    s = start_server(*AOF)
    c = s.client()
    _fill(c)
    c.execute_command("TS.ADD", "auto", "*", "1")
    rewrite_aof(c)
    c.execute_command("TS.ADD", "s", 40, 2)                     # in the incr file
    c.execute_command("TS.INCRBY", "auto", "1")                 # replayed with its timestamp
    before = _snapshot(c)
    auto = c.execute_command("TS.RANGE", "auto", "-", "+")
    s.stop()
    assert os.path.isdir(os.path.join(s.dir, "appendonlydir"))
    s2 = restart(start_server, s, *AOF)
    c2 = s2.client()
    assert _snapshot(c2) == before
    assert c2.execute_command("TS.RANGE", "auto", "-", "+") == auto


def test_replica_stream(start_server):
    master = start_server()
    m = master.client()
    m.execute_command("TS.ADD", "s", 1, 1, "LABELS", "a", "b")
    s = start_server()
    rep = s.client()
    follow(rep, master)
    wait_until(lambda: rep.exists("s"), what="the payload")
    m.execute_command("TS.ADD", "s", "*", 2)
    m.execute_command("TS.MADD", "s", "*", 3, "nokey", 1, 1)
    m.execute_command("TS.INCRBY", "s", 1)
    m.execute_command("TS.CREATE", "done")
    wait_until(lambda: rep.exists("done"), what="the stream")
    assert rep.execute_command("TS.RANGE", "s", "-", "+") == m.execute_command("TS.RANGE", "s", "-", "+")
    assert rep.execute_command("TS.QUERYINDEX", "a=b") == [b"s"]


def test_rule_references_follow_rename_and_delete(r):
    r.execute_command("TS.CREATE", "src")
    r.execute_command("TS.CREATE", "dst")
    r.execute_command("TS.CREATERULE", "src", "dst", "AGGREGATION", "sum", "10")
    info = lambda k: dict(zip(*[iter(r.execute_command("TS.INFO", k))] * 2))
    r.rename("dst", "dst2")
    r.execute_command("TS.ADD", "src", 1, 1)
    r.execute_command("TS.ADD", "src", 11, 1)
    assert r.execute_command("TS.RANGE", "dst2", "-", "+") == [[0, b"1"]]
    assert info("src")[b"rules"] == [[b"dst2", 10, b"SUM", 0]]
    r.rename("src", "src2")
    assert info("dst2")[b"sourceKey"] == b"src2"
    r.execute_command("TS.ADD", "src2", 21, 5)
    assert r.execute_command("TS.RANGE", "dst2", "-", "+") == [[0, b"1"], [10, b"1"]]
    # a RESTOREd copy keeps no rule references (the module's DUMP has none)
    r.restore("src3", 0, r.dump("src2"))
    assert info("src3")[b"rules"] == [] and info("src2")[b"rules"] == [[b"dst2", 10, b"SUM", 0]]
    r.delete("dst2")
    assert info("src2")[b"rules"] == []
    r.execute_command("TS.ADD", "src2", 40, 1)


def test_module_configuration(r):
    assert r.config_get("ts-*") == {
        "ts-chunk-size-bytes": "4096", "ts-compaction-policy": "", "ts-duplicate-policy": "block",
        "ts-encoding": "compressed", "ts-ignore-max-time-diff": "0", "ts-ignore-max-val-diff": "0.000000",
        "ts-num-threads": "3", "ts-retention-policy": "0"}
    try:
        r.config_set("ts-retention-policy", 1000)
        r.config_set("ts-duplicate-policy", "last")
        r.config_set("ts-chunk-size-bytes", 256)
        r.config_set("ts-encoding", "uncompressed")
        r.config_set("ts-compaction-policy", "max:1s:1h;avg:10:0:5")
        with pytest.raises(ResponseError, match="TSDB: CHUNK_SIZE value must be a multiple of 8"):
            r.config_set("ts-chunk-size-bytes", 100)
        with pytest.raises(ResponseError, match="Invalid compaction policy: bogus:1:1"):
            r.config_set("ts-compaction-policy", "bogus:1:1")
        with pytest.raises(ResponseError, match="Invalid duplicate policy: nope"):
            r.config_set("ts-duplicate-policy", "nope")
        with pytest.raises(ResponseError, match="Invalid encoding: zip"):
            r.config_set("ts-encoding", "zip")
        with pytest.raises(ResponseError, match="Invalid value for `ts-ignore-max-val-diff`"):
            r.config_set("ts-ignore-max-val-diff", "x")
        r.config_set("ts-ignore-max-val-diff", "1.5")
        assert r.config_get("ts-ignore-max-val-diff") == {"ts-ignore-max-val-diff": "1.500000"}
        r.config_set("ts-ignore-max-val-diff", "0")
        r.execute_command("TS.CREATE", "c", "LABELS", "a", "b")
        info = dict(zip(*[iter(r.execute_command("TS.INFO", "c"))] * 2))
        assert (info[b"retentionTime"], info[b"chunkSize"], info[b"chunkType"], info[b"duplicatePolicy"]) == (
            1000, 256, b"uncompressed", b"last")
        assert info[b"rules"] == []           # TS.CREATE: no policy rules
        r.execute_command("TS.ADD", "s", 1, 1, "LABELS", "a", "b")
        info = dict(zip(*[iter(r.execute_command("TS.INFO", "s"))] * 2))
        assert info[b"rules"] == [[b"s_MAX_1000", 1000, b"MAX", 0], [b"s_AVG_10_5", 10, b"AVG", 5]]
        d = dict(zip(*[iter(r.execute_command("TS.INFO", "s_MAX_1000"))] * 2))
        assert d[b"labels"] == [[b"a", b"b"], [b"aggregation", b"MAX"], [b"time_bucket", b"1000"]]
        assert d[b"retentionTime"] == 3600000 and d[b"sourceKey"] == b"s" and d[b"duplicatePolicy"] is None
        r.execute_command("TS.ADD", "s", 1, 5)          # ts-duplicate-policy last
        assert r.execute_command("TS.GET", "s") == [1, b"5"]
    finally:
        for k, v in (("ts-retention-policy", 0), ("ts-duplicate-policy", "block"), ("ts-chunk-size-bytes", 4096),
                     ("ts-encoding", "compressed"), ("ts-compaction-policy", "")):
            r.config_set(k, v)


def test_filters_and_acl(r, server):
    _labelled(r)
    r.execute_command("ACL", "SETUSER", "ts", "on", "nopass", "~k1", "~k2", "+@all")
    u = server.client(username="ts", password="x")
    try:
        assert u.execute_command("TS.QUERYINDEX", "t=(a,b)") == [b"k1", b"k2", b"k3"]    # not checked
        with pytest.raises(ResponseError, match="current user doesn't have read permission"):
            u.execute_command("TS.MGET", "FILTER", "t=(a,b)")
        with pytest.raises(ResponseError, match="^TSDB: current user"):
            u.execute_command("TS.MRANGE", "-", "+", "FILTER", "t=b")
        assert u.execute_command("TS.QUERYLABELS", "VALUES", "t") == [b"a"]
    finally:
        u.close()
        r.execute_command("ACL", "DELUSER", "ts")


def test_range_edges_twa_and_empty(r):
    for t, v in ((5, 0), (15, 10), (45, 40), (55, 50)):
        r.execute_command("TS.ADD", "s", t, v)
    # TWA interpolates from the samples just outside the range, its buckets
    # cut at the range's ends: the samples lie on v = t - 5, so each bucket's
    # TWA is that line's mean over [max(start, bucket), min(end, bucket end)]
    assert r.execute_command("TS.RANGE", "s", "10", "50", "AGGREGATION", "twa", "10") == [
        [10, b"10"], [40, b"40"]]
    # EMPTY fills the buckets between, and the range's edges when the series
    # has samples beyond them
    assert r.execute_command("TS.RANGE", "s", "10", "50", "AGGREGATION", "twa", "10", "EMPTY") == [
        [10, b"10"], [20, b"20"], [30, b"30"], [40, b"40"], [50, b"45"]]
    # no sample inside the range, samples on both sides: every bucket, the
    # last value carried forward
    assert r.execute_command("TS.RANGE", "s", "20", "40", "AGGREGATION", "last", "10", "EMPTY") == [
        [20, b"10"], [30, b"10"], [40, b"10"]]
    assert r.execute_command("TS.RANGE", "s", "20", "30", "AGGREGATION", "max", "10", "EMPTY") == [
        [20, b"NaN"], [30, b"NaN"]]
    # no sample beyond the range: no edge buckets
    assert r.execute_command("TS.RANGE", "s", "0", "100", "AGGREGATION", "count", "10", "EMPTY") == [
        [0, b"1"], [10, b"1"], [20, b"0"], [30, b"0"], [40, b"1"], [50, b"1"]]


def test_del_with_compaction(r):
    r.execute_command("TS.CREATE", "src")
    r.execute_command("TS.CREATE", "dst")
    r.execute_command("TS.CREATERULE", "src", "dst", "AGGREGATION", "sum", "1")
    base = 1_700_000_000_000
    for t in (5, 6, 10, 11, 20):
        r.execute_command("TS.ADD", "src", base + t, 1)
    assert len(r.execute_command("TS.RANGE", "dst", "-", "+")) == 4
    # the current bucket emptied: the destination's last bucket becomes current again
    assert r.execute_command("TS.DEL", "src", base + 20, base + 20) == 1
    assert [t - base for t, _ in r.execute_command("TS.RANGE", "dst", "-", "+")] == [5, 6, 10]
    assert r.execute_command("TS.GET", "dst", "LATEST") == [base + 11, b"1"]
    r.execute_command("TS.ADD", "src", base + 30, 1)
    assert [t - base for t, _ in r.execute_command("TS.RANGE", "dst", "-", "+")] == [5, 6, 10, 11]
    # a huge range with 1 ms buckets: only the touched buckets are visited
    assert r.execute_command("TS.DEL", "src", "0", base + 10) == 3
    assert [t - base for t, _ in r.execute_command("TS.RANGE", "dst", "-", "+")] == [11]
    assert r.execute_command("TS.DEL", "src", "-", "+") == 2
    assert r.execute_command("TS.RANGE", "dst", "-", "+") == []


def test_option_parsing_errors(r):
    r.execute_command("TS.CREATE", "s")
    cases = [
        (("TS.RANGE", "s", "-", "+", "AGGREGATION", "avg"), "TSDB: Couldn't parse AGGREGATION"),
        (("TS.RANGE", "s", "-", "+", "COUNT"), "TSDB: COUNT argument is missing"),
        (("TS.RANGE", "s", "-", "+", "COUNT", "x"), "TSDB: Couldn't parse COUNT"),
        (("TS.RANGE", "s", "-", "+", "FILTER_BY_TS"), "TSDB: FILTER_BY_TS one or more arguments are missing"),
        (("TS.RANGE", "s", "-", "+", "FILTER_BY_VALUE", "a", "1"), "TSDB: Couldn't parse MIN"),
        (("TS.RANGE", "s", "-", "+", "AGGREGATION", "avg", "10", "BUCKETTIMESTAMP", "x"),
         "TSDB: unknown BUCKETTIMESTAMP parameter"),
        (("TS.RANGE", "s", "-", "+", "AGGREGATION", "avg", "10", "ALIGN", "x"), "TSDB: unknown ALIGN parameter"),
        (("TS.RANGE", "s", "-", "10", "AGGREGATION", "avg", "10", "ALIGN", "end", "LATEST", "EMPTY"),
         "TSDB: EMPTY flag should be the 3rd or 5th flag after AGGREGATION flag"),
        (("TS.CREATE", "n", "CHUNK_SIZE"), "TSDB: Couldn't parse CHUNK_SIZE"),
        (("TS.CREATE", "n", "DUPLICATE_POLICY"), "TSDB: Couldn't parse DUPLICATE_POLICY"),
        (("TS.CREATE", "n", "IGNORE", "1"), "TSDB: Couldn't parse IGNORE"),
        (("TS.CREATE", "n", "ENCODING"), "wrong number of arguments for 'ts.create' command"),
        (("TS.MRANGE", "-", "+", "FILTER", "a=b", "GROUPBY"), "wrong number of arguments for 'ts.mrange' command"),
        (("TS.MRANGE", "-", "+", "FILTER", "a=b", "GROUPBY", "x", "REDUCE"),
         "wrong number of arguments for 'ts.mrange' command"),
        (("TS.MRANGE", "-", "+", "GROUPBY", "x", "REDUCE", "sum", "FILTER", "a=b"),
         "TSDB: GROUPBY should always come after filter"),
        (("TS.MRANGE", "-", "+", "WITHLABELS", "SELECTED_LABELS", "a", "FILTER", "x=y"),
         "TSDB: cannot accept WITHLABELS and SELECT_LABELS together"),
        (("TS.MGET", "SELECTED_LABELS", "FILTER", "x=y"), "TSDB: SELECT_LABELS should have at least 1 parameter"),
        (("TS.MRANGE", "-", "+", "FILTER", "a=b", "GROUPBY", "a", "REDUCE", "max", "EXCLUDEEMPTY"),
         "TSDB: EXCLUDEEMPTY is not allowed with GROUPBY"),
        (("TS.MRANGE", "-", "+", "EXCLUDEEMPTY", "FILTER", "a=b", "GROUPBY", "a", "REDUCE", "max"),
         "TSDB: EXCLUDEEMPTY is not allowed with GROUPBY"),
        (("TS.MRANGE", "-", "+", "AGGREGATION", "min,max", "10", "FILTER", "a=b", "GROUPBY", "a", "REDUCE", "max"),
         "TSDB: GROUPBY is not allowed when multiple aggregators are specified"),
        (("TS.CREATERULE", "s", "d", "AGGREGATION", "avg", "10", "-5"), "TSDB: Couldn't parse alignTimestamp"),
        (("TS.CREATERULE", "s", "d", "AGGREGATION", "min,max", "10"),
         "TSDB: CREATERULE requires exactly one aggregation type"),
        (("TS.READ", "s", "0", "MAX_COUNT", "0"), "TSDB: MAX_COUNT must be a positive integer"),
        (("TS.READ", "s", "0", "BLOCK", "10", "5", "MAX_COUNT", "2"), "TSDB: BLOCK min_count must be <= MAX_COUNT"),
        (("TS.READ", "s", "x"), "TSDB: invalid timestamp"),
        (("TS.NRANGE", "1", "s", "-", "+", "AGGREGATION", "nope", "10"), "TSDB: Unknown aggregation type"),
        (("TS.NRANGE", "2", "s", "s", "-", "+", "AGGREGATION", "avg", "10"),
         "TSDB: the number of AGGREGATION arguments must be equal to numkeys"),
        (("TS.QUERYLABELS", "LABELS", "x"), "TSDB: unknown argument, expected FILTER"),
        (("TS.QUERYLABELS", "LABELS", "FILTER"), "TSDB: FILTER given with no filter expressions"),
    ]
    for args, msg in cases:
        assert err(r, *args) == msg, args


def test_filters_follow_rename_move_swapdb_and_flush(r):
    for k in ("a", "b"):
        r.execute_command("TS.ADD", k, 1, 1, "LABELS", "l", "v")
    r.set("plain", "x")
    q = lambda: sorted(r.execute_command("TS.QUERYINDEX", "l=v"))
    assert q() == [b"a", b"b"]
    r.rename("a", "a2")
    assert q() == [b"a2", b"b"]
    r.move("b", 1)
    assert q() == [b"a2"]
    r.swapdb(0, 1)
    assert q() == [b"b"]
    r.swapdb(0, 1)
    r.delete("a2")
    assert q() == []
    r.execute_command("TS.ADD", "c", 1, 1, "LABELS", "l", "v")
    r.flushdb()
    assert q() == []


def test_restore_old_encoding_one_sample_list(r):
    # encoding version 1 (RedisTimeSeries 1.0): chunk size counted in
    # samples, no last-sample fields, the samples as a plain list
    w = ModuleWriter(False)
    w.string(b"old")
    w.uint(0)            # retention
    w.uint(256)          # chunk size in samples (4096 bytes)
    w.uint(1)            # options: uncompressed
    w.uint(1)            # labels
    w.string(b"k")
    w.string(b"v")
    w.uint(0)            # rules
    w.uint(2)            # samples
    for t, v in ((10, 1.5), (20, -2.0)):
        w.uint(t)
        w.double(v)
    data = (b"\x07" + enc_len(module_id("TSDB-TYPE", 1)) + b"".join(w.out) + b"\x00"
            + (10).to_bytes(2, "little"))
    r.restore("old", 0, data + crc64(data).to_bytes(8, "little"))
    assert r.execute_command("TS.RANGE", "old", "-", "+") == [[10, b"1.5"], [20, b"-2"]]
    info = dict(zip(*[iter(r.execute_command("TS.INFO", "old"))] * 2))
    assert info[b"chunkSize"] == 4096 and info[b"labels"] == [[b"k", b"v"]] and info[b"duplicatePolicy"] is None


def test_mrange_resp3_names_aggregators_in_lower_case(r, raw3):
    # RESP3 MRANGE lists its aggregators by their lower-case names, countNaN
    # and countAll included ("countnan", as redis-py 8.1's tests expect)
    r.execute_command("TS.CREATE", "lc", "LABELS", "kind", "lc")
    r.execute_command("TS.MADD", "lc", "1000", "NaN", "lc", "1001", "27")
    out = raw3.call("TS.MRANGE", "1000", "1001", "AGGREGATION", "countNaN", "1000", "FILTER", "kind=lc")
    assert b"$11\r\naggregators\r\n*1\r\n$8\r\ncountnan\r\n" in out, out
    out = raw3.call("TS.MRANGE", "1000", "1001", "AGGREGATION", "countAll", "1000", "FILTER", "kind=lc")
    assert b"$11\r\naggregators\r\n*1\r\n$8\r\ncountall\r\n" in out, out
