"""Redis 8's Count-Min sketch, Top-K and t-digest (RedisBloom built in):
CMS.*, TOPK.* and TDIGEST.* replies in RESP2 and RESP3 byte for byte as the
module builds them (valkey has none of them), its error texts, the numbers
its code computes (the expected values below come from RedisBloom 8.10's own
C code, t-digest-c at the revision it pins, run on the same input),
TYPE / OBJECT ENCODING / MEMORY USAGE, DUMP/RESTORE as the module's RDB
records, DEBUG RELOAD, AOF rewrite, a replica, MULTI and scripts, the ACL
categories and COMMAND INFO."""

import math
import struct

import pytest
from redis.exceptions import ResponseError

from ophidis.persistence.rdbcodec import crc64, enc_len, enc_string
from support.modtypes import AOF, err, follow, module_id, rdb_restart, restart, rewrite_aof
from support.resp import bulk
from support.wait import wait_until


def ints(*xs) -> bytes:
    return b"*%d\r\n" % len(xs) + b"".join(b":%d\r\n" % x for x in xs)


# ---------------------------------------------------------------------------
# Count-Min sketch
# ---------------------------------------------------------------------------

def test_cms_replies_both_protocols(raw, raw3):
    assert raw.call("CMS.INITBYDIM", "c", "1000", "5") == b"+OK\r\n"
    assert raw.call("CMS.INCRBY", "c", "foo", "5") == ints(5)
    assert raw.call("CMS.INCRBY", "c", "foo", "5", "bar", "15") == ints(10, 15)
    assert raw.call("CMS.QUERY", "c", "foo", "bar", "nosuch") == ints(10, 15, 0)
    assert raw.call("CMS.INFO", "c") == (b"*6\r\n+width\r\n:1000\r\n+depth\r\n:5\r\n"
                                         b"+count\r\n:25\r\n")
    assert raw3.call("CMS.INFO", "c") == (b"%3\r\n+width\r\n:1000\r\n+depth\r\n:5\r\n"
                                          b"+count\r\n:25\r\n")
    assert raw.call("CMS.INCRBY", "c", "zero", "0") == ints(0)


def test_cms_initbyprob_dimensions(r):
    # width ceil(2/error); depth from single-precision log10 as the module's
    # log10f (0.9 / 0.999 gives 1, 0.3 / 0.25 exactly 2)
    for e, p, w, d in (("0.01", "0.01", 200, 7), ("0.001", "0.002", 2000, 9), ("0.5", "0.5", 4, 1),
                       ("0.3", "0.25", 7, 2), ("0.07", "0.0625", 29, 4), ("0.9", "0.999", 3, 1),
                       ("0.0001", "0.000001", 20000, 20)):
        r.delete("p")
        assert r.execute_command("CMS.INITBYPROB", "p", e, p) == b"OK"
        info = r.execute_command("CMS.INFO", "p")
        assert info == [b"width", w, b"depth", d, b"count", 0], (e, p)


def test_cms_errors(r):
    r.set("s", "x")
    assert r.execute_command("CMS.INITBYDIM", "c", 10, 2)
    assert err(r, "CMS.INITBYDIM", "c", 10, 2) == "CMS: key already exists"
    assert err(r, "CMS.INITBYDIM", "s", 10, 2) == "CMS: key already exists"
    assert err(r, "CMS.INITBYDIM", "n", 0, 2) == "CMS: invalid width"
    assert err(r, "CMS.INITBYDIM", "n", "x", 2) == "CMS: invalid width"
    assert err(r, "CMS.INITBYDIM", "n", 10, -1) == "CMS: invalid depth"
    assert err(r, "CMS.INITBYDIM", "n", 2 ** 62, 4) == "CMS: invalid init arguments"
    assert err(r, "CMS.INITBYPROB", "n", 1, 0.5) == "CMS: invalid overestimation value"
    assert err(r, "CMS.INITBYPROB", "n", 0.1, 0) == "CMS: invalid prob value"
    assert err(r, "CMS.INITBYPROB", "n", "nan", 0.5) == "CMS: invalid overestimation value"
    assert err(r, "CMS.INITBYDIM", "n", 10) == "wrong number of arguments for 'cms.initbydim' command"
    assert err(r, "CMS.INCRBY", "c", "a", 1, "b") == "wrong number of arguments for 'cms.incrby' command"
    assert err(r, "CMS.INCRBY", "nokey", "a", 1) == "CMS: key does not exist"
    assert err(r, "CMS.INCRBY", "s", "a", 1) == "WRONGTYPE Operation against a key holding the wrong kind of value"
    assert err(r, "CMS.INCRBY", "c", "a", "x") == "CMS: Cannot parse number"
    assert err(r, "CMS.INCRBY", "c", "a", 1, "b", -1) == "CMS: Number cannot be negative"
    assert r.execute_command("CMS.QUERY", "c", "a") == [0]      # nothing applied
    assert err(r, "CMS.QUERY", "nokey", "a") == "CMS: key does not exist"
    assert err(r, "CMS.INFO", "s") == "WRONGTYPE Operation against a key holding the wrong kind of value"
    assert not r.exists("n")


def test_cms_counter_saturates(raw):
    raw.call("CMS.INITBYDIM", "c", "10", "2")
    assert raw.call("CMS.INCRBY", "c", "a", "4294967294") == ints(4294967294)
    # reaching 2**32-1 is reported as the overflow, as the module does
    assert raw.call("CMS.INCRBY", "c", "a", "1", "b", "2") == b"*2\r\n-CMS: INCRBY overflow\r\n:2\r\n"
    assert raw.call("CMS.INCRBY", "c", "a", "7") == b"*1\r\n-CMS: INCRBY overflow\r\n"
    assert raw.call("CMS.QUERY", "c", "a") == ints(4294967295)
    # an increment past 2**32 saturates at once
    assert raw.call("CMS.INCRBY", "c", "big", str(2 ** 40)) == b"*1\r\n-CMS: INCRBY overflow\r\n"
    assert raw.call("CMS.INFO", "c").endswith(b"+count\r\n:%d\r\n" % (4294967294 + 1 + 2 + 7 + 2 ** 40))


def test_cms_merge(r):
    for k in ("A", "B", "C"):
        r.execute_command("CMS.INITBYDIM", k, 1000, 5)
    r.execute_command("CMS.INCRBY", "A", "foo", 5, "bar", 3, "baz", 9)
    r.execute_command("CMS.INCRBY", "B", "foo", 2, "bar", 3, "baz", 1)
    assert r.execute_command("CMS.MERGE", "C", 2, "A", "B") == b"OK"
    assert r.execute_command("CMS.QUERY", "C", "foo", "bar", "baz") == [7, 6, 10]
    assert r.execute_command("CMS.MERGE", "C", 2, "A", "B", "weights", 2, 3) == b"OK"
    assert r.execute_command("CMS.QUERY", "C", "foo", "bar", "baz") == [16, 15, 21]
    assert r.execute_command("CMS.INFO", "C")[-1] == 2 * 17 + 3 * 6
    # the destination may be a source; a negative weight is fine while no
    # counter goes below zero
    assert r.execute_command("CMS.MERGE", "C", 2, "C", "A", "WEIGHTS", 1, -1) == b"OK"
    assert r.execute_command("CMS.QUERY", "C", "foo", "bar", "baz") == [11, 12, 12]
    assert err(r, "CMS.MERGE", "C", 1, "A", "WEIGHTS", -1) == "CMS: MERGE overflow"
    assert r.execute_command("CMS.QUERY", "C", "foo") == [11]   # unchanged
    r.execute_command("CMS.INITBYDIM", "D", 10, 5)
    assert err(r, "CMS.MERGE", "C", 1, "D") == "CMS: width/depth is not equal"
    assert err(r, "CMS.MERGE", "C", 2, "A") == "CMS: wrong number of keys"
    assert err(r, "CMS.MERGE", "C", 2, "A", "B", "WEIGHTS", 1) == "CMS: wrong number of keys/weights"
    assert err(r, "CMS.MERGE", "C", 0, "A") == "CMS: Number of keys must be positive"
    assert err(r, "CMS.MERGE", "C", "x", "A") == "CMS: invalid numkeys"
    assert err(r, "CMS.MERGE", "C", 1, "A", "WEIGHTS", "x") == "CMS: invalid weight value"
    assert err(r, "CMS.MERGE", "C", 1, "nokey") == "CMS: key does not exist"
    assert err(r, "CMS.MERGE", "nokey", 1, "A") == "CMS: key does not exist"


# ---------------------------------------------------------------------------
# Top-K
# ---------------------------------------------------------------------------

def test_topk_heavykeeper_as_the_module(raw, raw3):
    # decay 1 makes every decay step certain, so this run (4 buckets in 2
    # rows: collisions) is deterministic; the expected replies are the
    # module's for the same commands
    assert raw.call("TOPK.RESERVE", "t", "3", "4", "2", "1") == b"+OK\r\n"
    seq = [("apple", 1, None), ("bob", 3, None), ("carol", 2, None), ("dave", 5, b"apple"),
           ("erin", 1, None), ("apple", 4, b"carol"), ("frank", 7, b"bob"), ("bob", 2, None)]
    for item, n, expelled in seq:
        want = b"*1\r\n" + (bulk(expelled) if expelled else b"$-1\r\n")
        assert raw.call("TOPK.INCRBY", "t", item, str(n)) == want, item
    assert raw.call("TOPK.LIST", "t") == b"*3\r\n" + bulk(b"frank") + bulk(b"dave") + bulk(b"apple")
    assert raw.call("TOPK.LIST", "t", "WITHCOUNT") == (
        b"*6\r\n" + bulk(b"frank") + b":7\r\n" + bulk(b"dave") + b":5\r\n" + bulk(b"apple") + b":5\r\n")
    names = ("apple", "bob", "carol", "dave", "erin", "frank", "zed")
    assert raw.call("TOPK.COUNT", "t", *names) == ints(5, 1, 2, 0, 0, 7, 0)
    assert raw.call("TOPK.QUERY", "t", *names) == ints(1, 0, 0, 1, 0, 1, 0)
    assert raw3.call("TOPK.QUERY", "t", "apple", "zed") == b"*2\r\n#t\r\n#f\r\n"
    assert raw3.call("TOPK.ADD", "t", "zed") == b"*1\r\n_\r\n"
    assert raw.call("TOPK.INFO", "t") == b"*8\r\n+k\r\n:3\r\n+width\r\n:4\r\n+depth\r\n:2\r\n+decay\r\n$1\r\n1\r\n"
    assert raw3.call("TOPK.INFO", "t") == b"%4\r\n+k\r\n:3\r\n+width\r\n:4\r\n+depth\r\n:2\r\n+decay\r\n,1\r\n"


def test_topk_redis_py_sequence(r):
    # redis-py's test: 7 items in 50 x 3 buckets, none colliding in all rows
    r.execute_command("TOPK.RESERVE", "topk", 3, 50, 3, 0.9)
    items = "A B C D E A A B C G D B D A E E".split()
    r.execute_command("TOPK.ADD", "topk", *items)
    assert r.execute_command("TOPK.LIST", "topk") == [b"A", b"B", b"E"]
    assert r.execute_command("TOPK.LIST", "topk", "WITHCOUNT") == [b"A", 4, b"B", 3, b"E", 3]
    # defaults: width 8, depth 7, decay 0.9
    r.execute_command("TOPK.RESERVE", "d", 2)
    assert r.execute_command("TOPK.INFO", "d") == [b"k", 2, b"width", 8, b"depth", 7, b"decay", b"0.9"]
    assert r.execute_command("TOPK.LIST", "d") == []


def test_topk_errors(r, raw):
    r.set("s", "x")
    assert err(r, "TOPK.RESERVE", "t", 1, 2) == "wrong number of arguments for 'topk.reserve' command"
    assert err(r, "TOPK.RESERVE", "t", 0) == "TopK: invalid k"
    assert err(r, "TOPK.RESERVE", "t", 2 ** 32) == "TopK: invalid k"
    assert err(r, "TOPK.RESERVE", "t", 1, 0, 1, 0.5) == "TopK: invalid width"
    assert err(r, "TOPK.RESERVE", "t", 1, 1, "x", 0.5) == "TopK: invalid depth"
    assert err(r, "TOPK.RESERVE", "t", 1, 1, 1, 0) == "TopK: invalid decay value. must be '<= 1' & '> 0'"
    assert err(r, "TOPK.RESERVE", "t", 1, 1, 1, 1.5) == "TopK: invalid decay value. must be '<= 1' & '> 0'"
    assert err(r, "TOPK.RESERVE", "s", 1) == "TopK: key already exists"
    assert err(r, "TOPK.ADD", "nokey", "a") == "TopK: key does not exist"
    assert err(r, "TOPK.ADD", "s", "a") == "WRONGTYPE Operation against a key holding the wrong kind of value"
    r.execute_command("TOPK.RESERVE", "t", 2)
    assert err(r, "TOPK.INCRBY", "t", "a") == "wrong number of arguments for 'topk.incrby' command"
    assert err(r, "TOPK.LIST", "t", "WITHCOUNT", "x") == "wrong number of arguments for 'topk.list' command"
    assert err(r, "TOPK.LIST", "t", "WITHCOUNTS") == "WITHCOUNT keyword expected"
    # the module compares only the letters given
    assert r.execute_command("TOPK.LIST", "t", "with") == []
    assert err(r, "TOPK.LIST", "nokey") == "TopK: key does not exist"
    msg = b"TopK: increment must be an integer greater or equal to 0" + b" " * 28 + b"and smaller or equal to 100,000"
    assert raw.call("TOPK.INCRBY", "t", "a", "100001") == b"*1\r\n-" + msg + b"\r\n"
    assert raw.call("TOPK.INCRBY", "t", "a", "2", "b", "-1") == b"*2\r\n$-1\r\n-" + msg + b"\r\n"
    assert r.execute_command("TOPK.LIST", "t", "WITHCOUNT") == [b"a", 2]


def test_topk_items_as_c_strings(raw):
    # the module replies with items as C strings: up to the first NUL
    raw.call("TOPK.RESERVE", "t", "1")
    raw.call("TOPK.ADD", "t", "ab\x00cd")
    assert raw.call("TOPK.LIST", "t") == b"*1\r\n" + bulk(b"ab")
    assert raw.call("TOPK.QUERY", "t", "ab\x00cd", "ab") == ints(1, 0)
    assert raw.call("TOPK.INCRBY", "t", "x", "5") == b"*1\r\n" + bulk(b"ab")


# ---------------------------------------------------------------------------
# t-digest
# ---------------------------------------------------------------------------

# 1000 samples with many repeats; the expected numbers are t-digest-c's
VALUES = [((i * 37) % 101) * 0.25 + (i % 7) for i in range(1, 1001)]
QUANTILES = {0: 0.0, 0.01: 1.2827380952380953, 0.1: 5.3292727272727278, 0.25: 9.2503003057004154,
             0.5: 15.49733918128655, 0.75: 21.815180419994086, 0.9: 25.707093821510306,
             0.99: 29.733333333333338, 1: 31.0}
CDFS = {-1: 0.0, 0: 0.00050000000000000001, 1.25: 0.0095769230769230766, 7: 0.1618569236324246,
        13.5: 0.42020908772339693, 20: 0.67905882352941171, 31: 0.99950000000000006, 40: 1.0}


def _td_fill(r, key="t", compression=100):
    r.execute_command("TDIGEST.CREATE", key, "COMPRESSION", compression)
    for i in range(0, len(VALUES), 250):
        r.execute_command("TDIGEST.ADD", key, *[repr(v) for v in VALUES[i:i + 250]])


def test_tdigest_numbers_as_the_library(r):
    _td_fill(r)
    qs = list(QUANTILES)
    got = [float(x) for x in r.execute_command("TDIGEST.QUANTILE", "t", *qs)]
    assert got == [QUANTILES[q] for q in qs]
    # a descending list: each ascending run walks the centroids again
    got = [float(x) for x in r.execute_command("TDIGEST.QUANTILE", "t", 0.5, 0.25, 0.99, 0.01)]
    assert got == [QUANTILES[0.5], QUANTILES[0.25], QUANTILES[0.99], QUANTILES[0.01]]
    xs = list(CDFS)
    assert [float(x) for x in r.execute_command("TDIGEST.CDF", "t", *xs)] == [CDFS[x] for x in xs]
    assert float(r.execute_command("TDIGEST.TRIMMED_MEAN", "t", 0.1, 0.9)) == 15.514878676470587
    assert float(r.execute_command("TDIGEST.TRIMMED_MEAN", "t", 0, 1)) == 15.513999999999999
    assert float(r.execute_command("TDIGEST.TRIMMED_MEAN", "t", 0.25, 0.5)) == 12.442273880597014
    info = r.execute_command("TDIGEST.INFO", "t")
    assert info == [b"Compression", 100, b"Capacity", 610, b"Merged nodes", 41, b"Unmerged nodes", 0,
                    b"Merged weight", 1000, b"Unmerged weight", 0, b"Observations", 1000,
                    b"Total compressions", 2, b"Memory usage", 9840]
    assert float(r.execute_command("TDIGEST.MIN", "t")) == 0.0
    assert float(r.execute_command("TDIGEST.MAX", "t")) == 31.0


def test_tdigest_replies_both_protocols(raw, raw3):
    raw.call("TDIGEST.CREATE", "t")
    assert raw.call("TDIGEST.ADD", "t", "1", "2", "3", "4", "5") == b"+OK\r\n"
    assert raw.call("TDIGEST.QUANTILE", "t", "0.5", "0.8") == b"*2\r\n$1\r\n3\r\n$1\r\n5\r\n"
    assert raw3.call("TDIGEST.QUANTILE", "t", "0.5", "0.8") == b"*2\r\n,3\r\n,5\r\n"
    assert raw.call("TDIGEST.CDF", "t", "3") == b"*1\r\n$3\r\n0.5\r\n"
    assert raw3.call("TDIGEST.MIN", "t") == b",1\r\n"
    assert raw.call("TDIGEST.MAX", "t") == b"$1\r\n5\r\n"
    assert raw3.call("TDIGEST.BYRANK", "t", "0", "100") == b"*2\r\n,1\r\n,inf\r\n"
    assert raw.call("TDIGEST.BYREVRANK", "t", "100") == b"*1\r\n$4\r\n-inf\r\n"
    assert raw.call("TDIGEST.RANK", "t", "0", "3", "9") == ints(-1, 2, 5)
    assert raw3.call("TDIGEST.INFO", "t") == (
        b"%9\r\n+Compression\r\n:100\r\n+Capacity\r\n:610\r\n+Merged nodes\r\n:5\r\n"
        b"+Unmerged nodes\r\n:0\r\n+Merged weight\r\n:5\r\n+Unmerged weight\r\n:0\r\n"
        b"+Observations\r\n:5\r\n+Total compressions\r\n:1\r\n+Memory usage\r\n:9840\r\n")
    # an empty digest
    raw.call("TDIGEST.CREATE", "e", "COMPRESSION", "10")
    assert raw.call("TDIGEST.MIN", "e") == b"$3\r\nnan\r\n"
    assert raw3.call("TDIGEST.MAX", "e") == b",nan\r\n"
    assert raw3.call("TDIGEST.QUANTILE", "e", "0.5") == b"*1\r\n,nan\r\n"
    assert raw3.call("TDIGEST.CDF", "e", "1") == b"*1\r\n,nan\r\n"
    assert raw3.call("TDIGEST.TRIMMED_MEAN", "e", "0.1", "0.2") == b",nan\r\n"
    assert raw.call("TDIGEST.RANK", "e", "1") == ints(-2)
    assert raw.call("TDIGEST.REVRANK", "e", "1") == ints(-2)
    assert raw3.call("TDIGEST.BYRANK", "e", "1") == b"*1\r\n,nan\r\n"


def test_tdigest_ranks(r):
    r.execute_command("TDIGEST.CREATE", "t", "COMPRESSION", 500)
    r.execute_command("TDIGEST.ADD", "t", *range(20))
    assert r.execute_command("TDIGEST.RANK", "t", -1, 0, 10, -20, 20, 9) == [-1, 0, 10, -1, 20, 9]
    assert r.execute_command("TDIGEST.REVRANK", "t", 20, 0, 21, 10) == [-1, 19, -1, 9]
    r.execute_command("TDIGEST.CREATE", "b", "COMPRESSION", 500)
    r.execute_command("TDIGEST.ADD", "b", *range(1, 11))
    assert [float(x) for x in r.execute_command("TDIGEST.BYRANK", "b", 0, 9, 100)] == [1, 10, math.inf]
    assert [float(x) for x in r.execute_command("TDIGEST.BYREVRANK", "b", 0, 9, 100)] == [10, 1, -math.inf]
    assert float(r.execute_command("TDIGEST.TRIMMED_MEAN", "b", 0.1, 0.9)) == 5.5
    assert float(r.execute_command("TDIGEST.TRIMMED_MEAN", "b", 0.4, 0.5)) == 5.0


def test_tdigest_one_sample_stays_unmerged(r):
    # the library revision Redis 8 ships never compresses a total weight of
    # 1: the sample stays in the buffer, which the estimates do not read
    r.execute_command("TDIGEST.CREATE", "t")
    r.execute_command("TDIGEST.ADD", "t", 7)
    assert r.execute_command("TDIGEST.QUANTILE", "t", 0.5) == [b"nan"]
    assert r.execute_command("TDIGEST.CDF", "t", 7) == [b"nan"]
    assert r.execute_command("TDIGEST.MIN", "t") == b"7"
    assert r.execute_command("TDIGEST.BYRANK", "t", 0) == [b"7"]
    assert r.execute_command("TDIGEST.RANK", "t", 6, 8) == [-1, 1]
    info = r.execute_command("TDIGEST.INFO", "t")
    assert info[4:8] == [b"Merged nodes", 0, b"Unmerged nodes", 1]


def test_tdigest_merge(r):
    r.execute_command("TDIGEST.CREATE", "to", "COMPRESSION", 10)
    r.execute_command("TDIGEST.CREATE", "from", "COMPRESSION", 50)
    r.execute_command("TDIGEST.ADD", "from", *[1.0] * 10)
    r.execute_command("TDIGEST.ADD", "to", *[2.0] * 10)
    r.expire("to", 1000)
    assert r.execute_command("TDIGEST.MERGE", "to", 1, "from") == b"OK"
    info = dict(zip(*[iter(r.execute_command("TDIGEST.INFO", "to"))] * 2))
    assert info[b"Compression"] == 10            # an existing destination keeps its own
    assert info[b"Merged weight"] + info[b"Unmerged weight"] == 20
    assert r.ttl("to") == -1                    # the value is replaced whole
    # a new destination takes the largest compression of the sources
    assert r.execute_command("TDIGEST.MERGE", "new", 2, "to", "from") == b"OK"
    assert r.execute_command("TDIGEST.INFO", "new")[1] == 50
    assert r.execute_command("TDIGEST.MERGE", "new2", 1, "from", "COMPRESSION", 7) == b"OK"
    assert r.execute_command("TDIGEST.INFO", "new2")[1] == 7
    # OVERRIDE drops the destination's samples
    r.execute_command("TDIGEST.CREATE", "o1")
    r.execute_command("TDIGEST.ADD", "o1", *[3.0] * 10)
    assert r.execute_command("TDIGEST.MERGE", "to", 1, "o1", "OVERRIDE") == b"OK"
    assert r.execute_command("TDIGEST.MIN", "to") == b"3"
    assert r.execute_command("TDIGEST.INFO", "to")[1] == 100
    # the destination as a source
    assert r.execute_command("TDIGEST.MERGE", "to", 2, "to", "o1") == b"OK"
    assert r.execute_command("TDIGEST.INFO", "to")[13] == 30
    r.set("s", "x")
    assert err(r, "TDIGEST.MERGE", "s", 1, "o1") == "WRONGTYPE Operation against a key holding the wrong kind of value"
    assert err(r, "TDIGEST.MERGE", "to", 1, "nokey") == "T-Digest: key does not exist"
    assert err(r, "TDIGEST.MERGE", "x", 1, "x") == "T-Digest: key does not exist"
    assert err(r, "TDIGEST.MERGE", "to", 0, "o1") == "T-Digest: numkeys needs to be a positive integer"
    assert err(r, "TDIGEST.MERGE", "to", "a", "o1") == "T-Digest: error parsing numkeys"
    assert err(r, "TDIGEST.MERGE", "to", 2, "o1") == "wrong number of arguments for 'tdigest.merge' command"
    assert err(r, "TDIGEST.MERGE", "to", 1, "o1", "BOGUS") == "T-Digest: wrong keyword"
    assert err(r, "TDIGEST.MERGE", "to", 1, "o1", "COMPRESSION") == (
        "wrong number of arguments for 'tdigest.merge' command")
    assert err(r, "TDIGEST.MERGE", "to", 1, "o1", "COMPRESSION", 0) == (
        "T-Digest: compression parameter needs to be a positive integer")


def test_tdigest_errors(r):
    r.set("s", "x")
    assert err(r, "TDIGEST.CREATE", "t", "COMPRESSION") == "wrong number of arguments for 'tdigest.create' command"
    assert err(r, "TDIGEST.CREATE", "t", "BOGUS", 1) == "T-Digest: wrong keyword"
    assert err(r, "TDIGEST.CREATE", "t", "COMPRESSION", "x") == "T-Digest: error parsing compression parameter"
    assert err(r, "TDIGEST.CREATE", "t", "COMPRESSION", -5) == (
        "T-Digest: compression parameter needs to be a positive integer")
    assert err(r, "TDIGEST.CREATE", "t", "COMPRESSION", 10 ** 12) == "T-Digest: allocation failed"
    assert err(r, "TDIGEST.CREATE", "s") == "WRONGTYPE Operation against a key holding the wrong kind of value"
    r.execute_command("TDIGEST.CREATE", "t")
    assert err(r, "TDIGEST.CREATE", "t") == "T-Digest: key already exists"
    assert err(r, "TDIGEST.ADD", "nokey", 1) == "T-Digest: key does not exist"
    assert err(r, "TDIGEST.ADD", "t", 1, "x") == "T-Digest: error parsing val parameter"
    assert err(r, "TDIGEST.ADD", "t", "nan") == "T-Digest: error parsing val parameter"
    assert err(r, "TDIGEST.ADD", "t", 1, "inf") == "T-Digest: val parameter needs to be a finite number"
    assert r.execute_command("TDIGEST.INFO", "t")[13] == 0     # nothing added
    assert err(r, "TDIGEST.QUANTILE", "t", 1.5) == "T-Digest: quantile should be in [0,1]"
    assert err(r, "TDIGEST.QUANTILE", "t", "x") == "T-Digest: error parsing quantile"
    assert err(r, "TDIGEST.CDF", "t", "x") == "T-Digest: error parsing cdf"
    assert err(r, "TDIGEST.RANK", "t", "x") == "T-Digest: error parsing value"
    assert err(r, "TDIGEST.BYRANK", "t", -1) == "T-Digest: rank needs to be non negative"
    assert err(r, "TDIGEST.BYREVRANK", "t", 1.5) == "T-Digest: error parsing rank"
    assert err(r, "TDIGEST.TRIMMED_MEAN", "t", "x", 1) == "T-Digest: error parsing low_cut_percentile"
    assert err(r, "TDIGEST.TRIMMED_MEAN", "t", 0, "x") == "T-Digest: error parsing high_cut_percentile"
    assert err(r, "TDIGEST.TRIMMED_MEAN", "t", 0, 2) == (
        "T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]")
    assert err(r, "TDIGEST.TRIMMED_MEAN", "t", 0.5, 0.5) == (
        "T-Digest: low_cut_percentile should be lower than high_cut_percentile")
    assert err(r, "TDIGEST.MIN", "s") == "WRONGTYPE Operation against a key holding the wrong kind of value"
    r.execute_command("TDIGEST.ADD", "t", 1, 2)
    assert r.execute_command("TDIGEST.RESET", "t") == b"OK"
    assert r.execute_command("TDIGEST.INFO", "t")[12:16] == [b"Observations", 0, b"Total compressions", 0]
    assert err(r, "TDIGEST.RESET", "nokey") == "T-Digest: key does not exist"


# ---------------------------------------------------------------------------
# the keyspace, MULTI, scripts, ACL and COMMAND
# ---------------------------------------------------------------------------

def _fill(r):
    r.execute_command("CMS.INITBYDIM", "c", 100, 3)
    r.execute_command("CMS.INCRBY", "c", "a", 3, "b", 4)
    r.execute_command("TOPK.RESERVE", "k", 3, 20, 4, 0.9)
    r.execute_command("TOPK.ADD", "k", "a", "b", "c", "a", "a", "e", "d")
    _td_fill(r, "t", 100)
    r.execute_command("TDIGEST.CREATE", "u", "COMPRESSION", 5)
    r.execute_command("TDIGEST.ADD", "u", *[repr(v) for v in VALUES[:300]])


def _snapshot(r):
    return (r.execute_command("CMS.QUERY", "c", "a", "b", "x"), r.execute_command("CMS.INFO", "c"),
            r.execute_command("TOPK.LIST", "k", "WITHCOUNT"), r.execute_command("TOPK.COUNT", "k", "a", "b", "d"),
            r.execute_command("TOPK.INFO", "k"),
            r.execute_command("TDIGEST.QUANTILE", "t", *QUANTILES), r.execute_command("TDIGEST.CDF", "t", *CDFS),
            r.execute_command("TDIGEST.QUANTILE", "u", 0.1, 0.5, 0.9),
            r.execute_command("TDIGEST.INFO", "u")[:2] + r.execute_command("TDIGEST.INFO", "u")[8:14])


def test_type_encoding_memory(r):
    _fill(r)
    assert [r.type(k) for k in "cktu"] == [b"CMSk-TYPE", b"TopK-TYPE", b"TDIS-TYPE", b"TDIS-TYPE"]
    # DEBUG OBJECT's serializedlength is the module record's size (the
    # numbers RedisBloom 8.10 gives for the same values)
    r.execute_command("TDIGEST.CREATE", "d1")
    r.execute_command("TDIGEST.ADD", "d1", *range(1, 11))
    r.execute_command("CMS.INITBYDIM", "c1", 20, 2)
    for k, n in (("d1", 244), ("c1", 30)):
        assert b"serializedlength:%d " % n in r.execute_command("DEBUG", "OBJECT", k), k
    r.delete("d1", "c1")
    # SCAN's TYPE takes a module type's name in any case
    assert sorted(r.scan(0, count=100, _type="tdis-type")[1]) == [b"t", b"u"]
    assert r.scan(0, count=100, _type="CMSk-TYPE")[1] == [b"c"]
    assert {r.object("encoding", k) for k in "cktu"} == {b"raw"}
    # the module's estimates (plus the key's own overhead)
    assert r.memory_usage("c") >= 32 + 4 * 300
    assert r.memory_usage("k") >= 2088 + 8 * 80 + 24 * 3
    assert r.memory_usage("t") >= 80 + 16 * 610
    assert r.execute_command("COPY", "t", "t2") == 1
    assert r.execute_command("TDIGEST.QUANTILE", "t2", 0.5) == r.execute_command("TDIGEST.QUANTILE", "t", 0.5)
    r.execute_command("TDIGEST.ADD", "t2", 1000)
    assert r.execute_command("TDIGEST.MAX", "t") == b"31"       # the copy is its own
    assert r.execute_command("COPY", "k", "k2") == 1
    assert r.execute_command("TOPK.LIST", "k2") == r.execute_command("TOPK.LIST", "k")


def test_multi_and_scripts(r):
    p = r.pipeline(transaction=True)
    p.execute_command("CMS.INITBYDIM", "c", 10, 2)
    p.execute_command("CMS.INCRBY", "c", "x", 2)
    p.execute_command("TDIGEST.CREATE", "t")
    p.execute_command("TDIGEST.ADD", "t", 1, 2, 3)
    assert p.execute() == [b"OK", [2], b"OK", b"OK"]
    assert r.eval("redis.call('TOPK.RESERVE', KEYS[1], 2); return redis.call('TOPK.ADD', KEYS[1], 'a', 'b', 'c')",
                  1, "k") == [None, None, b"a"]
    assert r.eval("return redis.call('TDIGEST.MAX', KEYS[1])", 1, "t") == b"3"
    assert r.eval("return redis.call('CMS.QUERY', KEYS[1], 'x')", 1, "c") == [2]


def test_acl_categories_and_command_info(r, raw):
    cats = r.execute_command("ACL", "CAT")
    for c in (b"cms", b"topk", b"tdigest"):
        assert c in cats
    assert set(r.execute_command("ACL", "CAT", "tdigest")) == {
        b"tdigest.create", b"tdigest.add", b"tdigest.reset", b"tdigest.merge", b"tdigest.min", b"tdigest.max",
        b"tdigest.quantile", b"tdigest.byrank", b"tdigest.byrevrank", b"tdigest.rank", b"tdigest.revrank",
        b"tdigest.cdf", b"tdigest.trimmed_mean", b"tdigest.info"}
    assert len(r.execute_command("ACL", "CAT", "cms")) == 6
    assert len(r.execute_command("ACL", "CAT", "topk")) == 7
    # a module command's categories are exactly its registration's (no
    # implied @slow): CMS.INCRBY "write cms", CMS.INITBYDIM "write fast cms"
    info = raw.call("COMMAND", "INFO", "cms.incrby", "topk.list", "tdigest.merge", "cms.initbydim")
    assert b"*3\r\n+@write\r\n+@fast\r\n+@cms\r\n" in info
    assert (b"$10\r\ncms.incrby\r\n:-4\r\n*3\r\n+write\r\n+denyoom\r\n+module\r\n:1\r\n:1\r\n:1\r\n"
            b"*2\r\n+@write\r\n+@cms\r\n") in info
    assert (b"$9\r\ntopk.list\r\n:-2\r\n*2\r\n+readonly\r\n+module\r\n:1\r\n:1\r\n:1\r\n"
            b"*2\r\n+@read\r\n+@topk\r\n") in info
    assert (b"$13\r\ntdigest.merge\r\n:-4\r\n*4\r\n+write\r\n+denyoom\r\n+module\r\n+movablekeys\r\n"
            b":1\r\n:1\r\n:1\r\n*2\r\n+@write\r\n+@tdigest\r\n") in info
    assert raw.call("COMMAND", "GETKEYS", "TDIGEST.MERGE", "d", "2", "a", "b", "OVERRIDE") == (
        b"*3\r\n" + bulk(b"d") + bulk(b"a") + bulk(b"b"))
    # COMMAND DOCS names the module Redis 8 reports them as; COMMAND LIST
    # filters by it
    assert b"$6\r\nmodule\r\n$2\r\nbf\r\n" in raw.call("COMMAND", "DOCS", "topk.add")
    listed = raw.call("COMMAND", "LIST", "FILTERBY", "MODULE", "bf")
    assert int(listed[1:listed.index(b"\r\n")]) >= 27 and b"tdigest.byrevrank" in listed
    r.execute_command("ACL", "SETUSER", "u", "on", "nopass", "~*", "+@all", "-@tdigest")
    try:
        u = r.connection_pool.connection_class(host=r.connection_pool.connection_kwargs["host"],
                                               port=r.connection_pool.connection_kwargs["port"])
        u.connect()
        u.send_command("AUTH", "u", "x")
        assert u.read_response() == b"OK"
        u.send_command("TDIGEST.CREATE", "t")
        with pytest.raises(ResponseError, match="no permissions to run the .tdigest.create. command"):
            u.read_response()
        u.send_command("CMS.INITBYDIM", "c", 2, 2)
        assert u.read_response() == b"OK"
        u.disconnect()
    finally:
        r.execute_command("ACL", "DELUSER", "u")


# ---------------------------------------------------------------------------
# persistence: the module's RDB records
# ---------------------------------------------------------------------------

def _uint(x):
    return enc_len(2) + enc_len(x)


def _sint(x):
    # RedisModule_SaveSigned writes an unsigned item of the 64-bit pattern
    return enc_len(2) + enc_len(x & (2 ** 64 - 1))


def _double(x):
    return enc_len(4) + struct.pack("<d", x)


def _string(b):
    return enc_len(5) + enc_string(b, False)


def _payload(name, items: bytes) -> bytes:
    data = b"\x07" + enc_len(module_id(name, 0)) + items + enc_len(0) + (11).to_bytes(2, "little")
    return data + crc64(data).to_bytes(8, "little")


def test_restore_cms_record(r):
    # width 3, depth 2, total 7; the rows' counters as little-endian words
    table = struct.pack("<6I", 1, 0, 6, 0, 7, 0)
    r.restore("c", 0, _payload("CMSk-TYPE", _uint(3) + _uint(2) + _uint(7) + _string(table)))
    assert r.type("c") == b"CMSk-TYPE"
    assert r.execute_command("CMS.INFO", "c") == [b"width", 3, b"depth", 2, b"count", 7]
    # a record with a table of the wrong size is refused
    with pytest.raises(ResponseError, match="Bad data format"):
        r.restore("bad", 0, _payload("CMSk-TYPE", _uint(3) + _uint(2) + _uint(7) + _string(table[:-4])))
    # our DUMP is the same layout: it restores to the same sketch
    r.execute_command("CMS.INITBYDIM", "d", 50, 4)
    r.execute_command("CMS.INCRBY", "d", "x", 9, "y", 2)
    r.restore("d2", 0, r.dump("d"))
    assert r.execute_command("CMS.QUERY", "d2", "x", "y", "z") == [9, 2, 0]
    payload = r.dump("d")
    assert payload[1:10] == b"\x81" + module_id("CMSk-TYPE", 0).to_bytes(8, "big")
    assert payload[10:16] == _uint(50) + _uint(4) + _uint(11)


def test_restore_topk_record(r):
    # k 2, width 2, depth 1, decay 0.5; buckets (fp, count); two heap slots
    # of 24 bytes; the items with their NULs ("" alone: an empty slot)
    buckets = struct.pack("<4I", 11, 3, 0, 0)
    heap = struct.pack("<IIQII", 0, 0, 0, 0, 0) + struct.pack("<IIQII", 11, 3, 0xDEADBEEF, 3, 0)
    items = _string(b"\x00") + _string(b"abc\x00")
    r.restore("k", 0, _payload("TopK-TYPE", _uint(2) + _uint(2) + _uint(1) + _double(0.5) + _string(buckets)
                                + _string(heap) + items))
    assert r.execute_command("TOPK.LIST", "k", "WITHCOUNT") == [b"abc", 3]
    assert r.execute_command("TOPK.INFO", "k") == [b"k", 2, b"width", 2, b"depth", 1, b"decay", b"0.5"]
    r.restore("k2", 0, r.dump("k"))
    assert r.execute_command("TOPK.LIST", "k2", "WITHCOUNT") == [b"abc", 3]
    with pytest.raises(ResponseError, match="Bad data format"):
        r.restore("bad", 0, _payload("TopK-TYPE", _uint(2) + _uint(2) + _uint(1) + _double(0.5) + _string(buckets)
                                      + _string(heap[:-1]) + items))


def test_restore_tdigest_record(r):
    # compression 10, min 1, max 5, cap 70, 2 merged nodes, 0 buffered,
    # 1 compression, merged weight 5; means then weights (as doubles)
    items = (_double(10) + _double(1) + _double(5) + _sint(70) + _sint(2) + _sint(0) + _sint(1)
             + _double(5) + _double(0) + _double(1.5) + _double(4) + _double(2) + _double(3))
    r.restore("t", 0, _payload("TDIS-TYPE", items))
    assert r.execute_command("TDIGEST.INFO", "t")[:10] == [
        b"Compression", 10, b"Capacity", 70, b"Merged nodes", 2, b"Unmerged nodes", 0, b"Merged weight", 5]
    assert r.execute_command("TDIGEST.MIN", "t") == b"1"
    assert r.execute_command("TDIGEST.CDF", "t", 1.5) == [b"0.2"]
    # DUMP compresses first and writes the same layout
    _td_fill(r, "u", 100)
    r.execute_command("TDIGEST.ADD", "u", 3)
    payload = r.dump("u")
    assert payload[10:19] == _double(100)
    r.restore("u2", 0, payload)
    assert r.execute_command("TDIGEST.QUANTILE", "u2", *QUANTILES) == r.execute_command("TDIGEST.QUANTILE", "u", *QUANTILES)
    assert r.execute_command("TDIGEST.INFO", "u2") == r.execute_command("TDIGEST.INFO", "u")


def test_debug_reload(r):
    _fill(r)
    before = _snapshot(r)
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    assert _snapshot(r) == before


def test_topk_empty_item_after_reload(raw, raw3):
    # the module stores an item as a C string with its NUL, and a lone NUL
    # reads back as an empty slot: a counted empty item then lists as a
    # null (checked against RedisBloom 8.10's own rdb_save/rdb_load)
    raw.call("TOPK.RESERVE", "k", "2")
    raw.call("TOPK.ADD", "k", "", "x", "x")
    assert raw.call("TOPK.LIST", "k", "WITHCOUNT") == b"*4\r\n" + bulk(b"x") + b":2\r\n$0\r\n\r\n:1\r\n"
    assert raw.call("DEBUG", "RELOAD") == b"+OK\r\n"
    assert raw.call("TOPK.LIST", "k", "WITHCOUNT") == b"*4\r\n" + bulk(b"x") + b":2\r\n$-1\r\n:1\r\n"
    assert raw3.call("TOPK.LIST", "k") == b"*2\r\n" + bulk(b"x") + b"_\r\n"
    assert raw.call("TOPK.QUERY", "k", "") == ints(1)     # the empty slot matches an empty item
    assert raw.call("TOPK.COUNT", "k", "") == ints(1)


def test_aof_rewrite_and_restart(start_server):
    s = start_server(*AOF)
    c = s.client()
    _fill(c)
    rewrite_aof(c)
    c.execute_command("CMS.INCRBY", "c", "a", 10)                  # in the incr file
    c.execute_command("TDIGEST.ADD", "u", 1, 2, 3)
    before = _snapshot(c)
    s.stop()
    s2 = restart(start_server, s, *AOF)
    assert _snapshot(s2.client()) == before


def test_rdb_restart(start_server):
    rdb_restart(start_server, _fill, _snapshot)


def test_replica_stream(start_server):
    master = start_server()
    m = master.client()
    m.execute_command("CMS.INITBYDIM", "c", 10, 2)
    s = start_server()
    rep = s.client()
    follow(rep, master)
    wait_until(lambda: rep.exists("c"), what="the payload")
    m.execute_command("CMS.INCRBY", "c", "x", 4)
    m.execute_command("TDIGEST.CREATE", "t")
    m.execute_command("TDIGEST.ADD", "t", 1, 2, 3, 4)
    m.execute_command("TOPK.RESERVE", "k", 2, 8, 3, 1)
    m.execute_command("TOPK.ADD", "k", "a", "b", "a")
    m.set("done", 1)
    wait_until(lambda: rep.exists("done"), what="the stream")
    assert rep.execute_command("CMS.QUERY", "c", "x") == [4]
    assert rep.execute_command("TDIGEST.QUANTILE", "t", 0.5) == m.execute_command("TDIGEST.QUANTILE", "t", 0.5)
    assert rep.execute_command("TOPK.LIST", "k", "WITHCOUNT") == [b"a", 2, b"b", 1]


def test_keyspace_events_and_watch(r):
    # RedisBloom sends no events of its own: a created key is "new" (class
    # n), and nothing else is published for these writes
    r.config_set("notify-keyspace-events", "KEAn")
    p = r.pubsub()
    p.psubscribe("__keyevent@*")
    wait_until(lambda: p.get_message(timeout=0.1) is not None)
    r.execute_command("CMS.INITBYDIM", "c", 10, 2)
    r.execute_command("CMS.INCRBY", "c", "a", 1)
    r.execute_command("TOPK.RESERVE", "k", 2)
    r.execute_command("TOPK.ADD", "k", "a")
    r.execute_command("TDIGEST.CREATE", "t")
    r.execute_command("TDIGEST.ADD", "t", 1)
    r.execute_command("TDIGEST.MERGE", "t", 1, "t")
    r.set("done", 1)
    events = []
    wait_until(lambda: events.append(p.get_message(timeout=0.1)) or
               [e for e in events if e and e["channel"].endswith(b":set")])
    names = [(e["channel"].split(b":", 1)[1], e["data"]) for e in events if e]
    assert names == [(b"new", b"c"), (b"new", b"k"), (b"new", b"t"), (b"new", b"t"), (b"new", b"done"),
                     (b"set", b"done")]
    p.close()
    r.config_set("notify-keyspace-events", "")
    # a write invalidates a WATCH on its key
    w = r.pipeline(transaction=True)
    w.watch("c")
    r.execute_command("CMS.INCRBY", "c", "a", 1)
    w.multi()
    w.get("x")
    with pytest.raises(Exception, match="[Ww]atch"):
        w.execute()
    w.reset()


def test_tdigest_duplicates_as_the_library(r):
    # many equal means: the library's quicksort leaves equal means in an
    # order of its own, which decides how the centroids merge (9 centroids
    # after 14 compressions here, the library's numbers)
    r.execute_command("TDIGEST.CREATE", "t", "COMPRESSION", 10)
    vals = [i % 3 for i in range(500)] + [(i % 5) * 0.5 for i in range(300)]
    for i in range(0, len(vals), 100):
        r.execute_command("TDIGEST.ADD", "t", *vals[i:i + 100])
    info = r.execute_command("TDIGEST.INFO", "t")
    assert info[4:8] + info[14:16] == [b"Merged nodes", 11, b"Unmerged nodes", 21, b"Total compressions", 13]
    assert [float(x) for x in r.execute_command("TDIGEST.QUANTILE", "t", 0.1, 0.5, 0.9)] == [
        0.11947584789311409, 0.95040297875834501, 1.9493537325243999]
    assert [float(x) for x in r.execute_command("TDIGEST.CDF", "t", 1.0, 0.5)] == [
        0.51770119477006338, 0.29323035280940835]
    # the estimates compressed the buffer
    info = r.execute_command("TDIGEST.INFO", "t")
    assert info[4:8] + info[14:16] == [b"Merged nodes", 9, b"Unmerged nodes", 0, b"Total compressions", 14]
    # with compression 5 and 300 samples, six stay buffered (as there)
    r.execute_command("TDIGEST.CREATE", "u", "COMPRESSION", 5)
    r.execute_command("TDIGEST.ADD", "u", *[repr(v) for v in VALUES[:300]])
    info = r.execute_command("TDIGEST.INFO", "u")
    assert info[4:16] == [b"Merged nodes", 7, b"Unmerged nodes", 6, b"Merged weight", 294, b"Unmerged weight", 6,
                          b"Observations", 300, b"Total compressions", 9]
