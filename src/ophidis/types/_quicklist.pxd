# The C declarations of types/_quicklist.pyx that other compiled modules use
# (the command bodies call QuickList's C methods; the RDB writer reads its
# nodes' entries).
from libc.string cimport memcpy

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


cdef inline Py_ssize_t _lp_backlen(Py_ssize_t e) noexcept nogil:
    # listpack.py's lp_backlen_size
    if e <= 127:
        return 1
    if e < 16383:
        return 2
    if e < 2097151:
        return 3
    if e < 268435455:
        return 4
    return 5


cdef inline bint _lp_int(const unsigned char *s, Py_ssize_t n, long long *out) noexcept nogil:
    # s (n bytes, 0 < n <= 20) in canonical int64 decimal form (listpack.py's
    # canonical_int): its value in out
    cdef Py_ssize_t i = 0
    cdef bint neg = s[0] == 45
    cdef unsigned long long v = 0
    cdef unsigned char d
    if neg:
        if n == 1:
            return False
        i = 1
    if s[i] == 48:
        if n == 1:
            out[0] = 0
            return True
        return False
    while i < n:
        d = s[i] - 48
        if d > 9 or v > 1844674407370955160ULL:
            return False
        v = v * 10 + d
        i += 1
    if v > (9223372036854775808ULL if neg else 9223372036854775807ULL):
        return False
    out[0] = -<long long>(v - 1) - 1 if neg else <long long>v
    return True


cdef inline Py_ssize_t _lp_esz(const char *p, Py_ssize_t n) noexcept nogil:
    # the bytes element p (n bytes) takes as a listpack entry (listpack.py's
    # lp_entry_size, the pure twin)
    cdef const unsigned char *s = <const unsigned char *>p
    cdef long long v
    cdef Py_ssize_t e
    if 0 < n <= 20 and (48 <= s[0] <= 57 or s[0] == 45) and _lp_int(s, n, &v):
        if 0 <= v <= 127:
            return 2
        if -4096 <= v <= 4095:
            return 3
        if -32768 <= v <= 32767:
            return 4
        if -8388608 <= v <= 8388607:
            return 5
        if -2147483648 <= v <= 2147483647:
            return 6
        return 10
    e = n + (1 if n < 64 else 2 if n < 4096 else 5)
    return e + _lp_backlen(e)


cdef class QuickList:
    cdef _qlnode *nodes
    cdef Py_ssize_t head, nlen, ncap     # nodes[head:head + nlen] are in use
    cdef Py_ssize_t size
    cdef unsigned long long version
    cdef public bint quick          # the encoding: False listpack, True quicklist
    cdef readonly Py_ssize_t lpb    # the entries' listpack bytes (_lp_esz)

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
