"""Atomic slot migration (Redis 8.4's CLUSTER MIGRATION; the idea of
cluster_asm.c, over a protocol of our own between Ophidis nodes).

The destination master is asked ``CLUSTER MIGRATION IMPORT`` for slot
ranges that one other master owns.  Its import task connects to that
source's client port (TLS when tls-replication, AUTH with masteruser /
masterauth as a replica would) and sends

    CLUSTER SYNCSLOTS START <task-id> <our node id> <start> <end> [...]

The source answers ``+OK`` followed by the slots' snapshot: one
``RESTORE key abs-ttl payload REPLACE ABSTTL`` per key as of one point in
time, then the marker ``CLUSTER SYNCSLOTS SNAPSHOT-EOF``: serialised in the
event loop for a small range, by a forked child for FORK_KEYS keys or more
(its pipe relayed to the connection; the writes streamed meanwhile wait on
our side until its marker has gone).  From the same moment the source is a
propagation target (replication/propagate.py): every write it propagates
whose keys hash to the ranges follows on the connection, in order (keyless
commands, MULTI/EXEC and SELECT are not sent; cluster mode has db 0 only).

The destination applies what it reads as its master's stream is applied
(a client that skips cluster redirections; what it runs propagates to the
destination's own replicas and AOF).  After the snapshot's marker it sends
``CLUSTER SYNCSLOTS PAUSE <task-id>``: once what it has not yet sent is within
cluster-slot-migration-handoff-max-lag-bytes and, after a forked snapshot,
the child's pipe has ended and the writes held meanwhile are sent (the
marker reaches the destination before that: "handoff-prep" until then),
the source stops streaming, holds the writes to those slots (their clients
wait, as under CLIENT PAUSE WRITE, for at most
cluster-slot-migration-write-pause-timeout ms) and answers with the marker ``CLUSTER SYNCSLOTS STREAM-EOF <its currentEpoch>``, after
every write it streamed.  The destination, having applied everything up to
it, takes the slots: they become its own with a configEpoch greater than
any it knows and than the source's, nodes.conf is saved, a PONG tells every
node and ``CLUSTER SYNCSLOTS DONE <task-id> <epoch>`` tells the source.  The
source gives the slots up on DONE (or on seeing them claimed with the
greater epoch on the bus, should DONE not arrive), deletes their keys
(propagated as DELs, as any slot lost to a newer configuration), then lets
the held clients run: they are redirected (MOVED) to the new owner.  No
client sees ASK or TRYAGAIN for the ranges.

A failed import (the link lost, the source refusing) deletes what it had
imported and is retried every second until it succeeds or is cancelled
(CLUSTER MIGRATION CANCEL); the source's side fails with the link, and on
the pause's timeout lets the held writes run where they are.  An idle
stream carries ``CLUSTER SYNCSLOTS PING`` every second; the destination
gives up after repl-timeout seconds without a byte.

Tasks are listed by CLUSTER MIGRATION STATUS: the active one, then the
finished ones (newest first, at most cluster-slot-migration-max-archived-tasks).
"""

from __future__ import annotations

import asyncio
import os
import time

import hiredis

from .. import log, proctitle
from ..cmdtable.keys import cluster_keys
from ..cmdtable.registry import lookup_fullname
from ..errors import RedisError
from ..net.client import Client
from ..persistence.child import fork
from ..persistence.rdbpayload import dump_payload
from ..protocol.resp import encode_argv
from ..replication.propagate import TO_REPL, propagate_pending
from . import TODO_FSYNC_CONFIG, TODO_SAVE_CONFIG, TODO_UPDATE_STATE
from .node import mstime, random_name
from .slots import key_hash_slot

IMPORT = "import"
MIGRATE = "migrate"
MARKER = (b"cluster", b"syncslots")
SNAPSHOT_EOF = encode_argv([b"CLUSTER", b"SYNCSLOTS", b"SNAPSHOT-EOF"])
PING = encode_argv([b"CLUSTER", b"SYNCSLOTS", b"PING"])
PING_INTERVAL = 1000        # ms between the source's keep-alives on an idle stream
RETRY_DELAY = 1000          # ms between a failed import and its next attempt
CRON_INTERVAL = 0.1
FORK_KEYS = 1000            # a snapshot of more keys is serialised by a forked child
HANDOFF_INTERVAL = 0.005


class Failed(Exception):
    """An import attempt ends with this error text."""


def ranges_text(ranges) -> str:
    """Redis's slot range string: "0-100 200-300"."""
    return " ".join("%d-%d" % r for r in ranges)


def check_ranges(ranges):
    """validateSlotRanges: well-formed and not overlapping (slots are
    already numbers of 0..16383)."""
    seen = set()
    for a, b in ranges:
        if a > b:
            raise RedisError("ERR start slot number %d is greater than end slot number %d" % (a, b))
        for s in range(a, b + 1):
            if s in seen:
                raise RedisError("ERR Slot %d specified multiple times" % s)
            seen.add(s)
    return seen


class Task:
    """One migration, as the destination (import) or the source (migrate)
    sees it; both sides share its id."""

    __slots__ = ("id", "operation", "ranges", "slots", "state", "source", "dest", "error", "retries",
                 "create_time", "start_time", "end_time", "paused_time", "client", "runner", "writer",
                 "retry_at", "last_io", "child", "rfd", "pending", "tail")

    def __init__(self, task_id: str, operation: str, ranges):
        self.id = task_id
        self.operation = operation
        self.ranges = list(ranges)
        self.slots = frozenset(s for a, b in self.ranges for s in range(a, b + 1))
        self.state = "none"
        self.source = ""
        self.dest = ""
        self.error = ""
        self.retries = 0
        self.create_time = mstime()
        self.start_time = -1
        self.end_time = -1
        self.paused_time = 0
        self.client = None      # the source's side: the destination's connection
        self.runner = None      # the destination's side: the asyncio task
        self.writer = None      # the destination's side: the connection
        self.retry_at = 0
        self.last_io = 0        # the source's side: when the stream last had bytes
        self.child = None       # the source's side: the snapshot's forked child,
        self.rfd = None         # the pipe it writes the snapshot to,
        self.pending = None     # the writes streamed meanwhile (sent after it),
        self.tail = b""         # the last bytes relayed (its end marker)

    def status(self) -> list:
        """CLUSTER MIGRATION STATUS's fields, in Redis's order."""
        pause = 0
        if self.operation == MIGRATE and self.state == "completed":
            pause = self.end_time - self.paused_time
        return [("id", self.id), ("slots", ranges_text(self.ranges)), ("source", self.source),
                ("dest", self.dest), ("operation", self.operation), ("state", self.state),
                ("last_error", self.error), ("retries", self.retries), ("create_time", self.create_time),
                ("start_time", self.start_time), ("end_time", self.end_time), ("write_pause_ms", pause)]


class Asm:
    """The cluster's slot migrations (``cluster.asm``); also the source's
    propagation target while it streams a migration."""

    bit = TO_REPL

    def __init__(self, cluster):
        self.cl = cluster
        self.srv = cluster.srv
        self.tasks: list = []        # the active task (one at a time, as Redis)
        self.archived: list = []     # finished tasks, newest first
        self.streaming = None        # the migrate task fed with writes
        self.paused: frozenset = frozenset()   # slots whose writes wait (the handoff)
        self.held: list = []         # clients waiting for the handoff
        self._timer = None
        self.reap: list = []         # snapshot children not reaped yet

    # -- lookups ----------------------------------------------------------------------------------
    def find(self, task_id: str):
        for t in self.tasks:
            if t.id == task_id:
                return t
        for t in self.archived:
            if t.id == task_id:
                return t
        return None

    def active_count(self) -> int:
        return sum(1 for t in self.tasks if t.operation == IMPORT or t.state != "failed")

    def _archive(self, t):
        if t in self.archived:
            return
        t.end_time = mstime()
        if t in self.tasks:
            self.tasks.remove(t)
        self.archived.insert(0, t)
        del self.archived[max(1, self.srv.config["cluster-slot-migration-max-archived-tasks"]):]

    def _schedule(self):
        if self._timer is None and (self.tasks or self.held or self.reap):
            # (quicker around a handoff)
            quick = self.paused or (self.streaming is not None and self.streaming.state == "handoff-prep")
            self._timer = self.srv.loop.call_later(HANDOFF_INTERVAL if quick else CRON_INTERVAL, self._cron)

    def _cron(self):
        self._timer = None
        now = mstime()
        for ch in list(self.reap):
            if ch.poll() is not None:
                ch.close()
                self.reap.remove(ch)
        for t in list(self.tasks):
            if t.operation == MIGRATE:
                self._migrate_cron(t, now)
            elif t.state == "failed" and now >= t.retry_at:
                self._retry(t)
        self._schedule()

    # -- the destination: IMPORT ------------------------------------------------------------------
    def _source_of(self, ranges, current=None):
        """validateImportSlotRanges: the one master owning every slot."""
        cl = self.cl
        if cl.myself.is_slave:
            raise RedisError("ERR slot migration not allowed on replica.")
        if cl.importing or cl.migrating:
            raise RedisError("ERR all slot states must be STABLE to start a slot migration task.")
        source = None
        for a, b in ranges:
            for t in self.tasks:
                if t is not current and t.operation == IMPORT and any(
                        x <= b and y >= a for x, y in t.ranges):
                    raise RedisError("ERR overlapping import exists for slot range: %d-%d" % (a, b))
            for s in range(a, b + 1):
                n = cl.slots[s]
                if n is None:
                    raise RedisError("ERR slot has no owner: %d" % s)
                if source is None:
                    source = n
                elif n is not source:
                    raise RedisError("ERR slots belong to different source nodes")
        return source

    def import_slots(self, ranges) -> str:
        """CLUSTER MIGRATION IMPORT: a new import task; its id."""
        source = self._source_of(ranges)
        cl = self.cl
        if source is cl.myself:
            raise RedisError("ERR this node is already the owner of the slot range")
        if self.tasks:
            cur = self.tasks[0]
            if cur.state != "failed":
                raise RedisError("ERR another ASM task is already in progress")
            self._cancel(cur, "new import requested")
        t = Task(random_name().decode(), IMPORT, ranges)
        t.source = source.name.decode()
        t.dest = cl.myself.name.decode()
        self.tasks.append(t)
        log.notice("Import task %s created: src=%s, dest=%s, slots=%s" % (
            t.id, t.source, t.dest, ranges_text(t.ranges)))
        self._start(t)
        return t.id

    def _start(self, t):
        if t.start_time < 0:
            t.start_time = mstime()
        t.state = "connecting"
        t.runner = self.srv.loop.create_task(self._run_import(t))
        self._schedule()

    def _retry(self, t):
        try:
            source = self._source_of(t.ranges, t)
        except RedisError as e:
            t.error = str(e)[4:] if str(e).startswith("ERR ") else str(e)
            t.retry_at = mstime() + RETRY_DELAY
            return
        if source is self.cl.myself:
            t.retry_at = mstime() + RETRY_DELAY
            return
        t.retries += 1
        t.source = source.name.decode()
        self._start(t)

    async def _run_import(self, t):
        try:
            await self._import(t)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - whatever ends an attempt fails it (and it is retried)
            if t in self.tasks and t.state not in ("failed", "canceled", "completed"):
                if not isinstance(e, (Failed, OSError, asyncio.TimeoutError, EOFError)):
                    log.warning("Import task %s: unexpected %r" % (t.id, e))
                text = str(e) or e.__class__.__name__
                self._import_failed(t, text)
        finally:
            if t.writer is not None:
                t.writer.close()
                t.writer = None

    def _fail_text(self, t, text: str) -> str:
        return "%s (state: %s, rdb_channel_state: none)" % (text, t.state)

    def _import_failed(self, t, text: str):
        t.error = self._fail_text(t, text)
        log.warning("Import task %s failed: slots=%s, err=%s" % (t.id, ranges_text(t.ranges), t.error))
        t.state = "failed"
        t.retry_at = mstime() + RETRY_DELAY
        self._trim(t)

    def _trim(self, t):
        """What an ended import left in slots we do not own goes (propagated)."""
        cl = self.cl
        m = cl.myself
        for s in sorted(t.slots):
            if cl.slots[s] is not m and cl.count_keys_in_slot(s):
                cl.del_keys_in_slot(s)

    async def _import(self, t):
        srv = self.srv
        cl = self.cl
        cfg = srv.config
        t.state = "connecting"
        node = cl.lookup(t.source.encode())
        if node is None:
            raise Failed("source node %s is unknown" % t.source)
        tcp, tls_port = node.ports(cl)
        tls = srv.tls.client_context() if cfg["tls-replication"] else None
        port = tls_port if tls is not None else tcp
        timeout = cfg["repl-timeout"]
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(node.ip, port, ssl=tls, ssl_handshake_timeout=timeout if tls else None),
            timeout)
        t.writer = writer

        async def reply_line() -> bytes:
            line = await asyncio.wait_for(reader.readline(), timeout)
            if not line:
                raise Failed("connection lost")
            return line.rstrip(b"\r\n")

        t.state = "auth-reply"
        auth = cfg["masterauth"]
        if auth:
            user = cfg["masteruser"]
            writer.write(encode_argv([b"AUTH", user, auth] if user else [b"AUTH", auth]))
            r = await reply_line()
            if r.startswith(b"-"):
                raise Failed("AUTH to the source failed: %s" % r[1:].decode("utf-8", "replace"))
        t.state = "send-syncslots"
        argv = [b"CLUSTER", b"SYNCSLOTS", b"START", t.id, t.dest]
        for a, b in t.ranges:
            argv += [b"%d" % a, b"%d" % b]
        writer.write(encode_argv(argv))
        t.state = "syncslots-reply"
        r = await reply_line()
        if not r.startswith(b"+"):
            raise Failed("the source refused: %s" % r[1:].decode("utf-8", "replace"))
        t.state = "accumulate-buffer"
        log.notice("Import task %s started for slots: %s" % (t.id, ranges_text(t.ranges)))
        rd = hiredis.Reader()
        mc = Client(srv)
        mc.authenticated = True
        mc.user = srv.acl.superuser
        mc.is_master = True          # routed as our master's stream: no redirections
        mc.addr = "%s:%d" % (node.ip, port)
        mc.db = srv.dbs[0]
        while True:
            try:
                data = await asyncio.wait_for(reader.read(65536), timeout)
            except asyncio.TimeoutError:
                raise Failed("timeout: no data from the source for %d seconds" % timeout) from None
            if not data:
                raise Failed("connection lost")
            rd.feed(data)
            while True:
                req = rd.gets()
                if req is False:
                    break
                if req.__class__ is not list or not req:
                    continue
                if len(req) >= 3 and (req[0].lower(), req[1].lower()) == MARKER:
                    kind = req[2].upper()
                    if kind == b"SNAPSHOT-EOF":
                        t.state = "streaming-buffer"
                        writer.write(encode_argv([b"CLUSTER", b"SYNCSLOTS", b"PAUSE", t.id]))
                        t.state = "wait-stream-eof"
                    elif kind == b"STREAM-EOF":
                        epoch = int(req[3]) if len(req) > 3 and req[3].isdigit() else 0
                        self._takeover(t, epoch)
                        # the source gives the slots up on this, whatever it
                        # has heard of our epoch (the bus tells the others)
                        writer.write(encode_argv([b"CLUSTER", b"SYNCSLOTS", b"DONE", t.id,
                                                  b"%d" % cl.myself.config_epoch]))
                        await asyncio.wait_for(writer.drain(), timeout)
                        return
                    continue
                await self._apply(mc, req)

    async def _apply(self, mc, req):
        srv = self.srv
        r = srv.process_command(mc, req)
        while mc.paused_queue is not None:
            # CLIENT PAUSE holds our applier too: run it when the pause ends
            if mc in srv.paused_clients:
                srv.paused_clients.remove(mc)
            mc.paused_queue = None
            while srv.still_paused():
                await asyncio.sleep(0.01)
            r = srv.process_command(mc, req)
        if r is not None and r[:1] == b"-":
            # what the source sends succeeded there: an error here (OOM ...)
            # would lose data, so the attempt fails (and is retried)
            raise Failed("error applying %s: %s" % (
                req[0].decode("utf-8", "replace"), r[1:].rstrip().decode("utf-8", "replace")))

    def _takeover(self, t, source_epoch=0):
        """Everything up to the source's STREAM-EOF is applied: the slots
        become ours with a configEpoch above every one we know and the
        source's currentEpoch (it sent it with the marker), and every node
        is told."""
        cl = self.cl
        m = cl.myself
        t.state = "takeover"
        for s in sorted(t.slots):
            cl.del_slot(s)
            cl.add_slot(m, s)
        cl.current_epoch = max(cl.max_epoch(), source_epoch) + 1
        m.config_epoch = cl.current_epoch
        log.notice("configEpoch set to %d after importing slots %s" % (m.config_epoch, ranges_text(t.ranges)))
        cl.save_config_or_die(True)
        cl.do_before_sleep(TODO_UPDATE_STATE)
        cl.broadcast_pong()
        t.state = "completed"
        log.notice("Import task %s completed for slots: %s" % (t.id, ranges_text(t.ranges)))
        self._archive(t)

    # -- the source: SYNCSLOTS ----------------------------------------------------------------------
    def syncslots_start(self, c, task_id: str, dest: str, ranges) -> bytes:
        """The destination's request: the snapshot of the slots now, their
        writes from now on."""
        cl = self.cl
        m = cl.myself
        if m.is_slave:
            raise RedisError("ERR slot migration not allowed on replica.")
        slots = check_ranges(ranges)
        for s in slots:
            if cl.slots[s] is not m:
                raise RedisError("ERR I'm not the owner of hash slot %d" % s)
            if s in cl.migrating or s in cl.importing:
                raise RedisError("ERR all slot states must be STABLE to start a slot migration task.")
        if self.tasks:
            raise RedisError("ERR another ASM task is already in progress")
        t = Task(task_id, MIGRATE, ranges)
        t.source = m.name.decode()
        t.dest = dest
        t.client = c
        t.start_time = mstime()
        t.state = "send-bulk-and-stream"
        d = self.srv.dbs[0].d
        nkeys = sum(d.count_in_slot(s) for s in t.slots)
        self.tasks.append(t)
        self.streaming = t
        self.srv.propagator.attach(self)
        t.last_io = mstime()
        log.notice("Migrate task %s started for slots: %s (number of keys at start: %d)" % (
            t.id, ranges_text(t.ranges), nkeys))
        self._schedule()
        if nkeys >= FORK_KEYS:
            try:
                self._fork_snapshot(t)
                return b"+OK\r\n"         # the snapshot follows from the child
            except OSError as e:
                log.warning("Can't fork for the slot migration's snapshot (%s): serialising it here" % e)
        snapshot = self._snapshot(t)
        t.state = "send-stream"
        return b"+OK\r\n" + snapshot + SNAPSHOT_EOF

    def _fork_snapshot(self, t):
        """The snapshot at this point in time, serialised by a forked child
        into a pipe we relay to the destination; the writes streamed
        meanwhile wait (t.pending) for its end marker."""
        delay = max(0, self.srv.config["rdb-key-save-delay"])
        rfd, wfd = os.pipe()

        def body(ctx):
            os.close(rfd)
            with open(wfd, "wb", buffering=1 << 20) as f:
                f.write(self._snapshot(t, delay))
                f.write(SNAPSHOT_EOF)
            return 0
        try:
            child = fork(self.srv, body, what="Slot migration snapshot child", title=proctitle.RDB_TO_REPLICAS)
        except OSError:
            os.close(rfd)
            os.close(wfd)
            raise
        os.close(wfd)
        os.set_blocking(rfd, False)
        t.child = child
        t.rfd = rfd
        t.pending = []
        t.tail = b""
        self.srv.loop.add_reader(rfd, self._relay, t)

    def _relay(self, t):
        """The child's snapshot bytes go on to the destination; at its end
        (the marker last: the child succeeded) the held writes follow."""
        try:
            data = os.read(t.rfd, 1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if data:
            t.tail = (t.tail + data)[-len(SNAPSHOT_EOF):]
            c = t.client
            if c is not None and not c.closing:
                c.write([data])
                t.last_io = mstime()
            return
        self._end_child(t)
        if t.tail != SNAPSHOT_EOF:
            self._migrate_failed(t, "the snapshot child failed")
            return
        pending = t.pending
        t.pending = None
        if pending and t.client is not None:
            t.client.write([b"".join(pending)])
        if t.state == "send-bulk-and-stream":
            t.state = "send-stream"
        # (in handoff-prep the destination asked to pause as soon as it read
        # the marker, maybe before this end of the pipe: the cron hands off)

    def _end_child(self, t, kill=False):
        if t.rfd is not None:
            self.srv.loop.remove_reader(t.rfd)
            os.close(t.rfd)
            t.rfd = None
        ch = t.child
        t.child = None
        if ch is not None:
            if kill:
                ch.kill()
                ch.close()
            elif ch.poll() is None:
                self.reap.append(ch)       # reaped by the cron
            else:
                ch.close()

    def _snapshot(self, t, key_delay=0) -> bytes:
        """The slots' keys as RESTOREs; key_delay: rdb-key-save-delay's
        microseconds after each key (the forked child only, as an RDB
        save's child: a test slows it down)."""
        srv = self.srv
        db = srv.dbs[0]
        d = db.d
        cfg = srv.config
        now = mstime()
        out = []
        for s in sorted(t.slots):
            n = d.count_in_slot(s)
            if not n:
                continue
            for k in d.keys_in_slot(s, n):
                v = d.get(k)
                if v is None:
                    continue
                when = db.expires.get(k)
                if when is not None and when <= now:
                    continue        # expired: its DEL follows in the stream if it propagates
                out.append(encode_argv([b"RESTORE", k, b"%d" % (when or 0), dump_payload(v, cfg),
                                        b"REPLACE", b"ABSTTL"]))
                if key_delay:
                    time.sleep(key_delay / 1e6)
        return b"".join(out)

    def feed(self, ops, wrap):
        """A propagated unit: the writes to the streamed slots go on."""
        t = self.streaming
        if t is None:
            return
        out = []
        for dbid, data, mask in ops:
            if not mask & TO_REPL or dbid != 0:
                continue
            rd = hiredis.Reader()
            rd.feed(data)
            argv = rd.gets()
            cmd = lookup_fullname(argv)
            if cmd is None:
                continue
            keys = cluster_keys(cmd, argv)
            if not keys:
                continue        # keyless (FLUSHALL, FUNCTION ...): each node runs its own
            slots = {key_hash_slot(k) for k in keys}
            if len(slots) > 1:
                if slots & t.slots:
                    self._migrate_failed(t, "cross-slot command in the stream")
                    return
                continue
            if slots.pop() in t.slots:
                out.append(data)
        if out:
            if t.pending is not None:
                t.pending.append(b"".join(out))     # after the child's snapshot
            else:
                t.client.write([b"".join(out)])
                t.last_io = mstime()

    def _stop_streaming(self):
        if self.streaming is not None:
            self.streaming = None
            self.srv.propagator.detach(self)

    def syncslots_pause(self, c, task_id: str):
        """The destination applied the snapshot: once the snapshot child's
        output and the writes held meanwhile are all sent and what we have
        not sent yet is within cluster-slot-migration-handoff-max-lag-bytes,
        writes to the slots wait and the stream ends (its STREAM-EOF marker
        is the reply, now or from the cron)."""
        t = self.streaming
        if t is None or t.id != task_id or t.client is not c:
            raise RedisError("ERR no slot migration task %s streams to this connection" % task_id)
        log.notice("Migrate task %s preparing to handoff for slots: %s" % (t.id, ranges_text(t.ranges)))
        if not self._drained(t):
            t.state = "handoff-prep"        # the stream drains first (the cron)
            self._reschedule()
            return None
        return self._handoff(t)

    def _drained(self, t) -> bool:
        """Nothing of the stream is left to send but what the lag allows.
        The destination asks to pause on reading the snapshot's marker,
        which the relay sends before it has seen the child's pipe end and
        sent the writes held meanwhile (t.pending): those go first."""
        if t.pending is not None:
            return False
        tr = t.client.transport
        lag = tr.get_write_buffer_size() if tr is not None else 0
        return lag <= self.srv.config["cluster-slot-migration-handoff-max-lag-bytes"]

    def _handoff(self, t) -> bytes:
        propagate_pending(self.srv)
        self._stop_streaming()
        t.state = "handoff"
        t.paused_time = mstime()
        self.paused = t.slots
        self.cl.invalidate_fast()
        self._reschedule()
        return encode_argv([b"CLUSTER", b"SYNCSLOTS", b"STREAM-EOF", b"%d" % self.cl.current_epoch])

    def syncslots_done(self, c, task_id: str, epoch: int):
        """The destination took the slots (with ``epoch``): they are its
        now, here too, without waiting for the bus (where an epoch bumped
        meanwhile could make us keep them); their keys go."""
        t = self.tasks[0] if self.tasks else None
        if t is None or t.id != task_id or t.client is not c or t.state != "handoff":
            return None
        cl = self.cl
        dest = cl.lookup(t.dest.encode())
        if dest is None:
            return None
        m = cl.myself
        if epoch > dest.config_epoch:
            dest.config_epoch = epoch
        if epoch > cl.current_epoch:
            cl.current_epoch = epoch
        for s in sorted(t.slots):
            had = cl.slots[s] is m and cl.count_keys_in_slot(s)
            cl.del_slot(s)
            cl.add_slot(dest, s)
            if had:
                cl.del_keys_in_slot(s)
        cl.do_before_sleep(TODO_SAVE_CONFIG | TODO_UPDATE_STATE | TODO_FSYNC_CONFIG)
        if m.is_master and m.numslots == 0 and self.srv.config["cluster-allow-replica-migration"]:
            log.warning("Configuration change detected. Reconfiguring myself as a replica of %s" %
                        dest.name.decode())
            cl.set_master(dest)
        self._migrate_cron(t, mstime())     # completed: the held writes run (MOVED)
        return None

    def _reschedule(self):
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._schedule()

    def hold(self, c, argv):
        """A write to a slot being handed off waits for the handoff."""
        c.paused_queue = argv
        self.held.append(c)
        self._schedule()

    def _release(self):
        self.paused = frozenset()
        self.cl.invalidate_fast()
        waiting = self.held
        self.held = []
        srv = self.srv
        for c in waiting:
            argv = c.paused_queue
            c.paused_queue = None
            if c.closing or argv is None:
                continue
            r = srv.process_command(c, argv)
            if r is not None:
                c.write([r])
            c.resume()

    def _migrate_cron(self, t, now):
        cl = self.cl
        if t.state == "handoff":
            dest = cl.lookup(t.dest.encode())
            if dest is not None and all(cl.slots[s] is dest for s in t.slots):
                t.state = "completed"
                self._archive(t)
                log.notice("Migrate task %s completed for slots: %s" % (t.id, ranges_text(t.ranges)))
                self._release()
            elif now - t.paused_time > self.srv.config["cluster-slot-migration-write-pause-timeout"]:
                self._migrate_failed(t, "write pause timeout")
        elif t.state == "handoff-prep":
            if t.client is None or t.client.closing:
                self._migrate_failed(t, "connection lost")
            elif self._drained(t):
                t.client.write([self._handoff(t)])
        elif t.state in ("send-stream", "send-bulk-and-stream"):
            if t.client is None or t.client.closing:
                self._migrate_failed(t, "connection lost")
            elif t.state == "send-stream" and now - t.last_io >= PING_INTERVAL:
                t.client.write([PING])      # the destination times out a silent source
                t.last_io = now

    def _migrate_failed(self, t, text: str):
        if t.state in ("failed", "canceled", "completed"):
            return
        t.error = self._fail_text(t, text)
        log.warning("Migrate task %s failed: slots=%s, err=%s" % (t.id, ranges_text(t.ranges), t.error))
        if self.streaming is t:
            self._stop_streaming()
        self._end_child(t, kill=True)
        t.pending = None
        t.state = "failed"
        c = t.client
        t.client = None
        if c is not None and not c.closing:
            c.close()
        self._archive(t)        # (the destination retries with a new connection)
        if self.paused or self.held:
            self._release()     # (one task at a time: the pause was this one's)

    # -- CANCEL -------------------------------------------------------------------------------------
    def cancel(self, task_id=None, reason="user request") -> int:
        """CLUSTER MIGRATION CANCEL ID task-id (ALL: None): how many."""
        n = 0
        for t in list(self.tasks):
            if task_id is None or t.id == task_id:
                self._cancel(t, reason)
                n += 1
        return n

    def _cancel(self, t, reason: str):
        text = "Cancelled due to %s" % reason
        if t.operation == IMPORT:
            if t.runner is not None and not t.runner.done():
                t.runner.cancel()
            t.runner = None
            if t.writer is not None:
                t.writer.close()
                t.writer = None
            t.error = self._fail_text(t, text)
            self._trim(t)
        else:
            self._migrate_failed(t, text)
        t.state = "canceled"
        self._archive(t)
        log.notice("%s task %s canceled: %s" % ("Import" if t.operation == IMPORT else "Migrate", t.id, reason))

    # -- INFO ---------------------------------------------------------------------------------------
    def info_lines(self) -> list:
        """CLUSTER INFO's cluster_slot_migration_* fields (our trimming is
        done at once, never by an active trim job: those counters stay 0)."""
        return ["cluster_slot_migration_active_tasks:%d" % self.active_count(),
                "cluster_slot_migration_active_trim_running:0",
                "cluster_slot_migration_active_trim_current_job_keys:0",
                "cluster_slot_migration_active_trim_current_job_trimmed:0",
                "cluster_slot_migration_stats_active_trim_started:0",
                "cluster_slot_migration_stats_active_trim_completed:0",
                "cluster_slot_migration_stats_active_trim_cancelled:0"]
