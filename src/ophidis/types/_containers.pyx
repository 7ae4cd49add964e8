# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled set, hash and sorted-set maps: SetCore (types.containers.SetValue's
base, a set of bytes in its own table), HashCore, the dict of bytes -> bytes a
hash is, stored as HashPairs in its own table, and ZDict (a zset's member ->
score map).  types/containers.py's pure SetValue (a set) and HashValue (a
dict) and zset.py's plain dict are the twins; tests/test_setcore.py,
test_hashpairs.py and test_zdict.py run random operations through both."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.object cimport PyObject, PyTypeObject, Py_SIZE
from cpython.mem cimport PyMem_Free
from cpython.ref cimport Py_INCREF
from libc.string cimport memcmp, memcpy

# ===========================================================================
# Hashes (issues 17 and 34): HashCore, a table of HashPair objects
# ===========================================================================
# In compiled installs a hash keeps each field and its value in ONE object,
# a HashPair: a non-GC variable-size object holding hash(field), the two
# lengths, and the field's bytes followed by the value's (64 bytes for a
# 12-byte field and a 12-byte value, one pymalloc class, where a dict of
# bytes held two 45-byte bytes objects).  The pairs live in HashCore's own
# table (OphTab, _containers.pxd): CPython's compact dict layout, the pairs
# in insertion order plus an index of 4-byte slots, without the dict's
# 24-byte entries (hash, key, value): ~16 bytes a field at 1M fields where
# a dict of {pair: pair} took ~42 (issue 34).  HashCore still derives from
# dict (a hash is a dict in both installs, and isinstance(h, dict) holds)
# but the dict's own storage stays empty: HashCore overrides every dict
# method and protocol, so that, seen from Python, a HashValue is a dict of
# bytes -> bytes in insertion order (types.containers' pure HashValue, a
# plain dict, is the twin; tests/test_hashpairs.py runs random operations
# through both): reads return new bytes objects made from the pair.  C
# code reads the table through _containers.pxd (_hc_lookup, _hc_next,
# _hc_len), never through the PyDict API.
#
# An update writes the new value into the field's pair in place when no
# one else holds it and it has room (allocations are rounded up to 16
# bytes, as pymalloc's classes), else a new pair takes the field's position
# in the table.  Pairs never leave this module (``hash_pairs`` aside, for
# the tests): Python code sees bytes.

ctypedef Py_hash_t (*_hashfn)(PyObject *) noexcept

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

    /* -- the table (OphTab, _containers.pxd) -- */

    /* a slot of the index that is free (empty or deleted) for hash h */
    static size_t oph_tab_free(const OphTab *t, Py_hash_t h) {
        size_t mask = (size_t)t->mask, perturb = (size_t)h, i = (size_t)h & mask;
        while (t->idx[i] >= 0)
            OPH_PROBE_NEXT(i, perturb, mask);
        return i;
    }

    #define OPH_USABLE(mask) ((((mask) + 1) << 1) / 3)

    /* an entry's hash: a pair's (hash tables), a bytes object's (zsets) */
    typedef Py_hash_t (*oph_hashfn)(PyObject *);
    static Py_hash_t oph_pair_hashfn(PyObject *p) { return OPH_PHASH(p); }
    static Py_hash_t oph_bytes_hashfn(PyObject *p) { return PyObject_Hash(p); }   /* cached: never fails */

    /* a new index of the smallest power of 2 >= 3 * used slots (8 at
       least, as CPython's dict grows), the live entries packed at the front
       of a new ent of the index's usable size (and their scores, when the
       table has the parallel array *sc) */
    static int oph_tab_resize_ex(OphTab *t, oph_hashfn hf, double **sc) {
        Py_ssize_t size = 8, room, i, n = 0;
        int32_t *idx;
        PyObject **ent;
        double *nsc = NULL;
        while (size < 3 * t->used)
            size <<= 1;
        room = OPH_USABLE(size - 1);
        if (size > ((Py_ssize_t)1 << 31) || (size_t)room > PY_SSIZE_T_MAX / sizeof(double)) {
            PyErr_NoMemory();
            return -1;
        }
        idx = (int32_t *)PyMem_Malloc((size_t)size * sizeof(int32_t));
        ent = (PyObject **)PyMem_Malloc((size_t)room * sizeof(PyObject *));
        if (sc != NULL)
            nsc = (double *)PyMem_Malloc((size_t)room * sizeof(double));
        if (idx == NULL || ent == NULL || (sc != NULL && nsc == NULL)) {
            PyMem_Free(idx);
            PyMem_Free(ent);
            PyMem_Free(nsc);
            PyErr_NoMemory();
            return -1;
        }
        memset(idx, 0xff, (size_t)size * sizeof(int32_t));       /* OPH_EMPTY */
        for (i = 0; i < t->nent; i++)
            if (t->ent[i] != NULL) {
                if (sc != NULL)
                    nsc[n] = (*sc)[i];
                ent[n++] = t->ent[i];
            }
        PyMem_Free(t->idx);
        PyMem_Free(t->ent);
        t->idx = idx;
        t->ent = ent;
        if (sc != NULL) {
            PyMem_Free(*sc);
            *sc = nsc;
        }
        t->mask = size - 1;
        t->nent = n;
        for (i = 0; i < n; i++)
            idx[oph_tab_free(t, hf(ent[i]))] = (int32_t)i;
        return 0;
    }

    /* entry p (hash h, not in the table) appended; the table takes a
       reference; its position in ent (and *sc), -1: no memory */
    static Py_ssize_t oph_tab_add_ex(OphTab *t, PyObject *p, Py_hash_t h, oph_hashfn hf, double **sc) {
        size_t i;
        if (t->mask < 0 || t->nent >= OPH_USABLE(t->mask))
            if (oph_tab_resize_ex(t, hf, sc) < 0)
                return -1;
        i = oph_tab_free(t, h);
        t->idx[i] = (int32_t)t->nent;
        Py_INCREF(p);
        t->ent[t->nent] = p;
        t->used++;
        return t->nent++;
    }

    /* pair p (a field not in the table) appended; the table takes a reference */
    static int oph_tab_add(OphTab *t, PyObject *p) {
        return oph_tab_add_ex(t, p, OPH_PHASH(p), oph_pair_hashfn, NULL) < 0 ? -1 : 0;
    }

    /* bytes object key (hash h) added unless an equal one is there: 1
       added (the table takes a reference), 0 there, -1 no memory.  One
       probe finds it or the slot it goes in (the first free one met, as
       oph_tab_free's) while the table has room. */
    static int oph_btab_add(OphTab *t, PyObject *key, Py_hash_t h) {
        size_t mask, i, perturb;
        Py_ssize_t slot = -1, kn = PyBytes_GET_SIZE(key);
        const char *k = PyBytes_AS_STRING(key);
        int32_t ix;
        PyObject *p;
        if (t->mask >= 0) {
            mask = (size_t)t->mask;
            perturb = (size_t)h;
            i = (size_t)h & mask;
            for (;;) {
                ix = t->idx[i];
                if (ix == OPH_EMPTY) {
                    if (slot < 0)
                        slot = (Py_ssize_t)i;
                    break;
                }
                if (ix >= 0) {
                    p = t->ent[ix];
                    if (p == key || (PyBytes_GET_SIZE(p) == kn && (kn == 0 || memcmp(PyBytes_AS_STRING(p), k, kn) == 0)))
                        return 0;
                } else if (slot < 0) {
                    slot = (Py_ssize_t)i;
                }
                OPH_PROBE_NEXT(i, perturb, mask);
            }
            if (t->nent < OPH_USABLE(t->mask)) {
                t->idx[slot] = (int32_t)t->nent;
                Py_INCREF(key);
                t->ent[t->nent++] = key;
                t->used++;
                return 1;
            }
        }
        return oph_tab_add_ex(t, key, h, oph_bytes_hashfn, NULL) < 0 ? -1 : 1;
    }

    /* the entry in slot i of the index removed; its reference is returned */
    static PyObject *oph_tab_take(OphTab *t, Py_ssize_t i) {
        int32_t ix = t->idx[i];
        PyObject *p = t->ent[ix];
        t->idx[i] = OPH_GONE;
        t->ent[ix] = NULL;
        t->used--;
        return p;
    }

    /* the slot of the index that points at position ix of ent */
    static Py_ssize_t oph_tab_slot_of(const OphTab *t, Py_ssize_t ix, Py_hash_t h) {
        size_t mask = (size_t)t->mask, perturb, i;
        perturb = (size_t)h;
        i = (size_t)h & mask;
        while (t->idx[i] != ix)
            OPH_PROBE_NEXT(i, perturb, mask);
        return (Py_ssize_t)i;
    }

    /* the last entry removed (its reference returned, its position in
       *pos), as dict.popitem; NULL: empty */
    static PyObject *oph_tab_pop_last_ex(OphTab *t, oph_hashfn hf, Py_ssize_t *pos) {
        Py_ssize_t ix = t->nent - 1;
        PyObject *p;
        if (t->used == 0)
            return NULL;
        while (t->ent[ix] == NULL)
            ix--;
        p = oph_tab_take(t, oph_tab_slot_of(t, ix, hf(t->ent[ix])));
        t->nent = ix;
        *pos = ix;
        return p;
    }

    static PyObject *oph_tab_pop_last(OphTab *t) {
        Py_ssize_t pos;
        return oph_tab_pop_last_ex(t, oph_pair_hashfn, &pos);
    }

    /* every entry released, the table's memory freed */
    static void oph_tab_clear(OphTab *t) {
        Py_ssize_t i, n = t->nent;
        PyObject **ent = t->ent;
        PyMem_Free(t->idx);
        t->idx = NULL;
        t->ent = NULL;
        t->used = t->nent = 0;
        t->mask = -1;
        for (i = 0; i < n; i++)
            Py_XDECREF(ent[i]);
        PyMem_Free(ent);
    }

    /* bytes of memory the table holds (its two arrays; + the scores' with sc) */
    static Py_ssize_t oph_tab_bytes(const OphTab *t, int sc) {
        if (t->mask < 0)
            return 0;
        return (t->mask + 1) * (Py_ssize_t)sizeof(int32_t) + OPH_USABLE(t->mask) * (Py_ssize_t)(sc ? sizeof(PyObject *) + sizeof(double) : sizeof(PyObject *));
    }
    #define OPH_PAIR_TYPE ((PyObject *)&OphPair_Type)
    """
    object _hp_new "oph_pair_new"(const char *f, Py_ssize_t fn, Py_hash_t h, const char *v, Py_ssize_t vn)
    int _hp_ready "oph_pair_ready"() except -1
    PyObject *_HP_TYPE "OPH_PAIR_TYPE"
    int _tab_add "oph_tab_add"(OphTab *t, PyObject *p) except -1
    PyObject *_tab_take "oph_tab_take"(OphTab *t, Py_ssize_t i) noexcept
    PyObject *_tab_pop_last "oph_tab_pop_last"(OphTab *t) noexcept
    void _tab_clear "oph_tab_clear"(OphTab *t) noexcept
    Py_ssize_t _tab_bytes "oph_tab_bytes"(const OphTab *t, int sc) noexcept
    Py_ssize_t _ztab_add "oph_tab_add_ex"(OphTab *t, PyObject *p, Py_hash_t h, _hashfn hf, double **sc) except -1
    PyObject *_ztab_pop_last "oph_tab_pop_last_ex"(OphTab *t, _hashfn hf, Py_ssize_t *pos) noexcept
    _hashfn _bytes_hashfn "oph_bytes_hashfn"
    int _btab_add "oph_btab_add"(OphTab *t, PyObject *key, Py_hash_t h) except -1
    void _hp_decref "Py_DECREF"(PyObject *o) noexcept
    PyObject *_hp_dict_get "PyDict_GetItemWithError"(PyObject *d, PyObject *k) except? NULL
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


# -- iterators and views of the three tables ------------------------------------
# HashCore, ZDict and SetCore iterate their OphTab the same way: one
# iterator and one view type, the entry made into what Python sees by the
# map's ``item`` function (kind 0: the key, 1: the value, 2: the item).

ctypedef object (*_itemfn)(object owner, PyObject *p, Py_ssize_t pos, int kind)


cdef object _hc_item(object owner, PyObject *v, Py_ssize_t pos, int kind):
    if kind == 0:
        return _hp_field(v)
    if kind == 1:
        return _hp_value(v)
    return (_hp_field(v), _hp_value(v))


cdef object _zd_item(object owner, PyObject *v, Py_ssize_t pos, int kind):
    # (pos: the position after the entry's, as _tab_next leaves it)
    if kind == 0:
        return <object>v
    if kind == 1:
        return (<ZDict>owner).sc[pos - 1]
    return (<object>v, (<ZDict>owner).sc[pos - 1])


cdef object _sc_item(object owner, PyObject *v, Py_ssize_t pos, int kind):
    return <object>v


@cython.final
cdef class _TabIter:
    """Iterator over the table of a HashCore, ZDict or SetCore (``owner``):
    its keys (0), values (1) or items (2), with dict's checks (a change of
    size, or more entries met than there were) or a set's (a change of
    size)."""
    cdef object owner           # None once at the end
    cdef const OphTab *tab      # owner's
    cdef _itemfn item
    cdef Py_ssize_t pos, used, left
    cdef int kind
    cdef bint is_set

    def __iter__(self):
        return self

    def __length_hint__(self):
        return 0 if self.owner is None else max(0, self.left)

    def __next__(self):
        cdef PyObject *v
        if self.owner is None:
            raise StopIteration
        if self.tab.used != self.used:
            self.used = -1
            raise RuntimeError("Set changed size during iteration" if self.is_set
                               else "dictionary changed size during iteration")
        if not _tab_next(self.tab, &self.pos, &v):
            self.owner = None
            raise StopIteration
        if self.left <= 0 and not self.is_set:
            self.left = -1
            raise RuntimeError("dictionary keys changed during iteration")
        self.left -= 1
        return self.item(self.owner, v, self.pos, self.kind)


cdef _TabIter _tab_iter(object owner, const OphTab *tab, _itemfn item, int kind, bint is_set):
    cdef _TabIter it = _TabIter.__new__(_TabIter)
    it.owner = owner
    it.tab = tab
    it.item = item
    it.kind = kind
    it.is_set = is_set
    it.used = it.left = tab.used
    return it


cdef object _MISSING = object()


@cython.final
cdef class _TabView:
    """keys()/values()/items() of a HashCore or a ZDict (the parts of
    dict's views in use)."""
    cdef object owner
    cdef const OphTab *tab      # owner's
    cdef _itemfn item
    cdef int kind

    def __iter__(self):
        return _tab_iter(self.owner, self.tab, self.item, self.kind, False)

    def __reversed__(self):
        return iter(list(self)[::-1])

    def __len__(self):
        return self.tab.used

    def __contains__(self, x):
        if self.kind == 0:
            return x in self.owner
        if self.kind == 1:
            for v in self:
                if v == x:
                    return True
            return False
        if not isinstance(x, tuple) or len(x) != 2:
            return False
        v = self.owner.get(x[0], _MISSING)
        return v is not _MISSING and v == x[1]

    def __eq__(self, other):
        if self.kind == 1 or not isinstance(other, _SET_LIKE) and not isinstance(other, _TabView):
            return NotImplemented
        return set(self) == set(other)

    def __repr__(self):
        return "%s(%r)" % (("dict_keys", "dict_values", "dict_items")[self.kind], list(self))


cdef _TabView _tab_view(object owner, const OphTab *tab, _itemfn item, int kind):
    cdef _TabView w = _TabView.__new__(_TabView)
    w.owner = owner
    w.tab = tab
    w.item = item
    w.kind = kind
    return w


cdef int _btab_discard(OphTab *t, object key) except -1:
    """Member ``key`` removed from the table of bytes objects t (a ZDict's or a
    SetCore's): 1, or 0 when it is not there (a key that is not bytes is
    hashed, as a dict or set would, then not found)."""
    cdef Py_hash_t hv = PyObject_Hash(key)
    cdef Py_ssize_t i
    if not PyBytes_Check(key):
        return 0
    i = _ztab_find(t, <PyObject *>key, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), hv)
    if i < 0:
        return 0
    _hp_decref(_tab_take(t, i))
    return 1


cdef object _btab_pop(OphTab *t, Py_ssize_t *pos, str empty):
    """The last member of the table of bytes objects t removed (its position
    in *pos), as dict.popitem; KeyError(empty) when there is none."""
    cdef PyObject *p = _ztab_pop_last(t, _bytes_hashfn, pos)
    if p == NULL:
        raise KeyError(empty)
    m = <object>p
    _hp_decref(p)       # (the table's reference, now m's)
    return m


cdef int _hc_put(HashCore h, const char *f, Py_ssize_t fn, Py_hash_t hv,
                 const char *v, Py_ssize_t vn) except -1:
    """h[field] = value, field f[:fn] (whose hash is hv), value v[:vn]."""
    cdef Py_ssize_t i = _tab_find(&h.tab, f, fn, hv)
    cdef PyObject *old
    cdef Py_ssize_t ix
    if i < 0:
        p = _hp_new(f, fn, hv, v, vn)
        _tab_add(&h.tab, <PyObject *>p)
        return 0
    # an existing field: in place, else a new pair in its position
    ix = h.tab.idx[i]
    old = h.tab.ent[ix]
    if _hc_set_in_place(old, v, vn):
        return 0
    p = _hp_new(f, fn, hv, v, vn)
    Py_INCREF(p)
    h.tab.ent[ix] = <PyObject *>p
    _hp_decref(old)
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


cdef Py_ssize_t _hc_slot(HashCore h, key) except -2:
    """The slot of the table's index that holds field ``key``, -1: none (a
    key that is not bytes is hashed, as a dict would, then not found)."""
    cdef Py_hash_t hv = hash(key)
    if not PyBytes_Check(key):
        return -1
    return _tab_find(&h.tab, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), hv)


cdef int _hc_update(HashCore h, o) except -1:
    cdef PyObject *k
    cdef PyObject *v
    cdef Py_ssize_t pos = 0, i = 0
    if isinstance(o, HashCore):
        if o is h:
            return 0
        while _hc_next(<HashCore>o, &pos, &v):
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
    cdef PyObject *v
    cdef PyObject *w
    cdef Py_ssize_t pos = 0, i
    if not isinstance(other, dict):
        return NotImplemented
    if isinstance(other, HashCore):
        if a.tab.used != (<HashCore>other).tab.used:
            return False
        while _hc_next(a, &pos, &v):
            i = _tab_find(&(<HashCore>other).tab, _hp_f(v), _hp_fn(v), _hp_hash(v))
            if i < 0:
                return False
            w = (<HashCore>other).tab.ent[(<HashCore>other).tab.idx[i]]
            if _hp_vn(w) != _hp_vn(v) or memcmp(_hp_v(w), _hp_v(v), _hp_vn(v)) != 0:
                return False
        return True
    # another dict: its own storage, as dict's == reads it (the pair held
    # while other's lookup may run Python code)
    if a.tab.used != _hp_dict_len(<PyObject *>other):
        return False
    while _hc_next(a, &pos, &v):
        held = <object>v
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
    and the dict of bytes -> bytes a hash is, stored as HashPairs in its
    own table (above; the fields are declared in _containers.pxd)."""

    def __cinit__(self):
        self.tab.mask = -1

    def __dealloc__(self):
        _tab_clear(&self.tab)

    def __init__(self, *args, **kw):
        if len(args) > 1:
            raise TypeError("HashValue expected at most 1 argument, got %d" % len(args))
        if args:
            _hc_update(self, args[0])
        if kw:
            _hc_update(self, kw)

    def __len__(self):
        return self.tab.used

    def __contains__(self, key):
        return _hc_slot(self, key) >= 0

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
        cdef Py_ssize_t i = _hc_slot(self, key)
        if i < 0:
            raise KeyError(key)
        _hp_decref(_tab_take(&self.tab, i))

    def pop(self, key, *default):
        if len(default) > 1:
            raise TypeError("pop expected at most 2 arguments, got %d" % (len(default) + 1))
        cdef Py_ssize_t i = _hc_slot(self, key)
        if i < 0:
            if default:
                return default[0]
            raise KeyError(key)
        p = <object>_tab_take(&self.tab, i)     # (the table's reference, now p's)
        _hp_decref(<PyObject *>p)
        return _hp_value(<PyObject *>p)

    def popitem(self):
        cdef PyObject *p = _tab_pop_last(&self.tab)
        if p == NULL:
            raise KeyError("popitem(): dictionary is empty")
        try:
            return _hp_field(p), _hp_value(p)
        finally:
            _hp_decref(p)

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

    def clear(self):
        _tab_clear(&self.tab)

    def __iter__(self):
        return _tab_iter(self, &self.tab, _hc_item, 0, False)

    def __reversed__(self):
        return iter(list(self)[::-1])

    def keys(self):
        return _tab_view(self, &self.tab, _hc_item, 0)

    def values(self):
        return _tab_view(self, &self.tab, _hc_item, 1)

    def items(self):
        return _tab_view(self, &self.tab, _hc_item, 2)

    def copy(self):
        return type(self)(self)

    def __or__(self, other):
        # as dict's: a plain dict (PyDict_Copy of a subclass)
        if not isinstance(self, HashCore) or not isinstance(other, dict):
            return NotImplemented
        r = dict(self.items())
        r.update(other)
        return r

    def __ror__(self, other):
        if not isinstance(other, dict):
            return NotImplemented
        r = dict(other)
        r.update(self.items())
        return r

    def __ior__(self, other):
        _hc_update(self, other)
        return self

    def __sizeof__(self):
        return dict.__sizeof__(self) + _tab_bytes(&self.tab, 0)

    def nbytes(self):
        """Estimated bytes held (memory.sizes.pysize): the object and its
        table plus ``len`` times the average allocation of the first few
        pairs."""
        cdef PyObject *v
        cdef Py_ssize_t pos = 0, t = 0, c = 0, n = self.tab.used
        s = _getsizeof(self)
        while c < 4 and _hc_next(self, &pos, &v):
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


cdef Py_ssize_t _tab_offset():
    cdef HashCore h = HashCore()
    return <char *>&h.tab - <char *><PyObject *>h


TAB_OFFSET = _tab_offset()


def hash_pairs(HashCore h):
    """The pairs of ``h`` in order (tests/test_hashpairs.py looks at the
    storage; holding a pair stops updates in place)."""
    cdef PyObject *v
    cdef Py_ssize_t pos = 0
    out = []
    while _hc_next(h, &pos, &v):
        out.append(<object>v)
    return out


# ===========================================================================
# Sorted sets (issue 34): ZDict, a zset's member -> score map
# ===========================================================================
# In compiled installs types.zset.ZSetValue.dict is a ZDict: the members
# (bytes objects) in an OphTab as the hash's pairs (insertion order, 4-byte
# index slots probed as dict probes; a member's hash is the bytes object's
# own, cached by it) and their scores as C doubles in ``sc``, parallel to
# the table's entries: 8 + 8 bytes an entry + the index, where a dict took
# its 24-byte entries and a 32-byte float a member.  As HashCore it derives
# from dict with its own storage left empty and overrides every dict method
# and protocol, so that Python code sees a dict of bytes -> float (the pure
# ZSetValue's plain dict is its twin; tests/test_zdict.py runs random
# operations through both).  Reads make a new float from the double; a
# score stored is a float or an int (as a float).  C code goes through
# _containers.pxd (_ztab_find, _zd_add, _zd_discard; the RDB writer: _zd_tab,
# _zd_sc and _tab_next, with borrowed pointers).


cdef inline double _zd_score(v) except? -1.0:
    if type(v) is float:
        return <double>v
    if isinstance(v, (float, int)):
        return float(v)
    raise TypeError("a sorted set's scores are floats, not %s" % type(v).__name__)


cdef inline object _member_key(key, str what):
    # ``key`` as the exact bytes object a ZDict or SetCore (a "sorted set"'s
    # or a "set"'s members) stores
    if not PyBytes_Check(key):
        raise TypeError("a %s's members are bytes, not %s" % (what, type(key).__name__))
    if not _hp_bytes_exact(key):
        return bytes(key)
    return key


cdef inline Py_ssize_t _zd_pos(ZDict z, key) except -2:
    # the position of member ``key`` (-1: none; a key that is not bytes is
    # hashed, as a dict would, then not found)
    cdef Py_hash_t hv = hash(key)
    if not PyBytes_Check(key):
        return -1
    cdef Py_ssize_t i = _ztab_find(&z.tab, <PyObject *>key, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), hv)
    return -1 if i < 0 else z.tab.idx[i]


cdef int _zd_add(ZDict z, object key, Py_hash_t hv, double s) except -1:
    cdef Py_ssize_t ix = _ztab_add(&z.tab, <PyObject *>key, hv, _bytes_hashfn, &z.sc)
    z.sc[ix] = s
    return 0


cdef int _zd_put(ZDict z, key, double s) except -1:
    """z[key] = s."""
    key = _member_key(key, "sorted set")
    cdef Py_hash_t hv = hash(key)
    cdef Py_ssize_t i = _ztab_find(&z.tab, <PyObject *>key, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), hv)
    if i >= 0:
        z.sc[z.tab.idx[i]] = s
        return 0
    return _zd_add(z, key, hv, s)


cdef int _zd_discard(ZDict z, object key) except -1:
    return _btab_discard(&z.tab, key)


cdef int _zd_update(ZDict z, o) except -1:
    cdef PyObject *k
    cdef PyObject *v
    cdef Py_ssize_t pos = 0, i = 0
    if isinstance(o, ZDict):
        if o is z:
            return 0
        while _tab_next(&(<ZDict>o).tab, &pos, &k):
            _zd_put(z, <object>k, (<ZDict>o).sc[pos - 1])
        return 0
    if type(o) is dict:
        while _hp_dict_next(<PyObject *>o, &pos, &k, &v):
            _zd_put(z, <object>k, _zd_score(<object>v))
        return 0
    if hasattr(o, "keys"):
        for f in o.keys():
            _zd_put(z, f, _zd_score(o[f]))
        return 0
    for item in o:
        t = tuple(item)
        if len(t) != 2:
            raise ValueError("dictionary update sequence element #%d has length %d; 2 is required"
                             % (i, len(t)))
        _zd_put(z, t[0], _zd_score(t[1]))
        i += 1
    return 0


cdef object _zd_eq(ZDict a, other):
    cdef PyObject *k
    cdef PyObject *w
    cdef Py_ssize_t pos = 0, j
    if not isinstance(other, dict):
        return NotImplemented
    if isinstance(other, ZDict):
        if a.tab.used != (<ZDict>other).tab.used:
            return False
        while _tab_next(&a.tab, &pos, &k):
            j = _zd_pos(<ZDict>other, <object>k)
            if j < 0 or not ((<ZDict>other).sc[j] == a.sc[pos - 1]):
                return False
        return True
    # another dict: its own storage, as dict's == reads it (the member held
    # while other's lookup may run Python code)
    if a.tab.used != _hp_dict_len(<PyObject *>other):
        return False
    while _tab_next(&a.tab, &pos, &k):
        held = <object>k
        s = a.sc[pos - 1]
        w = _hp_dict_get(<PyObject *>other, k)
        if w == NULL:
            return False
        if not (s == <object>w):
            return False
    return True


cdef class ZDict(dict):
    """A sorted set's member -> score map: a dict of bytes -> float whose
    entries live in its own table (above; the fields are declared in
    _containers.pxd)."""

    def __cinit__(self):
        self.tab.mask = -1
        self.sc = NULL

    def __dealloc__(self):
        _tab_clear(&self.tab)
        PyMem_Free(self.sc)
        self.sc = NULL

    def __init__(self, *args, **kw):
        if len(args) > 1:
            raise TypeError("ZDict expected at most 1 argument, got %d" % len(args))
        if args:
            _zd_update(self, args[0])
        if kw:
            _zd_update(self, kw)

    def __len__(self):
        return self.tab.used

    def __contains__(self, key):
        return _zd_pos(self, key) >= 0

    def __getitem__(self, key):
        cdef Py_ssize_t j = _zd_pos(self, key)
        if j < 0:
            raise KeyError(key)
        return self.sc[j]

    def get(self, key, default=None):
        cdef Py_ssize_t j = _zd_pos(self, key)
        if j < 0:
            return default
        return self.sc[j]

    def __setitem__(self, key, value):
        _zd_put(self, key, _zd_score(value))

    def __delitem__(self, key):
        if not _zd_discard(self, key):
            raise KeyError(key)

    def pop(self, key, *default):
        if len(default) > 1:
            raise TypeError("pop expected at most 2 arguments, got %d" % (len(default) + 1))
        cdef Py_ssize_t j = _zd_pos(self, key)
        if j < 0:
            if default:
                return default[0]
            raise KeyError(key)
        s = self.sc[j]
        _zd_discard(self, key)
        return s

    def popitem(self):
        cdef Py_ssize_t pos
        m = _btab_pop(&self.tab, &pos, "popitem(): dictionary is empty")
        return m, self.sc[pos]

    def setdefault(self, key, default=None):
        cdef Py_ssize_t j = _zd_pos(self, key)
        if j >= 0:
            return self.sc[j]
        _zd_put(self, key, _zd_score(default))
        return default

    def update(self, *args, **kw):
        if len(args) > 1:
            raise TypeError("update expected at most 1 argument, got %d" % len(args))
        if args:
            _zd_update(self, args[0])
        if kw:
            _zd_update(self, kw)

    def clear(self):
        _tab_clear(&self.tab)
        PyMem_Free(self.sc)
        self.sc = NULL

    def __iter__(self):
        return _tab_iter(self, &self.tab, _zd_item, 0, False)

    def __reversed__(self):
        return iter(list(self)[::-1])

    def keys(self):
        return _tab_view(self, &self.tab, _zd_item, 0)

    def values(self):
        return _tab_view(self, &self.tab, _zd_item, 1)

    def items(self):
        return _tab_view(self, &self.tab, _zd_item, 2)

    def copy(self):
        return type(self)(self)

    def __or__(self, other):
        # as dict's: a plain dict (PyDict_Copy of a subclass)
        if not isinstance(self, ZDict) or not isinstance(other, dict):
            return NotImplemented
        r = dict(self.items())
        r.update(other)
        return r

    def __ror__(self, other):
        if not isinstance(other, dict):
            return NotImplemented
        r = dict(other)
        r.update(self.items())
        return r

    def __ior__(self, other):
        _zd_update(self, other)
        return self

    def __sizeof__(self):
        return dict.__sizeof__(self) + _tab_bytes(&self.tab, 1)

    def __eq__(self, other):
        return _zd_eq(self, other)

    def __ne__(self, other):
        r = _zd_eq(self, other)
        return r if r is NotImplemented else not r

    def __repr__(self):
        return repr(dict(self.items()))

    def __reduce__(self):
        return (type(self), (dict(self.items()),))


cdef Py_ssize_t _ztab_offset():
    cdef ZDict z = ZDict()
    return <char *>&z.tab - <char *><PyObject *>z


cdef Py_ssize_t _zsc_offset():
    cdef ZDict z = ZDict()
    return <char *>&z.sc - <char *><PyObject *>z


ZTAB_OFFSET = _ztab_offset()
ZSC_OFFSET = _zsc_offset()



# ===========================================================================
# Sets (issue 34): SetCore, a set of bytes in an OphTab
# ===========================================================================
# In compiled installs types.containers.SetValue derives from SetCore: the
# members (bytes objects, their hash cached by them) in an OphTab as ZDict's
# (insertion order, 4-byte index slots probed as dict probes, 8-byte entry
# pointers): ~19 bytes a member at 1M members where a set's table took 32
# (2^21 16-byte entries).  SetCore is NOT a set subclass: CPython's set
# algebra (``a & b``, ``set.intersection(a, ...)``, ``set(a)``, ``a == b``
# ...) reads a set subclass's own storage directly, which here would be
# empty, so a silent wrong answer.  As its own type, the set functions see
# it as any iterable (set(a), set().union(a), frozenset(a): correct), and
# the operators it does not define (``&``, ``|``, ``-``, ``<=``) raise
# TypeError.  It has the set methods the server uses (add, discard, remove,
# pop, clear, update, difference_update, intersection, union, difference,
# copy; ==), the algebra's results being plain sets as a set subclass's are.
# The pure SetValue (a set subclass) is the twin; tests/test_setcore.py runs
# random operations through both.  Members are bytes (another type:
# TypeError; a bytes subclass is stored as bytes).  C code goes through
# _containers.pxd (_sc_has, _sc_add, _sc_discard; the RDB writer: _sc_tab
# and _tab_next, with borrowed pointers).  Iteration is in insertion order
# (a set's is its table's: Redis's order is neither, and callers needing
# an order sort).


cdef int _sc_add(SetCore s, object m) except -1:
    if not _hp_bytes_exact(m):
        m = _member_key(m, "set")
    return _btab_add(&s.tab, <PyObject *>m, PyObject_Hash(m))


cdef int _sc_discard(SetCore s, object m) except -1:
    return _btab_discard(&s.tab, m)


cdef int _sc_update(SetCore s, o) except -1:
    cdef PyObject *k
    cdef Py_ssize_t pos = 0
    if isinstance(o, SetCore):
        if o is s:
            return 0
        while _tab_next(&(<SetCore>o).tab, &pos, &k):
            _btab_add(&s.tab, k, PyObject_Hash(<object>k))
        return 0
    if type(o) is list:
        for m in <list>o:
            _sc_add(s, m)
        return 0
    for m in o:
        _sc_add(s, m)
    return 0


cdef object _sc_eq(SetCore a, other):
    cdef PyObject *k
    cdef Py_ssize_t pos = 0
    if not isinstance(other, (SetCore, set, frozenset)):
        return NotImplemented
    if a.tab.used != len(other):
        return False
    while _tab_next(&a.tab, &pos, &k):
        held = <object>k
        if held not in other:
            return False
    return True


cdef inline bint _in_all(m, tuple others) except -1:
    for o in others:
        if m not in o:
            return False
    return True


cdef inline bint _in_any(m, tuple others) except -1:
    for o in others:
        if m in o:
            return True
    return False


cdef tuple _as_containers(tuple others):
    # the others of intersection()/difference() as containers (an iterator
    # or other one-pass iterable: a set of it, as the set methods take them)
    return tuple([o if isinstance(o, (SetCore, set, frozenset, dict)) else set(o) for o in others])


cdef class SetCore:
    """A set of bytes stored in its own table (above; the fields are
    declared in _containers.pxd): the base of types.containers.SetValue in
    compiled installs."""

    def __cinit__(self, *args, **kw):
        self.tab.mask = -1

    def __dealloc__(self):
        _tab_clear(&self.tab)

    def __init__(self, items=()):
        _sc_update(self, items)

    def __len__(self):
        return self.tab.used

    def __contains__(self, m):
        return _sc_has(self, m)

    def __iter__(self):
        return _tab_iter(self, &self.tab, _sc_item, 0, True)

    def add(self, m):
        _sc_add(self, m)

    def discard(self, m):
        _sc_discard(self, m)

    def remove(self, m):
        if not _sc_discard(self, m):
            raise KeyError(m)

    def pop(self):
        cdef Py_ssize_t pos
        return _btab_pop(&self.tab, &pos, "pop from an empty set")

    def clear(self):
        _tab_clear(&self.tab)

    def update(self, *others):
        for o in others:
            _sc_update(self, o)

    def difference_update(self, *others):
        for o in others:
            if o is self:
                _tab_clear(&self.tab)
                continue
            for m in o:
                _sc_discard(self, m)

    def intersection(self, *others):
        """A set of the members in every one of others (a plain set, as a
        set subclass's intersection gives)."""
        cdef tuple os = _as_containers(others)
        return {m for m in self if _in_all(m, os)}

    def difference(self, *others):
        cdef tuple os = _as_containers(others)
        return {m for m in self if not _in_any(m, os)}

    def union(self, *others):
        r = set(self)
        for o in others:
            r.update(o)
        return r

    def copy(self):
        return type(self)(self)

    def __eq__(self, other):
        return _sc_eq(self, other)

    def __ne__(self, other):
        r = _sc_eq(self, other)
        return r if r is NotImplemented else not r

    __hash__ = None

    def __sizeof__(self):
        return object.__sizeof__(self) + _tab_bytes(&self.tab, 0)

    def __repr__(self):
        if not self.tab.used:
            return "%s()" % type(self).__name__
        return "%s(%r)" % (type(self).__name__, set(self))

    def __reduce__(self):
        return (type(self), (list(self),), (self.enc, self._aux))

    def __setstate__(self, state):
        self.enc, self._aux = state


cdef Py_ssize_t _stab_offset():
    cdef SetCore s = SetCore()
    return <char *>&s.tab - <char *><PyObject *>s


STAB_OFFSET = _stab_offset()
