"""redis.call's compiled bridge (net/_speedups.pyx's _script_call behind
ScriptBridge) against its pure twin (scripting/engine.py's script_call and
LuaEngine._redis_call / _redis_pcall): the same scripts through a server of
each kind must give the same replies and the same statistics."""

from __future__ import annotations

import hashlib
import os
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.resp import RespConn
from support.servers import rss_growth, start_twin, twin_pair

from ophidis import compiled
from ophidis.scripting import engine


@pytest.fixture(scope="module")
def pair():
    for servers in twin_pair():
        for s in servers:
            with RespConn(s.port) as c:
                c.call("ACL", "SETUSER", "r", "on", "nopass", "~k*", "+@all", "-incr", "-lpush")
        yield [s.port for s in servers]


def test_compiled_bridge_is_used():
    if not compiled.enabled():
        pytest.skip("ophidis.net._speedups is not built")
    if os.environ.get("OPHIDIS_PURE") == "1":
        pytest.skip("OPHIDIS_PURE=1: the Python bridge is asked for")
    assert engine._bridge is compiled.load("scripting._bridge")


_NAMES = ["set", "SET", "get", "incr", "lpush", "hset", "ping", "echo", "del", "nosuch", "multi",
          "config", "object", "client", "debug", "eval", "publish", "expire", "type", "lrange"]
_WORDS = ["k1", "k2", "x", "", "encoding", "get", "maxmemory", "1", "-3", "2.5", "abc\r\nd", "set",
          "help", "sleep", "0", "ex", "10"]

_lua_arg = st.one_of(
    st.sampled_from(_WORDS).map(lambda w: "'%s'" % w.replace("\r", "\\r").replace("\n", "\\n")),
    st.integers(-10**17, 10**17).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
    st.sampled_from(["true", "nil", "{}", "KEYS[1]", "ARGV[1]"]),
)
# well-formed calls (the common replies: status, bulk, null, integer, array, errors) ...
_VALID = [("'set'", ["KEYS[1]", "ARGV[1]"]), ("'SET'", ["'k2'", "5"]), ("'get'", ["KEYS[1]"]),
          ("'get'", ["'nokey'"]), ("'incr'", ["'k2'"]), ("'incr'", ["KEYS[1]"]), ("'ping'", []),
          ("'lpush'", ["'k3'", "'a'", "2"]), ("'lrange'", ["'k3'", "0", "-1"]), ("'hset'", ["'k4'", "'f'", "1.5"]),
          ("'echo'", ["''"]), ("'del'", ["'k1'", "'k2'"]), ("'expire'", ["KEYS[1]", "10"]), ("'type'", ["'k3'"]),
          ("'multi'", []), ("'config'", ["'get'", "'maxmemory'"]), ("'object'", ["'encoding'", "'k3'"]),
          ("'publish'", ["'ch'", "'m'"]), ("'get'", []), ("'nosuch'", ["'x'"]), ("'set'", ["'x'", "true"])]
_call = st.tuples(st.sampled_from(["redis.call", "redis.pcall"]),
                  st.one_of(st.sampled_from(_NAMES).map(lambda n: "'%s'" % n), _lua_arg),
                  st.lists(_lua_arg, max_size=4))
# ... and random ones
_call = st.one_of([st.tuples(st.sampled_from(["redis.call", "redis.pcall"]), *map(st.just, v)) for v in _VALID]) \
    | _call
_script = st.tuples(
    st.lists(_call, min_size=1, max_size=4),
    st.sampled_from(["", "#!lua flags=no-writes\n", "#!lua\n"]),
    st.sampled_from(["EVAL", "EVAL_RO"]),
    st.sampled_from(["default", "r"]),
    st.sampled_from(["return", "pcall"]),
)


def _lua(calls, shebang, how) -> str:
    body = []
    for fn, name, args in calls:
        expr = "%s(%s)" % (fn, ", ".join([name] + args))
        if how == "pcall":
            body.append("local ok, e = pcall(function() return %s end) "
                        "if not ok then return {'raised', type(e) == 'table' and e.err or tostring(e)} end" % expr)
        else:
            body.append("local r = %s if type(r) == 'table' and (r.err or r.ok) then return r end" % expr)
    return shebang + "\n".join(body) + "\nreturn 'end'"


def _run(port, cmds):
    with RespConn(port) as c:
        return [c.call(*a) for a in cmds]


def _stats(port):
    with RespConn(port) as c:
        info = c.call("INFO", "commandstats").decode() + c.call("INFO", "errorstats").decode()
    cmd = sorted(re.findall(r"cmdstat_([^:]+):calls=(\d+),usec=\d+,usec_per_call=[\d.]+,"
                            r"rejected_calls=(\d+),failed_calls=(\d+)", info))
    return cmd, sorted(re.findall(r"errorstat_(\S+):count=(\d+)", info))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_script)
def test_same_replies_and_stats(pair, script):
    calls, shebang, verb, user, how = script
    src = _lua(calls, shebang, how)
    sha = hashlib.sha1(src.encode()).hexdigest()
    cmds = [("FLUSHALL",), ("CONFIG", "RESETSTAT"), ("AUTH", user, "x") if user == "r" else ("PING",),
            (verb, src, "1", "k1", "v1"), ("SCRIPT", "LOAD", src), ("GET", "k1"),
            (verb.replace("EVAL", "EVALSHA"), sha, "1", "k1", "v2"), ("GET", "k1")]
    out = [_run(p, cmds) for p in pair]
    assert out[0] == out[1], src
    assert _stats(pair[0]) == _stats(pair[1]), src


def test_reply_types_through_both(pair):
    """Every reply type a command gives a script, converted to Lua and back,
    in RESP2 and RESP3 (the compiled side converts the common ones itself)."""
    src = ("redis.setresp(tonumber(ARGV[1])) redis.call('hset', 'kh', 'f', '1') redis.call('rpush', 'kl', 'a', 'b') "
           "redis.call('zadd', 'kz', 1.5, 'm') return {redis.call('set', 'k1', 'v'), redis.call('get', 'k1'), tostring(redis.call('get', 'nokey')), "
           "redis.call('incr', 'kn'), redis.call('lrange', 'kl', 0, -1), redis.call('hgetall', 'kh'), "
           "redis.pcall('incr', 'k1'), redis.call('ping'), redis.call('echo', ''), "
           "redis.call('hrandfield', 'kh', 1, 'withvalues'), redis.call('zscore', 'kz', 'm'), redis.call('smembers', 'kl2')}")
    for resp in ("2", "3"):
        cmds = [("FLUSHALL",), ("HELLO", resp), ("EVAL", src, "0", resp), ("EVAL", src, "0", "2")]
        out = [_run(p, cmds) for p in pair]
        assert out[0] == out[1]
        assert b"+OK\r\n" in out[0][2] and b"ERR value is not an integer" in out[0][2]
        assert (b",1.5\r\n" if resp == "3" else b"$3\r\n1.5\r\n") in out[0][2]


def test_same_slowlog_and_histograms(pair):
    """A script's commands in the slowlog and the latency histograms, as
    Server.call records them (the compiled bridge accounts for them itself)."""
    src = "redis.call('set', KEYS[1], ARGV[1]) redis.call('incr', 'n') return redis.call('get', KEYS[1])"
    entries = []
    for p in pair:
        with RespConn(p) as c:
            c.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
            c.call("SLOWLOG", "RESET")
            c.call("CONFIG", "RESETSTAT")
            for i in range(5):
                assert c.call("EVAL", src, "1", "k%d" % i, "v") == b"$1\r\nv\r\n"
            c.call("CONFIG", "SET", "slowlog-log-slower-than", "10000")
            log = c.call("SLOWLOG", "GET", "100")
            hist = c.call("LATENCY", "HISTOGRAM", "set", "incr", "get", "eval")
        # the argv of each entry (ids, times and durations differ)
        entries.append((re.findall(rb"\*\d+\r\n((?:\$\d+\r\n[^\r]*\r\n)+)\$\d+\r\n127\.0\.0\.1", log),
                        re.findall(rb"\$(\d+)\r\n(\w+)\r\n\*4\r\n\$5\r\ncalls\r\n:(\d+)", hist)))
    assert entries[0] == entries[1]
    # SLOWLOG RESET, CONFIG RESETSTAT, 5 EVAL (a script's commands are not logged)
    assert len(entries[0][0]) == 7
    assert sum(e.startswith(b"$4\r\nEVAL\r\n") for e in entries[0][0]) == 5
    assert sorted(x[1] for x in entries[0][1]) == [b"eval", b"get", b"incr", b"set"]
    assert all(x[2] == b"5" for x in entries[0][1])


# -- script calls on the request loop's fast path ------------------------------------------

_RAISE = "redis.call('config', 'set', 'min-replicas-to-write', '1') return 1"
_LOWER = "redis.call('config', 'set', 'min-replicas-to-write', '0') return 2"


def _after_script(port) -> bytes:
    """A pipeline whose script (allowed CONFIG SET by DEBUG
    SET-DISABLE-DENY-SCRIPTS) makes the server refuse writes: the SET after
    it in the same read must be refused, the one after the script that
    lowers the setting again accepted."""
    with RespConn(port) as c:
        c.call("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1")
        try:
            return c.pipeline(("EVAL", _RAISE, "0"), ("SET", "k", "v"), ("INCR", "n"),
                              ("EVAL", _LOWER, "0"), ("SET", "k", "v2"), ("GET", "k"))
        finally:
            c.call("CONFIG", "SET", "min-replicas-to-write", "0")
            c.call("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0")


def test_the_loop_rereads_its_switches_after_a_script():
    from support.servers import REDIS_SERVER, RedisServerProc
    servers = []
    try:
        servers.append(start_twin(pure=False))
        servers.append(start_twin(pure=True))
        if REDIS_SERVER is not None:
            servers.append(RedisServerProc())
        got = [_after_script(s.port) for s in servers]
    finally:
        for s in servers:
            s.stop()
    assert got[0].startswith(b":1\r\n-NOREPLICAS Not enough good replicas to write.\r\n-NOREPLICAS"), got[0]
    assert got[0].endswith(b":2\r\n+OK\r\n$2\r\nv2\r\n"), got[0]
    assert all(g == got[0] for g in got), got


# -- redis.call as a Lua C function and the run without lupa's call ------------------------

def test_the_lua_c_api_is_found():
    """The compiled layer finds the Lua C API in lupa's module: redis.call
    and redis.pcall become its C functions (else lupa would call the
    ScriptBridges and every figure of PERFORMANCE.md would be off)."""
    if not compiled.enabled() or os.environ.get("OPHIDIS_PURE") == "1":
        pytest.skip("no compiled layer")
    import lupa.lua51 as lupa
    lua = lupa.LuaRuntime(encoding=None)
    n = compiled.load("scripting._bridge")
    link = n.lua_functions(lua, os.fsencode(lupa.__file__), n.ScriptBridge(None, True), n.ScriptBridge(None, False))
    assert link is not None
    assert lupa.lua_type(link.call) == "function" and lupa.lua_type(link.pcall) == "function"
    assert lua.eval("function(f) return tostring(f):sub(1, 10) end")(link.call) == b"function: "


# Each script's reply must be the same from the compiled server, the pure one
# and redis-server: arguments of every Lua type, replies of every kind, the
# errors of redis.call and redis.pcall (raised, returned, with positions).
_C_SCRIPTS = [
    "return redis.call('echo', 7)",
    "return redis.call('echo', -7)",
    "return redis.call('echo', 2.5)",
    "return redis.call('echo', 1e15)",
    "return redis.call('echo', 12345678901234)",
    "return redis.call('echo', -0.375)",
    "return redis.call('echo', 1/0)",
    "return redis.call('echo', -1/0)",
    "return redis.call('echo', 'a\\0b')",
    "return redis.call('echo', true)",
    "return redis.call('echo', nil)",
    "return redis.call('echo', {})",
    "return redis.pcall('echo', {})",
    "return redis.call()",
    "return redis.pcall()",
    "return redis.call('nosuch', 'x')",
    "return redis.pcall('nosuch', 'x')",
    "redis.call('set', 's', 'x') return redis.call('incr', 's')",
    "redis.call('set', 's', 'x')\nreturn redis.pcall('incr', 's')",
    "redis.call('set', 's', 'x') local ok, e = pcall(redis.call, 'incr', 's') return {tostring(ok), type(e)}",
    "redis.call('set', 's', 'x') local ok, e = pcall(function() return redis.call('incr', 's') end) "
    "return {tostring(ok), e.err}",
    "local r = redis.pcall('incr') return {type(r), r.err}",
    "return redis.call('get', 'nokey')",
    "return tostring(redis.call('get', 'nokey'))",
    "return redis.call('ping')",
    "local r = redis.call('ping') return {type(r), r.ok}",
    "return redis.call('set', 'k', 'v')",
    "redis.call('rpush', 'l', 'a', 'b', 'c') return redis.call('lrange', 'l', 0, -1)",
    "redis.call('rpush', 'l', 'a') return #redis.call('lrange', 'l', 0, -1)",
    "redis.call('xadd', 'x', '1-1', 'f', 'v') return redis.call('xrange', 'x', '-', '+')",
    "return redis.call('config', 'get', 'maxmemory-policy')",
    "redis.call('rpush', 'l', 'a') return redis.pcall('lrange', 'l', 'x', 1)",
    "redis.call('sadd', 'st', 'm') local r = redis.call('smembers', 'st') return r[1]",
    "return redis.call('exists', 'nokey', 'k2')",
    "return 3.99", "return -3.99", "return 1e30", "return nil", "return true", "return false",
    "return {1, 'two', {3}, false, 5}", "return {ok = 'fine'}", "return {err = 'My Error'}",
    "return redis.error_reply('MY err')", "return redis.status_reply('ST')",
    "error('boom')", "error({err = 'ERR tabled'})", "local x = nil + 1",
    "return redis.call('set', KEYS[1], ARGV[1])", "return {KEYS[1], ARGV[1], ARGV[2]}",
    # keys do not expire while a script runs (the script's time snapshot; a
    # loop of few Lua instructions takes the time: TIME is frozen since 7.2)
    "redis.call('set', 't', 'v', 'px', 1) for i = 1, 20 do local s = string.rep('x', 5000000) end "
    "return {redis.call('exists', 't'), redis.call('get', 't')}",
]


def test_lua_c_functions_against_redis(pair):
    from support.servers import REDIS_SERVER, RedisServerProc
    ports = list(pair)
    ref = RedisServerProc() if REDIS_SERVER is not None else None
    try:
        if ref is not None:
            ports.append(ref.port)
        for src in _C_SCRIPTS:
            cmds = [("FLUSHALL",), ("EVAL", src, "1", "key", "arg1", "arg2")]
            out = [_run(p, cmds)[1] for p in ports]
            assert all(o == out[0] for o in out), (src, out)
        # the same scripts through EVALSHA, after one another on one connection
        outs = []
        for p in ports:
            with RespConn(p) as c:
                shas = [c.call("SCRIPT", "LOAD", src).decode() for src in _C_SCRIPTS]
                outs.append([c.call("EVALSHA", sha, "1", "key", "arg1") for sha in shas])
        assert all(o == outs[0] for o in outs)
    finally:
        if ref is not None:
            ref.stop()


_LIB = ("#!lua name=cfl\n"
        "redis.register_function('w', function(keys, args) redis.call('set', keys[1], args[1]) "
        "return redis.call('get', keys[1]) end)\n"
        "redis.register_function{function_name='r', callback=function(keys, args) return {keys[1], args[1]} end, "
        "flags={'no-writes'}}\n"
        "redis.register_function('e', function(keys, args) return redis.call('incr', keys[1]) end)")
_FCALLS = [("FCALL", "w", "1", "k", "v"), ("FCALL", "r", "1", "k", "v"), ("FCALL_RO", "r", "1", "k", "v"),
           ("FCALL_RO", "w", "1", "k", "v"), ("FCALL", "nosuch", "0"), ("FCALL", "W", "1", "k", "v"),
           ("FCALL", "w", "2", "k"), ("FCALL", "w", "-1"), ("FCALL", "w", "x"), ("FCALL", "w", "01", "k", "v"),
           ("FCALL", "e", "1", "k"), ("FCALL", "e", "1", "n"), ("FCALL", "r", "0"), ("EVALSHA", "0" * 40, "0"),
           ("EVALSHA", "x", "0"), ("EVALSHA", "e0e5c5f3f4e9d1b5b5a0f8f3c9bba8f1c2d3e4f5", "1")]


def test_fcall_and_evalsha_against_redis(pair):
    """FCALL/FCALL_RO and EVALSHA's errors and replies, compiled, pure and
    redis-server, with the statistics they count."""
    from support.servers import REDIS_SERVER, RedisServerProc
    ports = list(pair)
    ref = RedisServerProc() if REDIS_SERVER is not None else None
    try:
        if ref is not None:
            ports.append(ref.port)
        out = []
        for p in ports:
            with RespConn(p) as c:
                c.call("FLUSHALL")
                c.call("FUNCTION", "FLUSH")
                c.call("CONFIG", "RESETSTAT")
                c.call("FUNCTION", "LOAD", _LIB)
                got = [c.call(*a) for a in _FCALLS]
            out.append((got, _stats(p)))
        assert all(o == out[0] for o in out), out
        assert out[0][0][0] == b"$1\r\nv\r\n"
    finally:
        if ref is not None:
            ref.stop()


@pytest.mark.parametrize("pure", [False, True])
def test_shared_errors_keep_no_tracebacks(pure):
    """A shared error instance (errors.NOT_INT) raised again and again must
    not keep each raise's frames: 30,000 scripts whose redis.pcall fails
    grew the server by ~45 MB before error_reply dropped the traceback."""
    s = start_twin(pure=pure)
    try:
        with RespConn(s.port) as c:
            c.call("SET", "k", "v")
            sha = c.call("SCRIPT", "LOAD", "return {redis.pcall('incr', KEYS[1])}").decode().split("\r\n")[1]
            out, grown = rss_growth(s, c, [("EVALSHA", sha, "1", "k")] * 500)
            assert out.count(b"value is not an integer") == 500
        assert grown < 8 * 1024 * 1024, grown
    finally:
        s.stop()


_SNAP = ("for i = 1, 20 do local s = string.rep('x', 5000000) end "     # time, few Lua instructions (no hook)
         "return {redis.call('exists', KEYS[1]), redis.call('get', KEYS[1]), redis.call('get', KEYS[2])}")


def test_the_time_snapshot_is_the_runs_start(pair):
    """Keys do not expire while a script runs: the compiled run notes the
    time at its start and installs the snapshot before its first Python code
    (here the GET of a key with a TTL, after the key's expiry in real time;
    the other GET is a compiled body, which reads no clock)."""
    lib = ("#!lua name=snap\nredis.register_function('snap', function(KEYS, ARGV) %s end)"
           % _SNAP)
    for p in pair:
        with RespConn(p) as c:
            c.call("FUNCTION", "FLUSH")
            c.call("FUNCTION", "LOAD", lib)
            sha = c.call("SCRIPT", "LOAD", _SNAP)[-42:-2].decode()
            for call in (("EVAL", _SNAP, "2", "t", "plain"), ("EVALSHA", sha, "2", "t", "plain"),
                         ("FCALL", "snap", "2", "t", "plain")):
                c.call("SET", "plain", "p")
                assert c.call("SET", "t", "v", "PX", "5") == b"+OK\r\n"
                t0 = time.monotonic()
                assert c.call(*call) == b"*3\r\n:1\r\n$1\r\nv\r\n$1\r\np\r\n", call
                assert time.monotonic() - t0 > 0.005    # (the key expired during the run)
                assert c.call("EXISTS", "t") == b":0\r\n"


def test_notifications_switched_between_runs(pair):
    """The compiled bodies' configuration (keyspace events, lazy free) is
    read once a run: a CONFIG SET between two runs of one script applies to
    the second (two redis.call in each run: the second call reuses it)."""
    src = "redis.call('set', KEYS[1], 'a') redis.call('set', KEYS[1], 'b') return 1"
    for p in pair:
        with RespConn(p) as c, RespConn(p) as sub:
            sha = c.call("SCRIPT", "LOAD", src)[-42:-2].decode()
            sub.call("SUBSCRIBE", "__keyspace@0__:ev")
            for events in (b"", b"K$", b""):
                c.call("CONFIG", "SET", "notify-keyspace-events", events)
                assert c.call("EVALSHA", sha, "1", "ev") == b":1\r\n"
            c.call("PUBLISH", "__keyspace@0__:ev", "end")
            msgs = [sub.read_value() for _ in range(3)]
            assert [m[2] for m in msgs] == [b"set", b"set", b"end"], msgs


def test_the_last_sha_and_name_after_flush_and_delete(pair):
    """EVALSHA and FCALL look a script or a function up with the key object
    of the last one found: the same replies after SCRIPT FLUSH, FUNCTION
    DELETE/LOAD, and for a sha or a name in upper case."""
    lib = "#!lua name=ln\nredis.register_function('f1', function(k, a) return 'one' end)"
    lib2 = "#!lua name=ln\nredis.register_function('f1', function(k, a) return 'two' end)"
    out = []
    for p in pair:
        with RespConn(p) as c:
            c.call("FUNCTION", "FLUSH")
            c.call("SCRIPT", "FLUSH")
            sha = c.call("SCRIPT", "LOAD", "return 'x'")[-42:-2].decode()
            c.call("FUNCTION", "LOAD", lib)
            got = [c.call("EVALSHA", sha, "0"), c.call("EVALSHA", sha.upper(), "0"), c.call("EVALSHA", sha, "0"),
                   c.call("FCALL", "f1", "0"), c.call("FCALL", "F1", "0"), c.call("FCALL", "f1", "0")]
            c.call("SCRIPT", "FLUSH")
            c.call("FUNCTION", "DELETE", "ln")
            got += [c.call("EVALSHA", sha, "0"), c.call("FCALL", "f1", "0")]
            c.call("SCRIPT", "LOAD", "return 'x'")
            c.call("FUNCTION", "LOAD", lib2)
            got += [c.call("EVALSHA", sha, "0"), c.call("FCALL", "f1", "0"), c.call("FCALL", "F1", "0")]
            out.append(got)
    assert out[0] == out[1]
    x, one, two = b"$1\r\nx\r\n", b"$3\r\none\r\n", b"$3\r\ntwo\r\n"
    assert out[0] == [x, x, x, one, one, one,
                      b"-NOSCRIPT No matching script. Please use EVAL.\r\n", b"-ERR Function not found\r\n",
                      x, two, two]
