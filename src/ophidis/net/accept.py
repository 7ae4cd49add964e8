"""Listening sockets the server accepts from itself (Redis's accept
handlers): ``Acceptor`` watches them with the event loop's ``add_reader``
and accepts up to MAX_ACCEPTS connections per readable event
(MAX_ACCEPTS_PER_CALL); its subclasses say what an accepted connection
becomes.  ``PlainListener`` (compiled installs, plain TCP and unix
sockets) hands each one to net/_sock.pyx's ``SockConn`` and its Client at
once, so a connection is known to the server from its accept on (a busy
script's poller serves it); net/tls.py's ``TlsListener`` starts its TLS
handshake.  Both quack like the asyncio Server for the server's listener
list (``sockets``, ``close``, ``is_serving``, ``start_serving``)."""

from __future__ import annotations

import socket
import traceback

from .. import compiled, log

_sock = compiled.load("net._sock")


class Acceptor:
    MAX_ACCEPTS = 1000      # per readable event (MAX_ACCEPTS_PER_CALL)

    def __init__(self, server, socks, make_client, start=True):
        self.server = server
        self.sockets = list(socks)
        self.make_client = make_client
        self.serving = False
        if start:
            self._start()

    def _start(self):
        loop = self.server.loop
        for sk in self.sockets:
            loop.add_reader(sk.fileno(), self._accept, sk)
        self.serving = True

    def is_serving(self) -> bool:
        return self.serving

    async def start_serving(self):
        if not self.serving:
            self._start()

    def close(self):
        loop = self.server.loop
        for sk in self.sockets:
            if self.serving:
                try:
                    loop.remove_reader(sk.fileno())
                except (ValueError, OSError):
                    pass
            sk.close()
        self.sockets = []
        self.serving = False

    def _accept(self, lsock):
        for _ in range(self.MAX_ACCEPTS):
            try:
                conn, _addr = lsock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                log.warning("Accepting client connection: %s" % e.strerror)
                return
            conn.setblocking(False)
            if conn.family != socket.AF_UNIX:
                try:
                    # replies and handshakes must not wait for the peer's
                    # delayed ACK (Nagle)
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                except OSError:
                    pass
            self.accepted(conn)

    def accepted(self, conn):
        raise NotImplementedError


class PlainListener(Acceptor):
    """Plain TCP or unix listening sockets whose connections are read and
    written by SockConn (compiled installs only: ``available()``)."""

    @staticmethod
    def available() -> bool:
        return _sock is not None

    def accepted(self, conn):
        c = self.make_client()
        t = _sock.SockConn(self.server.loop, conn, c)
        try:
            c.connection_made(t)
        except Exception:  # noqa: BLE001 - one connection's failure is not the listener's
            log.warning("Accepting client connection: %s" % traceback.format_exc().replace("\n", " | "))
            t.abort()
            return
        t.start()
