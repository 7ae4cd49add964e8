"""Helpers over redis-py clients: the same command on two servers, a key's
contents whatever its type, a whole *SCAN iteration and the *SCAN errors."""

from __future__ import annotations

import redis


def outcomes(a, b, *args) -> list:
    """[("ok", reply) or ("err", message)] of args on client a, then b."""
    out = []
    for c in (a, b):
        try:
            out.append(("ok", c.execute_command(*args)))
        except redis.ResponseError as e:
            out.append(("err", str(e)))
    return out


def contents(client, key, t=None):
    """The value of ``key`` read by the command of its type ``t`` (read when
    not given), as redis-py returns it: a hash as a dict, a set as a set
    (they compare whatever the order), a stream as (its entries, (name,
    last-delivered-id, pending) of each group); None for a missing key."""
    if t is None:
        t = client.type(key)
    if t == b"string":
        return client.get(key)
    if t == b"list":
        return client.lrange(key, 0, -1)
    if t == b"hash":
        return client.hgetall(key)
    if t == b"set":
        return client.smembers(key)
    if t == b"zset":
        return client.zrange(key, 0, -1, withscores=True)
    if t == b"stream":
        groups = [(g["name"], g["last-delivered-id"], g["pending"]) for g in client.xinfo_groups(key)]
        return client.xrange(key), groups
    return None


def scan_to_end(client, command, key, count=10, match=None, between=None):
    """Iterate HSCAN/SSCAN/ZSCAN command on key until the cursor is 0: (every
    item returned, flat, in order; number of calls).  ``between()``, when
    given, runs after each call (the last one included): the changes a
    test makes to the key while the iteration goes on."""
    client.response_callbacks.pop(command, None)
    cursor = 0
    out = []
    calls = 0
    while True:
        args = [command, key, cursor, "COUNT", count]
        if match is not None:
            args += ["MATCH", match]
        cursor, items = client.execute_command(*args)
        cursor = int(cursor)
        out += items
        calls += 1
        if between is not None:
            between()
        if cursor == 0:
            return out, calls


SCAN_EMPTY = b"*2\r\n$1\r\n0\r\n*0\r\n"
_SYNTAX = b"-ERR syntax error\r\n"
_CURSOR = b"-ERR invalid cursor\r\n"


def check_scan_errors(raw, command, key):
    """The errors of HSCAN/SSCAN/ZSCAN (Redis's one scanGenericCommand and
    cursor parsing) on ``key``, an existing key of the command's type,
    through the RespConn ``raw``; a missing key replies an empty scan
    before the options are looked at (as Redis), not before the cursor."""
    for args, reply in [((key, "x"), _CURSOR), (("nokey", "x"), _CURSOR), ((key, "-"), _CURSOR),
                        ((key, "0", "COUNT", "0"), _SYNTAX), ((key, "0", "COUNT", "-1"), _SYNTAX),
                        ((key, "0", "COUNT", "x"), b"-ERR value is not an integer or out of range\r\n"),
                        ((key, "0", "COUNT"), _SYNTAX), ((key, "0", "TYPE", "string"), _SYNTAX),
                        ((key, "0", "MATCH"), _SYNTAX), ((key, "0", "FOO", "bar"), _SYNTAX),
                        (("nokey", "0", "COUNT", "0"), SCAN_EMPTY)]:
        assert raw.call(command, *args) == reply, (command, args)
