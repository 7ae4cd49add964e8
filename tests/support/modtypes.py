"""Helpers shared by the tests of Redis 8's built-in types (JSON, time
series, vector sets, the RedisBloom sketches, Bloom/cuckoo filters, arrays):
the module ids of their RDB records, the error text of a command, and the
persistence round trips (AOF rewrite, restart in the same directory, a
replica's link)."""

from __future__ import annotations

import os

import pytest
from redis.exceptions import ResponseError

from support.wait import wait_until

# the AOF of the restart tests: no RDB preamble, so the rewrite's commands
# are in the base file as text
AOF = ("--appendonly", "yes", "--aof-use-rdb-preamble", "no", "--appendfsync", "always")

_MODULE_CHARSET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def module_id(name: str, encver: int) -> int:
    """A module type's 64-bit id as RDB_TYPE_MODULE_2 records it: the nine
    characters of its name, 6 bits each, then the 10-bit encoding version."""
    mid = 0
    for ch in name:
        mid = (mid << 6) | _MODULE_CHARSET.index(ch)
    return (mid << 10) | encver


def err(r, *args) -> str:
    """The error text a command raises on a redis-py client."""
    with pytest.raises(ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def rewrite_aof(c):
    """BGREWRITEAOF, then wait until the rewrite is done."""
    assert c.bgrewriteaof()
    assert wait_until(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0
                      and c.info("persistence")["aof_rewrite_scheduled"] == 0)


def aof_base(s) -> bytes:
    """The base file of a (stopped) server's multi-part AOF."""
    d = os.path.join(s.dir, "appendonlydir")
    base = [f for f in os.listdir(d) if f.endswith(".base.aof")][0]
    with open(os.path.join(d, base), "rb") as f:
        return f.read()


def restart(start_server, s, *args):
    """A new server in a stopped server's directory (loading its files)."""
    return start_server("--dir", s.dir, *args, cwd=s.dir)


def follow(rep, master):
    """REPLICAOF master on the client rep, then wait until the link is up."""
    rep.execute_command("REPLICAOF", "127.0.0.1", str(master.port))
    wait_until(lambda: rep.info("replication").get("master_link_status") == "up", what="the link")


def rdb_restart(start_server, fill, snapshot, *args):
    """fill(client) a server that saves only when told (args: more
    directives, for both servers), SAVE, stop it, start another on its
    dump.rdb, check snapshot(client) is the same there; the new server."""
    s = start_server("--save", "", *args)
    c = s.client()
    fill(c)
    before = snapshot(c)
    assert c.save()
    s.stop()
    assert os.path.exists(os.path.join(s.dir, "dump.rdb"))
    s2 = restart(start_server, s, "--save", "", *args)
    assert snapshot(s2.client()) == before
    return s2
