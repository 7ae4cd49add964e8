"""The embedded server: a real ophidis-server started from Python.

    from ophidis import Server          # or: from ophidis.embedded import Server

    with Server(maxmemory="10mb", appendonly="yes") as srv:
        r = srv.client()                # redis-py, when installed
        r.set("k", "v")

``Server(config=None, *, config_file=None, dir=None, unixsocket=False,
host="127.0.0.1", port=None, startup_timeout=30, keep_dir=False, env=None,
**directives)`` runs ``python -m ophidis`` (the same interpreter and the
same copy of this package) in a subprocess, so a crash, ``DEBUG SLEEP`` or
a busy script in the server cannot freeze the caller.  Configuration
directives come as keyword arguments (underscores become dashes:
``maxmemory_policy="allkeys-lru"``) and/or a dict (``config``), whose keys
are the directives' own names; values are written as redis.conf words:
True/False are yes/no, a string with spaces is several words
(``save="900 1"``), a list or tuple gives its words as they are, ``""``
is an empty argument.  ``config_file`` is a redis.conf read first (the
directives given here override it).

By default the server gets a new temporary directory (``dir``, removed at
stop unless ``keep_dir`` or the caller gave the directory), listens on
127.0.0.1 on a free port, and saves nothing (``save ""``, unless a save
directive is given).  ``unixsocket=True`` serves a unix socket in that
directory instead of TCP (``port 0``; a string is the socket's path).

``start()`` returns once the server answers (``wait_ready``); a server
that exits or does not answer in ``startup_timeout`` seconds raises
``ServerStartError`` whose message ends with the server's output (its
log and any FATAL CONFIG error).  ``stop()`` sends SIGTERM (the server's
own shutdown: a configured save or AOF is written) and kills it after
``timeout``.  ``url`` is ``redis://host:port`` or ``unix:///path``;
``client(**kw)`` is a ``redis.Redis`` connected to it (redis-py is an
optional dependency; without it ``client`` raises ``ImportError`` saying
so).
"""

from __future__ import annotations

import importlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

__all__ = ["Server", "ServerStartError", "free_port", "ping_reply"]

# the directory holding this copy of the ophidis package: the child runs it
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ServerStartError(RuntimeError):
    """The server exited or did not answer in time; the message has its output."""

    def __init__(self, message, output=""):
        super().__init__(message + ("\n--- server output ---\n" + output if output else ""))
        self.output = output


def free_port(host="127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _words(value) -> list:
    """A directive's value as command-line words for ``--name w1 w2 ...``."""
    if value is True:
        return ["yes"]
    if value is False:
        return ["no"]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return str(value).split() or [""]


def ping_reply(host, port, path=None, timeout=1.0) -> bytes | None:
    """The first line a server answers to PING (b"" when it closes the
    connection first), or None when it cannot be reached or does not answer
    within timeout.  ``path``: a unix socket instead of host and port."""
    try:
        if path:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(timeout)
            s.connect(path)
        else:
            s = socket.create_connection((host, port), timeout=timeout)
    except OSError:
        return None
    try:
        s.sendall(b"*1\r\n$4\r\nPING\r\n")
        data = b""
        while not data.endswith(b"\r\n"):
            chunk = s.recv(256)
            if not chunk:
                break
            data += chunk
        return data
    except OSError:
        return None
    finally:
        s.close()


class Server:
    """One ophidis-server subprocess (see the module docstring)."""

    def __init__(self, config=None, *, config_file=None, dir=None, unixsocket=False, host="127.0.0.1",
                 port=None, startup_timeout=30.0, keep_dir=False, env=None, **directives):
        self.directives = {}
        for name, value in (config or {}).items():
            self.directives[name] = value
        for name, value in directives.items():
            self.directives[name.replace("_", "-")] = value
        for name in ("dir", "port", "unixsocket", "bind"):
            if name in self.directives:
                raise TypeError("give %s= as the Server argument, not as a directive" % name)
        self.config_file = os.path.abspath(config_file) if config_file else None
        self._own_dir = dir is None
        self._given_dir = dir
        self.keep_dir = keep_dir
        self.host = host
        self._given_port = port
        self._unix = unixsocket
        self.startup_timeout = startup_timeout
        self.env = env
        self.dir = None
        self.port = None
        self.unix_path = None
        self.proc = None
        self.logpath = None
        self._log = None

    # -- start / stop ---------------------------------------------------------------
    def command(self) -> list:
        """The command line that starts the server."""
        cmd = [sys.executable, "-m", "ophidis"]
        if self.config_file:
            cmd.append(self.config_file)
        cmd += ["--dir", self.dir]
        if self.unix_path:
            cmd += ["--port", "0", "--unixsocket", self.unix_path]
        else:
            cmd += ["--bind", self.host, "--port", str(self.port)]
        if "save" not in self.directives:
            cmd += ["--save", ""]
        for name, value in self.directives.items():
            cmd += ["--" + name] + _words(value)
        return cmd

    def start(self) -> "Server":
        if self.proc is not None and self.proc.poll() is None:
            return self
        if self._own_dir:
            self.dir = tempfile.mkdtemp(prefix="ophidis-")
        else:
            self.dir = os.path.abspath(self._given_dir)
            os.makedirs(self.dir, exist_ok=True)
        if self._unix:
            self.unix_path = self._unix if isinstance(self._unix, str) else os.path.join(self.dir, "ophidis.sock")
        # a port chosen here may be taken before the server binds it: try another
        tries = 1 if (self._given_port or self.unix_path) else 3
        for attempt in range(tries):
            self.port = 0 if self.unix_path else (self._given_port or free_port(self.host))
            self._spawn()
            try:
                return self.wait_ready(self.startup_timeout)
            except ServerStartError as e:
                if attempt + 1 < tries and "Address already in use" in e.output:
                    continue
                self._cleanup()
                raise

    def _spawn(self):
        env = dict(os.environ if self.env is None else self.env)
        env["PYTHONPATH"] = _PACKAGE_PARENT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.logpath = os.path.join(self.dir, "ophidis-server.log")
        if self._log is not None:
            self._log.close()
        self._log = open(self.logpath, "wb")
        self.proc = subprocess.Popen(self.command(), cwd=self.dir, stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT, env=env)

    def wait_ready(self, timeout=30.0) -> "Server":
        """Wait until the server answers PING (anything but -LOADING)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc is None:
                raise ServerStartError("the server was not started")
            code = self.proc.poll()
            if code is not None:
                raise ServerStartError("ophidis-server exited with status %d at start-up" % code, self.output())
            reply = ping_reply(self.host, self.port, self.unix_path)
            if reply and not reply.startswith(b"-LOADING") and self._metrics_listening():
                return self
            if time.monotonic() >= deadline:
                self._terminate(5)
                raise ServerStartError("ophidis-server did not answer within %gs" % timeout, self.output())
            time.sleep(0.02)

    def _metrics_listening(self) -> bool:
        """With metrics-port set, /metrics accepts connections too (its
        listener starts just after the server's own)."""
        port = int(self.directives.get("metrics-port", 0) or 0)
        if not port:
            return True
        host = str(self.directives.get("metrics-bind", "127.0.0.1"))
        try:
            socket.create_connection((host, port), timeout=1).close()
        except OSError:
            return False
        return True

    def _terminate(self, timeout):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def _cleanup(self):
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._own_dir and not self.keep_dir and self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def stop(self, timeout=20.0):
        """SIGTERM (the server's shutdown), SIGKILL after timeout seconds."""
        try:
            self._terminate(timeout)
        finally:
            self._cleanup()

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- what callers use -------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def url(self) -> str:
        if self.unix_path:
            return "unix://" + self.unix_path
        return "redis://%s:%d" % (self.host, self.port)

    def output(self) -> str:
        """What the server printed (its log, unless logfile is set) and,
        with a logfile directive, that file too."""
        text = ""
        if self.logpath and os.path.exists(self.logpath):
            with open(self.logpath, errors="replace") as f:
                text = f.read()
        logfile = self.directives.get("logfile")
        if logfile and self.dir:
            path = os.path.join(self.dir, str(logfile))
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    text += f.read()
        return text

    def client(self, **kw):
        """A redis.Redis on this server (keyword arguments are redis-py's;
        requirepass, when set, is the default password)."""
        try:
            # an optional dependency, and a costly import: loaded on first use
            redis = importlib.import_module("redis")
        except ImportError:
            where = self.url if self.port is not None else "the server's url"
            raise ImportError("Server.client() needs redis-py: pip install redis "
                              "(or connect any client to %s)" % where) from None
        if "requirepass" in self.directives:
            kw.setdefault("password", str(self.directives["requirepass"]))
        kw.setdefault("socket_timeout", 30)
        if self.unix_path:
            return redis.Redis(unix_socket_path=self.unix_path, **kw)
        return redis.Redis(host=self.host, port=self.port, **kw)

    def __repr__(self):
        state = ("pid %d" % self.proc.pid) if self.running else "stopped"
        return "<ophidis.Server %s %s>" % (self.url if self.port is not None else "(not started)", state)
