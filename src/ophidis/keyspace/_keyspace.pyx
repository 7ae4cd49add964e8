# cython: language_level=3
"""The keyspace table: a database's key -> value map (``Database.d``) in
compiled installs, where the pure install keeps a dict.

CPython's compact dict with the key inside its entry: each key is one
pymalloc block (the value's reference, the low 32 bits of the key's hash,
the key's length, the key's bytes: 16 + len bytes, where a dict keeps a
24-byte entry and a 33-byte-headed ``bytes`` object a key), a dense array
of entry pointers in insertion order (holes where keys were deleted,
packed away when the table is resized) and an index of 4-byte slots at
most 2/3 full, probed as dict probes (from the 32-bit hash, enough to
rebuild the index without hashing again).  See docs/PERFORMANCE.md, "Issue
34: string memory".

It has the mapping protocol of a dict whose keys are ``bytes`` (a key of
another type is never found; storing one is a TypeError), with dict's
errors and order; iteration makes a new ``bytes`` object for each key.
The compiled bodies and the RDB writer use the C functions of
_keyspace.pxd (``_ks_get``: a borrowed value, ``_ks_set``, ``_ks_pop``,
``_ks_next``: borrowed entries, no reference count written)."""

from collections.abc import MutableMapping

from cpython.bytes cimport PyBytes_Check, PyBytes_FromStringAndSize
from cpython.dict cimport PyDict_Check
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject_RichCompare, Py_EQ
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF
from libc.string cimport memcpy, memset

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH

cdef extern from "Python.h":
    Py_ssize_t PyObject_Hash(object o) except -1
    PyObject *PyDict_GetItemWithError(object d, object k) except? NULL
    bint PyDict_Next(object d, Py_ssize_t *pos, PyObject **k, PyObject **v)


DEF MINSIZE = 8


cdef int _arrays(Py_ssize_t size, int32_t **ix_out, KsEntry ***es_out) except -1:
    # an empty index of size slots (all -1) and room for 2/3 as many entries
    cdef int32_t *ix = <int32_t *>PyMem_Malloc(size * sizeof(int32_t))
    cdef KsEntry **es = <KsEntry **>PyMem_Malloc(((size << 1) // 3) * sizeof(KsEntry *))
    if ix == NULL or es == NULL:
        PyMem_Free(ix)
        PyMem_Free(es)
        raise MemoryError()
    memset(ix, 0xff, size * sizeof(int32_t))
    ix_out[0] = ix
    es_out[0] = es
    return 0


cdef int _alloc(Keyspace t, Py_ssize_t size) except -1:
    # a new empty index of size slots and room for 2/3 as many entries,
    # the current ones packed into it in order (t's arrays replaced)
    cdef Py_ssize_t cap = (size << 1) // 3, i, j = 0
    cdef size_t mask = <size_t>(size - 1), p, perturb
    cdef int32_t *ix
    cdef KsEntry **es
    cdef KsEntry *e
    _arrays(size, &ix, &es)
    for i in range(t.n):
        e = t.ents[i]
        if e == NULL:
            continue
        es[j] = e
        p = e.hash & mask
        perturb = e.hash
        while ix[p] != -1:
            perturb >>= 5
            p = (p * 5 + perturb + 1) & mask
        ix[p] = <int32_t>j
        j += 1
    PyMem_Free(t.index)
    PyMem_Free(t.ents)
    t.index = ix
    t.ents = es
    t.mask = size - 1
    t.cap = cap
    t.n = j
    t.gen += 1
    return 0


cdef int _resize(Keyspace t, Py_ssize_t minsize) except -1:
    # dict's growth: the smallest power of 2 >= minsize (3 x the keys)
    cdef Py_ssize_t size = MINSIZE
    while size < minsize:
        size <<= 1
    if size > (<Py_ssize_t>1 << 31):
        raise MemoryError()
    return _alloc(t, size)


cdef int _ks_insert(Keyspace t, const char *k, Py_ssize_t kn, uint32_t h, object value) except -1:
    # a key known not to be in t
    if kn > <Py_ssize_t>0xFFFFFFFF:
        raise OverflowError("key too long")
    if t.n >= t.cap:
        _resize(t, t.used * 3)
    cdef KsEntry *e = <KsEntry *>PyMem_Malloc(sizeof(KsEntry) + kn)
    if e == NULL:
        raise MemoryError()
    e.hash = h
    e.klen = <uint32_t>kn
    memcpy(e.key, k, kn)
    Py_INCREF(value)
    e.value = <PyObject *>value
    cdef size_t mask = <size_t>t.mask, i = h & mask, perturb = h
    while t.index[i] >= 0:
        perturb >>= 5
        i = (i * 5 + perturb + 1) & mask
    t.index[i] = <int32_t>t.n
    t.ents[t.n] = e
    t.n += 1
    t.used += 1
    t.kbytes += kn
    return 0


cdef int _ks_set(Keyspace t, bytes key, object value) except -1:
    cdef const char *k = _ks_data(key)
    cdef Py_ssize_t kn = _ks_size(key)
    cdef uint32_t h = <uint32_t>_ks_bhash(key)
    cdef Py_ssize_t s = _ks_slot(t, k, kn, h)
    cdef KsEntry *e
    cdef PyObject *old
    if s >= 0:
        e = t.ents[t.index[s]]
        old = e.value
        Py_INCREF(value)
        e.value = <PyObject *>value
        Py_XDECREF(old)
        return 0
    return _ks_insert(t, k, kn, h, value)


cdef int _from_dict(Keyspace t, dict d) except -1:
    # t.update(d) in C (a snapshot's load: the table sized once)
    cdef Py_ssize_t pos = 0
    cdef PyObject *k
    cdef PyObject *v
    if t.used == 0 and len(d) * 3 > (t.mask + 1) * 2:
        _resize(t, len(d) * 3 // 2 + 1)
    while PyDict_Next(d, &pos, &k, &v):
        _check_key(<object>k)
        _ks_set(t, <bytes>k, <object>v)
    return 0


cdef inline object _take(Keyspace t, Py_ssize_t s):
    # the entry of index slot s removed: its value (the reference it held)
    cdef int32_t ix = t.index[s]
    cdef KsEntry *e = t.ents[ix]
    t.index[s] = -2
    t.ents[ix] = NULL
    t.used -= 1
    t.kbytes -= e.klen
    v = <object>e.value
    Py_DECREF(v)            # the entry's reference, now v's
    PyMem_Free(e)
    return v


cdef object _ks_pop(Keyspace t, bytes key):
    cdef Py_ssize_t s = _ks_slot(t, _ks_data(key), _ks_size(key), <uint32_t>_ks_bhash(key))
    if s < 0:
        return None
    return _take(t, s)


cdef inline Py_ssize_t _find(Keyspace t, key) except -2:
    # the index slot of key, -1: not there (a key of another type is never
    # there, but an unhashable one is a TypeError as for a dict)
    if not PyBytes_Check(key):
        PyObject_Hash(key)
        return -1
    return _ks_slot(t, _ks_data(key), _ks_size(key), <uint32_t>_ks_bhash(key))


cdef inline bytes _key(KsEntry *e):
    return PyBytes_FromStringAndSize(e.key, e.klen)


cdef inline int _check_key(key) except -1:
    if not PyBytes_Check(key):
        raise TypeError("keyspace keys are bytes, not %s" % type(key).__name__)
    return 0


cdef class Keyspace:
    """A database's key -> value map (see the module's documentation): a
    dict's mapping protocol over bytes keys."""

    def __cinit__(self, *args, **kw):
        cdef int32_t *ix
        cdef KsEntry **es
        _arrays(MINSIZE, &ix, &es)
        self.index = ix
        self.ents = es
        self.mask = MINSIZE - 1
        self.cap = (MINSIZE * 2) // 3

    def __init__(self, src=(), **kw):
        if src is not None:
            self.update(src, **kw)

    def __dealloc__(self):
        cdef Py_ssize_t i
        cdef KsEntry *e
        cdef KsEntry **es = self.ents
        cdef Py_ssize_t n = self.n
        self.ents = NULL
        self.n = self.used = 0
        if es != NULL:
            for i in range(n):
                e = es[i]
                if e != NULL:
                    Py_XDECREF(e.value)
                    PyMem_Free(e)
            PyMem_Free(es)
        PyMem_Free(self.index)
        self.index = NULL

    # -- lookups --
    def __len__(self):
        return self.used

    def __bool__(self):
        return self.used != 0

    def __contains__(self, key):
        return _find(self, key) >= 0

    def __getitem__(self, key):
        cdef Py_ssize_t s = _find(self, key)
        if s < 0:
            raise KeyError(key)
        return <object>self.ents[self.index[s]].value

    def get(self, key, default=None):
        cdef Py_ssize_t s = _find(self, key)
        if s < 0:
            return default
        return <object>self.ents[self.index[s]].value

    # -- writes --
    def __setitem__(self, key, value):
        _check_key(key)
        _ks_set(self, <bytes>key, value)

    def __delitem__(self, key):
        cdef Py_ssize_t s = _find(self, key)
        if s < 0:
            raise KeyError(key)
        _take(self, s)

    def pop(self, key, *default):
        if len(default) > 1:
            raise TypeError("pop expected at most 2 arguments, got %d" % (len(default) + 1))
        cdef Py_ssize_t s = _find(self, key)
        if s < 0:
            if default:
                return default[0]
            raise KeyError(key)
        return _take(self, s)

    def popitem(self):
        """The last key and its value, removed (dict's LIFO order)."""
        cdef Py_ssize_t i = self.n - 1
        if self.used == 0:
            raise KeyError("popitem(): dictionary is empty")
        while self.ents[i] == NULL:
            i -= 1
        cdef KsEntry *e = self.ents[i]
        k = _key(e)
        cdef Py_ssize_t s = _ks_slot(self, e.key, e.klen, e.hash)
        v = _take(self, s)
        self.n = i              # (as dict: the trailing holes dropped)
        return k, v

    def setdefault(self, key, default=None):
        cdef Py_ssize_t s = _find(self, key)
        if s >= 0:
            return <object>self.ents[self.index[s]].value
        self[key] = default
        return default

    def update(self, other=(), **kw):
        cdef Keyspace o
        cdef KsEntry *e
        cdef Py_ssize_t pos = 0, i = 0
        if isinstance(other, Keyspace):
            o = <Keyspace>other
            if o is self:
                return
            while _ks_next(o, &pos, &e):
                self[_key(e)] = <object>e.value
        elif PyDict_Check(other):
            if type(self) is Keyspace:
                _from_dict(self, <dict>other)
            else:
                for k, v in (<dict>other).items():
                    self[k] = v
        elif hasattr(other, "keys"):
            for k in other.keys():
                self[k] = other[k]
        else:
            for item in other:
                pair = tuple(item) if not isinstance(item, (tuple, list)) else item
                if len(pair) != 2:
                    raise ValueError("dictionary update sequence element #%d has length %d; 2 is required"
                                     % (i, len(pair)))
                self[pair[0]] = pair[1]
                i += 1
        for k, v in kw.items():
            self[k] = v

    def clear(self):
        cdef Py_ssize_t i, n = self.n
        cdef KsEntry **es = self.ents
        cdef int32_t *ix
        cdef KsEntry **nes
        cdef KsEntry *e
        _arrays(MINSIZE, &ix, &nes)
        PyMem_Free(self.index)
        self.index = ix
        self.ents = nes
        self.mask = MINSIZE - 1
        self.cap = (MINSIZE * 2) // 3
        self.n = self.used = self.kbytes = 0
        self.gen += 1
        # the values released once the table is consistent (a value's
        # release may run code)
        for i in range(n):
            e = es[i]
            if e != NULL:
                Py_XDECREF(e.value)
                PyMem_Free(e)
        PyMem_Free(es)

    def copy(self):
        """A new table of the same class holding the same keys and values."""
        cdef Keyspace c
        if type(self) is not Keyspace:
            return type(self)(self)
        c = Keyspace.__new__(Keyspace)
        cdef Py_ssize_t pos = 0
        cdef KsEntry *e
        if self.used * 3 > MINSIZE:
            _resize(c, self.used * 3 // 2 + 1)
        while _ks_next(self, &pos, &e):
            _ks_insert(c, e.key, e.klen, e.hash, <object>e.value)
        return c

    def __copy__(self):
        return self.copy()

    # -- iteration --
    def __iter__(self):
        return _Iter(self, 0, False)

    def __reversed__(self):
        return _Iter(self, 0, True)

    def keys(self):
        return _View(self, 0)

    def values(self):
        return _View(self, 1)

    def items(self):
        return _View(self, 2)

    # -- the rest of dict's protocol --
    def __eq__(self, other):
        if not isinstance(other, Keyspace) and not PyDict_Check(other):
            return NotImplemented
        if len(other) != self.used:
            return False
        cdef Py_ssize_t pos = 0
        cdef KsEntry *e
        cdef PyObject *ov
        while _ks_next(self, &pos, &e):
            k = _key(e)
            v = <object>e.value         # (a reference held while comparing)
            if PyDict_Check(other):
                ov = PyDict_GetItemWithError(other, k)
                if ov == NULL:
                    return False
                o = <object>ov
            else:
                o = other.get(k, _MISSING)
                if o is _MISSING:
                    return False
            if o is not v and not PyObject_RichCompare(v, o, Py_EQ):
                return False
        return True

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    __hash__ = None

    def __or__(self, other):
        if not isinstance(other, Keyspace) and not PyDict_Check(other):
            return NotImplemented
        c = self.copy()
        c.update(other)
        return c

    def __ror__(self, other):
        if not PyDict_Check(other):
            return NotImplemented
        c = dict(other)
        c.update(self.items())
        return c

    def __ior__(self, other):
        self.update(other)
        return self

    def __repr__(self):
        return "{" + ", ".join(["%r: %r" % kv for kv in self.items()]) + "}"

    def __reduce__(self):
        return (type(self), (list(self.items()),))

    def __sizeof__(self):
        # the object, its index and entries array, and the keys' blocks
        return (sizeof(Keyspace) + (self.mask + 1) * sizeof(int32_t) + self.cap * sizeof(KsEntry *)
                + self.used * sizeof(KsEntry) + self.kbytes)

    # -- position-based walks (SCAN, RANDOMKEY, eviction sampling) --
    def slots(self):
        """The positions in insertion order, holes included: keys at
        positions 0 .. slots() - 1 (``key_at``).  A resize packs the holes
        away (``gen`` changes)."""
        return self.n

    @property
    def generation(self):
        """Changes whenever positions move (a resize, clear)."""
        return self.gen

    def key_at(self, Py_ssize_t pos):
        """The key at position pos, or None (a hole, or out of range)."""
        if pos < 0 or pos >= self.n or self.ents[pos] == NULL:
            return None
        return _key(self.ents[pos])

    def scan(self, Py_ssize_t pos, Py_ssize_t count):
        """Up to count keys from position pos on, in order: (the position
        after the last one returned, or 0 at the end; the keys)."""
        cdef KsEntry *e
        out = []
        if pos < 0:
            pos = 0
        while len(out) < count and _ks_next(self, &pos, &e):
            out.append(_key(e))
        return (pos if pos < self.n else 0), out


cdef object _MISSING = object()


cdef class _Iter:
    """An iterator over a Keyspace's keys (kind 0), values (1) or items (2),
    with dict's checks: a size change or a resize during the walk is a
    RuntimeError."""
    cdef Keyspace t
    cdef Py_ssize_t pos, used, gen, left
    cdef int kind
    cdef bint rev

    def __cinit__(self, Keyspace t, int kind, bint rev):
        self.t = t
        self.kind = kind
        self.rev = rev
        self.used = self.left = t.used
        self.gen = t.gen
        self.pos = t.n - 1 if rev else 0

    def __iter__(self):
        return self

    def __length_hint__(self):
        return 0 if self.t is None else self.left

    def __next__(self):
        cdef Keyspace t = self.t
        cdef KsEntry *e = NULL
        if t is None:
            raise StopIteration
        if t.used != self.used:
            self.used = -1
            raise RuntimeError("dictionary changed size during iteration")
        if t.gen != self.gen:
            self.gen = -1
            raise RuntimeError("dictionary keys changed during iteration")
        if self.rev:
            while self.pos >= 0 and self.pos < t.n:
                e = t.ents[self.pos]
                self.pos -= 1
                if e != NULL:
                    break
                e = NULL
        else:
            while self.pos < t.n:
                e = t.ents[self.pos]
                self.pos += 1
                if e != NULL:
                    break
                e = NULL
        if e == NULL:
            self.t = None
            raise StopIteration
        if self.left == 0:
            # a key found that was not there at the start (as dict)
            self.t = None
            raise RuntimeError("dictionary keys changed during iteration")
        self.left -= 1
        if self.kind == 0:
            return _key(e)
        if self.kind == 1:
            return <object>e.value
        return (_key(e), <object>e.value)


cdef class _View:
    """keys(), values(), items() of a Keyspace: live views, as dict's."""
    cdef Keyspace t
    cdef int kind

    def __cinit__(self, Keyspace t, int kind):
        self.t = t
        self.kind = kind

    def __len__(self):
        return self.t.used

    def __iter__(self):
        return _Iter(self.t, self.kind, False)

    def __reversed__(self):
        return _Iter(self.t, self.kind, True)

    def __contains__(self, x):
        cdef Py_ssize_t s
        if self.kind == 0:
            return x in self.t
        if self.kind == 2:
            if not isinstance(x, tuple) or len(x) != 2:
                return False
            s = _find(self.t, x[0])
            if s < 0:
                return False
            v = <object>self.t.ents[self.t.index[s]].value
            return v is x[1] or v == x[1]
        for v in self:
            if v is x or v == x:
                return True
        return False

    def __sub__(self, other):
        return set(self) - set(other)

    def __and__(self, other):
        return set(self) & set(other)

    def __or__(self, other):
        return set(self) | set(other)

    def __repr__(self):
        return "%s(%r)" % (("keyspace_keys", "keyspace_values", "keyspace_items")[self.kind], list(self))


MutableMapping.register(Keyspace)
