"""Redis Cluster of Redis 7.2-8.10, against real processes: shard ids
(CLUSTER MYSHARDID, the ping extension, nodes.conf's aux fields, CLUSTER
SHARDS grouped by shard), cluster-announce-human-nodename, the forgotten
node extension, CLUSTER SLOT-STATS (8.2).  valkey-server 9.1 shares all of
it with Redis: it is the other side of the bus, the writer and reader of
the same nodes.conf, and the byte-for-byte reference of SLOT-STATS's
errors."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest
import redis
from support.cluster import cluster_args, cluster_ports
from support.differential import same_replies
from support.resp import RespConn
from support.servers import VALKEY_SERVER, ServerProc, ValkeyServerProc, server_env, stop_all, wait_exit
from support.tls import Certs
from support.wait import wait_until

from ophidis.cluster.slots import key_hash_slot

needs_valkey = pytest.mark.skipif(VALKEY_SERVER is None, reason="valkey-server is not installed")

HEX40 = re.compile(rb"^[0-9a-f]{40}$")
TIMEOUT = 2000


def ophidis(port, dir=None, extra=()):
    return ServerProc(["--port", str(port)] + cluster_args(TIMEOUT, extra), cwd=dir)


def valkey(port, dir=None, extra=()):
    return ValkeyServerProc(cluster_args(TIMEOUT, extra), dir=dir, port=port)


def conf_lines(proc) -> list:
    with open(os.path.join(proc.dir, "nodes.conf")) as f:
        return [line for line in f.read().split("\n") if line.strip()]


def nodes(proc) -> dict:
    text = proc.conn().call_value("CLUSTER", "NODES")
    out = {}
    for line in text.decode().strip().split("\n"):
        f = line.split(" ")
        out[f[0].encode()] = f
    return out


def shard_groups(proc) -> set:
    """CLUSTER SHARDS as {frozenset(node ids)}."""
    out = set()
    for shard in proc.client(protocol=3).execute_command("CLUSTER", "SHARDS"):
        out.add(frozenset(n[b"id"] for n in shard[b"nodes"]))
    return out


def myid(proc) -> bytes:
    return proc.conn().call_value("CLUSTER", "MYID")


def shardid(proc) -> bytes:
    return proc.conn().call_value("CLUSTER", "MYSHARDID")


# -- one node: the shard id, nodes.conf -----------------------------------------------------------

def test_myshardid_without_cluster_is_an_error(raw):
    assert raw.call("CLUSTER", "MYSHARDID") == b"-ERR This instance has cluster support disabled\r\n"
    assert raw.call("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "1") == \
        b"-ERR This instance has cluster support disabled\r\n"


def test_shard_id_and_human_nodename_persist_in_nodes_conf():
    port, = cluster_ports(1)
    s = ophidis(port)
    try:
        me, shard = myid(s), shardid(s)
        assert HEX40.match(me) and HEX40.match(shard) and me != shard
        c = s.conn()
        assert c.call("CONFIG", "SET", "cluster-announce-human-nodename", "a:b") == (
            b"-ERR CONFIG SET failed (possibly related to argument 'cluster-announce-human-nodename') - "
            b"Announced human node name contained invalid character\r\n")
        assert c.call("CONFIG", "SET", "cluster-announce-human-nodename", "node-1.x_y") == b"+OK\r\n"
        assert c.call_value("CONFIG", "GET", "cluster-announce-human-nodename") == \
            [b"cluster-announce-human-nodename", b"node-1.x_y"]
        assert c.call("CLUSTER", "ADDSLOTSRANGE", "0", "99") == b"+OK\r\n"
        assert c.call("CLUSTER", "SAVECONFIG") == b"+OK\r\n"
        # nodes.conf: the aux fields of Redis 7.2+, in Redis's order
        lines = conf_lines(s)
        assert lines[0] == "%s :%d@%d,,tls-port=0,nodename=node-1.x_y,shard-id=%s myself,master - 0 0 0 " \
            "connected 0-99" % (me.decode(), port, port + 10000, shard.decode())
        assert lines[1] == "vars currentEpoch 0 lastVoteEpoch 0"
        # ... which clients are not shown
        assert nodes(s)[me][1] == ":%d@%d" % (port, port + 10000)
        # the same ids after a restart
        s.stop()
        s = ophidis(port, dir=s.dir, extra=["--cluster-announce-human-nodename", "node-1.x_y"])
        assert (myid(s), shardid(s)) == (me, shard)
        assert "nodename=node-1.x_y" in conf_lines(s)[0]
        # a hard reset: a new node, in a new shard
        c = s.conn()
        assert c.call("CLUSTER", "RESET", "HARD") == b"+OK\r\n"
        assert myid(s) != me and shardid(s) != shard and HEX40.match(shardid(s))
        wait_until(lambda: shardid(s).decode() in conf_lines(s)[0], 10, what="the new shard id saved")
    finally:
        s.stop()


def test_a_redis_70_nodes_conf_puts_replicas_in_their_masters_shard(tmp_path):
    """A file without aux fields (Redis 7.0's): masters get a shard id of
    their own, replicas their master's; the next save writes them."""
    port, = cluster_ports(1)
    me, master, other = "a" * 40, "b" * 40, "c" * 40
    (tmp_path / "nodes.conf").write_text(
        "%s 127.0.0.1:%d@%d myself,slave %s 0 0 3 connected\n"
        "%s 127.0.0.1:1@2 master - 0 0 3 disconnected 0-8000\n"
        "%s 127.0.0.1:3@4 master - 0 0 4 disconnected 8001-16383\n"
        "vars currentEpoch 4 lastVoteEpoch 0\n" % (me, port, port + 10000, master, master, other))
    s = ophidis(port, dir=str(tmp_path))
    try:
        mine = shardid(s)
        assert shard_groups(s) == {frozenset([me.encode(), master.encode()]), frozenset([other.encode()])}
        assert s.conn().call("CLUSTER", "SAVECONFIG") == b"+OK\r\n"
        by_id = {line.split(" ")[0]: line for line in conf_lines(s)}
        assert ",shard-id=%s " % mine.decode() in by_id[me]
        assert ",shard-id=%s " % mine.decode() in by_id[master]
        assert ",shard-id=%s " % mine.decode() not in by_id[other]
    finally:
        s.stop()


def _start_fails(port, dir):
    p = subprocess.Popen([sys.executable, "-m", "ophidis", "--port", str(port), "--dir", dir, "--save", ""]
                         + cluster_args(TIMEOUT), cwd=dir, env=server_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rc = wait_exit(p, 30)
    return rc, p.stdout.read()


@pytest.mark.parametrize("addr", [
    "127.0.0.1:1@2,,foo=bar",                  # an aux field Redis does not know
    "127.0.0.1:1@2,,shard-id=xyz",             # not a node id
    "127.0.0.1:1@2,,tls-port=123456",          # not a port
    "127.0.0.1:1@2,,shard-id",                 # no value
    "127.0.0.1:1@2,,nodename=a:b",             # a character aux values may not have
])
def test_bad_aux_fields_stop_start_up(tmp_path, addr):
    port, = cluster_ports(1)
    (tmp_path / "nodes.conf").write_text("%s %s myself,master - 0 0 0 connected\n" % ("d" * 40, addr))
    rc, out = _start_fails(port, str(tmp_path))
    assert rc == 1 and "Unrecoverable error: corrupted cluster config file." in out


@needs_valkey
def test_nodes_conf_is_valkeys_both_ways(tmp_path):
    """valkey-server writes nodes.conf, we load it (same ids), write it again
    byte for byte; valkey-server loads ours."""
    port, = cluster_ports(1)
    v = valkey(port, dir=str(tmp_path), extra=["--cluster-announce-human-nodename", "vk1"])
    try:
        v.client().execute_command("CLUSTER", "ADDSLOTSRANGE", 5, 10)
        v.client().execute_command("CLUSTER", "ADDSLOTS", 100)
        v.client().execute_command("CLUSTER", "SAVECONFIG")
        ids = myid(v), shardid(v)
    finally:
        v.stop()
    theirs = (tmp_path / "nodes.conf").read_text()
    s = ophidis(port, dir=str(tmp_path), extra=["--cluster-announce-human-nodename", "vk1"])
    try:
        assert (myid(s), shardid(s)) == ids
        assert s.conn().call("CLUSTER", "SAVECONFIG") == b"+OK\r\n"
        assert (tmp_path / "nodes.conf").read_text() == theirs
        s.conn().call("CONFIG", "SET", "cluster-announce-human-nodename", "")
        assert s.conn().call("CLUSTER", "SAVECONFIG") == b"+OK\r\n"
    finally:
        s.stop()
    ours = (tmp_path / "nodes.conf").read_text()
    assert "nodename=" not in ours
    v = valkey(port, dir=str(tmp_path))
    try:
        assert (myid(v), shardid(v)) == ids
        assert nodes(v)[ids[0]][8:] == ["5-10", "100"]
    finally:
        v.stop()


def test_nodes_conf_of_a_tls_cluster(tmp_path):
    """tls-cluster: the TCP port in the address, the TLS one (which the bus
    announces) as tls-port=; both back after a restart (CLUSTER NODES of a
    plaintext client: the TCP port)."""
    with Certs() as certs:
        port, tls = cluster_ports(2)
        args = ["--port", str(port), "--tls-port", str(tls), "--tls-cluster", "yes"] + \
            certs.server_args() + cluster_args(TIMEOUT)
        s = ServerProc(args, cwd=str(tmp_path))
        try:
            me = myid(s)
            assert s.conn().call("CLUSTER", "SAVECONFIG") == b"+OK\r\n"
            assert conf_lines(s)[0].startswith("%s :%d@%d,,tls-port=%d,shard-id=" % (
                me.decode(), port, tls + 10000, tls))
            assert nodes(s)[me][1] == ":%d@%d" % (port, tls + 10000)
            s.stop()
            s = ServerProc(args, cwd=str(tmp_path))
            assert myid(s) == me and nodes(s)[me][1] == ":%d@%d" % (port, tls + 10000)
            shard = s.client(protocol=3).execute_command("CLUSTER", "SHARDS")[0][b"nodes"][0]
            assert (shard[b"port"], shard[b"tls-port"]) == (port, tls)
        finally:
            s.stop()


def test_bus_port_protected_mode(tmp_path):
    """Redis 8.10.2: a cluster node without tls-cluster warns that its bus
    port has no authentication, and with cluster-bus-port-protected-mode
    yes refuses to start; with tls-cluster it starts without the warning."""
    port, tls = cluster_ports(2)
    p = subprocess.run([sys.executable, "-m", "ophidis", "--port", str(port), "--cluster-bus-port-protected-mode",
                        "yes"] + cluster_args(TIMEOUT), cwd=str(tmp_path), env=server_env(), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 1, p.stdout
    assert "cluster-bus-port-protected-mode is yes but tls-cluster is off" in p.stdout
    (tmp_path / "plain").mkdir()
    (tmp_path / "tls").mkdir()
    s = ophidis(port, dir=str(tmp_path / "plain"))
    try:
        assert "the cluster bus port is not authenticated" in s.output()
        assert s.conn().call("CONFIG", "GET", "cluster-bus-port-protected-mode") == \
            b"*2\r\n$31\r\ncluster-bus-port-protected-mode\r\n$2\r\nno\r\n"
    finally:
        s.stop()
    with Certs() as certs:
        s = ServerProc(["--port", str(port), "--tls-port", str(tls), "--tls-cluster", "yes",
                        "--cluster-bus-port-protected-mode", "yes"] + certs.server_args() + cluster_args(TIMEOUT),
                       cwd=str(tmp_path / "tls"))
        try:
            assert s.conn().call("PING") == b"+PONG\r\n"
            assert "not authenticated" not in s.output()
        finally:
            s.stop()


# -- a cluster with valkey-server: the extensions on the bus ---------------------------------------

@needs_valkey
def test_shard_ids_and_forgotten_nodes_with_valkey():
    """A (ours, the slots) with V (valkey) as its replica, B and C (ours,
    no slots).  V takes A's shard id from the extension and we take V's;
    CLUSTER SHARDS groups them alike everywhere.  V's CLUSTER FORGET B
    reaches A as a forgotten-node extension; A's FORGET C reaches V."""
    ports = cluster_ports(4)
    procs = []
    try:
        a = ophidis(ports[0])
        procs.append(a)
        v = valkey(ports[1])
        procs.append(v)
        b = ophidis(ports[2])
        procs.append(b)
        c = ophidis(ports[3])
        procs.append(c)
        a.client().execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
        for p in (v, b, c):
            a.client().execute_command("CLUSTER", "MEET", "127.0.0.1", p.port)
        ids = {p: myid(p) for p in procs}
        wait_until(lambda: all(len(nodes(p)) == 4 and all("handshake" not in f[2] for f in nodes(p).values())
                               for p in procs), 60, interval=0.2, what="every node knows every other")
        v.client().execute_command("CLUSTER", "REPLICATE", ids[a])
        wait_until(lambda: shardid(v) == shardid(a), 30, interval=0.2, what="V in A's shard")
        want = {frozenset([ids[a], ids[v]]), frozenset([ids[b]]), frozenset([ids[c]])}
        wait_until(lambda: all(shard_groups(p) == want for p in procs), 30, interval=0.2,
                   what="the same shards on every node")
        assert shardid(a) not in (shardid(b), shardid(c))
        # nodes.conf: V's line with A's shard id, on our side too
        a.client().execute_command("CLUSTER", "SAVECONFIG")
        line = next(line for line in conf_lines(a) if line.startswith(ids[v].decode()))
        assert ",shard-id=%s " % shardid(a).decode() in line
        # a forgotten node, from valkey to us ...
        v.client().execute_command("CLUSTER", "FORGET", ids[b])
        wait_until(lambda: ids[b] not in nodes(a), 30, interval=0.2, what="A forgets B as V told it")
        # ... and from us to valkey
        a.client().execute_command("CLUSTER", "FORGET", ids[c])
        wait_until(lambda: ids[c] not in nodes(v), 30, interval=0.2, what="V forgets C as A told it")
        assert ids[b] not in nodes(a) and ids[c] not in nodes(a)
    finally:
        stop_all(procs)


@needs_valkey
def test_a_replica_of_valkey_takes_its_shard_id():
    ports = cluster_ports(2)
    procs = []
    try:
        v = valkey(ports[0])
        procs.append(v)
        a = ophidis(ports[1], extra=["--cluster-announce-human-nodename", "ours"])
        procs.append(a)
        v.client().execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
        a.client().execute_command("CLUSTER", "MEET", "127.0.0.1", v.port)
        wait_until(lambda: myid(v) in nodes(a) and "handshake" not in nodes(a)[myid(v)][2]
                   and myid(a) in nodes(v), 30, interval=0.2, what="A and V know each other")
        a.client().execute_command("CLUSTER", "REPLICATE", myid(v))
        assert shardid(a) == shardid(v)
        wait_until(lambda: shard_groups(v) == shard_groups(a) == {frozenset([myid(a), myid(v)])}, 30,
                   interval=0.2, what="one shard on both")
        # our human node name travels to valkey, which keeps it in its nodes.conf
        v.client().execute_command("CLUSTER", "SAVECONFIG")
        wait_until(lambda: "nodename=ours," in next(line for line in conf_lines(v)
                                                    if line.startswith(myid(a).decode())),
                   30, interval=0.5, what="V's nodes.conf with our human node name")
    finally:
        stop_all(procs)


# -- CLUSTER SLOT-STATS ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def stats_pair():
    """An Ophidis and a valkey-server node, each a one-node cluster with
    slots 0-999 and 15000-15999."""
    if VALKEY_SERVER is None:
        pytest.skip("valkey-server is not installed")
    ports = cluster_ports(2)
    procs = []
    try:
        partial = ["--cluster-require-full-coverage", "no"]
        procs.append(ophidis(ports[0], extra=partial))
        procs.append(valkey(ports[1], extra=partial))
        for p in procs:
            p.client().execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 999, 15000, 15999)
        for p in procs:
            wait_until(lambda: b"cluster_state:ok" in p.conn().call_value("CLUSTER", "INFO"), 30,
                       what="cluster_state:ok")
        yield procs
    finally:
        stop_all(procs)


def _key_in(slot: int, tag="k") -> str:
    i = 0
    while key_hash_slot(("%s%d" % (tag, i)).encode()) != slot:
        i += 1
    return "%s%d" % (tag, i)


ERRORS = [
    ["CLUSTER", "SLOT-STATS"], ["CLUSTER", "SLOT-STATS", "SLOTSRANGE"],
    ["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "1"], ["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "1", "2", "3"],
    ["CLUSTER", "SLOT-STATS", "slotsrange", "5", "2"], ["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "-1", "2"],
    ["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "16384"], ["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "a", "2"],
    ["CLUSTER", "SLOT-STATS", "ORDERBY", "foo"], ["CLUSTER", "SLOT-STATS", "ORDERBY", "cpu-usec"],
    ["CLUSTER", "SLOT-STATS", "ORDERBY", "network-bytes-in"],
    ["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "0"],
    ["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "16385"],
    ["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "x"],
    ["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT"],
    ["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "ASC", "DESC"],
    ["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "1", "LIMIT", "2"],
    ["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "BOGUS"],
    ["CLUSTER", "SLOT-STATS", "FOO", "1", "2"], ["CLUSTER", "slot-stats", "foo", "bar"],
]


def test_slot_stats_errors_as_valkey(stats_pair):
    ours, theirs = stats_pair
    same_replies(ours.port, theirs.port, ERRORS)


def _entries(proc, *args, protocol=3):
    """[(slot, {metric: value})] of CLUSTER SLOT-STATS args."""
    out = []
    for slot, metrics in proc.client(protocol=protocol).execute_command("CLUSTER", "SLOT-STATS", *args):
        if isinstance(metrics, list):
            metrics = dict(zip(metrics[::2], metrics[1::2]))
        out.append((slot, {k.decode(): v for k, v in metrics.items()}))
    return out


def test_slot_stats_key_count_as_valkey(stats_pair):
    """key-count by SLOTSRANGE and ORDERBY (ties: the lower slot first),
    only the slots of our shard, as valkey-server; Redis 8's memory-bytes
    beside it."""
    ours, theirs = stats_pair
    setup = []
    for slot, n in ((3, 2), (7, 5), (999, 2), (15000, 1), (15999, 5)):
        for i in range(n):
            setup.append(["SET", "{%s}%d" % (_key_in(slot), i), "v" * 10])
    for p in stats_pair:
        p.client().flushall()
        for argv in setup:
            p.client().execute_command(*argv)
    queries = [("SLOTSRANGE", 0, 9), ("SLOTSRANGE", 995, 15001), ("SLOTSRANGE", 1000, 14999),
               ("ORDERBY", "key-count"), ("ORDERBY", "KEY-COUNT", "LIMIT", 4),
               ("ORDERBY", "key-count", "LIMIT", 3, "ASC"), ("ORDERBY", "key-count", "DESC", "LIMIT", 16384)]
    for q in queries:
        for proto in (2, 3):
            mine = _entries(ours, *q, protocol=proto)
            ref = _entries(theirs, *q, protocol=proto)
            assert [(s, m["key-count"]) for s, m in mine] == [(s, m["key-count"]) for s, m in ref], q
            assert all(list(m) == ["key-count", "memory-bytes"] for _, m in mine), q
            assert all((m["memory-bytes"] > 0) == (m["key-count"] > 0) for _, m in mine), q
    top = _entries(ours, "ORDERBY", "key-count", "LIMIT", 5)
    assert [(s, m["key-count"]) for s, m in top] == [(7, 5), (15999, 5), (3, 2), (999, 2), (15000, 1)]
    assert len(_entries(ours, "ORDERBY", "key-count")) == 2000


def test_slot_stats_accumulated_metrics(stats_pair):
    """With cluster-slot-stats-enabled: cpu-usec, network-bytes-in (the
    requests; a transaction's queued commands when queued, MULTI with its
    EXEC) and network-bytes-out (the replies) of the commands of one slot;
    keyless commands count nowhere.  The bytes as valkey-server counts them
    (but the replies of a transaction, where Valkey counts more than it
    sends)."""
    results = []
    key = "{%s}" % _key_in(15500)
    for p in stats_pair:
        c = p.client()
        c.flushall()
        c.config_set("cluster-slot-stats-enabled", "yes")
        try:
            with RespConn(p.port) as r:
                r.call("SET", key, "hello")
                r.call("GET", key)
                r.call("PING")
                one = _entries(p, "SLOTSRANGE", 15500, 15500, protocol=2)[0][1]
                assert r.call("MULTI") == b"+OK\r\n"
                assert r.call("INCR", key + "n") == b"+QUEUED\r\n"
                assert r.call("EXEC") == b"*1\r\n:1\r\n"
                two = _entries(p, "SLOTSRANGE", 15500, 15500, protocol=2)[0][1]
            results.append((one, two))
            orderby = _entries(p, "ORDERBY", "network-bytes-in", "LIMIT", 2)
            assert [s for s, _ in orderby] == [15500, 0]
            assert _entries(p, "ORDERBY", "cpu-usec", "LIMIT", 1)[0][0] == 15500
        finally:
            c.config_set("cluster-slot-stats-enabled", "no")
    (one, two), (ref_one, ref_two) = results
    assert list(one) == ["key-count", "memory-bytes", "cpu-usec", "network-bytes-in", "network-bytes-out"]
    assert one["cpu-usec"] > 0 and one["key-count"] == 1 and two["key-count"] == 2
    set_in = len("*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$5\r\nhello\r\n" % (len(key), key))
    get_in = len("*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(key), key))
    incr_in = len("*2\r\n$4\r\nINCR\r\n$%d\r\n%sn\r\n" % (len(key) + 1, key))
    assert one["network-bytes-in"] == ref_one["network-bytes-in"] == set_in + get_in
    assert one["network-bytes-out"] == ref_one["network-bytes-out"] == len("+OK\r\n$5\r\nhello\r\n")
    assert two["network-bytes-in"] == ref_two["network-bytes-in"] == set_in + get_in + incr_in + 15 + 14
    assert two["network-bytes-out"] == one["network-bytes-out"] + len("*1\r\n:1\r\n")
    # off again: only the two metrics of every reply
    assert list(_entries(stats_pair[0], "SLOTSRANGE", 15500, 15500)[0][1]) == ["key-count", "memory-bytes"]


def test_slot_stats_is_reset_when_a_slot_goes(stats_pair):
    ours = stats_pair[0]
    c = ours.client()
    c.config_set("cluster-slot-stats-enabled", "yes")
    try:
        c.flushall()
        c.set("{%s}" % _key_in(999), "x")
        assert _entries(ours, "SLOTSRANGE", 999, 999)[0][1]["network-bytes-in"] > 0
        c.flushall()
        c.execute_command("CLUSTER", "DELSLOTS", 999)
        assert _entries(ours, "SLOTSRANGE", 999, 999) == []
        c.execute_command("CLUSTER", "ADDSLOTS", 999)
        assert _entries(ours, "SLOTSRANGE", 999, 999)[0][1]["network-bytes-in"] == 0
        # CONFIG RESETSTAT resets them all; turning the switch off and on does not
        c.set("{%s}" % _key_in(999), "x")
        c.config_set("cluster-slot-stats-enabled", "no")
        c.config_set("cluster-slot-stats-enabled", "yes")
        assert _entries(ours, "SLOTSRANGE", 999, 999)[0][1]["network-bytes-in"] > 0
        c.config_resetstat()
        assert _entries(ours, "SLOTSRANGE", 999, 999)[0][1]["network-bytes-in"] == 0
    finally:
        c.config_set("cluster-slot-stats-enabled", "no")
        wait_until(lambda: b"cluster_state:ok" in ours.conn().call_value("CLUSTER", "INFO"), 30,
                   what="cluster_state:ok")


def test_slot_stats_with_redis_py(stats_pair):
    """redis-py's own reading of the reply (RESP2 and RESP3)."""
    ours = stats_pair[0]
    for proto in (2, 3):
        r = redis.Redis(port=ours.port, protocol=proto)
        reply = r.execute_command("CLUSTER", "SLOT-STATS", "SLOTSRANGE", 0, 1)
        assert [e[0] for e in reply] == [0, 1]
        r.close()


def test_shards_after_a_failover():
    """A manual failover inside a shard: the shard keeps its id, its
    nodes swap roles, the slots follow the new master, on every node."""
    ports = cluster_ports(3)
    procs = []
    try:
        for p in ports:
            procs.append(ophidis(p))
        a, b, c = procs
        a.client().execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 8191)
        c.client().execute_command("CLUSTER", "ADDSLOTSRANGE", 8192, 16383)
        for p in (b, c):
            a.client().execute_command("CLUSTER", "MEET", "127.0.0.1", p.port)
        wait_until(lambda: all(len(nodes(p)) == 3 and all("handshake" not in f[2] for f in nodes(p).values())
                               for p in procs), 60, interval=0.2, what="every node knows every other")
        ida, idb, idc = myid(a), myid(b), myid(c)
        b.client().execute_command("CLUSTER", "REPLICATE", ida)
        shard = shardid(a)
        assert shardid(b) == shard
        want = {frozenset([ida, idb]), frozenset([idc])}
        wait_until(lambda: all(shard_groups(p) == want for p in procs), 30, interval=0.2,
                   what="two shards on every node")
        wait_until(lambda: b.client().info("replication")["master_link_status"] == "up", 30,
                   what="B in sync")
        b.client().execute_command("CLUSTER", "FAILOVER")

        def swapped(p):
            view = nodes(p)
            return ("master" in view[idb][2] and view[idb][8:] == ["0-8191"]
                    and "slave" in view[ida][2] and view[ida][3] == idb.decode())
        wait_until(lambda: all(swapped(p) for p in procs), 60, interval=0.2, what="B the master everywhere")
        assert shardid(a) == shardid(b) == shard
        wait_until(lambda: all(shard_groups(p) == want for p in procs), 30, interval=0.2,
                   what="still two shards")
        shards = {frozenset(n[b"id"] for n in s[b"nodes"]): s
                  for s in c.client(protocol=3).execute_command("CLUSTER", "SHARDS")}
        ab = shards[frozenset([ida, idb])]
        assert ab[b"slots"] == [0, 8191]
        assert [(n[b"id"], n[b"role"]) for n in ab[b"nodes"]] == [(idb, b"master"), (ida, b"replica")]
    finally:
        stop_all(procs)


def test_redis72_routing_failure_marking_and_shard_channels():
    """M (every slot) and its replica R: SPUBLISH inside MULTI on the
    replica (7.2: the transaction routes as sharded pub/sub); the only
    master marks a stopped replica failed by itself (no other master to
    report it).  Then B (a master without slots) joins: R made a replica
    of B drops the shard channels B does not serve, telling its
    subscribers."""
    ports = cluster_ports(3)
    procs = []
    stopped = None
    try:
        for p in ports:
            procs.append(ophidis(p))
        m, r, b = procs
        m.client().execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
        m.client().execute_command("CLUSTER", "MEET", "127.0.0.1", r.port)
        wait_until(lambda: all(len(nodes(p)) == 2 and all("handshake" not in f[2] for f in nodes(p).values())
                               for p in (m, r)), 60, interval=0.2, what="M and R know each other")
        idm, idr, idb = myid(m), myid(r), myid(b)
        r.client().execute_command("CLUSTER", "REPLICATE", idm)
        wait_until(lambda: r.client().info("replication")["master_link_status"] == "up", 30, what="R in sync")
        wait_until(lambda: b"cluster_state:ok" in r.conn().call_value("CLUSTER", "INFO"), 30, what="R ok")
        slot = key_hash_slot(b"foo")
        with r.conn() as c:
            assert c.call("MULTI") == b"+OK\r\n"
            assert c.call("SPUBLISH", "foo", "hello") == b"+QUEUED\r\n"
            assert c.call("EXEC") == b"*1\r\n:0\r\n"
            assert c.call("MULTI") == b"+OK\r\n"
            assert c.call("SPUBLISH", "foo", "hello") == b"+QUEUED\r\n"
            assert c.call("GET", "foo") == b"-MOVED %d 127.0.0.1:%d\r\n" % (slot, m.port)
            assert c.call("EXEC") == b"-EXECABORT Transaction discarded because of previous errors.\r\n"
        # a subscriber on R of a channel of M's slots
        sub = r.conn()
        assert sub.call("SSUBSCRIBE", "foo") == b"*3\r\n$10\r\nssubscribe\r\n$3\r\nfoo\r\n:1\r\n"
        # the only master with slots marks R failed alone (7.2)
        os.kill(r.pid, signal.SIGSTOP)
        stopped = r
        wait_until(lambda: "fail" in nodes(m)[idr][2].split(","), 30, interval=0.2, what="R marked fail by M")
        os.kill(r.pid, signal.SIGCONT)
        stopped = None
        wait_until(lambda: "fail" not in nodes(m)[idr][2].split(","), 30, interval=0.2, what="R back")
        # R follows B now: M's slots are not B's, the subscription ends
        m.client().execute_command("CLUSTER", "MEET", "127.0.0.1", b.port)
        wait_until(lambda: idb in nodes(r) and "master" in nodes(r)[idb][2] and "handshake" not in nodes(r)[idb][2],
                   30, what="R sees B")
        assert r.client().execute_command("CLUSTER", "REPLICATE", idb) == b"OK"
        assert sub.read() == b"*3\r\n$12\r\nsunsubscribe\r\n$3\r\nfoo\r\n:0\r\n"
        sub.close()
    finally:
        if stopped is not None:
            os.kill(stopped.pid, signal.SIGCONT)
        stop_all(procs)
