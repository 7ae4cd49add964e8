"""The sorted set's ordered index: (score, member) pairs in Redis's order.

Redis orders a skiplist by score, then by member bytes; so does this index.
It is a list of sublists (as sortedcontainers' SortedList, which it replaced)
but keeps each sublist as two parallel sequences, the members (a list of
bytes) and their scores (an ``array('d')``), instead of a list of (score,
member) tuples: 16 bytes an element instead of 72 (the tuple and its slot).

* ``_mem[k]`` / ``_sc[k]``: sublist k's members and scores, in order; no
  sublist is empty.  A sublist is split past 2 * LOAD elements and merged
  with a neighbour under LOAD / 2 (after a removal).
* ``_max_s[k]`` / ``_max_m[k]``: sublist k's last (greatest) pair, so a pair
  is located with bisections on the maxima, then in one sublist.  Within a
  run of equal scores the members are sorted, so a pair's place is three
  bisections: the first and last equal score, then the member among them.
* ``_fw``: a Fenwick tree of the sublists' lengths (positional access:
  ranks, ZRANGE by index), built on first use, kept up to date while no
  sublist is split, merged or dropped, and rebuilt after that.

Pairs are read out as (score, member) tuples made on demand.  The compiled
ZADD body (commands/_bodies.pyx) calls ``add`` and ``remove``.
"""

from array import array
from bisect import bisect_left as _bl
from bisect import bisect_right as _br
from itertools import chain, islice

LOAD = 1000


class ZIndex:
    __slots__ = ("_mem", "_sc", "_max_s", "_max_m", "_len", "_fw")

    def __init__(self, pairs=()):
        self.clear()
        if pairs:
            self.update(pairs)

    def __len__(self):
        return self._len

    def __bool__(self):
        return self._len > 0

    def clear(self):
        self._mem = []
        self._sc = []
        self._max_s = array("d")
        self._max_m = []
        self._len = 0
        self._fw = None

    # -- building ----------------------------------------------------------------
    def _build(self, pairs):
        """Replace the contents with pairs, a sorted list of (score, member)."""
        mem = []
        sc = []
        for lo in range(0, len(pairs), LOAD):
            chunk = pairs[lo:lo + LOAD]
            sc.append(array("d", [p[0] for p in chunk]))
            mem.append([p[1] for p in chunk])
        self._mem = mem
        self._sc = sc
        self._max_s = array("d", [a[-1] for a in sc])
        self._max_m = [lst[-1] for lst in mem]
        self._len = len(pairs)
        self._fw = None

    def update(self, pairs):
        """Add every (score, member) of pairs (members not yet present)."""
        pairs = list(pairs)
        if not pairs:
            return
        if len(pairs) * 4 >= self._len:
            if self._len:
                pairs.extend(self)
            pairs.sort()
            self._build(pairs)
        else:
            add = self.add
            for s, m in pairs:
                add(s, m)

    # -- positions -----------------------------------------------------------------
    def _fenwick(self):
        fw = [0]
        fw.extend(map(len, self._mem))
        n = len(fw) - 1
        for i in range(1, n + 1):
            j = i + (i & -i)
            if j <= n:
                fw[j] += fw[i]
        self._fw = fw
        return fw

    def _bump(self, k, delta):
        fw = self._fw
        n = len(fw) - 1
        k += 1
        while k <= n:
            fw[k] += delta
            k += k & -k

    def _loc(self, idx):
        """(sublist, offset) of position idx (0 <= idx < len)."""
        if len(self._mem) == 1:
            return 0, idx
        fw = self._fw or self._fenwick()
        n = len(fw) - 1
        k = 0
        step = 1 << (n.bit_length() - 1)
        while step:
            j = k + step
            if j <= n and fw[j] <= idx:
                k = j
                idx -= fw[j]
            step >>= 1
        return k, idx

    def _pos(self, k, i):
        """The position of offset i of sublist k (k == number of sublists:
        the end)."""
        if k == 0:
            return i
        if k >= len(self._mem):
            return self._len
        fw = self._fw or self._fenwick()
        while k:
            i += fw[k]
            k &= k - 1
        return i

    # -- search ----------------------------------------------------------------------
    def _index(self, s, m, find):
        # find: bisect_left (the first pair >= (s, m)) or bisect_right (> it)
        ms = self._max_s
        lo = _bl(ms, s)
        k = find(self._max_m, m, lo, _br(ms, s, lo))
        if k == len(ms):
            return self._len
        a = self._sc[k]
        lo = _bl(a, s)
        return self._pos(k, find(self._mem[k], m, lo, _br(a, s, lo)))

    def index_left(self, s, m):
        """The position of the first pair >= (s, m)."""
        return self._index(s, m, _bl)

    def index_right(self, s, m):
        """The position of the first pair > (s, m)."""
        return self._index(s, m, _br)

    def score_left(self, s):
        """The position of the first pair whose score is >= s."""
        k = _bl(self._max_s, s)
        if k == len(self._mem):
            return self._len
        return self._pos(k, _bl(self._sc[k], s))

    def score_right(self, s):
        """The position of the first pair whose score is > s."""
        k = _br(self._max_s, s)
        if k == len(self._mem):
            return self._len
        return self._pos(k, _br(self._sc[k], s))

    # -- editing -----------------------------------------------------------------------
    def add(self, s, m):
        """Insert (s, m); m must not be in the index."""
        mem = self._mem
        if not mem:
            self._mem = [[m]]
            self._sc = [array("d", (s,))]
            self._max_s = array("d", (s,))
            self._max_m = [m]
            self._len = 1
            return
        ms = self._max_s
        mm = self._max_m
        lo = _bl(ms, s)
        k = _br(mm, m, lo, _br(ms, s, lo))
        if k == len(mem):
            k -= 1
            lst = mem[k]
            lst.append(m)
            self._sc[k].append(s)
            ms[k] = s
            mm[k] = m
        else:
            lst = mem[k]
            a = self._sc[k]
            lo = _bl(a, s)
            i = _br(lst, m, lo, _br(a, s, lo))
            lst.insert(i, m)
            a.insert(i, s)
        self._len += 1
        if len(lst) > 2 * LOAD:
            self._split(k)
        elif self._fw is not None:
            self._bump(k, 1)

    def _split(self, k):
        lst = self._mem[k]
        a = self._sc[k]
        self._mem[k + 1:k + 1] = [lst[LOAD:]]
        self._sc[k + 1:k + 1] = [a[LOAD:]]
        del lst[LOAD:]
        del a[LOAD:]
        self._max_s.insert(k, a[-1])
        self._max_m.insert(k, lst[-1])
        self._fw = None

    def remove(self, s, m):
        """Remove (s, m); ValueError if it is not in the index."""
        ms = self._max_s
        lo = _bl(ms, s)
        k = _bl(self._max_m, m, lo, _br(ms, s, lo))
        if k == len(ms):
            raise ValueError("%r not in the index" % ((s, m),))
        lst = self._mem[k]
        a = self._sc[k]
        lo = _bl(a, s)
        hi = _br(a, s, lo)
        i = _bl(lst, m, lo, hi)
        if i == hi or lst[i] != m:
            raise ValueError("%r not in the index" % ((s, m),))
        del lst[i]
        del a[i]
        self._len -= 1
        self._shrunk(k)

    def _shrunk(self, k):
        """Sublist k lost one element: its maximum, merge or removal."""
        lst = self._mem[k]
        if not lst:
            del self._mem[k]
            del self._sc[k]
            del self._max_s[k]
            del self._max_m[k]
            self._fw = None
            return
        a = self._sc[k]
        self._max_s[k] = a[-1]
        self._max_m[k] = lst[-1]
        if len(lst) >= LOAD >> 1 or len(self._mem) == 1:
            if self._fw is not None:
                self._bump(k, -1)
            return
        # merge with the previous sublist (the next one for the first)
        j = k - 1 if k else 0
        self._mem[j].extend(self._mem[j + 1])
        self._sc[j].extend(self._sc[j + 1])
        del self._mem[j + 1]
        del self._sc[j + 1]
        del self._max_s[j]
        del self._max_m[j]
        self._fw = None
        if len(self._mem[j]) > 2 * LOAD:
            self._split(j)

    # -- positional access -----------------------------------------------------------
    def __getitem__(self, idx):
        n = self._len
        if idx < 0:
            idx += n
        if not 0 <= idx < n:
            raise IndexError("index out of range")
        if idx == 0:
            return self._sc[0][0], self._mem[0][0]
        if idx == n - 1:
            return self._max_s[-1], self._max_m[-1]
        k, i = self._loc(idx)
        return self._sc[k][i], self._mem[k][i]

    def pop(self, idx=-1):
        n = self._len
        if idx < 0:
            idx += n
        if not 0 <= idx < n:
            raise IndexError("pop index out of range")
        k, i = (len(self._mem) - 1, len(self._mem[-1]) - 1) if idx == n - 1 else self._loc(idx)
        lst = self._mem[k]
        a = self._sc[k]
        pair = a[i], lst[i]
        del lst[i]
        del a[i]
        self._len -= 1
        self._shrunk(k)
        return pair

    def __delitem__(self, idx):
        if not isinstance(idx, slice):
            self.pop(idx)
            return
        start, stop, step = idx.indices(self._len)
        if step != 1:
            raise ValueError("ZIndex: only contiguous slices can be deleted")
        if start >= stop:
            return
        if start == 0 and stop == self._len:
            self.clear()
            return
        k0, i0 = self._loc(start)
        k1, i1 = self._loc(stop - 1)
        mem = self._mem
        sc = self._sc
        if k0 == k1:
            del mem[k0][i0:i1 + 1]
            del sc[k0][i0:i1 + 1]
        else:
            del mem[k0][i0:]
            del sc[k0][i0:]
            del mem[k1][:i1 + 1]
            del sc[k1][:i1 + 1]
            del mem[k0 + 1:k1]
            del sc[k0 + 1:k1]
        self._len -= stop - start
        keep = [k for k in range(len(mem)) if mem[k]]
        if len(keep) != len(mem):
            self._mem = mem = [mem[k] for k in keep]
            self._sc = sc = [sc[k] for k in keep]
        self._max_s = array("d", [a[-1] for a in sc])
        self._max_m = [lst[-1] for lst in mem]
        self._fw = None

    def islice(self, start=None, stop=None, reverse=False):
        """An iterator of the pairs of positions start..stop-1 (reversed:
        the same pairs, last first)."""
        start, stop, _ = slice(start, stop).indices(self._len)
        if start >= stop:
            return iter(())
        k0, i0 = self._loc(start)
        k1, i1 = self._loc(stop - 1)
        mem = self._mem
        sc = self._sc
        if k0 == k1:
            parts = [(k0, i0, i1 + 1)]
        else:
            parts = [(k0, i0, len(mem[k0]))]
            parts.extend((k, 0, len(mem[k])) for k in range(k0 + 1, k1))
            parts.append((k1, 0, i1 + 1))
        if reverse:
            return chain.from_iterable(zip(reversed(sc[k][a:b]), reversed(mem[k][a:b]))
                                       for k, a, b in reversed(parts))
        return chain.from_iterable(zip(sc[k][a:b], mem[k][a:b]) for k, a, b in parts)

    def __iter__(self):
        return chain.from_iterable(map(zip, self._sc, self._mem))

    def __reversed__(self):
        return chain.from_iterable(zip(reversed(a), reversed(lst))
                                   for a, lst in zip(reversed(self._sc), reversed(self._mem)))

    def members(self, start=0, stop=None):
        """The members of positions start..stop-1, in order (no tuples)."""
        if start == 0 and stop is None:
            return list(chain.from_iterable(self._mem))
        return [m for _, m in self.islice(start, stop)]

    def __repr__(self):
        return "ZIndex(%r)" % (list(islice(self, 10)),)
