"""DEBUG: the testing helpers of Redis's debug.c that make sense here.

DEBUG is protected (``enable-debug-command``); Server.process_command
checks that before we run.  SEGFAULT, PANIC and ASSERT write Redis's crash
report (crash.py) and kill the server; OOM and RESTART are not provided.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import signal
import struct
import sys
import time

from .. import crash, log
from ..cmdtable.registry import command
from ..dtoa import fpconv
from ..config import memtoull
from ..errors import RedisError
from ..keyspace import dictshape
from ..keyspace.db import MODULE_CLASSES, type_name
from ..persistence import modulerecord
from ..persistence.rdb import stream_body
from ..protocol.resp import (OK, boolean, bulk, double, help_reply, integer, map_header, push_header, set_header,
                             simple, verbatim)
from ..replication.propagate import TO_REPL, also_propagate
from ..types.stream import FLAG_DELETED, MASK64
from ..util import atoi, parse_int
from .keys import object_encoding, refcount

_NO_SUCH_KEY = RedisError("ERR no such key")
_NOT_ALLOWED = RedisError(
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
    "you can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.")

# Value digesters for DEBUG DIGEST / DIGEST-VALUE, Redis's scheme (debug.c)
# so that a digest taken here equals redis-server's for the same data.
# Digests are 160-bit ints while being computed:
#   xor(d, data) = d ^ SHA1(data)           for unordered elements
#   mix(d, data) = SHA1(d ^ SHA1(data))     for ordered ones
# A value's digest starts with its type code (4 bytes, big endian) mixed
# in, then its contents; "!!expire!!" is xored in when the key has a TTL.
# DIGESTERS: TYPE name -> (Redis's type code, fn(d, value) -> d).  Every
# family of types/ is covered below (HyperLogLog is a string, geo a zset);
# a new family registers its own.
DIGESTERS: dict = {}

_sha1 = hashlib.sha1
_from_bytes = int.from_bytes


def _h(data) -> int:
    """SHA1(data) as an int."""
    return _from_bytes(_sha1(data).digest(), "big")


def _mixh(d: int, h: int) -> int:
    """mix with the SHA1 of the data already taken (h)."""
    return _from_bytes(_sha1((d ^ h).to_bytes(20, "big")).digest(), "big")


def _mix(d: int, data) -> int:
    return _from_bytes(_sha1((d ^ _from_bytes(_sha1(data).digest(), "big")).to_bytes(20, "big")).digest(), "big")


def _mix0(data) -> int:
    """mix into a zero digest: SHA1(SHA1(data))."""
    return _from_bytes(_sha1(_sha1(data).digest()).digest(), "big")


def _pair(a, b) -> int:
    """What one field/value (or member/score) pair xors into its value's
    digest: the SHA1 of the 20 bytes of mix(mix(0, a), b)."""
    return _from_bytes(_sha1(_mix(_mix0(a), b).to_bytes(20, "big")).digest(), "big")


def _list(d, v):
    for e in v:
        d = _mix(d, e)
    return d


def _set(d, v):
    for e in v:
        d ^= _from_bytes(_sha1(e).digest(), "big")
    return d


def _hash(d, v):
    t = v.ttl
    if not t:
        for k, x in v.items():
            d ^= _pair(k, x)
        return d
    mark = _from_bytes(_sha1(b"!!hexpire!!").digest(), "big")
    for k, x in v.items():
        e = _mix(_mix0(k), x)
        if k in t:
            e ^= mark
        d ^= _from_bytes(_sha1(e.to_bytes(20, "big")).digest(), "big")
    return d


def _zset(d, v):
    # the score as fpconv_dtoa's text (Redis 7.2+)
    for m, s in v.dict.items():
        d ^= _pair(m, fpconv(s))
    return d


def _stream(d, v):
    # live entries in ID order: "ms.seq", then each field and value;
    # consumer groups are not part of Redis 7.0's digest
    for node in v.nodes:
        flags = node.flags
        fvs = node.fvs
        for j, i in enumerate(node.ids):
            if flags[j] & FLAG_DELETED:
                continue
            d = _mix(d, b"%d.%d" % (i >> 64, i & MASK64))
            for x in fvs[j]:
                d = _mix(d, x)
    return d


def _array(d, v):
    # ours (Redis 8.8's is not reproduced): each index then its element,
    # in index order
    for i, x in v.items():
        d = _mix(_mix(d, b"%d" % i), x)
    return d


def _module(d, v):
    # a module type's value: what its digest gives (ours for each type)
    return _mix(d, v.digest())


DIGESTERS.update({
    b"string": (0, _mix),
    b"list": (1, _list),
    b"set": (2, _set),
    b"zset": (3, _zset),
    b"hash": (4, _hash),
    b"stream": (6, _stream),
    b"array": (8, _array),
})

_ZERO = bytes(20)
_TYPE_HASHES: dict = {}     # type code -> SHA1 of its 4-byte form
_EXPIRE_HASH = _h(b"!!expire!!")


def _object_digest(db, key, v, d: int) -> int:
    """xorObjectDigest: v's type and contents mixed into d, plus the expire
    marker."""
    if v.__class__ in MODULE_CLASSES:
        code, fn = 5, _module        # OBJ_MODULE
    else:
        code, fn = DIGESTERS[type_name(v)]
    th = _TYPE_HASHES.get(code)
    if th is None:
        th = _TYPE_HASHES[code] = _h(struct.pack(">I", code))
    d = fn(_mixh(d, th), v)
    if key in db.expires:
        d ^= _EXPIRE_HASH
    return d


def value_digest(db, key) -> bytes:
    """DEBUG DIGEST-VALUE of one key (logically expired keys included; 20
    zero bytes when missing)."""
    v = db.d.get(key)
    if v is None:
        return _ZERO
    return _object_digest(db, key, v, 0).to_bytes(20, "big")


def dataset_digest(server) -> bytes:
    """DEBUG DIGEST: per database holding keys, its id mixed into the
    running result, then the digest of every key (its name mixed first, then
    the value) xored in as an element (the SHA1 of those 20 bytes)."""
    final = 0
    for db in server.dbs:
        if not db.d:
            continue
        final = _mix(final, struct.pack(">I", db.id))
        for key, v in db.d.items():
            final ^= _h(_object_digest(db, key, v, _mix0(key)).to_bytes(20, "big"))
    return final.to_bytes(20, "big")


def _serialized_length(v) -> int:
    """Rough size of the value in an RDB file."""
    if isinstance(v, (bytes, bytearray)):
        n = len(v)
        if n <= 11:
            try:
                iv = int(v)
                if b"%d" % iv == v:
                    if -128 <= iv <= 127:
                        return 2
                    if -32768 <= iv <= 32767:
                        return 3
                    if -(2**31) <= iv < 2**31:
                        return 5
            except ValueError:
                pass
        return n + (1 if n < 64 else 2 if n < 16384 else 5)
    if v.__class__ in MODULE_CLASSES:
        return len(modulerecord.encode(v))       # the module record, as Redis measures it
    t = type_name(v)
    if t == b"stream":
        return len(stream_body(v))
    total = 1
    try:
        if t == b"hash":
            for k, x in v.items():
                total += len(k) + len(x) + 2
        elif t == b"zset":
            for m, _ in v.items():
                total += len(m) + 9
        else:
            for e in v:
                total += len(e) + 1
    except TypeError:
        pass
    return total


def _help():
    return help_reply(b"DEBUG", b"""\
AOF-FLUSH-SLEEP <microsec>
    Accepted for compatibility; does nothing.
ASSERT
    Crash the server with a failed assertion (crash report in the log).
CHANGE-REPL-ID
    Accepted for compatibility; does nothing.
CONFIG-REWRITE-FORCE-ALL
    Rewrite the config file with every directive.
DIGEST
    Hex signature of the whole dataset (all zeros when empty).
DIGEST-VALUE <key> [<key> ...]
    Hex signatures of the values of the given keys.
ERROR <string>
    Reply with an error made of <string>.
LOG <message>
    Write <message> to the server log.
DICT-RESIZING <0|1>
    Enable or disable the resizing of the databases' tables.
HTSTATS <dbid>
    Size information about a database's key table.
HTSTATS-KEY <key>
    Size information about the table of a hash/set/zset value.
LISTPACK <key>
    Check that <key> is stored compactly (listpack).
QUICKLIST <key> [<0|1>]
    Check that <key> is a list stored as a quicklist.
LOADAOF
    Reload the dataset from the append only file.
OBJECT <key>
    Low level details about the value of <key>.
PANIC
    Crash the server with a panic (crash report in the log).
POPULATE <count> [<prefix>] [<size>]
    Create <count> string keys <prefix>:<n> (prefix defaults to 'key').
PROTOCOL <type>
    Reply with a sample value of a protocol type: string, integer, double,
    bignum, null, array, set, map, attrib, push, verbatim, true, false.
RELOAD [MERGE] [NOFLUSH] [NOSAVE]
    Save the dataset to the RDB file and load it back.
REPLICATE <string>
    Accepted for compatibility; does nothing.
SEGFAULT
    Crash the server as by a segmentation fault (crash report in the log).
SET-ACTIVE-EXPIRE <0|1>
    Turn the background expiry cycle off (0) or on (1).
QUICKLIST-PACKED-THRESHOLD <size>
    Size above which list elements get a node of their own.
SET-SKIP-CHECKSUM-VALIDATION <0|1>
    Skip checksum checks of RDB payloads.
SET-DISABLE-DENY-SCRIPTS <0|1>
    Allow commands normally refused inside scripts.
SLEEP <seconds>
    Block the server for <seconds> (decimals allowed).
STRINGMATCH-TEST
    Self test of the glob matcher.
STRUCTSIZE
    Sizes of internal structures.
PAUSE-CRON <0|1>
    Suspend (1) or resume (0) the periodic server tasks.
REPLYBUFFER PEAK-RESET-TIME <NEVER|RESET|time>
    Accepted for compatibility.
REPLYBUFFER RESIZING <0|1>
    Accepted for compatibility.
CLIENT-EVICTION
    Client eviction pools (needs maxmemory-clients).
DROP-CLUSTER-PACKET-FILTER <packet-type>
    Drop all packets that match the filtered type. Set to -1 allow all packets.
CLUSTERLINK KILL <to|from|all> <node-id>
    Kills the link based on the direction to/from (both) with the provided node.
""")


def _address(db, key, v) -> int:
    """DEBUG OBJECT's "at:": Python replaces a string or number value on
    every change (INCR makes a new object) where Redis modifies its object in
    place, so the address shown is the key's slot (stable while the key
    exists) for plain values, the object's for containers."""
    if isinstance(v, (bytes, bytearray, int)):
        return 0x7f0000000000 | (hash((db.id, key)) & 0xFFFFFFFFF0)
    return id(v)


def _strtod(b: bytes) -> float:
    import re
    m = re.match(rb"\s*[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|inf|nan)", b, re.I)
    if not m:
        return 0.0
    try:
        return float(m.group(0))
    except ValueError:
        return 0.0


def _positive(arg) -> int:
    v = parse_int(arg)
    if v < 0:
        raise RedisError("ERR value is out of range, must be positive")
    return v


def _syntax(argv):
    return RedisError("ERR unknown subcommand or wrong number of arguments for '%s'. Try DEBUG HELP." %
                      argv[1][:128].decode("utf-8", "replace"))


def _protocol(c, name):
    resp = c.resp
    if name == b"string":
        return bulk(b"Hello World")
    if name == b"integer":
        return integer(12345)
    if name == b"double":
        return double(resp, 3.141)
    if name == b"bignum":
        n = b"1234567999999999999999999999999999999"
        return b"(%s\r\n" % n if resp >= 3 else bulk(n)
    if name == b"null":
        return c.null
    if name == b"array":
        return b"*3\r\n" + integer(0) + integer(1) + integer(2)
    if name == b"set":
        return set_header(resp, 3) + integer(0) + integer(1) + integer(2)
    if name == b"map":
        return map_header(resp, 3) + b"".join(integer(j) + boolean(resp, j == 1) for j in range(3))
    if name == b"attrib":
        pre = b""
        if resp >= 3:
            pre = b"|1\r\n" + bulk(b"key-popularity") + b"*2\r\n" + bulk(b"key:123") + integer(90)
        return pre + bulk(b"Some real reply following the attribute")
    if name == b"push":
        if resp < 3:
            raise RedisError("ERR RESP2 is not supported by this command")
        return (push_header(resp, 2) + bulk(b"server-cpu-usage") + integer(42)
                + bulk(b"Some real reply following the push reply"))
    if name == b"true":
        return boolean(resp, True)
    if name == b"false":
        return boolean(resp, False)
    if name == b"verbatim":
        return verbatim(resp, b"This is a verbatim\nstring")
    raise RedisError("ERR Wrong protocol type name. Please use one of the following: "
                     "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")


def _table_size(n: int) -> int:
    """The buckets of a Redis dict holding n entries (4 at least, grown to
    the next power of two when full)."""
    buckets = 4
    while buckets < n:
        buckets <<= 1
    return buckets


def _htstats(size: int) -> bytes:
    """A value's table (HTSTATS-KEY): the size Redis's dict grows to."""
    if not size:
        return b"Hash table 0 stats (main hash table):\nNo stats available for empty dictionaries\n"
    return (b"Hash table 0 stats (main hash table):\n table size: %d\n number of elements: %d\n"
            % (_table_size(size), size))


@command("debug", flags=("syscmd", "touches_dbs"), propagate=False)
def debug(c, argv):
    srv = c.server
    # The client's fast path does not run process_command's checks, so the
    # enable-debug-command protection is enforced here as well.
    if not srv.protected_allowed(c, "enable-debug-command"):
        raise _NOT_ALLOWED
    sub = argv[1].lower()
    n = len(argv)
    db = c.db
    if sub == b"help" and n == 2:
        return _help()
    if sub == b"segfault":
        # Redis writes to a read-only page: SIGSEGV, SEGV_ACCERR (2)
        crash.report_signal(srv, signal.SIGSEGV, 2, c, argv)
    if sub == b"panic":
        crash.panic(srv, "DEBUG PANIC called at Unix time %d" % int(time.time()), _where(), c, argv)
    if sub == b"assert":
        crash.assert_failed(srv, "1 == 2", _where(), c, argv, obj=argv[0])
    if sub == b"sleep" and n == 3:
        secs = _strtod(argv[2])
        if secs > 0:
            time.sleep(secs)
        return OK
    if sub == b"set-active-expire" and n == 3:
        srv.active_expire_enabled = bool(atoi(argv[2]))
        return OK
    if sub == b"object" and n == 3:
        key = argv[2]
        v = db.d.get(key)
        if v is None:
            raise _NO_SUCH_KEY
        enc = object_encoding(v, srv.config).decode()
        try:
            idle = srv.memory.idle_seconds(db, key)
        except Exception:  # noqa: BLE001
            idle = 0
        lru = int(time.time()) & ((1 << 24) - 1)
        extra = ""
        if enc == "quicklist":
            extra = (" ql_nodes:%d ql_avg_node:%.2f ql_listpack_max:%d ql_compressed:%d "
                     "ql_uncompressed_size:%d" % (
                         1, float(len(v)), srv.config["list-max-listpack-size"],
                         1 if srv.config["list-compress-depth"] else 0, _serialized_length(v)))
        return simple(("Value at:0x%x refcount:%d encoding:%s serializedlength:%d lru:%d lru_seconds_idle:%d%s" % (
            _address(db, key, v), refcount(v, srv.config), enc, _serialized_length(v), lru, idle, extra)).encode())
    if sub == b"reload":
        opts = {}
        for o in argv[2:]:
            u = o.upper()
            if u == b"MERGE":
                opts["merge"] = True
            elif u == b"NOFLUSH":
                opts["noflush"] = True
            elif u == b"NOSAVE":
                opts["nosave"] = True
            else:
                raise RedisError("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.")
        fn = _persistence_fn("ophidis.persistence.snapshot", "debug_reload")
        if fn is None:
            raise RedisError("ERR DEBUG RELOAD is not available: this server has no RDB persistence")
        r = fn(srv, **opts) if opts else fn(srv)
        if isinstance(r, (bytes, bytearray)):
            return bytes(r)
        if isinstance(r, str):
            raise RedisError(r if r.startswith(("ERR", "-")) else "ERR " + r)
        log.warning("DB reloaded by DEBUG RELOAD")
        return OK
    if sub == b"loadaof" and n == 2:
        fn = _persistence_fn("ophidis.persistence.aof", "debug_loadaof")
        if fn is None:
            raise RedisError("ERR DEBUG LOADAOF is not available: this server has no AOF persistence")
        r = fn(srv)
        if isinstance(r, (bytes, bytearray)):
            return bytes(r)
        return OK
    if sub == b"digest" and n == 2:
        return simple(dataset_digest(srv).hex().encode())
    if sub == b"digest-value" and n >= 2:
        out = [b"*%d\r\n" % (n - 2)]
        for key in argv[2:]:
            out.append(simple(value_digest(db, key).hex().encode()))
        return b"".join(out)
    if sub == b"populate" and 3 <= n <= 5:
        count = _positive(argv[2])
        size = _positive(argv[4]) if n == 5 else 0
        prefix = argv[3] if n >= 4 else b"key"
        added = 0
        for j in range(count):
            key = b"%s:%d" % (prefix, j)
            if db.lookup_write(key) is not None:
                continue
            val = b"value:%d" % j
            if size:
                val = val[:size] + bytes(max(0, size - len(val)))
            db.add(key, val)
            db.signal(key)
            added += 1
        return OK
    if sub == b"protocol" and n == 3:
        return _protocol(c, argv[2].lower())
    if sub == b"log" and n == 3:
        log.warning("DEBUG LOG: %s" % argv[2].decode("utf-8", "replace"))
        return OK
    if sub == b"error" and n == 3:
        msg = argv[2].replace(b"\r", b" ").replace(b"\n", b" ")
        return b"-%s\r\n" % msg
    if sub == b"quicklist-packed-threshold" and n == 3:
        sz = memtoull(argv[2].decode("latin-1"))
        if sz is None or sz > (1 << 32) - (1 << 20):
            raise RedisError("ERR argument must be a memory value bigger than 1 and smaller than 4gb")
        # (accepted; lists keep no plain nodes: types/containers.py)
        srv.quicklist_packed_threshold = sz
        return OK
    if sub in (b"set-skip-checksum-validation", b"aof-flush-sleep", b"set-disable-deny-scripts",
               b"pause-cron") and n == 3:
        val = atoi(argv[2])
        if sub == b"set-skip-checksum-validation":
            srv.skip_checksum_validation = val
        elif sub == b"aof-flush-sleep":
            srv.aof_flush_sleep = val
        elif sub == b"set-disable-deny-scripts":
            srv.script_disable_deny_script = val
        else:
            srv.pause_cron = val
        return OK
    if sub == b"replicate" and n >= 3:
        # a command for the replicas only, as it is (tests of divergence)
        also_propagate(srv, list(argv[2:]), c.db, TO_REPL)
        return OK
    if sub == b"drop-cluster-packet-filter" and n == 3:
        t = parse_int(argv[2])      # (getLongFromObjectOrReply)
        if srv.cluster is not None:
            srv.cluster.drop_filter = t
        return OK
    if sub == b"clusterlink" and n == 5 and argv[2].lower() == b"kill":
        cl = srv.cluster
        if cl is None:
            raise RedisError("ERR Debug option only available for cluster mode enabled setup!")
        node = cl.lookup(argv[4])
        if node is None:
            raise RedisError("ERR Unknown node %s" % argv[4].decode("utf-8", "replace"))
        d = argv[3].lower()
        links = {b"from": (node.inbound_link,), b"to": (node.link,),
                 b"all": (node.link, node.inbound_link)}.get(d)
        if links is None:
            raise RedisError("ERR Unknown direction %s" % argv[3].decode("utf-8", "replace"))
        for link in links:
            if link is not None:
                link.free()
        return OK
    if sub == b"change-repl-id" and n == 2:
        log.warning("Changing replication IDs after receiving DEBUG change-repl-id")
        srv.repl_feed.change_replid()
        srv.repl_feed.clear_replid2()
        return OK
    if sub == b"stringmatch-test" and n == 2:
        return simple(b"Apparently Redis did not crash: test passed")
    if sub == b"structsize" and n == 2:
        return bulk(b"bits:64 robj:16 dictentry:24 sdshdr5:1 sdshdr8:3 sdshdr16:5 sdshdr32:9 sdshdr64:17 ")
    if sub == b"config-rewrite-force-all" and n == 2:
        cfg = srv.config
        path = getattr(cfg, "config_file", None)
        if not path:
            raise RedisError("ERR CONFIG-REWRITE-FORCE-ALL failed: The server is running without a config file")
        try:
            try:
                cfg.rewrite(path, force_all=True)
            except TypeError:
                cfg.rewrite(path)
        except OSError as e:
            raise RedisError("ERR CONFIG-REWRITE-FORCE-ALL failed: %s" % e.strerror)
        return OK
    if sub == b"htstats" and n == 3:
        dbid = parse_int(argv[2])
        if dbid < 0 or dbid >= len(srv.dbs):
            raise RedisError("ERR Out of range database")
        d = srv.dbs[dbid]
        policy = dictshape.resize_policy(srv)
        ks, xs = d.shapes
        ks.look(len(d.d), policy)
        xs.look(len(d.expires), policy)
        text = b"[Dictionary HT]\n" + ks.stats(len(d.d)) + b"[Expires HT]\n" + xs.stats(len(d.expires))
        return verbatim(c.resp, text)
    if sub == b"dict-resizing" and n == 3:
        srv.dict_resizing = atoi(argv[2])
        return OK
    if sub == b"htstats-key" and n == 3:
        v = db.lookup_nostats(argv[2])
        if v is None:
            raise _NO_SUCH_KEY
        enc = object_encoding(v, srv.config)
        if enc not in (b"hashtable", b"skiplist"):
            raise RedisError("ERR The value stored at the specified key is not represented using an hash table")
        return verbatim(c.resp, _htstats(len(v)))
    if (sub == b"listpack" and n == 3) or (sub == b"quicklist" and n in (3, 4)):
        v = db.lookup_nostats(argv[2])
        if v is None:
            raise _NO_SUCH_KEY
        enc = object_encoding(v, srv.config)
        if enc != sub and not (sub == b"listpack" and enc == b"listpackex"):
            raise RedisError("ERR Not a %s encoded object." % sub.decode())
        return simple(b"%s structure printed on stdout" % sub.capitalize())
    if sub == b"client-eviction" and n == 2:
        if not srv.config["maxmemory-clients"]:
            raise RedisError("ERR maxmemory-clients is disabled.")
        return verbatim(c.resp, srv.memory.clients.buckets_text())
    if sub == b"replybuffer" and n == 4:
        what = argv[2].lower()
        if what == b"peak-reset-time":
            v = argv[3].lower()
            if v == b"never":
                srv.reply_buffer_peak_reset_time = -1
            elif v == b"reset":
                srv.reply_buffer_peak_reset_time = 5000
            else:
                srv.reply_buffer_peak_reset_time = parse_int(argv[3])
        elif what == b"resizing":
            srv.reply_buffer_resizing_enabled = atoi(argv[3])
        else:
            raise RedisError("ERR unknown subcommand or wrong number of arguments for '%s'. Try DEBUG HELP." %
                             argv[1][:128].decode("utf-8", "replace"))
        return OK
    raise _syntax(argv)


def _where() -> str:
    """file:line of the caller, for an assertion's or a panic's report."""
    f = sys._getframe(1)
    return "%s:%d" % (os.path.basename(f.f_code.co_filename), f.f_lineno)


def _persistence_fn(module: str, name: str):
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    return getattr(mod, name, None)


