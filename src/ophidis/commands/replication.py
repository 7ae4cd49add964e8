"""SYNC / PSYNC / REPLCONF: the commands of the master side.

A client that sends SYNC (or PSYNC) gets a full RDB snapshot of the
dataset as one bulk payload, then joins the server's replication feed
(replication/master.py), which sends it the stream of write commands as a
replica would: a SELECT whenever the database changes, the effects of one
command / transaction / script wrapped in MULTI ... EXEC when they are more
than one command, relative TTLs as absolute ones (SET ... PXAT, PEXPIREAT,
RESTORE ... ABSTTL), as Redis 7.0 does.

PSYNC <replid> <offset> first tries a partial resynchronisation from the
backlog (ReplFeed.try_partial: ``+CONTINUE``).  Otherwise the replica gets
``+FULLRESYNC <replid> <offset>`` and the snapshot, as ``$<len>`` or, with
``repl-diskless-sync`` and a replica that has the ``eof`` capability, as
``$EOF:<mark>`` ... ``<mark>``.  ``REPLCONF ACK <offset>`` records what a
replica has applied (its lag, WAIT, min-replicas-to-write).

This is also what ``redis-cli --rdb`` / ``--functions-rdb`` / ``--replica``
use.
"""

from __future__ import annotations

import io
import os

from .. import log
from ..cmdtable.registry import command
from ..errors import RedisError
from ..keyspace.db import stats
from ..persistence import rdb
from ..protocol.resp import OK
from ..replication import replica
from ..replication.master import replconf_settings
from ..util import parse_int

_NOT_INT = RedisError("ERR value is not an integer or out of range")


def _snapshot(c, functions_only) -> bytes:
    buf = io.BytesIO()
    rdb.write_snapshot(buf, c.server, functions_only=functions_only)
    return buf.getvalue()


def _check_can_sync(c):
    srv = c.server
    if srv.repl_feed.failover.state != "no-failover":
        raise RedisError("NOMASTERLINK Can't SYNC while failing over")
    link = srv.replica_link
    if link is not None and link.state != "connected":
        raise RedisError("NOMASTERLINK Can't SYNC while not connected with my master")


def _full_sync(c, psync: bool):
    """A replica that cannot continue: it waits for the next RDB child
    (replication/fullsync.py), which sends ``+FULLRESYNC`` (PSYNC only)
    and the payload, then the stream from its offset.  ``REPLCONF rdb-only
    1`` (redis-cli --rdb / --functions-rdb) gets the snapshot at once and
    nothing more."""
    srv = c.server
    feed = srv.repl_feed
    conf = replconf_settings.get(c.id, {})
    if not conf.get("rdb_only", False):
        st = feed.new_replica(c)
        st.pre_psync = not psync
        feed.sync.request(c)
        return None
    replconf_settings.pop(c.id, None)
    c.close_after_reply = True
    functions_only = conf.get("filter") == b"functions"
    eof = "eof" in conf.get("capa", ())
    feed.flush()
    payload = _snapshot(c, functions_only)
    out = []
    if psync:
        out.append(b"+FULLRESYNC %s %d\r\n" % (srv.replid.encode(), feed.offset))
    if (srv.config["repl-diskless-sync"] or functions_only) and eof:
        mark = os.urandom(20).hex().encode()
        out += [b"$EOF:%s\r\n" % mark, payload, mark]
    else:
        out += [b"$%d\r\n" % len(payload), payload]
    return b"".join(out)


@command("sync", propagate=False)
def sync_cmd(c, argv):
    if c.repl is not None:
        return None          # already a replica
    _check_can_sync(c)
    log.notice("Replica %s asks for synchronization" % c.server.repl_feed.replica_name(c))
    stats.sync_full += 1
    return _full_sync(c, False)


@command("psync", propagate=False)
def psync_cmd(c, argv):
    if c.repl is not None:
        return None
    srv = c.server
    feed = srv.repl_feed
    if len(argv) > 3 and argv[3].lower() == b"failover":
        # our master hands its role over (FAILOVER on its side)
        log.warning("Failover request received for replid %s." % argv[1].decode("utf-8", "replace"))
        if srv.replica_link is None:
            raise RedisError("ERR PSYNC FAILOVER can't be sent to a master.")
        if argv[1].decode("utf-8", "replace") != srv.replid:
            raise RedisError("ERR PSYNC FAILOVER replid must match my replid.")
        replica.unset_master(srv)
        log.notice("MASTER MODE enabled (failover request from '%s')" % c.info_string())
    _check_can_sync(c)
    log.notice("Replica %s asks for synchronization" % feed.replica_name(c))
    try:
        off = int(argv[2])
    except ValueError:
        log.warning("Replica %s asks for synchronization but with a wrong offset" % feed.replica_name(c))
        raise _NOT_INT from None
    replid = argv[1].decode("utf-8", "replace")
    cont = feed.try_partial(c, replid, off)
    if cont is not None:
        stats.sync_partial_ok += 1
        return cont
    if replid != "?":
        stats.sync_partial_err += 1
    stats.sync_full += 1
    return _full_sync(c, True)


@command("replconf", flags=("syscmd",), propagate=False)
def replconf_cmd(c, argv):
    if len(argv) % 2 == 0:
        raise RedisError("ERR syntax error")
    conf = replconf_settings.setdefault(c.id, {})
    for i in range(1, len(argv), 2):
        opt = argv[i].lower()
        val = argv[i + 1]
        if opt == b"listening-port":
            conf["port"] = parse_int(val, _NOT_INT)
        elif opt == b"ip-address":
            if len(val) >= 46:
                raise RedisError("ERR REPLCONF ip-address provided by replica instance is too long: "
                                 "%d bytes" % len(val))
            conf["ip"] = val.decode("utf-8", "replace")
        elif opt == b"capa":
            conf.setdefault("capa", set()).add(val.lower().decode("utf-8", "replace"))
        elif opt == b"ack":
            if c.repl is None:
                return None
            try:
                off = int(val)
            except ValueError:
                return None
            fack = None
            if len(argv) > i + 3 and argv[i + 2].lower() == b"fack":
                # 7.2's replicas add the offset their AOF has fsynced (WAITAOF)
                try:
                    fack = int(argv[i + 3])
                except ValueError:
                    return None
            c.server.repl_feed.ack(c, off, fack)
            return None
        elif opt == b"getack":
            return None
        elif opt == b"rdb-only":
            v = parse_int(val, _NOT_INT)
            if v not in (0, 1):
                raise RedisError("ERR value is out of range, value must between 0 and 1")
            conf["rdb_only"] = v == 1
        elif opt == b"rdb-filter-only":
            conf["filter"] = val.lower()
        else:
            raise RedisError("ERR Unrecognized REPLCONF option: %s" % argv[i].decode("utf-8", "replace"))
    return OK
