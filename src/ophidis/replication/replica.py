"""The replica side of replication: REPLICAOF host port.

A task keeps a link to the master: PING, AUTH (masterauth/masteruser),
REPLCONF listening-port and capa (eof, psync2), then PSYNC.  The master
answers +FULLRESYNC <replid> <offset> and sends the RDB payload, either as
``$<len>`` or, diskless, as ``$EOF:<40-byte mark>`` ... mark; the payload
replaces the dataset (parsed and swapped in like a DEBUG RELOAD), then the
command stream follows.  Each command runs through ``process_command`` on a
master client (replies discarded; MULTI/EXEC and SELECT work as for any
client), and the offset counts the stream's bytes.  ``REPLCONF GETACK``
is answered and ``REPLCONF ACK <offset>`` sent every second.  A lost link
is retried every second with a new full synchronisation (no backlog).

While a replica, writes from other clients get READONLY (replica-read-only),
keys do not expire on their own (the master's DELs remove them), and every
command takes the general path.  REPLICAOF NO ONE turns the server back into
a master with the data it has.
"""

from __future__ import annotations

import asyncio
import time

import hiredis

from .. import log
from ..net.client import Client
from ..protocol.resp import encode_request, request_size
from .master import offset_lines

_NOT_CONNECTED = ("connect", "connecting", "sync", "connected")


class ReplicaLink:
    def __init__(self, srv, host: str, port: int):
        self.srv = srv
        self.host = host
        self.port = port
        self.state = "connect"
        self.task = None
        self.writer = None
        self.offset = 0              # processed stream bytes (master_repl_offset on our side)
        self.read_offset = 0
        self.master_replid = "?"
        self.last_io = time.time()
        self.sync_in_progress = False
        self.link_down_since = time.time()
        self.stopped = False
        self.client = None

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

    async def _run(self):
        while not self.stopped:
            try:
                await self._session()
            except asyncio.CancelledError:
                raise
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
                if self.state == "connected":
                    self.link_down_since = time.time()
                    log.notice("Connection with master lost.")
                self.state = "connect"
                self.sync_in_progress = False
            if not self.stopped:
                await asyncio.sleep(1)

    # -- one connection ---------------------------------------------------------------
    async def _session(self):
        srv = self.srv
        cfg = srv.config
        self.state = "connecting"
        log.notice("Connecting to MASTER %s:%d" % (self.host, self.port))
        reader, writer = await asyncio.open_connection(self.host, self.port)
        self.writer = writer
        log.notice("MASTER <-> REPLICA sync started")

        async def ask(*args):
            writer.write(encode_request(*args))
            await writer.drain()
            line = await reader.readline()
            if not line:
                raise ConnectionError("connection lost")
            return line.rstrip(b"\r\n")

        r = await ask("PING")
        if r.startswith(b"-") and not r.startswith((b"-NOAUTH", b"-NOPERM", b"-ERR operation not permitted")):
            raise ConnectionError("Error reply to PING from master: '%s'" % r[1:].decode("utf-8", "replace"))
        auth = cfg["masterauth"]
        if auth:
            user = cfg["masteruser"]
            r = await (ask("AUTH", user, auth) if user else ask("AUTH", auth))
            if r.startswith(b"-"):
                raise ConnectionError("Unable to AUTH to MASTER: %s" % r[1:].decode("utf-8", "replace"))
        await ask("REPLCONF", "listening-port", cfg["replica-announce-port"] or cfg["port"])
        await ask("REPLCONF", "capa", "eof", "capa", "psync2")
        writer.write(encode_request("PSYNC", "?", "-1"))
        await writer.drain()
        while True:
            line = await reader.readline()
            if not line:
                raise ConnectionError("connection lost during PSYNC")
            if line.strip():
                break
        line = line.rstrip(b"\r\n")
        if not line.startswith(b"+FULLRESYNC"):
            raise ConnectionError("Unexpected reply to PSYNC from master: %s" % line.decode("utf-8", "replace"))
        parts = line.split()
        self.master_replid = parts[1].decode() if len(parts) > 1 else "?"
        start = int(parts[2]) if len(parts) > 2 else 0
        log.notice("Full resync from master: %s:%d" % (self.master_replid, start))
        self.state = "sync"
        self.sync_in_progress = True
        payload = await self._read_payload(reader)
        self._load(payload)
        self.offset = self.read_offset = start
        self.sync_in_progress = False
        self.state = "connected"
        self.last_io = time.time()
        log.notice("MASTER <-> REPLICA sync: Finished with success")
        await self._stream(reader, writer)

    async def _read_payload(self, reader) -> bytes:
        # newlines before the payload are keep-alives while the master saves
        while True:
            line = await reader.readline()
            if not line:
                raise ConnectionError("connection lost before the RDB payload")
            if line.strip():
                break
        line = line.rstrip(b"\r\n")
        if not line.startswith(b"$"):
            raise ConnectionError("Bad protocol from MASTER, the first byte is not '$'")
        if line.startswith(b"$EOF:"):
            mark = line[5:]
            buf = bytearray()
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    raise ConnectionError("connection lost during the RDB payload")
                buf += chunk
                if buf.endswith(mark):
                    return bytes(buf[:-len(mark)])
        n = int(line[1:])
        log.notice("MASTER <-> REPLICA sync: receiving %d bytes from master to disk" % n)
        return await reader.readexactly(n)

    def _load(self, payload: bytes):
        srv = self.srv
        p = srv.persistence
        log.notice("MASTER <-> REPLICA sync: Flushing old data")
        aof = srv.aof
        aof.stop_for_sync()
        srv.loading = True
        srv.update_server_slow()
        try:
            res = p.parse(payload)
            p.apply(res)
        finally:
            srv.loading = False
            srv.update_server_slow()
        mem = srv.memory
        if mem.tracking:
            mem.recompute()
            mem._reset_structures()
        log.notice("MASTER <-> REPLICA sync: Loading DB in memory")
        aof.restart_after_sync()

    async def _stream(self, reader, writer):
        srv = self.srv
        mc = Client(srv)
        mc.authenticated = True
        mc.addr = "%s:%d" % (self.host, self.port)
        mc.is_master = True
        self.client = mc
        rd = hiredis.Reader()
        acked = 0.0
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
                    rd.feed(data)
                    while True:
                        req = rd.gets()
                        if req is False:
                            break
                        if req.__class__ is not list or not req:
                            continue
                        self.read_offset += request_size(req)   # the master's canonical encoding
                        name = req[0].lower()
                        if name == b"replconf" and len(req) >= 2 and req[1].lower() == b"getack":
                            writer.write(encode_request("REPLCONF", "ACK", self.read_offset))
                        else:
                            srv.applying_master = True
                            try:
                                srv.process_command(mc, req)
                            except Exception as e:  # noqa: BLE001
                                log.warning("Error applying a command from the master: %r" % e)
                            finally:
                                srv.applying_master = False
                        self.offset = self.read_offset
                now = time.monotonic()
                if now - acked >= 1.0:
                    acked = now
                    writer.write(encode_request("REPLCONF", "ACK", self.offset))
                    await writer.drain()
        finally:
            self.client = None

    # -- reports ----------------------------------------------------------------------
    def info(self):
        srv = self.srv
        up = self.state == "connected"
        lines = [
            "role:slave",
            "master_host:%s" % self.host,
            "master_port:%d" % self.port,
            "master_link_status:%s" % ("up" if up else "down"),
            "master_last_io_seconds_ago:%d" % (int(time.time() - self.last_io) if up else -1),
            "master_sync_in_progress:%d" % (1 if self.sync_in_progress else 0),
            "slave_read_repl_offset:%d" % self.read_offset,
            "slave_repl_offset:%d" % self.offset,
        ]
        if not up:
            lines.append("master_link_down_since_seconds:%d" % int(time.time() - self.link_down_since))
        lines += [
            "slave_priority:%d" % srv.config["replica-priority"],
            "slave_read_only:%d" % (1 if srv.config["replica-read-only"] else 0),
            "replica_announced:%d" % (1 if srv.config["replica-announced"] else 0),
            "connected_slaves:0",
        ]
        lines += offset_lines(srv, self.master_replid, self.offset)
        return lines

    def role(self):
        state = {"connect": b"connect", "connecting": b"connecting", "sync": b"sync",
                 "connected": b"connected"}[self.state]
        return state


def set_master(srv, host: str, port: int):
    """REPLICAOF host port."""
    old = srv.replica_link
    if old is not None:
        old.stop()
    link = ReplicaLink(srv, host, port)
    srv.replica_link = link
    srv.is_replica = True
    srv.update_server_slow()
    # clients blocked on lists etc. stay blocked; the master's stream serves them
    link.start()


def unset_master(srv):
    """REPLICAOF NO ONE."""
    link = srv.replica_link
    if link is None:
        return
    link.stop()
    srv.replica_link = None
    srv.is_replica = False
    srv.update_server_slow()
