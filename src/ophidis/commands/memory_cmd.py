"""MEMORY USAGE / STATS / DOCTOR / PURGE / MALLOC-STATS / HELP.

MEMORY USAGE reports what Redis 7.0 (jemalloc, 64-bit) would use for the
value in the encoding OBJECT ENCODING reports, so that tools sizing a
dataset read comparable figures; INFO's used_memory is Ophidis's own
estimate of its Python objects (see memory.py)."""

from __future__ import annotations

import gc
import sys

from ..cmdtable.registry import command
from ..dtoa import d2string
from ..errors import SYNTAX, RedisError
from ..info import rss_bytes
from ..keyspace import dictshape
from ..keyspace.db import MODULE_CLASSES, EmbStr
from ..memory.sizes import EXPIRE_ENTRY as X
from ..memory.sizes import PY_DICT_ENTRY as E
from ..memory.sizes import STARTUP
from ..persistence.listpack import lp_entry_size as lp_entry
from ..protocol.resp import OK, bulk, double, help_reply, integer, map_header, verbatim
from ..types.array import ArrayValue
from ..types.containers import HashValue, ListValue, SetValue
from ..types.stream import StreamValue, _rax_count, id_key
from ..types.zset import ZSetValue
from ..util import parse_int

ROBJ = 16
DICT = 56
REDIS_DICT_ENTRY = 24   # sizeof(dictEntry) in Redis: what MEMORY USAGE reports per entry


def je(n: int) -> int:
    """jemalloc's size class for an n bytes request."""
    if n <= 8:
        return 8
    if n <= 128:
        return (n + 15) & ~15
    lg = (n - 1).bit_length()
    step = 1 << (lg - 3)
    return (n + step - 1) // step * step


def sds_alloc(n: int) -> int:
    if n < 32:
        h = 1
    elif n < 256:
        h = 3
    elif n < 65536:
        h = 5
    else:
        h = 9
    return je(h + n + 1)


def as_int(s: bytes):
    """string2ll: the integer s spells canonically, or None."""
    n = len(s)
    if n == 0 or n > 20:
        return None
    if n == 1 and 48 <= s[0] <= 57:
        return s[0] - 48
    if s[0] == 45:
        if n == 1 or s[1] == 48:
            return None
        body = s[1:]
    else:
        if s[0] == 48:
            return None
        body = s
    if not body.isdigit():
        return None
    v = int(s)
    if v < -(1 << 63) or v >= (1 << 63):
        return None
    return v


def _score_str(x: float) -> bytes:
    return d2string(x)


def _slots(n: int) -> int:
    s = 4
    while s < n:
        s <<= 1
    return s


# expected jemalloc size of a skiplist node (level L with probability 0.75 * 0.25^(L-1))
_ZNODE = sum(0.75 * 0.25 ** (lv - 1) * je(24 + 16 * lv) for lv in range(1, 33))


def _avg(it, samples, fn):
    t = k = 0
    for x in it:
        t += fn(x)
        k += 1
        if samples and k >= samples:
            break
    return t / k if k else 0


def redis_usage(v, samples=5) -> int:
    cls = v.__class__
    if cls is bytes:
        n = len(v)
        if n <= 20 and as_int(v) is not None:
            return ROBJ
        if n <= 44:
            return je(ROBJ + 3 + n + 1)
        if n >= 32768:
            return ROBJ + je(n + 2 + (5 if n + 2 < 65536 else 9) + 1)
        return ROBJ + sds_alloc(n)
    if cls is bytearray:
        return ROBJ + sds_alloc(len(v))
    if cls is EmbStr:      # an integer-looking embstr (INCRBYFLOAT)
        return je(ROBJ + 3 + len(v) + 1)
    if cls in MODULE_CLASSES:
        # the module value's own estimate, as Redis asks the module type's mem_usage
        return ROBJ + v.mem_usage()
    n = len(v)
    if cls is HashValue:
        t = v.ttl
        if not v.ht:
            lp = 7 + sum(lp_entry(f) + lp_entry(x) for f, x in v.items())
            if t is not None:
                # a listpackex: each field's expiry time (0: none) and the listpackEx header
                lp += sum(lp_entry(b"%d" % t.get(f, 0)) for f in v)
                return ROBJ + je(48) + je(lp)
            return ROBJ + je(lp)
        a = _avg(v.items(), samples, lambda fx: sds_alloc(len(fx[0])) + sds_alloc(len(fx[1])) + REDIS_DICT_ENTRY)
        if t:
            # the dict's HFE metadata, and an expiry meta (8 bytes) on each field with a TTL
            return int(ROBJ + DICT + 40 + 8 * _slots(n) + a * n + 8 * len(t))
        return int(ROBJ + DICT + 8 * _slots(n) + a * n)
    if cls is SetValue:
        if v.enc == b"intset":
            mx = max((abs(int(m)) for m in v), default=0)
            w = 2 if mx < 32768 else 4 if mx < 2147483648 else 8
            return ROBJ + je(8 + w * n)
        if v.enc == b"listpack":
            return ROBJ + je(7 + sum(lp_entry(m) for m in v))
        a = _avg(v, samples, lambda m: sds_alloc(len(m)) + REDIS_DICT_ENTRY)
        return int(ROBJ + DICT + 8 * _slots(n) + a * n)
    if cls is ZSetValue:
        if not v.skiplist:
            lp = 7 + sum(lp_entry(m) + lp_entry(_score_str(s)) for m, s in v.dict.items())
            return ROBJ + je(lp)
        a = _avg(v.dict, samples, lambda m: sds_alloc(len(m)) + REDIS_DICT_ENTRY + _ZNODE)
        return int(ROBJ + 16 + 32 + DICT + 8 * _slots(n) + je(24 + 32 * 16) + a * n)
    if cls is ListValue:
        total = v.lpb        # the entries' listpack bytes, kept by the list
        if not v.quick:
            return ROBJ + je(7 + total)
        nodes = max(1, -(-total // 8192))
        return ROBJ + 40 + nodes * (32 + je(7 + total // nodes))
    if cls is StreamValue:
        return _stream_usage(v, samples)
    if cls is ArrayValue:
        return ROBJ + v.alloc_estimate(je)
    return ROBJ


def _rax_usage(numele, numnodes):
    """streamRadixTreeMemoryUsage: 16-byte keys, raxNode headers and a
    fixed per-node overhead."""
    return numele * 16 + numnodes * 4 + numnodes * 8 * 30


def _stream_usage(v, samples):
    """objectComputeSize of a stream: the radix tree, the listpacks (the
    first ``samples`` measured, the tail node with its 4096-byte initial
    allocation) and the consumer groups' PELs."""
    size = ROBJ + 80 + _rax_usage(len(v.nodes), v.rax_nodes())
    nodes = v.nodes
    if nodes:
        prealloc = 4096

        def alloc(k):
            n = je(nodes[k].nbytes())
            return max(n, je(prealloc)) if k == len(nodes) - 1 and nodes[k].nbytes() < prealloc else n
        k = min(len(nodes), samples) if samples else len(nodes)
        lp = sum(alloc(i) for i in range(k))
        if len(nodes) <= k:
            size += lp
        else:
            size += lp // k * (len(nodes) - 1) + alloc(len(nodes) - 1)
    for g in (v.groups or {}).values():
        pel_nodes = _rax_count([id_key(i) for i in g.pel], 0, len(g.pel), 0) if g.pel else 1
        size += 48 + _rax_usage(len(g.pel), pel_nodes) + 24 * len(g.pel)
        for cons in g.consumers.values():
            cn = _rax_count([id_key(i) for i in cons.pel], 0, len(cons.pel), 0) if cons.pel else 1
            size += 32 + len(cons.name) + _rax_usage(len(cons.pel), cn)
    return size


@command("memory|usage", flags=("no_touch",))
def memory_usage(c, argv):
    samples = 5
    i = 3
    while i < len(argv):
        if argv[i].lower() == b"samples" and i + 1 < len(argv):
            samples = parse_int(argv[i + 1])
            if samples < 0:
                raise SYNTAX
            i += 2
        else:
            raise SYNTAX
    key = argv[2]
    v = c.db.lookup_nostats(key)
    if v is None:
        return c.null
    return integer(redis_usage(v, samples) + sds_alloc(len(key)) + REDIS_DICT_ENTRY)


def _mem(srv):
    return srv.memory


@command("memory|stats")
def memory_stats(c, argv):
    srv = c.server
    m = _mem(srv)
    used = m.used_memory()
    rss = rss_bytes()
    dataset = m.dataset_bytes()
    nkeys = sum(len(db.d) for db in srv.dbs)
    overhead = used - dataset
    fields = [
        (b"peak.allocated", integer(m.peak)),
        (b"total.allocated", integer(used)),
        (b"startup.allocated", integer(STARTUP)),
        (b"replication.backlog", integer(srv.repl_feed.backlog_bytes())),
        (b"clients.slaves", integer(srv.repl_feed.replicas_share())),
        (b"clients.normal", integer(m.clients.total - m.clients.totals["slave"])),
        (b"cluster.links", integer(0)),
        (b"aof.buffer", integer(m.aof_buffer())),
        (b"lua.caches", integer(0)),
        (b"functions.caches", integer(0)),
    ]
    # 7.4: the databases' bucket arrays and the rehashing ones, as Redis's
    # dicts would have them (keyspace/dictshape.py)
    lut, rehashing, nrehashing = dictshape.overheads(srv)
    for db in srv.dbs:
        ks, xs = db.shapes
        if ks.made(len(db.d), db.dels):
            fields.append((b"db.%d" % db.id, map_header(c.resp, 2)
                           + bulk(b"overhead.hashtable.main")
                           + integer(len(db.d) * E + ks.buckets() * dictshape.POINTER)
                           + bulk(b"overhead.hashtable.expires")
                           + integer(len(db.expires) * X + xs.buckets() * dictshape.POINTER)))
    fields += [
        (b"overhead.db.hashtable.lut", integer(lut)),
        (b"overhead.db.hashtable.rehashing", integer(rehashing)),
        (b"overhead.total", integer(overhead)),
        (b"db.dict.rehashing.count", integer(nrehashing)),
        (b"keys.count", integer(nkeys)),
        (b"keys.bytes-per-key", integer(dataset // nkeys if nkeys else 0)),
        (b"dataset.bytes", integer(dataset)),
        (b"dataset.percentage", _dbl(c, dataset * 100.0 / used if used else 0)),
        (b"peak.percentage", _dbl(c, used * 100.0 / m.peak if m.peak else 100)),
        (b"allocator.allocated", integer(used)),
        (b"allocator.active", integer(rss)),
        (b"allocator.resident", integer(rss)),
        (b"allocator.muzzy", integer(0)),       # 7.4 (jemalloc's muzzy pages: none here)
        (b"allocator-fragmentation.ratio", _dbl(c, 1.0)),
        (b"allocator-fragmentation.bytes", integer(0)),
        (b"allocator-rss.ratio", _dbl(c, 1.0)),
        (b"allocator-rss.bytes", integer(0)),
        (b"rss-overhead.ratio", _dbl(c, 1.0)),
        (b"rss-overhead.bytes", integer(0)),
        (b"fragmentation", _dbl(c, rss / used if used else 1.0)),
        (b"fragmentation.bytes", integer(rss - used)),
    ]
    return map_header(c.resp, len(fields)) + b"".join(bulk(k) + v for k, v in fields)


def _dbl(c, x):
    return double(c.resp, x)


@command("memory|doctor")
def memory_doctor(c, argv):
    srv = c.server
    m = _mem(srv)
    used = m.used_memory()
    if used < (5 << 20):
        text = ("Sam, I can't say much about this instance: it holds very little data "
                "(%d bytes by my estimate). Come back once it stores more." % used)
    else:
        rss = rss_bytes()
        notes = []
        if srv.maxmemory and used > srv.maxmemory * 0.95:
            notes.append("used memory is close to maxmemory (%d of %d bytes): keys are evicted or "
                         "writes refused depending on maxmemory-policy." % (used, srv.maxmemory))
        if rss > used * 2:
            notes.append("the process RSS (%d bytes) is much larger than the dataset estimate: the "
                         "Python interpreter, pymalloc arenas kept after deletes and buffers account "
                         "for the difference." % rss)
        if m.peak > used * 1.5:
            notes.append("the peak (%d bytes) is well above current usage." % m.peak)
        text = "Sam, I have a few notes for you:\n\n" + "\n".join(" * " + n for n in notes) \
            if notes else "Hi Sam, I detected no memory issues with this instance."
    return verbatim(c.resp, text.encode())


@command("memory|malloc-stats")
def memory_malloc_stats(c, argv):
    return verbatim(c.resp, ("pymalloc: %d allocated blocks; gc counts %r" % (
        sys.getallocatedblocks(), gc.get_count())).encode())


@command("memory|purge")
def memory_purge(c, argv):
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    return OK


@command("memory|help")
def memory_help(c, argv):
    return help_reply(b"MEMORY", b"""\
DOCTOR
    Return memory problems reports.
MALLOC-STATS
    Return internal statistics report from the memory allocator.
PURGE
    Attempt to purge dirty pages for reclamation by the allocator.
STATS
    Return information about the memory usage of the server.
USAGE <key> [SAMPLES <count>]
    Return memory in bytes used by <key> and its value. Nested values are
    sampled up to <count> times (default: 5, 0 means sample all).
""")


_ = RedisError
