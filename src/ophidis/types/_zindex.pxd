# The C declarations of types/_zindex.pyx that other compiled modules use:
# the sorted set's ordered index, as the compiled ZADD/ZPOPMIN bodies
# (commands/_bodies.pyx) edit it without a Python call.
from cpython.object cimport PyObject

ctypedef struct ZEnt:
    double score
    PyObject *member            # a bytes object (a strong reference)

ctypedef struct ZBlock:
    ZEnt *e                     # n entries in order, room for cap
    Py_ssize_t n
    Py_ssize_t cap


cdef class ZIndex:
    cdef ZBlock *blk            # nblk blocks in order, none empty, room for cblk
    cdef Py_ssize_t nblk
    cdef Py_ssize_t cblk
    cdef Py_ssize_t length
    cdef Py_ssize_t *fw         # Fenwick tree of the blocks' sizes (1-based), NULL: to build
    cdef Py_ssize_t version     # bumped by every change (iterators check it)

    cdef void _release(self) noexcept
    cdef int _insert_blocks(self, Py_ssize_t k, Py_ssize_t count) except -1
    cdef void _drop_block(self, Py_ssize_t k) noexcept
    cdef void _drop_fw(self) noexcept
    cdef int _split(self, Py_ssize_t k) except -1
    cdef int _shrunk(self, Py_ssize_t k) except -1
    cdef Py_ssize_t *_fenwick(self) except NULL
    cdef void _bump(self, Py_ssize_t k, Py_ssize_t delta) noexcept
    cdef int _loc(self, Py_ssize_t idx, Py_ssize_t *kk, Py_ssize_t *ii) except -1
    cdef Py_ssize_t _pos(self, Py_ssize_t k, Py_ssize_t i) except -1
    cdef Py_ssize_t _block_of(self, double s, const char *mp, Py_ssize_t mn, int mode) noexcept
    cdef Py_ssize_t _search(self, double s, object m, int mode) except -1
    cdef int _remove_at(self, Py_ssize_t k, Py_ssize_t i) except -1
    cdef int _build(self, list pairs) except -1

    cdef int add_(self, double s, bytes m) except -1
    cdef int remove_(self, double s, bytes m) except -1     # 1: removed, 0: not there
    cdef object pop_(self, Py_ssize_t idx)                  # the (score, member) of position idx
