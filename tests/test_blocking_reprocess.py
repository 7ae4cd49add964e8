"""Blocked commands run again when their key is signalled (Redis 7.2's
reprocessing, blocked.c unblockClientOnKey): the command goes through
every check of a new command (ACL, its own errors), may block again with
its first deadline, and is counted (commandstats, SLOWLOG, MONITOR) once.
Each test runs against Ophidis and valkey-server 9.1 (forked from Redis
7.2.4, which shares this behaviour)."""

from __future__ import annotations

import re
import time

import pytest

from support.resp import RespConn
from support.wait import wait_until


@pytest.fixture(params=["ophidis", "valkey"])
def port(request):
    s = request.getfixturevalue("server" if request.param == "ophidis" else "valkey_server")
    c = RespConn(s.port)
    try:
        c.call("FLUSHALL")
        c.call("CONFIG", "RESETSTAT")
        c.call("SLOWLOG", "RESET")
    finally:
        c.close()
    return s.port


@pytest.fixture
def conns(port):
    made = []

    def make():
        c = RespConn(port)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


def _blocked(c, n=1):
    def check():
        m = re.search(rb"blocked_clients:(\d+)", c.call("INFO", "clients"))
        return int(m.group(1)) == n
    wait_until(check, 5.0, 0.01, what="%d blocked clients" % n)


def _cmdstat(c, name):
    m = re.search(rb"cmdstat_%s:(\S+)" % name.encode(), c.call("INFO", "commandstats"))
    return dict(kv.split(b"=") for kv in m.group(1).split(b",")) if m else None


def test_acl_checked_again_when_reprocessed(conns):
    a, b = conns(), conns()
    try:
        assert b.call("ACL", "SETUSER", "psuser", "on", "nopass", "+@all", "allkeys") == b"+OK\r\n"
        assert a.call("AUTH", "psuser", "x") == b"+OK\r\n"
        a.send("BLPOP", "list1", "0")
        _blocked(b)
        b.call("ACL", "SETUSER", "psuser", "resetkeys")
        b.call("LPUSH", "list1", "foo")
        assert a.read(5).startswith(b"-NOPERM No permissions to access a key")
        assert a.call("PING") == b"+PONG\r\n"
        st = _cmdstat(b, "blpop")
        # the call that blocked is not counted, the one run again is refused
        assert (st[b"calls"], st[b"usec"], st[b"rejected_calls"], st[b"failed_calls"]) == (b"0", b"0", b"1", b"0")
        # the element stays: nothing was popped
        assert b.call("LRANGE", "list1", "0", "-1") == b"*1\r\n$3\r\nfoo\r\n"
    finally:
        b.call("ACL", "DELUSER", "psuser")


_STREAM_GOES = {
    "del": [("DEL", "s")],
    "set": [("SET", "s", "x")],
    "flushall": [("FLUSHALL",)],
    "destroy": [("XGROUP", "DESTROY", "s", "g")],
    "rename": [("XADD", "s2", "1", "f", "v"), ("RENAME", "s2", "s")],
}


@pytest.mark.parametrize("how", sorted(_STREAM_GOES))
def test_xreadgroup_gets_the_commands_own_error(conns, how):
    a, b = conns(), conns()
    b.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    a.send("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    _blocked(b)
    for cmd in _STREAM_GOES[how]:
        b.call(*cmd)
    if how == "set":
        assert a.read(5) == b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    else:
        assert a.read(5) == b"-NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option\r\n"
    st = _cmdstat(b, "xreadgroup")
    assert (st[b"calls"], st[b"rejected_calls"], st[b"failed_calls"]) == (b"1", b"0", b"1")


def test_other_type_does_not_wake_a_list_reader(conns):
    a, b = conns(), conns()
    a.send("BLPOP", "k", "0")
    _blocked(b)
    b.call("SET", "k", "x")
    b.call("DEL", "k")
    b.call("XADD", "k", "1", "f", "v")
    b.call("ZADD", "k2", "1", "m")
    b.call("RENAME", "k2", "k")       # a zset moved into place
    assert a.nothing_within(0.1)
    b.call("DEL", "k")
    b.call("RPUSH", "k", "v")
    assert a.read(5) == b"*2\r\n$1\r\nk\r\n$1\r\nv\r\n"


def test_blocked_again_keeps_its_first_deadline(conns):
    a, c, b = conns(), conns(), conns()
    b.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    a.send("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    _blocked(b)
    t0 = time.monotonic()
    c.send("XREADGROUP", "GROUP", "g", "bob", "BLOCK", "600", "STREAMS", "s", ">")
    _blocked(b, 2)
    time.sleep(0.3)
    b.call("XADD", "s", "1", "f", "v")
    assert b"1-0" in a.read(5)
    # bob ran again, found nothing (alice took it) and blocked again: its
    # timeout is still 600 ms after it was sent, not after the XADD
    assert c.read(5) == b"*-1\r\n"
    assert time.monotonic() - t0 < 0.85
    st = _cmdstat(b, "xreadgroup")
    assert (st[b"calls"], st[b"failed_calls"]) == (b"2", b"0")


def test_each_waiter_once_per_wakeup(conns):
    """Clients that block again wait for the next signal (no endless loop)."""
    b = conns()
    b.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    readers = [conns() for _ in range(3)]
    for r in readers:
        r.send("XREADGROUP", "GROUP", "g", "u", "COUNT", "10", "BLOCK", "10000", "STREAMS", "s", ">")
    _blocked(b, 3)
    b.call("XADD", "s", "1", "f", "v")
    assert b"1-0" in readers[0].read(5)
    _blocked(b, 2)
    assert b.call("PING") == b"+PONG\r\n"
    b.call("XADD", "s", "2", "f", "v")
    assert b"2-0" in readers[1].read(5)
    assert readers[2].nothing_within(0.05)


def test_slowlog_and_monitor_see_the_blocked_command_once(conns):
    a, b, m = conns(), conns(), conns()
    b.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
    try:
        b.call("SLOWLOG", "RESET")
        assert m.call("MONITOR") == b"+OK\r\n"
        b.call("XADD", "s", "1", "f", "v")
        a.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
        _blocked(b)
        assert b"XREAD" not in b.call("SLOWLOG", "GET")
        b.call("XADD", "s", "2", "f", "w")
        # run again from the last ID it saw ("$" fixed when it blocked)
        r = a.read(5)
        assert b"2-0" in r and b"1-0" not in r
        log = b.call("SLOWLOG", "GET")
        # logged once, when it completed, as it was sent
        assert log.count(b"XREAD") == 1
        assert b"$1\r\n$\r\n" in log
        seen = m.read_until_quiet(0.2)
        assert seen.count(b'"XREAD"') == 1
        assert (_cmdstat(b, "xread") or {}).get(b"calls") == b"1"
    finally:
        b.call("CONFIG", "SET", "slowlog-log-slower-than", "10000")


def test_expired_key_does_not_wake(conns):
    a, b = conns(), conns()
    b.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        cid = a.call_value("CLIENT", "ID")
        a.send("BRPOP", "k", "0")
        _blocked(b)
        b.call("MULTI")
        b.call("RPUSH", "k", "hello")
        b.call("PEXPIRE", "k", "50")
        b.call("DEBUG", "SLEEP", "0.1")
        b.call("EXEC")
        # the waiter is not run again (Redis 7.4.1's suite checks that the
        # look does not delete the key either: its DEL is propagated later)
        assert re.search(rb"flags=b", b.call("CLIENT", "LIST", "ID", str(cid)))
        assert b.call("CLIENT", "UNBLOCK", str(cid)) == b":1\r\n"
        assert a.read(5) == b"*-1\r\n"
        assert b.call("EXISTS", "k") == b":0\r\n"
    finally:
        b.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_blmove_chain_served_in_one_pass(conns):
    a, c, b = conns(), conns(), conns()
    a.send("BLMOVE", "src", "dst", "LEFT", "RIGHT", "0")
    _blocked(b)
    c.send("BLPOP", "dst", "0")
    _blocked(b, 2)
    b.call("RPUSH", "src", "x")
    assert a.read(5) == b"$1\r\nx\r\n"
    assert c.read(5) == b"*2\r\n$3\r\ndst\r\n$1\r\nx\r\n"
    assert b.call("EXISTS", "src", "dst") == b":0\r\n"
    st = _cmdstat(b, "blmove")
    assert st[b"calls"] == b"1"


def test_client_unblock_timeout_is_not_a_failed_call(conns):
    a, b = conns(), conns()
    cid = a.call_value("CLIENT", "ID")
    a.send("BZPOPMIN", "z", "0")
    _blocked(b)
    assert b.call("CLIENT", "UNBLOCK", str(cid), "TIMEOUT") == b":1\r\n"
    assert a.read(5) == b"*-1\r\n"
    st = _cmdstat(b, "bzpopmin")
    assert (st[b"calls"], st[b"failed_calls"]) == (b"1", b"0")
