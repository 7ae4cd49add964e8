"""The string, bitmap and keyspace-event surface Redis added after 7.0:
SET ... IFEQ/IFNE/IFDEQ/IFDNE, DIGEST and DELEX (8.4, compare-and-set and
compare-and-delete), MSETEX (8.4; byte for byte with valkey-server 9.1,
which has it too), BITOP DIFF/DIFF1/ANDOR/ONE (8.2) and the "overwritten"
and "type_changed" keyspace events (8.2).  Where valkey lacks a command the
replies are Redis's documented ones."""

import time

import pytest
import xxhash
from support.notify import KeyspaceEvents
from support.replication import SyncStream
from support.resp import error

NULL = b"$-1\r\n"
WRONGTYPE = error("WRONGTYPE Operation against a key holding the wrong kind of value")
SYNTAX = error("ERR syntax error")
BAD_DIGEST = error("ERR must be exactly 16 hexadecimal characters")


def bulk(s: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(s), s)


# -- DIGEST ------------------------------------------------------------------------------

def test_digest_is_xxh3_as_16_hex_digits(raw, raw3):
    # the documented example, the empty string, and a digest with leading zeros
    raw.call("SET", "k", "Hello world")
    assert raw.call("DIGEST", "k") == bulk(b"b6acb9d84a38ff74")
    raw.call("SET", "e", "")
    assert raw.call("DIGEST", "e") == bulk(b"2d06800538d394c2")
    raw.call("SET", "n", "12345")        # an integer-looking value: its text is hashed
    assert raw.call("DIGEST", "n") == bulk(b"%016x" % _xxh3(b"12345"))
    assert raw.call("DIGEST", "nokey") == NULL
    assert raw3.call("DIGEST", "nokey") == b"_\r\n"
    raw.call("RPUSH", "l", "a")
    assert raw.call("DIGEST", "l") == WRONGTYPE
    assert raw.call("DIGEST") == error("ERR wrong number of arguments for 'digest' command")
    assert raw.call("DIGEST", "a", "b") == error("ERR wrong number of arguments for 'digest' command")


def _xxh3(b: bytes) -> int:
    # an independent reference: the xxhash package (XXH3-64, seed 0)
    return xxhash.xxh3_64_intdigest(b)


def test_digest_leading_zeros(raw):
    # find a short value whose digest starts with a zero digit
    for i in range(1000):
        v = b"v%d" % i
        if _xxh3(v) < 1 << 60:
            break
    raw.call("SET", "k", v)
    d = raw.call("DIGEST", "k")
    assert d == bulk(b"%016x" % _xxh3(v)) and d[5:6] == b"0"


# -- SET ... IFEQ | IFNE | IFDEQ | IFDNE ----------------------------------------------------

def test_set_ifeq_ifne(raw):
    raw.call("SET", "k", "foo")
    assert raw.call("SET", "k", "bar", "IFEQ", "nope") == NULL
    assert raw.call("GET", "k") == bulk(b"foo")
    assert raw.call("SET", "k", "bar", "IFEQ", "foo") == b"+OK\r\n"
    assert raw.call("SET", "k", "baz", "IFNE", "bar") == NULL
    assert raw.call("SET", "k", "baz", "ifne", "zzz") == b"+OK\r\n"
    assert raw.call("GET", "k") == bulk(b"baz")
    # a missing key: IFEQ does not create it, IFNE does
    assert raw.call("SET", "m", "x", "IFEQ", "x") == NULL
    assert raw.call("EXISTS", "m") == b":0\r\n"
    assert raw.call("SET", "m", "x", "IFNE", "x") == b"+OK\r\n"
    assert raw.call("GET", "m") == bulk(b"x")


def test_set_ifdeq_ifdne(raw):
    raw.call("SET", "k", "Hello world")
    d = b"b6acb9d84a38ff74"
    assert raw.call("SET", "k", "x", "IFDNE", d) == NULL
    assert raw.call("SET", "k", "x", "IFDEQ", d.upper()) == b"+OK\r\n"    # case-insensitive
    assert raw.call("SET", "k", "y", "IFDEQ", d) == NULL
    assert raw.call("SET", "k", "y", "IFDNE", d) == b"+OK\r\n"
    assert raw.call("SET", "nokey", "y", "IFDEQ", d) == NULL
    assert raw.call("SET", "nokey", "y", "IFDNE", d) == b"+OK\r\n"
    for bad in ("b6acb9d84a38ff7", "b6acb9d84a38ff744", "g6acb9d84a38ff74", ""):
        assert raw.call("SET", "k", "z", "IFDEQ", bad) == BAD_DIGEST
        assert raw.call("SET", "k", "z", "IFDNE", bad) == BAD_DIGEST
    assert raw.call("GET", "k") == bulk(b"y")


def test_set_conditions_with_get_and_ttl(raw):
    raw.call("SET", "k", "v1")
    # GET answers the old value whether or not the condition held
    assert raw.call("SET", "k", "v2", "IFEQ", "no", "GET") == bulk(b"v1")
    assert raw.call("GET", "k") == bulk(b"v1")
    assert raw.call("SET", "k", "v2", "GET", "IFEQ", "v1", "EX", "100") == bulk(b"v1")
    assert raw.call("GET", "k") == bulk(b"v2")
    assert 0 < int(raw.call("TTL", "k")[1:-2]) <= 100
    assert raw.call("SET", "k", "v3", "IFNE", "x", "KEEPTTL") == b"+OK\r\n"
    assert int(raw.call("TTL", "k")[1:-2]) > 0
    assert raw.call("SET", "k", "v4", "IFNE", "x") == b"+OK\r\n"
    assert raw.call("TTL", "k") == b":-1\r\n"
    assert raw.call("SET", "new", "v", "IFNE", "x", "GET") == NULL


def test_set_condition_errors(raw):
    raw.call("RPUSH", "l", "a")
    for cond in ("IFEQ", "IFNE", "IFDEQ", "IFDNE"):
        arg = "b6acb9d84a38ff74" if cond.startswith("IFD") else "a"
        assert raw.call("SET", "l", "v", cond, arg) == WRONGTYPE
        assert raw.call("SET", "k", "v", cond) == SYNTAX
        assert raw.call("SET", "k", "v", cond, arg, "NX") == SYNTAX
        assert raw.call("SET", "k", "v", "XX", cond, arg) == SYNTAX
        assert raw.call("SET", "k", "v", cond, arg, "IFEQ", "x") == SYNTAX
    assert raw.call("LRANGE", "l", "0", "-1") == b"*1\r\n$1\r\na\r\n"
    # without a condition SET still overwrites any type
    assert raw.call("SET", "l", "v") == b"+OK\r\n"


def test_conditions_and_msetex_propagate(server, r):
    # a condition that held is dropped, a relative TTL becomes PXAT, a
    # DELEX that deleted is a DEL; what did nothing is not propagated
    r.flushall()
    s = SyncStream(server.port)
    try:
        r.set("k", "a")
        r.execute_command("SET", "k", "b", "IFEQ", "nope")
        r.execute_command("SET", "k", "b", "IFEQ", "a", "GET")
        r.execute_command("SET", "k", "c", "IFDNE", "0000000000000000", "PX", "100000")
        r.execute_command("DELEX", "k", "IFEQ", "zz")
        r.execute_command("DELEX", "k", "IFEQ", "c")
        r.execute_command("MSETEX", "2", "m1", "x", "m2", "y", "EX", "100")
        r.execute_command("MSETEX", "1", "m1", "z", "NX")
        r.set("end", "1")
        cmds = []
        while not cmds or cmds[-1][:2] != [b"set", b"end"]:
            c = s.read_command()
            if c[0].lower() != b"select":
                cmds.append([c[0].lower()] + c[1:])
    finally:
        s.close()
    assert cmds[0] == [b"set", b"k", b"a"]
    assert cmds[1] == [b"set", b"k", b"b"]
    assert cmds[2][:4] == [b"set", b"k", b"c", b"PXAT"]
    assert cmds[3] == [b"del", b"k"]
    assert cmds[4][:6] == [b"msetex", b"2", b"m1", b"x", b"m2", b"y"] and cmds[4][6] == b"PXAT"
    assert cmds[5] == [b"set", b"end", b"1"]


# -- DELEX ------------------------------------------------------------------------------------

def test_delex(raw):
    assert raw.call("DELEX", "nokey") == b":0\r\n"
    raw.call("RPUSH", "l", "a")
    assert raw.call("DELEX", "l") == b":1\r\n"          # any type without a condition
    raw.call("RPUSH", "l", "a")
    for cond, arg in (("IFEQ", "a"), ("IFNE", "a"), ("IFDEQ", "b6acb9d84a38ff74"), ("IFDNE", "b6acb9d84a38ff74")):
        assert raw.call("DELEX", "l", cond, arg) == WRONGTYPE
        assert raw.call("DELEX", "nokey", cond, arg) == b":0\r\n"
    assert raw.call("EXISTS", "l") == b":1\r\n"
    raw.call("SET", "k", "abc")
    assert raw.call("DELEX", "k", "IFEQ", "zzz") == b":0\r\n"
    assert raw.call("DELEX", "k", "IFNE", "abc") == b":0\r\n"
    assert raw.call("DELEX", "k", "IFNE", "zzz") == b":1\r\n"
    raw.call("SET", "k", "Hello world")
    assert raw.call("DELEX", "k", "IFDNE", "b6acb9d84a38ff74") == b":0\r\n"
    assert raw.call("DELEX", "k", "IFDEQ", "B6ACB9D84A38FF74") == b":1\r\n"
    raw.call("SET", "k", "abc")
    assert raw.call("DELEX", "k", "IFEQ", "abc") == b":1\r\n"
    assert raw.call("DELEX", "k", "IFEQ") == SYNTAX
    assert raw.call("DELEX", "k", "IFXX", "a") == SYNTAX
    assert raw.call("DELEX", "k", "IFEQ", "a", "b") == SYNTAX
    assert raw.call("DELEX", "k", "IFDEQ", "abc") == BAD_DIGEST
    assert raw.call("DELEX") == error("ERR wrong number of arguments for 'delex' command")


def test_delex_in_multi_and_script(r):
    r.set("k", "v")
    p = r.pipeline()
    p.execute_command("DELEX", "k", "IFEQ", "v")
    p.exists("k")
    assert p.execute() == [1, 0]
    r.set("k", "v")
    assert r.eval("return redis.call('DELEX', KEYS[1], 'IFNE', 'v')", 1, "k") == 0
    assert r.eval("return redis.call('DIGEST', KEYS[1])", 1, "k") == b"%016x" % _xxh3(b"v")


# -- MSETEX (valkey 9.1 has it too) --------------------------------------------------------------

def test_msetex_same_as_valkey(same_as_valkey):
    same_as_valkey([
        ["MSETEX", "2", "a", "1", "b", "2"], ["MGET", "a", "b"], ["TTL", "a"],
        ["MSETEX", "2", "a", "x", "c", "3", "NX"], ["MGET", "a", "c"],
        ["MSETEX", "1", "c", "3", "NX", "EX", "100"], ["TTL", "c"],
        ["MSETEX", "2", "a", "y", "c", "z", "XX"], ["MGET", "a", "c"],
        ["MSETEX", "2", "a", "1", "b", "2", "XX", "PX", "100000"], ["TTL", "a"],
        ["MSETEX", "1", "a", "k", "KEEPTTL"],
        ["MSETEX", "1", "a", "k"], ["TTL", "a"],
        ["HSET", "h", "f", "v"], ["MSETEX", "2", "h", "s", "a", "t"], ["TYPE", "h"],
        ["MSETEX", "0", "a", "1"], ["MSETEX", "x", "a", "1"], ["MSETEX", "-1", "a", "1"],
        ["MSETEX", "2", "a", "1"], ["MSETEX", "1", "a", "1", "b"], ["MSETEX", "3", "a", "1", "b", "2"],
        ["MSETEX", "1", "a", "1", "NX", "XX"], ["MSETEX", "1", "a", "1", "EX", "0"],
        ["MSETEX", "1", "a", "1", "EX", "-5"], ["MSETEX", "1", "a", "1", "EX", "x"],
        ["MSETEX", "1", "a", "1", "EX", "10", "PX", "10"], ["MSETEX", "1", "a", "1", "KEEPTTL", "EX", "10"],
        ["MSETEX", "1", "a", "1", "GET"], ["MSETEX", "1", "a", "1", "EX"], ["MSETEX", "1", "a"],
        ["MSETEX", "1"],
    ])


def test_msetex_exat_and_events(r):
    at = int(time.time()) + 1000
    assert r.execute_command("MSETEX", "2", "a", "1", "b", "2", "EXAT", str(at)) == 1
    assert r.expiretime("a") == at and r.expiretime("b") == at
    r.config_set("notify-keyspace-events", "KEA")
    try:
        with KeyspaceEvents(r) as ev:
            r.execute_command("MSETEX", "1", "c", "1", "PX", "100000")
            r.execute_command("MSETEX", "1", "c", "1", "NX")
            got = ev.collect()
    finally:
        r.config_set("notify-keyspace-events", "")
    assert got == [(b"__keyspace@0__:c", b"set"), (b"__keyevent@0__:set", b"c"),
                   (b"__keyspace@0__:c", b"expire"), (b"__keyevent@0__:expire", b"c")]


# -- BITOP DIFF | DIFF1 | ANDOR | ONE -----------------------------------------------------------

def test_bitop_new_operations(r):
    r.set("a", b"\xf0")
    r.set("b", b"\xc0")
    r.set("c", b"\x80")
    assert r.bitop("DIFF", "d", "a", "b", "c") == 1 and r.get("d") == b"\x30"
    assert r.bitop("DIFF1", "d", "a", "b", "c") == 1 and r.get("d") == b"\x00"
    assert r.bitop("ANDOR", "d", "a", "b", "c") == 1 and r.get("d") == b"\xc0"
    assert r.bitop("ONE", "d", "a", "b", "c") == 1 and r.get("d") == b"\x30"
    r.set("x", b"\xf0")
    r.set("y", b"\x0f\xff")
    assert r.bitop("ONE", "d", "x", "y") == 2 and r.get("d") == b"\xff\xff"
    assert r.bitop("DIFF1", "d", "x", "y") == 2 and r.get("d") == b"\x0f\xff"
    assert r.bitop("DIFF", "d", "y", "x") == 2 and r.get("d") == b"\x0f\xff"
    assert r.bitop("ANDOR", "d", "x", "nosuch") == 1 and r.get("d") == b"\x00"
    assert r.bitop("DIFF", "d", "nosuch", "x") == 1 and r.get("d") == b"\x00"
    assert r.bitop("ONE", "d", "x") == 1 and r.get("d") == b"\xf0"
    assert r.bitop("ONE", "d", "nosuch") == 0 and r.exists("d") == 0
    r.set("a", b"\xff\x00\xff")
    r.set("b", b"\x00\xff")
    for op in ("DIFF", "DIFF1", "ANDOR", "ONE"):
        assert r.bitop(op, "res", "a", "b") == 3


def test_bitop_new_operation_errors(raw):
    for op in ("DIFF", "diff1", "AndOr"):
        assert raw.call("BITOP", op, "d", "a") == error(
            "ERR BITOP %s must be called with at least two source keys." % op.upper())
    raw.call("RPUSH", "l", "x")
    assert raw.call("BITOP", "ONE", "d", "l") == WRONGTYPE
    assert raw.call("BITOP", "DIFF", "d", "a", "l") == WRONGTYPE
    assert raw.call("BITOP", "NOPE", "d", "a") == SYNTAX


# -- keyspace events: overwritten (o), type_changed (c) ---------------------------------------------

# the flags as CONFIG GET shows them: like "n", "o" and "c" are not part of
# "A" and are not shown after it (keyspaceEventsFlagsToString)
@pytest.mark.parametrize("flags,shown", [("KEA", "AKE"), ("Eo", "oE"), ("Ec", "cE"), ("KEoc", "ocKE"),
                                         ("KEAnoc", "AKE"), ("KEg$noc", "g$nocKE")])
def test_overwritten_and_type_changed(r, flags, shown):
    r.set("s", "1")
    r.hset("h", "f", "v")
    r.config_set("notify-keyspace-events", flags)
    try:
        assert r.config_get("notify-keyspace-events")["notify-keyspace-events"] == shown
        with KeyspaceEvents(r) as ev:
            r.set("s", "2")               # overwritten
            r.set("h", "x")               # overwritten + type_changed
            r.set("new", "y")             # new key: neither
            r.incr("s")                   # changed in place: neither
            got = [(ch, m) for ch, m in ev.collect() if m in (b"overwritten", b"type_changed")
                   or ch.endswith((b"overwritten", b"type_changed"))]
    finally:
        r.config_set("notify-keyspace-events", "")
    want = []
    if "o" in flags:
        want += [(b"__keyevent@0__:overwritten", b"s"), (b"__keyevent@0__:overwritten", b"h")]
        if "K" in flags:
            want[0:0] = [(b"__keyspace@0__:s", b"overwritten")]
            want.insert(2, (b"__keyspace@0__:h", b"overwritten"))
    if "c" in flags:
        if "K" in flags:
            want.append((b"__keyspace@0__:h", b"type_changed"))
        want.append((b"__keyevent@0__:type_changed", b"h"))
    assert sorted(got) == sorted(want)


# -- INCREX (Redis 8.8) ------------------------------------------------------------------------

def test_increx_integers(raw, r):
    r.set("k", 10)
    assert raw.call("INCREX", "k") == b"*2\r\n:11\r\n:1\r\n"
    assert raw.call("INCREX", "k", "BYINT", "-4") == b"*2\r\n:7\r\n:-4\r\n"
    # outside a bound: refused (value and TTL kept) or, with SATURATE, capped
    r.expire("k", 60)
    assert raw.call("INCREX", "k", "BYINT", "5", "UBOUND", "10") == b"*2\r\n:7\r\n:0\r\n"
    assert r.get("k") == b"7" and r.ttl("k") > 0
    assert raw.call("INCREX", "k", "BYINT", "5", "UBOUND", "10", "SATURATE") == b"*2\r\n:10\r\n:3\r\n"
    assert raw.call("INCREX", "k", "BYINT", "-50", "LBOUND", "-5", "SATURATE") == b"*2\r\n:-5\r\n:-15\r\n"
    assert r.ttl("k") > 0                      # no expiration option: the TTL stays
    # the type's limits
    r.set("m", 2**63 - 2)
    assert raw.call("INCREX", "m", "BYINT", "2") == b"*2\r\n:%d\r\n:0\r\n" % (2**63 - 2)
    assert raw.call("INCREX", "m", "BYINT", "2", "SATURATE") == b"*2\r\n:%d\r\n:1\r\n" % (2**63 - 1)
    # a missing key counts as 0; a refused result does not create it
    assert raw.call("INCREX", "new", "BYINT", "5", "UBOUND", "3") == b"*2\r\n:0\r\n:0\r\n"
    assert r.exists("new") == 0
    assert raw.call("INCREX", "new", "BYINT", "5") == b"*2\r\n:5\r\n:5\r\n"


def test_increx_floats(raw, raw3, r):
    r.set("f", "1.5")
    assert raw.call("INCREX", "f", "BYFLOAT", "0.25", "LBOUND", "0", "UBOUND", "2") == (
        b"*2\r\n$4\r\n1.75\r\n$4\r\n0.25\r\n")
    assert raw3.call("INCREX", "f", "BYFLOAT", "0.25") == b"*2\r\n,2\r\n,0.25\r\n"
    assert r.get("f") == b"2"
    assert raw.call("INCREX", "f", "BYFLOAT", "1", "UBOUND", "2.5") == b"*2\r\n$1\r\n2\r\n$1\r\n0\r\n"
    r.set("g", "1.8")
    assert raw.call("INCREX", "g", "BYFLOAT", "0.7", "UBOUND", "2", "SATURATE") == (
        b"*2\r\n$1\r\n2\r\n$3\r\n0.2\r\n")
    r.set("i", "5")
    assert raw.call("INCREX", "i", "BYFLOAT", "0.5") == b"*2\r\n$3\r\n5.5\r\n$3\r\n0.5\r\n"
    assert raw.call("INCREX", "i") == b"-ERR value is not an integer or out of range\r\n"


def test_increx_expiration(raw, r):
    r.set("k", 40)
    assert raw.call("INCREX", "k", "BYINT", "2", "EX", "60", "ENX") == b"*2\r\n:42\r\n:2\r\n"
    assert 0 < r.ttl("k") <= 60
    assert raw.call("INCREX", "k", "BYINT", "3", "EX", "600", "ENX") == b"*2\r\n:45\r\n:3\r\n"
    assert 0 < r.ttl("k") <= 60               # ENX: an expiration already there stays
    assert raw.call("INCREX", "k", "PX", "600000") == b"*2\r\n:46\r\n:1\r\n"
    assert r.ttl("k") > 500
    assert raw.call("INCREX", "k", "PERSIST") == b"*2\r\n:47\r\n:1\r\n"
    assert r.ttl("k") == -1


def test_increx_errors(raw, r):
    r.rpush("l", "x")
    r.set("s", "abc")
    assert raw.call("INCREX", "l") == WRONGTYPE
    assert raw.call("INCREX", "s") == b"-ERR value is not an integer or out of range\r\n"
    assert raw.call("INCREX", "s", "BYFLOAT", "1") == b"-ERR value is not a valid float\r\n"
    assert raw.call("INCREX", "k", "BYINT", "1.5") == b"-ERR value is not an integer or out of range\r\n"
    assert raw.call("INCREX", "k", "BYFLOAT", "x") == b"-ERR value is not a valid float\r\n"
    for bad in (["BYINT", "1", "BYFLOAT", "1"], ["EX", "10", "PX", "10"], ["EX", "10", "PERSIST"], ["ENX"],
                ["BYINT"], ["SATURATE", "SATURATE"], ["NOPE"], ["UBOUND"]):
        assert raw.call("INCREX", "k", *bad) == SYNTAX, bad
    assert raw.call("INCREX", "k", "EX", "0") == error("ERR invalid expire time in 'increx' command")
    assert r.exists("k") == 0


def test_increx_propagates_its_result(server, r):
    r.flushall()
    s = SyncStream(server.port)
    try:
        r.execute_command("INCREX", "k", "BYINT", "5", "EX", "100")
        r.execute_command("INCREX", "k", "BYINT", "5", "UBOUND", "6")     # refused: nothing
        r.execute_command("INCREX", "f", "BYFLOAT", "1.5")
        r.set("end", "1")
        cmds = []
        while not cmds or cmds[-1][:2] != [b"SET", b"end"]:
            c = s.read_command()
            if c[0].upper() != b"SELECT":
                cmds.append(c)
    finally:
        s.close()
    assert cmds[0][:4] == [b"SET", b"k", b"5", b"PXAT"]
    assert cmds[1] == [b"SET", b"f", b"1.5"]
    assert len(cmds) == 3


# -- Redis 7.2: BITCOUNT and BITPOS check their arguments before the key -------------------------

def test_bitcount_bitpos_argument_errors_on_a_missing_key(same_as_valkey):
    same_as_valkey([
        ["BITCOUNT", "nokey", "0", "1", "2"], ["BITCOUNT", "nokey", "a", "b"], ["BITCOUNT", "nokey", "0", "1", "FOO"],
        ["BITCOUNT", "nokey", "0", "1", "BIT"], ["BITCOUNT", "nokey"],
        ["BITPOS", "nokey", "1", "0", "-1", "FOO"], ["BITPOS", "nokey", "1", "a"], ["BITPOS", "nokey", "0", "0", "x"],
        ["BITPOS", "nokey", "2"], ["BITPOS", "nokey", "1", "0", "1", "BIT", "x"], ["BITPOS", "nokey", "0", "0", "1", "BYTE"],
        ["BITPOS", "nokey", "1"], ["SET", "s", "hello"], ["BITCOUNT", "s", "0", "-1", "BIT"], ["BITPOS", "s", "1", "2"],
    ])


def test_bitcount_with_only_a_start_is_a_syntax_error(raw):
    # as Redis (Valkey 8 accepts a lone start)
    assert raw.call("BITCOUNT", "nokey", "0") == SYNTAX
    raw.call("SET", "s", "hello")
    assert raw.call("BITCOUNT", "s", "0") == SYNTAX


def test_msetex_keys_for_acl_and_getkeys(r, raw, start_server):
    assert raw.call("COMMAND", "GETKEYS", "MSETEX", "2", "a", "1", "b", "2", "EX", "10") == (
        b"*2\r\n$1\r\na\r\n$1\r\nb\r\n")
    # every key is checked against the user's key patterns (8.6 fixed a bypass)
    r.execute_command("ACL", "SETUSER", "u", "on", "nopass", "~a*", "+@all")
    try:
        c = r.connection_pool.get_connection("x")
        try:
            c.send_command("AUTH", "u", "x")
            assert c.read_response() == b"OK"
            c.send_command("MSETEX", "2", "a1", "1", "b1", "2")
            with pytest.raises(Exception, match="No permissions to access a key|NOPERM"):
                c.read_response()
            c.send_command("MSETEX", "2", "a1", "1", "a2", "2")
            assert c.read_response() == 1
        finally:
            c.disconnect()
            r.connection_pool.release(c)
    finally:
        r.execute_command("ACL", "DELUSER", "u")
    assert r.exists("b1") == 0
