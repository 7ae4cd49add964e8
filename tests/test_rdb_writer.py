"""The compiled RDB key writer (_speedups.rdb_write_keys) against its pure twin
(rdb.write_keys_py with Encoder.type_and_value): the same keyspace must give
the same bytes, and the compiled one must not hand the types it covers to the
Python fallback.  Then the same through two servers (one per mode): the RDB
files written by SAVE are identical after the aux fields, and redis-server
loads them."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.servers import ServerProc, rss
from support.wait import wait_until

from ophidis.keyspace.db import EmbStr
from ophidis import compiled
from ophidis.persistence import rdb
from ophidis.persistence.listpack import EncodingError, lp_decode, lp_decode_py, lp_encode
from ophidis.persistence.rdbcodec import crc64, enc_string
from ophidis.persistence.rdbencode import Encoder
from ophidis.types.containers import HashValue, ListValue, SetValue
from ophidis.types.stream import StreamValue
from ophidis.types.zset import ZSetValue

native = compiled.load("persistence._rdb")
needs_native = pytest.mark.skipif(native is None, reason="the compiled module is not built (or OPHIDIS_PURE=1)")

EDGE = [b"", b"0", b"-0", b"00", b"007", b"1", b"-1", b"127", b"128", b"-128", b"-129", b"4095", b"-4096",
        b"4096", b"32767", b"-32768", b"32768", b"8388607", b"-8388608", b"8388608", b"2147483647",
        b"-2147483648", b"2147483648", b"9223372036854775807", b"-9223372036854775808",
        b"9223372036854775808", b"-9223372036854775809", b"12345678901234567890", b"+1", b" 1", b"1_0",
        b"-", b"1e3", b"0x10"]

strings = (st.binary(max_size=24)
           | st.sampled_from(EDGE)
           | st.integers(-2 ** 64, 2 ** 64).map(lambda i: b"%d" % i)
           | st.tuples(st.binary(min_size=1, max_size=4), st.integers(5, 1200)).map(lambda t: t[0] * t[1])
           | st.sampled_from([60, 63, 64, 65, 4094, 4095, 4096, 5000, 16383, 16384, 20000]).map(
               lambda n: bytes(range(256)) * (n // 256) + b"q" * (n % 256)))
scores = st.floats(allow_nan=False) | st.integers(-2 ** 63, 2 ** 63).map(float) | st.sampled_from(
    [0.0, -0.0, 1.5, 2.0 ** 62, -(2.0 ** 62), 2.0 ** 62 + 2048, 1e300, float("inf"), float("-inf")])


def _hash(items, ht):
    h = HashValue(items)
    h.ht = ht
    return h


def _set(members, enc):
    s = SetValue(members)
    s.enc = enc
    return s


def _zset(items, skiplist):
    z = ZSetValue()
    for m, sc in items.items():
        z.add(m, sc)
    z.skiplist = skiplist
    return z


def _list(items, popleft, front=()):
    # pushes at the front and pops on both sides too: QuickList nodes with
    # data off their buffer's start, partly filled, emptied and dropped
    lst = ListValue(items)
    for _ in range(min(popleft, len(lst))):
        lst.popleft()
    for x in front:
        lst.appendleft(x)
    for _ in range(min(popleft // 3, len(lst))):
        lst.pop()
    return lst


values = st.one_of(
    strings,
    strings.map(EmbStr),
    strings.map(bytearray),
    st.builds(_list, st.lists(strings, max_size=200), st.integers(0, 70)),
    st.builds(_list, st.lists(st.sampled_from([b"a", b"bb", b"1", b"-77", b"x" * 70]), max_size=2000),
              st.integers(0, 200)),
    st.builds(_list, st.lists(strings, max_size=50), st.integers(0, 90),
              st.lists(st.sampled_from([b"f", b"-3", b"y" * 127, b"y" * 128, b"w" * 3000]), max_size=300)),
    st.builds(_hash, st.dictionaries(strings, strings, max_size=12), st.booleans()),
    st.builds(_set, st.sets(st.integers(-2 ** 63, 2 ** 63 - 1).map(lambda i: b"%d" % i), max_size=20),
              st.just(b"intset")),
    st.builds(_set, st.sets(strings, max_size=20), st.just(b"hashtable")),
    st.builds(_zset, st.dictionaries(strings, scores, max_size=20), st.booleans()),
    st.just(None).map(lambda _: StreamValue()),
)
keys = strings.filter(lambda k: len(k) < 3000)
datasets = st.dictionaries(keys, values, max_size=25)


def _write(fn, d, exp, compress, fill, depth, delay=0.0):
    enc = Encoder(compress=compress)
    enc.list_fill = fill
    enc.list_depth = depth
    fell_back = []

    def value_entry(key, val):
        fell_back.append(val.__class__)
        t, data = enc.type_and_value(val)
        return bytes((t,)) + enc_string(key, compress) + data

    out, prog, slept = [], [], []
    n = fn(d, exp, out.append, compress, fill, depth, value_entry, prog.append, 1000, delay, slept.append)
    return b"".join(out), n, prog, fell_back, slept


@needs_native
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(datasets, st.data(), st.booleans(), st.sampled_from([-1, -2, -3, -5, -6, 1, 3, 128]), st.integers(0, 2))
def test_compiled_writer_matches_python(d, data, compress, fill, depth):
    exp = {k: data.draw(st.integers(0, 2 ** 62) | st.integers(0, 2 ** 40).map(float))
           for k in d if data.draw(st.booleans())}
    want = _write(rdb.write_keys_py, d, exp, compress, fill, depth)
    got = _write(native.rdb_write_keys, d, exp, compress, fill, depth)
    assert got[0] == want[0]
    assert got[1] == want[1] == 1000 + len(d)
    assert got[2] == want[2]
    # only streams go through the Python fallback in the compiled writer
    assert set(got[3]) <= {StreamValue}


@needs_native
def test_compiled_writer_walks_sets_with_deleted_members():
    """Sets are read from their table (SetCore's OphTab, borrowed
    references); deleted members leave empty entries there, which the walk
    skips."""
    rnd = random.Random(7)
    d = {}
    for i, n in enumerate((1, 5, 9, 40, 300, 5000)):
        for enc in (b"hashtable", b"intset"):
            members = [b"%d" % rnd.randrange(-10 ** 9, 10 ** 9) if enc == b"intset" else rnd.randbytes(8)
                       for _ in range(n)]
            v = _set(set(members), enc)
            for m in members[::2]:
                v.discard(m)
            v.add(members[0])
            d[b"s%d%s" % (i, enc)] = v
    want = _write(rdb.write_keys_py, d, {}, False, -2, 0)
    got = _write(native.rdb_write_keys, d, {}, False, -2, 0)
    assert got[0] == want[0]
    assert not got[3]


@needs_native
def test_compiled_writer_progress_delay_and_chunks():
    d = {b"key:%d" % i: b"v" * (i % 40) for i in range(5000)}
    d[b"big"] = b"z" * 200000
    want = _write(rdb.write_keys_py, d, {}, True, -2, 0, delay=0.5)
    got = _write(native.rdb_write_keys, d, {}, True, -2, 0, delay=0.5)
    assert got[0] == want[0]
    assert got[2] == want[2] == [1024, 2048, 3072, 4096, 5120]
    assert got[4] == want[4] == [0.5] * 5001
    assert not got[3]


@needs_native
def test_compiled_writer_lists_are_quicklists():
    """rdb_write_keys reads lists from QuickList's nodes: no other list class
    (persistence/_rdb.pyx checks it when it is imported)."""
    assert ListValue is compiled.load("types._quicklist").QuickList


@needs_native
def test_compiled_writer_leaves_reference_counts_alone():
    """The point of the compiled writer: no write to the objects it reads."""
    objs = [b"a" * 30, b"b" * 40, b"123", b"c" * 25]
    h = _hash({objs[0]: objs[1]}, False)
    d = {b"s" + objs[0]: objs[0], b"h": h, b"l": ListValue(objs), b"z": _zset({objs[3]: 1.5}, True),
         b"t": _set({objs[1]}, b"hashtable")}
    before = [sys.getrefcount(o) for o in objs + list(d.values())]
    native.rdb_write_keys(d, {}, lambda b: None, False, -2, 0, None, None, 0)
    assert [sys.getrefcount(o) for o in objs + list(d.values())] == before


def _skip_string(data, i):
    """The offset after the RDB string at ``i`` (a length, or an integer
    encoding; the aux fields hold no compressed strings)."""
    b = data[i]
    kind = b >> 6
    if kind == 0:
        return i + 1 + (b & 0x3F)
    if kind == 1:
        return i + 2 + (((b & 0x3F) << 8) | data[i + 1])
    if kind == 2:
        size = 4 if b == 0x80 else 8
        return i + 1 + size + int.from_bytes(data[i + 1:i + 1 + size], "big")
    return i + 1 + {0: 1, 1: 2, 2: 4}[b & 0x3F]     # an integer-encoded string


def _body(path):
    """The file after its aux fields (everything from the first SELECTDB),
    once its CRC-64 is checked.  The aux fields are walked (their values,
    e.g. the time, may hold any byte)."""
    with open(path, "rb") as f:
        data = f.read()
    assert crc64(data[:-8]) == int.from_bytes(data[-8:], "little")
    i = 9                           # REDIS00xx
    while data[i] == 0xFA:          # AUX name value
        i = _skip_string(data, _skip_string(data, i + 1))
    assert data[i] == 0xFE, data[i:i + 8]
    return data[i:-8]


def _fill(c, seed):
    """The same random keys of every type (and expiry times) on both servers."""
    rnd = random.Random(seed)
    p = c.pipeline(transaction=False)
    for i in range(400):
        k = b"k%d" % i
        kind = rnd.randrange(7)
        n = rnd.randrange(1, 150)
        vals = [rnd.choice([b"%d" % rnd.randrange(-10 ** 12, 10 ** 12), b"x" * rnd.randrange(0, 90),
                            rnd.randbytes(rnd.randrange(0, 30))]) for _ in range(n)]
        if kind == 0:
            p.set(k, vals[0])
        elif kind == 1:
            p.rpush(k, *vals)
        elif kind == 2:
            p.hset(k, mapping={b"f%d" % j: v for j, v in enumerate(vals)})
        elif kind == 3:
            p.sadd(k, *vals)
        elif kind == 4:
            p.sadd(k, *[b"%d" % rnd.randrange(-10 ** 15, 10 ** 15) for _ in range(n)])
        elif kind == 5:
            p.zadd(k, {v: rnd.uniform(-1e6, 1e6) for v in vals})
        else:
            p.xadd(k, {b"a": vals[0]}, id=b"%d-1" % (i + 1))
        if rnd.random() < 0.3:
            p.pexpireat(k, 4102444800000 + rnd.randrange(10 ** 9))
    p.execute()
    c.incrbyfloat(b"f", 1.5)
    c.execute_command("SELECT", 3)
    c.set(b"other", b"db")


@pytest.mark.skipif(shutil.which("redis-check-rdb") is None, reason="redis-check-rdb is not installed")
def test_servers_in_both_modes_write_the_same_file():
    """SAVE on a compiled and a pure server holding the same data: the same
    bytes after the aux fields (which hold the time and the memory used),
    but for the order of a hashtable set's members (a compiled set iterates
    in insertion order, a pure one in its hash table's): with the sets'
    members sorted, the same keys, values and expiry times are loaded from
    both; redis-check-rdb accepts both files."""
    bodies = []
    loaded = []
    for pure in ("0", "1"):
        srv = ServerProc(env=dict(os.environ, OPHIDIS_PURE=pure, PYTHONHASHSEED="7"))
        try:
            c = srv.client(single_connection_client=True)
            _fill(c, 17)
            assert c.save()
            c.close()
            path = os.path.join(srv.dir, "dump.rdb")
            bodies.append(_body(path))
            with open(path, "rb") as f:
                res = rdb.RdbReader(f.read(), skip_expired=False).load()
            loaded.append([({k: _norm(v) for k, v in d.items()}, e) for d, e in res.dbs])
            chk = subprocess.run(["redis-check-rdb", path], capture_output=True, text=True, timeout=60)
            assert chk.returncode == 0 and "RDB looks OK" in chk.stdout, chk.stdout + chk.stderr
        finally:
            srv.stop()
    assert len(bodies[0]) > 100000
    assert len(bodies[0]) == len(bodies[1])
    assert loaded[0] == loaded[1]
    assert sum(len(d) for d, _ in loaded[0]) > 100


@needs_native
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(strings | st.integers(-2 ** 63, 2 ** 63 - 1), max_size=40), st.booleans(),
       st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), max_size=3), st.integers(-3, 3))
def test_compiled_listpack_decoder_matches_python(items, strict, flips, cut):
    """lp_decode_fast: the elements lp_decode_py gives, or None where that
    raises (or on anything it does not take: then lp_decode falls back)."""
    lp = lp_encode(items)
    want = lp_decode_py(lp, strict)
    assert native.lp_decode_fast(lp, strict) == want == lp_decode(lp, strict)
    assert native.lp_decode_fast(bytearray(lp), strict) is None
    bad = bytearray(lp)
    for at, b in flips:
        bad[at % len(bad)] = b
    if cut > 0:
        bad = bad[:-cut]
    elif cut < 0:
        bad += bytes(-cut)
    bad = bytes(bad)
    try:
        want = lp_decode_py(bad, strict)
    except EncodingError:
        want = None
    assert native.lp_decode_fast(bad, strict) == want


def _norm(v):
    """A loaded value as plain data (its class and encoding included)."""
    if isinstance(v, ZSetValue):
        return "zset", v.dict, list(v.sl), v.skiplist
    if isinstance(v, SetValue):
        return "set", set(v), v.enc
    if isinstance(v, HashValue):
        return "hash", dict(v), v.ht
    if isinstance(v, (bytes, bytearray)):
        return v.__class__, bytes(v)
    if isinstance(v, StreamValue):
        return "stream", v.length
    return v.__class__, list(v)


def _load(data, fast, chunk=None):
    pos = [0]

    def source(k):
        b = data[pos[0]:pos[0] + min(k, chunk)]
        pos[0] += len(b)
        return b
    r = rdb.RdbReader(b"" if chunk else data, trace=None if fast else (lambda *a: None),
                      source=source if chunk else None,
                      chunk=chunk or 1 << 16, verify_checksum=False)
    try:
        res = r.load()
    except rdb.RdbError as e:
        return "error", e.msg, e.offset
    return ({k: _norm(v) for k, v in res.dbs[0][0].items()}, res.dbs[0][1], res.type_counts, res.keys_loaded,
            res.empty_skipped)


@needs_native
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(datasets, st.booleans(), st.data(),
       st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), max_size=2), st.sampled_from([0, 0, 7, 300]))
def test_compiled_loader_matches_python(d, compress, data, flips, chunk):
    """rdb_load_records (the fast path of RdbReader.load) against the Python
    path (a trace disables it): the same keyspace, counters and errors (the
    message and the offset), on files written by the writer and corrupted."""
    exp = {k: data.draw(st.integers(0, 2 ** 62)) for k in d if data.draw(st.booleans())}
    keys = _write(rdb.write_keys_py, d, exp, compress, -2, data.draw(st.integers(0, 1)))[0]
    body = bytearray(b"REDIS0010\xfe\x00" + keys + b"\xff")
    for at, b in flips:
        at = 11 + at % (len(body) - 11)
        body[at] = b
    body = bytes(body) + bytes(8)
    assert _load(body, True, chunk) == _load(body, False, chunk)


def _keyspace(rnd, n):
    d = {}
    for i in range(n):
        kind = rnd.randrange(6)
        m = rnd.randrange(1, 12)
        vals = [rnd.choice([b"%d" % rnd.randrange(-10 ** 12, 10 ** 12), b"x" * rnd.randrange(0, 90),
                            rnd.randbytes(rnd.randrange(0, 30)), b"%d" % rnd.randrange(300)]) for _ in range(m)]
        k = rnd.choice([b"k%d" % i, b"%d" % i, b"key:%d" % i * rnd.randrange(1, 30)])
        if kind == 0:
            d[k] = vals[0]
        elif kind == 1:
            d[k] = _list(vals * rnd.randrange(1, 40), rnd.randrange(3), vals[:rnd.randrange(3)])
        elif kind == 2:
            d[k] = _hash({b"f%d" % j: v for j, v in enumerate(vals)}, rnd.random() < 0.2)
        elif kind == 3:
            d[k] = _set(set(vals), b"hashtable")
        elif kind == 4:
            d[k] = _set({b"%d" % rnd.randrange(-10 ** 15, 10 ** 15) for _ in range(m)}, b"intset")
        else:
            d[k] = _zset({v: rnd.uniform(-1e6, 1e6) for v in vals}, rnd.random() < 0.2)
    return d


@needs_native
@pytest.mark.parametrize("compress", [True, False])
def test_compiled_loader_on_every_type_and_corruptions(compress):
    """rdb_load_records on a file of every type its fast path reads: the
    same as the Python path, then on 300 copies each with a byte changed or
    the file cut short (the same keyspace, or the same error and offset)."""
    rnd = random.Random(5)
    d = _keyspace(rnd, 1500)
    keys = _write(rdb.write_keys_py, d, {}, compress, -2, 0)[0]
    body = b"REDIS0010\xfe\x00" + keys + b"\xff" + bytes(8)
    want = _load(body, False)
    assert want[0] != "error" and len(want[0]) == len(d)
    assert _load(body, True) == want
    assert _load(body, True, 300) == want
    for _ in range(300):
        bad = bytearray(body)
        at = rnd.randrange(11, len(bad) - 9)
        if rnd.random() < 0.1:
            bad = bad[:at]
        else:
            bad[at] = rnd.randrange(256)
        bad = bytes(bad)
        assert _load(bad, True) == _load(bad, False)


@needs_native
@pytest.mark.skipif(not os.path.exists("/proc/self/smaps_rollup"), reason="needs /proc/<pid>/smaps_rollup")
def test_bgsave_child_copies_few_pages():
    """Issue 17: the BGSAVE child of a server holding 300k keys of every
    type copies on write a small part of the parent's memory (its own
    buffers and the interpreter's bookkeeping: a few MB).  Writing them in
    Python (reference counts written into every object read) copied about
    two thirds of it.  The bound is generous: 25% of the parent's RSS."""
    srv = ServerProc(["--enable-debug-command", "yes"])
    try:
        c = srv.client(single_connection_client=True)
        c.execute_command("DEBUG", "POPULATE", 200000, "key")
        p = c.pipeline(transaction=False)
        for i in range(25000):
            f = [b"f%d:%d" % (j, i) for j in range(5)]
            p.hset(b"hash:%d" % i, mapping={x: b"value:%d" % i for x in f})
            p.sadd(b"set:%d" % i, *f)
            p.zadd(b"zset:%d" % i, {x: i + j * 0.5 for j, x in enumerate(f)})
            p.rpush(b"list:%d" % i, *f)
            if i % 2000 == 1999:
                p.execute()
        p.execute()
        assert c.dbsize() == 300000
        assert c.bgsave()
        assert wait_until(lambda: c.info("persistence")["rdb_bgsave_in_progress"] == 0, timeout=120)
        info = c.info("persistence")
        assert info["rdb_last_bgsave_status"] == "ok"
        resident = rss(srv.proc.pid)
        cow = info["rdb_last_cow_size"]
        assert 0 < cow < resident // 4, (cow, resident)
    finally:
        srv.stop()
