"""A cluster node as this node knows it (Redis's clusterNode), its line in
CLUSTER NODES and nodes.conf (the same format), and the parser of that
file's lines."""

from __future__ import annotations

import os
import time

from ..protocol.resp import split_args
from ..util import atoi
from .bus import NODE_FAIL as FAIL
from .bus import NODE_HANDSHAKE as HANDSHAKE
from .bus import NODE_MASTER as MASTER
from .bus import NODE_MIGRATE_TO as MIGRATE_TO
from .bus import NODE_MYSELF as MYSELF
from .bus import NODE_NOADDR as NOADDR
from .bus import NODE_NOFAILOVER as NOFAILOVER
from .bus import NODE_PFAIL as PFAIL
from .bus import NODE_SLAVE as SLAVE
from .bus import bitmap_ranges, bitmap_to_slots
from .slots import SLOTS

# (node flags: the bits the bus carries, under short names)

FLAG_NAMES = ((MYSELF, "myself"), (MASTER, "master"), (SLAVE, "slave"), (PFAIL, "fail?"),
              (FAIL, "fail"), (HANDSHAKE, "handshake"), (NOADDR, "noaddr"),
              (NOFAILOVER, "nofailover"))
_FLAG_BY_NAME = {n: f for f, n in FLAG_NAMES}
_FLAG_BY_NAME["noflags"] = 0

NAMELEN = 40
_HEX = frozenset(b"0123456789abcdef")


def mstime() -> int:
    return int(time.time() * 1000)


def random_name() -> bytes:
    return os.urandom(20).hex().encode()


def valid_name(name: bytes) -> bool:
    """verifyClusterNodeId: 40 lowercase hex characters."""
    return len(name) == NAMELEN and all(ch in _HEX for ch in name)


def who(n) -> str:
    """A node in log lines: its id and (Redis 7.2) its human node name."""
    return "%s (%s)" % (n.name.decode(), n.human_nodename)


def flags_string(flags: int) -> str:
    names = [n for f, n in FLAG_NAMES if flags & f]
    return ",".join(names) if names else "noflags"


def _flag(bit):
    """A read-only property: whether the node's flags have ``bit``."""
    return property(lambda self: bool(self.flags & bit))


class Node:
    __slots__ = ("name", "ctime", "config_epoch", "flags", "slots", "numslots", "slaves", "slaveof",
                 "ping_sent", "pong_received", "data_received", "fail_time", "voted_time",
                 "repl_offset_time", "orphaned_time", "repl_offset", "ip", "hostname", "port", "pport",
                 "cport", "link", "inbound_link", "fail_reports", "last_in_ping_gossip", "shard_id",
                 "human_nodename")

    def __init__(self, name: bytes | None = None, flags: int = 0):
        self.name = name if name is not None else random_name()
        self.ctime = mstime()
        self.config_epoch = 0
        self.flags = flags
        self.slots = bytearray(SLOTS // 8)
        self.numslots = 0
        self.slaves: list = []
        self.slaveof: Node | None = None
        self.ping_sent = 0
        self.pong_received = 0
        self.data_received = 0
        self.fail_time = 0
        self.voted_time = 0
        self.repl_offset_time = 0
        self.orphaned_time = 0
        self.repl_offset = 0
        self.ip = ""
        self.hostname = ""
        self.port = 0
        self.pport = 0
        self.cport = 0
        self.link = None            # our outbound link to it
        self.inbound_link = None    # its link to us
        self.fail_reports: dict = {}   # reporting node -> time (ms) of its last report
        self.last_in_ping_gossip = 0
        # Redis 7.2: the shard this node belongs to (random until the node,
        # its master or nodes.conf tells otherwise) and its announced
        # human-readable name (log lines and nodes.conf only)
        self.shard_id = random_name()
        self.human_nodename = ""

    # -- flags ------------------------------------------------------------------------------------
    is_master = _flag(MASTER)
    is_slave = _flag(SLAVE)
    failed = _flag(FAIL)
    timed_out = _flag(PFAIL)
    in_handshake = _flag(HANDSHAKE)
    myself = _flag(MYSELF)

    # -- slots ------------------------------------------------------------------------------------
    def has_slot(self, slot: int) -> bool:
        return bool(self.slots[slot >> 3] & (1 << (slot & 7)))

    def set_slot_bit(self, slot: int) -> bool:
        b = 1 << (slot & 7)
        old = bool(self.slots[slot >> 3] & b)
        if not old:
            self.slots[slot >> 3] |= b
            self.numslots += 1
        return old

    def clear_slot_bit(self, slot: int) -> bool:
        b = 1 << (slot & 7)
        old = bool(self.slots[slot >> 3] & b)
        if old:
            self.slots[slot >> 3] &= ~b & 0xFF
            self.numslots -= 1
        return old

    def slot_list(self) -> list:
        if not self.numslots:
            return []
        return bitmap_to_slots(self.slots)

    # -- replicas ---------------------------------------------------------------------------------
    def add_slave(self, n: "Node") -> bool:
        if n in self.slaves:
            return False
        self.slaves.append(n)
        self.flags |= MIGRATE_TO
        return True

    def remove_slave(self, n: "Node") -> bool:
        if n in self.slaves:
            self.slaves.remove(n)
            if not self.slaves:
                self.flags &= ~MIGRATE_TO
            return True
        return False

    def non_failing_slaves(self) -> int:
        return sum(1 for s in self.slaves if not s.failed)

    # -- description ------------------------------------------------------------------------------
    def describe(self, cluster, use_pport=False, aux=False) -> str:
        """This node's line of CLUSTER NODES (without "\\n"); with aux, its
        line of nodes.conf: the TCP port in the address, then the hostname
        field (empty when none) and the auxiliary fields of Redis 7.2+
        (tls-port, nodename, shard-id), which clients are not shown."""
        if aux:
            tcp, tls = self.ports(cluster)
            addr = "%s:%d@%d,%s,tls-port=%d" % (self.ip, tcp, self.cport, self.hostname, tls)
            if self.human_nodename:
                addr += ",nodename=" + self.human_nodename
            addr += ",shard-id=" + self.shard_id.decode()
        else:
            port = self.pport if use_pport and self.pport else self.port
            if self.hostname:
                addr = "%s:%d@%d,%s" % (self.ip, port, self.cport, self.hostname)
            else:
                addr = "%s:%d@%d" % (self.ip, port, self.cport)
        epoch = self.config_epoch
        if self.is_slave and self.slaveof is not None:
            epoch = self.slaveof.config_epoch
        parts = [self.name.decode(), addr, flags_string(self.flags),
                 self.slaveof.name.decode() if self.slaveof is not None else "-",
                 str(self.ping_sent), str(self.pong_received), str(epoch),
                 "connected" if (self.link is not None or self.flags & MYSELF) else "disconnected"]
        for a, b in bitmap_ranges(self.slots):
            parts.append(str(a) if a == b else "%d-%d" % (a, b))
        if self.flags & MYSELF:
            for s in sorted(set(cluster.migrating) | set(cluster.importing)):
                if s in cluster.migrating:
                    parts.append("[%d->-%s]" % (s, cluster.migrating[s].name.decode()))
                else:
                    parts.append("[%d-<-%s]" % (s, cluster.importing[s].name.decode()))
        return " ".join(parts)

    def ports(self, cluster):
        """(TCP port, TLS port): the bus's port is the TLS one in a TLS
        cluster (pport the plaintext one), the TCP one otherwise."""
        if cluster.srv.config["tls-cluster"]:
            return self.pport, self.port
        return self.port, self.pport

    def set_ports(self, cluster, tcp: int, tls: int):
        if cluster.srv.config["tls-cluster"]:
            self.port, self.pport = tls, tcp
        else:
            self.port, self.pport = tcp, tls


def valid_aux(value: bytes) -> bool:
    """isValidAuxString: none of the characters the nodes.conf syntax
    reserves (letters and digits always pass)."""
    return not any(ch in _AUX_RESERVED for ch in value)


_AUX_RESERVED = frozenset(b"!#$%&()*+:;<>?@[]^{|}~")
_AUX_FIELDS = (b"shard-id", b"nodename", b"tcp-port", b"tls-port")


class ConfigFormatError(Exception):
    pass


def parse_config(text: bytes, cluster):
    """Load nodes.conf's lines into cluster (clusterLoadConfig).  Raises
    ConfigFormatError for a line Redis would refuse."""
    now = mstime()
    with_shard = set()      # the nodes whose line had a shard-id
    for raw in text.split(b"\n"):
        if not raw.strip(b"\r"):
            continue
        try:
            argv = split_args(raw)
        except ValueError:
            raise ConfigFormatError() from None
        if argv is None or not argv:
            raise ConfigFormatError()
        if argv[0].lower() == b"vars":
            if len(argv) % 2 == 0:
                raise ConfigFormatError()
            for j in range(1, len(argv), 2):
                name = argv[j].lower()
                if name == b"currentepoch":
                    cluster.current_epoch = _ull(argv[j + 1])
                elif name == b"lastvoteepoch":
                    cluster.last_vote_epoch = _ull(argv[j + 1])
                else:
                    cluster.log_warning("Skipping unknown cluster config variable '%s'" % argv[j].decode(
                        "utf-8", "replace"))
            continue
        if len(argv) < 8 or not valid_name(argv[0]):
            raise ConfigFormatError()
        n = cluster.lookup(argv[0])
        if n is None:
            n = Node(argv[0], 0)
            cluster.add_node(n)
        # ip:port[@cport][,hostname[,aux=value]...]
        fields = argv[1].split(b",")
        n.hostname = fields[1].decode("utf-8", "replace") if len(fields) > 1 else ""
        aux = {}
        for f in fields[2:]:
            kv = f.split(b"=")
            if len(kv) != 2 or not valid_aux(kv[0]) or not valid_aux(kv[1]) or kv[0] not in _AUX_FIELDS:
                raise ConfigFormatError()
            aux[kv[0]] = kv[1]
        addr = fields[0].decode("utf-8", "replace")
        if ":" not in addr:
            raise ConfigFormatError()
        ip, port = addr.rsplit(":", 1)
        n.ip = ip
        bus = None
        if "@" in port:
            port, bus = port.split("@", 1)
        main = atoi(port.encode())
        if b"shard-id" in aux:
            if not valid_name(aux[b"shard-id"]) or any(s.shard_id != aux[b"shard-id"] for s in n.slaves):
                raise ConfigFormatError()
            n.shard_id = aux[b"shard-id"]
            with_shard.add(n)
        if b"nodename" in aux:
            n.human_nodename = aux[b"nodename"].decode("utf-8", "replace")
        ports = {}
        for k in (b"tcp-port", b"tls-port"):
            if k in aux:
                v = aux[k]
                if not 1 <= len(v) <= 5 or not 0 <= atoi(v) < 65536:
                    raise ConfigFormatError()
                ports[k] = atoi(v)
        if not ports:       # a file of Redis 7.0: the port clients use
            n.port = main
        else:
            n.set_ports(cluster, ports.get(b"tcp-port", main), ports.get(b"tls-port", main))
        n.cport = atoi(bus.encode()) if bus is not None else n.port + 10000
        for fl in argv[2].decode("utf-8", "replace").split(","):
            f = _FLAG_BY_NAME.get(fl.lower())
            if f is None:
                raise ConfigFormatError("Unknown flag in redis cluster config file")
            if f == MYSELF:
                if cluster.myself is not None:
                    raise ConfigFormatError()
                cluster.myself = n
            if f == FAIL:
                n.fail_time = now
            n.flags |= f
        if argv[3][:1] != b"-":
            if not valid_name(argv[3]):
                raise ConfigFormatError()
            m = cluster.lookup(argv[3])
            if m is None:
                m = Node(argv[3], 0)
                cluster.add_node(m)
            # a file of Redis 7.0 has no shard ids: a replica is in its
            # master's shard
            if n not in with_shard:
                n.shard_id = m.shard_id
            elif m in with_shard and m.shard_id != n.shard_id:
                raise ConfigFormatError()
            n.slaveof = m
            m.add_slave(n)
        if atoi(argv[4]):
            n.ping_sent = now
        if atoi(argv[5]):
            n.pong_received = now
        n.config_epoch = 0 if (n.is_slave and n.slaveof is not None) else _ull(argv[6])
        for a in argv[8:]:
            if a[:1] == b"[":
                body = a[1:]
                dash = body.find(b"-")
                if dash < 0:
                    raise ConfigFormatError()
                slot = atoi(body[:dash])
                direction = body[dash + 1:dash + 2]
                rest = body[dash + 3:]
                end = rest.find(b"]")
                if not 0 <= slot < SLOTS or end < 0 or not valid_name(rest[:end]):
                    raise ConfigFormatError()
                other = cluster.lookup(rest[:end])
                if other is None:
                    other = Node(rest[:end], 0)
                    cluster.add_node(other)
                if direction == b">":
                    cluster.migrating[slot] = other
                else:
                    cluster.importing[slot] = other
                continue
            if b"-" in a:
                x, y = a.split(b"-", 1)
                start, stop = atoi(x), atoi(y)
            else:
                start = stop = atoi(a)
            if not (0 <= start < SLOTS and 0 <= stop < SLOTS):
                raise ConfigFormatError()
            for s in range(start, stop + 1):
                cluster.add_slot(n, s)
    if cluster.myself is None:
        raise ConfigFormatError()


def _ull(b) -> int:
    return max(atoi(b), 0)
