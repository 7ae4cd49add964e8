"""Redis 8.4's atomic slot migration (CLUSTER MIGRATION IMPORT / STATUS /
CANCEL) between Ophidis nodes of a real 3-master cluster: the keys of the
slot range move with their TTLs, writes made while the slots move are kept
(the client only ever sees its replies or MOVED, never ASK or TRYAGAIN),
every node agrees on the new owner, the source keeps no key of the range;
cancelling; the errors of Redis's cluster_asm.c for bad requests.  There is
no redis-server 8.x here: the replies are Redis's documented ones."""

from __future__ import annotations

import re
import threading
import time

import pytest
import redis
from redis.cluster import RedisCluster
from support.cluster import (Cluster, cluster_args, cluster_ports, keys_in, settled, settled_masters,
                             status, wait_state)
from support.resp import RespConn, encode
from support.servers import ServerProc, stop_all
from support.tls import Certs
from support.wait import wait_until

from ophidis.cluster.asm import FORK_KEYS
from ophidis.cluster.slots import key_hash_slot

HEX40 = re.compile(r"^[0-9a-f]{40}$")
@pytest.fixture(scope="module")
def cluster():
    yield from settled_masters(3)


def test_errors_for_bad_requests(cluster):
    c = cluster.client(1)

    def err(*args):
        with pytest.raises(redis.ResponseError) as e:
            c.execute_command("CLUSTER", "MIGRATION", *args)
        return str(e.value)

    arity = "wrong number of arguments for 'cluster|migration' command"
    assert err("IMPORT") == arity
    assert err("IMPORT", 0) == arity
    assert err("IMPORT", 0, 1, 2) == arity
    assert err("STATUS") == arity
    assert err("STATUS", "ALL", "x") == arity
    assert err("STATUS", "ID") == arity
    assert err("CANCEL", "ID") == arity
    assert err("CANCEL", "ALL", "x") == arity
    assert err("STATUS", "x") == "unknown argument"
    assert err("CANCEL", "x") == "unknown argument"
    assert err("FOO", "x") == "unknown argument"
    assert err("IMPORT", 0, 16384) == "Invalid or out of range slot"
    assert err("IMPORT", -1, 5) == "Invalid or out of range slot"
    assert err("IMPORT", "a", 5) == "Invalid or out of range slot"
    assert err("IMPORT", 10, 5) == "start slot number 10 is greater than end slot number 5"
    assert err("IMPORT", 0, 10, 5, 15) == "Slot 5 specified multiple times"
    assert err("IMPORT", 5461, 5470) == "this node is already the owner of the slot range"
    assert err("IMPORT", 5000, 5470) == "slots belong to different source nodes"
    assert err("IMPORT", 0, 10, 11000, 11010) == "slots belong to different source nodes"
    assert c.execute_command("CLUSTER", "MIGRATION", "STATUS", "ALL") == []
    assert c.execute_command("CLUSTER", "MIGRATION", "STATUS", "ID", "nosuchtask") == []
    assert c.execute_command("CLUSTER", "MIGRATION", "CANCEL", "ALL") == 0
    assert c.execute_command("CLUSTER", "MIGRATION", "CANCEL", "ID", "nosuchtask") == 0


def test_errors_outside_a_formed_cluster(start_server):
    plain = start_server()
    with pytest.raises(redis.ResponseError, match="^This instance has cluster support disabled$"):
        plain.client().execute_command("CLUSTER", "MIGRATION", "STATUS", "ALL")
    (port,) = cluster_ports(1)
    lone = ServerProc(["--port", str(port)] + cluster_args(2000))
    try:
        with pytest.raises(redis.ResponseError, match="^slot has no owner: 0$"):
            lone.client().execute_command("CLUSTER", "MIGRATION", "IMPORT", 0, 10)
    finally:
        lone.stop()


def test_import_moves_the_slots_and_their_keys(cluster):
    src, dst = cluster.client(0), cluster.client(1)
    src_id, dst_id = cluster.myid(0), cluster.myid(1)
    keys = keys_in(0, 99, 200)
    for i, k in enumerate(keys[:150]):
        src.set(k, "v%d" % i)
    src.expire(keys[0], 1000)
    src.hset(keys[150], mapping={"a": "1", "b": "2"})
    src.rpush(keys[151], "x", "y", "z")
    src.zadd(keys[152], {"m": 1.5})
    src.sadd(keys[153], "s1", "s2")
    src.xadd(keys[154], {"f": "v"}, id="1-1")
    other = keys_in(100, 200, 5, prefix="o")        # not moving
    for k in other:
        src.set(k, "stay")
    before = src.dbsize()

    # writes to the moving slots while they move: each is acknowledged by
    # the source or redirected (MOVED) to the destination, never ASK/TRYAGAIN
    written, problems, moved, stop = {}, [], [], threading.Event()
    counter, incrs = keys_in(0, 99, 1, prefix="counter")[0], [0]
    # (a bounded set of keys, rewritten: however fast the writer, the range
    # stays under FORK_KEYS and the snapshot is the event loop's; the next
    # tests take the forked child's path)
    wkeys = keys_in(0, 99, 300, prefix="w")
    assert len(keys) + len(wkeys) + 1 < FORK_KEYS
    forks = src.info("stats")["total_forks"]

    def writer():
        a = RespConn(cluster.ports[0])
        b = RespConn(cluster.ports[1])
        n = 0
        deadline = time.monotonic() + 120
        try:
            # after the handoff, go on until a write has been redirected
            # (on 2 busy cores the thread may not have written since the pause)
            while (not stop.is_set() or n < 50 or not moved) and time.monotonic() < deadline:
                k = wkeys[n % len(wkeys)]
                r = a.call("SET", k, n)
                if r.startswith(b"-"):
                    if r != b"-MOVED %d 127.0.0.1:%d\r\n" % (key_hash_slot(k.encode()), cluster.ports[1]):
                        problems.append(r)
                        return
                    moved.append(k)
                    r = b.call("SET", k, n)
                if r != b"+OK\r\n":
                    problems.append(r)
                    return
                written[k] = n
                n += 1
                # a counter: each acknowledged INCR counts once on the destination
                r = a.call("INCR", counter)
                if r.startswith(b"-MOVED"):
                    r = b.call("INCR", counter)
                if not r.startswith(b":"):
                    problems.append(r)
                    return
                incrs[0] += 1
        finally:
            a.close()
            b.close()

    # the source pauses only once its unsent stream is within this many bytes
    src.config_set("cluster-slot-migration-handoff-max-lag-bytes", 0)
    t = threading.Thread(target=writer)
    t.start()
    try:
        wait_until(lambda: incrs[0] >= 20 or problems or not t.is_alive(), 30, interval=0.01,
                   what="the writer under way")
        task_id = dst.execute_command("CLUSTER", "MIGRATION", "IMPORT", 0, 99).decode()
        assert HEX40.match(task_id)
        row = wait_state(cluster, 1, task_id, ("completed", "failed"))
    finally:
        stop.set()
        t.join(60)
    assert not problems
    assert row[b"state"] == b"completed", row
    assert row[b"slots"] == b"0-99"
    assert row[b"source"].decode() == src_id and row[b"dest"].decode() == dst_id
    assert row[b"operation"] == b"import" and row[b"last_error"] == b"" and row[b"retries"] == 0
    assert row[b"write_pause_ms"] == 0
    assert src.info("stats")["total_forks"] == forks
    assert 0 < row[b"create_time"] <= row[b"start_time"] <= row[b"end_time"]

    # every node agrees: 0-99 is the destination's
    wait_until(lambda: all(cluster.owner_of(s, i) == cluster.ports[1] for i in range(3) for s in (0, 50, 99)),
               30, interval=0.1, what="every node sees the new owner")
    assert all(cluster.owner_of(100, i) == cluster.ports[0] for i in range(3))
    shards = cluster.client(1, protocol=3).execute_command("CLUSTER", "SHARDS")
    mine = [s for s in shards if any(n[b"id"].decode() == dst_id for n in s[b"nodes"])][0]
    assert 0 in mine[b"slots"] and 99 in mine[b"slots"]

    # the source's side of the task, and its keys gone
    srow = wait_state(cluster, 0, task_id, ("completed",))
    assert srow[b"operation"] == b"migrate" and srow[b"slots"] == b"0-99"
    assert srow[b"write_pause_ms"] >= 0
    wait_until(lambda: all(src.execute_command("CLUSTER", "COUNTKEYSINSLOT", s) == 0 for s in range(100)),
               30, interval=0.1, what="the source's keys of 0-99 deleted")
    assert src.dbsize() == before - 155     # (the writer's keys went too)
    assert all(src.get(k) == b"stay" for k in other)

    # the keys on the destination, with their types and TTLs
    for i, k in enumerate(keys[:150]):
        assert dst.get(k) == b"v%d" % i
    assert 900 < dst.ttl(keys[0]) <= 1000
    assert dst.ttl(keys[1]) == -1
    assert dst.hgetall(keys[150]) == {b"a": b"1", b"b": b"2"}
    assert dst.lrange(keys[151], 0, -1) == [b"x", b"y", b"z"]
    assert dst.zscore(keys[152], "m") == 1.5
    assert dst.smembers(keys[153]) == {b"s1", b"s2"}
    assert dst.xrange(keys[154]) == [(b"1-1", {b"f": b"v"})]
    # no acknowledged write lost
    assert len(written) >= 50 and moved
    for k, v in written.items():
        assert dst.get(k) == str(v).encode(), k
    assert int(dst.get(counter)) == incrs[0] > 0
    assert cluster.info(1)["cluster_slot_migration_active_tasks"] == "0"
    assert cluster.info(0)["cluster_slot_migration_stats_active_trim_started"] == "0"


def test_cancel_stops_an_import(cluster):
    src, dst = cluster.client(0), cluster.client(2)
    keys = keys_in(200, 209, 20, prefix="c")
    for k in keys:
        src.set(k, "v")
    # the source is busy for a while: the import waits for its reply
    busy = RespConn(cluster.ports[0])
    busy.send("DEBUG", "SLEEP", "1.5")
    try:
        time.sleep(0.1)
        task_id = dst.execute_command("CLUSTER", "MIGRATION", "IMPORT", 200, 209).decode()
        with pytest.raises(redis.ResponseError, match="^overlapping import exists for slot range: 205-300$"):
            dst.execute_command("CLUSTER", "MIGRATION", "IMPORT", 205, 300)
        with pytest.raises(redis.ResponseError, match="^another ASM task is already in progress$"):
            dst.execute_command("CLUSTER", "MIGRATION", "IMPORT", 300, 310)
        assert cluster.info(2)["cluster_slot_migration_active_tasks"] == "1"
        assert dst.execute_command("CLUSTER", "MIGRATION", "CANCEL", "ID", task_id) == 1
        assert dst.execute_command("CLUSTER", "MIGRATION", "CANCEL", "ALL") == 0
    finally:
        busy.read_reply()
        busy.close()
    row = status(cluster, 2, "ID", task_id)[0]
    assert row[b"state"] == b"canceled"
    assert row[b"last_error"].startswith(b"Cancelled due to user request")
    assert row[b"end_time"] >= row[b"start_time"] > 0
    # nothing moved; the source keeps its keys, the destination has none
    time.sleep(0.5)
    assert all(cluster.owner_of(s, i) == cluster.ports[0] for i in range(3) for s in (200, 209))
    assert all(src.get(k) == b"v" for k in keys)
    assert all(dst.execute_command("CLUSTER", "COUNTKEYSINSLOT", s) == 0 for s in range(200, 210))
    # the source's side ended with the lost link
    wait_until(lambda: all(r[b"state"] != b"send-stream" for r in status(cluster, 0)), 20, interval=0.1,
               what="the source's task ended")
    # a new import of the same slots works
    task2 = dst.execute_command("CLUSTER", "MIGRATION", "IMPORT", 200, 209).decode()
    assert wait_state(cluster, 2, task2, ("completed", "failed"))[b"state"] == b"completed"
    wait_until(lambda: all(cluster.owner_of(200, i) == cluster.ports[2] for i in range(3)), 30, interval=0.1,
               what="every node sees the new owner")
    assert all(dst.get(k) == b"v" for k in keys)
    rows = status(cluster, 2)
    assert [r[b"id"].decode() for r in rows[:2]] == [task2, task_id]


def test_a_failed_import_is_retried(cluster):
    """The source refuses (one of its slots is MIGRATING): the import fails,
    says why, and is retried every second until the source accepts."""
    src, dst = cluster.client(0), cluster.client(2)
    keys = keys_in(300, 309, 10, prefix="r")
    for k in keys:
        src.set(k, "r")
    src.execute_command("CLUSTER", "SETSLOT", 305, "MIGRATING", cluster.myid(1))
    try:
        task_id = dst.execute_command("CLUSTER", "MIGRATION", "IMPORT", 300, 309).decode()
        row = wait_until(lambda: [r for r in status(cluster, 2, "ID", task_id) if r[b"retries"] >= 1], 20,
                         interval=0.05, what="a retry")[0]
        assert row[b"state"] != b"completed"
        assert b"STABLE" in row[b"last_error"], row
    finally:
        src.execute_command("CLUSTER", "SETSLOT", 305, "STABLE")
    row = wait_state(cluster, 2, task_id, ("completed",))
    assert row[b"retries"] >= 1
    wait_until(lambda: all(cluster.owner_of(300, i) == cluster.ports[2] for i in range(3)), 30, interval=0.1,
               what="every node sees the new owner")
    assert all(dst.get(k) == b"r" for k in keys)


def test_a_large_range_is_snapshotted_by_a_child(cluster):
    """At FORK_KEYS keys or more the source forks for the snapshot; writes
    made meanwhile follow it, none lost."""
    src, dst = cluster.client(0), cluster.client(1)
    keys = keys_in(400, 499, 3000, prefix="big")
    p = src.pipeline(transaction=False)
    for i, k in enumerate(keys):
        p.set(k, i)
    p.execute()
    forks = src.info("stats")["total_forks"]
    stop, acked = threading.Event(), []

    def writer():
        conn = RespConn(cluster.ports[0])
        other = RespConn(cluster.ports[1])
        try:
            n = 0
            while not stop.is_set():
                k = keys[n % len(keys)]
                r = conn.call("SET", k, "w%d" % n)
                if r.startswith(b"-MOVED"):
                    r = other.call("SET", k, "w%d" % n)
                if r == b"+OK\r\n":
                    acked.append((k, n))
                n += 1
        finally:
            conn.close()
            other.close()

    th = threading.Thread(target=writer)
    th.start()
    try:
        task_id = dst.execute_command("CLUSTER", "MIGRATION", "IMPORT", 400, 499).decode()
        row = wait_state(cluster, 1, task_id, ("completed", "failed"), timeout=60)
    finally:
        stop.set()
        th.join(60)
    assert row[b"state"] == b"completed", row
    assert src.info("stats")["total_forks"] == forks + 1
    last = {}
    for k, n in acked:
        last[k] = n
    assert acked
    for i, k in enumerate(keys):
        want = b"w%d" % last[k] if k in last else b"%d" % i
        assert dst.get(k) == want, k
    wait_until(lambda: sum(src.execute_command("CLUSTER", "COUNTKEYSINSLOT", s) for s in range(400, 500)) == 0,
               30, interval=0.1, what="the source's keys gone")


def test_a_pause_asked_while_the_snapshot_child_runs_waits_for_it():
    """The destination asks to pause on reading the snapshot's marker,
    which the source relays from its forked child before it has seen the
    pipe end and sent the writes made meanwhile: the pause waits for them
    (STREAM-EOF after every RESTORE, the marker and those writes: none
    lost), and a pause that no DONE ends lets the held writes run after
    cluster-slot-migration-write-pause-timeout.  A raw connection plays the
    destination and sends PAUSE with START, so that the source sees it
    before any of the snapshot (what a loaded machine once made happen);
    rdb-key-save-delay keeps the child busy while a client writes."""
    (port,) = cluster_ports(1)
    node = ServerProc(["--port", str(port)] + cluster_args(2000))
    conns = []
    try:
        c = node.client()
        c.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
        wait_until(lambda: b"cluster_state:ok" in c.execute_command("CLUSTER", "INFO"), 30, interval=0.05,
                   what="cluster_state:ok")
        keys = keys_in(0, 99, FORK_KEYS + 100, prefix="p")
        p = c.pipeline(transaction=False)
        for k in keys:
            p.set(k, k)
        p.execute()
        c.config_set("rdb-key-save-delay", 3000)     # the child takes over 3 s
        c.config_set("cluster-slot-migration-write-pause-timeout", 1000)
        forks = c.info("stats")["total_forks"]
        task_id = "a" * 40
        dest = RespConn(port)
        conns.append(dest)
        dest.send_raw(encode("CLUSTER", "SYNCSLOTS", "START", task_id, "b" * 40, 0, 99)
                      + encode("CLUSTER", "SYNCSLOTS", "PAUSE", task_id))
        assert dest.read() == b"+OK\r\n"
        writer = RespConn(port)
        conns.append(writer)
        during = keys_in(0, 99, 1, prefix="during")[0]
        assert writer.call("SET", during, "x") == b"+OK\r\n"     # while the child runs: streamed
        assert c.info("stats")["total_forks"] == forks + 1
        stream = [dest.read_value()]
        while stream[-1][:3] != [b"CLUSTER", b"SYNCSLOTS", b"STREAM-EOF"]:
            stream.append(dest.read_value())
        n = len(keys)
        assert len(stream) == n + 3, stream[n:]
        assert all(r[0] == b"RESTORE" for r in stream[:n])
        assert {r[1] for r in stream[:n]} == {k.encode() for k in keys}
        assert stream[n] == [b"CLUSTER", b"SYNCSLOTS", b"SNAPSHOT-EOF"]
        assert stream[n + 1] == [b"SET", during.encode(), b"x"]
        assert stream[n + 2][3].isdigit()

        # writes to the slots now wait; without DONE (nor the bus) the
        # pause ends at its timeout: the task fails, the writes run here
        writer.send("SET", during, "y")
        assert writer.read(timeout=10) == b"+OK\r\n"
        row = c.execute_command("CLUSTER", "MIGRATION", "STATUS", "ID", task_id)[0]
        row = dict(zip(row[0::2], row[1::2]))
        assert row[b"operation"] == b"migrate" and row[b"state"] == b"failed", row
        assert row[b"last_error"].startswith(b"write pause timeout (state: handoff"), row
        assert dest.closed_within(10)
        assert c.get(during) == b"y"
        assert sum(c.execute_command("CLUSTER", "COUNTKEYSINSLOT", s) for s in range(100)) == n + 1
    finally:
        for conn in conns:
            conn.close()
        node.stop()


def slot_counts(cl, i=0) -> dict:
    """Slots per master port, as node i sees them."""
    out = {}
    for s in cl.client(i).execute_command("CLUSTER", "SLOTS"):
        out[s[2][1]] = out.get(s[2][1], 0) + s[1] - s[0] + 1
    return out


def test_cli_rebalance_and_reshard_use_cluster_migration(cluster):
    """ophidis-cli --cluster rebalance / reshard with
    --cluster-use-atomic-slot-migration: one CLUSTER MIGRATION IMPORT per
    source, followed to its end; the keys follow their slots."""
    rc = cluster.redis_cluster()
    keys = keys_in(0, 16383, 300, prefix="cli")
    for k in keys:
        rc.set(k, k)
    before = slot_counts(cluster)
    assert before[cluster.ports[0]] < 5400        # the earlier tests took slots from node 0
    out = cluster.cli("--cluster", "rebalance", "127.0.0.1:%d" % cluster.ports[0],
                      "--cluster-use-atomic-slot-migration", tool="ophidis-cli")
    assert ">>> Rebalancing across 3 nodes" in out
    wait_until(lambda: all(slot_counts(cluster, i) == slot_counts(cluster, 0) for i in range(3)), 30,
               interval=0.1, what="every node agrees")
    after = slot_counts(cluster)
    assert all(abs(n - 5461) <= 2 for n in after.values()), after
    tasks = status(cluster, 0)
    assert tasks[0][b"operation"] == b"import" and tasks[0][b"state"] == b"completed"

    ids = {cluster.ports[i]: cluster.myid(i) for i in range(3)}
    out = cluster.cli("--cluster", "reshard", "127.0.0.1:%d" % cluster.ports[1],
                      "--cluster-from", ids[cluster.ports[0]], "--cluster-to", ids[cluster.ports[2]],
                      "--cluster-slots", "300", "--cluster-yes", "--cluster-use-atomic-slot-migration",
                      tool="ophidis-cli")
    moving = re.findall(r"Moving slots ([0-9 -]+) from 127\.0\.0\.1:(\d+) to 127\.0\.0\.1:(\d+): OK", out)
    assert len(moving) == 1, out
    assert (int(moving[0][1]), int(moving[0][2])) == (cluster.ports[0], cluster.ports[2])
    wait_until(lambda: all(slot_counts(cluster, i) == slot_counts(cluster, 0) for i in range(3)), 30,
               interval=0.1, what="every node agrees")
    final = slot_counts(cluster)
    assert final[cluster.ports[0]] == after[cluster.ports[0]] - 300
    assert final[cluster.ports[2]] == after[cluster.ports[2]] + 300
    for a, b in (r.split("-") for r in moving[0][0].split()):
        assert all(cluster.owner_of(s) == cluster.ports[2] for s in (int(a), int(b)))
    # every key where its slot now is, and nowhere else
    for k in keys:
        assert rc.get(k) == k.encode()
    total = sum(cluster.client(i).dbsize() for i in range(3))
    assert total == sum(1 for _ in rc.scan_iter(count=1000, target_nodes=RedisCluster.PRIMARIES))


def test_replicas_follow_the_migration():
    """The destination's replica receives the imported keys (the import
    propagates as the destination's own writes); the source's replica loses
    them with the source's DELs."""
    cl = Cluster(["ophidis"] * 5)       # masters 0, 1, 2; 3 replicates 0, 4 replicates 1
    try:
        cl.form(3)
        settled(cl)
        src, dst = cl.client(0), cl.client(1)
        keys = keys_in(0, 49, 40)
        for k in keys:
            src.set(k, k, px=600000)
        src_replica, dst_replica = cl.client(3), cl.client(4)
        with pytest.raises(redis.ResponseError, match=r"^slot migration not allowed on replica\.$"):
            dst_replica.execute_command("CLUSTER", "MIGRATION", "IMPORT", 0, 49)
        wait_until(lambda: sum(src_replica.execute_command("CLUSTER", "COUNTKEYSINSLOT", s)
                               for s in range(50)) == 40, 30, interval=0.1, what="the source's replica")
        task_id = dst.execute_command("CLUSTER", "MIGRATION", "IMPORT", 0, 49).decode()
        assert wait_state(cl, 1, task_id, ("completed", "failed"))[b"state"] == b"completed"
        wait_until(lambda: sum(dst_replica.execute_command("CLUSTER", "COUNTKEYSINSLOT", s)
                               for s in range(50)) == 40, 30, interval=0.1, what="the destination's replica")
        wait_until(lambda: sum(src_replica.execute_command("CLUSTER", "COUNTKEYSINSLOT", s)
                               for s in range(50)) == 0, 30, interval=0.1, what="the source's replica emptied")
        dst_replica.execute_command("READONLY")
        assert all(dst_replica.get(k) == k.encode() for k in keys)
        assert all(0 < dst_replica.pttl(k) <= 600000 for k in keys)
        # the replicas see the new owner too
        wait_until(lambda: all(cl.owner_of(25, i) == cl.ports[1] for i in range(5)), 30, interval=0.1,
                   what="every node sees the new owner")
    finally:
        cl.stop()


class AuthCluster(Cluster):
    """Nodes with requirepass; masterauth is what the import sends."""

    def client(self, i, **kw):
        kw.setdefault("password", "sekret")
        return super().client(i, **kw)


def test_import_authenticates_with_masterauth():
    cl = AuthCluster(["ophidis"] * 2, extra=["--requirepass", "sekret", "--masterauth", "sekret"])
    try:
        cl.form(2)
        settled(cl)
        src, dst = cl.client(0), cl.client(1)
        keys = keys_in(10, 19, 10)
        for k in keys:
            src.set(k, "auth")
        task_id = dst.execute_command("CLUSTER", "MIGRATION", "IMPORT", 10, 19).decode()
        assert wait_state(cl, 1, task_id, ("completed",))[b"retries"] == 0
        assert all(dst.get(k) == b"auth" for k in keys)
        # without the password the source refuses, and the task says so
        dst.config_set("masterauth", "wrong")
        task2 = dst.execute_command("CLUSTER", "MIGRATION", "IMPORT", 20, 29).decode()
        row = wait_until(lambda: [r for r in status(cl, 1, "ID", task2) if r[b"last_error"]], 20,
                         interval=0.05, what="the failed attempt")[0]
        assert row[b"last_error"].startswith(b"AUTH to the source failed: WRONGPASS"), row
        assert dst.execute_command("CLUSTER", "MIGRATION", "CANCEL", "ALL") == 1
        assert status(cl, 1, "ID", task2)[0][b"state"] == b"canceled"
        assert cl.owner_of(25) == cl.ports[0]
    finally:
        cl.stop()


def test_import_over_tls():
    """tls-cluster and tls-replication: the import connects to the source's
    TLS port with the replication client's certificate."""
    with Certs() as certs:
        p0, t0, p1, t1 = cluster_ports(4)
        procs = []
        try:
            for port, tls in ((p0, t0), (p1, t1)):
                procs.append(ServerProc(["--port", str(port), "--tls-port", str(tls), "--tls-cluster", "yes",
                                         "--tls-replication", "yes"] + certs.server_args() + cluster_args(2000)))
            a, b = procs[0].client(), procs[1].client()
            a.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 8191)
            b.execute_command("CLUSTER", "ADDSLOTSRANGE", 8192, 16383)
            a.execute_command("CLUSTER", "MEET", "127.0.0.1", t1)
            wait_until(lambda: all(b"cluster_state:ok" in c.execute_command("CLUSTER", "INFO") for c in (a, b)),
                       30, interval=0.1, what="the TLS cluster ok")
            keys = keys_in(0, 9, 10)
            for k in keys:
                a.set(k, "tls")
            task_id = b.execute_command("CLUSTER", "MIGRATION", "IMPORT", 0, 9).decode()

            def row():
                r = b.execute_command("CLUSTER", "MIGRATION", "STATUS", "ID", task_id)[0]
                return r[11] == b"completed" and r
            wait_until(row, 30, interval=0.05, what="the import over TLS")
            assert all(b.get(k) == b"tls" for k in keys)
            wait_until(lambda: all(a.execute_command("CLUSTER", "COUNTKEYSINSLOT", s) == 0 for s in range(10)),
                       30, interval=0.1, what="the source's keys gone")
        finally:
            stop_all(procs)
