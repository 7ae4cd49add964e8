"""WAITAOF numlocal numreplicas timeout (Redis 7.2): the local AOF's fsynced
offset, the replicas' REPLCONF ACK ... FACK, blocking and timeouts, its
errors (compared byte for byte with valkey-server 9.1), and replication
both ways with valkey-server (a 7.2+ peer that sends and reads FACK) and
with Debian's Redis 7.0 (a replica that sends no FACK)."""

import os
import re
import signal
import time

import pytest

from support.resp import RespConn, encode
from support.servers import REDIS_SERVER, RedisServerProc, ValkeyServerProc, children_of
from support.wait import wait_until


def test_waitaof_errors_and_aof_off_same_as_valkey(same_as_valkey):
    same_as_valkey([
        ["WAITAOF", "2", "0", "0"], ["WAITAOF", "-1", "0", "0"], ["WAITAOF", "x", "0", "0"],
        ["WAITAOF", "0", "-1", "0"], ["WAITAOF", "0", "x", "0"], ["WAITAOF", "0", "0", "-1"],
        ["WAITAOF", "0", "0", "x"], ["WAITAOF", "1", "0", "0"], ["WAITAOF", "0", "0", "0"],
        ["WAITAOF", "0", "1", "10"], ["WAITAOF", "0", "0"], ["WAITAOF", "0", "0", "0", "0"],
        ["SET", "k", "v"], ["WAITAOF", "0", "0", "0"],
        ["MULTI"], ["WAITAOF", "0", "1", "0"], ["EXEC"],
        ["EVAL", "return redis.call('WAITAOF', 0, 1, 0)", "0"],
        ["EVAL", "return redis.pcall('WAITAOF', 1, 0, 0)", "0"],
    ])


def test_wait_and_waitaof_timeout_out_of_range_same_as_valkey(same_as_valkey):
    # getTimeoutFromObjectOrReply (7.2+): a timeout whose deadline (now +
    # it, in ms) would pass LLONG_MAX is out of range, not a wait forever;
    # beyond LLONG_MAX it is not an integer.  (Redis 7.4.1's unit/wait.)
    replies = same_as_valkey([
        ["WAIT", "2", "9223372036854775808"], ["WAIT", "2", "9223372036854775807"],
        ["WAIT", "2", "-1"], ["WAIT", "2", "9223372036854775807"],
        ["WAITAOF", "0", "2", "9223372036854775807"], ["WAITAOF", "0", "2", "9223372036854775808"],
        ["WAITAOF", "0", "2", "-1"],
    ])
    assert [r for _, r in replies] == [
        b"-ERR timeout is not an integer or out of range\r\n", b"-ERR timeout is out of range\r\n",
        b"-ERR timeout is negative\r\n", b"-ERR timeout is out of range\r\n",
        b"-ERR timeout is out of range\r\n", b"-ERR timeout is not an integer or out of range\r\n",
        b"-ERR timeout is negative\r\n"]


def _waitaof(conn, *args):
    return conn.call("WAITAOF", *args)


def _link_up(conn):
    wait_until(lambda: b"master_link_status:up" in conn.call("INFO", "replication"), 30,
               what="the replica's link up")


def test_waitaof_local_fsync_and_timeout(start_server):
    s = start_server("--appendonly", "yes", "--appendfsync", "always")
    with RespConn(s.port) as c:
        wait_until(lambda: b"aof_rewrite_in_progress:0" in c.call("INFO", "persistence"), 30)
        assert c.call("SET", "k", "v") == b"+OK\r\n"
        assert _waitaof(c, "1", "0", "0") == b"*2\r\n:1\r\n:0\r\n"
        # no replica: it waits for the timeout, then tells what it has
        t0 = time.monotonic()
        assert _waitaof(c, "1", "1", "200") == b"*2\r\n:1\r\n:0\r\n"
        assert time.monotonic() - t0 >= 0.15
        assert c.call("MULTI") == b"+OK\r\n"
        c.call("WAITAOF", "1", "1", "0")
        assert c.call("EXEC") == b"*1\r\n*2\r\n:1\r\n:0\r\n"


def _offset_and_waitaof(s):
    """With the AOF on and no replica (no backlog): master_repl_offset
    around an INCR and a transaction, and WAITAOF under appendfsync no."""
    with RespConn(s.port) as c:
        wait_until(lambda: b"aof_rewrite_in_progress:0" in c.call("INFO", "persistence"), 30)
        assert c.call("CONFIG", "SET", "appendfsync", "no") == b"+OK\r\n"

        def offset():
            return int(re.search(rb"master_repl_offset:(\d+)", c.call("INFO", "replication")).group(1))
        before = offset()
        c.call("INCR", "foo")
        after_incr = offset()
        c.call("MULTI")
        c.call("INCR", "foo")
        c.call("INCR", "bar")
        c.call("EXEC")
        after_tx = offset()
        c.call("GET", "foo")      # (no write: nothing fed)
        reply = _waitaof(c, "1", "0", "50")
        return after_incr - before, after_tx - after_incr, offset() - after_tx, reply


def test_offset_counts_commands_without_a_backlog_same_as_valkey(start_server, tmp_path):
    # Redis 7.2+ (replicationFeedSlaves): with no backlog the replication
    # offset still counts each command fed (a transaction: MULTI, its
    # commands, EXEC), so a write under appendfsync no is not taken as
    # fsynced: WAITAOF 1 0 times out with 0 (Redis 7.4.1's unit/wait
    # "WAITAOF local copy before fsync")
    ours = _offset_and_waitaof(start_server("--appendonly", "yes", "--auto-aof-rewrite-percentage", "0"))
    vk = ValkeyServerProc(["--appendonly", "yes", "--auto-aof-rewrite-percentage", "0"], dir=str(tmp_path))
    try:
        theirs = _offset_and_waitaof(vk)
    finally:
        vk.stop()
    # (the blocked WAITAOF's REPLCONF GETACK counts one too)
    assert ours == theirs == (1, 4, 1, b"*2\r\n:0\r\n:0\r\n")


def test_waitaof_blocked_client_gets_an_error_when_the_aof_is_turned_off(start_server):
    s = start_server("--appendonly", "yes")
    with RespConn(s.port) as c, RespConn(s.port) as admin:
        wait_until(lambda: b"aof_rewrite_in_progress:0" in admin.call("INFO", "persistence"), 30)
        c.send_raw(encode("WAITAOF", "1", "1", "0"))
        wait_until(lambda: b"blocked_clients:1" in admin.call("INFO", "clients"), 20)
        assert admin.call("CONFIG", "SET", "appendonly", "no") == b"+OK\r\n"
        assert c.read(timeout=10) == \
            b"-ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.\r\n"
        # CLIENT UNBLOCK answers as a timeout does
        c.send_raw(encode("WAITAOF", "0", "1", "0"))
        wait_until(lambda: b"blocked_clients:1" in admin.call("INFO", "clients"), 20)
        line = [x for x in admin.call("CLIENT", "LIST").split(b"\n") if b"cmd=waitaof" in x][0]
        cid = line.split(b"id=")[1].split(b" ")[0].decode()
        assert admin.call("CLIENT", "UNBLOCK", cid) == b":1\r\n"
        assert c.read(timeout=10) == b"*2\r\n:0\r\n:0\r\n"


def test_waitaof_with_our_replica_and_fack(start_server):
    m = start_server("--appendonly", "yes")
    r = start_server("--appendonly", "yes", "--replicaof", "127.0.0.1", str(m.port))
    with RespConn(m.port) as mc, RespConn(r.port) as rc:
        _link_up(rc)
        wait_until(lambda: b"aof_rewrite_in_progress:0" in rc.call("INFO", "persistence")
                   and b"aof_rewrite_in_progress:0" in mc.call("INFO", "persistence"), 30)
        assert mc.call("SET", "k", "v") == b"+OK\r\n"
        assert _waitaof(mc, "1", "1", "10000") == b"*2\r\n:1\r\n:1\r\n"
        assert mc.call("WAIT", "1", "10000") == b":1\r\n"
        # WAIT and WAITAOF wait for the caller's own last write: with the
        # replica stopped, a client that wrote nothing is answered at once
        os.kill(r.pid, signal.SIGSTOP)
        try:
            assert mc.call("INCR", "n0") == b":1\r\n"
            with RespConn(m.port) as other:
                assert other.call("WAIT", "1", "0") == b":1\r\n"
                assert _waitaof(other, "1", "1", "0") == b"*2\r\n:1\r\n:1\r\n"
            assert mc.call("WAIT", "1", "200") == b":0\r\n"
            # (the local fsync of everysec may or may not have happened yet)
            assert _waitaof(mc, "0", "1", "200") in (b"*2\r\n:1\r\n:0\r\n", b"*2\r\n:0\r\n:0\r\n")
        finally:
            os.kill(r.pid, signal.SIGCONT)
        assert mc.call("WAIT", "1", "10000") == b":1\r\n"
        assert _waitaof(rc, "0", "0", "0") == (
            b"-ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas "
            b"are just local and are not propagated.\r\n")
        # the replica's AOF off: it no longer acknowledges fsyncs
        assert rc.call("CONFIG", "SET", "appendonly", "no") == b"+OK\r\n"
        assert mc.call("INCR", "n") == b":1\r\n"
        assert mc.call("WAIT", "1", "10000") == b":1\r\n"
        assert _waitaof(mc, "1", "0", "10000") == b"*2\r\n:1\r\n:0\r\n"     # our own fsync
        assert _waitaof(mc, "1", "1", "300") == b"*2\r\n:1\r\n:0\r\n"


@pytest.mark.skipif(ValkeyServerProc.BINARY is None, reason="valkey-server is not installed")
def test_waitaof_across_valkey_both_ways(start_server):
    # a valkey replica of ours: its FACK counts
    m = start_server("--appendonly", "yes")
    vr = ValkeyServerProc(["--appendonly", "yes", "--replicaof", "127.0.0.1", str(m.port)])
    try:
        with RespConn(m.port) as mc, RespConn(vr.port) as vc:
            _link_up(vc)
            assert mc.call("SET", "k", "v") == b"+OK\r\n"
            assert _waitaof(mc, "1", "1", "10000") == b"*2\r\n:1\r\n:1\r\n"
    finally:
        vr.stop()
    # our replica of a valkey master: our FACK counts there
    vm = ValkeyServerProc(["--appendonly", "yes"])
    try:
        r = start_server("--appendonly", "yes", "--replicaof", "127.0.0.1", str(vm.port))
        with RespConn(vm.port) as vc, RespConn(r.port) as rc:
            _link_up(rc)
            wait_until(lambda: b"aof_rewrite_in_progress:0" in rc.call("INFO", "persistence"), 30)
            assert vc.call("SET", "k", "v") == b"+OK\r\n"
            assert _waitaof(vc, "0", "1", "10000") == b"*2\r\n:1\r\n:1\r\n"
            assert vc.call("INCR", "n") == b":1\r\n"
            assert _waitaof(vc, "1", "1", "10000") == b"*2\r\n:1\r\n:1\r\n"
    finally:
        vm.stop()


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")
def test_waitaof_with_a_redis70_replica_without_fack(start_server):
    m = start_server("--appendonly", "yes")
    rr = RedisServerProc(["--appendonly", "yes", "--replicaof", "127.0.0.1", str(m.port)])
    try:
        with RespConn(m.port) as mc, RespConn(rr.port) as rc:
            _link_up(rc)
            assert mc.call("SET", "k", "v") == b"+OK\r\n"
            assert mc.call("WAIT", "1", "10000") == b":1\r\n"
            # its ACKs carry no FACK: never counted for WAITAOF
            assert _waitaof(mc, "0", "1", "300") == b"*2\r\n:1\r\n:0\r\n"
    finally:
        rr.stop()


def test_waitaof_waits_for_a_postponed_rewrite(start_server):
    # appendonly turned on while an RDB child runs: the AOF is enabled (its
    # rewrite postponed), so WAITAOF 1 waits for that rewrite instead of
    # answering that the AOF is off (Redis 7.4.1's unit/wait "WAITAOF local
    # if AOFRW was postponed")
    s = start_server("--save", "")
    with RespConn(s.port) as c:
        assert c.call("SET", "x", "y") == b"+OK\r\n"
        c.call("CONFIG", "SET", "rdb-key-save-delay", "100000000")
        assert c.call("BGSAVE") == b"+Background saving started\r\n"
        assert c.call("CONFIG", "SET", "appendonly", "yes") == b"+OK\r\n"
        assert b"aof_rewrite_scheduled:1" in c.call("INFO", "persistence")
        assert c.call("SET", "x", "y") == b"+OK\r\n"
        c.call("CONFIG", "SET", "rdb-key-save-delay", "0")
        for k in children_of(s.proc.pid):
            os.kill(k, signal.SIGKILL)
        assert _waitaof(c, "1", "0", "10000") == b"*2\r\n:1\r\n:0\r\n"
        info = c.call("INFO", "persistence")
        assert b"aof_rewrite_in_progress:0" in info and b"aof_rewrite_scheduled:0" in info


def test_waitaof_released_by_a_replica_that_switched_masters(start_server):
    # A replica's full sync sets its offset to the new master's before its
    # AOF rewrite starts: the rewrite's FACK covers the new master's stream,
    # whatever the old master's offset was (Redis 7.4.1's unit/wait
    # "WAITAOF when replica switches between masters, fsync: no")
    aof = ("--appendonly", "yes", "--auto-aof-rewrite-percentage", "0", "--save", "")
    m1, m2 = start_server(*aof), start_server(*aof)
    r1, r2 = start_server(*aof), start_server(*aof)
    with RespConn(m1.port) as a, RespConn(m2.port) as b, RespConn(r1.port) as ra, RespConn(r2.port) as rb:
        assert ra.call("REPLICAOF", "127.0.0.1", str(m1.port)) == b"+OK\r\n"
        assert rb.call("REPLICAOF", "127.0.0.1", str(m2.port)) == b"+OK\r\n"
        _link_up(ra)
        _link_up(rb)
        for _ in range(20):
            b.call("INCR", "filler")     # m2's offset well past m1's
        for conn in (ra, rb):
            assert conn.call("CONFIG", "SET", "appendfsync", "no") == b"+OK\r\n"
        for conn in (a, b):
            assert conn.call("CONFIG", "SET", "appendfsync", "always") == b"+OK\r\n"
        assert a.call("SET", "boo", "11") == b"+OK\r\n"
        assert b.call("SET", "boo", "22") == b"+OK\r\n"
        a.send("WAITAOF", "1", "1", "0")
        b.send("WAITAOF", "1", "1", "0")
        for conn, srv in ((a, m1), (b, m2)):
            with RespConn(srv.port) as admin:
                wait_until(lambda: b"blocked_clients:1" in admin.call("INFO", "clients"), what="the WAITAOF blocked")
        # each replica to the other master: released once it has synced
        assert rb.call("REPLICAOF", "127.0.0.1", str(m1.port)) == b"+OK\r\n"
        assert ra.call("REPLICAOF", "127.0.0.1", str(m2.port)) == b"+OK\r\n"
        assert a.read(timeout=30) == b"*2\r\n:1\r\n:1\r\n"
        assert b.read(timeout=30) == b"*2\r\n:1\r\n:1\r\n"
        assert ra.call("GET", "boo") == b"$2\r\n22\r\n" and rb.call("GET", "boo") == b"$2\r\n11\r\n"
