"""GEO commands: scores, coordinates, distances and search results must be
byte-identical to redis-server's (RESP2 and RESP3), including the order of
equal distances under COUNT, the errors, STORE/STOREDIST results and
notifications."""

from __future__ import annotations

import random

import pytest
from support.differential import doubles_70
from support.notify import events_of
from support.replication import same_stream
from support.resp import RespConn, bulk
from support.servers import port_of

SICILY = ["13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"]


@pytest.fixture
def conns(r, ref):
    """(ours, theirs): raw connections returning exact reply bytes."""
    ours = RespConn(port_of(r))
    theirs = RespConn(port_of(ref))
    yield ours, theirs
    ours.close()
    theirs.close()


def same(conns, *args):
    ours, theirs = conns
    a = ours.call(*args)
    b = theirs.call(*args)
    if args[0].startswith("Z"):
        # redis-server 7.0 prints doubles with "%.17g", 7.2+ not
        a, b = doubles_70(a), doubles_70(b)
    assert a == b, (args[:12], a[:400], b[:400])
    return a


def _random_points(rng, n, clustered):
    cx = rng.uniform(-179, 179)
    cy = rng.uniform(-80, 80)
    out = []
    for i in range(n):
        if clustered:
            lon = max(-180.0, min(180.0, cx + rng.gauss(0, 1.5)))
            lat = max(-85.0, min(85.0, cy + rng.gauss(0, 1.5)))
        else:
            lon = rng.uniform(-180, 180)
            lat = rng.uniform(-85.05112878, 85.05112878)
        out += [repr(lon), repr(lat), "p%d" % i]
    return out, cx, cy


# ---------------------------------------------------------------------------
# Known values (Redis documentation examples)
# ---------------------------------------------------------------------------
def test_sicily_example(r):
    raw = RespConn(port_of(r))
    try:
        assert raw.call("GEOADD", "Sicily", *SICILY) == b":2\r\n"
        assert raw.call("ZSCORE", "Sicily", "Palermo") == bulk(b"3479099956230698")
        assert raw.call("GEODIST", "Sicily", "Palermo", "Catania") == bulk(b"166274.1516")
        assert raw.call("GEODIST", "Sicily", "Palermo", "Catania", "km") == bulk(b"166.2742")
        assert raw.call("GEOHASH", "Sicily", "Palermo", "Catania", "x") == \
            b"*3\r\n" + bulk(b"sqc8b49rny0") + bulk(b"sqdtr74hyu0") + b"$-1\r\n"
        assert raw.call("GEOPOS", "Sicily", "Palermo", "x") == (
            b"*2\r\n*2\r\n" + bulk(b"13.36138933897018433") + bulk(b"38.11555639549629859") + b"*-1\r\n")
        assert raw.call("GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST", "WITHHASH",
                        "WITHCOORD", "ASC") == (
            b"*2\r\n*4\r\n" + bulk(b"Catania") + bulk(b"56.4413") + b":3479447370796909\r\n*2\r\n"
            + bulk(b"15.08726745843887329") + bulk(b"37.50266842333162032")
            + b"*4\r\n" + bulk(b"Palermo") + bulk(b"190.4424") + b":3479099956230698\r\n*2\r\n"
            + bulk(b"13.36138933897018433") + bulk(b"38.11555639549629859"))
        raw.call("HELLO", "3")
        assert raw.call("GEOPOS", "Sicily", "Catania", "x") == (
            b"*2\r\n*2\r\n,15.08726745843887329\r\n,37.50266842333162032\r\n_\r\n")
        assert raw.call("GEODIST", "Sicily", "Palermo", "x") == b"_\r\n"
    finally:
        raw.close()


def test_small_distance_and_zero(r):
    r.geoadd("points", [-122.407107, 37.794300, "1", -122.227336, 37.794300, "2"])
    assert r.execute_command("GEORADIUS", "points", -122.407107, 37.794300, 30, "mi", "ASC", "WITHDIST") == \
        [[b"1", b"0.0001"], [b"2", b"9.8182"]]
    raw = RespConn(port_of(r))
    try:
        assert raw.call("GEODIST", "points", "1", "1") == bulk(b"0.0000")
        assert raw.call("GEODIST", "points", "1", "2", "ft") == bulk(b"51839.5504")
    finally:
        raw.close()


# ---------------------------------------------------------------------------
# Differential runs
# ---------------------------------------------------------------------------
UNITS = ["m", "km", "ft", "mi", "KM"]


def _options(rng, store):
    opts = []
    if not store:
        for o in ("WITHDIST", "WITHHASH", "WITHCOORD"):
            if rng.random() < 0.5:
                opts.append(o)
    if rng.random() < 0.5:
        opts.append(rng.choice(["ASC", "DESC", "asc"]))
    if rng.random() < 0.5:
        opts += ["COUNT", str(rng.randrange(1, 25))]
        if rng.random() < 0.3:
            opts.append("ANY")
    rng.shuffle(opts[:0])
    return opts


@pytest.mark.parametrize("seed", range(6))
def test_searches_match_redis(conns, seed):
    rng = random.Random(seed)
    if seed % 2:
        for c in conns:
            c.call("HELLO", "3")
    n = [50, 400, 3000][seed % 3]
    clustered = seed % 3 != 0
    pts, cx, cy = _random_points(rng, n, clustered)
    same(conns, "GEOADD", "pts", *pts)
    for _ in range(40):
        m1, m2 = "p%d" % rng.randrange(n), "p%d" % rng.randrange(n)
        same(conns, "GEOPOS", "pts", m1, "nosuch", m2)
        same(conns, "GEOHASH", "pts", m1, m2, "nosuch")
        same(conns, "GEODIST", "pts", m1, m2, rng.choice(UNITS))
        if clustered:
            lon = max(-180.0, min(180.0, cx + rng.gauss(0, 1.5)))
            lat = max(-85.0, min(85.0, cy + rng.gauss(0, 1.5)))
            radius = rng.choice([1, 20, 80, 200, 500])
        else:
            lon, lat = rng.uniform(-180, 180), rng.uniform(-85, 85)
            radius = rng.choice([10, 500, 3000, 8000, 20000])
        unit = rng.choice(["km", "mi"])
        opts = _options(rng, False)
        same(conns, "GEORADIUS", "pts", repr(lon), repr(lat), str(radius), unit, *opts)
        same(conns, "GEORADIUS_RO", "pts", repr(lon), repr(lat), str(radius), unit, *opts)
        same(conns, "GEORADIUSBYMEMBER", "pts", m1, str(radius), unit, *opts)
        same(conns, "GEORADIUSBYMEMBER_RO", "pts", m2, str(radius), unit, *opts)
        w, h = rng.uniform(0, 2 * radius), rng.uniform(0, 2 * radius)
        same(conns, "GEOSEARCH", "pts", "FROMLONLAT", repr(lon), repr(lat), "BYBOX", repr(w), repr(h), unit, *opts)
        same(conns, "GEOSEARCH", "pts", "FROMMEMBER", m1, "BYRADIUS", str(radius), unit, *opts)
        sopts = _options(rng, True)
        if rng.random() < 0.5:
            sopts.append("STOREDIST")
        same(conns, "GEOSEARCHSTORE", "dst", "pts", "FROMLONLAT", repr(lon), repr(lat), "BYRADIUS",
             str(radius), unit, *sopts)
        same(conns, "ZRANGE", "dst", "0", "-1", "WITHSCORES")
        same(conns, "OBJECT", "ENCODING", "dst")
        same(conns, "GEORADIUS", "pts", repr(lon), repr(lat), str(radius), unit,
             *(_options(rng, True) + [rng.choice(["STORE", "STOREDIST"]), "dst2"]))
        same(conns, "ZRANGE", "dst2", "0", "-1", "WITHSCORES")


def test_equal_distances_under_count_match_redis(conns):
    """Many members at a few positions: the order of ties comes from the
    sort Redis uses (stable merge sort, or its partial quicksort when COUNT
    is smaller than the matches)."""
    rng = random.Random(42)
    spots = [(rng.uniform(2.0, 2.4), rng.uniform(48.7, 49.0)) for _ in range(6)]
    args = []
    for i in range(300):
        lon, lat = rng.choice(spots)
        args += [repr(lon), repr(lat), "m%03d" % rng.randrange(1000)]
    same(conns, "GEOADD", "ties", *args)
    for count in (1, 2, 5, 7, 8, 13, 41, 60, 150, 299, 400):
        for order in ("ASC", "DESC"):
            same(conns, "GEORADIUS", "ties", "2.2", "48.85", "100", "km", "COUNT", str(count), order, "WITHDIST")
            same(conns, "GEOSEARCH", "ties", "FROMLONLAT", "2.2", "48.85", "BYBOX", "300", "300", "km",
                 "COUNT", str(count), order)
        same(conns, "GEORADIUS", "ties", "2.2", "48.85", "100", "km", "COUNT", str(count))
        same(conns, "GEORADIUS", "ties", "2.2", "48.85", "100", "km", "COUNT", str(count), "ANY")
    same(conns, "GEORADIUS", "ties", "2.2", "48.85", "100", "km")
    same(conns, "GEORADIUS", "ties", "2.2", "48.85", "100", "km", "DESC")


def test_huge_radius_and_poles(conns):
    rng = random.Random(7)
    pts, _, _ = _random_points(rng, 2000, False)
    pts += ["180", "85.05112878", "ne", "-180", "-85.05112878", "sw", "0", "0", "origin",
            "179.9999", "0", "east", "-179.9999", "0", "west"]
    same(conns, "GEOADD", "world", *pts)
    for lon, lat in (("0", "0"), ("180", "85"), ("-180", "-85"), ("179.99", "-0.5"), ("45", "84.9")):
        for radius in ("0", "1", "5000", "10000", "20000", "40000"):
            same(conns, "GEORADIUS", "world", lon, lat, radius, "km", "WITHDIST", "ASC")
            same(conns, "GEOSEARCH", "world", "FROMLONLAT", lon, lat, "BYBOX", radius, radius, "km", "WITHHASH")
    same(conns, "GEOSEARCH", "world", "FROMMEMBER", "ne", "BYRADIUS", "6000", "mi", "WITHCOORD", "DESC")


def test_zero_sized_areas_hold_the_centre(conns):
    same(conns, "GEOADD", "k", "13.361389", "38.115556", "a", "13.361389", "38.115556", "twin",
         "13.3614", "38.1156", "near")
    for args in (("FROMMEMBER", "a", "BYBOX", "0", "0", "m"), ("FROMMEMBER", "a", "BYRADIUS", "0", "m"),
                 ("FROMMEMBER", "near", "BYBOX", "0", "0", "km")):
        reply = same(conns, "GEOSEARCH", "k", *args, "WITHDIST", "ASC")
        assert reply.startswith(b"*2\r\n") or reply.startswith(b"*1\r\n"), reply
    # The stored position is the centre of its cell, not the input.
    assert same(conns, "GEOSEARCH", "k", "FROMLONLAT", "13.361389", "38.115556", "BYRADIUS", "0", "ft") == \
        b"*0\r\n"


def test_odd_scores_decode_like_redis(conns):
    same(conns, "ZADD", "z", "-5", "neg", "inf", "pinf", "-inf", "ninf", "1e30", "big", "0.5", "half",
         "9223372036854775808", "two63", "18446744073709551616", "two64", "4503599627370496", "two52",
         "4503599627370495", "max52", "0", "zero")
    members = ["neg", "pinf", "ninf", "big", "half", "two63", "two64", "two52", "max52", "zero"]
    same(conns, "GEOPOS", "z", *members)
    same(conns, "GEOHASH", "z", *members)
    same(conns, "GEODIST", "z", "neg", "max52", "mi")
    same(conns, "GEORADIUS", "z", "0", "0", "20000", "km", "WITHHASH", "WITHCOORD", "WITHDIST")


# ---------------------------------------------------------------------------
# GEOADD
# ---------------------------------------------------------------------------
def test_geoadd_options_match_redis(conns):
    same(conns, "GEOADD", "k", "1", "2", "a", "3", "4", "b")
    same(conns, "GEOADD", "k", "NX", "5", "6", "a", "7", "8", "c")
    same(conns, "GEOADD", "k", "XX", "5", "6", "a", "7", "8", "d")
    same(conns, "GEOADD", "k", "CH", "XX", "9", "9", "a", "3", "4", "b")
    same(conns, "GEOADD", "k", "ch", "nx", "ch", "1", "1", "e", "1", "1", "e", "2", "2", "e")
    same(conns, "GEOADD", "k", "1", "1", "f", "2", "2", "f", "1", "1", "f")
    same(conns, "GEOADD", "new", "XX", "1", "1", "a")
    same(conns, "EXISTS", "new")
    same(conns, "ZRANGE", "k", "0", "-1", "WITHSCORES")
    same(conns, "OBJECT", "ENCODING", "k")


def test_geoadd_encoding_follows_zset_limits(conns, r, ref, config):
    for c in (r, ref):
        config(c, zset_max_listpack_entries="4")
    same(conns, "GEOADD", "a", "1", "1", "x" * 70)
    same(conns, "OBJECT", "ENCODING", "a")
    same(conns, "GEOADD", "b", "1", "1", "m1", "2", "2", "m2", "3", "3", "m3", "4", "4", "m4")
    same(conns, "OBJECT", "ENCODING", "b")
    same(conns, "GEOADD", "b", "5", "5", "m5")
    same(conns, "OBJECT", "ENCODING", "b")
    same(conns, "GEORADIUS", "b", "3", "3", "1000", "km", "STORE", "c")
    same(conns, "OBJECT", "ENCODING", "c")
    same(conns, "GEORADIUS", "b", "3", "3", "1000", "km", "COUNT", "2", "STORE", "c")
    same(conns, "OBJECT", "ENCODING", "c")


def test_big_geoadd(r, ref):
    rng = random.Random(3)
    pts, _, _ = _random_points(rng, 20000, False)
    assert r.execute_command("GEOADD", "big", *pts) == ref.execute_command("GEOADD", "big", *pts) == 20000
    assert r.zrange("big", 0, -1, withscores=True) == ref.zrange("big", 0, -1, withscores=True)
    args = ("GEOSEARCH", "big", "FROMLONLAT", "10", "10", "BYRADIUS", "1500", "km", "WITHDIST", "ASC")
    assert r.execute_command(*args) == ref.execute_command(*args)


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------
ERROR_CASES = [
    ("GEOADD", "k", "200", "100", "m"), ("GEOADD", "k", "1", "abc", "m"), ("GEOADD", "k", "nan", "1", "m"),
    ("GEOADD", "k", "inf", "1", "m"), ("GEOADD", "k", "1", "85.05112879", "m"), ("GEOADD", "k", " 1", "2", "m"),
    ("GEOADD", "k", "nx", "xx", "1", "2", "m"), ("GEOADD", "k", "ch", "1", "2"), ("GEOADD", "k", "ch", "ch", "ch"),
    ("GEOADD", "k", "gt", "1", "2", "m"), ("GEOADD", "k", "1", "2"),
    ("GEODIST", "k", "a", "b", "foo"), ("GEODIST", "k", "a", "b", "km", "x"),
    ("GEORADIUS", "k", "0", "0", "-1", "km"), ("GEORADIUS", "k", "0", "0", "abc", "km"),
    ("GEORADIUS", "k", "0", "0", "1", "parsec"), ("GEORADIUS", "k", "0", "0", "1", "km", "count"),
    ("GEORADIUS", "k", "0", "0", "1", "km", "count", "0"), ("GEORADIUS", "k", "0", "0", "1", "km", "count", "x"),
    ("GEORADIUS", "k", "0", "0", "1", "km", "any"), ("GEORADIUS", "k", "0", "0", "1", "km", "withdist", "store", "x"),
    ("GEORADIUS", "k", "0", "0", "1", "km", "store"), ("GEORADIUS", "k", "200", "0", "1", "km"),
    ("GEORADIUS_RO", "k", "0", "0", "1", "km", "store", "x"), ("GEORADIUSBYMEMBER", "k", "nosuch", "1", "km"),
    ("GEORADIUSBYMEMBER", "k", "a", "1", "km", "bogus"),
    ("GEOSEARCH", "k", "fromlonlat", "0", "0"), ("GEOSEARCH", "k", "byradius", "1", "km"),
    ("GeoSearch", "k", "fromlonlat", "0", "0", "withdist", "asc"),
    ("GEOSEARCH", "k", "byradius", "1", "km", "withdist", "asc"),
    ("GEOSEARCH", "k", "frommember", "a", "fromlonlat", "0", "0", "byradius", "1", "km"),
    ("GEOSEARCH", "k", "fromlonlat", "0", "0", "byradius", "1", "km", "bybox", "1", "1", "km"),
    ("GEOSEARCH", "k", "fromlonlat", "0", "0", "bybox", "-1", "1", "km"),
    ("GEOSEARCH", "k", "fromlonlat", "0", "0", "bybox", "a", "1", "km"),
    ("GEOSEARCH", "k", "fromlonlat", "0", "0", "bybox", "1", "b", "km"),
    ("GEOSEARCH", "k", "fromlonlat", "0", "0", "bybox", "1", "1", "au"),
    ("GEOSEARCH", "k", "frommember", "nosuch", "byradius", "1", "km"),
    ("GEOSEARCH", "k", "fromlonlat", "0", "0", "byradius", "1", "km", "store", "x"),
    ("GEOSEARCH", "k", "fromlonlat", "0", "0", "byradius", "1", "km", "storedist"),
    ("GEOSEARCHSTORE", "d", "k", "fromlonlat", "0", "0", "byradius", "1", "km", "withdist"),
    ("GEOSEARCHSTORE", "d", "k", "fromlonlat", "0", "0", "byradius", "1", "km", "store", "x"),
    ("GEOSEARCHSTORE", "d", "k", "fromlonlat", "0", "0", "byradius", "1", "km", "count", "1", "any", "any"),
    ("GEOADD", "str", "1", "1", "a"), ("GEOPOS", "str", "a"), ("GEODIST", "str", "a", "b"),
    ("GEOHASH", "str", "a"), ("GEORADIUS", "str", "1", "1", "1", "km"), ("GEORADIUS", "str", "1000", "1", "1", "km"),
    ("GEOSEARCH", "str", "fromlonlat", "0", "0", "byradius", "1", "km"),
    ("GEOSEARCHSTORE", "d", "str", "fromlonlat", "0", "0", "byradius", "1", "km"),
    ("GEOADD", "k"), ("GEOPOS",), ("GEOSEARCH", "k", "fromlonlat", "0"),
]


def test_errors_match_redis(conns):
    for c in conns:
        c.call("GEOADD", "k", "1", "1", "a", "2", "2", "b")
        c.call("SET", "str", "x")
    errors = 0
    for args in ERROR_CASES:
        reply = same(conns, *args)
        errors += reply.startswith(b"-")
    assert errors >= len(ERROR_CASES) - 3
    assert same(conns, "GEOADD", "k", "200", "100", "m") == \
        b"-ERR invalid longitude,latitude pair 200.000000,100.000000\r\n"
    assert same(conns, "GEORADIUS", "k", "0", "0", "1", "parsec") == \
        b"-ERR unsupported unit provided. please use M, KM, FT, MI\r\n"
    assert same(conns, "GeoSearch", "k", "fromlonlat", "0", "0", "withdist", "asc") == \
        b"-ERR exactly one of BYRADIUS and BYBOX can be specified for GeoSearch\r\n"


def test_missing_keys_and_members(conns):
    for args in (("GEOPOS", "nokey", "a", "b"), ("GEOHASH", "nokey", "a"), ("GEODIST", "nokey", "a", "b"),
                 ("GEORADIUS", "nokey", "0", "0", "1", "km"), ("GEORADIUSBYMEMBER", "nokey", "m", "abc", "km"),
                 ("GEOSEARCH", "nokey", "frommember", "m", "byradius", "1", "km"),
                 ("GEOPOS", "nokey"), ("GEOHASH", "nokey")):
        same(conns, *args)
    for c in conns:
        c.call("SET", "d", "old")
    assert same(conns, "GEOSEARCHSTORE", "d", "nokey", "fromlonlat", "0", "0", "byradius", "1", "km") == b":0\r\n"
    assert same(conns, "EXISTS", "d") == b":0\r\n"
    for c in conns:
        c.call("GEOADD", "k", "1", "1", "a")
        c.call("SET", "d", "old")
    assert same(conns, "GEORADIUS", "k", "50", "50", "1", "km", "STORE", "d") == b":0\r\n"
    assert same(conns, "EXISTS", "d") == b":0\r\n"


# ---------------------------------------------------------------------------
# STORE / STOREDIST, notifications, propagation
# ---------------------------------------------------------------------------
def test_store_and_storedist(r, ref):
    for c in (r, ref):
        c.geoadd("Sicily", [13.361389, 38.115556, "Palermo", 15.087269, 37.502669, "Catania"])
        c.set("dst", "x", ex=100)
    args = ("GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "STOREDIST")
    assert r.execute_command(*args) == ref.execute_command(*args) == 2
    assert r.ttl("dst") == -1
    assert r.zrange("dst", 0, -1, withscores=True) == ref.zrange("dst", 0, -1, withscores=True) == \
        [(b"Catania", 56.4412578701582), (b"Palermo", 190.44242984775784)]
    r.execute_command("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "dst2")
    assert r.zscore("dst2", "Palermo") == 3479099956230698


def test_notifications(r):
    got = events_of(r, [
        ["GEOADD", "g", 1, 1, "a", 2, 2, "b"],
        ["GEOADD", "g", 1, 1, "a"],                     # no change: no event
        ["GEORADIUS", "g", "1", "1", "500", "km", "STORE", "s1"],
        ["GEOSEARCHSTORE", "s2", "g", "FROMMEMBER", "a", "BYRADIUS", "500", "km"],
        ["GEOSEARCHSTORE", "s2", "g", "FROMLONLAT", "80", "0", "BYRADIUS", "1", "km"],
        ["GEOSEARCH", "g", "FROMMEMBER", "a", "BYRADIUS", "500", "km"],
    ])
    assert got == [
        (b"__keyspace@0__:g", b"zadd"), (b"__keyevent@0__:zadd", b"g"),
        (b"__keyspace@0__:s1", b"georadiusstore"), (b"__keyevent@0__:georadiusstore", b"s1"),
        (b"__keyspace@0__:s2", b"geosearchstore"), (b"__keyevent@0__:geosearchstore", b"s2"),
        (b"__keyspace@0__:s2", b"del"), (b"__keyevent@0__:del", b"s2"),
    ]


def test_replication_stream_matches_redis(server, r, redis_server, ref, config):
    def workload(c):
        c.geoadd("g", [13.361389, 38.115556, "Palermo", 15.087269, 37.502669, "Catania"])
        c.execute_command("GEOADD", "g", "CH", "XX", "13.5", "38.1", "Palermo", "1", "1", "nobody")
        c.execute_command("GEOADD", "g", "NX", "13.5", "38.1", "Palermo")          # nothing changes
        c.execute_command("GEORADIUS", "g", "15", "37", "200", "km", "STORE", "s")
        c.execute_command("GEOSEARCHSTORE", "s2", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "10", "km",
                          "STOREDIST")
        c.execute_command("GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "10", "km")
        c.set("last", "1")

    ours = same_stream(server, r, redis_server, ref, config, workload)
    assert ours[1][0] == b"zadd" and ours[1][2] == b"3479099956230698"
