"""List commands (t_list.c semantics): pushes, pops, ranges, LPOS, moves and
the blocking variants BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP; Redis 8.10's
LMOVEM and BLMOVEM (several elements moved at once).

A list is a ``ListValue`` (types/containers.py: packed nodes when the
compiled module is loaded, else a deque of bytes).  Its encoding is Redis
7.2's: a listpack while small, else a quicklist, converted both ways by
``list-max-listpack-size`` (types/containers.py's "Lists' encodings": the
commands call list_grow before adding elements and list_shrunk after
removing some, where t_list.c calls listTypeTryConversion*).

Speed notes: the work per element is kept in C wherever possible.  LRANGE's
reply is written straight from the packed nodes (``bulk_range``); with the
pure twin ranges are cut with ``islice`` from whichever end is nearer and
replies are assembled by interleaving cached ``$<len>`` headers with the
elements through slice assignment and a single ``b"\\r\\n".join``; searches
(LPOS, LREM, LINSERT) use ``operator.indexOf``/``index``/``count``.
"""

from __future__ import annotations

from itertools import islice
from operator import indexOf

from ..cmdtable.registry import command
from ..errors import SYNTAX, RedisError
from ..keyspace import notify
from ..keyspace.blocking import parse_timeout
from ..keyspace.db import WRONGTYPE_ERR, signal_key_ready
from ..protocol.resp import EMPTY_ARRAY, MINUS_ONE, OK, ZERO, bulk_items, integer
from ..replication.propagate import rewrite_argv
from ..types.containers import ListValue, list_grow, list_grow_one, list_range_reply, list_shrunk
from ..util import LLONG_MAX, LLONG_MIN, index_range, parse_int, parse_keyword, parse_range_long

_LIST = notify.LIST
_GENERIC = notify.GENERIC

_INDEX_RANGE = RedisError("ERR index out of range")
_NO_SUCH_KEY = RedisError("ERR no such key")
_POSITIVE = RedisError("ERR value is out of range, must be positive")
_RANK_ZERO = RedisError(
    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... "
    "or use negative to start from the end of the list")
_COUNT_NEG = RedisError("ERR COUNT can't be negative")
_MAXLEN_NEG = RedisError("ERR MAXLEN can't be negative")
_NUMKEYS = RedisError("ERR numkeys should be greater than 0")
_COUNT_GT0 = RedisError("ERR count should be greater than 0")


def _py_range_reply(v, start, end) -> bytes:
    return bulk_items(v.range(start, end))


# LRANGE's reply (Redis's index rules); compiled: written from the nodes
_range_reply = list_range_reply or _py_range_reply


def _bulk(x) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(x), x)


_LEFT_RIGHT = {b"left": True, b"right": False}
def _shrunk(db, key, v):
    """After elements left v (the list at key): its key goes when it is
    empty (a "del" event), else a quicklist may become a listpack; the
    change is signalled (WATCH)."""
    if v and v.quick:
        list_shrunk(v)
    db.delete_if_empty(key, v)


def _where(arg) -> bool:
    """LEFT -> True, RIGHT -> False."""
    return parse_keyword(arg, _LEFT_RIGHT)


# ---------------------------------------------------------------------------
# Housekeeping
# ---------------------------------------------------------------------------
def _removed(c, db, key, v, left, n):
    """Housekeeping after popping n elements (listElementsRemoved)."""
    if v and v.quick:
        list_shrunk(v)
    if notify.flags:
        notify.notify(_LIST, b"lpop" if left else b"rpop", key, db.id)
        db.delete_if_empty(key, v)
    elif not v:
        db.delete(key)
    else:
        wk = db.watched_keys
        if wk and key in wk:
            db.signal(key)
    c.server.dirty += n


def _push_one(c, db, key, v, x, left):
    """Push x on key whose value is v (None: create).  Used by LMOVE."""
    if v is None:
        db.add(key, _new_list((x,)))
    else:
        if not v.quick:
            list_grow_one(v, x)
        if left:
            v.appendleft(x)
        else:
            v.append(x)
        db.signal(key)
        signal_key_ready(db, key)
    if notify.flags:
        notify.notify(_LIST, b"lpush" if left else b"rpush", key, db.id)


# ---------------------------------------------------------------------------
# Pushes
# ---------------------------------------------------------------------------
def _push(c, argv, left, xx):
    # db.lookup_write_typed(key, ListValue) written out: LPUSH/RPUSH and
    # LPOP/RPOP are hot paths, where the call costs ~3% of the instructions
    db = c.db
    key = argv[1]
    v = db.d.get(key)
    if v is not None and db.expires:
        v = db.lookup_write(key)
    if v is None:
        if xx:
            return ZERO
        v = ListValue()
        list_grow(v, argv[2:])
        if len(argv) == 3:
            v.append(argv[2])
        elif left:
            v.extendleft(islice(argv, 2, None))
        else:
            v.extend(islice(argv, 2, None))
        db.add(key, v)
    else:
        if v.__class__ is not ListValue:
            raise WRONGTYPE_ERR
        if not v.quick:
            list_grow(v, argv[2:])
        if len(argv) == 3:
            if left:
                v.appendleft(argv[2])
            else:
                v.append(argv[2])
        elif left:
            v.extendleft(islice(argv, 2, None))
        else:
            v.extend(islice(argv, 2, None))
        wk = db.watched_keys
        if wk and key in wk:
            db.signal(key)
        if db.blocking_keys:
            signal_key_ready(db, key)
    c.server.dirty += len(argv) - 2
    if notify.flags:
        notify.notify(_LIST, b"lpush" if left else b"rpush", key, db.id)
    return integer(len(v))


@command("lpush")
def lpush(c, argv):
    return _push(c, argv, True, False)


@command("rpush")
def rpush(c, argv):
    return _push(c, argv, False, False)


@command("lpushx")
def lpushx(c, argv):
    return _push(c, argv, True, True)


@command("rpushx")
def rpushx(c, argv):
    return _push(c, argv, False, True)


# ---------------------------------------------------------------------------
# Pops
# ---------------------------------------------------------------------------
def _pop(c, argv, left):
    n = len(argv)
    if n > 3:
        raise RedisError("ERR wrong number of arguments for '%s' command" % ("lpop" if left else "rpop"))
    count = 0
    if n == 3:
        count = parse_int(argv[2], _POSITIVE)
        if count < 0:
            raise _POSITIVE
    db = c.db
    key = argv[1]
    v = db.d.get(key)              # lookup_write_typed written out, as in _push
    if v is not None and db.expires:
        v = db.lookup_write(key)
    if v is None:
        return c.null_array if n == 3 else c.null
    if v.__class__ is not ListValue:
        raise WRONGTYPE_ERR
    if n == 2:
        x = v.popleft() if left else v.pop()
        _removed(c, db, key, v, left, 1)
        return b"$%d\r\n%s\r\n" % (len(x), x)
    if not count:
        return EMPTY_ARRAY
    items = v.popn(count, left)
    _removed(c, db, key, v, left, len(items))
    return bulk_items(items)


@command("lpop")
def lpop(c, argv):
    return _pop(c, argv, True)


@command("rpop")
def rpop(c, argv):
    return _pop(c, argv, False)


# ---------------------------------------------------------------------------
# Reads
# ---------------------------------------------------------------------------
@command("llen")
def llen(c, argv):
    v = c.db.lookup_read_typed(argv[1], ListValue)
    return ZERO if v is None else integer(len(v))


@command("lrange")
def lrange(c, argv):
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    v = c.db.lookup_read_typed(argv[1], ListValue)
    if v is None:
        return EMPTY_ARRAY
    return _range_reply(v, start, end)


@command("lindex")
def lindex(c, argv):
    v = c.db.lookup_read_typed(argv[1], ListValue)
    if v is None:
        return c.null
    i = parse_int(argv[2])
    try:
        x = v[i]
    except IndexError:
        return c.null
    return b"$%d\r\n%s\r\n" % (len(x), x)


@command("lpos")
def lpos(c, argv):
    elem = argv[2]
    rank = 1
    count = -1
    maxlen = 0
    n = len(argv)
    j = 3
    while j < n:
        opt = argv[j].lower()
        more = j + 1 < n
        if opt == b"rank" and more:
            j += 1
            # Redis 7.2: -LLONG_MAX..LLONG_MAX (a LLONG_MIN rank is refused)
            rank = parse_range_long(argv[j], -LLONG_MAX, LLONG_MAX)
            if rank == 0:
                raise _RANK_ZERO
        elif opt == b"count" and more:
            j += 1
            count = parse_int(argv[j], _COUNT_NEG)
            if count < 0:
                raise _COUNT_NEG
        elif opt == b"maxlen" and more:
            j += 1
            maxlen = parse_int(argv[j], _MAXLEN_NEG)
            if maxlen < 0:
                raise _MAXLEN_NEG
        else:
            raise SYNTAX
        j += 1
    reverse = rank < 0
    if reverse:
        # Redis negates a C long: -LLONG_MIN stays negative, so every match
        # qualifies (the first one from the tail).
        rank = 1 if rank == LLONG_MIN else -rank
    v = c.db.lookup_read_typed(argv[1], ListValue)
    if v is None:
        return EMPTY_ARRAY if count != -1 else c.null
    llen = len(v)
    stop = llen if maxlen == 0 or maxlen > llen else maxlen
    it = islice(reversed(v), stop) if reverse else islice(v, stop)
    found = []
    base = 0
    seen = 0
    while True:
        try:
            idx = base + indexOf(it, elem)
        except ValueError:
            break
        base = idx + 1
        seen += 1
        if seen >= rank:
            found.append(llen - 1 - idx if reverse else idx)
            if count == -1 or (count and len(found) >= count):
                break
    if count != -1:
        return b"*%d\r\n" % len(found) + b"".join([b":%d\r\n" % i for i in found])
    if found:
        return integer(found[0])
    return c.null


# ---------------------------------------------------------------------------
# In-place changes
# ---------------------------------------------------------------------------
@command("lset")
def lset(c, argv):
    db = c.db
    key = argv[1]
    v = db.lookup_write_typed(key, ListValue)
    if v is None:
        raise _NO_SUCH_KEY
    i = parse_int(argv[2])
    # (the check comes first, as in Redis: a bad index may convert too)
    list_grow_one(v, argv[3])
    try:
        v[i] = argv[3]
    except IndexError:
        raise _INDEX_RANGE
    if v.quick:
        list_shrunk(v)
    db.signal(key)
    notify.notify(_LIST, b"lset", key, db.id)
    c.server.dirty += 1
    return OK


@command("linsert")
def linsert(c, argv):
    after = parse_keyword(argv[2], {b"after": True, b"before": False})
    db = c.db
    key = argv[1]
    v = db.lookup_write_typed(key, ListValue)
    if v is None:
        return ZERO
    # the listpack made a quicklist before the pivot is sought, as Redis does
    list_grow_one(v, argv[4])
    try:
        i = v.index(argv[3])
    except ValueError:
        return MINUS_ONE
    v.insert(i + 1 if after else i, argv[4])
    db.signal(key)
    signal_key_ready(db, key)   # a BLMOVEM EXACTLY may wait for the list to grow
    notify.notify(_LIST, b"linsert", key, db.id)
    c.server.dirty += 1
    return integer(len(v))


@command("lrem")
def lrem(c, argv):
    toremove = parse_int(argv[2])
    db = c.db
    key = argv[1]
    v = db.lookup_write_typed(key, ListValue)
    if v is None:
        return ZERO
    elem = argv[3]
    total = v.count(elem)
    k = total if toremove == 0 else min(abs(toremove), total)
    if k:
        if k == total and (k > 8 or elem.__class__ is not bytes):
            # Remove every occurrence: rebuild in C.
            if elem.__class__ is bytes:
                kept = list(filter(elem.__ne__, v))
            else:
                kept = [x for x in v if x != elem]
            v.clear()
            v.extend(kept)
        elif k <= 16:
            it = reversed(v) if toremove < 0 else iter(v)
            pos = []
            base = 0
            for _ in range(k):
                i = base + indexOf(it, elem)
                base = i + 1
                pos.append(i)
            llen = len(v)
            if toremove < 0:
                pos = [llen - 1 - i for i in pos]
                pos.reverse()
            for i in reversed(pos):
                del v[i]
        else:
            src = reversed(v) if toremove < 0 else v
            kept = []
            ap = kept.append
            left = k
            for x in src:
                if left and x == elem:
                    left -= 1
                else:
                    ap(x)
            if toremove < 0:
                kept.reverse()
            v.clear()
            v.extend(kept)
        c.server.dirty += k
        db.signal(key)
        notify.notify(_LIST, b"lrem", key, db.id)
        if not v:
            db.delete(key)
            notify.notify(_GENERIC, b"del", key, db.id)
        elif v.quick:
            list_shrunk(v)
    return integer(k)


@command("ltrim")
def ltrim(c, argv):
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    db = c.db
    key = argv[1]
    v = db.lookup_write_typed(key, ListValue)
    if v is None:
        return OK
    llen = len(v)
    b = index_range(llen, start, end)
    if b is None:
        ltrim_n, rtrim_n = llen, 0
    else:
        ltrim_n, rtrim_n = b[0], llen - b[1] - 1
    removed = ltrim_n + rtrim_n
    if removed:
        kept = llen - removed
        if kept == 0:
            v.clear()
        elif removed > 32 and kept < removed * 4:
            items = v.range(ltrim_n, ltrim_n + kept - 1)
            v.clear()
            v.extend(items)
        else:
            pl = v.popleft
            for _ in range(ltrim_n):
                pl()
            pr = v.pop
            for _ in range(rtrim_n):
                pr()
    notify.notify(_LIST, b"ltrim", key, db.id)
    _shrunk(db, key, v)
    c.server.dirty += removed
    return OK


# ---------------------------------------------------------------------------
# Moves
# ---------------------------------------------------------------------------
def _lmove(c, src, dst, from_left, to_left):
    db = c.db
    sv = db.lookup_write_typed(src, ListValue)
    if not sv:
        return c.null
    dv = db.lookup_write_typed(dst, ListValue)
    x = sv.popleft() if from_left else sv.pop()
    _push_one(c, db, dst, dv, x, to_left)
    notify.notify(_LIST, b"lpop" if from_left else b"rpop", src, db.id)
    _shrunk(db, src, sv)
    c.server.dirty += 1
    return _bulk(x)


@command("lmove")
def lmove(c, argv):
    from_left = _where(argv[3])
    to_left = _where(argv[4])
    return _lmove(c, argv[1], argv[2], from_left, to_left)


@command("rpoplpush")
def rpoplpush(c, argv):
    return _lmove(c, argv[1], argv[2], False, True)


def _parse_mpop(argv, numkeys_idx):
    """LMPOP/BLMPOP arguments -> (keys, left, count)."""
    numkeys = parse_int(argv[numkeys_idx], _NUMKEYS)
    if numkeys < 1:
        raise _NUMKEYS
    n = len(argv)
    where_idx = numkeys_idx + numkeys + 1
    if where_idx >= n:
        raise SYNTAX
    left = _where(argv[where_idx])
    count = -1
    j = where_idx + 1
    while j < n:
        if count == -1 and argv[j].lower() == b"count" and j + 1 < n:
            count = parse_int(argv[j + 1], _COUNT_GT0)
            if count < 1 or count > LLONG_MAX:
                raise _COUNT_GT0
            j += 2
        else:
            raise SYNTAX
    if count == -1:
        count = 1
    return argv[numkeys_idx + 1:where_idx], left, count


def _mpop_reply(c, db, key, v, left, count):
    items = v.popn(count, left)
    _removed(c, db, key, v, left, len(items))
    return b"*2\r\n$%d\r\n%s\r\n" % (len(key), key) + bulk_items(items)


def _first_nonempty(db, keys):
    for key in keys:
        v = db.lookup_write_typed(key, ListValue)
        if v:
            return key, v
    return None, None


@command("lmpop")
def lmpop(c, argv):
    keys, left, count = _parse_mpop(argv, 1)
    db = c.db
    key, v = _first_nonempty(db, keys)
    if key is None:
        return c.null_array
    n = min(count, len(v))
    reply = _mpop_reply(c, db, key, v, left, count)
    rewrite_argv(c, [b"LPOP" if left else b"RPOP", key, b"%d" % n])
    return reply


# ---------------------------------------------------------------------------
# Blocking variants
# ---------------------------------------------------------------------------
def _may_block(c) -> bool:
    return not (c.in_exec or c.in_script)


def _block(c, keys, deadline):
    """The client waits for a list at one of keys; its command then runs
    again (Redis 7.2), and a timeout answers a null array (BLMOVE's too:
    replyToBlockedClientTimedOut; only the "may not block" path, MULTI and
    scripts, replies BLMOVE's null bulk)."""
    c.server.blocking_handler.block_keys(c, keys, deadline, b"list")


def _pop_or_block(c, keys, deadline, pop):
    """BLPOP, BRPOP, BLMPOP: ``pop(db, key, v)``, the reply, at once when
    one of keys holds a list; else (unless the client may not block: a null
    array) the client blocks until one of keys is pushed to."""
    db = c.db
    key, v = _first_nonempty(db, keys)
    if key is not None:
        return pop(db, key, v)
    if not _may_block(c):
        return c.null_array
    _block(c, keys, deadline)
    return None


def _bpop(c, argv, left):
    deadline = parse_timeout(argv[-1])

    def pop(db, key, v):
        x = v.popleft() if left else v.pop()
        _removed(c, db, key, v, left, 1)
        rewrite_argv(c, [b"LPOP" if left else b"RPOP", key])
        return b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(x), x)

    return _pop_or_block(c, argv[1:-1], deadline, pop)


@command("blpop")
def blpop(c, argv):
    return _bpop(c, argv, True)


@command("brpop")
def brpop(c, argv):
    return _bpop(c, argv, False)


@command("blmpop")
def blmpop(c, argv):
    keys, left, count = _parse_mpop(argv, 2)
    deadline = parse_timeout(argv[1])

    def pop(db, key, v):
        n = min(count, len(v))
        reply = _mpop_reply(c, db, key, v, left, count)
        rewrite_argv(c, [b"LPOP" if left else b"RPOP", key, b"%d" % n])
        return reply

    return _pop_or_block(c, keys, deadline, pop)


def _blmove(c, argv, src, dst, from_left, to_left, deadline, brpoplpush):
    db = c.db
    sv = db.lookup_write_typed(src, ListValue)
    if sv:
        reply = _lmove(c, src, dst, from_left, to_left)
        if brpoplpush:
            rewrite_argv(c, [b"RPOPLPUSH", src, dst])
        else:
            # the ends as the client wrote them (Redis's rewrite keeps argv)
            rewrite_argv(c, [b"LMOVE", src, dst, argv[3], argv[4]])
        return reply
    if not _may_block(c):
        return c.null
    _block(c, [src], deadline)
    return None


@command("blmove")
def blmove(c, argv):
    from_left = _where(argv[3])
    to_left = _where(argv[4])
    deadline = parse_timeout(argv[5])
    return _blmove(c, argv, argv[1], argv[2], from_left, to_left, deadline, False)


@command("brpoplpush")
def brpoplpush(c, argv):
    deadline = parse_timeout(argv[3])
    return _blmove(c, argv, argv[1], argv[2], False, True, deadline, True)


# ---------------------------------------------------------------------------
# LMOVEM / BLMOVEM (Redis 8.10)
# ---------------------------------------------------------------------------
_SELECTOR = {b"count": False, b"exactly": True}
_ORDERING = {b"obo": False, b"bulk": True}


def _parse_movem(argv, at):
    """The optional ``COUNT|EXACTLY n OBO|BULK`` block from argv[at] ->
    (count, exactly, bulk, given); without it one element, as LMOVE."""
    rest = len(argv) - at
    if rest == 0:
        return 1, False, False, False
    if rest != 3:
        raise SYNTAX
    exactly = parse_keyword(argv[at], _SELECTOR)
    count = parse_int(argv[at + 1], _COUNT_GT0)
    if count < 1:
        raise _COUNT_GT0
    bulk = parse_keyword(argv[at + 2], _ORDERING)
    return count, exactly, bulk, True


def _movem(c, db, src, dst, sv, from_left, to_left, n, bulk):
    """Move n elements (1 <= n <= len(sv)) from one end of sv (the list at
    src) to one end of dst; the reply lists them in destination order.

    The block taken is the n elements at the source's end; OBO pushes them
    one at a time in the order they were popped, BULK keeps their order in
    the source.  The destination's type is checked before anything moves."""
    dv = sv if dst == src else db.lookup_write_typed(dst, ListValue)
    popped = sv.popn(n, from_left)          # in popping order
    if dv is not None:
        list_grow(dv, popped)
    if bulk:
        if not from_left:
            popped.reverse()                # back to source order
        moved = popped                      # destination order, either end
        if dv is None:
            db.add(dst, _new_list(moved))
        else:
            if to_left:
                dv.extendleft(reversed(moved))
            else:
                dv.extend(moved)
    else:
        if to_left:
            moved = popped[::-1]
            if dv is not None:
                dv.extendleft(popped)
        else:
            moved = popped
            if dv is not None:
                dv.extend(popped)
        if dv is None:
            db.add(dst, _new_list(moved))
    if dv is not None:
        db.signal(dst)
        signal_key_ready(db, dst)
    if notify.flags:
        notify.notify(_LIST, b"lpush" if to_left else b"rpush", dst, db.id)
        notify.notify(_LIST, b"lpop" if from_left else b"rpop", src, db.id)
    _shrunk(db, src, sv)
    c.server.dirty += n
    return bulk_items(moved)


def _new_list(items):
    """A new list of items, pushed onto a new (listpack) list as a push
    makes one."""
    v = ListValue()
    list_grow(v, items)
    v.extend(items)
    return v


def _movem_needed(sv, count, exactly):
    """How many elements a move takes from sv (None: it cannot be served)."""
    if not sv:
        return None
    if exactly:
        return count if len(sv) >= count else None
    return min(count, len(sv))


@command("lmovem")
def lmovem(c, argv):
    from_left = _where(argv[3])
    to_left = _where(argv[4])
    count, exactly, bulk, _given = _parse_movem(argv, 5)
    db = c.db
    src, dst = argv[1], argv[2]
    sv = db.lookup_write_typed(src, ListValue)
    n = _movem_needed(sv, count, exactly)
    if n is None:
        return c.null_array
    return _movem(c, db, src, dst, sv, from_left, to_left, n, bulk)


@command("blmovem")
def blmovem(c, argv):
    from_left = _where(argv[3])
    to_left = _where(argv[4])
    deadline = parse_timeout(argv[5])
    count, exactly, bulk, given = _parse_movem(argv, 6)
    db = c.db
    src, dst = argv[1], argv[2]

    def as_lmovem(n):
        # what is propagated: the non-blocking form, the number moved fixed
        if not given:
            return [b"LMOVEM", src, dst, argv[3], argv[4]]
        return [b"LMOVEM", src, dst, argv[3], argv[4], b"EXACTLY", b"%d" % n,
                b"BULK" if bulk else b"OBO"]

    sv = db.lookup_write_typed(src, ListValue)
    n = _movem_needed(sv, count, exactly)
    if n is not None:
        reply = _movem(c, db, src, dst, sv, from_left, to_left, n, bulk)
        rewrite_argv(c, as_lmovem(n))
        return reply
    if not _may_block(c):
        return c.null_array
    _block(c, [src], deadline)
    return None
