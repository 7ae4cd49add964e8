"""Eviction and the access information it uses (LRU clock, LFU counter).

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
"""

from __future__ import annotations

import time
from bisect import insort
from itertools import compress, repeat
from operator import is_not, not_
from random import random

from ..errors import OOM
from ..keyspace import notify
from ..keyspace.db import DELETE_SIGNALS, EmbStr, signal_key_ready, stats, touch_watched
from ..net import client as client_mod
from ..replication.propagate import propagate_deletion, propagate_pending, propagating
from .sizes import (BYTES_BASE, EVPOOL_SIZE, EXPIRE_ENTRY, LFU_INIT_VAL, PY_DICT_ENTRY, STARTUP, getsizeof,
                    key_cost, pysize)

_time = time.time
_perf = time.perf_counter

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


class Eviction:
    """The access-information and eviction half of ``Memory`` (a mixin:
    the state lives in ``Memory.__init__``)."""

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

    def set_idle(self, db, key, secs, by_command=False):
        """The key's idle time (RDB loading; RESTORE IDLETIME: by_command,
        then the command's own access does not count)."""
        if by_command:
            self.set_by_command = (db.id, key)
        if not self.lru_mode:
            return
        t = int(_time() * 1000) - int(secs) * 1000
        if self.lru is not None:
            # RESTORE IDLETIME / RDB loading: the access time is reported
            # from ref; at startup the queues are built in that order.
            self.lru[db.id].ref[key] = t

    def set_freq(self, db, key, f, by_command=False):
        """The key's LFU counter (RDB loading; RESTORE FREQ: by_command)."""
        if by_command:
            self.set_by_command = (db.id, key)
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
    def note_peak(self):
        used = STARTUP + self.dataset + self.clients_mem
        if used > self.peak:
            self.peak = used
            self.peak_time = int(_time())

    def evict_hook(self) -> bool:
        """performEvictions: True when still over the limit and nothing could
        be freed (denyoom commands are then refused)."""
        if not self.tracking:
            return False
        if self.dataset <= self.budget:
            if self.oom:
                self._set_oom(False)
            return False
        now = _perf()
        if now - self.clients_at > 0.01:
            # the clients' figure is cron's: take it anew (clients gone,
            # output sent) before evicting keys for it, at most every 10 ms
            self.clients_at = now
            self.update_clients()
            if self.dataset <= self.budget:
                if self.oom:
                    self._set_oom(False)
                return False
        srv = self.srv
        # isSafeToPerformEvictions: not while loading or while clients are
        # paused (the dataset stays still), nor on a replica ignoring maxmemory
        if srv.loading or srv.pause_type is not None or (
                srv.is_replica and srv.config["replica-ignore-maxmemory"]):
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

    def perform_evictions(self) -> bool:
        """Evict until the dataset is a little (``slack``) under the limit,
        for at most maxmemory-eviction-tenacity's time (then the rest from
        the event loop).  True when still over the limit with nothing left
        to evict."""
        if self.policy == "noeviction":
            return True
        self.note_peak()
        t0 = _perf()
        self.clock = int(_time() * 1000)
        limit = self.time_limit()
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
        freed = sum(map(len, batch)) + n * (BYTES_BASE + PY_DICT_ENTRY) + vsize + nexp * EXPIRE_ENTRY
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
                propagate_pending(srv)     # each DEL on its own, never in a MULTI (as Redis)
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
        propagate_pending(srv)
        if lazy:
            self.lazyfree.free(v)

    def schedule_eviction(self):
        """startEvictionTimeProc: evict from the event loop, a cycle per
        iteration, until under the limit or nothing is left to evict."""
        if self.evicting_scheduled:
            return
        loop = self.srv.loop
        if loop is None:
            return
        self.evicting_scheduled = True

        def step():
            self.evicting_scheduled = False
            if self.tracking and self.dataset > self.budget:
                self.evict_hook()
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
    return OOM
