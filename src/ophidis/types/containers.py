"""In-memory forms of lists, hashes and sets.

The encoding attribute records what OBJECT ENCODING reports (and what the
RDB writer must produce).  Redis converts small encodings to big ones once a
threshold is passed and never converts back (until a reload); the command
modules keep that rule by flipping the attribute, the Python structure is
the same either way.

Interface used by persistence:
  ListValue(iterable of bytes), .quick (always True in 7.0: quicklist)
  HashValue(mapping bytes->bytes), .ht (False: listpack, True: hashtable)
  SetValue(iterable of bytes), .enc (b"intset" or b"hashtable")
"""

from collections import deque

from ..db import ENCODINGS, TYPE_NAMES


class ListValue(deque):
    """A list.  Redis 7.0 encodes every list as a quicklist (listpack-encoded
    lists only arrive in 7.2), so ``quick`` is always True; it is kept for the
    persistence code, which writes RDB_TYPE_LIST_QUICKLIST_2 either way."""
    __slots__ = ("quick",)

    def __init__(self, items=()):
        super().__init__(items)
        self.quick = True

    def copy(self):
        n = ListValue(self)
        n.quick = self.quick
        return n


class HashValue(dict):
    __slots__ = ("ht",)

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.ht = False

    def copy(self):
        n = HashValue(self)
        n.ht = self.ht
        return n


class SetValue(set):
    __slots__ = ("enc",)

    def __init__(self, items=()):
        super().__init__(items)
        self.enc = b"intset"

    def copy(self):
        n = SetValue(self)
        n.enc = self.enc
        return n


TYPE_NAMES[ListValue] = b"list"
TYPE_NAMES[HashValue] = b"hash"
TYPE_NAMES[SetValue] = b"set"
ENCODINGS[ListValue] = lambda v, cfg: b"quicklist"
ENCODINGS[HashValue] = lambda v, cfg: b"hashtable" if v.ht else b"listpack"
ENCODINGS[SetValue] = lambda v, cfg: v.enc
