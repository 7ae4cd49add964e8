"""Sorted set commands (t_zset.c): ZADD and friends, ranges, pops and their blocking
forms; the set algebra (ZUNION, ZINTER, ZDIFF) is in zset_setops.py.

Values are ``types.zset.ZSetValue``.  The listpack/skiplist distinction only
matters for OBJECT ENCODING (and the few places where Redis's listpack
representation is visible, such as a score of -0 being stored as 0); the
conversion points follow Redis 7.0.
"""

from __future__ import annotations

import random

from ..cmdtable.registry import command
from ..dtoa import d2string
from ..errors import SYNTAX, RedisError
from ..keyspace import notify
from ..keyspace.blocking import parse_timeout
from ..keyspace.db import dict_scan, signal_key_ready
from ..protocol.resp import EMPTY_ARRAY, ZERO, integer
from ..replication.propagate import propagating, rewrite_argv
from ..types.zset import ZSetValue
from ..util import index_range, parse_int, parse_keyword
from .hashes import chunked_reply
from .keys import scan_value
from .numparse import range_strtod, string2d

_ZSET = notify.ZSET
_GENERIC = notify.GENERIC

NOT_FLOAT = RedisError("ERR value is not a valid float")
NAN_ERR = RedisError("ERR resulting score is not a number (NaN)")
MINMAX_FLOAT = RedisError("ERR min or max is not a float")
MINMAX_LEX = RedisError("ERR min or max not valid string range item")
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1


def _limits(c):
    v = c.server.config.values
    return v["zset-max-listpack-entries"], v["zset-max-listpack-value"]


def _dbl(c, d) -> bytes:
    s = d2string(d)
    if c.resp == 2:
        return b"$%d\r\n%s\r\n" % (len(s), s)
    return b",%s\r\n" % s


def reply_pairs(c, pairs, withscores):
    """pairs: iterable of (score, member) in reply order."""
    if not withscores:
        parts = [b"$%d\r\n%s\r\n" % (len(m), m) for _, m in pairs]
        return b"*%d\r\n" % len(parts) + b"".join(parts)
    if c.resp == 2:
        parts = []
        ap = parts.append
        for s, m in pairs:
            f = d2string(s)
            ap(b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(m), m, len(f), f))
        return b"*%d\r\n" % (2 * len(parts)) + b"".join(parts)
    parts = [b"*2\r\n$%d\r\n%s\r\n,%s\r\n" % (len(m), m, d2string(s)) for s, m in pairs]
    return b"*%d\r\n" % len(parts) + b"".join(parts)


def finish_store_result(c, z):
    """Pick the encoding of a computed result as Redis does when it converts
    a freshly built skiplist to a listpack if small enough."""
    entries, maxval = _limits(c)
    if len(z.dict) <= entries and (not z.dict or max(map(len, z.dict)) <= maxval):
        z.skiplist = False
        z.normalize_listpack()
    else:
        z.skiplist = True


# ---------------------------------------------------------------------------
# ZADD / ZINCRBY
# ---------------------------------------------------------------------------
_ZADD_OPTS = {b"nx": 1, b"xx": 2, b"ch": 4, b"incr": 8, b"gt": 16, b"lt": 32}


def _zadd_generic(c, argv, flags):
    n = len(argv)
    i = 2
    opts = _ZADD_OPTS
    while i < n:
        f = opts.get(argv[i].lower())
        if f is None:
            break
        flags |= f
        i += 1
    nx = flags & 1
    xx = flags & 2
    ch = flags & 4
    incr = flags & 8
    gt = flags & 16
    lt = flags & 32
    elements = n - i
    if elements % 2 or not elements:
        raise SYNTAX
    elements //= 2
    if nx and xx:
        raise RedisError("ERR XX and NX options at the same time are not compatible")
    if (gt and nx) or (lt and nx) or (gt and lt):
        raise RedisError("ERR GT, LT, and/or NX options at the same time are not compatible")
    if incr and elements > 1:
        raise RedisError("ERR INCR option supports a single increment-element pair")
    scores = []
    for j in range(i, n, 2):
        s = string2d(argv[j])
        if s is None:
            raise NOT_FLOAT
        scores.append(s)
    db = c.db
    key = argv[1]
    z = db.lookup_write_typed(key, ZSetValue)
    added = updated = processed = 0
    score = 0.0
    entries, maxval = _limits(c)
    if z is None:
        if xx:
            if incr:
                return c.null
            return ZERO
        z = ZSetValue()
        if entries == 0 or maxval < len(argv[i + 1]):
            z.skiplist = True
        db.add(key, z)
        created = True
    else:
        created = False
    d = z.dict
    sl = z.sl
    err = None
    for k in range(elements):
        score = scores[k]
        member = argv[i + 1 + 2 * k]
        cur = d.get(member)
        if cur is not None:
            if nx:
                continue
            if incr:
                score += cur
                if score != score:
                    err = NAN_ERR
                    break
            if (lt and score >= cur) or (gt and score <= cur):
                continue
            processed += 1
            if score != cur:
                sl.remove(cur, member)
                st = 0.0 if score == 0.0 and not z.skiplist else score    # a listpack keeps -0 as 0
                d[member] = st
                sl.add(st, member)
                updated += 1
        elif not xx:
            if not z.skiplist and (len(d) + 1 > entries or len(member) > maxval):
                z.skiplist = True
            st = 0.0 if score == 0.0 and not z.skiplist else score
            d[member] = st
            sl.add(st, member)
            added += 1
            processed += 1
    c.server.dirty += added + updated
    if added or updated:
        if not created:
            db.signal(key)
            signal_key_ready(db, key)
        if notify.flags:
            notify.notify(_ZSET, b"zincr" if incr else b"zadd", key, db.id)
    if err is not None:
        raise err
    if incr:
        if processed:
            return _dbl(c, score)
        return c.null
    return integer(added + updated if ch else added)


@command("zadd")
def zadd(c, argv):
    if len(argv) == 4:
        # ZADD key score member: the benchmark's hot path.
        key = argv[1]
        member = argv[3]
        sb = argv[2]
        try:
            score = float(sb)
        except ValueError:
            return _zadd_generic(c, argv, 0)
        if score == 0.0:
            if sb != b"0":
                return _zadd_generic(c, argv, 0)   # -0, underflow ...
        elif score - score != 0.0 or sb[:1].isspace() or sb[-1:].isspace() or b"_" in sb:
            return _zadd_generic(c, argv, 0)       # inf, nan, odd spellings
        db = c.db
        z = db.d.get(key)
        if z is None or z.__class__ is not ZSetValue or (db.expires and key in db.expires):
            return _zadd_generic(c, argv, 0)
        d = z.dict
        cur = d.get(member)
        if cur is None:
            if not z.skiplist:
                cfg = c.server.config.values
                if len(d) + 1 > cfg["zset-max-listpack-entries"] or \
                        len(member) > cfg["zset-max-listpack-value"]:
                    z.skiplist = True
            d[member] = score
            z.sl.add(score, member)
            res = 1
        elif cur != score:
            z.sl.remove(cur, member)
            d[member] = score
            z.sl.add(score, member)
            res = 0
        else:
            return ZERO
        c.server.dirty += 1
        if db.watched_keys:
            db.signal(key)
        if db.blocking_keys:
            signal_key_ready(db, key)
        if notify.flags:
            notify.notify(_ZSET, b"zadd", key, db.id)
        return integer(res)
    return _zadd_generic(c, argv, 0)


_INF = float("inf")
_NINF = float("-inf")


@command("zincrby")
def zincrby(c, argv):
    return _zadd_generic(c, argv, 8)


# ---------------------------------------------------------------------------
# ZREM, ZCARD, ZSCORE, ZMSCORE, ZRANK
# ---------------------------------------------------------------------------
@command("zrem")
def zrem(c, argv):
    db = c.db
    key = argv[1]
    z = c.db.lookup_write_typed(key, ZSetValue)
    if z is None:
        return ZERO
    deleted = 0
    for m in argv[2:]:
        if z.remove(m):
            deleted += 1
            if not z.dict:
                break
    if deleted:
        notify.notify(_ZSET, b"zrem", key, db.id)
        db.delete_if_empty(key, z.dict)
        c.server.dirty += deleted
    return integer(deleted)


@command("zcard")
def zcard(c, argv):
    z = c.db.lookup_read_typed(argv[1], ZSetValue)
    if z is None:
        return ZERO
    return integer(len(z.dict))


@command("zscore")
def zscore(c, argv):
    z = c.db.lookup_read_typed(argv[1], ZSetValue)
    if z is None:
        return c.null
    s = z.dict.get(argv[2])
    if s is None:
        return c.null
    return _dbl(c, s)


@command("zmscore")
def zmscore(c, argv):
    z = c.db.lookup_read_typed(argv[1], ZSetValue)
    out = [b"*%d\r\n" % (len(argv) - 2)]
    null = c.null
    d = z.dict if z is not None else {}
    for m in argv[2:]:
        s = d.get(m)
        out.append(null if s is None else _dbl(c, s))
    return b"".join(out)


def _zrank(c, argv, reverse):
    # ZRANK key member [WITHSCORE] (7.2): [rank, score], a null array when
    # the key or member is missing
    n = len(argv)
    withscore = False
    if n > 3:
        if n > 4:
            raise RedisError("ERR wrong number of arguments for '%s' command" % (
                "zrevrank" if reverse else "zrank"))
        if argv[3].upper() != b"WITHSCORE":
            raise SYNTAX
        withscore = True
    null = c.null_array if withscore else c.null
    z = c.db.lookup_read_typed(argv[1], ZSetValue)
    if z is None:
        return null
    r = z.rank(argv[2])
    if r is None:
        return null
    if reverse:
        r = len(z.dict) - 1 - r
    if withscore:
        return b"*2\r\n" + integer(r) + _dbl(c, z.dict[argv[2]])
    return integer(r)


@command("zrank")
def zrank(c, argv):
    return _zrank(c, argv, False)


@command("zrevrank")
def zrevrank(c, argv):
    return _zrank(c, argv, True)


# ---------------------------------------------------------------------------
# Ranges
# ---------------------------------------------------------------------------
def parse_score_range(bmin, bmax):
    """zslParseRange: returns (min, minex, max, maxex)."""
    mnex = bmin[:1] == b"("
    mn = range_strtod(bmin[1:] if mnex else bmin)
    mxex = bmax[:1] == b"("
    mx = range_strtod(bmax[1:] if mxex else bmax)
    if mn is None or mx is None:
        raise MINMAX_FLOAT
    return mn, mnex, mx, mxex


# Lex bounds: (value, exclusive); value None = "-" (min) or TOP-like "+" (max).
_LEX_MIN = b"-"
_LEX_MAX = b"+"


def _parse_lex_item(b):
    c0 = b[:1]
    if c0 == b"+":
        if len(b) != 1 and b[1] != 0:
            raise MINMAX_LEX
        return _LEX_MAX, False
    if c0 == b"-":
        if len(b) != 1 and b[1] != 0:
            raise MINMAX_LEX
        return _LEX_MIN, False
    if c0 == b"(":
        return b[1:], True
    if c0 == b"[":
        return b[1:], False
    raise MINMAX_LEX


def parse_lex_range(bmin, bmax):
    mn, mnex = _parse_lex_item(bmin)
    mx, mxex = _parse_lex_item(bmax)
    return mn, mnex, mx, mxex


def _lex_cmp(a, b):
    """sdscmplex with the shared min/max sentinels (identity compared)."""
    if a is b:
        return 0
    if a is _LEX_MIN or b is _LEX_MAX:
        return -1
    if a is _LEX_MAX or b is _LEX_MIN:
        return 1
    return (a > b) - (a < b)


def _lex_gte_min(m, mn, mnex):
    if mn is _LEX_MIN:
        return True
    if mn is _LEX_MAX:
        return False
    return m > mn if mnex else m >= mn


def _lex_lte_max(m, mx, mxex):
    if mx is _LEX_MAX:
        return True
    if mx is _LEX_MIN:
        return False
    return m < mx if mxex else m <= mx


def _lex_empty(mn, mnex, mx, mxex):
    cmp = _lex_cmp(mn, mx)
    return cmp > 0 or (cmp == 0 and (mnex or mxex))


def lex_indices(z, mn, mnex, mx, mxex, reverse):
    """Indices (ascending positions) of the elements a lex range selects, in
    reply order.  When all scores are equal (the documented use) this is a
    bisection; otherwise Redis's linear listpack walk is reproduced."""
    sl = z.sl
    n = len(sl)
    if n == 0 or _lex_empty(mn, mnex, mx, mxex):
        return range(0)
    # zzlIsInLexRange: the last element must be >= min, the first <= max.
    if not _lex_gte_min(sl[-1][1], mn, mnex) or not _lex_lte_max(sl[0][1], mx, mxex):
        return range(0)
    first_s = sl[0][0]
    if first_s == sl[-1][0]:
        s = first_s
        if mn is _LEX_MIN:
            lo = 0
        elif mn is _LEX_MAX:
            lo = n
        else:
            lo = sl.index_right(s, mn) if mnex else sl.index_left(s, mn)
        if mx is _LEX_MAX:
            hi = n
        elif mx is _LEX_MIN:
            hi = 0
        else:
            hi = sl.index_left(s, mx) if mxex else sl.index_right(s, mx)
        if hi < lo:
            hi = lo
        return range(hi - 1, lo - 1, -1) if reverse else range(lo, hi)
    # Mixed scores: walk as the listpack code does.
    if not reverse:
        i = 0
        while i < n and not _lex_gte_min(sl[i][1], mn, mnex):
            i += 1
        j = i
        while j < n and _lex_lte_max(sl[j][1], mx, mxex):
            j += 1
        return range(i, j)
    i = n - 1
    while i >= 0 and not _lex_lte_max(sl[i][1], mx, mxex):
        i -= 1
    j = i
    while j >= 0 and _lex_gte_min(sl[j][1], mn, mnex):
        j -= 1
    return range(i, j, -1)


def _apply_limit(idx, offset, limit):
    """LIMIT offset count over a range of positions (Redis's semantics:
    negative offset -> nothing, negative count -> all)."""
    if offset < 0:
        return range(0)
    idx = idx[offset:]
    if limit >= 0:
        idx = idx[:limit]
    return idx


RANK, SCORE, LEX = 0, 1, 2


def _zrange_generic(c, argv, argstart, store, rangetype, reverse):
    """ZRANGE family.  store: destination key or None.  rangetype /
    reverse None = decided by the options (ZRANGE, ZRANGESTORE)."""
    n = len(argv)
    key = argv[argstart]
    minidx = argstart + 1
    maxidx = argstart + 2
    withscores = False
    offset = 0
    limit = -1
    limit_given = False
    j = argstart + 3
    while j < n:
        opt = argv[j].lower()
        left = n - j - 1
        if store is None and opt == b"withscores":
            withscores = True
        elif opt == b"limit" and left >= 2:
            offset = parse_int(argv[j + 1])
            limit = parse_int(argv[j + 2])
            limit_given = True
            j += 2
        elif reverse is None and opt == b"rev":
            reverse = True
        elif rangetype is None and opt == b"bylex":
            rangetype = LEX
        elif rangetype is None and opt == b"byscore":
            rangetype = SCORE
        else:
            raise SYNTAX
        j += 1
    if reverse is None:
        reverse = False
    if rangetype is None:
        rangetype = RANK
    if limit_given and limit != -1 and rangetype == RANK:
        raise RedisError("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
    if withscores and rangetype == LEX:
        raise RedisError("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
    if reverse and rangetype != RANK:
        minidx, maxidx = maxidx, minidx
    if rangetype == RANK:
        start = parse_int(argv[minidx])
        end = parse_int(argv[maxidx])
    elif rangetype == SCORE:
        rng = parse_score_range(argv[minidx], argv[maxidx])
    else:
        rng = parse_lex_range(argv[minidx], argv[maxidx])
    z = c.db.lookup_read_typed(key, ZSetValue)
    if z is None:
        if store is not None:
            return _zrangestore_finish(c, store, None)
        return EMPTY_ARRAY
    sl = z.sl
    if rangetype == RANK:
        b = index_range(len(sl), start, end)
        if b is None:
            pairs = []
        else:
            start, end = b
            if reverse:
                ln = len(sl)
                pairs = list(sl.islice(ln - 1 - end, ln - start, reverse=True))
            else:
                pairs = list(sl.islice(start, end + 1))
    elif rangetype == SCORE:
        mn, mnex, mx, mxex = rng
        if offset > 0 and offset >= len(sl):
            pairs = []
        else:
            lo, hi = z.score_range(mn, mnex, mx, mxex)
            idx = range(hi - 1, lo - 1, -1) if reverse else range(lo, hi)
            idx = _apply_limit(idx, offset, limit)
            pairs = _take(sl, idx)
    else:
        mn, mnex, mx, mxex = rng
        if offset > 0 and offset >= len(sl):
            pairs = []
        else:
            idx = lex_indices(z, mn, mnex, mx, mxex, reverse)
            idx = _apply_limit(idx, offset, limit)
            pairs = _take(sl, idx)
    if store is not None:
        return _zrangestore_finish(c, store, pairs)
    return reply_pairs(c, pairs, withscores)


def _take(sl, idx):
    if not len(idx):
        return []
    if idx.step == 1:
        return list(sl.islice(idx.start, idx.stop))
    # descending range
    lo = idx[-1]
    hi = idx[0] + 1
    return list(sl.islice(lo, hi, reverse=True))


def _zrangestore_finish(c, dst, pairs):
    db = c.db
    if pairs:
        z = ZSetValue()
        d = z.dict
        for s, m in pairs:
            d[m] = s
        z.sl.update((s, m) for s, m in pairs)
        finish_store_result(c, z)
        db.store(dst, z)
        notify.notify(_ZSET, b"zrangestore", dst, db.id)
        c.server.dirty += 1
        return integer(len(pairs))
    db.delete_destination(dst)
    return ZERO


@command("zrange")
def zrange(c, argv):
    return _zrange_generic(c, argv, 1, None, None, None)


@command("zrangestore")
def zrangestore(c, argv):
    return _zrange_generic(c, argv, 2, argv[1], None, None)


@command("zrevrange")
def zrevrange(c, argv):
    return _zrange_generic(c, argv, 1, None, RANK, True)


@command("zrangebyscore")
def zrangebyscore(c, argv):
    return _zrange_generic(c, argv, 1, None, SCORE, False)


@command("zrevrangebyscore")
def zrevrangebyscore(c, argv):
    return _zrange_generic(c, argv, 1, None, SCORE, True)


@command("zrangebylex")
def zrangebylex(c, argv):
    return _zrange_generic(c, argv, 1, None, LEX, False)


@command("zrevrangebylex")
def zrevrangebylex(c, argv):
    return _zrange_generic(c, argv, 1, None, LEX, True)


@command("zcount")
def zcount(c, argv):
    mn, mnex, mx, mxex = parse_score_range(argv[2], argv[3])
    z = c.db.lookup_read_typed(argv[1], ZSetValue)
    if z is None:
        return ZERO
    lo, hi = z.score_range(mn, mnex, mx, mxex)
    return integer(hi - lo)


@command("zlexcount")
def zlexcount(c, argv):
    mn, mnex, mx, mxex = parse_lex_range(argv[2], argv[3])
    z = c.db.lookup_read_typed(argv[1], ZSetValue)
    if z is None:
        return ZERO
    return integer(len(lex_indices(z, mn, mnex, mx, mxex, False)))


def _zremrange(c, argv, rangetype):
    key = argv[1]
    if rangetype == RANK:
        event = b"zremrangebyrank"
        start = parse_int(argv[2])
        end = parse_int(argv[3])
    elif rangetype == SCORE:
        event = b"zremrangebyscore"
        rng = parse_score_range(argv[2], argv[3])
    else:
        event = b"zremrangebylex"
        rng = parse_lex_range(argv[2], argv[3])
    db = c.db
    z = c.db.lookup_write_typed(key, ZSetValue)
    if z is None:
        return ZERO
    if rangetype == RANK:
        b = index_range(len(z.sl), start, end)
        if b is None:
            return ZERO
        deleted = z.remove_slice(b[0], b[1] + 1)
    elif rangetype == SCORE:
        lo, hi = z.score_range(*rng)
        deleted = z.remove_slice(lo, hi)
    else:
        idx = lex_indices(z, *rng, False)
        deleted = z.remove_slice(idx.start, idx.stop) if len(idx) else 0
    if deleted:
        notify.notify(_ZSET, event, key, db.id)
        db.delete_if_empty(key, z.dict)
        c.server.dirty += deleted
    return integer(deleted)


@command("zremrangebyrank")
def zremrangebyrank(c, argv):
    return _zremrange(c, argv, RANK)


@command("zremrangebyscore")
def zremrangebyscore(c, argv):
    return _zremrange(c, argv, SCORE)


@command("zremrangebylex")
def zremrangebylex(c, argv):
    return _zremrange(c, argv, LEX)


# ---------------------------------------------------------------------------
# Pops
# ---------------------------------------------------------------------------
MIN_END, MAX_END = 0, 1


def _zpop(c, keys, where, emitkey, count, nested, nil_when_empty, repl=None):
    """genericZpopCommand.  count -1: single pop without count.

    ``repl``: how the pop replicates when it popped something (Redis's
    rewriteClientCommandVector): None leaves the command as it is; a list
    (the command's argv) means the command propagates as ZPOPMIN/ZPOPMAX."""
    db = c.db
    z = None
    key = None
    for k in keys:
        z = db.lookup_write_typed(k, ZSetValue)
        if z is not None:
            key = k
            break
    if z is None:
        return c.null_array if nil_when_empty else EMPTY_ARRAY
    if count == 0:
        return EMPTY_ARRAY
    count_arg = count
    if count == -1:
        count = 1
    ln = len(z.dict)
    rangelen = count if count < ln else ln
    sl = z.sl
    if where == MIN_END:
        popped = list(sl.islice(0, rangelen))
        del sl[0:rangelen]
    else:
        popped = list(sl.islice(ln - rangelen, ln, reverse=True))
        del sl[ln - rangelen:ln]
    d = z.dict
    for _, m in popped:
        del d[m]
    z.dels += rangelen
    c.server.dirty += rangelen
    notify.notify(_ZSET, b"zpopmax" if where == MAX_END else b"zpopmin", key, db.id)
    db.delete_if_empty(key, d)
    if repl is not None and propagating(c.server):
        new = [b"ZPOPMAX" if where == MAX_END else b"ZPOPMIN", key]
        if count_arg != -1:
            new.append(b"%d" % rangelen)
        rewrite_argv(c, new)
    resp3 = c.resp > 2
    parts = []
    ap = parts.append
    for s, m in popped:
        if nested:
            ap(b"*2\r\n")
        f = d2string(s)
        if resp3:
            ap(b"$%d\r\n%s\r\n,%s\r\n" % (len(m), m, f))
        else:
            ap(b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(m), m, len(f), f))
    body = b"".join(parts)
    kb = b"$%d\r\n%s\r\n" % (len(key), key)
    if not nested and not emitkey:
        return b"*%d\r\n" % (rangelen * 2) + body
    if nested and not emitkey:
        return b"*%d\r\n" % rangelen + body
    if not nested and emitkey:
        return b"*%d\r\n" % (rangelen * 2 + 1) + kb + body
    return b"*2\r\n" + kb + b"*%d\r\n" % rangelen + body


def _zpop_minmax(c, argv, where):
    if len(argv) > 3:
        raise SYNTAX
    count = -1
    if len(argv) == 3:
        try:
            count = parse_int(argv[2])
        except RedisError:
            count = -1
        if count < 0:
            raise RedisError("ERR value is out of range, must be positive")
    return _zpop(c, argv[1:2], where, False, count, c.resp > 2 and count != -1, False)


@command("zpopmin")
def zpopmin(c, argv):
    if len(argv) == 2:
        # Hot path: ZPOPMIN key.
        db = c.db
        key = argv[1]
        z = db.d.get(key)
        if z is None:
            return EMPTY_ARRAY
        if z.__class__ is ZSetValue and not (db.expires and key in db.expires):
            s, m = z.sl.pop(0)
            del z.dict[m]
            z.dels += 1
            c.server.dirty += 1
            if notify.flags:
                notify.notify(_ZSET, b"zpopmin", key, db.id)
            if z.dict:
                if db.watched_keys:
                    db.signal(key)
            else:
                db.delete(key)
                notify.notify(_GENERIC, b"del", key, db.id)
            f = d2string(s)
            if c.resp > 2:
                return b"*2\r\n$%d\r\n%s\r\n,%s\r\n" % (len(m), m, f)
            return b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(m), m, len(f), f)
    return _zpop_minmax(c, argv, MIN_END)


@command("zpopmax")
def zpopmax(c, argv):
    return _zpop_minmax(c, argv, MAX_END)


def _parse_numkeys(b):
    try:
        v = parse_int(b)
    except RedisError:
        raise RedisError("ERR numkeys should be greater than 0")
    if v < 1 or v > LONG_MAX:
        raise RedisError("ERR numkeys should be greater than 0")
    return v


def _parse_mpop(argv, numkeys_idx):
    n = len(argv)
    numkeys = _parse_numkeys(argv[numkeys_idx])
    where_idx = numkeys_idx + numkeys + 1
    if where_idx >= n:
        raise SYNTAX
    where = parse_keyword(argv[where_idx], {b"min": MIN_END, b"max": MAX_END})
    count = -1
    j = where_idx + 1
    while j < n:
        more = n - 1 - j
        if count == -1 and argv[j].lower() == b"count" and more:
            j += 1
            try:
                count = parse_int(argv[j])
            except RedisError:
                raise RedisError("ERR count should be greater than 0")
            if count < 1:
                raise RedisError("ERR count should be greater than 0")
        else:
            raise SYNTAX
        j += 1
    if count == -1:
        count = 1
    return argv[numkeys_idx + 1:numkeys_idx + 1 + numkeys], where, count


@command("zmpop")
def zmpop(c, argv):
    keys, where, count = _parse_mpop(argv, 1)
    return _zpop(c, keys, where, True, count, True, True, argv)


def _blocking_zpop(c, keys, where, timeout_arg, count, nested, nil_when_empty, argv=None):
    deadline = parse_timeout(timeout_arg)
    db = c.db
    for k in keys:
        v = db.lookup_write_typed(k, ZSetValue)
        if v is None or not v.dict:
            continue
        return _zpop(c, [k], where, True, count, nested, nil_when_empty, argv)
    if c.in_exec or c.in_script:
        return c.null_array
    # run again when one of keys holds a sorted set (Redis 7.2)
    c.server.blocking_handler.block_keys(c, keys, deadline, b"zset")
    return None


@command("bzpopmin")
def bzpopmin(c, argv):
    return _blocking_zpop(c, argv[1:-1], MIN_END, argv[-1], -1, False, False, argv)


@command("bzpopmax")
def bzpopmax(c, argv):
    return _blocking_zpop(c, argv[1:-1], MAX_END, argv[-1], -1, False, False, argv)


@command("bzmpop")
def bzmpop(c, argv):
    keys, where, count = _parse_mpop(argv, 2)
    return _blocking_zpop(c, keys, where, argv[1], count, True, True, argv)


# ---------------------------------------------------------------------------
# ZRANDMEMBER, ZSCAN
# ---------------------------------------------------------------------------
@command("zrandmember")
def zrandmember(c, argv):
    n = len(argv)
    if n >= 3:
        cnt = parse_int(argv[2])
        if cnt < -LONG_MAX or cnt > LONG_MAX:
            raise RedisError("ERR value is out of range, value must between %d and %d"
                             % (-LONG_MAX, LONG_MAX))
        if n > 4 or (n == 4 and argv[3].lower() != b"withscores"):
            raise SYNTAX
        withscores = n == 4
        if withscores and (cnt < -LONG_MAX // 2 or cnt > LONG_MAX // 2):
            raise RedisError("ERR value is out of range")
        z = c.db.lookup_read_typed(argv[1], ZSetValue)
        if z is None:
            return EMPTY_ARRAY
        return _zrandmember_count(c, z, cnt, withscores)
    z = c.db.lookup_read_typed(argv[1], ZSetValue)
    if z is None:
        return c.null
    s, m = z.sl[random.randrange(len(z.sl))]
    return b"$%d\r\n%s\r\n" % (len(m), m)


def _zrandmember_count(c, z, cnt, withscores):
    if cnt == 0:
        return EMPTY_ARRAY
    sl = z.sl
    size = len(sl)
    if cnt < 0:
        count = -cnt
        rr = random.randrange

        def encode(n):
            r = reply_pairs(c, [sl[rr(size)] for _ in range(n)], withscores)
            return r[r.index(b"\n") + 1:]        # without the chunk's array header
        return chunked_reply(c, b"*%d\r\n" % (2 * count if withscores and c.resp == 2 else count), count, encode)
    if cnt == 1:
        return reply_pairs(c, [sl[random.randrange(size)]], withscores)
    if cnt >= size:
        # Redis walks sorted sets from the tail here.
        return reply_pairs(c, list(reversed(sl)), withscores)
    idx = random.sample(range(size), cnt)
    return reply_pairs(c, [sl[i] for i in idx], withscores)


# ZSCAN: listpack-encoded sets are returned whole (cursor 0), as Redis does;
# skiplist-encoded ones are walked in dict order with a cursor that encodes
# the position and the removal counter (keyspace.db.dict_scan, as SCAN).
_zscan_cache: dict = {}


def _zscan_step(z, cursor, count):
    if not z.skiplist:
        return 0, [m for s, m in z.sl]
    return dict_scan(z.dict, z.dels, _zscan_cache, id(z), cursor, count)


def _ld_auto(s) -> bytes:
    return b"%.17g" % s


def _zscan_encode(z, members):
    # a listpack's scores are d2string's text; a skiplist's are printed as
    # "%.17Lg" (ld2string), as in Redis 7.0
    d = z.dict
    parts = []
    fmt = _ld_auto if z.skiplist else d2string
    for m in members:
        f = fmt(d[m])
        parts.append(b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(m), m, len(f), f))
    return 2 * len(parts), b"".join(parts)


@command("zscan")
def zscan(c, argv):
    return scan_value(c, argv, ZSetValue, _zscan_step, _zscan_encode)
