"""HyperLogLog commands: the stored string must be byte-identical to
redis-server's for the same commands (sparse opcodes, promotion to dense,
cached cardinality), HLLs written by redis-server must work here, and
errors, notifications and propagation follow Redis 7.0."""

from __future__ import annotations

import random

import pytest
import redis
from support.config import overrides
from support.notify import events_of
from support.replication import same_stream
from support.resp import RespConn
from support.servers import port_of

from ophidis.types import hll

NOT_HLL = "WRONGTYPE Key is not a valid HyperLogLog string value."
INVALID = "INVALIDOBJ Corrupted HLL object detected"
EMPTY_HLL = b"HYLL\x01\x00\x00\x00" + b"\x00" * 8 + b"\x7f\xff"
EMPTY_HLL_STALE = EMPTY_HLL[:15] + b"\x80" + EMPTY_HLL[16:]


def _call(client, *args):
    try:
        return client.execute_command(*args)
    except redis.ResponseError as e:
        return ("error", str(e))


def _both(r, ref, *args):
    ours = _call(r, *args)
    theirs = _call(ref, *args)
    assert ours == theirs, (args[:3], ours, theirs)
    return ours


def _same_values(r, ref, keys):
    for k in keys:
        assert r.get(k) == ref.get(k), k


def _elements(rng, n):
    kinds = [
        lambda: str(rng.random()),
        lambda: "e%d" % rng.randrange(1 << 20),
        lambda: rng.randbytes(rng.randrange(0, 40)),
        lambda: "",
    ]
    return [rng.choice(kinds)() for _ in range(n)]


# ---------------------------------------------------------------------------
# Format
# ---------------------------------------------------------------------------
def test_pfadd_creates_sparse_hll_in_redis_format(r):
    assert r.pfadd("h") == 1
    # One XZERO opcode for all 16384 registers; the cached cardinality is
    # marked stale (bit 7 of byte 15).
    assert r.get("h") == EMPTY_HLL_STALE
    assert r.execute_command("PFDEBUG", "ENCODING", "h") == b"sparse"
    assert r.execute_command("PFDEBUG", "DECODE", "h") == b"Z:16384"
    assert r.pfcount("h") == 0
    assert r.get("h") == EMPTY_HLL
    assert r.pfadd("h") == 0
    assert r.object("encoding", "h") == b"raw"


def test_known_element_registers(r):
    # MurmurHash64A with seed 0xadc83b19 puts "a" in register 12711 with
    # a value of 2 and "hello" in register 9216 with a value of 1.
    r.pfadd("h", "a")
    assert r.execute_command("PFDEBUG", "DECODE", "h") == b"Z:12711 v:2,1 Z:3672"
    r.pfadd("h", "hello")
    assert r.execute_command("PFDEBUG", "DECODE", "h") == b"Z:9216 v:1,1 Z:3494 v:2,1 Z:3672"
    assert r.get("h")[16:] == b"\x63\xff\x80\x4d\xa5\x84\x4e\x57"
    regs = r.execute_command("PFDEBUG", "GETREG", "h")
    assert len(regs) == 16384
    assert [(i, v) for i, v in enumerate(regs) if v] == [(9216, 1), (12711, 2)]
    assert r.execute_command("PFDEBUG", "ENCODING", "h") == b"dense"
    assert len(r.get("h")) == 16 + 12288


def test_sparse_bytes_match_redis_step_by_step(r, ref):
    rng = random.Random(1)
    for max_bytes in (3000, 300, 40):
        with overrides(r, hll_sparse_max_bytes=max_bytes), overrides(ref, hll_sparse_max_bytes=max_bytes):
            for k in ("a", "b"):
                r.delete(k)
                ref.delete(k)
            for _ in range(120):
                k = rng.choice("ab")
                els = _elements(rng, rng.choice([1, 1, 3, 20]))
                _both(r, ref, "PFADD", k, *els)
                if rng.random() < 0.3:
                    _both(r, ref, "PFCOUNT", k)
                _same_values(r, ref, "ab")
                enc = _both(r, ref, "PFDEBUG", "ENCODING", k)
                if enc == b"sparse":
                    _both(r, ref, "PFDEBUG", "DECODE", k)


def _fill_both(r, ref, rng, n, batch):
    """The key h made anew on both servers with n random elements, added
    ``batch`` at a time, the two values compared after each PFADD."""
    r.delete("h")
    ref.delete("h")
    els = _elements(rng, n)
    for i in range(0, n, batch):
        _both(r, ref, "PFADD", "h", *els[i:i + batch])
        _same_values(r, ref, ["h"])


def test_big_batches_promote_like_redis(r, ref):
    rng = random.Random(2)
    for n in (100, 1000, 5000, 20000):
        _fill_both(r, ref, rng, n, 997)
        assert _both(r, ref, "PFCOUNT", "h") > 0
        _same_values(r, ref, ["h"])
    assert r.execute_command("PFDEBUG", "ENCODING", "h") == b"dense"
    assert len(r.get("h")) == 16 + 12288


def test_long_sparse_values_match_redis(r, ref):
    # With a high hll-sparse-max-bytes most registers end up in runs of
    # adjacent VAL opcodes: the split and merge rules all get exercised.
    rng = random.Random(7)
    with overrides(r, hll_sparse_max_bytes=60000), overrides(ref, hll_sparse_max_bytes=60000):
        for n in (3000, 12000, 30000):
            _fill_both(r, ref, rng, n, 1500)
            assert r.execute_command("PFDEBUG", "ENCODING", "h") == b"sparse"
            _both(r, ref, "PFCOUNT", "h")
            _both(r, ref, "PFMERGE", "h2", "h")
            _same_values(r, ref, ["h", "h2"])


def test_promotion_boundary_one_element_at_a_time(r, ref):
    rng = random.Random(8)
    for max_bytes in range(18, 48):
        with overrides(r, hll_sparse_max_bytes=max_bytes), overrides(ref, hll_sparse_max_bytes=max_bytes):
            r.delete("h")
            ref.delete("h")
            while True:
                _both(r, ref, "PFADD", "h", "x%d" % rng.randrange(1 << 30))
                _same_values(r, ref, ["h"])
                if r.execute_command("PFDEBUG", "ENCODING", "h") == b"dense":
                    break


def _pack_dense(regs):
    bits = 0
    for i, v in enumerate(regs):
        bits |= v << (6 * i)
    return b"HYLL\x00\x00\x00\x00" + b"\x00" * 7 + b"\x80" + bits.to_bytes(12288, "little")


def test_estimator_on_crafted_dense_values(r, ref):
    rng = random.Random(9)
    shapes = [
        lambda: rng.randrange(64),
        lambda: min(63, int(rng.expovariate(0.3))),
        lambda: rng.choice([0, 0, 0, 1, 2, 50, 51]),
        lambda: rng.choice([49, 50, 51, 52, 63]),
        lambda: 51,
        lambda: 0,
        lambda: rng.choice([0, 1]),
    ]
    for shape in shapes:
        value = _pack_dense([shape() for _ in range(16384)])
        for c in (r, ref):
            c.set("d", value)
        _both(r, ref, "PFCOUNT", "d")
        _both(r, ref, "PFCOUNT", "d", "nokey")
        _both(r, ref, "PFDEBUG", "GETREG", "d")
        _same_values(r, ref, ["d"])


def test_sparse_max_bytes_zero_promotes_on_first_add(r, ref):
    with overrides(r, hll_sparse_max_bytes=0), overrides(ref, hll_sparse_max_bytes=0):
        _both(r, ref, "PFADD", "h")
        assert r.execute_command("PFDEBUG", "ENCODING", "h") == b"sparse"
        _both(r, ref, "PFADD", "h", "x")
        assert r.execute_command("PFDEBUG", "ENCODING", "h") == b"dense"
        _same_values(r, ref, ["h"])


def test_cardinality_estimates_match_redis(r, ref):
    rng = random.Random(3)
    total = 0
    for step in (1, 9, 90, 900, 9000, 40000):
        els = ["x%d" % (total + i) for i in range(step)]
        total += step
        for i in range(0, step, 5000):
            _both(r, ref, "PFADD", "h", *els[i:i + 5000])
        card = _both(r, ref, "PFCOUNT", "h")
        assert abs(card - total) <= max(2, total * 0.05)
    _same_values(r, ref, ["h"])
    # multi-key union and a repeated key
    r.pfadd("g", *["x%d" % i for i in range(0, 60000, 3)])
    ref.pfadd("g", *["x%d" % i for i in range(0, 60000, 3)])
    _both(r, ref, "PFCOUNT", "h", "g", "missing", "h")
    del rng


# ---------------------------------------------------------------------------
# Cached cardinality
# ---------------------------------------------------------------------------
def test_cached_cardinality_in_header(r, ref):
    for c in (r, ref):
        c.pfadd("h", "a", "b", "c")
        assert c.getrange("h", 15, 15) == b"\x80"
        assert c.pfcount("h") == 3
        assert c.getrange("h", 8, 15) == b"\x03" + b"\x00" * 7
        assert c.pfadd("h", "a", "b", "c") == 0
        assert c.getrange("h", 15, 15) == b"\x00"
        assert c.pfadd("h", "1", "2", "3") == 1
        assert c.getrange("h", 15, 15) == b"\x80"
    _same_values(r, ref, ["h"])


def test_valid_cached_value_is_returned_as_is(r, ref):
    for c in (r, ref):
        c.pfadd("h", "a", "b", "c")
        c.pfcount("h")
        # A (bogus) valid cached cardinality is trusted, as Redis does.
        c.setrange("h", 8, b"\x39\x05")
    assert _both(r, ref, "PFCOUNT", "h") == 0x0539
    for c in (r, ref):
        c.setrange("h", 15, b"\x80")          # stale again: recomputed
    assert _both(r, ref, "PFCOUNT", "h") == 3
    _same_values(r, ref, ["h"])


def test_dense_cache_after_many_updates(r, ref):
    rng = random.Random(4)
    for c in (r, ref):
        c.pfadd("h", *["p%d" % i for i in range(5000)])
    for _ in range(30):
        els = _elements(rng, rng.choice([1, 10, 100]))
        _both(r, ref, "PFADD", "h", *els)
        _both(r, ref, "PFCOUNT", "h")
        _same_values(r, ref, ["h"])
    # Values changed behind the HLL commands' back are seen.
    for c in (r, ref):
        c.setrange("h", 100, b"\xff\xff")
        c.setrange("h", 15, b"\x80")
    _both(r, ref, "PFCOUNT", "h")
    _both(r, ref, "PFADD", "h", "zz", "yy")
    _both(r, ref, "PFCOUNT", "h")
    _same_values(r, ref, ["h"])


# ---------------------------------------------------------------------------
# Values written by redis-server
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 5, 300, 3000])
def test_hll_from_redis_server_via_set_and_restore(r, ref, n):
    els = ["v%d" % i for i in range(n)]
    ref.pfadd("src", *els)
    ref.pfadd("other", "v1", "w1", "w2")
    raw = ref.get("src")
    r.set("src", raw)
    r.restore("other", 0, ref.dump("other"))
    assert r.get("other") == ref.get("other")
    assert _both(r, ref, "PFCOUNT", "src") == ref.pfcount("src")
    more = ["m%d" % i for i in range(50)]
    _both(r, ref, "PFADD", "src", *more)
    _same_values(r, ref, ["src"])
    _both(r, ref, "PFMERGE", "dst", "src", "other")
    _same_values(r, ref, ["dst"])
    _both(r, ref, "PFCOUNT", "src", "other")
    _both(r, ref, "PFCOUNT", "dst")
    _same_values(r, ref, ["src", "dst", "other"])
    # Our HLL loads in redis-server too.
    ref.restore("back", 0, r.dump("dst"))
    assert ref.get("back") == r.get("dst")


def test_pfcount_makes_embstr_raw(r, ref):
    for c in (r, ref):
        c.pfadd("src")
        v = c.get("src")
        c.set("h", v)
        assert c.object("encoding", "h") == b"embstr"
        c.pfcount("h")
        assert c.object("encoding", "h") == b"raw"


# ---------------------------------------------------------------------------
# PFMERGE
# ---------------------------------------------------------------------------
def test_pfmerge_matches_redis(r, ref):
    rng = random.Random(5)
    keys = ["k%d" % i for i in range(5)]
    for _ in range(60):
        op = rng.random()
        k = rng.choice(keys)
        if op < 0.5:
            _both(r, ref, "PFADD", k, *_elements(rng, rng.choice([1, 10, 200, 2000])))
        elif op < 0.8:
            _both(r, ref, "PFMERGE", k, *rng.sample(keys, rng.randrange(0, 4)))
        elif op < 0.9:
            _both(r, ref, "PFCOUNT", *rng.sample(keys, 3))
        else:
            _both(r, ref, "DEL", k)
        _same_values(r, ref, keys)


def test_pfmerge_into_existing_and_new_keys(r, ref):
    for c in (r, ref):
        c.pfadd("a", "x", "y")
        c.pfadd("b", "y", "z")
        c.pfadd("dense", *["d%d" % i for i in range(3000)])
    _both(r, ref, "PFMERGE", "a", "b")            # into an existing source
    _both(r, ref, "PFMERGE", "empty", "nokey")     # creates an empty HLL
    _both(r, ref, "PFMERGE", "b", "dense")         # sparse dest becomes dense
    _both(r, ref, "PFMERGE", "c")                  # only the destination
    _same_values(r, ref, ["a", "b", "empty", "c"])
    assert r.get("empty") == EMPTY_HLL_STALE
    assert r.execute_command("PFDEBUG", "ENCODING", "b") == b"dense"
    assert _both(r, ref, "PFCOUNT", "a") == 3


def test_pfmerge_sparse_destination_promoted_midway(r, ref):
    with overrides(r, hll_sparse_max_bytes=200), overrides(ref, hll_sparse_max_bytes=200):
        for c in (r, ref):
            c.pfadd("s1", *["a%d" % i for i in range(40)])
            c.pfadd("s2", *["b%d" % i for i in range(40)])
        _both(r, ref, "PFMERGE", "d", "s1", "s2")
        _same_values(r, ref, ["s1", "s2", "d"])


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------
def test_type_errors(r, ref):
    for c in (r, ref):
        c.set("str", "not an hll")
        c.rpush("list", "x")
        c.set("int", 12345)
    for args in (("PFADD", "str", "a"), ("PFCOUNT", "str"), ("PFCOUNT", "h", "str"),
                 ("PFMERGE", "d", "str"), ("PFMERGE", "str", "d"), ("PFADD", "int"),
                 ("PFDEBUG", "GETREG", "str")):
        assert _both(r, ref, *args) == ("error", NOT_HLL)
    wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value"
    for args in (("PFADD", "list", "a"), ("PFCOUNT", "list"), ("PFMERGE", "d", "list"),
                 ("PFCOUNT", "list", "x")):
        assert _both(r, ref, *args) == ("error", wrongtype)
    assert not r.exists("d")


def test_header_checks(r, ref):
    for c in (r, ref):
        c.pfadd("h", "a", "b")
        c.setrange("h", 0, "0123")
    assert _both(r, ref, "PFCOUNT", "h") == ("error", NOT_HLL)
    for c in (r, ref):
        c.delete("h")
        c.pfadd("h", "a", "b")
        c.setrange("h", 4, "x")
    assert _both(r, ref, "PFCOUNT", "h") == ("error", NOT_HLL)
    for c in (r, ref):
        c.delete("h")
        c.pfadd("h", "a", "b")
        c.setrange("h", 4, "\x00")          # says dense, has a sparse length
    assert _both(r, ref, "PFCOUNT", "h") == ("error", NOT_HLL)
    for c in (r, ref):
        c.set("short", "HYLL\x01")
    assert _both(r, ref, "PFADD", "short", "x") == ("error", NOT_HLL)


def test_corrupted_sparse_is_detected(r, ref):
    for c in (r, ref):
        c.pfadd("h", "a", "b", "c")
        c.append("h", "hello")
    assert _both(r, ref, "PFCOUNT", "h") == ("error", INVALID)
    assert _both(r, ref, "PFCOUNT", "h", "h") == ("error", INVALID)
    assert _both(r, ref, "PFMERGE", "d", "h") == ("error", INVALID)
    assert _both(r, ref, "PFDEBUG", "TODENSE", "h") == ("error", INVALID)
    assert not r.exists("d")


def test_corruption_fuzz_matches_redis(r, ref):
    rng = random.Random(6)
    cmds = [("PFCOUNT", "h"), ("PFCOUNT", "h", "h"), ("PFMERGE", "d", "h"),
            ("PFDEBUG", "TODENSE", "h"), ("PFDEBUG", "DECODE", "h"), ("PFDEBUG", "GETREG", "h")]
    for _ in range(150):
        for c in (r, ref):
            c.delete("h", "d")
        els = _elements(rng, rng.randrange(1, 2000))
        _both(r, ref, "PFADD", "h", *els)
        for _ in range(rng.randrange(1, 4)):
            pos = rng.randrange(ref.strlen("h"))
            byte = bytes([rng.randrange(256)])
            _both(r, ref, "SETRANGE", "h", pos, byte)
        cmd = rng.choice(cmds + [("PFADD", "h", *_elements(rng, 5))])
        _both(r, ref, *cmd)
        _same_values(r, ref, ["h", "d"])
    assert r.ping()


def _raw_both(r, ref, *args):
    ours = RespConn(port_of(r))
    theirs = RespConn(port_of(ref))
    try:
        a = ours.call(*args)
        assert a == theirs.call(*args), args
        return a
    finally:
        ours.close()
        theirs.close()


def test_pfdebug(r, ref):
    assert _raw_both(r, ref, "PFDEBUG", "GETREG", "nokey") == b"-ERR The specified key does not exist\r\n"
    for c in (r, ref):
        c.pfadd("h", "a", "b", "c", "d")
    assert _raw_both(r, ref, "PFDEBUG", "foo", "h") == b"-ERR Unknown PFDEBUG subcommand 'foo'\r\n"
    assert _raw_both(r, ref, "PFDEBUG", "foo", "nokey") == b"-ERR The specified key does not exist\r\n"
    _both(r, ref, "PFDEBUG", "DECODE", "h")
    assert _both(r, ref, "PFDEBUG", "TODENSE", "h") == 1
    assert _both(r, ref, "PFDEBUG", "TODENSE", "h") == 0
    assert _raw_both(r, ref, "PFDEBUG", "DECODE", "h") == b"-ERR HLL encoding is not sparse\r\n"
    assert _raw_both(r, ref, "PFDEBUG", "ENCODING", "h") == b"+dense\r\n"
    _same_values(r, ref, ["h"])
    regs = _both(r, ref, "PFDEBUG", "GETREG", "h")
    assert sum(1 for x in regs if x) == 4
    for c in (r, ref):
        c.pfadd("s", "q")
    _both(r, ref, "PFDEBUG", "GETREG", "s")     # converts to dense
    assert r.execute_command("PFDEBUG", "ENCODING", "s") == b"dense"
    _same_values(r, ref, ["s"])
    assert _raw_both(r, ref, "PFDEBUG", "GETREG") == \
        b"-ERR wrong number of arguments for 'pfdebug' command\r\n"


def test_error_lines_are_exact(r, ref):
    for c in (r, ref):
        c.set("str", "x" * 20)
        c.pfadd("h", "a")
        c.append("h", "junk")
    assert _raw_both(r, ref, "PFADD", "str", "a") == \
        b"-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n"
    assert _raw_both(r, ref, "PFCOUNT", "h") == b"-INVALIDOBJ Corrupted HLL object detected\r\n"
    assert _raw_both(r, ref, "PFADD") == b"-ERR wrong number of arguments for 'pfadd' command\r\n"


def test_pfselftest(r):
    assert r.execute_command("PFSELFTEST") == b"OK"


def test_resp3_replies(r, ref):
    for c in (r, ref):
        c.pfadd("h", "a", "b", "c")
    ours = RespConn(port_of(r))
    theirs = RespConn(port_of(ref))
    try:
        for c in (ours, theirs):
            c.call("HELLO", "3")
        for args in (("PFADD", "h", "z"), ("PFCOUNT", "h"), ("PFCOUNT", "h", "nokey"),
                     ("PFMERGE", "d", "h"), ("PFDEBUG", "ENCODING", "d"), ("PFDEBUG", "DECODE", "d"),
                     ("PFCOUNT", "nokey"), ("PFADD", "nokey2")):
            assert ours.call(*args) == theirs.call(*args), args
    finally:
        ours.close()
        theirs.close()


# ---------------------------------------------------------------------------
# Notifications and propagation
# ---------------------------------------------------------------------------
def test_keyspace_notifications(r):
    got = events_of(r, [
        ["PFADD", "h", "a"],
        ["PFADD", "h", "a"],          # no change: no event
        ["PFCOUNT", "h"],             # never an event
        ["PFMERGE", "m", "h"],
        ["PFMERGE", "m", "h"],        # always an event
    ])
    assert got == [
        (b"__keyspace@0__:h", b"pfadd"), (b"__keyevent@0__:pfadd", b"h"),
        (b"__keyspace@0__:m", b"pfadd"), (b"__keyevent@0__:pfadd", b"m"),
        (b"__keyspace@0__:m", b"pfadd"), (b"__keyevent@0__:pfadd", b"m"),
    ]


def test_replication_stream_matches_redis(server, r, redis_server, ref, config):
    def workload(c):
        c.pfadd("h", "a", "b")
        c.pfcount("h")               # stale cache: written back, propagated
        c.pfcount("h")               # cached: read only
        c.pfadd("h", "a")            # no change: not propagated
        c.pfcount("h", "nokey")      # union: read only
        c.pfmerge("m", "h")
        c.execute_command("PFDEBUG", "TODENSE", "m")
        c.execute_command("PFDEBUG", "ENCODING", "m")
        c.set("last", "1")

    ours = same_stream(server, r, redis_server, ref, config, workload)
    assert [b"pfcount", b"h"] in ours and ours.count([b"pfcount", b"h"]) == 1


def test_batch_hashing_equals_one_by_one():
    """pat_lens (all elements of one length hashed at once in the lanes of
    big integers) gives what MurmurHash64A gives element by element."""
    rng = random.Random(10)
    # MurmurHash64A("a") = known value (seed 0xadc83b19), register 12711, run 2
    assert hll.pat_len(b"a") == (12711, 2)
    assert hll.pat_len(bytes(range(256)) * 4) == (3972, 1)     # as redis-server
    for n in (24, 25, 100, 3000):
        els = [rng.randbytes(rng.choice([0, 1, 7, 8, 9, 16, 17, 18, 19, 63, 64, 65, 200]))
               for _ in range(n)]
        assert hll.pat_lens(els) == [hll.pat_len(e) for e in els]


def _xzero(n):
    n -= 1
    return bytes([0x40 | (n >> 8), n & 0xFF])


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_val_split_at_the_promotion_boundary(r, ref, where):
    """A hand-made sparse HLL with a run of 4 registers of value 1 around
    the register of an element whose run length is 2: splitting the run
    needs 1 or 2 more bytes, exactly at or just past hll-sparse-max-bytes."""
    i = 0
    while True:
        ele = b"e%d" % i
        reg, cnt = hll.pat_len(ele)
        if cnt >= 2 and 4 <= reg < 16000:
            break
        i += 1
    first = {"first": reg, "middle": reg - 1, "last": reg - 3}[where]
    body = _xzero(first) + bytes([0x80 | (0 << 2) | 3]) + _xzero(16384 - first - 4)
    value = b"HYLL\x01\x00\x00\x00" + b"\x00" * 7 + b"\x80" + body
    delta = 2 if where == "middle" else 1
    for max_bytes in (len(value) + delta - 1, len(value) + delta):
        with overrides(r, hll_sparse_max_bytes=max_bytes), overrides(ref, hll_sparse_max_bytes=max_bytes):
            for c in (r, ref):
                c.set("h", value)
            assert _both(r, ref, "PFADD", "h", ele) == 1
            _same_values(r, ref, ["h"])
            _both(r, ref, "PFDEBUG", "ENCODING", "h")
