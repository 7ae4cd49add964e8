"""Hash field expiration (Redis 7.4: HEXPIRE ... HPERSIST, HTTL ...,
HSCAN NOVALUES) and the 8.0 hash commands (HGETEX, HSETEX, HGETDEL).

Where valkey-server 9.1 behaves as Redis the replies are compared byte for
byte (RESP2 and RESP3); Redis's own texts (its error replies, which Valkey
words differently), its listpackex order, propagation, persistence and
expiry are asserted against Redis 7.4's source and 8.x's documentation."""

import os
import time

import redis

from ophidis.tools import check_rdb
from support.replication import SyncStream
from support.wait import wait_until

FUTURE_S = 4102444800          # 2100-01-01
FUTURE_MS = FUTURE_S * 1000


# -- replies, byte for byte with valkey -------------------------------------------------------

def test_hexpire_family_same_as_valkey(same_as_valkey):
    same_as_valkey([
        ["HSET", "h", "a", "1", "b", "2", "c", "3"],
        ["HEXPIREAT", "h", str(FUTURE_S), "FIELDS", "2", "a", "nosuch"],
        ["HPEXPIREAT", "h", str(FUTURE_MS + 5000), "NX", "FIELDS", "2", "a", "b"],
        ["HEXPIRETIME", "h", "FIELDS", "4", "a", "b", "c", "nosuch"],
        ["HPEXPIRETIME", "h", "FIELDS", "3", "a", "b", "c"],
        ["HPEXPIREAT", "h", str(FUTURE_MS + 10000), "GT", "FIELDS", "3", "a", "b", "c"],
        ["HPEXPIREAT", "h", str(FUTURE_MS + 1000), "LT", "FIELDS", "3", "a", "b", "c"],
        ["HPEXPIREAT", "h", str(FUTURE_MS + 2000), "XX", "FIELDS", "2", "a", "b"],
        ["HPEXPIRETIME", "h", "FIELDS", "3", "a", "b", "c"],
        ["HEXPIRE", "h", "1000", "FIELDS", "1", "c"],
        ["HTTL", "h", "FIELDS", "1", "c"],
        ["HPERSIST", "h", "FIELDS", "3", "a", "c", "nosuch"],
        ["HPERSIST", "h", "FIELDS", "1", "a"],
        ["HEXPIRETIME", "h", "FIELDS", "2", "a", "b"],
        ["HEXPIRE", "h", "0", "FIELDS", "1", "a"],
        ["HGET", "h", "a"], ["HLEN", "h"],
        ["HPEXPIRE", "h", "0", "FIELDS", "2", "b", "c"],
        ["EXISTS", "h"],
        ["HEXPIRE", "nokey", "10", "FIELDS", "2", "a", "b"],
        ["HTTL", "nokey", "FIELDS", "1", "a"], ["HPERSIST", "nokey", "FIELDS", "1", "a"],
        ["HEXPIRETIME", "nokey", "FIELDS", "1", "a"],
        ["SET", "s", "v"], ["HEXPIRE", "s", "10", "FIELDS", "1", "a"], ["HTTL", "s", "FIELDS", "1", "a"],
        ["HEXPIRE", "h"], ["HTTL", "h", "FIELDS", "1"],
        ["HEXPIRE", "h", "abc", "FIELDS", "1", "a"],
        ["HEXPIRE", "h", "9999999999999999", "FIELDS", "1", "a"],
    ])


def test_hgetex_hsetex_hgetdel_same_as_valkey(same_as_valkey):
    same_as_valkey([
        ["HSETEX", "h", "FIELDS", "2", "a", "1", "b", "2"],
        ["HSETEX", "h", "FNX", "FIELDS", "1", "a", "x"],
        ["HSETEX", "h", "FXX", "FIELDS", "2", "a", "x", "zz", "y"],
        ["HSETEX", "h", "FXX", "PXAT", str(FUTURE_MS), "FIELDS", "2", "a", "10", "b", "20"],
        ["HPEXPIRETIME", "h", "FIELDS", "2", "a", "b"],
        ["HSETEX", "h", "KEEPTTL", "FIELDS", "1", "a", "11"],
        ["HSETEX", "h", "FIELDS", "1", "b", "21"],
        ["HPEXPIRETIME", "h", "FIELDS", "2", "a", "b"],
        ["HSETEX", "h", "FNX", "EX", "100", "FIELDS", "1", "c", "3"],
        ["HTTL", "h", "FIELDS", "2", "b", "c"], ["HPEXPIRETIME", "h", "FIELDS", "1", "a"],
        ["HGETEX", "h", "FIELDS", "3", "a", "b", "nosuch"],
        ["HGETEX", "h", "PERSIST", "FIELDS", "2", "a", "c"],
        ["HTTL", "h", "FIELDS", "3", "a", "b", "c"],
        ["HGETEX", "h", "EXAT", str(FUTURE_S), "FIELDS", "2", "b", "nosuch"],
        ["HEXPIRETIME", "h", "FIELDS", "1", "b"],
        ["HGETEX", "h", "PX", "0", "FIELDS", "1", "b"],
        ["HEXISTS", "h", "b"],
        ["HGETDEL", "h", "FIELDS", "2", "a", "nosuch"],
        ["HGETDEL", "h", "FIELDS", "1", "c"], ["EXISTS", "h"],
        ["HGETDEL", "nokey", "FIELDS", "2", "a", "b"], ["HGETEX", "nokey", "EX", "1", "FIELDS", "1", "a"],
        ["HSETEX", "h2", "EX", "0", "FIELDS", "1", "a", "1"], ["EXISTS", "h2"],
        ["SET", "s", "v"], ["HGETEX", "s", "FIELDS", "1", "a"], ["HGETDEL", "s", "FIELDS", "1", "a"],
        ["HSETEX", "s", "FIELDS", "1", "a", "b"],
    ])


def test_hscan_novalues_same_as_valkey(same_as_valkey):
    same_as_valkey([
        ["HSET", "h", "a", "1", "b", "2", "c", "3"],
        ["HSCAN", "h", "0", "NOVALUES"], ["HSCAN", "h", "0", "MATCH", "a*", "NOVALUES"],
        ["HSCAN", "h", "0", "NOVALUES", "COUNT", "10"], ["HSCAN", "h", "0", "novalues", "MATCH", "*"],
        ["HSCAN", "h", "0", "MATCH", "novalues"], ["HSCAN", "nokey", "0", "NOVALUES"],
        ["SADD", "s", "a"], ["SSCAN", "s", "0", "NOVALUES"], ["ZADD", "z", "1", "a"], ["ZSCAN", "z", "0", "NOVALUES"],
    ])


def test_big_hash_with_ttls_same_as_valkey(same_as_valkey):
    fields = []
    for i in range(600):
        fields += ["f%d" % i, "v%d" % i]
    same_as_valkey([
        ["HSET", "big"] + fields,
        ["HEXPIREAT", "big", str(FUTURE_S), "FIELDS", "3", "f1", "f2", "f599"],
        ["HEXPIRETIME", "big", "FIELDS", "3", "f1", "f3", "f599"],
        ["HPERSIST", "big", "FIELDS", "2", "f1", "f3"],
        ["HPEXPIRE", "big", "0", "FIELDS", "1", "f2"], ["HLEN", "big"], ["HGET", "big", "f2"],
        ["HGETDEL", "big", "FIELDS", "2", "f3", "f599"], ["HLEN", "big"],
    ])


# -- Redis's texts and rules --------------------------------------------------------------

def test_errors_are_redis_texts(raw):
    raw.call("HSET", "h", "a", "1")
    assert raw.call("HEXPIRE", "h", "10", "FIELDS", "2", "a") == \
        b"-ERR The `numfields` parameter must match the number of arguments\r\n"
    assert raw.call("HEXPIRE", "h", "10", "FIELDS", "0", "a") == \
        b"-ERR Parameter `numFields` should be greater than 0\r\n"
    assert raw.call("HEXPIRE", "h", "10", "FIELDS", "x", "a") == \
        b"-ERR Parameter `numFields` should be greater than 0\r\n"
    assert raw.call("HEXPIRE", "h", "10", "FIELD", "1", "a") == \
        b"-ERR Mandatory argument FIELDS is missing or not at the right position\r\n"
    assert raw.call("HEXPIRE", "h", "10", "NX", "XX", "FIELDS", "1", "a") == \
        b"-ERR Mandatory argument FIELDS is missing or not at the right position\r\n"
    assert raw.call("HEXPIRE", "h", "-1", "FIELDS", "1", "a") == \
        b"-ERR invalid expire time, must be >= 0\r\n"
    assert raw.call("HPEXPIREAT", "h", str(1 << 46), "FIELDS", "1", "a") == \
        b"-ERR invalid expire time in 'hpexpireat' command\r\n"
    assert raw.call("HTTL", "h", "FIELDS", "0", "a") == \
        b"-ERR Number of fields must be a positive integer\r\n"
    assert raw.call("HPERSIST", "h", "FIELDS", "2", "a") == \
        b"-ERR The `numfields` parameter must match the number of arguments\r\n"
    assert raw.call("HTTL", "h", "NOFIELDS", "1", "a") == \
        b"-ERR Mandatory argument FIELDS is missing or not at the right position\r\n"
    assert raw.call("HSETEX", "h", "FNX", "FXX", "FIELDS", "1", "a", "1") == \
        b"-ERR Only one of FXX or FNX arguments can be specified\r\n"
    assert raw.call("HSETEX", "h", "EX", "1", "KEEPTTL", "FIELDS", "1", "a", "1") == \
        b"-ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified\r\n"
    assert raw.call("HSETEX", "h", "FIELDS", "2", "a", "1") == \
        b"-ERR The `numfields` parameter must match the number of arguments\r\n"
    assert raw.call("HGETEX", "h", "EX", "1", "PERSIST", "FIELDS", "1", "a") == \
        b"-ERR Only one of EX, PX, EXAT, PXAT or PERSIST arguments can be specified\r\n"
    assert raw.call("HGETEX", "h", "EX", "-1", "FIELDS", "1", "a") == \
        b"-ERR invalid expire time, must be >= 0\r\n"
    assert raw.call("HGETEX", "h", "BAD", "FIELDS", "1", "a") == b"-ERR syntax error\r\n"
    assert raw.call("HGETDEL", "h", "FIELDS", "0", "a") == \
        b"-ERR Number of fields must be a positive integer\r\n"
    # nothing changed by the refused commands
    assert raw.call_value("HTTL", "h", "FIELDS", "1", "a") == [-1]
    # HTTL and HEXPIRETIME round up (a field due in 0.5 s has a TTL of 1)
    raw.call("HPEXPIREAT", "h", str(FUTURE_MS + 10), "FIELDS", "1", "a")
    assert raw.call_value("HEXPIRETIME", "h", "FIELDS", "1", "a") == [FUTURE_S + 1]
    raw.call("HPEXPIRE", "h", "100500", "FIELDS", "1", "a")
    assert raw.call_value("HTTL", "h", "FIELDS", "1", "a") == [101]


def test_listpackex_encoding_and_order(r):
    """A small hash with field TTLs is Redis's listpackex: fields with a TTL
    first, by expiry time, the others after them in their order."""
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3", "d": "4"})
    assert r.object("encoding", "h") == b"listpack"
    r.execute_command("HPEXPIREAT", "h", FUTURE_MS + 20, "FIELDS", 1, "c")
    assert r.object("encoding", "h") == b"listpackex"
    assert r.hkeys("h") == [b"c", b"a", b"b", b"d"]
    r.execute_command("HPEXPIREAT", "h", FUTURE_MS + 10, "FIELDS", 1, "d")
    r.execute_command("HPEXPIREAT", "h", FUTURE_MS + 20, "FIELDS", 1, "a")   # before c (equal time)
    assert r.hkeys("h") == [b"d", b"a", b"c", b"b"]
    r.execute_command("HPERSIST", "h", "FIELDS", 1, "d")                  # to the end
    assert r.hkeys("h") == [b"a", b"c", b"b", b"d"]
    r.hset("h", "c", "33")                                                  # HSET drops the TTL
    assert r.hkeys("h") == [b"a", b"b", b"d", b"c"]
    assert r.execute_command("HTTL", "h", "FIELDS", 2, "a", "c")[1] == -1
    r.hincrby("h", "a", 5)                                                   # HINCRBY keeps it
    assert r.execute_command("HPEXPIRETIME", "h", "FIELDS", 1, "a") == [FUTURE_MS + 20]
    assert r.hgetall("h") == {b"a": b"6", b"b": b"2", b"d": b"4", b"c": b"33"}
    assert r.object("encoding", "h") == b"listpackex"
    r.config_set("hash-max-listpack-entries", 2)
    try:
        r.hset("h", "e", "5")
        assert r.object("encoding", "h") == b"hashtable"
        assert r.execute_command("HPEXPIRETIME", "h", "FIELDS", 1, "a") == [FUTURE_MS + 20]
    finally:
        r.config_set("hash-max-listpack-entries", 128)


def test_lazy_expiry_of_fields(r):
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 0)
    try:
        r.config_set("notify-keyspace-events", "KEA")
        p = r.pubsub()
        p.psubscribe("__keyevent@0__:*")
        wait_until(lambda: p.get_message(timeout=0.1) is not None, what="psubscribe")
        r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
        assert r.execute_command("HPEXPIRE", "h", 30, "FIELDS", 2, "a", "b") == [1, 1]
        wait_until(lambda: r.execute_command("HTTL", "h", "FIELDS", 1, "a") == [-2], what="the TTL")
        # not reclaimed yet: HLEN counts them, the walks skip them
        assert r.hlen("h") == 3
        assert r.hgetall("h") == {b"c": b"3"}
        assert r.hkeys("h") == [b"c"] and r.hvals("h") == [b"3"]
        assert r.hscan("h") == (0, {b"c": b"3"})
        assert r.execute_command("HPERSIST", "h", "FIELDS", 1, "a") == [-2]
        # a read of the field deletes it
        assert r.hget("h", "a") is None
        assert r.hlen("h") == 2
        assert r.hexists("h", "b") is False and r.hlen("h") == 1
        assert r.info("stats")["expired_subkeys"] >= 2
        r.execute_command("HPEXPIRE", "h", 20, "FIELDS", 1, "c")
        wait_until(lambda: r.execute_command("HTTL", "h", "FIELDS", 1, "c") == [-2], what="the TTL")
        assert r.hmget("h", "c", "x") == [None, None]
        assert r.exists("h") == 0
        events = []

        def got():
            m = p.get_message(timeout=0.1)
            while m is not None:
                if m["type"] == "pmessage":
                    events.append(m["channel"].split(b":", 1)[1])
                m = p.get_message(timeout=0.01)
            return b"del" in events
        wait_until(got, what="the events")
        assert events.count(b"hexpired") == 3 and events[-2:] == [b"hexpired", b"del"]
        p.close()
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 1)


def test_active_expiry_under_load(r):
    """Fields go within a few active-expiry cycles of their time, the hash
    with its last field; nothing reads them meanwhile (HLEN does not
    expire)."""
    n = 300
    for k in range(5):
        r.hset("h%d" % k, mapping={"f%d" % i: "v" for i in range(n)})
        r.execute_command("HPEXPIRE", "h%d" % k, 100, "FIELDS", n // 2, *["f%d" % i for i in range(0, n, 2)])
    r.hset("keep", "x", "1")
    r.execute_command("HPEXPIRE", "keep", 100000, "FIELDS", 1, "x")
    t0 = time.time()
    wait_until(lambda: all(r.hlen("h%d" % k) == n // 2 for k in range(5)), timeout=10, what="active expiry")
    assert time.time() - t0 < 5.0       # (hz 10: a cycle every 100 ms; a loaded machine)
    assert r.info("keyspace")["db0"]["subexpiry"] == 1
    for k in range(5):
        r.execute_command("HPEXPIRE", "h%d" % k, 50, "FIELDS", n // 2, *["f%d" % i for i in range(1, n, 2)])
    wait_until(lambda: r.dbsize() == 1, timeout=10, what="the emptied hashes deleted")
    assert r.execute_command("HTTL", "keep", "FIELDS", 1, "x")[0] > 0


def test_hrandfield_and_hsetnx_and_hincrby_see_expired_fields_gone(r):
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 0)
    try:
        r.hset("h", mapping={"a": "1", "b": "2"})
        r.execute_command("HPEXPIRE", "h", 10, "FIELDS", 1, "a")
        wait_until(lambda: r.execute_command("HTTL", "h", "FIELDS", 1, "a") == [-2], what="the TTL")
        assert r.hrandfield("h", -10) == [b"b"] * 10
        assert r.hlen("h") == 1
        r.hset("h", "a", "1")
        r.execute_command("HPEXPIRE", "h", 10, "FIELDS", 1, "a")
        wait_until(lambda: r.execute_command("HTTL", "h", "FIELDS", 1, "a") == [-2], what="the TTL")
        assert r.hsetnx("h", "a", "new") == 1 and r.hget("h", "a") == b"new"
        r.execute_command("HPEXPIRE", "h", 10, "FIELDS", 1, "a")
        wait_until(lambda: r.execute_command("HTTL", "h", "FIELDS", 1, "a") == [-2], what="the TTL")
        assert r.hincrby("h", "a", 3) == 3
        assert r.execute_command("HTTL", "h", "FIELDS", 1, "a") == [-1]
        assert r.hstrlen("h", "b") == 1
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 1)


def test_copy_rename_move_dump_restore_keep_field_ttls(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    r.execute_command("HPEXPIREAT", "h", FUTURE_MS, "FIELDS", 1, "a")
    r.copy("h", "c")
    r.rename("h", "h2")
    r.move("c", 1)
    r1 = redis.Redis(port=r.connection_pool.connection_kwargs["port"], db=1)
    assert r.execute_command("HPEXPIRETIME", "h2", "FIELDS", 2, "a", "b") == [FUTURE_MS, -1]
    assert r1.execute_command("HPEXPIRETIME", "c", "FIELDS", 2, "a", "b") == [FUTURE_MS, -1]
    payload = r.dump("h2")
    assert payload[0] == 25 and payload[-10:-8] == b"\x0c\x00"       # RDB_TYPE_HASH_LISTPACK_EX, version 12
    r.restore("h3", 0, payload)
    assert r.execute_command("HPEXPIRETIME", "h3", "FIELDS", 2, "a", "b") == [FUTURE_MS, -1]
    assert r.object("encoding", "h3") == b"listpackex"
    r.hset("plain", "x", "1")
    assert r.dump("plain")[-10:-8] == b"\x0a\x00"                    # no TTL: still version 10
    # a renamed hash's fields still expire actively
    r.execute_command("HPEXPIRE", "h3", 1000, "FIELDS", 2, "a", "b")
    r.rename("h3", "h4")
    wait_until(lambda: r.exists("h4") == 0, what="h4's fields expired")
    r1.flushdb()
    r1.close()


# -- persistence --------------------------------------------------------------------------

def _with_ttls(c):
    c.hset("small", mapping={"a": "1", "b": "2", "c": "3"})
    c.execute_command("HPEXPIREAT", "small", FUTURE_MS + 7, "FIELDS", 2, "c", "a")
    c.hset("big", mapping={"f%d" % i: "v%d" % i for i in range(300)})
    c.config_set("hash-max-listpack-entries", 128)
    c.hset("big2", mapping={"f%d" % i: "v%d" % i for i in range(300)})
    c.execute_command("HPEXPIREAT", "big2", FUTURE_MS, "FIELDS", 2, "f3", "f200")
    c.execute_command("HPEXPIREAT", "big2", FUTURE_MS + 99, "FIELDS", 1, "f4")


def _ttl_state(c, ordered=True):
    """Encodings, fields (in order unless ``ordered`` is False: an AOF
    rewrite sets the TTLs field by field, which reorders a listpackex),
    field expiry times, contents."""
    out = {}
    for k in (b"small", b"big2"):
        fields = c.hkeys(k) if ordered else sorted(c.hkeys(k))
        out[k] = (c.object("encoding", k), fields,
                  c.execute_command("HPEXPIRETIME", k, "FIELDS", len(fields), *fields), c.hgetall(k))
    return out


def test_rdb_round_trip_and_version(start_server):
    s = start_server("--enable-debug-command", "yes")
    c = s.client()
    c.hset("plain", "a", "1")
    c.save()
    with open(os.path.join(s.dir, "dump.rdb"), "rb") as f:
        assert f.read(9) == b"REDIS0010"
    _with_ttls(c)
    before = _ttl_state(c)
    c.save()
    with open(os.path.join(s.dir, "dump.rdb"), "rb") as f:
        assert f.read(9) == b"REDIS0012"
    assert c.execute_command("DEBUG", "RELOAD") == b"OK"
    assert _ttl_state(c) == before
    assert c.info("keyspace")["db0"]["subexpiry"] == 2
    # ophidis-check-rdb accepts the file
    s.stop()
    s2 = start_server("--enable-debug-command", "yes", "--hash-max-listpack-entries", "128", cwd=s.dir)
    c2 = s2.client()
    assert _ttl_state(c2) == before
    # all TTLs gone: version 10 again
    c2.execute_command("HPERSIST", "small", "FIELDS", 2, "a", "c")
    c2.execute_command("HPERSIST", "big2", "FIELDS", 3, "f3", "f4", "f200")
    c2.save()
    with open(os.path.join(s.dir, "dump.rdb"), "rb") as f:
        assert f.read(9) == b"REDIS0010"


def test_check_rdb_accepts_field_ttls(start_server):
    s = start_server()
    c = s.client()
    _with_ttls(c)
    c.save()
    s.stop()
    assert check_rdb.main([os.path.join(s.dir, "dump.rdb")]) == 0


def _rdb_string(b):
    assert len(b) < 64
    return bytes((len(b),)) + b


def _lp(entries):
    """A listpack of small strings and integers (Redis's listpack format)."""
    body = b""
    for e in entries:
        if isinstance(e, int):
            enc = b"\xf4" + e.to_bytes(8, "little", signed=True)
            body += enc + bytes((len(enc),))
        else:
            enc = bytes((0x80 | len(e),)) + e
            body += enc + bytes((len(enc),))
    total = 6 + len(body) + 1
    return total.to_bytes(4, "little") + len(entries).to_bytes(2, "little") + body + b"\xff"


def test_loads_a_redis_74_file_built_from_the_format(start_server):
    """A file as Redis 7.4 writes it (RDB version 12): a listpackex hash
    (type 25: the earliest expiry, then field, value, time triples) and a
    hash table with metadata (type 24: the earliest expiry, then each
    field's TTL relative to it plus one, 0 for none)."""
    lo = FUTURE_MS
    lp = _lp([b"a", b"1", lo, b"b", b"2", 0])
    t25 = b"\x19" + _rdb_string(b"lpx") + lo.to_bytes(8, "little") + _rdb_string(lp)
    t24 = (b"\x18" + _rdb_string(b"meta") + lo.to_bytes(8, "little") + b"\x03"
           + b"\x01" + _rdb_string(b"x") + _rdb_string(b"10")          # lo
           + b"\x00" + _rdb_string(b"y") + _rdb_string(b"20")          # no TTL
           + b"\x40\x65" + _rdb_string(b"z") + _rdb_string(b"30"))     # lo + 100
    body = b"REDIS0012" + b"\xfe\x00\xfb\x02\x00" + t25 + t24 + b"\xff"
    s = start_server()
    s.stop()
    with open(os.path.join(s.dir, "dump.rdb"), "wb") as f:
        f.write(body + b"\x00" * 8)      # checksum 0: not checked
    s2 = start_server(cwd=s.dir)
    c = s2.client()
    assert c.hgetall("lpx") == {b"a": b"1", b"b": b"2"}
    assert c.execute_command("HPEXPIRETIME", "lpx", "FIELDS", 2, "a", "b") == [lo, -1]
    assert c.object("encoding", "lpx") == b"listpackex"
    assert c.execute_command("HPEXPIRETIME", "meta", "FIELDS", 3, "x", "y", "z") == [lo, -1, lo + 100]
    assert c.hkeys("meta") == [b"x", b"z", b"y"]
    assert c.info("keyspace")["db0"]["subexpiry"] == 2


def test_aof_rewrite_and_reload_keep_field_ttls(start_server):
    s = start_server("--appendonly", "yes", "--enable-debug-command", "yes")
    c = s.client()
    _with_ttls(c)
    c.hset("gone", "x", "1")
    c.execute_command("HPEXPIRE", "gone", 1, "FIELDS", 1, "x")
    before = _ttl_state(c, False)
    c.execute_command("DEBUG", "LOADAOF")
    assert _ttl_state(c, False) == before
    c.config_set("aof-use-rdb-preamble", "no")
    c.bgrewriteaof()
    wait_until(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0
               and c.info("persistence")["aof_rewrite_scheduled"] == 0, what="the rewrite")
    c.execute_command("DEBUG", "LOADAOF")
    assert _ttl_state(c, False) == before
    assert c.exists("gone") == 0


# -- propagation --------------------------------------------------------------------------

def test_propagation_as_redis(server, r):
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    st = SyncStream(server.port)
    try:
        r.execute_command("HEXPIRE", "h", 100, "NX", "FIELDS", 3, "a", "nosuch", "b")
        cmd = st.read_command()
        assert cmd[0] == b"SELECT" or cmd[0] == b"HPEXPIREAT"
        if cmd[0] == b"SELECT":
            cmd = st.read_command()
        assert cmd[:2] == [b"HPEXPIREAT", b"h"] and cmd[3:] == [b"NX", b"FIELDS", b"2", b"a", b"b"]
        assert abs(int(cmd[2]) - (time.time() * 1000 + 100000)) < 5000
        # condition not met for all: nothing propagated
        r.execute_command("HEXPIRE", "h", 100, "NX", "FIELDS", 1, "a")
        # a time in the past: HDEL (with the set field's HPEXPIREAT in one unit)
        r.execute_command("HPEXPIREAT", "h", 1, "FIELDS", 1, "a")
        assert st.read_command() == [b"HDEL", b"h", b"a"]
        r.execute_command("HPEXPIREAT", "h", FUTURE_MS, "FIELDS", 1, "c")
        assert st.read_command() == [b"HPEXPIREAT", b"h", b"%d" % FUTURE_MS, b"FIELDS", b"1", b"c"]
        r.execute_command("HPERSIST", "h", "FIELDS", 1, "c")
        assert st.read_command() == [b"HPERSIST", b"h", b"FIELDS", b"1", b"c"]
        r.execute_command("HGETEX", "h", "PXAT", FUTURE_MS, "FIELDS", 2, "b", "nosuch")
        assert st.read_command() == [b"HPEXPIREAT", b"h", b"%d" % FUTURE_MS, b"FIELDS", b"1", b"b"]
        r.execute_command("HGETEX", "h", "PERSIST", "FIELDS", 1, "b")
        assert st.read_command() == [b"HPERSIST", b"h", b"FIELDS", b"1", b"b"]
        r.execute_command("HSETEX", "h", "FNX", "EX", 100, "FIELDS", 1, "d", "4")
        cmd = st.read_command()
        assert cmd[:4] == [b"HSETEX", b"h", b"FNX", b"PXAT"] and cmd[5:] == [b"FIELDS", b"1", b"d", b"4"]
        r.execute_command("HGETDEL", "h", "FIELDS", 2, "d", "nosuch")
        assert st.read_command() == [b"HDEL", b"h", b"d"]
        # active expiry: HDEL per field
        r.execute_command("HPEXPIRE", "h", 20, "FIELDS", 1, "b")
        assert st.read_command()[0] == b"HPEXPIREAT"
        assert st.read_command() == [b"HDEL", b"h", b"b"]
        # lazy expiry by a read
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 0)
        r.execute_command("HPEXPIRE", "h", 20, "FIELDS", 1, "c")
        assert st.read_command()[0] == b"HPEXPIREAT"
        wait_until(lambda: r.execute_command("HTTL", "h", "FIELDS", 1, "c") == [-2], what="the TTL")
        assert r.hget("h", "c") is None
        assert st.read_command() == [b"HDEL", b"h", b"c"]
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 1)
        st.close()


def _dataset(c):
    out = {}
    for k in sorted(c.keys("*")):
        fields = sorted(c.hkeys(k))
        out[k] = (c.hgetall(k), c.execute_command("HPEXPIRETIME", k, "FIELDS", len(fields), *fields)
                  if fields else [])
    return out


def test_replica_and_aof_agree_with_the_master_after_expiry(start_server):
    m = start_server("--appendonly", "yes", "--enable-debug-command", "yes")
    mc = m.client()
    rep = start_server("--replicaof", "127.0.0.1", str(m.port))
    rc = rep.client()
    wait_until(lambda: rc.info("replication").get("master_link_status") == "up", what="the link")
    for k in range(20):
        mc.hset("h%d" % k, mapping={"f%d" % i: "v%d" % i for i in range(20)})
        mc.execute_command("HPEXPIRE", "h%d" % k, 50 + k * 5, "FIELDS", 10, *["f%d" % i for i in range(0, 20, 2)])
        mc.execute_command("HPEXPIREAT", "h%d" % k, FUTURE_MS, "FIELDS", 1, "f1")
        mc.execute_command("HSETEX", "s%d" % k, "PX", 60, "FIELDS", 1, "x", "y")
        mc.execute_command("HGETEX", "h%d" % k, "PX", 40, "FIELDS", 1, "f3")
    wait_until(lambda: mc.dbsize() == 20 and all(mc.hlen("h%d" % k) == 9 for k in range(20)),
               timeout=15, what="the master's expiry")
    wait_until(lambda: mc.info("replication")["master_repl_offset"]
               == rc.info("replication")["slave_repl_offset"], what="the stream")
    # the replica deleted nothing itself: what it has is what the master sent
    assert _dataset(rc) == _dataset(mc)
    assert all(rc.hlen("h%d" % k) == 9 for k in range(20))
    # the AOF replayed gives the same
    expect = _dataset(mc)
    mc.execute_command("DEBUG", "LOADAOF")
    assert _dataset(mc) == expect


def test_propagation_in_multi_and_scripts(server, r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    st = SyncStream(server.port)
    try:
        p = r.pipeline(transaction=True)
        p.execute_command("HPEXPIREAT", "h", 1, "FIELDS", 1, "a")
        p.execute_command("HEXPIREAT", "h", FUTURE_S, "FIELDS", 2, "b", "nosuch")
        p.execute_command("HPERSIST", "h", "FIELDS", 1, "nosuch")
        assert p.execute() == [[2], [1, -2], [-2]]
        cmds = [st.read_command() for _ in range(5)]
        # Redis 7.2+: the SELECT of a new replica's stream goes inside the MULTI
        assert cmds == [[b"MULTI"], [b"SELECT", b"0"], [b"HDEL", b"h", b"a"],
                        [b"HPEXPIREAT", b"h", b"%d" % FUTURE_MS, b"FIELDS", b"1", b"b"], [b"EXEC"]]
        assert r.eval("return redis.call('HGETEX', KEYS[1], 'PERSIST', 'FIELDS', 1, 'b')", 1, "h") == [b"2"]
        assert st.read_command() == [b"HPERSIST", b"h", b"FIELDS", b"1", b"b"]
    finally:
        st.close()


def test_replica_readers_see_expired_fields_gone_until_the_master_deletes(start_server):
    m = start_server("--enable-debug-command", "yes")
    mc = m.client()
    rep = start_server("--replicaof", "127.0.0.1", str(m.port))
    rc = rep.client()
    wait_until(lambda: rc.info("replication").get("master_link_status") == "up", what="the link")
    mc.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 0)
    mc.hset("h", mapping={"a": "1", "b": "2"})
    mc.execute_command("HPEXPIRE", "h", 30, "FIELDS", 1, "a")
    mc.set("marker", "1")       # the replica has the hash and its TTL once it has this
    wait_until(lambda: rc.get("marker") == b"1", what="the replica's copy")
    wait_until(lambda: rc.execute_command("HTTL", "h", "FIELDS", 1, "a") == [-2], what="the TTL on the replica")
    assert rc.hget("h", "a") is None and rc.hgetall("h") == {b"b": b"2"}
    assert rc.hlen("h") == 2                    # nothing deleted by the replica
    assert mc.hget("h", "a") is None            # the master's read deletes it: HDEL
    wait_until(lambda: rc.hlen("h") == 1, what="the master's HDEL")
    assert rc.info("stats")["expired_subkeys"] == 0


def _messages(p, n):
    out = []

    def got():
        m = p.get_message(timeout=0.1)
        while m is not None:
            if m["type"] == "pmessage":
                out.append((m["channel"], m["data"]))
            m = p.get_message(timeout=0.01)
        return len(out) >= n
    wait_until(got, what="%d notifications" % n)
    return out


def test_subkey_notifications(r):
    """Redis 8.8's subkey channels (notify-keyspace-events S, T, I, V with
    the event's class): the hash events name the fields they touched."""
    r.config_set("notify-keyspace-events", "hSTIV")
    assert r.config_get("notify-keyspace-events")["notify-keyspace-events"] == "hSTIV"
    p = r.pubsub()
    p.psubscribe("__sub*")
    wait_until(lambda: p.get_message(timeout=0.1) is not None, what="psubscribe")
    r.hset("h", mapping={"a": "1", "bc": "2"})
    assert _messages(p, 5) == [
        (b"__subkeyspace@0__:h", b"hset|1:a,2:bc"),
        (b"__subkeyevent@0__:hset", b"1:h|1:a,2:bc"),
        (b"__subkeyspaceitem@0__:h\na", b"hset"),
        (b"__subkeyspaceitem@0__:h\nbc", b"hset"),
        (b"__subkeyspaceevent@0__:hset|h", b"1:a,2:bc"),
    ]
    r.config_set("notify-keyspace-events", "hS")
    r.execute_command("HEXPIRE", "h", 100, "FIELDS", 2, "a", "nosuch")
    r.execute_command("HPERSIST", "h", "FIELDS", 2, "a", "bc")
    r.hincrby("h", "bc", 1)
    r.hdel("h", "a", "x")
    r.execute_command("HGETDEL", "h", "FIELDS", 1, "bc")
    assert _messages(p, 5) == [
        (b"__subkeyspace@0__:h", b"hexpire|1:a"), (b"__subkeyspace@0__:h", b"hpersist|1:a"),
        (b"__subkeyspace@0__:h", b"hincrby|2:bc"), (b"__subkeyspace@0__:h", b"hdel|1:a"),
        (b"__subkeyspace@0__:h", b"hdel|2:bc"),
    ]
    # not without the class, and the subkey flags alone send nothing on K/E channels
    r.config_set("notify-keyspace-events", "S")
    r.hset("h", "z", "1")
    r.config_set("notify-keyspace-events", "hS")
    r.hset("h", "y", "1")
    assert _messages(p, 1) == [(b"__subkeyspace@0__:h", b"hset|1:y")]
    p.close()


def test_sort_by_and_get_hash_fields_skip_expired_ones(r):
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 0)
    try:
        r.rpush("l", "1", "2")
        r.hset("w_1", mapping={"f": "20", "g": "a"})
        r.hset("w_2", mapping={"f": "10", "g": "b"})
        r.execute_command("HPEXPIRE", "w_2", 10, "FIELDS", 1, "g")
        wait_until(lambda: r.execute_command("HTTL", "w_2", "FIELDS", 1, "g") == [-2], what="the TTL")
        assert r.sort("l", by="w_*->f", get="w_*->g") == [None, b"a"]
        assert r.hlen("w_2") == 2
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 1)


def test_debug_digest_marks_fields_with_ttls(start_server):
    """As Redis 7.4's debug.c: a field with a TTL changes the hash's digest
    (Valkey's digest leaves TTLs out)."""
    s = start_server("--enable-debug-command", "yes")
    c = s.client()
    c.hset("h", mapping={"a": "1", "b": "2"})
    plain = c.execute_command("DEBUG", "DIGEST-VALUE", "h")
    c.execute_command("HEXPIREAT", "h", FUTURE_S, "FIELDS", 1, "a")
    marked = c.execute_command("DEBUG", "DIGEST-VALUE", "h")
    assert marked != plain
    c.execute_command("HEXPIREAT", "h", FUTURE_S + 5, "FIELDS", 1, "a")
    assert c.execute_command("DEBUG", "DIGEST-VALUE", "h") == marked      # the time itself is not in it
    c.execute_command("HPERSIST", "h", "FIELDS", 1, "a")
    assert c.execute_command("DEBUG", "DIGEST-VALUE", "h") == plain
