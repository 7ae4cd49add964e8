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

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_Check, PyDict_Contains, PyDict_DelItem, PyDict_GetItem, PyDict_SetItem
from cpython.object cimport PyObject
from libc.stdio cimport snprintf
from libc.string cimport memchr, memcmp, memcpy
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

import hiredis

from ..errors import RedisError

# setup.py passes the SHA-256 of this file; speedups.py compares it with the
# file next to it and ignores a stale build.
SOURCE_HASH = PYX_HASH

cdef extern from *:
    int __builtin_clzll(unsigned long long x) nogil

cdef object _ProtocolError = hiredis.ProtocolError

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


cdef class CommandCore:
    """The fields of commands.Command that the request loop uses, as C
    fields (commands.Command derives from this class when the module is
    built, from a Python class with the same slots otherwise)."""
    cdef public object proc
    cdef public bint fastpath
    cdef public Py_ssize_t amin, amax
    cdef public long long calls
    cdef public double usec
    cdef public list hist
    cdef public Py_ssize_t cluster_key
    cdef public int cbody        # a compiled body (BODIES), 0: none


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


cdef inline Py_ssize_t _ndigits(Py_ssize_t v) noexcept:
    cdef Py_ssize_t d = 1
    while v >= 10:
        v //= 10
        d += 1
    return d


cdef inline char *_put_len(char *p, char kind, Py_ssize_t v) noexcept:
    # "<kind><v>\r\n"
    cdef Py_ssize_t d = _ndigits(v), i
    p[0] = kind
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


def run(client, gets, list out, dict table, bint slow, double t0):
    """Run the requests hiredis has ready (see client._run_requests).
    Returns (nreq, last): the number of requests taken off the parser and
    the last one; nreq is ~n when the Python parser must take over after
    n requests (hiredis refused the stream, or the request is not an array
    of bulk strings)."""
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
    srv = client.server
    dirty0 = None
    while True:
        try:
            req = gets()
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
                client.last_cmd = cmd
                if prop is not None:
                    dirty0 = srv.dirty
                try:
                    r = _body(cmd.cbody, client, <list>req) if cmd.cbody else None
                    out.append(r if r is not None else cmd.proc(client, req))
                except RedisError as e:
                    out.append(client.error_reply(e, cmd))
                except Exception as e:  # never let a command kill the link
                    out.append(client.internal_error(e, cmd, req))
                t1 = _now()
                dt = t1 - t0
                t0 = t1
                cmd.calls += 1
                cmd.usec += dt
                if dt >= _slow_check:
                    client.server.slow_call(client, cmd, req, dt)
                if _latency_tracking:
                    us = <long long>(dt * 976562.5)
                    slot = 64 - __builtin_clzll(<unsigned long long>us) if us > 0 else 0
                    cmd.hist[slot] += 1
                if prop is not None:
                    # Server.call's propagation (client._propagate)
                    d = srv.dirty != dirty0
                    if d or prop.forced or prop.rewritten is not None or prop.pending:
                        prop.after_call(client, cmd, req, d)
                if _ready:
                    srv.handle_ready_keys()
                continue
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
# None for anything but that case (a missing key, a TTL, a watched key,
# notifications on, another type ...), and the Python function runs.
# tests/test_speedups.py drives both loops with the same traffic.

cdef object _notify_mod = None     # keyspace.notify (flags)
cdef object _dbm_mod = None        # keyspace.db (lazy_server_del)
cdef object _stats = None          # keyspace.db.stats
cdef bytes _PONG = b"+PONG\r\n"
cdef bytes _OK = b"+OK\r\n"

BODIES = {"ping": 1, "get": 2, "set": 3, "incr": 4, "decr": 5}


def sync_bodies(notify_mod, dbm_mod, stats):
    global _notify_mod, _dbm_mod, _stats
    _notify_mod = notify_mod
    _dbm_mod = dbm_mod
    _stats = stats


def body_code(str fullname, module):
    """The compiled body of a built-in command (0: none)."""
    if module is not None or _stats is None:
        return 0
    return BODIES.get(fullname, 0)


cdef inline object _body(int code, client, list req):
    if code == 2:
        return _get(client, req)
    if code == 3:
        return _set(client, req)
    if code == 1:
        return _ping(client, req)
    if code == 4:
        return _incr(client, req, 1)
    if code == 5:
        return _incr(client, req, -1)
    return None


cdef object _ping(client, list req):
    if len(req) != 1:
        return None
    if client.resp == 2 and (client.pubsub_channels or client.pubsub_patterns or client.pubsub_shard):
        return None
    return _PONG


cdef object _get(client, list req):
    db = client.db
    d = db.d
    key = req[1]
    if not PyDict_Check(d):
        return None
    cdef PyObject *pv = PyDict_GetItem(d, key)
    if pv is NULL or type(<object>pv) is not bytes:
        return None
    ex = db.expires
    if ex and key in ex:
        return None
    _stats.keyspace_hits += 1
    cdef bytes v = <bytes>pv
    cdef Py_ssize_t n = PyBytes_GET_SIZE(v)
    out = PyBytes_FromStringAndSize(NULL, n + 5 + _ndigits(n))
    cdef char *p = _put_len(PyBytes_AS_STRING(out), 36, n)
    memcpy(p, PyBytes_AS_STRING(v), n)
    p[n] = 13
    p[n + 1] = 10
    return out


cdef object _set(client, list req):
    if len(req) != 3 or _notify_mod.flags or _dbm_mod.lazy_server_del:
        return None
    db = client.db
    key = req[1]
    bk = db.blocking_keys
    if bk and key in bk:
        return None
    wk = db.watched_keys
    if wk and key in wk:
        return None
    db.d[key] = req[2]
    ex = db.expires
    if ex:
        ex.pop(key, None)
    client.server.dirty += 1
    return _OK


cdef object _incr(client, list req, long long delta):
    if _notify_mod.flags:
        return None
    db = client.db
    d = db.d
    key = req[1]
    if not PyDict_Check(d):
        return None
    cdef PyObject *pv = PyDict_GetItem(d, key)
    if pv is NULL or type(<object>pv) is not bytes:
        return None
    ex = db.expires
    if ex and key in ex:
        return None
    wk = db.watched_keys
    if wk and key in wk:
        return None
    # the canonical decimal form of a number below 10^18 (anything else:
    # Python's rules and errors)
    cdef bytes v = <bytes>pv
    cdef const char *s = PyBytes_AS_STRING(v)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(v), i = 0
    cdef bint neg = False
    cdef long long acc = 0
    if n and s[0] == 45:
        neg = True
        i = 1
    if i >= n or n - i > 18 or (s[i] == 48 and (n - i > 1 or neg)):
        return None
    while i < n:
        if s[i] < 48 or s[i] > 57:
            return None
        acc = acc * 10 + (s[i] - 48)
        i += 1
    if neg:
        acc = -acc
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
    client.server.dirty += 1
    out = PyBytes_FromStringAndSize(NULL, 24 - k + 3)
    cdef char *p = PyBytes_AS_STRING(out)
    p[0] = 58
    memcpy(p + 1, buf + k, 24 - k)
    p[24 - k + 1] = 13
    p[24 - k + 2] = 10
    return out
