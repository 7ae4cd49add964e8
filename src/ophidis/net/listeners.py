"""Listening sockets: TCP addresses (bind, port, rebinding on CONFIG SET),
the TLS port (tls-port: the same addresses, each connection upgraded by
net/tls.py before its Client serves it) and the unix socket.  In a compiled
install the plain ones are net/accept.py's PlainListener (the server's own
accept and net/_sock.pyx's transport), else the event loop's servers."""

from __future__ import annotations

import asyncio
import os
import socket

from .. import log
from ..config import ConfigError
from .accept import PlainListener
from .client import Client
from .tls import TlsListener


class Listeners:
    """Part of ``Server`` (a mixin: the state is declared there)."""

    __slots__ = ()

    async def listen(self):
        """Bind every listener (Redis's initServer); none accepts until
        ``serve_clients``: a client is served only once the server has
        logged "Ready to accept connections", or while it loads its files
        (with -LOADING), as Redis processes no event before either."""
        loop = self.loop
        cfg = self.config
        port = cfg["port"]
        backlog = cfg["tcp-backlog"]
        if port:
            await self._listen_tcp(port, backlog, start=False)
        tls_port = cfg["tls-port"]
        if tls_port:
            await self._listen_tcp(tls_port, backlog, "tls", start=False)
        path = cfg["unixsocket"]
        if path:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            if PlainListener.available():
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    sock.bind(path)
                    sock.listen(backlog)
                    sock.setblocking(False)
                except OSError:
                    sock.close()
                    raise
                srv = PlainListener(self, [sock], lambda: Client(self), start=False)
            else:
                srv = await loop.create_unix_server(lambda: Client(self), path, backlog=backlog,
                                                    start_serving=False)
            perm = cfg["unixsocketperm"]
            if perm:
                os.chmod(path, perm)
            self.unix_path = path
            self.listeners.append(("unix", srv))
            log.notice("The server is now ready to accept connections at %s" % path)

    async def serve_clients(self):
        """Start accepting on the listeners bound by ``listen`` (once)."""
        for _, srv in self.listeners:
            if not srv.is_serving():
                await srv.start_serving()

    def bind_tcp(self, port, backlog, addrs=None):
        """Bind and listen on the configured TCP addresses (or ``addrs``),
        synchronously.  Returns the listening sockets; raises OSError when a
        mandatory address cannot be bound (the sockets bound so far are
        closed).  The cluster bus listens on the same addresses with it."""
        if addrs is None:
            addrs = self.config["bind"]
            if addrs is None:
                addrs = ["*", "-::*"]
        socks = []
        try:
            for a in addrs:
                optional = a.startswith("-")
                host = a[1:] if optional else a
                if host == "*":
                    host = "0.0.0.0"
                elif host == "::*":
                    host = "::"
                sock = None
                try:
                    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET,
                                         socket.SOCK_STREAM)
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    if ":" in host:
                        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                    sock.bind((host, port))
                    sock.listen(backlog)
                    sock.setblocking(False)
                    socks.append(sock)
                except OSError as e:
                    if sock is not None:
                        sock.close()
                    if optional or (e.errno in (97, 99) and host in ("::", "::1")):
                        log.warning("Could not create server TCP listening socket %s:%d: %s" % (
                            host, port, e.strerror))
                        continue
                    log.warning("Warning: Could not create server TCP listening socket %s:%d: %s" % (
                        host, port, e.strerror))
                    raise
            if not socks and addrs:
                raise OSError(98, "no address could be bound")
            # bind "" (no address at all): no TCP listener, as Redis
        except OSError:
            for sk in socks:
                sk.close()
            raise
        return socks

    async def _serve_tcp(self, socks, backlog, kind="tcp", start=True):
        if kind == "tls":
            self.listeners.append((kind, TlsListener(self, socks, lambda: Client(self), start=start)))
            return
        if PlainListener.available():
            # the compiled install's own accept and transport (net/_sock.pyx)
            self.listeners.append((kind, PlainListener(self, socks, lambda: Client(self), start=start)))
            return
        for sock in socks:
            srv = await self.loop.create_server(lambda: Client(self), sock=sock, backlog=backlog,
                                                start_serving=start)
            self.listeners.append((kind, srv))

    async def _listen_tcp(self, port, backlog, kind="tcp", start=True):
        try:
            socks = self.bind_tcp(port, backlog)
        except OSError:
            log.warning("Failed listening on port %d (%s), aborting." % (port, kind.upper()))
            raise SystemExit(1)
        await self._serve_tcp(socks, backlog, kind, start)

    def _rebind_tls(self, close_first=False):
        """CONFIG SET tls-port (applyTLSPort): TLS configured first, then
        the new port listened on (the old listeners stay when that
        fails); a new bind closes them first."""
        self.tls.ensure()
        port = self.config["tls-port"]
        socks = []
        if close_first:
            for _, srv in [l for l in self.listeners if l[0] == "tls"]:
                srv.close()
            self.listeners = [l for l in self.listeners if l[0] != "tls"]
        if port:
            try:
                socks = self.bind_tcp(port, self.config["tcp-backlog"])
            except OSError:
                raise ConfigError("Unable to listen on this port. Check server logs.")
        old = [l for l in self.listeners if l[0] == "tls"]
        self.listeners = [l for l in self.listeners if l[0] != "tls"]
        for _, srv in old:
            srv.close()
        if socks:
            asyncio.ensure_future(self._serve_tcp(socks, self.config["tcp-backlog"], "tls"))

    def _rebind_tcp(self, what="port"):
        """port / bind changed (CONFIG SET), as Redis's changeListener: a
        new port is listened on first (the old listeners stay when that
        fails); new addresses on the same port replace the old listeners,
        which come back when the new ones cannot be bound.  Either way
        CONFIG SET then fails (and is rolled back)."""
        port = self.config["port"]
        backlog = self.config["tcp-backlog"]
        old = [l for l in self.listeners if l[0] == "tcp"]
        old_addrs = []
        if what == "bind":
            for _, lsrv in old:
                for sk in lsrv.sockets or ():      # an asyncio (or uvloop) Server
                    old_addrs.append(sk.getsockname()[0])
            self.listeners = [l for l in self.listeners if l[0] != "tcp"]
            for _, srv in old:
                srv.close()
            old = []
        socks = []
        if port:
            try:
                socks = self.bind_tcp(port, backlog)
            except OSError:
                if what == "port":
                    raise ConfigError("Unable to listen on this port")
                if old_addrs:
                    try:
                        socks = self.bind_tcp(port, backlog, old_addrs)
                    except OSError:
                        socks = []
                    if socks:
                        asyncio.ensure_future(self._serve_tcp(socks, backlog))
                raise ConfigError("Failed to bind to specified addresses.")
        self.listeners = [l for l in self.listeners if l[0] != "tcp"]
        for _, srv in old:
            srv.close()
        if socks:
            asyncio.ensure_future(self._serve_tcp(socks, backlog))

    def close_listeners(self):
        for _, srv in self.listeners:
            srv.close()
        self.listeners = []
        if self.unix_path:
            log.notice("Removing the unix socket file.")
            try:
                os.unlink(self.unix_path)
            except OSError as e:
                log.warning("Error removing the unix socket file: %s" % e.strerror)
