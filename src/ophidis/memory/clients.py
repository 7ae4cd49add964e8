"""Client memory: what one connection holds (Redis's getClientMemoryUsage),
the totals per client class (INFO's ``mem_clients_normal`` /
``mem_clients_slaves``) and client eviction (``maxmemory-clients``,
evictClients).

A client's figure is its fixed cost (``sizes.CLIENT_BASE``), its query
buffer (a big argument counts for the whole length it announced, as Redis
allocates it at once), the commands queued in MULTI, its watched keys,
subscriptions and tracking prefixes, and the output not yet sent.  The
figures are taken at batch boundaries, never per command: after each read
of a client and after writes outside its reads (pushes to subscribers,
replies to unblocked clients), and for every client by cron; only while
maxmemory-clients is set (``net.client.set_client_memory``), and otherwise by
cron and INFO for the totals.

Eviction follows Redis: clients are kept in log2 buckets of their memory
(32 KB and less in the first, 8 GB and more in the last); when the normal
and pub/sub clients together reach the limit, the largest bucket is emptied
first, in the order clients entered it, until the total is under the limit.
Clients with CLIENT NO-EVICT on, replicas and our master's link are never
evicted.
"""

from __future__ import annotations

import time
from time import monotonic as _monotonic

from .. import log
from ..keyspace.db import stats
from ..net import client as client_mod
from ..net.client import client_class
from ..protocol.resp import request_size
from .buffers import REPLY_MIN, BufState, query_free, reply_figures, resize_query, resize_reply
from .sizes import CLIENT_BASE, MULTI_CMD, PUBSUB_ENTRY, TRACKING_PREFIX, WATCHED_KEY

BUCKET_MIN_LOG = 15     # the first bucket: up to 32 KB
BUCKET_MAX_LOG = 33     # the last: 8 GB and more
BUCKETS = 1 + BUCKET_MAX_LOG - BUCKET_MIN_LOG
MIN_LIMIT = 128 * 1024  # maxmemory-clients is never taken below this
PEAK_SLOTS = 8          # seconds of client_recent_max_input/output_buffer
EVICTABLE = ("normal", "pubsub")
CRON_MIN_ITERATIONS = 5 # clientsCron visits at least this many clients per call (or all)


class Usage:
    """What the totals count for one client (``Client.mem_usage``)."""
    __slots__ = ("mem", "out", "cls", "bucket", "seq", "multi", "multi_n", "multi_sum", "bufs")

    def __init__(self):
        self.mem = 0
        self.out = 0             # its output held, part of mem (for replicas: not counted for eviction)
        self.cls = None          # the class it is counted in (None: not counted)
        self.bucket = -1
        self.seq = 0             # when it entered its bucket
        self.multi = None        # the MULTI queue measured so far, and its figure
        self.multi_n = 0
        self.multi_sum = 0
        self.bufs = None         # buffers.BufState: its query and reply buffers as Redis sizes them


def bucket_of(mem: int) -> int:
    b = mem.bit_length()
    if b < BUCKET_MIN_LOG:
        b = BUCKET_MIN_LOG
    elif b > BUCKET_MAX_LOG:
        b = BUCKET_MAX_LOG
    return b - BUCKET_MIN_LOG


def output_held(c) -> int:
    """The output not yet sent: the transport's buffer and the pushes
    queued for this loop iteration; for a replica also the blocks of the
    shared replication buffer it has still to be sent (Redis's figure)."""
    t = c.transport
    n = t.get_write_buffer_size() if t is not None and not c.closing else 0
    pb = c.push_buf
    if pb:
        n += sum(map(len, pb))
    if c.repl is not None:
        n += c.server.repl_feed.replica_usage(c)
    return n


def _queued(c, u: Usage) -> int:
    """The commands queued in MULTI (their arguments, one pointer each, the
    queue entry), measured once each: a long transaction is not measured
    again at every read."""
    q = c.multi
    if q is None:
        u.multi = None
        return 0
    if q is not u.multi or len(q) < u.multi_n:
        u.multi = q
        u.multi_n = u.multi_sum = 0
    tot = u.multi_sum
    for i in range(u.multi_n, len(q)):
        argv = q[i][1]
        tot += sum(map(len, argv)) + 8 * len(argv) + MULTI_CMD
    u.multi_n = len(q)
    u.multi_sum = tot
    return tot


def measure(c, running_argv=None):
    """``(qbuf, argv_mem, multi_mem, omem, tot_mem)`` of CLIENT LIST (and the
    client's memory figure, tot_mem).  ``running_argv``: the command the
    client is running (CLIENT LIST itself), still in Redis's query buffer
    and its argv."""
    u = c.mem_usage
    if u is None:
        u = c.mem_usage = Usage()
    # held: the query buffer, the parsed arguments of an incomplete request
    # included (we keep their bytes there, Redis in argv)
    qbuf, argv_len, argc, held = c.reader.layout()
    if running_argv:
        # the running command is in Redis's query buffer and in its argv
        size = request_size(running_argv)
        n = sum(map(len, running_argv))
        qbuf += size
        held += size + n
        argv_len += n
        argc += len(running_argv)
    multi = _queued(c, u)
    if c.watched:
        multi += WATCHED_KEY * len(c.watched)
    extra = 0
    for subs in (c.pubsub_channels, c.pubsub_patterns, c.pubsub_shard):
        if subs:
            extra += PUBSUB_ENTRY * len(subs)
    trk = c.tracking
    if trk:
        extra += TRACKING_PREFIX * len(trk.prefixes)
    omem = output_held(c)
    tot = CLIENT_BASE + held + 8 * argc + multi + extra + omem
    return qbuf, argv_len, multi, omem, tot


def buffers_of(c) -> BufState:
    """The client's modelled buffers (memory/buffers.py)."""
    u = c.mem_usage
    if u is None:
        u = c.mem_usage = Usage()
    b = u.bufs
    if b is None:
        b = u.bufs = BufState(c)
    return b


def buffer_figures(c, qbuf: int):
    """(qbuf-free, rbs, rbp) of CLIENT LIST; qbuf as measure gives it."""
    b = buffers_of(c)
    return (query_free(c, b, qbuf),) + reply_figures(c, b)


class ClientMemory:
    """The server's client memory figures and client eviction
    (``Memory.clients``)."""

    def __init__(self, srv):
        self.srv = srv
        self.totals = {"normal": 0, "pubsub": 0, "slave": 0, "master": 0}
        # the replicas' output held (part of totals["slave"]): Redis's
        # freeMemoryGetNotCountedMemory leaves it out of the maxmemory check
        self.replica_out = 0
        self.limit = 0              # maxmemory-clients in bytes (0: no eviction)
        self.seq = 0
        self.warned = 0.0           # when "Over client maxmemory ..." was last logged
        self.peak_in = [0] * PEAK_SLOTS
        self.peak_out = [0] * PEAK_SLOTS
        self.cron_pos = 0           # where buffers_cron's previous pass stopped
        self.rb_shrinks = 0         # INFO's reply_buffer_shrinks / expands
        self.rb_expands = 0
        srv.config.on_change("maxmemory-clients", self.configure)
        srv.config.on_change("maxmemory", self.configure)
        self.configure()

    # -- configuration ------------------------------------------------------------
    def configure(self, _=None):
        """getClientEvictionLimit: bytes, or a percentage of maxmemory (none
        without maxmemory), never under 128 KB."""
        srv = self.srv
        v = srv.config["maxmemory-clients"]
        if v < 0:
            limit = srv.config["maxmemory"] * -v // 100 if srv.config["maxmemory"] else 0
        else:
            limit = v
        if limit and limit < MIN_LIMIT:
            limit = MIN_LIMIT
        self.limit = limit
        client_mod.set_client_memory(self.changed if limit else None)
        if limit:
            self.refresh()
            self.evict()

    measure = staticmethod(measure)
    buffer_figures = staticmethod(buffer_figures)

    # -- the buffers' sizes (clientsCron) ----------------------------------------------------
    def buffers_cron(self):
        """clientsCron's resizing of query and reply buffers (as
        memory/buffers.py models them): every client once a second, at
        least CRON_MIN_ITERATIONS (or all) per call."""
        srv = self.srv
        clients = list(srv.clients.values())
        n = len(clients)
        if not n:
            return
        iterations = n // max(1, srv.hz)
        if iterations < CRON_MIN_ITERATIONS:
            iterations = min(n, CRON_MIN_ITERATIONS)
        start = self.cron_pos % n
        batch = clients[start:start + iterations]
        if len(batch) < iterations:
            batch += clients[:iterations - len(batch)]
        self.cron_pos = start + iterations
        now = _monotonic()
        resizing = srv.reply_buffer_resizing_enabled
        reset_ms = srv.reply_buffer_peak_reset_time
        for c in batch:
            if c.closing:
                continue
            b = buffers_of(c)
            if (c.last_time == b.qb_seen and not b.qb_alloc and b.rb_size == REPLY_MIN
                    and not c.rb_peak and not c.reader.big):
                continue            # idle, its buffers at their least: nothing would move
            resize_query(c, b, now)
            if resizing:
                done = resize_reply(c, b, now, reset_ms)
                if done < 0:
                    self.rb_shrinks += 1
                elif done > 0:
                    self.rb_expands += 1

    @property
    def total(self) -> int:
        return sum(self.totals.values())

    # -- accounting ---------------------------------------------------------------------
    def update(self, c) -> Usage:
        """Measure one client and move its figure in the totals (and in the
        buckets)."""
        _, _, _, omem, tot = measure(c)
        u = c.mem_usage
        cls = client_class(c)
        t = self.totals
        if u.cls is not None:
            t[u.cls] -= u.mem
            if u.cls == "slave":
                self.replica_out -= u.out
        t[cls] += tot
        if cls == "slave":
            self.replica_out += omem
        u.mem = tot
        u.out = omem
        u.cls = cls
        b = bucket_of(tot)
        if b != u.bucket:
            u.bucket = b
            self.seq += 1
            u.seq = self.seq
        return u

    def forget(self, c):
        """The client is gone (or being evicted): out of the totals."""
        u = c.mem_usage
        if u is not None and u.cls is not None:
            self.totals[u.cls] -= u.mem
            if u.cls == "slave":
                self.replica_out -= u.out
            u.cls = None
            u.mem = u.out = 0

    def changed(self, c):
        """After a read of ``c`` or a write to it (while maxmemory-clients is
        set): its new figure, and eviction when the clients are over the
        limit."""
        if c.closing:
            return
        self.update(c)
        t = self.totals
        if t["normal"] + t["pubsub"] >= self.limit:
            self.evict()

    def refresh(self):
        """Every client measured again (cron, INFO, before evicting), and
        the recent peaks of input and output buffers noted."""
        t = self.totals
        for k in t:
            t[k] = 0
        self.replica_out = 0
        slot = int(time.time()) % PEAK_SLOTS
        nxt = (slot + 1) % PEAK_SLOTS
        self.peak_in[nxt] = self.peak_out[nxt] = 0
        pin = self.peak_in[slot]
        pout = self.peak_out[slot]
        for c in self.srv.clients.values():
            u = c.mem_usage
            if u is not None:
                u.cls = None
            if c.closing:
                continue
            u = self.update(c)
            pend = c.reader.pend
            qin = len(pend) if pend is not None else 0
            if qin > pin:
                pin = qin
            if u.out > pout:
                pout = u.out
        self.peak_in[slot] = pin
        self.peak_out[slot] = pout

    def recent_peaks(self):
        """(client_recent_max_input_buffer, client_recent_max_output_buffer)."""
        return max(self.peak_in), max(self.peak_out)

    # -- eviction ------------------------------------------------------------------------
    def evict(self):
        """evictClients: while the normal and pub/sub clients use the limit
        or more, disconnect the evictable clients of the largest bucket
        first."""
        limit = self.limit
        t = self.totals
        if not limit or t["normal"] + t["pubsub"] < limit:
            return
        self.refresh()
        if t["normal"] + t["pubsub"] < limit:
            return
        cands = [c for c in self.srv.clients.values()
                 if not c.no_evict and not c.closing and c.mem_usage is not None
                 and c.mem_usage.cls in EVICTABLE]
        cands.sort(key=_eviction_order)
        for c in cands:
            if t["normal"] + t["pubsub"] < limit:
                return
            log.notice("Evicting client: %s" % c.info_string())
            self.forget(c)
            stats.evicted_clients += 1
            c.closing = True
            tr = c.transport
            if tr is not None:
                tr.abort()
        if t["normal"] + t["pubsub"] >= limit:
            now = time.monotonic()
            if now - self.warned >= 1.0:     # Redis logs it at every attempt
                self.warned = now
                log.warning("Over client maxmemory after evicting all evictable clients")

    def buckets_text(self) -> bytes:
        """DEBUG CLIENT-EVICTION: the buckets, their clients and memory."""
        sums = [0] * BUCKETS
        counts = [0] * BUCKETS
        for c in self.srv.clients.values():
            u = c.mem_usage
            if u is not None and u.cls in EVICTABLE and not c.no_evict and not c.closing:
                sums[u.bucket] += u.mem
                counts[u.bucket] += 1
        lines = []
        for j in range(BUCKETS):
            head = "bucket          0" if j == 0 else "bucket %10d" % (1 << (j - 1 + BUCKET_MIN_LOG))
            if j == BUCKETS - 1:
                head += "+            : "
            else:
                head += " - %10d: " % ((1 << (j + BUCKET_MIN_LOG)) - 1)
            lines.append("%stot-mem: %10d, clients: %d\n" % (head, sums[j], counts[j]))
        return "".join(lines).encode()


def _eviction_order(c):
    u = c.mem_usage
    return (-u.bucket, u.seq)
