"""ophidis-cli against Ophidis and against Debian's redis-server, compared with
redis-cli's own output for the same invocations."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import time

import hiredis
import pytest

from ophidis.tools.cli.output import format_tty
from ophidis.tools.resp import Parser
from support.resp import encode
from support.servers import FakeServer, ServerProc, free_port, server_env
from support.wait import wait_port, wait_until

REDIS_CLI = shutil.which("redis-cli")
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


def cli_env(extra=None):
    env = server_env()
    env.pop("FAKETTY", None)
    env.pop("REDISCLI_AUTH", None)
    if extra:
        env.update(extra)
    return env


def run_cli(port, *args, input=None, env=None, timeout=20):
    return subprocess.run([sys.executable, "-m", "ophidis.tools.cli", "-p", str(port)] + list(args),
                          input=input, capture_output=True, env=cli_env(env), timeout=timeout)


def run_redis_cli(port, *args, input=None, env=None, timeout=20):
    if REDIS_CLI is None:
        pytest.skip("redis-cli is not installed")
    return subprocess.run([REDIS_CLI, "-p", str(port)] + list(args), input=input,
                          capture_output=True, env=cli_env(env), timeout=timeout)


@pytest.fixture(params=["ophidis", "redis"])
def target(request):
    """(port, client, is_redis) for each server the CLI is tested against."""
    if request.param == "ophidis":
        srv = request.getfixturevalue("server")
        c = srv.client()
    else:
        srv = request.getfixturevalue("redis_server")
        c = srv.client()
    c.flushall()
    yield srv.port, c, request.param == "redis"
    c.close()


def same_as_redis_cli(port, args, input=None, env=None, setup=None):
    """Run ophidis-cli and redis-cli with the same arguments (after the same
    setup) and check stdout and exit code are identical."""
    if setup:
        setup()
    ours = run_cli(port, *args, input=input, env=env)
    if setup:
        setup()
    theirs = run_redis_cli(port, *args, input=input, env=env)
    assert ours.stdout == theirs.stdout, (args, ours.stdout, theirs.stdout, ours.stderr)
    assert ours.returncode == theirs.returncode, (args, ours.stderr, theirs.stderr)
    return ours


STRING_SESSION = [
    "set foo bar",
    "get foo",
    "get nokey",
    "set counter 41",
    "incr counter",
    "mget foo nokey counter",
    'set bin "a\\x01\\"\\\\\\n\\tb"',
    "get bin",
    "nosuchcommand x",
    "keys nomatch*",
    # (INFO keyspace before any TTL: its avg_ttl depends on when the server
    # sampled the key, so it differs between the two CLIs' runs)
    "info keyspace",
    "expire foo 100",
    "ttl foo",
    "del foo bar",
]

DATA_SESSION = [
    "rpush l a b c",
    "lrange l 0 -1",
    "hset h f1 v1 f2 v2",
    "hgetall h",
    "zadd z 1 a 2.5 b",
    "zrange z 0 -1 withscores",
    "sadd s x",
    "smembers s",
    "command info get",
    "lrange nolist 0 -1",
]


@pytest.mark.parametrize("mode", [[], ["--no-raw"], ["--csv"], ["--raw"], ["-3", "--no-raw"]])
def test_reply_formats_like_redis_cli(target, mode):
    """The same session (commands read from stdin) through both CLIs."""
    port, c, is_redis = target
    session = STRING_SESSION + (DATA_SESSION if is_redis else [])
    script = ("\n".join(session) + "\n").encode()
    res = same_as_redis_cli(port, mode, input=script, setup=c.flushall)
    assert len(res.stdout.splitlines()) >= len(session)


@pytest.mark.parametrize("cmd", [["mget", "foo", "nokey"], ["get", "bin"], ["incr", "foo"]])
def test_argv_commands_like_redis_cli(target, cmd):
    port, c, _ = target
    c.set("foo", "bar")
    c.set("bin", "a\x01\"\\\n")
    same_as_redis_cli(port, cmd)
    same_as_redis_cli(port, ["--no-raw"] + cmd)


def test_resp3_formats_like_redis_cli(redis_server, ref):
    port = redis_server.port
    ref.hset("h", mapping={"a": "1", "b": "2"})
    ref.sadd("s", "m")
    ref.zadd("z", {"a": 1.5})
    for cmd in (["hgetall", "h"], ["smembers", "s"], ["zscore", "z", "a"], ["hello", "3"],
                ["command", "info", "get"], ["get", "missing"], ["hgetall", "nohash"]):
        if cmd[0] == "hello":
            # The client id differs between runs; compare everything else.
            ours = run_cli(port, "--no-raw", "-3", *cmd).stdout
            theirs = run_redis_cli(port, "--no-raw", "-3", *cmd).stdout
            strip = lambda b: re.sub(rb'"id" => \(integer\) \d+', b"", b)  # noqa: E731
            assert strip(ours) == strip(theirs)
            assert b'"proto" => (integer) 3' in ours
        else:
            same_as_redis_cli(port, ["--no-raw", "-3"] + cmd)
    out = run_cli(port, "--no-raw", "-3", "zscore", "z", "a").stdout
    assert out == b"(double) 1.5\n"


def test_nested_array_indentation():
    p = Parser()
    p.feed(b"*2\r\n*2\r\n$1\r\na\r\n:1\r\n*11\r\n" + b"$1\r\nx\r\n" * 10 + b"*1\r\n$1\r\ny\r\n")
    r = p.get()
    assert format_tty(r) == (b'1) 1) "a"\n   2) (integer) 1\n'
                             b'2)  1) "x"\n' + b"".join(b'   %2d) "x"\n' % i for i in range(2, 11))
                             + b'   11) 1) "y"\n')


def test_noninteractive_stdin_lines_and_tty_detection(target):
    port, c, _ = target
    script = b"set a 1\nget a\nincr a\nfoo\nget a\n"
    same_as_redis_cli(port, [], input=script, setup=lambda: c.delete("a"))
    same_as_redis_cli(port, [], input=script, env={"FAKETTY": "1"}, setup=lambda: c.delete("a"))
    # Not a tty: raw output, no quotes.
    assert run_cli(port, "get", "a").stdout == b"2\n"
    assert run_cli(port, "get", "a", env={"FAKETTY": "1"}).stdout == b'"2"\n'


def test_repeat_and_interval(target):
    port, c, _ = target
    t0 = time.monotonic()
    res = same_as_redis_cli(port, ["-r", "3", "-i", "0.1", "incr", "rc"], setup=lambda: c.delete("rc"))
    assert res.stdout == b"1\n2\n3\n"
    assert time.monotonic() - t0 >= 0.3
    res = same_as_redis_cli(port, ["--no-raw", "-r", "2", "ping"])
    assert res.stdout == b"PONG\nPONG\n"


def test_stdin_last_arg(target):
    port, c, _ = target
    res = run_cli(port, "-x", "set", "xk", input=b"hello\nworld\n")
    assert res.stdout == b"OK\n"
    assert c.get("xk") == b"hello\nworld\n"
    same_as_redis_cli(port, ["-x", "set", "xk2"], input=b"\x00\x01bin")
    assert c.get("xk2") == b"\x00\x01bin"


def test_db_url_and_auth_options(target):
    port, c, _ = target
    c.flushall()
    assert run_cli(port, "-n", "3", "set", "dbk", "v").stdout == b"OK\n"
    assert run_cli(port, "-n", "3", "get", "dbk").stdout == b"v\n"
    assert run_cli(port, "get", "dbk").stdout == b"\n"
    out = subprocess.run([sys.executable, "-m", "ophidis.tools.cli", "-u",
                          "redis://127.0.0.1:%d/3" % port, "get", "dbk"],
                         capture_output=True, env=cli_env()).stdout
    assert out == b"v\n"
    res = run_cli(port, "-a", "wrong", "ping")
    theirs = run_redis_cli(port, "-a", "wrong", "ping")
    assert res.stderr.splitlines()[0] == theirs.stderr.splitlines()[0]   # the -a warning
    assert b"AUTH failed" in res.stderr


def test_errors_and_exit_codes(target):
    port, _c, _ = target
    same_as_redis_cli(port, ["-e", "nosuchcommand"])
    same_as_redis_cli(port, ["nosuchcommand"])
    dead = free_port()
    ours = run_cli(dead, "ping")
    theirs = run_redis_cli(dead, "ping")
    assert ours.returncode == theirs.returncode == 1
    assert ours.stderr == theirs.stderr


def test_scan_mode(target):
    port, c, _ = target
    for i in range(150):
        c.set("key:%d" % i, i)
    c.set("other", 1)
    c.set("sp ace\n", 1)
    for mode in ([], ["--no-raw"]):
        ours = run_cli(port, *mode, "--scan").stdout.splitlines()
        theirs = run_redis_cli(port, *mode, "--scan").stdout.splitlines()
        assert sorted(ours) == sorted(theirs)
        assert len(ours) >= 152
    ours = run_cli(port, "--scan", "--pattern", "key:1*").stdout.split()
    assert sorted(ours) == sorted(b"key:%d" % i for i in range(150) if str(i).startswith("1"))


def test_bigkeys_like_redis_cli(target):
    port, c, is_redis = target
    c.set("s1", "x" * 100)
    c.set("s2", "y")
    c.set("w\x00eird", "zz")
    if is_redis:
        c.rpush("list1", *range(20))
        c.hset("hash1", mapping={"a": 1, "b": 2})
        c.zadd("zs", {"m": 1})
        c.sadd("set1", "a", "b", "c")
    ours = run_cli(port, "--bigkeys")
    theirs = run_redis_cli(port, "--bigkeys")
    assert ours.returncode == 0
    # Keys come in SCAN order for both; the summary must be identical.
    summary = lambda out: out.split(b"-------- summary -------")[1]  # noqa: E731
    assert summary(ours.stdout) == summary(theirs.stdout)
    assert sorted(ours.stdout.splitlines()) == sorted(theirs.stdout.splitlines())
    assert b"Biggest string found '\"s1\"' has 100 bytes" in ours.stdout


def test_memkeys_and_hotkeys_against_redis(redis_server, ref):
    port = redis_server.port
    ref.set("a", "x" * 1000)
    ref.set("b", "y")
    ours = run_cli(port, "--memkeys").stdout
    theirs = run_redis_cli(port, "--memkeys").stdout
    assert ours.split(b"-------- summary -------")[1] == theirs.split(b"-------- summary -------")[1]
    ref.config_set("maxmemory-policy", "allkeys-lfu")
    try:
        for _ in range(5):
            ref.get("a")
        ours = run_cli(port, "--hotkeys").stdout
        theirs = run_redis_cli(port, "--hotkeys").stdout
        assert ours.split(b"summary")[1] == theirs.split(b"summary")[1]
        assert b"hot key found with counter" in ours
    finally:
        ref.config_set("maxmemory-policy", "noeviction")


def test_pipe_mode(target):
    port, c, _ = target
    data = b"".join(encode("SET", "pk:%d" % i, "v%d" % i) for i in range(3000))
    data += encode("INCR", "pk:1")   # an error reply
    data += encode("GET", "pk:2999")
    ours = run_cli(port, "--pipe", input=data)
    assert c.dbsize() == 3000
    assert c.get("pk:2999") == b"v2999"
    c.flushall()
    theirs = run_redis_cli(port, "--pipe", input=data)
    assert ours.stdout == theirs.stdout
    assert ours.stdout.endswith(b"errors: 1, replies: 3002\n")
    assert b"All data transferred. Waiting for the last reply...\n" in ours.stdout
    assert ours.returncode == theirs.returncode == 1
    assert ours.stderr == theirs.stderr == b"ERR value is not an integer or out of range\n"
    ok = run_cli(port, "--pipe", input=encode("SET", "a", "b"))
    assert ok.returncode == 0 and ok.stdout.endswith(b"errors: 0, replies: 1\n")


def test_latency_modes(target):
    port, _c, _ = target
    res = run_cli(port, "--latency", "--raw", "-i", "0.2")
    assert res.returncode == 0
    assert re.fullmatch(rb"\d+ \d+ \d+\.\d\d \d+\n", res.stdout), res.stdout
    res = run_cli(port, "--latency", "--csv", "-i", "0.2")
    assert re.fullmatch(rb"\d+,\d+,\d+\.\d\d,\d+\n", res.stdout), res.stdout


def _read_until(p, done, timeout=30.0):
    """What p (stdout=PIPE) writes, read until done(output) holds."""
    fd = p.stdout.fileno()
    out = b""
    deadline = time.monotonic() + timeout
    while not done(out):
        left = deadline - time.monotonic()
        assert left > 0, "timed out waiting for the CLI's output: %r" % out[-2000:]
        if select.select([fd], [], [], min(left, 0.5))[0]:
            chunk = os.read(fd, 1 << 16)
            assert chunk, "the CLI exited: %r" % out[-2000:]
            out += chunk
    return out


def _run_until_sigint(port, args, done):
    """Run the CLI with args until it has pinged the server (its latency mode
    is running: a client newer than ours with cmd=ping) and its output so
    far satisfies done(output), then SIGINT; its output."""
    rd = hiredis.Reader()
    with socket.create_connection(("127.0.0.1", port)) as probe:
        def call(*argv):
            probe.sendall(encode(*argv))
            while True:
                r = rd.gets()
                if r is not False:
                    return r
                rd.feed(probe.recv(1 << 16))
        me = call(b"CLIENT", b"ID")
        # (SIGINT's default action restored: a process started with SIGINT
        # ignored, as a background job or some test runners' workers, passes
        # that on, and Python then installs no KeyboardInterrupt handler)
        p = subprocess.Popen([sys.executable, "-m", "ophidis.tools.cli", "-p", str(port)] + args,
                             stdout=subprocess.PIPE, env=cli_env(),
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            def pinging():
                for line in call(b"CLIENT", b"LIST").split(b"\n"):
                    f = dict(x.split(b"=", 1) for x in line.split() if b"=" in x)
                    if f and int(f[b"id"]) > me and f.get(b"cmd") == b"ping":
                        return True
                return False
            wait_until(pinging, 30, interval=0.05, what="the CLI pinging")
            out = _read_until(p, done)
            p.send_signal(signal.SIGINT)
            return out + p.communicate(timeout=30)[0]
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_latency_history_and_dist(server):
    port = server.port
    # --latency-history prints a " -- N seconds range" line per interval.
    range_re = rb"min: \d+, max: \d+, avg: \d+\.\d\d \(\d+ samples\) -- 0\.\d\d seconds range\n"
    out = _run_until_sigint(port, ["--latency-history", "-i", "0.3", "--no-raw"],
                            lambda o: len(re.findall(rb"seconds range\n", o)) >= 2)
    ranges = re.findall(range_re, out)
    assert len(ranges) >= 2, out
    out = _run_until_sigint(port, ["--latency-dist", "-i", "0.2"], lambda o: o.count(b"\x1b[38;5;0m") >= 2)
    assert b"1,2,3,...,9      from 1 to 9     milliseconds" in out
    assert out.count(b"\x1b[38;5;0m") >= 2


def test_intrinsic_latency():
    res = subprocess.run([sys.executable, "-m", "ophidis.tools.cli", "--intrinsic-latency", "1"],
                         capture_output=True, env=cli_env(), timeout=20)
    assert res.returncode == 0
    lines = res.stdout.decode().splitlines()
    assert re.fullmatch(r"Max latency so far: \d+ microseconds\.", lines[0])
    assert lines[-3] == ""
    assert re.fullmatch(r"\d+ total runs \(avg latency: \d+\.\d{4} microseconds / \d+\.\d\d nanoseconds "
                        r"per run\)\.", lines[-2]), lines[-2]
    assert re.fullmatch(r"Worst run took \d+x longer than the average latency\.", lines[-1])
    runs = int(lines[-2].split()[0])
    assert runs > 100           # (how many depends on the machine's load)


def test_stat_mode(target):
    port, c, _ = target
    c.set("a", 1)
    p = subprocess.Popen([sys.executable, "-m", "ophidis.tools.cli", "-p", str(port), "--stat", "-i", "0.2"],
                         stdout=subprocess.PIPE, env=cli_env())
    try:
        # the header's two lines and two samples, however long the start took
        head = _read_until(p, lambda o: o.count(b"\n") >= 4)
    finally:
        p.kill()
    out = (head + p.communicate()[0]).decode()
    lines = out.splitlines()
    assert lines[0].startswith("------- data ------ ---")
    assert lines[1].startswith("keys       mem      clients blocked requests")
    assert re.match(r"1 +\d+(\.\d+)?[BKMG] +\d+ +\d+ +\d+ \(\+\d+\) +\d+", lines[2]), lines[2]
    assert re.search(r"\(\+[1-9]\d*\)", lines[3])


def test_eval(redis_server, ref):
    d = tempfile.mkdtemp()
    path = os.path.join(d, "s.lua")
    with open(path, "w") as f:
        f.write("return {KEYS[1], KEYS[2], ARGV[1]}")
    same_as_redis_cli(redis_server.port, ["--eval", path, "k1", "k2", ",", "a1"])
    assert run_cli(redis_server.port, "--eval", path, "k1", "k2", ",", "a1").stdout == b"k1\nk2\na1\n"
    shutil.rmtree(d)


def test_rdb_transfer(redis_server, ref, server, tmp_path, config):
    ref.set("persisted", "yes")
    config(ref, repl_diskless_sync_delay=0)
    path = tmp_path / "dump.rdb"
    res = run_cli(redis_server.port, "--rdb", str(path))
    assert res.returncode == 0, res.stderr
    data = path.read_bytes()
    assert data.startswith(b"REDIS") and b"persisted" in data
    assert b"Transfer finished with success" in res.stderr
    # Ophidis answers SYNC with its RDB snapshot: both CLIs transfer it.
    client = server.client()
    client.set("persisted-here", "yes")
    res = run_cli(server.port, "--rdb", str(tmp_path / "o.rdb"))
    theirs = run_redis_cli(server.port, "--rdb", str(tmp_path / "o2.rdb"))
    assert res.returncode == theirs.returncode == 0, (res.stderr, theirs.stderr)
    assert b"Transfer finished with success" in res.stderr
    assert b"Transfer finished with success" in theirs.stderr
    for name in ("o.rdb", "o2.rdb"):
        data = (tmp_path / name).read_bytes()
        assert data.startswith(b"REDIS") and b"persisted-here" in data
    client.delete("persisted-here")


class AnsweringServer(FakeServer):
    """A tiny RESP server: ``answer(argv) -> bytes`` for each request."""

    def __init__(self, answer):
        self.answer = answer
        self.seen = []
        super().__init__(threaded=True)

    def handle(self, conn):
        r = hiredis.Reader()
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            r.feed(data)
            while True:
                argv = r.gets()
                if argv is False:
                    break
                self.seen.append(argv)
                conn.sendall(self.answer(argv))


def test_cluster_moved_redirection(target):
    port, c, is_redis = target
    c.set("foo", "bar")
    fake = AnsweringServer(lambda argv: b"-MOVED 12182 127.0.0.1:%d\r\n" % port)
    try:
        res = same_as_redis_cli(fake.port, ["-c", "get", "foo"])
        assert res.stdout == b"bar\n"
        # Without -c the redirection is just an error reply.
        res = same_as_redis_cli(fake.port, ["get", "foo"])
        assert res.stdout == b"MOVED 12182 127.0.0.1:%d\n\n" % port
    finally:
        fake.close()


def test_cluster_ask_redirection():
    def node_b(argv):
        if argv[0].upper() == b"ASKING":
            return b"+OK\r\n"
        return b"$3\r\nbar\r\n"
    b = AnsweringServer(node_b)
    a = AnsweringServer(lambda argv: b"-ASK 12182 127.0.0.1:%d\r\n" % b.port)
    try:
        res = same_as_redis_cli(a.port, ["-c", "get", "foo"])
        assert res.stdout == b"bar\n"
        assert b.seen[:2] == [[b"ASKING"], [b"get", b"foo"]]
    finally:
        a.close()
        b.close()


# ---------------------------------------------------------------------------
# Interactive mode through a pseudo-terminal
# ---------------------------------------------------------------------------
_WINSIZE = struct.pack("HHHH", 50, 250, 0, 0)


class Pty:
    def __init__(self, argv, env):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:   # child
            try:
                # the size set by the child itself, before the program runs:
                # set only by the parent, it could come after linenoise asked
                # (it then queries the cursor with ESC [6n and waits)
                fcntl.ioctl(1, termios.TIOCSWINSZ, _WINSIZE)
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        # A wide terminal: no line wrapping, and linenoise needs a size.
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, _WINSIZE)
        self.buf = b""

    def send(self, s):
        os.write(self.fd, s.encode() if isinstance(s, str) else s)

    def expect(self, pattern, timeout=15):
        rx = re.compile(pattern if isinstance(pattern, bytes) else pattern.encode(), re.S)
        deadline = time.time() + timeout
        while True:
            m = rx.search(self.buf)
            if m:
                before = self.buf[:m.start()]
                self.buf = self.buf[m.end():]
                return before, m
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError("timeout waiting for %r; got %r" % (pattern, self.buf))
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    m = rx.search(self.buf)
                    if m:
                        continue
                    raise AssertionError("EOF waiting for %r; got %r" % (pattern, self.buf))
                self.buf += data

    def close(self):
        if self.pid > 0:    # never kill(0): that is our own process group
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.pid = 0
        os.close(self.fd)

    def wait(self, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                self.expect(b"\x00NEVER", timeout=0.2)
            except AssertionError:
                pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.pid = 0
                return os.waitstatus_to_exitcode(status)
        raise AssertionError("process did not exit")


def _spawn(port, home, cli="ophidis", extra=()):
    env = cli_env({"HOME": home, "TERM": "xterm"})
    if cli == "ophidis":
        argv = [sys.executable, "-m", "ophidis.tools.cli", "-p", str(port)] + list(extra)
    else:
        argv = [REDIS_CLI, "-p", str(port)] + list(extra)
    return Pty(argv, env)


def _after_newline(prompt):
    """A prompt printed at the start of a line (not a redraw of the edited line)."""
    return rb"\n(?:\x1b\[[0-9;?]*[A-Za-z]|\r)*" + re.escape(prompt).encode()


def _reply(p, line, prompt):
    """Type a line, return the reply text printed before the next prompt."""
    p.send(line + "\r")
    before, _ = p.expect(_after_newline(prompt))
    before += b"\n"
    text = ANSI.sub(b"", before).replace(b"\r", b"")
    # What precedes the first newline is the edited line itself.
    return text.split(b"\n", 1)[1] if b"\n" in text else b""


INTERACTIVE_STRING = ["set foo bar", "get foo", "get nokey", "mget foo nokey", "incr cnt", "incr foo",
                      'set q "a b\\x01"', "get q", "3 incr cnt", "nosuchcommand", "keys nomatch*"]
INTERACTIVE_DATA = ["rpush l a b c", "lrange l 0 -1", "hset h f v", "hgetall h", "command info get"]


def test_interactive_session_matches_redis_cli(target, tmp_path):
    port, c, is_redis = target
    if REDIS_CLI is None:
        pytest.skip("redis-cli is not installed")
    lines = INTERACTIVE_STRING + (INTERACTIVE_DATA if is_redis else [])
    prompt = "127.0.0.1:%d> " % port
    transcripts = []
    for cli in ("ophidis", "redis"):
        c.flushall()
        home = str(tmp_path / cli)
        os.makedirs(home)
        p = _spawn(port, home, cli)
        try:
            p.expect(re.escape(prompt))
            transcripts.append([_reply(p, line, prompt) for line in lines])
        finally:
            p.close()
    assert transcripts[0] == transcripts[1]
    assert transcripts[0][1] == b'"bar"\n'
    assert transcripts[0][3] == b'1) "bar"\n2) (nil)\n'


def test_interactive_prompt_history_hints_help(target, tmp_path):
    port, c, is_redis = target
    home = str(tmp_path)
    prompt = "127.0.0.1:%d> " % port
    p = _spawn(port, home)
    try:
        p.expect(re.escape(prompt))
        assert _reply(p, "set k v", prompt) == b"OK\n"
        # The prompt shows the selected db.
        p.send("select 3\r")
        p.expect(_after_newline("127.0.0.1:%d[3]> " % port))
        p.send("select 0\r")
        p.expect(_after_newline(prompt))
        # Hints: typing "set " shows the arguments of SET in grey.
        p.send("set ")
        p.expect(rb"\x1b\[0;90;49mkey value")
        p.send("\x15")          # Ctrl-U clears the line
        p.expect(re.escape(prompt))
        # Completion: Tab completes a command name.
        p.send("getde\t")
        p.expect(rb"GETDEL")
        p.send("\x15\r")
        p.expect(_after_newline(prompt))
        # help <command> from COMMAND DOCS (redis) or the bundled metadata (Ophidis).
        p.send("help get\r")
        before, _ = p.expect(_after_newline(prompt))
        text = ANSI.sub(b"", before)
        assert b"GET key" in text
        assert b"summary:" in text and b"since: 1.0.0" in text and b"group: string" in text
        if is_redis:
            assert b"Get the value of a key" in text
        p.send("help @string\r")
        before, _ = p.expect(_after_newline(prompt))
        assert b"INCRBYFLOAT" in ANSI.sub(b"", before)
        # History: up arrow recalls the previous command.
        p.send("get k\r")
        p.expect(_after_newline(prompt))
        p.send("\x1b[A")
        p.expect(rb"get k")
        p.send("\r")
        before, _ = p.expect(_after_newline(prompt))
        assert b'"v"' in before
        p.send("auth secret\r")     # not stored in the history
        p.expect(_after_newline(prompt))
        p.send("quit\r")
        assert p.wait() == 0
    finally:
        p.close()
    hist = open(os.path.join(home, ".ophidiscli_history")).read().splitlines()
    assert hist[0] == "set k v"
    assert "help get" in hist and hist[-2:] == ["get k", "quit"]
    assert not any("secret" in h for h in hist)


def test_interactive_reconnects_after_restart(tmp_path):
    port = free_port()
    d = str(tmp_path / "srv")
    os.makedirs(d)

    def start():
        s = ServerProc(["--port", str(port)], cwd=d, wait=False)
        wait_port(port, s.proc)
        return s
    srv = start()
    prompt = "127.0.0.1:%d> " % port
    p = _spawn(port, str(tmp_path))
    try:
        p.expect(re.escape(prompt))
        assert _reply(p, "set a 1", prompt) == b"OK\n"
        srv.stop()
        p.send("get a\r")
        p.expect(_after_newline("not connected> "))
        srv = start()
        p.send("set a 2\r")
        before, _ = p.expect(_after_newline(prompt))
        assert b"OK" in before
        assert _reply(p, "get a", prompt) == b'"2"\n'
    finally:
        p.close()
        srv.stop()


def test_interactive_hints_from_server_command_docs(server, tmp_path):
    """Hints come from the server's COMMAND DOCS (Ophidis implements it)."""
    port = server.port
    r = run_cli(port, "command", "docs", "getex")
    assert b"arguments" in r.stdout and b"unknown command" not in r.stdout
    prompt = "127.0.0.1:%d> " % port
    p = _spawn(port, str(tmp_path))
    try:
        p.expect(re.escape(prompt))
        p.send("getex ")
        p.expect(rb"key \[EX seconds\|PX milliseconds\|EXAT unix-time-seconds\|PXAT "
                 rb"unix-time-milliseconds\|PERSIST\]")
    finally:
        p.close()
