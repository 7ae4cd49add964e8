"""MurmurHash2 (32-bit, Austin Appleby's public-domain hash) as RedisBloom's
Count-Min sketch and Top-K use it: little-endian 4-byte blocks, the seed
mixed with the length, so CMS.QUERY counts and TOPK.LIST orders match a
Redis 8 server's for the same input."""

from __future__ import annotations

import struct

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
_blocks = {}


def murmur2(data: bytes, seed: int) -> int:
    n = len(data)
    h = (seed ^ n) & _MASK
    nb = n >> 2
    if nb:
        st = _blocks.get(nb)
        if st is None:
            st = _blocks[nb] = struct.Struct("<%dI" % nb) if nb < 64 else None
        words = st.unpack_from(data) if st is not None else struct.unpack_from("<%dI" % nb, data)
        for k in words:
            k = (k * _M) & _MASK
            k ^= k >> 24
            h = ((h * _M) & _MASK) ^ ((k * _M) & _MASK)
    t = n & 3
    if t:
        i = nb << 2
        if t == 3:
            h ^= data[i + 2] << 16
        if t >= 2:
            h ^= data[i + 1] << 8
        h = ((h ^ data[i]) * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    return h ^ (h >> 15)
