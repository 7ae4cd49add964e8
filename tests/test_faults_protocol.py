"""A fuzzer for the request reader: the pure parser (hypothesis over
protocol.parse_request) and a live server fed mutated frames on fresh
connections while another client is served throughout."""

from __future__ import annotations

import random
import socket

from conftest import ServerProc
from hypothesis import given, settings
from hypothesis import strategies as st
from support.servers import rss

from ophidis.protocol.resp import ProtocolError, encode_request, parse_request

MAX_BULK = 512 * 1024 * 1024

_args = st.lists(st.binary(max_size=40), min_size=1, max_size=6)


def _mutate(rnd: random.Random, frame: bytes) -> bytes:
    b = bytearray(frame)
    for _ in range(rnd.randint(1, 4)):
        op = rnd.randrange(6)
        i = rnd.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(i, len(b) - 1)] = rnd.randrange(256)
        elif op == 1:
            b[i:i] = rnd.choice([b"\r\n", b"*", b"$", b"-1", b"\x00", b"\"", b"'", b"999999999999", b"\n"])
        elif op == 2 and b:
            del b[i:i + rnd.randint(1, 8)]
        elif op == 3:
            b = b[:i]
        elif op == 4:
            b[i:i] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 16)))
        else:
            b += frame
    return bytes(b)


def _check_parse(buf, auth_required):
    pos = 0
    steps = 0
    while pos < len(buf) and steps < 1000:
        steps += 1
        try:
            argv, newpos = parse_request(buf, pos, MAX_BULK, auth_required)
        except ProtocolError as e:
            assert str(e)            # Redis's message, never empty
            return
        if argv is None:
            assert newpos == pos
            return
        assert pos < newpos <= len(buf)
        assert isinstance(argv, list) and all(isinstance(a, (bytes, bytearray)) for a in argv)
        pos = newpos


@settings(max_examples=400, deadline=None)
@given(st.lists(_args, min_size=1, max_size=4), st.randoms(use_true_random=False), st.booleans())
def test_parser_never_crashes_on_mutated_frames(reqs, rnd, auth):
    frame = b"".join(encode_request(*a) for a in reqs)
    _check_parse(frame, auth)
    _check_parse(_mutate(rnd, frame), auth)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.booleans())
def test_parser_never_crashes_on_random_bytes(data, auth):
    _check_parse(data, auth)


@settings(max_examples=200, deadline=None)
@given(st.lists(_args, min_size=1, max_size=3), st.data())
def test_parser_prefix_is_incomplete_or_the_same_request(reqs, data):
    """A prefix of valid frames parses to the same requests or asks for more."""
    frame = b"".join(encode_request(*a) for a in reqs)
    cut = data.draw(st.integers(0, len(frame)))
    whole = parse_request(frame, 0, MAX_BULK, False)
    part = parse_request(frame[:cut], 0, MAX_BULK, False)
    if part[0] is not None:
        assert part == whole
    else:
        assert part[1] == 0


def test_live_server_survives_mutated_frames():
    s = ServerProc(["--requirepass", ""])
    ctl = s.client()
    rnd = random.Random(1234)
    base = [encode_request(b"SET", b"k", b"v"), encode_request(b"GET", b"k"), b"PING\r\n",
            encode_request(b"RPUSH", b"l", b"a", b"b"), encode_request(b"HSET", b"h", b"f", b"v"),
            encode_request(b"EVAL", b"return 1", b"0"), b"SET \"a b\" 'c'\r\n", b"*1\r\n$4\r\nPING\r\n",
            encode_request(b"MULTI") + encode_request(b"INCR", b"n") + encode_request(b"EXEC")]
    try:
        rss0 = rss(s.proc.pid)
        # a fixed number of frames (each attempt is bounded by its
        # timeouts), however fast the machine gets through them
        n = 0
        while n < 200:
            frame = _mutate(rnd, rnd.choice(base) * rnd.randint(1, 3))
            c = socket.create_connection(("127.0.0.1", s.port), timeout=5)
            try:
                c.sendall(frame)
                c.settimeout(0.02)
                try:
                    c.recv(65536)
                except (socket.timeout, ConnectionResetError):
                    pass
            finally:
                c.close()
            n += 1
            if n % 20 == 0:
                assert ctl.ping()            # other clients served throughout
        assert ctl.ping()
        assert rss(s.proc.pid) - rss0 < 50 * 1024 * 1024
        out = s.output()
        assert "Traceback" not in out and "Internal error" not in out, out[-3000:]
    finally:
        ctl.close()
        s.stop()
