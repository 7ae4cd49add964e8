"""SORT and SORT_RO (sort.c).

Works on lists, sets and sorted sets, reading them generically: lists and
sets are iterables of bytes (``ListValue``/``SetValue``), sorted sets are
``ZSetValue``; BY/GET patterns read strings and hash fields.
"""

from __future__ import annotations

from functools import cmp_to_key

from ..acl.check import check_unrestricted_keys
from ..cluster import key_hash_slot, pattern_hash_slot
from ..cmdtable.registry import ALL, command
from ..errors import SYNTAX, RedisError
from ..keyspace import hfe, notify
from ..keyspace.db import WRONGTYPE_ERR, type_name
from ..protocol.resp import ZERO, integer
from ..types.containers import ListValue, list_built
from ..types.zset import ZSetValue
from ..util import parse_int
from .numparse import sort_strtod

SCORE_ERR = RedisError("ERR One or more scores can't be converted into double")
_BY_CLUSTER = RedisError("ERR BY option of SORT denied in Cluster mode when keys formed by the pattern "
                         "may be in different slots.")
_GET_CLUSTER = RedisError("ERR GET option of SORT denied in Cluster mode when keys formed by the pattern "
                          "may be in different slots.")


def _lookup_by_pattern(db, pattern, subst):
    """lookupKeyByPattern: the value (bytes) the pattern names for subst, or
    None.  ``#`` is the element itself; ``key*->field`` reads a hash field."""
    if pattern == b"#":
        return subst
    p = pattern.find(b"*")
    if p < 0:
        return None
    f = pattern.find(b"->", p + 1)
    field = None
    if f >= 0 and f + 2 < len(pattern):
        field = pattern[f + 2:]
        keyname = pattern[:p] + subst + pattern[p + 1:f]
    else:
        keyname = pattern[:p] + subst + pattern[p + 1:]
    o = db.lookup_read(keyname)
    if o is None:
        return None
    t = type_name(o)
    if field is not None:
        if t != b"hash":
            return None
        v = o.get(field)
        if v is None or (o.ttl and hfe.is_expired(o, field, hfe.now_ms())):
            return None         # (an expired field is not there; SORT deletes nothing)
        return bytes(v)
    if t != b"string":
        return None
    return bytes(o)


def _set_members(v):
    """Set iteration order: an intset iterates in integer order."""
    if getattr(v, "enc", None) == b"intset":
        try:
            return sorted(v, key=int)
        except ValueError:
            pass
    return list(v)


def _sort_generic(c, argv, readonly):
    n = len(argv)
    desc = False
    alpha = False
    limit_start = 0
    limit_count = -1
    dontsort = False
    sortby = None
    storekey = None
    gets = []
    j = 2
    user = c.user
    full_access = user.unrestricted or check_unrestricted_keys(user, ALL["sort_ro" if readonly else "sort"], argv)
    cluster = c.server.cluster is not None
    while j < n:
        opt = argv[j].lower()
        left = n - j - 1
        if opt == b"asc":
            desc = False
        elif opt == b"desc":
            desc = True
        elif opt == b"alpha":
            alpha = True
        elif opt == b"limit" and left >= 2:
            limit_start = parse_int(argv[j + 1])
            limit_count = parse_int(argv[j + 2])
            j += 2
        elif not readonly and opt == b"store" and left >= 1:
            storekey = argv[j + 1]
            j += 1
        elif opt == b"by" and left >= 1:
            sortby = argv[j + 1]
            # A pattern without '*' means "don't sort" (later BY options
            # override earlier ones, but the flag sticks as in Redis).
            if b"*" not in sortby:
                dontsort = True
            elif cluster and pattern_hash_slot(sortby) != key_hash_slot(argv[1]):
                # (Redis 7.4: a pattern whose keys share the sorted key's slot is allowed)
                raise _BY_CLUSTER
            elif not full_access:
                raise RedisError("ERR BY option of SORT denied due to insufficient ACL permissions.")
            j += 1
        elif opt == b"get" and left >= 1:
            if cluster and pattern_hash_slot(argv[j + 1]) != key_hash_slot(argv[1]):
                raise _GET_CLUSTER
            if not full_access:
                raise RedisError("ERR GET option of SORT denied due to insufficient ACL permissions.")
            gets.append(argv[j + 1])
            j += 1
        else:
            raise SYNTAX
        j += 1

    db = c.db
    v = db.lookup_read(argv[1])
    if v is None:
        kind = b"list"
        elems = []
    else:
        kind = type_name(v)
        if kind not in (b"list", b"set", b"zset"):
            raise WRONGTYPE_ERR
    if dontsort and kind == b"set" and (storekey is not None or c.in_script):
        # Sets have no order of their own: make the result deterministic.
        dontsort = False
        alpha = True
        sortby = None
    if v is not None and v.__class__ is ZSetValue:
        v.skiplist = True   # Redis converts the zset to sort it

    if kind == b"list":
        vectorlen = len(v) if v is not None else 0
    elif kind == b"set":
        vectorlen = len(v)
    else:
        vectorlen = len(v.dict)

    start = min(max(limit_start, 0), vectorlen)
    limit_count = min(max(limit_count, -1), vectorlen)
    end = vectorlen - 1 if limit_count < 0 else start + limit_count - 1
    if start >= vectorlen:
        start = vectorlen - 1
        end = vectorlen - 2
    if end >= vectorlen:
        end = vectorlen - 1

    if dontsort and kind in (b"list", b"zset"):
        if end >= start:
            if kind == b"list":
                if desc:
                    seq = list(v)[::-1]
                else:
                    seq = list(v)
                elems = seq[start:end + 1]
            else:
                sl = v.sl
                ln = len(sl)
                if desc:
                    elems = [m for _, m in sl.islice(ln - 1 - end, ln - start, reverse=True)]
                else:
                    elems = [m for _, m in sl.islice(start, end + 1)]
            end -= start
            start = 0
        else:
            elems = []
    elif v is None:
        elems = []
    elif kind == b"list":
        elems = list(v)
    elif kind == b"set":
        elems = _set_members(v)
    else:
        elems = list(v.dict)

    conv_error = False
    if not dontsort and elems:
        if alpha:
            if sortby is not None:
                keyed = [(_lookup_by_pattern(db, sortby, e), e) for e in elems]

                def cmp(a, b):
                    x, y = a[0], b[0]
                    if x is None or y is None:
                        if x is y:
                            return 0
                        return -1 if x is None else 1
                    return (x > y) - (x < y)
                keyed.sort(key=cmp_to_key(cmp), reverse=desc)
                elems = [e for _, e in keyed]
            else:
                elems.sort(reverse=desc)
        else:
            keyed = []
            for e in elems:
                if sortby is not None:
                    bv = _lookup_by_pattern(db, sortby, e)
                    if bv is None:
                        keyed.append((0.0, e))
                        continue
                else:
                    bv = e
                s = sort_strtod(bv)
                if s is None:
                    conv_error = True
                    s = 0.0
                keyed.append((s, e))
            keyed.sort(reverse=desc)
            elems = [e for _, e in keyed]

    if end < start:
        out = []
    else:
        out = elems[start:end + 1]
    outputlen = len(gets) * len(out) if gets else len(out)
    if conv_error:
        raise SCORE_ERR
    if storekey is None:
        parts = [b"*%d\r\n" % outputlen]
        ap = parts.append
        null = c.null
        for e in out:
            if not gets:
                ap(b"$%d\r\n%s\r\n" % (len(e), e))
            for pat in gets:
                val = _lookup_by_pattern(db, pat, e)
                if val is None:
                    ap(null)
                else:
                    ap(b"$%d\r\n%s\r\n" % (len(val), val))
        return b"".join(parts)
    result = ListValue()
    for e in out:
        if not gets:
            result.append(e)
        else:
            for pat in gets:
                val = _lookup_by_pattern(db, pat, e)
                result.append(b"" if val is None else val)
    if outputlen:
        # built as a quicklist, then the best encoding (LIST_CONV_AUTO)
        db.store(storekey, list_built(result))
        notify.notify(notify.LIST, b"sortstore", storekey, db.id)
        c.server.dirty += outputlen
    else:
        db.delete_destination(storekey)
    return integer(outputlen) if outputlen else ZERO


@command("sort")
def sort(c, argv):
    return _sort_generic(c, argv, False)


@command("sort_ro")
def sort_ro(c, argv):
    return _sort_generic(c, argv, True)
