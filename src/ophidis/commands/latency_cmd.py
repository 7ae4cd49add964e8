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

from ..cmdtable.registry import command, lookup_by_name, top_level
from ..errors import RedisError
from ..protocol.resp import bulk, help_reply, integer, map_header, verbatim

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


# LATENCY DOCTOR: the advice each recorded event calls for, and the texts
# (createLatencyReport's replies, in its order).  A flag counts as advice
# even when its text is then left out (fsync policy not "always", hz
# already >= 100), as Redis counts it.
_EVENT_ADVICE = {
    "command": ("slowlog_inspect", "large_objects"),
    "fast-command": ("scheduler",),
    "aof-write-pending-fsync": ("local_disk", "disk_contention", "ssd", "data_writeback"),
    "aof-write-active-child": ("no_appendfsync", "data_writeback", "ssd"),
    "aof-write-alone": ("local_disk", "data_writeback", "ssd"),
    "aof-fsync-always": ("relax_fsync_policy",),
    "aof-fstat": ("disk_contention", "local_disk"),
    "rdb-unlink-temp-file": ("disk_contention", "local_disk"),
    "aof-rewrite-diff-write": ("write_load_info", "data_writeback", "ssd", "local_disk"),
    "aof-rename": ("write_load_info", "data_writeback", "ssd", "local_disk"),
    "expire-cycle": ("hz", "large_objects"),
    "eviction-del": ("large_objects",),
    "eviction-cycle": ("mass_eviction",),
}

_ADVICE_TEXT = [
    ("better_vm", "- If you are using a virtual machine, consider upgrading it with a faster one using a hypervisior "
     "that provides less latency during fork() calls. Xen is known to have poor fork() performance. Even in the "
     "context of the same VM provider, certain kinds of instances can execute fork faster than others.\n"),
    ("slowlog_enabled", "- There are latency issues with potentially slow commands you are using. Try to enable the "
     "Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than %(usec)d'. If the Slow log is "
     "disabled Redis is not able to log slow commands execution for you.\n"),
    ("slowlog_tuning", "- Your current Slow Log configuration only logs events that are slower than your configured "
     "latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than %(usec)d'.\n"),
    ("slowlog_inspect", "- Check your Slow Log to understand what are the commands you are running which are too "
     "slow to execute. Please check https://redis.io/commands/slowlog for more information.\n"),
    ("scheduler", "- The system is slow to execute Redis code paths not containing system calls. This usually means "
     "the system does not provide Redis CPU time to run for long periods. You should try to:\n"
     "  1) Lower the system load.\n"
     "  2) Use a computer / VM just for Redis if you are running other software in the same system.\n"
     "  3) Check if you have a \"noisy neighbour\" problem.\n"
     "  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n"
     "  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using "
     "Jemalloc. However this may create fragmentation problems.\n"),
    ("local_disk", "- It is strongly advised to use local disks for persistence, especially if you are using AOF. "
     "Remote disks provided by platform-as-a-service providers are known to be slow.\n"),
    ("ssd", "- SSD disks are able to reduce fsync latency, and total time needed for snapshotting and AOF log "
     "rewriting (resulting in smaller memory usage). With extremely high write load SSD disks can be a good option. "
     "However Redis should perform reasonably with high load using normal disks. Use this advice as a last "
     "resort.\n"),
    ("data_writeback", "- Mounting ext3/4 filesystems with data=writeback can provide a performance boost compared "
     "to data=ordered, however this mode of operation provides less guarantees, and sometimes it can happen that "
     "after a hard crash the AOF file will have a half-written command at the end and will require to be repaired "
     "before Redis restarts.\n"),
    ("disk_contention", "- Try to lower the disk contention. This is often caused by other disk intensive processes "
     "running in the same computer (including other Redis instances).\n"),
    ("no_appendfsync", "- Assuming from the point of view of data safety this is viable in your environment, you "
     "could try to enable the 'no-appendfsync-on-rewrite' option, so that fsync will not be performed while there "
     "is a child rewriting the AOF file or producing an RDB file (the moment where there is high disk "
     "contention).\n"),
    ("relax_fsync_policy", "- Your fsync policy is set to 'always'. It is very hard to get good performances with "
     "such a setup, if possible try to relax the fsync policy to 'onesec'.\n"),
    ("write_load_info", "- Latency during the AOF atomic rename operation or when the final difference is flushed "
     "to the AOF file at the end of the rewrite, sometimes is caused by very high write load, causing the AOF "
     "buffer to get very large. If possible try to send less commands to accomplish the same work, or use Lua "
     "scripts to group multiple operations into a single EVALSHA call.\n"),
    ("hz", "- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration "
     "parameter to 100 using 'CONFIG SET hz 100'.\n"),
    ("large_objects", "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking "
     "operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment "
     "those objects into multiple smaller objects.\n"),
    ("mass_eviction", "- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects "
     "via sets or sorted sets intersections, STORE option of SORT, Redis Cluster large keys migrations (RESTORE "
     "command), may create sudden memory pressure forcing the server to block trying to evict keys. \n"),
    ("disable_thp", "- I detected a non zero amount of anonymous huge pages used by your process. This creates very "
     "serious latency events in different conditions, especially when Redis is persisting on disk. To disable THP "
     "support use the command 'echo never > /sys/kernel/mm/transparent_hugepage/enabled', make sure to also add "
     "it into /etc/rc.local so that the command will be executed again after a reboot. Note that even if you have "
     "already disabled THP, you still need to restart the Redis process to get rid of the huge pages already "
     "created.\n"),
]


def anon_huge_pages_kb() -> int:
    """AnonHugePages of this process (transparent huge pages in use)."""
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _event_stats(ev):
    """(samples, avg, mad, period) of an event's samples, as Redis computes them."""
    vals = [ms for t, ms in ev["samples"] if t]
    if not vals:
        return 0, 0, 0, 0
    avg = sum(vals) // len(vals)
    mad = sum(abs(avg - v) for v in vals) // len(vals)
    period = int(time.time()) - min(t for t, _ in ev["samples"] if t)
    return len(vals), avg, mad, period or 1


def _doctor(srv) -> bytes:
    events = srv.latency_events
    thr = srv.config["latency-monitor-threshold"]
    if not events and not thr:
        return (b"I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may "
                b"use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't "
                b"in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n")
    out = []
    advice = set()
    count = 0
    for i, (name, ev) in enumerate(sorted(events.items()), 1):
        if i == 1:
            out.append("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about "
                       "it, do you Dave?\n\n")
        n, avg, mad, period = _event_stats(ev)
        out.append("%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). Worst all time "
                   "event %dms." % (i, name, n, avg, mad, period / n if n else float("nan"), ev["max"]))
        low = name.lower()
        if low == "fork":
            usec = srv.latest_fork_usec
            rate = srv.memory.used_memory() * 1e6 / usec / (1 << 30) if usec else 0.0
            quality = ("terrible" if rate < 10 else "poor" if rate < 25 else "good" if rate < 100
                       else "excellent")
            if rate < 25:
                advice.add("better_vm")
                count += 1
            out.append(" Fork rate is %.2f GB/sec (%s)." % (rate, quality))
        if low == "command":
            slower = srv.config["slowlog-log-slower-than"]
            if slower < 0:
                advice.add("slowlog_enabled")
                count += 1
            elif slower // 1000 > thr:
                advice.add("slowlog_tuning")
                count += 1
        for a in _EVENT_ADVICE.get(low, ()):
            advice.add(a)
            count += 1
        out.append("\n")
    if anon_huge_pages_kb() > 0:
        advice.add("disable_thp")
        count += 1
    if not events and not count:
        out.append("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the "
                   "slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think "
                   "things over.\n")
    elif not count:
        out.append("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the "
                   "Redis community to get some help, providing this report in your help request.\n")
    else:
        out.append("\nI have a few advices for you:\n\n")
        if srv.config["appendfsync"] != "always":
            advice.discard("relax_fsync_policy")
        if srv.hz >= 100:
            advice.discard("hz")
        for key, text in _ADVICE_TEXT:
            if key in advice:
                out.append(text % {"usec": thr * 1000} if "%(" in text else text)
    return "".join(out).encode()


def _help():
    return help_reply(b"LATENCY", b"""\
DOCTOR
    Analyse the recorded latency events and give advice.
GRAPH <event>
    ASCII graph of the samples of <event>.
HISTORY <event>
    Timestamp and latency of the samples of <event>.
LATEST
    The latest sample of every event.
RESET [<event> ...]
    Forget the samples of the given events (of all events without names).
HISTOGRAM [<command> ...]
    Cumulative latency distribution of the given commands (all commands
    that have data without names).
""")


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
