"""C library number parsing as Redis uses it for scores (strtod, string2d).

``strtod_prefix`` mirrors glibc's strtod in the C locale: leading white
space, sign, decimal or hexadecimal (``0x``, binary ``p`` exponent) forms,
``inf``/``infinity``/``nan``, and it reports how many bytes it used and
whether the result over- or underflowed (ERANGE).  ``string2d`` is Redis's
strict whole-string form (ZADD scores, WEIGHTS); ``range_strtod`` is the
looser form of score range bounds (ZRANGEBYSCORE, ZCOUNT ...).
"""

from __future__ import annotations

import re

_RE = re.compile(
    rb"[ \t\n\v\f\r]*([+-]?)(?:"
    rb"0[xX]((?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?)"
    rb"|((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
    rb"|([iI][nN][fF](?:[iI][nN][iI][tT][yY])?)"
    rb"|([nN][aA][nN](?:\([0-9A-Za-z_]*\))?))")

_NONZERO = re.compile(rb"[1-9]")
_HEX_NONZERO = re.compile(rb"[1-9a-fA-F]")
_TINY = 2.2250738585072014e-308   # DBL_MIN
_INF = float("inf")


def strtod_prefix(b: bytes):
    """(value, bytes consumed, erange).  consumed 0: no conversion."""
    m = _RE.match(b)
    if m is None:
        return 0.0, 0, False
    sign, hx, dec, inf, nan = m.groups()
    neg = sign == b"-"
    erange = False
    if dec is not None:
        v = float(dec)
        if v == _INF:
            erange = True
        elif v < _TINY:
            mant = dec.split(b"e")[0].split(b"E")[0]
            if v == 0.0:
                erange = _NONZERO.search(mant) is not None
            else:
                erange = True
    elif hx is not None:
        h = hx
        if b"p" not in h and b"P" not in h:
            h += b"p0"
        try:
            v = float.fromhex("0x" + h.decode())
        except OverflowError:
            v = _INF
            erange = True
        else:
            if v < _TINY:
                if v == 0.0:
                    erange = _HEX_NONZERO.search(hx.split(b"p")[0].split(b"P")[0]) is not None
                else:
                    erange = True
    elif inf is not None:
        v = _INF
    else:
        v = float("nan")
    return (-v if neg else v), m.end(), erange


def string2d(b: bytes):
    """Redis's string2d: the whole string, no leading space, no NaN, no
    overflow, no underflow to zero.  None when invalid."""
    try:
        v = float(b)
    except ValueError:
        v = None
    if v is not None and b"_" not in b and b[:1] not in b" \t\n\v\f\r" and b[-1:] not in b" \t\n\v\f\r":
        if v != v:
            return None
        if v == _INF or v == -_INF:
            if b.lstrip(b"+-")[:1] not in b"iI":
                return None
            return v
        if v == 0.0:
            mant = b.split(b"e")[0].split(b"E")[0]
            if _NONZERO.search(mant):
                return None
        return v
    if not b or b[:1] in b" \t\n\v\f\r":
        return None
    v, used, erange = strtod_prefix(b)
    if used != len(b) or v != v:
        return None
    if erange and (v == _INF or v == -_INF or v == 0.0):
        return None
    return v


def range_strtod(b: bytes):
    """strtod accepting the value when the C string ends where parsing
    stopped (zslParseRange).  None when invalid (or NaN)."""
    v, used, _ = strtod_prefix(b)
    if used < len(b) and b[used] != 0:
        return None
    if v != v:
        return None
    return v


def sort_strtod(b: bytes):
    """SORT's numeric conversion: also refuses ERANGE results."""
    v, used, erange = strtod_prefix(b)
    if (used < len(b) and b[used] != 0) or erange or v != v:
        return None
    return v
