"""ophidis-benchmark against Debian's redis-server and Ophidis, compared with
redis-benchmark's own output where the output is deterministic."""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
import sys

import pytest

from ophidis.tools.benchmark import gen_data
from ophidis.tools.hdr import Histogram
from support.servers import free_port, server_env

REDIS_BENCHMARK = shutil.which("redis-benchmark")

DEFAULT_TITLES = [
    "PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "RPUSH", "LPOP", "RPOP", "SADD", "HSET",
    "SPOP", "ZADD", "ZPOPMIN", "LPUSH (needed to benchmark LRANGE)", "LRANGE_100 (first 100 elements)",
    "LRANGE_300 (first 300 elements)", "LRANGE_500 (first 500 elements)",
    "LRANGE_600 (first 600 elements)", "MSET (10 keys)",
]
QUIET_LINE = re.compile(r"^(.+): (\d+\.\d\d) requests per second, p50=(\d+\.\d\d\d) msec$")


def env():
    return server_env()


def bench(port, *args, timeout=60, cwd=None):
    return subprocess.run([sys.executable, "-m", "ophidis.tools.benchmark", "-p", str(port)] + list(args),
                          capture_output=True, env=env(), timeout=timeout, cwd=cwd)


def redis_bench(port, *args, timeout=60):
    if REDIS_BENCHMARK is None:
        pytest.skip("redis-benchmark is not installed")
    return subprocess.run([REDIS_BENCHMARK, "-p", str(port)] + list(args), capture_output=True,
                          timeout=timeout)


def quiet_results(stdout: bytes):
    """Final lines of -q output (progress lines end with \\r and are overwritten)."""
    res = []
    for line in stdout.decode().split("\n"):
        line = line.split("\r")[-1].strip()
        m = QUIET_LINE.match(line)
        if m:
            res.append((m.group(1), float(m.group(2)), float(m.group(3))))
    return res


def test_default_suite_against_redis(redis_server, ref):
    res = bench(redis_server.port, "-q", "-n", "300", "-c", "5")
    assert res.returncode == 0, res.stderr
    assert res.stderr == b""
    got = quiet_results(res.stdout)
    assert [t for t, _, _ in got] == DEFAULT_TITLES
    assert all(rps > 0 for _, rps, _ in got)
    # The data-type tests really ran (no -r: one key each), with redis-benchmark's payload.
    assert ref.get("key:__rand_int__") == gen_data(3)
    assert ref.llen("mylist") == 300          # LPUSH+RPUSH-LPOP-RPOP, then 300 more LPUSH
    assert ref.hlen("myhash") == 1 and ref.exists("myzset") == 0
    theirs = quiet_results(redis_bench(redis_server.port, "-q", "-n", "300", "-c", "5").stdout)
    assert [t for t, _, _ in theirs] == [t for t, _, _ in got]



def test_supported_tests_against_ophidis(server, r):
    res = bench(server.port, "-q", "-n", "400", "-c", "4", "-t", "ping,set,get,incr,mset")
    assert res.returncode == 0, res.stderr
    got = quiet_results(res.stdout)
    assert [t for t, _, _ in got] == ["PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "MSET (10 keys)"]
    assert int(r.get("counter:__rand_int__")) == 400
    assert r.get("key:__rand_int__") == b"VXK"      # redis-benchmark's payload generator


def test_payload_like_redis_benchmark(redis_server, ref):
    redis_bench(redis_server.port, "-q", "-n", "10", "-c", "1", "-t", "set", "-d", "20")
    theirs = ref.get("key:__rand_int__")
    ref.flushall()
    bench(redis_server.port, "-q", "-n", "10", "-c", "1", "-t", "set", "-d", "20")
    assert ref.get("key:__rand_int__") == theirs
    assert len(theirs) == 20


def test_rand_int_substitution(target_port_client):
    port, c = target_port_client
    res = bench(port, "-q", "-n", "500", "-c", "5", "-r", "100000", "SET", "key:__rand_int__", "v__rand_int__")
    assert res.returncode == 0, res.stderr
    got = quiet_results(res.stdout)
    assert got[0][0] == "SET key:__rand_int__ v__rand_int__"
    keys = c.keys("*")
    assert len(keys) > 400
    for k in keys:
        assert re.fullmatch(rb"key:\d{12}", k), k
        v = c.get(k)
        assert re.fullmatch(rb"v\d{12}", v)
    assert all(int(k[4:]) < 100000 for k in keys)
    # Without -r the placeholder stays as it is.
    c.flushall()
    bench(port, "-q", "-n", "50", "-c", "2", "SET", "key:__rand_int__", "x")
    assert c.keys("*") == [b"key:__rand_int__"]


@pytest.fixture(params=["ophidis", "redis"])
def target_port_client(request):
    name = "server" if request.param == "ophidis" else "redis_server"
    srv = request.getfixturevalue(name)
    c = srv.client()
    c.flushall()
    yield srv.port, c
    c.close()


def test_csv_output(target_port_client):
    port, _c = target_port_client
    res = bench(port, "--csv", "-n", "300", "-c", "3", "-t", "set,get,ping")
    assert res.returncode == 0, res.stderr
    rows = list(csv.reader(io.StringIO(res.stdout.decode())))
    assert rows[0] == ["test", "rps", "avg_latency_ms", "min_latency_ms", "p50_latency_ms",
                       "p95_latency_ms", "p99_latency_ms", "max_latency_ms"]
    assert [r[0] for r in rows[1:]] == ["PING_INLINE", "PING_MBULK", "SET", "GET"]
    for r in rows[1:]:
        vals = [float(x) for x in r[1:]]
        assert vals[0] > 0
        avg, mn, p50, p95, p99, mx = vals[1:]
        assert mn <= p50 <= p95 <= p99 <= mx
        assert mn <= avg <= mx
    theirs = list(csv.reader(io.StringIO(redis_bench(port, "--csv", "-n", "100", "-t", "set").stdout.decode())))
    assert theirs[0] == rows[0] and len(theirs[1]) == len(rows[1])


def test_full_report(target_port_client):
    port, _c = target_port_client
    res = bench(port, "-n", "1000", "-c", "10", "-P", "4", "--threads", "2", "-t", "set")
    assert res.returncode == 0, res.stderr
    out = res.stdout.decode()
    theirs = redis_bench(port, "-n", "1000", "-c", "10", "-P", "4", "--threads", "2", "-t", "set").stdout.decode()

    def skeleton(text):
        # Section structure and fixed lines, without the measured numbers.
        lines = [ln.split("\r")[-1] for ln in text.split("\n")]
        keep = []
        for ln in lines:
            if re.match(r"^\d+\.\d+% <= \d+\.\d+ milliseconds \(cumulative count \d+\)$", ln):
                ln = "PERCENTILE"
            ln = re.sub(r"\s+", " ", re.sub(r"\d+\.\d+", "N", ln))
            if not keep or keep[-1] != ln:
                keep.append(ln)
        return keep
    assert skeleton(out) == skeleton(theirs)
    assert "====== SET ======" in out
    assert "  1000 requests completed in " in out
    assert "  10 parallel clients\n  3 bytes payload\n  keep alive: 1\n" in out
    assert "  multi-thread: yes\n  threads: 2\n" in out
    by_pct = out.split("Latency by percentile distribution:\n")[1].split("\n\n")[0]
    pct = re.findall(r"^(\d+\.\d+)% <= (\d+\.\d+) milliseconds \(cumulative count (\d+)\)$", by_pct, re.M)
    assert pct[0][0] == "0.000" and pct[-1][2] == "1000"
    assert any(p[0] == "100.000" for p in pct)
    counts = [int(p[2]) for p in pct]
    m = re.search(r"throughput summary: (\d+\.\d+) requests per second", out)
    assert float(m.group(1)) > 0
    summary = out.split("latency summary (msec):\n")[1].split("\n")
    assert summary[0].split() == ["avg", "min", "p50", "p95", "p99", "max"]
    nums = [float(x) for x in summary[1].split()]
    assert nums[1] <= nums[2] <= nums[3] <= nums[4] <= nums[5]
    assert counts == sorted(counts)


def test_pipeline_and_threads_count_exactly(server, r):
    res = bench(server.port, "-q", "-n", "1001", "-c", "7", "-P", "16", "--threads", "3", "INCR", "cnt")
    assert res.returncode == 0, res.stderr
    assert int(r.get("cnt")) == 1001


def test_error_reply_stops_the_benchmark(target_port_client):
    port, c = target_port_client
    c.set("str", "notanumber")
    res = bench(port, "-q", "-n", "100", "-c", "2", "INCR", "str")
    theirs = redis_bench(port, "-q", "-n", "100", "-c", "2", "INCR", "str")
    assert res.returncode == theirs.returncode == 1
    assert res.stderr.splitlines()[-1] == theirs.stderr.splitlines()[-1] == \
        b"Error from server: ERR value is not an integer or out of range"


def test_connection_refused():
    res = bench(free_port(), "-q", "-n", "10", "-t", "ping")
    assert res.returncode == 1
    assert b"Could not connect to Redis at 127.0.0.1:" in res.stderr


def test_memtier_mode(redis_server, ref, tmp_path):
    prefix = str(tmp_path / "run")
    png = str(tmp_path / "spectrum.png")
    res = subprocess.run([sys.executable, "-m", "ophidis.tools.benchmark", "memtier", "-p",
                          str(redis_server.port), "--test-time", "1", "-t", "2", "-c", "4",
                          "--ratio", "1:4", "--key-pattern", "S:R", "--key-minimum", "1",
                          "--key-maximum", "200", "--data-size", "16", "--pipeline", "4",
                          "--hdr-file-prefix", prefix, "--spectrum-png", png],
                         capture_output=True, env=env(), timeout=60)
    assert res.returncode == 0, res.stderr
    out = res.stdout.decode()
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines()
            if ln.split() and ln.split()[0] in ("Sets", "Gets", "Totals")}
    sets, gets, tot = float(rows["Sets"][1]), float(rows["Gets"][1]), float(rows["Totals"][1])
    assert sets > 0 and gets > 0
    assert abs(tot - sets - gets) < 1
    assert 3.0 < gets / sets < 5.0
    hits, misses = float(rows["Gets"][2]), float(rows["Gets"][3])
    assert hits > 0 and abs(hits + misses - gets) < 1
    # Sequential SET keys: memtier-1 .. memtier-200 only.
    keys = ref.keys("*")
    assert keys and all(re.fullmatch(rb"memtier-\d+", k) and 1 <= int(k[8:]) <= 200 for k in keys)
    assert len(ref.get(keys[0])) == 16
    for name in ("FULL_RUN_1", "SET_command_run_1", "GET_command_run_1"):
        text = open("%s_%s.txt" % (prefix, name)).read()
        lines = text.splitlines()
        assert lines[0].split() == ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
        data = [ln.split() for ln in lines[2:] if ln and not ln.startswith("#")]
        pcts = [float(d[1]) for d in data]
        vals = [float(d[0]) for d in data]
        assert pcts == sorted(pcts) and pcts[-1] == 1.0 and vals == sorted(vals)
        assert re.search(r"#\[Mean    = +\d+\.\d+, StdDeviation   = +\d+\.\d+\]", text)
        assert re.search(r"#\[Max     = +\d+\.\d+, Total count    = +\d+\]", text)
    full_total = int(re.search(r"Total count += +(\d+)", open(prefix + "_FULL_RUN_1.txt").read()).group(1))
    assert full_total == pytest.approx(tot * 1.0, rel=0.5)
    with open(png, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"


def test_memtier_requests_against_ophidis(server, r):
    res = subprocess.run([sys.executable, "-m", "ophidis.tools.benchmark", "memtier", "-p", str(server.port),
                          "-n", "50", "-t", "1", "-c", "2", "--ratio", "1:1", "--key-maximum", "10",
                          "--hide-histogram"], capture_output=True, env=env(), timeout=60)
    assert res.returncode == 0, res.stderr
    assert 1 <= r.dbsize() <= 11
    assert "Totals" in res.stdout.decode()


def test_hdr_histogram_matches_hdr_semantics():
    h = Histogram(10, 3_000_000, 3)
    for v in (100, 101, 103, 104, 16383, 16384, 16400, 1_000_000):
        h.record(v)
    # unit 8 us below 16384 us: 96..103 is one bucket, reported as 103.
    assert h.highest_equivalent(100) == 103
    assert h.lowest_equivalent(104) == 104
    assert h.highest_equivalent(16400) == 16415
    assert h.value_at_percentile(50) == 111       # 4th value (104) -> bucket 104..111
    assert h.value_at_percentile(62.5) == 16383  # 5th value, last 8 us bucket
    assert h.value_at_percentile(75) == 16399    # 6th value (16384): 16 us buckets from here
    assert h.min() == 96
    assert h.total == 8
    pct = list(h.iter_percentiles(1))
    assert pct[0] == (0.0, 103, 3) and pct[-1][0] == 100.0 and pct[-1][2] == 8
