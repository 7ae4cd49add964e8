"""The cluster state: this node's view of the cluster (clusterState), nodes.conf,
the cluster state evaluation, CLUSTER RESET (see the package docstring)."""


from __future__ import annotations

import errno
import fcntl
import os

from .. import log
from ..keyspace import db as db_mod
from ..keyspace import notify
from ..net import client as client_mod
from ..net.tls import is_tls
from ..replication import replica as replica_mod
from ..replication.propagate import propagate_deletion, propagate_pending
from . import TODO_FSYNC_CONFIG, TODO_HANDLE_FAILOVER, TODO_HANDLE_MANUALFAILOVER, TODO_SAVE_CONFIG, TODO_UPDATE_STATE
from .asm import Asm
from .bus import STATE_FAIL, STATE_OK, TYPE_COUNT, bitmap_ranges, type_name
from .failover import Failover
from .gossip import Gossip
from .links import Links
from .node import (FAIL, HANDSHAKE, MASTER, MIGRATE_TO, MYSELF, NOFAILOVER, PFAIL, SLAVE, ConfigFormatError, Node,
                   mstime, parse_config, random_name, valid_name)
from .routing import redirect_blocked_clients
from .slot_stats import SlotStats
from .slots import SLOTS, SlotKeys, key_hash_slot

MAX_REJOIN_DELAY = 5000
MIN_REJOIN_DELAY = 500
WRITABLE_DELAY = 2000
BLACKLIST_TTL = 60


class Cluster(Gossip, Failover, Links):
    """The cluster subsystem: the state declared here, what it does in the
    mixins beside it (gossip.py, failover.py, links.py)."""

    __slots__ = (
        "srv", "config_file", "lock_fd", "myself", "nodes", "slots", "migrating", "importing",
        "owner_not_claiming", "current_epoch", "last_vote_epoch", "state", "size", "todo",
        "_todo_scheduled", "stats_sent", "stats_received", "stats_pfail_nodes",
        "links_buffer_limit_exceeded", "blacklist", "first_state_call", "among_minority_time",
        "drop_filter", "_fast_valid", "slot_stats", "slot_stats_on",
        "asm",                                # atomic slot migration (asm.py)
        # failover (failover.py)
        "failover_auth_time", "failover_auth_count", "failover_auth_sent", "failover_auth_rank",
        "failover_auth_epoch", "cant_failover_reason", "cant_failover_logged", "mf_end", "mf_slave",
        "mf_master_offset", "mf_can_start", "cron_iteration", "pings_sent", "_cron_handle",
        # links (links.py)
        "bus_servers", "inbound_links", "connecting",
    )

    def __init__(self, srv):
        self.srv = srv
        cfg = srv.config
        self.config_file = cfg["cluster-config-file"]
        self.lock_fd = -1
        self.myself: Node | None = None
        self.nodes: dict = {}                 # name (40 bytes) -> Node
        self.slots: list = [None] * SLOTS     # slot -> owner Node
        self.migrating: dict = {}             # slot -> Node (MIGRATING to)
        self.importing: dict = {}             # slot -> Node (IMPORTING from)
        self.owner_not_claiming = set()       # slots whose owner stopped claiming them
        self.current_epoch = 0
        self.last_vote_epoch = 0
        self.state = STATE_FAIL
        self.size = 1
        self.todo = 0
        self._todo_scheduled = False
        self.stats_sent = [0] * TYPE_COUNT
        self.stats_received = [0] * TYPE_COUNT
        self.stats_pfail_nodes = 0
        self.links_buffer_limit_exceeded = 0
        self.blacklist: dict = {}             # name -> unix time when it may come back
        self.first_state_call = 0
        self.among_minority_time = 0
        self.drop_filter = -1                 # DEBUG DROP-CLUSTER-PACKET-FILTER
        self._fast_valid = False              # the fast path's map of our slots is current
        self.slot_stats = SlotStats()         # CLUSTER SLOT-STATS's accumulated metrics
        self.slot_stats_on = bool(cfg["cluster-slot-stats-enabled"])
        self.asm = Asm(self)
        client_mod.set_cluster(None)
        Failover.init_failover(self)
        Links.init_links(self)
        # clusterInit: lock, load or create nodes.conf
        if not self.lock_config():
            log.flush_and_exit(1)
        try:
            loaded = self.load_config()
        except ConfigFormatError as e:
            if e.args:
                log.warning(e.args[0])
            log.warning("Unrecoverable error: corrupted cluster config file.")
            log.flush_and_exit(1)
        if not loaded:
            self.myself = Node(None, MYSELF | MASTER)
            log.notice("No cluster configuration found, I'm %s" % self.myself.name.decode())
            self.add_node(self.myself)
            self.save_config_or_die(True)
        port = cfg["tls-port"] if cfg["tls-cluster"] else cfg["port"]
        if not cfg["cluster-port"] and port > 65535 - 10000:
            log.warning("Redis port number too high. Cluster communication port is 10,000 port numbers "
                        "higher than your Redis port. Your Redis port number must be 55535 or less.")
            log.flush_and_exit(1)
        if not cfg["bind"] and cfg["bind"] is not None:
            log.warning("No bind address is configured, but it is required for the Cluster bus.")
            log.flush_and_exit(1)
        if not cfg["tls-cluster"]:
            # Redis 8.10.2: the bus has no authentication of its own; say so,
            # and refuse to run that way when the operator asked (texts ours)
            if cfg["cluster-bus-port-protected-mode"]:
                log.warning("cluster-bus-port-protected-mode is yes but tls-cluster is off: the cluster bus "
                            "port would accept unauthenticated nodes. Enable tls-cluster or set "
                            "cluster-bus-port-protected-mode no.")
                log.flush_and_exit(1)
            log.warning("WARNING: the cluster bus port is not authenticated (tls-cluster is off): any host "
                        "that can reach it can join this cluster. Restrict access to it, or enable tls-cluster.")
        self.update_announced_ports()
        self.update_myself_flags()
        self.update_myself_ip()
        self.myself.hostname = cfg["cluster-announce-hostname"] or ""
        self.myself.human_nodename = cfg["cluster-announce-human-nodename"] or ""
        for name in ("cluster-announce-port", "cluster-announce-bus-port", "cluster-announce-tls-port",
                     "tls-port"):
            cfg.on_change(name, lambda v: self.update_announced_ports())
        cfg.on_change("cluster-announce-ip", lambda v: self.update_myself_ip())
        cfg.on_change("cluster-replica-no-failover", lambda v: self.update_myself_flags())
        cfg.on_change("cluster-announce-hostname", self._upd_hostname)
        cfg.on_change("cluster-announce-human-nodename", self._upd_human_nodename)
        cfg.on_change("cluster-slot-stats-enabled", self._upd_slot_stats)
        srv.dbs[0].d = SlotKeys(srv.dbs[0].d)
        srv.startup_hooks.insert(0, self.start)     # the bus listens before the data loads
        srv.startup_hooks.append(self.after_load)
        srv.shutdown_hooks.append(self.on_shutdown)

    # -- start and stop ---------------------------------------------------------------------------
    async def start(self):
        """After the server listens and before it loads its data: the bus
        listener and the cron."""
        await self.listen_bus()
        self.schedule_cron()
        self.do_before_sleep(TODO_UPDATE_STATE)

    def after_load(self):
        if not self.verify_config_with_data():
            log.warning("You can't have keys in a DB different than DB 0 when in Cluster mode. Exiting.")
            log.flush_and_exit(1)

    def verify_config_with_data(self) -> bool:
        """verifyClusterConfigWithData: keys of slots nobody serves make
        the slots ours; keys of slots another node serves open them as
        importing.  False when there are keys beyond database 0."""
        if self.myself.is_slave:
            return True
        for db in self.srv.dbs[1:]:
            if db.d:
                return False
        d = self.srv.dbs[0].d
        changed = False
        for s in range(SLOTS):
            if not d.count_in_slot(s):
                continue
            if self.slots[s] is self.myself or s in self.importing:
                continue
            changed = True
            if self.slots[s] is None:
                log.warning("I have keys for unassigned slot %d. Taking responsibility for it." % s)
                self.add_slot(self.myself, s)
            else:
                log.warning("I have keys for slot %d, but the slot is assigned to another node. "
                            "Setting it to importing state." % s)
                self.importing[s] = self.slots[s]
        if changed:
            self.save_config_or_die(False)
        return True

    def on_shutdown(self):
        """The last nodes.conf (Redis saves it when it shuts down)."""
        self.save_config(True)
        self.close_bus()

    # -- nodes.conf -------------------------------------------------------------------------------
    def lock_config(self) -> bool:
        path = self.config_file
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            log.warning("Can't open %s in order to acquire a lock: %s" % (path, e.strerror))
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                log.warning("Sorry, the cluster configuration file %s is already used by a different "
                            "Redis Cluster node. Please make sure that different nodes use different "
                            "cluster configuration files." % path)
            else:
                log.warning("Impossible to lock %s: %s" % (path, e.strerror))
            os.close(fd)
            return False
        self.lock_fd = fd
        return True

    def load_config(self) -> bool:
        """False when there is no configuration (a new node)."""
        path = self.config_file
        try:
            with open(path, "rb") as f:
                text = f.read()
        except FileNotFoundError:
            return False
        except OSError as e:
            log.warning("Loading the cluster node config from %s: %s" % (path, e.strerror))
            log.flush_and_exit(1)
        if not text:
            return False
        parse_config(text, self)
        log.notice("Node configuration loaded, I'm %s" % self.myself.name.decode())
        mx = self.max_epoch()
        if mx > self.current_epoch:
            self.current_epoch = mx
        return True

    def use_pport(self, c) -> bool:
        """A TLS cluster answers a plaintext client with the nodes'
        plaintext ports."""
        return self.srv.config["tls-cluster"] and c.transport is not None and not is_tls(c)

    def describe_nodes(self, filter_flags=0, use_pport=False, aux=False) -> str:
        out = []
        for n in self.nodes.values():
            if n.flags & filter_flags:
                continue
            out.append(n.describe(self, use_pport, aux) + "\n")
        return "".join(out)

    def save_config(self, do_fsync: bool) -> bool:
        """Write nodes.conf: the whole content written at once over the old
        file (padded with newlines, then truncated), as Redis does, so a
        crash leaves either the old or the new content."""
        self.todo &= ~TODO_SAVE_CONFIG
        from_nodes = self.describe_nodes(HANDSHAKE, aux=True)
        data = (from_nodes + "vars currentEpoch %d lastVoteEpoch %d\n" % (
            self.current_epoch, self.last_vote_epoch)).encode()
        try:
            fd = os.open(self.config_file, os.O_WRONLY | os.O_CREAT, 0o644)
        except OSError:
            return False
        try:
            size = os.fstat(fd).st_size
            content = len(data)
            if size > content:
                data += b"\n" * (size - content)
            os.write(fd, data)
            if do_fsync:
                self.todo &= ~TODO_FSYNC_CONFIG
                os.fsync(fd)
            if content != len(data):
                try:
                    os.ftruncate(fd, content)
                except OSError:
                    pass
            return True
        except OSError:
            return False
        finally:
            os.close(fd)

    def save_config_or_die(self, do_fsync: bool):
        if not self.save_config(do_fsync):
            log.warning("Fatal: can't update cluster config file.")
            log.flush_and_exit(1)

    # -- before sleep -----------------------------------------------------------------------------
    def invalidate_fast(self):
        """Something the fast path's map depends on changed: until it is
        recomputed (before sleep), every command with keys is routed by
        the general path (do_before_sleep drops the map)."""
        self.do_before_sleep(0)

    def recompute_fast(self):
        """The slots whose single-key commands the fast path may run:
        ours, neither migrating nor importing, the cluster ok, a master."""
        m = self.myself
        owned = bytearray(SLOTS)
        # (none while CLUSTER SLOT-STATS accumulates: dispatch counts)
        if self.state == STATE_OK and m.is_master and not self.slot_stats_on:
            for a, b in bitmap_ranges(m.slots):
                owned[a:b + 1] = b"\x01" * (b - a + 1)
            for s in list(self.migrating) + list(self.importing):
                owned[s] = 0
            for s in self.asm.paused:       # handed off by a slot migration: writes wait
                owned[s] = 0
        client_mod.set_cluster(bytes(owned))
        self._fast_valid = True

    def do_before_sleep(self, flags: int):
        """clusterDoBeforeSleep: the work runs once the current event is
        handled (before the loop waits again)."""
        if self._fast_valid:
            self._fast_valid = False
            client_mod.set_cluster(None)
        self.todo |= flags
        if not self._todo_scheduled and self.srv.loop is not None:
            self._todo_scheduled = True
            self.srv.loop.call_soon(self.before_sleep)

    def before_sleep(self):
        self._todo_scheduled = False
        flags = self.todo
        self.todo = 0
        if flags & TODO_HANDLE_MANUALFAILOVER:
            if self.myself.is_slave:
                self.handle_manual_failover()
                self.handle_slave_failover()
        elif flags & TODO_HANDLE_FAILOVER:
            self.handle_slave_failover()
        if flags & TODO_UPDATE_STATE:
            self.update_state()
        if flags & TODO_SAVE_CONFIG:
            self.save_config_or_die(bool(flags & TODO_FSYNC_CONFIG))
        if not self._fast_valid and not self._todo_scheduled:
            self.recompute_fast()

    # -- myself -----------------------------------------------------------------------------------
    def announced_ports(self):
        """deriveAnnouncedPorts (Redis 7.2+): (port, pport, cport).  The
        bus's port is the TLS port in a TLS cluster, pport the other one
        (the TLS port of a plaintext cluster, 0 without TLS)."""
        cfg = self.srv.config
        tls = cfg["tls-cluster"]
        tcp = cfg["cluster-announce-port"] or cfg["port"]
        tls_port = cfg["cluster-announce-tls-port"] or cfg["tls-port"]
        cport = cfg["cluster-announce-bus-port"] or cfg["cluster-port"] or \
            (cfg["tls-port"] if tls else cfg["port"]) + 10000
        if tls:
            return tls_port, tcp, cport
        return tcp, tls_port, cport

    def update_announced_ports(self):
        m = self.myself
        m.port, m.pport, m.cport = self.announced_ports()

    def update_myself_flags(self):
        m = self.myself
        old = m.flags
        m.flags &= ~NOFAILOVER
        if self.srv.config["cluster-replica-no-failover"]:
            m.flags |= NOFAILOVER
        if m.flags != old:
            self.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)

    def update_myself_ip(self):
        ip = self.srv.config["cluster-announce-ip"]
        if ip:
            self.myself.ip = ip[:45]
        elif self.srv.loop is not None:
            self.myself.ip = ""      # learnt again from the next MEET

    def _upd_hostname(self, v):
        if self.myself.hostname != (v or ""):
            self.myself.hostname = v or ""
            self.do_before_sleep(TODO_SAVE_CONFIG)

    def _upd_slot_stats(self, v):
        self.slot_stats_on = bool(v)
        self.invalidate_fast()

    def _upd_human_nodename(self, v):
        if self.myself.human_nodename != (v or ""):
            self.myself.human_nodename = v or ""
            self.do_before_sleep(TODO_SAVE_CONFIG)

    def repl_offset(self) -> int:
        """Our replication offset as the bus reports it (the master's
        offset, or what a replica has processed)."""
        srv = self.srv
        if srv.is_replica:
            link = srv.replica_link
            if link is None or srv.loading or (not link.history and link.state != "connected"):
                return 0
        return srv.repl_feed.offset

    # -- nodes ------------------------------------------------------------------------------------
    def lookup(self, name: bytes):
        if not valid_name(name):
            return None
        return self.nodes.get(name)

    def add_node(self, n: Node):
        self.nodes[n.name] = n

    def del_node(self, n: Node):
        """clusterDelNode: its slots unassigned, its failure reports
        forgotten, its links closed."""
        for s in [s for s, x in self.importing.items() if x is n]:
            del self.importing[s]
        for s in [s for s, x in self.migrating.items() if x is n]:
            del self.migrating[s]
        for s in n.slot_list():
            if self.slots[s] is n:
                self.del_slot(s)
        for other in self.nodes.values():
            if other is not n:
                other.fail_reports.pop(n, None)
        self.free_node(n)

    def free_node(self, n: Node):
        """freeClusterNode: off the table, out of its master's replicas,
        its replicas orphaned, its links closed."""
        for s in n.slaves:
            s.slaveof = None
        if n.is_slave and n.slaveof is not None:
            n.slaveof.remove_slave(n)
        if self.nodes.get(n.name) is n:
            del self.nodes[n.name]
        if n.link is not None:
            n.link.free()
        if n.inbound_link is not None:
            n.inbound_link.free()

    def rename_node(self, n: Node, newname: bytes):
        log.debug("Renaming node %s into %s" % (n.name.decode(), newname.decode("ascii", "replace")))
        self.nodes.pop(n.name, None)
        n.name = newname
        self.add_node(n)

    def max_epoch(self) -> int:
        mx = max((n.config_epoch for n in self.nodes.values()), default=0)
        return max(mx, self.current_epoch)

    def bump_epoch_without_consensus(self) -> bool:
        mx = self.max_epoch()
        m = self.myself
        if m.config_epoch == 0 or m.config_epoch != mx:
            self.current_epoch += 1
            m.config_epoch = self.current_epoch
            self.do_before_sleep(TODO_SAVE_CONFIG | TODO_FSYNC_CONFIG)
            log.warning("New configEpoch set to %d" % m.config_epoch)
            return True
        return False

    def handle_epoch_collision(self, sender: Node):
        m = self.myself
        if sender.config_epoch != m.config_epoch or not sender.is_master or not m.is_master:
            return
        if sender.name <= m.name:
            return
        self.current_epoch += 1
        m.config_epoch = self.current_epoch
        self.save_config_or_die(True)
        log.verbose("WARNING: configEpoch collision with node %s. configEpoch set to %d" % (
            sender.name.decode(), m.config_epoch))

    def blacklist_add(self, name: bytes, ttl: int = BLACKLIST_TTL):
        """No gossip may bring the node back for ttl seconds."""
        self._blacklist_cleanup()
        self.blacklist[name] = int(mstime() / 1000) + ttl

    def blacklisted(self, name: bytes) -> bool:
        self._blacklist_cleanup()
        return name in self.blacklist

    def _blacklist_cleanup(self):
        now = int(mstime() / 1000)
        for k in [k for k, t in self.blacklist.items() if t < now]:
            del self.blacklist[k]

    def shards(self) -> list:
        """The shards (Redis 7.2's): the known nodes (out of handshake)
        grouped by shard id, each group's masters first."""
        groups: dict = {}
        for n in self.nodes.values():
            if not n.in_handshake:
                groups.setdefault(n.shard_id, []).append(n)
        return [sorted(g, key=lambda n: not n.is_master) for g in groups.values()]

    def nodes_serving_slots_of(self, n: Node) -> list:
        """clusterGetNodesServingMySlots: n's master, then its replicas."""
        m = n if n.is_master else n.slaveof
        if m is None:
            return [n]
        return [m] + list(m.slaves)

    # -- slots ------------------------------------------------------------------------------------
    def masters_have_slaves(self) -> bool:
        return any(n.slaves for n in self.nodes.values() if not n.is_slave)

    def add_slot(self, n: Node, slot: int) -> bool:
        if self.slots[slot] is not None:
            return False
        self.invalidate_fast()
        if not n.set_slot_bit(slot) and n.numslots == 1 and self.masters_have_slaves():
            n.flags |= MIGRATE_TO
        self.slots[slot] = n
        return True

    def del_slot(self, slot: int) -> bool:
        n = self.slots[slot]
        if n is None:
            return False
        self.invalidate_fast()
        if self.myself in self.nodes_serving_slots_of(n):
            self.remove_channels_in_slot(slot)
        n.clear_slot_bit(slot)
        self.slots[slot] = None
        self.slot_stats.reset_slot(slot)
        return True

    def del_node_slots(self, n: Node) -> int:
        k = 0
        for s in n.slot_list():
            self.del_slot(s)
            k += 1
        return k

    def close_all_slots(self):
        self.invalidate_fast()
        self.migrating.clear()
        self.importing.clear()

    def slot_unclaimed(self, slot: int) -> bool:
        return self.slots[slot] is None or slot in self.owner_not_claiming

    def count_keys_in_slot(self, slot: int) -> int:
        return self.srv.dbs[0].d.count_in_slot(slot)

    def del_keys_in_slot(self, slot: int) -> int:
        """delKeysInSlot: every key of the slot deleted and propagated."""
        srv = self.srv
        db = srv.dbs[0]
        keys = db.d.keys_in_slot(slot, db.d.count_in_slot(slot))
        for k in keys:
            propagate_deletion(srv, db, k)
            db.delete(k, db_mod.lazy_server_del)
            notify.notify(notify.GENERIC, b"del", k, db.id)
            srv.dirty += 1
        propagate_pending(srv)
        return len(keys)

    def remove_unowned_shard_channels(self):
        """removeAllNotOwnedShardChannelSubscriptions (7.2): the shard
        channels of slots our (new) master does not serve lose their
        subscribers."""
        ps = self.srv.pubsub
        if not ps.shard:
            return
        m = self.myself
        owner = m if m.is_master else m.slaveof
        chans = [ch for ch in ps.shard if self.slots[key_hash_slot(ch)] is not owner]
        if chans:
            ps.unsubscribe_shard_channels(chans)

    def remove_channels_in_slot(self, slot: int):
        """Shard channels of a slot we no longer serve: their subscribers
        are unsubscribed (removeChannelsInSlot)."""
        ps = self.srv.pubsub
        chans = [ch for ch in ps.shard if key_hash_slot(ch) == slot]
        if chans:
            ps.unsubscribe_shard_channels(chans)

    # -- the state --------------------------------------------------------------------------------
    def update_state(self):
        """clusterUpdateState: ok when every slot is served by a reachable
        master (cluster-require-full-coverage) and we are in the majority."""
        self.todo &= ~TODO_UPDATE_STATE
        now = mstime()
        if self.first_state_call == 0:
            self.first_state_call = now
        m = self.myself
        if m.is_master and self.state == STATE_FAIL and now - self.first_state_call < WRITABLE_DELAY:
            return
        new = STATE_OK
        if self.srv.config["cluster-require-full-coverage"]:
            # every slot served by a node not in FAIL (the owners' slot
            # counts add up to the assigned slots)
            covered = 0
            for n in self.nodes.values():
                if n.numslots:
                    if n.flags & FAIL:
                        new = STATE_FAIL
                    covered += n.numslots
            if covered != SLOTS:
                new = STATE_FAIL
        size = 0
        reachable = 0
        for n in self.nodes.values():
            if n.is_master and n.numslots:
                size += 1
                if not n.flags & (FAIL | PFAIL):
                    reachable += 1
        self.size = size
        if reachable < size // 2 + 1:
            new = STATE_FAIL
            self.among_minority_time = now
        if new != self.state:
            delay = min(max(self.srv.config["cluster-node-timeout"], MIN_REJOIN_DELAY), MAX_REJOIN_DELAY)
            if new == STATE_OK and m.is_master and now - self.among_minority_time < delay:
                return
            log.warning("Cluster state changed: %s" % ("ok" if new == STATE_OK else "fail"))
            self.state = new
            self.invalidate_fast()
            if new == STATE_FAIL:
                redirect_blocked_clients(self)

    # -- roles ------------------------------------------------------------------------------------
    def set_node_as_master(self, n: Node):
        if n.is_master:
            return
        if n.slaveof is not None:
            n.slaveof.remove_slave(n)
            if n is not self.myself:
                n.flags |= MIGRATE_TO
        n.flags &= ~SLAVE
        n.flags |= MASTER
        n.slaveof = None
        self.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)

    def set_master(self, n: Node):
        """clusterSetMaster: replicate n."""
        m = self.myself
        self.invalidate_fast()
        if m.is_master:
            m.flags &= ~(MASTER | MIGRATE_TO)
            m.flags |= SLAVE
            self.close_all_slots()
        elif m.slaveof is not None:
            m.slaveof.remove_slave(m)
        m.slaveof = n
        self.update_shard_id(m, n.shard_id)
        n.add_slave(m)
        replica_mod.set_master(self.srv, n.ip, n.port)
        self.remove_unowned_shard_channels()
        self.reset_manual_failover()

    def reset(self, hard: bool):
        """CLUSTER RESET [HARD]."""
        srv = self.srv
        m = self.myself
        if m.is_slave:
            self.set_node_as_master(m)
            replica_mod.unset_master(srv)
            for db in srv.dbs:
                db.flush()
        self.close_all_slots()
        self.reset_manual_failover()
        self.asm.cancel(None, "cluster reset")     # slot migrations end with the configuration
        for s in range(SLOTS):
            self.del_slot(s)
        for n in list(self.nodes.values()):
            if n is not m:
                self.del_node(n)
        if hard:
            self.current_epoch = 0
            self.last_vote_epoch = 0
            m.config_epoch = 0
            log.warning("configEpoch set to 0 via CLUSTER RESET HARD")
            self.nodes.pop(m.name, None)
            m.name = random_name()
            m.shard_id = random_name()
            self.add_node(m)
            log.notice("Node hard reset, now I'm %s" % m.name.decode())
        self.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_FSYNC_CONFIG)

    def preferred_endpoint(self, n: Node) -> str:
        t = self.srv.config["cluster-preferred-endpoint-type"]
        if t == "ip":
            return n.ip
        if t == "hostname":
            return n.hostname or "?"
        return ""

    def info_text(self) -> str:
        """CLUSTER INFO's text (also read by /metrics)."""
        assigned = ok = pfail = fail = 0
        for n in self.nodes.values():      # the owners' counts add up to the slots' (add_slot keeps both)
            k = n.numslots
            if not k:
                continue
            assigned += k
            if n.failed:
                fail += k
            elif n.timed_out:
                pfail += k
            else:
                ok += k
        m = self.myself
        myepoch = m.slaveof.config_epoch if (m.is_slave and m.slaveof is not None) else m.config_epoch
        lines = [
            "cluster_state:%s" % ("ok" if self.state == STATE_OK else "fail"),
            "cluster_slots_assigned:%d" % assigned,
            "cluster_slots_ok:%d" % ok,
            "cluster_slots_pfail:%d" % pfail,
            "cluster_slots_fail:%d" % fail,
            "cluster_known_nodes:%d" % len(self.nodes),
            "cluster_size:%d" % self.size,
            "cluster_current_epoch:%d" % self.current_epoch,
            "cluster_my_epoch:%d" % myepoch,
        ]
        lines += self.stats_lines()
        lines.append("total_cluster_links_buffer_limit_exceeded:%d" % self.links_buffer_limit_exceeded)
        lines += self.asm.info_lines()      # Redis 8.4's slot migration fields
        return "\r\n".join(lines) + "\r\n"

    def stats_lines(self) -> list:
        """CLUSTER INFO's message counters (types never seen are left out)."""
        out = []
        for word, counts in (("sent", self.stats_sent), ("received", self.stats_received)):
            total = 0
            for t, k in enumerate(counts):
                if k:
                    total += k
                    out.append("cluster_stats_messages_%s_%s:%d" % (type_name(t), word, k))
            out.append("cluster_stats_messages_%s:%d" % (word, total))
        return out

    # -- INFO and memory --------------------------------------------------------------------------
    def links_memory(self) -> int:
        """INFO's mem_cluster_links."""
        k = 0
        for n in self.nodes.values():
            for link in (n.link, n.inbound_link):
                if link is not None:
                    k += link.memory()
        return k + sum(link.memory() for link in self.inbound_links)

    def connections(self) -> int:
        """cluster_connections of INFO clients: the bus links."""
        k = 0
        for n in self.nodes.values():
            k += (n.link is not None) + (n.inbound_link is not None)
        return k
