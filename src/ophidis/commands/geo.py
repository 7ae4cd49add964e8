"""GEO commands (geo.c): GEOADD, GEODIST, GEOHASH, GEOPOS, GEORADIUS,
GEORADIUSBYMEMBER (and their _RO forms), GEOSEARCH, GEOSEARCHSTORE.

A geo set is a sorted set whose scores are 52-bit geohashes (see
``ophidis.types.geohash``).  GEOADD is ZADD with computed scores (it replies,
notifies and propagates as ZADD does).  Searches scan the score ranges of
the nine cells around the centre, in Redis's order, filter by distance or
box, then sort by distance: a full sort is stable (glibc's qsort is a merge
sort), a partial one (COUNT smaller than the matches) follows Redis's
pqsort step by step, so ties come out in the same order as in redis-server.
"""

from __future__ import annotations

import re

from ..cmdtable.registry import command
from ..errors import SYNTAX, RedisError
from ..keyspace import notify
from ..keyspace.db import signal_key_ready
from ..protocol.resp import EMPTY_ARRAY, ZERO, integer
from ..replication.propagate import propagating, rewrite_argv
from ..types import geohash as gh
from ..types.zset import ZSetValue
from ..util import parse_int
from . import zsets
from .numparse import string2d

_ZSET = notify.ZSET

NOT_FLOAT = RedisError("ERR value is not a valid float")
BAD_UNIT = RedisError("ERR unsupported unit provided. please use M, KM, FT, MI")
NO_MEMBER = RedisError("ERR could not decode requested zset member")

_LAT_MIN = gh.LAT_MIN
_LAT_MAX = gh.LAT_MAX
_UNITS = {b"m": 1.0, b"km": 1000.0, b"ft": 0.3048, b"mi": 1609.34}


# ---------------------------------------------------------------------------
# Argument helpers
# ---------------------------------------------------------------------------
_PLAIN = re.compile(rb"-?[0-9]{1,20}(?:\.[0-9]{1,40})?\Z").match


def _double(b, err=NOT_FLOAT):
    if _PLAIN(b) is not None:
        return float(b)
    v = string2d(b)
    if v is None:
        raise err
    return v


def _lonlat(blon, blat):
    lon = _double(blon)
    lat = _double(blat)
    if lon < gh.LONG_MIN or lon > gh.LONG_MAX or lat < gh.LAT_MIN or lat > gh.LAT_MAX:
        raise RedisError(("ERR invalid longitude,latitude pair %f,%f" % (lon, lat)).encode())
    return lon, lat


def _unit(b):
    f = _UNITS.get(b.lower())
    if f is None:
        raise BAD_UNIT
    return f


def _distance_arg(bval, bunit):
    d = _double(bval, RedisError("ERR need numeric radius"))
    if d < 0:
        raise RedisError("ERR radius cannot be negative")
    return d, _unit(bunit)


def _box_arg(bw, bh, bunit):
    w = _double(bw, RedisError("ERR need numeric width"))
    h = _double(bh, RedisError("ERR need numeric height"))
    if h < 0 or w < 0:
        raise RedisError("ERR height or width cannot be negative")
    return w, h, _unit(bunit)


def _member_pos(z, member):
    s = z.dict.get(member)
    if s is None:
        raise NO_MEMBER
    return gh.decode_score(s)


# ---------------------------------------------------------------------------
# Reply formatting
# ---------------------------------------------------------------------------
def fmt_distance(d) -> bytes:
    """fixedpoint_d2string(d, 4): rounded (half to even) to 4 decimals."""
    if d == 0:
        return b"0.0000"
    x = d * 10000.0
    if x != x or x >= 9.2233720368547758e18 or x < -9.2233720368547758e18:
        v = -(1 << 63)
    else:
        v = round(x)
    neg = v < 0
    s = b"%05d" % (-v if neg else v)
    s = s[:-4] + b"." + s[-4:]
    return b"-" + s if neg else s


def fmt_coord(d) -> bytes:
    """ld2string(LD_STR_HUMAN): "%.17f" without trailing zeros."""
    if d == float("inf"):
        return b"inf"
    if d == float("-inf"):
        return b"-inf"
    s = (b"%.17f" % d).rstrip(b"0")
    if s.endswith(b"."):
        s = s[:-1]
    if s == b"-0":
        s = b"0"
    return s


def _bulk(s):
    return b"$%d\r\n%s\r\n" % (len(s), s)


def _coord_reply(c, d):
    s = fmt_coord(d)
    if c.resp >= 3:
        return b",%s\r\n" % s
    return b"$%d\r\n%s\r\n" % (len(s), s)


def _pos_reply(c, lon, lat):
    return b"*2\r\n" + _coord_reply(c, lon) + _coord_reply(c, lat)


# ---------------------------------------------------------------------------
# GEOADD
# ---------------------------------------------------------------------------
@command("geoadd")
def geoadd(c, argv):
    n = len(argv)
    xx = nx = ch = False
    i = 2
    while i < n:
        opt = argv[i].lower()
        if opt == b"nx":
            nx = True
        elif opt == b"xx":
            xx = True
        elif opt == b"ch":
            ch = True
        else:
            break
        i += 1
    if (n - i) % 3 or (xx and nx):
        raise SYNTAX
    if n == i:
        # Nothing to add: ZADD's own error.
        raise SYNTAX
    encode52 = gh.encode52
    plain = _PLAIN
    pairs = []
    ap = pairs.append
    for j in range(i, n, 3):
        blon = argv[j]
        blat = argv[j + 1]
        if plain(blon) is not None and plain(blat) is not None:
            lon = float(blon)
            lat = float(blat)
            if lon < -180.0 or lon > 180.0 or lat < _LAT_MIN or lat > _LAT_MAX:
                _lonlat(blon, blat)     # raises Redis's error
        else:
            lon, lat = _lonlat(blon, blat)
        ap((float(encode52(lon, lat)), argv[j + 2]))
    reply = _zadd_pairs(c, argv[1], pairs, nx, xx, ch)
    if propagating(c.server):
        # Replicated as the ZADD it is.
        zargv = [b"zadd"] + argv[1:i]
        for score, member in pairs:
            zargv.append(b"%d" % score)
            zargv.append(member)
        rewrite_argv(c, zargv)
    return reply


def _zadd_pairs(c, key, pairs, nx, xx, ch):
    """ZADD key [NX|XX] [CH] score member ... with parsed scores (the path
    of zsets' ZADD, applied in bulk to the ordered index)."""
    db = c.db
    z = db.lookup_write_typed(key, ZSetValue)
    cfg = c.server.config.values
    entries = cfg["zset-max-listpack-entries"]
    maxval = cfg["zset-max-listpack-value"]
    created = False
    if z is None:
        if xx:
            return ZERO
        z = ZSetValue()
        if entries == 0 or maxval < len(pairs[0][1]):
            z.skiplist = True
        db.add(key, z)
        created = True
    d = z.dict
    orig = {}          # member -> score it has in the index (before this command)
    added = updated = 0
    skiplist = z.skiplist
    for score, member in pairs:
        cur = d.get(member)
        if cur is not None:
            if nx or score == cur:
                continue
            if member not in orig:
                orig[member] = cur
            d[member] = score
            updated += 1
        elif not xx:
            if not skiplist and (len(d) + 1 > entries or len(member) > maxval):
                skiplist = True
            if member not in orig:
                orig[member] = None
            d[member] = score
            added += 1
    if orig:
        sl = z.sl
        for member, old in orig.items():
            if old is not None:
                sl.remove(old, member)
        sl.update([(d[m], m) for m in orig])
    z.skiplist = skiplist
    c.server.dirty += added + updated
    if added or updated:
        if not created:
            db.signal(key)
            signal_key_ready(db, key)
        notify.notify(_ZSET, b"zadd", key, db.id)
    return integer(added + updated if ch else added)


# ---------------------------------------------------------------------------
# GEOPOS, GEOHASH, GEODIST
# ---------------------------------------------------------------------------
def _per_member(c, argv, missing, encode):
    """GEOPOS / GEOHASH: a reply per member argv[2:], ``missing`` for one
    not in the set, ``encode(lon, lat)`` for the others."""
    z = c.db.lookup_read_typed(argv[1], ZSetValue)
    d = z.dict if z is not None else {}
    out = [b"*%d\r\n" % (len(argv) - 2)]
    for m in argv[2:]:
        s = d.get(m)
        out.append(missing if s is None else encode(*gh.decode_score(s)))
    return b"".join(out)


@command("geopos")
def geopos(c, argv):
    return _per_member(c, argv, c.null_array, lambda lon, lat: _pos_reply(c, lon, lat))


@command("geohash")
def geohash(c, argv):
    return _per_member(c, argv, c.null, lambda lon, lat: b"$11\r\n%s\r\n" % gh.standard_geohash(lon, lat))


@command("geodist")
def geodist(c, argv):
    n = len(argv)
    to_meter = 1.0
    if n == 5:
        to_meter = _unit(argv[4])
    elif n > 5:
        raise SYNTAX
    z = c.db.lookup_read_typed(argv[1], ZSetValue)
    if z is None:
        return c.null
    s1 = z.dict.get(argv[2])
    s2 = z.dict.get(argv[3])
    if s1 is None or s2 is None:
        return c.null
    lon1, lat1 = gh.decode_score(s1)
    lon2, lat2 = gh.decode_score(s2)
    return _bulk(fmt_distance(gh.distance(lon1, lat1, lon2, lat2) / to_meter))


# ---------------------------------------------------------------------------
# Searches
# ---------------------------------------------------------------------------
RADIUS_COORDS = 1
RADIUS_MEMBER = 2
RADIUS_NOSTORE = 4
GEOSEARCH = 8
GEOSEARCHSTORE = 16

SORT_NONE, SORT_ASC, SORT_DESC = 0, 1, 2


def _points_in_boxes(z, shape, limit):
    """Matches as [dist, score, lon, lat, member], box by box in Redis's
    order; with limit (ANY), stop once that many were found."""
    found = []
    sl = z.sl
    within = shape.within
    decode = gh.decode_score
    boxes = shape.search_boxes()
    last = 0
    for i, box in enumerate(boxes):
        if box is None:
            continue
        # With huge radiuses neighbours can be the same cell: a cell equal
        # to the last one scanned (not the centre) is skipped.
        if last and box == boxes[last]:
            continue
        if found and limit and len(found) >= limit:
            break
        mn, mx = gh.score_range(*box)
        lo, hi = z.score_range(mn, False, mx, True)
        for score, member in sl.islice(lo, hi):
            lon, lat = decode(score)
            dist = within(lon, lat)
            if dist is not None:
                found.append([dist, score, lon, lat, member])
                if limit and len(found) >= limit:
                    break
        last = i
    return found


def _cmp_asc(a, b):
    da = a[0]
    db = b[0]
    if da > db:
        return 1
    if da == db:
        return 0
    return -1


def _cmp_desc(a, b):
    return -_cmp_asc(a, b)


def _med3(a, i, j, k, cmp):
    if cmp(a[i], a[j]) < 0:
        if cmp(a[j], a[k]) < 0:
            return j
        return k if cmp(a[i], a[k]) < 0 else i
    if cmp(a[j], a[k]) > 0:
        return j
    return i if cmp(a[i], a[k]) < 0 else k


def _vecswap(a, i, j, n):
    for t in range(n):
        a[i + t], a[j + t] = a[j + t], a[i + t]


def pqsort(a, cmp, lrange, rrange):
    """Partial quicksort (Bentley & McIlroy, as Redis's pqsort): afterwards
    positions lrange..rrange hold what a full sort would put there."""
    _pqsort(a, 0, len(a), cmp, lrange, rrange)


def _pqsort(a, base, n, cmp, lo, hi):
    while True:
        if n < 7:
            for pm in range(base + 1, base + n):
                pl = pm
                while pl > base and cmp(a[pl - 1], a[pl]) > 0:
                    a[pl], a[pl - 1] = a[pl - 1], a[pl]
                    pl -= 1
            return
        pm = base + n // 2
        if n > 7:
            pl = base
            pn = base + n - 1
            if n > 40:
                d = n // 8
                pl = _med3(a, pl, pl + d, pl + 2 * d, cmp)
                pm = _med3(a, pm - d, pm, pm + d, cmp)
                pn = _med3(a, pn - 2 * d, pn - d, pn, cmp)
            pm = _med3(a, pl, pm, pn, cmp)
        a[base], a[pm] = a[pm], a[base]
        pivot = a[base]
        pa = pb = base + 1
        pc = pd = base + n - 1
        while True:
            while pb <= pc:
                r = cmp(a[pb], pivot)
                if r > 0:
                    break
                if r == 0:
                    a[pa], a[pb] = a[pb], a[pa]
                    pa += 1
                pb += 1
            while pb <= pc:
                r = cmp(a[pc], pivot)
                if r < 0:
                    break
                if r == 0:
                    a[pc], a[pd] = a[pd], a[pc]
                    pd -= 1
                pc -= 1
            if pb > pc:
                break
            a[pb], a[pc] = a[pc], a[pb]
            pb += 1
            pc -= 1
        pn = base + n
        r = min(pa - base, pb - pa)
        _vecswap(a, base, pb - r, r)
        r = min(pd - pc, pn - pd - 1)
        _vecswap(a, pb, pn - r, r)
        r = pb - pa
        if r > 1:
            last = base + r - 1
            if not ((lo < base and hi < base) or (lo > last and hi > last)):
                _pqsort(a, base, r, cmp, lo, hi)
        r = pd - pc
        if r > 1:
            base = pn - r
            n = r
            last = base + r - 1
            if not ((lo < base and hi < base) or (lo > last and hi > last)):
                continue
        return


def _georadius(c, argv, src_idx, flags):
    db = c.db
    z = db.lookup_read_typed(argv[src_idx], ZSetValue)
    storekey = None
    storedist = False
    shape = gh.Shape()
    n = len(argv)
    if flags & RADIUS_COORDS:
        base = 6
        shape.lon, shape.lat = _lonlat(argv[2], argv[3])
        shape.radius, shape.conversion = _distance_arg(argv[4], argv[5])
    elif flags & RADIUS_MEMBER:
        base = 5
        if z is not None:
            shape.lon, shape.lat = _member_pos(z, argv[2])
            shape.radius, shape.conversion = _distance_arg(argv[3], argv[4])
    else:
        base = 2
        if flags & GEOSEARCHSTORE:
            base = 3
            storekey = argv[1]
    withdist = withhash = withcoord = False
    frommember = fromloc = byradius = bybox = False
    sort = SORT_NONE
    any_ = False
    count = 0
    geosearch = flags & GEOSEARCH
    nostore = flags & RADIUS_NOSTORE
    remaining = n - base
    i = 0
    while i < remaining:
        j = base + i
        arg = argv[j].lower()
        if arg == b"withdist":
            withdist = True
        elif arg == b"withhash":
            withhash = True
        elif arg == b"withcoord":
            withcoord = True
        elif arg == b"any":
            any_ = True
        elif arg == b"asc":
            sort = SORT_ASC
        elif arg == b"desc":
            sort = SORT_DESC
        elif arg == b"count" and i + 1 < remaining:
            count = parse_int(argv[j + 1])
            if count <= 0:
                raise RedisError("ERR COUNT must be > 0")
            i += 1
        elif arg == b"store" and i + 1 < remaining and not nostore and not geosearch:
            storekey = argv[j + 1]
            storedist = False
            i += 1
        elif arg == b"storedist" and i + 1 < remaining and not nostore and not geosearch:
            storekey = argv[j + 1]
            storedist = True
            i += 1
        elif arg == b"storedist" and geosearch and flags & GEOSEARCHSTORE:
            storedist = True
        elif arg == b"frommember" and i + 1 < remaining and geosearch and not fromloc:
            if z is not None:
                shape.lon, shape.lat = _member_pos(z, argv[j + 1])
            frommember = True
            i += 1
        elif arg == b"fromlonlat" and i + 2 < remaining and geosearch and not frommember:
            shape.lon, shape.lat = _lonlat(argv[j + 1], argv[j + 2])
            fromloc = True
            i += 2
        elif arg == b"byradius" and i + 2 < remaining and geosearch and not bybox:
            shape.radius, shape.conversion = _distance_arg(argv[j + 1], argv[j + 2])
            shape.circular = True
            byradius = True
            i += 2
        elif arg == b"bybox" and i + 3 < remaining and geosearch and not byradius:
            shape.width, shape.height, shape.conversion = _box_arg(argv[j + 1], argv[j + 2], argv[j + 3])
            shape.circular = False
            bybox = True
            i += 3
        else:
            raise SYNTAX
        i += 1

    if storekey is not None and (withdist or withhash or withcoord):
        raise RedisError("ERR %s is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
                         % ("GEOSEARCHSTORE" if flags & GEOSEARCHSTORE else "STORE option in GEORADIUS"))
    if geosearch and not (frommember or fromloc):
        raise RedisError(b"ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + argv[0])
    if geosearch and not (byradius or bybox):
        raise RedisError(b"ERR exactly one of BYRADIUS and BYBOX can be specified for " + argv[0])
    if any_ and not count:
        raise RedisError("ERR the ANY argument requires COUNT argument")

    if z is None:
        if storekey is not None:
            db.delete_destination(storekey)
            return ZERO
        return EMPTY_ARRAY

    if count and sort == SORT_NONE and not any_:
        sort = SORT_ASC

    found = _points_in_boxes(z, shape, count if any_ else 0)
    if not found and storekey is None:
        return EMPTY_ARRAY
    total = len(found)
    returned = total if not count or total < count else count
    if sort != SORT_NONE:
        if returned == total:
            found.sort(key=_dist_key, reverse=sort == SORT_DESC)
        else:
            pqsort(found, _cmp_asc if sort == SORT_ASC else _cmp_desc, 0, returned - 1)

    conversion = shape.conversion
    if storekey is None:
        nopts = withdist + withhash + withcoord
        out = [b"*%d\r\n" % returned]
        ap = out.append
        for k in range(returned):
            dist, score, lon, lat, member = found[k]
            if nopts:
                ap(b"*%d\r\n" % (nopts + 1))
            ap(b"$%d\r\n%s\r\n" % (len(member), member))
            if withdist:
                ap(_bulk(fmt_distance(dist / conversion)))
            if withhash:
                ap(b":%d\r\n" % _score_ll(score))
            if withcoord:
                ap(_pos_reply(c, lon, lat))
        return b"".join(out)

    if returned:
        res = ZSetValue()
        d = res.dict
        for k in range(returned):
            dist, score, lon, lat, member = found[k]
            d[member] = dist / conversion if storedist else score
        res.sl.update((s, m) for m, s in d.items())
        zsets.finish_store_result(c, res)
        db.store(storekey, res)
        notify.notify(_ZSET, b"geosearchstore" if geosearch else b"georadiusstore", storekey, db.id)
        c.server.dirty += returned
    else:
        db.delete_destination(storekey)
    return integer(returned)


def _dist_key(p):
    return p[0]


def _score_ll(score) -> int:
    """(long long) of a score as addReplyLongLong receives it."""
    if score != score or score >= 9.2233720368547758e18 or score < -9.2233720368547758e18:
        return -(1 << 63)
    return int(score)


@command("georadius")
def georadius(c, argv):
    return _georadius(c, argv, 1, RADIUS_COORDS)


@command("georadius_ro")
def georadius_ro(c, argv):
    return _georadius(c, argv, 1, RADIUS_COORDS | RADIUS_NOSTORE)


@command("georadiusbymember")
def georadiusbymember(c, argv):
    return _georadius(c, argv, 1, RADIUS_MEMBER)


@command("georadiusbymember_ro")
def georadiusbymember_ro(c, argv):
    return _georadius(c, argv, 1, RADIUS_MEMBER | RADIUS_NOSTORE)


@command("geosearch")
def geosearch(c, argv):
    return _georadius(c, argv, 1, GEOSEARCH)


@command("geosearchstore")
def geosearchstore(c, argv):
    return _georadius(c, argv, 2, GEOSEARCH | GEOSEARCHSTORE)
