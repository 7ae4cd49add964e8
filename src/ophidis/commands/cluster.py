"""CLUSTER and its subcommands, ASKING, READONLY, READWRITE and
RESTORE-ASKING (cluster.c's clusterCommand and friends).  The state they
read and change is the server's ``cluster`` subsystem (cluster/)."""

from __future__ import annotations

import os

from .. import log
from ..cluster import SLOTS, TODO_FSYNC_CONFIG, TODO_SAVE_CONFIG, TODO_UPDATE_STATE, key_hash_slot
from ..cluster import slot_stats
from ..cluster.asm import check_ranges
from ..cluster.node import MYSELF, who
from ..cmdtable.registry import command
from ..errors import NOT_INT, SYNTAX, RedisError
from ..memory.sizes import keys_cost
from ..protocol.resp import OK, array_header, bulk, integer, map_header, null, verbatim
from ..util import parse_int, try_int
from .persistence import restore
from .streams import help_reply

DISABLED = RedisError("ERR This instance has cluster support disabled")



def _cluster(c):
    cl = c.server.cluster
    if cl is None:
        raise DISABLED
    return cl


def _syntax(argv):
    return RedisError("ERR unknown subcommand or wrong number of arguments for '%s'. Try CLUSTER HELP." %
                      argv[1].decode("utf-8", "replace")[:128])


def _ll(b: bytes) -> int:
    return parse_int(b, NOT_INT)


def _slot(b: bytes) -> int:
    v = try_int(b)
    if v is None or not 0 <= v < SLOTS:
        raise RedisError("ERR Invalid or out of range slot")
    return v


def _known(cl, name: bytes):
    n = cl.lookup(name)
    if n is None:
        raise RedisError("ERR Unknown node %s" % name.decode("utf-8", "replace"))
    return n


def _text(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


@command("cluster|help")
def cluster_help(c, argv):
    _cluster(c)
    return help_reply(b"CLUSTER", b"""\
ADDSLOTS <slot> [<slot> ...]
    Assign slots to current node.
ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]
    Assign slots which are between <start-slot> and <end-slot> to current node.
BUMPEPOCH
    Advance the cluster config epoch.
COUNT-FAILURE-REPORTS <node-id>
    Return number of failure reports for <node-id>.
COUNTKEYSINSLOT <slot>
    Return the number of keys in <slot>.
DELSLOTS <slot> [<slot> ...]
    Delete slots information from current node.
DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]
    Delete slots information which are between <start-slot> and <end-slot> from current node.
FAILOVER [FORCE|TAKEOVER]
    Promote current replica node to being a master.
FORGET <node-id>
    Remove a node from the cluster.
GETKEYSINSLOT <slot> <count>
    Return key names stored by current node in a slot.
FLUSHSLOTS
    Delete current node own slots information.
INFO
    Return information about the cluster.
KEYSLOT <key>
    Return the hash slot for <key>.
MEET <ip> <port> [<bus-port>]
    Connect nodes into a working cluster.
MYID
    Return the node id.
MYSHARDID
    Return the id of the node's shard.
NODES
    Return cluster configuration seen by node. Output format:
    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...
REPLICATE <node-id>
    Configure current node as replica to <node-id>.
RESET [HARD|SOFT]
    Reset current node (default: soft).
SET-CONFIG-EPOCH <epoch>
    Set config epoch of current node.
SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)
    Set slot state.
REPLICAS <node-id>
    Return <node-id> replicas.
SAVECONFIG
    Force saving cluster configuration on disk.
SLOTS
    Return information about slots range mappings. Each range is made of:
    start, end, master and replicas IP addresses, ports and ids
SHARDS
    Return information about slot range mappings and the nodes associated with them.
SLOT-STATS SLOTSRANGE <start slot> <end slot> | ORDERBY <metric> [LIMIT <limit>] [ASC|DESC]
    Return usage statistics of the slots served by the node's shard.
LINKS
    Return information about all network links between this node and its peers.
    Output format is an array where each array element is a map containing attributes of a link
""")


@command("cluster|meet")
def cluster_meet(c, argv):
    cl = _cluster(c)
    if len(argv) not in (4, 5):
        raise _syntax(argv)
    port = try_int(argv[3])
    if port is None:
        raise RedisError("ERR Invalid TCP base port specified: %s" % argv[3].decode("utf-8", "replace"))
    if len(argv) == 5:
        cport = try_int(argv[4])
        if cport is None:
            raise RedisError("ERR Invalid TCP bus port specified: %s" % argv[4].decode("utf-8", "replace"))
    else:
        cport = port + 10000
    if cl.start_handshake(argv[2].decode("utf-8", "replace"), port, cport) == "EINVAL":
        raise RedisError("ERR Invalid node address specified: %s:%s" % (
            argv[2].decode("utf-8", "replace"), argv[3].decode("utf-8", "replace")))
    return OK


@command("cluster|nodes")
def cluster_nodes(c, argv):
    cl = _cluster(c)
    return verbatim(c.resp, _text(cl.describe_nodes(use_pport=cl.use_pport(c))))


@command("cluster|myid")
def cluster_myid(c, argv):
    return bulk(_cluster(c).myself.name)


@command("cluster|myshardid")
def cluster_myshardid(c, argv):
    return bulk(_cluster(c).myself.shard_id)


def _replica_available(cl, n) -> bool:
    if n.failed:
        return False
    off = cl.repl_offset() if n.flags & MYSELF else n.repl_offset
    return off != 0


def _node_reply(c, cl, n) -> bytes:
    """addNodeToNodeReply."""
    t = c.server.config["cluster-preferred-endpoint-type"]
    if t == "ip":
        out = [bulk(_text(n.ip))]
    elif t == "hostname":
        out = [bulk(_text(n.hostname or "?"))]
    else:
        out = [null(c.resp)]
    out.append(integer(n.pport if n.pport and cl.use_pport(c) else n.port))
    out.append(bulk(n.name))
    extra = []
    if t != "ip":
        extra += [bulk(b"ip"), bulk(_text(n.ip))]
    if t != "hostname" and n.hostname:
        extra += [bulk(b"hostname"), bulk(_text(n.hostname))]
    out.append(map_header(c.resp, len(extra) // 2) + b"".join(extra))
    return array_header(4) + b"".join(out)


def _ranges(cl):
    """(start, end, owner) of consecutive slots with the same owner."""
    out = []
    slots = cl.slots
    start = 0
    cur = slots[0]
    for i in range(1, SLOTS + 1):
        n = slots[i] if i < SLOTS else None
        if i == SLOTS or n is not cur:
            if cur is not None:
                out.append((start, i - 1, cur))
            start = i
            cur = n
    return out


@command("cluster|slots")
def cluster_slots(c, argv):
    cl = _cluster(c)
    parts = []
    for start, end, n in _ranges(cl):
        reps = [s for s in n.slaves if _replica_available(cl, s)]
        parts.append(array_header(3 + len(reps)) + integer(start) + integer(end) + _node_reply(c, cl, n) +
                     b"".join(_node_reply(c, cl, s) for s in reps))
    return array_header(len(parts)) + b"".join(parts)


def _shard_node(c, cl, n) -> bytes:
    fields = [(b"id", bulk(n.name))]
    plain, tlsport = n.ports(cl)
    if plain:
        fields.append((b"port", integer(plain)))
    if tlsport:
        fields.append((b"tls-port", integer(tlsport)))
    fields.append((b"ip", bulk(_text(n.ip))))
    fields.append((b"endpoint", bulk(_text(cl.preferred_endpoint(n)))))
    if n.hostname:
        fields.append((b"hostname", bulk(_text(n.hostname))))
    if n.flags & MYSELF:
        off = cl.repl_offset() if n.is_slave else c.server.repl_feed.offset
    else:
        off = n.repl_offset
    fields.append((b"role", bulk(b"replica" if n.is_slave else b"master")))
    fields.append((b"replication-offset", integer(off)))
    health = b"fail" if n.failed else (b"loading" if n.is_slave and off == 0 else b"online")
    fields.append((b"health", bulk(health)))
    return map_header(c.resp, len(fields)) + b"".join(bulk(k) + v for k, v in fields)


@command("cluster|shards")
def cluster_shards(c, argv):
    """The shards by shard id (Redis 7.2): a shard's slots are those of
    its first node's master."""
    cl = _cluster(c)
    by_node: dict = {}
    for start, end, n in _ranges(cl):
        by_node.setdefault(n, []).extend((start, end))
    parts = []
    for nodes in cl.shards():
        first = nodes[0]
        master = first.slaveof if (first.is_slave and first.slaveof is not None) else first
        pairs = by_node.get(master, [])
        parts.append(map_header(c.resp, 2) + bulk(b"slots") + array_header(len(pairs)) +
                     b"".join(integer(x) for x in pairs) + bulk(b"nodes") + array_header(len(nodes)) +
                     b"".join(_shard_node(c, cl, x) for x in nodes))
    return array_header(len(parts)) + b"".join(parts)


def _slot_stat(c, cl, slot: int, metric: str) -> int:
    if metric == slot_stats.KEY_COUNT:
        return cl.count_keys_in_slot(slot)
    if metric == slot_stats.MEMORY_BYTES:
        db = c.server.dbs[0]
        return keys_cost(db, db.d.keys_in_slot(slot, db.d.count_in_slot(slot)))
    return cl.slot_stats.value(metric, slot)


def _slot_stats_entry(c, cl, slot: int) -> bytes:
    """[slot, {metric: value}]: key-count and memory-bytes, then the
    accumulated metrics while cluster-slot-stats-enabled is yes."""
    metrics = slot_stats.METRICS if cl.slot_stats_on else slot_stats.METRICS[:slot_stats.ALWAYS]
    return (array_header(2) + integer(slot) + map_header(c.resp, len(metrics)) +
            b"".join(bulk(m.encode()) + integer(_slot_stat(c, cl, slot, m)) for m in metrics))


@command("cluster|slot-stats")
def cluster_slot_stats(c, argv):
    """CLUSTER SLOT-STATS SLOTSRANGE start end | ORDERBY metric [LIMIT n]
    [ASC|DESC]: the slots of our shard (our master's when a replica)."""
    cl = _cluster(c)
    m = cl.myself
    owner = m.slaveof if (m.is_slave and m.slaveof is not None) else m
    opt = argv[2].lower()
    if len(argv) == 5 and opt == b"slotsrange":
        start = _slot(argv[3])
        end = _slot(argv[4])
        if start > end:
            raise RedisError("ERR Start slot number %d is greater than end slot number %d" % (start, end))
        slots = [s for s in range(start, end + 1) if owner.has_slot(s)]
    elif len(argv) >= 4 and opt == b"orderby":
        metric = argv[3].decode("utf-8", "replace").lower()
        if metric not in slot_stats.METRICS or (
                metric != slot_stats.KEY_COUNT and not cl.slot_stats_on):
            raise RedisError("ERR Unrecognized sort metric for ORDERBY.")
        desc = True
        limit = SLOTS
        limits = orders = 0
        i = 4
        while i < len(argv):
            a = argv[i].lower()
            if a == b"limit" and i + 1 < len(argv):
                limit = try_int(argv[i + 1])
                if limit is None or not 1 <= limit <= SLOTS:
                    raise RedisError("ERR Limit has to lie in between 1 and 16384 (maximum number of slots).")
                i += 1
                limits += 1
            elif a == b"asc" or a == b"desc":
                desc = a == b"desc"
                orders += 1
            else:
                raise SYNTAX
            if limits > 1 or orders > 1:
                raise RedisError("ERR Multiple filters of the same type are disallowed.")
            i += 1
        values = [(_slot_stat(c, cl, s, metric), s) for s in owner.slot_list()]
        # ties: the lower slot first, either way
        values.sort(key=(lambda t: (-t[0], t[1])) if desc else None)
        slots = [s for _, s in values[:limit]]
    else:
        raise _syntax(argv)
    return array_header(len(slots)) + b"".join(_slot_stats_entry(c, cl, s) for s in slots)


@command("cluster|flushslots")
def cluster_flushslots(c, argv):
    cl = _cluster(c)
    if c.server.dbs[0].d:
        raise RedisError("ERR DB must be empty to perform CLUSTER FLUSHSLOTS.")
    cl.del_node_slots(cl.myself)
    cl.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)
    return OK


def _check_assign(cl, seen, delete, start, end):
    for s in range(start, end + 1):
        if delete and cl.slots[s] is None:
            raise RedisError("ERR Slot %d is already unassigned" % s)
        if not delete and cl.slots[s] is not None:
            raise RedisError("ERR Slot %d is already busy" % s)
        if s in seen:
            raise RedisError("ERR Slot %d specified multiple times" % s)
        seen.add(s)


def _update_slots(cl, slots, delete):
    for s in sorted(slots):
        cl.importing.pop(s, None)
        if delete:
            cl.del_slot(s)
        else:
            cl.add_slot(cl.myself, s)
    cl.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)


@command("cluster|addslots")
@command("cluster|delslots")
def cluster_addslots(c, argv):
    cl = _cluster(c)
    delete = argv[1].lower() == b"delslots"
    slots = [_slot(a) for a in argv[2:]]
    seen = set()
    for s in slots:
        _check_assign(cl, seen, delete, s, s)
    _update_slots(cl, seen, delete)
    return OK


@command("cluster|addslotsrange")
@command("cluster|delslotsrange")
def cluster_addslotsrange(c, argv):
    cl = _cluster(c)
    delete = argv[1].lower() == b"delslotsrange"
    if len(argv) % 2 == 1:
        raise RedisError("ERR wrong number of arguments for '%s' command" % ("cluster|" + argv[1].decode(
            "utf-8", "replace").lower()))
    seen = set()
    for j in range(2, len(argv), 2):
        start = _slot(argv[j])
        end = _slot(argv[j + 1])
        if start > end:
            raise RedisError("ERR start slot number %d is greater than end slot number %d" % (start, end))
        _check_assign(cl, seen, delete, start, end)
    _update_slots(cl, seen, delete)
    return OK


def _open_slot_peer(cl, name: bytes):
    """The master a slot migrates to or is imported from (SETSLOT
    MIGRATING / IMPORTING)."""
    node = cl.lookup(name)
    if node is None:
        raise RedisError("ERR I don't know about node %s" % name.decode("utf-8", "replace"))
    if node.is_slave:
        raise RedisError("ERR Target node is not a master")
    return node


@command("cluster|setslot")
def cluster_setslot(c, argv):
    cl = _cluster(c)
    m = cl.myself
    if m.is_slave:
        raise RedisError("ERR Please use SETSLOT only with masters.")
    slot = _slot(argv[2])
    action = argv[3].lower()
    n = len(argv)
    if action == b"migrating" and n == 5:
        if cl.slots[slot] is not m:
            raise RedisError("ERR I'm not the owner of hash slot %d" % slot)
        cl.migrating[slot] = _open_slot_peer(cl, argv[4])
    elif action == b"importing" and n == 5:
        if cl.slots[slot] is m:
            raise RedisError("ERR I'm already the owner of hash slot %d" % slot)
        cl.importing[slot] = _open_slot_peer(cl, argv[4])
    elif action == b"stable" and n == 4:
        cl.importing.pop(slot, None)
        cl.migrating.pop(slot, None)
    elif action == b"node" and n == 5:
        node = cl.lookup(argv[4])
        if node is None:
            raise RedisError("ERR Unknown node %s" % argv[4].decode("utf-8", "replace"))
        if node.is_slave:
            raise RedisError("ERR Target node is not a master")
        if cl.slots[slot] is m and node is not m and cl.count_keys_in_slot(slot):
            raise RedisError("ERR Can't assign hashslot %d to a different node while I still hold keys for "
                             "this hash slot." % slot)
        if cl.count_keys_in_slot(slot) == 0 and slot in cl.migrating:
            del cl.migrating[slot]
        was_mine = cl.slots[slot] is m
        cl.del_slot(slot)
        cl.add_slot(node, slot)
        if was_mine and node is not m and m.numslots == 0 and c.server.config["cluster-allow-replica-migration"]:
            log.warning("Configuration change detected. Reconfiguring myself as a replica of %s" % who(node))
            cl.set_master(node)
            cl.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_FSYNC_CONFIG)
        if node is m and slot in cl.importing:
            if cl.bump_epoch_without_consensus():
                log.warning("configEpoch updated after importing slot %d" % slot)
            del cl.importing[slot]
            cl.broadcast_pong()
    else:
        raise RedisError("ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP")
    cl.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE)
    return OK


@command("cluster|bumpepoch")
def cluster_bumpepoch(c, argv):
    cl = _cluster(c)
    ok = cl.bump_epoch_without_consensus()
    return b"+%s %d\r\n" % (b"BUMPED" if ok else b"STILL", cl.myself.config_epoch)


@command("cluster|info")
def cluster_info(c, argv):
    return verbatim(c.resp, _cluster(c).info_text().encode())


@command("cluster|saveconfig")
def cluster_saveconfig(c, argv):
    if _cluster(c).save_config(True):
        return OK
    raise RedisError("ERR error saving the cluster node config: %s" % os.strerror(2))


@command("cluster|keyslot")
def cluster_keyslot(c, argv):
    _cluster(c)
    return integer(key_hash_slot(argv[2]))


@command("cluster|countkeysinslot")
def cluster_countkeysinslot(c, argv):
    cl = _cluster(c)
    slot = _ll(argv[2])
    if not 0 <= slot < SLOTS:
        raise RedisError("ERR Invalid slot")
    return integer(cl.count_keys_in_slot(slot))


@command("cluster|getkeysinslot")
def cluster_getkeysinslot(c, argv):
    _cluster(c)
    slot = _ll(argv[2])
    count = _ll(argv[3])
    if not 0 <= slot < SLOTS or count < 0:
        raise RedisError("ERR Invalid slot or number of keys")
    d = c.server.dbs[0].d
    keys = d.keys_in_slot(slot, min(count, d.count_in_slot(slot)))
    return array_header(len(keys)) + b"".join(bulk(k) for k in keys)


@command("cluster|forget")
def cluster_forget(c, argv):
    cl = _cluster(c)
    n = _known(cl, argv[2])
    m = cl.myself
    if n is m:
        raise RedisError("ERR I tried hard but I can't forget myself...")
    if m.is_slave and m.slaveof is n:
        raise RedisError("ERR Can't forget my master!")
    cl.blacklist_add(n.name)
    cl.del_node(n)
    cl.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)
    return OK


@command("cluster|replicate")
def cluster_replicate(c, argv):
    cl = _cluster(c)
    n = _known(cl, argv[2])
    m = cl.myself
    if n is m:
        raise RedisError("ERR Can't replicate myself")
    if n.is_slave:
        raise RedisError("ERR I can only replicate a master, not a replica.")
    if m.is_master and (m.numslots != 0 or c.server.dbs[0].d):
        raise RedisError("ERR To set a master the node must be empty and without assigned slots.")
    cl.set_master(n)
    cl.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)
    return OK


@command("cluster|slaves")      # an alias, as in Redis's command table
@command("cluster|replicas")
def cluster_replicas(c, argv):
    cl = _cluster(c)
    n = _known(cl, argv[2])
    if n.is_slave:
        raise RedisError("ERR The specified node is not a master")
    pp = cl.use_pport(c)
    return array_header(len(n.slaves)) + b"".join(bulk(_text(s.describe(cl, pp))) for s in n.slaves)


@command("cluster|count-failure-reports")
def cluster_count_failure_reports(c, argv):
    cl = _cluster(c)
    n = _known(cl, argv[2])
    return integer(cl.failure_reports_count(n))


@command("cluster|failover")
def cluster_failover(c, argv):
    cl = _cluster(c)
    if len(argv) > 3:
        raise _syntax(argv)
    force = takeover = False
    if len(argv) == 3:
        opt = argv[2].lower()
        if opt == b"force":
            force = True
        elif opt == b"takeover":
            force = takeover = True
        else:
            raise SYNTAX
    m = cl.myself
    if m.is_master:
        raise RedisError("ERR You should send CLUSTER FAILOVER to a replica")
    if m.slaveof is None:
        raise RedisError("ERR I'm a replica but my master is unknown to me")
    if not force and (m.slaveof.failed or m.slaveof.link is None):
        raise RedisError("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE")
    cl.start_manual_failover(force, takeover)
    return OK


@command("cluster|set-config-epoch")
def cluster_set_config_epoch(c, argv):
    cl = _cluster(c)
    epoch = _ll(argv[2])
    m = cl.myself
    if epoch < 0:
        raise RedisError("ERR Invalid config epoch specified: %d" % epoch)
    if len(cl.nodes) > 1:
        raise RedisError("ERR The user can assign a config epoch only when the node does not know any other "
                         "node.")
    if m.config_epoch != 0:
        raise RedisError("ERR Node config epoch is already non-zero")
    m.config_epoch = epoch
    log.warning("configEpoch set to %d via CLUSTER SET-CONFIG-EPOCH" % epoch)
    if cl.current_epoch < epoch:
        cl.current_epoch = epoch
    cl.do_before_sleep(TODO_UPDATE_STATE | TODO_SAVE_CONFIG)
    return OK


@command("cluster|reset")
def cluster_reset(c, argv):
    cl = _cluster(c)
    if len(argv) > 3:
        raise _syntax(argv)
    hard = False
    if len(argv) == 3:
        opt = argv[2].lower()
        if opt == b"hard":
            hard = True
        elif opt != b"soft":
            raise SYNTAX
    if cl.myself.is_master and c.db.d:
        raise RedisError("ERR CLUSTER RESET can't be called with master nodes containing keys")
    cl.reset(hard)
    return OK


@command("cluster|links")
def cluster_links(c, argv):
    cl = _cluster(c)
    out = []
    for n in cl.nodes.values():
        for link in (n.link, n.inbound_link):
            if link is None:
                continue
            events = b"r" if link.transport is not None else b""
            if link.buffered():
                events += b"w"
            out.append(map_header(c.resp, 6) + bulk(b"direction") + bulk(b"from" if link.inbound else b"to") +
                       bulk(b"node") + bulk(n.name) + bulk(b"create-time") + integer(link.ctime) +
                       bulk(b"events") + bulk(events) + bulk(b"send-buffer-allocated") +
                       integer(link.buffered()) + bulk(b"send-buffer-used") + integer(link.buffered()))
    return array_header(len(out)) + b"".join(out)


def _arity(argv):
    return RedisError("ERR wrong number of arguments for 'cluster|%s' command" %
                      argv[1].decode("utf-8", "replace").lower())


def _slot_ranges(argv, pos) -> list:
    """parseSlotRangesOrReply: start/end pairs from argv[pos:], checked."""
    ranges = [(_slot(argv[j]), _slot(argv[j + 1])) for j in range(pos, len(argv), 2)]
    if not 0 < len(ranges) < SLOTS:
        raise RedisError("ERR invalid number of slot ranges: %d" % len(ranges))
    check_ranges(ranges)
    return ranges


def _status_reply(c, tasks) -> bytes:
    out = [array_header(len(tasks))]
    for t in tasks:
        fields = t.status()
        out.append(map_header(c.resp, len(fields)))
        for k, v in fields:
            out.append(bulk(k.encode()))
            out.append(integer(v) if v.__class__ is int else bulk(_text(v)))
    return b"".join(out)


@command("cluster|migration")
def cluster_migration(c, argv):
    """Redis 8.4's atomic slot migration (cluster/asm.py): IMPORT on the
    destination, STATUS and CANCEL on either side."""
    cl = _cluster(c)
    asm = cl.asm
    sub = argv[2].lower()
    n = len(argv)
    if sub == b"import":
        if (n - 3) % 2:
            raise _arity(argv)
        return bulk(asm.import_slots(_slot_ranges(argv, 3)).encode())
    if sub not in (b"status", b"cancel"):
        raise RedisError("ERR unknown argument")
    if n not in (4, 5):
        raise _arity(argv)
    opt = argv[3].lower()
    if opt == b"id":
        if n != 5:
            raise _arity(argv)
        task_id = argv[4].decode("utf-8", "surrogateescape")
    elif opt == b"all":
        if n != 4:
            raise _arity(argv)
        task_id = None
    else:
        raise RedisError("ERR unknown argument")
    if sub == b"cancel":
        return integer(asm.cancel(task_id))
    if task_id is None:
        return _status_reply(c, asm.tasks + asm.archived)
    t = asm.find(task_id)
    return _status_reply(c, [t] if t is not None else [])


@command("cluster|syncslots")
def cluster_syncslots(c, argv):
    """The slot migration's own requests between our nodes (cluster/asm.py):
    START <task-id> <dest-id> <start end>... on the source (the snapshot and
    the stream follow the reply), PAUSE <task-id> (the handoff), DONE
    <task-id> <epoch> (the destination took the slots)."""
    cl = _cluster(c)
    sub = argv[2].lower()
    n = len(argv)
    if sub == b"start" and n >= 7 and (n - 5) % 2 == 0:
        ranges = [(_slot(argv[j]), _slot(argv[j + 1])) for j in range(5, n, 2)]
        return cl.asm.syncslots_start(c, argv[3].decode("utf-8", "surrogateescape"),
                                      argv[4].decode("utf-8", "surrogateescape"), ranges)
    if sub == b"pause" and n == 4:
        return cl.asm.syncslots_pause(c, argv[3].decode("utf-8", "surrogateescape"))
    if sub == b"done" and n == 5:
        return cl.asm.syncslots_done(c, argv[3].decode("utf-8", "surrogateescape"), _ll(argv[4]))
    raise _syntax(argv)


@command("asking")
def asking(c, argv):
    _cluster(c)
    c.cluster_asking = True
    c.update_slow()          # the next command takes the general path (which clears the flag)
    return OK


@command("readonly")
def readonly(c, argv):
    _cluster(c)
    c.cluster_readonly = True
    return OK


@command("readwrite")
def readwrite(c, argv):
    _cluster(c)
    c.cluster_readonly = False
    return OK


@command("restore-asking", flags=("syscmd",))
def restore_asking(c, argv):
    return restore(c, argv)
