"""ophidis-cli's keyspace modes: --scan, --bigkeys, --memkeys and --hotkeys.
"""

from __future__ import annotations

import sys
import time

from ophidis.protocol.resp import encode_argv, sdscatrepr
from ophidis.tools import resp
from ophidis.tools.cli.output import OUT_STANDARD, err, fatal, flush, out
from ophidis.tools.cli.session import stop_on_sigint, stop_requested
from ophidis.tools.resp import ConnectionClosed


def _send_scan(cli, cursor):
    args = ["SCAN", str(cursor)]
    if cli.cfg.pattern is not None:
        args += ["MATCH", cli.cfg.pattern]
    try:
        r = cli.conn.command(*args)
    except (OSError, ConnectionClosed):
        fatal("\nI/O error\n")
    if r.is_error:
        fatal("SCAN error: %s\n" % r.value.decode(errors="replace"))
    if r.kind != resp.ARRAY:
        fatal("Non ARRAY response from SCAN!\n")
    if len(r.value) != 2:
        fatal("Invalid element count from SCAN!\n")
    return int(r.value[0].value), [e.value for e in r.value[1].value]


def scan_mode(cli):
    stop_on_sigint()
    cur = 0
    while True:
        cur, keys = _send_scan(cli, cur)
        for k in keys:
            if cli.cfg.output == OUT_STANDARD:
                out(sdscatrepr(k) + b"\n")
            else:
                out(k + b"\n")
        flush()
        if cli.cfg.interval:
            time.sleep(cli.cfg.interval)
        if stop_requested() or cur == 0:
            break
    sys.exit(0)


def _dbsize(cli):
    r = cli.conn.command("DBSIZE")
    if r.is_error:
        fatal("Couldn't determine DBSIZE: %s\n" % r.value.decode(errors="replace"))
    if r.kind != resp.INTEGER:
        fatal("Non INTEGER response from DBSIZE!\n")
    return r.value


def _pipeline(cli, commands):
    conn = cli.conn
    conn.send_raw(b"".join(encode_argv(a) for a in commands))
    return [conn.read_reply() for _ in commands]


# In the order redis-cli's summary lists them (its dict iteration order).
TYPE_INFO = [("list", "LLEN", "items"), ("hash", "HLEN", "fields"), ("string", "STRLEN", "bytes"),
             ("stream", "XLEN", "entries"), ("set", "SCARD", "members"), ("zset", "ZCARD", "members")]


class _KeyspaceScan:
    """The SCAN loop --bigkeys, --memkeys and --hotkeys share: the banner,
    the batches of keys (paced by -i, ended by Ctrl-C) and the summary's first
    lines.  The caller counts ``sampled``; ``pct`` is the progress when the
    batch was fetched."""

    def __init__(self, cli, what):
        self.cli = cli
        self.total = _dbsize(cli)
        self.sampled = 0
        self.pct = 0.0
        out("\n# Scanning the entire keyspace to find %s as well as\n"
            "# average sizes per key type.  You can use -i 0.1 to sleep 0.1 sec\n"
            "# per 100 SCAN commands (not usually needed).\n\n" % what)

    def batches(self):
        cli = self.cli
        cur = loops = 0
        while True:
            self.pct = 100 * self.sampled / self.total if self.total else 0.0
            cur, keys = _send_scan(cli, cur)
            loops += 1
            yield keys
            flush()
            if cli.cfg.interval and loops % 100 == 0:
                time.sleep(cli.cfg.interval)
            if stop_requested() or cur == 0:
                break
        out("\n-------- summary -------\n\n")
        if stop_requested():
            out("[%05.2f%%] " % self.pct)
        out("Sampled %d keys in the keyspace!\n" % self.sampled)


def bigkeys_mode(cli, memkeys=False, samples=0):
    stop_on_sigint()
    types = {}
    for name, cmd, unit in TYPE_INFO:
        types[name] = {"name": name, "cmd": cmd, "unit": unit, "biggest": 0, "count": 0,
                       "total": 0, "key": None}
    scan = _KeyspaceScan(cli, "biggest keys")
    totlen = 0
    for keys in scan.batches():
        treplies = _pipeline(cli, [("TYPE", k) for k in keys])
        ktypes = []
        for k, tr in zip(keys, treplies):
            if tr.kind != resp.STATUS:
                if tr.is_error:
                    err("TYPE returned an error: %s\n" % tr.value.decode(errors="replace"))
                else:
                    err("Invalid reply type (%s) for TYPE on key '%s'!\n" % (tr.kind, k.decode(errors="replace")))
                sys.exit(1)
            t = tr.value.decode()
            if t == "none":
                ktypes.append(None)
                continue
            if t not in types:
                types[t] = {"name": t, "cmd": None, "unit": "?", "biggest": 0, "count": 0,
                            "total": 0, "key": None}
            ktypes.append(types[t])
        cmds = []
        for k, t in zip(keys, ktypes):
            if t is None or (t["cmd"] is None and not memkeys):
                continue
            if not memkeys:
                cmds.append((t["cmd"], k))
            elif samples == 0:
                cmds.append(("MEMORY", "USAGE", k))
            else:
                cmds.append(("MEMORY", "USAGE", k, "SAMPLES", str(samples)))
        sreplies = iter(_pipeline(cli, cmds))
        for k, t in zip(keys, ktypes):
            if t is None:
                continue
            size = 0
            if t["cmd"] is not None or memkeys:
                sr = next(sreplies)
                if sr.kind != resp.INTEGER:
                    err("Warning:  %s on '%s' failed (may have changed type)\n"
                        % ("MEMORY USAGE" if memkeys else t["cmd"], k.decode(errors="replace")))
                else:
                    size = sr.value
            t["total"] += size
            t["count"] += 1
            totlen += len(k)
            scan.sampled += 1
            if t["biggest"] < size:
                t["key"] = sdscatrepr(k)
                out(b"[%05.2f%%] Biggest %-6s found so far '%s' with %d %s\n"
                    % (scan.pct, t["name"].encode(), t["key"], size,
                       b"bytes" if memkeys else t["unit"].encode()))
                t["biggest"] = size
            if scan.sampled % 1000000 == 0:
                out("[%05.2f%%] Sampled %d keys so far\n" % (scan.pct, scan.sampled))
    out("Total key length in bytes is %d (avg len %.2f)\n\n" % (totlen, totlen / scan.sampled if totlen else 0))
    for t in types.values():
        if t["key"] is not None:
            out(b"Biggest %6s found '%s' has %d %s\n" % (t["name"].encode(), t["key"], t["biggest"],
                                                         b"bytes" if memkeys else t["unit"].encode()))
    out("\n")
    for t in types.values():
        out("%d %ss with %d %s (%05.2f%% of keys, avg size %.2f)\n"
            % (t["count"], t["name"], t["total"], "bytes" if memkeys else t["unit"],
               100 * t["count"] / scan.sampled if scan.sampled else 0,
               t["total"] / t["count"] if t["count"] else 0))
    flush()
    sys.exit(0)


def hotkeys_mode(cli):
    stop_on_sigint()
    NS = 16
    counters = [0] * NS
    hot = [None] * NS
    scan = _KeyspaceScan(cli, "hot keys")
    for keys in scan.batches():
        replies = _pipeline(cli, [("OBJECT", "FREQ", k) for k in keys])
        for k, r in zip(keys, replies):
            if r.is_error:
                fatal("Error: %s\n" % r.value.decode(errors="replace"))
            freq = r.value if r.kind == resp.INTEGER else 0
            scan.sampled += 1
            if scan.sampled % 1000000 == 0:
                out("[%05.2f%%] Sampled %d keys so far\n" % (scan.pct, scan.sampled))
            i = 0
            while i < NS and freq > counters[i]:
                i += 1
            if i == 0:
                continue
            i -= 1
            if i == 0 or counters[i] == 0:
                pass
            else:
                counters[:i] = counters[1:i + 1]
                hot[:i] = hot[1:i + 1]
            counters[i] = freq
            hot[i] = sdscatrepr(k)
            out(b"[%05.2f%%] Hot key '%s' found so far with counter %d\n" % (scan.pct, hot[i], freq))
    for i in range(NS - 1, -1, -1):
        if counters[i] > 0:
            out(b"hot key found with counter: %d\tkeyname: %s\n" % (counters[i], hot[i]))
    flush()
    sys.exit(0)
