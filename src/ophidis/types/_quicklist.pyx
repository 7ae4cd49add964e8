# cython: language_level=3, boundscheck=False, wraparound=False
"""QuickList, the compiled list value (types.containers.ListValue): see the
comment below; types.containers.PyListValue is the pure twin."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.string cimport memcmp, memcpy

from ophidis.protocol._resp cimport _ndigits, _put_len

# ===========================================================================
# QuickList: the compiled list value (types.containers.ListValue)
# ===========================================================================
# A list as Redis keeps it: a chain of nodes, each one malloc'd buffer of
# packed entries (types.containers.PyListValue, a deque of bytes objects,
# is the pure twin: the same methods and behaviour; tests/test_quicklist.py
# runs random operations through both).  An entry is its length, the bytes
# and its length again (so both ends can be read): one byte each side for
# elements under 128 bytes, 0x80 and 8 bytes otherwise.  A node holds up to
# _QL_NODE bytes of entries (list-max-listpack-size -2: 8 KB), or one bigger
# element alone.  The node array keeps free slots at both ends (pushes on
# either side are O(1)); the data inside a node too (off: the first byte of
# data; pushes at the front move it left).  Elements read out are new bytes
# objects.  No Python object fields: the cyclic GC never visits a list.
# Two fields for the list's encoding (types.containers' "Lists' encodings"):
# quick (what OBJECT ENCODING reports, moved by the commands) and lpb, the
# bytes the elements would take as listpack entries, kept by every change
# here so that the commands' checks cost no walk.

from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.pyport cimport PY_SSIZE_T_MAX
from libc.string cimport memmove

cdef enum:
    _QL_NODE = 8192
    _QL_MINCAP = 64

cdef inline void _ql_put(char *p, const char *src, Py_ssize_t n) noexcept nogil:
    if n < 128:
        p[0] = <char>n
        memcpy(p + 1, src, n)
        p[n + 1] = <char>n
    else:
        p[0] = <char>0x80
        memcpy(p + 1, &n, 8)
        memcpy(p + 9, src, n)
        memcpy(p + 9 + n, &n, 8)
        p[n + 17] = <char>0x80


cdef inline Py_ssize_t _ql_back(const char *e) noexcept nogil:
    # length of the element whose entry ends at e (exclusive)
    cdef Py_ssize_t n
    cdef unsigned char b = <unsigned char>(e - 1)[0]
    if b < 128:
        return b
    memcpy(&n, e - 9, 8)
    return n


cdef inline bint _ql_bytes_like(x):
    return PyBytes_Check(x) or isinstance(x, (bytearray, memoryview))


cdef inline bytes _ql_bytes(x):
    if PyBytes_Check(x):
        return <bytes>x
    if isinstance(x, (bytearray, memoryview)):
        return bytes(x)
    raise TypeError("a list element must be bytes, not %s" % type(x).__name__)


cdef int _ql_grow(_qlnode *nd, Py_ssize_t need, Py_ssize_t gap_at) except -1:
    # a bigger buffer for nd with a gap of need bytes at data offset gap_at
    # (0: the front, nd.used: the back); the data starts at 0 after, or
    # right-aligned when the gap is at the front of a non-empty node
    cdef Py_ssize_t total = nd.used + need, newcap, base
    cdef char *b
    if total > _QL_NODE:
        newcap = total
    else:
        newcap = nd.cap * 2
        if newcap < total:
            newcap = total
        if newcap < _QL_MINCAP:
            newcap = _QL_MINCAP
        if newcap > _QL_NODE:
            newcap = _QL_NODE
    if gap_at == nd.used and nd.off == 0 and nd.buf != NULL:
        b = <char *>PyMem_Realloc(nd.buf, newcap)
        if b == NULL:
            raise MemoryError()
        nd.buf = b
        nd.cap = newcap
        return 0
    b = <char *>PyMem_Malloc(newcap)
    if b == NULL:
        raise MemoryError()
    base = newcap - total if gap_at == 0 and nd.used else 0
    if nd.buf != NULL:
        memcpy(b + base, nd.buf + nd.off, gap_at)
        memcpy(b + base + gap_at + need, nd.buf + nd.off + gap_at, nd.used - gap_at)
        PyMem_Free(nd.buf)
    nd.buf = b
    nd.cap = newcap
    nd.off = base
    return 0


cdef Py_ssize_t _ql_gap(_qlnode *nd, Py_ssize_t pos, Py_ssize_t need) except -1:
    # open need bytes at buffer offset pos (an entry boundary of nd's data);
    # returns the buffer offset of the gap, nd.used grows by need.  A gap
    # at the front moves the data to the end of the buffer (the next pushes
    # at the front cost no move), one at the back to its start.
    cdef Py_ssize_t rel = pos - nd.off, tail = nd.used - rel
    if rel == 0:
        if nd.off >= need:
            nd.off -= need
        elif nd.cap - nd.used >= need:
            memmove(nd.buf + nd.cap - nd.used, nd.buf + nd.off, nd.used)
            nd.off = nd.cap - nd.used - need
        else:
            _ql_grow(nd, need, 0)
    elif tail == 0:
        if nd.cap - nd.off - nd.used < need:
            if nd.cap - nd.used >= need:
                memmove(nd.buf, nd.buf + nd.off, nd.used)
                nd.off = 0
            else:
                _ql_grow(nd, need, rel)
    elif nd.cap - nd.off - nd.used >= need and (tail <= rel or nd.off < need):
        memmove(nd.buf + pos + need, nd.buf + pos, tail)
    elif nd.off >= need:
        memmove(nd.buf + nd.off - need, nd.buf + nd.off, rel)
        nd.off -= need
    elif nd.cap - nd.used >= need:
        # room in all but on neither side alone: the front part to the start
        memmove(nd.buf, nd.buf + nd.off, rel)
        memmove(nd.buf + rel + need, nd.buf + pos, tail)
        nd.off = 0
    else:
        _ql_grow(nd, need, rel)
    nd.used += need
    return nd.off + rel


cdef inline void _ql_cut(_qlnode *nd, Py_ssize_t pos, Py_ssize_t esz) noexcept nogil:
    # remove the esz bytes at buffer offset pos
    cdef Py_ssize_t rel = pos - nd.off, tail = nd.used - rel - esz
    if rel < tail:
        memmove(nd.buf + nd.off + esz, nd.buf + nd.off, rel)
        nd.off += esz
    else:
        memmove(nd.buf + pos, nd.buf + pos + esz, tail)
    nd.used -= esz


cdef Py_ssize_t _ql_entry(_qlnode *nd, Py_ssize_t j) noexcept nogil:
    # buffer offset of entry j of nd
    cdef Py_ssize_t p, k
    if j <= nd.count >> 1:
        p = nd.off
        for k in range(j):
            p += _ql_esz(_ql_fwd(nd.buf + p))
        return p
    p = nd.off + nd.used
    for k in range(nd.count - j):
        p -= _ql_esz(_ql_back(nd.buf + p))
    return p


cdef class QuickList:
    """The list value (see the section comment): the deque methods the
    server uses, plus range/bulk_range/popn/nbytes."""


    def __cinit__(self, *args, **kw):
        self.nodes = NULL
        self.head = self.nlen = self.ncap = self.size = 0
        self.version = 0
        self.quick = False
        self.lpb = 0

    def __init__(self, items=()):
        if self.size:
            self.clear()
        self.quick = False
        self.extend(items)

    def __dealloc__(self):
        self._free_nodes()
        PyMem_Free(self.nodes)
        self.nodes = NULL

    cdef void _free_nodes(self) noexcept:
        cdef Py_ssize_t k
        for k in range(self.head, self.head + self.nlen):
            PyMem_Free(self.nodes[k].buf)
        self.nlen = 0
        self.head = self.ncap >> 1
        self.size = 0
        self.lpb = 0

    # -- the node array -----------------------------------------------------
    cdef int _relayout(self) except -1:
        # free slots on both sides of the node array: re-centred in place
        # while at most half full, else twice as big
        cdef Py_ssize_t newcap = self.ncap, newhead
        cdef _qlnode *arr
        if (self.nlen + 1) * 2 > newcap:
            newcap = newcap * 2 if newcap >= 4 else 4
        newhead = (newcap - self.nlen) >> 1
        if newcap == self.ncap:
            memmove(self.nodes + newhead, self.nodes + self.head, self.nlen * sizeof(_qlnode))
        else:
            arr = <_qlnode *>PyMem_Malloc(newcap * sizeof(_qlnode))
            if arr == NULL:
                raise MemoryError()
            if self.nodes != NULL:
                memcpy(arr + newhead, self.nodes + self.head, self.nlen * sizeof(_qlnode))
                PyMem_Free(self.nodes)
            self.nodes = arr
            self.ncap = newcap
        self.head = newhead
        return 0

    cdef _qlnode *_new_node(self, Py_ssize_t k) except NULL:
        # a new empty node at position k (0..nlen); pointers into the node
        # array are invalid after this
        cdef _qlnode *arr
        cdef bint front_ok = self.head > 0, back_ok = self.head + self.nlen < self.ncap
        if (k == 0 and not front_ok) or (k == self.nlen and not back_ok) or not (front_ok or back_ok):
            self._relayout()
            front_ok = self.head > 0
            back_ok = self.head + self.nlen < self.ncap
        if k == 0 and front_ok:
            self.head -= 1
        elif k == self.nlen and back_ok:
            pass
        elif back_ok and (k >= self.nlen >> 1 or not front_ok):
            memmove(self.nodes + self.head + k + 1, self.nodes + self.head + k,
                    (self.nlen - k) * sizeof(_qlnode))
        else:
            memmove(self.nodes + self.head - 1, self.nodes + self.head, k * sizeof(_qlnode))
            self.head -= 1
        self.nlen += 1
        arr = self.nodes + self.head + k
        arr.buf = NULL
        arr.cap = arr.off = arr.used = arr.count = 0
        return arr

    cdef void _drop_node(self, Py_ssize_t k) noexcept:
        PyMem_Free(self.nodes[self.head + k].buf)
        if k < self.nlen >> 1:
            memmove(self.nodes + self.head + 1, self.nodes + self.head, k * sizeof(_qlnode))
            self.head += 1
        else:
            memmove(self.nodes + self.head + k, self.nodes + self.head + k + 1,
                    (self.nlen - k - 1) * sizeof(_qlnode))
        self.nlen -= 1
        if self.nlen == 0:
            self.head = self.ncap >> 1

    cdef Py_ssize_t _locate(self, Py_ssize_t i, Py_ssize_t *j) noexcept:
        # the node (relative index) of element i (0 <= i < size); j: its
        # index in that node
        cdef Py_ssize_t k, base
        cdef _qlnode *nd = self.nodes + self.head
        if i < self.size >> 1:
            k = 0
            while i >= nd[k].count:
                i -= nd[k].count
                k += 1
            j[0] = i
            return k
        k = self.nlen - 1
        base = self.size - nd[k].count
        while i < base:
            k -= 1
            base -= nd[k].count
        j[0] = i - base
        return k

    # -- pushes and pops ----------------------------------------------------
    cdef int _push(self, x, bint front) except -1:
        cdef bytes b = _ql_bytes(x)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(b), need = _ql_esz(n)
        cdef _qlnode *nd
        if self.nlen:
            nd = self.nodes + self.head + (0 if front else self.nlen - 1)
            if nd.used + need > _QL_NODE:
                nd = self._new_node(0 if front else self.nlen)
        else:
            nd = self._new_node(0)
        if front:
            if nd.off < need:
                _ql_gap(nd, nd.off, need)
            else:
                nd.off -= need
                nd.used += need
            _ql_put(nd.buf + nd.off, PyBytes_AS_STRING(b), n)
        else:
            if nd.cap - nd.off - nd.used < need:
                _ql_gap(nd, nd.off + nd.used, need)
            else:
                nd.used += need
            _ql_put(nd.buf + nd.off + nd.used - need, PyBytes_AS_STRING(b), n)
        nd.count += 1
        self.size += 1
        self.lpb += _lp_entry_size(PyBytes_AS_STRING(b), n)
        self.version += 1
        return 0

    cdef bytes _pop(self, bint front):
        cdef _qlnode *nd
        cdef Py_ssize_t n, e
        cdef bytes r
        if not self.size:
            raise IndexError("pop from an empty deque")
        if front:
            nd = self.nodes + self.head
            n = _ql_fwd(nd.buf + nd.off)
            r = PyBytes_FromStringAndSize(nd.buf + nd.off + _ql_hdr(n), n)
            nd.off += _ql_esz(n)
        else:
            nd = self.nodes + self.head + self.nlen - 1
            e = nd.off + nd.used
            n = _ql_back(nd.buf + e)
            r = PyBytes_FromStringAndSize(nd.buf + e - n - _ql_hdr(n), n)
        self.lpb -= _lp_entry_size(PyBytes_AS_STRING(r), n)
        nd.used -= _ql_esz(n)
        nd.count -= 1
        self.size -= 1
        self.version += 1
        if not nd.count:
            self._drop_node(0 if front else self.nlen - 1)
        return r

    cdef bytes _pop_bulk(self, bint front):
        # _pop's element as a RESP bulk reply, written from the node (the
        # list is not empty)
        cdef _qlnode *nd
        cdef Py_ssize_t n, e
        cdef const char *src
        if front:
            nd = self.nodes + self.head
            n = _ql_fwd(nd.buf + nd.off)
            src = nd.buf + nd.off + _ql_hdr(n)
        else:
            nd = self.nodes + self.head + self.nlen - 1
            e = nd.off + nd.used
            n = _ql_back(nd.buf + e)
            src = nd.buf + e - n - _ql_hdr(n)
        r = PyBytes_FromStringAndSize(NULL, n + 5 + _ndigits(n))
        cdef char *p = _put_len(PyBytes_AS_STRING(r), 36, n)
        memcpy(p, src, n)
        p[n] = 13
        p[n + 1] = 10
        self.lpb -= _lp_entry_size(src, n)
        if front:
            nd.off += _ql_esz(n)
        nd.used -= _ql_esz(n)
        nd.count -= 1
        self.size -= 1
        self.version += 1
        if not nd.count:
            self._drop_node(0 if front else self.nlen - 1)
        return r

    def append(self, x):
        self._push(x, False)

    def appendleft(self, x):
        self._push(x, True)

    def pop(self):
        return self._pop(False)

    def popleft(self):
        return self._pop(True)

    def extend(self, items):
        if items is self:
            items = list(items)
        if type(items) is list or type(items) is tuple:
            for x in items:
                self._push(x, False)
        else:
            for x in items:
                self._push(x, False)

    def extendleft(self, items):
        if items is self:
            items = list(items)
        for x in items:
            self._push(x, True)

    def popn(self, Py_ssize_t count, bint left):
        """Pop up to count elements from one end, in popping order."""
        cdef list out = []
        if count > self.size:
            count = self.size
        while count > 0:
            out.append(self._pop(left))
            count -= 1
        return out

    def clear(self):
        self._free_nodes()
        self.version += 1

    # -- indexing -------------------------------------------------------------
    cdef Py_ssize_t _norm(self, Py_ssize_t i) except -1:
        if i < 0:
            i += self.size
        if i < 0 or i >= self.size:
            raise IndexError("deque index out of range")
        return i

    def __len__(self):
        return self.size

    def __getitem__(self, Py_ssize_t i):
        cdef Py_ssize_t j, p, n
        i = self._norm(i)
        cdef _qlnode *nd = self.nodes + self.head + self._locate(i, &j)
        p = _ql_entry(nd, j)
        n = _ql_fwd(nd.buf + p)
        return PyBytes_FromStringAndSize(nd.buf + p + _ql_hdr(n), n)

    cdef void _delete(self, Py_ssize_t i) noexcept:
        cdef Py_ssize_t j, k, p
        k = self._locate(i, &j)
        cdef _qlnode *nd = self.nodes + self.head + k
        p = _ql_entry(nd, j)
        cdef Py_ssize_t n = _ql_fwd(nd.buf + p)
        self.lpb -= _lp_entry_size(nd.buf + p + _ql_hdr(n), n)
        _ql_cut(nd, p, _ql_esz(n))
        nd.count -= 1
        self.size -= 1
        self.version += 1
        if not nd.count:
            self._drop_node(k)

    cdef int _insert(self, Py_ssize_t i, bytes b) except -1:
        # b becomes element i (0 < i < size)
        cdef Py_ssize_t j, k, p, n = PyBytes_GET_SIZE(b), need = _ql_esz(n), rel
        cdef _qlnode *nd
        cdef _qlnode *nx
        k = self._locate(i, &j)
        nd = self.nodes + self.head + k
        if j == 0 and k > 0 and (nd - 1).used + need <= _QL_NODE:
            # at the end of the previous node
            k -= 1
            nd = self.nodes + self.head + k
            j = nd.count
            p = nd.off + nd.used
        else:
            p = _ql_entry(nd, j)
        if nd.used + need > _QL_NODE:
            # split nd before entry j: the entries from j on go to a new node
            rel = p - nd.off
            nx = self._new_node(k + 1)
            nd = self.nodes + self.head + k
            if j == 0:
                # nothing before: the new element gets a node of its own, before nd
                nx[0] = nd[0]
                nd.buf = NULL
                nd.cap = nd.off = nd.used = nd.count = 0
                p = 0
            else:
                nx.cap = nd.used - rel
                if nx.cap < _QL_MINCAP:
                    nx.cap = _QL_MINCAP
                nx.buf = <char *>PyMem_Malloc(nx.cap)
                if nx.buf == NULL:
                    nx.cap = 0
                    self._drop_node(k + 1)
                    raise MemoryError()
                nx.off = 0
                nx.used = nd.used - rel
                nx.count = nd.count - j
                memcpy(nx.buf, nd.buf + p, nx.used)
                nd.used = rel
                nd.count = j
                if nd.used + need > _QL_NODE:
                    # no room left in nd: a node of its own between the two
                    nd = self._new_node(k + 1)
                p = nd.off + nd.used
        p = _ql_gap(nd, p, need)
        _ql_put(nd.buf + p, PyBytes_AS_STRING(b), n)
        nd.count += 1
        self.size += 1
        self.lpb += _lp_entry_size(PyBytes_AS_STRING(b), n)
        self.version += 1
        return 0

    def __setitem__(self, Py_ssize_t i, x):
        cdef bytes b = _ql_bytes(x)
        cdef Py_ssize_t j, k, p, n = PyBytes_GET_SIZE(b), old
        i = self._norm(i)
        k = self._locate(i, &j)
        cdef _qlnode *nd = self.nodes + self.head + k
        p = _ql_entry(nd, j)
        old = _ql_fwd(nd.buf + p)
        cdef Py_ssize_t grow = _lp_entry_size(PyBytes_AS_STRING(b), n) - _lp_entry_size(nd.buf + p + _ql_hdr(old), old)
        old = _ql_esz(old)
        if old == _ql_esz(n):
            _ql_put(nd.buf + p, PyBytes_AS_STRING(b), n)
            self.lpb += grow
            self.version += 1
            return
        if nd.count == 1:
            _ql_cut(nd, p, old)
            p = _ql_gap(nd, nd.off, _ql_esz(n))
            _ql_put(nd.buf + p, PyBytes_AS_STRING(b), n)
            self.lpb += grow
            self.version += 1
            return
        self._delete(i)
        if i == 0:
            self._push(b, True)
        elif i == self.size:
            self._push(b, False)
        else:
            self._insert(i, b)

    def __delitem__(self, Py_ssize_t i):
        self._delete(self._norm(i))

    def insert(self, Py_ssize_t i, x):
        cdef bytes b = _ql_bytes(x)
        if i < 0:
            i += self.size
            if i < 0:
                i = 0
        if i >= self.size:
            self._push(b, False)
        elif i == 0:
            self._push(b, True)
        else:
            self._insert(i, b)

    # -- searches -------------------------------------------------------------
    cdef Py_ssize_t _find(self, x, Py_ssize_t start, Py_ssize_t stop, bint count) except -2:
        # the index of the first x in [start, stop), or -1; with count: the
        # number of matches
        cdef bytes b
        cdef const char *s
        cdef Py_ssize_t ln, i, j, k, p, n, hits = 0
        cdef _qlnode *nd
        if not _ql_bytes_like(x):
            return 0 if count else -1
        b = _ql_bytes(x)
        s = PyBytes_AS_STRING(b)
        ln = PyBytes_GET_SIZE(b)
        if start < 0:
            start = 0
        if stop > self.size:
            stop = self.size
        if start >= stop:
            return 0 if count else -1
        k = self._locate(start, &j)
        nd = self.nodes + self.head + k
        p = _ql_entry(nd, j)
        i = start
        while i < stop:
            if j == nd.count:
                k += 1
                nd = self.nodes + self.head + k
                j = 0
                p = nd.off
            n = _ql_fwd(nd.buf + p)
            if n == ln and memcmp(nd.buf + p + _ql_hdr(n), s, n) == 0:
                if not count:
                    return i
                hits += 1
            p += _ql_esz(n)
            j += 1
            i += 1
        return hits if count else -1

    def count(self, x):
        return self._find(x, 0, self.size, True)

    def index(self, x, Py_ssize_t start=0, Py_ssize_t stop=PY_SSIZE_T_MAX):
        if start < 0:
            start += self.size
        if stop < 0:
            stop += self.size
        cdef Py_ssize_t i = self._find(x, start, stop, False)
        if i < 0:
            raise ValueError("%r is not in deque" % (x,))
        return i

    def remove(self, x):
        cdef Py_ssize_t i = self._find(x, 0, self.size, False)
        if i < 0:
            raise ValueError("deque.remove(x): x not in deque")
        self._delete(i)

    def __contains__(self, x):
        return self._find(x, 0, self.size, False) >= 0

    def rotate(self, Py_ssize_t n=1):
        cdef Py_ssize_t m = self.size
        if m <= 1:
            return
        n %= m
        if n > m >> 1:
            for _ in range(m - n):
                self._push(self._pop(True), False)
        else:
            for _ in range(n):
                self._push(self._pop(False), True)

    # -- ranges ---------------------------------------------------------------
    cdef bint _span(self, Py_ssize_t *start, Py_ssize_t *end) noexcept:
        # LRANGE's index rules; False when the range is empty
        cdef Py_ssize_t s = start[0], e = end[0], llen = self.size
        if s < 0:
            s += llen
        if e < 0:
            e += llen
        if s < 0:
            s = 0
        if s > e or s >= llen:
            return False
        if e >= llen:
            e = llen - 1
        start[0] = s
        end[0] = e
        return True

    def range(self, Py_ssize_t start, Py_ssize_t end):
        """Elements start..end (inclusive, Redis's index rules) as a list."""
        cdef list out = []
        cdef Py_ssize_t j, k, p, n, m
        cdef _qlnode *nd
        if not self._span(&start, &end):
            return out
        k = self._locate(start, &j)
        nd = self.nodes + self.head + k
        p = _ql_entry(nd, j)
        for m in range(end - start + 1):
            if j == nd.count:
                nd += 1
                j = 0
                p = nd.off
            n = _ql_fwd(nd.buf + p)
            out.append(PyBytes_FromStringAndSize(nd.buf + p + _ql_hdr(n), n))
            p += _ql_esz(n)
            j += 1
        return out

    def bulk_range(self, Py_ssize_t start, Py_ssize_t end):
        """LRANGE's reply: the RESP array of elements start..end, written
        straight from the nodes (bulk_items(self.range(start, end)))."""
        return self._bulk_range(start, end)

    cdef bytes _bulk_range(self, Py_ssize_t start, Py_ssize_t end):
        cdef Py_ssize_t j, k, p, n, m, total, cnt, j0, p0, i
        cdef _qlnode *nd
        cdef _qlnode *nd0
        cdef char *o
        cdef const char *src
        if not self._span(&start, &end):
            return b"*0\r\n"
        cnt = end - start + 1
        k = self._locate(start, &j)
        nd = nd0 = self.nodes + self.head + k
        p = p0 = _ql_entry(nd, j)
        j0 = j
        total = 3 + _ndigits(cnt)
        for m in range(cnt):
            if j == nd.count:
                nd += 1
                j = 0
                p = nd.off
            n = _ql_fwd(nd.buf + p)
            total += n + 5 + _ndigits(n)
            p += _ql_esz(n)
            j += 1
        out = PyBytes_FromStringAndSize(NULL, total)
        o = _put_len(PyBytes_AS_STRING(out), 42, cnt)
        nd = nd0
        p = p0
        j = j0
        for m in range(cnt):
            if j == nd.count:
                nd += 1
                j = 0
                p = nd.off
            n = _ql_fwd(nd.buf + p)
            o = _put_len(o, 36, n)
            src = nd.buf + p + _ql_hdr(n)
            if n <= 16:
                # short elements (redis-benchmark's are 3 bytes): no call
                for i in range(n):
                    o[i] = src[i]
            else:
                memcpy(o, src, n)
            o[n] = 13
            o[n + 1] = 10
            o += n + 2
            p += _ql_esz(n)
            j += 1
        return out

    def nbytes(self):
        """Bytes held: the object, the node array and the node buffers."""
        cdef Py_ssize_t t = 64 + self.ncap * sizeof(_qlnode), k
        for k in range(self.head, self.head + self.nlen):
            t += self.nodes[k].cap + 16
        return t

    # -- iteration, copies, comparison ----------------------------------------
    def __iter__(self):
        return _QuickListIter(self, False)

    def __reversed__(self):
        return _QuickListIter(self, True)

    def copy(self):
        cdef QuickList n = QuickList.__new__(QuickList)
        cdef Py_ssize_t k
        cdef _qlnode *src
        cdef _qlnode *dst
        n.quick = self.quick
        n.lpb = self.lpb
        if not self.nlen:
            return n
        n.nodes = <_qlnode *>PyMem_Malloc(self.nlen * sizeof(_qlnode))
        if n.nodes == NULL:
            raise MemoryError()
        n.ncap = self.nlen
        n.head = 0
        for k in range(self.nlen):
            src = self.nodes + self.head + k
            dst = n.nodes + k
            dst.buf = <char *>PyMem_Malloc(src.used)
            if dst.buf == NULL:
                raise MemoryError()
            memcpy(dst.buf, src.buf + src.off, src.used)
            dst.cap = dst.used = src.used
            dst.off = 0
            dst.count = src.count
            n.nlen = k + 1
            n.size += src.count
        return n

    def __copy__(self):
        return self.copy()

    def __richcmp__(self, other, int op):
        if op != 2 and op != 3:
            return NotImplemented
        if type(other) is not QuickList:
            return NotImplemented
        eq = len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return eq if op == 2 else not eq

    def __repr__(self):
        return "ListValue(%r)" % (list(self),)

    def __reduce__(self):
        return (QuickList, (list(self),))


cdef class _QuickListIter:
    cdef QuickList ql
    cdef Py_ssize_t k, j, p      # node (relative), entry in it, buffer offset
    cdef Py_ssize_t left
    cdef unsigned long long version
    cdef bint rev

    def __cinit__(self, QuickList ql, bint rev):
        self.ql = ql
        self.rev = rev
        self.left = ql.size
        self.version = ql.version
        self.j = 0
        if rev:
            self.k = ql.nlen - 1
            if ql.nlen:
                self.p = ql.nodes[ql.head + self.k].off + ql.nodes[ql.head + self.k].used
        else:
            self.k = 0
            if ql.nlen:
                self.p = ql.nodes[ql.head].off

    def __iter__(self):
        return self

    def __length_hint__(self):
        return self.left

    def __next__(self):
        cdef QuickList ql = self.ql
        cdef _qlnode *nd
        cdef Py_ssize_t n
        if ql.version != self.version:
            self.left = 0
            raise RuntimeError("deque mutated during iteration")
        if self.left <= 0:
            raise StopIteration
        nd = ql.nodes + ql.head + self.k
        if self.j == nd.count:
            if self.rev:
                self.k -= 1
                nd -= 1
                self.p = nd.off + nd.used
            else:
                self.k += 1
                nd += 1
                self.p = nd.off
            self.j = 0
        self.j += 1
        self.left -= 1
        if self.rev:
            n = _ql_back(nd.buf + self.p)
            self.p -= _ql_esz(n)
            return PyBytes_FromStringAndSize(nd.buf + self.p + _ql_hdr(n), n)
        n = _ql_fwd(nd.buf + self.p)
        r = PyBytes_FromStringAndSize(nd.buf + self.p + _ql_hdr(n), n)
        self.p += _ql_esz(n)
        return r


