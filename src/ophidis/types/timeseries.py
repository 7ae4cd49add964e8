"""The time series type (Redis 8's built-in RedisTimeSeries): ``TimeSeries``
holds its samples in two parallel arrays (timestamps as ``array('q')``,
values as ``array('d')``) kept sorted by timestamp, with the series'
settings (retention, chunk size, encoding, duplicate policy, IGNORE
thresholds), its labels, its compaction rules (``Rule``: destination,
bucket, alignment, aggregator and the live context of the current bucket)
and the key of the series it is a compaction of.

Chunks are not kept as such: the arrays are one run, and TS.INFO's chunk
figures are derived from the chunk size.  The RDB record is RedisTimeSeries'
(module type ``TSDB-TYPE``, encoding version 9): its chunks are written and
read in the module's layouts, Gorilla-compressed (types/ts_gorilla.py) or
uncompressed as the series' encoding says.

``query`` is TS.RANGE's engine: retention, FILTER_BY_TS / FILTER_BY_VALUE,
AGGREGATION with one or more aggregators, ALIGN, BUCKETTIMESTAMP, EMPTY.
``matches`` evaluates a TS.MGET/MRANGE/QUERYINDEX filter on labels and
``series_of`` finds a database's series for them.
"""

from __future__ import annotations

import struct
import weakref
from array import array
from bisect import bisect_left, bisect_right

from ..keyspace.db import DELETE_SIGNALS, ENCODINGS, register_module_type
from ..persistence.modulerecord import ModuleFormatError
from . import ts_aggregate as agg
from . import ts_gorilla as gorilla

NAN = float("nan")
U64 = (1 << 64) - 1

DP_NONE, DP_BLOCK, DP_LAST, DP_FIRST, DP_MIN, DP_MAX, DP_SUM = range(7)
DP_NAMES = {DP_BLOCK: b"block", DP_LAST: b"last", DP_FIRST: b"first", DP_MIN: b"min",
            DP_MAX: b"max", DP_SUM: b"sum"}
DP_BY_NAME = {v: k for k, v in DP_NAMES.items()}

OPT_UNCOMPRESSED = 1
OPT_COMPRESSED = 2

CHUNK_MIN = 48
CHUNK_MAX = 1048576
_SAMPLE = struct.Struct("<Qd")


class UpsertError(Exception):
    """A duplicate the policy refuses."""


class Rule:
    """A compaction rule of a source series (CompactionRule)."""
    __slots__ = ("dest", "bucket", "align", "kind", "start", "valid", "ctx")

    def __init__(self, dest: bytes, bucket: int, align: int, kind: int):
        self.dest = dest
        self.bucket = bucket
        self.align = align
        self.kind = kind
        self.start = -1          # the current bucket's start; -1 before any sample
        self.valid = False       # has the current bucket a sample the aggregator took
        self.ctx = agg.new(kind)

    def bucket_start(self, ts: int) -> int:
        return bucket_start(ts, self.bucket, self.align)


def bucket_start(ts: int, d: int, align: int) -> int:
    """The start of the bucket holding ts (may be negative before the
    first aligned bucket: callers clamp it to 0 where they report it)."""
    return ts - (ts - align) % d


# every series object alive (the label filters' candidates: see series_of)
LIVE = weakref.WeakSet()


class TimeSeries:
    __slots__ = ("name", "ts", "vs", "retention", "chunk_size", "options", "dup", "ignore_td",
                 "ignore_vd", "labels", "src", "rules", "__weakref__")
    MODULE_NAME = "TSDB-TYPE"
    MODULE_ENCVER = 9
    MODULE_ENCVERS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)

    def __init__(self, name=b"", retention=0, chunk_size=4096, options=OPT_COMPRESSED,
                 dup=DP_BLOCK, ignore_td=0, ignore_vd=0.0, labels=()):
        self.name = name
        self.ts = array("q")
        self.vs = array("d")
        self.retention = retention
        self.chunk_size = chunk_size
        self.options = options
        self.dup = dup
        self.ignore_td = ignore_td
        self.ignore_vd = ignore_vd
        self.labels = list(labels)
        self.src = None
        self.rules = []
        LIVE.add(self)

    # -- state -------------------------------------------------------------
    def __len__(self):
        return len(self.ts)

    @property
    def last_ts(self) -> int:
        return self.ts[-1] if self.ts else 0

    @property
    def last_v(self) -> float:
        return self.vs[-1] if self.vs else 0.0

    def label(self, name: bytes):
        for k, v in self.labels:
            if k == name:
                return v
        return None

    def rule_for(self, dest: bytes):
        for r in self.rules:
            if r.dest == dest:
                return r
        return None

    def samples_per_chunk(self) -> int:
        # uncompressed: 16 bytes a sample; compressed: our estimate of a
        # Gorilla chunk's typical density (4 bytes a sample)
        return max(1, self.chunk_size // (16 if self.options & OPT_UNCOMPRESSED else 4))

    def chunk_count(self) -> int:
        n = len(self.ts)
        return max(1, -(-n // self.samples_per_chunk()))

    # -- writes --------------------------------------------------------------
    def append(self, t: int, v: float):
        self.ts.append(t)
        self.vs.append(v)
        if self.retention:
            self.trim()

    def trim(self):
        """Drop the samples older than the retention window."""
        if not self.ts:
            return
        floor = self.ts[-1] - self.retention
        if floor > self.ts[0]:
            i = bisect_left(self.ts, floor)
            if i:
                del self.ts[:i]
                del self.vs[:i]

    def upsert(self, t: int, v: float, dp: int):
        """An insert at or before the last timestamp; UpsertError when
        the duplicate policy refuses it."""
        i = bisect_left(self.ts, t)
        if i < len(self.ts) and self.ts[i] == t:
            old = self.vs[i]
            if dp == DP_BLOCK:
                raise UpsertError()
            if dp == DP_FIRST:
                return
            if dp == DP_LAST:
                self.vs[i] = v
                return
            if v != v or old != old:
                raise UpsertError()
            if dp == DP_MIN:
                if v < old:
                    self.vs[i] = v
            elif dp == DP_MAX:
                if v > old:
                    self.vs[i] = v
            elif dp == DP_SUM:
                self.vs[i] = old + v
            return
        self.ts.insert(i, t)
        self.vs.insert(i, v)

    def delete_range(self, start: int, end: int) -> int:
        i = bisect_left(self.ts, start)
        j = bisect_right(self.ts, end)
        if j > i:
            del self.ts[i:j]
            del self.vs[i:j]
        return max(0, j - i)

    # -- reads ---------------------------------------------------------------
    def first_valid(self) -> int:
        return self.ts[0] if self.ts else 0

    def window(self, start: int, end: int):
        """Indices [i, j) of the samples in [start, end], the retention
        window applied."""
        if self.retention and self.ts:
            last = self.ts[-1]
            if last > self.retention:
                start = max(start, last - self.retention)
        i = bisect_left(self.ts, start)
        j = bisect_right(self.ts, end)
        return i, max(i, j)

    def bucket_samples(self, start: int, end: int):
        i = bisect_left(self.ts, start)
        j = bisect_right(self.ts, end)
        return zip(self.ts[i:j], self.vs[i:j])

    # -- COPY, MEMORY USAGE, DEBUG DIGEST, RDB -----------------------------
    def copy(self):
        n = TimeSeries(self.name, self.retention, self.chunk_size, self.options, self.dup,
                       self.ignore_td, self.ignore_vd, self.labels)
        n.ts = array("q", self.ts)
        n.vs = array("d", self.vs)
        # as the module's copy callback: the copy is a plain series (no
        # rules, not a compaction of another)
        return n

    def mem_usage(self) -> int:
        lab = sum(len(k) + len(v) + 32 for k, v in self.labels)
        rules = sum(len(r.dest) + 96 for r in self.rules)
        return 184 + lab + rules + self.chunk_count() * (self.chunk_size + 48)

    def digest(self) -> bytes:
        out = [self.ts.tobytes(), self.vs.tobytes()]
        for k, v in self.labels:
            out.append(k + b"\0" + v)
        return b"\1".join(out)

    def rdb_save(self, w):
        w.string(self.name)
        w.uint(self.retention)
        w.uint(self.chunk_size)
        compressed = not self.options & OPT_UNCOMPRESSED
        w.uint(OPT_COMPRESSED if compressed else OPT_UNCOMPRESSED)
        w.uint(self.last_ts)
        w.double(self.last_v if self.ts else 0.0)
        w.uint(len(self.ts))
        w.uint(self.dup)
        if self.src is not None:
            w.uint(1)
            w.string(self.src)
        else:
            w.uint(0)
        w.uint(self.ignore_td)
        w.double(self.ignore_vd)
        w.uint(len(self.labels))
        for k, v in self.labels:
            w.string(k)
            w.string(v)
        w.uint(len(self.rules))
        for r in self.rules:
            w.string(r.dest)
            w.uint(r.bucket)
            w.uint(r.align)
            w.uint(r.kind)
            w.uint(r.start & U64)
            w.uint(1 if r.valid else 0)
            r.ctx.save(w)
        if compressed:
            chunks = gorilla.encode(self.ts, self.vs, self.chunk_size)
            w.uint(len(chunks))
            for ch in chunks:
                ch.save(w)
            return
        spc = self.chunk_size // 16
        n = len(self.ts)
        nchunks = max(1, -(-n // spc))
        w.uint(nchunks)
        ts, vs = self.ts, self.vs
        pack = _SAMPLE.pack
        for c in range(nchunks):
            lo, hi = c * spc, min(n, (c + 1) * spc)
            buf = b"".join(pack(ts[k] & U64, vs[k]) for k in range(lo, hi))
            buf += b"\0" * (self.chunk_size - len(buf))
            w.uint(ts[lo] & U64 if lo < hi else 0)
            w.uint(hi - lo)
            w.uint(self.chunk_size)
            w.string(buf)

    @classmethod
    def rdb_load(cls, r, encver):
        name = bytes(r.string())
        retention = r.uint()
        chunk_size = r.uint()
        if encver < 2:
            chunk_size *= 16        # counted in samples before encoding 2
        if chunk_size == 0 or chunk_size % 8:
            raise ModuleFormatError("chunkSizeBytes must be a non-zero multiple of 8")
        options = r.uint() if encver >= 1 else OPT_UNCOMPRESSED
        if encver >= 2:
            r.uint()        # last timestamp (the samples say it)
            r.double()      # last value
            r.uint()        # total samples
        dup = r.uint() if encver >= 3 else DP_NONE
        src = bytes(r.string()) if encver >= 2 and r.uint() else None
        ignore_td, ignore_vd = (r.uint(), r.double()) if encver >= 8 else (0, 0.0)
        labels = []
        for _ in range(r.uint()):
            k = bytes(r.string())
            labels.append((k, bytes(r.string())))
        options = OPT_UNCOMPRESSED if options & OPT_UNCOMPRESSED else OPT_COMPRESSED
        s = cls(name, retention, chunk_size, options, dup, ignore_td, ignore_vd, labels)
        s.src = src
        for _ in range(r.uint()):
            dest = bytes(r.string())
            bucket = r.uint()
            align = r.uint() if encver >= 6 else 0
            kind = r.uint()
            if kind not in agg.CLASSES:
                raise ModuleFormatError("unknown aggregation type %d" % kind)
            rule = Rule(dest, bucket, align, kind)
            start = r.uint()
            rule.start = start - (1 << 64) if start >= 1 << 63 else start
            rule.valid = bool(r.uint()) if encver >= 9 else True
            rule.ctx.load(r, encver)
            # the module's loader puts each rule in front: a reload reverses
            # their order (TS.INFO's rules), and so does ours
            s.rules.insert(0, rule)
        ts, vs = s.ts, s.vs
        if encver < 2:
            # encodings 0 and 1: the samples one by one
            for _ in range(r.uint()):
                t = r.uint()
                v = r.double()
                if ts and t <= ts[-1]:
                    raise ModuleFormatError("time series samples out of order")
                ts.append(t)
                vs.append(v)
            return s
        nchunks = r.uint()
        if options & OPT_UNCOMPRESSED:
            unpack = _SAMPLE.unpack_from
            for _ in range(nchunks):
                r.uint()        # base timestamp
                n = r.uint()
                size = r.uint()
                buf = bytes(r.string())
                if n * 16 > size or size != len(buf):
                    raise ModuleFormatError("bad time series chunk")
                for k in range(n):
                    t, v = unpack(buf, k * 16)
                    ts.append(t)
                    vs.append(v)
        else:
            for _ in range(nchunks):
                size, count, idx = r.uint(), r.uint(), r.uint()
                base_v, base_t = r.uint(), r.uint()
                for _f in range(5):     # the append state: previous timestamp, delta, value, window
                    r.uint()
                data = bytes(r.string())
                if (not data or size != len(data) or size % 8 or idx > len(data) * 8
                        or (count > 0 and idx // 2 < count - 1)):
                    raise ModuleFormatError("bad compressed time series chunk")
                try:
                    cts, cvs = gorilla.decode(count, base_v, base_t, data)
                except gorilla.FormatError as e:
                    raise ModuleFormatError(str(e)) from None
                ts.extend(t if t < 1 << 63 else t - (1 << 64) for t in cts)
                vs.extend(cvs)
        for k in range(1, len(ts)):
            if ts[k] <= ts[k - 1]:
                raise ModuleFormatError("time series samples out of order")
        return s


register_module_type(TimeSeries, b"TSDB-TYPE")
ENCODINGS[TimeSeries] = lambda v, cfg: b"raw"
# TS.READ ... BLOCK is answered when its key goes away (the module blocks
# with REDISMODULE_BLOCK_UNBLOCK_DELETED)
DELETE_SIGNALS.add(TimeSeries)


# -- TS.RANGE's engine ------------------------------------------------------------------

class RangeArgs:
    __slots__ = ("start", "end", "latest", "count", "aggs", "bucket", "empty", "bucket_ts",
                 "align_kind", "align", "fts", "fmin", "fmax", "has_fv")

    def __init__(self):
        self.start = 0
        self.end = (1 << 63) - 1
        self.latest = False
        self.count = -1
        self.aggs = ()          # aggregator kinds
        self.bucket = 0
        self.empty = False
        self.bucket_ts = 0      # 0 start, 1 end, 2 mid
        self.align_kind = 0     # 0 default, 1 start, 2 end, 3 timestamp
        self.align = 0
        self.fts = None         # sorted timestamps (FILTER_BY_TS)
        self.fmin = 0.0
        self.fmax = 0.0
        self.has_fv = False


def raw_samples(s: TimeSeries, a: RangeArgs, extra=None):
    """The samples of [start, end] after retention and the filters, as two
    lists; ``extra`` is LATEST's unfinished bucket (ts, value) or None."""
    i, j = s.window(a.start, a.end)
    ts = list(s.ts[i:j])
    vs = list(s.vs[i:j])
    if extra is not None and a.start <= extra[0] <= a.end and (not s.ts or extra[0] > s.ts[-1]):
        ts.append(extra[0])
        vs.append(extra[1])
    if a.fts is not None:
        want = set(a.fts)
        keep = [k for k, t in enumerate(ts) if t in want]
        ts = [ts[k] for k in keep]
        vs = [vs[k] for k in keep]
    if a.has_fv:
        lo, hi = a.fmin, a.fmax
        keep = [k for k, v in enumerate(vs) if lo <= v <= hi]
        ts = [ts[k] for k in keep]
        vs = [vs[k] for k in keep]
    return ts, vs


def _align(a: RangeArgs) -> int:
    if a.align_kind == 1:
        return a.start
    if a.align_kind == 2:
        return a.end
    if a.align_kind == 3:
        return a.align
    return 0


def _report_ts(a: RangeArgs, bs: int) -> int:
    if a.bucket_ts == 1:
        t = bs + a.bucket
    elif a.bucket_ts == 2:
        t = bs + a.bucket // 2
    else:
        t = bs
    return max(0, t)


def _passes(a: RangeArgs, t: int, v: float) -> bool:
    if v != v:
        return False        # neighbours for interpolation are real values
    if a.fts is not None and t not in a.fts:
        return False
    return not a.has_fv or a.fmin <= v <= a.fmax


def neighbours(s: TimeSeries, a: RangeArgs):
    """The nearest samples (that the filters keep, not NaN) before the
    range's start and after its end, each (ts, value) or None: TWA
    interpolates from them and EMPTY fills the range's edges up to them."""
    i, j = s.window(a.start, a.end)
    before = after = None
    k = i - 1
    lo = s.window(0, a.end)[0]
    while k >= lo:
        if _passes(a, s.ts[k], s.vs[k]):
            before = (s.ts[k], s.vs[k])
            break
        k -= 1
    k = j
    n = len(s.ts)
    while k < n:
        if _passes(a, s.ts[k], s.vs[k]):
            after = (s.ts[k], s.vs[k])
            break
        k += 1
    return before, after


def _interp(p, q, ta, tb):
    """The mean over [ta, tb] of the line through samples p and q."""
    (t1, v1), (t2, v2) = p, q
    if t2 == t1:
        return v1
    va = v1 + (ta - t1) * (v2 - v1) / (t2 - t1)
    vb = v1 + (tb - t1) * (v2 - v1) / (t2 - t1)
    return (va + vb) / 2.0


def aggregate(ts, vs, a: RangeArgs, before=None, after=None):
    """Rows (bucket timestamp, [value per aggregator]) in time order.
    ``before`` / ``after``: the nearest kept samples outside the range
    (``neighbours``)."""
    d = a.bucket
    align = _align(a)
    kinds = a.aggs
    rs, re_ = a.start, a.end
    rows = []
    n = len(ts)
    buckets = []
    k = 0
    while k < n:
        bs = ts[k] - (ts[k] - align) % d
        e = k + 1
        limit = bs + d
        while e < n and ts[e] < limit:
            e += 1
        buckets.append((bs, k, e))
        k = e
    ctxs = [agg.new(kind) for kind in kinds]
    # the valid (non-NaN) samples, for interpolation across buckets (TWA, EMPTY)
    if a.empty or agg.AGG_TWA in kinds:
        valid = [(ts[m], vs[m]) for m in range(n) if vs[m] == vs[m]]
    else:
        valid = []
    vts = [t for t, _ in valid]

    def near(t_lo, t_hi):
        """The valid samples just before t_lo and just after t_hi (the
        outside neighbours at the range's edges)."""
        x = bisect_left(vts, t_lo)
        p = valid[x - 1] if x else before
        y = bisect_right(vts, t_hi)
        q = valid[y] if y < len(valid) else after
        return p, q

    def empty_row(bs):
        ta, tb = max(max(0, bs), rs), min(bs + d, re_)
        vals = []
        for c in ctxs:
            if c.kind == agg.AGG_TWA:
                p, q = near(ta, tb)
                vals.append(_interp(p, q, ta, tb) if p is not None and q is not None else NAN)
            else:
                vals.append(c.empty())
        return (_report_ts(a, bs), vals)

    def fill(first, last):
        b = first
        while b <= last:
            rows.append(empty_row(b))
            b += d

    if a.empty:
        first_b = rs - (rs - align) % d
        last_b = re_ - (re_ - align) % d
        if not buckets:
            # a range without samples: filled when the series has samples on both sides
            if before is not None and after is not None and last_b - first_b <= d * 1000000:
                for c in ctxs:
                    if c.kind == agg.AGG_LAST:
                        c.v = before[1]
                fill(first_b, last_b)
            return rows
        if before is not None and first_b < buckets[0][0]:
            for c in ctxs:
                if c.kind == agg.AGG_LAST:
                    c.v = before[1]
            fill(first_b, buckets[0][0] - d)
    prev_bs = None
    last_valid = before
    for bi, (bs, lo, hi) in enumerate(buckets):
        if a.empty and prev_bs is not None:
            fill(prev_bs + d, bs - d)
        vals = []
        took_any = False
        ta, tb = max(max(0, bs), rs), min(bs + d, re_)
        for c in ctxs:
            c.reset()
            took = False
            if c.kind == agg.AGG_TWA:
                c.bounds(ta, tb)
                if last_valid is not None and not (bi == 0 and ts[lo] == 0):
                    c.prev_sample(last_valid[1], last_valid[0])
            for m in range(lo, hi):
                v = vs[m]
                if c.accepts(v):
                    c.add(v, ts[m])
                    took = True
            if took and c.kind == agg.AGG_TWA:
                nxt = None
                for m in range(hi, n):
                    if vs[m] == vs[m]:
                        nxt = (ts[m], vs[m])
                        break
                if nxt is None:
                    nxt = after
                if nxt is not None:
                    c.next_sample(nxt[1], nxt[0])
            took_any = took_any or took
            if took:
                vals.append(c.value())
            elif c.kind == agg.AGG_TWA:
                p, q = near(ta, tb)
                vals.append(_interp(p, q, ta, tb) if p is not None and q is not None else NAN)
            else:
                vals.append(c.empty())
        if took_any:
            rows.append((_report_ts(a, bs), vals))
        elif a.empty:
            rows.append(empty_row(bs))
        for m in range(hi - 1, lo - 1, -1):
            if vs[m] == vs[m]:
                last_valid = (ts[m], vs[m])
                break
        prev_bs = bs
    if a.empty and after is not None:
        last_b = re_ - (re_ - align) % d
        if prev_bs + d <= last_b and last_b - prev_bs <= d * 1000000:
            fill(prev_bs + d, last_b)
    return rows


def query(s: TimeSeries, a: RangeArgs, reverse=False, extra=None):
    """TS.RANGE / TS.REVRANGE: a list of (ts, value) without aggregation,
    or of (ts, [values]) with it; COUNT applied."""
    if not a.aggs and a.fts is None and not a.has_fv and extra is None:
        # plain samples: only the COUNT wanted are copied
        i, j = s.window(a.start, a.end)
        if a.count >= 0:
            if reverse:
                i = max(i, j - a.count)
            else:
                j = min(j, i + a.count)
        rows = list(zip(s.ts[i:j], s.vs[i:j]))
        if reverse:
            rows.reverse()
        return rows
    ts, vs = raw_samples(s, a, extra)
    if a.aggs:
        before, after = neighbours(s, a) if (a.empty or agg.AGG_TWA in a.aggs) else (None, None)
        rows = aggregate(ts, vs, a, before, after)
    else:
        rows = list(zip(ts, vs))
    if reverse:
        rows.reverse()
    if a.count >= 0:
        del rows[a.count:]
    return rows


# -- label filters (TS.MGET / MRANGE / QUERYINDEX) ------------------------------------------

def series_of(db, dbs):
    """The series of database ``db`` as (key, series), and whether the
    database had to be scanned: they come from the live series objects,
    each found under the key it was last used as; when one is found in no
    database under that key (renamed or moved since, or deleted and not yet
    freed), the database's keys are scanned instead."""
    d = db.d
    out = []
    for v in list(LIVE):
        k = v.name
        if d.get(k) is v:
            out.append((k, v))
            continue
        if not any(o.d.get(k) is v for o in dbs if o is not db):
            return [(k, v) for k, v in d.items() if v.__class__ is TimeSeries], True
    return out, False


EQ, NEQ, LIST_MATCH, LIST_NOTMATCH, CONTAINS, NCONTAINS = range(6)


def matches(s: TimeSeries, preds) -> bool:
    """Does the series' label set satisfy every predicate (label, type,
    values)?"""
    for name, kind, values in preds:
        v = s.label(name)
        if kind == EQ or kind == LIST_MATCH:
            if v is None or v not in values:
                return False
        elif kind == NEQ or kind == LIST_NOTMATCH:
            if v is not None and v in values:
                return False
        elif kind == CONTAINS:
            if v is None:
                return False
        elif kind == NCONTAINS:
            if v is not None:
                return False
    return True
