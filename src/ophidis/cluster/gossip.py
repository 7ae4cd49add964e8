"""What the cluster bus messages do (clusterProcessPacket) and the messages
we send: PING/PONG/MEET with their gossip sections and ping extensions
(hostname; 7.2's human node name, forgotten nodes, shard id), FAIL, UPDATE,
PUBLISH/PUBLISHSHARD."""

from __future__ import annotations

import ipaddress
import random
import struct
import time

from .. import log
from . import (MF_TIMEOUT, TODO_FSYNC_CONFIG, TODO_HANDLE_FAILOVER, TODO_HANDLE_MANUALFAILOVER, TODO_SAVE_CONFIG,
               TODO_UPDATE_STATE, bus)
from .node import (FAIL, HANDSHAKE, MASTER, MIGRATE_TO, MYSELF, NOADDR, NOFAILOVER, PFAIL, SLAVE, Node, flags_string,
                   mstime, valid_name, who)

_TYPE = struct.Struct(">H")

BROADCAST_ALL = 0
BROADCAST_LOCAL_SLAVES = 1

FAIL_REPORT_VALIDITY_MULT = 2
FAIL_UNDO_TIME_MULT = 2
MF_PAUSE_MULT = 2


class Gossip:
    """Part of ``Cluster`` (a mixin: the state is declared there)."""

    __slots__ = ()

    # -- failure reports --------------------------------------------------------------------------
    def node_timeout(self) -> int:
        return self.srv.config["cluster-node-timeout"]

    def add_failure_report(self, failing: Node, sender: Node) -> bool:
        new = sender not in failing.fail_reports
        failing.fail_reports[sender] = mstime()
        return new

    def cleanup_failure_reports(self, node: Node):
        maxtime = self.node_timeout() * FAIL_REPORT_VALIDITY_MULT
        now = mstime()
        for s in [s for s, t in node.fail_reports.items() if now - t > maxtime]:
            del node.fail_reports[s]

    def del_failure_report(self, node: Node, sender: Node) -> bool:
        if sender not in node.fail_reports:
            return False
        del node.fail_reports[sender]
        self.cleanup_failure_reports(node)
        return True

    def failure_reports_count(self, node: Node) -> int:
        self.cleanup_failure_reports(node)
        return len(node.fail_reports)

    def mark_failing_if_needed(self, node: Node):
        quorum = self.size // 2 + 1
        if not node.timed_out or node.failed:
            return
        failures = self.failure_reports_count(node)
        if self.myself.is_master:
            failures += 1
        if failures < quorum:
            return
        log.notice("Marking node %s as failing (quorum reached)." % who(node))
        node.flags &= ~PFAIL
        node.flags |= FAIL
        node.fail_time = mstime()
        self.send_fail(node.name)
        self.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)

    def clear_failure_if_needed(self, node: Node):
        now = mstime()
        if node.is_slave or node.numslots == 0:
            log.notice("Clear FAIL state for node %s:%s is reachable again." % (
                who(node), "replica" if node.is_slave else "master without slots"))
            node.flags &= ~FAIL
            self.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)
        if node.is_master and node.numslots > 0 and \
                now - node.fail_time > self.node_timeout() * FAIL_UNDO_TIME_MULT:
            log.notice("Clear FAIL state for node %s: is reachable again and nobody is serving its slots "
                       "after some time." % who(node))
            node.flags &= ~FAIL
            self.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)

    # -- handshakes -------------------------------------------------------------------------------
    def start_handshake(self, ip: str, port: int, cport: int) -> str | None:
        """clusterStartHandshake: None when started, else "EINVAL" or "EAGAIN"."""
        norm = normalize_ip(ip)
        if norm is None:
            return "EINVAL"
        if not (0 < port <= 65535 and 0 < cport <= 65535):
            return "EINVAL"
        for n in self.nodes.values():
            if n.in_handshake and n.ip.lower() == norm.lower() and n.port == port and n.cport == cport:
                return "EAGAIN"
        n = Node(None, HANDSHAKE | bus.NODE_MEET)
        n.ip = norm
        n.port = port
        n.cport = cport
        self.add_node(n)
        return None

    # -- receiving --------------------------------------------------------------------------------
    def process_frame(self, link, frame: bytes):
        t = _TYPE.unpack_from(frame, 12)[0] if len(frame) >= 14 else -1
        if 0 <= t < len(self.stats_received):
            self.stats_received[t] += 1
        try:
            msg = bus.decode(frame)
        except bus.BusError as e:
            log.warning("Received invalid %s packet: %s" % (bus.type_name(t), e))
            link.free()
            return
        if msg.type == self.drop_filter:
            log.warning("Dropping packet that matches debug drop filter")
            return
        self.process_packet(link, msg)

    def sender_of(self, link, msg):
        """getNodeFromLinkAndMsg."""
        if link.node is not None and not link.node.in_handshake:
            return link.node
        sender = self.lookup(msg.sender)
        if sender is not None and link.node is None:
            self.set_inbound_link(sender, link)
        return sender

    def process_packet(self, link, msg) -> bool:
        """clusterProcessPacket.  False when the link was freed."""
        now = mstime()
        t = msg.type
        flags = msg.flags
        sender = self.sender_of(link, msg)
        sender_cur = sender_cfg = 0
        m = self.myself
        if sender is not None:
            sender.data_received = now
        if sender is not None and not sender.in_handshake:
            sender_cur = msg.current_epoch
            sender_cfg = msg.config_epoch
            if sender_cur > self.current_epoch:
                self.current_epoch = sender_cur
            if sender_cfg > sender.config_epoch:
                sender.config_epoch = sender_cfg
                self.do_before_sleep(TODO_SAVE_CONFIG | TODO_FSYNC_CONFIG)
            sender.repl_offset = msg.offset
            sender.repl_offset_time = now
            if self.mf_end and m.is_slave and m.slaveof is sender and msg.mflags & bus.MSGFLAG_PAUSED \
                    and self.mf_master_offset == -1:
                self.mf_master_offset = sender.repl_offset
                self.do_before_sleep(TODO_HANDLE_MANUALFAILOVER)
                log.warning("Received replication offset for paused master manual failover: %d" %
                            self.mf_master_offset)
        if t in (bus.PING, bus.MEET):
            if (t == bus.MEET or not m.ip) and not self.srv.config["cluster-announce-ip"]:
                ip = link_local_ip(link)
                if ip is not None and ip != m.ip:
                    m.ip = ip
                    log.warning("IP address for this node updated to %s" % m.ip)
                    self.do_before_sleep(TODO_SAVE_CONFIG)
            if sender is None and t == bus.MEET:
                n = Node(None, HANDSHAKE)
                n.ip = msg.myip or link_peer_ip(link) or ""
                n.port = msg.port
                n.pport = msg.pport
                n.cport = msg.cport
                self.add_node(n)
                self.do_before_sleep(TODO_SAVE_CONFIG)
                self.process_gossip(msg, link, None)
            self.send_ping(link, bus.PONG)
        if t in (bus.PING, bus.PONG, bus.MEET):
            if not link.inbound:
                ln = link.node
                if ln.in_handshake:
                    if sender is not None:
                        log.verbose("Handshake: we already know node %s, updating the address if needed." %
                                    who(sender))
                        if self.update_address_if_needed(sender, link, msg):
                            self.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
                        self.del_node(ln)
                        return False
                    self.rename_node(ln, msg.sender)
                    log.debug("Handshake with node %s completed." % ln.name.decode())
                    ln.flags &= ~HANDSHAKE
                    ln.flags |= flags & (MASTER | SLAVE)
                    self.do_before_sleep(TODO_SAVE_CONFIG)
                elif ln.name != msg.sender:
                    log.debug("PONG contains mismatching sender ID. About node %s added %d ms ago, having "
                              "flags %d" % (ln.name.decode(), now - ln.ctime, ln.flags))
                    ln.flags |= NOADDR
                    ln.ip = ""
                    ln.port = ln.pport = ln.cport = 0
                    link.free()
                    self.do_before_sleep(TODO_SAVE_CONFIG)
                    return False
            if sender is not None:
                sender.flags = (sender.flags & ~NOFAILOVER) | (flags & NOFAILOVER)
            if sender is not None and t == bus.PING and not sender.in_handshake and \
                    self.update_address_if_needed(sender, link, msg):
                self.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
            if not link.inbound and t == bus.PONG:
                ln = link.node
                ln.pong_received = now
                ln.ping_sent = 0
                if ln.timed_out:
                    ln.flags &= ~PFAIL
                    self.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
                elif ln.failed:
                    self.clear_failure_if_needed(ln)
            if sender is not None:
                if msg.slaveof == bus.NULL_NAME:
                    self.set_node_as_master(sender)
                else:
                    master = self.lookup(msg.slaveof)
                    if sender.is_master:
                        self.master_became_replica(sender, master, sender_cfg)
                        sender.flags &= ~(MASTER | MIGRATE_TO)
                        sender.flags |= SLAVE
                        self.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
                    if master is not None and sender.slaveof is not master:
                        if sender.slaveof is not None:
                            sender.slaveof.remove_slave(sender)
                        master.add_slave(sender)
                        sender.slaveof = master
                        # a replica joins its master's shard
                        self.update_shard_id(sender, master.shard_id)
                        self.do_before_sleep(TODO_SAVE_CONFIG)
            sender_master = None
            dirty = False
            if sender is not None:
                sender_master = sender if sender.is_master else sender.slaveof
                if sender_master is not None:
                    dirty = bytes(sender_master.slots) != msg.myslots
            if sender is not None and sender.is_master and dirty:
                self.update_slots_config_with(sender, sender_cfg, msg.myslots)
            if sender is not None and dirty:
                for j in bus.bitmap_to_slots(msg.myslots):
                    owner = self.slots[j]
                    if owner is sender or self.slot_unclaimed(j):
                        continue
                    if owner.config_epoch > sender_cfg:
                        log.verbose("Node %s has old slots configuration, sending an UPDATE message about %s"
                                    % (sender.name.decode(), owner.name.decode()))
                        self.send_update(sender.link, owner)
                        break
            if sender is not None and m.is_master and sender.is_master and sender_cfg == m.config_epoch:
                self.handle_epoch_collision(sender)
            if sender is not None:
                self.process_gossip(msg, link, sender)
                self.process_extensions(msg, sender)
        elif t == bus.FAIL:
            if sender is not None:
                failing = self.lookup(msg.fail_nodename)
                if failing is not None and not failing.flags & (FAIL | MYSELF):
                    log.notice("FAIL message received from %s about %s" % (who(sender), who(failing)))
                    failing.flags |= FAIL
                    failing.fail_time = now
                    failing.flags &= ~PFAIL
                    self.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
            else:
                log.notice("Ignoring FAIL message from unknown node %s about %s" % (
                    msg.sender.decode("ascii", "replace"), msg.fail_nodename.decode("ascii", "replace")))
        elif t in (bus.PUBLISH, bus.PUBLISHSHARD):
            if sender is None:
                return True
            self.srv.pubsub.publish(msg.channel, msg.message, shard=(t == bus.PUBLISHSHARD))
        elif t == bus.FAILOVER_AUTH_REQUEST:
            if sender is None:
                return True
            self.send_failover_auth_if_needed(sender, msg)
        elif t == bus.FAILOVER_AUTH_ACK:
            if sender is None:
                return True
            if sender.is_master and sender.numslots > 0 and sender_cur >= self.failover_auth_epoch:
                self.failover_auth_count += 1
                self.do_before_sleep(TODO_HANDLE_FAILOVER)
        elif t == bus.MFSTART:
            if sender is None or sender.slaveof is not m:
                return True
            self.reset_manual_failover()
            self.mf_end = now + MF_TIMEOUT
            self.mf_slave = sender
            self.srv.pause("write", time.monotonic() + MF_TIMEOUT * MF_PAUSE_MULT / 1000)
            log.warning("Manual failover requested by replica %s." % who(sender))
            self.send_ping(link, bus.PING)
        elif t == bus.UPDATE:
            if sender is None:
                return True
            n = self.lookup(msg.update_nodename)
            if n is None or n.config_epoch >= msg.update_config_epoch:
                return True
            if n.is_slave:
                self.set_node_as_master(n)
            n.config_epoch = msg.update_config_epoch
            self.do_before_sleep(TODO_SAVE_CONFIG | TODO_FSYNC_CONFIG)
            self.update_slots_config_with(n, msg.update_config_epoch, msg.update_slots)
        elif t == bus.MODULE:
            return True      # no modules: nobody receives them
        else:
            log.warning("Received unknown packet type: %d" % t)
        return True

    def master_became_replica(self, sender, master, sender_cfg: int):
        """A master now says it replicates master (Redis 7.2): in the same
        shard, a failover happened there and its slots are the new
        master's (unless the message is older than what we know); else
        it left its shard and its slots are unassigned."""
        if master is not None and master.shard_id == sender.shard_id:
            if sender.config_epoch > sender_cfg:
                log.notice("Ignore stale message from %s in shard %s; gossip config epoch: %d, current config "
                           "epoch: %d" % (who(sender), sender.shard_id.decode(), sender_cfg, sender.config_epoch))
                return
            moved = 0
            for j in sender.slot_list():
                self.del_slot(j)
                self.add_slot(master, j)
                moved += 1
            self.set_node_as_master(master)
            master.config_epoch = sender_cfg
            log.notice("A failover occurred in shard %s; node %s lost %d slot(s) to node %s with a config epoch "
                       "of %d" % (sender.shard_id.decode(), who(sender), moved, who(master), master.config_epoch))
            return
        deleted = self.del_node_slots(sender)
        log.notice("Node %s is no longer master of shard %s; removed all %d slot(s) it used to own" % (
            who(sender), sender.shard_id.decode(), deleted))
        if master is not None:
            log.notice("Node %s is now part of shard %s" % (who(sender), master.shard_id.decode()))

    def process_extensions(self, msg, sender):
        """clusterProcessPingExtensions: the hostname and human node name
        (absent means none), the forgotten nodes, the shard id (a node
        that sends none, as Redis 7.0, is in its master's shard)."""
        hostname = msg.hostname or ""
        if sender.hostname != hostname:
            sender.hostname = hostname
            self.do_before_sleep(TODO_SAVE_CONFIG)
        human = msg.human_nodename or ""
        if sender.human_nodename != human:
            sender.human_nodename = human
            self.do_before_sleep(TODO_SAVE_CONFIG)
        m = self.myself
        for name, ttl in msg.forgotten:
            n = self.lookup(name)
            if n is None or n is m or (m.is_slave and m.slaveof is n):
                continue
            self.blacklist_add(name, ttl)
            self.del_node(n)
            self.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)
        shard_id = msg.shard_id
        if shard_id is None:
            master = sender.slaveof if sender.slaveof is not None else sender
            shard_id = master.shard_id
        self.update_shard_id(sender, shard_id)

    def update_shard_id(self, node, shard_id: bytes):
        """updateShardId: node's shard, and ours when node is our master."""
        if node.shard_id != shard_id:
            node.shard_id = shard_id
            self.do_before_sleep(TODO_SAVE_CONFIG)
        m = self.myself
        if node is not m and m.slaveof is node and m.shard_id != shard_id:
            m.shard_id = shard_id
            self.do_before_sleep(TODO_SAVE_CONFIG | TODO_FSYNC_CONFIG)

    def update_address_if_needed(self, node, link, msg) -> bool:
        """nodeUpdateAddressIfNeeded."""
        if link is node.link:
            return False
        ip = msg.myip or link_peer_ip(link)
        if ip is None:
            return False
        if node.port == msg.port and node.cport == msg.cport and node.pport == msg.pport and ip == node.ip:
            return False
        node.ip = ip
        node.port = msg.port
        node.pport = msg.pport
        node.cport = msg.cport
        if node.link is not None:
            node.link.free()
        node.flags &= ~NOADDR
        log.warning("Address updated for node %s, now %s:%d" % (who(node), node.ip, node.port))
        if self.myself.is_slave and self.myself.slaveof is node:
            self.replicate_master(node)
        return True

    def process_gossip(self, msg, link, sender):
        """clusterProcessGossipSection."""
        if sender is None:
            sender = link.node if link.node is not None else self.lookup(msg.sender)
        m = self.myself
        now = mstime()
        for g in msg.gossip:
            flags = g.flags
            node = self.lookup(g.nodename)
            if log.enabled(log.DEBUG):
                log.debug("GOSSIP %s %s:%d@%d %s" % (g.nodename.decode("ascii", "replace"), g.ip, g.port,
                                                     g.cport, flags_string(flags)))
            if node is not None:
                if sender is not None and sender.is_master and node is not m:
                    if flags & (FAIL | PFAIL):
                        if self.add_failure_report(node, sender):
                            log.verbose("Node %s reported node %s as not reachable." % (who(sender), who(node)))
                        self.mark_failing_if_needed(node)
                    elif self.del_failure_report(node, sender):
                        log.verbose("Node %s reported node %s is back online." % (who(sender), who(node)))
                if not flags & (FAIL | PFAIL) and node.ping_sent == 0 and \
                        self.failure_reports_count(node) == 0:
                    pong = g.pong_received * 1000
                    if pong <= now + 500 and pong > node.pong_received:
                        node.pong_received = pong
                if node.flags & (FAIL | PFAIL) and not flags & NOADDR and not flags & (FAIL | PFAIL) and (
                        node.ip.lower() != g.ip.lower() or node.port != g.port or node.cport != g.cport):
                    if node.link is not None:
                        node.link.free()
                    node.ip = g.ip
                    node.port = g.port
                    node.pport = g.pport
                    node.cport = g.cport
                    node.flags &= ~NOADDR
            elif sender is not None and not flags & NOADDR and not self.blacklisted(g.nodename) \
                    and valid_name(g.nodename):
                n = Node(g.nodename, flags)
                n.ip = g.ip
                n.port = g.port
                n.pport = g.pport
                n.cport = g.cport
                self.add_node(n)

    def update_slots_config_with(self, sender, sender_cfg: int, slots: bytes):
        """clusterUpdateSlotsConfigWith: slots claimed with a greater
        configEpoch move to sender; we may become its replica."""
        m = self.myself
        cur = m if m.is_master else m.slaveof
        if sender is m:
            log.warning("Discarding UPDATE message about myself.")
            return
        newmaster = None
        dirty_slots = []
        sender_slots = 0
        migrated = 0
        claimed = set(bus.bitmap_to_slots(slots))
        for j in claimed:
            sender_slots += 1
            owner = self.slots[j]
            if owner is sender:
                self.owner_not_claiming.discard(j)
                continue
            if j in self.importing:
                continue
            if self.slot_unclaimed(j) or owner.config_epoch < sender_cfg:
                if owner is m and self.count_keys_in_slot(j) and sender is not m:
                    dirty_slots.append(j)
                if owner is cur and cur is not None:
                    newmaster = sender
                    migrated += 1
                self.del_slot(j)
                self.add_slot(sender, j)
                self.owner_not_claiming.discard(j)
                self.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_FSYNC_CONFIG)
        for j in sender.slot_list():
            if j not in claimed and self.slots[j] is sender:
                self.owner_not_claiming.add(j)
        if newmaster is not None and cur.numslots == 0 and (
                self.srv.config["cluster-allow-replica-migration"] or sender_slots == migrated):
            log.warning("Configuration change detected. Reconfiguring myself as a replica of %s" % who(sender))
            self.set_master(sender)
            self.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_FSYNC_CONFIG)
        elif m.slaveof is not None and m.slaveof.slaveof is not None and m.slaveof.slaveof is not m:
            log.warning("I'm a sub-replica! Reconfiguring myself as a replica of grandmaster %s" %
                        who(m.slaveof.slaveof))
            self.set_master(m.slaveof.slaveof)
            self.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_FSYNC_CONFIG)
        elif dirty_slots:
            for j in dirty_slots:
                self.del_keys_in_slot(j)

    # -- sending ----------------------------------------------------------------------------------
    def header(self, t: int) -> "bus.Message":
        """clusterBuildMessageHdr."""
        m = self.myself
        master = m.slaveof if (m.is_slave and m.slaveof is not None) else m
        port, pport, cport = self.announced_ports()
        mflags = 0
        if m.is_master and self.mf_end:
            mflags |= bus.MSGFLAG_PAUSED
        return bus.Message(
            type=t, sender=m.name, myslots=bytes(master.slots),
            slaveof=m.slaveof.name if m.slaveof is not None else bus.NULL_NAME,
            myip=(self.srv.config["cluster-announce-ip"] or "")[:45], port=port, pport=pport, cport=cport,
            flags=m.flags, state=self.state, mflags=mflags, current_epoch=self.current_epoch,
            config_epoch=master.config_epoch, offset=self.repl_offset())

    def send(self, link, msg):
        if link is None or link.closed:
            return
        link.send(bus.encode(msg))
        if 0 <= msg.type < len(self.stats_sent):
            self.stats_sent[msg.type] += 1

    def broadcast(self, msg):
        """clusterBroadcastMessage: to every node we have a link to."""
        frame = bus.encode(msg)
        for n in self.nodes.values():
            if n.link is None or n.flags & (MYSELF | HANDSHAKE):
                continue
            n.link.send(frame)
            self.stats_sent[msg.type] += 1

    def gossip_entry(self, n: Node) -> "bus.Gossip":
        return bus.Gossip(nodename=n.name, ping_sent=n.ping_sent // 1000, pong_received=n.pong_received // 1000,
                          ip=n.ip, port=n.port, cport=n.cport, flags=n.flags, pport=n.pport)

    def send_ping(self, link, t: int):
        """clusterSendPing: PING, PONG or MEET with gossip about a tenth of
        the nodes (at least 3) plus every node in PFAIL."""
        self.pings_sent += 1
        mark = self.pings_sent
        nodes = self.nodes
        fresh = len(nodes) - 2
        wanted = max(len(nodes) // 10, 3)
        wanted = min(wanted, fresh)
        if not link.inbound and t == bus.PING:
            link.node.ping_sent = mstime()
        msg = self.header(t)
        gossip = []
        values = list(nodes.values())
        iterations = wanted * 3
        m = self.myself
        while fresh > 0 and len(gossip) < wanted and iterations > 0:
            iterations -= 1
            n = random.choice(values)
            if n is m or n.flags & PFAIL:
                continue
            if n.flags & (HANDSHAKE | NOADDR) or (n.link is None and n.numslots == 0):
                fresh -= 1
                continue
            if n.last_in_ping_gossip == mark:
                continue
            gossip.append(self.gossip_entry(n))
            n.last_in_ping_gossip = mark
            fresh -= 1
        pfail = self.stats_pfail_nodes
        if pfail:
            for n in values:
                if pfail <= 0:
                    break
                if n.flags & (HANDSHAKE | NOADDR) or not n.flags & PFAIL:
                    continue
                gossip.append(self.gossip_entry(n))
                pfail -= 1
        msg.gossip = gossip
        # the ping extensions of Redis 7.2+ (a 7.0 node logs and skips all
        # but the hostname)
        msg.hostname = m.hostname or None
        msg.human_nodename = m.human_nodename or None
        if self.blacklist:
            now = int(time.time())
            msg.forgotten = [(name, t - now) for name, t in self.blacklist.items() if t >= now]
        msg.shard_id = m.shard_id
        self.send(link, msg)

    def broadcast_pong(self, target: int = BROADCAST_ALL):
        m = self.myself
        for n in list(self.nodes.values()):
            if n.link is None or n is m or n.in_handshake:
                continue
            if target == BROADCAST_LOCAL_SLAVES:
                if not (n.is_slave and n.slaveof is not None and
                        (n.slaveof is m or n.slaveof is m.slaveof)):
                    continue
            self.send_ping(n.link, bus.PONG)

    def send_fail(self, name: bytes):
        msg = self.header(bus.FAIL)
        msg.fail_nodename = name
        self.broadcast(msg)

    def send_update(self, link, node):
        if link is None:
            return
        msg = self.header(bus.UPDATE)
        msg.update_nodename = node.name
        msg.update_config_epoch = node.config_epoch
        slots = bytearray(node.slots)
        for j in self.owner_not_claiming:
            slots[j >> 3] &= ~(1 << (j & 7)) & 0xFF
        msg.update_slots = bytes(slots)
        self.send(link, msg)

    def propagate_publish(self, channel: bytes, message: bytes, shard: bool):
        """clusterPropagatePublish: PUBLISH to every node, SPUBLISH to the
        nodes of our shard."""
        if not shard:
            msg = self.header(bus.PUBLISH)
            msg.channel, msg.message = channel, message
            self.broadcast(msg)
            return
        msg = self.header(bus.PUBLISHSHARD)
        msg.channel, msg.message = channel, message
        for n in self.nodes_serving_slots_of(self.myself):
            if n.flags & (MYSELF | HANDSHAKE):
                continue
            self.send(n.link, msg)


def normalize_ip(ip: str):
    try:
        return str(ipaddress.ip_address(ip))
    except ValueError:
        return None


def _link_ip(link, which: str):
    t = link.transport
    s = t.get_extra_info(which) if t is not None else None
    return s[0] if s else None


def link_local_ip(link):
    """Our address on the link (how the other node reached us)."""
    return _link_ip(link, "sockname")


def link_peer_ip(link):
    return _link_ip(link, "peername")
