"""HyperLogLog values in Redis's exact string format.

An HLL is an ordinary string value (a ``bytearray`` once written by the
HLL commands, which Redis reports as the "raw" encoding):

  bytes 0..3    b"HYLL"
  byte  4       encoding: 0 dense, 1 sparse
  bytes 5..7    zero
  bytes 8..15   cached cardinality, little endian; bit 7 of byte 15 set
                means "stale"
  bytes 16..    the registers

16384 registers (P = 14) of 6 bits.  Dense: the registers packed LSB first,
12288 bytes.  Sparse: a run-length code of opcodes, ZERO ``00xxxxxx`` (1..64
zero registers), XZERO ``01xxxxxx yyyyyyyy`` (1..16384 zero registers) and
VAL ``1vvvvvxx`` (1..4 registers of value 1..32).  A value is hashed with
MurmurHash64A (seed 0xadc83b19): the low 14 bits pick the register, the
position of the first set bit in the remaining 50 bits (plus one) is the
candidate register value.

The sparse representation is edited exactly as Redis edits it (a register
update splits the opcode that covers it, then adjacent VAL opcodes are
merged in a small window), so the bytes produced are the same as
redis-server's for the same sequence of additions.  For speed, the commands
work on a parsed form of the sparse body (``Sparse``: a list of opcodes and
the first register each one covers) and write the bytes back once per
command; ``remember`` keeps that parsed form (and for dense values the
registers unpacked one per byte, with their histogram) between commands as
long as the stored value is the same object with the same bytes.

The cardinality estimator is Redis 7.0's (Ertl's improved estimator over
the register histogram), evaluated with the same double operations.
"""

from __future__ import annotations

import math
import struct
from bisect import bisect_right

MAGIC = b"HYLL"
HDR = 16
P = 14
Q = 64 - P
REGISTERS = 1 << P
P_MASK = REGISTERS - 1
DENSE_BODY = (REGISTERS * 6 + 7) // 8
DENSE_SIZE = HDR + DENSE_BODY
DENSE = 0
SPARSE = 1
VAL_MAX_VALUE = 32
VAL_MAX_LEN = 4
ZERO_MAX_LEN = 64
XZERO_MAX_LEN = 16384
ALPHA_INF = 0.721347520444481703680
SEED = 0xADC83B19

_M = 0xC6A4A7935BD1E995
_MASK = 0xFFFFFFFFFFFFFFFF
_INF = float("inf")

# ---------------------------------------------------------------------------
# Hashing
# ---------------------------------------------------------------------------
_unpack_words = {}
_iter_words = struct.Struct("<Q").iter_unpack


def pat_len(ele):
    """(register index, run length of zeros + 1) of an element: its
    MurmurHash64A (seed 0xadc83b19, little-endian words) picks the
    register with its low 14 bits; the rest gives the run."""
    n = len(ele)
    m = _M
    h = (SEED ^ (n * m)) & _MASK
    nw = n >> 3
    if nw:
        if nw <= 64:
            un = _unpack_words.get(nw)
            if un is None:
                un = _unpack_words[nw] = struct.Struct("<%dQ" % nw).unpack_from
            words = un(ele)
        else:
            words = (w for (w,) in _iter_words(memoryview(ele)[:nw << 3]))
        for k in words:
            k = (k * m) & _MASK
            k = ((k ^ (k >> 47)) * m) & _MASK
            h = ((h ^ k) * m) & _MASK
    if n & 7:
        h = ((h ^ int.from_bytes(ele[nw << 3:], "little")) * m) & _MASK
    h = ((h ^ (h >> 47)) * m) & _MASK
    h ^= h >> 47
    rest = (h >> P) | (1 << Q)
    return h & P_MASK, (rest & -rest).bit_length()


def _lanes_of(joined, n, count, offset, width):
    """Big integer whose 128-bit lanes hold, for each of the count elements
    of length n packed in joined, the width bytes at offset (little
    endian)."""
    out = bytearray(16 * count)
    for b in range(width):
        out[b::16] = joined[offset + b::n]
    return _frombytes(out, "little")


def pat_lens(elements):
    """[(register, run length)] of many elements.

    MurmurHash64A only multiplies by constants, xors and shifts, so it is
    evaluated for all elements of one length at once: each element's 64-bit
    state sits in its own 128-bit lane of a big integer (a product by the
    64-bit constant never reaches the next lane; masks drop what shifts
    bring in from it)."""
    if len(elements) < 24:
        return [pat_len(e) for e in elements]
    groups = {}
    for i, e in enumerate(elements):
        g = groups.get(len(e))
        if g is None:
            groups[len(e)] = [i]
        else:
            g.append(i)
    out = [None] * len(elements)
    m = _M
    for n, idxs in groups.items():
        cnt = len(idxs)
        if cnt < 8:
            for i in idxs:
                out[i] = pat_len(elements[i])
            continue
        ones = _lane_ones(cnt)
        lmask = ones * _MASK
        h = ((SEED ^ (n * m)) & _MASK) * ones
        if n:
            joined = b"".join([elements[i] for i in idxs])
        nw = n >> 3
        for j in range(nw):
            k = (_lanes_of(joined, n, cnt, 8 * j, 8) * m) & lmask
            k = (((k ^ (k >> 47)) & lmask) * m) & lmask
            h = ((h ^ k) * m) & lmask
        if n & 7:
            h = ((h ^ _lanes_of(joined, n, cnt, 8 * nw, n & 7)) * m) & lmask
        h = (((h ^ (h >> 47)) & lmask) * m) & lmask
        h = (h ^ (h >> 47)) & lmask
        words = struct.unpack("<%dQ" % (2 * cnt), h.to_bytes(16 * cnt, "little"))[::2]
        q = 1 << Q
        for i, w in zip(idxs, words):
            rest = (w >> P) | q
            out[i] = (w & P_MASK, (rest & -rest).bit_length())
    return out


_ONES = {}


def _lane_ones(cnt):
    """An integer with 1 at the bottom of each of cnt 128-bit lanes."""
    v = _ONES.get(cnt)
    if v is None:
        v = _frombytes((b"\x01" + b"\x00" * 15) * cnt, "little")
        if len(_ONES) > 256:
            _ONES.clear()
        _ONES[cnt] = v
    return v


# ---------------------------------------------------------------------------
# Header
# ---------------------------------------------------------------------------
def new_sparse() -> bytearray:
    """An empty HLL as PFADD creates it: sparse, one XZERO opcode."""
    v = bytearray(HDR)
    v[0:4] = MAGIC
    v[4] = SPARSE
    v += xzero_op(REGISTERS)
    return v


def valid_header(v) -> bool:
    """isHLLObjectOrReply's checks of a string value."""
    n = len(v)
    if n < HDR or v[0:4] != MAGIC:
        return False
    enc = v[4]
    if enc > SPARSE:
        return False
    return enc != DENSE or n == DENSE_SIZE


def cache_valid(v) -> bool:
    return not v[15] & 0x80


def invalidate(v):
    v[15] |= 0x80


def get_card(v) -> int:
    return int.from_bytes(v[8:16], "little")


def set_card(v, card):
    v[8:16] = card.to_bytes(8, "little")


# ---------------------------------------------------------------------------
# Dense registers
# ---------------------------------------------------------------------------
def dense_get(v, index, base=HDR) -> int:
    pos = index * 6
    byte = base + (pos >> 3)
    fb = pos & 7
    if fb <= 2:
        return (v[byte] >> fb) & 63
    return ((v[byte] >> fb) | (v[byte + 1] << (8 - fb))) & 63


def dense_set(v, index, count, base=HDR) -> int:
    """Raise register index to count; 1 if it changed."""
    return 1 if dense_update(v, index, count, base) >= 0 else 0


def dense_put(v, index, val, base=HDR):
    """Store val in register index (no max)."""
    pos = index * 6
    byte = base + (pos >> 3)
    fb = pos & 7
    v[byte] = (v[byte] & ~(63 << fb) & 0xFF) | ((val << fb) & 0xFF)
    if fb > 2:
        fb8 = 8 - fb
        v[byte + 1] = (v[byte + 1] & ~(63 >> fb8)) | (val >> fb8)


def _table(fn):
    return bytes(fn(i) & 0xFF for i in range(256))


_AND63 = _table(lambda b: b & 63)
_SHR6 = _table(lambda b: b >> 6)
_AND15_SHL2 = _table(lambda b: (b & 15) << 2)
_SHR4 = _table(lambda b: b >> 4)
_AND3_SHL4 = _table(lambda b: (b & 3) << 4)
_SHR2 = _table(lambda b: b >> 2)
_AND3_SHL6 = _table(lambda b: (b & 3) << 6)
_AND15_SHL4 = _table(lambda b: (b & 15) << 4)
_SHL2 = _table(lambda b: b << 2)
_frombytes = int.from_bytes
_Q4 = REGISTERS // 4


def dense_to_raw(body) -> bytes:
    """The 16384 registers of a dense body (12288 bytes) as one byte each.

    Every 3 bytes hold 4 registers; the byte planes are sliced and mapped
    through translation tables, and two planes are combined with one OR of
    big integers (no carries between bytes), all at C speed."""
    b0 = body[0::3]
    b1 = body[1::3]
    b2 = body[2::3]
    out = bytearray(REGISTERS)
    out[0::4] = b0.translate(_AND63)
    out[1::4] = (_frombytes(b0.translate(_SHR6), "little")
                 | _frombytes(b1.translate(_AND15_SHL2), "little")).to_bytes(_Q4, "little")
    out[2::4] = (_frombytes(b1.translate(_SHR4), "little")
                 | _frombytes(b2.translate(_AND3_SHL4), "little")).to_bytes(_Q4, "little")
    out[3::4] = b2.translate(_SHR2)
    return bytes(out)


def raw_to_dense(raw) -> bytes:
    """Pack 16384 one-byte registers (values < 64) into a dense body."""
    r0 = raw[0::4]
    r1 = raw[1::4]
    r2 = raw[2::4]
    r3 = raw[3::4]
    out = bytearray(DENSE_BODY)
    out[0::3] = (_frombytes(r0, "little")
                 | _frombytes(r1.translate(_AND3_SHL6), "little")).to_bytes(_Q4, "little")
    out[1::3] = (_frombytes(r1.translate(_SHR2), "little")
                 | _frombytes(r2.translate(_AND15_SHL4), "little")).to_bytes(_Q4, "little")
    out[2::3] = (_frombytes(r2.translate(_SHR4), "little")
                 | _frombytes(r3.translate(_SHL2), "little")).to_bytes(_Q4, "little")
    return bytes(out)


_H80 = int.from_bytes(b"\x80" * REGISTERS, "little")
_H01 = int.from_bytes(b"\x01" * REGISTERS, "little")


def raw_max(a, b) -> bytes:
    """Element-wise maximum of two register arrays (values < 128).

    SWAR on big integers: per byte, (0x80 | a) - b keeps bit 7 exactly when
    a >= b and never borrows from the next byte."""
    ia = _frombytes(a, "little")
    ib = _frombytes(b, "little")
    ge = (((ia | _H80) - ib) & _H80) >> 7
    mask = ge * 0xFF
    return ((ia & mask) | (ib & ~mask)).to_bytes(REGISTERS, "little")


def raw_count(raw) -> int:
    return estimate(histogram(raw))


def histogram(raw) -> list:
    """Register value counts of a raw register array (values < 64)."""
    hist = [0] * 64
    left = len(raw)
    cnt = raw.count
    for val in range(64):
        if not left:
            break
        k = cnt(val)
        if k:
            hist[val] = k
            left -= k
    return hist


# ---------------------------------------------------------------------------
# Cardinality
# ---------------------------------------------------------------------------
def _sigma(x):
    if x == 1.0:
        return _INF
    y = 1.0
    z = x
    while True:
        x *= x
        zp = z
        z += x * y
        y += y
        if zp == z:
            return z


def _tau(x):
    if x == 0.0 or x == 1.0:
        return 0.0
    y = 1.0
    z = 1 - x
    sqrt = math.sqrt
    while True:
        x = sqrt(x)
        zp = z
        y *= 0.5
        d = 1 - x
        z -= d * d * y
        if zp == z:
            return z / 3


def estimate(hist) -> int:
    """Cardinality (as the unsigned 64-bit value Redis computes) from the
    register histogram."""
    m = float(REGISTERS)
    z = m * _tau((m - hist[Q + 1]) / m)
    for j in range(Q, 0, -1):
        z += hist[j]
        z *= 0.5
    z += m * _sigma(hist[0] / m)
    e = ALPHA_INF * m * m / z if z else _INF
    # llroundl: half away from zero; out of range gives LLONG_MIN.
    if e != e or e >= 9.2233720368547758e18:
        return 1 << 63
    f = math.floor(e)
    if e - f >= 0.5:
        f += 1
    return int(f)


# ---------------------------------------------------------------------------
# Sparse representation
# ---------------------------------------------------------------------------
_VAL = [[b""] * (VAL_MAX_LEN + 1) for _ in range(VAL_MAX_VALUE + 1)]
for _v in range(1, VAL_MAX_VALUE + 1):
    for _n in range(1, VAL_MAX_LEN + 1):
        _VAL[_v][_n] = bytes([0x80 | ((_v - 1) << 2) | (_n - 1)])
_ZERO = [b""] + [bytes([n - 1]) for n in range(1, ZERO_MAX_LEN + 1)]


def xzero_op(n) -> bytes:
    n -= 1
    return bytes([0x40 | (n >> 8), n & 0xFF])


_XZERO = {}


def _xzero(n) -> bytes:
    op = _XZERO.get(n)
    if op is None:
        op = _XZERO[n] = xzero_op(n)
    return op


class Sparse:
    """A sparse body as opcodes: ``ops[k]`` (1 or 2 bytes) covers registers
    ``starts[k]`` .. ``starts[k+1]-1``; ``total`` is how many registers all
    opcodes cover (16384 unless corrupted), ``size`` their byte length."""

    __slots__ = ("ops", "starts", "total", "size", "short", "regs", "hist")

    def __init__(self, body):
        ops = []
        starts = []
        first = 0
        i = 0
        n = len(body)
        short = False
        while i < n:
            b = body[i]
            if b & 0x80:
                op = _VAL[((b >> 2) & 0x1F) + 1][(b & 3) + 1]
                span = (b & 3) + 1
                i += 1
            elif b & 0x40:
                if i + 1 < n:
                    b1 = body[i + 1]
                else:
                    # Truncated opcode: Redis reads the string's terminator.
                    b1 = 0
                    short = True
                op = bytes((b, b1))
                span = (((b & 0x3F) << 8) | b1) + 1
                i += 2
            else:
                op = _ZERO[b + 1]
                span = b + 1
                i += 1
            ops.append(op)
            starts.append(first)
            first += span
        self.ops = ops
        self.starts = starts
        self.total = first
        self.size = n
        self.short = short
        self.regs = self.hist = None

    def body(self) -> bytes:
        return b"".join(self.ops)

    def registers(self):
        """The registers one byte each (a bytearray kept up to date by
        ``set`` once built), or None when the opcodes do not cover exactly
        16384 registers (a corrupted value)."""
        if self.regs is not None:
            return self.regs
        if self.total != REGISTERS:
            return None
        out = bytearray(REGISTERS)
        ops = self.ops
        starts = self.starts
        for k in range(len(ops)):
            b = ops[k][0]
            if b & 0x80:
                runlen = (b & 3) + 1
                idx = starts[k]
                val = ((b >> 2) & 0x1F) + 1
                if runlen == 1:
                    out[idx] = val
                else:
                    out[idx:idx + runlen] = _RUNS[val][runlen]
        self.regs = out
        return out

    def histogram(self):
        """Register histogram (kept up to date by ``set`` once built), or
        None for a corrupted value."""
        if self.hist is not None:
            return self.hist
        if self.total != REGISTERS:
            return None
        hist = [0] * 64
        for op in self.ops:
            b = op[0]
            if b & 0x80:
                hist[((b >> 2) & 0x1F) + 1] += (b & 3) + 1
        hist[0] = REGISTERS - sum(hist)
        self.hist = hist
        return hist

    def set(self, index, count, max_bytes):
        """Raise register ``index`` to ``count`` as hllSparseSet does.
        Returns 1 (changed), 0 (no change), -1 (corrupted: index not
        covered) or PROMOTE (the value must become dense first)."""
        if count > VAL_MAX_VALUE:
            return PROMOTE
        if index >= self.total:
            return -1
        ops = self.ops
        starts = self.starts
        k = bisect_right(starts, index) - 1
        op = ops[k]
        b = op[0]
        first = starts[k]
        if b & 0x80:
            # VAL: nothing to do if it already holds count or more; a VAL
            # of one register is updated in place; else split in 2 or 3.
            cur = ((b >> 2) & 0x1F) + 1
            if cur >= count:
                return 0
            if not b & 3:
                ops[k] = _VAL[count][1]
                delta = 0
            else:
                last = first + (b & 3)
                vals = _VAL[cur]
                delta = 1 if index == first or index == last else 2
                if HDR + self.size + delta > max_bytes:
                    return PROMOTE
                if index == first:
                    ops[k:k + 1] = (_VAL[count][1], vals[last - index])
                    starts[k:k + 1] = (index, index + 1)
                elif index == last:
                    ops[k:k + 1] = (vals[index - first], _VAL[count][1])
                    starts[k:k + 1] = (first, index)
                else:
                    ops[k:k + 1] = (vals[index - first], _VAL[count][1], vals[last - index])
                    starts[k:k + 1] = (first, index, index + 1)
        else:
            # ZERO / XZERO: a run of one register becomes a VAL, a longer
            # one is split in [zeros] VAL [zeros].
            cur = 0
            if b & 0x40:
                last = first + (((b & 0x3F) << 8) | op[1])
                oldlen = 2
            else:
                last = first + b
                oldlen = 1
            if last == first and oldlen == 1:
                ops[k] = _VAL[count][1]
                delta = 0
            else:
                if index != first:
                    n = index - first
                    if n > ZERO_MAX_LEN:
                        left = _XZERO.get(n) or _xzero(n)
                        seqlen = 3
                    else:
                        left = _ZERO[n]
                        seqlen = 2
                else:
                    left = None
                    seqlen = 1
                if index != last:
                    n = last - index
                    if n > ZERO_MAX_LEN:
                        right = _XZERO.get(n) or _xzero(n)
                        seqlen += 2
                    else:
                        right = _ZERO[n]
                        seqlen += 1
                else:
                    right = None
                delta = seqlen - oldlen
                if delta > 0 and HDR + self.size + delta > max_bytes:
                    return PROMOTE
                v = _VAL[count][1]
                if left is None:
                    if right is None:
                        ops[k] = v
                    else:
                        ops[k:k + 1] = (v, right)
                        starts[k:k + 1] = (index, index + 1)
                elif right is None:
                    ops[k:k + 1] = (left, v)
                    starts[k:k + 1] = (first, index)
                else:
                    ops[k:k + 1] = (left, v, right)
                    starts[k:k + 1] = (first, index, index + 1)
        self.size += delta
        # Merge adjacent VAL opcodes of equal value, scanning at most five
        # opcodes from the one before the updated one.
        n = len(ops)
        i = k - 1 if k > 0 else 0
        scan = 5
        while i < n and scan:
            scan -= 1
            b = ops[i][0]
            if b & 0x80 and i + 1 < n:
                b2 = ops[i + 1][0]
                if b2 & 0x80 and (b >> 2) == (b2 >> 2):
                    ln = (b & 3) + (b2 & 3) + 2
                    if ln <= VAL_MAX_LEN:
                        ops[i] = _VAL[((b >> 2) & 0x1F) + 1][ln]
                        del ops[i + 1]
                        del starts[i + 1]
                        self.size -= 1
                        n -= 1
                        continue
            i += 1
        if self.regs is not None:
            self.regs[index] = count
        if self.hist is not None:
            self.hist[cur] -= 1
            self.hist[count] += 1
        return 1

    def to_dense_body(self):
        """The dense body, or None when the sparse value is corrupted."""
        raw = self.registers()
        if raw is None:
            return None
        return raw_to_dense(raw)

    def decode(self) -> bytes:
        """PFDEBUG DECODE's text."""
        parts = []
        for op in self.ops:
            b = op[0]
            if b & 0x80:
                parts.append(b"v:%d,%d" % (((b >> 2) & 0x1F) + 1, (b & 3) + 1))
            elif b & 0x40:
                parts.append(b"Z:%d" % ((((b & 0x3F) << 8) | op[1]) + 1))
            else:
                parts.append(b"z:%d" % (b + 1))
        return b" ".join(parts)


PROMOTE = 2
_RUNS = [[bytes([v]) * n for n in range(VAL_MAX_LEN + 1)] for v in range(VAL_MAX_VALUE + 1)]


class Dense:
    """Registers of a dense value one byte each, and their histogram (built
    on demand, then kept up to date by ``changed``)."""

    __slots__ = ("regs", "hist")

    def __init__(self, v):
        self.regs = bytearray(dense_to_raw(bytes(v[HDR:])))
        self.hist = None

    def registers(self):
        return self.regs

    def histogram(self):
        if self.hist is None:
            self.hist = histogram(self.regs)
        return self.hist

    def changed(self, index, old, new):
        self.regs[index] = new
        if self.hist is not None:
            self.hist[old] -= 1
            self.hist[new] += 1


def dense_update(v, index, count, base=HDR) -> int:
    """Raise register index to count: the old value if it changed, else -1."""
    pos = index * 6
    byte = base + (pos >> 3)
    fb = pos & 7
    b0 = v[byte]
    if fb <= 2:
        old = (b0 >> fb) & 63
        if count <= old:
            return -1
        v[byte] = (b0 & ~(63 << fb)) | (count << fb)
        return old
    b1 = v[byte + 1]
    fb8 = 8 - fb
    old = ((b0 >> fb) | (b1 << fb8)) & 63
    if count <= old:
        return -1
    v[byte] = (b0 & ~(63 << fb) & 0xFF) | ((count << fb) & 0xFF)
    v[byte + 1] = (b1 & ~(63 >> fb8)) | (count >> fb8)
    return old


# Parsed forms (Sparse / Dense) of recently used values: id(value) ->
# (value, snapshot of its bytes, state).  An entry is used only while the
# stored value is the same object with the same bytes (SETRANGE, APPEND ...
# may change a string in place).
_cache: dict = {}
_CACHE_MAX = 64


def cached(v):
    """The remembered state of v, or None."""
    e = _cache.get(id(v))
    if e is not None and e[0] is v and e[1] == v:
        return e[2]
    return None


def state(v):
    """The state of a valid-header HLL value (remembered or new)."""
    e = _cache.get(id(v))
    if e is not None and e[0] is v and e[1] == v:
        return e[2]
    return Sparse(v[HDR:]) if v[4] == SPARSE else Dense(v)


def remember(v, st):
    """v now holds what st describes: keep st for the next command."""
    if st.__class__ is Sparse and st.short:
        _cache.pop(id(v), None)
        return
    k = id(v)
    if k not in _cache and len(_cache) >= _CACHE_MAX:
        _cache.pop(next(iter(_cache)))
    _cache[k] = (v, bytes(v), st)


def forget(v):
    _cache.pop(id(v), None)


def write_sparse(v, sp: Sparse):
    """Store sp's opcodes as v's body."""
    body = sp.body()
    if sp.short:
        # The value ended in a truncated opcode; keep the bytes we had for
        # it (the terminator byte Redis read is not part of the string).
        body = body[:-1]
    v[HDR:] = body
