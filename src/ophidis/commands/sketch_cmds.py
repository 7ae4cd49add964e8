"""Count-Min sketch, Top-K and t-digest commands (Redis 8's built-in
RedisBloom): CMS.INITBYDIM INITBYPROB INCRBY QUERY MERGE INFO; TOPK.RESERVE
ADD INCRBY QUERY COUNT LIST INFO; TDIGEST.CREATE RESET ADD MERGE MIN MAX
QUANTILE CDF TRIMMED_MEAN RANK REVRANK BYRANK BYREVRANK INFO.

The values are types/cms.py, types/topk.py and types/tdigest.py.  Checks
come in the module's order with its error texts (``CMS: ...``, ``TopK:
...``, ``ERR T-Digest: ...``); its argument-count checks beyond the
command's arity answer Redis's arity error.  The module emits no keyspace
events of its own (a created key is announced by the keyspace as "new");
a successful write propagates as called.  INFO replies are maps in RESP3
and flat arrays in RESP2, as the module's.
"""

from __future__ import annotations

import math

from ..cmdtable.registry import command
from ..errors import WRONGTYPE, RedisError, arity_error
from ..protocol.resp import (OK, array_header, boolean, bulk, double, error, integer, map_header, null,
                             simple)
from ..types.cms import I64_MAX, MAX_CELLS, U32_MAX, CountMinSketch, dims_from_prob
from ..types.tdigest import INT_MAX, NAN, Overflow, TDigest, c_round, capacity, half_round_down
from ..types.topk import TopK
from ..util import parse_float, try_int
from .bloom_cmds import written

U64_HALF = 1 << 63
LLONG_MIN = -(1 << 63)


def _typed(c, key, cls, nokey: RedisError, write: bool):
    """The key's ``cls`` value: the family's ``nokey`` error when it is
    missing, WRONGTYPE (the typed lookup's) when it holds another type."""
    db = c.db
    v = db.lookup_write_typed(key, cls) if write else db.lookup_read_typed(key, cls)
    if v is None:
        raise nokey
    return v


def _index_of(word: bytes, args) -> int:
    """RMUtil_ArgIndex: the first argument equal to ``word`` ignoring case."""
    n = len(word)
    for i, a in enumerate(args):
        if len(a) == n and a.upper() == word:
            return i
    return -1


def _double(b):
    """RedisModule_StringToDouble: None when it does not parse."""
    try:
        return parse_float(b)
    except RedisError:
        return None


def _signed(v: int) -> int:
    """An unsigned 64-bit field replied as the module's long long."""
    return v - (1 << 64) if v >= U64_HALF else v


# ---------------------------------------------------------------------------
# Count-Min sketch
# ---------------------------------------------------------------------------

_CMS_NOKEY = RedisError("-CMS: key does not exist")


def _cms(c, key, write=False) -> CountMinSketch:
    return _typed(c, key, CountMinSketch, _CMS_NOKEY, write)


def _cms_create(c, argv, by_dim: bool):
    key = argv[1]
    if c.db.lookup_write(key) is not None:
        raise RedisError("-CMS: key already exists")
    if by_dim:
        width = try_int(argv[2])
        if width is None or width < 1:
            raise RedisError("-CMS: invalid width")
        depth = try_int(argv[3])
        if depth is None or depth < 1:
            raise RedisError("-CMS: invalid depth")
    else:
        err = _double(argv[2])
        if err is None or err <= 0 or err >= 1:
            raise RedisError("-CMS: invalid overestimation value")
        prob = _double(argv[3])
        if prob is None or prob <= 0 or prob >= 1:
            raise RedisError("-CMS: invalid prob value")
        width, depth = dims_from_prob(err, prob)
        if width is None:
            raise RedisError("-CMS: invalid init arguments")
    if width > I64_MAX // depth:
        raise RedisError("-CMS: invalid init arguments")
    if width * depth > MAX_CELLS:
        raise RedisError("-CMS: Insufficient memory to create the key")
    c.db.set_key(key, CountMinSketch(width, depth))
    written(c, key)
    return OK


@command("cms.initbydim")
def cms_initbydim(c, argv):
    return _cms_create(c, argv, True)


@command("cms.initbyprob")
def cms_initbyprob(c, argv):
    return _cms_create(c, argv, False)


@command("cms.incrby")
def cms_incrby(c, argv):
    if len(argv) % 2:
        raise arity_error("cms.incrby")
    key = argv[1]
    cms = _cms(c, key, True)
    pairs = []
    for i in range(2, len(argv), 2):
        v = try_int(argv[i + 1])
        if v is None:
            raise RedisError("-CMS: Cannot parse number")
        if v < 0:
            raise RedisError("-CMS: Number cannot be negative")
        pairs.append((argv[i], v))
    out = [array_header(len(pairs))]
    for item, v in pairs:
        n = cms.incrby(item, v)
        out.append(integer(n) if n != U32_MAX else error(b"CMS: INCRBY overflow"))
    written(c, key)
    return b"".join(out)


@command("cms.query")
def cms_query(c, argv):
    cms = _cms(c, argv[1])
    items = argv[2:]
    return array_header(len(items)) + b"".join(integer(cms.query(it)) for it in items)


@command("cms.merge")
def cms_merge(c, argv):
    key = argv[1]
    dest = _cms(c, key, True)
    nkeys = try_int(argv[2])
    if nkeys is None:
        raise RedisError("-CMS: invalid numkeys")
    rest = argv[3:]
    if nkeys <= 0:
        raise RedisError("-CMS: Number of keys must be positive")
    pos = _index_of(b"WEIGHTS", rest)
    if pos < 0:
        if nkeys != len(rest):
            raise RedisError("-CMS: wrong number of keys")
    elif pos != nkeys or len(rest) != 1 + nkeys * 2:
        raise RedisError("-CMS: wrong number of keys/weights")
    sources = []
    weights = []
    for i in range(nkeys):
        if pos < 0:
            wt = 1
        else:
            wt = try_int(rest[nkeys + 1 + i])
            if wt is None:
                raise RedisError("-CMS: invalid weight value")
        src = _cms(c, rest[i])
        if src.width != dest.width or src.depth != dest.depth:
            raise RedisError("-CMS: width/depth is not equal")
        sources.append(src)
        weights.append(wt)
    res = CountMinSketch.merged(sources, weights)
    if res is None:
        raise RedisError("-CMS: MERGE overflow")
    dest.table, dest.counter = res
    written(c, key)
    return OK


@command("cms.info")
def cms_info(c, argv):
    cms = _cms(c, argv[1])
    return (map_header(c.resp, 3) + b"+width\r\n" + integer(cms.width) + b"+depth\r\n"
            + integer(cms.depth) + b"+count\r\n" + integer(_signed(cms.counter)))


# ---------------------------------------------------------------------------
# Top-K
# ---------------------------------------------------------------------------

_TOPK_NOKEY = RedisError("-TopK: key does not exist")
_TOPK_INCR = RedisError("-TopK: increment must be an integer greater or equal to 0" + " " * 28
                        + "and smaller or equal to 100,000")
# the most memory one Top-K may take (its buckets and heap slots, 8 bytes
# each): past it TOPK.RESERVE answers the module's
# allocation-failure error
_TOPK_MAX_BYTES = 4 << 30


def _topk(c, key, write=False) -> TopK:
    return _typed(c, key, TopK, _TOPK_NOKEY, write)


def _cstr(b: bytes) -> bytes:
    """A reply the module gives as a C string: up to the first NUL."""
    z = b.find(b"\0")
    return bulk(b if z < 0 else b[:z])


def _u32(b, msg: str) -> int:
    v = try_int(b)
    if v is None or v > U32_MAX or v < 1:
        raise RedisError(msg)
    return v


@command("topk.reserve")
def topk_reserve(c, argv):
    if len(argv) not in (3, 6):
        raise arity_error("topk.reserve")
    key = argv[1]
    if c.db.lookup_write(key) is not None:
        raise RedisError("-TopK: key already exists")
    k = _u32(argv[2], "-TopK: invalid k")
    if len(argv) == 6:
        width = _u32(argv[3], "-TopK: invalid width")
        depth = _u32(argv[4], "-TopK: invalid depth")
        decay = _double(argv[5])
        if decay is None or decay <= 0 or decay > 1:
            raise RedisError("-TopK: invalid decay value. must be '<= 1' & '> 0'")
    else:
        width, depth, decay = 8, 7, 0.9
    if 8 * width * depth + 8 * k > _TOPK_MAX_BYTES:
        raise RedisError("ERR Insufficient memory to create topk data structure")
    c.db.set_key(key, TopK(k, width, depth, decay))
    written(c, key)
    return OK


def _expelled(resp, item):
    return null(resp) if item is None else _cstr(item)


@command("topk.add")
def topk_add(c, argv):
    key = argv[1]
    tk = _topk(c, key, True)
    items = argv[2:]
    resp = c.resp
    out = [array_header(len(items))]
    for it in items:
        out.append(_expelled(resp, tk.add(it, 1)))
    written(c, key)
    return b"".join(out)


@command("topk.incrby")
def topk_incrby(c, argv):
    if len(argv) % 2:
        raise arity_error("topk.incrby")
    key = argv[1]
    tk = _topk(c, key, True)
    n = (len(argv) - 2) // 2
    resp = c.resp
    out = [array_header(n)]
    for i in range(n):
        incr = try_int(argv[3 + 2 * i])
        if incr is None or incr < 0 or incr > 100000:
            # the module stops at a bad increment (its array left short);
            # here the remaining entries carry the error too
            out.extend([error(_TOPK_INCR.msg)] * (n - i))
            break
        out.append(_expelled(resp, tk.add(argv[2 + 2 * i], incr)))
    written(c, key)
    return b"".join(out)


@command("topk.query")
def topk_query(c, argv):
    tk = _topk(c, argv[1])
    resp = c.resp
    items = argv[2:]
    return array_header(len(items)) + b"".join(boolean(resp, tk.query(it)) for it in items)


@command("topk.count")
def topk_count(c, argv):
    tk = _topk(c, argv[1])
    items = argv[2:]
    return array_header(len(items)) + b"".join(integer(tk.count(it)) for it in items)


@command("topk.list")
def topk_list(c, argv):
    if len(argv) > 3:
        raise arity_error("topk.list")
    with_count = False
    if len(argv) == 3:
        # the module compares only as many letters as were given
        a = argv[2].upper()
        if b"WITHCOUNT"[:len(a)] != a:
            raise RedisError("WITHCOUNT keyword expected")
        with_count = True
    tk = _topk(c, argv[1])
    pairs = tk.listing()
    out = [array_header(len(pairs) * (2 if with_count else 1))]
    resp = c.resp
    for item, cnt in pairs:
        # (a NULL C string is a null reply)
        out.append(null(resp) if item is None else _cstr(item))
        if with_count:
            out.append(integer(cnt))
    return b"".join(out)


@command("topk.info")
def topk_info(c, argv):
    tk = _topk(c, argv[1])
    return (map_header(c.resp, 4) + b"+k\r\n" + integer(tk.k) + b"+width\r\n" + integer(tk.width)
            + b"+depth\r\n" + integer(tk.depth) + b"+decay\r\n" + double(c.resp, tk.decay))


# ---------------------------------------------------------------------------
# t-digest
# ---------------------------------------------------------------------------

_TD_NOKEY = RedisError("ERR T-Digest: key does not exist")
_TD_OVERFLOW = RedisError("ERR T-Digest: overflow detected")


def _td(c, key, write=False) -> TDigest:
    return _typed(c, key, TDigest, _TD_NOKEY, write)


def _td_doubles(args, what: str) -> list:
    """The arguments as doubles; ``error parsing <what>`` at the first that
    is not one."""
    out = []
    for a in args:
        x = _double(a)
        if x is None:
            raise RedisError("ERR T-Digest: error parsing " + what)
        out.append(x)
    return out


def _compression(b) -> int:
    v = try_int(b)
    if v is None:
        raise RedisError("ERR T-Digest: error parsing compression parameter")
    if v <= 0:
        raise RedisError("ERR T-Digest: compression parameter needs to be a positive integer")
    return v


def _new_digest(compression: int, msg: str) -> TDigest:
    cap = capacity(compression)
    if cap < 1 or cap > INT_MAX:
        raise RedisError(msg)
    return TDigest(compression)


def _ll(x: float) -> int:
    """C's (long long) of a double on x86-64: NaN and out-of-range values
    become the smallest long long."""
    if x != x or x >= 9.223372036854775807e18 or x < -9.223372036854775808e18:
        return LLONG_MIN
    return int(x)


def _doubles(resp, values) -> bytes:
    return array_header(len(values)) + b"".join(double(resp, v) for v in values)


@command("tdigest.create")
def tdigest_create(c, argv):
    if len(argv) not in (2, 4):
        raise arity_error("tdigest.create")
    key = argv[1]
    old = c.db.lookup_write(key)
    if old is not None:
        if old.__class__ is TDigest:
            raise RedisError("ERR T-Digest: key already exists")
        raise WRONGTYPE
    compression = 100
    if len(argv) == 4:
        if _index_of(b"COMPRESSION", argv[2:]) < 0:
            raise RedisError("ERR T-Digest: wrong keyword")
        compression = _compression(argv[3])
    c.db.set_key(key, _new_digest(compression, "ERR T-Digest: allocation failed"))
    written(c, key)
    return OK


@command("tdigest.reset")
def tdigest_reset(c, argv):
    key = argv[1]
    _td(c, key, True).reset()
    written(c, key)
    return OK


@command("tdigest.add")
def tdigest_add(c, argv):
    key = argv[1]
    td = _td(c, key, True)
    vals = []
    for a in argv[2:]:
        v = _double(a)
        if v is None:
            raise RedisError("ERR T-Digest: error parsing val parameter")
        if v in (math.inf, -math.inf):
            raise RedisError("ERR T-Digest: val parameter needs to be a finite number")
        vals.append(v)
    try:
        td.add_many(vals)
    except Overflow:
        # what was added before stays, unpropagated, as in the module
        c.db.signal(key)
        raise _TD_OVERFLOW from None
    written(c, key)
    return OK


@command("tdigest.merge")
def tdigest_merge(c, argv):
    db = c.db
    key = argv[1]
    start = db.lookup_read(key)
    if start is not None and start.__class__ is not TDigest:
        raise WRONGTYPE
    nkeys = try_int(argv[2])
    if nkeys is None:
        raise RedisError("ERR T-Digest: error parsing numkeys")
    if nkeys <= 0:
        raise RedisError("ERR T-Digest: numkeys needs to be a positive integer")
    if nkeys > len(argv) - 3:
        raise arity_error("tdigest.merge")
    compression = int(start.compression) if start is not None else 0
    use_max = start is None
    override = False
    rest = argv[3 + nkeys:]
    if rest:
        at = _index_of(b"COMPRESSION", rest)
        if at >= 0:
            use_max = False
            if at + 1 >= len(rest):
                raise arity_error("tdigest.merge")
            compression = _compression(rest[at + 1])
        if _index_of(b"OVERRIDE", rest) >= 0:
            override = True
            if at < 0:
                use_max = True
                compression = 0
        elif at < 0:
            raise RedisError("ERR T-Digest: wrong keyword")
    sources = []
    for name in argv[3:3 + nkeys]:
        if name != key:
            src = _td(c, name)
        elif start is not None:
            src = start
        else:
            raise _TD_NOKEY
        sources.append(src)
        if use_max and int(src.compression) > compression:
            compression = int(src.compression)
    to = _new_digest(compression, "ERR T-Digest: allocation of destination digest failed")
    if start is not None and not override:
        try:
            to.merge_from(start)
        except Overflow:
            pass
    try:
        for src in sources:
            to.merge_from(src)
    except Overflow:
        raise _TD_OVERFLOW from None
    if db.lookup_write(key) is not None:
        db.delete(key)
    db.set_key(key, to)
    written(c, key)
    return OK


@command("tdigest.min")
def tdigest_min(c, argv):
    td = _td(c, argv[1])
    return double(c.resp, td.min if td.size() > 0 else NAN)


@command("tdigest.max")
def tdigest_max(c, argv):
    td = _td(c, argv[1])
    return double(c.resp, td.max if td.size() > 0 else NAN)


@command("tdigest.quantile")
def tdigest_quantile(c, argv):
    td = _td(c, argv[1])
    qs = []
    for a in argv[2:]:
        q = _double(a)
        if q is None:
            raise RedisError("ERR T-Digest: error parsing quantile")
        if q < 0 or q > 1.0:
            raise RedisError("ERR T-Digest: quantile should be in [0,1]")
        qs.append(q)
    values = []
    i = 0
    n = len(qs)
    while i < n:
        # each ascending run in one walk, as the module does
        j = i
        while j < n - 1 and qs[j] <= qs[j + 1]:
            j += 1
        values.extend(td.quantiles(qs[i:j + 1]))
        i = j + 1
    return _doubles(c.resp, values)


@command("tdigest.cdf")
def tdigest_cdf(c, argv):
    td = _td(c, argv[1])
    xs = _td_doubles(argv[2:], "cdf")
    return _doubles(c.resp, [td.cdf(x) for x in xs])


@command("tdigest.trimmed_mean")
def tdigest_trimmed_mean(c, argv):
    td = _td(c, argv[1])
    lo = _double(argv[2])
    if lo is None:
        raise RedisError("ERR T-Digest: error parsing low_cut_percentile")
    hi = _double(argv[3])
    if hi is None:
        raise RedisError("ERR T-Digest: error parsing high_cut_percentile")
    if lo < 0.0 or lo > 1.0 or hi < 0.0 or hi > 1.0:
        raise RedisError("ERR T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]")
    if lo >= hi:
        raise RedisError("ERR T-Digest: low_cut_percentile should be lower than high_cut_percentile")
    return double(c.resp, td.trimmed_mean(lo, hi))


def _rank(c, argv, reverse: bool):
    td = _td(c, argv[1])
    xs = _td_doubles(argv[2:], "value")
    size = float(td.size())
    lo = td.min
    hi = td.max
    out = [array_header(len(xs))]
    for x in xs:
        if size == 0:
            r = -2.0
        elif x < lo:
            r = size if reverse else -1.0
        elif x > hi:
            r = -1.0 if reverse else size
        else:
            f = td.cdf(x) * size
            if reverse:
                r = c_round(size - c_round(f))
            else:
                r = half_round_down(f)
        out.append(integer(_ll(r)))
    return b"".join(out)


@command("tdigest.rank")
def tdigest_rank(c, argv):
    return _rank(c, argv, False)


@command("tdigest.revrank")
def tdigest_revrank(c, argv):
    return _rank(c, argv, True)


def _byrank(c, argv, reverse: bool):
    td = _td(c, argv[1])
    ranks = []
    for a in argv[2:]:
        r = try_int(a)
        if r is None:
            raise RedisError("ERR T-Digest: error parsing rank")
        if r < 0:
            raise RedisError("ERR T-Digest: rank needs to be non negative")
        ranks.append(r)
    size = float(td.size())
    values = []
    for r in ranks:
        r = float(r)
        if size == 0:
            v = NAN
        elif r == 0:
            v = td.max if reverse else td.min
        elif r >= size:
            v = -math.inf if reverse else math.inf
        else:
            v = td.quantile((size - r - 1 if reverse else r) / size)
        values.append(v)
    return _doubles(c.resp, values)


@command("tdigest.byrank")
def tdigest_byrank(c, argv):
    return _byrank(c, argv, False)


@command("tdigest.byrevrank")
def tdigest_byrevrank(c, argv):
    return _byrank(c, argv, True)


@command("tdigest.info")
def tdigest_info(c, argv):
    td = _td(c, argv[1])
    fields = ((b"Compression", int(td.compression)), (b"Capacity", td.cap),
              (b"Merged nodes", td.merged_nodes), (b"Unmerged nodes", td.unmerged_nodes),
              (b"Merged weight", td.merged_weight), (b"Unmerged weight", td.unmerged_weight),
              (b"Observations", td.merged_weight + td.unmerged_weight),
              (b"Total compressions", td.total_compressions), (b"Memory usage", td.mem_usage()))
    return map_header(c.resp, len(fields)) + b"".join(simple(k) + integer(v) for k, v in fields)
