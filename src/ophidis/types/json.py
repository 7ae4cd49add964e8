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
    # encoding version 3 (the document as one JSON string), which Redis 8
    # loads; 2 (text plus an unused flag and strings) and 4 (CBOR) are read.
    MODULE_NAME = "ReJSON-RL"
    MODULE_ENCVER = 3
    MODULE_ENCVERS = (2, 3, 4)

    def __init__(self, v=None):
        self.v = v

    def copy(self):
        """COPY: a deep copy of the document."""
        return JsonValue(deep_copy(self.v))

    def rewrite_commands(self, key):
        """AOF rewrite: the document set whole at the root."""
        yield [b"JSON.SET", key, b"$", dumps(self.v).encode("utf-8")]

    def rdb_save(self, w):
        w.string(dumps(self.v).encode("utf-8"))

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


def deep_copy(v):
    stack = []
    if isinstance(v, dict):
        root = {}
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
        if isinstance(x, dict):
            if d > MAX_DEPTH:
                return False
            stack.extend((y, d + 1) for y in x.values())
        elif isinstance(x, list):
            if d > MAX_DEPTH:
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
        else:
            code = _TYPED.get(n)
            if code is None:
                raise ValueError("unknown tag")
            size = struct.calcsize(code)
            if ln % size:
                raise ValueError("typed array size")
            vals = [struct.unpack_from(code, raw, i)[0] for i in range(0, ln, size)]
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
        return "[" + ",".join(_compact(x) for x in v) + "]"
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
        for x in v:
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
        return 16 + 8 * len(v) + sum(memory(x) for x in v)
    if not v:
        return 0
    return 16 + 16 * len(v) + sum(memory(x) + memory(k) for k, x in v.items())
