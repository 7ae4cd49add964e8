# cython: language_level=3, boundscheck=False, wraparound=False
"""The cluster's slot arithmetic and per-slot key index in C: the compiled
twin of cluster/slots.py (key_slot, SlotKeys) and the request loop's
check that a command's key is served here (_cluster_local)."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_SetItem

from ophidis.cmdtable._core cimport CommandCore
from ophidis.keyspace._keyspace cimport Keyspace, _ks_get, _ks_set

# Cluster mode (client.set_cluster): the fast path runs a command with keys
# only when the slot of its one key is served here (_owned[slot] == 1:
# ours, stable, the cluster ok); _owned is None while that map is being
# recomputed (then every command with keys takes the general path).
_cluster = False
_owned = None
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


cdef bint _cluster_local(CommandCore cmd, list req) except -1:
    # the fast path may run cmd in cluster mode
    cdef Py_ssize_t k = cmd.cluster_key
    if k == 0:
        return True
    if k < 0 or _owned is None or k >= len(req):
        return False
    return (<bytes>_owned)[_key_slot(<bytes>req[k])] == 1

def key_slot(bytes key):
    """The hash slot of key (the loop's C version of cluster.slots.key_hash_slot)."""
    return _key_slot(key)


cdef class SlotKeys(Keyspace):
    """cluster.slots.SlotKeys (database 0's key table with its per-slot key
    index): the keyspace table (keyspace/_keyspace.pyx) with the index kept
    in C.  The same methods and behaviour as the Python class, which
    documents them."""

    cdef public list by_slot

    def __cinit__(self, *args, **kw):
        self.by_slot = [None] * 16384

    def __init__(self, src=None):
        if src:
            self.update(src)

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

    def __setitem__(self, key, value):
        if not PyBytes_Check(key):
            raise TypeError("keyspace keys are bytes, not %s" % type(key).__name__)
        if _ks_get(self, <bytes>key) == NULL:
            self._index(<bytes>key)
        _ks_set(self, <bytes>key, value)

    def __delitem__(self, key):
        Keyspace.pop(self, key)
        self._forget(key)

    def pop(self, key, *default):
        if key in self:
            v = Keyspace.pop(self, key)
            self._forget(key)
            return v
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self):
        k, v = Keyspace.popitem(self)
        self._forget(k)
        return k, v

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args, **kw):
        for k, v in dict(*args, **kw).items():
            self[k] = v

    def clear(self):
        Keyspace.clear(self)
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


