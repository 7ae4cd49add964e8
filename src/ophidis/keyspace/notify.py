"""Keyspace notifications (notify-keyspace-events).

``notify(type, event, key, dbid)`` is called by commands; it returns at once
when the class is not enabled.  Delivery goes through ``publish`` which the
pub/sub module installs (``set_publisher``).
"""

KEYSPACE = 1 << 0   # K
KEYEVENT = 1 << 1   # E
GENERIC = 1 << 2    # g
STRING = 1 << 3     # $
LIST = 1 << 4       # l
SET = 1 << 5        # s
HASH = 1 << 6       # h
ZSET = 1 << 7       # z
EXPIRED = 1 << 8    # x
EVICTED = 1 << 9    # e
STREAM = 1 << 10    # t
KEY_MISS = 1 << 11  # m
LOADED = 1 << 12
MODULE = 1 << 13    # d
NEW = 1 << 14       # n
OVERWRITTEN = 1 << 15   # o (Redis 8.2): a key's value replaced by another
TYPE_CHANGED = 1 << 16  # c (Redis 8.2): ... by one of another type
ALL = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE

_CHARS = {
    "A": ALL, "g": GENERIC, "$": STRING, "l": LIST, "s": SET, "h": HASH, "z": ZSET,
    "x": EXPIRED, "e": EVICTED, "K": KEYSPACE, "E": KEYEVENT, "t": STREAM,
    "m": KEY_MISS, "d": MODULE, "n": NEW, "o": OVERWRITTEN, "c": TYPE_CHANGED,
}

# Current flags; config sets it.
flags = 0
_publish = None


def set_publisher(fn):
    global _publish
    _publish = fn


def parse_flags(s: str) -> int:
    f = 0
    for ch in s:
        v = _CHARS.get(ch)
        if v is None:
            return -1
        f |= v
    return f


def flags_to_string(f: int) -> str:
    out = []
    if f & ALL == ALL:
        out.append("A")
    else:
        for ch, bit in (("g", GENERIC), ("$", STRING), ("l", LIST), ("s", SET), ("h", HASH),
                        ("z", ZSET), ("x", EXPIRED), ("e", EVICTED), ("t", STREAM),
                        ("d", MODULE), ("n", NEW), ("o", OVERWRITTEN), ("c", TYPE_CHANGED)):
            if f & bit:
                out.append(ch)
    if f & KEYSPACE:
        out.append("K")
    if f & KEYEVENT:
        out.append("E")
    if f & KEY_MISS:
        out.append("m")
    return "".join(out)


def notify(type_: int, event: bytes, key: bytes, dbid: int):
    f = flags
    if not (f & type_):
        return
    pub = _publish
    if pub is None:
        return
    if f & KEYSPACE:
        pub(b"__keyspace@%d__:%s" % (dbid, key), event)
    if f & KEYEVENT:
        pub(b"__keyevent@%d__:%s" % (dbid, event), key)
