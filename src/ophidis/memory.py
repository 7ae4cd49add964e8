"""Memory accounting, maxmemory and eviction, LRU/LFU, lazy freeing.

Accounting (``used_memory``)
----------------------------
CPython never tells how many bytes a value holds, and freed memory stays in
pymalloc's arenas, so neither RSS nor allocator statistics follow deletes.
Ophidis estimates instead, per key, in O(1):

  cost(key) = sizeof(key) + DICT_ENTRY + pysize(value) [+ EXPIRE_ENTRY]

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
from itertools import islice
from random import random

from . import client as client_mod
from . import log
from . import notify
from .db import EmbStr, stats

getsizeof = sys.getsizeof
_time = time.time
_perf = time.perf_counter

DICT_ENTRY = 42          # amortized bytes per entry of a big dict (measured)
EXPIRE_ENTRY = DICT_ENTRY + 32
STARTUP = 1 << 20        # fixed server structures (interpreter code not counted)
CLIENT_BASE = 2048       # per connection: objects, transport, parser
INDEX_ENTRY = 96         # per key in an eviction index
SAMPLE = 4
LAZYFREE_THRESHOLD = 64
EVPOOL_SIZE = 16
LFU_INIT_VAL = 5

_HashValue = _SetValue = _ZSetValue = _ListValue = None


def _types():
    global _HashValue, _SetValue, _ZSetValue, _ListValue
    from .types.containers import HashValue, ListValue, SetValue
    from .types.zset import ZSetValue
    _HashValue, _SetValue, _ZSetValue, _ListValue = HashValue, SetValue, ZSetValue, ListValue


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
    return getsizeof(v)


def key_cost(db, key, v) -> int:
    c = getsizeof(key) + DICT_ENTRY + pysize(v)
    exp = db.expires
    if exp and key in exp:
        c += EXPIRE_ENTRY
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
        self.policy = cfg["maxmemory-policy"]
        self.indexes = None          # per-db Index while an evicting policy is on
        self.idx_entries = 0
        self.pool = []
        self.evicting_scheduled = False
        self.next_db = 0
        self.lazyfree = LazyFree(srv)
        srv.lazyfree = self.lazyfree
        srv.used_memory_fn = self.used_memory
        srv.mem_track = None
        srv.evict_hook = self.evict_hook
        srv.lru_clock = self
        srv.memory = self
        srv.cron_hooks.append(self.cron)
        srv.startup_hooks.append(self._after_startup)
        cfg.on_change("maxmemory", lambda v: self.configure())
        cfg.on_change("maxmemory-policy", lambda v: self.configure(policy_changed=True))
        self.configure()

    # -- configuration --------------------------------------------------------------------
    def configure(self, policy_changed=False):
        srv = self.srv
        cfg = srv.config
        self.policy = cfg["maxmemory-policy"]
        on = bool(srv.maxmemory)
        self.lru_mode = "lru" in self.policy
        self.lfu_mode = "lfu" in self.policy
        self.volatile = self.policy.startswith("volatile")
        if on and not self.tracking:
            self.recompute()
            self.tracking = True
        elif not on:
            self.tracking = False
        if policy_changed or not on or self.policy == "noeviction":
            self.indexes = None
            self.idx_entries = 0
            self.pool = []
        if on and self.policy != "noeviction" and self.indexes is None:
            self.indexes = [None] * len(srv.dbs)
        srv.mem_track = self if on else None
        srv.update_server_slow()
        if on:
            self.update_clients()
            if self.over() > 0 and self.policy != "noeviction":
                self.perform_evictions(unlimited=True)

    def _after_startup(self):
        if self.tracking:
            self.recompute()

    def recompute(self):
        dbs = self.srv.dbs
        self.dbmem = [db_size(db) for db in dbs]
        self.dataset = sum(self.dbmem)

    # -- accounting -----------------------------------------------------------------------
    def used_memory(self) -> int:
        if self.tracking:
            ds = self.dataset
        else:
            ds = sum(db_size(db, 2000) for db in self.srv.dbs)
            self.update_clients()
        used = STARTUP + ds + self.clients_mem + self.idx_entries * INDEX_ENTRY
        if used > self.peak:
            self.peak = used
        self.srv.used_memory_peak = self.peak
        return used

    def dataset_bytes(self) -> int:
        if self.tracking:
            return self.dataset
        return sum(db_size(db, 2000) for db in self.srv.dbs)

    def update_clients(self):
        tot = 0
        for c in self.srv.clients.values():
            tot += CLIENT_BASE
            if c.pend is not None:
                tot += len(c.pend)
            t = c.transport
            if t is not None and not c.closing:
                try:
                    tot += t.get_write_buffer_size()
                except Exception:  # noqa: BLE001
                    pass
        self.clients_mem = tot
        self.srv.mem_clients_normal = tot

    def before(self, c, cmd, argv):
        """Called by Server.call while maxmemory is set."""
        keys = keys_of(cmd, argv)
        db = c.db
        if not cmd.write:
            if keys and self.indexes is not None and (self.lru_mode or self.lfu_mode):
                self.touch(db, keys)
            if cmd.name == "debug":
                return (db, [], 0, None)
            return None
        pre = 0
        lookup = db.lookup_write
        for k in keys:
            v = lookup(k)
            if v is not None:
                pre += key_cost(db, k, v)
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
        return (db, keys, pre, extra)

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
        if tok is None:
            return
        db, keys, pre, extra = tok
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
            elif name in ("flushall", "swapdb", "debug", "function"):
                self.recompute()
            if name in ("flushdb", "flushall", "swapdb", "debug"):
                self.indexes = None
                self.idx_entries = 0
                self.pool = []
                self.configure()
        elif self.indexes is not None:
            self.touch(db, keys)

    def deleted(self, db, key, v):
        """A key is being removed outside a measured command (expiry)."""
        if self.tracking:
            c = key_cost(db, key, v)
            self.dbmem[db.id] -= c
            self.dataset -= c

    # -- access information -------------------------------------------------------------
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
            self.idx_entries -= len(old)
        else:
            for k in src:
                idx.add(k, now)
        self.indexes[db.id] = idx
        self.idx_entries += len(idx)
        return idx

    def _now_info(self):
        if self.lfu_mode:
            return (lfu_minutes() << 8) | LFU_INIT_VAL
        return int(_time() * 1000)

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
                        self.idx_entries += 1
                else:
                    info[i] = self._lfu_access(info[i])
        else:
            now = int(_time() * 1000)
            for k in keys:
                i = pos.get(k)
                if i is None:
                    if k in src:
                        idx.add(k, now)
                        self.idx_entries += 1
                else:
                    info[i] = now

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

    # lru_clock interface (OBJECT IDLETIME/FREQ, DEBUG OBJECT, RDB, RESTORE)
    def _info_of(self, db, key):
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

    def freq(self, db, key) -> int:
        x = self._info_of(db, key)
        if x is None:
            return LFU_INIT_VAL if self.lfu_mode else 0
        return self._lfu_decr(x) if self.lfu_mode else 0

    def _set_info(self, db, key, val):
        if self.indexes is None:
            return
        idx = self._index(db)
        i = idx.pos.get(key)
        if i is None:
            idx.add(key, val)
            self.idx_entries += 1
        else:
            idx.info[i] = val

    def set_idle(self, db, key, secs):
        if self.lru_mode:
            self._set_info(db, key, int(_time() * 1000) - int(secs) * 1000)

    def set_freq(self, db, key, f):
        if self.lfu_mode:
            self._set_info(db, key, (lfu_minutes() << 8) | min(255, max(0, int(f))))

    # -- eviction -----------------------------------------------------------------------
    def over(self) -> int:
        used = STARTUP + self.dataset + self.clients_mem + self.idx_entries * INDEX_ENTRY
        if used > self.peak:
            self.peak = used
        return used - self.srv.maxmemory

    def evict_hook(self) -> bool:
        """performEvictions: True when still over the limit and nothing could
        be freed (denyoom commands are then refused)."""
        if not self.tracking:
            return False
        excess = STARTUP + self.dataset + self.clients_mem + self.idx_entries * INDEX_ENTRY - self.srv.maxmemory
        if excess <= 0:
            return False
        srv = self.srv
        if srv.is_replica and srv.config["replica-ignore-maxmemory"]:
            return False
        return self.perform_evictions()

    def time_limit(self) -> float:
        t = self.srv.config["maxmemory-eviction-tenacity"]
        if t <= 10:
            return 50e-6 * t
        if t < 100:
            return 500e-6 * 1.15 ** (t - 10)
        return 1e9

    def perform_evictions(self, unlimited=False) -> bool:
        if self.policy == "noeviction":
            return True
        if self.indexes is None:
            self.indexes = [None] * len(self.srv.dbs)
        t0 = _perf()
        limit = 1e9 if unlimited else self.time_limit()
        n = 0
        fail = False
        lazy = self.srv.config["lazyfree-lazy-eviction"]
        while self.over() > 0:
            if not self.evict_one(lazy):
                fail = True
                break
            n += 1
            if not n & 15 and _perf() - t0 > limit:
                self.schedule_eviction()
                break
        dt = _perf() - t0
        lt = client_mod._LATENCY_MONITOR
        if lt is not None and dt >= lt:
            self.srv.latency_add("eviction-cycle", int(dt * 1000))
        return fail

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
                    self.idx_entries -= 1
            return False
        # LRU / LFU / TTL: the eviction pool
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
        now = int(_time() * 1000)
        lru = self.lru_mode
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
                self.idx_entries -= 1
                continue
            got += 1
            if lru:
                score = now - info[i]
            elif lfu:
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
        if self.indexes is not None:
            idx = self.indexes[db.id]
            if idx is not None:
                i = idx.pos.get(key)
                if i is not None:
                    idx.remove_at(i)
                    self.idx_entries -= 1
        v = db.d.get(key)
        cost = key_cost(db, key, v)
        db.delete(key)
        self.dbmem[db.id] -= cost
        self.dataset -= cost
        stats.evicted_keys += 1
        notify.notify(notify.EVICTED, b"evicted", key, db.id)
        self.srv.propagate_del(db, key)
        self.srv.dirty += 1
        if lazy:
            self.lazyfree.free(v)

    def cron(self):
        if self.tracking:
            self.update_clients()
            if self.over() > 0:
                self.evict_hook()
        if self.lazyfree.queue:
            self.lazyfree.schedule()


# -- lazy freeing ------------------------------------------------------------------------------

def free_effort(v) -> int:
    cls = v.__class__
    if cls is bytes or cls is bytearray or cls is EmbStr:
        return 1
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


def install(srv):
    m = Memory(srv)
    from .commands import memory_cmd  # noqa: F401  (registers MEMORY)
    return m


def _warn(msg):
    log.warning(msg)
