"""Memory accounting: the byte estimates of keys, values and databases.

Accounting (``used_memory``)
----------------------------
CPython never tells how many bytes a value holds, and freed memory stays in
pymalloc's arenas, so neither RSS nor allocator statistics follow deletes.
Ophidis estimates instead, per key, in O(1):

  cost(key) = sizeof(key) + PY_DICT_ENTRY + pysize(value) [+ EXPIRE_ENTRY]

(a compiled install's keyspace table keeps the key's bytes in its entry:
its cost is that block, 16 + len(key) rounded up as pymalloc does, plus
KS_ENTRY, in place of sizeof(key) + PY_DICT_ENTRY)

``pysize`` is ``sys.getsizeof`` for strings and the container's own table
plus ``len * average element size`` for collections, the average taken on the
first few elements (deterministic for a given state, so the estimate of a
key after a command equals its estimate before the next one).

While ``maxmemory`` is set, every command runs through ``Server.call`` (the
fast path is off) and the tracker measures the keys of each write command
(from its key specs) before and after it runs: the difference is added to a
per-database total.  Expiry, eviction and flushes adjust the totals
directly.  Nothing of this runs while ``maxmemory`` is 0: INFO then computes
the estimate on demand (exactly for small databases, by stride sampling for
big ones).

used_memory = STARTUP + dataset + client buffers + AOF buffer.
"""

from __future__ import annotations

import sys
from itertools import islice

from ..cmdtable.keys import get_keys, range_last
from ..keyspace.db import MODULE_CLASSES, EmbStr
from ..types.array import ArrayValue
from ..types.containers import HashValue, ListValue, SetValue
from ..types.stream import StreamValue
from ..types.zset import ZSetValue

getsizeof = sys.getsizeof
# sys.getsizeof of a bytes object is this plus its length (sys.getsizeof parses
# its arguments with keywords: ~0.1 us a call, len() is far cheaper).
BYTES_BASE = sys.getsizeof(b"")

PY_DICT_ENTRY = 42       # our keyspace: amortized bytes per entry of a big Python dict (measured)
EXPIRE_ENTRY = PY_DICT_ENTRY + 32
KS_ENTRY = 16            # the keyspace table (keyspace/_keyspace.pyx): its index and pointer array per key
STARTUP = 1 << 20        # fixed server structures (interpreter code not counted)
CLIENT_BASE = 2048       # per connection: objects, transport, parser
# A client's bookkeeping beyond its buffers (what Redis's
# getClientMemoryUsage counts besides them): per command queued in MULTI
# (besides its arguments), and our structures' cost per watched key, per
# pub/sub subscription and per tracking prefix (the client's own entries and
# the server table's entry, measured for a name only this client uses: 250
# to 420 bytes; Redis counts 24 to 56 for its smaller ones).
MULTI_CMD = 24
WATCHED_KEY = 256
PUBSUB_ENTRY = 320
TRACKING_PREFIX = 420
SAMPLE = 4
LAZYFREE_THRESHOLD = 64
EVPOOL_SIZE = 16
LFU_INIT_VAL = 5

_HashValue, _SetValue, _ZSetValue, _ListValue, _StreamValue = HashValue, SetValue, ZSetValue, ListValue, StreamValue


def pysize(v) -> int:
    """Estimated bytes held by a value (O(1): samples a few elements)."""
    cls = v.__class__
    if cls is bytes or cls is bytearray or cls is EmbStr:
        return getsizeof(v)
    if cls in MODULE_CLASSES:
        return 64 + v.mem_usage()
    n = len(v)
    if cls is _HashValue:
        t = v.ttl
        if t:
            # field TTLs: their dict, an int per field (the field is shared)
            return v.nbytes() + getsizeof(t) + 32 * len(t)
        return v.nbytes()
    if cls is _ListValue:
        return v.nbytes()
    if cls is _SetValue:
        s = getsizeof(v)
        if n:
            t = k = 0
            for m in islice(v, SAMPLE):
                t += getsizeof(m)
                k += 1
            s += t * n // k
        return s
    if cls is _ZSetValue:
        d = v.dict
        s = 120 + getsizeof(d)
        if n:
            t = k = 0
            for m in islice(d, SAMPLE):
                t += getsizeof(m)
                k += 1
            # member + float (a plain dict's; a ZDict keeps the score in its
            # table, in getsizeof(d)) + the index's member slot and score (16)
            s += (t // k + (24 if d.__class__ is dict else 0) + 16 + 1) * n
        return s
    if cls is _StreamValue:
        return v.mem_estimate()
    if cls is ArrayValue:
        # the element dict, the sorted index, the values (sampled)
        d = v.d
        s = 200 + getsizeof(d) + getsizeof(v.idx) + 32 * n
        if n:
            t = k = 0
            for x in islice(d.values(), SAMPLE):
                t += getsizeof(x)
                k += 1
            s += t * n // k
        return s
    return getsizeof(v)


# The eviction structures (memory/evict.py: the LRU queues, the sampling
# index) are not charged per key: Redis keeps its access information in the
# object and samples its dict, so its used_memory does not move when a policy
# or a limit is set, and neither does ours (their cost is in the RSS).


def key_cost(db, key, v) -> int:
    if isinstance(db.d, dict):
        c = getsizeof(key) + PY_DICT_ENTRY + pysize(v)
    else:
        n = len(key) + 16
        c = (n + 15 & ~15 if n <= 512 else n) + KS_ENTRY + pysize(v)
    exp = db.expires
    if exp and key in exp:
        c += EXPIRE_ENTRY
    return c


def keys_cost(db, keys) -> int:
    """Bytes held by those of ``keys`` that are in ``db`` (read from its dict:
    nothing expired, no stats)."""
    t = 0
    d = db.d
    for k in keys:
        v = d.get(k)
        if v is not None:
            t += key_cost(db, k, v)
    return t


def db_size(db, exact_limit=None) -> int:
    """Estimate of a whole database (exact below exact_limit keys)."""
    d = db.d
    n = len(d)
    if not n:
        return 0
    if exact_limit is None or n <= exact_limit:
        return sum(key_cost(db, k, v) for k, v in d.items())
    step = n // exact_limit
    t = k = 0
    for key, v in islice(d.items(), 0, None, step):
        t += key_cost(db, key, v)
        k += 1
    return t * n // k


# -- key extraction (cached per command) --------------------------------------------------

_EXTRACT = {}


def _simple_specs(cmd):
    out = []
    for spec in cmd.key_specs:
        flags = spec.get("flags", ())
        if "NOT_KEY" in flags:
            continue
        bs = spec.get("begin_search", {})
        fk = spec.get("find_keys", {})
        if "index" not in bs or "range" not in fk:
            return None
        r = fk["range"]
        out.append((bs["index"]["pos"], r["lastkey"], r["step"], r["limit"]))
    return tuple(out)


def keys_of(cmd, argv):
    specs = _EXTRACT.get(cmd, 0)
    if specs == 0:
        specs = _EXTRACT[cmd] = _simple_specs(cmd)
    if specs is None:
        try:
            ks = get_keys(cmd, argv)
        except Exception:  # noqa: BLE001
            return []
        return list(dict.fromkeys(ks)) if len(ks) > 1 else ks
    argc = len(argv)
    if len(specs) == 1:
        first, lastkey, step, limit = specs[0]
        if first >= argc:
            return []
        if lastkey == 0:
            return [argv[first]]
    keys = []
    for first, lastkey, step, limit in specs:
        if first >= argc:
            continue
        last = range_last(first, lastkey, limit, argc)
        if last >= argc:
            last = argc - 1
        keys.extend(argv[first:last + 1:step])
    if len(keys) > 1:
        keys = list(dict.fromkeys(keys))
    return keys
