"""Inline requests at Redis's edges, compared with redis-server: the newline
is looked for with strchr (a NUL before it hides it: the request never
completes), and a line whose newline is beyond about 80 KB is "too big"
however the bytes arrive."""

from __future__ import annotations

import pytest

from support.resp import RespConn, exchange


@pytest.mark.parametrize("payload", [b"\x00\x01\x02\r\nPING\r\n", b"PING\x00junk\r\nPING\r\n"],
                         ids=["nul-first", "nul-after-command"])
def test_nul_hides_the_newline(server, redis_server, payload):
    for port in (server.port, redis_server.port):
        with RespConn(port) as c:
            c.send_raw(payload)
            assert c.nothing_within(0.5), port
            # the buffer keeps growing without a visible newline: too big
            c.send_raw(b"x" * 70_000 + b"\r\n")
            assert c.read_until_closed() == TOO_BIG


@pytest.mark.parametrize("length", [70_000, 81_908])
def test_long_inline_line_is_run(server, redis_server, length):
    payload = b"ECHO " + b"x" * (length - 5) + b"\r\n"
    assert exchange(server.port, payload) == exchange(redis_server.port, payload)


TOO_BIG = b"-ERR Protocol error: too big inline request\r\n"


def _refused(port, payload):
    with RespConn(port) as c:
        c.send_raw(payload)
        try:
            return c.read_until_closed()
        except ConnectionResetError:
            # redis-server closes with our bytes unread: the reset may
            # overtake its reply
            return None


@pytest.mark.parametrize("length", [81_909, 100_000])
def test_too_big_inline_request(server, redis_server, length):
    payload = b"SET k " + b"x" * (length - 6) + b"\r\n"
    assert _refused(server.port, payload) == TOO_BIG
    assert _refused(redis_server.port, payload) in (TOO_BIG, None)
