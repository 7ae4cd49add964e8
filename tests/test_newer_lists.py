"""The list surface Redis changed after 7.0, compared byte for byte with
valkey-server 9.1: LPOS refuses a RANK of LLONG_MIN (7.2).  Redis 8.10's
LMOVEM and BLMOVEM (not in valkey) against Redis's documented replies and
its own tests' expectations (list-4.tcl of the PR that added them)."""

import pytest

from support.notify import events_of
from support.replication import SyncStream
from support.resp import array
from support.wait import wait_until

NIL_ARRAY = b"*-1\r\n"
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
SYNTAX = b"-ERR syntax error\r\n"
COUNT_ERR = b"-ERR count should be greater than 0\r\n"


def test_lpos_rank_range_same_as_valkey(same_as_valkey):
    same_as_valkey([
        ["RPUSH", "l", "a", "b", "c", "a"],
        ["LPOS", "l", "a", "RANK", "-9223372036854775808"], ["LPOS", "l", "a", "RANK", "-9223372036854775807"],
        ["LPOS", "l", "a", "RANK", "9223372036854775807"], ["LPOS", "l", "a", "RANK", "9223372036854775808"],
        ["LPOS", "l", "a", "RANK", "0"], ["LPOS", "l", "a", "RANK", "x"], ["LPOS", "l", "a", "RANK", "-1"],
        ["LPOS", "l", "a", "RANK", "-2", "COUNT", "0"], ["LPOS", "nokey", "a", "RANK", "-9223372036854775808"],
    ])


# -- LMOVEM / BLMOVEM (8.10) -----------------------------------------------------------------

def wait_blocked(r, n):
    wait_until(lambda: r.info("clients")["blocked_clients"] == n, 20.0, 0.01,
               what="blocked_clients to reach %d" % n)


@pytest.mark.parametrize("big", ["", "x" * 100])
def test_lmovem_orderings(r, raw, big):
    # every (from, to, OBO|BULK): the block is taken from the source's end;
    # OBO pushes it in popping order, BULK keeps its order in the source;
    # the reply lists the moved elements as they now stand in the destination
    items = ["1", "2", "3", "4", "5"] + ([big] if big else [])
    cases = {
        ("LEFT", "LEFT", "OBO"): ["3", "2", "1"], ("LEFT", "LEFT", "BULK"): ["1", "2", "3"],
        ("LEFT", "RIGHT", "OBO"): ["1", "2", "3"], ("LEFT", "RIGHT", "BULK"): ["1", "2", "3"],
        ("RIGHT", "RIGHT", "OBO"): None, ("RIGHT", "RIGHT", "BULK"): None,
        ("RIGHT", "LEFT", "OBO"): None, ("RIGHT", "LEFT", "BULK"): None,
    }
    tail = items[-3:]
    cases[("RIGHT", "RIGHT", "OBO")] = tail[::-1]
    cases[("RIGHT", "RIGHT", "BULK")] = tail
    cases[("RIGHT", "LEFT", "OBO")] = tail
    cases[("RIGHT", "LEFT", "BULK")] = tail
    for (src_end, dst_end, order), moved in cases.items():
        r.delete("s", "d")
        r.rpush("s", *items)
        r.rpush("d", "x", "y")
        assert raw.call("LMOVEM", "s", "d", src_end, dst_end, "COUNT", "3", order) == array(*moved)
        rest = items[3:] if src_end == "LEFT" else items[:-3]
        assert r.lrange("s", 0, -1) == [x.encode() for x in rest]
        dst = moved + ["x", "y"] if dst_end == "LEFT" else ["x", "y"] + moved
        assert r.lrange("d", 0, -1) == [x.encode() for x in dst]


def test_lmovem_single_count_exactly(r, raw, raw3):
    r.rpush("a", "1", "2", "3", "4", "5")
    # without the block: one element, as LMOVE, but an array reply
    assert raw.call("LMOVEM", "a", "b", "LEFT", "RIGHT") == array("1")
    assert raw.call("LMOVEM", "a", "b", "RIGHT", "LEFT") == array("5")
    assert r.lrange("b", 0, -1) == [b"5", b"1"]
    # COUNT moves up to count; the emptied source is deleted
    assert raw.call("LMOVEM", "a", "b", "LEFT", "RIGHT", "COUNT", "100", "BULK") == array("2", "3", "4")
    assert r.exists("a") == 0
    # a missing source: nil, nothing created
    assert raw.call("LMOVEM", "a", "c", "LEFT", "RIGHT") == NIL_ARRAY
    assert raw.call("LMOVEM", "a", "c", "LEFT", "RIGHT", "COUNT", "2", "OBO") == NIL_ARRAY
    assert raw3.call("LMOVEM", "a", "c", "LEFT", "RIGHT", "EXACTLY", "2", "OBO") == b"_\r\n"
    assert r.exists("c") == 0
    # EXACTLY: all or nothing
    r.rpush("n", "john")
    assert raw.call("LMOVEM", "n", "p", "LEFT", "RIGHT", "EXACTLY", "2", "BULK") == NIL_ARRAY
    assert r.lrange("n", 0, -1) == [b"john"] and r.exists("p") == 0
    r.rpush("n", "doe")
    assert raw.call("LMOVEM", "n", "p", "LEFT", "RIGHT", "EXACTLY", "2", "BULK") == array("john", "doe")
    assert raw3.call("LMOVEM", "b", "p", "LEFT", "RIGHT", "EXACTLY", "2", "OBO") == b"*2\r\n$1\r\n5\r\n$1\r\n1\r\n"
    assert r.lrange("p", 0, -1) == [b"john", b"doe", b"5", b"1"]
    # keywords in any case
    r.rpush("a", "z")
    assert raw.call("lmovem", "a", "b", "left", "right", "exactly", "1", "bulk") == array("z")


def test_lmovem_same_key(r, raw):
    r.rpush("k", "1", "2", "3", "4", "5")
    assert raw.call("LMOVEM", "k", "k", "LEFT", "RIGHT", "COUNT", "2", "BULK") == array("1", "2")
    assert r.lrange("k", 0, -1) == [b"3", b"4", b"5", b"1", b"2"]
    # the block leaves before it is pushed back: OBO at the same end reverses it
    assert raw.call("LMOVEM", "k", "k", "LEFT", "LEFT", "COUNT", "2", "OBO") == array("4", "3")
    assert r.lrange("k", 0, -1) == [b"4", b"3", b"5", b"1", b"2"]
    assert raw.call("LMOVEM", "k", "k", "RIGHT", "LEFT", "COUNT", "9", "BULK") == array("4", "3", "5", "1", "2")
    assert r.lrange("k", 0, -1) == [b"4", b"3", b"5", b"1", b"2"]


def test_lmovem_errors(r, raw):
    r.rpush("s", "a", "b", "c")
    for bad in (["COUNT", "0", "BULK"], ["EXACTLY", "0", "BULK"], ["COUNT", "-1", "BULK"],
                ["COUNT", "a", "BULK"], ["COUNT", "9223372036854775808", "OBO"]):
        assert raw.call("LMOVEM", "s", "d", "LEFT", "RIGHT", *bad) == COUNT_ERR
    assert raw.call("LMOVEM", "s", "d", "LEFT") == b"-ERR wrong number of arguments for 'lmovem' command\r\n"
    assert raw.call("BLMOVEM", "s", "d", "LEFT", "RIGHT") == b"-ERR wrong number of arguments for 'blmovem' command\r\n"
    for bad in (["COUNT", "2"], ["COUNT", "2", "OBO", "extra"], ["BAD", "2", "OBO"], ["COUNT", "2", "badorder"], ["OBO"]):
        assert raw.call("LMOVEM", "s", "d", "LEFT", "RIGHT", *bad) == SYNTAX
        assert raw.call("BLMOVEM", "s", "d", "LEFT", "RIGHT", "0", *bad) == SYNTAX
    assert raw.call("LMOVEM", "s", "d", "UP", "RIGHT", "COUNT", "2", "OBO") == SYNTAX
    assert raw.call("LMOVEM", "s", "d", "LEFT", "DOWN", "COUNT", "2", "OBO") == SYNTAX
    assert raw.call("BLMOVEM", "s", "d", "LEFT", "RIGHT", "x") == b"-ERR timeout is not a float or out of range\r\n"
    assert raw.call("BLMOVEM", "s", "d", "LEFT", "RIGHT", "-1", "COUNT", "1", "OBO") == b"-ERR timeout is negative\r\n"
    assert raw.call("BLMOVEM", "s", "d", "LEFT", "RIGHT", "0", "COUNT", "0", "OBO") == COUNT_ERR
    # types: the source's and the destination's, checked before anything moves
    r.set("str", "v")
    assert raw.call("LMOVEM", "str", "d", "LEFT", "RIGHT") == WRONGTYPE
    assert raw.call("LMOVEM", "s", "str", "LEFT", "RIGHT", "COUNT", "2", "BULK") == WRONGTYPE
    assert raw.call("BLMOVEM", "s", "str", "LEFT", "RIGHT", "0") == WRONGTYPE
    assert r.lrange("s", 0, -1) == [b"a", b"b", b"c"]
    assert r.dbsize() == 2


def test_blmovem_immediate_and_timeout(r, raw, raw3):
    r.rpush("a", "1", "2", "3", "4", "5")
    assert raw.call("BLMOVEM", "a", "b", "LEFT", "RIGHT", "1") == array("1")
    assert raw.call("BLMOVEM", "a", "b", "LEFT", "LEFT", "1", "COUNT", "3", "BULK") == array("2", "3", "4")
    assert raw.call("BLMOVEM", "a", "b", "LEFT", "RIGHT", "1", "COUNT", "5", "BULK") == array("5")
    assert raw.call("BLMOVEM", "foo", "bar", "LEFT", "RIGHT", "0.1", "COUNT", "2", "BULK") == NIL_ARRAY
    assert raw3.call("BLMOVEM", "foo", "bar", "LEFT", "RIGHT", "0.1") == b"_\r\n"
    r.rpush("short", "1")
    assert raw.call("BLMOVEM", "short", "bar", "LEFT", "RIGHT", "0.1", "EXACTLY", "2", "BULK") == NIL_ARRAY
    assert r.lrange("short", 0, -1) == [b"1"] and r.exists("bar", "foo") == 0
    wait_blocked(r, 0)


def test_blmovem_count_served_by_first_push(r, raw):
    raw.send("BLMOVEM", "s", "d", "LEFT", "RIGHT", "0", "COUNT", "5", "BULK")
    wait_blocked(r, 1)
    r.rpush("d", "old")                   # waiting on the source only
    assert raw.nothing_within(0.1)
    r.rpush("s", "a", "b")
    assert raw.read() == array("a", "b")
    assert r.lrange("d", 0, -1) == [b"old", b"a", b"b"] and r.exists("s") == 0


def test_blmovem_exactly_waits_for_enough(r, raw):
    raw.send("BLMOVEM", "s", "d", "LEFT", "RIGHT", "0", "EXACTLY", "3", "BULK")
    wait_blocked(r, 1)
    r.rpush("s", "1", "2")                # not enough: still blocked, nothing moved
    assert raw.nothing_within(0.2)
    assert r.info("clients")["blocked_clients"] == 1
    assert r.lrange("s", 0, -1) == [b"1", b"2"] and r.exists("d") == 0
    r.rpush("s", "3")
    assert raw.read() == array("1", "2", "3")
    assert r.lrange("d", 0, -1) == [b"1", b"2", b"3"] and r.exists("s") == 0
    # LINSERT, LMOVE into the source and SORT ... STORE over it wake it too
    for grow in (lambda: r.linsert("s", "BEFORE", "1", "0"),
                 lambda: r.lmove("feed", "s", "LEFT", "RIGHT"),
                 lambda: r.sort("feed", store="s")):
        r.delete("s", "d", "feed")
        r.rpush("s", "1", "2")
        r.rpush("feed", "9", "8", "7")
        raw.send("BLMOVEM", "s", "d", "LEFT", "RIGHT", "0", "EXACTLY", "3", "BULK")
        wait_blocked(r, 1)
        grow()
        moved = raw.read()
        assert moved.startswith(b"*3\r\n")
        assert r.exists("s") == 0 and r.llen("d") == 3
    wait_blocked(r, 0)


def test_blmovem_exactly_timeout_and_multi(r, raw):
    r.rpush("s", "1")
    assert raw.call("BLMOVEM", "s", "d", "LEFT", "RIGHT", "0.2", "EXACTLY", "3", "BULK") == NIL_ARRAY
    assert raw.call("MULTI") == b"+OK\r\n"
    assert raw.call("BLMOVEM", "s", "d", "LEFT", "RIGHT", "0", "EXACTLY", "3", "BULK") == b"+QUEUED\r\n"
    assert raw.call("BLMOVEM", "s", "d", "LEFT", "RIGHT", "0", "COUNT", "3", "BULK") == b"+QUEUED\r\n"
    assert raw.call("BLMOVEM", "none", "d", "LEFT", "RIGHT", "0") == b"+QUEUED\r\n"
    assert raw.call("EXEC") == b"*3\r\n*-1\r\n" + array("1") + b"*-1\r\n"
    assert r.eval("return redis.call('BLMOVEM', 'd', 'e', 'LEFT', 'RIGHT', 0, 'EXACTLY', 2, 'OBO')", 0) is None
    wait_blocked(r, 0)


def test_blmovem_wrongtype_destination_when_served(r, raw):
    raw.send("BLMOVEM", "s", "d", "LEFT", "LEFT", "0", "COUNT", "2", "OBO")
    wait_blocked(r, 1)
    r.set("d", "string")
    r.rpush("s", "a")
    assert raw.read() == WRONGTYPE
    assert r.lrange("s", 0, -1) == [b"a"]
    wait_blocked(r, 0)


def test_lmovem_propagation(server, r, raw):
    # LMOVEM propagates as sent; BLMOVEM as LMOVEM with the number moved made
    # EXACT (served at once or after blocking); what moved nothing, nothing
    r.flushall()
    s = SyncStream(server.port)
    try:
        r.rpush("s", "1", "2", "3", "4")
        raw.call("LMOVEM", "s", "d", "left", "right", "count", "2", "bulk")
        raw.call("LMOVEM", "s", "d", "left", "right", "exactly", "1", "obo")
        raw.call("LMOVEM", "s", "d", "left", "right", "exactly", "5", "obo")
        raw.call("BLMOVEM", "s", "d", "left", "right", "0", "count", "2", "bulk")
        raw.call("BLMOVEM", "x", "d", "left", "right", "0.01", "count", "2", "bulk")
        raw.send("BLMOVEM", "s", "d", "RIGHT", "LEFT", "0", "COUNT", "5", "OBO")
        wait_blocked(r, 1)
        r.rpush("s", "a", "b")
        assert raw.read() == array("a", "b")
        raw.send("BLMOVEM", "s", "d", "left", "left", "0")
        wait_blocked(r, 1)
        r.rpush("s", "c")
        assert raw.read() == array("c")
        r.set("end", "1")
        cmds = []
        while not cmds or cmds[-1][:2] != [b"set", b"end"]:
            c = s.read_command()
            if c[0].lower() not in (b"select", b"multi", b"exec"):
                cmds.append([c[0].lower()] + c[1:])
    finally:
        s.close()
    assert cmds == [
        [b"rpush", b"s", b"1", b"2", b"3", b"4"],
        [b"lmovem", b"s", b"d", b"left", b"right", b"count", b"2", b"bulk"],
        [b"lmovem", b"s", b"d", b"left", b"right", b"exactly", b"1", b"obo"],
        [b"lmovem", b"s", b"d", b"left", b"right", b"EXACTLY", b"1", b"BULK"],
        [b"rpush", b"s", b"a", b"b"],
        [b"lmovem", b"s", b"d", b"RIGHT", b"LEFT", b"EXACTLY", b"2", b"OBO"],
        [b"rpush", b"s", b"c"],
        [b"lmovem", b"s", b"d", b"left", b"left"],
        [b"set", b"end", b"1"],
    ]
    assert r.lrange("d", 0, -1) == [b"c", b"a", b"b", b"1", b"2", b"3", b"4"]


def test_lmovem_events(r):
    r.rpush("s", "1", "2", "3")
    assert events_of(r, [["LMOVEM", "s", "d", "LEFT", "RIGHT", "COUNT", "2", "OBO"],
                         ["LMOVEM", "s", "d", "RIGHT", "LEFT", "COUNT", "2", "BULK"],
                         ["LMOVEM", "s", "d", "RIGHT", "LEFT", "COUNT", "2", "BULK"]]) == [
        (b"__keyspace@0__:d", b"rpush"), (b"__keyevent@0__:rpush", b"d"),
        (b"__keyspace@0__:s", b"lpop"), (b"__keyevent@0__:lpop", b"s"),
        (b"__keyspace@0__:d", b"lpush"), (b"__keyevent@0__:lpush", b"d"),
        (b"__keyspace@0__:s", b"rpop"), (b"__keyevent@0__:rpop", b"s"),
        (b"__keyspace@0__:s", b"del"), (b"__keyevent@0__:del", b"s"),
    ]


def test_lmovem_metadata_and_keys(r, raw):
    assert raw.call("COMMAND", "GETKEYS", "LMOVEM", "s", "d", "LEFT", "RIGHT", "COUNT", "2", "OBO") == array("s", "d")
    assert raw.call("COMMAND", "GETKEYS", "BLMOVEM", "s", "d", "LEFT", "RIGHT", "0") == array("s", "d")
    info = raw.call_value("COMMAND", "INFO", "LMOVEM", "BLMOVEM")
    assert [i[1] for i in info] == [-5, -6]
    assert info[0][2] == [b"write", b"denyoom"] and info[1][2] == [b"write", b"denyoom", b"blocking"]
    assert info[1][6] == [b"@write", b"@list", b"@slow", b"@blocking"]


def test_lmovem_watch(r, raw, connect):
    r.rpush("s", "1", "2")
    w = connect()
    for key in ("s", "d"):
        assert w.call("WATCH", key) == b"+OK\r\n"
        assert w.call("MULTI") == b"+OK\r\n"
        w.call("PING")
        raw.call("LMOVEM", "s", "d", "LEFT", "RIGHT")
        assert w.call("EXEC") == NIL_ARRAY


def test_lmovem_aof_replay(start_server):
    # what is propagated replays to the same lists (BLMOVEM's EXACTLY form included)
    s = start_server("--appendonly", "yes", "--enable-debug-command", "yes")
    c = s.client()
    c.rpush("s", *[str(i) for i in range(10)])
    c.execute_command("LMOVEM", "s", "d", "RIGHT", "LEFT", "COUNT", "3", "OBO")
    c.execute_command("LMOVEM", "s", "d", "LEFT", "LEFT", "EXACTLY", "2", "BULK")
    c.execute_command("BLMOVEM", "s", "d", "LEFT", "RIGHT", "0", "COUNT", "9", "OBO")
    c.execute_command("LMOVEM", "d", "d", "LEFT", "LEFT", "COUNT", "4", "OBO")
    before = (c.lrange("s", 0, -1), c.lrange("d", 0, -1))
    assert before[0] == [] and len(before[1]) == 10
    assert c.execute_command("DEBUG", "LOADAOF") == b"OK"
    assert (c.lrange("s", 0, -1), c.lrange("d", 0, -1)) == before


def test_lmovem_acl_key_permissions(r, raw):
    # the source is read and written (RW access delete: both permissions
    # needed), the destination only written (RW insert: %W is enough)
    r.execute_command("ACL", "SETUSER", "lm", "on", "nopass", "+@all", "%R~ro*", "%W~wo*", "~rw*")
    try:
        for src, dst in (("rw1", "rw2"), ("rw1", "wo2")):
            ok = raw.call_value("ACL", "DRYRUN", "lm", "LMOVEM", src, dst, "LEFT", "RIGHT")
            assert ok == b"OK"
        for src, dst in (("ro1", "rw2"), ("wo1", "rw2"), ("rw1", "ro2")):
            msg = raw.call_value("ACL", "DRYRUN", "lm", "BLMOVEM", src, dst, "LEFT", "RIGHT", "0")
            assert msg == b"User lm has no permissions to access the '%s' key" % (
                (src if src[:2] != "rw" else dst).encode())
    finally:
        r.execute_command("ACL", "DELUSER", "lm")


def test_blmovem_served_events(r, raw):
    raw.send("BLMOVEM", "s", "d", "RIGHT", "LEFT", "0", "EXACTLY", "2", "OBO")
    wait_blocked(r, 1)
    ev = events_of(r, [["RPUSH", "s", "a"], ["RPUSH", "s", "b"]])
    assert raw.read() == array("a", "b")
    assert ev == [
        (b"__keyspace@0__:s", b"rpush"), (b"__keyevent@0__:rpush", b"s"),
        (b"__keyspace@0__:s", b"rpush"), (b"__keyevent@0__:rpush", b"s"),
        (b"__keyspace@0__:d", b"lpush"), (b"__keyevent@0__:lpush", b"d"),
        (b"__keyspace@0__:s", b"rpop"), (b"__keyevent@0__:rpop", b"s"),
        (b"__keyspace@0__:s", b"del"), (b"__keyevent@0__:del", b"s"),
    ]
