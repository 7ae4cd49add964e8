"""List commands and the blocking list commands, over real sockets.

Replies are checked byte for byte through ``RespConn`` connections (RESP2 and
RESP3), semantics against a Python model, and a random command sequence is
compared with Debian's redis-server 7.0 (the ``ref`` fixture).
"""

from __future__ import annotations

import random
import time

import pytest

from support.inprocess import Events, FakeClient
from support.notify import KeyspaceEvents
from support.resp import RespConn, array, bulk, encode
from support.wait import wait_until

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
SYNTAX = b"-ERR syntax error\r\n"
NOT_INT = b"-ERR value is not an integer or out of range\r\n"


def wait_blocked(r, n, timeout=20.0):
    wait_until(lambda: r.info("clients")["blocked_clients"] == n, timeout, 0.01,
               what="blocked_clients to reach %d" % n)


# ---------------------------------------------------------------------------
# Pushes, LLEN
# ---------------------------------------------------------------------------
def test_push_order_and_lengths(r, raw):
    assert raw("LPUSH", "l", "a", "b", "c") == b":3\r\n"
    assert raw("RPUSH", "l", "x", "y") == b":5\r\n"
    assert r.lrange("l", 0, -1) == [b"c", b"b", b"a", b"x", b"y"]
    assert raw("LLEN", "l") == b":5\r\n"
    assert raw("LLEN", "nokey") == b":0\r\n"
    assert r.type("l") == b"list"


def test_pushx(r, raw):
    assert raw("LPUSHX", "l", "a") == b":0\r\n"
    assert raw("RPUSHX", "l", "a", "b") == b":0\r\n"
    assert r.exists("l") == 0
    r.rpush("l", "m")
    assert raw("LPUSHX", "l", "a", "b") == b":3\r\n"
    assert raw("RPUSHX", "l", "y", "z") == b":5\r\n"
    assert r.lrange("l", 0, -1) == [b"b", b"a", b"m", b"y", b"z"]


def test_push_binary_and_empty_elements(r):
    vals = [b"", b"\x00\r\n\xff", b"x" * 100000, b"12345"]
    r.rpush("l", *vals)
    assert r.lrange("l", 0, -1) == vals
    assert r.lindex("l", 1) == b"\x00\r\n\xff"


def test_wrongtype_everywhere(r, raw):
    r.set("s", "v")
    r.rpush("l", "a")
    cmds = [
        ("LPUSH", "s", "a"), ("RPUSH", "s", "a"), ("LPUSHX", "s", "a"), ("RPUSHX", "s", "a"),
        ("LPOP", "s"), ("RPOP", "s"), ("LPOP", "s", "2"), ("LLEN", "s"), ("LRANGE", "s", "0", "-1"),
        ("LINDEX", "s", "0"), ("LSET", "s", "0", "x"), ("LINSERT", "s", "BEFORE", "a", "b"),
        ("LREM", "s", "0", "a"), ("LTRIM", "s", "0", "1"), ("LPOS", "s", "a"),
        ("LMOVE", "s", "l", "LEFT", "LEFT"), ("LMOVE", "l", "s", "LEFT", "LEFT"),
        ("RPOPLPUSH", "s", "l"), ("RPOPLPUSH", "l", "s"), ("LMPOP", "2", "nokey", "s", "LEFT"),
        ("BLPOP", "nokey", "s", "0"), ("BRPOP", "s", "0"), ("BLMPOP", "0", "1", "s", "RIGHT"),
        ("BLMOVE", "s", "l", "LEFT", "LEFT", "0"), ("BLMOVE", "l", "s", "LEFT", "LEFT", "0"),
        ("BRPOPLPUSH", "s", "l", "0"),
    ]
    for cmd in cmds:
        assert raw(*cmd) == WRONGTYPE, cmd
    assert r.lrange("l", 0, -1) == [b"a"]
    assert r.get("s") == b"v"


# ---------------------------------------------------------------------------
# LPOP / RPOP
# ---------------------------------------------------------------------------
def test_pop_single(r, raw):
    r.rpush("l", "a", "b", "c")
    assert raw("LPOP", "l") == bulk("a")
    assert raw("RPOP", "l") == bulk("c")
    assert raw("RPOP", "l") == bulk("b")
    assert r.exists("l") == 0
    assert raw("LPOP", "l") == b"$-1\r\n"
    assert raw("RPOP", "l") == b"$-1\r\n"


def test_pop_count(r, raw):
    r.rpush("l", *"abcdef")
    assert raw("LPOP", "l", "2") == array("a", "b")
    assert raw("RPOP", "l", "2") == array("f", "e")
    assert raw("LPOP", "l", "0") == b"*0\r\n"
    assert r.lrange("l", 0, -1) == [b"c", b"d"]
    assert raw("RPOP", "l", "10") == array("d", "c")
    assert r.exists("l") == 0
    assert raw("LPOP", "l", "2") == b"*-1\r\n"
    assert raw("LPOP", "l", "0") == b"*-1\r\n"
    r.rpush("l", "x")
    assert raw("LPOP", "l", "5") == array("x")
    assert r.exists("l") == 0


def test_pop_errors(r, raw):
    r.rpush("l", "a")
    pos = b"-ERR value is out of range, must be positive\r\n"
    assert raw("LPOP", "l", "-1") == pos
    assert raw("RPOP", "l", "abc") == pos
    assert raw("LPOP", "nokey", "-1") == pos
    assert raw("LPOP", "l", "1", "2") == b"-ERR wrong number of arguments for 'lpop' command\r\n"
    assert raw("RPOP", "l", "1", "2") == b"-ERR wrong number of arguments for 'rpop' command\r\n"
    assert raw("LPOP") == b"-ERR wrong number of arguments for 'lpop' command\r\n"
    assert r.lrange("l", 0, -1) == [b"a"]


def test_pop_resp3_nulls(r, raw):
    assert raw("HELLO", "3")[:1] == b"%"
    assert raw("LPOP", "nokey") == b"_\r\n"
    assert raw("RPOP", "nokey", "3") == b"_\r\n"
    assert raw("LINDEX", "nokey", "0") == b"_\r\n"
    assert raw("LPOS", "nokey", "a") == b"_\r\n"
    assert raw("LMPOP", "1", "nokey", "LEFT") == b"_\r\n"
    assert raw("RPOPLPUSH", "nokey", "d") == b"_\r\n"
    assert raw("BLPOP", "nokey", "0.01") == b"_\r\n"
    assert raw("BLMOVE", "nokey", "d", "LEFT", "LEFT", "0.01") == b"_\r\n"
    r.rpush("l", "a", "b")
    assert raw("LPOP", "l", "2") == array("a", "b")


# ---------------------------------------------------------------------------
# LRANGE / LINDEX / LSET
# ---------------------------------------------------------------------------
def model_range(lst, start, end):
    n = len(lst)
    if start < 0:
        start += n
    if end < 0:
        end += n
    if start < 0:
        start = 0
    if start > end or start >= n:
        return []
    return lst[start:min(end, n - 1) + 1]


def test_lrange_matches_model(r):
    items = [b"e%d" % i for i in range(50)]
    r.rpush("l", *items)
    for start in (-60, -50, -49, -10, -1, 0, 1, 10, 48, 49, 50, 100):
        for end in (-60, -51, -50, -49, -10, -1, 0, 1, 10, 48, 49, 50, 100):
            assert r.lrange("l", start, end) == model_range(items, start, end), (start, end)


def test_lrange_raw_and_errors(r, raw):
    r.rpush("l", "a", "bb", "")
    assert raw("LRANGE", "l", "0", "-1") == b"*3\r\n$1\r\na\r\n$2\r\nbb\r\n$0\r\n\r\n"
    assert raw("LRANGE", "l", "5", "10") == b"*0\r\n"
    assert raw("LRANGE", "nokey", "0", "-1") == b"*0\r\n"
    assert raw("LRANGE", "l", "a", "1") == NOT_INT
    assert raw("LRANGE", "nokey", "0", "1.5") == NOT_INT
    assert raw("LRANGE", "l", "0", "99999999999999999999") == NOT_INT
    assert raw("LRANGE", "l", "-9223372036854775808", "9223372036854775807") == \
        b"*3\r\n$1\r\na\r\n$2\r\nbb\r\n$0\r\n\r\n"


def test_lindex(r, raw):
    r.rpush("l", "a", "b", "c")
    assert raw("LINDEX", "l", "0") == bulk("a")
    assert raw("LINDEX", "l", "-1") == bulk("c")
    assert raw("LINDEX", "l", "-3") == bulk("a")
    assert raw("LINDEX", "l", "3") == b"$-1\r\n"
    assert raw("LINDEX", "l", "-4") == b"$-1\r\n"
    assert raw("LINDEX", "l", "x") == NOT_INT
    # the key is looked up before the index is parsed
    assert raw("LINDEX", "nokey", "x") == b"$-1\r\n"


def test_lset(r, raw):
    r.rpush("l", "a", "b", "c")
    assert raw("LSET", "l", "1", "B") == b"+OK\r\n"
    assert raw("LSET", "l", "-1", "C") == b"+OK\r\n"
    assert r.lrange("l", 0, -1) == [b"a", b"B", b"C"]
    assert raw("LSET", "l", "3", "x") == b"-ERR index out of range\r\n"
    assert raw("LSET", "l", "-4", "x") == b"-ERR index out of range\r\n"
    assert raw("LSET", "nokey", "0", "x") == b"-ERR no such key\r\n"
    assert raw("LSET", "nokey", "x", "x") == b"-ERR no such key\r\n"
    assert raw("LSET", "l", "x", "x") == NOT_INT


# ---------------------------------------------------------------------------
# LINSERT / LREM / LTRIM
# ---------------------------------------------------------------------------
def test_linsert(r, raw):
    r.rpush("l", "a", "b", "a")
    assert raw("LINSERT", "l", "BEFORE", "a", "x") == b":4\r\n"
    assert raw("LINSERT", "l", "after", "a", "y") == b":5\r\n"
    assert r.lrange("l", 0, -1) == [b"x", b"a", b"y", b"b", b"a"]
    assert raw("LINSERT", "l", "AFTER", "zz", "q") == b":-1\r\n"
    assert raw("LINSERT", "nokey", "AFTER", "a", "q") == b":0\r\n"
    assert r.exists("nokey") == 0
    assert raw("LINSERT", "l", "MIDDLE", "a", "q") == SYNTAX
    assert raw("LINSERT", "nokey", "MIDDLE", "a", "q") == SYNTAX
    assert raw("LINSERT", "l", "AFTER", "a") == b"-ERR wrong number of arguments for 'linsert' command\r\n"
    r.rpush("m", "p")
    assert raw("LINSERT", "m", "AFTER", "p", "q") == b":2\r\n"
    assert r.lrange("m", 0, -1) == [b"p", b"q"]


def model_lrem(lst, count, elem):
    lst = list(lst)
    removed = 0
    if count >= 0:
        out = []
        for x in lst:
            if x == elem and (count == 0 or removed < count):
                removed += 1
            else:
                out.append(x)
        return out, removed
    out = []
    for x in reversed(lst):
        if x == elem and removed < -count:
            removed += 1
        else:
            out.append(x)
    out.reverse()
    return out, removed


@pytest.mark.parametrize("count", [0, 1, 2, 5, 17, 30, 100, -1, -2, -5, -17, -30, -100])
def test_lrem_matches_model(r, count):
    rnd = random.Random(count)
    items = [rnd.choice([b"a", b"b", b"c"]) for _ in range(120)]
    r.delete("l")
    r.rpush("l", *items)
    expect, removed = model_lrem(items, count, b"a")
    assert r.lrem("l", count, "a") == removed
    assert r.lrange("l", 0, -1) == expect


def test_lrem_edges(r, raw):
    r.rpush("l", "a", "a")
    assert raw("LREM", "l", "0", "zz") == b":0\r\n"
    assert raw("LREM", "l", "x", "a") == NOT_INT
    assert raw("LREM", "nokey", "0", "a") == b":0\r\n"
    assert raw("LREM", "nokey", "x", "a") == NOT_INT
    assert raw("LREM", "l", "-5", "a") == b":2\r\n"
    assert r.exists("l") == 0


def test_ltrim_matches_model(r, raw):
    items = [b"%d" % i for i in range(40)]
    cases = [(0, -1), (0, 0), (1, -2), (-5, -1), (5, 2), (50, 60), (-100, 100), (0, 9), (30, 39),
             (-1, -1), (-41, -40), (10, -25), (3, 1000)]
    for start, end in cases:
        r.delete("l")
        r.rpush("l", *items)
        assert raw("LTRIM", "l", str(start), str(end)) == b"+OK\r\n"
        assert r.lrange("l", 0, -1) == model_range(items, start, end), (start, end)
        assert r.exists("l") == (1 if model_range(items, start, end) else 0)
    assert raw("LTRIM", "nokey", "0", "1") == b"+OK\r\n"
    assert raw("LTRIM", "nokey", "a", "1") == NOT_INT


# ---------------------------------------------------------------------------
# LPOS
# ---------------------------------------------------------------------------
def test_lpos(r, raw):
    r.rpush("l", *"abcdcbacc")   # a b c d c b a c c
    assert raw("LPOS", "l", "c") == b":2\r\n"
    assert raw("LPOS", "l", "c", "RANK", "2") == b":4\r\n"
    assert raw("LPOS", "l", "c", "RANK", "-1") == b":8\r\n"
    assert raw("LPOS", "l", "c", "RANK", "-3") == b":4\r\n"
    assert raw("LPOS", "l", "c", "RANK", "5") == b"$-1\r\n"
    assert raw("LPOS", "l", "z") == b"$-1\r\n"
    assert raw("LPOS", "l", "c", "COUNT", "0") == b"*4\r\n:2\r\n:4\r\n:7\r\n:8\r\n"
    assert raw("LPOS", "l", "c", "COUNT", "2") == b"*2\r\n:2\r\n:4\r\n"
    assert raw("LPOS", "l", "c", "COUNT", "2", "RANK", "2") == b"*2\r\n:4\r\n:7\r\n"
    assert raw("LPOS", "l", "c", "COUNT", "0", "RANK", "-2") == b"*3\r\n:7\r\n:4\r\n:2\r\n"
    assert raw("LPOS", "l", "z", "COUNT", "0") == b"*0\r\n"
    assert raw("LPOS", "l", "c", "MAXLEN", "2") == b"$-1\r\n"
    assert raw("LPOS", "l", "c", "MAXLEN", "3") == b":2\r\n"
    assert raw("LPOS", "l", "c", "COUNT", "0", "MAXLEN", "5") == b"*2\r\n:2\r\n:4\r\n"
    assert raw("LPOS", "l", "a", "RANK", "-1", "MAXLEN", "2") == b"$-1\r\n"
    assert raw("LPOS", "l", "a", "RANK", "-1", "MAXLEN", "3") == b":6\r\n"
    assert raw("LPOS", "l", "c", "rank", "1", "count", "1", "maxlen", "0") == b"*1\r\n:2\r\n"
    assert raw("LPOS", "nokey", "c") == b"$-1\r\n"
    assert raw("LPOS", "nokey", "c", "COUNT", "1") == b"*0\r\n"
    assert raw("LPOS", "l", "c", "RANK", "9223372036854775807") == b"$-1\r\n"
    # Redis 7.2 refuses RANK LLONG_MIN (7.0 negated it; more in test_newer_lists.py)
    assert raw("LPOS", "l", "c", "RANK", "-9223372036854775808") == (
        b"-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n")


def test_lpos_errors(r, raw):
    r.rpush("l", "a")
    assert raw("LPOS", "l", "a", "RANK", "0") == (
        b"-ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... "
        b"or use negative to start from the end of the list\r\n")
    assert raw("LPOS", "l", "a", "RANK", "x") == NOT_INT
    assert raw("LPOS", "l", "a", "COUNT", "-1") == b"-ERR COUNT can't be negative\r\n"
    assert raw("LPOS", "l", "a", "COUNT", "x") == b"-ERR COUNT can't be negative\r\n"
    assert raw("LPOS", "l", "a", "MAXLEN", "-1") == b"-ERR MAXLEN can't be negative\r\n"
    assert raw("LPOS", "l", "a", "MAXLEN", "x") == b"-ERR MAXLEN can't be negative\r\n"
    assert raw("LPOS", "l", "a", "RANK") == SYNTAX
    assert raw("LPOS", "l", "a", "FOO", "1") == SYNTAX
    # options are parsed before the key is looked up
    assert raw("LPOS", "nokey", "a", "COUNT", "-1") == b"-ERR COUNT can't be negative\r\n"
    r.set("s", "x")
    assert raw("LPOS", "s", "a", "RANK", "0")[:20] == b"-ERR RANK can't be z"


# ---------------------------------------------------------------------------
# LMOVE / RPOPLPUSH / LMPOP
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("wf,wt", [("LEFT", "LEFT"), ("LEFT", "RIGHT"), ("RIGHT", "LEFT"), ("RIGHT", "RIGHT")])
def test_lmove_directions(r, raw, wf, wt):
    r.rpush("src", "a", "b", "c")
    r.rpush("dst", "x", "y")
    moved = b"a" if wf == "LEFT" else b"c"
    assert raw("LMOVE", "src", "dst", wf, wt) == bulk(moved)
    rest = [b"b", b"c"] if wf == "LEFT" else [b"a", b"b"]
    assert r.lrange("src", 0, -1) == rest
    assert r.lrange("dst", 0, -1) == ([moved, b"x", b"y"] if wt == "LEFT" else [b"x", b"y", moved])


def test_lmove_edges(r, raw):
    assert raw("LMOVE", "nokey", "dst", "LEFT", "RIGHT") == b"$-1\r\n"
    assert r.exists("dst") == 0
    assert raw("LMOVE", "a", "b", "UP", "LEFT") == SYNTAX
    assert raw("LMOVE", "a", "b", "LEFT", "DOWN") == SYNTAX
    r.rpush("src", "only")
    assert raw("LMOVE", "src", "new", "left", "right") == bulk("only")
    assert r.exists("src") == 0
    assert r.lrange("new", 0, -1) == [b"only"]
    # same key: rotation, single element list survives
    r.rpush("rot", "1", "2", "3")
    assert raw("LMOVE", "rot", "rot", "LEFT", "RIGHT") == bulk("1")
    assert r.lrange("rot", 0, -1) == [b"2", b"3", b"1"]
    r.rpush("one", "z")
    assert raw("RPOPLPUSH", "one", "one") == bulk("z")
    assert r.lrange("one", 0, -1) == [b"z"]
    # destination of the wrong type: nothing is popped
    r.set("str", "v")
    assert raw("RPOPLPUSH", "rot", "str") == WRONGTYPE
    assert r.lrange("rot", 0, -1) == [b"2", b"3", b"1"]


def test_rpoplpush(r, raw):
    r.rpush("src", "a", "b")
    assert raw("RPOPLPUSH", "src", "dst") == bulk("b")
    assert raw("RPOPLPUSH", "src", "dst") == bulk("a")
    assert r.exists("src") == 0
    assert r.lrange("dst", 0, -1) == [b"a", b"b"]
    assert raw("RPOPLPUSH", "src", "dst") == b"$-1\r\n"


def test_lmpop(r, raw):
    r.rpush("k2", "a", "b", "c")
    r.rpush("k3", "x")
    assert raw("LMPOP", "3", "k1", "k2", "k3", "LEFT") == b"*2\r\n" + bulk("k2") + array("a")
    assert raw("LMPOP", "2", "k2", "k3", "RIGHT", "COUNT", "10") == b"*2\r\n" + bulk("k2") + array("c", "b")
    assert r.exists("k2") == 0
    assert raw("LMPOP", "2", "k2", "k3", "left", "count", "1") == b"*2\r\n" + bulk("k3") + array("x")
    assert raw("LMPOP", "2", "k2", "k3", "LEFT") == b"*-1\r\n"


def test_lmpop_errors(r, raw):
    r.rpush("k", "a")
    n0 = b"-ERR numkeys should be greater than 0\r\n"
    c0 = b"-ERR count should be greater than 0\r\n"
    assert raw("LMPOP", "0", "k", "LEFT") == n0
    assert raw("LMPOP", "-1", "k", "LEFT") == n0
    assert raw("LMPOP", "x", "k", "LEFT") == n0
    assert raw("LMPOP", "2", "k", "LEFT") == SYNTAX
    assert raw("LMPOP", "1", "k", "UP") == SYNTAX
    assert raw("LMPOP", "1", "k", "LEFT", "COUNT", "0") == c0
    assert raw("LMPOP", "1", "k", "LEFT", "COUNT", "-3") == c0
    assert raw("LMPOP", "1", "k", "LEFT", "COUNT", "x") == c0
    assert raw("LMPOP", "1", "k", "LEFT", "COUNT") == SYNTAX
    assert raw("LMPOP", "1", "k", "LEFT", "COUNT", "1", "COUNT", "1") == SYNTAX
    assert raw("LMPOP", "1", "k", "LEFT", "FOO") == SYNTAX
    assert raw("BLMPOP", "0", "0", "k", "LEFT") == n0
    assert raw("BLMPOP", "x", "1", "k", "LEFT") == b"-ERR timeout is not a float or out of range\r\n"
    # numkeys/direction/count are checked before the timeout
    assert raw("BLMPOP", "x", "1", "k", "UP") == SYNTAX
    assert r.lrange("k", 0, -1) == [b"a"]


# ---------------------------------------------------------------------------
# Encoding (Redis 7.2+: listpack while small, else quicklist; Redis 7.0 made
# every list a quicklist, which this test asserted against redis-server 7.0
# until the listpack encoding came: valkey-server 9.1 is the reference now;
# tests/test_list_encoding.py has the boundaries) and big lists
# ---------------------------------------------------------------------------
def test_object_encoding_small_and_big(r, vk):
    for client in (r, vk):
        client.delete("small", "big", "wide")
        client.rpush("small", "a")
        client.rpush("big", *[b"%d" % i for i in range(1000)])
        client.rpush("wide", b"x" * 10000)
    try:
        for client in (r, vk):
            assert client.object("encoding", "small") == b"listpack"
            assert client.object("encoding", "big") == b"listpack"
            assert client.object("encoding", "wide") == b"quicklist"
            client.config_set("list-max-listpack-size", "4")
            client.rpush("after", "1", "2", "3", "4", "5", "6")
            client.ltrim("big", 0, 0)
            assert client.object("encoding", "after") == b"quicklist"
            assert client.object("encoding", "big") == b"listpack"
    finally:
        r.config_set("list-max-listpack-size", "-2")
        vk.config_set("list-max-listpack-size", "-2")


def test_hundred_thousand_elements(r, raw):
    n = 100000
    items = [b"v%d" % i for i in range(n)]
    for i in range(0, n, 10000):
        r.rpush("big", *items[i:i + 10000])
    assert r.llen("big") == n
    assert r.lrange("big", 0, 99) == items[:100]
    assert r.lrange("big", -100, -1) == items[-100:]
    assert r.lrange("big", 50000, 50004) == items[50000:50005]
    whole = r.lrange("big", 0, -1)
    assert whole == items
    assert r.lindex("big", 99999) == b"v99999"
    assert r.lindex("big", -100000) == b"v0"
    assert r.lindex("big", 50000) == b"v50000"
    assert r.lpos("big", "v99998") == 99998
    assert r.execute_command("LPOS", "big", "v5", "RANK", "-1") == 5
    assert r.execute_command("LPOS", "big", "v99990", "MAXLEN", "1000") is None
    r.lset("big", 70000, "changed")
    assert r.lindex("big", 70000) == b"changed"
    r.linsert("big", "BEFORE", "v60000", "ins")
    assert r.lindex("big", 60000) == b"ins"
    assert r.lrem("big", 0, "ins") == 1
    assert r.llen("big") == n
    assert r.lpop("big", 1000) == items[:1000]
    assert r.rpop("big", 1000) == list(reversed(items[-1000:]))
    r.ltrim("big", 10, -11)
    assert r.llen("big") == n - 2000 - 20
    assert r.lindex("big", 0) == b"v1010"
    assert r.lindex("big", -1) == b"v98989"
    r.ltrim("big", 0, 99)
    assert r.lrange("big", 0, -1) == items[1010:1110]


# ---------------------------------------------------------------------------
# Blocking commands
# ---------------------------------------------------------------------------
def test_blpop_immediate(r, raw):
    r.rpush("k2", "a", "b")
    assert raw("BLPOP", "k1", "k2", "0") == array("k2", "a")
    assert raw("BRPOP", "k1", "k2", "0") == array("k2", "b")
    assert r.exists("k2") == 0


def test_blpop_served_by_push(r, raw):
    raw.send("BLPOP", "k1", "k2", "0")
    wait_blocked(r, 1)
    assert r.rpush("k2", "v1", "v2") == 2
    assert raw.read() == array("k2", "v1")
    assert r.lrange("k2", 0, -1) == [b"v2"]
    wait_blocked(r, 0)


def test_brpop_served_by_lpush(r, raw):
    raw.send("BRPOP", "k", "0")
    wait_blocked(r, 1)
    r.lpush("k", "a", "b", "c")     # list is c b a
    assert raw.read() == array("k", "a")
    assert r.lrange("k", 0, -1) == [b"c", b"b"]


def test_blocked_clients_fifo(r, raw, connect):
    conns = [connect() for _ in range(3)]
    for i, c in enumerate(conns):
        c.send("BLPOP", "q", "0")
        wait_blocked(r, i + 1)
    r.rpush("q", "1")
    assert conns[0].read() == array("q", "1")
    assert conns[1].nothing_within(0.3) and conns[2].nothing_within(0.3)
    r.rpush("q", "2", "3", "4")
    assert conns[1].read() == array("q", "2")
    assert conns[2].read() == array("q", "3")
    assert r.lrange("q", 0, -1) == [b"4"]
    wait_blocked(r, 0)


def test_blpop_timeout(r, raw):
    t0 = time.monotonic()
    assert raw("BLPOP", "k", "0.3") == b"*-1\r\n"
    dt = time.monotonic() - t0
    assert 0.25 <= dt < 20.0
    t0 = time.monotonic()
    # Redis 7.0 times BLMOVE/BRPOPLPUSH out with a null array too
    assert raw("BRPOPLPUSH", "k", "d", "0.2") == b"*-1\r\n"
    assert raw("BLMOVE", "k", "d", "LEFT", "RIGHT", "0.1") == b"*-1\r\n"
    assert raw("BLMPOP", "0.1", "1", "k", "LEFT") == b"*-1\r\n"
    assert raw("BRPOP", "k", "0.1") == b"*-1\r\n"
    assert 0.45 <= time.monotonic() - t0 < 30.0
    assert r.exists("d") == 0
    wait_blocked(r, 0)


def test_timeout_zero_blocks_forever(r, raw):
    raw.send("BLPOP", "k", "0")
    wait_blocked(r, 1)
    assert raw.nothing_within(1.2)
    assert r.info("clients")["blocked_clients"] == 1
    assert "b" in [c for c in r.client_list() if c["cmd"] == "blpop"][0]["flags"]
    r.rpush("k", "late")
    assert raw.read() == array("k", "late")


def test_timeout_errors(r, raw):
    neg = b"-ERR timeout is negative\r\n"
    nf = b"-ERR timeout is not a float or out of range\r\n"
    assert raw("BLPOP", "k", "-1") == neg
    assert raw("BLPOP", "k", "-0.002") == neg
    assert raw("BLPOP", "k", "abc") == nf
    assert raw("BLPOP", "k", " 1") == nf
    assert raw("BLPOP", "k", "1 ") == nf
    assert raw("BLPOP", "k", "nan") == nf
    assert raw("BLPOP", "k", "1_0") == nf
    # Redis 7.2: beyond LLONG_MAX ms, or a deadline that would overflow, is
    # out of range (7.0: negative)
    oor = b"-ERR timeout is out of range\r\n"
    assert raw("BLPOP", "k", "inf") == oor
    assert raw("BLPOP", "k", "1e16") == oor
    assert raw("BLPOP", "k", "0x7FFFFFFFFFFFFF") == oor
    assert raw("BLPOP", "k", "-inf") == neg
    assert raw("XREAD", "BLOCK", "9223372036854775807", "STREAMS", "k", "0") == oor
    assert raw("BRPOP", "k", "") == nf
    assert raw("BRPOPLPUSH", "k", "d", "-1") == neg
    assert raw("BLMOVE", "k", "d", "LEFT", "LEFT", "x") == nf
    assert raw("BLMOVE", "k", "d", "UP", "LEFT", "x") == SYNTAX
    # the timeout is parsed first, even when data is available
    r.rpush("k", "a")
    assert raw("BLPOP", "k", "-1") == neg
    assert raw("BLPOP", "k", "0x0.1") == array("k", "a")
    wait_blocked(r, 0)


def test_push_in_multi_serves_after_exec(r, raw, connect):
    raw.send("BLPOP", "k", "0")
    wait_blocked(r, 1)
    w = connect()
    assert w("MULTI") == b"+OK\r\n"
    assert w("RPUSH", "k", "a", "b") == b"+QUEUED\r\n"
    assert w("LRANGE", "k", "0", "-1") == b"+QUEUED\r\n"
    assert w("RPUSH", "k", "c") == b"+QUEUED\r\n"
    # the blocked client is not served in the middle of the transaction
    assert w("EXEC") == b"*3\r\n:2\r\n" + array("a", "b") + b":3\r\n"
    assert raw.read() == array("k", "a")
    assert r.lrange("k", 0, -1) == [b"b", b"c"]


def test_push_and_delete_in_multi_keeps_client_blocked(r, raw, connect):
    raw.send("BLPOP", "k", "0")
    wait_blocked(r, 1)
    w = connect()
    w("MULTI")
    w("RPUSH", "k", "a")
    w("DEL", "k")
    assert w("EXEC") == b"*2\r\n:1\r\n:1\r\n"
    assert raw.nothing_within(0.3)
    r.rpush("k", "b")
    assert raw.read() == array("k", "b")


def test_blocking_commands_inside_multi_do_not_block(r, raw):
    assert raw("MULTI") == b"+OK\r\n"
    for cmd in (("BLPOP", "k", "0"), ("BRPOP", "k", "0"), ("BLMOVE", "k", "d", "LEFT", "LEFT", "0"),
                ("BRPOPLPUSH", "k", "d", "0"), ("BLMPOP", "0", "1", "k", "LEFT")):
        assert raw(*cmd) == b"+QUEUED\r\n"
    assert raw("EXEC") == b"*5\r\n*-1\r\n*-1\r\n$-1\r\n$-1\r\n*-1\r\n"
    r.rpush("k", "a", "b", "c")
    raw("MULTI")
    raw("BLPOP", "k", "0")
    raw("BLMOVE", "k", "d", "RIGHT", "LEFT", "0")
    assert raw("EXEC") == b"*2\r\n" + array("k", "a") + bulk("c")
    assert r.info("clients")["blocked_clients"] == 0


def test_client_unblock(r, raw):
    cid = int(raw("CLIENT", "ID")[1:-2])
    raw.send("BLPOP", "k", "0")
    wait_blocked(r, 1)
    assert r.client_unblock(cid) == 1
    assert raw.read() == b"*-1\r\n"
    assert r.client_unblock(cid) == 0
    raw.send("BLMOVE", "k", "d", "LEFT", "LEFT", "0")
    wait_blocked(r, 1)
    assert r.client_unblock(cid, error=True) == 1
    assert raw.read() == b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
    raw.send("BRPOPLPUSH", "k", "d", "0")
    wait_blocked(r, 1)
    assert r.execute_command("CLIENT", "UNBLOCK", cid, "TIMEOUT") == 1
    assert raw.read() == b"*-1\r\n"
    # the connection is usable afterwards and the key is not consumed later
    assert raw("PING") == b"+PONG\r\n"
    r.rpush("k", "x")
    assert r.lrange("k", 0, -1) == [b"x"]


def test_disconnect_while_blocked(r, raw, connect):
    c = connect()
    c.send("BLPOP", "k", "0")
    wait_blocked(r, 1)
    c.close()
    wait_blocked(r, 0)
    r.rpush("k", "v")
    time.sleep(0.05)
    assert r.lrange("k", 0, -1) == [b"v"]


def test_blmove_served_into_other_list(r, raw):
    raw.send("BLMOVE", "src", "dst", "RIGHT", "LEFT", "0")
    wait_blocked(r, 1)
    r.rpush("dst", "old")
    assert raw.nothing_within(0.2)     # waiting on src only
    r.rpush("src", "a", "b")
    assert raw.read() == bulk("b")
    assert r.lrange("src", 0, -1) == [b"a"]
    assert r.lrange("dst", 0, -1) == [b"b", b"old"]


def test_brpoplpush_chain_wakes_client_on_destination(r, raw, connect):
    other = connect()
    raw.send("BRPOPLPUSH", "src", "dst", "0")
    wait_blocked(r, 1)
    other.send("BLPOP", "dst", "0")
    wait_blocked(r, 2)
    r.lpush("src", "v")
    assert raw.read() == bulk("v")
    assert other.read() == array("dst", "v")
    assert r.exists("src", "dst") == 0


def test_blmove_wrongtype_destination_when_served(r, raw):
    raw.send("BLMOVE", "src", "dst", "LEFT", "LEFT", "0")
    wait_blocked(r, 1)
    r.set("dst", "string")
    r.rpush("src", "a")
    assert raw.read() == WRONGTYPE
    assert r.lrange("src", 0, -1) == [b"a"]
    wait_blocked(r, 0)


def test_blmpop_served(r, raw):
    raw.send("BLMPOP", "0", "2", "a", "b", "RIGHT", "COUNT", "2")
    wait_blocked(r, 1)
    r.rpush("b", "1", "2", "3")
    assert raw.read() == b"*2\r\n" + bulk("b") + array("3", "2")
    assert r.lrange("b", 0, -1) == [b"1"]
    assert raw("BLMPOP", "0", "2", "a", "b", "LEFT", "COUNT", "5") == b"*2\r\n" + bulk("b") + array("1")
    assert r.exists("b") == 0


def test_key_changes_type_while_blocked(r, raw):
    raw.send("BLPOP", "k", "0")
    wait_blocked(r, 1)
    r.set("k", "str")
    assert raw.nothing_within(0.2)
    r.delete("k")
    r.rpush("k", "v")
    assert raw.read() == array("k", "v")


def test_same_key_twice_and_multiple_keys(r, raw):
    raw.send("BLPOP", "k", "k", "other", "0")
    wait_blocked(r, 1)
    r.rpush("other", "x")
    assert raw.read() == array("other", "x")
    r.rpush("k", "y")
    time.sleep(0.05)
    assert r.lrange("k", 0, -1) == [b"y"]
    wait_blocked(r, 0)


def test_pipelined_commands_after_blocking_command(r, raw):
    raw.send_raw(encode("BLPOP", "k", "0") + encode("SET", "after", "1") + encode("GET", "after"))
    wait_blocked(r, 1)
    assert r.get("after") is None
    r.rpush("k", "v")
    assert raw.read() == array("k", "v")
    assert raw.read() == b"+OK\r\n"
    assert raw.read() == bulk("1")


def test_blocked_clients_info_and_commandstats(r, raw, connect):
    r.config_resetstat()
    conns = [connect() for _ in range(2)]
    conns[0].send("BLPOP", "a", "0")
    conns[1].send("BRPOP", "b", "0")
    wait_blocked(r, 2)
    assert r.info("clients")["blocked_clients"] == 2
    r.rpush("a", "1")
    assert conns[0].read() == array("a", "1")
    wait_blocked(r, 1)
    r.rpush("b", "2")
    assert conns[1].read() == array("b", "2")
    wait_blocked(r, 0)
    stats = r.info("commandstats")
    assert stats["cmdstat_blpop"]["calls"] == 1
    assert stats["cmdstat_brpop"]["calls"] == 1


def test_resp3_blocking_timeout_reply(r, raw):
    raw("HELLO", "3")
    assert raw("BLMPOP", "0.05", "1", "k", "LEFT") == b"_\r\n"
    raw.send("BLPOP", "k", "0")
    wait_blocked(r, 1)
    r.rpush("k", "v")
    assert raw.read() == array("k", "v")


# ---------------------------------------------------------------------------
# Differential test against redis-server 7.0
# ---------------------------------------------------------------------------
def _random_command(rnd):
    keys = ["l1", "l2", "l3", "str"]
    k = rnd.choice(keys)
    k2 = rnd.choice(keys)
    e = rnd.choice(["a", "b", "c", "d", "", "1", "-1"])
    idx = str(rnd.choice([-10, -3, -1, 0, 1, 2, 5, 20, "x"]))
    side = rnd.choice(["LEFT", "RIGHT", "left", "UP"])
    cnt = str(rnd.choice([-1, 0, 1, 2, 3, 10, "x"]))
    choices = [
        lambda: ["LPUSH", k] + [rnd.choice("abcd") for _ in range(rnd.randint(1, 4))],
        lambda: ["RPUSH", k] + [rnd.choice("abcd") for _ in range(rnd.randint(1, 4))],
        lambda: ["RPUSH", k] + [rnd.choice("abcd") for _ in range(rnd.randint(1, 4))],
        lambda: ["LPUSHX", k, e],
        lambda: ["RPUSHX", k, e, e],
        lambda: ["LPOP", k],
        lambda: ["RPOP", k, cnt],
        lambda: ["LPOP", k, cnt],
        lambda: ["LLEN", k],
        lambda: ["LRANGE", k, idx, str(rnd.choice([-1, 0, 2, 100, -5]))],
        lambda: ["LINDEX", k, idx],
        lambda: ["LSET", k, idx, e],
        lambda: ["LINSERT", k, rnd.choice(["BEFORE", "AFTER", "after", "X"]), e, "ins"],
        lambda: ["LREM", k, str(rnd.choice([-2, -1, 0, 1, 2, "y"])), e],
        lambda: ["LTRIM", k, idx, str(rnd.choice([-1, -2, 0, 3, 50]))],
        lambda: ["LPOS", k, e] + rnd.choice([[], ["RANK", rnd.choice(["-2", "-1", "1", "2", "0"])],
                                               ["COUNT", cnt], ["MAXLEN", cnt],
                                               ["RANK", "-1", "COUNT", "0", "MAXLEN", "3"]]),
        lambda: ["LMOVE", k, k2, side, rnd.choice(["LEFT", "RIGHT"])],
        lambda: ["RPOPLPUSH", k, k2],
        lambda: ["LMPOP", rnd.choice(["1", "2", "3", "0"]), k, k2, side] + rnd.choice([[], ["COUNT", cnt]]),
        lambda: ["BLPOP", k, k2, "0.01"],
        lambda: ["BRPOP", k, "0.01"],
        lambda: ["BLMOVE", k, k2, side, "RIGHT", "0.01"],
        lambda: ["BRPOPLPUSH", k, k2, "0.01"],
        lambda: ["BLMPOP", "0.01", "2", k, k2, side, "COUNT", cnt],
        lambda: ["TYPE", k],
        lambda: ["EXISTS", k],
    ]
    return rnd.choice(choices)()


@pytest.mark.parametrize("seed", range(6))
def test_differential_against_redis(server, r, ref, redis_server, seed):
    ours = RespConn(server.port)
    theirs = RespConn(redis_server.port)
    try:
        for c in (ours, theirs):
            assert c("SET", "str", "string") == b"+OK\r\n"
        rnd = random.Random(seed)
        for i in range(400):
            cmd = _random_command(rnd)
            a = ours(*cmd)
            b = theirs(*cmd)
            assert a == b, (i, cmd, a, b)
        for key in ("l1", "l2", "l3", "str"):
            assert ours("TYPE", key) == theirs("TYPE", key)
            if ours("TYPE", key) == b"+list\r\n":
                assert ours("LRANGE", key, "0", "-1") == theirs("LRANGE", key, "0", "-1")
    finally:
        ours.close()
        theirs.close()


# ---------------------------------------------------------------------------
# Keyspace notifications and dirty counter, in-process, against redis-server
# ---------------------------------------------------------------------------
def _keyevents(sub):
    """(event, key) of the keyevent messages received so far."""
    return [(ch.split(b":", 1)[1], key) for ch, key in sub.collect()]


@pytest.mark.parametrize("seed", range(3))
def test_notifications_and_dirty_vs_redis(ref, redis_server, seed):
    fc = FakeClient()
    ref.config_set("notify-keyspace-events", "KEA")
    sub = KeyspaceEvents(redis_server.port, "__keyevent@0__:*")
    try:
        rnd = random.Random(1000 + seed)
        for c in (fc.run, ref.execute_command):
            c("SET", "str", "string")
        assert _keyevents(sub) == [(b"set", b"str")]
        for i in range(150):
            cmd = _random_command(rnd)
            if cmd[0].startswith("B"):
                continue     # blocking forms are covered over the network
            before = ref.info("persistence")["rdb_changes_since_last_save"]
            d0 = fc.server.dirty
            with Events() as ev:
                fc.run(*cmd)
            try:
                ref.execute_command(*cmd)
            except Exception:  # noqa: BLE001 - errors are compared elsewhere
                pass
            theirs = _keyevents(sub)
            assert ev.events == theirs, (i, cmd, ev.events, theirs)
            after = ref.info("persistence")["rdb_changes_since_last_save"]
            assert fc.server.dirty - d0 == after - before, (i, cmd)
    finally:
        sub.close()
        ref.config_set("notify-keyspace-events", "")


def test_notifications_when_serving_blocked_clients_vs_redis(server, r, ref, redis_server):
    """Events fired while blocked clients are served by a push (BLPOP,
    BLMOVE, BLMPOP) are the same, in the same order, as Redis's."""
    results = []
    for client, port in ((r, server.port), (ref, redis_server.port)):
        client.config_set("notify-keyspace-events", "KEA")
        sub = KeyspaceEvents(port, "__keyevent@0__:*")
        events = []
        waiter = RespConn(port)
        replies = []
        try:
            _keyevents(sub)
            for cmd, push in ((("BLPOP", "k", "0"), ("RPUSH", "k", "a", "b")),
                              (("BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"), ("RPUSH", "src", "v")),
                              (("BLMPOP", "0", "1", "m", "LEFT", "COUNT", "5"), ("RPUSH", "m", "1", "2"))):
                waiter.send(*cmd)
                wait_blocked(client, 1)
                client.execute_command(*push)
                replies.append(waiter.read())
                events.append(_keyevents(sub))
        finally:
            waiter.close()
            sub.close()
            client.config_set("notify-keyspace-events", "")
        results.append((replies, events))
    assert results[0] == results[1]
    assert results[0][1][1] == [(b"rpush", b"src"), (b"lpush", b"dst"), (b"rpop", b"src"), (b"del", b"src")]
