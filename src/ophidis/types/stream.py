"""Stream value (the data behind XADD, XRANGE, consumer groups ...).

An entry ID is one Python int, ``ms << 64 | seq``, so IDs compare, sort and
bisect as plain integers; ``id_bytes`` renders the ``<ms>-<seq>`` text.

Layout: the entries live in *nodes* that mirror Redis's radix tree of
listpacks one for one.  A node is keyed by its *master ID* (the ID of the
first entry added to it) and holds the *master fields* (the field names of
that first entry); every entry carries Redis's flag bits (deleted, same
fields as the master entry).  Keeping Redis's node boundaries gives the
same observable behaviour where Redis exposes them: approximate trimming
(``MAXLEN ~`` / ``MINID ~`` only drop whole nodes), XDEL tombstones (an
entry stays in its node, flagged deleted, until the node's last live entry
goes), ``XINFO STREAM`` radix-tree-keys/nodes, and the RDB/DUMP
serialisation, which is byte for byte the listpacks Redis would write.

A node starts a new one when the tail node has ``stream-node-max-entries``
entries (live + deleted) or when its listpack size plus the new entry's
field and value lengths reaches ``stream-node-max-bytes``; the listpack
size is tracked exactly (``Node.nbytes``) without building the listpack.

Per node, parallel lists: ``ids`` (sorted ints), ``fvs`` (the flat
``(field, value, ...)`` tuple of each entry: tuples of bytes are untracked
by the cyclic GC, so millions of entries cost it nothing) and
``flags`` (a bytearray of Redis's entry flags).  XADD appends to the tail
node (O(1)); lookups bisect the node keys then the node's ids (O(log n)).

Consumer groups (``Group``) keep the pending entries list as a SortedDict
ID -> ``NACK``; every ``Consumer`` has its own SortedDict of the same NACK
objects (a NACK points back to its consumer), as Redis's shared PEL.
Groups and consumers are plain dicts; replies sort them by name (Redis
keeps them in radix trees, i.e. in byte order).

Interface used by persistence (rdbencode.py, rdbdecode.py): ``StreamValue()``, ``nodes`` and
``Node.to_listpack()`` / ``Node.from_items()``, the counters ``length``,
``last_id``, ``first_id``, ``max_deleted``, ``entries_added``, and
``groups`` (None or name -> Group).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from sys import getsizeof

from sortedcontainers import SortedDict

from ..keyspace.db import DELETE_SIGNALS, ENCODINGS, TYPE_NAMES
from ..persistence.listpack import canonical_int, lp_build, lp_entry
from ..persistence.listpack import lp_entry_size as str_size
from ..persistence.listpack import lp_int_size as int_size

MASK64 = (1 << 64) - 1
MAX_ID = (1 << 128) - 1
INVALID_READ = -1          # a group's entries_read when unknown
LP_MAX_SIZE = 1 << 30      # Redis never lets a stream listpack grow beyond this

FLAG_DELETED = 1
FLAG_SAMEFIELDS = 2


def id_bytes(i: int) -> bytes:
    return b"%d-%d" % (i >> 64, i & MASK64)


def id_key(i: int) -> bytes:
    """The 128-bit big endian form (radix tree keys, RDB PEL entries)."""
    return i.to_bytes(16, "big")


# Listpack element sizes (for the node size rule): persistence/listpack.py's
# lp_int_size (int_size) and lp_entry_size (str_size)
_INTLIKE = frozenset(b"-0123456789")


def _delta(a: int, b: int) -> int:
    """a - b as Redis stores it: unsigned 64-bit difference read as int64."""
    d = (a - b) & MASK64
    return d - (1 << 64) if d >> 63 else d


# ---------------------------------------------------------------------------
# Nodes
# ---------------------------------------------------------------------------

def _copy_fields(src, dst, names):
    # the fields that a copy shares with its original (immutable values)
    for name in names:
        setattr(dst, name, getattr(src, name))


class Node:
    __slots__ = ("master", "mfields", "ids", "fvs", "flags", "live", "dead", "head",
                 "base", "ebytes")

    def __init__(self, master: int, mfields: tuple):
        self.master = master
        self.mfields = mfields
        self.ids = []
        self.fvs = []
        self.flags = bytearray()
        self.live = 0              # entries not flagged deleted
        self.dead = 0              # entries flagged deleted (tombstones)
        self.head = 0              # entries before this index are all deleted
        # listpack header (6) + end byte (1) + master entry without its
        # live/deleted counters: num-fields, the fields, the zero terminator
        self.base = 7 + int_size(len(mfields)) + sum(map(str_size, mfields)) + 2
        self.ebytes = 0            # bytes of the entries

    def nbytes(self) -> int:
        """lpBytes() of the listpack Redis would hold for this node."""
        return self.base + self.ebytes + int_size(self.live) + int_size(self.dead)

    def entry_size(self, i: int, fv, same: bool) -> int:
        m = self.master
        s = 2 + int_size(_delta(i >> 64, m >> 64)) + int_size(_delta(i & MASK64, m & MASK64))
        nf = len(fv) >> 1
        if same:
            return s + sum(map(str_size, fv[1::2])) + int_size(nf + 3)
        return s + int_size(nf) + sum(map(str_size, fv)) + int_size(2 * nf + 4)

    def add(self, i: int, fv, flags: int):
        self.ids.append(i)
        self.fvs.append(fv)
        self.flags.append(flags)
        if flags & FLAG_DELETED:
            self.dead += 1
        else:
            self.live += 1
        self.ebytes += self.entry_size(i, fv, flags & FLAG_SAMEFIELDS)

    def copy(self):
        n = Node.__new__(Node)
        _copy_fields(self, n, ("master", "mfields", "live", "dead", "head", "base", "ebytes"))
        n.ids = list(self.ids)
        n.fvs = list(self.fvs)
        n.flags = bytearray(self.flags)
        return n

    # -- RDB form ---------------------------------------------------------------------
    def to_listpack(self) -> bytes:
        """The node as the listpack Redis keeps in its radix tree."""
        mf = self.mfields
        ents = [lp_entry(self.live), lp_entry(self.dead), lp_entry(len(mf))]
        ents += [lp_entry(f) for f in mf]
        ents.append(lp_entry(0))
        ap = ents.append
        mms = self.master >> 64
        mseq = self.master & MASK64
        flags = self.flags
        for k, (i, fv) in enumerate(zip(self.ids, self.fvs)):
            fl = flags[k]
            ap(lp_entry(fl))
            ap(lp_entry(_delta(i >> 64, mms)))
            ap(lp_entry(_delta(i & MASK64, mseq)))
            nf = len(fv) >> 1
            if fl & FLAG_SAMEFIELDS:
                for x in fv[1::2]:
                    ap(lp_entry(x))
                ap(lp_entry(nf + 3))
            else:
                ap(lp_entry(nf))
                for x in fv:
                    ap(lp_entry(x))
                ap(lp_entry(2 * nf + 4))
        return lp_build(ents)

    @classmethod
    def from_items(cls, master: int, items, lp_size: int = -1):
        """Rebuild a node from the decoded elements of its listpack (bytes,
        or ints for integer-encoded elements: ``lp_decode(raw_ints=True)``;
        lp_size: the listpack's length, which spares sizing every entry).
        Raises ValueError when they do not form a valid stream node."""
        n = len(items)
        if any(x.__class__ is int for x in items):
            ints = items
            items = [b"%d" % x if x.__class__ is int else x for x in items]
        else:
            ints = items
        p = 0

        def num():
            nonlocal p
            if p >= n:
                raise ValueError("truncated")
            v = ints[p]
            if v.__class__ is not int:
                v = canonical_int(v)     # lpGetInteger reads digits too
                if v is None:
                    raise ValueError("integer expected")
            p += 1
            return v

        live = num()
        dead = num()
        nmf = num()
        if nmf < 0 or live < 0 or dead < 0 or p + nmf > n:
            raise ValueError("bad master entry")
        mfields = tuple(items[p:p + nmf])
        p += nmf
        if num() != 0:
            raise ValueError("bad master entry terminator")
        node = cls(master, mfields)
        ids = node.ids
        fvs = node.fvs
        flags = node.flags
        mms = master >> 64
        mseq = master & MASK64
        last = -1
        nlive = 0
        for _ in range(live + dead):
            fl = num() & (FLAG_DELETED | FLAG_SAMEFIELDS)
            i = (((mms + num()) & MASK64) << 64) | ((mseq + num()) & MASK64)
            if fl & FLAG_SAMEFIELDS:
                if p + nmf > n:
                    raise ValueError("truncated")
                fv = [None] * (2 * nmf)
                fv[0::2] = mfields
                fv[1::2] = items[p:p + nmf]
                fv = tuple(fv)
                p += nmf
                count = nmf + 3
            else:
                nf = num()
                if nf < 0 or p + 2 * nf > n:
                    raise ValueError("truncated")
                fv = tuple(items[p:p + 2 * nf])
                p += 2 * nf
                count = 2 * nf + 4
            if num() != count:
                raise ValueError("bad lp-count")
            if i <= last:
                raise ValueError("entries out of order")
            last = i
            ids.append(i)
            fvs.append(fv)
            flags.append(fl)
            if not fl & FLAG_DELETED:
                nlive += 1
        if p != n:
            raise ValueError("trailing elements")
        if nlive != live:
            raise ValueError("bad counters")
        node.live = live
        node.dead = dead
        if lp_size >= 0:
            node.ebytes = lp_size - node.base - int_size(live) - int_size(dead)
        else:
            node.ebytes = sum(node.entry_size(i, fv, f & FLAG_SAMEFIELDS)
                              for i, fv, f in zip(ids, fvs, flags))
        return node


# ---------------------------------------------------------------------------
# Consumer groups
# ---------------------------------------------------------------------------
class NACK:
    """A pending (delivered, not acknowledged) entry."""
    __slots__ = ("delivery_time", "delivery_count", "consumer")

    def __init__(self, consumer, now: int):
        self.delivery_time = now
        self.delivery_count = 1
        self.consumer = consumer


class Consumer:
    """A consumer of a group.  seen_time: its last read or claim attempt;
    active_time: when it last got an entry (-1: never), as Redis 7.2."""
    __slots__ = ("name", "seen_time", "active_time", "pel")

    def __init__(self, name: bytes, now: int):
        self.name = name
        self.seen_time = now
        self.active_time = -1
        self.pel = SortedDict()


class Group:
    __slots__ = ("last_id", "entries_read", "pel", "consumers", "nacked")

    def __init__(self, last_id: int, entries_read: int):
        self.last_id = last_id
        self.entries_read = entries_read
        self.pel = SortedDict()          # id -> NACK (consumer None: released by XNACK)
        self.consumers = {}              # name -> Consumer
        self.nacked = {}                 # ids XNACK released, in release order (kept lazily)

    def sorted_consumers(self):
        c = self.consumers
        return [c[k] for k in sorted(c)]


# ---------------------------------------------------------------------------
# Idempotent adds (Redis 8.6: XADD ... IDMP / IDMPAUTO, XCFGSET)
# ---------------------------------------------------------------------------
IDMP_DURATION = 100        # seconds an idempotent ID is remembered
IDMP_MAXSIZE = 100         # idempotent IDs remembered per producer


class Idmp:
    """A stream's idempotency map: producer ID -> {idempotent ID: (entry
    ID, expiry ms)} in insertion order, with its settings and counters."""
    __slots__ = ("duration", "maxsize", "producers", "added", "duplicates")

    def __init__(self):
        self.duration = IDMP_DURATION
        self.maxsize = IDMP_MAXSIZE
        self.producers = {}
        self.added = 0
        self.duplicates = 0

    def _purge(self, pid, now):
        m = self.producers.get(pid)
        if m is None:
            return None
        while m:
            iid = next(iter(m))
            if m[iid][1] > now:
                break
            del m[iid]
        if not m:
            del self.producers[pid]
            return None
        return m

    def purge(self, now):
        for pid in list(self.producers):
            self._purge(pid, now)

    def find(self, pid, iid, now):
        """The entry ID recorded for (pid, iid), or None."""
        m = self._purge(pid, now)
        if m is None:
            return None
        hit = m.get(iid)
        return None if hit is None else hit[0]

    def record(self, pid, iid, i, now):
        m = self._purge(pid, now)
        if m is None:
            m = self.producers[pid] = {}
        m[iid] = (i, now + self.duration * 1000)
        while len(m) > self.maxsize:
            del m[next(iter(m))]

    def tracked(self) -> int:
        return sum(map(len, self.producers.values()))

    def copy(self):
        n = Idmp()
        _copy_fields(self, n, ("duration", "maxsize", "added", "duplicates"))
        n.producers = {pid: dict(m) for pid, m in self.producers.items()}
        return n


# ---------------------------------------------------------------------------
# The stream
# ---------------------------------------------------------------------------
class StreamValue:
    __slots__ = ("nodes", "keys", "length", "last_id", "first_id", "max_deleted",
                 "entries_added", "groups", "idmp")

    def __init__(self):
        self.nodes = []            # Node, ordered by master ID
        self.keys = []             # master IDs, parallel to nodes
        self.length = 0
        self.last_id = 0
        self.first_id = 0          # recorded first entry ID (0 when empty)
        self.max_deleted = 0       # greatest ID ever deleted
        self.entries_added = 0
        self.groups = None         # name -> Group, created on demand
        self.idmp = None           # Idmp, created on demand

    def __len__(self):
        return self.length

    # -- adding ------------------------------------------------------------------------
    def append(self, i: int, fv, max_bytes: int, max_entries: int, totlen: int = -1):
        """Add entry i (> last_id, checked by the caller) with the flat
        field/value tuple fv (totlen: the sum of their lengths, when the
        caller has it), splitting nodes as Redis does."""
        if fv.__class__ is not tuple:
            fv = tuple(fv)
        nodes = self.nodes
        node = nodes[-1] if nodes else None
        if node is not None:
            if totlen < 0:
                totlen = sum(map(len, fv))
            limit = max_bytes if 0 < max_bytes <= LP_MAX_SIZE else LP_MAX_SIZE
            live = node.live
            dead = node.dead
            nb = (node.base + node.ebytes + (2 if live <= 127 else int_size(live))
                  + (2 if dead <= 127 else int_size(dead)))
            if nb + totlen >= limit or (max_entries and live + dead >= max_entries):
                node = None
        if node is None:
            node = Node(i, tuple(fv[0::2]))
            nodes.append(node)
            self.keys.append(i)
            same = True
        else:
            same = fv[0::2] == node.mfields
        # The entry's listpack bytes: flags, ms and seq deltas to the
        # master ID, [field count, fields,] values, lp-count.
        m = node.master
        d = (i >> 64) - (m >> 64)
        size = 2 + (2 if 0 <= d <= 127 else int_size(_delta(i >> 64, m >> 64)))
        d = (i & MASK64) - (m & MASK64)
        size += 2 if 0 <= d <= 127 else int_size(_delta(i & MASK64, m & MASK64))
        nf = len(fv) >> 1
        for x in (fv[1::2] if same else fv):
            n = len(x)
            if n < 64 and (not n or x[0] not in _INTLIKE):
                size += n + 2
            else:
                size += str_size(x)
        if same:
            size += 2 if nf <= 124 else int_size(nf + 3)
        else:
            size += (2 if nf <= 127 else int_size(nf)) + (2 if nf <= 61 else int_size(2 * nf + 4))
        node.ids.append(i)
        node.fvs.append(fv)
        node.flags.append(FLAG_SAMEFIELDS if same else 0)
        node.live += 1
        node.ebytes += size
        self.length += 1
        self.entries_added += 1
        self.last_id = i
        if self.length == 1:
            self.first_id = i

    # -- lookups ---------------------------------------------------------------------
    def _find(self, i: int):
        """(node index, entry index) of entry i (tombstones included), or None."""
        k = bisect_right(self.keys, i) - 1
        if k < 0:
            return None
        ids = self.nodes[k].ids
        j = bisect_left(ids, i)
        if j < len(ids) and ids[j] == i:
            return k, j
        return None

    def get(self, i: int):
        """fv of the live entry i, or None."""
        loc = self._find(i)
        if loc is None:
            return None
        node = self.nodes[loc[0]]
        if node.flags[loc[1]] & FLAG_DELETED:
            return None
        return node.fvs[loc[1]]

    def exists(self, i: int) -> bool:
        return self.get(i) is not None

    def range(self, start: int, end: int, count: int = 0, rev: bool = False):
        """Live entries with start <= id <= end as a list of (id, fv), in
        ID order (reversed with rev); at most count when count > 0."""
        out = []
        if start > end or not self.length:
            return out
        nodes = self.nodes
        keys = self.keys
        ap = out.append
        if not rev:
            k = bisect_right(keys, start) - 1
            if k < 0:
                k = 0
            nn = len(nodes)
            while k < nn:
                node = nodes[k]
                ids = node.ids
                j = bisect_left(ids, start) if start > node.master else node.head
                m = bisect_right(ids, end)
                if node.dead == 0:
                    if count:
                        need = count - len(out)
                        if m - j > need:
                            m = j + need
                    out.extend(zip(ids[j:m], node.fvs[j:m]))
                else:
                    flags = node.flags
                    fvs = node.fvs
                    while j < m:
                        if not flags[j] & FLAG_DELETED:
                            ap((ids[j], fvs[j]))
                            if count and len(out) >= count:
                                return out
                        j += 1
                if m < len(ids) or (count and len(out) >= count):
                    return out
                k += 1
            return out
        k = bisect_right(keys, end) - 1
        while k >= 0:
            node = nodes[k]
            ids = node.ids
            j = bisect_right(ids, end) - 1
            lo = bisect_left(ids, start)
            flags = node.flags
            fvs = node.fvs
            while j >= lo:
                if not flags[j] & FLAG_DELETED:
                    ap((ids[j], fvs[j]))
                    if count and len(out) >= count:
                        return out
                j -= 1
            if lo > 0:
                return out
            k -= 1
        return out

    def first_entry(self, skip_tombstones=True):
        """ID of the first entry (live only unless skip_tombstones is
        false), or None."""
        for node in self.nodes:
            if not skip_tombstones:
                return node.ids[0]
            flags = node.flags
            for j in range(node.head, len(flags)):
                if not flags[j] & FLAG_DELETED:
                    return node.ids[j]
        return None

    def last_valid_id(self):
        """ID of the last live entry (streamLastValidID), or None."""
        for node in reversed(self.nodes):
            flags = node.flags
            for j in range(len(flags) - 1, -1, -1):
                if not flags[j] & FLAG_DELETED:
                    return node.ids[j]
        return None

    # -- removing -------------------------------------------------------------------
    def _remove_node(self, k: int):
        del self.nodes[k]
        del self.keys[k]

    def delete(self, i: int) -> bool:
        """Remove the live entry i (XDEL).  The entry becomes a tombstone,
        or its whole node goes when it was the node's last live entry."""
        loc = self._find(i)
        if loc is None:
            return False
        k, j = loc
        node = self.nodes[k]
        fl = node.flags[j]
        if fl & FLAG_DELETED:
            return False
        if node.live == 1:
            self._remove_node(k)
        else:
            node.flags[j] = fl | FLAG_DELETED
            node.live -= 1
            node.dead += 1
            if j == node.head:
                self._advance_head(node)
        self.length -= 1
        return True

    @staticmethod
    def _advance_head(node):
        flags = node.flags
        h = node.head
        n = len(flags)
        while h < n and flags[h] & FLAG_DELETED:
            h += 1
        node.head = h

    def trim(self, maxlen=None, minid=None, approx=False, limit=0) -> int:
        """streamTrim: by length (maxlen) or by ID (minid).  With approx only
        whole nodes go; limit (> 0) caps the entries removed.  Returns the
        number of entries removed."""
        nodes = self.nodes
        deleted = 0
        drop = 0                          # whole nodes removed from the head
        nn = len(nodes)
        while drop < nn:
            if maxlen is not None and self.length <= maxlen:
                break
            node = nodes[drop]
            entries = node.live
            if limit and deleted + entries > limit:
                break
            if maxlen is not None:
                remove = self.length - entries >= maxlen
            else:
                remove = node.ids[-1] < minid
            if remove:
                drop += 1
                self.length -= entries
                deleted += entries
                continue
            if approx:
                break
            # Flag entries of this node as deleted, from its head.
            ids = node.ids
            flags = node.flags
            j = node.head
            n = len(ids)
            removed = 0
            if maxlen is not None:
                while j < n and self.length > maxlen:
                    if not flags[j] & FLAG_DELETED:
                        flags[j] |= FLAG_DELETED
                        removed += 1
                        self.length -= 1
                    j += 1
            else:
                stop = bisect_left(ids, minid)
                while j < stop:
                    if not flags[j] & FLAG_DELETED:
                        flags[j] |= FLAG_DELETED
                        removed += 1
                        self.length -= 1
                    j += 1
            node.live -= removed
            node.dead += removed
            deleted += removed
            self._advance_head(node)
            break
        if drop:
            del nodes[:drop]
            del self.keys[:drop]
        if self.length == 0:
            self.first_id = 0
        elif deleted:
            self.first_id = self.first_entry()
        return deleted

    def trim_refs(self, maxlen=None, minid=None, approx=False, limit=0, keep=None,
                  removed=None) -> int:
        """trim with Redis 8.2's reference policies: ``keep(id)`` true for
        an entry that must stay (ACKED: still referenced by a group), the
        IDs removed appended to ``removed`` (DELREF drops their PEL
        references).  With approx a node goes whole or trimming stops;
        exact trimming skips kept entries and goes on with the next ones
        until the length or the MINID is reached."""
        nodes = self.nodes
        deleted = 0
        k = 0
        gone = []                         # indexes of nodes left without live entries
        while k < len(nodes):
            if maxlen is not None and self.length <= maxlen:
                break
            node = nodes[k]
            ids = node.ids
            flags = node.flags
            live = [j for j in range(node.head, len(ids)) if not flags[j] & FLAG_DELETED]
            if limit and deleted + node.live > limit:
                break
            if maxlen is not None:
                whole = self.length - node.live >= maxlen
            else:
                whole = ids[-1] < minid
            if whole and keep is not None and any(keep(ids[j]) for j in live):
                whole = False
            if whole:
                if removed is not None:
                    removed.extend(ids[j] for j in live)
                self.length -= node.live
                deleted += node.live
                node.dead += node.live
                node.live = 0
                gone.append(k)
                k += 1
                continue
            if approx:
                break
            stop = len(ids) if maxlen is not None else bisect_left(ids, minid)
            n = 0
            for j in live:
                if j >= stop or (maxlen is not None and self.length <= maxlen):
                    break
                if keep is not None and keep(ids[j]):
                    continue
                flags[j] |= FLAG_DELETED
                if removed is not None:
                    removed.append(ids[j])
                self.length -= 1
                n += 1
            node.live -= n
            node.dead += n
            deleted += n
            self._advance_head(node)
            if node.live == 0:
                gone.append(k)
            if keep is None or (maxlen is None and stop < len(ids)):
                break
            k += 1
        for k in reversed(gone):
            self._remove_node(k)
        if self.length == 0:
            self.first_id = 0
        elif deleted:
            self.first_id = self.first_entry()
        return deleted

    # -- consumer groups helpers -------------------------------------------------------
    def has_tombstones_in(self, start: int, end: int = MAX_ID) -> bool:
        """streamRangeHasTombstones (Redis 8: a tombstone before the first
        entry counts too)."""
        md = self.max_deleted
        if not self.length or not md:
            return False
        return start <= md <= end

    def estimate_distance(self, i: int) -> int:
        """streamEstimateDistanceFromFirstEverEntry: the logical read
        counter of ID i, or INVALID_READ when it cannot be known."""
        if not self.entries_added:
            return 0
        if not self.length and i <= self.last_id:
            return self.entries_added
        if i and i < self.max_deleted:
            return INVALID_READ     # deletions between i and the last ID (Redis 8)
        if i == self.last_id:
            return self.entries_added
        if i > self.last_id:
            return INVALID_READ
        md = self.max_deleted
        if not md or md < self.first_id:
            if i < self.first_id:
                return self.entries_added - self.length
            if i == self.first_id:
                return self.entries_added - self.length + 1
        return INVALID_READ

    def group_lag(self, g):
        """A group's lag, or None when it cannot be computed (streamReplyWithCGLag,
        with Redis 8's rules for an emptied stream and a group behind the
        first entry)."""
        if not self.entries_added or not self.length:
            return 0
        if g.last_id < self.first_id and self.max_deleted < self.first_id:
            return self.length
        if g.entries_read != INVALID_READ and not self.has_tombstones_in(g.last_id):
            return self.entries_added - g.entries_read
        er = self.estimate_distance(g.last_id)
        if er != INVALID_READ:
            return self.entries_added - er
        return None

    def sorted_groups(self):
        g = self.groups
        if not g:
            return []
        return [(k, g[k]) for k in sorted(g)]

    # -- introspection ---------------------------------------------------------------
    def rax_nodes(self) -> int:
        """Nodes of the radix tree Redis would build for the node keys
        (XINFO STREAM radix-tree-nodes)."""
        keys = [id_key(k) for k in self.keys]
        if not keys:
            return 1
        return _rax_count(keys, 0, len(keys), 0)

    def total_entries(self) -> int:
        return sum(len(n.ids) for n in self.nodes)

    def mem_estimate(self) -> int:
        """Estimate of the bytes held, from a sample entry (O(groups))."""
        s = 200
        nodes = self.nodes
        if nodes:
            fv = nodes[-1].fvs[-1]
            sample = fv[:8]
            per = 60 + getsizeof(fv) + sum(map(getsizeof, sample)) * len(fv) // len(sample)
            s += per * self.length + len(nodes) * 360
        g = self.groups
        if g:
            for grp in g.values():
                s += 400 + len(grp.pel) * 220 + len(grp.consumers) * 300
        return s

    def copy(self):
        n = StreamValue()
        n.nodes = [node.copy() for node in self.nodes]
        n.keys = list(self.keys)
        _copy_fields(self, n, ("length", "last_id", "first_id", "max_deleted", "entries_added"))
        if self.idmp is not None:
            n.idmp = self.idmp.copy()
        if self.groups is not None:
            n.groups = {}
            for name, g in self.groups.items():
                ng = Group(g.last_id, g.entries_read)
                nacks = {}
                for i, nack in g.pel.items():
                    nn = NACK(None, nack.delivery_time)
                    nn.delivery_count = nack.delivery_count
                    nacks[i] = nn
                    ng.pel[i] = nn
                for cname, cons in g.consumers.items():
                    nc = Consumer(cname, cons.seen_time)
                    nc.active_time = cons.active_time
                    for i in cons.pel:
                        nack = nacks[i]
                        nack.consumer = nc
                        nc.pel[i] = nack
                    ng.consumers[cname] = nc
                ng.nacked = dict(g.nacked)
                n.groups[name] = ng
        return n

    def rewrite_commands(self, key: bytes):
        """The commands that rebuild this stream (Redis's AOF rewrite of a
        stream: XADDs or the XADD MAXLEN 0 trick, XSETID, XGROUP CREATE,
        XCLAIM ... FORCE for pending entries, XGROUP CREATECONSUMER)."""
        out = []
        if self.length:
            for i, fv in self.range(0, MAX_ID):
                out.append([b"XADD", key, id_bytes(i)] + list(fv))
        else:
            out.append([b"XADD", key, b"MAXLEN", b"0", b"0-1", b"x", b"y"])
        out.append([b"XSETID", key, id_bytes(self.last_id), b"ENTRIESADDED",
                    b"%d" % self.entries_added, b"MAXDELETEDID", id_bytes(self.max_deleted)])
        im = self.idmp
        if im is not None:
            if (im.duration, im.maxsize) != (IDMP_DURATION, IDMP_MAXSIZE):
                out.append([b"XCFGSET", key, b"IDMP-DURATION", b"%d" % im.duration,
                            b"IDMP-MAXSIZE", b"%d" % im.maxsize])
            for pid, m in im.producers.items():
                for iid, (i, _) in m.items():
                    if self.get(i) is not None:
                        out.append([b"XIDMPRECORD", key, pid, iid, id_bytes(i)])
        for name, g in self.sorted_groups():
            out.append([b"XGROUP", b"CREATE", key, name, id_bytes(g.last_id),
                        b"ENTRIESREAD", b"%d" % g.entries_read])
            for cons in g.sorted_consumers():
                if not cons.pel:
                    out.append([b"XGROUP", b"CREATECONSUMER", key, name, cons.name])
                    continue
                for i, nack in cons.pel.items():
                    out.append([b"XCLAIM", key, name, cons.name, b"0", id_bytes(i), b"TIME",
                                b"%d" % nack.delivery_time, b"RETRYCOUNT",
                                b"%d" % nack.delivery_count, b"JUSTID", b"FORCE"])
            # entries XNACK released (8.8), in release order
            for i in g.nacked:
                nack = g.pel.get(i)
                if nack is not None and nack.consumer is None:
                    out.append([b"XNACK", key, name, b"FAIL", b"IDS", b"1", id_bytes(i), b"RETRYCOUNT",
                                b"%d" % nack.delivery_count, b"FORCE"])
        return out


def _rax_count(keys, lo, hi, d):
    """Nodes of a compressed radix tree holding keys[lo:hi] (sorted, equal
    length, sharing their first d bytes), counted from depth d."""
    if hi - lo == 1:
        return 1 if d == len(keys[lo]) else 2
    a = keys[lo]
    b = keys[hi - 1]
    p = d
    while a[p] == b[p]:
        p += 1
    total = 2 if p > d else 1      # (compressed prefix node +) branching node
    i = lo
    while i < hi:
        ch = keys[i][p]
        j = i + 1
        while j < hi and keys[j][p] == ch:
            j += 1
        total += _rax_count(keys, i, j, p + 1)
        i = j
    return total


TYPE_NAMES[StreamValue] = b"stream"
ENCODINGS[StreamValue] = lambda v, cfg: b"stream"
DELETE_SIGNALS.add(StreamValue)
