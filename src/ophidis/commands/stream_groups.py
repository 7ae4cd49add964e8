"""Consumer-group commands of streams (t_stream.c): XGROUP, XACK, XACKDEL
(8.2), XNACK (8.8), XPENDING, XCLAIM, XAUTOCLAIM, XINFO, and the
idempotency settings XCFGSET and XIDMPRECORD (8.6).  The stream commands
(XADD ... XREAD, XREADGROUP) are in streams.py, what a group hands its
readers in stream_delivery.py, IDs, replies and propagation ops in
stream_args.py."""

from __future__ import annotations

from itertools import islice

from ..cmdtable.registry import command
from ..errors import SYNTAX, RedisError
from ..keyspace import notify
from ..keyspace.db import mstime, signal_key_ready
from ..protocol.resp import EMPTY_ARRAY, OK, ONE, ZERO, integer, map_header
from ..replication.propagate import propagating
from ..types.stream import (IDMP_DURATION, IDMP_MAXSIZE, INVALID_READ, MAX_ID, NACK, Group, Idmp,
                            StreamValue, id_bytes)
from ..util import parse_int
from .stream_args import (BAD_START, NO_SUCH_KEY, bulk_str, entries_reply, entry_reply, id_reply, parse_id,
                          parse_interval, propagate_ops, range_args, setid_op, xclaim_op)
from .stream_delivery import consumer_for, create_consumer
from .streams import ack, code_array, delete_ids, help_reply, parse_delete_args

_STREAM = notify.STREAM

KEY_REQUIRED = RedisError(
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to "
    "use the MKSTREAM option to create an empty stream automatically.")
BUSYGROUP = RedisError("BUSYGROUP Consumer Group name already exists")


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
    s = c.db.lookup_write_typed(argv[2], StreamValue)
    gname = argv[3]
    g = None
    if not mkstream:
        if s is None:
            raise KEY_REQUIRED
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
        raise BUSYGROUP
    if entries_read > s.entries_added:
        entries_read = s.entries_added      # Redis 8: no more read than was ever added
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
    g.entries_read = min(entries_read, s.entries_added)     # Redis 8's cap, as CREATE
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
    create_consumer(c, g, name, argv[2], c.db)
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
    return help_reply(b"XGROUP", b"""\
CREATE <key> <groupname> <id|$> [option]
    Create a new consumer group. Options are:
    * MKSTREAM
      Create the empty stream if it does not exist.
    * ENTRIESREAD entries_read
      Set the group's entries_read counter (internal use).
CREATECONSUMER <key> <groupname> <consumer>
    Create a new consumer in the specified group.
DELCONSUMER <key> <groupname> <consumer>
    Remove the specified consumer.
DESTROY <key> <groupname>
    Remove the specified group.
SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]
    Set the current group ID and entries_read counter.
""")


# ---------------------------------------------------------------------------
# XACK / XPENDING / XCLAIM / XAUTOCLAIM
# ---------------------------------------------------------------------------
def _stream_group(c, argv):
    """The stream at argv[1] (a read lookup) and its group argv[2]: (stream
    or None, group or None)."""
    s = c.db.lookup_read_typed(argv[1], StreamValue)
    return s, (s.groups.get(argv[2]) if s is not None and s.groups else None)


@command("xack")
def xack(c, argv):
    g = _stream_group(c, argv)[1]
    if g is None:
        return ZERO
    ids = [parse_id(a, 0, strict=True)[0] for a in argv[3:]]
    acked = 0
    pel = g.pel
    for i in ids:
        if ack(pel, i) is not None:
            acked += 1
    c.server.dirty += acked
    return integer(acked)


@command("xackdel")
def xackdel(c, argv):
    """XACKDEL key group [KEEPREF|DELREF|ACKED] IDS numids id ... (8.2):
    XACK then XDELEX; per ID 1 (acknowledged or deleted), -1 (neither),
    2 (ACKED: acknowledged here, still referenced elsewhere: kept)."""
    policy, ids = parse_delete_args(argv, 3)
    db = c.db
    key = argv[1]
    s = db.lookup_write_typed(key, StreamValue)
    g = s.groups.get(argv[2]) if s is not None and s.groups else None
    if g is None:
        return code_array([-1] * len(ids))
    return delete_ids(c, key, s, ids, policy, g.pel)


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
        start, end = range_args(argv[si], argv[si + 1])
        if si + 3 < n:
            consumer_name = argv[si + 3]
    g = _stream_group(c, argv)[1]
    if g is None:
        raise _nogroup(argv)
    pel = g.pel
    if justinfo:
        if not pel:
            return b"*4\r\n:0\r\n" + c.null + c.null + c.null_array
        parts = [b"*4\r\n", integer(len(pel)), id_reply(pel.peekitem(0)[0]),
                 id_reply(pel.peekitem(-1)[0])]
        rows = []
        for cons in g.sorted_consumers():
            if cons.pel:
                cnt = b"%d" % len(cons.pel)
                rows.append(b"*2\r\n" + bulk_str(cons.name) + bulk_str(cnt))
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
            owner = nack.consumer
            elapsed = now - nack.delivery_time
            if elapsed < 0:
                elapsed = 0
            if owner is None:
                elapsed = -1                  # released by XNACK (8.8): no owner, no idle time
            rows.append(b"*4\r\n" + id_reply(i) + bulk_str(owner.name if owner is not None else b"")
                        + integer(elapsed)
                        + integer(nack.delivery_count))
            if len(rows) >= count:
                break
    return b"*%d\r\n" % len(rows) + b"".join(rows)


class _Claim:
    """What XCLAIM and XAUTOCLAIM do with each pending entry they take:
    give it to the consumer argv[3] (created on first use), or drop it from
    the PEL when its entry was deleted from the stream; either propagates
    as an XCLAIM (streamPropagateXCLAIM) and counts as a change.  The
    consumer is made (or seen) first, whatever is claimed (Redis 7.2), and
    its active time is set by each entry it takes."""
    __slots__ = ("c", "argv", "g", "justid", "srv", "dirty0", "ops", "cons")

    def __init__(self, c, argv, g, justid):
        self.c = c
        self.argv = argv
        self.g = g
        self.justid = justid
        srv = self.srv = c.server
        self.dirty0 = srv.dirty
        self.ops = [] if propagating(srv) else None
        self.cons = consumer_for(c, g, argv[2], argv[3], argv[1], c.db)

    def propagate(self, op):
        if self.ops is not None:
            self.ops.append(op)
        self.srv.dirty += 1

    def drop(self, i, nack, idarg):
        """Entry i is no longer in the stream: out of the PEL."""
        argv = self.argv
        self.propagate(xclaim_op(argv[1], argv[2], self.g, idarg, nack))
        del self.g.pel[i]
        if nack.consumer is not None:
            del nack.consumer.pel[i]

    def take(self, i, nack, fv, idarg, when, retrycount=-1):
        """Give pending entry i to the consumer; returns its reply."""
        argv = self.argv
        cons = self.cons
        cons.active_time = mstime()
        if nack.consumer is not cons and nack.consumer is not None:
            del nack.consumer.pel[i]
        nack.delivery_time = when
        if retrycount >= 0:
            nack.delivery_count = retrycount
        elif not self.justid:
            nack.delivery_count += 1
        if nack.consumer is not cons:
            cons.pel[i] = nack
            nack.consumer = cons
        self.propagate(xclaim_op(argv[1], argv[2], self.g, idarg, nack))
        return id_reply(i) if self.justid else entry_reply(i, fv)

    def finish(self):
        propagate_ops(self.c, self.argv, self.ops, self.dirty0)


@command("xclaim")
def xclaim(c, argv):
    s, g = _stream_group(c, argv)
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
    claim = _Claim(c, argv, g, justid)
    propagate_last_id = False
    if last_id > g.last_id:
        g.last_id = last_id
        propagate_last_id = True
    if deliverytime != -1:
        if deliverytime < 0 or deliverytime > now:
            deliverytime = now
    else:
        deliverytime = now
    pel = g.pel
    out = []
    for k in range(len(ids)):
        i = ids[k]
        nack = pel.get(i)
        fv = s.get(i)
        if fv is None:
            if nack is not None:
                claim.drop(i, nack, argv[5 + k])
                propagate_last_id = False
            continue
        if force and nack is None:
            nack = NACK(None, now)
            pel[i] = nack
        if nack is None:
            continue
        if nack.consumer is not None and minidle:
            if now - nack.delivery_time < minidle:
                continue
        out.append(claim.take(i, nack, fv, argv[5 + k], deliverytime, retrycount))
        propagate_last_id = False
    if propagate_last_id:
        claim.propagate(setid_op(argv[1], argv[2], g))
    claim.finish()
    return b"*%d\r\n" % len(out) + b"".join(out)


_XAUTOCLAIM_MAX_COUNT = ((1 << 63) - 1) // 16


@command("xautoclaim")
def xautoclaim(c, argv):
    minidle = parse_int(argv[4], RedisError("ERR Invalid min-idle-time argument for XAUTOCLAIM"))
    if minidle < 0:
        minidle = 0
    start, sx = parse_interval(argv[5], 0)
    if sx:
        if start == MAX_ID:
            raise BAD_START
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
    s, g = _stream_group(c, argv)
    if g is None:
        raise _nogroup(argv)
    if count * 16 >= 1 << 40:
        raise RedisError("ERR Insufficient memory, failed allocating transient memory, COUNT too high.")
    claim = _Claim(c, argv, g, justid)
    pel = g.pel
    attempts = count * 10
    now = mstime()
    claimed = []
    deleted = []
    idx = pel.bisect_left(start)
    while attempts and count and idx < len(pel):
        attempts -= 1
        i, nack = pel.peekitem(idx)
        fv = s.get(i)
        if fv is None:
            claim.drop(i, nack, id_bytes(i))
            deleted.append(i)
            count -= 1
            continue
        idx += 1
        if minidle and now - nack.delivery_time < minidle:
            continue
        claimed.append(claim.take(i, nack, fv, id_bytes(i), now))
        count -= 1
    cursor = pel.peekitem(idx)[0] if idx < len(pel) else 0
    claim.finish()
    return (b"*3\r\n" + id_reply(cursor) + b"*%d\r\n" % len(claimed) + b"".join(claimed)
            + b"*%d\r\n" % len(deleted) + b"".join(id_reply(i) for i in deleted))


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
    parts = [map_header(resp, 9 if full else 16),
             b"$6\r\nlength\r\n", integer(s.length),
             b"$15\r\nradix-tree-keys\r\n", integer(len(s.nodes)),
             b"$16\r\nradix-tree-nodes\r\n", integer(s.rax_nodes()),
             b"$17\r\nlast-generated-id\r\n", id_reply(s.last_id),
             b"$20\r\nmax-deleted-entry-id\r\n", id_reply(s.max_deleted),
             b"$13\r\nentries-added\r\n", integer(s.entries_added),
             b"$23\r\nrecorded-first-entry-id\r\n", id_reply(s.first_id)]
    ap = parts.append
    if not full:
        im = s.idmp
        if im is None:
            ap(_IDMP_DEFAULTS)
        else:
            im.purge(mstime())
            ap(b"$13\r\nidmp-duration\r\n%s$12\r\nidmp-maxsize\r\n%s$12\r\npids-tracked\r\n%s"
               b"$12\r\niids-tracked\r\n%s$10\r\niids-added\r\n%s$15\r\niids-duplicates\r\n%s"
               % (integer(im.duration), integer(im.maxsize), integer(len(im.producers)),
                  integer(im.tracked()), integer(im.added), integer(im.duplicates)))
        ap(b"$6\r\ngroups\r\n")
        ap(integer(len(s.groups) if s.groups else 0))
        first = s.range(0, MAX_ID, 1)
        ap(b"$11\r\nfirst-entry\r\n")
        ap(entry_reply(*first[0]) if first else null)
        last = s.range(0, MAX_ID, 1, rev=True)
        ap(b"$10\r\nlast-entry\r\n")
        ap(entry_reply(*last[0]) if last else null)
        return b"".join(parts)
    ap(b"$7\r\nentries\r\n")
    ap(entries_reply(s.range(0, MAX_ID, count)))
    ap(b"$6\r\ngroups\r\n")
    groups = s.sorted_groups()
    ap(b"*%d\r\n" % len(groups))
    for name, g in groups:
        ap(map_header(resp, 7))
        ap(b"$4\r\nname\r\n" + bulk_str(name))
        ap(b"$17\r\nlast-delivered-id\r\n" + id_reply(g.last_id))
        ap(b"$12\r\nentries-read\r\n")
        ap(integer(g.entries_read) if g.entries_read != INVALID_READ else null)
        ap(b"$3\r\nlag\r\n")
        lag = s.group_lag(g)
        ap(integer(lag) if lag is not None else null)
        ap(_pel_field(g.pel, count, lambda i, nack: b"*4\r\n" + id_reply(i) + bulk_str(_owner(nack))
                      + integer(nack.delivery_time) + integer(nack.delivery_count)))
        consumers = g.sorted_consumers()
        ap(b"$9\r\nconsumers\r\n*%d\r\n" % len(consumers))
        for cons in consumers:
            ap(map_header(resp, 5))
            ap(b"$4\r\nname\r\n" + bulk_str(cons.name))
            ap(b"$9\r\nseen-time\r\n" + integer(cons.seen_time))
            ap(b"$11\r\nactive-time\r\n" + integer(cons.active_time))
            ap(_pel_field(cons.pel, count, lambda i, nack: b"*3\r\n" + id_reply(i)
                          + integer(nack.delivery_time) + integer(nack.delivery_count)))
    return b"".join(parts)


# XINFO STREAM's idempotency fields (Redis 8.6) of a stream without IDMP state
_IDMP_DEFAULTS = (b"$13\r\nidmp-duration\r\n:%d\r\n$12\r\nidmp-maxsize\r\n:%d\r\n$12\r\npids-tracked\r\n:0\r\n"
                  b"$12\r\niids-tracked\r\n:0\r\n$10\r\niids-added\r\n:0\r\n$15\r\niids-duplicates\r\n:0\r\n"
                  % (IDMP_DURATION, IDMP_MAXSIZE))


def _owner(nack) -> bytes:
    return nack.consumer.name if nack.consumer is not None else b""


def _pel_field(pel, count, row):
    """XINFO STREAM FULL's pel-count and pending fields of a group or a
    consumer: the first ``count`` entries of pel (all with count 0), each
    ``row(id, nack)``."""
    rows = [row(i, nack) for i, nack in (islice(pel.items(), count) if count else pel.items())]
    return b"$9\r\npel-count\r\n%s$7\r\npending\r\n*%d\r\n%s" % (integer(len(pel)), len(rows), b"".join(rows))


def _xinfo_lookup(c, argv):
    s = c.db.lookup_read_typed(argv[2], StreamValue)
    if s is None:
        raise NO_SUCH_KEY
    return s


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
        ap(b"$4\r\nname\r\n" + bulk_str(name))
        ap(b"$9\r\nconsumers\r\n" + integer(len(g.consumers)))
        ap(b"$7\r\npending\r\n" + integer(len(g.pel)))
        ap(b"$17\r\nlast-delivered-id\r\n" + id_reply(g.last_id))
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
        ap(map_header(resp, 4))
        ap(b"$4\r\nname\r\n" + bulk_str(cons.name))
        ap(b"$7\r\npending\r\n" + integer(len(cons.pel)))
        ap(b"$4\r\nidle\r\n" + integer(idle))
        at = cons.active_time
        ap(b"$8\r\ninactive\r\n" + integer(now - at if at != -1 else -1))
    return b"".join(parts)


@command("xinfo|help")
def xinfo_help(c, argv):
    return help_reply(b"XINFO", b"""\
CONSUMERS <key> <groupname>
    Show consumers of <groupname>.
GROUPS <key>
    Show the stream consumer groups.
STREAM <key> [FULL [COUNT <count>]
    Show information about the stream.
""")


# ---------------------------------------------------------------------------
# Idempotent adds' settings and records (Redis 8.6)
# ---------------------------------------------------------------------------
_BAD_DURATION = RedisError("ERR invalid duration")
_BAD_MAXSIZE = RedisError("ERR invalid maxsize")


@command("xcfgset")
def xcfgset(c, argv):
    """XCFGSET key [IDMP-DURATION seconds] [IDMP-MAXSIZE n]: the stream's
    idempotency settings; the producers' records are cleared."""
    duration = maxsize = None
    n = len(argv)
    j = 2
    while j < n:
        opt = argv[j].lower()
        if opt == b"idmp-duration" and j + 1 < n and duration is None:
            duration = parse_int(argv[j + 1], _BAD_DURATION)
            if not 1 <= duration <= 86400:
                raise _BAD_DURATION
        elif opt == b"idmp-maxsize" and j + 1 < n and maxsize is None:
            maxsize = parse_int(argv[j + 1], _BAD_MAXSIZE)
            if not 1 <= maxsize <= 10000:
                raise _BAD_MAXSIZE
        else:
            raise SYNTAX
        j += 2
    if duration is None and maxsize is None:
        raise SYNTAX
    s = c.db.lookup_write_typed(argv[1], StreamValue)
    if s is None:
        raise NO_SUCH_KEY
    im = s.idmp
    if im is None:
        im = s.idmp = Idmp()
    if duration is not None:
        im.duration = duration
    if maxsize is not None:
        im.maxsize = maxsize
    im.producers = {}
    c.server.dirty += 1
    return OK


@command("xidmprecord")
def xidmprecord(c, argv):
    """XIDMPRECORD key pid iid id (internal, how the AOF and replicas learn
    an idempotent ID): (pid, iid) now stands for entry id."""
    i = parse_id(argv[4], 0, strict=True)[0]
    s = c.db.lookup_write_typed(argv[1], StreamValue)
    if s is None:
        raise NO_SUCH_KEY
    pid, iid = argv[2], argv[3]
    if not pid or not iid:
        raise RedisError("ERR IDMP producer and idempotent IDs must not be empty")
    if s.get(i) is None:
        raise RedisError("ERR no such stream entry")
    now = mstime()
    im = s.idmp
    if im is None:
        im = s.idmp = Idmp()
    found = im.find(pid, iid, now)
    if found is not None:
        if found != i:
            raise RedisError("ERR the producer and idempotent IDs are recorded for another entry")
        return OK
    im.record(pid, iid, i, now)
    c.server.dirty += 1
    return OK


# ---------------------------------------------------------------------------
# XNACK (Redis 8.8)
# ---------------------------------------------------------------------------
_NACK_MODES = {b"silent": 0, b"fail": 1, b"fatal": 2}
_LLONG_MAX = (1 << 63) - 1


@command("xnack")
def xnack(c, argv):
    """XNACK key group SILENT|FAIL|FATAL IDS numids id ... [RETRYCOUNT n]
    [FORCE]: give pending entries back to the group, owned by nobody,
    with a delivery time of 0 (claimable at once, the first to be claimed,
    in release order); SILENT takes the delivery back from the counter,
    FATAL sets it to LLONG_MAX, RETRYCOUNT sets it; FORCE makes such
    entries for IDs of the stream not pending.  Replies how many."""
    mode = _NACK_MODES.get(argv[3].lower())
    if mode is None:
        raise RedisError("ERR mode must be SILENT, FAIL, or FATAL")
    if argv[4].lower() != b"ids":
        raise SYNTAX
    try:
        num = parse_int(argv[5])
    except RedisError:
        num = 0
    if num < 1:
        raise RedisError("ERR numids must be a positive integer")
    n = len(argv)
    if num > n - 6:
        raise RedisError("ERR number of IDs doesn't match numids")
    ids = [parse_id(a, 0, strict=True)[0] for a in argv[6:6 + num]]
    retry = -1
    force = False
    j = 6 + num
    while j < n:
        opt = argv[j].lower()
        if opt == b"retrycount" and j + 1 < n:
            retry = parse_int(argv[j + 1])
            if retry < 0:
                raise RedisError("ERR Invalid RETRYCOUNT value, must be >= 0")
            j += 2
        elif opt == b"force":
            force = True
            j += 1
        else:
            raise SYNTAX
    s, g = _stream_group(c, argv)
    if g is None:
        return ZERO
    pel = g.pel
    nacked = g.nacked
    released = 0
    for i in ids:
        nack = pel.get(i)
        if nack is None:
            if not force or s.get(i) is None:
                continue
            nack = NACK(None, 0)
            nack.delivery_count = 0 if mode != 2 else _LLONG_MAX
            pel[i] = nack
        else:
            if nack.consumer is not None:
                del nack.consumer.pel[i]
                nack.consumer = None
            if mode == 0:
                nack.delivery_count = max(nack.delivery_count - 1, 0)
            elif mode == 2:
                nack.delivery_count = _LLONG_MAX
        nack.delivery_time = 0
        if retry >= 0:
            nack.delivery_count = retry
        nacked.pop(i, None)
        nacked[i] = None
        released += 1
    if len(nacked) > 2 * len(pel) + 16:
        # drop what was acknowledged or claimed since
        g.nacked = {i: None for i in nacked if i in pel and pel[i].consumer is None}
    c.server.dirty += released
    return integer(released)
