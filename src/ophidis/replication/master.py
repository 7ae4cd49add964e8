"""The master side of replication (replication.c's master half).

``ReplFeed`` is the server's replication stream and its history:

* the **offset** (``master_repl_offset``): bytes of stream produced (on a
  master) or processed from our own master (on a replica);
* the **backlog**: the recent bytes of that stream in the shared
  replication buffer (``ReplBuffer``, Redis 7.0's blocks: the backlog and
  the replicas read the same bytes; ``repl-backlog-size`` bounds what the
  backlog keeps for itself, a replica still owed older bytes keeps them
  too), created when the first replica attaches (with a fresh replication
  id, as Redis does), kept while replicas come and go, freed after
  ``repl-backlog-ttl`` seconds without replicas (on a master only);
* the **replication ids**: ``server.replid`` (the current history) and the
  secondary ``replid2`` valid up to ``second_offset``, set when a replica is
  promoted so that its former siblings can continue partially (PSYNC2);
* the **replicas** attached (clients whose ``c.repl`` is a ``ReplicaState``):
  their sync state, acknowledged offsets and lag, and WAIT's clients.

On a master the feed is a target of the server's Propagator: every
propagated unit is framed (SELECT when the database changes, MULTI/EXEC
around a multi-command unit), appended to the backlog and written to each
online replica.  On a replica the Propagator's units are not ours to send
(writes of a writable replica stay local, as in Redis since 4.0): the
replica link hands us the master's stream as it applies it
(``feed_from_master``) and sub-replicas get it byte for byte.

PSYNC (``try_partial``) continues a replica whose replication id is ours
(or our secondary one up to its offset) and whose next byte is still in the
backlog: ``+CONTINUE <replid>`` and the backlog from there.  Otherwise the
replica gets a full synchronisation (commands/replication.py).
"""

from __future__ import annotations

import os
import time
from bisect import bisect_right

from .. import log
from ..protocol.resp import encode_argv, sdscatrepr
from .failover import NO_FAILOVER, Failover
from .fullsync import ONLINE, SEND_BULK, STATE_NAMES, WAIT_BGSAVE, WAIT_BGSAVE_START, FullSync
from .propagate import EXEC, MULTI, TO_REPL, select_cmd

# Per-client REPLCONF settings sent before SYNC/PSYNC (Client has
# __slots__): client id -> dict.  SYNC/PSYNC moves them into c.repl.
replconf_settings: dict = {}

ZERO_ID = "0" * 40
PING = encode_argv([b"PING"])
GETACK = encode_argv([b"REPLCONF", b"GETACK", b"*"])

__all__ = ["ReplFeed", "ReplicaState", "ReplBuffer", "replconf_settings", "ONLINE", "SEND_BULK",
           "WAIT_BGSAVE", "WAIT_BGSAVE_START"]


def new_replid() -> str:
    return os.urandom(20).hex()


# Redis 7.0's replication buffer blocks: at least PROTO_REPLY_CHUNK_BYTES,
# at most a sixteenth of repl-backlog-size (a big write spans several); a
# block takes the whole allocation jemalloc gives for it and its header,
# and its list node is counted too.
BLOCK_MIN = 16 * 1024
BLOCK_HEADER = 40           # sizeof(replBufBlock)
LIST_NODE = 24              # sizeof(listNode)
BLOCK_OVERHEAD = BLOCK_HEADER + LIST_NODE
BACKLOG_MIN = 16 * 1024     # CONFIG_REPL_BACKLOG_MIN_SIZE
INDEX_EVERY = 64            # REPL_BACKLOG_INDEX_PER_BLOCKS: one block in 64 is indexed
RAX_NODE = 4                # sizeof(raxNode), the index's empty head


def alloc_size(n: int) -> int:
    """jemalloc's size class for ``n`` bytes (zmalloc_usable): four
    classes per doubling (16-byte steps up to 128)."""
    if n <= 8:
        return 8
    if n <= 128:
        return (n + 15) & ~15
    step = 1 << ((n - 1).bit_length() - 3)
    return (n + step - 1) // step * step


class ReplBuffer:
    """The shared replication buffer (Redis 7.0's list of replBufBlock):
    the stream's recent bytes in blocks, read by the backlog (partial
    resyncs) and by every replica that has not taken them yet.

    ``offset`` is the replication offset of its first byte
    (repl_backlog_first_byte_offset) and ``histlen`` its length.  The
    front is freed a whole block at a time while the history is longer
    than ``size`` (repl-backlog-size), but never a block a replica still
    needs (``trim(hold)``): a slow replica or one waiting for its payload
    lets the backlog grow past its size, and a replica reconnecting
    meanwhile continues from it.  ``mem`` is mem_total_replication_buffers.
    """

    __slots__ = ("size", "blocks", "starts", "caps", "offset", "histlen", "mem", "first_id", "made")

    def __init__(self, size: int, first: int):
        self.size = max(size, BACKLOG_MIN)
        self.blocks = []        # bytearrays; every one but the last is full
        self.starts = []        # the offset of each block's first byte
        self.caps = []          # each block's capacity
        self.offset = first
        self.histlen = 0
        self.mem = 0
        self.first_id = 0       # ordinal of the first live block
        self.made = 0           # blocks made since the backlog was created

    def append(self, data) -> bool:
        """Add stream bytes; True when a new block was made (Redis checks
        the replicas' output limits then)."""
        n = len(data)
        pos = 0
        if self.blocks:
            tail = self.blocks[-1]
            room = self.caps[-1] - len(tail)
            if room > 0:
                pos = room if room < n else n
                tail += data[:pos] if pos < n else data
        added = pos < n
        while pos < n:
            left = n - pos
            limit = self.size >> 4
            if limit < BLOCK_MIN:
                limit = BLOCK_MIN
            want = left if left > BLOCK_MIN else BLOCK_MIN
            if want > limit:
                want = limit
            usable = alloc_size(want + BLOCK_HEADER)
            cap = usable - BLOCK_HEADER
            self.starts.append(self.offset + self.histlen + pos)
            self.blocks.append(bytearray(data[pos:pos + cap]))
            self.caps.append(cap)
            self.mem += usable + LIST_NODE
            self.made += 1
            pos += cap
        self.histlen += n
        return added

    def resize(self, size: int, hold=None):
        self.size = max(size, BACKLOG_MIN)
        self.trim(hold)

    def trim(self, hold=None):
        """incrementalTrimReplicationBacklog: free whole blocks at the front
        while the history stays longer than ``size`` without them; ``hold``
        is the first offset a replica still needs (None: none)."""
        starts = self.starts
        caps = self.caps
        nb = len(starts)
        i = 0
        hist = self.histlen
        size = self.size
        while hist > size and nb - i > 1:
            if hold is not None and hold < starts[i + 1]:
                break               # a replica reads this block
            if hist - caps[i] <= size:
                break
            hist -= caps[i]
            self.mem -= caps[i] + BLOCK_OVERHEAD
            i += 1
        if i:
            del self.blocks[:i], starts[:i], caps[:i]
            self.first_id += i
            self.offset = starts[0]
            self.histlen = hist

    def latest_repr(self, n=256) -> bytes:
        """showLatestBacklog: the last ``n`` bytes, each block's part quoted
        as sdscatrepr does."""
        out = []
        i = len(self.blocks) - 1
        while n and i >= 0:
            b = self.blocks[i]
            take = len(b) if len(b) < n else n
            out.append(sdscatrepr(b[len(b) - take:]))
            n -= take
            i -= 1
        return b"".join(reversed(out))

    def index_bytes(self) -> int:
        """The block index's memory (a rax of every 64th block; its nodes
        estimated at two per entry)."""
        n = self.made // INDEX_EVERY - self.first_id // INDEX_EVERY
        return RAX_NODE * (1 + 2 * n) + 8 * n

    def clear(self, first: int):
        self.first_id = self.made = 0
        self.blocks, self.starts, self.caps = [], [], []
        self.offset = first
        self.histlen = 0
        self.mem = 0

    def has(self, off: int) -> bool:
        """Whether a replica wanting ``off`` as its next byte can continue."""
        return self.offset <= off <= self.offset + self.histlen

    def _index(self, off: int) -> int:
        i = bisect_right(self.starts, off) - 1
        return i if i > 0 else 0

    def since(self, off: int) -> bytes:
        if not self.blocks or off >= self.offset + self.histlen:
            return b""
        i = self._index(off)
        head = self.blocks[i][off - self.starts[i]:]
        return b"".join([head] + self.blocks[i + 1:])

    def usage_from(self, off: int) -> int:
        """getClientOutputBufferMemoryUsage of a replica whose next byte
        to send is ``off``: the blocks from the one holding it to the last,
        the last counted whole."""
        if not self.blocks:
            return 0
        i = self._index(off)
        n = len(self.blocks) - i
        return self.starts[-1] + self.caps[-1] - self.starts[i] + n * BLOCK_OVERHEAD


class ReplicaState:
    """What the master knows of one replica (Redis's slave fields of the
    client): its sync state, listening address, capabilities, offsets."""

    __slots__ = ("state", "port", "ip", "capa_eof", "capa_psync2", "rdb_only", "filter",
                 "ack_off", "aof_off", "ack_time", "initial_offset", "pre_psync", "hold", "base", "sent",
                 "since", "socket")

    def __init__(self, conf: dict, addr: str):
        self.state = WAIT_BGSAVE_START
        self.port = conf.get("port", 0)
        self.ip = conf.get("ip") or _host(addr)     # REPLCONF ip-address, else the connection's
        self.capa_eof = "eof" in conf.get("capa", ())
        self.capa_psync2 = "psync2" in conf.get("capa", ())
        self.rdb_only = conf.get("rdb_only", False)
        self.filter = conf.get("filter")
        self.ack_off = 0
        self.aof_off = 0               # the offset its AOF has fsynced (REPLCONF ACK ... FACK, 7.2)
        self.ack_time = time.time()
        self.initial_offset = 0
        self.pre_psync = False        # plain SYNC: no ACKs expected
        # the stream owed to it stays in the shared buffer: while its payload
        # is on its way (and ACKed), from ``hold``; once online, what its
        # connection has not taken of the bytes from ``base`` to ``sent``
        self.hold = None
        self.base = 0
        self.sent = 0
        self.since = time.time()
        self.socket = False           # served by the diskless child


WAITAOF_AOF_OFF = b"-ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.\r\n"


class ReplFeed:
    """The replication stream, its backlog and ids, and the replicas."""

    bit = TO_REPL

    def __init__(self, server):
        self.server = server
        self.replicas = []
        self.last_db = -1              # the stream's selected db (slaveseldb)
        self.offset = 0                # master_repl_offset
        self.backlog = None
        self.replid2 = ZERO_ID
        self.second_offset = -1
        self.no_replicas_since = time.time()
        # clients blocked in WAIT or WAITAOF: (client, offset, numreplicas,
        # numlocal), numlocal None for WAIT
        self.waiting = []
        self.getack_pending = False
        self.attached = False
        self.cron_loops = 0
        self.failover = Failover(self)
        self.last_cron = 0.0
        self.loaded_stream_db = 0      # repl-stream-db of the RDB file loaded at start-up
        self.sync = FullSync(self)
        # Stream bytes not yet written to the online replicas: the stream
        # goes out once per loop iteration (as Redis writes in beforeSleep),
        # not as one write per command; ``unsent_start`` is the offset its
        # first byte follows.
        self.unsent = []
        self.unsent_start = 0
        self.flush_scheduled = False
        server.config.on_change("repl-backlog-size", self._resize_backlog)
        server.cron_hooks.append(self._tick)

    # -- ids and history -----------------------------------------------------------
    def change_replid(self):
        self.server.replid = new_replid()

    def clear_replid2(self):
        self.replid2 = ZERO_ID
        self.second_offset = -1

    def shift_replid(self):
        """A replica becomes a master: its history so far stays valid for
        PSYNC under the old id (shiftReplicationId)."""
        srv = self.server
        self.replid2 = srv.replid
        self.second_offset = self.offset + 1
        self.change_replid()
        log.warning("Setting secondary replication ID to %s, valid up to offset: %d. "
                    "New replication ID is %s" % (self.replid2, self.second_offset, srv.replid))

    def _resize_backlog(self, *_):
        """CONFIG SET repl-backlog-size takes effect at once
        (resizeReplicationBacklog), never below 16 KB."""
        cfg = self.server.config
        if cfg["repl-backlog-size"] < BACKLOG_MIN:
            cfg.values["repl-backlog-size"] = BACKLOG_MIN
        if self.backlog is not None:
            self.backlog.resize(self.server.config["repl-backlog-size"], self.hold())

    def create_backlog(self):
        self.backlog = ReplBuffer(self.server.config["repl-backlog-size"], self.offset + 1)
        self._update_attach()

    def free_backlog(self):
        self.backlog = None
        self._update_attach()

    def rebase(self, replid, offset):
        """A master restarted from an RDB file with replication info: its
        old history is kept as the secondary id (loadDataFromDisk)."""
        self.flush_replicas()
        self.replid2 = replid
        self.second_offset = offset + 1
        self.offset = offset
        if self.backlog is None:
            self.create_backlog()
        self.backlog.clear(offset + 1)
        self.no_replicas_since = time.time()

    def restore(self, aux: dict, expired=()):
        """The replication fields of the RDB file loaded at start-up: a
        replica continues its master's history, a master keeps it as its
        secondary id (loadDataFromDisk)."""
        try:
            rid = aux[b"repl-id"].decode("ascii")
            off = int(aux[b"repl-offset"])
            db = int(aux[b"repl-stream-db"])
        except (KeyError, ValueError, UnicodeDecodeError):
            return
        if len(rid) != 40 or off == -1 or db == -1:
            return
        srv = self.server
        if srv.config["replicaof"]:
            srv.replid = rid
            self.offset = off
            self.loaded_stream_db = db
        else:
            self.rebase(rid, off)
            # the keys that expired while we were down are deleted in the
            # history too, so that replicas continuing with us delete them
            cmd = b"UNLINK" if srv.config["lazyfree-lazy-expire"] else b"DEL"
            for dbid, key in expired:
                out = []
                self._select(out, dbid)
                out.append(encode_argv([cmd, key]))
                self._emit(b"".join(out))

    def save_info(self):
        """The replication fields of an RDB file (rdbPopulateSaveInfo):
        (stream db, replid, offset) or None when there is no history."""
        srv = self.server
        link = srv.replica_link
        if link is None:
            if self.backlog is None:
                return None
            return (0 if self.last_db == -1 else self.last_db, srv.replid, self.offset)
        if link.has_history():
            return (link.stream_db, srv.replid, self.offset)
        return None

    def _update_attach(self):
        want = self.backlog is not None and not self.server.is_replica
        if want and not self.attached:
            self.attached = True
            self.server.propagator.attach(self)
        elif not want and self.attached:
            self.attached = False
            self.server.propagator.detach(self)

    def role_changed(self):
        self._update_attach()

    def flush(self):
        """Deliver what the current command propagated so far (EXEC flushes
        its transaction before serving the clients it unblocked)."""
        self.server.propagator.flush()

    # -- the stream --------------------------------------------------------------------
    def feed(self, ops, wrap):
        """A unit from the Propagator (masters only)."""
        if self.server.is_replica or self.backlog is None:
            return
        if not wrap and len(ops) == 1:
            dbid, data, mask = ops[0]
            if mask & TO_REPL:
                if dbid != self.last_db:
                    self.last_db = dbid
                    data = select_cmd(dbid) + data
                self._emit(data)
            return
        out = []
        if wrap:
            # Redis 7.2+: the transaction's SELECTs go inside it
            out.append(MULTI)
        for dbid, data, mask in ops:
            if mask & TO_REPL:
                self._select(out, dbid)
                out.append(data)
        if wrap:
            out.append(EXEC)
        if out:
            self._emit(b"".join(out))

    def feed_from_master(self, data: bytes):
        """A replica: bytes of our master's stream we have just applied."""
        if self.backlog is None:
            self.create_backlog()
        self._emit(data)

    def count_unfed(self, ops, wrap):
        """A unit the AOF took while we have no backlog (nor replicas):
        Redis 7.2+'s replicationFeedSlaves still counts each command of it
        in the offset (a transaction's MULTI and EXEC too), which WAITAOF's
        local fsync tracking needs."""
        if self.backlog is None and not self.server.is_replica:
            n = sum(1 for op in ops if op[2] & TO_REPL)
            self.offset += n + 2 if wrap and n else n

    def feed_command(self, data: bytes):
        """A master's own command in the stream (PING, REPLCONF GETACK)."""
        if self.backlog is None:
            if not self.server.is_replica:
                self.offset += 1        # (replicationFeedSlaves without a backlog, as feed)
            return
        self._emit(data)

    def _emit(self, data):
        if not self.unsent:
            self.unsent_start = self.offset
            if not self.flush_scheduled:
                self.flush_scheduled = True
                self.server.loop.call_soon(self.flush_replicas)
        self.unsent.append(data)
        self.offset += len(data)
        if self.backlog.append(data):
            # a new block: the replicas' output limits, then the backlog's trim
            self.check_limits()
            self.backlog.trim(self.hold())

    def flush_replicas(self):
        """Write what the stream gained since the last time to each online
        replica (from the offset it was sent up to: one that came online
        meanwhile gets only what follows)."""
        self.flush_scheduled = False
        unsent = self.unsent
        if not unsent:
            return
        self.unsent = []
        data = unsent[0] if len(unsent) == 1 else b"".join(unsent)
        start = self.unsent_start
        off = start + len(data)
        for r in self.replicas:
            st = r.repl
            if st.hold is None and st.state == ONLINE and not r.closing:
                skip = st.sent - start
                if skip < len(data):
                    r.push(data[skip:] if skip > 0 else data)
                    st.sent = off

    # -- the shared buffer ------------------------------------------------------------
    def position(self, r):
        """The first stream offset replica ``r`` still needs from the
        shared buffer, or None (it reads nothing of it)."""
        st = r.repl
        if st.hold is not None:
            return st.hold
        if st.state != ONLINE or r.closing:
            return None
        t = r.transport
        unsent = t.get_write_buffer_size() if t is not None else 0
        pos = st.sent + 1 - unsent
        return pos if pos > st.base else st.base

    def hold(self):
        """The oldest offset any replica still needs (None: none)."""
        low = None
        for r in self.replicas:
            pos = self.position(r)
            if pos is not None and (low is None or pos < low):
                low = pos
        return low

    def replica_usage(self, r) -> int:
        """A replica's output buffer figure: the shared blocks it references."""
        pos = self.position(r)
        return 0 if pos is None or self.backlog is None else self.backlog.usage_from(pos)

    def check_limits(self):
        """client-output-buffer-limit replica, counted on the shared blocks
        each replica references (a replica waiting for its payload too)."""
        srv = self.server
        for r in list(self.replicas):
            pos = self.position(r)
            if pos is not None:
                srv.check_output_limits(r, self.backlog.usage_from(pos))

    def trim(self):
        if self.backlog is not None:
            self.backlog.trim(self.hold())

    def _select(self, out, dbid):
        if dbid != self.last_db:
            out.append(select_cmd(dbid))
            self.last_db = dbid

    # -- replicas -----------------------------------------------------------------------
    def prune(self):
        if any(r.closing for r in self.replicas):
            live = [r for r in self.replicas if not r.closing]
            for r in self.replicas:
                if r.closing:
                    self._gone(r)
            self.replicas = live
            if not live:
                self.no_replicas_since = time.time()

    def _gone(self, r):
        log.notice("Connection with replica %s lost." % self.replica_name(r))

    def remove(self, c):
        """A replica client closed (called from the server's client cleanup)."""
        if c in self.replicas:
            self.replicas.remove(c)
            self._gone(c)
            self.trim()          # the blocks it held go, down to repl-backlog-size
            srv = self.server
            p = srv.persistence
            if (not srv.config["save"] and c.repl.state == WAIT_BGSAVE and p.child_pid is not None
                    and not p.child_socket
                    and not any(r.repl.state == WAIT_BGSAVE for r in self.replicas)):
                # nobody needs the snapshot being written any more
                p.kill_child()
            if not self.replicas:
                self.no_replicas_since = time.time()
            self.check_waiting()

    def replica_name(self, c) -> str:
        """replicationGetSlaveName: ip:port, the port as REPLCONF told it
        (before SYNC/PSYNC the settings are still in replconf_settings)."""
        st = c.repl
        if st is not None:
            ip, port = st.ip, st.port
        else:
            conf = replconf_settings.get(c.id, {})
            ip, port = conf.get("ip") or _host(c.addr), conf.get("port", 0)
        if port:
            return "%s:%d" % (ip, port)
        return "%s:<unknown-replica-port>" % ip

    def new_replica(self, c) -> ReplicaState:
        st = ReplicaState(replconf_settings.pop(c.id, {}), c.addr)
        c.repl = st
        c.update_slow()            # its requests take the replica checks (dispatch)
        if c not in self.replicas:
            self.replicas.append(c)
        if len(self.replicas) == 1 and self.backlog is None:
            # a fresh history: a new id and no secondary one
            self.change_replid()
            self.clear_replid2()
            self.create_backlog()
            log.notice("Replication backlog created, my new replication IDs are '%s' and '%s'" % (
                self.server.replid, self.replid2))
        return st

    def try_partial(self, c, replid: str, off: int):
        """masterTryPartialResynchronization: the reply head and backlog to
        send when ``c`` can continue, else None (after logging why)."""
        srv = self.server
        name = self.replica_name(c)
        if replid != srv.replid and (replid != self.replid2 or off > self.second_offset):
            if replid != "?":
                if replid != srv.replid and replid != self.replid2:
                    log.notice("Partial resynchronization not accepted: Replication ID mismatch "
                               "(Replica asked for '%s', my replication IDs are '%s' and '%s')" % (
                                   replid, srv.replid, self.replid2))
                else:
                    log.notice("Partial resynchronization not accepted: Requested offset for "
                               "second ID was %d, but I can reply up to %d" % (off, self.second_offset))
            else:
                log.notice("Full resync requested by replica %s" % name)
            return None
        bl = self.backlog
        if bl is None or not bl.has(off):
            log.notice("Unable to partial resync with replica %s for lack of backlog "
                       "(Replica request was: %d)." % (name, off))
            if off > self.offset:
                log.warning("Warning: replica %s tried to PSYNC with an offset that is greater "
                            "than the master replication offset." % name)
            return None
        st = self.new_replica(c)
        st.state = ONLINE
        st.ack_time = time.time()
        st.base = off
        st.sent = self.offset
        data = bl.since(off)
        head = b"+CONTINUE %s\r\n" % srv.replid.encode() if st.capa_psync2 else b"+CONTINUE\r\n"
        log.notice("Partial resynchronization request from %s accepted. Sending %d bytes of "
                   "backlog starting from offset %d." % (name, len(data), off))
        return head + data

    def put_online(self, c, hold=False):
        """replicaPutOnline: the payload is delivered; the held stream
        follows now, or (``hold``: an EOF-marked payload) with the
        replica's first ACK."""
        st = c.repl
        st.state = ONLINE
        st.ack_time = time.time()
        if not hold:
            self._release(c)
        log.notice("Synchronization with replica %s succeeded" % self.replica_name(c))

    def _release(self, c):
        """The stream held for ``c`` since its payload's fork goes out."""
        st = c.repl
        start = st.hold
        st.hold = None
        st.base = start
        st.sent = self.offset
        data = self.backlog.since(start)
        if data:
            c.push(data)

    def bgsave_done(self, ok: bool, socket: bool):
        """The RDB child ended (Persistence calls this)."""
        self.sync.done(ok, socket)

    def disconnect_replicas(self):
        """Every replica reconnects (and learns a new replication id)."""
        for r in list(self.replicas):
            r.close()
        self.replicas = []
        self.no_replicas_since = time.time()

    # -- acknowledgements and WAIT ------------------------------------------------------------
    def ack(self, c, off: int, fack=None):
        st = c.repl
        if st is None:
            return
        if off > st.ack_off:
            st.ack_off = off
        if fack is not None and fack > st.aof_off:
            st.aof_off = fack
        st.ack_time = time.time()
        if st.hold is not None and st.state == ONLINE:
            self._release(c)       # the first ACK after an EOF-marked payload
        if self.failover.state != NO_FAILOVER:
            self.failover.update()
        if self.waiting:
            self.check_waiting()

    def count_acks(self, off: int) -> int:
        n = 0
        for r in self.replicas:
            st = r.repl
            if st.state == ONLINE and st.ack_off >= off:
                n += 1
        return n

    def count_aof_acks(self, off: int) -> int:
        """The online replicas whose AOF has fsynced the stream up to off."""
        n = 0
        for r in self.replicas:
            st = r.repl
            if st.state == ONLINE and st.aof_off >= off:
                n += 1
        return n

    def good_replicas(self) -> int:
        """Online replicas whose lag is within min-replicas-max-lag."""
        lag = self.server.config["min-replicas-max-lag"]
        now = time.time()
        n = 0
        for r in self.replicas:
            st = r.repl
            if st.state == ONLINE and not r.closing and int(now - st.ack_time) <= lag:
                n += 1
        return n

    def request_acks(self):
        """Ask every replica for an ACK before the loop sleeps."""
        if not self.getack_pending:
            self.getack_pending = True
            self.server.loop.call_soon(self._send_getack)

    def _send_getack(self):
        self.getack_pending = False
        self.send_getack_now()

    def add_waiting(self, c, off, numreplicas, numlocal=None):
        self.waiting.append((c, off, numreplicas, numlocal))
        self.request_acks()

    def drop_waiting(self, c):
        self.waiting = [w for w in self.waiting if w[0] is not c]

    def check_waiting(self):
        """processClientsWaitingReplicas."""
        if not self.waiting:
            return
        bh = self.server.blocking_handler
        aof = self.server.aof
        keep = []
        for w in self.waiting:
            c, off, num, numlocal = w
            if c.closing or c.bstate is None:
                continue
            if numlocal is None:
                n = self.count_acks(off)
                if n >= num:
                    bh.finish(c, b":%d\r\n" % n)
                    continue
            else:
                if numlocal and not self.server.config["appendonly"]:
                    bh.finish(c, WAITAOF_AOF_OFF)
                    continue
                n = self.count_aof_acks(off)
                local = int(aof.fsynced_reploff >= off)
                if n >= num and local >= numlocal:
                    bh.finish(c, b"*2\r\n:%d\r\n:%d\r\n" % (local, n))
                    continue
            keep.append(w)
        self.waiting = keep

    # -- shutdown -----------------------------------------------------------------------------
    def all_in_sync(self) -> bool:
        """isReadyToShutdown: every replica acknowledged the whole stream."""
        self.prune()
        return all(r.repl.ack_off == self.offset for r in self.replicas)

    def send_getack_now(self):
        """REPLCONF GETACK * to every replica; not while writes are paused
        (the offsets stay where they are)."""
        if not self.server.is_replica and self.server.pause_type is None:
            self.feed_command(GETACK)

    def log_lagging(self):
        self.prune()
        if not self.replicas:
            return
        now = time.time()
        lagging = 0
        for r in self.replicas:
            st = r.repl
            if st.ack_off != self.offset:
                lagging += 1
                lag = int(now - st.ack_time) if st.state == ONLINE else 0
                log.warning("Lagging replica %s reported offset %d behind master, lag=%d, state=%s." % (
                    self.replica_name(r), self.offset - st.ack_off, lag, STATE_NAMES[st.state]))
        log.notice("%d of %d replicas are in sync when shutting down." % (
            len(self.replicas) - lagging, len(self.replicas)))

    # -- cron ---------------------------------------------------------------------------------
    def _tick(self):
        if self.replicas:
            self.sync.cron()
        if self.failover.state != NO_FAILOVER:
            self.failover.update()
        now = time.monotonic()
        if now - self.last_cron >= 1.0:
            self.last_cron = now
            self.cron()

    def cron(self):
        """replicationCron's master half, once a second."""
        srv = self.server
        cfg = srv.config
        self.prune()
        self.cron_loops += 1
        loops = self.cron_loops
        if self.replicas and not srv.is_replica and loops % cfg["repl-ping-replica-period"] == 0 \
                and self.failover.state == NO_FAILOVER:
            self.feed_command(PING)
        now = time.time()
        timeout = cfg["repl-timeout"]
        # Online replicas get nothing but the stream: no newline keep-alive
        # while our own master is away either (Redis stopped that in PSYNC2,
        # a newline can land in the middle of the stream's bytes); a
        # sub-replica times out then and hears NOMASTERLINK until we are
        # linked again.
        for r in list(self.replicas):
            st = r.repl
            if st.state != ONLINE:
                if st.state == WAIT_BGSAVE_START or (st.state == WAIT_BGSAVE and not st.socket):
                    r.push(b"\n")      # keep-alive while the payload is prepared
                continue
            if st.pre_psync:
                continue
            if now - st.ack_time > timeout:
                log.warning("Disconnecting timedout replica (streaming sync): %s" % self.replica_name(r))
                r.close()
        self.prune()
        self.trim()              # replicas that caught up release their blocks
        ttl = cfg["repl-backlog-ttl"]
        if not self.replicas and ttl and self.backlog is not None and srv.replica_link is None \
                and now - self.no_replicas_since > ttl:
            self.change_replid()
            self.clear_replid2()
            self.free_backlog()
            log.notice("Replication backlog freed after %d seconds without connected replicas." % ttl)

    # -- memory -------------------------------------------------------------------------------
    def backlog_bytes(self) -> int:
        """mem_replication_backlog: the shared buffer, but with replicas
        attached only up to repl-backlog-size (the rest is theirs)."""
        bl = self.backlog
        if bl is None:
            return 0
        size = self.server.config["repl-backlog-size"]
        if self.replicas and bl.mem > size:
            return size + bl.index_bytes()
        return bl.mem + bl.index_bytes()

    def replicas_share(self) -> int:
        """What the replicas hold of the shared buffer beyond the backlog
        (Redis's mem_clients_slaves)."""
        bl = self.backlog
        if bl is None or not self.replicas:
            return 0
        over = bl.mem - self.server.config["repl-backlog-size"]
        return over if over > 0 else 0

    def buffer_bytes(self) -> int:
        """mem_total_replication_buffers: the shared buffer's blocks."""
        bl = self.backlog
        return bl.mem if bl is not None else 0

    # -- reports ------------------------------------------------------------------------------
    def offset_lines(self) -> list:
        """INFO replication's fields after the role-specific ones."""
        srv = self.server
        bl = self.backlog
        return [
            "master_failover_state:%s" % self.failover.state,
            "master_replid:%s" % srv.replid,
            "master_replid2:%s" % self.replid2,
            "master_repl_offset:%d" % self.offset,
            "second_repl_offset:%d" % self.second_offset,
            "repl_backlog_active:%d" % (1 if bl is not None else 0),
            "repl_backlog_size:%d" % srv.config["repl-backlog-size"],
            "repl_backlog_first_byte_offset:%d" % (bl.offset if bl is not None else 0),
            "repl_backlog_histlen:%d" % (bl.histlen if bl is not None else 0),
        ]

    def replica_lines(self) -> list:
        self.prune()
        lines = ["connected_slaves:%d" % len(self.replicas)]
        cfg = self.server.config
        if cfg["min-replicas-to-write"] and cfg["min-replicas-max-lag"]:
            lines.append("min_slaves_good_slaves:%d" % self.good_replicas())
        now = time.time()
        for i, r in enumerate(self.replicas):
            st = r.repl
            lines.append("slave%d:ip=%s,port=%d,state=%s,offset=%d,lag=%d" % (
                i, st.ip, st.port, STATE_NAMES[st.state], st.ack_off, int(now - st.ack_time)))
        return lines

    def info(self):
        """INFO replication of a master."""
        return ["role:master"] + self.replica_lines() + self.offset_lines()


def _host(addr) -> str:
    return addr.rsplit(":", 1)[0].strip("[]") if addr else "?"
