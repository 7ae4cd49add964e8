"""``ophidis-benchmark memtier``: a memtier_benchmark-like mixed SET/GET load.

Options (memtier_benchmark's names):
  -s/--server, -p/--port, -S/--unix-socket, -a/--authenticate
  -t/--threads (worker processes), -c/--clients (per thread)
  --test-time SECS | -n/--requests N (per client)
  --ratio SET:GET (default 1:10)
  --key-pattern SET:GET, each R (uniform random), S (sequential), G (gaussian)
  --key-minimum / --key-maximum (default 0 / 10000000), --key-prefix (memtier-)
  -d/--data-size (default 32), --pipeline (default 1)
  --key-stddev / --key-median (Gaussian pattern)
  --hdr-file-prefix PREFIX: writes PREFIX_FULL_RUN_1.txt, PREFIX_SET_command_run_1.txt,
      PREFIX_GET_command_run_1.txt (HdrHistogram text percentile distributions, ms)
  --spectrum-png FILE: a latency-by-percentile plot (PNG written with zlib/struct)
  --hide-histogram, --seed N
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing as mp
import random
import signal
import struct
import sys
import time
import zlib

import hiredis

from ophidis.protocol.resp import encode_argv
from ophidis.tools.defaults import Defaults
from ophidis.tools.hdr import Histogram
from ophidis.tools.resp import new_loop


class MOpts(Defaults):
    DEFAULTS = {
        "host": "127.0.0.1", "port": 6379, "unix": None, "auth": None,
        "threads": 4, "clients": 50, "test_time": None, "requests": 10000, "ratio": (1, 10),
        "pattern": ("R", "R"), "key_min": 0, "key_max": 10000000, "key_prefix": "memtier-",
        "key_stddev": None, "key_median": None, "data_size": 32, "pipeline": 1, "seed": None,
        "hdr_prefix": None, "png": None, "hide_histogram": False,
    }


def usage(code):
    (sys.stderr if code else sys.stdout).write(__doc__.split("\n", 2)[2])
    sys.exit(code)


def parse(argv):
    o = MOpts()
    i = 0
    n = len(argv)
    while i < n:
        a = argv[i]
        val = None
        if a.startswith("--") and "=" in a:
            a, val = a.split("=", 1)

        def need():
            nonlocal i
            if val is not None:
                return val
            if i + 1 >= n:
                sys.stderr.write("option %s requires an argument\n" % a)
                sys.exit(1)
            i += 1
            return argv[i]
        if a in ("-s", "--server", "-h", "--host"):
            o.host = need()
        elif a in ("-p", "--port"):
            o.port = int(need())
        elif a in ("-S", "--unix-socket"):
            o.unix = need()
        elif a in ("-a", "--authenticate"):
            o.auth = need()
        elif a in ("-t", "--threads"):
            o.threads = max(1, int(need()))
        elif a in ("-c", "--clients"):
            o.clients = max(1, int(need()))
        elif a == "--test-time":
            o.test_time = float(need())
            o.requests = None
        elif a in ("-n", "--requests"):
            v = need()
            o.requests = None if v == "allkeys" else int(v)
        elif a == "--ratio":
            s, g = need().split(":")
            o.ratio = (int(s), int(g))
            if o.ratio[0] + o.ratio[1] <= 0:
                sys.stderr.write("error: bad --ratio\n")
                sys.exit(1)
        elif a == "--key-pattern":
            s, g = need().upper().split(":")
            if s not in "RSG" or g not in "RSG" or not s or not g:
                sys.stderr.write("error: key-pattern must be in the format of [S/R/G]:[S/R/G].\n")
                sys.exit(1)
            o.pattern = (s, g)
        elif a == "--key-minimum":
            o.key_min = int(need())
        elif a == "--key-maximum":
            o.key_max = int(need())
        elif a == "--key-prefix":
            o.key_prefix = need()
        elif a == "--key-stddev":
            o.key_stddev = float(need())
        elif a == "--key-median":
            o.key_median = float(need())
        elif a in ("-d", "--data-size"):
            o.data_size = max(1, int(need()))
        elif a == "--pipeline":
            o.pipeline = max(1, int(need()))
        elif a == "--hdr-file-prefix":
            o.hdr_prefix = need()
        elif a == "--spectrum-png":
            o.png = need()
        elif a == "--hide-histogram":
            o.hide_histogram = True
        elif a == "--seed":
            o.seed = int(need())
        elif a == "--help":
            usage(0)
        else:
            sys.stderr.write("unrecognized option: %s\n" % a)
            usage(1)
        i += 1
    if o.key_max < o.key_min:
        sys.stderr.write("error: key-maximum must be greater than key-minimum.\n")
        sys.exit(1)
    if o.test_time is None and o.requests is None:
        o.requests = o.key_max - o.key_min + 1
    return o


class KeyGen:
    def __init__(self, o, rng, thread_idx, client_idx, nclients_total):
        self.o = o
        self.rng = rng
        span = o.key_max - o.key_min + 1
        # Sequential patterns: each client starts at its own offset, like memtier's per-client iterators.
        self.seq = {"S": o.key_min + (span * (thread_idx * o.clients + client_idx)) // max(1, nclients_total)}
        self.span = span
        self.median = o.key_median if o.key_median is not None else o.key_min + span / 2
        self.stddev = o.key_stddev if o.key_stddev is not None else span / 6

    def next(self, kind):
        o = self.o
        if kind == "R":
            return o.key_min + int(self.rng.random() * self.span)
        if kind == "S":
            k = self.seq["S"]
            nk = k + 1
            if nk > o.key_max:
                nk = o.key_min
            self.seq["S"] = nk
            return k
        while True:
            k = int(round(self.rng.gauss(self.median, self.stddev)))
            if o.key_min <= k <= o.key_max:
                return k


class MClient(asyncio.Protocol):
    def __init__(self, w, idx):
        self.w = w
        self.idx = idx
        self.reader = hiredis.Reader()
        self.t = None
        self.ops = []          # per pending request: (op, t0)
        self.keys = None
        self.ratio_pos = 0
        self.done_reqs = 0
        self.prefix_wait = None

    def connection_made(self, t):
        self.t = t

    def connection_lost(self, exc):
        if self.ops and not self.w.done.done():
            self.w.fail("Connection lost")

    def fill(self):
        w = self.w
        o = w.o
        if w.stopping:
            if not self.ops:
                w.client_done()
            return
        s, g = o.ratio
        cycle = s + g
        now = time.perf_counter_ns()
        reqs = []
        while len(self.ops) < o.pipeline:
            if o.requests is not None and self.done_reqs + len(self.ops) >= o.requests:
                break
            pos = self.ratio_pos % cycle
            self.ratio_pos += 1
            if pos < s:
                key = b"%s%d" % (w.prefix, self.keys.next(o.pattern[0]))
                reqs.append(encode_argv([b"SET", key, w.value]))
                self.ops.append((0, now))
            else:
                key = b"%s%d" % (w.prefix, self.keys.next(o.pattern[1]))
                reqs.append(encode_argv([b"GET", key]))
                self.ops.append((1, now))
        if reqs:
            self.t.write(b"".join(reqs))
        elif not self.ops:
            w.client_done()

    def data_received(self, data):
        r = self.reader
        r.feed(data)
        w = self.w
        now = time.perf_counter_ns()
        got = False
        while True:
            x = r.gets()
            if x is False:
                break
            if self.prefix_wait is not None:
                if isinstance(x, hiredis.ReplyError):
                    self.prefix_wait.set_exception(RuntimeError("AUTH failed: %s" % x))
                else:
                    self.prefix_wait.set_result(None)
                self.prefix_wait = None
                continue
            if isinstance(x, hiredis.ReplyError):
                w.fail("Error from server: %s" % x)
                return
            op, t0 = self.ops.pop(0)
            lat = (now - t0) // 1000
            st = w.stats[op]
            st[0] += 1
            st[3][lat] = st[3].get(lat, 0) + 1
            if op == 1:
                if x is None:
                    st[2] += 1
                else:
                    st[1] += 1
            self.done_reqs += 1
            got = True
        if got:
            self.fill()


class MWorker:
    def __init__(self, o, idx, seed):
        self.o = o
        self.idx = idx
        self.rng = random.Random(seed)
        self.prefix = o.key_prefix.encode()
        self.value = (b"x" * o.data_size)
        # op -> [ops, hits, misses, {lat_us: count}, bytes]
        self.stats = [[0, 0, 0, {}, 0], [0, 0, 0, {}, 0]]
        self.stopping = False
        self.live = 0
        self.error = None
        self.done = None

    def fail(self, msg):
        if self.error is None:
            self.error = msg
        if not self.done.done():
            self.done.set_result(None)

    def client_done(self):
        self.live -= 1
        if self.live <= 0 and not self.done.done():
            self.done.set_result(None)


def _worker(o, idx, seed, shared, conn):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    loop = new_loop()
    asyncio.set_event_loop(loop)
    w = MWorker(o, idx, seed)
    w.done = loop.create_future()
    clients = []

    async def setup():
        for ci in range(o.clients):
            if o.unix:
                _t, c = await loop.create_unix_connection(lambda: MClient(w, ci), o.unix)
            else:
                _t, c = await loop.create_connection(lambda: MClient(w, ci), o.host, o.port)
            c.keys = KeyGen(o, random.Random(w.rng.getrandbits(64)), idx, ci, o.threads * o.clients)
            if o.auth:
                c.prefix_wait = loop.create_future()
                c.t.write(encode_argv(["AUTH", o.auth]))
                await c.prefix_wait
            clients.append(c)
    try:
        loop.run_until_complete(setup())
    except Exception as e:   # noqa: BLE001
        conn.send(("error", "Connection error: %s" % e))
        return
    t_start = time.monotonic()
    w.live = len(clients)
    for c in clients:
        c.fill()

    def publish():
        shared[idx * 2] = w.stats[0][0] + w.stats[1][0]
        if not w.done.done():
            loop.call_later(0.1, publish)

    def stop():
        # Clients finish their in-flight requests, then stop (fill() sees it).
        w.stopping = True
    loop.call_later(0.1, publish)
    if o.test_time is not None:
        loop.call_later(o.test_time, stop)
    loop.run_until_complete(w.done)
    elapsed = time.monotonic() - t_start
    shared[idx * 2] = w.stats[0][0] + w.stats[1][0]
    if w.error:
        conn.send(("error", w.error))
    else:
        conn.send(("ok", elapsed, [[s[0], s[1], s[2], s[3]] for s in w.stats]))
    for c in clients:
        c.t.close()


def write_png(path, hists, width=640, height=400):
    """A latency-by-percentile plot (x: 1/(1-percentile) on a log scale up to
    99.999%, y: latency, linear) without any plotting library."""
    img = [[(255, 255, 255)] * width for _ in range(height)]
    colors = [(31, 119, 180), (214, 39, 40), (44, 160, 44)]
    ml, mb, mr, mt = 40, 30, 10, 10
    pw, ph = width - ml - mr, height - mb - mt
    maxv = max((h.max() for h in hists.values() if h.total), default=1) or 1
    maxx = math.log10(100000)

    def put(x, y, c):
        if 0 <= x < width and 0 <= y < height:
            img[y][x] = c
    # axes and grid
    for x in range(ml, ml + pw):
        put(x, mt + ph, (0, 0, 0))
    for y in range(mt, mt + ph + 1):
        put(ml, y, (0, 0, 0))
    for dec in range(0, 6):
        gx = ml + int(dec / maxx * (pw - 1))
        for y in range(mt, mt + ph, 3):
            put(gx, y, (200, 200, 200))
    for q in range(1, 5):
        gy = mt + ph - int(q / 4 * ph)
        for x in range(ml, ml + pw, 3):
            put(x, gy, (200, 200, 200))
    for ci, (name, h) in enumerate(sorted(hists.items())):
        if not h.total:
            continue
        col = colors[ci % len(colors)]
        prev = None
        for p, v, _cum in h.iter_percentiles(5):
            frac = min(p / 100.0, 0.99999)
            xv = math.log10(1 / (1 - frac))
            x = ml + int(xv / maxx * (pw - 1))
            y = mt + ph - int(v / maxv * (ph - 1))
            if prev is not None:
                x0, y0 = prev
                steps = max(abs(x - x0), abs(y - y0), 1)
                for s in range(steps + 1):
                    xi = x0 + (x - x0) * s // steps
                    yi = y0 + (y - y0) * s // steps
                    put(xi, yi, col)
                    put(xi, yi + 1, col)
            prev = (x, y)
        # legend square
        for dy in range(8):
            for dx in range(8):
                put(ml + 10 + dx + ci * 14, mt + 5 + dy, col)
    raw = b"".join(b"\x00" + bytes(c for px in row for c in px) for row in img)

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xffffffff)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


def main(argv):
    o = parse(argv)
    ctx = mp.get_context("fork")
    shared = ctx.Array("q", 2 * o.threads, lock=False)
    seed_rng = random.Random(o.seed)
    print("Writing results to stdout")
    print("[RUN #1] Preparing benchmark client...")
    print("[RUN #1] Launching threads now...")
    sys.stdout.flush()
    procs, pipes = [], []
    t0 = time.monotonic()
    for i in range(o.threads):
        a, b = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_worker, args=(o, i, seed_rng.getrandbits(64), shared, b), daemon=True)
        p.start()
        b.close()
        procs.append(p)
        pipes.append(a)
    results = [None] * o.threads
    last = 0
    while any(r is None for r in results):
        for i, a in enumerate(pipes):
            if results[i] is None and a.poll(0.05):
                results[i] = a.recv()
                if results[i][0] == "error":
                    for p in procs:
                        p.terminate()
                    sys.stderr.write(results[i][1] + "\n")
                    return 1
            elif results[i] is None and not procs[i].is_alive() and not a.poll(0):
                sys.stderr.write("worker %d died\n" % i)
                return 1
        now = time.monotonic()
        if now - last >= 1.0:
            ops = sum(shared[2 * i] for i in range(o.threads))
            el = now - t0
            sys.stdout.write("\r[RUN #1 %.0f%%, %3d secs] %2d threads: %11d ops, %7.0f (avg: %7.0f) ops/sec"
                             % (min(100.0, 100 * el / o.test_time) if o.test_time else 0, el, o.threads, ops,
                                ops / el if el else 0, ops / el if el else 0))
            sys.stdout.flush()
            last = now
    for p in procs:
        p.join(5)
    elapsed = max(r[1] for r in results)
    names = ["Sets", "Gets"]
    hists = {}
    totals = []
    full = Histogram(1, 60_000_000, 3)
    for op in (0, 1):
        h = Histogram(1, 60_000_000, 3)
        ops = hits = misses = 0
        for r in results:
            st = r[2][op]
            ops += st[0]
            hits += st[1]
            misses += st[2]
            h.record_dict(st[3])
            full.record_dict(st[3])
        hists[names[op]] = h
        totals.append((ops, hits, misses))
    sys.stdout.write("\n\n")
    w = sys.stdout.write
    w("%-6s %d Threads\n" % ("", o.threads))
    w("%-6s %d Connections per thread\n" % ("", o.clients))
    if o.test_time:
        w("%-6s %d Seconds\n" % ("", o.test_time))
    else:
        w("%-6s %d Requests per client\n" % ("", o.requests))
    w("\n\nALL STATS\n")
    w("=" * 102 + "\n")
    w("%-6s %12s %12s %12s %16s %16s %16s %16s\n" % ("Type", "Ops/sec", "Hits/sec", "Misses/sec",
                                                    "Avg. Latency", "p50 Latency", "p99 Latency",
                                                    "p99.9 Latency"))
    w("-" * 102 + "\n")
    tot_ops = 0
    for op in (0, 1):
        ops, hits, misses = totals[op]
        h = hists[names[op]]
        tot_ops += ops
        if op == 0:
            hs, ms = "---", "---"
        else:
            hs, ms = "%.2f" % (hits / elapsed), "%.2f" % (misses / elapsed)
        w("%-6s %12.2f %12s %12s %16.5f %16.5f %16.5f %16.5f\n"
          % (names[op], ops / elapsed, hs, ms, h.mean() / 1000, h.value_at_percentile(50) / 1000,
             h.value_at_percentile(99) / 1000, h.value_at_percentile(99.9) / 1000))
    w("%-6s %12.2f %12s %12s %16s %16s %16s %16s\n" % ("Waits", 0.0, "---", "---", "---", "---", "---", "---"))
    ghits, gmiss = totals[1][1], totals[1][2]
    w("%-6s %12.2f %12.2f %12.2f %16.5f %16.5f %16.5f %16.5f\n"
      % ("Totals", tot_ops / elapsed, ghits / elapsed, gmiss / elapsed, full.mean() / 1000,
         full.value_at_percentile(50) / 1000, full.value_at_percentile(99) / 1000,
         full.value_at_percentile(99.9) / 1000))
    if not o.hide_histogram:
        w("\n\nRequest Latency Distribution\n")
        w("%-6s %12s %12s\n" % ("Type", "<= msec", "Percent"))
        w("-" * 40 + "\n")
        for op in (0, 1):
            h = hists[names[op]]
            prev = -1
            for p, v, cum in h.iter_percentiles(1):
                if cum != prev or p == 100.0:
                    w("%-6s %12.3f %12.3f\n" % (names[op].upper()[:-1], v / 1000, p))
                prev = cum
            w("---\n")
    sys.stdout.flush()
    if o.hdr_prefix:
        for name, h in (("FULL_RUN_1", full), ("SET_command_run_1", hists["Sets"]),
                        ("GET_command_run_1", hists["Gets"])):
            with open("%s_%s.txt" % (o.hdr_prefix, name), "w") as f:
                f.write(h.percentile_distribution_text(1000.0, 5, 3))
    if o.png:
        write_png(o.png, {"GET": hists["Gets"], "SET": hists["Sets"]})
    return 0
