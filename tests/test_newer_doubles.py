"""Doubles in replies as Redis 7.2+ prints them (d2string with a Grisu2
conversion instead of "%.17g"), compared byte for byte with valkey-server
9.1, which prints them the same way, in RESP2 and RESP3; and dtoa.py's pure
and compiled twins against each other."""

import math
import random
import struct

import pytest

from ophidis import dtoa

# integers, decimals, thirds, the powers of ten around the switch to the
# exponent form, subnormals, the extremes, signs, infinities, -0
VALUES = ["0", "-0", "1", "-1", "0.1", "0.2", "0.3", "1.5", "-2.5", "3.14159", "0.3333333333333333",
          "0.6666666666666666", "1e15", "1e16", "1e17", "1e18", "1e19", "1e20", "1e21", "1e22", "1e23",
          "123456789012345678", "9007199254740993", "4611686018427387904", "4611686018427387905",
          "9223372036854775807", "1e300", "-1e300", "1.7976931348623157e308", "2.2250738585072014e-308",
          "5e-324", "1e-310", "1e-5", "1e-6", "1e-7", "1.5e-7", "0.000123", "-0.0001", "1234567.125",
          "12345678.9", "123456789.123", "1e-100", "1.2345e-200", "inf", "-inf", "+inf",
          "5.0000000000000001e-7", "1.000000000000001", "299792458.000001", "6.02214076e23",
          "1.602176634e-19", "4.35", "0.07", "100.1", "2.675"]


def _random_values(seed, n):
    rnd = random.Random(seed)
    out = []
    while len(out) < n:
        k = rnd.random()
        if k < 0.4:
            d = struct.unpack("<d", struct.pack("<Q", rnd.getrandbits(64)))[0]
            if d != d or math.isinf(d):
                continue
        elif k < 0.7:
            d = round(rnd.uniform(-1e6, 1e6), rnd.randint(0, 9))
        else:
            d = rnd.uniform(-10, 10) * 10.0 ** rnd.randint(-30, 30)
        out.append(repr(d))
    return out


def test_zset_scores_same_as_valkey(same_as_valkey):
    cmds = []
    for i, v in enumerate(VALUES):
        cmds.append(["ZADD", "z", v, "m%d" % i])
        cmds.append(["ZSCORE", "z", "m%d" % i])
    cmds += [["ZRANGE", "z", "0", "-1", "WITHSCORES"], ["ZREVRANGE", "z", "0", "-1", "WITHSCORES"],
             ["ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES"], ["ZMSCORE", "z", "m3", "m9", "nosuch"],
             ["ZRANK", "z", "m4", "WITHSCORE"], ["ZINCRBY", "z", "0.1", "m4"], ["ZINCRBY", "z", "0.1", "m4"],
             ["ZADD", "z", "INCR", "1e-7", "m5"], ["ZUNIONSTORE", "u", "1", "z", "WEIGHTS", "0.3"],
             ["ZRANGE", "u", "0", "-1", "WITHSCORES"], ["ZUNION", "2", "z", "u", "WITHSCORES"],
             ["ZINTER", "2", "z", "u", "AGGREGATE", "MAX", "WITHSCORES"], ["ZDIFF", "1", "z", "WITHSCORES"],
             ["ZPOPMIN", "z", "3"], ["ZPOPMAX", "z"], ["ZPOPMIN", "z"], ["BZPOPMIN", "z", "0"],
             ["BZPOPMAX", "z", "0"], ["ZMPOP", "1", "z", "MIN", "COUNT", "2"],
             ["BZMPOP", "0", "1", "z", "MAX", "COUNT", "2"], ["ZRANGESTORE", "d", "z", "0", "-1"],
             ["ZRANGE", "d", "0", "-1", "WITHSCORES"]]
    same_as_valkey(cmds)


def test_listpack_zset_scores_same_as_valkey(same_as_valkey):
    # small zsets (listpack): ZSCAN reads the scores as the listpack holds
    # them (d2string text)
    cmds = []
    for i, v in enumerate(VALUES[:40]):
        cmds.append(["ZADD", "small%d" % (i % 4), v, "m%d" % i])
    for j in range(4):
        cmds.append(["ZRANGE", "small%d" % j, "0", "-1", "WITHSCORES"])
        cmds.append(["ZSCAN", "small%d" % j, "0"])
        cmds.append(["OBJECT", "ENCODING", "small%d" % j])
    same_as_valkey(cmds)


def test_random_scores_same_as_valkey(same_as_valkey):
    vals = _random_values(32, 3000)
    cmds = [["ZADD", "z%d" % (i // 500), v, "m%d" % i] for i, v in enumerate(vals)]
    cmds += [["ZRANGE", "z%d" % j, "0", "-1", "WITHSCORES"] for j in range(6)]
    same_as_valkey(cmds, protocols=(3,))


def test_script_doubles_same_as_valkey(same_as_valkey):
    # a number passed to redis.call (integers as integers, else Grisu2) and
    # a RESP3 double reply of a script
    cmds = []
    for v in VALUES:
        if v in ("inf", "-inf", "+inf"):
            continue
        cmds.append(["EVAL", "redis.call('SET', 'k', tonumber(ARGV[1])); return redis.call('GET', 'k')", "0", v])
        cmds.append(["EVAL", "redis.setresp(3); return {double = tonumber(ARGV[1])}", "0", v])
    same_as_valkey(cmds)


def test_acl_and_memory_doubles_keep_shape(r):
    # MEMORY STATS' ratios are doubles of addReplyDouble
    st = r.execute_command("MEMORY", "STATS")
    assert b"dataset.percentage" in st


@pytest.mark.parametrize("v", VALUES + _random_values(5, 2000))
def test_dtoa_twins_agree(v):
    d = float(v)
    assert dtoa.fpconv(d) == dtoa.fpconv_py(d)
    assert dtoa.d2string(d) == dtoa.d2string_py(d)
    if not math.isinf(d):
        assert float(dtoa.fpconv_py(d)) == d


def test_d2string_exact_forms():
    want = [(0.0, b"0"), (-0.0, b"-0")] + list({1e300: b"1e+300", 1e15: b"1000000000000000", 1e21: b"1e+21",
            2.0 ** 62: b"4611686018427387904", 2.0 ** 63: b"9223372036854776000", 0.1: b"0.1",
            1 / 3: b"0.3333333333333333", 5e-324: b"5e-324", 1.5e-7: b"1.5e-7", 1e-6: b"0.000001",
            -2.5: b"-2.5", math.inf: b"inf", -math.inf: b"-inf", math.nan: b"nan", 1e-310: b"1e-310"}.items())
    for d, s in want:
        assert dtoa.d2string_py(d) == s, d
        assert dtoa.d2string(d) == s, d
    assert dtoa.fpconv_py(1e15) == b"1e+15" and dtoa.fpconv(1e15) == b"1e+15"
    assert dtoa.lua_number(-0.0) == b"0" and dtoa.lua_number(3.0) == b"3"
