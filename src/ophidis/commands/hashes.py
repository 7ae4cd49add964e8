"""Hash commands (t_hash.c).

A hash is a ``HashValue`` (a dict of bytes -> bytes).  Its ``ht`` flag is
what OBJECT ENCODING reports: False ("listpack") until a field or value
longer than hash-max-listpack-value is written or the hash grows past
hash-max-listpack-entries, then True ("hashtable") for good.  A dict keeps
insertion order, which is the order of a listpack, so small hashes reply in
the same order as Redis.
"""

from __future__ import annotations

import random

from ..cmdtable.registry import command
from ..errors import SYNTAX, RedisError
from ..keyspace import hfe, notify
from ..protocol.resp import ONE, ZERO, integer
from ..replication.propagate import propagating, rewrite_argv
from ..types.containers import SMALL_RANDOM, HashValue, aux_added, random_member, remove_members, scan_step
from ..util import (LLONG_MAX, LLONG_MIN, format_ld, ld_add, ld_finite, parse_int, parse_ld,
                    parse_range_long, try_int)
from .keys import length_reply, scan_value

_HASH = notify.HASH
_LONG_MAX_HALF = LLONG_MAX // 2
_NOT_FLOAT_FIELD = RedisError("ERR hash value is not a float")
_NOT_INT_FIELD = RedisError("ERR hash value is not an integer")


def _bulks(items) -> bytes:
    return b"".join([b"$%d\r\n%s\r\n" % (len(x), x) for x in items])


def set_fields(c, h, argv, start):
    """HSET/HMSET/HSETNX body: write pairs argv[start:], converting the
    encoding as Redis does.  Returns the number of new fields."""
    n = len(argv)
    if not h.ht:
        cfg = c.server.config.values
        lim = cfg["hash-max-listpack-value"]
        for i in range(start, n):
            if len(argv[i]) > lim:
                h.ht = True
                break
    n0 = len(h)
    if h.ttl is not None:
        for i in range(start, n, 2):
            hfe.clear_ttl(h, argv[i])
    if h._aux is None:
        if n - start == 2:
            h[argv[start]] = argv[start + 1]
        else:
            for i in range(start, n, 2):
                h[argv[i]] = argv[i + 1]
    else:
        for i in range(start, n, 2):
            f = argv[i]
            if f in h:
                h[f] = argv[i + 1]
            else:
                h[f] = argv[i + 1]
                aux_added(h, f)
    created = len(h) - n0
    if not h.ht and len(h) > c.server.config.values["hash-max-listpack-entries"]:
        h.ht = True
    return created


def _set_one(c, h, field, value):
    """hashTypeSet for HINCRBY*: one field, conversion by length and count."""
    cfg = c.server.config.values
    if not h.ht:
        lim = cfg["hash-max-listpack-value"]
        if len(field) > lim or len(value) > lim:
            h.ht = True
    if field not in h and h._aux is not None:
        h[field] = value
        aux_added(h, field)
    else:
        h[field] = value
    if not h.ht and len(h) > cfg["hash-max-listpack-entries"]:
        h.ht = True


def _hset_generic(c, argv, name):
    if len(argv) & 1:
        raise RedisError("ERR wrong number of arguments for '%s' command" % name)
    db = c.db
    key = argv[1]
    h = db.lookup_write_typed(key, HashValue, create=True)
    db.signal(key)
    created = set_fields(c, h, argv, 2)
    c.server.dirty += (len(argv) - 2) >> 1
    if notify.flags:
        hfe.hash_event(b"hset", key, db.id, argv[2::2])
    return created


@command("hset")
def hset(c, argv):
    if len(argv) != 4:
        return integer(_hset_generic(c, argv, "hset"))
    # HSET key field value: the common case, inlined.
    db = c.db
    key = argv[1]
    h = db.lookup_write_typed(key, HashValue, True)     # create: positional on this hot path
    if db.watched_keys:
        db.signal(key)       # (a new hash: a second, harmless touch of its watchers)
    f = argv[2]
    v = argv[3]
    n0 = len(h)
    if h.ttl is not None:
        hfe.clear_ttl(h, f)
    if h.ht:
        h[f] = v
    else:
        cfg = c.server.config.values
        lim = cfg["hash-max-listpack-value"]
        if len(f) > lim or len(v) > lim:
            h.ht = True
        h[f] = v
        if len(h) > cfg["hash-max-listpack-entries"]:
            h.ht = True
    srv = c.server
    srv.dirty += 1
    if notify.flags:
        hfe.hash_event(b"hset", key, db.id, (f,))
    if len(h) == n0:
        return ZERO
    if h._aux is not None:
        aux_added(h, f)
    return ONE


@command("hmset")
def hmset(c, argv):
    _hset_generic(c, argv, "hmset")
    return b"+OK\r\n"


@command("hsetnx")
def hsetnx(c, argv):
    db = c.db
    key = argv[1]
    h = db.lookup_write_typed(key, HashValue)
    if h is not None and h.ttl is not None and hfe.lazy_field(c, key, h, argv[2]) == 2:
        h = None
    if h is None:
        h = HashValue()
        db.add(key, h)
    elif argv[2] in h:
        return ZERO
    set_fields(c, h, argv, 2)
    db.signal(key)
    c.server.dirty += 1
    hfe.hash_event(b"hset", key, db.id, (argv[2],))
    return ONE


@command("hget")
def hget(c, argv):
    h = c.db.lookup_read_typed(argv[1], HashValue)
    if h is None:
        return c.null
    if h.ttl is not None and hfe.lazy_field(c, argv[1], h, argv[2]):
        return c.null
    v = h.get(argv[2])
    if v is None:
        return c.null
    return b"$%d\r\n%s\r\n" % (len(v), v)


@command("hmget")
def hmget(c, argv):
    h = c.db.lookup_read_typed(argv[1], HashValue)
    null = c.null
    out = [b"*%d\r\n" % (len(argv) - 2)]
    ap = out.append
    if h is not None and h.ttl is not None:
        return _hmget_fields(c, argv, h, out)
    get = h.get if h is not None else {}.get
    for f in argv[2:]:
        v = get(f)
        ap(null if v is None else b"$%d\r\n%s\r\n" % (len(v), v))
    return b"".join(out)


def _hmget_fields(c, argv, h, out):
    """HMGET of a hash with field TTLs: expired fields are deleted as met
    (one "hexpired" event, and "del" when the hash went, for all)."""
    null = c.null
    key = argv[1]
    expired = []
    deleted = False
    for f in argv[2:]:
        if deleted:
            out.append(null)
            continue
        r = hfe.lazy_field(c, key, h, f, False)
        if r:
            if r != 3:
                expired.append(f)
                deleted = r == 2
            out.append(null)
            continue
        v = h.get(f)
        out.append(null if v is None else b"$%d\r\n%s\r\n" % (len(v), v))
    if expired:
        db = c.db
        hfe.hash_event(b"hexpired", key, db.id, expired)
        if deleted:
            notify.notify(notify.GENERIC, b"del", key, db.id)
    return b"".join(out)


def _hdel_field(h, f):
    del h[f]
    t = h.ttl
    if t is not None:
        t.pop(f, None)


@command("hdel")
def hdel(c, argv):
    if not notify.flags & notify.SUBKEY:
        return integer(remove_members(c, argv, HashValue, _hdel_field, _HASH, b"hdel"))
    # subkey notifications name the fields removed: remove_members' steps
    db = c.db
    key = argv[1]
    h = db.lookup_write_typed(key, HashValue)
    if h is None:
        return ZERO
    gone = []
    for f in argv[2:]:
        if f in h:
            hfe.drop_field(h, f)
            gone.append(f)
            if not h:
                break
    if gone:
        if not h:
            db.delete(key)
        else:
            db.signal(key)
        hfe.hash_event(b"hdel", key, db.id, gone)
        if not h:
            notify.notify(notify.GENERIC, b"del", key, db.id)
        c.server.dirty += len(gone)
    return integer(len(gone))


@command("hlen")
def hlen(c, argv):
    return length_reply(c, argv[1], HashValue)


@command("hstrlen")
def hstrlen(c, argv):
    h = c.db.lookup_read_typed(argv[1], HashValue)
    if h is None:
        return ZERO
    if h.ttl is not None and hfe.lazy_field(c, argv[1], h, argv[2]):
        return ZERO
    v = h.get(argv[2])
    return ZERO if v is None else integer(len(v))


@command("hexists")
def hexists(c, argv):
    h = c.db.lookup_read_typed(argv[1], HashValue)
    if h is not None and h.ttl is not None and hfe.lazy_field(c, argv[1], h, argv[2]):
        return ZERO
    return ONE if h is not None and argv[2] in h else ZERO


@command("hkeys")
def hkeys(c, argv):
    h = c.db.lookup_read_typed(argv[1], HashValue)
    if h is None:
        return b"*0\r\n"
    if h.ttl:
        fields = [f for f, _ in hfe.live_items(h)]
        return b"*%d\r\n" % len(fields) + _bulks(fields)
    return b"*%d\r\n" % len(h) + _bulks(h)


@command("hvals")
def hvals(c, argv):
    h = c.db.lookup_read_typed(argv[1], HashValue)
    if h is None:
        return b"*0\r\n"
    if h.ttl:
        vals = [v for _, v in hfe.live_items(h)]
        return b"*%d\r\n" % len(vals) + _bulks(vals)
    return b"*%d\r\n" % len(h) + _bulks(h.values())


def _map_header(c, n):
    return b"%%%d\r\n" % n if c.resp >= 3 else b"*%d\r\n" % (2 * n)


@command("hgetall")
def hgetall(c, argv):
    h = c.db.lookup_read_typed(argv[1], HashValue)
    if h is None:
        return _map_header(c, 0)
    items = hfe.live_items(h) if h.ttl else h.items()
    return _map_header(c, len(items)) + b"".join(
        [b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v) for k, v in items])


@command("hincrby")
def hincrby(c, argv):
    incr = parse_int(argv[3])
    db = c.db
    key = argv[1]
    field = argv[2]
    h = db.lookup_write_typed(key, HashValue)
    if h is not None and h.ttl is not None and hfe.lazy_field(c, key, h, field) == 2:
        h = None
    if h is not None:
        cur = h.get(field)
        if cur is not None:
            value = try_int(cur)
            if value is None:
                raise _NOT_INT_FIELD
        else:
            value = 0
    else:
        value = 0
    value += incr
    if value > LLONG_MAX or value < LLONG_MIN:
        raise RedisError("ERR increment or decrement would overflow")
    if h is None:
        h = HashValue()
        db.add(key, h)
    else:
        db.signal(key)
    _set_one(c, h, field, b"%d" % value)
    c.server.dirty += 1
    hfe.hash_event(b"hincrby", key, db.id, (field,))
    return integer(value)


@command("hincrbyfloat")
def hincrbyfloat(c, argv):
    incr = parse_ld(argv[3])
    if not ld_finite(incr):
        raise RedisError("ERR value is NaN or Infinity")
    db = c.db
    key = argv[1]
    field = argv[2]
    h = db.lookup_write_typed(key, HashValue)
    if h is not None and h.ttl is not None and hfe.lazy_field(c, key, h, field) == 2:
        h = None
    cur = h.get(field) if h is not None else None
    value = parse_ld(cur, _NOT_FLOAT_FIELD) if cur is not None else 0
    value = ld_add(value, incr)
    if not ld_finite(value):
        raise RedisError("ERR increment would produce NaN or Infinity")
    b = format_ld(value)
    if h is None:
        h = HashValue()
        db.add(key, h)
    else:
        db.signal(key)
    _set_one(c, h, field, b)
    c.server.dirty += 1
    hfe.hash_event(b"hincrbyfloat", key, db.id, (field,))
    if propagating(c.server):
        # Replicas and the AOF get the result, not the float arithmetic.
        rewrite_argv(c, [b"HSET", key, field, b])
    return b"$%d\r\n%s\r\n" % (len(b), b)


def _pairs_reply(c, h, fields, withvalues):
    """HRANDFIELD reply body (without header) for a list of fields."""
    if not withvalues:
        return _bulks(fields)
    if c.resp >= 3:
        return b"".join([b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(f), f, len(h[f]), h[f])
                         for f in fields])
    return b"".join([b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(f), f, len(h[f]), h[f])
                     for f in fields])


def _header(c, count, withvalues):
    if withvalues and c.resp == 2:
        return b"*%d\r\n" % (count * 2)
    return b"*%d\r\n" % count


def _random_picker(v, count):
    """``pick(k)``: k random members of v, with repetitions (count of them
    will be asked for in all)."""
    n = len(v)
    if n <= SMALL_RANDOM or count * 4 >= n:
        population = tuple(v)
        return lambda k: random.choices(population, k=k)
    return lambda k: [random_member(v) for _ in range(k)]


def picks_reply(c, v, count, head, encode):
    """HRANDFIELD / SRANDMEMBER with a negative count (or 1): ``count``
    random members of the hash or set v with repetitions, the reply's
    elements ``encode(members)`` after its ``head``."""
    pick = _random_picker(v, count)
    return chunked_reply(c, head, count, lambda n: encode(pick(n)))


REPLY_CHUNK = 1024


def chunked_reply(c, head: bytes, count: int, encode) -> bytes:
    """The reply of ``count`` random picks with repetitions (HRANDFIELD,
    SRANDMEMBER, ZRANDMEMBER with a negative count: it may be far bigger
    than the value), built REPLY_CHUNK picks at a time (``encode(n)``: n
    picks encoded).  Between chunks the client's output limits are
    checked, as Redis stops these loops once the client is to be closed:
    then the reply is empty (it is never sent)."""
    if count <= REPLY_CHUNK:
        return head + encode(count)
    parts = [head]
    size = len(head)
    while count:
        n = count if count < REPLY_CHUNK else REPLY_CHUNK
        b = encode(n)
        parts.append(b)
        size += len(b)
        count -= n
        if count and c.reply_over_limit(size):
            return b""
    return b"".join(parts)


def random_unique(v, count):
    """count distinct random members of v (count*3 <= len(v))."""
    if v._aux is None and len(v) <= 1024:
        return random.sample(tuple(v), count)
    picked = {}
    while len(picked) < count:
        picked[random_member(v)] = None
    return list(picked)


@command("hrandfield")
def hrandfield(c, argv):
    if len(argv) >= 3:
        lim = LLONG_MAX
        l = parse_range_long(argv[2], -lim, lim)
        withvalues = False
        if len(argv) > 4 or (len(argv) == 4 and argv[3].lower() != b"withvalues"):
            raise SYNTAX
        if len(argv) == 4:
            withvalues = True
            if l < -_LONG_MAX_HALF or l > _LONG_MAX_HALF:
                raise RedisError("ERR value is out of range")
        h = c.db.lookup_read_typed(argv[1], HashValue)
        if h is not None and h.ttl and hfe.expire_all(c, argv[1], h):
            h = None
        if h is None or l == 0:
            return b"*0\r\n"
        if l < 0 or l == 1:
            count = -l if l < 0 else 1
            return picks_reply(c, h, count, _header(c, count, withvalues),
                               lambda fields: _pairs_reply(c, h, fields, withvalues))
        size = len(h)
        if l >= size:
            fields = list(h)
        elif l * 3 > size:
            fields = random.sample(list(h), l)
        else:
            fields = random_unique(h, l)
        return _header(c, len(fields), withvalues) + _pairs_reply(c, h, fields, withvalues)
    h = c.db.lookup_read_typed(argv[1], HashValue)
    if h is not None and h.ttl and hfe.expire_all(c, argv[1], h):
        h = None
    if h is None:
        return c.null
    f = random_member(h)
    return b"$%d\r\n%s\r\n" % (len(f), f)


def _hscan_step(h, cursor, count):
    if not h.ht:
        nxt, fields = 0, list(h)
    else:
        nxt, fields = scan_step(h, cursor, count)
    if h.ttl:
        now = hfe.now_ms()
        fields = [f for f in fields if not hfe.is_expired(h, f, now)]
    return nxt, fields


def _hscan_encode(h, fields):
    return 2 * len(fields), b"".join([b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(f), f, len(h[f]), h[f])
                                      for f in fields])


def _hscan_encode_novalues(h, fields):
    return len(fields), _bulks(fields)


@command("hscan")
def hscan(c, argv):
    # NOVALUES (7.4) may be among the options: taken out here, the others
    # are scanGenericCommand's
    n = len(argv)
    novalues = False
    if n > 3:
        rest = []
        i = 3
        while i < n:
            a = argv[i]
            if a.lower() == b"novalues":
                novalues = True
                i += 1
                continue
            rest.append(a)
            if i + 1 < n:
                rest.append(argv[i + 1])
            i += 2
        if novalues:
            argv = argv[:3] + rest
    return scan_value(c, argv, HashValue, _hscan_step, _hscan_encode_novalues if novalues else _hscan_encode)
