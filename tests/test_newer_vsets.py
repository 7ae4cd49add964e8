"""Redis 8's vector sets (built in): VADD VREM VSIM VCARD VDIM VEMB VGETATTR
VSETATTR VINFO VLINKS VRANDMEMBER VISMEMBER VRANGE with the replies (RESP2
and RESP3, byte for byte) and errors of Redis 8's vector sets module
(valkey has no vector sets), the HNSW graph (links both ways, deletion,
recall against TRUTH), FILTER expressions, quantization and REDUCE, and the
type everywhere else: TYPE / OBJECT ENCODING / MEMORY USAGE / COPY, keyspace
events, MULTI and scripts, DUMP/RESTORE of the "vectorset" module record,
DEBUG RELOAD, AOF rewrite + restart and a replica."""

import random
import struct

import pytest
from redis.exceptions import ResponseError

from ophidis.persistence.rdbcodec import crc64, enc_len
from ophidis.types.vsetexpr import FilterSyntaxError, compile_filter, run_filter
from support.modtypes import AOF, err, follow, module_id, rdb_restart, restart, rewrite_aof
from support.resp import bulk
from support.wait import wait_until


def fp32(*xs) -> bytes:
    return struct.pack("<%df" % len(xs), *xs)


def _abc(c, *opts):
    c.execute_command("VADD", "s", "VALUES", 3, 1, 0, 0, "a", *opts)
    c.execute_command("VADD", "s", "VALUES", 3, 0, 1, 0, "b", *opts)
    c.execute_command("VADD", "s", "VALUES", 3, 1, 0, 0, "c", *opts)


def _links_ok(r, key):
    """Every link has its link back, on the same layer."""
    members = r.execute_command("VRANGE", key, "-", "+")
    links = {m: r.execute_command("VLINKS", key, m) for m in members}
    for m, layers in links.items():
        top = len(layers) - 1
        for i, layer in enumerate(layers):
            level = top - i
            for other in layer:
                other_layers = links[other]
                assert len(other_layers) - 1 >= level
                assert m in other_layers[len(other_layers) - 1 - level], (m, other, level)
    return links


# ---------------------------------------------------------------------------
# VADD / VSIM replies
# ---------------------------------------------------------------------------

def test_vadd_vsim_replies(raw, raw3):
    assert raw.call("VADD", "s", "VALUES", "3", "1", "0", "0", "a") == b":1\r\n"
    assert raw3.call("VADD", "s", "FP32", fp32(0, 1, 0), "b") == b"#t\r\n"
    assert raw.call("VADD", "s", "VALUES", "3", "1", "0", "0", "c") == b":1\r\n"
    assert raw3.call("VADD", "s", "VALUES", "3", "1", "0", "0", "c") == b"#f\r\n"      # an update
    assert raw.call("VSIM", "s", "VALUES", "3", "0", "1", "0", "COUNT", "1") == b"*1\r\n$1\r\nb\r\n"
    assert raw.call("VSIM", "s", "ELE", "b", "WITHSCORES", "COUNT", "1") == b"*2\r\n$1\r\nb\r\n$1\r\n1\r\n"
    assert raw3.call("VSIM", "s", "ELE", "b", "WITHSCORES", "COUNT", "1") == b"%1\r\n$1\r\nb\r\n,1\r\n"
    assert raw.call("VSIM", "s", "ELE", "b", "WITHATTRIBS", "COUNT", "1") == b"*2\r\n$1\r\nb\r\n$-1\r\n"
    assert raw3.call("VSIM", "s", "ELE", "b", "WITHATTRIBS", "COUNT", "1") == b"%1\r\n$1\r\nb\r\n_\r\n"
    assert raw3.call("VSIM", "s", "ELE", "b", "WITHSCORES", "WITHATTRIBS", "COUNT", "1") == (
        b"%1\r\n$1\r\nb\r\n*2\r\n,1\r\n_\r\n")
    assert raw.call("VSIM", "s", "ELE", "b", "WITHSCORES", "WITHATTRIBS", "COUNT", "1") == (
        b"*3\r\n$1\r\nb\r\n$1\r\n1\r\n$-1\r\n")
    # orthogonal vectors: distance 1, score 0.5
    r2 = raw.call("VSIM", "s", "ELE", "b", "WITHSCORES")
    assert r2.startswith(b"*6\r\n$1\r\nb\r\n$1\r\n1\r\n") and r2.count(b"$3\r\n0.5\r\n") == 2
    assert raw.call("VSIM", "nokey", "VALUES", "3", "1", "0", "0") == b"*0\r\n"
    assert raw3.call("VSIM", "nokey", "bogus", "x") == b"*0\r\n"         # no key: nothing is parsed


def test_vsim_order_count_epsilon(r):
    r.execute_command("VADD", "s", "VALUES", 3, 2, 1, 1, "a")
    r.execute_command("VADD", "s", "VALUES", 3, 2, 0, 1, "b")
    r.execute_command("VADD", "s", "VALUES", 3, 2, 0, 0, "c")
    r.execute_command("VADD", "s", "VALUES", 3, 2, 0, 2, "d")
    r.execute_command("VADD", "s", "VALUES", 3, -2, -1, -1, "e")
    assert r.execute_command("VSIM", "s", "VALUES", 3, 2, 1, 1) == [b"a", b"b", b"d", b"c", b"e"]
    assert r.execute_command("VSIM", "s", "VALUES", 3, 2, 1, 1, "COUNT", 2) == [b"a", b"b"]
    assert len(r.execute_command("VSIM", "s", "VALUES", 3, 2, 1, 1, "EPSILON", 0.5)) == 4
    assert r.execute_command("VSIM", "s", "VALUES", 3, 2, 1, 1, "TRUTH", "NOTHREAD", "EF", 5) == [
        b"a", b"b", b"d", b"c", b"e"]
    scores = r.execute_command("VSIM", "s", "ELE", "a", "WITHSCORES")
    assert scores[0:2] == [b"a", b"1"] and scores[-2] == b"e" and float(scores[-1]) == pytest.approx(0.0, abs=1e-6)


def test_vadd_errors(r):
    r.execute_command("VADD", "s", "VALUES", 3, 1, 0, 0, "a")
    bad = "invalid vector specification"
    assert err(r, "VADD", "s", "VALUES", 3, 1, 0, "x", "a") == bad
    assert err(r, "VADD", "s", "VALUES", 0, "a", "b") == bad
    assert err(r, "VADD", "s", "FP32", b"abc", "a") == bad
    assert err(r, "VADD", "s", "BOGUS", 1, "a") == bad
    assert err(r, "VADD", "s", "REDUCE", 5, "VALUES", 3, 1, 0, 0, "a") == bad     # REDUCE above the dimension
    assert err(r, "VADD", "s", "REDUCE", 0, "VALUES", 3, 1, 0, 0, "a") == bad
    assert err(r, "VADD", "s", "VALUES", 3, 1, 0, 0) == "wrong number of arguments for 'vadd' command"
    assert err(r, "VADD", "s", "VALUES", 3, 1, 0, 0, "a", "BOGUS") == "invalid option after element"
    assert err(r, "VADD", "s", "VALUES", 3, 1, 0, 0, "a", "EF", 0) == "invalid EF"
    assert err(r, "VADD", "s", "VALUES", 3, 1, 0, 0, "a", "M", 3) == "invalid M"
    assert err(r, "VADD", "s", "VALUES", 3, 1, 0, 0, "a", "NOQUANT") == (
        "asked quantization mismatch with existing vector set")
    assert err(r, "VADD", "s", "VALUES", 3, 1, 0, 0, "a", "M", 32) == "asked M value mismatch with existing vector set"
    assert err(r, "VADD", "s", "VALUES", 2, 1, 0, "a") == "Vector dimension mismatch - got 2 but set has 3"
    r.set("str", "x")
    assert err(r, "VADD", "str", "VALUES", 1, 1, "a").startswith("WRONGTYPE")
    for cmd in (("VSIM", "str", "ELE", "a"), ("VCARD", "str"), ("VDIM", "str"), ("VEMB", "str", "a"),
                ("VREM", "str", "a"), ("VINFO", "str"), ("VLINKS", "str", "a"), ("VGETATTR", "str", "a"),
                ("VSETATTR", "str", "a", "{}"), ("VRANDMEMBER", "str"), ("VISMEMBER", "str", "a"),
                ("VRANGE", "str", "-", "+")):
        assert err(r, *cmd).startswith("WRONGTYPE"), cmd


def test_vsim_errors(r):
    _abc(r)
    assert err(r, "VSIM", "s", "ELE", "zz") == "element not found in set"
    assert err(r, "VSIM", "s", "VALUES", 2, 1, 0) == "Vector dimension mismatch - got 2 but set has 3"
    assert err(r, "VSIM", "s", "VALUES", 3, 1, 0) == "invalid vector specification"
    assert err(r, "VSIM", "s", "BOGUS", 1) == "invalid vector specification"
    assert err(r, "VSIM", "s", "ELE", "a", "COUNT", 0) == "invalid COUNT"
    assert err(r, "VSIM", "s", "ELE", "a", "EPSILON", 0) == "invalid EPSILON"
    assert err(r, "VSIM", "s", "ELE", "a", "EF", 0) == "invalid EF"
    assert err(r, "VSIM", "s", "ELE", "a", "FILTER-EF", -1) == "invalid FILTER-EF"
    assert err(r, "VSIM", "s", "ELE", "a", "BOGUS") == "syntax error in VSIM command"
    assert err(r, "VSIM", "s", "ELE", "a", "COUNT") == "syntax error in VSIM command"
    assert err(r, "VSIM", "s", "ELE", "a", "FILTER", ".a > ") == "syntax error in FILTER expression near: .a > "
    assert err(r, "VSIM", "s", "ELE", "a", "FILTER", ".a > 1 $ 2") == "syntax error in FILTER expression near: $ 2"
    assert err(r, "VSIM", "s", "ELE", "a", "FILTER", "(.a > 1") == "syntax error in FILTER expression near: (.a > 1"


# ---------------------------------------------------------------------------
# The other commands
# ---------------------------------------------------------------------------

def test_card_dim_ismember_rem(raw, raw3, r):
    assert raw.call("VCARD", "s") == b":0\r\n"
    assert raw.call("VDIM", "s") == b"-ERR key does not exist\r\n"
    assert raw.call("VISMEMBER", "s", "a") == b":0\r\n"
    assert raw3.call("VISMEMBER", "s", "a") == b"#f\r\n"
    assert raw.call("VREM", "s", "a") == b":0\r\n"
    _abc(r)
    assert raw.call("VCARD", "s") == b":3\r\n"
    assert raw.call("VDIM", "s") == b":3\r\n"
    assert raw3.call("VISMEMBER", "s", "a") == b"#t\r\n"
    assert raw.call("VREM", "s", "zz") == b":0\r\n"
    assert raw3.call("VREM", "s", "a") == b"#t\r\n"
    assert raw.call("VREM", "s", "b") == b":1\r\n"
    assert raw.call("VREM", "s", "c") == b":1\r\n"
    assert r.exists("s") == 0                                  # the last element takes the key


def test_vemb_quantizations(raw, raw3, r):
    r.execute_command("VADD", "q8", "VALUES", 3, 3, 0, 4, "x")
    # (3, 0, 4) / 5 = (0.6, 0, 0.8) in int8 steps of 0.8/127: 95 * 0.8 / 127 * 5
    assert r.execute_command("VEMB", "q8", "x") == [b"2.992125988006592", b"0", b"4"]
    assert raw3.call("VEMB", "q8", "x") == b"*3\r\n,2.992125988006592\r\n,0\r\n,4\r\n"
    # RAW: the quantization, the stored bytes, the norm and (Q8) the range
    assert raw.call("VEMB", "q8", "x", "RAW") == (b"*4\r\n+int8\r\n" + bulk(bytes([95, 0, 127]))
                                                  + b"$1\r\n5\r\n" + bulk(b"0.800000011920929"))
    assert raw3.call("VEMB", "q8", "x", "RAW") == (b"*4\r\n+int8\r\n" + bulk(bytes([95, 0, 127]))
                                                   + b",5\r\n,0.800000011920929\r\n")
    r.execute_command("VADD", "f", "VALUES", 2, 0.5, 0.25, "x", "NOQUANT")
    assert r.execute_command("VEMB", "f", "x") == [b"0.5", b"0.25"]
    l2 = (0.5 ** 2 + 0.25 ** 2) ** 0.5
    raw_f = r.execute_command("VEMB", "f", "x", "RAW")
    assert raw_f[0] == b"f32" and len(raw_f) == 3 and float(raw_f[2]) == pytest.approx(l2, rel=1e-6)
    assert struct.unpack("<2f", raw_f[1]) == pytest.approx((0.5 / l2, 0.25 / l2), rel=1e-6)
    r.execute_command("VADD", "b", "VALUES", 3, 0.5, -2, 0, "x", "BIN")
    assert r.execute_command("VEMB", "b", "x") == [b"1", b"-1", b"-1"]
    raw_b = r.execute_command("VEMB", "b", "x", "RAW")
    assert raw_b[0] == b"bin" and raw_b[1] == b"\x01" + b"\x00" * 7 and len(raw_b) == 3
    assert raw.call("VEMB", "q8", "nosuch") == b"$-1\r\n"
    assert raw3.call("VEMB", "nokey", "x") == b"_\r\n"
    assert raw.call("VEMB", "q8", "x", "BOGUS") == b"-ERR invalid option\r\n"


def test_vinfo(raw, raw3, r):
    assert raw.call("VINFO", "s") == b"*-1\r\n"
    assert raw3.call("VINFO", "s") == b"_\r\n"
    r.execute_command("VADD", "s", "VALUES", 2, 1, 0, "a", "NOQUANT", "M", 8, "SETATTR", '{"x":1}')
    r.execute_command("VADD", "s", "VALUES", 2, 0, 1, "b", "NOQUANT", "M", 8)
    info = r.execute_command("VINFO", "s")
    d = dict(zip(info[::2], info[1::2]))
    assert list(d) == [b"quant-type", b"hnsw-m", b"vector-dim", b"projection-input-dim", b"size", b"max-level",
                       b"attributes-count", b"vset-uid", b"hnsw-max-node-uid"]
    assert (d[b"quant-type"], d[b"hnsw-m"], d[b"vector-dim"], d[b"projection-input-dim"], d[b"size"],
            d[b"attributes-count"], d[b"hnsw-max-node-uid"]) == (b"f32", 8, 2, 0, 2, 1, 2)
    r3 = raw3.call("VINFO", "s")
    assert r3.startswith(b"%9\r\n+quant-type\r\n+f32\r\n+hnsw-m\r\n:8\r\n+vector-dim\r\n:2\r\n")


def test_attributes(raw, raw3, r):
    r.execute_command("VADD", "s", "VALUES", 2, 1, 0, "a", "SETATTR", '{"year":1984}')
    r.execute_command("VADD", "s", "VALUES", 2, 0, 1, "b")
    assert raw.call("VGETATTR", "s", "a") == bulk(b'{"year":1984}')
    assert raw.call("VGETATTR", "s", "b") == b"$-1\r\n"
    assert raw3.call("VGETATTR", "s", "zz") == b"_\r\n"
    assert raw.call("VGETATTR", "nokey", "a") == b"$-1\r\n"
    assert raw3.call("VSETATTR", "s", "b", '{"year":2000}') == b"#t\r\n"
    assert raw.call("VSETATTR", "s", "zz", "{}") == b":0\r\n"
    assert raw.call("VSETATTR", "nokey", "a", "{}") == b":0\r\n"
    assert r.execute_command("VSIM", "s", "ELE", "a", "WITHATTRIBS") == [b"a", b'{"year":1984}', b"b", b'{"year":2000}']
    assert raw.call("VSETATTR", "s", "a", "") == b":1\r\n"         # "" removes them
    assert raw.call("VGETATTR", "s", "a") == b"$-1\r\n"
    info = r.execute_command("VINFO", "s")
    assert dict(zip(info[::2], info[1::2]))[b"attributes-count"] == 1
    # an update keeps the attributes unless SETATTR is given again
    r.execute_command("VADD", "s", "VALUES", 2, 0, 2, "b")
    assert r.execute_command("VGETATTR", "s", "b") == b'{"year":2000}'
    r.execute_command("VADD", "s", "VALUES", 2, 0, 2, "b", "SETATTR", "")
    assert r.execute_command("VGETATTR", "s", "b") is None


def test_vsim_filter(r):
    for i in range(40):
        attrs = '{"i":%d,"name":"e%d","tags":["x","y%d"],"ok":%s}' % (i, i, i % 2, "true" if i % 3 == 0 else "false")
        r.execute_command("VADD", "s", "VALUES", 2, 1, i / 40.0, "e%d" % i, "SETATTR", attrs)
    r.execute_command("VADD", "s", "VALUES", 2, 1, 0, "noattr")

    def sim(expr, *extra):
        return set(r.execute_command("VSIM", "s", "ELE", "e0", "COUNT", 100, "FILTER", expr, *extra))

    assert sim(".i >= 35") == {b"e35", b"e36", b"e37", b"e38", b"e39"}
    assert sim(".i > 10 and .i < 13") == {b"e11", b"e12"}
    assert sim(".i == 3 or .name == 'e5'") == {b"e3", b"e5"}
    assert sim(".name in ['e1', \"e2\", 'zz']") == {b"e1", b"e2"}
    assert sim("not (.i < 38)") == {b"e38", b"e39"}
    assert sim("!(.i < 38) && .ok") == {b"e39"}
    assert sim("(.i + 2) * 2 == 10") == {b"e3"}
    assert sim(".i % 20 == 0 || .i ** 2 == 81") == {b"e0", b"e20", b"e9"}
    assert sim(".missing > 1 or .i == 1") == set()             # a missing field fails the whole expression
    assert sim(".i == 1 or .missing > 1") == set()
    assert sim(".tags == 1") == set()
    assert len(sim("1")) == 40                                  # elements without attributes never pass
    assert sim("0") == set()
    # FILTER-EF bounds the nodes visited: 1 leaves only the entry point
    assert len(sim(".i >= 0", "FILTER-EF", 1)) <= 1
    assert sim(".i >= 35", "TRUTH") == {b"e35", b"e36", b"e37", b"e38", b"e39"}


def test_filter_language():
    def ok(expr, attrs):
        return run_filter(compile_filter(expr), attrs.encode())

    assert ok("2 ** 3 ** 2 == 512", "{}")                      # right-associative
    assert ok("-5 + 10 == 5", "{}") and ok("10 - -5 == 15", "{}")
    assert ok("(1 + 2) - 3 == 0", "{}")
    assert ok(".a == null", '{"a":null}') and not ok(".a == null", '{"a":0}')
    assert ok(".a", '{"a":true}') and not ok(".a", '{"a":false}')
    assert ok(".s == '10' and .s == 10 and .s > 9", '{"s":"10"}')
    assert ok("'' == 0", "{}") and not ok("''", "{}")
    assert ok("3 in [1, 2, 3]", "{}") and not ok("3 in 3", "{}")
    assert ok("'a' in .t", '{"t":["a","b"]}')
    # escapes in string literals; JSON strings are decoded
    attrs = '{"dq": "a\\"b", "sq": "O\'Brien", "bs": "x\\\\y", "nl": "l1\\nl2"}'
    assert ok('.dq == "a\\"b"', attrs) and ok(".sq == 'O\\'Brien'", attrs)
    assert ok('.bs == "x\\\\y"', attrs) and ok('.nl == "l1\\nl2"', attrs)
    assert ok('"\\"b" in .dq', attrs) and ok('.dq in ["zzz", "a\\"b"]', attrs)
    assert ok("'a\"b' == .dq", attrs) and ok('.sq == "O\'Brien"', attrs)
    # a string within a string
    assert ok("'lic' in .n", '{"n":"Alice"}') and ok("'Alice' in .n", '{"n":"Alice"}')
    assert not ok("'xyz' in .n", '{"n":"Alice"}') and not ok(".n in ''", '{"n":"Alice"}')
    assert ok("'' in .n && '' in ''", '{"n":"Alice"}') and not ok("1 in '1'", "{}")
    assert not ok(".o", '{"o":{"x":1}}')                         # objects are not values
    assert not ok(".a", "not json")
    assert ok("1 / 0 > 100", "{}")
    # the position: where the tokenizer stopped (VSIM shows the whole
    # expression when that is its end), else 0
    for bad, pos in ((".a >", 0), ("1 +", 0), ("(1", 0), ("1)", 0), ("1 $", 2), ("'abc", 4), ("[1, x]", 4),
                     ("true", 4), ("1e-5 > 0", 2), ("1 2", 0), ("", 0)):
        with pytest.raises(FilterSyntaxError) as e:
            compile_filter(bad)
        assert e.value.pos == pos, bad


def test_vlinks(raw, raw3, r):
    assert raw.call("VLINKS", "s", "a") == b"$-1\r\n"
    _abc(r)
    assert raw3.call("VLINKS", "s", "zz") == b"_\r\n"
    assert raw.call("VLINKS", "s", "a", "BOGUS") == b"-ERR wrong number of arguments for 'vlinks' command\r\n"
    assert raw.call("VLINKS", "s", "a", "WITHSCORES", "x") == b"-ERR wrong number of arguments for 'vlinks' command\r\n"
    assert raw.call("VRANDMEMBER", "s", "1", "2") == b"-ERR wrong number of arguments for 'vrandmember' command\r\n"
    assert raw.call("VRANGE", "s", "-", "+", "1", "2") == b"-ERR wrong number of arguments for 'vrange' command\r\n"
    layers = r.execute_command("VLINKS", "s", "a")
    assert sorted(layers[-1]) == [b"b", b"c"]
    with_scores = r.execute_command("VLINKS", "s", "a", "WITHSCORES")
    flat = dict(zip(with_scores[-1][::2], with_scores[-1][1::2]))
    assert flat == {b"b": b"0.5", b"c": b"1"}
    r3 = raw3.call("VLINKS", "s", "a", "WITHSCORES")
    assert b"%2\r\n" in r3 and b",0.5\r\n" in r3 and b",1\r\n" in r3


def test_vrandmember(raw, raw3, r):
    assert raw.call("VRANDMEMBER", "s") == b"$-1\r\n"
    assert raw3.call("VRANDMEMBER", "s") == b"_\r\n"
    assert raw.call("VRANDMEMBER", "s", "3") == b"*0\r\n"
    assert raw.call("VRANDMEMBER", "s", "x") == b"-ERR COUNT value is not an integer\r\n"
    _abc(r)
    assert r.execute_command("VRANDMEMBER", "s") in (b"a", b"b", b"c")
    assert raw.call("VRANDMEMBER", "s", "0") == b"*0\r\n"
    assert sorted(r.execute_command("VRANDMEMBER", "s", 10)) == [b"a", b"b", b"c"]
    assert len(set(r.execute_command("VRANDMEMBER", "s", 2))) == 2
    many = r.execute_command("VRANDMEMBER", "s", -20)
    assert len(many) == 20 and set(many) <= {b"a", b"b", b"c"}


def test_vrange(raw, r):
    assert raw.call("VRANGE", "s", "-", "+") == b"*0\r\n"
    for e in ("b", "a", "ab", "c", "\xff"):
        r.execute_command("VADD", "s", "VALUES", 1, 1, e)
    assert r.execute_command("VRANGE", "s", "-", "+") == [b"a", b"ab", b"b", b"c", "\xff".encode()]
    assert r.execute_command("VRANGE", "s", "[ab", "(c") == [b"ab", b"b"]
    assert r.execute_command("VRANGE", "s", "(a", "[b") == [b"ab", b"b"]
    assert r.execute_command("VRANGE", "s", "-", "+", 2) == [b"a", b"ab"]
    assert r.execute_command("VRANGE", "s", "-", "+", -1) == r.execute_command("VRANGE", "s", "-", "+")
    assert r.execute_command("VRANGE", "s", "-", "+", 0) == []
    assert raw.call("VRANGE", "s", "a", "+") == b"-ERR invalid start range format\r\n"
    assert raw.call("VRANGE", "s", "-", "[") == b"-ERR invalid end range format\r\n"
    assert raw.call("VRANGE", "s", "+", "+") == b"-ERR '-' can only be used as first argument, '+' only as second\r\n"
    assert raw.call("VRANGE", "s", "-", "+", "x") == b"-ERR invalid COUNT value\r\n"


def test_reduce_projection(r):
    r.execute_command("VADD", "s", "REDUCE", 2, "VALUES", 4, 1, 0, 0, 0, "a")
    r.execute_command("VADD", "s", "REDUCE", 2, "VALUES", 4, 0, 1, 0, 0, "b")
    info = r.execute_command("VINFO", "s")
    d = dict(zip(info[::2], info[1::2]))
    assert (d[b"vector-dim"], d[b"projection-input-dim"]) == (2, 4)
    assert r.execute_command("VDIM", "s") == 2
    assert len(r.execute_command("VEMB", "s", "a")) == 2
    # queries are projected too; the set's own dimension is taken as is
    assert r.execute_command("VSIM", "s", "VALUES", 4, 1, 0, 0, 0, "COUNT", 1) == [b"a"]
    assert r.execute_command("VSIM", "s", "ELE", "b", "COUNT", 1) == [b"b"]
    assert err(r, "VADD", "s", "VALUES", 4, 1, 0, 0, 0, "c") == "Vector dimension mismatch - got 4 but set has 2"
    assert err(r, "VADD", "s", "REDUCE", 1, "VALUES", 4, 1, 0, 0, 0, "c") == (
        "Vector dimension mismatch - got 4 but set has 2")
    assert err(r, "VADD", "s", "REDUCE", 2, "VALUES", 3, 1, 0, 0, "c") == (
        "Input dimension mismatch for projection - got 3 but projection expects 4")
    assert err(r, "VSIM", "s", "VALUES", 3, 1, 0, 0) == (
        "Input dimension mismatch for projection - got 3 but projection expects 4")
    r.execute_command("VADD", "p", "VALUES", 2, 1, 0, "a")
    assert err(r, "VADD", "p", "REDUCE", 2, "VALUES", 2, 1, 0, "b") == (
        "cannot add projection to existing set without projection")


# ---------------------------------------------------------------------------
# The graph
# ---------------------------------------------------------------------------

def _fill_random(r, key, n, dim, *opts, seed=7):
    rnd = random.Random(seed)
    vecs = {}
    p = r.pipeline(transaction=False)
    for i in range(n):
        v = [rnd.gauss(0, 1) for _ in range(dim)]
        vecs[b"e%d" % i] = v
        p.execute_command("VADD", key, "FP32", fp32(*v), "e%d" % i, *opts)
    p.execute()
    return vecs


@pytest.mark.parametrize("quant", ["Q8", "NOQUANT", "BIN"])
def test_recall_links_and_deletion(r, quant):
    vecs = _fill_random(r, "g", 400, 16, quant, "M", 8)
    assert r.execute_command("VCARD", "g") == 400
    _links_ok(r, "g")
    rnd = random.Random(3)
    queries = [[rnd.gauss(0, 1) for _ in range(16)] for _ in range(20)]

    def recall():
        hits = 0
        for q in queries:
            got = r.execute_command("VSIM", "g", "FP32", fp32(*q), "COUNT", 10)
            exact = r.execute_command("VSIM", "g", "FP32", fp32(*q), "COUNT", 10, "TRUTH")
            hits += len(set(got) & set(exact))
        return hits / (10.0 * len(queries))

    assert recall() >= 0.9
    # delete half: links stay reciprocal, every element still reachable
    gone = sorted(vecs)[::2]
    for e in gone:
        assert r.execute_command("VREM", "g", e) == 1
    assert r.execute_command("VCARD", "g") == 200
    links = _links_ok(r, "g")
    assert not set(gone) & set(links)
    assert all(not set(gone) & set(x) for layers in links.values() for layer in layers for x in [layer])
    assert recall() >= 0.85
    left = set(links)
    seen = set(r.execute_command("VSIM", "g", "ELE", sorted(left)[0], "COUNT", 200, "EF", 200))
    assert seen == left


def test_extreme_components(r):
    # as C's float arithmetic: an infinite norm makes NaNs or a zero vector;
    # nothing crashes and the set stays usable
    assert r.execute_command("VADD", "s", "VALUES", 2, "inf", 1, "a") == 1
    assert r.execute_command("VADD", "s", "VALUES", 2, 1e38, 1e38, "b") == 1
    assert r.execute_command("VADD", "s", "VALUES", 2, 0, 0, "c") == 1
    assert err(r, "VADD", "s", "VALUES", 2, "nan", 1, "d") == "invalid vector specification"
    assert r.execute_command("VEMB", "s", "c") == [b"0", b"0"]
    assert r.execute_command("VEMB", "s", "b") == [b"nan", b"nan"]     # 0 * the infinite norm
    assert sorted(r.execute_command("VSIM", "s", "VALUES", 2, 1, 1)) == [b"a", b"b", b"c"]
    assert r.execute_command("VCARD", "s") == 3


def test_identical_vectors_stay_connected(r):
    for i in range(120):
        r.execute_command("VADD", "s", "VALUES", 4, 1, 1, 1, 1, "e%d" % i)
    r.execute_command("VADD", "s", "VALUES", 4, -1, -1, -1, -1, "neg")
    assert len(r.execute_command("VSIM", "s", "ELE", "neg", "COUNT", 121, "EF", 121)) == 121
    assert len(r.execute_command("VSIM", "s", "ELE", "neg", "COUNT", 30)) == 30


# ---------------------------------------------------------------------------
# The type in the rest of the server
# ---------------------------------------------------------------------------

def test_type_encoding_memory_copy(r):
    _abc(r, "SETATTR", '{"k":1}')
    assert r.type("s") == b"vectorset"
    assert r.object("encoding", "s") == b"raw"
    assert r.memory_usage("s") > 100
    assert r.copy("s", "s2")
    r.execute_command("VREM", "s", "a")
    assert r.execute_command("VCARD", "s2") == 3
    assert r.execute_command("VGETATTR", "s2", "a") == b'{"k":1}'
    assert r.execute_command("VSIM", "s2", "ELE", "a", "COUNT", 1) in ([b"a"], [b"c"])
    _links_ok(r, "s2")


def test_keyspace_events(r):
    r.config_set("notify-keyspace-events", "KEAn")
    try:
        p = r.pubsub()
        p.psubscribe("__keyevent@0__:*")
        wait_until(lambda: p.get_message(timeout=0.1) is not None, what="the subscription")
        r.execute_command("VADD", "s", "VALUES", 1, 1, "a")
        r.execute_command("VADD", "s", "VALUES", 1, 2, "b")
        r.execute_command("VREM", "s", "a")
        r.execute_command("VREM", "s", "b")
        r.set("done", 1)
        events = []
        wait_until(lambda: events.append(p.get_message(timeout=0.1)) or b"__keyevent@0__:set" in
                   [e["channel"] for e in events if e], what="the events")
        chans = [e["channel"] for e in events if e]
        # as the module: only the key's creation is announced
        assert chans == [b"__keyevent@0__:new", b"__keyevent@0__:new", b"__keyevent@0__:set"]
        p.close()
    finally:
        r.config_set("notify-keyspace-events", "")


def test_multi_and_script(r):
    p = r.pipeline(transaction=True)
    p.execute_command("VADD", "s", "VALUES", 2, 1, 0, "a")
    p.execute_command("VADD", "s", "VALUES", 2, 0, 1, "b")
    p.execute_command("VSIM", "s", "ELE", "a", "WITHSCORES")
    assert p.execute() == [1, 1, [b"a", b"1", b"b", b"0.5"]]
    assert r.eval("return redis.call('VSIM', KEYS[1], 'ELE', 'b', 'COUNT', 1)", 1, "s") == [b"b"]
    assert r.eval("return redis.call('VCARD', KEYS[1])", 1, "s") == 2


def test_command_info(r, raw):
    vadd = raw.call("COMMAND", "INFO", "VADD")
    # arity, flags, first/last key and step, then the implicit categories
    assert vadd.startswith(b"*1\r\n*10\r\n$4\r\nvadd\r\n:-5\r\n*3\r\n+write\r\n+denyoom\r\n+module\r\n"
                           b":1\r\n:1\r\n:1\r\n*3\r\n+@write\r\n+@slow\r\n+@vectorset\r\n")
    vsim = raw.call("COMMAND", "INFO", "VSIM")
    assert b":-4\r\n*2\r\n+readonly\r\n+module\r\n" in vsim and b"+@read\r\n+@slow\r\n" in vsim
    vcard = raw.call("COMMAND", "INFO", "VCARD")
    assert b":2\r\n*3\r\n+readonly\r\n+module\r\n+fast\r\n" in vcard and b"+@read\r\n+@fast\r\n" in vcard
    assert raw.call("COMMAND", "GETKEYS", "VSIM", "k", "ELE", "e") == b"*1\r\n$1\r\nk\r\n"
    # the @vectorset category (ACL CAT lists it with the other data types')
    cats = r.execute_command("ACL", "CAT")
    assert cats.index(b"vectorset") > cats.index(b"json")
    docs = raw.call("COMMAND", "DOCS", "VSIM")
    assert b"$5\r\ngroup\r\n$6\r\nmodule\r\n" in docs and b"$6\r\nmodule\r\n$9\r\nvectorset\r\n" in docs
    names = {b"vadd", b"vrem", b"vsim", b"vcard", b"vdim", b"vemb", b"vgetattr", b"vsetattr", b"vinfo", b"vlinks",
             b"vrandmember", b"vismember", b"vrange"}
    assert set(r.execute_command("ACL", "CAT", "vectorset")) == names
    assert names & set(r.execute_command("ACL", "CAT", "write")) == {b"vadd", b"vrem", b"vsetattr"}
    assert names & set(r.execute_command("ACL", "CAT", "fast")) == {
        b"vcard", b"vdim", b"vemb", b"vgetattr", b"vsetattr", b"vinfo", b"vlinks"}
    r.execute_command("ACL", "SETUSER", "vu", "on", "nopass", "~*", "+@all", "-@vectorset")
    try:
        assert raw.call("AUTH", "vu", "x") == b"+OK\r\n"
        assert raw.call("VCARD", "s").startswith(b"-NOPERM")
        assert raw.call("GET", "s") == b"$-1\r\n"
    finally:
        r.execute_command("ACL", "DELUSER", "vu")


def _snapshot(r):
    out = {}
    for key in (b"s", b"f", b"p"):
        members = r.execute_command("VRANGE", key, "-", "+")
        out[key] = {
            "info": r.execute_command("VINFO", key)[:14],
            "members": {m: (r.execute_command("VEMB", key, m, "RAW"), r.execute_command("VGETATTR", key, m),
                            r.execute_command("VLINKS", key, m)) for m in members},
        }
    return out


def _fill(r):
    _fill_random(r, "s", 60, 8)
    r.execute_command("VSETATTR", "s", "e3", '{"a":1}')
    _fill_random(r, "f", 30, 5, "NOQUANT", "M", 6, seed=2)
    r.execute_command("VADD", "p", "REDUCE", 3, "VALUES", 6, 1, 2, 3, 4, 5, 6, "x", "BIN")
    r.execute_command("VADD", "p", "REDUCE", 3, "VALUES", 6, -1, 2, 3, -4, 5, 6, "y", "BIN")
    for e in ("e1", "e2", "e10"):
        r.execute_command("VREM", "s", e)


def test_dump_restore(r):
    _fill(r)
    before = _snapshot(r)
    payload = r.dump("s")
    assert payload[0] == 7                                     # RDB_TYPE_MODULE_2
    assert payload[1:10] == b"\x81" + module_id("vectorset", 0).to_bytes(8, "big")
    # dimension 8, count 57, quantization Q8 (1) | M 16 << 8, flags (attributes):
    # unsigned items (opcode 2, then an RDB length)
    assert payload[10:19] == b"\x02" + enc_len(8) + b"\x02" + enc_len(57) + b"\x02" + enc_len(1 | 16 << 8) + b"\x02\x02"
    for key in (b"s", b"f", b"p"):
        data = r.dump(key)
        r.delete(key)
        r.restore(key, 0, data)
    assert _snapshot(r) == before
    body = payload[:40] + payload[41:-8]                       # a byte gone, the checksum right
    with pytest.raises(ResponseError, match="Bad data format"):
        r.restore("bad", 0, body + crc64(body).to_bytes(8, "little"))
    assert not r.exists("bad")


def test_restore_refuses_a_broken_graph(r):
    r.execute_command("VADD", "s", "VALUES", 2, 1, 0, "a", "NOQUANT")
    r.execute_command("VADD", "s", "VALUES", 2, 0, 1, "b", "NOQUANT")
    payload = bytearray(r.dump("s"))
    # the first node's params: id, level/version, links 1, capacity 32, the linked id
    i = payload.index(b"\x02\x20\x02")                      # capacity 32 then the linked id
    payload[i + 3] = 9                                       # a link to a node that does not exist
    body = bytes(payload[:-8])
    with pytest.raises(ResponseError, match="Bad data format"):
        r.restore("bad", 0, body + crc64(body).to_bytes(8, "little"))


def test_debug_reload(r):
    _fill(r)
    before = _snapshot(r)
    d1 = r.execute_command("DEBUG", "DIGEST-VALUE", "s")
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    assert _snapshot(r) == before
    assert r.execute_command("DEBUG", "DIGEST-VALUE", "s") == d1
    r.execute_command("VADD", "s", "FP32", fp32(*[1] * 8), "after")
    _links_ok(r, "s")


def test_aof_rewrite_and_restart(start_server):
    s = start_server(*AOF)
    c = s.client()
    _fill(c)
    rewrite_aof(c)
    c.execute_command("VADD", "f", "VALUES", 5, 1, 2, 3, 4, 5, "late", "NOQUANT", "M", 6)   # the incr file
    c.execute_command("VREM", "s", "e4")
    before = _snapshot(c)
    s.stop()
    s2 = restart(start_server, s, *AOF)
    after = _snapshot(s2.client())
    # the set rebuilt from the RESTORE of the rewrite keeps its graph; the
    # late additions are replayed (their links may differ): compare members
    assert after[b"p"] == before[b"p"]
    for key in (b"s", b"f"):
        assert set(after[key]["members"]) == set(before[key]["members"])
        assert ({m: v[:2] for m, v in after[key]["members"].items() if m != b"late"}
                == {m: v[:2] for m, v in before[key]["members"].items() if m != b"late"})
    _links_ok(s2.client(), "s")
    _links_ok(s2.client(), "f")


def test_rdb_restart(start_server):
    rdb_restart(start_server, _fill, _snapshot)


def test_replica(start_server):
    master = start_server()
    m = master.client()
    m.execute_command("VADD", "s", "VALUES", 2, 1, 0, "a", "SETATTR", '{"x":1}')
    rep_s = start_server()
    rep = rep_s.client()
    follow(rep, master)
    wait_until(lambda: rep.exists("s"), what="the payload")
    m.execute_command("VADD", "s", "VALUES", 2, 0, 1, "b")
    m.execute_command("VADD", "s", "VALUES", 2, 1, 1, "a")                # an update
    m.execute_command("VSETATTR", "s", "b", '{"y":2}')
    m.execute_command("VADD", "t", "VALUES", 1, 1, "only")
    m.execute_command("VREM", "t", "only")
    m.set("done", 1)
    wait_until(lambda: rep.exists("done"), what="the stream")
    assert rep.execute_command("VRANGE", "s", "-", "+") == [b"a", b"b"]
    assert rep.execute_command("VEMB", "s", "a") == m.execute_command("VEMB", "s", "a")
    assert rep.execute_command("VGETATTR", "s", "b") == b'{"y":2}'
    assert rep.execute_command("VGETATTR", "s", "a") == b'{"x":1}'
    assert not rep.exists("t")
    assert rep.type("s") == b"vectorset"
