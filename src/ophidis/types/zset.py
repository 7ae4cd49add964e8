"""Sorted set value: member -> score dict plus an ordered index.

Interface used by persistence and other modules:
  ZSetValue()                      empty set
  z.add(member, score)             insert or update
  z.dict                           member -> float score
  iter(z.items())                  (member, score) in rank order
  len(z)
  z.skiplist                       False: listpack encoding, True: skiplist
The zset command module may extend this class (ranges, ranks, pops) but
keeps these names.
"""

from sortedcontainers import SortedList

from ..db import ENCODINGS, TYPE_NAMES


class ZSetValue:
    __slots__ = ("dict", "sl", "skiplist")

    def __init__(self):
        self.dict = {}
        self.sl = SortedList()   # (score, member)
        self.skiplist = False

    def __len__(self):
        return len(self.dict)

    def add(self, member, score):
        old = self.dict.get(member)
        if old is not None:
            if old == score:
                return
            self.sl.remove((old, member))
        self.dict[member] = score
        self.sl.add((score, member))

    def remove(self, member) -> bool:
        old = self.dict.pop(member, None)
        if old is None:
            return False
        self.sl.remove((old, member))
        return True

    def items(self):
        for score, member in self.sl:
            yield member, score

    def copy(self):
        n = ZSetValue()
        n.dict = dict(self.dict)
        n.sl = SortedList(self.sl)
        n.skiplist = self.skiplist
        return n


TYPE_NAMES[ZSetValue] = b"zset"
ENCODINGS[ZSetValue] = lambda v, cfg: b"skiplist" if v.skiplist else b"listpack"
