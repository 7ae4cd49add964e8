"""The subcommands of ``ophidis-cli --cluster`` (redis-cli 7.0's cluster
manager): create, check, info, fix, reshard, rebalance, add-node,
del-node, call, set-timeout, import, help.  ``run(cfg)`` runs the one the
command line names and returns the exit status (0 on success, 1 otherwise,
as redis-cli; ``help`` exits 1 too).
"""

from __future__ import annotations

import getpass
import math
import os
import random
import socket
import sys
import time

from ophidis.tools import resp
from ophidis.tools.cli.cluster import (INVALID_HOST_ARG, OPT_QUIET, OPT_UPDATE, OPT_VERBOSE, SLOTS, Node, decode,
                                       f32, host_from_args, info_field, lround, parse_address, read_answer)
from ophidis.tools.cli.cluster_check import Manager
from ophidis.tools.cli.output import err, flush, format_raw, out
from ophidis.tools.hashslot import key_hash_slot
from ophidis.tools.resp import ConnectionClosed, atof, atoi

# ---------------------------------------------------------------------------
# create
# ---------------------------------------------------------------------------


def anti_affinity_score(m, ipnodes, want_offenders=False):
    score = 0
    offenders = []
    for group in ipnodes:
        related = {}
        ip = group[0].ip if group else None
        for node in group:
            key = node.replicate if node.replicate else node.name
            types = related.get(key, "")
            related[key] = types + "s" if node.replicate else "m" + types
        for name, types in related.items():
            if len(types) < 2:
                continue
            score += 10000 * (len(types) - 1) if types[0] == "m" else len(types)
            if want_offenders:
                for n in m.nodes:
                    if n.replicate is not None and n.replicate == name and n.ip == ip:
                        offenders.append(n)
                        break
    return score, offenders


def optimize_anti_affinity(m, ipnodes):
    score, _ = anti_affinity_score(m, ipnodes)
    if score == 0:
        return
    m.info(">>> Trying to optimize slaves allocation for anti-affinity\n")
    maxiter = 500 * len(m.nodes)
    rnd = random.Random()
    while maxiter > 0:
        score, offenders = anti_affinity_score(m, ipnodes, True)
        if score == 0 or not offenders:
            break
        first = offenders[rnd.randrange(len(offenders))]
        others = [n for n in m.nodes if n is not first and n.replicate is not None]
        if not others:
            break
        second = others[rnd.randrange(len(others))]
        fm, sm = first.replicate, second.replicate
        first.replicate, second.replicate = sm, fm
        first.dirty = second.dirty = True
        if anti_affinity_score(m, ipnodes)[0] > score:
            first.replicate, second.replicate = fm, sm
        maxiter -= 1
    score, _ = anti_affinity_score(m, ipnodes)
    if score == 0:
        m.ok("[OK] Perfect anti-affinity obtained!\n")
    elif score >= 10000:
        m.warn("[WARNING] Some slaves are in the same host as their master\n")
    else:
        m.warn("[WARNING] Some slaves of the same master are in the same host\n")


def resolve(host):
    try:
        return socket.getaddrinfo(host, None, 0, socket.SOCK_STREAM)[0][4][0]
    except OSError:
        return None


def meet(m, node, first, first_ip):
    if first.bus_port == 0 or first.bus_port == first.port + 10000:
        return node.command("CLUSTER", "MEET", first_ip, str(first.port))
    return node.command("CLUSTER", "MEET", first_ip, str(first.port), str(first.bus_port))


def cmd_create(m, argv):
    for addr in argv:
        a = parse_address(addr)
        if a is None:
            err("Invalid address format: %s\n" % addr)
            return False
        node = Node(a[0], a[1])
        if not m.connect(node) or not m.check_new_node(node):
            return False
        m.nodes.append(node)
    node_len = len(m.nodes)
    replicas = m.opts.replicas
    masters_count = node_len // (replicas + 1)
    if masters_count < 3:
        m.error("*** ERROR: Invalid configuration for cluster creation.\n"
                "*** Redis Cluster requires at least 3 master nodes.\n"
                "*** This is not possible with %d nodes and %d replicas per node." % (node_len, replicas))
        m.error("\n*** At least %d nodes are required.\n" % (3 * (replicas + 1)))
        return False
    m.info(">>> Performing hash slots allocation on %d nodes...\n" % node_len)
    ips = []
    ipnodes = []
    for n in m.nodes:
        if n.ip not in ips:
            ips.append(n.ip)
            ipnodes.append([])
        ipnodes[ips.index(n.ip)].append(n)
    queues = [list(g) for g in ipnodes]
    interleaved = []
    while len(interleaved) < node_len:
        for q in queues:
            if q:
                interleaved.append(q.pop(0))
    masters = interleaved[:masters_count]
    rest = interleaved[masters_count:]
    slots_per_node = f32(SLOTS / f32(masters_count))
    first = 0
    cursor = 0.0
    for i, master in enumerate(masters):
        last = lround(f32(f32(cursor + slots_per_node) - 1))
        if last > SLOTS or i == masters_count - 1:
            last = SLOTS - 1
        if last < first:
            last = first
        out("Master[%d] -> Slots %d - %d\n" % (i, first, last))
        master.slots_count = 0
        for j in range(first, last + 1):
            master.slots[j] = 1
            master.slots_count += 1
        master.dirty = True
        first = last + 1
        cursor = f32(cursor + slots_per_node)
    # Rotating the list sometimes helps the initial anti-affinity.
    if rest:
        rest = rest[1:] + rest[:1]
    available = len(rest)
    pos = 0   # start of the unused part of ``rest`` (C's pointer moves)
    assign_unused = False
    while True:
        for master in masters:
            assigned = 0
            while assigned < replicas:
                if available == 0:
                    break
                found = None
                first_idx = -1
                for j in range(pos, len(rest)):
                    n = rest[j]
                    if n is None:
                        continue
                    if n.ip != master.ip:
                        found = n
                        rest[j] = None
                        break
                    if first_idx < 0:
                        first_idx = j
                slave = found
                if slave is None and first_idx >= 0:
                    slave = rest[first_idx]
                    pos = first_idx + 1
                if slave is None:
                    break
                assigned += 1
                available -= 1
                slave.replicate = master.name
                slave.dirty = True
                out("Adding replica %s:%d to %s:%d\n" % (slave.ip, slave.port, master.ip, master.port))
                if assign_unused:
                    break
        if not assign_unused and available > 0:
            assign_unused = True
            out("Adding extra replicas...\n")
            continue
        break
    optimize_anti_affinity(m, ipnodes)
    m.show_nodes()
    if not m.confirm("Can I set the above configuration?", False):
        return True
    for node in m.nodes:
        flushed, e = m.flush_node_config(node)
        if not flushed and node.dirty and not node.replicate:
            if e is not None:
                m.print_reply_error(node, e)
            return False
    m.info(">>> Nodes configuration updated\n")
    m.info(">>> Assign a different config epoch to each node\n")
    for epoch, node in enumerate(m.nodes, 1):
        node.command("CLUSTER", "SET-CONFIG-EPOCH", str(epoch))
    m.info(">>> Sending CLUSTER MEET messages to join the cluster\n")
    first = m.nodes[0]
    first_ip = resolve(first.ip)
    if first_ip is None:
        err("Invalid IP address or hostname specified: %s\n" % first.ip)
        return False
    for node in m.nodes[1:]:
        r = meet(m, node, first, first_ip)
        if r is None:
            err("Failed to send CLUSTER MEET command.\n")
            return False
        if r.is_error:
            m.print_reply_error(node, r.value)
            return False
    time.sleep(1)
    m.wait_for_cluster_join()
    for node in m.nodes:
        if not node.dirty:
            continue
        flushed, e = m.flush_node_config(node)
        if not flushed and not node.replicate:
            if e is not None:
                m.print_reply_error(node, e)
            return False
    first = m.nodes[0]
    for node in m.nodes[1:]:
        if node.conn is not None:
            node.conn.close()
    m.nodes = []
    if not m.load_info_from_node(first):
        return False
    m.check_cluster()
    return True

def _host_arg(args):
    """The node ``args`` name (host:port or host port); None, after
    redis-cli's invalid-arguments error, when they name none."""
    addr = host_from_args(args)
    if addr is None:
        err(INVALID_HOST_ARG)
    return addr


# ---------------------------------------------------------------------------
# add-node, del-node
# ---------------------------------------------------------------------------


def cmd_add_node(m, argv):
    ref = host_from_args(argv[1:])
    new = host_from_args(argv[:1])
    if ref is None or new is None:
        err(INVALID_HOST_ARG)
        return False
    ip, port = new
    m.info(">>> Adding node %s:%d to cluster %s:%d\n" % (ip, port, ref[0], ref[1]))
    refnode = Node(*ref)
    if not m.load_info_from_node(refnode):
        return False
    if not m.check_cluster():
        return False
    master = None
    if m.opts.slave:
        if m.opts.master_id is not None:
            master = m.by_name(m.opts.master_id)
            if master is None:
                m.error("[ERR] No such master ID %s\n" % m.opts.master_id)
                return False
        else:
            master = m.node_with_least_replicas()
            out("Automatically selected master %s:%d\n" % (master.ip, master.port))
    new_node = Node(ip, port)
    if not m.connect(new_node):
        m.error("[ERR] Sorry, can't connect to node %s:%d\n" % (ip, port))
        return False
    if not m.check_new_node(new_node):
        return False
    first = m.nodes[0]
    m.nodes.append(new_node)
    if master is None:
        m.info(">>> Getting functions from cluster\n")
        r = refnode.command("FUNCTION", "DUMP")
        ok, e = m.check_reply(refnode, r, want_err=True)
        if not ok:
            m.info(">>> Failed retrieving Functions from the cluster, skip this step as Redis version do "
                   "not support function command (error = '%s')\n" % (e if e else "NULL reply"))
        else:
            m.info(">>> Send FUNCTION LIST to %s:%d to verify there is no functions in it\n" % (ip, port))
            fl = new_node.command("FUNCTION", "LIST")
            ok, e = m.check_reply(new_node, fl, want_err=True)
            if not ok:
                m.error(">>> Failed on CLUSTER LIST (error = '%s')\r\n" % (e if e else "NULL reply"))
                return False
            if fl.value:
                m.error(">>> New node already contains functions and can not be added to the cluster. "
                        "Use FUNCTION FLUSH and try again.\r\n")
                return False
            m.info(">>> Send FUNCTION RESTORE to %s:%d\n" % (ip, port))
            fr = new_node.command("FUNCTION", "RESTORE", r.value)
            ok, e = m.check_reply(new_node, fr, want_err=True)
            if not ok:
                m.error(">>> Failed loading functions to the new node (error = '%s')\r\n"
                        % (e if e else "NULL reply"))
                return False
    m.info(">>> Send CLUSTER MEET to node %s:%d to make it join the cluster.\n" % (ip, port))
    first_ip = resolve(first.ip)
    if first_ip is None:
        err("Invalid IP address or hostname specified: %s\n" % first.ip)
        return False
    if not m.check_reply(new_node, meet(m, new_node, first, first_ip))[0]:
        return False
    if master is not None:
        time.sleep(1)
        m.wait_for_cluster_join()
        m.info(">>> Configure node as replica of %s:%d.\n" % (master.ip, master.port))
        if not m.check_reply(new_node, new_node.command("CLUSTER", "REPLICATE", master.name))[0]:
            return False
    m.ok("[OK] New node added correctly.\n")
    return True


def cmd_del_node(m, argv):
    addr = _host_arg(argv[:1])
    if addr is None:
        return False
    node_id = argv[1]
    m.info(">>> Removing node %s from cluster %s:%d\n" % (node_id, addr[0], addr[1]))
    if not m.load_info_from_node(Node(*addr)):
        return False
    node = m.by_name(node_id)
    if node is None:
        m.error("[ERR] No such node ID %s\n" % node_id)
        return False
    if node.slots_count != 0:
        m.error("[ERR] Node %s:%d is not empty! Reshard data away and try again.\n" % (node.ip, node.port))
        return False
    m.info(">>> Sending CLUSTER FORGET messages to the cluster...\n")
    for n in m.nodes:
        if n is node:
            continue
        if n.replicate and n.replicate.lower() == node_id.lower():
            master = m.node_with_least_replicas()
            m.info(">>> %s:%d as replica of %s:%d\n" % (n.ip, n.port, master.ip, master.port))
            if not m.check_reply(n, n.command("CLUSTER", "REPLICATE", master.name))[0]:
                return False
        if not m.check_reply(n, n.command("CLUSTER", "FORGET", node_id))[0]:
            return False
    m.info(">>> Sending CLUSTER RESET SOFT to the deleted node.\n")
    return m.check_reply(node, node.command("CLUSTER", "RESET", "SOFT"))[0]

# ---------------------------------------------------------------------------
# info, check, fix
# ---------------------------------------------------------------------------


def _load(m, argv):
    addr = _host_arg(argv)
    if addr is None:
        return False
    return m.load_info_from_node(Node(*addr))


def cmd_info(m, argv):
    if not _load(m, argv):
        return False
    m.show_cluster_info()
    return True


def cmd_check(m, argv):
    if not _load(m, argv):
        return False
    m.show_cluster_info()
    return m.check_cluster()


def cmd_fix(m, argv):
    m.opts.fix = True
    return cmd_check(m, argv)

# ---------------------------------------------------------------------------
# reshard, rebalance
# ---------------------------------------------------------------------------


def node_for_resharding(m, name, target):
    """(node or None, raise_err)."""
    node = m.by_name(name)
    if node is None or node.is_slave:
        m.error("*** The specified node (%s) is not known or not a master, please retry.\n" % name)
        return None, True
    if target is not None and node.name == target.name:
        m.error("*** It is not possible to use the target node as source node.\n")
        return None, False
    return node, False


def _add_source(m, name, target, sources) -> bool:
    """The master ``name`` added to ``sources`` (after node_for_resharding's
    checks); False when resharding must stop."""
    src, raise_err = node_for_resharding(m, name, target)
    if src is not None:
        sources.append(src)
    return not raise_err


def reshard_table(sources, numslots):
    """[(source, slot)]: the slots to move, taken from each source in
    proportion to its slots (the biggest first, rounded up)."""
    tot = sum(n.slots_count for n in sources)
    table = []
    for i, node in enumerate(sorted(sources, key=lambda n: -n.slots_count)):
        share = f32(f32(f32(numslots) / tot) * node.slots_count)
        mx = int(math.ceil(share) if i == 0 else math.floor(share))
        count = 0
        for j in range(SLOTS):
            if not node.slots[j]:
                continue
            if count >= mx or len(table) >= numslots:
                break
            table.append((node, j))
            count += 1
    return table


def _read_line(size):
    """A line typed at a prompt, or None at EOF (redis-cli asks again, so
    does this: at EOF it gives up with an error instead of looping)."""
    buf = read_answer(size)
    if not buf:
        err("\n*** EOF on standard input\n")
        sys.exit(1)
    return decode(buf[:-1] if buf.endswith(b"\n") else buf[:size - 1])


def cmd_reshard(m, argv):
    if not _load(m, argv):
        return False
    m.check_cluster()
    if m.errors:
        flush()
        err("*** Please fix your cluster problems before resharding\n")
        return False
    o = m.opts
    slots = o.slots
    if not slots:
        while slots <= 0 or slots > SLOTS:
            out("How many slots do you want to move (from 1 to %d)? " % SLOTS)
            flush()
            line = _read_line(6)
            if line is None:
                continue
            slots = atoi(line)
    to, frm = o.to, o.from_
    while to is None:
        out("What is the receiving node ID? ")
        flush()
        line = _read_line(255)
        if line:
            to = line
    target, _ = node_for_resharding(m, to, None)
    if target is None:
        return False
    sources = []
    all_ = False
    if frm is None:
        out("Please enter all the source node IDs.\n")
        out("  Type 'all' to use all the nodes as source nodes for the hash slots.\n")
        out("  Type 'done' once you entered all the source nodes IDs.\n")
        while True:
            out("Source node #%d: " % (len(sources) + 1))
            flush()
            line = _read_line(255)
            if line is None:
                continue
            if line == "done":
                break
            if line == "all":
                all_ = True
                break
            if not _add_source(m, line, target, sources):
                return False
    else:
        for name in frm.split(","):
            if name == "all":
                all_ = True
                break
            if not name:
                continue
            if not _add_source(m, name, target, sources):
                return False
    if all_:
        sources = [n for n in m.nodes if not (n.is_slave or n.replicate) and n.name != target.name]
    if not sources:
        err("*** No source nodes given, operation aborted.\n")
        return False
    out("\nReady to move %d slots.\n" % slots)
    out("  Source nodes:\n")
    for src in sources:
        out(m.node_description(src, 4) + "\n")
    out("  Destination node:\n")
    out(m.node_description(target, 4) + "\n")
    table = reshard_table(sources, slots)
    out("  Resharding plan:\n")
    for src, slot in table:
        out("    Moving slot %d from %s\n" % (slot, src.name))
    if not o.yes:
        out("Do you want to proceed with the proposed reshard plan (yes/no)? ")
        flush()
        if read_answer(4)[:3] != b"yes":
            return False
    if o.atomic:
        for src, slots in _by_source(table):
            ok, e = m.move_slots_atomic(src, target, slots, OPT_VERBOSE)
            if not ok:
                out("\n")
                m.error("*** Atomic slot migration failed: %s\n" % e)
                return False
        return True
    for src, slot in table:
        ok, e = m.move_slot(src, target, slot, OPT_VERBOSE)
        if not ok:
            if e is not None:
                m.error("clusterManagerMoveSlot failed: %s\n" % e)
            return False
    return True


def _by_source(table):
    """The plan's (source, slot) pairs as (source, sorted slots), in order."""
    groups = []
    for src, slot in table:
        if groups and groups[-1][0] is src:
            groups[-1][1].append(slot)
        else:
            groups.append((src, [slot]))
    return [(src, sorted(slots)) for src, slots in groups]


def cmd_rebalance(m, argv):
    if not _load(m, argv):
        return False
    o = m.opts
    for w in o.weights or ():
        name, _, val = w.partition("=")
        n = m.by_abbreviated_name(name)
        if n is None:
            m.error("*** No such master node %s\n" % name)
            return False
        n.weight = f32(atof(val))
    total_weight = 0.0
    involved = []
    for n in m.nodes:
        if n.is_slave or n.replicate:
            continue
        if not o.empty_masters and n.slots_count == 0:
            n.weight = 0.0
            continue
        total_weight = f32(total_weight + n.weight)
        involved.append(n)
    m.check_cluster(quiet=True)
    if m.errors:
        m.error("*** Please fix your cluster problems before rebalancing\n")
        return False
    threshold = f32(o.threshold)
    threshold_reached = False
    total_balance = 0
    for n in involved:
        expected = int(f32(f32(SLOTS / total_weight) * n.weight)) if total_weight else 0
        n.balance = n.slots_count - expected
        total_balance += n.balance
        if threshold > 0:
            if n.slots_count > 0:
                err_perc = f32(abs(100 - (100.0 * expected / n.slots_count)))
                if err_perc > threshold:
                    threshold_reached = True
            elif expected > 1:
                threshold_reached = True
    if not threshold_reached:
        m.warn("*** No rebalancing needed! All nodes are within the %.2f%% threshold.\n" % threshold)
        return True
    while total_balance > 0:
        for n in involved:
            if n.balance <= 0 and total_balance > 0:
                n.balance -= 1
                total_balance -= 1
    weighted = sorted(involved, key=lambda n: n.balance)
    m.info(">>> Rebalancing across %d nodes. Total weight = %.2f\n" % (len(involved), total_weight))
    if m.cfg.verbose:
        for n in weighted:
            out("%s:%d balance is %d slots\n" % (n.ip, n.port, n.balance))
    dst_idx, src_idx = 0, len(weighted) - 1
    while dst_idx < src_idx:
        dst, src = weighted[dst_idx], weighted[src_idx]
        numslots = min(abs(dst.balance), abs(src.balance))
        if numslots > 0:
            out("Moving %d slots from %s:%d to %s:%d\n" % (numslots, src.ip, src.port, dst.ip, dst.port))
            table = reshard_table([src], numslots)
            if len(table) != numslots:
                m.error("*** Assertion failed: Reshard table != number of slots")
                return False
            if o.simulate:
                out("#" * len(table))
            elif o.atomic:
                ok, e = m.move_slots_atomic(src, dst, sorted(slot for _, slot in table), OPT_QUIET | OPT_UPDATE)
                if not ok:
                    out("\n")
                    m.error("*** Atomic slot migration failed: %s\n" % e)
                    return False
                out("#" * len(table))
                flush()
            else:
                for s, slot in table:
                    ok, e = m.move_slot(s, dst, slot, OPT_QUIET | OPT_UPDATE)
                    if not ok:
                        m.error("*** clusterManagerMoveSlot: %s\n" % e)
                        return False
                    out("#")
                    flush()
            out("\n")
        dst.balance += numslots
        src.balance -= numslots
        if dst.balance == 0:
            dst_idx += 1
        if src.balance == 0:
            src_idx -= 1
    return True

# ---------------------------------------------------------------------------
# set-timeout, call, import, help
# ---------------------------------------------------------------------------


def cmd_set_timeout(m, argv):
    addr = _host_arg(argv[:1])
    if addr is None:
        return False
    timeout = atoi(argv[1])
    if timeout < 100:
        err("Setting a node timeout of less than 100 milliseconds is a bad idea.\n")
        return False
    if not m.load_info_from_node(Node(*addr)):
        return False
    ok_count = err_count = 0
    m.info(">>> Reconfiguring node timeout in every cluster node...\n")
    for n in m.nodes:
        e = None
        r = n.command("CONFIG", "SET", "cluster-node-timeout", str(timeout))
        good, e = m.check_reply(n, r, want_err=True)
        if good:
            r = n.command("CONFIG", "REWRITE")
            good, e = m.check_reply(n, r, want_err=True)
        if good:
            m.warn("*** New timeout set for %s:%d\n" % (n.ip, n.port))
            ok_count += 1
        else:
            m.error("ERR setting node-timeout for %s:%d: %s\n" % (n.ip, n.port, e or ""))
            err_count += 1
    m.info(">>> New node timeout set. %d OK, %d ERR.\n" % (ok_count, err_count))
    return True


def cmd_call(m, argv):
    addr = _host_arg(argv[:1])
    if addr is None:
        return False
    if not m.load_info_from_node(Node(*addr)):
        return False
    args = argv[1:]
    m.info(">>> Calling")
    out("".join(" " + a for a in args) + "\n")
    bargs = [a.encode("utf-8", "surrogateescape") for a in args]
    for n in m.nodes:
        if m.opts.masters_only and n.replicate is not None:
            continue
        if m.opts.slaves_only and n.replicate is None:
            continue
        if n.conn is None and not m.connect(n):
            continue
        r = n.command(*bargs)
        if r is None:
            out("%s:%d: Failed!\n" % (n.ip, n.port))
        else:
            out(("%s:%d: " % (n.ip, n.port)).encode() + format_raw(r, m.cfg.mb_delim) + b"\n")
    return True


def cmd_import(m, argv):
    o = m.opts
    addr = _host_arg(argv)
    if addr is None:
        return False
    if o.from_ is None:
        err("[ERR] Option '--cluster-from' is required for subcommand 'import'.\n")
        return False
    src = host_from_args([o.from_])
    if src is None:
        err("[ERR] Invalid --cluster-from host. You need to pass a valid address (ie. 120.0.0.1:7000).\n")
        return False
    src_ip, src_port = src
    m.info(">>> Importing data from %s:%d to cluster %s:%d\n" % (src_ip, src_port, addr[0], addr[1]))
    if not m.load_info_from_node(Node(*addr)):
        return False
    if not m.check_cluster():
        return False
    try:
        conn = resp.Connection(src_ip, src_port)
    except OSError as e:
        err("Could not connect to Redis at %s:%d: %s.\n" % (src_ip, src_port, e.strerror or e))
        return False

    def fail(r):
        if r is not None and r.is_error:
            m.error("Source %s:%d replied with error:\n%s\n" % (src_ip, src_port, decode(r.value)))
        return False

    try:
        if o.from_pass is not None:
            r = conn.command(*(["AUTH", o.from_user, o.from_pass] if o.from_user else ["AUTH", o.from_pass]))
            if r.is_error:
                err("AUTH failed: %s\n" % decode(r.value))
                return False
        r = conn.command("INFO")
        if r.is_error:
            return fail(r)
        if info_field(decode(r.value), "cluster_enabled"):
            m.error("[ERR] The source node should not be a cluster node.\n")
            return False
        r = conn.command("DBSIZE")
        if r.is_error:
            return fail(r)
        m.warn("*** Importing %d keys from DB 0\n" % r.value)
        slots_map = [None] * SLOTS
        for i in range(SLOTS):
            for n in m.nodes:
                if not n.is_slave and n.slots_count and n.slots[i]:
                    slots_map[i] = n
                    break
        extra = []
        c = m.cfg
        if c.auth is not None:
            extra += ["AUTH2", c.user, c.auth] if c.user else ["AUTH", c.auth]
        if o.copy:
            extra.append("COPY")
        if o.replace:
            extra.append("REPLACE")
        cursor = b"0"
        while True:
            r = conn.command("SCAN", cursor, "COUNT", "1000")
            if r.is_error:
                return fail(r)
            cursor = r.value[0].value
            for k in r.value[1].value:
                key = k.value
                target = slots_map[key_hash_slot(key)]
                out(b"Migrating " + key + (" to %s:%d: " % (target.ip, target.port)).encode())
                mr = conn.command("MIGRATE", target.ip, str(target.port), key, "0", str(o.timeout), *extra)
                if mr.is_error:
                    m.error("Source %s:%d replied with error:\n%s\n" % (src_ip, src_port, decode(mr.value)))
                    return False
                m.ok("OK\n")
            if cursor == b"0":
                break
    except (OSError, ConnectionClosed):
        return False
    finally:
        conn.close()
    return True


COMMANDS = (
    ("create", cmd_create, -2, "host1:port1 ... hostN:portN", "replicas <arg>"),
    ("check", cmd_check, -1, "<host:port> or <host> <port> - separated by either colon or space",
     "search-multiple-owners"),
    ("info", cmd_info, -1, "<host:port> or <host> <port> - separated by either colon or space", None),
    ("fix", cmd_fix, -1, "<host:port> or <host> <port> - separated by either colon or space",
     "search-multiple-owners,fix-with-unreachable-masters"),
    ("reshard", cmd_reshard, -1, "<host:port> or <host> <port> - separated by either colon or space",
     "from <arg>,to <arg>,slots <arg>,yes,timeout <arg>,pipeline <arg>,replace"),
    ("rebalance", cmd_rebalance, -1, "<host:port> or <host> <port> - separated by either colon or space",
     "weight <node1=w1...nodeN=wN>,use-empty-masters,timeout <arg>,simulate,pipeline <arg>,threshold <arg>,"
     "replace"),
    ("add-node", cmd_add_node, 2, "new_host:new_port existing_host:existing_port", "slave,master-id <arg>"),
    ("del-node", cmd_del_node, 2, "host:port node_id", None),
    ("call", cmd_call, -2, "host:port command arg arg .. arg", "only-masters,only-replicas"),
    ("set-timeout", cmd_set_timeout, 2, "host:port milliseconds", None),
    ("import", cmd_import, 1, "host:port", "from <arg>,from-user <arg>,from-pass <arg>,from-askpass,copy,replace"),
    ("backup", None, 2, "host:port backup_directory", None),
    ("help", None, 0, None, None),
)


def cmd_help():
    w = sys.stdout.write
    w("Cluster Manager Commands:\n")
    for name, _f, _a, args, options in COMMANDS:
        w("  %s%s%s\n" % (name, " " * (15 - len(name)), args or ""))
        for opt in (options.split(",") if options else ()):
            w("%s  --cluster-%s\n" % (" " * 15, opt))
    w("\nFor check, fix, reshard, del-node, set-timeout, info, rebalance, call, import, backup you can "
      "specify the host and port of any working node in the cluster.\n")
    w("\nCluster Manager Options:\n")
    w("  --cluster-yes  Automatic yes to cluster commands prompts\n")
    w("\n")
    sys.stdout.flush()


def run(cfg):
    """Run the cluster manager subcommand of ``cfg``; the exit status."""
    o = cfg.cluster_manager
    if os.environ.get("REDISCLI_CLUSTER_YES") == "1":
        o.yes = True
    if o.from_askpass:
        o.from_pass = getpass.getpass("Please input import source node password: ")
    proc = None
    for name, f, arity, _a, _o in COMMANDS:
        if name == o.name:
            argc = len(o.argv)
            if (arity > 0 and argc != arity) or (arity < 0 and argc < -arity):
                err("[ERR] Wrong number of arguments for specified --cluster sub command\n")
                return 1
            proc = f or name
    if proc is None:
        err("Unknown --cluster subcommand\n")
        return 1
    if proc == "help":
        cmd_help()
        return 1
    if proc == "backup":
        err("--cluster backup is not implemented by ophidis-cli\n")
        return 1
    argv = list(o.argv)
    if cfg.stdin_lastarg:
        argv.append(sys.stdin.buffer.read().decode("utf-8", "surrogateescape"))
    elif cfg.stdin_tag:
        data = sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
        if cfg.stdin_tag not in argv:
            err("Using -X option but stdin tag not match.\n")
            return 1
        argv[argv.index(cfg.stdin_tag)] = data
    m = Manager(cfg)
    try:
        ok = proc(m, argv)
    finally:
        flush()
        m.close()
    return 0 if ok else 1
