"""The compiled request loop (src/ophidis/net/_speedups.pyx) against the Python
one (client._run_requests): the same traffic through a server of each kind
must give the same bytes back and the same statistics."""

from __future__ import annotations

import os
import random
import re
import shutil
import socket
import subprocess
import sys
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.differential import doubles_70
from support.replication import SyncStream
from support.resp import RespConn, command, encode
from support.servers import ROOT, SRC, start_twin, twin_pair
from support.wait import wait_until

from ophidis.cmdtable.registry import Command
from ophidis import compiled
from ophidis.net import client
from ophidis.protocol import reader
from ophidis.protocol import resp
from ophidis.protocol.resp import encode_argv

PURE = os.environ.get("OPHIDIS_PURE") == "1"


def test_compiled_loop_is_built_and_used():
    """`make test` must exercise the compiled loop: the build is part of the
    install (a silent fall-back to Python would hide a slow server)."""
    if PURE:
        pytest.skip("OPHIDIS_PURE=1: the Python loop is asked for")
    assert compiled.enabled(), "the compiled layer is not built: run `make venv` / `pip install -e .`"
    assert client._RUN is compiled.load("net._client").run
    assert issubclass(Command, compiled.load("cmdtable._core").CommandCore)
    assert client.Client.data_received is compiled.load("net._client").data_received
    assert issubclass(client.Client, compiled.load("net._core").ClientCore)


def test_stale_build_is_ignored(tmp_path):
    """A build made from other sources (a .pyx or .pxd changed since) is not run."""
    if not compiled.enabled():
        pytest.skip("no compiled module to go stale")
    pkg = tmp_path / "ophidis"
    shutil.copytree(os.path.join(SRC, "ophidis"), pkg,
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(pkg / "commands" / "_bodies.pyx", "a") as f:
        f.write("\n# changed after the build\n")
    code = "import ophidis.compiled as s, ophidis.net.client as c; print(not s.enabled(), c._RUN.__name__)"
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("OPHIDIS_PURE", None)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert p.stdout.split() == ["True", "_run_requests"], p.stdout + p.stderr
    assert "built from other sources" in p.stderr


@given(st.binary(max_size=40) | st.lists(st.sampled_from([b"*", b"-", b"1", b"9", b"0", b"x", b"\r\n"]),
                                          max_size=30).map(b"".join))
def test_long_header_guard_matches_regex(data):
    expected = reader._LONG_HEADER(data) is not None
    if compiled.enabled():
        assert compiled.load("protocol._reader").long_header(data) is expected
        assert compiled.load("protocol._reader").long_header(bytearray(data)) is expected


@given(st.binary(max_size=40) | st.lists(st.sampled_from([b"*", b"-", b"1", b"0", b"x", b"\r", b"\n", b"\r\n"]),
                                          max_size=14).map(b"".join))
def test_suspicious_guard_matches_python(data):
    if compiled.enabled():
        expected = reader._suspicious_py(data)
        assert compiled.load("protocol._reader").suspicious(data) is expected
        assert compiled.load("protocol._reader").suspicious(bytearray(data)) is expected


# large elements (about 10 KB: the headers past the Python encoder's table of
# small lengths) are made of one repeated byte: their content does not matter
_LARGE = st.builds(lambda n, c: c * n, st.integers(9990, 10010), st.binary(min_size=1, max_size=1))


@given(st.lists(st.binary(max_size=30) | _LARGE, max_size=40))
def test_compiled_bulk_items_matches(items):
    """LRANGE's reply encoder: the compiled one gives the Python one's bytes."""
    if not compiled.enabled():
        pytest.skip("the compiled loop is not built")
    assert compiled.load("protocol._resp").bulk_items(items) == resp.bulk_items_py(items)
    assert compiled.load("protocol._resp").bulk_items([bytearray(x) for x in items]) == resp.bulk_items_py(items)
    assert compiled.load("protocol._resp").bulk_items(tuple(items)) == resp.bulk_items_py(tuple(items))


@given(st.lists(st.binary(max_size=30) | st.binary(min_size=1020, max_size=1030), max_size=20),
       st.sampled_from([None, 7, "x", bytearray(b"ab")]))
def test_compiled_request_encoder_matches(argv, odd):
    """Propagation's encoder: the compiled one gives encode_argv's bytes for
    a list of bytes, and leaves any other element to the Python one."""
    if not compiled.enabled():
        pytest.skip("the compiled loop is not built")
    assert compiled.load("protocol._resp").encode_bytes_argv(argv) == encode_argv(argv)
    if odd is not None:
        assert compiled.load("protocol._resp").encode_bytes_argv(argv + [odd]) is None


_PIECES = [b"*", b"$", b"\r\n", b"\r", b"\n", b"0", b"1", b"2", b"3", b"01", b"-1", b"+", b" ", b"x", b":1"]


def _canonical(argvs):
    return b"".join(encode(*a) for a in argvs)


@given(st.lists(st.lists(st.binary(max_size=12), min_size=1, max_size=4), max_size=4),
       st.lists(st.sampled_from(_PIECES), max_size=12).map(b"".join),
       st.lists(st.lists(st.binary(max_size=5), min_size=1, max_size=3), max_size=2),
       st.integers(0, 12))
def test_request_parser_agrees_with_hiredis(reqs, odd, more, cut):
    """The C parser of a read's requests (ReadFeed): the requests it takes
    before handing over are the ones hiredis gives for the same bytes, and
    it hands over at a request boundary (hiredis, fed the bytes before that
    point, holds nothing)."""
    if not compiled.enabled():
        pytest.skip("the compiled loop is not built")
    import hiredis
    data = _canonical(reqs) + odd + _canonical(more)
    data = data[:len(data) - cut] if cut < len(data) else data
    taken, pos = compiled.load("protocol._reader").parse_requests(data)
    h = hiredis.Reader()
    h.feed(data[:pos])
    got = []
    while True:
        r = h.gets()
        if r is False:
            break
        got.append(r)
    assert got == taken
    assert pos == len(_canonical(taken))
    # and from the whole read, hiredis gives those first
    h = hiredis.Reader()
    h.feed(data)
    for r in taken:
        assert h.gets() == r
    if not odd and not cut:
        assert taken == reqs + more and pos == len(data)


@given(st.lists(st.sampled_from([b"PING", b"set", b"a", b"  ", b"\t", b"\r", b"\n", b"\x0b", b"\x0c",
                                 b"\xff", b"x=1", b"*", b"\"", b"\x00"]), max_size=30).map(b"".join))
def test_inline_lines_agree_with_reader(data):
    """A read of plain inline lines: the C parser gives reader.py's lines."""
    if not compiled.enabled():
        pytest.skip("the compiled loop is not built")
    rd = reader.RequestReader(None)
    data += b"\n"
    rd.feed(data, True)
    assert compiled.load("protocol._reader").inline_requests(data) == rd.lines


def test_same_replies_for_inline_pipelines(pair, redis_server):
    """Reads of inline lines (what redis-benchmark's PING_INLINE and telnet
    send), with empty lines, blank words, a command that blocks halfway
    through a read, and reads that mix inline lines and multibulk requests:
    both loops and redis-server give the same bytes."""
    lines = [b"PING\r\n", b"SET k v\r\n", b"GET k\r\n", b"\r\n", b"  \t \n", b"ECHO  a\tb \r\n",
             b"INCR n\n", b"LPUSH l a b c\n", b"LRANGE l 0 -1\n", b"NOSUCH x\n", b"GET\n"]
    rnd = random.Random(3)
    chunks = [b"".join(rnd.choice(lines) for _ in range(rnd.randrange(1, 20))) for _ in range(30)]
    chunks.append(b"PING\r\n" + encode("GET", "k") + b"PING\r\n")
    chunks.append(encode("GET", "k") + b"ECHO x\r\n")
    chunks.append(b"DEL q\r\nBLPOP q 0.2\r\nECHO after\r\nPING\r\n")
    chunks.append(b"ECHO \"quoted words\"\r\nPING\r\n")
    for p in pair + [redis_server.port]:
        _exchange(p, [encode("FLUSHALL")])
    out = _both(pair, chunks, settle=0.6)
    assert out == _exchange(redis_server.port, chunks, settle=0.6)
    assert b"$5\r\nafter\r\n" in out and b"quoted words" in out


@pytest.fixture(scope="module")
def pair():
    for servers in twin_pair():
        yield [s.port for s in servers]


def _exchange(port, chunks, settle=None) -> bytes:
    """Send each chunk as its own write; return all the server replied: up
    to the +OK of a QUIT sent after the chunks, or, with settle (odd input
    whose replies cannot be told in advance), everything until the server
    closes or stays quiet for settle seconds."""
    with RespConn(port) as s:
        s.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for c in chunks:
            s.send_raw(c)
            time.sleep(0.01)
        return s.read_until_quiet(settle) if settle else s.quit_and_read()


def _stats(port):
    info = command(port, "INFO", "commandstats").decode()
    return sorted(re.findall(r"cmdstat_([^:]+):calls=(\d+),usec=\d+,usec_per_call=[\d.]+,"
                             r"rejected_calls=(\d+),failed_calls=(\d+)", info))


def _both(pair, chunks, settle=None):
    replies = [_exchange(p, chunks, settle) for p in pair]
    assert replies[0] == replies[1]
    return replies[0]


def test_same_replies_for_mixed_pipelines(pair):
    rnd = random.Random(7)
    reqs = []
    for i in range(400):
        k = "k%d" % rnd.randrange(20)
        reqs.append(rnd.choice([
            encode("SET", k, "v%d" % i), encode("GET", k), encode("INCR", "n" + k), encode("LPUSH", "l" + k, i),
            encode("HSET", "h" + k, "f", i), encode("GET"), encode("SET", k), encode("NOSUCH", k),
            encode("LPUSH", k, 1), encode("INCR", k), encode("ECHO", "x" * rnd.randrange(3000)),
            encode("MULTI"), encode("EXEC"), encode("DISCARD"), encode("PING"), encode("DEL", k),
            b"PING\r\n", encode("CLIENT", "SETNAME", "n%d" % i), encode("SELECT", rnd.randrange(3)),
        ]))
    data = b"".join(reqs)
    # the same stream cut at random points into reads of every size
    cuts = sorted(rnd.sample(range(1, len(data)), 120))
    chunks = [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]
    for p in pair:
        _exchange(p, [encode("FLUSHALL"), encode("CONFIG", "RESETSTAT")])
    out = _both(pair, chunks)
    assert out.count(b"-ERR wrong number of arguments") > 0
    assert out.count(b"-WRONGTYPE") > 0
    assert _stats(pair[0]) == _stats(pair[1])


@pytest.mark.parametrize("tail", [
    b"*2\r\n$3\r\nGET\r\n:1\r\n",            # an integer element
    b"*2\r\n$6\r\nEXISTS\r\n$-1\r\n",        # a null bulk element
    b"*2\r\n$4\r\nECHO\r\n*1\r\n$1\r\nx\r\n",  # a nested array
    b"*1\r\n$-5\r\n", b"*x\r\n", b"*3000000000\r\n",
    b"$3\r\nfoo\r\n",                          # top-level bulk: two inline commands
    b"*0\r\n*-1\r\n",                           # ignored
    b"*2\r\n$3\r\nGET\r\n$3\r\nab",           # incomplete, then PING
])
def test_same_handling_of_odd_requests(pair, redis_server, tail):
    """Requests hiredis refuses or gives in another shape than an array of
    bulk strings: the requests before them run and reply first, then what
    follows gets redis-server's reply (byte for byte), in both loops."""
    chunks = [encode("SET", "a", "1") + encode("GET", "a") + tail, encode("PING")]
    out = _both(pair, chunks, settle=0.3)
    assert out == _exchange(redis_server.port, chunks, settle=0.3)
    assert out.startswith(b"+OK\r\n$1\r\n1\r\n")


def test_same_slowlog_and_latency_histogram(pair):
    reqs = [encode("CONFIG", "SET", "slowlog-log-slower-than", "0"), encode("SLOWLOG", "RESET"),
            encode("CONFIG", "RESETSTAT")]
    reqs += [encode("SET", "s%d" % i, i) for i in range(50)] + [encode("DEBUG", "SLEEP", "0.01")]
    for p in pair:
        with RespConn(p) as c:
            c.send_raw(b"".join(reqs))
            c.read_replies(len(reqs))
    lens = [command(p, "SLOWLOG", "LEN") for p in pair]
    # SLOWLOG RESET, CONFIG RESETSTAT, 50 SETs and DEBUG SLEEP (as redis-server)
    assert lens[0] == lens[1] == b":53\r\n"
    for p in pair:
        h = command(p, "LATENCY", "HISTOGRAM", "set")
        assert b"calls\r\n:50\r\n" in h
        command(p, "CONFIG", "SET", "slowlog-log-slower-than", "10000")


def _request_and_cut(draw_args, cut, prefix):
    data = prefix + b"".join(encode(*a) for a in draw_args)
    return data[:len(data) - cut] if cut else data


@given(st.lists(st.lists(st.binary(max_size=12), min_size=1, max_size=4), min_size=1, max_size=3),
       st.integers(0, 6), st.sampled_from([b"", b"*1\r\n$4\r\nPING\r\n", b"xx"]),
       st.lists(st.binary(max_size=12), min_size=1, max_size=4))
def test_ends_with_request_matches_python(reqs, cut, prefix, other):
    """The compiled boundary check agrees with the Python one, for reads
    that end with the request, end inside it, or end with another one."""
    if not compiled.enabled():
        pytest.skip("ophidis.net._speedups is not built")
    py = reader._ends_with_request_py
    data = _request_and_cut(reqs, cut, prefix)
    for req in (reqs[-1], other, reqs[-1] + [b"x"], [1] + reqs[-1]):
        expected = _py_ends_with_request(data, req)
        assert compiled.load("protocol._reader").ends_with_request(data, req) is expected
        assert py(data, req) is expected


def _py_ends_with_request(data, req):
    """The reference: does data end with encode(*req)?"""
    if not all(isinstance(a, bytes) for a in req):
        return False
    return data.endswith(encode(*req))


# -- the compiled command bodies (_speedups.BODIES) ------------------------------
# Each body handles the common case of its command and gives anything else to
# the Python function; the traffic below walks both sides of every condition
# a body checks, and the two servers must agree on every reply, push,
# propagated command and the state after.

def _body_traffic(rnd):
    """Pipelined requests touching every branch of the bodies."""
    big = "B" * 200              # a list entry of the 9-byte header form
    huge = "H" * 9000            # alone in its node
    reqs = [
        ("GET", "nokey"), ("GET", "nokey"), ("SET", "s", "v"), ("GET", "s"), ("LPUSH", "s", "x"),
        ("RPUSH", "s", "x"), ("LPOP", "s"), ("RPOP", "s"), ("SADD", "s", "m"), ("HSET", "s", "f", "v"),
        # lists: new keys (one and many elements), existing, both ends
        ("LPUSH", "l1", "a"), ("LPUSH", "l2", "a", "b", "c"), ("RPUSH", "l3", "a", "b", "c"),
        ("RPUSH", "l1", "b", big, "c"), ("LPUSH", "l1", huge, "z"), ("LRANGE", "l1", 0, -1),
        ("LPOP", "l1"), ("RPOP", "l1"), ("LPOP", "l1"), ("RPOP", "l1"), ("LPOP", "l1"), ("LPOP", "l1"),
        ("EXISTS", "l1"), ("LPOP", "l1"), ("RPOP", "nolist"), ("LPOP", "l2", 2), ("LPOP", "l2", 0),
        ("RPOP", "l3", "x"), ("LPOP", "l3", 1, 2), ("LPUSH", "l3"),
        # a TTL on the key: lazily expired or kept
        ("RPUSH", "lt", "a", "b"), ("PEXPIRE", "lt", 100000), ("LPUSH", "lt", "c"), ("RPOP", "lt"),
        ("RPUSH", "lx", "a", "b", "c"), ("PEXPIRE", "lx", 1),
        ("SADD", "sx", "a", "b"), ("PEXPIRE", "sx", 1), ("HSET", "hx", "f", "v"), ("PEXPIRE", "hx", 1),
        ("SET", "gx", "v"), ("PEXPIRE", "gx", 1), ("SADD", "spx", "a"), ("PEXPIRE", "spx", 1), ("MSET", "mt", "1"), ("PEXPIRE", "mt", 100000),
        ("DEBUG", "SLEEP", "0.01"),
        ("LPUSH", "lx", "d"), ("RPOP", "lx"), ("SADD", "sx", "c"), ("HSET", "hx", "g", "w"), ("GET", "gx"),
        ("GET", "gx"), ("MSET", "mt", "2", "mu", "3"), ("PTTL", "mt"), ("MSET", "mt"),
        # sets: intset, the conversion to hashtable, the hashtable
        ("SADD", "st", 1), ("SADD", "st", 2), ("SADD", "st", 2), ("OBJECT", "ENCODING", "st"),
        ("SADD", "st", "x"), ("OBJECT", "ENCODING", "st"), ("SADD", "st", "y"), ("SADD", "st", "y"),
        ("SADD", "st", 3), ("SCARD", "st"), ("SADD", "st2", "a", "b", 1), ("SADD", "st2", "c"),
        # a set with a random-access index (SRANDMEMBER of a big one builds it)
        ("SADD", "sbig") + tuple("m%d" % i for i in range(60)), ("SRANDMEMBER", "sbig", -3),
        ("SADD", "sbig", "new1"), ("SADD", "sbig", "m1"), ("SCARD", "sbig"), ("SREM", "sbig", "m2", "m3"),
        ("SADD", "sbig", "new2"), ("SCARD", "sbig"),
        # hashes: listpack (known and new fields), the conversions, the hashtable
        ("HSET", "h", "f", "v"), ("HSET", "h", "f", "w"), ("HSET", "h", "g", "v"),
        ("OBJECT", "ENCODING", "h"), ("HSET", "h", "long", "v" * 65), ("OBJECT", "ENCODING", "h"),
        ("HSET", "h", "f", "v2"), ("HSET", "h", "new", "v"), ("HGETALL", "h"),
        ("HSET", "h5", "a", 1, "b", 2, "c", 3), ("CONFIG", "SET", "hash-max-listpack-entries", 2),
        ("HSET", "h5", "a", 9), ("OBJECT", "ENCODING", "h5"), ("CONFIG", "SET", "hash-max-listpack-entries", 3),
        ("HSET", "h4", "a", 1, "b", 2, "c", 3), ("HSET", "h4", "c", 4), ("OBJECT", "ENCODING", "h4"),
        ("HSET", "h4", "d", 4), ("OBJECT", "ENCODING", "h4"), ("HSET", "h4", "e", 4),
        ("CONFIG", "SET", "hash-max-listpack-entries", 128), ("CONFIG", "SET", "set-max-intset-entries", 4),
        ("SADD", "st3", 1, 2, 3), ("SADD", "st3", 4), ("OBJECT", "ENCODING", "st3"), ("SADD", "st3", 5),
        ("OBJECT", "ENCODING", "st3"), ("SADD", "st3", 6), ("CONFIG", "SET", "set-max-intset-entries", 512),
        ("HSET", "h2", "f" * 64, "v" * 64), ("OBJECT", "ENCODING", "h2"), ("HSET", "h2", "f" * 65, "v"),
        ("OBJECT", "ENCODING", "h2"), ("HSET", "h3", "a", 1, "b", 2), ("HSET", "h3", "c"),
        ("HSET", "hbig") + tuple(x for i in range(60) for x in ("f%d" % i, i)), ("HRANDFIELD", "hbig", -2),
        ("HSET", "hbig", "new", 1), ("HSET", "hbig", "f1", 2), ("HLEN", "hbig"),
        # LRANGE: indexes of every kind, misses, other types
        ("RPUSH", "lr", "a", big, "c", huge, "e"), ("LRANGE", "lr", 0, -1), ("LRANGE", "lr", -2, 100),
        ("LRANGE", "lr", 3, 1), ("LRANGE", "lr", -100, 1), ("LRANGE", "lr", "01", 2), ("LRANGE", "lr", "+1", 2),
        ("LRANGE", "lr", "x", 2), ("LRANGE", "lr", 0, "-0"), ("LRANGE", "lr", "99999999999999999999", 1),
        ("LRANGE", "lr", "-9223372036854775808", "9223372036854775807"), ("LRANGE", "nolist", 0, -1),
        ("LRANGE", "s", 0, -1), ("LRANGE", "lt", 0, -1), ("LRANGE", "nolist", "x", 1),
        # ZADD: the body (key score member), and the Python function for the rest
        ("ZADD", "z", 0, "m"), ("ZADD", "z", 0, "m"), ("ZADD", "z", 5, "m"), ("ZADD", "z", 5, "m"),
        ("ZADD", "z", "5.0", "m"), ("ZADD", "z", "-0", "m"), ("ZADD", "z", "0", "n"), ("ZADD", "z", "0.0", "n"),
        ("ZADD", "z", "-3", "m"), ("ZADD", "z", "-3", "m"), ("ZADD", "z", "1e2", "m"), ("ZADD", "z", 100, "m"),
        ("ZADD", "z", "inf", "m"), ("ZADD", "z", 7, "m", 8, "n"), ("ZADD", "z", "123456789012345678", "q"),
        ("ZADD", "z", "123456789012345678", "q"), ("ZADD", "z", "123456789012345677", "q"),
        ("ZADD", "z", "x", "m"), ("ZADD", "s", 0, "m"), ("ZADD", "zt", 1, "m"), ("PEXPIRE", "zt", 100000),
        ("ZADD", "zt", 1, "m"), ("ZRANGE", "z", 0, -1, "WITHSCORES"),
        # MSET
        ("MSET", "a", 1, "b", 2, "a", 3), ("MGET", "a", "b"), ("MSET", "l2", "x"), ("TYPE", "l2"),
        ("LPUSH", "l2", "y"),
        # SPOP: a missing key (the body), and everything else (Python)
        ("SPOP", "nosp"), ("SPOP", "nosp"), ("SPOP", "nosp", 1), ("SPOP", "nosp", "x"), ("SPOP", "s"),
        ("SPOP", "a", 1, 2), ("SADD", "sp1", "a"), ("SPOP", "sp1"), ("SPOP", "sp1"), ("EXISTS", "sp1"),
        ("SPOP", "l2"), ("SPOP", "spx"), ("SPOP",),
        # ZPOPMIN: a skiplist of 140 members popped to its end (the body while
        # more than one is left, Python for the last, a missing key, a string)
        *[("ZADD", "zp", rnd.choice([i % 7, "%d.25" % (i % 5), "-1.5", "1e3"]), "p%d" % i) for i in range(140)],
        ("OBJECT", "ENCODING", "zp"), *[("ZPOPMIN", "zp")] * 141, ("EXISTS", "zp"), ("ZPOPMIN", "zp"),
        ("ZPOPMIN", "a"), ("ZPOPMIN", "zp", 2), ("ZADD", "zp2", 1, "x", 2, "y"), ("ZPOPMIN", "zp2"),
    ]
    for i in range(300):
        k = rnd.randrange(6)
        reqs.append(rnd.choice([
            ("LPUSH", "r%d" % k, i), ("RPUSH", "r%d" % k, i, i + 1), ("LPOP", "r%d" % k), ("RPOP", "r%d" % k),
            ("SADD", "rs%d" % k, rnd.choice([i, "m%d" % i])), ("HSET", "rh%d" % k, "f%d" % (i % 150), i),
            ("GET", "r%d" % k), ("GET", "rx%d" % k), ("MSET", "rx%d" % k, i, "r%d" % k, i),
            ("LRANGE", "r%d" % k, rnd.randrange(-5, 5), rnd.randrange(-5, 5)), ("ZADD", "rz", i % 3, k),
        ]))
    reqs += [("HSET", "conv", "f%d" % i, i) for i in range(130)] + [("OBJECT", "ENCODING", "conv")]
    reqs += [("SADD", "iconv", i) for i in range(520)] + [("OBJECT", "ENCODING", "iconv")]
    return reqs


_BODY_KEYS = ["s", "l1", "l2", "l3", "lt", "lx", "sx", "hx", "gx", "mt", "mu", "st", "st2", "sbig", "h", "h2",
              "h3", "h4", "h5", "st3", "lr", "z", "zt", "hbig", "a", "b", "conv", "iconv", "sp1", "spx", "zp", "zp2"] + ["r%d" % k for k in range(6)] + \
             ["rs%d" % k for k in range(6)] + ["rh%d" % k for k in range(6)] + ["rx%d" % k for k in range(6)] + ["rz"]


_RANDOM = ("SRANDMEMBER", "HRANDFIELD")


def _info_fields(port, section, names):
    info = command(port, "INFO", section).decode()
    return {n: re.search(r"^%s:(\S*)" % n, info, re.M).group(1) for n in names}


def _state(port):
    out = [command(port, "DEBUG", "DIGEST"), command(port, "DBSIZE")]
    for k in _BODY_KEYS:
        out += [command(port, "TYPE", k), command(port, "OBJECT", "ENCODING", k),
                command(port, "DEBUG", "DIGEST-VALUE", k), command(port, "PTTL", k) != b":-1\r\n"]
    out.append(_info_fields(port, "stats", ["keyspace_hits", "keyspace_misses"]))
    out.append(_info_fields(port, "persistence", ["rdb_changes_since_last_save"]))
    out.append(_stats(port))
    return out


def _body_run(port, reqs, resp3, replica, obuf=False):
    command(port, "FLUSHALL")
    command(port, "CONFIG", "RESETSTAT")
    command(port, "CONFIG", "SET", "save", "")
    stream = SyncStream(port) if replica else None
    with RespConn(port, resp3=resp3) as c:
        if obuf:    # the loop's gets is then client._bounded_gets (Python)
            c.call("CONFIG", "SET", "client-output-buffer-limit", "normal 100000000 0 0")
        c.send_raw(b"".join(encode(*r) for r in reqs))
        # random picks (they give the set and the hash their index) masked
        replies = [c.read() for _ in reqs]
        replies = b"".join(b"?" if r[0] in _RANDOM else x for r, x in zip(reqs, replies))
        if obuf:
            c.call("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0")
    command(port, "SETNX", "__end__", 1)
    prop = stream.read_until(b"setnx") if stream else None
    if prop:    # PEXPIRE goes as PEXPIREAT: the time differs
        prop = [a[:2] if a[0].lower() == b"pexpireat" else a for a in prop]
    if stream:
        stream.close()
    return replies, prop, _state(port)


@pytest.mark.parametrize("resp3,replica,obuf", [(False, False, False), (True, False, False), (False, True, False),
                                                (False, False, True)])
def test_bodies_same_replies_state_and_stream(pair, resp3, replica, obuf):
    reqs = _body_traffic(random.Random(11))
    runs = [_body_run(p, reqs, resp3, replica, obuf) for p in pair]
    assert runs[0][0] == runs[1][0]
    assert runs[0][1] == runs[1][1]
    assert runs[0][2] == runs[1][2]
    replies = runs[0][0]
    assert replies.count(b"-WRONGTYPE") >= 6
    assert (b"_\r\n" in replies) is resp3
    assert runs[0][2][-3]["keyspace_misses"] != "0"
    if replica:
        names = {a[0].lower() for a in runs[0][1]}
        assert {b"lpush", b"rpush", b"lpop", b"rpop", b"sadd", b"hset", b"mset"} <= names


def _watch_case(port, setup, cmd):
    """WATCH a key, another client runs cmd on it, EXEC: aborted or not."""
    command(port, "FLUSHALL")
    for r in setup:
        command(port, *r)
    with RespConn(port) as a, RespConn(port) as b:
        out = [a.call("WATCH", "w"), b.call(*cmd), a.call("MULTI"), a.call("PING"), a.call("EXEC")]
        # and inside MULTI: the queued command runs in EXEC, not in the loop
        out += [a.call("MULTI"), a.call(*cmd), a.call("EXEC")]
    return out


@pytest.mark.parametrize("setup,cmd", [
    ([], ("LPUSH", "w", "a")), ([("RPUSH", "w", "a")], ("RPUSH", "w", "b")),
    ([("RPUSH", "w", "a", "b")], ("LPOP", "w")), ([("RPUSH", "w", "a", "b")], ("RPOP", "w")),
    ([("RPUSH", "w", "a")], ("RPOP", "w")), ([("SADD", "w", "x")], ("SADD", "w", "y")),
    ([("SADD", "w", "x")], ("SADD", "w", "x")), ([("HSET", "w", "f", "v")], ("HSET", "w", "f", "w")),
    ([("HSET", "w", "f", "v")], ("HSET", "w", "g", "w")), ([], ("MSET", "x", 1, "w", 2)),
    ([], ("GET", "w")), ([("SET", "w", "1")], ("MSET", "w", 2)), ([("ZADD", "w", 1, "m")], ("ZADD", "w", 1, "m")),
    ([("ZADD", "w", 1, "m")], ("ZADD", "w", 2, "m")), ([("RPUSH", "w", 1, 2)], ("LRANGE", "w", 0, -1)),
])
def test_bodies_touch_watched_keys(pair, setup, cmd):
    outs = [_watch_case(p, setup, cmd) for p in pair]
    assert outs[0] == outs[1]


def _blocked_case(port, resp3):
    command(port, "FLUSHALL")
    out = []
    with RespConn(port, resp3=resp3) as a, RespConn(port) as b, RespConn(port) as c:
        a.send("BLPOP", "q", 5)
        c.send("BRPOP", "q2", 5)
        while b"blpop" not in command(port, "CLIENT", "LIST") or b"brpop" not in command(port, "CLIENT", "LIST"):
            time.sleep(0.01)
        # a new key with a client blocked on it, then pushes onto it
        out.append(b.pipeline(("LPUSH", "q", "x", "y"), ("RPUSH", "q2", "z"), ("RPUSH", "q", "w"),
                              ("LLEN", "q"), ("LLEN", "q2")))
        out += [a.read(), c.read()]
        # MSET over a key a client is blocked on (a list waited for)
        a.send("BLPOP", "m", 5)
        while b"blpop" not in command(port, "CLIENT", "LIST"):
            time.sleep(0.01)
        out.append(b.pipeline(("MSET", "m", "v"), ("DEL", "m"), ("RPUSH", "m", "a", "b"), ("LPOP", "m")))
        out.append(a.read())
    return out


@pytest.mark.parametrize("resp3", [False, True])
def test_bodies_wake_blocked_clients(pair, resp3):
    outs = [_blocked_case(p, resp3) for p in pair]
    assert outs[0] == outs[1]
    assert b"$1\r\nx" in outs[0][1] or b"$1\r\ny" in outs[0][1]


def _notify_case(port, flags):
    command(port, "FLUSHALL")
    command(port, "CONFIG", "SET", "notify-keyspace-events", flags)
    reqs = [("GET", "miss"), ("LPUSH", "l", "a", "b"), ("RPUSH", "l", "c"), ("LPOP", "l"), ("RPOP", "l"),
            ("RPOP", "l"), ("SADD", "s", "x"), ("SADD", "s", 1), ("SADD", "s", "x"), ("HSET", "h", "f", "v"),
            ("HSET", "h", "f", "w"), ("MSET", "a", 1, "b", 2), ("SET", "z", 1), ("INCR", "z"), ("GET", "z"),
            ("LRANGE", "nol", 0, -1), ("LRANGE", "l", 0, -1), ("ZADD", "zz", 1, "m"), ("ZADD", "zz", 1, "m")]
    try:
        with RespConn(port) as sub, RespConn(port) as c:
            sub.call("PSUBSCRIBE", "__key*__:*")
            replies = c.pipeline(*reqs)
            c.call("GET", "__end__")
            c.call("RPUSH", "__end__", 1)
            msgs = []
            while b"__end__" not in b"".join(msgs[-2:]):
                msgs.append(sub.read())
    finally:
        command(port, "CONFIG", "SET", "notify-keyspace-events", "")
    return replies, msgs, _info_fields(port, "stats", ["keyspace_hits", "keyspace_misses"])


@pytest.mark.parametrize("flags", ["KEA", "KEAmn", "Kl", "Em"])
def test_bodies_with_keyspace_events(pair, flags):
    outs = [_notify_case(p, flags) for p in pair]
    assert outs[0] == outs[1]
    assert len(outs[0][1]) >= 2


def _fanout_case(port):
    """Subscribers of every kind (RESP2, RESP3, a pattern, one publishing to
    its own channel in the same read, one gone): what each one receives."""
    conns = [RespConn(port) for _ in range(4)]
    s2, s3, ps, me = conns
    try:
        s2.send_raw(encode("SUBSCRIBE", "ch", "other"))
        s3.send_raw(encode("HELLO", "3") + encode("SUBSCRIBE", "ch"))
        ps.send_raw(encode("PSUBSCRIBE", "c*"))
        gone = RespConn(port)
        gone.send_raw(encode("SUBSCRIBE", "ch"))
        # every subscription confirmed (HELLO's reply too)
        for c, n in ((s2, 2), (s3, 2), (ps, 1), (gone, 1)):
            c.read_replies(n, timeout=20)
        gone.close()
        wait_until(lambda: command(port, "PUBSUB", "NUMSUB", "ch") == b"*2\r\n$2\r\nch\r\n:2\r\n", 20,
                   what="the closed subscriber gone")
        me.send_raw(encode("HELLO", "3") + encode("SUBSCRIBE", "ch") + encode("PUBLISH", "ch", "self")
                    + encode("PING"))
        # me's batch has run (its last command, PING, is its cmd)
        wait_until(lambda: b"cmd=ping" in command(port, "CLIENT", "LIST"), 20, what="the subscriber's PING")
        pub = encode("PUBLISH", "ch", "m1") + encode("PUBLISH", "other", "m2") + encode("PUBLISH", "ch", "x" * 3000)
        out = [_exchange(port, [pub, encode("PUBLISH", "nosub", "m"), encode("PUBLISH", "ch", "last")])]
        # (HELLO's reply differs between servers: the client id, and the
        # server's name, version and modules with valkey-server)
        return [re.sub(rb"%7\r\n\$6\r\nserver\r\n.*?(?=>3\r\n\$9\r\nsubscribe)", b"HELLO", x, flags=re.S)
                for x in out + [c.read_until_quiet(0.3) for c in conns]]
    finally:
        for c in conns:
            c.close()


def test_same_pubsub_fanout(pair, valkey_server):
    """PUBLISH's fan-out (compiled: _speedups.fanout and flush_pushes):
    both loops and valkey-server send the same bytes to every subscriber
    (the publisher's counts say which subscribers were still there; the
    publisher's own message follows its reply, as since Redis 7.2)."""
    got = [_fanout_case(p) for p in pair]
    assert got[0] == got[1]
    assert got[0] == _fanout_case(valkey_server.port)
    assert b"$4\r\nself\r\n" in got[0][4] and b"pmessage" in got[0][3]


_ZSCORES = ["-0", "0", "1e308", "-1e308", "inf", "-inf", "+inf", " 1", "1 ", "1_0", "nan", "0x10", "1.5", "-2.25",
            "000000000123", "000000000000", "0.0", "-0.0", "1e-400", "12345678901234567890123456789012",
            "123456789012345678901234567890123", "7.", ".5", "-", "", "1e3", "3", "17", "-17", "2", "9007199254740993"]


def _zadd_case(port):
    command(port, "FLUSHALL")
    out = []
    with RespConn(port) as c:
        # "big": a skiplist of 300 members; "small": a listpack
        c.pipeline(*[("ZADD", "big", i % 37, "m%d" % i) for i in range(300)])
        c.pipeline(*[("ZADD", "small", i, "s%d" % i) for i in range(5)])
        c.call("SET", "str", "x")
        rnd = random.Random(5)
        reqs = []
        for i in range(1500):
            key = rnd.choice(["big", "big", "big", "small", "str", "nokey"])
            member = rnd.choice(["m%d" % rnd.randrange(320), "s%d" % rnd.randrange(8), "", "m1\x00x", "m"])
            score = rnd.choice(_ZSCORES + [str(rnd.randrange(-50, 50)), "%d.%d" % (rnd.randrange(40), rnd.randrange(10))])
            reqs.append(("ZADD", key, score, member))
        out.append(c.pipeline(*reqs))
        for k in ["big", "small"]:
            out += [c.call("ZRANGE", k, 0, -1, "WITHSCORES"), c.call("OBJECT", "ENCODING", k), c.call("ZCARD", k)]
            out += [c.call("ZSCORE", k, "m%d" % i) for i in range(0, 320, 7)]
            out += [c.call("ZRANK", k, "m%d" % i) for i in range(0, 320, 11)]
            # (these read the ordered index's own length)
            out += [c.call("ZRANGE", k, -3, -1, "REV"), c.call("ZREMRANGEBYRANK", k, -2, -1), c.call("ZCARD", k),
                    c.call("ZRANGE", k, 0, -1, "WITHSCORES")]
        out.append(_info_fields(port, "persistence", ["rdb_changes_since_last_save"]))
    return out


def test_zadd_body_same_as_python_and_redis(pair, redis_server):
    """ZADD key score member (the compiled body for the plain scores of an
    existing zset): the replies and the resulting sets of both loops, and
    redis-server's, for odd scores, new and known members, both encodings."""
    outs = [_zadd_case(p) for p in pair]
    assert outs[0] == outs[1]
    replies = outs[0][0]
    assert b"-ERR value is not a valid float" in replies
    assert b"-WRONGTYPE" in replies
    ref = _zadd_case(redis_server.port)
    # (redis-server 7.0 prints doubles with "%.17g", Redis 7.2+ and we not)
    assert doubles_70(outs[0][:-1]) == doubles_70(ref[:-1])


def test_zadd_body_keeps_the_index_consistent(pair):
    """Many score changes on a zset of several ordered-index sublists (splits,
    merges, a built positional index in between): ranks and ranges agree."""
    outs = []
    for p in pair:
        command(p, "FLUSHALL")
        rnd = random.Random(3)
        with RespConn(p) as c:
            c.pipeline(*[("ZADD", "z", i, "e%d" % i) for i in range(5000)])
            got = []
            for rnd_round in range(6):
                c.pipeline(*[("ZADD", "z", rnd.randrange(-3000, 3000 + rnd_round * 500), "e%d" % rnd.randrange(6000))
                             for _ in range(3000)])
                got += [c.call("ZRANK", "z", "e%d" % rnd.randrange(5000)), c.call("ZRANGE", "z", 2500, 2510),
                        c.call("ZCARD", "z"), c.call("ZCOUNT", "z", -100, 100)]
            got.append(c.call("ZRANGE", "z", 0, -1, "WITHSCORES"))
            got += [c.call("ZRANGE", "z", -3, -1, "REV"), c.call("ZREMRANGEBYRANK", "z", -2, -1), c.call("ZCARD", "z")]
            got.append(c.call("DEBUG", "DIGEST-VALUE", "z"))
        outs.append(got)
    assert outs[0] == outs[1]


def _each(c, *cmds):
    """The exact bytes of each reply to cmds, sent in one write."""
    c.sock.sendall(b"".join(encode(*x) for x in cmds))
    return [c.read() for _ in cmds]


def test_spop_body_pops_every_member_once(pair):
    """SPOP key on a big set (the compiled body once the set's random index
    exists): with SADD/SREM in between (the index's added and removed
    members), every member is popped exactly once and the key goes with the
    last; a watched key sees the change; a replica's stream gets SREM."""
    for p in pair:
        command(p, "FLUSHALL")
        with RespConn(p) as c:
            c.pipeline(*[("SADD", "s", "m%d" % i) for i in range(300)])
            popped = _each(c, *[("SPOP", "s")] * 101)       # (the first in Python: builds the index)
            c.pipeline(*[("SADD", "s", "n%d" % i) for i in range(40)],
                       *[("SREM", "s", "m%d" % i) for i in range(0, 300, 3)])
            first = {r.split(b"\r\n")[1] for r in popped}
            popped += _each(c, *[("SPOP", "s")] * 400)
            got = [r.split(b"\r\n")[1] for r in popped if r != b"$-1\r\n"]
            assert len(got) == len(set(got)) == 300 - len({b"m%d" % i for i in range(0, 300, 3)} - first) + 40
            assert set(got) == ({b"m%d" % i for i in range(300)} - ({b"m%d" % i for i in range(0, 300, 3)} - first)
                                | {b"n%d" % i for i in range(40)})
            assert popped[-1] == b"$-1\r\n"
            assert [c.call("EXISTS", "s"), c.call("SPOP", "s")] == [b":0\r\n", b"$-1\r\n"]
        # a watched key: the transaction fails after another client's SPOP
        with RespConn(p) as c, RespConn(p) as other:
            c.pipeline(*[("SADD", "w", "m%d" % i) for i in range(100)])
            c.call("SPOP", "w")
            c.call("WATCH", "w")
            other.call("SPOP", "w")
            assert c.pipeline(("MULTI",), ("SCARD", "w"), ("EXEC",)).endswith(b"*-1\r\n")
            assert c.call("SCARD", "w") == b":98\r\n"


def test_spop_propagates_as_srem(pair):
    for p in pair:
        command(p, "FLUSHALL")
        stream = SyncStream(p)
        try:
            with RespConn(p) as c:
                c.pipeline(*[("SADD", "s", "m%d" % i) for i in range(100)])
                popped = [c.call("SPOP", "s").split(b"\r\n")[1] for _ in range(5)]
            command(p, "SETNX", "__end__", 1)
            prop = stream.read_until(b"setnx")
        finally:
            stream.close()
        assert [a for a in prop if a[0].lower() == b"srem"] == [[b"SREM", b"s", m] for m in popped]


def _acl_and_table_changes(port):
    # what a client sees while another changes its user's rules and the
    # command table between its reads (see the test below)
    seen = []
    ratelimit = os.path.join(ROOT, "examples", "modules", "ratelimit.py")
    with RespConn(port) as admin, RespConn(port) as c:
        admin.call("ACL", "SETUSER", "u", "on", ">pw", "+@all", "allkeys", "allchannels")
        seen.append(c.call("AUTH", "u", "pw"))
        seen += [c.call("SET", "k", "v"), c.call("GET", "k"), c.call("GET", "k")]
        # narrowed: -get, then no key but other*
        admin.call("ACL", "SETUSER", "u", "-get")
        seen += [c.call("GET", "k"), c.call("GET", "k"), c.call("SET", "k", "w")]
        admin.call("ACL", "SETUSER", "u", "+get", "resetkeys", "~other*")
        seen += [c.call("GET", "k"), c.call("GET", "other1"), c.pipeline(("GET", "k"), ("GET", "other2"))]
        # unrestricted again, then another user and back
        admin.call("ACL", "SETUSER", "u", "allkeys")
        seen += [c.call("GET", "k"), c.call("GET", "k")]
        admin.call("ACL", "SETUSER", "r", "on", ">pw", "-@all", "+get", "+auth", "~k")
        seen += [c.call("AUTH", "r", "pw"), c.call("GET", "k"), c.call("SET", "k", "x"), c.call("GET", "j")]
        seen += [c.call("AUTH", "u", "pw"), c.call("SET", "j", "y"), c.call("GET", "j")]
        # a module's command, unknown, then loaded, then unloaded
        seen += [c.call("RATELIMIT.PEEK", "rl", "10"), c.call("RATELIMIT.PEEK", "rl", "10")]
        seen.append(admin.call("MODULE", "LOAD", ratelimit))
        seen += [c.call("RATELIMIT.PEEK", "rl", "10"), c.call("RATELIMIT.PEEK", "rl", "10")]
        seen.append(admin.call("MODULE", "UNLOAD", "ratelimit"))
        seen += [c.call("RATELIMIT.PEEK", "rl", "10"), c.call("GET", "k")]
    return seen


def test_loop_follows_acl_and_table_changes():
    """The compiled loop keeps a command name's lookup and a client's
    user.fast across reads: another client's ACL SETUSER narrowing (or
    widening) the user's rules, an AUTH as another user and a module's
    commands coming and going take effect on the client's next request,
    as in the Python loop."""
    if not compiled.enabled():
        pytest.skip("the compiled layer is not built (or OPHIDIS_PURE=1)")
    servers = []
    try:
        for pure in (False, True):
            servers.append(start_twin(pure=pure, args=("--enable-module-command", "yes")))
        seen = [_acl_and_table_changes(s.port) for s in servers]
    finally:
        for s in servers:
            s.stop()
            shutil.rmtree(s.dir, ignore_errors=True)
    assert seen[0] == seen[1]
    noperm = b"-NOPERM User u has no permissions to run the 'get' command\r\n"
    nokey = b"-NOPERM No permissions to access a key\r\n"
    s = seen[0]
    assert s[:4] == [b"+OK\r\n", b"+OK\r\n", b"$1\r\nv\r\n", b"$1\r\nv\r\n"]
    assert s[4:7] == [noperm, noperm, b"+OK\r\n"]
    assert s[7:10] == [nokey, b"$-1\r\n", nokey + b"$-1\r\n"]
    assert s[10:12] == [b"$1\r\nw\r\n"] * 2
    assert s[12:16] == [b"+OK\r\n", b"$1\r\nw\r\n", b"-NOPERM User r has no permissions to run the 'set' command\r\n",
                        nokey]
    assert s[16:19] == [b"+OK\r\n", b"+OK\r\n", b"$1\r\ny\r\n"]
    assert s[19] == s[20] and s[19].startswith(b"-ERR unknown command 'RATELIMIT.PEEK'")
    assert s[21] == b"+OK\r\n" and s[22] == s[23] and not s[22].startswith(b"-")
    assert s[24] == b"+OK\r\n" and s[25] == s[19] and s[26] == b"$1\r\nw\r\n"
