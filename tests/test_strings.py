"""String commands: replies, options and exact error texts."""

import time

import pytest
from redis.exceptions import ResponseError


def err(fn, *a):
    with pytest.raises(ResponseError) as e:
        fn(*a)
    return str(e.value)


def test_get_set_basic(r):
    assert r.get("k") is None
    assert r.set("k", b"v") is True
    assert r.get("k") == b"v"
    assert r.set("k", b"\x00\xffbinary\r\n") is True
    assert r.get("k") == b"\x00\xffbinary\r\n"


def test_set_nx_xx(r):
    assert r.set("k", "1", nx=True) is True
    assert r.set("k", "2", nx=True) is None
    assert r.get("k") == b"1"
    assert r.set("k", "3", xx=True) is True
    assert r.set("missing", "3", xx=True) is None
    assert r.exists("missing") == 0


def test_set_get_option(r, raw):
    assert raw("SET", "k", "a", "GET") == b"$-1\r\n"
    assert raw("SET", "k", "b", "GET") == b"$1\r\na\r\n"
    assert raw("SET", "k", "c", "NX", "GET") == b"$1\r\nb\r\n"
    assert r.get("k") == b"b"
    assert raw("SET", "k2", "c", "XX", "GET") == b"$-1\r\n"
    assert r.exists("k2") == 0


def test_set_expire_options(r):
    r.set("k", "v", ex=100)
    assert 99 <= r.ttl("k") <= 100
    r.set("k", "v", px=100000)
    assert 99000 <= r.pttl("k") <= 100000
    r.set("k", "v", exat=int(time.time()) + 50)
    assert 48 <= r.ttl("k") <= 50
    r.set("k", "v", pxat=int(time.time() * 1000) + 50000)
    assert 48 <= r.ttl("k") <= 50
    r.set("k", "v2", keepttl=True)
    assert r.ttl("k") > 0
    r.set("k", "v3")
    assert r.ttl("k") == -1


@pytest.mark.parametrize("args,msg", [
    (["SET", "k", "v", "EX", "0"], "invalid expire time in 'set' command"),
    (["SET", "k", "v", "EX", "-1"], "invalid expire time in 'set' command"),
    (["SET", "k", "v", "PX", "abc"], "value is not an integer or out of range"),
    (["SET", "k", "v", "EX", "10", "PX", "10"], "syntax error"),
    (["SET", "k", "v", "NX", "XX"], "syntax error"),
    (["SET", "k", "v", "KEEPTTL", "EX", "1"], "syntax error"),
    (["SET", "k", "v", "EX"], "syntax error"),
    (["SET", "k", "v", "FOO"], "syntax error"),
    (["SET", "k", "v", "EX", "9223372036854775807"], "invalid expire time in 'set' command"),
    (["SETEX", "k", "0", "v"], "invalid expire time in 'setex' command"),
    (["PSETEX", "k", "-5", "v"], "invalid expire time in 'psetex' command"),
    (["GETEX", "k", "EX", "0"], None),
    (["SET", "k"], "wrong number of arguments for 'set' command"),
])
def test_set_errors(r, args, msg):
    if msg is None:
        r.execute_command(*args)  # missing key: nil, options are validated after lookup
        return
    assert err(r.execute_command, *args) == msg


def test_setnx_setex_psetex(r):
    assert r.setnx("k", "a") is True
    assert r.setnx("k", "b") is False
    r.setex("e", 10, "v")
    assert 9 <= r.ttl("e") <= 10
    r.psetex("p", 10000, "v")
    assert 9000 <= r.pttl("p") <= 10000


def test_getex_getdel_getset(r):
    r.set("k", "v")
    assert r.getex("k", ex=100) == b"v"
    assert 99 <= r.ttl("k") <= 100
    assert r.getex("k", persist=True) == b"v"
    assert r.ttl("k") == -1
    assert r.getex("k", pxat=int(time.time() * 1000) - 1000) == b"v"
    assert r.exists("k") == 0
    r.set("k", "v")
    assert r.getdel("k") == b"v"
    assert r.getdel("k") is None
    assert r.getset("k", "1") is None
    assert r.getset("k", "2") == b"1"
    assert err(r.execute_command, "GETEX", "k", "EX", "1", "PERSIST") == "syntax error"


def test_mget_mset_msetnx(r):
    assert r.mset({"a": "1", "b": "2"}) is True
    assert r.mget("a", "b", "c") == [b"1", b"2", None]
    assert r.msetnx({"c": "3", "a": "x"}) is False
    assert r.get("c") is None
    assert r.msetnx({"c": "3", "d": "4"}) is True
    assert err(r.execute_command, "MSET", "a", "1", "b") == "wrong number of arguments for 'mset' command"
    assert err(r.execute_command, "MSETNX", "a") == "wrong number of arguments for 'msetnx' command"


def test_incr_family(r):
    assert r.incr("n") == 1
    assert r.incrby("n", 10) == 11
    assert r.decr("n") == 10
    assert r.decrby("n", 5) == 5
    r.set("n", "9223372036854775807")
    assert err(r.incr, "n") == "increment or decrement would overflow"
    r.set("n", "-9223372036854775808")
    assert err(r.decr, "n") == "increment or decrement would overflow"
    assert err(r.decrby, "n", -9223372036854775808) == "decrement would overflow"
    r.set("s", "abc")
    assert err(r.incr, "s") == "value is not an integer or out of range"
    r.set("s", " 1")
    assert err(r.incr, "s") == "value is not an integer or out of range"
    r.set("s", "01")
    assert err(r.incr, "s") == "value is not an integer or out of range"
    assert err(r.incrby, "n", "1.5") == "value is not an integer or out of range"
    r.set("t", "5", ex=100)
    r.incr("t")
    assert r.ttl("t") > 0  # INCR keeps the TTL


def test_incrbyfloat(r, raw):
    assert r.incrbyfloat("f", 10.5) == 10.5
    assert raw("INCRBYFLOAT", "f", "0.1") == b"$4\r\n10.6\r\n"
    r.set("f", "5.0e3")
    assert raw("INCRBYFLOAT", "f", "2.0e2") == b"$4\r\n5200\r\n"
    r.set("f", "3")
    assert raw("INCRBYFLOAT", "f", "1.5") == b"$3\r\n4.5\r\n"
    assert r.get("f") == b"4.5"
    assert err(r.execute_command, "INCRBYFLOAT", "f", "nan") == "value is not a valid float"
    assert err(r.execute_command, "INCRBYFLOAT", "f", "abc") == "value is not a valid float"
    assert err(r.execute_command, "INCRBYFLOAT", "f", "inf") == "increment would produce NaN or Infinity"
    # Redis adds in long double: this does not overflow.
    r.set("big", "1.7e308")
    assert raw("INCRBYFLOAT", "big", "1.7e308").startswith(b"$309\r\n34000000000000000000627355605039519")


def test_append_strlen_range(r):
    assert r.append("k", "Hello") == 5
    assert r.append("k", " World") == 11
    assert r.strlen("k") == 11
    assert r.strlen("missing") == 0
    assert r.getrange("k", 0, 4) == b"Hello"
    assert r.getrange("k", -5, -1) == b"World"
    assert r.getrange("k", 5, 2) == b""
    assert r.getrange("k", 0, 100) == b"Hello World"
    assert r.getrange("missing", 0, 10) == b""
    assert r.execute_command("SUBSTR", "k", 0, 4) == b"Hello"
    assert r.setrange("k", 6, "Redis") == 11
    assert r.get("k") == b"Hello Redis"
    assert r.setrange("pad", 5, "x") == 6
    assert r.get("pad") == b"\x00" * 5 + b"x"
    assert r.setrange("empty", 0, "") == 0
    assert r.exists("empty") == 0
    assert err(r.setrange, "k", -1, "x") == "offset is out of range"
    assert err(r.setrange, "k", 512 * 1024 * 1024, "x") == \
        "string exceeds maximum allowed size (proto-max-bulk-len)"


def test_object_encoding_strings(r):
    r.set("i", "12345")
    assert r.object("encoding", "i") == b"int"
    r.set("e", "hello")
    assert r.object("encoding", "e") == b"embstr"
    r.set("raw", "x" * 45)
    assert r.object("encoding", "raw") == b"raw"
    r.set("a", "hello")
    r.append("a", "x")
    assert r.object("encoding", "a") == b"raw"
    r.set("n", "1")
    r.incr("n")
    assert r.object("encoding", "n") == b"int"


def test_wrongtype(r, server):
    # Any non-string value will do: use a data type if available, else skip.
    try:
        r.execute_command("LPUSH", "l", "x")
    except ResponseError:
        pytest.skip("no list type in this build")
    for cmd in (("GET", "l"), ("APPEND", "l", "x"), ("INCR", "l"), ("STRLEN", "l"),
                ("GETRANGE", "l", 0, 1), ("SETRANGE", "l", 0, "x"), ("GETDEL", "l")):
        assert err(r.execute_command, *cmd) == "WRONGTYPE Operation against a key holding the wrong kind of value"
    assert r.mget("l") == [None]
    assert r.set("l", "v") is True      # SET overwrites a key of any type
    assert r.get("l") == b"v"


def test_large_value(r):
    v = b"x" * (5 * 1024 * 1024)
    r.set("big", v)
    assert r.get("big") == v


def test_incrbyfloat_result_encoding_matches_redis(r, ref):
    # INCRBYFLOAT stores an embstr even when the result reads as an integer
    seq = [("INCRBYFLOAT", "a", "10"), ("OBJECT", "ENCODING", "a"), ("OBJECT", "REFCOUNT", "a"),
           ("COPY", "a", "b"), ("OBJECT", "ENCODING", "b"), ("INCR", "b"), ("OBJECT", "ENCODING", "b"),
           ("INCRBYFLOAT", "c", "1e30"), ("OBJECT", "ENCODING", "c"), ("APPEND", "a", "x"),
           ("OBJECT", "ENCODING", "a"), ("INCRBYFLOAT", "d", "2.5"), ("OBJECT", "ENCODING", "d"),
           ("GET", "a"), ("LCS", "a", "b"), ("SET", "e", "10"), ("OBJECT", "ENCODING", "e")]
    for cmd in seq:
        assert r.execute_command(*cmd) == ref.execute_command(*cmd), cmd
