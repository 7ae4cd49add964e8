"""SORT / SORT_RO: exact replies and errors, on a real server for sorted
sets, and in-process for lists, sets and hashes (their commands live in
other branches), each compared with real Redis 7.0."""

from __future__ import annotations

from support.inprocess import Events, FakeClient
from support.resp import array, error
from support.servers import free_port
from support.wait import wait_until


# ---------------------------------------------------------------------------
# On the server: sorted sets
# ---------------------------------------------------------------------------
def test_sort_zset_numeric_and_alpha(raw):
    raw.call("ZADD", "z", "1", "10", "2", "9", "3", "100", "4", "-1.5")
    assert raw.call("SORT", "z") == array("-1.5", "9", "10", "100")
    assert raw.call("SORT", "z", "DESC") == array("100", "10", "9", "-1.5")
    assert raw.call("SORT", "z", "ALPHA") == array("-1.5", "10", "100", "9")
    assert raw.call("SORT", "z", "LIMIT", "1", "2") == array("9", "10")
    assert raw.call("SORT", "z", "LIMIT", "-5", "2") == array("-1.5", "9")
    assert raw.call("SORT", "z", "LIMIT", "10", "2") == b"*0\r\n"
    assert raw.call("SORT", "z", "LIMIT", "2", "-1") == array("10", "100")
    # BY without '*': no sorting, rank order (reversed by DESC)
    assert raw.call("SORT", "z", "BY", "nosort") == array("10", "9", "100", "-1.5")
    assert raw.call("SORT", "z", "BY", "nosort", "DESC", "LIMIT", "1", "2") == array("100", "9")
    assert raw.call("SORT_RO", "z", "BY", "nosort", "LIMIT", "3", "5") == array("-1.5")
    assert raw.call("SORT", "nokey") == b"*0\r\n"


def test_sort_by_get_patterns(raw):
    raw.call("ZADD", "z", "0", "a", "0", "b", "0", "c")
    raw.call("SET", "w_a", "3")
    raw.call("SET", "w_b", "1")
    raw.call("SET", "v_a", "A")
    raw.call("SET", "v_c", "C")
    # c has no weight: 0, sorts first
    assert raw.call("SORT", "z", "BY", "w_*") == array("c", "b", "a")
    assert raw.call("SORT", "z", "BY", "w_*", "GET", "#", "GET", "v_*") == \
        array("c", "C", "b", None, "a", "A")
    assert raw.call("SORT", "z", "BY", "v_*", "ALPHA") == array("b", "a", "c")
    assert raw.call("SORT", "z", "BY", "v_*", "ALPHA", "DESC") == array("c", "a", "b")
    assert raw.call("SORT", "z", "ALPHA", "GET", "nostar") == array(None, None, None)
    assert raw.call("SORT", "z", "ALPHA", "DESC", "GET", "#") == array("c", "b", "a")
    raw.call("SET", "w_c", "x")
    assert raw.call("SORT", "z", "BY", "w_*") == error("ERR One or more scores can't be converted into double")
    assert raw.call("SORT", "z") == error("ERR One or more scores can't be converted into double")


def test_sort_store(raw):
    raw.call("ZADD", "z", "1", "3", "2", "1", "3", "2")
    assert raw.call("SORT", "z", "STORE", "dst") == b":3\r\n"
    assert raw.call("TYPE", "dst") == b"+list\r\n"
    # Redis 7.2+: a small stored list is a listpack (7.0 made a quicklist)
    assert raw.call("OBJECT", "ENCODING", "dst") == b"$8\r\nlistpack\r\n"
    assert raw.call("SORT", "dst", "BY", "nosort") == array("1", "2", "3")
    raw.call("EXPIRE", "dst", "100")
    assert raw.call("SORT", "z", "GET", "missing_*", "STORE", "dst") == b":3\r\n"
    assert raw.call("TTL", "dst") == b":-1\r\n"
    assert raw.call("SORT", "dst", "BY", "nosort", "ALPHA") == array("", "", "")
    assert raw.call("SORT", "nokey", "STORE", "dst") == b":0\r\n"
    assert raw.call("EXISTS", "dst") == b":0\r\n"
    assert raw.call("SORT_RO", "z", "STORE", "dst") == error("ERR syntax error")


def test_sort_errors(raw):
    raw.call("ZADD", "z", "1", "1")
    raw.call("SET", "s", "x")
    assert raw.call("SORT", "s") == error("WRONGTYPE Operation against a key holding the wrong kind of value")
    assert raw.call("SORT", "z", "FOO") == error("ERR syntax error")
    assert raw.call("SORT", "z", "LIMIT", "1") == error("ERR syntax error")
    assert raw.call("SORT", "z", "LIMIT", "a", "1") == error("ERR value is not an integer or out of range")
    assert raw.call("SORT", "z", "BY") == error("ERR syntax error")
    assert raw.call("SORT", "z", "GET") == error("ERR syntax error")
    assert raw.call("SORT", "z", "STORE") == error("ERR syntax error")
    # options are checked before the type
    assert raw.call("SORT", "s", "FOO") == error("ERR syntax error")


def test_sort_converts_zset_to_skiplist(raw):
    raw.call("ZADD", "z", "1", "1", "2", "2")
    assert raw.call("OBJECT", "ENCODING", "z") == b"$8\r\nlistpack\r\n"
    raw.call("SORT", "z")
    assert raw.call("OBJECT", "ENCODING", "z") == b"$8\r\nskiplist\r\n"


ZSET_CASES = [
    ["SORT", "z"], ["SORT", "z", "DESC"], ["SORT", "z", "ALPHA"], ["SORT", "z", "ALPHA", "DESC"],
    ["SORT", "z", "LIMIT", "1", "3"], ["SORT", "z", "LIMIT", "-1", "-1"], ["SORT", "z", "LIMIT", "0", "0"],
    ["SORT", "z", "LIMIT", "3", "100", "DESC"],
    ["SORT", "z", "BY", "nosort"], ["SORT", "z", "BY", "nosort", "DESC", "LIMIT", "2", "2"],
    ["SORT", "z", "BY", "w_*"], ["SORT", "z", "BY", "w_*", "DESC", "GET", "#", "GET", "v_*"],
    ["SORT", "z", "BY", "v_*", "ALPHA", "GET", "v_*"],
    ["SORT", "z", "BY", "w_*", "LIMIT", "1", "2"],
    ["SORT", "z", "GET", "v_*", "GET", "#", "GET", "x"],
    ["SORT", "z", "BY", "w_*", "STORE", "dst"], ["LRANGE", "dst", "0", "-1"],
    ["SORT", "z", "BY", "nosort", "GET", "v_*", "STORE", "dst"], ["LRANGE", "dst", "0", "-1"],
    ["SORT_RO", "z", "BY", "w_*", "DESC"],
    ["SORT", "z", "ASC", "DESC", "ASC"],
    ["SORT", "z", "BY", "w_*", "BY", "nosort"],
    ["SORT", "bad"], ["SORT", "bad", "ALPHA"], ["SORT", "bad", "BY", "w_*"],
    ["SORT", "nums"], ["SORT", "nums", "DESC", "LIMIT", "0", "2"],
]


def _zset_data(conn):
    conn.call("ZADD", "z", "5", "3", "1", "10", "2", "2.5", "4", "-7", "3", "0x10", "6", "1e2")
    for m, w in (("3", "1"), ("10", "1"), ("2.5", "-3"), ("-7", "inf")):
        conn.call("SET", "w_" + m, w)
    for m, v in (("3", "c"), ("10", "a"), ("0x10", "b")):
        conn.call("SET", "v_" + m, v)
    conn.call("ZADD", "bad", "1", "a", "2", "1")
    conn.call("SET", "w_a", "1e-310")
    conn.call("ZADD", "nums", "1", " 5", "2", "", "3", "1e400x")


def test_sort_zset_differential(raw, ref_raw):
    _zset_data(raw)
    _zset_data(ref_raw)
    for cmd in ZSET_CASES:
        ra, rb = raw.call(*cmd), ref_raw.call(*cmd)
        if cmd[0] == "LRANGE" and ra.startswith(b"-ERR unknown command"):
            ra = _lrange_via_sort(raw, cmd[1])
        assert ra == rb, "%r: ophidis %r != redis %r" % (cmd, ra, rb)


def _lrange_via_sort(conn, key):
    # without LRANGE in this branch, SORT BY nosort returns a list in order
    return conn.call("SORT", key, "BY", "nosort")


# ---------------------------------------------------------------------------
# In-process: lists, sets, hashes
# ---------------------------------------------------------------------------
LIST = ["3", "1", "2", "10", "1", "-2.5", "0x8", " 7"]
SET_STR = ["pear", "apple", "fig", "kiwi", "banana"]
INTSET = ["30", "-4", "7", "100", "2"]


def _build_fake():
    f = FakeClient()
    f.put_list("l", LIST)
    f.put_list("wl", ["b", "a", "c", "a"])
    f.put_set("s", SET_STR, enc=b"hashtable")
    f.put_set("is", INTSET, enc=b"intset")
    f.put_hash("h_pear", {"w": "3", "name": "Pear"})
    f.put_hash("h_apple", {"w": "1", "name": "Apple"})
    f.put_hash("h_fig", {"w": "2"})
    f.put_hash("h_kiwi", {"name": "Kiwi"})
    f.put("n_banana", "B")
    f.put("h_banana", "notahash")
    return f


def _build_ref(c):
    c.call("RPUSH", "l", *LIST)
    c.call("RPUSH", "wl", "b", "a", "c", "a")
    c.call("SADD", "s", *SET_STR)
    c.call("SADD", "is", *INTSET)
    c.call("HSET", "h_pear", "w", "3", "name", "Pear")
    c.call("HSET", "h_apple", "w", "1", "name", "Apple")
    c.call("HSET", "h_fig", "w", "2")
    c.call("HSET", "h_kiwi", "name", "Kiwi")
    c.call("SET", "n_banana", "B")
    c.call("SET", "h_banana", "notahash")


INPROC_CASES = [
    ["SORT", "l"], ["SORT", "l", "DESC"], ["SORT", "l", "ALPHA"], ["SORT", "l", "ALPHA", "DESC", "LIMIT", "1", "3"],
    ["SORT", "l", "BY", "nosort"], ["SORT", "l", "BY", "nosort", "DESC"],
    ["SORT", "l", "BY", "nosort", "LIMIT", "2", "3"], ["SORT", "l", "BY", "nosort", "DESC", "LIMIT", "2", "3"],
    ["SORT", "l", "LIMIT", "5", "-1"], ["SORT", "l", "LIMIT", "100", "1"],
    ["SORT", "wl"], ["SORT", "wl", "ALPHA"], ["SORT", "wl", "ALPHA", "DESC"],
    ["SORT", "s"], ["SORT", "s", "ALPHA"], ["SORT", "s", "ALPHA", "DESC", "LIMIT", "0", "2"],
    ["SORT", "s", "BY", "h_*->w"], ["SORT", "s", "BY", "h_*->w", "DESC"],
    ["SORT", "s", "BY", "h_*->w", "GET", "#", "DESC"], ["SORT", "s", "BY", "n_*", "ALPHA", "LIMIT", "4", "1"],
    ["SORT", "s", "BY", "h_*->w", "GET", "#", "GET", "h_*->name", "GET", "n_*", "GET", "h_*->"],
    ["SORT", "s", "BY", "h_*->w", "GET", "h_*->nofield"],
    ["SORT", "s", "BY", "nosort", "STORE", "dst"], ["SORT", "dst", "BY", "nosort"],
    ["SORT", "s", "BY", "h_*->w", "GET", "h_*->name", "STORE", "dst"], ["SORT", "dst", "BY", "nosort"],
    ["SORT", "is"], ["SORT", "is", "DESC", "LIMIT", "1", "2"], ["SORT", "is", "BY", "nosort"],
    ["SORT", "is", "BY", "nosort", "LIMIT", "1", "2"],
    ["SORT", "is", "BY", "nosort", "STORE", "dst2"], ["SORT", "dst2", "BY", "nosort"],
    ["SORT_RO", "l", "BY", "nosort", "GET", "#"],
    ["SORT", "h_pear"],
]


def test_sort_lists_sets_hashes_vs_redis(ref_raw):
    f = _build_fake()
    _build_ref(ref_raw)
    for cmd in INPROC_CASES:
        ra = f.run(*cmd)
        rb = ref_raw.call(*cmd)
        assert ra == rb, "%r: ophidis %r != redis %r" % (cmd, ra, rb)


def test_sort_list_exact():
    f = _build_fake()
    assert f.run("SORT", "l") == array("-2.5", "1", "1", "2", "3", " 7", "0x8", "10")
    assert f.run("SORT", "l", "BY", "nosort", "DESC", "LIMIT", "0", "2") == array(" 7", "0x8")
    assert f.run("SORT", "s", "BY", "h_*->w", "GET", "h_*->name") == \
        array(None, "Kiwi", "Apple", None, "Pear")  # banana (no hash) and kiwi (no w) first
    # ALPHA BY: elements without a value sort first (their order is unspecified)
    rep = f.run("SORT", "s", "BY", "h_*->name", "ALPHA")
    assert rep.endswith(array("apple", "kiwi", "pear")[4:])
    assert set(rep.split(b"\r\n")[2:6:2]) == {b"banana", b"fig"}
    assert f.run("SORT", "is", "BY", "nosort") == array("-4", "2", "7", "30", "100")
    f.put_list("bad", ["1", "1e-310"])
    assert f.run("SORT", "bad") == error("ERR One or more scores can't be converted into double")
    f.put("str", "x")
    assert f.run("SORT", "str") == error("WRONGTYPE Operation against a key holding the wrong kind of value")


def test_sort_store_notifications_and_dirty():
    f = _build_fake()
    with Events() as ev:
        d0 = f.server.dirty
        assert f.run("SORT", "l", "STORE", "dst") == b":8\r\n"
        assert f.server.dirty - d0 == 8
        assert f.run("SORT", "nokey", "STORE", "dst") == b":0\r\n"
    assert ev.events == [(b"sortstore", b"dst"), (b"del", b"dst")]
    assert b"dst" not in f.db.d


def test_sort_set_in_script_sorts_alpha():
    f = _build_fake()
    f.in_script = True
    assert f.run("SORT", "s", "BY", "nosort") == array("apple", "banana", "fig", "kiwi", "pear")


def test_sort_patterns_in_cluster_mode(start_server):
    """Redis 7.4: a BY or GET pattern is refused in cluster mode only when
    the keys it forms may hash to another slot than the sorted key's
    (patternHashSlot: a {tag} before any wildcard, or no wildcard)."""
    s = start_server("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                     "--cluster-port", str(free_port()), "--cluster-require-full-coverage", "no")
    c = s.conn()
    assert c.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383") == b"+OK\r\n"
    wait_until(lambda: b"cluster_state:ok" in c.call_value("CLUSTER", "INFO"), timeout=30)
    c.call("RPUSH", "{a}l", "3", "1", "2")
    c.call("MSET", "{a}w1", "30", "{a}w2", "20", "{a}w3", "10", "{a}g1", "x", "{a}g2", "y", "{a}g3", "z")
    by = b"-ERR BY option of SORT denied in Cluster mode when keys formed by the pattern may be in different slots.\r\n"
    get = b"-ERR GET option of SORT denied in Cluster mode when keys formed by the pattern may be in different slots.\r\n"
    for cmd in ("SORT", "SORT_RO"):
        assert c.call(cmd, "{a}l", "BY", "w*") == by
        assert c.call(cmd, "{a}l", "BY", "{b}w*") == by
        assert c.call(cmd, "{a}l", "BY", "{a}w*") == array("3", "2", "1")
        assert c.call(cmd, "{a}l", "BY", "{a}w*", "GET", "g*") == get
        assert c.call(cmd, "{a}l", "BY", "{a}w*", "GET", "{a}g*") == array("z", "y", "x")
        assert c.call(cmd, "{a}l", "BY", "nosort") == array("3", "1", "2")    # no '*': allowed
