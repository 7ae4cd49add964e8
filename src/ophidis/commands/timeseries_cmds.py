"""Time series commands (Redis 8's built-in RedisTimeSeries): one series,
TS.CREATE ALTER ADD MADD INCRBY DECRBY CREATERULE DELETERULE GET RANGE
REVRANGE DEL INFO, with the lookups and compaction the other time series
commands share.  The commands that select series by a label filter are in
timeseries_filters.py (TS.MGET MRANGE MREVRANGE QUERYINDEX QUERYLABELS),
Redis 8.10's TS.READ and TS.NRANGE / NREVRANGE in timeseries_reads.py, the
argument parsing and reply shapes they all use in timeseries_args.py.

The value is a ``TimeSeries`` (types/timeseries.py).  Keyspace events are
the module's (``ts.add``, ``ts.create`` ..., class ``d``; ``ts.incrby`` /
``ts.decrby`` in class ``g``); TS.ADD / MADD / INCRBY / DECRBY with an
automatic timestamp propagate with the timestamp used.  Compaction rules
are applied as samples arrive: the destination gets a bucket's value when a
later bucket starts; out-of-order inserts and TS.DEL recompute the buckets
they touch.
"""

from __future__ import annotations

from bisect import bisect_left

from ..cluster.slots import key_hash_slot
from ..cmdtable.registry import command
from ..errors import RedisError
from ..keyspace import notify
from ..keyspace.db import mstime, signal_key_ready
from ..protocol.resp import OK, array_header, bulk, double, error, integer, map_header, null, simple
from ..replication.propagate import propagating, rewrite_argv
from ..types import timeseries as T
from ..types import ts_aggregate as A
from ..types.timeseries import TimeSeries
from .timeseries_args import (CreateArgs, arg_index, arity, dup_policy, parse_aggregation, parse_create, parse_dbl,
                              parse_ll, parse_range, parse_ts, reply_labels, reply_last, reply_rows, tsdb_err)

_MODULE = notify.MODULE
_GENERIC = notify.GENERIC

_NOT_EXISTS = tsdb_err("the key does not exist")
_WRONGTYPE = RedisError("ERR WRONGTYPE Operation against a key holding the wrong kind of value")
_NOT_TSDB = tsdb_err("the key is not a TSDB key")
_UPSERT = tsdb_err("Error at upsert, update is not supported when DUPLICATE_POLICY is set to BLOCK mode, "
                   "or either current or new value is NaN and DUPLICATE_POLICY is MAX/MIN/SUM")


# -- lookups --------------------------------------------------------------------

def track_name(db, v: TimeSeries, key):
    """A series found under another name than the one it was last used
    under: renamed (the old name is gone), the series related to it by
    compaction rules are pointed at the new name, as the module does on
    RENAME; a copy (RESTORE, the old name still holds another series)
    keeps no rule references, as the module's DUMP does not."""
    old = v.name
    if old == key:
        return
    v.name = bytes(key)
    if not v.rules and v.src is None:
        return
    d = db.d
    prev = d.get(old)
    if prev is not None and prev is not v:
        v.rules = []
        v.src = None
        return
    for rule in v.rules:
        dst = d.get(rule.dest)
        if dst is not None and dst.__class__ is TimeSeries and dst.src == old:
            dst.src = v.name
    if v.src is not None:
        src = d.get(v.src)
        if src is not None and src.__class__ is TimeSeries:
            rule = src.rule_for(old)
            if rule is not None:
                rule.dest = v.name


def get_series(c, key, write=False) -> TimeSeries:
    db = c.db
    v = db.lookup_write(key) if write else db.lookup_read(key)
    if v is None:
        raise _NOT_EXISTS
    if v.__class__ is not TimeSeries:
        raise _WRONGTYPE
    track_name(c.db, v, key)
    return v


def _peek(db, key):
    """A series for internal use (compaction destinations): no stats, None
    when missing or another type."""
    v = db.lookup_write(key)
    if v.__class__ is not TimeSeries:
        return None
    track_name(db, v, key)
    return v


def _renamed(db, old: bytes):
    """The series last used as ``old`` that now lives under another key
    (renamed and not used since), as (key, series), or None."""
    for key, v in db.d.items():
        if v.__class__ is TimeSeries and v.name == old and key != old:
            return key, v
    return None


def _prune(c, s: TimeSeries):
    """deleteReferenceToDeletedSeries: rules whose destination is gone (or
    no longer names this series as its source) and a source that is gone
    are forgotten (a renamed one is followed to its new key)."""
    db = c.db
    d = db.d
    if s.rules:
        keep = []
        for rule in s.rules:
            dst = d.get(rule.dest)
            if dst is None:
                found = _renamed(db, rule.dest)
                if found is not None:
                    track_name(db, found[1], found[0])
                    dst = found[1]
            if dst is not None and dst.__class__ is TimeSeries and dst.src == s.name:
                keep.append(rule)
        if len(keep) != len(s.rules):
            s.rules = keep
    if s.src is not None:
        src = d.get(s.src)
        if src is None:
            found = _renamed(db, s.src)
            if found is not None:
                track_name(db, found[1], found[0])
                src = found[1]
        if src is None or src.__class__ is not TimeSeries or src.rule_for(s.name) is None:
            s.src = None


def _done(c, key, event: bytes, cls=_MODULE):
    db = c.db
    db.signal(key)
    notify.notify(cls, event, key, db.id)
    c.server.dirty += 1


def _rule_done(c, src_key, dst_key, src_event: bytes, dst_event: bytes):
    """_done for a compaction rule's two keys: each signalled and notified,
    one write."""
    db = c.db
    db.signal(src_key)
    db.signal(dst_key)
    notify.notify(_MODULE, src_event, src_key, db.id)
    notify.notify(_MODULE, dst_event, dst_key, db.id)
    c.server.dirty += 1


_UNITS = {"": 1, "m": 1, "s": 1000, "M": 60000, "h": 3600000, "d": 86400000}


def _duration(tok: str, zero_ok: bool):
    n = len(tok) - (1 if tok[-1:] in "msMhd" else 0)
    v = int(tok[:n]) * _UNITS[tok[n:]]
    if v == 0 and not zero_ok:
        raise ValueError(tok)
    return v


def _policy(text: str):
    """ts-compaction-policy's rules as (aggregator, bucket, retention,
    alignment); the configuration checked the syntax."""
    out = []
    for part in text.split(";"):
        if not part:
            continue
        f = part.split(":")
        try:
            out.append((A.BY_NAME[f[0].lower().encode()], _duration(f[1], False), _duration(f[2], True),
                        _duration(f[3], True) if len(f) > 3 else 0))
        except (KeyError, ValueError, IndexError):
            return []
    return out


def _policy_rules(c, key, s: TimeSeries):
    """SeriesCreateRulesFromGlobalConfig: a series created by TS.ADD /
    INCRBY / DECRBY gets a compaction of its own per ts-compaction-policy
    rule, named <key>_<AGG>_<bucket>[_<alignment>], labelled with the
    source's labels plus aggregation and time_bucket."""
    text = c.server.config["ts-compaction-policy"]
    if not text:
        return
    db = c.db
    cfg = c.server.config
    for kind, bucket, retention, align in _policy(text):
        name = A.NAMES[kind]
        dest = b"%s_%s_%d" % (key, name, bucket) + (b"_%d" % align if align else b"")
        if cfg["cluster-enabled"] and key_hash_slot(dest) != key_hash_slot(key):
            continue            # the module skips a compaction that would live in another slot
        if db.lookup_write(dest) is not None:
            continue
        labels = list(s.labels) + [(b"aggregation", name), (b"time_bucket", b"%d" % bucket)]
        opts = T.OPT_UNCOMPRESSED if cfg["ts-encoding"] == "uncompressed" else T.OPT_COMPRESSED
        d = TimeSeries(dest, retention, cfg["ts-chunk-size-bytes"], opts, T.DP_NONE, 0, 0.0, labels)
        d.src = bytes(key)
        db.add(dest, d)
        s.rules.append(T.Rule(dest, bucket, align, kind))


def _new_series(key, cc: CreateArgs) -> TimeSeries:
    return TimeSeries(bytes(key), cc.retention, cc.chunk_size, cc.options, cc.dup, cc.ignore_td,
                      cc.ignore_vd, cc.labels)


@command("ts.create")
def ts_create(c, argv):
    if len(argv) < 2:
        raise arity(argv)
    cc = parse_create(argv, c.server.config)
    key = argv[1]
    db = c.db
    if db.lookup_write(key) is not None:
        raise tsdb_err("key already exists")
    db.add(key, _new_series(key, cc))
    _done(c, key, b"ts.create")
    return OK


@command("ts.alter")
def ts_alter(c, argv):
    if len(argv) < 2:
        raise arity(argv)
    cc = parse_create(argv, c.server.config)
    key = argv[1]
    s = get_series(c, key, write=True)
    if arg_index(argv, b"retention") > 0:
        s.retention = cc.retention
    if arg_index(argv, b"chunk_size") > 0:
        s.chunk_size = cc.chunk_size
    if arg_index(argv, b"duplicate_policy") > 0:
        s.dup = cc.dup
    if arg_index(argv, b"labels") > 0:
        s.labels = cc.labels
    if arg_index(argv, b"ignore") > 0:
        s.ignore_td, s.ignore_vd = cc.ignore_td, cc.ignore_vd
    _done(c, key, b"ts.alter")
    return OK


# -- adding samples and compaction -------------------------------------------------------

def _internal_add(c, s: TimeSeries, t: int, v: float, dp_override: int):
    """internalAdd: the sample added (or the IGNORE filter's last
    timestamp); raises the module's error otherwise."""
    last = s.last_ts
    n = len(s.ts)
    if s.retention and t < last and s.retention < last - t:
        raise tsdb_err("Timestamp is older than retention")
    dp = dp_override or s.dup or T.DP_BY_NAME[c.server.config["ts-duplicate-policy"].encode()]
    if (dp == T.DP_LAST and n and v == v and s.last_v == s.last_v and t >= last
            and t - last <= s.ignore_td and abs(v - s.last_v) <= s.ignore_vd):
        return last, False
    if n and t <= last:
        try:
            s.upsert(t, v, dp)
        except T.UpsertError:
            raise _UPSERT from None
        if s.rules:
            _upsert_compaction(c, s, t)
    else:
        s.append(t, v)
        if s.rules:
            _prune(c, s)
        for rule in s.rules:
            _compact(c, s, rule, t, v)
    signal_key_ready(c.db, s.name)
    return t, True


def _compact(c, s: TimeSeries, rule: T.Rule, t: int, v: float):
    """handleCompaction: a new sample of the source for one rule."""
    cur = rule.bucket_start(t)
    cur_n = max(0, cur)
    ctx = rule.ctx
    twa = rule.kind == A.AGG_TWA
    if rule.start == -1:
        rule.start = cur_n
        if twa:
            ctx.bounds(cur_n, cur + rule.bucket)
    if cur_n > rule.start:
        dest = _peek(c.db, rule.dest)
        if dest is not None:
            if twa and v == v and rule.valid:
                ctx.next_sample(v, t)
            had = rule.valid
            if had:
                val = ctx.value()
                _add_to_dest(c, dest, rule.dest, rule.start, val)
            last = (ctx.pts, ctx.pv) if twa else None
            ctx.reset()
            rule.valid = False
            if twa:
                ctx.bounds(cur_n, cur + rule.bucket)
                if had and last[1] == last[1]:
                    ctx.prev_sample(last[1], last[0])
            rule.start = cur_n
    if ctx.accepts(v):
        ctx.add(v, t)
        rule.valid = True


def _add_to_dest(c, dest: TimeSeries, key, t: int, v: float):
    try:
        _internal_add(c, dest, t, v, T.DP_LAST)
    except RedisError:
        return
    db = c.db
    db.signal(key)
    notify.notify(_MODULE, b"ts.add:dest", key, db.id)


def _bucket_value(rule: T.Rule, samples):
    a = A.new(rule.kind)
    took = False
    for t, v in samples:
        if a.accepts(v):
            a.add(v, t)
            took = True
    return a.value() if took else None


def _calc(s: TimeSeries, rule: T.Rule, bs: int):
    """SeriesCalcRange over the bucket starting at bs (unnormalized): its
    value, or None when no sample of it is one the aggregator takes."""
    return _bucket_value(rule, s.bucket_samples(max(0, bs), bs + rule.bucket - 1))


def _reopen(s: TimeSeries, rule: T.Rule, bs: int) -> bool:
    """The rule's current bucket rebuilt from the source's samples of the
    bucket starting at bs; False when it has none the aggregator takes."""
    bn = max(0, bs)
    ctx = rule.ctx
    ctx.reset()
    rule.valid = False
    if rule.kind == A.AGG_TWA:
        ctx.bounds(bn, bs + rule.bucket)
        i = bisect_left(s.ts, bn)
        if i > 0 and s.vs[i - 1] == s.vs[i - 1]:
            ctx.prev_sample(s.vs[i - 1], s.ts[i - 1])
    for t, v in s.bucket_samples(bn, bs + rule.bucket - 1):
        if ctx.accepts(v):
            ctx.add(v, t)
            rule.valid = True
    return rule.valid


def _dest_upsert(c, rule: T.Rule, t: int, v: float):
    """RuleSeriesUpsertSample: a recomputed finished bucket into the
    destination (policy LAST)."""
    dest = _peek(c.db, rule.dest)
    if dest is None:
        return
    if not dest.ts or t > dest.ts[-1]:
        dest.append(t, v)
    else:
        dest.upsert(t, v, T.DP_LAST)
    signal_key_ready(c.db, rule.dest)


def _dest_delete(c, rule: T.Rule, lo: int, hi: int):
    dest = _peek(c.db, rule.dest)
    if dest is not None and hi >= lo:
        dest.delete_range(lo, hi)


def _upsert_compaction(c, s: TimeSeries, t: int):
    """upsertCompaction: an insert at or before the last timestamp."""
    _prune(c, s)
    for rule in s.rules:
        cur = rule.bucket_start(s.last_ts)
        if t >= max(0, cur):
            _reopen(s, rule, cur)
            rule.start = max(0, cur)
        else:
            bs = rule.bucket_start(t)
            val = _calc(s, rule, bs)
            if val is not None:
                _dest_upsert(c, rule, max(0, bs), val)


def _delete_compaction(c, s: TimeSeries, lo: int, hi: int, last_before: int):
    """CompactionDelRange: the buckets TS.DEL touched, recomputed; those
    left without samples removed from the destination; the current bucket
    reopened from the destination's last one when it emptied."""
    _prune(c, s)
    for rule in s.rules:
        d = rule.bucket
        cur = rule.bucket_start(last_before)
        curn = max(0, cur)
        latest_deleted = False
        if lo >= curn:
            if not _reopen(s, rule, cur):
                latest_deleted = True
        else:
            sb = rule.bucket_start(lo)
            val = _calc(s, rule, sb)
            if val is None:
                del_start = max(0, sb)
            else:
                del_start = sb + d
                _dest_upsert(c, rule, max(0, sb), val)
            eb = rule.bucket_start(hi)
            if hi >= curn:
                if not _reopen(s, rule, cur):
                    latest_deleted = True
                del_end = max(0, eb - d)
            else:
                val = _calc(s, rule, eb)
                if val is None:
                    del_end = max(0, eb)
                else:
                    del_end = max(0, eb - d)
                    _dest_upsert(c, rule, max(0, eb), val)
            if del_end >= del_start:
                _dest_delete(c, rule, del_start, del_end)
        if latest_deleted:
            dest = _peek(c.db, rule.dest)
            last = 0
            if dest is not None:
                k = bisect_left(dest.ts, last_before) - 1
                if k >= 0:
                    last = dest.ts[k]
                    del dest.ts[k]
                    del dest.vs[k]
            ws = rule.bucket_start(last)
            rule.start = max(0, ws) if _reopen(s, rule, ws) else -1


def _parse_ts_value(tsb, vb):
    v = parse_dbl(vb, allow_nan=True)
    if v is None:
        raise tsdb_err("invalid value")
    t = parse_ll(tsb)
    if t is None:
        raise tsdb_err("invalid timestamp")
    if t < 0:
        raise tsdb_err("invalid timestamp, must be a nonnegative integer")
    return t, v


def _add_one(c, key, tsb, vb, argv):
    """add(): parse, create the series when argv allows it, add."""
    db = c.db
    t, v = _parse_ts_value(tsb, vb)
    s = db.lookup_write(key)
    dp = T.DP_NONE
    if s is None and argv is not None:
        cc = parse_create(argv, c.server.config)
        s = _new_series(key, cc)
        db.add(key, s)
        _policy_rules(c, key, s)
    elif s is None or s.__class__ is not TimeSeries:
        raise _NOT_TSDB
    else:
        track_name(db, s, key)
        if argv is not None:
            d = dup_policy(argv, b"on_duplicate")
            if d is not None:
                dp = d
    return _internal_add(c, s, t, v, dp)


@command("ts.add")
def ts_add(c, argv):
    if len(argv) < 4:
        raise arity(argv)
    key = argv[1]
    tsb = argv[2]
    if tsb == b"*":
        tsb = b"%d" % mstime()
    try:
        t, changed = _add_one(c, key, tsb, argv[3], argv)
    finally:
        c.db.signal(key)
        notify.notify(_MODULE, b"ts.add", key, c.db.id)
    if not changed:
        return integer(t)       # dropped by IGNORE: not propagated, as the module
    c.server.dirty += 1
    if propagating(c.server) and tsb is not argv[2]:
        rewrite_argv(c, [argv[0], key, tsb] + list(argv[3:]))
    return integer(t)


@command("ts.madd")
def ts_madd(c, argv):
    n = len(argv)
    if n < 4 or (n - 1) % 3:
        raise arity(argv)
    now = None
    out = [array_header((n - 1) // 3)]
    repl = [b"TS.MADD"]
    for i in range(1, n, 3):
        key, tsb, vb = argv[i], argv[i + 1], argv[i + 2]
        if tsb == b"*":
            if now is None:
                now = b"%d" % mstime()
            tsb = now
        try:
            t, changed = _add_one(c, key, tsb, vb, None)
        except RedisError as e:
            out.append(error(str(e).encode()))
            continue
        out.append(integer(t))
        if not changed:
            continue
        repl += [key, tsb, vb]
        c.db.signal(key)
        c.server.dirty += 1
    for i in range(1, n, 3):
        notify.notify(_MODULE, b"ts.add", argv[i], c.db.id)
    if propagating(c.server) and len(repl) > 1 and repl[1:] != list(argv[1:]):
        rewrite_argv(c, repl)
    return b"".join(out)


def _incr(c, argv, sign: int, name: bytes):
    if len(argv) < 3:
        raise arity(argv)
    key = argv[1]
    db = c.db
    s = db.lookup_write(key)
    if s is not None and s.__class__ is not TimeSeries:
        raise _WRONGTYPE
    by = parse_dbl(argv[2])
    if by is None:
        raise tsdb_err("invalid increase/decrease value")
    pos = arg_index(argv, b"timestamp")
    local = pos == -1 or (pos + 1 < len(argv) and argv[pos + 1] == b"*")
    if local:
        t = mstime()
    else:
        t = parse_ll(argv[pos + 1]) if pos + 1 < len(argv) else None
        if t is None:
            raise tsdb_err("invalid timestamp")
    if s is None:
        s = _new_series(key, parse_create(argv, c.server.config))
        db.add(key, s)
        _policy_rules(c, key, s)
    else:
        track_name(db, s, key)
    if t < s.last_ts and s.last_ts != 0:
        raise RedisError("TSDB: timestamp must be equal to or higher than the maximum existing timestamp")
    cur = s.last_v
    if cur != cur:
        raise tsdb_err("cannot increment/decrement NaN value")
    res, _ = _internal_add(c, s, t, cur + sign * by, T.DP_LAST)
    if local and propagating(c.server):
        if pos == -1:
            rewrite_argv(c, list(argv) + [b"TIMESTAMP", b"%d" % t])
        else:
            rewrite_argv(c, list(argv[:pos + 1]) + [b"%d" % t] + list(argv[pos + 2:]))
    _done(c, key, name, _GENERIC)
    return integer(res)


@command("ts.incrby")
def ts_incrby(c, argv):
    return _incr(c, argv, 1, b"ts.incrby")


@command("ts.decrby")
def ts_decrby(c, argv):
    return _incr(c, argv, -1, b"ts.decrby")


# -- rules -----------------------------------------------------------------------------
@command("ts.createrule")
def ts_createrule(c, argv):
    if len(argv) not in (6, 7):
        raise arity(argv)
    parsed = parse_aggregation(argv)
    if parsed is None:
        raise arity(argv)
    off, kinds, d = parsed
    align = 0
    if len(argv) == 7:
        align = parse_ts(argv[off + 3])
        if align is None:
            # (a negative one fails to parse too: the module's "should be
            # greater or equal to 0" check comes after and is never reached)
            raise tsdb_err("Couldn't parse alignTimestamp")
    if len(kinds) != 1:
        raise tsdb_err("CREATERULE requires exactly one aggregation type")
    src_key, dst_key = argv[1], argv[2]
    if src_key == dst_key:
        raise tsdb_err("the source key and destination key should be different")
    src = get_series(c, src_key, write=True)
    _prune(c, src)
    if src.src is not None:
        raise tsdb_err("the source key already has a source rule")
    dst = get_series(c, dst_key, write=True)
    _prune(c, dst)
    if dst.rules:
        raise tsdb_err("the destination key already has a dst rule")
    if dst.src is not None:
        raise tsdb_err("the destination key already has a src rule")
    dst.src = bytes(src_key)
    src.rules.append(T.Rule(bytes(dst_key), d, align, kinds[0]))
    _rule_done(c, src_key, dst_key, b"ts.createrule:src", b"ts.createrule:dest")
    return OK


@command("ts.deleterule")
def ts_deleterule(c, argv):
    if len(argv) != 3:
        raise arity(argv)
    src_key, dst_key = argv[1], argv[2]
    src = get_series(c, src_key, write=True)
    _prune(c, src)
    rule = src.rule_for(dst_key)
    if rule is None:
        raise tsdb_err("compaction rule does not exist")
    src.rules.remove(rule)
    dst = get_series(c, dst_key, write=True)
    if dst.src == src_key:
        dst.src = None
    _rule_done(c, src_key, dst_key, b"ts.deleterule:src", b"ts.deleterule:dest")
    return OK


# -- reads, TS.DEL, TS.INFO -----------------------------------------------------------------

def latest_bucket(c, s: TimeSeries):
    """LATEST: the unfinished bucket of a compaction as (ts, value), or
    None (not a compaction, source gone, bucket empty)."""
    if s.src is None:
        return None
    src = c.db.d.get(s.src)
    if src is None or src.__class__ is not TimeSeries:
        return None
    rule = src.rule_for(s.name)
    if rule is None or not rule.valid:
        return None
    return rule.start, rule.ctx.value()


@command("ts.get")
def ts_get(c, argv):
    if len(argv) < 2 or len(argv) > 3:
        raise arity(argv)
    s = get_series(c, argv[1])
    latest = False
    if len(argv) == 3:
        if arg_index(argv, b"latest") <= 0:
            raise tsdb_err("wrong 3rd argument")
        latest = True
    return reply_last(c.resp, s, latest_bucket(c, s) if latest else None)


def _range_reply(c, s: TimeSeries, a: T.RangeArgs, rev: bool) -> bytes:
    extra = latest_bucket(c, s) if a.latest else None
    rows = T.query(s, a, rev, extra)
    return reply_rows(c.resp, rows, len(a.aggs) > 1)


def _range(c, argv, rev):
    if len(argv) < 4:
        raise arity(argv)
    a = parse_range(argv, 2)
    s = get_series(c, argv[1])
    return _range_reply(c, s, a, rev)


@command("ts.range")
def ts_range(c, argv):
    return _range(c, argv, False)


@command("ts.revrange")
def ts_revrange(c, argv):
    return _range(c, argv, True)


@command("ts.del")
def ts_del(c, argv):
    if len(argv) != 4:
        raise arity(argv)
    a = parse_range(argv, 2)
    key = argv[1]
    s = get_series(c, key, write=True)
    if s.rules and s.retention:
        last, ret = s.last_ts, s.retention

        def obsolete(t):
            return last > ret and t < last - ret
        bad = obsolete(a.start)
        for r in s.rules:
            if obsolete(max(0, r.bucket_start(a.start))):
                bad = True
        if bad:
            raise tsdb_err("When a series has compactions, deleting samples or compaction buckets beyond "
                          "the series retention period is not possible")
    last_before = s.last_ts
    n = s.delete_range(a.start, a.end)
    if s.rules:
        _delete_compaction(c, s, a.start, a.end, last_before)
    _done(c, key, b"ts.del")
    return integer(n)


def _info_pairs(c, s: TimeSeries, debug: bool):
    resp = c.resp
    out = []

    def kv(k, v):
        out.append(simple(k) + v)
    n = len(s.ts)
    lo, hi = s.window(0, (1 << 63) - 1)       # samples past the retention window are not counted
    kv(b"totalSamples", integer(hi - lo))
    kv(b"memoryUsage", integer(s.mem_usage()))
    kv(b"firstTimestamp", integer(s.ts[lo] if hi > lo else 0))
    kv(b"lastTimestamp", integer(s.last_ts))
    kv(b"retentionTime", integer(s.retention))
    kv(b"chunkCount", integer(s.chunk_count()))
    kv(b"chunkSize", integer(s.chunk_size))
    kv(b"chunkType", simple(b"uncompressed" if s.options & T.OPT_UNCOMPRESSED else b"compressed"))
    kv(b"duplicatePolicy", simple(T.DP_NAMES[s.dup]) if s.dup in T.DP_NAMES else null(resp))
    kv(b"labels", reply_labels(resp, s.labels))
    kv(b"sourceKey", bulk(s.src) if s.src is not None else null(resp))
    rules = [map_header(resp, len(s.rules)) if resp >= 3 else array_header(len(s.rules))]
    for r in s.rules:
        body = integer(r.bucket) + simple(A.NAMES[r.kind]) + integer(r.align)
        if resp >= 3:
            rules.append(bulk(r.dest) + b"*3\r\n" + body)
        else:
            rules.append(b"*4\r\n" + bulk(r.dest) + body)
    kv(b"rules", b"".join(rules))
    kv(b"ignoreMaxTimeDiff", integer(s.ignore_td))
    kv(b"ignoreMaxValDiff", double(resp, s.ignore_vd))
    if debug:
        kv(b"keySelfName", bulk(s.name))
        spc = s.samples_per_chunk()
        chunks = []
        for k in range(s.chunk_count()):
            lo, hi = k * spc, min(n, (k + 1) * spc)
            cnt = max(0, hi - lo)
            size = s.chunk_size
            body = (simple(b"startTimestamp") + integer(s.ts[lo] if cnt else -1)
                    + simple(b"endTimestamp") + integer(s.ts[hi - 1] if cnt else -1)
                    + simple(b"samples") + integer(cnt)
                    + simple(b"size") + integer(size)
                    + simple(b"bytesPerSample") + double(resp, float(size) / cnt if cnt else 0.0))
            chunks.append((map_header(resp, 5) if resp >= 3 else b"*10\r\n") + body)
        kv(b"Chunks", array_header(len(chunks)) + b"".join(chunks))
    return out


@command("ts.info")
def ts_info(c, argv):
    if len(argv) < 2 or len(argv) > 3:
        raise arity(argv)
    s = get_series(c, argv[1])
    _prune(c, s)
    debug = arg_index(argv[1:], b"debug") >= 0
    pairs = _info_pairs(c, s, debug)
    return map_header(c.resp, len(pairs)) + b"".join(pairs)
