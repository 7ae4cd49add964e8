"""Sorted set value: member -> score dict plus an ordered index.

Interface used by persistence and other modules:
  ZSetValue()                      empty set
  z.add(member, score)             insert or update
  z.dict                           member -> float score (a ZDict: a
                                   dict, or its compiled twin)
  iter(z.items())                  (member, score) in rank order
  len(z)
  z.skiplist                       False: listpack encoding, True: skiplist
The zset command module may extend this class (ranges, ranks, pops) but
keeps these names.

The ordered index ``sl`` is a ``ZIndex`` (types/zindex.py, compiled twin
types/_zindex.pyx) of (score, member) pairs, in exactly Redis's skiplist order (score, then member bytes).
Ranks, score ranges and pops are O(log N).  ``dels`` counts removals (ZSCAN
cursors).
"""

from .. import compiled
from ..keyspace.db import ENCODINGS, TYPE_NAMES
from . import zindex

_c = compiled.load("types._zindex")
ZIndex = _c.ZIndex if _c is not None else zindex.ZIndex
# the member -> score map: in compiled installs a ZDict (types/_containers.pyx:
# a dict of bytes -> float keeping its members and their scores as doubles
# in its own table), else a plain dict
_cc = compiled.load("types._containers")
ZDict = _cc.ZDict if _cc is not None else dict


class ZSetValue:
    __slots__ = ("dict", "sl", "skiplist", "dels")

    def __init__(self):
        self.dict = ZDict()
        self.sl = ZIndex()
        self.skiplist = False
        self.dels = 0

    @classmethod
    def from_dict(cls, d):
        """A zset of d (member -> float score, no NaN), its ordered index
        built in one go (one sort, not an insertion a member)."""
        z = cls()
        z.dict = d if d.__class__ is ZDict else ZDict(d)
        z.sl = ZIndex([(sc, m) for m, sc in d.items()])
        return z

    def __len__(self):
        return len(self.dict)

    def add(self, member, score):
        old = self.dict.get(member)
        if old is not None:
            if old == score:
                return
            self.sl.remove(old, member)
        self.dict[member] = score
        self.sl.add(score, member)

    def remove(self, member) -> bool:
        old = self.dict.pop(member, None)
        if old is None:
            return False
        self.sl.remove(old, member)
        self.dels += 1
        return True

    def items(self):
        for score, member in self.sl:
            yield member, score

    def copy(self):
        n = ZSetValue()
        n.dict = ZDict(self.dict)
        n.sl = ZIndex(self.sl)
        n.skiplist = self.skiplist
        return n

    # -- extensions used by commands/zsets.py ------------------------------------
    def rank(self, member):
        """0-based rank in ascending order, or None."""
        s = self.dict.get(member)
        if s is None:
            return None
        return self.sl.index_left(s, member)

    def score_range(self, mn, mnex, mx, mxex):
        """(lo, hi) index slice of the elements within the score range."""
        if mn > mx or (mn == mx and (mnex or mxex)):
            return 0, 0
        sl = self.sl
        lo = sl.score_right(mn) if mnex else sl.score_left(mn)
        hi = sl.score_left(mx) if mxex else sl.score_right(mx)
        if hi < lo:
            hi = lo
        return lo, hi

    def pop_index(self, idx):
        score, member = self.sl.pop(idx)
        del self.dict[member]
        self.dels += 1
        return member, score

    def remove_slice(self, lo, hi):
        """Remove the elements of ranks lo..hi-1; returns how many."""
        n = hi - lo
        if n <= 0:
            return 0
        sl = self.sl
        d = self.dict
        if n == 1:
            del d[sl.pop(lo)[1]]
        else:
            for _, m in sl.islice(lo, hi):
                del d[m]
            del sl[lo:hi]
        self.dels += n
        return n

    def normalize_listpack(self):
        """A listpack stores a score of -0 as the integer 0: mirror that."""
        d = self.dict
        sl = self.sl
        if not len(sl):
            return
        lo = sl.score_left(0.0)
        hi = sl.score_right(0.0)
        for i in range(lo, hi):
            s, m = sl[i]
            if str(s)[0] == "-":
                d[m] = 0.0
        if hi > lo:
            items = [(0.0, m) for _, m in sl.islice(lo, hi)]
            del sl[lo:hi]
            sl.update(items)


TYPE_NAMES[ZSetValue] = b"zset"
ENCODINGS[ZSetValue] = lambda v, cfg: b"skiplist" if v.skiplist else b"listpack"
