"""One cluster node's own life, against real processes: nodes.conf (the
same node after a restart; a corrupt file and a second process on the same
file stop start-up with Redis's messages), bytes that are not bus messages
on the bus port (the node stays up and in its cluster), pub/sub across
nodes, clients blocked on a slot that moves away."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys

from ophidis.cluster import bus
from ophidis.cluster.slots import key_hash_slot
from support.cluster import Cluster, cluster_args, cluster_ports
from support.servers import ServerProc, compiled_run_only, server_env, wait_exit
from support.wait import wait_until


def _conf_lines(path):
    with open(path) as f:
        return [line.split() for line in f.read().strip().split("\n")]


def test_three_masters_share_the_slots_and_redirect():
    """Three nodes form a cluster (no redis-cli: CLUSTER ADDSLOTSRANGE and
    MEET); a key is served by its slot's owner, the others answer MOVED
    with Redis's text, and redis-py's cluster client reaches every key."""
    with Cluster(["ophidis"] * 3) as cl:
        cl.form(masters=3)
        rc = cl.redis_cluster()
        keys = [b"key:%d" % i for i in range(300)]
        for k in keys:
            rc.set(k, k[::-1])
        assert [rc.get(k) for k in keys] == [k[::-1] for k in keys]
        owners = {cl.owner_of(key_hash_slot(k)) for k in keys}
        assert owners == set(cl.ports)
        k = keys[0]
        slot = key_hash_slot(k)
        owner = cl.index_of(cl.owner_of(slot))
        conn = cl.nodes[(owner + 1) % 3].conn()
        conn.send(b"GET", k)
        assert conn.read() == b"-MOVED %d 127.0.0.1:%d\r\n" % (slot, cl.ports[owner])
        conn.close()
        assert sum(cl.client(i).dbsize() for i in range(3)) == len(keys)
        rc.close()


def test_nodes_conf_survives_a_restart():
    with Cluster(["ophidis", "ophidis"]) as cl:
        cl.form(masters=2)
        a = cl.client(0)
        a.execute_command("CLUSTER", "SETSLOT", 50, "MIGRATING", cl.myid(1))
        myid = cl.myid(0)
        before = sorted(l[:3] + l[8:] for l in cl.nodes_view(0))
        conf = os.path.join(cl.nodes[0].dir, "nodes.conf")
        lines = _conf_lines(conf)
        assert lines[-1][:1] == ["vars"] and lines[-1][1] == "currentEpoch"
        assert any(l[0] == myid and "myself" in l[2] and "[50->-%s]" % cl.myid(1) in l for l in lines)
        cl.restart(0)
        assert cl.myid(0) == myid
        cl.wait_ok(timeout=30)
        assert sorted(l[:3] + l[8:] for l in cl.nodes_view(0)) == before


def _start_fails(args, cwd):
    p = subprocess.Popen([sys.executable, "-m", "ophidis"] + args, cwd=cwd, env=server_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rc = wait_exit(p, 30)
    return rc, p.stdout.read()


def test_corrupt_nodes_conf_and_a_second_process_stop_start_up(tmp_path):
    port, = cluster_ports(1)
    (tmp_path / "nodes.conf").write_text("this is not a nodes.conf line\n")
    rc, out = _start_fails(["--port", str(port)] + cluster_args(2000), str(tmp_path))
    assert rc == 1 and "Unrecoverable error: corrupted cluster config file." in out
    (tmp_path / "nodes.conf").unlink()
    s = ServerProc(["--port", str(port)] + cluster_args(2000), cwd=str(tmp_path))
    try:
        other, = cluster_ports(1)
        rc, out = _start_fails(["--port", str(other)] + cluster_args(2000), str(tmp_path))
        assert rc == 1
        assert ("Sorry, the cluster configuration file nodes.conf is already used by a different Redis "
                "Cluster node. Please make sure that different nodes use different cluster configuration "
                "files.") in out
        assert s.client().ping()
    finally:
        s.stop()


def test_garbage_on_the_bus_port_leaves_the_node_up_and_in_its_cluster():
    with Cluster(["ophidis", "ophidis"]) as cl:
        cl.form(masters=2)
        a = cl.client(0)
        good = bus.encode(bus.Message(type=bus.PING, sender=b"f" * 40, port=1, cport=2,
                                      gossip=[bus.Gossip(nodename=b"e" * 40, ip="1.2.3.4", port=5, cport=6)]))
        rnd = random.Random(1234)
        payloads = [b"", b"RCmb", b"RCmb\xff\xff\xff\xff", os.urandom(3000), good[:100], good[:-1],
                    good[:8] + os.urandom(len(good) - 8)]
        for _ in range(40):
            f = bytearray(good)
            for _ in range(rnd.randint(1, 20)):
                f[rnd.randrange(len(f))] = rnd.randrange(256)
            payloads.append(bytes(f))
        for p in payloads:
            with socket.create_connection(("127.0.0.1", cl.ports[0] + 10000), timeout=5) as s:
                try:
                    s.sendall(p)
                except OSError:
                    pass
        assert a.ping()
        wait_until(lambda: cl.info(0)["cluster_state"] == "ok" and cl.info(0)["cluster_known_nodes"] in ("2", "3"),
                   30, interval=0.2, what="the node still in its cluster")
        assert cl.agree([0, 1])


def test_publish_reaches_every_node_and_spublish_the_shard():
    with Cluster(["ophidis"] * 4) as cl:
        cl.form(masters=2)
        subs = []
        for i in range(4):
            p = cl.client(i).pubsub()
            p.subscribe("news")
            subs.append(p)
        for p in subs:
            wait_until(lambda: p.get_message(timeout=0.1), 10, what="subscribe confirmation")
        assert cl.client(0).publish("news", "hello") == 1
        for p in subs:
            m = wait_until(lambda: p.get_message(timeout=0.1), 10, what="the message on every node")
            assert m["data"] == b"hello"
        # SPUBLISH: the shard serving the channel's slot (master and replica)
        rc = cl.redis_cluster()
        slot = rc.keyslot("chan")
        owner = cl.owner_of(slot)
        oi = cl.index_of(owner)
        rep = next(int(f[1].split("@")[0].split(":")[1]) for f in cl.nodes_view(oi)
                   if "slave" in f[2] and f[3] == cl.myid(oi))
        ri = cl.index_of(rep)
        with cl.nodes[ri].conn() as raw:
            raw.call("READONLY")
            assert raw.call("SSUBSCRIBE", "chan") == b"*3\r\n$10\r\nssubscribe\r\n$4\r\nchan\r\n:1\r\n"
            with cl.nodes[oi].conn() as pub:
                assert pub.call("SPUBLISH", "chan", "x") == b":0\r\n"
            assert raw.read(timeout=10) == b"*3\r\n$8\r\nsmessage\r\n$4\r\nchan\r\n$1\r\nx\r\n"
        other = next(p for p in cl.masters() if p != owner)
        with cl.nodes[cl.index_of(other)].conn() as raw:
            assert raw.call("SPUBLISH", "chan", "x") == b"-MOVED %d 127.0.0.1:%d\r\n" % (slot, owner)


def _all_slots_on_node_0(cl):
    """A two-node cluster, node 0 serving every slot: clients of both."""
    a, b = cl.client(0), cl.client(1)
    a.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
    a.execute_command("CLUSTER", "MEET", "127.0.0.1", cl.ports[1])
    wait_until(lambda: cl.info(1)["cluster_known_nodes"] == "2", 30, interval=0.2, what="meet")
    cl.wait_ok(timeout=30)
    return a, b


def test_a_client_blocked_on_a_slot_that_moves_away_is_redirected():
    with Cluster(["ophidis", "ophidis"]) as cl:
        a, b = _all_slots_on_node_0(cl)
        slot = 12182     # "foo"
        with cl.nodes[0].conn() as raw:
            raw.send("BLPOP", "foo", "0")
            wait_until(lambda: a.info("clients")["blocked_clients"] == 1, 10, what="blocked")
            id0, id1 = cl.myid(0), cl.myid(1)
            b.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", id0)
            a.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", id1)
            a.execute_command("CLUSTER", "SETSLOT", slot, "NODE", id1)
            b.execute_command("CLUSTER", "SETSLOT", slot, "NODE", id1)
            assert raw.read(timeout=10) == b"-MOVED %d 127.0.0.1:%d\r\n" % (slot, cl.ports[1])


def test_a_blocked_command_run_again_is_routed_again():
    """Redis 7.2 runs a blocked command again through processCommand: a
    multi-key XREAD woken in a slot being migrated, one of its keys gone,
    gets -TRYAGAIN."""
    with Cluster(["ophidis", "ophidis"]) as cl:
        a, b = _all_slots_on_node_0(cl)
        slot = a.execute_command("CLUSTER", "KEYSLOT", "{t}")
        a.execute_command("XGROUP", "CREATE", "s1{t}", "g", "$", "MKSTREAM")
        with cl.nodes[0].conn() as raw:
            raw.send("XREAD", "BLOCK", "0", "STREAMS", "s1{t}", "s2{t}", "$", "$")
            wait_until(lambda: a.info("clients")["blocked_clients"] == 1, 10, what="blocked")
            b.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", cl.myid(0))
            a.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", cl.myid(1))
            a.execute_command("XADD", "s1{t}", "1", "f", "v")
            assert raw.read(timeout=10) == b"-TRYAGAIN Multiple keys request during rehashing of slot\r\n"


def test_a_blocked_command_run_again_keeps_its_asking():
    """A blocking command sent after ASKING to the importing node is run
    again with it (Redis clears the flag when the command completes): the
    push served there wakes it, no -MOVED."""
    with Cluster(["ophidis", "ophidis"]) as cl:
        a, b = _all_slots_on_node_0(cl)
        slot = 12182     # "foo"
        b.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", cl.myid(0))
        a.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", cl.myid(1))
        with cl.nodes[1].conn() as raw, cl.nodes[1].conn() as pusher:
            assert raw.call("ASKING") == b"+OK\r\n"
            raw.send("BLPOP", "foo", "0")
            wait_until(lambda: b.info("clients")["blocked_clients"] == 1, 10, what="blocked")
            assert pusher.call("ASKING") == b"+OK\r\n"
            assert pusher.call("RPUSH", "foo", "x") == b":1\r\n"
            assert raw.read(timeout=10) == b"*2\r\n$3\r\nfoo\r\n$1\r\nx\r\n"
            # the flag went with the command
            assert raw.call("GET", "foo").startswith(b"-MOVED %d " % slot)


def _replicas_of(cl, i, master_id):
    """Ids of the replicas of master_id, as node i sees them (not failed)."""
    return sorted(f[0] for f in cl.nodes_view(i) if "slave" in f[2] and f[3] == master_id and "fail" not in f[2])


@compiled_run_only
def test_replica_migrates_to_an_orphaned_master():
    """Replica migration (cluster-migration-barrier 1): master 0 has two
    replicas; when master 1's only replica fails, one of master 0's moves
    to master 1 after the migration delay."""
    with Cluster(["ophidis"] * 6) as cl:
        cl.form(masters=3)          # 3, 4, 5 replicate 0, 1, 2
        m0, m1 = cl.myid(0), cl.myid(1)
        cl.client(5).execute_command("CLUSTER", "REPLICATE", m0)
        wait_until(lambda: all(_replicas_of(cl, i, m0) == sorted([cl.myid(3), cl.myid(5)]) for i in range(6)), 30,
                   interval=0.2, what="master 0 with two replicas")
        os.kill(cl.nodes[4].pid, signal.SIGKILL)
        alive = [0, 1, 2, 3, 5]
        wait_until(lambda: len(_replicas_of(cl, 2, m1)) == 1 and len(_replicas_of(cl, 2, m0)) == 1, 60,
                   interval=0.3, what="a replica migrated to the orphaned master")
        moved = _replicas_of(cl, 2, m1)[0]
        mi = next(i for i in (3, 5) if cl.myid(i) == moved)
        wait_until(lambda: cl.client(mi).execute_command("ROLE")[2] == cl.ports[1], 30, interval=0.2,
                   what="the migrated replica replicating master 1")
        cl.wait_ok(alive, timeout=30)
