"""Modules: commands written in Python (MODULE LOAD/LOADEX/UNLOAD/LIST,
loadmodule, the example rate limiter), their place in the one command table
(COMMAND, ACL, key specs), their propagation (replicas, AOF), and Redis's
replies and errors, compared byte for byte with Debian's redis-server where
Redis has the same case."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import redis
from support.cluster import cluster_ports
from support.replication import SyncStream
from support.servers import REDIS_CLI, REDIS_SERVER, ROOT, RedisServerProc, ServerProc, reference_server, running_server
from support.wait import wait_until

from ophidis.modules import BUILTIN

RATELIMIT = os.path.join(ROOT, "examples", "modules", "ratelimit.py")
ENABLE = ("--enable-module-command", "yes")
LOAD_FAILED = b"-ERR Error loading the extension. Please check the server logs.\r\n"
NO_SUCH = b"-ERR Error unloading module: no such module with that name\r\n"
NOT_ALLOWED = (b"-ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", "
               b"you can run it from a local connection, otherwise you need to set this option in the "
               b"configuration file, and then restart the server.\r\n")

# A test module: a command propagated as called, a key-less read-only
# command, LOADEX configs, an unload hook that can refuse.
TESTMOD = '''
from ophidis.modules import api

STATE = {}


def tset(c, argv):
    c.db.set_key(argv[1], argv[2])
    api.modified(c, argv[1])
    return api.OK


def info(c, argv):
    return api.bulk_array([a.encode() for a in STATE["args"]] + [STATE["greeting"].encode()])


def bad(c, argv):
    return "not bytes"


def register(ctx, args):
    ctx.init("testmod", version=7)
    STATE["args"] = [a.decode() for a in args]
    STATE["greeting"] = ctx.config("greeting", "hello")
    STATE["refuse"] = b"refuse-unload" in args
    ctx.command("tm.set", tset, arity=3, flags="write deny-oom", keys=(1, 1, 1))
    ctx.command("tm.info", info, arity=1, flags="readonly fast")
    ctx.command("tm.bad", bad, arity=1, flags="readonly")
    ctx.command("tm.allow", allow, arity=1)


def allow(c, argv):
    STATE["refuse"] = False
    return api.OK


def unload(ctx):
    return not STATE["refuse"]
'''


@pytest.fixture(scope="module")
def srv():
    with running_server(ENABLE) as s:
        yield s


@pytest.fixture
def c(srv):
    conn = srv.conn()
    conn.call("FLUSHALL")
    yield conn
    conn.call("TM.ALLOW")
    for name in (b"ratelimit", b"testmod"):
        conn.call("MODULE", "UNLOAD", name)
    conn.call("ACL", "DELUSER", "u1", "u2", "u3")
    conn.close()


@pytest.fixture
def testmod(tmp_path):
    p = tmp_path / "testmod.py"
    p.write_text(TESTMOD)
    return str(p)


@pytest.fixture(scope="module")
def ref_mod():
    """redis-server with MODULE allowed (its default refuses it)."""
    yield from reference_server(ENABLE)


# Redis 8 reports its built-in data types as modules (modules/__init__.py's
# BUILTIN: ReJSON, bf ...), listed before the loaded modules.
REJSON = b"".join(b"*8\r\n$4\r\nname\r\n$%d\r\n%s\r\n$3\r\nver\r\n:%d\r\n$4\r\npath\r\n$%d\r\n%s\r\n"
                  b"$4\r\nargs\r\n*0\r\n" % (len(n), n.encode(), v, len(p), p.encode())
                  for n, v, p, _o in BUILTIN)
NO_MODULES = b"*%d\r\n" % len(BUILTIN) + REJSON
REJSON_INFO = "\r\n".join("module:name=%s,ver=%d,api=1,filters=0,usedby=[],using=[],options=[%s]" % (n, v, o)
                          for n, v, _p, o in BUILTIN)
BUILTIN_NAMES = {n.encode() for n, _v, _p, _o in BUILTIN}


def _mods(conn) -> list:
    """MODULE LIST (RESP2: each module a flat list of pairs) as dicts, the
    built-in ReJSON left out."""
    return [dict(zip(m[::2], m[1::2])) for m in conn.call_value("MODULE", "LIST")
            if m[1] not in BUILTIN_NAMES]


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


# -- MODULE LOAD / LIST / UNLOAD ------------------------------------------------------------

def test_load_list_unload(c, srv):
    assert c.call("MODULE", "LIST") == NO_MODULES
    n0 = c.call_value("COMMAND", "COUNT")
    assert c.call("MODULE", "LOAD", RATELIMIT, "a", "b") == b"+OK\r\n"
    assert c.call("MODULE", "LIST") == (
        b"*%d\r\n" % (len(BUILTIN) + 1) + REJSON + b"*8\r\n$4\r\nname\r\n$9\r\nratelimit\r\n$3\r\nver\r\n:1\r\n$4\r\npath\r\n$%d\r\n%s\r\n"
        b"$4\r\nargs\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n" % (len(RATELIMIT), RATELIMIT.encode()))
    assert c.call_value("COMMAND", "COUNT") == n0 + 2
    assert c.call("MODULE", "LOAD", RATELIMIT) == LOAD_FAILED          # the name is taken
    assert "initialization failed" in srv.output()
    assert c.call("MODULE", "UNLOAD", "RateLimit") == b"+OK\r\n"        # names compare without case
    assert c.call_value("COMMAND", "COUNT") == n0
    assert c.call("RATELIMIT.HIT", "k", "1", "1").startswith(b"-ERR unknown command 'RATELIMIT.HIT'")
    assert c.call("MODULE", "UNLOAD", "ratelimit") == NO_SUCH
    assert "Module ratelimit unloaded" in srv.output()


def test_list_in_resp3_hello_and_info(srv, c, testmod):
    c.call("MODULE", "LOAD", testmod, "x")
    c3 = srv.conn(resp3=True)
    try:
        r = c3.call("MODULE", "LIST")
        assert r.startswith(b"*%d\r\n%%4\r\n$4\r\nname\r\n$6\r\nReJSON\r\n" % (len(BUILTIN) + 1))
        assert b"%4\r\n$4\r\nname\r\n$7\r\ntestmod\r\n$3\r\nver\r\n:7\r\n" in r
        hello = c3.call_value("HELLO", "3")
        assert hello[b"modules"] == [{b"name": n.encode(), b"ver": v, b"path": p.encode(), b"args": []}
                                     for n, v, p, _o in BUILTIN] + [
                                     {b"name": b"testmod", b"ver": 7, b"path": testmod.encode(),
                                      b"args": [b"x"]}]
    finally:
        c3.close()
    line = "module:name=testmod,ver=7,api=1,filters=0,usedby=[],using=[],options=[]"
    for section in ((), ("modules",), ("module_list",), ("all",), ("everything",)):
        text = c.call_value("INFO", *section).decode()
        assert "# Modules\r\n" + REJSON_INFO + "\r\n" + line + "\r\n" in text, section


def test_loadex_configs_and_args(c, srv, testmod):
    assert c.call("MODULE", "LOADEX", testmod, "CONFIG", "testmod.greeting", "hi", "ARGS", "p", "q") == b"+OK\r\n"
    assert c.call_value("TM.INFO") == [b"p", b"q", b"hi"]
    assert _mods(c)[0][b"args"] == [b"p", b"q"]
    c.call("MODULE", "UNLOAD", "testmod")
    # a CONFIG the module did not ask for, and bad LOADEX syntax: Redis's error
    assert c.call("MODULE", "LOADEX", testmod, "CONFIG", "testmod.nope", "1") == LOAD_FAILED
    assert "Loadex configurations were not applied" in srv.output()
    assert c.call("MODULE", "LOADEX", testmod, "CONFIG", "testmod.greeting") == LOAD_FAILED
    assert c.call("MODULE", "LOADEX", testmod, "BOGUS") == LOAD_FAILED
    assert c.call("MODULE", "LOADEX", testmod) == b"+OK\r\n"
    assert c.call_value("TM.INFO") == [b"hello"]


def test_unload_refused_by_the_module(c, srv, testmod):
    c.call("MODULE", "LOAD", testmod, "refuse-unload")
    assert c.call("MODULE", "UNLOAD", "testmod") == b"-ERR Error unloading module: operation not possible.\r\n"
    assert "Module testmod OnUnload failed.  Unload canceled." in srv.output()
    assert c.call("TM.SET", "k", "v") == b"+OK\r\n"


def test_bad_reply_of_a_handler_is_an_error(c, testmod):
    c.call("MODULE", "LOAD", testmod)
    assert c.call("TM.BAD").startswith(b"-ERR internal error: module command tm.bad returned str")
    assert c.call("PING") == b"+PONG\r\n"


# -- bad files ----------------------------------------------------------------------------------

BAD_MODULES = {
    "raises.py": ("raise RuntimeError('boom at load')\n", "failed to load: RuntimeError: boom at load"),
    "noregister.py": ("X = 1\n", "does not define register(ctx, args). Module not loaded."),
    "syntax.py": ("def register(ctx, args)\n", "failed to load: SyntaxError"),
    "regraises.py": ("def register(ctx, args):\n    ctx.init('r')\n    raise ValueError('nope')\n",
                     "register() failed: ValueError: nope"),
    "noinit.py": ("def register(ctx, args):\n    pass\n", "did not call ctx.init(name)"),
    "returnsfalse.py": ("def register(ctx, args):\n    ctx.init('f')\n    return False\n", "initialization failed"),
    "busycmd.py": ("def register(ctx, args):\n    ctx.init('b')\n    ctx.command('get', lambda c, a: b'')\n",
                   "command name 'get' is busy"),
    "badflag.py": ("def register(ctx, args):\n    ctx.init('b')\n    ctx.command('b.x', lambda c, a: b'', "
                   "flags='write bogus')\n", "unknown command flag 'bogus'"),
}


@pytest.mark.parametrize("name", sorted(BAD_MODULES))
def test_bad_python_modules(c, srv, tmp_path, name):
    text, logged = BAD_MODULES[name]
    n0 = c.call_value("COMMAND", "COUNT")
    assert c.call("MODULE", "LOAD", _write(tmp_path, name, text)) == LOAD_FAILED
    wait_until(lambda: logged in srv.output(), timeout=20, what=logged)
    assert c.call("MODULE", "LIST") == NO_MODULES
    assert c.call_value("COMMAND", "COUNT") == n0


def test_not_python_files(c, srv, tmp_path):
    missing = str(tmp_path / "missing.py")
    assert c.call("MODULE", "LOAD", missing) == LOAD_FAILED
    assert "Module %s failed to load: %s: No such file or directory" % (missing, missing) in srv.output()
    so = str(tmp_path / "module.so")
    shutil.copy("/bin/true", so)
    elf_py = str(tmp_path / "elf.py")
    shutil.copy(so, elf_py)
    txt = _write(tmp_path, "module.txt", "def register(ctx, args): pass\n")
    for path in (so, elf_py, txt):
        assert c.call("MODULE", "LOAD", path) == LOAD_FAILED
        assert "Module %s failed to load: Ophidis supports Python modules only" % path in srv.output()


def test_errors_match_redis(ref_mod, c, tmp_path):
    """The replies redis-server gives for the same requests (its log lines differ)."""
    so = str(tmp_path / "module.so")
    shutil.copy("/bin/true", so)
    py = _write(tmp_path, "m.py", "def register(ctx, args): pass\n")
    ref = ref_mod.conn()
    try:
        # MODULE LIST differs by the built-in ReJSON (Redis 8's, not 7.0's)
        assert c.call("MODULE", "LIST") == NO_MODULES and ref.call("MODULE", "LIST") == b"*0\r\n"
        for req in (("MODULE", "UNLOAD", "nosuchmodule"),
                    ("MODULE", "LOAD", str(tmp_path / "missing.so")), ("MODULE", "LOAD", so),
                    ("MODULE", "LOAD", py), ("MODULE", "LOADEX", so, "CONFIG", "a"),
                    ("MODULE", "LOADEX", so, "BOGUS"), ("MODULE", "LOADEX", str(tmp_path / "x.so"), "ARGS"),
                    ("MODULE", "UNLOAD"), ("MODULE", "LOAD"), ("MODULE", "LIST", "x"), ("MODULE", "FOO"),
                    ("MODULE",)):
            assert c.call(*req) == ref.call(*req), req
    finally:
        ref.close()


def test_module_command_protected_like_redis(redis_server, start_server):
    ours = start_server()
    a, b = ours.conn(), redis_server.conn()
    try:
        for req in (("MODULE", "LOAD", RATELIMIT), ("MODULE", "LOADEX", RATELIMIT), ("MODULE", "UNLOAD", "x")):
            assert a.call(*req) == b.call(*req) == NOT_ALLOWED
        assert a.call("MODULE", "LIST") == NO_MODULES and b.call("MODULE", "LIST") == b"*0\r\n"
        assert a.call_value("MODULE", "HELP")[0] == b.call_value("MODULE", "HELP")[0]
    finally:
        a.close()
        b.close()
    local = start_server("--enable-module-command", "local").conn()      # we connect over loopback
    try:
        assert local.call("MODULE", "LOAD", RATELIMIT) == b"+OK\r\n"
    finally:
        local.close()


# -- loadmodule ---------------------------------------------------------------------------------

def test_loadmodule_in_config_and_rewrite(start_server, testmod):
    conf = ("loadmodule %s\nloadmodule %s one two\nenable-module-command yes\n"
            # user lines are read after the modules are loaded: they may name module commands
            "user alice on >pw ~* -@all +ratelimit.hit\n" % (RATELIMIT, testmod))
    s = start_server(config_text=conf)
    c = s.conn()
    try:
        alice = s.conn()
        assert alice.call("AUTH", "alice", "pw") == b"+OK\r\n"
        assert alice.call_value("RATELIMIT.HIT", "ak", "1", "100")[0] == 1
        assert alice.call("RATELIMIT.PEEK", "ak", "1").startswith(b"-NOPERM")
        alice.close()
        mods = {m[b"name"]: m for m in _mods(c)}
        assert mods[b"testmod"][b"args"] == [b"one", b"two"]
        assert mods[b"ratelimit"][b"path"] == RATELIMIT.encode()
        assert c.call_value("RATELIMIT.HIT", "k", "5", "100")[:2] == [1, 4]
        c.call("MODULE", "UNLOAD", "ratelimit")
        assert c.call("CONFIG", "REWRITE") == b"+OK\r\n"
    finally:
        c.close()
    with open(s.config_path) as f:
        lines = [ln for ln in f.read().splitlines() if ln.startswith("loadmodule")]
    assert lines == ["loadmodule %s one two" % testmod]
    s.stop()
    s2 = start_server(config_text="\n".join(lines + ["enable-module-command yes"]) + "\n")
    c2 = s2.conn()
    try:
        assert [m[b"name"] for m in _mods(c2)] == [b"testmod"]
    finally:
        c2.close()


def test_loadmodule_on_the_command_line(start_server):
    s = start_server("--loadmodule", RATELIMIT, "arg1")
    c = s.conn()
    try:
        assert _mods(c)[0][b"args"] == [b"arg1"]
        assert "Module 'ratelimit' loaded from %s" % RATELIMIT in s.output()
    finally:
        c.close()


def test_loadmodule_failure_aborts_start(tmp_path):
    bad = _write(tmp_path, "bad.py", "raise RuntimeError('no')\n")
    s = ServerProc(["--loadmodule", bad], cwd=str(tmp_path), wait=False)
    try:
        assert s.proc.wait(timeout=30) == 1
        assert "Can't load module from %s: server aborting" % bad in s.output()
    finally:
        s.stop()


# -- the example: redis-cli and redis-py ---------------------------------------------------------

def test_ratelimit_with_redis_py(c, srv):
    c.call("MODULE", "LOAD", RATELIMIT)
    r = srv.client()
    try:
        allowed, remaining, reset_ms = r.execute_command("RATELIMIT.HIT", "user:1", 2, 10)
        assert (allowed, remaining) == (1, 1) and 9000 < reset_ms <= 10000
        assert r.execute_command("RATELIMIT.HIT", "user:1", 2, 10)[:2] == [1, 0]
        assert r.execute_command("RATELIMIT.HIT", "user:1", 2, 10)[:2] == [0, 0]
        assert r.get("user:1") == b"2" and 9000 < r.pttl("user:1") <= 10000
        assert r.execute_command("RATELIMIT.PEEK", "user:1", 5)[0] == 3
        assert r.execute_command("RATELIMIT.PEEK", "other", 5) == [5, -1]
        r.set("str", "abc")
        with pytest.raises(redis.ResponseError, match="value is not an integer"):
            r.execute_command("RATELIMIT.HIT", "str", 2, 10)
        with pytest.raises(redis.ResponseError, match="max and period must be positive integers"):
            r.execute_command("RATELIMIT.HIT", "k", 0, 10)
        with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'ratelimit.hit' command"):
            r.execute_command("RATELIMIT.HIT", "k", 1)
        r.lpush("list", "x")
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            r.execute_command("RATELIMIT.HIT", "list", 2, 10)
        # the window ends with the key
        r.execute_command("RATELIMIT.HIT", "short", 1, 1)
        r.pexpire("short", 1)
        wait_until(lambda: r.execute_command("RATELIMIT.HIT", "short", 1, 1)[0] == 1, timeout=5)
    finally:
        r.close()


@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")
def test_ratelimit_with_redis_cli(c, srv):
    def cli(*args):
        return subprocess.run([REDIS_CLI, "-p", str(srv.port)] + list(args), capture_output=True, text=True,
                              timeout=30).stdout
    assert cli("MODULE", "LOAD", RATELIMIT).strip() == "OK"
    assert cli("RATELIMIT.HIT", "cli", "1", "60").split()[:2] == ["1", "0"]
    assert cli("RATELIMIT.HIT", "cli", "1", "60").split()[:2] == ["0", "0"]
    assert "ratelimit" in cli("MODULE", "LIST")
    assert cli("COMMAND", "LIST", "FILTERBY", "MODULE", "ratelimit").split() == ["ratelimit.hit", "ratelimit.peek"]


# -- the command table: COMMAND, key specs, ACL --------------------------------------------------

def test_command_info_docs_and_keys(c):
    c.call("MODULE", "LOAD", RATELIMIT)
    info = c.call_value("COMMAND", "INFO", "ratelimit.hit")[0]
    assert info[:6] == [b"ratelimit.hit", 4, [b"write", b"denyoom", b"module", b"fast"], 1, 1, 1]
    assert info[6] == [b"@write", b"@string", b"@fast"]
    assert info[8] == [[b"flags", [b"RW", b"access", b"update", b"insert"],
                        b"begin_search", [b"type", b"index", b"spec", [b"index", 1]],
                        b"find_keys", [b"type", b"range", b"spec", [b"lastkey", 0, b"keystep", 1, b"limit", 0]]]]
    docs = c.call_value("COMMAND", "DOCS", "ratelimit.peek")
    assert docs == [b"ratelimit.peek", [b"summary", b"Remaining hits of a fixed-window rate limit",
                                        b"since", b"1.0.0", b"group", b"module", b"complexity", b"O(1)",
                                        b"module", b"ratelimit"]]
    assert c.call_value("COMMAND", "GETKEYS", "ratelimit.hit", "k1", "1", "2") == [b"k1"]
    assert c.call_value("COMMAND", "LIST", "FILTERBY", "MODULE", "RATELIMIT") == [b"ratelimit.hit", b"ratelimit.peek"]
    assert c.call_value("COMMAND", "LIST", "FILTERBY", "MODULE", "nosuch") == []
    assert b"ratelimit.hit" in c.call_value("COMMAND", "LIST", "FILTERBY", "ACLCAT", "string")
    assert b"ratelimit.peek" in c.call_value("ACL", "CAT", "read")
    c.call("MODULE", "UNLOAD", "ratelimit")
    assert c.call("COMMAND", "INFO", "ratelimit.hit") == b"*1\r\n$-1\r\n"     # (as Redis: a null bulk)


def test_acl_on_module_commands(c, srv):
    c.call("ACL", "SETUSER", "u1", "on", ">p", "~*", "+@all", "-set")     # future commands allowed
    c.call("ACL", "SETUSER", "u2", "on", ">p", "~*", "-@all", "+@read")   # no category of RATELIMIT.HIT
    c.call("MODULE", "LOAD", RATELIMIT)
    c.call("ACL", "SETUSER", "u3", "on", ">p", "%R~rl:*", "~rl:w*", "+@string")
    conns = {}
    try:
        for u in ("u1", "u2", "u3"):
            conns[u] = srv.conn()
            assert conns[u].call("AUTH", u, "p") == b"+OK\r\n"
        assert conns["u1"].call_value("RATELIMIT.HIT", "rl:a", "3", "10")[0] == 1
        assert conns["u2"].call("RATELIMIT.HIT", "rl:a", "3", "10") == (
            b"-NOPERM User u2 has no permissions to run the 'ratelimit.hit' command\r\n")
        # a category rule given before MODULE LOAD covers the module's
        # commands that carry ACL categories: Redis 7.2+ re-applies every
        # user's rules then
        assert conns["u2"].call_value("RATELIMIT.PEEK", "rl:a", "3")[0] == 2
        c.call("ACL", "SETUSER", "u2", "-@read")
        assert conns["u2"].call("RATELIMIT.PEEK", "rl:a", "3") == (
            b"-NOPERM User u2 has no permissions to run the 'ratelimit.peek' command\r\n")
        c.call("ACL", "SETUSER", "u2", "+@read")
        assert conns["u2"].call_value("RATELIMIT.PEEK", "rl:a", "3")[0] == 2
        # key patterns read from the key specs' flags: read-only patterns allow PEEK only
        assert conns["u3"].call_value("RATELIMIT.PEEK", "rl:a", "3")[0] == 2
        assert conns["u3"].call("RATELIMIT.HIT", "rl:a", "3", "10") == (
            b"-NOPERM No permissions to access a key\r\n")
        log = c.call_value("ACL", "LOG", "1")[0]
        assert log[log.index(b"object") + 1] == b"rl:a" and log[log.index(b"username") + 1] == b"u3"
        assert conns["u3"].call_value("RATELIMIT.HIT", "rl:w1", "3", "10")[0] == 1
        # pipelined (the request loop's ACL plans): the same answers
        out = conns["u3"].pipeline(("RATELIMIT.HIT", "rl:w2", "3", "10"), ("RATELIMIT.HIT", "rl:a", "3", "10"),
                                   ("RATELIMIT.PEEK", "rl:w2", "3"), ("RATELIMIT.PEEK", "x", "3"))
        assert out.startswith(b"*3\r\n:1\r\n:2\r\n:")
        assert out.count(b"-NOPERM No permissions to access a key") == 2
        assert b"*2\r\n:2\r\n:" in out
        # a command allowed by name stays allowed when its module comes back
        c.call("ACL", "SETUSER", "u2", "+ratelimit.hit")
        c.call("MODULE", "UNLOAD", "ratelimit")
        # the rules stay as given (Redis 7.2+ describes a user by its rules)
        assert c.call_value("ACL", "GETUSER", "u2")[5] == b"-@all +@read +ratelimit.hit"
        c.call("MODULE", "LOAD", RATELIMIT)
        assert conns["u2"].call_value("RATELIMIT.HIT", "rl:a", "3", "10")[0] == 1
        assert conns["u3"].pipeline(("RATELIMIT.PEEK", "rl:w2", "3"), ("RATELIMIT.PEEK", "x", "3"))[:4] == b"*2\r\n"
        assert c.call_value("ACL", "GETUSER", "u2")[5] == b"-@all +@read +ratelimit.hit"
        assert c.call("ACL", "SETUSER", "u4", "+nosuch.cmd").startswith(b"-ERR Error in ACL SETUSER modifier")
    finally:
        for x in conns.values():
            x.close()


# -- propagation ---------------------------------------------------------------------------------

def test_propagation_to_the_replication_stream(c, srv, testmod):
    c.call("MODULE", "LOAD", RATELIMIT)
    c.call("MODULE", "LOAD", testmod)
    repl = SyncStream(srv.port)
    try:
        hit = c.call_value("RATELIMIT.HIT", "rk", "1", "30")
        assert hit[0] == 1
        assert c.call_value("RATELIMIT.HIT", "rk", "1", "30")[0] == 0      # refused: nothing propagated
        c.call("TM.SET", "tk", "tv")
        got = repl.read_until(b"tm.set")
        cmds = [a for a in got if a[0].lower() not in (b"select", b"ping")]
        assert cmds[0][:4] == [b"SET", b"rk", b"1", b"PXAT"]
        assert int(cmds[0][4]) == c.call_value("PEXPIRETIME", "rk")
        assert cmds[1:] == [[b"TM.SET", b"tk", b"tv"]]
    finally:
        repl.conn.close()


def test_ophidis_replica_runs_the_module_commands(c, srv, start_server, testmod):
    """A replica with the module loaded applies the verbatim TM.SET of its master."""
    c.call("MODULE", "LOAD", testmod)
    c.call("MODULE", "LOAD", RATELIMIT)
    c.call("CONFIG", "SET", "repl-diskless-sync-delay", "0")
    rep = start_server("--loadmodule", testmod, "--replicaof", "127.0.0.1", str(srv.port))
    rc = rep.conn()
    try:
        wait_until(lambda: b"master_link_status:up" in rc.call_value("INFO", "replication"), timeout=20)
        c.call("TM.SET", "vk", "vv")
        c.call("RATELIMIT.HIT", "rk", "2", "60")      # as SET ... PXAT: no module needed
        wait_until(lambda: rc.call_value("GET", "rk") == b"1", timeout=10)
        assert rc.call_value("GET", "vk") == b"vv"
        assert rc.call_value("PEXPIRETIME", "rk") == c.call_value("PEXPIRETIME", "rk")
        assert rc.call("TM.SET", "x", "y") == b"-READONLY You can't write against a read only replica.\r\n"
    finally:
        rc.close()


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")
def test_redis_server_replica_gets_the_counter(c, srv):
    """A real redis-server replica of ours (without any module) applies the hits."""
    c.call("MODULE", "LOAD", RATELIMIT)
    c.call("CONFIG", "SET", "repl-diskless-sync-delay", "0")
    rep = RedisServerProc(["--replicaof", "127.0.0.1", str(srv.port)])
    r = rep.client()
    try:
        wait_until(lambda: r.info("replication").get("master_link_status") == "up", timeout=20)
        c.call("RATELIMIT.HIT", "rr", "3", "60")
        c.call("RATELIMIT.HIT", "rr", "3", "60")
        wait_until(lambda: r.get("rr") == b"2", timeout=10)
        assert r.execute_command("PEXPIRETIME", "rr") == c.call_value("PEXPIRETIME", "rr")
    finally:
        r.close()
        rep.stop(remove=True)


def test_aof_restart_brings_the_data_back(start_server, tmp_path, testmod):
    args = ("--appendonly", "yes", "--loadmodule", testmod, "--loadmodule", RATELIMIT)
    s = start_server(*args, cwd=str(tmp_path))
    c = s.conn()
    try:
        c.call("RATELIMIT.HIT", "a", "5", "100")
        c.call("RATELIMIT.HIT", "a", "5", "100")
        c.call("TM.SET", "b", "verbatim")     # replayed through the module, loaded before the AOF
        end = c.call_value("PEXPIRETIME", "a")
    finally:
        c.close()
    s.stop()
    s2 = start_server(*args, cwd=str(tmp_path))
    c2 = s2.conn()
    try:
        assert c2.call_value("GET", "a") == b"2"
        assert c2.call_value("PEXPIRETIME", "a") == end
        assert c2.call_value("GET", "b") == b"verbatim"
    finally:
        c2.close()


def test_deny_oom_and_memory_accounting(c, srv):
    c.call("CONFIG", "SET", "maxmemory", "100mb")      # the memory wrappers are on before the load
    try:
        c.call("MODULE", "LOAD", RATELIMIT)
        assert c.call_value("RATELIMIT.HIT", "m", "2", "100")[0] == 1
        c.call("CONFIG", "SET", "maxmemory", "1")
        assert c.call("RATELIMIT.HIT", "m", "2", "100") == (
            b"-OOM command not allowed when used memory > 'maxmemory'.\r\n")
        assert c.call_value("RATELIMIT.PEEK", "m", "2")[0] == 1       # not deny-oom
    finally:
        c.call("CONFIG", "SET", "maxmemory", "0")


def test_cluster_routing_reads_the_key_specs(start_server, tmp_path, testmod):
    p1, p2 = cluster_ports(2)      # free with their bus ports
    s = start_server("--port", str(p1), "--cluster-enabled", "yes", "--cluster-config-file",
                     str(tmp_path / "nodes.conf"), "--loadmodule", RATELIMIT, "--loadmodule", testmod)
    c = s.conn()
    try:
        assert c.call("RATELIMIT.HIT", "k", "1", "10") == b"-CLUSTERDOWN Hash slot not served\r\n"
        assert c.call_value("TM.INFO") == [b"hello"]                  # no keys: not routed
        assert c.call("TM.SET", "{a}1", "x") == b"-CLUSTERDOWN Hash slot not served\r\n"
        assert c.call_value("COMMAND", "GETKEYS", "TM.SET", "{a}1", "x") == [b"{a}1"]
    finally:
        c.close()
    nocluster = _write(tmp_path, "nc.py", "def register(ctx, args):\n    ctx.init('nc')\n"
                       "    ctx.command('nc.x', lambda c, a: b'+OK\\r\\n', flags='no-cluster')\n")
    s2 = ServerProc(["--port", str(p2), "--cluster-enabled", "yes", "--cluster-config-file", str(tmp_path / "n2.conf"),
                     "--loadmodule", nocluster], cwd=str(tmp_path), wait=False)
    try:
        assert s2.proc.wait(timeout=30) == 1
        assert "flagged no-cluster, and cluster mode is on" in s2.output()
    finally:
        s2.stop()


def test_transactions_and_scripts_run_module_commands(c, testmod):
    c.call("MODULE", "LOAD", testmod)
    assert c.call("MULTI") == b"+OK\r\n"
    assert c.call("TM.SET", "m", "1") == b"+QUEUED\r\n"
    assert c.call("EXEC") == b"*1\r\n+OK\r\n"
    assert c.call("EVAL", "return redis.call('tm.set', KEYS[1], 'lua')", "1", "s") == b"+OK\r\n"
    assert c.call_value("GET", "s") == b"lua"
    assert c.call_value("INFO", "commandstats").count(b"cmdstat_tm.set:calls=2") == 1
