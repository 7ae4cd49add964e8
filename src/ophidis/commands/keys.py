"""Generic keyspace commands (db.c, expire.c, object.c)."""

from __future__ import annotations


from ..cmdtable.registry import command
from ..errors import NO_SUCH_KEY, SAME_OBJECT, SYNTAX, RedisError
from ..keyspace import hfe, notify
from ..keyspace.db import ENCODINGS, EmbStr, mstime, type_name
from ..protocol.resp import MINUS_ONE, MINUS_TWO, OK, ONE, ZERO, bulk, bulk_array, help_reply, integer
from ..util import LLONG_MAX, LLONG_MIN, compile_glob, parse_int, try_int

_GENERIC = notify.GENERIC


def _del(c, argv, lazy):
    db = c.db
    n = 0
    lf = c.server.lazyfree
    if lf is not None and not lazy and c.server.config["lazyfree-lazy-user-del"]:
        lazy = True
    for key in argv[1:]:
        v = db.lookup_write(key)
        if v is not None and db.delete(key):
            n += 1
            if lazy and lf is not None:
                lf.free(v)
            v = None
            notify.notify(_GENERIC, b"del", key, db.id)
    c.server.dirty += n
    return integer(n)


@command("del")
def del_(c, argv):
    return _del(c, argv, False)


@command("unlink")
def unlink(c, argv):
    return _del(c, argv, True)


@command("exists", flags=("no_touch",))
def exists(c, argv):
    lookup = c.db.lookup_read
    n = 0
    for key in argv[1:]:
        if lookup(key) is not None:
            n += 1
    return integer(n)


@command("touch")
def touch(c, argv):
    return exists(c, argv)      # without no_touch: the keys' access times change


@command("type", flags=("no_touch",))
def type_(c, argv):
    v = c.db.lookup_read(argv[1])
    if v is None:
        return b"+none\r\n"
    return b"+%s\r\n" % type_name(v)


def _dup(v):
    if isinstance(v, bytes):
        return v
    return v.copy()


def _rename(c, argv, nx):
    db = c.db
    src, dst = argv[1], argv[2]
    v = db.lookup_write(src)
    if v is None:
        raise NO_SUCH_KEY
    if src == dst:
        return ZERO if nx else OK
    expire = db.expires.get(src)
    if db.lookup_write(dst) is not None:
        if nx:
            return ZERO
        db.server_delete(dst)
    db.delete(src)
    db.add(dst, v)
    if expire is not None:
        db.expires[dst] = expire
    hfe.track_value(db, dst, v)
    db.signal(src)
    db.signal(dst)
    notify.notify(_GENERIC, b"rename_from", src, db.id)
    notify.notify(_GENERIC, b"rename_to", dst, db.id)
    c.server.dirty += 1
    return ONE if nx else OK


@command("rename")
def rename(c, argv):
    return _rename(c, argv, False)


@command("renamenx")
def renamenx(c, argv):
    return _rename(c, argv, True)


def _db_index(c, b):
    idx = parse_int(b)
    if idx < 0 or idx >= len(c.server.dbs):
        raise RedisError("ERR DB index is out of range")
    return c.server.dbs[idx]


@command("move", flags=("touches_dbs",))
def move(c, argv):
    if c.server.config["cluster-enabled"]:
        raise RedisError("ERR MOVE is not allowed in cluster mode")
    src = c.db
    idx = parse_int(argv[2])
    if idx < -(2**31) or idx > 2**31 - 1:
        raise RedisError("ERR value is out of range")
    if idx < 0 or idx >= len(c.server.dbs):
        raise RedisError("ERR DB index is out of range")
    dst = c.server.dbs[idx]
    if src is dst:
        raise SAME_OBJECT
    key = argv[1]
    v = src.lookup_write(key)
    if v is None:
        return ZERO
    expire = src.expires.get(key)
    if dst.lookup_write(key) is not None:
        return ZERO
    dst.add(key, v)
    if expire is not None:
        dst.expires[key] = expire
    hfe.track_value(dst, key, v)
    src.delete(key)
    src.signal(key)
    dst.signal(key)
    notify.notify(_GENERIC, b"move_from", key, src.id)
    notify.notify(_GENERIC, b"move_to", key, dst.id)
    c.server.dirty += 1
    return ONE


@command("copy", flags=("touches_dbs",))
def copy(c, argv):
    src = dst = c.db
    replace = False
    j = 3
    n = len(argv)
    while j < n:
        opt = argv[j].lower()
        if opt == b"replace":
            replace = True
        elif opt == b"db" and j + 1 < n:
            idx = parse_int(argv[j + 1])
            if idx < -(2**31) or idx > 2**31 - 1:
                raise RedisError("ERR value is out of range")
            if idx < 0 or idx >= len(c.server.dbs):
                raise RedisError("ERR DB index is out of range")
            dst = c.server.dbs[idx]
            j += 1
        else:
            raise SYNTAX
        j += 1
    if c.server.config["cluster-enabled"] and (src.id != 0 or dst.id != 0):
        raise RedisError("ERR Copying to another database is not allowed in cluster mode")
    key, newkey = argv[1], argv[2]
    if src is dst and key == newkey:
        raise SAME_OBJECT
    v = src.lookup_read(key)
    if v is None:
        return ZERO
    expire = src.expires.get(key)
    if dst.lookup_write(newkey) is not None:
        if not replace:
            return ZERO
        dst.server_delete(newkey)
    v = _dup(v)
    dst.add(newkey, v)
    if expire is not None:
        dst.expires[newkey] = expire
    hfe.track_value(dst, newkey, v)
    dst.signal(newkey)
    notify.notify(_GENERIC, b"copy_to", newkey, dst.id)
    c.server.dirty += 1
    return ONE


@command("keys")
def keys(c, argv):
    db = c.db
    match = compile_glob(argv[1])
    now = mstime()
    expires = db.expires
    out = []
    if argv[1] == b"*":
        if expires:
            out = [k for k in db.d if not (k in expires and expires[k] <= now)]
        else:
            out = list(db.d)
    else:
        # filter() over the keys: no Python call per key when the matcher
        # is a compiled regex (util.compile_glob)
        out = list(filter(match, db.d))
        if expires and out:
            out = [k for k in out if not (k in expires and expires[k] <= now)]
    return bulk_array(out)


def parse_scan_cursor(b) -> int:
    if not b or b[:1].isspace():
        raise RedisError("ERR invalid cursor")
    try:
        v = int(b)
    except ValueError:
        raise RedisError("ERR invalid cursor")
    if b"_" in b or b[:1] == b"+":
        raise RedisError("ERR invalid cursor")
    if v < 0:
        # strtoul wraps negative numbers
        v &= 2**64 - 1
    if v > 2**64 - 1:
        raise RedisError("ERR invalid cursor")
    return v


def parse_scan_options(argv, start, allow_type):
    count = 10
    pattern = None
    typ = None
    i = start
    n = len(argv)
    while i < n:
        j = n - i
        opt = argv[i].lower()
        if opt == b"count" and j >= 2:
            count = parse_int(argv[i + 1])
            if count < 1:
                raise SYNTAX
            i += 2
        elif opt == b"match" and j >= 2:
            pattern = argv[i + 1]
            if pattern == b"*":
                pattern = None
            i += 2
        elif opt == b"type" and allow_type and j >= 2:
            typ = argv[i + 1].lower()
            i += 2
        elif opt == b"novalues":
            raise RedisError("ERR NOVALUES option can only be used in HSCAN")   # (HSCAN takes it out)
        else:
            raise SYNTAX
    return count, pattern, typ


def length_reply(c, key, cls):
    """LLEN, HLEN, SCARD, STRLEN: the length of key's value (of class cls),
    0 when there is none."""
    v = c.db.lookup_read_typed(key, cls)
    return ZERO if v is None else integer(len(v))


EMPTY_SCAN = b"*2\r\n$1\r\n0\r\n*0\r\n"


def scan_value(c, argv, cls, step, encode):
    """HSCAN, SSCAN, ZSCAN key cursor [MATCH pattern] [COUNT count]
    (scanGenericCommand over one value of class cls): ``step(v, cursor,
    count)`` -> (next cursor, members); ``encode(v, members)`` -> (number
    of reply elements, their encoding)."""
    cursor = parse_scan_cursor(argv[2])
    v = c.db.lookup_read_typed(argv[1], cls)
    if v is None:
        return EMPTY_SCAN
    count, pattern, _ = parse_scan_options(argv, 3, False)
    nxt, members = step(v, cursor, count)
    if pattern is not None:
        m = compile_glob(pattern)
        members = [x for x in members if m(x)]
    cur = b"%d" % nxt
    n, body = encode(v, members)
    return b"*2\r\n$%d\r\n%s\r\n*%d\r\n%s" % (len(cur), cur, n, body)


@command("scan")
def scan(c, argv):
    cursor = parse_scan_cursor(argv[1])
    count, pattern, typ = parse_scan_options(argv, 2, True)
    db = c.db
    nxt, keys = db.scan(cursor, count)
    if pattern is not None:
        m = compile_glob(pattern)
        keys = [k for k in keys if m(k)]
    if typ is not None:
        # Each key is looked up as a read (scanGenericCommand's TYPE filter:
        # an expired key is deleted whatever its type, hits and misses are
        # counted); an unknown type name matches nothing.  The names are
        # compared without case: a module type's name has capitals (MBbloom--).
        look = db.lookup_read_nonotify
        keys = [k for k in keys if (v := look(k)) is not None and type_name(v).lower() == typ]
    elif db.expires:
        expires = db.expires
        now = mstime()
        live = []
        for k in keys:
            w = expires.get(k)
            if w is not None and w <= now and db.expire_if_needed(k):
                continue
            live.append(k)
        keys = live
    cur = b"%d" % nxt
    return b"*2\r\n$%d\r\n%s\r\n%s" % (len(cur), cur, bulk_array(keys))


@command("randomkey")
def randomkey(c, argv):
    k = c.db.random_key()
    if k is None:
        return c.null
    return bulk(k)


@command("dbsize")
def dbsize(c, argv):
    return integer(len(c.db.d))


# -- expiry -------------------------------------------------------------------------

EXP_NX, EXP_XX, EXP_GT, EXP_LT = 1, 2, 4, 8


def _expire_generic(c, argv, basetime_ms, seconds):
    key = argv[1]
    flag = 0
    for opt in argv[3:]:
        o = opt.lower()
        if o == b"nx":
            flag |= EXP_NX
        elif o == b"xx":
            flag |= EXP_XX
        elif o == b"gt":
            flag |= EXP_GT
        elif o == b"lt":
            flag |= EXP_LT
        else:
            raise RedisError("ERR Unsupported option %s" % opt.decode("utf-8", "replace"))
    if flag & EXP_NX and flag & (EXP_XX | EXP_GT | EXP_LT):
        raise RedisError("ERR NX and XX, GT or LT options at the same time are not compatible")
    if flag & EXP_GT and flag & EXP_LT:
        raise RedisError("ERR GT and LT options at the same time are not compatible")
    when = parse_int(argv[2])
    name = c.last_cmd.fullname if c.last_cmd is not None else "expire"
    if seconds:
        if when > LLONG_MAX // 1000 or when < -(LLONG_MAX // 1000):
            raise RedisError("ERR invalid expire time in '%s' command" % name)
        when *= 1000
    if when > LLONG_MAX - basetime_ms:
        raise RedisError("ERR invalid expire time in '%s' command" % name)
    when += basetime_ms
    db = c.db
    if db.lookup_write(key) is None:
        return ZERO
    if flag:
        cur = db.expires.get(key, -1)
        if flag & EXP_NX and cur != -1:
            return ZERO
        if flag & EXP_XX and cur == -1:
            return ZERO
        if flag & EXP_GT and (when <= cur or cur == -1):
            return ZERO
        if flag & EXP_LT and cur != -1 and when >= cur:
            return ZERO
    srv = c.server
    if when <= mstime() and not srv.loading and not srv.is_replica:
        db.delete(key, srv.config["lazyfree-lazy-expire"])
        srv.dirty += 1
        notify.notify(_GENERIC, b"del", key, db.id)
        return ONE
    db.expires[key] = when
    db.signal(key)
    notify.notify(_GENERIC, b"expire", key, db.id)
    srv.dirty += 1
    return ONE


def propagate_expire(srv, db, argv):
    """EXPIRE/PEXPIRE/EXPIREAT replicate as PEXPIREAT <absolute ms>, or as
    the deletion when the time was in the past."""
    key = argv[1]
    if key not in db.d:
        return [b"UNLINK" if srv.config["lazyfree-lazy-expire"] else b"DEL", key]
    when = db.expires.get(key)
    if when is None:
        return list(argv)
    return [b"PEXPIREAT", key, b"%d" % when] + list(argv[3:])


def propagate_pexpireat(srv, db, argv):
    key = argv[1]
    if key not in db.d:
        return [b"UNLINK" if srv.config["lazyfree-lazy-expire"] else b"DEL", key]
    return list(argv)


@command("expire", propagate=propagate_expire)
def expire(c, argv):
    return _expire_generic(c, argv, mstime(), True)


@command("pexpire", propagate=propagate_expire)
def pexpire(c, argv):
    return _expire_generic(c, argv, mstime(), False)


@command("expireat", propagate=propagate_expire)
def expireat(c, argv):
    return _expire_generic(c, argv, 0, True)


@command("pexpireat", propagate=propagate_pexpireat)
def pexpireat(c, argv):
    return _expire_generic(c, argv, 0, False)


def _ttl(c, argv, ms, absolute):
    db = c.db
    key = argv[1]
    if db.lookup_read(key) is None:
        return MINUS_TWO
    when = db.expires.get(key)
    if when is None:
        return MINUS_ONE
    if absolute:
        return integer(when if ms else when // 1000)
    left = when - mstime()
    if left < 0:
        left = 0
    return integer(left if ms else (left + 500) // 1000)


@command("ttl", flags=("no_touch",))
def ttl(c, argv):
    return _ttl(c, argv, False, False)


@command("pttl", flags=("no_touch",))
def pttl(c, argv):
    return _ttl(c, argv, True, False)


@command("expiretime", flags=("no_touch",))
def expiretime(c, argv):
    return _ttl(c, argv, False, True)


@command("pexpiretime", flags=("no_touch",))
def pexpiretime(c, argv):
    return _ttl(c, argv, True, True)


@command("persist")
def persist(c, argv):
    db = c.db
    key = argv[1]
    if db.lookup_write(key) is None:
        return ZERO
    if db.persist(key):
        db.signal(key)
        notify.notify(_GENERIC, b"persist", key, db.id)
        c.server.dirty += 1
        return ONE
    return ZERO


# -- OBJECT -------------------------------------------------------------------------

def string_encoding(v) -> bytes:
    if v.__class__ is bytearray:
        # Modified in place (APPEND/SETRANGE/SETBIT): "raw" unless it holds a
        # small integer, which Redis would not re-encode either.
        return b"raw"
    if len(v) <= 20 and try_int(v) is not None:
        return b"int"
    return b"embstr" if len(v) <= 44 else b"raw"


ENCODINGS[bytes] = lambda v, cfg: string_encoding(v)
ENCODINGS[bytearray] = lambda v, cfg: b"raw"
ENCODINGS[EmbStr] = lambda v, cfg: b"embstr"


def object_encoding(v, cfg) -> bytes:
    fn = ENCODINGS.get(v.__class__)
    if fn is None:
        enc = getattr(v, "encoding", None)
        return enc(cfg) if callable(enc) else b"unknown"
    return fn(v, cfg)


@command("object|encoding", flags=("no_touch",))
def object_encoding_cmd(c, argv):
    v = c.db.lookup_nostats(argv[2])
    if v is None:
        return c.null
    return bulk(object_encoding(v, c.server.config))


SHARED_INTEGERS = 10000       # Redis's OBJ_SHARED_INTEGERS: 0 .. 9999
SHARED_REFCOUNT = 2147483647  # OBJ_SHARED_REFCOUNT


def refcount(v, cfg) -> int:
    """OBJECT REFCOUNT / DEBUG OBJECT's refcount.  Redis stores the integers
    0 .. 9999 as shared objects, except while maxmemory is set with an LRU,
    LFU or LRM policy (each key then has its own object, for its access time).
    Values are not shared objects here: the answer follows the configuration
    of the moment the value is asked for."""
    if (v.__class__ is bytes and len(v) <= 4 and try_int(v) is not None and 0 <= int(v) < SHARED_INTEGERS
            and not (cfg["maxmemory"] and cfg["maxmemory-policy"][-3:] in ("lru", "lfu", "lrm"))):
        return SHARED_REFCOUNT
    return 1


@command("object|refcount", flags=("no_touch",))
def object_refcount(c, argv):
    v = c.db.lookup_nostats(argv[2])
    if v is None:
        return c.null
    return integer(refcount(v, c.server.config))


@command("object|idletime", flags=("no_touch",))
def object_idletime(c, argv):
    v = c.db.lookup_nostats(argv[2])
    if v is None:
        return c.null
    if "lfu" in c.server.config["maxmemory-policy"]:
        raise RedisError("ERR An LFU maxmemory policy is selected, idle time not tracked. "
                         "Please note that when switching between policies at runtime LRU and LFU "
                         "data will take some time to adjust.")
    return integer(c.server.memory.idle_seconds(c.db, argv[2]))


@command("object|freq", flags=("no_touch",))
def object_freq(c, argv):
    v = c.db.lookup_nostats(argv[2])
    if v is None:
        return c.null
    if "lfu" not in c.server.config["maxmemory-policy"]:
        raise RedisError("ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
                         "Please note that when switching between policies at runtime LRU and LFU "
                         "data will take some time to adjust.")
    return integer(c.server.memory.freq(c.db, argv[2]))


@command("object|help")
def object_help(c, argv):
    return help_reply(b"OBJECT", b"""\
ENCODING <key>
    Return the kind of internal representation used in order to store the value
    associated with a <key>.
FREQ <key>
    Return the access frequency index of the <key>. The returned integer is
    proportional to the logarithm of the recent access frequency of the key.
IDLETIME <key>
    Return the idle time of the <key>, that is the approximated number of
    seconds elapsed since the last access to the key.
REFCOUNT <key>
    Return the number of references of the value associated with the specified
    <key>.
""")


_ = (LLONG_MIN,)
