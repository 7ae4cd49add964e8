"""Set commands (t_set.c).

A set is a ``SetValue`` (a set of bytes: a Python set in pure installs,
types/_containers.pyx's SetCore, which is no set subclass, in compiled
ones: this module uses the methods both have, types/containers.py's
docstring lists them, never the set operators).  ``enc`` is what OBJECT
ENCODING reports, converted as Redis 7.2+ converts a set
(types/containers.py's set_encoding_after): b"intset" while every member
is an integer in Redis's strict form (string2ll: no sign '+', no leading
zeros, no spaces, int64 range) and the set has at most
set-max-intset-entries members; b"listpack" for a small set of short
members (set-max-listpack-entries, set-max-listpack-value); b"hashtable"
beyond, for good.  An intset iterates in ascending numeric order, so
replies built from one (SMEMBERS, SSCAN, ...) are sorted the same way here.
"""

from __future__ import annotations

import random

from ..cmdtable.registry import command
from ..errors import SYNTAX, RedisError
from ..keyspace import db as kdb
from ..keyspace import notify
from ..keyspace.db import check_type
from ..protocol.resp import ONE, ZERO, integer
from ..replication.propagate import also_propagate, propagating, rewrite_argv
from ..types import hll
from ..types.containers import (SET_HASHTABLE, SET_INTSET, SET_LISTPACK, SMALL_RANDOM, SetValue, aux_added,
                                aux_removed, pop_random, random_member, remove_members, scan_step,
                                set_encoding_after, set_encoding_new, set_limits)
from ..util import LLONG_MAX, parse_int, parse_range_long, try_int
from .hashes import picks_reply, random_unique
from .keys import length_reply, scan_value

_SET = notify.SET
_GENERIC = notify.GENERIC
INTSET = SET_INTSET
HASHTABLE = SET_HASHTABLE
_MUST_BE_POSITIVE = RedisError("ERR value is out of range, must be positive")
_SPOP_BATCH = 1024          # members per SREM that SPOP with a count propagates


def _max_intset(c) -> int:
    return set_limits(c.server.config.values)[0]


def _all_ints(items) -> bool:
    for m in items:
        if try_int(m) is None:
            return False
    return True


def new_set(c, members, start=INTSET, to_intset=False) -> SetValue:
    """A set holding members, encoded as Redis encodes a set it builds by
    adding them one by one to an empty one encoded ``start``; with
    ``to_intset``, one of integers only that an intset can hold is an
    intset whatever the start (SINTERSTORE's maybeConvertToIntset)."""
    s = members if members.__class__ is SetValue else SetValue(members)
    limits = set_limits(c.server.config.values)
    if (to_intset or start == INTSET) and len(s) <= limits[0] and _all_ints(s):
        s.enc = INTSET
    else:
        s.enc = set_encoding_after(start, 0, (), s, limits)
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
    enc = s.enc
    if enc != HASHTABLE:
        enc = _sadd_encoding(c, s, enc, n0, argv)
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
    s.enc = enc
    if added:
        db.signal(key)
        c.server.dirty += added
        if notify.flags:
            notify.notify(_SET, b"sadd", key, db.id)
    return integer(added)


def _sadd_encoding(c, s, enc, n0, argv):
    """The encoding of set ``s`` (``n0`` members, encoded ``enc``) once
    SADD has added argv's members (saddCommand: a new set is created for
    as many as are given, an existing one made a hashtable if they could
    not all fit, then each is added)."""
    limits = set_limits(c.server.config.values)
    n = len(argv) - 2
    if not n0:
        enc = set_encoding_new(argv[2], n, limits)
    elif n > (limits[1] if enc == SET_LISTPACK else limits[0]):
        return HASHTABLE
    if n == 1:
        return set_encoding_after(enc, n0, s, () if argv[2] in s else (argv[2],), limits)
    new = [m for m in dict.fromkeys(argv[2:]) if m not in s]
    return set_encoding_after(enc, n0, s, new, limits)


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
        dst.enc = set_encoding_new(m, 1, set_limits(c.server.config.values))
        db.add(dst_key, dst)
    db.signal(src_key)
    c.server.dirty += 1
    if m not in dst:
        dst.add(m)
        if dst._aux is not None:
            aux_added(dst, m)
        if dst.enc != HASHTABLE:
            dst.enc = set_encoding_after(dst.enc, len(dst) - 1, dst, (m,), set_limits(c.server.config.values))
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
            # Redis 7.2+: UNLINK when lazyfree-lazy-server-del is on
            rewrite_argv(c, [b"UNLINK" if kdb.lazy_server_del else b"DEL", key])
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
        # spopWithCountCommand's new set: a listpack unless made from an intset
        db.set_key(key, new_set(c, keep, INTSET if s.enc == INTSET else SET_LISTPACK), keepttl=True)
    if propagating(srv):
        # SREMs of at most 1024 members each (Redis 7.2+), in one MULTI
        # when there are more
        last = (count - 1) // _SPOP_BATCH * _SPOP_BATCH
        for i in range(0, last, _SPOP_BATCH):
            also_propagate(srv, [b"SREM", key] + popped[i:i + _SPOP_BATCH], db)
        rewrite_argv(c, [b"SREM", key] + popped[last:])
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


def _store(c, dst, result, event, start=INTSET, seq=None):
    """Store ``result`` at ``dst`` (an empty one deletes it); ``seq``: the
    members Redis adds to a new intset to build it (SUNIONSTORE,
    SDIFFSTORE), else ``start``: what SINTERSTORE's result starts as.
    (The order Redis adds them in is not followed: it matters only where
    set-max-listpack-entries is above set-max-intset-entries + 1.)"""
    db = c.db
    if result:
        if seq is None:
            v = new_set(c, result, start, start != INTSET)
        else:
            v = SetValue(result)
            limits = set_limits(c.server.config.values)
            if len(seq) > limits[0] and len(seq) > limits[1]:
                v.enc = HASHTABLE       # too many for an intset or a listpack whatever the order
            else:
                v.enc = set_encoding_after(INTSET, 0, (), seq, limits)
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
    start = INTSET
    if None in sets:
        result = ()
    else:
        result, first = _inter(sets)
        if result is sets[0] or any(result is s for s in sets):
            result = set(result)
        # sinterGenericCommand: the result starts as an intset when the
        # smallest set is one, else as a listpack
        if first.enc != INTSET:
            start = SET_LISTPACK
    return _store(c, argv[1], result, b"sinterstore", start)


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


def _diff_added(sets, result):
    """What SDIFFSTORE adds to its new set: the result (algorithm 1), or
    the whole first set before removing the others' members (algorithm 2,
    chosen when the first set is big next to the others)."""
    first = sets[0]
    present = [s for s in sets if s is not None]
    if len(first) * len(present) // 2 <= sum(len(s) for s in present):
        return result
    return first


@command("sunion")
def sunion(c, argv):
    result = _union(_lookup_sets(c, argv[1:]))
    return _set_reply(c, _result_order(c, result), len(result))


@command("sunionstore")
def sunionstore(c, argv):
    sets = _lookup_sets(c, argv[2:])
    result = _union(sets)
    return _store(c, argv[1], result, b"sunionstore", seq=result)


@command("sdiff")
def sdiff(c, argv):
    result = _diff(_lookup_sets(c, argv[1:]))
    return _set_reply(c, _result_order(c, result), len(result))


@command("sdiffstore")
def sdiffstore(c, argv):
    sets = _lookup_sets(c, argv[2:])
    result = _diff(sets)
    return _store(c, argv[1], result, b"sdiffstore", seq=_diff_added(sets, result) if result else None)


def _sscan_step(s, cursor, count):
    if s.enc != HASHTABLE:      # an intset or a listpack: all of it in one reply
        return 0, _ordered(s)
    return scan_step(s, cursor, count)


def _sscan_encode(s, members):
    return len(members), _bulks(members)


@command("sscan")
def sscan(c, argv):
    return scan_value(c, argv, SetValue, _sscan_step, _sscan_encode)
