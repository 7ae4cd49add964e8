"""Time series commands that select series by a label filter (``label=v``,
``label!=v``, ``label=(a,b)`` ...): TS.MGET, TS.MRANGE / MREVRANGE (with
GROUPBY ... REDUCE), TS.QUERYINDEX and Redis 8.10's TS.QUERYLABELS.  They
evaluate the filter over the series of the selected database; MGET and
MRANGE answer NOPERM when the user may not read one of the series found.
"""

from __future__ import annotations

import re

from ..acl.check import check_key
from ..acl.users import READ
from ..cmdtable.registry import command
from ..errors import RedisError
from ..protocol.resp import array_header, bulk, map_header, set_header
from ..types import timeseries as T
from ..types import ts_aggregate as A
from ..types.timeseries import TimeSeries
from .timeseries_cmds import latest_bucket, track_name
from .timeseries_args import arg_index, arity, parse_range, pick_labels, reply_labels, reply_last, reply_rows, tsdb_err

_NOPERM = RedisError("NOPERM TSDB: current user doesn't have read permission to one or more keys that match "
                     "the specified filter")


# -- label filters --------------------------------------------------------------------------

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
        raise tsdb_err("failed parsing labels")
    toks = _strtok(arg, sep)
    if not toks or (arg[:1] in sep and False):
        raise tsdb_err("failed parsing labels")
    name = toks[0]
    tok = toks[1] if len(toks) > 1 else None
    if kind in (T.LIST_MATCH, T.LIST_NOTMATCH):
        if tok is None or not tok.endswith(b")"):
            raise tsdb_err("failed parsing labels")
        body = tok[:-1]
        if not body:
            values = set()
        else:
            n = body.count(b",") + 1
            parts = [p for p in body.split(b",") if p]
            if len(parts) != n:
                raise tsdb_err("failed parsing labels")
            values = set(parts)
    else:
        values = {tok} if tok is not None else set()
        if not values:
            kind = T.CONTAINS if kind == T.NEQ else T.NCONTAINS
    return name, kind, values


def _parse_filter(args):
    preds = [_predicate(a) for a in args]
    if not any(k in (T.EQ, T.LIST_MATCH) for _, k, _ in preds):
        raise tsdb_err("please provide at least one matcher")
    return preds


def _all_series(c):
    """The series of the selected database as (key, series)."""
    db = c.db
    found, scanned = T.series_of(db, c.server.dbs)
    if scanned:
        for key, v in found:
            track_name(db, v, key)      # known under their keys again: the next query needs no scan
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
    withl = arg_index(argv, b"withlabels") > 0
    pos = arg_index(argv, b"selected_labels")
    if pos > 0 and withl:
        raise tsdb_err("cannot accept WITHLABELS and SELECT_LABELS together")
    if pos <= 0:
        return withl, None
    names = []
    for a in argv[pos + 1:]:
        if a.lower() in _QUERY_TOKENS:
            break
        if len(names) >= 50:
            raise tsdb_err("reached max size for SELECT_LABELS")
        names.append(bytes(a))
    if not names:
        raise tsdb_err("SELECT_LABELS should have at least 1 parameter")
    return withl, names


def _series_labels(resp, s, withl, names):
    if withl:
        return reply_labels(resp, s.labels)
    if names:
        return reply_labels(resp, pick_labels(s, names))
    return map_header(resp, 0) if resp >= 3 else b"*0\r\n"


def _series_head(resp, key, s, withl, names, fields: int) -> bytes:
    """A series' entry in MGET's / MRANGE's reply up to its labels: RESP2
    [key, labels, ...] (three items), RESP3 key => [labels, ...] (fields
    items)."""
    if resp >= 3:
        return bulk(key) + array_header(fields) + _series_labels(resp, s, withl, names)
    return b"*3\r\n" + bulk(key) + _series_labels(resp, s, withl, names)


@command("ts.mget")
def ts_mget(c, argv):
    if len(argv) < 3:
        raise arity(argv)
    latest = arg_index(argv, b"latest") > 0
    f = arg_index(argv, b"filter")
    if f == -1:
        raise arity(argv)
    withl, names = _label_query(argv)
    preds = _parse_filter(argv[f + 1:])
    resp = c.resp
    found = _query_index(c, preds)
    out = [map_header(resp, len(found)) if resp >= 3 else array_header(len(found))]
    for key, s in found:
        out.append(_series_head(resp, key, s, withl, names, 2))
        out.append(reply_last(resp, s, latest_bucket(c, s) if latest else None))
    return b"".join(out)


@command("ts.queryindex")
def ts_queryindex(c, argv):
    if len(argv) < 2:
        raise arity(argv)
    preds = _parse_filter(argv[1:])
    found = _query_index(c, preds, acl=False)
    return set_header(c.resp, len(found)) + b"".join(bulk(k) for k, _ in found)


def _mrange(c, argv, rev):
    if len(argv) < 4:
        raise arity(argv)
    a = parse_range(argv, 1)
    f = arg_index(argv, b"filter")
    if f == -1:
        raise tsdb_err("missing FILTER argument")
    withl, names = _label_query(argv)
    g = arg_index(argv, b"groupby")
    if 0 < g < f:
        raise tsdb_err("GROUPBY should always come after filter")
    last_filter = g - 1 if g > 0 else len(argv) - 1
    if last_filter - f == 0:
        raise tsdb_err("missing labels for filter argument")
    preds = _parse_filter(argv[f + 1:last_filter + 1])
    ee = arg_index(argv, b"excludeempty")
    exclude = ee > 0 and not (g > 0 and ee == g + 1)
    if exclude and g > 0:
        raise tsdb_err("EXCLUDEEMPTY is not allowed with GROUPBY")
    group = None
    if g > 0:
        if g + 1 >= len(argv):
            raise arity(argv)
        r = arg_index(argv, b"reduce")
        if r < 0 or len(argv) - g != 4:
            raise arity(argv)
        red = A.BY_NAME.get(argv[r + 1].lower())
        if red is None or red in (A.AGG_FIRST, A.AGG_LAST, A.AGG_TWA):
            raise tsdb_err("Invalid reducer type")
        if len(a.aggs) > 1:
            raise tsdb_err("GROUPBY is not allowed when multiple aggregators are specified")
        group = (bytes(argv[g + 1]), red)
    resp = c.resp
    found = _query_index(c, preds)
    multi = len(a.aggs) > 1
    aggnames = b"".join(bulk(A.LOWER[k]) for k in a.aggs)
    if group is not None:
        return _grouped(c, found, a, rev, group, withl, names)
    out = []
    for key, s in found:
        rows = T.query(s, a, rev, latest_bucket(c, s) if a.latest else None)
        if exclude and not rows:
            continue
        item = [_series_head(resp, key, s, withl, names, 3)]
        if resp >= 3:
            item.append(map_header(3, 1) + bulk(b"aggregators") + array_header(len(a.aggs)) + aggnames)
        item.append(reply_rows(resp, rows, multi))
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
            for t, val in T.query(s, a, False, latest_bucket(c, s) if a.latest else None):
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
            item.append(reply_labels(resp, glabels[:1] if resp >= 3 else glabels))
        elif names:
            gs = TimeSeries(name, labels=glabels)
            item.append(reply_labels(resp, pick_labels(gs, names)))
        else:
            item.append(map_header(resp, 0) if resp >= 3 else b"*0\r\n")
        if resp >= 3:
            item.append(map_header(3, 1) + bulk(b"reducers") + b"*1\r\n" + bulk(A.LOWER[red]))
            item.append(map_header(3, 1) + bulk(b"sources") + array_header(len(members))
                        + b"".join(bulk(k) for k, _ in members))
        item.append(reply_rows(resp, rows, False))
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
        raise arity(argv)
    sub = argv[1].lower()
    if sub not in (b"labels", b"values"):
        raise tsdb_err("unknown subtype, must be one of LABELS|VALUES")
    label = None
    fs = 2
    if sub == b"values":
        if n < 3:
            raise arity(argv)
        label = argv[2]
        fs = 3
    preds = None
    if n > fs:
        if argv[fs].lower() != b"filter":
            raise tsdb_err("unknown argument, expected FILTER")
        if n - 1 - fs <= 0:
            raise tsdb_err("FILTER given with no filter expressions")
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
