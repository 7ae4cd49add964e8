# cython: language_level=3, boundscheck=False, wraparound=False
"""The RDB codec's hot loops in C: the compiled twin of persistence/rdb.py's
key writer (rdb_write_keys) and loaders (rdb_load_plain_strings,
rdb_load_records; persistence/_listpack.pyx has lp_decode_fast)."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_Contains, PyDict_GetItem, PyDict_SetItem
from cpython.object cimport PyObject, PyTypeObject
from libc.stdio cimport snprintf
from libc.string cimport memcmp, memcpy

from ophidis._dtoa cimport _dtoa_fpconv
from ophidis.persistence._listpack cimport _lp_canon
from ophidis.keyspace._keyspace cimport Keyspace, KsEntry, _ks_get, _ks_next, _ks_set
from ophidis.types._containers cimport (HashCore, OphTab, SetCore, ZDict, _hc_set, _hc_tab, _hp_f, _hp_fn, _hp_v, _hp_vn,
                                       _sc_tab, _tab_next, _zd_sc, _zd_tab)
from ophidis.types._quicklist cimport QuickList, _qlnode, _ql_esz, _ql_fwd, _ql_hdr

from ..keyspace.db import EmbStr
from ..types.containers import HashValue, ListValue, SetValue
from ..types.zset import ZSetValue
from ._listpack import lp_decode_fast
from .rdbcodec import redis_lzf

# =====================================================================================
# RDB writer (issue 17): persistence/rdb.py's write_snapshot key loop in C.
#
# ``rdb_write_keys`` writes one database's key entries (expiry, type, key, value)
# with the same bytes as the Python writer (rdbencode.Encoder.type_and_value, which
# stays the pure twin: OPHIDIS_PURE=1, LRU/LFU policies).  It walks the keyspace
# with borrowed references only (PyDict_Next, the tables of sets, hashes and
# zsets (OphTab), the QuickList's node buffers, __slots__ read at their offsets): no reference
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
    """
    PyObject *_cf_slot(PyObject *o, Py_ssize_t off) noexcept

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
cdef Py_ssize_t _cf_off_ht = 0, _cf_off_ttl = 0, _cf_off_enc = 0, _cf_off_zdict = 0, _cf_off_zskip = 0
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
    if 0 < n <= 11 and _lp_canon(s, n, &v) and -2147483648 <= v <= 2147483647:
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
    if n <= 20 and _lp_canon(s, n, &v):
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
    k = _dtoa_fpconv(d, tmp)
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
    cdef bint allow, one = not (<QuickList>v).quick
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
        if one:
            # a listpack-encoded list: one node, as rdbSaveObject writes it
            allow = cur > 0
        elif cur:
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
    if not _cf_is_bytes(k):
        return 1
    return _cf_value_kn(st, _cf_bytes_str(k), _cf_bytes_len(k), v)


cdef int _cf_value_kn(_RdbOut st, const char *ks, Py_ssize_t kn, PyObject *v) except -1:
    # _cf_value of the key's bytes (a keyspace table's entry)
    cdef PyObject *t = _cf_type(v)
    cdef PyObject *f
    cdef PyObject *x
    cdef PyObject *enc
    cdef const char *s = NULL
    cdef const char *s2 = NULL
    cdef Py_ssize_t n = 0, n2 = 0, pos = 0, start, count = 0, i, width
    cdef long long lv
    cdef long long *ints
    cdef _CfScored *sc
    cdef _CfBuf *out = &st.out
    cdef _CfBuf *tmp = &st.tmp
    cdef bint compress = st.compress
    cdef double dscore
    cdef const OphTab *tab
    cdef const double *zsc
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
        if _cf_slot(v, _cf_off_ttl) != <PyObject *>None:
            return 1        # fields with TTLs: rdbencode's hash with metadata
        # (the hash's pairs, read in its table without taking references)
        tab = _hc_tab(v)
        x = _cf_slot(v, _cf_off_ht)
        if x == _cf_false:
            tmp.n = 0
            start = _cf_lp_open(tmp)
            while _tab_next(tab, &pos, &x):
                _cf_lp_entry(tmp, _hp_f(x), _hp_fn(x))
                _cf_lp_entry(tmp, _hp_v(x), _hp_vn(x))
                count += 2
            _cf_lp_close(tmp, start, count)
            _cf_byte(out, 16)
            _cf_string(out, ks, kn, compress)
            return _cf_string(out, tmp.p, tmp.n, compress)
        if x != _cf_true:
            return 1
        _cf_byte(out, 4)
        _cf_string(out, ks, kn, compress)
        _cf_len(out, tab.used)
        while _tab_next(tab, &pos, &x):
            _cf_string(out, _hp_f(x), _hp_fn(x), compress)
            _cf_string(out, _hp_v(x), _hp_vn(x), compress)
        return 0
    if t == _cf_set:
        # (the set's members, read in its table without taking references)
        tab = _sc_tab(v)
        enc = _cf_slot(v, _cf_off_enc)
        if enc == NULL or not _cf_is_bytes(enc):
            return 1
        if _cf_bytes_len(enc) == 6 and memcmp(_cf_bytes_str(enc), b"intset", 6) == 0:
            n2 = tab.used
            st.arr_room(n2 + 1, sizeof(long long))
            ints = <long long *>st.arr
            while _tab_next(tab, &pos, &f):
                if count >= n2 or not _cf_str(f, &s, &n) or not _lp_canon(s, n, &lv):
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
        _cf_len(out, tab.used)
        while _tab_next(tab, &pos, &f):
            _cf_string(out, _cf_bytes_str(f), _cf_bytes_len(f), compress)
        return 0
    if t == _cf_zset:
        x = _cf_slot(v, _cf_off_zdict)
        enc = _cf_slot(v, _cf_off_zskip)
        if x == NULL or _cf_type(x) != <PyObject *>ZDict or (enc != _cf_true and enc != _cf_false):
            return 1
        # (the members and scores, read in its table without taking references)
        tab = _zd_tab(x)
        zsc = _zd_sc(x)
        n2 = tab.used
        st.arr_room(n2 + 1, sizeof(_CfScored))
        sc = <_CfScored *>st.arr
        while _tab_next(tab, &pos, &f):
            if count >= n2 or not _cf_str(f, &s, &n):
                return 1
            sc[count].score = zsc[pos - 1]
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


cdef Py_ssize_t _cf_slot_offset(cls, name) except -1:
    # where a slot or a C field (HashCore.ht, SetCore.enc) is in an
    # instance, found with public API only: a sentinel set as the field of a
    # bare instance, then looked for among the instance's pointer-sized
    # words (tp_basicsize), where it must be once
    inst = cls.__new__(cls)
    sentinel = object()
    setattr(inst, name, sentinel)
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


# the value classes the writer knows (the list class is QuickList) and where
# their fields are
if ListValue is not QuickList:
    raise ImportError("persistence._rdb: the list class must be QuickList")
_cf_types = (EmbStr, ListValue, HashValue, SetValue, ZSetValue)
_cf_lzf = redis_lzf
_cf_embstr = <PyObject *>EmbStr
_cf_list = <PyObject *>ListValue
_cf_hash = <PyObject *>HashValue
_cf_set = <PyObject *>SetValue
_cf_zset = <PyObject *>ZSetValue
_cf_off_ht = _cf_slot_offset(HashValue, "ht")
_cf_off_ttl = _cf_slot_offset(HashValue, "ttl")
_cf_off_enc = _cf_slot_offset(SetValue, "enc")
_cf_off_zdict = _cf_slot_offset(ZSetValue, "dict")
_cf_off_zskip = _cf_slot_offset(ZSetValue, "skiplist")
_cf_ready = True


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
    cdef bytes chunk
    if not _cf_ready:
        raise RuntimeError("rdb_setup was not called")
    st.compress = compress
    st.list_fill = list_fill
    st.list_depth = list_depth
    if isinstance(d, Keyspace):
        return _write_table(st, <Keyspace>d, exp if has_exp else None, write, fallback, progress, done,
                            key_delay, sleep)
    while _cf_dict_next(dp, &pos, &k, &v):
        if has_exp:
            w = _cf_dict_get(ep, k)
            if w != NULL:
                _w_expiry(st, w)
        mark = st.out.n
        if _cf_value(st, k, v):
            st.out.n = mark
            chunk = fallback(<object>k, <object>v)
            _cf_put(&st.out, PyBytes_AS_STRING(chunk), len(chunk))
        done += 1
        _w_step(st, done, write, progress, key_delay, sleep)
    if st.out.n:
        write(PyBytes_FromStringAndSize(st.out.p, st.out.n))
    return done


cdef inline int _w_expiry(_RdbOut st, PyObject *w) except -1:
    # a key's expiry record (its ms time: an int, else a float or any number)
    cdef long long when
    if _cf_is_int(w):
        when = _cf_long(w)
    elif _cf_is_float(w):
        when = <long long>_cf_float(w)
    else:
        when = int(<object>w)
    _cf_byte(&st.out, 0xFC)
    _cf_le(&st.out, <unsigned long long>when, 8)
    return 0


cdef inline int _w_step(_RdbOut st, Py_ssize_t done, write, progress, double key_delay, sleep) except -1:
    # after each key: the test delay, the progress report, a full buffer written
    if key_delay:
        sleep(key_delay)
    if progress is not None and not done & 1023:
        progress(done)
    if st.out.n >= 65536:
        write(PyBytes_FromStringAndSize(st.out.p, st.out.n))
        st.out.n = 0
    return 0


cdef Py_ssize_t _write_table(_RdbOut st, Keyspace d, exp, write, fallback, progress, Py_ssize_t done,
                             double key_delay, sleep) except -1:
    # rdb_write_keys over a keyspace table: its entries read in place
    # (borrowed, no reference count written: a forked child's pages stay
    # shared); a key object is made only for an expiry lookup or a fallback
    cdef KsEntry *e
    cdef Py_ssize_t pos = 0, mark
    cdef PyObject *ep = <PyObject *>exp
    cdef PyObject *w
    cdef object key
    while _ks_next(d, &pos, &e):
        if exp is not None:
            key = PyBytes_FromStringAndSize(e.key, e.klen)
            w = _cf_dict_get(ep, <PyObject *>key)
            if w != NULL:
                _w_expiry(st, w)
            key = None
        mark = st.out.n
        if _cf_value_kn(st, e.key, e.klen, e.value):
            st.out.n = mark
            chunk = fallback(PyBytes_FromStringAndSize(e.key, e.klen), <object>e.value)
            _cf_put(&st.out, PyBytes_AS_STRING(chunk), len(chunk))
        done += 1
        _w_step(st, done, write, progress, key_delay, sleep)
    if st.out.n:
        write(PyBytes_FromStringAndSize(st.out.p, st.out.n))
    return done


cdef inline int _ld_has(object d, bytes key) except -1:
    # key in d: a database's table (a Keyspace) or a dict
    if _cf_type(<PyObject *>d) == <PyObject *>Keyspace:
        return _ks_get(<Keyspace>d, key) != NULL
    return PyDict_Contains(d, key)


cdef inline int _ld_put(object d, bytes key, object val) except -1:
    if _cf_type(<PyObject *>d) == <PyObject *>Keyspace:
        return _ks_set(<Keyspace>d, key, val)
    return PyDict_SetItem(d, key, val)


cdef inline int _ld_check(object d) except -1:
    if _cf_type(<PyObject *>d) != <PyObject *>Keyspace and _cf_type(<PyObject *>d) != <PyObject *>dict:
        raise TypeError("a keyspace table or a dict is expected")
    return 0


def rdb_load_plain_strings(bytes data, Py_ssize_t p, Py_ssize_t n, d):
    """rdb.load_plain_strings_py in C: the run of plain string records (6-bit
    lengths, no expiry) from ``p``; returns (the position, the count)."""
    cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef Py_ssize_t count = 0, q, kl, vl
    cdef object key
    _ld_check(d)
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
        if _ld_has(d, key):
            break
        _ld_put(d, key, PyBytes_FromStringAndSize(<char *>s + q + 1, vl))
        count += 1
        p = q + 1 + vl
    return p, count



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


def rdb_load_records(bytes data, Py_ssize_t p, Py_ssize_t n, d, build, list counts, hash_cls=None,
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
    _ld_check(d)
    if n > len(data):
        n = len(data)
    while p < n:
        t = s[p]
        if not (t == 0 or t == 2 or t == 11 or t == 16 or t == 17 or t == 18):
            break
        q = p + 1
        key = _ld_string(s, &q, n)
        if key is None or _ld_has(d, key):
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
                if len(val) * 2 != nf:       # a field twice
                    break
                val.ht = len(val) > hash_entries
            else:
                try:
                    val = build(t, x)
                except Exception:
                    break
                if val is None:
                    break
        _ld_put(d, key, val)
        counts[t] += 1
        count += 1
        p = q
    return p, count



