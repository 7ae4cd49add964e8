"""INFO as Prometheus metrics, under redis_exporter's names and labels.

A pure translation (no I/O, no server): ``families(snapshot)`` turns the
texts and facts a scrape reads (INFO ALL, CLUSTER INFO, LATENCY LATEST,
the slowlog, two CONFIG values) into prometheus_client metric families,
as redis_exporter (oliver006/redis_exporter, ``exporter/*.go``) names them
when it scrapes a Redis 7.0: ``redis_`` + its map of INFO fields (gauges
and counters), ``redis_commands_total{cmd}``,
``redis_commands_duration_seconds_total{cmd}``, ``redis_db_keys{db}``,
``redis_latency_percentiles_usec{cmd}`` (a summary whose quantile labels
are the INFO percentiles, "50", "99", "99.9"), ``redis_errors_total{err}``,
``redis_instance_info{...}``, ``redis_cluster_*`` from CLUSTER INFO,
``redis_latency_spike_*{event_name}``, ``redis_slowlog_*``,
``redis_config_maxmemory`` / ``maxclients``, ``redis_up``.  Dashboards and
alerts written for redis_exporter work unchanged.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, SummaryMetricFamily

NAMESPACE = "redis"

# INFO field -> metric name (without the namespace): redis_exporter's gauges
GAUGES = {
    # Server
    "uptime_in_seconds": "uptime_in_seconds", "process_id": "process_id",
    # Clients
    "connected_clients": "connected_clients", "blocked_clients": "blocked_clients",
    "tracking_clients": "tracking_clients",
    "client_recent_max_output_buffer": "client_recent_max_output_buffer_bytes",
    "client_recent_max_input_buffer": "client_recent_max_input_buffer_bytes",
    # Memory
    "allocator_active": "allocator_active_bytes", "allocator_allocated": "allocator_allocated_bytes",
    "allocator_resident": "allocator_resident_bytes", "allocator_frag_ratio": "allocator_frag_ratio",
    "allocator_frag_bytes": "allocator_frag_bytes", "allocator_rss_ratio": "allocator_rss_ratio",
    "allocator_rss_bytes": "allocator_rss_bytes",
    "used_memory": "memory_used_bytes", "used_memory_rss": "memory_used_rss_bytes",
    "used_memory_peak": "memory_used_peak_bytes", "used_memory_lua": "memory_used_lua_bytes",
    "used_memory_overhead": "memory_used_overhead_bytes", "used_memory_startup": "memory_used_startup_bytes",
    "used_memory_dataset": "memory_used_dataset_bytes", "used_memory_scripts": "memory_used_scripts_bytes",
    "maxmemory": "memory_max_bytes",
    "mem_fragmentation_ratio": "mem_fragmentation_ratio", "mem_fragmentation_bytes": "mem_fragmentation_bytes",
    "mem_clients_slaves": "mem_clients_slaves", "mem_clients_normal": "mem_clients_normal",
    "expired_stale_perc": "expired_stale_percentage",
    "mem_not_counted_for_evict": "mem_not_counted_for_eviction_bytes",
    "lazyfree_pending_objects": "lazyfree_pending_objects", "active_defrag_running": "active_defrag_running",
    "migrate_cached_sockets": "migrate_cached_sockets_total",
    "active_defrag_hits": "defrag_hits", "active_defrag_misses": "defrag_misses",
    "active_defrag_key_hits": "defrag_key_hits", "active_defrag_key_misses": "defrag_key_misses",
    "expired_time_cap_reached_count": "expired_time_cap_reached_total",
    # Persistence
    "loading": "loading_dump_file", "rdb_changes_since_last_save": "rdb_changes_since_last_save",
    "rdb_bgsave_in_progress": "rdb_bgsave_in_progress", "rdb_last_save_time": "rdb_last_save_timestamp_seconds",
    "rdb_last_bgsave_status": "rdb_last_bgsave_status", "rdb_last_bgsave_time_sec": "rdb_last_bgsave_duration_sec",
    "rdb_current_bgsave_time_sec": "rdb_current_bgsave_duration_sec", "rdb_last_cow_size": "rdb_last_cow_size_bytes",
    "aof_enabled": "aof_enabled", "aof_rewrite_in_progress": "aof_rewrite_in_progress",
    "aof_rewrite_scheduled": "aof_rewrite_scheduled", "aof_last_rewrite_time_sec": "aof_last_rewrite_duration_sec",
    "aof_current_rewrite_time_sec": "aof_current_rewrite_duration_sec", "aof_last_cow_size": "aof_last_cow_size_bytes",
    "aof_current_size": "aof_current_size_bytes", "aof_base_size": "aof_base_size_bytes",
    "aof_pending_rewrite": "aof_pending_rewrite", "aof_buffer_length": "aof_buffer_length",
    "aof_rewrite_buffer_length": "aof_rewrite_buffer_length", "aof_pending_bio_fsync": "aof_pending_bio_fsync",
    "aof_delayed_fsync": "aof_delayed_fsync", "aof_last_bgrewrite_status": "aof_last_bgrewrite_status",
    "aof_last_write_status": "aof_last_write_status", "module_fork_in_progress": "module_fork_in_progress",
    "module_fork_last_cow_size": "module_fork_last_cow_size",
    # Stats
    "pubsub_channels": "pubsub_channels", "pubsub_patterns": "pubsub_patterns",
    "latest_fork_usec": "latest_fork_usec",
    # Replication
    "connected_slaves": "connected_slaves", "repl_backlog_size": "replication_backlog_bytes",
    "repl_backlog_active": "repl_backlog_is_active",
    "repl_backlog_first_byte_offset": "repl_backlog_first_byte_offset",
    "repl_backlog_histlen": "repl_backlog_history_bytes", "master_repl_offset": "master_repl_offset",
    "second_repl_offset": "second_repl_offset", "slave_expires_tracked_keys": "slave_expires_tracked_keys",
    "slave_priority": "slave_priority", "sync_full": "replica_resyncs_full",
    "sync_partial_ok": "replica_partial_resync_accepted", "sync_partial_err": "replica_partial_resync_denied",
    # Cluster
    "cluster_stats_messages_sent": "cluster_messages_sent_total",
    "cluster_stats_messages_received": "cluster_messages_received_total",
}

# ... and its counters
COUNTERS = {
    "total_connections_received": "connections_received_total",
    "total_commands_processed": "commands_processed_total",
    "rejected_connections": "rejected_connections_total",
    "total_net_input_bytes": "net_input_bytes_total", "total_net_output_bytes": "net_output_bytes_total",
    "expired_keys": "expired_keys_total", "evicted_keys": "evicted_keys_total",
    "keyspace_hits": "keyspace_hits_total", "keyspace_misses": "keyspace_misses_total",
    "used_cpu_sys": "cpu_sys_seconds_total", "used_cpu_user": "cpu_user_seconds_total",
    "used_cpu_sys_children": "cpu_sys_children_seconds_total",
    "used_cpu_user_children": "cpu_user_children_seconds_total",
}

INSTANCE_LABELS = ("role", "redis_version", "redis_build_id", "redis_mode", "os", "maxmemory_policy",
                   "tcp_port", "run_id", "process_id", "master_replid")

_MASTER_DIRECT = re.compile(r"^(master(_[0-9]+)?_(last_io_seconds_ago|sync_in_progress)|slave_repl_offset)")
_MASTER_LINK = re.compile(r"^master(_[0-9]+)?_link_status")
_SLAVE = re.compile(r"^slave\d+")
_BAD_NAME = re.compile(r"[^a-zA-Z0-9_]")


@dataclass
class Snapshot:
    """What one scrape reads from the server."""
    info: str                                 # INFO ALL
    cluster_info: str = ""                    # CLUSTER INFO (cluster mode)
    latency_latest: list = field(default_factory=list)   # (event, unix time, ms, max ms)
    slowlog_length: int = 0
    slowlog_last_id: int = 0
    last_slow_execution_usec: int = 0
    config: dict = field(default_factory=dict)   # maxmemory, maxclients
    now: float = 0.0


class _Families:
    """Metric families by name, created on first sample (in a stable order)."""

    def __init__(self):
        self.by_name = {}

    def _family(self, cls, name, labels, doc):
        """(full name, the family ``name``), made a ``cls`` on first use."""
        full = NAMESPACE + "_" + name
        fam = self.by_name.get(full)
        if fam is None:
            fam = self.by_name[full] = cls(full, doc or name + " metric", labels=labels)
        return full, fam

    def add(self, name, value, kind="gauge", labels=None, doc=None):
        names = list(labels) if labels else []
        _, fam = self._family(CounterMetricFamily if kind == "counter" else GaugeMetricFamily, name, names, doc)
        fam.add_metric([labels[k] for k in names] if labels else [], value)

    def summary(self, name, labels, count, total, quantiles, doc=None):
        full, fam = self._family(SummaryMetricFamily, name, list(labels), doc)
        for q, v in quantiles:
            fam.add_sample(full, dict(labels, quantile=q), v)
        fam.add_metric([labels[k] for k in labels], count, total)


def _number(value: str):
    if value in ("ok", "true"):
        return 1.0
    if value in ("err", "fail", "false"):
        return 0.0
    try:
        return float(value)
    except ValueError:
        return None


def _kv(text: str) -> dict:
    out = {}
    for part in text.split(","):
        k, sep, v = part.partition("=")
        if sep:
            out[k] = v
    return out


def _field(out, key, value):
    """A plain INFO field as redis_exporter registers it (when it maps it)."""
    if not (key.startswith("db") or key.startswith("cmdstat_") or key.startswith("cluster_")
            or key in GAUGES or key in COUNTERS):
        return
    val = _number(value)
    if val is None:
        return
    name = _BAD_NAME.sub("_", key)
    kind = "counter" if name in COUNTERS else "gauge"
    name = GAUGES.get(name) or COUNTERS.get(name) or name
    if name == "latest_fork_usec":
        name, val = "latest_fork_seconds", val / 1e6
    out.add(name, val, kind)


def families(snap: Snapshot) -> list:
    out = _Families()
    values = {}
    cmd_count, cmd_sum, cmd_pcts = {}, {}, {}
    section = ""
    master_host = master_port = ""
    for line in snap.info.split("\n"):
        line = line.strip()
        if line.startswith("# "):
            section = line[2:]
            continue
        if len(line) < 2 or ":" not in line:
            continue
        key, _, value = line.partition(":")
        values[key] = value
        if re.match(r"^master(_[0-9]+)?_host", key):
            master_host = value
        if re.match(r"^master(_[0-9]+)?_port", key):
            master_port = value
        if section == "Replication":
            ml = {"master_host": master_host, "master_port": master_port}
            if _MASTER_LINK.match(key):
                out.add("master_link_up", 1.0 if value == "up" else 0.0, labels=ml)
                continue
            if _MASTER_DIRECT.match(key):
                name = key
                if key.endswith("last_io_seconds_ago"):
                    name = "master_last_io_seconds_ago"
                elif key.endswith("sync_in_progress"):
                    name = "master_sync_in_progress"
                try:
                    v = float(int(value))
                except ValueError:
                    v = 0.0
                out.add(name, v, labels=ml)
                continue
            if _SLAVE.match(key):
                kv = _kv(value)
                if "offset" in kv:
                    sl = {"slave_ip": kv.get("ip", ""), "slave_port": kv.get("port", ""),
                          "slave_state": kv.get("state", "")}
                    out.add("connected_slave_offset_bytes", float(kv["offset"]), labels=sl)
                    if "lag" in kv:
                        out.add("connected_slave_lag_seconds", float(kv["lag"]), labels=sl)
                    continue
        elif section == "Server":
            if key == "uptime_in_seconds":
                out.add("start_time_seconds", float(int(snap.now or time.time()) - int(value)))
            elif key in ("configured_hz", "hz"):
                out.add(key, float(value))
        elif section == "Commandstats":
            if key.startswith("cmdstat_"):
                cmd = key[len("cmdstat_"):]
                kv = _kv(value)
                calls, usec = float(kv.get("calls", 0)), float(kv.get("usec", 0))
                lb = {"cmd": cmd}
                out.add("commands_total", calls, "counter", lb, "Total number of calls per command")
                out.add("commands_duration_seconds_total", usec / 1e6, "counter", lb,
                        "Total amount of time in seconds spent per command")
                if "rejected_calls" in kv:
                    out.add("commands_rejected_calls_total", float(kv["rejected_calls"]), "counter", lb)
                    out.add("commands_failed_calls_total", float(kv["failed_calls"]), "counter", lb)
                cmd_count[cmd], cmd_sum[cmd] = calls, usec
            continue
        elif section == "Latencystats":
            if key.startswith("latency_percentiles_usec_"):
                cmd = key[len("latency_percentiles_usec_"):]
                cmd_pcts[cmd] = [(k[1:], float(v)) for k, v in _kv(value).items()]
            continue
        elif section == "Errorstats":
            if key.startswith("errorstat_"):
                out.add("errors_total", float(_kv(value).get("count", 0)), "counter", {"err": key[len("errorstat_"):]})
            continue
        elif section == "Keyspace":
            kv = _kv(value)
            if key.startswith("db") and "keys" in kv and "expires" in kv:
                lb = {"db": key}
                out.add("db_keys", float(kv["keys"]), labels=lb, doc="Total number of keys by DB")
                out.add("db_keys_expiring", float(kv["expires"]), labels=lb, doc="Total number of expiring keys by DB")
                if "avg_ttl" in kv:
                    out.add("db_avg_ttl_seconds", float(kv["avg_ttl"]) / 1000, labels=lb, doc="Avg TTL in seconds")
                continue
        _field(out, key, value)
    for cmd, pcts in cmd_pcts.items():
        if cmd in cmd_count:
            out.summary("latency_percentiles_usec", {"cmd": cmd}, cmd_count[cmd], cmd_sum[cmd], pcts)
    labels = {k: values.get(k, "") for k in INSTANCE_LABELS}
    labels["redis_mode"] = values.get("redis_mode") or values.get("server_mode", "")
    out.add("instance_info", 1.0, labels=labels, doc="Information about the Redis instance")
    if values.get("role") == "slave":
        out.add("slave_info", 1.0, labels={"master_host": values.get("master_host", ""),
                                           "master_port": values.get("master_port", ""),
                                           "read_only": values.get("slave_read_only", "")})
    for line in snap.cluster_info.split("\r\n"):
        parts = line.split(":")
        if len(parts) == 2:
            _field(out, parts[0], parts[1])
    for name in ("maxmemory", "maxclients"):
        if name in snap.config:
            out.add("config_" + name, float(snap.config[name]))
    for event, when, ms, _max in snap.latency_latest:
        lb = {"event_name": event}
        out.add("latency_spike_last", float(when), labels=lb, doc="When the latency spike last occurred")
        out.add("latency_spike_duration_seconds", ms / 1e3, labels=lb, doc="Length of the last latency spike in seconds")
    out.add("slowlog_length", float(snap.slowlog_length), doc="Total slowlog")
    out.add("slowlog_last_id", float(snap.slowlog_last_id), doc="Last id of slowlog")
    out.add("last_slow_execution_duration_seconds", snap.last_slow_execution_usec / 1e6,
            doc="The amount of time needed for last slow execution, in seconds")
    out.add("up", 1.0, doc="Information about the Redis instance")
    return list(out.by_name.values())
