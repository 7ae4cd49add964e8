#!/usr/bin/env python3
"""Side-by-side benchmark: Debian's redis-server vs ophidis-server, same
settings (persistence off), same redis-benchmark runs, in one session.

Prints requests/second and the ratio ophidis/redis per test, and writes the
table as JSON to bench/results/<timestamp>.json.  Run with `make bench`.

  python bench/run.py                  # everything
  python bench/run.py --quick          # fewer requests (smoke run)
  python bench/run.py --suites default,pipeline
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TESTS = ("ping_inline,ping_mbulk,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,"
                 "lrange_100,lrange_300,lrange_500,lrange_600,mset")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("no server on %d" % port)


def rss_of(pid) -> int:
    with open("/proc/%d/statm" % pid) as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Server:
    def __init__(self, kind, extra=()):
        self.kind = kind
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="bench-%s-" % kind)
        common = ["--port", str(self.port), "--save", "", "--appendonly", "no", "--dir", self.dir,
                  "--bind", "127.0.0.1"] + list(extra)
        if kind == "redis":
            cmd = [shutil.which("redis-server")] + common
        else:
            cmd = [sys.executable, "-m", "ophidis"] + common
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.join(ROOT, "src")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        wait_port(self.port)

    def cli(self, *args):
        return subprocess.run(["redis-cli", "-p", str(self.port)] + list(args), capture_output=True, text=True).stdout

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def redis_benchmark(port, args):
    cmd = ["redis-benchmark", "-p", str(port), "--csv"] + args
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800).stdout
    res = {}
    for row in csv.reader(io.StringIO(out)):
        if not row or row[0] == "test":
            continue
        try:
            res[row[0]] = float(row[1])
        except (ValueError, IndexError):
            pass
    return res


SUITES = {
    "default": ["-n", "100000", "-c", "50", "-t", DEFAULT_TESTS],
    "pipeline": ["-n", "400000", "-c", "50", "-P", "16", "-t", DEFAULT_TESTS],
    "bigvalues": ["-n", "100000", "-c", "50", "-d", "1024", "-t", "set,get"],
    "manyclients": ["-n", "100000", "-c", "1000", "-t", "set,get"],
    # SET at the memory limit: every write evicts (allkeys-lru); a first
    # run fills the 20mb before the measured one.
    "evict": ["-n", "200000", "-c", "50", "-P", "16", "-r", "1000000", "-d", "100", "-t", "set"],
}
# server arguments per suite (both servers)
SUITE_SERVER_ARGS = {
    "evict": ["--maxmemory", "20mb", "--maxmemory-policy", "allkeys-lru"],
}
# redis-benchmark runs before the measured one (not reported)
SUITE_WARMUP = {
    "evict": ["-n", "300000", "-P", "16", "-r", "1000000", "-d", "100", "-t", "set", "-q"],
}


def scale(args, factor):
    out = list(args)
    if "-n" in out:
        i = out.index("-n") + 1
        out[i] = str(max(1000, int(int(out[i]) * factor)))
    return out


def memory_ratio(quick):
    n = 100000 if quick else 1000000
    res = {}
    for kind in ("redis", "ophidis"):
        s = Server(kind)
        try:
            time.sleep(0.5)
            before = rss_of(s.proc.pid)
            subprocess.run(["redis-benchmark", "-p", str(s.port), "-t", "set", "-r", str(n), "-n", str(n),
                            "-P", "32", "-q"], capture_output=True, timeout=1800)
            time.sleep(0.5)
            after = rss_of(s.proc.pid)
            keys = int(s.cli("dbsize").strip() or 0)
            res[kind] = {"rss_growth": after - before, "keys": keys}
        finally:
            s.stop()
    res["ratio"] = res["ophidis"]["rss_growth"] / max(1, res["redis"]["rss_growth"])
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--suites", default="default,pipeline,bigvalues,manyclients,evict,memory")
    ap.add_argument("--rounds", type=int, default=1, help="alternate servers this many times, keep the best")
    a = ap.parse_args()
    factor = 0.2 if a.quick else 1.0
    results = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "suites": {}}
    suites = a.suites.split(",")
    for suite in suites:
        if suite == "memory":
            continue
        args = scale(SUITES[suite], factor)
        best = {"redis": {}, "ophidis": {}}
        for _ in range(a.rounds):
            for kind in ("redis", "ophidis"):
                s = Server(kind, SUITE_SERVER_ARGS.get(suite, ()))
                try:
                    if suite in SUITE_WARMUP:
                        redis_benchmark(s.port, SUITE_WARMUP[suite])
                    r = redis_benchmark(s.port, args)
                    if suite == "evict":
                        print("%s: %s" % (kind, " ".join(
                            x for x in s.cli("info", "memory").split() if x.startswith("used_memory:"))
                            + " " + " ".join(x for x in s.cli("info", "stats").split()
                                             if x.startswith("evicted_keys"))))
                finally:
                    s.stop()
                for k, v in r.items():
                    best[kind][k] = max(v, best[kind].get(k, 0))
        table = []
        print("\n== %s: redis-benchmark %s" % (suite, " ".join(args)))
        print("%-28s %14s %14s %7s" % ("test", "redis rps", "ophidis rps", "ratio"))
        for test, rv in best["redis"].items():
            ov = best["ophidis"].get(test, 0.0)
            ratio = ov / rv if rv else 0.0
            table.append({"test": test, "redis": rv, "ophidis": ov, "ratio": round(ratio, 3)})
            print("%-28s %14.0f %14.0f %7.2f" % (test, rv, ov, ratio))
        results["suites"][suite] = {"args": args, "rows": table}
    if "memory" in suites:
        m = memory_ratio(a.quick)
        results["memory"] = m
        print("\n== memory: 1M keys via redis-benchmark -t set -r N -n N -P 32 (RSS growth)")
        print("redis %d MB, ophidis %d MB, ratio %.2f" % (m["redis"]["rss_growth"] >> 20,
                                                       m["ophidis"]["rss_growth"] >> 20, m["ratio"]))
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    path = os.path.join(ROOT, "bench", "results", time.strftime("%Y%m%d-%H%M%S") + ".json")
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    print("\nwritten %s" % os.path.relpath(path, ROOT))


if __name__ == "__main__":
    main()
