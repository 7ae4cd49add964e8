# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled command bodies: the common case of a few commands
redis-benchmark's default list runs (GET SET INCR DECR MSET PING LPUSH
RPUSH LPOP RPOP LRANGE SADD SPOP HSET ZADD ZPOPMIN), run by the request loop
(net/_client.pyx) without a Python call.  Each mirrors the hot path of its
Python function in the command's family (commands/strings.py, lists.py,
...), which stays the definition: a body returns None for anything but that
case and the Python function runs.  tests/test_speedups.py drives both
loops with the same traffic."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_Contains, PyDict_Size
from cpython.object cimport PyObject, PyObject_Hash
from cpython.pyport cimport PY_SSIZE_T_MAX
from cpython.ref cimport Py_INCREF
from libc.string cimport memcpy

from ophidis.cmdtable._core cimport CommandCore
from ophidis.keyspace._core cimport DbCore, StatsCore
from ophidis.keyspace._keyspace cimport Keyspace, _ks_get, _ks_set
from ophidis.net._core cimport ClientCore
from ophidis.protocol._resp cimport _digits, _ndigits, _put_len
from ophidis.server._core cimport ServerCore
from ophidis.types._containers cimport (HashCore, SetCore, ZDict, _hc_len, _hc_lookup, _hc_set, _hc_set_in_place,
                                       _sc_add, _sc_discard, _sc_has, _zd_add, _zd_discard, _ztab_find)
from ophidis.types._quicklist cimport QuickList
from ophidis.types._zindex cimport ZEnt, ZIndex
from ophidis._dtoa cimport _dtoa_d2string

import os as _os

from ..keyspace import db as _dbm
from ..keyspace import notify as _notify
from ..types import containers as _containers
from ..types import zset as _zset

cdef extern from "Python.h":
    # a dict's item, borrowed (NULL: none): PyDict_GetItem without its
    # save and restore of the error state (~80 instructions a lookup); the
    # keys looked up here (bytes, str) cannot fail to hash or compare
    PyObject *_dget "PyDict_GetItemWithError" (object d, object k) except? NULL


cdef class _Ctx:
    """What the compiled bodies read of the client, its db and the server,
    loaded once for a run of bodies (nothing but a body runs in between, so
    none of it can change), and what they write, kept here until Python
    code runs next (_flush: the dirty counter, keyspace hits and misses,
    client.last_cmd)."""


cdef int _load(_Ctx x, ClientCore client) except -1:
    _reload(x, client)
    x.flags = _cfg_flags
    x.lazy = _cfg_lazy
    return 0


cdef int _reload(_Ctx x, ClientCore client) except -1:
    # _load but for the configuration's fields (flags, lazy): those of x's
    # last _load (the script bridge's calls of one run, no Python code since)
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
    x.d = d if isinstance(d, Keyspace) else None
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

# -- compiled command bodies ---------------------------------------------------
# The common case of a few commands redis-benchmark's default list runs,
# in C.  Each mirrors the hot path of its Python function (commands/
# strings.py, connection.py), which stays the definition: a body returns
# None for anything but that case (a TTL, a watched key, notifications on,
# another type ...), and the Python function runs.  The bodies of the list
# commands are at the end of the file (they use QuickList's C methods).
# tests/test_speedups.py drives both loops with the same traffic.

# keyspace.notify.flags and keyspace.db.lazy_server_del, copied when their
# setters change them (reading a module's dict per run costs ~230 instructions)
cdef long long _cfg_flags = 0
cdef bint _cfg_lazy = False


def _config_sync():
    global _cfg_flags, _cfg_lazy
    _cfg_flags = _notify.flags
    _cfg_lazy = _dbm.lazy_server_del


_notify.watch_flags(_config_sync)
_dbm.watch_lazy_server_del(_config_sync)
_config_sync()

# lists' encoding limits (types.containers' "Lists' encodings"), copied
# when list-max-listpack-size changes: a push onto a listpack passing
# _lp_bytes / _lp_count makes it a quicklist; a pop leaving a quicklist
# within _lp_half_bytes / _lp_half_count (one node at half the limits) makes
# it a listpack again (containers.list_shrunk)
cdef Py_ssize_t _lp_bytes = 8192, _lp_count = PY_SSIZE_T_MAX
cdef Py_ssize_t _lp_half_bytes = 4096, _lp_half_count = PY_SSIZE_T_MAX


def _list_sync():
    global _lp_bytes, _lp_count, _lp_half_bytes, _lp_half_count
    fill = _containers.list_fill()
    _lp_bytes = _containers.list_byte_limit(fill)
    _lp_half_bytes = _lp_bytes if fill >= 0 else _lp_bytes >> 1
    _lp_count = (fill or 1) if fill >= 0 else PY_SSIZE_T_MAX
    _lp_half_count = _lp_count >> 1 if fill >= 0 else PY_SSIZE_T_MAX


_containers.watch_list_fill(_list_sync)
_list_sync()
cdef StatsCore _stats = _dbm.stats
cdef object _SetValue = _containers.SetValue
cdef object _HashValue = _containers.HashValue
cdef object _ZSetValue = _zset.ZSetValue
if not issubclass(_SetValue, SetCore) or not issubclass(_HashValue, HashCore):
    raise ImportError("commands._bodies: the set and hash types must derive from SetCore and HashCore")
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
          "rpop": 9, "sadd": 10, "hset": 11, "mset": 12, "lrange": 13, "spop": 20, "zadd": 14,
          "zpopmin": 21}


def body_code(str fullname, module):
    """The compiled body of a built-in command (0: none)."""
    if module is not None:
        return 0
    return BODIES.get(fullname, 0)


cdef inline bint _in(m, key) except -1:
    # key in m, for a mapping that is mostly empty (a dict's size read in C)
    if type(m) is dict:
        return PyDict_Size(m) != 0 and PyDict_Contains(m, key) == 1
    return bool(m) and key in m


cdef inline bint _ttl(_Ctx x, key) except -1:
    # has key a TTL (the bodies leave such keys to the Python functions)
    return _in(x.ex, key)


cdef inline bint _held(_Ctx x, key) except -1:
    # is key watched (WATCH) or waited on (a blocked client)
    return _in(x.wk, key) or _in(x.bk, key)


cdef inline bint _watched(_Ctx x, key) except -1:
    return _in(x.wk, key)


cdef inline PyObject *_kget(_Ctx x, key) noexcept:
    # the value of key in the db's table (borrowed), NULL: none (as a dict,
    # a key that is not bytes is never there)
    if not PyBytes_CheckExact(key):
        return NULL
    return _ks_get(<Keyspace>x.d, <bytes>key)


cdef inline int _kset(_Ctx x, key, value) except -1:
    # d[key] = value (a subclass of the table, the cluster's SlotKeys,
    # through its own method)
    d = x.d
    if _g_type(<PyObject *>d) == <PyObject *>Keyspace and PyBytes_CheckExact(key):
        return _ks_set(<Keyspace>d, <bytes>key, value)
    d[key] = value
    return 0


cdef object _body(int code, _Ctx x, list req):
    if x.d is None:         # a database map of another class: Python
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
    if code == 21:
        return _zpopmin(x, req)
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


cdef inline bytes _bulk_reply(const char *v, Py_ssize_t n):
    # "$<n>\r\n<v>\r\n": GET's and SPOP's reply
    out = PyBytes_FromStringAndSize(NULL, n + 5 + _ndigits(n))
    cdef char *p = _put_len(PyBytes_AS_STRING(out), 36, n)
    memcpy(p, v, n)
    p[n] = 13
    p[n + 1] = 10
    return out


cdef object _get(_Ctx x, list req):
    # the value is read through its borrowed pointer: no reference count
    # written (a page of the keyspace not dirtied while a child has it)
    key = req[1]
    cdef PyObject *pv = _kget(x, key)
    if pv is NULL:
        # a miss (db.lookup_read), unless a keymiss event is to be sent
        if x.flags:
            return None
        x.misses += 1
        return _NULL_BULK if x.resp == 2 else _NULL3
    if _g_type(pv) != <PyObject *>bytes or _ttl(x, key):
        return None
    x.hits += 1
    return _bulk_reply(_g_str(pv), _g_len(pv))


cdef object _set(_Ctx x, list req):
    if len(req) != 3 or x.flags or x.lazy:
        return None
    key = req[1]
    if _held(x, key):
        return None
    _kset(x, key, req[2])
    ex = x.ex
    if ex:
        ex.pop(key, None)
    x.dirty += 1
    return _OK


# INCR's results 0..9999 are shared value objects, as Redis's
# shared.integers (OBJ_SHARED_INTEGERS): a counter's new value is then no
# allocation (bytes are immutable: sharing them is not observable)
cdef enum:
    SHARED_INTEGERS = 10000
cdef PyObject *_shared_ints[SHARED_INTEGERS]


cdef inline object _shared_int(long long v, const char *digits, Py_ssize_t n):
    cdef PyObject *o = _shared_ints[v]
    if o is NULL:
        b = PyBytes_FromStringAndSize(digits, n)
        Py_INCREF(b)            # the table's reference, kept for the process's life
        _shared_ints[v] = o = <PyObject *>b
    return <object>o


cdef object _incr(_Ctx x, list req, long long delta):
    if x.flags:
        return None
    key = req[1]
    cdef PyObject *pv = _kget(x, key)
    if pv is NULL or _g_type(pv) != <PyObject *>bytes or _ttl(x, key) or _watched(x, key):
        return None
    # the canonical decimal form of a number below 10^18 (anything else:
    # Python's rules and errors)
    cdef long long acc
    if not _canonical_ll(<bytes>pv, &acc):
        return None
    acc += delta
    cdef char buf[24]
    cdef Py_ssize_t k = _digits(buf, <unsigned long long>(-acc if acc < 0 else acc))
    if acc < 0:
        k -= 1
        buf[k] = 45
    if 0 <= acc < SHARED_INTEGERS:
        new = _shared_int(acc, buf + k, 24 - k)
    else:
        new = PyBytes_FromStringAndSize(buf + k, 24 - k)
    _kset(x, key, new)
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
    cdef PyObject *pv = _kget(x, key)
    if pv is NULL or _g_type(pv) != <PyObject *>_SetValue or _ttl(x, key):
        return None
    cdef SetCore s = <SetCore>pv
    if s._aux is not None or s.enc is not _HASHTABLE and s.enc != _HASHTABLE:
        return None
    m = req[2]
    if _sc_has(s, m):
        return _ZERO
    if _watched(x, key):
        return None
    _sc_add(s, m)
    x.dirty += 1
    return _ONE


cdef object _hset(_Ctx x, list req):
    # hashes.hset: one field of an existing hash, no conversion
    if len(req) != 4 or x.flags:
        return None
    key = req[1]
    cdef PyObject *pv = _kget(x, key)
    if pv is NULL or _g_type(pv) != <PyObject *>_HashValue or _ttl(x, key) or _watched(x, key):
        return None
    cdef HashCore h = <HashCore>pv
    if h._aux is not None or h.ttl is not None:     # (fields with TTLs: hashes.hset)
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
        if _hc_len(h) + (0 if known else 1) > cfg[_LP_ENTRIES]:
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
        _kset(x, key, req[i + 1])
        if ex:
            ex.pop(key, None)
    x.dirty += (n - 1) >> 1
    return _OK


# -- the list command bodies (see "compiled command bodies") ---------------------

cdef int _list_grow(QuickList ql, list req) except -1:
    # containers.list_grow for the elements req[2:] (ql a listpack)
    cdef Py_ssize_t i, n = len(req), add = 0
    for i in range(2, n):
        add += len(req[i])
    if 7 + ql.lpb + add > _lp_bytes or ql.size + n - 2 > _lp_count:
        ql.quick = True
    return 0


cdef object _push(_Ctx x, list req, bint front):
    # lists._push: LPUSH/RPUSH onto an existing list or a new key
    if x.flags:
        return None
    key = req[1]
    cdef PyObject *pv = _kget(x, key)
    cdef QuickList ql
    cdef Py_ssize_t n = len(req), i
    if _held(x, key):
        return None
    if pv is NULL:
        ql = QuickList.__new__(QuickList)
        _list_grow(ql, req)
        for i in range(2, n):
            ql._push(req[i], front)
        _kset(x, key, ql)
    else:
        if _g_type(pv) != <PyObject *>QuickList or _ttl(x, key):
            return None
        ql = <QuickList>pv
        if not ql.quick:
            _list_grow(ql, req)
        for i in range(2, n):
            ql._push(req[i], front)
    x.dirty += n - 2
    return _int_reply(ql.size)


cdef object _pop(_Ctx x, list req, bint front):
    # lists._pop without a count, the list keeping an element at least
    if len(req) != 2:
        return None
    key = req[1]
    cdef PyObject *pv = _kget(x, key)
    if pv is NULL:
        return _NULL3 if x.resp >= 3 else _NULL_BULK
    if _g_type(pv) != <PyObject *>QuickList or x.flags:
        return None
    cdef QuickList ql = <QuickList>pv
    if ql.size < 2 or _ttl(x, key) or _watched(x, key):
        return None
    r = ql._pop_bulk(front)
    if ql.quick and 7 + ql.lpb <= _lp_half_bytes and ql.size <= _lp_half_count:
        ql.quick = False        # a listpack again
    x.dirty += 1
    return r


# SPOP's random picks: xorshift64*, seeded from the OS at import (the
# Python function draws from the random module; a pick only has to be fair)
cdef unsigned long long _rng = int.from_bytes(_os.urandom(8), "little") | 1


cdef inline Py_ssize_t _rand_below(Py_ssize_t n) noexcept:
    global _rng
    _rng ^= _rng >> 12
    _rng ^= _rng << 25
    _rng ^= _rng >> 27
    return <Py_ssize_t>(((_rng * 2685821657736338717ULL) >> 11) % <unsigned long long>n)


cdef object _spop(_Ctx x, list req):
    # sets.spop without a count: a missing key (a write lookup: no stats,
    # no event), or a member of a set of two or more whose random index
    # (containers._random_index's Aux: the member list and the removed
    # ones) is already there, as after the first SPOP of a big set.  Not
    # while anything is propagated (SPOP goes as SREM key member).
    if len(req) != 2:
        return None
    key = req[1]
    cdef PyObject *pv = _kget(x, key)
    if pv is NULL:
        return _NULL3 if x.resp >= 3 else _NULL_BULK
    if x.flags or _g_type(pv) != <PyObject *>_SetValue or _ttl(x, key) or _watched(x, key):
        return None
    cdef SetCore s = <SetCore>pv
    a = s._aux
    cdef Py_ssize_t n = s.tab.used, i, k
    if a is None or n < 2 or x.srv.propagate_hooks:
        return None
    arr = a.arr
    gone = a.gone
    if type(arr) is not list or type(gone) is not set:
        return None
    cdef list lst = <list>arr
    cdef set g = <set>gone
    if len(lst) - len(g) != n or len(g) > n + 16:
        return None
    while True:
        k = len(lst)
        i = _rand_below(k)
        m = lst[i]
        last = lst.pop()
        if i < k - 1:
            lst[i] = last
        if g and m in g:
            g.discard(m)
            continue
        break
    _sc_discard(s, m)
    if a.keys is not None:
        a.dead += 1
    x.dirty += 1
    return _bulk_reply(PyBytes_AS_STRING(m), PyBytes_GET_SIZE(m))


cdef object _lrange(_Ctx x, list req):
    # lists.lrange with canonical integer indexes
    cdef long long start, end
    if not _canonical_ll(<bytes>req[2], &start) or not _canonical_ll(<bytes>req[3], &end):
        return None
    key = req[1]
    cdef PyObject *pv = _kget(x, key)
    if pv is NULL:
        if x.flags:
            return None
        x.misses += 1
        return _EMPTY_ARRAY
    if _g_type(pv) != <PyObject *>QuickList or _ttl(x, key):
        return None
    x.hits += 1
    return (<QuickList>pv)._bulk_range(start, end)


# ===========================================================================
# ZADD key score member: the compiled body (commands/zsets.zadd's fast path)
# ===========================================================================
# Only the common case: a plain decimal score (-?digits[.digits], not a zero
# other than "0"), an existing zset without TTL, nobody watching or blocked
# on the key, no keyspace events, and a member that is already there or a
# skiplist-encoded set (no listpack conversion to decide); the ordered index
# (types/_zindex.pyx's ZIndex) is edited through its C methods.  Anything else:
# None, the Python function.

from libc.stdlib cimport strtod as _z_strtod

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
    cdef PyObject *pv = _kget(x, key)
    if pv is NULL or _g_type(pv) != <PyObject *>_ZSetValue or _ttl(x, key) or _held(x, key):
        return None
    cdef double score
    sb = req[2]
    if not PyBytes_Check(sb) or not _z_score(<bytes>sb, &score):
        return None
    z = <object>pv
    member = req[3]
    if not PyBytes_CheckExact(member):
        return None
    sl = z.sl
    if _g_type(<PyObject *>sl) != <PyObject *>ZIndex:
        return None
    cdef ZIndex ix = <ZIndex>sl
    d = z.dict
    if _g_type(<PyObject *>d) != <PyObject *>ZDict:
        return None
    cdef ZDict zd = <ZDict>d
    cdef Py_hash_t hv = PyObject_Hash(member)
    cdef Py_ssize_t i = _ztab_find(&zd.tab, <PyObject *>member, PyBytes_AS_STRING(member), PyBytes_GET_SIZE(member), hv)
    if i < 0:
        if not z.skiplist:
            return None         # a listpack: the conversion rule in Python
        _zd_add(zd, member, hv, score)
        ix.add_(score, <bytes>member)
        x.dirty += 1
        return _ONE
    cdef Py_ssize_t e = zd.tab.idx[i]
    cdef double cur = zd.sc[e]
    if cur == score:
        return _ZERO
    ix.remove_(cur, <bytes>member)
    zd.sc[e] = score
    ix.add_(score, <bytes>member)
    x.dirty += 1
    return _ZERO


# ZPOPMIN key (commands/zsets.zpopmin's fast path): a zset of more than one
# member (emptying it deletes the key: Python), no TTL, not watched, no
# keyspace events.
cdef object _zpopmin(_Ctx x, list req):
    if len(req) != 2 or x.flags:
        return None
    key = req[1]
    cdef PyObject *pv = _kget(x, key)
    if pv is NULL or _g_type(pv) != <PyObject *>_ZSetValue or _ttl(x, key) or _watched(x, key):
        return None
    z = <object>pv
    sl = z.sl
    if _g_type(<PyObject *>sl) != <PyObject *>ZIndex or (<ZIndex>sl).length < 2:
        return None
    cdef ZIndex ix = <ZIndex>sl
    cdef ZEnt *first = &ix.blk[0].e[0]
    cdef double score = first.score
    member = <bytes>first.member
    d = z.dict
    if _g_type(<PyObject *>d) != <PyObject *>ZDict:
        return None
    _zd_discard(<ZDict>d, member)
    ix.pop_(0)
    z.dels += 1
    x.dirty += 1
    # *2 $<len> member then the score as a bulk string (RESP2) or a double
    cdef char f[40]
    cdef Py_ssize_t fn = _dtoa_d2string(score, f), mn = PyBytes_GET_SIZE(member)
    cdef Py_ssize_t size = 4 + 1 + _ndigits(mn) + 2 + mn + 2 + fn + 3
    if x.resp < 3:
        size += _ndigits(fn) + 2
    out = PyBytes_FromStringAndSize(NULL, size)
    cdef char *p = PyBytes_AS_STRING(out)
    memcpy(p, b"*2\r\n", 4)
    p = _put_len(p + 4, 36, mn)
    memcpy(p, PyBytes_AS_STRING(member), mn)
    p += mn
    p[0] = 13
    p[1] = 10
    p += 2
    if x.resp < 3:
        p = _put_len(p, 36, fn)
    else:
        p[0] = 44
        p += 1
    memcpy(p, f, fn)
    p[fn] = 13
    p[fn + 1] = 10
    return out
