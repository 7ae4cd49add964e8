"""What Redis 7.2-7.4 changed in scripting (Redis 7.4.1's unit/scripting
checks): blocking commands run in scripts as their non-blocking forms,
the time a script sees is frozen at its start (TIME and the expiry
commands too), and the scripts EVAL compiles are kept in an LRU cache of
500.  Compared with valkey-server 9.1 (forked from 7.2.4) where it shares
the behaviour."""

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
        c.send("WAIT", "1", "300")
        wait_until(lambda: r.info("clients")["blocked_clients"] == 1, what="the WAIT blocked")
        assert c.read() == b":0\r\n"
    finally:
        c.close()
