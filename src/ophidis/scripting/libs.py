"""The Lua libraries Redis bundles (bit, cjson, cmsgpack, struct), in Python.

lupa's Lua does not ship them.  Each function follows the behaviour of the
C library Redis uses for the common calls.  Exposed functions return
``(True, values...)`` or ``(False, message)``; the sandbox wraps them so a
failure raises a Lua error at the caller's line (as luaL_error does).
"""

from __future__ import annotations

import json
import math
import struct as _struct
import sys

import lupa.lua51 as _lupa

_lua_type = _lupa.lua_type


def _typename(v) -> str:
    if v is None:
        return "nil"
    if v.__class__ is bool:
        return "boolean"
    if v.__class__ in (int, float):
        return "number"
    if v.__class__ is bytes:
        return "string"
    return _lua_type(v) or "userdata"


def _num(v, i, fname):
    """luaL_checknumber: numbers and numeric strings."""
    t = v.__class__
    if t is int or t is float:
        return v
    if t is bytes:
        try:
            s = v.strip()
            if s[:2].lower() in (b"0x", b"-0x"):
                return int(s, 16)
            return float(s)
        except ValueError:
            pass
    raise _ArgError("bad argument #%d to '%s' (number expected, got %s)" % (
        i, fname, "no value" if v is _NOVALUE else _typename(v)))


class _ArgError(Exception):
    pass


_NOVALUE = object()


def _guard(fn):
    def wrapper(*args):
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001
            raise _lupa.LuaError(str(e).encode())
    return wrapper


# -- bit (LuaBitOp) -----------------------------------------------------------------------

def _tobit(x) -> int:
    if x.__class__ is float:
        if x != x or x in (math.inf, -math.inf):
            return 0
        x = round(x)   # round half to even, as the FPU
    x &= 0xFFFFFFFF
    return x - 0x100000000 if x & 0x80000000 else x


def make_bit(lua):
    def arg(a, i, name):
        return _tobit(_num(a[i] if i < len(a) else _NOVALUE, i + 1, name))

    def tobit(*a):
        return arg(a, 0, "tobit")

    def bnot(*a):
        return _tobit(~arg(a, 0, "bnot"))

    def mk(name, op):
        def f(*a):
            r = arg(a, 0, name)
            for i in range(1, max(len(a), 1)):
                r = op(r, arg(a, i, name))
            return _tobit(r)
        return f

    def shift(name, fn):
        def f(*a):
            x = arg(a, 0, name) & 0xFFFFFFFF
            n = arg(a, 1, name) & 31
            return _tobit(fn(x, n))
        return f

    def arshift(*a):
        x = arg(a, 0, "arshift")
        n = arg(a, 1, "arshift") & 31
        return _tobit(x >> n)

    def rol(*a):
        x = arg(a, 0, "rol") & 0xFFFFFFFF
        n = arg(a, 1, "rol") & 31
        return _tobit((x << n) | (x >> (32 - n)) if n else x)

    def ror(*a):
        x = arg(a, 0, "ror") & 0xFFFFFFFF
        n = arg(a, 1, "ror") & 31
        return _tobit((x >> n) | (x << (32 - n)) if n else x)

    def bswap(*a):
        x = arg(a, 0, "bswap") & 0xFFFFFFFF
        return _tobit(int.from_bytes(x.to_bytes(4, "little"), "big"))

    def tohex(*a):
        x = arg(a, 0, "tohex")
        n = arg(a, 1, "tohex") if len(a) > 1 and a[1] is not None else 8
        upper = n < 0
        if upper:
            n = -n
        if n > 8:
            n = 8
        s = "%08x" % (x & 0xFFFFFFFF)
        s = s[8 - n:] if n else ""
        return (s.upper() if upper else s).encode()

    funcs = {
        b"tobit": tobit, b"bnot": bnot,
        b"band": mk("band", lambda x, y: x & y),
        b"bor": mk("bor", lambda x, y: x | y),
        b"bxor": mk("bxor", lambda x, y: x ^ y),
        b"lshift": shift("lshift", lambda x, n: x << n),
        b"rshift": shift("rshift", lambda x, n: x >> n),
        b"arshift": arshift, b"rol": rol, b"ror": ror, b"bswap": bswap, b"tohex": tohex,
    }
    return lua.table_from({k: _guard(v) for k, v in funcs.items()})


# -- cjson ---------------------------------------------------------------------------------

def _fmt14(n) -> bytes:
    if n.__class__ is int and -10**14 < n < 10**14:
        return b"%d" % n
    return (b"%.14g" % n)


_ESC = {0x22: b'\\"', 0x5C: b"\\\\", 0x2F: b"\\/", 0x08: b"\\b", 0x0C: b"\\f",
        0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t"}


def _json_str(s: bytes) -> bytes:
    out = bytearray(b'"')
    for ch in s:
        e = _ESC.get(ch)
        if e is not None:
            out += e
        elif ch < 0x20 or ch == 0x7F:
            out += b"\\u%04x" % ch
        else:
            out.append(ch)
    out += b'"'
    return bytes(out)


class _deep_recursion:
    """Room for lua-cjson's nesting limit (1000 by default) on the Python stack."""

    def __enter__(self):
        self.old = sys.getrecursionlimit()
        if self.old < 10000:
            sys.setrecursionlimit(10000)

    def __exit__(self, *exc):
        sys.setrecursionlimit(self.old)


def _check_nesting(s: bytes, limit: int):
    """lua-cjson's decode depth limit: the error names the opening bracket."""
    depth = 0
    in_str = False
    esc = False
    for i, ch in enumerate(s):
        if in_str:
            if esc:
                esc = False
            elif ch == 92:
                esc = True
            elif ch == 34:
                in_str = False
        elif ch == 34:
            in_str = True
        elif ch == 91 or ch == 123:
            depth += 1
            if depth > limit:
                raise ValueError("Found too many nested data structures (%d) at character %d"
                                 % (depth, i + 1))
        elif ch == 93 or ch == 125:
            depth -= 1


def make_cjson(lua):
    null = lua.eval("newproxy()")
    rawequal = lua.eval("rawequal")

    def is_null(v):
        return _lua_type(v) == "userdata" and rawequal(v, null)

    # encode_max_depth / decode_max_depth (per Lua VM, as in lua-cjson).
    cfg = {"enc": 1000, "dec": 1000, "invalid": False}

    def enc(v, depth, out):
        t = v.__class__
        if v is None:
            out.append(b"null")
        elif t is bool:
            out.append(b"true" if v else b"false")
        elif t is int or t is float:
            if t is float and (v != v or v in (math.inf, -math.inf)):
                mode = cfg["invalid"]
                if mode is False:
                    raise ValueError("Cannot serialise number: must not be NaN or Inf")
                if mode == b"null":
                    out.append(b"null")
                else:
                    out.append(b"nan" if v != v else (b"inf" if v > 0 else b"-inf"))
                return
            out.append(_fmt14(v))
        elif t is bytes:
            out.append(_json_str(v))
        else:
            lt = _lua_type(v)
            if lt == "table":
                if depth > cfg["enc"]:
                    raise ValueError("Cannot serialise, excessive nesting (%d)" % depth)
                items = list(v.items())
                maxk = 0
                is_array = True
                for k, _ in items:
                    if (k.__class__ is int or (k.__class__ is float and k == int(k))) and k >= 1:
                        if k > maxk:
                            maxk = int(k)
                    else:
                        is_array = False
                        break
                if is_array and maxk > 0:
                    if maxk > len(items) * 2 and maxk > 10:
                        raise ValueError("Cannot serialise table: excessively sparse array")
                    d = dict(items)
                    out.append(b"[")
                    for i in range(1, maxk + 1):
                        if i > 1:
                            out.append(b",")
                        enc(d.get(i), depth + 1, out)
                    out.append(b"]")
                else:
                    out.append(b"{")
                    first = True
                    for k, x in items:
                        if not first:
                            out.append(b",")
                        first = False
                        if k.__class__ is bytes:
                            out.append(_json_str(k))
                        elif k.__class__ in (int, float):
                            out.append(b'"' + _fmt14(k) + b'"')
                        else:
                            raise ValueError("Cannot serialise %s: table key must be a number or string"
                                             % _typename(k))
                        out.append(b":")
                        enc(x, depth + 1, out)
                    out.append(b"}")
            elif is_null(v):
                out.append(b"null")
            else:
                raise ValueError("Cannot serialise %s: type not supported" % (lt or "userdata"))

    def encode(*a):
        if len(a) != 1:
            raise _ArgError("bad argument #1 to 'encode' (expected 1 argument)")
        out = []
        with _deep_recursion():
            enc(a[0], 1, out)
        return b"".join(out)

    def to_lua(v, depth=0):
        if v is None:
            return null
        if isinstance(v, bool):
            return v
        if isinstance(v, (int, float)):
            return v
        if isinstance(v, str):
            return v.encode("utf-8", "surrogateescape")
        if isinstance(v, list):
            return lua.table_from([to_lua(x, depth + 1) for x in v])
        t = lua.table()
        for k, x in v.items():
            t[k.encode("utf-8", "surrogateescape")] = to_lua(x, depth + 1)
        return t

    def decode(*a):
        if len(a) != 1:
            raise _ArgError("bad argument #1 to 'decode' (expected 1 argument)")
        s = a[0]
        if s.__class__ in (int, float):
            s = _fmt14(s)
        if s.__class__ is not bytes:
            raise _ArgError("bad argument #1 to 'decode' (string expected, got %s)" % _typename(s))
        if s.count(b"[") + s.count(b"{") > cfg["dec"]:
            _check_nesting(s, cfg["dec"])
        try:
            with _deep_recursion():
                v = json.loads(s.decode("utf-8", "surrogateescape"),
                               parse_constant=lambda c: float(c.replace("Infinity", "inf")))
        except json.JSONDecodeError as e:
            raise ValueError("Expected value but found invalid token at character %d" % (e.pos + 1))
        except RecursionError:
            raise ValueError("Found too many nested data structures (1001)")
        with _deep_recursion():
            return to_lua(v)

    def noop(*a):
        return a[0] if a else None

    def invalid_numbers(*a):
        """encode_invalid_numbers([true|false|"null"]): NaN/Inf encoded as
        nan/inf, null, or refused (the default)."""
        if a and a[0] is not None:
            v = a[0]
            if v is True or v == b"on":
                cfg["invalid"] = True
            elif v is False or v == b"off":
                cfg["invalid"] = False
            elif v == b"null":
                cfg["invalid"] = b"null"
            else:
                raise _ArgError("bad argument #1 to 'encode_invalid_numbers' (invalid option '%s')"
                                % (v.decode("latin-1") if v.__class__ is bytes else v))
        cur = cfg["invalid"]
        return cur if cur.__class__ is bytes else cur

    def depth_setting(name, fname):
        def f(*a):
            if a and a[0] is not None:
                d = a[0]
                if d.__class__ is bytes:
                    try:
                        d = float(d)
                    except ValueError:
                        d = None
                if d.__class__ not in (int, float) or not 1 <= d <= 0x7FFFFFFF:
                    raise _ArgError("bad argument #1 to '%s' (expected integer between 1 and 2147483647)"
                                    % fname)
                cfg[name] = int(d)
            return cfg[name]
        return f

    t = lua.table_from({k: _guard(v) for k, v in {
        b"encode": encode, b"decode": decode,
        b"encode_keep_buffer": noop, b"encode_max_depth": depth_setting("enc", "encode_max_depth"),
        b"decode_max_depth": depth_setting("dec", "decode_max_depth"),
        b"encode_number_precision": noop, b"encode_sparse_array": noop,
        b"encode_invalid_numbers": invalid_numbers, b"decode_invalid_numbers": noop,
    }.items()})
    t[b"null"] = null
    t[b"_NAME"] = b"cjson"
    t[b"_VERSION"] = b"2.1.0"
    return t


# -- cmsgpack ------------------------------------------------------------------------------

def _mp_header(out, n, fix, b16, b32):
    # a MessagePack array's or map's header: fixarray/fixmap, 16 or 32 bits
    if n < 16:
        out.append(fix | n)
    elif n < 65536:
        out += b16 + _struct.pack(">H", n)
    else:
        out += b32 + _struct.pack(">I", n)


def make_cmsgpack(lua):
    def is_array(items):
        n = len(items)
        mx = 0
        for k, _ in items:
            if k.__class__ is not int or k < 1:
                if k.__class__ is float and k == int(k) and k >= 1:
                    k = int(k)
                else:
                    return False
            if k > mx:
                mx = k
        return mx == n

    def enc(v, out, level):
        t = v.__class__
        if v is None:
            out += b"\xc0"
        elif t is bool:
            out += b"\xc3" if v else b"\xc2"
        elif t is int or (t is float and v == v and v not in (math.inf, -math.inf)
                          and v == int(v) and -2**63 <= v < 2**64):
            n = int(v)
            if n >= 0:
                if n < 128:
                    out.append(n)
                elif n < 256:
                    out += b"\xcc" + _struct.pack(">B", n)
                elif n < 65536:
                    out += b"\xcd" + _struct.pack(">H", n)
                elif n < 2**32:
                    out += b"\xce" + _struct.pack(">I", n)
                else:
                    out += b"\xcf" + _struct.pack(">Q", n)
            else:
                if n >= -32:
                    out += _struct.pack(">b", n)
                elif n >= -128:
                    out += b"\xd0" + _struct.pack(">b", n)
                elif n >= -32768:
                    out += b"\xd1" + _struct.pack(">h", n)
                elif n >= -2**31:
                    out += b"\xd2" + _struct.pack(">i", n)
                else:
                    out += b"\xd3" + _struct.pack(">q", n)
        elif t is float:
            f32 = _struct.unpack(">f", _struct.pack(">f", v))[0] if abs(v) < 3.5e38 or v != v else None
            if f32 is not None and (f32 == v or (v != v)):
                out += b"\xca" + _struct.pack(">f", v)
            else:
                out += b"\xcb" + _struct.pack(">d", v)
        elif t is bytes:
            n = len(v)
            if n < 32:
                out.append(0xA0 | n)
            elif n < 256:
                out += b"\xd9" + _struct.pack(">B", n)
            elif n < 65536:
                out += b"\xda" + _struct.pack(">H", n)
            else:
                out += b"\xdb" + _struct.pack(">I", n)
            out += v
        elif _lua_type(v) == "table" and level < 16:
            items = list(v.items())
            n = len(items)
            if is_array(items):
                _mp_header(out, n, 0x90, b"\xdc", b"\xdd")
                d = dict(items)
                for i in range(1, n + 1):
                    enc(d.get(i), out, level + 1)
            else:
                _mp_header(out, n, 0x80, b"\xde", b"\xdf")
                for k, x in items:
                    enc(k, out, level + 1)
                    enc(x, out, level + 1)
        else:
            out += b"\xc0"

    def pack(*a):
        if not a:
            raise _ArgError("MessagePack pack needs input.")
        out = bytearray()
        for v in a:
            enc(v, out, 0)
        return bytes(out)

    class _Missing(Exception):
        pass

    def dec(s, p):
        if p >= len(s):
            raise _Missing()
        b = s[p]
        p += 1

        def take(n):
            nonlocal p
            if p + n > len(s):
                raise _Missing()
            r = s[p:p + n]
            p += n
            return r
        if b < 0x80:
            return b, p
        if b >= 0xE0:
            return b - 256, p
        if 0xA0 <= b <= 0xBF:
            return take(b & 0x1F), p
        if 0x90 <= b <= 0x9F:
            return dec_array(s, p, b & 0x0F)
        if 0x80 <= b <= 0x8F:
            return dec_map(s, p, b & 0x0F)
        if b == 0xC0:
            return None, p
        if b == 0xC2:
            return False, p
        if b == 0xC3:
            return True, p
        fixed = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h",
                 0xD2: ">i", 0xD3: ">q", 0xCA: ">f", 0xCB: ">d"}
        if b in fixed:
            f = fixed[b]
            v = _struct.unpack(f, take(_struct.calcsize(f)))[0]
            return v, p
        if b in (0xD9, 0xC4):
            n = take(1)[0]
            return take(n), p
        if b in (0xDA, 0xC5):
            n = _struct.unpack(">H", take(2))[0]
            return take(n), p
        if b in (0xDB, 0xC6):
            n = _struct.unpack(">I", take(4))[0]
            return take(n), p
        if b == 0xDC:
            return dec_array(s, p + 2, _struct.unpack(">H", take(2))[0])
        if b == 0xDD:
            return dec_array(s, p + 4, _struct.unpack(">I", take(4))[0])
        if b == 0xDE:
            return dec_map(s, p + 2, _struct.unpack(">H", take(2))[0])
        if b == 0xDF:
            return dec_map(s, p + 4, _struct.unpack(">I", take(4))[0])
        raise ValueError("Bad data format in input.")

    def dec_array(s, p, n):
        items = []
        for _ in range(n):
            v, p = dec(s, p)
            items.append(v)
        return lua.table_from(items), p

    def dec_map(s, p, n):
        t = lua.table()
        for _ in range(n):
            k, p = dec(s, p)
            v, p = dec(s, p)
            if k is not None:
                t[k] = v
        return t, p

    def unpack_full(s, limit, offset):
        if s.__class__ is not bytes:
            raise _ArgError("MessagePack unpack needs input.")
        out = []
        p = offset
        try:
            while p < len(s) and (limit <= 0 or len(out) < limit):
                v, p = dec(s, p)
                out.append(v)
        except _Missing:
            raise ValueError("Missing bytes in input.")
        return p, out

    def unpack(*a):
        if not a:
            raise _ArgError("MessagePack unpack needs input.")
        _, out = unpack_full(a[0], 0, 0)
        return tuple(out)

    def unpack_one(*a):
        off = int(a[1]) if len(a) > 1 and a[1] is not None else 0
        p, out = unpack_full(a[0], 1, off)
        return (p if p < len(a[0]) else -1,) + tuple(out)

    def unpack_limit(*a):
        lim = int(a[1]) if len(a) > 1 and a[1] is not None else 0
        off = int(a[2]) if len(a) > 2 and a[2] is not None else 0
        p, out = unpack_full(a[0], lim, off)
        return (p if p < len(a[0]) else -1,) + tuple(out)

    t = lua.table_from({k: _guard(v) for k, v in {
        b"pack": pack, b"unpack": unpack, b"unpack_one": unpack_one, b"unpack_limit": unpack_limit,
    }.items()})
    t[b"_NAME"] = b"lua-cmsgpack"
    t[b"_VERSION"] = b"lua-cmsgpack 0.4.0"
    t[b"_COPYRIGHT"] = b"Copyright (C) 2012, Salvatore Sanfilippo"
    t[b"_DESCRIPTION"] = b"MessagePack C implementation for Lua"
    return t


# -- struct ----------------------------------------------------------------------------------

def _parse_fmt(fmt: bytes):
    """Yields (option, size, little_endian) items of a struct format."""
    little = True
    i = 0
    n = len(fmt)
    while i < n:
        ch = chr(fmt[i])
        i += 1
        num = None
        j = i
        while j < n and 48 <= fmt[j] <= 57:
            j += 1
        if j > i:
            num = int(fmt[i:j])
            i = j
        if ch in " ":
            continue
        if ch == ">":
            little = False
            continue
        if ch in "<=":
            little = True
            continue
        if ch == "!":
            continue
        if ch in "bB":
            yield ch, 1, little
        elif ch in "hH":
            yield ch, 2, little
        elif ch in "lLT":
            yield ch, 8, little
        elif ch in "iI":
            size = num if num is not None else 4
            if size > 32:           # lua_struct.c's MAXINTSIZE
                raise ValueError("integral size %d is larger than limit of 32" % size)
            yield ch, size, little
        elif ch == "f":
            yield ch, 4, little
        elif ch == "d":
            yield ch, 8, little
        elif ch == "x":
            yield ch, 1, little
        elif ch == "c":
            yield ch, num if num is not None else 1, little
        elif ch == "s":
            yield ch, 0, little
        else:
            raise ValueError("invalid format option '%s'" % ch)


_U64 = (1 << 64) - 1


def _wide_int(chunk, little, signed):
    """lua_struct.c's getinteger for sizes past 8 bytes: a 64-bit
    accumulator keeps the last 8 bytes shifted in; the sign mask is shifted
    by (size * 8 - 1) mod 64, as the x86 shift instruction does."""
    v = int.from_bytes(chunk, "little" if little else "big") & _U64
    if not signed:
        return v
    mask = (_U64 << ((len(chunk) * 8 - 1) & 63)) & _U64
    if v & mask:
        v |= mask
    return v - (1 << 64) if v >> 63 else v


def make_struct(lua):
    def pack(*a):
        if not a or a[0].__class__ is not bytes:
            raise _ArgError("bad argument #1 to 'pack' (string expected, got %s)" % (
                "no value" if not a else _typename(a[0])))
        out = bytearray()
        arg = 1
        for ch, size, little in _parse_fmt(a[0]):
            if ch == "x":
                out.append(0)
                continue
            v = a[arg] if arg < len(a) else _NOVALUE
            if ch in "bBhHlLTiI":
                n = _num(v, arg + 1, "pack")
                # a 64-bit value: the bytes of a wider integer past 8 are 0
                n = int(n) & _U64
                if size < 8:
                    n &= (1 << (8 * size)) - 1
                out += n.to_bytes(size, "little" if little else "big")
            elif ch in "fd":
                n = float(_num(v, arg + 1, "pack"))
                out += _struct.pack(("<" if little else ">") + ch, n)
            elif ch in "cs":
                if v.__class__ in (int, float):
                    v = _fmt14(v)
                if v.__class__ is not bytes:
                    raise _ArgError("bad argument #%d to 'pack' (string expected, got %s)" % (
                        arg + 1, "no value" if v is _NOVALUE else _typename(v)))
                if ch == "s":
                    out += v + b"\0"
                else:
                    if size == 0:
                        size = len(v)
                    if len(v) < size:
                        raise _ArgError("bad argument #%d to 'pack' (string too short)" % (arg + 1))
                    out += v[:size]
            arg += 1
        return bytes(out)

    def unpack(*a):
        if len(a) < 2 or a[0].__class__ is not bytes or a[1].__class__ is not bytes:
            raise _ArgError("bad argument #%d to 'unpack' (string expected, got %s)" % (
                1 if not a or a[0].__class__ is not bytes else 2,
                "no value" if len(a) < 2 else _typename(a[1])))
        data = a[1]
        pos = int(a[2]) - 1 if len(a) > 2 and a[2] is not None else 0
        res = []
        for ch, size, little in _parse_fmt(a[0]):
            if ch == "s":
                e = data.find(b"\0", pos)
                if e < 0:
                    raise ValueError("unfinished string in data")
                res.append(data[pos:e])
                pos = e + 1
                continue
            if ch == "c" and size == 0:
                if not res or res[-1].__class__ not in (int, float):
                    raise ValueError("format 'c0' needs a previous size")
                size = int(res.pop())
            if pos + size > len(data):
                raise _ArgError("bad argument #2 to 'unpack' (data string too short)")
            chunk = data[pos:pos + size]
            pos += size
            if ch == "x":
                continue
            if ch in "bBhHlLTiI":
                signed = ch in "bhli"
                if size <= 8:
                    res.append(int.from_bytes(chunk, "little" if little else "big", signed=signed))
                else:
                    res.append(_wide_int(chunk, little, signed))
            elif ch in "fd":
                res.append(_struct.unpack(("<" if little else ">") + ch, chunk)[0])
            elif ch == "c":
                res.append(chunk)
        res.append(pos + 1)
        return tuple(res)

    def size(*a):
        if not a or a[0].__class__ is not bytes:
            raise _ArgError("bad argument #1 to 'size' (string expected, got %s)" % (
                "no value" if not a else _typename(a[0])))
        total = 0
        for ch, sz, _ in _parse_fmt(a[0]):
            if ch == "s" or (ch == "c" and sz == 0):
                raise ValueError("options 'c0' - 's' have undefined sizes")
            total += sz
        return total

    return lua.table_from({k: _guard(v) for k, v in {
        b"pack": pack, b"unpack": unpack, b"size": size}.items()})
