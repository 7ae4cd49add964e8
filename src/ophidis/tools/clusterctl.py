"""ophidis-cluster: start, stop and inspect a local Redis Cluster of
Ophidis (or redis-server) processes, as Redis's utils/create-cluster does.

    ophidis-cluster start [--nodes 6] [--replicas 1] [--port 7000] [--dir ./cluster]
                          [--server ophidis-server|redis-server|PATH] [--host 127.0.0.1]
                          [--node-timeout 5000] [--appendonly] [-- --directive value ...]
    ophidis-cluster stop [--dir ./cluster]
    ophidis-cluster status [--dir ./cluster]

``start`` writes DIR/PORT/node.conf for each node (cluster-enabled yes,
cluster-config-file nodes-PORT.conf, cluster-node-timeout, appendonly,
daemonize yes with a pidfile and a logfile in DIR/PORT), starts the
processes (the arguments after ``--`` are passed to each server after its
config file), waits until they answer, creates the cluster with
ophidis-cli's cluster manager (in this process) unless the nodes already
form one (a restart), and waits until every node reports cluster_state:ok.
``stop`` sends SIGTERM to the pid of each pidfile and waits for the
processes to exit; ``status`` prints each node's role, slots and state.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from ophidis.tools import resp
from ophidis.tools.cli import cluster_commands
from ophidis.tools.cli.cluster import info_field
from ophidis.tools.cli.options import Config
from ophidis.tools.resp import ConnectionClosed, atoi

USAGE = """Usage: ophidis-cluster start [--nodes N] [--replicas R] [--port P] [--dir DIR]
                             [--server ophidis-server|redis-server|PATH] [--host H]
                             [--node-timeout MS] [--appendonly] [-- server args...]
       ophidis-cluster stop [--dir DIR]
       ophidis-cluster status [--dir DIR]

  --nodes N          number of nodes (default 6)
  --replicas R       replicas per master (default 1)
  --port P           port of the first node; the others follow (default 7000)
  --dir DIR          where the nodes' directories go (default ./cluster)
  --server S         ophidis-server (default), redis-server, or a path
  --host H           address the nodes bind to and announce (default 127.0.0.1)
  --node-timeout MS  cluster-node-timeout (default 5000)
  --appendonly       appendonly yes (default no)
  -- args...         passed to every server after its config file
"""

START_TIMEOUT = 30.0
STATE_TIMEOUT = 60.0


class Options:
    def __init__(self):
        self.action = None
        self.nodes = 6
        self.replicas = 1
        self.port = 7000
        self.dir = "./cluster"
        self.server = "ophidis-server"
        self.host = "127.0.0.1"
        self.node_timeout = 5000
        self.appendonly = False
        self.extra = []


def parse(argv):
    o = Options()
    if not argv or argv[0] in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        sys.exit(0 if argv else 1)
    o.action = argv[0]
    if o.action not in ("start", "stop", "status"):
        sys.stderr.write("Unknown action '%s'\n\n%s" % (o.action, USAGE))
        sys.exit(1)
    values = {"--nodes": ("nodes", atoi), "--replicas": ("replicas", atoi), "--port": ("port", atoi),
              "--dir": ("dir", str), "--server": ("server", str), "--host": ("host", str),
              "--node-timeout": ("node_timeout", atoi)}
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--":
            o.extra = argv[i + 1:]
            break
        if a == "--appendonly":
            o.appendonly = True
        elif a in values and i + 1 < len(argv):
            attr, conv = values[a]
            setattr(o, attr, conv(argv[i + 1]))
            i += 1
        else:
            sys.stderr.write("Unrecognized option or bad number of args for: '%s'\n\n%s" % (a, USAGE))
            sys.exit(1)
        i += 1
    o.dir = os.path.abspath(o.dir)
    return o


def server_command(name):
    """The argv prefix that runs the server: a path, a name on $PATH, or
    (for ophidis-server not installed as a script) this Python's -m ophidis."""
    if os.sep in name:
        return [name]
    found = shutil.which(name)
    if found:
        return [found]
    if name == "ophidis-server":
        return [sys.executable, "-m", "ophidis"]
    sys.stderr.write("Server '%s' not found\n" % name)
    sys.exit(1)


def node_config(o, port, ndir):
    return "\n".join([
        "port %d" % port,
        "bind %s" % o.host,
        "dir %s" % ndir,
        "cluster-enabled yes",
        "cluster-config-file nodes-%d.conf" % port,
        "cluster-node-timeout %d" % o.node_timeout,
        "appendonly %s" % ("yes" if o.appendonly else "no"),
        "daemonize yes",
        "pidfile %s" % os.path.join(ndir, "node.pid"),
        "logfile %s" % os.path.join(ndir, "node.log"),
        "",
    ])


def port_free(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def node_dirs(base):
    """[(port, directory)] of the nodes under ``base``, by port."""
    try:
        names = os.listdir(base)
    except OSError:
        return []
    out = []
    for n in names:
        d = os.path.join(base, n)
        if n.isdigit() and os.path.exists(os.path.join(d, "node.conf")):
            out.append((int(n), d))
    return sorted(out)


def node_host(ndir):
    try:
        with open(os.path.join(ndir, "node.conf")) as f:
            for line in f:
                if line.startswith("bind "):
                    return line.split()[1]
    except OSError:
        pass
    return "127.0.0.1"


def query(host, port, *args, timeout=2.0):
    """One command to a node: the Reply, or None when it does not answer."""
    try:
        c = resp.Connection(host, port, timeout=timeout)
    except OSError:
        return None
    try:
        c.sock.settimeout(timeout)
        return c.command(*args)
    except (OSError, ConnectionClosed):
        return None
    finally:
        c.close()


def log_tail(ndir, n=10):
    try:
        with open(os.path.join(ndir, "node.log"), errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def wait_for(cond, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def start(o):
    if o.nodes < 1:
        sys.stderr.write("--nodes must be at least 1\n")
        return 1
    cmd = server_command(o.server)
    ports = [o.port + i for i in range(o.nodes)]
    for p in ports:
        for q in (p, p + 10000):
            if not port_free(o.host, q):
                sys.stderr.write("Port %d is already in use on %s\n" % (q, o.host))
                return 1
    os.makedirs(o.dir, exist_ok=True)
    for p in ports:
        ndir = os.path.join(o.dir, str(p))
        os.makedirs(ndir, exist_ok=True)
        with open(os.path.join(ndir, "node.conf"), "w") as f:
            f.write(node_config(o, p, ndir))
        print("Starting node %s:%d (%s)" % (o.host, p, ndir))
        rc = subprocess.call(cmd + [os.path.join(ndir, "node.conf")] + o.extra,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ndir)
        if rc != 0:
            sys.stderr.write("Node %d failed to start (exit status %d)\n%s" % (p, rc, log_tail(ndir)))
            return 1
    for p in ports:
        ndir = os.path.join(o.dir, str(p))
        if not wait_for(lambda: _answers(o.host, p), START_TIMEOUT):
            sys.stderr.write("Node %s:%d does not answer\n%s" % (o.host, p, log_tail(ndir)))
            return 1
        r = query(o.host, p, "INFO", "cluster")
        if r is None or r.is_error or not info_field(r.value.decode(errors="replace"), "cluster_enabled"):
            sys.stderr.write("Node %s:%d is not running in cluster mode\n%s" % (o.host, p, log_tail(ndir)))
            return 1
    r = query(o.host, o.port, "CLUSTER", "INFO")
    known = info_field(r.value.decode(errors="replace"), "cluster_known_nodes") if r and not r.is_error else 0
    if known > 1:
        print("The nodes already form a cluster (%d known nodes): not creating it again." % known)
    else:
        cfg = Config()
        m = cfg.cluster_manager
        m.name = "create"
        m.argv = ["%s:%d" % (o.host, p) for p in ports]
        m.replicas = o.replicas
        m.yes = True
        rc = cluster_commands.run(cfg)
        if rc != 0:
            return rc
    if not wait_for(lambda: all(_state_ok(o.host, p) for p in ports), STATE_TIMEOUT):
        sys.stderr.write("The cluster did not reach cluster_state:ok\n")
        return 1
    print("Cluster is up: %d nodes, ports %d-%d." % (len(ports), ports[0], ports[-1]))
    print("Connect with: ophidis-cli -c -p %d" % o.port)
    print("Stop with: ophidis-cluster stop --dir %s" % o.dir)
    return 0


def _answers(host, port):
    r = query(host, port, "PING", timeout=1.0)
    return r is not None and not r.is_error


def _state_ok(host, port):
    r = query(host, port, "CLUSTER", "INFO")
    return r is not None and not r.is_error and b"cluster_state:ok" in r.value


def slot_count(defs):
    """Slots in CLUSTER NODES slot fields ("0-5460", "7", not "[...]")."""
    n = 0
    for d in defs:
        if not d or d.startswith("["):
            continue
        a, _, b = d.partition("-")
        n += atoi(b) - atoi(a) + 1 if b else 1
    return n


def read_pid(ndir):
    try:
        with open(os.path.join(ndir, "node.pid")) as f:
            return atoi(f.read())
    except OSError:
        return 0


def alive(pid):
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours is not running any more.
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def existing_nodes(o):
    """node_dirs of --dir; exits 1 when there is none."""
    nodes = node_dirs(o.dir)
    if not nodes:
        sys.stderr.write("No nodes in %s\n" % o.dir)
        sys.exit(1)
    return nodes


def stop(o):
    nodes = existing_nodes(o)
    pids = []
    for port, ndir in nodes:
        pid = read_pid(ndir)
        if not alive(pid):
            print("Node %d is not running" % port)
            continue
        print("Stopping node %d (pid %d)" % (port, pid))
        os.kill(pid, signal.SIGTERM)
        pids.append((port, pid))
    rc = 0
    for port, pid in pids:
        if not wait_for(lambda: not alive(pid), START_TIMEOUT):
            sys.stderr.write("Node %d (pid %d) did not exit\n" % (port, pid))
            rc = 1
    return rc


def status(o):
    nodes = existing_nodes(o)
    rc = 0
    for port, ndir in nodes:
        host = node_host(ndir)
        pid = read_pid(ndir)
        r = query(host, port, "CLUSTER", "NODES")
        if r is None or r.is_error:
            if r is None:
                print("%s:%d  not running" % (host, port))
            else:
                print("%s:%d  pid %d  CLUSTER NODES: %s" % (host, port, pid, r.value.decode(errors="replace")))
            rc = 1
            continue
        me = next((line.split(" ") for line in r.value.decode(errors="replace").split("\n")
                   if " myself," in line or ",myself" in line or " myself " in line), None)
        ci = query(host, port, "CLUSTER", "INFO")
        state = "?"
        if ci is not None and not ci.is_error:
            for line in ci.value.decode(errors="replace").split("\r\n"):
                if line.startswith("cluster_state:"):
                    state = line.split(":", 1)[1]
        if me is None:
            print("%s:%d  pid %d  cluster_state:%s" % (host, port, pid, state))
            continue
        role = "replica of %s" % me[3][:8] if "slave" in me[2] else "master"
        slots = " ".join(s for s in me[8:] if s)
        n = slot_count(me[8:])
        print("%s:%d  %s  %s  pid %d  slots:%s (%d slots)  cluster_state:%s"
              % (host, port, me[0][:8], role, pid, slots, n, state))
    return rc


def main(argv=None):
    o = parse(sys.argv[1:] if argv is None else argv)
    rc = {"start": start, "stop": stop, "status": status}[o.action](o)
    if rc and o.action == "start" and node_dirs(o.dir):
        sys.stderr.write("The nodes that started are still running: ophidis-cluster stop --dir %s\n" % o.dir)
    return rc


if __name__ == "__main__":
    sys.exit(main())
