"""PSYNC2: the backlog, partial resynchronisation after a link drop, after a
promotion and after a restart, chains, WAIT, with Ophidis and Debian's
redis-server on either side.  Every scenario compares DEBUG DIGEST (Redis's
digest, the same on both kinds of server) and the datasets of master and
replicas once their offsets are equal."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest
import redis

from support.clients import contents
from support.resp import encode
from support.servers import REDIS_SERVER, FakeServer, RedisServerProc, free_port
from support.wait import wait_until


def info(c, section="replication"):
    return c.info(section)


def linked(c):
    return info(c).get("master_link_status") == "up"


def digest(c):
    return c.execute_command("DEBUG", "DIGEST")


def caught_up(master, *replicas):
    off = info(master)["master_repl_offset"]
    return all(info(r)["slave_repl_offset"] == off for r in replicas)


def dataset(c):
    """Every key of db 0 with its type and contents."""
    out = {}
    for k in c.keys("*"):
        t = c.type(k)
        out[k] = (t, contents(c, k, t))
    return out


def same_data(master, *replicas):
    """Offsets equal, then the same DEBUG DIGEST (Redis's digest on both
    kinds of server) and the same keys and values."""
    wait_until(lambda: caught_up(master, *replicas), what="the replicas to catch up")
    d = dataset(master)
    dg = digest(master)
    for r in replicas:
        assert digest(r) == dg
        assert dataset(r) == d


def sync_counts(c):
    """sync_full, sync_partial_ok, sync_partial_err (a new replica first
    asks PSYNC with its own id: one refused partial sync, as in Redis)."""
    s = c.info("stats")
    return s["sync_full"], s["sync_partial_ok"], s["sync_partial_err"]


def replicate(replica, master_port):
    replica.execute_command("REPLICAOF", "127.0.0.1", str(master_port))
    wait_until(lambda: linked(replica), what="the link")


def workload(c, tag, n=50):
    p = c.pipeline(transaction=False)
    for i in range(n):
        p.set("%s:%d" % (tag, i), "v%d" % i)
        p.rpush("list:" + tag, i)
        p.hset("h:" + tag, str(i), i)
    p.incrby("counter", n)
    p.execute()
    tx = c.pipeline(transaction=True)
    tx.incr("counter")
    tx.sadd("set:" + tag, "a", "b")
    tx.execute()


def replicated(master, *replicas, n=50):
    """``replicas`` linked to ``master``, the workload "a" written, and all
    of them caught up with the same data."""
    for r in replicas:
        replicate(r, master.port)
    workload(master, "a", n)
    same_data(master, *replicas)


@pytest.fixture
def real():
    """Start Debian's redis-server processes; all stopped at teardown."""
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (make test installs it)")
    started = []

    def start(*args, dir=None, port=None):
        p = RedisServerProc(["--repl-diskless-sync-delay", "0"] + list(args), debug=True, dir=dir, port=port)
        started.append(p)
        return p

    try:
        yield start
    finally:
        for p in started:
            p.stop(remove=True)


def ophidis(start_server, *args):
    s = start_server("--enable-debug-command", "yes", "--repl-diskless-sync-delay", "0", *args)
    c = s.client()
    c.port = s.port
    return s, c


def _server(kind, real, start_server):
    """(process, client with .port) of one kind of server."""
    if kind == "redis":
        p = real()
        c = p.client()
        c.port = p.port
        return p, c
    return ophidis(start_server)


def kill_link_from_replica(r):
    assert r.execute_command("CLIENT", "KILL", "TYPE", "master") == 1


def test_link_drop_continues_from_the_backlog(start_server):
    _, m = ophidis(start_server)
    _, r = ophidis(start_server)
    replicated(m, r)
    mi = info(m)
    assert mi["repl_backlog_active"] == 1 and mi["repl_backlog_first_byte_offset"] == 1
    assert mi["repl_backlog_histlen"] == mi["master_repl_offset"] > 0
    assert info(r)["master_replid"] == mi["master_replid"]
    kill_link_from_replica(r)
    workload(m, "b")            # written while the replica may be disconnected
    wait_until(lambda: linked(r), what="the link again")
    same_data(m, r)
    assert sync_counts(m) == (1, 1, 1)
    # the replica's ACKs (every second) bring its offset to the master's INFO
    wait_until(lambda: info(m)["slave0"]["offset"] == info(m)["master_repl_offset"], what="the ACK")
    assert info(m)["slave0"]["state"] == "online"
    # the master's side drops the link: the same
    m.execute_command("CLIENT", "KILL", "TYPE", "replica")
    workload(m, "c")
    wait_until(lambda: sync_counts(m)[1] == 2, what="the second partial resync")
    same_data(m, r)


def test_backlog_overflow_needs_a_full_sync(start_server):
    _, m = ophidis(start_server, "--repl-backlog-size", "16384")
    rs, r = ophidis(start_server)
    replicated(m, r, n=10)
    # the replica is stopped; meanwhile its link goes and 100 KB more than
    # the backlog holds are written
    os.kill(rs.pid, signal.SIGSTOP)
    try:
        m.execute_command("CLIENT", "KILL", "TYPE", "replica")
        m.set("big", "x" * 100000)
        workload(m, "b", 20)
    finally:
        os.kill(rs.pid, signal.SIGCONT)
    wait_until(lambda: sync_counts(m)[0] == 2, what="the second full sync")
    assert sync_counts(m)[2] == 2        # the PSYNC was refused
    wait_until(lambda: linked(r), what="the link")
    same_data(m, r)
    # whole blocks go: the history is longer than repl-backlog-size by less
    # than a block (a block is at least 16 KB)
    assert 16384 < info(m)["repl_backlog_histlen"] < 16384 + 20480


def _buffer_figures(c):
    i = c.info("replication")
    mem = c.info("memory")
    return (i["repl_backlog_histlen"], i["repl_backlog_first_byte_offset"], i["master_repl_offset"],
            mem["mem_total_replication_buffers"], mem["mem_replication_backlog"])


def test_shared_buffer_figures_as_redis_server(real, start_server):
    """The same stream on an Ophidis and a redis-server master (each with
    a replica): the backlog's length, first offset and the replication
    buffer's memory are the same figures (Redis 7.0's blocks: trimmed a
    whole block at a time, sized by jemalloc's classes), also after a
    CONFIG SET of repl-backlog-size (never below 16 KB)."""
    masters = []
    for kind in ("ophidis", "redis"):
        _, m = _server(kind, real, start_server)
        m.config_set("repl-backlog-size", 16384)
        m.config_set("repl-ping-replica-period", 3600)     # no PING in either stream
        _, r = ophidis(start_server)
        replicate(r, m.port)
        masters.append((m, r))

    def both(*args):
        for m, _ in masters:
            m.execute_command(*args)

    def figures():
        for m, r in masters:
            wait_until(lambda: caught_up(m, r), what="the replica to catch up")
        return [_buffer_figures(m) for m, _ in masters]

    both("SET", "big", "x" * 100000)
    for i in range(200):
        both("SET", "k%d" % i, "v" * 50)
    ours, theirs = figures()
    assert ours == theirs
    assert ours[0] > 16384
    both("SET", "more", "y" * 20000)
    both("CONFIG", "SET", "repl-backlog-size", 8192)
    ours, theirs = figures()
    assert ours == theirs
    assert [m.config_get("repl-backlog-size") for m, _ in masters] == [{"repl-backlog-size": "16384"}] * 2
    both("CONFIG", "SET", "repl-backlog-size", 1000000)
    both("SET", "more", "y" * 200000)
    ours, theirs = figures()
    assert ours == theirs


def test_promotion_keeps_the_history_for_the_other_replicas(start_server):
    _, m = ophidis(start_server)
    _, r1 = ophidis(start_server)
    _, r2 = ophidis(start_server)
    replicated(m, r1, r2)
    old_id = info(m)["master_replid"]
    off = info(m)["master_repl_offset"]
    # failover: r1 becomes the master, r2 and the old master follow it
    r1.execute_command("REPLICAOF", "NO", "ONE")
    i1 = info(r1)
    assert i1["master_replid2"] == old_id and i1["second_repl_offset"] == off + 1
    assert i1["master_replid"] != old_id
    replicate(r2, r1.port)
    m.execute_command("REPLICAOF", "127.0.0.1", str(r1.port))
    wait_until(lambda: linked(m), what="the old master's link")
    assert sync_counts(r1) == (0, 2, 0)     # both continued partially
    workload(r1, "b")
    same_data(r1, r2, m)
    assert info(r2)["master_replid"] == info(r1)["master_replid"]
    assert info(r2)["master_replid2"] == old_id


@pytest.mark.parametrize("kinds", ["ophidis ophidis ophidis", "ophidis redis ophidis", "redis ophidis redis",
                                   "ophidis ophidis redis"])
def test_chain_of_three_gets_the_stream_byte_for_byte(real, start_server, kinds):
    """master -> replica -> sub-replica, each of either kind: the
    sub-replica's offset and data are the top master's."""
    m, r1, r2 = [_server(k, real, start_server)[1] for k in kinds.split()]
    replicate(r1, m.port)
    replicate(r2, r1.port)
    workload(m, "a")
    same_data(m, r1)
    wait_until(lambda: info(r2)["slave_repl_offset"] == info(m)["master_repl_offset"],
               what="the sub-replica's offset")
    assert dataset(r2) == dataset(m)
    assert info(r2)["master_replid"] == info(m)["master_replid"]
    # the middle replica's link drops: both levels continue
    kill_link_from_replica(r1)
    workload(m, "b")
    wait_until(lambda: linked(r1), what="the middle link")
    wait_until(lambda: info(r2)["slave_repl_offset"] == info(m)["master_repl_offset"],
               what="the sub-replica's offset")
    assert dataset(r2) == dataset(m) and digest(r2) == digest(m)
    assert sync_counts(m) == (1, 1, 1) and sync_counts(r1)[0] == 1


def test_restarts_resume_with_psync(start_server):
    ms, m = ophidis(start_server)
    rs, r = ophidis(start_server)
    replicated(m, r)
    # the replica restarts from its RDB file (replication id and offset in
    # its aux fields) and continues
    r.shutdown(save=True)
    r.close()
    rs.proc.wait(20)
    workload(m, "b")
    rs2, r = ophidis(start_server, "--replicaof", "127.0.0.1", str(m.port), "--dir", rs.dir)
    wait_until(lambda: linked(r), what="the restarted replica's link")
    same_data(m, r)
    assert sync_counts(m) == (1, 1, 1)
    # the master restarts: its old id is its secondary one; the replica continues
    old = info(m)["master_replid"]
    m.shutdown(save=True)
    m.close()
    ms.proc.wait(20)
    ms2, m = ophidis(start_server, "--dir", ms.dir, "--port", str(ms.port))
    assert info(m)["master_replid2"] == old
    wait_until(lambda: linked(r), what="the link to the restarted master")
    assert sync_counts(m) == (0, 1, 0)
    workload(m, "c")
    same_data(m, r)


def test_wait_counts_acknowledgements(start_server):
    _, m = ophidis(start_server)
    _, r1 = ophidis(start_server)
    s2, r2 = ophidis(start_server)
    assert m.execute_command("WAIT", 0, 0) == 0
    replicate(r1, m.port)
    replicate(r2, m.port)
    for i in range(20):
        m.set("k%d" % i, i)
        assert m.execute_command("WAIT", 2, 5000) == 2
    # a stopped replica cannot acknowledge
    os.kill(s2.pid, signal.SIGSTOP)
    try:
        m.incr("late")
        assert m.execute_command("WAIT", 2, 300) == 1
    finally:
        os.kill(s2.pid, signal.SIGCONT)
    assert m.execute_command("WAIT", 2, 5000) == 2
    with pytest.raises(redis.ResponseError, match="WAIT cannot be used with replica instances"):
        r1.execute_command("WAIT", 1, 0)
    with pytest.raises(redis.ResponseError, match="timeout is negative"):
        m.execute_command("WAIT", 1, -1)
    lag = info(m)["slave0"]["lag"]
    assert 0 <= lag <= 2
    # min-replicas-to-write counts the replicas with a fresh ACK
    m.config_set("min-replicas-to-write", 2)
    m.set("ok", 1)
    m.config_set("min-replicas-to-write", 3)
    with pytest.raises(redis.ResponseError, match="NOREPLICAS"):
        m.set("no", 1)
    assert info(m)["min_slaves_good_slaves"] == 2


@pytest.mark.parametrize("diskless", ["yes", "no"])
def test_full_sync_of_two_replicas_by_one_child(start_server, diskless):
    ms, m = ophidis(start_server, "--repl-diskless-sync", diskless,
                    "--repl-diskless-sync-delay", "2", "--repl-diskless-sync-max-replicas", "2")
    for i in range(2000):
        m.set("k%d" % i, "v" * 100)
    workload(m, "a")
    _, r1 = ophidis(start_server)
    _, r2 = ophidis(start_server)
    r1.execute_command("REPLICAOF", "127.0.0.1", str(m.port))
    r2.execute_command("REPLICAOF", "127.0.0.1", str(m.port))
    wait_until(lambda: linked(r1) and linked(r2), what="both links")
    workload(m, "b")           # the stream after the payload
    same_data(m, r1, r2)
    out = ms.output()
    if diskless == "yes":
        assert out.count("Background RDB transfer started") == 1
        assert "done reading from pipe, 2 replicas still up" in out
    else:
        assert out.count("Background saving started") == 1
        assert "target: disk" in out
    assert sync_counts(m)[0] == 2
    assert info(m, "persistence")["rdb_bgsave_in_progress"] == 0


def test_sync_while_bgsave_runs_attaches_or_waits(start_server):
    """A disk BGSAVE already running with another replica waiting for it is
    shared; the master keeps serving while the child works."""
    ms, m = ophidis(start_server, "--repl-diskless-sync", "no", "--rdb-key-save-delay", "2000")
    for i in range(2000):
        m.set("k%d" % i, i)       # a 4 s snapshot
    _, r1 = ophidis(start_server)
    r1.execute_command("REPLICAOF", "127.0.0.1", str(m.port))
    wait_until(lambda: info(m, "persistence")["rdb_bgsave_in_progress"] == 1, what="the BGSAVE")
    assert info(m)["slave0"]["state"] == "wait_bgsave"
    m.set("during", "the child")             # served meanwhile, held for the replica
    with pytest.raises(redis.ResponseError, match="already in progress"):
        m.bgsave()
    _, r2 = ophidis(start_server)
    r2.execute_command("REPLICAOF", "127.0.0.1", str(m.port))
    wait_until(lambda: "Waiting for end of BGSAVE for SYNC" in ms.output(), what="the attach")
    wait_until(lambda: linked(r1) and linked(r2), timeout=60, what="both links")
    same_data(m, r1, r2)
    assert r2.get("during") == b"the child"


# -- with redis-server on the other side --------------------------------------------

@pytest.mark.parametrize("master_kind,replica_kind", [("redis", "ophidis"), ("ophidis", "redis")])
def test_link_drop_continues_between_the_two_kinds(real, start_server, master_kind, replica_kind):
    _, m = _server(master_kind, real, start_server)
    rp, r = _server(replica_kind, real, start_server)
    replicated(m, r)
    kill_link_from_replica(r)
    workload(m, "b")
    wait_until(lambda: linked(r), what="the link again")
    same_data(m, r)
    assert sync_counts(m) == (1, 1, 1)
    assert "Successful partial resynchronization" in rp.output()


def test_failover_between_the_two_kinds(real, start_server):
    """redis-server master, Ophidis and redis-server replicas; the Ophidis
    replica is promoted, the others follow it with partial resyncs; then
    back to the redis-server replica."""
    mp, m = _server("redis", real, start_server)
    rp, rr = _server("redis", real, start_server)
    _, o = ophidis(start_server)
    replicated(m, o, rr)
    o.execute_command("REPLICAOF", "NO", "ONE")
    replicate(rr, o.port)
    m.execute_command("REPLICAOF", "127.0.0.1", str(o.port))
    wait_until(lambda: linked(m), what="the old master's link")
    assert sync_counts(o) == (0, 2, 0)
    workload(o, "b")
    same_data(o, rr, m)
    # and back: the redis-server replica is promoted, Ophidis follows
    rr.execute_command("REPLICAOF", "NO", "ONE")
    replicate(o, rr.port)
    m.execute_command("REPLICAOF", "127.0.0.1", str(rr.port))
    wait_until(lambda: linked(m), what="the link")
    assert sync_counts(rr)[1] == 2 and sync_counts(rr)[0] == 0
    workload(rr, "c")
    same_data(rr, o, m)


def test_failover_command_errors(start_server):
    _, m = ophidis(start_server)
    with pytest.raises(redis.ResponseError, match="^No failover in progress.$"):
        m.execute_command("FAILOVER", "ABORT")
    with pytest.raises(redis.ResponseError, match="^FAILOVER requires connected replicas.$"):
        m.execute_command("FAILOVER")
    with pytest.raises(redis.ResponseError, match="^FAILOVER timeout must be greater than 0$"):
        m.execute_command("FAILOVER", "TIMEOUT", 0)
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        m.execute_command("FAILOVER", "TO", "127.0.0.1")
    _, r = ophidis(start_server)
    replicate(r, m.port)
    with pytest.raises(redis.ResponseError, match="^FAILOVER with force option requires both a timeout"):
        m.execute_command("FAILOVER", "TO", "127.0.0.1", r.port, "FORCE")
    with pytest.raises(redis.ResponseError, match="^FAILOVER target HOST and PORT is not a replica.$"):
        m.execute_command("FAILOVER", "TO", "127.0.0.1", 1)
    with pytest.raises(redis.ResponseError, match="^FAILOVER is not valid when server is a replica.$"):
        r.execute_command("FAILOVER")
    # a replica that never catches up: the failover is aborted at its timeout
    os.kill(_pid_of(start_server, r), signal.SIGSTOP)
    try:
        m.set("x", 1)
        assert m.execute_command("FAILOVER", "TIMEOUT", 300) == b"OK"
        assert info(m)["master_failover_state"] == "waiting-for-sync"
        with pytest.raises(redis.ResponseError, match="^FAILOVER already in progress.$"):
            m.execute_command("FAILOVER")
        with pytest.raises(redis.ResponseError, match="^REPLICAOF not allowed while failing over.$"):
            m.execute_command("REPLICAOF", "NO", "ONE")
        wait_until(lambda: info(m)["master_failover_state"] == "no-failover", what="the abort")
    finally:
        os.kill(_pid_of(start_server, r), signal.SIGCONT)
    assert info(m)["role"] == "master"
    m.set("y", 1)                   # writes are no longer paused


def _pid_of(starter, client):
    for s in starter.started:
        if s.port == client.port:
            return s.pid
    raise KeyError(client.port)


def test_failover_to_either_kind(real, start_server):
    ms, m = ophidis(start_server)
    rp, rr = _server("redis", real, start_server)
    _, o = ophidis(start_server)
    replicated(m, rr, o)
    # Ophidis master -> the redis-server replica
    assert m.execute_command("FAILOVER", "TO", "127.0.0.1", rr.port) == b"OK"
    wait_until(lambda: info(rr)["role"] == "master" and linked(m), what="the switch")
    assert info(m)["master_failover_state"] == "no-failover"
    assert "FAILOVER requested to 127.0.0.1:%d." % rr.port in ms.output()
    replicate(o, rr.port)
    workload(rr, "b")
    same_data(rr, m, o)
    assert sync_counts(rr)[0] == 0            # no full sync anywhere
    # redis-server master -> the Ophidis replica
    assert rr.execute_command("FAILOVER", "TO", "127.0.0.1", o.port) == b"OK"
    wait_until(lambda: info(o)["role"] == "master" and linked(rr), what="the second switch")
    replicate(m, o.port)
    workload(o, "c")
    same_data(o, rr, m)
    assert sync_counts(o)[0] == 0


def test_shutdown_waits_for_lagging_replicas(start_server):
    ms, m = ophidis(start_server, "--shutdown-timeout", "20")
    _, r = ophidis(start_server)
    replicate(r, m.port)
    m.set("a", 1)
    same_data(m, r)
    pid = _pid_of(start_server, r)
    os.kill(pid, signal.SIGSTOP)
    done = []
    try:
        m.set("last", "write")
        t = threading.Thread(target=lambda: done.append(_shutdown(m.port)))
        t.start()
        wait_until(lambda: "Waiting for replicas before shutting down." in ms.output(), what="the wait")
        other = redis.Redis(port=m.port, socket_timeout=5)
        assert 0 < other.info("server")["shutdown_in_milliseconds"] <= 20000
        assert not done
    finally:
        os.kill(pid, signal.SIGCONT)
    t.join(30)
    ms.proc.wait(30)
    assert "1 of 1 replicas are in sync when shutting down." in ms.output()
    assert r.get("last") == b"write"


def test_shutdown_abort(start_server):
    ms, m = ophidis(start_server, "--shutdown-timeout", "20")
    _, r = ophidis(start_server)
    replicate(r, m.port)
    pid = _pid_of(start_server, r)
    os.kill(pid, signal.SIGSTOP)
    result = []
    try:
        m.set("x", 1)
        t = threading.Thread(target=lambda: result.append(_shutdown(m.port)))
        t.start()
        wait_until(lambda: "Waiting for replicas before shutting down." in ms.output(), what="the wait")
        other = redis.Redis(port=m.port, socket_timeout=5)
        assert other.execute_command("SHUTDOWN", "ABORT") is True     # +OK
        t.join(10)
        assert result == ["-ERR Errors trying to SHUTDOWN. Check logs."]
        with pytest.raises(redis.ResponseError, match="No shutdown in progress"):
            other.execute_command("SHUTDOWN", "ABORT")
        other.set("y", 2)         # no longer paused
    finally:
        os.kill(pid, signal.SIGCONT)
    assert "Shutdown manually aborted." in ms.output()


def _shutdown(port):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"SHUTDOWN\r\n")
        data = s.recv(1000)
    return data.decode().strip()


def test_empty_flushdb_propagates_and_divergence_is_logged(start_server):
    ms, m = ophidis(start_server)
    rs, r = ophidis(start_server)
    replicate(r, m.port)
    r.config_set("replica-read-only", "no")
    r.set("n", "not a number")          # diverges on purpose
    m.incrby("n", 1)
    m.execute_command("WAIT", 1, 5000)
    assert r.get("n") == b"not a number" and m.get("n") == b"1"
    wait_until(lambda: "== CRITICAL == This replica is sending an error to its master: "
               "'value is not an integer or out of range' after processing the command 'incrby'"
               in rs.output(), what="the critical log line")
    assert r.info("stats")["unexpected_error_replies"] == 1
    # an error with its own code keeps its dash (Redis's shared error object)
    r.set("s", "abc")
    m.lpush("s", "x")
    wait_until(lambda: "== CRITICAL == This replica is sending an error to its master: '-WRONGTYPE "
               "Operation against a key holding the wrong kind of value' after processing the command 'lpush'"
               in rs.output(), what="the WRONGTYPE line")
    r5 = redis.Redis(port=r.port, db=5)
    r5.set("local", 1)                   # only on the (writable) replica
    m5 = redis.Redis(port=m.port, db=5)
    assert m5.dbsize() == 0
    m5.flushdb()                         # changes nothing here, still propagated
    wait_until(lambda: r5.dbsize() == 0, what="FLUSHDB on the replica")
    # FLUSHALL with save points: its save resets the dirty count, it still propagates
    m.config_set("save", "900 1")
    m.set("x", 1)
    m.flushall()
    r5.set("again", 1)
    m.flushall()
    wait_until(lambda: r5.dbsize() == 0, what="the second FLUSHALL on the replica")


def test_replica_timeout_during_handshake(start_server):
    ms, m = ophidis(start_server, "--repl-diskless-sync-delay", "1000")
    rs, r = ophidis(start_server, "--repl-timeout", "2")
    r.execute_command("REPLICAOF", "127.0.0.1", str(m.port))
    wait_until(lambda: b"handshake" in r.execute_command("ROLE")[3], what="the handshake")
    os.kill(_pid_of(start_server, m), signal.SIGSTOP)   # no keep-alive newlines
    try:
        wait_until(lambda: "Timeout connecting to the MASTER..." in rs.output(), timeout=30,
                   what="the timeout")
    finally:
        os.kill(_pid_of(start_server, m), signal.SIGCONT)


def test_writable_replica_expires_its_own_keys(start_server):
    _, m = ophidis(start_server)
    _, r = ophidis(start_server)
    replicate(r, m.port)
    m.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 0)
    m.set("from_master", 5, px=10)
    wait_until(lambda: r.dbsize() == 1 and r.exists("from_master") == 0, what="the replicated key")
    r.config_set("replica-read-only", "no")
    assert r.dbsize() == 1                  # the master's key waits for its DEL
    assert r.incr("from_master") == 1       # a write deletes it here first
    assert r.ttl("from_master") == -1
    r.set("own", 1, px=300)
    wait_until(lambda: r.dbsize() == 1, what="the replica's own key to expire")
    assert r.get("from_master") == b"1"
    # PFCOUNT on a read-only replica is allowed
    r.config_set("replica-read-only", "yes")
    m.pfadd("hll", "a", "b", "c")
    wait_until(lambda: caught_up(m, r), what="the replica")
    assert r.pfcount("hll") == 3


def test_replica_restart_after_config_rewrite_continues(start_server):
    """REPLICAOF at run time, CONFIG REWRITE, restart: the replica comes
    back as a replica and continues with PSYNC (psync2.tcl's restart)."""
    _, m = ophidis(start_server)
    d = tempfile.mkdtemp(prefix="ophidis-test-")
    conf = os.path.join(d, "redis.conf")
    with open(conf, "w") as f:
        f.write("enable-debug-command yes\n")
    port = free_port()
    args = (conf, "--save", "3600 1", "--port", str(port), "--dir", d)
    rs2 = start_server(*args)
    r = rs2.client()
    r.port = rs2.port
    replicated(m, r)
    r.config_rewrite()
    assert "replicaof 127.0.0.1 %d" % m.port in open(conf).read()
    r.shutdown(save=True)
    rs2.proc.wait(20)
    full, partial, _ = sync_counts(m)
    start_server(*args)
    r = rs2.client()
    wait_until(lambda: linked(r), what="the restarted replica")
    assert sync_counts(m)[:2] == (full, partial + 1)
    same_data(m, r)


def test_master_restart_deletes_expired_keys_in_the_history(start_server):
    ms, m = ophidis(start_server)
    _, r = ophidis(start_server)
    replicate(r, m.port)
    m.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 0)
    for i in range(10):
        m.set("volatile%d" % i, i, px=1500)
    m.set("stays", 1)
    same_data(m, r)
    m.shutdown(save=True)
    m.close()
    ms.proc.wait(20)
    time.sleep(1.6)              # the keys expire while the master is down
    start_server("--enable-debug-command", "yes", "--dir", ms.dir, "--port", str(ms.port))
    m = redis.Redis(port=ms.port)
    wait_until(lambda: linked(r), what="the link to the restarted master")
    assert sync_counts(m)[:2] == (0, 1)
    mi = info(m)
    assert mi["master_repl_offset"] > mi["second_repl_offset"] - 1     # the DELs are history
    wait_until(lambda: caught_up(m, r), what="the replica")
    assert r.dbsize() == m.dbsize() == 1


def test_stuck_replica_is_dropped(start_server):
    """A replica that stops taking data (SIGSTOP) during or after its
    diskless transfer is disconnected after repl-timeout, then resyncs."""
    ms, m = ophidis(start_server, "--repl-timeout", "2")
    m.execute_command("DEBUG", "POPULATE", 3000, "key", 10000)     # a 30 MB payload
    s1, r1 = ophidis(start_server)
    r1.execute_command("REPLICAOF", "127.0.0.1", str(m.port))
    wait_until(lambda: info(m)["connected_slaves"] == 1, what="the replica")
    os.kill(s1.pid, signal.SIGSTOP)
    try:
        wait_until(lambda: "Disconnecting timedout replica" in ms.output(), timeout=60, what="the drop")
    finally:
        os.kill(s1.pid, signal.SIGCONT)
    wait_until(lambda: linked(r1) and r1.dbsize() == 3000, timeout=60, what="the replica after it woke up")


def test_wait_under_write_load(start_server):
    _, m = ophidis(start_server)
    _, r = ophidis(start_server)
    replicate(r, m.port)
    load = subprocess.Popen(["redis-benchmark", "-p", str(m.port), "-q", "-t", "set,lpush", "-r", "10000",
                             "-n", "100000000", "-c", "8", "-P", "8"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for i in range(30):
            m.set("mine:%d" % i, i)
            assert m.execute_command("WAIT", 1, 10000) == 1
            assert r.get("mine:%d" % i) == b"%d" % i      # acknowledged means applied
    finally:
        load.terminate()
        load.wait(30)
    same_data(m, r)


def test_useless_rdb_child_is_killed(start_server):
    """The last replica waiting for a disk BGSAVE leaves and no save
    points are set: the child stops (its snapshot is of no use)."""
    _, m = ophidis(start_server, "--repl-diskless-sync", "no", "--rdb-key-save-delay", "100000")
    for i in range(100):
        m.set(i, i)
    _, r = ophidis(start_server)
    r.execute_command("REPLICAOF", "127.0.0.1", str(m.port))
    wait_until(lambda: info(m, "persistence")["rdb_bgsave_in_progress"] == 1
               and info(m).get("slave0", {}).get("state") == "wait_bgsave", what="the child")
    r.execute_command("REPLICAOF", "NO", "ONE")
    wait_until(lambda: info(m, "persistence")["rdb_bgsave_in_progress"] == 0, what="the child killed")


def test_debug_replicate_reaches_replicas_only(start_server):
    ms, m = ophidis(start_server)
    rs, r = ophidis(start_server)
    replicate(r, m.port)
    m.execute_command("DEBUG", "REPLICATE", "SET", "only", "on-replicas")
    m.execute_command("DEBUG", "REPLICATE", "fake-command-1")
    m.set("after", 1)
    assert m.execute_command("WAIT", 1, 5000) == 1
    assert m.get("only") is None and r.get("only") == b"on-replicas"
    wait_until(lambda: "fake-command-1" in rs.output() and "== CRITICAL ==" in rs.output(),
               what="the replica's critical log line")
    assert r.get("after") == b"1"


@pytest.mark.parametrize("middle_kind", ["ophidis", "redis"])
def test_sub_replica_times_out_while_the_top_master_is_away(real, start_server, middle_kind):
    """A replica whose own master is away sends its replicas nothing (no
    newline keep-alive, as Redis since PSYNC2): a sub-replica's link times
    out after its repl-timeout and it hears NOMASTERLINK until the middle is
    linked again; it keeps its data meanwhile.  The same with redis-server
    in the middle."""
    ms, m = ophidis(start_server)
    _, r1 = _server(middle_kind, real, start_server)
    s2, r2 = ophidis(start_server, "--repl-timeout", "2")
    replicate(r1, m.port)
    replicate(r2, r1.port)
    m.set("k", 1)
    wait_until(lambda: r2.get("k") == b"1", what="the chain")
    m.close()
    ms.stop()
    wait_until(lambda: not linked(r1), what="the middle replica's link to drop")
    wait_until(lambda: not linked(r2), timeout=30, what="the sub-replica's timeout")
    wait_until(lambda: "-NOMASTERLINK Can't SYNC while not connected with my master" in s2.output(),
               what="the middle's refusal")
    out = s2.output()
    assert "MASTER timeout: no data nor PING received..." in out
    assert r2.get("k") == b"1"


def test_big_disk_sync_is_sent_in_chunks(start_server):
    """A 30 MB RDB file goes to the replica as it takes it: the replica's
    output buffer never holds the whole payload (it would cross the replica
    class's output limit)."""
    ms, m = ophidis(start_server, "--repl-diskless-sync", "no",
                    "--client-output-buffer-limit", "replica 16mb 16mb 60")
    m.execute_command("DEBUG", "POPULATE", 3000, "key", 10000)
    _, r = ophidis(start_server)
    replicate(r, m.port)
    wait_until(lambda: r.dbsize() == 3000, timeout=60, what="the payload")
    same_data(m, r)
    assert "scheduled to be closed ASAP" not in ms.output()


def test_replica_connection_carries_the_stream_only(start_server):
    ms, m = ophidis(start_server)
    for first, then in (([b"SYNC"], [b"PING"]), ([b"PSYNC", b"replicationid", b"-1"], [b"GET", b"foo"])):
        s = socket.create_connection(("127.0.0.1", m.port), timeout=10)
        try:
            s.sendall(encode(*first))
            wait_until(lambda: info(m)["connected_slaves"] == 1, what="the replica")
            s.sendall(encode(*then))
            wait_until(lambda: info(m)["connected_slaves"] == 0, what="the disconnection")
        finally:
            s.close()
    out = ms.output()
    assert "Replica generated a reply to command 'ping', disconnecting it" in out
    assert "Replica generated a reply to command 'get', disconnecting it" in out
    assert "== CRITICAL == This master is sending an error to its replica: 'Replica can't interact " \
           "with the keyspace' after processing the command 'get'" in out
    assert m.ping()


def test_forced_failover_to_a_replica_that_lags(start_server):
    """failover.tcl's FORCE case: the target never acknowledged the last
    write (stopped), yet it has it in its socket buffer; when it wakes up it
    applies it before the PSYNC FAILOVER arrives, and both others continue
    partially.  The old master, a replica of the stopped target by then,
    sends it nothing but the stream (no keep-alive newline behind the last
    write: that broke the target's link and cost both others a full sync)."""
    _, m = ophidis(start_server)
    s0, r0 = ophidis(start_server)
    _, r1 = ophidis(start_server)
    replicate(r0, m.port)
    replicate(r1, m.port)
    m.set("case", 1)
    same_data(m, r0, r1)
    psyncs, fulls = sync_counts(r0)[1], sync_counts(r0)[0]
    os.kill(s0.pid, signal.SIGSTOP)
    try:
        m.set("case", 2)
        assert m.execute_command("FAILOVER", "TO", "127.0.0.1", r0.port, "TIMEOUT", 100, "FORCE") == b"OK"
        wait_until(lambda: info(m)["master_failover_state"] == "failover-in-progress", what="the forced switch")
    finally:
        os.kill(s0.pid, signal.SIGCONT)
    wait_until(lambda: info(m)["master_failover_state"] == "no-failover", what="the end of the failover")
    replicate(r1, r0.port)
    wait_until(lambda: linked(m), what="the old master's link")
    assert info(r0)["role"] == "master"
    assert sync_counts(r0)[1] - psyncs == 2 and sync_counts(r0)[0] == fulls
    same_data(r0, m, r1)
    assert r0.get("case") == b"2"


def test_bind_source_addr_for_the_master_link(start_server):
    # (a client from 127.0.0.2 is not local for protected mode, as in Redis)
    _, m = ophidis(start_server, "--bind", "127.0.0.1 127.0.0.2", "--protected-mode", "no")
    _, r = ophidis(start_server)
    r.config_set("bind-source-addr", "127.0.0.2")
    replicate(r, m.port)
    wait_until(lambda: info(m).get("slave0", {}).get("ip") == "127.0.0.2", what="the replica's address")


class _ScriptedMaster(FakeServer):
    """A master on a real socket that answers the handshake, gives a full
    sync of ``payload`` once and ``stream`` after it, and records each PSYNC
    it is asked (the replica's continuation point)."""

    def __init__(self, payload: bytes, stream: bytes):
        self.payload = payload
        self.stream = stream
        self.psyncs = []
        super().__init__(backlog=4)

    def handle(self, conn):
        with conn:
            f = conn.makefile("rb")
            try:
                self._session(conn, f)
            except OSError:
                pass

    def _session(self, conn, f):
        while True:
            line = f.readline()
            if not line:
                return
            if not line.startswith(b"*"):
                continue
            argv = [f.readline() and f.readline().rstrip(b"\r\n") for _ in range(int(line[1:]))]
            name = argv[0].upper()
            if name == b"PING":
                conn.sendall(b"+PONG\r\n")
            elif name == b"REPLCONF":
                if argv[1].upper() != b"ACK":
                    conn.sendall(b"+OK\r\n")
            elif name == b"PSYNC":
                self.psyncs.append((argv[1], int(argv[2])))
                if len(self.psyncs) == 1:
                    conn.sendall(b"+FULLRESYNC %s 0\r\n$%d\r\n" % (b"a" * 40, len(self.payload))
                                 + self.payload + self.stream)
                else:
                    conn.sendall(b"+CONTINUE\r\n")


def test_unparsable_stream_keeps_what_ran_in_the_offset(start_server):
    """The master's stream breaks after a command the replica ran: the link
    drops, and the replica's PSYNC continues after that command (it is in
    the offset), so it is not run twice."""
    es, e = ophidis(start_server)
    e.save()
    with open(os.path.join(es.dir, "dump.rdb"), "rb") as fh:
        payload = fh.read()
    incr = encode("INCR", "x")
    fake = _ScriptedMaster(payload, incr + b"!garbage\r\n")
    try:
        _, r = ophidis(start_server)
        r.execute_command("REPLICAOF", "127.0.0.1", str(fake.port))
        wait_until(lambda: len(fake.psyncs) >= 2, timeout=30, what="the replica's second PSYNC")
        assert fake.psyncs[1] == (b"a" * 40, len(incr) + 1)
        assert r.get("x") == b"1"
    finally:
        fake.close()


def test_replica_waiting_for_its_payload_keeps_the_history(start_server):
    """Redis 7.0's shared replication buffer: a replica waiting for its
    payload still references the stream since its fork, so the backlog
    grows past repl-backlog-size and another replica that reconnects
    meanwhile continues partially from it; once the waiting replica is
    dropped (its share counted against client-output-buffer-limit replica)
    the backlog shrinks back."""
    ms, m = ophidis(start_server, "--repl-backlog-size", "16384", "--client-output-buffer-limit",
                    "replica 0 0 0")
    _, r1 = ophidis(start_server)
    _, r2 = ophidis(start_server)
    replicate(r1, m.port)
    for i in range(20):
        m.set("slow:%d" % i, i)
    m.config_set("rdb-key-save-delay", 1000000)      # the payload's child takes 20 s
    r2.execute_command("REPLICAOF", "127.0.0.1", str(m.port))
    wait_until(lambda: r2.execute_command("ROLE")[3] == b"sync", what="r2 waiting for its payload")
    wait_until(lambda: caught_up(m, r1), what="r1")
    psyncs = sync_counts(m)[1]
    # r1 leaves (for r2, which cannot serve it yet: its payload is on its
    # way); meanwhile the stream grows by 200 KB
    r1.execute_command("REPLICAOF", "127.0.0.1", str(r2.port))
    wait_until(lambda: info(m)["connected_slaves"] == 1, what="r1 gone")
    for i in range(20):
        m.set("big:%d" % i, "x" * 10000)
    assert info(m)["repl_backlog_histlen"] > 200000
    r1.execute_command("REPLICAOF", "127.0.0.1", str(m.port))
    wait_until(lambda: linked(r1) and caught_up(m, r1), what="r1 back")
    assert sync_counts(m)[1] == psyncs + 1
    assert r1.get("big:19") == b"x" * 10000
    # now the waiting replica is over a 128 KB limit: dropped, and the
    # backlog gives its blocks back
    m.config_set("client-output-buffer-limit", "replica 128k 0 0")
    m.set("trigger", "y" * 65536)
    wait_until(lambda: info(m)["connected_slaves"] == 1, what="r2 dropped")
    assert "scheduled to be closed ASAP for overcoming of output buffer limits" in ms.output()
    assert info(m)["repl_backlog_histlen"] < 100000
    m.config_set("rdb-key-save-delay", 0)


@pytest.mark.parametrize("behavior,read_only,panics", [
    ("ignore", "yes", False), ("panic", "yes", True), ("panic-on-replicas", "yes", True),
    ("panic", "no", False)])
def test_propagation_error_behavior(start_server, behavior, read_only, panics):
    """A command from the master that fails on the replica: Redis's
    CRITICAL line and the last bytes of the replica's backlog; with
    propagation-error-behavior panic or panic-on-replicas a read-only
    replica panics (Guru Meditation, the process ends), a writable one
    goes on."""
    _, m = ophidis(start_server)
    rs, r = ophidis(start_server, "--propagation-error-behavior", behavior, "--replica-read-only", read_only)
    replicate(r, m.port)
    m.set("before", 1)
    wait_until(lambda: caught_up(m, r), what="the replica")
    m.execute_command("DEBUG", "REPLICATE", "fake-command-1")
    critical = ("== CRITICAL == This replica is sending an error to its master: 'unknown command "
                "'fake-command-1', with args beginning with: ' after processing the command '<unknown>'")
    wait_until(lambda: critical in rs.output(), what="the replica's critical log line")
    wait_until(lambda: "Latest backlog is: '\"" in rs.output(), what="the backlog's last bytes")
    assert "before" in rs.output().split("Latest backlog is: ")[1].splitlines()[0]
    if panics:
        wait_until(lambda: rs.proc.poll() is not None, what="the replica's panic")
        out = rs.output()
        assert ("Guru Meditation: This replica panicked sending an error to its master after processing "
                "the command '<unknown>' #") in out
        assert "=== REDIS BUG REPORT END." in out
    else:
        m.set("after", 1)
        wait_until(lambda: r.get("after") == b"1", what="the stream after the error")
        assert r.info("stats")["unexpected_error_replies"] == 1


def _log_count(proc, text):
    return proc.output().count(text)


def _redis_master_and_ophidis_replica(real, start_server):
    """A redis-server master, an Ophidis replica in sync with it after a
    workload: (master process, its client, replica process, its client)."""
    rp = real()
    m = rp.client()
    rs, r = ophidis(start_server)
    replicate(r, rp.port)
    workload(m, "a")
    same_data(m, r)
    return rp, m, rs, r


def test_redis_server_master_restart_continues_an_ophidis_replica(real, start_server):
    """redis-server master restarted from its RDB file: the Ophidis replica
    reconnects and continues with PSYNC (+CONTINUE, no full sync)."""
    rp, m, rs, r = _redis_master_and_ophidis_replica(real, start_server)
    old = info(m)["master_replid"]
    m.shutdown(save=True)
    rp.proc.wait(20)
    rp2 = real(dir=rp.dir, port=rp.port)
    m = rp2.client()
    assert info(m)["master_replid2"] == old
    wait_until(lambda: linked(r) and sync_counts(m)[1] == 1, timeout=30, what="the link to the restarted master")
    assert sync_counts(m)[0] == 0
    assert "Successful partial resynchronization with master." in rs.output().split("Connection with master lost.")[-1]
    workload(m, "b")
    same_data(m, r)


def test_ophidis_master_restart_continues_a_redis_server_replica(real, start_server):
    """An Ophidis master restarted from its RDB file: Debian's
    redis-server replica continues with PSYNC."""
    ms, m = ophidis(start_server)
    rp = real()
    r = rp.client()
    replicate(r, ms.port)
    workload(m, "a")
    same_data(m, r)
    assert _log_count(rp, "Master accepted a Partial Resynchronization") == 0
    m.shutdown(save=True)
    ms.proc.wait(20)
    ms2, m = ophidis(start_server, "--dir", ms.dir, "--port", str(ms.port))
    wait_until(lambda: linked(r) and sync_counts(m)[1] == 1, timeout=30, what="the link to the restarted master")
    assert sync_counts(m)[0] == 0
    assert _log_count(rp, "MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.") == 1
    workload(m, "b")
    same_data(m, r)


def test_ophidis_replica_restart_continues_with_a_redis_server_master(real, start_server):
    """An Ophidis replica restarted from its own RDB file (replication id
    and offset in its aux fields) continues partially with redis-server,
    including what the master wrote while it was down."""
    rp, m, rs, r = _redis_master_and_ophidis_replica(real, start_server)
    assert sync_counts(m)[:2] == (1, 0)
    r.shutdown(save=True)
    rs.proc.wait(20)
    workload(m, "b")
    rs2, r = ophidis(start_server, "--replicaof", "127.0.0.1", str(rp.port), "--dir", rs.dir)
    wait_until(lambda: linked(r), timeout=30, what="the restarted replica's link")
    assert sync_counts(m)[:2] == (1, 1)
    assert "Successful partial resynchronization with master." in rs2.output()
    same_data(m, r)
