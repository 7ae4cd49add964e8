"""A replica loading its master's full-sync payload serves clients
meanwhile, as Redis does: -LOADING for commands without the loading flag,
INFO persistence's loading fields, PING answered; key-load-delay slows the
load down (these tests use it to catch the replica loading).  The payload
is loaded from memory after the transfer (disk-based) or parsed from the
socket (repl-diskless-load swapdb); an aborted swapdb load keeps the old
data."""

from __future__ import annotations

import time

import pytest

from support.servers import REDIS_SERVER, redis_server_client
from support.wait import wait_until

KEYS = 20000
# key-load-delay (us) while a test looks at the load: 20000 keys take 10 s
# or more, however busy the machine (the tests set it to 0 once done)
DELAY = "500"


def _info(c):
    return c.info("persistence")


def _loading(c):
    return _info(c)["loading"] == 1


def _check_loading(server, r, total_known):
    """While loading: -LOADING on GET and PING (no loading flag; a raw
    connection: redis-py retries it), INFO answers with plausible
    loading_* fields, CONFIG GET too."""
    with server.conn() as c:
        assert c.call("GET", "key:1") == b"-LOADING Redis is loading the dataset in memory\r\n"
        assert c.call("PING") == b"-LOADING Redis is loading the dataset in memory\r\n"
        # REPLICAOF has no loading flag either: the load is not cut short
        assert c.call("REPLICAOF", "NO", "ONE") == b"-LOADING Redis is loading the dataset in memory\r\n"
    assert r.config_get("key-load-delay") == {"key-load-delay": DELAY}
    info = _info(r)
    assert info["loading"] == 1 and info["async_loading"] == 0
    now = time.time()
    assert now - 60 < info["loading_start_time"] <= now + 1
    total = info["loading_total_bytes"]
    loaded = info["loading_loaded_bytes"]
    if total_known:
        assert total > KEYS * 10 and 0 <= loaded <= total
        assert 0.0 <= info["loading_loaded_perc"] <= 100.0
    else:                           # an EOF-marked payload: the size is not known
        assert total == 0 and loaded >= 0
    assert info["loading_rdb_used_mem"] > 0      # the used-mem aux field, read already
    assert info["loading_eta_seconds"] >= 0


def _linked(r):
    return r.info("replication")["master_link_status"] == "up"


def test_disk_based_load_serves_loading(start_server):
    master = start_server("--enable-debug-command", "yes", "--repl-diskless-sync", "no")
    # events are served each time the load passes a multiple of this many
    # bytes: the payload (about 430 KB) is under the default 2 MB
    replica = start_server("--enable-debug-command", "yes", "--key-load-delay", DELAY,
                           "--loading-process-events-interval-bytes", "1024")
    m = master.client()
    r = replica.client()
    m.execute_command("DEBUG", "POPULATE", KEYS, "key", 10)
    r.set("old", "data")
    r.execute_command("REPLICAOF", "127.0.0.1", master.port)
    wait_until(lambda: _loading(r), what="the replica loading")
    _check_loading(replica, r, total_known=True)
    r.config_set("key-load-delay", 0)       # read again by the load: it speeds up
    wait_until(lambda: _linked(r), what="the sync")
    assert _info(r)["loading"] == 0
    assert r.get("old") is None
    assert r.dbsize() == KEYS
    assert r.execute_command("DEBUG", "DIGEST") == m.execute_command("DEBUG", "DIGEST")
    assert "MASTER <-> REPLICA sync: Flushing old data" in replica.output()


@pytest.fixture
def redis_master():
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (make test installs it)")
    with redis_server_client(["--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"]) as c:
        yield c


def test_swapdb_load_from_redis_server(redis_master, start_server):
    m = redis_master
    replica = start_server("--enable-debug-command", "yes", "--key-load-delay", DELAY,
                           "--repl-diskless-load", "swapdb")
    r = replica.client()
    # big enough that the socket buffers cannot hold it all: the replica
    # reads the socket only as fast as it parses
    m.execute_command("DEBUG", "POPULATE", KEYS, "key", 500)
    r.execute_command("DEBUG", "POPULATE", 100, "mine", 10)
    mine = r.get("mine:1")
    r.execute_command("REPLICAOF", "127.0.0.1", m.port)
    wait_until(lambda: _loading(r), what="the replica loading")
    _check_loading(replica, r, total_known=False)
    # the master drops the link mid-load: the old data comes back
    m.config_set("repl-diskless-sync-delay", 2)     # the next sync does not start at once
    assert m.execute_command("CLIENT", "KILL", "TYPE", "replica") == 1
    wait_until(lambda: not _loading(r), what="the load to stop")
    assert r.dbsize() == 100 and r.get("mine:1") == mine
    for line in ("Failure loading rdb format from socket, assuming connection error, resuming operation.",
                 "MASTER <-> REPLICA sync: Discarding temporary DB in background"):
        wait_until(lambda: line in replica.output(), 20, what=line)
    r.config_set("key-load-delay", 0)
    wait_until(lambda: _linked(r), timeout=30, what="the second sync")
    assert r.dbsize() == KEYS
    assert r.execute_command("DEBUG", "DIGEST") == m.execute_command("DEBUG", "DIGEST")
    assert "MASTER <-> REPLICA sync: Swapping active DB with loaded DB" in replica.output()
