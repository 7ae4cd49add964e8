"""Lazy freeing
------------
Dropping the last reference to a big dict/set frees it synchronously (even in
another thread: deallocation holds the GIL), so big values given to
``LazyFree.free`` are emptied in slices of a millisecond or so from the event
loop instead.
"""

from __future__ import annotations

import time
from collections import deque

from ..keyspace.db import EmbStr, KeyTable, stats
from ..types.zset import ZIndex as _ZIndex
from .sizes import LAZYFREE_THRESHOLD, _SetValue, _StreamValue, _ZSetValue

_perf = time.perf_counter

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


class _Job:
    """One free in the background: the containers left to empty (a stack:
    the last is emptied first) and the objects its end completes, as Redis
    counts them (lazyfree_pending_objects / lazyfreed_objects: 1 for a
    value, a database's number of keys for a flushed database)."""
    __slots__ = ("parts", "objects")

    def __init__(self, parts, objects):
        self.parts = parts
        self.objects = objects


class LazyFree:
    """The background free's queue, in order: _Job entries, and the
    callables of ``after`` (run when every job before them is done, as
    bioCreateCompRq's completion requests)."""

    def __init__(self, srv):
        self.srv = srv
        self.queue = deque()
        self.scheduled = False

    def free(self, v) -> bool:
        """Take over the reference to v: big values are freed incrementally."""
        if v is None or free_effort(v) <= LAZYFREE_THRESHOLD:
            return False
        self._push(self._parts(v), 1)
        return True

    def count_freed(self, n):
        """Objects let go at once that Redis frees in its lazyfree thread
        (FUNCTION FLUSH ASYNC's functions and engine): lazyfreed_objects."""
        stats.lazyfreed_objects += n

    def free_db(self, d, expires):
        """An emptied database's dicts (emptyDbAsync: FLUSHALL/FLUSHDB
        ASYNC): every key counts as a lazily freed object, whatever the
        database's size."""
        if len(d):
            self._push([expires, d], len(d))

    def after(self, fn):
        """Call fn() from the event loop once everything queued so far is
        freed."""
        loop = self.srv.loop
        if not self.queue and loop is not None:
            loop.call_soon(fn)
            return
        self.queue.append(fn)
        self.schedule()

    def _push(self, parts, objects):
        self.queue.append(_Job(parts, objects))
        stats.lazyfree_pending += objects
        self.schedule()

    def _parts(self, v):
        """The plain containers holding v's elements."""
        if v.__class__ is _ZSetValue:
            return [v.sl, v.dict, v]
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
            job = q[0]
            if job.__class__ is not _Job:
                q.popleft()
                job()
                continue
            parts = job.parts
            while parts:
                o = parts[-1]
                if not self._drain(o, 2048, parts):
                    parts.pop()
                if _perf() - t0 > budget:
                    break
            if not parts:
                q.popleft()
                stats.lazyfree_pending -= job.objects
                stats.lazyfreed_objects += job.objects
            if _perf() - t0 > budget:
                break

    def _drain(self, o, n, parts) -> bool:
        """Free up to n elements of o; False when o is empty.  The big values
        a database's table holds join its job's parts (freed before the
        rest of the table, within the same job)."""
        if not o.__len__():
            return False
        if isinstance(o, (dict, KeyTable)):     # (a database's table too)
            pop = o.popitem
            big = []
            for _ in range(min(n, len(o))):
                k, v = pop()
                if v.__class__ is not bytes and free_effort(v) > LAZYFREE_THRESHOLD:
                    big.append(v)
            for v in big:
                parts.extend(self._parts(v))
            return True
        if o.__class__ is _ZIndex:
            del o[max(0, len(o) - n):]      # a zset's ordered index, from its end
            return True
        # (a compiled SetValue is not a set: named here)
        if isinstance(o, (set, list, deque, _SetValue)):
            pop = o.pop
            for _ in range(min(n, len(o))):
                pop()
            return True
        return False
