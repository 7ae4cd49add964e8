"""Hash commands: replies, exact errors, encodings, big hashes, HSCAN
guarantees, RESP3 forms, notifications, and differential runs against a
real redis-server (the ``ref`` fixture)."""

from __future__ import annotations

import random

import pytest
import redis

from support.clients import check_scan_errors, scan_to_end
from support.config import overrides
from support.inprocess import run_inprocess
from support.notify import events_of

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"


def enc(r, key):
    return r.object("encoding", key)


# -- basic commands ---------------------------------------------------------------

def test_hset_returns_new_field_count(r):
    assert r.execute_command("HSET", "h", "a", "1", "b", "2") == 2
    assert r.execute_command("HSET", "h", "a", "x", "c", "3") == 1
    assert r.execute_command("HSET", "h", "d", "1", "d", "2") == 1
    assert r.hgetall("h") == {b"a": b"x", b"b": b"2", b"c": b"3", b"d": b"2"}
    assert r.type("h") == b"hash"


def test_hset_hmset_arity_errors(raw):
    assert raw.call("HSET", "h", "a", "1", "b") == b"-ERR wrong number of arguments for 'hset' command\r\n"
    assert raw.call("HMSET", "h", "a", "1", "b") == b"-ERR wrong number of arguments for 'hmset' command\r\n"
    assert raw.call("HSET", "h", "a") == b"-ERR wrong number of arguments for 'hset' command\r\n"
    assert raw.call("EXISTS", "h") == b":0\r\n"
    assert raw.call("HMSET", "h", "a", "1", "b", "2") == b"+OK\r\n"
    assert raw.call("HGET", "h", "b") == b"$1\r\n2\r\n"


def test_hsetnx(r):
    assert r.hsetnx("h", "f", "1") == 1
    assert r.hsetnx("h", "f", "2") == 0
    assert r.hget("h", "f") == b"1"
    assert r.hsetnx("h", "g", "3") == 1
    assert r.hgetall("h") == {b"f": b"1", b"g": b"3"}


def test_hget_hmget(r, raw, raw3):
    assert r.hget("nokey", "f") is None
    r.hset("h", mapping={"a": "1", "b": ""})
    assert r.hget("h", "a") == b"1"
    assert r.hget("h", "b") == b""
    assert r.hget("h", "zz") is None
    assert r.hmget("h", ["a", "zz", "b"]) == [b"1", None, b""]
    assert r.hmget("nokey", ["a", "b"]) == [None, None]
    assert raw.call("HMGET", "h", "a", "zz") == b"*2\r\n$1\r\n1\r\n$-1\r\n"
    assert raw3.call("HMGET", "h", "a", "zz") == b"*2\r\n$1\r\n1\r\n_\r\n"
    assert raw3.call("HGET", "h", "zz") == b"_\r\n"
    assert raw3.call("HGET", "nokey", "zz") == b"_\r\n"
    assert raw.call("HGET", "nokey", "zz") == b"$-1\r\n"


def test_hdel(r):
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    assert r.hdel("h", "a", "zz", "a") == 1
    assert r.hlen("h") == 2
    assert r.hdel("nokey", "a") == 0
    assert r.hdel("h", "b", "c", "d") == 2
    assert r.exists("h") == 0


def test_hlen_hstrlen_hexists(r):
    assert r.hlen("h") == 0
    assert r.hstrlen("h", "a") == 0
    assert r.hexists("h", "a") is False
    r.hset("h", mapping={"a": "hello", "n": "12345", "e": ""})
    assert r.hlen("h") == 3
    assert r.hstrlen("h", "a") == 5
    assert r.hstrlen("h", "n") == 5
    assert r.hstrlen("h", "e") == 0
    assert r.hstrlen("h", "zz") == 0
    assert r.hexists("h", "a") is True
    assert r.hexists("h", "zz") is False


def test_hkeys_hvals_hgetall_order_listpack(r):
    r.hset("h", mapping={"z": "1", "a": "2", "m": "3"})
    r.hset("h", "a", "20")          # update keeps position
    r.hdel("h", "z")
    r.hset("h", "z", "9")           # re-added goes last
    assert r.hkeys("h") == [b"a", b"m", b"z"]
    assert r.hvals("h") == [b"20", b"3", b"9"]
    assert r.execute_command("HGETALL", "h") == {b"a": b"20", b"m": b"3", b"z": b"9"}
    assert r.hkeys("nokey") == []
    assert r.hvals("nokey") == []
    assert r.hgetall("nokey") == {}


def test_hgetall_resp2_resp3_bytes(r, raw, raw3):
    r.hset("h", mapping={"a": "1", "b": "2"})
    assert raw.call("HGETALL", "h") == b"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"
    assert raw3.call("HGETALL", "h") == b"%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"
    assert raw3.call("HGETALL", "nokey") == b"%0\r\n"
    assert raw.call("HGETALL", "nokey") == b"*0\r\n"
    assert raw3.call("HKEYS", "h") == b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    assert raw3.call("HVALS", "nokey") == b"*0\r\n"


def test_wrongtype(r, raw):
    r.set("s", "x")
    for args in (("HSET", "s", "a", "1"), ("HMSET", "s", "a", "1"), ("HSETNX", "s", "a", "1"),
                 ("HGET", "s", "a"), ("HMGET", "s", "a"), ("HDEL", "s", "a"), ("HLEN", "s"),
                 ("HSTRLEN", "s", "a"), ("HEXISTS", "s", "a"), ("HKEYS", "s"), ("HVALS", "s"),
                 ("HGETALL", "s"), ("HINCRBY", "s", "a", "1"), ("HINCRBYFLOAT", "s", "a", "1"),
                 ("HRANDFIELD", "s"), ("HRANDFIELD", "s", "2"), ("HSCAN", "s", "0")):
        assert raw.call(*args) == WRONGTYPE, args
    assert r.get("s") == b"x"


# -- HINCRBY / HINCRBYFLOAT ---------------------------------------------------------

def test_hincrby(r, raw):
    assert r.hincrby("h", "f", 5) == 5
    assert r.hincrby("h", "f", -7) == -2
    assert r.hget("h", "f") == b"-2"
    r.hset("h", "big", str(2**63 - 10))
    assert r.hincrby("h", "big", 9) == 2**63 - 1
    assert raw.call("HINCRBY", "h", "big", "1") == b"-ERR increment or decrement would overflow\r\n"
    r.hset("h", "small", str(-2**63 + 1))
    assert raw.call("HINCRBY", "h", "small", "-2") == b"-ERR increment or decrement would overflow\r\n"
    assert r.hincrby("h", "small", -1) == -2**63
    for bad in ("x", "1.5", " 1", "01", "+1"):
        r.hset("h", "s", bad)
        assert raw.call("HINCRBY", "h", "s", "1") == b"-ERR hash value is not an integer\r\n"
    assert raw.call("HINCRBY", "h", "f", "1.0") == b"-ERR value is not an integer or out of range\r\n"
    assert raw.call("HINCRBY", "h", "f", "9223372036854775808") == \
        b"-ERR value is not an integer or out of range\r\n"
    assert raw.call("HINCRBY", "nokey", "f", "x") == b"-ERR value is not an integer or out of range\r\n"
    assert r.exists("nokey") == 0


@pytest.mark.parametrize("seq,expected", [
    (["0.1", "0.2"], b"0.3"),
    (["10.5", "0.1"], b"10.6"),
    (["3.0e3"], b"3000"),
    (["5.0e3", "-5000"], b"0"),
    (["1e-20"], b"0"),
    (["1.5e-17"], b"0.00000000000000002"),
    (["0x10"], b"16"),
    (["-1.5", "-1e-30"], b"-1.5"),
    (["1.5", "-1.5", "-1e-30"], b"0"),
    (["1e400"], b"1" + b"0" * 19 + b"281880683947586514586453433629052038625910693539685534008629"
     b"862039363994848324160522094053927317616200295822777259255734023828976593340661017797447434"
     b"546173917862448116674971723778943824391593338047470675026246684401359237513603830343735485"
     b"505244955964979021825038280091068414947402456898653040951017512658092615827588920183472511"
     b"643316591362664138176309734806343732497430221946880"),
])
def test_hincrbyfloat_long_double_formatting(r, raw, seq, expected):
    out = None
    for x in seq:
        out = raw.call("HINCRBYFLOAT", "h", "f", x)
    assert out == b"$%d\r\n%s\r\n" % (len(expected), expected)
    assert r.hget("h", "f") == expected


def test_hincrbyfloat_errors(r, raw):
    assert raw.call("HINCRBYFLOAT", "h", "f", "abc") == b"-ERR value is not a valid float\r\n"
    assert raw.call("HINCRBYFLOAT", "h", "f", "nan") == b"-ERR value is not a valid float\r\n"
    assert raw.call("HINCRBYFLOAT", "h", "f", " 1") == b"-ERR value is not a valid float\r\n"
    assert raw.call("HINCRBYFLOAT", "h", "f", "1e5000") == b"-ERR value is not a valid float\r\n"
    assert raw.call("HINCRBYFLOAT", "h", "f", "inf") == b"-ERR value is NaN or Infinity\r\n"
    assert raw.call("HINCRBYFLOAT", "h", "f", "-Infinity") == b"-ERR value is NaN or Infinity\r\n"
    assert r.exists("h") == 0
    r.hset("h", mapping={"s": "hello", "n": "nan", "i": "inf", "sp": "1 "})
    assert raw.call("HINCRBYFLOAT", "h", "s", "1") == b"-ERR hash value is not a float\r\n"
    assert raw.call("HINCRBYFLOAT", "h", "n", "1") == b"-ERR hash value is not a float\r\n"
    assert raw.call("HINCRBYFLOAT", "h", "sp", "1") == b"-ERR hash value is not a float\r\n"
    assert raw.call("HINCRBYFLOAT", "h", "i", "1") == b"-ERR increment would produce NaN or Infinity\r\n"
    r.hset("h", "max", "0x1.fffffffffffffffep16383")
    assert raw.call("HINCRBYFLOAT", "h", "max", "0x1p16383") == \
        b"-ERR increment would produce NaN or Infinity\r\n"
    assert r.hget("h", "i") == b"inf"


def test_hincrbyfloat_differential(r, ref):
    rnd = random.Random(11)
    for i in range(300):
        x = rnd.choice([
            "%.*f" % (rnd.randint(0, 19), rnd.uniform(-1e5, 1e5)),
            "%de%d" % (rnd.randint(-99, 99), rnd.randint(-25, 25)),
            "%.17g" % rnd.random(),
            "0x%xp%d" % (rnd.getrandbits(66), rnd.randint(-70, 5)),
            "%d" % rnd.randint(-10**6, 10**6),
        ])
        field = "f%d" % (i % 7)
        outs = []
        for c in (r, ref):
            try:
                outs.append(c.execute_command("HINCRBYFLOAT", "h", field, x))
            except redis.ResponseError as e:
                outs.append(str(e))
        assert outs[0] == outs[1], (field, x)
    assert r.hgetall("h") == ref.hgetall("h")


# -- HRANDFIELD ----------------------------------------------------------------------

def test_hrandfield_without_count(r, raw3):
    assert r.hrandfield("nokey") is None
    assert raw3.call("HRANDFIELD", "nokey") == b"_\r\n"
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    seen = {r.hrandfield("h") for _ in range(200)}
    assert seen == {b"a", b"b", b"c"}


def test_hrandfield_counts(r):
    fields = {b"f%d" % i: b"v%d" % i for i in range(20)}
    r.hset("h", mapping=fields)
    assert r.hrandfield("nokey", 5) == []
    assert r.hrandfield("h", 0) == []
    for count in (1, 5, 7, 15, 19, 20, 25, 1000):
        got = r.hrandfield("h", count)
        assert len(got) == min(count, 20)
        assert len(set(got)) == len(got)
        assert set(got) <= set(fields)
    for count in (-1, -5, -20, -100):
        got = r.hrandfield("h", count)
        assert len(got) == -count
        assert set(got) <= set(fields)
    many = r.hrandfield("h", -2000)
    assert set(many) == set(fields)  # repetitions cover everything
    assert len(set(many)) < len(many)


def test_hrandfield_withvalues_resp2(r, raw):
    fields = {b"f%d" % i: b"v%d" % i for i in range(10)}
    r.hset("h", mapping=fields)
    for count in (3, 10, 20, -3, -30, 1, -1):
        flat = r.execute_command("HRANDFIELD", "h", count, "WITHVALUES")
        assert len(flat) == 2 * (min(count, 10) if count > 0 else -count)
        pairs = list(zip(flat[::2], flat[1::2]))
        for f, v in pairs:
            assert fields[f] == v
        if count > 0:
            assert len({f for f, _ in pairs}) == len(pairs)
    r.delete("h")
    r.hset("h", "only", "val")
    assert raw.call("HRANDFIELD", "h", "-2", "WITHVALUES") == \
        b"*4\r\n$4\r\nonly\r\n$3\r\nval\r\n$4\r\nonly\r\n$3\r\nval\r\n"
    assert raw.call("HRANDFIELD", "h", "5", "withvalues") == b"*2\r\n$4\r\nonly\r\n$3\r\nval\r\n"


def test_hrandfield_withvalues_resp3_pairs(r, raw3):
    r.hset("h", "only", "val")
    assert raw3.call("HRANDFIELD", "h", "-2", "WITHVALUES") == \
        b"*2\r\n*2\r\n$4\r\nonly\r\n$3\r\nval\r\n*2\r\n$4\r\nonly\r\n$3\r\nval\r\n"
    assert raw3.call("HRANDFIELD", "h", "3", "WITHVALUES") == b"*1\r\n*2\r\n$4\r\nonly\r\n$3\r\nval\r\n"
    assert raw3.call("HRANDFIELD", "h", "3") == b"*1\r\n$4\r\nonly\r\n"
    assert raw3.call("HRANDFIELD", "h", "0", "WITHVALUES") == b"*0\r\n"
    assert raw3.call("HRANDFIELD", "nokey", "3", "WITHVALUES") == b"*0\r\n"


def test_hrandfield_errors(r, raw):
    r.hset("h", "a", "1")
    assert raw.call("HRANDFIELD", "h", "x") == b"-ERR value is not an integer or out of range\r\n"
    assert raw.call("HRANDFIELD", "h", "1", "foo") == b"-ERR syntax error\r\n"
    assert raw.call("HRANDFIELD", "h", "1", "withvalues", "x") == b"-ERR syntax error\r\n"
    assert raw.call("HRANDFIELD", "h", "x", "foo") == b"-ERR value is not an integer or out of range\r\n"
    assert raw.call("HRANDFIELD", "h", "-9223372036854775808") == \
        b"-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n"
    assert raw.call("HRANDFIELD", "h", "9223372036854775807", "WITHVALUES") == b"-ERR value is out of range\r\n"
    assert raw.call("HRANDFIELD", "h", "-4611686018427387904", "WITHVALUES") == \
        b"-ERR value is out of range\r\n"
    assert raw.call("HRANDFIELD", "nokey", "x") == b"-ERR value is not an integer or out of range\r\n"


# -- encodings -------------------------------------------------------------------------

def test_encoding_entries_threshold(r):
    with overrides(r, hash_max_listpack_entries="4"):
        r.hset("h", mapping={"a": "1", "b": "2", "c": "3", "d": "4"})
        assert enc(r, "h") == b"listpack"
        r.hset("h", "a", "updated")
        assert enc(r, "h") == b"listpack"
        r.hset("h", "e", "5")
        assert enc(r, "h") == b"hashtable"
        r.hdel("h", "a", "b", "c", "d")
        assert enc(r, "h") == b"hashtable"   # never converts back
        r.hset("h2", mapping={"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"})
        assert enc(r, "h2") == b"hashtable"
        r.hsetnx("h3", "a", "1")
        for i in range(4):
            r.hincrby("h3", "n%d" % i, 1)
        assert enc(r, "h3") == b"hashtable"
    with overrides(r, hash_max_listpack_entries="0"):
        r.hset("h4", "a", "1")
        assert enc(r, "h4") == b"hashtable"


def test_encoding_value_threshold_and_aliases(r):
    with overrides(r, hash_max_ziplist_value="8"):
        assert r.config_get("hash-max-listpack-value") == {"hash-max-listpack-value": "8"}
        r.hset("h", "f", "12345678")
        assert enc(r, "h") == b"listpack"
        r.hset("h", "f", "123456789")
        assert enc(r, "h") == b"hashtable"
        r.hset("k", "123456789", "v")
        assert enc(r, "k") == b"hashtable"
        r.hsetnx("n", "a", "x" * 9)
        assert enc(r, "n") == b"hashtable"
        # HSETNX on an existing field writes nothing and converts nothing.
        r.hset("m", "a", "1")
        r.hsetnx("m", "a", "x" * 9)
        assert enc(r, "m") == b"listpack"
        # The length check covers every argument of HSET, even updates.
        r.hset("u", "a", "1")
        r.execute_command("HSET", "u", "a", "x" * 9, "b", "1")
        assert enc(r, "u") == b"hashtable"
        r.hincrbyfloat("fl", "f", "1.123456789")
        assert enc(r, "fl") == b"hashtable"
        r.hincrby("i", "f", 10**12)
        assert enc(r, "i") == b"hashtable"
    with overrides(r, hash_max_ziplist_entries="2"):
        assert r.config_get("hash-max-listpack-entries") == {"hash-max-listpack-entries": "2"}
        r.hset("z", mapping={"a": "1", "b": "2", "c": "3"})
        assert enc(r, "z") == b"hashtable"


def test_encoding_matches_redis(r, ref):
    rnd = random.Random(3)
    for c in (r, ref):
        c.config_set("hash-max-listpack-entries", "16")
        c.config_set("hash-max-listpack-value", "10")
    try:
        for step in range(400):
            key = "h%d" % rnd.randint(0, 5)
            op = rnd.random()
            if op < 0.5:
                args = ["HSET", key]
                for _ in range(rnd.randint(1, 4)):
                    args += ["f%d" % rnd.randint(0, 20), "x" * rnd.randint(0, 12)]
            elif op < 0.6:
                args = ["HSETNX", key, "f%d" % rnd.randint(0, 20), "y" * rnd.randint(0, 12)]
            elif op < 0.7:
                args = ["HINCRBY", key, "n%d" % rnd.randint(0, 5), rnd.randint(-10**12, 10**12)]
            elif op < 0.8:
                args = ["HINCRBYFLOAT", key, "g%d" % rnd.randint(0, 5), "%.3f" % rnd.uniform(-99, 99)]
            else:
                args = ["HDEL", key] + ["f%d" % rnd.randint(0, 20) for _ in range(rnd.randint(1, 6))]
            assert r.execute_command(*args) == ref.execute_command(*args), args
            assert enc(r, key) == enc(ref, key), (step, args)
            if enc(ref, key) == b"listpack":
                # Same field order as Redis's listpack.
                assert r.execute_command("HGETALL", key) == ref.execute_command("HGETALL", key)
                assert r.hkeys(key) == ref.hkeys(key)
            else:
                assert r.hgetall(key) == ref.hgetall(key)
    finally:
        for c in (r, ref):
            c.config_set("hash-max-listpack-entries", "512")
            c.config_set("hash-max-listpack-value", "64")


# -- HSCAN -------------------------------------------------------------------------------

def scan_all(r, key, count=10, match=None):
    items, calls = scan_to_end(r, "HSCAN", key, count, match)
    return list(zip(items[::2], items[1::2])), calls


def test_hscan_small_returns_everything(r, raw):
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    assert raw.call("HSCAN", "h", "0", "COUNT", "1") == \
        b"*2\r\n$1\r\n0\r\n*6\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n"
    # The cursor is ignored for a listpack.
    assert r.hscan("h", 12345) == (0, {b"a": b"1", b"b": b"2", b"c": b"3"})
    assert r.hscan("h", 0, match="[ab]") == (0, {b"a": b"1", b"b": b"2"})
    assert raw.call("HSCAN", "nokey", "0") == b"*2\r\n$1\r\n0\r\n*0\r\n"


def test_hscan_errors(r, raw):
    r.hset("h", "a", "1")
    check_scan_errors(raw, "HSCAN", "h")


def test_hscan_big_hash_full_iteration(r):
    n = 5000
    p = r.pipeline(transaction=False)
    for i in range(0, n, 500):
        p.hset("h", mapping={b"field:%d" % j: b"%d" % j for j in range(i, i + 500)})
    p.execute()
    assert enc(r, "h") == b"hashtable"
    got, calls = scan_all(r, "h", count=100)
    assert calls > 10    # incremental
    assert len(got) == n == len(dict(got))
    assert all(v == f.split(b":")[1] for f, v in got)
    got, _ = scan_all(r, "h", count=1000, match="field:1*")
    assert {f for f, _ in got} == {b"field:%d" % i for i in range(n) if str(i).startswith("1")}


def test_hscan_guarantee_under_modification(r):
    n = 3000
    r.hset("h", mapping={b"f%d" % i: b"1" for i in range(n)})
    rnd = random.Random(7)
    stable = {b"f%d" % i for i in range(n) if i % 3 == 0}    # never touched
    deleted_pool = [b"f%d" % i for i in range(n) if i % 3 == 1]
    rnd.shuffle(deleted_pool)
    added = 0

    def change():
        nonlocal added
        # Modify between calls: delete some, add new ones, rewrite values.
        for _ in range(10):
            if deleted_pool:
                r.hdel("h", deleted_pool.pop())
        r.hset("h", mapping={b"new%d" % (added + k): b"2" for k in range(15)})
        added += 15

    items, _ = scan_to_end(r, "HSCAN", "h", count=37, between=change)
    seen = items[::2]
    assert stable <= set(seen)
    assert len(seen) == len(set(seen))  # no field twice


# -- big hashes ----------------------------------------------------------------------------

def test_big_hash_100k(r):
    n = 100_000
    p = r.pipeline(transaction=False)
    for i in range(0, n, 1000):
        p.execute_command("HSET", "h", *[x for j in range(i, i + 1000) for x in (b"k%d" % j, b"v%d" % j)])
    assert sum(p.execute()) == n
    assert r.hlen("h") == n
    assert enc(r, "h") == b"hashtable"
    allf = r.hgetall("h")
    assert len(allf) == n and allf[b"k99999"] == b"v99999" and allf[b"k0"] == b"v0"
    assert len(r.hkeys("h")) == n
    got = r.hrandfield("h", 500)
    assert len(got) == len(set(got)) == 500 and all(f.startswith(b"k") for f in got)
    got = r.hrandfield("h", -3000)
    assert len(got) == 3000
    got = r.execute_command("HRANDFIELD", "h", 40_000, "WITHVALUES")
    pairs = dict(zip(got[::2], got[1::2]))
    assert len(pairs) == 40_000 and all(b"v" + f[1:] == v for f, v in pairs.items())
    singles = {r.hrandfield("h") for _ in range(300)}
    assert len(singles) > 250
    got, calls = scan_all(r, "h", count=2000)
    assert len(got) == n == len(dict(got))
    assert r.hdel("h", *[b"k%d" % i for i in range(0, n, 2)]) == n // 2
    assert r.hlen("h") == n // 2
    got = r.hrandfield("h", -5000)
    assert all(int(f[1:]) % 2 == 1 for f in got)
    r.hset("h", "k1", "5")
    assert r.hincrby("h", "k1", 5) == 10


# -- notifications -------------------------------------------------------------------------

NOTIFY_SEQ = [
    ["HSET", "h", "a", "1"],
    ["HSET", "h", "a", "1"],              # no new field, still an event
    ["HSETNX", "h", "a", "2"],            # nothing written, no event
    ["HSETNX", "h", "b", "2"],
    ["HINCRBY", "h", "n", "1"],
    ["HINCRBYFLOAT", "h", "x", "1.5"],
    ["HDEL", "h", "zz"],                  # nothing deleted, no event
    ["HINCRBY", "h", "a", "x"],           # error, no event
    ["HDEL", "h", "a", "b", "n", "x"],
]
NOTIFY_EXPECTED = [
    (b"__keyevent@0__:hset", b"h"), (b"__keyevent@0__:hset", b"h"),
    (b"__keyevent@0__:hset", b"h"), (b"__keyevent@0__:hincrby", b"h"),
    (b"__keyevent@0__:hincrbyfloat", b"h"), (b"__keyevent@0__:hdel", b"h"),
    (b"__keyevent@0__:del", b"h"),
]


@pytest.mark.parametrize("target", ["ophidis", "redis"])
def test_notifications(request, target):
    # The expected events are checked against real Redis too.
    r = request.getfixturevalue("r" if target == "ophidis" else "ref")
    got = events_of(r, NOTIFY_SEQ, errors_ok=True)
    assert [e for e in got if e[0].startswith(b"__keyevent")] == NOTIFY_EXPECTED
    assert [e for e in got if e[0].startswith(b"__keyspace")] == [
        (b"__keyspace@0__:" + k, ev_name[len(b"__keyevent@0__:"):]) for ev_name, k in NOTIFY_EXPECTED]


def test_notifications_inprocess():
    events, replies = run_inprocess(NOTIFY_SEQ)
    assert [e for e in events if e[0].startswith(b"__keyevent")] == NOTIFY_EXPECTED
    assert replies[-1] == ":4\r\n"


def test_dirty_counter(r):
    def dirty():
        return int(r.info("persistence")["rdb_changes_since_last_save"])
    d0 = dirty()
    r.hset("h", "a", "1", )
    r.execute_command("HSET", "h", "a", "2", "b", "3")   # +2 pairs
    assert dirty() - d0 == 3
    d0 = dirty()
    r.hdel("h", "a", "b", "c")
    assert dirty() - d0 == 2


def test_encoding_after_lowering_threshold(r):
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    r.hset("g", mapping={"a": "1", "b": "2", "c": "3"})
    with overrides(r, hash_max_listpack_entries="2"):
        assert enc(r, "h") == b"listpack"
        assert r.hsetnx("h", "a", "9") == 0       # nothing written: no conversion
        assert enc(r, "h") == b"listpack"
        # Any write re-checks the length, even an update (hashTypeSet).
        assert r.hset("h", "a", "5") == 0
        assert enc(r, "h") == b"hashtable"
        r.hincrby("g", "a", 1)
        assert enc(r, "g") == b"hashtable"


def test_hincrbyfloat_propagates_as_hset():
    data = run_inprocess([["HINCRBYFLOAT", "h", "f", "0.1"], ["HINCRBYFLOAT", "h", "f", "0.2"]],
                         hooks=True, full=True)
    assert data["argvs"] == [["HSET", "h", "f", "0.1"], ["HSET", "h", "f", "0.3"]]
