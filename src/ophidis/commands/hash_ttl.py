"""Hash field expiration commands (t_hash.c, Redis 7.4 and 8.0).

HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT, HPERSIST, HTTL, HPTTL,
HEXPIRETIME, HPEXPIRETIME (7.4); HGETEX, HSETEX, HGETDEL (8.0).  The TTLs
live in ``HashValue.ttl`` (keyspace/hfe.py has the rules: lazy and active
expiry, the listpackex order).

Propagation as Redis: the expire commands go as HPEXPIREAT with the absolute
time in milliseconds and only the fields whose TTL was set; a field deleted
because its time is already past goes as HDEL; a command that set nothing
does not propagate.
"""

from __future__ import annotations

from ..cmdtable.registry import command
from ..errors import SYNTAX, RedisError
from ..keyspace import hfe, notify
from ..replication.propagate import propagating, rewrite_argv
from ..types.containers import HashValue, aux_added
from ..util import try_int

_GENERIC = notify.GENERIC

_NO_FIELDS = RedisError("ERR Mandatory argument FIELDS is missing or not at the right position")
_NUMFIELDS_MISMATCH = RedisError("ERR The `numfields` parameter must match the number of arguments")
_NUMFIELDS_POSITIVE = RedisError("ERR Number of fields must be a positive integer")
_NUMFIELDS_HEXPIRE = RedisError("ERR Parameter `numFields` should be greater than 0")
_NEGATIVE = RedisError("ERR invalid expire time, must be >= 0")
_NOT_INT = RedisError("ERR value is not an integer or out of range")
_ONE_OF = {
    b"persist": RedisError("ERR Only one of EX, PX, EXAT, PXAT or PERSIST arguments can be specified"),
    b"keepttl": RedisError("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified"),
}
_ONE_COND = RedisError("ERR Only one of FXX or FNX arguments can be specified")

_CONDITIONS = {b"nx": 1, b"xx": 2, b"gt": 3, b"lt": 4}
_NX, _XX, _GT, _LT = 1, 2, 3, 4


def _bad_time(name):
    return RedisError("ERR invalid expire time in '%s' command" % name)


def _count(argv, at, per, err):
    """numfields at argv[at]: 1..LONG_MAX (else ``err``), matching the
    arguments after it, ``per`` of them each."""
    n = try_int(argv[at])
    if n is None or n < 1:
        raise err
    if n * per != len(argv) - at - 1:
        raise _NUMFIELDS_MISMATCH
    return n


def _numfields(argv, at, err):
    """FIELDS at argv[at - 1], numfields at argv[at] (one argument a field)."""
    if argv[at - 1].lower() != b"fields":
        raise _NO_FIELDS
    return _count(argv, at, 1, err)


def _int_array(codes):
    return b"*%d\r\n" % len(codes) + b"".join([b":%d\r\n" % x for x in codes])


def _abs_time(name, arg, unit_ms, base):
    """An expire argument as an absolute unix time in ms (Redis's checks:
    an integer, not negative, not past HFE_MAX_ABS_TIME_MSEC)."""
    t = try_int(arg)
    if t is None:
        raise _NOT_INT
    if t < 0:
        raise _NEGATIVE
    if unit_ms == 1000:
        if t > hfe.MAX_ABS_MS // 1000:
            raise _bad_time(name)
        t *= 1000
    if t > hfe.MAX_ABS_MS - base:
        raise _bad_time(name)
    return t + base


def _already_expired(srv, when, now):
    """checkAlreadyExpired: a time in the past (``now``: the command's
    time) deletes the field, except on a replica (its master's HDEL does)
    or while loading."""
    return when <= now and not srv.loading and not srv.is_replica


def _expire_generic(c, argv, name, unit_ms, relative):
    db = c.db
    key = argv[1]
    h = db.lookup_write_typed(key, HashValue)
    now = hfe.now_ms()
    when = _abs_time(name, argv[2], unit_ms, now if relative else 0)
    cond = _CONDITIONS.get(argv[3].lower(), 0)
    at = 5 if cond else 4
    n = _numfields(argv, at, _NUMFIELDS_HEXPIRE)
    fields = argv[at + 1:]
    if h is None:
        return _int_array([-2] * n)
    srv = c.server
    past = _already_expired(srv, when, now)
    codes = []
    updated = []
    deleted = []
    t = h.ttl
    for f in fields:
        if f not in h:
            codes.append(-2)
            continue
        prev = t.get(f) if t is not None else None
        if prev is None:
            if cond == _XX or cond == _GT:
                codes.append(0)
                continue
        elif cond == _NX or (cond == _GT and prev >= when) or (cond == _LT and prev <= when):
            codes.append(0)
            continue
        if past:
            hfe.delete_expired_field(srv, db, key, h, f)
            t = h.ttl
            deleted.append(f)
            codes.append(2)
            continue
        hfe.set_ttl(h, f, when)
        t = h.ttl
        updated.append(f)
        codes.append(1)
    if updated or deleted:
        srv.dirty += len(updated) + len(deleted)
        db.signal(key)
        if deleted and not h:
            db.delete(key)
            hfe.hash_event(b"hdel", key, db.id, deleted)
            notify.notify(_GENERIC, b"del", key, db.id)
        elif deleted:
            hfe.hash_event(b"hdel", key, db.id, deleted)
        else:
            hfe.hash_event(b"hexpire", key, db.id, updated)
            if updated:
                hfe.note(db, key, when)
    if propagating(srv):
        if updated:
            out = [b"HPEXPIREAT", key, b"%d" % when]
            if cond:
                out.append(argv[3])
            out += [b"FIELDS", b"%d" % len(updated)] + updated
            rewrite_argv(c, out)
        else:
            rewrite_argv(c, [])     # nothing set: the command does not propagate
    return _int_array(codes)


@command("hexpire")
def hexpire(c, argv):
    return _expire_generic(c, argv, "hexpire", 1000, True)


@command("hpexpire")
def hpexpire(c, argv):
    return _expire_generic(c, argv, "hpexpire", 1, True)


@command("hexpireat")
def hexpireat(c, argv):
    return _expire_generic(c, argv, "hexpireat", 1000, False)


@command("hpexpireat")
def hpexpireat(c, argv):
    return _expire_generic(c, argv, "hpexpireat", 1, False)


def _ttl_generic(c, argv, seconds, relative):
    h = c.db.lookup_read_typed(argv[1], HashValue)
    n = _numfields(argv, 3, _NUMFIELDS_POSITIVE)
    if h is None:
        return _int_array([-2] * n)
    now = hfe.now_ms()
    base = now if relative else 0
    t = h.ttl or {}
    codes = []
    for f in argv[4:]:
        if f not in h:
            codes.append(-2)
            continue
        w = t.get(f)
        if w is None:
            codes.append(-1)
        elif w <= now:
            codes.append(-2)
        elif seconds:
            codes.append((w + 999 - base) // 1000)
        else:
            codes.append(w - base)
    return _int_array(codes)


@command("httl")
def httl(c, argv):
    return _ttl_generic(c, argv, True, True)


@command("hpttl")
def hpttl(c, argv):
    return _ttl_generic(c, argv, False, True)


@command("hexpiretime")
def hexpiretime(c, argv):
    return _ttl_generic(c, argv, True, False)


@command("hpexpiretime")
def hpexpiretime(c, argv):
    return _ttl_generic(c, argv, False, False)


@command("hpersist")
def hpersist(c, argv):
    db = c.db
    key = argv[1]
    h = db.lookup_write_typed(key, HashValue)
    n = _numfields(argv, 3, _NUMFIELDS_POSITIVE)
    if h is None:
        return _int_array([-2] * n)
    now = hfe.now_ms()
    t = h.ttl
    codes = []
    changed = []
    for f in argv[4:]:
        if f not in h:
            codes.append(-2)
            continue
        w = t.get(f) if t is not None else None
        if w is None:
            codes.append(-1)
        elif w < now:
            codes.append(-2)
        else:
            hfe.persist(h, f)
            codes.append(1)
            changed.append(f)
    if changed:
        hfe.hash_event(b"hpersist", key, db.id, changed)
        db.signal(key)
        c.server.dirty += 1
    return _int_array(codes)


# -- 8.0: HGETEX, HSETEX, HGETDEL ---------------------------------------------------------

_EXPIRE_UNITS = {b"ex": (1000, True), b"px": (1, True), b"exat": (1000, False), b"pxat": (1, False)}


def _bulk_or_null(c, v):
    return c.null if v is None else b"$%d\r\n%s\r\n" % (len(v), v)


def _options(argv, name, flag, now, per, conds):
    """The arguments of HGETEX (``flag`` PERSIST) and HSETEX (``flag``
    KEEPTTL, ``conds``: FNX/FXX) up to FIELDS numfields, ``per`` arguments a
    field: (when or None, flag given, b"fnx"/b"fxx" or None, the position of
    numfields)."""
    n = len(argv)
    cond = None
    when = None
    flagged = False
    i = 2
    while i < n:
        a = argv[i].lower()
        if a == b"fields":
            if i + 1 >= n:
                raise _NUMFIELDS_POSITIVE
            _count(argv, i + 1, per, _NUMFIELDS_POSITIVE)
            return when, flagged, cond, i + 1
        if conds and (a == b"fnx" or a == b"fxx"):
            if cond is not None:
                raise _ONE_COND
            cond = a
            i += 1
            continue
        unit = _EXPIRE_UNITS.get(a)
        if unit is not None and i + 1 < n:
            if when is not None or flagged:
                raise _ONE_OF[flag]
            when = _abs_time(name, argv[i + 1], unit[0], now if unit[1] else 0)
            i += 2
            continue
        if a == flag:
            if when is not None or flagged:
                raise _ONE_OF[flag]
            flagged = True
            i += 1
            continue
        raise SYNTAX
    raise _NO_FIELDS


def _lazy_expired(c, key, h, f, expired):
    """HGETDEL/HGETEX: field f expired on this read?  hfe.lazy_field's code
    (0 no; 1 deleted; 2 the key went with it; 3 expired but stays), the
    deleted field added to ``expired`` (the events are sent once, after)."""
    if h.ttl is None:
        return 0
    r = hfe.lazy_field(c, key, h, f, False)
    if r and r != 3:
        expired.append(f)
    return r


@command("hgetdel")
def hgetdel(c, argv):
    db = c.db
    key = argv[1]
    h = db.lookup_write_typed(key, HashValue)
    n = _numfields(argv, 3, _NUMFIELDS_POSITIVE)
    fields = argv[4:]
    if h is None:
        return b"*%d\r\n" % n + c.null * n
    out = [b"*%d\r\n" % n]
    gone = []
    expired = []
    removed = False
    for f in fields:
        if removed:
            out.append(c.null)
            continue
        r = _lazy_expired(c, key, h, f, expired)
        if r:
            removed = r == 2
            out.append(c.null)
            continue
        v = h.get(f)
        if v is None:
            out.append(c.null)
            continue
        out.append(b"$%d\r\n%s\r\n" % (len(v), v))
        hfe.drop_field(h, f)
        gone.append(f)
        if not h:
            db.delete(key)
            removed = True
    if expired:
        hfe.hash_event(b"hexpired", key, db.id, expired)
    if gone:
        hfe.hash_event(b"hdel", key, db.id, gone)
        c.server.dirty += len(gone)
        if propagating(c.server):
            rewrite_argv(c, [b"HDEL", key] + gone)
    if removed:
        notify.notify(_GENERIC, b"del", key, db.id)
    elif gone or expired:
        db.signal(key)
    return b"".join(out)


@command("hgetex")
def hgetex(c, argv):
    db = c.db
    key = argv[1]
    h = db.lookup_write_typed(key, HashValue)
    now = hfe.now_ms()
    when, persist, _, at = _options(argv, "hgetex", b"persist", now, 1, False)
    fields = argv[at + 1:]
    if h is None:
        return b"*%d\r\n" % len(fields) + c.null * len(fields)
    srv = c.server
    out = [b"*%d\r\n" % len(fields)]
    expired = []
    removed = False
    found = []
    for f in fields:
        if removed:
            out.append(c.null)
            continue
        r = _lazy_expired(c, key, h, f, expired)
        if r:
            removed = r == 2
            out.append(c.null)
            continue
        v = h.get(f)
        out.append(_bulk_or_null(c, v))
        if v is not None:
            found.append(f)
    if expired:
        hfe.hash_event(b"hexpired", key, db.id, expired)
        if removed:
            notify.notify(_GENERIC, b"del", key, db.id)
    prop = []
    if removed or not found or (when is None and not persist):
        if not removed and expired:
            db.signal(key)
        return b"".join(out)
    if persist:
        done = [f for f in found if hfe.persist(h, f)]
        if done:
            hfe.hash_event(b"hpersist", key, db.id, done)
            db.signal(key)
            srv.dirty += len(done)
            prop = [b"HPERSIST", key, b"FIELDS", b"%d" % len(done)] + done
    elif _already_expired(srv, when, now):
        for f in found:
            hfe.delete_expired_field(srv, db, key, h, f)
        srv.dirty += len(found)
        hfe.hash_event(b"hexpired", key, db.id, found)
        if not h:
            db.delete(key)
            notify.notify(_GENERIC, b"del", key, db.id)
        else:
            db.signal(key)
    else:
        for f in found:
            hfe.set_ttl(h, f, when)
        hfe.note(db, key, when)
        srv.dirty += len(found)
        hfe.hash_event(b"hexpire", key, db.id, found)
        db.signal(key)
        prop = [b"HPEXPIREAT", key, b"%d" % when, b"FIELDS", b"%d" % len(found)] + found
    if propagating(srv):
        rewrite_argv(c, prop)
    return b"".join(out)


@command("hsetex")
def hsetex(c, argv):
    db = c.db
    key = argv[1]
    now = hfe.now_ms()
    when, keepttl, cond, at = _options(argv, "hsetex", b"keepttl", now, 2, True)
    h = db.lookup_write_typed(key, HashValue)
    srv = c.server
    pairs = argv[at + 1:]
    fields = pairs[0::2]
    if h is not None and h.ttl is not None:
        for f in fields:
            if hfe.lazy_field(c, key, h, f) == 2:
                h = None
                break
    if cond == b"fnx":
        if h is not None and any(f in h for f in fields):
            return b":0\r\n"
    elif cond == b"fxx":
        if h is None or not all(f in h for f in fields):
            return b":0\r\n"
    if when is not None and _already_expired(srv, when, now):
        # the fields would expire at once: they are deleted instead
        gone = []
        if h is not None:
            for f in dict.fromkeys(fields):
                if f in h:
                    hfe.drop_field(h, f)
                    gone.append(f)
        if gone:
            srv.dirty += len(gone)
            hfe.hash_event(b"hdel", key, db.id, gone)
            if not h:
                db.delete(key)
                notify.notify(_GENERIC, b"del", key, db.id)
            else:
                db.signal(key)
        if propagating(srv):
            rewrite_argv(c, [b"HDEL", key] + gone if gone else [])
        return b":1\r\n"
    if h is None:
        h = HashValue()
        db.add(key, h)
    else:
        db.signal(key)
    cfg = srv.config.values
    if not h.ht:
        lim = cfg["hash-max-listpack-value"]
        for x in pairs:
            if len(x) > lim:
                h.ht = True
                break
    aux = h._aux is not None
    for j in range(0, len(pairs), 2):
        f = pairs[j]
        new = f not in h
        if not keepttl and h.ttl is not None:
            hfe.clear_ttl(h, f)
        h[f] = pairs[j + 1]
        if new and aux:
            aux_added(h, f)
    if not h.ht and len(h) > cfg["hash-max-listpack-entries"]:
        h.ht = True
    if when is not None:
        for f in dict.fromkeys(fields):
            hfe.set_ttl(h, f, when)
        hfe.note(db, key, when)
    srv.dirty += len(fields)
    hfe.hash_event(b"hset", key, db.id, list(dict.fromkeys(fields)))
    if when is not None:
        hfe.hash_event(b"hexpire", key, db.id, list(dict.fromkeys(fields)))
        if propagating(srv):
            out = [b"HSETEX", key]
            if cond is not None:
                out.append(cond.upper())
            rewrite_argv(c, out + [b"PXAT", b"%d" % when] + list(argv[at - 1:]))
    return b":1\r\n"

