"""Set commands (t_set.c).

A set is a ``SetValue`` (a set of bytes: a Python set in pure installs,
types/_containers.pyx's SetCore, which is no set subclass, in compiled
ones: this module uses the methods both have, types/containers.py's
docstring lists them, never the set operators).  ``enc`` is what OBJECT
ENCODING reports: b"intset" while every member is an integer in Redis's
strict form (string2ll: no sign '+', no leading zeros, no spaces, int64
range) and the set has at most set-max-intset-entries members; adding a
non-integer or growing past the limit makes it b"hashtable" for good.
An intset iterates in ascending numeric order, so replies built from one
(SMEMBERS, SSCAN, ...) are sorted the same way here.
"""

from __future__ import annotations

import random

from ..cmdtable.registry import command
from ..errors import SYNTAX, RedisError
from ..keyspace import notify
from ..keyspace.db import check_type
from ..protocol.resp import ONE, ZERO, integer
from ..replication.propagate import propagating, rewrite_argv
from ..types import hll
from ..types.containers import (SMALL_RANDOM, SetValue, aux_added, aux_removed, pop_random, random_member,
                                remove_members, scan_step)
from ..util import LLONG_MAX, parse_int, parse_range_long, try_int
from .hashes import picks_reply, random_unique
from .keys import length_reply, scan_value

_SET = notify.SET
_GENERIC = notify.GENERIC
INTSET = b"intset"
HASHTABLE = b"hashtable"
_INTSET_CAP = 1 << 30
_MUST_BE_POSITIVE = RedisError("ERR value is out of range, must be positive")


def _max_intset(c) -> int:
    m = c.server.config.values["set-max-intset-entries"]
    return m if m < _INTSET_CAP else _INTSET_CAP


def _all_ints(items) -> bool:
    for m in items:
        if try_int(m) is None:
            return False
    return True


def new_set(c, members) -> SetValue:
    """A set holding members, encoded as Redis would encode a set built by
    adding them one by one."""
    s = members if members.__class__ is SetValue else SetValue(members)
    if len(s) > _max_intset(c) or not _all_ints(s):
        s.enc = HASHTABLE
    else:
        s.enc = INTSET
    return s


def _ordered(s):
    """Iteration order of a set: ascending numbers for an intset."""
    if s.enc == INTSET:
        return sorted(s, key=int)
    return s


def _result_order(c, result):
    """Order of a temporary result set Redis builds by adding to an intset."""
    if len(result) <= _max_intset(c) and _all_ints(result):
        return sorted(result, key=int)
    return result


def _bulks(items) -> bytes:
    return b"".join([b"$%d\r\n%s\r\n" % (len(x), x) for x in items])


def _set_reply(c, items, n) -> bytes:
    return (b"~%d\r\n" if c.resp >= 3 else b"*%d\r\n") % n + _bulks(items)


@command("sadd")
def sadd(c, argv):
    db = c.db
    key = argv[1]
    s = db.lookup_write_typed(key, SetValue, True)      # create: positional on this hot path
    n0 = len(s)
    if s._aux is None:
        if len(argv) == 3:
            s.add(argv[2])
        else:
            s.update(argv[2:])
    else:
        for m in argv[2:]:
            if m not in s:
                s.add(m)
                aux_added(s, m)
    added = len(s) - n0
    if added:
        if s.enc == INTSET:
            if len(s) > _max_intset(c) or not _all_ints(argv[2:]):
                s.enc = HASHTABLE
        db.signal(key)
        c.server.dirty += added
        if notify.flags:
            notify.notify(_SET, b"sadd", key, db.id)
    return integer(added)


@command("srem")
def srem(c, argv):
    return integer(remove_members(c, argv, SetValue, SetValue.remove, _SET, b"srem"))


@command("smove")
def smove(c, argv):
    db = c.db
    src_key, dst_key, m = argv[1], argv[2], argv[3]
    src = db.lookup_write(src_key)
    dst = db.lookup_write(dst_key)
    if src is None:
        return ZERO
    # smoveCommand: no source answers 0 whatever the destination holds
    check_type(src, SetValue)
    if dst is not None:
        check_type(dst, SetValue)
    if src is dst:
        return ONE if m in src else ZERO
    if m not in src:
        return ZERO
    src.remove(m)
    if src._aux is not None:
        aux_removed(src, m)
    notify.notify(_SET, b"srem", src_key, db.id)
    if not src:
        db.delete(src_key)
        notify.notify(_GENERIC, b"del", src_key, db.id)
    if dst is None:
        dst = SetValue()
        db.add(dst_key, dst)
    db.signal(src_key)
    c.server.dirty += 1
    if m not in dst:
        dst.add(m)
        if dst._aux is not None:
            aux_added(dst, m)
        if dst.enc == INTSET and (len(dst) > _max_intset(c) or try_int(m) is None):
            dst.enc = HASHTABLE
        c.server.dirty += 1
        db.signal(dst_key)
        notify.notify(_SET, b"sadd", dst_key, db.id)
    return ONE


@command("sismember")
def sismember(c, argv):
    s = c.db.lookup_read_typed(argv[1], SetValue)
    return ONE if s is not None and argv[2] in s else ZERO


@command("smismember")
def smismember(c, argv):
    s = c.db.lookup_read_typed(argv[1], SetValue)
    if s is None:
        s = ()
    return b"*%d\r\n" % (len(argv) - 2) + b"".join([ONE if m in s else ZERO for m in argv[2:]])


@command("scard")
def scard(c, argv):
    return length_reply(c, argv[1], SetValue)


@command("spop")
def spop(c, argv):
    n = len(argv)
    if n == 3:
        return _spop_count(c, argv)
    if n > 3:
        raise SYNTAX
    db = c.db
    key = argv[1]
    s = db.lookup_write_typed(key, SetValue)
    if s is None:
        return c.null
    m = pop_random(s)
    if notify.flags:
        notify.notify(_SET, b"spop", key, db.id)
    db.delete_if_empty(key, s)
    c.server.dirty += 1
    if propagating(c.server):
        rewrite_argv(c, [b"SREM", key, m])
    return b"$%d\r\n%s\r\n" % (len(m), m)


def _spop_count(c, argv):
    count = parse_int(argv[2], _MUST_BE_POSITIVE)
    if count < 0:
        raise _MUST_BE_POSITIVE
    db = c.db
    key = argv[1]
    s = c.db.lookup_write_typed(key, SetValue)
    if s is None or count == 0:
        return b"~0\r\n" if c.resp >= 3 else b"*0\r\n"
    size = len(s)
    notify.notify(_SET, b"spop", key, db.id)
    srv = c.server
    srv.dirty += size if count >= size else count
    if count >= size:
        # The whole set, in the order of a union of it.
        items = _result_order(c, s)
        db.delete(key)
        notify.notify(_GENERIC, b"del", key, db.id)
        if propagating(srv):
            rewrite_argv(c, [b"DEL", key])
        return _set_reply(c, items, size)
    remaining = size - count
    if remaining * 5 > count:
        # Few elements out: extract them one by one.
        if s._aux is None and (size <= 1024 or count * 8 >= size):
            popped = random.sample(tuple(s), count)
            s.difference_update(popped)
        else:
            popped = [pop_random(s) for _ in range(count)]
        db.signal(key)
    else:
        # Most elements out: pick the ones that stay, in a new set.
        keep = random.sample(tuple(s), remaining)
        ordered = _ordered(s)
        kept = set(keep)
        popped = [m for m in ordered if m not in kept]
        db.set_key(key, new_set(c, keep), keepttl=True)
    if propagating(srv):
        rewrite_argv(c, [b"SREM", key] + popped)
    return _set_reply(c, popped, count)


@command("srandmember")
def srandmember(c, argv):
    n = len(argv)
    if n > 3:
        raise SYNTAX
    if n == 3:
        l = parse_range_long(argv[2], -LLONG_MAX, LLONG_MAX)
        s = c.db.lookup_read_typed(argv[1], SetValue)
        if s is None or l == 0:
            return b"*0\r\n"
        if l < 0 or l == 1:
            count = -l if l < 0 else 1
            return picks_reply(c, s, count, b"*%d\r\n" % count, _bulks)
        size = len(s)
        if l >= size:
            return b"*%d\r\n" % size + _bulks(_ordered(s))
        if l * 3 > size:
            picks = random.sample(tuple(s), l)
        else:
            picks = random_unique(s, l)
        return b"*%d\r\n" % l + _bulks(picks)
    s = c.db.lookup_read_typed(argv[1], SetValue)
    if s is None:
        return c.null
    if len(s) <= SMALL_RANDOM:
        m = random.choice(tuple(s))
    else:
        m = random_member(s)
    return b"$%d\r\n%s\r\n" % (len(m), m)


def _lookup_sets(c, keys):
    """Values of keys (None for missing ones); WRONGTYPE on any non-set."""
    read = c.db.lookup_read_typed
    return [read(k, SetValue) for k in keys]


def _store(c, dst, result, event):
    db = c.db
    if result:
        v = new_set(c, result)
        db.set_key(dst, v)
        notify.notify(_SET, event, dst, db.id)
        c.server.dirty += 1
        return integer(len(v))
    db.delete_destination(dst)
    return ZERO


def _inter(sets):
    """Intersection of present sets, plus the smallest one (for order)."""
    sets = sorted(sets, key=len)
    first = sets[0]
    if len(sets) == 1:
        return first, first
    return first.intersection(*sets[1:]), first


@command("sinter")
def sinter(c, argv):
    sets = _lookup_sets(c, argv[1:])
    if None in sets:
        return b"~0\r\n" if c.resp >= 3 else b"*0\r\n"
    result, first = _inter(sets)
    items = sorted(result, key=int) if first.enc == INTSET else result
    return _set_reply(c, items, len(result))


@command("smembers")
def smembers(c, argv):
    s = c.db.lookup_read_typed(argv[1], SetValue)
    if s is None:
        return b"~0\r\n" if c.resp >= 3 else b"*0\r\n"
    return _set_reply(c, _ordered(s), len(s))


@command("sinterstore")
def sinterstore(c, argv):
    sets = _lookup_sets(c, argv[2:])
    if None in sets:
        result = ()
    else:
        result = _inter(sets)[0]
        if result is sets[0] or any(result is s for s in sets):
            result = set(result)
    return _store(c, argv[1], result, b"sinterstore")


@command("sintercard")
def sintercard(c, argv):
    numkeys = parse_range_long(argv[1], 1, LLONG_MAX, "ERR numkeys should be greater than 0")
    n = len(argv)
    if numkeys > n - 2:
        raise RedisError("ERR Number of keys can't be greater than number of args")
    limit = 0
    j = 2 + numkeys
    while j < n:
        if argv[j].lower() == b"limit" and j + 1 < n:
            j += 1
            limit = parse_range_long(argv[j], 0, LLONG_MAX, "ERR LIMIT can't be negative")
        else:
            raise SYNTAX
        j += 1
    sets = _lookup_sets(c, argv[2:2 + numkeys])
    if None in sets:
        return ZERO
    sets.sort(key=len)
    first = sets[0]
    others = sets[1:]
    if not limit:
        if not others:
            return integer(len(first))
        return integer(len(first.intersection(*others)))
    card = 0
    for m in first:
        for o in others:
            if m not in o:
                break
        else:
            card += 1
            if card >= limit:
                break
    return integer(card)


def _card_args(argv, approx_ok):
    """numkeys key [key ...] [APPROX] [LIMIT limit] of SUNIONCARD/SDIFFCARD
    (SINTERCARD's rules and errors): (keys, approx, limit)."""
    numkeys = parse_range_long(argv[1], 1, LLONG_MAX, "ERR numkeys should be greater than 0")
    n = len(argv)
    if numkeys > n - 2:
        raise RedisError("ERR Number of keys can't be greater than number of args")
    limit = 0
    approx = False
    j = 2 + numkeys
    while j < n:
        opt = argv[j].lower()
        if opt == b"limit" and j + 1 < n:
            j += 1
            limit = parse_range_long(argv[j], 0, LLONG_MAX, "ERR LIMIT can't be negative")
        elif opt == b"approx" and approx_ok:
            approx = True
        else:
            raise SYNTAX
        j += 1
    return argv[2:2 + numkeys], approx, limit


@command("sunioncard")
def sunioncard(c, argv):
    """SUNIONCARD (Redis 8.10): the union's cardinality; APPROX: the
    HyperLogLog estimate of its members (PFADD of all of them, PFCOUNT)."""
    keys, approx, limit = _card_args(argv, True)
    sets = [s for s in _lookup_sets(c, keys) if s]
    if approx:
        regs = bytearray(hll.REGISTERS)
        for s in sets:
            for idx, cnt in hll.pat_lens(list(s)):
                if cnt > regs[idx]:
                    regs[idx] = cnt
        card = hll.raw_count(bytes(regs))
    elif len(sets) == 1:
        card = len(sets[0])
    else:
        card = len(set().union(*sets))
    return integer(min(card, limit) if limit else card)


@command("sdiffcard")
def sdiffcard(c, argv):
    """SDIFFCARD (Redis 8.10): how many members of the first set are in none
    of the others (at most LIMIT)."""
    keys, _, limit = _card_args(argv, False)
    sets = _lookup_sets(c, keys)
    first = sets[0]
    if not first:
        return ZERO
    others = [s for s in sets[1:] if s]
    card = 0
    for m in first:
        for o in others:
            if m in o:
                break
        else:
            card += 1
            if card == limit:
                break
    return integer(card)


def _union(sets):
    present = [s for s in sets if s is not None]
    if not present:
        return set()
    return set().union(*present)


def _diff(sets):
    first = sets[0]
    if first is None:
        return set()
    others = [s for s in sets[1:] if s is not None]
    if any(o is first for o in others):
        return set()
    return first.difference(*others)


@command("sunion")
def sunion(c, argv):
    result = _union(_lookup_sets(c, argv[1:]))
    return _set_reply(c, _result_order(c, result), len(result))


@command("sunionstore")
def sunionstore(c, argv):
    return _store(c, argv[1], _union(_lookup_sets(c, argv[2:])), b"sunionstore")


@command("sdiff")
def sdiff(c, argv):
    result = _diff(_lookup_sets(c, argv[1:]))
    return _set_reply(c, _result_order(c, result), len(result))


@command("sdiffstore")
def sdiffstore(c, argv):
    return _store(c, argv[1], _diff(_lookup_sets(c, argv[2:])), b"sdiffstore")


def _sscan_step(s, cursor, count):
    if s.enc == INTSET:
        return 0, _ordered(s)
    return scan_step(s, cursor, count)


def _sscan_encode(s, members):
    return len(members), _bulks(members)


@command("sscan")
def sscan(c, argv):
    return scan_value(c, argv, SetValue, _sscan_step, _sscan_encode)
