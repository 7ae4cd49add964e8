# The C declarations of types/_quicklist.pyx that other compiled modules use
# (the command bodies call QuickList's C methods; the RDB writer reads its
# nodes' entries).
from libc.string cimport memcpy

from ophidis.persistence._listpack cimport _lp_entry_size

ctypedef struct _qlnode:
    char *buf
    Py_ssize_t cap      # allocated bytes
    Py_ssize_t off      # first byte of data
    Py_ssize_t used     # bytes of data
    Py_ssize_t count    # entries


cdef inline Py_ssize_t _ql_esz(Py_ssize_t n) noexcept nogil:
    return n + 2 if n < 128 else n + 18


cdef inline Py_ssize_t _ql_hdr(Py_ssize_t n) noexcept nogil:
    return 1 if n < 128 else 9


cdef inline Py_ssize_t _ql_fwd(const char *p) noexcept nogil:
    # length of the element whose entry starts at p
    cdef Py_ssize_t n
    cdef unsigned char b = <unsigned char>p[0]
    if b < 128:
        return b
    memcpy(&n, p + 1, 8)
    return n


cdef class QuickList:
    cdef _qlnode *nodes
    cdef Py_ssize_t head, nlen, ncap     # nodes[head:head + nlen] are in use
    cdef Py_ssize_t size
    cdef unsigned long long version
    cdef public bint quick          # the encoding: False listpack, True quicklist
    cdef readonly Py_ssize_t lpb    # the entries' listpack bytes (_lp_entry_size)

    cdef void _free_nodes(self) noexcept
    cdef int _relayout(self) except -1
    cdef _qlnode *_new_node(self, Py_ssize_t k) except NULL
    cdef void _drop_node(self, Py_ssize_t k) noexcept
    cdef Py_ssize_t _locate(self, Py_ssize_t i, Py_ssize_t *j) noexcept
    cdef int _push(self, x, bint front) except -1
    cdef bytes _pop(self, bint front)
    cdef bytes _pop_bulk(self, bint front)
    cdef Py_ssize_t _norm(self, Py_ssize_t i) except -1
    cdef void _delete(self, Py_ssize_t i) noexcept
    cdef int _insert(self, Py_ssize_t i, bytes b) except -1
    cdef Py_ssize_t _find(self, x, Py_ssize_t start, Py_ssize_t stop, bint count) except -2
    cdef bint _span(self, Py_ssize_t *start, Py_ssize_t *end) noexcept
    cdef bytes _bulk_range(self, Py_ssize_t start, Py_ssize_t end)
