"""String commands (t_string.c): GET SET and friends, counters, ranges."""

from __future__ import annotations

from fractions import Fraction

from xxhash import xxh3_64_intdigest

from ..cmdtable.registry import command
from ..errors import NOT_INT, SYNTAX, RedisError
from ..keyspace import db as _dbm
from ..keyspace import notify
from ..keyspace.db import WRONGTYPE_ERR, EmbStr, mstime, stats
from ..protocol.resp import NULL3, NULL_BULK, OK, ONE, ZERO, bulk_array, integer
from ..util import (LLONG_MAX, LLONG_MIN, format_ld, ld_add, ld_finite, parse_int, parse_ld, string_range,
                    try_int)

_STRING = notify.STRING
_GENERIC = notify.GENERIC
_NEW = notify.NEW

NX, XX, GET, KEEPTTL, EX, PX, EXAT, PXAT, PERSIST = 1, 2, 4, 8, 16, 32, 64, 128, 256
# SET's compare-and-set conditions (Redis 8.4): on the value or its digest
IFEQ, IFNE, IFDEQ, IFDNE = 512, 1024, 2048, 4096
_EXPIRE_OPTS = {b"EX": EX, b"PX": PX, b"EXAT": EXAT, b"PXAT": PXAT}
_TTL_OPTS = KEEPTTL | PERSIST | EX | PX | EXAT | PXAT
_CONDITIONS = {b"IFEQ": IFEQ, b"IFNE": IFNE, b"IFDEQ": IFDEQ, b"IFDNE": IFDNE}
_COND_OPTS = NX | XX | IFEQ | IFNE | IFDEQ | IFDNE
DIGEST_ERR = RedisError("ERR must be exactly 16 hexadecimal characters")
_HEX = frozenset(b"0123456789abcdefABCDEF")


def digest_of(v) -> bytes:
    """DIGEST's text of a string value: its XXH3-64 as 16 lowercase hex digits."""
    return b"%016x" % xxh3_64_intdigest(bytes(v))


def check_digest(d: bytes) -> bytes:
    """An IFDEQ/IFDNE argument, lowercased (the comparison ignores case)."""
    if len(d) != 16 or not _HEX.issuperset(d):
        raise DIGEST_ERR
    return d.lower()


def condition_met(cond: int, cmp: bytes, v) -> bool:
    """Whether a key's string value v (None: no key) passes IFEQ/IFNE/IFDEQ/IFDNE cmp."""
    if v is None:
        return cond in (IFNE, IFDNE)
    if cond == IFEQ:
        return v == cmp
    if cond == IFNE:
        return v != cmp
    same = digest_of(v) == cmp
    return same if cond == IFDEQ else not same


def _opt_error():
    return SYNTAX


def parse_ext_args(argv, start, is_set, cond=None):
    """SET/GETEX options, with Redis's conflict rules.  Returns (flags,
    expire_arg); SET's IFEQ/IFNE/IFDEQ/IFDNE argument goes to cond[0]."""
    flags = 0
    expire = None
    j = start
    n = len(argv)
    while j < n:
        opt = argv[j].upper()
        nxt = argv[j + 1] if j + 1 < n else None
        if opt == b"NX" and not flags & _COND_OPTS & ~NX and is_set:
            flags |= NX
        elif opt == b"XX" and not flags & _COND_OPTS & ~XX and is_set:
            flags |= XX
        elif opt in _CONDITIONS and is_set and cond is not None and not flags & _COND_OPTS and nxt is not None:
            flags |= _CONDITIONS[opt]
            cond.append(nxt)
            j += 1
        elif opt == b"GET" and is_set:
            flags |= GET
        elif opt == b"KEEPTTL" and not flags & (PERSIST | EX | EXAT | PX | PXAT) and is_set:
            flags |= KEEPTTL
        elif opt == b"PERSIST" and not is_set and not flags & (EX | EXAT | PX | PXAT | KEEPTTL):
            flags |= PERSIST
        elif opt in _EXPIRE_OPTS and not flags & (_TTL_OPTS & ~_EXPIRE_OPTS[opt]) and nxt is not None:
            # EX, PX, EXAT, PXAT: exclusive with each other, KEEPTTL and PERSIST
            flags |= _EXPIRE_OPTS[opt]
            expire = nxt
            j += 1
        else:
            raise SYNTAX
        j += 1
    return flags, expire


def expire_ms(expire, flags, cmdname: str) -> int:
    """Absolute expiry in ms from an EX/PX/EXAT/PXAT argument (Redis's
    getExpireMillisecondsOrReply)."""
    ms = parse_int(expire)
    seconds = flags & (EX | EXAT)
    if ms <= 0 or (seconds and ms > LLONG_MAX // 1000):
        raise RedisError("ERR invalid expire time in '%s' command" % cmdname)
    if seconds:
        ms *= 1000
    if flags & (EX | PX):
        ms += mstime()
    if ms <= 0 or ms > LLONG_MAX:
        raise RedisError("ERR invalid expire time in '%s' command" % cmdname)
    return ms


# -- propagation: the form each command replicates as (see propagate.py) ------------------

_TTL_SET_OPTS = (b"ex", b"px", b"exat", b"pxat")
_COND_ARGS = (b"ifeq", b"ifne", b"ifdeq", b"ifdne")


def _is_get(a) -> bool:
    return len(a) == 3 and a.lower() == b"get"


def propagate_set(srv, db, argv):
    """A TTL given as EX/PX/EXAT becomes SET key value PXAT <ms>; PXAT is
    kept as sent, with the other options (Redis 7.2+: no rewrite then);
    without a TTL GET is dropped; a condition that held (IFEQ ... IFDNE)
    is dropped."""
    expire = False
    pxat = False
    get = False
    i = 3
    n = len(argv)
    while i < n:
        a = argv[i].lower()
        if a in _TTL_SET_OPTS and i + 1 < n:
            expire = True
            pxat = a == b"pxat"
            i += 2
            continue
        if a in _COND_ARGS and i + 1 < n:
            argv = argv[:i] + argv[i + 2:]
            n -= 2
            continue
        if a == b"get":
            get = True
        i += 1
    if expire:
        when = db.expires.get(argv[1])
        if when is not None and not pxat:
            return [b"SET", argv[1], argv[2], b"PXAT", b"%d" % when]
        return list(argv)
    if get:
        return argv[:3] + [a for a in argv[3:] if not _is_get(a)]
    return list(argv)


def propagate_setex(srv, db, argv):
    """SETEX/PSETEX key ttl value -> SET key value PXAT <ms>."""
    when = db.expires.get(argv[1])
    if when is not None:
        return [b"SET", argv[1], argv[3], b"PXAT", b"%d" % when]
    return list(argv)


def propagate_getset(srv, db, argv):
    return [b"SET"] + list(argv[1:])


def propagate_getex(srv, db, argv):
    """GETEX's effect: DEL (a time in the past), PERSIST or PEXPIREAT."""
    key = argv[1]
    if key not in db.d:
        return [b"UNLINK" if srv.config["lazyfree-lazy-expire"] else b"DEL", key]
    opts = [a.lower() for a in argv[2:]]
    if b"persist" in opts:
        return [b"PERSIST", key]
    when = db.expires.get(key)
    if when is not None and opts:
        return [b"PEXPIREAT", key, b"%d" % when]
    return None


def propagate_getdel(srv, db, argv):
    return [b"UNLINK" if srv.config["lazyfree-lazy-user-del"] else b"DEL", argv[1]]


def propagate_incrbyfloat(srv, db, argv):
    """The result, not the float arithmetic (KEEPTTL: the TTL stays)."""
    v = db.d.get(argv[1])
    if v is not None and isinstance(v, (bytes, bytearray)):
        return [b"SET", argv[1], bytes(v), b"KEEPTTL"]
    return list(argv)


@command("get")
def get(c, argv):
    # db.lookup_read_typed(key, bytes) written out: GET is the hottest
    # command, and the call costs ~3% of its instructions (bench/callgrind.py)
    db = c.db
    key = argv[1]
    v = db.d.get(key)
    if v is None or (db.expires and key in db.expires):
        v = db.lookup_read(key)
        if v is None:
            return NULL_BULK if c.resp == 2 else NULL3
    else:
        stats.keyspace_hits += 1
    if v.__class__ is not bytes and v.__class__ is not bytearray and v.__class__ is not EmbStr:
        raise WRONGTYPE_ERR
    return b"$%d\r\n%s\r\n" % (len(v), v)


@command("set", propagate=propagate_set)
def set_(c, argv):
    db = c.db
    key = argv[1]
    if len(argv) == 3 and not notify.flags:
        # Plain SET: the hot path.
        if _dbm.lazy_server_del:
            db.lazy_overwrite(key)
        if db.blocking_keys and key in db.blocking_keys:
            db.overwrite_signal(key)
        db.d[key] = argv[2]
        if db.expires:
            db.expires.pop(key, None)
        if db.watched_keys and key in db.watched_keys:
            db.signal(key)
        c.server.dirty += 1
        return OK
    cond = []
    flags, expire = parse_ext_args(argv, 3, True, cond)
    if flags & (IFDEQ | IFDNE):
        cond[0] = check_digest(cond[0])
    when = expire_ms(expire, flags, "set") if expire is not None else None
    old = None
    if flags & (GET | IFEQ | IFNE | IFDEQ | IFDNE):
        old = db.lookup_read_typed(key, bytes)
        found = old is not None
    else:
        found = db.lookup_write(key) is not None
    if ((flags & NX and found) or (flags & XX and not found)
            or (cond and not condition_met(flags & (IFEQ | IFNE | IFDEQ | IFDNE), cond[0], old))):
        if flags & GET:
            return b"$%d\r\n%s\r\n" % (len(old), old) if old is not None else c.null
        return c.null
    _set_generic(c, key, argv[2], when, keepttl=bool(flags & KEEPTTL))
    if flags & GET:
        return b"$%d\r\n%s\r\n" % (len(old), old) if old is not None else c.null
    return OK


def _set_generic(c, key, value, when=None, nx=False, keepttl=False):
    """setGenericCommand's write: key = value (unless nx and key exists),
    then the TTL ``when`` (ms) if given.  True when it was set."""
    db = c.db
    if nx and db.lookup_write(key) is not None:
        return False
    db.set_key(key, value, keepttl)
    c.server.dirty += 1
    if notify.flags:
        notify.notify(_STRING, b"set", key, db.id)
    if when is not None:
        db.expires[key] = when
        if notify.flags:
            notify.notify(_GENERIC, b"expire", key, db.id)
    return True


@command("setnx")
def setnx(c, argv):
    return ONE if _set_generic(c, argv[1], argv[2], nx=True) else ZERO


@command("setex", propagate=propagate_setex)
def setex(c, argv):
    when = expire_ms(argv[2], EX, "setex")
    _set_generic(c, argv[1], argv[3], when)
    return OK


@command("psetex", propagate=propagate_setex)
def psetex(c, argv):
    when = expire_ms(argv[2], PX, "psetex")
    _set_generic(c, argv[1], argv[3], when)
    return OK


@command("getex", propagate=propagate_getex)
def getex(c, argv):
    flags, expire = parse_ext_args(argv, 2, False)  # GETEX
    db = c.db
    key = argv[1]
    v = db.lookup_read_typed(key, bytes)
    if v is None:
        return c.null
    when = expire_ms(expire, flags, "getex") if expire is not None else None
    reply = b"$%d\r\n%s\r\n" % (len(v), v)
    if flags & (PXAT | EXAT) and when <= mstime():
        db.delete(key)
        c.server.dirty += 1
        notify.notify(_GENERIC, b"del", key, db.id)
    elif when is not None:
        db.expires[key] = when
        db.signal(key)
        c.server.dirty += 1
        notify.notify(_GENERIC, b"expire", key, db.id)
    elif flags & PERSIST:
        if db.persist(key):
            db.signal(key)
            c.server.dirty += 1
            notify.notify(_GENERIC, b"persist", key, db.id)
    return reply


@command("getdel", propagate=propagate_getdel)
def getdel(c, argv):
    db = c.db
    v = db.lookup_read_typed(argv[1], bytes)
    if v is None:
        return c.null
    db.delete(argv[1])
    c.server.dirty += 1
    notify.notify(_GENERIC, b"del", argv[1], db.id)
    return b"$%d\r\n%s\r\n" % (len(v), v)


@command("getset", propagate=propagate_getset)
def getset(c, argv):
    db = c.db
    v = db.lookup_read_typed(argv[1], bytes)
    db.set_key(argv[1], argv[2])
    c.server.dirty += 1
    notify.notify(_STRING, b"set", argv[1], db.id)
    if v is None:
        return c.null
    return b"$%d\r\n%s\r\n" % (len(v), v)


@command("mget")
def mget(c, argv):
    lookup = c.db.lookup_read
    out = [b"*%d\r\n" % (len(argv) - 1)]
    ap = out.append
    null = c.null
    for key in argv[1:]:
        v = lookup(key)
        if v is None or (v.__class__ is not bytes and v.__class__ is not bytearray
                         and v.__class__ is not EmbStr):
            ap(null)
        else:
            ap(b"$%d\r\n%s\r\n" % (len(v), v))
    return b"".join(out)


@command("mset")
def mset(c, argv):
    n = len(argv)
    if n % 2 == 0:
        raise RedisError("ERR wrong number of arguments for 'mset' command")
    db = c.db
    d = db.d
    expires = db.expires
    wk = db.watched_keys
    nf = notify.flags
    for i in range(1, n, 2):
        key = argv[i]
        if nf:
            db.set_key(key, argv[i + 1])
            notify.notify(_STRING, b"set", key, db.id)
            continue
        if db.blocking_keys and key in db.blocking_keys:
            db.overwrite_signal(key)
        d[key] = argv[i + 1]
        if expires:
            expires.pop(key, None)
        if wk and key in wk:
            db.signal(key)
        if nf:
            notify.notify(_STRING, b"set", key, db.id)
    c.server.dirty += (n - 1) // 2
    return OK


@command("msetnx")
def msetnx(c, argv):
    if len(argv) % 2 == 0:
        raise RedisError("ERR wrong number of arguments for 'msetnx' command")
    db = c.db
    keys = argv[1::2]
    if any(db.lookup_write(key) is not None for key in keys):
        return ZERO
    for key, value in zip(keys, argv[2::2]):
        db.set_key(key, value)
        notify.notify(_STRING, b"set", key, db.id)
    c.server.dirty += len(keys)
    return ONE


# -- Redis 8.4: DIGEST, DELEX (compare-and-delete), MSETEX ---------------------------------

@command("digest")
def digest(c, argv):
    v = c.db.lookup_read_typed(argv[1], bytes)
    if v is None:
        return c.null
    return b"$16\r\n%s\r\n" % digest_of(v)


@command("delex", propagate=propagate_getdel)
def delex(c, argv):
    """DELEX key [IFEQ v | IFNE v | IFDEQ d | IFDNE d]: delete the key (of
    any type without a condition; a string's whose value or digest passes)."""
    n = len(argv)
    cond = 0
    if n > 2:
        cond = _CONDITIONS.get(argv[2].upper(), 0)
        if n != 4 or not cond:
            raise SYNTAX
        cmp = check_digest(argv[3]) if cond & (IFDEQ | IFDNE) else argv[3]
    db = c.db
    key = argv[1]
    if cond:
        v = db.lookup_write(key)
        if v is None:
            return ZERO
        if v.__class__ is not bytes and v.__class__ is not bytearray and v.__class__ is not EmbStr:
            raise WRONGTYPE_ERR
        if not condition_met(cond, cmp, v):
            return ZERO
    elif db.lookup_write(key) is None:
        return ZERO
    v = db.d.get(key)
    db.delete(key)
    lf = c.server.lazyfree
    if lf is not None and c.server.config["lazyfree-lazy-user-del"]:
        lf.free(v)
    notify.notify(_GENERIC, b"del", key, db.id)
    c.server.dirty += 1
    return ONE


_NUMKEYS_ERR = RedisError("ERR invalid numkeys value or out of range")


def propagate_msetex(srv, db, argv):
    """A relative TTL becomes PXAT <ms> (the keys' common expiry); NX/XX,
    which held, are dropped."""
    nk = int(argv[1])
    head = list(argv[:2 + 2 * nk])
    opts = [a.lower() for a in argv[2 + 2 * nk:]]
    if b"keepttl" in opts:
        return head + [b"KEEPTTL"]
    if any(o in _TTL_SET_OPTS for o in opts):
        when = db.expires.get(argv[2])
        if when is not None:
            return head + [b"PXAT", b"%d" % when]
    return head


@command("msetex", propagate=propagate_msetex)
def msetex(c, argv):
    """MSETEX numkeys key value [key value ...] [NX | XX] [EX s | PX ms |
    EXAT ts | PXAT ms-ts | KEEPTTL]: 1 when the keys were set, 0 when NX/XX
    did not hold for all of them."""
    try:
        nk = parse_int(argv[1])
    except RedisError:
        raise _NUMKEYS_ERR from None
    n = len(argv)
    if nk < 1 or nk > (n - 2) // 2:
        if nk < 1:
            raise _NUMKEYS_ERR
        raise SYNTAX
    flags, expire = parse_ext_args(argv, 2 + 2 * nk, True)
    if flags & GET:
        raise SYNTAX
    when = expire_ms(expire, flags, "msetex") if expire is not None else None
    db = c.db
    keys = argv[2:2 + 2 * nk:2]
    if flags & (NX | XX):
        want = not (flags & NX)
        for key in keys:
            if (db.lookup_write(key) is not None) != want:
                return ZERO
    keepttl = bool(flags & KEEPTTL)
    for i in range(nk):
        key = keys[i]
        db.set_key(key, argv[3 + 2 * i], keepttl)
        notify.notify(_STRING, b"set", key, db.id)
        if when is not None:
            db.expires[key] = when
            notify.notify(_GENERIC, b"expire", key, db.id)
    c.server.dirty += nk
    return ONE


_OVERFLOW = RedisError("ERR increment or decrement would overflow")


def _incr(c, key, delta):
    # db.lookup_write_typed(key, bytes) written out (INCR is a hot path)
    db = c.db
    d = db.d
    v = d.get(key)
    if v is not None and db.expires and key in db.expires:
        v = db.lookup_write(key)
    if v is None:
        n = delta
    else:
        if v.__class__ is not bytes and v.__class__ is not bytearray and v.__class__ is not EmbStr:
            raise WRONGTYPE_ERR
        try:
            n = int(v)
        except ValueError:
            raise NOT_INT from None
        if n > LLONG_MAX or n < LLONG_MIN or b"%d" % n != v:
            raise NOT_INT
        n += delta
        if n > LLONG_MAX or n < LLONG_MIN:
            raise _OVERFLOW
    new = b"%d" % n
    d[key] = new
    if v is None and notify.flags & _NEW:
        notify.notify(_NEW, b"new", key, db.id)
    if db.watched_keys and key in db.watched_keys:
        db.signal(key)
    c.server.dirty += 1
    if notify.flags:
        notify.notify(_STRING, b"incrby", key, db.id)
    if 0 <= n <= 10000:
        return integer(n)
    return b":%s\r\n" % new


@command("incr")
def incr(c, argv):
    return _incr(c, argv[1], 1)


@command("decr")
def decr(c, argv):
    return _incr(c, argv[1], -1)


@command("incrby")
def incrby(c, argv):
    return _incr(c, argv[1], parse_int(argv[2]))


@command("decrby")
def decrby(c, argv):
    d = parse_int(argv[2])
    if d == LLONG_MIN:
        raise RedisError("ERR decrement would overflow")
    return _incr(c, argv[1], -d)


@command("incrbyfloat", propagate=propagate_incrbyfloat)
def incrbyfloat(c, argv):
    db = c.db
    key = argv[1]
    v = db.lookup_write_typed(key, bytes)
    if v is not None:
        cur = parse_ld(v)
    else:
        cur = 0
    incr = parse_ld(argv[2])
    new = ld_add(cur, incr)
    if not ld_finite(new):
        raise RedisError("ERR increment would produce NaN or Infinity")
    b = format_ld(new)
    if len(b) <= 20 and try_int(b) is not None:
        b = EmbStr(b)      # createStringObjectFromLongDouble: embstr, never int
    db.d[key] = b
    if v is None and notify.flags & _NEW:
        notify.notify(_NEW, b"new", key, db.id)
    db.signal(key)
    c.server.dirty += 1
    notify.notify(_STRING, b"incrbyfloat", key, db.id)
    return b"$%d\r\n%s\r\n" % (len(b), b)


# -- INCREX (Redis 8.8) -------------------------------------------------------------------

_LDBL_MAX = (Fraction(2) - Fraction(1, 1 << 63)) * (Fraction(2) ** 16383)
_INCREX_EXPIRE = {b"EX": EX, b"PX": PX, b"EXAT": EXAT, b"PXAT": PXAT}


def propagate_increx(srv, db, argv):
    """The result: SET key value, with the key's expiry as PXAT (none: none)."""
    key = argv[1]
    v = db.d.get(key)
    if v is None:
        return list(argv)
    when = db.expires.get(key)
    out = [b"SET", key, bytes(v)]
    return out + [b"PXAT", b"%d" % when] if when is not None else out


@command("increx", propagate=propagate_increx)
def increx(c, argv):
    """INCREX key [BYFLOAT f | BYINT n] [LBOUND l] [UBOUND u] [SATURATE]
    [EX s | PX ms | EXAT ts | PXAT ms-ts | PERSIST] [ENX]: [new value,
    increment applied]; a result outside the bounds (or the type's range)
    is refused ([current, 0], nothing changed) or, with SATURATE, capped."""
    by = lb = ub = expire = None
    flt = saturate = persist = enx = False
    ttl_flag = 0
    j = 2
    n = len(argv)
    while j < n:
        opt = argv[j].upper()
        nxt = argv[j + 1] if j + 1 < n else None
        if opt in (b"BYINT", b"BYFLOAT") and by is None and nxt is not None:
            flt = opt == b"BYFLOAT"
            by = nxt
            j += 1
        elif opt == b"LBOUND" and lb is None and nxt is not None:
            lb = nxt
            j += 1
        elif opt == b"UBOUND" and ub is None and nxt is not None:
            ub = nxt
            j += 1
        elif opt == b"SATURATE" and not saturate:
            saturate = True
        elif opt in _INCREX_EXPIRE and not ttl_flag and not persist and nxt is not None:
            ttl_flag = _INCREX_EXPIRE[opt]
            expire = nxt
            j += 1
        elif opt == b"PERSIST" and not ttl_flag and not persist:
            persist = True
        elif opt == b"ENX" and not enx:
            enx = True
        else:
            raise SYNTAX
        j += 1
    if enx and not ttl_flag:
        raise SYNTAX
    num = parse_ld if flt else parse_int
    incr = num(by) if by is not None else 1
    lo = num(lb) if lb is not None else None
    hi = num(ub) if ub is not None else None
    when = expire_ms(expire, ttl_flag, "increx") if ttl_flag else None
    db = c.db
    key = argv[1]
    v = db.lookup_write_typed(key, bytes)
    if flt:
        cur = parse_ld(v) if v is not None else Fraction(0)
        new = ld_add(cur, incr)
        if new != new:
            raise RedisError("ERR increment would produce NaN or Infinity")
        top = hi if hi is not None else _LDBL_MAX
        bottom = lo if lo is not None else -_LDBL_MAX
    else:
        if v is None:
            cur = 0
        else:
            cur = try_int(v)
            if cur is None:
                raise NOT_INT
        new = cur + incr
        top = hi if hi is not None else LLONG_MAX
        bottom = lo if lo is not None else LLONG_MIN
    if new > top or new < bottom:
        if not saturate:
            return _increx_reply(c, flt, cur, Fraction(0) if flt else 0)
        new = top if new > top else bottom
    applied = ld_add(new, -cur) if flt else new - cur
    if flt:
        b = format_ld(new)
        if len(b) <= 20 and try_int(b) is not None:
            b = EmbStr(b)
    else:
        b = b"%d" % new
    # the value changes in place, as INCR's (dbReplaceValue: no "overwritten")
    db.d[key] = b
    if v is None and notify.flags & _NEW:
        notify.notify(_NEW, b"new", key, db.id)
    db.signal(key)
    c.server.dirty += 1
    notify.notify(_STRING, b"incrbyfloat" if flt else b"incrby", key, db.id)
    if when is not None and not (enx and key in db.expires):
        db.expires[key] = when
        notify.notify(_GENERIC, b"expire", key, db.id)
    elif persist and db.expires.pop(key, None) is not None:
        notify.notify(_GENERIC, b"persist", key, db.id)
    return _increx_reply(c, flt, new, applied)


def _increx_reply(c, flt, value, applied):
    if not flt:
        return b"*2\r\n:%d\r\n:%d\r\n" % (value, applied)
    a, b = format_ld(value), format_ld(applied)
    if c.resp > 2:
        return b"*2\r\n,%s\r\n,%s\r\n" % (a, b)
    return b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(a), a, len(b), b)


def check_string_length(c, size: int, append: int):
    if size + append > c.server.proto_max_bulk_len:
        raise RedisError("ERR string exceeds maximum allowed size (proto-max-bulk-len)")


@command("append")
def append(c, argv):
    db = c.db
    key = argv[1]
    v = db.lookup_write_typed(key, bytes)
    if v is None:
        db.add(key, argv[2])
        total = len(argv[2])
    else:
        check_string_length(c, len(v), len(argv[2]))
        if v.__class__ is bytearray:
            v += argv[2]
        else:
            v = bytearray(v)
            v += argv[2]
            db.d[key] = v
        total = len(v)
        db.signal(key)
    c.server.dirty += 1
    notify.notify(_STRING, b"append", key, db.id)
    return integer(total)


@command("strlen")
def strlen(c, argv):
    v = c.db.lookup_read_typed(argv[1], bytes)
    return ZERO if v is None else integer(len(v))


@command("setrange")
def setrange(c, argv):
    db = c.db
    key = argv[1]
    offset = parse_int(argv[2])
    value = argv[3]
    if offset < 0:
        raise RedisError("ERR offset is out of range")
    v = db.lookup_write_typed(key, bytes)
    if v is None:
        if not value:
            return ZERO
        check_string_length(c, offset, len(value))
        v = bytearray(offset + len(value))
        v[offset:] = value
        db.add(key, v)
    else:
        if not value:
            return integer(len(v))
        check_string_length(c, offset, len(value))
        if v.__class__ is not bytearray:
            v = bytearray(v)
            db.d[key] = v
        if len(v) < offset + len(value):
            v.extend(bytes(offset + len(value) - len(v)))
        v[offset:offset + len(value)] = value
        db.signal(key)
    c.server.dirty += 1
    notify.notify(_STRING, b"setrange", key, db.id)
    return integer(len(v))


@command("substr")       # an alias, as in Redis's command table
@command("getrange")
def getrange(c, argv):
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    v = c.db.lookup_read_typed(argv[1], bytes)
    if v is None:
        return b"$0\r\n\r\n"
    n = len(v)
    if start < 0 and end < 0 and start > end:
        return b"$0\r\n\r\n"
    start, end = string_range(n, start, end)
    if start > end or n == 0:
        return b"$0\r\n\r\n"
    s = v[start:end + 1]
    return b"$%d\r\n%s\r\n" % (len(s), s)


_ = bulk_array
