"""The cluster bus connections: the listener on the bus port, one outbound
link per known node (we PING over it), the inbound links other nodes
opened to us (they PING over them, we answer), framing with
``bus.FrameReader``.  A link that fails, or sends bytes that are not a
bus message, is closed; the cron reconnects outbound links."""

from __future__ import annotations

import asyncio

from .. import log
from ..net.tls import TlsListener
from . import bus
from .node import mstime


class Link(asyncio.Protocol):
    """One bus connection (clusterLink)."""

    def __init__(self, cluster, node, inbound: bool):
        self.cluster = cluster
        self.node = node            # None for an inbound link until its sender is known
        self.inbound = inbound
        self.ctime = mstime()
        self.transport = None
        self.reader = bus.FrameReader()
        self.closed = False
        self.pending = []           # frames queued while connecting
        self.out = []               # frames sent during this loop iteration (written once, at its end)
        self.out_bytes = 0
        self.sent_bytes = 0

    # -- asyncio ----------------------------------------------------------------------------------
    def connection_made(self, transport):
        if self.closed:
            transport.close()
            return
        self.transport = transport
        if self.pending:
            for f in self.pending:
                transport.write(f)
            self.pending = []
        if not self.inbound:
            self.cluster.link_connected(self)

    def data_received(self, data):
        if self.closed:
            return
        try:
            frames = self.reader.feed(data)
        except bus.BusError:
            log.warning("Bad message length or signature received from Cluster bus.")
            self.free()
            return
        for f in frames:
            if self.closed:
                return
            self.cluster.process_frame(self, f)

    def connection_lost(self, exc):
        self.free()

    # -- sending ----------------------------------------------------------------------------------
    def send(self, frame: bytes):
        """As clusterSendMessage: the frame joins the link's send buffer,
        written when the loop finishes its current work (Redis writes bus
        links from its event loop too), so the frames of one command or
        transaction leave in one write and count as the link's memory until
        then (INFO mem_cluster_links, CLUSTER LINKS)."""
        if self.closed:
            return
        if self.transport is None:
            self.pending.append(frame)
        else:
            if not self.out:
                asyncio.get_running_loop().call_soon(self.flush)
            self.out.append(frame)
            self.out_bytes += len(frame)
        self.sent_bytes += len(frame)

    def flush(self):
        out = self.out
        if not out:
            return
        self.out = []
        self.out_bytes = 0
        if not self.closed and self.transport is not None:
            self.transport.write(b"".join(out) if len(out) > 1 else out[0])

    def buffered(self) -> int:
        t = self.transport
        if t is None:
            return sum(len(f) for f in self.pending)
        return self.out_bytes + t.get_write_buffer_size()

    def memory(self) -> int:
        """The link's share of mem_cluster_links: what it holds to send and
        what it has read of an incomplete frame."""
        return self.buffered() + len(self.reader.buf)

    def free(self):
        """freeClusterLink: closed and detached from its node."""
        if self.closed:
            return
        self.closed = True
        n = self.node
        if n is not None:
            if n.link is self:
                n.link = None
            elif n.inbound_link is self:
                n.inbound_link = None
        self.cluster.inbound_links.discard(self)
        self.flush()
        if self.transport is not None:
            self.transport.close()


class Links:
    """Part of ``Cluster`` (a mixin: the state is declared there)."""

    __slots__ = ()

    def init_links(self):
        self.bus_servers = []
        self.inbound_links = set()     # inbound links not yet tied to a node
        self.connecting = set()        # connection attempts under way (tasks)

    async def listen_bus(self):
        srv = self.srv
        cfg = srv.config
        tls = cfg["tls-cluster"]
        port = cfg["tls-port"] if tls else cfg["port"]
        cport = cfg["cluster-port"] or port + 10000
        try:
            socks = srv.bind_tcp(cport, cfg["tcp-backlog"])
        except OSError:
            socks = None
        if not socks:
            log.warning("Failed listening on port %d (cluster), aborting." % cport)
            log.flush_and_exit(1)
        if tls:
            # tls-cluster: the bus requires a client certificate of every node
            self.bus_servers.append(TlsListener(srv, socks, self._accepted, srv.tls.bus_context, admit=False))
            return
        for s in socks:
            self.bus_servers.append(await srv.loop.create_server(lambda: self._accepted(), sock=s))

    def _accepted(self):
        link = Link(self, None, True)
        self.inbound_links.add(link)
        log.verbose("Accepting cluster node connection")
        return link

    def close_bus(self):
        for s in self.bus_servers:
            s.close()
        self.bus_servers = []
        for n in self.nodes.values():
            for link in (n.link, n.inbound_link):
                if link is not None:
                    link.free()
        for link in list(self.inbound_links):
            link.free()
        for t in list(self.connecting):
            t.cancel()

    def set_inbound_link(self, node, link):
        """setClusterNodeToInboundClusterLink: a node keeps one inbound link."""
        if node.inbound_link is link:
            return
        if node.inbound_link is not None:
            log.debug("Replacing inbound link fd from node %s" % node.name.decode())
            node.inbound_link.free()
        node.inbound_link = link
        link.node = node
        self.inbound_links.discard(link)

    def connect(self, node):
        """Open the outbound link to node (clusterNodeCronHandleReconnect)."""
        link = Link(self, node, False)
        node.link = link
        srv = self.srv
        src = srv.config["bind-source-addr"]

        async def go():
            try:
                tls = srv.tls.client_context() if srv.config["tls-cluster"] else None
                await srv.loop.create_connection(
                    lambda: link, node.ip, node.cport,
                    local_addr=(src, 0) if src else None, ssl=tls)
            except (OSError, ValueError) as e:
                if not link.closed:
                    log.verbose("Connection with Node %s at %s:%d failed: %s" % (
                        node.name.decode(), node.ip, node.cport, getattr(e, "strerror", None) or e))
                    link.free()
        t = srv.loop.create_task(go())
        self.connecting.add(t)
        t.add_done_callback(self.connecting.discard)
        return link

    def link_connected(self, link):
        """clusterLinkConnectHandler: the first PING (MEET for a node we
        were told to meet) goes out at once."""
        node = link.node
        old = node.ping_sent
        self.send_ping(link, bus.MEET if node.flags & bus.NODE_MEET else bus.PING)
        if old:
            node.ping_sent = old
        node.flags &= ~bus.NODE_MEET
        log.debug("Connecting with Node %s at %s:%d" % (node.name.decode(), node.ip, node.cport))
