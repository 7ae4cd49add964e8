# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled versions of the per-read hot spots of client.py and reader.py.

``run`` is the request loop of ``Client._data_received`` (client.py's
``_run_requests`` is the same loop in Python, used when this module is not
built or is stale, or with OPHIDIS_PURE=1); ``long_header`` is the guard
against multibulk headers hiredis would pre-size (reader.py's regex) and
``ends_with_request`` the read-boundary check of ``RequestReader.taken``.

What the compiled loop saves is the interpreter's work around each command
(about 4,000 of the ~19,000 instructions a pipelined SET at the memory
limit cost in Python): the clock is read with clock_gettime instead of a
boxed float, the histogram slot is computed in C, the switches of client.py
and the fields of the command (CommandCore) are C fields; a restricted ACL
user's key patterns are matched in C (_acl_ok).  Everything a command
does still runs in Python.  Keep the two loops identical in behaviour:
tests/test_speedups.py runs the same traffic through both.
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_Check, PyDict_Contains, PyDict_DelItem, PyDict_GetItem, PyDict_SetItem
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject, PyTypeObject, Py_SIZE
from cpython.ref cimport Py_INCREF
from cpython.set cimport PySet_Add, PySet_Contains
from libc.stdio cimport snprintf
from libc.string cimport memchr, memcmp, memcpy
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

import hiredis
from time import time as _time_time

from ..errors import RedisError

# setup.py passes the SHA-256 of this file; speedups.py compares it with the
# file next to it and ignores a stale build.
SOURCE_HASH = PYX_HASH

cdef extern from *:
    int __builtin_clzll(unsigned long long x) nogil

cdef object _ProtocolError = hiredis.ProtocolError
cdef object _CGETS = type(hiredis.Reader().gets)     # a parser's own gets (no Python code)

# client.py's switches (client._sync keeps them equal to its globals)
cdef bint _server_slow = False
cdef double _slow_check = 0.01
cdef bint _latency_tracking = True
cdef list _ready = []


cdef object _fast_plan = None      # acl.check.fast_plan
cdef object _propagator = None     # replication.propagate.Propagator while a target is attached


def sync(bint server_slow, double slow_check, bint latency_tracking, list ready, fast_plan, propagator):
    global _server_slow, _slow_check, _latency_tracking, _ready, _fast_plan, _propagator
    _server_slow = server_slow
    _slow_check = slow_check
    _latency_tracking = latency_tracking
    _ready = ready
    _fast_plan = fast_plan
    _propagator = propagator


cdef class ClientCore:
    """The fields of net.client.Client that the per-read path and the
    request loop read, as C fields (Client derives from this class when the
    module is built, from a Python class with the same slots otherwise)."""
    cdef public object server, transport, reader, db, resp, authenticated, slow, closing
    cdef public object close_after_reply, blocked, paused_queue, last_time, last_cmd, user
    cdef public object pending_writes, push_buf, pubsub_channels, pubsub_patterns, pubsub_shard
    cdef public object in_script, multi, reply_mode, script_caller, lua_debug


cdef class ServerCore:
    """The fields of server.Server that the compiled commands and the
    script run read, as C fields (Server derives from this class when the
    module is built; SERVER_FIELDS names them)."""
    cdef public object config, maxmemory, min_replicas, monitors, dirty, lastbgsave_ok, is_replica
    cdef public object lua_eval, lua_scripts, functions, cluster, script_busy


SERVER_FIELDS = ("config", "maxmemory", "min_replicas", "monitors", "dirty", "lastbgsave_ok", "is_replica",
                 "lua_eval", "lua_scripts", "functions", "cluster", "script_busy")


cdef class StatsCore:
    """The INFO stats counters the per-read path and the bodies add to, as
    C fields (keyspace.db.Stats derives from this class when the module is
    built, from object otherwise)."""
    cdef public long long keyspace_hits, keyspace_misses, net_input_bytes, net_output_bytes


cdef class DbCore:
    """The fields of keyspace.db.Database the bodies read, as C fields
    (Database derives from this class when the module is built)."""
    cdef public object d, expires, watched_keys, blocking_keys


cdef class SetCore(set):
    """The fields of types.containers.SetValue the bodies read, as C fields
    (SetValue derives from this class when the module is built)."""
    cdef public object enc, _aux


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
    #include <stdint.h>
    typedef struct {
        PyObject_VAR_HEAD          /* ob_size: room for data, in bytes */
        Py_hash_t hash;            /* hash(field), as the bytes object's */
        uint32_t flen;
        uint32_t vlen;
        char data[];               /* the field, then the value */
    } OphPair;

    static PyTypeObject OphPair_Type;

    #define OPH_PAIR_HDR ((Py_ssize_t)offsetof(OphPair, data))
    #define OPH_IS_PAIR(o) (Py_TYPE(o) == &OphPair_Type)
    #define OPH_PF(o) ((const char *)((OphPair *)(o))->data)
    #define OPH_PFN(o) ((Py_ssize_t)((OphPair *)(o))->flen)
    #define OPH_PV(o) ((const char *)((OphPair *)(o))->data + ((OphPair *)(o))->flen)
    #define OPH_PVN(o) ((Py_ssize_t)((OphPair *)(o))->vlen)
    #define OPH_PHASH(o) (((OphPair *)(o))->hash)

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
        .tp_name = "ophidis.net._speedups.HashPair",
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
    bint _hp_is "OPH_IS_PAIR"(PyObject *o) noexcept
    const char *_hp_f "OPH_PF"(PyObject *o) noexcept
    Py_ssize_t _hp_fn "OPH_PFN"(PyObject *o) noexcept
    const char *_hp_v "OPH_PV"(PyObject *o) noexcept
    Py_ssize_t _hp_vn "OPH_PVN"(PyObject *o) noexcept
    Py_hash_t _hp_hash "OPH_PHASH"(PyObject *o) noexcept
    object _hp_new "oph_pair_new"(const char *f, Py_ssize_t fn, Py_hash_t h, const char *v, Py_ssize_t vn)
    bint _hp_setv "oph_pair_setv"(PyObject *p, const char *v, Py_ssize_t vn) noexcept
    int _hp_ready "oph_pair_ready"() except -1
    PyObject *_HP_TYPE "OPH_PAIR_TYPE"
    Py_ssize_t _hp_refcnt "Py_REFCNT"(PyObject *o) noexcept
    PyObject *_hp_dict_get "PyDict_GetItemWithError"(PyObject *d, PyObject *k) except? NULL
    PyObject *_hp_dict_setdefault "PyDict_SetDefault"(PyObject *d, PyObject *k, PyObject *v) except NULL
    bint _hp_dict_next "PyDict_Next"(PyObject *d, Py_ssize_t *pos, PyObject **k, PyObject **v) noexcept
    Py_ssize_t _hp_dict_len "PyDict_GET_SIZE"(PyObject *d) noexcept
    bint _hp_bytes_exact "PyBytes_CheckExact"(object o) noexcept
    Py_ssize_t _HP_HDR "OPH_PAIR_HDR"

_hp_ready()
HashPair = <object>_HP_TYPE
cdef tuple _SET_LIKE = (set, frozenset, type({}.keys()), type({}.items()))
from sys import getsizeof as _getsizeof


cdef inline bytes _hp_field(PyObject *p):
    return PyBytes_FromStringAndSize(_hp_f(p), _hp_fn(p))


cdef inline bytes _hp_value(PyObject *p):
    return PyBytes_FromStringAndSize(_hp_v(p), _hp_vn(p))


cdef inline PyObject *_hc_lookup(HashCore h, key) except? NULL:
    # the entry's (value) pair for key, borrowed; NULL: none
    return _hp_dict_get(<PyObject *>h, <PyObject *>key)


cdef inline bint _hc_set_in_place(PyObject *old, const char *v, Py_ssize_t vn) noexcept:
    # an existing entry's (value) pair takes the value v[:vn] in place when
    # only this entry holds it (as key and value, or as value) and it has
    # the room; False: it does not
    return _hp_refcnt(old) <= 2 and _hp_setv(old, v, vn)


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
    and the dict of bytes -> bytes a hash is, stored as HashPairs (above)."""
    cdef public object ht, _aux

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
        return (type(self), (dict(self.items()),), (self.ht, self._aux))

    def __setstate__(self, state):
        self.ht, self._aux = state


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


cdef class CommandCore:
    """The fields of commands.Command that the request loop uses, as C
    fields (commands.Command derives from this class when the module is
    built, from a Python class with the same slots otherwise)."""
    cdef public object proc
    cdef public int fastpath      # 0: general path; 1: direct; 2: direct, switches re-read after
    cdef public Py_ssize_t amin, amax
    cdef public long long calls
    cdef public double usec
    cdef public list hist
    cdef public Py_ssize_t cluster_key
    cdef public int cbody        # a compiled body (BODIES), 0: none
    # what script_call reads of a command run by redis.call
    cdef public Py_ssize_t arity
    cdef public bint write, may_replicate, noscript, denyoom, blocking
    cdef public dict subcommands


# Cluster mode (client.set_cluster): the fast path runs a command with keys
# only when the slot of its one key is served here (_owned[slot] == 1:
# ours, stable, the cluster ok); _owned is None while that map is being
# recomputed (then every command with keys takes the general path).
cdef bint _cluster = False
cdef object _owned = None
cdef unsigned short _crc16tab[256]


cdef void _crc16_init() noexcept:
    cdef unsigned int i, j, c
    for i in range(256):
        c = i << 8
        for j in range(8):
            c = ((c << 1) ^ 0x1021) if (c & 0x8000) else (c << 1)
        _crc16tab[i] = c & 0xFFFF


_crc16_init()


def sync_cluster(bint on, owned):
    global _cluster, _owned
    _cluster = on
    _owned = owned


cdef inline unsigned int _key_slot(bytes key) noexcept:
    # keyHashSlot: CRC16-XMODEM of the key, or of its {tag}
    cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(key)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(key), s, e
    cdef unsigned int crc = 0
    s = 0
    while s < n and p[s] != 123:
        s += 1
    if s < n:
        e = s + 1
        while e < n and p[e] != 125:
            e += 1
        if e < n and e > s + 1:
            p = p + s + 1
            n = e - s - 1
    for s in range(n):
        crc = ((crc << 8) & 0xFFFF) ^ _crc16tab[((crc >> 8) ^ p[s]) & 0xFF]
    return crc & 0x3FFF


cdef inline bint _cluster_local(CommandCore cmd, list req):
    # the fast path may run cmd in cluster mode
    cdef Py_ssize_t k = cmd.cluster_key
    if k == 0:
        return True
    if k < 0 or _owned is None or k >= len(req):
        return False
    return (<bytes>_owned)[_key_slot(<bytes>req[k])] == 1


cdef inline bint _has_prefix(bytes k, tuple prefixes) noexcept:
    cdef Py_ssize_t n = PyBytes_GET_SIZE(k), m
    cdef bytes p
    for p in prefixes:
        m = PyBytes_GET_SIZE(p)
        if m <= n and memcmp(PyBytes_AS_STRING(k), PyBytes_AS_STRING(p), m) == 0:
            return True
    return False


cdef bint _acl_ok(dict fast, client, CommandCore cmd, list req) except -1:
    # acl.check.fast_allows, compiled: may the fast path run req for this
    # restricted user (fast: user.fast, the plans by command)?
    cdef PyObject *got = PyDict_GetItem(fast, cmd)
    cdef Py_ssize_t argc = len(req), first, lastkey, step, limit, last, i
    cdef tuple spec
    cdef bytes k
    cdef bint star
    if got is NULL:
        plan = _fast_plan(client.user, cmd)
        fast[cmd] = plan
    else:
        plan = <object>got
    if plan is False:
        return False
    for spec in <tuple>plan:
        first = spec[0]
        lastkey = spec[1]
        step = spec[2]
        limit = spec[3]
        star = spec[4] is True
        if lastkey >= 0:
            last = first + lastkey
        elif not limit:
            last = argc + lastkey
        else:
            last = first + ((argc - first) // limit + lastkey)
        if last >= argc or last < first or first >= argc:
            return False
        i = first
        while i <= last:
            k = <bytes>req[i]
            if not ((star and PyBytes_GET_SIZE(k)) or k in <frozenset>spec[5] or _has_prefix(k, <tuple>spec[6])):
                return False
            i += step
    return True


def acl_ok(dict fast, client, cmd, list req):
    """The compiled check of the fast path (acl.check.fast_allows)."""
    return _acl_ok(fast, client, <CommandCore>cmd, req)


def key_slot(bytes key):
    """The hash slot of key (the loop's C version of cluster.slots.key_hash_slot)."""
    return _key_slot(key)


cdef class SlotKeys(dict):
    """cluster.slots.SlotKeys (database 0's dict with its per-slot key
    index) with the index kept in C: a SET of an existing key costs one
    dict lookup more than a plain dict, not a Python call.  The same
    methods and behaviour as the Python class, which documents them."""

    cdef public list by_slot

    def __cinit__(self, *args, **kw):
        self.by_slot = [None] * 16384

    def __init__(self, src=None):
        if src:
            for k, v in src.items():
                self[k] = v

    cdef inline void _index(self, bytes key):
        cdef unsigned int s = _key_slot(key)
        ks = self.by_slot[s]
        if ks is None:
            ks = self.by_slot[s] = {}
        PyDict_SetItem(ks, key, None)

    cdef inline void _forget(self, bytes key):
        cdef unsigned int s = _key_slot(key)
        ks = self.by_slot[s]
        if ks is not None:
            (<dict>ks).pop(key, None)
            if not ks:
                self.by_slot[s] = None

    def __setitem__(self, bytes key, value):
        if not PyDict_Contains(self, key):
            self._index(key)
        PyDict_SetItem(self, key, value)

    def __delitem__(self, bytes key):
        PyDict_DelItem(self, key)
        self._forget(key)

    def pop(self, key, *default):
        if PyDict_Contains(self, key):
            v = dict.pop(self, key)
            self._forget(key)
            return v
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self):
        k, v = dict.popitem(self)
        self._forget(k)
        return k, v

    def setdefault(self, key, default=None):
        if not PyDict_Contains(self, key):
            self[key] = default
        return dict.__getitem__(self, key)

    def update(self, *args, **kw):
        for k, v in dict(*args, **kw).items():
            self[k] = v

    def clear(self):
        dict.clear(self)
        self.by_slot = [None] * 16384

    def count_in_slot(self, int slot):
        ks = self.by_slot[slot]
        return 0 if ks is None else len(ks)

    def keys_in_slot(self, int slot, int count):
        ks = self.by_slot[slot]
        if ks is None or count <= 0:
            return []
        out = []
        for k in reversed(ks):
            out.append(k)
            if len(out) >= count:
                break
        return out


cdef inline double _now() noexcept nogil:
    # time.perf_counter() is CLOCK_MONOTONIC on Linux: the loop's times and
    # the t0 client.py passes in come from the same clock.
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <double>ts.tv_sec + <double>ts.tv_nsec * 1e-9


cdef inline bint _all_bytes(list req):
    # hiredis gives ints, lists, None ... for non-bulk elements of a
    # request; such requests are parsed again by Redis's rules.
    cdef Py_ssize_t i
    for i in range(len(req)):
        if type(req[i]) is not bytes:
            return False
    return True


@cython.cdivision(True)
cdef inline Py_ssize_t _ndigits(Py_ssize_t v) noexcept:
    # v >= 0
    if v < 10:
        return 1
    if v < 100:
        return 2
    cdef Py_ssize_t d = 3
    v //= 1000
    while v:
        v //= 10
        d += 1
    return d


@cython.cdivision(True)
cdef inline char *_put_len(char *p, char kind, Py_ssize_t v) noexcept:
    # "<kind><v>\r\n" (v >= 0)
    p[0] = kind
    if v < 10:
        p[1] = <char>(48 + v)
        p[2] = 13
        p[3] = 10
        return p + 4
    cdef Py_ssize_t d = _ndigits(v), i
    for i in range(d, 0, -1):
        p[i] = <char>(48 + v % 10)
        v //= 10
    p[d + 1] = 13
    p[d + 2] = 10
    return p + d + 3


def bulk_items(items):
    """commands.lists.bulk_items compiled: the RESP array of bulk strings
    of a sequence of bytes (or other buffers), written into one bytes object."""
    cdef list parts = items if type(items) is list else list(items)
    cdef Py_ssize_t n = len(parts), i, ln, total
    cdef char *p
    for i in range(n):
        if not PyBytes_Check(parts[i]):
            parts = [x if PyBytes_Check(x) else bytes(x) for x in parts]
            break
    total = 3 + _ndigits(n)
    for i in range(n):
        ln = PyBytes_GET_SIZE(<bytes>parts[i])
        total += ln + 5 + _ndigits(ln)
    out = PyBytes_FromStringAndSize(NULL, total)
    p = _put_len(PyBytes_AS_STRING(out), 42, n)
    for i in range(n):
        x = <bytes>parts[i]
        ln = PyBytes_GET_SIZE(x)
        p = _put_len(p, 36, ln)
        memcpy(p, PyBytes_AS_STRING(x), ln)
        p[ln] = 13
        p[ln + 1] = 10
        p += ln + 2
    return out


def encode_bytes_argv(list argv):
    """protocol.resp.encode_argv for a list of bytes objects (None when an
    element is anything else: the Python encoder converts those)."""
    for x in argv:
        if not PyBytes_Check(x):
            return None
    return bulk_items(argv)


def long_header(data):
    """True when data holds "*" followed by seven characters of [-0-9]."""
    if type(data) is not bytes:
        data = bytes(data)
    cdef const char *p = PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    cdef Py_ssize_t i = 0, j
    cdef const char *hit
    cdef char ch
    while i < n:
        hit = <const char *>memchr(p + i, 42, n - i)
        if hit == NULL:
            return False
        i = hit - p + 1
        if i + 7 > n:
            return False
        for j in range(i, i + 7):
            ch = p[j]
            if ch != 45 and (ch < 48 or ch > 57):
                break
        else:
            return True
    return False


def suspicious(data):
    """reader.suspicious compiled: a multibulk header of seven characters or
    more of [-0-9], or "*" starting the last line of an unterminated read
    (searched from 8 bytes before its end, Python's rfind start rules)
    followed only by such characters."""
    if type(data) is not bytes:
        data = bytes(data)
    if long_header(data):
        return True
    cdef const char *p = PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), start, j, k
    cdef char ch
    if n >= 2 and p[n - 2] == 13 and p[n - 1] == 10:
        return False
    start = n - 8
    if start < 0:
        start += n
        if start < 0:
            start = 0
    j = n - 1
    while j >= start and p[j] != 42:
        j -= 1
    if j < start:
        return False
    if j != 0 and p[j - 1] != 10:
        return False
    for k in range(j + 1, n):
        ch = p[k]
        if ch != 45 and (ch < 48 or ch > 57):
            return False
    return True


cdef inline Py_ssize_t _ends_with_header(const char *p, Py_ssize_t end, char kind, Py_ssize_t n):
    # the length of the "<kind><n>\r\n" line ending p[:end], or -1
    cdef char buf[32]
    cdef Py_ssize_t hl = _put_len(buf, kind, n) - buf
    if hl > end or memcmp(p + end - hl, buf, hl) != 0:
        return -1
    return hl


def ends_with_request(data, list req):
    """Does data end with the multibulk encoding of req (reader.py's
    _ends_with_request)?"""
    if type(data) is not bytes:
        data = bytes(data)
    cdef const char *p = PyBytes_AS_STRING(data)
    cdef Py_ssize_t end = PyBytes_GET_SIZE(data)
    cdef Py_ssize_t i, la, hl
    for i in range(len(req) - 1, -1, -1):
        a = req[i]
        if type(a) is not bytes:
            return False
        la = PyBytes_GET_SIZE(a)
        if end < la + 2 or p[end - 1] != 10 or p[end - 2] != 13:
            return False
        end -= 2
        if memcmp(p + end - la, PyBytes_AS_STRING(a), la) != 0:
            return False
        end -= la
        hl = _ends_with_header(p, end, 36, la)
        if hl < 0:
            return False
        end -= hl
    return _ends_with_header(p, end, 42, len(req)) >= 0


cdef class _Ctx:
    """What the compiled bodies read of the client, its db and the server,
    loaded once for a run of bodies (nothing but a body runs in between, so
    none of it can change), and what they write, kept here until Python
    code runs next (_flush: the dirty counter, keyspace hits and misses,
    client.last_cmd)."""
    cdef object db, d, ex, wk, bk, last_cmd
    cdef ClientCore client
    cdef ServerCore srv
    cdef long long flags, dirty, hits, misses
    cdef int resp
    cdef bint lazy, valid


cdef int _load(_Ctx x, ClientCore client) except -1:
    x.client = client
    x.srv = client.server
    db = x.db = client.db
    cdef DbCore dc
    if isinstance(db, DbCore):
        dc = <DbCore>db
        d = dc.d
        x.ex = dc.expires
        x.wk = dc.watched_keys
        x.bk = dc.blocking_keys
    else:
        d = db.d
        x.ex = db.expires
        x.wk = db.watched_keys
        x.bk = db.blocking_keys
    x.d = d if PyDict_Check(d) else None
    # the modules' dicts read directly (a module's getattr costs ~250 instructions)
    x.flags = <object>PyDict_GetItem(_notify_vars, "flags")
    x.lazy = <object>PyDict_GetItem(_dbm_vars, "lazy_server_del")
    x.resp = client.resp
    x.valid = True
    return 0


cdef int _flush(_Ctx x) except -1:
    # before any Python code runs (and at the end of run): the bodies'
    # writes made visible, their view of the state dropped
    if x.last_cmd is not None:
        x.client.last_cmd = x.last_cmd
        x.last_cmd = None
    if x.dirty:
        x.srv.dirty += x.dirty
        x.dirty = 0
    if x.hits:
        _stats.keyspace_hits += x.hits
        x.hits = 0
    if x.misses:
        _stats.keyspace_misses += x.misses
        x.misses = 0
    if x.valid:
        x.valid = False
        x.db = x.d = x.ex = x.wk = x.bk = None
    return 0


# -- the read's requests, parsed in C ----------------------------------------------
# A read at a request boundary (hiredis holds nothing) is parsed here while
# its requests are in the canonical multibulk form ("*<n>\r\n" then n times
# "$<len>\r\n<len bytes>\r\n", lengths without sign or leading zero) or, for
# a read of plain inline lines (RequestReader.feed's ``lines`` case), split
# at whitespace as bytes.split() does.  At the first request that is not
# whole and canonical, the rest of the read goes to hiredis and the loop
# goes on with its gets: the requests taken are the ones hiredis would have
# given (tests/test_speedups.py compares them on random input), so what
# RequestReader.taken works out from the request count stays true.

cdef inline bint _ws(char c) noexcept:
    # bytes.split()'s whitespace (and Redis's isspace for inline arguments)
    return c == 32 or 9 <= c <= 13


cdef inline Py_ssize_t _len_line(const char *p, Py_ssize_t i, Py_ssize_t n, Py_ssize_t *out) noexcept:
    # "<digits>\r\n" at i (no sign, no leading zero, at most 9 digits):
    # the position after it, -1 if not there whole
    cdef Py_ssize_t v = 0, j = i
    if j >= n or not (48 <= p[j] <= 57):
        return -1
    if p[j] == 48:
        j += 1
    else:
        while j < n and 48 <= p[j] <= 57 and j - i < 9:
            v = v * 10 + (p[j] - 48)
            j += 1
    if j + 1 >= n or p[j] != 13 or p[j + 1] != 10:
        return -1
    out[0] = v
    return j + 2


cdef class ReadFeed:
    """One read's requests for the request loop (see above)."""
    cdef bytes data
    cdef Py_ssize_t pos
    cdef bint inline
    cdef object rd
    cdef object gets             # hiredis's, once the rest went to it

    cdef object take(self):
        if self.gets is not None:
            return self.gets()
        cdef Py_ssize_t n = PyBytes_GET_SIZE(self.data), pos = self.pos
        if pos >= n:
            return False
        cdef const char *p = PyBytes_AS_STRING(self.data)
        cdef Py_ssize_t end = -1
        if self.inline:
            return self._line(p, n)
        r = _mbulk(p, pos, n, &end)
        if r is not None:
            self.pos = end
            return r
        rest = self.data[pos:] if pos else self.data
        if suspicious(rest):
            # a header hiredis would pre-size: Redis's parser takes the rest
            # (RequestReader.taken's case of a request hiredis refused)
            raise _ProtocolError("handed over to the Python parser")
        h = self.rd.hiredis
        if h is None:
            h = self.rd.new_hiredis()
        h.feed(rest)
        self.gets = h.gets
        return self.gets()

    cdef object _line(self, const char *p, Py_ssize_t n):
        # the next non-empty line's words (the read ends with "\n")
        cdef Py_ssize_t pos = self.pos, nl, i, j
        cdef list argv
        while pos < n:
            nl = <Py_ssize_t>(<const char *>memchr(p + pos, 10, n - pos) - p)
            argv = None
            i = pos
            while True:
                while i < nl and _ws(p[i]):
                    i += 1
                if i >= nl:
                    break
                j = i
                while j < nl and not _ws(p[j]):
                    j += 1
                if argv is None:
                    argv = []
                argv.append(PyBytes_FromStringAndSize(p + i, j - i))
                i = j
            pos = nl + 1
            if argv is not None:
                self.pos = pos
                return argv
        self.pos = pos
        return False


cdef object _mbulk(const char *p, Py_ssize_t pos, Py_ssize_t n, Py_ssize_t *end):
    # the canonical multibulk request at pos, whole, or None
    cdef Py_ssize_t argc, i, q, bl
    if p[pos] != 42:
        return None
    q = _len_line(p, pos + 1, n, &argc)
    if q < 0 or argc == 0 or q + 6 * argc > n:
        return None
    cdef list req = PyList_New(argc)
    for i in range(argc):
        if p[q] != 36:
            return None
        q = _len_line(p, q + 1, n, &bl)
        if q < 0 or q + bl + 2 > n or p[q + bl] != 13 or p[q + bl + 1] != 10:
            return None
        a = PyBytes_FromStringAndSize(p + q, bl)
        Py_INCREF(a)
        PyList_SET_ITEM(req, i, a)
        q += bl + 2
    end[0] = q
    return req


cdef ReadFeed _read_feed(bytes data, rd, bint inline):
    cdef ReadFeed f = ReadFeed.__new__(ReadFeed)
    f.data = data
    f.rd = rd
    f.inline = inline
    return f


def parse_requests(bytes data):
    """The requests the C parser takes off data before it hands over, and
    the position of the hand-over (the test of its agreement with hiredis)."""
    cdef list reqs = []
    cdef Py_ssize_t pos = 0, end = 0, n = PyBytes_GET_SIZE(data)
    while pos < n:
        r = _mbulk(PyBytes_AS_STRING(data), pos, n, &end)
        if r is None:
            break
        reqs.append(r)
        pos = end
    return reqs, pos


cdef Py_ssize_t _inline_max = 0      # protocol.resp.INLINE_LINE_MAX


cdef bint _plain_lines(bytes data) noexcept:
    # RequestReader.feed's case of plain inline lines
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    cdef const char *p = PyBytes_AS_STRING(data)
    return (p[n - 1] == 10 and n < _inline_max and memchr(p, 42, n) == NULL and memchr(p, 34, n) == NULL
            and memchr(p, 39, n) == NULL and memchr(p, 0, n) == NULL)


def inline_requests(bytes data):
    """The requests of a read of plain inline lines, as the C parser takes
    them (None: not such a read); the test of its agreement with reader.py."""
    if not PyBytes_GET_SIZE(data) or not _plain_lines(data):
        return None
    cdef ReadFeed f = _read_feed(data, None, True)
    cdef list reqs = []
    while True:
        r = f.take()
        if r is False:
            return reqs
        reqs.append(r)


def run(ClientCore client, gets, list out, dict table, bint slow, double t0):
    """Run the requests hiredis has ready (see client._run_requests).
    Returns (nreq, last): the number of requests taken off the parser and
    the last one; nreq is ~n when the Python parser must take over after
    n requests (hiredis refused the stream, or the request is not an array
    of bulk strings)."""
    cdef _Ctx x = _Ctx.__new__(_Ctx)
    try:
        return _run(client, gets, out, table, slow, t0, x)
    finally:
        _flush(x)


cdef object _run(ClientCore client, gets, list out, dict table, bint slow, double t0, _Ctx x):
    cdef Py_ssize_t nreq = 0, n
    cdef double t1, dt
    cdef long long us
    cdef int slot
    cdef CommandCore cmd
    cdef bytes name, last_name = None
    last = None
    last_c = None
    fast = client.user.fast
    prop = _propagator
    cdef ServerCore srv = client.server
    dirty0 = None
    # a gets in Python (client._bounded_gets: writes, may close the client)
    # sees the state as the Python loop leaves it
    cdef ReadFeed feed = gets if type(gets) is ReadFeed else None
    cdef bint py_gets = feed is None and type(gets) is not _CGETS
    while True:
        if py_gets:
            _flush(x)
        try:
            req = feed.take() if feed is not None else gets()
        except _ProtocolError:
            return ~nreq, last
        if req is False:
            break
        nreq += 1
        last = req
        if type(req) is list and <list>req and _all_bytes(<list>req):
            # a pipeline repeats its command: the last name's lookup is
            # reused (the table cannot change before the general path runs)
            name = <bytes>(<list>req)[0]
            if last_name is not None and PyBytes_GET_SIZE(name) == PyBytes_GET_SIZE(last_name) \
                    and memcmp(PyBytes_AS_STRING(name), PyBytes_AS_STRING(last_name),
                               PyBytes_GET_SIZE(name)) == 0:
                c = last_c
            else:
                c = table.get(name)
                last_name = name
                last_c = c
            n = len(<list>req)
            if c is not None and not slow and (<CommandCore>c).fastpath \
                    and (<CommandCore>c).amin <= n <= (<CommandCore>c).amax \
                    and (not _cluster or _cluster_local(<CommandCore>c, <list>req)) \
                    and (fast is None or _acl_ok(<dict>fast, client, <CommandCore>c, <list>req)):
                cmd = <CommandCore>c
                # The fast path: no check of processCommand can apply.
                if prop is not None:
                    _flush(x)
                    dirty0 = srv.dirty
                try:
                    r = None
                    if cmd.cbody:
                        if not x.valid:
                            _load(x, client)
                        x.last_cmd = cmd
                        r = _body(cmd.cbody, x, <list>req)
                    if r is None:
                        _flush(x)
                        client.last_cmd = cmd
                        r = cmd.proc(client, req)
                    out.append(r)
                except RedisError as e:
                    _flush(x)
                    client.last_cmd = cmd
                    out.append(client.error_reply(e, cmd))
                except Exception as e:  # never let a command kill the link
                    _flush(x)
                    client.last_cmd = cmd
                    out.append(client.internal_error(e, cmd, req))
                t1 = _now()
                dt = t1 - t0
                t0 = t1
                cmd.calls += 1
                cmd.usec += dt
                if dt >= _slow_check:
                    _flush(x)
                    client.server.slow_call(client, cmd, req, dt)
                if _latency_tracking:
                    us = <long long>(dt * 976562.5)
                    slot = 64 - __builtin_clzll(<unsigned long long>us) if us > 0 else 0
                    cmd.hist[slot] += 1
                if prop is not None:
                    # Server.call's propagation (client._propagate)
                    _flush(x)
                    d = srv.dirty != dirty0
                    if d or prop.forced or prop.rewritten is not None or prop.pending:
                        prop.after_call(client, cmd, req, d)
                if _ready:
                    _flush(x)
                    srv.handle_ready_keys()
                if cmd.fastpath != 2:
                    continue
                # a script ran: it may have changed what the loop read
                if client.blocked or client.close_after_reply or client.paused_queue is not None \
                        or client.closing:
                    break
                slow = client.slow or _server_slow
                fast = client.user.fast
                prop = _propagator
                continue
            _flush(x)
            last_name = None
            r = client.process_request(req)
        else:
            return ~(nreq - 1), last     # Redis's parser takes over (RequestReader.taken)
        if r is not None:
            out.append(r)
        if client.blocked or client.close_after_reply or client.paused_queue is not None or client.closing:
            break
        slow = client.slow or _server_slow
        fast = client.user.fast
        prop = _propagator
        t0 = _now()
    return nreq, last


# -- compiled command bodies ---------------------------------------------------
# The common case of a few commands redis-benchmark's default list runs,
# in C.  Each mirrors the hot path of its Python function (commands/
# strings.py, connection.py), which stays the definition: a body returns
# None for anything but that case (a TTL, a watched key, notifications on,
# another type ...), and the Python function runs.  The bodies of the list
# commands are at the end of the file (they use QuickList's C methods).
# tests/test_speedups.py drives both loops with the same traffic.

cdef dict _notify_vars = None      # keyspace.notify's __dict__ (flags)
cdef dict _dbm_vars = None         # keyspace.db's (lazy_server_del)
cdef StatsCore _stats = None       # keyspace.db.stats
cdef object _SetValue = None       # types.containers.SetValue
cdef object _HashValue = None      # types.containers.HashValue
cdef bytes _EMPTY_ARRAY = b"*0\r\n"
cdef bytes _PONG = b"+PONG\r\n"
cdef bytes _OK = b"+OK\r\n"
cdef bytes _ZERO = b":0\r\n"
cdef bytes _ONE = b":1\r\n"
cdef bytes _NULL_BULK = b"$-1\r\n"
cdef bytes _NULL3 = b"_\r\n"
cdef bytes _HASHTABLE = b"hashtable"
cdef str _LP_VALUE = "hash-max-listpack-value"
cdef str _LP_ENTRIES = "hash-max-listpack-entries"

BODIES = {"ping": 1, "get": 2, "set": 3, "incr": 4, "decr": 5, "lpush": 6, "rpush": 7, "lpop": 8,
          "rpop": 9, "sadd": 10, "hset": 11, "mset": 12, "lrange": 13, "spop": 20, "zadd": 14}


def sync_bodies(notify_mod, dbm_mod, stats, set_type, hash_type):
    global _stats, _SetValue, _HashValue, _notify_vars, _dbm_vars
    _notify_vars = vars(notify_mod)
    _dbm_vars = vars(dbm_mod)
    for d, name in ((_notify_vars, "flags"), (_dbm_vars, "lazy_server_del")):
        if name not in d:
            raise ValueError("sync_bodies: %s is not defined" % name)
    _stats = stats
    if not issubclass(set_type, SetCore) or not issubclass(hash_type, HashCore):
        raise TypeError("sync_bodies: the set and hash types must derive from SetCore and HashCore")
    _SetValue = set_type
    _HashValue = hash_type


def body_code(str fullname, module):
    """The compiled body of a built-in command (0: none)."""
    if module is not None or _stats is None:
        return 0
    return BODIES.get(fullname, 0)


cdef inline bint _ttl(_Ctx x, key):
    # has key a TTL (the bodies leave such keys to the Python functions)
    ex = x.ex
    return bool(ex) and key in ex


cdef inline bint _held(_Ctx x, key):
    # is key watched (WATCH) or waited on (a blocked client)
    wk = x.wk
    if wk and key in wk:
        return True
    bk = x.bk
    return bool(bk) and key in bk


cdef inline bint _watched(_Ctx x, key):
    wk = x.wk
    return bool(wk) and key in wk


cdef inline object _body(int code, _Ctx x, list req):
    if x.d is None:         # a database dict of another class: Python
        return None
    if code == 2:
        return _get(x, req)
    if code == 3:
        return _set(x, req)
    if code == 6:
        return _push(x, req, True)
    if code == 7:
        return _push(x, req, False)
    if code == 8:
        return _pop(x, req, True)
    if code == 9:
        return _pop(x, req, False)
    if code == 10:
        return _sadd(x, req)
    if code == 11:
        return _hset(x, req)
    if code == 12:
        return _mset(x, req)
    if code == 13:
        return _lrange(x, req)
    if code == 14:
        return _zadd(x, req)
    if code == 1:
        return _ping(x, req)
    if code == 20:
        return _spop(x, req)
    if code == 4:
        return _incr(x, req, 1)
    if code == 5:
        return _incr(x, req, -1)
    return None


cdef bint _canonical_ll(bytes v, long long *out) noexcept:
    # v is the canonical decimal form of a number of at most 18 digits
    # (anything else: the Python function's parser decides)
    cdef const char *s = PyBytes_AS_STRING(v)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(v), i = 0
    cdef bint neg = False
    cdef long long acc = 0
    if n and s[0] == 45:
        neg = True
        i = 1
    if i >= n or n - i > 18 or (s[i] == 48 and (n - i > 1 or neg)):
        return False
    while i < n:
        if s[i] < 48 or s[i] > 57:
            return False
        acc = acc * 10 + (s[i] - 48)
        i += 1
    out[0] = -acc if neg else acc
    return True


cdef inline Py_ssize_t _digits(char *buf, unsigned long long u) noexcept:
    # u's decimal digits at the end of buf[24]; returns where they start
    cdef Py_ssize_t k = 24
    while True:
        k -= 1
        buf[k] = <char>(48 + u % 10)
        u //= 10
        if u == 0:
            return k


cdef bytes _int_reply(long long v):
    # b":%d\r\n" % v
    cdef char buf[24]
    cdef Py_ssize_t k = _digits(buf, <unsigned long long>(-v if v < 0 else v))
    if v < 0:
        k -= 1
        buf[k] = 45
    out = PyBytes_FromStringAndSize(NULL, 24 - k + 3)
    cdef char *p = PyBytes_AS_STRING(out)
    p[0] = 58
    memcpy(p + 1, buf + k, 24 - k)
    p[24 - k + 1] = 13
    p[24 - k + 2] = 10
    return out


cdef object _ping(_Ctx x, list req):
    if len(req) != 1:
        return None
    cdef ClientCore c
    if x.resp == 2:
        c = x.client
        if c.pubsub_channels or c.pubsub_patterns or c.pubsub_shard:
            return None
    return _PONG


cdef extern from "Python.h":
    PyObject *_g_type "(PyObject *)Py_TYPE"(PyObject *o)
    char *_g_str "PyBytes_AS_STRING"(PyObject *o)
    Py_ssize_t _g_len "PyBytes_GET_SIZE"(PyObject *o)


cdef object _get(_Ctx x, list req):
    # the value is read through its borrowed pointer: no reference count
    # written (a page of the keyspace not dirtied while a child has it)
    key = req[1]
    cdef PyObject *pv = PyDict_GetItem(x.d, key)
    if pv is NULL:
        # a miss (db.lookup_read), unless a keymiss event is to be sent
        if x.flags:
            return None
        x.misses += 1
        return _NULL_BULK if x.resp == 2 else _NULL3
    if _g_type(pv) != <PyObject *>bytes or _ttl(x, key):
        return None
    x.hits += 1
    cdef Py_ssize_t n = _g_len(pv)
    out = PyBytes_FromStringAndSize(NULL, n + 5 + _ndigits(n))
    cdef char *p = _put_len(PyBytes_AS_STRING(out), 36, n)
    memcpy(p, _g_str(pv), n)
    p[n] = 13
    p[n + 1] = 10
    return out


cdef object _set(_Ctx x, list req):
    if len(req) != 3 or x.flags or x.lazy:
        return None
    key = req[1]
    if _held(x, key):
        return None
    x.d[key] = req[2]
    ex = x.ex
    if ex:
        ex.pop(key, None)
    x.dirty += 1
    return _OK


cdef object _incr(_Ctx x, list req, long long delta):
    if x.flags:
        return None
    d = x.d
    key = req[1]
    cdef PyObject *pv = PyDict_GetItem(d, key)
    if pv is NULL or _g_type(pv) != <PyObject *>bytes or _ttl(x, key) or _watched(x, key):
        return None
    # the canonical decimal form of a number below 10^18 (anything else:
    # Python's rules and errors)
    cdef long long acc
    if not _canonical_ll(<bytes>pv, &acc):
        return None
    acc += delta
    cdef char buf[24]
    cdef unsigned long long u = <unsigned long long>(-acc if acc < 0 else acc)
    cdef Py_ssize_t k = 24
    while True:
        k -= 1
        buf[k] = <char>(48 + u % 10)
        u //= 10
        if u == 0:
            break
    if acc < 0:
        k -= 1
        buf[k] = 45
    new = PyBytes_FromStringAndSize(buf + k, 24 - k)
    d[key] = new
    x.dirty += 1
    out = PyBytes_FromStringAndSize(NULL, 24 - k + 3)
    cdef char *p = PyBytes_AS_STRING(out)
    p[0] = 58
    memcpy(p + 1, buf + k, 24 - k)
    p[24 - k + 1] = 13
    p[24 - k + 2] = 10
    return out



cdef object _sadd(_Ctx x, list req):
    # sets.sadd: one member into a hashtable-encoded set
    if len(req) != 3 or x.flags:
        return None
    key = req[1]
    cdef PyObject *pv = PyDict_GetItem(x.d, key)
    if pv is NULL or _g_type(pv) != <PyObject *>_SetValue or _ttl(x, key):
        return None
    cdef SetCore s = <SetCore>pv
    if s._aux is not None or s.enc is not _HASHTABLE and s.enc != _HASHTABLE:
        return None
    m = req[2]
    if PySet_Contains(s, m):
        return _ZERO
    if _watched(x, key):
        return None
    PySet_Add(s, m)
    x.dirty += 1
    return _ONE


cdef object _hset(_Ctx x, list req):
    # hashes.hset: one field of an existing hash, no conversion
    if len(req) != 4 or x.flags:
        return None
    key = req[1]
    cdef PyObject *pv = PyDict_GetItem(x.d, key)
    if pv is NULL or _g_type(pv) != <PyObject *>_HashValue or _ttl(x, key) or _watched(x, key):
        return None
    cdef HashCore h = <HashCore>pv
    if h._aux is not None:
        return None
    cdef bytes f = <bytes>req[2], v = <bytes>req[3]
    cdef PyObject *old = _hc_lookup(h, f)
    cdef bint known = old != NULL
    if not h.ht:
        # listpack: the body only when no conversion to hashtable is due
        cfg = x.srv.config.values
        lim = cfg[_LP_VALUE]
        if PyBytes_GET_SIZE(f) > lim or PyBytes_GET_SIZE(v) > lim:
            return None
        # (an update too converts a hash over the limit: hashTypeSet)
        if len(h) + (0 if known else 1) > cfg[_LP_ENTRIES]:
            return None
    # an update in place when _hc_put would do it (no new pair made first)
    if not (known and _hc_set_in_place(old, PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v))):
        _hc_set(h, f, v)
    x.dirty += 1
    return _ZERO if known else _ONE


cdef object _mset(_Ctx x, list req):
    cdef Py_ssize_t n = len(req), i
    if not (n & 1) or x.flags:
        return None
    d = x.d
    bk = x.bk
    wk = x.wk
    if bk or wk:
        for i in range(1, n, 2):
            key = req[i]
            if (bk and key in bk) or (wk and key in wk):
                return None
    ex = x.ex
    for i in range(1, n, 2):
        key = req[i]
        d[key] = req[i + 1]
        if ex:
            ex.pop(key, None)
    x.dirty += (n - 1) >> 1
    return _OK

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

from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.pyport cimport PY_SSIZE_T_MAX
from libc.string cimport memmove

cdef enum:
    _QL_NODE = 8192
    _QL_MINCAP = 64

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


cdef inline Py_ssize_t _ql_fwd(const char *p) noexcept nogil:
    # length of the element whose entry starts at p
    cdef Py_ssize_t n
    cdef unsigned char b = <unsigned char>p[0]
    if b < 128:
        return b
    memcpy(&n, p + 1, 8)
    return n


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

    cdef _qlnode *nodes
    cdef Py_ssize_t head, nlen, ncap     # nodes[head:head + nlen] are in use
    cdef Py_ssize_t size
    cdef unsigned long long version
    cdef public bint quick

    def __cinit__(self, *args, **kw):
        self.nodes = NULL
        self.head = self.nlen = self.ncap = self.size = 0
        self.version = 0
        self.quick = True

    def __init__(self, items=()):
        if self.size:
            self.clear()
        self.quick = True
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
        _ql_cut(nd, p, _ql_esz(_ql_fwd(nd.buf + p)))
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
        self.version += 1
        return 0

    def __setitem__(self, Py_ssize_t i, x):
        cdef bytes b = _ql_bytes(x)
        cdef Py_ssize_t j, k, p, n = PyBytes_GET_SIZE(b), old
        i = self._norm(i)
        k = self._locate(i, &j)
        cdef _qlnode *nd = self.nodes + self.head + k
        p = _ql_entry(nd, j)
        old = _ql_esz(_ql_fwd(nd.buf + p))
        if old == _ql_esz(n):
            _ql_put(nd.buf + p, PyBytes_AS_STRING(b), n)
            self.version += 1
            return
        if nd.count == 1:
            _ql_cut(nd, p, old)
            p = _ql_gap(nd, nd.off, _ql_esz(n))
            _ql_put(nd.buf + p, PyBytes_AS_STRING(b), n)
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

# ---------------------------------------------------------------------------------------
# Scripting: redis.call's bridge (scripting/engine.py's script_call is the pure twin;
# tests/test_speedups_scripting.py runs the same scripts through both).
# ---------------------------------------------------------------------------------------

cdef class EngineCore:
    """The fields of scripting.engine.LuaEngine the compiled run reads and
    writes, as C fields (LuaEngine derives from this class when the module
    is built)."""
    cdef public object server, client, ctx, ldb, _link


cdef class ScriptCore:
    """The fields of commands.scripting.Script, as C fields (Script derives
    from this class when the module is built)."""
    cdef public object sha, body, fn, flags, compat


cdef class FunctionCore:
    """The fields of commands.scripting.Function, as C fields (Function
    derives from this class when the module is built)."""
    cdef public object name, lib, fn, desc, flags


cdef class RunCtx:
    """scripting.engine.RunCtx with C fields (the same fields and
    constructor; engine.RunCtx is this class when the module is built)."""
    cdef public object caller, name, argv, repl_flags
    cdef public double start, last_poll, threshold
    cdef public bint eval_mode, readonly, write_dirty, allow_oom, oom_at_start, killed, timedout, cross_slot
    cdef public Py_ssize_t slot

    def __init__(self, caller, name, eval_mode, readonly, allow_oom, argv):
        _ctx_init(self, caller, name, eval_mode, readonly, allow_oom, argv)


cdef RunCtx _ctx_init(RunCtx self, caller, name, bint eval_mode, bint readonly, bint allow_oom, argv):
    self.caller = caller
    self.name = name
    self.start = _now()     # time.monotonic's clock (CLOCK_MONOTONIC)
    self.last_poll = 0.0
    self.eval_mode = eval_mode
    self.readonly = readonly
    self.allow_oom = allow_oom
    self.write_dirty = False
    self.oom_at_start = False
    self.killed = False
    self.timedout = False
    self.repl_flags = 3
    self.argv = argv
    self.threshold = 1e9
    self.cross_slot = True
    self.slot = -1
    return self


cdef dict _s_table = {}
cdef object _s_pure = None        # engine.script_call
cdef object _s_pure_reply = None  # engine.reply_value
cdef bytes _s_oom = b""           # errors.OOM.msg


cdef object _s_pure_run = None    # engine.LuaEngine.run
cdef dict _s_db_vars = None       # keyspace.db's globals (its _time: the script's frozen clock)
cdef object _s_resp_int = None    # engine._resp_int


def script_setup(dict table, pure, pure_reply, bytes oom, pure_run, db, resp_int):
    """engine.py hands over what the bridge uses (commands.TABLE, its pure
    twins, OOM's text, the clock of RunCtx.start, keyspace.db, the integer
    reply of a Lua number)."""
    global _s_table, _s_pure, _s_pure_reply, _s_oom, _s_pure_run, _s_db_vars, _s_resp_int
    _s_table = table
    _s_pure = pure
    _s_pure_reply = pure_reply
    _s_pure_run = pure_run
    if "_time" not in vars(db):
        raise ValueError("script_setup: keyspace.db has no _time")
    _s_db_vars = vars(db)
    _s_resp_int = resp_int
    _s_oom = oom


cdef inline bint _s_all_bytes(list args):
    cdef Py_ssize_t i
    for i in range(len(args)):
        if type(args[i]) is not bytes:
            return False
    return True


cdef object _s_reply(eng, bytes r):
    # engine.reply_value, compiled
    cdef const char *p = PyBytes_AS_STRING(r)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(r)
    cdef const char *nl
    cdef char b0 = p[0] if n else 0
    if b0 == 58:        # ':'
        return 0, int(r[1:n - 2])
    if b0 == 36:        # '$'
        if n > 1 and p[1] == 45:
            return 0, False
        nl = <const char *>memchr(p, 10, n)
        if nl != NULL:
            return 0, PyBytes_FromStringAndSize(nl + 1, n - 2 - (nl + 1 - p))
    elif b0 == 43:      # '+'
        return 2, PyBytes_FromStringAndSize(p + 1, n - 3)
    return _s_pure_reply(eng, r)    # errors, aggregates, RESP3 types


cdef class ScriptBridge:
    """redis.call (raise_ true) or redis.pcall bound to its engine:
    LuaEngine._redis_call / _redis_pcall compiled.  lua_functions makes it
    the upvalue of a Lua C function (_lc_call: no lupa conversion); where
    the Lua C API cannot be had, lupa calls the bridge itself (__call__)."""
    cdef object eng
    cdef bint raise_
    cdef object pending     # a reply only Python holds as a Lua value (take)
    cdef object link        # the LuaLink whose C function calls this bridge

    def __init__(self, eng, bint raise_):
        self.eng = eng
        self.raise_ = raise_

    def take(self):
        v = self.pending
        self.pending = None
        return v

    def __call__(self, *args):
        eng = self.eng
        r = _script_call(eng, list(args), False)
        k = (<tuple>r)[0]
        if k == 0:
            return (<tuple>r)[1]
        if k == 2 and (<tuple>r)[1] == b"OK":
            pool = <list>eng._ok_pool
            if pool:
                return pool.pop()
        return eng._call_failed(r, self.raise_)


cdef object _script_call(eng, list argv, bint raw):
    """engine.script_call compiled: the same checks and replies; while the
    fast path's _SERVER_SLOW is off (no stale replica link, no MISCONF, no
    min-replicas, not a replica), the script's client's user is unrestricted,
    the server is not a cluster node and no debugger runs, the checks of
    LuaEngine._run_call that cannot apply are skipped and the call and its
    reply conversion run here.  argv: the arguments as Lua gave them."""
    cdef EngineCore e = <EngineCore?>eng
    cdef ServerCore srv
    c = e.ctx
    if c is None or type(c) is not RunCtx or e.ldb is not None:
        return _s_pure(eng, argv)
    srv = e.server
    sc = e.client
    return _s_run_call(eng, <RunCtx>c, srv, sc, srv.cluster is None and sc.user.unrestricted, argv, raw)


cdef object _s_run_call(eng, RunCtx ctx, ServerCore srv, ClientCore sc, bint plain, list argv, bint raw):
    # _script_call's steps once the run's context is known (plain: not a
    # cluster node, an unrestricted user)
    cdef Py_ssize_t n, a
    cdef CommandCore cc
    cdef bint write
    if not argv or not _s_all_bytes(argv):
        return _s_pure(eng, argv)
    if ctx.timedout or _now() - ctx.start > ctx.threshold:
        return _s_pure(eng, argv)
    name = <bytes>argv[0]
    cmd = _s_table.get(name)
    if cmd is None:
        cmd = _s_table.get(name.lower())
    n = len(argv)
    if cmd is None:
        return _s_pure(eng, argv)
    cc = <CommandCore>cmd
    if cc.subcommands and n > 1:
        return _s_pure(eng, argv)
    a = cc.arity
    if (a > 0 and a != n) or n < -a:
        return eng._reject(cmd, b"ERR Wrong number of args calling Redis command from script")
    if cc.noscript and not srv.script_disable_deny_script:
        return eng._reject(cmd, b"ERR This Redis command is not allowed from script")
    if _server_slow or not plain:
        return eng._run_call(cmd, argv)
    write = cc.write
    if write or cc.may_replicate:
        if ctx.readonly:
            return eng._reject(cmd, b"ERR Write commands are not allowed from read-only scripts.")
    if (ctx.oom_at_start and cc.denyoom and not ctx.allow_oom and not ctx.write_dirty
            and srv.maxmemory):
        return eng._reject(cmd, _s_oom)
    if write:
        ctx.write_dirty = True
    try:
        if _propagator is not None or cc.blocking or sc.reply_mode:
            r = srv.call(sc, cmd, argv)
        else:
            r = _s_call(srv, sc, cc, argv)
    except Exception as e:
        return 3, ("ERR internal error: %s" % e).encode()
    if r is None:
        return 0, None
    if raw:
        return 4, r
    return _s_reply(eng, <bytes>r)


cdef object _s_call(srv, ClientCore sc, CommandCore cmd, list argv):
    # Server.call (server/dispatch.py) for a script's command when only its
    # accounting applies: no MONITOR (_server_slow is off), no propagation
    # target, not a replica, CLIENT REPLY on, a command that does not block.
    cdef double t0, dt
    cdef long long us
    cdef int slot
    cdef _Ctx x
    sc.last_cmd = cmd
    t0 = _now()
    try:
        r = None
        if cmd.cbody:
            x = _Ctx.__new__(_Ctx)
            _load(x, sc)
            x.last_cmd = cmd
            try:
                r = _body(cmd.cbody, x, argv)
            finally:
                _flush(x)
        if r is None:
            r = cmd.proc(sc, argv)
    except RedisError as e:
        r = sc.error_reply(e, cmd)
    except Exception as e:
        r = sc.internal_error(e, cmd, argv)
    dt = _now() - t0
    blocked = sc.blocked
    if not blocked:
        cmd.calls += 1
    elif sc.bstate is not None:
        sc.bstate.duration = dt
    cmd.usec += dt
    if dt >= _slow_check:
        srv.slow_call(sc, cmd, argv, dt)
    if _latency_tracking and not blocked:
        us = <long long>(dt * 976562.5)
        slot = 64 - __builtin_clzll(<unsigned long long>us) if us > 0 else 0
        cmd.hist[slot] += 1
    return r


# ---------------------------------------------------------------------------
# redis.call / redis.pcall as Lua C functions
# ---------------------------------------------------------------------------
# lupa's crossing from Lua into a Python callable (argument tuple, result
# conversion, its error plumbing) costs more than the command itself.  lupa
# links the Lua 5.1 C API into its lua51 module and exports it: the few
# functions below are looked up there at run time (lua_functions), and
# _lc_call, registered as a C closure whose upvalues are its ScriptBridge
# and the bridge's take (lupa-wrapped), reads the arguments, runs
# _script_call and pushes the reply itself.  Being a C function, it keeps
# the caller's frame in "return redis.call(...)" (error positions), as
# lupa's as_function closures do.

cdef extern from "dlfcn.h":
    void *dlopen(const char *filename, int flag) nogil
    void *dlsym(void *handle, const char *symbol) nogil
    int RTLD_NOW
    int RTLD_NOLOAD

from libc.math cimport isinf as _lc_isinf
from libc.stdlib cimport strtoll as _lc_strtoll

ctypedef int (*_lua_CF)(void *L) noexcept nogil
ctypedef int (*_lf_i)(void *L) noexcept nogil
ctypedef int (*_lf_ii)(void *L, int i) noexcept nogil
ctypedef void (*_lf_vi)(void *L, int i) noexcept nogil
ctypedef void (*_lf_vii)(void *L, int a, int b) noexcept nogil
ctypedef void (*_lf_v)(void *L) noexcept nogil
ctypedef const char *(*_lf_tolstring)(void *L, int i, size_t *n) noexcept nogil
ctypedef double (*_lf_tonumber)(void *L, int i) noexcept nogil
ctypedef void *(*_lf_touserdata)(void *L, int i) noexcept nogil
ctypedef void (*_lf_pushlstring)(void *L, const char *s, size_t n) noexcept nogil
ctypedef void (*_lf_pushnumber)(void *L, double d) noexcept nogil
ctypedef void (*_lf_field)(void *L, int i, const char *k) noexcept nogil
ctypedef void (*_lf_pushcclosure)(void *L, _lua_CF f, int n) noexcept nogil
ctypedef void (*_lf_pushlud)(void *L, void *p) noexcept nogil

cdef _lf_i _L_gettop = NULL
cdef _lf_i _L_error = NULL
cdef _lf_ii _L_type = NULL
cdef _lf_ii _L_checkstack = NULL
cdef _lf_vi _L_settop = NULL
cdef _lf_vi _L_pushvalue = NULL
cdef _lf_vi _L_pushboolean = NULL
cdef _lf_vii _L_createtable = NULL
cdef _lf_vii _L_rawseti = NULL
cdef _lf_vii _L_call = NULL
cdef _lf_v _L_pushnil = NULL
cdef _lf_tolstring _L_tolstring = NULL
cdef _lf_tonumber _L_tonumber = NULL
cdef _lf_touserdata _L_touserdata = NULL
cdef _lf_pushlstring _L_pushlstring = NULL
cdef _lf_pushnumber _L_pushnumber = NULL
cdef _lf_field _L_setfield = NULL
cdef _lf_field _L_getfield = NULL
cdef _lf_pushcclosure _L_pushcclosure = NULL
cdef _lf_pushlud _L_pushlightuserdata = NULL
cdef int _lc_state = 0       # 0 not tried, 1 the API is there, -1 it is not

cdef enum:
    # Lua 5.1's pseudo-indices (the globals, a C closure's upvalues), types
    _LUA_REGISTRY = -10000
    _LUA_GLOBALS = -10002
    _LUA_UP1 = -10003
    _LUA_UP2 = -10004
    _LUA_TNUMBER = 3
    _LUA_TSTRING = 4


ctypedef void *(*_lf_newthread)(void *L) noexcept nogil
ctypedef int (*_lf_pcall)(void *L, int nargs, int nres, int errf) noexcept nogil

cdef _lf_vii _L_rawgeti = NULL
cdef _lf_ii _L_ref = NULL
cdef _lf_vii _L_unref = NULL
cdef _lf_ii _L_toboolean = NULL
cdef _lf_newthread _L_newthread = NULL
cdef _lf_pcall _L_pcall = NULL


cdef bint _lc_load(bytes path):
    # The functions above from lupa's module (already loaded: RTLD_NOLOAD)
    global _lc_state
    cdef void *h
    cdef void *f
    cdef void **slots[26]
    cdef int i
    if _lc_state:
        return _lc_state > 0
    _lc_state = -1
    h = dlopen(path, RTLD_NOW | RTLD_NOLOAD)
    if h == NULL:
        return False
    names = [b"lua_gettop", b"lua_error", b"lua_type", b"lua_checkstack", b"lua_settop", b"lua_pushvalue",
             b"lua_pushboolean", b"lua_createtable", b"lua_rawseti", b"lua_call", b"lua_pushnil",
             b"lua_tolstring", b"lua_tonumber", b"lua_touserdata", b"lua_pushlstring", b"lua_pushnumber",
             b"lua_setfield", b"lua_getfield", b"lua_pushcclosure", b"lua_pushlightuserdata",
             b"lua_rawgeti", b"luaL_ref", b"luaL_unref", b"lua_toboolean", b"lua_newthread", b"lua_pcall"]
    slots[0] = <void **>&_L_gettop
    slots[1] = <void **>&_L_error
    slots[2] = <void **>&_L_type
    slots[3] = <void **>&_L_checkstack
    slots[4] = <void **>&_L_settop
    slots[5] = <void **>&_L_pushvalue
    slots[6] = <void **>&_L_pushboolean
    slots[7] = <void **>&_L_createtable
    slots[8] = <void **>&_L_rawseti
    slots[9] = <void **>&_L_call
    slots[10] = <void **>&_L_pushnil
    slots[11] = <void **>&_L_tolstring
    slots[12] = <void **>&_L_tonumber
    slots[13] = <void **>&_L_touserdata
    slots[14] = <void **>&_L_pushlstring
    slots[15] = <void **>&_L_pushnumber
    slots[16] = <void **>&_L_setfield
    slots[17] = <void **>&_L_getfield
    slots[18] = <void **>&_L_pushcclosure
    slots[19] = <void **>&_L_pushlightuserdata
    slots[20] = <void **>&_L_rawgeti
    slots[21] = <void **>&_L_ref
    slots[22] = <void **>&_L_unref
    slots[23] = <void **>&_L_toboolean
    slots[24] = <void **>&_L_newthread
    slots[25] = <void **>&_L_pcall
    for i in range(26):
        f = dlsym(h, <bytes>names[i])
        if f == NULL:
            for i in range(26):
                slots[i][0] = NULL
            return False
        slots[i][0] = f
    _lc_state = 1
    return True


_LC_THREAD = (b"local co = coroutine.create(function() coroutine.yield(tostring(coroutine.running())) end) "
              b"local _, s = coroutine.resume(co) return co, s")


cdef class LuaLink:
    """The compiled layer's direct use of a LuaRuntime: redis.call and
    redis.pcall as Lua C functions (call, pcall) and, once bound to the
    sandbox's run_t and encode_reply, a script run without lupa's call
    (_lc_exec).  T is a thread of the runtime anchored in its registry: it
    shares the globals, and C code can run functions on it."""
    cdef void *T
    cdef object lua
    cdef readonly object call
    cdef readonly object pcall
    cdef int run_ref             # the sandbox's run_prep (0: not bound)
    cdef int errh_ref            # its err_handler
    cdef int einfo_ref           # its error_info
    cdef int enc_ref             # its encode_reply
    cdef bint eval_mode
    cdef dict refs              # id(Lua function) -> (the function, its registry ref)
    cdef object last_fn         # the function fn_ref was last asked for (in refs) ...
    cdef int last_ref           # ... and its ref
    # while script_run runs a script through the link: what _script_call
    # would look up on the engine for each redis.call (none of it changes
    # while a script runs)
    cdef object run_ctx
    cdef ServerCore run_srv
    cdef object run_sc
    cdef bint run_plain
    # the command names redis.call was given last (argv[0] as bytes whose
    # hash is known), by the address of the Lua string
    cdef const char *name_at[8]
    cdef list names
    cdef object count_error

    def bind(self, prep, err_handler, error_info, encode, count_error, bint eval_mode):
        """The sandbox's run_prep, err_handler, error_info and encode_reply
        (the steps of its run_t, see _lc_exec), engine._count_error, and
        whether scripts get KEYS and ARGV as globals (EVAL) or arguments."""
        self.run_ref = self._ref(prep)
        self.errh_ref = self._ref(err_handler)
        self.einfo_ref = self._ref(error_info)
        self.enc_ref = self._ref(encode)
        self.count_error = count_error
        self.eval_mode = eval_mode

    cdef int _ref(self, v) except? -1:
        # a registry reference to a Lua value lupa holds (through a global)
        g = self.lua.globals()
        g[b"__ophidis_v"] = v
        _L_getfield(self.T, _LUA_GLOBALS, b"__ophidis_v")
        g[b"__ophidis_v"] = None
        return _L_ref(self.T, _LUA_REGISTRY)

    cdef int fn_ref(self, fn) except? -1:
        cdef int r
        if fn is self.last_fn:
            return self.last_ref
        e = self.refs.get(id(fn))
        if e is not None:
            return <int>(<tuple>e)[1]
        if len(self.refs) >= 4096:      # scripts come and go (SCRIPT FLUSH, FUNCTION LOAD REPLACE)
            for e in self.refs.values():
                _L_unref(self.T, _LUA_REGISTRY, <int>(<tuple>e)[1])
            self.refs.clear()
            self.last_fn = None
        r = self._ref(fn)
        self.refs[id(fn)] = (fn, r)
        self.last_fn = fn
        self.last_ref = r
        return r


def lua_functions(lua, bytes so_path, call, pcall):
    """A LuaLink for the LuaRuntime lua whose redis.call and redis.pcall
    are the two ScriptBridges, or None where the C API of lupa's module at
    so_path cannot be had.  The lua_State comes from a suspended coroutine
    (it shares the runtime's globals): tostring(thread) is its address."""
    cdef void *L
    cdef LuaLink link
    if not _lc_load(so_path):
        return None
    if type(call) is not ScriptBridge or type(pcall) is not ScriptBridge:
        return None
    co, s = lua.execute(_LC_THREAD)
    if type(s) is not bytes or not (<bytes>s).startswith(b"thread: 0x"):
        return None
    L = <void *><size_t>int((<bytes>s)[10:], 16)
    link = LuaLink.__new__(LuaLink)
    link.lua = lua
    link.refs = {}
    link.names = [b""] * 8
    link.T = _L_newthread(L)
    _L_ref(L, _LUA_REGISTRY)        # anchors the thread (popped)
    g = lua.globals()
    out = []
    for b in (call, pcall):
        g[b"__ophidis_v"] = (<ScriptBridge>b).take
        lua.execute(b"__ophidis_v = python.as_function(__ophidis_v)")
        (<ScriptBridge>b).link = link
        _L_pushlightuserdata(L, <void *>b)
        _L_getfield(L, _LUA_GLOBALS, b"__ophidis_v")
        _L_pushcclosure(L, _lc_call, 2)
        _L_setfield(L, _LUA_GLOBALS, b"__ophidis_v")
        out.append(g[b"__ophidis_v"])
    g[b"__ophidis_v"] = None
    del co
    link.call, link.pcall = out
    return link


cdef int _lc_call(void *L) noexcept nogil:
    cdef int r
    if _L_type(L, _LUA_UP1) != 2:      # not the light userdata lua_functions set (never from scripts)
        return 0
    with gil:
        r = _lc_body(L)
    if r == -1:             # the error table on top: raise it (redis.call)
        return _L_error(L)
    if r == -2:             # a reply only Python holds as a Lua value
        _L_pushvalue(L, _LUA_UP2)
        _L_call(L, 0, 1)
        return 1
    return r


cdef int _lc_body(void *L) noexcept:
    cdef ScriptBridge b = <ScriptBridge>(<object><PyObject *>_L_touserdata(L, _LUA_UP1))
    cdef LuaLink link = <LuaLink>b.link
    cdef int n, i
    try:
        n = _L_gettop(L)
        argv = PyList_New(n)
        for i in range(n):
            a = _lc_name(L, link) if i == 0 else _lc_arg(L, i + 1)
            Py_INCREF(a)
            PyList_SET_ITEM(argv, i, a)
        if link.run_ctx is not None:
            r = _s_run_call(b.eng, <RunCtx>link.run_ctx, link.run_srv, link.run_sc, link.run_plain, argv, True)
        else:
            r = _script_call(b.eng, argv, True)
        return _lc_push(L, b, r)
    except BaseException as e:
        try:
            m = ("ERR internal error: %s" % e).encode()
        except BaseException:
            m = b"ERR internal error"
        _L_createtable(L, 0, 1)
        _L_pushlstring(L, PyBytes_AS_STRING(m), PyBytes_GET_SIZE(m))
        _L_setfield(L, -2, b"err")
        return -1 if b.raise_ else 1


cdef object _lc_name(void *L, LuaLink link):
    # the first argument (the command's name): the bytes of the last call
    # with the same Lua string where its text is the same
    cdef size_t ln
    cdef const char *p
    cdef Py_ssize_t k
    if _L_type(L, 1) != _LUA_TSTRING:
        return _lc_arg(L, 1)
    p = _L_tolstring(L, 1, &ln)
    k = (<size_t>p >> 4) & 7
    b = <bytes>link.names[k]
    if link.name_at[k] == p and <size_t>PyBytes_GET_SIZE(b) == ln and memcmp(PyBytes_AS_STRING(b), p, ln) == 0:
        return b
    b = PyBytes_FromStringAndSize(p, ln)
    hash(b)
    link.names[k] = b
    link.name_at[k] = p
    return b


cdef inline bytes _lc_str(void *L, int i):
    # the string at i as bytes
    cdef size_t ln
    cdef const char *p = _L_tolstring(L, i, &ln)
    return PyBytes_FromStringAndSize(p, ln)


cdef object _lc_arg(void *L, int i):
    # An argument as lupa gives it and LuaEngine._argv makes it: a string's
    # bytes; a number as "%d" (integral, below 10**15) or "%.17g".  Anything
    # else is None: script_call answers it in its own order of checks.
    cdef double d
    cdef int t = _L_type(L, i)
    cdef char buf[40]
    cdef int k
    if t == _LUA_TSTRING:
        return _lc_str(L, i)
    if t == _LUA_TNUMBER:
        d = _L_tonumber(L, i)
        if d != d:
            return b"nan"
        if _lc_isinf(d):
            return b"inf" if d > 0 else b"-inf"
        if -1e15 < d < 1e15 and d == <double><long long>d:
            k = snprintf(buf, 40, "%lld", <long long>d)
        else:
            k = snprintf(buf, 40, "%.17g", d)
        return PyBytes_FromStringAndSize(buf, k)
    return None


cdef int _lc_push(void *L, ScriptBridge b, r) except -3:
    # script_call's (kind, value) onto the Lua stack: 1 (a value pushed), -1
    # (an error table pushed to raise), -2 (b.pending holds the value)
    cdef int base
    cdef const char *p
    cdef const char *end
    k = (<tuple>r)[0]
    v = (<tuple>r)[1]
    if k == 4:      # a reply in RESP: the common types here, the rest in Python
        base = _L_gettop(L)
        p = PyBytes_AS_STRING(<bytes>v)
        end = p + PyBytes_GET_SIZE(<bytes>v)
        if _lc_resp(L, &p, end, 0) and p == end:
            return 1
        _L_settop(L, base)
        r = _s_reply(b.eng, <bytes>v)
        k = (<tuple>r)[0]
        v = (<tuple>r)[1]
    if k == 0:
        t = type(v)
        if v is None:
            _L_pushnil(L)
        elif t is bytes:
            _L_pushlstring(L, PyBytes_AS_STRING(<bytes>v), PyBytes_GET_SIZE(<bytes>v))
        elif t is bool:
            _L_pushboolean(L, v is True)
        elif t is int or t is float:
            _L_pushnumber(L, <double>v)
        else:
            b.pending = v
            return -2
        return 1
    if k == 2:
        _L_createtable(L, 0, 1)
        _L_pushlstring(L, PyBytes_AS_STRING(<bytes>v), PyBytes_GET_SIZE(<bytes>v))
        _L_setfield(L, -2, b"ok")
        return 1
    eng = b.eng
    if k == 3 and eng.ldb is not None:
        eng._ldb_error(v)
    _L_createtable(L, 0, 2)
    _L_pushlstring(L, PyBytes_AS_STRING(<bytes>v), PyBytes_GET_SIZE(<bytes>v))
    _L_setfield(L, -2, b"err")
    if k == 1:      # an error reply of the command: its stats are counted
        _L_pushboolean(L, 1)
        _L_setfield(L, -2, b"ignore_error_stats_update")
    return -1 if b.raise_ else 1


cdef bint _lc_resp(void *L, const char **pp, const char *end, int depth) noexcept:
    # One RESP2 reply at pp[0] pushed as engine._parse makes it (bulk, null,
    # integer, status, array of these); False for anything else (the caller
    # resets the stack and asks Python).
    cdef const char *p = pp[0]
    cdef const char *nl
    cdef long long n, i
    cdef char c
    if end - p < 3:
        return False
    nl = <const char *>memchr(p, 10, end - p)
    if nl == NULL or nl - p < 2 or (nl - 1)[0] != 13:
        return False
    c = p[0]
    if c == 36 or c == 42 or c == 58:       # '$' '*' ':'
        n = _lc_strtoll(p + 1, NULL, 10)
        if c == 58:
            _L_pushnumber(L, <double>n)
            pp[0] = nl + 1
            return True
        if n < 0:
            _L_pushboolean(L, 0)
            pp[0] = nl + 1
            return True
        if c == 36:
            if end - (nl + 1) < n + 2:
                return False
            _L_pushlstring(L, nl + 1, <size_t>n)
            pp[0] = nl + 1 + n + 2
            return True
        if depth > 32 or n > 0x7fffffff or not _L_checkstack(L, 2):
            return False
        _L_createtable(L, <int>n, 0)
        pp[0] = nl + 1
        for i in range(n):
            if not _lc_resp(L, pp, end, depth + 1):
                return False
            _L_rawseti(L, -2, <int>(i + 1))
        return True
    if c == 43:     # '+'
        _L_createtable(L, 0, 1)
        _L_pushlstring(L, p + 1, <size_t>(nl - 1 - (p + 1)))
        _L_setfield(L, -2, b"ok")
        pp[0] = nl + 1
        return True
    return False


cdef object _lc_exec(LuaLink link, eng, ctx, fn, list keys, list args, int caller_resp):
    # The sandbox's run_t(fn, KEYS, ARGV) on the link's thread, step by step
    # (run_prep, fn under err_handler, error_info), and its outcome as
    # script_run makes it from lupa's: the reply, or None (nothing run)
    # where an argument is not bytes.
    cdef void *T = link.T
    cdef int i, top, st
    cdef size_t ln
    cdef const char *p
    for v in keys:
        if type(v) is not bytes:
            return None
    for v in args:
        if type(v) is not bytes:
            return None
    fref = link.fn_ref(fn)
    if not _L_checkstack(T, 8):
        return None
    # the stack: 1 KEYS, 2 ARGV, 3 err_handler, 4 fn (then its result)
    _L_settop(T, 0)
    _lc_strings(T, keys)
    _lc_strings(T, args)
    try:
        _L_rawgeti(T, _LUA_REGISTRY, link.run_ref)
        _L_pushvalue(T, 1)
        _L_pushvalue(T, 2)
        if _L_pcall(T, 2, 0, 0):
            raise RuntimeError(_lc_value(T, -1))
        _L_rawgeti(T, _LUA_REGISTRY, link.errh_ref)
        _L_rawgeti(T, _LUA_REGISTRY, fref)
        if link.eval_mode:
            st = _L_pcall(T, 0, 1, 3)
        else:
            _L_pushvalue(T, 1)
            _L_pushvalue(T, 2)
            st = _L_pcall(T, 2, 1, 3)
        if st:      # the error as err_handler made it: (false, msg, source, line, ignore)
            _L_rawgeti(T, _LUA_REGISTRY, link.einfo_ref)
            _L_pushvalue(T, 4)
            if _L_pcall(T, 1, -1, 0):
                raise RuntimeError(_lc_value(T, -1))
            top = _L_gettop(T)
            return eng._run_error(ctx, tuple([_lc_value(T, i) for i in range(5, top + 1)]))
        i = _L_type(T, 4)
        if i == _LUA_TSTRING:
            p = _L_tolstring(T, 4, &ln)
            return _lc_bulk(p, ln)
        if i == _LUA_TNUMBER:
            return _s_resp_int(_lc_value(T, 4))
        # anything else: the sandbox's encode_reply, as LuaEngine._reply
        _L_rawgeti(T, _LUA_REGISTRY, link.enc_ref)
        _L_pushvalue(T, 4)
        _L_pushnumber(T, caller_resp)
        _L_pushnumber(T, (<ClientCore>(<EngineCore>eng).client).resp)
        if _L_pcall(T, 3, 2, 0):
            raise RuntimeError(_lc_value(T, -1))
        out = _lc_value(T, -2)
        if (<bytes>out)[:1] == b"-" and not _L_toboolean(T, -1):
            link.count_error(out)
        return out
    finally:
        _L_settop(T, 0)


cdef int _lc_strings(void *T, list items) except -1:
    # a Lua array of the bytes in items (KEYS, ARGV) pushed on T
    cdef int i = 0
    _L_createtable(T, len(items), 0)
    for v in items:
        i += 1
        _L_pushlstring(T, PyBytes_AS_STRING(<bytes>v), PyBytes_GET_SIZE(<bytes>v))
        _L_rawseti(T, -2, i)
    return 0


cdef bytes _lc_bulk(const char *p, size_t ln):
    # "$<ln>\r\n<p>\r\n"
    cdef char digits[24]
    cdef Py_ssize_t d = _digits(digits, ln)
    cdef Py_ssize_t k = 24 - d
    cdef bytes out = PyBytes_FromStringAndSize(NULL, k + 3 + ln + 2)
    cdef char *o = PyBytes_AS_STRING(out)
    o[0] = 36
    memcpy(o + 1, digits + d, k)
    o[k + 1] = 13
    o[k + 2] = 10
    memcpy(o + k + 3, p, ln)
    o[k + 3 + ln] = 13
    o[k + 3 + ln + 1] = 10
    return out


cdef object _lc_value(void *T, int i):
    # A string, number, boolean or nil at i as lupa gives it to Python
    cdef double d
    cdef int t = _L_type(T, i)
    if t == _LUA_TSTRING:
        return _lc_str(T, i)
    if t == _LUA_TNUMBER:
        d = _L_tonumber(T, i)
        if -9.2e18 < d < 9.2e18 and d == <double><long long>d:
            return <long long>d
        return d
    if t == 1:
        return _L_toboolean(T, i) != 0
    if t <= 0:
        return None
    return "<%d>" % t


def script_run(EngineCore eng, RunCtx ctx, fn, keys, args, int caller_resp):
    """LuaEngine.run compiled (the same steps; a debugged script and more
    than 64 keys and arguments go to the Python one)."""
    return _script_run(eng, ctx, fn, keys, args, caller_resp)


cdef class _Frozen:
    """The script time snapshot: keyspace.db._time while a script runs."""
    cdef object t

    def __call__(self):
        return self.t


cdef object _script_run(EngineCore eng, RunCtx ctx, fn, keys, args, int caller_resp):
    cdef ClientCore sc, caller
    cdef ServerCore srv
    cdef _Frozen frozen
    if eng.ldb is not None or len(keys) + len(args) > 64:
        return _s_pure_run(eng, ctx, fn, keys, args, caller_resp)
    srv = eng.server
    sc = eng.client
    caller = ctx.caller
    sc.db = caller.db
    sc.script_caller = (caller, keys)
    sc.resp = 2
    sc.user = caller.user
    th = srv.config.values["busy-reply-threshold"]
    ctx.threshold = th / 1000.0 if th > 0 else 1e9
    if srv.maxmemory:
        try:
            ctx.oom_at_start = bool(srv.memory.evict_hook())
        except Exception:
            ctx.oom_at_start = False
    eng.ctx = ctx
    # Keys do not expire while a script runs (Redis's script time snapshot).
    frozen = _Frozen.__new__(_Frozen)
    frozen.t = _time_time()
    prev_time = <object>PyDict_GetItem(_s_db_vars, "_time")
    PyDict_SetItem(_s_db_vars, "_time", frozen)
    link = eng._link
    out = None
    try:
        if link is not None and (<LuaLink>link).run_ref and type(keys) is list and type(args) is list:
            lk = <LuaLink>link
            lk.run_ctx = ctx
            lk.run_srv = srv
            lk.run_sc = sc
            lk.run_plain = srv.cluster is None and sc.user.unrestricted
            out = _lc_exec(lk, eng, ctx, fn, keys, args, caller_resp)
        if out is None:
            r = eng._run(fn, len(keys), *keys, *args)
    finally:
        if link is not None:
            (<LuaLink>link).run_ctx = (<LuaLink>link).run_srv = (<LuaLink>link).run_sc = None
        PyDict_SetItem(_s_db_vars, "_time", prev_time)
        eng.ctx = None
        if ctx.timedout:
            srv.script_busy = None
            srv.update_server_slow()
    if out is not None:
        return out
    if r[0]:
        v = r[1]
        if type(v) is bytes:
            return b"$%d\r\n%s\r\n" % (len(<bytes>v), v)
        if type(v) is int or type(v) is float:
            return _s_resp_int(v)
        return eng._reply(v, caller_resp)
    return eng._run_error(ctx, r)


# EVALSHA and FCALL (commands/scripting.py's _evalsha and _fcall, the
# definitions): the same steps for the common case, calling script_run
# directly; with MONITOR, a debugger or a cluster, the Python ones.

cdef object _ev_eval = None         # commands.scripting._eval
cdef object _ev_fcall = None        # commands.scripting._fcall (the Python one)
cdef object _ev_engine = None       # commands.scripting.eval_engine
cdef object _ev_numkeys = None      # commands.scripting._numkeys
cdef object _ev_prepare = None      # commands.scripting.prepare
cdef object _ev_failed = None       # commands.scripting._failed
cdef object _ev_noscript = None     # errors.NOSCRIPT
cdef object _ev_bad_numkeys = None  # commands.scripting._BAD_NUMKEYS
cdef tuple _ev_plain = (False, False)


def eval_setup(eval_, fcall, engine, numkeys, prepare, failed, noscript, bad_numkeys):
    global _ev_eval, _ev_fcall, _ev_engine, _ev_numkeys, _ev_prepare, _ev_failed, _ev_noscript, _ev_bad_numkeys
    _ev_eval = eval_
    _ev_fcall = fcall
    _ev_engine = engine
    _ev_numkeys = numkeys
    _ev_prepare = prepare
    _ev_failed = failed
    _ev_noscript = noscript
    _ev_bad_numkeys = bad_numkeys


cdef object _ev_prep(c, ServerCore srv, flags, bint compat, bint ro):
    # prepare's two fast exits on a master, else prepare
    if not srv.is_replica:
        if compat:
            return (ro, False)
        if not flags and not ro and srv.lastbgsave_ok and not srv.min_replicas and not srv.maxmemory:
            return _ev_plain
    return _ev_prepare(c, flags, compat, ro)


cdef Py_ssize_t _ev_nkeys(c, list argv, bad) except -1:
    # _numkeys's one-digit case, else _numkeys
    cdef bytes b = <bytes>argv[2]
    cdef Py_ssize_t n
    if len(b) == 1:
        n = (<unsigned char *>PyBytes_AS_STRING(b))[0] - 48
        if 0 <= n <= 9 and n <= len(argv) - 3:
            return n
    return _ev_numkeys(c, argv) if bad is None else _ev_numkeys(c, argv, bad)


def evalsha_cmd(ClientCore c, list argv):
    """EVALSHA's command proc (commands/scripting.py's evalsha_cmd)."""
    return _evalsha(c, argv, False)


def evalsha_ro_cmd(ClientCore c, list argv):
    """EVALSHA_RO's command proc (commands/scripting.py's evalsha_ro_cmd)."""
    return _evalsha(c, argv, True)


def fcall_cmd(ClientCore c, list argv):
    """FCALL's command proc (commands/scripting.py's fcall_cmd)."""
    return _fcall(c, argv, False)


def fcall_ro_cmd(ClientCore c, list argv):
    """FCALL_RO's command proc (commands/scripting.py's fcall_ro_cmd)."""
    return _fcall(c, argv, True)


cdef object _evalsha(ClientCore c, list argv, bint ro):
    cdef ServerCore srv = c.server
    if srv.monitors or c.lua_debug is not None or srv.cluster is not None:
        return _ev_eval(c, argv, True, ro)
    cdef ScriptCore s
    sha = argv[1]
    if len(sha) != 40:
        raise _ev_noscript
    eng = srv.lua_eval or _ev_engine(srv)
    cdef Py_ssize_t n = _ev_nkeys(c, argv, None)
    cdef dict scripts = srv.lua_scripts
    s = scripts.get(sha)            # the keys are lower case (and so, mostly, is the sha sent)
    if s is None:
        s = scripts.get(sha.lower())
        if s is None:
            raise _ev_noscript
    p = _ev_prep(c, srv, s.flags, s.compat, ro)
    ctx = _ctx_init(RunCtx.__new__(RunCtx), c, s.sha, True, p[0], p[1], argv)
    r = _script_run(eng, ctx, s.fn, argv[3:3 + n], argv[3 + n:], c.resp)
    if (<bytes>r)[:1] == b"-":
        return _ev_failed(argv, r)
    return r


cdef object _fcall(ClientCore c, list argv, bint ro):
    cdef ServerCore srv = c.server
    if srv.monitors or srv.cluster is not None:
        return _ev_fcall(c, argv, ro)
    reg = srv.functions
    cdef dict fns = reg.functions
    cdef FunctionCore f
    fo = fns.get(argv[1])           # the names are kept in lower case
    if fo is None:
        fo = fns.get(argv[1].lower())
        if fo is None:
            return _ev_fcall(c, argv, ro)
    f = fo
    cdef Py_ssize_t n = _ev_nkeys(c, argv, _ev_bad_numkeys)
    p = _ev_prep(c, srv, f.flags, False, ro)
    ctx = _ctx_init(RunCtx.__new__(RunCtx), c, f.name, False, p[0], p[1], argv)
    eng = reg._engine               # (the engine property makes it where it is missing)
    if eng is None:
        eng = reg.engine
    r = _script_run(eng, ctx, f.fn, argv[3:3 + n], argv[3 + n:], c.resp)
    if (<bytes>r)[:1] == b"-":
        return _ev_failed(argv, r)
    return r


# ===========================================================================
# Client.data_received compiled
# ===========================================================================
# The per-read work around the request loop (client.py's data_received,
# _data_received and _run_read) for the common read: a client that may run
# requests, multibulk input hiredis can take, no output limit for the
# normal class.  Anything else, and whatever the loop leaves for
# RequestReader.taken, goes to the Python methods (the definition).

cdef dict _dr_table = None          # commands.TABLE
cdef StatsCore _dr_stats = None     # keyspace.db.stats
cdef object _dr_client_mem = None   # client.set_client_memory's function


cdef object _dr_before_reply = None  # client.set_before_reply's function
cdef Py_ssize_t _dr_floor = 0         # client.set_output_floor's
cdef Py_ssize_t _dr_unauth_limit = 0  # client.UNAUTH_OUTPUT_LIMIT


def data_setup(dict table, stats, Py_ssize_t unauth_limit, Py_ssize_t inline_max):
    global _dr_table, _dr_stats, _dr_unauth_limit, _inline_max
    _inline_max = inline_max
    _dr_table = table
    _dr_stats = stats
    _dr_unauth_limit = unauth_limit


def set_write_switches(before_reply, Py_ssize_t floor):
    global _dr_before_reply, _dr_floor
    _dr_before_reply = before_reply
    _dr_floor = floor


cdef _dr_write(ClientCore client, list out):
    # Client.write (with _write_after_barrier's function first when set)
    cdef Py_ssize_t n, held
    if _dr_before_reply is not None:
        _dr_before_reply()
    if client.closing:
        return
    t = client.transport
    if client.push_buf is not None:
        # messages queued for this client go out first, in order
        out = <list>client.push_buf + out
        client.push_buf = None
    data = b"".join(out) if len(out) != 1 else out[0]
    n = len(data)
    try:
        if _dr_floor:
            held = t.get_write_buffer_size()
            if (held + n >= _dr_floor or client.out_extra is not None) \
                    and client.server.check_output_limits(client, held, n):
                return
        t.write(data)
    except Exception:
        client.closing = True
        return
    _dr_stats.net_output_bytes += n
    if client.close_after_reply:
        client.close()
    elif not client.authenticated:
        if t.get_write_buffer_size() > _dr_unauth_limit:
            client.server.close_over_limit(client, False)
    elif _dr_client_mem is not None and client.pending_writes is None:
        _dr_client_mem(client)


def set_client_memory(fn):
    global _dr_client_mem
    _dr_client_mem = fn


def data_received(ClientCore client, data):
    """Client.data_received (asyncio.Protocol's) compiled."""
    _dr_stats.net_input_bytes += len(data)
    # time.monotonic() (CLOCK_MONOTONIC, as _now)
    client.last_time = _now()
    try:
        _dr_read(client, data)
    finally:
        # Pushes (pub/sub, notifications) for this client go into the
        # pending reply list only while its requests are being run.
        client.pending_writes = None
    if _dr_client_mem is not None:
        _dr_client_mem(client)    # after the read's requests and replies


cdef _dr_read(ClientCore client, data):
    if client.closing or client.close_after_reply:
        return
    if (client.blocked or client.paused_queue is not None or type(data) is not bytes
            or PyBytes_GET_SIZE(data) == 0 or not client.authenticated):
        client._data_received(data)
        return
    rd = client.reader
    cdef bint inline = PyBytes_AS_STRING(data)[0] != 42
    if rd.pend is not None or client.server.obuf_normal_limit or (inline and not _plain_lines(data)):
        client._data_received(data)
        return
    # at a request boundary: hiredis holds nothing (a multibulk header it
    # would pre-size is looked for in what the C parser leaves to it)
    cdef ReadFeed feed = _read_feed(<bytes>data, rd, inline)
    cdef list out = []
    client.pending_writes = out
    r = run(client, feed, out, _dr_table, client.slow or _server_slow, _now())
    nreq = r[0]
    last = r[1]
    cdef bint stopped = client.blocked or client.close_after_reply or client.paused_queue is not None
    if inline:
        # _python_input's case of a read of plain inline lines
        if stopped or client.closing:
            rd.buf = data
            if rd.lines_stopped(nreq, client.blocked, client.closing) is not None:
                if out:
                    _dr_write(client, out)
                client._qbuf_limit()
                return
        if out:
            _dr_write(client, out)
        return
    if nreq > 0 and rd.pend is None and (
            (feed.gets is None and feed.pos == PyBytes_GET_SIZE(data))    # all taken here
            or (type(last) is list and <list>last and not stopped and ends_with_request(data, <list>last))):
        # the read ended with the last request: nothing is left
        if out:
            _dr_write(client, out)
        return
    if client._taken(data, nreq, last, out):
        client._python_then()

# -- the list command bodies (see "compiled command bodies") ---------------------

cdef object _push(_Ctx x, list req, bint front):
    # lists._push: LPUSH/RPUSH onto an existing list or a new key
    if x.flags:
        return None
    d = x.d
    key = req[1]
    cdef PyObject *pv = PyDict_GetItem(d, key)
    cdef QuickList ql
    cdef Py_ssize_t n = len(req), i
    if _held(x, key):
        return None
    if pv is NULL:
        ql = QuickList.__new__(QuickList)
        for i in range(2, n):
            ql._push(req[i], front)
        d[key] = ql
    else:
        if _g_type(pv) != <PyObject *>QuickList or _ttl(x, key):
            return None
        ql = <QuickList>pv
        for i in range(2, n):
            ql._push(req[i], front)
    x.dirty += n - 2
    return _int_reply(ql.size)


cdef object _pop(_Ctx x, list req, bint front):
    # lists._pop without a count, the list keeping an element at least
    if len(req) != 2:
        return None
    key = req[1]
    cdef PyObject *pv = PyDict_GetItem(x.d, key)
    if pv is NULL:
        return _NULL3 if x.resp >= 3 else _NULL_BULK
    if _g_type(pv) != <PyObject *>QuickList or x.flags:
        return None
    cdef QuickList ql = <QuickList>pv
    if ql.size < 2 or _ttl(x, key) or _watched(x, key):
        return None
    r = ql._pop_bulk(front)
    x.dirty += 1
    return r


cdef object _spop(_Ctx x, list req):
    # sets.spop without a count of a missing key (redis-benchmark's SPOP
    # empties its one-member set at once): a write lookup, no stats, no event
    if len(req) != 2 or PyDict_GetItem(x.d, req[1]) is not NULL:
        return None
    return _NULL3 if x.resp >= 3 else _NULL_BULK


cdef object _lrange(_Ctx x, list req):
    # lists.lrange with canonical integer indexes
    cdef long long start, end
    if not _canonical_ll(<bytes>req[2], &start) or not _canonical_ll(<bytes>req[3], &end):
        return None
    key = req[1]
    cdef PyObject *pv = PyDict_GetItem(x.d, key)
    if pv is NULL:
        if x.flags:
            return None
        x.misses += 1
        return _EMPTY_ARRAY
    if _g_type(pv) != <PyObject *>QuickList or _ttl(x, key):
        return None
    x.hits += 1
    return (<QuickList>pv)._bulk_range(start, end)

# =====================================================================================
# RDB writer (issue 17): persistence/rdb.py's write_snapshot key loop in C.
#
# ``rdb_write_keys`` writes one database's key entries (expiry, type, key, value)
# with the same bytes as the Python writer (rdb.Encoder.type_and_value, which
# stays the pure twin: OPHIDIS_PURE=1, LRU/LFU policies).  It walks the keyspace
# with borrowed references only (PyDict_Next, oph_set_next, the
# QuickList's node buffers, __slots__ read at their offsets): no reference
# count of a parent object is written, so a forked child copies only the pages it allocates in.
# Values it does not cover (streams, unknown types, odd contents) are written
# by ``fallback(key, value)`` (Python) for that key.  LZF goes through
# rdbcodec.redis_lzf on a fresh copy of the string.  Assumes a little-endian
# host (RDB's integers and doubles are little-endian).
# =====================================================================================

from libc.math cimport isinf
from libc.stdlib cimport free as _cf_free, qsort as _cf_qsort, realloc as _cf_realloc

cdef extern from "Python.h":
    int _cf_dict_next "PyDict_Next"(PyObject *d, Py_ssize_t *pos, PyObject **k, PyObject **v)
    PyObject *_cf_dict_get "PyDict_GetItem"(PyObject *d, PyObject *k)
    Py_ssize_t _cf_dict_len "PyDict_GET_SIZE"(PyObject *d)
    Py_ssize_t _cf_set_len "PySet_GET_SIZE"(PyObject *s)
    bint _cf_is_bytes "PyBytes_Check"(PyObject *o)
    bint _cf_is_bytearray "PyByteArray_Check"(PyObject *o)
    bint _cf_is_int "PyLong_CheckExact"(PyObject *o)
    bint _cf_is_float "PyFloat_CheckExact"(PyObject *o)
    char *_cf_bytes_str "PyBytes_AS_STRING"(PyObject *o)
    Py_ssize_t _cf_bytes_len "PyBytes_GET_SIZE"(PyObject *o)
    char *_cf_ba_str "PyByteArray_AS_STRING"(PyObject *o)
    Py_ssize_t _cf_ba_len "PyByteArray_GET_SIZE"(PyObject *o)
    double _cf_float "PyFloat_AS_DOUBLE"(PyObject *o)
    long long _cf_long "PyLong_AsLongLong"(PyObject *o) except? -1
    PyObject *_cf_type "(PyObject *)Py_TYPE"(PyObject *o)
    PyObject *_cf_true "Py_True"
    PyObject *_cf_false "Py_False"

cdef extern from *:
    """
    static PyObject *_cf_slot(PyObject *o, Py_ssize_t off) { return *(PyObject **)((char *)o + off); }

    /* A set's members with borrowed references: its table, as
       PySetObject/setentry (Include/cpython/setobject.h) lay it out in the
       versions this was checked on (3.11-3.13, GIL builds).  Deleted slots
       hold setobject.c's dummy key, found by oph_set_walk_probe (a key
       added then discarded), which also checks a walk; elsewhere, or when
       the probe fails, the writer hands sets to the Python writer. */
    #if PY_VERSION_HEX < 0x030E0000 && !defined(Py_GIL_DISABLED)
    static PyObject *oph_set_dummy = NULL;

    static int oph_set_next(PyObject *s, Py_ssize_t *pos, PyObject **key, Py_hash_t *hash) {
        PySetObject *so = (PySetObject *)s;
        Py_ssize_t i = *pos;
        while (i <= so->mask) {
            setentry *e = &so->table[i++];
            if (e->key != NULL && e->key != oph_set_dummy) {
                *pos = i;
                *key = e->key;
                *hash = e->hash;
                return 1;
            }
        }
        *pos = i;
        return 0;
    }

    static int oph_set_walk_probe(void) {
        PyObject *s = PySet_New(NULL), *k = PyLong_FromLong(5), *k2 = PyLong_FromLong(6), *key;
        PySetObject *so = (PySetObject *)s;
        Py_ssize_t pos = 0, n = 0;
        Py_hash_t h;
        int ok = 0;
        if (s == NULL || k == NULL || k2 == NULL)
            goto done;
        if (PySet_Add(s, k) < 0 || PySet_Add(s, k2) < 0 || PySet_Discard(s, k) != 1)
            goto done;
        if (so->mask != 7 || so->used != 1 || so->table[5].key == NULL || so->table[5].key == k
                || so->table[6].key != k2)
            goto done;
        oph_set_dummy = so->table[5].key;
        while (oph_set_next(s, &pos, &key, &h))
            n += (key == k2 && h == 6) ? 1 : 100;
        ok = n == 1;
    done:
        if (!ok)
            oph_set_dummy = NULL;
        Py_XDECREF(s);
        Py_XDECREF(k);
        Py_XDECREF(k2);
        PyErr_Clear();
        return ok;
    }
    #else
    static int oph_set_next(PyObject *s, Py_ssize_t *pos, PyObject **key, Py_hash_t *hash) { return 0; }
    static int oph_set_walk_probe(void) { return 0; }
    #endif
    """
    PyObject *_cf_slot(PyObject *o, Py_ssize_t off) noexcept
    int _cf_set_next "oph_set_next"(PyObject *s, Py_ssize_t *pos, PyObject **k, Py_hash_t *h) noexcept
    int _cf_set_walk_probe "oph_set_walk_probe"() noexcept

# sets are walked in C where their table's layout is known (else: fallback)
cdef bint _cf_set_walk = _cf_set_walk_probe()
SET_WALK = _cf_set_walk

ctypedef struct _CfBuf:
    char *p
    Py_ssize_t n
    Py_ssize_t cap

ctypedef struct _CfNode:        # a quicklist node: a listpack in tmp, or a plain item
    int container
    Py_ssize_t off
    Py_ssize_t n
    const char *ext

ctypedef struct _CfScored:      # a sorted set element
    double score
    const char *p
    Py_ssize_t n

cdef object _cf_lzf = None      # rdbcodec.redis_lzf
cdef tuple _cf_types = ()       # keeps the classes below alive
cdef PyObject *_cf_embstr = NULL
cdef PyObject *_cf_list = NULL
cdef PyObject *_cf_hash = NULL
cdef PyObject *_cf_set = NULL
cdef PyObject *_cf_zset = NULL
cdef Py_ssize_t _cf_off_ht = 0, _cf_off_enc = 0, _cf_off_zdict = 0, _cf_off_zskip = 0
cdef bint _cf_ready = False

_CF_OPT = (4096, 8192, 16384, 32768, 65536)


cdef int _cf_grow(_CfBuf *b, Py_ssize_t extra) except -1:
    cdef Py_ssize_t need = b.n + extra
    cdef Py_ssize_t cap = b.cap if b.cap else 65536
    cdef char *q
    while cap < need:
        cap *= 2
    q = <char *>_cf_realloc(b.p, cap)
    if q == NULL:
        raise MemoryError()
    b.p = q
    b.cap = cap
    return 0


cdef inline int _cf_put(_CfBuf *b, const char *s, Py_ssize_t n) except -1:
    if b.n + n > b.cap:
        _cf_grow(b, n)
    memcpy(b.p + b.n, s, n)
    b.n += n
    return 0


cdef inline int _cf_byte(_CfBuf *b, unsigned int c) except -1:
    if b.n + 1 > b.cap:
        _cf_grow(b, 1)
    b.p[b.n] = <char>c
    b.n += 1
    return 0


cdef inline int _cf_le(_CfBuf *b, unsigned long long v, int width) except -1:
    """``width`` bytes of ``v``, little-endian."""
    cdef int i
    if b.n + width > b.cap:
        _cf_grow(b, width)
    for i in range(width):
        b.p[b.n + i] = <char>((v >> (8 * i)) & 0xFF)
    b.n += width
    return 0


cdef int _cf_len(_CfBuf *b, unsigned long long n) except -1:
    """rdbcodec.enc_len."""
    cdef int i
    if n < 64:
        return _cf_byte(b, <unsigned int>n)
    if n < 16384:
        _cf_byte(b, <unsigned int>((n >> 8) | 0x40))
        return _cf_byte(b, <unsigned int>(n & 0xFF))
    if n <= 0xFFFFFFFF:
        _cf_byte(b, 0x80)
        for i in range(3, -1, -1):
            _cf_byte(b, <unsigned int>((n >> (8 * i)) & 0xFF))
        return 0
    _cf_byte(b, 0x81)
    for i in range(7, -1, -1):
        _cf_byte(b, <unsigned int>((n >> (8 * i)) & 0xFF))
    return 0


cdef inline bint _cf_canon(const char *s, Py_ssize_t n, long long *out) noexcept:
    """listpack.canonical_int: ``s`` is the canonical decimal form of an int64."""
    cdef Py_ssize_t i = 0
    cdef bint neg = False
    cdef unsigned long long v = 0
    cdef unsigned char c
    if n == 0 or n > 20:
        return False
    if s[0] == 45:
        neg = True
        i = 1
    if n - i == 0 or n - i > 19:
        return False
    if s[i] == 48:
        if neg or n != 1:
            return False
        out[0] = 0
        return True
    while i < n:
        c = <unsigned char>s[i]
        if c < 48 or c > 57:
            return False
        v = v * 10 + (c - 48)
        i += 1
    if neg:
        if v > 9223372036854775808ULL:
            return False
        out[0] = -<long long>(v - 1) - 1
    else:
        if v > 9223372036854775807ULL:
            return False
        out[0] = <long long>v
    return True


cdef inline bint _cf_str(PyObject *o, const char **s, Py_ssize_t *n) noexcept:
    """The bytes of a bytes (or subclass: EmbStr) or bytearray object."""
    if _cf_is_bytes(o):
        s[0] = _cf_bytes_str(o)
        n[0] = _cf_bytes_len(o)
        return True
    if _cf_is_bytearray(o):
        s[0] = _cf_ba_str(o)
        n[0] = _cf_ba_len(o)
        return True
    return False


cdef inline bint _cf_pair(PyObject *k, PyObject *v, const char **s, Py_ssize_t *n,
                          const char **s2, Py_ssize_t *n2) noexcept:
    """A hash entry's field and value: read from its HashPair (the entry's
    value; no reference taken), or from two strings (a dict of another class)."""
    if _hp_is(v):
        s[0] = _hp_f(v)
        n[0] = _hp_fn(v)
        s2[0] = _hp_v(v)
        n2[0] = _hp_vn(v)
        return True
    return _cf_str(k, s, n) and _cf_str(v, s2, n2)


cdef bint _cf_lzf_to(_CfBuf *b, const char *s, Py_ssize_t n, Py_ssize_t out_len, Py_ssize_t extra) except -1:
    """rdbcodec.redis_lzf(s, out_len), written as an LZF string (0xC3, lengths,
    data) when it gives something and ``len(comp) + extra < n``; False otherwise."""
    cdef object comp
    cdef Py_ssize_t cn
    if _cf_lzf is None:
        return False
    comp = _cf_lzf(PyBytes_FromStringAndSize(<char *>s, n), out_len)
    if comp is None or not comp:
        return False
    cn = len(comp)
    if extra and cn + extra >= n:
        return False
    _cf_byte(b, 0xC3)
    _cf_len(b, cn)
    _cf_len(b, n)
    _cf_put(b, PyBytes_AS_STRING(comp), cn)
    return True


cdef int _cf_string(_CfBuf *b, const char *s, Py_ssize_t n, bint compress) except -1:
    """rdbcodec.enc_string: int encoding, LZF when it saves space, else raw."""
    cdef long long v
    if 0 < n <= 11 and _cf_canon(s, n, &v) and -2147483648 <= v <= 2147483647:
        if -128 <= v <= 127:
            _cf_byte(b, 0xC0)
            return _cf_le(b, <unsigned long long>v, 1)
        if -32768 <= v <= 32767:
            _cf_byte(b, 0xC1)
            return _cf_le(b, <unsigned long long>v, 2)
        _cf_byte(b, 0xC2)
        return _cf_le(b, <unsigned long long>v, 4)
    if compress and n > 20 and _cf_lzf_to(b, s, n, n - 4, 0):
        return 0
    _cf_len(b, n)
    return _cf_put(b, s, n)


cdef int _cf_backlen(_CfBuf *b, Py_ssize_t n) except -1:
    """listpack._backlen."""
    if n <= 127:
        return _cf_byte(b, n)
    if n < 16383:
        _cf_byte(b, n >> 7)
        return _cf_byte(b, (n & 127) | 128)
    if n < 2097151:
        _cf_byte(b, n >> 14)
        _cf_byte(b, ((n >> 7) & 127) | 128)
        return _cf_byte(b, (n & 127) | 128)
    if n < 268435455:
        _cf_byte(b, n >> 21)
        _cf_byte(b, ((n >> 14) & 127) | 128)
        _cf_byte(b, ((n >> 7) & 127) | 128)
        return _cf_byte(b, (n & 127) | 128)
    _cf_byte(b, n >> 28)
    _cf_byte(b, ((n >> 21) & 127) | 128)
    _cf_byte(b, ((n >> 14) & 127) | 128)
    _cf_byte(b, ((n >> 7) & 127) | 128)
    return _cf_byte(b, (n & 127) | 128)


cdef int _cf_lp_int(_CfBuf *b, long long v) except -1:
    """listpack.lp_entry of an integer."""
    cdef long long u
    if 0 <= v <= 127:
        _cf_byte(b, <unsigned int>v)
        return _cf_byte(b, 1)
    if -4096 <= v <= 4095:
        u = v + 8192 if v < 0 else v
        _cf_byte(b, <unsigned int>((u >> 8) | 0xC0))
        _cf_byte(b, <unsigned int>(u & 0xFF))
        return _cf_byte(b, 2)
    if -32768 <= v <= 32767:
        _cf_byte(b, 0xF1)
        _cf_le(b, <unsigned long long>v, 2)
        return _cf_byte(b, 3)
    if -8388608 <= v <= 8388607:
        _cf_byte(b, 0xF2)
        _cf_le(b, <unsigned long long>v, 3)
        return _cf_byte(b, 4)
    if -2147483648 <= v <= 2147483647:
        _cf_byte(b, 0xF3)
        _cf_le(b, <unsigned long long>v, 4)
        return _cf_byte(b, 5)
    _cf_byte(b, 0xF4)
    _cf_le(b, <unsigned long long>v, 8)
    return _cf_byte(b, 9)


cdef int _cf_lp_entry(_CfBuf *b, const char *s, Py_ssize_t n) except -1:
    """listpack.lp_entry of a string."""
    cdef long long v
    if n <= 20 and _cf_canon(s, n, &v):
        return _cf_lp_int(b, v)
    if n < 64:
        _cf_byte(b, 0x80 | n)
        _cf_put(b, s, n)
        return _cf_byte(b, n + 1)
    if n < 4096:
        _cf_byte(b, (n >> 8) | 0xE0)
        _cf_byte(b, n & 0xFF)
        _cf_put(b, s, n)
        return _cf_backlen(b, n + 2)
    _cf_byte(b, 0xF0)
    _cf_le(b, <unsigned long long>n, 4)
    _cf_put(b, s, n)
    return _cf_backlen(b, n + 5)


cdef int _cf_score_entry(_CfBuf *b, double d) except -1:
    """rdb._score_entry."""
    cdef char tmp[40]
    cdef int k
    if not isinf(d) and -4611686018427387904.0 <= d <= 4611686018427387904.0 and d == <double>(<long long>d):
        return _cf_lp_int(b, <long long>d)
    k = snprintf(tmp, sizeof(tmp), "%.17g", d)
    return _cf_lp_entry(b, tmp, k)


cdef inline Py_ssize_t _cf_lp_open(_CfBuf *b) except -1:
    """Room for a listpack header; returns where the listpack starts."""
    cdef Py_ssize_t start = b.n
    if b.n + 6 > b.cap:
        _cf_grow(b, 6)
    b.n += 6
    return start


cdef int _cf_lp_close(_CfBuf *b, Py_ssize_t start, Py_ssize_t count) except -1:
    """listpack.lp_build's header and end byte."""
    cdef Py_ssize_t total
    cdef unsigned int c = count if count < 65535 else 65535
    _cf_byte(b, 0xFF)
    total = b.n - start
    b.p[start] = <char>(total & 0xFF)
    b.p[start + 1] = <char>((total >> 8) & 0xFF)
    b.p[start + 2] = <char>((total >> 16) & 0xFF)
    b.p[start + 3] = <char>((total >> 24) & 0xFF)
    b.p[start + 4] = <char>(c & 0xFF)
    b.p[start + 5] = <char>(c >> 8)
    return 0


cdef int _cf_cmp_ll(const void *a, const void *b) noexcept nogil:
    cdef long long x = (<const long long *>a)[0]
    cdef long long y = (<const long long *>b)[0]
    return (x > y) - (x < y)


cdef int _cf_cmp_scored(const void *a, const void *b) noexcept nogil:
    """(score, member) pairs' order, as the zset's ordered index keeps them."""
    cdef const _CfScored *x = <const _CfScored *>a
    cdef const _CfScored *y = <const _CfScored *>b
    cdef Py_ssize_t n
    cdef int c
    if x.score < y.score:
        return -1
    if x.score > y.score:
        return 1
    n = x.n if x.n < y.n else y.n
    c = memcmp(x.p, y.p, n)
    if c:
        return c
    return (x.n > y.n) - (x.n < y.n)


cdef class _RdbOut:
    """The output buffer and the scratch space of one rdb_write_keys call."""
    cdef _CfBuf out         # the entries, handed to write() by chunks
    cdef _CfBuf tmp         # a blob (listpack, intset) before it becomes an RDB string
    cdef _CfNode *nodes
    cdef Py_ssize_t nodes_cap
    cdef void *arr          # long long[] (intsets) or _CfScored[] (zsets)
    cdef Py_ssize_t arr_cap
    cdef bint compress
    cdef int list_fill, list_depth

    def __dealloc__(self):
        _cf_free(self.out.p)
        _cf_free(self.tmp.p)
        _cf_free(self.nodes)
        _cf_free(self.arr)

    cdef int arr_room(self, Py_ssize_t n, Py_ssize_t size) except -1:
        cdef void *q
        if n * size <= self.arr_cap:
            return 0
        q = _cf_realloc(self.arr, n * size)
        if q == NULL:
            raise MemoryError()
        self.arr = q
        self.arr_cap = n * size
        return 0

    cdef _CfNode *node(self, Py_ssize_t i) except NULL:
        cdef Py_ssize_t cap
        cdef void *q
        if i >= self.nodes_cap:
            cap = self.nodes_cap * 2 if self.nodes_cap else 64
            while cap <= i:
                cap *= 2
            q = _cf_realloc(self.nodes, cap * sizeof(_CfNode))
            if q == NULL:
                raise MemoryError()
            self.nodes = <_CfNode *>q
            self.nodes_cap = cap
        return &self.nodes[i]


cdef int _cf_list_nodes(_RdbOut st, PyObject *v, Py_ssize_t *count) except -1:
    """rdb.quicklist_nodes into st.tmp / st.nodes: the one place that reads a
    list's items, straight from the QuickList's node buffers (the list object
    itself is only read: no reference is taken)."""
    cdef _qlnode *qn = (<QuickList>v).nodes
    cdef Py_ssize_t qk = (<QuickList>v).head, qend = qk + (<QuickList>v).nlen, qj = 0, qp = 0
    cdef const char *s
    cdef Py_ssize_t n, nn = 0, cur = 0, cur_sz = 0, start = 0, mark, new_sz
    cdef Py_ssize_t limit = -1
    cdef int fill = st.list_fill
    cdef bint allow
    cdef _CfNode *nd
    if fill < 0 and -fill - 1 < 5:
        limit = _CF_OPT[-fill - 1]
    st.tmp.n = 0
    if qk < qend:
        qp = qn[qk].off
    while qk < qend:
        if qj == qn[qk].count:
            qk += 1
            qj = 0
            if qk < qend:
                qp = qn[qk].off
            continue
        n = _ql_fwd(qn[qk].buf + qp)
        s = qn[qk].buf + qp + _ql_hdr(n)
        qp += _ql_esz(n)
        qj += 1
        if n >= (1 << 30):
            if cur:
                _cf_lp_close(&st.tmp, start, cur)
                nd = st.node(nn)
                nd.container, nd.off, nd.n, nd.ext = 2, start, st.tmp.n - start, NULL
                nn += 1
                cur = cur_sz = 0
            nd = st.node(nn)
            nd.container, nd.off, nd.n, nd.ext = 1, 0, n, s
            nn += 1
            continue
        allow = False
        if cur:
            new_sz = cur_sz + n + 8
            if limit >= 0:
                allow = new_sz <= limit
            elif new_sz > 8192:
                allow = False
            else:
                allow = cur < fill
        if not allow:
            if cur:
                _cf_lp_close(&st.tmp, start, cur)
                nd = st.node(nn)
                nd.container, nd.off, nd.n, nd.ext = 2, start, st.tmp.n - start, NULL
                nn += 1
            start = _cf_lp_open(&st.tmp)
            cur = 0
            cur_sz = 7
        mark = st.tmp.n
        _cf_lp_entry(&st.tmp, s, n)
        cur += 1
        cur_sz += st.tmp.n - mark
    if cur:
        _cf_lp_close(&st.tmp, start, cur)
        nd = st.node(nn)
        nd.container, nd.off, nd.n, nd.ext = 2, start, st.tmp.n - start, NULL
        nn += 1
    count[0] = nn
    return 0


cdef int _cf_list_body(_RdbOut st, PyObject *v) except -1:
    """Encoder.type_and_value's ListValue body (RDB_TYPE_LIST_QUICKLIST_2)."""
    cdef Py_ssize_t nn = 0, i
    cdef _CfNode *nd
    cdef const char *p
    cdef int depth = st.list_depth
    if _cf_list_nodes(st, v, &nn):
        return 1
    _cf_len(&st.out, nn)
    for i in range(nn):
        nd = &st.nodes[i]
        p = nd.ext if nd.ext != NULL else st.tmp.p + nd.off
        _cf_len(&st.out, nd.container)
        if (depth > 0 and nd.container == 2 and depth <= i < nn - depth and nd.n >= 48
                and _cf_lzf_to(&st.out, p, nd.n, nd.n, 8)):
            continue
        _cf_string(&st.out, p, nd.n, st.compress)
    return 0


cdef int _cf_value(_RdbOut st, PyObject *k, PyObject *v) except -1:
    """type byte, key, value of one key (1: not covered, nothing to keep)."""
    cdef PyObject *t = _cf_type(v)
    cdef PyObject *f
    cdef PyObject *x
    cdef PyObject *enc
    cdef const char *ks
    cdef const char *s = NULL
    cdef const char *s2 = NULL
    cdef Py_ssize_t kn, n = 0, n2 = 0, pos = 0, start, count = 0, i, width
    cdef Py_hash_t h
    cdef long long lv
    cdef long long *ints
    cdef _CfScored *sc
    cdef _CfBuf *out = &st.out
    cdef _CfBuf *tmp = &st.tmp
    cdef bint compress = st.compress
    cdef double dscore
    if not _cf_is_bytes(k):
        return 1
    ks = _cf_bytes_str(k)
    kn = _cf_bytes_len(k)
    if t == <PyObject *>bytes or t == <PyObject *>bytearray or t == _cf_embstr:
        _cf_str(v, &s, &n)
        _cf_byte(out, 0)
        _cf_string(out, ks, kn, compress)
        return _cf_string(out, s, n, compress)
    if t == _cf_list:
        _cf_byte(out, 18)
        _cf_string(out, ks, kn, compress)
        return _cf_list_body(st, v)
    if t == _cf_hash:
        x = _cf_slot(v, _cf_off_ht)
        if x == _cf_false:
            tmp.n = 0
            start = _cf_lp_open(tmp)
            while _cf_dict_next(v, &pos, &f, &x):
                if not _cf_pair(f, x, &s, &n, &s2, &n2):
                    return 1
                _cf_lp_entry(tmp, s, n)
                _cf_lp_entry(tmp, s2, n2)
                count += 2
            _cf_lp_close(tmp, start, count)
            _cf_byte(out, 16)
            _cf_string(out, ks, kn, compress)
            return _cf_string(out, tmp.p, tmp.n, compress)
        if x != _cf_true:
            return 1
        _cf_byte(out, 4)
        _cf_string(out, ks, kn, compress)
        _cf_len(out, _cf_dict_len(v))
        while _cf_dict_next(v, &pos, &f, &x):
            if not _cf_pair(f, x, &s, &n, &s2, &n2):
                return 1
            _cf_string(out, s, n, compress)
            _cf_string(out, s2, n2, compress)
        return 0
    if t == _cf_set:
        if not _cf_set_walk:
            return 1
        enc = _cf_slot(v, _cf_off_enc)
        if enc == NULL or not _cf_is_bytes(enc):
            return 1
        if _cf_bytes_len(enc) == 6 and memcmp(_cf_bytes_str(enc), b"intset", 6) == 0:
            n2 = _cf_set_len(v)
            st.arr_room(n2 + 1, sizeof(long long))
            ints = <long long *>st.arr
            while _cf_set_next(v, &pos, &f, &h):
                if count >= n2 or not _cf_str(f, &s, &n) or not _cf_canon(s, n, &lv):
                    return 1
                ints[count] = lv
                count += 1
            _cf_qsort(ints, count, sizeof(long long), _cf_cmp_ll)
            width = 2
            if count and not (ints[0] >= -32768 and ints[count - 1] <= 32767):
                width = 4 if ints[0] >= -2147483648 and ints[count - 1] <= 2147483647 else 8
            tmp.n = 0
            _cf_le(tmp, width, 4)
            _cf_le(tmp, count, 4)
            for i in range(count):
                _cf_le(tmp, <unsigned long long>ints[i], <int>width)
            _cf_byte(out, 11)
            _cf_string(out, ks, kn, compress)
            return _cf_string(out, tmp.p, tmp.n, compress)
        _cf_byte(out, 2)
        _cf_string(out, ks, kn, compress)
        _cf_len(out, _cf_set_len(v))
        while _cf_set_next(v, &pos, &f, &h):
            if not _cf_str(f, &s, &n):
                return 1
            _cf_string(out, s, n, compress)
        return 0
    if t == _cf_zset:
        x = _cf_slot(v, _cf_off_zdict)
        enc = _cf_slot(v, _cf_off_zskip)
        if x == NULL or _cf_type(x) != <PyObject *>dict or (enc != _cf_true and enc != _cf_false):
            return 1
        n2 = _cf_dict_len(x)
        st.arr_room(n2 + 1, sizeof(_CfScored))
        sc = <_CfScored *>st.arr
        while _cf_dict_next(x, &pos, &f, &t):
            if count >= n2 or not _cf_str(f, &s, &n) or not _cf_is_float(t):
                return 1
            sc[count].score = _cf_float(t)
            sc[count].p = s
            sc[count].n = n
            count += 1
        _cf_qsort(sc, count, sizeof(_CfScored), _cf_cmp_scored)
        if enc == _cf_false:
            tmp.n = 0
            start = _cf_lp_open(tmp)
            for i in range(count):
                _cf_lp_entry(tmp, sc[i].p, sc[i].n)
                _cf_score_entry(tmp, sc[i].score)
            _cf_lp_close(tmp, start, 2 * count)
            _cf_byte(out, 17)
            _cf_string(out, ks, kn, compress)
            return _cf_string(out, tmp.p, tmp.n, compress)
        _cf_byte(out, 5)
        _cf_string(out, ks, kn, compress)
        _cf_len(out, count)
        for i in range(count - 1, -1, -1):
            _cf_string(out, sc[i].p, sc[i].n, compress)
            dscore = sc[i].score
            _cf_put(out, <const char *>&dscore, 8)
        return 0
    return 1


def rdb_setup(embstr, list_cls, hash_cls, set_cls, zset_cls, lzf):
    """The value classes (``list_cls``: QuickList) and rdbcodec.redis_lzf."""
    global _cf_lzf, _cf_types, _cf_embstr, _cf_list, _cf_hash, _cf_set, _cf_zset
    global _cf_off_ht, _cf_off_enc, _cf_off_zdict, _cf_off_zskip, _cf_ready
    if list_cls is not QuickList:
        raise TypeError("rdb_setup: the list class must be QuickList")
    _cf_types = (embstr, list_cls, hash_cls, set_cls, zset_cls)
    _cf_lzf = lzf
    _cf_embstr = <PyObject *>embstr
    _cf_list = <PyObject *>list_cls
    _cf_hash = <PyObject *>hash_cls
    _cf_set = <PyObject *>set_cls
    _cf_zset = <PyObject *>zset_cls
    _cf_off_ht = _cf_slot_offset(hash_cls, "ht")
    _cf_off_enc = _cf_slot_offset(set_cls, "enc")
    _cf_off_zdict = _cf_slot_offset(zset_cls, "dict")
    _cf_off_zskip = _cf_slot_offset(zset_cls, "skiplist")
    _cf_ready = True


cdef extern from *:
    # where HashCore.ht and SetCore.enc are in an instance (Cython's structs
    # of the two classes; the macros expand where they are used, after them)
    """
    #define OPH_OFF_HASHCORE_HT offsetof(struct __pyx_obj_7ophidis_3net_9_speedups_HashCore, ht)
    #define OPH_OFF_SETCORE_ENC offsetof(struct __pyx_obj_7ophidis_3net_9_speedups_SetCore, enc)
    """
    const Py_ssize_t OPH_OFF_HASHCORE_HT
    const Py_ssize_t OPH_OFF_SETCORE_ENC


cdef Py_ssize_t _cf_slot_offset(cls, name) except -1:
    # where a slot or a C field (HashCore.ht, SetCore.enc) is in an instance
    if name == "ht" and issubclass(cls, HashCore):
        return OPH_OFF_HASHCORE_HT
    if name == "enc" and issubclass(cls, SetCore):
        return OPH_OFF_SETCORE_ENC
    descr = cls.__dict__[name]
    if type(descr).__name__ != "member_descriptor":
        raise TypeError("%s.%s is not a slot" % (cls.__name__, name))
    # found with public API only: a sentinel written through the slot's
    # descriptor into a bare instance, then looked for among the instance's
    # pointer-sized words (tp_basicsize), where it must be once
    inst = cls.__new__(cls)
    sentinel = object()
    descr.__set__(inst, sentinel)
    tp = type(inst)
    cdef Py_ssize_t off, found = -1
    cdef Py_ssize_t size = (<PyTypeObject *>tp).tp_basicsize
    for off in range(<Py_ssize_t>sizeof(PyObject), size - <Py_ssize_t>sizeof(PyObject *) + 1,
                     <Py_ssize_t>sizeof(PyObject *)):
        if _cf_slot(<PyObject *>inst, off) == <PyObject *>sentinel:
            if found >= 0:
                raise TypeError("%s.%s: its offset is ambiguous" % (cls.__name__, name))
            found = off
    if found < 0:
        raise TypeError("%s.%s: its offset was not found" % (cls.__name__, name))
    return found


def rdb_write_keys(d, exp, write, bint compress, int list_fill, int list_depth, fallback, progress,
                   Py_ssize_t done, double key_delay=0.0, sleep=None):
    """Write the entries of the keyspace dict ``d`` (expiry times in ``exp``)
    through ``write(bytes)``, in 64 KB chunks; ``fallback(key, value)`` gives the
    type + key + value bytes of a value not covered here.  ``progress(done)``
    every 1024 keys, ``sleep(key_delay)`` after each key when ``key_delay``.
    Returns ``done`` plus the keys written."""
    cdef _RdbOut st = _RdbOut()
    cdef PyObject *dp = <PyObject *>d
    cdef PyObject *ep = <PyObject *>exp
    cdef PyObject *k
    cdef PyObject *v
    cdef PyObject *w
    cdef Py_ssize_t pos = 0, mark
    cdef bint has_exp = exp is not None and len(exp) > 0
    cdef long long when
    cdef bytes chunk
    if not _cf_ready:
        raise RuntimeError("rdb_setup was not called")
    st.compress = compress
    st.list_fill = list_fill
    st.list_depth = list_depth
    while _cf_dict_next(dp, &pos, &k, &v):
        if has_exp:
            w = _cf_dict_get(ep, k)
            if w != NULL:
                if _cf_is_int(w):
                    when = _cf_long(w)
                elif _cf_is_float(w):
                    when = <long long>_cf_float(w)
                else:
                    when = int(<object>w)
                _cf_byte(&st.out, 0xFC)
                _cf_le(&st.out, <unsigned long long>when, 8)
        mark = st.out.n
        if _cf_value(st, k, v):
            st.out.n = mark
            chunk = fallback(<object>k, <object>v)
            _cf_put(&st.out, PyBytes_AS_STRING(chunk), len(chunk))
        done += 1
        if key_delay:
            sleep(key_delay)
        if progress is not None and not done & 1023:
            progress(done)
        if st.out.n >= 65536:
            write(PyBytes_FromStringAndSize(st.out.p, st.out.n))
            st.out.n = 0
    if st.out.n:
        write(PyBytes_FromStringAndSize(st.out.p, st.out.n))
    return done


def rdb_load_plain_strings(bytes data, Py_ssize_t p, Py_ssize_t n, dict d):
    """rdb.load_plain_strings_py in C: the run of plain string records (6-bit
    lengths, no expiry) from ``p``; returns (the position, the count)."""
    cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef Py_ssize_t count = 0, q, kl, vl
    cdef object key
    if n > len(data):
        n = len(data)
    while p < n and s[p] == 0:
        kl = s[p + 1] if p + 1 < n else 255
        if kl >= 64:
            break
        q = p + 2 + kl
        if q >= n:
            break
        vl = s[q]
        if vl >= 64 or q + 1 + vl > n:
            break
        key = PyBytes_FromStringAndSize(<char *>s + p + 2, kl)
        if PyDict_Contains(d, key):
            break
        PyDict_SetItem(d, key, PyBytes_FromStringAndSize(<char *>s + q + 1, vl))
        count += 1
        p = q + 1 + vl
    return p, count


cdef inline Py_ssize_t _cf_lp_backlen_size(Py_ssize_t n) noexcept:
    """The bytes of listpack._backlen(n)."""
    if n <= 127:
        return 1
    if n < 16383:
        return 2
    if n < 2097151:
        return 3
    if n < 268435455:
        return 4
    return 5


cdef inline bint _cf_lp_backlen_ok(const unsigned char *s, Py_ssize_t n) noexcept:
    """The backlen bytes at s are listpack._backlen(n)."""
    cdef Py_ssize_t k = _cf_lp_backlen_size(n), i
    if k == 1:
        return s[0] == n
    # most significant 7-bit group first; all but the first have bit 7 set
    if s[0] != n >> (7 * (k - 1)):
        return False
    for i in range(1, k):
        if s[i] != ((n >> (7 * (k - 1 - i))) & 127) | 128:
            return False
    return True


def lp_decode_fast(buf, bint strict_count=True):
    """listpack.lp_decode_py of a bytes object (integers as decimal bytes),
    or None when anything is off (not bytes, a bad entry, a count mismatch):
    then the Python decoder gives the error."""
    cdef const unsigned char *s
    cdef Py_ssize_t n, p = 6, end, size, ln, w, i
    cdef unsigned int count
    cdef unsigned char b
    cdef long long v
    cdef unsigned long long u
    cdef char tmp[24]
    cdef int k
    cdef list out
    if not PyBytes_Check(buf):
        return None
    s = <const unsigned char *>PyBytes_AS_STRING(buf)
    n = PyBytes_GET_SIZE(buf)
    if n < 7:
        return None
    if <Py_ssize_t>(s[0] | (s[1] << 8) | (s[2] << 16) | (<unsigned int>s[3] << 24)) != n:
        return None
    count = s[4] | (s[5] << 8)
    end = n - 1
    out = []
    while p < end:
        b = s[p]
        if b < 0x80:
            k = snprintf(tmp, sizeof(tmp), "%d", <int>b)
            out.append(PyBytes_FromStringAndSize(tmp, k))
            size = 1
        elif b < 0xC0:
            size = 1 + (b & 0x3F)
            if p + size > end:
                return None
            out.append(PyBytes_FromStringAndSize(<const char *>s + p + 1, size - 1))
        elif b < 0xE0:
            if p + 2 > end:
                return None
            v = ((b & 0x1F) << 8) | s[p + 1]
            if v >= 1 << 12:
                v -= 1 << 13
            k = snprintf(tmp, sizeof(tmp), "%lld", v)
            out.append(PyBytes_FromStringAndSize(tmp, k))
            size = 2
        elif b < 0xF0:
            if p + 2 > end:
                return None
            ln = ((b & 0x0F) << 8) | s[p + 1]
            size = 2 + ln
            if p + size > end:
                return None
            out.append(PyBytes_FromStringAndSize(<const char *>s + p + 2, ln))
        elif b == 0xF0:
            if p + 5 > end:
                return None
            ln = s[p + 1] | (s[p + 2] << 8) | (s[p + 3] << 16) | (<Py_ssize_t>s[p + 4] << 24)
            size = 5 + ln
            if p + size > end:
                return None
            out.append(PyBytes_FromStringAndSize(<const char *>s + p + 5, ln))
        elif b <= 0xF4:
            w = 8 if b == 0xF4 else b - 0xF1 + 2
            size = 1 + w
            if p + size > end:
                return None
            u = 0
            for i in range(w):
                u |= (<unsigned long long>s[p + 1 + i]) << (8 * i)
            if w < 8 and u >> (8 * w - 1):
                u |= ~0ULL << (8 * w)           # sign extension
            k = snprintf(tmp, sizeof(tmp), "%lld", <long long>u)
            out.append(PyBytes_FromStringAndSize(tmp, k))
        else:
            return None
        w = _cf_lp_backlen_size(size)
        if p + size + w > end or not _cf_lp_backlen_ok(s + p + size, size):
            return None
        p += size + w
    if p != end or s[end] != 0xFF:
        return None
    if strict_count and count != 65535 and count != len(out):
        return None
    return out


# -- the RDB load's common records in C -------------------------------------------
# ``rdb_load_records`` reads the run of records (no expiry or LRU/LFU opcode
# before them) of the types a 7.0 server writes for small values: strings,
# sets (hashtable), intsets, hash and zset listpacks, quicklists of packed
# nodes.  It parses lengths and strings (int encodings, LZF) itself and
# hands the value's payload to ``build(type, payload)`` (RdbReader's own
# Python code, which makes the value).  Anything unusual (a record cut by
# the window's end, an opcode, an odd encoding, a corrupt payload, build
# raising or giving None, a key already loaded) stops it before that record:
# RdbReader.load's Python path then reads it (and gives the error).

cdef inline bint _ld_len(const unsigned char *s, Py_ssize_t *p, Py_ssize_t n,
                         unsigned long long *out, bint *enc) noexcept:
    """rdbLoadLen at p[0] (False: bail)."""
    cdef Py_ssize_t q = p[0], i
    cdef unsigned char b
    cdef unsigned long long v = 0
    if q >= n:
        return False
    b = s[q]
    enc[0] = False
    if b < 0x40:
        out[0] = b
        p[0] = q + 1
        return True
    if b < 0x80:
        if q + 2 > n:
            return False
        out[0] = ((b & 0x3F) << 8) | s[q + 1]
        p[0] = q + 2
        return True
    if b >= 0xC0:
        enc[0] = True
        out[0] = b & 0x3F
        p[0] = q + 1
        return True
    if b == 0x80 or b == 0x81:
        k = 4 if b == 0x80 else 8
        if q + 1 + k > n:
            return False
        for i in range(k):
            v = (v << 8) | s[q + 1 + i]
        out[0] = v
        p[0] = q + 1 + k
        return True
    return False


cdef bint _ld_lzf(const unsigned char *src, Py_ssize_t sn, char *dst, Py_ssize_t dn) noexcept:
    """LZF decompression of exactly dn bytes (False: corrupt, or another size)."""
    cdef Py_ssize_t ip = 0, op = 0, ln, ref
    cdef unsigned int ctrl
    while ip < sn:
        ctrl = src[ip]
        ip += 1
        if ctrl < 32:
            ln = ctrl + 1
            if op + ln > dn or ip + ln > sn:
                return False
            memcpy(dst + op, src + ip, ln)
            op += ln
            ip += ln
        else:
            ln = ctrl >> 5
            if ln == 7:
                if ip >= sn:
                    return False
                ln += src[ip]
                ip += 1
            if ip >= sn:
                return False
            ref = op - ((ctrl & 0x1F) << 8) - 1 - src[ip]
            ip += 1
            ln += 2
            if ref < 0 or op + ln > dn:
                return False
            while ln:
                dst[op] = dst[ref]
                op += 1
                ref += 1
                ln -= 1
    return op == dn


cdef object _ld_string(const unsigned char *s, Py_ssize_t *p, Py_ssize_t n):
    """rdbGenericLoadStringObject at p[0]: a new bytes, or None (bail)."""
    cdef unsigned long long v, clen, ulen
    cdef bint enc, e2
    cdef Py_ssize_t q = p[0]
    cdef long long iv
    cdef char tmp[24]
    cdef int k
    cdef object out
    if not _ld_len(s, &q, n, &v, &enc):
        return None
    if not enc:
        if v > <unsigned long long>(n - q):
            return None
        p[0] = q + <Py_ssize_t>v
        return PyBytes_FromStringAndSize(<const char *>s + q, <Py_ssize_t>v)
    if v <= 2:
        k = 1 << v
        if q + k > n:
            return None
        if k == 1:
            iv = <signed char>s[q]
        elif k == 2:
            iv = <short>(s[q] | (s[q + 1] << 8))
        else:
            iv = <int>(s[q] | (s[q + 1] << 8) | (s[q + 2] << 16) | (<unsigned int>s[q + 3] << 24))
        p[0] = q + k
        k = snprintf(tmp, sizeof(tmp), "%lld", iv)
        return PyBytes_FromStringAndSize(tmp, k)
    if v != 3:
        return None
    if not _ld_len(s, &q, n, &clen, &e2) or e2:
        return None
    if not _ld_len(s, &q, n, &ulen, &e2) or e2 or ulen == 0:
        return None
    if clen > <unsigned long long>(n - q) or ulen > clen * 128 + 64:
        return None     # (LZF expands at most ~88 times: a corrupt length, left to the Python path)
    out = PyBytes_FromStringAndSize(NULL, <Py_ssize_t>ulen)
    if not _ld_lzf(s + q, <Py_ssize_t>clen, PyBytes_AS_STRING(out), <Py_ssize_t>ulen):
        return None
    p[0] = q + <Py_ssize_t>clen
    return out


def rdb_load_records(bytes data, Py_ssize_t p, Py_ssize_t n, dict d, build, list counts, hash_cls=None,
                     Py_ssize_t hash_entries=0):
    """From ``p`` in ``data`` (the first ``n`` bytes), the run of records
    described above into ``d``; ``counts[type]`` += 1 for each.  With
    ``hash_cls`` (HashValue), hash listpacks are made here (what
    RdbReader._load_blob does: ``ht`` when over ``hash_entries`` fields).
    Returns (the position, the count of keys)."""
    cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef Py_ssize_t count = 0, q, i, start
    cdef unsigned long long m, c
    cdef unsigned char t
    cdef bint enc
    cdef object key, val, x
    cdef list items, flat
    cdef Py_ssize_t nf
    if n > len(data):
        n = len(data)
    while p < n:
        t = s[p]
        if not (t == 0 or t == 2 or t == 11 or t == 16 or t == 17 or t == 18):
            break
        q = p + 1
        key = _ld_string(s, &q, n)
        if key is None or PyDict_Contains(d, key):
            break
        if t == 0:
            val = _ld_string(s, &q, n)
            if val is None:
                break
        else:
            if t == 2 or t == 18:
                if not _ld_len(s, &q, n, &m, &enc) or enc or m == 0 or m > <unsigned long long>(n - q):
                    break
                items = []
                for i in range(<Py_ssize_t>m):
                    if t == 18:
                        if q >= n or s[q] != 2:      # a packed node (container 2)
                            break
                        q += 1
                    x = _ld_string(s, &q, n)
                    if x is None:
                        break
                    if t == 18:
                        if not PyBytes_GET_SIZE(x):
                            break
                        x = lp_decode_fast(x, False)
                        if x is None:
                            break
                        items.extend(<list>x)
                    else:
                        items.append(x)
                else:
                    i = m
                if i != <Py_ssize_t>m:
                    break
                x = items
            else:
                x = _ld_string(s, &q, n)
                if x is None:
                    break
            if t == 16 and hash_cls is not None:
                x = lp_decode_fast(x, False)
                if x is None:
                    break
                flat = <list>x
                nf = len(flat)
                if nf == 0 or nf & 1:
                    break
                val = hash_cls()
                if isinstance(val, HashCore):
                    for i in range(0, nf, 2):
                        _hc_set(<HashCore>val, flat[i], flat[i + 1])
                else:
                    for i in range(0, nf, 2):
                        PyDict_SetItem(val, flat[i], flat[i + 1])
                if len(<dict>val) * 2 != nf:       # a field twice
                    break
                val.ht = len(<dict>val) > hash_entries
            else:
                try:
                    val = build(t, x)
                except Exception:
                    break
                if val is None:
                    break
        PyDict_SetItem(d, key, val)
        counts[t] += 1
        count += 1
        p = q
    return p, count


# =====================================================================================
# Pub/sub fan-out (issue 17): PubSub._fanout and client.flush_pushes compiled
# =====================================================================================
# A message goes into the pending reply list of a subscriber whose requests
# are running, else into its push_buf, written with the others of the same
# event-loop iteration by flush_pushes (one write per subscriber per
# iteration).  The Python functions stay the definition (pure installs run
# them); a subscriber of another class than client.Client takes them too.

cdef list _push_flush = None        # client._FLUSH
cdef object _push_flush_fn = None   # client.flush_pushes
cdef type _push_client = None       # client.Client


def push_setup(list flush, flush_fn, type client_type):
    global _push_flush, _push_flush_fn, _push_client
    _push_flush = flush
    _push_flush_fn = flush_fn
    _push_client = client_type


def fanout(dict subs, bytes m2, bytes m3):
    """PubSub._fanout: the number of subscribers, or -1 (not all of them
    are client.Client: the Python function runs, nothing was done)."""
    cdef list clients = list(subs)
    cdef ClientCore c
    cdef Py_ssize_t n = len(clients)
    for o in clients:
        if type(o) is not _push_client:
            return -1
    for o in clients:
        c = <ClientCore>o
        if c.closing:
            continue
        m = m2 if c.resp == 2 else m3
        pw = c.pending_writes
        if pw is not None:
            (<list>pw).append(m)
            continue
        buf = c.push_buf
        if buf is None:
            c.push_buf = [m]
            _push_flush.append(c)
            if len(_push_flush) == 1:
                c.server.loop.call_soon(_push_flush_fn)
        else:
            (<list>buf).append(m)
    return n


def flush_pushes():
    """client.flush_pushes compiled."""
    cdef list clients = list(_push_flush)
    cdef ClientCore c
    del _push_flush[:]
    for o in clients:
        if type(o) is not _push_client:
            if o.push_buf is not None and not o.closing:
                o.write([])
            else:
                o.push_buf = None
            continue
        c = <ClientCore>o
        if c.push_buf is not None and not c.closing:
            _dr_write(c, [])
        else:
            c.push_buf = None


# ===========================================================================
# ZADD key score member: the compiled body (commands/zsets.zadd's fast path)
# ===========================================================================
# Only the common case: a plain decimal score (-?digits[.digits], not a zero
# other than "0"), an existing zset without TTL, nobody watching or blocked
# on the key, no keyspace events, and a member that is already there or a
# skiplist-encoded set (no listpack conversion to decide); the ordered index
# (types/zindex.py) is edited by its own add and remove.  Anything else:
# None, the Python function.

from libc.stdlib cimport strtod as _z_strtod

cdef object _ZSetValue = None


def sync_zset(zset_cls):
    global _ZSetValue
    _ZSetValue = zset_cls


cdef bint _z_score(bytes b, double *out) noexcept:
    cdef const char *s = PyBytes_AS_STRING(b)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(b), i = 0, digits = 0
    cdef char buf[40]
    cdef char *end
    if n == 0 or n > 32:
        return False
    if s[0] == 45:
        i = 1
    while i < n and 48 <= s[i] <= 57:
        i += 1
        digits += 1
    if digits == 0:
        return False
    if i < n:
        if s[i] != 46:
            return False
        i += 1
        digits = 0
        while i < n and 48 <= s[i] <= 57:
            i += 1
            digits += 1
        if digits == 0 or i < n:
            return False
    memcpy(buf, s, n)
    buf[n] = 0
    out[0] = _z_strtod(buf, &end)
    if out[0] == 0.0 and not (n == 1 and s[0] == 48):
        return False            # -0, 0.0, underflow: Python
    return True


cdef object _zadd(_Ctx x, list req):
    if len(req) != 4 or x.flags:
        return None
    key = req[1]
    cdef PyObject *pv = PyDict_GetItem(x.d, key)
    if pv is NULL or _g_type(pv) != <PyObject *>_ZSetValue or _ttl(x, key) or _held(x, key):
        return None
    cdef double score
    sb = req[2]
    if not PyBytes_Check(sb) or not _z_score(<bytes>sb, &score):
        return None
    z = <object>pv
    member = req[3]
    d = z.dict
    cdef PyObject *pc = PyDict_GetItem(d, member)
    sl = z.sl
    if not PyBytes_Check(member):
        return None
    if pc is NULL:
        if not z.skiplist:
            return None         # a listpack: the conversion rule in Python
        fs = score
        PyDict_SetItem(d, member, fs)
        sl.add(fs, member)
        x.dirty += 1
        return _ONE
    cur = <object>pc
    if cur.__class__ is not float:
        return None
    if <double>cur == score:
        return _ZERO
    fs = score
    sl.remove(cur, member)
    PyDict_SetItem(d, member, fs)
    sl.add(fs, member)
    x.dirty += 1
    return _ZERO
