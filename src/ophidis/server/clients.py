"""Accepting and closing connections (maxclients, protected mode, TCP options)
and client-output-buffer-limit (checkClientOutputBufferLimits)."""

from __future__ import annotations

import socket
import time

from .. import log
from ..keyspace.db import stats
from ..keyspace.watch import unwatch_all
from ..net.client import REPLY_CHUNK, Client, client_class
from ..replication.master import replconf_settings

DENIED = (
    b"-DENIED Redis is running in protected mode because protected "
    b"mode is enabled and no password is set for the default user. "
    b"In this mode connections are only accepted from the loopback interface. "
    b"If you want to connect from external computers to Redis you "
    b"may adopt one of the following solutions: "
    b"1) Just disable protected mode sending the command "
    b"'CONFIG SET protected-mode no' from the loopback interface "
    b"by connecting to Redis from the same host the server is "
    b"running, however MAKE SURE Redis is not publicly accessible "
    b"from internet if you do so. Use CONFIG REWRITE to make this "
    b"change permanent. "
    b"2) Alternatively you can just disable the protected mode by "
    b"editing the Redis configuration file, and setting the protected "
    b"mode option to 'no', and then restarting the server. "
    b"3) If you started the server manually just for testing, restart "
    b"it with the '--protected-mode no' option. "
    b"4) Setup a an authentication password for the default user. "
    b"NOTE: You only need to do one of the above things in order for "
    b"the server to start accepting connections from the outside.\r\n")



def is_loopback(host: str) -> bool:
    """islocalClient: the peer's address is 127.0.0.1 or ::1 (Redis
    compares the text: 127.0.0.2 and ::ffff:127.0.0.1 are not local)."""
    return host in ("127.0.0.1", "::1")


class Clients:
    """Part of ``Server`` (a mixin: the state is declared there)."""

    __slots__ = ()

    def next_client_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def admit(self, sock) -> bool:
        """acceptCommonHandler's admission of a TLS connection, before its
        handshake: over maxclients it is closed (nothing is written: no
        handshake was done)."""
        if len(self.clients) >= self.maxclients:
            stats.rejected_connections += 1
            sock.close()
            return False
        return True

    def client_connected(self, c: Client, transport):
        sock = transport.get_extra_info("socket")
        peer = transport.get_extra_info("peername")
        local = transport.get_extra_info("sockname")
        if sock is not None:
            try:
                c.fd = sock.fileno()
            except (OSError, ValueError):
                c.fd = -1
        if isinstance(peer, tuple):
            host = peer[0]
            c.addr = ("[%s]:%d" if ":" in host else "%s:%d") % (host, peer[1])
            c.laddr = ("[%s]:%d" if ":" in local[0] else "%s:%d") % (local[0], local[1])
            if sock is not None:
                try:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    ka = self.config["tcp-keepalive"]
                    if ka > 0:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
                        if hasattr(socket, "TCP_KEEPIDLE"):
                            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, ka)
                            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, max(1, ka // 3))
                            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3)
                except OSError:
                    pass
        else:
            c.is_unix = True
            c.addr = "%s:0" % (self.unix_path or "")
            c.laddr = c.addr
            host = None
        if len(self.clients) >= self.maxclients:
            transport.write(b"-ERR max number of clients reached\r\n")
            stats.rejected_connections += 1
            c.closing = True
            transport.close()
            return
        if (host is not None and self.config["protected-mode"] and self.acl.default.nopass
                and not is_loopback(host)):
            transport.write(DENIED)
            stats.rejected_connections += 1
            c.closing = True
            transport.close()
            return
        stats.connections_received += 1     # stat_numconnections: accepted ones
        self.clients[c.id] = c
        by = self.config["tls-auth-clients-user"]
        if by != "off":
            tls = transport.get_extra_info("ssl_object")
            if tls is not None:
                self.acl.authenticate_certificate(c, tls.getpeercert(), by)
        if log.enabled(log.DEBUG):
            log.debug("Accepted %s" % c.addr)

    def client_disconnected(self, c: Client):
        if self.clients.pop(c.id, None) is None:
            return
        self.memory.client_gone(c)
        if c.watched:
            unwatch_all(c)
        if c.tracking:
            self.tracking.disable(c)
        if c.blocked:
            self.blocking_handler.forget(c)
        if c.monitor:
            try:
                self.monitors.remove(c)
            except ValueError:
                pass
            self.update_server_slow()
        if c.pubsub_channels or c.pubsub_patterns or c.pubsub_shard:
            self.pubsub.unsubscribe_all(c)
        if c.paused_queue is not None:
            try:
                self.paused_clients.remove(c)
            except ValueError:
                pass
        if c.repl is not None:
            self.repl_feed.remove(c)
        if self.repl_feed.waiting:
            self.repl_feed.drop_waiting(c)
        replconf_settings.pop(c.id, None)
        if log.enabled(log.VERBOSE):
            log.verbose("Client closed connection %s" % c.info_string())

    def check_output_limits(self, c: Client, held: int, new: int = 0, from_cron=False) -> bool:
        """client-output-buffer-limit (checkClientOutputBufferLimits) for
        the class of ``c`` (net.client.client_class): ``held`` is the
        output still unsent, ``new`` the reply about to be written.  The
        hard limit counts both and closes the client at once, the reply
        unsent (Redis frees a client over it before writing anything more);
        the soft limit counts what is held and closes when it stays reached
        for more than its seconds (whole seconds, as Redis's unixtime).
        Returns True when the client was closed.  Checked before writes
        that could reach a limit and, for clients over a soft limit, from
        cron."""
        t = c.transport
        if t is None or c.closing:
            return False
        cls = client_class(c)
        if cls == "master":
            cls = "normal"      # our master's link is limited as a normal client
        hard, soft, secs = self.obuf_limits[cls]
        if cls == "slave":
            if hard and hard < self.config["repl-backlog-size"]:
                # a replica's hard limit below repl-backlog-size is raised
                # to it, as Redis does
                hard = self.config["repl-backlog-size"]
        elif held + new <= REPLY_CHUNK:
            # Redis counts the reply list only (getClientOutputBufferMemoryUsage):
            # unsent output that fits in the client's own buffer (c->buf)
            # counts for nothing.  Beyond it all of it counts here (Redis
            # would count what overflows, but a reply begun with a deferred
            # length, as KEYS's, goes to the list whole).
            held = new = 0
        over = bool(hard and held + new >= hard)
        if soft and held >= soft:
            now = int(time.time())
            if c.out_extra is None:
                c.out_extra = now
                self.obuf_soft[c.id] = c
            elif now - c.out_extra > secs:
                over = True
        elif c.out_extra is not None:
            c.out_extra = None
            self.obuf_soft.pop(c.id, None)
        if over:
            self.close_over_limit(c, from_cron)
        return over

    def close_over_limit(self, c: Client, from_cron=False) -> bool:
        """Close a client over its output limit (or, not authenticated,
        over UNAUTH_OUTPUT_LIMIT) with Redis's log line: at once, what it
        has not read is dropped."""
        self.obuf_soft.pop(c.id, None)
        if from_cron:
            log.warning("Client %s closed for overcoming of output buffer limits." % c.info_string())
        else:
            log.warning("Client %s scheduled to be closed ASAP for overcoming of output buffer limits." % (
                c.info_string()))
        stats.client_outbuf_limit_disconnections += 1
        c.closing = True
        t = c.transport
        if t is not None:
            t.abort()
        return True

    def _obuf_cron(self):
        """Soft limits also expire while no more output is produced."""
        if self.obuf_soft:
            for c in list(self.obuf_soft.values()):
                if c.closing or c.id not in self.clients:
                    self.obuf_soft.pop(c.id, None)
                else:
                    # a replica's figure is the shared replication blocks it references
                    held = self.repl_feed.replica_usage(c) if c.repl is not None \
                        else c.transport.get_write_buffer_size()
                    self.check_output_limits(c, held, 0, from_cron=True)
