"""The master side of replication: the feed of the replicas attached to us
(SYNC/PSYNC clients).  It is a target of the server's Propagator: the stream
of propagated commands as a replica receives it, with a SELECT whenever the
database changes.  The commands themselves (SYNC, PSYNC, REPLCONF) are in
commands/replication.py."""

from __future__ import annotations

from .propagate import EXEC, MULTI, TO_REPL, select_cmd

# Per-client REPLCONF settings (Client has __slots__): client id -> dict.
replconf_settings: dict = {}


def offset_lines(srv, replid, offset) -> list:
    """INFO replication's fields after the role-specific ones: the
    replication ids and offsets, and the backlog (none yet)."""
    return [
        "master_failover_state:no-failover",
        "master_replid:%s" % replid,
        "master_replid2:0000000000000000000000000000000000000000",
        "master_repl_offset:%d" % offset,
        "second_repl_offset:-1",
        "repl_backlog_active:0",
        "repl_backlog_size:%d" % srv.config["repl-backlog-size"],
        "repl_backlog_first_byte_offset:0",
        "repl_backlog_histlen:0",
    ]


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
                replconf_settings.pop(r.id, None)
            else:
                live.append(r)
        if self.replicas and not live:
            # the last replica left: no more propagation work per command
            # for it (the fast path comes back if nothing else needs it)
            self.server.propagator.detach(self)
        self.replicas = live

    def info(self):
        """INFO replication with the connected replicas (SYNC clients)."""
        srv = self.server
        self._prune()
        lines = ["role:master", "connected_slaves:%d" % len(self.replicas)]
        for i, r in enumerate(self.replicas):
            ip = r.addr.rsplit(":", 1)[0].strip("[]") if r.addr else "?"
            port = replconf_settings.get(r.id, {}).get("port", 0)
            lines.append("slave%d:ip=%s,port=%d,state=online,offset=%d,lag=0" % (
                i, ip, port, self.offset))
        lines += offset_lines(srv, srv.replid, self.offset)
        return lines

    def add_replica(self, c):
        if c not in self.replicas:
            self.replicas.append(c)
        self.last_db = -1
        self.server.propagator.attach(self)
