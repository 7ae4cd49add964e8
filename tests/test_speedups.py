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
from support.resp import RespConn, command, encode
from support.servers import SRC, ServerProc, server_env

from ophidis.commands import Command, lists
from ophidis.net import client, speedups
from ophidis.protocol import reader
from ophidis.protocol.resp import encode_argv

PURE = os.environ.get("OPHIDIS_PURE") == "1"


def test_compiled_loop_is_built_and_used():
    """`make test` must exercise the compiled loop: the build is part of the
    install (a silent fall-back to Python would hide a slow server)."""
    if PURE:
        pytest.skip("OPHIDIS_PURE=1: the Python loop is asked for")
    assert speedups.native is not None, "ophidis.net._speedups is not built: run `make venv` / `pip install -e .`"
    assert client._RUN is speedups.native.run
    assert issubclass(Command, speedups.native.CommandCore)
    assert client.Client.data_received is speedups.native.data_received
    assert issubclass(client.Client, speedups.native.ClientCore)


def test_stale_build_is_ignored(tmp_path):
    """A build made from another version of the .pyx is not run."""
    if speedups.native is None:
        pytest.skip("no compiled module to go stale")
    pkg = tmp_path / "ophidis"
    shutil.copytree(os.path.join(SRC, "ophidis"), pkg,
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(pkg / "net" / "_speedups.pyx", "a") as f:
        f.write("\n# changed after the build\n")
    code = "import ophidis.net.speedups as s, ophidis.net.client as c; print(s.native is None, c._RUN.__name__)"
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("OPHIDIS_PURE", None)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert p.stdout.split() == ["True", "_run_requests"], p.stdout + p.stderr
    assert "built from another version" in p.stderr


@given(st.binary(max_size=40) | st.lists(st.sampled_from([b"*", b"-", b"1", b"9", b"0", b"x", b"\r\n"]),
                                          max_size=30).map(b"".join))
def test_long_header_guard_matches_regex(data):
    expected = reader._LONG_HEADER(data) is not None
    if speedups.native is not None:
        assert speedups.native.long_header(data) is expected
        assert speedups.native.long_header(bytearray(data)) is expected


@given(st.binary(max_size=40) | st.lists(st.sampled_from([b"*", b"-", b"1", b"0", b"x", b"\r", b"\n", b"\r\n"]),
                                          max_size=14).map(b"".join))
def test_suspicious_guard_matches_python(data):
    if speedups.native is not None:
        expected = reader._suspicious_py(data)
        assert speedups.native.suspicious(data) is expected
        assert speedups.native.suspicious(bytearray(data)) is expected


@given(st.lists(st.binary(max_size=30) | st.binary(min_size=9990, max_size=10010), max_size=40))
def test_compiled_bulk_items_matches(items):
    """LRANGE's reply encoder: the compiled one gives the Python one's bytes."""
    if speedups.native is None:
        pytest.skip("the compiled loop is not built")
    assert speedups.native.bulk_items(items) == lists._py_bulk_items(items)
    assert speedups.native.bulk_items([bytearray(x) for x in items]) == lists._py_bulk_items(items)
    assert speedups.native.bulk_items(tuple(items)) == lists._py_bulk_items(tuple(items))


@given(st.lists(st.binary(max_size=30) | st.binary(min_size=1020, max_size=1030), max_size=20),
       st.sampled_from([None, 7, "x", bytearray(b"ab")]))
def test_compiled_request_encoder_matches(argv, odd):
    """Propagation's encoder: the compiled one gives encode_argv's bytes for
    a list of bytes, and leaves any other element to the Python one."""
    if speedups.native is None:
        pytest.skip("the compiled loop is not built")
    assert speedups.native.encode_bytes_argv(argv) == encode_argv(argv)
    if odd is not None:
        assert speedups.native.encode_bytes_argv(argv + [odd]) is None


def _start(pure: bool):
    env = server_env()
    if pure:
        env["OPHIDIS_PURE"] = "1"
    else:
        env.pop("OPHIDIS_PURE", None)
    return ServerProc(["--enable-debug-command", "yes"], env=env)


@pytest.fixture(scope="module")
def pair():
    if speedups.native is None:
        pytest.skip("ophidis.net._speedups is not built")
    servers = []
    try:
        servers = [_start(pure=False), _start(pure=True)]
        yield [s.port for s in servers]
    finally:
        for s in servers:
            s.stop()
            shutil.rmtree(s.dir, ignore_errors=True)


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
    if speedups.native is None:
        pytest.skip("ophidis.net._speedups is not built")
    py = reader._ends_with_request_py
    data = _request_and_cut(reqs, cut, prefix)
    for req in (reqs[-1], other, reqs[-1] + [b"x"], [1] + reqs[-1]):
        expected = _py_ends_with_request(data, req)
        assert speedups.native.ends_with_request(data, req) is expected
        assert py(data, req) is expected


def _py_ends_with_request(data, req):
    """The reference: does data end with encode(*req)?"""
    if not all(isinstance(a, bytes) for a in req):
        return False
    return data.endswith(encode(*req))
