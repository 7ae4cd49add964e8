"""MIGRATE's cache of connections to target instances (cluster.c's
migrate_cached_sockets) and the synchronous I/O on them (syncio.c).

As in Redis the exchange is synchronous: the event loop waits for the
target, but never longer than a timeout in milliseconds per step (connect,
each write, each reply byte awaited), as syncio.c's helpers do.

``MigrateSockets`` (the server's ``migrate_sockets`` slot) keeps at most
64 connections keyed by ``host:port``; the cron closes those idle for more
than 10 seconds.  The command itself is commands/migrate.py.
"""

from __future__ import annotations

import errno
import random
import select
import socket
import ssl
import time

from ..util import atoi

CACHE_ITEMS = 64          # MIGRATE_SOCKET_CACHE_ITEMS
CACHE_TTL = 10            # MIGRATE_SOCKET_CACHE_TTL, seconds
LINE_MAX = 1023           # a reply line is read into a 1024-byte buffer
_RESOLUTION = 10          # syncio.c's wait resolution, milliseconds


def _mstime() -> int:
    return int(time.time() * 1000)


if hasattr(select, "poll"):
    def _wait(sock, writable: bool, ms: int) -> bool:
        """aeWait: True when the socket is ready (or in error) within ms."""
        p = select.poll()
        p.register(sock, select.POLLOUT if writable else select.POLLIN)
        return bool(p.poll(ms))
else:  # pragma: no cover - platforms without poll (Windows)
    def _wait(sock, writable: bool, ms: int) -> bool:
        r, w, x = select.select([] if writable else [sock], [sock] if writable else [], [sock],
                                ms / 1000.0)
        return bool(r or w or x)


def _handshake(sock, tls, timeout_ms: int):
    """The TLS client handshake on a connected non-blocking socket within
    timeout_ms: the SSL socket, or None (the socket closed)."""
    try:
        ssock = tls.wrap_socket(sock, do_handshake_on_connect=False)
    except (OSError, ValueError):
        sock.close()
        return None
    deadline = _mstime() + timeout_ms
    while True:
        try:
            ssock.do_handshake()
            return ssock
        except ssl.SSLWantReadError:
            writable = False
        except ssl.SSLWantWriteError:
            writable = True
        except (OSError, ValueError):
            break
        left = deadline - _mstime()
        if left <= 0 or not _wait(ssock, writable, left):
            break
    ssock.close()
    return None


class SocketFailure(Exception):
    """A write or read on a target connection failed; ``timed_out`` is
    Redis's ``errno == ETIMEDOUT`` (a timeout is never retried)."""

    def __init__(self, timed_out: bool):
        super().__init__("timeout" if timed_out else "socket error")
        self.timed_out = timed_out


class TargetConn:
    """One connection to a target instance (migrateCachedSocket): a
    non-blocking socket driven synchronously, with syncio.c's timeouts."""

    __slots__ = ("sock", "last_dbid", "last_use", "buf")

    def __init__(self, sock):
        self.sock = sock
        self.last_dbid = -1        # the database selected on it (-1: unknown)
        self.last_use = int(time.time())
        self.buf = bytearray()     # reply bytes read and not consumed yet

    @classmethod
    def connect(cls, host: bytes, port: int, timeout_ms: int, tls=None):
        """A connection to host:port, or None when no address could even
        be tried (connBlockingConnect).  As in Redis, a connection that is
        refused or not established within the timeout is still returned:
        the first write reports it.  With tls (an SSLContext: tls-cluster),
        the handshake is part of connecting: None when it fails or does not
        end within the timeout."""
        try:
            addrs = socket.getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM)
        except (OSError, UnicodeError, ValueError, OverflowError):
            return None
        for family, kind, proto, _, addr in addrs:
            try:
                sock = socket.socket(family, kind, proto)
            except OSError:
                continue
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.setblocking(False)
                rc = sock.connect_ex(addr)
            except OSError:
                sock.close()
                continue
            if rc in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
                break
            sock.close()
        else:
            return None
        _wait(sock, True, timeout_ms)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        if tls is not None:
            sock = _handshake(sock, tls, timeout_ms)
            if sock is None:
                return None
        return cls(sock)

    def _until(self, writable: bool, timeout_ms: int, step):
        # syncio.c's loop: try step() (True when done), else wait for the
        # socket; SocketFailure(timed out) when timeout_ms passed in all
        start = _mstime()
        remaining = timeout_ms
        while not step():
            _wait(self.sock, writable, max(remaining, _RESOLUTION))
            elapsed = _mstime() - start
            if elapsed >= timeout_ms:
                raise SocketFailure(True)
            remaining = timeout_ms - elapsed

    def write(self, data, timeout_ms: int):
        """syncWrite: all of data within timeout_ms, else SocketFailure."""
        view = memoryview(data)

        def step():
            nonlocal view
            try:
                n = self.sock.send(view)
            except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                return False
            except OSError:
                raise SocketFailure(False) from None
            view = view[n:]
            return not view
        self._until(True, timeout_ms, step)

    def _fill(self, timeout_ms: int):
        # syncRead: more bytes within timeout_ms; the end of the stream fails

        def step():
            try:
                data = self.sock.recv(16384)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                return False
            except OSError:
                raise SocketFailure(False) from None
            if not data:
                raise SocketFailure(False)
            self.buf += data
            return True
        self._until(False, timeout_ms, step)

    def readline(self, timeout_ms: int) -> bytes:
        """syncReadLine into a 1024-byte buffer: one reply line without its
        CR LF (at most 1023 bytes; a longer line is returned in pieces).
        An empty line counts as a failure, as Redis's ``<= 0`` test does."""
        buf = self.buf
        while True:
            i = buf.find(b"\n", 0, LINE_MAX)
            if i >= 0:
                line = bytes(buf[:i])
                del buf[:i + 1]
                break
            if len(buf) >= LINE_MAX:
                line = bytes(buf[:LINE_MAX])
                del buf[:LINE_MAX]
                break
            self._fill(timeout_ms)
        if not line:
            raise SocketFailure(False)
        return line[:-1] if line[-1:] == b"\r" else line

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class MigrateSockets:
    """The cache of connections to targets (``host:port`` -> TargetConn)."""

    __slots__ = ("server", "cache", "next_check")

    def __init__(self, server):
        self.server = server
        self.cache: dict = {}
        self.next_check = 0.0
        server.cron_hooks.append(self.cron)

    def __len__(self) -> int:
        return len(self.cache)

    def get(self, host: bytes, port: bytes, timeout_ms: int):
        """migrateGetSocket: the cached connection to host:port or a new
        one (dropping a random one when the cache is full); None when it
        cannot be created."""
        name = host + b":" + port
        cs = self.cache.get(name)
        if cs is not None:
            cs.last_use = int(time.time())
            return cs
        if len(self.cache) >= CACHE_ITEMS:
            victim = random.choice(list(self.cache))
            self.cache.pop(victim).close()
        srv = self.server
        tls = srv.tls.client_context() if srv.config["tls-cluster"] else None
        cs = TargetConn.connect(host, _atoi(port), timeout_ms, tls)
        if cs is None:
            return None
        self.cache[name] = cs
        return cs

    def close(self, host: bytes, port: bytes):
        """migrateCloseSocket (nothing when host:port has no connection)."""
        cs = self.cache.pop(host + b":" + port, None)
        if cs is not None:
            cs.close()

    def close_idle(self, now: int):
        """migrateCloseTimedoutSockets."""
        for name, cs in list(self.cache.items()):
            if now - cs.last_use > CACHE_TTL:
                del self.cache[name]
                cs.close()

    def cron(self):
        # once a second, as serverCron's run_with_period(1000)
        if not self.cache:
            return
        now = time.monotonic()
        if now >= self.next_check:
            self.next_check = now + 1.0
            self.close_idle(int(time.time()))


def _atoi(b: bytes) -> int:
    """C's atoi, clamped to an int of 32 bits."""
    return max(-(1 << 31), min((1 << 31) - 1, atoi(b)))
