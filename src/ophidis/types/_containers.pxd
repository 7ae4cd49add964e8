# The C declarations of types/_containers.pyx that other compiled modules
# use: the sets' and hashes' C fields, a hash's entries (HashPair: a field
# and its value in one object) and the table that holds them (OphTab), as
# the request loop's bodies and the RDB writer read them.
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_GET_SIZE
from cpython.object cimport PyObject, PyTypeObject, PyObject_Hash
from libc.stdint cimport int32_t

cdef extern from *:
    """
    #include <stdint.h>
    typedef struct {
        PyObject_VAR_HEAD          /* ob_size: room for data, in bytes */
        Py_hash_t hash;            /* hash(field), as the bytes object's */
        uint32_t flen;
        uint32_t vlen;
        char data[];               /* the field, then the value */
    } OphPair;

    #define OPH_PAIR_HDR ((Py_ssize_t)offsetof(OphPair, data))
    #define OPH_PF(o) ((const char *)((OphPair *)(o))->data)
    #define OPH_PFN(o) ((Py_ssize_t)((OphPair *)(o))->flen)
    #define OPH_PV(o) ((const char *)((OphPair *)(o))->data + ((OphPair *)(o))->flen)
    #define OPH_PVN(o) ((Py_ssize_t)((OphPair *)(o))->vlen)
    #define OPH_PHASH(o) (((OphPair *)(o))->hash)

    /* A hash's table (HashCore.tab): its pairs in insertion order (``ent``,
       NULL where one was deleted) and an open-addressing index of them
       (``idx``: mask + 1 slots, each OPH_EMPTY, OPH_GONE or a position in
       ent; probed as CPython's dict probes).  At most 2/3 of the slots are
       ever used (``nent`` <= its room), so a probe always meets an empty
       slot.  The layout of CPython's dict without the hash and the value
       of each entry: a pair carries its hash, and is key and value. */
    typedef struct {
        PyObject **ent;
        int32_t *idx;
        Py_ssize_t used;        /* live pairs */
        Py_ssize_t nent;        /* positions of ent in use (live and deleted) */
        Py_ssize_t mask;        /* slots - 1; -1: no table yet */
    } OphTab;

    #define OPH_EMPTY (-1)
    #define OPH_GONE (-2)

    /* the next slot of a probe (CPython's dict's order); every probe of
       an OphTab goes through it */
    #define OPH_PROBE_NEXT(i, perturb, mask) do { (perturb) >>= 5; (i) = ((i) * 5 + (perturb) + 1) & (mask); } while (0)

    /* A zset's member -> score map (ZDict.tab, ZDict.sc) is the same table
       with bytes objects as its entries (their hash: PyObject_Hash, which
       a bytes object caches) and their scores as doubles in ``sc``,
       parallel to ent. */

    /* the slot of the index whose entry p has match(p, ...) (hash h), or
       -1: the probe loop of every find (inlined into each with its match,
       a constant) */
    typedef int (*oph_match)(PyObject *p, PyObject *key, const char *k, Py_ssize_t kn, Py_hash_t h);
    static inline Py_ssize_t oph_find(const OphTab *t, oph_match match, PyObject *key, const char *k, Py_ssize_t kn, Py_hash_t h) {
        size_t mask, i, perturb;
        int32_t ix;
        if (t->mask < 0)
            return -1;
        mask = (size_t)t->mask;
        perturb = (size_t)h;
        i = (size_t)h & mask;
        for (;;) {
            ix = t->idx[i];
            if (ix == OPH_EMPTY)
                return -1;
            if (ix >= 0 && match(t->ent[ix], key, k, kn, h))
                return (Py_ssize_t)i;
            OPH_PROBE_NEXT(i, perturb, mask);
        }
    }

    /* a zset's or set's member (a bytes object) is key, or k[:kn] */
    static inline int oph_bytes_match(PyObject *p, PyObject *key, const char *k, Py_ssize_t kn, Py_hash_t h) {
        return p == key || (PyBytes_GET_SIZE(p) == kn && (kn == 0 || memcmp(PyBytes_AS_STRING(p), k, kn) == 0));
    }

    /* a hash's pair has the field k[:kn] (hash h) */
    static inline int oph_pair_match(PyObject *p, PyObject *key, const char *k, Py_ssize_t kn, Py_hash_t h) {
        return OPH_PHASH(p) == h && OPH_PFN(p) == kn && (kn == 0 || memcmp(OPH_PF(p), k, kn) == 0);
    }

    /* the slot of the index that holds member k[:kn] (bytes object key, hash h), or -1 */
    static inline Py_ssize_t oph_ztab_find(const OphTab *t, PyObject *key, const char *k, Py_ssize_t kn, Py_hash_t h) {
        return oph_find(t, oph_bytes_match, key, k, kn, h);
    }

    /* the slot of the index that holds field f[:fn] (hash h), or -1 */
    static Py_ssize_t oph_tab_find(const OphTab *t, const char *f, Py_ssize_t fn, Py_hash_t h) {
        return oph_find(t, oph_pair_match, NULL, f, fn, h);
    }

    /* the next live pair from position *pos (borrowed), 0 at the end */
    static int oph_tab_next(const OphTab *t, Py_ssize_t *pos, PyObject **p) {
        Py_ssize_t i = *pos;
        while (i < t->nent) {
            if (t->ent[i] != NULL) {
                *p = t->ent[i];
                *pos = i + 1;
                return 1;
            }
            i++;
        }
        *pos = i;
        return 0;
    }

    /* the value of pair p becomes v[:vn] if it has the room (1), else 0 */
    static int oph_pair_setv(PyObject *p, const char *v, Py_ssize_t vn) {
        OphPair *q = (OphPair *)p;
        if ((size_t)vn > UINT32_MAX || (Py_ssize_t)q->flen + vn > Py_SIZE(p))
            return 0;
        if (vn)
            memmove(q->data + q->flen, v, vn);
        q->vlen = (uint32_t)vn;
        return 1;
    }
    """
    const char *_hp_f "OPH_PF"(PyObject *o) noexcept
    Py_ssize_t _hp_fn "OPH_PFN"(PyObject *o) noexcept
    const char *_hp_v "OPH_PV"(PyObject *o) noexcept
    Py_ssize_t _hp_vn "OPH_PVN"(PyObject *o) noexcept
    Py_hash_t _hp_hash "OPH_PHASH"(PyObject *o) noexcept
    bint _hp_setv "oph_pair_setv"(PyObject *p, const char *v, Py_ssize_t vn) noexcept
    Py_ssize_t _hp_refcnt "Py_REFCNT"(PyObject *o) noexcept
    Py_ssize_t _HP_HDR "OPH_PAIR_HDR"

    ctypedef struct OphTab:
        PyObject **ent
        int32_t *idx
        Py_ssize_t used
        Py_ssize_t nent
        Py_ssize_t mask
    Py_ssize_t _tab_find "oph_tab_find"(const OphTab *t, const char *f, Py_ssize_t fn, Py_hash_t h) noexcept
    bint _tab_next "oph_tab_next"(const OphTab *t, Py_ssize_t *pos, PyObject **p) noexcept
    Py_ssize_t _ztab_find "oph_ztab_find"(const OphTab *t, PyObject *key, const char *k, Py_ssize_t kn, Py_hash_t h) noexcept


cdef PyTypeObject *PAIR_TYPE     # HashPair's type


cdef inline bint _hp_is(PyObject *o) noexcept:
    return <PyTypeObject *>o.ob_type == PAIR_TYPE


cdef class SetCore:
    # a set of bytes (types.containers.SetValue in compiled installs): NOT a
    # set subclass (CPython's set algebra would read a subclass's own, empty,
    # storage); its members (bytes objects) in tab, as ZDict's
    cdef public object enc, _aux
    cdef OphTab tab             # (compiled only)


# adds member m (bytes): 1, or 0 when it was there
cdef int _sc_add(SetCore s, object m) except -1
# removes member m: 1, or 0 when it was not there
cdef int _sc_discard(SetCore s, object m) except -1


cdef inline bint _sc_has(SetCore s, object m) except -1:
    # m in s (a key that is not bytes is hashed, as a set would, then not found)
    cdef Py_hash_t hv = PyObject_Hash(m)
    if not PyBytes_Check(m):
        return False
    return _ztab_find(&s.tab, <PyObject *>m, PyBytes_AS_STRING(m), PyBytes_GET_SIZE(m), hv) >= 0


cdef Py_ssize_t STAB_OFFSET     # where ``tab`` is in a SetCore instance


cdef inline const OphTab *_sc_tab(PyObject *s) noexcept:
    # the table of SetCore s, from a borrowed pointer without touching its
    # reference count (the RDB writer in a forked child: as _hc_tab)
    return <const OphTab *>(<char *>s + STAB_OFFSET)


cdef class HashCore(dict):
    # ttl: None, or field -> unix ms of its expiry (hash field expiration)
    cdef public object ht, _aux, ttl
    # the fields and values, as pairs (the dict's own storage stays empty)
    cdef OphTab tab             # (compiled only)


cdef int _hc_set(HashCore h, f, v) except -1


cdef inline PyObject *_hc_lookup(HashCore h, key) except? NULL:
    # the pair of field ``key``, borrowed; NULL: none (a key that is not
    # bytes is hashed, as a dict would, then not found)
    cdef Py_hash_t hv = PyObject_Hash(key)
    if not PyBytes_Check(key):
        return NULL
    cdef Py_ssize_t i = _tab_find(&h.tab, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), hv)
    return NULL if i < 0 else h.tab.ent[h.tab.idx[i]]


cdef inline bint _hc_next(HashCore h, Py_ssize_t *pos, PyObject **p) noexcept:
    # the next pair (borrowed) from *pos, the first at 0; False at the end
    return _tab_next(&h.tab, pos, p)


cdef inline Py_ssize_t _hc_len(HashCore h) noexcept:
    return h.tab.used


cdef Py_ssize_t TAB_OFFSET      # where ``tab`` is in a HashCore instance


cdef inline const OphTab *_hc_tab(PyObject *h) noexcept:
    # the table of HashCore h, from a borrowed pointer without touching
    # its reference count (the RDB writer in a forked child: no page of
    # the parent's written, no copy-on-write)
    return <const OphTab *>(<char *>h + TAB_OFFSET)


cdef inline bint _hc_set_in_place(PyObject *old, const char *v, Py_ssize_t vn) noexcept:
    # an existing field's pair takes the value v[:vn] in place when only
    # the table holds it and it has the room; False: it does not
    return _hp_refcnt(old) <= 1 and _hp_setv(old, v, vn)


cdef class ZDict(dict):
    # a zset's member -> score map (types.zset.ZSetValue.dict in compiled
    # installs): the members (bytes) in tab, their scores in sc (parallel to
    # tab.ent); the dict's own storage stays empty
    cdef OphTab tab
    cdef double *sc


# adds member ``key`` (exact bytes, hash hv, not in z) with score s
cdef int _zd_add(ZDict z, object key, Py_hash_t hv, double s) except -1
# removes member ``key``: 1, or 0 when it is not there
cdef int _zd_discard(ZDict z, object key) except -1


cdef Py_ssize_t ZTAB_OFFSET     # where ``tab`` is in a ZDict instance
cdef Py_ssize_t ZSC_OFFSET      # where ``sc`` is


cdef inline const OphTab *_zd_tab(PyObject *z) noexcept:
    # the table of ZDict z, from a borrowed pointer without touching its
    # reference count (the RDB writer in a forked child: as _hc_tab)
    return <const OphTab *>(<char *>z + ZTAB_OFFSET)


cdef inline const double *_zd_sc(PyObject *z) noexcept:
    # the scores of ZDict z, parallel to _zd_tab(z).ent (as _zd_tab)
    return (<const double **>(<char *>z + ZSC_OFFSET))[0]
