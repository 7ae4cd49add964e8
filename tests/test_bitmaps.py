"""Bitmap commands and LCS: exact replies and errors, and differential
tests against a real Redis 7.0 with random inputs."""

from __future__ import annotations

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.clients import outcomes

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def same(a, b, *args):
    x, y = outcomes(a, b, *args)
    assert x == y, args
    return x


def test_setbit_getbit_basics(r):
    assert r.setbit("k", 7, 1) == 0
    assert r.get("k") == b"\x01"
    assert r.setbit("k", 7, 0) == 1
    assert r.getbit("k", 7) == 0
    assert r.setbit("k", 100, 1) == 0
    assert r.strlen("k") == 13
    assert r.getbit("k", 100) == 1
    assert r.getbit("k", 10000) == 0
    assert r.getbit("nokey", 3) == 0
    assert r.object("encoding", "k") == b"raw"


def test_setbit_on_existing_string_becomes_raw(r):
    r.set("n", "12")
    assert r.object("encoding", "n") == b"int"
    r.setbit("n", 0, 0)   # unchanged bit: still converted, as in Redis
    assert r.object("encoding", "n") == b"raw"
    assert r.get("n") == b"12"


@pytest.mark.parametrize("args,msg", [
    (["setbit", "k", "-1", "1"], "bit offset is not an integer or out of range"),
    (["setbit", "k", "abc", "1"], "bit offset is not an integer or out of range"),
    (["setbit", "k", str(4 * 1024 * 1024 * 1024), "1"], "bit offset is not an integer or out of range"),
    (["setbit", "k", "1", "2"], "bit is not an integer or out of range"),
    (["setbit", "k", "1", "-1"], "bit is not an integer or out of range"),
    (["setbit", "k", "1", "x"], "bit is not an integer or out of range"),
    (["getbit", "k", "-1"], "bit offset is not an integer or out of range"),
    (["bitop", "foo", "d", "a"], "syntax error"),
    (["bitop", "not", "d", "a", "b"], "BITOP NOT must be called with a single source key."),
    (["bitpos", "k", "2"], "The bit argument must be 1 or 0."),
    (["bitpos", "k", "x"], "value is not an integer or out of range"),
    (["bitfield", "k", "get", "u64", "0"], "Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."),
    (["bitfield", "k", "get", "i65", "0"], "Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."),
    (["bitfield", "k", "get", "x8", "0"], "Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."),
    (["bitfield", "k", "get", "u0", "0"], "Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."),
    (["bitfield", "k", "get", "u8", "-1"], "bit offset is not an integer or out of range"),
    (["bitfield", "k", "get", "u8", "#x"], "bit offset is not an integer or out of range"),
    (["bitfield", "k", "set", "u8", "0", "x"], "value is not an integer or out of range"),
    (["bitfield", "k", "overflow", "foo", "get", "u8", "0"], "Invalid OVERFLOW type specified"),
    (["bitfield", "k", "foo"], "syntax error"),
    (["bitfield", "k", "get", "u8"], "syntax error"),
    (["bitfield_ro", "k", "set", "u8", "0", "1"], "BITFIELD_RO only supports the GET subcommand"),
])
def test_errors_exact(r, args, msg):
    r.set("k", "abc")
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    assert str(e.value) == msg


def test_wrongtype(r):
    for cmd in (["rpush", "l", "x"], ["sadd", "l", "x"], ["hset", "l", "f", "v"], ["zadd", "l", "1", "x"]):
        if _has(r, cmd[0]):
            r.execute_command(*cmd)
            break
    else:
        pytest.skip("no container type implemented in this checkout")
    for args in (["getbit", "l", "0"], ["setbit", "l", "0", "1"], ["bitcount", "l"], ["bitpos", "l", "1"],
                 ["bitop", "and", "d", "l"], ["bitfield", "l", "get", "u8", "0"]):
        with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
            r.execute_command(*args)
    with pytest.raises(redis.ResponseError, match="^The specified keys must contain string values$"):
        r.execute_command("lcs", "l", "nokey")


def _has(r, name):
    names = {n.decode() if isinstance(n, bytes) else n for n in r.command_list()}
    return name in names


def test_bitcount_bitpos_basics(r):
    r.set("s", b"\xff\xf0\x00")
    assert r.bitcount("s") == 12
    assert r.bitcount("s", 1, 1) == 4
    assert r.execute_command("bitcount", "s", 5, 30, "BIT") == 7
    # Redis 7.2: the arguments are parsed even when the key is missing
    with pytest.raises(redis.ResponseError, match="not an integer"):
        r.execute_command("bitcount", "nokey", "x", "y")
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("bitcount", "s", 1)
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("bitcount", "s", 1, 2, "bits")
    assert r.bitpos("s", 0) == 12
    assert r.bitpos("s", 1, 2) == -1
    assert r.bitpos("s", 0, 0, 0) == -1   # explicit range holds no clear bit
    assert r.bitpos("nokey", 1) == -1
    assert r.bitpos("nokey", 0) == 0
    r.set("ones", b"\xff\xff")
    assert r.bitpos("ones", 0) == 16       # past the end without an explicit end


def test_bitop_results_and_delete(r):
    r.set("a", b"\x0f\xf0")
    r.set("b", b"\xff")
    assert r.bitop("and", "d", "a", "b") == 2
    assert r.get("d") == b"\x0f\x00"
    assert r.bitop("or", "d", "a", "b") == 2
    assert r.get("d") == b"\xff\xf0"
    assert r.bitop("xor", "d", "a", "b") == 2
    assert r.get("d") == b"\xf0\xf0"
    assert r.bitop("not", "d", "a") == 2
    assert r.get("d") == b"\xf0\x0f"
    assert r.object("encoding", "d") == b"raw"
    assert r.bitop("and", "d", "nokey1", "nokey2") == 0
    assert r.exists("d") == 0


def test_bitfield_examples(r):
    assert r.execute_command("bitfield", "bf", "set", "i8", "0", "100", "get", "i8", "0") == [0, 100]
    assert r.execute_command("bitfield", "bf", "incrby", "i8", "0", "100") == [-56]
    assert r.execute_command("bitfield", "bf", "overflow", "sat", "incrby", "i8", "0", "-200") == [-128]
    assert r.execute_command("bitfield", "bf", "overflow", "fail", "incrby", "i8", "0", "-1") == [None]
    assert r.execute_command("bitfield", "bf", "set", "u4", "#1", "15", "get", "u4", "4") == [0, 15]
    assert r.execute_command("bitfield", "nokey", "get", "u8", "0") == [0]
    assert r.exists("nokey") == 0
    assert r.execute_command("bitfield_ro", "bf", "get", "i8", "0") == [-113]
    assert r.execute_command("bitfield", "bf") == []


def test_lcs_examples(r):
    r.set("key1", "ohmytext")
    r.set("key2", "mynewtext")
    assert r.execute_command("lcs", "key1", "key2") == b"mytext"
    assert r.execute_command("lcs", "key1", "key2", "LEN") == 6
    assert r.execute_command("lcs", "key1", "key2", "IDX") == [
        b"matches", [[[4, 7], [5, 8]], [[2, 3], [0, 1]]], b"len", 6]
    assert r.execute_command("lcs", "key1", "key2", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN") == [
        b"matches", [[[4, 7], [5, 8], 4]], b"len", 6]
    assert r.execute_command("lcs", "nokey", "key2") == b""
    with pytest.raises(redis.ResponseError, match="^If you want both the length and indexes, please just use IDX.$"):
        r.execute_command("lcs", "key1", "key2", "LEN", "IDX")
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("lcs", "key1", "key2", "MINMATCHLEN")
    with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
        r.execute_command("lcs", "key1", "key2", "MINMATCHLEN", "x")


def test_lcs_memory_limit(r):
    r.config_set("proto-max-bulk-len", 1024 * 1024)
    try:
        r.set("a", "x" * 1000)
        r.set("b", "y" * 1000)
        with pytest.raises(redis.ResponseError, match="^Insufficient memory, transient memory for LCS exceeds "
                                                       "proto-max-bulk-len$"):
            r.execute_command("lcs", "a", "b")
    finally:
        r.config_set("proto-max-bulk-len", 512 * 1024 * 1024)


def test_large_bitcount_bitop_fast(r):
    import time
    big = bytes(range(256)) * 4096  # 1 MB
    r.set("big", big)
    t = time.time()
    assert r.bitcount("big") == 4 * 4096 * 256
    assert r.bitop("xor", "dst", "big", "big") == len(big)
    assert r.bitcount("dst") == 0
    assert r.bitpos("dst", 1) == -1
    assert time.time() - t < 20         # (a generous bound: the machine may be busy)


def test_lcs_large_is_reasonably_fast(r):
    import random
    import time
    rnd = random.Random(1)
    a = bytes(rnd.choice(b"ACGT") for _ in range(3000))
    b = bytes(rnd.choice(b"ACGT") for _ in range(3000))
    r.set("a", a)
    r.set("b", b)
    t = time.time()
    res = r.execute_command("lcs", "a", "b", "IDX")
    assert time.time() - t < 60         # (a generous bound: the machine may be busy)
    assert res[3] == r.execute_command("lcs", "a", "b", "LEN")


# -- differential against Redis -------------------------------------------------------------------

small_bytes = st.binary(min_size=0, max_size=12) | st.lists(
    st.sampled_from([0, 255, 1, 128, 0x0F, 0xF0]), max_size=12).map(bytes)
index = st.integers(-40, 120)


@SETTINGS
@given(v=small_bytes, exists=st.booleans(), start=index, end=index,
       unit=st.sampled_from([None, "BIT", "BYTE", "bit"]), nargs=st.integers(0, 3))
def test_bitcount_differential(r, ref, v, exists, start, end, unit, nargs):
    for c in (r, ref):
        c.delete("k")
        if exists:
            c.set("k", v)
    args = ["bitcount", "k"] + [str(start), str(end), unit][:nargs]
    if None in args:
        args = args[:args.index(None)]
    if not exists and len(args) == 3:
        # Redis 7.2 parses the arguments of a missing key too: a lone start is
        # a syntax error there (redis-server 7.0 answers 0)
        with pytest.raises(redis.ResponseError, match="syntax error"):
            r.execute_command(*args)
        return
    same(r, ref, *args)


@SETTINGS
@given(v=small_bytes, exists=st.booleans(), bit=st.sampled_from(["0", "1"]), start=index, end=index,
       unit=st.sampled_from(["BIT", "BYTE"]), nargs=st.integers(0, 3))
def test_bitpos_differential(r, ref, v, exists, bit, start, end, unit, nargs):
    for c in (r, ref):
        c.delete("k")
        if exists:
            c.set("k", v)
    args = ["bitpos", "k", bit] + [str(start), str(end), unit][:nargs]
    same(r, ref, *args)


@SETTINGS
@given(ops=st.lists(st.tuples(st.sampled_from(["setbit", "getbit"]), st.integers(0, 200),
                              st.sampled_from(["0", "1"])), min_size=1, max_size=10))
def test_setbit_getbit_differential(r, ref, ops):
    for c in (r, ref):
        c.delete("k")
    for op, off, bit in ops:
        if op == "setbit":
            same(r, ref, "setbit", "k", str(off), bit)
        else:
            same(r, ref, "getbit", "k", str(off))
    assert r.get("k") == ref.get("k")


@SETTINGS
@given(op=st.sampled_from(["and", "or", "xor", "not"]), vals=st.lists(st.none() | small_bytes, min_size=1, max_size=4))
def test_bitop_differential(r, ref, op, vals):
    keys = []
    for c in (r, ref):
        c.delete("d", *["s%d" % i for i in range(4)])
        for i, v in enumerate(vals):
            if v is not None:
                c.set("s%d" % i, v)
    keys = ["s%d" % i for i in range(len(vals))]
    if op == "not":
        keys = keys[:1]
    same(r, ref, "bitop", op, "d", *keys)
    assert r.get("d") == ref.get("d")


bf_type = st.builds(lambda s, n: "%s%d" % (s, n), st.sampled_from(["i", "u"]), st.integers(1, 64))
bf_offset = st.integers(0, 100).map(str) | st.integers(0, 10).map(lambda n: "#%d" % n)
bf_value = st.integers(-2**63, 2**63 - 1) | st.integers(-300, 300)
bf_op = st.one_of(
    st.tuples(st.just("GET"), bf_type, bf_offset),
    st.tuples(st.sampled_from(["SET", "INCRBY"]), bf_type, bf_offset, bf_value.map(str)),
    st.tuples(st.just("OVERFLOW"), st.sampled_from(["WRAP", "SAT", "FAIL"])),
)


@SETTINGS
@given(init=st.none() | small_bytes, ops=st.lists(bf_op, min_size=1, max_size=5),
       ro=st.booleans())
def test_bitfield_differential(r, ref, init, ops, ro):
    for c in (r, ref):
        c.delete("k")
        if init is not None:
            c.set("k", init)
    args = ["bitfield_ro" if ro else "bitfield", "k"]
    for op in ops:
        args += list(op)
    same(r, ref, *args)
    assert r.get("k") == ref.get("k")


@SETTINGS
@given(a=st.binary(max_size=14) | st.text("abcd", max_size=14).map(str.encode),
       b=st.binary(max_size=14) | st.text("abcd", max_size=14).map(str.encode),
       opts=st.lists(st.sampled_from([["LEN"], ["IDX"], ["WITHMATCHLEN"], ["MINMATCHLEN", "2"],
                                      ["MINMATCHLEN", "0"], ["MINMATCHLEN", "-3"]]), max_size=3))
def test_lcs_differential(r, ref, a, b, opts):
    for c in (r, ref):
        c.set("a", a)
        c.set("b", b)
    args = ["lcs", "a", "b"]
    for o in opts:
        args += o
    same(r, ref, *args)
    same(r, ref, "lcs", "b", "a", *args[3:])
