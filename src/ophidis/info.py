"""INFO's text (server.c's genRedisInfoString): every section and field that
redis-cli, redis_exporter and the Redis test suite read, used by the INFO
command (commands/info.py), crash reports (crash.py) and /metrics
(metrics/).  Subsystems may add or override sections through ``SECTIONS``
(name -> fn(server) -> list of "field:value" lines)."""

from __future__ import annotations

import os
import resource
import time
from collections import Counter

from . import sysinfo
from .cmdtable.registry import ALL
from .keyspace import dictshape
from .keyspace.db import TYPE_NAMES, stats
from .keyspace.hfe import subexpiry_count
from .memory.sizes import STARTUP

SECTIONS = {}
# Redis 8's sections in its order (genRedisInfoString's): threads follows
# persistence, keysizes keyspace.  Redis keeps keysizes' histograms as keys
# change and lists it in the default and ALL sets; we compute it when asked
# (a pass over the keys, sec_keysizes: about 0.3 s a million keys), so only
# INFO keysizes and INFO everything show it: the INFO that monitoring sends
# every second (and /metrics' INFO ALL) must not stall the server.
ALL_SECTIONS = ["server", "clients", "memory", "persistence", "threads", "stats", "replication", "cpu",
                "modules", "commandstats", "errorstats", "latencystats", "cluster", "keyspace", "keysizes"]
ON_DEMAND = ("keysizes",)
DEFAULT_SECTIONS = [s for s in ALL_SECTIONS if s not in ("commandstats", "latencystats") + ON_DEMAND]


# the Lua VM's memory as we report it (a fixed estimate: lupa's allocator
# is not measured)
LUA_VM_BYTES = 31744


def human_bytes(n: float) -> str:
    n = float(n)
    if n < 1024:
        return "%dB" % n
    for unit in ("K", "M", "G", "T", "P"):
        n /= 1024
        if n < 1024 or unit == "P":
            return "%.2f%s" % (n, unit)
    return "%.2fP" % n


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def total_system_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0


def sec_server(srv):
    now = time.time()
    up = int(time.monotonic() - srv.start_monotonic)
    port = srv.config["port"] or srv.config["tls-port"]
    return [
        "redis_version:%s" % sysinfo.REDIS_VERSION,
        "ophidis_version:%s" % sysinfo.OPHIDIS_VERSION,
        "redis_git_sha1:%s" % sysinfo.GIT_SHA1,
        "redis_git_dirty:%d" % sysinfo.GIT_DIRTY,
        "redis_build_id:%s" % sysinfo.BUILD_ID,
        "redis_mode:%s" % ("cluster" if srv.config["cluster-enabled"] else "standalone"),
        "os:%s" % sysinfo.os_string(),
        "arch_bits:%d" % sysinfo.arch_bits(),
        "monotonic_clock:POSIX clock_gettime",
        "multiplexing_api:epoll",
        "atomicvar_api:c11-builtin",
        "gcc_version:%s" % sysinfo.GCC_VERSION,
        "python_version:%s" % sysinfo.python_version(),
        "process_id:%d" % os.getpid(),
        "process_supervised:no",
        "run_id:%s" % srv.run_id,
        "tcp_port:%d" % port,
        "server_time_usec:%d" % int(now * 1e6),
        "uptime_in_seconds:%d" % up,
        "uptime_in_days:%d" % (up // 86400),
        "hz:%d" % srv.hz,
        "configured_hz:%d" % srv.config["hz"],
        "lru_clock:%d" % (int(now) & ((1 << 24) - 1)),
        "executable:%s" % srv.executable,
        "config_file:%s" % (srv.config.config_file or ""),
        "io_threads_active:0",
    ] + (["shutdown_in_milliseconds:%d" % max(0, int((srv.shutdown_wait[0] - now) * 1000))]
         if srv.shutdown_wait is not None else []) + listener_lines(srv.config)


def listener_lines(cfg) -> list:
    """7.2's listener<N> lines (getListensInfoString): one per kind of
    listener configured, numbered as Redis's connection types (0 TCP,
    1 unix socket, 2 TLS), with the bind addresses and the port."""
    out = []
    binds = "".join(",bind=%s" % b for b in cfg["bind"] or ())
    if cfg["port"]:
        out.append("listener0:name=tcp%s,port=%d" % (binds, cfg["port"]))
    if cfg["unixsocket"]:
        out.append("listener1:name=unix,bind=%s" % cfg["unixsocket"])
    if cfg["tls-port"]:
        out.append("listener2:name=tls%s,port=%d" % (binds, cfg["tls-port"]))
    return out


def sec_clients(srv):
    clients = srv.clients.values()
    blocked = sum(1 for c in clients if c.blocked)
    # Clients postponed by CLIENT PAUSE count as blocked (BLOCKED_POSTPONE),
    # though they are in no timeout table.
    postponed = sum(1 for c in srv.paused_clients if not c.closing)
    # the largest query and output buffers of the last seconds (cron's
    # samples) or of now
    cm = srv.memory.clients
    cm.refresh()
    maxin, maxout = cm.recent_peaks()
    return [
        # replicas are not counted (Redis: clients minus slaves)
        "connected_clients:%d" % (len(srv.clients) - len(srv.repl_feed.replicas)),
        "cluster_connections:%d" % (srv.cluster.connections() if srv.cluster is not None else 0),
        "maxclients:%d" % srv.maxclients,
        "client_recent_max_input_buffer:%d" % maxin,
        "client_recent_max_output_buffer:%d" % maxout,
        "blocked_clients:%d" % (blocked + postponed),
        "tracking_clients:%d" % srv.tracking.nclients,
        # 7.4: subscribers, clients watching keys, the keys watched and
        # blocked on (on_nokey: a deleted key ends the wait, XREADGROUP)
        "pubsub_clients:%d" % sum(1 for c in clients if c.pubsub_channels or c.pubsub_patterns
                                  or c.pubsub_shard),
        "watching_clients:%d" % sum(1 for c in clients if c.watched),
        "clients_in_timeout_table:%d" % blocked,
        "total_watched_keys:%d" % sum(len(db.watched_keys) for db in srv.dbs),
        "total_blocking_keys:%d" % sum(len(db.blocking_keys) for db in srv.dbs),
        "total_blocking_keys_on_nokey:%d" % sum(
            1 for db in srv.dbs for waiters in db.blocking_keys.values()
            if any(w.bstate is not None and w.bstate.serve_missing for w in waiters)),
        # 8.8: clients that sent something in the last 512 ms (Redis keeps
        # a window of four 128 ms slots; here each client's last read time)
        "active_clients:%d" % active_clients(srv),
    ]


ACTIVE_WINDOW = 0.512


def active_clients(srv) -> int:
    since = time.monotonic() - ACTIVE_WINDOW
    return sum(1 for c in srv.clients.values() if c.read_events and c.last_time >= since)


def sec_memory(srv):
    m = srv.memory
    used = m.used_memory()      # the clients measured anew
    rss = rss_bytes()
    peak = max(srv.used_memory_peak, used)
    srv.used_memory_peak = peak
    startup = STARTUP
    dataset = m.dataset_bytes()
    overhead = max(0, used - dataset)
    tsm = total_system_memory()
    mm = srv.config["maxmemory"]
    scripts = srv.cached_scripts
    frag = rss / used if used else 1.0
    vm_functions = srv.functions.vm_memory()
    return [
        "used_memory:%d" % used,
        "used_memory_human:%s" % human_bytes(used),
        "used_memory_rss:%d" % rss,
        "used_memory_rss_human:%s" % human_bytes(rss),
        "used_memory_peak:%d" % peak,
        "used_memory_peak_human:%s" % human_bytes(peak),
        "used_memory_peak_time:%d" % m.peak_time,     # 8.2
        "used_memory_peak_perc:%.2f%%" % (used * 100.0 / peak if peak else 100.0),
        "used_memory_overhead:%d" % overhead,
        "used_memory_startup:%d" % startup,
        "used_memory_dataset:%d" % dataset,
        "used_memory_dataset_perc:%.2f%%" % (
            dataset * 100.0 / (used - startup) if used > startup else 0),
        "allocator_allocated:%d" % used,
        "allocator_active:%d" % rss,
        "allocator_resident:%d" % rss,
        "allocator_muzzy:0",          # 7.4 (jemalloc's muzzy pages: none here)
        "total_system_memory:%d" % tsm,
        "total_system_memory_human:%s" % human_bytes(tsm),
        "used_memory_lua:%d" % LUA_VM_BYTES,
        "used_memory_vm_eval:%d" % LUA_VM_BYTES,
        "used_memory_lua_human:31.00K",
        "used_memory_scripts_eval:0",
        "number_of_cached_scripts:%d" % scripts,
        "number_of_functions:%d" % len(srv.functions.functions),
        "number_of_libraries:%d" % len(srv.functions.libraries),
        "used_memory_vm_functions:%d" % vm_functions,
        "used_memory_vm_total:%d" % (LUA_VM_BYTES + vm_functions),
        "used_memory_vm_total_human:%s" % human_bytes(LUA_VM_BYTES + vm_functions),
        "used_memory_functions:184",
        "used_memory_scripts:184",
        "used_memory_scripts_human:184B",
        "maxmemory:%d" % mm,
        "maxmemory_human:%s" % human_bytes(mm),
        "maxmemory_policy:%s" % srv.config["maxmemory-policy"],
        "allocator_frag_ratio:1.00",
        "allocator_frag_bytes:0",
        "allocator_rss_ratio:1.00",
        "allocator_rss_bytes:0",
        "rss_overhead_ratio:1.00",
        "rss_overhead_bytes:0",
        "mem_fragmentation_ratio:%.2f" % frag,
        "mem_fragmentation_bytes:%d" % (rss - used),
        "mem_not_counted_for_evict:%d" % m.not_counted(),
        "mem_replication_backlog:%d" % srv.repl_feed.backlog_bytes(),
        "mem_total_replication_buffers:%d" % srv.repl_feed.buffer_bytes(),
        "mem_replica_full_sync_buffer:0",    # 8.0: the rdb-channel sync's buffer (no rdb channel here)
        "mem_clients_slaves:%d" % srv.repl_feed.replicas_share(),
        "mem_clients_normal:%d" % (m.clients.total - m.clients.totals["slave"]),
        "mem_cluster_links:%d" % (srv.cluster.links_memory() if srv.cluster is not None else 0),
        "mem_aof_buffer:%d" % m.aof_buffer(),
        "mem_allocator:pymalloc",
        # 7.4: the tables being rehashed from, as Redis's dicts would be (keyspace/dictshape.py)
        "mem_overhead_db_hashtable_rehashing:%d" % dictshape.overheads(srv)[1],
        "active_defrag_running:0",
        "lazyfree_pending_objects:%d" % stats.lazyfree_pending,
        "lazyfreed_objects:%d" % stats.lazyfreed_objects,
    ]


def sec_persistence(srv):
    return srv.persistence.info_lines()


def sec_stats(srv):
    s = stats
    pubsub = srv.pubsub
    return [
        "total_connections_received:%d" % s.connections_received,
        "total_commands_processed:%d" % srv.total_commands(),
        "instantaneous_ops_per_sec:%d" % int(srv.instantaneous(srv.ops_samples)),
        "total_net_input_bytes:%d" % s.net_input_bytes,
        "total_net_output_bytes:%d" % s.net_output_bytes,
        "total_net_repl_input_bytes:0",
        "total_net_repl_output_bytes:0",
        "instantaneous_input_kbps:%.2f" % (srv.instantaneous(srv.net_in_samples) / 1024),
        "instantaneous_output_kbps:%.2f" % (srv.instantaneous(srv.net_out_samples) / 1024),
        "instantaneous_input_repl_kbps:0.00",
        "instantaneous_output_repl_kbps:0.00",
        "rejected_connections:%d" % s.rejected_connections,
        "sync_full:%d" % s.sync_full,
        "sync_partial_ok:%d" % s.sync_partial_ok,
        "sync_partial_err:%d" % s.sync_partial_err,
        # (Redis 7.4 puts the hash fields' count first)
        "expired_subkeys:%d" % s.expired_subkeys,
        "expired_keys:%d" % s.expired_keys,
        "expired_keys_active:%d" % s.expired_keys_active,
        "expired_stale_perc:%.2f" % (s.expired_stale_perc * 100),
        "expired_time_cap_reached_count:%d" % s.expired_time_cap_reached_count,
        "expire_cycle_cpu_milliseconds:%d" % s.expire_cycle_cpu_milliseconds,
        "evicted_keys:%d" % s.evicted_keys,
        "evicted_clients:%d" % s.evicted_clients,
        "evicted_scripts:%d" % s.evicted_scripts,       # 7.4: the EVAL script cache's
        "total_eviction_exceeded_time:0",
        "current_eviction_exceeded_time:0",
        "keyspace_hits:%d" % s.keyspace_hits,
        "keyspace_misses:%d" % s.keyspace_misses,
        "pubsub_channels:%d" % (pubsub.num_channels() if pubsub is not None else 0),
        "pubsub_patterns:%d" % (pubsub.num_patterns() if pubsub is not None else 0),
        "pubsubshard_channels:%d" % (pubsub.num_shard_channels() if pubsub is not None else 0),
        "latest_fork_usec:%d" % srv.latest_fork_usec,
        "total_forks:%d" % s.total_forks,
        "migrate_cached_sockets:%d" % len(srv.migrate_sockets),
        "slave_expires_tracked_keys:0",
        "active_defrag_hits:0",
        "active_defrag_misses:0",
        "active_defrag_key_hits:0",
        "active_defrag_key_misses:0",
        "total_active_defrag_time:0",
        "current_active_defrag_time:0",
        "tracking_total_keys:%d" % len(srv.tracking.table),
        "tracking_total_items:%d" % srv.tracking.items,
        "tracking_total_prefixes:%d" % len(srv.tracking.prefixes),
        "unexpected_error_replies:%d" % s.unexpected_error_replies,
        "total_error_replies:%d" % s.total_error_replies,
        "dump_payload_sanitizations:%d" % s.dump_payload_sanitizations,
        "total_reads_processed:%d" % s.total_reads_processed,
        "total_writes_processed:%d" % s.total_writes_processed,
        "io_threaded_reads_processed:0",
        "io_threaded_writes_processed:0",
        "client_query_buffer_limit_disconnections:%d" % s.client_qbuf_limit_disconnections,
        "client_output_buffer_limit_disconnections:%d" % s.client_outbuf_limit_disconnections,
        "reply_buffer_shrinks:%d" % srv.memory.clients.rb_shrinks,
        "reply_buffer_expands:%d" % srv.memory.clients.rb_expands,
    ] + eventloop_lines(srv) + srv.acl.info_lines()


def eventloop_lines(srv):
    """Redis 7.2's eventloop_* fields.  An event loop cycle here is a
    handled read of a client socket or a cron run (uvloop and asyncio give
    no hook around the loop's own iterations); its duration runs from the
    read to the end of its requests and replies.  The commands' time is
    the top-level commands' (commandstats' time less that of the commands
    EXEC and scripts ran inside it)."""
    cmd = sum(c.usec for c in ALL.values()) - stats.el_nested
    return [
        "eventloop_cycles:%d" % (stats.total_reads_processed + stats.el_cron_cycles),
        "eventloop_duration_sum:%d" % int(stats.el_duration * 1e6),
        "eventloop_duration_cmd_sum:%d" % max(0, int(cmd * 1e6)),
        "instantaneous_eventloop_cycles_per_sec:%d" % int(srv.instantaneous(srv.el_samples)),
        "instantaneous_eventloop_duration_usec:%d" % int(srv.instantaneous(srv.el_dur_samples)),
    ] + batch_lines()


def batch_lines():
    """Redis 8.8's figures: the commands per batch (a read that ran
    commands, as CLIENT LIST's parse-batch-*), and the commands that went to
    the slowlog (their count, total and largest time in ms)."""
    n = stats.pb_cnt
    return [
        "commands_per_parse_batch_sum:%d" % stats.pb_sum,
        "commands_per_parse_batch_cnt:%d" % n,
        "commands_per_parse_batch_avg:%.2f" % (stats.pb_sum / n if n else 0.0),
        "slowlog_commands_count:%d" % stats.slowlog_count,
        "slowlog_commands_time_ms_sum:%d" % int(stats.slowlog_ms),
        "slowlog_commands_time_ms_max:%d" % stats.slowlog_ms_max,
    ]


def sec_debug(srv):
    """INFO DEBUG (7.2, not part of ALL / EVERYTHING): the time writing the
    AOF and in cron runs, the longest cycle (usec), the most commands one
    read ran; 7.4's Lua allocator lines give our Lua memory estimate
    (used_memory_vm_eval: no allocator of its own to measure)."""
    lua = LUA_VM_BYTES
    return [
        "eventloop_duration_aof_sum:%d" % int(stats.el_aof * 1e6),
        "eventloop_duration_cron_sum:%d" % int(stats.el_cron * 1e6),
        "eventloop_duration_max:%d" % int(stats.el_max * 1e6),
        "eventloop_cmd_per_cycle_max:%d" % stats.pb_max,
        "allocator_allocated_lua:%d" % lua,
        "allocator_active_lua:%d" % lua,
        "allocator_resident_lua:%d" % lua,
        "allocator_frag_bytes_lua:0",
    ]


def sec_threads(srv):
    """Redis 8's threads section: one line per I/O thread; here the main
    thread, as Redis with io-threads 1 (every client, every read and write)."""
    return ["io_thread_0:clients=%d,reads=%d,writes=%d" % (
        len(srv.clients), stats.total_reads_processed, stats.total_writes_processed)]


def sec_replication(srv):
    link = srv.replica_link
    return link.info() if link is not None else srv.repl_feed.info()


def sec_cpu(srv):
    ru = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return [
        "used_cpu_sys:%.6f" % ru.ru_stime,
        "used_cpu_user:%.6f" % ru.ru_utime,
        "used_cpu_sys_children:%.6f" % ch.ru_stime,
        "used_cpu_user_children:%.6f" % ch.ru_utime,
        "used_cpu_sys_main_thread:%.6f" % ru.ru_stime,
        "used_cpu_user_main_thread:%.6f" % ru.ru_utime,
    ]


def sec_modules(srv):
    return srv.modules.info_lines()


def sec_errorstats(srv):
    return ["errorstat_%s:count=%d" % (k, v) for k, v in sorted(stats.errorstats.items())]


def sec_cluster(srv):
    out = ["cluster_enabled:%d" % int(srv.config["cluster-enabled"])]
    if srv.cluster is not None:
        out += srv.cluster.asm.info_lines()     # Redis 8.4's slot migration fields
    return out


def sec_keyspace(srv):
    out = []
    for db in srv.dbs:
        n = len(db.d)
        if n:
            out.append("db%d:keys=%d,expires=%d,avg_ttl=%d,subexpiry=%d" % (
                db.id, n, len(db.expires), db.avg_ttl, subexpiry_count(db)))
    return out


# INFO keysizes (Redis 8): per database and type, how many keys have a
# size in each power-of-two bin (strings: bytes; lists, sets, sorted sets,
# hashes: elements); the other types are not counted.
KEYSIZES_TYPES = ((b"string", "distrib_strings_sizes"), (b"list", "distrib_lists_items"),
                  (b"set", "distrib_sets_items"), (b"zset", "distrib_zsets_items"),
                  (b"hash", "distrib_hashes_items"))
_BIN_UNITS = ("", "K", "M", "G", "T", "P", "E")
_COUNTED = frozenset(t for t, _ in KEYSIZES_TYPES)


def bin_label(b: int) -> str:
    """A bin's lower bound as Redis prints it: 0, 1, 2 ... 512, 1K ... 512K, 1M ..."""
    if b < 0:
        return "0"
    return "%d%s" % (1 << (b % 10), _BIN_UNITS[b // 10])


def keysizes_lines(db) -> list:
    """The db's histogram lines (none for a type without keys).  A size n
    falls in bin floor(log2 n) (0 has its own bin, -1 here); a hash counts
    the fields it holds, expired ones not yet removed included, as Redis."""
    names = TYPE_NAMES
    vals = db.d.values()
    try:
        # (class, size) pairs counted in C: most keys share a few of them
        pairs = Counter(zip(map(type, vals), map(len, vals)))
    except TypeError:
        # a value without a size (a module type's): those left out first
        pairs = Counter((v.__class__, len(v)) for v in vals if names.get(v.__class__) in _COUNTED)
    hist = {t: {} for t, _ in KEYSIZES_TYPES}
    for (cls, n), k in pairs.items():
        h = hist.get(names.get(cls))
        if h is not None:       # else a type the histograms leave out
            b = n.bit_length() - 1
            h[b] = h.get(b, 0) + k
    out = []
    for t, field in KEYSIZES_TYPES:
        h = hist.get(t)
        if h:
            out.append("db%d_%s:%s" % (db.id, field, ",".join(
                "%s=%d" % (bin_label(b), h[b]) for b in sorted(h))))
    return out


def sec_keysizes(srv):
    out = []
    for db in srv.dbs:
        if db.d:
            out += keysizes_lines(db)
    return out


def sec_commandstats(srv):
    out = []
    for name in sorted(ALL):
        cmd = ALL[name]
        if cmd.calls or cmd.rejected_calls or cmd.failed_calls:
            usec = int(cmd.usec * 1e6)
            line = "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d" % (
                name, cmd.calls, usec, usec / cmd.calls if cmd.calls else 0.0,
                cmd.rejected_calls, cmd.failed_calls)
            sl = cmd.slowlog_stats
            if sl is not None:
                # 8.8: once the command went to the slowlog
                line += ",slowlog_count=%d,slowlog_time_ms_sum=%d,slowlog_time_ms_max=%d" % (
                    sl[0], int(sl[1]), sl[2])
            out.append(line)
    return out


def percentile_usec(hist, p: float) -> float:
    """Upper bound (usec) of the bucket holding percentile p (0..100)."""
    total = sum(hist)
    if not total:
        return 0.0
    want = total * p / 100.0
    cum = 0
    for k, n in enumerate(hist):
        cum += n
        if n and cum >= want:
            return (1024 << k) / 1000.0
    return (1024 << (len(hist) - 1)) / 1000.0


def latencystats_lines(srv):
    """INFO latencystats lines from the per-command histograms."""
    pcts = srv.config["latency-tracking-info-percentiles"] or []
    out = []
    for name in sorted(ALL):
        cmd = ALL[name]
        if not any(cmd.hist):
            continue
        parts = []
        for p in pcts:
            label = ("%f" % p).rstrip("0").rstrip(".")
            parts.append("p%s=%.3f" % (label, percentile_usec(cmd.hist, p)))
        out.append("latency_percentiles_usec_%s:%s" % (name, ",".join(parts)))
    return out


def sec_latencystats(srv):
    # the section is empty while latency-tracking is off, as in Redis (the
    # histograms are kept)
    if srv.config["latency-tracking"]:
        return latencystats_lines(srv)
    return []


SECTIONS.update({
    "server": sec_server, "clients": sec_clients, "memory": sec_memory,
    "persistence": sec_persistence, "threads": sec_threads, "stats": sec_stats,
    "replication": sec_replication, "keysizes": sec_keysizes, "debug": sec_debug,
    "cpu": sec_cpu, "modules": sec_modules, "errorstats": sec_errorstats,
    "cluster": sec_cluster, "keyspace": sec_keyspace, "commandstats": sec_commandstats,
    "latencystats": sec_latencystats,
})

_TITLES = {"cpu": "CPU", "errorstats": "Errorstats", "commandstats": "Commandstats",
           "latencystats": "Latencystats"}


def gen_info(srv, args) -> str:
    names = [a.decode("utf-8", "replace").lower() for a in args]
    if not names or names == ["default"]:
        want = list(DEFAULT_SECTIONS)
    else:
        want = []
        for n in names:
            if n == "all":
                want += [s for s in ALL_SECTIONS if s not in want and s not in ON_DEMAND]
            elif n == "everything":
                want += [s for s in ALL_SECTIONS if s not in want]
            elif n == "default":
                want += [s for s in DEFAULT_SECTIONS if s not in want]
            elif n == "module_list":      # Redis's name of the Modules section
                if "modules" not in want:
                    want.append("modules")
            elif n in SECTIONS and n not in want:
                want.append(n)
        order = {s: i for i, s in enumerate(ALL_SECTIONS)}
        want.sort(key=lambda s: order.get(s, 99))
    parts = []
    for s in want:
        lines = SECTIONS[s](srv)
        title = _TITLES.get(s, s.capitalize())
        parts.append("# %s\r\n%s" % (title, "".join(l + "\r\n" for l in lines)))
    return "\r\n".join(parts)
