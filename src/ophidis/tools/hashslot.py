"""Redis Cluster's key -> hash slot mapping for the tools (CRC16/XMODEM of
the key, or of its first non-empty ``{tag}``, modulo 16384), and short tags
that hash to a wanted slot (redis-benchmark's ``{tag}`` keys)."""

from __future__ import annotations

import itertools
import string

SLOTS = 16384


def _table():
    t = []
    for i in range(256):
        c = i << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else (c << 1)
        t.append(c & 0xFFFF)
    return t


_T = _table()


def crc16(data: bytes) -> int:
    c = 0
    t = _T
    for b in data:
        c = ((c << 8) & 0xFFFF) ^ t[((c >> 8) ^ b) & 0xFF]
    return c


def key_hash_slot(key: bytes) -> int:
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    return crc16(key) & 0x3FFF


_ALPHABET = (string.ascii_letters + string.digits).encode()
_tags = {}


def tag_for_slot(slot: int) -> bytes:
    """A tag of 1 to 3 characters whose hash slot is ``slot``."""
    if slot in _tags:
        return _tags[slot]
    for n in (1, 2, 3):
        for chars in itertools.product(_ALPHABET, repeat=n):
            tag = bytes(chars)
            s = crc16(tag) & 0x3FFF
            _tags.setdefault(s, tag)
            if s == slot:
                return tag
    raise ValueError("no tag for slot %d" % slot)
