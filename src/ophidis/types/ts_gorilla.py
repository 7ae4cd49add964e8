"""RedisTimeSeries' compressed chunks (the Gorilla paper's encoding, as the
module lays it out) for the RDB record: timestamps as delta-of-deltas in
prefix-coded buckets of 5/8/11/15/32/64 bits, values as the XOR with the
previous value (its meaningful bits, reusing the previous leading/trailing
window when that is shorter).

The bit stream is the module's: bit ``i`` of a chunk is bit ``i % 64`` of
its ``i // 64``-th little-endian 64-bit word, so the data buffer reads as
one little-endian integer.  ``encode`` fills chunks of ``size`` bytes the
way the module appends (a sample that does not fit starts a new chunk);
``decode`` reads one chunk back.
"""

from __future__ import annotations

import struct

_D2U = struct.Struct("<d")
_U = struct.Struct("<Q")
CANONICAL_NAN = 0x7FF8000000000000
U64 = (1 << 64) - 1
# (prefix bits, prefix length, payload bits) by delta-of-delta range
_BUCKETS = ((0x01, 2, 5), (0x03, 3, 8), (0x07, 4, 11), (0x0F, 5, 15), (0x1F, 6, 32))


def _bits(v: float) -> int:
    if v != v:
        return CANONICAL_NAN
    return _U.unpack(_D2U.pack(v))[0]


def _float(u: int) -> float:
    return _D2U.unpack(_U.pack(u))[0]


class Chunk:
    """One compressed chunk's fields (CompressedChunk) and its data."""
    __slots__ = ("size", "count", "idx", "base_v", "base_t", "prev_t", "prev_delta", "prev_v",
                 "lead", "trail", "acc")

    def __init__(self, size: int):
        self.size = size
        self.count = 0
        self.idx = 0
        self.base_v = 0
        self.base_t = 0
        self.prev_t = 0
        self.prev_delta = 0
        self.prev_v = 0
        self.lead = 32
        self.trail = 32
        self.acc = 0

    def data(self) -> bytes:
        return self.acc.to_bytes(self.size, "little")

    def append(self, t: int, v: float) -> bool:
        """Compressed_Append: False (and the chunk unchanged) when the
        sample does not fit."""
        u = _bits(v)
        if self.count == 0:
            self.base_v = self.prev_v = u
            self.base_t = self.prev_t = t
            self.prev_delta = 0
            self.count = 1
            return True
        room = self.size * 8
        out = []          # (value, length) pieces
        n = 0
        delta = t - self.prev_t
        dd = delta - self.prev_delta
        if dd == 0:
            out.append((0, 1))
            n = 1
        else:
            for prefix, plen, bits in _BUCKETS:
                if -(1 << (bits - 1)) <= dd < (1 << (bits - 1)):
                    out.append((prefix, plen))
                    out.append((dd & ((1 << bits) - 1), bits))
                    n = plen + bits
                    break
            else:
                out.append((0x3F, 6))
                out.append((dd & U64, 64))
                n = 70
        if self.idx + n + 1 > room:
            return False
        x = u ^ self.prev_v
        lead = trail = None
        if x == 0:
            out.append((0, 1))
            n += 1
        else:
            out.append((1, 1))
            n += 1
            lead = min(64 - x.bit_length(), 31)
            trail = (x & -x).bit_length() - 1
            block = 64 - lead - trail
            expected = 5 + 6 + block
            prev_block = 64 - self.lead - self.trail
            if lead >= self.lead and trail >= self.trail and expected > prev_block:
                if self.idx + n + prev_block + 1 > room:
                    return False
                out.append((0, 1))
                out.append((x >> self.trail, prev_block))
                n += 1 + prev_block
                lead = trail = None
            else:
                if self.idx + n + expected + 1 > room:
                    return False
                out += ((1, 1), (lead, 5), (block - 1, 6), (x >> trail, block))
                n += 1 + expected
        acc, idx = self.acc, self.idx
        for val, ln in out:
            acc |= (val & ((1 << ln) - 1)) << idx
            idx += ln
        self.acc, self.idx = acc, idx
        if lead is not None:
            self.lead, self.trail = lead, trail
        self.prev_v = u
        self.prev_delta = delta
        self.prev_t = t
        self.count += 1
        return True

    def save(self, w):
        w.uint(self.size)
        w.uint(self.count)
        w.uint(self.idx)
        w.uint(self.base_v)
        w.uint(self.base_t)
        w.uint(self.prev_t)
        w.uint(self.prev_delta & U64)
        w.uint(self.prev_v)
        w.uint(self.lead)
        w.uint(self.trail)
        w.string(self.data())


def encode(ts, vs, size: int):
    """The samples as compressed chunks of ``size`` bytes."""
    chunks = [Chunk(size)]
    cur = chunks[0]
    for t, v in zip(ts, vs):
        if not cur.append(t, v):
            cur = Chunk(size)
            chunks.append(cur)
            cur.append(t, v)
    return chunks


class FormatError(Exception):
    pass


def decode(count: int, base_v: int, base_t: int, data: bytes):
    """The samples of one chunk (Compressed_ChunkIteratorGetNext)."""
    if count == 0:
        return [], []
    bits = int.from_bytes(data, "little")
    limit = len(data) * 8
    ts = [base_t]
    vs = [_float(base_v)]
    pos = 0
    prev_t, delta, prev_v = base_t, 0, base_v
    lead, trail, block = 32, 32, 0

    def take(n):
        nonlocal pos
        if pos + n > limit:
            raise FormatError("compressed chunk overrun")
        v = (bits >> pos) & ((1 << n) - 1)
        pos += n
        return v

    for _ in range(count - 1):
        if take(1):
            for _prefix, _plen, nb in _BUCKETS:
                if not take(1):
                    dd = take(nb)
                    if dd & (1 << (nb - 1)):
                        dd -= 1 << nb
                    break
            else:
                dd = take(64)
                if dd >= 1 << 63:
                    dd -= 1 << 64
            delta += dd
        prev_t += delta
        if take(1):
            if not take(1):
                x = take(block) << trail
            else:
                lead = take(5)
                block = take(6) + 1
                trail = 64 - lead - block
                if trail < 0:
                    raise FormatError("bad value block")
                x = take(block) << trail
            prev_v ^= x
        ts.append(prev_t & U64)
        vs.append(_float(prev_v))
    return ts, vs
