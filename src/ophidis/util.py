"""Argument parsing shared by command families, with Redis's exact errors."""

from __future__ import annotations

import math
import re

from .errors import NOT_FLOAT, NOT_INT, RedisError

LLONG_MIN = -(2**63)
LLONG_MAX = 2**63 - 1


def parse_int(b, err=NOT_INT) -> int:
    """Redis's string2ll: canonical decimal within a signed 64-bit range."""
    try:
        v = int(b)
    except (ValueError, TypeError):
        raise err
    if LLONG_MIN <= v <= LLONG_MAX and b == b"%d" % v:
        return v
    raise err


def try_int(b):
    """parse_int without raising (None when not a canonical integer)."""
    if not b or len(b) > 20:
        return None
    try:
        v = int(b)
    except (ValueError, TypeError):
        return None
    if LLONG_MIN <= v <= LLONG_MAX and b == b"%d" % v:
        return v
    return None


def parse_range_long(b, lo, hi, msg=None) -> int:
    v = parse_int(b, RedisError(msg) if msg else NOT_INT)
    if v < lo or v > hi:
        raise RedisError(msg or "ERR value is out of range, value must between %d and %d" % (lo, hi))
    return v


def parse_positive(b, msg="ERR value is out of range, must be positive") -> int:
    v = parse_int(b)
    if v < 0:
        raise RedisError(msg)
    return v


def _strtod(b, err):
    """strtod-like parsing with Redis's string2d/string2ld rejections:
    empty, leading space, trailing garbage, NaN, overflow to infinity and
    underflow to zero."""
    if not b or len(b) > 5000 or b[:1].isspace() or b[-1:].isspace() or b"_" in b:
        raise err
    try:
        v = float(b)
    except (ValueError, TypeError):
        raise err
    if v != v:
        raise err
    if v in (_INF, _NINF):
        low = b.lower().lstrip(b"+-")
        if low not in (b"inf", b"infinity"):
            raise err  # overflow (ERANGE with HUGE_VAL)
    elif v == 0.0:
        mant = b.lower().split(b"e")[0]
        if any(ch in b"123456789" for ch in mant):
            raise err  # underflow to zero (ERANGE)
    return v


_INF = float("inf")
_NINF = float("-inf")


def parse_float(b, err=NOT_FLOAT) -> float:
    """Redis's string2d (scores, timeouts ...)."""
    return _strtod(b, err)


def parse_long_double(b, err=NOT_FLOAT) -> float:
    """Redis's string2ld (INCRBYFLOAT, HINCRBYFLOAT): like string2d; infinity
    is accepted here, the commands reject infinite results themselves."""
    return _strtod(b, err)


def format_long_double(v: float) -> bytes:
    """Humanized long-double rendering ("%.17Lg"-like, no exponent, trailing
    zeros trimmed) as Redis's ld2string(LD_STR_HUMAN) output."""
    if v == 0:
        return b"0"
    if math.isinf(v):
        return b"inf" if v > 0 else b"-inf"
    r = repr(v)
    if "e" in r or "E" in r:
        # Render without exponent like "%.17Lf" then trim.
        from decimal import Decimal
        s = format(Decimal(r), "f")
    else:
        s = r
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    if s == "-0":
        s = "0"
    return s.encode()


def stringmatch(pattern: bytes, string: bytes, nocase: bool = False) -> bool:
    """Redis's stringmatchlen glob: ``*`` ``?`` ``[abc]`` ``[^a]`` ``[a-z]``
    and backslash escapes, with the same corner cases (an unterminated class
    ends the pattern, reversed ranges, a trailing backslash is literal)."""
    return _match(pattern, string, nocase)


def _class_match(p, pi, plen, ch, nocase):
    """Match one character against the class starting after '['.
    Returns (matched, index of the closing ']' or of the last byte)."""
    neg = pi < plen and p[pi] == 94  # ^
    if neg:
        pi += 1
    matched = False
    while True:
        if pi >= plen:
            # Unterminated class: the pattern ends here.
            pi -= 1
            break
        b = p[pi]
        if b == 92 and pi + 1 < plen:  # backslash: next byte literally
            pi += 1
            if p[pi] == ch:
                matched = True
        elif b == 93:  # ]
            break
        elif pi + 2 < plen and p[pi + 1] == 45:  # range a-z
            lo, hi = b, p[pi + 2]
            if lo > hi:
                lo, hi = hi, lo
            c = ch
            if nocase:
                lo, hi, c = _lower(lo), _lower(hi), _lower(c)
            if lo <= c <= hi:
                matched = True
            pi += 2
        elif b == ch or (nocase and _lower(b) == _lower(ch)):
            matched = True
        pi += 1
    return matched != neg, pi


def _match(p, s, nocase):
    """Iterative matcher.  Once the part of the pattern after a ``*`` has
    failed at every later position of the string, no earlier ``*`` can help
    (Redis's skipLongerMatches), so only the most recent star is ever
    retried: O(len(p) * len(s)) in the worst case."""
    plen = len(p)
    slen = len(s)
    pi = si = 0
    star_p = -1      # index of the last '*' seen
    star_s = 0       # string position its continuation is being tried at
    while True:
        ok = True
        while pi < plen and si < slen:
            c = p[pi]
            if c == 42:  # *
                while pi + 1 < plen and p[pi + 1] == 42:
                    pi += 1
                if pi + 1 == plen:
                    return True
                star_p = pi
                star_s = si
                pi += 1
                continue
            ch = s[si]
            if c == 63:  # ?
                pass
            elif c == 91:  # [
                m, pi = _class_match(p, pi + 1, plen, ch, nocase)
                if not m:
                    ok = False
                    break
            else:
                if c == 92 and pi + 1 < plen:  # backslash escape
                    pi += 1
                    c = p[pi]
                if c != ch and not (nocase and _lower(c) == _lower(ch)):
                    ok = False
                    break
            pi += 1
            si += 1
            if si == slen:
                while pi < plen and p[pi] == 42:
                    pi += 1
                break
        if ok and pi == plen and si == slen:
            return True
        if star_p < 0:
            return False
        # Retry the continuation of the last star one byte later; the star
        # only covers positions that leave at least one byte to match.
        star_s += 1
        if star_s >= slen:
            return False
        pi = star_p + 1
        si = star_s


def _lower(c):
    return c + 32 if 65 <= c <= 90 else c


def _eq(a, b, nocase):
    if nocase:
        return _lower(a) == _lower(b)
    return a == b


_SIMPLE_GLOB = re.compile(rb"^[^\\\[\]?*]*\*?$")


def compile_glob(pattern: bytes, nocase=False):
    """A fast matcher for a pattern: returns a function bytes -> bool."""
    if pattern == b"*":
        return lambda s: True
    if b"[" not in pattern and b"\\" not in pattern and b"?" not in pattern and not nocase:
        stars = pattern.count(b"*")
        if stars == 0:
            return lambda s: s == pattern
        if stars == 1 and pattern.endswith(b"*"):
            pre = pattern[:-1]
            return lambda s: s.startswith(pre)
        if stars == 1 and pattern.startswith(b"*"):
            suf = pattern[1:]
            return lambda s: s.endswith(suf)
    return lambda s: _match(pattern, s, nocase)
