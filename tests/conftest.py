"""Shared fixtures: real server processes on free ports, real clients.

``server`` is one ophidis-server per test session (per xdist worker);
``r`` is a redis-py client on it with the keyspace flushed before each test.
``start_server`` starts extra servers with their own arguments (config
tests, auth, limits).  ``redis_server`` is Debian's redis-server, for
differential tests; tests needing it are skipped only when it is absent.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest
import redis
from hypothesis import settings

# Property tests run the same examples every time (a CI run must not fail on
# an example nobody saw before); HYPOTHESIS_PROFILE=explore searches anew.
settings.register_profile("ophidis", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ophidis"))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# In-process imports (tests/_inproc.py, ophidis.protocol helpers) must load
# this checkout's code too, not whatever the shared virtualenv has installed.
if os.path.join(ROOT, "src") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "src"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc=None, timeout=15.0, unix=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("server exited with %s" % proc.returncode)
        try:
            if unix:
                s = socket.socket(socket.AF_UNIX)
                s.connect(unix)
            else:
                s = socket.create_connection(("127.0.0.1", port), timeout=0.5)
            s.close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server did not start on port %s" % port)


class ServerProc:
    def __init__(self, args=(), cwd=None, config_text=None, wait=True, env=None):
        self.dir = cwd or tempfile.mkdtemp(prefix="ophidis-test-")
        self.port = free_port()
        self.args = list(args)
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
        if env is None:
            env = dict(os.environ)
        # Run the code of this checkout (worktrees share one virtualenv).
        env["PYTHONPATH"] = os.path.join(ROOT, "src") + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(cmd, cwd=self.dir, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=env)
        if wait:
            wait_port(self.port, self.proc)

    def client(self, **kw):
        kw.setdefault("socket_timeout", 10)
        return redis.Redis(host="127.0.0.1", port=self.port, **kw)

    def output(self) -> str:
        self.log.flush()
        with open(self.logpath) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="session")
def server():
    s = ServerProc(["--enable-debug-command", "yes"])
    yield s
    s.stop()
    shutil.rmtree(s.dir, ignore_errors=True)


@pytest.fixture
def r(server):
    c = server.client()
    c.flushall()
    c.config_set("notify-keyspace-events", "")
    yield c
    c.close()


@pytest.fixture
def start_server():
    started = []

    def start(*args, **kw):
        s = ServerProc(args, **kw)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def _redis_server_bin():
    return shutil.which("redis-server")


@pytest.fixture(scope="session")
def redis_server():
    """Debian's redis-server 7.0, the reference implementation."""
    binpath = _redis_server_bin()
    if binpath is None:
        pytest.skip("redis-server is not installed (make test installs it)")
    d = tempfile.mkdtemp(prefix="redis-ref-")
    port = free_port()
    proc = subprocess.Popen([binpath, "--port", str(port), "--save", "", "--appendonly", "no",
                             "--dir", d, "--enable-debug-command", "yes"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, proc)

    class Ref:
        pass
    ref = Ref()
    ref.port = port
    ref.dir = d
    ref.client = lambda **kw: redis.Redis(host="127.0.0.1", port=port, socket_timeout=10, **kw)
    yield ref
    proc.terminate()
    proc.wait(10)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def ref(redis_server):
    c = redis_server.client()
    c.flushall()
    yield c
    c.close()


def raw_connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    return s


def read_reply(sock, timeout=5.0) -> bytes:
    """Read until the socket is idle for a moment (raw protocol tests)."""
    sock.settimeout(timeout)
    data = b""
    try:
        data = sock.recv(65536)
        sock.settimeout(0.2)
        while True:
            more = sock.recv(65536)
            if not more:
                break
            data += more
    except socket.timeout:
        pass
    return data


def raw_command(port, *args) -> bytes:
    """Send one command, return the raw reply bytes (exact formatting checks)."""
    from ophidis.protocol import encode_request
    s = raw_connect(port)
    s.sendall(encode_request(*args))
    out = read_reply(s, timeout=5)
    s.close()
    return out


@pytest.fixture
def raw(server):
    return lambda *args: raw_command(server.port, *args)
