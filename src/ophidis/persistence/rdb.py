"""The RDB file format of Redis 7.0 (version 10), written byte for byte as
Redis writes it, and read back from versions 1-11.

Writing: ``RdbWriter`` streams a whole snapshot to a file object (with the
CRC-64 trailer); ``dump_payload`` builds a DUMP payload.
Reading: ``RdbReader`` parses a buffer into fresh key -> value dicts per
database; any inconsistency raises ``RdbError`` carrying the byte offset,
so the caller can refuse the file without touching the live keyspace.
"""

from __future__ import annotations

import math
import random
import struct
import time

from .. import sysinfo
from ..keyspace.db import EmbStr, stats
from .. import compiled
from ..types.containers import HashValue, ListValue, SetValue
from ..types.stream import MASK64, MAX_ID, NACK, Consumer, Group, Node, StreamValue, id_key
from ..types.zset import ZSetValue
from .listpack import (EncodingError, canonical_int, intset_decode, intset_encode, lp_build, lp_decode, lp_entry,
                       zipmap_decode, zl_decode)
from .rdbcodec import ENC_INT8, ENC_INT16, ENC_INT32, ENC_LZF, crc64, enc_len, enc_string, lzf_decompress, redis_lzf

RDB_VERSION = 10
MAX_READ_VERSION = 11

# value types
T_STRING = 0
T_LIST = 1
T_SET = 2
T_ZSET = 3
T_HASH = 4
T_ZSET_2 = 5
T_MODULE = 6
T_MODULE_2 = 7
T_HASH_ZIPMAP = 9
T_LIST_ZIPLIST = 10
T_SET_INTSET = 11
T_ZSET_ZIPLIST = 12
T_HASH_ZIPLIST = 13
T_LIST_QUICKLIST = 14
T_STREAM_LISTPACKS = 15
T_HASH_LISTPACK = 16
T_ZSET_LISTPACK = 17
T_LIST_QUICKLIST_2 = 18
T_STREAM_LISTPACKS_2 = 19
T_SET_LISTPACK = 20
T_STREAM_LISTPACKS_3 = 21

TYPE_NAMES = {
    T_STRING: "string", T_LIST: "list", T_SET: "set", T_ZSET: "zset", T_HASH: "hash",
    T_ZSET_2: "zset", T_MODULE: "module", T_MODULE_2: "module", T_HASH_ZIPMAP: "hash",
    T_LIST_ZIPLIST: "list", T_SET_INTSET: "set", T_ZSET_ZIPLIST: "zset", T_HASH_ZIPLIST: "hash",
    T_LIST_QUICKLIST: "list", T_STREAM_LISTPACKS: "stream", T_HASH_LISTPACK: "hash",
    T_ZSET_LISTPACK: "zset", T_LIST_QUICKLIST_2: "list", T_STREAM_LISTPACKS_2: "stream",
    T_SET_LISTPACK: "set", T_STREAM_LISTPACKS_3: "stream",
}

# opcodes
OP_FUNCTION2 = 245
OP_FUNCTION = 246
OP_MODULE_AUX = 247
OP_IDLE = 248
OP_FREQ = 249
OP_AUX = 250
OP_RESIZEDB = 251
OP_EXPIRETIME_MS = 252
OP_EXPIRETIME = 253
OP_SELECTDB = 254
OP_EOF = 255


QL_PLAIN, QL_PACKED = 1, 2

class RdbError(Exception):
    """A corrupt or truncated RDB (or DUMP payload)."""

    def __init__(self, msg, offset=None, truncated=False, quiet=False):
        super().__init__(msg)
        self.msg = msg
        self.offset = offset
        self.truncated = truncated
        self.quiet = quiet      # refused by RESTORE without a log line (an unknown type, an empty value)

    def __str__(self):
        if self.offset is None:
            return self.msg
        return "%s (at offset %d)" % (self.msg, self.offset)


# -- encoding ---------------------------------------------------------------------

def d2string(d: float) -> bytes:
    if math.isinf(d):
        return b"inf" if d > 0 else b"-inf"
    if d == 0:
        return b"-0" if math.copysign(1.0, d) < 0 else b"0"
    if -(2 ** 62) <= d <= 2 ** 62 and d == int(d):
        return b"%d" % int(d)
    return b"%.17g" % d


def _score_entry(d: float) -> bytes:
    if not math.isinf(d) and -(2 ** 62) <= d <= 2 ** 62 and d == int(d):
        return lp_entry(int(d))
    return lp_entry(b"%.17g" % d)


_OPT = (4096, 8192, 16384, 32768, 65536)


def quicklist_nodes(items, fill=-2):
    """Split list items into listpacks the way quicklistPushTail fills nodes
    (a list built by RPUSH).  Returns a list of (container, bytes)."""
    nodes = []
    cur = []        # encoded entries
    cur_sz = 0      # lpBytes of the current node
    limit = _OPT[-fill - 1] if fill < 0 and -fill - 1 < len(_OPT) else None
    for it in items:
        sz = len(it)
        if sz >= 1 << 30:
            if cur:
                nodes.append((QL_PACKED, lp_build(cur)))
                cur, cur_sz = [], 0
            nodes.append((QL_PLAIN, bytes(it)))
            continue
        allow = False
        if cur:
            new_sz = cur_sz + sz + 8
            if limit is not None:
                allow = new_sz <= limit
            elif new_sz > 8192:
                allow = False
            else:
                allow = len(cur) < fill
        e = lp_entry(it)
        if allow:
            cur.append(e)
            cur_sz += len(e)
        else:
            if cur:
                nodes.append((QL_PACKED, lp_build(cur)))
            cur = [e]
            cur_sz = 7 + len(e)
    if cur:
        nodes.append((QL_PACKED, lp_build(cur)))
    return nodes


def _lzf_node(lp):
    """quicklist node compression (list-compress-depth): None if not worth it."""
    if len(lp) < 48:
        return None
    comp = redis_lzf(lp, len(lp))
    if not comp or len(comp) + 8 >= len(lp):
        return None
    return comp


class Encoder:
    """Value serializer bound to the settings that affect encodings."""

    def __init__(self, config=None, compress=None):
        g = (lambda k, d: config[k]) if config is not None else (lambda k, d: d)
        self.compress = g("rdbcompression", True) if compress is None else compress
        self.list_fill = g("list-max-listpack-size", -2)
        self.list_depth = g("list-compress-depth", 0)

    def type_and_value(self, v):
        """(type byte, serialized value) for an in-memory value."""
        cls = v.__class__
        compress = self.compress
        if cls is bytes or cls is bytearray or cls is EmbStr:
            return T_STRING, enc_string(bytes(v) if cls is EmbStr else v, compress)
        if cls is ListValue:
            nodes = quicklist_nodes(v, self.list_fill)
            out = [enc_len(len(nodes))]
            depth = self.list_depth
            nn = len(nodes)
            for i, (container, data) in enumerate(nodes):
                out.append(enc_len(container))
                comp = None
                if depth > 0 and container == QL_PACKED and depth <= i < nn - depth:
                    comp = _lzf_node(data)
                if comp is not None:
                    out.append(b"\xc3" + enc_len(len(comp)) + enc_len(len(data)) + comp)
                else:
                    out.append(enc_string(data, compress))
            return T_LIST_QUICKLIST_2, b"".join(out)
        if cls is HashValue:
            if not v.ht:
                ents = []
                for f, val in v.items():
                    ents.append(lp_entry(f))
                    ents.append(lp_entry(val))
                return T_HASH_LISTPACK, enc_string(lp_build(ents), compress)
            out = [enc_len(len(v))]
            for f, val in v.items():
                out.append(enc_string(f, compress))
                out.append(enc_string(val, compress))
            return T_HASH, b"".join(out)
        if cls is SetValue:
            if v.enc == b"intset":
                return T_SET_INTSET, enc_string(intset_encode(sorted(int(x) for x in v)), compress)
            out = [enc_len(len(v))]
            for m in v:
                out.append(enc_string(m, compress))
            return T_SET, b"".join(out)
        if cls is ZSetValue or isinstance(v, ZSetValue):
            if not v.skiplist:
                ents = []
                for m, s in v.items():
                    ents.append(lp_entry(m))
                    ents.append(_score_entry(s))
                return T_ZSET_LISTPACK, enc_string(lp_build(ents), compress)
            out = [enc_len(len(v))]
            pack = struct.Struct("<d").pack
            for s, m in reversed(v.sl):
                out.append(enc_string(m, compress))
                out.append(pack(s))
            return T_ZSET_2, b"".join(out)
        if cls is StreamValue:
            return T_STREAM_LISTPACKS_2, stream_body(v, compress)
        if isinstance(v, (bytes, bytearray)):
            return T_STRING, enc_string(bytes(v), compress)
        if isinstance(v, ListValue):
            return self.type_and_value(ListValue(v))
        raise TypeError("cannot serialize value of type %s" % cls.__name__)


_pack_ms = struct.Struct("<q").pack


def stream_body(v, compress=True) -> bytes:
    """A stream as RDB_TYPE_STREAM_LISTPACKS_2: the radix tree's listpacks
    keyed by master ID, the stream's counters, then the consumer groups
    (global PEL with delivery times/counts, consumers with their PEL IDs)."""
    out = [enc_len(len(v.nodes))]
    ap = out.append
    for node in v.nodes:
        ap(enc_string(id_key(node.master), compress))
        ap(enc_string(node.to_listpack(), compress))
    for x in (v.length, v.last_id >> 64, v.last_id & MASK64, v.first_id >> 64,
              v.first_id & MASK64, v.max_deleted >> 64, v.max_deleted & MASK64,
              v.entries_added):
        ap(enc_len(x))
    groups = v.sorted_groups()
    ap(enc_len(len(groups)))
    for name, g in groups:
        ap(enc_string(name, compress))
        ap(enc_len(g.last_id >> 64))
        ap(enc_len(g.last_id & MASK64))
        ap(enc_len(g.entries_read & MASK64))
        ap(enc_len(len(g.pel)))
        for i, nack in g.pel.items():
            ap(id_key(i))
            ap(_pack_ms(nack.delivery_time))
            ap(enc_len(nack.delivery_count))
        consumers = g.sorted_consumers()
        ap(enc_len(len(consumers)))
        for cons in consumers:
            ap(enc_string(cons.name, compress))
            ap(_pack_ms(cons.seen_time))
            ap(enc_len(len(cons.pel)))
            for i in cons.pel:
                ap(id_key(i))
    return b"".join(out)


def dump_payload(v, config=None) -> bytes:
    """The DUMP serialization: type, value, RDB version (2 bytes LE), CRC64."""
    t, data = Encoder(config).type_and_value(v)
    body = bytes((t,)) + data + RDB_VERSION.to_bytes(2, "little")
    return body + crc64(body).to_bytes(8, "little")


def verify_payload(p: bytes, skip_checksum=False) -> bool:
    """verifyDumpPayload: a footer, a version we write, the CRC-64 (not
    checked with DEBUG SET-SKIP-CHECKSUM-VALIDATION 1)."""
    if len(p) < 10:
        return False
    ver = p[-10] | (p[-9] << 8)
    if ver > RDB_VERSION:
        return False
    if skip_checksum:
        return True
    return crc64(p[:-8]) == int.from_bytes(p[-8:], "little")


def functions_payload(codes) -> bytes:
    """FUNCTION DUMP's payload: each library's code after OP_FUNCTION2 (as an
    RDB string, not compressed), then the RDB version and the CRC-64."""
    body = b"".join([b"\xf5" + enc_string(code, False) for code in codes])
    body += RDB_VERSION.to_bytes(2, "little")
    return body + crc64(body).to_bytes(8, "little")


class NotAFunction(Exception):
    """A FUNCTION RESTORE payload holding something other than libraries."""


def load_functions_payload(p: bytes) -> list:
    """The library codes of a FUNCTION RESTORE payload already checked by
    ``verify_payload``; raises NotAFunction for another opcode, RdbError
    when a string does not decode."""
    r = RdbReader(memoryview(p)[:-10])
    codes = []
    while r.pos < r.n:
        if r.byte() != OP_FUNCTION2:
            raise NotAFunction()
        codes.append(r.load_string())
    return codes


def aux(key: bytes, val: bytes) -> bytes:
    return b"\xfa" + enc_string(key) + enc_string(val)


class RdbWriter:
    """Streams an RDB file to ``f`` (a binary file object), keeping the CRC."""

    FLUSH = 1 << 16

    def __init__(self, f, checksum=True):
        self.f = f
        self.checksum = checksum
        self.crc = 0
        self.buf = []
        self.size = 0
        self.written = 0

    def write(self, b):
        self.buf.append(b)
        self.size += len(b)
        if self.size >= self.FLUSH:
            self.flush()

    def flush(self):
        if not self.buf:
            return
        data = b"".join(self.buf)
        self.buf = []
        self.size = 0
        if self.checksum:
            self.crc = crc64(data, self.crc)
        self.f.write(data)
        self.written += len(data)

    def finish(self):
        self.write(b"\xff")
        self.flush()
        crc = self.crc if self.checksum else 0
        self.f.write(crc.to_bytes(8, "little"))
        self.written += 8


def write_snapshot(f, server, progress=None, key_delay=0, functions_only=False):
    """Write the whole keyspace of ``server`` as an RDB file to ``f``
    (only the function libraries with ``functions_only``: a replica's
    rdb-filter-only functions).  ``progress(keys_done)`` is called every
    1024 keys."""
    cfg = server.config
    if key_delay < 0:
        key_delay = 0
    w = RdbWriter(f, cfg["rdbchecksum"])
    enc = Encoder(cfg)
    w.write(b"REDIS%04d" % RDB_VERSION)
    w.write(aux(b"redis-ver", sysinfo.REDIS_VERSION_BYTES))
    w.write(aux(b"redis-bits", b"%d" % sysinfo.arch_bits()))
    w.write(aux(b"ctime", b"%d" % int(time.time())))
    w.write(aux(b"used-mem", b"%d" % _used_memory()))
    info = server.repl_feed.save_info()
    if info is not None:
        # the replication history the file belongs to (a restart continues it)
        w.write(aux(b"repl-stream-db", b"%d" % info[0]))
        w.write(aux(b"repl-id", info[1].encode()))
        w.write(aux(b"repl-offset", b"%d" % info[2]))
    w.write(aux(b"aof-base", b"%d" % int(server.rdb_aof_base)))
    for code in function_codes(server):
        w.write(b"\xf5" + enc_string(code))
    policy = cfg["maxmemory-policy"]
    lru = server.memory
    save_lru = "lru" in policy
    save_lfu = "lfu" in policy
    tv = enc.type_and_value
    compress = enc.compress
    done = 0

    def value_entry(key, val):
        t, data = tv(val)
        return bytes((t,)) + enc_string(key, compress) + data

    for db in () if functions_only else server.dbs:
        d = db.d
        if not d:
            continue
        exp = db.expires
        w.write(b"\xfe" + enc_len(db.id))
        w.write(b"\xfb" + enc_len(len(d)) + enc_len(len(exp)))
        if not (save_lru or save_lfu):
            done = write_keys(d, exp, w.write, compress, enc.list_fill, enc.list_depth, value_entry, progress,
                              done, key_delay / 1e6, time.sleep)
            continue
        # with the LRU idle time or the LFU counter of each key (Python only)
        idle_of = lru.idle_function(db) if save_lru else None
        for key, val in d.items():
            parts = []
            if exp:
                when = exp.get(key)
                if when is not None:
                    parts.append(b"\xfc" + int(when).to_bytes(8, "little", signed=True))
            if save_lru:
                idle = 0
                if idle_of is not None:
                    try:
                        idle = int(idle_of(key))
                    except Exception:  # noqa: BLE001
                        idle = 0
                parts.append(b"\xf8" + enc_len(idle))
            else:
                try:
                    freq = int(lru.freq(db, key))
                except Exception:  # noqa: BLE001
                    freq = 5
                parts.append(b"\xf9" + bytes((freq & 0xFF,)))
            parts.append(value_entry(key, val))
            w.write(b"".join(parts))
            done += 1
            if key_delay:
                time.sleep(key_delay / 1e6)
            if progress is not None and not done & 1023:
                progress(done)
    w.finish()
    return w.written


_NOT_INTLIKE = [not (48 <= i <= 57 or i == 45) for i in range(256)]


def write_keys_py(d, exp, write, compress, list_fill, list_depth, value_entry, progress, done, delay=0.0,
                  sleep=None):
    """The entries (expiry, type, key, value) of the keyspace dict ``d`` through
    ``write``; ``value_entry(key, value)`` gives type + key + value.  Calls
    ``progress(done)`` every 1024 keys and ``sleep(delay)`` after each key when
    ``delay``; returns ``done`` plus the keys written.  The pure twin of
    _rdb.rdb_write_keys (which writes the same bytes in C, without
    touching the objects' reference counts: fewer pages copied on write in a
    forked child); ``compress`` and the list settings are ``value_entry``'s here."""
    for key, val in d.items():
        if val.__class__ is bytes and not (exp and key in exp):
            lk = len(key)
            lv = len(val)
            if (lk <= 20 and lv <= 20 and (lk > 11 or not lk or _NOT_INTLIKE[key[0]])
                    and (lv > 11 or not lv or _NOT_INTLIKE[val[0]]) and key.__class__ is bytes):
                write(b"\x00%c%s%c%s" % (lk, key, lv, val))
                done += 1
                if delay:
                    sleep(delay)
                if progress is not None and not done & 1023:
                    progress(done)
                continue
        if exp:
            when = exp.get(key)
            if when is not None:
                write(b"\xfc" + int(when).to_bytes(8, "little", signed=True) + value_entry(key, val))
            else:
                write(value_entry(key, val))
        else:
            write(value_entry(key, val))
        done += 1
        if delay:
            sleep(delay)
        if progress is not None and not done & 1023:
            progress(done)
    return done


# the compiled twin (persistence/_rdb.pyx), picked here
_c = compiled.load("persistence._rdb")
write_keys = _c.rdb_write_keys if _c is not None else write_keys_py


def function_codes(server):
    """The source of every function library (RDB opcode FUNCTION2)."""
    return [c if isinstance(c, bytes) else c.encode() for c in server.functions.rdb_codes()]


def _used_memory() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096
    except (OSError, ValueError, IndexError):
        return 0


# -- decoding -----------------------------------------------------------------------

_BLOB_NAMES = {T_HASH_ZIPMAP: "Zipmap", T_LIST_ZIPLIST: "List ziplist", T_SET_INTSET: "Intset",
               T_ZSET_ZIPLIST: "Zset ziplist", T_ZSET_LISTPACK: "Zset listpack", T_HASH_ZIPLIST: "Hash ziplist",
               T_HASH_LISTPACK: "Hash listpack", T_SET_LISTPACK: "Set listpack"}

_unpack_d = struct.Struct("<d").unpack_from
_unpack_f = struct.Struct("<f").unpack_from


class LoadSettings:
    """Encoding thresholds used to pick the in-memory encodings at load, and
    whether values get Redis's deep integrity validation (sanitize-dump-payload:
    ``deep`` None takes "yes" from the configuration, as loading a file does;
    RESTORE decides for its client with ``restore_deep``).

    Every encoded value is decoded whole here (nothing stays in its RDB
    encoding), so whatever makes a value unreadable or not representable
    is refused in both modes: entries reaching outside their blob, bad
    back-lengths, duplicates, unsorted intsets, stream entries that do not
    parse, PEL entries without a consumer.  What ``deep`` adds, as in
    Redis, is the check of a listpack's element count header (which the
    decoded value never uses) and the dump_payload_sanitizations stat."""

    def __init__(self, config=None, deep=None):
        g = (lambda k, d: config[k]) if config is not None else (lambda k, d: d)
        self.config = config
        self.deep = (g("sanitize-dump-payload", "no") == "yes") if deep is None else deep
        self.set_max_intset = g("set-max-intset-entries", 512)
        self.hash_entries = g("hash-max-listpack-entries", 128)
        self.hash_value = g("hash-max-listpack-value", 64)
        self.zset_entries = g("zset-max-listpack-entries", 128)
        self.zset_value = g("zset-max-listpack-value", 64)

    def key_delay(self) -> int:
        """key-load-delay, read again while a load runs (a test may change it)."""
        return self.config["key-load-delay"] if self.config is not None else 0


class LoadAborted(Exception):
    """A streamed load stopped from outside (the replication link went away)."""


def debug_delay(usec):
    """debugDelay: sleep ``usec`` microseconds; a negative value sleeps one
    microsecond with a probability of 1/-usec (short delays, statistically)."""
    if usec < 0:
        usec = 1 if random.randrange(-usec) == 0 else 0
    if usec:
        time.sleep(usec / 1e6)


class LoadResult:
    def __init__(self, ndbs):
        self.dbs = [({}, {}) for _ in range(ndbs)]   # (dict, expires)
        self.version = 0
        self.aux = {}
        self.functions = []
        self.keys_loaded = 0
        self.keys_expired = 0
        self.expired = []           # (dbid, key) of the keys skipped as expired
        self.empty_skipped = 0
        self.type_counts = {}
        self.checksum = None        # "ok", "disabled", "skipped"
        self.lru = []               # (dbid, key, idle) for LRU info
        self.lfu = []               # (dbid, key, freq)
        self.module_aux_skipped = 0
        self.expires = 0            # keys with a TTL (read)
        self.already_expired = 0    # of which already expired
        self.end_offset = 0


class RdbReader:
    """Parses one buffer, or a stream: with ``source`` (a callable giving
    the next bytes, at most its argument, b"" at the end) ``buf`` is only
    a window that refills as the parse goes (the bytes already parsed are
    dropped, their CRC kept), ``chunk`` bytes at a time; ``progress`` is
    then the count of bytes taken from the source (updated each time it
    passes a multiple of ``chunk``), and a load can be
    stopped from another thread with ``abort`` (LoadAborted).  Offsets in
    errors are file offsets (``base`` is the window's)."""

    def __init__(self, buf, settings=None, ndbs=16, now_ms=None, skip_expired=True,
                 verify_checksum=True, log=None, trace=None, source=None, chunk=1 << 16):
        self.buf = memoryview(buf) if not isinstance(buf, memoryview) else buf
        self.data = None            # the window as bytes (load's fast path)
        self.n = len(self.buf)
        self.pos = 0
        self.base = 0               # offset of buf[0] in the stream
        self.source = source
        self.chunk = chunk
        self.crc = None             # CRC-64 of the bytes before base
        self.progress = self.fetched = self.n
        self.aborted = False
        self.key_delay = 0
        self.used_mem = 0           # the used-mem aux field (INFO's loading_rdb_used_mem)
        self.s = settings or LoadSettings()
        self.ndbs = ndbs
        self.now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
        self.skip_expired = skip_expired
        self.verify_checksum = verify_checksum
        self.log = log or (lambda lvl, msg: None)
        self.key = None
        self.entry_start = 0
        self.trace = trace
        self.quiet = False          # no log (_build: the Python path reads the record again)

    # primitives
    def fail(self, msg, offset=None):
        raise RdbError(msg, self.base + (self.pos if offset is None else offset))

    def _eof(self):
        return RdbError("Unexpected EOF reading RDB file", self.base + self.n, truncated=True)

    def read(self, k):
        p = self.pos
        e = p + k
        if e > self.n:
            if self.source is None or not self._refill(k):
                raise self._eof()
            p = 0
            e = k
        self.pos = e
        return self.buf[p:e]

    def byte(self):
        p = self.pos
        if p >= self.n:
            if self.source is None or not self._refill(1):
                raise self._eof()
            p = 0
        self.pos = p + 1
        return self.buf[p]

    def _refill(self, k) -> bool:
        """Make the window start at pos and hold at least ``k`` bytes
        (False: the source ended first)."""
        if self.aborted:
            raise LoadAborted()
        p = self.pos
        old = self.buf
        if p and self.verify_checksum:
            self.crc = crc64(old[:p], self.crc)
        parts = [bytes(old[p:])]
        have = self.n - p
        source = self.source
        while have < k:
            got = source(max(self.chunk, k - have))
            if self.aborted:
                raise LoadAborted()
            if not got:
                break
            parts.append(got)
            have += len(got)
            self.fetched += len(got)
            if self.fetched // self.chunk != self.progress // self.chunk:
                self.progress = self.fetched        # as Redis, once per chunk
        self.base += p
        self.data = b"".join(parts)
        self.buf = memoryview(self.data)
        self.n = len(self.data)
        self.pos = 0
        if self.key_delay == 0:
            self.key_delay = self.s.key_delay()
        return have >= k

    @property
    def offset(self) -> int:
        return self.base + self.pos

    def _delay(self):
        """key-load-delay after each key (read again each time: a test
        speeds a slow load up by setting it to 0)."""
        d = self.key_delay = self.s.key_delay()
        if d:
            debug_delay(d)
            if self.aborted:
                raise LoadAborted()

    def load_len_enc(self):
        """(value, is_encoded)."""
        b = self.byte()
        t = b >> 6
        if t == 0:
            return b & 0x3F, False
        if t == 1:
            return ((b & 0x3F) << 8) | self.byte(), False
        if t == 3:
            return b & 0x3F, True
        if b == 0x80:
            return int.from_bytes(self.read(4), "big"), False
        if b == 0x81:
            return int.from_bytes(self.read(8), "big"), False
        self.fail("Unknown length encoding %d in rdbLoadLen()" % b, self.pos - 1)

    def load_len(self):
        v, enc = self.load_len_enc()
        if enc:
            self.fail("Unexpected encoded length", self.pos - 1)
        return v

    def load_string(self) -> bytes:
        start = self.pos
        v, enc = self.load_len_enc()
        if not enc:
            return bytes(self.read(v))
        if v == ENC_INT8:
            return b"%d" % int.from_bytes(self.read(1), "little", signed=True)
        if v == ENC_INT16:
            return b"%d" % int.from_bytes(self.read(2), "little", signed=True)
        if v == ENC_INT32:
            return b"%d" % int.from_bytes(self.read(4), "little", signed=True)
        if v == ENC_LZF:
            clen = self.load_len()
            ulen = self.load_len()
            comp = self.read(clen)
            if ulen == 0:
                self.fail("Invalid LZF compressed string", start)
            out = lzf_decompress(comp, ulen)
            if out is None:
                self.fail("Invalid LZF compressed string", start)
            return out
        self.fail("Unknown RDB string encoding type %d" % v, start)

    def load_double_str(self):
        ln = self.byte()
        if ln == 253:
            return float("nan")
        if ln == 254:
            return float("inf")
        if ln == 255:
            return float("-inf")
        s = bytes(self.read(ln))
        try:
            return float(s)
        except ValueError:
            self.fail("Invalid double value", self.pos - ln)

    def load_binary_double(self):
        return _unpack_d(self.read(8))[0]

    # values
    def load_object(self, t):
        """The in-memory value for type ``t``; None for an empty key."""
        s = self.s
        if t == T_STRING:
            return self.load_string()
        if t == T_LIST:
            n = self.load_len()
            items = [self.load_string() for _ in range(n)]
            return self._list(items)
        if t == T_SET:
            n = self.load_len()
            items = [self.load_string() for _ in range(n)]
            if not n:
                return None
            return self._set(items)
        if t in (T_ZSET, T_ZSET_2):
            n = self.load_len()
            if not n:
                return None
            d = {}
            maxlen = 0
            for _ in range(n):
                m = self.load_string()
                sc = self.load_binary_double() if t == T_ZSET_2 else self.load_double_str()
                if sc != sc:
                    self.fail("Zset with NAN score detected")
                if m in d:
                    self.fail("Duplicate zset fields detected")
                d[m] = sc
                if len(m) > maxlen:
                    maxlen = len(m)
            z = ZSetValue.from_dict(d)
            z.skiplist = not (n <= s.zset_entries and maxlen <= s.zset_value)
            return z
        if t == T_HASH:
            n = self.load_len()
            if not n:
                return None
            h = HashValue()
            big = n > s.hash_entries
            for _ in range(n):
                f = self.load_string()
                val = self.load_string()
                if f in h:
                    # Redis's dup search while the hash is still a listpack
                    # (deep mode), the hash table's own check otherwise
                    self.fail("Hash with dup elements" if s.deep and not big
                              else "Duplicate hash fields detected")
                h[f] = val
                if len(f) > s.hash_value or len(val) > s.hash_value:
                    big = True
            h.ht = big
            return h
        if t in (T_LIST_QUICKLIST, T_LIST_QUICKLIST_2):
            n = self.load_len()
            items = []
            for _ in range(n):
                container = QL_PACKED
                if t == T_LIST_QUICKLIST_2:
                    container = self.load_len()
                    if container not in (QL_PACKED, QL_PLAIN):
                        self.fail("Quicklist integrity check failed.")
                start = self.pos
                data = self.load_string()
                if not data:
                    self.fail("Empty quicklist node", start)
                if container == QL_PLAIN:
                    items.append(data)
                    continue
                try:
                    if t == T_LIST_QUICKLIST_2:
                        self.sanitized()
                        items.extend(lp_decode(data, strict_count=s.deep))
                    else:
                        items.extend(zl_decode(data))
                except EncodingError:
                    self.fail("Listpack integrity check failed." if t == T_LIST_QUICKLIST_2
                              else "Ziplist integrity check failed.", start)
            # empty nodes are skipped; a list left with none is an empty key
            return self._list(items)
        if t in (T_HASH_ZIPMAP, T_LIST_ZIPLIST, T_SET_INTSET, T_ZSET_ZIPLIST, T_ZSET_LISTPACK,
                 T_HASH_ZIPLIST, T_HASH_LISTPACK, T_SET_LISTPACK):
            start = self.pos
            blob = self.load_string()
            try:
                return self._load_blob(t, blob)
            except DuplicateField as e:
                if t == T_HASH_ZIPMAP:
                    self.fail("Hash zipmap with dup elements, or big length (%d)" % len(e.args[0]), start)
                self.fail("%s integrity check failed." % _BLOB_NAMES[t], start)
            except EncodingError:
                self.fail("%s integrity check failed." % _BLOB_NAMES[t], start)
        if t in (T_STREAM_LISTPACKS, T_STREAM_LISTPACKS_2, T_STREAM_LISTPACKS_3):
            return self.load_stream(t)
        if t in (T_MODULE, T_MODULE_2):
            if t == T_MODULE:
                self.fail("Module value of the old format (type 6) can't be loaded")
            mid = self.load_len()
            self.skip_module_value()
            raise UnsupportedType("module '%s'" % module_name(mid))
        self.fail("Unknown RDB encoding type %d" % t)

    def _set(self, items):
        v = SetValue(items)
        n = len(items)
        if len(v) != n:
            self.fail("Duplicate set members detected")
        v.enc = b"intset" if (n <= self.s.set_max_intset and all(
            canonical_int(m) is not None for m in items)) else b"hashtable"
        return v

    def _build(self, t, payload):
        """The value of a record read by _rdb.rdb_load_records: the
        members of a set (T_SET), the elements of a list's packed nodes
        (T_LIST_QUICKLIST_2), else the blob.  It raises or gives None for
        what load's Python path then reads again (and reports)."""
        if t == T_SET:
            return self._set(payload)
        if t == T_LIST_QUICKLIST_2:
            return self._list(payload)
        self.quiet = True
        try:
            return self._load_blob(t, payload)
        finally:
            self.quiet = False

    def _list(self, items):
        if not items:
            return None
        v = ListValue(items)
        v.quick = True      # Redis 7.0 lists are always quicklists
        return v

    def sanitized(self):
        """One blob validated in deep mode (INFO's dump_payload_sanitizations)."""
        if self.s.deep:
            stats.dump_payload_sanitizations += 1

    def _pairs(self, flat, blob=None):
        """Field/value (member/score) pairs of a flat list: an even count and
        no duplicate field.  ``blob``: the listpack of a hash that Redis,
        without deep validation, would take as it is and only find the
        duplicate when converting it to a hash table (its panic's dump line
        is logged; the value is refused here all the same)."""
        if len(flat) % 2:
            raise EncodingError("odd number of elements")
        keys = flat[0::2]
        if len(set(keys)) != len(keys):
            if blob is not None and not self.s.deep and len(keys) > self.s.hash_entries and not self.quiet:
                self.log("warning", "listpack with dup elements dump (hexdump of %d bytes):" % len(blob))
                self.log("warning", bytes(blob).hex())
            seen = set()
            dup = next(k for k in keys if k in seen or seen.add(k))
            raise DuplicateField(dup)
        return keys, flat[1::2]

    def _load_blob(self, t, blob):
        s = self.s
        if t == T_SET_INTSET:
            self.sanitized()
            vals = intset_decode(blob)
            v = SetValue(b"%d" % x for x in vals)
            v.enc = b"hashtable" if len(vals) > s.set_max_intset else b"intset"
            return v
        if t == T_SET_LISTPACK:
            self.sanitized()
            items = lp_decode(blob, strict_count=s.deep)
            if not items:
                return None
            v = SetValue(items)
            if len(v) != len(items):
                raise EncodingError("duplicate members")
            v.enc = b"intset" if (len(v) <= s.set_max_intset and all(
                canonical_int(m) is not None for m in items)) else b"hashtable"
            return v
        if t == T_LIST_ZIPLIST:
            return self._list(zl_decode(blob))
        if t in (T_HASH_ZIPMAP, T_HASH_ZIPLIST, T_HASH_LISTPACK):
            if t == T_HASH_LISTPACK:
                self.sanitized()
                keys, vals = self._pairs(lp_decode(blob, strict_count=s.deep), blob)
            else:
                keys, vals = self._pairs(zipmap_decode(blob) if t == T_HASH_ZIPMAP else zl_decode(blob))
            if not keys:
                return None
            h = HashValue(zip(keys, vals))
            big = len(h) > s.hash_entries
            if t == T_HASH_ZIPMAP and not big:
                big = max(max(len(x) for x in keys), max(len(x) for x in vals)) > s.hash_value
            h.ht = big
            return h
        # zsets
        if t == T_ZSET_LISTPACK:
            self.sanitized()
            flat = lp_decode(blob, strict_count=s.deep)
        else:
            flat = zl_decode(blob)
        keys, vals = self._pairs(flat)
        if not keys:
            return None
        d = {}
        for m, sc in zip(keys, vals):
            try:
                f = float(sc)
            except ValueError:
                raise EncodingError("invalid score") from None
            if f != f:
                raise EncodingError("NaN score")
            d[m] = f
        z = ZSetValue.from_dict(d)
        z.skiplist = len(z) > s.zset_entries
        return z

    def _ms_time(self):
        return int.from_bytes(self.read(8), "little", signed=True)

    def load_stream(self, t):
        """A stream of RDB type 15 (Redis 5-6), 19 (7.0) or 21 (7.2)."""
        v = StreamValue()
        nodes = []
        for _ in range(self.load_len()):
            start = self.pos
            nodekey = self.load_string()
            if len(nodekey) != 16:
                self.fail("Stream node key entry is not the size of a stream ID", start)
            start = self.pos
            blob = self.load_string()
            self.sanitized()
            try:
                # streamValidateListpackIntegrity walks the entries, never
                # the listpack's count header
                items = lp_decode(blob, strict_count=False, raw_ints=True)
            except EncodingError:
                self.fail("Stream listpack integrity check failed.", start)
            if not items:
                self.fail("Empty listpack inside stream", start)
            try:
                node = Node.from_items(int.from_bytes(nodekey, "big"), items, len(blob))
            except ValueError:
                self.fail("Stream listpack integrity check failed.", start)
            nodes.append(node)
        nodes.sort(key=lambda n: n.master)
        prev = None
        for node in nodes:
            if prev is not None:
                if node.master == prev.master:
                    self.fail("Listpack re-added with existing key")
                if prev.ids and node.ids and node.ids[0] <= prev.ids[-1]:
                    self.fail("Stream listpack integrity check failed.")
            prev = node
        v.nodes = nodes
        v.keys = [n.master for n in nodes]
        v.length = sum(n.live for n in nodes)
        for n in nodes:
            StreamValue._advance_head(n)
        length = self.load_len()
        v.last_id = (self.load_len() << 64) | self.load_len()
        if t >= T_STREAM_LISTPACKS_2:
            v.first_id = (self.load_len() << 64) | self.load_len()
            v.max_deleted = (self.load_len() << 64) | self.load_len()
            v.entries_added = self.load_len()
        else:
            v.entries_added = length
            first = v.first_entry()
            v.first_id = MAX_ID if first is None else first
        if length and not nodes:
            self.fail("Stream length inconsistent with rax entries")
        if nodes and nodes[-1].ids and nodes[-1].ids[-1] > v.last_id:
            # not one of Redis's checks (it takes such a stream, whose next
            # XADD then breaks the order of the entries): ours, so that a
            # stream loaded is one its commands can work on
            self.fail("Stream last ID is smaller than its last entry's ID")
        ngroups = self.load_len()
        if ngroups:
            v.groups = {}
        for _ in range(ngroups):
            name = self.load_string()
            last = (self.load_len() << 64) | self.load_len()
            if t >= T_STREAM_LISTPACKS_2:
                er = self.load_len()
                if er >> 63:
                    er -= 1 << 64
            else:
                er = v.estimate_distance(last)
            if name in v.groups:
                self.fail("Duplicated consumer group name %s" % name.decode("utf-8", "replace"))
            g = Group(last, er)
            v.groups[name] = g
            pel = g.pel
            for _ in range(self.load_len()):
                i = int.from_bytes(self.read(16), "big")
                nack = NACK(None, self._ms_time())
                nack.delivery_count = self.load_len()
                if i in pel:
                    self.fail("Duplicated global PEL entry loading stream consumer group")
                pel[i] = nack
            for _ in range(self.load_len()):
                cname = self.load_string()
                if cname in g.consumers:
                    self.fail("Duplicate stream consumer detected.")
                cons = Consumer(cname, self._ms_time())
                if t >= T_STREAM_LISTPACKS_3:
                    self.read(8)            # active time (Redis 7.2)
                g.consumers[cname] = cons
                for _ in range(self.load_len()):
                    i = int.from_bytes(self.read(16), "big")
                    nack = pel.get(i)
                    if nack is None:
                        self.fail("Consumer entry not found in group global PEL")
                    if i in cons.pel:
                        self.fail("Duplicated consumer PEL entry  loading a stream consumer group")
                    nack.consumer = cons
                    cons.pel[i] = nack
            for nack in pel.values():
                if nack.consumer is None:
                    self.fail("Stream CG PEL entry without consumer")
        return v

    # things we can only skip
    def skip_module_value(self):
        while True:
            op = self.load_len()
            if op == 0:      # EOF
                return
            if op in (1, 2):
                self.load_len()
            elif op == 3:
                self.read(4)
            elif op == 4:
                self.read(8)
            elif op == 5:
                self.load_string()
            else:
                self.fail("Unknown module opcode %d" % op)

    def skip_stream(self, t):
        n = self.load_len()
        for _ in range(n):
            self.load_string()      # node key (stream ID)
            self.load_string()      # listpack
        self.load_len()             # length
        self.load_len()             # last id ms
        self.load_len()             # last id seq
        if t >= T_STREAM_LISTPACKS_2:
            self.load_len()
            self.load_len()         # first id
            self.load_len()
            self.load_len()         # max deleted id
            self.load_len()         # entries added
        ngroups = self.load_len()
        for _ in range(ngroups):
            self.load_string()
            self.load_len()
            self.load_len()
            if t >= T_STREAM_LISTPACKS_2:
                self.load_len()     # entries read
            npel = self.load_len()
            for _ in range(npel):
                self.read(16)
                self.read(8)
                self.load_len()
            ncons = self.load_len()
            for _ in range(ncons):
                self.load_string()
                self.read(8)        # seen time
                if t >= T_STREAM_LISTPACKS_3:
                    self.read(8)    # active time
                np = self.load_len()
                for _ in range(np):
                    self.read(16)

    # the file
    def load(self, result=None, unsupported_ok=False):
        """Parse a whole RDB file.  Returns a LoadResult."""
        self.key_delay = self.s.key_delay()
        head = bytes(self.read(9)) if self.n >= 9 or self.source is not None else b""
        if len(head) < 9:
            raise RdbError("Unexpected EOF reading RDB file", self.n, truncated=True)
        if head[:5] != b"REDIS":
            raise RdbError("Wrong signature trying to load DB from file", 0)
        try:
            ver = int(head[5:9])
        except ValueError:
            raise RdbError("Wrong signature trying to load DB from file", 0) from None
        if ver < 1 or ver > MAX_READ_VERSION:
            raise RdbError("Can't handle RDB format version %d" % ver, 5)
        res = result or LoadResult(self.ndbs)
        res.version = ver
        dbid = 0
        cur = res.dbs[0]
        expire = -1
        lru_idle = lfu_freq = -1
        counts = res.type_counts
        # Fast path for the common record: a string key and a plain string
        # value with short (6-bit) lengths, no expire; anything else takes
        # the general path below.
        if self.data is None:
            self.data = bytes(self.buf)
        data = self.data
        n = self.n
        fast = self.trace is None
        records = load_records if not self.s.deep else None
        build = self._build
        hash_entries = self.s.hash_entries
        tcounts = [0] * 256         # keys loaded by the fast path, by type
        nfast = 0
        while True:
            if self.data is not data:       # the window moved on
                data = self.data
                n = self.n
            op_pos = p = self.pos
            if fast and expire == -1 and lru_idle == -1 and lfu_freq == -1 and not self.key_delay:
                if records is not None:
                    p, k = records(data, p, n, cur[0], build, tcounts, HashValue, hash_entries)
                else:
                    p, k = load_plain_strings(data, p, n, cur[0])
                    tcounts[T_STRING] += k
                nfast += k
                self.pos = op_pos = p
            t = self.byte()
            if t == OP_EXPIRETIME_MS:
                expire = int.from_bytes(self.read(8), "little", signed=True)
                continue
            if t == OP_EXPIRETIME:
                expire = int.from_bytes(self.read(4), "little", signed=True) * 1000
                continue
            if t == OP_FREQ:
                lfu_freq = self.byte()
                continue
            if t == OP_IDLE:
                lru_idle = self.load_len()
                continue
            if t == OP_EOF:
                break
            if t == OP_SELECTDB:
                dbid = self.load_len()
                if dbid >= self.ndbs:
                    raise RdbError("FATAL: Data file was created with a Redis server configured to handle "
                                   "more than %d databases. Exiting" % self.ndbs, op_pos)
                cur = res.dbs[dbid]
                if self.trace is not None:
                    self.trace("selectdb", op_pos, dbid)
                continue
            if t == OP_RESIZEDB:
                self.load_len()
                self.load_len()
                continue
            if t == OP_AUX:
                k = self.load_string()
                v = self.load_string()
                res.aux[k] = v
                if k == b"used-mem":
                    try:
                        self.used_mem = int(v)
                    except ValueError:
                        pass
                if self.trace is not None:
                    self.trace("aux", op_pos, (k, v))
                continue
            if t == OP_MODULE_AUX:
                mid = self.load_len()
                when_op = self.load_len()
                self.load_len()
                if when_op != 2:
                    self.fail("bad when_opcode", op_pos)
                self.skip_module_value()
                res.module_aux_skipped += 1
                self.log("warning", "Skipping module AUX data of module '%s' (no such module)"
                         % module_name(mid))
                continue
            if t == OP_FUNCTION2:
                res.functions.append(self.load_string())
                continue
            if t == OP_FUNCTION:
                name = self.load_string()
                engine = self.load_string()
                if self.load_len():
                    self.load_string()
                blob = self.load_string()
                res.functions.append(b"#!%s name=%s\n%s" % (engine, name, blob))
                continue
            if t not in TYPE_NAMES:
                self.fail("Unknown RDB encoding type %d" % t, op_pos)
            self.entry_start = op_pos
            self.key = None
            self.key_type = t
            key = self.load_string()
            self.key = key
            if expire != -1:
                res.expires += 1
                if expire < self.now_ms:
                    res.already_expired += 1
            try:
                val = self.load_object(t)
            except UnsupportedType as e:
                if not unsupported_ok:
                    raise RdbError("Key '%s' has a value of type %s that Ophidis can't load" % (
                        key.decode("utf-8", "replace"), e.args[0]), op_pos) from None
                counts[TYPE_NAMES[t]] = counts.get(TYPE_NAMES[t], 0) + 1
                res.keys_loaded += 1
                expire = -1
                lru_idle = lfu_freq = -1
                continue
            if val is None:
                res.empty_skipped += 1
                if res.empty_skipped <= 10:
                    self.log("warning", "rdbLoadObject skipping empty key: %s" % key.decode("utf-8", "replace"))
            elif self.skip_expired and expire != -1 and expire < self.now_ms:
                res.keys_expired += 1
                res.expired.append((dbid, key))
                counts[TYPE_NAMES[t]] = counts.get(TYPE_NAMES[t], 0) + 1
            else:
                d, exps = cur
                if key in d:
                    raise RdbError("RDB has duplicated key '%s' in DB %d" % (
                        key.decode("utf-8", "replace"), dbid), op_pos)
                d[key] = val
                if expire != -1:
                    exps[key] = expire
                if lru_idle != -1:
                    res.lru.append((dbid, key, lru_idle))
                elif lfu_freq != -1:
                    res.lfu.append((dbid, key, lfu_freq))
                res.keys_loaded += 1
                counts[TYPE_NAMES[t]] = counts.get(TYPE_NAMES[t], 0) + 1
            if self.key_delay:
                self._delay()
            expire = -1
            lru_idle = lfu_freq = -1
        res.keys_loaded += nfast
        for t, k in enumerate(tcounts):
            if k:
                counts[TYPE_NAMES[t]] = counts.get(TYPE_NAMES[t], 0) + k
        res.end_offset = end = self.offset
        if ver >= 5:
            if self.n - self.pos < 8 and self.source is not None:
                self._refill(8)
            body = self.pos
            stored = int.from_bytes(self.read(8), "little")
            if not self.verify_checksum:
                res.checksum = "skipped"
            elif stored == 0:
                res.checksum = "disabled"
            else:
                actual = crc64(self.buf[:body], self.crc)
                if actual != stored:
                    raise RdbError("RDB CRC error: expected %016x but got %016x" % (actual, stored), end)
                res.checksum = "ok"
        if self.source is None and self.pos != self.n:
            self.log("warning", "%d trailing bytes after the RDB end" % (self.n - self.pos))
        return res


def load_plain_strings_py(data, p, n, d):
    """From ``p`` in ``data`` (``n`` bytes), the run of records a string key
    and a plain string value with 6-bit lengths (no expiry) into ``d``; stops
    before anything else (another record, a key already in ``d``, the end of
    the window).  Returns (the position, the count).  The pure twin of
    _rdb.rdb_load_plain_strings."""
    count = 0
    while p < n and data[p] == 0:
        kl = data[p + 1] if p + 1 < n else 255
        if kl >= 64:
            break
        q = p + 2 + kl
        if q >= n:
            break
        vl = data[q]
        if vl >= 64 or q + 1 + vl > n:
            break
        key = data[p + 2:q]
        if key in d:
            break
        d[key] = data[q + 1:q + 1 + vl]
        count += 1
        p = q + 1 + vl
    return p, count


load_plain_strings = _c.rdb_load_plain_strings if _c is not None else load_plain_strings_py
# compiled: the records of the common types (RdbReader.load's Python path is its pure twin)
load_records = _c.rdb_load_records if _c is not None else None


class UnsupportedType(Exception):
    pass


class DuplicateField(EncodingError):
    """A field (member) twice in an encoded hash (zset); args[0]: the field."""


_MODULE_CHARSET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def module_name(mid: int) -> str:
    mid >>= 10
    out = []
    for _ in range(9):
        out.append(_MODULE_CHARSET[mid & 63])
        mid >>= 6
    return "".join(reversed(out))


def load_payload(payload: bytes, settings=None, log=None):
    """Decode a DUMP payload (already verified).  Returns the value or
    raises RdbError (RESTORE's Bad data format).  As Redis's, the reader
    runs over the whole payload, its version and CRC footer included; the
    types are Redis 7.0's (the payload's version is at most 10, so the
    listpack set and the 7.2 stream cannot appear)."""
    r = RdbReader(memoryview(payload), settings, log=log)
    t = r.byte()
    if t not in TYPE_NAMES or t > T_STREAM_LISTPACKS_2:
        raise RdbError("Unknown RDB encoding type %d" % t, 0, quiet=True)
    try:
        v = r.load_object(t)
    except UnsupportedType as e:
        raise RdbError("The RDB file contains module data I can't load: no matching module type %s"
                       % e.args[0].split(" ", 1)[-1], 0) from None
    if v is None:
        raise RdbError("Empty key", r.pos, quiet=True)
    return v
