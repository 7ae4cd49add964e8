"""Cuckoo filter commands (Redis 8's built-in RedisBloom): CF.RESERVE ADD
ADDNX INSERT INSERTNX EXISTS MEXISTS COUNT DEL COMPACT SCANDUMP LOADCHUNK INFO
DEBUG.

The value is a ``CuckooValue`` (types/cuckoo.py).  Arguments, errors and
reply shapes are RedisBloom's (rebloom.c): CF.INSERTNX answers integers in
RESP3 too, CF.INSERT's items that find no room answer false (RESP3) or -1,
a missing key or one of another type counts as empty for EXISTS, MEXISTS
and COUNT.  No keyspace events; writes propagate verbatim.
"""

from __future__ import annotations

from ..cmdtable.registry import command
from ..config import BLOOM_BOUNDS
from ..errors import WRONGTYPE, RedisError, arity_error
from ..protocol.resp import MINUS_ONE, OK, array_header, boolean, bulk, integer, map_header, null, simple
from ..types.cuckoo import EXISTS, INSERTED, NOSPACE, CuckooValue, item_hash
from ..util import parse_int
from .bloom_cmds import ITEM_EXISTS, NOT_FOUND, lookup, typed, vacant, written

# RedisBloom's defaults are the cf-bucket-size, cf-initial-size,
# cf-max-iterations, cf-expansion-factor and cf-max-expansions parameters;
# their bounds (config.BLOOM_BOUNDS) bound the commands' arguments too
CAPACITY_MAX = 1 << 30


def _cfg(c, name: str) -> int:
    return int(c.server.config[name])


def _create(c, key, capacity, bucket_size, max_iterations, expansion):
    if capacity < bucket_size * 2:
        raise RedisError("ERR Could not create filter")
    try:
        cf = CuckooValue.new(capacity, bucket_size, max_iterations, expansion)
    except MemoryError:
        raise RedisError("ERR Insufficient memory to create filter") from None
    c.db.add(key, cf)
    return cf


def _option(argv, word: bytes, err: str, bounds: str, default: int) -> int:
    """A CF.RESERVE option, looked for among all the arguments (RMUtil_ArgIndex)."""
    for i, a in enumerate(argv):
        if a.upper() == word:
            if i + 1 >= len(argv):
                raise RedisError("-Couldn't parse " + err)
            v = parse_int(argv[i + 1], RedisError("-Couldn't parse " + err))
            lo, hi = BLOOM_BOUNDS[bounds]
            if not lo <= v <= hi:
                raise RedisError("-%s: value must be in the range [%d, %d]" % (err, lo, hi))
            return v
    return default


@command("cf.reserve")
def cf_reserve(c, argv):
    """CF.RESERVE key capacity [BUCKETSIZE n] [MAXITERATIONS n] [EXPANSION n]"""
    if len(argv) % 2 == 0:
        raise arity_error("cf.reserve")
    capacity = parse_int(argv[2], RedisError("-Bad capacity"))
    max_it = _option(argv, b"MAXITERATIONS", "MAXITERATIONS", "cf-max-iterations", _cfg(c, "cf-max-iterations"))
    bucket_size = _option(argv, b"BUCKETSIZE", "BUCKETSIZE", "cf-bucket-size", _cfg(c, "cf-bucket-size"))
    expansion = _option(argv, b"EXPANSION", "EXPANSION", "cf-expansion-factor", _cfg(c, "cf-expansion-factor"))
    if bucket_size * 2 > capacity or capacity > CAPACITY_MAX:
        raise RedisError("-Capacity must be in the range [2 * BUCKETSIZE, %d]" % CAPACITY_MAX)
    key = argv[1]
    vacant(c, key, CuckooValue)
    _create(c, key, capacity, bucket_size, max_it, expansion)
    written(c, key)
    return OK


def _insert(c, key, items, nx, multi, capacity=None, create=True):
    cf, wrong = lookup(c, key, CuckooValue, True)
    if cf is None:
        if wrong:
            raise WRONGTYPE
        if not create:
            raise NOT_FOUND
        if capacity is None:
            capacity = _cfg(c, "cf-initial-size")
        cf = _create(c, key, capacity, _cfg(c, "cf-bucket-size"), _cfg(c, "cf-max-iterations"),
                     _cfg(c, "cf-expansion-factor"))
    if len(cf.filters) >= _cfg(c, "cf-max-expansions"):
        raise RedisError("-Maximum expansions reached")
    resp = c.resp
    as_bool = resp >= 3 and not (nx and multi)       # CF.INSERTNX answers integers
    out = []
    for item in items:
        st = cf.insert(item_hash(item), nx)
        if st == INSERTED or st == EXISTS:
            out.append(boolean(resp, st == INSERTED) if as_bool else integer(st))
        elif not multi:
            c.db.signal(key)
            raise RedisError("-Filter is full" if st == NOSPACE else "ERR Insufficient memory")
        else:
            out.append(boolean(resp, False) if resp >= 3 and not nx else MINUS_ONE)
    written(c, key)
    if multi:
        return array_header(len(out)) + b"".join(out)
    return out[0]


@command("cf.add")
def cf_add(c, argv):
    """CF.ADD key item"""
    return _insert(c, argv[1], argv[2:], False, False)


@command("cf.addnx")
def cf_addnx(c, argv):
    """CF.ADDNX key item"""
    return _insert(c, argv[1], argv[2:], True, False)


def _insert_args(c, argv, nx, name):
    """CF.INSERT / CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS item ...:
    options known by their first letter, as RedisBloom reads them."""
    n = len(argv)
    capacity, create = None, True
    items = -1
    pos = 2
    while pos < n and items < 0:
        first = argv[pos][:1].lower()
        if first == b"c":
            pos += 1
            if pos == n:
                raise arity_error(name)
            capacity = parse_int(argv[pos], RedisError("-Bad capacity"))
            lo, hi = BLOOM_BOUNDS["cf-initial-size"]
            if not lo <= capacity <= hi:
                raise RedisError("-Capacity must be in the range [cf-bucket-size * 2, %d]"
                                 % CAPACITY_MAX)
            pos += 1
        elif first == b"i":
            pos += 1
            items = pos
        elif first == b"n":
            create = False
            pos += 1
        else:
            raise RedisError("-Unknown argument received")
    if items < 0 or items == n:
        raise arity_error(name)
    return _insert(c, argv[1], argv[items:], nx, True, capacity, create)


@command("cf.insert")
def cf_insert(c, argv):
    """CF.INSERT key [CAPACITY c] [NOCREATE] ITEMS item [item ...]"""
    return _insert_args(c, argv, False, "cf.insert")


@command("cf.insertnx")
def cf_insertnx(c, argv):
    """CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS item [item ...]"""
    return _insert_args(c, argv, True, "cf.insertnx")


def _check(c, argv, multi, count):
    cf, _wrong = lookup(c, argv[1], CuckooValue)
    resp = c.resp
    out = []
    for item in argv[2:]:
        if count:
            out.append(integer(cf.count(item_hash(item)) if cf is not None else 0))
        else:
            out.append(boolean(resp, cf is not None and cf.check(item_hash(item))))
    if multi:
        return array_header(len(out)) + b"".join(out)
    return out[0]


@command("cf.exists")
def cf_exists(c, argv):
    """CF.EXISTS key item"""
    return _check(c, argv, False, False)


@command("cf.mexists")
def cf_mexists(c, argv):
    """CF.MEXISTS key item [item ...]"""
    return _check(c, argv, True, False)


@command("cf.count")
def cf_count(c, argv):
    """CF.COUNT key item: how many copies of the item's fingerprint are in
    its buckets"""
    return _check(c, argv, False, True)


@command("cf.del")
def cf_del(c, argv):
    """CF.DEL key item: one copy removed"""
    key = argv[1]
    cf, _wrong = lookup(c, key, CuckooValue, True)
    if cf is None:
        raise RedisError("-Not found")
    written(c, key)
    return boolean(c.resp, cf.delete(item_hash(argv[2])))


@command("cf.compact")
def cf_compact(c, argv):
    """CF.COMPACT key: fingerprints of newer sub-filters moved into older
    ones where they fit, emptied newest sub-filters dropped (registered by
    RedisBloom as read-only, yet it replicates)"""
    if len(argv) != 2:
        raise arity_error("cf.compact")
    key = argv[1]
    cf, _wrong = lookup(c, key, CuckooValue, True)
    if cf is None:
        raise RedisError("-Cuckoo filter was not found")
    cf.compact(True)
    written(c, key)
    return OK


@command("cf.scandump")
def cf_scandump(c, argv):
    """CF.SCANDUMP key iterator: [1, header] for 0, then [next, chunk] until
    [0, nil]; an empty filter answers [0, nil] at once"""
    pos = parse_int(argv[2], RedisError("-Invalid position"))
    if pos < 0:
        raise RedisError("-Invalid position")
    cf = typed(c, argv[1], CuckooValue)
    resp = c.resp
    if not cf.num_items:
        return b"*2\r\n:0\r\n" + null(resp)
    if pos == 0:
        return b"*2\r\n:1\r\n" + bulk(cf.header())
    nxt, data = cf.chunk(pos)
    if data is None:
        return b"*2\r\n:0\r\n" + null(resp)
    return b"*2\r\n" + integer(nxt) + bulk(data)


@command("cf.loadchunk")
def cf_loadchunk(c, argv):
    """CF.LOADCHUNK key iterator data"""
    key = argv[1]
    cf, wrong = lookup(c, key, CuckooValue, True)
    pos = parse_int(argv[2], RedisError("-Invalid position"))
    if pos == 0:
        raise RedisError("-Invalid position")
    blob = bytes(argv[3])
    if pos == 1:
        if wrong:
            raise WRONGTYPE
        if cf is not None:
            raise ITEM_EXISTS
        if len(blob) != 38:
            raise RedisError("-Invalid header")
        cf = CuckooValue.from_header(blob)
        if cf is None:
            raise RedisError("-Couldn't create filter!")
        c.db.add(key, cf)
        written(c, key)
        return OK
    if wrong:
        raise WRONGTYPE
    if cf is None:
        raise NOT_FOUND
    if not cf.load_chunk(pos, blob):
        raise RedisError("-Couldn't load chunk!")
    written(c, key)
    return OK


@command("cf.info")
def cf_info(c, argv):
    """CF.INFO key: a map in RESP3, a flat array in RESP2"""
    cf = typed(c, argv[1], CuckooValue)
    fields = ((b"Size", cf.mem_usage()), (b"Number of buckets", cf.num_buckets),
              (b"Number of filters", len(cf.filters)), (b"Number of items inserted", cf.num_items),
              (b"Number of items deleted", cf.num_deletes), (b"Bucket size", cf.bucket_size),
              (b"Expansion rate", cf.expansion), (b"Max iterations", cf.max_iterations))
    out = [map_header(c.resp, len(fields))]
    for name, v in fields:
        out.append(simple(name))
        out.append(integer(v))
    return b"".join(out)


@command("cf.debug")
def cf_debug(c, argv):
    """CF.DEBUG key: the filter's figures on one line"""
    cf = typed(c, argv[1], CuckooValue)
    return bulk(b"bktsize:%d buckets:%d items:%d deletes:%d filters:%d max_iterations:%d "
                b"expansion:%d" % (cf.bucket_size, cf.num_buckets, cf.num_items, cf.num_deletes,
                                   len(cf.filters), cf.max_iterations, cf.expansion))
