"""Array commands (Redis 8.8's t_array.c): ARSET ARMSET ARGET ARMGET ARDEL
ARDELRANGE ARLEN ARCOUNT ARGETRANGE ARSCAN ARGREP AROP ARINSERT ARRING ARNEXT
ARSEEK ARLASTITEMS ARINFO.

The value is an ``ArrayValue`` (types/array.py).  Indexes are unsigned
64-bit numbers read as Redis's string2ull reads them; 2**64 - 1 is never an
element's index (ARSEEK alone accepts it: its cursor's exhausted state).
Every command validates all its arguments before it changes anything, and
propagates as called.
"""

from __future__ import annotations

import re
from fractions import Fraction

from ..cmdtable.registry import command
from ..errors import SYNTAX, RedisError, arity_error
from ..keyspace import notify
from ..protocol.resp import EMPTY_ARRAY, ONE, ZERO, array_header, integer, map_header, null
from ..types.array import (KIND_FLOAT, KIND_INT, SLICE_SIZE, UINT64_MAX, ArrayValue, d2string, string2ll,
                           value_kind)
from ..util import ld_round, parse_int, parse_ld, stringmatch

_ARRAY = notify.ARRAY
_GENERIC = notify.GENERIC
MAX_REPLY_ITEMS = 1000000
GREP_MAX_PREDICATES = 250
GREP_MAX_RE_LEN = 2048

_BAD_INDEX = RedisError("ERR invalid array index")
_INDEX_OVERFLOW = RedisError("ERR array index overflow")
_INSERT_OVERFLOW = RedisError("ERR insert index overflow")
_LIMIT_POSITIVE = RedisError("ERR LIMIT must be positive")
_RANGE_TOO_BIG = RedisError("ERR range exceeds maximum of %d items" % MAX_REPLY_ITEMS)
_COUNT_TOO_BIG = RedisError("ERR count exceeds maximum of %d items" % MAX_REPLY_ITEMS)
_NO_SUCH_KEY = RedisError("ERR no such key")
_SPACES = b" \t\n\v\f\r"


def _strtoull(b: bytes):
    """C's strtoull(s, &end, 10) over the whole of b: leading blanks, a sign
    (a minus negates modulo 2**64), digits; None when it does not end
    the string or overflows."""
    s = b.lstrip(_SPACES)
    neg = False
    if s[:1] in (b"+", b"-"):
        neg = s[:1] == b"-"
        s = s[1:]
    if not s or not s.isdigit():
        return None
    v = int(s)
    if v > UINT64_MAX:
        return None
    return (-v) % (1 << 64) if neg else v


def parse_index(b: bytes, allow_max=False):
    """getArrayIndexFromObject: string2ull (string2ll when it applies,
    negatives refused; else strtoull up to the first NUL), 2**64 - 1 only
    with ``allow_max``.  None when invalid."""
    nul = b.find(b"\0")
    if nul >= 0:
        b = b[:nul]
    v = string2ll(b)
    if v is not None:
        if v < 0:
            return None
    else:
        if not b:
            return None
        v = _strtoull(b)
        if v is None:
            return None
    if v == UINT64_MAX and not allow_max:
        return None
    return v


def _index(b: bytes) -> int:
    v = parse_index(b)
    if v is None:
        raise _BAD_INDEX
    return v


_LLONG_MAX = 2**63 - 1


def _uint(resp: int, n: int) -> bytes:
    """addReplyUnsignedLongLong: an integer, or above 2**63 - 1 a bulk
    string (RESP2) or a big number (RESP3)."""
    if n <= _LLONG_MAX:
        return integer(n)
    if resp >= 3:
        return b"(%d\r\n" % n
    s = b"%d" % n
    return b"$%d\r\n%s\r\n" % (len(s), s)


def _value(resp: int, v) -> bytes:
    if v is None:
        return null(resp)
    return b"$%d\r\n%s\r\n" % (len(v), v)


def _write_done(c, key, event: bytes, dirty: int):
    db = c.db
    db.signal(key)
    notify.notify(_ARRAY, event, key, db.id)
    c.server.dirty += dirty


def _removed(c, key, a, event: bytes, deleted: int):
    """ARDEL / ARDELRANGE's end: an emptied array goes with its key."""
    db = c.db
    if not deleted:
        return
    if a:
        db.signal(key)
        notify.notify(_ARRAY, event, key, db.id)
    else:
        db.delete(key)
        notify.notify(_ARRAY, event, key, db.id)
        notify.notify(_GENERIC, b"del", key, db.id)
    c.server.dirty += deleted


# ---------------------------------------------------------------------------
# ARGET / ARMGET / ARSET / ARMSET
# ---------------------------------------------------------------------------

@command("arget")
def arget(c, argv):
    a = c.db.lookup_read_typed(argv[1], ArrayValue)
    i = _index(argv[2])
    return _value(c.resp, a.d.get(i) if a is not None else None)


@command("armget")
def armget(c, argv):
    a = c.db.lookup_read_typed(argv[1], ArrayValue)
    idxs = [_index(x) for x in argv[2:]]
    resp = c.resp
    if a is None:
        return array_header(len(idxs)) + null(resp) * len(idxs)
    d = a.d
    return array_header(len(idxs)) + b"".join([_value(resp, d.get(i)) for i in idxs])


@command("arset")
def arset(c, argv):
    start = _index(argv[2])
    n = len(argv) - 3
    last = start + n - 1
    if last >= UINT64_MAX:
        raise _INDEX_OVERFLOW
    key = argv[1]
    a = c.db.lookup_write_typed(key, ArrayValue, True)
    before = len(a)
    if n > 1:
        a.prepare_range(start, last)
    i = start
    for v in argv[3:]:
        a.set(i, v)
        i += 1
    _write_done(c, key, b"arset", n)
    return integer(len(a) - before)


@command("armset")
def armset(c, argv):
    if (len(argv) - 2) % 2:
        raise arity_error("armset")
    idxs = [_index(argv[p]) for p in range(2, len(argv), 2)]
    key = argv[1]
    a = c.db.lookup_write_typed(key, ArrayValue, True)
    before = len(a)
    for k, i in enumerate(idxs):
        a.set(i, argv[3 + 2 * k])
    _write_done(c, key, b"armset", len(idxs))
    return integer(len(a) - before)


# ---------------------------------------------------------------------------
# ARDEL / ARDELRANGE / ARLEN / ARCOUNT
# ---------------------------------------------------------------------------

@command("ardel")
def ardel(c, argv):
    idxs = [_index(x) for x in argv[2:]]
    key = argv[1]
    a = c.db.lookup_write_typed(key, ArrayValue)
    if a is None:
        return ZERO
    deleted = 0
    for i in idxs:
        deleted += a.delete(i)
    _removed(c, key, a, b"ardel", deleted)
    return integer(deleted)


@command("ardelrange")
def ardelrange(c, argv):
    if (len(argv) - 2) % 2:
        raise arity_error("ardelrange")
    ranges = []
    for p in range(2, len(argv), 2):
        s = _index(argv[p])
        e = _index(argv[p + 1])
        ranges.append((s, e) if s <= e else (e, s))
    key = argv[1]
    a = c.db.lookup_write_typed(key, ArrayValue)
    if a is None:
        return ZERO
    deleted = 0
    for lo, hi in ranges:
        deleted += a.delete_range(lo, hi)
    _removed(c, key, a, b"ardelrange", deleted)
    return _uint(c.resp, deleted)


@command("arlen")
def arlen(c, argv):
    a = c.db.lookup_read_typed(argv[1], ArrayValue)
    return ZERO if a is None else _uint(c.resp, a.length())


@command("arcount")
def arcount(c, argv):
    a = c.db.lookup_read_typed(argv[1], ArrayValue)
    return ZERO if a is None else _uint(c.resp, len(a))


# ---------------------------------------------------------------------------
# ARGETRANGE / ARSCAN
# ---------------------------------------------------------------------------

@command("argetrange")
def argetrange(c, argv):
    start = _index(argv[2])
    end = _index(argv[3])
    a = c.db.lookup_read_typed(argv[1], ArrayValue)
    lo, hi = (start, end) if start <= end else (end, start)
    n = hi - lo + 1
    if n > MAX_REPLY_ITEMS:
        raise _RANGE_TOO_BIG
    resp = c.resp
    if a is None:
        return array_header(n) + null(resp) * n
    d = a.d
    if not d:
        return array_header(n) + null(resp) * n
    rng = range(lo, hi + 1) if start <= end else range(hi, lo - 1, -1)
    nul = null(resp)
    get = d.get
    out = [array_header(n)]
    ap = out.append
    for i in rng:
        v = get(i)
        ap(nul if v is None else b"$%d\r\n%s\r\n" % (len(v), v))
    return b"".join(out)


def _positive_limit(b: bytes) -> int:
    n = parse_int(b)
    if n <= 0:
        raise _LIMIT_POSITIVE
    return n


@command("arscan")
def arscan(c, argv):
    start = _index(argv[2])
    end = _index(argv[3])
    limit = None
    if len(argv) == 6:
        if argv[4].lower() != b"limit":
            raise SYNTAX
        limit = _positive_limit(argv[5])
    elif len(argv) != 4:
        raise arity_error("arscan")
    a = c.db.lookup_read_typed(argv[1], ArrayValue)
    if a is None:
        return EMPTY_ARRAY
    out = []
    ap = out.append
    resp = c.resp
    for i, v in a.scan(start, end):
        if limit is not None and len(out) >= limit:
            break
        ap(b"*2\r\n%s$%d\r\n%s\r\n" % (_uint(resp, i), len(v), v))
    return array_header(len(out)) + b"".join(out)


# ---------------------------------------------------------------------------
# ARGREP
# ---------------------------------------------------------------------------

_PRED_TYPES = {b"exact": 1, b"match": 2, b"glob": 3, b"re": 4}
_EXACT, _MATCH, _GLOB, _RE = 1, 2, 3, 4
_ASCII_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")

# POSIX bracket classes, as Python class contents (ASCII)
_POSIX_CLASSES = {
    b"alpha": rb"A-Za-z", b"digit": rb"0-9", b"alnum": rb"A-Za-z0-9", b"upper": rb"A-Z",
    b"lower": rb"a-z", b"space": rb" \t\n\r\f\v", b"blank": rb" \t", b"punct": rb"!-/:-@\[-`{-~",
    b"print": rb" -~", b"graph": rb"!-~", b"cntrl": rb"\x00-\x1f\x7f", b"xdigit": rb"0-9A-Fa-f",
}


class _BadRegex(Exception):
    pass


def _translate_ere(p: bytes) -> bytes:
    """A POSIX extended regular expression as a Python one: bracket
    expressions (POSIX classes, a leading ']' literal, backslashes literal),
    '$' anchoring at the very end, back references refused."""
    out = bytearray()
    i = 0
    n = len(p)
    while i < n:
        ch = p[i]
        if ch == 0x5C:      # backslash
            if i + 1 >= n:
                raise _BadRegex("Trailing backslash")
            nxt = p[i + 1]
            if 0x31 <= nxt <= 0x39:
                raise _BadRegex("backref")
            if nxt == 0x3C:             # \< and \>: word starts and ends
                out += rb"\b(?=\w)"
            elif nxt == 0x3E:
                out += rb"\b(?<=\w)"
            else:
                out += p[i:i + 2]
            i += 2
            continue
        if ch == 0x5B:      # '['
            j = i + 1
            cls = bytearray(b"[")
            if j < n and p[j] == 0x5E:
                cls += b"^"
                j += 1
            first = True
            while True:
                if j >= n:
                    raise _BadRegex("Missing ']'")
                cj = p[j]
                if cj == 0x5D and not first:
                    break
                if cj == 0x5B and j + 1 < n and p[j + 1] == 0x3A:     # [:class:]
                    end = p.find(b":]", j + 2)
                    if end < 0:
                        raise _BadRegex("Missing ']'")
                    name = p[j + 2:end]
                    if name not in _POSIX_CLASSES:
                        raise _BadRegex("Unknown character class name")
                    cls += _POSIX_CLASSES[name]
                    j = end + 2
                elif cj in b"\\[]^":
                    cls += b"\\" + bytes((cj,))
                    j += 1
                else:
                    cls.append(cj)
                    j += 1
                first = False
            cls += b"]"
            out += cls
            i = j + 1
            continue
        if ch == 0x24:      # '$'
            out += rb"\Z"
            i += 1
            continue
        out.append(ch)
        i += 1
    return bytes(out)


_RE_ERRORS = (
    ("missing ), unterminated subpattern", "Missing ')'"),
    ("unbalanced parenthesis", "Missing ')'"),
    ("unterminated character set", "Missing ']'"),
    ("nothing to repeat", "Invalid use of repetition operators"),
    ("multiple repeat", "Invalid use of repetition operators"),
    ("bad character range", "Invalid character range"),
    ("min repeat greater than max repeat", "Invalid contents of {}"),
)


def _compile_re(pattern: bytes, nocase: bool):
    if not pattern:
        raise RedisError("ERR regular expression is empty")
    try:
        py = _translate_ere(pattern)
        flags = re.DOTALL | (re.IGNORECASE if nocase else 0)
        return re.compile(py, flags)
    except _BadRegex as e:
        if e.args[0] == "backref":
            raise RedisError("ERR regular expression backreferences are not supported")
        raise RedisError("ERR invalid regular expression: %s" % e.args[0])
    except re.error as e:
        msg = "Invalid regexp"
        for frag, text in _RE_ERRORS:
            if frag in str(e):
                msg = text
                break
        raise RedisError("ERR invalid regular expression: %s" % msg)


def _grep_bound(b: bytes):
    if b == b"-":
        return "start"
    if b == b"+":
        return "end"
    return _index(b)


def _grep_plan(argv):
    """Predicates and options, in one pass (options may repeat: the last
    wins); (preds, and_mode, withvalues, nocase, limit)."""
    preds = []
    and_mode = withvalues = nocase = False
    limit = None
    n = len(argv)
    p = 4
    while p < n:
        tok = argv[p].lower()
        t = _PRED_TYPES.get(tok)
        if t is not None:
            if p + 1 >= n:
                raise SYNTAX
            if len(preds) >= GREP_MAX_PREDICATES:
                raise RedisError("ERR too many predicates, maximum is %d" % GREP_MAX_PREDICATES)
            pat = argv[p + 1]
            if t == _RE and len(pat) > GREP_MAX_RE_LEN:
                raise RedisError("ERR regular expression is too long, maximum is %d bytes" % GREP_MAX_RE_LEN)
            preds.append([t, pat])
            p += 2
        elif tok == b"limit":
            if p + 1 >= n:
                raise SYNTAX
            limit = _positive_limit(argv[p + 1])
            p += 2
        elif tok == b"withvalues":
            withvalues = True
            p += 1
        elif tok == b"nocase":
            nocase = True
            p += 1
        elif tok == b"and" or tok == b"or":
            and_mode = tok == b"and"
            p += 1
        else:
            raise SYNTAX
    if not preds:
        raise SYNTAX
    for pr in preds:
        if pr[0] == _RE:
            pr[1] = _compile_re(pr[1], nocase)
        elif nocase and pr[0] != _GLOB:
            pr[1] = pr[1].translate(_ASCII_LOWER)
    return preds, and_mode, withvalues, nocase, limit


def _pred_match(pr, v: bytes, lowered, nocase: bool) -> bool:
    t, pat = pr
    if t == _EXACT:
        return (lowered if nocase else v) == pat
    if t == _MATCH:
        return pat in (lowered if nocase else v)
    if t == _GLOB:
        return stringmatch(pat, v, nocase)
    return pat.search(v) is not None


@command("argrep")
def argrep(c, argv):
    sb = _grep_bound(argv[2])
    eb = _grep_bound(argv[3])
    preds, and_mode, withvalues, nocase, limit = _grep_plan(argv)
    a = c.db.lookup_read_typed(argv[1], ArrayValue)
    if a is None or not a:
        return EMPTY_ARRAY
    top = a.length() - 1
    start = 0 if sb == "start" else top if sb == "end" else sb
    end = 0 if eb == "start" else top if eb == "end" else eb
    out = []
    ap = out.append
    test = all if and_mode else any
    resp = c.resp
    for i, v in a.scan(start, end):
        if limit is not None and len(out) >= limit:
            break
        lowered = v.translate(_ASCII_LOWER) if nocase else None
        if not test(_pred_match(pr, v, lowered, nocase) for pr in preds):
            continue
        if withvalues:
            ap(b"*2\r\n%s$%d\r\n%s\r\n" % (_uint(resp, i), len(v), v))
        else:
            ap(_uint(resp, i))
    return array_header(len(out)) + b"".join(out)


# ---------------------------------------------------------------------------
# AROP
# ---------------------------------------------------------------------------

_OPS = {b"sum": 1, b"min": 2, b"max": 3, b"and": 4, b"or": 5, b"xor": 6, b"match": 7, b"used": 8}
_SUM, _MIN, _MAX, _AND, _OR, _XOR, _OPMATCH, _USED = 1, 2, 3, 4, 5, 6, 7, 8
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
_INF = float("inf")
_NAN = "nan"


def _numeric(v: bytes):
    """(number, is_int) of an element for AROP, or None when not numeric:
    inline integers and decimals as stored, other strings through
    string2ll, then strtold (a long double, exact Fraction or +-inf)."""
    kind, x = value_kind(v)
    if kind == KIND_INT:
        return x, True
    if kind == KIND_FLOAT:
        return Fraction(x), False
    ll = string2ll(v)
    if ll is not None:
        return ll, True
    try:
        return parse_ld(v), False
    except RedisError:
        return None


def _ld_g17(x) -> bytes:
    """ld2string(LD_STR_AUTO): "%.17Lg" of a long double (a Fraction, an
    int, +-inf or NaN)."""
    if x == _NAN:
        return b"-nan"
    if isinstance(x, float):
        return b"inf" if x > 0 else b"-inf"
    x = Fraction(x)
    if x == 0:
        return b"0"
    neg = x < 0
    a = -x if neg else x
    # exponent e with 10**e <= a < 10**(e+1)
    e = len(str(a.numerator)) - len(str(a.denominator))
    if Fraction(10) ** e > a:
        e -= 1
    elif Fraction(10) ** (e + 1) <= a:
        e += 1
    # 17 significant digits, rounded half to even on the exact value
    scale = 16 - e
    q = a * (Fraction(10) ** scale)
    m = q.numerator // q.denominator
    r = q - m
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and m & 1):
        m += 1
    if m >= 10 ** 17:
        m //= 10
        e += 1
        scale -= 1
    digits = str(m)
    if -4 <= e < 17:
        if scale > 0:
            s = digits.rjust(scale + 1, "0")
            ip, fp = s[:-scale], s[-scale:]
            fp = fp.rstrip("0")
            s = ip + ("." + fp if fp else "")
        else:
            s = digits + "0" * (-scale)
    else:
        mant = digits[0]
        rest = digits[1:].rstrip("0")
        if rest:
            mant += "." + rest
        s = "%se%s%02d" % (mant, "-" if e < 0 else "+", abs(e))
    return (("-" if neg else "") + s).encode()


def _ld_add(a, b):
    if a == _NAN or b == _NAN:
        return _NAN
    if isinstance(a, float) or isinstance(b, float):
        fa = a if isinstance(a, float) else 0.0
        fb = b if isinstance(b, float) else 0.0
        s = fa + fb
        return _NAN if s != s else s
    return ld_round(Fraction(a) + Fraction(b))


def _lt(a, b) -> bool:
    return float(a) < float(b) if isinstance(a, float) or isinstance(b, float) else a < b


@command("arop")
def arop(c, argv):
    start = _index(argv[2])
    end = _index(argv[3])
    op = _OPS.get(argv[4].lower())
    if op is None:
        raise RedisError("ERR unknown operation")
    if op == _OPMATCH:
        if len(argv) != 6:
            raise RedisError("ERR MATCH requires a value argument")
        target = argv[5]
    elif len(argv) != 5:
        raise arity_error("arop")
    a = c.db.lookup_read_typed(argv[1], ArrayValue)
    if a is None:
        return ZERO if op in (_OPMATCH, _USED) else null(c.resp)
    if op == _USED:
        return integer(sum(1 for _ in a.scan(start, end)))
    if op == _OPMATCH:
        return integer(sum(1 for _, v in a.scan(start, end) if v == target))
    acc = None
    for _, v in a.scan(start, end):
        num = _numeric(v)
        if num is None:
            continue
        x, is_int = num
        if op in (_AND, _OR, _XOR):
            if not is_int:
                if isinstance(x, float):
                    continue        # +-inf: out of the int64 range
                if x < _I64_MIN or x > _I64_MAX:
                    continue
                x = int(x)          # toward zero
            if acc is None:
                acc = x
            elif op == _AND:
                acc &= x
            elif op == _OR:
                acc |= x
            else:
                acc ^= x
        elif acc is None:
            acc = x if isinstance(x, float) else Fraction(x)
        elif op == _SUM:
            acc = _ld_add(acc, x)
        elif op == _MIN:
            if acc != _NAN and _lt(x, acc):
                acc = x
        elif acc != _NAN and _lt(acc, x):
            acc = x
    if acc is None:
        return null(c.resp)
    if op in (_AND, _OR, _XOR):
        return integer(acc)
    s = _ld_g17(acc)
    return b"$%d\r\n%s\r\n" % (len(s), s)


# ---------------------------------------------------------------------------
# ARINSERT / ARRING / ARNEXT / ARSEEK / ARLASTITEMS
# ---------------------------------------------------------------------------

@command("arinsert")
def arinsert(c, argv):
    key = argv[1]
    db = c.db
    a = db.lookup_write_typed(key, ArrayValue, True)
    n = len(argv) - 2
    if a.insert_idx is None:
        start = 0
    else:
        if a.insert_idx >= UINT64_MAX - 1:
            raise _INSERT_OVERFLOW
        start = a.insert_idx + 1
    last = start + n - 1
    if last >= UINT64_MAX:
        raise _INSERT_OVERFLOW
    if n > 1:
        a.prepare_range(start, last)
    i = start
    for v in argv[2:]:
        a.set(i, v)
        i += 1
    a.insert_idx = last
    _write_done(c, key, b"arinsert", n)
    return _uint(c.resp, last)


def _ring_rework(a, ring_size: int):
    """ARRING's rebuild when its size changes the ring's shape: None, or
    the fresh array holding the latest contiguous run of elements (at most
    the size kept) from index 0, oldest first."""
    old_span = a.length()
    if old_span == 0 or ring_size == old_span:
        return None
    if ring_size < old_span:
        keep = ring_size
    else:
        nxt = 0 if a.insert_idx is None else a.insert_idx + 1
        if a.insert_idx is None or nxt >= old_span:
            return None
        keep = old_span
    anchor = old_span - 1 if a.insert_idx is None else a.insert_idx % old_span
    d = a.d
    kept = []
    src = anchor
    while len(kept) < keep:
        v = d.get(src)
        if v is None:
            break
        kept.append(v)
        src = old_span - 1 if src == 0 else src - 1
    new = ArrayValue()
    for dst, v in enumerate(reversed(kept)):
        new.set(dst, v)
    if kept:
        new.insert_idx = len(kept) - 1
    return new


@command("arring")
def arring(c, argv):
    size = parse_int(argv[2], RedisError("ERR invalid size"))
    if size <= 0:
        raise RedisError("ERR size must be positive")
    key = argv[1]
    a = c.db.lookup_write_typed(key, ArrayValue, True)
    new = _ring_rework(a, size)
    if new is not None:
        for f in ArrayValue.__slots__:
            setattr(a, f, getattr(new, f))
    cursor = 0
    for v in argv[3:]:
        cursor = 0 if a.insert_idx is None else a.insert_idx + 1
        if cursor >= size:
            cursor %= size
        a.set(cursor, v)
        a.insert_idx = cursor
    _write_done(c, key, b"arring", len(argv) - 3)
    return integer(cursor)


@command("arnext")
def arnext(c, argv):
    a = c.db.lookup_read_typed(argv[1], ArrayValue)
    if a is None or a.insert_idx is None:
        return ZERO
    if a.insert_idx == UINT64_MAX - 1:
        return null(c.resp)
    return _uint(c.resp, a.insert_idx + 1)


@command("arseek")
def arseek(c, argv):
    i = parse_index(argv[2], allow_max=True)
    if i is None:
        raise _BAD_INDEX
    key = argv[1]
    a = c.db.lookup_write_typed(key, ArrayValue)
    if a is None:
        return ZERO
    a.insert_idx = None if i == 0 else i - 1
    _write_done(c, key, b"arseek", 1)
    return ONE


@command("arlastitems")
def arlastitems(c, argv):
    count = parse_int(argv[2], RedisError("ERR invalid COUNT"))
    if count <= 0:
        return EMPTY_ARRAY
    rev = False
    if len(argv) == 4:
        if argv[3].lower() != b"rev":
            raise SYNTAX
        rev = True
    elif len(argv) != 3:
        raise arity_error("arlastitems")
    a = c.db.lookup_read_typed(argv[1], ArrayValue)
    if a is None:
        return EMPTY_ARRAY
    n = a.length()
    k = min(count, n)
    if k > len(a) and k > MAX_REPLY_ITEMS:
        raise _COUNT_TOO_BIG
    if k == 0:
        return EMPTY_ARRAY
    ins = a.insert_idx
    cur = n - 1 if ins is None or ins >= n else ins
    d = a.d
    got = []
    for _ in range(k):
        got.append(d.get(cur))
        cur = n - 1 if cur == 0 else cur - 1
    if not rev:
        got.reverse()
    resp = c.resp
    return array_header(k) + b"".join([_value(resp, v) for v in got])


# ---------------------------------------------------------------------------
# ARINFO
# ---------------------------------------------------------------------------

def _double(resp: int, d: float) -> bytes:
    s = d2string(d)
    if resp >= 3:
        return b",%s\r\n" % s
    return b"$%d\r\n%s\r\n" % (len(s), s)


def _field(name: bytes, val: bytes) -> bytes:
    return b"$%d\r\n%s\r\n%s" % (len(name), name, val)


@command("arinfo")
def arinfo(c, argv):
    full = False
    if len(argv) > 2:
        if len(argv) == 3 and argv[2].lower() == b"full":
            full = True
        else:
            raise SYNTAX
    a = c.db.lookup_read_typed(argv[1], ArrayValue)
    if a is None:
        raise _NO_SUCH_KEY
    resp = c.resp
    ins = a.insert_idx
    nxt = 0 if ins is None or ins == UINT64_MAX - 1 else ins + 1
    out = [map_header(resp, 12 if full else 7),
           _field(b"count", _uint(resp, len(a))),
           _field(b"len", _uint(resp, a.length())),
           _field(b"next-insert-index", _uint(resp, nxt)),
           _field(b"slices", integer(len(a.slices))),
           _field(b"directory-size", integer(a.directory_size())),
           _field(b"super-dir-entries", integer(len(a.blocks) if a.superdir else 0)),
           _field(b"slice-size", integer(SLICE_SIZE))]
    if full:
        dense, sparse, win_total, dense_count, sparse_cap = a.full_stats()
        out += [_field(b"dense-slices", integer(dense)),
                _field(b"sparse-slices", integer(sparse)),
                _field(b"avg-dense-size", _double(resp, win_total / dense if dense else 0.0)),
                _field(b"avg-dense-fill", _double(resp, dense_count / win_total if win_total else 0.0)),
                _field(b"avg-sparse-size", _double(resp, sparse_cap / sparse if sparse else 0.0))]
    return b"".join(out)
