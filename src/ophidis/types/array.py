"""Array value (Redis 8.8's sparse array type, t_array.c / sparsearray.c).

An array maps unsigned 64-bit indexes (0 .. 2**64 - 2) to strings; the gaps
cost nothing.  ``ArrayValue`` keeps:

  d            index -> bytes, the elements
  idx          the indexes in ascending order (bisect), for ranges and scans
  insert_idx   the ARINSERT / ARRING cursor: the last index written, or None
               (Redis's "no insert yet" state, which ARSEEK 0 restores)

Interface used by persistence and other modules:
  ArrayValue()                   empty array
  a.set(i, v) -> bool            store; True when the slot was empty
  a.get(i)                       bytes or None
  a.items()                      (index, value) in ascending index order
  len(a)                         number of elements (ARCOUNT)
  a.length()                     highest index + 1, 0 when empty (ARLEN)
  a.insert_idx                   as above
  a.copy()

Redis stores the elements in slices of ``SLICE_SIZE`` indexes under a flat
directory that becomes a "super directory" of 2048-slice blocks once a slice
past the first 2048 is used.  ARINFO reports that shape, so the slice counts
per slice and the directory's sizes are followed here as Redis grows and
shrinks them (``slices``, ``dir_alloc``, ``superdir``, ``sdir_cap``,
``blocks``); the slices' own encodings (dense windows, sparse pairs) are not
modelled (see ``full_stats``).

Element encodings: Redis keeps small integers, some decimals and strings of
up to 7 bytes inline and says which in its RDB records (``value_kind``).
"""

from __future__ import annotations

import re
import struct
from bisect import bisect_left, bisect_right, insort

from ..keyspace.db import ENCODINGS, TYPE_NAMES

UINT64_MAX = 2**64 - 1
SLICE_SIZE = 4096
SLICE_BITS = 12
SUPER_BLOCK_SLOTS = 2048
SPARSE_KMAX = 10
SPARSE_KMIN = 5

# value kinds, the RDB element tags (AR_RDB_TAG_*)
KIND_STR = 0
KIND_INT = 1
KIND_FLOAT = 2
KIND_SMALLSTR = 3

_INT_MIN = -(1 << 61)
_INT_MAX = (1 << 61) - 1
_FLOAT_SHAPE = re.compile(rb"-?[0-9]*\.[0-9]*\Z")
_d_bits = struct.Struct("<d")
_q_bits = struct.Struct("<Q")


def string2ll(b: bytes):
    """Redis's string2ll: the canonical decimal form of a signed 64-bit
    integer, else None."""
    n = len(b)
    if n == 0 or n > 20:
        return None
    if n == 1:
        c = b[0]
        return c - 48 if 48 <= c <= 57 else None
    c0 = b[0]
    first = b[1] if c0 == 45 else c0
    if not 49 <= first <= 57:
        return None
    try:
        v = int(b)
    except ValueError:
        return None
    if b"%d" % v != b or not -(1 << 63) <= v < (1 << 63):
        return None
    return v


def shortest_digits(d: float):
    """(digits, K) with abs(d) == int(digits) * 10**K, digits the shortest
    round-trip digit string (no trailing zeros)."""
    s = repr(abs(d))
    if "e" in s:
        m, e = s.split("e")
        e = int(e)
    else:
        m, e = s, 0
    if "." in m:
        ip, fp = m.split(".")
    else:
        ip, fp = m, ""
    digits = (ip + fp).lstrip("0")
    k = e - len(fp)
    stripped = digits.rstrip("0")
    k += len(digits) - len(stripped)
    return stripped or "0", k


def fpconv_dtoa(d: float) -> bytes:
    """The shortest form Redis prints doubles with (fpconv_dtoa): plain
    integer, plain decimal, or d.ddde+XX, as its rules choose."""
    digits, k = shortest_digits(d)
    neg = d < 0
    nd = len(digits)
    exp = abs(k + nd - 1)
    if k >= 0 and exp < nd + 7:
        out = digits + "0" * k
    elif k < 0 and (k > -7 or exp < 4):
        offset = nd - abs(k)
        if offset <= 0:
            out = "0." + "0" * (-offset) + digits
        else:
            out = digits[:offset] + "." + digits[offset:]
    else:
        nd = min(nd, 18 - neg)
        out = digits[0]
        if nd > 1:
            out += "." + digits[1:nd]
        out += "e" + ("-" if k + nd - 1 < 0 else "+")
        e = abs(k + nd - 1)
        out += "%02d" % e if e < 100 else "%d" % e
    return (("-" + out) if neg else out).encode()


def d2string(d: float) -> bytes:
    """Redis's d2string: integers without a fraction, zero as 0 or -0,
    otherwise fpconv_dtoa (inf and nan named)."""
    if d != d:
        return b"nan"
    if d in (float("inf"), float("-inf")):
        return b"inf" if d > 0 else b"-inf"
    if d == 0:
        return b"-0" if str(d)[0] == "-" else b"0"
    if d.is_integer() and -(2.0 ** 63) < d < 2.0 ** 63:
        return b"%d" % int(d)
    return fpconv_dtoa(d)


def format_float(d: float) -> bytes:
    """arFormatFloat: d2string, with ".0" added to an integral finite value."""
    s = d2string(d)
    if b"." not in s and b"e" not in s and b"E" not in s and s not in (b"inf", b"-inf", b"nan"):
        s += b".0"
    return s


def float_of(b: bytes):
    """The double Redis keeps inline for b, or None: a decimal with one dot
    whose double (with its two lowest bits clear) prints back as b."""
    if not _FLOAT_SHAPE.match(b) or b in (b".", b"-."):
        return None
    try:
        d = float(b)
    except ValueError:
        return None
    if d != d or d in (float("inf"), float("-inf")):
        return None
    if _q_bits.unpack(_d_bits.pack(d))[0] & 3:
        return None     # the tag bits would change it: kept as a string
    s = d2string(d)
    if s == b or s + b".0" == b:
        return d
    return None


def value_kind(b: bytes):
    """(kind, payload) of an element as Redis encodes it: (KIND_INT, int),
    (KIND_FLOAT, double), (KIND_SMALLSTR, b) up to 7 bytes, (KIND_STR, b)."""
    v = string2ll(b)
    if v is not None and _INT_MIN <= v <= _INT_MAX:
        return KIND_INT, v
    f = float_of(b)
    if f is not None:
        return KIND_FLOAT, f
    return (KIND_SMALLSTR if len(b) <= 7 else KIND_STR), b


def _pow2(n: int) -> int:
    """nearestNextPowerOf2: the smallest power of two >= n."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def _sparse_bytes(cap: int) -> int:
    """arSparseAllocSize: the slice header, the offsets (padded to a
    pointer) and the values."""
    return 32 + cap * 2 + (-(cap * 2)) % 8 + cap * 8


_DEMOTE_MIN_BYTES = _sparse_bytes(SPARSE_KMIN) * 5 // 4


class ArrayValue:
    """See the module's docstring.  ``slices`` maps a slice id to
    [count, dense, a, b]: a dense slice's window (a = first offset, b =
    its size, a power of two), a sparse one's capacity (a)."""

    __slots__ = ("d", "idx", "insert_idx", "slices", "dir_alloc", "dir_highest", "superdir", "sdir_cap",
                 "blocks")

    def __init__(self):
        self.d = {}
        self.idx = []
        self.insert_idx = None
        self.slices = {}
        self.dir_alloc = 0      # flat directory length
        self.dir_highest = 0    # highest slice id in use
        self.superdir = False
        self.sdir_cap = 0
        self.blocks = {}        # superdir block id -> slices in it

    def __len__(self):
        return len(self.d)

    def __bool__(self):
        return bool(self.d)

    def __iter__(self):
        d = self.d
        return (d[i] for i in self.idx)

    def length(self) -> int:
        idx = self.idx
        return idx[-1] + 1 if idx else 0

    def get(self, i):
        return self.d.get(i)

    def items(self):
        d = self.d
        return ((i, d[i]) for i in self.idx)

    def copy(self):
        a = ArrayValue()
        a.d = dict(self.d)
        a.idx = list(self.idx)
        a.insert_idx = self.insert_idx
        a.slices = {k: list(v) for k, v in self.slices.items()}
        a.dir_alloc = self.dir_alloc
        a.dir_highest = self.dir_highest
        a.superdir = self.superdir
        a.sdir_cap = self.sdir_cap
        a.blocks = dict(self.blocks)
        return a

    def rewrite_commands(self, key):
        """The commands an AOF rewrite rebuilds this array with: ARMSET of
        up to 64 pairs, then ARSEEK to restore the insert cursor."""
        items = list(self.items())
        for p in range(0, len(items), 64):
            argv = [b"ARMSET", key]
            for i, v in items[p:p + 64]:
                argv.append(b"%d" % i)
                argv.append(v)
            yield argv
        if self.insert_idx is not None:
            yield [b"ARSEEK", key, b"%d" % (self.insert_idx + 1)]

    # -- elements --------------------------------------------------------

    def set(self, i: int, v: bytes) -> bool:
        """arSet: store v at i; True when the slot was empty."""
        d = self.d
        if i in d:
            d[i] = v
            return False
        sid = i >> SLICE_BITS
        rel = i & (SLICE_SIZE - 1)
        sl = self.slices.get(sid)
        if sl is None:
            self._dir_grow(sid)
            self._attach(sid)
            sl = self.slices[sid] = [0, False, min(SPARSE_KMAX, 4), 0]
        if sl[1]:
            _grow(sl, rel)
        elif sl[0] >= SPARSE_KMAX:
            self._promote(sid, sl)
            _grow(sl, rel)
        elif sl[0] >= sl[2]:
            sl[2] = min(sl[2] * 2, SPARSE_KMAX)
        sl[0] += 1
        d[i] = v
        idx = self.idx
        if not idx or i > idx[-1]:
            idx.append(i)
        else:
            insort(idx, i)
        if sid > self.dir_highest or len(d) == 1:
            self.dir_highest = sid
        return True

    def delete(self, i: int) -> bool:
        """arDel."""
        d = self.d
        if i not in d:
            return False
        del d[i]
        idx = self.idx
        if idx[-1] == i:
            idx.pop()
        else:
            del idx[bisect_left(idx, i)]
        sid = i >> SLICE_BITS
        sl = self.slices[sid]
        sl[0] -= 1
        if sl[0]:
            if sl[1]:
                _maybe_demote(sl)
            return True
        self._detach(sid)
        if d and sid >= self.dir_highest:
            self.dir_highest = max(self.slices) if self.slices else 0
        self._maybe_shrink()
        return True

    def delete_range(self, lo: int, hi: int) -> int:
        """arDeleteRange: delete the elements in [lo, hi]; how many."""
        idx = self.idx
        a = bisect_left(idx, lo)
        b = bisect_right(idx, hi)
        if a >= b:
            return 0
        gone = idx[a:b]
        del idx[a:b]
        d = self.d
        per = {}
        for i in gone:
            del d[i]
            sid = i >> SLICE_BITS
            per[sid] = per.get(sid, 0) + 1
        slices = self.slices
        touched = False
        for sid, k in per.items():
            sl = slices[sid]
            sl[0] -= k
            if sl[0]:
                if sl[1]:
                    _maybe_demote(sl)
            else:
                self._detach(sid)
            if sid >= self.dir_highest:
                touched = True
        if touched and d:
            self.dir_highest = max(slices)
        self._maybe_shrink()
        return len(gone)

    def prepare_range(self, lo: int, hi: int):
        """arMayPromoteToDenseForRangeSet (ARSET / ARINSERT of several
        values): a slice the range would fill past SPARSE_KMAX elements is
        made dense before the writes."""
        slo = lo >> SLICE_BITS
        shi = hi >> SLICE_BITS
        self._dir_grow(shi)
        idx = self.idx
        for sid in range(slo, shi + 1):
            base = sid << SLICE_BITS
            so = (lo if sid == slo else base) - base
            eo = (hi if sid == shi else base + SLICE_SIZE - 1) - base
            size = eo - so + 1
            sl = self.slices.get(sid)
            if sl is None:
                if size > SPARSE_KMAX:
                    self._attach(sid)
                    off = so if so + 8 <= SLICE_SIZE else SLICE_SIZE - 8
                    self.slices[sid] = [0, True, off, 8]
                continue
            if sl[1]:
                continue
            if size > SPARSE_KMAX:
                self._promote(sid, sl)
                continue
            existing = bisect_right(idx, base + eo) - bisect_left(idx, base + so)
            if sl[0] + size - existing > SPARSE_KMAX:
                self._promote(sid, sl)

    def scan(self, start: int, end: int):
        """(index, value) of the elements between start and end inclusive,
        from start towards end (descending when start > end)."""
        d = self.d
        idx = self.idx
        if start <= end:
            a = bisect_left(idx, start)
            b = bisect_right(idx, end)
            for p in range(a, b):
                i = idx[p]
                yield i, d[i]
        else:
            a = bisect_left(idx, end)
            b = bisect_right(idx, start)
            for p in range(b - 1, a - 1, -1):
                i = idx[p]
                yield i, d[i]

    # -- slices and the directory (ARINFO) --------------------------------

    def _promote(self, sid: int, sl):
        """arSparsePromote: a dense window over the slice's elements."""
        if not sl[0]:
            sl[1], sl[2], sl[3] = True, 0, 8
            return
        base = sid << SLICE_BITS
        idx = self.idx
        a = bisect_left(idx, base)
        b = bisect_left(idx, base + SLICE_SIZE)
        mn = idx[a] - base
        mx = idx[b - 1] - base
        w = max(_pow2(mx - mn + 1), 8)
        off = mn
        if w >= SLICE_SIZE:
            w, off = SLICE_SIZE, 0
        elif off + w > SLICE_SIZE:
            off = SLICE_SIZE - w
        sl[1], sl[2], sl[3] = True, off, w

    def _dir_grow(self, sid: int):
        """arDirGrow: the flat directory doubles up to sid; a slice id past
        the first block turns it into the super directory (block 0)."""
        if not self.superdir and sid >= SUPER_BLOCK_SLOTS:
            self.superdir = True
            self.sdir_cap = 4
            if self.dir_alloc > 0:
                self.blocks[0] = len(self.slices)
            self.dir_alloc = 0
        if self.superdir:
            return
        if sid >= self.dir_alloc:
            a = self.dir_alloc or 1
            while a <= sid:
                a <<= 1
            self.dir_alloc = a

    def _attach(self, sid: int):
        if self.superdir:
            bid = sid // SUPER_BLOCK_SLOTS
            n = self.blocks.get(bid)
            if n is None:
                if len(self.blocks) >= self.sdir_cap:
                    self.sdir_cap = self.sdir_cap * 2 if self.sdir_cap else 4
                n = 0
            self.blocks[bid] = n + 1

    def _detach(self, sid: int):
        del self.slices[sid]
        if self.superdir:
            bid = sid // SUPER_BLOCK_SLOTS
            left = self.blocks[bid] - 1
            if left:
                self.blocks[bid] = left
            else:
                del self.blocks[bid]

    def _maybe_shrink(self):
        """arDirMaybeShrink (flat directory only)."""
        if self.superdir or not self.d:
            return
        hi = self.dir_highest
        if hi >= self.dir_alloc * 9 // 10:
            return
        a = 1
        while a <= hi:
            a <<= 1
        if a < self.dir_alloc:
            self.dir_alloc = a

    def directory_size(self) -> int:
        return self.sdir_cap if self.superdir else self.dir_alloc

    def full_stats(self):
        """ARINFO FULL's figures: (dense slices, sparse slices, dense
        windows total, dense elements total, sparse capacity total)."""
        dense = sparse = win_total = dense_count = sparse_cap = 0
        for n, is_dense, a, b in self.slices.values():
            if is_dense:
                dense += 1
                win_total += b
                dense_count += n
            else:
                sparse += 1
                sparse_cap += a
        return dense, sparse, win_total, dense_count, sparse_cap

    def alloc_estimate(self, je) -> int:
        """The bytes Redis's allocator holds for this array (its tracked
        alloc_size), ``je`` rounding a request to jemalloc's size class: the
        header, the directory, the slices and the elements kept out of line
        (strings of 8 bytes or more that are not inline numbers)."""
        total = je(80)
        if self.superdir:
            total += je(self.sdir_cap * 24) + len(self.blocks) * je(SUPER_BLOCK_SLOTS * 8)
        elif self.dir_alloc:
            total += je(self.dir_alloc * 8)
        for n, is_dense, a, b in self.slices.values():
            total += je(32 + 8 * b) if is_dense else je(_sparse_bytes(a))
        for v in self.d.values():
            if len(v) > 7 and value_kind(v)[0] == KIND_STR:
                total += je((2 if len(v) <= 32767 else 8) + len(v))
        return total


def _grow(sl, rel: int):
    """arSliceDenseGrowIfNeeded: widen a dense window to cover rel."""
    off, w = sl[2], sl[3]
    if rel >= off + w:
        nw = w
        while rel >= off + nw and nw < SLICE_SIZE:
            nw <<= 1
        noff = off
        if nw >= SLICE_SIZE:
            nw, noff = SLICE_SIZE, 0
        elif noff + nw > SLICE_SIZE:
            noff = SLICE_SIZE - nw
        sl[2], sl[3] = noff, nw
    elif rel < off:
        end = off + w
        nw = max(_pow2(end - rel), 8)
        if nw > SLICE_SIZE:
            nw = SLICE_SIZE
        noff = end - nw
        if noff < 0 or nw == SLICE_SIZE:
            noff = 0
        sl[2], sl[3] = noff, nw


def _maybe_demote(sl):
    """arDenseMaybeDemote: a dense slice left with few elements in a big
    window becomes sparse (capacity SPARSE_KMIN)."""
    n, _, _, w = sl
    if n > SPARSE_KMIN or w == 8 or w < 4 * SPARSE_KMIN or 32 + 8 * w < _DEMOTE_MIN_BYTES:
        return
    sl[1], sl[2], sl[3] = False, SPARSE_KMIN, 0


TYPE_NAMES[ArrayValue] = b"array"
ENCODINGS[ArrayValue] = lambda v, cfg: b"sliced-array"
