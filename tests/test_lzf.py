"""LZF: Ophidis's compiled LZF (persistence/_lzf.pyx) against what
redis-server 7.0.15 writes (DUMP payloads: strings of more than 20 bytes
compressed into len - 4 bytes, quicklist nodes into len bytes), against
python-lzf where it is installed (with Redis's last space check replayed),
round trips, a fuzz of decompression (compiled and pure), and the out_len
refusal boundaries.  Without the compiled module (a pure install) the tests
of it skip; the pure decoder is tested either way."""

from __future__ import annotations

import importlib
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.servers import REDIS_SERVER, RedisServerProc

from ophidis.persistence import rdbcodec

try:
    native = importlib.import_module("ophidis.persistence._lzf")
except ImportError:  # a pure install
    native = None
try:
    import lzf as python_lzf
except ImportError:
    python_lzf = None

needs_native = pytest.mark.skipif(native is None, reason="ophidis.persistence._lzf is not built")
needs_redis = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")
FUZZ = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def corpus(seed, count):
    """Strings of every kind LZF meets: random, repetitive, short-period,
    text-like, with runs, and random ones with a few short repeats (their
    compressed size lands at Redis's len - 4 budget)."""
    rnd = random.Random(seed)
    out = []
    for k in range(count):
        if k % 10 == 0:
            n = rnd.choice([rnd.randrange(0, 64), rnd.randrange(0, 3000), rnd.randrange(60000, 140000)])
        else:
            n = rnd.randrange(0, 300)
        kind = k % 7
        if kind == 0:
            d = rnd.randbytes(n)
        elif kind == 1:
            d = bytes(rnd.choice(b"ab") for _ in range(n))
        elif kind == 2:
            d = (rnd.randbytes(rnd.randrange(1, 40)) * (n + 1))[:n]
        elif kind == 3:
            d = bytes(rnd.choice(b"abcdefgh \n") for _ in range(n))
        elif kind == 4:
            parts = [b"hello ", b"world", b"\x00" * rnd.randrange(40), b"x" * rnd.randrange(300)]
            d = b"".join(rnd.choice(parts) if rnd.random() < 0.7 else rnd.randbytes(3) for _ in range(n // 5))
        else:
            d = bytearray(rnd.randbytes(n))
            for _ in range(rnd.randrange(4)):     # a few short copies
                if n > 20:
                    ln = rnd.randrange(3, 12)
                    src = rnd.randrange(n - ln)
                    dst = rnd.randrange(n - ln)
                    d[dst:dst + ln] = d[src:src + ln]
            d = bytes(d)
        out.append(d)
    out += [b"", b"a", b"ab", b"abc", b"aaaa", b"a" * 5000, bytes(300000), b"ab" * 70000]
    out += [bytes(range(256)) * 300, os.urandom(70000)]
    return out


def python_lzf_redis_rule(data, out_len):
    """python-lzf's bytes with the check of Redis's copy that python-lzf
    lacks (a result ending within 3 bytes of out_len is refused when the
    last space check, before the final literal bytes, fails)."""
    n = len(data)
    if not n or out_len <= 0:
        return None
    comp = python_lzf.compress(bytes(data), out_len + 8)
    if comp is None or len(comp) > out_len:
        return None
    size = len(comp)
    if size + 4 <= out_len:
        return comp
    p = tail = start = 0
    while p < size:
        ctrl = comp[p]
        if ctrl < 32:
            if not tail:
                start = p
            tail += ctrl + 1
            p += ctrl + 2
        else:
            p += 3 if ctrl >> 5 == 7 else 2
            tail = 0
    before = start if tail else size
    r = min(tail, 2)
    op = before + (tail - r) + (tail - r) // 32 + 1
    return None if op + 3 > out_len else comp


# -- redis-server's bytes --------------------------------------------------------------

def _rdb_len(b, p):
    t = b[p] >> 6
    if t == 0:
        return b[p] & 0x3F, p + 1
    if t == 1:
        return ((b[p] & 0x3F) << 8) | b[p + 1], p + 2
    if b[p] == 0x80:
        return int.from_bytes(b[p + 1:p + 5], "big"), p + 5
    assert b[p] == 0x81
    return int.from_bytes(b[p + 1:p + 9], "big"), p + 9


def _rdb_string(b, p):
    """(raw bytes, LZF bytes or None, original length, next position)."""
    if b[p] == 0xC3:
        clen, p = _rdb_len(b, p + 1)
        ulen, p = _rdb_len(b, p)
        return None, b[p:p + clen], ulen, p + clen
    assert b[p] >> 6 != 3, "an integer encoding"
    n, p = _rdb_len(b, p)
    return b[p:p + n], None, n, p + n


@pytest.fixture(scope="module")
def redis_ref():
    """A redis-server of these tests only: every key stays (no value is
    freed, so no stale pointer in Redis's uninitialized hash table points
    into a later input)."""
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    srv = RedisServerProc()
    c = srv.client()
    try:
        yield c
    finally:
        c.close()
        srv.stop(remove=True)


@needs_redis
def test_decompress_redis_payloads(redis_ref):
    # rdbcodec's decompression (compiled or pure) reads what Redis wrote
    n = 0
    for i, d in enumerate(corpus(11, 300)):
        if len(d) <= 20:
            continue
        redis_ref.set("d%d" % i, d)
        p = redis_ref.dump("d%d" % i)
        raw, comp, ulen, _ = _rdb_string(p, 1)
        if comp is None:
            assert raw == d
            continue
        n += 1
        assert ulen == len(d)
        assert rdbcodec.lzf_decompress(comp, ulen) == d
        assert rdbcodec._lzf_decompress_py(comp, ulen) == d
        assert rdbcodec.lzf_decompress(comp, ulen + 1) is None
        assert rdbcodec.lzf_decompress(comp, ulen - 1) is None
    assert n > 100


@needs_redis
@needs_native
def test_compress_matches_redis_strings(redis_ref):
    # rdbSaveLzfStringObject: lzf_compress(s, len, out, len - 4) for every
    # string of more than 20 bytes; 0 means the string is written raw
    compressed = refused = tight = 0
    data = corpus(1, 2500)
    data += [bytes(range(n)) for n in range(21, 257)]            # every length, incompressible
    data += [b"a" * n for n in range(21, 300)]                   # every length, one run
    data += [b"ab" * (n // 2) + b"c" * (n % 2) for n in range(21, 200)]
    data += [b"x" * 300 + os.urandom(n) for n in range(40)]   # long run then a tail
    for i, d in enumerate(data):
        if len(d) <= 20:
            continue
        key = "s%d" % i
        redis_ref.set(key, d)
        raw, comp, ulen, _ = _rdb_string(redis_ref.dump(key), 1)
        ours = native.compress(d, len(d) - 4)
        assert ours == comp, (len(d), d[:40])
        if comp is None:
            refused += 1
            assert raw == d
            big = native.compress(d, len(d) + 64)
            if big is not None and len(big) <= len(d) - 4:
                tight += 1          # fits, but Redis's last space check refuses it
        else:
            compressed += 1
            assert ulen == len(d)
            if len(comp) + 4 > len(d) - 4:
                tight += 1
    assert compressed > 1000 and refused > 300 and tight > 5


@needs_redis
@needs_native
def test_compress_matches_redis_quicklist_nodes(redis_ref):
    # __quicklistCompressNode: lzf_compress(lp, sz, out, sz), kept when it
    # saves more than 8 bytes; other nodes are written as strings (len - 4)
    redis_ref.config_set("list-compress-depth", 1)
    redis_ref.config_set("list-max-listpack-size", 8)
    rnd = random.Random(7)
    checked = 0
    for k in range(40):
        key = "l%d" % k
        vals = []
        for _ in range(rnd.randrange(30, 120)):
            kind = rnd.randrange(4)
            if kind == 0:
                vals.append(rnd.randbytes(rnd.randrange(1, 60)))
            elif kind == 1:
                vals.append(b"item:%d" % rnd.randrange(10 ** 6))
            elif kind == 2:
                vals.append(b"v" * rnd.randrange(1, 100))
            else:
                vals.append(rnd.choice([b"alpha", b"beta", b"gamma"]) * rnd.randrange(1, 8))
        redis_ref.rpush(key, *vals)
        p = redis_ref.dump(key)
        assert p[0] == 18                         # RDB_TYPE_LIST_QUICKLIST_2
        nodes, q = _rdb_len(p, 1)
        for j in range(nodes):
            container, q = _rdb_len(p, q)
            assert container == 2                 # packed
            raw, comp, ulen, q = _rdb_string(p, q)
            if comp is None:
                if len(raw) > 20:
                    assert native.compress(raw, len(raw) - 4) is None
                continue
            lp = rdbcodec.lzf_decompress(comp, ulen)
            assert lp is not None
            node = native.compress(lp, len(lp))
            middle = 0 < j < nodes - 1
            if middle and len(lp) >= 48 and node is not None and len(node) + 8 < len(lp):
                assert comp == node
            else:
                assert comp == native.compress(lp, len(lp) - 4)
            checked += 1
    assert checked > 100
    redis_ref.config_set("list-compress-depth", 0)
    redis_ref.config_set("list-max-listpack-size", -2)


# -- python-lzf, small inputs, refusal boundaries -------------------------------------

@needs_native
@pytest.mark.skipif(python_lzf is None, reason="python-lzf is not installed")
def test_compress_matches_python_lzf_with_redis_rule():
    for d in corpus(2, 1500) + [bytes([i % 3]) * n for i in range(3) for n in range(17)]:
        n = len(d)
        budgets = {n + 64, n + 4, n, n - 4, n // 2}
        if n <= 40:
            budgets.update(range(1, n + 8))
        for out_len in budgets:
            assert native.compress(d, out_len) == python_lzf_redis_rule(d, out_len), (d[:40], out_len)


@needs_native
def test_small_inputs():
    # the last space check (before the final <= 2 literal bytes) needs 3
    # bytes beyond the output so far: a 1-byte input needs out_len 4
    assert native.compress(b"", 100) is None
    assert native.compress(b"x", 3) is None
    assert native.compress(b"x", 4) == b"\x00x"
    assert native.compress(b"xy", 4) == b"\x01xy"
    assert native.compress(b"xyz", 4) is None
    assert native.compress(b"xyz", 5) == b"\x02xyz"
    assert native.compress(b"x", 0) is None
    assert native.compress(b"x", -1) is None
    # the first byte is never referenced: "aaaa" is all literals ...
    assert native.compress(b"aaaa", 100) == b"\x03aaaa"
    # ... and a match starts at position 2: literals "aa", 5 bytes 1 back
    # (a match stops 2 bytes before the end), literals "aa"
    assert native.compress(b"a" * 9, 100) == b"\x01aa" + bytes([3 << 5, 0]) + b"\x01aa"
    for n in range(17):
        for d in (b"a" * n, bytes(range(n)), (b"ab" * 9)[:n]):
            if not n:
                continue
            c = native.compress(d, n + 64)
            assert c is not None and native.decompress(c, n) == d
            assert rdbcodec._lzf_decompress_py(c, n) == d


@needs_native
def test_refusal_boundaries():
    # the budgets a result fits in are exactly those from the least one on,
    # always with the same bytes, and the least one is 0 to 4 bytes beyond
    # the result's size (Redis's checks reserve room before they write)
    rnd = random.Random(3)
    slack = set()
    for d in [d for d in corpus(4, 600) if 0 < len(d) < 5000] + [rnd.randbytes(n) for n in range(1, 80)]:
        n = len(d)
        full = native.compress(d, n + n // 32 + 64)
        assert full is not None
        lo, hi = 1, n + n // 32 + 64              # the least budget, by bisection
        while lo < hi:
            mid = (lo + hi) // 2
            if native.compress(d, mid) is None:
                lo = mid + 1
            else:
                hi = mid
        least = lo
        assert 0 <= least - len(full) <= 4
        slack.add(least - len(full))
        for o in range(max(1, least - 8), least + 8):
            assert native.compress(d, o) == (full if o >= least else None)
        if rdbcodec._lzf is not None:
            assert rdbcodec.redis_lzf(d, least) == full
            assert rdbcodec.redis_lzf(d, least - 1) is None
    assert len(slack) >= 3


# -- round trips and fuzz ---------------------------------------------------------------

@needs_native
def test_round_trips():
    for d in corpus(5, 800) + [bytes(1 << 20), os.urandom(1 << 20)]:
        if not d:
            continue
        c = native.compress(d, len(d) + len(d) // 32 + 16)
        assert c is not None
        assert native.decompress(c, len(d)) == d
        assert native.decompress(bytearray(c), len(d)) == d
        assert native.decompress(memoryview(c), len(d)) == d
        if len(d) < 5000:
            assert rdbcodec._lzf_decompress_py(c, len(d)) == d
        assert native.decompress(c, len(d) - 1) is None
        assert native.decompress(c, len(d) + 1) is None
        assert native.compress(bytearray(d), len(d) + 64) == native.compress(d, len(d) + 64)


@needs_native
@FUZZ
@given(st.binary(max_size=3000), st.integers(1, 4000))
def test_fuzz_compress(data, out_len):
    c = native.compress(data, out_len)
    if c is None:
        assert not data or native.compress(data, len(data) + len(data) // 32 + 16) is not None
    else:
        assert len(c) <= out_len
        assert native.decompress(c, len(data)) == data


def _check_decompress(data, out_len):
    py = rdbcodec._lzf_decompress_py(data, out_len)
    if py is not None and len(py) != out_len:
        py = None
    if native is not None:
        got = native.decompress(data, out_len)
        assert got is None or (type(got) is bytes and len(got) == out_len)
        assert got == py            # the same corrupt-data rules as the pure decoder
    got = rdbcodec.lzf_decompress(data, out_len)
    assert got is None or len(got) == out_len


@FUZZ
@given(st.binary(max_size=400), st.integers(0, 3000))
def test_fuzz_decompress_random(data, out_len):
    _check_decompress(data, out_len)


@FUZZ
@given(st.binary(min_size=1, max_size=600), st.data())
def test_fuzz_decompress_mutated(plain, draw):
    comp = rdbcodec.redis_lzf(plain, len(plain) + 64)
    if comp is None:                     # a pure run: literal runs only
        comp = b"".join(bytes([len(plain[i:i + 32]) - 1]) + plain[i:i + 32] for i in range(0, len(plain), 32))
    b = bytearray(comp)
    for _ in range(draw.draw(st.integers(1, 4))):
        op = draw.draw(st.sampled_from(["flip", "set", "cut", "insert", "delete"]))
        i = draw.draw(st.integers(0, max(0, len(b) - 1)))
        if op == "flip" and b:
            b[i] ^= 1 << draw.draw(st.integers(0, 7))
        elif op == "set" and b:
            b[i] = draw.draw(st.integers(0, 255))
        elif op == "cut":
            del b[i:]
        elif op == "insert":
            b[i:i] = draw.draw(st.binary(min_size=1, max_size=4))
        elif b:
            del b[i]
    delta = draw.draw(st.sampled_from([0, 0, 0, -1, 1, -300, 300]))
    _check_decompress(bytes(b), max(0, len(plain) + delta))


def test_decompress_edges():
    for f in [rdbcodec.lzf_decompress] + ([native.decompress] if native else []):
        assert f(b"", 0) == b""
        assert f(b"", 1) is None
        assert f(b"\x00a", 0) is None
        assert f(b"\x00a", 1) == b"a"
        assert f(b"\x01a", 2) is None                 # truncated literal run
        assert f(b"\x00a\x20", 3) is None             # back reference without its offset
        assert f(b"\x00a\xe0", 10) is None            # long reference without its length
        assert f(b"\x00a\xe0\x00", 10) is None        # ... without its offset
        assert f(b"\x00a\x20\x01", 4) is None         # 2 back: before the start
        assert f(b"\x00a\x20\x00", 4) == b"aaaa"      # overlapping copy
        assert f(b"\x00a\xe0\xff\x00", 265) == b"a" * 265
        assert f(b"\x00a\xe0\xff\x00", 264) is None   # too long for out_len
        assert f(b"\x00a", 1 << 40) is None           # a corrupt length is not allocated
        assert f(b"\x00a", -1) is None


def test_codec_rule():
    # the compiled LZF is used wherever it is built, OPHIDIS_PURE=1 or not
    # (it is a codec, not a twin of Python code); without it (an install
    # with no compiler) strings are written uncompressed
    assert rdbcodec._lzf is native
    if rdbcodec._lzf is None:
        assert rdbcodec.redis_lzf(b"a" * 100, 96) is None
        assert rdbcodec.enc_string(b"a" * 100) == b"\x40\x64" + b"a" * 100
    else:
        assert rdbcodec.enc_string(b"a" * 100)[:1] == b"\xc3"
