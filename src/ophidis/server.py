"""The server: listeners, command processing checks, cron, signals, shutdown.

``Server.process_command`` is Redis's processCommand: every check a request
goes through before ``call`` runs it (unknown command, arity, auth, MULTI
queueing, pub/sub context, OOM, MISCONF, loading, busy scripts, pauses).
The client's fast path (client.py) skips it only when none of those checks
can apply.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import socket
import sys
import time
from collections import deque
from time import perf_counter

from . import log
from . import client as client_mod
from . import db as db_mod
from . import notify
from .blocking import BlockingHandler
from .client import Client
from .commands import ALL, TABLE, load_all
from .commands.pubsub import PubSub
from .commands.replication import ReplFeed
from .commands.scripting import Functions
from .config import Config
from .db import Database, stats
from .errors import NOAUTH, OOM, RedisError
from .memory import Memory
from .persistence.aof import Aof
from .persistence.snapshot import Persistence
from .propagate import Propagator
from .protocol import QUEUED, sdscatrepr
from .tracking import Tracking
from .watch import unwatch_all

READONLY = RedisError("READONLY You can't write against a read only replica.")
# Output a client that has not authenticated may leave unsent (Redis: its
# 16 KB reply buffer plus 1 KB of reply list) before it is disconnected.
UNAUTH_OUTPUT_LIMIT = 16 * 1024 + 1024
NOREPLICAS = RedisError("NOREPLICAS Not enough good replicas to write.")
MASTERDOWN = RedisError("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")

DENIED = (
    b"-DENIED Redis is running in protected mode because protected "
    b"mode is enabled and no password is set for the default user. "
    b"In this mode connections are only accepted from the loopback interface. "
    b"If you want to connect from external computers to Redis you "
    b"may adopt one of the following solutions: "
    b"1) Just disable protected mode sending the command "
    b"'CONFIG SET protected-mode no' from the loopback interface "
    b"by connecting to Redis from the same host the server is "
    b"running, however MAKE SURE Redis is not publicly accessible "
    b"from internet if you do so. Use CONFIG REWRITE to make this "
    b"change permanent. "
    b"2) Alternatively you can just disable the protected mode by "
    b"editing the Redis configuration file, and setting the protected "
    b"mode option to 'no', and then restarting the server. "
    b"3) If you started the server manually just for testing, restart "
    b"it with the '--protected-mode no' option. "
    b"4) Setup a an authentication password for the default user. "
    b"NOTE: You only need to do one of the above things in order for "
    b"the server to start accepting connections from the outside.\r\n")

class SlowlogEntry:
    __slots__ = ("id", "time", "duration", "argv", "addr", "name")


class Server:
    """The server contract: every piece of server-wide state and every
    subsystem is a declared slot, set in ``__init__`` (``__slots__``: an
    attribute nobody declared cannot be set from outside).  Subsystems are
    created in one ordered list at the end of ``__init__``; one that is off
    is a declared ``None``.  A subsystem writes only the state it owns
    (the comments say who)."""

    __slots__ = (
        # configuration and values cached from it for hot paths
        "config", "config_file", "executable", "requirepass", "client_query_buffer_limit",
        "proto_max_bulk_len", "maxclients", "maxmemory", "hz", "min_replicas",
        "obuf_check", "obuf_limits", "obuf_floor", "obuf_normal_limit", "obuf_soft",
        # event loop, listeners, clients
        "loop", "listeners", "unix_path", "clients", "_next_id", "monitors",
        "pause_type", "pause_end", "paused_clients", "paused_expire",
        # keyspace
        "dbs", "ready_keys", "command_table", "dirty", "active_expire_enabled",
        # statistics, slowlog, latency
        "start_time", "start_monotonic", "cron_loops", "pause_cron", "ops_samples",
        "net_in_samples", "net_out_samples", "_last_sample", "slowlog", "slowlog_next_id",
        "latency_events",
        # persistence state (written by persistence/snapshot.py and aof.py)
        "loading", "lastsave", "lastbgsave_ok", "last_bgsave_status_ok", "bgsave_in_progress",
        "child_type", "latest_fork_usec", "rdb_aof_base", "write_denied",
        # replication state (replica.py, commands/replication.py)
        "run_id", "replid", "is_replica", "applying_master",
        # memory state (memory.py)
        "mem_track", "mem_oom", "used_memory_peak", "mem_clients_normal",
        "lazyfree_pending", "lazyfreed_objects",
        # scripting state (lua.py, commands/scripting.py)
        "script_busy", "lua_eval", "lua_scripts", "cached_scripts", "lua_functions",
        # DEBUG knobs
        "quicklist_packed_threshold", "reply_buffer_peak_reset_time",
        "reply_buffer_resizing_enabled", "skip_checksum_validation", "aof_flush_sleep",
        "script_disable_deny_script",
        # hooks that subsystems register on
        "propagate_hooks", "cron_hooks", "startup_hooks", "shutdown_hooks", "shutdown_checks",
        # shutdown
        "shutdown_asap", "exit_code", "_stopping",
        # subsystems, in install order
        "blocking_handler", "pubsub", "propagator", "functions", "persistence", "aof",
        "tracking", "memory", "lazyfree", "repl_feed", "replica_link",
    )

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
        self._last_sample = None
        self.slowlog = deque()
        self.slowlog_next_id = 0
        self.latency_events = {}       # name -> deque of (ts, ms), plus max
        self.obuf_check = False
        self.obuf_limits = {}
        self.obuf_floor = 0
        self.obuf_normal_limit = 0
        self.obuf_soft = {}            # client id -> client over a soft limit
        # persistence
        self.loading = False
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
        self.lazyfree_pending = 0
        self.lazyfreed_objects = 0
        # scripting
        self.script_busy = None        # the -BUSY error while a script runs too long
        self.lua_eval = None           # the EVAL engine, created on first use
        self.lua_scripts = {}          # sha -> Script (SCRIPT LOAD / EVAL)
        self.cached_scripts = 0
        self.lua_functions = None      # the FUNCTION engine, created on first use
        # DEBUG knobs
        self.quicklist_packed_threshold = 1 << 30
        self.reply_buffer_peak_reset_time = 5000
        self.reply_buffer_resizing_enabled = 1
        self.skip_checksum_validation = 0
        self.aof_flush_sleep = 0
        self.script_disable_deny_script = 0
        # hooks
        self.propagate_hooks = []      # AOF / replication feeds (propagate.Propagator)
        self.cron_hooks = [self._obuf_cron]   # extra per-cron callables
        self.startup_hooks = []        # run before listening (RDB / AOF loading)
        self.shutdown_hooks = []
        self.shutdown_checks = []      # fn(force) -> None, or refuse (AOF being created)
        self.shutdown_asap = None
        self.exit_code = 0
        self._stopping = False
        # cached config values used on hot paths
        self.requirepass = None
        self.client_query_buffer_limit = 1 << 30
        self.proto_max_bulk_len = 512 << 20
        self.maxclients = 10000
        self.maxmemory = 0
        self.hz = 10
        load_all()
        self._bind_config()
        for i in range(config["databases"]):
            self.dbs.append(Database(i, self))
        # The subsystems, in dependency order.  Each constructor may register
        # its own hooks (cron, startup, shutdown, config changes) but sets no
        # attribute on the server: the server assigns what it returns.
        self.blocking_handler = BlockingHandler(self)
        self.pubsub = PubSub(self)
        self.propagator = Propagator(self)
        self.functions = Functions(self)
        self.persistence = Persistence(self)
        self.aof = Aof(self)
        self.tracking = Tracking(self)
        self.memory = Memory(self)
        self.lazyfree = self.memory.lazyfree
        self.repl_feed = ReplFeed(self)
        self.replica_link = None       # replica.ReplicaLink while REPLICAOF host port

    def running_script(self):
        """The context of the script or function running now, or None."""
        for eng in (self.lua_eval, self.lua_functions):
            if eng is not None and eng.ctx is not None:
                return eng.ctx
        return None

    # -- configuration hooks --------------------------------------------------------
    def _bind_config(self):
        cfg = self.config

        def upd_pass(v):
            self.requirepass = v
        cfg.on_change("requirepass", upd_pass)
        upd_pass(cfg["requirepass"])

        def upd_qbuf(v):
            self.client_query_buffer_limit = v
        cfg.on_change("client-query-buffer-limit", upd_qbuf)
        upd_qbuf(cfg["client-query-buffer-limit"])

        def upd_bulk(v):
            self.proto_max_bulk_len = v
        cfg.on_change("proto-max-bulk-len", upd_bulk)
        upd_bulk(cfg["proto-max-bulk-len"])

        def upd_slowlog(v):
            client_mod.set_slowlog_threshold(v)
        cfg.on_change("slowlog-log-slower-than", upd_slowlog)
        upd_slowlog(cfg["slowlog-log-slower-than"])

        def upd_slowlog_len(v):
            while len(self.slowlog) > v:
                self.slowlog.pop()
        cfg.on_change("slowlog-max-len", upd_slowlog_len)

        cfg.on_change("latency-monitor-threshold", client_mod.set_latency_monitor)
        client_mod.set_latency_monitor(cfg["latency-monitor-threshold"])
        cfg.on_change("latency-tracking", client_mod.set_latency_tracking)
        client_mod.set_latency_tracking(cfg["latency-tracking"])

        def upd_notify(v):
            notify.flags = v
        cfg.on_change("notify-keyspace-events", upd_notify)
        upd_notify(cfg["notify-keyspace-events"])

        def upd_maxclients(v):
            self.maxclients = v
        cfg.on_change("maxclients", upd_maxclients)
        upd_maxclients(cfg["maxclients"])

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
            db_mod.lazy_server_del = bool(v)
        cfg.on_change("lazyfree-lazy-server-del", upd_lazy_server_del)
        upd_lazy_server_del(cfg["lazyfree-lazy-server-del"])
        self.maxmemory = cfg["maxmemory"]

        def upd_loglevel(v):
            log.set_level(v)
        cfg.on_change("loglevel", upd_loglevel)

        def upd_hz(v):
            self.hz = min(max(v, 1), 500)
        cfg.on_change("hz", upd_hz)
        upd_hz(cfg["hz"])

        def upd_cobl(v):
            self.obuf_check = any(h or s for (h, s, _) in v.values())
            self.obuf_limits = v
            # below the smallest limit of any class nothing can be over
            self.obuf_floor = min([x for (h, s, _) in v.values() for x in (h, s) if x] or [0])
            # a batch of pipelined requests is cut at this much output
            self.obuf_normal_limit = min([x for x in v["normal"][:2] if x] or [0])
        cfg.on_change("client-output-buffer-limit", upd_cobl)
        upd_cobl(cfg["client-output-buffer-limit"])

        def upd_port(v):
            if self.loop is not None:
                self._rebind_tcp()
        cfg.on_change("port", upd_port)

        def upd_bind(v):
            if self.loop is not None:
                self._rebind_tcp("bind")
        cfg.on_change("bind", upd_bind)

    def update_server_slow(self):
        slow = bool(self.mem_oom or self.is_replica or self.min_replicas or self.monitors or self.pause_type or self.script_busy
                    or self.loading or self.propagate_hooks
                    or (not self.lastbgsave_ok and self.config["stop-writes-on-bgsave-error"]))
        client_mod.set_server_slow(slow)

    # -- clients ----------------------------------------------------------------------
    def next_client_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def client_connected(self, c: Client, transport):
        stats.connections_received += 1
        sock = transport.get_extra_info("socket")
        peer = transport.get_extra_info("peername")
        local = transport.get_extra_info("sockname")
        if sock is not None:
            try:
                c.fd = sock.fileno()
            except (OSError, ValueError):
                c.fd = -1
        if isinstance(peer, tuple):
            host = peer[0]
            c.addr = ("[%s]:%d" if ":" in host else "%s:%d") % (host, peer[1])
            c.laddr = ("[%s]:%d" if ":" in local[0] else "%s:%d") % (local[0], local[1])
            if sock is not None:
                try:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    ka = self.config["tcp-keepalive"]
                    if ka > 0:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
                        if hasattr(socket, "TCP_KEEPIDLE"):
                            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, ka)
                            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, max(1, ka // 3))
                            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3)
                except OSError:
                    pass
        else:
            c.is_unix = True
            c.addr = "%s:0" % (self.unix_path or "")
            c.laddr = c.addr
            host = None
        if len(self.clients) >= self.maxclients:
            transport.write(b"-ERR max number of clients reached\r\n")
            stats.rejected_connections += 1
            c.closing = True
            transport.close()
            return
        if (host is not None and self.config["protected-mode"] and not self.requirepass
                and not _is_loopback(host)):
            transport.write(DENIED)
            stats.rejected_connections += 1
            c.closing = True
            transport.close()
            return
        self.clients[c.id] = c
        if log.enabled(log.DEBUG):
            log.debug("Accepted %s" % c.addr)

    def client_disconnected(self, c: Client):
        if self.clients.pop(c.id, None) is None:
            return
        if c.watched:
            unwatch_all(c)
        if c.tracking:
            self.tracking.disable(c)
        if c.blocked:
            self.blocking_handler.forget(c)
        if c.monitor:
            try:
                self.monitors.remove(c)
            except ValueError:
                pass
            self.update_server_slow()
        if c.pubsub_channels or c.pubsub_patterns or c.pubsub_shard:
            self.pubsub.unsubscribe_all(c)
        if c.paused_queue is not None:
            try:
                self.paused_clients.remove(c)
            except ValueError:
                pass
        if log.enabled(log.VERBOSE):
            log.verbose("Client closed connection %s" % c.info_string())

    def check_output_limits(self, c: Client, from_cron=False):
        """client-output-buffer-limit (checkClientOutputBufferLimits): the
        hard limit closes at once; the soft limit when it stays reached for
        more than its seconds (whole seconds, as Redis's unixtime).  Checked
        after writes and, for clients over a soft limit, from cron."""
        t = c.transport
        if t is None or c.closing:
            return False
        size = t.get_write_buffer_size()
        if not c.authenticated and size > UNAUTH_OUTPUT_LIMIT:
            # A client that has not authenticated gets no output buffer to
            # speak of, whatever client-output-buffer-limit says: it could
            # otherwise grow the server's memory without end (-NOAUTH to a
            # pipeline it never reads).
            return self._close_over_limit(c, t, from_cron)
        if size < self.obuf_floor or not size:
            if c.out_extra is not None:
                c.out_extra = None
                self.obuf_soft.pop(c.id, None)
            return False
        if c in self.repl_feed.replicas:
            # the replica class; a hard limit below repl-backlog-size is
            # raised to it, as Redis does
            hard, soft, secs = self.obuf_limits["slave"]
            if hard and hard < self.config["repl-backlog-size"]:
                hard = self.config["repl-backlog-size"]
        else:
            cls = "pubsub" if (c.pubsub_channels or c.pubsub_patterns or c.pubsub_shard) else "normal"
            hard, soft, secs = self.obuf_limits[cls]
        over = bool(hard and size >= hard)
        if soft and size >= soft:
            now = int(time.time())
            if c.out_extra is None:
                c.out_extra = now
                self.obuf_soft[c.id] = c
            elif now - c.out_extra > secs:
                over = True
        elif c.out_extra is not None:
            c.out_extra = None
            self.obuf_soft.pop(c.id, None)
        if over:
            self._close_over_limit(c, t, from_cron)
        return over

    def _close_over_limit(self, c: Client, t, from_cron) -> bool:
        self.obuf_soft.pop(c.id, None)
        if from_cron:
            log.warning("Client %s closed for overcoming of output buffer limits." % c.info_string())
        else:
            log.warning("Client %s scheduled to be closed ASAP for overcoming of output buffer limits." % (
                c.info_string()))
        stats.client_outbuf_limit_disconnections += 1
        c.closing = True
        t.abort()
        return True

    def _obuf_cron(self):
        """Soft limits also expire while no more output is produced."""
        if self.obuf_soft:
            for c in list(self.obuf_soft.values()):
                if c.closing or c.id not in self.clients:
                    self.obuf_soft.pop(c.id, None)
                else:
                    self.check_output_limits(c, from_cron=True)

    # -- command processing ---------------------------------------------------------
    def process_command(self, c: Client, argv):
        trk = self.tracking
        if trk.wrap_active and trk.max_keys and len(trk.table) > trk.max_keys:
            trk.limit()
        name = argv[0]
        cmd = TABLE.get(name)
        if cmd is None:
            cmd = TABLE.get(name.lower())
        if cmd is not None and cmd.subcommands and len(argv) > 1:
            sub = cmd.subcommands.get(argv[1].lower())
            if sub is None:
                return self.reject(c, None, RedisError(
                    "ERR unknown subcommand '%s'. Try %s HELP." % (
                        _printable(argv[1][:128]), cmd.name.upper())))
            cmd = sub
        if cmd is None:
            args = ""
            for a in argv[1:]:
                if len(args) >= 128:
                    break
                args += "'%s' " % _printable(a)[:128 - len(args)]
            return self.reject(c, None, RedisError(
                "ERR unknown command '%s', with args beginning with: %s" % (
                    _printable(name[:128]), args)))
        a = cmd.arity
        n = len(argv)
        if (a > 0 and a != n) or n < -a:
            return self.reject(c, cmd, RedisError(
                "ERR wrong number of arguments for '%s' command" % cmd.fullname))
        if cmd.protected and cmd.fullname == "debug" and not self._debug_allowed(c):
            return self.reject(c, cmd, RedisError(
                "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
                "you can run it from a local connection, otherwise you need to set this option in the "
                "configuration file, and then restart the server."))
        if not c.authenticated and not cmd.noauth:
            return self.reject(c, cmd, NOAUTH)
        in_multi = c.multi is not None
        if in_multi and cmd.nomulti:
            return self.reject(c, cmd, RedisError("ERR Command not allowed inside a transaction"))
        base = cmd.parent.name if cmd.parent is not None else cmd.name
        if self.maxmemory and not c.in_script:
            oom = self.memory.evict_hook()
            if oom:
                reject = cmd.denyoom
                if in_multi and not cmd.ends_multi:
                    reject = True
                if base == "exec" and c.multi and any(q[0].denyoom for q in c.multi):
                    reject = True
                if reject:
                    return self.reject(c, cmd, OOM)
        if (not self.lastbgsave_ok and self.config["stop-writes-on-bgsave-error"] and self.config["save"]) \
                or self.write_denied is not None:
            if cmd.write or base == "ping" or (base == "exec" and c.multi and any(q[0].write for q in c.multi)):
                from .errors import MISCONF
                rdb = not self.lastbgsave_ok and self.config["stop-writes-on-bgsave-error"] and self.config["save"]
                return self.reject(c, cmd, MISCONF if rdb else self.write_denied)
        if cmd.write or (base == "exec" and c.multi and any(q[0].write for q in c.multi)):
            if not self.is_replica and self.min_replicas and self.good_replicas() < self.min_replicas:
                return self.reject(c, cmd, NOREPLICAS)
            if self.is_replica and not c.is_master and self.config["replica-read-only"]:
                return self.reject(c, cmd, READONLY)
        if c.resp == 2 and (c.pubsub_channels or c.pubsub_patterns or c.pubsub_shard) \
                and not cmd.pubsub_context:
            return self.reject(c, cmd, RedisError(
                "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
                "are allowed in this context" % cmd.fullname))
        if self.is_replica and not self.config["replica-serve-stale-data"] and not c.is_master \
                and self.replica_link is not None and self.replica_link.state != "connected" and (
                    not cmd.stale or (base == "exec" and c.multi and not all(q[0].stale for q in c.multi))):
            return self.reject(c, cmd, MASTERDOWN)
        if self.loading and not cmd.loading:
            from .errors import LOADING
            return self.reject(c, cmd, LOADING)
        if self.script_busy is not None and not cmd.allow_busy:
            return self.reject(c, cmd, RedisError(self.script_busy))
        if self.pause_type is not None and (not in_multi or base == "exec") \
                and self._paused_for(cmd, c, argv):
            self.postpone(c, argv)
            return None
        if in_multi and not cmd.no_queue:
            if not (c.multi_error or c.dirty_cas):   # no memory for a doomed EXEC
                c.multi.append((cmd, argv))
            return QUEUED
        return self.call(c, cmd, argv)

    def good_replicas(self) -> int:
        """Replicas attached to our feed (min-replicas-to-write)."""
        return len(self.repl_feed.replicas)

    def _debug_allowed(self, c) -> bool:
        v = self.config["enable-debug-command"]
        if v == "yes":
            return True
        if v == "local":
            return c.is_unix or _is_loopback(c.addr.rsplit(":", 1)[0].strip("[]"))
        return False

    def protected_allowed(self, c, directive="enable-protected-configs") -> bool:
        v = self.config[directive]
        if v == "yes":
            return True
        if v == "local":
            return c.is_unix or _is_loopback(c.addr.rsplit(":", 1)[0].strip("[]"))
        return False

    def reject(self, c: Client, cmd, e: RedisError):
        if c.multi is not None:
            c.multi_error = True
        if cmd is not None:
            cmd.rejected_calls += 1
        msg = e.msg
        if cmd is not None and cmd.name == "exec" and c.multi is not None:
            # EXEC itself refused (OOM, MISCONF ...): the transaction is over.
            from .commands.transactions import discard_transaction
            discard_transaction(c)
            msg = b"EXECABORT Transaction discarded because of: " + msg
            if self.monitors:
                self.feed_monitors(c, [b"exec"])
        sp = msg.find(b" ", 0, 32)
        code = msg[:sp].decode("utf-8", "replace") if sp > 0 else "ERR"
        stats.errorstats[code] = stats.errorstats.get(code, 0) + 1
        stats.total_error_replies += 1
        return self.filter_reply(c, b"-%s\r\n" % msg)

    def filter_reply(self, c, r):
        """CLIENT REPLY OFF (1) / SKIP: 2 = set by the current command,
        becomes 3 = suppress the reply of the next command."""
        m = c.reply_mode
        if m == 0:
            return r
        if m == 3:
            c.reply_mode = 0
            c.update_slow()
            return None
        if m == 2:
            c.reply_mode = 3
            return None
        return None

    def call(self, c: Client, cmd, argv):
        """Run a command and account for it (commandstats, slowlog, latency,
        MONITOR, propagation)."""
        c.last_cmd = cmd
        if cmd.blocking:
            c.block_argv = argv
        dirty0 = self.dirty
        t0 = perf_counter()
        try:
            r = cmd.proc(c, argv)
        except RedisError as e:
            r = c.error_reply(e, cmd)
        except Exception as e:  # noqa: BLE001
            r = c.internal_error(e, cmd, argv)
        dt = perf_counter() - t0
        # MONITOR sees the command after it ran (the db after SELECT, the
        # queued commands of a transaction before its EXEC), as in Redis.
        if self.monitors and not cmd.skip_monitor and not cmd.admin:
            self.feed_monitors(c, cmd.redact(argv) if cmd.redact is not None else argv)
        if not c.blocked:
            cmd.calls += 1
        cmd.usec += dt
        th = client_mod._SLOW_CHECK
        if th is not None and dt >= th:
            self.slow_call(c, cmd, argv, dt)
        if client_mod._LATENCY_TRACKING and not c.blocked:
            cmd.hist[int(dt * 976562.5).bit_length()] += 1
        if self.propagate_hooks:
            self.propagator.after_call(c, cmd, argv, self.dirty != dirty0)
        if self.ready_keys and not c.in_exec and not c.in_script:
            self.handle_ready_keys()
        if c.reply_mode:
            r = self.filter_reply(c, r)
        return r

    def handle_ready_keys(self):
        self.blocking_handler.handle_ready_keys()

    # -- pause --------------------------------------------------------------------------
    def _paused_for(self, cmd, c, argv=None) -> bool:
        if time.monotonic() >= self.pause_end:
            self.unpause()
            return False
        if self.pause_type == "all":
            return True
        base = cmd.parent.name if cmd.parent is not None else cmd.name
        if base == "exec":
            return bool(c.multi) and any(q[0].write or q[0].may_replicate for q in c.multi)
        if base in ("eval", "evalsha", "fcall") and argv is not None:
            # A script declaring no-writes is not a write (evalGetCommandFlags).
            from .commands.scripting import script_declares_no_writes
            if script_declares_no_writes(self, base, argv):
                return False
            return True
        return cmd.write or cmd.may_replicate

    def postpone(self, c: Client, argv):
        c.paused_queue = argv
        self.paused_clients.append(c)

    def pause(self, kind: str, until: float):
        # A pause can only be extended or made stricter, as in Redis.
        if self.pause_type == "all" and kind == "write" and self.pause_end > time.monotonic():
            self.pause_end = max(self.pause_end, until)
            return
        self.pause_type = kind
        self.pause_end = max(until, self.pause_end)
        self.paused_expire = True
        self.update_server_slow()

    def unpause(self):
        self.pause_type = None
        self.pause_end = 0.0
        self.paused_expire = False
        self.update_server_slow()
        waiting = list(self.paused_clients)
        self.paused_clients.clear()
        for c in waiting:
            argv = c.paused_queue
            c.paused_queue = None
            if c.closing:
                continue
            r = self.process_command(c, argv)
            if r is not None:
                c.write([r])
            c.resume()

    # -- MONITOR / slowlog / latency ---------------------------------------------------
    def feed_monitors(self, c: Client, argv):
        now = time.time()
        sec = int(now)
        if c.in_script:
            origin = "%d lua" % c.db.id
        elif c.is_unix:
            origin = "%d unix:%s" % (c.db.id, self.unix_path or "")
        else:
            origin = "%d %s" % (c.db.id, c.addr)
        line = b"+%d.%06d [%s] %s\r\n" % (
            sec, min(int((now - sec) * 1e6), 999999), origin.encode("latin-1", "replace"),
            b" ".join([sdscatrepr(a) for a in argv]))
        for m in list(self.monitors):
            m.push(line)

    def slowlog_add(self, c, argv, dt):
        e = SlowlogEntry()
        e.id = self.slowlog_next_id
        self.slowlog_next_id += 1
        e.time = int(time.time())
        e.duration = int(dt * 1e6)
        n = len(argv)
        args = []
        for i, a in enumerate(argv[:32]):
            if i == 31 and n > 32:
                args.append(b"... (%d more arguments)" % (n - 31))
                break
            if len(a) > 128:
                a = a[:128] + b"... (%d more bytes)" % (len(a) - 128)
            args.append(a)
        e.argv = args
        e.addr = c.addr.encode()
        e.name = c.name or b""
        self.slowlog.appendleft(e)
        maxlen = self.config["slowlog-max-len"]
        while len(self.slowlog) > maxlen:
            self.slowlog.pop()

    def slow_call(self, c, cmd, argv, dt):
        """A call took at least the slowlog or latency-monitor threshold."""
        th = client_mod._SLOWLOG_THRESHOLD
        if th is not None and dt >= th and not cmd.skip_slowlog:
            self.slowlog_add(c, cmd.redact(argv) if cmd.redact is not None else argv, dt)
        lt = client_mod._LATENCY_MONITOR
        if lt is not None and dt >= lt:
            self.latency_add("fast-command" if cmd.fast else "command", int(dt * 1000))

    def latency_add(self, event: str, ms: int):
        ev = self.latency_events.get(event)
        now = int(time.time())
        if ev is None:
            ev = self.latency_events[event] = {"samples": deque(maxlen=160), "max": 0}
        ev["max"] = max(ev["max"], ms)
        s = ev["samples"]
        if s and s[-1][0] == now:
            if s[-1][1] < ms:
                s[-1] = (now, ms)
        else:
            s.append((now, ms))

    # -- cron ---------------------------------------------------------------------------
    async def cron(self):
        while not self._stopping:
            await asyncio.sleep(1.0 / self.hz)
            try:
                self.cron_once()
            except Exception:  # noqa: BLE001
                import traceback
                log.warning("cron error: %s" % traceback.format_exc().replace("\n", " | "))

    def cron_once(self):
        if self.pause_cron:
            return
        self.cron_loops += 1
        now = time.monotonic()
        # instantaneous metrics every 100ms
        ops = self.total_commands()
        sample = (now, ops, stats.net_input_bytes, stats.net_output_bytes)
        if self._last_sample is not None:
            dt = now - self._last_sample[0]
            if dt > 0:
                self.ops_samples.append((ops - self._last_sample[1]) / dt)
                self.net_in_samples.append((sample[2] - self._last_sample[2]) / dt)
                self.net_out_samples.append((sample[3] - self._last_sample[3]) / dt)
        self._last_sample = sample
        # active expiry: 25% of the cycle time at most
        if self.active_expire_enabled:
            self.active_expire_cycle()
        # client timeouts
        tmo = self.config["timeout"]
        if tmo and self.cron_loops % max(1, self.hz // 10 or 1) == 0:
            for c in list(self.clients.values()):
                if (not c.blocked and not c.monitor and not (c.pubsub_channels or c.pubsub_patterns)
                        and now - c.last_time > tmo):
                    log.verbose("Closing idle client")
                    c.close()
        for c in list(self.clients.values()):
            if c.blocked:
                self.blocking_handler.check_timeouts(now)
                break
        if self.pause_type is not None and now >= self.pause_end:
            self.unpause()
        for h in self.cron_hooks:
            h()
        if self.shutdown_asap is not None:
            self._handle_signal_now()

    def active_expire_cycle(self):
        if self.is_replica or self.paused_expire:
            return
        effort = self.config["active-expire-effort"] - 1
        keys_per_loop = 20 + 20 // 4 * effort
        stale = 10 - effort
        budget = (25 + 2 * effort) / 100.0 / self.hz
        t0 = time.time()
        deadline = t0 + budget
        total_sampled = total_expired = 0
        timed_out = False
        for db in self.dbs:
            if not db.expires:
                continue
            s, e, to = db.active_expire(deadline, keys_per_loop, stale)
            total_sampled += s
            total_expired += e
            if to:
                timed_out = True
                break
        elapsed = time.time() - t0
        stats.expire_cycle_cpu_milliseconds += int(elapsed * 1000)
        lt = client_mod._LATENCY_MONITOR
        if lt is not None and elapsed >= lt:
            self.latency_add("expire-cycle", int(elapsed * 1000))
        if timed_out:
            stats.expired_time_cap_reached_count += 1
        if total_sampled:
            cur = total_expired / total_sampled
            stats.expired_stale_perc = cur * 0.05 + stats.expired_stale_perc * 0.95

    def total_commands(self) -> int:
        return sum(c.calls for c in ALL.values())

    def instantaneous(self, samples) -> float:
        if not samples:
            return 0.0
        return sum(samples) / len(samples)

    # -- listeners -------------------------------------------------------------------
    async def listen(self):
        loop = self.loop
        cfg = self.config
        port = cfg["port"]
        backlog = cfg["tcp-backlog"]
        if port:
            await self._listen_tcp(port, backlog)
        path = cfg["unixsocket"]
        if path:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            srv = await loop.create_unix_server(lambda: Client(self), path, backlog=backlog)
            perm = cfg["unixsocketperm"]
            if perm:
                os.chmod(path, perm)
            self.unix_path = path
            self.listeners.append(("unix", srv))
            log.notice("The server is now ready to accept connections at %s" % path)

    def _bind_tcp(self, port, backlog):
        """Bind and listen on the configured TCP addresses (synchronously).
        Returns the listening sockets; raises OSError when a mandatory
        address cannot be bound (the sockets bound so far are closed)."""
        addrs = self.config["bind"] or ["*", "-::*"]
        socks = []
        try:
            for a in addrs:
                optional = a.startswith("-")
                host = a[1:] if optional else a
                if host == "*":
                    host = "0.0.0.0"
                elif host == "::*":
                    host = "::"
                sock = None
                try:
                    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET,
                                         socket.SOCK_STREAM)
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    if ":" in host:
                        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                    sock.bind((host, port))
                    sock.listen(backlog)
                    sock.setblocking(False)
                    socks.append(sock)
                except OSError as e:
                    if sock is not None:
                        sock.close()
                    if optional or (e.errno in (97, 99) and host in ("::", "::1")):
                        log.warning("Could not create server TCP listening socket %s:%d: %s" % (
                            host, port, e.strerror))
                        continue
                    log.warning("Warning: Could not create server TCP listening socket %s:%d: %s" % (
                        host, port, e.strerror))
                    raise
            if not socks and addrs:
                raise OSError(98, "no address could be bound")
        except OSError:
            for sk in socks:
                sk.close()
            raise
        return socks

    async def _serve_tcp(self, socks, backlog):
        for sock in socks:
            srv = await self.loop.create_server(lambda: Client(self), sock=sock, backlog=backlog)
            self.listeners.append(("tcp", srv))

    async def _listen_tcp(self, port, backlog):
        try:
            socks = self._bind_tcp(port, backlog)
        except OSError:
            raise SystemExit(1)
        await self._serve_tcp(socks, backlog)

    def _rebind_tcp(self, what="port"):
        """port / bind changed (CONFIG SET): listen on the new addresses
        first; when that fails the old listeners stay and CONFIG SET fails
        (and is rolled back), as in Redis's changeListener."""
        port = self.config["port"]
        backlog = self.config["tcp-backlog"]
        socks = []
        if port:
            try:
                socks = self._bind_tcp(port, backlog)
            except OSError:
                from .config import ConfigError
                if what == "port":
                    raise ConfigError("Unable to listen on this port")
                raise ConfigError("Failed to bind to specified addresses.")
        old = [l for l in self.listeners if l[0] == "tcp"]
        self.listeners = [l for l in self.listeners if l[0] != "tcp"]
        for _, srv in old:
            srv.close()
        if socks:
            asyncio.ensure_future(self._serve_tcp(socks, backlog))

    def close_listeners(self):
        for _, srv in self.listeners:
            srv.close()
        self.listeners = []
        if self.unix_path:
            log.notice("Removing the unix socket file.")
            try:
                os.unlink(self.unix_path)
            except OSError as e:
                log.warning("Error removing the unix socket file: %s" % e.strerror)

    # -- shutdown ---------------------------------------------------------------------------
    def request_shutdown(self, nosave=False, save=False, now=False, force=False, from_signal=False):
        """Returns None on success (the loop stops) or an error text."""
        if not from_signal:
            log.warning("User requested shutdown...")
        do_save = (self.config["save"] and not nosave) or save
        if self.loading:
            do_save = False
        for check in self.shutdown_checks:
            if check(force):
                log.warning("Errors trying to shut down the server. Check the logs for more information.")
                return "Errors trying to SHUTDOWN. Check logs."
        if do_save:
            log.notice("Saving the final RDB snapshot before exiting.")
            try:
                self.persistence.shutdown_save()
            except Exception as e:  # noqa: BLE001
                if force:
                    log.warning("Error trying to save the DB. Exit anyway.")
                else:
                    log.warning("Error trying to save the DB, can't exit.")
                    log.warning("Errors trying to shut down the server. Check the logs for more information.")
                    return "Errors trying to SHUTDOWN. Check logs."
        for h in self.shutdown_hooks:
            try:
                h()
            except Exception:  # noqa: BLE001
                pass
        pidfile = self.config["pidfile"]
        if pidfile:
            log.notice("Removing the pid file.")
            try:
                os.unlink(pidfile)
            except OSError:
                pass
        self.close_listeners()
        log.warning("Redis is now ready to exit, bye bye...")
        self._stopping = True
        for c in list(self.clients.values()):
            c.close()
        self.loop.call_soon(self.loop.stop)
        return None

    def _signal(self, signame):
        if self._stopping:
            return
        if self.shutdown_asap == signame:
            log.warning("You insist... exiting now.")
            os._exit(1)
        self.shutdown_asap = signame
        # handle promptly rather than waiting for the cron tick
        self.loop.call_soon(self._handle_signal_now)

    def _handle_signal_now(self):
        sig = self.shutdown_asap
        if sig is None or self._stopping:
            return
        self.shutdown_asap = None
        log.warning("Received %s scheduling shutdown..." % sig)
        err = self.request_shutdown(from_signal=True)
        if err:
            self.shutdown_asap = None

    # -- start --------------------------------------------------------------------------
    def os_warnings(self):
        try:
            with open("/proc/sys/vm/overcommit_memory") as f:
                if f.read().strip() != "1":
                    log.warning(
                        "WARNING Memory overcommit must be enabled! Without it, a background save or "
                        "replication may fail under low memory condition. To fix this issue add "
                        "'vm.overcommit_memory = 1' to /etc/sysctl.conf and then reboot or run the command "
                        "'sysctl vm.overcommit_memory=1' for this to take effect.")
        except OSError:
            pass
        try:
            with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
                if "[always]" in f.read():
                    log.warning(
                        "WARNING You have Transparent Huge Pages (THP) support enabled in your kernel. "
                        "This will create latency and memory usage issues with background saving. "
                        "To fix this issue run the command 'echo madvise > "
                        "/sys/kernel/mm/transparent_hugepage/enabled' as root, and add it to your "
                        "/etc/rc.local in order to retain the setting after a reboot.")
        except OSError:
            pass
        try:
            with open("/proc/sys/net/core/somaxconn") as f:
                somax = int(f.read().strip())
            if somax < self.config["tcp-backlog"]:
                log.warning(
                    "WARNING: The TCP backlog setting of %d cannot be enforced because "
                    "/proc/sys/net/core/somaxconn is set to the lower value of %d." % (
                        self.config["tcp-backlog"], somax))
        except (OSError, ValueError):
            pass

    def banner(self):
        port = self.config["port"]
        log.notice("Running mode=standalone, port=%d." % port)

    async def run(self):
        self.loop = asyncio.get_running_loop()
        self.os_warnings()
        log.notice("Server initialized")
        for h in self.startup_hooks:
            h()
        await self.listen()
        self.banner()
        log.notice("Ready to accept connections")
        ro = self.config["replicaof"]
        if ro:     # "replicaof <host> <port>" in the configuration
            from . import replica
            replica.set_master(self, ro[0], int(ro[1]))
        for sig, name in ((signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "SIGINT")):
            try:
                self.loop.add_signal_handler(sig, self._signal, name)
            except (NotImplementedError, RuntimeError):
                pass
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


def _is_loopback(host: str) -> bool:
    return host.startswith("127.") or host in ("::1", "localhost") or host.startswith("::ffff:127.")


def _printable(b: bytes) -> str:
    s = b.decode("utf-8", "replace")
    return s.replace("\r", " ").replace("\n", " ")
