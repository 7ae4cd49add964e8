"""Time series commands (Redis 8's built-in RedisTimeSeries): TS.CREATE
ALTER ADD MADD INCRBY DECRBY CREATERULE DELETERULE DEL GET MGET RANGE
REVRANGE MRANGE MREVRANGE INFO QUERYINDEX, and Redis 8.10's TS.READ,
TS.QUERYLABELS, TS.NRANGE / NREVRANGE.

The value is a ``TimeSeries`` (types/timeseries.py).  Options are found
the module's way (the first argument equal to the keyword, anywhere in the
command), errors are its ``ERR TSDB: ...`` texts, replies its shapes
(RESP2 values as simple strings in its shortest form, RESP3 doubles and
maps).  Keyspace events are the module's (``ts.add``, ``ts.create`` ...,
class ``d``; ``ts.incrby`` / ``ts.decrby`` in class ``g``); TS.ADD / MADD /
INCRBY / DECRBY with an automatic timestamp propagate with the timestamp
used.  Compaction rules are applied as samples arrive: the destination
gets a bucket's value when a later bucket starts; out-of-order inserts and
TS.DEL recompute the buckets they touch.

MGET / MRANGE / QUERYINDEX evaluate their label filter over the series of
the selected database.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_left

from ..acl.check import check_key
from ..acl.users import READ
from ..cluster.slots import key_hash_slot
from ..cmdtable.registry import command
from ..errors import RedisError, arity_error
from ..keyspace import notify
from ..keyspace.db import mstime, signal_key_ready
from ..protocol.resp import (
    OK,
    array_header,
    bulk,
    double,
    error,
    integer,
    map_header,
    null,
    set_header,
    simple,
)
from ..replication.propagate import propagating, rewrite_argv
from ..types import timeseries as T
from ..types import ts_aggregate as A
from ..types.timeseries import TimeSeries

_MODULE = notify.MODULE
_GENERIC = notify.GENERIC
I64_MAX = (1 << 63) - 1
_INT_RE = re.compile(rb"-?(0|[1-9][0-9]*)\Z")


def _err(msg: str) -> RedisError:
    return RedisError("ERR TSDB: " + msg)


_NOT_EXISTS = _err("the key does not exist")
_WRONGTYPE = RedisError("ERR WRONGTYPE Operation against a key holding the wrong kind of value")
_NOT_TSDB = _err("the key is not a TSDB key")
_NOPERM = RedisError("NOPERM TSDB: current user doesn't have read permission to one or more keys that match "
                     "the specified filter")
_UPSERT = _err("Error at upsert, update is not supported when DUPLICATE_POLICY is set to BLOCK mode, "
               "or either current or new value is NaN and DUPLICATE_POLICY is MAX/MIN/SUM")


def _arity(argv):
    return arity_error(argv[0].decode("utf-8", "replace").lower())


def _idx(argv, word: bytes) -> int:
    """RMUtil_ArgIndex: the first argument equal (case-insensitively) to
    word, the command name and key included; -1 when none."""
    n = len(word)
    for i, a in enumerate(argv):
        if len(a) == n and a.lower() == word:
            return i
    return -1


def _ll(b):
    """RedisModule_StringToLongLong; None when it does not parse."""
    if not _INT_RE.match(b):
        return None
    v = int(b)
    if v < -(1 << 63) or v > I64_MAX:
        return None
    return v


def _dbl(b, allow_nan=False):
    """A double argument; None when it does not parse."""
    if not b or b[:1].isspace() or b[-1:].isspace() or b"_" in b or len(b) > 512:
        return None
    try:
        v = float(b)
    except ValueError:
        return None
    if v != v and not allow_nan:
        return None
    return v


def _ts_arg(b):
    v = _ll(b)
    if v is None or v < 0:
        return None
    return v


# -- replies ------------------------------------------------------------------

def _fmt(d: float) -> bytes:
    """The module's RESP2 text of a double (dragonbox's shortest digits:
    plain notation for moderate magnitudes, else d.dddE±x)."""
    if d != d:
        return b"NaN"
    if d in (float("inf"), float("-inf")):
        return b"Infinity" if d > 0 else b"-Infinity"
    if d == 0:
        return b"-0" if str(d)[0] == "-" else b"0"
    r = repr(abs(d))
    sign = "-" if d < 0 else ""
    mant, _, exp = r.partition("e")
    e = int(exp) if exp else 0
    ip, _, fp = mant.partition(".")
    if fp == "0":
        fp = ""
    digits = (ip + fp).lstrip("0")
    # decimal exponent of the last digit
    e += len(ip) - len((ip + fp)) if ip != "0" else -len(fp)
    if ip == "0":
        digits = fp.lstrip("0")
    # keep the integer's trailing zeros as the module does (100 -> "100")
    if e > 0 and len(digits) + e <= 17:
        digits += "0" * e
        e = 0
    nd = len(digits)
    if -16 <= e <= 0 and nd + e > 0:
        if e == 0:
            return (sign + digits).encode()
        return (sign + digits[:nd + e] + "." + digits[nd + e:]).encode()
    sci = e + nd - 1
    body = digits[0] + ("." + digits[1:] if nd > 1 else "")
    return ("%s%sE%d" % (sign, body, sci)).encode()


def _val(resp: int, d: float) -> bytes:
    if resp >= 3:
        return double(3, d)
    return simple(_fmt(d))


def _sample(resp, t, v) -> bytes:
    return b"*2\r\n" + integer(t) + _val(resp, v)


def _row(resp, t, vals) -> bytes:
    return array_header(1 + len(vals)) + integer(t) + b"".join(_val(resp, v) for v in vals)


def _rows(resp, rows, multi: bool) -> bytes:
    out = [array_header(len(rows))]
    if multi:
        for t, vals in rows:
            out.append(_row(resp, t, vals))
    else:
        for t, v in rows:
            if isinstance(v, list):
                v = v[0]
            out.append(_sample(resp, t, v))
    return b"".join(out)


def _labels(resp, pairs) -> bytes:
    """ReplyWithSeriesLabels: a map (RESP3) or an array of pairs."""
    out = [map_header(resp, len(pairs)) if resp >= 3 else array_header(len(pairs))]
    for k, v in pairs:
        if resp < 3:
            out.append(b"*2\r\n")
        out.append(bulk(k))
        out.append(bulk(v) if v is not None else null(resp))
    return b"".join(out)


def _selected(s: TimeSeries, names):
    out = []
    for n in names:
        ln = n.lower()
        for k, v in s.labels:
            if k.lower() == ln:
                out.append((k, v))
                break
        else:
            out.append((n, None))
    return out


def _last(resp, s: TimeSeries, latest=None) -> bytes:
    if latest is not None:
        return _sample(resp, latest[0], latest[1])
    if not s.ts:
        return b"*0\r\n"
    return _sample(resp, s.ts[-1], s.vs[-1])


# -- lookups --------------------------------------------------------------------

def _named(db, v: TimeSeries, key):
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


def _get(c, key, write=False) -> TimeSeries:
    db = c.db
    v = db.lookup_write(key) if write else db.lookup_read(key)
    if v is None:
        raise _NOT_EXISTS
    if v.__class__ is not TimeSeries:
        raise _WRONGTYPE
    _named(c.db, v, key)
    return v


def _peek(db, key):
    """A series for internal use (compaction destinations): no stats, None
    when missing or another type."""
    v = db.lookup_write(key)
    if v.__class__ is not TimeSeries:
        return None
    _named(db, v, key)
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
                    _named(db, found[1], found[0])
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
                _named(db, found[1], found[0])
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


# -- TS.CREATE's options ----------------------------------------------------------------

class _Create:
    __slots__ = ("retention", "chunk_size", "options", "dup", "ignore_td", "ignore_vd", "labels")


def _parse_labels(argv):
    pos = _idx(argv, b"labels")
    if pos < 0:
        return None
    out = []
    n = (len(argv) - pos - 1) // 2
    for i in range(n):
        k = argv[pos + 1 + 2 * i]
        v = argv[pos + 2 + 2 * i]
        if not k or not v or any(ch in v for ch in b"(),"):
            raise _err("Couldn't parse LABELS")
        out.append((bytes(k), bytes(v)))
    return out


def _after(argv, word: bytes, conv, msg: str):
    """RMUtil_ParseArgsAfter for one value: None when word is absent."""
    pos = _idx(argv, word)
    if pos < 0:
        return None
    if pos + 1 >= len(argv):
        raise _err(msg)
    v = conv(argv[pos + 1])
    if v is None:
        raise _err(msg)
    return v


def _dup_policy(argv, word: bytes):
    pos = _idx(argv, word)
    if pos == -1:
        return None
    if pos + 1 >= len(argv):
        raise _err("Couldn't parse DUPLICATE_POLICY")
    p = T.DP_BY_NAME.get(argv[pos + 1].lower())
    if p is None:
        raise _err("Unknown DUPLICATE_POLICY")
    return p


def _parse_create(argv, cfg) -> _Create:
    """parseCreateArgs: the settings of a new series, the ts-* configuration
    giving the defaults."""
    cc = _Create()
    labels = _parse_labels(argv)
    cc.labels = labels or []
    cc.retention = cfg["ts-retention-policy"]
    if _idx(argv, b"retention") > 0:
        r = _after(argv, b"retention", _ll, "Couldn't parse RETENTION")
        if r < 0:
            raise RedisError("TSDB: Couldn't parse RETENTION")
        cc.retention = r
    cc.chunk_size = cfg["ts-chunk-size-bytes"]
    if _idx(argv, b"chunk_size") >= 0:
        cs = _after(argv, b"chunk_size", _ll, "Couldn't parse CHUNK_SIZE")
        if cs < T.CHUNK_MIN or cs > T.CHUNK_MAX or cs % 8:
            raise _err("CHUNK_SIZE value must be a multiple of 8 in the range [48 .. 1048576]")
        cc.chunk_size = cs
    cc.options = T.OPT_UNCOMPRESSED if cfg["ts-encoding"] == "uncompressed" else T.OPT_COMPRESSED
    pos = _idx(argv, b"encoding")
    if pos > 0:
        if pos + 1 >= len(argv):
            raise _arity(argv)
        e = argv[pos + 1].lower()
        if e == b"uncompressed":
            cc.options = T.OPT_UNCOMPRESSED
        elif e == b"compressed":
            cc.options = T.OPT_COMPRESSED
        else:
            raise _err("unknown ENCODING parameter")
    else:
        if _idx(argv, b"uncompressed") > 0:
            cc.options = T.OPT_UNCOMPRESSED
        if _idx(argv, b"compressed") > 0:
            cc.options = T.OPT_COMPRESSED
    d = _dup_policy(argv, b"duplicate_policy")
    cc.dup = T.DP_BY_NAME[cfg["ts-duplicate-policy"].encode()] if d is None else d
    cc.ignore_td, cc.ignore_vd = cfg["ts-ignore-max-time-diff"], float(cfg["ts-ignore-max-val-diff"])
    pos = _idx(argv, b"ignore")
    if pos > 0:
        if pos + 2 >= len(argv):
            raise _err("Couldn't parse IGNORE")
        td = _ll(argv[pos + 1])
        vd = _dbl(argv[pos + 2])
        if td is None or vd is None:
            raise _err("Couldn't parse IGNORE")
        if td < 0 or vd < 0:
            raise _err("IGNORE arguments cannot be negative")
        cc.ignore_td, cc.ignore_vd = td, vd
    return cc


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


def _new_series(key, cc: _Create) -> TimeSeries:
    return TimeSeries(bytes(key), cc.retention, cc.chunk_size, cc.options, cc.dup, cc.ignore_td,
                      cc.ignore_vd, cc.labels)


@command("ts.create")
def ts_create(c, argv):
    if len(argv) < 2:
        raise _arity(argv)
    cc = _parse_create(argv, c.server.config)
    key = argv[1]
    db = c.db
    if db.lookup_write(key) is not None:
        raise _err("key already exists")
    db.add(key, _new_series(key, cc))
    _done(c, key, b"ts.create")
    return OK


@command("ts.alter")
def ts_alter(c, argv):
    if len(argv) < 2:
        raise _arity(argv)
    cc = _parse_create(argv, c.server.config)
    key = argv[1]
    s = _get(c, key, write=True)
    if _idx(argv, b"retention") > 0:
        s.retention = cc.retention
    if _idx(argv, b"chunk_size") > 0:
        s.chunk_size = cc.chunk_size
    if _idx(argv, b"duplicate_policy") > 0:
        s.dup = cc.dup
    if _idx(argv, b"labels") > 0:
        s.labels = cc.labels
    if _idx(argv, b"ignore") > 0:
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
        raise _err("Timestamp is older than retention")
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
    v = _dbl(vb, allow_nan=True)
    if v is None:
        raise _err("invalid value")
    t = _ll(tsb)
    if t is None:
        raise _err("invalid timestamp")
    if t < 0:
        raise _err("invalid timestamp, must be a nonnegative integer")
    return t, v


def _add_one(c, key, tsb, vb, argv):
    """add(): parse, create the series when argv allows it, add."""
    db = c.db
    t, v = _parse_ts_value(tsb, vb)
    s = db.lookup_write(key)
    dp = T.DP_NONE
    if s is None and argv is not None:
        cc = _parse_create(argv, c.server.config)
        s = _new_series(key, cc)
        db.add(key, s)
        _policy_rules(c, key, s)
    elif s is None or s.__class__ is not TimeSeries:
        raise _NOT_TSDB
    else:
        _named(db, s, key)
        if argv is not None:
            d = _dup_policy(argv, b"on_duplicate")
            if d is not None:
                dp = d
    return _internal_add(c, s, t, v, dp)


@command("ts.add")
def ts_add(c, argv):
    if len(argv) < 4:
        raise _arity(argv)
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
        raise _arity(argv)
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
        raise _arity(argv)
    key = argv[1]
    db = c.db
    s = db.lookup_write(key)
    if s is not None and s.__class__ is not TimeSeries:
        raise _WRONGTYPE
    by = _dbl(argv[2])
    if by is None:
        raise _err("invalid increase/decrease value")
    pos = _idx(argv, b"timestamp")
    local = pos == -1 or (pos + 1 < len(argv) and argv[pos + 1] == b"*")
    if local:
        t = mstime()
    else:
        t = _ll(argv[pos + 1]) if pos + 1 < len(argv) else None
        if t is None:
            raise _err("invalid timestamp")
    if s is None:
        s = _new_series(key, _parse_create(argv, c.server.config))
        db.add(key, s)
        _policy_rules(c, key, s)
    else:
        _named(db, s, key)
    if t < s.last_ts and s.last_ts != 0:
        raise RedisError("TSDB: timestamp must be equal to or higher than the maximum existing timestamp")
    cur = s.last_v
    if cur != cur:
        raise _err("cannot increment/decrement NaN value")
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

def _parse_agg_spec(spec: bytes):
    kinds = []
    for tok in spec.split(b","):
        if not tok:
            raise _err("Empty aggregation type in list")
        if len(kinds) >= 15:
            raise _err("Too many aggregation types")
        k = A.BY_NAME.get(tok.lower())
        if k is None:
            raise _err("Unknown aggregation type")
        kinds.append(k)
    return kinds


def _parse_aggregation(argv):
    """_parseAggregationArgs' common part: None when there is no
    AGGREGATION, else (offset, kinds, bucket)."""
    off = _idx(argv, b"aggregation")
    if off <= 0:
        return None
    if off + 2 >= len(argv):
        raise _err("Couldn't parse AGGREGATION")
    d = _ll(argv[off + 2])
    if d is None:
        raise _err("Couldn't parse AGGREGATION")
    kinds = _parse_agg_spec(argv[off + 1])
    if d <= 0:
        raise _err("bucketDuration must be greater than zero")
    return off, kinds, d


@command("ts.createrule")
def ts_createrule(c, argv):
    if len(argv) not in (6, 7):
        raise _arity(argv)
    parsed = _parse_aggregation(argv)
    if parsed is None:
        raise _arity(argv)
    off, kinds, d = parsed
    align = 0
    if len(argv) == 7:
        align = _ts_arg(argv[off + 3])
        if align is None:
            # (a negative one fails to parse too: the module's "should be
            # greater or equal to 0" check comes after and is never reached)
            raise _err("Couldn't parse alignTimestamp")
    if len(kinds) != 1:
        raise _err("CREATERULE requires exactly one aggregation type")
    src_key, dst_key = argv[1], argv[2]
    if src_key == dst_key:
        raise _err("the source key and destination key should be different")
    src = _get(c, src_key, write=True)
    _prune(c, src)
    if src.src is not None:
        raise _err("the source key already has a source rule")
    dst = _get(c, dst_key, write=True)
    _prune(c, dst)
    if dst.rules:
        raise _err("the destination key already has a dst rule")
    if dst.src is not None:
        raise _err("the destination key already has a src rule")
    dst.src = bytes(src_key)
    src.rules.append(T.Rule(bytes(dst_key), d, align, kinds[0]))
    _rule_done(c, src_key, dst_key, b"ts.createrule:src", b"ts.createrule:dest")
    return OK


@command("ts.deleterule")
def ts_deleterule(c, argv):
    if len(argv) != 3:
        raise _arity(argv)
    src_key, dst_key = argv[1], argv[2]
    src = _get(c, src_key, write=True)
    _prune(c, src)
    rule = src.rule_for(dst_key)
    if rule is None:
        raise _err("compaction rule does not exist")
    src.rules.remove(rule)
    dst = _get(c, dst_key, write=True)
    if dst.src == src_key:
        dst.src = None
    _rule_done(c, src_key, dst_key, b"ts.deleterule:src", b"ts.deleterule:dest")
    return OK


# -- reads -------------------------------------------------------------------------------

def _latest(c, s: TimeSeries):
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
        raise _arity(argv)
    s = _get(c, argv[1])
    latest = False
    if len(argv) == 3:
        if _idx(argv, b"latest") <= 0:
            raise _err("wrong 3rd argument")
        latest = True
    return _last(c.resp, s, _latest(c, s) if latest else None)


def _parse_range(argv, start: int) -> T.RangeArgs:
    """parseRangeArguments: from/to at argv[start], options after them."""
    a = T.RangeArgs()
    fb, tb = argv[start], argv[start + 1]
    smin = fb == b"-"
    if not smin:
        v = _ts_arg(fb)
        if v is None:
            raise _err("wrong fromTimestamp")
        a.start = v
    emax = tb == b"+"
    if not emax:
        v = _ts_arg(tb)
        if v is None:
            raise _err("wrong toTimestamp")
        a.end = v
    opts = argv[start:]
    a.latest = _idx(opts, b"latest") > 0
    # COUNT (skipping a COUNT that is AGGREGATION's or REDUCE's argument)
    off = _idx(opts, b"count")
    if off > 0:
        red = _idx(opts, b"reduce")
        ag = _idx(opts, b"aggregation")
        skip = False
        if ag > 0 and off == ag + 1:
            o = _idx(opts[ag + 2:], b"count")
            if o < 0:
                skip = True
            else:
                off = o + ag + 2
        if not skip and red > 0 and off == red + 1:
            o = _idx(opts[red + 2:], b"count")
            if o < 0:
                skip = True
            else:
                off = o + red + 2
        if not skip:
            if off + 1 == len(opts):
                raise _err("COUNT argument is missing")
            n = _ll(opts[off + 1])
            if n is None:
                raise _err("Couldn't parse COUNT")
            if n < 1:
                raise _err("Invalid COUNT value")
            a.count = n
    parsed = _parse_aggregation(opts)
    if parsed is not None:
        off, kinds, d = parsed
        a.aggs = tuple(kinds)
        a.bucket = d
        e = _idx(opts, b"empty")
        if e > 0:
            if e != off + 3 and e != off + 5:
                raise _err("EMPTY flag should be the 3rd or 5th flag after AGGREGATION flag")
            a.empty = True
        b = _idx(opts, b"buckettimestamp")
        if b > 0:
            if b != off + 3 and b != off + 4:
                raise _err("BUCKETTIMESTAMP flag should be the 3rd or 4th flag after AGGREGATION flag")
            if b + 1 >= len(opts):
                raise _arity(argv)
            w = opts[b + 1].lower()
            if w in (b"start", b"-"):
                a.bucket_ts = 0
            elif w in (b"end", b"+"):
                a.bucket_ts = 1
            elif w in (b"mid", b"~"):
                a.bucket_ts = 2
            else:
                raise _err("unknown BUCKETTIMESTAMP parameter")
    al = _idx(opts, b"align")
    if al > 0:
        if al + 1 >= len(opts):
            raise _arity(argv)
        w = opts[al + 1].lower()
        if w in (b"start", b"-"):
            a.align_kind = 1
        elif w in (b"end", b"+"):
            a.align_kind = 2
        else:
            v = _ts_arg(opts[al + 1])
            if v is None:
                raise _err("unknown ALIGN parameter")
            a.align_kind = 3
            a.align = v
        if not a.aggs:
            raise _err("ALIGN parameter can only be used with AGGREGATION")
        if a.align_kind == 1 and smin:
            raise _err("start alignment can only be used with explicit start timestamp")
        if a.align_kind == 2 and emax:
            raise _err("end alignment can only be used with explicit end timestamp")
    fv = _idx(opts, b"filter_by_value")
    if fv > 0:
        if fv + 2 >= len(opts):
            raise _err("FILTER_BY_VALUE one or more arguments are missing")
        lo = _dbl(opts[fv + 1])
        if lo is None:
            raise _err("Couldn't parse MIN")
        hi = _dbl(opts[fv + 2])
        if hi is None:
            raise _err("Couldn't parse MAX")
        a.fmin, a.fmax, a.has_fv = lo, hi, True
    ft = _idx(opts, b"filter_by_ts")
    if ft > 0:
        if ft + 1 == len(opts):
            raise _err("FILTER_BY_TS one or more arguments are missing")
        vals = []
        k = ft + 1
        while k < len(opts) and len(vals) < 128:
            v = _ts_arg(opts[k])
            if v is None:
                break
            vals.append(v)
            k += 1
        if not vals:
            raise _err("FILTER_BY_TS one or more arguments are missing")
        a.fts = sorted(set(vals))
    return a


def _range_reply(c, s: TimeSeries, a: T.RangeArgs, rev: bool) -> bytes:
    extra = _latest(c, s) if a.latest else None
    rows = T.query(s, a, rev, extra)
    return _rows(c.resp, rows, len(a.aggs) > 1)


def _range(c, argv, rev):
    if len(argv) < 4:
        raise _arity(argv)
    a = _parse_range(argv, 2)
    s = _get(c, argv[1])
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
        raise _arity(argv)
    a = _parse_range(argv, 2)
    key = argv[1]
    s = _get(c, key, write=True)
    if s.rules and s.retention:
        last, ret = s.last_ts, s.retention

        def obsolete(t):
            return last > ret and t < last - ret
        bad = obsolete(a.start)
        for r in s.rules:
            if obsolete(max(0, r.bucket_start(a.start))):
                bad = True
        if bad:
            raise _err("When a series has compactions, deleting samples or compaction buckets beyond "
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
    kv(b"labels", _labels(resp, s.labels))
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
        raise _arity(argv)
    s = _get(c, argv[1])
    _prune(c, s)
    debug = _idx(argv[1:], b"debug") >= 0
    pairs = _info_pairs(c, s, debug)
    return map_header(c.resp, len(pairs)) + b"".join(pairs)


# -- label filters, MGET, MRANGE, QUERYINDEX ------------------------------------------------

def _strtok(s: bytes, seps: bytes):
    return [t for t in re.split(b"[" + re.escape(seps) + b"]+", s) if t]


def _predicate(arg: bytes):
    if b"!=(" in arg:
        kind, sep = T.LIST_NOTMATCH, b"!=("
    elif b"!=" in arg:
        kind, sep = T.NEQ, b"!="
    elif b"=(" in arg:
        kind, sep = T.LIST_MATCH, b"=("
    elif b"=" in arg:
        kind, sep = T.EQ, b"="
    else:
        raise _err("failed parsing labels")
    toks = _strtok(arg, sep)
    if not toks or (arg[:1] in sep and False):
        raise _err("failed parsing labels")
    name = toks[0]
    tok = toks[1] if len(toks) > 1 else None
    if kind in (T.LIST_MATCH, T.LIST_NOTMATCH):
        if tok is None or not tok.endswith(b")"):
            raise _err("failed parsing labels")
        body = tok[:-1]
        if not body:
            values = set()
        else:
            n = body.count(b",") + 1
            parts = [p for p in body.split(b",") if p]
            if len(parts) != n:
                raise _err("failed parsing labels")
            values = set(parts)
    else:
        values = {tok} if tok is not None else set()
        if not values:
            kind = T.CONTAINS if kind == T.NEQ else T.NCONTAINS
    return name, kind, values


def _parse_filter(args):
    preds = [_predicate(a) for a in args]
    if not any(k in (T.EQ, T.LIST_MATCH) for _, k, _ in preds):
        raise _err("please provide at least one matcher")
    return preds


def _all_series(c):
    """The series of the selected database as (key, series)."""
    db = c.db
    found, scanned = T.series_of(db, c.server.dbs)
    if scanned:
        for key, v in found:
            _named(db, v, key)      # known under their keys again: the next query needs no scan
    return found


def _query_index(c, preds, acl=True):
    """The series of the selected db matching the filter, by key; with
    ``acl``, NOPERM when the user may not read one of them (as the module's
    MGET / MRANGE; its QUERYINDEX lists keys without checking)."""
    db = c.db
    out = []
    for key, v in _all_series(c):
        if T.matches(v, preds) and db.is_live(key):
            out.append((bytes(key), v))
    out.sort(key=lambda kv: kv[0])
    user = c.user
    if acl and user is not None and not user.unrestricted:
        for key, _ in out:
            if not check_key(user, key, READ):
                raise _NOPERM
    return out


_QUERY_TOKENS = (b"withlabels", b"aggregation", b"limit", b"groupby", b"reduce", b"filter",
                 b"filter_by_value", b"filter_by_ts", b"count", b"excludeempty")


def _label_query(argv):
    """(withlabels, selected labels or None)."""
    withl = _idx(argv, b"withlabels") > 0
    pos = _idx(argv, b"selected_labels")
    if pos > 0 and withl:
        raise _err("cannot accept WITHLABELS and SELECT_LABELS together")
    if pos <= 0:
        return withl, None
    names = []
    for a in argv[pos + 1:]:
        if a.lower() in _QUERY_TOKENS:
            break
        if len(names) >= 50:
            raise _err("reached max size for SELECT_LABELS")
        names.append(bytes(a))
    if not names:
        raise _err("SELECT_LABELS should have at least 1 parameter")
    return withl, names


def _series_labels(resp, s, withl, names):
    if withl:
        return _labels(resp, s.labels)
    if names:
        return _labels(resp, _selected(s, names))
    return map_header(resp, 0) if resp >= 3 else b"*0\r\n"


@command("ts.mget")
def ts_mget(c, argv):
    if len(argv) < 3:
        raise _arity(argv)
    latest = _idx(argv, b"latest") > 0
    f = _idx(argv, b"filter")
    if f == -1:
        raise _arity(argv)
    withl, names = _label_query(argv)
    preds = _parse_filter(argv[f + 1:])
    resp = c.resp
    found = _query_index(c, preds)
    out = [map_header(resp, len(found)) if resp >= 3 else array_header(len(found))]
    for key, s in found:
        if resp < 3:
            out.append(b"*3\r\n")
        out.append(bulk(key))
        if resp >= 3:
            out.append(b"*2\r\n")
        out.append(_series_labels(resp, s, withl, names))
        out.append(_last(resp, s, _latest(c, s) if latest else None))
    return b"".join(out)


@command("ts.queryindex")
def ts_queryindex(c, argv):
    if len(argv) < 2:
        raise _arity(argv)
    preds = _parse_filter(argv[1:])
    found = _query_index(c, preds, acl=False)
    return set_header(c.resp, len(found)) + b"".join(bulk(k) for k, _ in found)


def _mrange(c, argv, rev):
    if len(argv) < 4:
        raise _arity(argv)
    a = _parse_range(argv, 1)
    f = _idx(argv, b"filter")
    if f == -1:
        raise _err("missing FILTER argument")
    withl, names = _label_query(argv)
    g = _idx(argv, b"groupby")
    if 0 < g < f:
        raise _err("GROUPBY should always come after filter")
    last_filter = g - 1 if g > 0 else len(argv) - 1
    if last_filter - f == 0:
        raise _err("missing labels for filter argument")
    preds = _parse_filter(argv[f + 1:last_filter + 1])
    ee = _idx(argv, b"excludeempty")
    exclude = ee > 0 and not (g > 0 and ee == g + 1)
    if exclude and g > 0:
        raise _err("EXCLUDEEMPTY is not allowed with GROUPBY")
    group = None
    if g > 0:
        if g + 1 >= len(argv):
            raise _arity(argv)
        r = _idx(argv, b"reduce")
        if r < 0 or len(argv) - g != 4:
            raise _arity(argv)
        red = A.BY_NAME.get(argv[r + 1].lower())
        if red is None or red in (A.AGG_FIRST, A.AGG_LAST, A.AGG_TWA):
            raise _err("Invalid reducer type")
        if len(a.aggs) > 1:
            raise _err("GROUPBY is not allowed when multiple aggregators are specified")
        group = (bytes(argv[g + 1]), red)
    resp = c.resp
    found = _query_index(c, preds)
    multi = len(a.aggs) > 1
    aggnames = b"".join(bulk(A.LOWER[k]) for k in a.aggs)
    if group is not None:
        return _grouped(c, found, a, rev, group, withl, names)
    out = []
    for key, s in found:
        rows = T.query(s, a, rev, _latest(c, s) if a.latest else None)
        if exclude and not rows:
            continue
        item = []
        if resp < 3:
            item.append(b"*3\r\n")
        item.append(bulk(key))
        if resp >= 3:
            item.append(b"*3\r\n")
        item.append(_series_labels(resp, s, withl, names))
        if resp >= 3:
            item.append(map_header(3, 1) + bulk(b"aggregators") + array_header(len(a.aggs)) + aggnames)
        item.append(_rows(resp, rows, multi))
        out.append(b"".join(item))
    return (map_header(resp, len(out)) if resp >= 3 else array_header(len(out))) + b"".join(out)


def _grouped(c, found, a, rev, group, withl, names):
    label, red = group
    resp = c.resp
    groups = {}
    for key, s in found:
        v = s.label(label)
        if v is None:
            continue
        groups.setdefault(v, []).append((key, s))
    count = a.count
    a.count = -1
    out = []
    for v in sorted(groups):
        members = groups[v]
        by_ts = {}
        for key, s in members:
            for t, val in T.query(s, a, False, _latest(c, s) if a.latest else None):
                if isinstance(val, list):
                    val = val[0]
                by_ts.setdefault(t, []).append(val)
        rows = [(t, A.reduce(red, by_ts[t])) for t in sorted(by_ts)]
        if rev:
            rows.reverse()
        if count >= 0:
            del rows[count:]
        name = label + b"=" + v
        sources = b",".join(k for k, _ in members)
        glabels = [(label, v), (b"__reducer__", A.LOWER[red]), (b"__source__", sources)]
        item = []
        if resp < 3:
            item.append(b"*3\r\n")
        item.append(bulk(name))
        if resp >= 3:
            item.append(b"*4\r\n")
        if withl:
            item.append(_labels(resp, glabels[:1] if resp >= 3 else glabels))
        elif names:
            gs = TimeSeries(name, labels=glabels)
            item.append(_labels(resp, _selected(gs, names)))
        else:
            item.append(map_header(resp, 0) if resp >= 3 else b"*0\r\n")
        if resp >= 3:
            item.append(map_header(3, 1) + bulk(b"reducers") + b"*1\r\n" + bulk(A.LOWER[red]))
            item.append(map_header(3, 1) + bulk(b"sources") + array_header(len(members))
                        + b"".join(bulk(k) for k, _ in members))
        item.append(_rows(resp, rows, False))
        out.append(b"".join(item))
    return (map_header(resp, len(out)) if resp >= 3 else array_header(len(out))) + b"".join(out)


@command("ts.mrange")
def ts_mrange(c, argv):
    return _mrange(c, argv, False)


@command("ts.mrevrange")
def ts_mrevrange(c, argv):
    return _mrange(c, argv, True)


@command("ts.querylabels")
def ts_querylabels(c, argv):
    """TS.QUERYLABELS LABELS [FILTER ...] | VALUES label [FILTER ...]: the
    label names (or one label's values) over the series selected."""
    n = len(argv)
    if n < 2:
        raise _arity(argv)
    sub = argv[1].lower()
    if sub not in (b"labels", b"values"):
        raise _err("unknown subtype, must be one of LABELS|VALUES")
    label = None
    fs = 2
    if sub == b"values":
        if n < 3:
            raise _arity(argv)
        label = argv[2]
        fs = 3
    preds = None
    if n > fs:
        if argv[fs].lower() != b"filter":
            raise _err("unknown argument, expected FILTER")
        if n - 1 - fs <= 0:
            raise _err("FILTER given with no filter expressions")
        preds = _parse_filter(argv[fs + 1:])
    db = c.db
    out = set()
    user = c.user
    limited = user is not None and not user.unrestricted
    for key, s in _all_series(c):
        if not db.is_live(key):
            continue
        if limited and not check_key(user, key, READ):
            continue            # the module leaves out what the user may not read
        if preds is not None and not T.matches(s, preds):
            continue
        for k, v in s.labels:
            if label is None:
                out.add(k)
            elif k == label:
                out.add(v)
    items = sorted(out)
    return set_header(c.resp, len(items)) + b"".join(bulk(x) for x in items)


# -- TS.READ ---------------------------------------------------------------------------

def _read_reply(c, key, cursor, max_count, need):
    """The samples at or after cursor (at most max_count), or None while
    fewer than ``need`` are there (need 0: reply whatever there is)."""
    db = c.db
    s = db.lookup_nostats(key)
    if s is None:
        return None if need else b"*0\r\n"
    if s.__class__ is not TimeSeries:
        return error(b"WRONGTYPE Operation against a key holding the wrong kind of value")
    if s.last_ts < cursor or not s.ts:
        return None if need else b"*0\r\n"
    a = T.RangeArgs()
    a.start = cursor
    a.count = max_count
    rows = T.query(s, a)
    if need and len(rows) < need:
        return None
    return _rows(c.resp, rows, False)


@command("ts.read", flags=("may_block",))
def ts_read(c, argv):
    """TS.READ key timestamp [BLOCK ms min_count] [MAX_COUNT n] (8.10)."""
    n = len(argv)
    opts = argv[3:]
    has_block = _idx(opts, b"block") >= 0
    has_max = _idx(opts, b"max_count") >= 0
    if n < 3 or n != 3 + (3 if has_block else 0) + (2 if has_max else 0):
        raise _arity(argv)
    ms, min_count, max_count = 0, 1, -1
    if has_block:
        p = _idx(opts, b"block")
        ms = _ll(opts[p + 1]) if p + 2 < len(opts) else None
        min_count = _ll(opts[p + 2]) if p + 2 < len(opts) else None
        if ms is None or min_count is None or ms < 0:
            raise RedisError("TSDB: BLOCK milliseconds must be a non-negative integer")
        if min_count <= 0:
            raise RedisError("TSDB: BLOCK min_count must be a positive integer")
    if has_max:
        p = _idx(opts, b"max_count")
        max_count = _ll(opts[p + 1]) if p + 1 < len(opts) else None
        if max_count is None or max_count <= 0:
            raise RedisError("TSDB: MAX_COUNT must be a positive integer")
    if max_count != -1 and min_count > max_count:
        raise RedisError("TSDB: BLOCK min_count must be <= MAX_COUNT")
    key = argv[1]
    tb = argv[2]
    db = c.db
    if tb == b"-":
        cursor = 0
    elif tb in (b"+", b"$"):
        s = db.lookup_read(key)
        if s is None:
            cursor = 0
        elif s.__class__ is not TimeSeries:
            raise RedisError("WRONGTYPE Operation against a key holding the wrong kind of value")
        elif not s.ts:
            cursor = 0
        else:
            cursor = s.last_ts + (1 if tb == b"$" else 0)
    else:
        cursor = _ts_arg(tb)
        if cursor is None:
            raise RedisError("TSDB: invalid timestamp")
    r = _read_reply(c, key, cursor, max_count, min_count if has_block else 0)
    if r is not None:
        return r
    if c.in_exec or c.in_script:
        raise RedisError("TSDB: blocking TS.READ (with BLOCK) is not allowed inside MULTI, EVAL, "
                         "or a deny-blocking context")
    deadline = time.monotonic() + ms / 1000.0 if ms else 0

    def on_ready(c, db, k):
        # the key gone or replaced: what there is (nothing, or WRONGTYPE)
        v = db.d.get(key)
        gone = v is None or v.__class__ is not TimeSeries
        return _read_reply(c, key, cursor, max_count, 0 if gone else min_count)

    def on_timeout(c):
        return _read_reply(c, key, cursor, max_count, 0)

    c.server.blocking_handler.block(c, [key], deadline, on_ready, on_timeout, serve_missing=True)
    return None


# -- TS.NRANGE / TS.NREVRANGE (8.10) -----------------------------------------------------

def _nrange(c, argv, rev):
    n = len(argv)
    if n < 5:
        raise _arity(argv)
    nk = _ll(argv[1])
    if nk is None or nk <= 0:
        raise _err("numkeys must be a positive integer")
    if nk > n - 4:
        raise _arity(argv)
    rs = 2 + nk
    keys = argv[2:rs]
    per_key = None
    rel = _idx(argv[rs:], b"aggregation")
    if nk > 1 and rel >= 0:
        first = rs + rel + 1
        per_key = []
        for k in range(nk):
            if first + k >= n or _ll(argv[first + k]) is not None:
                raise _err("the number of AGGREGATION arguments must be equal to numkeys")
            spec = argv[first + k]
            if not spec:
                raise _err("Unknown aggregation type")
            per_key.append(tuple(_parse_agg_spec(spec)))
        if first + nk < n and argv[first + nk].lower() in A.BY_NAME:
            raise _err("the number of AGGREGATION arguments must be equal to numkeys")
        argv = list(argv[:first + 1]) + list(argv[first + nk:])
    a = _parse_range(argv, rs)
    series = [_get(c, k) for k in keys]
    widths = []
    results = []
    for i, s in enumerate(series):
        if per_key is not None:
            a.aggs = per_key[i]
        rows = T.query(s, a, rev, _latest(c, s) if a.latest else None)
        w = max(1, len(a.aggs))
        widths.append(w)
        results.append([(t, v if isinstance(v, list) else [v]) for t, v in rows])
    pos = [0] * nk
    limit = a.count if a.count >= 0 else None
    out = []
    while limit is None or len(out) < limit:
        fronts = [results[i][pos[i]][0] for i in range(nk) if pos[i] < len(results[i])]
        if not fronts:
            break
        target = max(fronts) if rev else min(fronts)
        row = []
        for i in range(nk):
            if pos[i] < len(results[i]) and results[i][pos[i]][0] == target:
                row += results[i][pos[i]][1]
                pos[i] += 1
            else:
                row += [float("nan")] * widths[i]
        out.append((target, row))
    resp = c.resp
    body = [array_header(len(out))]
    for t, row in out:
        body.append(b"*2\r\n" + integer(t) + array_header(len(row)) + b"".join(_val(resp, v) for v in row))
    return b"".join(body)


@command("ts.nrange")
def ts_nrange(c, argv):
    return _nrange(c, argv, False)


@command("ts.nrevrange")
def ts_nrevrange(c, argv):
    return _nrange(c, argv, True)
