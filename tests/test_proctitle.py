"""The process title (proc-title-template, set-proc-title), read as Redis's
TCL test reads it (unit/other "Process title set as expected"): the
server's /proc/PID/cmdline, at start-up, after CONFIG SET, and its forked
children's (BGSAVE, the AOF rewrite, a diskless full sync); beside Debian's
redis-server doing the same, and without the setproctitle package."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest
import redis

from support.servers import REDIS_SERVER, RedisServerProc, ServerProc, children_of, free_port, server_env
from support.wait import wait_port, wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="/proc/PID/cmdline is Linux's")

# {title} of a ServerProc (python -m ophidis): the words that started it
INVOKED = "%s -m ophidis" % sys.executable
TEMPLATE = "TEST {title} {listen-addr} {port} {tls-port} {unixsocket} {config-file} {server-mode} {{x}"
BAD = ("CONFIG SET failed (possibly related to argument 'proc-title-template') - "
       "template format is invalid or contains unknown variables")


def cmdline(pid) -> bytes:
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        return f.read()


def title(pid):
    """The title: the command line's text before the NULs that pad it;
    None while the command line is the one the process was started with
    (its words NUL-separated)."""
    text = cmdline(pid).rstrip(b"\0")
    return None if b"\0" in text else text.decode()


def comm(pid) -> str:
    with open("/proc/%d/comm" % pid) as f:
        return f.read().rstrip("\n")


def child_of(pid) -> int:
    kids = []
    wait_until(lambda: kids.extend(children_of(pid)) or kids, what="the forked child")
    return kids[0]


def kill_child(c, pid):
    os.kill(pid, signal.SIGKILL)
    c.config_set("rdb-key-save-delay", 0)
    wait_until(lambda: not c.info("persistence")["rdb_bgsave_in_progress"], what="the child reaped")


# -- the same scenario on Redis and on Ophidis ------------------------------------------------

def scenario(s, invoked, sock) -> list:
    """What the title of server s shows (with its own {title}, ports and
    socket path replaced by names) at start-up, after CONFIG SET port, bind
    and proc-title-template, a bad template, and in a BGSAVE child."""
    pid, c = s.pid, s.client()
    subst = {invoked: "<title>", sock: "<sock>", str(s.port): "<port>"}

    def seen(p=None):
        t = title(pid if p is None else p)
        if t is None:
            return "<the command line>"
        for k, v in subst.items():
            t = t.replace(k, v)
        return t

    out = [seen()]
    port = free_port()
    subst[str(port)] = "<port>"
    c.config_set("port", port)
    out.append(seen())
    c.config_set("bind", "127.0.0.1")
    out.append(seen())
    c.config_set("proc-title-template", TEMPLATE)
    out.append(seen())
    with pytest.raises(redis.ResponseError) as e:
        c.config_set("proc-title-template", "{invalid-var}")
    out += [str(e.value), seen()]
    c.mset({"k1": "v", "k2": "v", "k3": "v"})
    c.config_set("rdb-key-save-delay", 1000000)
    c.bgsave()
    kid = child_of(pid)
    wait_until(lambda: seen(kid) != out[-1], what="the child's title")
    out += [seen(kid), comm(kid) == comm(pid)]
    kill_child(c, kid)
    return out


@pytest.mark.skipif(REDIS_SERVER is None, reason="Debian's redis-server is not installed")
@pytest.mark.parametrize("set_title", ["yes", "no"])
def test_title_as_redis_sets_it(tmp_path, set_title):
    """set-proc-title yes: the title at start-up and after every change of
    the listeners; proc-title-template and a child's name apply whatever
    set-proc-title says (Redis's updateProcTitleTemplate, rdbSaveBackground)."""
    seen = {}
    for name in ("redis", "ophidis"):
        sock = str(tmp_path / ("%s.sock" % name))
        args = ["--set-proc-title", set_title, "--unixsocket", sock]
        if name == "redis":
            s = RedisServerProc(args)
            invoked = REDIS_SERVER
        else:
            s = ServerProc(args)
            invoked = INVOKED
        try:
            seen[name] = scenario(s, invoked, sock)
            assert comm(s.pid) == os.path.basename(s.cmd[0])[:15]   # the program's name stays
        finally:
            s.stop()
            shutil.rmtree(s.dir, ignore_errors=True)
    assert seen["ophidis"] == seen["redis"]
    untitled = set_title == "no"
    assert seen["ophidis"] == [
        "<the command line>" if untitled else "<title> *:<port>",
        "<the command line>" if untitled else "<title> *:<port>",
        "<the command line>" if untitled else "<title> 127.0.0.1:<port>",
        "TEST <title> 127.0.0.1:<port> <port> 0 <sock> -  {x}",
        BAD,
        "TEST <title> 127.0.0.1:<port> <port> 0 <sock> -  {x}",
        "TEST redis-rdb-bgsave 127.0.0.1:<port> <port> 0 <sock> -  {x}",
        True]


# -- Ophidis: every variable, the other children, a script's {title} -------------------------

def test_every_variable_and_the_config_file(tmp_path):
    sock = str(tmp_path / "s.sock")
    s = ServerProc(cwd=str(tmp_path), config_text="unixsocket %s\n" % sock)
    try:
        assert title(s.pid) == "%s *:%d" % (INVOKED, s.port)
        c = s.client()
        c.config_set("proc-title-template", TEMPLATE)
        assert title(s.pid) == "TEST %s *:%d %d 0 %s %s  {x}" % (INVOKED, s.port, s.port, sock, s.config_path)
        c.config_set("proc-title-template", " {{ {port} ")     # trimmed of spaces
        assert title(s.pid) == "{ %d" % s.port
        for bad in ("{invalid-var}", "", " ", "{title", "{}"):
            with pytest.raises(redis.ResponseError):
                c.config_set("proc-title-template", bad)
        assert title(s.pid) == "{ %d" % s.port
        assert c.config_get("proc-title-template") == {"proc-title-template": " {{ {port} "}
    finally:
        s.stop()


@pytest.mark.parametrize("job", ["aof-rewrite", "diskless-sync"])
def test_children_titles(job):
    """BGREWRITEAOF's child is redis-aof-rewrite, a diskless full sync's
    redis-rdb-to-slaves (BGSAVE's: test_title_as_redis_sets_it)."""
    s = ServerProc(["--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"])
    replica = None
    try:
        c = s.client()
        c.mset({"k1": "v", "k2": "v", "k3": "v"})
        c.config_set("rdb-key-save-delay", 1000000)
        if job == "aof-rewrite":
            c.bgrewriteaof()
            name = "redis-aof-rewrite"
        else:
            replica = ServerProc(["--replicaof", "127.0.0.1", str(s.port)])
            name = "redis-rdb-to-slaves"
        kid = child_of(s.pid)
        wait_until(lambda: title(kid) == "%s *:%d" % (name, s.port), what="the child's title")
        assert comm(kid) == comm(s.pid)
        assert title(s.pid) == "%s *:%d" % (INVOKED, s.port)
        os.kill(kid, signal.SIGKILL)
    finally:
        if replica is not None:
            replica.stop()
        s.stop()


def test_script_title_is_its_path(tmp_path):
    """Started as a script (the ophidis-server console script, or the one
    Redis's TCL suite runs as src/redis-server), {title} is the script's
    path: argv[0], as redis-server's."""
    script = tmp_path / "redis-server"
    script.write_text("#!%s\nimport sys\nfrom ophidis.main import main\nsys.exit(main())\n" % sys.executable)
    script.chmod(0o755)
    port = free_port()
    proc = subprocess.Popen([str(script), "--port", str(port), "--save", "", "--dir", str(tmp_path)],
                            env=server_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        assert title(proc.pid) == "%s *:%d" % (script, port)
        assert comm(proc.pid) == "redis-server"
    finally:
        proc.terminate()
        proc.wait(10)


# -- without setproctitle ----------------------------------------------------------------------

STANDINS = {
    # not installed (or not importable)
    "is not installed": "raise ImportError('no setproctitle here')\n",
    # installed from its sources without a compiler: the package's no-op functions
    "has no C module here": "def setproctitle(title):\n    pass\n\n\ndef getthreadtitle():\n    return ''\n\n\n"
                            "def setthreadtitle(title):\n    pass\n",
}


@pytest.mark.parametrize("set_title", ["yes", "no"])
@pytest.mark.parametrize("why", sorted(STANDINS))
def test_without_setproctitle(tmp_path, why, set_title):
    """No title is set (logged once, at verbose level, by the server, not
    by each child); the template is still validated, and the children still
    run."""
    pkg = tmp_path / "standin" / "setproctitle"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(STANDINS[why])
    env = dict(os.environ, PYTHONPATH=str(pkg.parent))
    s = ServerProc(["--loglevel", "verbose", "--set-proc-title", set_title], env=env)
    try:
        c = s.client()
        started = cmdline(s.pid)
        assert title(s.pid) is None
        with pytest.raises(redis.ResponseError) as e:
            c.config_set("proc-title-template", "{invalid-var}")
        assert str(e.value) == BAD
        c.set("k", "v")
        for _ in range(2):
            c.bgsave()
            wait_until(lambda: not c.info("persistence")["rdb_bgsave_in_progress"], what="the BGSAVE")
            assert c.info("persistence")["rdb_last_bgsave_status"] == "ok"
        c.config_set("proc-title-template", TEMPLATE)
        assert cmdline(s.pid) == started
        line = "The process title is not set: the setproctitle package %s." % why
        assert s.output().count(line) == 1
    finally:
        s.stop()
