"""The cluster tools against clusters of Debian's redis-server 7.0:
``ophidis-cli --cluster`` (redis-cli's cluster manager), ``ophidis-cli -c``,
``ophidis-benchmark --cluster`` and ``ophidis-cluster``.

Two clusters of eight nodes live for the whole module: "ours", managed with
ophidis-cli, and "ref", managed with redis-cli.  The tests run in file order
and apply the same operations to both, so that their topologies stay alike
and the outputs can be compared (node ids, ports, and the order of the
nodes in CLUSTER NODES normalised away).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

import pytest
import redis
from redis.cluster import RedisCluster, key_slot

from support.servers import REDIS_SERVER, compiled_run_only, server_env
from support.wait import wait_port, wait_until

REDIS_CLI = shutil.which("redis-cli")
pytestmark = [compiled_run_only, pytest.mark.skipif(REDIS_SERVER is None or REDIS_CLI is None,
                                reason="redis-server and redis-cli are needed")]

NODE_TIMEOUT = 3000
NODES = 8          # 6 for the create, 2 spare for add-node
ID = re.compile(r"\b[0-9a-f]{40}\b")
SHORT_ID = re.compile(r"\b[0-9a-f]{8}\.\.\.")
PORT = re.compile(r"\b\d{4,5}\b")


def port_block(n):
    """A base port such that base..base+n-1 and their bus ports (+10000)
    are free."""
    for _ in range(200):
        # The bus ports stay below the ephemeral range (32768 and up); the
        # ports above the slot numbers (0-16383), which normalise() would
        # otherwise take for ports ("Redirected to slot [12582]").
        base = random.randrange(16384, 22000)
        ok = True
        for p in list(range(base, base + n)) + list(range(base + 10000, base + 10000 + n)):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no free block of ports")


class Cluster:
    """NODES redis-server processes in cluster mode (not yet joined)."""

    def __init__(self, tool):
        self.tool = tool
        self.base = port_block(NODES)
        self.ports = [self.base + i for i in range(NODES)]
        self.dir = tempfile.mkdtemp(prefix="cluster-tools-")
        self.procs = []
        self.members = list(range(6))    # the nodes in the cluster
        for p in self.ports:
            d = os.path.join(self.dir, str(p))
            os.mkdir(d)
            self.procs.append(subprocess.Popen(
                [REDIS_SERVER, "--port", str(p), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                 "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", str(NODE_TIMEOUT),
                 "--dir", d, "--save", "", "--appendonly", "no", "--logfile", "redis.log", "--enable-debug-command", "yes"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for p in self.ports:
            wait_port(p, timeout=30)

    def addr(self, i):
        return "127.0.0.1:%d" % self.ports[i]

    def client(self, i) -> redis.Redis:
        return redis.Redis(port=self.ports[i], socket_timeout=20)

    def node_id(self, i):
        return self.client(i).execute_command("CLUSTER", "MYID").decode()

    def run(self, *args, input=None, timeout=120):
        """The cluster manager of this cluster's tool: (rc, stdout)."""
        if self.tool == "ours":
            cmd = [sys.executable, "-m", "ophidis.tools.cli"]
        else:
            cmd = [REDIS_CLI]
        env = server_env(TERM="dumb")
        env.pop("REDISCLI_CLUSTER_YES", None)
        r = subprocess.run(cmd + list(args), input=input, capture_output=True, env=env, timeout=timeout)
        return r.returncode, (r.stdout + r.stderr).decode(errors="replace")

    def normalise(self, text, ids=True):
        text = ID.sub("ID", text) if ids else text
        text = SHORT_ID.sub("ID...", text)
        return PORT.sub(lambda m: "P%d" % (int(m.group()) - self.base)
                        if self.base <= int(m.group()) < self.base + NODES else m.group(), text)

    def slots_of(self, i):
        me = [line for line in self.client(i).execute_command("CLUSTER", "NODES").decode().split("\n")
              if "myself" in line][0].split(" ")
        n = 0
        for d in me[8:]:
            if d and not d.startswith("["):
                a, _, b = d.partition("-")
                n += int(b) - int(a) + 1 if b else 1
        return n

    def agree(self, nodes=None):
        """Every node sees the same slots owners (what --cluster check asks)."""
        sigs = set()
        for i in (nodes if nodes is not None else self.members):
            lines = self.client(i).execute_command("CLUSTER", "NODES").decode().split("\n")
            sig = sorted(line.split(" ")[0] + ":" + ",".join(sorted(s for s in line.split(" ")[8:]
                                                                  if s and not s.startswith("[")))
                         for line in lines if len(line.split(" ")) > 8)
            sigs.add(tuple(sig))
        return len(sigs) == 1

    def settled(self):
        """The members know each other, agree about the slots and are all
        in cluster_state:ok."""
        known = ("cluster_known_nodes:%d" % len(self.members)).encode()
        return (all(known in self.client(i).execute_command("CLUSTER", "INFO") for i in self.members)
                and self.agree() and self.state_ok(self.members))

    def state_ok(self, nodes):
        return all(b"cluster_state:ok" in self.client(i).execute_command("CLUSTER", "INFO") for i in nodes)

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def run_both(ours, ref, args):
    """Wait until both clusters are settled, run args(c) with each one's
    tool (it must succeed); the normalised outputs."""
    outs = []
    for c in (ours, ref):
        wait_until(c.settled, timeout=60, what="a settled cluster")
        rc, out = c.run(*args(c))
        assert rc == 0, out
        outs.append(c.normalise(out))
    return outs


def assert_all_keys(c):
    rcl = RedisCluster(host="127.0.0.1", port=c.ports[2], socket_timeout=20)
    try:
        assert all(rcl.get("key:%d" % i) == b"value:%d" % i for i in range(300))
    finally:
        rcl.close()


def settle(clusters):
    for c in clusters[:2]:
        wait_until(c.settled, timeout=60, what="a settled cluster")


def sorted_lines(text):
    """The lines but the empty ones and the waiting dots, sorted."""
    return sorted(line for line in text.split("\n") if line.strip() and set(line) != {"."})


@pytest.fixture(scope="module")
def clusters():
    ours = ref = None
    try:
        ours = Cluster("ours")
        ref = Cluster("ref")
        outs = {}
        for c in (ours, ref):
            outs[c.tool] = c.run("--cluster", "create", *[c.addr(i) for i in range(6)],
                                 "--cluster-replicas", "1", "--cluster-yes")
            wait_until(lambda: c.state_ok(range(6)) and c.agree(range(6)), timeout=60, what="cluster ok")
        yield ours, ref, outs
    finally:
        for c in (ours, ref):
            if c is not None:
                c.stop()


def test_create_with_replicas(clusters):
    ours, ref, outs = clusters
    rc, out = outs["ours"]
    assert rc == 0, out
    lines = out.split("\n")
    assert lines[:8] == [
        ">>> Performing hash slots allocation on 6 nodes...",
        "Master[0] -> Slots 0 - 5460",
        "Master[1] -> Slots 5461 - 10922",
        "Master[2] -> Slots 10923 - 16383",
        "Adding replica %s to %s" % (ours.addr(4), ours.addr(0)),
        "Adding replica %s to %s" % (ours.addr(5), ours.addr(1)),
        "Adding replica %s to %s" % (ours.addr(3), ours.addr(2)),
        ">>> Trying to optimize slaves allocation for anti-affinity",
    ]
    assert "[WARNING] Some slaves are in the same host as their master" in lines
    assert "   slots:[0-5460] (5461 slots) master" in lines
    assert ">>> Sending CLUSTER MEET messages to join the cluster" in lines
    assert "[OK] All nodes agree about slots configuration." in lines
    assert lines[-2:] == ["[OK] All 16384 slots covered.", ""]
    # The topology: three masters with redis-cli's slot ranges, one replica each.
    assert [ours.slots_of(i) for i in range(3)] == [5461, 5462, 5461]
    masters = {ours.node_id(i) for i in range(3)}
    replicated = []
    for i in range(3, 6):
        info = ours.client(i).info("replication")
        assert info["role"] == "slave"
        line = [x for x in ours.client(i).execute_command("CLUSTER", "NODES").decode().split("\n")
                if "myself" in x][0]
        replicated.append(line.split(" ")[3])
    assert sorted(replicated) == sorted(masters)
    # The same lines as redis-cli's, but for ids, ports and the order of the nodes.
    rrc, rout = outs["ref"]
    assert rrc == 0
    assert sorted_lines(ours.normalise(out)) == sorted_lines(ref.normalise(rout)), (out, rout)


def populate(c, n=300):
    rc = RedisCluster(host="127.0.0.1", port=c.ports[0], socket_timeout=20)
    try:
        for i in range(n):
            rc.set("key:%d" % i, "value:%d" % i)
    finally:
        rc.close()


def test_info_and_check(clusters):
    ours, ref, _ = clusters
    for c in (ours, ref):
        populate(c)
        wait_until(lambda: sum(c.client(i).dbsize() for i in range(3, 6)) == 300, what="replicas in sync")
    for sub in ("info", "check"):
        rc, out = ours.run("--cluster", sub, ours.addr(0))
        rrc, rout = ref.run("--cluster", sub, ref.addr(0))
        assert (rc, sorted_lines(ours.normalise(out))) == (rrc, sorted_lines(ref.normalise(rout))), out
        assert rc == 0
    assert "[OK] 300 keys in 3 masters." in out
    assert "0.02 keys per slot on average." in out
    # host and port separated by a space
    rc, out2 = ours.run("--cluster", "check", "127.0.0.1", str(ours.ports[0]))
    assert rc == 0 and out2 == out


def test_reshard_moves_slots_and_keys(clusters):
    ours, ref, _ = clusters
    before = {}
    r0 = ours.client(0)
    for s in range(50):
        before[s] = r0.execute_command("CLUSTER", "COUNTKEYSINSLOT", s)
    outs = []
    for c in (ours, ref):
        rc, out = c.run("--cluster", "reshard", c.addr(0), "--cluster-from", c.node_id(0),
                        "--cluster-to", c.node_id(1), "--cluster-slots", "50", "--cluster-yes")
        assert rc == 0, out
        outs.append(c.normalise(out))
    assert sorted_lines(outs[0]) == sorted_lines(outs[1])
    assert "    Moving slot 49 from ID" in outs[0]
    assert ours.slots_of(0) == 5411 and ours.slots_of(1) == 5512
    r1 = ours.client(1)
    for s in range(50):
        assert r1.execute_command("CLUSTER", "COUNTKEYSINSLOT", s) == before[s]
        assert r0.execute_command("CLUSTER", "COUNTKEYSINSLOT", s) == 0
    # Every key is still there.
    for c in (ours, ref):
        wait_until(c.settled, what="agreement after reshard")
        assert_all_keys(c)


def test_add_node_master(clusters):
    ours, ref, _ = clusters
    outs = run_both(ours, ref, lambda c: ["--cluster", "add-node", c.addr(6), c.addr(0)])
    ours.members.append(6)
    ref.members.append(6)
    assert sorted_lines(outs[0]) == sorted_lines(outs[1])
    assert outs[0].endswith(">>> Send CLUSTER MEET to node 127.0.0.1:P6 to make it join the cluster.\n"
                            "[OK] New node added correctly.\n")


def test_rebalance_onto_the_empty_master(clusters):
    ours, ref, _ = clusters
    for c in (ours, ref):
        wait_until(c.settled, timeout=60, what="agreement after add-node")
    # Nothing to do while the empty master is not used.
    rc, out = ours.run("--cluster", "rebalance", ours.addr(0), "--cluster-threshold", "5")
    assert rc == 0
    assert out.endswith("*** No rebalancing needed! All nodes are within the 5.00% threshold.\n")
    outs = run_both(ours, ref, lambda c: ["--cluster", "rebalance", c.addr(0), "--cluster-use-empty-masters",
                                          "--cluster-simulate"])
    assert sorted_lines(outs[0]) == sorted_lines(outs[1])
    assert ours.slots_of(6) == 0
    outs = run_both(ours, ref, lambda c: ["--cluster", "rebalance", c.addr(0), "--cluster-use-empty-masters"])
    assert sorted_lines(outs[0]) == sorted_lines(outs[1])
    assert ">>> Rebalancing across 4 nodes. Total weight = 4.00" in outs[0]
    assert sorted(ours.slots_of(i) for i in (0, 1, 2, 6)) == [4096] * 4
    wait_until(ours.settled, timeout=60, what="agreement after rebalance")
    assert_all_keys(ours)


def test_add_node_replica(clusters):
    """After the rebalance: the new master has slots, so the join of the
    replica waits until it knows that master (a master without slots is not
    part of what redis-cli's wait compares)."""
    ours, ref, _ = clusters
    outs = run_both(ours, ref, lambda c: ["--cluster", "add-node", c.addr(7), c.addr(0), "--cluster-slave"])
    ours.members.append(7)
    ref.members.append(7)
    assert "Automatically selected master 127.0.0.1:P6" in outs[0]
    assert ">>> Configure node as replica of 127.0.0.1:P6." in outs[0]
    # The dots while waiting for the join may differ.
    strip = (lambda t: [x for x in sorted_lines(t) if set(x) != {"."}])
    assert strip(outs[0]) == strip(outs[1])
    wait_until(lambda: ours.client(7).info("replication")["role"] == "slave", what="replica")
    assert ours.client(7).info("replication")["master_port"] == ours.ports[6]


def test_del_node(clusters):
    ours, ref, _ = clusters
    for c in (ours, ref):
        wait_until(c.settled, timeout=60, what="agreement")
    rc, out = ours.run("--cluster", "del-node", ours.addr(0), ours.node_id(6))
    assert rc == 1
    assert out.endswith("[ERR] Node %s is not empty! Reshard data away and try again.\n" % ours.addr(6))
    outs = []
    for c in (ours, ref):
        gone = c.node_id(7)
        rc, out = c.run("--cluster", "del-node", c.addr(0), gone)
        assert rc == 0, out
        c.members.remove(7)
        outs.append(c.normalise(out))
        for i in range(7):
            assert gone.encode() not in c.client(i).execute_command("CLUSTER", "NODES")
        assert b"cluster_known_nodes:1" in c.client(7).execute_command("CLUSTER", "INFO")
    assert outs[0] == outs[1]
    assert outs[0] == (">>> Removing node ID from cluster 127.0.0.1:P0\n"
                       ">>> Sending CLUSTER FORGET messages to the cluster...\n"
                       ">>> Sending CLUSTER RESET SOFT to the deleted node.\n")


def test_fix_open_slot(clusters):
    ours, ref, _ = clusters
    outs = {}
    for c in (ours, ref):
        wait_until(c.settled, timeout=60, what="agreement")
        # Another master claims to be importing slot 0 from its owner.
        slots = c.client(0).execute_command("CLUSTER", "SLOTS")
        owner_port = next(int(r[2][1]) for r in slots if r[0] <= 0 <= r[1])
        importer = next(i for i in (0, 1, 2, 6) if c.ports[i] != owner_port)
        owner_idx = c.ports.index(owner_port)
        c.client(importer).execute_command("CLUSTER", "SETSLOT", 0, "IMPORTING", c.node_id(owner_idx))
        res = []
        for sub in ("check", "fix", "check"):
            rc, out = c.run("--cluster", sub, c.addr(0))
            res.append((rc, sorted_lines(c.normalise(out))))
        outs[c.tool] = res
        assert res[0][0] == 1 and res[1][0] == 0 and res[2][0] == 0
    assert outs["ours"] == outs["ref"]
    check, fix, _ = outs["ours"]
    assert "[WARNING] The following slots are open: 0." in check[1]
    assert ">>> Fixing open slot 0" in fix[1]
    assert any(x.startswith(">>> Case 2: Moving all the 0 slot keys to its owner") for x in fix[1])


def test_fix_uncovered_slots(clusters):
    ours, ref, _ = clusters
    outs = {}
    for c in (ours, ref):
        wait_until(c.settled, timeout=60, what="agreement")
        for i in (0, 1, 2, 6):
            c.client(i).execute_command("CLUSTER", "DELSLOTS", 16000, 16001)
        wait_until(lambda: all(c.client(i).execute_command("CLUSTER", "COUNTKEYSINSLOT", 16000) == 0
                               for i in (0, 1, 2, 6)), what="slots deleted")
        rc, out = c.run("--cluster", "fix", c.addr(0), input=b"yes\n")
        assert rc == 0, out
        # Which master gets the slots is random.
        outs[c.tool] = [x for x in sorted_lines(c.normalise(out)) if ">>> Covering slot" not in x
                        and "Nodes don't agree" not in x]
        wait_until(c.settled, timeout=60, what="agreement after fix")
        rc, out = c.run("--cluster", "check", c.addr(0))
        assert rc == 0, out
    assert outs["ours"] == outs["ref"]
    assert "The following uncovered slots have no keys across the cluster:" in outs["ours"]
    assert "[16000-16001]" in outs["ours"]


def test_fix_with_keys_on_both_sides(clusters):
    """An importing node holds keys of the slot that its owner has too: the
    fix moves them to the owner; a key with another value stops it unless
    --cluster-replace."""
    ours, ref, _ = clusters
    outs = {}
    for c in (ours, ref):
        wait_until(c.settled, timeout=60, what="a settled cluster")
        owner = c.client(0)
        slots = owner.execute_command("CLUSTER", "SLOTS")
        lo, hi = next((r[0], r[1]) for r in slots if r[2][1] == c.ports[0])
        keys = [k for k in ("busy:%d" % i for i in range(100000)) if key_slot(k.encode()) == lo][:2]
        other = redis.Redis(port=c.ports[1], single_connection_client=True, socket_timeout=20)
        other.execute_command("CLUSTER", "SETSLOT", lo, "IMPORTING", c.node_id(0))
        for k, v in zip(keys, ("same", "theirs")):
            owner.set(k, "same" if v == "same" else "ours")
            other.execute_command("ASKING")
            other.set(k, v)
        other.close()
        res = []
        for extra in ([], ["--cluster-replace"]):
            rc, out = c.run("--cluster", "fix", c.addr(0), *extra)
            # The slot, the keys' names and the slot counts may differ between the two.
            res.append((rc, [x for x in sorted_lines(c.normalise(re.sub(r"slot %d\b" % lo, "slot S", out)))
                             if "busy:" not in x and "slots" not in x and " keys " not in x]))
        outs[c.tool] = res
        assert owner.get(keys[1]) == b"theirs"
        assert c.client(1).execute_command("CLUSTER", "COUNTKEYSINSLOT", lo) == 0
        wait_until(c.settled, timeout=60, what="a settled cluster")
        assert c.run("--cluster", "check", c.addr(0))[0] == 0
    assert outs["ours"] == outs["ref"]
    (rc1, first), (rc2, second) = outs["ours"]
    assert (rc1, rc2) == (1, 0)
    assert "*** Found 1 key(s) in both source node and target node having different values." in first, "\n".join(first)
    assert "*** Replacing target keys..." in second


def test_call(clusters):
    ours, ref, _ = clusters
    settle(clusters)
    for args in (["config", "get", "cluster-enabled"], ["dbsize", "--cluster-only-masters"]):
        res = []
        for c in (ours, ref):
            rc, out = c.run("--cluster", "call", c.addr(0), *args)
            assert rc == 0, out
            res.append(sorted_lines(c.normalise(out)))
        assert res[0] == res[1]
    assert ">>> Calling dbsize" in res[0]
    assert len(res[0]) == 5
    rc, out = ours.run("--cluster", "call", ours.addr(0), "config", "get", "port", "--cluster-only-replicas")
    assert rc == 0
    assert sorted_lines(ours.normalise(out))[1:] == ["127.0.0.1:P%d: port" % i for i in (3, 4, 5)] or \
        len(out.split("\n")) == 8


def test_set_timeout(clusters):
    ours, ref, _ = clusters
    settle(clusters)
    res = []
    for c in (ours, ref):
        rc, out = c.run("--cluster", "set-timeout", c.addr(0), "50")
        res.append((rc, out))
        rc, out = c.run("--cluster", "set-timeout", c.addr(0), "4000")
        res.append((rc, sorted_lines(c.normalise(out))))
    assert res[0] == res[2]
    assert res[0] == (1, "Setting a node timeout of less than 100 milliseconds is a bad idea.\n")
    assert res[1] == res[3]
    # The nodes run without a config file: CONFIG REWRITE fails.
    assert res[1][0] == 0
    assert ">>> New node timeout set. 0 OK, 7 ERR." in res[1][1]


def test_cli_follows_redirections(clusters):
    ours, ref, _ = clusters
    settle(clusters)
    script = b"".join(b"set k%d v%d\nget k%d\n" % (i, i, i) for i in range(10))
    outs = []
    for c, cmd in ((ours, [sys.executable, "-m", "ophidis.tools.cli"]), (ref, [REDIS_CLI])):
        r = subprocess.run(cmd + ["-c", "-p", str(c.ports[0])], input=script, capture_output=True,
                           env=server_env(), timeout=60)
        assert r.returncode == 0
        outs.append(c.normalise(r.stdout.decode()))
    assert outs[0] == outs[1], outs
    assert "-> Redirected to slot [" in outs[0]
    r = subprocess.run([sys.executable, "-m", "ophidis.tools.cli", "-c", "-p", str(ours.ports[0]), "get", "k3"],
                       capture_output=True, env=server_env(), timeout=60)
    assert r.stdout == b"v3\n"


def test_benchmark_cluster_mode(clusters):
    ours, _, _ = clusters
    settle(clusters)
    env = server_env()
    r = subprocess.run([sys.executable, "-m", "ophidis.tools.benchmark", "--cluster", "-p", str(ours.ports[0]),
                        "-t", "set,get,lpush", "-n", "2000", "-c", "8", "-q"],
                       capture_output=True, env=env, timeout=120)
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr
    assert out.startswith("Cluster has 4 master nodes:\n\n")
    assert re.search(r"^Master 0: [0-9a-f]{40} 127\.0\.0\.1:\d+$", out, re.M)
    for t in ("SET", "GET", "LPUSH"):
        assert re.search(r"%s: [\d.]+ requests per second" % t, out)
    # The keys went to the slot of the first slot of each master.
    masters = [i for i in (0, 1, 2, 6) if ours.slots_of(i)]
    for i in masters:
        keys = ours.client(i).keys("key:{*")
        assert keys, i
        assert b"mylist:{" in b" ".join(ours.client(i).keys("mylist:{*"))
    # Full report of the cluster mode.
    r = subprocess.run([sys.executable, "-m", "ophidis.tools.benchmark", "--cluster", "-p", str(ours.ports[0]),
                        "-t", "set", "-n", "500", "-c", "4"], capture_output=True, env=env, timeout=120)
    out = r.stdout.decode()
    assert "  cluster mode: yes (4 masters)\n  node [0] configuration:\n    save: NONE\n    appendonly: no\n" in out
    assert "  multi-thread: yes\n  threads: 4\n" in out
    # A redirection (-ASK for new keys of a migrating slot) makes it refetch the slots.
    owner = ours.client(0)
    first = int([x for x in owner.execute_command("CLUSTER", "NODES").decode().split("\n")
                 if "myself" in x][0].split(" ")[8].split("-")[0])
    other = [i for i in masters if i != 0][0]
    owner.execute_command("CLUSTER", "SETSLOT", first, "MIGRATING", ours.node_id(other))
    try:
        r = subprocess.run([sys.executable, "-m", "ophidis.tools.benchmark", "--cluster", "-p", str(ours.ports[0]),
                            "-t", "set", "-n", "200", "-c", "4", "-q", "-r", "100000000"],
                           capture_output=True, env=env, timeout=120)
    finally:
        owner.execute_command("CLUSTER", "SETSLOT", first, "STABLE")
    assert r.returncode == 0, r.stderr
    assert b"WARNING: Cluster slots configuration changed, fetching new one...\n" in r.stderr


def test_help_and_argument_errors(clusters):
    ours, ref, _ = clusters
    for args in (["--cluster", "help"], ["--cluster", "nosuch"], ["--cluster", "add-node", "127.0.0.1:1"],
                 ["--cluster", "check", "nohost"],
                 ["--cluster", "create", "127.0.0.1:%d" % ours.ports[7], "--cluster-replicas", "1"]):
        a = ours.run(*args)
        b = ref.run(*[x.replace(str(ours.ports[7]), str(ref.ports[7])) for x in args])
        assert (a[0], ours.normalise(a[1])) == (b[0], ref.normalise(b[1])), args
    assert ours.run("--cluster", "help")[1].startswith("Cluster Manager Commands:\n  create         host1:port1")


@pytest.mark.parametrize("kind", ["redis-server", "ophidis"])
def test_ophidis_cluster_start_status_stop(tmp_path, kind):
    base = port_block(6)
    d = str(tmp_path / "cluster")
    env = server_env()
    cmd = [sys.executable, "-m", "ophidis.tools.clusterctl"]
    server = kind
    if kind == "ophidis":      # this checkout's server (PYTHONPATH from server_env)
        server = str(tmp_path / "ophidis-server")
        with open(server, "w") as f:
            f.write('#!/bin/sh\nexec %s -m ophidis "$@"\n' % sys.executable)
        os.chmod(server, 0o755)
    try:
        r = subprocess.run(cmd + ["start", "--nodes", "6", "--replicas", "1", "--port", str(base), "--dir", d,
                                  "--server", server, "--node-timeout", str(NODE_TIMEOUT)],
                           capture_output=True, env=env, timeout=120)
        out = r.stdout.decode()
        assert r.returncode == 0, out + r.stderr.decode()
        assert ">>> Performing hash slots allocation on 6 nodes..." in out
        assert out.endswith("Connect with: ophidis-cli -c -p %d\nStop with: ophidis-cluster stop --dir %s\n"
                            % (base, d))
        with open(os.path.join(d, str(base), "node.conf")) as f:
            conf = f.read()
        assert "cluster-enabled yes\ncluster-config-file nodes-%d.conf\n" % base in conf
        assert os.path.exists(os.path.join(d, str(base), "nodes-%d.conf" % base))
        for i in range(6):
            assert b"cluster_state:ok" in redis.Redis(port=base + i).execute_command("CLUSTER", "INFO")
        r = subprocess.run(cmd + ["status", "--dir", d], capture_output=True, env=env, timeout=60)
        assert r.returncode == 0
        lines = r.stdout.decode().splitlines()
        assert len(lines) == 6
        assert sum(" master " in x for x in lines) == 3
        assert sum(" replica of " in x for x in lines) == 3
        assert "slots:0-5460 (5461 slots)  cluster_state:ok" in lines[0]
        r = subprocess.run(cmd + ["stop", "--dir", d], capture_output=True, env=env, timeout=60)
        assert r.returncode == 0
        for i in range(6):
            with pytest.raises(redis.ConnectionError):
                redis.Redis(port=base + i, socket_connect_timeout=2).ping()
        r = subprocess.run(cmd + ["status", "--dir", d], capture_output=True, env=env, timeout=60)
        assert r.returncode == 1 and r.stdout.decode().count("not running") == 6
    finally:
        for i in range(6):
            try:
                with open(os.path.join(d, str(base + i), "node.pid")) as f:
                    os.kill(int(f.read()), signal.SIGKILL)
            except (OSError, ValueError):
                pass
