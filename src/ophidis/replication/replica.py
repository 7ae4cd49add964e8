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
import sys
import time

import hiredis

from .. import crash, log
from ..commands import lookup_fullname
from ..commands.command_cmd import get_keys
from ..keyspace.db import stats
from ..net.client import Client
from ..protocol.resp import encode_request, request_size


_HANDSHAKE_TIMEOUT = "Timeout connecting to the MASTER..."
_TRANSFER_TIMEOUT = ("Timeout receiving bulk data from MASTER... If the problem persists try to set the "
                     "'repl-timeout' parameter in redis.conf to a larger value.")


class ReplTimeout(ConnectionError):
    pass


async def _timed(aw, seconds, message):
    """``aw`` within repl-timeout, else Redis's log line and a dropped link."""
    try:
        return await asyncio.wait_for(aw, seconds)
    except asyncio.TimeoutError:
        log.warning(message)
        raise ReplTimeout(message) from None


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
            except ReplTimeout:
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

    # -- one connection ---------------------------------------------------------------
    async def _session(self):
        srv = self.srv
        cfg = srv.config
        feed = srv.repl_feed
        self.state = "connecting"
        log.notice("Connecting to MASTER %s:%d" % (self.host, self.port))
        timeout = cfg["repl-timeout"]
        src = cfg["bind-source-addr"]
        reader, writer = await _timed(
            asyncio.open_connection(self.host, self.port, local_addr=(src, 0) if src else None),
            timeout, _HANDSHAKE_TIMEOUT)
        self.writer = writer
        log.notice("MASTER <-> REPLICA sync started")

        async def ask(*args):
            writer.write(encode_request(*args))
            await writer.drain()
            line = await _timed(reader.readline(), cfg["repl-timeout"], _HANDSHAKE_TIMEOUT)
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
        await ask("REPLCONF", "listening-port", cfg["replica-announce-port"] or cfg["port"])
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
            line = await _timed(reader.readline(), cfg["repl-timeout"], _HANDSHAKE_TIMEOUT)
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
        payload = await self._read_payload(reader, master_replid)
        # our old history is gone from here on (replicationAttachToNewMaster)
        self.history = False
        feed.disconnect_replicas()
        feed.free_backlog()
        self._load(payload)
        self.own_expires = {}
        srv.replid = master_replid
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

    async def _read_payload(self, reader, master_replid) -> bytes:
        cfg = self.srv.config
        # newlines before the payload are keep-alives while the master saves
        while True:
            line = await _timed(reader.readline(), cfg["repl-timeout"], _TRANSFER_TIMEOUT)
            if not line:
                raise ConnectionError("connection lost before the RDB payload")
            self.last_io = time.time()
            if line.strip():
                break
        line = line.rstrip(b"\r\n")
        if not line.startswith(b"$"):
            raise ConnectionError("Bad protocol from MASTER, the first byte is not '$' (we received '%s'), "
                                  "are you sure the host and port are right?" % line.decode("utf-8", "replace"))
        if line.startswith(b"$EOF:"):
            return await self._read_eof_payload(reader, line[5:], master_replid)
        n = int(line[1:])
        self.sync_total = n
        log.notice("MASTER <-> REPLICA sync: receiving %d bytes from master to disk" % n)
        buf = bytearray()
        while len(buf) < n:
            buf += await self._payload_chunk(reader, min(65536, n - len(buf)))
            self.sync_read = len(buf)
        return bytes(buf)

    async def _payload_chunk(self, reader, n=65536) -> bytes:
        """The next bytes of the payload, within repl-timeout."""
        chunk = await _timed(reader.read(n), self.srv.config["repl-timeout"], _TRANSFER_TIMEOUT)
        if not chunk:
            raise ConnectionError("connection lost during the RDB payload")
        self.last_io = time.time()
        return chunk

    async def _read_eof_payload(self, reader, mark, master_replid) -> bytes:
        """A diskless payload.  With repl-diskless-load swapdb (or
        on-empty-db and no data) the replica loads from the socket as Redis
        does: it is LOADING meanwhile, or, continuing the same history
        (our replid is the master's), async_loading: the old data is served
        until the new one replaces it.  A failed transfer keeps the old data."""
        srv = self.srv
        cfg = srv.config
        mode = cfg["repl-diskless-load"]
        socket_load = mode == "swapdb" or (mode == "on-empty-db" and not any(db.d for db in srv.dbs))
        if socket_load:
            log.notice("MASTER <-> REPLICA sync: Loading DB in memory")
            if mode == "swapdb" and srv.replid == master_replid:
                log.notice("MASTER <-> REPLICA sync: Swapping active DB with loaded DB")
                srv.async_loading = True
            srv.loading = True
            srv.update_server_slow()
        else:
            log.notice("MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF to disk")
        buf = bytearray()
        self.sync_total = 0
        try:
            while True:
                try:
                    buf += await self._payload_chunk(reader)
                except ReplTimeout:
                    raise
                except ConnectionError:
                    if socket_load:
                        log.warning("MASTER <-> REPLICA sync: Discarding the half-loaded data")
                    raise
                self.sync_read = len(buf)
                if buf.endswith(mark):
                    return bytes(buf[:-len(mark)])
        finally:
            if socket_load:
                srv.async_loading = False
                srv.loading = False
                srv.update_server_slow()

    def _load(self, payload: bytes):
        srv = self.srv
        p = srv.persistence
        log.notice("MASTER <-> REPLICA sync: Flushing old data")
        aof = srv.aof
        aof.stop_for_sync()
        srv.loading = True
        srv.update_server_slow()
        try:
            log.notice("MASTER <-> REPLICA sync: Loading DB in memory")
            res = p.parse(payload)
            p.apply(res)
        finally:
            srv.loading = False
            srv.update_server_slow()
        mem = srv.memory
        if mem.tracking:
            mem.recompute()
            mem._reset_structures()
        aof.restart_after_sync()

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
        self.writer = writer
        # the first ACK at once: a master holding the stream after an
        # EOF-marked payload starts it on this ACK
        writer.write(encode_request("REPLCONF", "ACK", feed.offset))
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
                    writer.write(encode_request("REPLCONF", "ACK", feed.offset))
                    await writer.drain()
                if time.time() - self.last_io > cfg["repl-timeout"]:
                    log.warning("MASTER timeout: no data nor PING received...")
                    raise ConnectionError("master timeout")
        finally:
            self.client = None
            self.rd = None
            srv.clients.pop(mc.id, None)
            if mc.multi is not None:
                mc.multi = None     # a transaction cut by the link: resent after PSYNC
            self.read_offset = feed.offset

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
        rd.feed(data)
        raw += data
        used = self.used
        applied = 0         # bytes of raw applied as whole units
        try:
            while True:
                req = rd.gets()
                if req is False:
                    break
                if req.__class__ is not list or not req:
                    continue
                size = request_size(req)   # the master's canonical encoding
                self.read_offset += size
                name = req[0].lower()
                if name == b"replconf" and len(req) >= 2 and req[1].lower() == b"getack":
                    self.writer.write(encode_request("REPLCONF", "ACK", feed.offset + applied))
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
        up = self.state == "connected"
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
    feed.shift_replid()
    feed.disconnect_replicas()
    feed.last_db = -1
    feed.no_replicas_since = time.time()
    if feed.backlog is None:
        feed.create_backlog()
    feed.role_changed()
    srv.update_server_slow()
    srv.aof.restart_after_sync()
