"""Compact encodings stored inside RDB strings: listpack (written and read),
ziplist, zipmap (read only, Redis 6 and older wrote them) and intset.

Decoders return lists of ``bytes`` (integers rendered in decimal, as Redis
hands them to the upper layers) and raise ``EncodingError`` on any
inconsistency; they never read past the buffer.
"""

from __future__ import annotations

import struct

from .. import compiled

_pack_u32 = struct.Struct("<I").pack
_unpack_u32 = struct.Struct("<I").unpack_from
_unpack_u16 = struct.Struct("<H").unpack_from

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


class EncodingError(Exception):
    pass


def _sized(buf, minimum, what) -> int:
    """The length of a listpack or ziplist ``buf`` (``what``), checked: at
    least ``minimum`` bytes, and the total size its header starts with."""
    n = len(buf)
    if n < minimum:
        raise EncodingError("%s too short" % what)
    if _unpack_u32(buf, 0)[0] != n:
        raise EncodingError("%s size mismatch" % what)
    return n


def canonical_int(s: bytes):
    """The int64 value of ``s`` if it is its canonical decimal form (what
    Redis's string2ll / lpStringToInt64 accept), else None."""
    n = len(s)
    if n == 0 or n > 20:
        return None
    c = s[0]
    if not (48 <= c <= 57 or c == 45):
        return None
    try:
        v = int(s)
    except ValueError:
        return None
    if v < INT64_MIN or v > INT64_MAX:
        return None
    if b"%d" % v != s:
        return None
    return v


# -- listpack -------------------------------------------------------------------

def lp_backlen_size(e: int) -> int:
    """The bytes of an entry's back-length for an entry of ``e`` bytes
    (lpEncodeBacklen)."""
    if e <= 127:
        return 1
    if e < 16383:
        return 2
    if e < 2097151:
        return 3
    if e < 268435455:
        return 4
    return 5


def lp_int_size(v: int) -> int:
    """The bytes of a listpack entry holding the integer v."""
    if 0 <= v <= 127:
        return 2
    if -4096 <= v <= 4095:
        return 3
    if -32768 <= v <= 32767:
        return 4
    if -8388608 <= v <= 8388607:
        return 5
    if -2147483648 <= v <= 2147483647:
        return 6
    return 10


def lp_entry_size(s) -> int:
    """The bytes ``s`` (bytes-like) takes as one listpack entry: encoding,
    data and back-length, an integer-looking element stored as an integer
    (lpEncodeGetType); len(lp_entry(s)) without building it.
    persistence/_listpack.pxd's _lp_entry_size is the compiled twin."""
    n = len(s)
    if 0 < n <= 20 and (48 <= s[0] <= 57 or s[0] == 45):
        v = canonical_int(s if s.__class__ is bytes else bytes(s))
        if v is not None:
            return lp_int_size(v)
    e = n + (1 if n < 64 else 2 if n < 4096 else 5)
    return e + lp_backlen_size(e)


def _backlen(n: int) -> bytes:
    if n <= 127:
        return bytes((n,))
    if n < 16383:
        return bytes((n >> 7, (n & 127) | 128))
    if n < 2097151:
        return bytes((n >> 14, ((n >> 7) & 127) | 128, (n & 127) | 128))
    if n < 268435455:
        return bytes((n >> 21, ((n >> 14) & 127) | 128, ((n >> 7) & 127) | 128, (n & 127) | 128))
    return bytes((n >> 28, ((n >> 21) & 127) | 128, ((n >> 14) & 127) | 128,
                  ((n >> 7) & 127) | 128, (n & 127) | 128))


_BACKLEN1 = [bytes((i,)) for i in range(128)]


def lp_entry(s) -> bytes:
    """One listpack entry (encoding + data + backlen) for the element ``s``
    (bytes, or int)."""
    if s.__class__ is int:
        v = s
    else:
        v = canonical_int(s) if len(s) <= 20 else None
    if v is not None:
        if 0 <= v <= 127:
            return bytes((v, 1))
        if -4096 <= v <= 4095:
            if v < 0:
                v += 1 << 13
            return bytes(((v >> 8) | 0xC0, v & 0xFF, 2))
        if -32768 <= v <= 32767:
            return b"\xf1" + (v & 0xFFFF).to_bytes(2, "little") + b"\x03"
        if -8388608 <= v <= 8388607:
            return b"\xf2" + (v & 0xFFFFFF).to_bytes(3, "little") + b"\x04"
        if -2147483648 <= v <= 2147483647:
            return b"\xf3" + (v & 0xFFFFFFFF).to_bytes(4, "little") + b"\x05"
        return b"\xf4" + (v & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little") + b"\x09"
    n = len(s)
    if n < 64:
        return b"%c%s%c" % (0x80 | n, s, n + 1)
    if n < 4096:
        return bytes(((n >> 8) | 0xE0, n & 0xFF)) + s + _backlen(n + 2)
    return b"\xf0" + _pack_u32(n) + s + _backlen(n + 5)


def lp_build(entries) -> bytes:
    """A complete listpack from already encoded entries."""
    body = b"".join(entries)
    total = 6 + len(body) + 1
    count = len(entries)
    return _pack_u32(total) + (count if count < 65535 else 65535).to_bytes(2, "little") + body + b"\xff"


def lp_encode(items) -> bytes:
    return lp_build([lp_entry(x) for x in items])


def lp_decode(buf, strict_count=True, raw_ints=False) -> list:
    """Elements of a listpack (bytes; with raw_ints, integer-encoded
    elements come as ints).  Raises EncodingError.  Compiled:
    _listpack.lp_decode_fast first (None for anything but a valid listpack
    in bytes, which lp_decode_py then explains)."""
    if _lp_fast is not None and not raw_ints:
        out = _lp_fast(buf, strict_count)
        if out is not None:
            return out
    return lp_decode_py(buf, strict_count, raw_ints)


def lp_decode_py(buf, strict_count=True, raw_ints=False) -> list:
    """lp_decode in Python (the pure twin of _listpack.lp_decode_fast)."""
    n = _sized(buf, 7, "listpack")
    count = _unpack_u16(buf, 4)[0]
    out = []
    append = out.append
    p = 6
    end = n - 1
    while p < end:
        b = buf[p]
        if b < 0x80:
            append(b if raw_ints else b"%d" % b)
            size = 1
        elif b < 0xC0:
            ln = b & 0x3F
            size = 1 + ln
            if p + size > end:
                raise EncodingError("listpack entry overflows")
            append(bytes(buf[p + 1:p + size]))
        elif b < 0xE0:
            if p + 2 > end:
                raise EncodingError("listpack entry overflows")
            v = ((b & 0x1F) << 8) | buf[p + 1]
            if v >= 1 << 12:
                v -= 1 << 13
            append(v if raw_ints else b"%d" % v)
            size = 2
        elif b < 0xF0:
            if p + 2 > end:
                raise EncodingError("listpack entry overflows")
            ln = ((b & 0x0F) << 8) | buf[p + 1]
            size = 2 + ln
            if p + size > end:
                raise EncodingError("listpack entry overflows")
            append(bytes(buf[p + 2:p + size]))
        elif b == 0xF0:
            if p + 5 > end:
                raise EncodingError("listpack entry overflows")
            ln = _unpack_u32(buf, p + 1)[0]
            size = 5 + ln
            if p + size > end:
                raise EncodingError("listpack entry overflows")
            append(bytes(buf[p + 5:p + size]))
        elif 0xF1 <= b <= 0xF4:
            w = (2, 3, 4, 8)[b - 0xF1]
            size = 1 + w
            if p + size > end:
                raise EncodingError("listpack entry overflows")
            v = int.from_bytes(buf[p + 1:p + size], "little", signed=True)
            append(v if raw_ints else b"%d" % v)
        else:
            raise EncodingError("invalid listpack encoding byte 0x%02x" % b)
        if size <= 127:
            if p + size + 1 > end:
                raise EncodingError("listpack backlen overflows")
            if buf[p + size] != size:
                raise EncodingError("listpack backlen mismatch")
            p += size + 1
            continue
        bk = _backlen(size)
        bl = len(bk)
        if p + size + bl > end:
            raise EncodingError("listpack backlen overflows")
        if bytes(buf[p + size:p + size + bl]) != bk:
            raise EncodingError("listpack backlen mismatch")
        p += size + bl
    if p != end or buf[end] != 0xFF:
        raise EncodingError("listpack not terminated")
    if strict_count and count != 65535 and count != len(out):
        raise EncodingError("listpack count mismatch")
    return out


# -- ziplist (read only) ----------------------------------------------------------

def zl_decode(buf) -> list:
    """Elements of a ziplist, validated as ziplistValidateIntegrity does in
    its deep mode (Redis always runs it on ziplists it loads): header size,
    tail offset, every entry's header and length inside the buffer, each
    entry's prevlen equal to the previous entry's size, the tail offset
    pointing at the last entry and the header count."""
    n = _sized(buf, 11, "ziplist")
    end = n - 1
    if buf[end] != 0xFF:
        raise EncodingError("ziplist not terminated")
    tail = _unpack_u32(buf, 4)[0]
    if tail > end:
        raise EncodingError("ziplist tail offset out of range")
    count = _unpack_u16(buf, 8)[0]
    out = []
    append = out.append
    p = 10
    prev_size = 0
    last = -1
    while buf[p] != 0xFF:
        start = p
        # previous entry length
        if buf[p] < 254:
            prevlen = buf[p]
            p += 1
        else:
            if p + 5 > end:
                raise EncodingError("ziplist entry overflows")
            prevlen = _unpack_u32(buf, p + 1)[0]
            p += 5
        if p >= end:
            raise EncodingError("ziplist entry overflows")
        b = buf[p]
        top = b >> 6
        value = None
        if top == 0:
            ln = b & 0x3F
            p += 1
        elif top == 1:
            if p + 2 > end:
                raise EncodingError("ziplist entry overflows")
            ln = ((b & 0x3F) << 8) | buf[p + 1]
            p += 2
        elif top == 2:
            if p + 5 > end:
                raise EncodingError("ziplist entry overflows")
            ln = int.from_bytes(buf[p + 1:p + 5], "big")
            p += 5
        else:
            p += 1
            if b == 0xC0:
                ln = 2
            elif b == 0xD0:
                ln = 4
            elif b == 0xE0:
                ln = 8
            elif b == 0xF0:
                ln = 3
            elif b == 0xFE:
                ln = 1
            elif 0xF1 <= b <= 0xFD:
                ln = 0
                value = b"%d" % ((b & 0x0F) - 1)
            else:
                raise EncodingError("invalid ziplist encoding byte 0x%02x" % b)
            if value is None and p + ln <= end:
                value = b"%d" % int.from_bytes(buf[p:p + ln], "little", signed=True)
        if p + ln > end:
            raise EncodingError("ziplist entry overflows")
        if prevlen != prev_size or start - prevlen < 10:
            raise EncodingError("ziplist prevlen mismatch")
        append(bytes(buf[p:p + ln]) if value is None else value)
        p += ln
        prev_size = p - start
        last = start
    if p != end:
        raise EncodingError("ziplist not terminated")
    if last != -1 and last != tail:
        raise EncodingError("ziplist tail offset mismatch")
    if count != 65535 and count != len(out):
        raise EncodingError("ziplist count mismatch")
    return out


# -- zipmap (read only) -------------------------------------------------------------

def zipmap_decode(buf) -> list:
    """Flat [field, value, ...] of a zipmap (Redis 2.x hashes), validated as
    zipmapValidateIntegrity: every length inside the buffer, at least one
    pair, the count byte (when under 254) equal to the pairs read."""
    n = len(buf)
    if n < 2 or buf[n - 1] != 0xFF:
        raise EncodingError("zipmap not terminated")
    last = n - 1
    out = []
    p = 1
    while buf[p] != 0xFF:
        for is_val in (False, True):
            b = buf[p]
            if b < 254:
                ln = b
                p += 1
            else:       # 254 (and 255 as a value length): a 4-byte length
                if p + 5 > last:
                    raise EncodingError("zipmap entry overflows")
                ln = _unpack_u32(buf, p + 1)[0]
                p += 5
            free = 0
            if is_val:
                if p > last:
                    raise EncodingError("zipmap entry overflows")
                free = buf[p]
                p += 1
            if p + ln + free > last:
                raise EncodingError("zipmap entry overflows")
            out.append(bytes(buf[p:p + ln]))
            p += ln + free
    if not out:
        raise EncodingError("empty zipmap")
    if buf[0] < 254 and buf[0] != len(out) // 2:
        raise EncodingError("zipmap count mismatch")
    return out


# -- intset ---------------------------------------------------------------------------

def intset_encode(values) -> bytes:
    """values: sorted list of ints."""
    if not values:
        width = 2
    else:
        lo, hi = values[0], values[-1]
        if lo >= -32768 and hi <= 32767:
            width = 2
        elif lo >= -2147483648 and hi <= 2147483647:
            width = 4
        else:
            width = 8
    fmt = {2: "h", 4: "i", 8: "q"}[width]
    return struct.pack("<II%d%s" % (len(values), fmt), width, len(values), *values)


def intset_decode(buf) -> list:
    n = len(buf)
    if n < 8:
        raise EncodingError("intset too short")
    width, count = struct.unpack_from("<II", buf, 0)
    if width not in (2, 4, 8):
        raise EncodingError("invalid intset encoding")
    if 8 + width * count != n:
        raise EncodingError("intset size mismatch")
    if not count:
        raise EncodingError("empty intset")
    fmt = {2: "h", 4: "i", 8: "q"}[width]
    vals = list(struct.unpack_from("<%d%s" % (count, fmt), buf, 8))
    for i in range(1, count):
        if vals[i] <= vals[i - 1]:
            raise EncodingError("intset not sorted or has duplicates")
    return vals


# the compiled twin (persistence/_listpack.pyx), picked here
_c = compiled.load("persistence._listpack")
_lp_fast = _c.lp_decode_fast if _c is not None else None
