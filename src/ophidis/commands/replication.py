"""A minimal replication feed: SYNC / PSYNC / REPLCONF.

A client that sends SYNC (or PSYNC) gets a full RDB snapshot of the
dataset as one bulk payload, then the stream of write commands as a
replica would: a SELECT whenever the database changes, and the effects of
one command / transaction / script wrapped in MULTI ... EXEC when they are
more than one command.  Relative TTLs are propagated as absolute ones
(SET ... PXAT, PEXPIREAT, RESTORE ... ABSTTL), as Redis 7.0 does: the
stream comes from the server's Propagator (propagate.py), shared with the
AOF; this module is its replication target.

This is what ``redis-cli --rdb`` / ``--functions-rdb`` / ``--replica`` and
the test-suite's replication-stream checks need; there is no replica side
(REPLICAOF), no backlog and no partial resynchronisation.
"""

from __future__ import annotations

import io

from ..errors import RedisError
from ..propagate import EXEC, MULTI, TO_REPL, propagator, select_cmd
from ..protocol import OK
from . import command
from ..persistence import rdb


class ReplFeed:
    """The replication target of the server's Propagator: the stream of
    propagated commands as a replica receives it."""

    bit = TO_REPL

    def __init__(self, server):
        self.server = server
        self.replicas = []
        self.last_db = -1
        self.offset = 0          # bytes of replication stream produced

    def flush(self):
        """Deliver what the current command propagated so far (EXEC flushes
        its transaction before serving the clients it unblocked)."""
        self.server.propagator.flush()

    # -- sending ---------------------------------------------------------------------
    def feed(self, ops, wrap):
        self._prune()
        if not self.replicas:
            return
        out = []
        if wrap:
            self._select(out, ops[0][0])
            out.append(MULTI)
        for dbid, data, mask in ops:
            if mask & TO_REPL:
                self._select(out, dbid)
                out.append(data)
        if wrap:
            out.append(EXEC)
        if not out:
            return
        data = b"".join(out)
        self.offset += len(data)
        for r in self.replicas:
            r.push(data)

    def _select(self, out, dbid):
        if dbid != self.last_db:
            out.append(select_cmd(dbid))
            self.last_db = dbid

    def _prune(self):
        live = []
        for r in self.replicas:
            if r.closing:
                _replconf.pop(r.id, None)
            else:
                live.append(r)
        if self.replicas and not live:
            # the last replica left: no more propagation work per command
            # for it (the fast path comes back if nothing else needs it)
            propagator(self.server).detach(self)
        self.replicas = live

    def info(self):
        """INFO replication with the connected replicas (SYNC clients)."""
        srv = self.server
        self._prune()
        lines = ["role:master", "connected_slaves:%d" % len(self.replicas)]
        for i, r in enumerate(self.replicas):
            ip = r.addr.rsplit(":", 1)[0].strip("[]") if r.addr else "?"
            port = _replconf.get(r.id, {}).get("port", 0)
            lines.append("slave%d:ip=%s,port=%d,state=online,offset=%d,lag=0" % (
                i, ip, port, self.offset))
        lines += [
            "master_failover_state:no-failover",
            "master_replid:%s" % srv.replid,
            "master_replid2:0000000000000000000000000000000000000000",
            "master_repl_offset:%d" % self.offset,
            "second_repl_offset:-1",
            "repl_backlog_active:0",
            "repl_backlog_size:%d" % srv.config["repl-backlog-size"],
            "repl_backlog_first_byte_offset:0",
            "repl_backlog_histlen:0",
        ]
        return lines

    def add_replica(self, c):
        if c not in self.replicas:
            self.replicas.append(c)
        self.last_db = -1
        propagator(self.server).attach(self)


def feed(server) -> ReplFeed:
    return server.repl_feed


# Per-client REPLCONF settings (Client has __slots__): client id -> dict.
_replconf: dict = {}


def _snapshot(c) -> bytes:
    conf = _replconf.get(c.id, {})
    buf = io.BytesIO()
    rdb.write_snapshot(buf, c.server, functions_only=conf.get("filter") == b"functions")
    return buf.getvalue()


@command("sync", propagate=False)
def sync_cmd(c, argv):
    rdb_only = _replconf.get(c.id, {}).get("rdb_only", False)
    payload = _snapshot(c)
    f = feed(c.server)
    f.flush()
    if rdb_only:
        # REPLCONF rdb-only 1 (redis-cli --rdb): the snapshot and nothing more.
        c.close_after_reply = True
        _replconf.pop(c.id, None)
    else:
        f.add_replica(c)
    return b"$%d\r\n%s" % (len(payload), payload)


@command("psync", propagate=False)
def psync_cmd(c, argv):
    srv = c.server
    head = b"+FULLRESYNC %s 0\r\n" % srv.replid.encode()
    return head + sync_cmd(c, argv)


@command("replconf", flags=("syscmd",), propagate=False)
def replconf_cmd(c, argv):
    if len(argv) % 2 == 0:
        raise RedisError("ERR syntax error")
    conf = _replconf.setdefault(c.id, {})
    for i in range(1, len(argv), 2):
        opt = argv[i].lower()
        if opt == b"rdb-filter-only":
            conf["filter"] = argv[i + 1].lower()
        elif opt == b"listening-port":
            try:
                conf["port"] = int(argv[i + 1])
            except ValueError:
                conf["port"] = 0
        elif opt == b"rdb-only":
            conf["rdb_only"] = argv[i + 1] == b"1"
        elif opt == b"ack" or opt == b"getack":
            return None
    return OK

