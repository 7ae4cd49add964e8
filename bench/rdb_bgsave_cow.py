"""Measure SAVE / BGSAVE / load of N keys on Ophidis (or redis-server).

    python bench/rdb_bgsave_cow.py [N] [--mixed] [--redis]

N string keys, or with --mixed N keys of which 60% strings (DEBUG POPULATE)
and 10% each small hashes, sets, sorted sets and lists (5 fields/members).
--redis runs the same against Debian's redis-server.  Reports the SAVE time, BGSAVE duration, the peak copy-on-write of the
BGSAVE child (Private_Dirty sampled from /proc every 200 ms, i.e. the extra
RSS the fork costs), the parent's RSS, and the start-up load time.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from conftest import free_port, wait_port  # noqa: E402


def rollup(pid, field):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return 0


REDIS = "--redis" in sys.argv


def start(d):
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    log = open(os.path.join(d, "log.txt"), "a")
    cmd = ["redis-server"] if REDIS else [sys.executable, "-m", "ophidis"]
    p = subprocess.Popen(cmd + ["--port", str(port), "--dir", d, "--save", "", "--enable-debug-command", "yes"],
                         cwd=d, stdout=log, stderr=subprocess.STDOUT, env=env)
    wait_port(port, p, timeout=300)
    return p, redis.Redis(port=port, socket_timeout=600)


def populate_mixed(c, n):
    c.execute_command("DEBUG", "POPULATE", n * 6 // 10, "key")
    pipe = c.pipeline(transaction=False)
    m = n // 10
    for i in range(m):
        f = [b"f%d:%d" % (j, i) for j in range(5)]
        pipe.hset(b"hash:%d" % i, mapping={x: b"value:%d" % i for x in f})
        pipe.sadd(b"set:%d" % i, *f)
        pipe.zadd(b"zset:%d" % i, {x: i + j * 0.5 for j, x in enumerate(f)})
        pipe.rpush(b"list:%d" % i, *f)
        if i % 2000 == 1999:
            pipe.execute()
    pipe.execute()


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 1_000_000
    d = tempfile.mkdtemp(prefix="rdb-bench-")
    p, c = start(d)
    if "--mixed" in sys.argv:
        populate_mixed(c, n)
    else:
        pipe = c.pipeline(transaction=False)
        for i in range(n):
            pipe.set(b"key:%d" % i, b"value:%d" % i)
            if i % 10000 == 9999:
                pipe.execute()
        pipe.execute()
    rss = rollup(p.pid, "Rss")
    print("keys: %d, parent RSS %.1f MB" % (c.dbsize(), rss / 2**20))
    t = time.time()
    c.save()
    print("SAVE: %.2f s, file %.1f MB" % (time.time() - t, os.path.getsize(os.path.join(d, "dump.rdb")) / 2**20))
    t = time.time()
    c.bgsave()
    logf = os.path.join(d, "log.txt")
    child = None
    while child is None:
        m = re.search(r"Background saving started by pid (\d+)", open(logf).read())
        time.sleep(0.01)
        if m:
            child = int(m.group(1))
    peak = 0
    lat = []
    while c.info("persistence")["rdb_bgsave_in_progress"]:
        v = rollup(child, "Private_Dirty")
        if v:
            peak = max(peak, v)
        t0 = time.perf_counter()
        c.ping()
        lat.append(time.perf_counter() - t0)
        time.sleep(0.2)
    print("BGSAVE: %.2f s, child peak Private_Dirty (extra RSS) %.1f MB (%.0f%% of parent RSS), "
          "rdb_last_cow_size %.1f MB, max PING latency during BGSAVE %.1f ms" % (
              time.time() - t, peak / 2**20, 100.0 * peak / rss, c.info("persistence")["rdb_last_cow_size"] / 2**20,
              max(lat) * 1000 if lat else 0))
    c.shutdown(nosave=True)
    p.wait()
    p, c = start(d)
    out = open(logf).read()
    m = re.findall(r"DB loaded from disk: ([\d.]+) seconds", out)
    print("load at start-up: %s s, keys %d" % (m[-1], c.dbsize()))
    print(re.findall(r"Fork CoW for RDB: .*", out)[-1])
    t = time.time()
    c.execute_command("DEBUG", "RELOAD")
    print("DEBUG RELOAD (save + load): %.2f s" % (time.time() - t))
    c.shutdown(nosave=True)
    p.wait()


if __name__ == "__main__":
    main()
