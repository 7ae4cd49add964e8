"""The shape Redis's dict tables would have for a database's keys and
expires: their sizes in buckets and the table an incremental rehash is
moving from (DEBUG HTSTATS, MEMORY STATS' and INFO's hashtable figures,
DEBUG DICT-RESIZING).

Our databases are a KeyTable or a dict whose sizes do not follow Redis's,
so the shape is modelled from the number of entries, by dict.c's rules
(7.4), at each look instead of at each insert and delete (a look: those
commands, and the cron's databases pass): a table holding more entries
than buckets grows to the next power of two (at least 4, the first table
not a rehash), one filled to 1/8 or less shrinks to the power of two of its
entries; while a child process runs only the forced ratios apply (grown at
4 entries a bucket, shrunk at 1/32), and with DEBUG DICT-RESIZING 0 nothing
resizes.  A resize starts a rehash from the old table; the cron's pass
ends it (incrementallyRehash, with activerehashing; Redis also moves a
bucket at each access of the dict, which is not modelled).  A flush leaves
the dict allocated with no table.  The shape after deletes seen at once
may be smaller than Redis's, which shrank at each delete on the way.
"""

from __future__ import annotations

INITIAL = 4         # DICT_HT_INITIAL_SIZE
MIN_FILL = 8        # HASHTABLE_MIN_FILL: shrink at 1/8 full
FORCE_RATIO = 4     # dict_force_resize_ratio

# resize policies (dict_can_resize)
ENABLE, AVOID, FORBID = 0, 1, 2


def table_size(n: int) -> int:
    """_dictNextExp: the power of two holding n entries (4 at least)."""
    if n <= INITIAL:
        return INITIAL
    return 1 << (n - 1).bit_length()


class Shape:
    """One dict's modelled tables: ``size`` buckets (0: no table yet),
    ``old`` the buckets of the table being rehashed from (0: none);
    ``allocated``: the dict was made (seen with entries), ``base``: the
    database's deletions counter when it was last dropped (a deletion
    since tells an entry was there: the dict was made)."""
    __slots__ = ("size", "old", "allocated", "base")

    def __init__(self):
        self.size = 0
        self.old = 0
        self.allocated = False
        self.base = 0

    def empty(self):
        """dictEmpty (FLUSHDB, FLUSHALL): no table, the dict kept."""
        self.size = self.old = 0

    def drop(self, dels: int):
        """emptyDbAsync: the database gets new dicts, none made yet."""
        self.size = self.old = 0
        self.allocated = False
        self.base = dels

    def made(self, used: int, dels: int) -> bool:
        """Was the dict made (MEMORY STATS lists such a database, emptied
        since too: kvstoreNumAllocatedDicts)?"""
        return self.allocated or bool(used) or dels != self.base

    def look(self, used: int, policy: int):
        """Apply the resize rules to ``used`` entries (the policy as
        dict_can_resize; FORBID also for DEBUG DICT-RESIZING 0)."""
        if not used and not self.size:
            return
        if not self.size:
            self.size = INITIAL         # the first table: no rehash
            self.allocated = True
        if self.old or policy == FORBID:
            return
        size = self.size
        if used > size and (policy == ENABLE or used > FORCE_RATIO * size):
            # grown once: rehashing from the old table; grown more than
            # once since the last look: Redis's inserts have moved the
            # earlier tables' buckets on the way (taken as done)
            new = self.size = table_size(used)
            if new == 2 * size:
                self.old = size
        elif size > INITIAL and (used * MIN_FILL <= size if policy == ENABLE
                                 else used * MIN_FILL * FORCE_RATIO <= size):
            self.old = size
            self.size = table_size(used)

    def stats(self, used: int) -> bytes:
        """kvstoreGetStats's text (not full): nothing before the dict's
        first table; the rehash just begun: its entries in the old table,
        but for the one whose insert grew it (a new entry goes to the new
        table while a rehash runs)."""
        if not self.allocated:
            return b""
        old = self.old
        if not old:
            return _ht_stats(0, self.size, used)
        moved = 1 if self.size > old and used else 0
        return _ht_stats(0, old, used - moved) + _ht_stats(1, self.size, moved)

    def buckets(self) -> int:
        """Both tables' buckets (the lookup tables' size)."""
        return self.size + self.old


def _ht_stats(idx: int, size: int, used: int) -> bytes:
    head = b"Hash table %d stats (%s):\n" % (idx, b"rehashing target" if idx else b"main hash table")
    if not used:
        return head + b"No stats available for empty dictionaries\n"
    return head + b" table size: %d\n number of elements: %d\n" % (size, used)


def look_all(srv, finish_rehash=False):
    """Every database's shapes brought up to date (the cron's pass:
    tryResizeHashTables and, with ``finish_rehash``, the incremental
    rehash's end)."""
    policy = resize_policy(srv)
    for db in srv.dbs:
        k, x = db.shapes
        k.look(len(db.d), policy)
        x.look(len(db.expires), policy)
        if finish_rehash:
            k.old = x.old = 0


def overheads(srv):
    """(lookup tables' bytes, the rehashed-from tables' bytes, dicts
    rehashing) of every database, looked at now (MEMORY STATS'
    overhead.db.hashtable.lut / .rehashing, db.dict.rehashing.count)."""
    look_all(srv)
    lut = rehashing = count = 0
    for db in srv.dbs:
        for s in db.shapes:
            lut += s.buckets()
            if s.old:
                rehashing += s.old
                count += 1
    return lut * POINTER, rehashing * POINTER, count


POINTER = 8         # sizeof(dictEntry*)


def resize_policy(srv) -> int:
    """updateDictResizePolicy and dictResizeAllowed's DEBUG switch."""
    if not srv.dict_resizing:
        return FORBID
    return AVOID if srv.child_type is not None else ENABLE
