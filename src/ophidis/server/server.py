"""The Server: the contract of declared state and subsystems (see
docs/ARCHITECTURE.md), the configuration bindings cached for hot paths, and
start-up.  What the server does is in the mixins beside it: dispatch.py
(processCommand's checks and call), clients.py (accepting, closing, output
limits), pause.py, monitor.py (MONITOR, slowlog, latency events), cron.py,
shutdown.py, and net/listeners.py (the listening sockets).
"""

from __future__ import annotations

import asyncio
import gc
import locale
import os
import signal
import sys
import time
from functools import partial
from collections import OrderedDict, deque

from .. import compiled, crash, doctor, log, oomscore, proctitle, sysinfo
from ..acl import Acl
from ..cluster.migrate_sockets import MigrateSockets
from ..cluster.state import Cluster
from ..cmdtable.registry import TABLE, rename_command
from ..commands import load_all
from ..config import Config, ConfigError
from ..keyspace import db as db_mod
from ..keyspace import notify
from ..keyspace.blocking import BlockingHandler
from ..keyspace.db import Database
from ..keyspace.tracking import Tracking
from ..memory import Memory
from ..metrics import Metrics
from ..modules import Modules
from ..net import client as client_mod
from ..net.client import Client
from ..net.listeners import Listeners
from ..net.tls import Tls
from ..persistence.aof import Aof
from ..persistence.snapshot import Persistence
from ..pubsub import PubSub
from ..replication import replica
from ..replication.master import ReplFeed
from ..replication.propagate import Propagator
from ..types import containers
from ..scripting.functions import Functions
from .clients import Clients
from .cron import Cron
from .dispatch import Dispatch
from ..hotkeys import HotKeys
from .monitor import Monitor
from .pause import Pause
from .shutdown import Shutdown

# The start-up logo: our own art, Redis's fields (version, bits, mode, port,
# PID), as redis-server's asciilogo.h lays them out.
LOGO = r"""
                 __
        ______  / o\__         Ophidis %(version)s (Redis %(redis)s, %(sha)s/%(dirty)s) %(bits)s bit
      /  __   \/   ___\>
     /  /  \   \__/            Running in %(mode)s mode
    (  (    \______\__         Port: %(port)d
     \  \__________   \        PID: %(pid)d
      \_______________/
"""


# The fields the compiled layer reads on its hot paths (server/_core.pxd
# declares them) are C fields of its ServerCore when it is built, slots
# otherwise.
class _NoCore:
    __slots__ = ()


_core = compiled.load("server._core")
if _core is not None:
    _ServerBase, _C_FIELDS = _core.ServerCore, frozenset(compiled.fields("server/_core.pxd", "ServerCore"))
else:
    _ServerBase, _C_FIELDS = _NoCore, frozenset()

FIELDS = (
    # configuration and values cached from it for hot paths
    "config", "config_file", "executable", "client_query_buffer_limit",
    "proto_max_bulk_len", "maxclients", "maxmemory", "hz", "min_replicas",
    "obuf_limits", "obuf_normal_limit", "obuf_soft",
    # event loop, listeners, clients
    "loop", "listeners", "unix_path", "clients", "_next_id", "monitors",
    "pause_type", "pause_end", "paused_clients", "paused_expire",
    # keyspace
    "dbs", "ready_keys", "command_table", "dirty", "active_expire_enabled",
    # statistics, slowlog, latency
    "start_time", "start_monotonic", "cron_loops", "pause_cron", "ops_samples",
    "net_in_samples", "net_out_samples", "el_samples", "el_dur_samples", "_last_sample", "slowlog",
    "slowlog_next_id",
    "latency_events",
    # persistence state (written by persistence/snapshot.py and aof.py)
    "loading", "async_loading", "lastsave", "lastbgsave_ok", "last_bgsave_status_ok", "bgsave_in_progress",
    "child_type", "latest_fork_usec", "rdb_aof_base", "write_denied",
    # replication state (replica.py, commands/replication.py)
    "run_id", "replid", "is_replica", "applying_master",
    # memory state (memory.py)
    "mem_track", "mem_oom", "used_memory_peak", "mem_clients_normal",
    # scripting state (lua.py, commands/scripting.py)
    "script_busy", "lua_eval", "lua_scripts", "lua_scripts_lru", "cached_scripts", "lua_functions",
    # DEBUG knobs
    "quicklist_packed_threshold", "reply_buffer_peak_reset_time",
    "reply_buffer_resizing_enabled", "skip_checksum_validation", "aof_flush_sleep", "dict_resizing",
    "script_disable_deny_script",
    # hooks that subsystems register on
    "propagate_hooks", "cron_hooks", "startup_hooks", "shutdown_hooks", "shutdown_checks",
    # shutdown
    "shutdown_asap", "shutdown_wait", "exit_code", "_stopping",
    # subsystems, in install order
    "modules",                     # modules.Modules: loaded modules (loadmodule: before the ACL users, as Redis)
    "acl",                         # acl.Acl: users, ACL LOG, the ACL file (every client has a user)
    "blocking_handler", "pubsub", "propagator", "functions", "persistence", "aof",
    "tracking", "memory", "lazyfree", "repl_feed", "replica_link", "migrate_sockets", "hotkeys",
    "cluster", "metrics", "tls",
)


class Server(_ServerBase, Clients, Dispatch, Pause, Monitor, Cron, Listeners, Shutdown):
    """The server contract: every piece of server-wide state and every
    subsystem is a declared field (FIELDS), set in ``__init__`` (a slot or
    a C field: an attribute nobody declared cannot be set from outside).  Subsystems are
    created in one ordered list at the end of ``__init__``; one that is off
    is a declared ``None``.  A subsystem writes only the state it owns
    (the comments say who)."""

    # every field of FIELDS: a slot, or a C field of the compiled base
    __slots__ = tuple(n for n in FIELDS if n not in _C_FIELDS)

    def __init__(self, config: Config):
        self.config = config
        self.config_file = None        # set by main
        self.executable = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
        self.loop = None
        self.listeners = []
        self.unix_path = None
        self.start_time = time.time()
        self.start_monotonic = time.monotonic()
        self.clients: dict[int, Client] = {}
        self._next_id = 0
        self.monitors = []
        self.pause_type = None         # None, "all", "write"
        self.pause_end = 0.0
        self.paused_clients = deque()
        self.paused_expire = False
        self.dbs = []
        self.ready_keys = []
        client_mod.set_ready_list(self.ready_keys)
        self.command_table = TABLE
        self.dirty = 0
        self.active_expire_enabled = True    # DEBUG SET-ACTIVE-EXPIRE
        self.cron_loops = 0
        self.pause_cron = 0                  # DEBUG PAUSE-CRON
        self.ops_samples = deque(maxlen=16)
        self.net_in_samples = deque(maxlen=16)
        self.net_out_samples = deque(maxlen=16)
        self.el_samples = deque(maxlen=16)        # eventloop cycles per second
        self.el_dur_samples = deque(maxlen=16)    # mean eventloop cycle, usec
        self._last_sample = None
        self.slowlog = deque()
        self.slowlog_next_id = 0
        self.latency_events = {}       # name -> deque of (ts, ms), plus max
        self.obuf_limits = {}
        self.obuf_normal_limit = 0
        self.obuf_soft = {}            # client id -> client over a soft limit
        # persistence
        self.loading = False
        self.async_loading = False     # a replica loading its master's payload while serving the old data
        self.lastsave = int(time.time())
        self.lastbgsave_ok = True
        self.last_bgsave_status_ok = True
        self.bgsave_in_progress = False
        self.child_type = None         # "rdb" / "aof" while a forked child runs
        self.latest_fork_usec = 0
        self.rdb_aof_base = 0          # the aof-base aux field of the next RDB written
        self.write_denied = None       # MISCONF error while the AOF cannot be written
        # replication
        self.run_id = os.urandom(20).hex()
        self.replid = self.run_id
        self.is_replica = False
        self.applying_master = False   # a replica running its master's stream
        self.min_replicas = 0          # min-replicas-to-write (0: off, or max-lag 0)
        # memory
        self.mem_track = None          # memory.Memory while maxmemory or an LRU/LFU policy is set
        self.mem_oom = False           # over maxmemory with nothing to evict (general path on)
        self.used_memory_peak = 0
        self.mem_clients_normal = 0
        # scripting
        self.script_busy = None        # the -BUSY error while a script runs too long
        self.lua_eval = None           # the EVAL engine, created on first use
        self.lua_scripts = {}          # sha -> Script (SCRIPT LOAD / EVAL)
        self.lua_scripts_lru = OrderedDict()   # the scripts EVAL made, least recently run first
        self.cached_scripts = 0
        self.lua_functions = None      # the FUNCTION engine, created on first use
        # DEBUG knobs
        self.quicklist_packed_threshold = 0     # (0: by list-max-listpack-size)
        self.reply_buffer_peak_reset_time = 5000
        self.reply_buffer_resizing_enabled = 1
        self.dict_resizing = 1             # DEBUG DICT-RESIZING (server.dict_resizing)
        self.skip_checksum_validation = 0
        self.aof_flush_sleep = 0
        self.script_disable_deny_script = 0
        # hooks
        self.propagate_hooks = []      # AOF / replication feeds (propagate.Propagator)
        self.cron_hooks = [self._obuf_cron]   # extra per-cron callables
        self.startup_hooks = []        # after listening (RDB / AOF loading); a coroutine returned is awaited
        self.shutdown_hooks = []
        self.shutdown_checks = []      # fn(force) -> None, or refuse (AOF being created)
        self.shutdown_asap = None
        self.shutdown_wait = None      # (deadline, flags, clients) while waiting for replicas
        self.exit_code = 0
        self._stopping = False
        self.cluster = None            # set at the end of the install list
        self.metrics = None            # metrics.Metrics while metrics-port is set (the install list's last)
        self.tls = None                # set first in the install list
        self.acl = None                # set after modules in the install list (their commands exist first)
        # cached config values used on hot paths
        self.client_query_buffer_limit = 1 << 30
        self.proto_max_bulk_len = 512 << 20
        self.maxclients = 10000
        self.maxmemory = 0
        self.hz = 10
        load_all()
        for old, new, linenum, line in config.pending_renames:
            err = rename_command(os.fsencode(old), os.fsencode(new))
            if err is not None:
                raise ConfigError(linenum, line, err)
        self._bind_config()
        for i in range(config["databases"]):
            self.dbs.append(Database(i, self))
        # The subsystems, in dependency order.  Each constructor may register
        # its own hooks (cron, startup, shutdown, config changes) but sets no
        # attribute on the server: the server assigns what it returns.
        self.tls = Tls(self)           # the TLS contexts (configured when a tls-* feature is on)
        self.modules = Modules(self)   # loads the loadmodule lines: ACL users may name their commands
        self.acl = Acl(self)
        self.blocking_handler = BlockingHandler(self)
        self.pubsub = PubSub(self)
        self.propagator = Propagator(self)
        self.functions = Functions(self)
        self.persistence = Persistence(self)
        self.aof = Aof(self)
        self.tracking = Tracking(self)
        self.hotkeys = HotKeys(self)   # HOTKEYS (8.6): a command wrapper while a session is active
        self.memory = Memory(self)
        self.lazyfree = self.memory.lazyfree
        self.repl_feed = ReplFeed(self)
        self.replica_link = None       # replica.ReplicaLink while REPLICAOF host port
        self.migrate_sockets = MigrateSockets(self)   # MIGRATE's connections to targets
        # cluster.Cluster with cluster-enabled yes, else None
        self.cluster = Cluster(self) if config["cluster-enabled"] else None
        # /metrics (an Ophidis extension) with metrics-port set, else None
        self.metrics = Metrics(self) if config["metrics-port"] else None
        self.update_server_slow()      # every command routed in cluster mode

    def i_am_master(self) -> bool:
        """iAmMaster: not a replica (in a cluster: myself a master, as
        nodes.conf says even before the link to the master is up)."""
        if self.cluster is not None:
            return self.cluster.myself.is_master
        return not self.is_replica

    def running_script(self):
        """The context of the script or function running now, or None."""
        for eng in (self.lua_eval, self.lua_functions):
            if eng is not None and eng.ctx is not None:
                return eng.ctx
        return None

    # -- configuration hooks --------------------------------------------------------
    def _bind_config(self):
        cfg = self.config

        def follow(name, fn):
            # fn(value) now, and on every change of the directive
            cfg.on_change(name, fn)
            fn(cfg[name])

        # directives copied into fields read on hot paths
        for name, field in (("client-query-buffer-limit", "client_query_buffer_limit"),
                            ("proto-max-bulk-len", "proto_max_bulk_len"), ("maxclients", "maxclients")):
            follow(name, partial(setattr, self, field))
        follow("slowlog-log-slower-than", client_mod.set_slowlog_threshold)
        follow("list-max-listpack-size", containers.set_list_fill)

        def upd_slowlog_len(v):
            while len(self.slowlog) > v:
                self.slowlog.pop()
        cfg.on_change("slowlog-max-len", upd_slowlog_len)

        follow("latency-monitor-threshold", client_mod.set_latency_monitor)
        follow("latency-tracking", client_mod.set_latency_tracking)
        follow("notify-keyspace-events", notify.set_flags)

        def upd_maxmemory(v):
            self.maxmemory = v
            self.update_server_slow()
        cfg.on_change("maxmemory", upd_maxmemory)

        def upd_min_replicas(v):
            self.min_replicas = cfg["min-replicas-to-write"] if cfg["min-replicas-max-lag"] else 0
            self.update_server_slow()
        cfg.on_change("min-replicas-to-write", upd_min_replicas)
        cfg.on_change("min-replicas-max-lag", upd_min_replicas)
        self.min_replicas = cfg["min-replicas-to-write"] if cfg["min-replicas-max-lag"] else 0

        def upd_lazy_server_del(v):
            db_mod.set_lazy_server_del(bool(v))
        follow("lazyfree-lazy-server-del", upd_lazy_server_del)
        self.maxmemory = cfg["maxmemory"]
        cfg.on_change("loglevel", log.set_level)

        def upd_locale(v):
            # locale-collate (7.2): the process's LC_COLLATE ("" the environment's)
            try:
                locale.setlocale(locale.LC_COLLATE, v)
            except locale.Error:
                raise ConfigError("Invalid locale name") from None
        cfg.on_change("locale-collate", upd_locale)
        try:
            upd_locale(cfg["locale-collate"])
        except ConfigError:
            log.warning("Failed to configure LOCALE for invalid locale name.")
            log.flush_and_exit(1)

        def upd_hz(v):
            self.hz = min(max(v, 1), 500)
        follow("hz", upd_hz)

        def upd_cobl(v):
            self.obuf_limits = v
            # below the smallest limit of any class nothing can be over
            client_mod.set_output_floor(min([x for (h, s, _) in v.values() for x in (h, s) if x] or [0]))
            # a batch of pipelined requests is cut at this much output
            self.obuf_normal_limit = min([x for x in v["normal"][:2] if x] or [0])
        follow("client-output-buffer-limit", upd_cobl)

        # the listeners follow port, bind and tls-port; then the process
        # title, which shows the address (with set-proc-title yes, as Redis)
        def upd_port(v):
            if self.loop is not None:
                self._rebind_tcp()
                self.listeners_retitle()
        cfg.on_change("port", upd_port)

        def upd_bind(v):
            if self.loop is not None:
                self._rebind_tcp("bind")
                if cfg["tls-port"]:
                    self._rebind_tls(close_first=True)
                self.listeners_retitle()
        cfg.on_change("bind", upd_bind)

        def upd_oom_score(v):
            if not self.set_oom_score():
                raise ConfigError("Failed to set current oom_score_adj. Check server logs.")
        cfg.on_change("oom-score-adj", upd_oom_score)
        cfg.on_change("oom-score-adj-values", upd_oom_score)

        def upd_tls_port(v):
            if self.loop is not None:
                self._rebind_tls()
                self.listeners_retitle()
        cfg.on_change("tls-port", upd_tls_port)

        def upd_proc_title(v):
            # whatever set-proc-title says, as Redis (updateProcTitleTemplate)
            if self.loop is not None and not self.set_proc_title():
                raise ConfigError("failed to set process title")
        cfg.on_change("proc-title-template", upd_proc_title)

    def set_proc_title(self) -> bool:
        """redisSetProcTitle for the server itself (proctitle.py)."""
        return proctitle.apply(self.config, proctitle.invoked_as())

    def listeners_retitle(self):
        """The title again once the listeners changed or exist (start-up),
        with set-proc-title yes."""
        if self.config["set-proc-title"]:
            self.set_proc_title()

    def set_oom_score(self, process_class=None) -> bool:
        """setOOMScoreAdj: the score of this process's class (a master's or
        a replica's when not given) as oom-score-adj says; False when /proc
        refused (logged)."""
        if process_class is None:
            process_class = oomscore.REPLICA if self.is_replica else oomscore.MASTER
        return oomscore.apply(self.config["oom-score-adj"], self.config["oom-score-adj-values"], process_class)

    def update_server_slow(self):
        slow = bool(self.mem_oom or self.is_replica or self.min_replicas or self.monitors or self.pause_type or self.script_busy
                    or self.loading or self.write_denied is not None
                    or (not self.lastbgsave_ok and self.config["stop-writes-on-bgsave-error"]))
        client_mod.set_server_slow(slow)
        client_mod.set_propagator(self.propagator if self.propagate_hooks else None)

    # -- start --------------------------------------------------------------------------
    def os_warnings(self):
        """Redis's start-up warnings (doctor.py has the checks with their fixes)."""
        if doctor.read_value(doctor.OVERCOMMIT) not in (None, "1"):
            log.warning(
                "WARNING Memory overcommit must be enabled! Without it, a background save or "
                "replication may fail under low memory condition. To fix this issue add "
                "'vm.overcommit_memory = 1' to /etc/sysctl.conf and then reboot or run the command "
                "'sysctl vm.overcommit_memory=1' for this to take effect.")
        if "[always]" in (doctor.read_value(doctor.THP) or ""):
            log.warning(
                "WARNING You have Transparent Huge Pages (THP) support enabled in your kernel. "
                "This will create latency and memory usage issues with background saving. "
                "To fix this issue run the command 'echo madvise > "
                "/sys/kernel/mm/transparent_hugepage/enabled' as root, and add it to your "
                "/etc/rc.local in order to retain the setting after a reboot.")
        somax = doctor.read_value(doctor.SOMAXCONN)
        if somax is not None and somax.isdigit() and int(somax) < self.config["tcp-backlog"]:
            log.warning(
                "WARNING: The TCP backlog setting of %d cannot be enforced because "
                "/proc/sys/net/core/somaxconn is set to the lower value of %d." % (
                    self.config["tcp-backlog"], int(somax)))

    def banner(self):
        """redisAsciiArt: the logo when the log goes to a terminal or
        ``always-show-logo yes`` (Redis's test suite finds a started server
        by its `` PID: <pid>`` line), else one line."""
        cfg = self.config
        port = cfg["port"] or cfg["tls-port"]
        mode = "cluster" if cfg["cluster-enabled"] else "standalone"
        show = cfg["always-show-logo"] or (
            not cfg["syslog-enabled"] and not cfg["logfile"] and sys.stdout.isatty())
        if not show:
            log.notice("Running mode=%s, port=%d." % (mode, port))
            return
        log.log(log.NOTICE, LOGO % {
            "version": sysinfo.OPHIDIS_VERSION, "redis": sysinfo.REDIS_VERSION, "sha": sysinfo.GIT_SHA1,
            "dirty": sysinfo.GIT_DIRTY, "bits": sysinfo.arch_bits(), "mode": mode, "port": port,
            "pid": os.getpid()}, raw=True)

    async def run(self):
        self.loop = asyncio.get_running_loop()
        crash.install(self)
        # Redis's order (main): listen, the process title, the logo (its " PID: " line is how
        # Redis's test suite sees a started server, even one that then
        # fails to load its files), "Server initialized", the OS warnings,
        # loading; clients connecting meanwhile wait for the load to end
        # (served with -LOADING while a file loads), and none is served
        # before "Ready to accept connections" is logged.
        await self.listen()
        self.listeners_retitle()
        proctitle.usable()      # without setproctitle: said once, here
        self.banner()
        log.warning("Server initialized")
        self.os_warnings()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.on_shutdown_signal)
        for h in self.startup_hooks:
            r = h()
            if r is not None:       # a coroutine: loading while serving clients
                await r
        log.notice("Ready to accept connections")
        self.set_oom_score()
        await self.serve_clients()
        ro = self.config["replicaof"]
        if ro:     # "replicaof <host> <port>" in the configuration
            replica.set_master(self, ro[0], int(ro[1]), stream_db=self.repl_feed.loaded_stream_db)
        asyncio.ensure_future(self.cron())
        gc.freeze()
        install_gc_guard()


_gc_start = [0.0]


def _gc_callback(phase, info):
    """A full collection that had to walk a large keyspace (millions of
    containers: hashes, sets, lists...) stalls every client.  When one takes
    more than 20 ms, move everything that survived it to the permanent
    generation (gc.freeze): later collections only look at new objects.
    Keyspace values never form reference cycles; clients break theirs on
    disconnect (Client.connection_lost), so little cyclic garbage can be
    kept alive by this."""
    if info.get("generation") != 2:
        return
    if phase == "start":
        _gc_start[0] = time.perf_counter()
    elif time.perf_counter() - _gc_start[0] > 0.02:
        gc.freeze()


def install_gc_guard():
    if _gc_callback not in gc.callbacks:
        gc.callbacks.append(_gc_callback)


