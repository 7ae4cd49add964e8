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
                 "cport", "link", "inbound_link", "fail_reports", "last_in_ping_gossip")

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
    def describe(self, cluster, use_pport=False) -> str:
        """This node's line of CLUSTER NODES / nodes.conf (without "\\n")."""
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


class ConfigFormatError(Exception):
    pass


def parse_config(text: bytes, cluster):
    """Load nodes.conf's lines into cluster (clusterLoadConfig).  Raises
    ConfigFormatError for a line Redis would refuse."""
    now = mstime()
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
        addr = argv[1].decode("utf-8", "replace")
        if "," in addr:
            addr, n.hostname = addr.split(",", 1)
        else:
            n.hostname = ""
        if ":" not in addr:
            raise ConfigFormatError()
        ip, port = addr.rsplit(":", 1)
        n.ip = ip
        bus = None
        if "@" in port:
            port, bus = port.split("@", 1)
        n.port = atoi(port.encode())
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
