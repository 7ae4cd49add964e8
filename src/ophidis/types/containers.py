"""In-memory forms of lists, hashes and sets.

The encoding attribute records what OBJECT ENCODING reports (and what the
RDB writer must produce).  Redis converts small encodings to big ones once a
threshold is passed and never converts back (until a reload); the command
modules keep that rule by flipping the attribute, the Python structure is
the same either way.

Interface used by persistence:
  ListValue(iterable of bytes), .quick (False: listpack, True: quicklist),
  .lpb (the listpack bytes of its entries, kept by every change; see
  "Lists' encodings" below for the rules that move .quick)

``ListValue`` is types/_quicklist.pyx's ``QuickList`` (elements packed in
malloc'd nodes, as Redis's quicklist) when the compiled module is loaded,
else ``PyListValue`` (a deque of bytes), its pure twin: the same deque
methods plus ``range``/``popn``/``nbytes`` (and ``bulk_range`` compiled).
  HashValue(mapping bytes->bytes), .ht (False: listpack, True: hashtable)

``HashValue`` is a dict of bytes -> bytes in both installs.  When the
compiled layer is loaded it derives from ``_containers.HashCore``, which
stores each field and its value as one ``HashPair`` object in its own
table (the dict's storage stays empty) and overrides every dict method, so
reads return new bytes objects and every caller sees the same mapping
(tests/test_hashpairs.py compares it with a plain dict); only bytes fields
and values can be stored.
  SetValue(iterable of bytes), .enc (b"intset", b"listpack" or b"hashtable";
  set_encoding_after gives the conversions of Redis 7.2+)

``SetValue`` is a set subclass in pure installs.  When the compiled layer
is loaded it derives from ``_containers.SetCore`` instead, which is NOT a
set (CPython's set algebra would read a set subclass's own storage): its
members live in its own table (insertion order), and it has the set
methods the server uses (add, discard, remove, pop, clear, update,
difference_update, intersection, union, difference, copy, ==; the algebra
gives plain sets).  Code handling set values goes through those methods,
iteration, ``len`` and ``in`` (never ``&``/``|``/``-``, which raise
TypeError in compiled installs, nor ``isinstance(v, set)``);
tests/test_setcore.py compares the two.

Big hashes and sets carry an optional helper (``_aux``, see ``Aux``) that
gives SPOP/SRANDMEMBER/HRANDFIELD random access and HSCAN/SSCAN a stable
order; it exists only after such a command ran.  Code that adds or removes
members of a value whose ``_aux`` is set must report it with ``aux_added`` /
``aux_removed`` (the hash and set command modules do; new objects built by
copy() or by persistence start without one).
"""

from bisect import bisect_left
from collections import deque
from itertools import islice
from random import choice, randrange
from sys import getsizeof

from ..keyspace import notify
from ..keyspace.db import ENCODINGS, TYPE_NAMES
from .. import compiled
from ..persistence.listpack import lp_entry_size as _lpsize
from ..util import try_int


_dq_append, _dq_appendleft, _dq_extend, _dq_extendleft = deque.append, deque.appendleft, deque.extend, deque.extendleft
_dq_pop, _dq_popleft, _dq_insert, _dq_remove = deque.pop, deque.popleft, deque.insert, deque.remove
_dq_setitem, _dq_delitem, _dq_clear = deque.__setitem__, deque.__delitem__, deque.clear


class PyListValue(deque):
    """A list: a deque of bytes.  ``quick`` is the encoding OBJECT ENCODING
    reports (False: listpack, a new list's; the commands move it by the
    rules below) and ``lpb`` the bytes its elements take as listpack
    entries (lp_entry_size), kept by every method that changes the list so
    that the encoding checks cost no walk (types/_quicklist.pyx's QuickList
    keeps it the same way)."""
    __slots__ = ("quick", "lpb")

    def __init__(self, items=()):
        super().__init__(items)
        self.quick = False
        self.lpb = sum(map(_lpsize, self))

    def copy(self):
        n = PyListValue(self)
        n.quick = self.quick
        return n

    def append(self, x):
        _dq_append(self, x)
        self.lpb += _lpsize(x)

    def appendleft(self, x):
        _dq_appendleft(self, x)
        self.lpb += _lpsize(x)

    def extend(self, items):
        items = list(items)
        _dq_extend(self, items)
        self.lpb += sum(map(_lpsize, items))

    def extendleft(self, items):
        items = list(items)
        _dq_extendleft(self, items)
        self.lpb += sum(map(_lpsize, items))

    def pop(self):
        x = _dq_pop(self)
        self.lpb -= _lpsize(x)
        return x

    def popleft(self):
        x = _dq_popleft(self)
        self.lpb -= _lpsize(x)
        return x

    def insert(self, i, x):
        _dq_insert(self, i, x)
        self.lpb += _lpsize(x)

    def remove(self, x):
        _dq_remove(self, x)
        self.lpb -= _lpsize(x)

    def __setitem__(self, i, x):
        old = self[i]
        _dq_setitem(self, i, x)
        self.lpb += _lpsize(x) - _lpsize(old)

    def __delitem__(self, i):
        old = self[i]
        _dq_delitem(self, i)
        self.lpb -= _lpsize(old)

    def clear(self):
        _dq_clear(self)
        self.lpb = 0

    def range(self, start, end):
        """Elements start..end (inclusive, Redis's index rules) as a list,
        read from the nearer end."""
        llen = len(self)
        # util.index_range written out: LRANGE's hot path in pure installs,
        # where the call cost ~2.5% of its instructions (bench/callgrind.py)
        if start < 0:
            start = max(start + llen, 0)
        if end < 0:
            end += llen
        if start > end or start >= llen:
            return []
        if end >= llen:
            end = llen - 1
        if llen - start < end + 1:
            items = list(islice(reversed(self), llen - 1 - end, llen - start))
            items.reverse()
            return items
        return list(islice(self, start, end + 1))

    def popn(self, count, left):
        """Pop up to count elements from one end, in popping order."""
        if count >= len(self):
            items = list(self) if left else list(reversed(self))
            self.clear()
            return items
        if left:
            items = list(islice(self, count))
            for _ in range(count):
                self.popleft()
        else:
            items = list(islice(reversed(self), count))
            for _ in range(count):
                self.pop()
        return items

    def nbytes(self):
        """Estimated bytes held (a few elements sampled)."""
        s = getsizeof(self)
        n = len(self)
        if n:
            t = k = 0
            for m in islice(self, 4):
                t += getsizeof(m)
                k += 1
            s += t * n // k
        return s


# the compiled twins (types/_quicklist.pyx, types/_containers.pyx), picked here
_ql = compiled.load("types._quicklist")
_cc = compiled.load("types._containers")
ListValue = _ql.QuickList if _ql is not None else PyListValue
# LRANGE's reply written from the nodes (compiled only; None: the command encodes)
list_range_reply = _ql.QuickList.bulk_range if _ql is not None else None


# -- Lists' encodings (Redis 7.2+, t_list.c's listTypeTryConversion*) ---------
# A list is a listpack (``quick`` False) while small, else a quicklist; the
# list itself is the same structure either way, ``quick`` is what OBJECT
# ENCODING reports and what the rules below move (``fill`` is
# list-max-listpack-size):
#   - before elements are added (pushes, LINSERT, LSET, a move's
#     destination), a listpack becomes a quicklist when its bytes plus the
#     raw lengths of the new elements pass the byte limit (fill < 0: 4, 8,
#     16, 32, 64 KB for -1..-5, lower values as -5), or for fill >= 0 when
#     the count passes fill (0 counts as 1) or the bytes pass 8 KB;
#   - after elements are removed (pops, LREM, LTRIM, LSET, a move's source),
#     a quicklist becomes a listpack when it is one packed node at half
#     those limits;
#   - a list built whole (SORT STORE, RDB load, RESTORE) gets the best
#     encoding at the full limits.
# "One packed node": Redis asks its quicklist's node layout, which depends
# on the list's history; Ophidis keeps no such layout (the compiled list
# has nodes of its own size, the pure one none), so a list counts as one
# packed node when it fits one node whole: its listpack bytes within the
# byte limit, or 8 KB for a count limit (an element Redis would keep in a
# plain node, past the byte limit, cannot fit anyway; DEBUG
# QUICKLIST-PACKED-THRESHOLD's plain nodes are not followed: in Redis the
# elements a listpack held stay packed when it converts, the later ones
# not).  That is Redis's answer for a list grown and shrunk at its ends; a
# quicklist whose nodes were thinned in the middle (LREM, LINSERT and LSET
# splits, an LTRIM keeping a window across a node boundary) may convert
# here where Redis keeps it, and the RDB file written for it
# (its nodes filled afresh) may load as a listpack where Redis's keeps its
# nodes.  An RDB file's list says how many nodes it had: one packed node
# that fits is a listpack, as rdbLoadObject converts it.

LP_HDR = 7                  # a listpack's header and end byte
_LP_LEVELS = (4096, 8192, 16384, 32768, 65536)
_SAFETY = 8192              # a count-limited node's byte cap
# list-max-listpack-size, process-wide as Redis's server.list_max_listpack_size
# (the server follows the directive: set_list_fill); commands/_bodies.pyx
# copies it when it changes (watch_list_fill)
_list_fill = [-2]
_list_watchers = []


def set_list_fill(fill):
    """list-max-listpack-size changed."""
    _list_fill[0] = fill
    for fn in _list_watchers:
        fn()


def watch_list_fill(fn):
    """fn() after list-max-listpack-size changes."""
    _list_watchers.append(fn)


def list_fill():
    """list-max-listpack-size."""
    return _list_fill[0]


def list_byte_limit(fill):
    """The listpack byte limit of list-max-listpack-size ``fill`` (8 KB,
    the safety cap, for a count limit)."""
    return _LP_LEVELS[(-fill if fill > -5 else 5) - 1] if fill < 0 else _SAFETY


def _exceeds(nbytes, count):
    # quicklistNodeExceedsLimit: do nbytes / count pass the limits?
    fill = _list_fill[0]
    if fill < 0:
        return nbytes > _LP_LEVELS[(-fill if fill > -5 else 5) - 1]
    return nbytes > _SAFETY or count > (fill or 1)


def list_grow(v, added):
    """Before the elements ``added`` (a sequence of bytes) join the list v:
    a listpack they would take past the limits becomes a quicklist
    (listTypeTryConversionAppend: the listpack's bytes plus the elements'
    raw lengths)."""
    if not v.quick and _exceeds(LP_HDR + v.lpb + sum(map(len, added)), len(v) + len(added)):
        v.quick = True


def list_grow_one(v, x):
    """list_grow for one element."""
    if not v.quick and _exceeds(LP_HDR + v.lpb + len(x), len(v) + 1):
        v.quick = True


def _one_node(v, half):
    # the list as one packed node within the limits (halved when shrinking)
    fill = _list_fill[0]
    if fill >= 0:
        cap = fill or 1
        return len(v) <= (cap >> 1 if half else cap) and LP_HDR + v.lpb <= _SAFETY
    return LP_HDR + v.lpb <= list_byte_limit(fill) >> half


def list_shrunk(v):
    """After elements left the (non-empty) list v: a quicklist that is one
    packed node within half the limits becomes a listpack
    (LIST_CONV_SHRINKING)."""
    if v.quick and _one_node(v, True):
        v.quick = False


def list_built(v, one_packed=True):
    """The encoding of a list built whole (LIST_CONV_AUTO): a listpack when
    it is one packed node within the limits; ``one_packed`` False: an RDB
    file gave it several nodes or a plain one (a quicklist, as Redis keeps
    them).  Returns v."""
    v.quick = not (one_packed and _one_node(v, False))
    return v


class PyHashBase(dict):
    """The pure hash: a dict of bytes -> bytes (types/_containers.pyx's
    ``HashCore``, which stores HashPairs, is its compiled twin)."""
    __slots__ = ()

    def nbytes(self):
        """Estimated bytes held (a few fields and values sampled)."""
        s = getsizeof(self)
        n = len(self)
        if n:
            t = k = 0
            for f, x in islice(self.items(), 4):
                t += getsizeof(f) + getsizeof(x)
                k += 1
            s += t * n // k
        return s


# The hash's and the set's fields are C fields of the compiled layer's base
# classes when it is built (its bodies read them directly), slots otherwise.
# (one field list each: types/_containers.pxd)
if _cc is not None:
    _HashBase, _HASH_SLOTS, _SetBase, _SET_SLOTS = _cc.HashCore, (), _cc.SetCore, ()
else:
    _HashBase, _HASH_SLOTS = PyHashBase, compiled.fields("types/_containers.pxd", "HashCore")
    _SetBase, _SET_SLOTS = set, compiled.fields("types/_containers.pxd", "SetCore")


class HashValue(_HashBase):
    __slots__ = _HASH_SLOTS

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.ht = False
        self._aux = None
        self.ttl = None         # field -> unix ms of its expiry (keyspace/hfe.py)

    def copy(self):
        n = HashValue(self)
        n.ht = self.ht
        if self.ttl is not None:
            n.ttl = dict(self.ttl)
        return n


class SetValue(_SetBase):
    __slots__ = _SET_SLOTS

    def __init__(self, items=()):
        super().__init__(items)
        self.enc = b"intset"
        self._aux = None

    def copy(self):
        n = SetValue(self)
        n.enc = self.enc
        return n


SET_INTSET = b"intset"
SET_LISTPACK = b"listpack"
SET_HASHTABLE = b"hashtable"
_INTSET_CAP = 1 << 30


def set_limits(cfg):
    """(set-max-intset-entries capped as Redis caps an intset,
    set-max-listpack-entries, set-max-listpack-value) of a config's values."""
    m = cfg["set-max-intset-entries"]
    return (m if m < _INTSET_CAP else _INTSET_CAP, cfg["set-max-listpack-entries"],
            cfg["set-max-listpack-value"])


def set_encoding_after(enc, n, members, new, limits):
    """What a set of ``n`` ``members`` encoded ``enc`` is encoded as once the
    ``new`` ones (distinct, none of them a member yet) are added one by one,
    as Redis 7.2+ converts it (t_set.c's setTypeAddAux): an intset takes
    integers up to set-max-intset-entries, then becomes a hashtable; a
    non-integer makes it a listpack while it has fewer than
    set-max-listpack-entries members and none longer than
    set-max-listpack-value, else a hashtable; a listpack takes members
    while it has room and they are short enough, else it becomes a
    hashtable.  Never back to a smaller encoding."""
    max_intset, lp_entries, lp_value = limits
    longest = -1            # of the integers, computed when first needed
    for m in new:
        if enc == SET_INTSET:
            if try_int(m) is not None:
                n += 1
                if n > max_intset:
                    return SET_HASHTABLE
                if longest >= 0 and len(m) > longest:
                    longest = len(m)
                continue
            if longest < 0:
                longest = max([len(x) for x in members], default=0)
                for x in new:
                    if x is m:
                        break
                    if len(x) > longest:
                        longest = len(x)
            if n >= lp_entries or len(m) > lp_value or longest > lp_value:
                return SET_HASHTABLE
            enc = SET_LISTPACK
        elif enc == SET_LISTPACK:
            if n >= lp_entries or len(m) > lp_value:
                return SET_HASHTABLE
        else:
            return enc
        n += 1
    return enc


def set_encoding_new(first, n, limits):
    """The encoding Redis 7.2+ creates a set in before adding ``n`` members,
    the first ``first`` (setTypeCreate's size hint)."""
    if try_int(first) is not None and n <= limits[0]:
        return SET_INTSET
    return SET_LISTPACK if n <= limits[1] else SET_HASHTABLE


TYPE_NAMES[ListValue] = b"list"
TYPE_NAMES[HashValue] = b"hash"
TYPE_NAMES[SetValue] = b"set"
ENCODINGS[ListValue] = lambda v, cfg: b"quicklist" if v.quick else b"listpack"
ENCODINGS[HashValue] = lambda v, cfg: b"hashtable" if v.ht else b"listpack" if v.ttl is None else b"listpackex"
ENCODINGS[SetValue] = lambda v, cfg: v.enc


# ---------------------------------------------------------------------------
# Random access and scanning for big hashes/sets
# ---------------------------------------------------------------------------
# Python's set and dict have no random access, and a set's iteration order
# changes when it is resized.  ``Aux`` keeps, for one value:
#
# * ``arr``: a list holding every member once, plus stale entries for members
#   removed since; the stale ones are exactly the members of ``gone``.  A
#   random pick draws an index and drops stale entries it meets (swap with
#   the last element), so a pick costs O(1) on average while at most half of
#   the list is stale.  A removed member that comes back revives its stale
#   entry instead of being appended again, so no member is ever listed twice.
# * ``keys``/``items``: the members sorted by ``scan_key`` (a 63-bit hash that
#   is stable for the life of the process), for HSCAN/SSCAN.  A cursor is
#   "scan_key of the next member + 1", so it stays meaningful whatever
#   happens to the value: members added since the snapshot wait in
#   ``pending`` and are merged before the next scan step, removed members are
#   skipped.  Every member present for a whole iteration is returned exactly
#   once; members added or removed meanwhile may or may not be.

SMALL_RANDOM = 48
_MASK63 = (1 << 63) - 1


def scan_key(m) -> int:
    return hash(m) & _MASK63


class Aux:
    __slots__ = ("arr", "gone", "keys", "items", "pending", "dead")

    def __init__(self):
        self.arr = self.gone = self.keys = self.items = self.pending = None
        self.dead = 0


def aux_added(v, m):
    """m became a member of v (v._aux is not None)."""
    a = v._aux
    if a.arr is not None:
        gone = a.gone
        if m in gone:
            gone.discard(m)
        else:
            a.arr.append(m)
    if a.keys is not None:
        a.pending.append(m)


def aux_removed(v, m):
    """m stopped being a member of v (v._aux is not None)."""
    a = v._aux
    if a.arr is not None:
        a.gone.add(m)
    if a.keys is not None:
        a.dead += 1


def remove_members(c, argv, cls, discard, event_class, event) -> int:
    """HDEL / SREM key member ...: remove the members from the hash or set
    (``discard(value, member)``; the key goes once the value is empty), with
    the WATCH signal, keyspace events and dirty count Redis gives.  Returns
    the number removed."""
    db = c.db
    key = argv[1]
    v = db.lookup_write_typed(key, cls)
    if v is None:
        return 0
    deleted = 0
    removed = False
    aux = v._aux is not None
    for m in argv[2:]:
        if m in v:
            discard(v, m)
            deleted += 1
            if aux:
                aux_removed(v, m)
            if not v:
                db.delete(key)
                removed = True
                break
    if deleted:
        db.signal(key)
        notify.notify(event_class, event, key, db.id)
        if removed:
            notify.notify(notify.GENERIC, b"del", key, db.id)
        c.server.dirty += deleted
    return deleted


def _random_index(v):
    a = v._aux
    if a is None:
        a = v._aux = Aux()
    arr = a.arr
    if arr is None or len(arr) - len(a.gone) != len(v) or len(a.gone) > len(v) + 16:
        arr = a.arr = list(v)
        a.gone = set()
    gone = a.gone
    while True:
        i = randrange(len(arr))
        m = arr[i]
        if gone and m in gone:
            last = arr.pop()
            if i < len(arr):
                arr[i] = last
            gone.discard(m)
            continue
        return a, arr, i, m


def random_member(v):
    """A random member (set) or field (hash) of a non-empty value."""
    if len(v) <= SMALL_RANDOM:
        return choice(tuple(v))
    return _random_index(v)[3]


def pop_random(s):
    """Remove and return a random member of a non-empty set."""
    if s._aux is None and len(s) <= SMALL_RANDOM:
        m = choice(tuple(s))
        s.remove(m)
        return m
    a, arr, i, m = _random_index(s)
    last = arr.pop()
    if i < len(arr):
        arr[i] = last
    s.remove(m)
    if a.keys is not None:
        a.dead += 1
    return m


def drop_random_index(v):
    a = v._aux
    if a is not None:
        a.arr = a.gone = None


def _scan_snapshot(v, a):
    items = sorted(v, key=scan_key)
    a.items = items
    a.keys = [scan_key(m) for m in items]
    a.pending = []
    a.dead = 0


def scan_step(v, cursor: int, count: int):
    """One HSCAN/SSCAN step over a value: returns (next_cursor, members)."""
    if cursor == 0 and len(v) <= count:
        return 0, list(v)
    a = v._aux
    if a is None:
        a = v._aux = Aux()
    if a.keys is None or a.dead > len(v) + 64 or len(a.pending) > (len(a.keys) >> 3) + 64:
        _scan_snapshot(v, a)
    elif a.pending:
        keys = a.keys
        items = a.items
        for m in a.pending:
            if m not in v:
                continue
            k = scan_key(m)
            j = bisect_left(keys, k)
            n = len(keys)
            while j < n and keys[j] == k and items[j] != m:
                j += 1
            if j < n and keys[j] == k:
                continue  # a stale entry that is live again
            keys.insert(j, k)
            items.insert(j, m)
        a.pending = []
    keys = a.keys
    items = a.items
    n = len(keys)
    i = bisect_left(keys, cursor - 1) if cursor else 0
    out = []
    budget = count * 10
    while i < n and len(out) < count and budget:
        m = items[i]
        if m in v:
            out.append(m)
        i += 1
        budget -= 1
    # Members sharing a scan key always come in the same step.
    while 0 < i < n and keys[i] == keys[i - 1]:
        m = items[i]
        if m in v:
            out.append(m)
        i += 1
    if i >= n:
        return 0, out
    return keys[i] + 1, out
