"""Sorted-set algebra (t_zset.c's zunionInterDiffGenericCommand): ZUNION,
ZINTER, ZDIFF, their STORE forms, and ZINTERCARD.  The rest of the sorted-set
commands are in zsets.py."""

from __future__ import annotations

from ..cmdtable.registry import command
from ..errors import SYNTAX, RedisError
from ..keyspace import notify
from ..keyspace.db import check_type
from ..protocol.resp import ZERO, integer
from ..types.containers import SetValue
from ..types.zset import ZDict, ZSetValue
from ..util import parse_int, parse_keyword
from .numparse import string2d
from .zsets import finish_store_result, reply_pairs

_ZSET = notify.ZSET


# ---------------------------------------------------------------------------
# ZUNION / ZINTER / ZDIFF (and STORE), ZINTERCARD
# ---------------------------------------------------------------------------
UNION, INTER, DIFF = 0, 1, 2
_SUM, _MIN, _MAX, _COUNT = 0, 1, 2, 3     # COUNT (Redis 8.8): the weights of the inputs holding a member


def _src_items(v):
    """(member, score) pairs of a zset or set input (sets score 1)."""
    if v is None:
        return ()
    if v.__class__ is ZSetValue:
        return v.dict.items()
    return ((m, 1.0) for m in v)


def _src_find(v, m):
    if v.__class__ is ZSetValue:
        return v.dict.get(m)
    return 1.0 if m in v else None


def _setop(c, argv, numkeys_idx, op, dst, card_only, cmdname):
    n = len(argv)
    setnum = parse_int(argv[numkeys_idx])
    if setnum < 1:
        raise RedisError("ERR at least 1 input key is needed for '%s' command" % cmdname)
    if setnum > n - (numkeys_idx + 1):
        raise SYNTAX
    db = c.db
    srcs = []
    j = numkeys_idx + 1
    for _ in range(setnum):
        v = db.lookup_read(argv[j])
        if v is not None and v.__class__ is not ZSetValue:
            check_type(v, SetValue)     # a zset or a set
        srcs.append(v)
        j += 1
    weights = [1.0] * setnum
    aggregate = _SUM
    withscores = False
    limit = 0
    while j < n:
        opt = argv[j].lower()
        remaining = n - j
        if op != DIFF and not card_only and remaining >= setnum + 1 and opt == b"weights":
            j += 1
            for i in range(setnum):
                w = string2d(argv[j])
                if w is None:
                    raise RedisError("ERR weight value is not a float")
                weights[i] = w
                j += 1
        elif op != DIFF and not card_only and remaining >= 2 and opt == b"aggregate":
            aggregate = parse_keyword(argv[j + 1], {b"sum": _SUM, b"min": _MIN, b"max": _MAX,
                                                       b"count": _COUNT})
            j += 2
        elif remaining >= 1 and dst is None and not card_only and opt == b"withscores":
            withscores = True
            j += 1
        elif card_only and remaining >= 2 and opt == b"limit":
            try:
                limit = parse_int(argv[j + 1])
            except RedisError:
                raise RedisError("ERR LIMIT can't be negative")
            if limit < 0:
                raise RedisError("ERR LIMIT can't be negative")
            j += 2
        else:
            raise SYNTAX

    def length(v):
        return 0 if v is None else len(v) if v.__class__ is not ZSetValue else len(v.dict)

    order = list(range(setnum))
    if op != DIFF:
        order.sort(key=lambda i: length(srcs[i]))
    result = {}
    if op == INTER:
        first = order[0]
        s0 = srcs[first]
        if length(s0) > 0:
            w0 = weights[first]
            rest = [(srcs[i], weights[i]) for i in order[1:]]
            card = 0
            count = aggregate == _COUNT
            for m, sc in list(_src_items(s0)):
                score = w0 if count else w0 * sc
                if score != score:
                    score = 0.0
                ok = True
                for v, w in rest:
                    if v is s0:
                        val = w if count else sc * w
                    else:
                        val = _src_find(v, m)
                        if val is None:
                            ok = False
                            break
                        val = w if count else val * w
                    score = _aggregate(score, val, aggregate)
                if not ok:
                    continue
                if card_only:
                    card += 1
                    if limit and card >= limit:
                        break
                else:
                    result[m] = score
            if card_only:
                return integer(card)
        elif card_only:
            return ZERO
    elif op == UNION:
        for i in order:
            v = srcs[i]
            if not length(v):
                continue
            w = weights[i]
            count = aggregate == _COUNT
            for m, sc in list(_src_items(v)):
                score = w if count else w * sc
                if score != score:
                    score = 0.0
                cur = result.get(m)
                if cur is None:
                    result[m] = score
                else:
                    result[m] = _aggregate(cur, score, aggregate)
    else:
        s0 = srcs[0]
        if length(s0):
            others = [v for v in srcs[1:] if v is not None and length(v)]
            for m, sc in list(_src_items(s0)):
                for v in others:
                    if _src_find(v, m) is not None:
                        break
                else:
                    result[m] = sc
    z = ZSetValue()
    z.skiplist = True
    z.dict = result if result.__class__ is ZDict else ZDict(result)
    z.sl.update((s, m) for m, s in result.items())
    if dst is not None:
        if result:
            finish_store_result(c, z)
            db.store(dst, z)
            ev = b"zunionstore" if op == UNION else b"zinterstore" if op == INTER else b"zdiffstore"
            notify.notify(_ZSET, ev, dst, db.id)
            c.server.dirty += 1
            return integer(len(result))
        db.delete_destination(dst)
        return ZERO
    return reply_pairs(c, z.sl, withscores)


def _aggregate(target, val, aggregate):
    if aggregate == _SUM or aggregate == _COUNT:
        target += val
        if target != target:
            return 0.0
        return target
    if aggregate == _MIN:
        return val if val < target else target
    return val if val > target else target


@command("zunionstore")
def zunionstore(c, argv):
    return _setop(c, argv, 2, UNION, argv[1], False, "zunionstore")


@command("zinterstore")
def zinterstore(c, argv):
    return _setop(c, argv, 2, INTER, argv[1], False, "zinterstore")


@command("zdiffstore")
def zdiffstore(c, argv):
    return _setop(c, argv, 2, DIFF, argv[1], False, "zdiffstore")


@command("zunion")
def zunion(c, argv):
    return _setop(c, argv, 1, UNION, None, False, "zunion")


@command("zinter")
def zinter(c, argv):
    return _setop(c, argv, 1, INTER, None, False, "zinter")


@command("zdiff")
def zdiff(c, argv):
    return _setop(c, argv, 1, DIFF, None, False, "zdiff")


@command("zintercard")
def zintercard(c, argv):
    return _setop(c, argv, 1, INTER, None, True, "zintercard")
