"""The time series commands' common ground (Redis 8's built-in
RedisTimeSeries; the commands are in timeseries_cmds.py,
timeseries_filters.py and timeseries_reads.py): the module's ``ERR TSDB: ...`` errors, its argument parsing
(options found the module's way, as the first argument equal to the
keyword anywhere in the command; TS.CREATE's settings; AGGREGATION and the
range options of TS.RANGE / MRANGE / DEL), and its reply shapes (RESP2
values as simple strings in their shortest form, RESP3 doubles and maps).
"""

from __future__ import annotations

import re

from ..errors import RedisError, arity_error
from ..protocol.resp import array_header, bulk, double, integer, map_header, null, simple
from ..types import timeseries as T
from ..types import ts_aggregate as A
from ..types.timeseries import TimeSeries

I64_MAX = (1 << 63) - 1
_INT_RE = re.compile(rb"-?(0|[1-9][0-9]*)\Z")


def tsdb_err(msg: str) -> RedisError:
    return RedisError("ERR TSDB: " + msg)


def arity(argv):
    return arity_error(argv[0].decode("utf-8", "replace").lower())


def arg_index(argv, word: bytes) -> int:
    """RMUtil_ArgIndex: the first argument equal (case-insensitively) to
    word, the command name and key included; -1 when none."""
    n = len(word)
    for i, a in enumerate(argv):
        if len(a) == n and a.lower() == word:
            return i
    return -1


def parse_ll(b):
    """RedisModule_StringToLongLong; None when it does not parse."""
    if not _INT_RE.match(b):
        return None
    v = int(b)
    if v < -(1 << 63) or v > I64_MAX:
        return None
    return v


def parse_dbl(b, allow_nan=False):
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


def parse_ts(b):
    v = parse_ll(b)
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


def reply_value(resp: int, d: float) -> bytes:
    if resp >= 3:
        return double(3, d)
    return simple(_fmt(d))


def _sample(resp, t, v) -> bytes:
    return b"*2\r\n" + integer(t) + reply_value(resp, v)


def _row(resp, t, vals) -> bytes:
    return array_header(1 + len(vals)) + integer(t) + b"".join(reply_value(resp, v) for v in vals)


def reply_rows(resp, rows, multi: bool) -> bytes:
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


def reply_labels(resp, pairs) -> bytes:
    """ReplyWithSeriesLabels: a map (RESP3) or an array of pairs."""
    out = [map_header(resp, len(pairs)) if resp >= 3 else array_header(len(pairs))]
    for k, v in pairs:
        if resp < 3:
            out.append(b"*2\r\n")
        out.append(bulk(k))
        out.append(bulk(v) if v is not None else null(resp))
    return b"".join(out)


def pick_labels(s: TimeSeries, names):
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


def reply_last(resp, s: TimeSeries, latest=None) -> bytes:
    if latest is not None:
        return _sample(resp, latest[0], latest[1])
    if not s.ts:
        return b"*0\r\n"
    return _sample(resp, s.ts[-1], s.vs[-1])


# -- TS.CREATE's options ----------------------------------------------------------------

class CreateArgs:
    __slots__ = ("retention", "chunk_size", "options", "dup", "ignore_td", "ignore_vd", "labels")


def _parse_labels(argv):
    pos = arg_index(argv, b"labels")
    if pos < 0:
        return None
    out = []
    n = (len(argv) - pos - 1) // 2
    for i in range(n):
        k = argv[pos + 1 + 2 * i]
        v = argv[pos + 2 + 2 * i]
        if not k or not v or any(ch in v for ch in b"(),"):
            raise tsdb_err("Couldn't parse LABELS")
        out.append((bytes(k), bytes(v)))
    return out


def _after(argv, word: bytes, conv, msg: str):
    """RMUtil_ParseArgsAfter for one value: None when word is absent."""
    pos = arg_index(argv, word)
    if pos < 0:
        return None
    if pos + 1 >= len(argv):
        raise tsdb_err(msg)
    v = conv(argv[pos + 1])
    if v is None:
        raise tsdb_err(msg)
    return v


def dup_policy(argv, word: bytes):
    pos = arg_index(argv, word)
    if pos == -1:
        return None
    if pos + 1 >= len(argv):
        raise tsdb_err("Couldn't parse DUPLICATE_POLICY")
    p = T.DP_BY_NAME.get(argv[pos + 1].lower())
    if p is None:
        raise tsdb_err("Unknown DUPLICATE_POLICY")
    return p


def parse_create(argv, cfg) -> CreateArgs:
    """parseCreateArgs: the settings of a new series, the ts-* configuration
    giving the defaults."""
    cc = CreateArgs()
    labels = _parse_labels(argv)
    cc.labels = labels or []
    cc.retention = cfg["ts-retention-policy"]
    if arg_index(argv, b"retention") > 0:
        r = _after(argv, b"retention", parse_ll, "Couldn't parse RETENTION")
        if r < 0:
            raise RedisError("TSDB: Couldn't parse RETENTION")
        cc.retention = r
    cc.chunk_size = cfg["ts-chunk-size-bytes"]
    if arg_index(argv, b"chunk_size") >= 0:
        cs = _after(argv, b"chunk_size", parse_ll, "Couldn't parse CHUNK_SIZE")
        if cs < T.CHUNK_MIN or cs > T.CHUNK_MAX or cs % 8:
            raise tsdb_err("CHUNK_SIZE value must be a multiple of 8 in the range [48 .. 1048576]")
        cc.chunk_size = cs
    cc.options = T.OPT_UNCOMPRESSED if cfg["ts-encoding"] == "uncompressed" else T.OPT_COMPRESSED
    pos = arg_index(argv, b"encoding")
    if pos > 0:
        if pos + 1 >= len(argv):
            raise arity(argv)
        e = argv[pos + 1].lower()
        if e == b"uncompressed":
            cc.options = T.OPT_UNCOMPRESSED
        elif e == b"compressed":
            cc.options = T.OPT_COMPRESSED
        else:
            raise tsdb_err("unknown ENCODING parameter")
    else:
        if arg_index(argv, b"uncompressed") > 0:
            cc.options = T.OPT_UNCOMPRESSED
        if arg_index(argv, b"compressed") > 0:
            cc.options = T.OPT_COMPRESSED
    d = dup_policy(argv, b"duplicate_policy")
    cc.dup = T.DP_BY_NAME[cfg["ts-duplicate-policy"].encode()] if d is None else d
    cc.ignore_td, cc.ignore_vd = cfg["ts-ignore-max-time-diff"], float(cfg["ts-ignore-max-val-diff"])
    pos = arg_index(argv, b"ignore")
    if pos > 0:
        if pos + 2 >= len(argv):
            raise tsdb_err("Couldn't parse IGNORE")
        td = parse_ll(argv[pos + 1])
        vd = parse_dbl(argv[pos + 2])
        if td is None or vd is None:
            raise tsdb_err("Couldn't parse IGNORE")
        if td < 0 or vd < 0:
            raise tsdb_err("IGNORE arguments cannot be negative")
        cc.ignore_td, cc.ignore_vd = td, vd
    return cc


# -- AGGREGATION and the range options -------------------------------------------------

def parse_agg_spec(spec: bytes):
    kinds = []
    for tok in spec.split(b","):
        if not tok:
            raise tsdb_err("Empty aggregation type in list")
        if len(kinds) >= 15:
            raise tsdb_err("Too many aggregation types")
        k = A.BY_NAME.get(tok.lower())
        if k is None:
            raise tsdb_err("Unknown aggregation type")
        kinds.append(k)
    return kinds


def parse_aggregation(argv):
    """_parseAggregationArgs' common part: None when there is no
    AGGREGATION, else (offset, kinds, bucket)."""
    off = arg_index(argv, b"aggregation")
    if off <= 0:
        return None
    if off + 2 >= len(argv):
        raise tsdb_err("Couldn't parse AGGREGATION")
    d = parse_ll(argv[off + 2])
    if d is None:
        raise tsdb_err("Couldn't parse AGGREGATION")
    kinds = parse_agg_spec(argv[off + 1])
    if d <= 0:
        raise tsdb_err("bucketDuration must be greater than zero")
    return off, kinds, d


# BUCKETTIMESTAMP's and ALIGN's words (ALIGN takes start and end only):
# 0 start, 1 end, 2 mid
_EDGES = {b"start": 0, b"-": 0, b"end": 1, b"+": 1, b"mid": 2, b"~": 2}


def parse_range(argv, start: int) -> T.RangeArgs:
    """parseRangeArguments: from/to at argv[start], options after them."""
    a = T.RangeArgs()
    fb, tb = argv[start], argv[start + 1]
    smin = fb == b"-"
    if not smin:
        v = parse_ts(fb)
        if v is None:
            raise tsdb_err("wrong fromTimestamp")
        a.start = v
    emax = tb == b"+"
    if not emax:
        v = parse_ts(tb)
        if v is None:
            raise tsdb_err("wrong toTimestamp")
        a.end = v
    opts = argv[start:]
    a.latest = arg_index(opts, b"latest") > 0
    # COUNT (skipping a COUNT that is AGGREGATION's or REDUCE's argument)
    off = arg_index(opts, b"count")
    if off > 0:
        red = arg_index(opts, b"reduce")
        ag = arg_index(opts, b"aggregation")
        skip = False
        if ag > 0 and off == ag + 1:
            o = arg_index(opts[ag + 2:], b"count")
            if o < 0:
                skip = True
            else:
                off = o + ag + 2
        if not skip and red > 0 and off == red + 1:
            o = arg_index(opts[red + 2:], b"count")
            if o < 0:
                skip = True
            else:
                off = o + red + 2
        if not skip:
            if off + 1 == len(opts):
                raise tsdb_err("COUNT argument is missing")
            n = parse_ll(opts[off + 1])
            if n is None:
                raise tsdb_err("Couldn't parse COUNT")
            if n < 1:
                raise tsdb_err("Invalid COUNT value")
            a.count = n
    parsed = parse_aggregation(opts)
    if parsed is not None:
        off, kinds, d = parsed
        a.aggs = tuple(kinds)
        a.bucket = d
        e = arg_index(opts, b"empty")
        if e > 0:
            if e != off + 3 and e != off + 5:
                raise tsdb_err("EMPTY flag should be the 3rd or 5th flag after AGGREGATION flag")
            a.empty = True
        b = arg_index(opts, b"buckettimestamp")
        if b > 0:
            if b != off + 3 and b != off + 4:
                raise tsdb_err("BUCKETTIMESTAMP flag should be the 3rd or 4th flag after AGGREGATION flag")
            if b + 1 >= len(opts):
                raise arity(argv)
            edge = _EDGES.get(opts[b + 1].lower())
            if edge is None:
                raise tsdb_err("unknown BUCKETTIMESTAMP parameter")
            a.bucket_ts = edge
    al = arg_index(opts, b"align")
    if al > 0:
        if al + 1 >= len(opts):
            raise arity(argv)
        edge = _EDGES.get(opts[al + 1].lower())
        if edge == 0 or edge == 1:
            a.align_kind = edge + 1     # 1: start, 2: end
        else:
            v = parse_ts(opts[al + 1])
            if v is None:
                raise tsdb_err("unknown ALIGN parameter")
            a.align_kind = 3
            a.align = v
        if not a.aggs:
            raise tsdb_err("ALIGN parameter can only be used with AGGREGATION")
        if a.align_kind == 1 and smin:
            raise tsdb_err("start alignment can only be used with explicit start timestamp")
        if a.align_kind == 2 and emax:
            raise tsdb_err("end alignment can only be used with explicit end timestamp")
    fv = arg_index(opts, b"filter_by_value")
    if fv > 0:
        if fv + 2 >= len(opts):
            raise tsdb_err("FILTER_BY_VALUE one or more arguments are missing")
        lo = parse_dbl(opts[fv + 1])
        if lo is None:
            raise tsdb_err("Couldn't parse MIN")
        hi = parse_dbl(opts[fv + 2])
        if hi is None:
            raise tsdb_err("Couldn't parse MAX")
        a.fmin, a.fmax, a.has_fv = lo, hi, True
    ft = arg_index(opts, b"filter_by_ts")
    if ft > 0:
        if ft + 1 == len(opts):
            raise tsdb_err("FILTER_BY_TS one or more arguments are missing")
        vals = []
        k = ft + 1
        while k < len(opts) and len(vals) < 128:
            v = parse_ts(opts[k])
            if v is None:
                break
            vals.append(v)
            k += 1
        if not vals:
            raise tsdb_err("FILTER_BY_TS one or more arguments are missing")
        a.fts = sorted(set(vals))
    return a
