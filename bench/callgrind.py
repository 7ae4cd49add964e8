"""Instructions per request of the server process, counted by callgrind
(user-space instructions: the machine's other jobs do not change them, as
they change redis-benchmark's rates).

    python bench/callgrind.py [--src DIR] [--test set | --script | --function] [-n 20000] [--setup MODE]
    python bench/callgrind.py --scrape          # one /metrics scrape
    python bench/callgrind.py --subscribers 50 -P 1   # PUBLISH fan-out
    python bench/callgrind.py --vs-redis [--tests set,zadd] [-P 16] [-n 10000]

With ``--vs-redis`` one Ophidis process and one redis-server process run
under callgrind and the same workload goes to each, test by test: the
table of instructions per request and the ratio (issue 34's figure).  Both
servers' crons are paused (DEBUG PAUSE-CRON) during the counted requests:
a cron's cost is per second, and callgrind stretches the seconds.

The server runs under ``valgrind --tool=callgrind``; after a warm-up of
5,000 requests the counters are zeroed (``callgrind_control -z``),
``redis-benchmark -c 1 -P 16 -r 1000 -t TEST -n N`` runs (-P as given), the counters are
dumped and the total is divided by N.  MODE: ``default`` (the default
user), ``user`` (a user ``on >pw +@all ~key*``), ``replica`` (a
redis-server replica attached), ``aof`` (appendonly yes).
Needs valgrind, redis-benchmark, redis-cli (and redis-server for replica).
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


SCRIPT = "redis.call('set', KEYS[1], ARGV[1]); return redis.call('get', KEYS[1])"
FUNCTION = ("#!lua name=cgbench\nredis.register_function('setget', function(keys, args) "
            "redis.call('set', keys[1], args[1]); return redis.call('get', keys[1]) end)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(pred, what, timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.5)
    raise SystemExit("timed out waiting for " + what)


def _up(port) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 1).close()
        return True
    except OSError:
        return False


def _total(out) -> int:
    files = sorted(glob.glob(out + ".*"), key=os.path.getmtime)
    data = open(files[-1]).read()
    m = re.search(r"^summary: (\d+)", data, re.M) or re.search(r"^totals: (\d+)", data, re.M)
    return int(m.group(1))


# --vs-redis: the tests of issue 34's table.  (name, the filling run, the
# measured command).  A pop test first fills its key with distinct members
# (-r 1000000) so that every measured request pops something.
VS_TESTS = {
    "set": (None, ["-t", "set"]),
    "get": (["-t", "set"], ["-t", "get"]),
    "incr": (None, ["-t", "incr"]),
    "lpush": (None, ["-t", "lpush"]),
    "rpop": (["-t", "lpush"], ["-t", "rpop"]),
    "sadd": (None, ["-t", "sadd"]),
    "hset": (None, ["-t", "hset"]),
    "zadd": (None, ["-t", "zadd"]),
    "zpopmin": (["-t", "zadd"], ["-t", "zpopmin"]),
    "mset": (None, ["-t", "mset"]),
    "lrange_100": (["-t", "lrange_100"], ["LRANGE", "mylist", "0", "99"]),
    "lrange_600": (["-t", "lrange_600"], ["LRANGE", "mylist", "0", "599"]),
    "spop": (["-t", "sadd"], ["-t", "spop"]),
    "evalsha": ("script", None),
    "fcall": ("function", None),
}


class Counted:
    """One server process under callgrind; count() runs a workload and
    returns the instructions the server spent on it."""

    def __init__(self, argv, work, name, env=None):
        self.port = _free_port()
        self.out = os.path.join(work, name + ".callgrind.out")
        self.p = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + self.out]
                                  + argv + ["--port", str(self.port), "--save", "", "--dir", work,
                                            "--enable-debug-command", "yes"],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait(lambda: _up(self.port), name)

    def cli(self, *args) -> str:
        return subprocess.run(["redis-cli", "-p", str(self.port)] + list(args), check=True,
                              capture_output=True, text=True).stdout.strip()

    def bench(self, pipeline, n, what, keyspace=1000):
        run = subprocess.run(["redis-benchmark", "-p", str(self.port), "-P", str(pipeline), "-c", "1",
                              "-r", str(keyspace), "-q", "-n", str(n)] + what, capture_output=True, text=True)
        if run.returncode:
            raise SystemExit("redis-benchmark %s: %s%s" % (" ".join(what), run.stdout[-500:], run.stderr[-500:]))

    def count(self, pipeline, n, what) -> int:
        # The cron runs per second of wall time, and a request under
        # callgrind takes ~50 times its real time: paused (on both servers)
        # while the counted requests run, so the figure is the requests' own.
        self.cli("DEBUG", "PAUSE-CRON", "1")
        subprocess.run(["callgrind_control", "-z", str(self.p.pid)], capture_output=True)
        self.bench(pipeline, n, what)
        self.cli("DEBUG", "PAUSE-CRON", "0")
        before = set(glob.glob(self.out + ".*"))
        subprocess.run(["callgrind_control", "-d", str(self.p.pid)], capture_output=True)
        _wait(lambda: set(glob.glob(self.out + ".*")) - before, "the callgrind dump", 120)
        time.sleep(0.5)     # the dump file is complete once its totals line is written
        return _total(self.out)

    def stop(self):
        self.p.kill()
        self.p.wait()


def _vs_redis(a):
    tests = [t.strip() for t in a.tests.split(",") if t.strip()]
    for t in tests:
        if t not in VS_TESTS:
            raise SystemExit("unknown test %r (one of %s)" % (t, ", ".join(VS_TESTS)))
    work = tempfile.mkdtemp(prefix="ophidis-cg-")
    env = dict(os.environ, PYTHONPATH=a.src, PYTHONHASHSEED=os.environ.get("PYTHONHASHSEED", "0"))
    hz = ["--hz", str(a.hz or 1)]
    servers = {}
    try:
        servers["ophidis"] = Counted([sys.executable, "-m", "ophidis"] + hz, work, "ophidis", env)
        servers["redis"] = Counted([a.redis_server] + hz, work, "redis")
        rows = []
        for t in tests:
            fill, what = VS_TESTS[t]
            per = {}
            for name, s in servers.items():
                s.cli("FLUSHALL")
                s.cli("FUNCTION", "FLUSH")
                if fill == "script":
                    sha = s.cli("SCRIPT", "LOAD", SCRIPT)
                    what_here = ["EVALSHA", sha, "1", "key:__rand_int__", "v"]
                elif fill == "function":
                    s.cli("FUNCTION", "LOAD", FUNCTION)
                    what_here = ["FCALL", "setget", "1", "key:__rand_int__", "v"]
                else:
                    what_here = what
                    if fill:
                        # enough distinct members for the warm-up and the measured pops
                        s.bench(16, 2 * (a.n + 5000), fill, keyspace=1000000)
                s.bench(a.pipeline, 5000, what_here)
                per[name] = s.count(a.pipeline, a.n, what_here) / a.n
            ratio = per["ophidis"] / per["redis"]
            rows.append((t, per["ophidis"], per["redis"], ratio))
            print("%-11s -P %-2d ophidis %8.0f  redis %8.0f  ratio %.2f" % (t, a.pipeline, *rows[-1][1:]),
                  flush=True)
        print()
        print("| test (-P %d) | Ophidis | redis-server | ratio |" % a.pipeline)
        print("|---|---:|---:|---:|")
        for t, o, r, q in rows:
            print("| %s | %s | %s | %.2f |" % (t.upper(), format(round(o), ","), format(round(r), ","), q))
    finally:
        for s in servers.values():
            s.stop()
        shutil.rmtree(work, ignore_errors=True)


def subscribe(port, n):
    """n subscribers of channel 'chan' on port, drained by a thread."""
    subs = []
    for _ in range(n):
        sk = socket.create_connection(("127.0.0.1", port))
        sk.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\nchan\r\n")
        subs.append(sk)

    def drain():
        sel = selectors.DefaultSelector()
        for sk in subs:
            sel.register(sk, selectors.EVENT_READ)
        while True:
            for key, _ in sel.select():
                try:
                    if not key.fileobj.recv(1 << 16):
                        return
                except OSError:
                    return
    threading.Thread(target=drain, daemon=True).start()
    return subs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default=os.path.join(ROOT, "src"), help="the ophidis source tree to run")
    ap.add_argument("--test", default="set", help="redis-benchmark -t")
    ap.add_argument("-n", type=int, default=20000)
    ap.add_argument("-P", type=int, default=16, dest="pipeline", help="redis-benchmark -P (1: no pipelining)")
    ap.add_argument("--setup", default="default", choices=("default", "user", "replica", "aof"))
    ap.add_argument("--hz", type=int, default=0, help="the server's hz (0: its default, 10); the cron's "
                    "share of a request grows with the run's wall time, so with the machine's load: "
                    "--hz 1 keeps it small when two trees are compared")
    ap.add_argument("--scrape", action="store_true", help="count one /metrics scrape instead")
    ap.add_argument("--annotate", type=int, default=0, metavar="N",
                    help="also print the N functions with the most instructions (callgrind_annotate)")
    ap.add_argument("--script", action="store_true",
                    help="EVALSHA of a two-call script (SET then GET through redis.call) instead of --test")
    ap.add_argument("--save", metavar="FILE", help="also keep the callgrind profile as FILE (callgrind_annotate)")
    ap.add_argument("--subscribers", type=int, default=0, metavar="N",
                    help="PUBLISH to N subscribers of its channel instead of --test")
    ap.add_argument("--function", action="store_true",
                    help="FCALL of the same two calls as a function instead of --test")
    ap.add_argument("--vs-redis", action="store_true",
                    help="the same workloads against redis-server under callgrind too: a table of "
                    "instructions per request and the ratio (hz 1 on both unless --hz)")
    ap.add_argument("--tests", default=",".join(VS_TESTS), help="with --vs-redis: which tests (%(default)s)")
    ap.add_argument("--redis-server", default="redis-server", help="with --vs-redis: the reference binary")
    a = ap.parse_args(argv)
    if a.vs_redis:
        return _vs_redis(a)
    work = tempfile.mkdtemp(prefix="ophidis-cg-")
    port, other = _free_port(), _free_port()
    out = os.path.join(work, "callgrind.out")
    args = ["--port", str(port), "--save", "", "--dir", work]
    if a.hz:
        args += ["--hz", str(a.hz)]
    if a.scrape:
        args += ["--metrics-port", str(other)]
    # a fixed hash seed: the dicts' layouts (and so their probe counts) are the same each run
    env = dict(os.environ, PYTHONPATH=a.src, PYTHONHASHSEED=os.environ.get("PYTHONHASHSEED", "0"))
    p = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, sys.executable,
                          "-m", "ophidis"] + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rep = None
    try:
        _wait(lambda: _up(port), "the server")
        cli = ["redis-cli", "-p", str(port)]
        auth = []
        if a.setup == "replica":
            rep = subprocess.Popen(["redis-server", "--port", str(other), "--save", "", "--dir", work,
                                    "--replicaof", "127.0.0.1", str(port)], stdout=subprocess.DEVNULL)
            _wait(lambda: "master_link_status:up" in subprocess.run(
                ["redis-cli", "-p", str(other), "INFO", "replication"], capture_output=True, text=True).stdout,
                "the replica")
        elif a.setup == "aof":
            subprocess.run(cli + ["CONFIG", "SET", "appendonly", "yes"], check=True, capture_output=True)
            _wait(lambda: "aof_rewrite_in_progress:0" in subprocess.run(
                cli + ["INFO", "persistence"], capture_output=True, text=True).stdout
                and "aof_enabled:1" in subprocess.run(cli + ["INFO", "persistence"], capture_output=True,
                                                      text=True).stdout, "the AOF rewrite")
        elif a.setup == "user":
            subprocess.run(cli + ["ACL", "SETUSER", "u", "on", ">pw", "+@all", "~key*"], check=True,
                           capture_output=True)
            auth = ["--user", "u", "-a", "pw"]
        if a.scrape:
            subprocess.run(["redis-benchmark", "-p", str(port), "-P", "16", "-t", "set,get,lpush,hset,incr",
                            "-n", "5000", "-r", "1000", "-q"], capture_output=True)
            url = "http://127.0.0.1:%d/metrics" % other
            urllib.request.urlopen(url, timeout=300).read()
            subprocess.run(["callgrind_control", "-z", str(p.pid)], capture_output=True)
            body = urllib.request.urlopen(url, timeout=300).read()
            subprocess.run(["callgrind_control", "-d", str(p.pid)], capture_output=True)
            time.sleep(1)
            print("scrape: %d instructions, %d bytes, %d lines" % (_total(out), len(body), body.count(b"\n")))
            return
        bench = ["redis-benchmark", "-p", str(port), "-P", str(a.pipeline), "-c", "1", "-r", "1000", "-q"] + auth
        # The command (a script call) comes last: redis-benchmark takes every
        # word after its first non-option as the command, so -n goes before.
        if a.script:
            sha = subprocess.run(cli + ["SCRIPT", "LOAD", SCRIPT], check=True, capture_output=True,
                                 text=True).stdout.strip()
            what = ["EVALSHA", sha, "1", "key:__rand_int__", "v"]
            a.test = "evalsha"
        elif a.function:
            subprocess.run(cli + ["FUNCTION", "LOAD", FUNCTION], check=True, capture_output=True)
            what = ["FCALL", "setget", "1", "key:__rand_int__", "v"]
            a.test = "fcall"
        elif a.subscribers:
            # PUBLISH fan-out: the subscribers are raw sockets, drained by a thread
            subs = subscribe(port, a.subscribers)  # noqa: F841 - kept open while measured
            what = ["PUBLISH", "chan", "hello"]
            a.test = "publish to %d subscribers" % a.subscribers
        else:
            what = ["-t", a.test]
        subprocess.run(bench + ["-n", "5000"] + what, capture_output=True)
        subprocess.run(["callgrind_control", "-z", str(p.pid)], capture_output=True)
        subprocess.run(bench + ["-n", str(a.n)] + what, capture_output=True)
        subprocess.run(["callgrind_control", "-d", str(p.pid)], capture_output=True)
        time.sleep(1)
        print("%s %s -P %d: %d instructions a request" % (a.setup, a.test, a.pipeline, _total(out) // a.n))
        if a.save:
            shutil.copy(sorted(glob.glob(out + ".*"), key=os.path.getmtime)[-1], a.save)
        if a.annotate:
            files = sorted(glob.glob(out + ".*"), key=os.path.getmtime)
            r = subprocess.run(["callgrind_annotate", files[-1]], capture_output=True, text=True)
            lines = [x for x in r.stdout.splitlines() if re.match(r"^\s*[\d,]+ \(", x)]
            print("\n".join(lines[:a.annotate]))
    finally:
        p.kill()
        p.wait()
        if rep is not None:
            rep.kill()
            rep.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
