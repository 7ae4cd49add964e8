"""The set surface Redis added after 7.0: SUNIONCARD and SDIFFCARD (8.10),
with SINTERCARD's argument rules and errors.  Valkey 9.1 has neither: the
replies are Redis's documented ones (APPROX: the HyperLogLog estimate of
the union's members, which PFADD + PFCOUNT of the same members give)."""

import random

from support.resp import error


def test_sunioncard(r, raw):
    r.sadd("key1", "a", "b", "c")
    r.sadd("key2", "c", "d", "e")
    assert raw.call("SUNIONCARD", "2", "key1", "key2") == b":5\r\n"
    assert raw.call("SUNIONCARD", "2", "key1", "key2", "LIMIT", "3") == b":3\r\n"
    assert raw.call("SUNIONCARD", "2", "key1", "key2", "LIMIT", "0") == b":5\r\n"
    assert raw.call("SUNIONCARD", "2", "key1", "key2", "LIMIT", "50") == b":5\r\n"
    assert raw.call("SUNIONCARD", "1", "key1") == b":3\r\n"
    assert raw.call("SUNIONCARD", "3", "key1", "nokey", "key2") == b":5\r\n"
    assert raw.call("SUNIONCARD", "2", "nokey", "nokey2") == b":0\r\n"
    r.sadd("ints", 1, 2, 3, "a")
    assert raw.call("SUNIONCARD", "2", "ints", "key1") == b":6\r\n"


def test_sunioncard_approx_is_the_hyperloglog_estimate(r, raw):
    rnd = random.Random(7)
    members = [b"m%d" % rnd.randrange(10**9) for _ in range(3000)]
    r.sadd("x", *members[:2000])
    r.sadd("y", *members[1000:])
    r.pfadd("hll", *members)
    est = r.pfcount("hll")
    assert est != len(set(members))          # an estimate, not the count
    assert raw.call("SUNIONCARD", "2", "x", "y", "APPROX") == b":%d\r\n" % est
    assert raw.call("SUNIONCARD", "2", "x", "y", "LIMIT", "10", "APPROX") == b":10\r\n"
    assert raw.call("SUNIONCARD", "1", "nokey", "APPROX") == b":0\r\n"
    r.sadd("small", "a", "b")
    assert raw.call("SUNIONCARD", "1", "small", "approx") == b":2\r\n"


def test_sdiffcard(r, raw):
    r.sadd("key1", "a", "b", "c", "d")
    r.sadd("key2", "c")
    r.sadd("key3", "a", "c", "e")
    assert raw.call("SDIFFCARD", "3", "key1", "key2", "key3") == b":2\r\n"
    assert raw.call("SDIFFCARD", "3", "key1", "key2", "key3", "LIMIT", "1") == b":1\r\n"
    assert raw.call("SDIFFCARD", "1", "key1") == b":4\r\n"
    assert raw.call("SDIFFCARD", "2", "key1", "nokey") == b":4\r\n"
    assert raw.call("SDIFFCARD", "2", "nokey", "key1") == b":0\r\n"
    assert raw.call("SDIFFCARD", "2", "key1", "key1") == b":0\r\n"
    assert raw.call("SDIFFCARD", "2", "key1", "key2", "APPROX") == b"-ERR syntax error\r\n"


def test_card_errors(r, raw):
    r.sadd("s", "a")
    r.rpush("l", "x")
    for cmd in ("SUNIONCARD", "SDIFFCARD"):
        assert raw.call(cmd, "0", "s") == error("ERR numkeys should be greater than 0")
        assert raw.call(cmd, "x", "s") == error("ERR numkeys should be greater than 0")
        assert raw.call(cmd, "3", "s", "t") == error("ERR Number of keys can't be greater than number of args")
        assert raw.call(cmd, "1", "s", "LIMIT", "-1") == error("ERR LIMIT can't be negative")
        assert raw.call(cmd, "1", "s", "LIMIT") == error("ERR syntax error")
        assert raw.call(cmd, "1", "s", "FOO") == error("ERR syntax error")
        assert raw.call(cmd, "2", "s", "l") == error(
            "WRONGTYPE Operation against a key holding the wrong kind of value")
        assert raw.call(cmd, "1") == error("ERR wrong number of arguments for '%s' command" % cmd.lower())


def test_card_commands_in_scripts_and_command_info(r, raw):
    r.sadd("a", "1", "2")
    r.sadd("b", "2", "3")
    assert r.eval("return redis.call('SUNIONCARD', 2, KEYS[1], KEYS[2])", 2, "a", "b") == 3
    assert r.eval("return redis.call('SDIFFCARD', 2, KEYS[1], KEYS[2])", 2, "a", "b") == 1
    assert raw.call("COMMAND", "GETKEYS", "SUNIONCARD", "2", "a", "b", "LIMIT", "1") == (
        b"*2\r\n$1\r\na\r\n$1\r\nb\r\n")
    info = raw.call("COMMAND", "INFO", "SDIFFCARD")
    assert info.startswith(b"*1\r\n*10\r\n$9\r\nsdiffcard\r\n:-3\r\n*2\r\n+readonly\r\n+movablekeys\r\n"), info[:80]
    assert b"+@read\r\n+@set\r\n+@slow\r\n" in info
