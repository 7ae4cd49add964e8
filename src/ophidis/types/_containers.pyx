# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled set and hash values: the C fields of types.containers.SetValue
(SetCore) and HashCore, the dict of bytes -> bytes a hash is, stored as
HashPairs.  types/containers.py's pure HashValue (a plain dict) is the
twin; tests/test_hashpairs.py runs random operations through both."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_DelItem, PyDict_SetItem
from cpython.object cimport PyObject, PyTypeObject, Py_SIZE
from libc.string cimport memcmp, memcpy

cdef class SetCore(set):
    """The fields of types.containers.SetValue the bodies read, as C fields
    (SetValue derives from this class when the module is built; declared in
    _containers.pxd)."""


# ===========================================================================
# Hashes (issue 17): HashCore, a dict whose entries are HashPair objects
# ===========================================================================
# In compiled installs a hash keeps each field and its value in ONE object,
# a HashPair, stored as both key and value of the dict ({pair: pair}): a
# non-GC variable-size object holding hash(field), the two lengths, and the
# field's bytes followed by the value's (64 bytes for a 12-byte field and a
# 12-byte value, one pymalloc class, where a dict of bytes held two 45-byte
# bytes objects).  A pair hashes as its field and compares equal to a bytes
# object with its field's content (and to a pair with the same field), so
# the dict's own lookups, ``in`` and ``del`` work with a bytes key.
# HashCore then overrides every dict method and protocol the code base uses
# so that, seen from Python, a HashValue is a dict of bytes -> bytes
# (types.containers' pure HashValue, a plain dict, is the twin;
# tests/test_hashpairs.py runs random operations through both): reads
# return new bytes objects made from the pair.
#
# The entry's value is the authoritative pair: an update writes the new
# value into the pair in place when no one else holds it and it has room
# (allocations are rounded up to 16 bytes, as pymalloc's classes), else a
# new pair becomes the entry's value and the dict keeps the old one as its
# key (dict keeps an existing key on update; that is what keeps the field's
# position, as a dict of bytes would).  Such a key is only read for its
# field.  Pairs never leave this module's methods: Python code sees bytes.

cdef extern from *:
    """
    static PyTypeObject OphPair_Type;

    #define OPH_IS_PAIR(o) (Py_TYPE(o) == &OphPair_Type)

    static PyObject *oph_pair_new(const char *f, Py_ssize_t fn, Py_hash_t h, const char *v, Py_ssize_t vn) {
        size_t size;
        OphPair *p;
        if ((size_t)fn > UINT32_MAX || (size_t)vn > UINT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "a hash field or value of 4 GB or more");
            return NULL;
        }
        size = ((size_t)OPH_PAIR_HDR + (size_t)fn + (size_t)vn + 15) & ~(size_t)15;
        p = (OphPair *)PyObject_Malloc(size);
        if (p == NULL)
            return PyErr_NoMemory();
        PyObject_InitVar((PyVarObject *)p, &OphPair_Type, (Py_ssize_t)size - OPH_PAIR_HDR);
        p->hash = h;
        p->flen = (uint32_t)fn;
        p->vlen = (uint32_t)vn;
        if (fn)
            memcpy(p->data, f, fn);
        if (vn)
            memcpy(p->data + fn, v, vn);
        return (PyObject *)p;
    }

    static void oph_pair_dealloc(PyObject *o) { PyObject_Free(o); }

    static Py_hash_t oph_pair_hash(PyObject *o) { return OPH_PHASH(o); }

    static PyObject *oph_pair_richcompare(PyObject *a, PyObject *b, int op) {
        const char *s;
        Py_ssize_t n;
        int eq;
        if ((op != Py_EQ && op != Py_NE) || !OPH_IS_PAIR(a))
            Py_RETURN_NOTIMPLEMENTED;
        if (OPH_IS_PAIR(b)) {
            s = OPH_PF(b);
            n = OPH_PFN(b);
        } else if (PyBytes_Check(b)) {
            s = PyBytes_AS_STRING(b);
            n = PyBytes_GET_SIZE(b);
        } else {
            Py_RETURN_NOTIMPLEMENTED;
        }
        eq = n == OPH_PFN(a) && (n == 0 || memcmp(s, OPH_PF(a), n) == 0);
        return PyBool_FromLong(op == Py_EQ ? eq : !eq);
    }

    static PyObject *oph_pair_repr(PyObject *o) {
        PyObject *f, *v, *r = NULL;
        f = PyBytes_FromStringAndSize(OPH_PF(o), OPH_PFN(o));
        v = PyBytes_FromStringAndSize(OPH_PV(o), OPH_PVN(o));
        if (f != NULL && v != NULL)
            r = PyUnicode_FromFormat("HashPair(%R, %R)", f, v);
        Py_XDECREF(f);
        Py_XDECREF(v);
        return r;
    }

    static PyTypeObject OphPair_Type = {
        PyVarObject_HEAD_INIT(NULL, 0)
        .tp_name = "ophidis.types._containers.HashPair",
        .tp_basicsize = offsetof(OphPair, data),
        .tp_itemsize = 1,
        .tp_dealloc = oph_pair_dealloc,
        .tp_repr = oph_pair_repr,
        .tp_hash = oph_pair_hash,
        .tp_richcompare = oph_pair_richcompare,
        .tp_flags = Py_TPFLAGS_DEFAULT,
        .tp_doc = "A hash's field and value (HashCore's entries; never seen by Python code).",
    };

    static int oph_pair_ready(void) { return PyType_Ready(&OphPair_Type); }
    #define OPH_PAIR_TYPE ((PyObject *)&OphPair_Type)
    """
    object _hp_new "oph_pair_new"(const char *f, Py_ssize_t fn, Py_hash_t h, const char *v, Py_ssize_t vn)
    int _hp_ready "oph_pair_ready"() except -1
    PyObject *_HP_TYPE "OPH_PAIR_TYPE"
    PyObject *_hp_dict_setdefault "PyDict_SetDefault"(PyObject *d, PyObject *k, PyObject *v) except NULL
    bint _hp_dict_next "PyDict_Next"(PyObject *d, Py_ssize_t *pos, PyObject **k, PyObject **v) noexcept
    Py_ssize_t _hp_dict_len "PyDict_GET_SIZE"(PyObject *d) noexcept
    bint _hp_bytes_exact "PyBytes_CheckExact"(object o) noexcept

_hp_ready()
HashPair = <object>_HP_TYPE
PAIR_TYPE = <PyTypeObject *>_HP_TYPE
cdef tuple _SET_LIKE = (set, frozenset, type({}.keys()), type({}.items()))
from sys import getsizeof as _getsizeof


cdef inline bytes _hp_field(PyObject *p):
    return PyBytes_FromStringAndSize(_hp_f(p), _hp_fn(p))


cdef inline bytes _hp_value(PyObject *p):
    return PyBytes_FromStringAndSize(_hp_v(p), _hp_vn(p))


cdef int _hc_put(HashCore h, const char *f, Py_ssize_t fn, Py_hash_t hv,
                 const char *v, Py_ssize_t vn) except -1:
    """h[field] = value, field f[:fn] (whose hash is hv), value v[:vn]."""
    p = _hp_new(f, fn, hv, v, vn)
    # a new field: one lookup, that inserts
    cdef PyObject *old = _hp_dict_setdefault(<PyObject *>h, <PyObject *>p, <PyObject *>p)
    if old == <PyObject *>p:
        return 0
    # an existing one: in place, else p is the entry's value
    if _hc_set_in_place(old, v, vn):
        return 0
    PyDict_SetItem(h, p, p)
    return 0


cdef int _hc_set(HashCore h, f, v) except -1:
    """h[f] = v for bytes f and v."""
    if not PyBytes_Check(f) or not PyBytes_Check(v):
        raise TypeError("a hash's fields and values are bytes, not %s" % (
            type(f).__name__ if not PyBytes_Check(f) else type(v).__name__))
    if not _hp_bytes_exact(f):
        f = bytes(f)
    return _hc_put(h, PyBytes_AS_STRING(f), PyBytes_GET_SIZE(f), hash(f),
                   PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v))


cdef int _hc_update(HashCore h, o) except -1:
    cdef PyObject *k
    cdef PyObject *v
    cdef Py_ssize_t pos = 0, i = 0
    cdef bint empty
    if isinstance(o, HashCore):
        if o is h:
            return 0
        empty = _hp_dict_len(<PyObject *>h) == 0
        while _hp_dict_next(<PyObject *>o, &pos, &k, &v):
            if empty:
                q = _hp_new(_hp_f(v), _hp_fn(v), _hp_hash(v), _hp_v(v), _hp_vn(v))
                PyDict_SetItem(h, q, q)
            else:
                _hc_put(h, _hp_f(v), _hp_fn(v), _hp_hash(v), _hp_v(v), _hp_vn(v))
        return 0
    if type(o) is dict:
        while _hp_dict_next(<PyObject *>o, &pos, &k, &v):
            _hc_set(h, <object>k, <object>v)
        return 0
    if hasattr(o, "keys"):
        for f in o.keys():
            _hc_set(h, f, o[f])
        return 0
    for item in o:
        t = tuple(item)
        if len(t) != 2:
            raise ValueError("dictionary update sequence element #%d has length %d; 2 is required"
                             % (i, len(t)))
        _hc_set(h, t[0], t[1])
        i += 1
    return 0


cdef object _hc_eq(HashCore a, other):
    cdef PyObject *k
    cdef PyObject *v
    cdef PyObject *w
    cdef Py_ssize_t pos = 0
    if not isinstance(other, dict):
        return NotImplemented
    if _hp_dict_len(<PyObject *>a) != _hp_dict_len(<PyObject *>other):
        return False
    if isinstance(other, HashCore):
        while _hp_dict_next(<PyObject *>a, &pos, &k, &v):
            w = _hc_lookup(<HashCore>other, <object>v)
            if w == NULL or _hp_vn(w) != _hp_vn(v) or memcmp(_hp_v(w), _hp_v(v), _hp_vn(v)) != 0:
                return False
        return True
    # another dict: its own storage, as dict's == reads it
    while _hp_dict_next(<PyObject *>a, &pos, &k, &v):
        f = _hp_field(v)
        w = _hp_dict_get(<PyObject *>other, <PyObject *>f)
        if w == NULL:
            return False
        if PyBytes_Check(<object>w):
            if PyBytes_GET_SIZE(<object>w) != _hp_vn(v) or memcmp(PyBytes_AS_STRING(<object>w), _hp_v(v), _hp_vn(v)):
                return False
        elif not (_hp_value(v) == <object>w):
            return False
    return True


cdef class HashCore(dict):
    """The fields of types.containers.HashValue the bodies read, as C
    fields (HashValue derives from this class when the module is built),
    and the dict of bytes -> bytes a hash is, stored as HashPairs (above;
    the fields are declared in _containers.pxd)."""

    def __init__(self, *args, **kw):
        if len(args) > 1:
            raise TypeError("HashValue expected at most 1 argument, got %d" % len(args))
        if args:
            _hc_update(self, args[0])
        if kw:
            _hc_update(self, kw)

    def __getitem__(self, key):
        cdef PyObject *p = _hc_lookup(self, key)
        if p == NULL:
            raise KeyError(key)
        return _hp_value(p)

    def get(self, key, default=None):
        cdef PyObject *p = _hc_lookup(self, key)
        if p == NULL:
            return default
        return _hp_value(p)

    def __setitem__(self, key, value):
        _hc_set(self, key, value)

    def __delitem__(self, key):
        PyDict_DelItem(self, key)

    def pop(self, key, *default):
        if len(default) > 1:
            raise TypeError("pop expected at most 2 arguments, got %d" % (len(default) + 1))
        cdef PyObject *p = _hc_lookup(self, key)
        if p == NULL:
            if default:
                return default[0]
            raise KeyError(key)
        v = _hp_value(p)
        PyDict_DelItem(self, key)
        return v

    def popitem(self):
        k, v = dict.popitem(self)
        return _hp_field(<PyObject *>v), _hp_value(<PyObject *>v)

    def setdefault(self, key, default=None):
        cdef PyObject *p = _hc_lookup(self, key)
        if p != NULL:
            return _hp_value(p)
        _hc_set(self, key, default)
        return default

    def update(self, *args, **kw):
        if len(args) > 1:
            raise TypeError("update expected at most 1 argument, got %d" % len(args))
        if args:
            _hc_update(self, args[0])
        if kw:
            _hc_update(self, kw)

    def __iter__(self):
        return _HashIter(self, 0)

    def __reversed__(self):
        return iter(list(self)[::-1])

    def keys(self):
        return _HashView(self, 0)

    def values(self):
        return _HashView(self, 1)

    def items(self):
        return _HashView(self, 2)

    def copy(self):
        return type(self)(self)

    def nbytes(self):
        """Estimated bytes held (memory.sizes.pysize): the dict's table plus
        ``len`` times the average allocation of the first few pairs."""
        cdef PyObject *k
        cdef PyObject *v
        cdef Py_ssize_t pos = 0, t = 0, c = 0, n = _hp_dict_len(<PyObject *>self)
        s = _getsizeof(self)
        while c < 4 and _hp_dict_next(<PyObject *>self, &pos, &k, &v):
            t += _HP_HDR + Py_SIZE(<object>v)
            c += 1
        if c:
            s += t * n // c
        return s

    def __eq__(self, other):
        return _hc_eq(self, other)

    def __ne__(self, other):
        r = _hc_eq(self, other)
        return r if r is NotImplemented else not r

    def __repr__(self):
        return repr(dict(self.items()))

    def __reduce__(self):
        return (type(self), (dict(self.items()),), (self.ht, self._aux, self.ttl))

    def __setstate__(self, state):
        self.ht, self._aux, self.ttl = state


@cython.final
cdef class _HashIter:
    """Iterator over a HashCore's fields (0), values (1) or items (2)."""
    cdef HashCore h
    cdef Py_ssize_t pos, used
    cdef int kind

    def __cinit__(self, HashCore h, int kind):
        self.h = h
        self.kind = kind
        self.used = _hp_dict_len(<PyObject *>h)

    def __iter__(self):
        return self

    def __length_hint__(self):
        return 0 if self.h is None else max(0, self.used)

    def __next__(self):
        cdef PyObject *k
        cdef PyObject *v
        if self.h is None:
            raise StopIteration
        if _hp_dict_len(<PyObject *>self.h) != self.used:
            self.used = -1
            raise RuntimeError("dictionary changed size during iteration")
        if not _hp_dict_next(<PyObject *>self.h, &self.pos, &k, &v):
            self.h = None
            raise StopIteration
        if self.kind == 0:
            return _hp_field(v)
        if self.kind == 1:
            return _hp_value(v)
        return (_hp_field(v), _hp_value(v))


@cython.final
cdef class _HashView:
    """keys()/values()/items() of a HashCore (the parts of dict's views in use)."""
    cdef HashCore h
    cdef int kind

    def __cinit__(self, HashCore h, int kind):
        self.h = h
        self.kind = kind

    def __iter__(self):
        return _HashIter(self.h, self.kind)

    def __reversed__(self):
        return iter(list(_HashIter(self.h, self.kind))[::-1])

    def __len__(self):
        return _hp_dict_len(<PyObject *>self.h)

    def __contains__(self, x):
        cdef PyObject *p
        if self.kind == 0:
            return x in self.h
        if self.kind == 1:
            for v in _HashIter(self.h, 1):
                if v == x:
                    return True
            return False
        if not isinstance(x, tuple) or len(x) != 2:
            return False
        p = _hc_lookup(self.h, x[0])
        return p != NULL and _hp_value(p) == x[1]

    def __eq__(self, other):
        if self.kind == 1 or not isinstance(other, _SET_LIKE) and not isinstance(other, _HashView):
            return NotImplemented
        return set(self) == set(other)

    def __repr__(self):
        return "%s(%r)" % (("dict_keys", "dict_values", "dict_items")[self.kind], list(self))


