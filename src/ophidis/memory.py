"""Memory accounting, maxmemory and eviction, LRU/LFU, lazy freeing.

Accounting (``used_memory``)
----------------------------
CPython never tells how many bytes a value holds, and freed memory stays in
pymalloc's arenas, so neither RSS nor allocator statistics follow deletes.
Ophidis estimates instead, per key, in O(1):

  cost(key) = sizeof(key) + PY_DICT_ENTRY + pysize(value) [+ EXPIRE_ENTRY]

``pysize`` is ``sys.getsizeof`` for strings and the container's own table
plus ``len * average element size`` for collections, the average taken on the
first few elements (deterministic for a given state, so the estimate of a
key after a command equals its estimate before the next one).

While ``maxmemory`` is set, every command runs through ``Server.call`` (the
fast path is off) and the tracker measures the keys of each write command
(from its key specs) before and after it runs: the difference is added to a
per-database total.  Expiry, eviction and flushes adjust the totals
directly.  Nothing of this runs while ``maxmemory`` is 0: INFO then computes
the estimate on demand (exactly for small databases, by stride sampling for
big ones).

used_memory = STARTUP + dataset + client buffers + eviction index.

Eviction
--------
Redis's algorithm: sample ``maxmemory-samples`` keys per database into an
eviction pool of 16 candidates ranked by idle time (LRU), by 255 - the
logarithmic access counter (LFU), or by nearness of expiry (volatile-ttl),
and evict the best; random policies pick a random key.  Random sampling
needs random access that Python dicts lack, so while an evicting policy is
active each database keeps an ``Index`` (a key list with positions plus the
access information of each key), filled lazily the first time eviction
needs it and maintained from the general path.  Stale entries are dropped
when sampled.

Lazy freeing
------------
Dropping the last reference to a big dict/set frees it synchronously (even in
another thread: deallocation holds the GIL), so big values given to
``LazyFree.free`` are emptied in slices of a millisecond or so from the event
loop instead.
"""

from __future__ import annotations

import sys
import time
from bisect import insort
from collections import deque
from itertools import compress, islice, repeat
from operator import is_not, not_
from random import random

from . import client as client_mod
from . import log
from . import notify
from .db import DELETE_SIGNALS, EmbStr, signal_key_ready, stats, touch_watched
from .propagate import propagate_deletion, propagating

getsizeof = sys.getsizeof
# sys.getsizeof of a bytes object is this plus its length (sys.getsizeof parses
# its arguments with keywords: ~0.1 us a call, len() is far cheaper).
BYTES_BASE = sys.getsizeof(b"")
_time = time.time
_perf = time.perf_counter

PY_DICT_ENTRY = 42       # our keyspace: amortized bytes per entry of a big Python dict (measured)
EXPIRE_ENTRY = PY_DICT_ENTRY + 32
STARTUP = 1 << 20        # fixed server structures (interpreter code not counted)
CLIENT_BASE = 2048       # per connection: objects, transport, parser
INDEX_ENTRY = 96         # per key in an eviction index (sampling policies)
LRU_ENTRY = 24           # per key in an LRU queue (two deque slots, some duplicates)
SAMPLE = 4
LAZYFREE_THRESHOLD = 64
EVPOOL_SIZE = 16
LFU_INIT_VAL = 5

_HashValue = _SetValue = _ZSetValue = _ListValue = _StreamValue = None


def _types():
    global _HashValue, _SetValue, _ZSetValue, _ListValue, _StreamValue
    from .types.containers import HashValue, ListValue, SetValue
    from .types.stream import StreamValue
    from .types.zset import ZSetValue
    _HashValue, _SetValue, _ZSetValue, _ListValue = HashValue, SetValue, ZSetValue, ListValue
    _StreamValue = StreamValue


def pysize(v) -> int:
    """Estimated bytes held by a value (O(1): samples a few elements)."""
    cls = v.__class__
    if cls is bytes or cls is bytearray or cls is EmbStr:
        return getsizeof(v)
    n = len(v)
    if cls is _HashValue:
        s = getsizeof(v)
        if n:
            t = k = 0
            for f, x in islice(v.items(), SAMPLE):
                t += getsizeof(f) + getsizeof(x)
                k += 1
            s += t * n // k
        return s
    if cls is _SetValue or cls is _ListValue:
        s = getsizeof(v)
        if n:
            t = k = 0
            for m in islice(v, SAMPLE):
                t += getsizeof(m)
                k += 1
            s += t * n // k
        return s
    if cls is _ZSetValue:
        d = v.dict
        s = 120 + getsizeof(d)
        if n:
            t = k = 0
            for m in islice(d, SAMPLE):
                t += getsizeof(m)
                k += 1
            # member + float + (score, member) tuple + SortedList slot
            s += (t // k + 24 + 56 + 9) * n
        return s
    if cls is _StreamValue:
        return v.mem_estimate()
    return getsizeof(v)


# Per-key overheads: the main dict entry, plus the eviction structure's
# entry while an evicting policy is active (set by Memory.configure).
_KEY_EXTRA = PY_DICT_ENTRY
_EXP_EXTRA = EXPIRE_ENTRY


def key_cost(db, key, v) -> int:
    c = getsizeof(key) + _KEY_EXTRA + pysize(v)
    exp = db.expires
    if exp and key in exp:
        c += _EXP_EXTRA
    return c


def db_size(db, exact_limit=None) -> int:
    """Estimate of a whole database (exact below exact_limit keys)."""
    d = db.d
    n = len(d)
    if not n:
        return 0
    if exact_limit is None or n <= exact_limit:
        return sum(key_cost(db, k, v) for k, v in d.items())
    step = n // exact_limit
    t = k = 0
    for key, v in islice(d.items(), 0, None, step):
        t += key_cost(db, key, v)
        k += 1
    return t * n // k


# -- key extraction (cached per command) --------------------------------------------------

_EXTRACT = {}


def _simple_specs(cmd):
    out = []
    for spec in cmd.key_specs:
        flags = spec.get("flags", ())
        if "NOT_KEY" in flags:
            continue
        bs = spec.get("begin_search", {})
        fk = spec.get("find_keys", {})
        if "index" not in bs or "range" not in fk:
            return None
        r = fk["range"]
        out.append((bs["index"]["pos"], r["lastkey"], r["step"], r["limit"]))
    return tuple(out)


def keys_of(cmd, argv):
    specs = _EXTRACT.get(cmd, 0)
    if specs == 0:
        specs = _EXTRACT[cmd] = _simple_specs(cmd)
    if specs is None:
        from .commands.command_cmd import get_keys
        try:
            ks = get_keys(cmd, argv)
        except Exception:  # noqa: BLE001
            return []
        return list(dict.fromkeys(ks)) if len(ks) > 1 else ks
    argc = len(argv)
    if len(specs) == 1:
        first, lastkey, step, limit = specs[0]
        if first >= argc:
            return []
        if lastkey == 0:
            return [argv[first]]
    keys = []
    for first, lastkey, step, limit in specs:
        if first >= argc:
            continue
        if lastkey >= 0:
            last = first + lastkey
        elif not limit:
            last = argc + lastkey
        else:
            last = first + ((argc - first) // limit + lastkey)
        if last >= argc:
            last = argc - 1
        keys.extend(argv[first:last + 1:step])
    if len(keys) > 1:
        keys = list(dict.fromkeys(keys))
    return keys


# -- eviction index ---------------------------------------------------------------------------

class Index:
    """Random access to the keys of one database (or of its volatile keys)
    with per-key access information (LRU: ms timestamp; LFU: packed
    minutes << 8 | counter)."""
    __slots__ = ("keys", "pos", "info")

    def __init__(self):
        self.keys = []
        self.pos = {}
        self.info = []

    def add(self, key, info):
        self.pos[key] = len(self.keys)
        self.keys.append(key)
        self.info.append(info)

    def remove_at(self, i):
        keys = self.keys
        info = self.info
        key = keys[i]
        lastk = keys.pop()
        lasti = info.pop()
        del self.pos[key]
        if i < len(keys):
            keys[i] = lastk
            info[i] = lasti
            self.pos[lastk] = i

    def __len__(self):
        return len(self.keys)


def lfu_minutes() -> int:
    return (int(_time()) // 60) & 0xFFFF


class LruQueue:
    """Approximate LRU order of one database's keys (its volatile keys
    under volatile-lru): the second-chance ("clock") algorithm.

    New keys join the tail of a queue with their creation time; an access
    to a key already queued records its time in ``ref`` (a small dict: the
    recently used keys).  Eviction takes keys from the head: one found in
    ``ref`` was used since it was queued and goes back to the tail with
    that time, the others are evicted.  The queue is thus ordered by last
    access time, up to the keys used since they were queued.  A new key
    costs two list appends (a second hash table of every key would cost a
    cache miss per write), and eviction works on slices of the queue with
    C-level map() calls.  The queue is a list with a moving head."""
    __slots__ = ("keys", "times", "head", "ref")

    def __init__(self):
        self.keys = []
        self.times = []
        self.head = 0
        self.ref = {}

    def __len__(self):
        return len(self.keys) - self.head

    def times_map(self) -> dict:
        """key -> last access ms, for every queued key (O(n))."""
        h = self.head
        m = dict(zip(self.keys[h:], self.times[h:]))
        m.update(self.ref)
        return m

    def requeue(self, keys, times):
        self.keys.extend(keys)
        self.times.extend(times)


class Memory:
    def __init__(self, srv):
        _types()
        self.srv = srv
        cfg = srv.config
        self.dbmem = [0] * len(srv.dbs)
        self.dataset = 0
        self.clients_mem = 0
        self.peak = 0
        self.tracking = False
        self.budget = 0            # dataset bytes allowed: maxmemory - STARTUP - clients
        self.slack = 0             # evictions go this far below the limit
        self.policy = cfg["maxmemory-policy"]
        self.lru_mode = self.lfu_mode = self.volatile = False
        self.indexes = None        # sampling policies (LFU, random, TTL): per-db Index
        self.lru = None            # LRU policies: per-db LruQueue
        self.clock = int(_time() * 1000)   # ms, refreshed by cron and eviction
        self.pool = []
        self.oom = False           # over the limit with nothing to evict
        self.wrap_active = False
        self.evicting_scheduled = False
        self.next_db = 0
        self.lazyfree = LazyFree(srv)
        srv.cron_hooks.append(self.cron)
        srv.startup_hooks.append(self._after_startup)
        cfg.on_change("maxmemory", lambda v: self.configure())
        cfg.on_change("maxmemory-policy", lambda v: self.configure(policy_changed=True))
        cfg.on_change("maxmemory-clients", lambda v: self.update_clients())
        self.configure()

    # -- configuration --------------------------------------------------------------------
    def configure(self, policy_changed=False):
        global _KEY_EXTRA, _EXP_EXTRA
        srv = self.srv
        cfg = srv.config
        self.policy = pol = cfg["maxmemory-policy"]
        self.lru_mode = "lru" in pol
        self.lfu_mode = "lfu" in pol
        # An LRU/LFU policy keeps access times even without a limit (OBJECT
        # IDLETIME/FREQ, RESTORE IDLETIME/FREQ), as Redis always does; the
        # accounting then runs too, with no limit to enforce.
        on = bool(srv.maxmemory) or self.lru_mode or self.lfu_mode
        self.volatile = pol.startswith("volatile")
        evicting = on and pol != "noeviction"
        # The eviction structures' cost per key they hold is charged in
        # each key's cost.
        extra = (LRU_ENTRY if self.lru_mode else INDEX_ENTRY) if evicting else 0
        kx = PY_DICT_ENTRY + (0 if self.volatile else extra)
        ex = EXPIRE_ENTRY + (extra if self.volatile else 0)
        changed = kx != _KEY_EXTRA or ex != _EXP_EXTRA
        _KEY_EXTRA, _EXP_EXTRA = kx, ex
        if on and (not self.tracking or changed):
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
            if srv.maxmemory and self.over() > 0 and pol != "noeviction":
                self.perform_evictions(unlimited=True)

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
        on: the wrappers are the commands (see commands.rewrap)."""
        from . import commands
        if self not in commands.WRAPPERS:
            commands.WRAPPERS.insert(0, self)    # innermost
        self.wrap_active = on
        commands.rewrap()

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
            if (not cmd.key_specs or "no_touch" in cmd.flags
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
                        if len(argv) > 1:
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

        def write1(c, argv):
            if m.dataset > m.budget and not (c.in_exec or c.in_script):
                r = m.evict_for(c, cmd)
                if r is not None:
                    return r
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
            try:
                return proc(c, argv)
            finally:
                v = d.get(k)
                if v is None:
                    delta = -pre
                else:
                    exp = db.expires
                    if v.__class__ is bytes and not exp:
                        delta = len(k) + len(v) + (2 * BYTES_BASE + _KEY_EXTRA) - pre
                    else:
                        delta = key_cost_(db, k, v) - pre
                    if lru is not None:
                        if tracked:
                            lru[db.id].ref[k] = m.clock
                        elif not volatile or k in exp:
                            q = lru[db.id]
                            q.keys.append(k)
                            q.times.append(m.clock)
                    elif indexed:
                        m.touch(db, (k,))
                if delta:
                    dbmem[db.id] += delta
                    m.dataset += delta
        if cmd.fullname != "set":
            return write1
        from . import db as dbm
        from .protocol import OK

        srv = self.srv
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
                delta = len(k) + len(v) + (2 * BYTES_BASE + _KEY_EXTRA)
                if queue_new:
                    q = lru[i]
                    q.keys.append(k)
                    q.times.append(m.clock)
                elif indexed:
                    m.touch(db, (k,))
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
        if self.tracking:
            ds = self.dataset
        else:
            ds = sum(db_size(db, 2000) for db in self.srv.dbs)
            self.update_clients()
        used = STARTUP + ds + self.clients_mem
        if used > self.peak:
            self.peak = used
        self.srv.used_memory_peak = self.peak
        return used

    def dataset_bytes(self) -> int:
        if self.tracking:
            return self.dataset
        return sum(db_size(db, 2000) for db in self.srv.dbs)

    def client_mem(self, c) -> int:
        tot = CLIENT_BASE
        if c.pend is not None:
            tot += len(c.pend)
        t = c.transport
        if t is not None and not c.closing:
            try:
                tot += t.get_write_buffer_size()
            except Exception:  # noqa: BLE001
                pass
        return tot

    def update_clients(self):
        srv = self.srv
        tot = 0
        cm = self.client_mem
        for c in srv.clients.values():
            tot += cm(c)
        limit = srv.config["maxmemory-clients"]
        if limit:
            if limit < 0:     # a percentage of maxmemory
                limit = srv.maxmemory * -limit // 100
            if limit and tot > limit:
                tot = self.evict_clients(tot, limit)
        self.clients_mem = tot
        srv.mem_clients_normal = tot
        self.budget = srv.maxmemory - STARTUP - tot if srv.maxmemory else 1 << 62
        s = srv.maxmemory >> 9
        self.slack = s if s < (1 << 20) else (1 << 20)

    def evict_clients(self, tot, limit) -> int:
        """maxmemory-clients: disconnect the clients using the most memory
        until the total is under the limit (CLIENT NO-EVICT clients and
        replication links are exempt)."""
        cands = []
        for c in self.srv.clients.values():
            if c.no_evict or c.closing or getattr(c, "is_replica_link", False):
                continue
            cands.append((self.client_mem(c), c.id, c))
        cands.sort(reverse=True)
        for mem, _, c in cands:
            if tot <= limit:
                break
            log.verbose("Evicting client: %s" % c.info_string())
            stats.evicted_clients += 1
            c.closing = True
            t = c.transport
            if t is not None:
                t.abort()
            tot -= mem
        return tot

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
        post = 0
        d = db.d
        for k in keys:
            v = d.get(k)
            if v is not None:
                post += key_cost(db, k, v)
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
        else:
            self.touch_keys(db, keys, was)

    def measure(self, db, keys):
        """Bytes held by keys and which of them exist (blocked clients
        served outside a command)."""
        t = 0
        d = db.d
        for k in keys:
            v = d.get(k)
            if v is not None:
                t += key_cost(db, k, v)
        return (t, self.present(db, keys))

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

    # -- access information -------------------------------------------------------------
    def touch_keys(self, db, keys, was):
        """Record an access to keys; was[i]: keys[i] was already tracked."""
        if self.lru is not None:
            q = self.lru[db.id]
            src = db.expires if self.volatile else db.d
            now = self.clock
            for k, old in zip(keys, was):
                if k in src:
                    if old:
                        q.ref[k] = now
                    else:
                        q.keys.append(k)
                        q.times.append(now)
        elif self.indexes is not None:
            self.touch(db, keys)

    def _fill_lru(self, loaded=None):
        """Queue the keys (volatile keys) missing from the LRU queues, by
        their loaded idle times when known, else as least recently used.
        Returns the number queued."""
        added = 0
        now = self.clock
        for db in self.srv.dbs:
            src = db.expires if self.volatile else db.d
            if not src:
                continue
            q = self.lru[db.id]
            if len(q):
                queued = set(q.keys[q.head:])
                missing = [k for k in src if k not in queued]
            else:
                missing = list(src)
            if not missing:
                continue
            times = loaded[db.id] if loaded else None
            if times:
                missing.sort(key=lambda k: times.get(k, now))
                mt = [times.get(k, now) for k in missing]
            else:
                mt = [now] * len(missing)
            q.keys = missing + q.keys[q.head:]
            q.times = mt + q.times[q.head:]
            q.head = 0
            added += len(missing)
        return added

    def _index(self, db):
        idx = self.indexes[db.id]
        src = db.expires if self.volatile else db.d
        if idx is None or len(src) > len(idx):
            idx = self._build(db, idx)
        return idx

    def _build(self, db, old):
        src = db.expires if self.volatile else db.d
        idx = Index()
        now = self._now_info()
        if old is not None:
            pos, info = old.pos, old.info
            for k in src:
                i = pos.get(k)
                idx.add(k, info[i] if i is not None else now)
        else:
            for k in src:
                idx.add(k, now)
        self.indexes[db.id] = idx
        return idx

    def _now_info(self):
        if self.lfu_mode:
            return (lfu_minutes() << 8) | LFU_INIT_VAL
        return self.clock

    def touch(self, db, keys):
        idx = self.indexes[db.id]
        if idx is None:
            idx = self._index(db)
        src = db.expires if self.volatile else db.d
        pos = idx.pos
        info = idx.info
        if self.lfu_mode:
            for k in keys:
                i = pos.get(k)
                if i is None:
                    if k in src:
                        idx.add(k, (lfu_minutes() << 8) | LFU_INIT_VAL)
                else:
                    info[i] = self._lfu_access(info[i])
        else:
            now = self.clock
            for k in keys:
                if k not in pos and k in src:
                    idx.add(k, now)

    def _lfu_decr(self, packed):
        ldt = packed >> 8
        counter = packed & 255
        period = self.srv.config["lfu-decay-time"]
        if period:
            now = lfu_minutes()
            elapsed = now - ldt if now >= ldt else 65535 - ldt + now
            n = elapsed // period
            if n:
                counter = counter - n if n < counter else 0
        return counter

    def _lfu_access(self, packed):
        counter = self._lfu_decr(packed)
        if counter < 255:
            base = counter - LFU_INIT_VAL
            if base < 0:
                base = 0
            if random() < 1.0 / (base * self.srv.config["lfu-log-factor"] + 1):
                counter += 1
        return (lfu_minutes() << 8) | counter

    # access-time interface (OBJECT IDLETIME/FREQ, DEBUG OBJECT, RDB, RESTORE)
    def _info_of(self, db, key):
        if self.lru is not None:
            q = self.lru[db.id]
            t = q.ref.get(key)
            if t is None and key in (db.expires if self.volatile else db.d):
                try:
                    t = q.times[q.keys.index(key, q.head)]
                except ValueError:
                    t = None
            return t
        if self.indexes is None:
            return None
        idx = self._index(db)
        i = idx.pos.get(key)
        return None if i is None else idx.info[i]

    def idle_seconds(self, db, key) -> int:
        x = self._info_of(db, key)
        if x is None or self.lfu_mode:
            return 0
        return max(0, int(_time() * 1000 - x) // 1000)

    def idle_function(self, db):
        """key -> idle seconds for a whole database (RDB saving)."""
        if self.lru is None or self.lfu_mode:
            return lambda key: self.idle_seconds(db, key)
        times = self.lru[db.id].times_map()
        now = _time() * 1000

        def idle(key):
            t = times.get(key)
            return 0 if t is None else max(0, int(now - t) // 1000)
        return idle

    def freq(self, db, key) -> int:
        x = self._info_of(db, key)
        if x is None:
            return LFU_INIT_VAL if self.lfu_mode else 0
        return self._lfu_decr(x) if self.lfu_mode else 0

    def set_idle(self, db, key, secs):
        if not self.lru_mode:
            return
        t = int(_time() * 1000) - int(secs) * 1000
        if self.lru is not None:
            # RESTORE IDLETIME / RDB loading: the access time is reported
            # from ref; at startup the queues are built in that order.
            self.lru[db.id].ref[key] = t

    def set_freq(self, db, key, f):
        if not self.lfu_mode or self.indexes is None:
            return
        val = (lfu_minutes() << 8) | min(255, max(0, int(f)))
        idx = self._index(db)
        i = idx.pos.get(key)
        if i is None:
            idx.add(key, val)
        else:
            idx.info[i] = val

    # -- eviction -----------------------------------------------------------------------
    def over(self) -> int:
        used = STARTUP + self.dataset + self.clients_mem
        if used > self.peak:
            self.peak = used
        return used - self.srv.maxmemory

    def evict_hook(self) -> bool:
        """performEvictions: True when still over the limit and nothing could
        be freed (denyoom commands are then refused)."""
        if not self.tracking:
            return False
        if self.dataset <= self.budget:
            if self.oom:
                self._set_oom(False)
            return False
        srv = self.srv
        if srv.is_replica and srv.config["replica-ignore-maxmemory"]:
            return False
        fail = self.perform_evictions()
        self._set_oom(fail)
        return fail

    def time_limit(self) -> float:
        t = self.srv.config["maxmemory-eviction-tenacity"]
        if t <= 10:
            return 50e-6 * t
        if t < 100:
            return 500e-6 * 1.15 ** (t - 10)
        return 1e9

    def perform_evictions(self, unlimited=False) -> bool:
        """Evict until the dataset is a little (``slack``) under the limit.
        True when still over the limit with nothing left to evict."""
        if self.policy == "noeviction":
            return True
        self.over()      # peak
        t0 = _perf()
        self.clock = int(_time() * 1000)
        limit = 1e9 if unlimited else self.time_limit()
        lazy = self.srv.config["lazyfree-lazy-eviction"]
        target = self.budget - self.slack
        if self.lru is not None:
            fail = self._evict_lru(target, lazy, t0, limit)
        else:
            if self.indexes is None:
                self.indexes = [None] * len(self.srv.dbs)
            n = 0
            fail = False
            while self.dataset > target:
                if not self.evict_one(lazy):
                    fail = True
                    break
                n += 1
                if not n & 15 and _perf() - t0 > limit:
                    self.schedule_eviction()
                    break
        if fail and self.dataset <= self.budget:
            fail = False
        dt = _perf() - t0
        lt = client_mod._LATENCY_MONITOR
        if lt is not None and dt >= lt:
            self.srv.latency_add("eviction-cycle", int(dt * 1000))
        return fail

    def _evict_lru(self, target, lazy, t0, limit) -> bool:
        lru = self.lru
        dbs = self.srv.dbs
        srv = self.srv
        volatile = self.volatile
        evicted = 0
        try:
            while self.dataset > target:
                live = [i for i, q in enumerate(lru) if len(q.keys) > q.head]   # non-empty queues
                if not live:
                    if self._fill_lru():
                        continue
                    return True
                q = None
                if len(live) == 1:
                    i = live[0]
                else:   # the database whose head key is the least recently used
                    i = min(live, key=lambda j: lru[j].ref.get(lru[j].keys[lru[j].head],
                                                                lru[j].times[lru[j].head]))
                q = lru[i]
                db = dbs[i]
                d = db.d
                # how many keys, at the database's average cost, free enough
                nkeys = len(d)
                avg = self.dbmem[i] // nkeys if nkeys else 64
                want = (self.dataset - target) // (avg if avg > 0 else 64) + 1
                if len(live) > 1 and want > 16:
                    want = 16
                h = q.head
                batch = q.keys[h:h + want]
                q.head = h + len(batch)
                n = self._evict_batch(db, q, batch, lazy)
                evicted += n
                if len(q.keys) > 4096 and q.head > len(q.keys) >> 1:
                    del q.keys[:q.head]
                    del q.times[:q.head]
                    q.head = 0
                if _perf() - t0 > limit:
                    self.schedule_eviction()
                    return False
        finally:
            stats.evicted_keys += evicted
            srv.dirty += evicted
        return False

    def _evict_batch(self, db, q, batch, lazy) -> int:
        """Evict the keys of batch (taken from q's head) except the stale
        ones and those used since they were queued (queued again).  C-level
        map() over the batch; per-key Python only for the features that need
        it (notifications, WATCH, replication, lazy freeing)."""
        d = db.d
        exp = db.expires
        ref = q.ref
        if ref:
            before = len(ref)
            r = list(map(ref.pop, batch, repeat(None)))
            if len(ref) != before:      # keys used since queued go back, with that time
                used = list(map(is_not, r, repeat(None)))
                again = list(compress(batch, used))
                at = list(compress(r, used))
                if not all(map(d.__contains__, again)):     # deleted since
                    keep = list(map(d.__contains__, again))
                    again = list(compress(again, keep))
                    at = list(compress(at, keep))
                q.requeue(again, at)
                batch = list(compress(batch, map(not_, used)))
        if self.volatile:
            if not all(map(exp.__contains__, batch)):
                batch = [k for k in batch if k in exp]
        before = len(d)
        vals = list(map(d.pop, batch, repeat(None)))
        if before - len(d) != len(batch):     # stale entries (deleted keys, duplicates)
            live = list(map(is_not, vals, repeat(None)))
            batch = list(compress(batch, live))
            vals = list(compress(vals, live))
        n = len(batch)
        if not n:
            return 0
        nexp = 0
        if exp:
            nexp = n - list(map(exp.pop, batch, repeat(None))).count(None)
        types = set(map(type, vals))
        if len(types) == 1 and bytes in types:
            vsize = sum(map(len, vals)) + n * BYTES_BASE
        elif len(types) == 1 and EmbStr in types:
            vsize = sum(map(getsizeof, vals))
        else:
            vsize = sum(map(pysize, vals))
        # keys are always bytes
        freed = sum(map(len, batch)) + n * (BYTES_BASE + _KEY_EXTRA) + vsize + nexp * _EXP_EXTRA
        self.dataset -= freed
        self.dbmem[db.id] -= freed
        db.dels += n
        bk = db.blocking_keys
        if bk:
            for k, v in zip(batch, vals):
                if k in bk and v.__class__ in DELETE_SIGNALS:
                    signal_key_ready(db, k)
        wk = db.watched_keys
        if wk:
            for k in batch:
                if k in wk:
                    touch_watched(db, k)
        trk = self.srv.tracking
        if trk.wrap_active:
            for k in batch:
                trk.invalidate(k, False)
        if notify.flags & notify.EVICTED:
            for k in batch:
                notify.notify(notify.EVICTED, b"evicted", k, db.id)
        srv = self.srv
        if propagating(srv):
            for k in batch:
                propagate_deletion(srv, db, k)
        if lazy:
            free = self.lazyfree.free
            for v in vals:
                if v.__class__ is not bytes:
                    free(v)
        return n

    def _evict(self, db, key, lazy):
        v = db.d[key]
        cost = key_cost(db, key, v)
        db.delete(key)
        trk = self.srv.tracking
        if trk.wrap_active:
            trk.invalidate(key, False)
        self.dbmem[db.id] -= cost
        self.dataset -= cost
        stats.evicted_keys += 1
        if notify.flags & notify.EVICTED:
            notify.notify(notify.EVICTED, b"evicted", key, db.id)
        srv = self.srv
        propagate_deletion(srv, db, key)
        srv.dirty += 1
        if lazy:
            self.lazyfree.free(v)

    def schedule_eviction(self):
        if self.evicting_scheduled:
            return
        loop = self.srv.loop
        if loop is None:
            return
        self.evicting_scheduled = True

        def step():
            self.evicting_scheduled = False
            if self.tracking and self.over() > 0:
                self.perform_evictions()
        loop.call_soon(step)

    def evict_one(self, lazy) -> bool:
        dbs = self.srv.dbs
        pol = self.policy
        if pol.endswith("random"):
            start = self.next_db
            for j in range(len(dbs)):
                db = dbs[(start + j) % len(dbs)]
                self.next_db = (start + j + 1) % len(dbs)
                src = db.expires if self.volatile else db.d
                if not src:
                    continue
                idx = self._index(db)
                while len(idx):
                    i = int(random() * len(idx))
                    k = idx.keys[i]
                    if k in src:
                        self.evict_key(db, k, lazy)
                        return True
                    idx.remove_at(i)
            return False
        # LFU / TTL: the eviction pool
        pool = self.pool
        samples = self.srv.config["maxmemory-samples"]
        while True:
            total = 0
            for db in dbs:
                src = db.expires if self.volatile else db.d
                if not src:
                    continue
                total += len(src)
                self._populate(db, src, pool, samples)
            if not total:
                return False
            while pool:
                score, dbid, k = pool.pop()
                db = dbs[dbid]
                src = db.expires if self.volatile else db.d
                if k in src:
                    self.evict_key(db, k, lazy)
                    return True
            # all candidates were stale: sample again

    def _populate(self, db, src, pool, samples):
        idx = self._index(db)
        keys = idx.keys
        info = idx.info
        lfu = self.lfu_mode
        exp = db.expires
        dbid = db.id
        got = tries = 0
        full = len(pool) >= EVPOOL_SIZE
        while got < samples and tries < samples * 4:
            n = len(keys)
            if not n:
                break
            tries += 1
            i = int(random() * n)
            k = keys[i]
            if k not in src:
                idx.remove_at(i)
                continue
            got += 1
            if lfu:
                score = 255 - self._lfu_decr(info[i])
            else:  # volatile-ttl: the nearest expiry first
                score = -exp[k]
            if full and score <= pool[0][0]:
                continue
            cand = (score, dbid, k)
            for e in pool:
                if e[2] == k and e[1] == dbid:
                    break
            else:
                if full:
                    pool[0] = cand
                    pool.sort()
                else:
                    insort(pool, cand)
                    full = len(pool) >= EVPOOL_SIZE

    def evict_key(self, db, key, lazy):
        idx = self.indexes[db.id] if self.indexes is not None else None
        if idx is not None:
            i = idx.pos.get(key)
            if i is not None:
                idx.remove_at(i)
        self._evict(db, key, lazy)

    def cron(self):
        self.clock = int(_time() * 1000)
        if self.tracking:
            self.update_clients()
            if self.dataset > self.budget or self.oom:
                self.evict_hook()
            lru = self.lru
            if lru is not None:
                # Drop the queue entries of deleted keys (and the duplicates
                # of keys deleted and created again) once they dominate.
                for db in self.srv.dbs:
                    q = lru[db.id]
                    src = db.expires if self.volatile else db.d
                    if len(q) > 1024 and len(q) > 2 * len(src):
                        self._compact(q, src)
        elif self.srv.config["maxmemory-clients"]:
            self.update_clients()
        if self.lazyfree.queue:
            self.lazyfree.schedule()

    @staticmethod
    def _compact(q, src):
        """Drop the entries of deleted keys and duplicates (a key deleted and
        created again keeps its first place, with its latest time)."""
        h = q.head
        m = dict(zip(q.keys[h:], q.times[h:]))
        for k in m.keys() - src.keys():
            del m[k]
        q.keys = list(m)
        q.times = list(m.values())
        q.head = 0
        ref = q.ref
        if ref:
            for k in ref.keys() - src.keys():
                del ref[k]


def _oom_error():
    from .errors import OOM
    return OOM


# -- lazy freeing ------------------------------------------------------------------------------

def free_effort(v) -> int:
    cls = v.__class__
    if cls is bytes or cls is bytearray or cls is EmbStr:
        return 1
    if cls is _StreamValue:
        # Redis counts the radix tree's nodes (about two per listpack)
        # and the groups' PEL entries.
        effort = 2 * len(v.nodes) + 1
        for g in (v.groups or {}).values():
            effort += 1 + len(g.pel)
        return effort
    try:
        return len(v)
    except TypeError:
        return 1


class LazyFree:
    def __init__(self, srv):
        self.srv = srv
        self.queue = deque()
        self.freed = 0
        self.scheduled = False
        srv.lazyfree_pending = 0
        srv.lazyfreed_objects = 0

    def free(self, v) -> bool:
        """Take over the reference to v: big values are freed incrementally."""
        if v is None or free_effort(v) <= LAZYFREE_THRESHOLD:
            return False
        self.queue.append(self._parts(v))
        self.srv.lazyfree_pending = len(self.queue)
        self.schedule()
        return True

    def free_db(self, d, expires):
        """An emptied database's dicts (FLUSHALL/FLUSHDB ASYNC)."""
        if len(d) > LAZYFREE_THRESHOLD:
            self.queue.append([d, expires])
        else:
            return
        self.srv.lazyfree_pending = len(self.queue)
        self.schedule()

    def _parts(self, v):
        """The plain containers holding v's elements."""
        if v.__class__ is _ZSetValue:
            sl = v.sl
            return [getattr(sl, "_lists", []), v.dict, v]
        if v.__class__ is _StreamValue:
            parts = [v]
            for node in v.nodes:
                parts.append(node.ids)
                parts.append(node.fvs)
            return parts
        aux = getattr(v, "_aux", None)
        if aux is not None:
            v._aux = None
            return [aux.arr or [], aux.items or [], aux.keys or [], v]
        return [v]

    def schedule(self):
        if self.scheduled:
            return
        loop = self.srv.loop
        if loop is None:
            self.step(budget=1e9)
            return
        self.scheduled = True
        loop.call_soon(self._run)

    def _run(self):
        self.scheduled = False
        self.step()
        if self.queue:
            self.scheduled = True
            self.srv.loop.call_soon(self._run)

    def step(self, budget=0.001):
        t0 = _perf()
        q = self.queue
        while q:
            parts = q[0]
            while parts:
                o = parts[-1]
                if not self._drain(o, 2048):
                    parts.pop()
                if _perf() - t0 > budget:
                    break
            if not parts:
                q.popleft()
                self.freed += 1
                self.srv.lazyfreed_objects = self.freed
            if _perf() - t0 > budget:
                break
        self.srv.lazyfree_pending = len(q)

    def _drain(self, o, n) -> bool:
        """Free up to n elements of o; False when o is empty."""
        if not o.__len__():
            return False
        if isinstance(o, dict):
            pop = o.popitem
            big = []
            for _ in range(min(n, len(o))):
                k, v = pop()
                if v.__class__ is not bytes and free_effort(v) > LAZYFREE_THRESHOLD:
                    big.append(v)
            for v in big:
                self.queue.append(self._parts(v))
            return True
        if isinstance(o, (set, list, deque)):
            pop = o.pop
            if o.__class__ is list and o[-1].__class__ is list:
                n = 2      # SortedList's sublists (up to ~2000 elements each)
            for _ in range(min(n, len(o))):
                pop()
            return True
        return False


def _warn(msg):
    log.warning(msg)
