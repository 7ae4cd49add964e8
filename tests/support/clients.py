"""Helpers over redis-py clients: the same command on two servers, a
whole *SCAN iteration."""

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


def scan_to_end(client, command, key, count=10, match=None):
    """Iterate HSCAN/SSCAN/ZSCAN command on key until the cursor is 0: (every
    item returned, flat, in order; number of calls)."""
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
        if cursor == 0:
            return out, calls
