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
# Redis 8.8's subkey notifications (a hash's fields): their own channels,
# enabled by these flags (not by K or E), for the events of the enabled classes
SUBKEYSPACE = 1 << 15       # S: __subkeyspace@<db>__:<key>  <event>|<fields>
SUBKEYEVENT = 1 << 16       # T: __subkeyevent@<db>__:<event>  <key>|<fields>
SUBKEYSPACEITEM = 1 << 17   # I: __subkeyspaceitem@<db>__:<key>\n<field>  <event>
SUBKEYSPACEEVENT = 1 << 18  # V: __subkeyspaceevent@<db>__:<event>|<key>  <fields>
SUBKEY = SUBKEYSPACE | SUBKEYEVENT | SUBKEYSPACEITEM | SUBKEYSPACEEVENT
ARRAY = 1 << 20         # a (Redis 8.8): the array commands (ARSET ...)
OVERWRITTEN = 1 << 21   # o (Redis 8.2): a key's value replaced by another
TYPE_CHANGED = 1 << 22  # c (Redis 8.2): ... by one of another type
# "A": every class but m, n, o and c (Redis 8.8 counts the array class in it)
ALL = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE | ARRAY

_CHARS = {
    "A": ALL, "g": GENERIC, "$": STRING, "l": LIST, "s": SET, "h": HASH, "z": ZSET,
    "x": EXPIRED, "e": EVICTED, "K": KEYSPACE, "E": KEYEVENT, "t": STREAM,
    "m": KEY_MISS, "d": MODULE, "n": NEW, "o": OVERWRITTEN, "c": TYPE_CHANGED,
    "S": SUBKEYSPACE, "T": SUBKEYEVENT, "I": SUBKEYSPACEITEM, "V": SUBKEYSPACEEVENT, "a": ARRAY,
}
# CONFIG SET's error lists the letters in Redis 8.10's order
INVALID_CLASS = "Invalid event class character. Use 'Ag$lshzxeKEtmdnocaSTIV'."

# CONFIG GET's rendering (keyspaceEventsFlagsToString): "A" stands for the
# first group when all of ALL is set (n, o and c are then not shown, as in
# Redis), the second group follows either way
_FIRST = (("g", GENERIC), ("$", STRING), ("l", LIST), ("s", SET), ("h", HASH), ("z", ZSET),
          ("x", EXPIRED), ("e", EVICTED), ("t", STREAM), ("d", MODULE), ("a", ARRAY),
          ("n", NEW), ("o", OVERWRITTEN), ("c", TYPE_CHANGED))
_SECOND = (("K", KEYSPACE), ("E", KEYEVENT), ("m", KEY_MISS), ("S", SUBKEYSPACE),
           ("T", SUBKEYEVENT), ("I", SUBKEYSPACEITEM), ("V", SUBKEYSPACEEVENT))

# Current flags; the server's config sets them (set_flags).
flags = 0
_publish = None
_flags_watchers = []    # told after set_flags (the compiled bodies' copy of flags)


def set_flags(f: int):
    global flags
    flags = f
    for fn in _flags_watchers:
        fn()


def watch_flags(fn):
    """fn() is called whenever set_flags changes the flags."""
    _flags_watchers.append(fn)


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
        out += [ch for ch, bit in _FIRST if f & bit]
    out += [ch for ch, bit in _SECOND if f & bit]
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


def _lp(items) -> bytes:
    # subkey lists: <len>:<subkey>, comma separated
    return b",".join([b"%d:%s" % (len(x), x) for x in items])


def notify_subkeys(type_: int, event: bytes, key: bytes, dbid: int, subkeys):
    """The subkey notifications of an event on fields ``subkeys`` of key
    (callers test ``flags & SUBKEY`` first)."""
    f = flags
    if not (f & type_) or not subkeys:
        return
    pub = _publish
    if pub is None:
        return
    if f & SUBKEYSPACE:
        pub(b"__subkeyspace@%d__:%s" % (dbid, key), b"%s|%s" % (event, _lp(subkeys)))
    if f & SUBKEYEVENT:
        pub(b"__subkeyevent@%d__:%s" % (dbid, event), b"%d:%s|%s" % (len(key), key, _lp(subkeys)))
    if f & SUBKEYSPACEITEM:
        for sk in subkeys:
            pub(b"__subkeyspaceitem@%d__:%s\n%s" % (dbid, key, sk), event)
    if f & SUBKEYSPACEEVENT:
        pub(b"__subkeyspaceevent@%d__:%s|%s" % (dbid, event, key), _lp(subkeys))
