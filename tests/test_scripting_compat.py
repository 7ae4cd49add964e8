"""Scripting details found by Redis's own test suite: DEBUG
set-disable-deny-scripts, unpack's result room, lua-cjson's depth and
invalid-number settings, case-insensitive function names; scripts' declared
flags on read-only and stale replicas, failed calls, pushes of a busy
script (on ophidis-server and redis-server alike: ``each_server``)."""

import os
import time

import pytest
from redis.exceptions import ResponseError
from support.resp import RespConn
from support.wait import wait_until

LIB = ("#!lua name=lib\n"
       "redis.register_function('w', function() return redis.call('set', 'x', 1) end)\n"
       "redis.register_function{function_name='ro', callback=function() return 'hello' end, flags={'no-writes'}}\n"
       "redis.register_function{function_name='stale', callback=function() return 'hello' end, "
       "flags={'allow-stale', 'no-writes'}}\n"
       "redis.register_function{function_name='stale_get', callback=function() return redis.call('get', 'x') end, "
       "flags={'allow-stale', 'no-writes'}}\n")


def _error(f, *args):
    with pytest.raises(ResponseError) as e:
        f(*args)
    return str(e.value)


@pytest.fixture
def replica(each_server):
    """each_server made a replica of a master that never answers (port 1)."""
    c = each_server.client(socket_timeout=10)
    c.flushall()
    c.function_flush()
    c.function_load(LIB)
    c.set("x", "some value")
    c.replicaof("127.0.0.1", 1)
    try:
        yield c
    finally:
        c.replicaof("no", "one")
        c.config_set("replica-serve-stale-data", "yes")
        c.function_flush()
        c.close()


def test_script_flags_on_a_read_only_replica(replica, each_server):
    assert _error(replica.fcall, "w", 0) == "You can't write against a read only replica."
    assert replica.fcall("ro", 0) == b"hello"
    assert _error(replica.eval, "#!lua\nreturn 1", 0) == "You can't write against a read only replica."
    assert replica.eval("#!lua flags=no-writes\nreturn redis.call('get', 'x')", 1, "x") == b"some value"
    assert replica.eval("return redis.call('get', 'x')", 1, "x") == b"some value"
    assert _error(replica.eval, "return redis.call('set', 'x', 1)", 1, "x").startswith(
        "You can't write against a read only replica. script: ")
    # EXEC judges its queue by the scripts' flags: queued while a master, run as a replica.
    replica.replicaof("no", "one")
    a, b = RespConn(each_server.port), RespConn(each_server.port)
    try:
        for c, body in ((a, "#!lua\nreturn 1"), (b, "redis.call('set', 'x', 1) return 1")):
            assert c.call("MULTI") == b"+OK\r\n"
            assert c.call("EVAL", body, 1, "x") == b"+QUEUED\r\n"
        replica.replicaof("127.0.0.1", 1)
        assert a.call("EXEC") == (b"-EXECABORT Transaction discarded because of: READONLY You can't write "
                                  b"against a read only replica.\r\n")
        assert b.call("EXEC").startswith(b"*1\r\n-READONLY You can't write against a read only replica. script: ")
    finally:
        a.close()
        b.close()


def test_script_flags_on_a_stale_replica(replica):
    replica.config_set("replica-serve-stale-data", "no")
    down = "Link with MASTER is down and replica-serve-stale-data is set to 'no'."
    assert _error(replica.eval, "return redis.call('get', 'x')", 1, "x") == down
    assert _error(replica.eval, "#!lua flags=no-writes\nreturn 1", 0) == down
    assert replica.eval("#!lua flags=allow-stale,no-writes\nreturn 1", 0) == 1
    assert "Can not execute the command on a stale replica script:" in _error(
        replica.eval, "#!lua flags=allow-stale,no-writes\nreturn redis.call('get', 'x')", 1, "x")
    assert replica.eval("#!lua flags=allow-stale,no-writes\nreturn redis.call('echo', 'foo')", 0) == b"foo"
    assert _error(replica.fcall, "ro", 0) == down
    assert replica.fcall("stale", 0) == b"hello"
    assert "Can not execute the command on a stale replica" in _error(replica.fcall, "stale_get", 0)
    assert b"redis_version" in replica.eval("#!lua flags=allow-stale,no-writes\n"
                                            "return redis.call('info', 'server')", 0)


def _failed_calls(c, name):
    return c.info("commandstats")["cmdstat_" + name]["failed_calls"]


def test_a_script_error_counts_as_a_failed_call(each_server):
    c = each_server.client()
    c.config_resetstat()
    _error(c.eval, "return redis.call('select', 99)", 0)
    assert c.eval("local t = redis.pcall('select', 99) return t['err']", 0) == b"ERR DB index is out of range"
    _error(c.eval, "return redis.error_reply('My Error')", 0)
    assert _failed_calls(c, "eval") == 2
    assert _failed_calls(c, "select") == 2
    assert c.info("stats")["total_error_replies"] == 3     # the first error is not counted twice
    c.close()


def test_a_busy_script_pushes_reach_blocked_clients_when_it_ends(each_server):
    """Commands served while a script is busy do not serve the clients its
    pushes unblocked: the blocked one gets the script's last push."""
    c = each_server.client()
    c.delete("x")
    c.execute_command("DEBUG", "set-disable-deny-scripts", 1)
    c.config_set("lua-time-limit", 10)
    popper, runner, other = (RespConn(each_server.port) for _ in range(3))
    sent = ended = False
    try:
        # other is known to the server before the script starts (a connection
        # accepted in the script's own event-loop iteration waits for it:
        # docs/COMPATIBILITY.md)
        assert other.call("PING") == b"+PONG\r\n"
        popper.send("BLPOP", "x", 0)
        wait_until(lambda: c.info("clients")["blocked_clients"] == 1)
        runner.send("EVAL", "redis.call('lpush', KEYS[1], 'y') "
                            "while not string.find(redis.call('client', 'list'), 'abortscript') do end "
                            "redis.call('lpush', KEYS[1], 'z') return 1", 1, "x")
        sent = True
        wait_until(lambda: other.call("PING").startswith(b"-BUSY"))
        assert other.call("HELLO", "2", "SETNAME", "abortscript").startswith(b"*")
        assert popper.read() == b"*2\r\n$1\r\nx\r\n$1\r\nz\r\n"
        assert runner.read() == b":1\r\n"
        ended = True
    finally:
        if sent and not ended:
            # end the script (a new connection is served by its poller) so
            # that the next tests do not meet a busy server
            last = RespConn(each_server.port)
            try:
                last.call("HELLO", "2", "SETNAME", "abortscript")
                runner.read()       # the script's reply: it has ended
            except OSError:
                pass
            finally:
                last.close()
        for x in (popper, runner, other):
            x.close()
        c.config_set("lua-time-limit", 5000)
        c.execute_command("DEBUG", "set-disable-deny-scripts", 0)
        c.close()


def test_a_connection_accepted_as_a_script_starts_is_served_while_it_runs(each_server):
    """A connection accepted in the event-loop iteration that starts a busy
    script is a client of the server already: it gets -BUSY and can kill
    the script (Redis creates the client in its accept handler; the pure
    install, which accepts through the event loop's servers, cannot:
    docs/COMPATIBILITY.md)."""
    c = each_server.client()
    if os.environ.get("OPHIDIS_PURE") == "1" and "ophidis_version" in c.info("server"):
        pytest.skip("the pure install accepts through the event loop's servers")
    c.config_set("lua-time-limit", 10)
    try:
        sleeper = RespConn(each_server.port)
        for _ in range(3):
            runner = RespConn(each_server.port)
            assert runner.call("PING") == b"+PONG\r\n"
            # the server is kept from its event loop while the new connection
            # and the script arrive: it sees both in the same wake-up
            sleeper.send("DEBUG", "SLEEP", "0.2")
            time.sleep(0.05)
            other = RespConn(each_server.port, timeout=5)
            runner.send("EVAL", "while true do end", 0)
            killed = False
            try:
                wait_until(lambda: other.call("PING").startswith(b"-BUSY"))
                assert other.call("SCRIPT", "KILL") == b"+OK\r\n"
                killed = True
                assert runner.read().startswith(b"-ERR Script killed by user with SCRIPT KILL")
            finally:
                if not killed:
                    # a new connection is served by the busy script's poller
                    last = RespConn(each_server.port)
                    last.call("SCRIPT", "KILL")
                    last.close()
                other.close()
                runner.close()
            assert sleeper.read() == b"+OK\r\n"
        sleeper.close()
    finally:
        c.config_set("lua-time-limit", 5000)
        c.close()


def test_disable_deny_scripts_allows_noscript_commands(r):
    with pytest.raises(ResponseError, match="This Redis command is not allowed from script"):
        r.eval("return redis.call('debug', 'protocol', 'bignum')", 0)
    r.execute_command("DEBUG", "set-disable-deny-scripts", 1)
    try:
        assert r.eval("return redis.call('debug', 'protocol', 'bignum')", 0) == \
            b"1234567999999999999999999999999999999"
    finally:
        r.execute_command("DEBUG", "set-disable-deny-scripts", 0)
    with pytest.raises(ResponseError, match="This Redis command is not allowed from script"):
        r.eval("return redis.call('debug', 'protocol', 'bignum')", 0)


def test_unpack_of_7999_values(r):
    assert r.eval("local a = {} for i=1,7999 do a[i] = 1 end return #{unpack(a)}", 0) == 7999
    assert r.eval("local a = {1,2,3,4} return {unpack(a, 2, 3)}", 0) == [2, 3]
    assert r.eval("local a = {1,2,3,4} return {unpack(a, 3)}", 0) == [3, 4]


def test_cjson_nesting_limits(r):
    ok = r.eval("local s = string.rep('[', 1000) .. string.rep(']', 1000) "
                "return tostring(pcall(cjson.decode, s))", 0)
    assert ok == b"true"
    err = r.eval("local s = string.rep('[', 1001) .. string.rep(']', 1001) "
                 "local ok, e = pcall(cjson.decode, s) return e", 0)
    assert err == b"Found too many nested data structures (1001) at character 1001"
    assert r.eval("local t = {} local c = t for i=1,999 do c[1] = {} c = c[1] end "
                  "return tostring(pcall(cjson.encode, t))", 0) == b"true"
    try:
        assert r.eval("return {cjson.encode_max_depth(), cjson.encode_max_depth(1), "
                      "cjson.decode_max_depth(1)}", 0) == [1000, 1, 1]
        assert r.eval("return tostring(pcall(cjson.encode, {a={1}}))", 0) == b"false"
        assert r.eval("return tostring(pcall(cjson.encode, {a=1}))", 0) == b"true"
        assert r.eval("local ok, e = pcall(cjson.decode, '{\"obj\": {\"a\": [1]}}') return e", 0) == \
            b"Found too many nested data structures (2) at character 9"
    finally:
        r.eval("cjson.encode_max_depth(1000) cjson.decode_max_depth(1000)", 0)


def test_cjson_encode_invalid_numbers(r):
    assert r.eval("return tostring(pcall(cjson.encode, {n=0/0}))", 0) == b"false"
    try:
        r.eval("cjson.encode_invalid_numbers(true)", 0)
        assert r.eval("return cjson.encode({1/0})", 0) == b"[inf]"
        r.eval("cjson.encode_invalid_numbers('null')", 0)
        assert r.eval("return cjson.encode({1/0})", 0) == b"[null]"
    finally:
        r.eval("cjson.encode_invalid_numbers(false)", 0)
    assert r.eval("return tostring(pcall(cjson.encode, {1/0}))", 0) == b"false"


def test_fcall_function_names_are_case_insensitive(r):
    r.function_flush()
    r.function_load("#!lua name=lib1\nredis.register_function('test', function() return 'hello1' end)")
    assert r.fcall("TEST", 0) == b"hello1"
    assert r.fcall("Test", 0) == b"hello1"
    with pytest.raises(ResponseError, match="Function TEST already exists"):
        r.function_load("#!lua name=lib2\nredis.register_function('TEST', function() return 2 end)")
    r.function_flush()


def test_functions_come_back_from_the_rdb(r):
    r.function_flush()
    r.function_load("#!lua name=lib1\nredis.register_function('f1', function() return 1 end)")
    r.save()
    r.function_flush()
    assert r.execute_command("DEBUG", "RELOAD", "NOSAVE") in (b"OK", "OK", True)
    assert [x[1] for x in r.function_list()] == [b"lib1"]
    assert r.fcall("f1", 0) == 1
    # NOFLUSH without MERGE: the library exists already, the load fails.
    with pytest.raises(ResponseError, match="Error trying to load the RDB"):
        r.execute_command("DEBUG", "RELOAD", "NOFLUSH")
    assert r.execute_command("DEBUG", "RELOAD", "NOFLUSH", "MERGE") in (b"OK", "OK", True)
    assert [x[1] for x in r.function_list()] == [b"lib1"]
    r.function_flush()


def test_keys_do_not_expire_while_a_script_runs(r):
    r.execute_command("DEBUG", "set-disable-deny-scripts", 1)
    try:
        assert r.eval("redis.call('SET', 'key', 'value', 'PX', '1') "
                      "redis.call('DEBUG', 'SLEEP', 0.01) "
                      "return redis.call('EXISTS', 'key')", 0) == 1
    finally:
        r.execute_command("DEBUG", "set-disable-deny-scripts", 0)
    assert r.exists("key") == 0
    # A TTL set by a script still counts from the real clock.
    r.eval("redis.call('SET', 'k2', 'v', 'PX', '100000')", 0)
    assert 99000 < r.pttl("k2") <= 100000


def test_evalsha_and_fcall_checks_in_order(each_server):
    """EVALSHA / FCALL (and _RO) take a one-frame path on Ophidis when no
    MONITOR, debugger or cluster applies: its checks, their order and the
    failed-call counting are Redis's (both servers run this)."""
    c = each_server.client()
    c.flushall()
    c.config_resetstat()
    sha = c.script_load("return redis.call('set', KEYS[1], ARGV[1])")
    err = c.script_load("return redis.call('select', 99)")
    c.function_load("#!lua name=chk\n"
                    "redis.register_function('w', function(keys, args) return redis.call('set', keys[1], args[1]) end)\n"
                    "redis.register_function('e', function() return redis.error_reply('My Error') end)\n")
    assert "No matching script" in _error(c.evalsha, "abc", 0)
    assert "No matching script" in _error(c.evalsha, "0" * 40, 0)
    assert "greater than number of args" in _error(c.evalsha, "0" * 40, 5, "a")
    assert "greater than number of args" in _error(c.evalsha, sha, 2, "a")
    assert "not an integer" in _error(c.evalsha, sha, "x", "a")
    assert "negative" in _error(c.evalsha, sha, -1, "a")
    assert c.evalsha(sha, 1, "k", "v") == b"OK"
    assert "Write commands are not allowed from read-only scripts" in _error(
        c.execute_command, "EVALSHA_RO", sha, 1, "k", "v")
    assert "Function not found" in _error(c.fcall, "nope", 9)
    assert "greater than number of args" in _error(c.fcall, "w", 2, "a")
    assert "Bad number of keys provided" in _error(c.fcall, "w", "x", "a")
    assert c.fcall("w", 1, "k2", "v2") == b"OK"
    assert "Can not execute a script with write flag using *_ro command" in _error(c.fcall_ro, "w", 1, "k", "v")
    _error(c.evalsha, err, 0)
    _error(c.fcall, "e", 0)
    assert c.mget("k", "k2") == [b"v", b"v2"]
    # the raised errors and the error replies, each counted once (redis-server: 7, 4, 1)
    assert _failed_calls(c, "evalsha") == 7
    assert _failed_calls(c, "fcall") == 4
    assert _failed_calls(c, "evalsha_ro") == 1
    c.close()
