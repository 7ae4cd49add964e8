"""Redis 8's Bloom and cuckoo filters (RedisBloom built in): BF.* and CF.*
replies in RESP2 and RESP3 byte for byte as RedisBloom builds them (valkey
has neither), its errors, the filters' figures and SCANDUMP chunks (golden
values computed by RedisBloom's own C code, sb.c / bloom.c / cuckoo.c, for
the same inserts), DUMP/RESTORE as RedisBloom's module records, RDB and AOF
round trips, a replica, MULTI and scripts, TYPE, MODULE LIST, ACL
categories and key specs."""

import hashlib
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.exceptions import ResponseError, WatchError

from ophidis.persistence.rdbcodec import crc64, enc_len, enc_string
from support.modtypes import AOF, aof_base, follow, module_id, rdb_restart, restart, rewrite_aof
from support.resp import bulk
from support.wait import wait_until


def err(raw, *args):
    """The error line a command answers, as sent (without '-' and CRLF)."""
    reply = raw.call(*args)
    assert reply[:1] == b"-", reply
    return reply[1:-2].decode()


def pipe_all(r, cmds):
    p = r.pipeline(transaction=False)
    for cmd in cmds:
        p.execute_command(*cmd)
    return p.execute(raise_on_error=False)


# ---------------------------------------------------------------------------
# Bloom filters
# ---------------------------------------------------------------------------

def test_bf_add_exists_replies(raw, raw3):
    assert raw.call("BF.RESERVE", "b", "0.01", "1000") == b"+OK\r\n"
    assert raw.call("BF.ADD", "b", "foo") == b":1\r\n"
    assert raw.call("BF.ADD", "b", "foo") == b":0\r\n"
    assert raw.call("BF.MADD", "b", "foo", "bar") == b"*2\r\n:0\r\n:1\r\n"
    assert raw.call("BF.EXISTS", "b", "foo") == b":1\r\n"
    assert raw.call("BF.EXISTS", "b", "nope") == b":0\r\n"
    assert raw.call("BF.MEXISTS", "b", "foo", "nope") == b"*2\r\n:1\r\n:0\r\n"
    assert raw3.call("BF.ADD", "b", "baz") == b"#t\r\n"
    assert raw3.call("BF.ADD", "b", "baz") == b"#f\r\n"
    assert raw3.call("BF.MADD", "b", "baz", "qux") == b"*2\r\n#f\r\n#t\r\n"
    assert raw3.call("BF.EXISTS", "b", "qux") == b"#t\r\n"
    assert raw3.call("BF.MEXISTS", "b", "qux", "nope") == b"*2\r\n#t\r\n#f\r\n"
    # a missing key, or one of another type, holds nothing for EXISTS
    raw.call("SET", "s", "x")
    assert raw.call("BF.EXISTS", "nokey", "foo") == b":0\r\n"
    assert raw.call("BF.EXISTS", "s", "foo") == b":0\r\n"
    assert raw3.call("BF.MEXISTS", "s", "a", "b") == b"*2\r\n#f\r\n#f\r\n"
    # BF.ADD creates a filter with the defaults (0.01, 100, expansion 2)
    assert raw.call("BF.ADD", "auto", "x") == b":1\r\n"
    assert raw.call("BF.INFO", "auto") == (
        b"*10\r\n+Capacity\r\n:100\r\n+Size\r\n:240\r\n+Number of filters\r\n:1\r\n"
        b"+Number of items inserted\r\n:1\r\n+Expansion rate\r\n:2\r\n")
    assert raw.call("BF.ADD", "s", "x") == b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    assert raw.call("BF.CARD", "b") == b":4\r\n"
    assert raw.call("BF.CARD", "nokey") == b":0\r\n"
    assert raw.call("BF.CARD", "s").startswith(b"-WRONGTYPE")


def test_bf_info(raw, raw3):
    raw.call("BF.RESERVE", "b", "0.001", "500", "EXPANSION", "4")
    raw.call("BF.MADD", "b", "a", "b", "c")
    # 500 entries at 0.0005: 15.82 bits each, 7912 bits -> 992 bytes; + 32 + 64
    assert raw.call("BF.INFO", "b") == (
        b"*10\r\n+Capacity\r\n:500\r\n+Size\r\n:1088\r\n+Number of filters\r\n:1\r\n"
        b"+Number of items inserted\r\n:3\r\n+Expansion rate\r\n:4\r\n")
    assert raw3.call("BF.INFO", "b") == (
        b"%5\r\n+Capacity\r\n:500\r\n+Size\r\n:1088\r\n+Number of filters\r\n:1\r\n"
        b"+Number of items inserted\r\n:3\r\n+Expansion rate\r\n:4\r\n")
    assert raw.call("BF.INFO", "b", "items") == b"*1\r\n:3\r\n"
    assert raw3.call("BF.INFO", "b", "ITEMS") == b"%1\r\n+Number of items inserted\r\n:3\r\n"
    assert raw.call("BF.INFO", "b", "capacity") == b"*1\r\n:500\r\n"
    assert raw.call("BF.INFO", "b", "size") == b"*1\r\n:1088\r\n"
    assert raw.call("BF.INFO", "b", "filters") == b"*1\r\n:1\r\n"
    assert raw3.call("BF.INFO", "b", "expansion") == b"%1\r\n+Expansion rate\r\n:4\r\n"
    assert raw.call("BF.INFO", "b", "bogus") == b"-Invalid information value\r\n"
    assert raw.call("BF.INFO", "b", "items", "x") == b"-ERR wrong number of arguments for 'bf.info' command\r\n"
    assert raw.call("BF.INFO", "nokey") == b"-ERR not found\r\n"
    raw.call("BF.RESERVE", "ns", "0.01", "100", "NONSCALING")
    assert raw.call("BF.INFO", "ns", "expansion") == b"*1\r\n$-1\r\n"
    assert raw3.call("BF.INFO", "ns", "expansion") == b"%1\r\n+Expansion rate\r\n_\r\n"
    assert raw.call("BF.INFO", "ns").endswith(b"+Expansion rate\r\n$-1\r\n")
    assert raw.call("BF.DEBUG", "ns") == (
        b"*2\r\n" + bulk(b"size:0")
        + bulk(b"bytes:120 bits:960 hashes:7 hashwidth:64 capacity:100 size:0 ratio:0.01"))


def test_bf_reserve_errors(r, raw):
    assert err(raw, "BF.RESERVE", "b", "x", "100") == "ERR bad error rate"
    assert err(raw, "BF.RESERVE", "b", "0", "100") == "ERR error rate must be in the range (0.000000, 1.000000)"
    assert err(raw, "BF.RESERVE", "b", "1", "100") == "ERR error rate must be in the range (0.000000, 1.000000)"
    assert err(raw, "BF.RESERVE", "b", "0.1", "x") == "ERR bad capacity"
    assert err(raw, "BF.RESERVE", "b", "0.1", "0") == "ERR capacity must be in the range [1, 1073741824]"
    assert err(raw, "BF.RESERVE", "b", "0.1", "1073741825") == "ERR capacity must be in the range [1, 1073741824]"
    assert err(raw, "BF.RESERVE", "b", "0.1", "10", "EXPANSION") == "ERR no expansion"
    assert err(raw, "BF.RESERVE", "b", "0.1", "10", "EXPANSION", "x") == "ERR bad expansion"
    assert err(raw, "BF.RESERVE", "b", "0.1", "10", "EXPANSION", "40000") == (
        "ERR expansion must be in the range [0, 32768]")
    assert err(raw, "BF.RESERVE", "b", "0.1", "10", "NONSCALING", "EXPANSION", "2") == (
        "Nonscaling filters cannot expand")
    assert err(raw, "BF.RESERVE", "b", "0.1") == "ERR wrong number of arguments for 'bf.reserve' command"
    assert err(raw, "BF.RESERVE", "b", "0.1", "10", "a", "b", "c", "d") == (
        "ERR wrong number of arguments for 'bf.reserve' command")
    assert not r.exists("b")
    # EXPANSION 0 makes a non-scaling filter; an error rate above 0.25 is capped
    assert r.execute_command("BF.RESERVE", "z", "0.9", "10", "EXPANSION", "0") == b"OK"
    assert r.execute_command("BF.INFO", "z", "EXPANSION") == [None]
    assert r.execute_command("BF.DEBUG", "z")[1].endswith(b"ratio:0.25")
    assert err(raw, "BF.RESERVE", "z", "0.1", "10") == "ERR item exists"
    r.set("s", "x")
    assert err(raw, "BF.RESERVE", "s", "0.1", "10").startswith("WRONGTYPE")


def test_bf_insert(raw, raw3):
    assert raw.call("BF.INSERT", "b", "CAPACITY", "10", "ERROR", "0.001", "EXPANSION", "3",
                    "ITEMS", "a", "b", "a") == b"*3\r\n:1\r\n:1\r\n:0\r\n"
    assert raw.call("BF.INFO", "b", "CAPACITY") == b"*1\r\n:10\r\n"
    assert raw.call("BF.INFO", "b", "EXPANSION") == b"*1\r\n:3\r\n"
    assert raw3.call("BF.INSERT", "b", "ITEMS", "c", "a") == b"*2\r\n#t\r\n#f\r\n"
    assert raw.call("BF.INSERT", "nc", "NOCREATE", "ITEMS", "a") == b"-ERR not found\r\n"
    assert raw.call("BF.INSERT", "ns", "NONSCALING", "CAPACITY", "2", "ITEMS", "a", "b", "c", "d") == (
        b"*3\r\n:1\r\n:1\r\n-ERR non scaling filter is full\r\n")
    assert raw.call("BF.ADD", "ns", "e") == b"-ERR non scaling filter is full\r\n"
    assert raw.call("BF.INSERT", "b", "FOO", "ITEMS", "a") == b"-Unknown argument received\r\n"
    assert raw.call("BF.INSERT", "b", "ERROR", "2", "ITEMS", "a") == b"-Bad error rate\r\n"
    assert raw.call("BF.INSERT", "b", "CAPACITY", "0", "ITEMS", "a") == b"-Bad capacity\r\n"
    assert raw.call("BF.INSERT", "b", "EXPANSION", "-1", "ITEMS", "a") == b"-Bad expansion\r\n"
    arity = b"-ERR wrong number of arguments for 'bf.insert' command\r\n"
    assert raw.call("BF.INSERT", "b", "CAPACITY", "10", "ITEMS") == arity
    assert raw.call("BF.INSERT", "b", "a", "b") == b"-Unknown argument received\r\n"
    assert raw.call("BF.INSERT", "b", "NOCREATE", "CAPACITY") == arity
    # EXPANSION 0 at creation: non-scaling
    raw.call("BF.INSERT", "e0", "EXPANSION", "0", "ITEMS", "x")
    assert raw.call("BF.INFO", "e0", "EXPANSION") == b"*1\r\n$-1\r\n"


GOLDEN_BF_HEADER = bytes.fromhex(
    "fa000000000000000200000005000000020000009000000000000000800400000000000064000000000000007b14ae47"
    "e17a743fe9862fb2350e2640080000006400000000000000003801000000000000c00900000000000096000000000000"
    "007b14ae47e17a643f4af7d49edef0284009000000c80000000000000000")
GOLDEN_BF_CHUNKS = [
    (145, 144, "0b7c140cc2fae448b12688943c8d6250099be379ef1ff040f2910524ee44af50"),
    (457, 312, "5cac2b329b5649df0e3b69292447b40528c8c6cbc4cef2faf524deb942777a52"),
]


def _bf_golden(r):
    r.execute_command("BF.RESERVE", "g", "0.01", "100")
    assert pipe_all(r, [("BF.ADD", "g", "i%d" % i) for i in range(250)]) == [1] * 250


def test_bf_scaling_matches_redisbloom(r):
    """RedisBloom's C code, fed the same 250 items, makes this chain: two
    links (100 then 200 entries), this header and these bit arrays; the
    same probes test positive."""
    _bf_golden(r)
    assert r.execute_command("BF.SCANDUMP", "g", 0) == [1, GOLDEN_BF_HEADER]
    it, got = 1, []
    while True:
        it, data = r.execute_command("BF.SCANDUMP", "g", it)
        if it == 0:
            assert data == b""
            break
        got.append((it, len(data), hashlib.sha256(data).hexdigest()))
    assert got == GOLDEN_BF_CHUNKS
    probes = pipe_all(r, [("BF.EXISTS", "g", "x%d" % i) for i in range(500)])
    assert [i for i, v in enumerate(probes) if v] == [100, 215, 299, 351, 356, 492]
    assert r.execute_command("BF.DEBUG", "g") == [
        b"size:250",
        b"bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:100 ratio:0.005",
        b"bytes:312 bits:2496 hashes:9 hashwidth:64 capacity:200 size:150 ratio:0.0025"]
    assert r.execute_command("BF.INFO", "g") == [
        b"Capacity", 300, b"Size", 32 + 2 * 64 + 144 + 312, b"Number of filters", 2,
        b"Number of items inserted", 250, b"Expansion rate", 2]


def test_figures_redisbloom_asserts(r, raw3):
    """The figures RedisBloom's own test suite expects of a server (its
    tests/flow: test_overall's debug/info/expansion, test_resp3)."""
    r.execute_command("BF.RESERVE", "bf", "0.01", "10")
    pipe_all(r, [("BF.ADD", "bf", str(i)) for i in range(100)])
    assert r.execute_command("BF.DEBUG", "bf") == [
        b"size:99",
        b"bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:10 ratio:0.005",
        b"bytes:32 bits:256 hashes:9 hashwidth:64 capacity:20 size:20 ratio:0.0025",
        b"bytes:72 bits:576 hashes:10 hashwidth:64 capacity:40 size:40 ratio:0.00125",
        b"bytes:160 bits:1280 hashes:11 hashwidth:64 capacity:80 size:29 ratio:0.000625"]
    r.delete("bf")
    r.execute_command("BF.RESERVE", "bf", "0.001", "100")
    assert r.execute_command("BF.INFO", "bf") == [b"Capacity", 100, b"Size", 296, b"Number of filters", 1,
                                                   b"Number of items inserted", 0, b"Expansion rate", 2]
    pipe_all(r, [("BF.ADD", "bf", str(i)) for i in range(4000)])
    assert r.execute_command("BF.DEBUG", "bf") == [
        b"size:3997",
        b"bytes:200 bits:1600 hashes:11 hashwidth:64 capacity:100 size:100 ratio:0.0005",
        b"bytes:432 bits:3456 hashes:12 hashwidth:64 capacity:200 size:200 ratio:0.00025",
        b"bytes:936 bits:7488 hashes:13 hashwidth:64 capacity:400 size:400 ratio:0.000125",
        b"bytes:2016 bits:16128 hashes:14 hashwidth:64 capacity:800 size:800 ratio:6.25e-05",
        b"bytes:4320 bits:34560 hashes:15 hashwidth:64 capacity:1600 size:1600 ratio:3.125e-05",
        b"bytes:9216 bits:73728 hashes:16 hashwidth:64 capacity:3200 size:897 ratio:1.5625e-05"]
    for name, exp, filters in (("exp1", 1, 23), ("exp2", 2, 5), ("exp4", 4, 4)):
        r.execute_command("BF.RESERVE", name, "0.01", "4", "EXPANSION", exp)
        pipe_all(r, [("BF.ADD", name, str(i)) for i in range(100)])
        assert r.execute_command("BF.INFO", name)[5] == filters
    # test_resp3's sequence
    r.flushall()
    assert raw3.call("BF.ADD", "test", "item") == b"#t\r\n"
    assert raw3.call("BF.INFO", "test") == (
        b"%5\r\n+Capacity\r\n:100\r\n+Size\r\n:240\r\n+Number of filters\r\n:1\r\n"
        b"+Number of items inserted\r\n:1\r\n+Expansion rate\r\n:2\r\n")
    assert raw3.call("BF.INSERT", "test", "ITEMS", "item2", "item3", "item2") == b"*3\r\n#t\r\n#t\r\n#f\r\n"
    raw3.call("CF.RESERVE", "a", "9", "EXPANSION", "0")
    assert [raw3.call(*c.split()) for c in ("CF.ADD a 3", "CF.ADD a 4", "CF.ADDNX a 4", "CF.ADDNX a 9")] == [
        b"#t\r\n", b"#t\r\n", b"#f\r\n", b"#t\r\n"]
    assert raw3.call("CF.INSERT", "a", "ITEMS", "4", "5") == b"*2\r\n#t\r\n#t\r\n"
    assert raw3.call("CF.INSERTNX", "a", "ITEMS", "4", "6") == b"*2\r\n:0\r\n:1\r\n"
    assert [raw3.call("CF.DEL", "a", "3") for _ in range(2)] == [b"#t\r\n", b"#f\r\n"]
    assert raw3.call("CF.MEXISTS", "a", "4", "3") == b"*2\r\n#t\r\n#f\r\n"
    assert raw3.call("CF.COUNT", "a", "4") == b":2\r\n"
    assert raw3.call("CF.INFO", "a") == (
        b"%8\r\n+Size\r\n:64\r\n+Number of buckets\r\n:4\r\n+Number of filters\r\n:1\r\n"
        b"+Number of items inserted\r\n:5\r\n+Number of items deleted\r\n:1\r\n+Bucket size\r\n:2\r\n"
        b"+Expansion rate\r\n:0\r\n+Max iterations\r\n:20\r\n")


def test_cuckoo_figures_redisbloom_asserts(r, raw):
    """test_cuckoo's expectations in RedisBloom's own suite."""
    for spec in ("a 64 BUCKETSIZE 1", "b 64 BUCKETSIZE 2", "c 256 BUCKETSIZE 4 MAXITERATIONS 500",
                 "d 64 EXPANSION 1", "e 64 EXPANSION 2", "f 64 EXPANSION 4 MAXITERATIONS 500"):
        r.execute_command("CF.RESERVE", *spec.split())
    for key in "abcdef":
        assert pipe_all(r, [("CF.ADD", key, str(i)) for i in range(1000)]) == [1] * 1000
        assert pipe_all(r, [("CF.EXISTS", key, str(i)) for i in range(1000)]) == [1] * 1000
    assert [r.execute_command("CF.DEBUG", k) for k in "abcdef"] == [
        b"bktsize:1 buckets:64 items:1000 deletes:0 filters:18 max_iterations:20 expansion:1",
        b"bktsize:2 buckets:32 items:1000 deletes:0 filters:17 max_iterations:20 expansion:1",
        b"bktsize:4 buckets:64 items:1000 deletes:0 filters:4 max_iterations:500 expansion:1",
        b"bktsize:2 buckets:32 items:1000 deletes:0 filters:17 max_iterations:20 expansion:1",
        b"bktsize:2 buckets:32 items:1000 deletes:0 filters:5 max_iterations:20 expansion:2",
        b"bktsize:2 buckets:32 items:1000 deletes:0 filters:3 max_iterations:500 expansion:4"]
    r.execute_command("CF.RESERVE", "m", "4")
    assert pipe_all(r, [("CF.ADD", "m", str(i)) for i in range(124)]) == [1] * 124
    assert raw.call("CF.ADD", "m", "2048") == b"-Maximum expansions reached\r\n"
    r.execute_command("CF.RESERVE", "z", "4", "EXPANSION", "0")
    assert [r.execute_command("CF.ADD", "z", i) for i in (1, 2, 3, 4)] == [1, 1, 1, 1]
    assert r.execute_command("CF.INSERT", "z", "ITEMS", "5", "6") == [-1, -1]
    assert raw.call("CF.ADD", "z", "7") == b"-Filter is full\r\n"


def _scandump_copy(r, family):
    """SCANDUMP the filter g of family (BF or CF) to its end, LOADCHUNK every
    chunk into copy; the two filters are then the same."""
    chunks = [r.execute_command(family + ".SCANDUMP", "g", 0)]
    while True:
        it, data = r.execute_command(family + ".SCANDUMP", "g", chunks[-1][0])
        if it == 0:
            break
        chunks.append([it, data])
    for it, data in chunks:
        assert r.execute_command(family + ".LOADCHUNK", "copy", it, data) == b"OK"
    assert r.execute_command(family + ".DEBUG", "copy") == r.execute_command(family + ".DEBUG", "g")
    assert r.execute_command("DEBUG", "DIGEST-VALUE", "copy") == r.execute_command("DEBUG", "DIGEST-VALUE", "g")


def test_bf_scandump_loadchunk(r, raw):
    _bf_golden(r)
    _scandump_copy(r, "BF")
    # a negative or past-the-end cursor ends the scan
    assert r.execute_command("BF.SCANDUMP", "g", -3) == [0, b""]
    assert r.execute_command("BF.SCANDUMP", "g", 10**6) == [0, b""]
    assert err(raw, "BF.SCANDUMP", "g", "x") == "Second argument must be numeric"
    assert err(raw, "BF.SCANDUMP", "nokey", 0) == "ERR not found"
    assert err(raw, "BF.LOADCHUNK", "g", "x", "d") == "ERR Second argument must be numeric"
    assert err(raw, "BF.LOADCHUNK", "new", 1, b"short") == "ERR received bad data"
    bad = bytearray(GOLDEN_BF_HEADER)
    bad[40] ^= 1                                  # the first link's error rate
    assert err(raw, "BF.LOADCHUNK", "new", 1, bytes(bad)) == "ERR received bad data"
    assert err(raw, "BF.LOADCHUNK", "new", 5, b"x") == "ERR not found"
    assert err(raw, "BF.LOADCHUNK", "g", 1, GOLDEN_BF_HEADER) == "ERR received bad data"
    assert err(raw, "BF.LOADCHUNK", "g", 1000, b"x") == "ERR invalid offset - no link found"
    assert err(raw, "BF.LOADCHUNK", "g", 150, b"x" * 10) == "ERR invalid chunk - Too big for current filter"
    assert not r.exists("new")


# ---------------------------------------------------------------------------
# Cuckoo filters
# ---------------------------------------------------------------------------

def test_cf_replies(raw, raw3):
    assert raw.call("CF.RESERVE", "c", "1000") == b"+OK\r\n"
    assert raw.call("CF.ADD", "c", "a") == b":1\r\n"
    assert raw.call("CF.ADD", "c", "a") == b":1\r\n"               # a second copy
    assert raw.call("CF.COUNT", "c", "a") == b":2\r\n"
    assert raw.call("CF.ADDNX", "c", "a") == b":0\r\n"
    assert raw.call("CF.ADDNX", "c", "b") == b":1\r\n"
    assert raw3.call("CF.ADD", "c", "d") == b"#t\r\n"
    assert raw3.call("CF.ADDNX", "c", "d") == b"#f\r\n"
    assert raw3.call("CF.ADDNX", "c", "e") == b"#t\r\n"
    assert raw.call("CF.INSERT", "c", "ITEMS", "f", "a") == b"*2\r\n:1\r\n:1\r\n"
    assert raw3.call("CF.INSERT", "c", "ITEMS", "g") == b"*1\r\n#t\r\n"
    # CF.INSERTNX answers integers in RESP3 too
    assert raw.call("CF.INSERTNX", "c", "ITEMS", "g", "h") == b"*2\r\n:0\r\n:1\r\n"
    assert raw3.call("CF.INSERTNX", "c", "ITEMS", "h", "i") == b"*2\r\n:0\r\n:1\r\n"
    assert raw.call("CF.EXISTS", "c", "a") == b":1\r\n"
    assert raw3.call("CF.EXISTS", "c", "zz") == b"#f\r\n"
    assert raw3.call("CF.MEXISTS", "c", "a", "zz") == b"*2\r\n#t\r\n#f\r\n"
    assert raw3.call("CF.COUNT", "c", "a") == b":3\r\n"
    assert raw.call("CF.DEL", "c", "a") == b":1\r\n"
    assert raw3.call("CF.DEL", "c", "a") == b"#t\r\n"
    assert raw3.call("CF.DEL", "c", "zz") == b"#f\r\n"
    assert raw.call("CF.COUNT", "c", "a") == b":1\r\n"
    raw.call("SET", "s", "x")
    assert raw.call("CF.EXISTS", "s", "a") == b":0\r\n"
    assert raw3.call("CF.MEXISTS", "nokey", "a") == b"*1\r\n#f\r\n"
    assert raw3.call("CF.COUNT", "s", "a") == b":0\r\n"
    assert raw.call("CF.DEL", "s", "a") == b"-Not found\r\n"
    assert raw.call("CF.DEL", "nokey", "a") == b"-Not found\r\n"
    assert raw.call("CF.ADD", "s", "a").startswith(b"-WRONGTYPE")
    # 1000 / 2 -> 512 buckets of 2; 1024 bytes + 40 + 16
    info = (b"+Size\r\n:1080\r\n+Number of buckets\r\n:512\r\n+Number of filters\r\n:1\r\n"
            b"+Number of items inserted\r\n:8\r\n+Number of items deleted\r\n:2\r\n"
            b"+Bucket size\r\n:2\r\n+Expansion rate\r\n:1\r\n+Max iterations\r\n:20\r\n")
    assert raw.call("CF.INFO", "c") == b"*16\r\n" + info
    assert raw3.call("CF.INFO", "c") == b"%8\r\n" + info
    assert raw.call("CF.DEBUG", "c") == bulk(
        b"bktsize:2 buckets:512 items:8 deletes:2 filters:1 max_iterations:20 expansion:1")
    assert raw.call("CF.INFO", "nokey") == b"-ERR not found\r\n"
    # CF.ADD creates a filter of 1024 (512 buckets)
    raw.call("CF.ADD", "auto", "x")
    assert raw.call("CF.DEBUG", "auto") == bulk(
        b"bktsize:2 buckets:512 items:1 deletes:0 filters:1 max_iterations:20 expansion:1")


def test_cf_reserve_and_insert_errors(r, raw):
    assert err(raw, "CF.RESERVE", "c", "x") == "Bad capacity"
    assert err(raw, "CF.RESERVE", "c", "100", "BUCKETSIZE") == "ERR wrong number of arguments for 'cf.reserve' command"
    assert err(raw, "CF.RESERVE", "c", "100", "BUCKETSIZE", "x") == "Couldn't parse BUCKETSIZE"
    assert err(raw, "CF.RESERVE", "c", "100", "BUCKETSIZE", "256") == "BUCKETSIZE: value must be in the range [1, 255]"
    assert err(raw, "CF.RESERVE", "c", "100", "MAXITERATIONS", "0") == (
        "MAXITERATIONS: value must be in the range [1, 65535]")
    assert err(raw, "CF.RESERVE", "c", "100", "MAXITERATIONS", "x") == "Couldn't parse MAXITERATIONS"
    assert err(raw, "CF.RESERVE", "c", "100", "EXPANSION", "32769") == (
        "EXPANSION: value must be in the range [0, 32768]")
    assert err(raw, "CF.RESERVE", "c", "100", "EXPANSION", "x") == "Couldn't parse EXPANSION"
    assert err(raw, "CF.RESERVE", "c", "7", "BUCKETSIZE", "4") == (
        "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]")
    assert err(raw, "CF.RESERVE", "c", "1073741825") == "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]"
    assert not r.exists("c")
    assert r.execute_command("CF.RESERVE", "c", "100", "BUCKETSIZE", "4", "MAXITERATIONS", "5",
                             "EXPANSION", "3") == b"OK"
    assert r.execute_command("CF.DEBUG", "c") == (
        b"bktsize:4 buckets:32 items:0 deletes:0 filters:1 max_iterations:5 expansion:4")
    assert err(raw, "CF.RESERVE", "c", "100") == "ERR item exists"
    assert err(raw, "CF.INSERT", "c", "CAPACITY", "x", "ITEMS", "a") == "Bad capacity"
    assert err(raw, "CF.INSERT", "c", "CAPACITY", "3", "ITEMS", "a") == (
        "Capacity must be in the range [cf-bucket-size * 2, 1073741824]")
    assert err(raw, "CF.INSERT", "c", "BOGUS", "ITEMS", "a") == "Unknown argument received"
    assert err(raw, "CF.INSERT", "c", "ITEMS") == "ERR wrong number of arguments for 'cf.insert' command"
    assert err(raw, "CF.INSERTNX", "c", "NOCREATE", "a") == "Unknown argument received"
    assert err(raw, "CF.INSERT", "new", "NOCREATE", "ITEMS", "a") == "ERR not found"
    assert r.execute_command("CF.INSERT", "new", "CAPACITY", "8", "ITEMS", "a") == [1]
    assert r.execute_command("CF.DEBUG", "new") == (
        b"bktsize:2 buckets:4 items:1 deletes:0 filters:1 max_iterations:20 expansion:1")


def test_cf_full_and_max_expansions(raw, raw3):
    raw.call("CF.RESERVE", "f", "4", "EXPANSION", "0", "MAXITERATIONS", "1")
    replies = [raw.call("CF.ADD", "f", "item%d" % i) for i in range(12)]
    assert b"-Filter is full\r\n" in replies
    assert raw.call("CF.INSERT", "f", "ITEMS", "x1", "x2", "x3", "x4") == b"*4\r\n" + b":-1\r\n" * 4
    assert raw3.call("CF.INSERT", "f", "ITEMS", "x1") == b"*1\r\n#f\r\n"
    assert raw3.call("CF.INSERTNX", "f", "ITEMS", "y1") == b"*1\r\n:-1\r\n"
    # a filter that grew to 32 sub-filters takes no more
    raw.call("CF.RESERVE", "g", "4", "MAXITERATIONS", "1")
    n = 0
    while raw.call("CF.DEBUG", "g").find(b"filters:32 ") < 0:
        assert raw.call("CF.ADD", "g", "i%d" % n) == b":1\r\n"
        n += 1
    assert raw.call("CF.ADD", "g", "one more") == b"-Maximum expansions reached\r\n"
    assert raw.call("CF.EXISTS", "g", "i0") == b":1\r\n"


GOLDEN_CF_HEADER = bytes.fromhex("f40100000000000040000000000000002d000000000000000600000000000000020014000100")
GOLDEN_CF_CHUNKS = [
    (129, "16cfb5e657e1eed4948dab5a4445b19e70d9d2b4d95e8331be0f44180d5c7603"),
    (257, "be75641d0815308051a0ec2e1795a400f7d8bc54426cf81ea012795aa43a2b8f"),
    (385, "3d6c35c760f0fcab2ad28e408ef54a0741bad429eebe2828672a658d9b9e1496"),
    (513, "a1773f5aa38c102cd0e469ae6237dbcd507741acb941bbb281aae8040efbeb5b"),
    (641, "b3cefc0af6a3e437157b7257dda28f89c61a68295dfb333048d7ae406788d131"),
    (769, "82b2077594d7d4a36051bcd601ae137b531033c49eaa0a37f126b952826c71b7"),
]
GOLDEN_CF_TWICE = [8, 14, 34, 37, 41, 50, 67, 71, 88, 110, 124, 166, 212, 221, 274]


def _cf_golden(r):
    r.execute_command("CF.RESERVE", "g", "100")
    assert pipe_all(r, [("CF.ADD", "g", "i%d" % i) for i in range(600)]) == [1] * 600
    assert pipe_all(r, [("CF.DEL", "g", "i%d" % i) for i in range(0, 300, 3)]) == [1] * 100


def test_cf_matches_redisbloom(r):
    """RedisBloom's C code, fed the same 600 inserts and 100 deletes (which
    compact the sub-filters), ends with this header and these buckets."""
    _cf_golden(r)
    assert r.execute_command("CF.SCANDUMP", "g", 0) == [1, GOLDEN_CF_HEADER]
    pos, got = 1, []
    while True:
        pos, data = r.execute_command("CF.SCANDUMP", "g", pos)
        if pos == 0:
            assert data is None
            break
        got.append((pos, hashlib.sha256(data).hexdigest()))
    assert got == GOLDEN_CF_CHUNKS
    counts = pipe_all(r, [("CF.COUNT", "g", "i%d" % i) for i in range(300)])
    assert [i for i, v in enumerate(counts) if v == 2] == GOLDEN_CF_TWICE
    # five deleted items still count once: another item's fingerprint in their buckets
    assert [i for i, v in enumerate(counts) if v == 0] == [
        i for i in range(0, 300, 3) if i not in (24, 210, 252, 276, 294)]
    assert r.execute_command("CF.DEBUG", "g") == (
        b"bktsize:2 buckets:64 items:500 deletes:45 filters:6 max_iterations:20 expansion:1")


def test_cf_compact_matches_redisbloom(raw):
    """CF.COMPACT after the golden inserts and deletes: one sub-filter fewer,
    the deletes reset, the buckets RedisBloom's C code ends with."""
    raw.call("CF.RESERVE", "g", "100")
    for i in range(0, 600, 100):
        raw.pipeline(*[("CF.ADD", "g", "i%d" % j) for j in range(i, i + 100)])
    raw.pipeline(*[("CF.DEL", "g", "i%d" % j) for j in range(0, 300, 3)])
    assert raw.call("CF.COMPACT", "g") == b"+OK\r\n"
    assert raw.call("CF.SCANDUMP", "g", 0) == b"*2\r\n:1\r\n" + bulk(bytes.fromhex(
        "f401000000000000400000000000000000000000000000000500000000000000020014000100"))
    got, pos = [], 1
    while True:
        reply = raw.call_value("CF.SCANDUMP", "g", pos)
        if reply[0] == 0:
            break
        pos = reply[0]
        got.append((pos, hashlib.sha256(reply[1]).hexdigest()[:16]))
    assert got == [(129, "8a8ded5c3fea2e4b"), (257, "ec71d4a598c7d209"), (385, "eeb8d688cf143c6c"),
                   (513, "686e9e26844ca495"), (641, "5027f85435fb4392")]
    assert raw.call("CF.COMPACT", "nokey") == b"-Cuckoo filter was not found\r\n"
    assert raw.call("CF.COMPACT", "g", "x") == b"-ERR wrong number of arguments for 'cf.compact' command\r\n"


def test_cf_scandump_loadchunk(r, raw):
    _cf_golden(r)
    _scandump_copy(r, "CF")
    # an empty filter dumps nothing
    r.execute_command("CF.RESERVE", "e", "100")
    assert r.execute_command("CF.SCANDUMP", "e", 0) == [0, None]
    assert err(raw, "CF.SCANDUMP", "g", -1) == "Invalid position"
    assert err(raw, "CF.SCANDUMP", "nokey", 0) == "ERR not found"
    assert err(raw, "CF.LOADCHUNK", "n", 0, b"x") == "Invalid position"
    assert err(raw, "CF.LOADCHUNK", "n", 1, b"x") == "Invalid header"
    assert err(raw, "CF.LOADCHUNK", "g", 1, GOLDEN_CF_HEADER) == "ERR item exists"
    bad = bytearray(GOLDEN_CF_HEADER)
    bad[8] = 3                                    # 3 buckets: not a power of two
    assert err(raw, "CF.LOADCHUNK", "n", 1, bytes(bad)) == "Couldn't create filter!"
    assert err(raw, "CF.LOADCHUNK", "n", 129, b"x") == "ERR not found"
    assert err(raw, "CF.LOADCHUNK", "g", 2000, b"x") == "Couldn't load chunk!"
    assert not r.exists("n")


# ---------------------------------------------------------------------------
# RedisBloom's parameters
# ---------------------------------------------------------------------------

def test_parameters(start_server):
    s = start_server("--bf-error-rate", "0.5", "--bf-initial-size", "7", "--cf-initial-size", "8", *DEBUG)
    c = s.client(decode_responses=True)
    assert c.config_get("bf-*") == {"bf-error-rate": "0.25", "bf-initial-size": "7", "bf-expansion-factor": "2"}
    assert c.config_get("cf-*") == {"cf-bucket-size": "2", "cf-initial-size": "8", "cf-max-iterations": "20",
                                    "cf-expansion-factor": "1", "cf-max-expansions": "32"}
    raw = s.conn()
    try:
        def cfg_err(name, value):
            return raw.call("CONFIG", "SET", name, value).decode()
        prefix = "-ERR CONFIG SET failed (possibly related to argument '%s') - "
        assert cfg_err("bf-error-rate", "x") == prefix % "bf-error-rate" + "Invalid value for `bf-error-rate`\r\n"
        assert cfg_err("bf-error-rate", "1") == prefix % "bf-error-rate" + (
            "Value for `bf-error-rate` must be in the range (0.000000, 1.000000)\r\n")
        assert cfg_err("bf-initial-size", "0") == prefix % "bf-initial-size" + (
            "Value for `bf-initial-size` must be in the range [1, 1073741824]\r\n")
        assert cfg_err("cf-max-iterations", "1.5") == prefix % "cf-max-iterations" + (
            "Invalid value for `cf-max-iterations`\r\n")
        # cf-initial-size bounds cf-bucket-size, and the other way round
        assert cfg_err("cf-bucket-size", "5") == prefix % "cf-bucket-size" + (
            "Value for `cf-bucket-size` must be in the range [1, 4]\r\n")
        assert c.config_set("cf-bucket-size", "4")
        assert cfg_err("cf-initial-size", "6") == prefix % "cf-initial-size" + (
            "Value for `cf-initial-size` must be in the range [8, 1073741824]\r\n")
        assert raw.call("CF.INSERT", "x", "CAPACITY", "6", "ITEMS", "a") == (
            b"-Capacity must be in the range [cf-bucket-size * 2, 1073741824]\r\n")
        assert raw.call("CF.RESERVE", "x", "100", "BUCKETSIZE", "5") == (
            b"-BUCKETSIZE: value must be in the range [1, 4]\r\n")
    finally:
        raw.close()
    # the filters BF.ADD and CF.ADD create take the parameters
    c.execute_command("BF.ADD", "b", "x")
    assert c.execute_command("BF.DEBUG", "b") == [
        # (ceil(ln 2 * bpe) is 4 here, as RedisBloom computes it)
        "size:1", "bytes:8 bits:64 hashes:4 hashwidth:64 capacity:7 size:1 ratio:0.125"]
    c.execute_command("CF.ADD", "c", "x")
    assert c.execute_command("CF.DEBUG", "c") == (
        "bktsize:4 buckets:2 items:1 deletes:0 filters:1 max_iterations:20 expansion:1")
    assert c.config_set("bf-expansion-factor", "0")
    c.execute_command("BF.ADD", "n", "x")
    assert c.execute_command("BF.INFO", "n", "EXPANSION") == [None]
    assert c.execute_command("BF.DEBUG", "n")[1].endswith("ratio:0.25")     # non-scaling: not halved
    assert c.config_set("cf-max-expansions", "1")
    with pytest.raises(ResponseError, match="Maximum expansions reached"):
        c.execute_command("CF.ADD", "c", "y")


# ---------------------------------------------------------------------------
# what the other commands and subsystems see
# ---------------------------------------------------------------------------

def test_type_encoding_copy_rename(r, raw):
    r.execute_command("BF.ADD", "b", "x")
    r.execute_command("CF.ADD", "c", "x")
    assert r.type("b") == b"MBbloom--"
    assert r.type("c") == b"MBbloomCF"
    assert r.object("encoding", "b") == b"raw"
    # SCAN's TYPE compares a module type's name without case, as Redis
    r.set("s", "x")
    assert r.scan(0, _type="MBbloom--")[1] == [b"b"]
    assert r.scan(0, _type="mbbloomcf")[1] == [b"c"]
    # DEBUG OBJECT's serializedlength: the module record (DUMP less its type byte and trailer)
    line = r.execute_command("DEBUG", "OBJECT", "c")
    assert b"serializedlength:%d " % (len(r.dump("c")) - 11) in line, line
    assert r.memory_usage("b") >= 240 and r.memory_usage("c") >= 1080
    assert r.copy("b", "b2") and r.copy("c", "c2")
    r.execute_command("BF.ADD", "b2", "y")
    r.execute_command("CF.DEL", "c2", "x")
    assert r.execute_command("BF.EXISTS", "b", "y") == 0           # a deep copy
    assert r.execute_command("CF.EXISTS", "c", "x") == 1
    assert r.rename("b", "b3")
    assert r.execute_command("BF.EXISTS", "b3", "x") == 1
    assert err(raw, "CF.ADD", "b3", "x").startswith("WRONGTYPE")
    assert err(raw, "BF.ADD", "c", "x").startswith("WRONGTYPE")


def test_module_list_acl_and_command_info(r, raw):
    mods = [dict(zip(m[::2], m[1::2])) for m in r.execute_command("MODULE", "LIST")]
    assert {b"name": b"bf", b"ver": 81000, b"path": b"/usr/local/lib/redis/modules//redisbloom.so",
            b"args": []} in mods
    cats = r.execute_command("ACL", "CAT")
    assert cats.index(b"json") < cats.index(b"bloom") < cats.index(b"cuckoo")
    assert b"bf.add" in r.execute_command("ACL", "CAT", "bloom")
    assert b"cf.del" in r.execute_command("ACL", "CAT", "cuckoo")
    info = r.execute_command("COMMAND", "INFO", "BF.ADD", "CF.EXISTS", "BF.RESERVE", "CF.INFO")
    assert info["bf.add"]["arity"] == 3 and info["bf.add"]["flags"] == ["write", "denyoom", "module"]
    assert info["cf.exists"]["flags"] == ["readonly", "module", "fast"]     # Redis's flag order
    assert info["cf.info"]["tips"] == [b"dont_cache"]
    # exactly the categories RedisBloom gives (a module command gets none implied)
    for name, cats in (("BF.ADD", [b"@write", b"@bloom"]), ("BF.RESERVE", [b"@write", b"@fast", b"@bloom"]),
                       ("CF.EXISTS", [b"@read", b"@cuckoo"]), ("CF.INFO", [b"@read", b"@fast", b"@cuckoo"])):
        assert raw.call_value("COMMAND", "INFO", name)[0][6] == cats
    assert raw.call("COMMAND", "GETKEYS", "BF.INSERT", "k", "ITEMS", "a", "b") == b"*1\r\n$1\r\nk\r\n"
    r.execute_command("ACL", "SETUSER", "u", "on", ">p", "~*", "+@all", "-@bloom")
    assert r.execute_command("ACL", "DRYRUN", "u", "BF.ADD", "k", "x").startswith(b"User u has no permissions")
    assert r.execute_command("ACL", "DRYRUN", "u", "CF.ADD", "k", "x") == b"OK"
    r.execute_command("ACL", "DELUSER", "u")


def test_multi_and_scripts(r):
    p = r.pipeline(transaction=True)
    p.execute_command("BF.ADD", "b", "x")
    p.execute_command("BF.EXISTS", "b", "x")
    p.execute_command("CF.ADD", "c", "x")
    p.execute_command("CF.COUNT", "c", "x")
    assert p.execute() == [1, 1, 1, 1]
    assert r.eval("return redis.call('BF.MADD', KEYS[1], 'x', 'y')", 1, "b") == [0, 1]
    assert r.eval("return redis.call('CF.INSERTNX', KEYS[1], 'ITEMS', 'x', 'z')", 1, "c") == [0, 1]
    # WATCH sees the write
    with r.pipeline(transaction=True) as p:
        p.watch("b")
        r.execute_command("BF.ADD", "b", "w")
        p.multi()
        p.get("x")
        with pytest.raises(WatchError):
            p.execute()


# ---------------------------------------------------------------------------
# persistence
# ---------------------------------------------------------------------------

def _payload(name, encver, items) -> bytes:
    body = b"\x07" + enc_len(module_id(name, encver))
    for kind, v in items:
        if kind == "u":
            body += enc_len(2) + enc_len(v)
        elif kind == "d":
            body += enc_len(4) + struct.pack("<d", v)
        else:
            body += enc_len(5) + enc_string(v, False)
    data = body + enc_len(0) + (10).to_bytes(2, "little")
    return data + crc64(data).to_bytes(8, "little")


def _bf_items(r, key):
    """The RDB items RedisBloom's BFRdbSave writes, built from the header."""
    hdr = r.execute_command("BF.SCANDUMP", key, 0)[1]
    size, nf, opts, growth = struct.unpack_from("<QIII", hdr)
    items = [("u", size), ("u", nf), ("u", opts), ("u", growth)]
    it = 1
    for i in range(nf):
        nbytes, bits, lsize, error, bpe, hashes, entries, n2 = struct.unpack_from("<QQQddIQB", hdr, 20 + 53 * i)
        bf = b""
        while len(bf) < nbytes:
            it, data = r.execute_command("BF.SCANDUMP", key, it)
            bf += data
        items += [("u", entries), ("d", error), ("u", hashes), ("d", bpe), ("u", bits), ("u", n2),
                  ("s", bf), ("u", lsize)]
    return items


def test_dump_restore_bloom_layout(r):
    r.execute_command("BF.RESERVE", "b", "0.01", "20")
    pipe_all(r, [("BF.ADD", "b", "i%d" % i) for i in range(50)])
    items = _bf_items(r, "b")
    # RedisBloom's record, MBbloom-- encoding version 4 (with compression
    # off: the bit arrays here are short enough that LZF is not tried either)
    payload = r.dump("b")
    assert payload[:10] == b"\x07\x81" + module_id("MBbloom--", 4).to_bytes(8, "big")
    assert r.restore("b2", 0, _payload("MBbloom--", 4, items)) == b"OK"
    assert r.execute_command("BF.DEBUG", "b2") == r.execute_command("BF.DEBUG", "b")
    assert r.restore("b3", 0, payload) == b"OK"
    assert r.execute_command("DEBUG", "DIGEST-VALUE", "b3") == r.execute_command("DEBUG", "DIGEST-VALUE", "b")
    # encoding version 2 had no growth (read as 2)
    v2 = items[:3] + items[4:]
    assert r.restore("b4", 0, _payload("MBbloom--", 2, v2)) == b"OK"
    assert r.execute_command("BF.INFO", "b4", "EXPANSION") == [2]
    assert r.execute_command("BF.EXISTS", "b4", "i7") == 1
    # a bit array shorter than its bits is refused
    bad = list(items)
    bad[10] = ("s", items[10][1][:-8])
    with pytest.raises(ResponseError, match="Bad data format"):
        r.restore("bad", 0, _payload("MBbloom--", 4, bad))
    assert not r.exists("bad")


def test_dump_restore_cuckoo_layout(r):
    r.execute_command("CF.RESERVE", "c", "8", "BUCKETSIZE", "2", "EXPANSION", "2")
    pipe_all(r, [("CF.ADD", "c", "i%d" % i) for i in range(20)])
    hdr = r.execute_command("CF.SCANDUMP", "c", 0)[1]
    items_n, buckets, deletes, nf, bs, maxit, exp = struct.unpack("<QQQQHHH", hdr)
    subs, pos = [], 1
    while True:
        pos, data = r.execute_command("CF.SCANDUMP", "c", pos)
        if pos == 0:
            break
        subs.append(data)
    items = [("u", nf), ("u", buckets), ("u", items_n), ("u", deletes), ("u", bs), ("u", maxit), ("u", exp)]
    for data in subs:
        items += [("u", len(data) // bs), ("s", data)]
    assert r.dump("c")[:10] == b"\x07\x81" + module_id("MBbloomCF", 4).to_bytes(8, "big")
    assert r.restore("c2", 0, _payload("MBbloomCF", 4, items)) == b"OK"
    assert r.execute_command("CF.DEBUG", "c2") == r.execute_command("CF.DEBUG", "c")
    assert r.execute_command("DEBUG", "DIGEST-VALUE", "c2") == r.execute_command("DEBUG", "DIGEST-VALUE", "c")
    assert r.restore("c3", 0, r.dump("c")) == b"OK"
    assert r.execute_command("CF.COUNT", "c3", "i3") >= 1


def _fill(c):
    c.execute_command("BF.RESERVE", "b", "0.001", "30")
    pipe_all(c, [("BF.ADD", "b", "i%d" % i) for i in range(100)])
    c.execute_command("CF.RESERVE", "c", "16", "EXPANSION", "2")
    pipe_all(c, [("CF.ADD", "c", "i%d" % i) for i in range(60)])
    c.execute_command("CF.DEL", "c", "i5")


def _snapshot(c):
    return (c.execute_command("BF.DEBUG", "b"), c.execute_command("CF.DEBUG", "c"),
            c.execute_command("DEBUG", "DIGEST-VALUE", "b", "c"))


def test_debug_reload(r):
    _fill(r)
    before = _snapshot(r)
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    assert _snapshot(r) == before


DEBUG = ("--enable-debug-command", "yes")
AOF_DEBUG = AOF + DEBUG


def test_aof_rewrite_and_restart(start_server):
    s = start_server(*AOF_DEBUG)
    c = s.client()
    _fill(c)
    c.expire("c", 1000)
    rewrite_aof(c)
    c.execute_command("BF.ADD", "b", "after")                       # in the incr file
    c.execute_command("CF.ADD", "c", "after")
    before = _snapshot(c)
    s.stop()
    data = aof_base(s)
    # RedisBloom's aof_rewrite: the header, then the chunks, as LOADCHUNKs
    assert b"$12\r\nBF.LOADCHUNK\r\n$1\r\nb\r\n$1\r\n1\r\n" in data
    assert b"$12\r\nCF.LOADCHUNK\r\n$1\r\nc\r\n$1\r\n1\r\n" in data
    s2 = restart(start_server, s, *AOF_DEBUG)
    c2 = s2.client()
    assert _snapshot(c2) == before
    assert 0 < c2.ttl("c") <= 1000 and c2.ttl("b") == -1


def test_rdb_restart(start_server):
    rdb_restart(start_server, _fill, _snapshot, *DEBUG)


def test_replica_stream(start_server):
    master = start_server(*DEBUG)
    m = master.client()
    m.execute_command("BF.ADD", "b", "x")
    s = start_server(*DEBUG)
    rep = s.client()
    follow(rep, master)
    wait_until(lambda: rep.exists("b"), what="the payload")
    _fill_more = [("BF.MADD", "b", "y", "z"), ("CF.INSERT", "c", "ITEMS", "a", "b"), ("CF.DEL", "c", "a"),
                  ("BF.INSERT", "n", "CAPACITY", "5", "ITEMS", "q"), ("SET", "done", "1")]
    for cmd in _fill_more:
        m.execute_command(*cmd)
    wait_until(lambda: rep.exists("done"), what="the stream")
    for k in ("b", "c", "n"):
        assert rep.execute_command("DEBUG", "DIGEST-VALUE", k) == m.execute_command("DEBUG", "DIGEST-VALUE", k)


# ---------------------------------------------------------------------------
# bad input: refused with RedisBloom's errors, never an internal error
# ---------------------------------------------------------------------------

def _no_internal(reply: bytes):
    assert b"internal error" not in reply, reply


def _claimed_bytes(bloom: bool, hdr: bytes) -> int:
    """What a SCANDUMP header asks to allocate."""
    if bloom:
        nf = struct.unpack_from("<I", hdr, 8)[0]
        if len(hdr) != 20 + 53 * nf:
            return 0
        return sum(struct.unpack_from("<Q", hdr, 20 + 53 * i)[0] for i in range(nf))
    _items, buckets, _d, nf, bs, _m, exp = struct.unpack("<QQQQHHH", hdr)
    nf &= 0xFFFF
    if exp > 1 and nf > 64:
        return 1 << 62
    return buckets * bs * (nf if exp <= 1 else sum(exp ** i for i in range(nf)))


def test_fuzzed_headers_chunks_and_records(r, raw):
    import random
    rnd = random.Random(1234)
    _bf_golden(r)
    bf_dump = r.dump("g")
    r.rename("g", "bg")
    _cf_golden(r)
    cf_dump = r.dump("g")
    cf_hdr = r.execute_command("CF.SCANDUMP", "g", 0)[1]
    loaded = restored = 0
    for n in range(300):
        # a header with a few bytes changed (sizes, counts, rates, NaN ...)
        hdr = bytearray(GOLDEN_BF_HEADER if n % 2 else cf_hdr)
        for _ in range(rnd.randint(1, 4)):
            hdr[rnd.randrange(len(hdr))] = rnd.randrange(256)
        cmd = "BF.LOADCHUNK" if n % 2 else "CF.LOADCHUNK"
        if _claimed_bytes(n % 2, bytes(hdr)) > 1 << 26:
            continue        # valid perhaps, but more memory than a test should take
        reply = raw.call(cmd, "f%d" % n, 1, bytes(hdr))
        _no_internal(reply)
        if reply == b"+OK\r\n":
            loaded += 1
            # what loads must work (or answer RedisBloom's errors)
            for c in (("BF.ADD", "f%d" % n, "x"), ("BF.EXISTS", "f%d" % n, "y"), ("BF.DEBUG", "f%d" % n),
                      ("CF.ADD", "f%d" % n, "x"), ("CF.COUNT", "f%d" % n, "y"), ("CF.DEL", "f%d" % n, "x"),
                      ("CF.DEBUG", "f%d" % n), (cmd, "f%d" % n, rnd.randrange(1, 600), b"zz" * rnd.randrange(80))):
                _no_internal(raw.call(*c))
            raw.call("DEL", "f%d" % n)
        # chunks at random cursors into good filters
        _no_internal(raw.call("BF.LOADCHUNK", "bg", rnd.randrange(-5, 600), bytes(rnd.randrange(300))))
        _no_internal(raw.call("CF.LOADCHUNK", "g", rnd.randrange(-5, 900), bytes(rnd.randrange(300))))
        # RDB records with a byte changed (checksum fixed up so the decoder sees them)
        for payload in (bf_dump, cf_dump):
            data = bytearray(payload[:-8])
            data[rnd.randrange(10, len(data) - 2)] = rnd.randrange(256)
            data = bytes(data) + crc64(bytes(data)).to_bytes(8, "little")
            reply = raw.call("RESTORE", "rr", 0, data, "REPLACE")
            _no_internal(reply)
            if reply == b"+OK\r\n":
                restored += 1
                for c in (("BF.ADD", "rr", "x"), ("BF.INFO", "rr"), ("CF.ADD", "rr", "x"), ("CF.INFO", "rr"),
                          ("BF.SCANDUMP", "rr", 1), ("CF.SCANDUMP", "rr", 1)):
                    _no_internal(raw.call(*c))
    assert loaded > 20 and restored > 100, (loaded, restored)
    assert raw.call("PING") == b"+PONG\r\n"
    assert r.execute_command("BF.SCANDUMP", "bg", 0) == [1, GOLDEN_BF_HEADER]


def test_migrate(start_server):
    a, b = start_server(*DEBUG), start_server(*DEBUG)
    ca, cb = a.client(), b.client()
    _fill(ca)
    before = _snapshot(ca)
    assert ca.execute_command("MIGRATE", "127.0.0.1", b.port, "", 0, 5000, "KEYS", "b", "c") == b"OK"
    assert not ca.exists("b", "c")
    assert _snapshot(cb) == before


# ---------------------------------------------------------------------------
# properties against a model: no false negatives, counts never below the truth
# ---------------------------------------------------------------------------

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from("adde"), st.integers(0, 60)), min_size=1, max_size=150),
       st.sampled_from([(4, 1, 1), (8, 2, 2), (16, 4, 0), (64, 2, 1)]))
def test_cuckoo_model(raw, ops, shape):
    capacity, bucket_size, expansion = shape
    raw.call("DEL", "m")
    raw.call("CF.RESERVE", "m", capacity, "BUCKETSIZE", bucket_size, "EXPANSION", expansion, "MAXITERATIONS", 5)
    model = {}
    for op, n in ops:
        item = "i%d" % n
        if op in "ad":                        # add (twice as likely as a delete)
            reply = raw.call("CF.ADD", "m", item)
            if reply == b":1\r\n":
                model[item] = model.get(item, 0) + 1
            else:
                assert reply == b"-Filter is full\r\n" and expansion == 0
        elif model.get(item):                  # delete only what was added
            assert raw.call("CF.DEL", "m", item) == b":1\r\n"
            model[item] -= 1
    for item, count in model.items():
        got = int(raw.call("CF.COUNT", "m", item)[1:-2])
        assert got >= count
        if count:
            assert raw.call("CF.EXISTS", "m", item) == b":1\r\n"
    assert b"items:%d " % sum(model.values()) in raw.call("CF.DEBUG", "m")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=20), min_size=1, max_size=200),
       st.sampled_from([(1, "0.1", 2), (5, "0.01", 1), (20, "0.001", 4), (3, "0.25", 3)]))
def test_bloom_model(raw, items, shape):
    capacity, error, expansion = shape
    raw.call("DEL", "m")
    raw.call("BF.RESERVE", "m", error, capacity, "EXPANSION", expansion)
    added = 0
    for item in items:
        reply = raw.call("BF.ADD", "m", item)
        added += reply == b":1\r\n"
    assert raw.call("BF.MEXISTS", "m", *items) == b"*%d\r\n" % len(items) + b":1\r\n" * len(items)
    assert raw.call("BF.CARD", "m") == b":%d\r\n" % added
