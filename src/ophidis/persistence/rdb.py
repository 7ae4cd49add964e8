"""The RDB file of Redis 7.0 (version 10), written byte for byte as Redis
writes it, and read back from versions 1-11 (rdb.c's rdbSaveRio and
rdbLoadRioWithLoadingCtx).

Writing: ``RdbWriter`` streams a whole snapshot to a file object (with the
CRC-64 trailer), ``write_snapshot`` writes the header, the aux fields, the
function libraries and the keyspace.
Reading: ``RdbReader.load`` parses a buffer (or a stream) into fresh key ->
value dicts per database; any inconsistency raises ``RdbError`` carrying
the byte offset, so the caller can refuse the file without touching the
live keyspace.

The values' encodings are rdbencode.py's and rdbdecode.py's, the format's
numbers rdbformat.py's; the DUMP and FUNCTION DUMP payloads are
rdbpayload.py's (re-exported here with the names the command families
import from this module).
"""

from __future__ import annotations

import random
import time

from .. import compiled, sysinfo
from ..keyspace import hfe
from ..keyspace.db import KeyTable
from ..types.containers import HashValue
from .rdbcodec import crc64, enc_len, enc_string
from .rdbdecode import LoadAborted, LoadSettings, UnsupportedType, ValueReader
from .rdbencode import Encoder, stream_body
from .rdbformat import (MAX_READ_VERSION, OP_AUX, OP_EOF, OP_EXPIRETIME, OP_EXPIRETIME_MS, OP_FREQ, OP_FUNCTION,
                        OP_FUNCTION2, OP_IDLE, OP_MODULE_AUX, OP_RESIZEDB, OP_SELECTDB, RDB_VERSION, RDB_VERSION_HFE,
                        HFE_TYPES, T_LIST_QUICKLIST_2,
                        T_SET, T_STRING, TYPE_NAMES, RdbError, module_name)
from .rdbpayload import (NotAFunction, dump_payload, functions_payload, load_functions_payload, load_payload,
                         verify_payload)

__all__ = ["RdbWriter", "aux", "write_snapshot", "write_keys", "write_keys_py", "function_codes", "RdbReader",
           "LoadResult", "debug_delay", "load_plain_strings", "load_plain_strings_py", "load_records",
           # what the command families import from here
           "LoadSettings", "RdbError", "stream_body", "NotAFunction", "dump_payload", "functions_payload",
           "load_functions_payload", "load_payload", "verify_payload"]


# -- writing ------------------------------------------------------------------------

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
    # Redis 7.4's version only when a hash has field TTLs (types 24, 25)
    w.write(b"REDIS%04d" % (RDB_VERSION_HFE if hfe.any_field_ttls(server.dbs) else RDB_VERSION))
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
    save_lru = "lru" in policy or "lrm" in policy   # the LRM policies keep the same clock
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


# -- reading ------------------------------------------------------------------------

def debug_delay(usec):
    """debugDelay: sleep ``usec`` microseconds; a negative value sleeps one
    microsecond with a probability of 1/-usec (short delays, statistically)."""
    if usec < 0:
        usec = 1 if random.randrange(-usec) == 0 else 0
    if usec:
        time.sleep(usec / 1e6)


class LoadResult:
    def __init__(self, ndbs):
        # (the keys: a database's table, a dict in the pure install; expires)
        self.dbs = [(KeyTable(), {}) for _ in range(ndbs)]
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
        self.hfe = []               # (dbid, key) of the hashes with field TTLs


class RdbReader(ValueReader):
    """The whole file: ``load`` reads the header, the opcodes (database,
    expiry, LRU/LFU, aux fields, function libraries, module aux data), the
    keys and their values (ValueReader's), and checks the CRC-64 trailer.
    ``trace(event, offset, info)`` is called for each aux field and
    database selected (redis-check-rdb's lines; it also turns the compiled
    fast path off)."""

    def __init__(self, buf, settings=None, ndbs=16, now_ms=None, skip_expired=True,
                 verify_checksum=True, log=None, trace=None, source=None, chunk=1 << 16):
        super().__init__(buf, settings, verify_checksum, log, source, chunk)
        self.used_mem = 0           # the used-mem aux field (INFO's loading_rdb_used_mem)
        self.ndbs = ndbs
        self.now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
        self.skip_expired = skip_expired
        self.key = None
        self.key_type = None
        self.entry_start = 0
        self.trace = trace

    def _delay(self):
        """key-load-delay after each key (read again each time: a test
        speeds a slow load up by setting it to 0)."""
        d = self.key_delay = self.s.key_delay()
        if d:
            debug_delay(d)
            if self.aborted:
                raise LoadAborted()

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
                if t in HFE_TYPES:
                    res.hfe.append((dbid, key))
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
