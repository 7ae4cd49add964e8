"""Helpers shared by the RDB tests: a dataset with every type and encoding
built in Debian's redis-server, decoding DUMP payloads for semantic
comparison.  (Private redis-server processes: support.servers.RedisServerProc.)"""

from __future__ import annotations

import os

import redis

from ophidis.persistence.rdbpayload import load_payload
from ophidis.types.containers import HashValue, ListValue, SetValue
from ophidis.types.zset import ZSetValue


def build_dataset(r: redis.Redis):
    """Every type in every encoding Redis 7.0 uses, TTLs, several DBs.
    Returns the list of (db, key)."""
    keys = []

    def add(db, key):
        keys.append((db, key))

    r.flushall()
    c = r
    # strings: int encodings (8/16/32 bit), 64-bit ints as text, embstr, raw, LZF, empty, binary
    for k, v in [(b"s:int8", b"-7"), (b"s:int16", b"3000"), (b"s:int32", b"-2000000000"),
                 (b"s:int64", b"9223372036854775807"), (b"s:lead0", b"007"), (b"s:empty", b""),
                 (b"s:short", b"hello"), (b"s:embstr", b"e" * 44), (b"s:raw", os.urandom(300)),
                 (b"s:lzf", b"abcdefgh" * 500), (b"s:huge", b"0123456789" * 200_000),
                 (b"bin\x00key\r\n\xff", b"bin\x00val\xfe")]:
        c.set(k, v)
        add(0, k)
    # lists: one node, many nodes, every listpack integer width, long strings
    c.rpush(b"l:small", b"a", b"1", b"-1", b"300")
    items = [b"%d" % v for v in (0, 127, 128, -4096, 4095, 5000, -32768, 32767, 8388607, -8388608,
                                 2147483647, -2147483648, 2**40, -2**63, 2**63 - 1)]
    items += [b"x" * 63, b"y" * 64, b"z" * 4095, b"w" * 4096, b"v" * 20000, b"-0", b"+1", b"01"]
    c.rpush(b"l:widths", *items)
    c.rpush(b"l:long", *[b"item-%d" % i for i in range(20000)])
    add(0, b"l:small")
    add(0, b"l:widths")
    add(0, b"l:long")
    # hashes: listpack, hashtable by count, hashtable by value length
    c.hset(b"h:lp", mapping={b"f1": b"v1", b"n": b"12", b"neg": b"-99999", b"big": b"x" * 60})
    c.hset(b"h:ht", mapping={b"f%d" % i: b"v%d" % i for i in range(300)})
    c.hset(b"h:htval", mapping={b"a": b"1", b"long": b"L" * 100})
    add(0, b"h:lp")
    add(0, b"h:ht")
    add(0, b"h:htval")
    # sets: intset 16/32/64 bits, hashtable by member type and by count
    c.sadd(b"set:i16", 1, 2, 3, -5, 32767)
    c.sadd(b"set:i32", 1, 70000, -70000)
    c.sadd(b"set:i64", 1, 2**40, -2**50)
    c.sadd(b"set:ht", b"a", b"b", b"c", b"1")
    c.sadd(b"set:bigint", *range(600))
    for k in (b"set:i16", b"set:i32", b"set:i64", b"set:ht", b"set:bigint"):
        add(0, k)
    # sorted sets: listpack (int/float/inf scores, ties), skiplist by count and by length
    # (scores whose text is the same in Redis 7.0's "%.17g" and 7.2+'s shortest form)
    c.zadd(b"z:lp", {b"a": 1, b"b": 1, b"c": 2.5, b"d": -3, b"e": 1e20, b"f": float("inf"),
                     b"g": float("-inf"), b"h": 0.375, b"i": 2**53, b"j": -0.0, b"k": 123456789})
    c.zadd(b"z:sl", {b"m%d" % i: i / 8 for i in range(300)})
    c.zadd(b"z:slval", {b"short": 1, b"M" * 100: 2})
    add(0, b"z:lp")
    add(0, b"z:sl")
    add(0, b"z:slval")
    # TTLs
    c.set(b"ttl:s", b"v", px=3_600_000)
    c.rpush(b"ttl:l", b"a")
    c.pexpire(b"ttl:l", 7_200_000)
    add(0, b"ttl:s")
    add(0, b"ttl:l")
    # other databases
    for db in (1, 5, 15):
        c.execute_command("SELECT", db)
        c.set(b"db%d:s" % db, b"value in db %d" % db)
        c.hset(b"db%d:h" % db, b"f", b"v")
        add(db, b"db%d:s" % db)
        add(db, b"db%d:h" % db)
    c.execute_command("SELECT", 0)
    return keys


def canonical(v):
    """A comparable Python form of a loaded value."""
    if isinstance(v, (bytes, bytearray)):
        return ("string", bytes(v))
    if isinstance(v, ListValue):
        return ("list", list(v))
    if isinstance(v, HashValue):
        return ("hash", dict(v), v.ht)
    if isinstance(v, SetValue):
        return ("set", set(v), v.enc)
    if isinstance(v, ZSetValue):
        return ("zset", list(v.items()), v.skiplist)
    raise TypeError(type(v))


def payload_value(p: bytes):
    return canonical(load_payload(p))


def order_dependent(p: bytes) -> bool:
    """Hashtable encodings serialize in hash order, which differs between
    implementations: such payloads are compared semantically."""
    return p[0] in (2, 4)

