# The keyspace table (keyspace/_keyspace.pyx): a database's key -> value
# map in compiled installs, with each key's bytes inside its entry.
from cpython.ref cimport PyObject
from libc.stdint cimport uint32_t, int32_t
from libc.string cimport memcmp

cdef extern from *:
    """
    /* one pymalloc block per key: the value (a reference), the low 32 bits
       of the key's bytes hash, the key's length and its bytes (no NUL) */
    typedef struct {
        PyObject *value;
        uint32_t hash;
        uint32_t klen;
        char key[];
    } KsEntry;
    """
    ctypedef struct KsEntry:
        PyObject *value
        uint32_t hash
        uint32_t klen
        char key[1]
    # a bytes object's hash (never fails, cached by the object), data, size
    Py_ssize_t _ks_bhash "PyObject_Hash"(object o) noexcept
    const char *_ks_data "PyBytes_AS_STRING"(object o) noexcept
    Py_ssize_t _ks_size "PyBytes_GET_SIZE"(object o) noexcept


cdef class Keyspace:
    # index: (mask + 1) 4-byte slots, -1 empty, -2 a deleted key's, else a
    # position in ents; ents: the entries in insertion order (NULL: a hole),
    # n of them used, room for cap; used: the keys; gen: bumped when the
    # positions move (a resize packs the holes away, clear)
    cdef int32_t *index
    cdef KsEntry **ents
    cdef Py_ssize_t mask, n, cap, used, gen, kbytes


cdef int _ks_set(Keyspace t, bytes key, object value) except -1
cdef object _ks_pop(Keyspace t, bytes key)     # the value removed, or None (no such key)


cdef inline Py_ssize_t _ks_slot(Keyspace t, const char *k, Py_ssize_t kn, uint32_t h) noexcept:
    # the index slot holding the key, or -1 (probed as dict probes, from
    # the 32-bit hash)
    cdef size_t mask = <size_t>t.mask, i = h & mask, perturb = h
    cdef int32_t ix
    cdef KsEntry *e
    while True:
        ix = t.index[i]
        if ix >= 0:
            e = t.ents[ix]
            if e.hash == h and e.klen == kn and memcmp(e.key, k, kn) == 0:
                return <Py_ssize_t>i
        elif ix == -1:
            return -1
        perturb >>= 5
        i = (i * 5 + perturb + 1) & mask


cdef inline PyObject *_ks_get(Keyspace t, bytes key) noexcept:
    # the value of key (a borrowed reference) or NULL
    cdef Py_ssize_t s = _ks_slot(t, _ks_data(key), _ks_size(key), <uint32_t>_ks_bhash(key))
    if s < 0:
        return NULL
    return t.ents[t.index[s]].value


cdef inline bint _ks_next(Keyspace t, Py_ssize_t *pos, KsEntry **e) noexcept:
    # the entry at *pos or after it (*pos moved past it); False at the end
    cdef Py_ssize_t i = pos[0]
    cdef KsEntry *x
    while i < t.n:
        x = t.ents[i]
        i += 1
        if x != NULL:
            pos[0] = i
            e[0] = x
            return True
    pos[0] = i
    return False

