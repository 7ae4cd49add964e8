"""LATENCY: the latency monitor (events recorded by ``Server.latency_add``
when ``latency-monitor-threshold`` is set) and per-command latency
histograms (``Command.hist``, filled on every call while
``latency-tracking`` is on).

Histogram bucket k counts calls that took at most 1.024us * 2^k, which is
how Redis's HDR histogram is iterated for LATENCY HISTOGRAM (power of two
steps starting at 1024ns, reported in whole microseconds).
"""

from __future__ import annotations

import time

from ..errors import RedisError
from ..protocol.resp import bulk, integer, map_header, simple, verbatim
from . import ALL, command
from .command_cmd import lookup_by_name, top_level

GRAPH_COLS = 80
GRAPH_ROWS = 4


def histogram_cdf(hist):
    """[(usec bucket upper bound, cumulative count)] for non-empty steps."""
    out = []
    cum = 0
    for k, n in enumerate(hist):
        if n:
            cum += n
            out.append(((1024 << k) // 1000, cum))
    return out


def _cdf_reply(resp, cmd) -> bytes:
    cdf = histogram_cdf(cmd.hist)
    total = cdf[-1][1] if cdf else 0
    out = [map_header(resp, 2), bulk(b"calls"), integer(total), bulk(b"histogram_usec"),
           map_header(resp, len(cdf))]
    for us, cum in cdf:
        out.append(integer(us))
        out.append(integer(cum))
    return b"".join(out)


def _has_data(cmd) -> bool:
    return any(cmd.hist)


def percentile_usec(hist, p: float) -> float:
    """Upper bound (usec) of the bucket holding percentile p (0..100)."""
    total = sum(hist)
    if not total:
        return 0.0
    want = total * p / 100.0
    cum = 0
    for k, n in enumerate(hist):
        cum += n
        if n and cum >= want:
            return (1024 << k) / 1000.0
    return (1024 << (len(hist) - 1)) / 1000.0


def _samples(ev):
    return list(ev["samples"])


def _graph(name: str, ev) -> bytes:
    samples = _samples(ev)
    now = int(time.time())
    vals = [ms for _, ms in samples]
    lo = min(vals) if vals else 0
    hi = max(vals) if vals else 0
    head = "%s - high %d ms, low %d ms (all time high %d ms)\n%s\n" % (
        name, hi, lo, ev["max"], "-" * GRAPH_COLS)
    lines = []
    span = (hi - lo) or 1
    cols = []
    for t, ms in samples[-GRAPH_COLS:]:
        level = int((ms - lo) * (GRAPH_ROWS * 2) / span)
        level = min(max(level, 0), GRAPH_ROWS * 2 - 1)
        age = now - t
        if age < 60:
            label = "%ds" % age
        elif age < 3600:
            label = "%dm" % (age // 60)
        elif age < 86400:
            label = "%dh" % (age // 3600)
        else:
            label = "%dd" % (age // 86400)
        cols.append((level, label))
    for row in range(GRAPH_ROWS):
        # top row first; each row shows two half steps: '_' low half, '#' full
        base = (GRAPH_ROWS - 1 - row) * 2
        line = []
        for level, _ in cols:
            if level >= base + 1:
                line.append("#")
            elif level == base:
                line.append("_")
            else:
                line.append(" ")
        lines.append("".join(line).rstrip())
    lines.append("")
    width = max((len(lb) for _, lb in cols), default=0)
    for i in range(width):
        lines.append("".join(lb[i] if i < len(lb) else " " for _, lb in cols).rstrip())
    return (head + "\n".join(lines) + "\n").encode()


def _doctor(srv) -> bytes:
    events = srv.latency_events
    thr = srv.config["latency-monitor-threshold"]
    if not events:
        if not thr:
            text = ("The latency monitor is disabled (latency-monitor-threshold is 0), so no "
                    "latency events are recorded. Enable it with CONFIG SET "
                    "latency-monitor-threshold <milliseconds> to collect samples.\n")
        else:
            text = ("No latency spike above %d milliseconds has been recorded since the "
                    "monitor was enabled or last reset. Nothing to report.\n" % thr)
        return text.encode()
    out = ["Latency report of this Ophidis instance (threshold %d ms).\n\n" % thr]
    advice = set()
    for i, (name, ev) in enumerate(sorted(events.items()), 1):
        vals = [ms for _, ms in ev["samples"]]
        if not vals:
            continue
        avg = sum(vals) / len(vals)
        mad = sum(abs(v - avg) for v in vals) / len(vals)
        first = ev["samples"][0][0]
        period = max(1, int(time.time()) - first)
        out.append("%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). "
                   "Worst all time event %dms.\n" % (i, name, len(vals), int(avg), int(mad),
                                                     period / len(vals), ev["max"]))
        if name in ("command", "fast-command"):
            advice.add("slow")
        elif name.startswith("expire"):
            advice.add("expire")
        elif name.startswith("aof") or name.startswith("rdb") or name == "fork":
            advice.add("disk")
    out.append("\nSuggestions:\n")
    if "slow" in advice:
        out.append("- Commands are slow: look for them with SLOWLOG GET and avoid O(N) commands "
                   "on large values (KEYS, SMEMBERS, LRANGE 0 -1, ...).\n")
    if "expire" in advice:
        out.append("- Many keys expire at the same time: spread the expiry times a little.\n")
    if "disk" in advice:
        out.append("- Persistence is slowing the server: check the disk and fsync settings.\n")
    if not advice:
        out.append("- No specific advice for these events.\n")
    return "".join(out).encode()


def _help():
    lines = [
        "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    Analyse the recorded latency events and give advice.",
        "GRAPH <event>",
        "    ASCII graph of the samples of <event>.",
        "HISTORY <event>",
        "    Timestamp and latency of the samples of <event>.",
        "LATEST",
        "    The latest sample of every event.",
        "RESET [<event> ...]",
        "    Forget the samples of the given events (of all events without names).",
        "HISTOGRAM [<command> ...]",
        "    Cumulative latency distribution of the given commands (all commands",
        "    that have data without names).",
        "HELP",
        "    Prints this help.",
    ]
    return b"*%d\r\n" % len(lines) + b"".join(simple(x.encode()) for x in lines)


def _event(srv, name: bytes):
    return srv.latency_events.get(name.decode("utf-8", "replace"))


@command("latency|latest")
def latency_latest(c, argv):
    events = c.server.latency_events
    out = [b"*%d\r\n" % len(events)]
    for name, ev in events.items():
        t, ms = ev["samples"][-1] if ev["samples"] else (0, 0)
        out.append(b"*4\r\n" + bulk(name.encode()) + integer(t) + integer(ms) + integer(ev["max"]))
    return b"".join(out)


@command("latency|history")
def latency_history(c, argv):
    ev = _event(c.server, argv[2])
    if ev is None:
        return b"*0\r\n"
    s = _samples(ev)
    return b"*%d\r\n" % len(s) + b"".join(b"*2\r\n" + integer(t) + integer(ms) for t, ms in s)


@command("latency|reset")
def latency_reset(c, argv):
    events = c.server.latency_events
    if len(argv) == 2:
        n = len(events)
        events.clear()
        return integer(n)
    n = 0
    for a in argv[2:]:
        want = a.decode("utf-8", "replace").lower()
        for name in list(events):
            if name.lower() == want:
                del events[name]
                n += 1
    return integer(n)


@command("latency|graph")
def latency_graph(c, argv):
    name = argv[2].decode("utf-8", "replace")
    ev = c.server.latency_events.get(name)
    if ev is None:
        raise RedisError("ERR No samples available for event '%s'" % name)
    return verbatim(c.resp, _graph(name, ev))


@command("latency|doctor")
def latency_doctor(c, argv):
    return verbatim(c.resp, _doctor(c.server))


@command("latency|histogram")
def latency_histogram(c, argv):
    resp = c.resp
    entries = []
    if len(argv) == 2:
        for cmd in top_level():
            if _has_data(cmd):
                entries.append(cmd)
            for sub in cmd.subcommands.values():
                if _has_data(sub):
                    entries.append(sub)
    else:
        for name in argv[2:]:
            cmd = lookup_by_name(name)
            if cmd is None:
                continue
            if _has_data(cmd):
                entries.append(cmd)
            for sub in cmd.subcommands.values():
                if _has_data(sub):
                    entries.append(sub)
    out = [map_header(resp, len(entries))]
    for cmd in entries:
        out.append(bulk(cmd.fullname.encode()))
        out.append(_cdf_reply(resp, cmd))
    return b"".join(out)


@command("latency|help")
def latency_help(c, argv):
    return _help()


def latencystats_lines(srv):
    """INFO latencystats lines from the per-command histograms."""
    pcts = srv.config["latency-tracking-info-percentiles"] or []
    out = []
    for name in sorted(ALL):
        cmd = ALL[name]
        if not _has_data(cmd):
            continue
        parts = []
        for p in pcts:
            label = ("%f" % p).rstrip("0").rstrip(".")
            parts.append("p%s=%.3f" % (label, percentile_usec(cmd.hist, p)))
        out.append("latency_percentiles_usec_%s:%s" % (name, ",".join(parts)))
    return out
