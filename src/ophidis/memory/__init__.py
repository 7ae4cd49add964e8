"""Memory: accounting (``sizes``), maxmemory and eviction (``evict``), lazy
freeing (``lazyfree``), client memory and maxmemory-clients (``clients``).
``Memory`` is the server's subsystem (``server.memory``): the per-command
accounting wrappers while maxmemory or an LRU/LFU policy is set, the totals.
"""

from __future__ import annotations

import time

from .. import log
from ..cmdtable.keys import get_keys_with_flags
from ..cmdtable.registry import WRAPPERS, rewrap
from ..keyspace import db as dbm
from ..keyspace import notify
from ..protocol.resp import OK
from .clients import ClientMemory
from .evict import Eviction, LruQueue, _oom_error
from .lazyfree import LazyFree
from .sizes import (_EXTRACT, BYTES_BASE, PY_DICT_ENTRY, STARTUP, _simple_specs, db_size, key_cost, keys_cost, keys_of,
                    pysize)

_time = time.time


def untouched(c, cmd) -> bool:
    """CLIENT NO-TOUCH: whether a read by ``c`` (no_touch set, or a
    script's client) leaves its keys' access times alone: everything but
    TOUCH does, and a script's reads follow its caller's switch."""
    if c.in_script:
        caller = c.script_caller
        if caller is None or not caller[0].no_touch:
            return False
    return cmd.fullname != "touch"


class Memory(Eviction):
    def __init__(self, srv):
        self.srv = srv
        cfg = srv.config
        self.dbmem = [0] * len(srv.dbs)
        self.dataset = 0
        self.clients_mem = 0
        self.peak = 0
        self.peak_time = int(_time())   # when the peak was reached (INFO used_memory_peak_time)
        self.tracking = False
        self.budget = 0            # dataset bytes allowed: maxmemory - STARTUP - clients
        self.slack = 0             # evictions go this far below the limit
        self.policy = cfg["maxmemory-policy"]
        self.lru_mode = self.lfu_mode = self.volatile = False
        self.lrm = False           # volatile-lrm / allkeys-lrm: the LRU clock, moved by writes only
        self.indexes = None        # sampling policies (LFU, random, TTL): per-db Index
        self.lru = None            # LRU policies: per-db LruQueue
        self.set_by_command = None  # (db id, key) whose access info the running command set
                                    # (RESTORE, a single-key write: _write1 keeps it)
        self.clock = int(_time() * 1000)   # ms, refreshed by cron and eviction
        self.pool = []
        self.oom = False           # over the limit with nothing to evict
        self.wrap_active = False
        self.evicting_scheduled = False
        self.clients_at = 0.0      # when update_clients last ran for an eviction
        self.next_db = 0
        self.lazyfree = LazyFree(srv)
        self.clients = ClientMemory(srv)   # before the hook below: it evicts first
        srv.cron_hooks.append(self.cron)
        srv.cron_hooks.append(self.clients.buffers_cron)
        srv.startup_hooks.append(self._after_startup)
        cfg.on_change("maxmemory", lambda v: self._maxmemory_changed())
        cfg.on_change("maxmemory-policy", lambda v: self.configure(policy_changed=True))
        cfg.on_change("maxmemory-clients", lambda v: self.update_clients())
        self.configure()

    # -- configuration --------------------------------------------------------------------
    def configure(self, policy_changed=False):
        srv = self.srv
        cfg = srv.config
        self.policy = pol = cfg["maxmemory-policy"]
        # LRM (least recently modified, 8.6) keeps LRU's clock and queue;
        # only a write that changes a key moves it (see wrap)
        self.lrm = pol.endswith("lrm")
        self.lru_mode = "lru" in pol or self.lrm
        self.lfu_mode = "lfu" in pol
        # An LRU/LFU policy keeps access times even without a limit (OBJECT
        # IDLETIME/FREQ, RESTORE IDLETIME/FREQ), as Redis always does; the
        # accounting then runs too, with no limit to enforce.
        on = bool(srv.maxmemory) or self.lru_mode or self.lfu_mode
        self.volatile = pol.startswith("volatile")
        evicting = on and pol != "noeviction"
        if on and not self.tracking:
            self.recompute()
        self.tracking = on
        if policy_changed or not evicting:
            self.indexes = None
            self.lru = None
            self.pool = []
        if evicting:
            if self.lru_mode:
                if self.lru is None:
                    self.lru = [LruQueue() for _ in srv.dbs]
                    self._fill_lru()
            elif self.indexes is None:
                self.indexes = [None] * len(srv.dbs)
        srv.mem_track = self if on else None
        self._install(on)
        if not on:
            self._set_oom(False)
        srv.update_server_slow()
        if on:
            self.update_clients()

    def _maxmemory_changed(self):
        """CONFIG SET maxmemory (Redis's updateMaxmemory): a warning when the
        new limit is under the memory in use, and eviction starts from the
        event loop, in cycles bounded by maxmemory-eviction-tenacity (a
        transaction setting it runs to its end first)."""
        self.configure()
        srv = self.srv
        if srv.maxmemory:
            used = self.used_memory() - self.not_counted()
            if srv.maxmemory < used:
                log.warning("WARNING: the new maxmemory value set via CONFIG SET (%d) is smaller than the "
                            "current memory usage (%d). This will result in key eviction and/or the "
                            "inability to accept new write commands depending on the maxmemory-policy."
                            % (srv.maxmemory, used))
            self.schedule_eviction()

    def _reset_structures(self):
        """After whole databases changed (FLUSHALL, SWAPDB, DEBUG RELOAD).
        The lists are changed in place: the wrappers hold them."""
        if self.lru is not None:
            self.lru[:] = [LruQueue() for _ in self.srv.dbs]
            self._fill_lru()
        elif self.indexes is not None:
            self.indexes[:] = [None] * len(self.srv.dbs)
        self.pool = []

    def _after_startup(self):
        if self.tracking:
            self.recompute()
            if self.lru is not None:
                # keys loaded with an idle time (RDB) were given to set_idle:
                # queue everything by those times
                loaded = [q.ref for q in self.lru]
                self.lru[:] = [LruQueue() for _ in self.srv.dbs]
                self._fill_lru(loaded)
            else:
                self._reset_structures()

    def recompute(self):
        dbs = self.srv.dbs
        self.dbmem[:] = [db_size(db) for db in dbs]
        self.dataset = sum(self.dbmem)

    def _set_oom(self, v):
        """Over the limit with nothing evictable: every command takes the
        general path (which refuses denyoom commands) until memory is
        back under the limit."""
        if v != self.oom:
            self.oom = v
            self.srv.mem_oom = v
            self.srv.update_server_slow()

    # -- per-command accounting -------------------------------------------------------------
    def _install(self, on):
        """While maxmemory is set every command's proc is wrapped: writes
        measure their keys before and after (and evict first when over the
        limit), reads record the access of their keys.  The fast path stays
        on: the wrappers are the commands (see cmdtable.registry.rewrap)."""
        if self not in WRAPPERS:
            WRAPPERS.insert(0, self)    # innermost
        self.wrap_active = on
        rewrap()

    def wrap(self, cmd, proc):
        m = self
        specs = _EXTRACT.get(cmd, 0)
        if specs == 0:
            specs = _EXTRACT[cmd] = _simple_specs(cmd)
        single = specs is not None and len(specs) == 1 and specs[0][:2] == (1, 0)
        # Read-only commands that may replicate may change their key
        # (PFCOUNT writes the cached cardinality back): accounted like writes.
        if not cmd.write and not (cmd.readonly and cmd.may_replicate):
            # performEvictions runs before every command, reads included;
            # no_touch commands leave the access time alone
            if (not cmd.key_specs or "no_touch" in cmd.flags or self.lrm
                    or not (self.lru is not None or (self.indexes is not None and self.lfu_mode))):
                def other(c, argv):
                    if m.dataset > m.budget and not (c.in_exec or c.in_script):
                        m.evict_for(c, cmd)
                    return proc(c, argv)
                return other
            if single:
                lru = self.lru
                if lru is not None:
                    volatile = self.volatile

                    def read1_lru(c, argv):
                        if m.dataset > m.budget and not (c.in_exec or c.in_script):
                            m.evict_for(c, cmd)
                        r = proc(c, argv)
                        if len(argv) > 1 and not ((c.no_touch or c.in_script) and untouched(c, cmd)):
                            db = c.db
                            k = argv[1]
                            if k in (db.expires if volatile else db.d):
                                lru[db.id].ref[k] = m.clock
                        return r
                    return read1_lru

            def read(c, argv):
                if m.dataset > m.budget and not (c.in_exec or c.in_script):
                    m.evict_for(c, cmd)
                r = proc(c, argv)
                if (c.no_touch or c.in_script) and untouched(c, cmd):
                    return r
                db = c.db
                keys = keys_of(cmd, argv)
                m.touch_keys(db, keys, m.present(db, keys))
                return r
            return read
        # touches_dbs: the accounting needs more than the command's own keys
        # (another db, whole databases): measured by before/after
        if single and "touches_dbs" not in cmd.flags:
            return self._write1(cmd, proc)

        def write(c, argv):
            if m.dataset > m.budget and not (c.in_exec or c.in_script):
                r = m.evict_for(c, cmd)
                if r is not None:
                    return r
            tok = m.before(c, cmd, argv)
            try:
                return proc(c, argv)
            finally:
                m.after(c, cmd, argv, tok)
        return write

    def _write1(self, cmd, proc):
        """The wrapper of a write command whose only key is argv[1] (most
        of them): the hot path at the memory limit, so the common cases
        (string values, the LRU queue) are inlined."""
        m = self
        key_cost_ = key_cost
        dbmem = self.dbmem
        lru = self.lru
        volatile = self.volatile
        indexed = self.indexes is not None
        lrm = self.lrm
        srv = self.srv

        def write1(c, argv):
            if m.dataset > m.budget and not (c.in_exec or c.in_script):
                r = m.evict_for(c, cmd)
                if r is not None:
                    return r
            dirty = srv.dirty
            db = c.db
            d = db.d
            k = argv[1]
            v = d.get(k)
            if v is None:
                pre = 0
                tracked = False
            else:
                exp = db.expires
                if exp:
                    v = db.lookup_write(k)   # an expired key goes first (see deleted)
                if v is None:
                    pre = 0
                    tracked = False
                else:
                    pre = key_cost_(db, k, v)
                    tracked = not volatile or k in exp
                    if tracked and (c.no_touch or c.in_script) and untouched(c, cmd):
                        # CLIENT NO-TOUCH: a value changed in place keeps
                        # its access information (a replaced one is new)
                        tracked = v
            try:
                return proc(c, argv)
            finally:
                v = d.get(k)
                if v is None:
                    delta = -pre
                else:
                    exp = db.expires
                    if v.__class__ is bytes and not exp:
                        delta = len(k) + len(v) + (2 * BYTES_BASE + PY_DICT_ENTRY) - pre
                    else:
                        delta = key_cost_(db, k, v) - pre
                    set_by = m.set_by_command
                    if set_by is not None:
                        m.set_by_command = None
                    if set_by == (db.id, k):
                        pass                        # RESTORE IDLETIME/FREQ: what it set stays
                    elif tracked is not True and tracked is not False:
                        # NO-TOUCH: the old value (tracked) changed in place,
                        # or replaced (a new object: fresh for LRU, LFU keeps
                        # its counter as Redis's overwrite does)
                        if tracked is not v and lru is not None:
                            lru[db.id].ref[k] = m.clock
                    elif lru is not None:
                        if tracked:
                            if not lrm or srv.dirty != dirty:    # LRM: a write that changed nothing
                                lru[db.id].ref[k] = m.clock
                        elif not volatile or k in exp:
                            q = lru[db.id]
                            q.keys.append(k)
                            q.times.append(m.clock)
                    elif indexed:
                        if pre:
                            m.touch(db, (k,))
                        else:
                            m.created(db, k)    # a new object: no earlier access counts
                if delta:
                    dbmem[db.id] += delta
                    m.dataset += delta
        if cmd.fullname != "set":
            return write1

        queue_new = lru is not None and not volatile

        def set_plain(c, argv):
            """Plain SET key value (the commonest write at the limit):
            the command itself inlined, one lookup of the key."""
            if len(argv) != 3 or notify.flags or dbm.lazy_server_del or c.in_exec or c.in_script:
                return write1(c, argv)
            if m.dataset > m.budget:
                r = m.evict_for(c, cmd)
                if r is not None:
                    return r
            _, k, v = argv
            db = c.db
            i = db.id
            d = db.d
            n = len(d)
            old = d.setdefault(k, v)     # one probe of the table for a new key
            if len(d) != n:
                delta = len(k) + len(v) + (2 * BYTES_BASE + PY_DICT_ENTRY)
                if queue_new:
                    q = lru[i]
                    q.keys.append(k)
                    q.times.append(m.clock)
                elif indexed:
                    m.created(db, k)
            else:
                exp = db.expires
                if exp and k in exp:
                    return write1(c, argv)       # a TTL to drop, maybe expired: the general way
                if db.blocking_keys and k in db.blocking_keys:
                    db.overwrite_signal(k)   # a stream's blocked readers fail
                d[k] = v
                delta = len(v) - (len(old) if old.__class__ is bytes else pysize(old) - BYTES_BASE)
                if lru is not None:
                    if not volatile:
                        lru[i].ref[k] = m.clock
                elif indexed:
                    m.touch(db, (k,))
            wk = db.watched_keys
            if wk and k in wk:
                db.signal(k)
            srv.dirty += 1
            if delta:
                dbmem[i] += delta
                m.dataset += delta
            return OK
        return set_plain

    def evict_for(self, c, cmd):
        """performEvictions before a write of the fast path; the OOM reply
        when nothing could be evicted and the command may grow memory."""
        oom = self.evict_hook()
        trk = self.srv.tracking
        if trk.pending:
            trk.push_pending()   # evicted keys' invalidations precede the reply
        if oom and cmd.denyoom:
            cmd.calls -= 1     # the fast path counts it: it was rejected instead
            return self.srv.reject(c, cmd, _oom_error())
        return None

    # -- accounting -----------------------------------------------------------------------
    def used_memory(self) -> int:
        """INFO's used_memory (the clients measured anew)."""
        self.update_clients()
        # the shared replication buffer once (each replica's figure holds
        # what it has still to be sent of it)
        used = STARTUP + self.dataset_bytes() + self.clients_mem - self.clients.replica_out \
            + self.srv.repl_feed.buffer_bytes() + self.aof_buffer()
        if used > self.peak:
            self.peak = used
            self.peak_time = int(_time())
        self.srv.used_memory_peak = self.peak
        return used

    def dataset_bytes(self) -> int:
        if self.tracking:
            return self.dataset
        return sum(db_size(db, 2000) for db in self.srv.dbs)

    def aof_buffer(self) -> int:
        """The AOF's buffer, not yet written (mem_aof_buffer)."""
        return sum(map(len, self.srv.aof.buf))

    def not_counted(self) -> int:
        """mem_not_counted_for_evict (Redis's freeMemoryGetNotCountedMemory):
        the shared replication buffer and the AOF buffer are in used_memory
        but do not make keys go (evicting for them would only feed them
        more DELs).  (Redis counts the buffer's part within
        repl-backlog-size against maxmemory; here none of it.)"""
        return self.srv.repl_feed.buffer_bytes() + self.aof_buffer()

    def update_clients(self):
        """Every client measured (client eviction when over
        maxmemory-clients), the clients' total and the dataset budget."""
        srv = self.srv
        cm = self.clients
        cm.refresh()
        cm.evict()
        self._clients_budget()
        s = srv.maxmemory >> 9
        self.slack = s if s < (1 << 20) else (1 << 20)

    def _clients_budget(self):
        """The clients' total and the dataset budget from the clients'
        figures as they stand."""
        srv = self.srv
        cm = self.clients
        self.clients_mem = tot = cm.total
        srv.mem_clients_normal = tot - cm.totals["slave"]
        # the budget leaves out the replicas' output; the AOF buffer is not
        # in the dataset either
        self.budget = srv.maxmemory - STARTUP - (tot - cm.replica_out) if srv.maxmemory else 1 << 62

    def client_gone(self, c):
        """A client disconnected: its memory is free at once (as Redis's
        freeClient), so keys are not evicted for it meanwhile."""
        self.clients.forget(c)
        self._clients_budget()

    def present(self, db, keys):
        """The keys that exist and are eviction candidates."""
        src = db.expires if self.volatile else db.d
        return [k in src for k in keys]

    def before(self, c, cmd, argv):
        """Generic write accounting (multi-key and whole-db commands)."""
        keys = keys_of(cmd, argv)
        db = c.db
        if cmd.name == "debug":
            return (db, [], 0, None, ())
        pre = 0
        lookup = db.lookup_write
        for k in keys:
            v = lookup(k)
            if v is not None:
                pre += key_cost(db, k, v)
        was = self.present(db, keys)
        if self.lrm:
            # only the keys the command writes, and only if it changed something
            kf = get_keys_with_flags(cmd, argv) or ()
            written = {argv[p] for p, f in kf if "RO" not in f}
            was = [w if k in written else None for k, w in zip(keys, was)]
            was.append(self.srv.dirty)
        extra = None
        name = cmd.name
        if name == "copy" or name == "move":
            odb = self._other_db(c, argv, name)
            if odb is not None and odb is not db:
                opre = 0
                if name == "copy":
                    v = odb.lookup_write(argv[2])
                    if v is not None:
                        opre = key_cost(odb, argv[2], v)
                extra = (odb, opre)
        return (db, keys, pre, extra, was)

    def _other_db(self, c, argv, name):
        try:
            if name == "move":
                return self.srv.dbs[int(argv[2])]
            for i in range(3, len(argv) - 1):
                if argv[i].lower() == b"db":
                    return self.srv.dbs[int(argv[i + 1])]
        except (ValueError, IndexError):
            return None
        return None

    def after(self, c, cmd, argv, tok):
        db, keys, pre, extra, was = tok
        post = keys_cost(db, keys)
        if extra is not None:
            odb, opre = extra
            key = argv[2] if cmd.name == "copy" else argv[1]
            v = odb.d.get(key)
            opost = key_cost(odb, key, v) if v is not None else 0
            self.dbmem[odb.id] += opost - opre
            self.dataset += opost - opre
            if v is not None:
                self.touch_keys(odb, (key,), (opre != 0,))
        delta = post - pre
        if delta:
            self.dbmem[db.id] += delta
            self.dataset += delta
        if not keys:
            name = cmd.name
            if name == "flushdb":
                self.dataset -= self.dbmem[db.id]
                self.dbmem[db.id] = db_size(db)
                self.dataset += self.dbmem[db.id]
            elif name in ("flushall", "swapdb", "debug"):
                self.recompute()
            if name in ("flushdb", "flushall", "swapdb", "debug"):
                self._reset_structures()
        elif (c.no_touch or c.in_script) and untouched(c, cmd):
            # CLIENT NO-TOUCH: only the keys this command created are new
            new = [k for k, w in zip(keys, was) if not w]
            if new:
                self.touch_keys(db, new, [False] * len(new))
        else:
            if self.lrm:
                dirty = was.pop()
                if self.srv.dirty == dirty:
                    return
                keys = [k for k, w in zip(keys, was) if w is not None]
                was = [w for w in was if w is not None]
            self.touch_keys(db, keys, was)

    def measure(self, db, keys):
        """Bytes held by keys and which of them exist (blocked clients
        served outside a command)."""
        return (keys_cost(db, keys), self.present(db, keys))

    def account(self, db, keys, tok):
        pre, was = tok
        delta = self.measure(db, keys)[0] - pre
        if delta:
            self.dbmem[db.id] += delta
            self.dataset += delta
        self.touch_keys(db, keys, was)

    def deleted(self, db, key, v):
        """A key is being removed outside a measured command (expiry)."""
        if self.tracking:
            c = key_cost(db, key, v)
            self.dbmem[db.id] -= c
            self.dataset -= c

