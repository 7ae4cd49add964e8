"""A minimal replication feed: SYNC / PSYNC / REPLCONF.

A client that sends SYNC (or PSYNC) gets a full RDB snapshot of the
dataset as one bulk payload, then the stream of write commands as a
replica would: a SELECT whenever the database changes, and the effects of
one command / transaction / script wrapped in MULTI ... EXEC when they are
more than one command.  Relative TTLs are propagated as absolute ones
(SET ... PXAT, PEXPIREAT, RESTORE ... ABSTTL), as Redis 7.0 does.

This is what ``redis-cli --rdb`` / ``--functions-rdb`` / ``--replica`` and
the test-suite's replication-stream checks need; there is no replica side
(REPLICAOF), no backlog and no partial resynchronisation.
"""

from __future__ import annotations

import io
import types

from ..errors import RedisError
from ..protocol import OK
from . import command

# Commands that are never propagated themselves: their effects are (the
# commands they run) or they have none a replica should see.
_NOT_PROPAGATED = frozenset((
    "exec", "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro",
    "script|load", "script|flush", "script|kill", "multi", "discard",
    "sync", "psync", "replconf", "debug", "save", "bgsave", "config|set",
))

_TTL_SET_OPTS = (b"ex", b"px", b"exat", b"pxat")


def _resp(argv) -> bytes:
    out = [b"*%d\r\n" % len(argv)]
    for a in argv:
        if a.__class__ is not bytes:
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class ReplFeed:
    def __init__(self, server):
        self.server = server
        self.replicas = []
        self.pending = []        # (dbid, argv)
        self.last_db = -1
        self.flush_scheduled = False
        self.arbitrary = False   # a SCAN / RANDOMKEY-like command: no MULTI
        self.offset = 0          # bytes of replication stream produced
        server.replication_info = self.info

    # -- collecting ------------------------------------------------------------------
    def hook(self, c, cmd, argv, db=None):
        if not self.replicas:
            return
        if db is None:
            dbid = c.db.id if c is not None else 0
        else:
            dbid = getattr(db, "id", db)
        top = c is not None and not c.in_exec and not c.in_script and cmd is not None
        name = cmd.fullname if cmd is not None else ""
        if name not in _NOT_PROPAGATED and not name.startswith("function|") or name in (
                "function|load", "function|delete", "function|flush", "function|restore"):
            out = self.translate(c, name, argv, dbid)
            if out is not None:
                self.pending.append((dbid, out))
        if top:
            if cmd is not None and "touches_arbitrary_keys" in cmd.flags:
                self.arbitrary = True
            self.flush()
        else:
            self.schedule()

    def schedule(self):
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.server.loop.call_soon(self._scheduled_flush)

    def _scheduled_flush(self):
        # What is left is from outside any command (active expire) or from a
        # read command's lazy expiry: each deletion replicates on its own.
        self.flush_scheduled = False
        self.arbitrary = True
        self.flush()

    def translate(self, c, name, argv, dbid):
        """Redis's propagation rewrites of relative expire times."""
        srv = self.server
        db = srv.dbs[dbid]
        if name in ("expire", "pexpire", "expireat", "pexpireat"):
            key = argv[1]
            if key not in db.d:
                return [b"DEL", key]
            when = db.expires.get(key)
            if when is None:
                return list(argv)
            return [b"PEXPIREAT", key, b"%d" % when]
        if name in ("setex", "psetex"):
            key = argv[1]
            when = db.expires.get(key)
            if when is None:
                return list(argv)
            return [b"SET", key, argv[3], b"PXAT", b"%d" % when]
        if name == "set" and len(argv) > 3:
            key = argv[1]
            out = list(argv[:3])
            i = 3
            rewrote = False
            while i < len(argv):
                a = argv[i].lower()
                if a in _TTL_SET_OPTS and i + 1 < len(argv):
                    when = db.expires.get(key)
                    if when is not None:
                        out += [b"PXAT", b"%d" % when]
                        rewrote = True
                    else:
                        out += [argv[i], argv[i + 1]]
                    i += 2
                    continue
                out.append(argv[i])
                i += 1
            return out if rewrote else list(argv)
        if name == "getex":
            key = argv[1]
            if key not in db.d:
                return [b"DEL", key]
            opts = [a.lower() for a in argv[2:]]
            if b"persist" in opts:
                return [b"PERSIST", key]
            when = db.expires.get(key)
            if when is not None and opts:
                return [b"PEXPIREAT", key, b"%d" % when]
            return None
        if name == "incrbyfloat":
            # The result, not the float arithmetic (KEEPTTL: the TTL stays).
            v = db.d.get(argv[1])
            if v.__class__ is bytes:
                return [b"SET", argv[1], v, b"KEEPTTL"]
            return list(argv)
        if name == "getdel":
            return [b"DEL", argv[1]]
        if name == "restore":
            opts = [a.lower() for a in argv[4:]]
            if b"absttl" not in opts and argv[2] not in (b"0",):
                when = db.expires.get(argv[1])
                if when is not None:
                    out = list(argv)
                    out[2] = b"%d" % when
                    out.append(b"ABSTTL")
                    return out
            return list(argv)
        return list(argv)

    # -- sending ---------------------------------------------------------------------
    def flush(self):
        ops = self.pending
        arbitrary = self.arbitrary
        self.arbitrary = False
        if not ops:
            return
        self.pending = []
        self._prune()
        if not self.replicas:
            return
        out = []
        wrap = len(ops) > 1 and not arbitrary
        if wrap:
            self._select(out, ops[0][0])
            out.append(_resp([b"MULTI"]))
        for dbid, argv in ops:
            self._select(out, dbid)
            out.append(_resp(argv))
        if wrap:
            out.append(_resp([b"EXEC"]))
        data = b"".join(out)
        self.offset += len(data)
        for r in self.replicas:
            r.push(data)

    def _select(self, out, dbid):
        if dbid != self.last_db:
            out.append(_resp([b"SELECT", b"%d" % dbid]))
            self.last_db = dbid

    def _prune(self):
        live = []
        for r in self.replicas:
            if r.closing:
                _replconf.pop(r.id, None)
            else:
                live.append(r)
        self.replicas = live

    def info(self):
        """INFO replication with the connected replicas (SYNC clients)."""
        from .info import _RUN_ID
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
            "master_replid:%s" % getattr(srv, "replid", _RUN_ID),
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
        srv = self.server
        if self.hook not in srv.propagate_hooks:
            srv.propagate_hooks.append(self.hook)
            srv.update_server_slow()


def feed(server) -> ReplFeed:
    f = getattr(server, "_repl_feed", None)
    if f is None:
        f = ReplFeed(server)
        server._repl_feed = f
    return f


# Per-client REPLCONF settings (Client has __slots__): client id -> dict.
_replconf: dict = {}


def _snapshot(c) -> bytes:
    from ..persistence import rdb
    srv = c.server
    conf = _replconf.get(c.id, {})
    src = srv
    if conf.get("filter") == b"functions":
        src = types.SimpleNamespace(config=srv.config, dbs=[],
                                    functions=getattr(srv, "functions", None))
    buf = io.BytesIO()
    rdb.write_snapshot(buf, src)
    return buf.getvalue()


@command("sync")
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


@command("psync")
def psync_cmd(c, argv):
    srv = c.server
    replid = getattr(srv, "replid", None)
    if replid is None:
        from .info import _RUN_ID
        replid = _RUN_ID
    head = b"+FULLRESYNC %s 0\r\n" % (replid.encode() if isinstance(replid, str) else replid)
    return head + sync_cmd(c, argv)


@command("replconf")
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

