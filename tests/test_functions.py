"""FUNCTION / FCALL: libraries, register_function, flags, errors (compared
with redis-server), DUMP/RESTORE (interoperable with Redis), KILL/STATS."""

from __future__ import annotations

import os
import shutil
import threading
import time

import pytest
import redis

from ophidis.sysinfo import REDIS_VERSION
from support.resp import RespConn
from support.servers import RedisServerProc
from support.wait import wait_until


@pytest.fixture
def fr(r):
    r.function_flush()
    yield r
    r.function_flush()


@pytest.fixture
def fref(ref):
    ref.function_flush()
    yield ref
    ref.function_flush()


@pytest.fixture
def both(server, redis_server, fr, fref):
    a, b = RespConn(server.port), RespConn(redis_server.port)

    def call(*args):
        x, y = a.call(*args), b.call(*args)
        # HELP's last line: Redis 7.2's "Print this help." (7.0: "Prints")
        y = y.replace(b"+    Prints this help.\r\n", b"+    Print this help.\r\n")
        assert x == y, (args, x, y)
        return x
    yield call
    a.close()
    b.close()


LIB = """#!lua name=mylib
local function set(keys, args) return redis.call('set', keys[1], args[1]) end
redis.register_function('myset', set)
redis.register_function{function_name='myget', callback=function(keys, args)
  return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads a key'}
redis.register_function('fail', function(keys, args) return redis.call('nosuch') end)
redis.register_function('boom', function(keys, args) error('boom') end)
redis.register_function('useskeys', function(keys, args) return KEYS end)
redis.register_function('echo', function(keys, args) return {keys, args} end)
"""


def test_load_and_fcall(fr):
    assert fr.function_load(LIB) in ("mylib", b"mylib")
    assert fr.fcall("myset", 1, "k", "v") == b"OK"
    assert fr.fcall("myget", 1, "k") == b"v"
    assert fr.fcall_ro("myget", 1, "k") == b"v"
    assert fr.fcall("echo", 2, "a", "b", "c") == [[b"a", b"b"], [b"c"]]
    with pytest.raises(redis.ResponseError, match="Library 'mylib' already exists"):
        fr.function_load(LIB)
    assert fr.function_load(LIB, replace=True) in ("mylib", b"mylib")
    stats = fr.function_stats()
    assert stats[b"running_script"] is None if isinstance(stats, dict) else True
    info = fr.execute_command("FUNCTION", "STATS")
    assert info[1] is None
    assert info[3] == [b"LUA", [b"libraries_count", 1, b"functions_count", 6]]
    assert fr.function_delete("mylib") in (True, b"OK")
    with pytest.raises(redis.ResponseError, match="Function not found"):
        fr.fcall("myset", 1, "k", "v")
    with pytest.raises(redis.ResponseError, match="Library not found"):
        fr.function_delete("mylib")


def test_function_list(fr):
    fr.function_load(LIB)
    fr.function_load("#!lua name=other\nredis.register_function('o1', function() return 1 end)")
    libs = fr.execute_command("FUNCTION", "LIST")
    assert sorted(l[1] for l in libs) == [b"mylib", b"other"]
    lib = [l for l in libs if l[1] == b"mylib"][0]
    assert lib[0] == b"library_name" and lib[2] == b"engine" and lib[3] == b"LUA"
    funcs = {f[1]: f for f in lib[5]}
    assert funcs[b"myget"] == [b"name", b"myget", b"description", b"reads a key", b"flags", [b"no-writes"]]
    assert funcs[b"myset"] == [b"name", b"myset", b"description", None, b"flags", []]
    withcode = fr.execute_command("FUNCTION", "LIST", "LIBRARYNAME", "oth*", "WITHCODE")
    assert len(withcode) == 1 and withcode[0][7] == b"#!lua name=other\nredis.register_function('o1', function() return 1 end)"
    with pytest.raises(redis.ResponseError, match="library name argument was not given"):
        fr.execute_command("FUNCTION", "LIST", "LIBRARYNAME")
    with pytest.raises(redis.ResponseError, match="Unknown argument foo"):
        fr.execute_command("FUNCTION", "LIST", "foo")


FCALL_CASES = [
    ("FCALL", "myset", "1", "k", "v"),
    ("FCALL", "myget", "1", "k"),
    ("FCALL_RO", "myset", "1", "k", "v"),
    ("FCALL_RO", "myget", "1", "k"),
    ("FCALL", "fail", "0"),
    ("FCALL", "boom", "0"),
    ("FCALL", "useskeys", "0"),
    ("FCALL", "nosuch", "0"),
    ("FCALL", "myset", "x"),
    ("FCALL", "myset", "-1"),
    ("FCALL", "myset", "5", "a"),
    ("FCALL", "echo", "1", "a", "b"),
]


@pytest.mark.parametrize("args", FCALL_CASES)
def test_fcall_matches_redis(both, args):
    both("FUNCTION", "LOAD", LIB)
    both(*args)


LOAD_ERRORS = [
    "#!lua name=lib1\nlocal x = string.format('%d', 1)\nredis.register_function('f1', function() return 1 end)",
    "#!lua name=lib2\nredis.call('ping')",
    "#!lua name=lib2\nreturn 1",
    "#!lua name=lib2 foo=bar\nreturn 1",
    "#!lua\nreturn 1",
    "#!luax name=x\nreturn 1",
    "#!lua name=x",
    "no shebang",
    "#!lua name=l-x\n",
    "#!lua name=lib3\nredis.register_function('f-1', function() end)",
    "#!lua name=lib3\nredis.register_function{function_name='a', callback=function() end, flags={'bad'}}",
    "#!lua name=lib3\nredis.register_function{function_name='a', callback=function() end, flags='x'}",
    "#!lua name=lib3\nredis.register_function{function_name='a'}",
    "#!lua name=lib3\nredis.register_function{callback=function() end}",
    "#!lua name=lib3\nredis.register_function{function_name='a', callback=1}",
    "#!lua name=lib3\nredis.register_function{function_name='a', callback=function() end, foo=1}",
    "#!lua name=lib3\nredis.register_function('a')",
    "#!lua name=lib3\nredis.register_function(1, 2)",
    "#!lua name=lib3\nredis.register_function('a', function() end, 3)",
    "#!lua name=lib3\nredis.register_function()",
    "#!lua name=lib3\nredis.register_function(5)",
    "#!lua name=lib3\nx = 1",
    "#!lua name=lib3\nreturn 'x' ..",
    "#!lua name=lib3\nredis.register_function('a', function() end)\nredis.register_function('a', function() end)",
    "#!lua name=lib3\nerror('load failed')",
    "#!lua name=lib3\nerror({err='MY custom'})",
    "#!lua name=lib3 name=lib4\nreturn 1",
    "#!LUA name=upper\nredis.register_function('up', function() return 1 end)",
]


@pytest.mark.parametrize("code", LOAD_ERRORS)
def test_load_errors_match_redis(both, code):
    both("FUNCTION", "LOAD", code)


def test_function_misc_errors_match_redis(both):
    both("FUNCTION", "LOAD")
    both("FUNCTION", "LOAD", "REPLACE")
    both("FUNCTION", "LOAD", "BADOPT", "#!lua name=x\n")
    both("FUNCTION", "DELETE", "nosuch")
    both("FUNCTION", "FLUSH", "bad")
    both("FUNCTION", "FLUSH", "a", "b")
    both("FUNCTION", "RESTORE", "garbage")
    both("FUNCTION", "RESTORE", "garbage", "BADPOLICY")
    both("FUNCTION", "KILL")
    both("FUNCTION", "STATS")
    both("FUNCTION", "HELP")
    both("FUNCTION", "NOSUCH")
    both("FUNCTION", "LOAD", "#!lua name=dup1\nredis.register_function('same', function() return 1 end)")
    both("FUNCTION", "LOAD", "#!lua name=dup2\nredis.register_function('same', function() return 2 end)")
    both("FCALL", "same", "0")
    both("FUNCTION", "LIST")


def test_function_runtime_environment(fr):
    fr.function_load("#!lua name=env\n"
                     "redis.register_function('g', function(keys, args) return string.upper(args[1]) end)\n"
                     "redis.register_function('ver', function() return redis.REDIS_VERSION end)\n"
                     "redis.register_function('reg', function() return type(redis.register_function) end)\n"
                     "redis.register_function('setg', function() y = 1 end)\n")
    assert fr.fcall("g", 0, "abc") == b"ABC"
    assert fr.fcall("ver", 0) == REDIS_VERSION.encode()
    assert fr.fcall("reg", 0) == b"nil"
    with pytest.raises(redis.ResponseError, match="Attempt to modify a readonly table script: setg, on @user_function:5."):
        fr.fcall("setg", 0)


def test_dump_restore(fr):
    fr.function_load(LIB)
    payload = fr.function_dump()
    fr.function_flush()
    assert fr.function_restore(payload) is True
    assert fr.fcall("myset", 1, "k", "v") == b"OK"
    with pytest.raises(redis.ResponseError, match="Library mylib already exists"):
        fr.function_restore(payload)
    assert fr.function_restore(payload, "REPLACE") is True
    assert fr.function_restore(payload, "FLUSH") is True
    with pytest.raises(redis.ResponseError, match="DUMP payload version or checksum are wrong"):
        fr.function_restore(payload[:-1] + bytes([payload[-1] ^ 1]))


def test_dump_restore_interoperates_with_redis(fr, fref):
    fref.function_load(LIB)
    fref.function_load("#!lua name=big\n" + "-- padding " * 50 +
                       "\nredis.register_function('bigf', function() return 'big' end)")
    payload = fref.function_dump()          # Redis compresses long strings with LZF
    assert fr.function_restore(payload) is True
    assert fr.fcall("bigf", 0) == b"big"
    assert fr.fcall("myset", 1, "k", "v") == b"OK"
    fref.function_flush()
    assert fref.function_restore(fr.function_dump()) is True
    assert fref.fcall("bigf", 0) == b"big"


def test_fcall_ro_and_no_writes(fr):
    fr.function_load("#!lua name=ro\n"
                     "redis.register_function{function_name='w', callback=function(keys) "
                     "return redis.call('set', keys[1], 'x') end, flags={'no-writes'}}\n"
                     "redis.register_function{function_name='r', callback=function(keys) "
                     "return redis.call('get', keys[1]) end, flags={'no-writes', 'allow-oom'}}\n")
    with pytest.raises(redis.ResponseError, match="Write commands are not allowed from read-only scripts"):
        fr.fcall("w", 1, "k")
    assert fr.fcall_ro("r", 1, "k") is None
    flags = {f[1]: f[5] for f in fr.execute_command("FUNCTION", "LIST")[0][5]}
    assert flags[b"r"] == [b"no-writes", b"allow-oom"]


def test_function_kill_and_stats_while_busy(start_server):
    s = start_server("--busy-reply-threshold", "100")
    c = s.client()
    c.function_load("#!lua name=slow\nredis.register_function('spin', function() while true do end end)\n"
                    "redis.register_function('spinw', function() redis.call('set', 'a', 'b') "
                    "while true do end end)")
    other = RespConn(s.port)
    # known to the server before the function starts (docs/COMPATIBILITY.md:
    # a connection accepted in the script's own loop iteration waits for it)
    assert other.call("PING") == b"+PONG\r\n"
    res = []

    def go():
        cc = RespConn(s.port)
        res.append(cc.call("FCALL", "spin", "0"))
        cc.close()
    t = threading.Thread(target=go, daemon=True)
    t.start()
    busy = b"-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n"
    deadline = time.time() + 20
    while time.time() < deadline:
        rep = other.call("PING")
        if rep.startswith(b"-BUSY"):
            break
        time.sleep(0.02)
    assert rep == busy
    assert other.call("SCRIPT", "KILL") == busy
    stats = other.call("FUNCTION", "STATS")
    assert b"running_script" in stats and b"spin" in stats and b"duration_ms" in stats
    assert other.call("FUNCTION", "KILL") == b"+OK\r\n"
    t.join(30)
    assert res[0].startswith(b"-ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2.")
    assert other.call("FCALL", "spin", "x") == b"-ERR Bad number of keys provided\r\n"
    other.close()


def test_load_timeout(fr):
    with pytest.raises(redis.ResponseError, match="FUNCTION LOAD timeout"):
        fr.function_load("#!lua name=forever\nwhile true do end")
    assert fr.ping()


# -- persistence -------------------------------------------------------------------------------

def _nfun(c):
    info = c.info("memory")
    return info["number_of_functions"], info["number_of_libraries"]


def test_info_counts_functions(fr):
    assert _nfun(fr) == (0, 0)
    fr.function_load(LIB)
    assert _nfun(fr) == (6, 1)
    fr.function_load("#!lua name=other\nredis.register_function('o1', function() return 1 end)")
    assert _nfun(fr) == (7, 2)
    fr.function_delete("mylib")
    assert _nfun(fr) == (1, 1)


def test_functions_survive_debug_reload(fr):
    fr.function_load(LIB)
    fr.set("k", "v")
    assert fr.execute_command("DEBUG", "RELOAD") == b"OK"
    assert fr.fcall("myget", 1, "k") == b"v"
    assert _nfun(fr) == (6, 1)
    # MERGE replaces the libraries of the same name; NOFLUSH alone fails on them
    assert fr.execute_command("DEBUG", "RELOAD", "NOFLUSH", "MERGE") == b"OK"
    with pytest.raises(redis.ResponseError, match="^Error trying to load the RDB dump$"):
        fr.execute_command("DEBUG", "RELOAD", "NOFLUSH")
    # a full reload replaces the libraries with the file's (none here)
    fr.function_flush()
    fr.execute_command("DEBUG", "RELOAD")
    fr.function_load(LIB)
    fr.execute_command("DEBUG", "RELOAD", "NOSAVE")
    assert fr.function_list() == []


def test_functions_saved_and_loaded_at_start(start_server, tmp_path):
    s = start_server("--dir", str(tmp_path))
    c = s.client()
    c.function_load(LIB)
    c.set("k", "v")
    assert c.save() is True
    s.stop()
    s2 = start_server("--dir", str(tmp_path))
    c2 = s2.client()
    assert c2.fcall("myget", 1, "k") == b"v"
    assert c2.fcall("myset", 1, "k2", "x") == b"OK"
    assert [lib[b"library_name"] if isinstance(lib, dict) else lib[1] for lib in c2.function_list()] == [b"mylib"]
    assert _nfun(c2) == (6, 1)


def test_rdb_functions_interoperate_with_redis(start_server, redis_server, fref, tmp_path):
    # a file written by Redis loads here, and ours loads in Redis
    fref.function_load(LIB)
    fref.set("k", "v")
    d = fref.config_get("dir")["dir"]
    fref.save()
    shutil.copy(os.path.join(d, "dump.rdb"), tmp_path / "dump.rdb")
    fref.function_flush()
    fref.delete("k")
    s = start_server("--dir", str(tmp_path))
    c = s.client()
    assert c.fcall("myget", 1, "k") == b"v"
    c.function_load("#!lua name=ours\nredis.register_function('ofn', function() return 'ours' end)")
    c.save()
    s.stop()
    p = RedisServerProc(dir=str(tmp_path), debug=False)
    try:
        rc = p.client()
        assert rc.fcall("ofn", 0) == b"ours"
        assert rc.fcall("myget", 1, "k") == b"v"
    finally:
        p.stop()


def _info_int(c, field):
    return int(c.execute_command("INFO", "everything").get(field, -1))


def test_function_flush_async_new_vm_and_lazyfree_count(r):
    """Redis 7.4: the functions' Lua VM grows with the libraries
    (used_memory_vm_functions), FUNCTION FLUSH gives a new VM, and an ASYNC
    flush of more than 64 functions counts the functions and the engine in
    lazyfreed_objects (lazyFreeFunctionsCtx; valkey 9.1 counts the
    functions only); the server goes on loading functions."""
    c = r
    c.function_flush()
    base = _info_int(c, "used_memory_vm_functions")
    body = "redis.register_function('f%d', function() local a = 1 while true do a = a + 1 end end)"
    for i in range(200):
        c.function_load("#!lua name=lib%d\n" % i + body % i)
    assert _info_int(c, "used_memory_vm_functions") > base + 20000
    c.config_resetstat()
    c.function_flush("ASYNC")
    assert _info_int(c, "used_memory_vm_functions") < base + 8000
    wait_until(lambda: _info_int(c, "lazyfreed_objects") == 201, timeout=5)
    c.function_load("#!lua name=test\n" + body % 0)
    assert c.function_list() == [[b"library_name", b"test", b"engine", b"LUA", b"functions",
                                  [[b"name", b"f0", b"description", None, b"flags", []]]]]
    # a flush of few functions, or a SYNC one, is not lazy
    c.config_resetstat()
    c.function_flush("ASYNC")
    for i in range(70):
        c.function_load("#!lua name=lib%d\n" % i + body % i)
    c.function_flush("SYNC")
    assert _info_int(c, "lazyfreed_objects") == 0
    c.function_flush()


def test_library_loads_collect_garbage_as_they_go(r):
    """Redis's luaGC after each load (a collector step every 50): 50000
    small libraries keep used_memory_vm_functions under the bound of Redis
    7.4's own test (14.5 MB; without the steps the Lua state reaches about
    21 MB, half of it garbage)."""
    r.function_flush()
    p = r.pipeline(transaction=False)
    for i in range(50000):
        p.function_load("#!lua name=test%d\nredis.register_function('test%d', function(KEYS, ARGV)\n "
                        "--xxxxxxxxxx\nreturn %06d \nend)" % (i, i, i))
        if i % 1000 == 999:
            p.execute()
    assert r.fcall("test49999", 0) == 49999
    assert _info_int(r, "used_memory_vm_functions") < 14500000
    r.function_flush()
