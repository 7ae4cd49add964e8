"""Redis 8.8's array type (the AR* commands): replies in RESP2 and RESP3 byte
for byte as Redis's t_array.c builds them (valkey has no arrays), errors,
keyspace events, MULTI and scripts, DUMP/RESTORE, RDB (DEBUG RELOAD) and AOF
rewrite round trips, ACL category and key specs."""

import struct

import pytest
import redis
from redis.exceptions import ResponseError

from support.modtypes import AOF, aof_base, err, follow, rdb_restart, restart, rewrite_aof
from support.wait import wait_until

MAXIDX = 2**64 - 2          # the highest index an element can have


# ---------------------------------------------------------------------------
# reply shapes
# ---------------------------------------------------------------------------

def test_set_get_and_ranges_resp2(raw):
    assert raw.call("ARSET", "a", "0", "hello") == b":1\r\n"
    assert raw.call("ARSET", "a", "2", "x", "y", "z") == b":3\r\n"
    assert raw.call("ARSET", "a", "4", "Y", "W") == b":1\r\n"      # one of the two slots was empty
    assert raw.call("ARGET", "a", "0") == b"$5\r\nhello\r\n"
    assert raw.call("ARGET", "a", "1") == b"$-1\r\n"
    assert raw.call("ARGET", "nokey", "1") == b"$-1\r\n"
    assert raw.call("ARMGET", "a", "0", "1", "5") == b"*3\r\n$5\r\nhello\r\n$-1\r\n$1\r\nW\r\n"
    assert raw.call("ARMGET", "nokey", "0", "1") == b"*2\r\n$-1\r\n$-1\r\n"
    assert raw.call("ARGETRANGE", "a", "0", "3") == b"*4\r\n$5\r\nhello\r\n$-1\r\n$1\r\nx\r\n$1\r\ny\r\n"
    assert raw.call("ARGETRANGE", "a", "3", "1") == b"*3\r\n$1\r\ny\r\n$1\r\nx\r\n$-1\r\n"
    assert raw.call("ARGETRANGE", "nokey", "7", "8") == b"*2\r\n$-1\r\n$-1\r\n"
    assert raw.call("ARSCAN", "a", "0", "100") == (
        b"*5\r\n*2\r\n:0\r\n$5\r\nhello\r\n*2\r\n:2\r\n$1\r\nx\r\n*2\r\n:3\r\n$1\r\ny\r\n"
        b"*2\r\n:4\r\n$1\r\nY\r\n*2\r\n:5\r\n$1\r\nW\r\n")
    assert raw.call("ARSCAN", "a", "100", "0", "LIMIT", "2") == (
        b"*2\r\n*2\r\n:5\r\n$1\r\nW\r\n*2\r\n:4\r\n$1\r\nY\r\n")
    assert raw.call("ARSCAN", "nokey", "0", "1") == b"*0\r\n"
    assert raw.call("ARLEN", "a") == b":6\r\n"
    assert raw.call("ARCOUNT", "a") == b":5\r\n"
    assert raw.call("ARLEN", "nokey") == b":0\r\n"
    assert raw.call("ARCOUNT", "nokey") == b":0\r\n"
    assert raw.call("TYPE", "a") == b"+array\r\n"
    assert raw.call("OBJECT", "ENCODING", "a") == b"$12\r\nsliced-array\r\n"


def test_nulls_and_maps_resp3(raw3):
    raw3.call("ARMSET", "a", "0", "a", "2", "c")
    assert raw3.call("ARGET", "a", "1") == b"_\r\n"
    assert raw3.call("ARMGET", "a", "1", "2") == b"*2\r\n_\r\n$1\r\nc\r\n"
    assert raw3.call("ARGETRANGE", "a", "0", "2") == b"*3\r\n$1\r\na\r\n_\r\n$1\r\nc\r\n"
    assert raw3.call("AROP", "a", "0", "5", "SUM") == b"_\r\n"
    assert raw3.call("AROP", "nokey", "0", "5", "MAX") == b"_\r\n"
    assert raw3.call("ARINFO", "a") == (
        b"%7\r\n$5\r\ncount\r\n:2\r\n$3\r\nlen\r\n:3\r\n$17\r\nnext-insert-index\r\n:0\r\n"
        b"$6\r\nslices\r\n:1\r\n$14\r\ndirectory-size\r\n:1\r\n$17\r\nsuper-dir-entries\r\n:0\r\n"
        b"$10\r\nslice-size\r\n:4096\r\n")
    full = raw3.call("ARINFO", "a", "full")
    assert full.startswith(b"%12\r\n") and b"$12\r\ndense-slices\r\n:0\r\n$13\r\nsparse-slices\r\n:1\r\n" in full
    assert b"$14\r\navg-dense-size\r\n,0\r\n" in full
    raw3.call("ARINSERT", "q", "x")
    assert raw3.call("ARSEEK", "q", str(MAXIDX + 1)) == b":1\r\n"
    assert raw3.call("ARNEXT", "q") == b"_\r\n"


def test_arinfo_resp2_is_a_flat_array(raw):
    raw.call("ARSET", "a", "5", "v")
    info = raw.call("ARINFO", "a", "FULL")
    assert info.startswith(b"*24\r\n$5\r\ncount\r\n:1\r\n$3\r\nlen\r\n:6\r\n")
    assert b"$14\r\navg-dense-size\r\n$1\r\n0\r\n" in info


# ---------------------------------------------------------------------------
# errors and argument rules
# ---------------------------------------------------------------------------

def test_errors(r):
    r.set("s", "v")
    wt = "WRONGTYPE Operation against a key holding the wrong kind of value"
    assert err(r, "ARSET", "a", "-1", "x") == "invalid array index"
    assert err(r, "ARSET", "a", "abc", "x") == "invalid array index"
    assert err(r, "ARSET", "a", str(MAXIDX + 1), "x") == "invalid array index"
    assert err(r, "ARSET", "a", str(MAXIDX), "x", "y") == "array index overflow"
    assert err(r, "ARSET", "s", "0", "x") == wt
    assert err(r, "ARSET", "s", "x", "x") == "invalid array index"     # the index is read first
    assert err(r, "ARGET", "s", "x") == wt                              # the key is looked up first
    assert err(r, "ARMGET", "a", "0", "x") == "invalid array index"
    assert err(r, "ARMSET", "a", "0", "x", "1") == "wrong number of arguments for 'armset' command"
    assert err(r, "ARMSET", "a", "0", "x", "y", "z") == "invalid array index"
    assert err(r, "ARDEL", "a", "0", "bad") == "invalid array index"
    assert err(r, "ARDELRANGE", "a", "0", "1", "2") == "wrong number of arguments for 'ardelrange' command"
    assert err(r, "ARGETRANGE", "a", "0", "1000000") == "range exceeds maximum of 1000000 items"
    assert err(r, "ARGETRANGE", "s", "0", "1") == wt
    assert err(r, "ARSCAN", "a", "0", "1", "LIMIT") == "wrong number of arguments for 'arscan' command"
    assert err(r, "ARSCAN", "a", "0", "1", "COUNT", "1") == "syntax error"
    assert err(r, "ARSCAN", "a", "0", "1", "LIMIT", "0") == "LIMIT must be positive"
    assert err(r, "ARSCAN", "a", "0", "1", "LIMIT", "x") == "value is not an integer or out of range"
    assert err(r, "AROP", "a", "0", "1", "AVG") == "unknown operation"
    assert err(r, "AROP", "a", "0", "1", "MATCH") == "MATCH requires a value argument"
    assert err(r, "AROP", "a", "0", "1", "SUM", "x") == "wrong number of arguments for 'arop' command"
    assert err(r, "AROP", "s", "0", "1", "SUM") == wt
    assert err(r, "ARRING", "a", "x", "v") == "invalid size"
    assert err(r, "ARRING", "a", "0", "v") == "size must be positive"
    assert err(r, "ARSEEK", "a", "-1") == "invalid array index"
    assert err(r, "ARLASTITEMS", "a", "x") == "invalid COUNT"
    assert err(r, "ARLASTITEMS", "a", "1", "REVERSE") == "syntax error"
    assert err(r, "ARINFO", "a") == "no such key"
    assert err(r, "ARINFO", "a", "FULLER") == "syntax error"
    assert err(r, "ARINFO", "s") == wt
    assert err(r, "ARSET", "a", "0") == "wrong number of arguments for 'arset' command"
    assert err(r, "ARGREP", "a", "0", "1", "MATCH") == "wrong number of arguments for 'argrep' command"
    assert not r.exists("a")        # no command above created it


def test_index_forms(r, raw):
    # string2ull: string2ll when it applies (negatives refused), else strtoull
    r.execute_command("ARSET", "a", "+5", "plus")
    r.execute_command("ARSET", "a", " 6", "space")
    r.execute_command("ARSET", "a", "007", "zeros")
    assert r.execute_command("ARGETRANGE", "a", "5", "7") == [b"plus", b"space", b"zeros"]
    r.execute_command("ARSET", "a", "-02", "wrapped")         # strtoull negates modulo 2**64
    assert r.execute_command("ARGET", "a", str(MAXIDX)) == b"wrapped"
    # an unsigned reply above 2**63 - 1: a bulk string in RESP2, a big number in RESP3
    assert raw.call("ARLEN", "a") == b"$20\r\n18446744073709551615\r\n"
    raw.call("HELLO", "3")
    assert raw.call("ARLEN", "a") == b"(18446744073709551615\r\n"
    assert raw.call("ARSCAN", "a", str(MAXIDX), str(MAXIDX)) == b"*1\r\n*2\r\n(18446744073709551614\r\n$7\r\nwrapped\r\n"
    assert raw.call("ARGREP", "a", "+", "+", "MATCH", "wr") == b"*1\r\n(18446744073709551614\r\n"
    assert raw.call("ARLEN", "nokey") == b":0\r\n"
    assert err(r, "ARGET", "a", "-01") == "invalid array index"   # 2**64 - 1
    assert err(r, "ARGET", "a", "-0x1") == "invalid array index"
    assert err(r, "ARGET", "a", "") == "invalid array index"


def test_counts_and_deletes(r):
    assert r.execute_command("ARMSET", "a", "0", "a", "5", "b", "100", "c", "5", "B") == 3
    assert r.execute_command("ARGET", "a", "5") == b"B"
    assert r.execute_command("ARDEL", "a", "5", "6", "5") == 1
    assert r.execute_command("ARDEL", "nokey", "5") == 0
    assert r.execute_command("ARDELRANGE", "a", "200", "50") == 1     # either order
    assert r.execute_command("ARLEN", "a") == 1
    assert r.execute_command("ARDELRANGE", "a", "0", "0", "7", "9") == 1
    assert not r.exists("a")                                          # emptied: gone
    assert r.execute_command("ARDELRANGE", "a", "0", str(MAXIDX)) == 0


def test_sparse_high_indexes_and_info(r):
    r.execute_command("ARSET", "a", "0", "first")
    r.execute_command("ARSET", "a", "1000000", "b")
    assert r.execute_command("ARLEN", "a") == 1000001
    assert r.execute_command("ARCOUNT", "a") == 2
    info = dict(zip(*[iter(r.execute_command("ARINFO", "a"))] * 2))
    assert info[b"slices"] == 2 and info[b"directory-size"] == 256 and info[b"super-dir-entries"] == 0
    r.execute_command("ARSET", "a", str(10**15), "far")             # past 2048 slices: super directory
    info = dict(zip(*[iter(r.execute_command("ARINFO", "a"))] * 2))
    assert info[b"slices"] == 3 and info[b"super-dir-entries"] == 2 and info[b"directory-size"] == 4
    assert r.execute_command("ARSCAN", "a", str(MAXIDX), "0") == [
        [10**15, b"far"], [1000000, b"b"], [0, b"first"]]


# ---------------------------------------------------------------------------
# cursor commands
# ---------------------------------------------------------------------------

def test_insert_next_seek(r, raw):
    assert r.execute_command("ARNEXT", "q") == 0
    assert r.execute_command("ARSEEK", "q", "5") == 0           # no key: nothing set
    assert not r.exists("q")
    assert r.execute_command("ARINSERT", "q", "a") == 0
    assert r.execute_command("ARINSERT", "q", "b", "c") == 2
    assert r.execute_command("ARNEXT", "q") == 3
    assert r.execute_command("ARSEEK", "q", "10") == 1
    assert r.execute_command("ARINSERT", "q", "k") == 10
    assert r.execute_command("ARSEEK", "q", "0") == 1
    assert r.execute_command("ARNEXT", "q") == 0
    assert r.execute_command("ARINSERT", "q", "A") == 0
    assert r.execute_command("ARGETRANGE", "q", "0", "2") == [b"A", b"b", b"c"]
    assert r.execute_command("ARSEEK", "q", str(MAXIDX)) == 1
    assert raw.call("ARINSERT", "q", "last") == b"$20\r\n18446744073709551614\r\n"
    assert r.execute_command("ARNEXT", "q") is None
    assert err(r, "ARINSERT", "q", "more") == "insert index overflow"
    assert r.execute_command("ARSEEK", "q", str(MAXIDX + 1)) == 1
    assert r.execute_command("ARNEXT", "q") is None
    info = raw.call("ARINFO", "q")
    assert b"$3\r\nlen\r\n$20\r\n18446744073709551615\r\n$17\r\nnext-insert-index\r\n:0\r\n" in info
    assert err(r, "ARSEEK", "q", str(MAXIDX + 2)) == "invalid array index"


def test_ring_and_last_items(r):
    assert r.execute_command("ARRING", "r", "3", "a", "b", "c", "d", "e") == 1
    assert r.execute_command("ARGETRANGE", "r", "0", "2") == [b"d", b"e", b"c"]
    assert r.execute_command("ARLASTITEMS", "r", "3") == [b"c", b"d", b"e"]
    assert r.execute_command("ARLASTITEMS", "r", "10", "REV") == [b"e", b"d", b"c"]
    assert r.execute_command("ARLASTITEMS", "r", "0") == []
    assert r.execute_command("ARLASTITEMS", "r", "-5", "junk") == []      # count first
    assert r.execute_command("ARLASTITEMS", "nokey", "2") == []
    # shrink: the latest two are kept, oldest first from index 0
    assert r.execute_command("ARRING", "r", "2", "f") == 0
    assert r.execute_command("ARGETRANGE", "r", "0", "1") == [b"f", b"e"]
    assert r.execute_command("ARLEN", "r") == 2
    # grow after the ring wrapped: rebuilt in order, then new slots are used
    assert r.execute_command("ARRING", "r", "4", "g", "h") == 3
    assert r.execute_command("ARGETRANGE", "r", "0", "3") == [b"e", b"f", b"g", b"h"]
    assert r.execute_command("ARRING", "r", "4", "i") == 0
    assert r.execute_command("ARLASTITEMS", "r", "4") == [b"f", b"g", b"h", b"i"]


def test_last_items_walk_positions(r):
    r.execute_command("ARSET", "a", "0", "x")
    r.execute_command("ARSET", "a", "3", "y")
    assert r.execute_command("ARLASTITEMS", "a", "3") == [None, None, b"y"]
    r.execute_command("ARSET", "a", "2000000", "z")
    assert err(r, "ARLASTITEMS", "a", "1500000") == "count exceeds maximum of 1000000 items"


# ---------------------------------------------------------------------------
# ARGREP / AROP
# ---------------------------------------------------------------------------

def test_argrep(r):
    r.execute_command("ARMSET", "g", "0", "Apple pie", "1", "banana", "3", "apple", "7", "cherry", "9", "123")
    assert r.execute_command("ARGREP", "g", "-", "+", "MATCH", "apple") == [3]
    assert r.execute_command("ARGREP", "g", "-", "+", "MATCH", "apple", "NOCASE") == [0, 3]
    assert r.execute_command("ARGREP", "g", "+", "-", "EXACT", "APPLE", "nocase", "WITHVALUES") == [[3, b"apple"]]
    assert r.execute_command("ARGREP", "g", "0", "8", "GLOB", "*an*", "GLOB", "ch*") == [1, 7]
    assert r.execute_command("ARGREP", "g", "0", "100", "GLOB", "*a*", "MATCH", "e", "AND") == [3]
    assert r.execute_command("ARGREP", "g", "-", "+", "RE", "^[[:digit:]]+$") == [9]
    assert r.execute_command("ARGREP", "g", "-", "+", "RE", "p{2}", "LIMIT", "1") == [0]
    assert r.execute_command("ARGREP", "nokey", "-", "+", "MATCH", "a") == []
    assert err(r, "ARGREP", "g", "-", "+", "RE", "") == "regular expression is empty"
    assert err(r, "ARGREP", "g", "-", "+", "RE", "(a)\\1") == \
        "regular expression backreferences are not supported"
    assert err(r, "ARGREP", "g", "-", "+", "RE", "x" * 2049) == \
        "regular expression is too long, maximum is 2048 bytes"
    assert err(r, "ARGREP", "g", "-", "+", "RE", "[a") == "invalid regular expression: Missing ']'"
    assert err(r, "ARGREP", "g", "-", "+", "NOCASE", "WITHVALUES") == "syntax error"
    assert err(r, "ARGREP", "g", "-", "+", "MATCH", "a", "LIMIT", "-1") == "LIMIT must be positive"
    assert err(r, "ARGREP", "g", "x", "+", "MATCH", "a") == "invalid array index"
    args = ["ARGREP", "g", "-", "+"] + ["MATCH", "a"] * 251
    assert err(r, *args) == "too many predicates, maximum is 250"


def test_arop(r):
    r.execute_command("ARMSET", "n", "0", "10", "1", "2.5", "2", "x", "3", "-4", "5", "1e3", "9", "0.1", "10", "0.2")
    assert r.execute_command("AROP", "n", "0", "3", "SUM") == b"8.5"
    assert r.execute_command("AROP", "n", "0", "100", "MAX") == b"1000"
    assert r.execute_command("AROP", "n", "0", "100", "MIN") == b"-4"
    assert r.execute_command("AROP", "n", "9", "10", "SUM") == b"0.3"       # long double arithmetic
    assert r.execute_command("AROP", "n", "0", "5", "AND") == 10 & 2 & -4 & 1000
    assert r.execute_command("AROP", "n", "0", "5", "OR") == 10 | 2 | -4 | 1000
    assert r.execute_command("AROP", "n", "0", "5", "XOR") == 10 ^ 2 ^ -4 ^ 1000
    assert r.execute_command("AROP", "n", "0", "100", "USED") == 7
    assert r.execute_command("AROP", "n", "100", "0", "MATCH", "x") == 1
    assert r.execute_command("AROP", "n", "2", "2", "SUM") is None
    assert r.execute_command("AROP", "n", "50", "60", "XOR") is None
    assert r.execute_command("AROP", "nokey", "0", "1", "USED") == 0
    assert r.execute_command("AROP", "nokey", "0", "1", "SUM") is None
    r.execute_command("ARMSET", "big", "0", "1e30", "1", "1")
    assert r.execute_command("AROP", "big", "0", "1", "SUM") == b"1e+30"
    r.execute_command("ARMSET", "inf", "0", "inf", "1", "5")
    assert r.execute_command("AROP", "inf", "0", "1", "SUM") == b"inf"
    assert r.execute_command("AROP", "inf", "0", "1", "AND") == 5


# ---------------------------------------------------------------------------
# the rest of the server: events, MULTI, scripts, ACL, COMMAND, keys
# ---------------------------------------------------------------------------

def test_keyspace_events(r):
    r.config_set("notify-keyspace-events", "KEA")
    p = r.pubsub()
    p.psubscribe("__keyevent@*")
    wait_until(lambda: p.get_message(timeout=0.1) is not None)
    r.execute_command("ARSET", "a", "0", "x")
    r.execute_command("ARMSET", "a", "1", "y")
    r.execute_command("ARINSERT", "a", "z")
    r.execute_command("ARRING", "a", "5", "w")
    r.execute_command("ARSEEK", "a", "0")
    r.execute_command("ARDEL", "a", "0")
    r.execute_command("ARDELRANGE", "a", "0", "10")
    r.execute_command("ARDEL", "a", "0")                 # no key: no event
    events = []
    wait_until(lambda: events.append(p.get_message(timeout=0.1)) or
               [e for e in events if e and e["data"] == b"a" and e["channel"].endswith(b":del")])
    names = [e["channel"].split(b":", 1)[1] for e in events if e]
    assert names == [b"arset", b"armset", b"arinsert", b"arring", b"arseek", b"ardel", b"ardelrange", b"del"]
    p.close()


def test_multi_and_scripts(r):
    p = r.pipeline()
    p.execute_command("ARSET", "a", "0", "x", "y")
    p.execute_command("ARGETRANGE", "a", "0", "1")
    p.execute_command("ARSET", "a", "-1", "x")
    assert p.execute(raise_on_error=False)[:2] == [2, [b"x", b"y"]]
    assert r.eval("return redis.call('ARINSERT', KEYS[1], 'v')", 1, "q") == 0
    assert r.eval("return redis.call('ARGET', KEYS[1], 0)", 1, "q") == b"v"
    assert r.eval("return redis.call('ARGET', KEYS[1], 5)", 1, "q") is None
    assert r.eval("return redis.call('ARSCAN', KEYS[1], 0, 5)", 1, "q") == [[0, b"v"]]


def test_acl_category_and_command_info(r, raw):
    assert b"array" in r.execute_command("ACL", "CAT")
    cmds = set(r.execute_command("ACL", "CAT", "array"))
    assert {b"arset", b"arget", b"arinfo", b"argrep", b"arring"} <= cmds and len(cmds) == 18
    info = raw.call("COMMAND", "INFO", "arset")
    assert info.startswith(b"*1\r\n*10\r\n$5\r\narset\r\n:-4\r\n*3\r\n+write\r\n+denyoom\r\n+fast\r\n"
                           b":1\r\n:1\r\n:1\r\n*3\r\n+@write\r\n+@fast\r\n+@array\r\n")
    assert raw.call("COMMAND", "GETKEYS", "ARMSET", "k", "0", "v") == b"*1\r\n$1\r\nk\r\n"
    r.execute_command("ACL", "SETUSER", "u", "on", "nopass", "~*", "+@all", "-@array")
    kw = r.connection_pool.connection_kwargs
    u = redis.Redis(host=kw["host"], port=kw["port"], username="u", password="x")
    try:
        assert u.get("nokey") is None
        with pytest.raises(ResponseError, match="no permissions to run the 'arget' command"):
            u.execute_command("ARGET", "a", "0")
    finally:
        u.close()
        r.execute_command("ACL", "DELUSER", "u")


def test_copy_rename_memory_digest(r):
    r.execute_command("ARMSET", "a", "0", "x" * 40, "7", "12", "9", "1.5")
    r.execute_command("ARSEEK", "a", "8")
    assert r.copy("a", "b")
    r.execute_command("ARSET", "b", "0", "changed")
    assert r.execute_command("ARGET", "a", "0") == b"x" * 40       # a deep copy
    assert r.execute_command("ARNEXT", "b") == 8
    r.rename("b", "c")
    assert r.execute_command("ARCOUNT", "c") == 3
    assert r.memory_usage("a") > 40
    d1 = r.execute_command("DEBUG", "DIGEST-VALUE", "a")
    r.execute_command("DEBUG", "RELOAD")
    assert r.execute_command("DEBUG", "DIGEST-VALUE", "a") == d1


# ---------------------------------------------------------------------------
# persistence
# ---------------------------------------------------------------------------

def _fill(r):
    r.execute_command("ARMSET", "a", "0", "12", "1", "-7", "2", "1.5", "3", "-0.0", "4", "short",
                      "5", "a longer string value", "6", "0.1", "7", "2305843009213693952",
                      "1000000", "far", str(2**63 - 1), "last")
    r.execute_command("ARSEEK", "a", "42")
    r.execute_command("ARINSERT", "q", "a", "b")
    r.execute_command("ARSET", "plain", "3", "v")


def _snapshot(r):
    return {k: (r.execute_command("ARSCAN", k, "0", str(2**63 - 1)), r.execute_command("ARNEXT", k))
            for k in (b"a", b"q", b"plain")}


def test_dump_restore_layout(r):
    _fill(r)
    before = _snapshot(r)
    payload = r.dump("a")
    assert payload[0] == 28                                  # RDB_TYPE_ARRAY
    body = payload[1:-10]
    assert body[:3] == b"\x0a\x01" + bytes([41])            # 10 elements, cursor 41
    # first element: index 0, tag 1 (integer), 8 bytes little endian
    assert body[3:13] == b"\x00\x01" + struct.pack("<q", 12)
    # 1.5 is kept as a double (tag 2)
    assert b"\x02\x02" + struct.pack("<d", 1.5) in body
    # "short" (tag 3) and the long string (tag 0) as RDB strings
    assert b"\x04\x03\x05short" in body
    assert b"\x05\x00\x15a longer string value" in body
    r.restore("a2", 0, payload)
    assert r.execute_command("ARSCAN", "a2", "0", str(2**63 - 1)) == before[b"a"][0]
    assert r.execute_command("ARNEXT", "a2") == 42


def test_debug_reload_and_rdb(r):
    _fill(r)
    before = _snapshot(r)
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    assert _snapshot(r) == before
    assert r.execute_command("ARGET", "a", "3") == b"-0.0"
    assert r.execute_command("ARGET", "a", "6") == b"0.1"


def test_aof_rewrite_and_restart(start_server):
    s = start_server(*AOF)
    c = s.client()
    _fill(c)
    before = _snapshot(c)
    rewrite_aof(c)
    c.execute_command("ARRING", "r", "2", "x", "y", "z")     # after the rewrite: in the incr file
    s.stop()
    data = aof_base(s)
    assert b"ARMSET" in data and b"ARSEEK" in data
    s2 = restart(start_server, s, *AOF)
    c2 = s2.client()
    assert _snapshot(c2) == before
    assert c2.execute_command("ARGETRANGE", "r", "0", "1") == [b"z", b"y"]


def test_rdb_restart(start_server):
    rdb_restart(start_server, _fill, _snapshot)


def test_replica_full_sync_and_stream(start_server):
    master = start_server()
    m = master.client()
    _fill(m)
    s = start_server()
    r = s.client()
    follow(r, master)
    wait_until(lambda: r.exists("plain"), what="the payload")
    assert _snapshot(r) == _snapshot(m)
    # the stream: commands as called, the ring's rebuild and the cursor included
    m.execute_command("ARRING", "q", "1", "c")
    m.execute_command("ARRING", "q", "3", "d", "e")
    m.execute_command("ARDELRANGE", "a", "2", "5")
    m.execute_command("ARSEEK", "plain", "9")
    m.execute_command("ARSET", "done", "0", "1")
    wait_until(lambda: r.exists("done"), what="the stream")
    assert _snapshot(r) == _snapshot(m)
    assert r.execute_command("ARGETRANGE", "q", "0", "2") == m.execute_command("ARGETRANGE", "q", "0", "2")


def _info(r, key, *full):
    return dict(zip(*[iter(r.execute_command("ARINFO", key, *full))] * 2))


def test_arinfo_full_follows_the_slices(r):
    # a bulk ARSET of 20 values makes its slice dense up front (8 -> 16 -> 32)
    r.execute_command("ARSET", "a", "0", *["v%d" % i for i in range(20)])
    info = _info(r, "a", "FULL")
    assert (info[b"dense-slices"], info[b"sparse-slices"]) == (1, 0)
    assert (info[b"avg-dense-size"], info[b"avg-dense-fill"]) == (b"32", b"0.625")
    # down to 5 elements in a 32-slot window: sparse again, capacity 5
    r.execute_command("ARDELRANGE", "a", "5", "19")
    info = _info(r, "a", "FULL")
    assert (info[b"dense-slices"], info[b"sparse-slices"], info[b"avg-sparse-size"]) == (0, 1, b"5")
    # single writes: sparse capacity 4 -> 8 -> 10, the 11th element promotes
    for k in range(10):
        r.execute_command("ARSET", "b", str(k * 100), "x")
    assert _info(r, "b", "FULL")[b"avg-sparse-size"] == b"10"
    r.execute_command("ARSET", "b", "1000", "x")
    info = _info(r, "b", "FULL")
    assert (info[b"dense-slices"], info[b"avg-dense-size"], info[b"avg-dense-fill"]) == (1, b"1024", b"0.0107421875")
    # slices, the flat directory doubling, the super directory's blocks
    r.execute_command("ARSET", "c", str(5 * 4096), "x")
    assert (_info(r, "c")[b"slices"], _info(r, "c")[b"directory-size"]) == (1, 8)
    r.execute_command("ARDEL", "c", str(5 * 4096))
    assert not r.exists("c")


def test_watch_sees_array_writes(r):
    r.execute_command("ARSET", "a", "0", "x")
    p = r.pipeline()
    p.watch("a")
    r.execute_command("ARSEEK", "a", "3")       # another client changes the cursor
    p.multi()
    p.execute_command("ARINSERT", "a", "y")
    with pytest.raises(redis.WatchError):
        p.execute()
    assert r.execute_command("ARCOUNT", "a") == 1
