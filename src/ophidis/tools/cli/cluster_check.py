"""The cluster check of ophidis-cli's cluster manager (redis-cli's
clusterManagerCheckCluster: slots agreement, open slots, coverage, multiple
owners) and the fixes ``--cluster fix`` applies (open slots, uncovered
slots, slots with several owners).
"""

from __future__ import annotations

import random
import sys
import time

from ophidis.tools.cli.cluster import OPT_COLD, OPT_UPDATE, OPT_VERBOSE, SLOTS, ManagerBase
from ophidis.tools.cli.output import out
from ophidis.tools.resp import atoi


class Manager(ManagerBase):
    """The cluster manager: the nodes (ManagerBase), their check and fixes."""

    def covered_slots(self, all_slots):
        tot = 0
        for n in self.nodes:
            for i in range(SLOTS):
                if n.slots[i] and not all_slots[i]:
                    all_slots[i] = 1
                    tot += 1
        return tot

    def node_with_most_keys(self, nodes, slot):
        best, numkeys = None, 0
        for n in nodes:
            if n.is_slave or n.replicate:
                continue
            r = n.command("CLUSTER", "COUNTKEYSINSLOT", str(slot))
            ok, e = self.check_reply(n, r, want_err=True)
            if not ok:
                if e is not None:
                    self.print_reply_error(n, e)
                return None
            if r.value > numkeys or best is None:
                numkeys, best = r.value, n
        return best

    def _refuse_with_unreachable_masters(self, what):
        """Exit (status 1) with redis-cli's warning when fixing ``what`` would
        have to assume the unreachable masters' slots uncovered, unless
        --cluster-fix-with-unreachable-masters says so."""
        if self.unreachable_masters > 0 and not self.opts.fix_unreachable:
            self.warn("*** Fixing %s with %d unreachable masters is dangerous: redis-cli will assume that slots "
                      "about masters that are not reachable are not covered, and will try to reassign them to "
                      "the reachable nodes. This can cause data loss and is rarely what you want to do. If you "
                      "really want to proceed use the --cluster-fix-with-unreachable-masters option.\n"
                      % (what, self.unreachable_masters))
            sys.exit(1)

    def fix_slots_coverage(self, all_slots):
        self._refuse_with_unreachable_masters("slots coverage")
        fixed = 0
        self.info(">>> Fixing slots coverage...\n")
        uncovered = {}
        for i in range(SLOTS):
            if all_slots[i]:
                continue
            holders = []
            for n in self.nodes:
                if n.is_slave or n.replicate:
                    continue
                r = n.command("CLUSTER", "GETKEYSINSLOT", str(i), "1")
                if not self.check_reply(n, r)[0]:
                    return -1
                if r.value:
                    holders.append(n)
            uncovered[i] = holders
        none = [s for s, h in uncovered.items() if not h]
        single = [s for s, h in uncovered.items() if len(h) == 1]
        multi = [s for s, h in uncovered.items() if len(h) > 1]

        def slot_list(slots):
            b = bytearray(SLOTS)
            for s in slots:
                b[s] = 1
            out(self.slots_string(b) + "\n")

        def random_master(_s):
            # srand(time(NULL)); rand(): one node per second.
            masters = self.masters()
            return masters[random.Random(int(time.time())).randrange(len(masters))]

        for slots, what, question, pick in (
                (none, "have no keys across the cluster", "covering with a random node", random_master),
                (single, "have keys in just one node", "covering with those nodes", lambda s: uncovered[s][0])):
            if not slots:
                continue
            out("The following uncovered slots %s:\n" % what)
            slot_list(slots)
            if self.confirm("Fix these slots by %s?" % question, True):
                for s in slots:
                    n = pick(s)
                    self.info(">>> Covering slot %d with %s:%d\n" % (s, n.ip, n.port))
                    if not self.set_slot_owner(n, s, False):
                        return -1
                    n.slots[s] = 1
                    fixed += 1
        if multi:
            out("The following uncovered slots have keys in multiple nodes:\n")
            slot_list(multi)
            if self.confirm("Fix these slots by moving keys into a single node?", True):
                for s in multi:
                    nodes = uncovered[s]
                    target = self.node_with_most_keys(nodes, s)
                    if target is None:
                        return -1
                    self.info(">>> Covering slot %d moving keys to %s:%d\n" % (s, target.ip, target.port))
                    if not self.set_slot_owner(target, s, True):
                        return -1
                    target.slots[s] = 1
                    for src in nodes:
                        if src is target:
                            continue
                        if not self.set_slot(src, target, s, "NODE")[0]:
                            return -1
                        if not self.set_slot(src, target, s, "IMPORTING")[0]:
                            return -1
                        if not self.move_slot(src, target, s, OPT_VERBOSE | OPT_COLD)[0]:
                            return -1
                        if not self.clear_slot_status(src, s):
                            return -1
                    fixed += 1
        return fixed

    def fix_open_slot(self, slot):
        self._refuse_with_unreachable_masters("open slots")
        self.info(">>> Fixing open slot %d\n" % slot)
        owners, migrating, importing = [], [], []
        mig_str, imp_str = [], []
        owner = None
        for n in self.nodes:
            if n.is_slave:
                continue
            if n.slots[slot]:
                owners.append(n)
            else:
                r = n.command("CLUSTER", "COUNTKEYSINSLOT", str(slot))
                ok, _e = self.check_reply(n, r)
                if ok and r.value > 0:
                    self.warn("*** Found keys about slot %d in non-owner node %s:%d!\n" % (slot, n.ip, n.port))
                    owners.append(n)
                if not ok:
                    return False
        if len(owners) == 1:
            owner = owners[0]
        for n in self.nodes:
            if n.is_slave:
                continue
            is_mig = is_imp = False
            if any(atoi(s) == slot for s, _ in n.migrating):
                mig_str.append(n.addr())
                migrating.append(n)
                is_mig = True
            if not is_mig and any(atoi(s) == slot for s, _ in n.importing):
                imp_str.append(n.addr())
                importing.append(n)
                is_imp = True
            if not is_mig and not is_imp and n is not owner:
                r = n.command("CLUSTER", "COUNTKEYSINSLOT", str(slot))
                ok, _e = self.check_reply(n, r)
                if ok and r.value > 0:
                    self.warn("*** Found keys about slot %d in node %s:%d!\n" % (slot, n.ip, n.port))
                    imp_str.append(n.addr())
                    importing.append(n)
                if not ok:
                    return False
        if mig_str:
            out("Set as migrating in: %s\n" % ",".join(mig_str))
        if imp_str:
            out("Set as importing in: %s\n" % ",".join(imp_str))
        if owner is None:
            self.info(">>> No single clear owner for the slot, selecting an owner by # of keys...\n")
            owner = self.node_with_most_keys(self.nodes, slot)
            if owner is None:
                self.error("[ERR] Can't select a slot owner. Impossible to fix.\n")
                return False
            self.warn("*** Configuring %s:%d as the slot owner\n" % (owner.ip, owner.port))
            if not self.clear_slot_status(owner, slot):
                return False
            if not self.set_slot_owner(owner, slot, False):
                return False
            owner.slots[slot] = 1
            _remove(migrating, owner)
            _remove(importing, owner)
        if len(owners) > 1:
            for n in owners:
                if n is owner:
                    continue
                if not self.del_slot(n, slot, True):
                    return False
                n.slots[slot] = 0
                if not self.set_slot(n, owner, slot, "node")[0]:
                    return False
                if not self.set_slot(n, owner, slot, "importing")[0]:
                    return False
                _remove(importing, n)
                importing.append(n)
                _remove(migrating, n)
        move_opts = OPT_VERBOSE
        if len(migrating) == 1 and len(importing) == 1:
            src, dst = migrating[0], importing[0]
            self.info(">>> Case 1: Moving slot %d from %s:%d to %s:%d\n"
                      % (slot, src.ip, src.port, dst.ip, dst.port))
            return self.move_slot(src, dst, slot, move_opts | OPT_UPDATE)[0]
        if not migrating and importing:
            self.info(">>> Case 2: Moving all the %d slot keys to its owner %s:%d\n"
                      % (slot, owner.ip, owner.port))
            for n in importing:
                if n is owner:
                    continue
                if not self.move_slot(n, owner, slot, move_opts | OPT_COLD)[0]:
                    return False
                self.info(">>> Setting %d as STABLE in %s:%d\n" % (slot, n.ip, n.port))
                if not self.clear_slot_status(n, slot):
                    return False
            for n in self.nodes:
                if n is owner or n.is_slave:
                    continue
                if not self.set_slot(n, owner, slot, "NODE")[0]:
                    return False
            return True
        if len(migrating) == 1 and len(importing) > 1:
            src = migrating[0]
            target_id = next(d for s, d in src.migrating if atoi(s) == slot)
            dst = None
            try_to_fix = True
            for n in importing:
                if self.count_keys_in_slot(n, slot) > 0:
                    try_to_fix = False
                    break
                if n.name == target_id:
                    dst = n
            if try_to_fix:
                if dst is not None:
                    self.info(">>> Case 3: Moving slot %d from %s:%d to %s:%d and closing it on all the "
                              "other importing nodes.\n" % (slot, src.ip, src.port, dst.ip, dst.port))
                    if not self.move_slot(src, dst, slot, move_opts)[0]:
                        return False
                    for n in importing:
                        if n is not dst and not self.clear_slot_status(n, slot):
                            return False
                else:
                    self.info(">>> Case 3: Closing slot %d on both migrating and importing nodes.\n" % slot)
                    if not self.clear_slot_status(src, slot):
                        return False
                    for n in importing:
                        if not self.clear_slot_status(n, slot):
                            return False
                return True
        else:
            close = not importing and len(migrating) == 1
            if close:
                n = migrating[0]
                if owner is None or owner is not n:
                    r = n.command("CLUSTER", "GETKEYSINSLOT", str(slot), "10")
                    ok, _e = self.check_reply(n, r)
                    if r is not None and ok:
                        close = not r.value
                    if not ok:
                        return False
            if close:
                n = migrating[0]
                self.info(">>> Case 4: Closing slot %d on %s:%d\n" % (slot, n.ip, n.port))
                return self.clear_slot_status(n, slot)
        self.error("[ERR] Sorry, redis-cli can't fix this slot yet (work in progress). Slot is set as "
                   "migrating in %s, as importing in %s, owner is %s:%d\n"
                   % (",".join(mig_str), ",".join(imp_str), owner.ip, owner.port))
        return False

    def fix_multiple_slot_owners(self, slot, owners):
        self.info(">>> Fixing multiple owners for slot %d...\n" % slot)
        owner = self.node_with_most_keys(owners, slot) or owners[0]
        self.info(">>> Setting slot %d owner: %s:%d\n" % (slot, owner.ip, owner.port))
        if not self.set_slot_owner(owner, slot, False):
            return False
        ok = False
        for n in self.nodes:
            if n is owner or n.is_slave:
                continue
            count = self.count_keys_in_slot(n, slot)
            ok = count >= 0
            if not ok:
                break
            self.del_slot(n, slot, True)
            if not self.set_slot(n, owner, slot, "node")[0]:
                return False
            if count > 0:
                ok = self.move_slot(n, owner, slot, OPT_VERBOSE | OPT_COLD)[0]
                if not ok:
                    break
        return ok

    def check_cluster(self, quiet=False):
        if not self.nodes:
            return False
        node = self.nodes[0]
        self.info(">>> Performing Cluster Check (using node %s:%d)\n" % (node.ip, node.port))
        result = True
        do_fix = self.opts.fix
        if not quiet:
            self.show_nodes()
        if not self.is_config_consistent():
            self.on_error("[ERR] Nodes don't agree about configuration!")
            result = False
        else:
            self.ok("[OK] All nodes agree about slots configuration.\n")
        self.info(">>> Check for open slots...\n")
        open_slots = {}
        for n in self.nodes:
            for kind, lst in (("migrating", n.migrating), ("importing", n.importing)):
                if lst:
                    for s, other in lst:
                        open_slots[s] = other
                    self.on_error("[WARNING] Node %s:%d has slots in %s state %s."
                                  % (n.ip, n.port, kind, ",".join(s for s, _ in lst)))
        if open_slots:
            result = False
            self.error("[WARNING] The following slots are open: %s.\n" % ",".join(open_slots))
            if do_fix:
                for s in open_slots:
                    result = self.fix_open_slot(atoi(s))
                    if not result:
                        break
        self.info(">>> Check slots coverage...\n")
        all_slots = bytearray(SLOTS)
        if self.covered_slots(all_slots) == SLOTS:
            self.ok("[OK] All %d slots covered.\n" % SLOTS)
        else:
            self.on_error("[ERR] Not all %d slots are covered by nodes.\n" % SLOTS)
            result = False
            if do_fix:
                if self.fix_slots_coverage(all_slots) > 0:
                    result = True
        if self.opts.check_owners:
            self.info(">>> Check for multiple slot owners...\n")
            multiple = 0
            for slot in range(SLOTS):
                owners = []
                for n in self.nodes:
                    if n.is_slave:
                        continue
                    if n.slots[slot] or self.count_keys_in_slot(n, slot) > 0:
                        owners.append(n)
                if len(owners) > 1:
                    result = False
                    self.error("[WARNING] Slot %d has %d owners:\n" % (slot, len(owners)))
                    for n in owners:
                        self.error("    %s:%d\n" % (n.ip, n.port))
                    multiple += 1
                    if do_fix:
                        result = self.fix_multiple_slot_owners(slot, owners)
                        if not result:
                            self.error("Failed to fix multiple owners for slot %d\n" % slot)
                            break
                        multiple -= 1
            if multiple == 0:
                self.ok("[OK] No multiple owners found.\n")
        return result


def _remove(lst, node):
    if node in lst:
        lst.remove(node)
