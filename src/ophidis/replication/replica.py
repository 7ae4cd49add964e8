"""The replica side of replication: REPLICAOF host port (replication.c's
replica half).

A task keeps a link to the master: PING, AUTH (masterauth/masteruser),
REPLCONF listening-port / ip-address and capa (eof, psync2), then PSYNC.

* With a history (our replication id and offset are valid: we were a
  master, or the link dropped after a sync, or the RDB file we started from
  had replication info) we ask ``PSYNC <replid> <offset+1>``; the master
  answers ``+CONTINUE [<replid>]`` and sends the stream from there, or
* ``+FULLRESYNC <replid> <offset>`` and the RDB payload (``$<len>`` or,
  diskless, ``$EOF:<40-byte mark>`` ... mark), which replaces the dataset.

The stream's commands run through ``process_command`` on a master client
(replies discarded; MULTI/EXEC and SELECT work as for any client).  The
replication offset (the feed's ``offset``) advances by each applied
command's bytes, except inside MULTI ... EXEC, which counts when EXEC has
run: a link lost in the middle of a transaction continues from before its
MULTI.  The applied bytes go, unchanged, into our backlog and to our own
replicas (chained replication).  ``REPLCONF GETACK`` is answered with
``REPLCONF ACK <offset>`` and an ACK is sent every second; no data for
``repl-timeout`` seconds drops the link.  A lost link is retried at once,
then every second.

While a replica, writes from other clients get READONLY (replica-read-only),
keys do not expire on their own (the master's DELs remove them), and every
command takes the general path.  REPLICAOF NO ONE turns the server back into
a master with the data it has; its replication id becomes the secondary one
(valid up to the current offset), so its former siblings continue with it.
"""

from __future__ import annotations

import asyncio
import collections
import io
import socket
import sys
import threading
import time

import hiredis

from .. import crash, log
from ..cmdtable.registry import lookup_fullname
from ..cmdtable.keys import get_keys
from ..keyspace.db import stats
from ..net.client import Client
from ..persistence.rdbdecode import LoadAborted
from ..persistence.rdbformat import RdbError
from ..persistence.snapshot import LoadError
from ..protocol.resp import encode_request, request_size

_HANDSHAKE_TIMEOUT = "Timeout connecting to the MASTER..."
_TRANSFER_TIMEOUT = ("Timeout receiving bulk data from MASTER... If the problem persists try to set the "
                     "'repl-timeout' parameter in redis.conf to a larger value.")


class LinkDone(ConnectionError):
    """The link ends for a reason already logged."""


class ReplTimeout(LinkDone):
    pass


class _MarkBroken(LoadError):
    pass


def _check_mark(reader, mark):
    """After a diskless payload's RDB: its EOF mark (in the parsing thread)."""
    try:
        ok = bytes(reader.read(len(mark))) == mark
    except RdbError:
        ok = False
    if not ok:
        log.warning("Replication stream EOF marker is broken")
        raise _MarkBroken("EOF mark")


class _Pipe:
    """Payload bytes from the loop (put) to the parsing thread (take),
    at most ``limit`` of them waiting: the loop stops reading the socket
    until the parser has taken them."""

    def __init__(self, loop, limit):
        self.loop = loop
        self.limit = limit
        self.cond = threading.Condition()
        self.chunks = collections.deque()
        self.queued = 0
        self.closed = False
        self.aborted = False
        self.reason = "Success"
        self.space = asyncio.Event()

    async def room(self):
        while self.queued >= self.limit and not self.aborted:
            self.space.clear()
            await self.space.wait()

    def put(self, data):
        with self.cond:
            self.chunks.append(data)
            self.queued += len(data)
            self.cond.notify()

    def close(self, reason):
        """No more data: the parser sees the end once it has taken the rest."""
        with self.cond:
            if not self.closed:
                self.closed = True
                self.reason = reason
            self.cond.notify()

    def abort(self):
        with self.cond:
            self.closed = self.aborted = True
            self.cond.notify()

    def take(self, n) -> bytes:
        """(thread) Up to ``n`` bytes, waiting for them; b"" at the end."""
        with self.cond:
            while not self.chunks and not self.closed:
                self.cond.wait()
            if self.aborted:
                raise LoadAborted()
            if not self.chunks:
                return b""
            data = self.chunks.popleft()
            if len(data) > n:
                self.chunks.appendleft(data[n:])
                data = data[:n]
            self.queued -= len(data)
        try:
            self.loop.call_soon_threadsafe(self.space.set)
        except RuntimeError:        # the loop is closed: the server is exiting
            pass
        return data


async def _timed(aw, cfg, message):
    """``aw`` within repl-timeout, else Redis's log line and a dropped link.
    The limit is the directive's value at each check, once a second (as
    Redis's replicationCron checks it): a CONFIG SET of repl-timeout applies
    to a wait already under way."""
    task = asyncio.ensure_future(aw)
    start = time.monotonic()
    try:
        while True:
            left = start + cfg["repl-timeout"] - time.monotonic()
            if left <= 0:
                task.cancel()
                log.warning(message)
                raise ReplTimeout(message)
            done, _ = await asyncio.wait((task,), timeout=min(left, 1.0))
            if done:
                return task.result()
    except asyncio.CancelledError:
        task.cancel()
        raise


class ReplicaLink:
    def __init__(self, srv, host: str, port: int):
        self.srv = srv
        self.host = host
        self.port = port
        self.state = "connect"
        self.task = None
        self.writer = None
        self.last_io = time.time()
        self.sync_in_progress = False
        self.sync_start = 0             # the offset of the full sync being loaded (FULLRESYNC <id> <offset>)
        self.link_down_since = time.time()
        self.stopped = False
        self.client = None
        self.history = False      # Redis's cached master: PSYNC <replid> <offset+1> possible
        self.stream_db = 0        # the master stream's selected database
        self.read_offset = 0      # stream bytes read (slave_read_repl_offset)
        self.sync_total = -1
        self.sync_read = 0
        self.sync_last_io = 0.0
        self.own_expires = {}     # (dbid, key) written here with a TTL (a writable replica)
        self.rd = None            # the stream's parser state while connected
        self.raw = bytearray()
        self.used = 0
        self.held = None          # (request, size) postponed by CLIENT PAUSE, run when it ends
        self.newline_sent = 0     # the second of the last keep-alive newline sent while loading

    # -- lifecycle --------------------------------------------------------------------
    def start(self):
        self.task = self.srv.loop.create_task(self._run())

    def stop(self):
        self.stopped = True
        if self.writer is not None:
            try:
                self.writer.close()
            except Exception:  # noqa: BLE001
                pass
        if self.task is not None:
            self.task.cancel()

    def has_history(self) -> bool:
        return self.history

    @property
    def offset(self) -> int:
        return self.srv.repl_feed.offset

    async def _run(self):
        first = True
        while not self.stopped:
            if not first:
                await asyncio.sleep(1)
                if self.stopped:
                    break
            first = False
            try:
                await self._session()
            except asyncio.CancelledError:
                raise
            except LinkDone:
                pass                    # logged where it happened
            except Exception as e:  # noqa: BLE001
                if not self.stopped:
                    log.warning("Error condition on socket for SYNC: %s" % (e or type(e).__name__))
            finally:
                if self.writer is not None:
                    try:
                        self.writer.close()
                    except Exception:  # noqa: BLE001
                        pass
                    self.writer = None
                was_up = self.state == "connected"
                self.state = "connect"
                self.sync_in_progress = False
                if was_up and not self.stopped:
                    self.link_down_since = time.time()
                    log.notice("Connection with master lost.")
                    log.notice("* Caching the disconnected master state.")
                    log.notice("Reconnecting to MASTER %s:%d" % (self.host, self.port))
                    first = True       # reconnect at once: the backlog may be recycled

    def _link_up(self) -> bool:
        """Connected, and the master has not closed the link: its FIN or
        RST is looked for in the socket itself (without reading), so INFO
        and ROLE see the link down as soon as the kernel does, not when
        the session's coroutine next runs (Redis handles the event in the
        same turn as the other clients' ones)."""
        if self.state != "connected":
            return False
        w = self.writer
        sock = w.get_extra_info("socket") if w is not None else None
        if sock is None:
            return True
        try:
            with socket.fromfd(sock.fileno(), socket.AF_INET, socket.SOCK_STREAM) as s:
                return s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            return False

    # -- one connection ---------------------------------------------------------------
    async def _session(self):
        srv = self.srv
        cfg = srv.config
        feed = srv.repl_feed
        self.state = "connecting"
        log.notice("Connecting to MASTER %s:%d" % (self.host, self.port))
        timeout = cfg["repl-timeout"]
        src = cfg["bind-source-addr"]
        # tls-replication: the master's port is its TLS port (the handshake
        # is part of connecting)
        tls = srv.tls.client_context() if cfg["tls-replication"] else None
        reader, writer = await _timed(
            asyncio.open_connection(self.host, self.port, local_addr=(src, 0) if src else None, ssl=tls,
                                    ssl_handshake_timeout=timeout if tls else None),
            cfg, _HANDSHAKE_TIMEOUT)
        self.writer = writer
        log.notice("MASTER <-> REPLICA sync started")

        async def ask(*args):
            writer.write(encode_request(*args))
            await writer.drain()
            line = await _timed(reader.readline(), cfg, _HANDSHAKE_TIMEOUT)
            if not line:
                raise ConnectionError("connection lost")
            return line.rstrip(b"\r\n")

        self.state = "handshake"
        r = await ask("PING")
        if r.startswith(b"-") and not r.startswith((b"-NOAUTH", b"-NOPERM", b"-ERR operation not permitted")):
            raise ConnectionError("Error reply to PING from master: '%s'" % r[1:].decode("utf-8", "replace"))
        log.notice("Master replied to PING, replication can continue...")
        auth = cfg["masterauth"]
        if auth:
            user = cfg["masteruser"]
            r = await (ask("AUTH", user, auth) if user else ask("AUTH", auth))
            if r.startswith(b"-"):
                raise ConnectionError("Unable to AUTH to MASTER: %s" % r[1:].decode("utf-8", "replace"))
        await ask("REPLCONF", "listening-port", cfg["replica-announce-port"] or (
            cfg["tls-port"] if cfg["tls-replication"] and cfg["tls-port"] else cfg["port"]))
        if cfg["replica-announce-ip"]:
            await ask("REPLCONF", "ip-address", cfg["replica-announce-ip"])
        await ask("REPLCONF", "capa", "eof", "capa", "psync2")
        if self.history:
            want_id, want_off = srv.replid, feed.offset + 1
            log.notice("Trying a partial resynchronization (request %s:%d)." % (want_id, want_off))
        else:
            want_id, want_off = "?", -1
            log.notice("Partial resynchronization not possible (no cached master)")
        failover = feed.failover
        if failover.state == "failover-in-progress":
            # the target of our FAILOVER promotes itself on this request
            writer.write(encode_request("PSYNC", want_id, want_off, "FAILOVER"))
        else:
            writer.write(encode_request("PSYNC", want_id, want_off))
        await writer.drain()
        while True:
            line = await _timed(reader.readline(), cfg, _HANDSHAKE_TIMEOUT)
            if not line:
                raise ConnectionError("connection lost during PSYNC")
            if line.strip():
                break
        line = line.rstrip(b"\r\n")
        failover.psync_reply(line.startswith((b"+CONTINUE", b"+FULLRESYNC")))
        if line.startswith(b"+CONTINUE"):
            self._continued(line)
            await self._stream(reader, writer)
            return
        if not line.startswith(b"+FULLRESYNC"):
            if line.startswith((b"-NOMASTERLINK", b"-LOADING")):
                log.notice("Master is currently unable to PSYNC but should be in the future: %s" %
                           line.decode("utf-8", "replace"))
            else:
                log.warning("Unexpected reply to PSYNC from master: %s" % line.decode("utf-8", "replace"))
            raise ConnectionError("PSYNC refused")
        parts = line.split()
        master_replid = parts[1].decode() if len(parts) > 1 else "?"
        start = int(parts[2]) if len(parts) > 2 else 0
        log.notice("Full resync from master: %s:%d" % (master_replid, start))
        self.state = "sync"
        self.sync_in_progress = True
        self.sync_start = start
        await self._sync(reader, master_replid)
        self.own_expires = {}
        srv.replid = master_replid
        feed.flush_replicas()
        feed.offset = start
        feed.clear_replid2()
        feed.create_backlog()
        self.read_offset = start
        self.stream_db = 0
        self.history = True
        self.sync_in_progress = False
        self.state = "connected"
        self.last_io = time.time()
        log.notice("MASTER <-> REPLICA sync: Finished with success")
        await self._stream(reader, writer)

    def _continued(self, line: bytes):
        """+CONTINUE [<replid>]: the master continues our history."""
        srv = self.srv
        feed = srv.repl_feed
        log.notice("Successful partial resynchronization with master.")
        new = line[10:].strip().decode("ascii", "replace")
        if len(new) == 40 and new != srv.replid:
            log.warning("Master replication ID changed to %s" % new)
            feed.replid2 = srv.replid
            feed.second_offset = feed.offset + 1
            srv.replid = new
            feed.disconnect_replicas()
        if feed.backlog is None:
            feed.create_backlog()
        self.read_offset = feed.offset
        self.state = "connected"
        self.last_io = time.time()
        log.notice("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.")

    # -- the full sync's payload (readSyncBulkPayload) --------------------------------
    def _socket_load(self) -> bool:
        """useDisklessLoad: parse the payload as it arrives."""
        srv = self.srv
        mode = srv.config["repl-diskless-load"]
        return mode == "swapdb" or (mode == "on-empty-db" and not any(db.d for db in srv.dbs))

    async def _sync(self, reader, master_replid):
        """Receive and load the payload: ``$<len>`` or ``$EOF:<mark>``.
        Parsed from the socket (repl-diskless-load swapdb, or on-empty-db
        and no data) or, received in full first, from memory; either way
        the loop serves clients while a thread parses (LOADING)."""
        cfg = self.srv.config
        # newlines before the payload are keep-alives while the master saves
        while True:
            line = await _timed(reader.readline(), cfg, _TRANSFER_TIMEOUT)
            if not line:
                raise ConnectionError("connection lost before the RDB payload")
            self.last_io = time.time()
            if line.strip():
                break
        line = line.rstrip(b"\r\n")
        if line.startswith(b"-"):
            log.warning("MASTER aborted replication with an error: %s" % line[1:].decode("utf-8", "replace"))
            raise LinkDone("master error")
        if not line.startswith(b"$"):
            log.warning("Bad protocol from MASTER, the first byte is not '$' (we received '%s'), are you sure "
                        "the host and port are right?" % line.decode("utf-8", "replace"))
            raise LinkDone("bad protocol")
        socket_load = self._socket_load()
        to = "to parser" if socket_load else "to disk"
        if line.startswith(b"$EOF:") and len(line) >= 45:
            mark, size = line[5:45], 0
            log.notice("MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF %s" % to)
        else:
            mark = None
            try:
                size = int(line[1:])
            except ValueError:
                size = 0
            log.notice("MASTER <-> REPLICA sync: receiving %d bytes from master %s" % (size, to))
        self.sync_total = size
        self.sync_read = 0
        if socket_load:
            await self._load_from_socket(reader, mark, size, master_replid)
        else:
            payload = await self._receive(reader, mark, size)
            await self._load_payload(payload)

    async def _receive(self, reader, mark, size) -> bytes:
        """The whole payload, before any of it is loaded."""
        buf = bytearray()
        if mark is None:
            while len(buf) < size:
                buf += await self._payload_chunk(reader, min(65536, size - len(buf)))
                self.sync_read = len(buf)
            return bytes(buf)
        while True:
            buf += await self._payload_chunk(reader)
            self.sync_read = len(buf)
            if buf.endswith(mark):
                return bytes(buf[:-len(mark)])

    async def _payload_chunk(self, reader, n=65536) -> bytes:
        """The next bytes of the payload, within repl-timeout."""
        chunk = await _timed(reader.read(n), self.srv.config, _TRANSFER_TIMEOUT)
        if not chunk:
            raise ConnectionError("connection lost during the RDB payload")
        self.last_io = time.time()
        return chunk

    def _attach_to_new_master(self):
        """replicationAttachToNewMaster: our old history is gone, and our
        own replicas must sync again (no PSYNC from our backlog)."""
        self.history = False
        feed = self.srv.repl_feed
        feed.disconnect_replicas()
        feed.free_backlog()

    def _begin_load(self, swap, socket):
        """Before the parse: no AOF nor RDB child writing the old data;
        unless the old data stays until the new one is loaded (swapdb),
        it is flushed now."""
        srv = self.srv
        p = srv.persistence
        srv.aof.stop_for_sync()
        if p.child_pid is not None:
            if not socket:
                log.notice("Replica is about to load the RDB file received from the master, but there is a "
                           "pending RDB child running. Killing process %d and removing its temp file to avoid "
                           "any race" % p.child_pid)
            p.kill_child()
        if not swap:
            self._attach_to_new_master()
            log.notice("MASTER <-> REPLICA sync: Flushing old data")
            for db in srv.dbs:
                db.flush()
            srv.functions.clear()
        log.notice("MASTER <-> REPLICA sync: Loading DB in memory")

    def _keepalive(self):
        """replicationSendNewlineToMaster: a newline a second while loading
        (the master refreshes our ACK time)."""
        now = int(time.time())
        w = self.writer
        if now != self.newline_sent and w is not None and not w.is_closing():
            self.newline_sent = now
            try:
                w.write(b"\n")
            except (RuntimeError, OSError):     # the link is going: the load sees its end
                pass

    async def _load_payload(self, payload: bytes):
        """A payload received in full (to disk, in Redis): loaded while
        serving."""
        p = self.srv.persistence
        self._begin_load(False, False)
        try:
            res = await p.load_serving(p.reader(source=io.BytesIO(payload).read), len(payload),
                                       tick=self._keepalive)
        except LoadError:
            log.warning("Failed trying to load the MASTER synchronization DB from disk, check server logs.")
            raise LinkDone("load failed") from None
        self._loaded(res)

    async def _load_from_socket(self, reader, mark, size, master_replid):
        """A payload parsed as it arrives: the loop reads the socket into a
        pipe that the parsing thread drains (the master is held back when
        we parse slowly).  swapdb keeps the old data until the new one is
        complete (and serves it, async_loading, when the master continues
        our history); a failed load then leaves it in place."""
        srv = self.srv
        p = srv.persistence
        swap = srv.config["repl-diskless-load"] == "swapdb"
        self._begin_load(swap, True)
        srv.async_loading = swap and srv.replid == master_replid
        pipe = _Pipe(srv.loop, 1 << 16)
        pump = srv.loop.create_task(self._pump(reader, pipe, mark, size))
        ok = False
        try:
            res = await p.load_serving(p.reader(source=pipe.take), size, socket=True,
                                       then=(lambda r: _check_mark(r, mark)) if mark is not None else None,
                                       tick=self._keepalive)
            ok = True
        except _MarkBroken:
            raise LinkDone("bad EOF mark") from None
        except LoadError:
            log.warning("Failed trying to load the MASTER synchronization DB from socket: %s" % pipe.reason)
            raise LinkDone("load failed") from None
        finally:
            pipe.abort()
            pump.cancel()
            srv.async_loading = False
            if not ok and swap:
                log.notice("MASTER <-> REPLICA sync: Discarding temporary DB in background")
        if swap:
            self._attach_to_new_master()
            log.notice("MASTER <-> REPLICA sync: Swapping active DB with loaded DB")
        self._loaded(res)
        if swap:
            log.notice("MASTER <-> REPLICA sync: Discarding old DB in background")
        srv.dirty += 1

    async def _pump(self, reader, pipe, mark, size):
        """The payload from the socket into ``pipe``: ``size`` bytes, or up
        to the EOF mark (the master sends nothing after it before our
        first ACK).  A lost link or repl-timeout ends the pipe early."""
        got = 0
        tail = b""
        try:
            while mark is not None or got < size:
                await pipe.room()
                chunk = await self._payload_chunk(reader, 65536 if mark is not None else min(65536, size - got))
                got += len(chunk)
                self.sync_read = got
                pipe.put(chunk)
                if mark is not None:
                    tail = (tail + chunk)[-len(mark):]
                    if tail == mark:
                        break
        except ReplTimeout:
            pipe.close("Connection timed out")
            return
        except (ConnectionError, OSError) as e:
            pipe.close(getattr(e, "strerror", None) or "Connection reset by peer")
            return
        pipe.close("Success")

    def _loaded(self, res):
        """Install the parsed dataset (the loop does, between commands)."""
        srv = self.srv
        p = srv.persistence
        try:
            p._install(res, False, True)
        except LoadError:
            raise LinkDone("install failed") from None
        finally:
            p.loaded_expired = []
        mem = srv.memory
        if mem.tracking:
            mem.recompute()
            mem._reset_structures()
        # the master's offset is ours before the AOF restarts: its rewrite
        # covers the stream up to there (WAITAOF's FACK; readSyncBulkPayload
        # restarts the AOF after setting the offsets); no backlog nor
        # replica holds the old offset's stream any more
        srv.repl_feed.offset = self.sync_start
        srv.aof.restart_after_sync()

    async def _stream(self, reader, writer):
        srv = self.srv
        feed = srv.repl_feed
        cfg = srv.config
        mc = Client(srv)
        mc.authenticated = True
        mc.user = srv.acl.superuser    # our master may run anything
        mc.addr = "%s:%d" % (self.host, self.port)
        mc.is_master = True
        mc.db = srv.dbs[self.stream_db] if 0 <= self.stream_db < len(srv.dbs) else srv.dbs[0]
        # listed in CLIENT LIST (flag M); CLIENT KILL TYPE master closes the link
        mc.transport = writer.transport
        sock = writer.get_extra_info("socket")
        if sock is not None:
            mc.fd = sock.fileno()
            try:
                mc.laddr = "%s:%d" % sock.getsockname()[:2]
            except (OSError, TypeError):
                pass
        srv.clients[mc.id] = mc
        self.client = mc
        self.rd = hiredis.Reader()
        self.raw = bytearray()      # read, not yet part of the applied offset
        self.used = 0               # bytes of raw that belong to commands already run
        self.held = None
        self.writer = writer
        # the first ACK at once: a master holding the stream after an
        # EOF-marked payload starts it on this ACK
        writer.write(self._ack(feed.offset))
        acked = time.monotonic()
        try:
            while not self.stopped:
                try:
                    data = await asyncio.wait_for(reader.read(65536), 1.0)
                except asyncio.TimeoutError:
                    data = None
                if data is not None:
                    if not data:
                        raise ConnectionError("connection lost")
                    self.last_io = time.time()
                    self._apply(data)
                now = time.monotonic()
                if now - acked >= 1.0:
                    acked = now
                    writer.write(self._ack(feed.offset))
                    await writer.drain()
                if time.time() - self.last_io > cfg["repl-timeout"]:
                    log.warning("MASTER timeout: no data nor PING received...")
                    raise ConnectionError("master timeout")
        finally:
            self.client = None
            self.rd = None
            self.held = None        # not applied: PSYNC asks for it again
            mc.closing = True       # (a pause ending later skips it)
            srv.clients.pop(mc.id, None)
            if mc.multi is not None:
                mc.multi = None     # a transaction cut by the link: resent after PSYNC
            self.read_offset = feed.offset

    def _ack(self, off: int) -> bytes:
        """REPLCONF ACK <offset>, with FACK <offset our AOF fsynced> while
        the AOF is on (7.2: the master counts it for WAITAOF)."""
        fsynced = self.srv.aof.fsynced_reploff
        if fsynced == -1:
            return encode_request("REPLCONF", "ACK", off)
        return encode_request("REPLCONF", "ACK", off, "FACK", fsynced)

    def _apply(self, data: bytes):
        """Run the master's commands in ``data`` (whole units advance the
        offset and go, unchanged, to our backlog and replicas).  What ran
        is accounted even when the rest of ``data`` cannot be parsed (the
        link then drops and PSYNC continues after the last applied unit)."""
        srv = self.srv
        feed = srv.repl_feed
        mc = self.client
        raw = self.raw
        if len(raw) == self.used and data[:1] == b"\n":
            # an empty line between commands (masters before PSYNC2 sent
            # these as keep-alives): skipped, no part of the stream
            data = data.lstrip(b"\n")
            if not data:
                return
        rd = self.rd
        if data:
            rd.feed(data)
            raw += data
            self.read_offset += len(data)
        used = self.used
        applied = 0         # bytes of raw applied as whole units
        try:
            while mc.paused_queue is None:
                if self.held is not None:
                    req, size = self.held
                    self.held = None
                else:
                    req = rd.gets()
                    if req is False:
                        break
                    if req.__class__ is not list or not req:
                        continue
                    size = request_size(req)   # the master's canonical encoding
                name = req[0].lower()
                if name == b"replconf" and len(req) >= 2 and req[1].lower() == b"getack":
                    self.writer.write(self._ack(feed.offset + applied))
                else:
                    srv.applying_master = True
                    try:
                        rep = srv.process_command(mc, req)
                        if rep is not None and rep[:1] == b"-":
                            _critical(srv, rep, req)
                    except Exception as e:  # noqa: BLE001
                        log.warning("Error applying a command from the master: %r" % e)
                    finally:
                        srv.applying_master = False
                    if mc.paused_queue is not None:
                        # CLIENT PAUSE holds the master's commands too (it is not
                        # one of our replicas): the rest waits, unapplied
                        self.held = (req, size)
                        break
                used += size
                if mc.multi is None:
                    applied = used
        finally:
            if applied:
                # what we applied joins our history and our replicas' stream
                feed.feed_from_master(bytes(raw[:applied]))
                del raw[:applied]
                used -= applied
            self.used = used
            self.stream_db = mc.db.id

    def resume_after_pause(self, mc):
        """The pause that held the master's stream is over: run on."""
        if mc is self.client and not mc.closing:
            mc.paused_queue = None
            self._apply(b"")

    # -- a writable replica's own keys ------------------------------------------------
    def remember_expires(self, c, cmd, argv):
        """rememberSlaveKeyWithExpire: keys a client of ours wrote with a
        TTL expire here (the master knows nothing of them)."""
        db = c.db
        if not db.expires:
            return
        for key in get_keys(cmd, argv):
            if key in db.expires:
                self.own_expires[(db.id, key)] = True

    def expire_own_keys(self):
        """expireSlaveKeys, from the cron."""
        own = self.own_expires
        if not own:
            return
        now = time.time() * 1000
        dbs = self.srv.dbs
        for k in list(own):
            dbid, key = k
            db = dbs[dbid]
            when = db.expires.get(key)
            if when is None:
                del own[k]
            elif when <= now:
                db._delete_expired(key)
                del own[k]

    # -- reports ----------------------------------------------------------------------
    def info(self):
        srv = self.srv
        feed = srv.repl_feed
        up = self._link_up()
        lines = [
            "role:slave",
            "master_host:%s" % self.host,
            "master_port:%d" % self.port,
            "master_link_status:%s" % ("up" if up else "down"),
            "master_last_io_seconds_ago:%d" % (int(time.time() - self.last_io) if up else -1),
            "master_sync_in_progress:%d" % (1 if self.sync_in_progress else 0),
            "slave_read_repl_offset:%d" % self.read_offset,
            "slave_repl_offset:%d" % feed.offset,
        ]
        if self.sync_in_progress:
            lines += [
                "master_sync_total_bytes:%d" % self.sync_total,
                "master_sync_read_bytes:%d" % self.sync_read,
                "master_sync_left_bytes:%d" % (self.sync_total - self.sync_read),
                "master_sync_perc:%.2f" % ((self.sync_read * 100.0 / self.sync_total) if self.sync_total > 0 else 0),
                "master_sync_last_io_seconds_ago:%d" % int(time.time() - self.last_io),
            ]
        if not up:
            lines.append("master_link_down_since_seconds:%d" % int(time.time() - self.link_down_since))
        lines += [
            "slave_priority:%d" % srv.config["replica-priority"],
            "slave_read_only:%d" % (1 if srv.config["replica-read-only"] else 0),
            "replica_announced:%d" % (1 if srv.config["replica-announced"] else 0),
        ]
        return lines + feed.replica_lines() + feed.offset_lines()

    def role(self):
        return {"connect": b"connect", "connecting": b"connecting", "handshake": b"handshake",
                "sync": b"sync", "connected": b"connected"}[self.state]


# Redis's shared error objects keep their "-ERR " in the CRITICAL line;
# the other ERR errors are formatted without it (addReplyError).
_SHARED_ERR = frozenset((b"ERR", b"ERR syntax error", b"ERR no such key", b"ERR index out of range"))


def _error_text(reply: bytes) -> bytes:
    """The error as afterErrorReply logs it: a message of code ERR without
    its code, other codes (and the shared ERR objects) with their dash."""
    msg = reply[1:].rstrip(b"\r\n")
    if msg.startswith(b"ERR ") and msg not in _SHARED_ERR:
        msg = msg[4:]
    else:
        msg = b"-" + msg
    return msg[:4096]


def _critical(srv, reply: bytes, req):
    """Our master's command failed here: the data may diverge.  Redis's
    afterErrorReply for a master client: the CRITICAL line, the last bytes
    of our backlog, the count, and with propagation-error-behavior panic or
    panic-on-replicas (a read-only replica) a panic."""
    cmd = lookup_fullname(req)
    name = cmd.fullname if cmd is not None else "<unknown>"
    stats.unexpected_error_replies += 1
    log.warning("== CRITICAL == This replica is sending an error to its master: '%s' after processing "
                "the command '%s'" % (_error_text(reply).decode("utf-8", "replace"), name))
    bl = srv.repl_feed.backlog
    if bl is not None and bl.histlen > 0:
        log.warning("Latest backlog is: '%s'" % bl.latest_repr().decode("utf-8", "replace"))
    cfg = srv.config
    if cfg["replica-read-only"] and cfg["propagation-error-behavior"] in ("panic", "panic-on-replicas"):
        crash.panic(srv, "This replica panicked sending an error to its master after processing the "
                    "command '%s'" % name, "replica.py:%d" % sys._getframe().f_lineno)


def set_master(srv, host: str, port: int, stream_db=None):
    """REPLICAOF host port (replicationSetMaster)."""
    old = srv.replica_link
    feed = srv.repl_feed
    link = ReplicaLink(srv, host, port)
    if old is not None:
        old.stop()
        link.history = old.history
        link.stream_db = old.stream_db
        link.own_expires = old.own_expires
    else:
        # a master turning into a replica: its own id and offset may let it
        # continue with the new master (a former replica of ours, promoted)
        log.notice("Before turning into a replica, using my own master parameters to synthesize a "
                   "cached master: I may be able to synchronize with the new master with just a "
                   "partial transfer.")
        link.history = True
        link.stream_db = stream_db if stream_db is not None else 0
    srv.replica_link = link
    srv.is_replica = True
    srv.config.values["replicaof"] = (host, port)     # CONFIG REWRITE writes it
    srv.set_oom_score()
    feed.role_changed()
    srv.blocking_handler.disconnect_all_blocked()
    srv.update_server_slow()
    link.start()


def unset_master(srv):
    """REPLICAOF NO ONE (replicationUnsetMaster)."""
    link = srv.replica_link
    if link is None:
        return
    link.stop()
    feed = srv.repl_feed
    srv.replica_link = None
    srv.is_replica = False
    srv.config.values["replicaof"] = None
    srv.set_oom_score()
    feed.shift_replid()
    feed.disconnect_replicas()
    feed.last_db = -1
    feed.no_replicas_since = time.time()
    if feed.backlog is None:
        feed.create_backlog()
    feed.role_changed()
    srv.update_server_slow()
    srv.aof.restart_after_sync()
