"""ophidis-benchmark: a load generator compatible with redis-benchmark 7.0.

``ophidis-benchmark [OPTIONS] [COMMAND ARGS...]`` runs redis-benchmark's
default suite (or the given command) and prints the same reports.
``ophidis-benchmark memtier [OPTIONS]`` runs a memtier_benchmark-like mixed
SET/GET workload (see ``memtier.py``).

Load generation: the clients of one run are spread over worker processes
(``--threads N``, one process when not given), each running an asyncio event
loop (uvloop when available) with one protocol object per connection.  A
client writes its whole pipeline (-P) with one write from a pre-built buffer
(re-rendered only when ``__rand_int__`` placeholders need new numbers),
parses replies with hiredis and records one latency per batch.  Workers
publish progress through shared memory and send their latency counts to the
parent at the end.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import random
import signal
import sys
import time
import types
from multiprocessing import connection as mp_connection

import hiredis

from ophidis.protocol.resp import encode_argv
from ophidis.sysinfo import REDIS_VERSION
from ophidis.tools import memtier, resp
from ophidis.tools.defaults import Defaults
from ophidis.tools.hashslot import tag_for_slot
from ophidis.tools.hdr import Histogram
from ophidis.tools.resp import atoi, new_loop, parse_redis_uri

RAND_PLACEHOLDER = b"__rand_int__"
MAX_THREADS = 500


class Options(Defaults):
    DEFAULTS = {
        "host": "127.0.0.1", "port": 6379, "socket": None, "auth": None, "user": None, "dbnum": 0,
        "clients": 50, "requests": 100000, "datasize": 3, "keepalive": 1, "pipeline": 1,
        "randomkeys": False, "keyspacelen": 0, "tests": None, "threads": 0, "seed": None,
        "quiet": False, "csv": False, "loop": False, "idle": False, "precision": 3,
        "resp3": False, "stdinarg": False, "cluster": False,
        "cluster_nodes": None,    # [ClusterNode] of the masters in cluster mode
    }


def usage(code=0):
    p = "ophidis-benchmark"
    (sys.stderr if code else sys.stdout).write("""Usage: %(p)s [OPTIONS] [COMMAND ARGS...]

Options:
 -h <hostname>      Server hostname (default 127.0.0.1)
 -p <port>          Server port (default 6379)
 -s <socket>        Server socket (overrides host and port)
 -a <password>      Password for Redis Auth
 --user <username>  Used to send ACL style 'AUTH username pass'. Needs -a.
 -u <uri>           Server URI: redis://[[user]:password@]host[:port][/db]
 -c <clients>       Number of parallel connections (default 50)
 -n <requests>      Total number of requests (default 100000)
 -d <size>          Data size of SET/GET value in bytes (default 3)
 --dbnum <db>       SELECT the specified db number (default 0)
 -3                 Start session in RESP3 protocol mode.
 --threads <num>    Enable multi-thread mode (worker processes here).
 --cluster          Enable cluster mode.
                    If the command is supplied on the command line in cluster
                    mode, the key must contain "{tag}". Otherwise, the
                    command will not be sent to the right cluster node.
 -k <boolean>       1=keep alive 0=reconnect (default 1)
 -r <keyspacelen>   Use random keys for SET/GET/INCR, random values for SADD,
                    random members and scores for ZADD.
                    Using this option the benchmark will expand the string
                    __rand_int__ inside an argument with a 12 digits number in
                    the specified range from 0 to keyspacelen-1.
 -P <numreq>        Pipeline <numreq> requests. Default 1 (no pipeline).
 -q                 Quiet. Just show query/sec values
 --precision        Number of decimal places to display in latency output (default 0)
 --csv              Output in CSV format
 -l                 Loop. Run the tests forever
 -t <tests>         Only run the comma separated list of tests. The test
                    names are the same as the ones produced as output.
 -I                 Idle mode. Just open N idle connections and wait.
 -x                 Read last argument from STDIN.
%(tls)s --seed <num>       Seed of the random generator (__rand_int__ values).
 -e                 (no effect: errors always stop the benchmark)
 --help             Output this help and exit.
 --version          Output version and exit.

Subcommand:
 %(p)s memtier --help   memtier_benchmark-like mixed workload.

Examples:

 Run the benchmark with the default configuration against 127.0.0.1:6379:
   $ %(p)s

 Use 20 parallel clients, for a total of 100k requests, against 192.168.1.1:
   $ %(p)s -h 192.168.1.1 -p 6379 -n 100000 -c 20

 Fill 127.0.0.1:6379 with about 1 million keys only using the SET test:
   $ %(p)s -t set -n 1000000 -r 100000000

 Benchmark 127.0.0.1:6379 for a few commands producing CSV output:
   $ %(p)s -t ping,set,get -n 100000 --csv

 Benchmark a specific command line:
   $ %(p)s -r 10000 -n 10000 eval 'return redis.call("ping")' 0

 Fill a list with 10000 random elements:
   $ %(p)s -r 10000 -n 10000 lpush mylist __rand_int__

 On user specified command lines __rand_int__ is replaced with a random integer
 with a range of values selected by the -r option.
""" % {"p": p, "tls": "".join(line[1:] + "\n" for line in resp.TLS.HELP.splitlines())})
    sys.exit(code)


def parse_options(argv, o: Options):
    i = 0
    n = len(argv)

    def need():
        if i + 1 >= n:
            sys.stderr.write("Invalid option \"%s\" or option argument missing\n\n" % argv[i])
            usage(1)
        return argv[i + 1]

    while i < n:
        a = argv[i]
        j = resp.TLS.parse(argv, i)
        if j is not None:
            i = j
        elif a == "-c":
            o.clients = atoi(need()); i += 1
        elif a in ("-v", "--version"):
            print("ophidis-benchmark %s" % REDIS_VERSION)
            sys.exit(0)
        elif a == "-n":
            o.requests = atoi(need()); i += 1
        elif a == "-k":
            o.keepalive = atoi(need()); i += 1
        elif a == "-h":
            o.host = need(); i += 1
        elif a == "-p":
            o.port = atoi(need()); i += 1
        elif a == "-s":
            o.socket = need(); i += 1
        elif a == "-x":
            o.stdinarg = True
        elif a == "-a":
            o.auth = need(); i += 1
        elif a == "--user":
            o.user = need(); i += 1
        elif a == "-u":
            c = types.SimpleNamespace(host=o.host, port=o.port, auth=None, user=None, input_dbnum=0)
            parse_redis_uri(need(), c)
            o.host, o.port, o.auth, o.user, o.dbnum = c.host, c.port, c.auth, c.user, c.input_dbnum
            i += 1
        elif a == "-3":
            o.resp3 = True
        elif a == "-d":
            o.datasize = max(1, min(1024 * 1024 * 1024, atoi(need()))); i += 1
        elif a == "-P":
            o.pipeline = max(1, atoi(need())); i += 1
        elif a == "-r":
            nxt = need()
            if not nxt or not (nxt[0].isdigit() or nxt[0] == "-"):
                sys.stderr.write("Invalid option \"%s\" or option argument missing\n\n" % a)
                usage(1)
            o.randomkeys = True
            o.keyspacelen = max(0, atoi(nxt)); i += 1
        elif a == "-q":
            o.quiet = True
        elif a == "--csv":
            o.csv = True
        elif a == "-l":
            o.loop = True
        elif a == "-I":
            o.idle = True
        elif a == "-e":
            sys.stderr.write("WARNING: -e option has no effect. "
                             "We now immediately exit on error to avoid false results.\n")
        elif a == "-t":
            o.tests = "," + need().lower() + ","; i += 1
        elif a == "--dbnum":
            o.dbnum = atoi(need()); i += 1
        elif a == "--precision":
            p = atoi(need()); i += 1
            o.precision = 3 if p < 0 else min(p, 5)
        elif a == "--threads":
            t = atoi(need()); i += 1
            if t > MAX_THREADS:
                sys.stderr.write("WARNING: Too many threads, limiting threads to %d.\n" % MAX_THREADS)
                t = MAX_THREADS
            o.threads = max(0, t)
        elif a == "--seed":
            o.seed = atoi(need()); i += 1
        elif a == "--cluster":
            o.cluster = True
        elif a == "--help":
            usage(0)
        elif a.startswith("-"):
            sys.stderr.write("Invalid option \"%s\" or option argument missing\n\n" % a)
            usage(1)
        else:
            break
        i += 1
    return i


# ---------------------------------------------------------------------------
# Cluster mode
# ---------------------------------------------------------------------------
TAG_PLACEHOLDER = b"{tag}"


class ClusterNode:
    """A master of the cluster: where its clients connect, and its slots
    (the keys' ``{tag}`` is the first slot's tag, as redis-benchmark's)."""

    def __init__(self, ip, port, name=None):
        self.ip, self.port, self.name = ip, port, name
        self.slots = []
        self.version = 0
        self.config = None

    def tag(self) -> bytes:
        """The 5 bytes replacing ``{tag}``: the tag padded with '}'."""
        t = tag_for_slot(self.slots[0])
        return b"{" + t + b"}" * (4 - len(t))


def fetch_cluster_nodes(o):
    """The masters with slots, from CLUSTER NODES of -h/-p (None on errors,
    after redis-benchmark's messages)."""
    try:
        conn = resp.Connection(o.host, o.port, unix=o.socket, timeout=5)
    except OSError as e:
        where = o.socket or "%s:%d" % (o.host, o.port)
        sys.stderr.write("Could not connect to Redis at %s: %s\n" % (where, e.strerror or e))
        sys.exit(1)
    try:
        if o.auth is not None:
            conn.command(*(["AUTH", o.user, o.auth] if o.user else ["AUTH", o.auth]))
        r = conn.command("CLUSTER", "NODES")
    except (OSError, resp.ConnectionClosed):
        return None
    finally:
        conn.close()
    if r.is_error:
        where = o.socket or "%s:%d" % (o.host, o.port)
        sys.stderr.write("Cluster node %s replied with error:\n%s\n" % (where, r.value.decode(errors="replace")))
        return None
    nodes = []
    for line in r.value.decode(errors="replace").split("\n")[:-1]:
        f = line.split(" ")
        if len(f) < 3:
            sys.stderr.write("Invalid CLUSTER NODES reply: missing flags.\n")
            return None
        if "slave" in f[2] or (len(f) > 3 and not f[3].startswith("-")):
            continue
        ip, _, port = f[1].rpartition(":")
        port = atoi(port.split("@")[0])
        if "myself" in f[2]:
            node = ClusterNode(o.host, o.port, f[0])
            if ip and ip != o.host:
                node.ip, node.port = ip, port
        else:
            node = ClusterNode(ip, port, f[0])
        for d in f[8:]:
            if not d or d.startswith("["):
                continue
            a, _, b = d.partition("-")
            node.slots.extend(range(atoi(a), atoi(b) + 1) if b else [atoi(a)])
        if not node.slots:
            sys.stderr.write("WARNING: Master node %s:%d has no slots, skipping...\n" % (node.ip, node.port))
            continue
        nodes.append(node)
    return nodes


def fetch_cluster_slots(o, nodes):
    """Update the nodes' slots from CLUSTER SLOTS (after a MOVED/ASK)."""
    sys.stderr.write("WARNING: Cluster slots configuration changed, fetching new one...\n")
    errmsg = "Failed to update cluster slots configuration"
    first = nodes[0]
    try:
        conn = resp.Connection(first.ip, first.port, timeout=5)
        try:
            if o.auth is not None:
                conn.command(*(["AUTH", o.user, o.auth] if o.user else ["AUTH", o.auth]))
            r = conn.command("CLUSTER", "SLOTS")
        finally:
            conn.close()
    except (OSError, resp.ConnectionClosed):
        return False
    if r.is_error:
        sys.stderr.write("%s\nCLUSTER SLOTS ERROR: %s\n" % (errmsg, r.value.decode(errors="replace")))
        return False
    by_name = {n.name: n for n in nodes}
    updated = {}
    for rng in r.value:
        name = rng.value[2].value[2].value.decode(errors="replace")
        if name not in by_name:
            sys.stderr.write("%s: could not find node with ID %s in current configuration.\n" % (errmsg, name))
            return False
        updated.setdefault(name, []).extend(range(rng.value[0].value, rng.value[1].value + 1))
    for n in nodes:
        if n.name in updated:
            n.slots = updated[n.name]
            n.version += 1
    return True


# ---------------------------------------------------------------------------
# Request rendering
# ---------------------------------------------------------------------------
class RequestTemplate:
    """A pipeline of the same command, with __rand_int__ placeholders
    re-rendered per batch when -r is given."""

    def __init__(self, cmd: bytes, pipeline: int, randomkeys: bool, keyspacelen: int, rng):
        self.cmd = cmd
        self.pipeline = pipeline
        self.keyspacelen = keyspacelen
        self.rng = rng
        self.parts = cmd.split(RAND_PLACEHOLDER) if randomkeys else [cmd]
        self.static = len(self.parts) == 1
        self.full = cmd * pipeline

    def batch(self, k):
        if self.static:
            return self.full if k == self.pipeline else self.cmd * k
        parts = self.parts
        ks = self.keyspacelen
        rnd = self.rng.random
        pieces = []
        append = pieces.append
        for _ in range(k):
            append(parts[0])
            for p in parts[1:]:
                append(b"%012d" % (int(rnd() * ks) if ks else 0))
                append(p)
        return b"".join(pieces)


# ---------------------------------------------------------------------------
# Worker process
# ---------------------------------------------------------------------------
class BenchError(Exception):
    pass


class Worker:
    def __init__(self, opts, cmd, nclients, quota, seed, first_client=0, idx=0):
        self.o = opts
        self.cmd = cmd
        self.first_client = first_client
        self.idx = idx
        self.connected = 0
        self.nclients = nclients
        self.remaining = quota          # requests still to issue
        self.finished = 0
        self.lat = {}                   # latency us -> count
        self.lat_sum = 0
        self.lat_cnt = 0
        self.tmpl = RequestTemplate(cmd, opts.pipeline, opts.randomkeys, opts.keyspacelen,
                                    random.Random(seed))
        self.prefix = b""
        self.prefix_n = 0
        if opts.auth is not None:
            self.prefix += encode_argv(["AUTH", opts.user, opts.auth] if opts.user else ["AUTH", opts.auth])
            self.prefix_n += 1
        if opts.dbnum:
            self.prefix += encode_argv(["SELECT", str(opts.dbnum)])
            self.prefix_n += 1
        if opts.resp3:
            self.prefix += encode_argv(["HELLO", "3"])
            self.prefix_n += 1
        self.live = 0
        self.done = None
        self.error = None
        self.loop = None
        self.keepalive = bool(opts.keepalive)

    def client_node(self):
        """The cluster node of the next client (redis-benchmark's choice:
        by thread when there are enough threads, else by client)."""
        o = self.o
        nodes = o.cluster_nodes
        if o.threads < len(nodes):
            return nodes[(self.first_client + self.connected) % len(nodes)]
        return nodes[self.idx % len(nodes)]

    def cluster_template(self, node):
        o = self.o
        return RequestTemplate(self.cmd.replace(TAG_PLACEHOLDER, node.tag()), o.pipeline, o.randomkeys,
                               o.keyspacelen, self.tmpl.rng)

    def cluster_error(self, c, e):
        """An error reply in cluster mode: MOVED/ASK/CLUSTERDOWN refresh the
        slots when the keys carry the {tag} (True: go on), else fail."""
        msg = str(e)
        node = c.node
        if TAG_PLACEHOLDER in self.cmd:
            if msg.startswith("CLUSTERDOWN"):
                sys.stderr.write("Error from server %s:%d: %s.\n" % (node.ip, node.port, msg))
                time.sleep(1)
            elif not (msg.startswith("MOVED") or msg.startswith("ASK")):
                self.fail("Error from server %s:%d: %s" % (node.ip, node.port, msg))
                return False
            if not fetch_cluster_slots(self.o, self.o.cluster_nodes):
                self.fail("")
                return False
            return True
        self.fail("Error from server %s:%d: %s" % (node.ip, node.port, msg))
        return False

    async def connect_one(self):
        o = self.o
        loop = self.loop
        node = self.client_node() if o.cluster else None
        self.connected += 1
        if node is not None:
            _t, p = await loop.create_connection(lambda: BenchClient(self), node.ip, node.port,
                                                 **resp.TLS.connect_kwargs(node.ip))
            p.node = node
            p.tmpl = self.cluster_template(node)
            p.node_version = node.version
        elif o.socket:
            _t, p = await loop.create_unix_connection(lambda: BenchClient(self), o.socket)
        else:
            _t, p = await loop.create_connection(lambda: BenchClient(self), o.host, o.port,
                                                 **resp.TLS.connect_kwargs(o.host))
        if self.prefix_n:
            p.prefix_wait = loop.create_future()
            p.pending = self.prefix_n
            p.t.write(self.prefix)
            await p.prefix_wait
        return p

    def fail(self, msg):
        if self.error is None:
            self.error = msg
        if self.done is not None and not self.done.done():
            self.done.set_result(None)

    def client_finished(self, c):
        self.live -= 1
        if self.live <= 0 and self.done is not None and not self.done.done():
            self.done.set_result(None)


class BenchClient(asyncio.Protocol):
    __slots__ = ("w", "t", "reader", "pending", "batch", "start", "latency", "prefix_wait", "tmpl", "node",
                 "node_version")

    def __init__(self, w):
        self.w = w
        self.tmpl = w.tmpl
        self.node = None
        self.node_version = 0
        self.t = None
        self.reader = hiredis.Reader()
        self.pending = 0
        self.batch = 0
        self.start = 0
        self.latency = -1
        self.prefix_wait = None

    def connection_made(self, t):
        self.t = t

    def connection_lost(self, exc):
        w = self.w
        if self.pending and w.done is not None and not w.done.done():
            w.fail("Error: Server closed the connection")
        if self.prefix_wait is not None and not self.prefix_wait.done():
            self.prefix_wait.set_exception(ConnectionError("Server closed the connection"))

    def send(self):
        w = self.w
        r = w.remaining
        if r <= 0:
            self.t.close()
            self.pending = 0
            w.client_finished(self)
            return
        k = w.o.pipeline
        if k > r:
            k = r
        w.remaining = r - k
        self.pending = self.batch = k
        self.latency = -1
        self.start = time.perf_counter_ns()
        self.t.write(self.tmpl.batch(k))

    def data_received(self, data, _now=time.perf_counter_ns, _err=hiredis.ReplyError):
        # The hot path: one call per read.  Latency is taken at the first
        # read of a batch (as redis-benchmark does), replies are counted with
        # hiredis, and the next batch is written at once.
        if self.latency < 0:
            self.latency = (_now() - self.start) // 1000
        reader = self.reader
        reader.feed(data)
        gets = reader.gets
        pending = self.pending
        n = 0
        while n < pending:
            x = gets()
            if x is False:
                break
            if x.__class__ is _err:
                if self.prefix_wait is not None and not self.prefix_wait.done():
                    self.prefix_wait.set_exception(BenchError("Error from server: %s" % x))
                    return
                if self.node is None:
                    self.w.fail("Error from server: %s" % x)
                    return
                if not self.w.cluster_error(self, x):
                    return
            n += 1
        pending -= n
        self.pending = pending
        if pending > 0 or not n:
            return
        if self.prefix_wait is not None:
            if not self.prefix_wait.done():
                self.prefix_wait.set_result(None)
            self.prefix_wait = None
            return
        w = self.w
        lat = self.latency
        b = self.batch
        d = w.lat
        d[lat] = d.get(lat, 0) + b
        w.finished += b
        w.lat_sum += lat * b
        w.lat_cnt += b
        r = w.remaining
        if r <= 0 or not w.keepalive:
            if r > 0:
                self.t.close()
                w.live -= 1
                w.loop.create_task(_reconnect(w))
            else:
                self.send()
            return
        node = self.node
        if node is not None and node.version != self.node_version:
            self.tmpl = w.cluster_template(node)
            self.node_version = node.version
        tmpl = self.tmpl
        k = tmpl.pipeline
        if k > r:
            k = r
        w.remaining = r - k
        self.pending = self.batch = k
        self.latency = -1
        self.start = _now()
        self.t.write(tmpl.full if (tmpl.static and k == tmpl.pipeline) else tmpl.batch(k))


async def _reconnect(w):
    try:
        p = await w.connect_one()
    except Exception as e:   # noqa: BLE001
        w.fail("Error: %s" % e)
        return
    w.live += 1
    p.send()


def worker_main(idx, opts, cmd, nclients, quota, seed, shared, ready, go, conn, first_client=0):
    """Entry point of a worker process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    loop = new_loop()
    asyncio.set_event_loop(loop)
    w = Worker(opts, cmd, nclients, quota, seed, first_client, idx)
    w.loop = loop
    clients = []
    try:
        async def connect_all():
            for _ in range(nclients):
                clients.append(await w.connect_one())
        loop.run_until_complete(connect_all())
    except Exception as e:   # noqa: BLE001
        msg = str(e)
        if isinstance(e, OSError):
            where = opts.socket or "%s:%d" % (opts.host, opts.port)
            msg = "Could not connect to Redis at %s: %s" % (where, e.strerror or e)
        conn.send(("error", msg))
        ready.release()
        return
    ready.release()
    go.wait()
    if opts.idle:
        loop.run_forever()
        return
    base = idx * 4

    def publish():
        shared[base] = w.finished
        shared[base + 1] = w.lat_sum
        shared[base + 2] = w.lat_cnt
        if not w.done.done():
            loop.call_later(0.05, publish)

    w.done = loop.create_future()
    w.live = len(clients)
    if not clients:
        w.done.set_result(None)
    for c in clients:
        c.send()
    loop.call_later(0.05, publish)
    loop.run_until_complete(w.done)
    end = time.monotonic()
    shared[base] = w.finished
    shared[base + 1] = w.lat_sum
    shared[base + 2] = w.lat_cnt
    shared[base + 3] = 1
    if w.error:
        conn.send(("error", w.error))
    else:
        conn.send(("ok", w.finished, end, w.lat))
    for c in clients:
        if c.t is not None:
            c.t.close()
    loop.run_until_complete(asyncio.sleep(0))
    loop.close()


# ---------------------------------------------------------------------------
# Running one benchmark
# ---------------------------------------------------------------------------
class Runner:
    def __init__(self, opts: Options):
        self.o = opts
        self.ctx = mp.get_context("fork")
        self.redis_config = None
        self.seed_rng = random.Random(opts.seed)

    def fetch_config(self, host=None, port=None):
        """CONFIG GET save / appendonly, as redis-benchmark shows them (of
        -h/-p, or of host:port)."""
        o = self.o
        try:
            if host is None:
                conn = resp.Connection(o.host, o.port, unix=o.socket, timeout=5)
            else:
                conn = resp.Connection(host, port, timeout=5)
        except OSError:
            return None
        try:
            conn.sock.settimeout(5)
            if o.auth is not None:
                conn.command(*(["AUTH", o.user, o.auth] if o.user else ["AUTH", o.auth]))
            vals = []
            for name in ("save", "appendonly"):
                r = conn.command("CONFIG", "GET", name)
                if r.kind != resp.ARRAY or len(r.value) < 2:
                    return None
                vals.append(r.value[1].value.decode(errors="replace"))
            return {"save": vals[0], "appendonly": vals[1]}
        except (OSError, resp.ConnectionClosed):
            return None
        finally:
            conn.close()

    def run(self, title, cmd):
        o = self.o
        nworkers = o.threads if o.threads else 1
        nworkers = max(1, min(nworkers, o.clients)) if o.clients > 0 else 1
        # Spread clients and requests over the workers.
        per_clients = [o.clients // nworkers + (1 if i < o.clients % nworkers else 0) for i in range(nworkers)]
        total = o.requests
        quotas = [total * c // o.clients if o.clients else 0 for c in per_clients]
        quotas[0] += total - sum(quotas)
        shared = self.ctx.Array("q", 4 * nworkers, lock=False)
        ready = self.ctx.Semaphore(0)
        go = self.ctx.Event()
        pipes = []
        procs = []
        for i in range(nworkers):
            a, b = self.ctx.Pipe(duplex=False)
            p = self.ctx.Process(target=worker_main,
                                 args=(i, o, cmd, per_clients[i], quotas[i],
                                       self.seed_rng.getrandbits(64), shared, ready, go, b,
                                       sum(per_clients[:i])),
                                 daemon=True)
            p.start()
            b.close()
            procs.append(p)
            pipes.append(a)
        for _ in range(nworkers):
            ready.acquire()
        # Fail early on connection errors.
        for a in pipes:
            if a.poll():
                msg = a.recv()
                if msg[0] == "error":
                    go.set()
                    for p in procs:
                        p.terminate()
                    if msg[1]:
                        sys.stderr.write(msg[1] + "\n")
                    sys.exit(1)
        if o.idle:
            sys.stdout.write("Creating %d idle connections and waiting forever (Ctrl+C when done)\n" % o.clients)
            sys.stdout.flush()
            go.set()
            try:
                while True:
                    sys.stdout.write("clients: %d\r" % o.clients)
                    sys.stdout.flush()
                    time.sleep(0.25)
            except KeyboardInterrupt:
                for p in procs:
                    p.terminate()
                sys.exit(0)
        start = time.monotonic()
        go.set()
        last_printed = 0
        prev_tick = start
        prev_fin = prev_sum = prev_cnt = 0
        results = [None] * nworkers
        show = not o.csv
        next_tick = start + 0.25
        while True:
            alive = False
            for i, a in enumerate(pipes):
                if results[i] is None and a.poll(0):
                    results[i] = a.recv()
                    if results[i][0] == "error":
                        for p in procs:
                            p.terminate()
                        sys.stdout.flush()
                        if results[i][1]:
                            sys.stderr.write(results[i][1] + "\n")
                        sys.exit(1)
                if results[i] is None:
                    alive = True
                    if not procs[i].is_alive() and not a.poll(0):
                        sys.stderr.write("All clients disconnected... aborting.\n")
                        sys.exit(1)
            if not alive:
                break
            # Wake up as soon as a worker reports, or for the next progress line.
            waiting = [a for i, a in enumerate(pipes) if results[i] is None]
            mp_connection.wait(waiting, timeout=max(0.0, next_tick - time.monotonic()))
            now = time.monotonic()
            if not show or now < next_tick:
                continue
            next_tick = now + 0.25
            fin = sum(shared[4 * i] for i in range(nworkers))
            lsum = sum(shared[4 * i + 1] for i in range(nworkers))
            lcnt = sum(shared[4 * i + 2] for i in range(nworkers))
            dt = now - start
            idt = now - prev_tick
            rps = fin / dt if dt > 0 else 0.0
            irps = (fin - prev_fin) / idt if idt > 0 else 0.0
            cur_avg = (lsum - prev_sum) / (lcnt - prev_cnt) / 1000.0 if lcnt > prev_cnt else 0.0
            all_avg = lsum / lcnt / 1000.0 if lcnt else 0.0
            prev_tick, prev_fin, prev_sum, prev_cnt = now, fin, lsum, lcnt
            line = "%s: rps=%.1f (overall: %.1f) avg_msec=%.3f (overall: %.3f)\r" % (
                title, irps, rps, cur_avg, all_avg)
            sys.stdout.write("%*s\r" % (last_printed, " ") + line)
            sys.stdout.flush()
            last_printed = len(line)
        end = max(r[2] for r in results)
        for p in procs:
            p.join(5)
        h = Histogram(10, 3_000_000, o.precision)
        finished = 0
        for r in results:
            finished += r[1]
            h.record_dict(r[3])
        totlat_ms = int(end * 1000) - int(start * 1000)
        self.report(title, finished, max(totlat_ms, 1), h, last_printed)
        return finished

    def report(self, title, finished, totlat_ms, h, last_printed):
        o = self.o
        rps = finished / (totlat_ms / 1000.0)
        p0 = h.min() / 1000.0
        p50 = h.value_at_percentile(50.0) / 1000.0
        p95 = h.value_at_percentile(95.0) / 1000.0
        p99 = h.value_at_percentile(99.0) / 1000.0
        p100 = h.max() / 1000.0
        avg = h.mean() / 1000.0
        w = sys.stdout.write
        if not o.quiet and not o.csv:
            w("%*s\r" % (last_printed, " "))
            w("====== %s ======\n" % title)
            w("  %d requests completed in %.2f seconds\n" % (finished, totlat_ms / 1000.0))
            w("  %d parallel clients\n" % o.clients)
            w("  %d bytes payload\n" % o.datasize)
            w("  keep alive: %d\n" % o.keepalive)
            if o.cluster:
                w("  cluster mode: yes (%d masters)\n" % len(o.cluster_nodes))
                for i, node in enumerate(o.cluster_nodes):
                    if node.config is None:
                        continue
                    w("  node [%d] configuration:\n" % i)
                    w("    save: %s\n" % (node.config["save"] or "NONE"))
                    w("    appendonly: %s\n" % node.config["appendonly"])
            elif self.redis_config:
                w('  host configuration "save": %s\n' % self.redis_config["save"])
                w('  host configuration "appendonly": %s\n' % self.redis_config["appendonly"])
            w("  multi-thread: %s\n" % ("yes" if o.threads else "no"))
            if o.threads:
                w("  threads: %d\n" % o.threads)
            w("\n")
            w("Latency by percentile distribution:\n")
            prev = -1
            for pct, v, cum in h.iter_percentiles(1):
                if prev != cum or cum == h.total:
                    w("%3.3f%% <= %.3f milliseconds (cumulative count %d)\n" % (pct, v / 1000.0, cum))
                prev = cum
            w("\n")
            w("Cumulative distribution of latencies:\n")
            prev = -1
            for v, cum in h.iter_linear(100, 2000, 1000):
                if prev != cum or cum == h.total:
                    w("%3.3f%% <= %.3f milliseconds (cumulative count %d)\n"
                      % (cum / h.total * 100.0, v / 1000.0, cum))
                prev = cum
            w("\n")
            w("Summary:\n")
            w("  throughput summary: %.2f requests per second\n" % rps)
            w("  latency summary (msec):\n")
            w("    %9s %9s %9s %9s %9s %9s\n" % ("avg", "min", "p50", "p95", "p99", "max"))
            w("    %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f\n" % (avg, p0, p50, p95, p99, p100))
        elif o.csv:
            w('"%s","%.2f","%.3f","%.3f","%.3f","%.3f","%.3f","%.3f"\n'
              % (title, rps, avg, p0, p50, p95, p99, p100))
        else:
            w("%*s\r" % (last_printed, " "))
            w("%s: %.2f requests per second, p50=%.3f msec\n" % (title, rps, p50))
        sys.stdout.flush()


def gen_data(n):
    """redis-benchmark's deterministic payload (an LCG over '0'..'o')."""
    state = 1234
    out = bytearray(n)
    for i in range(n):
        state = (state * 1103515245 + 12345) & 0xffffffff
        out[i] = 48 + ((state >> 16) & 63)
    return bytes(out)


def default_tests(o: Options, data: bytes, tag=b""):
    """(title, request bytes) for the selected default tests, in redis-benchmark's
    order; ``tag`` (":{tag}" in cluster mode) follows each key's name."""
    def sel(name):
        return o.tests is None or ("," + name + ",") in o.tests
    tests = []
    if sel("ping_inline") or sel("ping"):
        tests.append(("PING_INLINE", b"PING\r\n"))
    if sel("ping_mbulk") or sel("ping"):
        tests.append(("PING_MBULK", encode_argv(["PING"])))
    if sel("set"):
        tests.append(("SET", encode_argv([b"SET", b"key" + tag + b":__rand_int__", data])))
    if sel("get"):
        tests.append(("GET", encode_argv([b"GET", b"key" + tag + b":__rand_int__"])))
    if sel("incr"):
        tests.append(("INCR", encode_argv([b"INCR", b"counter" + tag + b":__rand_int__"])))
    if sel("lpush"):
        tests.append(("LPUSH", encode_argv([b"LPUSH", b"mylist" + tag, data])))
    if sel("rpush"):
        tests.append(("RPUSH", encode_argv([b"RPUSH", b"mylist" + tag, data])))
    if sel("lpop"):
        tests.append(("LPOP", encode_argv([b"LPOP", b"mylist" + tag])))
    if sel("rpop"):
        tests.append(("RPOP", encode_argv([b"RPOP", b"mylist" + tag])))
    if sel("sadd"):
        tests.append(("SADD", encode_argv([b"SADD", b"myset" + tag, b"element:__rand_int__"])))
    if sel("hset"):
        tests.append(("HSET", encode_argv([b"HSET", b"myhash" + tag, b"element:__rand_int__", data])))
    if sel("spop"):
        tests.append(("SPOP", encode_argv([b"SPOP", b"myset" + tag])))
    if sel("zadd"):
        score = b"__rand_int__" if o.randomkeys else b"0"
        tests.append(("ZADD", encode_argv([b"ZADD", b"myzset" + tag, score, b"element:__rand_int__"])))
    if sel("zpopmin"):
        tests.append(("ZPOPMIN", encode_argv([b"ZPOPMIN", b"myzset" + tag])))
    if any(sel(x) for x in ("lrange", "lrange_100", "lrange_300", "lrange_500", "lrange_600")):
        tests.append(("LPUSH (needed to benchmark LRANGE)", encode_argv([b"LPUSH", b"mylist" + tag, data])))
    for n in (100, 300, 500, 600):
        if sel("lrange") or sel("lrange_%d" % n):
            tests.append(("LRANGE_%d (first %d elements)" % (n, n),
                          encode_argv([b"LRANGE", b"mylist" + tag, b"0", b"%d" % (n - 1)])))
    if sel("mset"):
        args = [b"MSET"]
        for _ in range(10):
            args += [b"key" + tag + b":__rand_int__", data]
        tests.append(("MSET (10 keys)", encode_argv(args)))
    return tests


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "memtier":
        return memtier.main(argv[1:])
    o = Options()
    first = parse_options(argv, o)
    if resp.TLS.enabled:
        try:
            resp.TLS.context()
        except resp.TlsSetupError as e:
            sys.stderr.write("Could not negotiate a TLS connection: %s\n" % e)
            sys.exit(1)
    args = argv[first:]
    runner = Runner(o)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    tag = b""
    if o.cluster:
        tag = b":{tag}"
        o.cluster_nodes = fetch_cluster_nodes(o)
        if not o.cluster_nodes:
            where = o.socket or "%s:%d" % (o.host, o.port)
            sys.stderr.write("Failed to fetch cluster configuration from %s\n" % where)
            return 1
        if len(o.cluster_nodes) <= 1:
            sys.stderr.write("Invalid cluster: %d node(s).\n" % len(o.cluster_nodes))
            return 1
        w = sys.stdout.write
        w("Cluster has %d master nodes:\n\n" % len(o.cluster_nodes))
        for i, node in enumerate(o.cluster_nodes):
            w("Master %d: %s %s:%d\n" % (i, node.name, node.ip, node.port))
            node.config = runner.fetch_config(node.ip, node.port)
            if node.config is None:
                sys.stderr.write("WARNING: Could not fetch node CONFIG %s:%d\n" % (node.ip, node.port))
        w("\n")
        if o.threads == 0:
            o.threads = len(o.cluster_nodes)
    else:
        runner.redis_config = runner.fetch_config()
        if runner.redis_config is None:
            sys.stderr.write("WARNING: Could not fetch server CONFIG\n")
    if o.keepalive == 0:
        sys.stderr.write("WARNING: Keepalive disabled. You probably need "
                         "'echo 1 > /proc/sys/net/ipv4/tcp_tw_reuse' for Linux and "
                         "'sudo sysctl -w net.inet.tcp.msl=1000' for Mac OS X in order "
                         "to use a lot of clients/requests\n")
    if args and o.tests is not None:
        sys.stderr.write("WARNING: Option -t is ignored.\n")
    try:
        if o.idle:
            runner.run("", b"")
            return 0
        if o.csv:
            sys.stdout.write('"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",'
                             '"p95_latency_ms","p99_latency_ms","max_latency_ms"\n')
        if args:
            title = " ".join(args)
            bargs = [a.encode("utf-8", "surrogateescape") for a in args]
            if o.stdinarg:
                bargs.append(sys.stdin.buffer.read())
            cmd = encode_argv(bargs)
            o.datasize = len(cmd)
            while True:
                runner.run(title, cmd)
                if not o.loop:
                    break
            return 0
        while True:
            data = gen_data(o.datasize)
            for title, cmd in default_tests(o, data, tag):
                runner.run(title, cmd)
            if not o.csv:
                sys.stdout.write("\n")
            if not o.loop:
                break
    except KeyboardInterrupt:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
