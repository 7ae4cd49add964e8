"""RESP parsing, inline commands, pipelining and protocol errors over raw sockets."""

import random
import socket
import subprocess
import time

import pytest
from support.resp import RespConn, encode, exchange

from ophidis.protocol import reader as reader_mod
from ophidis.protocol.resp import ProtocolError, check_partial, parse_request
from ophidis.sysinfo import REDIS_VERSION


def send(server, data: bytes) -> bytes:
    """Everything the server replies to data on a new connection."""
    return exchange(server.port, data)


# One write on a new connection, and everything the server replies to it.
EXCHANGES = [
    pytest.param(b"*1\r\n$4\r\nPING\r\n", b"+PONG\r\n", id="ping_multibulk"),
    pytest.param(b"PING\r\n", b"+PONG\r\n", id="inline_ping"),
    pytest.param(b'SET "inline key" "a\\x41\\nb"\r\nGET "inline key"\r\nDEL "inline key"\r\n',
                 b"+OK\r\n$4\r\naA\nb\r\n:1\r\n", id="inline_quoted_arguments"),
    pytest.param(b"PING\r\nPING\r\nPING\r\n", b"+PONG\r\n" * 3, id="inline_pipeline"),
    pytest.param(b"*1\r\n$4\r\nPING\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n", b"+PONG\r\n+PONG\r\n$2\r\nhi\r\n",
                 id="mixed_multibulk_then_inline"),
    pytest.param(b"*-10\r\n*0\r\nPING\r\n", b"+PONG\r\n", id="negative_and_empty_multibulk_ignored"),
    pytest.param(b"\r\n\r\nPING\r\n", b"+PONG\r\n", id="empty_inline_lines_ignored"),
    pytest.param(b"*3\r\n$6\r\nFOOBAR\r\n$1\r\na\r\n$2\r\nbc\r\n",
                 b"-ERR unknown command 'FOOBAR', with args beginning with: 'a' 'bc' \r\n", id="unknown_command_error"),
    pytest.param(b"GET\r\n", b"-ERR wrong number of arguments for 'get' command\r\n", id="wrong_arity"),
    pytest.param(b"CONFIG FOO\r\n", b"-ERR unknown subcommand 'FOO'. Try CONFIG HELP.\r\n", id="unknown_subcommand"),
]


@pytest.mark.parametrize("data,reply", EXCHANGES)
def test_exchange(server, data, reply):
    assert send(server, data) == reply


def test_inline_unbalanced_quotes_closes(server):
    s = RespConn(server.port)
    s.send_raw(b'SET "foo bar\r\n')
    out = s.read_until_closed()
    assert out == b"-ERR Protocol error: unbalanced quotes in request\r\n"  # and closed


def test_pipeline_many_in_one_write(server):
    req = b"".join(b"*3\r\n$3\r\nSET\r\n$2\r\nk%d\r\n$1\r\nv\r\n" % (i % 10) for i in range(100))
    out = send(server, req)
    assert out == b"+OK\r\n" * 100


def test_request_split_byte_by_byte(server):
    s = RespConn(server.port)
    req = b"*3\r\n$3\r\nSET\r\n$3\r\nabc\r\n$5\r\nhello\r\n*2\r\n$3\r\nGET\r\n$3\r\nabc\r\n"
    for i in range(len(req)):
        s.send_raw(req[i:i + 1])
    assert s.quit_and_read() == b"+OK\r\n$5\r\nhello\r\n"


@pytest.mark.parametrize("cut_args", [3, 4, 5, 6])
def test_read_ending_inside_a_request_like_the_last_one(server, r, cut_args):
    """A read that ends inside a request, right after an argument equal to
    the last argument of the previous (complete) request: the server must
    not take the read for a request boundary."""
    r.delete("pc:1", "pc:2")
    first = encode(b"HSET", b"pc:1", b"f", b"v")
    second_args = [b"HSET", b"pc:2", b"a", b"v", b"b", b"v", b"c", b"v"]
    second = encode(*second_args)
    cut = len(encode(*second_args[:cut_args])) - len(b"*%d\r\n" % cut_args) + len(b"*%d\r\n" % len(second_args))
    s = RespConn(server.port)
    s.send_raw(first + second[:cut])
    assert s.read() == b":1\r\n"      # the first chunk was read and run
    s.send_raw(second[cut:])
    assert s.quit_and_read() == b":3\r\n"
    assert r.hgetall("pc:2") == {b"a": b"v", b"b": b"v", b"c": b"v"}


def test_random_read_boundaries_in_big_pipelines(server, r):
    """Pipelines of multi-argument requests cut at random points (reads
    end anywhere, often after an argument equal to the last one of the
    previous request) give the same replies as one write."""
    rnd = random.Random(7)
    for trial in range(8):
        key = b"rb:%d" % trial
        r.delete(key)
        reqs = []
        for j in range(4):
            args = [b"HSET", key]
            for i in range(rnd.randrange(1, 400)):
                args += [b"f:%d:%d" % (j, i), b"v"]
            reqs.append(encode(*args))
        data = b"".join(reqs)
        s = RespConn(server.port)
        s.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pos = 0
        while pos < len(data):
            k = rnd.choice([1, 3, 7, 9, 100, 1000, 5000])
            s.send_raw(data[pos:pos + k])
            pos += k
            if rnd.random() < 0.2:
                time.sleep(0.001)
        out = s.quit_and_read()
        assert out.count(b"\r\n") == 4 and not out.startswith(b"-") and b"-" not in out, out[:200]
        assert r.hlen(key) == sum(int(x[1:]) for x in out.split(b"\r\n")[:4])


def test_large_value_in_pieces(server, r):
    s = RespConn(server.port)
    val = b"x" * 3_000_000
    req = b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n%s\r\n" % (len(val), val)
    for i in range(0, len(req), 65536):
        s.send_raw(req[i:i + 65536])
    assert s.quit_and_read() == b"+OK\r\n"
    assert r.strlen("big") == len(val)


@pytest.mark.parametrize("data,err", [
    (b"*3000000000\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", b"-ERR Protocol error: expected '$', got 'f'\r\n"),
    (b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\nfoo=bar\r\n", b"-ERR Protocol error: expected '$', got 'f'\r\n"),
    (b"*blabla\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
])
def test_protocol_errors_close_connection(server, data, err):
    s = RespConn(server.port)
    s.send_raw(data)
    out = s.read_until_closed()
    assert out == err                       # and the connection is closed
    # the server is still fine
    assert send(server, b"PING\r\n") == b"+PONG\r\n"


def test_too_big_inline_request(server):
    s = RespConn(server.port)
    try:
        s.send_raw(b"a" * (70 * 1024))
    except OSError:
        pass
    out = s.read()
    assert out == b"-ERR Protocol error: too big inline request\r\n"


def test_too_big_mbulk_count_string(server):
    s = RespConn(server.port)
    s.send_raw(b"*" + b"1" * (70 * 1024))
    assert s.read() == b"-ERR Protocol error: too big mbulk count string\r\n"


def test_resp3_hello(server):
    s = RespConn(server.port)
    s.send_raw(b"HELLO 3\r\n")
    out = s.read()
    assert out.startswith(b"%%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$%d\r\n%s\r\n" % (
        len(REDIS_VERSION), REDIS_VERSION.encode()))
    s.send_raw(b"GET nosuchkey\r\n")
    assert s.quit_and_read() == b"_\r\n"


def test_redis_cli_inline(server):
    out = subprocess.run(["redis-cli", "-p", str(server.port), "PING"], capture_output=True, text=True)
    assert out.stdout.strip() == "PONG"


def _outcome(fn):
    try:
        return fn()
    except ProtocolError as e:
        return ("error", str(e))


def test_check_partial_resumes_like_a_full_parse():
    """check_partial, fed a request in growing prefixes and resuming from
    its state, decides each prefix as parse_request decides it alone."""
    rng = random.Random(11)
    pieces = [b"*3\r\n", b"$3\r\nSET\r\n", b"$1\r\nk\r\n", b"$5\r\nvalue\r\n", b"*2\r\n$4\r\nECHO\r\n",
              b"$20000\r\n" + b"x" * 20000 + b"\r\n", b"$-1\r\n", b"$+3\r\nabc\r\n", b"%3\r\n",
              b"*12\r\n", b"$01\r\na\r\n", b"*0\r\n", b"*-1\r\n", b"PING\r\n", b"$3\r\nab", b"*1\r",
              b"$" + b"9" * 30 + b"\r\n", b"$1\r\nz\r\n" * 3]
    for _ in range(400):
        req = b"".join(rng.choice(pieces) for _ in range(rng.randrange(1, 6)))
        auth = rng.random() < 0.2
        state = None
        cuts = sorted(rng.sample(range(1, len(req) + 1), min(len(req), rng.randrange(1, 12))))
        for cut in cuts:
            prefix = bytearray(req[:cut])
            full = _outcome(lambda: parse_request(prefix, 0, 512 * 1024 * 1024, auth))
            inc = _outcome(lambda: check_partial(prefix, state, 512 * 1024 * 1024, auth))
            if isinstance(full, tuple) and full[0] == "error":
                assert inc == full, (req, cut)
                break
            assert inc[0] == (full[0] is not None), (req, cut)
            if inc[0]:
                break
            state = inc[1]


def test_big_request_in_many_reads(server, r):
    args = [b"SADD", b"bigset"] + [b"%.15f" % (i * 1.2345) for i in range(60000)]
    data = encode(*args)
    s = RespConn(server.port)
    for i in range(0, len(data), 8192):
        s.send_raw(data[i:i + 8192])
    assert s.quit_and_read() == b":60000\r\n"
    assert r.scard("bigset") == 60000


def test_partial_request_check_resumes(monkeypatch):
    """While hiredis holds an incomplete request, each read checks only what
    is new (a request arriving in many reads used to be parsed again from
    its first byte at every read: quadratic)."""
    calls = []
    real = reader_mod.check_partial

    def spy(buf, state, max_bulk, auth):
        calls.append(state)
        return real(buf, state, max_bulk, auth)

    monkeypatch.setattr(reader_mod, "check_partial", spy)

    class Limits:
        client_query_buffer_limit = 1 << 30
        proto_max_bulk_len = 512 << 20

    rd = reader_mod.RequestReader(Limits())
    args = [b"SADD", b"s"] + [b"m%d" % i for i in range(2000)]
    data = encode(*args)
    pieces = [data[i:i + 1000] for i in range(0, len(data) - 1, 1000)]
    for piece in pieces[:-1]:
        gets = rd.feed(piece, True)
        assert gets is not None and gets() is False
        assert rd.taken(piece, 0, None, False, True) is None
    assert len(calls) == len(pieces) - 1
    assert calls[0] is None and all(st is not None for st in calls[1:])
    # resumed from the last complete argument, never from the start
    assert [st[1] for st in calls[1:]] == sorted(st[1] for st in calls[1:])[::-1]
    assert calls[-1][0] > len(data) - 2000
