"""DEBUG DIGEST / DEBUG DIGEST-VALUE give exactly redis-server 7.0's digests.

The same dataset (every type and encoding, TTLs, several databases) is
built in Ophidis and in Debian's redis-server; the whole-dataset digest and
every key's DIGEST-VALUE must be equal, so tests can compare the two kinds
of server (replication between them, DUMP/RESTORE, reloads) by digest.
"""

from __future__ import annotations

import time

ZERO = b"0" * 40

LONG = b"L" * 80                                  # beyond the listpack value limit
BIN = bytes(range(256))


def _commands():
    """(db, argv) of the dataset: every family and encoding."""
    out = []

    def db(n, *argv):
        out.append((n, argv))

    # strings: int-encoded, negative, empty, binary, raw (APPEND), float
    # text (INCRBYFLOAT), big, HyperLogLog
    db(0, "SET", "c2", "50")
    db(0, "SET", "s:plain", "hello world")
    db(0, "SET", "s:neg", "-9223372036854775808")
    db(0, "SET", "s:empty", "")
    db(0, "SET", "s:bin", BIN)
    db(0, "SET", "s:zero", b"\x00")
    db(0, "SET", "s:big", b"x" * 5000)
    db(0, "SET", "s:app", "12")
    db(0, "APPEND", "s:app", "34")
    db(0, "SET", "s:range", "abc")
    db(0, "SETRANGE", "s:range", "10", "z")
    db(0, "INCRBYFLOAT", "s:float", "3.5")
    db(0, "INCR", "s:incr")
    db(0, "PFADD", "hll", "a", "b", "c", "d")
    # lists: small, big (several quicklist nodes), integers, empty element,
    # order from both ends
    db(0, "RPUSH", "l:small", "a", "1", "-3", "", "9223372036854775807", BIN)
    db(0, "LPUSH", "l:small", "head")
    db(0, "RPUSH", "l:big", *[b"%d" % i if i % 3 else b"e%d" % i for i in range(1500)])
    db(0, "RPUSH", "l:big", LONG * 200, "tail")
    db(0, "LPUSH", "l:rev", "1", "2", "3")
    # sets: intset, hashtable (strings, and integers beyond the intset size)
    db(0, "SADD", "set:int", "1", "2", "3", "-5", "9223372036854775807", "-9223372036854775808")
    db(0, "SADD", "set:str", "a", "b", "", BIN)
    db(0, "SADD", "set:bigint", *[b"%d" % (i * 7) for i in range(600)])
    db(0, "SADD", "set:mixed", "1", "x", "10")
    # zsets: listpack and skiplist, with inf/-inf/fractional/negative/large
    # scores and integer members
    # (scores whose text is the same in Redis 7.0's "%.17g" and 7.2+'s Grisu2)
    scores = ["1", "1.5", "-2.25", "+inf", "-inf", "0", "1e20", "12345678901234",
              "3.0000000000000004", "0.375", "-0.5", "4503599627370496", "1e-300", "7"]
    pairs = []
    for i, s in enumerate(scores):
        pairs += [s, "m%d" % i]
    db(0, "ZADD", "z:lp", *pairs, "100", "100", "-1", "neg")
    big = []
    for i in range(200):
        big += [repr(i * 1.375 - 50), "member%d" % i]
    db(0, "ZADD", "z:sl", *big, "inf", "top", "-inf", "bottom", "0.625", "42")
    db(0, "ZADD", "z:long", "2", LONG, "3", "short")
    db(0, "GEOADD", "geo", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania")
    # hashes: listpack, hashtable (many fields, a long value)
    db(0, "HSET", "h:small", "f1", "v1", "f2", "", "num", "123", "", "emptyfield")
    db(0, "HSET", "h:big", *[x for i in range(600) for x in (b"field%d" % i, b"%d" % (i * i))])
    db(0, "HSET", "h:long", "a", LONG, "b", "1")
    # streams: several entries, same and different fields, several nodes,
    # deleted entries, a consumer group (not part of the digest)
    db(0, "XADD", "st", "1-1", "a", "1", "b", "2")
    db(0, "XADD", "st", "1-2", "a", "3", "b", "4")
    db(0, "XADD", "st", "2-0", "other", "x")
    db(0, "XADD", "st", "3-5", "a", "", "b", BIN)
    db(0, "XADD", "st", "18446744073709551615-0", "last", "-12")
    db(0, "XDEL", "st", "1-2")
    db(0, "XGROUP", "CREATE", "st", "g", "0")
    db(0, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "st", ">")
    for i in range(1, 251):
        db(0, "XADD", "st:big", "%d-%d" % (i // 7, i), "f", "%d" % i, "g", "v%d" % i)
    db(0, "XDEL", "st:big", "0-1", "14-100", "14-101", "35-250")
    db(0, "XADD", "st:empty", "5-5", "a", "b")
    db(0, "XDEL", "st:empty", "5-5")
    # keys with a TTL
    db(0, "SET", "ttl:s", "v", "EX", "100000")
    db(0, "HSET", "ttl:h", "a", "1")
    db(0, "PEXPIRE", "ttl:h", "100000000")
    db(0, "RPUSH", "ttl:l", "x")
    db(0, "EXPIREAT", "ttl:l", "4102444800")
    # other databases: the same data elsewhere gives another digest
    db(1, "SET", "c2", "50")
    db(1, "SADD", "set:int", "1", "2")
    db(3, "SET", "only3", "x", "PX", "90000000")
    db(3, "ZADD", "z", "1", "a")
    db(15, "HSET", "h", "k", "v")
    return out


def _build(client):
    for n, argv in _commands():
        client.execute_command("SELECT", n)
        client.execute_command(*argv)
    client.execute_command("SELECT", 0)


def _key(argv):
    if argv[0] == "XGROUP":
        return argv[2]
    if argv[0] == "XREADGROUP":
        return argv[argv.index("STREAMS") + 1]
    return argv[1]


def _keys_by_db():
    keys = {}
    for n, argv in _commands():
        keys.setdefault(n, set()).add(_key(argv))
    return keys


def _digests(client):
    """DEBUG DIGEST, then (db, key) -> DIGEST-VALUE of every key."""
    out = {"all": client.execute_command("DEBUG", "DIGEST")}
    for n, keys in sorted(_keys_by_db().items()):
        keys = sorted(keys, key=lambda k: k if isinstance(k, bytes) else k.encode())
        client.execute_command("SELECT", n)
        values = client.execute_command("DEBUG", "DIGEST-VALUE", *keys, "no-such-key")
        assert values[-1] == ZERO
        out.update(((n, k), v) for k, v in zip(keys, values))
    client.execute_command("SELECT", 0)
    return out


def _assert_same(mine, theirs):
    assert mine.keys() == theirs.keys()
    differ = [k for k in mine if mine[k] != theirs[k]]
    assert not differ, differ


def test_known_values(r):
    # what redis-server 7.0.15 answers (no reference server needed)
    assert r.execute_command("DEBUG", "DIGEST") == ZERO
    assert r.execute_command("DEBUG", "DIGEST-VALUE", "missing") == [ZERO]
    r.set("c2", "50")
    assert r.execute_command("DEBUG", "DIGEST-VALUE", "c2") == [b"1bb192d75f1b48df4f4c55aa045b4f9656a37d28"]
    assert r.execute_command("DEBUG", "DIGEST") == b"f9f1649b7f1dae338494559af77d9005158109ed"
    r.expire("c2", 100)
    assert r.execute_command("DEBUG", "DIGEST-VALUE", "c2") == [b"fd346c288322a28b8e5abe524131800d4c0d3cab"]
    assert r.execute_command("DEBUG", "DIGEST") == b"f5ce0be678b004a6130a4344d7224ec0a3161daa"


def test_empty_and_missing_match_redis(r, ref):
    for c in (r, ref):
        assert c.execute_command("DEBUG", "DIGEST") == ZERO
        assert c.execute_command("DEBUG", "DIGEST-VALUE", "nokey", "other") == [ZERO, ZERO]
        assert c.execute_command("DEBUG", "DIGEST-VALUE") == []


def test_dataset_and_values_match_redis(r, ref):
    _build(r)
    _build(ref)
    # the encodings are those meant (small and big forms of each type)
    for c in (r, ref):
        enc = {k: c.object("encoding", k) for k in ("s:neg", "s:app", "set:int", "set:bigint", "z:lp", "z:sl",
                                                   "h:small", "h:big", "h:long", "z:long")}
        assert enc == {"s:neg": b"int", "s:app": b"raw", "set:int": b"intset", "set:bigint": b"hashtable",
                       "z:lp": b"listpack", "z:sl": b"skiplist", "h:small": b"listpack",
                       "h:big": b"hashtable", "h:long": b"hashtable", "z:long": b"skiplist"}
    mine = _digests(r)
    assert mine["all"] != ZERO
    _assert_same(mine, _digests(ref))


def test_single_keys_match_redis(r, ref):
    """One key at a time: a mismatch names the value at fault."""
    per_key = {}
    for n, argv in _commands():
        per_key.setdefault((n, _key(argv)), []).append(argv)
    for (n, key), cmds in per_key.items():
        got = []
        for c in (r, ref):
            c.flushall()
            c.execute_command("SELECT", n)
            for argv in cmds:
                c.execute_command(*argv)
            got.append((c.execute_command("DEBUG", "DIGEST"), c.execute_command("DEBUG", "DIGEST-VALUE", key)))
            c.execute_command("SELECT", 0)
        assert got[0] == got[1], (n, key)


def test_expire_and_groups(r, ref):
    for c in (r, ref):
        c.set("k", "v")
        c.xadd("s", {"a": "1"}, id="1-0")
    before = r.execute_command("DEBUG", "DIGEST")
    assert before == ref.execute_command("DEBUG", "DIGEST")
    for c in (r, ref):
        c.expire("k", 1000)
        # consumer groups are not part of Redis 7.0's digest
        c.xgroup_create("s", "g", "0")
        c.xreadgroup("g", "bob", {"s": ">"})
    after = r.execute_command("DEBUG", "DIGEST")
    assert after == ref.execute_command("DEBUG", "DIGEST") != before
    for c in (r, ref):
        c.persist("k")
    assert r.execute_command("DEBUG", "DIGEST") == ref.execute_command("DEBUG", "DIGEST") == before


def test_logically_expired_key_still_counts(r, ref):
    # neither server looks the key up: a key past its TTL that nobody
    # touched is still in the digest
    try:
        for c in (r, ref):
            c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
            c.set("gone", "v", px=30)
            c.set("kept", "w")
        time.sleep(0.2)
        assert r.execute_command("DEBUG", "DIGEST-VALUE", "gone") == \
            ref.execute_command("DEBUG", "DIGEST-VALUE", "gone") != [ZERO]
        assert r.execute_command("DEBUG", "DIGEST") == ref.execute_command("DEBUG", "DIGEST")
    finally:
        for c in (r, ref):
            c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_restored_from_redis_dump_and_reloaded(r, ref):
    """Values moved from redis-server by DUMP/RESTORE, then through our RDB
    (DEBUG RELOAD), keep redis-server's digest."""
    _build(ref)
    expected = ref.execute_command("DEBUG", "DIGEST")
    for n in sorted(_keys_by_db()):
        ref.execute_command("SELECT", n)
        r.execute_command("SELECT", n)
        for key in ref.keys():
            ttl = ref.pttl(key)
            r.restore(key, ttl if ttl > 0 else 0, ref.dump(key))
    r.execute_command("SELECT", 0)
    ref.execute_command("SELECT", 0)
    assert r.execute_command("DEBUG", "DIGEST") == expected
    r.execute_command("DEBUG", "RELOAD")
    assert r.execute_command("DEBUG", "DIGEST") == expected
