"""SYNC / PSYNC / REPLCONF: the commands of the master side.

A client that sends SYNC (or PSYNC) gets a full RDB snapshot of the
dataset as one bulk payload, then joins the server's replication feed
(replication/master.py), which sends it the stream of write commands as a
replica would: a SELECT whenever the database changes, the effects of one
command / transaction / script wrapped in MULTI ... EXEC when they are more
than one command, relative TTLs as absolute ones (SET ... PXAT, PEXPIREAT,
RESTORE ... ABSTTL), as Redis 7.0 does.

This is what ``redis-cli --rdb`` / ``--functions-rdb`` / ``--replica`` and
the test-suite's replication-stream checks need; there is no backlog and no
partial resynchronisation yet (issue 14).
"""

from __future__ import annotations

import io

from ..errors import RedisError
from ..persistence import rdb
from ..protocol.resp import OK
from ..replication.master import replconf_settings
from . import command


def _snapshot(c) -> bytes:
    conf = replconf_settings.get(c.id, {})
    buf = io.BytesIO()
    rdb.write_snapshot(buf, c.server, functions_only=conf.get("filter") == b"functions")
    return buf.getvalue()


@command("sync", propagate=False)
def sync_cmd(c, argv):
    rdb_only = replconf_settings.get(c.id, {}).get("rdb_only", False)
    payload = _snapshot(c)
    f = c.server.repl_feed
    f.flush()
    if rdb_only:
        # REPLCONF rdb-only 1 (redis-cli --rdb): the snapshot and nothing more.
        c.close_after_reply = True
        replconf_settings.pop(c.id, None)
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
    conf = replconf_settings.setdefault(c.id, {})
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

