"""Stream commands (t_stream.c semantics): XADD, XRANGE/XREVRANGE, XLEN,
XDEL, XTRIM, XSETID, XREAD, consumer groups (XGROUP, XREADGROUP, XACK,
XPENDING, XCLAIM, XAUTOCLAIM) and XINFO.

Values are ``types.stream.StreamValue``; IDs are ints (``ms << 64 | seq``).

Replication: XADD/XTRIM propagate with their generated ID and exact trim
argument (``MAXLEN = <len>``), as Redis rewrites them.  XREADGROUP, XCLAIM
and XAUTOCLAIM never propagate themselves: like Redis they emit one
``XCLAIM ... FORCE JUSTID LASTID`` per entry whose ownership changed (plus
``XGROUP SETID`` / ``XGROUP CREATECONSUMER`` where NOACK hides it); see
``_also_propagate``.

Blocking: XREAD/XREADGROUP BLOCK wait through ``blocking.block``; a client
waiting in a consumer group blocks with ``serve_missing`` so that the
deletion of the stream (DEL, overwrite, FLUSHALL, SWAPDB ...) ends the wait
with -UNBLOCKED, and XGROUP DESTROY with -NOGROUP, as in Redis.
"""

from __future__ import annotations

from .. import notify
from ..blocking import parse_timeout
from ..db import WRONGTYPE_ERR, mstime, signal_key_ready
from ..errors import SYNTAX, RedisError
from ..propagate import also_propagate, propagate_pending, propagating, rewrite_argv
from ..protocol import EMPTY_ARRAY, OK, ONE, ZERO, integer, map_header
from ..types.stream import (INVALID_READ, MASK64, MAX_ID, NACK, Consumer, Group,
                            StreamValue, id_bytes)
from ..util import parse_int
from . import command
from .lists import bulk_items

_STREAM = notify.STREAM

INVALID_ID = RedisError("ERR Invalid stream ID specified as stream command argument")
_EDOM = RedisError("ERR The ID specified in XADD is equal or smaller than the target stream top item")
_ERANGE = RedisError("ERR Elements are too large to be stored")
_ZERO_ID = RedisError("ERR The ID specified in XADD must be greater than 0-0")
_EXHAUSTED = RedisError("ERR The stream has exhausted the last possible ID, unable to add more items")
_BOTH = RedisError("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
_MAXLEN_NEG = RedisError("ERR The MAXLEN argument must be >= 0.")
_LIMIT_NEG = RedisError("ERR The LIMIT argument must be >= 0.")
_LIMIT_NO_STRATEGY = RedisError("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
_XTRIM_NO_STRATEGY = RedisError("ERR syntax error, XTRIM must be called with a trimming strategy")
_LIMIT_NO_APPROX = RedisError("ERR syntax error, LIMIT cannot be used without the special ~ option")
_BAD_START = RedisError("ERR invalid start ID for the interval")
_BAD_END = RedisError("ERR invalid end ID for the interval")
_NO_SUCH_KEY = RedisError("ERR no such key")
_UNBALANCED = RedisError("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' "
                         "must be specified.")
_UNBLOCKED_DELETED = RedisError("UNBLOCKED the stream key no longer exists")
_NOGROUP_BLOCKED = RedisError("NOGROUP the consumer group this client was blocked on no longer exists")
_KEY_REQUIRED = RedisError(
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to "
    "use the MKSTREAM option to create an empty stream automatically.")
_BUSYGROUP = RedisError("BUSYGROUP Consumer Group name already exists")

LP_MAX_SIZE = 1 << 30
XREAD_BLOCKED_DEFAULT_COUNT = 1000

_SPACE = frozenset(b" \t\n\v\f\r")

# Redis reports the one XADD failure that does not set errno (an
# "<ms>-*" ID whose sequence is exhausted) by whatever errno holds: the
# EDOM of an earlier failed XADD, or another value.  Mirror the two causes
# we can see: XADD's own failures and the strtoull fallback of ID parsing.
_errno_edom = False


# ---------------------------------------------------------------------------
# IDs
# ---------------------------------------------------------------------------
def _string2ull(s: bytes):
    """Redis's string2ull: a canonical signed 64-bit value that is not
    negative, else whatever strtoull(s, 10) accepts in full (leading spaces,
    a sign, leading zeros; a '-' negates modulo 2^64).  None if invalid."""
    global _errno_edom
    if s.isdigit():
        v = int(s)
        if v >> 63 or (s[0] == 48 and len(s) > 1):
            _errno_edom = False   # not a canonical long long: strtoull ran
        return v if v <= MASK64 else None
    n = len(s)
    if not n:
        return None
    if not (n < 21 and s[0] == 45 and s[1:].isdigit() and s[1:2] != b"0"):
        _errno_edom = False       # strtoull ran (errno = 0 or ERANGE)
    i = 0
    while i < n and s[i] in _SPACE:
        i += 1
    neg = False
    if i < n and s[i] in b"+-":
        neg = s[i] == 45
        i += 1
    digits = s[i:]
    if not digits.isdigit():
        return None
    v = int(digits)
    if v > MASK64:
        return None
    if neg:
        if i == 1 and n < 21 and digits[0] != 48 and v <= 1 << 63:
            return None       # string2ll took it: a negative number
        return (-v) & MASK64
    return v


def parse_id(b: bytes, missing_seq=0, strict=False, seq_star=False, err=INVALID_ID):
    """streamGenericParseIDOrReply -> (id, seq_given).  With seq_star the
    ``<ms>-*`` form is accepted (seq_given False)."""
    if len(b) > 127:
        raise err
    s = b.split(b"\0", 1)[0] if b"\0" in b else b
    if s == b"-" or s == b"+":
        if strict:
            raise err
        return (0 if s == b"-" else MAX_ID), True
    dash = s.find(b"-")
    if dash < 0:
        ms = _string2ull(s)
        if ms is None:
            raise err
        return (ms << 64) | missing_seq, True
    ms = _string2ull(s[:dash])
    if ms is None:
        raise err
    rest = s[dash + 1:]
    if seq_star and rest == b"*":
        return ms << 64, False
    seq = _string2ull(rest)
    if seq is None:
        raise err
    return (ms << 64) | seq, True


def _parse_interval(b: bytes, missing_seq: int):
    """streamParseIntervalIDOrReply -> (id, exclusive)."""
    if len(b) > 1 and b[0] == 40:        # "("
        return parse_id(b[1:], missing_seq, strict=True)[0], True
    return parse_id(b, missing_seq)[0], False


def _range_args(start_arg, end_arg):
    start, sx = _parse_interval(start_arg, 0)
    if sx:
        if start == MAX_ID:
            raise _BAD_START
        start += 1
    end, ex = _parse_interval(end_arg, MASK64)
    if ex:
        if end == 0:
            raise _BAD_END
        end -= 1
    return start, end


# ---------------------------------------------------------------------------
# Replies
# ---------------------------------------------------------------------------
def _bulk(b: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(b), b)


def _id_reply(i: int) -> bytes:
    s = b"%d-%d" % (i >> 64, i & MASK64)
    return b"$%d\r\n%s\r\n" % (len(s), s)


def _entry(i: int, fv) -> bytes:
    s = b"%d-%d" % (i >> 64, i & MASK64)
    return b"*2\r\n$%d\r\n%s\r\n" % (len(s), s) + bulk_items(fv)


def _entries(items) -> bytes:
    if not items:
        return EMPTY_ARRAY
    parts = [b"*%d\r\n" % len(items)]
    ap = parts.append
    for i, fv in items:
        s = b"%d-%d" % (i >> 64, i & MASK64)
        ap(b"*2\r\n$%d\r\n%s\r\n" % (len(s), s))
        ap(bulk_items(fv))
    return b"".join(parts)


def _check(v):
    if v.__class__ is not StreamValue:
        raise WRONGTYPE_ERR
    return v


def _help(name: bytes, lines):
    out = [b"%s <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" % name]
    out += lines
    out += [b"HELP", b"    Prints this help."]
    return b"*%d\r\n" % len(out) + b"".join(b"+%s\r\n" % x for x in out)


# ---------------------------------------------------------------------------
# Propagation
# ---------------------------------------------------------------------------
def _also_propagate(c, argv, ops, dirty0):
    """Redis's alsoPropagate + preventCommandPropagation for a command run
    by ``Server.call``: ``ops`` replicate instead of the command (in one
    MULTI/EXEC when there are several).  The last op takes the command's
    place (propagate.rewrite_argv, as for BLPOP); earlier ones join the
    unit first.  With no ops nothing may replicate, so the dirty counter
    goes back to where it was."""
    srv = c.server
    if not propagating(srv):
        return
    if not ops:
        srv.dirty = dirty0
        return
    if srv.dirty == dirty0:
        srv.dirty += 1
    db = c.db
    for op in ops[:-1]:
        also_propagate(srv, op, db)
    rewrite_argv(c, ops[-1])


def _propagate_served(c, db, ops):
    """Ops of a blocked client being served (outside any command): one unit."""
    srv = c.server
    if not ops or not propagating(srv):
        return
    for op in ops:
        also_propagate(srv, op, db)
    propagate_pending(srv)


def _xclaim_op(key, gname, g, idarg, nack):
    return [b"XCLAIM", key, gname, nack.consumer.name, b"0", idarg, b"TIME",
            b"%d" % nack.delivery_time, b"RETRYCOUNT", b"%d" % nack.delivery_count,
            b"FORCE", b"JUSTID", b"LASTID", id_bytes(g.last_id)]


def _setid_op(key, gname, g):
    return [b"XGROUP", b"SETID", key, gname, id_bytes(g.last_id), b"ENTRIESREAD",
            b"%d" % g.entries_read]


# ---------------------------------------------------------------------------
# XADD / XTRIM
# ---------------------------------------------------------------------------
class _TrimArgs:
    __slots__ = ("strategy", "approx", "limit", "maxlen", "minid", "arg_idx",
                 "nomkstream", "id", "id_given", "seq_given")

    def __init__(self):
        self.strategy = None          # None, "maxlen" or "minid"
        self.approx = False
        self.limit = 0
        self.maxlen = 0
        self.minid = 0
        self.arg_idx = 0
        self.nomkstream = False
        self.id = 0
        self.id_given = False
        self.seq_given = True


def _parse_add_trim(c, argv, xadd):
    """streamParseAddOrTrimArgsOrReply -> (args, id position)."""
    a = _TrimArgs()
    n = len(argv)
    i = 2
    limit_given = False
    while i < n:
        more = n - 1 - i
        opt = argv[i]
        if xadd and opt == b"*":
            break
        lo = opt.lower()
        if lo == b"maxlen" and more:
            if a.strategy is not None:
                raise _BOTH
            a.approx = False
            nxt = argv[i + 1]
            if more >= 2 and nxt == b"~":
                a.approx = True
                i += 1
            elif more >= 2 and nxt == b"=":
                i += 1
            a.maxlen = parse_int(argv[i + 1])
            if a.maxlen < 0:
                raise _MAXLEN_NEG
            i += 1
            a.strategy = "maxlen"
            a.arg_idx = i
        elif lo == b"minid" and more:
            if a.strategy is not None:
                raise _BOTH
            a.approx = False
            nxt = argv[i + 1]
            if more >= 2 and nxt == b"~":
                a.approx = True
                i += 1
            elif more >= 2 and nxt == b"=":
                i += 1
            a.minid = parse_id(argv[i + 1], 0, strict=True)[0]
            i += 1
            a.strategy = "minid"
            a.arg_idx = i
        elif lo == b"limit" and more:
            a.limit = parse_int(argv[i + 1])
            if a.limit < 0:
                raise _LIMIT_NEG
            limit_given = True
            i += 1
        elif xadd and lo == b"nomkstream":
            a.nomkstream = True
        elif xadd:
            a.id, a.seq_given = parse_id(opt, 0, strict=True, seq_star=True)
            a.id_given = True
            break
        else:
            raise SYNTAX
        i += 1
    if a.limit and a.strategy is None:
        raise _LIMIT_NO_STRATEGY
    if not xadd and a.strategy is None:
        raise _XTRIM_NO_STRATEGY
    if getattr(c, "must_obey", False) or c.is_master:
        # A master link or the AOF: the argument was already made exact.
        a.limit = 0
    elif limit_given:
        if not a.approx:
            raise _LIMIT_NO_APPROX
    elif a.approx:
        lim = 100 * c.server.config.values["stream-node-max-entries"]
        if lim <= 0:
            lim = 10000
        if lim > 1000000:
            lim = 1000000
        a.limit = lim
    else:
        a.limit = 0
    return a, i


def _trim(s, a):
    if a.strategy == "maxlen":
        return s.trim(maxlen=a.maxlen, approx=a.approx, limit=a.limit)
    return s.trim(minid=a.minid, approx=a.approx, limit=a.limit)


def _rewrite_trim(argv, s, a):
    """MAXLEN/MINID ~ x replicate as = <what the stream ends with> (argv:
    a copy of the command's, to be propagated)."""
    argv[a.arg_idx - 1] = b"="
    if a.strategy == "maxlen":
        argv[a.arg_idx] = b"%d" % s.length
    else:
        first = s.first_entry(skip_tombstones=False)
        argv[a.arg_idx] = id_bytes(MAX_ID if first is None else first)


@command("xadd")
def xadd(c, argv):
    global _errno_edom
    a, idpos = _parse_add_trim(c, argv, True)
    fpos = idpos + 1
    nf = len(argv) - fpos
    if nf < 2 or nf % 2:
        raise RedisError("ERR wrong number of arguments for 'xadd' command")
    if a.id_given and a.seq_given and a.id == 0:
        raise _ZERO_ID
    db = c.db
    key = argv[1]
    s = db.lookup_write(key)
    if s is None:
        if a.nomkstream:
            return c.null
        s = StreamValue()
        db.add(key, s)
    elif s.__class__ is not StreamValue:
        raise WRONGTYPE_ERR
    last = s.last_id
    if last == MAX_ID:
        raise _EXHAUSTED
    if a.id_given:
        i = a.id
        if not a.seq_given and (last >> 64) == (i >> 64):
            if last & MASK64 == MASK64:
                raise _EDOM if _errno_edom else _ERANGE
            i = last + 1
    else:
        ms = mstime()
        i = ms << 64 if ms > last >> 64 else last + 1
    if i <= last:
        _errno_edom = True
        raise _EDOM
    fv = tuple(argv[fpos:])
    tot = sum(map(len, fv))
    if tot > LP_MAX_SIZE:
        _errno_edom = False
        raise _ERANGE
    vals = c.server.config.values
    s.append(i, fv, vals["stream-node-max-bytes"], vals["stream-node-max-entries"], tot)
    idb = b"%d-%d" % (i >> 64, i & MASK64)
    db.signal(key)
    notify.notify(_STREAM, b"xadd", key, db.id)
    srv = c.server
    srv.dirty += 1
    out = list(argv) if propagating(srv) else None    # as it propagates
    if a.strategy is not None:
        if _trim(s, a):
            notify.notify(_STREAM, b"xtrim", key, db.id)
        if a.approx and out is not None:
            _rewrite_trim(out, s, a)
    if out is not None:
        if not (a.id_given and a.seq_given):
            out[idpos] = idb
        rewrite_argv(c, out)
    if db.blocking_keys:
        signal_key_ready(db, key)
    return b"$%d\r\n%s\r\n" % (len(idb), idb)


@command("xtrim")
def xtrim(c, argv):
    a, _ = _parse_add_trim(c, argv, False)
    db = c.db
    key = argv[1]
    s = db.lookup_write(key)
    if s is None:
        return ZERO
    _check(s)
    deleted = _trim(s, a)
    if deleted:
        notify.notify(_STREAM, b"xtrim", key, db.id)
        if a.approx and propagating(c.server):
            out = list(argv)
            _rewrite_trim(out, s, a)
            rewrite_argv(c, out)
        db.signal(key)
        c.server.dirty += deleted
    return integer(deleted)


# ---------------------------------------------------------------------------
# Reads
# ---------------------------------------------------------------------------
def _xrange(c, argv, rev):
    if rev:
        start, end = _range_args(argv[3], argv[2])
    else:
        start, end = _range_args(argv[2], argv[3])
    count = -1
    n = len(argv)
    j = 4
    while j < n:
        if argv[j].lower() == b"count" and j + 1 < n:
            count = parse_int(argv[j + 1])
            if count < 0:
                count = 0
            j += 2
        else:
            raise SYNTAX
    s = c.db.lookup_read(argv[1])
    if s is None:
        return EMPTY_ARRAY
    _check(s)
    if count == 0:
        return c.null_array
    return _entries(s.range(start, end, 0 if count == -1 else count, rev))


@command("xrange")
def xrange(c, argv):
    return _xrange(c, argv, False)


@command("xrevrange")
def xrevrange(c, argv):
    return _xrange(c, argv, True)


@command("xlen")
def xlen(c, argv):
    s = c.db.lookup_read(argv[1])
    if s is None:
        return ZERO
    _check(s)
    return integer(s.length)


@command("xdel")
def xdel(c, argv):
    db = c.db
    key = argv[1]
    s = db.lookup_write(key)
    if s is None:
        return ZERO
    _check(s)
    ids = [parse_id(a, 0, strict=True)[0] for a in argv[2:]]
    deleted = 0
    first = False
    for i in ids:
        if s.delete(i):
            if i == s.first_id:
                first = True
            if i > s.max_deleted:
                s.max_deleted = i
            deleted += 1
    if deleted:
        if s.length == 0:
            s.first_id = 0
        elif first:
            s.first_id = s.first_entry()
        db.signal(key)
        notify.notify(_STREAM, b"xdel", key, db.id)
        c.server.dirty += deleted
    return integer(deleted)


@command("xsetid")
def xsetid(c, argv):
    i = parse_id(argv[2], 0, strict=True)[0]
    entries_added = -1
    max_xdel = 0
    n = len(argv)
    j = 3
    while j < n:
        more = n - 1 - j
        opt = argv[j].lower()
        if opt == b"entriesadded" and more:
            entries_added = parse_int(argv[j + 1])
            if entries_added < 0:
                raise RedisError("ERR entries_added must be positive")
            j += 2
        elif opt == b"maxdeletedid" and more:
            max_xdel = parse_id(argv[j + 1], 0, strict=True)[0]
            if i < max_xdel:
                raise RedisError("ERR The ID specified in XSETID is smaller than the provided "
                                 "max_deleted_entry_id")
            j += 2
        else:
            raise SYNTAX
    db = c.db
    key = argv[1]
    s = db.lookup_write(key)
    if s is None:
        raise _NO_SUCH_KEY
    _check(s)
    if s.length:
        if i < s.last_valid_id():
            raise RedisError("ERR The ID specified in XSETID is smaller than the target stream top item")
        if entries_added != -1 and s.length > entries_added:
            raise RedisError("ERR The entries_added specified in XSETID is smaller than the target "
                             "stream length")
    s.last_id = i
    if entries_added != -1:
        s.entries_added = entries_added
    if max_xdel:
        s.max_deleted = max_xdel
    c.server.dirty += 1
    notify.notify(_STREAM, b"xsetid", key, db.id)
    return OK


# ---------------------------------------------------------------------------
# Consumer groups: helpers
# ---------------------------------------------------------------------------
def _create_consumer(c, g, name, key, db):
    """streamCreateConsumer (notifies, dirty++)."""
    cons = Consumer(name, mstime())
    g.consumers[name] = cons
    c.server.dirty += 1
    notify.notify(_STREAM, b"xgroup-createconsumer", key, db.id)
    return cons


def _serve_group(s, key, gname, g, cons, start, count, noack, ops):
    """streamReplyWithRange with a group: deliver entries > start - 1 to
    cons, move the group's last ID and read counter, create or reassign
    PEL entries.  Returns the reply body (an array of entries)."""
    items = s.range(start, MAX_ID, count)
    if not items:
        return EMPTY_ARRAY
    now = mstime()
    pel = g.pel
    cpel = cons.pel
    moved = False
    for i, fv in items:
        if i > g.last_id:
            if g.entries_read != INVALID_READ and not s.has_tombstones_in(i):
                g.entries_read += 1
            elif s.entries_added:
                g.entries_read = s.estimate_distance(i)
            g.last_id = i
            if noack:
                moved = True
        if not noack:
            nack = pel.get(i)
            if nack is None:
                nack = NACK(cons, now)
                pel[i] = nack
                cpel[i] = nack
            else:
                del nack.consumer.pel[i]
                nack.consumer = cons
                nack.delivery_time = now
                nack.delivery_count = 1
                cpel[i] = nack
            if ops is not None:
                ops.append(_xclaim_op(key, gname, g, id_bytes(i), nack))
    if moved and ops is not None:
        ops.append(_setid_op(key, gname, g))
    return _entries(items)


def _serve_history(c, s, cons, start, count):
    """streamReplyWithRangeFromConsumerPEL: the consumer's own pending
    entries from start on; deleted entries come as [id, nil]."""
    now = mstime()
    parts = []
    n = 0
    for i in cons.pel.irange(minimum=start):
        if count and n >= count:
            break
        fv = s.get(i)
        if fv is None:
            parts.append(b"*2\r\n" + _id_reply(i) + c.null_array)
        else:
            nack = cons.pel[i]
            nack.delivery_time = now
            nack.delivery_count += 1
            parts.append(_entry(i, fv))
        n += 1
    return b"*%d\r\n" % n + b"".join(parts)


# ---------------------------------------------------------------------------
# XREAD / XREADGROUP
# ---------------------------------------------------------------------------
def _may_block(c) -> bool:
    return not (c.in_exec or c.in_script)


def _timeout_reply(c):
    return c.null_array


def _xread(c, argv, group_mode):
    n = len(argv)
    deadline = None            # None: no BLOCK option
    count = 0
    streams_arg = 0
    nstreams = 0
    noack = False
    gname = cname = None
    i = 1
    while i < n:
        more = n - i - 1
        o = argv[i].lower()
        if o == b"block" and more:
            if c.in_script:
                raise RedisError(b"ERR %s command is not allowed with BLOCK option from scripts"
                                 % argv[0])
            i += 1
            deadline = parse_timeout(argv[i], seconds=False)
        elif o == b"count" and more:
            i += 1
            count = parse_int(argv[i])
            if count < 0:
                count = 0
        elif o == b"streams" and more:
            streams_arg = i + 1
            nstreams = n - streams_arg
            if nstreams % 2:
                raise _UNBALANCED
            nstreams //= 2
            break
        elif o == b"group" and more >= 2:
            if not group_mode:
                raise RedisError("ERR The GROUP option is only supported by XREADGROUP. "
                                 "You called XREAD instead.")
            gname = argv[i + 1]
            cname = argv[i + 2]
            i += 2
        elif o == b"noack":
            if not group_mode:
                raise RedisError("ERR The NOACK option is only supported by XREADGROUP. "
                                 "You called XREAD instead.")
            noack = True
        else:
            raise SYNTAX
        i += 1
    if not streams_arg:
        raise SYNTAX
    if group_mode and gname is None:
        raise RedisError("ERR Missing GROUP option for XREADGROUP")
    keys = argv[streams_arg:streams_arg + nstreams]
    idargs = argv[streams_arg + nstreams:]
    db = c.db
    ids = []
    groups = []
    for k in range(nstreams):
        key = keys[k]
        s = db.lookup_read(key)
        if s is not None and s.__class__ is not StreamValue:
            raise WRONGTYPE_ERR
        if gname is not None:
            g = s.groups.get(gname) if s is not None and s.groups else None
            if g is None:
                raise RedisError(b"NOGROUP No such key '%s' or consumer group '%s' in XREADGROUP "
                                 b"with GROUP option" % (key, gname))
            groups.append(g)
        a = idargs[k]
        if a == b"$":
            if group_mode:
                raise RedisError(
                    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read "
                    "the history of this consumer by specifying a proper ID, or use the > ID to "
                    "get new messages. The $ ID would just return an empty result set.")
            ids.append(s.last_id if s is not None else 0)
        elif a == b">":
            if not group_mode:
                raise RedisError("ERR The > ID can be specified only when calling XREADGROUP "
                                 "using the GROUP <group> <consumer> option.")
            ids.append(MAX_ID)
        else:
            ids.append(parse_id(a, 0, strict=True)[0])

    srv = c.server
    dirty0 = srv.dirty
    ops = [] if propagating(srv) else None
    resp2 = c.resp == 2
    parts = []
    served = 0
    for k in range(nstreams):
        key = keys[k]
        s = db.lookup_read(key)
        if s is None:
            continue
        gt = ids[k]
        serve = history = False
        if group_mode:
            g = groups[k]
            if gt != MAX_ID:
                serve = history = True
            elif s.length:
                if s.last_valid_id() > g.last_id:
                    serve = True
                    gt = g.last_id
        elif s.length and s.last_valid_id() > gt:
            serve = True
        if not serve:
            continue
        served += 1
        start = (gt + 1) & MAX_ID
        if resp2:
            parts.append(b"*2\r\n")
        parts.append(_bulk(key))
        if group_mode:
            cons = g.consumers.get(cname)
            if cons is None:
                cons = _create_consumer(c, g, cname, key, db)
                if noack and ops is not None:
                    ops.append([b"XGROUP", b"CREATECONSUMER", key, gname, cname])
            else:
                cons.seen_time = mstime()
            if history:
                parts.append(_serve_history(c, s, cons, start, count))
            else:
                parts.append(_serve_group(s, key, gname, g, cons, start, count, noack, ops))
            srv.dirty += 1
        else:
            parts.append(_entries(s.range(start, MAX_ID, count)))
    if served:
        if group_mode:
            _also_propagate(c, argv, ops, dirty0)
        return (b"*%d\r\n" % served if resp2 else b"%%%d\r\n" % served) + b"".join(parts)
    if deadline is None:
        return c.null_array
    if not _may_block(c):
        return c.null_array

    gts = {}
    for key, gt in zip(keys, ids):
        gts.setdefault(key, gt)
    xcount = count or XREAD_BLOCKED_DEFAULT_COUNT

    def on_ready(c, db, key):
        s = db.lookup_nostats(key)
        if group_mode:
            if s is None or s.__class__ is not StreamValue:
                raise _UNBLOCKED_DELETED
            g = s.groups.get(gname) if s.groups else None
            if g is None:
                raise _NOGROUP_BLOCKED
            gt = g.last_id
        else:
            if s is None or s.__class__ is not StreamValue:
                return None
            gt = gts[key]
        if s.last_id <= gt:
            return None
        start = gt + 1
        head = b"*1\r\n*2\r\n" if c.resp == 2 else b"%1\r\n"
        if not group_mode:
            return head + _bulk(key) + _entries(s.range(start, MAX_ID, xcount))
        ops = [] if propagating(c.server) else None
        cons = g.consumers.get(cname)
        if cons is None:
            cons = _create_consumer(c, g, cname, key, db)
            if noack and ops is not None:
                ops.append([b"XGROUP", b"CREATECONSUMER", key, gname, cname])
        else:
            cons.seen_time = mstime()
        body = _serve_group(s, key, gname, g, cons, start, xcount, noack, ops)
        _propagate_served(c, db, ops)
        return head + _bulk(key) + body

    srv.blocking_handler.block(c, keys, deadline, on_ready, _timeout_reply,
                               serve_missing=group_mode)
    return None


@command("xread")
def xread(c, argv):
    return _xread(c, argv, False)


@command("xreadgroup")
def xreadgroup(c, argv):
    return _xread(c, argv, True)


# ---------------------------------------------------------------------------
# XGROUP
# ---------------------------------------------------------------------------
def _subcommand_error(argv):
    return RedisError(b"ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP."
                      % (argv[1][:128], argv[0].upper()))


def _xgroup_prelude(c, argv, sub):
    """The checks xgroupCommand runs before dispatching: options of
    CREATE/SETID, the key (and group) existence.  Returns
    (stream or None, group or None, mkstream, entries_read)."""
    n = len(argv)
    mkstream = False
    entries_read = INVALID_READ
    i = 5
    while i < n:
        a = argv[i].lower()
        if sub == "create" and a == b"mkstream":
            mkstream = True
            i += 1
        elif sub in ("create", "setid") and a == b"entriesread" and i + 1 < n:
            entries_read = parse_int(argv[i + 1])
            if entries_read < 0 and entries_read != INVALID_READ:
                raise RedisError("ERR value for ENTRIESREAD must be positive or -1")
            i += 2
        else:
            raise _subcommand_error(argv)
    s = c.db.lookup_write(argv[2])
    if s is not None:
        _check(s)
    gname = argv[3]
    g = None
    if not mkstream:
        if s is None:
            raise _KEY_REQUIRED
        g = s.groups.get(gname) if s.groups else None
        if g is None and sub in ("setid", "createconsumer", "delconsumer"):
            raise RedisError(b"NOGROUP No such consumer group '%s' for key name '%s'"
                             % (gname, argv[2]))
    return s, g, mkstream, entries_read


@command("xgroup|create")
def xgroup_create(c, argv):
    s, g, mkstream, entries_read = _xgroup_prelude(c, argv, "create")
    if not 5 <= len(argv) <= 8:
        raise _subcommand_error(argv)
    if argv[4] == b"$":
        i = s.last_id if s is not None else 0
    else:
        i = parse_id(argv[4], 0, strict=True)[0]
    db = c.db
    key = argv[2]
    if s is None:
        s = StreamValue()
        db.add(key, s)
        db.signal(key)
    if s.groups is None:
        s.groups = {}
    gname = argv[3]
    if gname in s.groups:
        raise _BUSYGROUP
    s.groups[gname] = Group(i, entries_read)
    c.server.dirty += 1
    notify.notify(_STREAM, b"xgroup-create", key, db.id)
    return OK


@command("xgroup|setid")
def xgroup_setid(c, argv):
    s, g, _, entries_read = _xgroup_prelude(c, argv, "setid")
    if len(argv) not in (5, 7):
        raise _subcommand_error(argv)
    if argv[4] == b"$":
        i = s.last_id
    else:
        i = parse_id(argv[4], 0)[0]
    g.last_id = i
    g.entries_read = entries_read
    c.server.dirty += 1
    notify.notify(_STREAM, b"xgroup-setid", argv[2], c.db.id)
    return OK


@command("xgroup|destroy")
def xgroup_destroy(c, argv):
    s, g, _, _ = _xgroup_prelude(c, argv, "destroy")
    if g is None:
        return ZERO
    del s.groups[argv[3]]
    db = c.db
    key = argv[2]
    c.server.dirty += 1
    notify.notify(_STREAM, b"xgroup-destroy", key, db.id)
    signal_key_ready(db, key)      # blocked XREADGROUP clients get -NOGROUP
    return ONE


@command("xgroup|createconsumer")
def xgroup_createconsumer(c, argv):
    s, g, _, _ = _xgroup_prelude(c, argv, "createconsumer")
    name = argv[4]
    if name in g.consumers:
        return ZERO
    _create_consumer(c, g, name, argv[2], c.db)
    return ONE


@command("xgroup|delconsumer")
def xgroup_delconsumer(c, argv):
    s, g, _, _ = _xgroup_prelude(c, argv, "delconsumer")
    cons = g.consumers.get(argv[4])
    if cons is None:
        return ZERO
    pending = len(cons.pel)
    pel = g.pel
    for i in cons.pel:
        del pel[i]
    del g.consumers[argv[4]]
    c.server.dirty += 1
    notify.notify(_STREAM, b"xgroup-delconsumer", argv[2], c.db.id)
    return integer(pending)


@command("xgroup|help")
def xgroup_help(c, argv):
    return _help(b"XGROUP", [
        b"CREATE <key> <groupname> <id|$> [option]",
        b"    Create a new consumer group. Options are:",
        b"    * MKSTREAM",
        b"      Create the empty stream if it does not exist.",
        b"    * ENTRIESREAD entries_read",
        b"      Set the group's entries_read counter (internal use).",
        b"CREATECONSUMER <key> <groupname> <consumer>",
        b"    Create a new consumer in the specified group.",
        b"DELCONSUMER <key> <groupname> <consumer>",
        b"    Remove the specified consumer.",
        b"DESTROY <key> <groupname>",
        b"    Remove the specified group.",
        b"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        b"    Set the current group ID and entries_read counter.",
    ])


# ---------------------------------------------------------------------------
# XACK / XPENDING / XCLAIM / XAUTOCLAIM
# ---------------------------------------------------------------------------
@command("xack")
def xack(c, argv):
    s = c.db.lookup_read(argv[1])
    g = None
    if s is not None:
        _check(s)
        g = s.groups.get(argv[2]) if s.groups else None
    if g is None:
        return ZERO
    ids = [parse_id(a, 0, strict=True)[0] for a in argv[3:]]
    acked = 0
    pel = g.pel
    for i in ids:
        nack = pel.pop(i, None)
        if nack is not None:
            del nack.consumer.pel[i]
            acked += 1
    c.server.dirty += acked
    return integer(acked)


def _nogroup(argv):
    return RedisError(b"NOGROUP No such key '%s' or consumer group '%s'" % (argv[1], argv[2]))


@command("xpending")
def xpending(c, argv):
    n = len(argv)
    justinfo = n == 3
    if n != 3 and (n < 6 or n > 9):
        raise SYNTAX
    minidle = 0
    consumer_name = None
    if n >= 6:
        si = 3
        if argv[3].lower() == b"idle":
            minidle = parse_int(argv[4])
            if n < 8:
                raise SYNTAX
            si += 2
        count = parse_int(argv[si + 2])
        if count < 0:
            count = 0
        start, end = _range_args(argv[si], argv[si + 1])
        if si + 3 < n:
            consumer_name = argv[si + 3]
    s = c.db.lookup_read(argv[1])
    if s is not None:
        _check(s)
    g = s.groups.get(argv[2]) if s is not None and s.groups else None
    if g is None:
        raise _nogroup(argv)
    pel = g.pel
    if justinfo:
        if not pel:
            return b"*4\r\n:0\r\n" + c.null + c.null + c.null_array
        parts = [b"*4\r\n", integer(len(pel)), _id_reply(pel.peekitem(0)[0]),
                 _id_reply(pel.peekitem(-1)[0])]
        rows = []
        for cons in g.sorted_consumers():
            if cons.pel:
                cnt = b"%d" % len(cons.pel)
                rows.append(b"*2\r\n" + _bulk(cons.name) + _bulk(cnt))
        parts.append(b"*%d\r\n" % len(rows))
        parts += rows
        return b"".join(parts)
    if consumer_name is not None:
        cons = g.consumers.get(consumer_name)
        if cons is None:
            return EMPTY_ARRAY
        pel = cons.pel
    now = mstime()
    rows = []
    if count and start <= end:
        for i in pel.irange(start, end):
            nack = pel[i]
            if minidle and now - nack.delivery_time < minidle:
                continue
            elapsed = now - nack.delivery_time
            if elapsed < 0:
                elapsed = 0
            rows.append(b"*4\r\n" + _id_reply(i) + _bulk(nack.consumer.name) + integer(elapsed)
                        + integer(nack.delivery_count))
            if len(rows) >= count:
                break
    return b"*%d\r\n" % len(rows) + b"".join(rows)


@command("xclaim")
def xclaim(c, argv):
    db = c.db
    key = argv[1]
    s = db.lookup_read(key)
    g = None
    if s is not None:
        _check(s)
        g = s.groups.get(argv[2]) if s.groups else None
    if g is None:
        raise _nogroup(argv)
    minidle = parse_int(argv[4], RedisError("ERR Invalid min-idle-time argument for XCLAIM"))
    if minidle < 0:
        minidle = 0
    n = len(argv)
    ids = []
    j = 5
    while j < n:
        try:
            ids.append(parse_id(argv[j], 0, strict=True)[0])
        except RedisError:
            break
        j += 1
    now = mstime()
    retrycount = -1
    deliverytime = -1
    force = justid = False
    last_id = 0
    while j < n:
        more = n - 1 - j
        opt = argv[j].lower()
        if opt == b"force":
            force = True
        elif opt == b"justid":
            justid = True
        elif opt == b"idle" and more:
            j += 1
            deliverytime = now - parse_int(
                argv[j], RedisError("ERR Invalid IDLE option argument for XCLAIM"))
        elif opt == b"time" and more:
            j += 1
            deliverytime = parse_int(argv[j], RedisError("ERR Invalid TIME option argument for XCLAIM"))
        elif opt == b"retrycount" and more:
            j += 1
            retrycount = parse_int(
                argv[j], RedisError("ERR Invalid RETRYCOUNT option argument for XCLAIM"))
        elif opt == b"lastid" and more:
            j += 1
            last_id = parse_id(argv[j], 0, strict=True)[0]
        else:
            raise RedisError(b"ERR Unrecognized XCLAIM option '%s'" % argv[j])
        j += 1
    srv = c.server
    dirty0 = srv.dirty
    ops = [] if propagating(srv) else None
    gname = argv[2]
    propagate_last_id = False
    if last_id > g.last_id:
        g.last_id = last_id
        propagate_last_id = True
    if deliverytime != -1:
        if deliverytime < 0 or deliverytime > now:
            deliverytime = now
    else:
        deliverytime = now
    cons = None
    name = argv[3]
    pel = g.pel
    out = []
    for k in range(len(ids)):
        i = ids[k]
        nack = pel.get(i)
        fv = s.get(i)
        if fv is None:
            if nack is not None:
                if ops is not None:
                    ops.append(_xclaim_op(key, gname, g, argv[5 + k], nack))
                propagate_last_id = False
                srv.dirty += 1
                del pel[i]
                del nack.consumer.pel[i]
            continue
        if force and nack is None:
            nack = NACK(None, now)
            pel[i] = nack
        if nack is None:
            continue
        if nack.consumer is not None and minidle:
            if now - nack.delivery_time < minidle:
                continue
        if cons is None:
            cons = g.consumers.get(name)
            if cons is None:
                cons = _create_consumer(c, g, name, key, db)
            else:
                cons.seen_time = mstime()
        if nack.consumer is not cons and nack.consumer is not None:
            del nack.consumer.pel[i]
        nack.delivery_time = deliverytime
        if retrycount >= 0:
            nack.delivery_count = retrycount
        elif not justid:
            nack.delivery_count += 1
        if nack.consumer is not cons:
            cons.pel[i] = nack
            nack.consumer = cons
        out.append(_id_reply(i) if justid else _entry(i, fv))
        if ops is not None:
            ops.append(_xclaim_op(key, gname, g, argv[5 + k], nack))
        propagate_last_id = False
        srv.dirty += 1
    if propagate_last_id:
        if ops is not None:
            ops.append(_setid_op(key, gname, g))
        srv.dirty += 1
    _also_propagate(c, argv, ops, dirty0)
    return b"*%d\r\n" % len(out) + b"".join(out)


_XAUTOCLAIM_MAX_COUNT = ((1 << 63) - 1) // 16


@command("xautoclaim")
def xautoclaim(c, argv):
    minidle = parse_int(argv[4], RedisError("ERR Invalid min-idle-time argument for XAUTOCLAIM"))
    if minidle < 0:
        minidle = 0
    start, sx = _parse_interval(argv[5], 0)
    if sx:
        if start == MAX_ID:
            raise _BAD_START
        start += 1
    count = 100
    justid = False
    n = len(argv)
    j = 6
    while j < n:
        more = n - 1 - j
        opt = argv[j].lower()
        if opt == b"count" and more:
            err = RedisError("ERR COUNT must be > 0")
            count = parse_int(argv[j + 1], err)
            if count < 1 or count > _XAUTOCLAIM_MAX_COUNT:
                raise err
            j += 1
        elif opt == b"justid":
            justid = True
        else:
            raise SYNTAX
        j += 1
    db = c.db
    key = argv[1]
    s = db.lookup_read(key)
    g = None
    if s is not None:
        _check(s)
        g = s.groups.get(argv[2]) if s.groups else None
    if g is None:
        raise _nogroup(argv)
    if count * 16 >= 1 << 40:
        raise RedisError("ERR Insufficient memory, failed allocating transient memory, COUNT too high.")
    srv = c.server
    dirty0 = srv.dirty
    ops = [] if propagating(srv) else None
    gname = argv[2]
    name = argv[3]
    pel = g.pel
    attempts = count * 10
    now = mstime()
    cons = None
    claimed = []
    deleted = []
    idx = pel.bisect_left(start)
    while attempts and count and idx < len(pel):
        attempts -= 1
        i, nack = pel.peekitem(idx)
        fv = s.get(i)
        if fv is None:
            if ops is not None:
                ops.append(_xclaim_op(key, gname, g, id_bytes(i), nack))
            srv.dirty += 1
            del pel[i]
            del nack.consumer.pel[i]
            deleted.append(i)
            count -= 1
            continue
        idx += 1
        if minidle and now - nack.delivery_time < minidle:
            continue
        if cons is None:
            cons = g.consumers.get(name)
            if cons is None:
                cons = _create_consumer(c, g, name, key, db)
            else:
                cons.seen_time = mstime()
        if nack.consumer is not cons and nack.consumer is not None:
            del nack.consumer.pel[i]
        nack.delivery_time = now
        if not justid:
            nack.delivery_count += 1
        if nack.consumer is not cons:
            cons.pel[i] = nack
            nack.consumer = cons
        claimed.append(_id_reply(i) if justid else _entry(i, fv))
        count -= 1
        if ops is not None:
            ops.append(_xclaim_op(key, gname, g, id_bytes(i), nack))
        srv.dirty += 1
    cursor = pel.peekitem(idx)[0] if idx < len(pel) else 0
    _also_propagate(c, argv, ops, dirty0)
    return (b"*3\r\n" + _id_reply(cursor) + b"*%d\r\n" % len(claimed) + b"".join(claimed)
            + b"*%d\r\n" % len(deleted) + b"".join(_id_reply(i) for i in deleted))


# ---------------------------------------------------------------------------
# XINFO
# ---------------------------------------------------------------------------
def _stream_info(c, argv, s):
    full = True
    count = 10
    optc = len(argv) - 3
    if optc == 0:
        full = False
    else:
        if optc not in (1, 3):
            raise _subcommand_error(argv)
        if argv[3].lower() != b"full":
            raise _subcommand_error(argv)
        if optc == 3:
            if argv[4].lower() != b"count":
                raise _subcommand_error(argv)
            count = parse_int(argv[5])
            if count < 0:
                count = 10
    resp = c.resp
    null = c.null
    parts = [map_header(resp, 9 if full else 10),
             b"$6\r\nlength\r\n", integer(s.length),
             b"$15\r\nradix-tree-keys\r\n", integer(len(s.nodes)),
             b"$16\r\nradix-tree-nodes\r\n", integer(s.rax_nodes()),
             b"$17\r\nlast-generated-id\r\n", _id_reply(s.last_id),
             b"$20\r\nmax-deleted-entry-id\r\n", _id_reply(s.max_deleted),
             b"$13\r\nentries-added\r\n", integer(s.entries_added),
             b"$23\r\nrecorded-first-entry-id\r\n", _id_reply(s.first_id)]
    ap = parts.append
    if not full:
        ap(b"$6\r\ngroups\r\n")
        ap(integer(len(s.groups) if s.groups else 0))
        first = s.range(0, MAX_ID, 1)
        ap(b"$11\r\nfirst-entry\r\n")
        ap(_entry(*first[0]) if first else null)
        last = s.range(0, MAX_ID, 1, rev=True)
        ap(b"$10\r\nlast-entry\r\n")
        ap(_entry(*last[0]) if last else null)
        return b"".join(parts)
    ap(b"$7\r\nentries\r\n")
    ap(_entries(s.range(0, MAX_ID, count)))
    ap(b"$6\r\ngroups\r\n")
    groups = s.sorted_groups()
    ap(b"*%d\r\n" % len(groups))
    for name, g in groups:
        ap(map_header(resp, 7))
        ap(b"$4\r\nname\r\n" + _bulk(name))
        ap(b"$17\r\nlast-delivered-id\r\n" + _id_reply(g.last_id))
        ap(b"$12\r\nentries-read\r\n")
        ap(integer(g.entries_read) if g.entries_read != INVALID_READ else null)
        ap(b"$3\r\nlag\r\n")
        lag = s.group_lag(g)
        ap(integer(lag) if lag is not None else null)
        ap(b"$9\r\npel-count\r\n" + integer(len(g.pel)))
        ap(b"$7\r\npending\r\n")
        rows = []
        for i, nack in g.pel.items():
            if count and len(rows) >= count:
                break
            rows.append(b"*4\r\n" + _id_reply(i) + _bulk(nack.consumer.name)
                        + integer(nack.delivery_time) + integer(nack.delivery_count))
        ap(b"*%d\r\n" % len(rows))
        parts += rows
        consumers = g.sorted_consumers()
        ap(b"$9\r\nconsumers\r\n*%d\r\n" % len(consumers))
        for cons in consumers:
            ap(map_header(resp, 4))
            ap(b"$4\r\nname\r\n" + _bulk(cons.name))
            ap(b"$9\r\nseen-time\r\n" + integer(cons.seen_time))
            ap(b"$9\r\npel-count\r\n" + integer(len(cons.pel)))
            ap(b"$7\r\npending\r\n")
            rows = []
            for i, nack in cons.pel.items():
                if count and len(rows) >= count:
                    break
                rows.append(b"*3\r\n" + _id_reply(i) + integer(nack.delivery_time)
                            + integer(nack.delivery_count))
            ap(b"*%d\r\n" % len(rows))
            parts += rows
    return b"".join(parts)


def _xinfo_lookup(c, argv):
    s = c.db.lookup_read(argv[2])
    if s is None:
        raise _NO_SUCH_KEY
    return _check(s)


@command("xinfo|stream")
def xinfo_stream(c, argv):
    return _stream_info(c, argv, _xinfo_lookup(c, argv))


@command("xinfo|groups")
def xinfo_groups(c, argv):
    s = _xinfo_lookup(c, argv)
    groups = s.sorted_groups()
    resp = c.resp
    parts = [b"*%d\r\n" % len(groups)]
    ap = parts.append
    for name, g in groups:
        ap(map_header(resp, 6))
        ap(b"$4\r\nname\r\n" + _bulk(name))
        ap(b"$9\r\nconsumers\r\n" + integer(len(g.consumers)))
        ap(b"$7\r\npending\r\n" + integer(len(g.pel)))
        ap(b"$17\r\nlast-delivered-id\r\n" + _id_reply(g.last_id))
        ap(b"$12\r\nentries-read\r\n")
        ap(integer(g.entries_read) if g.entries_read != INVALID_READ else c.null)
        ap(b"$3\r\nlag\r\n")
        lag = s.group_lag(g)
        ap(integer(lag) if lag is not None else c.null)
    return b"".join(parts)


@command("xinfo|consumers")
def xinfo_consumers(c, argv):
    s = _xinfo_lookup(c, argv)
    g = s.groups.get(argv[3]) if s.groups else None
    if g is None:
        raise RedisError(b"NOGROUP No such consumer group '%s' for key name '%s'"
                         % (argv[3], argv[2]))
    consumers = g.sorted_consumers()
    now = mstime()
    resp = c.resp
    parts = [b"*%d\r\n" % len(consumers)]
    ap = parts.append
    for cons in consumers:
        idle = now - cons.seen_time
        if idle < 0:
            idle = 0
        ap(map_header(resp, 3))
        ap(b"$4\r\nname\r\n" + _bulk(cons.name))
        ap(b"$7\r\npending\r\n" + integer(len(cons.pel)))
        ap(b"$4\r\nidle\r\n" + integer(idle))
    return b"".join(parts)


@command("xinfo|help")
def xinfo_help(c, argv):
    return _help(b"XINFO", [
        b"CONSUMERS <key> <groupname>",
        b"    Show consumers of <groupname>.",
        b"GROUPS <key>",
        b"    Show the stream consumer groups.",
        b"STREAM <key> [FULL [COUNT <count>]",
        b"    Show information about the stream.",
    ])
