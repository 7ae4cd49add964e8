"""Bloom filters (Redis 8's built-in RedisBloom, ``BF.*``): a scalable chain
of bit arrays, ``BloomValue``.

The layout and arithmetic are RedisBloom's, so that what a client can see
(BF.INFO's figures, BF.DEBUG, SCANDUMP chunks, which items test positive)
and what is persisted match a Redis 8 server:

- an item's two hashes are MurmurHash64A of the item, seeded with
  0xc6a4a7935bd1e995 and then with the first hash (filters created by
  RedisBloom 1.x without its 64-bit option use 32-bit MurmurHash2 with seed
  0x9747b28c); bit i of k is ``(a + i * b) mod 2**64 mod bits``;
- a link for ``capacity`` items at error rate ``e`` has ``bpe = -ln(e) /
  ln(2)**2`` bits per entry, ``ceil(ln(2) * bpe)`` hashes and
  ``capacity * bpe`` bits rounded up to a multiple of 64;
- a chain starts with a link at half the requested error rate (unless it is
  non-scaling); when the newest link holds ``capacity`` items a new one is
  added with ``expansion`` times its capacity and half its error rate.

SCANDUMP's first chunk is the chain's header (a packed little-endian
struct: size, link count, options, growth, then per link bytes, bits, size,
error, bpe, hashes, capacity, n2); the others are the links' bit arrays in
pieces of at most 16 MB, the cursor being 1 + the byte offset after the
piece.
"""

from __future__ import annotations

import math
import struct

from ..keyspace.db import ENCODINGS, register_module_type

M64 = 0xFFFFFFFFFFFFFFFF
_M = 0xC6A4A7935BD1E995
_SEED64 = 0xC6A4A7935BD1E995
_SEED32 = 0x9747B28C
_LN2 = 0.693147180559945
_LN2_SQ = 0.480453013918201

# options (RedisBloom's BLOOM_OPT_*)
OPT_NOROUND = 1
OPT_ENTS_IS_BITS = 2
OPT_FORCE64 = 4
OPT_NO_SCALING = 8
OPT_ALL = OPT_NOROUND | OPT_ENTS_IS_BITS | OPT_FORCE64 | OPT_NO_SCALING

TIGHTENING = 0.5
MAX_CHUNK = 16 * 1024 * 1024
# what a link may allocate here, and a SCANDUMP header for all its links (a
# header asking for more is refused rather than taking the server's memory)
MAX_LINK_BYTES = 1 << 32

_HDR = struct.Struct("<QIII")
_LINK = struct.Struct("<QQQddIQB")
_words_cache: dict = {}


def murmur64a(data: bytes, seed: int) -> int:
    """MurmurHash64A (little-endian words), as RedisBloom hashes items."""
    n = len(data)
    m = _M
    h = (seed ^ (n * m)) & M64
    nw = n >> 3
    if nw:
        fmt = _words_cache.get(nw)
        if fmt is None:
            fmt = _words_cache[nw] = struct.Struct("<%dQ" % nw).unpack_from
        for k in fmt(data):
            k = (k * m) & M64
            k ^= k >> 47
            h ^= (k * m) & M64
            h = (h * m) & M64
    rest = n & 7
    if rest:
        h ^= int.from_bytes(data[nw << 3:], "little")
        h = (h * m) & M64
    h ^= h >> 47
    h = (h * m) & M64
    return h ^ (h >> 47)


def murmur2(data: bytes, seed: int) -> int:
    """32-bit MurmurHash2 (RedisBloom's filters without the 64-bit option)."""
    m = 0x5BD1E995
    n = len(data)
    h = (seed ^ n) & 0xFFFFFFFF
    nw = n >> 2
    if nw:
        for k in struct.unpack_from("<%dI" % nw, data):
            k = (k * m) & 0xFFFFFFFF
            k ^= k >> 24
            k = (k * m) & 0xFFFFFFFF
            h = ((h * m) & 0xFFFFFFFF) ^ k
    rest = n & 3
    if rest:
        h ^= int.from_bytes(data[nw << 2:], "little")
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    return h ^ (h >> 15)


def hash_pair(item: bytes, force64: bool):
    if force64:
        a = murmur64a(item, _SEED64)
        return a, murmur64a(item, a)
    a = murmur2(item, _SEED32)
    return a, murmur2(item, a)


def bits_per_entry(error: float) -> float:
    return abs(-(math.log(error) / _LN2_SQ))


class BloomError(Exception):
    """A link that cannot be made (bad parameters) or a chain that does not
    validate."""


class Link:
    """One bit array of the chain (RedisBloom's SBLink and its bloom)."""

    __slots__ = ("entries", "error", "bpe", "hashes", "bits", "n2", "bf", "size", "mod")

    def __init__(self, entries, error, bpe, hashes, bits, n2, bf, size=0):
        self.entries = entries
        self.error = error
        self.bpe = bpe
        self.hashes = hashes
        self.bits = bits
        self.n2 = n2
        self.bf = bf
        self.size = size
        # what a bit index is taken modulo: a power of two for the filters of
        # RedisBloom 1.x (n2), the bit count for the others
        self.mod = (1 << n2) if 0 < n2 < 64 else bits

    @classmethod
    def new(cls, entries: int, error: float):
        """bloom_init with RedisBloom's options (no rounding to a power of 2)."""
        if entries < 1 or not 0.0 < error < 1.0:        # (NaN too)
            raise BloomError("invalid")
        bpe = bits_per_entry(error)
        bits = int(entries * bpe)
        if bits == 0:
            bits = 1
        nbytes = ((bits // 64) + 1) * 8 if bits % 64 else bits // 8
        if nbytes > MAX_LINK_BYTES:
            raise MemoryError
        return cls(entries, error, bpe, math.ceil(_LN2 * bpe), nbytes * 8, 0, bytearray(nbytes))

    def copy(self):
        return Link(self.entries, self.error, self.bpe, self.hashes, self.bits, self.n2,
                    bytearray(self.bf), self.size)

    def valid(self, nbytes=None) -> bool:
        """bloom_validate_integrity (of a bit array of nbytes, by default its own)."""
        if nbytes is None:
            nbytes = len(self.bf)
        try:
            hashes = math.ceil(_LN2 * self.bpe)
        except (OverflowError, ValueError):
            return False
        return not (not 0.0 < self.error < 1.0 or self.n2 > 63
                    or (self.n2 and self.bits < (1 << self.n2)) or self.bits == 0
                    or self.bits != nbytes * 8 or self.hashes != hashes)

    def add(self, a: int, b: int) -> bool:
        """Set the item's bits; True when one of them was unset."""
        mod = self.mod
        bf = self.bf
        new = False
        for i in range(self.hashes):
            x = ((a + i * b) & M64) % mod
            byte = x >> 3
            mask = 1 << (x & 7)
            c = bf[byte]
            if not c & mask:
                bf[byte] = c | mask
                new = True
        return new


def _in_chain(links, a: int, b: int) -> bool:
    """Whether every bit of the item is set in one of the links, newest
    first (the common miss leaves each link at its first unset bit)."""
    for lk in reversed(links):
        mod = lk.mod
        bf = lk.bf
        x = a % mod
        if not bf[x >> 3] >> (x & 7) & 1:
            continue
        for i in range(1, lk.hashes):
            x = ((a + i * b) & M64) % mod
            if not bf[x >> 3] >> (x & 7) & 1:
                break
        else:
            return True
    return False


class BloomValue:
    """A scalable Bloom filter (RedisBloom's SBChain)."""

    __slots__ = ("size", "links", "options", "growth")
    MODULE_NAME = "MBbloom--"
    MODULE_ENCVER = 4
    MODULE_ENCVERS = (0, 1, 2, 3, 4)

    def __init__(self, size=0, links=None, options=OPT_FORCE64 | OPT_NOROUND, growth=2):
        self.size = size
        self.links = links if links is not None else []
        self.options = options
        self.growth = growth

    @classmethod
    def new(cls, capacity: int, error: float, expansion: int, nonscaling: bool):
        """A chain as BF.RESERVE / BF.ADD create it; BloomError or
        MemoryError when the first link cannot be made."""
        opts = OPT_FORCE64 | OPT_NOROUND | (OPT_NO_SCALING if nonscaling else 0)
        sb = cls(0, [], opts, expansion)
        sb.links.append(Link.new(capacity, error * (1 if nonscaling else TIGHTENING)))
        return sb

    @property
    def scaling(self) -> bool:
        return not self.options & OPT_NO_SCALING

    def capacity(self) -> int:
        return sum(lk.entries for lk in self.links)

    def check(self, item: bytes) -> bool:
        a, b = hash_pair(item, self.options & OPT_FORCE64)
        return _in_chain(self.links, a, b)

    def add(self, item: bytes) -> int:
        """1 added, 0 (probably) there already, -2 a full non-scaling
        filter, -1 a new link that cannot be made."""
        a, b = hash_pair(item, self.options & OPT_FORCE64)
        links = self.links
        if _in_chain(links, a, b):
            return 0
        cur = links[-1]
        if cur.size >= cur.entries:
            if self.options & OPT_NO_SCALING:
                return -2
            try:
                cur = Link.new(cur.entries * self.growth, cur.error * TIGHTENING)
            except (BloomError, MemoryError):
                return -1
            links.append(cur)
        if cur.add(a, b):
            cur.size += 1
            self.size += 1
            return 1
        return 0

    # -- SCANDUMP / LOADCHUNK -----------------------------------------------------
    def header(self) -> bytes:
        out = [_HDR.pack(self.size & M64, len(self.links), self.options, self.growth & 0xFFFFFFFF)]
        for lk in self.links:
            out.append(_LINK.pack(len(lk.bf), lk.bits, lk.size, lk.error, lk.bpe, lk.hashes,
                                  lk.entries, lk.n2))
        return b"".join(out)

    def _link_at(self, it: int):
        """The link holding cursor ``it``'s byte and the offset in it."""
        if it < 1:
            return None, 0
        it -= 1
        seek = 0
        for lk in self.links:
            n = len(lk.bf)
            if seek + n > it:
                return lk, it - seek
            seek += n
        return None, 0

    def chunk(self, it: int):
        """(next cursor, bytes) after cursor ``it`` (>= 1); (0, b"") at the end."""
        lk, off = self._link_at(it)
        if lk is None:
            return 0, b""
        n = min(MAX_CHUNK, len(lk.bf) - off)
        return it + n, bytes(lk.bf[off:off + n])

    @classmethod
    def from_header(cls, buf: bytes):
        """A chain of empty links from a SCANDUMP header; None when the header
        does not validate (RedisBloom's "received bad data")."""
        if len(buf) < _HDR.size:
            return None
        size, nfilters, options, growth = _HDR.unpack_from(buf)
        if nfilters <= 0 or len(buf) != _HDR.size + _LINK.size * nfilters:
            return None
        fields = [_LINK.unpack_from(buf, _HDR.size + i * _LINK.size) for i in range(nfilters)]
        if sum(f[0] for f in fields) > MAX_LINK_BYTES:
            return None
        links = []
        for nbytes, bits, lsize, error, bpe, hashes, entries, n2 in fields:
            # validated on an empty array of the size it claims, allocated after
            lk = Link(entries, error, bpe, hashes, bits, n2, memoryview(b""), lsize)
            if bits != nbytes * 8 or not lk.valid(nbytes):
                return None
            links.append(lk)
        sb = cls(size, links, options, growth)
        if not sb.valid():
            return None
        for lk, f in zip(links, fields):
            lk.bf = bytearray(f[0])
        return sb

    def load_chunk(self, it: int, buf: bytes):
        """Copy a SCANDUMP chunk in; an error text (without '-') or None."""
        n = len(buf)
        if it <= 0 or it < n:
            return "ERR received bad data"
        lk, off = self._link_at(it - n)
        if lk is None:
            return "ERR invalid offset - no link found"
        if n > len(lk.bf) - off:
            return "ERR invalid chunk - Too big for current filter"
        lk.bf[off:off + n] = buf
        return None

    def valid(self) -> bool:
        """SB_ValidateIntegrity."""
        if self.options & ~OPT_ALL:
            return False
        return self.size == sum(lk.size for lk in self.links)

    # -- the module type's callbacks ------------------------------------------------
    def copy(self):
        return BloomValue(self.size, [lk.copy() for lk in self.links], self.options, self.growth)

    def rewrite_commands(self, key):
        """AOF rewrite: the header and the chunks as BF.LOADCHUNK commands
        (RedisBloom's aof_rewrite)."""
        yield [b"BF.LOADCHUNK", key, b"1", self.header()]
        it = 1
        while True:
            it, data = self.chunk(it)
            if not it:
                break
            yield [b"BF.LOADCHUNK", key, b"%d" % it, data]

    def rdb_save(self, w):
        w.uint(self.size)
        w.uint(len(self.links))
        w.uint(self.options)
        w.uint(self.growth)
        for lk in self.links:
            w.uint(lk.entries)
            w.double(lk.error)
            w.uint(lk.hashes)
            w.double(lk.bpe)
            w.uint(lk.bits)
            w.uint(lk.n2)
            w.string(lk.bf)
            w.uint(lk.size)

    @classmethod
    def rdb_load(cls, r, encver):
        size = r.uint()
        nfilters = r.uint()
        if nfilters <= 0:
            raise ValueError("no filters")
        options = r.uint() if encver >= 2 else 0
        growth = r.uint() if encver >= 4 else 2
        links = []
        for _ in range(nfilters):
            entries = r.uint()
            error = r.double()
            hashes = r.uint()
            bpe = r.double()
            if encver == 0:
                bits, n2 = int(entries * bpe), 0
            else:
                bits = r.uint()
                n2 = r.uint()
            bf = bytearray(r.string())
            if len(bf) < math.ceil(bits / 8.0):
                raise ValueError("short bit array")
            lk = Link(entries, error, bpe, hashes, bits, n2, bf, r.uint())
            if not lk.valid():
                raise ValueError("bad link")
            links.append(lk)
        return cls(size, links, options, growth)

    def mem_usage(self) -> int:
        """BFMemUsage: the chain struct, its link array and the bit arrays
        (BF.INFO's Size)."""
        return 32 + 64 * len(self.links) + sum(len(lk.bf) for lk in self.links)

    def digest(self) -> bytes:
        # ours: the SCANDUMP header and the bit arrays
        return self.header() + b"".join(bytes(lk.bf) for lk in self.links)


register_module_type(BloomValue, b"MBbloom--")
ENCODINGS[BloomValue] = lambda v, cfg: b"raw"
