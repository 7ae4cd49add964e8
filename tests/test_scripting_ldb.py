"""The Lua debugger (SCRIPT DEBUG YES|SYNC): the same session, command by
command, on ophidis-server and redis-server, compared byte for byte."""

from __future__ import annotations

import shutil
import subprocess

import pytest

SCRIPT = (b"local a = {1,2,3}\n"
          b"local b = 'x\\ny'\n"
          b"redis.debug('hi', a, 5, {k=true})\n"
          b"redis.call('set','k','v')\n"
          b"local t = {x=1}\n"
          b"redis.breakpoint()\n"
          b"return a\n")

# Every debugger command once (and some twice), in an order that ends the script.
SESSION = [
    ["help"], ["s"], ["n"], ["p"], ["p", "a"], ["p", "KEYS"], ["print", "ARGV"], ["p", "zz"],
    ["b", "6"], ["b"], ["b", "99"], ["b", "x"], ["b", "-5"], ["l"], ["l", "2", "1"], ["w"], ["t"],
    ["e", "1+1"], ["eval", "{1,", "'a'}"], ["e", "x="], ["e", "error('boo')"],
    ["r", "get", "k"], ["redis", "hgetall", "k"], ["r", "nosuch"], ["r"],
    ["m"], ["m", "10"], ["maxlen", "0"], ["bogus"], ["s"], ["s"], ["r", "get", "k"],
    ["b", "0"], ["b", "6"], ["c"], ["c"],
]


def _session(conn, mode):
    out = [conn.call("SCRIPT", "DEBUG", mode)]
    conn.call("SET", "k", "old")
    conn.send("EVAL", SCRIPT, 1, "key1", "arg1")
    out.append(conn.read())
    for cmd in SESSION:
        conn.send(*cmd)
        out.append(conn.read())
    conn.send("c")
    out.append(conn.read_until_closed())      # <endsession>, the EVAL reply, then the close
    return out


@pytest.mark.parametrize("mode", ["sync", "yes"])
def test_debugging_session_as_redis(mode, r, ref, connect, redis_server):
    ours = _session(connect(), mode)
    theirs = _session(connect(redis_server.port), mode)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, "step %d %r" % (i, ([None, None] + SESSION + [["c"]])[i])
    assert len(ours) == len(theirs)
    # A forked session's writes stay in the child; a synchronous one's are kept.
    assert r.get("k") == ref.get("k") == (b"v" if mode == "sync" else b"old")
    assert r.ping()


def test_debugger_protocol_errors_and_refusals(connect, redis_server):
    for port in (None, redis_server.port):
        c = connect(port)
        assert c.call("SCRIPT", "DEBUG", "maybe") == b"-ERR Use SCRIPT DEBUG YES/SYNC/NO\r\n"
        assert c.call("SCRIPT", "DEBUG", "sync") == b"+OK\r\n"
        assert c.call("EVALSHA", "a" * 40, 0) == b"-ERR Please use EVAL instead of EVALSHA for debugging\r\n"
        c.send("EVAL", "return 'hello'", 0)
        assert c.read() == b"*2\r\n+* Stopped at 1, stop reason = step over\r\n+-> 1   return 'hello'\r\n"
        for name in ("hello\0world", "hello\0", "\0hello"):
            assert b"Unknown Redis Lua debugger command" in c.call(name)
        # 100 arguments to redis: an unknown command from the script, and the server lives on.
        c.send("redis", *["test"] * 100)
        assert b"Unknown Redis command called from script" in c.read()
        c.close()
        assert connect(port).call("PING") == b"+PONG\r\n"


def test_debugging_stops_with_the_client(connect, redis_server):
    """A client that goes away lets the script run to its end."""
    for port in (None, redis_server.port):
        c = connect(port)
        c.call("SCRIPT", "DEBUG", "sync")
        c.send("EVAL", "redis.call('set', 'gone', 1)\nreturn 1", 0)
        assert b"Stopped at 1" in c.read()
        c.close()
        other = connect(port)
        assert other.call("GET", "gone") == b"$1\r\n1\r\n"
        assert other.call("SCRIPT", "DEBUG", "no") == b"+OK\r\n"
        assert other.call("EVAL", "return 2", 0) == b":2\r\n"
        other.call("DEL", "gone")


def test_redis_cli_ldb_session(server, redis_server, tmp_path):
    """redis-cli --ldb (a forked session) sees the same session on both."""
    cli = shutil.which("redis-cli")
    if cli is None:
        pytest.skip("redis-cli is not installed")
    script = tmp_path / "s.lua"
    script.write_text("local x = 1\nredis.call('set', KEYS[1], ARGV[1])\nreturn x\n")
    out = []
    for port in (server.port, redis_server.port):
        p = subprocess.run([cli, "-p", str(port), "--ldb", "--eval", str(script), "k", ",", "v"],
                           input="s\np\nc\n", capture_output=True, text=True, timeout=20)
        out.append(p.stdout)
    assert out[0] == out[1]
    assert "<value> x = 1" in out[0] and "dataset changes rolled back" in out[0]


def test_debugged_script_stops_when_it_runs_too_long(connect, redis_server, r, ref, config):
    """No busy state while debugging: past busy-reply-threshold the debugger
    stops the script ("timeout reached"), and abort ends it."""
    replies = []
    for port, c in ((None, r), (redis_server.port, ref)):
        config(c, busy_reply_threshold=200)
        d = connect(port)
        d.call("SCRIPT", "DEBUG", "sync")
        d.send("EVAL", "local i = 0\nwhile true do\n i = i + 1\nend\n", 0)
        got = [d.read()]
        d.send("c")
        got.append(d.read(timeout=10))
        d.send("a")
        got.append(d.read_until_closed())
        replies.append(got)
    assert replies[0] == replies[1]
    assert b"stop reason = timeout reached, infinite loop?" in replies[0][1]
    assert b"-ERR script aborted for user request script: " in replies[0][2]
