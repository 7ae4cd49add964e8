"""ophidis-cli's measuring modes: --latency, --latency-history,
--latency-dist, --intrinsic-latency and --stat.
"""

from __future__ import annotations

import math
import sys
import time

from ophidis.tools.cli.output import OUT_CSV, OUT_RAW, OUT_STANDARD, fatal, flush, out
from ophidis.tools.cli.session import Reconnecting, stop_on_sigint, stop_requested


SPECTRUM_COLOR = [0, 233, 234, 235, 237, 239, 241, 243, 245, 247, 144, 143, 142, 184, 226, 214,
                  208, 202, 196]
SPECTRUM_MONO = [0, 233, 234, 235, 237, 239, 241, 243, 245, 247, 249, 251, 253]


def latency_mode(cli):
    c = cli.cfg
    rc = Reconnecting(cli)
    history_interval = c.interval * 1000 if c.interval else 15000
    interval_ms = c.interval * 1000 if c.interval else 1000
    mn = mx = tot = count = 0
    hist_start = time.monotonic()

    def show():
        avg = tot / count if count else 0.0
        if c.output == OUT_STANDARD:
            out("min: %d, max: %d, avg: %.2f (%d samples)" % (mn, mx, avg, count))
            flush()
        elif c.output == OUT_CSV:
            out("%d,%d,%.2f,%d\n" % (mn, mx, avg, count))
        elif c.output == OUT_RAW:
            out("%d %d %.2f %d\n" % (mn, mx, avg, count))
        else:
            out('{"min": %d, "max": %d, "avg": %.2f, "count": %d}\n' % (mn, mx, avg, count))
        flush()

    while True:
        t0 = time.monotonic()
        rc.command("PING")
        lat = int(time.monotonic() * 1000) - int(t0 * 1000)
        count += 1
        if count == 1:
            mn = mx = tot = lat
        else:
            mn = min(mn, lat)
            mx = max(mx, lat)
            tot += lat
        now = time.monotonic()
        if c.output == OUT_STANDARD:
            out("\x1b[0G\x1b[2K")
            show()
        elif c.latency_history:
            show()
        elif (now - hist_start) * 1000 > interval_ms:
            show()
            sys.exit(0)
        if c.latency_history and (now - hist_start) * 1000 > history_interval:
            out(" -- %.2f seconds range\n" % (now - hist_start))
            flush()
            hist_start = time.monotonic()
            mn = mx = tot = count = 0
        time.sleep(0.010)


def latency_dist_mode(cli):
    c = cli.cfg
    rc = Reconnecting(cli)
    palette = SPECTRUM_MONO if c.mono else SPECTRUM_COLOR
    buckets = [(10, "."), (125, "-"), (250, "*"), (500, "#")] + \
        [(i * 1000, str(i)) for i in range(1, 10)] + \
        [(10000, "A"), (20000, "B"), (30000, "C"), (40000, "D"), (50000, "E"),
         (100000, "F"), (200000, "G"), (300000, "H"), (400000, "I"), (500000, "J"),
         (1000000, "K"), (2000000, "L"), (4000000, "M"), (8000000, "N"), (16000000, "O"),
         (30000000, "P"), (60000000, "Q"), (0, "?")]
    counts = [0] * len(buckets)
    interval = c.interval * 1000 if c.interval else 1000
    outputs = 0
    count = 0
    start = time.monotonic()
    while True:
        t0 = time.monotonic()
        rc.command("PING")
        lat = int((time.monotonic() - t0) * 1e6)
        count += 1
        for j, (mxv, _ch) in enumerate(buckets):
            if mxv == 0 or lat <= mxv:
                counts[j] += 1
                break
        if count and (time.monotonic() - start) * 1000 > interval:
            if outputs % 20 == 0:
                out("---------------------------------------------\n"
                    ". - * #          .01 .125 .25 .5 milliseconds\n"
                    "1,2,3,...,9      from 1 to 9     milliseconds\n"
                    "A,B,C,D,E        10,20,30,40,50  milliseconds\n"
                    "F,G,H,I,J        .1,.2,.3,.4,.5       seconds\n"
                    "K,L,M,N,O,P,Q,?  1,2,4,8,16,30,60,>60 seconds\n"
                    "From 0 to 100%: ")
                out("".join("\x1b[48;5;%dm " % p for p in palette) + "\x1b[0m\n")
                out("---------------------------------------------\n")
            outputs += 1
            line = ["\x1b[38;5;0m"]
            for j, (_mxv, ch) in enumerate(buckets):
                idx = int(math.ceil(counts[j] / count * (len(palette) - 1)))
                line.append("\x1b[48;5;%dm%s" % (palette[idx], ch))
                counts[j] = 0
            line.append("\x1b[0m\n")
            out("".join(line))
            flush()
            start = time.monotonic()
            count = 0
        time.sleep(0.010)


def _compute_something_fast():
    # A tiny fixed amount of work: the test measures how long the process
    # is kept from running, not how fast this is.
    x = 0
    for i in range(8):
        x ^= i * 2654435761
    return x


def intrinsic_latency_mode(seconds):
    run_time = seconds * 1_000_000
    ns = time.perf_counter_ns
    test_end = ns() // 1000 + run_time
    max_lat = 0
    runs = 0
    stop_on_sigint()
    while True:
        start = ns()
        _compute_something_fast()
        end = ns()
        lat = (end - start) // 1000
        runs += 1
        if lat <= 0:
            if end // 1000 > test_end or stop_requested():
                pass
            else:
                continue
        if lat > max_lat:
            max_lat = lat
            out("Max latency so far: %d microseconds.\n" % max_lat)
            flush()
        avg_us = run_time / runs
        if stop_requested() or end // 1000 > test_end:
            out("\n%d total runs (avg latency: %.4f microseconds / %.2f nanoseconds per run).\n"
                % (runs, avg_us, avg_us * 1e3))
            out("Worst run took %.0fx longer than the average latency.\n" % (max_lat / avg_us))
            flush()
            sys.exit(0)


def _bytes_to_human(n):
    sign = ""
    if n < 0:
        sign, n = "-", -n
    if n < 1024:
        return "%s%dB" % (sign, n)
    if n < 1024 ** 2:
        return "%s%.2fK" % (sign, n / 1024)
    if n < 1024 ** 3:
        return "%s%.2fM" % (sign, n / 1024 ** 2)
    return "%s%.2fG" % (sign, n / 1024 ** 3)


def _info_field(info: bytes, field: bytes):
    p = info.find(field + b":")
    if p < 0:
        # redis-cli uses strstr on "dbN:keys"
        p = info.find(field)
        if p < 0:
            return None
        p += len(field) + 1
    else:
        p += len(field) + 1
    e1 = info.find(b"\r", p)
    if e1 < 0:
        e1 = len(info)
    e2 = info.find(b",", p)
    if 0 <= e2 < e1:
        e1 = e2
    v = info[p:e1]
    try:
        return int(v.split(b".")[0] or b"0")
    except ValueError:
        return 0


def stat_mode(cli):
    c = cli.cfg
    rc = Reconnecting(cli)
    interval = c.interval or 1.0
    requests = 0
    i = 0
    while True:
        r = rc.command("INFO")
        if r.is_error:
            fatal("ERROR: %s\n" % r.value.decode(errors="replace"))
        info = r.value
        if i % 20 == 0:
            out("------- data ------ --------------------- load -------------------- - child -\n"
                "keys       mem      clients blocked requests            connections          \n")
        i += 1
        keys = 0
        for j in range(20):
            k = _info_field(info, b"db%d:keys" % j)
            if k is not None:
                keys += k
        line = "%-11s" % keys
        line += "%-8s" % _bytes_to_human(_info_field(info, b"used_memory") or 0)
        line += " %-8s" % (_info_field(info, b"connected_clients") or 0)
        line += "%-8s" % (_info_field(info, b"blocked_clients") or 0)
        req = _info_field(info, b"total_commands_processed") or 0
        line += "%-19s" % ("%d (+%d)" % (req, 0 if requests == 0 else req - requests))
        requests = req
        line += " %-12s" % (_info_field(info, b"total_connections_received") or 0)
        child = (_info_field(info, b"rdb_bgsave_in_progress") or 0) | \
            ((_info_field(info, b"aof_rewrite_in_progress") or 0) << 1) | \
            ((_info_field(info, b"loading") or 0) << 2)
        line += {0: "", 1: "SAVE", 2: "AOF", 3: "SAVE+AOF", 4: "LOAD"}.get(child, "")
        out(line + "\n")
        flush()
        time.sleep(interval)
