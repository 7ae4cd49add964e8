"""The JSON type (Redis 8's built-in RedisJSON): a document held as plain
Python values (dict, list, str, int, float, bool, None) inside ``JsonValue``.

Parsing follows serde_json's rules as RedisJSON applies them (no NaN or
Infinity, integers beyond 64 bits become floats, nesting limited to 128
levels); serializing writes what serde_json writes: compact by default,
non-ASCII characters as they are, floats in the shortest round-trip form
with serde's exponent style (``1e20``, ``1.5e-7``), and the INDENT /
NEWLINE / SPACE formatter of JSON.GET.
"""

from __future__ import annotations

import json
import math
import struct

from ..keyspace.db import ENCODINGS, register_module_type

MAX_DEPTH = 128
I64_MIN = -(1 << 63)
I64_MAX = (1 << 63) - 1
U64_MAX = (1 << 64) - 1


class JsonError(Exception):
    """A document that cannot be parsed (the message is the reply's text
    after ``ERR ``)."""


class JsonValue:
    __slots__ = ("v",)
    # RedisJSON's module record (persistence/modulerecord.py): we write
    # encoding version 4 as Redis 8 does (the document as ijson's CBOR, in
    # one string item); 2 and 3 (the JSON text) are read too.
    MODULE_NAME = "ReJSON-RL"
    MODULE_ENCVER = 4
    MODULE_ENCVERS = (2, 3, 4)

    def __init__(self, v=None):
        self.v = v

    def copy(self):
        """COPY: a deep copy of the document."""
        return JsonValue(deep_copy(self.v))

    def rewrite_commands(self, key):
        """AOF rewrite: the document set whole at the root (with the FPHA
        width of its typed arrays when setting it so rebuilds them)."""
        argv = [b"JSON.SET", key, b"$", dumps(self.v).encode("utf-8")]
        ft = rewrite_width(self.v)
        if ft is not None:
            argv += [b"FPHA", ft.encode()]
        yield argv

    def rdb_save(self, w):
        w.string(cbor_encode(self.v))

    @classmethod
    def rdb_load(cls, r, encver):
        text = r.string()
        if encver == 2 and r.uint():
            r.string()
            r.string()
        try:
            if encver == 4:
                return cls(cbor_decode(bytes(text)))
            return cls(parse(bytes(text)))
        except JsonError as e:
            raise ValueError(str(e)) from None

    def mem_usage(self) -> int:
        """The document's own estimate (RedisJSON's mem_usage)."""
        return memory(self.v)

    def digest(self) -> bytes:
        # ours: the document's compact JSON text
        return dumps(self.v).encode("utf-8")


register_module_type(JsonValue, b"ReJSON-RL")
ENCODINGS[JsonValue] = lambda v, cfg: b"raw"


class TypedList(list):
    """An array of numbers stored at one float width, as ijson stores an
    array JSON.SET ... FPHA narrowed (or a typed float array read from Redis
    8's RDB): ftype is FP16, BF16, FP32 or FP64, the items are the Python
    floats of the narrowed values, and the array prints each with the fewest
    digits that still identify it at its width (0.3, not 0.300048828125).
    ftype None: an array that stopped being typed (a value of another kind
    was stored in it) and prints as any other."""
    __slots__ = ("ftype",)

    def __init__(self, items=(), ftype=None):
        super().__init__(items)
        self.ftype = ftype


# significant bits, smallest normal binary exponent, largest finite value
_WIDTHS = {"FP16": (11, -14, 65504.0), "BF16": (8, -126, (2 - 2.0 ** -7) * 2.0 ** 127),
           "FP32": (24, -126, (2 - 2.0 ** -23) * 2.0 ** 127)}
# the names ijson's errors give the widths
FLOAT_TYPE_NAMES = {"FP16": "F16", "BF16": "BF16", "FP32": "F32", "FP64": "F64"}


def narrow(x, ftype):
    """x (an int or a float) rounded to the nearest float of the width
    (ties to even), as a Python float; None when it does not fit."""
    try:
        x = float(x)
    except OverflowError:
        return None
    if ftype == "FP64" or x == 0:
        return x if math.isfinite(x) else None
    sig, emin, top = _WIDTHS[ftype]
    e = math.frexp(x)[1]
    q = max(e - sig, emin - sig + 1)
    y = math.ldexp(round(math.ldexp(x, -q)), q)
    return y if abs(y) <= top else None


def _sig_round(x: float, digits: int) -> float:
    # x kept to digits significant decimal digits (halves away from zero)
    mag = math.floor(math.log10(abs(x)))
    scale = 10.0 ** (digits - 1 - mag)
    y = x * scale
    r = math.floor(abs(y) + 0.5)
    return math.copysign(r, y) / scale


def short_float(x: float, ftype) -> float:
    """The float whose shortest text ijson prints for x of the width: FP32
    the shortest decimal that reads back as the same single; FP16 / BF16
    the value rounded to the fewest significant digits (up to 5) that reads
    back as the same half, else x itself."""
    if ftype == "FP32":
        for p in range(1, 10):
            y = float("%.*g" % (p, x))
            if narrow(y, "FP32") == x:
                return y
        return x
    if ftype in ("FP16", "BF16"):
        if not math.isfinite(x) or x == int(x):
            return x
        for d in range(1, 6):
            y = _sig_round(x, d)
            if narrow(y, ftype) == x:
                return y
    return x


def _printed(v):
    """The items of a list as they print (a typed array's with its width's
    shortest text)."""
    ft = v.ftype if v.__class__ is TypedList else None
    if ft is None or ft == "FP64":
        return v
    return [short_float(x, ft) for x in v]


def fpha(v, ftype):
    """A parsed value with its numeric arrays narrowed as JSON.SET ... FPHA
    narrows them (ijson): an array whose first item is a number is typed,
    its numbers narrowed, until an item of another kind makes it an ordinary
    array (numbers after that stay as they are).  Raises FphaError with the
    path of a number that does not fit the width."""
    return _fpha(v, ftype, [])


class FphaError(Exception):
    def __init__(self, path):
        super().__init__(path)
        self.path = path


def _isnum(x) -> bool:
    return (x.__class__ is int or x.__class__ is float)


def _fpha(v, ftype, path):
    if isinstance(v, dict):
        for k, x in v.items():
            if isinstance(x, (dict, list)):
                path.append(k)
                v[k] = _fpha(x, ftype, path)
                path.pop()
        return v
    if not isinstance(v, list) or not v:
        return v
    out = []
    typed = True
    for i, x in enumerate(v):
        if isinstance(x, (dict, list)):
            path.append(i)
            x = _fpha(x, ftype, path)
            path.pop()
        if typed and _isnum(x):
            y = narrow(x, ftype)
            if y is None:
                raise FphaError(path + [i])
            out.append(y)
        else:
            typed = False
            out.append(x)
    return TypedList(out, ftype) if typed else out


def rewrite_width(v):
    """The FPHA width with which JSON.SET of v's text rebuilds v exactly, or
    None (no typed arrays, or setting the text with a width would change
    another array)."""
    widths = set()
    stack = [v]
    lists = []
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            stack.extend(y for y in x.values() if isinstance(y, (dict, list)))
        elif isinstance(x, list):
            if x.__class__ is TypedList and x.ftype is not None:
                widths.add(x.ftype)
            else:
                lists.append(x)
                stack.extend(y for y in x if isinstance(y, (dict, list)))
    if len(widths) != 1:
        return None
    ft = widths.pop()
    for x in lists:
        # an ordinary array must come back as it is: its leading numbers
        # floats the width holds, and something else after them
        i = 0
        while i < len(x) and _isnum(x[i]):
            if x[i].__class__ is not float or narrow(x[i], ft) != x[i]:
                return None
            i += 1
        if i and i == len(x):
            return None
    return ft


def _float_kind(x: float):
    # the narrowest width that holds x exactly (ijson's tag for a float)
    for ft in ("FP16", "BF16", "FP32"):
        if narrow(x, ft) == x:
            return ft
    return "FP64"


_WIDER = {("FP16", "BF16"): "FP32", ("BF16", "FP16"): "FP32"}
_ORDER = {"FP16": 0, "BF16": 0, "FP32": 1, "FP64": 2}


def settle(arr):
    """After values were stored into a typed array: it stays typed while
    they are floats its width holds exactly, widens to hold a float that
    needs more, and becomes an ordinary array for anything else (ijson's
    promotion)."""
    ft = arr.ftype
    if ft is None:
        return
    for x in arr:
        if x.__class__ is not float:
            arr.ftype = None
            return
        if ft != "FP64" and narrow(x, ft) != x:
            k = _float_kind(x)
            ft = _WIDER.get((ft, k)) or (k if _ORDER[k] > _ORDER[ft] else ft)
    arr.ftype = ft


def fpha_error_text(text: str, path, ftype) -> str:
    """serde_json's text of the error: where its reader stands once the
    array holding the number has been read up to the number's end."""
    i = _value_at(text, path)
    j = _skip_ws(text, i)
    if j < len(text) and text[j] == "]":
        at = j + 1
    else:
        at = _skip_ws(text, j + 1)
    at = len(text[:at].encode("utf-8"))
    raw = text.encode("utf-8")
    line_start = raw.rfind(b"\n", 0, at) + 1
    line = 1 + raw.count(b"\n", 0, line_start)
    return "value out of range for %s at line %d column %d" % (
        FLOAT_TYPE_NAMES[ftype], line, at - line_start)


def _skip_ws(s, i):
    while i < len(s) and s[i] in " \t\n\r":
        i += 1
    return i


def _value_end(s, i):
    c = s[i]
    if c == '"':
        i += 1
        while s[i] != '"':
            i += 2 if s[i] == "\\" else 1
        return i + 1
    if c in "[{":
        depth = 0
        while True:
            c = s[i]
            if c == '"':
                i = _value_end(s, i)
                continue
            if c in "[{":
                depth += 1
            elif c in "]}":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
    while i < len(s) and s[i] not in ",]} \t\n\r":
        i += 1
    return i


def _value_at(s, path):
    """The end of the value at path in the JSON text s."""
    i = _skip_ws(s, 0)
    for step in path:
        if s[i] == "[":
            i = _skip_ws(s, i + 1)
            for _ in range(step):
                i = _skip_ws(s, _value_end(s, i))
                i = _skip_ws(s, i + 1)
        else:
            i = _skip_ws(s, i + 1)
            while True:
                e = _value_end(s, i)
                key = json.loads(s[i:e])
                i = _skip_ws(s, _skip_ws(s, e) + 1)
                if key == step:
                    break
                i = _skip_ws(s, _value_end(s, i))
                i = _skip_ws(s, i + 1)
    return _value_end(s, i)


def remove_key(d: dict, k) -> None:
    """Delete member k of an object as ijson does: the object's last member
    moves into its place (so {"a","b","c"} without "a" is {"c","b"})."""
    keys = list(d)
    i = keys.index(k)
    if i == len(keys) - 1:
        del d[k]
        return
    last = keys[-1]
    lv = d.pop(last)
    rest = [(kk, d.pop(kk)) for kk in keys[i + 1:-1]]
    del d[k]
    d[last] = lv
    d.update(rest)


def strict_eq(a, b) -> bool:
    """Deep equality with the kinds kept apart (1 is not 1.0, true is not
    1), as RedisJSON compares values."""
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(strict_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return (isinstance(b, dict) and len(a) == len(b)
                and all(k in b and strict_eq(x, b[k]) for k, x in a.items()))
    return a.__class__ is b.__class__ and a == b


def deep_copy(v):
    stack = []
    if isinstance(v, dict):
        root = {}
    elif v.__class__ is TypedList:
        return TypedList(v, v.ftype)
    elif isinstance(v, list):
        root = []
    else:
        return v
    stack.append((v, root))
    while stack:
        src, dst = stack.pop()
        items = src.items() if isinstance(src, dict) else enumerate(src)
        for k, x in items:
            if isinstance(x, dict):
                y = {}
                stack.append((x, y))
            elif x.__class__ is TypedList:
                y = TypedList(x, x.ftype)
            elif isinstance(x, list):
                y = []
                stack.append((x, y))
            else:
                y = x
            if isinstance(dst, dict):
                dst[k] = y
            else:
                dst.append(y)
    return root


def _bad_constant(name):
    raise ValueError("bad constant")


def _int(s: str):
    v = int(s)
    if I64_MIN <= v <= U64_MAX:
        return v
    return float(s)


def depth(v) -> int:
    """Nesting levels of v (a scalar 0, [] or {} 1)."""
    best = 0
    stack = [(v, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, dict):
            best = max(best, d)
            stack.extend((y, d + 1) for y in x.values())
        elif isinstance(x, list):
            best = max(best, d)
            stack.extend((y, d + 1) for y in x)
    return best


def _depth_ok(v, depth=0) -> bool:
    stack = [(v, 1)]
    while stack:
        x, d = stack.pop()
        # serde_json's limit: 128 levels of nesting do not parse
        if isinstance(x, dict):
            if d >= MAX_DEPTH:
                return False
            stack.extend((y, d + 1) for y in x.values())
        elif isinstance(x, list):
            if d >= MAX_DEPTH:
                return False
            stack.extend((y, d + 1) for y in x)
    return True


_decoder = json.JSONDecoder(parse_int=_int, parse_constant=_bad_constant)


def parse(data: bytes):
    """A JSON text to its value; JsonError when it is not one."""
    try:
        s = data.decode("utf-8")
    except UnicodeDecodeError:
        raise JsonError("Couldn't parse as UTF-8 string") from None
    try:
        v = _decoder.decode(s)
    except ValueError as e:
        raise JsonError(_serde_message(s, e)) from None
    if isinstance(v, float) and not math.isfinite(v):
        raise JsonError("number out of range")
    if not _depth_ok(v):
        raise JsonError("recursion limit exceeded")
    return v


def _serde_message(s: str, e) -> str:
    """serde_json's text for the usual parse errors ("<what> at line L
    column C", C the 1-based column of the offending character; at the end
    of the input the column of the last character)."""
    msg = getattr(e, "msg", "")
    pos = getattr(e, "pos", 0) or 0
    if msg == "bad constant":
        # NaN / Infinity / -Infinity
        msg = "Expecting value"
    at_end = not s[pos:].strip() or msg.startswith("Unterminated string")
    if at_end:
        body = s.rstrip()
        pos = len(body)
        opened = [ch for ch in body if ch in "[{"]
        if msg.startswith("Unterminated string") or msg.startswith("Invalid control"):
            what = "EOF while parsing a string"
        elif not body:
            what = "EOF while parsing a value"
        elif msg.startswith("Expecting property name") or msg.startswith("Expecting ':'") \
                or (msg.startswith("Expecting ','") and body.lstrip()[:1] == "{" and opened[-1:] == ["{"]):
            what = "EOF while parsing an object"
        elif msg.startswith("Expecting ','") or (msg.startswith("Expecting value") and body.endswith((",", "["))
                                                   and opened[-1:] == ["["]):
            what = "EOF while parsing a list"
        else:
            what = "EOF while parsing a value"
        line = body.count("\n") + 1
        col = len(body) - (body.rfind("\n") + 1)
        return "%s at line %d column %d" % (what, line, col)
    line = s.count("\n", 0, pos) + 1
    col = pos - (s.rfind("\n", 0, pos) + 1) + 1
    if msg.startswith("Extra data"):
        what = "trailing characters"
    elif msg.startswith("Expecting property name"):
        what = "trailing comma" if s[pos:pos + 1] == "}" else "key must be a string"
    elif msg.startswith("Expecting ':'"):
        what = "expected `:`"
    elif msg.startswith("Expecting ',' delimiter"):
        inner = s[:pos].rstrip()
        what = "expected `,` or `}`" if _innermost(inner) == "{" else "expected `,` or `]`"
    elif msg.startswith("Invalid control character"):
        what = "control character (\\u0000-\\u001F) found while parsing a string"
    elif msg.startswith("Invalid \\escape") or msg.startswith("Invalid \\uXXXX"):
        what = "invalid escape"
    elif msg.startswith("Expecting value") and s[pos:pos + 1] == "]" and s[:pos].rstrip().endswith(","):
        what = "trailing comma"
    else:
        what = "expected value"
    return "%s at line %d column %d" % (what, line, col)


def _innermost(prefix: str) -> str:
    """The innermost open bracket of a JSON prefix (strings skipped)."""
    stack = []
    instr = esc = False
    for ch in prefix:
        if instr:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                instr = False
        elif ch == '"':
            instr = True
        elif ch in "[{":
            stack.append(ch)
        elif ch in "]}" and stack:
            stack.pop()
    return stack[-1] if stack else ""


# RedisJSON's RDB encoding version 4: the document as CBOR (ijson's encode),
# homogeneous numeric arrays as RFC 8746 typed arrays (tag -> struct code),
# BF16 under the private tag 0x10000.
_TYPED = {64: "B", 72: "b", 69: "<H", 77: "<h", 70: "<I", 78: "<i", 71: "<Q", 79: "<q",
          84: "<e", 85: "<f", 86: "<d"}
_TAG_BF16 = 0x10000
_TYPED_FLOATS = {84: "FP16", 85: "FP32", 86: "FP64"}


# ijson's array kinds: the tag of each typed array in CBOR (RFC 8746's
# little-endian typed arrays; bfloat16 under ijson's own tag)
_I8, _U8, _I16, _U16, _I32, _U32, _I64, _U64 = 72, 64, 77, 69, 78, 70, 79, 71
_F16, _F32, _F64 = 84, 85, 86
_HET = None
_INT_RANGES = ((_I8, -128, 127), (_U8, 0, 255), (_I16, -32768, 32767), (_U16, 0, 65535),
               (_I32, -(1 << 31), (1 << 31) - 1), (_U32, 0, (1 << 32) - 1), (_I64, I64_MIN, I64_MAX),
               (_U64, 0, U64_MAX))
_INT_BOUNDS = {t: (lo, hi) for t, lo, hi in _INT_RANGES}
_SIGNED = (_I8, _I16, _I32, _I64)
_UNSIGNED = (_U8, _U16, _U32, _U64)
_FLOAT_TAGS = {"FP16": _F16, "BF16": _TAG_BF16, "FP32": _F32, "FP64": _F64}
_TAG_WIDTH = {_F16: "FP16", _TAG_BF16: "BF16", _F32: "FP32", _F64: "FP64"}
_PACK = {_I8: "<b", _U8: "<B", _I16: "<h", _U16: "<H", _I32: "<i", _U32: "<I", _I64: "<q",
         _U64: "<Q", _F16: "<e", _F32: "<f", _F64: "<d"}


def _item_kind(x):
    """ijson's kind for one item: the narrowest signed-first integer type,
    the narrowest float type that holds it exactly, or heterogeneous."""
    t = x.__class__
    if t is int:
        for tag, lo, hi in _INT_RANGES:
            if lo <= x <= hi:
                return tag
        return _HET
    if t is float:
        for ft in ("FP16", "BF16", "FP32"):
            if narrow(x, ft) == x:
                return _FLOAT_TAGS[ft]
        return _F64
    return _HET


def _fits(x, tag) -> bool:
    t = x.__class__
    if tag in _TAG_WIDTH:
        return t is float and (tag == _F64 or narrow(x, _TAG_WIDTH[tag]) == x)
    lo, hi = _INT_BOUNDS[tag]
    return t is int and lo <= x <= hi


def _widen(a, b):
    """ijson's promotion of an array of kind a for an item of kind b."""
    if a == b:
        return a
    if a is _HET or b is _HET:
        return _HET
    fa, fb = a in _TAG_WIDTH, b in _TAG_WIDTH
    if fa != fb:
        return _HET
    if fa:
        if _F64 in (a, b):
            return _F64
        return _F32
    if a in _SIGNED and b in _SIGNED:
        return max(a, b, key=_SIGNED.index)
    if a in _UNSIGNED and b in _UNSIGNED:
        return max(a, b, key=_UNSIGNED.index)
    u, sg = (a, b) if a in _UNSIGNED else (b, a)
    if u == _U64:
        return _HET
    need = _SIGNED[_UNSIGNED.index(u) + 1]
    return max(need, sg, key=_SIGNED.index)


def array_kind(v):
    """The kind ijson gives an array built by pushing v's items in order."""
    if v.__class__ is TypedList and v.ftype is not None:
        return _FLOAT_TAGS[v.ftype]
    tag = _HET
    for i, x in enumerate(v):
        if i == 0:
            tag = _item_kind(x)
        elif tag is _HET:
            break
        elif not _fits(x, tag):
            tag = _widen(tag, _item_kind(x))
    return tag


def number_kind(v) -> str:
    """How ijson holds the numbers of array v: "int" (a typed integer
    array), "half" (FP16 / BF16), "float" (FP32 / FP64), or "" (items of
    several kinds)."""
    tag = array_kind(v)
    if tag is _HET:
        return ""
    if tag in (_F16, _TAG_BF16):
        return "half"
    if tag in (_F32, _F64):
        return "float"
    return "int"


def float_width(v):
    """The width ijson holds the floats of array v at (FP16, BF16, FP32,
    FP64), or None when it is not an array of floats."""
    return _TAG_WIDTH.get(array_kind(v))


def _cbor_head(major: int, n: int) -> bytes:
    if n < 24:
        return bytes((major << 5 | n,))
    if n < 0x100:
        return bytes((major << 5 | 24, n))
    if n < 0x10000:
        return bytes((major << 5 | 25,)) + n.to_bytes(2, "big")
    if n < 0x100000000:
        return bytes((major << 5 | 26,)) + n.to_bytes(4, "big")
    return bytes((major << 5 | 27,)) + n.to_bytes(8, "big")


def _cbor_float(f: float) -> bytes:
    # the shortest of half, single and double that holds f bit for bit
    try:
        h = struct.pack(">e", f)
        if struct.unpack(">e", h)[0] == f and math.copysign(1, f) == math.copysign(1, struct.unpack(">e", h)[0]):
            return b"\xf9" + h
    except OverflowError:
        pass
    try:
        s = struct.pack(">f", f)
        if struct.unpack(">f", s)[0] == f:
            return b"\xfa" + s
    except OverflowError:
        pass
    return b"\xfb" + struct.pack(">d", f)


def cbor_encode(v) -> bytes:
    """A document as ijson's CBOR (RedisJSON's RDB encoding version 4)."""
    out = []
    _cbor_put(v, out)
    return b"".join(out)


def _cbor_put(v, out):
    if v is None:
        out.append(b"\xf6")
    elif v is True:
        out.append(b"\xf5")
    elif v is False:
        out.append(b"\xf4")
    elif v.__class__ is int:
        out.append(_cbor_head(0, v) if v >= 0 else _cbor_head(1, -1 - v))
    elif v.__class__ is float:
        out.append(_cbor_float(v))
    elif isinstance(v, str):
        b = v.encode("utf-8")
        out.append(_cbor_head(3, len(b)))
        out.append(b)
    elif isinstance(v, dict):
        out.append(_cbor_head(5, len(v)))
        for k, x in v.items():
            _cbor_put(k, out)
            _cbor_put(x, out)
    else:
        tag = array_kind(v)
        if tag is _HET:
            out.append(_cbor_head(4, len(v)))
            for x in v:
                _cbor_put(x, out)
            return
        if tag == _TAG_BF16:
            raw = b"".join(struct.pack("<f", x)[2:] for x in v)
        else:
            raw = struct.pack("<%d%s" % (len(v), _PACK[tag][1]), *v)
        out.append(_cbor_head(6, tag))
        out.append(_cbor_head(2, len(raw)))
        out.append(raw)


def cbor_decode(data: bytes):
    """A CBOR document (ijson's encoding) to its value; JsonError when it is
    not one RedisJSON writes."""
    try:
        v, end = _cbor(memoryview(data), 0, 0)
    except (IndexError, struct.error, UnicodeDecodeError, ValueError):
        raise JsonError("CBOR decode error") from None
    if end != len(data):
        raise JsonError("CBOR decode error")
    return v


# CBOR's additional information 24..27: a 1, 2, 4 or 8 byte big-endian
# argument that follows; under major type 7, 25..27 a half, single or double
_CBOR_UINT = {24: struct.Struct(">B"), 25: struct.Struct(">H"), 26: struct.Struct(">I"),
              27: struct.Struct(">Q")}
_CBOR_FLOAT = {25: struct.Struct(">e"), 26: struct.Struct(">f"), 27: struct.Struct(">d")}


def _cbor_fixed(b, p, st):
    """The value st reads at p, and the position after it."""
    return st.unpack_from(b, p)[0], p + st.size


def _cbor_arg(b, p, info):
    if info < 24:
        return info, p
    st = _CBOR_UINT.get(info)
    if st is None:
        raise ValueError("indefinite or reserved length")
    return _cbor_fixed(b, p, st)


def _cbor(b, p, depth):
    if depth >= MAX_DEPTH:
        raise ValueError("too deep")
    ib = b[p]
    major, info = ib >> 5, ib & 31
    p += 1
    if major == 7:
        if info == 20:
            return False, p
        if info == 21:
            return True, p
        if info == 22:
            return None, p
        st = _CBOR_FLOAT.get(info)
        if st is None:
            raise ValueError("simple value")
        return _cbor_fixed(b, p, st)
    n, p = _cbor_arg(b, p, info)
    if major == 0:
        return n, p
    if major == 1:
        v = -1 - n
        if v < I64_MIN:
            raise ValueError("integer out of range")
        return v, p
    if major == 3:
        return bytes(b[p:p + n]).decode("utf-8"), p + n
    if major == 4:
        out = []
        for _ in range(n):
            v, p = _cbor(b, p, depth + 1)
            out.append(v)
        return out, p
    if major == 5:
        d = {}
        for _ in range(n):
            k, p = _cbor(b, p, depth + 1)
            if not isinstance(k, str):
                raise ValueError("map key")
            v, p = _cbor(b, p, depth + 1)
            d[k] = v
        return d, p
    if major == 6:
        if b[p] >> 5 != 2:
            raise ValueError("typed array payload")
        ln, q = _cbor_arg(b, p + 1, b[p] & 31)
        raw = bytes(b[q:q + ln])
        if len(raw) != ln:
            raise ValueError("short payload")
        if n == _TAG_BF16:
            if ln % 2:
                raise ValueError("bf16 size")
            vals = [struct.unpack("<f", b"\0\0" + raw[i:i + 2])[0] for i in range(0, ln, 2)]
            return TypedList(vals, "BF16"), q + ln
        else:
            code = _TYPED.get(n)
            if code is None:
                raise ValueError("unknown tag")
            size = struct.calcsize(code)
            if ln % size:
                raise ValueError("typed array size")
            vals = [struct.unpack_from(code, raw, i)[0] for i in range(0, ln, size)]
            ft = _TYPED_FLOATS.get(n)
            if ft is not None:
                # float arrays print at their width, as Redis prints them
                return TypedList(vals, ft), q + ln
        return vals, q + ln
    raise ValueError("byte string")


def format_float(f: float) -> str:
    """serde_json's (ryu's) text of a finite float."""
    if f == 0:
        return "-0.0" if math.copysign(1.0, f) < 0 else "0.0"
    r = repr(f)
    if "e" in r or "E" in r:
        mant, _, exp = r.partition("e")
        e = int(exp)
        if -5 <= e < 16:
            # ryu writes these in plain decimal
            digits = mant.replace(".", "").lstrip("-")
            neg = mant.startswith("-")
            point = (mant.lstrip("-").find(".") if "." in mant else len(mant.lstrip("-"))) + e
            if point <= 0:
                s = "0." + "0" * (-point) + digits
            elif point >= len(digits):
                s = digits + "0" * (point - len(digits)) + ".0"
            else:
                s = digits[:point] + "." + digits[point:]
            return ("-" if neg else "") + s
        if mant.endswith(".0"):
            mant = mant[:-2]
        return "%se%d" % (mant, e)
    if abs(f) >= 1e16:
        # repr's plain digits where ryu writes an exponent
        digits = r.rstrip("0").rstrip(".").lstrip("-")
        if digits.endswith(".0"):
            digits = digits[:-2]
        intpart = r.split(".")[0].lstrip("-")
        exp = len(intpart) - 1
        sig = intpart.rstrip("0")
        mant = sig[0] + ("." + sig[1:] if len(sig) > 1 else "")
        return ("-" if f < 0 else "") + "%se%d" % (mant, exp)
    return r


_ESC = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _str(s: str) -> str:
    out = []
    for ch in s:
        e = _ESC.get(ch)
        if e is not None:
            out.append(e)
        elif ch < " ":
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _scalar(v) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float(v)
    return _str(v)


def dumps(v, indent=None, newline=None, space=None) -> str:
    """serde_json's text of v (compact), or RedisJSON's formatter's with
    INDENT / NEWLINE / SPACE."""
    if indent is None and newline is None and space is None:
        return _compact(v)
    out = []
    _pretty(v, out, indent or "", newline or "", space or "", 0)
    return "".join(out)


def _compact(v) -> str:
    if isinstance(v, dict):
        return "{" + ",".join(_str(k) + ":" + _compact(x) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_compact(x) for x in _printed(v)) + "]"
    return _scalar(v)


def _pretty(v, out, ind, nl, sp, depth):
    if isinstance(v, dict):
        out.append("{")
        first = True
        for k, x in v.items():
            if not first:
                out.append(",")
            first = False
            out.append(nl + ind * (depth + 1))
            out.append(_str(k) + ":" + sp)
            _pretty(x, out, ind, nl, sp, depth + 1)
        if v:
            out.append(nl + ind * depth)
        out.append("}")
    elif isinstance(v, list):
        out.append("[")
        first = True
        for x in _printed(v):
            if not first:
                out.append(",")
            first = False
            out.append(nl + ind * (depth + 1))
            _pretty(x, out, ind, nl, sp, depth + 1)
        if v:
            out.append(nl + ind * depth)
        out.append("]")
    else:
        out.append(_scalar(v))


def type_name(v) -> str:
    """JSON.TYPE's names."""
    if v is None:
        return "null"
    if v is True or v is False:
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


_ITEM_BYTES = {"FP16": 2, "BF16": 2, "FP32": 4, "FP64": 8}


def memory(v) -> int:
    """An estimate of a value's bytes as JSON.DEBUG MEMORY reports them
    (ijson's layout: 8-byte values, strings and containers with headers)."""
    if v is None or v is True or v is False:
        return 0
    if isinstance(v, (int, float)):
        return 0 if isinstance(v, int) and -128 <= v < 128 else 16
    if isinstance(v, str):
        return 16 + len(v.encode("utf-8")) + 8
    if isinstance(v, list):
        if not v:
            return 0
        if v.__class__ is TypedList and v.ftype is not None:
            # ijson keeps a typed array's numbers at their width
            return 16 + _ITEM_BYTES[v.ftype] * len(v)
        return 16 + 8 * len(v) + sum(memory(x) for x in v)
    if not v:
        return 0
    return 16 + 16 * len(v) + sum(memory(x) + memory(k) for k, x in v.items())
