"""Top-K (Redis 8's built-in RedisBloom ``TopK-TYPE``): HeavyKeeper.

``depth`` rows of ``width`` buckets, each a fingerprint (MurmurHash2 of the
item, seed 1919) and a 32-bit count; an item's bucket in row i is
MurmurHash2(item, seed i) modulo the width.  Adding to a bucket that holds
another fingerprint decays it: each unit of the increment removes one from
its count with probability decay**count (the module's lookup table for
counts below 256, a product of table entries past it), and an emptied
bucket is taken over with what remains of the increment.  The ``k`` heavy
hitters are a binary min-heap of (fingerprint, item, count) slots, ordered
and sifted exactly as the module's heap, so TOPK.ADD's expelled items and
TOPK.LIST's order (count descending, ties in heap order) match Redis 8.

The random draws cannot match a Redis process's (its generator is seeded
from the clock at start-up); everything else is deterministic.

The RDB record is the module's (encoding version 0): k, width and depth as
unsigned items, the decay as a double, the buckets as one string of
(fingerprint, count) pairs of little-endian 32-bit words, the heap slots as
one string of the module's 24-byte slot layout (fingerprint, item length, a
pointer field, count, padding; the pointer is written as zero and ignored
when read, as the module ignores it), then each slot's item as a string
with a terminating NUL (a lone NUL for an empty slot).
"""

from __future__ import annotations

import math
import random
import struct
from array import array

from ..keyspace.db import ENCODINGS, register_module_type
from .murmur import murmur2

U32_MAX = 0xFFFFFFFF
GA = 1919
DECAY_TABLE = 256

_slot = struct.Struct("<IIQII")
_ZERO = (0,)
_EMPTY = (0, None, 0)
_rng = random.Random()
_rand = _rng.random


class TopK:
    __slots__ = ("k", "width", "depth", "decay", "fps", "counts", "heap", "table")
    MODULE_NAME = "TopK-TYPE"
    MODULE_ENCVER = 0
    MODULE_ENCVERS = (0,)

    def __init__(self, k: int, width: int, depth: int, decay: float, loaded=False):
        self.k = k
        self.width = width
        self.depth = depth
        self.decay = decay
        n = width * depth
        self.fps = array("I", _ZERO) * n
        self.counts = array("I", _ZERO) * n
        # heap slots: (fingerprint, item (bytes, None when empty), count),
        # replaced whole when they change (the empty ones share one tuple)
        self.heap = [_EMPTY] * k
        if loaded:
            # after a load the module builds the table as a running product
            t = [1.0]
            for _ in range(1, DECAY_TABLE):
                t.append(t[-1] * decay)
        else:
            t = [decay ** i for i in range(DECAY_TABLE)]
        self.table = t

    # -- the heap --------------------------------------------------------
    def _sift_down(self, start: int):
        """The module's heapifyDown over the k slots."""
        a = self.heap
        n = len(a)
        if n < 2 or (n - 2) // 2 < start:
            return
        child = 2 * start + 1
        if child + 1 < n and a[child][2] > a[child + 1][2]:
            child += 1
        if a[child][2] > a[start][2]:
            return
        top = a[start]
        while True:
            a[start] = a[child]
            start = child
            if (n - 2) // 2 < child:
                break
            child = 2 * child + 1
            if child + 1 < n and a[child][2] > a[child + 1][2]:
                child += 1
            if not a[child][2] < top[2]:
                break
        a[start] = top

    def _find(self, item: bytes, fp: int):
        a = self.heap
        for i in range(len(a) - 1, -1, -1):
            s = a[i]
            if s[0] == fp and s[1] is not None and s[1] == item:
                return i
            if s[0] == fp and s[1] is None and not item:
                # an empty slot matches the empty item, as the module's
                # length-and-bytes comparison does
                return i
        return -1

    # -- operations ------------------------------------------------------
    def add(self, item: bytes, incr: int):
        """Add ``incr`` to item; the item expelled from the heap (bytes),
        or None (nothing expelled, or an empty slot was taken)."""
        fp = murmur2(item, GA)
        heap_min = self.heap[0][2]
        width = self.width
        fps = self.fps
        counts = self.counts
        table = self.table
        maxc = 0
        for i in range(self.depth):
            loc = i * width + murmur2(item, i) % width
            c = counts[loc]
            if c == 0:
                fps[loc] = fp
                counts[loc] = c = incr
                if c > maxc:
                    maxc = c
            elif fps[loc] == fp:
                c = (c + incr) & U32_MAX
                counts[loc] = c
                if c > maxc:
                    maxc = c
            else:
                # each unit of the increment is one draw that decays the
                # count with probability d; the failed draws before a
                # success are counted at once (a geometric variate), which
                # is the same distribution as drawing them one by one
                left = incr
                while left > 0:
                    if c < DECAY_TABLE:
                        d = table[c]
                    else:
                        d = table[DECAY_TABLE - 1] ** (c // (DECAY_TABLE - 1)) * table[c % (DECAY_TABLE - 1)]
                    if d < 1.0:
                        if d <= 0.0:
                            break
                        fails = math.log(1.0 - _rand()) / math.log1p(-d)
                        if fails >= left:
                            break
                        left -= int(fails)
                    c -= 1
                    if c == 0:
                        fps[loc] = fp
                        c = left
                        if c > maxc:
                            maxc = c
                        break
                    left -= 1
                counts[loc] = c
        if maxc >= heap_min:
            i = self._find(item, fp)
            if i >= 0:
                s = self.heap[i]
                self.heap[i] = (s[0], s[1], maxc)
                self._sift_down(i)
            else:
                expelled = self.heap[0][1]
                self.heap[0] = (fp, bytes(item), maxc)
                self._sift_down(0)
                return expelled
        return None

    def query(self, item: bytes) -> bool:
        return self._find(item, murmur2(item, GA)) >= 0

    def count(self, item: bytes) -> int:
        fp = murmur2(item, GA)
        heap_min = self.heap[0][2]
        in_heap = self._find(item, fp) >= 0
        width = self.width
        res = 0
        for i in range(self.depth):
            loc = i * width + murmur2(item, i) % width
            c = self.counts[loc]
            if self.fps[loc] == fp and (not in_heap or c >= heap_min) and c > res:
                res = c
        return res

    def listing(self):
        """The heap's (item, count) pairs by count, highest first (ties in
        heap order), up to the first slot with no count; the item is None
        for a counted slot without one (an empty item after an RDB load,
        which the module stores as a lone NUL)."""
        out = []
        for fp, item, c in sorted(self.heap, key=lambda s: -s[2]):
            if c == 0:
                break
            out.append((item, c))
        return out

    # -- module-type record and the generic commands ---------------------
    def copy(self):
        t = TopK.__new__(TopK)
        t.k, t.width, t.depth, t.decay = self.k, self.width, self.depth, self.decay
        t.fps = array("I", self.fps)
        t.counts = array("I", self.counts)
        t.heap = list(self.heap)
        t.table = list(self.table)
        return t

    def rdb_save(self, w):
        w.uint(self.k)
        w.uint(self.width)
        w.uint(self.depth)
        w.double(self.decay)
        b = array("I", _ZERO) * (2 * self.width * self.depth)
        b[0::2] = self.fps
        b[1::2] = self.counts
        if b.itemsize == 4 and struct.pack("=I", 1) != struct.pack("<I", 1):
            b.byteswap()
        w.string(b.tobytes())
        items = []
        slots = []
        for fp, item, c in self.heap:
            # the module stores an item as a C string: up to its first NUL
            if item is not None:
                z = item.find(b"\0")
                if z >= 0:
                    item = item[:z]
            slots.append(_slot.pack(fp, len(item) if item is not None else 0, 0, c, 0))
            items.append((item or b"") + b"\0")
        w.string(b"".join(slots))
        for it in items:
            w.string(it)

    @classmethod
    def rdb_load(cls, r, encver):
        k = r.uint()
        width = r.uint()
        depth = r.uint()
        decay = r.double()
        if not (0 < k <= U32_MAX and 0 < width <= U32_MAX and 0 < depth <= U32_MAX):
            raise ValueError("bad dimensions")
        raw = bytes(r.string())
        if len(raw) != 8 * width * depth:
            raise ValueError("bucket size")
        t = cls(k, width, depth, decay, loaded=True)
        b = array("I")
        b.frombytes(raw)
        if struct.pack("=I", 1) != struct.pack("<I", 1):
            b.byteswap()
        t.fps = b[0::2]
        t.counts = b[1::2]
        raw = bytes(r.string())
        if len(raw) != _slot.size * k:
            raise ValueError("heap size")
        for i in range(k):
            fp, _len, _ptr, c, _pad = _slot.unpack_from(raw, i * _slot.size)
            it = bytes(r.string())
            t.heap[i] = (fp, it[:-1] if len(it) > 1 else None, c)
        return t

    def mem_usage(self) -> int:
        # the module's estimate: its struct (with the 256-entry decay
        # table), the buckets and the heap slots
        return 2088 + 8 * self.width * self.depth + 24 * self.k

    def digest(self) -> bytes:
        # RedisBloom gives this type no digest callback, so Redis's DEBUG
        # DIGEST takes nothing from the value: only the key counts
        return b""


register_module_type(TopK, b"TopK-TYPE")
ENCODINGS[TopK] = lambda v, cfg: b"raw"
