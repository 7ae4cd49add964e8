"""Stream commands (t_stream.c semantics): XADD, XRANGE/XREVRANGE, XLEN,
XDEL, XDELEX, XTRIM, XSETID, XREAD and XREADGROUP; the consumer-group
commands (XGROUP, XACK, XACKDEL, XNACK, XPENDING, XCLAIM, XAUTOCLAIM),
XINFO, XCFGSET and XIDMPRECORD are in stream_groups.py, what a group hands
XREADGROUP's readers in stream_delivery.py, the IDs, replies and
propagation ops the family shares in stream_args.py.

Redis 7.2-8.10 additions here: the KEEPREF/DELREF/ACKED reference
policies (8.2), XREADGROUP ... CLAIM (8.4, with a wake-up timer for a
blocked reader), idempotent XADD ... IDMP/IDMPAUTO (8.6, state in
``types.stream.Idmp``), MAXCOUNT/MAXSIZE (8.10, ``Budget``).

Values are ``types.stream.StreamValue``; IDs are ints (``ms << 64 | seq``).

Replication: XADD/XTRIM propagate with their generated ID and exact trim
argument (``MAXLEN = <len>``), as Redis rewrites them.  XREADGROUP, XCLAIM
and XAUTOCLAIM never propagate themselves: like Redis they emit one
``XCLAIM ... FORCE JUSTID LASTID`` per entry whose ownership changed (plus
``XGROUP SETID`` / ``XGROUP CREATECONSUMER`` where NOACK hides it); see
``propagate_ops``.

Blocking: XREAD/XREADGROUP BLOCK wait through ``blocking.block_keys`` and
run again when a key is signalled (Redis 7.2); a client waiting in a
consumer group is also run again when the stream goes (DEL, overwrite,
FLUSHALL, SWAPDB, RENAME ...) or its group is destroyed, and so gets the
command's own -NOGROUP / -WRONGTYPE.
"""

from __future__ import annotations

from hashlib import blake2b

from ..cmdtable.registry import command
from ..errors import SYNTAX, RedisError
from ..keyspace import notify
from ..keyspace.blocking import parse_timeout
from ..keyspace.db import mstime, signal_key_ready
from ..protocol.resp import EMPTY_ARRAY, OK, ZERO, bulk_items, help_reply, integer  # noqa: F401 (help_reply: see below)
from ..replication.propagate import propagating, rewrite_argv
from ..types.stream import MASK64, MAX_ID, Idmp, StreamValue, id_bytes
from ..util import parse_int
from .stream_args import (NO_SUCH_KEY, bulk_str, entries_reply, id_reply, parse_id, propagate_ops,
                          range_args)
from .stream_delivery import Budget, consumer_for, group_body, serve_history

_STREAM = notify.STREAM

# acl.py, cluster.py and stream_groups.py take help_reply (protocol.resp's)
# from here: importing this module from acl.py is what registers the stream
# commands where COMMAND has always listed them.

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
_UNBALANCED = RedisError("ERR Unbalanced 'xread' list of streams: for each stream key an ID or "
                         "'$' must be specified.")
_UNBALANCED_GROUP = RedisError("ERR Unbalanced 'xreadgroup' list of streams: for each stream key an "
                               "ID or '>' must be specified.")

LP_MAX_SIZE = 1 << 30


# ---------------------------------------------------------------------------
# XADD / XTRIM
# ---------------------------------------------------------------------------
# Redis 8.2's reference policies of deletions and trims (XDELEX, XACKDEL,
# XADD/XTRIM ... KEEPREF|DELREF|ACKED)
KEEPREF, DELREF, ACKED = 0, 1, 2
_POLICIES = {b"keepref": KEEPREF, b"delref": DELREF, b"acked": ACKED}


def entry_referenced(s, i) -> bool:
    """streamEntryIsReferenced: a group has not read entry i yet (its last
    delivered ID is below i) or holds it pending."""
    groups = s.groups
    if groups:
        for g in groups.values():
            if i > g.last_id or i in g.pel:
                return True
    return False


def ack(pel, i):
    """Entry i out of a group's PEL and its consumer's: the NACK it had,
    or None."""
    nack = pel.pop(i, None)
    if nack is not None and nack.consumer is not None:
        del nack.consumer.pel[i]
    return nack


def drop_references(s, i) -> bool:
    """streamCleanupEntryCGroupRefs: entry i out of every group's PEL;
    whether there was any."""
    found = False
    groups = s.groups
    if groups:
        for g in groups.values():
            if ack(g.pel, i) is not None:
                found = True
    return found


class _TrimArgs:
    __slots__ = ("strategy", "approx", "limit", "maxlen", "minid", "arg_idx",
                 "nomkstream", "id", "id_given", "seq_given", "policy", "pid", "iid", "idmp_at")

    def __init__(self):
        self.policy = None            # None (KEEPREF), or one of the policies
        self.pid = self.iid = None    # XADD ... IDMP pid iid / IDMPAUTO pid (8.6; iid None: auto)
        self.idmp_at = 0              # where the IDMP tokens are (they do not replicate)
        self.strategy = None          # None, "maxlen" or "minid"
        self.approx = self.nomkstream = self.id_given = False
        self.limit = self.maxlen = self.minid = self.arg_idx = self.id = 0
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
        if (lo == b"maxlen" or lo == b"minid") and more:
            if a.strategy is not None:
                raise _BOTH
            a.approx = False
            nxt = argv[i + 1]
            if more >= 2 and nxt == b"~":
                a.approx = True
                i += 1
            elif more >= 2 and nxt == b"=":
                i += 1
            if lo == b"maxlen":
                a.maxlen = parse_int(argv[i + 1])
                if a.maxlen < 0:
                    raise _MAXLEN_NEG
                a.strategy = "maxlen"
            else:
                a.minid = parse_id(argv[i + 1], 0, strict=True)[0]
                a.strategy = "minid"
            i += 1
            a.arg_idx = i
        elif lo == b"limit" and more:
            a.limit = parse_int(argv[i + 1])
            if a.limit < 0:
                raise _LIMIT_NEG
            limit_given = True
            i += 1
        elif xadd and lo == b"nomkstream":
            a.nomkstream = True
        elif lo in _POLICIES and a.policy is None:
            a.policy = _POLICIES[lo]
        elif xadd and lo == b"idmpauto" and more and a.pid is None:
            a.pid = argv[i + 1]
            a.idmp_at = i
            i += 1
        elif xadd and lo == b"idmp" and more >= 2 and a.pid is None:
            a.pid = argv[i + 1]
            a.iid = argv[i + 2]
            a.idmp_at = i
            i += 2
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
    if c.is_master or c.server.loading:
        # A master link or the AOF being loaded (the only client that runs
        # commands while loading): the argument was already made exact.
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
    policy = a.policy
    if not policy or not s.groups:      # KEEPREF, or nothing refers to entries
        if a.strategy == "maxlen":
            return s.trim(maxlen=a.maxlen, approx=a.approx, limit=a.limit)
        return s.trim(minid=a.minid, approx=a.approx, limit=a.limit)
    removed = []
    keep = (lambda i: entry_referenced(s, i)) if policy == ACKED else None
    if a.strategy == "maxlen":
        n = s.trim_refs(maxlen=a.maxlen, approx=a.approx, limit=a.limit, keep=keep, removed=removed)
    else:
        n = s.trim_refs(minid=a.minid, approx=a.approx, limit=a.limit, keep=keep, removed=removed)
    if policy == DELREF:
        for i in removed:
            drop_references(s, i)
    return n


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
    a, idpos = _parse_add_trim(c, argv, True)
    if a.pid is not None and a.id_given:
        raise _IDMP_AUTO_ID
    fpos = idpos + 1
    nf = len(argv) - fpos
    if nf < 2 or nf % 2:
        raise RedisError("ERR wrong number of arguments for 'xadd' command")
    if a.id_given and a.seq_given and a.id == 0:
        raise _ZERO_ID
    iid = None
    if a.pid is not None:
        iid = a.iid if a.iid is not None else auto_iid(argv[fpos:])
        if not a.pid or not iid:
            raise _IDMP_EMPTY
    db = c.db
    key = argv[1]
    s = db.lookup_write_typed(key, StreamValue)
    if s is None:
        if a.nomkstream:
            return c.null
        s = StreamValue()
        db.add(key, s)
    now = 0
    if a.pid is not None:
        now = mstime()
        im = s.idmp
        found = im.find(a.pid, iid, now) if im is not None else None
        if found is not None:
            im.duplicates += 1            # the entry this (pid, iid) added: nothing new
            return id_reply(found)
    last = s.last_id
    if last == MAX_ID:
        raise _EXHAUSTED
    if a.id_given:
        i = a.id
        if not a.seq_given and (last >> 64) == (i >> 64):
            if last & MASK64 == MASK64:
                raise _EDOM       # an exhausted <ms>-* sequence (7.2: EDOM)
            i = last + 1
    else:
        ms = mstime()
        i = ms << 64 if ms > last >> 64 else last + 1
    if i <= last:
        raise _EDOM
    fv = tuple(argv[fpos:])
    tot = sum(map(len, fv))
    if tot > LP_MAX_SIZE:
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
    if a.pid is not None:
        im = s.idmp
        if im is None:
            im = s.idmp = Idmp()
        im.record(a.pid, iid, i, now)
        im.added += 1
    if out is not None:
        if not (a.id_given and a.seq_given):
            out[idpos] = idb
        if a.pid is None:
            rewrite_argv(c, out)
        else:
            # the XADD without its IDMP tokens, then the record (8.6's
            # XIDMPRECORD), the two in one transaction
            n = 2 if a.iid is None else 3
            del out[a.idmp_at:a.idmp_at + n]
            ops = [out]
            if s.get(i) is not None:
                ops.append([b"XIDMPRECORD", key, a.pid, iid, idb])
            propagate_ops(c, argv, ops, srv.dirty - 1)
    if db.blocking_keys:
        signal_key_ready(db, key)
    return b"$%d\r\n%s\r\n" % (len(idb), idb)


@command("xtrim")
def xtrim(c, argv):
    a, _ = _parse_add_trim(c, argv, False)
    db = c.db
    key = argv[1]
    s = db.lookup_write_typed(key, StreamValue)
    if s is None:
        return ZERO
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
        start, end = range_args(argv[3], argv[2])
    else:
        start, end = range_args(argv[2], argv[3])
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
    s = c.db.lookup_read_typed(argv[1], StreamValue)
    if s is None:
        return EMPTY_ARRAY
    if count == 0:
        return c.null_array
    return entries_reply(s.range(start, end, 0 if count == -1 else count, rev))


@command("xrange")
def xrange(c, argv):
    return _xrange(c, argv, False)


@command("xrevrange")
def xrevrange(c, argv):
    return _xrange(c, argv, True)


@command("xlen")
def xlen(c, argv):
    s = c.db.lookup_read_typed(argv[1], StreamValue)
    if s is None:
        return ZERO
    return integer(s.length)


@command("xdel")
def xdel(c, argv):
    db = c.db
    key = argv[1]
    s = db.lookup_write_typed(key, StreamValue)
    if s is None:
        return ZERO
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


def parse_delete_args(argv, start):
    """The policy and IDS block of XDELEX/XACKDEL from argv[start:], in
    any order -> (policy, [ids]); the IDs are parsed (strictly) before
    the key is looked up."""
    policy = None
    ids = None
    n = len(argv)
    j = start
    while j < n:
        lo = argv[j].lower()
        if lo in _POLICIES and policy is None:
            policy = _POLICIES[lo]
            j += 1
        elif lo == b"ids" and ids is None and j + 1 < n:
            try:
                num = parse_int(argv[j + 1])
            except RedisError:
                num = 0
            if num < 1:
                raise _NUMIDS
            if num > n - j - 2:
                raise _NUMIDS_MISMATCH
            ids = [parse_id(a, 0, strict=True)[0] for a in argv[j + 2:j + 2 + num]]
            j += 2 + num
        else:
            raise SYNTAX
    if ids is None:
        raise SYNTAX
    return policy or KEEPREF, ids


def auto_iid(fv) -> bytes:
    """IDMPAUTO's idempotent ID: a digest of the entry's fields and values."""
    h = blake2b(digest_size=16)
    for x in fv:
        h.update(b"%d:" % len(x))
        h.update(x)
    return h.digest()


def xdel_one(s, i) -> bool:
    """XDEL's deletion of entry i with its bookkeeping (first entry, the
    greatest deleted ID)."""
    if not s.delete(i):
        return False
    if i > s.max_deleted:
        s.max_deleted = i
    if s.length == 0:
        s.first_id = 0
    elif i == s.first_id:
        s.first_id = s.first_entry()
    return True


_NUMIDS = RedisError("ERR Number of IDs must be a positive integer")
# Our own texts: Redis 8.6's are not published in its documentation
_IDMP_AUTO_ID = RedisError("ERR IDMP and IDMPAUTO can be used only with the * ID")
_IDMP_EMPTY = RedisError("ERR IDMP producer and idempotent IDs must not be empty")
_NUMIDS_MISMATCH = RedisError("ERR The `numids` parameter must match the number of arguments")


def code_array(codes) -> bytes:
    return b"*%d\r\n" % len(codes) + b"".join(b":%d\r\n" % x for x in codes)


@command("xdelex")
def xdelex(c, argv):
    """XDELEX key [KEEPREF|DELREF|ACKED] IDS numids id ... (8.2): per ID,
    1 deleted, -1 no such entry, 2 kept (ACKED: still referenced)."""
    policy, ids = parse_delete_args(argv, 2)
    db = c.db
    key = argv[1]
    s = db.lookup_write_typed(key, StreamValue)
    if s is None:
        return code_array([-1] * len(ids))
    return delete_ids(c, key, s, ids, policy)


def delete_ids(c, key, s, ids, policy, pel=None):
    """XDELEX's deletions in the stream s at key, and their reply: per ID 2
    kept (ACKED: still referenced), 1 deleted, -1 no such entry (DELREF
    drops the references first).  XACKDEL gives its group's ``pel``: each ID
    is acknowledged first, and answers 1 when acknowledged though not
    deleted."""
    db = c.db
    out = []
    deleted = changed = 0
    for i in ids:
        nack = None
        if pel is not None:
            nack = ack(pel, i)
            if nack is not None:
                changed += 1
        if policy == ACKED and entry_referenced(s, i):
            out.append(2)
            continue
        if policy == DELREF and drop_references(s, i):
            changed += 1
        if xdel_one(s, i):
            deleted += 1
            out.append(1)
        else:
            out.append(1 if nack is not None else -1)
    if deleted:
        db.signal(key)
        notify.notify(_STREAM, b"xdel", key, db.id)
    c.server.dirty += deleted + changed
    return code_array(out)


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
    s = db.lookup_write_typed(key, StreamValue)
    if s is None:
        raise NO_SUCH_KEY
    if i < s.max_deleted:
        raise RedisError("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id")
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
# XREAD / XREADGROUP
# ---------------------------------------------------------------------------
_CLAIM_NOT_INT = RedisError("ERR min-idle-time is not an integer")
_CLAIM_NEGATIVE = RedisError("ERR min-idle-time must be a positive integer")
# Our own texts: Redis 8.10's are not published in its documentation
_MAXCOUNT_RANGE = RedisError("ERR MAXCOUNT must be a positive integer")
_MAXSIZE_RANGE = RedisError("ERR MAXSIZE must be a positive integer")
_MAXCOUNT_COUNT = RedisError("ERR MAXCOUNT must be greater than or equal to COUNT")


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
    claim = None               # XREADGROUP ... CLAIM min-idle-time (8.4)
    maxcount = maxsize = 0     # MAXCOUNT / MAXSIZE (8.10)
    gname = cname = None
    i = 1
    while i < n:
        more = n - i - 1
        o = argv[i].lower()
        if o == b"block" and more:
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
                raise _UNBALANCED_GROUP if group_mode else _UNBALANCED
            nstreams //= 2
            break
        elif o == b"group" and more >= 2:
            if not group_mode:
                raise RedisError("ERR The GROUP option is only supported by XREADGROUP. "
                                 "You called XREAD instead.")
            gname = argv[i + 1]
            cname = argv[i + 2]
            i += 2
        elif o == b"maxcount" and more:
            i += 1
            maxcount = parse_int(argv[i])
            if maxcount < 1:
                raise _MAXCOUNT_RANGE
        elif o == b"maxsize" and more:
            i += 1
            maxsize = parse_int(argv[i])
            if maxsize < 1:
                raise _MAXSIZE_RANGE
        elif o == b"claim" and more and group_mode:
            i += 1
            claim = parse_int(argv[i], _CLAIM_NOT_INT)
            if claim < 0:
                raise _CLAIM_NEGATIVE
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
    if maxcount and count and maxcount < count:
        raise _MAXCOUNT_COUNT
    budget = Budget(maxcount, maxsize) if maxcount or maxsize else None
    if group_mode and gname is None:
        raise RedisError("ERR Missing GROUP option for XREADGROUP")
    keys = argv[streams_arg:streams_arg + nstreams]
    idargs = argv[streams_arg + nstreams:]
    db = c.db
    ids = []
    groups = []
    for k in range(nstreams):
        key = keys[k]
        s = db.lookup_read_typed(key, StreamValue)
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
        elif a == b"+":
            if group_mode:
                raise RedisError(
                    "ERR The + ID is meaningless in the context of XREADGROUP: you want to read "
                    "the history of this consumer by specifying a proper ID, or use the > ID to "
                    "get new messages. The + ID would just return an empty result set.")
            if s is None:
                ids.append(0)
            elif not s.last_id:
                raise RedisError("ERR the stream last element ID is 0-0")
            else:
                ids.append(s.last_id - 1)     # XREAD + (7.4): the last entry
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
        if group_mode:
            g = groups[k]
            # Redis 7.2: the consumer is made (or seen) even when nothing
            # is served
            cons = consumer_for(c, g, gname, cname, key, db, ops if noack else None)
            if budget is not None and budget.done():
                continue
            if gt != MAX_ID:
                body = serve_history(c, s, cons, (gt + 1) & MAX_ID, count, budget)
            else:
                n0 = len(ops) if ops is not None else 0
                moved = g.last_id
                body = group_body(s, key, gname, g, cons, count, noack, ops, claim, budget)
                if body is None:
                    continue
                if g.last_id != moved or (ops is not None and len(ops) > n0) or claim is not None:
                    srv.dirty += 1        # it propagates (7.2: a history read does not)
            served += 1
            if resp2:
                parts.append(b"*2\r\n")
            parts.append(bulk_str(key))
            parts.append(body)
            continue
        if not (s.length and s.last_valid_id() > gt) or (budget is not None and budget.done()):
            continue
        start = (gt + 1) & MAX_ID
        if budget is None:
            items = s.range(start, MAX_ID, count)
        else:
            items = budget.take(s.range(start, MAX_ID, budget.left(count)))
            if not items:
                continue
        served += 1
        if resp2:
            parts.append(b"*2\r\n")
        parts.append(bulk_str(key))
        parts.append(entries_reply(items))
    if group_mode:
        propagate_ops(c, argv, ops, dirty0)
    if served:
        return (b"*%d\r\n" % served if resp2 else b"%%%d\r\n" % served) + b"".join(parts)
    if deadline is None:
        return c.null_array
    if not _may_block(c):
        return c.null_array

    # Run again when a stream is added to (with XREADGROUP: on any change
    # of its keys, the stream gone, its type or its group: then the
    # command's own -NOGROUP / -WRONGTYPE), as Redis 7.2 does; "$" is
    # fixed to the last ID now, as Redis rewrites it, so that the run
    # again serves what was added since.
    rerun = argv
    if not group_mode and b"$" in idargs:
        at = streams_arg + nstreams
        rerun = list(argv)
        for k in range(nstreams):
            if idargs[k] == b"$":
                rerun[at + k] = id_bytes(ids[k])
    srv.blocking_handler.block_keys(c, keys, deadline, b"stream", group_mode, rerun)
    if claim is not None and srv.loop is not None:
        _arm_claim_wake(c, c.bstate, keys, gname, claim)
    return None


def _arm_claim_wake(c, st, keys, gname, claim):
    """A reader blocked with CLAIM is also served when a pending entry
    becomes idle long enough: wake it then (at the latest after min-idle
    ms, for entries delivered meanwhile), as if its keys were signalled."""
    db = c.db
    now = mstime()
    delay = max(claim, 10)
    for key in keys:
        s = db.lookup_nostats(key)
        g = s.groups.get(gname) if s.__class__ is StreamValue and s.groups else None
        if g is not None:
            for nack in g.pel.values():
                d = nack.delivery_time + claim - now
                if d < delay:
                    delay = d
    c.server.loop.call_later(max(delay, 1) / 1000.0, _claim_wake, c, st, keys, gname, claim)


def _claim_wake(c, st, keys, gname, claim):
    if c.bstate is not st or c.closing:
        return
    srv = c.server
    db = st.db
    for key in keys:
        srv.ready_keys.append((db, key))
    srv.blocking_handler.handle_ready_keys()
    if c.bstate is st:
        _arm_claim_wake(c, st, keys, gname, claim)


@command("xread")
def xread(c, argv):
    return _xread(c, argv, False)


@command("xreadgroup")
def xreadgroup(c, argv):
    return _xread(c, argv, True)
