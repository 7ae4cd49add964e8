"""Hash slots: a key's slot (CRC16-XMODEM of the key or of its {hash tag},
modulo 16384, as Redis's keyHashSlot) and the per-slot key index of the
cluster's one database (``SlotKeys``), which CLUSTER COUNTKEYSINSLOT and
GETKEYSINSLOT and slot migration read.  ``SlotKeys`` is the compiled class
(cluster/_slots.pyx: the index kept in C) when the request loop is compiled,
the Python class ``PySlotKeys`` otherwise; both behave the same."""

from __future__ import annotations

from binascii import crc_hqx

from .. import compiled

SLOTS = 16384


def key_hash_slot(key: bytes) -> int:
    """The hash slot of key: the part between the first ``{`` and the next
    ``}`` when it is not empty, else the whole key."""
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    return crc_hqx(key, 0) & 0x3FFF


def pattern_hash_slot(pattern: bytes) -> int:
    """The one hash slot every key a glob-style pattern can form hashes to
    (Redis 7.4's patternHashSlot), or -1 when they may differ: a wildcard,
    a class or an escape before the end of the first non-empty {hash tag}."""
    s = -1
    for i, ch in enumerate(pattern):
        if ch in b"*?[\\":
            return -1
        if s == -1 and ch == 123:                   # "{"
            s = i
        elif s >= 0 and ch == 125:                  # "}"
            if i == s + 1:
                s = -2                              # "{}": the whole key hashes
            else:
                return crc_hqx(pattern[s + 1:i], 0) & 0x3FFF
    return crc_hqx(pattern, 0) & 0x3FFF


class PySlotKeys(dict):
    """Database 0's key -> value dict in cluster mode: the same dict, that
    also keeps the keys of every hash slot in insertion order
    (``by_slot[slot]``: key -> None, or None for an empty slot).  Every
    way a key enters or leaves the dict goes through the methods below."""

    __slots__ = ("by_slot",)

    def __init__(self, src=None):
        dict.__init__(self)
        self.by_slot = [None] * SLOTS
        if src:
            for k, v in src.items():
                self[k] = v

    def __setitem__(self, key, value):
        if key not in self:
            s = key_hash_slot(key)
            ks = self.by_slot[s]
            if ks is None:
                ks = self.by_slot[s] = {}
            ks[key] = None
        dict.__setitem__(self, key, value)

    def _forget(self, key):
        s = key_hash_slot(key)
        ks = self.by_slot[s]
        if ks is not None:
            ks.pop(key, None)
            if not ks:
                self.by_slot[s] = None

    def __delitem__(self, key):
        dict.__delitem__(self, key)
        self._forget(key)

    def pop(self, key, *default):
        if key in self:
            self._forget(key)
            return dict.pop(self, key)
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self):
        k, v = dict.popitem(self)
        self._forget(k)
        return k, v

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)

    def update(self, *args, **kw):
        for k, v in dict(*args, **kw).items():
            self[k] = v

    def clear(self):
        dict.clear(self)
        self.by_slot = [None] * SLOTS

    def count_in_slot(self, slot: int) -> int:
        ks = self.by_slot[slot]
        return 0 if ks is None else len(ks)

    def keys_in_slot(self, slot: int, count: int) -> list:
        """The newest keys first, as Redis's per-slot lists."""
        ks = self.by_slot[slot]
        if ks is None or count <= 0:
            return []
        out = []
        for k in reversed(ks):
            out.append(k)
            if len(out) >= count:
                break
        return out


# the compiled twin (cluster/_slots.pyx), picked here
_c = compiled.load("cluster._slots")
SlotKeys = _c.SlotKeys if _c is not None else PySlotKeys
