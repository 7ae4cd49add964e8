"""client-output-buffer-limit as Redis 7.0 (checkClientOutputBufferLimits):
the hard limit closes a client at once and what it was to receive is never
sent, the soft limit after its seconds, each class with its own limits
(normal, pubsub, replica), commands with huge replies stop early.  Every
scenario runs against ophidis-server and Debian's redis-server alike."""

from __future__ import annotations

import time

import pytest

from support.resp import RespConn, encode, slow_reader
from support.wait import wait_until

KB = 1024


@pytest.fixture
def c(each_server):
    c = each_server.client()
    c.flushall()
    yield c
    c.config_set("client-output-buffer-limit", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60")
    c.close()


def named(each_server, name) -> RespConn:
    return slow_reader(each_server.port, name)


def listed(c, name):
    """The CLIENT LIST fields of the client called name, or None."""
    for fields in c.client_list():
        if fields["name"] == name:
            return fields
    return None


def test_single_reply_over_the_hard_limit_is_never_sent(each_server, c):
    c.config_set("client-output-buffer-limit", "normal 100000 0 0")
    c.rpush("big", *[b"x" * 1000] * 150)
    conn = named(each_server, "biglist")
    conn.send("LRANGE", "big", "0", "-1")
    assert conn.read_until_closed(10) == b""       # not one byte of it
    wait_until(lambda: listed(c, "biglist") is None, 10, what="the client to be gone")
    assert c.ping()


def test_pipeline_over_the_hard_limit_gets_no_reply(each_server, c):
    c.config_set("client-output-buffer-limit", "normal 100000 0 0")
    c.set("bigkey", b"x" * 10000)
    conn = named(each_server, "pipeline")
    reqs = b"".join(b"set %d %d\r\nget %d\r\ndel %d\r\nget bigkey\r\n" % (i, i, i, i) for i in range(15))
    conn.send_raw(reqs)
    assert conn.read_until_closed(10) == b""
    assert listed(c, "pipeline") is None


def test_transaction_runs_to_the_end_over_the_limit(each_server, c):
    c.config_set("client-output-buffer-limit", "normal 100000 0 0")
    c.rpush("big", *[b"x" * 1000] * 150)
    c.set("k1", "v1")
    conn = named(each_server, "tx")
    assert conn.call("MULTI") == b"+OK\r\n"
    for argv in (("SET", "k2", "v2"), ("LRANGE", "big", "0", "-1"), ("SET", "k3", "v3"), ("DEL", "k1")):
        assert conn.call(*argv) == b"+QUEUED\r\n"
    conn.send("EXEC")
    assert conn.read_until_closed(10) == b""
    assert c.get("k1") is None and c.get("k2") == b"v2" and c.get("k3") == b"v3"


def test_a_reply_under_the_limit_is_sent(each_server, c):
    c.config_set("client-output-buffer-limit", "normal 100000 0 0")
    c.set("k", b"x" * 50000)
    conn = named(each_server, "small")
    assert conn.call("GET", "k") == b"$50000\r\n" + b"x" * 50000 + b"\r\n"
    assert listed(c, "small") is not None


@pytest.mark.parametrize("cmd", [("HRANDFIELD", "h", "-999999999"), ("SRANDMEMBER", "s", "-999999999"),
                                 ("ZRANDMEMBER", "z", "-999999999", "WITHSCORES")])
def test_huge_random_replies_stop_at_the_limit(each_server, c, cmd):
    c.config_set("client-output-buffer-limit", "normal 1000000 0 0")
    c.hset("h", "a", "b")
    c.sadd("s", "a")
    c.zadd("z", {"a": 1})
    conn = named(each_server, "random")
    conn.send(*cmd)
    # closed well before a billion picks: both stop once over the limit
    assert conn.read_until_closed(20) == b""
    assert c.ping()


def test_soft_limit_closes_after_its_seconds(each_server, c):
    """A subscriber over the pubsub soft limit stays connected for its
    seconds, then is closed, also with no more traffic (cron)."""
    c.config_set("client-output-buffer-limit", "pubsub 0 100000 2")
    sub = named(each_server, "softsub")
    assert sub.call("SUBSCRIBE", "ch").startswith(b"*3\r\n")
    msg = b"x" * 1000
    deadline = time.monotonic() + 30
    while True:
        t_check = time.monotonic()
        if int(listed(c, "softsub")["omem"]) >= 100000:
            break
        under = t_check           # the limit was crossed after this
        assert time.monotonic() < deadline, "the output buffer never grew"
        for _ in range(50):
            c.publish("ch", msg)
    # no more traffic: still there for a while, gone after the soft seconds
    wait_until(lambda: listed(c, "softsub") is None, 30, interval=0.05, what="the soft limit")
    assert time.monotonic() - under >= 1.0
    sub.close()


def test_each_class_has_its_limit(each_server, c):
    """pubsub 100kb closes a subscriber that does not read, while a normal
    client (no normal limit) gets a bigger reply."""
    c.config_set("client-output-buffer-limit", "normal 0 0 0 pubsub 100000 0 0")
    c.set("k", b"x" * 300000)
    normal = named(each_server, "normal")
    normal.send("GET", "k")
    sub = named(each_server, "sub")
    assert sub.call("SUBSCRIBE", "ch").startswith(b"*3\r\n")
    c.publish("ch", b"y" * 300000)
    assert sub.read_until_closed(10) == b""
    assert normal.read(10) == b"$300000\r\n" + b"x" * 300000 + b"\r\n"


def test_hard_limit_omem_in_client_list(each_server, c):
    """What CLIENT LIST shows of a subscriber that does not read grows up to
    the hard limit, never beyond it."""
    c.config_set("client-output-buffer-limit", "pubsub 100000 0 0")
    sub = named(each_server, "hardsub")
    assert sub.call("SUBSCRIBE", "ch").startswith(b"*3\r\n")
    seen = 0
    deadline = time.monotonic() + 60
    while True:
        assert time.monotonic() < deadline
        for _ in range(20):
            c.publish("ch", b"z" * 100)
        f = listed(c, "hardsub")
        if f is None:
            break
        omem = int(f["omem"])
        assert omem < 100000 + 200
        assert int(f["tot-mem"]) >= omem
        seen = max(seen, omem)
    assert seen >= 50000


def test_close_is_logged(start_server):
    s = start_server("--client-output-buffer-limit", "normal 100000 0 0")
    c = s.client()
    c.set("k", b"x" * 200000)
    conn = named(s, "logged")
    conn.send("GET", "k")
    assert conn.read_until_closed(10) == b""
    wait_until(lambda: "scheduled to be closed ASAP for overcoming of output buffer limits." in s.output(), 10)
    line = [x for x in s.output().splitlines() if "overcoming of output buffer limits" in x][0]
    assert " # Client id=" in line and " name=logged " in line
    assert c.info("stats")["client_output_buffer_limit_disconnections"] == 1


def test_replica_class_is_the_replica_state(start_server):
    """A client that attached as a replica is limited by the replica class
    (raised to repl-backlog-size), not by the normal one."""
    s = start_server("--client-output-buffer-limit", "normal 100000 0 0 replica 2mb 0 0",
                     "--repl-backlog-size", "1mb")
    c = s.client()
    rep = named(s, "rep")
    rep.send_raw(encode("PSYNC", "?", "-1"))
    wait_until(lambda: c.info("replication")["connected_slaves"] == 1, 20)
    assert c.client_list(_type="replica")[0]["name"] == "rep"
    for _ in range(10):           # 1 MB of stream: over normal, under replica
        c.set("k", b"v" * 100000)
    assert c.info("replication")["connected_slaves"] == 1
    n = 0
    while c.info("replication")["connected_slaves"] and n < 200:
        c.set("k", b"v" * 100000)
        n += 1
    assert n < 200, "the replica was never disconnected"
    rep.close()


def _limit_stat(c, name):
    """INFO's client_*_buffer_limit_disconnections (7.2+: redis-server 7.0,
    which has none, gives None)."""
    if "ophidis_version" not in c.info("server"):
        return None
    return c.info("stats")[name]


def test_output_that_fits_the_clients_own_buffer_is_not_counted(each_server, c):
    # getClientOutputBufferMemoryUsage counts the reply list: replies held
    # in the client's own 16 KB buffer never reach a limit (Redis 7.4.1's
    # unit/info "client input and output buffer limit disconnections")
    c.config_resetstat()
    c.set("small", b"x" * 1000)
    c.set("big", b"x" * 100000)
    c.config_set("client-output-buffer-limit", "normal 10 0 0")
    conn = named(each_server, "tiny")
    assert conn.call("GET", "small") == b"$1000\r\n" + b"x" * 1000 + b"\r\n"
    assert conn.call("INFO", "stats").startswith(b"$")
    assert _limit_stat(c, "client_output_buffer_limit_disconnections") in (None, 0)
    assert listed(c, "tiny") is not None
    conn.send("GET", "big")
    assert conn.read_until_closed(10) == b""
    assert _limit_stat(c, "client_output_buffer_limit_disconnections") in (None, 1)


def test_a_big_argument_over_the_query_buffer_limit_closes_the_client(each_server, c):
    # readQueryFromClient: a big argument is read into a buffer of its own
    # up to its end, which is checked against client-query-buffer-limit
    # before the request runs: its bytes and CRLF alone count
    c.config_resetstat()
    c.config_set("client-query-buffer-limit", "1mb")
    try:
        conn = RespConn(each_server.port)
        assert conn.call("SET", "fits", b"a" * (1048576 - 2)) == b"+OK\r\n"
        try:
            conn.send("SET", "key", b"a" * 1048576)
        except OSError:
            pass        # (closed while sending)
        assert conn.read_until_closed(10) == b""
        assert c.exists("key") == 0 and c.strlen("fits") == 1048574
        assert _limit_stat(c, "client_query_buffer_limit_disconnections") in (None, 1)
    finally:
        c.config_set("client-query-buffer-limit", "1gb")
