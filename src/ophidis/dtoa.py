"""Doubles as text, as Redis 7.2+ prints them.

Redis 7.2 replaced "%.17g" in its double replies (addReplyDouble), listpack
scores, AOF rewrites, DEBUG DIGEST and Lua's number arguments with a Grisu2
conversion (Loitsch, "Printing Floating-Point Numbers Quickly and Accurately
with Integers", 2010): the digits round-trip and are nearly always the
shortest, and the exponent form is "1e+300" / "1.5e-07".  Clients compare
these bytes, so this module reproduces that algorithm step by step with
64-bit unsigned arithmetic (Python ints masked to 64 bits), including its
choice of cached power of ten: Grisu2 is not always shortest, and where it
is not, Python's repr() would differ from Redis.

``fpconv(d)`` is the Grisu2 text ("inf", "-inf", "nan", "0", "-0" for the
special values); ``d2string(d)`` is Redis's d2string: an integral value
within +-2**62 prints as an integer, anything else as ``fpconv``.  The
compiled layer has the same functions in C (``_dtoa.pxd``, exposed by
protocol/_resp.pyx), picked at the bottom of this module.
"""

import math
import struct

from . import compiled

_M64 = (1 << 64) - 1
_HIDDEN = 1 << 52
_FRAC = _HIDDEN - 1
_LL_HALF = float((2**63 - 1) // 2)  # (double)(LLONG_MAX/2)
_TENS = [10**i for i in range(19, -1, -1)]  # 10^19 ... 1
_LOG10_2 = 0.30102999566398114
_FIRST_POWER = -348  # the cached powers are 10^(-348 + 8*i), i < 87


def _cached_powers():
    # 10^k as a 64-bit normalized significand f (2^63 <= f < 2^64) and binary
    # exponent e, f * 2^e rounded to nearest.
    out = []
    for i in range(87):
        k = _FIRST_POWER + 8 * i
        num, den = (10**k, 1) if k >= 0 else (1, 10**-k)
        e = num.bit_length() - den.bit_length() - 64
        while True:
            # f = round(num / (den * 2^e))
            if e >= 0:
                n, d = num, den << e
            else:
                n, d = num << -e, den
            f, r = divmod(n, d)
            if 2 * r >= d:
                f += 1
            if f >= 1 << 64:
                e += 1
                continue
            if f < 1 << 63:
                e -= 1
                continue
            break
        out.append((f, e))
    return out


_POWERS = _cached_powers()


def _grisu2(d: float):
    """(digits as bytes, K) with value = digits * 10^K, for a finite d != 0."""
    bits = struct.unpack("<Q", struct.pack("<d", d))[0]
    frac = bits & _FRAC
    bexp = (bits >> 52) & 0x7FF
    if bexp:
        frac += _HIDDEN
        exp = bexp - 1075
    else:
        exp = -1074
    # the boundaries m+ and m-, on the exponent of m+ normalized
    uf = (frac << 1) + 1
    ue = exp - 1
    while not uf & (_HIDDEN << 1):
        uf <<= 1
        ue -= 1
    uf <<= 10
    ue -= 10
    ls = 2 if frac == _HIDDEN else 1
    lf = (frac << ls) - 1
    le = exp - ls
    lf <<= le - ue
    # w normalized
    wf, we = frac, exp
    while not wf & _HIDDEN:
        wf <<= 1
        we -= 1
    wf <<= 11
    we -= 11
    # the cached power bringing ue + its exponent + 64 into [-60, -32]
    approx = int(-(ue + 87) * _LOG10_2)
    idx = (approx - _FIRST_POWER) // 8
    while True:
        cf, ce = _POWERS[idx]
        cur = ue + ce + 64
        if cur < -60:
            idx += 1
        elif cur > -32:
            idx -= 1
        else:
            break
    k = _FIRST_POWER + idx * 8
    half = 1 << 63
    wf = (wf * cf + half) >> 64
    uf = ((uf * cf + half) >> 64) - 1
    lf = ((lf * cf + half) >> 64) + 1
    e = ue + ce + 64  # the exponent of all three products
    K = -k
    # digit generation
    wfrac = (uf - wf) & _M64
    delta = (uf - lf) & _M64
    sh = -e
    one = 1 << sh
    part1 = uf >> sh
    part2 = uf & (one - 1)
    digits = bytearray()
    kappa = 10
    i = 10  # _TENS[10] == 10^9
    while kappa > 0:
        div = _TENS[i]
        i += 1
        digit = part1 // div
        if digit or digits:
            digits.append(48 + digit)
        part1 -= digit * div
        kappa -= 1
        rest = ((part1 << sh) + part2) & _M64
        if rest <= delta:
            K += kappa
            _round(digits, delta, rest, (div << sh) & _M64, wfrac)
            return bytes(digits), K
    unit = 18
    while True:
        part2 = (part2 * 10) & _M64
        delta = (delta * 10) & _M64
        kappa -= 1
        digit = part2 >> sh
        if digit or digits:
            digits.append(48 + digit)
        part2 &= one - 1
        if part2 < delta:
            K += kappa
            _round(digits, delta, part2, one, (wfrac * _TENS[unit]) & _M64)
            return bytes(digits), K
        unit -= 1


def _round(digits, delta, rem, kappa, frac):
    # move the last digit down while that brings the result closer to w
    # and stays within the boundaries
    while (rem < frac and delta - rem >= kappa
           and (((rem + kappa) & _M64) < frac or frac - rem > ((rem + kappa - frac) & _M64))):
        digits[-1] -= 1
        rem = (rem + kappa) & _M64


def _emit(digits: bytes, K: int, neg: bool) -> bytes:
    nd = len(digits)
    exp = abs(K + nd - 1)
    if K >= 0 and exp < nd + 7:
        return digits + b"0" * K
    if K < 0 and (K > -7 or exp < 4):
        off = nd + K
        if off <= 0:
            return b"0." + b"0" * -off + digits
        return digits[:off] + b"." + digits[off:]
    out = digits[:1]
    if nd > 1:
        out += b"." + digits[1:]
    return b"%se%s%d" % (out, b"-" if K + nd - 1 < 0 else b"+", exp)


def fpconv_py(d: float) -> bytes:
    """Redis's fpconv_dtoa: the Grisu2 text of d."""
    neg = math.copysign(1.0, d) < 0
    if d == 0:
        return b"-0" if neg else b"0"
    if d != d:
        return b"-nan" if neg else b"nan"
    if d in (math.inf, -math.inf):
        return b"-inf" if neg else b"inf"
    digits, K = _grisu2(-d if neg else d)
    s = _emit(digits, K, neg)
    return b"-" + s if neg else s


def d2string_py(d: float) -> bytes:
    """Redis's d2string: integers as integers, nan/inf by name, else fpconv."""
    if d != d:
        return b"nan"
    if -_LL_HALF <= d <= _LL_HALF and d == int(d):
        if d == 0 and math.copysign(1.0, d) < 0:
            return b"-0"
        return b"%d" % int(d)
    return fpconv_py(d)


_c = compiled.load("protocol._resp")
fpconv = _c.fpconv if _c is not None else fpconv_py
d2string = _c.d2string if _c is not None else d2string_py


def lua_number(d: float) -> bytes:
    """A Lua number passed to redis.call: integral values within +-2**62 as
    integers (-0 as "0"), anything else as fpconv."""
    if d == 0:
        return b"0"
    return fpconv(d) if d != d else d2string(d)
