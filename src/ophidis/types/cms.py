"""Count-Min sketch (Redis 8's built-in RedisBloom ``CMSk-TYPE``).

A ``depth`` x ``width`` table of 32-bit counters; an item adds to one
counter per row (MurmurHash2 of the item seeded with the row number, modulo
the width) and its estimate is the smallest of its counters.  A counter that
would pass 2**32-1 stays at 2**32-1 (CMS.INCRBY then answers an overflow
error for that item).  ``counter`` is the total of all increments, kept as
the module's unsigned 64-bit field.

The RDB record is the module's: width, depth and the total as unsigned
items, then the table as one string of little-endian 32-bit counters, row
after row (encoding version 0).
"""

from __future__ import annotations

import math
import struct
import sys
from array import array

from ..keyspace.db import ENCODINGS, register_module_type
from .murmur import murmur2

U32_MAX = 0xFFFFFFFF
U64_MASK = (1 << 64) - 1
I64_MAX = (1 << 63) - 1
I64_MIN = -(1 << 63)
# the most counters one sketch may have (16 GiB): past it CMS.INITBY* answers
# the module's allocation-failure error instead of exhausting the process
MAX_CELLS = 1 << 32

_f32 = struct.Struct("<f")
assert array("I").itemsize == 4
_ZERO = (0,)


def _float32(x: float) -> float:
    return _f32.unpack(_f32.pack(x))[0]


def dims_from_prob(error: float, prob: float):
    """CMS.INITBYPROB's width and depth: width ceil(2/error); depth from
    log10(prob)/log10(0.5) computed in single precision, as the module's
    log10f does (0 < error, prob < 1).  A width past 2**63 is None (the
    module's conversion turns it negative: an invalid size)."""
    w = math.ceil(2 / error)
    a = _float32(math.log10(_float32(prob)))
    b = _float32(math.log10(_float32(0.5)))
    d = math.ceil(_float32(a / b))
    if w >= 1 << 63:
        return None, d
    return w, d


class CountMinSketch:
    __slots__ = ("width", "depth", "counter", "table")
    MODULE_NAME = "CMSk-TYPE"
    MODULE_ENCVER = 0
    MODULE_ENCVERS = (0,)

    def __init__(self, width: int, depth: int, table=None, counter: int = 0):
        self.width = width
        self.depth = depth
        self.counter = counter
        if table is None:
            table = array("I", _ZERO) * (width * depth)
        self.table = table

    def _cells(self, item: bytes):
        w = self.width
        return [murmur2(item, i) % w + i * w for i in range(self.depth)]

    def incrby(self, item: bytes, value: int) -> int:
        """Add value (0 <= value < 2**63) to item's counters; the new
        estimate (U32_MAX when a counter saturated)."""
        t = self.table
        low = U32_MAX
        for loc in self._cells(item):
            v = (t[loc] + value) & U32_MAX
            if v < value:
                v = U32_MAX
            t[loc] = v
            if v < low:
                low = v
        self.counter = (self.counter + value) & U64_MASK
        return low

    def query(self, item: bytes) -> int:
        t = self.table
        return min(t[loc] for loc in self._cells(item))

    @staticmethod
    def merged(sources, weights):
        """The table and total of the weighted sum of ``sources`` (all of
        one shape), or None when a cell would leave [0, 2**32-1], a partial
        sum would leave the signed 64-bit range, or the total would be
        negative (the module refuses the merge then, changing nothing)."""
        tables = [s.table for s in sources]
        bound = sum(abs(x) for x in weights) * U32_MAX
        if bound <= I64_MAX:
            # no partial sum can overflow: exact sums, range-checked
            if len(tables) == 1:
                w0 = weights[0]
                cells = [v * w0 for v in tables[0]]
            else:
                pairs = list(zip(tables, weights))
                cells = [0] * len(tables[0])
                for t, wt in pairs:
                    if wt == 1:
                        cells = [a + b for a, b in zip(cells, t)]
                    else:
                        cells = [a + b * wt for a, b in zip(cells, t)]
            if cells and (min(cells) < 0 or max(cells) > U32_MAX):
                return None
        else:
            cells = []
            for vals in zip(*tables):
                acc = 0
                for v, wt in zip(vals, weights):
                    m = v * wt
                    if m > I64_MAX or m < I64_MIN:
                        return None
                    acc += m
                    if acc > I64_MAX or acc < I64_MIN:
                        return None
                if acc < 0 or acc > U32_MAX:
                    return None
                cells.append(acc)
        total = 0
        for s, wt in zip(sources, weights):
            m = s.counter * wt
            if m > I64_MAX or m < I64_MIN:
                return None
            total += m
            if total > I64_MAX or total < I64_MIN:
                return None
        if total < 0:
            return None
        return array("I", cells), total

    # -- module-type record and the generic commands ---------------------
    def copy(self):
        return CountMinSketch(self.width, self.depth, array("I", self.table), self.counter)

    def rdb_save(self, w):
        w.uint(self.width)
        w.uint(self.depth)
        w.uint(self.counter)
        t = self.table
        if sys.byteorder != "little":
            t = array("I", t)
            t.byteswap()
        w.string(t.tobytes())

    @classmethod
    def rdb_load(cls, r, encver):
        width = r.uint()
        depth = r.uint()
        counter = r.uint()
        if width == 0 or depth == 0:
            raise ValueError("empty sketch")
        raw = r.string()
        if len(raw) != 4 * width * depth:
            raise ValueError("table size")
        t = array("I")
        t.frombytes(bytes(raw))
        if sys.byteorder != "little":
            t.byteswap()
        return cls(width, depth, t, counter)

    def mem_usage(self) -> int:
        # the module's estimate: its struct and the counters
        return 32 + 4 * self.width * self.depth

    def digest(self) -> bytes:
        # RedisBloom gives this type no digest callback, so Redis's DEBUG
        # DIGEST takes nothing from the value: only the key counts
        return b""


register_module_type(CountMinSketch, b"CMSk-TYPE")
ENCODINGS[CountMinSketch] = lambda v, cfg: b"raw"
