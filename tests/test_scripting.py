"""Lua scripting: EVAL & co, SCRIPT, the sandbox, conversions, libraries,
busy scripts.  Differential tests compare raw replies with redis-server."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import redis

from support.resp import RespConn, encode

from ophidis.sysinfo import REDIS_VERSION


def both(raw, ref_raw, *args):
    a = raw.call(*args)
    b = ref_raw.call(*args)
    assert a == b, (args, a, b)
    return a


# -- basics -------------------------------------------------------------------------------

def test_eval_basic(r):
    assert r.eval("return 1", 0) == 1
    assert r.eval("return KEYS[1] .. ARGV[1]", 1, "k", "v") == b"kv"
    assert r.eval("return redis.call('set', KEYS[1], ARGV[1])", 1, "k", "v") == b"OK"
    assert r.get("k") == b"v"
    assert r.eval("return redis.call('get', KEYS[1])", 1, "k") == b"v"
    assert r.eval("return {#KEYS, #ARGV}", 2, "a", "b", "c") == [2, 1]


def test_evalsha_and_script_cache(r):
    sha = r.script_load("return 'hello'")
    assert sha == "1b936e3fe509bcbc9cd0664897bbe8fd0ac95a2b" or len(sha) == 40
    import hashlib
    assert sha == hashlib.sha1(b"return 'hello'").hexdigest()
    assert r.evalsha(sha, 0) == b"hello"
    assert r.evalsha(sha.upper(), 0) == b"hello"
    assert r.script_exists(sha, "0" * 40, sha.upper()) == [True, False, True]
    assert r.info("memory")["number_of_cached_scripts"] >= 1
    with pytest.raises(redis.ResponseError, match="^No matching script. Please use EVAL.$"):
        r.evalsha("0" * 40, 0)
    with pytest.raises(redis.exceptions.NoScriptError):
        r.evalsha("abc", 0)
    # EVAL caches too
    r.eval("return 42", 0)
    sha42 = hashlib.sha1(b"return 42").hexdigest()
    assert r.evalsha(sha42, 0) == 42
    assert r.script_flush() is True
    assert r.script_exists(sha) == [False]
    assert r.info("memory")["number_of_cached_scripts"] == 0
    with pytest.raises(redis.ResponseError, match="SCRIPT FLUSH only support SYNC|ASYNC option"):
        r.execute_command("SCRIPT", "FLUSH", "bad")
    assert r.execute_command("SCRIPT", "FLUSH", "ASYNC") == b"OK"


def test_numkeys_errors(raw, ref_raw):
    both(raw, ref_raw, "EVAL", "return 1", "2", "a")
    both(raw, ref_raw, "EVAL", "return 1", "-1")
    both(raw, ref_raw, "EVAL", "return 1", "x")
    both(raw, ref_raw, "EVALSHA", "x" * 40, "0")
    both(raw, ref_raw, "EVAL", "return 1")


def test_select_in_script_does_not_change_caller_db(r):
    r.set("k", "db0")
    assert r.eval("redis.call('select', 1) redis.call('set', 'k', 'db1') return redis.call('get', 'k')", 0) == b"db1"
    assert r.get("k") == b"db0"
    r.execute_command("SELECT", 1)
    try:
        assert r.get("k") == b"db1"
    finally:
        r.execute_command("SELECT", 0)


def test_redis_py_lock_and_register_script(r):
    lock = r.lock("mylock", timeout=5)
    assert lock.acquire(blocking=False)
    assert r.get("mylock") is not None
    other = r.lock("mylock", timeout=5)
    assert not other.acquire(blocking=False)
    assert lock.extend(5)
    assert lock.reacquire()
    lock.release()
    assert r.get("mylock") is None
    with pytest.raises(redis.exceptions.LockError):
        lock.release()
    incrby = r.register_script("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    assert incrby(keys=["n"], args=[5]) == 5
    r.script_flush()
    assert incrby(keys=["n"], args=[2]) == 7   # reloads after NOSCRIPT


# -- error replies (differential) ----------------------------------------------------------------

ERROR_SCRIPTS = [
    "x = 1",
    "return y",
    "return redis.call('nosuch')",
    "redis.call('nosuch')",
    "return redis.call('get')",
    "return redis.call('incr', 'a', 'b')",
    "return redis.pcall('nosuch')",
    "return redis.call('multi')",
    "return redis.call('client', 'id')",
    "return redis.call('eval', 'return 1', 0)",
    "error('boom')",
    "error({err='MY boom'})",
    "error()",
    "error(123)",
    "return redis.error_reply('MY err')",
    "return redis.error_reply('-MY err')",
    "return redis.error_reply('x')",
    "return redis.error_reply('')",
    "return redis.error_reply(1)",
    "return redis.status_reply(1)",
    "return {err='no code'}",
    "return redis.call()",
    "return redis.call({})",
    "return redis.call('get', {})",
    "return redis.call('get', true)",
    "return 'a' .. ",
    "local t = 1\nx()",
    "redis.call('set', 'str', 'x') return redis.call('incr', 'str')",
    "redis.call('set', 'str', 'x') return redis.pcall('incr', 'str')",
    "redis.call('set', 'str', 'x') local ok, e = pcall(redis.call, 'incr', 'str') return {tostring(ok), e}",
    "local ok, e = pcall(function() redis.call('nosuch') end) return e",
    "return pcall(redis.call, 'nosuch')",
    "redis.setresp(4)",
    "redis.setresp()",
    "redis.log()",
    "redis.log('x', 'y')",
    "redis.log(9, 'y')",
    "redis.set_repl(9)",
    "redis.set_repl()",
    "return redis.sha1hex()",
    "local x = coroutine.wrap(function() error('x') end)() return x",
    "setmetatable(_G, {})",
    "rawset(_G, 'x', 1)",
    "string.x = 1",
    "table.insert(string, 1)",
    "redis.call = nil",
    "local t = getmetatable('') t.__index = nil return 1",
    "return loadstring('x = 5')()",
    "return loadstring(string.dump(function() return 1 end))",
    "#!lua\nreturn 1",
    "#!lua flags=no-writes\nreturn redis.call('set', 'a', 'b')",
    "#!lua flags=bogus\nreturn 1",
    "#!lua foo=bar\nreturn 1",
    "#!python\nreturn 1",
    "#!lua",
    "#!lua name=x\nreturn 1",
    "return redis.call('client', 'nosuch')",
    "return redis.call('config')",
    "return redis.call('object', 'encoding')",
]


def test_eval_ro(raw, ref_raw):
    both(raw, ref_raw, "EVAL_RO", "return redis.call('set', 'a', 'b')", "0")
    both(raw, ref_raw, "EVAL_RO", "return redis.call('get', 'a')", "0")
    both(raw, ref_raw, "EVAL_RO", "return redis.call('del', 'a')", "0")
    both(raw, ref_raw, "EVAL_RO", "#!lua\nreturn 1", "0")
    both(raw, ref_raw, "EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0")
    sha = both(raw, ref_raw, "SCRIPT", "LOAD", "return redis.call('incr', 'a')").split(b"\r\n")[1].decode()
    both(raw, ref_raw, "EVALSHA_RO", sha, "0")
    both(raw, ref_raw, "EVALSHA", sha, "0")


def test_error_stats_counted_once(r):
    r.config_resetstat()
    with pytest.raises(redis.ResponseError):
        r.eval("redis.call('set', 'str', 'x') return redis.call('incr', 'str')", 0)
    stats = r.info("errorstats")
    assert stats["errorstat_ERR"]["count"] == 1
    with pytest.raises(redis.ResponseError):
        r.eval("return redis.call('nosuch')", 0)
    assert r.info("errorstats")["errorstat_ERR"]["count"] == 2


# -- conversions -----------------------------------------------------------------------------------

VALUE_SCRIPTS = [
    "return 1",
    "return -1",
    "return 3.99",
    "return -3.99",
    "return 1e20",
    "return 0/0",
    "return 'str'",
    "return ''",
    "return true",
    "return false",
    "return nil",
    "return {}",
    "return {1, 2, 3, 'ciao', {1, 2}}",
    "return {1, 2, nil, 4}",
    "return {1.9, -1.9, true, false, 'x'}",
    "return {ok='fine'}",
    "return {ok='a\\r\\nb'}",
    "return {err='ERR x\\ny'}",
    "return redis.status_reply('OK')",
    "return {double=3.5}",
    "return {double=1/0}",
    "return {double=-1/0}",
    "return {big_number='123456789012345678901234567890'}",
    "return {map={a=1}}",
    "return {set={a=true}}",
    "return {verbatim_string={format='txt', string='hello'}}",
    "return {1, {ok='x'}, {err='E y'}}",
    "return {x=1, 2}",
    "return redis.call('ping')",
    "return redis.call('get', 'nosuchkey')",
    "return type(redis.call('get', 'nosuchkey'))",
    "redis.call('set', 'k', 'v') return {redis.call('set', 'k', 'v'), redis.call('get', 'k')}",
    "return redis.call('set', 'k', 1e20) and redis.call('get', 'k')",
    "return redis.call('set', 'k', 12345678901234) and redis.call('get', 'k')",
    "return redis.call('set', 'k', -7) and redis.call('get', 'k')",
    "return redis.call('set', 'k', 'v', 'nx')",
    "return type(redis.call('set', 'k', 'v', 'xx', 'get'))",
    "redis.call('set','c',1) return redis.call('incrbyfloat', 'c', '1.5')",
    "return redis.call('mget', 'nokey', 'nokey2')",
    "return redis.call('exists', 'nokey')",
    "return {redis.call('type', 'nokey')}",
    "return redis.call('time')[1] ~= nil",
    "return redis.sha1hex('')",
    "return redis.sha1hex(12)",
    "return redis.sha1hex(nil)",
    "return {redis.REPL_ALL, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_NONE}",
    "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
    "return redis.replicate_commands()",
    "return redis.breakpoint()",
    "return type(redis.debug)",
    "redis.set_repl(redis.REPL_NONE) return 1",
    "redis.log(redis.LOG_WARNING, 'from', 'lua', 1) return 1",
    "return _VERSION",
    "return #string",
    "return ('x'):upper()",
    "return type(getmetatable(_G))",
    "return tostring(1e15) .. ' ' .. tostring(0.1)",
    "return {math.floor(2.5), math.huge > 0 and 1 or 0}",
    "return string.format('%d %s %5.2f', 3, 'x', 1.5)",
    "return table.concat({'a', 'b'}, ',')",
    "local t = {} table.insert(t, 1) table.insert(t, 2) return t",
    "local n = 0 for k, v in pairs(redis) do n = n + 1 end return n",
    "local r = {} for _, n in ipairs({'io','debug','loadfile','dofile','require','package','print',"
    "'newproxy','gcinfo','module','setfenv','getfenv','loadstring','load','collectgarbage','coroutine','unpack',"
    "'select','_G','bit','cjson','cmsgpack','struct','math','string','table','xpcall','pcall','error','assert',"
    "'rawset','rawget','rawequal','next','pairs','ipairs','tostring','tonumber','type','getmetatable',"
    "'setmetatable','python'}) do table.insert(r, n .. '=' .. type(rawget(_G, n))) end return r",
    "local r = {} for k, v in pairs(math) do table.insert(r, k) end table.sort(r) return r",
    "local r = {} for k, v in pairs(string) do table.insert(r, k) end table.sort(r) return r",
    "local r = {} for k, v in pairs(table) do table.insert(r, k) end table.sort(r) return r",
    "local r = {} for k, v in pairs(redis) do table.insert(r, k .. '=' .. type(v)) end table.sort(r) return r",
    "return select('#', pcall(error))",
    "local co = coroutine.create(function(a) local b = coroutine.yield(a + 1) return b * 2 end) "
    "local _, x = coroutine.resume(co, 1) local _, y = coroutine.resume(co, 10) return {x, y}",
]


def test_os_library_is_clock_only_as_redis_74(same_as_valkey):
    """Since Redis 7.4 scripts see an ``os`` table holding only ``clock``
    (the process's CPU time); 7.0 had no ``os`` at all.  The table is
    read-only, and the other os functions are absent (calling one is
    Lua's "attempt to call field" error; compared through pcall: valkey's
    error reply names no script)."""
    scripts = [
        "local r = {} for k, v in pairs(os) do table.insert(r, k .. '=' .. type(v)) end return r",
        "return type(rawget(_G, 'os'))",
        "return type(os.clock())",
        "return os.clock() >= 0",
        "return {pcall(function() os.clock = nil end)}",
        "return {pcall(function() os.x = 1 end)}",
        "return getmetatable(os)",
    ] + ["return {pcall(function() os.%s() end)}" % f for f in ("execute", "exit", "getenv", "remove", "rename", "setlocale", "tmpname",
                                 "date", "time", "difftime")]
    same_as_valkey([["EVAL", s, "0"] for s in scripts])
    fn = ("#!lua name=oslib\nredis.register_function('osf', function(keys, args) "
          "local r = {} for k in pairs(os) do table.insert(r, k) end "
          "table.insert(r, type(os.clock())) return r end)")
    same_as_valkey([["FUNCTION", "FLUSH"], ["FUNCTION", "LOAD", fn], ["FCALL", "osf", "0"],
                    ["FCALL", "osf", "0"]], protocols=(2,))


def test_os_clock_measures_cpu_time(r):
    """os.clock advances with the script's own work (Redis 7.4's test
    "Measures elapsed time os.clock()", shortened)."""
    took = r.eval("local s = os.clock() while os.clock() - s < 0.2 do end "
                  "return {double = os.clock() - s}", 0)
    assert 0.2 <= float(took) < 5


def test_number_arguments_as_redis_72(same_as_valkey):
    """A Lua number given to redis.call becomes its shortest text since
    Redis 7.2 (7.0 printed %.17g: 0.10000000000000001)."""
    same_as_valkey([["EVAL", "return redis.call('set', 'k', %s) and redis.call('get', 'k')" % x, "0"]
                    for x in ("0.1", "1/3", "1e15", "1e300", "-0.5", "3")])


@pytest.mark.parametrize("script", VALUE_SCRIPTS)
def test_values_match_redis(raw, ref_raw, script):
    both(raw, ref_raw, "EVAL", script, "0")


@pytest.mark.parametrize("script", VALUE_SCRIPTS[:40] + [
    "redis.setresp(3) return redis.call('hello', '3')['server'] ~= nil",
    "redis.setresp(3) return {map={a=1, b=2}}",
    "redis.setresp(3) return {true, false, nil}",
    "redis.setresp(3) return {double=2.5}",
    "redis.setresp(3) return redis.call('get', 'nokey')",
    "redis.setresp(3) return type(redis.call('get', 'nokey'))",
    "return {true, false}",
])
def test_values_match_redis_resp3(server, redis_server, r, ref, script):
    a, b = RespConn(server.port, resp3=True), RespConn(redis_server.port, resp3=True)
    try:
        assert a.call("EVAL", script, "0") == b.call("EVAL", script, "0")
    finally:
        a.close()
        b.close()


def test_redis_types_to_lua(r):
    r.set("s", "v")
    assert r.eval("return type(redis.call('get', 's'))", 0) == b"string"
    assert r.eval("return type(redis.call('get', 'nope'))", 0) == b"boolean"
    assert r.eval("return redis.call('get', 'nope') == false and 1 or 0", 0) == 1
    assert r.eval("return type(redis.call('incr', 'n'))", 0) == b"number"
    assert r.eval("return redis.call('set', 'x', 'y').ok", 0) == b"OK"
    assert r.eval("return redis.pcall('incr', 's').err", 0) == b"ERR value is not an integer or out of range"
    assert r.eval("return type(redis.call('mget', 's', 'nope'))", 0) == b"table"
    assert r.eval("return redis.call('mget', 's', 'nope')[2] == false and 1 or 0", 0) == 1


# -- sandbox --------------------------------------------------------------------------------------

ESCAPES = [
    ("return os.execute('true')", "attempt to call field 'execute' (a nil value)"),   # 7.4: os.clock only
    ("return io.open('/etc/passwd')", "nonexistent global variable 'io'"),
    ("return loadfile('/etc/passwd')", "nonexistent global variable 'loadfile'"),
    ("return dofile('/etc/passwd')", "nonexistent global variable 'dofile'"),
    ("return require('os')", "nonexistent global variable 'require'"),
    ("return package.loaded", "nonexistent global variable 'package'"),
    ("return debug.getinfo(1)", "nonexistent global variable 'debug'"),
    ("return python.eval('1')", "nonexistent global variable 'python'"),
    ("return getfenv(0)", "nonexistent global variable 'getfenv'"),
    ("return setfenv(1, {})", "nonexistent global variable 'setfenv'"),
    ("return loadstring('return os.getenv')()('HOME')", "attempt to call a nil value"),
    ("return loadstring('return debug')()", "nonexistent global variable 'debug'"),
    ("return coroutine.wrap(function() return io end)()", "nonexistent global variable 'io'"),
    ("_G.x = 1", "Attempt to modify a readonly table"),
    ("redis.call = function() end", "Attempt to modify a readonly table"),
    ("cjson.encode = nil", "Attempt to modify a readonly table"),
    ("getmetatable('').__index = {}", "Attempt to modify a readonly table"),
    ("rawset(redis, 'x', 1)", "Attempt to modify a readonly table"),
    ("setmetatable(redis, nil)", "Attempt to modify a readonly table"),
    ("table.sort(math)", "Attempt to modify a readonly table"),
]


@pytest.mark.parametrize("script,err", ESCAPES)
def test_sandbox_escapes_refused(r, script, err):
    with pytest.raises(redis.ResponseError) as ei:
        r.eval(script, 0)
    assert err in str(ei.value)
    # the environment is unchanged for the next script
    assert r.eval("return type(redis.call) .. type(string.upper) .. type(cjson.encode)", 0) == \
        b"functionfunctionfunction"


def test_python_objects_not_reachable(r):
    assert r.eval("return getmetatable(redis.call) == nil and 1 or 0", 0) == 1
    with pytest.raises(redis.ResponseError):
        r.eval("return redis.call.__class__", 0)
    with pytest.raises(redis.ResponseError):
        r.eval("return bit.band.__globals__", 0)


def test_globals_do_not_leak_between_scripts(r):
    with pytest.raises(redis.ResponseError):
        r.eval("x = 10", 0)
    with pytest.raises(redis.ResponseError, match="nonexistent global variable 'x'"):
        r.eval("return x", 0)
    # local state is fine, KEYS/ARGV are per call
    assert r.eval("local t = {} t.a = 1 KEYS[1] = 'changed' return KEYS[1]", 1, "k") == b"changed"
    assert r.eval("return KEYS[1]", 1, "k") == b"k"
    assert r.eval("return #KEYS", 0) == 0


# -- libraries --------------------------------------------------------------------------------------

LIB_SCRIPTS = [
    "return cjson.encode({1, 2, 3, {a=1}})",
    "return cjson.encode({a={b={c='x'}}})",
    "return cjson.encode('a\"b\\\\c/\\n\\1')",
    "return cjson.encode({})",
    "return cjson.encode(3.25)",
    "return cjson.encode(0.1)",
    "return cjson.encode(1e20)",
    "return cjson.encode({true, false, cjson.null})",
    "return cjson.encode({[1]=1, [3]=3})",
    "return cjson.encode({[1]=1, [30]=3})",
    "return cjson.encode(function() end)",
    "return cjson.encode({[true]=1})",
    "local t = cjson.decode('[1,2,{\"a\":[true,null,\"x\"]}]') return {t[1], t[2], t[3].a[1] and 1 or 0, "
    "t[3].a[2] == cjson.null and 1 or 0, t[3].a[3]}",
    "return cjson.decode('\"s\"')",
    "return cjson.decode('12.5')",
    "return type(cjson.null)",
    "return cjson.decode(cjson.encode({k='v'})).k",
    "return cmsgpack.pack({1, 2, 3})",
    "return cmsgpack.pack({a=1})",
    "return cmsgpack.pack('hello', 1, -1, 127, 128, -33, 65535, 65536, 2^32, -2^31, -2^40)",
    "return cmsgpack.pack(1.5, 0.1, true, false, nil)",
    "return cmsgpack.pack(string.rep('x', 40), string.rep('y', 300))",
    "return {cmsgpack.unpack(cmsgpack.pack({1, 'two', {3}}))}",
    "local t = cmsgpack.unpack(cmsgpack.pack({a='b'})) return t.a",
    "return {cmsgpack.unpack(cmsgpack.pack(1, 2, 'x'))}",
    "return struct.pack('>I2', 258)",
    "return struct.pack('<i4', -2)",
    "return struct.pack('bBhH', -1, 255, -2, 65535)",
    "return struct.pack('s', 'abc')",
    "return struct.pack('c3', 'abcdef')",
    "return struct.pack('>d', 1.5)",
    "return {struct.unpack('>I2', struct.pack('>I2', 258))}",
    "return {struct.unpack('<i4B', struct.pack('<i4B', -2, 7))}",
    "return {struct.unpack('s', 'abc\\0rest')}",
    "return struct.size('>I2i4bd')",
    "return bit.band(0xff, 0x0f)",
    "return bit.bor(1, 2, 4)",
    "return bit.bxor(5, 3)",
    "return bit.bnot(0)",
    "return bit.lshift(1, 31)",
    "return bit.rshift(-1, 28)",
    "return bit.arshift(-256, 4)",
    "return bit.tohex(255)",
    "return bit.tohex(-1, -4)",
    "return bit.tobit(2^32 + 5)",
    "return bit.tobit(1.5)",
    "return bit.tobit(2.5)",
    "return {bit.rol(1, 33), bit.ror(1, 1), bit.bswap(0x12345678)}",
    "return bit.band()",
    "return bit.band('x')",
]


@pytest.mark.parametrize("script", ERROR_SCRIPTS + LIB_SCRIPTS)
def test_eval_replies_match_redis(raw, ref_raw, script):
    """EVAL of each error case (ERROR_SCRIPTS) and library call
    (LIB_SCRIPTS) replies what redis-server replies, byte for byte."""
    both(raw, ref_raw, "EVAL", script, "0")


def test_cjson_roundtrip(r):
    assert r.eval("return cjson.encode(cjson.decode(ARGV[1]))", 0, '{"a":[1,2,3]}') == b'{"a":[1,2,3]}'


# -- busy scripts -----------------------------------------------------------------------------------

def _run_async(port, *args):
    """Send a command on its own connection; returns (thread, result list)."""
    res = []

    def go():
        c = RespConn(port)
        try:
            res.append(c.call(*args))
        except Exception as e:  # noqa: BLE001
            res.append(e)
        finally:
            c.close()
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t, res


def _wait_busy(port, timeout=20.0):
    """PING from a new connection until the reply is -BUSY.

    A connection made at the very moment the script starts may be accepted
    by the event loop, with its connection_made callback still queued when
    the script takes over the loop: the server cannot know that client
    until the script ends.  So an attempt that gets no reply is retried on
    a fresh connection (accepted by the busy script's own poller)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        c = RespConn(port, timeout=1.0)
        try:
            while time.time() < deadline:
                rep = c.call("PING")
                if rep.startswith(b"-BUSY"):
                    return rep
                time.sleep(0.02)
        except (TimeoutError, socket.timeout):
            continue
        finally:
            c.close()
    raise AssertionError("server never became busy")


BUSY_EVAL = b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"


def test_busy_script_and_script_kill(start_server):
    s = start_server("--busy-reply-threshold", "100")
    other = RespConn(s.port)               # connected before the script starts
    assert other.call("SCRIPT", "KILL") == b"-NOTBUSY No scripts in execution right now.\r\n"
    t, res = _run_async(s.port, "EVAL", "local i = 0 while true do i = i + 1 end", "0")
    assert _wait_busy(s.port) == BUSY_EVAL   # a connection accepted while busy
    assert other.call("GET", "x") == BUSY_EVAL
    assert other.call("EVAL", "return 1", "0") == BUSY_EVAL
    assert other.call("FUNCTION", "KILL") == BUSY_EVAL
    assert other.call("FUNCTION", "STATS") == BUSY_EVAL
    assert other.call("SHUTDOWN") == BUSY_EVAL
    assert other.call("SCRIPT", "KILL") == b"+OK\r\n"
    t.join(30)
    assert res and res[0].startswith(b"-ERR Script killed by user with SCRIPT KILL... script: ")
    assert b"on @user_script:1." in res[0]
    assert other.call("PING") == b"+PONG\r\n"
    assert other.call("EVAL", "return 1", "0") == b":1\r\n"
    assert "Slow script detected" in s.output()
    other.close()


def test_kill_again_after_a_killed_run(start_server):
    # The compiled layer's Lua thread keeps its count hook between runs and
    # sets it again after a killed one (the sandbox's run_prep_t): the runs
    # after a kill finish normally, and the next busy script (EVALSHA or
    # FCALL) is interrupted and killed again.
    s = start_server("--busy-reply-threshold", "50")
    other = RespConn(s.port)
    spin = "local i = 0 while true do i = i + 1 end"
    sha = other.call("SCRIPT", "LOAD", spin)[-42:-2].decode()
    lib = "#!lua name=spinlib\nredis.register_function('spin', function() %s end)" % spin
    assert other.call("FUNCTION", "LOAD", lib) == b"$7\r\nspinlib\r\n"
    count = "local n = 0 for i = 1, 300000 do n = n + 1 end return n"
    for cmd, kill in [("EVALSHA", "SCRIPT"), ("FCALL", "FUNCTION")] * 2:
        t, res = _run_async(s.port, cmd, sha if cmd == "EVALSHA" else "spin", "0")
        _wait_busy(s.port)
        assert other.call(kill, "KILL") == b"+OK\r\n"
        t.join(30)
        assert res and res[0].startswith(b"-ERR Script killed by user with SCRIPT KILL...")
        assert other.call("EVAL", count, "0") == b":300000\r\n"
        assert other.call("EVAL", "return redis.call('ping')", "0") == b"+PONG\r\n"
    other.close()


def test_script_kill_cannot_be_swallowed_by_pcall(start_server):
    s = start_server("--busy-reply-threshold", "50")
    other = RespConn(s.port)
    t, res = _run_async(s.port, "EVAL",
                        "local n = 0 while true do pcall(function() while true do n = n + 1 end end) end", "0")
    _wait_busy(s.port)
    assert other.call("SCRIPT", "KILL") == b"+OK\r\n"
    t.join(30)
    assert res and res[0].startswith(b"-ERR Script killed by user with SCRIPT KILL...")
    assert other.call("PING") == b"+PONG\r\n"


def test_unkillable_script_and_shutdown_nosave(start_server):
    s = start_server("--busy-reply-threshold", "50")
    other = RespConn(s.port)
    t, res = _run_async(s.port, "EVAL", "redis.call('set', 'x', 'y') while true do end", "0")
    _wait_busy(s.port)
    assert other.call("SCRIPT", "KILL") == (
        b"-UNKILLABLE Sorry the script already executed write commands against the dataset. "
        b"You can either wait the script termination or kill the server in a hard way using the "
        b"SHUTDOWN NOSAVE command.\r\n")
    assert other.call("SHUTDOWN") == BUSY_EVAL
    other.send("SHUTDOWN", "NOSAVE")
    s.proc.wait(30)
    assert s.proc.returncode is not None


def test_caller_pipeline_continues_after_busy_script(start_server):
    s = start_server("--busy-reply-threshold", "50")
    c = RespConn(s.port)
    # (TIME is frozen in a script since Redis 7.2: os.clock, 7.4's, measures)
    c.send_raw(encode("EVAL", "local s = os.clock() while os.clock() - s < 3 do redis.call('ping') end "
                          "return 'done'", "0") + encode("PING"))
    # busy for 3 s of CPU: long enough to be seen busy on a loaded machine
    rep = _wait_busy(s.port)
    assert rep == BUSY_EVAL
    assert c.read() == b"$4\r\ndone\r\n"
    assert c.read() == b"+PONG\r\n"


def test_eval_performance_no_recompile(r):
    sha = r.script_load("return redis.call('INCR', KEYS[1])")
    p = r.pipeline(transaction=False)
    for _ in range(2000):
        p.evalsha(sha, 1, "counter")
    t0 = time.time()
    out = p.execute()
    assert out[-1] == 2000
    assert time.time() - t0 < 60        # (a generous bound: the machine may be busy)


def test_redis_version_in_lua_is_the_servers(r):
    # redis.REDIS_VERSION / REDIS_VERSION_NUM: the Redis version we report
    # (INFO's redis_version), the number as 0x00MMmmpp
    major, minor, patch = (int(x) for x in REDIS_VERSION.split("."))
    assert r.eval("return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}", 0) == [
        REDIS_VERSION.encode(), (major << 16) | (minor << 8) | patch]
    assert r.info("server")["redis_version"] == REDIS_VERSION
