"""Hash field expiration (Redis 7.4's HFE): the TTLs of a hash's fields.

A hash whose fields have TTLs keeps them in ``HashValue.ttl``, a dict field
-> unix time in milliseconds (None while no field ever had one: those hashes
keep the common paths and their cost).  A small hash (not ``ht``) with a
``ttl`` dict is what Redis calls a listpackex: OBJECT ENCODING says so, and
its fields are kept in Redis's listpackex order (fields with TTLs first, by
expiry time, then the others), which is the order its replies list them in.

Each database keeps ``Database.hfe``: key -> a lower bound of the earliest
field expiry of the hash at that key, and ``Database.hfe_heap``, the same
(time, key) pairs as a heap (Redis's db->hexpires).  An entry may be stale
(the key renamed or deleted, the TTL raised or removed): the active cycle
checks the value before using it and drops or corrects the entry, so only
the places that give a key a hash with TTLs must call ``note`` or
``track_value``.

Expiry follows Redis: a command that reads one field deletes it when its
time has come (lazy expiry: the deletion propagates as HDEL, "hexpired"
event, the key goes with "del" when it was the last field); commands that
walk the whole hash (HGETALL, HKEYS, HVALS, HSCAN) skip expired fields
without deleting them; HLEN counts them until they are reclaimed; the active
cycle deletes them (propagated as HDEL, one "hexpired" event per hash).  On
a replica nothing is deleted: its master's HDELs do it, and its readers see
expired fields as gone.
"""

from __future__ import annotations

from heapq import heappop, heappush

from ..replication.propagate import also_propagate
from ..types.containers import HashValue, aux_removed
from . import db as _db
from . import notify

_HASH = notify.HASH
_GENERIC = notify.GENERIC
_HDEL = b"HDEL"

# HFE_MAX_ABS_TIME_MSEC: the largest field expiry time a command may set
# (EB_EXPIRE_TIME_MAX >> 2, EB_EXPIRE_TIME_MAX being 2**48 - 1)
MAX_ABS_MS = ((1 << 48) - 1) >> 2

# what one active-expiry call deletes at most (more go in the next cycles)
ACTIVE_FIELDS_PER_CYCLE = 10000


def hash_event(event, key, dbid, fields):
    """A hash event (keyspace and keyevent channels), and its subkey
    notifications naming ``fields`` (Redis 8.8) when they are on."""
    notify.notify(_HASH, event, key, dbid)
    if notify.flags & notify.SUBKEY:
        notify.notify_subkeys(_HASH, event, key, dbid, fields)


# The command's time (frozen while a script or EXEC runs, as Redis's
# commandTimeSnapshot)
now_ms = _db.mstime


def note(db, key, when):
    """A field of the hash at key expires at ``when``: the active cycle
    visits the key by then (its registration only ever moves earlier: a
    lower bound, checked when it comes)."""
    cur = db.hfe.get(key)
    if cur is None or when < cur:
        db.hfe[key] = when
        heappush(db.hfe_heap, (when, key))


def track_value(db, key, v):
    """A value was put at key by RENAME, MOVE, COPY, RESTORE, a load: a
    hash with field TTLs is registered for the active cycle."""
    if v.__class__ is HashValue and v.ttl:
        note(db, key, min(v.ttl.values()))


def min_expire(h) -> int:
    """Earliest field expiry of h, -1 when none."""
    t = h.ttl
    return min(t.values()) if t else -1


def has_ttls(v) -> bool:
    return v.__class__ is HashValue and bool(v.ttl)


def drop_field(h, f):
    """Remove field f (present) of h with its TTL."""
    del h[f]
    t = h.ttl
    if t is not None:
        t.pop(f, None)
    if h._aux is not None:
        aux_removed(h, f)


def clear_ttl(h, f):
    """Field f is being overwritten (HSET ...): it has no TTL any more; in
    a listpackex it moves to the end, as Redis re-inserts it."""
    t = h.ttl
    if t is not None and t.pop(f, None) is not None and not h.ht:
        _to_end(h, f)


def set_ttl(h, f, when):
    """Field f (present) of h expires at ``when`` (ms).  A listpackex keeps
    Redis's order: the field goes before the first field that has no TTL or
    one not earlier than ``when``."""
    t = h.ttl
    if t is None:
        t = h.ttl = {}
    t[f] = when
    if h.ht:
        return
    items = list(h.items())
    pos = None
    for i, (g, _) in enumerate(items):
        if g == f:
            continue
        w = t.get(g)
        if w is None or w >= when:
            pos = i
            break
    mine = (f, h[f])
    rest = [e for e in items if e[0] != f]
    if pos is None:
        order = rest + [mine]
    else:
        # pos counted with f possibly before it: recount in rest
        g = items[pos][0]
        j = next(k for k, e in enumerate(rest) if e[0] == g)
        order = rest[:j] + [mine] + rest[j:]
    if [e[0] for e in order] != [e[0] for e in items]:
        h.clear()
        for g, v in order:
            h[g] = v
        h._aux = None       # (the random-pick helper is rebuilt when next needed)


def _to_end(h, f):
    """Field f of a listpackex goes to its end (Redis re-inserts it there)."""
    v = h[f]
    del h[f]
    h[f] = v
    h._aux = None


def persist(h, f) -> bool:
    """Remove field f's TTL (HPERSIST); a listpackex moves it to its end."""
    t = h.ttl
    if t is None or t.pop(f, None) is None:
        return False
    if not h.ht:
        _to_end(h, f)
    return True


def is_expired(h, f, now) -> bool:
    t = h.ttl
    if t is None:
        return False
    w = t.get(f)
    return w is not None and w <= now


def live_items(h, now=None):
    """(field, value) of the fields whose time has not come, in order."""
    t = h.ttl
    if not t:
        return list(h.items())
    if now is None:
        now = now_ms()
    return [(f, v) for f, v in h.items() if f not in t or t[f] > now]


def live_len(h, now=None) -> int:
    t = h.ttl
    if not t:
        return len(h)
    if now is None:
        now = now_ms()
    return len(h) - sum(1 for w in t.values() if w <= now)


def _may_delete(srv):
    """What a read of an expired field does on this server: 0 the field is
    valid (our master's stream runs), 1 it is gone but stays (a replica's
    reader, loading, expiry paused), 2 delete it."""
    if srv.is_replica:
        return 0 if srv.applying_master else 1
    if srv.loading or srv.paused_expire:
        return 1
    return 2


def delete_expired_field(srv, db, key, h, f):
    """Delete field f of h (its time has come): propagated as HDEL, counted
    in expired_subkeys.  The caller notifies and deletes an emptied key."""
    drop_field(h, f)
    also_propagate(srv, [_HDEL, key, f], db)
    _db.stats.expired_subkeys += 1


def lazy_field(c, key, h, f, events=True) -> int:
    """Field f of the hash h at key was asked for: 0 when it is there and
    valid (or absent), 1 when it expired and was deleted, 2 when it expired
    and the hash went with it (the key is deleted), 3 when it expired but
    stays (a replica's reader, loading, expiry paused).  ``events``: the "hexpired" (and "del") events are sent here;
    HMGET sends them once for all its fields."""
    t = h.ttl
    if t is None:
        return 0
    w = t.get(f)
    if w is None or w > now_ms():
        return 0
    srv = c.server
    m = _may_delete(srv)
    if m == 0:
        return 0
    if m == 1:
        return 3
    db = c.db
    delete_expired_field(srv, db, key, h, f)
    r = 1
    if events:
        hash_event(b"hexpired", key, db.id, (f,))
    if not h:
        if events:
            notify.notify(_GENERIC, b"del", key, db.id)
        db.delete(key)
        r = 2
    else:
        db.signal(key)
    return r


def expire_all(c, key, h) -> bool:
    """Delete every expired field of h (HRANDFIELD does first).  True when
    the hash went with them."""
    t = h.ttl
    if not t:
        return False
    srv = c.server
    if _may_delete(srv) != 2:
        return False
    now = now_ms()
    gone = [f for f, w in t.items() if w <= now]
    if not gone:
        return False
    db = c.db
    for f in gone:
        delete_expired_field(srv, db, key, h, f)
    hash_event(b"hexpired", key, db.id, gone)
    if not h:
        notify.notify(_GENERIC, b"del", key, db.id)
        db.delete(key)
        return True
    db.signal(key)
    return False


def active_expire(srv, db, deadline, limit=ACTIVE_FIELDS_PER_CYCLE) -> int:
    """The active cycle's part for fields: delete the expired fields of
    db's hashes whose earliest expiry has come (at most ``limit``), until
    ``deadline`` (time.time()).  Returns the number deleted."""
    hfe = db.hfe
    heap = db.hfe_heap
    now = now_ms()
    if not heap or heap[0][0] > now:
        return 0
    d = db.d
    done = 0
    later = []
    while heap and heap[0][0] <= now:
        when, key = heappop(heap)
        if hfe.get(key) != when:
            continue            # an entry replaced by an earlier one, already visited
        del hfe[key]
        h = d.get(key)
        if h.__class__ is not HashValue or not h.ttl:
            continue
        kw = db.expires.get(key) if db.expires else None
        if kw is not None and kw <= now:
            later.append((key, when))   # the key's own expiry takes it
            continue
        t = h.ttl
        gone = [f for f, w in t.items() if w <= now]
        if len(gone) > limit - done:
            gone = sorted(gone, key=t.__getitem__)[:limit - done]
        for f in gone:
            delete_expired_field(srv, db, key, h, f)
        done += len(gone)
        if gone:
            hash_event(b"hexpired", key, db.id, gone)
            if not h:
                db.delete(key)
                notify.notify(_GENERIC, b"del", key, db.id)
                continue
            db.signal(key)
        if t:
            note(db, key, min(t.values()))
        if done >= limit or _db._time() > deadline:
            break
    for key, when in later:
        note(db, key, when + 1000)      # looked at again if the key is still there
    return done


def subexpiry_count(db) -> int:
    """INFO keyspace's subexpiry: the hashes with fields to expire."""
    d = db.d
    return sum(1 for k in db.hfe if has_ttls(d.get(k)))


def any_field_ttls(dbs) -> bool:
    """Is there a hash with field TTLs (the RDB then has Redis 7.4's version)?"""
    for db in dbs:
        d = db.d
        for k in db.hfe:
            if has_ttls(d.get(k)):
                return True
    return False

