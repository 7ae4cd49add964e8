"""One client connection: an asyncio Protocol.

The hot path is ``data_received``: the connection's ``reader.RequestReader``
turns the bytes into requests (hiredis for canonical multibulk traffic,
Redis's rules in Python for the rest), each request is looked up in the
command table and run, replies are collected in a list and written once per
read.  Anything unusual (MULTI, unauthenticated clients, pub/sub mode,
pauses, maxmemory, MONITOR ...) takes the general path ``process_request``
which performs all of Redis's processCommand checks.  This module only runs
requests: what is a request, and what is left for the next read, is the
reader's business.
"""

from __future__ import annotations

import asyncio
import socket
import time
from itertools import chain as _chain
from time import perf_counter

import hiredis

from .. import compiled, log
from ..acl.check import fast_allows
from ..acl.users import set_rules_hook
from ..cluster.slots import key_hash_slot
from ..cmdtable.registry import TABLE
from ..errors import RedisError
from ..keyspace.db import stats
from ..protocol.reader import PYTHON, RequestReader, ends_with_request, suspicious
from ..protocol.resp import NULL3, NULL_ARRAY, NULL_BULK, ProtocolError

# the compiled twin (net/_client.pyx: the request loop and the per-read
# path), picked here; what this module's setters hand it goes through _loop
_c = compiled.load("net._client")
_slots_c = compiled.load("cluster._slots")


class _NoLoop:
    """The switches of the compiled loop when it is not built: nowhere."""

    @staticmethod
    def sync(*_args):
        pass

    set_write_switches = set_client_memory = sync


_loop = _c if _c is not None else _NoLoop
if _c is not None:
    set_rules_hook(_c.acl_changed)      # the compiled loop's cache of user.fast

_HiredisProtocolError = hiredis.ProtocolError
# hiredis gives ints, lists, None ... for non-bulk elements of a request;
# such requests are parsed again by Redis's rules (protocol.parse_request).
_IS_BYTES = bytes.__instancecheck__
_monotonic = time.monotonic
# Server-wide "take the general path" switch (maxmemory, MONITOR, pauses,
# busy scripts, loading, MISCONF ...).  Set through ``set_server_slow``.
_SERVER_SLOW = False
# Slowlog threshold in seconds (None when disabled); set by the server.
_SLOWLOG_THRESHOLD = 0.01
_READY = []   # the server's ready_keys list (blocked clients to serve)
# PROTO_REPLY_CHUNK_BYTES: a client's own reply buffer (c->buf) at its
# largest; unsent output that fits in it does not count for
# client-output-buffer-limit (Redis counts the reply list only)
REPLY_CHUNK = 16 * 1024
# Output a client that has not authenticated may leave unsent (Redis: its
# 16 KB reply buffer plus 1 KB of reply list) before it is disconnected,
# whatever client-output-buffer-limit says: it could otherwise grow the
# server's memory without end (-NOAUTH to a pipeline it never reads).
UNAUTH_OUTPUT_LIMIT = REPLY_CHUNK + 1024
# The smallest output buffer limit of any class (0: none): a write whose
# output (what is still held plus the new reply) stays below it needs no
# check of client-output-buffer-limit.  Set through ``set_output_floor``.
_OBUF_FLOOR = 0
# maxmemory-clients: fn(client) accounting a client's memory after a read
# or a write and evicting clients over the limit (None while it is off).
_CLIENT_MEM = None


# Cluster mode: the fast path runs a command with keys only when the slot of
# its one key (Command.cluster_key) is served here: _CLUSTER_OWNED[slot] == 1
# (ours, stable, the cluster ok).  _OFF when the server is not a cluster
# node; None while the map is being recomputed (the general path then
# routes every command with keys).  Set through ``set_cluster``.
_OFF = object()
_CLUSTER_OWNED = _OFF


def set_cluster(owned):
    """The cluster's map of the slots the fast path may serve (bytes of
    16384), None (none for now), or _OFF."""
    global _CLUSTER_OWNED
    _CLUSTER_OWNED = owned
    if _slots_c is not None:
        _slots_c.sync_cluster(owned is not _OFF, None if owned is _OFF else owned)


def _cluster_local(cmd, req) -> bool:
    k = cmd.cluster_key
    if k == 0:
        return True
    owned = _CLUSTER_OWNED
    if k < 0 or owned is None or k >= len(req):
        return False
    return owned[key_hash_slot(req[k])] == 1


# The replication / AOF Propagator while a target is attached (None
# otherwise): the fast path hands it the commands that changed the dataset,
# as Server.call does.  Set through ``set_propagator``.
_PROPAGATOR = None


def set_propagator(p):
    global _PROPAGATOR
    _PROPAGATOR = p
    _sync()


def _propagate(self, p, cmd, req, dirty0):
    # the fast path's part of Server.call: propagation after a command
    d = self.server.dirty != dirty0
    if d or p.forced or p.rewritten is not None or p.pending:
        p.after_call(self, cmd, req, d)


def set_server_slow(v: bool):
    global _SERVER_SLOW
    _SERVER_SLOW = v
    _sync()


def set_slowlog_threshold(us: int):
    global _SLOWLOG_THRESHOLD
    _SLOWLOG_THRESHOLD = None if us < 0 else us / 1e6
    _update_slow_check()


# latency-monitor-threshold in seconds (None when 0), and the smaller of the
# two thresholds: the fast path makes one comparison for slowlog + monitor
# (infinity when both are off).
_LATENCY_MONITOR = None
_SLOW_CHECK = 0.01
# latency-tracking: per-command latency histograms (Command.hist).
_LATENCY_TRACKING = True


def _update_slow_check():
    global _SLOW_CHECK
    ts = [t for t in (_SLOWLOG_THRESHOLD, _LATENCY_MONITOR) if t is not None]
    _SLOW_CHECK = min(ts) if ts else float("inf")
    _sync()


def set_latency_monitor(ms: int):
    global _LATENCY_MONITOR
    _LATENCY_MONITOR = ms / 1000.0 if ms > 0 else None
    _update_slow_check()


def set_latency_tracking(v):
    global _LATENCY_TRACKING
    _LATENCY_TRACKING = bool(v)
    _sync()


def set_output_floor(n: int):
    global _OBUF_FLOOR
    _OBUF_FLOOR = n
    _loop.set_write_switches(_BEFORE_REPLY, n)


def set_client_memory(fn):
    """Install ``fn(client)``, run after each read of a client and after
    writes outside its reads (pushes, unblocked replies), or None."""
    global _CLIENT_MEM
    _CLIENT_MEM = fn
    _loop.set_client_memory(fn)


def client_class(c) -> str:
    """The client's class (Redis's getClientType) for
    client-output-buffer-limit, the memory figures and client eviction:
    "slave" for a replica of ours, "master" for our master's link (limited
    as a normal client, never evicted), "pubsub" for a client subscribed to
    anything, else "normal" (MONITOR clients included, as Redis)."""
    if c.repl is not None:
        return "slave"
    if c.is_master:
        return "master"
    if c.pubsub_channels or c.pubsub_patterns or c.pubsub_shard:
        return "pubsub"
    return "normal"


def set_ready_list(lst):
    global _READY
    _READY = lst
    _sync()


def _run_requests(self, gets, out, table, slow, t0):
    """Run the requests hiredis has ready (gets: the reader's hiredis
    ``gets``, from RequestReader.feed): the fast path calls the command
    directly when no check of processCommand can apply, anything else goes
    through process_request.  Returns (nreq, last): how many requests were
    taken off the parser and the last one; nreq is ~n when the Python
    parser must take over after n requests (hiredis refused the stream, or
    the request is not an array of bulk strings): RequestReader.taken
    decides what follows.  net/_client.pyx's run is the same loop compiled."""
    append = out.append
    last = None
    nreq = 0
    fast = self.user.fast
    prop = _PROPAGATOR
    srv = self.server
    while True:
        try:
            req = gets()
        except _HiredisProtocolError:
            return ~nreq, last
        if req is False:
            break
        nreq += 1
        last = req
        if req.__class__ is list and req and all(map(_IS_BYTES, req)):
            cmd = table.get(req[0])
            if not slow and cmd is not None and cmd.fastpath and cmd.amin <= len(req) <= cmd.amax \
                    and (_CLUSTER_OWNED is _OFF or _cluster_local(cmd, req)) \
                    and (fast is None or fast_allows(fast, self.user, cmd, req)):
                # The fast path: no check of processCommand can apply.
                self.last_cmd = cmd
                if prop is not None:
                    dirty0 = srv.dirty
                try:
                    append(cmd.proc(self, req))
                except RedisError as e:
                    append(self.error_reply(e, cmd))
                except Exception as e:  # noqa: BLE001 - never let a command kill the link
                    append(self.internal_error(e, cmd, req))
                t1 = perf_counter()
                dt = t1 - t0
                t0 = t1
                cmd.calls += 1
                cmd.usec += dt
                self.tot_cmds += 1
                if dt >= _SLOW_CHECK:
                    self.server.slow_call(self, cmd, req, dt)
                if _LATENCY_TRACKING:
                    cmd.hist[int(dt * 976562.5).bit_length()] += 1
                if prop is not None:
                    _propagate(self, prop, cmd, req, dirty0)
                if _READY:
                    srv.handle_ready_keys()
                if cmd.fastpath != 2:
                    continue
                # a script ran: it may have changed what the loop read
                if self.blocked or self.close_after_reply or self.paused_queue is not None or self.closing:
                    break
                slow = self.slow or _SERVER_SLOW
                fast = self.user.fast
                prop = _PROPAGATOR
                continue
            r = self.process_request(req)
        else:
            # Not a plain array of bulk strings: Redis's parser (in Python)
            # takes over from this request, for Redis's replies and errors.
            return ~(nreq - 1), last
        if r is not None:
            append(r)
        if self.blocked or self.close_after_reply or self.paused_queue is not None or self.closing:
            break
        slow = self.slow or _SERVER_SLOW
        fast = self.user.fast
        prop = _PROPAGATOR
        t0 = perf_counter()
    return nreq, last


_NO_MORE = (False,)     # what ends a batch of requests for the request loop (as hiredis's gets)


def _sync():
    """Hand the switches above to the compiled loop."""
    _loop.sync(_SERVER_SLOW, _SLOW_CHECK, _LATENCY_TRACKING, _READY, _PROPAGATOR)


_RUN = _c.run if _c is not None else _run_requests


# Client flags for CLIENT LIST
class _ClientCore:
    """The fields of Client that the compiled per-read path and request
    loop read (C fields of net/_core.pyx's ClientCore when the compiled
    layer is built; net/_core.pxd declares them for both)."""
    __slots__ = compiled.fields("net/_core.pxd", "ClientCore")


_core = compiled.load("net._core")
ClientCore = _core.ClientCore if _core is not None else _ClientCore


class Client(ClientCore, asyncio.Protocol):
    """Per-connection state and the asyncio protocol callbacks."""

    __slots__ = (
        "id", "name", "addr", "laddr", "fd", "ctime", "multi_error", "dirty_cas", "watched",
        "subcmd", "is_unix", "monitor", "tracking", "no_evict", "no_touch", "lib_name", "lib_ver", "woff", "bstate", "in_exec",
        "killed", "is_master", "block_argv", "repl", "mem_usage",
        "cluster_asking", "cluster_readonly", "__weakref__",
        # HIMPORT PREPARE's fieldsets: name -> field names (None: none yet)
        "fieldsets",
    )

    def __init__(self, server):
        self.server = server
        self.transport = None
        self.reader = RequestReader(server)   # the input: bytes -> requests
        self.db = server.dbs[0]
        self.id = server.next_client_id()
        self.name = None
        self.resp = 2
        acl = server.acl
        self.authenticated = acl.auth_free
        self.closing = False
        self.close_after_reply = False
        self.blocked = False
        self.cluster_asking = False     # ASKING (for the next command)
        self.cluster_readonly = False   # READONLY
        self.fieldsets = None
        self.lua_debug = None           # SCRIPT DEBUG: None, "sync" or "fork"
        self.paused_queue = None
        self.addr = "?"
        self.laddr = "?"
        self.fd = -1
        self.ctime = _monotonic()
        self.last_time = self.ctime
        self.last_cmd = None
        self.multi = None          # list of queued (cmd, argv) when in MULTI
        self.multi_error = False
        self.dirty_cas = False
        self.watched = None        # list of (db, key)
        self.pubsub_channels = None
        self.pubsub_patterns = None
        self.pubsub_shard = None
        self.reply_mode = 0        # 0 on, 1 off, 2 skip-next, 3 skip-this
        self.subcmd = None
        self.is_unix = False
        self.user = acl.default     # acl.users.User
        self.monitor = False
        self.tracking = False      # tracking.TrackState while CLIENT TRACKING is on
        self.no_evict = False
        self.no_touch = False      # CLIENT NO-TOUCH: its reads leave the keys' access times alone
        self.lib_name = None       # CLIENT SETINFO LIB-NAME / LIB-VER (kept across RESET)
        self.lib_ver = None
        self.net_in = self.net_out = self.tot_cmds = 0
        self.read_events = self.pl_sum = self.pl_cnt = 0
        self.push_after = None     # messages its running command raised for it (pubsub._fanout)
        self.t_of = self.t_write = self.t_wbs = None    # (net/_client.pyx's _dr_write)
        self.t_high = -1
        self.wpaused = False
        self.woff = 0              # the replication offset after its last propagated write (WAIT, WAITAOF)
        self.script_caller = None  # the script client: (client running the script, its keys)
        self.is_master = False     # the replication link's client (replica side)
        self.repl = None           # replication.master.ReplicaState when this client is a replica of ours
        self.block_argv = None     # argv of the blocking command being run (SLOWLOG)
        self.mem_usage = None      # memory.clients.Usage: what the totals count for this client
        self.bstate = None
        self.out_extra = None
        self.in_exec = False
        self.pending_writes = None
        self.push_buf = None
        self.killed = False
        self.in_script = False
        self.slow = not self.authenticated
        self.rb_peak = 0           # the largest write since the reply buffer's peak was reset

    # -- state ----------------------------------------------------------------
    def update_slow(self):
        self.slow = bool(
            not self.authenticated or self.multi is not None or self.reply_mode
            # a subscriber (RESP2's context checks; in RESP3 the messages
            # its own commands raise follow their replies: Server.call)
            or self.pubsub_channels or self.pubsub_patterns or self.pubsub_shard
            or self.tracking or self.blocked or self.close_after_reply or self.repl is not None
            or self.cluster_asking)

    # -- asyncio.Protocol -------------------------------------------------------
    def connection_made(self, transport):
        self.transport = transport
        self.server.client_connected(self, transport)

    def connection_lost(self, exc):
        self.closing = True
        self.server.client_disconnected(self)
        # Break reference cycles (client <-> transport, parser state) so that
        # reference counting frees the connection even if the cyclic
        # collector no longer looks at it (see server.install_gc_guard).
        self.reader.discard()
        self.pending_writes = None
        self.bstate = None
        self.multi = None
        self.watched = None

    def pause_writing(self):
        self.wpaused = True

    def resume_writing(self):
        self.wpaused = False

    def eof_received(self):
        return False

    def data_received(self, data):
        stats.net_input_bytes += len(data)
        stats.total_reads_processed += 1
        self.net_in += len(data)
        self.read_events += 1
        t0 = self.last_time = _monotonic()
        n0 = self.tot_cmds
        try:
            self._data_received(data)
        finally:
            # Pushes (pub/sub, notifications) for this client go into the
            # pending reply list only while its requests are being run.
            self.pending_writes = None
        n = self.tot_cmds - n0
        if n:
            # the read's batch of commands (parse-batch-cmd-sum / -cnt)
            self.pl_sum += n
            self.pl_cnt += 1
            stats.pb_sum += n
            stats.pb_cnt += 1
            if n > stats.pb_max:
                stats.pb_max = n
        if _CLIENT_MEM is not None:
            _CLIENT_MEM(self)    # after the read's requests and replies
        d = _monotonic() - t0
        stats.el_duration += d
        if d > stats.el_max:
            stats.el_max = d

    def _data_received(self, data):
        """Run the requests of one read (see reader.py for the steps)."""
        if self.closing or self.close_after_reply:
            return
        if self.blocked or self.paused_queue is not None:
            self.reader.hold(data)
            return
        self._run_read(data)

    def _run_read(self, data):
        rd = self.reader
        while True:
            if rd.pend is None and data[0] == 42 and self.authenticated and not suspicious(data):
                # RequestReader.feed's hiredis case, inlined (see reader.py)
                h = rd.hiredis or rd.new_hiredis()
                h.feed(data)
                gets = h.gets
            else:
                if rd.pend is not None and rd.big_arg_over_limit(len(data)):
                    self._qbuf_limit()
                    return
                gets = rd.feed(data, self.authenticated)
            if gets is not None:
                out = self.pending_writes = []
                # One clock read per command: a command's time runs from the
                # end of the previous one (it includes taking the request off
                # the parser, a fraction of a microsecond), which is what
                # commandstats, the latency histograms and the slowlog see.
                limit = self.server.obuf_normal_limit
                if limit:
                    gets = _bounded_gets(self, gets, out, limit)
                nreq, last = _RUN(self, gets, out, TABLE, self.slow or _SERVER_SLOW, perf_counter())
                if (nreq > 0 and rd.pend is None and last.__class__ is list and last
                        and not (self.blocked or self.close_after_reply or self.paused_queue is not None)
                        and ends_with_request(data, last)):
                    # RequestReader.taken's boundary case, inlined: the
                    # read ended with the last request; nothing is left.
                    if out:
                        self.write(out)
                    return
                if not self._taken(data, nreq, last, out):
                    return
            # The Python parser; what it hands back to hiredis is taken as a
            # new read (a loop, not a recursion: a read may alternate many
            # times, e.g. "*0" before each request).
            data = self._python_input()
            if data is None or self.closing:
                return

    def _taken(self, data, nreq, last, out) -> bool:
        """The request loop stopped before the end of the read (or at a
        point hiredis cannot judge): RequestReader.taken decides what is
        left; the replies so far are written.  True when the Python parser
        takes over from here."""
        rd = self.reader
        try:
            st = rd.taken(data, nreq, last,
                          self.blocked or self.close_after_reply or self.paused_queue is not None,
                          self.authenticated)
        except ProtocolError as e:
            self.protocol_failure(str(e))     # after the replies in out
            self.write(out)
            return False
        if st is None:
            if out:
                self.write(out)
            return False
        if st is not PYTHON:
            self._qbuf_limit()    # closes: the replies in out are not sent
            return False
        if out:
            self.write(out)
        return True

    def _python_then(self):
        """After _taken: the Python parser, then the read loop again
        (the compiled data_received's way back into _run_read)."""
        data = self._python_input()
        if data is not None and not self.closing:
            self._run_read(data)

    def _python_input(self):
        """Requests parsed in Python with Redis's rules (RequestReader.next):
        inline commands, unauthenticated clients, suspicious or malformed
        input, data that arrived while blocked.  Commands that qualify run
        through the same direct call as the hiredis fast path.  Returns the
        bytes hiredis takes over from (a multibulk request at a boundary),
        or None."""
        rd = self.reader
        out = self.pending_writes = []
        append = out.append
        # With an output limit for the normal class, replies reaching it are
        # written (and the limit checked) before the next request runs.
        limit = self.server.obuf_normal_limit
        batch = rd.lines
        if batch is not None:
            # a read of plain inline lines, already split by the reader: the
            # request loop runs them as it runs hiredis's requests
            rd.lines = None
            gets = _chain(batch, _NO_MORE).__next__
            if limit:
                gets = _bounded_gets(self, gets, out, limit)
            nreq, _ = _RUN(self, gets, out, TABLE, self.slow or _SERVER_SLOW, perf_counter())
            over = None
            if self.blocked or self.paused_queue is not None or self.close_after_reply or self.closing:
                over = rd.lines_stopped(nreq, self.blocked, self.closing)
            return self._end_read(out, over)
        else:
            bound = _OutputBound(self, out, limit) if limit else None
            while not (self.blocked or self.paused_queue is not None or self.close_after_reply or self.closing):
                try:
                    argv = rd.next(self.authenticated)
                except ProtocolError as e:
                    self.protocol_failure(str(e))     # after the replies in out
                    self.write(out)
                    return None
                if argv is None:
                    break
                if argv.__class__ is bytes:
                    if out:
                        self.write(out)
                    return argv
                self._run_parsed(argv, append)
                if bound is not None:
                    bound.check()
        return self._end_read(out, rd.python_done(self.blocked, self.closing))

    def _end_read(self, out, over) -> None:
        # the read's replies written; then the query buffer limit when the
        # reader says the rest is over it (over: not None)
        if out:
            self.write(out)
        if over is not None:
            self._qbuf_limit()

    def _qbuf_limit(self):
        log.warning("Closing client that reached max query buffer length: %s" % self.info_string())
        stats.client_qbuf_limit_disconnections += 1
        self.reader.pend = None
        self.close()

    def _run_parsed(self, argv, append):
        """Run one request parsed in Python: the direct call when the fast
        path applies (as in the hiredis loop), else every processCommand
        check."""
        cmd = TABLE.get(argv[0])
        if (cmd is not None and cmd.fastpath and not self.slow and not _SERVER_SLOW
                and cmd.amin <= len(argv) <= cmd.amax
                and (_CLUSTER_OWNED is _OFF or _cluster_local(cmd, argv))
                and (self.user.fast is None or fast_allows(self.user.fast, self.user, cmd, argv))):
            srv = self.server
            self.last_cmd = cmd
            prop = _PROPAGATOR
            dirty0 = srv.dirty
            t0 = perf_counter()
            try:
                append(cmd.proc(self, argv))
            except RedisError as e:
                append(self.error_reply(e, cmd))
            except Exception as e:  # noqa: BLE001
                append(self.internal_error(e, cmd, argv))
            dt = perf_counter() - t0
            cmd.calls += 1
            cmd.usec += dt
            self.tot_cmds += 1
            if dt >= _SLOW_CHECK:
                srv.slow_call(self, cmd, argv, dt)
            if _LATENCY_TRACKING:
                cmd.hist[int(dt * 976562.5).bit_length()] += 1
            if prop is not None:
                _propagate(self, prop, cmd, argv, dirty0)
            if _READY:
                srv.handle_ready_keys()
            return
        r = self.process_request(argv)
        if r is not None:
            append(r)

    @property
    def pend(self):
        """The query buffer: raw bytes not yet run (None when empty)."""
        return self.reader.pend

    def protocol_failure(self, msg):
        if log.enabled(log.VERBOSE):
            log.verbose("Protocol error (%s) from client: %s" % (msg, self.info_string()))
        stats.total_error_replies += 1
        stats.count_error("ERR")
        err = b"-ERR Protocol error: %s\r\n" % msg.encode()
        self.close_after_reply = True
        pw = self.pending_writes
        if pw is not None:
            # Inside a read: the replies of the requests before go first;
            # the reader writes the list and then closes.
            pw.append(err)
        else:
            self.write([err])
            self.close()

    # -- general path -------------------------------------------------------------
    def process_request(self, argv):
        """Run one request (a list of bytes) with every check of Redis's
        processCommand."""
        return self.server.process_command(self, argv)

    def error_reply(self, e: RedisError, cmd=None) -> bytes:
        # Many errors are shared instances (errors.NOT_INT ...): a raise
        # adds its frames to the instance's traceback, which would keep
        # them all (and their locals) alive.
        e.__traceback__ = None
        msg = e.msg
        sp = msg.find(b" ", 0, 32)
        code = msg[:sp].decode("utf-8", "replace") if sp > 0 else "ERR"
        stats.count_error(code)
        stats.total_error_replies += 1
        if cmd is not None:
            cmd.failed_calls += 1
        return b"-%s\r\n" % msg

    def internal_error(self, e, cmd, argv) -> bytes:
        import traceback
        log.warning("Internal error running %s: %s" % (
            cmd.fullname if cmd else "?", traceback.format_exc().replace("\n", " | ")))
        return self.error_reply(RedisError("ERR internal error: %s" % (str(e)[:200] or type(e).__name__)), cmd)

    # -- output -------------------------------------------------------------------
    def write(self, out):
        if self.closing:
            return
        t = self.transport
        if self.push_buf is not None:
            # messages queued for this client go out first, in order
            out = self.push_buf + out
            self.push_buf = None
        data = b"".join(out) if len(out) != 1 else out[0]
        n = len(data)
        if n > self.rb_peak:
            self.rb_peak = n
        try:
            if _OBUF_FLOOR:
                # client-output-buffer-limit: the output still held plus
                # this reply is what Redis's output buffer would hold now.
                # Over a hard limit the client is closed, the reply unsent.
                held = t.get_write_buffer_size()
                if (held + n >= _OBUF_FLOOR or self.out_extra is not None) \
                        and self.server.check_output_limits(self, held, n):
                    return
            t.write(data)
        except Exception:  # noqa: BLE001 - no transport (internal clients), or a broken one
            self.closing = True
            return
        stats.net_output_bytes += n
        stats.total_writes_processed += 1
        self.net_out += n
        if self.close_after_reply:
            self.close()
        elif not self.authenticated:
            if t.get_write_buffer_size() > UNAUTH_OUTPUT_LIMIT:
                self.server.close_over_limit(self, False)
        elif _CLIENT_MEM is not None and self.pending_writes is None:
            _CLIENT_MEM(self)    # a write outside the client's reads (pushes, unblocking)

    _plain_write = write

    def reply_over_limit(self, nbytes: int) -> bool:
        """For a command whose reply grows in many steps (HRANDFIELD,
        SRANDMEMBER, ZRANDMEMBER with huge negative counts): ``nbytes`` is
        what it built so far.  True once the client is closed for its output
        limits (Redis's CLIENT_CLOSE_ASAP test inside those loops): the
        command stops, and its reply is never sent."""
        if self.closing:
            return True
        t = self.transport
        if not _OBUF_FLOOR or nbytes < _OBUF_FLOOR or t is None:
            return False
        held = t.get_write_buffer_size()
        pw = self.pending_writes
        if pw:
            held += sum(map(len, pw))     # the replies before it in this read
        return self.server.check_output_limits(self, held, nbytes)

    def _write_after_barrier(self, out):
        _BEFORE_REPLY()
        self._plain_write(out)

    def queue_push(self, data: bytes):
        """A message for this client, written together with the others that
        arrive in the same event-loop iteration (one write per subscriber
        per iteration instead of one per message, as Redis's output buffers
        do).  Callers check pending_writes first."""
        buf = self.push_buf
        if buf is None:
            self.push_buf = [data]
            _FLUSH.append(self)
            if len(_FLUSH) == 1:
                self.server.loop.call_soon(flush_pushes)
        else:
            buf.append(data)

    def push(self, data: bytes):
        """Out-of-band data (pub/sub messages, unblocked replies, MONITOR)."""
        if not self.closing:
            pw = self.pending_writes
            if pw is not None:
                pw.append(data)
            else:
                self.write([data])

    def close(self):
        t = self.transport
        if t is not None and not t.is_closing():
            if not t.get_write_buffer_size():
                # Everything is written: close at once (uvloop may otherwise
                # keep the socket open until its next loop iteration).
                t.abort()
            else:
                t.close()
        self.closing = True

    def drop(self):
        """freeClient of another client (CLIENT KILL): the connection ends
        now, what it had not sent is dropped.  The socket is shut down at
        once (uvloop closes a transport's socket only in its next loop
        iteration: the killer's reply would leave first)."""
        t = self.transport
        if t is not None and not t.is_closing():
            sock = t.get_extra_info("socket")
            if sock is not None:
                try:
                    with socket.fromfd(sock.fileno(), socket.AF_INET, socket.SOCK_STREAM) as s:
                        s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            t.abort()
        self.close()

    def resume(self):
        """Continue with requests that arrived while blocked or paused."""
        if self.closing or self.blocked or self.paused_queue is not None:
            return
        if not self.reader.resume():
            return
        try:
            data = self._python_input()
            if data is not None:
                self._data_received(data)
        finally:
            self.pending_writes = None

    # -- introspection -------------------------------------------------------------
    def flags_string(self) -> str:
        f = ""
        if self.monitor:
            f += "O"
        elif self.repl is not None:
            f += "S"
        if self.is_master:
            f += "M"
        if self.pubsub_channels or self.pubsub_patterns or self.pubsub_shard:
            f += "P"
        if self.multi is not None:
            f += "x"
        if self.blocked:
            f += "b"
        if self.tracking:
            f += "t"
            if self.tracking.broken:
                f += "R"
            if self.tracking.bcast:
                f += "B"
        if self.dirty_cas:
            f += "d"
        if self.close_after_reply:
            f += "c"
        if self.is_unix:
            f += "U"
        if self.cluster_readonly:
            f += "r"
        if self.no_evict:
            f += "e"
        if self.no_touch:
            f += "T"
        return f or "N"

    def info_string(self, running_argv=None) -> str:
        """CLIENT LIST / INFO line.  ``running_argv``: the command this client
        is running (CLIENT LIST / INFO itself): it is still in Redis's query
        buffer then (qbuf) and its arguments are argv-mem.  The memory
        fields are memory.clients.measure's."""
        now = _monotonic()
        qbuf, argv_mem, multi_mem, omem, tot = self.server.memory.clients.measure(self, running_argv)
        qfree, rbs, rbp = self.server.memory.clients.buffer_figures(self, qbuf)
        cmd = self.last_cmd.fullname if self.last_cmd is not None else "NULL"
        # Redis 8's field list: 7.0's plus watch (7.4), lib-name/lib-ver
        # (7.2), io-thread (8.0: the main thread, as io-threads 1), the
        # per-client totals and 8.8's read and pipeline counters
        return (
            "id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=%d sub=%d psub=%d "
            "ssub=%d multi=%d watch=%d qbuf=%d qbuf-free=%d argv-mem=%d multi-mem=%d rbs=%d rbp=%d obl=0 "
            "oll=%d omem=%d tot-mem=%d events=r cmd=%s user=%s redir=%d resp=%d lib-name=%s lib-ver=%s "
            "io-thread=0 tot-net-in=%d tot-net-out=%d tot-cmds=%d read-events=%d "
            "parse-batch-cmd-sum=%d parse-batch-cnt=%d" % (
                self.id, self.addr, self.laddr, self.fd, self.name.decode("utf-8", "replace") if self.name else "",
                int(now - self.ctime), int(now - self.last_time), self.flags_string(), self.db.id,
                len(self.pubsub_channels or ()), len(self.pubsub_patterns or ()), len(self.pubsub_shard or ()),
                len(self.multi) if self.multi is not None else -1, len(self.watched or ()), qbuf,
                qfree, argv_mem, multi_mem, rbs, rbp, (omem + 16383) // 16384, omem, tot, cmd,
                self.user.name.decode("utf-8", "surrogateescape"),
                self.tracking.redirect if self.tracking else -1, self.resp,
                self.lib_name.decode("utf-8", "replace") if self.lib_name else "",
                self.lib_ver.decode("utf-8", "replace") if self.lib_ver else "",
                self.net_in, self.net_out, self.tot_cmds, self.read_events, self.pl_sum, self.pl_cnt))

    @property
    def null(self):
        return NULL3 if self.resp >= 3 else NULL_BULK

    @property
    def null_array(self):
        return NULL3 if self.resp >= 3 else NULL_ARRAY


_FLUSH = []


_BEFORE_REPLY = None


def set_before_reply(fn):
    """Install ``fn()`` to run before any reply is written (None removes
    it).  The AOF writes its buffer there: an acknowledged write is in the
    file first, as Redis writes the AOF in beforeSleep before sending
    replies.  ``Client.write`` itself is swapped, so that without such a
    function writing a reply costs nothing more."""
    global _BEFORE_REPLY
    _BEFORE_REPLY = fn
    Client.write = Client._plain_write if fn is None else Client._write_after_barrier
    _loop.set_write_switches(fn, _OBUF_FLOOR)


class _OutputBound:
    """The replies of one batch of requests when the normal class has an
    output limit: ``check()`` after each request writes them out (and so
    checks the limits) once they reach ``limit``, emptying ``out`` in place.
    Redis checks the limit after every reply; without this a single read of
    small requests with big replies (GET of a large value) would build all
    of them first."""
    __slots__ = ("c", "out", "limit", "seen", "total")

    def __init__(self, c, out, limit):
        self.c = c
        self.out = out
        self.limit = limit
        self.seen = self.total = 0

    def check(self):
        out = self.out
        n = len(out)
        i, total = self.seen, self.total
        while i < n:
            total += len(out[i])
            i += 1
        if total >= self.limit:
            self.c.write(out[:])
            del out[:]
            i = total = 0
        self.seen, self.total = i, total


def _bounded_gets(c, gets, out, limit):
    """``gets`` for one batch of pipelined requests under an output limit
    (see _OutputBound); no request is taken from a client being closed."""
    bound = _OutputBound(c, out, limit)

    def bounded():
        bound.check()
        if c.closing:
            return False
        return gets()
    return bounded


def _py_flush_pushes():
    """Write the messages queued by queue_push during this loop iteration."""
    clients = list(_FLUSH)
    _FLUSH.clear()
    for c in clients:
        if c.push_buf is not None and not c.closing:
            c.write([])
        else:
            c.push_buf = None


flush_pushes = _py_flush_pushes


def make_protocol_factory(server):
    def factory():
        return Client(server)
    return factory


if _c is not None:
    # the compiled per-read path (falls back to the methods above)
    _c.data_setup(UNAUTH_OUTPUT_LIMIT)
    Client.data_received = _c.data_received
    # pub/sub pushes (commands/pubsub.py's fan-out calls the compiled fanout)
    flush_pushes = _c.flush_pushes
    _c.push_setup(_FLUSH, flush_pushes, Client)

_sync()
