"""Scripting details found by Redis's own test suite: DEBUG
set-disable-deny-scripts, unpack's result room, lua-cjson's depth and
invalid-number settings, case-insensitive function names."""

import pytest
from redis.exceptions import ResponseError


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
