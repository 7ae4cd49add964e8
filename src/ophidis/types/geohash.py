"""Geohash arithmetic of Redis's GEO commands (geohash.c, geohash_helper.c).

Pure functions, no I/O.  A position is stored as a sorted set score: the
52-bit interleave of a 26-bit latitude cell (even bits) and a 26-bit
longitude cell (odd bits), over longitudes -180..180 and latitudes
-85.05112878..85.05112878 (the Web Mercator limits).  Decoding returns the
centre of the cell.  Searches look at the cell containing the centre and
its 8 neighbours at a precision chosen from the radius, then filter by
haversine distance (Earth radius 6372797.560856 m) or by the box.

Every computation uses the same double operations, in the same order, as
redis-server, so that replies (coordinates printed with 17 decimals,
distances with 4) are identical.
"""

from __future__ import annotations

import math

LONG_MIN = -180.0
LONG_MAX = 180.0
LAT_MIN = -85.05112878
LAT_MAX = 85.05112878
STEP_MAX = 26
EARTH_RADIUS = 6372797.560856
MERCATOR_MAX = 20037726.37
D_R = math.pi / 180.0

_sin = math.sin
_cos = math.cos
_asin = math.asin
_sqrt = math.sqrt
_U64 = 0xFFFFFFFFFFFFFFFF
_TWO63 = 9223372036854775808.0

# ---------------------------------------------------------------------------
# Bit interleaving
# ---------------------------------------------------------------------------
# Byte -> its bits spread to the even positions of 16 bits; byte -> its
# even bits and its odd bits, packed (4 bits each).
_SPREAD = [0] * 256
_EVEN = [0] * 256
_ODD = [0] * 256
for _i in range(256):
    _s = _e = _o = 0
    for _b in range(8):
        if _i >> _b & 1:
            _s |= 1 << (2 * _b)
    for _b in range(4):
        _e |= (_i >> (2 * _b) & 1) << _b
        _o |= (_i >> (2 * _b + 1) & 1) << _b
    _SPREAD[_i] = _s
    _EVEN[_i] = _e
    _ODD[_i] = _o
del _i, _s, _b, _e, _o


# 16-bit value -> its bits on the even positions of 32 bits.
SPREAD16 = [_SPREAD[_i & 0xFF] | _SPREAD[_i >> 8] << 16 for _i in range(65536)]


def interleave(xlo, ylo) -> int:
    """x (latitude cell) on even bits, y (longitude cell) on odd bits."""
    sp = SPREAD16
    xlo &= 0xFFFFFFFF
    ylo &= 0xFFFFFFFF
    return (sp[xlo & 0xFFFF] | sp[xlo >> 16] << 32
            | (sp[ylo & 0xFFFF] | sp[ylo >> 16] << 32) << 1)


def deinterleave(bits):
    """(even bits, odd bits) of a 64-bit value, as two 32-bit integers."""
    ev = _EVEN
    od = _ODD
    x = y = 0
    for sh in (0, 8, 16, 24, 32, 40, 48, 56):
        byte = (bits >> sh) & 0xFF
        x |= ev[byte] << (sh >> 1)
        y |= od[byte] << (sh >> 1)
    return x, y


# ---------------------------------------------------------------------------
# Encoding and decoding
# ---------------------------------------------------------------------------
def encode(lon, lat, step, lon_min=LONG_MIN, lon_max=LONG_MAX, lat_min=LAT_MIN, lat_max=LAT_MAX):
    """The step*2-bit hash of a position, or None outside the ranges."""
    if lon > LONG_MAX or lon < LONG_MIN or lat > LAT_MAX or lat < LAT_MIN:
        return None
    if lat < lat_min or lat > lat_max or lon < lon_min or lon > lon_max:
        return None
    lat_off = (lat - lat_min) / (lat_max - lat_min)
    lon_off = (lon - lon_min) / (lon_max - lon_min)
    scale = float(1 << step)
    lat_off *= scale
    lon_off *= scale
    return interleave(int(lat_off), int(lon_off))


LAT_SCALE = LAT_MAX - LAT_MIN
LONG_SCALE = LONG_MAX - LONG_MIN


def encode52(lon, lat) -> int:
    """Sorted set score (as an integer) of a valid position (inside the
    ranges: callers check)."""
    sp = SPREAD16
    x = int((lat - LAT_MIN) / LAT_SCALE * 67108864.0)
    y = int((lon - LONG_MIN) / LONG_SCALE * 67108864.0)
    return (sp[x & 0xFFFF] | sp[x >> 16] << 32
            | (sp[y & 0xFFFF] | sp[y >> 16] << 32) << 1)


def decode_area(bits, step):
    """(lon_min, lon_max, lat_min, lat_max) of the cell of a hash."""
    ilat, ilon = deinterleave(bits)
    div = float(1 << step)
    lat_scale = LAT_MAX - LAT_MIN
    lon_scale = LONG_MAX - LONG_MIN
    return (LONG_MIN + (ilon * 1.0 / div) * lon_scale,
            LONG_MIN + (((ilon + 1) & 0xFFFFFFFF) * 1.0 / div) * lon_scale,
            LAT_MIN + (ilat * 1.0 / div) * lat_scale,
            LAT_MIN + (((ilat + 1) & 0xFFFFFFFF) * 1.0 / div) * lat_scale)


def score_to_bits(d) -> int:
    """C's (uint64_t) conversion of a double score, as x86-64 code does it
    (out of range values give what the conversion instructions give)."""
    if d >= _TWO63:
        d -= _TWO63
        v = int(d) if d < _TWO63 else 1 << 63
        return v ^ (1 << 63)
    if d != d or d < -_TWO63:
        return 1 << 63
    return int(d) & _U64


def decode_score(score):
    """(longitude, latitude) of the centre of the cell a score denotes."""
    lon_min, lon_max, lat_min, lat_max = decode_area(score_to_bits(score), STEP_MAX)
    lon = (lon_min + lon_max) / 2
    if lon > LONG_MAX:
        lon = LONG_MAX
    if lon < LONG_MIN:
        lon = LONG_MIN
    lat = (lat_min + lat_max) / 2
    if lat > LAT_MAX:
        lat = LAT_MAX
    if lat < LAT_MIN:
        lat = LAT_MIN
    return lon, lat


_ALPHABET = b"0123456789bcdefghjkmnpqrstuvwxyz"


def standard_geohash(lon, lat) -> bytes:
    """The 11-character geohash (over latitudes -90..90) of a position."""
    bits = encode(lon, lat, 26, -180.0, 180.0, -90.0, 90.0)
    if bits is None:
        bits = 0
    out = bytearray(11)
    for i in range(10):
        out[i] = _ALPHABET[(bits >> (52 - (i + 1) * 5)) & 0x1F]
    out[10] = _ALPHABET[0]
    return bytes(out)


# ---------------------------------------------------------------------------
# Neighbours and search areas
# ---------------------------------------------------------------------------
_X_BITS = 0xAAAAAAAAAAAAAAAA     # longitude's bits of an interleaved hash
_Y_BITS = 0x5555555555555555     # latitude's


def _move(bits, step, d, own, other):
    """geohash_move_x / geohash_move_y: the cell d (-1, 0 or 1) cells away
    along the axis whose bits are ``own`` (the other axis's: ``other``)."""
    if d == 0:
        return bits
    a = bits & own
    b = bits & other
    zz = other >> (64 - step * 2)
    if d > 0:
        a = a + (zz + 1)
    else:
        a = a | zz
        a = a - (zz + 1)
    a &= _U64
    a &= own >> (64 - step * 2)
    return a | b


def neighbors(bits, step):
    """(north, south, east, west, north_east, north_west, south_east,
    south_west) hashes of a cell."""
    def mv(dx, dy):
        return _move(_move(bits, step, dx, _X_BITS, _Y_BITS), step, dy, _Y_BITS, _X_BITS)
    return (mv(0, 1), mv(0, -1), mv(1, 0), mv(-1, 0),
            mv(1, 1), mv(-1, 1), mv(1, -1), mv(-1, -1))


def estimate_steps(range_meters, lat) -> int:
    if range_meters == 0:
        return 26
    step = 1
    while range_meters < MERCATOR_MAX:
        range_meters *= 2
        step += 1
    step -= 2
    if lat > 66 or lat < -66:
        step -= 1
        if lat > 80 or lat < -80:
            step -= 1
    if step < 1:
        step = 1
    if step > 26:
        step = 26
    return step


class Shape:
    """A search area: a circle (radius) or a box (width, height) around
    (lon, lat); sizes are in the unit whose size in metres is
    ``conversion``."""

    __slots__ = ("circular", "lon", "lat", "conversion", "radius", "width", "height")

    def __init__(self):
        self.circular = True
        self.lon = self.lat = 0.0
        self.conversion = 1.0
        self.radius = self.width = self.height = 0.0

    def bounding_box(self):
        """(min lon, min lat, max lon, max lat)."""
        lon = self.lon
        lat = self.lat
        if self.circular:
            height = self.conversion * self.radius
            width = self.conversion * self.radius
        else:
            height = self.conversion * (self.height / 2)
            width = self.conversion * (self.width / 2)
        lat_delta = (height / EARTH_RADIUS) / D_R
        long_delta_top = (width / EARTH_RADIUS / _cos((lat + lat_delta) * D_R)) / D_R
        long_delta_bottom = (width / EARTH_RADIUS / _cos((lat - lat_delta) * D_R)) / D_R
        if lat < 0:
            return (lon - long_delta_bottom, lat - lat_delta, lon + long_delta_bottom, lat + lat_delta)
        return (lon - long_delta_top, lat - lat_delta, lon + long_delta_top, lat + lat_delta)

    def search_boxes(self):
        """The (hash, step) cells to scan, in Redis's order (centre, N, S,
        E, W, NE, NW, SE, SW); None for the neighbours that cannot hold a
        match."""
        min_lon, min_lat, max_lon, max_lat = self.bounding_box()
        lon = self.lon
        lat = self.lat
        if self.circular:
            radius_m = self.radius
        else:
            w2 = self.width / 2
            h2 = self.height / 2
            radius_m = _sqrt(w2 * w2 + h2 * h2)
        radius_m *= self.conversion
        steps = estimate_steps(radius_m, lat)
        bits = encode(lon, lat, steps)
        nb = neighbors(bits, steps)
        area = decode_area(bits, steps)
        decrease = False
        north = decode_area(nb[0], steps)
        south = decode_area(nb[1], steps)
        east = decode_area(nb[2], steps)
        west = decode_area(nb[3], steps)
        if north[3] < max_lat:
            decrease = True
        if south[2] > min_lat:
            decrease = True
        if east[1] < max_lon:
            decrease = True
        if west[0] > min_lon:
            decrease = True
        if steps > 1 and decrease:
            steps -= 1
            bits = encode(lon, lat, steps)
            nb = neighbors(bits, steps)
            area = decode_area(bits, steps)
        boxes = [bits] + list(nb)
        if steps >= 2:
            a_lon_min, a_lon_max, a_lat_min, a_lat_max = area
            if a_lat_min < min_lat:
                boxes[2] = boxes[8] = boxes[7] = None      # south, south west, south east
            if a_lat_max > max_lat:
                boxes[1] = boxes[5] = boxes[6] = None      # north, north east, north west
            if a_lon_min < min_lon:
                boxes[4] = boxes[8] = boxes[6] = None      # west, south west, north west
            if a_lon_max > max_lon:
                boxes[3] = boxes[7] = boxes[5] = None      # east, south east, north east
        return [(b, steps) if b is not None else None for b in boxes]

    def within(self, lon, lat):
        """Distance in metres from the centre when (lon, lat) is inside,
        else None."""
        if self.circular:
            d = distance(self.lon, self.lat, lon, lat)
            if d > self.radius * self.conversion:
                return None
            return d
        conv = self.conversion
        height_m = self.height * conv
        if lat_distance(lat, self.lat) > height_m / 2:
            return None
        width_m = self.width * conv
        if distance(lon, lat, self.lon, lat) > width_m / 2:
            return None
        return distance(self.lon, self.lat, lon, lat)


def score_range(bits, step):
    """[min, max) of the scores inside a cell."""
    shift = 52 - step * 2
    return float((bits << shift) & _U64), float(((bits + 1) << shift) & _U64)


# ---------------------------------------------------------------------------
# Distances
# ---------------------------------------------------------------------------
def lat_distance(lat1, lat2) -> float:
    return EARTH_RADIUS * abs(lat2 * D_R - lat1 * D_R)


def distance(lon1, lat1, lon2, lat2) -> float:
    """Haversine great circle distance in metres."""
    lon1r = lon1 * D_R
    lon2r = lon2 * D_R
    v = _sin((lon2r - lon1r) / 2)
    if v == 0.0:
        return lat_distance(lat1, lat2)
    lat1r = lat1 * D_R
    lat2r = lat2 * D_R
    u = _sin((lat2r - lat1r) / 2)
    a = u * u + _cos(lat1r) * _cos(lat2r) * v * v
    return 2.0 * EARTH_RADIUS * _asin(_sqrt(a))
