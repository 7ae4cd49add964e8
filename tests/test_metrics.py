"""/metrics (metrics-port): redis_exporter's names and labels, values as INFO
gives them after a known workload, the Grafana dashboard's metrics all
exported, the server without prometheus-client."""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from support.cluster import cluster_ports
from support.servers import ROOT, ServerProc, compiled_run_only, free_port, server_env, wait_exit
from support.wait import port_open, serving, wait_until

from ophidis.metrics import families
from ophidis.sysinfo import REDIS_VERSION

pytestmark = compiled_run_only     # the request loop plays no part

DASHBOARD = os.path.join(ROOT, "contrib", "grafana", "ophidis.json")


def scrape(port, path="/metrics", method="GET"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type"), resp.read().decode()
    finally:
        conn.close()


def samples(text) -> dict:
    """{(sample name, frozenset(labels)): value}"""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(smp, name, **labels):
    return smp[(name, frozenset(labels.items()))]


@pytest.fixture(scope="module")
def msrv():
    port = free_port()
    s = ServerProc(["--metrics-port", str(port), "--enable-debug-command", "yes", "--maxmemory", "100mb",
                    "--latency-monitor-threshold", "5", "--slowlog-log-slower-than", "5000"])
    s.metrics_port = port
    try:
        wait_until(lambda: port_open(port), 10, what="the metrics listener")
        yield s
    finally:
        s.stop()
        shutil.rmtree(s.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def workload(msrv):
    r = msrv.client()
    for i in range(20):
        r.set("k%d" % i, i)
    for i in range(5):
        r.expire("k%d" % i, 1000)
    for i in range(7):
        r.get("k%d" % i)          # hits
    for i in range(3):
        r.get("missing%d" % i)    # misses
    r3 = msrv.client(db=3)
    r3.rpush("l", "a", "b")
    r3.close()
    # the closed connections (r3, the start-up probe) are gone: the
    # clients count stays the same between a scrape and INFO
    wait_until(lambda: r.info("clients")["connected_clients"] == 1, 20, what="only r connected")
    r.execute_command("DEBUG", "SLEEP", "0.02")   # a latency spike (command) and a slowlog entry
    try:
        r.execute_command("NOSUCHCOMMAND")
    except Exception:
        pass
    yield r
    r.close()


@pytest.fixture
def quiet(workload):
    """No more latency events or slowlog entries while a test compares a
    scrape with INFO: on a loaded machine the INFO and LATENCY calls after
    the scrape could otherwise log new ones (then the two differ)."""
    r = workload
    r.config_set("slowlog-log-slower-than", -1)
    r.config_set("latency-monitor-threshold", 0)
    yield r
    r.config_set("slowlog-log-slower-than", 5000)
    r.config_set("latency-monitor-threshold", 5)


def test_names_labels_and_values_match_info(msrv, quiet):
    r = quiet
    status, ctype, text = scrape(msrv.metrics_port)
    assert status == 200 and ctype.startswith("text/plain")
    info = r.info("all")
    smp = samples(text)
    assert value(smp, "redis_up") == 1
    assert value(smp, "redis_connected_clients") == info["connected_clients"]
    assert value(smp, "redis_memory_max_bytes") == 100 * 1024 * 1024 == info["maxmemory"]
    assert value(smp, "redis_config_maxmemory") == 100 * 1024 * 1024
    assert value(smp, "redis_keyspace_hits_total") == info["keyspace_hits"] == 7
    assert value(smp, "redis_keyspace_misses_total") == info["keyspace_misses"] == 3
    assert value(smp, "redis_db_keys", db="db0") == info["db0"]["keys"] == 20
    assert value(smp, "redis_db_keys_expiring", db="db0") == info["db0"]["expires"] == 5
    assert value(smp, "redis_db_keys", db="db3") == 1
    assert value(smp, "redis_db_keys_expiring", db="db3") == 0
    assert value(smp, "redis_commands_total", cmd="set") == info["cmdstat_set"]["calls"] == 20
    assert value(smp, "redis_commands_total", cmd="get") == info["cmdstat_get"]["calls"] == 10
    assert value(smp, "redis_commands_duration_seconds_total", cmd="set") == pytest.approx(
        info["cmdstat_set"]["usec"] / 1e6)
    assert value(smp, "redis_commands_failed_calls_total", cmd="set") == 0
    assert value(smp, "redis_evicted_keys_total") == info["evicted_keys"]
    assert value(smp, "redis_expired_keys_total") == info["expired_keys"]
    assert value(smp, "redis_connected_slaves") == info["connected_slaves"] == 0
    assert value(smp, "redis_master_repl_offset") == info["master_repl_offset"]
    assert value(smp, "redis_rdb_changes_since_last_save") == info["rdb_changes_since_last_save"]
    assert value(smp, "redis_rdb_last_bgsave_status") == 1           # "ok"
    assert value(smp, "redis_aof_enabled") == 0
    assert value(smp, "redis_uptime_in_seconds") <= info["uptime_in_seconds"]
    assert value(smp, "redis_cluster_enabled") == 0
    assert value(smp, "redis_errors_total", err="ERR") == info["errorstat_ERR"]["count"]
    # latency percentiles: a summary whose quantile labels are INFO's percentiles
    p50 = info["latency_percentiles_usec_set"]["p50"]
    assert value(smp, "redis_latency_percentiles_usec", cmd="set", quantile="50") == p50
    assert value(smp, "redis_latency_percentiles_usec", cmd="set", quantile="99.9") == \
        info["latency_percentiles_usec_set"]["p99.9"]
    assert value(smp, "redis_latency_percentiles_usec_count", cmd="set") == 20
    # LATENCY LATEST and the slowlog
    ((event, when, ms, _max),) = [e for e in r.execute_command("LATENCY", "LATEST") if e[0] == b"command"]
    assert value(smp, "redis_latency_spike_last", event_name="command") == when
    assert value(smp, "redis_latency_spike_duration_seconds", event_name="command") == ms / 1000
    (last,) = r.slowlog_get(1)
    assert value(smp, "redis_slowlog_length") == r.slowlog_len()
    assert value(smp, "redis_slowlog_last_id") == last["id"]
    assert value(smp, "redis_last_slow_execution_duration_seconds") == last["duration"] / 1e6
    inst = [dict(k[1]) for k in smp if k[0] == "redis_instance_info"]
    assert inst == [{"role": "master", "redis_version": REDIS_VERSION, "redis_build_id": str(info["redis_build_id"]),
                     "redis_mode": "standalone", "os": info["os"], "maxmemory_policy": "noeviction",
                     "tcp_port": str(msrv.port), "run_id": info["run_id"], "process_id": str(msrv.pid),
                     "master_replid": info["master_replid"]}]
    # types as redis_exporter declares them
    types = {f.name: f.type for f in text_string_to_metric_families(text)}
    assert types["redis_commands"] == types["redis_keyspace_hits"] == "counter"
    assert types["redis_connected_clients"] == types["redis_db_keys"] == "gauge"
    assert types["redis_latency_percentiles_usec"] == "summary"


def test_scrape_is_not_a_command(msrv, workload):
    before = workload.info("stats")["total_commands_processed"]
    scrape(msrv.metrics_port)
    scrape(msrv.metrics_port)
    assert workload.info("stats")["total_commands_processed"] == before + 1     # the INFO itself


def test_http_edges_and_config(msrv, workload):
    assert scrape(msrv.metrics_port, "/nothing")[0] == 404
    assert scrape(msrv.metrics_port, "/")[0] == 200
    status, _, body = scrape(msrv.metrics_port, method="HEAD")
    assert status == 200 and body == ""
    assert scrape(msrv.metrics_port, method="POST")[0] == 405
    # hidden: by name only, not in CONFIG GET * (which tools set back one by one)
    assert workload.config_get("metrics-*") == {}
    assert workload.config_get("metrics-port", "metrics-bind") == {
        "metrics-port": str(msrv.metrics_port), "metrics-bind": "127.0.0.1"}
    with pytest.raises(Exception, match="can't set immutable config"):
        workload.config_set("metrics-port", "0")


def dashboard_metrics() -> set:
    with open(DASHBOARD) as f:
        dash = json.load(f)
    exprs = []

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k in ("expr", "query", "definition") and isinstance(v, str):
                    exprs.append(v)
                else:
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(dash)
    return {m for e in exprs for m in re.findall(r"\bredis_[a-z0-9_]+", e)}


def test_dashboard_uses_only_exported_metrics(msrv, workload, tmp_path):
    names = {k[0] for k in samples(scrape(msrv.metrics_port)[2])}
    port = free_port()
    # cluster mode and the AOF: the metrics that exist only then
    (cport,) = cluster_ports(1)
    cl = ServerProc(["--port", str(cport), "--metrics-port", str(port), "--cluster-enabled", "yes",
                     "--appendonly", "yes"], cwd=str(tmp_path))
    try:
        wait_until(lambda: port_open(port), 10, what="the metrics listener")
        wait_until(lambda: cl.client().info("persistence")["aof_rewrite_in_progress"] == 0, 30)
        smp = samples(scrape(port)[2])
        assert value(smp, "redis_aof_enabled") == 1
        assert value(smp, "redis_aof_current_size_bytes") == cl.client().info("persistence")["aof_current_size"]
        assert value(smp, "redis_cluster_enabled") == 1
        assert value(smp, "redis_cluster_state") == 0            # no slots assigned: fail
        assert value(smp, "redis_cluster_known_nodes") == 1
        names |= {k[0] for k in smp}
    finally:
        cl.stop()
    used = dashboard_metrics()
    assert len(used) >= 20
    assert used - names == set()


def test_without_prometheus_client():
    """prometheus_client made unimportable: metrics-port 0 starts, a set
    metrics-port refuses to start and says what to install."""
    code = ("import sys; sys.modules['prometheus_client'] = None; "
            "from ophidis.main import main; sys.exit(main())")
    proc = subprocess.run([sys.executable, "-c", code, "--port", "0", "--metrics-port", str(free_port()),
                           "--save", ""], env=server_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "prometheus-client package is missing" in proc.stdout and "ophidis[metrics]" in proc.stdout
    port = free_port()
    p = subprocess.Popen([sys.executable, "-c", code, "--port", str(port), "--save", ""], env=server_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until(lambda: serving(port), 30, what="the server without prometheus_client")
    finally:
        p.terminate()
        wait_exit(p)
        p.stdout.close()



def test_replication_lines_as_redis_exporter_labels_them():
    """families() on a replica's and a master's replication sections (the
    INFO text redis-server 7.0 writes): redis_exporter's labelled metrics."""
    info = ("# Server\r\nuptime_in_seconds:10\r\n"
            "# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\nmaster_port:6379\r\n"
            "master_link_status:up\r\nmaster_last_io_seconds_ago:3\r\nmaster_sync_in_progress:0\r\n"
            "slave_read_repl_offset:140\r\nslave_repl_offset:140\r\nslave_read_only:1\r\n"
            "connected_slaves:1\r\nslave0:ip=10.0.0.2,port=6380,state=online,offset=140,lag=1\r\n"
            "master_repl_offset:140\r\n")
    text = generate_latest(_Registry(families.families(families.Snapshot(info=info, now=100.0)))).decode()
    smp = samples(text)
    ml = {"master_host": "10.0.0.1", "master_port": "6379"}
    assert value(smp, "redis_master_link_up", **ml) == 1
    assert value(smp, "redis_master_last_io_seconds_ago", **ml) == 3
    assert value(smp, "redis_master_sync_in_progress", **ml) == 0
    assert value(smp, "redis_slave_repl_offset", **ml) == 140
    sl = {"slave_ip": "10.0.0.2", "slave_port": "6380", "slave_state": "online"}
    assert value(smp, "redis_connected_slave_offset_bytes", **sl) == 140
    assert value(smp, "redis_connected_slave_lag_seconds", **sl) == 1
    assert value(smp, "redis_slave_info", master_host="10.0.0.1", master_port="6379", read_only="1") == 1
    assert value(smp, "redis_start_time_seconds") == 90
    assert value(smp, "redis_connected_slaves") == 1 and value(smp, "redis_master_repl_offset") == 140


class _Registry:
    def __init__(self, fams):
        self.fams = fams

    def collect(self):
        return self.fams
