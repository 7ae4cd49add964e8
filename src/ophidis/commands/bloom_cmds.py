"""Bloom filter commands (Redis 8's built-in RedisBloom): BF.RESERVE ADD MADD
INSERT EXISTS MEXISTS INFO CARD SCANDUMP LOADCHUNK DEBUG.

The value is a ``BloomValue`` (types/bloom.py).  Arguments, errors and
replies follow RedisBloom's rebloom.c: its error texts (some without an
error code: ``Bad error rate``, ``Unknown argument received``), booleans in
RESP3 where it replies them, a missing or other-typed key read by
BF.EXISTS/MEXISTS as holding nothing.  RedisBloom sends no keyspace events
and replicates its writes verbatim, so every write that got past its checks
propagates as called (``server.dirty``), as the module's
RM_ReplicateVerbatim does.
"""

from __future__ import annotations

from ..cmdtable.registry import command
from ..errors import WRONGTYPE, RedisError, arity_error
from ..protocol.resp import OK, array_header, boolean, bulk, integer, map_header, null, simple
from ..types.bloom import OPT_FORCE64, BloomError, BloomValue
from ..util import parse_float, parse_int

# RedisBloom's bounds; the defaults are the bf-error-rate, bf-initial-size and
# bf-expansion-factor parameters (config/__init__.py)
ERROR_RATE_CAP = 0.25
CAPACITY_MAX = 1 << 30
EXPANSION_MAX = 32768

NOT_FOUND = RedisError("ERR not found")
ITEM_EXISTS = RedisError("ERR item exists")


def lookup(c, key, cls, write=False):
    """(the key's value when it is a ``cls`` or None, whether the key holds
    another type): WRONGTYPE is the caller's to raise (some commands read
    another type as empty).  cuckoo_cmds shares it, typed and written."""
    db = c.db
    v = db.lookup_write(key) if write else db.lookup_read(key)
    if v is None:
        return None, False
    if v.__class__ is not cls:
        return None, True
    return v, False


def typed(c, key, cls, write=False):
    """The value, NOT_FOUND when missing, WRONGTYPE for another type."""
    v, wrong = lookup(c, key, cls, write)
    if wrong:
        raise WRONGTYPE
    if v is None:
        raise NOT_FOUND
    return v


def vacant(c, key, cls):
    """A RESERVE's check: WRONGTYPE when the key holds another type,
    ITEM_EXISTS when it holds a ``cls`` already."""
    v, wrong = lookup(c, key, cls, True)
    if wrong:
        raise WRONGTYPE
    if v is not None:
        raise ITEM_EXISTS


def written(c, key):
    """A write that got past its checks: WATCH is told and it propagates
    verbatim (RM_CloseKey's signal, RM_ReplicateVerbatim's dirty++); every
    RedisBloom family's (cuckoo_cmds, sketch_cmds)."""
    c.db.signal(key)
    c.server.dirty += 1


def defaults(c):
    """(error rate, capacity, expansion) of the filters BF.ADD / BF.INSERT create."""
    cfg = c.server.config
    return float(cfg["bf-error-rate"]), int(cfg["bf-initial-size"]), int(cfg["bf-expansion-factor"])


def _create(c, key, error, capacity, expansion, nonscaling):
    try:
        sb = BloomValue.new(capacity, error, expansion, nonscaling)
    except MemoryError:
        raise RedisError("ERR Insufficient memory to create filter") from None
    except BloomError:
        raise RedisError("ERR could not create filter") from None
    c.db.add(key, sb)
    return sb


@command("bf.reserve")
def bf_reserve(c, argv):
    """BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]"""
    n = len(argv)
    if n > 7:
        raise arity_error("bf.reserve")
    error = parse_float(argv[2], RedisError("ERR bad error rate"))
    if not 0.0 < error < 1.0:
        raise RedisError("ERR error rate must be in the range (0.000000, 1.000000)")
    error = min(error, ERROR_RATE_CAP)
    capacity = parse_int(argv[3], RedisError("ERR bad capacity"))
    if not 1 <= capacity <= CAPACITY_MAX:
        raise RedisError("ERR capacity must be in the range [1, %d]" % CAPACITY_MAX)
    # as RMUtil_ArgIndex, the words are looked for among all the arguments
    words = [a.upper() for a in argv]
    expansion = defaults(c)[2]
    nonscaling = b"NONSCALING" in words or expansion == 0
    if b"EXPANSION" in words:
        at = words.index(b"EXPANSION")
        if at + 1 == n:
            raise RedisError("ERR no expansion")
        expansion = parse_int(argv[at + 1], RedisError("ERR bad expansion"))
        if expansion == 0:
            nonscaling = True
        elif nonscaling:
            raise RedisError("-Nonscaling filters cannot expand")
        if not 0 <= expansion <= EXPANSION_MAX:
            raise RedisError("ERR expansion must be in the range [0, %d]" % EXPANSION_MAX)
    key = argv[1]
    vacant(c, key, BloomValue)
    _create(c, key, error, capacity, expansion, nonscaling)
    written(c, key)
    return OK


_FULL = b"-ERR non scaling filter is full\r\n"
_PROBLEM = b"-ERR problem inserting into filter\r\n"


def _insert(c, key, items, multi, error, capacity, expansion, nonscaling, create=True):
    sb, wrong = lookup(c, key, BloomValue, True)
    if sb is None:
        if wrong:
            raise WRONGTYPE
        if not create:
            raise NOT_FOUND
        sb = _create(c, key, error, capacity, expansion, nonscaling)
    resp = c.resp
    out = []
    for item in items:
        rv = sb.add(item)
        if rv == -2:
            if not multi:
                written(c, key)
                raise RedisError("ERR non scaling filter is full")
            out.append(_FULL)
            break
        if rv == -1:
            if not multi:
                written(c, key)
                raise RedisError("ERR problem inserting into filter")
            out.append(_PROBLEM)
        else:
            out.append(boolean(resp, rv == 1))
    written(c, key)
    if multi:
        return array_header(len(out)) + b"".join(out)
    return out[0]


@command("bf.add")
def bf_add(c, argv):
    """BF.ADD key item"""
    error, capacity, expansion = defaults(c)
    return _insert(c, argv[1], argv[2:], False, error, capacity, expansion, expansion == 0)


@command("bf.madd")
def bf_madd(c, argv):
    """BF.MADD key item [item ...]"""
    error, capacity, expansion = defaults(c)
    return _insert(c, argv[1], argv[2:], True, error, capacity, expansion, expansion == 0)


@command("bf.insert")
def bf_insert(c, argv):
    """BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE]
    [NONSCALING] ITEMS item [item ...]: options known by their first
    letters, as RedisBloom reads them."""
    n = len(argv)
    error, capacity, expansion = defaults(c)
    create, nonscaling = True, expansion == 0
    items = -1
    pos = 2
    while pos < n and items < 0:
        arg = argv[pos].lower()
        first = arg[:1]
        if first == b"i":
            pos += 1
            items = pos
        elif first == b"e":
            pos += 1
            if pos == n:
                raise arity_error("bf.insert")
            if arg[1:2] == b"r":
                error = parse_float(argv[pos], RedisError("-Bad error rate"))
                if not 0.0 < error < 1.0:
                    raise RedisError("-Bad error rate")
                error = min(error, ERROR_RATE_CAP)
            else:
                expansion = parse_int(argv[pos], RedisError("-Bad expansion"))
                if not 0 <= expansion <= EXPANSION_MAX:
                    raise RedisError("-Bad expansion")
            pos += 1
        elif first == b"c":
            pos += 1
            if pos == n:
                raise arity_error("bf.insert")
            capacity = parse_int(argv[pos], RedisError("-Bad capacity"))
            if not 1 <= capacity <= CAPACITY_MAX:
                raise RedisError("-Bad capacity")
            pos += 1
        elif first == b"n":
            if arg[2:3] == b"c":
                create = False
            else:
                nonscaling = True
            pos += 1
        else:
            raise RedisError("-Unknown argument received")
    if expansion == 0:
        nonscaling = True
    if items < 0 or items == n:
        raise arity_error("bf.insert")
    return _insert(c, argv[1], argv[items:], True, error, capacity, expansion, nonscaling, create)


def _check(c, argv, multi):
    sb, _wrong = lookup(c, argv[1], BloomValue)
    resp = c.resp
    out = [boolean(resp, sb is not None and sb.check(item)) for item in argv[2:]]
    if multi:
        return array_header(len(out)) + b"".join(out)
    return out[0]


@command("bf.exists")
def bf_exists(c, argv):
    """BF.EXISTS key item (0 for a missing key or one of another type)"""
    return _check(c, argv, False)


@command("bf.mexists")
def bf_mexists(c, argv):
    """BF.MEXISTS key item [item ...]"""
    return _check(c, argv, True)


_INFO = {
    b"capacity": (b"Capacity", lambda sb: sb.capacity()),
    b"size": (b"Size", lambda sb: sb.mem_usage()),
    b"filters": (b"Number of filters", lambda sb: len(sb.links)),
    b"items": (b"Number of items inserted", lambda sb: sb.size),
    b"expansion": (b"Expansion rate", lambda sb: sb.growth if sb.scaling else None),
}
_INFO_ORDER = (b"capacity", b"size", b"filters", b"items", b"expansion")


def _num_or_null(resp, v):
    return null(resp) if v is None else integer(v)


@command("bf.info")
def bf_info(c, argv):
    """BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION]: a map in
    RESP3, a flat array in RESP2; one field alone as a map of one entry
    (RESP3) or an array of its value (RESP2)."""
    if len(argv) > 3:
        raise arity_error("bf.info")
    sb = typed(c, argv[1], BloomValue)
    resp = c.resp
    if len(argv) == 3:
        field = _INFO.get(argv[2].lower())
        if field is None:
            raise RedisError("-Invalid information value")
        name, get = field
        head = b"%1\r\n" + simple(name) if resp >= 3 else b"*1\r\n"
        return head + _num_or_null(resp, get(sb))
    out = [map_header(resp, 5)]
    for f in _INFO_ORDER:
        name, get = _INFO[f]
        out.append(simple(name))
        out.append(_num_or_null(resp, get(sb)))
    return b"".join(out)


@command("bf.card")
def bf_card(c, argv):
    """BF.CARD key: the items added (0 for a missing key)"""
    sb, wrong = lookup(c, argv[1], BloomValue)
    if wrong:
        raise WRONGTYPE
    return integer(sb.size if sb is not None else 0)


@command("bf.debug")
def bf_debug(c, argv):
    """BF.DEBUG key: the chain's size, then a line per link"""
    sb = typed(c, argv[1], BloomValue)
    hw = 64 if sb.options & OPT_FORCE64 else 32
    out = [bulk(b"size:%d" % sb.size)]
    for lk in sb.links:
        out.append(bulk(("bytes:%d bits:%d hashes:%d hashwidth:%d capacity:%d size:%d ratio:%g" % (
            len(lk.bf), lk.bits or (1 << lk.n2), lk.hashes, hw, lk.entries, lk.size,
            lk.error)).encode()))
    return array_header(len(out)) + b"".join(out)


@command("bf.scandump")
def bf_scandump(c, argv):
    """BF.SCANDUMP key iterator: [1, header] for 0, then [next, chunk] until
    [0, ""]"""
    sb = typed(c, argv[1], BloomValue)
    it = parse_int(argv[2], RedisError("-Second argument must be numeric"))
    if it == 0:
        return b"*2\r\n:1\r\n" + bulk(sb.header())
    nxt, data = sb.chunk(it)
    return b"*2\r\n" + integer(nxt) + bulk(data)


@command("bf.loadchunk")
def bf_loadchunk(c, argv):
    """BF.LOADCHUNK key iterator data: the header (iterator 1) creates the
    filter, the chunks fill it in"""
    it = parse_int(argv[2], RedisError("ERR Second argument must be numeric"))
    key, buf = argv[1], bytes(argv[3])
    sb, wrong = lookup(c, key, BloomValue, True)
    if sb is None and not wrong and it == 1:
        sb = BloomValue.from_header(buf)
        if sb is None:
            raise RedisError("ERR received bad data")
        c.db.add(key, sb)
        written(c, key)
        return OK
    if wrong:
        raise WRONGTYPE
    if sb is None:
        raise NOT_FOUND
    err = sb.load_chunk(it, buf)
    if err is not None:
        raise RedisError(err)
    written(c, key)
    return OK
