"""What Redis 7.2-7.4 changed in scripting (Redis 7.4.1's unit/scripting
checks): blocking commands run in scripts as their non-blocking forms,
the time a script sees is frozen at its start (TIME and the expiry
commands too), and the scripts EVAL compiles are kept in an LRU cache of
500.  Compared with valkey-server 9.1 (forked from 7.2.4) where it shares
the behaviour."""

import hashlib

import pytest
from redis.exceptions import ResponseError
from support.resp import RespConn
from support.wait import wait_until

FN_LIB = ("#!lua name=blk\n"
          "redis.register_function('blpop', function(keys) return redis.pcall('blpop', keys[1], 0) end)\n"
          "redis.register_function('wait', function() return redis.pcall('wait', '1', '0') end)\n")


def test_blocking_commands_do_not_block_in_scripts(same_as_valkey):
    """Redis 7.2 dropped NOSCRIPT from BLPOP, BRPOP, BRPOPLPUSH, BLMOVE,
    BZPOPMIN, BZPOPMAX and WAIT (now BLOCKING): in a script they answer at
    once as their non-blocking forms, a timeout of 0 included."""
    scripts = [
        "return redis.pcall('blpop', 'l', 0)",
        "return redis.pcall('brpop', 'l', 0)",
        "return redis.pcall('brpoplpush', 'l{t}', 'm{t}', 0)",
        "return redis.pcall('blmove', 'l{t}', 'm{t}', 'LEFT', 'LEFT', 0)",
        "return redis.pcall('bzpopmin', 'z', 0)",
        "return redis.pcall('bzpopmax', 'z', 0)",
        "return redis.pcall('blmpop', 0, 1, 'l', 'LEFT')",
        "return redis.pcall('bzmpop', 0, 1, 'z', 'MIN')",
        "return redis.pcall('wait', '1', '0')",
        "return redis.pcall('waitaof', '0', '1', '0')",
        "return redis.pcall('xread', 'BLOCK', 0, 'STREAMS', 's', '$')",
        "return redis.pcall('xreadgroup', 'GROUP', 'g', 'c', 'BLOCK', 0, 'STREAMS', 's', '>')",
        # with data the commands pop it
        "redis.call('rpush', 'l{t}', 'a', 'b') return {redis.pcall('blpop', 'l{t}', 0), "
        "redis.pcall('brpoplpush', 'l{t}', 'm{t}', 0), redis.pcall('lrange', 'm{t}', 0, -1)}",
        "redis.call('zadd', 'z', 1, 'a', 2, 'b') return {redis.pcall('bzpopmax', 'z', 0), "
        "redis.pcall('bzpopmin', 'z', 0)}",
        # a negative or bad timeout is still an error
        "return redis.pcall('blpop', 'l', -1)",
        "return redis.pcall('wait', '1', '-1')",
    ]
    same_as_valkey([["DEL", "l", "l{t}", "m{t}", "z", "s"], ["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]]
                   + [["EVAL", s, "0"] for s in scripts])
    same_as_valkey([["FUNCTION", "FLUSH"], ["FUNCTION", "LOAD", FN_LIB], ["FCALL", "blpop", "1", "l"],
                    ["FCALL", "wait", "0"]], protocols=(2,))


def test_blocking_commands_flags_as_redis_72(server):
    """COMMAND INFO: no noscript for the blocking pops, WAIT is blocking
    (and so in the @blocking ACL category)."""
    c = RespConn(server.port)
    try:
        for name in ("blpop", "brpop", "brpoplpush", "blmove", "bzpopmin", "bzpopmax", "wait"):
            c.send("COMMAND", "INFO", name)
            flags = c.read_value()[0][2]
            assert b"noscript" not in flags and b"blocking" in flags, (name, flags)
        c.send("COMMAND", "LIST", "FILTERBY", "ACLCAT", "blocking")
        assert b"wait" in c.read_value()
    finally:
        c.close()


def test_blocking_commands_still_block_outside_scripts(r, server):
    """Outside scripts the same commands still block: a BLPOP and a WAIT
    wait (the server counts them blocked) until a push or their timeout."""
    c = RespConn(server.port)
    try:
        r.delete("bl")
        c.send("BLPOP", "bl", "0")
        wait_until(lambda: r.info("clients")["blocked_clients"] == 1, what="the BLPOP blocked")
        r.rpush("bl", "x")
        assert c.read() == b"*2\r\n$2\r\nbl\r\n$1\r\nx\r\n"
        cid = int(c.call("CLIENT", "ID")[1:-2])
        c.send("WAIT", "1", "0")
        wait_until(lambda: r.info("clients")["blocked_clients"] == 1, what="the WAIT blocked")
        assert r.client_unblock(cid)
        assert c.read() == b":0\r\n"
    finally:
        c.close()


# -- the command time snapshot ----------------------------------------------------------

TIME_SCRIPT = ("local a = redis.call('TIME') redis.call('DEBUG', 'SLEEP', 0.02) "
               "local b = redis.call('TIME') return {a, b}")
EXPIRY_SCRIPT = """
redis.call('SET', 'k1{t}', 'v', 'EX', 1) redis.call('DEBUG', 'SLEEP', 0.01)
redis.call('SET', 'k2{t}', 'v', 'PX', 1000) redis.call('DEBUG', 'SLEEP', 0.01)
redis.call('SET', 'k3{t}', 'v') redis.call('EXPIRE', 'k3{t}', 1) redis.call('DEBUG', 'SLEEP', 0.01)
redis.call('SET', 'k4{t}', 'v') redis.call('PEXPIRE', 'k4{t}', 1000) redis.call('DEBUG', 'SLEEP', 0.01)
redis.call('SETEX', 'k5{t}', 1, 'v') redis.call('DEBUG', 'SLEEP', 0.01)
redis.call('PSETEX', 'k6{t}', 1000, 'v') redis.call('DEBUG', 'SLEEP', 0.01)
redis.call('SET', 'k7{t}', 'v') redis.call('GETEX', 'k7{t}', 'PX', 1000) redis.call('DEBUG', 'SLEEP', 0.01)
local e = redis.call('DUMP', 'k7{t}')
redis.call('RESTORE', 'k8{t}', 1000, e) redis.call('DEBUG', 'SLEEP', 0.01)
redis.call('HSET', 'h{t}', 'f', 'v') redis.call('HPEXPIRE', 'h{t}', 1000, 'FIELDS', 1, 'f')
redis.call('DEBUG', 'SLEEP', 0.01)
local out = {}
for i = 1, 8 do
  local k = 'k' .. i .. '{t}'
  table.insert(out, {redis.call('PTTL', k), redis.call('TTL', k), redis.call('PEXPIRETIME', k)})
end
table.insert(out, {redis.call('HPTTL', 'h{t}', 'FIELDS', 1, 'f')[1], 1,
                   redis.call('HPEXPIRETIME', 'h{t}', 'FIELDS', 1, 'f')[1]})
return out
"""


@pytest.fixture
def deny_off(r):
    """DEBUG and friends allowed from scripts (as Redis's test does)."""
    r.execute_command("DEBUG", "set-disable-deny-scripts", 1)
    yield r
    r.execute_command("DEBUG", "set-disable-deny-scripts", 0)


def test_time_is_frozen_in_a_script(deny_off):
    """Redis 7.2: TIME in a script is the script's start (twice the same,
    however long the script ran); EVAL and FCALL alike."""
    r = deny_off
    a, b = r.eval(TIME_SCRIPT, 0)
    assert a == b
    r.function_load("#!lua name=t\nredis.register_function('t', function() %s end)" % TIME_SCRIPT,
                    replace=True)
    a, b = r.fcall("t", 0)
    assert a == b
    # and the next script's time is a later one
    c, _ = r.eval(TIME_SCRIPT, 0)
    assert (int(c[0]), int(c[1])) > (int(a[0]), int(a[1]))


def test_expiry_commands_use_the_scripts_time(deny_off):
    """[P]TTL, SET EX/PX, [P]EXPIRE, [P]SETEX, GETEX, RESTORE's TTL,
    HPEXPIRE and [P]EXPIRETIME all count from the script's start: the keys
    given one second each, between sleeps, expire at the same ms."""
    out = deny_off.eval(EXPIRY_SCRIPT, 0)
    assert out[0][0] == 1000 and out[0][1] == 1, out
    assert all(row == out[0] for row in out[:8]), out
    assert out[8][0] == 1000 and out[8][2] == out[0][2], out


def test_restore_ttl_counts_from_the_scripts_start(deny_off):
    """RESTORE's relative TTL counts from the script's start: two RESTOREs
    between sleeps expire at the same ms (7.4's "RESTORE expired keys with
    expiration time")."""
    r = deny_off
    r.set("src", "v")
    out = r.eval("local e = redis.call('DUMP', KEYS[1]) "
                 "redis.call('RESTORE', 'a', 1, e) redis.call('DEBUG', 'SLEEP', 0.01) "
                 "redis.call('RESTORE', 'b', 1, e) "
                 "return {redis.call('PEXPIRETIME', 'a'), redis.call('PEXPIRETIME', 'b')}", 1, "src")
    assert out[0] == out[1] > 0


def test_stream_ids_use_the_scripts_time(deny_off):
    """XADD's automatic IDs in one script share the script's millisecond."""
    a, b = deny_off.eval("local a = redis.call('XADD', 's', '*', 'f', 1) redis.call('DEBUG', 'SLEEP', 0.01) "
                         "return {a, redis.call('XADD', 's', '*', 'f', 2)}", 0)
    assert a.split(b"-")[0] == b.split(b"-")[0] and b.endswith(b"-1")


def test_time_is_frozen_in_exec(r):
    """The commands of a transaction run at EXEC's time: TIME twice the
    same, TTLs counted from it; a script in it keeps that time too."""
    r.set("sl", 1)
    p = r.pipeline(transaction=True)
    p.time()
    p.set("k", "v", px=1000)
    p.execute_command("DEBUG", "SLEEP", 0.02)
    p.time()
    p.pttl("k")
    p.eval("return redis.call('TIME')", 0)
    res = p.execute()
    assert res[0] == res[3]
    assert res[4] == 1000
    assert [int(x) for x in res[5]] == list(res[0])
    # outside a transaction the clock moves on
    t1 = r.time()
    r.execute_command("DEBUG", "SLEEP", 0.01)
    assert r.time() > t1


def test_time_snapshot_as_valkey(same_as_valkey):
    """The same scripts' replies on valkey-server (which shares 7.2's
    snapshot): equal TIMEs, equal TTLs."""
    same_as_valkey([["DEBUG", "set-disable-deny-scripts", "1"],
                    ["EVAL", "local a = redis.call('TIME') redis.call('DEBUG', 'SLEEP', 0.01) "
                     "local b = redis.call('TIME') return a[1] == b[1] and a[2] == b[2]", "0"],
                    ["EVAL", "redis.call('SET', 'k', 'v', 'EX', 1) redis.call('DEBUG', 'SLEEP', 0.01) "
                     "redis.call('SET', 'k2', 'v') redis.call('PEXPIRE', 'k2', 1000) "
                     "return {redis.call('PTTL', 'k'), redis.call('PTTL', 'k2')}", "0"],
                    ["DEBUG", "set-disable-deny-scripts", "0"]], protocols=(2,))


# -- the EVAL script cache's eviction (Redis 7.4) -------------------------------------------

def _sha(n):
    return hashlib.sha1(b"return %d" % n).hexdigest()


def _cache(r):
    i = r.info()
    return i["number_of_cached_scripts"], i["evicted_scripts"]


def test_eval_scripts_are_evicted_past_500(r):
    """EVAL and EVAL_RO keep at most 500 of the scripts they compiled; the
    least recently run goes first, counted by INFO's evicted_scripts."""
    r.script_flush()
    r.config_resetstat()
    for j in range(1, 251):
        r.eval("return %d" % j, 0)
    for j in range(251, 501):
        r.eval_ro("return %d" % j, 0)
    assert _cache(r) == (500, 0)
    assert r.evalsha(_sha(1), 0) == 1 and r.evalsha_ro(_sha(500), 0) == 500
    for j in range(501, 1001):
        r.eval("return %d" % j, 0)
    assert _cache(r) == (500, 500)
    for j in (1, 500):
        with pytest.raises(ResponseError, match="No matching script. Please use EVAL."):
            r.evalsha(_sha(j), 0)
    assert r.evalsha(_sha(1000), 0) == 1000
    r.config_resetstat()
    assert _cache(r) == (500, 0)
    r.script_flush()
    assert _cache(r) == (0, 0)


def test_eval_script_eviction_is_lru(r):
    """Running a script (EVAL or EVALSHA) makes it the most recently used."""
    r.script_flush()
    r.config_resetstat()
    for j in range(1, 501):
        r.eval("return %d" % j, 0)
    r.eval("return 1", 0)
    r.evalsha(_sha(2), 0)
    r.eval("return 4", 0)
    r.eval("return 1000", 0)        # evicts the oldest: "return 3"
    r.eval("return 1001", 0)        # then "return 5"
    assert r.script_exists(_sha(1), _sha(2), _sha(3), _sha(4), _sha(5), _sha(6)) == \
        [True, True, False, True, False, True]
    assert _cache(r) == (500, 2)


def test_script_load_scripts_are_never_evicted(r):
    """SCRIPT LOAD's scripts stay (and do not count toward the 500); a
    script EVAL already made stays evictable after a SCRIPT LOAD of it
    (Redis 7.4.1's luaCreateFunction returns the cached one as it is)."""
    r.script_flush()
    r.config_resetstat()
    n = 600
    for j in range(1, n + 1):
        r.script_load("return %d" % j)
        r.eval("return 'str_%d'" % j, 0)
    assert _cache(r) == (n + 500, n - 500)
    assert all(r.script_exists(*[_sha(j) for j in range(1, n + 1)]))
    # EVAL of a loaded script does not make it evictable
    for j in range(1, 11):
        r.eval("return %d" % j, 0)
    for j in range(700, 1300):
        r.eval("return 'x%d'" % j, 0)
    assert all(r.script_exists(*[_sha(j) for j in range(1, 11)]))
    # SCRIPT LOAD of an EVAL script leaves it evictable
    r.eval("return 'evaled'", 0)
    sha = r.script_load("return 'evaled'")
    for j in range(1300, 1800):
        r.eval("return 'x%d'" % j, 0)
    assert r.script_exists(sha) == [False]


def test_eval_cache_eviction_as_valkey(same_as_valkey):
    """The same commands' replies on valkey-server (which has 7.4's EVAL
    script eviction): which scripts are left (valkey's NOSCRIPT error
    text differs: SCRIPT EXISTS tells)."""
    cmds = [["SCRIPT", "FLUSH"], ["CONFIG", "RESETSTAT"]]
    cmds += [["EVAL", "return %d" % j, "0"] for j in range(1, 502)]
    cmds += [["SCRIPT", "EXISTS"] + [_sha(j) for j in (1, 2, 501)]]
    cmds += [["EVALSHA", _sha(j), "0"] for j in (2, 501)]
    cmds += [["EVAL", "return 3", "0"], ["EVAL", "return 9999", "0"], ["EVAL_RO", "return 9998", "0"]]
    cmds += [["SCRIPT", "EXISTS"] + [_sha(j) for j in (2, 3, 4, 5, 6, 9998, 9999)]]
    same_as_valkey(cmds, protocols=(2,))
