"""Redis 8.10's time series reads: TS.READ (the samples from a cursor on,
blocking until enough have arrived) and TS.NRANGE / NREVRANGE (the named
series' samples side by side, one row per timestamp).  The series, its
writes and TS.GET / RANGE are in timeseries_cmds.py, the label filter
queries in timeseries_filters.py.

(The three modules load in this order, so the commands keep the places in
the command table, and COMMAND's listing, that they had in one module.)
"""

from __future__ import annotations

import time

from ..cmdtable.registry import command
from ..errors import RedisError
from ..protocol.resp import array_header, error, integer
from ..types import timeseries as T
from ..types import ts_aggregate as A
from ..types.timeseries import TimeSeries
from .timeseries_cmds import get_series, latest_bucket
from .timeseries_args import (arg_index, arity, parse_agg_spec, parse_ll, parse_range, parse_ts, reply_rows,
                              reply_value, tsdb_err)


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
    return reply_rows(c.resp, rows, False)


@command("ts.read", flags=("may_block",))
def ts_read(c, argv):
    """TS.READ key timestamp [BLOCK ms min_count] [MAX_COUNT n] (8.10)."""
    n = len(argv)
    opts = argv[3:]
    has_block = arg_index(opts, b"block") >= 0
    has_max = arg_index(opts, b"max_count") >= 0
    if n < 3 or n != 3 + (3 if has_block else 0) + (2 if has_max else 0):
        raise arity(argv)
    ms, min_count, max_count = 0, 1, -1
    if has_block:
        p = arg_index(opts, b"block")
        ms = parse_ll(opts[p + 1]) if p + 2 < len(opts) else None
        min_count = parse_ll(opts[p + 2]) if p + 2 < len(opts) else None
        if ms is None or min_count is None or ms < 0:
            raise RedisError("TSDB: BLOCK milliseconds must be a non-negative integer")
        if min_count <= 0:
            raise RedisError("TSDB: BLOCK min_count must be a positive integer")
    if has_max:
        p = arg_index(opts, b"max_count")
        max_count = parse_ll(opts[p + 1]) if p + 1 < len(opts) else None
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
        cursor = parse_ts(tb)
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
        raise arity(argv)
    nk = parse_ll(argv[1])
    if nk is None or nk <= 0:
        raise tsdb_err("numkeys must be a positive integer")
    if nk > n - 4:
        raise arity(argv)
    rs = 2 + nk
    keys = argv[2:rs]
    per_key = None
    rel = arg_index(argv[rs:], b"aggregation")
    if nk > 1 and rel >= 0:
        first = rs + rel + 1
        per_key = []
        for k in range(nk):
            if first + k >= n or parse_ll(argv[first + k]) is not None:
                raise tsdb_err("the number of AGGREGATION arguments must be equal to numkeys")
            spec = argv[first + k]
            if not spec:
                raise tsdb_err("Unknown aggregation type")
            per_key.append(tuple(parse_agg_spec(spec)))
        if first + nk < n and argv[first + nk].lower() in A.BY_NAME:
            raise tsdb_err("the number of AGGREGATION arguments must be equal to numkeys")
        argv = list(argv[:first + 1]) + list(argv[first + nk:])
    a = parse_range(argv, rs)
    series = [get_series(c, k) for k in keys]
    widths = []
    results = []
    for i, s in enumerate(series):
        if per_key is not None:
            a.aggs = per_key[i]
        rows = T.query(s, a, rev, latest_bucket(c, s) if a.latest else None)
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
        body.append(b"*2\r\n" + integer(t) + array_header(len(row)) + b"".join(reply_value(resp, v) for v in row))
    return b"".join(body)


@command("ts.nrange")
def ts_nrange(c, argv):
    return _nrange(c, argv, False)


@command("ts.nrevrange")
def ts_nrevrange(c, argv):
    return _nrange(c, argv, True)
