"""Clients that never read their replies: disconnected at Redis's limits,
server memory bounded.  An unauthenticated client is measured side by side
with redis-server (Debian's 7.0.15 build closes it after ~17 KB of unsent
replies, whatever client-output-buffer-limit says)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time

import pytest
from conftest import ServerProc, free_port, wait_port
from support.servers import rss

REDIS_SERVER = shutil.which("redis-server")
MB = 1024 * 1024




def _flood(port, chunk, limit_bytes, timeout=10.0):
    """Send ``chunk`` again and again without reading; returns (bytes sent,
    disconnected).  Stops at ``limit_bytes`` or when the server closes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sent = 0
    closed = False
    deadline = time.time() + 60
    try:
        while sent < limit_bytes and time.time() < deadline:
            try:
                s.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            except socket.timeout:
                break               # the server stopped reading us
            sent += len(chunk)
        if not closed:
            # a closed connection shows once the peer's RST arrives
            s.settimeout(0.5)
            try:
                for _ in range(20):
                    s.sendall(chunk)
                    time.sleep(0.05)
            except (BrokenPipeError, ConnectionResetError):
                closed = True
            except socket.timeout:
                pass
    finally:
        s.close()
    return sent, closed


PING = b"PING\r\n" * 10000
PING_MB = b"*1\r\n$4\r\nPING\r\n" * 8000


def _ophidis_flood(args, chunk, limit, setup=None):
    s = ServerProc(list(args))
    try:
        if setup:
            setup(s)
        rss0 = rss(s.proc.pid)
        sent, closed = _flood(s.port, chunk, limit)
        rss1 = rss(s.proc.pid)
        # the server is still serving everyone else
        c = s.client(**({"password": "secret"} if "--requirepass" in args else {}))
        assert c.ping()
        return sent, closed, rss1 - rss0, s.output()
    finally:
        s.stop()


@pytest.mark.parametrize("chunk", [PING, PING_MB], ids=["inline", "multibulk"])
def test_unauthenticated_client_that_never_reads_is_disconnected(chunk):
    sent, closed, growth, out = _ophidis_flood(["--requirepass", "secret"], chunk, 30 * MB)
    assert closed, "still connected after %d bytes sent" % sent
    assert sent < 8 * MB, sent
    assert growth < 40 * MB, growth
    assert "scheduled to be closed ASAP for overcoming of output buffer limits" in out
    if REDIS_SERVER is None:
        return
    port = free_port()
    proc = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--save", "", "--requirepass", "secret"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        ref_sent, ref_closed = _flood(port, chunk, 30 * MB)
    finally:
        proc.kill()
        proc.wait(10)
    # both close such a client after a few MB at most (kernel buffers included)
    assert ref_closed == closed
    assert ref_sent < 8 * MB


@pytest.mark.parametrize("req", [b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n" * 200, b"GET big\r\n" * 400,
                                 b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\nGET big\r\n" * 200],
                         ids=["multibulk", "inline", "mixed"])
def test_authenticated_client_that_never_reads_hits_the_normal_limit(req):
    def setup(s):
        c = s.client()
        c.set(b"big", b"x" * 100000)
        c.config_set("client-output-buffer-limit", "normal 1mb 0 0")
    sent, closed, growth, out = _ophidis_flood([], req, 30 * MB, setup=setup)
    assert closed
    assert growth < 60 * MB, growth
    assert "closed" in out and "for overcoming of output buffer limits" in out


@contextlib.contextmanager
def _never_reading(port, request, attached, poll):
    """A connection to ``port`` with a small receive buffer that sends
    ``request`` and never reads, once ``attached()`` is true (asked every
    ``poll`` seconds, for 30 s at the most); closed on exit."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(request)
        deadline = time.time() + 30
        while not attached():
            assert time.time() < deadline
            time.sleep(poll)
        yield sock
    finally:
        sock.close()


def test_subscriber_that_never_reads_hits_the_pubsub_limit():
    with ServerProc(["--client-output-buffer-limit", "pubsub 1mb 0 0"]) as s:
        c = s.client()
        with _never_reading(s.port, b"*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\nch\r\n",
                            lambda: c.pubsub_numsub("ch")[0][1] != 0, 0.02):
            rss0 = rss(s.proc.pid)
            msg = b"m" * 50000
            receivers = 1
            n = 0
            while receivers and n < 2000:
                receivers = c.publish("ch", msg)
                n += 1
            assert receivers == 0, "the subscriber was never disconnected"
            assert rss(s.proc.pid) - rss0 < 60 * MB
            assert "for overcoming of output buffer limits" in s.output()
            assert c.info("stats")["client_output_buffer_limit_disconnections"] >= 1 \
                if "client_output_buffer_limit_disconnections" in c.info("stats") else True


def test_replica_that_never_reads_hits_the_replica_limit():
    with ServerProc(["--client-output-buffer-limit", "replica 1mb 0 0", "--repl-backlog-size", "1mb"]) as s:
        c = s.client()
        with _never_reading(s.port, b"*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n",
                            lambda: c.info("replication")["connected_slaves"] != 0, 0.05):
            rss0 = rss(s.proc.pid)
            value = b"v" * 100000
            n = 0
            while c.info("replication")["connected_slaves"] and n < 1000:
                c.set(b"k", value)
                n += 1
            assert n < 1000, "the replica was never disconnected"
            assert rss(s.proc.pid) - rss0 < 60 * MB
            assert "for overcoming of output buffer limits" in s.output()
