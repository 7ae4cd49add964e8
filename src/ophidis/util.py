"""Argument parsing shared by command families, with Redis's exact errors."""

from __future__ import annotations

import decimal as _decimal
import math
import re
from fractions import Fraction

from .errors import NOT_FLOAT, NOT_INT, SYNTAX, RedisError

LLONG_MIN = -(2**63)
LLONG_MAX = 2**63 - 1


def atoi(b: bytes) -> int:
    """C's atoi without its int bound: leading blanks, a sign, the leading
    digits; 0 when there are none (callers bound it as their C code does)."""
    s = b.lstrip(b" \t\n\v\f\r")
    i = 1 if s[:1] in (b"-", b"+") else 0
    j = i
    while j < len(s) and 48 <= s[j] <= 57:
        j += 1
    if j == i:
        return 0
    return int(s[:j])


def parse_int(b, err=NOT_INT) -> int:
    """Redis's string2ll: canonical decimal within a signed 64-bit range.
    err is mostly a shared instance: its traceback is reset before each
    raise (else it would keep the frames of every raise so far)."""
    try:
        v = int(b)
    except (ValueError, TypeError):
        raise err.with_traceback(None)
    if LLONG_MIN <= v <= LLONG_MAX and b == b"%d" % v:
        return v
    raise err.with_traceback(None)


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


def parse_keyword(arg, choices: dict, err=SYNTAX):
    """The value ``choices`` (keyed by lower-case bytes) gives the keyword
    arg, matched case-insensitively (LEFT|RIGHT, MIN|MAX, ON|OFF ...); err
    for any other word."""
    v = choices.get(arg.lower(), _NO_CHOICE)
    if v is _NO_CHOICE:
        raise err
    return v


_NO_CHOICE = object()


# -- Redis's two rules for start/end indexes (negative ones count from the end) --------
def index_range(n: int, start: int, end: int):
    """LRANGE, LTRIM, ZRANGE, ZREMRANGEBYRANK (and the list's range): the
    inclusive (start, end) within 0..n-1, or None when nothing is in it."""
    if start < 0:
        start = max(start + n, 0)
    if end < 0:
        end += n
    if start > end or start >= n:
        return None
    return start, min(end, n - 1)


def string_range(n: int, start: int, end: int):
    """GETRANGE, BITCOUNT, BITPOS over n bytes (or bits): (start, end)
    clamped to 0..n-1, empty when start > end."""
    if start < 0:
        start = max(start + n, 0)
    if end < 0:
        end = max(end + n, 0)
    return start, min(end, n - 1)


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


def format_long_double(v) -> bytes:
    """Redis's ld2string(LD_STR_HUMAN): "%.17Lf" of the value with trailing
    zeros (and a bare '.') trimmed, "-0" rendered as "0".  ``v`` is a float
    or an exact long double from ``parse_ld``/``ld_add`` (a Fraction)."""
    if v.__class__ is float:
        if math.isinf(v):
            return b"inf" if v > 0 else b"-inf"
        if v != v:
            return b"nan"
        v = Fraction(v)
    return format_ld(v)


# ---------------------------------------------------------------------------
# x86-64 "long double" (x87 80-bit extended precision) emulation, exact.
#
# Redis's INCRBYFLOAT and HINCRBYFLOAT parse with strtold, add in long double
# and print with "%.17Lf".  Python floats are doubles, which round 0.1 + 0.2
# differently, so finite values are kept as exact Fractions rounded to the
# extended format: 64-bit significand, normal exponents down to -16382,
# subnormals down to 2**-16445, overflow past 2**16384.
# ---------------------------------------------------------------------------
_LD_MANT = 64
_LD_EMIN = -16382
_LD_EMAX = 16383
_LD_INF = float("inf")

_LD_DEC = re.compile(rb"([-+]?)(?:(\d+)(?:\.(\d*))?|\.(\d+))(?:[eE]([-+]?\d+))?\Z")
_LD_HEX = re.compile(rb"([-+]?)0[xX](?:([0-9a-fA-F]+)(?:\.([0-9a-fA-F]*))?|\.([0-9a-fA-F]+))"
                     rb"(?:[pP]([-+]?\d+))?\Z")
_LD_INFRE = re.compile(rb"([-+]?)(?:inf|infinity)\Z", re.IGNORECASE)


def ld_round(x: Fraction):
    """Round an exact rational to the nearest long double (ties to even).
    Returns a Fraction, or +-inf on overflow."""
    if not x:
        return Fraction(0)
    neg = x < 0
    n = -x.numerator if neg else x.numerator
    d = x.denominator
    e = n.bit_length() - d.bit_length()
    if (n << max(0, -e)) < (d << max(0, e)):
        e -= 1
    # now 2**e <= |x| < 2**(e+1)
    if e > _LD_EMAX:
        return -_LD_INF if neg else _LD_INF
    eq = (max(e, _LD_EMIN)) - (_LD_MANT - 1)
    if eq >= 0:
        m, r = divmod(n, d << eq)
        den = d << eq
    else:
        m, r = divmod(n << -eq, d)
        den = d
    r2 = r * 2
    if r2 > den or (r2 == den and m & 1):
        m += 1
    if m >> _LD_MANT and eq + _LD_MANT > _LD_EMAX:
        return -_LD_INF if neg else _LD_INF
    if neg:
        m = -m
    return Fraction(m << eq) if eq >= 0 else Fraction(m, 1 << -eq)


def _digits_int(s: bytes) -> int:
    """int() of a long digit string (beyond Python's str->int digit limit)."""
    if len(s) <= 4000:
        return int(s) if s else 0
    return int(_decimal.Decimal(s.decode()))


def _ld_parts(m, bits, err):
    """(sign, digits without leading zeros, scale) of a decimal (bits 1:
    digits * 10**scale) or hex (bits 4: digits * 2**scale) match of
    parse_ld; an exponent of more than 9 digits is err (certain overflow or
    underflow to zero) unless the digits are all zeros."""
    sign, ip, fp, fo, ex = m.groups()
    digits = (ip or b"") + (fp or b"") if fo is None else fo
    scale = -bits * len(fp or b"") if fo is None else -bits * len(fo)
    digits = digits.lstrip(b"0")
    if digits and ex is not None:
        exd = ex.lstrip(b"+-").lstrip(b"0")
        if len(exd) > 9:
            raise err
        scale += -int(exd or b"0") if ex[:1] == b"-" else int(exd or b"0")
    return sign, digits, scale


def parse_ld(b, err=NOT_FLOAT):
    """Redis's string2ld: strtold over the whole string (decimal, hex float,
    inf/infinity; no leading space, at most 5119 bytes), refusing NaN and
    results that overflow or underflow to zero.  Returns a Fraction or +-inf."""
    if not b or len(b) >= 5120 or b[:1].isspace():
        raise err
    m = _LD_DEC.match(b)
    if m is not None:
        sign, digits, scale = _ld_parts(m, 1, err)
        if not digits:
            return Fraction(0)
        mag = len(digits) + scale  # 10**(mag-1) <= value < 10**mag
        if mag > 4934 or mag < -4952:
            raise err
        mant = _digits_int(digits)
        x = Fraction(mant * 10 ** scale) if scale >= 0 else Fraction(mant, 10 ** -scale)
    else:
        m = _LD_HEX.match(b)
        if m is not None:
            sign, digits, scale = _ld_parts(m, 4, err)
            if not digits:
                return Fraction(0)
            mag = len(digits) * 4 + scale
            if mag > _LD_EMAX + 8 or mag < -16500:
                raise err
            mant = int(digits, 16)
            x = Fraction(mant << scale) if scale >= 0 else Fraction(mant, 1 << -scale)
        else:
            m = _LD_INFRE.match(b)
            if m is None:
                raise err
            return -_LD_INF if m.group(1) == b"-" else _LD_INF
    if sign == b"-":
        x = -x
    r = ld_round(x)
    if r.__class__ is float or not r:
        raise err  # ERANGE: overflow to HUGE_VAL or underflow to zero
    return r


def ld_add(a, b):
    """a + b in long double arithmetic (Fractions or +-inf; inf - inf is NaN,
    returned as float nan)."""
    if a.__class__ is float or b.__class__ is float:
        return float(a) + float(b)
    return ld_round(a + b)


def ld_finite(v) -> bool:
    return v.__class__ is not float


def format_ld(x) -> bytes:
    """"%.17Lf" of an exact long double, trailing zeros trimmed (LD_STR_HUMAN)."""
    if x.__class__ is float:
        return format_long_double(x)
    neg = x < 0
    a = -x if neg else x
    num = a.numerator * 10 ** 17
    q, r = divmod(num, a.denominator)
    r2 = 2 * r
    if r2 > a.denominator or (r2 == a.denominator and q & 1):
        q += 1
    if q == 0:
        return b"0"
    ip, fp = divmod(q, 10 ** 17)
    s = (str(ip) if ip < 10 ** 4000 else str(_decimal.Decimal(ip))).encode()
    if fp:
        s += b"." + (b"%017d" % fp).rstrip(b"0")
    return b"-" + s if neg else s


def stringmatch(pattern: bytes, string: bytes, nocase: bool = False) -> bool:
    """Redis's stringmatchlen glob: ``*`` ``?`` ``[abc]`` ``[^a]`` ``[a-z]``
    and backslash escapes, with the same corner cases (an unterminated class
    ends the pattern, reversed ranges, a trailing backslash is literal, a
    pattern nesting too many stars matches nothing)."""
    if b"*" in pattern and too_many_stars(pattern):
        return False
    return _match(pattern, string, nocase)


GLOB_NESTING_MAX = 1000


def too_many_stars(p: bytes) -> bool:
    """stringmatchlen's protection against abusive patterns: each group of
    stars followed by more pattern matches the rest one recursion deeper,
    and a recursion deeper than 1000 fails, so a pattern with more than
    1000 such groups matches no string (a trailing group matches without
    recursing).  The groups are counted as the matcher reads the pattern
    (stars in a class or escaped are literal)."""
    n = len(p)
    i = groups = 0
    while i < n:
        c = p[i]
        if c == 42:  # *
            while i + 1 < n and p[i + 1] == 42:
                i += 1
            if i + 1 == n:
                break
            groups += 1
            if groups > GLOB_NESTING_MAX:
                return True
        elif c == 92:  # backslash: the next byte literally
            i += 1
        elif c == 91:  # [: skip the class as _class_match reads it
            i += 1
            if i < n and p[i] == 94:
                i += 1
            while i < n and p[i] != 93:
                if p[i] == 92 and i + 1 < n:
                    i += 1
                elif i + 2 < n and p[i + 1] == 45:
                    i += 2
                i += 1
        i += 1
    return False


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
    """A fast matcher for a pattern: a function of bytes whose result is
    true exactly when stringmatchlen matches (not always a bool: patterns
    of stars, ``?`` and literals get a compiled regex's ``match``, which
    ``filter`` runs over many keys without a Python call per key)."""
    if pattern == b"*":
        return lambda s: True
    if b"*" in pattern and too_many_stars(pattern):
        return lambda s: False
    if b"[" not in pattern and b"\\" not in pattern:
        if b"?" not in pattern and not nocase:
            stars = pattern.count(b"*")
            if stars == 0:
                return lambda s: s == pattern
            if stars == 1 and pattern.endswith(b"*"):
                pre = pattern[:-1]
                return lambda s: s.startswith(pre)
            if stars == 1 and pattern.startswith(b"*"):
                suf = pattern[1:]
                return lambda s: s.endswith(suf)
        return star_regex(pattern, nocase).match
    return lambda s: _match(pattern, s, nocase)


def star_regex(pattern: bytes, nocase: bool):
    """A pattern of ``*``, ``?`` and literal bytes (the common case of KEYS,
    SCAN MATCH, PSUBSCRIBE) as one compiled regex that never backtracks
    more than linearly: the first piece anchored at the start, each middle
    piece in an atomic group at its leftmost place (``(?>.*?piece)``:
    leftmost placement of a middle piece is never worse than a later one,
    so committing to it gives stringmatch's answer), the last piece at the
    end, however many stars.  The lookahead refuses the empty string to a
    pattern with a star (stringmatchlen never lets a star match nothing at
    the end of an empty string); ``nocase`` folds ASCII letters only
    (IGNORECASE on bytes), as Redis's tolower."""
    parts = [re.escape(p).replace(b"\\?", b".") for p in pattern.split(b"*")]
    body = parts[0]
    if len(parts) > 1:
        body = b"(?=.)" + body + b"".join(b"(?>.*?%s)" % p for p in parts[1:-1] if p) + b".*" + parts[-1]
    return re.compile(body + b"\\Z", re.S | (re.I if nocase else 0))
