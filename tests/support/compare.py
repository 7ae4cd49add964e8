"""Running the same command on two servers through redis-py."""

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
