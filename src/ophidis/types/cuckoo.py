"""Cuckoo filters (Redis 8's built-in RedisBloom, ``CF.*``): ``CuckooValue``.

RedisBloom's layout and arithmetic, so that answers, CF.INFO's figures,
SCANDUMP chunks and RDB records match a Redis 8 server:

- an item's hash is MurmurHash64A of the item with seed 0 (types/bloom.py);
  its fingerprint is ``hash % 255 + 1`` (one byte, 0 marks an empty slot),
  its first bucket ``hash``, its second ``hash ^ (fp * 0x5bd1e995)``, each
  taken modulo the sub-filter's bucket count;
- a filter is a list of sub-filters, each a byte array of ``buckets *
  bucket_size`` fingerprints; the first has the power of two at or above
  ``capacity / bucket_size`` buckets, sub-filter i has ``expansion ** i``
  times as many (expansion rounded up to a power of two);
- an insert takes a free slot in either bucket of the newest sub-filter
  first, then evicts along the newest one (at most ``max_iterations``
  moves, undone when they fail), then adds a sub-filter;
- deletions compact the newer sub-filters into older ones once they exceed
  a tenth of the items.

SCANDUMP's first chunk is a packed header (items, buckets, deletes,
filters, bucket size, max iterations, expansion); the others are the
sub-filters' bytes, the cursor being 1 + the byte offset after the chunk.
"""

from __future__ import annotations

import struct

from ..keyspace.db import ENCODINGS, register_module_type
from .bloom import M64, murmur64a

MAX_NUM_BUCKETS = (1 << 56) - 1
MAX_CHUNK = 16 * 1024 * 1024
# what a header or an RDB record may make us allocate (bytes, all sub-filters)
MAX_BYTES = 1 << 32

INSERTED = 1
EXISTS = 0
NOSPACE = -1
MEMFAIL = -2

_HDR = struct.Struct("<QQQQHHH")
_ALT = 0x5BD1E995


def item_hash(item: bytes) -> int:
    return murmur64a(item, 0)


def next_pow2(n: int) -> int:
    """getNextN2 on 64 bits (0 stays 0)."""
    if n == 0:
        return 0
    return 1 << (n - 1).bit_length()


def _alt(fp: int, index: int) -> int:
    return (index ^ (fp * _ALT)) & M64


def _is_pow2(n: int) -> bool:
    return n != 0 and n & (n - 1) == 0


class SubFilter:
    __slots__ = ("buckets", "data")

    def __init__(self, buckets: int, data: bytearray):
        self.buckets = buckets
        self.data = data


class CuckooValue:
    """RedisBloom's CuckooFilter."""

    __slots__ = ("num_buckets", "num_items", "num_deletes", "bucket_size", "max_iterations",
                 "expansion", "filters")
    MODULE_NAME = "MBbloomCF"
    MODULE_ENCVER = 4
    MODULE_ENCVERS = (1, 2, 3, 4)

    def __init__(self, num_buckets=1, bucket_size=2, max_iterations=20, expansion=1):
        self.num_buckets = num_buckets
        self.num_items = 0
        self.num_deletes = 0
        self.bucket_size = bucket_size
        self.max_iterations = max_iterations
        self.expansion = expansion
        self.filters = []

    @classmethod
    def new(cls, capacity: int, bucket_size: int, max_iterations: int, expansion: int):
        """CuckooFilter_Init; MemoryError when the first sub-filter cannot be made."""
        cf = cls(next_pow2(capacity // bucket_size) or 1, bucket_size, max_iterations,
                 next_pow2(expansion))
        if not cf.grow():
            raise MemoryError
        return cf

    def grow(self) -> bool:
        n = len(self.filters)
        if n == 0xFFFF:
            return False
        growth = self.expansion ** n
        if growth > MAX_NUM_BUCKETS // self.num_buckets:
            return False
        buckets = self.num_buckets * growth
        size = buckets * self.bucket_size
        if size + sum(len(f.data) for f in self.filters) > MAX_BYTES:
            return False
        self.filters.append(SubFilter(buckets, bytearray(size)))
        return True

    # -- lookups -------------------------------------------------------------------
    def check(self, h: int) -> bool:
        fp = h % 255 + 1
        bs = self.bucket_size
        h2 = _alt(fp, h)
        for f in self.filters:
            data = f.data
            loc = ((h % f.buckets) * bs) & 0xFFFFFFFF
            if data.find(fp, loc, loc + bs) >= 0:
                return True
            loc = ((h2 % f.buckets) * bs) & 0xFFFFFFFF
            if data.find(fp, loc, loc + bs) >= 0:
                return True
        return False

    def count(self, h: int) -> int:
        fp = h % 255 + 1
        bs = self.bucket_size
        h2 = _alt(fp, h)
        n = 0
        for f in self.filters:
            data = f.data
            loc = ((h % f.buckets) * bs) & 0xFFFFFFFF
            n += data.count(fp, loc, loc + bs)
            loc = ((h2 % f.buckets) * bs) & 0xFFFFFFFF
            n += data.count(fp, loc, loc + bs)
        return n

    def delete(self, h: int) -> bool:
        fp = h % 255 + 1
        bs = self.bucket_size
        h2 = _alt(fp, h)
        for f in reversed(self.filters):
            data = f.data
            for hh in (h, h2):
                loc = ((hh % f.buckets) * bs) & 0xFFFFFFFF
                i = data.find(fp, loc, loc + bs)
                if i >= 0:
                    data[i] = 0
                    self.num_items -= 1
                    self.num_deletes += 1
                    if len(self.filters) > 1 and self.num_deletes > self.num_items * 0.10:
                        self.compact(False)
                    return True
        return False

    # -- inserts -------------------------------------------------------------------
    def insert(self, h: int, unique: bool = False) -> int:
        if unique and self.check(h):
            return EXISTS
        fp = h % 255 + 1
        h2 = _alt(fp, h)
        while True:
            bs = self.bucket_size
            for f in reversed(self.filters):
                data = f.data
                loc = ((h % f.buckets) * bs) & 0xFFFFFFFF
                i = data.find(0, loc, loc + bs)
                if i < 0:
                    loc = ((h2 % f.buckets) * bs) & 0xFFFFFFFF
                    i = data.find(0, loc, loc + bs)
                if i >= 0:
                    data[i] = fp
                    self.num_items += 1
                    return INSERTED
            if self._kick(self.filters[-1], h, fp):
                self.num_items += 1
                return INSERTED
            if self.expansion == 0:
                return NOSPACE
            if not self.grow():
                return MEMFAIL

    def _kick(self, f: SubFilter, h: int, fp: int) -> bool:
        """Filter_KOInsert: evict along the sub-filter; the moves are undone
        when no free slot is found within max_iterations."""
        nb = f.buckets
        bs = self.bucket_size
        data = f.data
        victim = 0
        ii = h % nb
        n = self.max_iterations
        for _ in range(n):
            pos = ii * bs + victim
            data[pos], fp = fp, data[pos]
            ii = _alt(fp, ii) % nb
            loc = ii * bs
            j = data.find(0, loc, loc + bs)
            if j >= 0:
                data[j] = fp
                return True
            victim = (victim + 1) % bs
        for _ in range(n):
            victim = (victim + bs - 1) % bs
            ii = _alt(fp, ii) % nb
            pos = ii * bs + victim
            data[pos], fp = fp, data[pos]
        return False

    def compact(self, cont: bool):
        """CuckooFilter_Compact: move fingerprints of newer sub-filters into
        older ones; an emptied newest sub-filter is dropped."""
        bs = self.bucket_size
        ii = len(self.filters)
        while ii > 1:
            ii -= 1
            if not self._compact_one(ii, bs) and not cont:
                break
        self.num_deletes = 0

    def _compact_one(self, fi: int, bs: int) -> bool:
        cur = self.filters[fi]
        data = cur.data
        ok = True
        if not data.strip(b"\0"):
            # nothing to move
            if fi == len(self.filters) - 1:
                self.filters.pop()
            return True
        for b in range(cur.buckets):
            base = b * bs
            for s in range(bs):
                fp = data[base + s]
                if not fp:
                    continue
                h2 = _alt(fp, b)
                placed = False
                for j in range(fi):
                    f = self.filters[j]
                    fd = f.data
                    loc = ((b % f.buckets) * bs) & 0xFFFFFFFF
                    k = fd.find(0, loc, loc + bs)
                    if k < 0:
                        loc = ((h2 % f.buckets) * bs) & 0xFFFFFFFF
                        k = fd.find(0, loc, loc + bs)
                    if k >= 0:
                        fd[k] = fp
                        data[base + s] = 0
                        placed = True
                        break
                if not placed:
                    ok = False
        if ok and fi == len(self.filters) - 1:
            self.filters.pop()
        return ok

    # -- SCANDUMP / LOADCHUNK -----------------------------------------------------
    def header(self) -> bytes:
        return _HDR.pack(self.num_items & M64, self.num_buckets, self.num_deletes & M64,
                         len(self.filters), self.bucket_size, self.max_iterations, self.expansion)

    def chunk(self, pos: int):
        """CF_GetEncodedChunk: (next cursor, bytes), or (0, None) at the end."""
        offset = pos - 1
        found = None
        for f in self.filters:
            size = len(f.data)
            if offset < size:
                found = f
                break
            offset -= size
        if found is None:
            return 0, None
        size = len(found.data)
        if size <= MAX_CHUNK:
            return pos + size, bytes(found.data)
        n = min(MAX_CHUNK, size - offset)
        return pos + n, bytes(found.data[offset:offset + n])

    def load_chunk(self, pos: int, blob: bytes) -> bool:
        n = len(blob)
        if n == 0 or pos <= 0 or pos - 1 < n:
            return False
        offset = pos - n - 1
        found = None
        for f in self.filters:
            found = f
            size = len(f.data)
            if offset < size:
                break
            offset -= size
        if found is None or len(found.data) < offset + n:
            return False
        found.data[offset:offset + n] = blob
        return True

    @classmethod
    def from_header(cls, blob: bytes):
        """CFHeader_Load: empty sub-filters as the header describes, or None."""
        items, buckets, deletes, nfilters, bs, maxit, exp = _HDR.unpack(blob)
        cf = cls(buckets, bs, maxit, exp)
        cf.num_items = items
        cf.num_deletes = deletes
        nfilters &= 0xFFFF      # the filter keeps a 16-bit count
        if not cf._valid(nfilters):
            return None
        sizes = []
        total = 0
        for i in range(nfilters):
            nb = buckets * exp ** i if exp > 1 else buckets if exp or not i else 0
            if nb == 0 or nb > MAX_NUM_BUCKETS:
                return None
            sizes.append(nb)
            total += nb * bs
            if total > MAX_BYTES:
                return None
        cf.filters = [SubFilter(nb, bytearray(nb * bs)) for nb in sizes]
        return cf

    def _valid(self, nfilters: int) -> bool:
        """CuckooFilter_ValidateIntegrity."""
        return (1 <= self.bucket_size <= 255 and 1 <= nfilters <= 65536
                and 1 <= self.max_iterations <= 65535 and 0 <= self.expansion <= 32768
                and not (self.expansion == 0 and nfilters > 1)
                and 0 < self.num_buckets <= MAX_NUM_BUCKETS and _is_pow2(self.num_buckets))

    # -- the module type's callbacks ------------------------------------------------
    def copy(self):
        cf = CuckooValue(self.num_buckets, self.bucket_size, self.max_iterations, self.expansion)
        cf.num_items = self.num_items
        cf.num_deletes = self.num_deletes
        cf.filters = [SubFilter(f.buckets, bytearray(f.data)) for f in self.filters]
        return cf

    def rewrite_commands(self, key):
        """AOF rewrite: CF.LOADCHUNK of the header and the chunks (RedisBloom's
        aof_rewrite)."""
        yield [b"CF.LOADCHUNK", key, b"1", self.header()]
        pos = 1
        while True:
            pos, data = self.chunk(pos)
            if data is None:
                break
            yield [b"CF.LOADCHUNK", key, b"%d" % pos, data]

    def rdb_save(self, w):
        w.uint(len(self.filters))
        w.uint(self.num_buckets)
        w.uint(self.num_items)
        w.uint(self.num_deletes)
        w.uint(self.bucket_size)
        w.uint(self.max_iterations)
        w.uint(self.expansion)
        for f in self.filters:
            w.uint(f.buckets)
            w.string(f.data)

    @classmethod
    def rdb_load(cls, r, encver):
        nfilters = r.uint()
        buckets = r.uint()
        if nfilters == 0 or buckets == 0:
            raise ValueError("empty filter")
        items = r.uint()
        if encver < 4:
            cf = cls(buckets, 2, 20, 1)
        else:
            deletes = r.uint()
            cf = cls(buckets, r.uint(), r.uint(), r.uint())
            cf.num_deletes = deletes
        cf.num_items = items
        if not 1 <= cf.bucket_size <= 255 or nfilters > 0xFFFF:
            raise ValueError("bad filter")
        for _ in range(nfilters):
            nb = buckets if encver < 4 else r.uint()
            data = bytearray(r.string())
            if nb == 0 or len(data) != nb * cf.bucket_size:
                raise ValueError("bad sub-filter")
            cf.filters.append(SubFilter(nb, data))
        return cf

    def mem_usage(self) -> int:
        """CFMemUsage (CF.INFO's Size): the filter struct, the sub-filter
        array and the fingerprints."""
        return 40 + 16 * len(self.filters) + sum(len(f.data) for f in self.filters)

    def digest(self) -> bytes:
        # ours: the SCANDUMP header and the sub-filters
        return self.header() + b"".join(bytes(f.data) for f in self.filters)


register_module_type(CuckooValue, b"MBbloomCF")
ENCODINGS[CuckooValue] = lambda v, cfg: b"raw"
