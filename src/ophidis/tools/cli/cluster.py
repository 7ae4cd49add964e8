"""The cluster manager of ophidis-cli (``--cluster <subcommand>``), as
redis-cli 7.0's: its options, the model of the nodes it loads from
CLUSTER NODES, and what the subcommands share: printing the nodes, the
slot commands, moving a slot between nodes with MIGRATE, waiting for the
nodes to agree.  The check and the fixes are in ``cluster_check``, the
subcommands in ``cluster_commands``.

Output (the ">>> ..." lines, "[OK] ...", colours when $TERM is an xterm)
and exit codes are redis-cli's.
"""

from __future__ import annotations

import math
import os
import socket
import struct
import sys
import time

from ophidis.tools import resp
from ophidis.tools.cli.output import err, flush, out
from ophidis.tools.defaults import Defaults
from ophidis.tools.resp import ConnectionClosed, atof, atoi

SLOTS = 16384
PORT_INCR = 10000
JOIN_CHECK_AFTER = 20

INVALID_HOST_ARG = ("[ERR] Invalid arguments: you need to pass either a valid address "
                    "(ie. 120.0.0.1:7000) or space separated IP and port (ie. 120.0.0.1 7000)\n")

# Node flags
F_MYSELF, F_SLAVE, F_FRIEND, F_NOADDR, F_DISCONNECT, F_FAIL = 1, 2, 4, 8, 16, 32

# Move options
OPT_GETFRIENDS, OPT_COLD, OPT_UPDATE, OPT_QUIET, OPT_VERBOSE = 1, 2, 4, 64, 128

LOG_INFO, LOG_WARN, LOG_ERR, LOG_SUCCESS = 1, 2, 3, 4
_COLORS = {LOG_INFO: "29;1m", LOG_WARN: "33;1m", LOG_ERR: "31;1m", LOG_SUCCESS: "32;1m"}


def f32(x):
    """x rounded to a C float (redis-cli computes slot shares in floats)."""
    return struct.unpack("f", struct.pack("f", x))[0]


def lround(x):
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


class ManagerOptions(Defaults):
    """What ``--cluster`` and the ``--cluster-*`` options set."""

    DEFAULTS = {
        "name": None, "argv": [], "replicas": 0, "from_": None, "to": None, "slots": 0,
        "timeout": 60000, "pipeline": 10, "threshold": 2.0, "weights": None, "master_id": None,
        "from_user": None, "from_pass": None, "from_askpass": False,
        "yes": False, "fix": False, "slave": False, "empty_masters": False, "simulate": False,
        "replace": False, "copy": False, "check_owners": False, "fix_unreachable": False,
        "masters_only": False, "slaves_only": False, "atomic": False,
    }

    def __init__(self):
        super().__init__()
        self.color = "xterm" in os.environ.get("TERM", "")


_MGR_FLAGS = {
    "--cluster-only-masters": "masters_only", "--cluster-only-replicas": "slaves_only",
    "--cluster-from-askpass": "from_askpass", "--cluster-yes": "yes", "--cluster-simulate": "simulate",
    "--cluster-replace": "replace", "--cluster-copy": "copy", "--cluster-slave": "slave",
    "--cluster-use-empty-masters": "empty_masters", "--cluster-search-multiple-owners": "check_owners",
    "--cluster-fix-with-unreachable-masters": "fix_unreachable",
    # reshard and rebalance by CLUSTER MIGRATION (Redis 8.4's atomic slot
    # migration) instead of MIGRATE key by key: valkey-cli's spelling, as
    # unlisted in the help as there
    "--cluster-use-atomic-slot-migration": "atomic",
}
_MGR_VALUES = {
    "--cluster-replicas": ("replicas", atoi), "--cluster-master-id": ("master_id", str),
    "--cluster-from": ("from_", str), "--cluster-to": ("to", str), "--cluster-from-user": ("from_user", str),
    "--cluster-from-pass": ("from_pass", str), "--cluster-slots": ("slots", atoi),
    "--cluster-timeout": ("timeout", atoi), "--cluster-pipeline": ("pipeline", atoi),
    "--cluster-threshold": ("threshold", atof),
}


def parse_manager_option(argv, i, cfg, usage):
    """redis-cli's parsing of ``--cluster`` and ``--cluster-*`` at argv[i]:
    the index of the last argument consumed, or None when argv[i] is not
    one of them.  ``cfg.cluster_manager`` is created by ``--cluster``."""
    a = argv[i]
    n = len(argv)
    last = i == n - 1
    m = cfg.cluster_manager
    if a == "--cluster":
        if last or m.name is not None:
            usage(1)
        i += 1
        m.name = argv[i]
        j = i
        while j < n and not argv[j].startswith("-"):
            j += 1
        if j > i:
            j -= 1
        m.argv = argv[i + 1:j + 1]
        return j
    if a in _MGR_FLAGS:
        setattr(m, _MGR_FLAGS[a], True)
        return i
    if a in _MGR_VALUES and not last:
        attr, conv = _MGR_VALUES[a]
        setattr(m, attr, conv(argv[i + 1]))
        return i + 1
    if a == "--cluster-weight" and not last:
        if m.weights is not None:
            err("WARNING: you cannot use --cluster-weight more than once.\n"
                "You can set more weights by adding them as a space-separated list, ie:\n"
                "--cluster-weight n1=w n2=w\n")
            sys.exit(1)
        w = []
        for x in argv[i + 1:]:
            if x.startswith("--") or "=" not in x:
                break
            w.append(x)
        if w:
            m.weights = w
        return i + len(w)
    if m.name is not None and not a.startswith("-"):
        if not m.argv:
            j = i + 1
            while j < n and not argv[j].startswith("-"):
                j += 1
            m.argv = argv[i:j]
            if j - i > 1:
                return j - 1
        return i
    return None


def parse_address(addr):
    """ip:port[@bus_port] -> (ip, port, bus_port) or None."""
    bus = 0
    if "@" in addr:
        addr, _, b = addr.rpartition("@")
        bus = atoi(b)
    if ":" not in addr:
        return None
    ip, _, p = addr.rpartition(":")
    return ip, atoi(p), bus


def host_from_args(args):
    """(ip, port) from ``host:port`` or ``host port``, or None."""
    if len(args) == 1:
        a = parse_address(args[0])
        if a is None:
            return None
        ip, port = a[0], a[1]
    elif len(args) >= 2:
        ip, port = args[0], atoi(args[1])
    else:
        return None
    if not ip or not port:
        return None
    return ip, port


def read_answer(size):
    """An answer typed on stdin: redis-cli reads ``size`` bytes and drops
    the rest of the line; on a terminal that is one line, and reading a byte
    at a time keeps it one line when stdin is a pipe too.  b"" at EOF."""
    buf = b""
    while True:
        try:
            c = os.read(0, 1)
        except OSError:
            c = b""
        if not c:
            return buf
        if len(buf) < size:
            buf += c
        if c == b"\n":
            return buf


def decode(b):
    return b.decode("utf-8", "surrogateescape") if isinstance(b, bytes) else b


def info_field(text, field):
    """getLongInfoField: the integer value of ``field:`` in INFO text."""
    for line in text.split("\r\n"):
        if line.startswith(field + ":"):
            return atoi(line[len(field) + 1:])
    return 0


class Node:
    def __init__(self, ip, port, bus_port=0):
        self.conn = None
        self.name = None
        self.ip = ip
        self.port = port
        self.bus_port = bus_port if bus_port else port + PORT_INCR
        self.current_epoch = 0
        self.ping_sent = self.ping_recv = 0
        self.flags = 0
        self.flags_str = None
        self.replicate = None
        self.dirty = False
        self.slots = bytearray(SLOTS)
        self.slots_count = 0
        self.replicas_count = 0
        self.friends = None
        self.migrating = []     # (slot text, destination id)
        self.importing = []     # (slot text, source id)
        self.weight = 1.0
        self.balance = 0

    @property
    def is_slave(self):
        return bool(self.flags & F_SLAVE)

    def reset_slots(self):
        self.slots = bytearray(SLOTS)
        self.slots_count = 0

    def command(self, *args):
        """The reply, or None on an I/O error (hiredis's NULL reply)."""
        if self.conn is None:
            return None
        try:
            return self.conn.command(*args)
        except (OSError, ConnectionClosed):
            return None

    def addr(self):
        return "%s:%d" % (self.ip, self.port)


class ManagerBase:
    """The nodes of a cluster as the cluster manager sees them, and the
    operations on them; ``cluster_check.Manager`` adds the check and fixes."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.opts = cfg.cluster_manager
        self.nodes = []
        self.errors = []
        self.unreachable_masters = 0
        self.uncovered = None

    # -- output ----------------------------------------------------------
    def log(self, level, text):
        if self.opts.color:
            out("\033[" + _COLORS[level])
        out(text)
        if self.opts.color:
            out("\033[0m")

    def info(self, text):
        self.log(LOG_INFO, text)

    def warn(self, text):
        self.log(LOG_WARN, text)

    def error(self, text):
        self.log(LOG_ERR, text)

    def ok(self, text):
        self.log(LOG_SUCCESS, text)

    def print_reply_error(self, n, e):
        self.error("Node %s:%d replied with error:\n%s\n" % (n.ip, n.port, decode(e)))

    def check_reply(self, n, r, want_err=False):
        """clusterManagerCheckRedisReply: (ok, error text).  The error is
        printed unless the caller wants it."""
        if r is None:
            return False, None
        if r.is_error:
            if not want_err:
                self.print_reply_error(n, r.value)
            return False, decode(r.value)
        return True, None

    def on_error(self, e):
        self.errors.append(e)
        self.error(e + "\n")

    # -- nodes -----------------------------------------------------------
    def connect(self, node):
        if node.conn is not None:
            node.conn.close()
            node.conn = None
        try:
            node.conn = resp.Connection(node.ip, node.port)
        except OSError as e:
            msg = e.strerror or str(e)
            if isinstance(e, socket.gaierror):
                msg = str(e.args[1]) if len(e.args) > 1 else str(e)
            err("Could not connect to Redis at %s:%d: %s\n" % (node.ip, node.port, msg))
            return False
        c = self.cfg
        if c.auth is not None:
            r = node.command(*(["AUTH", c.user, c.auth] if c.user else ["AUTH", c.auth]))
            if not self.check_reply(node, r)[0]:
                return False
        return True

    def by_name(self, name):
        name = name.lower()
        for n in self.nodes:
            if n.name and n.name == name:
                return n
        return None

    def by_abbreviated_name(self, name):
        name = name.lower()
        for n in self.nodes:
            if n.name and n.name.startswith(name):
                return n
        return None

    def node_info(self, node):
        """INFO text, or (None, error text)."""
        r = node.command("INFO")
        if r is None:
            return None, None
        if r.is_error:
            return None, decode(r.value)
        return decode(r.value), None

    def is_cluster(self, node):
        text, e = self.node_info(node)
        if text is None:
            return False, e
        return bool(info_field(text, "cluster_enabled")), None

    def is_empty(self, node):
        text, e = self.node_info(node)
        if text is None:
            return False, e
        if "db0:" in text:
            return False, None
        r = node.command("CLUSTER", "INFO")
        ok, e = self.check_reply(node, r, want_err=True)
        if not ok:
            return False, e
        return info_field(decode(r.value), "cluster_known_nodes") == 1, None

    def print_not_empty(self, node, e):
        msg = e or ("is not empty. Either the node already knows other nodes (check with "
                    "CLUSTER NODES) or contains some key in database 0.")
        self.error("[ERR] Node %s:%d %s\n" % (node.ip, node.port, msg))

    def print_not_cluster(self, node, e):
        msg = e or "is not configured as a cluster node."
        self.error("[ERR] Node %s:%d %s\n" % (node.ip, node.port, msg))

    def check_new_node(self, node):
        """A node to add to a cluster must run in cluster mode and be empty
        (no keys, knows no other node); its own CLUSTER NODES line is loaded."""
        ok, e = self.is_cluster(node)
        if not ok:
            self.print_not_cluster(node, e)
            return False
        ok, e = self.load_node_info(node, 0)
        if not ok:
            if e:
                self.print_reply_error(node, e)
            return False
        ok, e = self.is_empty(node)
        if not ok:
            self.print_not_empty(node, e)
            return False
        return True

    def load_node_info(self, node, opts=0):
        """CLUSTER NODES of ``node``: its own line sets its name, flags,
        slots and open slots; with OPT_GETFRIENDS the other lines become
        ``node.friends``.  Returns (ok, error text)."""
        r = node.command("CLUSTER", "NODES")
        ok, e = self.check_reply(node, r, want_err=True)
        if not ok:
            return False, e
        getfriends = opts & OPT_GETFRIENDS
        text = decode(r.value)
        lines = text.split("\n")[:-1]   # only lines ended by a newline
        for line in lines:
            parts = line.split(" ")
            # The fields that were followed by a space (C's strchr walk).
            fields = parts[:-1][:8] if len(parts) <= 8 else parts[:8]
            rest = parts[8:] if len(parts) > 8 else []
            if len(fields) < 3:
                return False, None
            name, addr, flags = fields[0], fields[1], fields[2]
            master_id = fields[3] if len(fields) > 3 else None
            ping_sent = fields[4] if len(fields) > 4 else None
            ping_recv = fields[5] if len(fields) > 5 else None
            config_epoch = fields[6] if len(fields) > 6 else None
            a = parse_address(addr)
            if a is None:
                err("Error: invalid CLUSTER NODES reply\n")
                return False, None
            ip, port, bus_port = a
            myself = "myself" in flags
            if myself:
                node.bus_port = bus_port
                node.flags |= F_MYSELF
                cur = node
                node.reset_slots()
                for d in rest:
                    if not d:
                        continue
                    if d.startswith("["):
                        d = d[1:]
                        if "->-" in d:
                            s, _, dst = d.partition("->-")
                            node.migrating.append((s, dst.split("]")[0]))
                        elif "-<-" in d:
                            s, _, src = d.partition("-<-")
                            node.importing.append((s, src.split("]")[0]))
                    elif "-" in d:
                        a1, _, b1 = d.partition("-")
                        start, stop = atoi(a1), atoi(b1)
                        node.slots_count += stop - (start - 1)
                        for s in range(start, stop + 1):
                            node.slots[s] = 1
                    else:
                        node.slots[atoi(d)] = 1
                        node.slots_count += 1
                node.dirty = False
            elif not getfriends:
                if not node.flags & F_MYSELF:
                    continue
                break
            else:
                cur = Node(ip, port, bus_port)
                cur.flags |= F_FRIEND
                if node.friends is None:
                    node.friends = []
                node.friends.append(cur)
            cur.name = name
            cur.flags_str = []
            for flag in (f for f in flags.split(",") if f):
                if flag == "noaddr":
                    cur.flags |= F_NOADDR
                elif flag == "disconnected":
                    cur.flags |= F_DISCONNECT
                elif flag == "fail":
                    cur.flags |= F_FAIL
                elif flag == "slave":
                    cur.flags |= F_SLAVE
                    if master_id is not None:
                        cur.replicate = master_id
                cur.flags_str.append(flag)
            if config_epoch is not None:
                cur.current_epoch = atoi(config_epoch)
            if ping_sent is not None:
                cur.ping_sent = atoi(ping_sent)
            if ping_recv is not None:
                cur.ping_recv = atoi(ping_recv)
            if not getfriends and myself:
                break
        return True, None

    def load_info_from_node(self, node):
        """Load the whole cluster as ``node`` sees it into self.nodes."""
        if node.conn is None and not self.connect(node):
            return False
        ok, e = self.is_cluster(node)
        if not ok:
            self.print_not_cluster(node, e)
            return False
        ok, e = self.load_node_info(node, OPT_GETFRIENDS)
        if not ok:
            if e:
                self.print_reply_error(node, e)
            return False
        self.nodes = [node]
        for friend in node.friends or ():
            valid = False
            if friend.ip and friend.port and (friend.conn is not None or self.connect(friend)):
                ok, _e = self.load_node_info(friend, 0)
                if ok:
                    if not friend.flags & (F_NOADDR | F_DISCONNECT | F_FAIL):
                        self.nodes.append(friend)
                        valid = True
                else:
                    self.error("[ERR] Unable to load info for node %s:%d\n" % (friend.ip, friend.port))
            if not valid:
                if not friend.flags & F_SLAVE:
                    self.unreachable_masters += 1
                if friend.conn is not None:
                    friend.conn.close()
        node.friends = None
        for n in self.nodes:
            if n.replicate is not None:
                master = self.by_name(n.replicate)
                if master is None:
                    self.warn("*** WARNING: %s:%d claims to be slave of unknown node ID %s.\n"
                              % (n.ip, n.port, n.replicate))
                else:
                    master.replicas_count += 1
        return True

    # -- printing --------------------------------------------------------
    @staticmethod
    def flag_string(node):
        return ",".join(f for f in (node.flags_str or ()) if f != "myself")

    @staticmethod
    def slots_string(slots):
        out_ = []
        i = 0
        while i < SLOTS:
            if slots[i]:
                j = i
                while j + 1 < SLOTS and slots[j + 1]:
                    j += 1
                out_.append("[%d]" % i if i == j else "[%d-%d]" % (i, j))
                i = j + 1
            else:
                i += 1
        return ",".join(out_)

    def node_description(self, node, indent=0):
        sp = " " * indent
        role = "S" if node.is_slave else "M"
        if node.dirty and node.replicate is not None:
            s = "%sS: %s %s:%d" % (sp, node.name, node.ip, node.port)
        else:
            s = "%s%s: %s %s:%d\n%s   slots:%s (%d slots) %s" % (
                sp, role, node.name, node.ip, node.port, sp, self.slots_string(node.slots),
                node.slots_count, self.flag_string(node))
        if node.replicate is not None:
            s += "\n%s   replicates %s" % (sp, node.replicate)
        elif node.replicas_count:
            s += "\n%s   %d additional replica(s)" % (sp, node.replicas_count)
        return s

    def show_nodes(self):
        for n in self.nodes:
            out(self.node_description(n) + "\n")

    def show_cluster_info(self):
        masters = keys = 0
        for node in self.nodes:
            if node.is_slave or not node.name:
                continue
            replicas = sum(1 for n in self.nodes if n is not node and n.is_slave
                           and n.replicate and n.replicate == node.name)
            r = node.command("DBSIZE")
            if r is None or r.kind != resp.INTEGER:
                self.print_reply_error(node, r.value if r is not None and r.is_error else "")
                return
            dbsize = r.value
            out("%s:%d (%s...) -> %d keys | %d slots | %d slaves.\n"
                % (node.ip, node.port, node.name[:8], dbsize, node.slots_count, replicas))
            masters += 1
            keys += dbsize
        self.ok("[OK] %d keys in %d masters.\n" % (keys, masters))
        out("%.2f keys per slot on average.\n" % f32(keys / f32(SLOTS)))

    # -- slot commands -----------------------------------------------------
    def set_slot(self, n1, n2, slot, status, want_err=False):
        r = n1.command("CLUSTER", "SETSLOT", str(slot), status, n2.name)
        if r is None:
            return False, "CLUSTER SETSLOT failed to run"
        if r.is_error:
            if not want_err:
                self.print_reply_error(n1, r.value)
            return False, decode(r.value)
        return True, None

    def clear_slot_status(self, node, slot):
        return self.check_reply(node, node.command("CLUSTER", "SETSLOT", str(slot), "STABLE"))[0]

    def slot_owner(self, n, slot):
        """The owner of ``slot`` according to n's CLUSTER SLOTS: (node or
        None, error text)."""
        r = n.command("CLUSTER", "SLOTS")
        ok, e = self.check_reply(n, r, want_err=True)
        if not ok:
            return None, e
        for rng in r.value:
            f, t = rng.value[0].value, rng.value[1].value
            if slot < f or slot > t:
                continue
            nr = rng.value[2].value
            owner = None
            if len(nr) >= 3:
                owner = self.by_name(decode(nr[2].value))
            else:
                ip, port = decode(nr[0].value), nr[1].value
                owner = next((x for x in self.nodes if x.ip == ip and x.port == port), None)
            if owner:
                return owner, None
        return None, None

    def slot_unassigned(self, node, slot):
        """True when ``node`` knows no owner of ``slot`` (its CLUSTER SLOTS
        error, if any, is printed)."""
        owner, e = self.slot_owner(node, slot)
        if owner is None and e is not None:
            self.print_reply_error(node, e)
        return owner is None and e is None

    def del_slot(self, node, slot, ignore_unassigned):
        r = node.command("CLUSTER", "DELSLOTS", str(slot))
        ok, e = self.check_reply(node, r, want_err=True)
        if not ok and r is not None and r.is_error and ignore_unassigned:
            ok = self.slot_unassigned(node, slot)
        if not ok and e is not None:
            self.print_reply_error(node, e)
        return ok

    def count_keys_in_slot(self, node, slot):
        r = node.command("CLUSTER", "COUNTKEYSINSLOT", str(slot))
        ok, _e = self.check_reply(node, r)
        return r.value if ok and r.kind == resp.INTEGER else -1

    def set_slot_owner(self, owner, slot, do_clear):
        """In one MULTI: DELSLOTS (ignoring "unassigned"), ADDSLOTS, maybe
        SETSLOT STABLE, BUMPEPOCH; only the ADDSLOTS error counts."""
        if not self.check_reply(owner, owner.command("MULTI"))[0]:
            return False
        self.del_slot(owner, slot, True)
        self.check_reply(owner, owner.command("CLUSTER", "ADDSLOTS", str(slot)))
        if do_clear:
            self.clear_slot_status(owner, slot)
        self.check_reply(owner, owner.command("CLUSTER", "BUMPEPOCH"))
        r = owner.command("EXEC")
        ok, _e = self.check_reply(owner, r)
        if not ok:
            return False
        if r.kind != resp.ARRAY:
            return False
        for i, x in enumerate(r.value):
            if x.is_error and i == 1:
                self.print_reply_error(owner, x.value)
                return False
        return True

    # -- moving keys -------------------------------------------------------
    def compare_keys_values(self, n1, n2, keys, diffs):
        zero = b"0" * 40
        r1 = n1.command("DEBUG", "DIGEST-VALUE", *keys)
        if r1 is None:
            return False
        r2 = n2.command("DEBUG", "DIGEST-VALUE", *keys)
        if r2 is None:
            return False
        ok = True
        if r1.is_error:
            self.print_reply_error(n1, r1.value)
            ok = False
        if r2.is_error:
            self.print_reply_error(n2, r2.value)
            ok = False
        if not ok:
            return False
        for k, h1, h2 in zip(keys, r1.value, r2.value):
            if h1.value == zero or h2.value == zero:
                continue
            if h1.value != h2.value:
                diffs.append(k)
        return True

    def migrate_keys(self, source, target, keys, replace, timeout):
        args = ["MIGRATE", target.ip, str(target.port), "", "0", str(timeout)]
        if replace:
            args.append("REPLACE")
        c = self.cfg
        if c.auth is not None:
            args += ["AUTH2", c.user, c.auth] if c.user else ["AUTH", c.auth]
        args.append("KEYS")
        return source.command(*(args + list(keys)))

    def migrate_keys_in_slot(self, source, target, slot, timeout, pipeline, verbose):
        """Returns (ok, error text)."""
        o = self.opts
        while True:
            r = source.command("CLUSTER", "GETKEYSINSLOT", str(slot), str(pipeline))
            if r is None:
                return False, None
            if r.is_error:
                e = decode(r.value)
                self.print_reply_error(source, e)
                return False, e
            keys = [x.value for x in r.value]
            if not keys:
                return True, None
            m = self.migrate_keys(source, target, keys, False, timeout)
            if m is None:
                return False, None
            if m.is_error:
                is_busy = b"BUSYKEY" in m.value
                not_served = not is_busy and self.slot_unassigned(source, slot)
                if not (is_busy or not_served):
                    out("\n")
                    self.print_reply_error(source, m.value)
                    return False, decode(m.value)
                if o.fix and not_served:
                    self.warn("*** Slot was not served, setting owner to node %s:%d.\n"
                              % (target.ip, target.port))
                    self.set_slot(source, target, slot, "node")
                if is_busy:
                    self.warn("\n*** Target key exists\n")
                    if not o.replace:
                        self.warn("*** Checking key values on both nodes...\n")
                        diffs = []
                        if not self.compare_keys_values(source, target, keys, diffs):
                            self.error("*** Value check failed!\n")
                            return False, None
                        if diffs:
                            self.error("*** Found %d key(s) in both source node and target node having "
                                       "different values.\n    Source node: %s:%d\n    Target node: %s:%d\n"
                                       "    Keys(s):\n" % (len(diffs), source.ip, source.port,
                                                           target.ip, target.port))
                            for k in diffs:
                                self.error("    - %s\n" % decode(k))
                            self.error("Please fix the above key(s) manually and try again or relaunch "
                                       "the command \nwith --cluster-replace option to force key "
                                       "overriding.\n")
                            return False, None
                    self.warn("*** Replacing target keys...\n")
                m = self.migrate_keys(source, target, keys, is_busy, timeout)
                if m is None or m.is_error:
                    if m is not None:
                        out("\n")
                        self.print_reply_error(source, m.value)
                        return False, decode(m.value)
                    return False, None
            if verbose:
                out("." * len(keys))
                flush()

    def move_slot(self, source, target, slot, opts):
        """clusterManagerMoveSlot: (ok, error text)."""
        if not opts & OPT_QUIET:
            out("Moving slot %d from %s:%d to %s:%d: " % (slot, source.ip, source.port, target.ip, target.port))
            flush()
        cold = opts & OPT_COLD
        if not cold:
            ok, e = self.set_slot(target, source, slot, "importing", want_err=True)
            if not ok:
                return False, e
            ok, e = self.set_slot(source, target, slot, "migrating", want_err=True)
            if not ok:
                return False, e
        ok, e = self.migrate_keys_in_slot(source, target, slot, self.opts.timeout, self.opts.pipeline,
                                          opts & OPT_VERBOSE)
        if not opts & OPT_QUIET:
            out("\n")
        if not ok:
            return False, e
        if not cold:
            ok, e = self.set_slot(target, target, slot, "node", want_err=True)
            if not ok:
                return False, e
            ok, e = self.set_slot(source, target, slot, "node", want_err=True)
            if not ok and e and not e.startswith("ERR Please use SETSLOT only with masters."):
                return False, e
            for n in self.nodes:
                if n is target or n is source or n.is_slave:
                    continue
                ok, e = self.set_slot(n, target, slot, "node", want_err=True)
                if not ok:
                    return False, e
        if opts & OPT_UPDATE:
            source.slots[slot] = 0
            target.slots[slot] = 1
        return True, None

    def move_slots_atomic(self, source, target, slots, opts):
        """The slots (sorted, all the source's) go to target by one CLUSTER
        MIGRATION IMPORT sent to it, then its task is followed (CLUSTER
        MIGRATION STATUS) to the end: (ok, error text).  A failed task is
        cancelled (the server would retry it)."""
        ranges = []
        for s in slots:
            if ranges and ranges[-1][1] == s - 1:
                ranges[-1][1] = s
            else:
                ranges.append([s, s])
        text = " ".join("%d-%d" % (a, b) for a, b in ranges)
        if not opts & OPT_QUIET:
            out("Moving slots %s from %s:%d to %s:%d: " % (text, source.ip, source.port, target.ip, target.port))
            flush()
        r = target.command("CLUSTER", "MIGRATION", "IMPORT", *[str(x) for r in ranges for x in r])
        if r is None:
            return False, "CLUSTER MIGRATION IMPORT failed to run"
        if r.is_error:
            return False, decode(r.value)
        task = decode(r.value)
        while True:
            r = target.command("CLUSTER", "MIGRATION", "STATUS", "ID", task)
            if r is None:
                return False, "CLUSTER MIGRATION STATUS failed to run"
            if r.is_error:
                return False, decode(r.value)
            if not r.value:
                return False, "slot migration task %s not found" % task
            row = r.value[0].value
            fields = {decode(row[i].value): row[i + 1].value for i in range(0, len(row) - 1, 2)}
            state = decode(fields.get("state", b""))
            if state == "completed":
                break
            if state in ("failed", "canceled"):
                target.command("CLUSTER", "MIGRATION", "CANCEL", "ID", task)
                return False, "slot migration %s %s: %s" % (task, state, decode(fields.get("last_error", b"")))
            time.sleep(0.05)
        if not opts & OPT_QUIET:
            out("OK\n")
        if opts & OPT_UPDATE:
            for s in slots:
                source.slots[s] = 0
                target.slots[s] = 1
        return True, None

    # -- configuration consistency ----------------------------------------
    @staticmethod
    def config_signature(node):
        r = node.command("CLUSTER", "NODES")
        if r is None or r.is_error:
            return None
        configs = []
        for line in decode(r.value).split("\n")[:-1]:
            parts = line.split(" ")
            if len(parts) <= 8:
                continue
            slots = [s for s in parts[8:] if s and not s.startswith("[")]
            if not "".join(parts[8:]):
                continue
            if slots:
                configs.append(parts[0] + ":" + ",".join(sorted(slots)))
        if not configs:
            return None
        return "|".join(sorted(configs))

    def is_config_consistent(self):
        if len(self.nodes) <= 1:
            return True
        first = None
        for n in self.nodes:
            sig = self.config_signature(n)
            if sig is None:
                return False
            if first is None:
                first = sig
            elif sig != first:
                return False
        return True

    def link_status(self):
        """{unreachable address: [addresses that cannot reach it]}."""
        status = {}
        for node in self.nodes:
            r = node.command("CLUSTER", "NODES")
            if r is None or r.is_error:
                continue
            for line in decode(r.value).split("\n")[:-1]:
                parts = line.split(" ")
                if len(parts) < 8:
                    continue
                flags, link = parts[2], parts[7]
                if "myself" in flags:
                    continue
                if "disconnected" in flags or "disconnected" in link or "handshake" in flags:
                    status.setdefault(parts[1], []).append("%s:%d" % (node.ip, node.port))
        return status

    def wait_for_cluster_join(self):
        out("Waiting for the cluster to join\n")
        counter = 0
        check_after = JOIN_CHECK_AFTER + int(len(self.nodes) * f32(0.15))
        while not self.is_config_consistent():
            out(".")
            flush()
            time.sleep(1)
            counter += 1
            if counter > check_after:
                status = self.link_status()
                if status:
                    out("\n")
                    self.error("Warning: %d node(s) may be unreachable\n" % len(status))
                    for addr, froms in status.items():
                        a = parse_address(addr)
                        if a is not None and a[2]:
                            self.error(" - The port %d of node %s may be unreachable from:\n" % (a[2], a[0]))
                        else:
                            self.error(" - Node %s may be unreachable from:\n" % addr)
                        for f in froms:
                            self.error("   %s\n" % f)
                        self.error("Cluster bus ports must be reachable by every node.\nRemember that "
                                   "cluster bus ports are different from standard instance ports.\n")
                counter = 0
        out("\n")

    def flush_node_config(self, node):
        """Send a node its planned role: CLUSTER REPLICATE for replicas,
        ADDSLOTS for masters.  Returns (ok, error text)."""
        if not node.dirty:
            return False, None
        if node.replicate is not None:
            r = node.command("CLUSTER", "REPLICATE", node.replicate)
            if r is None or r.is_error:
                # The replica may not know its master yet: stay dirty.
                return False, decode(r.value) if r is not None else None
        else:
            slots = [str(i) for i in range(SLOTS) if node.slots[i]]
            ok, e = False, None
            if slots:
                r = node.command("CLUSTER", "ADDSLOTS", *slots)
                ok, e = self.check_reply(node, r, want_err=True)
            if not ok or e is not None:
                node.dirty = False
                return False, e
        node.dirty = False
        return True, None

    # -- choosing nodes, asking -----------------------------------------------
    def masters(self):
        return [n for n in self.nodes if not n.is_slave]

    def node_with_least_replicas(self):
        best = None
        for n in self.nodes:
            if n.is_slave:
                continue
            if best is None or n.replicas_count < best.replicas_count:
                best = n
        return best

    def confirm(self, msg, ignore_force):
        if not ignore_force and self.opts.yes:
            return True
        out("%s (type 'yes' to accept): " % msg)
        flush()
        return read_answer(4)[:3] == b"yes"

    def close(self):
        for n in self.nodes:
            if n.conn is not None:
                n.conn.close()

