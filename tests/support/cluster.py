"""Clusters of real server processes for the tests: Ophidis nodes
(``ServerProc``) and Debian's redis-server nodes (``RedisServerProc``) on
ports that are free together with their bus ports (port + 10000), joined
with the real ``redis-cli --cluster create``.  Every process is stopped by
its own handle in ``Cluster.stop`` (the tests call it in ``finally``)."""

from __future__ import annotations

import random
import socket
import subprocess
import sys

import redis
from redis.cluster import RedisCluster

from support.servers import REDIS_CLI, RedisServerProc, ServerProc, server_env, stop_all
from support.wait import wait_until

from ophidis.cluster.slots import key_hash_slot


def _free(port: int) -> bool:
    for p in (port, port + 10000):
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                return False
    return True


def cluster_ports(n: int) -> list:
    """n ports, each free together with its bus port, both below the range
    the kernel picks outgoing ports from (32768 and up)."""
    out = []
    while len(out) < n:
        p = random.randint(10000, 22000)     # port and port + 10000 below the ephemeral range
        if p not in out and all(abs(p - q) != 10000 for q in out) and _free(p):
            out.append(p)
    return out


def cluster_args(node_timeout: int, extra=()) -> list:
    return ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(node_timeout), "--appendonly", "no"] + list(extra)


class Cluster:
    """The nodes of one test cluster, in the order they were given
    ("ophidis" or "redis" each); ``nodes[i]`` is a ServerProc or a
    RedisServerProc.  A ``with`` block stops them all."""

    def __init__(self, kinds, node_timeout=2000, extra=()):
        self.kinds = list(kinds)
        self.node_timeout = node_timeout
        self.extra = list(extra)
        self.ports = cluster_ports(len(self.kinds))
        self.nodes = []
        try:
            for kind, port in zip(self.kinds, self.ports):
                self.nodes.append(self._start(kind, port))
        except BaseException:
            self.stop()
            raise

    def _start(self, kind, port, dir=None):
        args = ["--port", str(port)] + cluster_args(self.node_timeout, self.extra)
        if kind == "ophidis":
            return ServerProc(args + ["--enable-debug-command", "yes"], cwd=dir)
        return RedisServerProc(args, dir=dir, port=port)

    def restart(self, i):
        """Start node i again in its directory (after a kill)."""
        old = self.nodes[i]
        old.stop()
        self.nodes[i] = self._start(self.kinds[i], self.ports[i], dir=old.dir)
        return self.nodes[i]

    def client(self, i, **kw) -> redis.Redis:
        return self.nodes[i].client(**kw)

    def addrs(self) -> list:
        return ["127.0.0.1:%d" % p for p in self.ports]

    def create(self, replicas=0, timeout=60):
        """redis-cli --cluster create (its output returned), then wait for
        every node to report cluster_state:ok and to agree on the slots."""
        r = subprocess.run([REDIS_CLI, "--cluster", "create"] + self.addrs() +
                           ["--cluster-replicas", str(replicas), "--cluster-yes"],
                           capture_output=True, text=True, timeout=timeout)
        assert r.returncode == 0, r.stdout + r.stderr
        self.wait_ok()
        return r.stdout

    def form(self, masters: int, timeout=60):
        """Without redis-cli: the first ``masters`` nodes share the slots
        evenly, every node meets node 0, the others replicate the masters
        in turn."""
        per = 16384 // masters
        for i in range(masters):
            end = 16383 if i == masters - 1 else (i + 1) * per - 1
            self.client(i).execute_command("CLUSTER", "ADDSLOTSRANGE", i * per, end)
        for i in range(1, len(self.nodes)):
            self.client(0).execute_command("CLUSTER", "MEET", "127.0.0.1", self.ports[i])
        n = len(self.nodes)
        wait_until(lambda: all(self.info(i)["cluster_known_nodes"] == str(n) for i in range(n)), timeout,
                   interval=0.2, what="every node knows every other")
        ids = [self.myid(i) for i in range(masters)]
        for i in range(masters, n):
            master = ids[(i - masters) % masters]
            wait_until(lambda: any(f[0] == master and "master" in f[2] for f in self.nodes_view(i)), timeout,
                       interval=0.2, what="node %d sees its master" % i)
            self.client(i).execute_command("CLUSTER", "REPLICATE", master)
        for i in range(masters, n):
            me, master = self.myid(i), ids[(i - masters) % masters]
            wait_until(lambda: all(any(f[0] == me and "slave" in f[2] and f[3] == master for f in self.nodes_view(j))
                                   for j in range(n)), timeout, interval=0.2,
                       what="every node sees node %d as a replica" % i)
        self.wait_ok(timeout=timeout)

    def cli(self, *args, timeout=120, check=True, tool="redis-cli") -> str:
        """Run redis-cli (or, with tool="ophidis-cli", this checkout's
        ophidis-cli) with args; its output."""
        exe = [REDIS_CLI] if tool == "redis-cli" else [sys.executable, "-m", "ophidis.tools.cli"]
        r = subprocess.run(exe + [str(a) for a in args], capture_output=True, text=True,
                           timeout=timeout, env=server_env())
        if check:
            assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    def info(self, i) -> dict:
        text = self.client(i).execute_command("CLUSTER", "INFO")
        if isinstance(text, bytes):
            text = text.decode()
        return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)

    def wait_ok(self, nodes=None, timeout=60):
        idx = range(len(self.nodes)) if nodes is None else nodes

        def ok():
            for i in idx:
                try:
                    if self.info(i).get("cluster_state") != "ok":
                        return False
                except redis.RedisError:
                    return False
            return self.agree(idx)
        wait_until(ok, timeout, interval=0.2, what="cluster_state:ok on every node")

    def agree(self, idx) -> bool:
        """Every node gives the same slot owners (CLUSTER SLOTS)."""
        views = set()
        for i in idx:
            slots = self.client(i).execute_command("CLUSTER", "SLOTS")
            views.add(tuple(sorted((s[0], s[1], s[2][1]) for s in slots)))
        return len(views) == 1

    def myid(self, i) -> str:
        return self.client(i).execute_command("CLUSTER", "MYID").decode()

    def nodes_view(self, i) -> list:
        text = self.client(i).execute_command("CLUSTER", "NODES")
        if isinstance(text, bytes):
            text = text.decode()
        return [line.split() for line in text.strip().split("\n")]

    def masters(self, i=0) -> list:
        """Ports of the masters serving slots, as node i sees them."""
        return sorted(int(f[1].split("@")[0].split(":")[1]) for f in self.nodes_view(i)
                      if "master" in f[2] and "fail" not in f[2] and len(f) > 8)

    def owner_of(self, slot: int, i=0) -> int:
        """The port of the master serving slot, as node i sees it."""
        for s in self.client(i).execute_command("CLUSTER", "SLOTS"):
            if s[0] <= slot <= s[1]:
                return s[2][1]
        return 0

    def index_of(self, port) -> int:
        return self.ports.index(port)

    def redis_cluster(self, i=0, **kw):
        """redis-py's RedisCluster, starting from node i."""
        kw.setdefault("socket_timeout", 10)
        return RedisCluster(host="127.0.0.1", port=self.ports[i], **kw)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        stop_all(self.nodes)


def keys_in(lo, hi, n, prefix="k"):
    """n key names whose slots are in lo..hi."""
    out = []
    i = 0
    while len(out) < n:
        k = "%s%d" % (prefix, i)
        if lo <= key_hash_slot(k.encode()) <= hi:
            out.append(k)
        i += 1
    return out


def settled(cl):
    """Every node sees the masters' configEpochs distinct (the collisions of
    a new cluster resolved), as before any slot moves in production."""
    def ok():
        views = set()
        for i in range(len(cl.nodes)):
            epochs = tuple(sorted((f[0], f[6]) for f in cl.nodes_view(i) if "master" in f[2]))
            if len({e for _, e in epochs}) != len(epochs):
                return False
            views.add(epochs)
        return len(views) == 1
    wait_until(ok, 60, interval=0.1, what="distinct configEpochs everywhere")


def settled_masters(n=3):
    """A generator for a module fixture: n masters of ours formed, their
    epochs settled (slot migrations start from there); stopped after."""
    c = Cluster(["ophidis"] * n)
    try:
        c.form(n)
        settled(c)
        yield c
    finally:
        c.stop()


# CLUSTER MIGRATION STATUS's fields, in Redis 8.4's order
FIELDS = [b"id", b"slots", b"source", b"dest", b"operation", b"state", b"last_error", b"retries",
          b"create_time", b"start_time", b"end_time", b"write_pause_ms"]


def status(cl, i, *args):
    """CLUSTER MIGRATION STATUS (ALL, or ID id) as a list of dicts."""
    args = args or ("ALL",)
    rows = cl.client(i).execute_command("CLUSTER", "MIGRATION", "STATUS", *args)
    out = []
    for row in rows:
        assert row[0::2] == FIELDS
        out.append(dict(zip(FIELDS, row[1::2])))
    return out


def wait_state(cl, i, task_id, states, timeout=30):
    def done():
        rows = status(cl, i, "ID", task_id)
        return rows and rows[0][b"state"].decode() in states and rows[0]
    return wait_until(done, timeout, interval=0.05, what="task %s in %s" % (task_id, states))
