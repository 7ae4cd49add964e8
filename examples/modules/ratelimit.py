"""A fixed-window rate limiter as an Ophidis module (docs/MODULES.md).

    MODULE LOAD /path/to/examples/modules/ratelimit.py
    RATELIMIT.HIT key max period-seconds
        -> [allowed (1 or 0), remaining hits, milliseconds until the window resets]
    RATELIMIT.PEEK key max
        -> [remaining hits, milliseconds until the window resets (-1: no window)]

The counter is a plain string key that expires with its window, so it can be
read, deleted or given a new TTL with the ordinary commands.  A hit that is
counted reaches the AOF and the replicas as ``SET key count PXAT
window-end``: they apply the same count and the same absolute end of the
window without needing the module themselves.
"""

from ophidis.modules import api


def _positive(b: bytes) -> int:
    n = api.parse_int(b)
    if n <= 0:
        raise api.RedisError("ERR max and period must be positive integers")
    return n


def _window(db, key):
    """(count, window end in ms or None) of the counter at key."""
    v = db.lookup_write(key)
    if v is None:
        return 0, None
    count = api.parse_int(api.check_string(v))
    end = db.get_expire(key)
    return count, (end if end >= 0 else None)


def hit(c, argv):
    key = argv[1]
    limit = _positive(argv[2])
    period_ms = _positive(argv[3]) * 1000
    db = c.db
    now = api.now_ms()
    count, end = _window(db, key)
    if end is None:                 # a new window (or a counter without TTL)
        end = now + period_ms
    if count >= limit:
        return api.array_header(3) + api.integer(0) + api.integer(0) + api.integer(end - now)
    count += 1
    db.set_key(key, b"%d" % count)
    db.set_expire(key, end)
    api.modified(c, key, b"ratelimit.hit", api.notify.STRING)
    api.propagate_as(c, [b"SET", key, b"%d" % count, b"PXAT", b"%d" % end])
    return api.array_header(3) + api.integer(1) + api.integer(limit - count) + api.integer(end - now)


def peek(c, argv):
    key = argv[1]
    limit = _positive(argv[2])
    v = c.db.lookup_read(key)
    if v is None:
        return api.array_header(2) + api.integer(limit) + api.integer(-1)
    count = api.parse_int(api.check_string(v))
    end = c.db.get_expire(key)
    return api.array_header(2) + api.integer(max(limit - count, 0)) + api.integer(
        end - api.now_ms() if end >= 0 else -1)


def register(ctx, args):
    ctx.init("ratelimit", version=1)
    ctx.command("ratelimit.hit", hit, arity=4, flags="write deny-oom fast", keys=(1, 1, 1),
                key_flags="RW ACCESS UPDATE INSERT", acl="string",
                summary="Count a hit against a fixed-window rate limit", since="1.0.0",
                complexity="O(1)")
    ctx.command("ratelimit.peek", peek, arity=3, flags="readonly fast", keys=(1, 1, 1),
                key_flags="RO ACCESS", acl="string",
                summary="Remaining hits of a fixed-window rate limit", since="1.0.0",
                complexity="O(1)")
