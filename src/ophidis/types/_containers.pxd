# The C declarations of types/_containers.pyx that other compiled modules
# use: the sets' and hashes' C fields, and a hash's entries (HashPair: a
# field and its value in one object) as the request loop's bodies and the
# RDB writer read them.
from cpython.object cimport PyObject, PyTypeObject

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
    PyObject *_hp_dict_get "PyDict_GetItemWithError"(PyObject *d, PyObject *k) except? NULL
    Py_ssize_t _HP_HDR "OPH_PAIR_HDR"


cdef PyTypeObject *PAIR_TYPE     # HashPair's type


cdef inline bint _hp_is(PyObject *o) noexcept:
    return <PyTypeObject *>o.ob_type == PAIR_TYPE


cdef class SetCore(set):
    cdef public object enc, _aux


cdef class HashCore(dict):
    # ttl: None, or field -> unix ms of its expiry (hash field expiration)
    cdef public object ht, _aux, ttl


cdef int _hc_set(HashCore h, f, v) except -1


cdef inline PyObject *_hc_lookup(HashCore h, key) except? NULL:
    # the entry's (value) pair for key, borrowed; NULL: none
    return _hp_dict_get(<PyObject *>h, <PyObject *>key)


cdef inline bint _hc_set_in_place(PyObject *old, const char *v, Py_ssize_t vn) noexcept:
    # an existing entry's (value) pair takes the value v[:vn] in place when
    # only this entry holds it (as key and value, or as value) and it has
    # the room; False: it does not
    return _hp_refcnt(old) <= 2 and _hp_setv(old, v, vn)
