# cython: language_level=3, boundscheck=False, wraparound=False
"""The sorted set's ordered index, compiled: the twin of types/zindex.py's
ZIndex, with the same methods and the same order (score, then member bytes,
as Redis's skiplist).

The pairs are kept in blocks of C entries {double score; bytes *member}
(16 bytes an element): a block is split past 2 * LOAD entries and merged
with a neighbour under LOAD / 2 (after a removal), as the pure twin's
sublists.  A pair is located with a bisection over the blocks' last pairs,
then one in its block; scores compare as C doubles and members with
memcmp, so a ZADD costs no Python call and no float object.  Positions
(ranks, ZRANGE by index) go through a Fenwick tree of the blocks' sizes,
built on first use, updated while no block is split, merged or dropped.
tests/test_zindex.py runs the same random operations through both twins.
"""

SOURCE_HASH = PYX_HASH

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_GET_SIZE
from cpython.exc cimport PyErr_NoMemory
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memmove

cdef extern from "Python.h":
    # on the entries' borrowed pointers, without a temporary reference
    const char *_bstr "PyBytes_AS_STRING" (PyObject *o)
    Py_ssize_t _blen "PyBytes_GET_SIZE" (PyObject *o)
    void _decref "Py_DECREF" (PyObject *o)

cdef Py_ssize_t LOAD = 128


def set_load(Py_ssize_t n):
    """Set the blocks' size (tests use a small one so that splits and
    merges happen); returns the previous one."""
    global LOAD
    cdef Py_ssize_t old = LOAD
    if n < 2:
        raise ValueError("LOAD must be at least 2")
    LOAD = n
    return old


# modes of a search: the first pair >= key (0) or > key (1) by (score,
# member); by score only, >= (2) or > (3)
cdef inline int _cmp(ZEnt *x, double s, const char *mp, Py_ssize_t mn, int mode) noexcept:
    """The sign of (x - key)."""
    cdef Py_ssize_t xn
    cdef int c
    if x.score < s:
        return -1
    if x.score > s:
        return 1
    if mode >= 2:
        return 0
    xn = _blen(x.member)
    c = memcmp(_bstr(x.member), mp, xn if xn < mn else mn)
    if c:
        return c
    return (xn > mn) - (xn < mn)


cdef inline bint _before(ZEnt *x, double s, const char *mp, Py_ssize_t mn, int mode) noexcept:
    """Does x come before the position looked for?"""
    cdef int c = _cmp(x, s, mp, mn, mode)
    if mode & 1:
        return c <= 0
    return c < 0


cdef Py_ssize_t _bisect(ZEnt *e, Py_ssize_t lo, Py_ssize_t hi, double s, const char *mp, Py_ssize_t mn,
                        int mode) noexcept:
    cdef Py_ssize_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if _before(&e[mid], s, mp, mn, mode):
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef int _reserve(ZBlock *b, Py_ssize_t n) except -1:
    """Room for n entries in b."""
    cdef Py_ssize_t cap
    cdef ZEnt *e
    if n <= b.cap:
        return 0
    cap = n + (n >> 3) + 4
    if cap > 2 * LOAD + 1 and n <= 2 * LOAD + 1:
        cap = 2 * LOAD + 1
    e = <ZEnt *>realloc(b.e, cap * sizeof(ZEnt))
    if e is NULL:
        PyErr_NoMemory()
        return -1
    b.e = e
    b.cap = cap
    return 0


cdef void _shrink(ZBlock *b) noexcept:
    """Give back b's room past an eighth more than it holds (after a split:
    the blocks' slack is the index's memory overhead)."""
    cdef Py_ssize_t cap = b.n + (b.n >> 3) + 4
    cdef ZEnt *e
    if cap >= b.cap:
        return
    e = <ZEnt *>realloc(b.e, cap * sizeof(ZEnt))
    if e is not NULL:
        b.e = e
        b.cap = cap


cdef class ZIndex:
    """(score, member) pairs in Redis's order: see types/zindex.py's twin."""

    def __cinit__(self):
        self.blk = NULL
        self.nblk = self.cblk = self.length = 0
        self.fw = NULL
        self.version = 0

    def __init__(self, pairs=()):
        if pairs:
            self.update(pairs)

    def __dealloc__(self):
        self._release()

    cdef void _release(self) noexcept:
        cdef Py_ssize_t k, i
        cdef ZBlock *b
        for k in range(self.nblk):
            b = &self.blk[k]
            for i in range(b.n):
                _decref(b.e[i].member)
            free(b.e)
        free(self.blk)
        free(self.fw)
        self.blk = NULL
        self.fw = NULL
        self.nblk = self.cblk = self.length = 0

    def __len__(self):
        return self.length

    def __bool__(self):
        return self.length > 0

    def clear(self):
        self._release()
        self.version += 1

    # -- blocks ------------------------------------------------------------------
    cdef int _insert_blocks(self, Py_ssize_t k, Py_ssize_t count) except -1:
        """count empty blocks at k (their entries allocated by the caller)."""
        cdef Py_ssize_t cap, j
        cdef ZBlock *nb
        if self.nblk + count > self.cblk:
            cap = self.nblk + count + (self.nblk >> 3) + 4
            nb = <ZBlock *>realloc(self.blk, cap * sizeof(ZBlock))
            if nb is NULL:
                PyErr_NoMemory()
                return -1
            self.blk = nb
            self.cblk = cap
        memmove(&self.blk[k + count], &self.blk[k], (self.nblk - k) * sizeof(ZBlock))
        for j in range(k, k + count):
            self.blk[j].e = NULL
            self.blk[j].n = self.blk[j].cap = 0
        self.nblk += count
        self._drop_fw()
        return 0

    cdef void _drop_block(self, Py_ssize_t k) noexcept:
        """Remove block k (its entries already released or moved)."""
        free(self.blk[k].e)
        memmove(&self.blk[k], &self.blk[k + 1], (self.nblk - k - 1) * sizeof(ZBlock))
        self.nblk -= 1
        self._drop_fw()

    cdef void _drop_fw(self) noexcept:
        if self.fw is not NULL:
            free(self.fw)
            self.fw = NULL

    cdef int _split(self, Py_ssize_t k) except -1:
        cdef Py_ssize_t keep = LOAD, rest
        self._insert_blocks(k + 1, 1)
        cdef ZBlock *a = &self.blk[k]
        cdef ZBlock *b = &self.blk[k + 1]
        rest = a.n - keep
        _reserve(b, rest)
        memcpy(b.e, &a.e[keep], rest * sizeof(ZEnt))
        b.n = rest
        a.n = keep
        _shrink(a)
        return 0

    cdef int _shrunk(self, Py_ssize_t k) except -1:
        """Block k lost entries: drop it when empty, merge it when small."""
        cdef ZBlock *a
        cdef ZBlock *b
        cdef Py_ssize_t j
        if self.blk[k].n == 0:
            self._drop_block(k)
            return 0
        if self.blk[k].n >= (LOAD >> 1) or self.nblk == 1:
            return 0
        j = k - 1 if k else 0
        a = &self.blk[j]
        b = &self.blk[j + 1]
        _reserve(a, a.n + b.n)
        memcpy(&a.e[a.n], b.e, b.n * sizeof(ZEnt))
        a.n += b.n
        b.n = 0
        self._drop_block(j + 1)
        if self.blk[j].n > 2 * LOAD:
            self._split(j)
        return 0

    # -- positions ---------------------------------------------------------------
    cdef Py_ssize_t *_fenwick(self) except NULL:
        cdef Py_ssize_t n = self.nblk, i, j
        cdef Py_ssize_t *fw = <Py_ssize_t *>malloc((n + 1) * sizeof(Py_ssize_t))
        if fw is NULL:
            PyErr_NoMemory()
            return NULL
        fw[0] = 0
        for i in range(n):
            fw[i + 1] = self.blk[i].n
        for i in range(1, n + 1):
            j = i + (i & -i)
            if j <= n:
                fw[j] += fw[i]
        self.fw = fw
        return fw

    cdef void _bump(self, Py_ssize_t k, Py_ssize_t delta) noexcept:
        cdef Py_ssize_t *fw = self.fw
        cdef Py_ssize_t n = self.nblk
        if fw is NULL:
            return
        k += 1
        while k <= n:
            fw[k] += delta
            k += k & -k

    cdef int _loc(self, Py_ssize_t idx, Py_ssize_t *kk, Py_ssize_t *ii) except -1:
        """(block, offset) of position idx (0 <= idx < length)."""
        cdef Py_ssize_t n = self.nblk, k = 0, step, j
        cdef Py_ssize_t *fw
        if n == 1:
            kk[0] = 0
            ii[0] = idx
            return 0
        if idx == self.length - 1:
            kk[0] = n - 1
            ii[0] = self.blk[n - 1].n - 1
            return 0
        fw = self.fw
        if fw is NULL:
            fw = self._fenwick()
        step = 1
        while step * 2 <= n:
            step *= 2
        while step:
            j = k + step
            if j <= n and fw[j] <= idx:
                k = j
                idx -= fw[j]
            step >>= 1
        kk[0] = k
        ii[0] = idx
        return 0

    cdef Py_ssize_t _pos(self, Py_ssize_t k, Py_ssize_t i) except -1:
        """The position of offset i of block k (k == nblk: the end)."""
        cdef Py_ssize_t *fw
        if k == 0:
            return i
        if k >= self.nblk:
            return self.length
        fw = self.fw
        if fw is NULL:
            fw = self._fenwick()
        while k:
            i += fw[k]
            k &= k - 1
        return i

    # -- search ------------------------------------------------------------------
    cdef Py_ssize_t _block_of(self, double s, const char *mp, Py_ssize_t mn, int mode) noexcept:
        """The first block whose last pair does not come before the position
        looked for (nblk: none)."""
        cdef Py_ssize_t lo = 0, hi = self.nblk, mid
        cdef ZBlock *b
        while lo < hi:
            mid = (lo + hi) >> 1
            b = &self.blk[mid]
            if _before(&b.e[b.n - 1], s, mp, mn, mode):
                lo = mid + 1
            else:
                hi = mid
        return lo

    cdef Py_ssize_t _search(self, double s, object m, int mode) except -1:
        cdef const char *mp = NULL
        cdef Py_ssize_t mn = 0, k
        if mode < 2:
            if not PyBytes_Check(m):
                raise TypeError("a sorted set's member is bytes")
            mp = PyBytes_AS_STRING(m)
            mn = PyBytes_GET_SIZE(m)
        k = self._block_of(s, mp, mn, mode)
        if k == self.nblk:
            return self.length
        return self._pos(k, _bisect(self.blk[k].e, 0, self.blk[k].n, s, mp, mn, mode))

    def index_left(self, double s, m):
        """The position of the first pair >= (s, m)."""
        return self._search(s, m, 0)

    def index_right(self, double s, m):
        """The position of the first pair > (s, m)."""
        return self._search(s, m, 1)

    def score_left(self, double s):
        """The position of the first pair whose score is >= s."""
        return self._search(s, None, 2)

    def score_right(self, double s):
        """The position of the first pair whose score is > s."""
        return self._search(s, None, 3)

    # -- editing -----------------------------------------------------------------
    cdef int add_(self, double s, bytes m) except -1:
        cdef const char *mp = PyBytes_AS_STRING(m)
        cdef Py_ssize_t mn = PyBytes_GET_SIZE(m), k, i
        cdef ZBlock *b
        if self.nblk == 0:
            self._insert_blocks(0, 1)
            k = 0
        else:
            k = self._block_of(s, mp, mn, 1)
            if k == self.nblk:
                k -= 1
        b = &self.blk[k]
        i = _bisect(b.e, 0, b.n, s, mp, mn, 1)
        _reserve(b, b.n + 1)
        if i < b.n:
            memmove(&b.e[i + 1], &b.e[i], (b.n - i) * sizeof(ZEnt))
        Py_INCREF(m)
        b.e[i].score = s
        b.e[i].member = <PyObject *>m
        b.n += 1
        self.length += 1
        self.version += 1
        if b.n > 2 * LOAD:
            self._split(k)
        else:
            self._bump(k, 1)
        return 0

    cdef int remove_(self, double s, bytes m) except -1:
        cdef const char *mp = PyBytes_AS_STRING(m)
        cdef Py_ssize_t mn = PyBytes_GET_SIZE(m), k, i
        cdef ZBlock *b
        k = self._block_of(s, mp, mn, 0)
        if k == self.nblk:
            return 0
        b = &self.blk[k]
        i = _bisect(b.e, 0, b.n, s, mp, mn, 0)
        if i == b.n or _cmp(&b.e[i], s, mp, mn, 0) != 0:
            return 0
        self._remove_at(k, i)
        return 1

    cdef int _remove_at(self, Py_ssize_t k, Py_ssize_t i) except -1:
        cdef ZBlock *b = &self.blk[k]
        cdef PyObject *m = b.e[i].member
        b.n -= 1
        memmove(&b.e[i], &b.e[i + 1], (b.n - i) * sizeof(ZEnt))
        self.length -= 1
        self.version += 1
        self._bump(k, -1)
        self._shrunk(k)
        _decref(m)
        return 0

    cdef object pop_(self, Py_ssize_t idx):
        cdef Py_ssize_t k, i
        self._loc(idx, &k, &i)
        cdef ZEnt *x = &self.blk[k].e[i]
        pair = (x.score, <object>x.member)
        self._remove_at(k, i)
        return pair

    def add(self, double s, m):
        """Insert (s, m); m must not be in the index."""
        if not PyBytes_Check(m):
            raise TypeError("a sorted set's member is bytes")
        self.add_(s, m)

    def remove(self, double s, m):
        """Remove (s, m); ValueError if it is not in the index."""
        if not PyBytes_Check(m) or not self.remove_(s, m):
            raise ValueError("%r not in the index" % ((s, m),))

    def update(self, pairs):
        """Add every (score, member) of pairs (members not yet present)."""
        pairs = list(pairs)
        if not pairs:
            return
        if len(pairs) * 4 >= self.length:
            if self.length:
                pairs.extend(self)
            pairs.sort()
            self._build(pairs)
        else:
            for s, m in pairs:
                self.add(s, m)

    cdef int _build(self, list pairs) except -1:
        """Replace the contents with pairs, a sorted list of (score, member)."""
        cdef Py_ssize_t n = len(pairs), lo, i, c
        cdef ZBlock *b
        for s, m in pairs:
            if not PyBytes_Check(m):
                raise TypeError("a sorted set's member is bytes")
        self._release()
        self._insert_blocks(0, (n + LOAD - 1) // LOAD)
        lo = 0
        for c in range(self.nblk):
            b = &self.blk[c]
            b.cap = min(LOAD, n - lo)           # built full: no room to spare
            b.e = <ZEnt *>malloc(b.cap * sizeof(ZEnt))
            if b.e is NULL:
                b.cap = 0
                self._release()
                PyErr_NoMemory()
                return -1
            for i in range(b.cap):
                s, m = pairs[lo + i]
                b.e[i].score = s
                Py_INCREF(m)
                b.e[i].member = <PyObject *>m
                b.n += 1
            lo += b.n
        self.length = n
        self.version += 1
        return 0

    # -- positional access ---------------------------------------------------------
    def __getitem__(self, Py_ssize_t idx):
        cdef Py_ssize_t n = self.length, k, i
        if idx < 0:
            idx += n
        if not 0 <= idx < n:
            raise IndexError("index out of range")
        self._loc(idx, &k, &i)
        cdef ZEnt *x = &self.blk[k].e[i]
        return x.score, <object>x.member

    def pop(self, Py_ssize_t idx=-1):
        cdef Py_ssize_t n = self.length
        if idx < 0:
            idx += n
        if not 0 <= idx < n:
            raise IndexError("pop index out of range")
        return self.pop_(idx)

    def __delitem__(self, idx):
        cdef Py_ssize_t start, stop, step, k0, i0, k1, i1, k, i
        cdef ZBlock *b
        if not isinstance(idx, slice):
            self.pop(idx)
            return
        start, stop, step = idx.indices(self.length)
        if step != 1:
            raise ValueError("ZIndex: only contiguous slices can be deleted")
        if start >= stop:
            return
        if start == 0 and stop == self.length:
            self.clear()
            return
        self._loc(start, &k0, &i0)
        self._loc(stop - 1, &k1, &i1)
        # release the members of the range, then close the gaps
        for k in range(k0, k1 + 1):
            b = &self.blk[k]
            for i in range(i0 if k == k0 else 0, i1 + 1 if k == k1 else b.n):
                _decref(b.e[i].member)
        if k0 == k1:
            b = &self.blk[k0]
            memmove(&b.e[i0], &b.e[i1 + 1], (b.n - i1 - 1) * sizeof(ZEnt))
            b.n -= i1 + 1 - i0
        else:
            self.blk[k0].n = i0
            b = &self.blk[k1]
            memmove(b.e, &b.e[i1 + 1], (b.n - i1 - 1) * sizeof(ZEnt))
            b.n -= i1 + 1
            for k in range(k0 + 1, k1):
                self.blk[k].n = 0
        self.length -= stop - start
        self.version += 1
        # drop the emptied blocks
        k = self.nblk - 1
        while k >= 0:
            if self.blk[k].n == 0:
                self._drop_block(k)
            k -= 1
        self._drop_fw()

    def islice(self, start=None, stop=None, bint reverse=False):
        """An iterator of the pairs of positions start..stop-1 (reversed:
        the same pairs, last first)."""
        cdef Py_ssize_t a, b
        a, b, _ = slice(start, stop).indices(self.length)
        return _ZIter(self, a, b, reverse)

    def __iter__(self):
        return _ZIter(self, 0, self.length, False)

    def __reversed__(self):
        return _ZIter(self, 0, self.length, True)

    def members(self, start=0, stop=None):
        """The members of positions start..stop-1, in order (no tuples)."""
        cdef Py_ssize_t a, b, k, i, left
        cdef ZBlock *blk
        a, b, _ = slice(start, stop).indices(self.length)
        out = []
        if a >= b:
            return out
        self._loc(a, &k, &i)
        left = b - a
        while left:
            blk = &self.blk[k]
            while i < blk.n and left:
                out.append(<object>blk.e[i].member)
                i += 1
                left -= 1
            k += 1
            i = 0
        return out

    def nbytes(self):
        """The bytes the blocks take (entries allocated, block table)."""
        cdef Py_ssize_t t = self.cblk * sizeof(ZBlock), k
        for k in range(self.nblk):
            t += self.blk[k].cap * sizeof(ZEnt)
        return t

    def __repr__(self):
        return "ZIndex(%r)" % (list(self.islice(0, 10)),)

    def __reduce__(self):
        return (ZIndex, (list(self),))


cdef class _ZIter:
    """Pairs of positions [a, b) of a ZIndex, in order or reversed; the
    index must not change meanwhile (RuntimeError, as a dict's iterator)."""
    cdef ZIndex z
    cdef Py_ssize_t k, i, left, version
    cdef bint rev

    def __cinit__(self, ZIndex z, Py_ssize_t a, Py_ssize_t b, bint rev):
        self.z = z
        self.rev = rev
        self.version = z.version
        self.left = b - a if b > a else 0
        self.k = self.i = 0
        if self.left:
            z._loc(b - 1 if rev else a, &self.k, &self.i)

    def __iter__(self):
        return self

    def __length_hint__(self):
        return self.left

    def __next__(self):
        cdef ZEnt *x
        cdef ZIndex z = self.z
        if self.left <= 0:
            raise StopIteration
        if z.version != self.version:
            self.left = 0
            raise RuntimeError("ZIndex changed size during iteration")
        x = &z.blk[self.k].e[self.i]
        pair = (x.score, <object>x.member)
        self.left -= 1
        if self.left:
            if self.rev:
                if self.i:
                    self.i -= 1
                else:
                    self.k -= 1
                    self.i = z.blk[self.k].n - 1
            else:
                self.i += 1
                if self.i == z.blk[self.k].n:
                    self.k += 1
                    self.i = 0
        return pair
