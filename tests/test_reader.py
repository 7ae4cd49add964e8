"""reader.RequestReader over bytes: the requests it gives for a stream,
however the stream is cut into reads, are the ones Redis's parser
(protocol.parse_request) finds in the whole stream, with the same protocol
errors; what is left is the query buffer.  The request loops driven here are
the server's own (client._run_requests and, when built, the compiled one),
with an empty command table so every request is only recorded."""

from __future__ import annotations

import random
import socket
import time

import pytest
from support.resp import encode

from ophidis.net import client as client_mod
from ophidis import compiled
from ophidis.protocol.reader import PYTHON, QBUF_LIMIT, RequestReader
from ophidis.protocol.resp import ProtocolError, parse_request

LOOPS = [client_mod._run_requests] + ([compiled.load("net._client").run] if compiled.enabled() else [])


class Limits:
    def __init__(self, qbuf=1 << 30, bulk=512 << 20):
        self.client_query_buffer_limit = qbuf
        self.proto_max_bulk_len = bulk


class _AllRights:
    fast = None          # an unrestricted ACL user (acl.users.User.fast)


class Recorder(client_mod.ClientCore):
    """What the request loops need of a client (the compiled loop takes a
    ClientCore, as Client is): every request goes to
    process_request (the command table is empty), which records it; a
    request named BLOCK blocks the client."""

    def __init__(self):
        self.got = []
        self.last_cmd = None
        self.blocked = self.close_after_reply = self.closing = False
        self.paused_queue = None
        self.slow = True
        self.server = None
        self.user = _AllRights()

    def process_request(self, argv):
        self.got.append(argv)
        if argv[0] == b"BLOCK":
            self.blocked = True
        return None


def feed(rd, c, data, auth=True, loop=client_mod._run_requests):
    """One read, as Client._data_received handles it."""
    if c.blocked:
        rd.hold(data)
        return
    while data is not None:
        gets = rd.feed(data, auth)
        if gets is not None:
            nreq, last = loop(c, gets, [], {}, True, 0.0)
            try:
                st = rd.taken(data, nreq, last, c.blocked, auth)
            except ProtocolError as e:
                c.got.append(("error", str(e)))
                c.closing = True
                return
            if st is None:
                return
            if st == QBUF_LIMIT:
                c.got.append("limit")
                c.closing = True
                return
            assert st == PYTHON
        data = python(rd, c, auth)


def python(rd, c, auth=True):
    """The Python parser's loop, as Client._python_input: returns the bytes
    hiredis takes over from, or None."""
    batch = rd.lines
    if batch is not None:
        rd.lines = None
        for k, argv in enumerate(batch, 1):
            c.process_request(argv)
            if c.blocked:
                assert rd.lines_stopped(k, True, False) is None
                break
        return None
    else:
        while not c.blocked:
            try:
                argv = rd.next(auth)
            except ProtocolError as e:
                c.got.append(("error", str(e)))
                c.closing = True
                return None
            if argv is None:
                break
            if argv.__class__ is bytes:
                return argv
            c.process_request(argv)
    if rd.python_done(c.blocked, False) == QBUF_LIMIT:
        c.got.append("limit")
        c.closing = True
    return None


def run(chunks, auth=True, limits=None, loop=client_mod._run_requests):
    rd = RequestReader(limits or Limits())
    c = Recorder()
    for data in chunks:
        if c.closing:
            break
        feed(rd, c, data, auth, loop)
    return c.got, rd


def reference(stream, auth=True, limits=None):
    """Redis's parser over the whole stream: the requests, then the error
    (if any), and the bytes left."""
    limits = limits or Limits()
    got = []
    pos = 0
    while True:
        try:
            argv, pos2 = parse_request(stream, pos, limits.proto_max_bulk_len, not auth)
        except ProtocolError as e:
            got.append(("error", str(e)))
            return got, None
        if argv is None:
            return got, stream[pos:]
        pos = pos2
        if argv:
            got.append(argv)


def check(stream, cuts, auth=True, limits=None, loop=client_mod._run_requests):
    chunks = [stream[a:b] for a, b in zip([0] + cuts, cuts + [len(stream)]) if b > a]
    got, rd = run(chunks, auth, limits, loop)
    want, rest = reference(stream, auth, limits)
    assert got == want, (stream, cuts)
    if rest is not None:
        assert bytes(rd.pend or b"") == rest, (stream, cuts)
        if not rest:
            assert rd.pend is None


STREAMS = [
    encode("SET", "k", "v") + encode("GET", "k"),
    encode("PING") + b"PING\r\n" + encode("ECHO", "x" * 40) + b"ECHO 'a b' \"c\\x41\"\r\n",
    b"GET a\r\nSET b c\r\n\r\n  \r\nINCR n\n",
    encode("SET", "k", "*1\r\n$4\r\nPING\r\n") + encode("PING"),
    encode("MSET", "a*1", "PING") + encode("PING"),
    encode("ECHO", "") + b"*0\r\n*-1\r\n" + encode("PING"),
    encode("SET", "a", "1") + b"*2\r\n$3\r\nGET\r\n:1\r\n" + encode("PING"),
    encode("SET", "a", "1") + b"*2\r\n$6\r\nEXISTS\r\n$-1\r\n",
    encode("GET", "a") + b"*2\r\n$4\r\nECHO\r\n*1\r\n$1\r\nx\r\n",
    encode("GET", "a") + b"*1\r\n$-5\r\n",
    encode("GET", "a") + b"*x\r\n",
    encode("GET", "a") + b"*3000000000\r\n",
    encode("GET", "a") + b"*1000000\r\n$1\r\na\r\n",
    encode("GET", "a") + b"$3\r\nfoo\r\n",
    encode("GET", "a") + b"*1\r\n$01\r\na\r\n",
    encode("GET", "a") + b"*1\r\n$600000000\r\n",
    encode("GET", "a") + b'SET "a\r\n',
    encode("GET", "a") + b"*2\r\n$3\r\nGET\r\n",        # incomplete at the end
    encode("SADD", "s", *["m%d" % i for i in range(30)]),
]


@pytest.mark.parametrize("loop", LOOPS, ids=[f.__module__ for f in LOOPS])
@pytest.mark.parametrize("stream", STREAMS)
def test_two_reads_cut_at_every_byte(stream, loop):
    check(stream, [], loop=loop)
    for cut in range(1, len(stream)):
        check(stream, [cut], loop=loop)


@pytest.mark.parametrize("loop", LOOPS, ids=[f.__module__ for f in LOOPS])
@pytest.mark.parametrize("stream", STREAMS)
def test_one_byte_per_read(stream, loop):
    check(stream, list(range(1, len(stream))), loop=loop)


@pytest.mark.parametrize("loop", LOOPS, ids=[f.__module__ for f in LOOPS])
def test_random_pipelines(loop):
    rnd = random.Random(5)
    pieces = [encode("SET", "k", "v" * 30), encode("GET", "k"), b"PING\r\n", b"ECHO 'a'\r\n",
              encode("ECHO", "x" * 3000), b"*0\r\n", encode("LPUSH", "l", *range(12)), b"\r\n"]
    for _ in range(150):
        stream = b"".join(rnd.choice(pieces) for _ in range(rnd.randrange(1, 12)))
        if rnd.random() < 0.2:
            stream += rnd.choice([b"*1\r\n$2\r\nab", b"*x\r\n", b":1\r\n", b"*2\r\n$3\r\nGET\r\n:1\r\n"])
        cuts = sorted(rnd.sample(range(1, len(stream)), min(len(stream) - 1, rnd.randrange(0, 8))))
        check(stream, cuts, loop=loop)
        check(stream, cuts, auth=False, loop=loop)


def test_unauthenticated_limits():
    assert run([b"*11\r\n"], auth=False)[0] == [("error", "unauthenticated multibulk length")]
    big = b"*2\r\n$4\r\nAUTH\r\n$20000\r\n"
    assert run([big], auth=False)[0] == [("error", "unauthenticated bulk length")]
    # the same bytes from an authenticated client are a request in progress
    got, rd = run([big])
    assert got == [] and bytes(rd.pend) == big
    check(encode("ECHO", "y" * 20000), [5, 20003], auth=False)


def test_seven_digit_counts_never_reach_hiredis():
    """hiredis pre-sizes an array from its header: such reads go to the
    Python parser, which applies Redis's limits."""
    rd = RequestReader(Limits())
    assert rd.feed(b"*1000000\r\n$1\r\na\r\n", True) is None
    rd = RequestReader(Limits())
    assert rd.feed(encode("PING") + b"*30000", True) is None     # the start of one
    rd = RequestReader(Limits())
    gets = rd.feed(b"*1\r\n$4\r\nPI", True)
    assert gets is not None and gets() is False
    assert rd.taken(b"*1\r\n$4\r\nPI", 0, None, False, True) is None
    assert rd.feed(b"NG\r\n*1000000\r\n", True) is None          # hiredis held a partial request
    assert rd.next(True) == [b"PING"]
    assert rd.next(True) is None
    assert rd.python_done(False, False) is None
    assert bytes(rd.pend) == b"*1000000\r\n"


def test_query_buffer_limit():
    limits = Limits(qbuf=1000)
    got, rd = run([b"*1\r\n$5000\r\n" + b"x" * 900, b"x" * 200], limits=limits)
    assert got == ["limit"]
    # inline: the leftover of a read in Python mode
    got, _ = run([b"PING\r\nGET " + b"a" * 900, b"a" * 200], limits=limits)
    assert got == [[b"PING"], "limit"]
    got, _ = run([b"PING\r\nGET " + b"a" * 900, b"a" * 20 + b"\r\n"], limits=limits)
    assert got == [[b"PING"], [b"GET", b"a" * 920]]


def test_bytes_held_while_blocked_run_at_resume():
    stream = encode("SET", "a", "1") + encode("BLOCK") + encode("GET", "a") + b"PING\r\n" + encode("GET", "b")
    for cut in range(1, len(stream)):
        for loop in LOOPS:
            rd = RequestReader(Limits())
            c = Recorder()
            feed(rd, c, stream[:cut], loop=loop)
            feed(rd, c, stream[cut:], loop=loop)
            assert c.got == [[b"SET", b"a", b"1"], [b"BLOCK"]], cut
            assert bytes(rd.pend) == stream[len(encode("SET", "a", "1") + encode("BLOCK")):]
            c.blocked = False
            assert rd.resume()
            data = python(rd, c)      # as Client.resume
            if data is not None:
                feed(rd, c, data, loop=loop)
            assert c.got[2:] == [[b"GET", b"a"], [b"PING"], [b"GET", b"b"]], cut
            assert rd.pend is None and not rd.py
            assert not rd.resume()


def test_many_switches_in_one_read():
    """A read that goes back and forth between the two parsers many times
    ("*0" before each request: hiredis gives [], the Python parser skips
    it and hands the rest back)."""
    stream = (b"*0\r\n" + encode("PING")) * 3000
    got, rd = run([stream])
    assert got == [[b"PING"]] * 3000 and rd.pend is None


def test_many_switches_in_one_read_live(server):
    """The same through a server: no recursion per switch (it used to
    reset the connection with a RecursionError)."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    s.sendall((b"*0\r\n" + encode("PING")) * 3000 + encode("ECHO", "end"))
    out = b""
    while not out.endswith(b"$3\r\nend\r\n"):
        b = s.recv(65536)
        assert b, out[-100:]
        out += b
    s.close()
    assert out == b"+PONG\r\n" * 3000 + b"$3\r\nend\r\n"


def test_inline_lines_held_while_blocked():
    for stream in (b"SET a 1\r\n\r\nBLOCK\r\n\r\nGET a\r\nPING\r\n", b"BLOCK\n", b"\nBLOCK\nPING\n"):
        rd = RequestReader(Limits())
        c = Recorder()
        feed(rd, c, stream)
        assert c.got[-1] == [b"BLOCK"]
        rest = stream[stream.index(b"\n", stream.index(b"BLOCK")) + 1:]
        assert bytes(rd.pend or b"") == rest
        c.blocked = False
        if rd.resume():
            assert python(rd, c) is None
        assert c.got == [a for a in map(bytes.split, stream.split(b"\n")) if a]
        assert rd.pend is None and not rd.py


def test_back_to_hiredis_after_inline():
    rd = RequestReader(Limits())
    c = Recorder()
    feed(rd, c, b"PING\r\n" + encode("SET", "k", "v") + encode("GET", "k"))
    assert c.got == [[b"PING"], [b"SET", b"k", b"v"], [b"GET", b"k"]]
    assert rd.pend is None and not rd.py
    assert rd.feed(encode("GET", "k"), True) is not None      # hiredis parses again


def test_protocol_errors_match_redis_server(redis_server, server):
    """The errors the reader gives, sent through a live server, are
    redis-server's bytes (after the replies of the requests before)."""
    cases = [b"*x\r\n", b"*1\r\n$-5\r\n", b"*1\r\nx\r\n", b"*1\r\n$600000000\r\n", b"*3000000000\r\n",
             b'SET "a\r\n', b"*1\r\n$01\r\na\r\n", b"*2\r\n$3\r\nGET\r\n:1\r\n"]
    for tail in cases:
        stream = encode("PING") + b"PING\r\n" + tail
        outs = []
        for port in (server.port, redis_server.port):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            for i in range(0, len(stream), 3):
                s.sendall(stream[i:i + 3])
                time.sleep(0.002)
            out = b""
            while True:
                b = s.recv(4096)
                if not b:
                    break
                out += b
            s.close()
            outs.append(out)
        assert outs[0] == outs[1], tail
        assert outs[0].startswith(b"+PONG\r\n+PONG\r\n-ERR Protocol error: ")
        assert outs[0][len(b"+PONG\r\n+PONG\r\n-ERR Protocol error: "):-2].decode() == \
            reference(stream)[0][-1][1]


@pytest.mark.xfail(strict=True, reason="known: the read-boundary check (the read ends with the whole "
                   "encoding of the last request) is fooled when a partial request's bytes end with it")
@pytest.mark.parametrize("stream, cut", [
    (encode("PING") + encode("SET", "k", "*1\r\n$4\r\nPING\r\ntail"), 53),    # inside an argument
    (encode("PING") + encode("MSET", "a*1", "PING", "b", "c"), 47),            # between arguments
])
def test_boundary_check_fooled_by_arguments_that_look_like_the_last_request(stream, cut):
    check(stream, [cut])
