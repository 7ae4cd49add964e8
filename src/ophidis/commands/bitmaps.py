"""Bitmap commands (bitops.c semantics): SETBIT GETBIT BITCOUNT BITPOS BITOP
BITFIELD BITFIELD_RO.

Strings are ``bytes`` or ``bytearray``; commands that write bits store a
``bytearray`` (Redis's "raw" encoding).  Counting, searching and combining
bits work on whole buffers through C-level operations (big integers,
regular expressions), never bit by bit in Python.
"""

from __future__ import annotations

import re

from ..cmdtable.registry import command
from ..errors import SYNTAX, RedisError
from ..keyspace import notify
from ..protocol.resp import MINUS_ONE, ONE, ZERO, integer
from ..util import parse_int, parse_keyword, string_range

_OFFSET_ERR = RedisError("ERR bit offset is not an integer or out of range")
_BIT_ERR = RedisError("ERR bit is not an integer or out of range")
_TYPE_ERR = RedisError("ERR Invalid bitfield type. Use something like i16 u8. "
                       "Note that u64 is not supported but i64 is.")
_NONZERO = re.compile(rb"[^\x00]")
_NONFF = re.compile(rb"[^\xff]")

_STRING = notify.STRING
_GENERIC = notify.GENERIC


def _string2ll(b):
    if not b or len(b) > 20:
        return None
    if b == b"0":
        return 0
    s = b[1:] if b[:1] == b"-" else b
    if not s.isdigit() or s[:1] == b"0":
        return None
    v = int(b)
    if v < -(2**63) or v > 2**63 - 1:
        return None
    return v


def bit_offset(c, arg, hash_ok=False, bits=0) -> int:
    """getBitOffsetFromArgument: plain offsets, or #N (N*bits) for BITFIELD."""
    usehash = hash_ok and bits > 0 and arg[:1] == b"#"
    v = _string2ll(arg[1:] if usehash else arg)
    if v is None:
        raise _OFFSET_ERR
    if usehash:
        v *= bits
    if v < 0 or (v >> 3) >= c.server.proto_max_bulk_len:
        raise _OFFSET_ERR
    return v


def _string_for_write(c, key, maxbit):
    """lookupStringForBitCommand: the bytearray holding bit maxbit, created or
    zero-padded as needed.  Returns (buffer, grown)."""
    db = c.db
    need = (maxbit >> 3) + 1
    v = db.lookup_write_typed(key, bytes)
    if v is None:
        buf = bytearray(need)
        db.add(key, buf)
        return buf, True
    if v.__class__ is not bytearray:
        v = bytearray(v)
        db.d[key] = v
    grown = False
    if len(v) < need:
        v.extend(bytes(need - len(v)))
        grown = True
    return v, grown


@command("setbit")
def setbit(c, argv):
    off = bit_offset(c, argv[2])
    on = parse_int(argv[3], _BIT_ERR)
    if on & ~1:
        raise _BIT_ERR
    key = argv[1]
    buf, grown = _string_for_write(c, key, off)
    byte = off >> 3
    mask = 0x80 >> (off & 7)
    old = buf[byte] & mask
    if grown or bool(old) != bool(on):
        if on:
            buf[byte] |= mask
        else:
            buf[byte] &= ~mask & 0xFF
        c.db.signal(key)
        notify.notify(_STRING, b"setbit", key, c.db.id)
        c.server.dirty += 1
    return ONE if old else ZERO


@command("getbit")
def getbit(c, argv):
    off = bit_offset(c, argv[2])
    v = c.db.lookup_read_typed(argv[1], bytes)
    if v is None:
        return ZERO
    byte = off >> 3
    if byte < len(v) and v[byte] & (0x80 >> (off & 7)):
        return ONE
    return ZERO


def _popcount(v, start, end) -> int:
    """Set bits in v[start:end+1] (byte indexes)."""
    if end - start < 64:
        return int.from_bytes(v[start:end + 1], "big").bit_count()
    return int.from_bytes(memoryview(v)[start:end + 1], "big").bit_count()


def _is_bit_unit(arg) -> bool:
    """BITCOUNT/BITPOS's BYTE (False) or BIT (True) range unit."""
    u = arg.upper()
    if u == b"BIT":
        return True
    if u != b"BYTE":
        raise SYNTAX
    return False


@command("bitcount")
def bitcount(c, argv):
    # Redis 7.2: the arguments are checked before the key is looked up (a
    # missing key no longer hides their errors)
    n = len(argv)
    if n != 2:
        if n not in (4, 5):
            raise SYNTAX
        start = parse_int(argv[2])
        end = parse_int(argv[3])
        isbit = n == 5 and _is_bit_unit(argv[4])
    v = c.db.lookup_read_typed(argv[1], bytes)
    if v is None:
        return ZERO
    strlen = len(v)
    if n == 2:
        if not strlen:
            return ZERO
        return integer(_popcount(v, 0, strlen - 1))
    if start < 0 and end < 0 and start > end:
        return ZERO
    start, end = string_range(strlen * 8 if isbit else strlen, start, end)
    if start > end:
        return ZERO
    if not isbit:
        return integer(_popcount(v, start, end))
    sb, eb = start >> 3, end >> 3
    count = _popcount(v, sb, eb)
    # drop the bits of the edge bytes that are outside the range
    head = v[sb] & (~((1 << (8 - (start & 7))) - 1) & 0xFF)
    tail = v[eb] & ((1 << (7 - (end & 7))) - 1)
    return integer(count - bin(head).count("1") - bin(tail).count("1"))


def first_bit(v, sbit, ebit, bit):
    """Position of the first bit equal to `bit` in bits [sbit, ebit] of v, or -1."""
    sb, eb = sbit >> 3, ebit >> 3
    pat = _NONZERO if bit else _NONFF
    i = sb
    while i <= eb:
        m = pat.search(v, i, eb + 1)
        if m is None:
            return -1
        i = m.start()
        byte = v[i] if bit else v[i] ^ 0xFF
        lo = (sbit & 7) if i == sb else 0
        hi = (ebit & 7) if i == eb else 7
        byte &= (0xFF >> lo) & (0xFF << (7 - hi)) & 0xFF
        if byte:
            return i * 8 + 8 - byte.bit_length()
        i += 1
    return -1


@command("bitpos")
def bitpos(c, argv):
    bit = parse_int(argv[2])
    if bit != 0 and bit != 1:
        raise RedisError("ERR The bit argument must be 1 or 0.")
    # Redis 7.2: the arguments are checked before the key is looked up
    n = len(argv)
    end_given = False
    isbit = False
    if n in (4, 5, 6):
        start = parse_int(argv[3])
        isbit = n == 6 and _is_bit_unit(argv[5])
        if n >= 5:
            end = parse_int(argv[4])
            end_given = True
    elif n != 3:
        raise SYNTAX
    v = c.db.lookup_read_typed(argv[1], bytes)
    if v is None:
        return MINUS_ONE if bit else ZERO
    strlen = len(v)
    if n >= 4:
        if not end_given:
            end = strlen - 1
        start, end = string_range(strlen * 8 if isbit else strlen, start, end)
    else:
        start, end = 0, strlen - 1
    if start > end:
        return MINUS_ONE
    if isbit:
        sbit, ebit = start, end
    else:
        sbit, ebit = start * 8, end * 8 + 7
    pos = first_bit(v, sbit, ebit, bit)
    if pos == -1 and bit == 0:
        # no clear bit in range: past the end unless the range was explicit
        if end_given:
            return MINUS_ONE
        return integer(ebit + 1)
    return integer(pos) if pos >= 0 else MINUS_ONE


_BITOPS = (b"and", b"or", b"xor", b"not", b"diff", b"diff1", b"andor", b"one")


@command("bitop")
def bitop(c, argv):
    op = argv[1].lower()
    if op not in _BITOPS:
        raise SYNTAX
    if op == b"not" and len(argv) != 4:
        raise RedisError("ERR BITOP NOT must be called with a single source key.")
    if op in (b"diff", b"diff1", b"andor") and len(argv) < 5:
        # Redis 8.2: X and at least one Y
        raise RedisError("ERR BITOP %s must be called with at least two source keys." % op.upper().decode())
    db = c.db
    srcs = []
    for key in argv[3:]:
        v = db.lookup_read_typed(key, bytes)
        if v is None:
            srcs.append(b"")
            continue
        srcs.append(v)
    maxlen = max(len(s) for s in srcs)
    target = argv[2]
    if not maxlen:
        if db.server_delete(target):
            notify.notify(_GENERIC, b"del", target, db.id)
            c.server.dirty += 1
        return ZERO
    nbits = maxlen * 8

    def val(s):
        # right-pad with zero bytes to maxlen
        return int.from_bytes(s, "big") << ((maxlen - len(s)) * 8)

    if op == b"not":
        res = val(srcs[0]) ^ ((1 << nbits) - 1)
    else:
        res = val(srcs[0])
        if op == b"and":
            for s in srcs[1:]:
                if not res:
                    break
                res &= val(s) if len(s) else 0
        elif op == b"or":
            for s in srcs[1:]:
                res |= val(s)
        elif op == b"xor":
            for s in srcs[1:]:
                res ^= val(s)
        else:
            # Redis 8.2's operations on X (the first key) and the others
            ys = 0
            for s in srcs[1:]:
                ys |= val(s)
            mask = (1 << nbits) - 1
            if op == b"diff":           # in X but in none of the others
                res &= ys ^ mask
            elif op == b"diff1":        # in one of the others but not in X
                res = (res ^ mask) & ys
            elif op == b"andor":        # in X and in at least one of the others
                res &= ys
            else:                       # one: in exactly one of all the keys
                once = twice = 0
                for s in srcs:
                    v = val(s)
                    twice |= once & v
                    once |= v
                res = once & (twice ^ mask)
    out = bytearray(res.to_bytes(maxlen, "big"))
    db.set_key(target, out)
    notify.notify(_STRING, b"set", target, db.id)
    c.server.dirty += 1
    return integer(maxlen)


# -- BITFIELD -------------------------------------------------------------------------------------

_GET, _SET, _INCRBY = 0, 1, 2
_WRAP, _SAT, _FAIL = 0, 1, 2
_OVERFLOW_TYPES = {b"wrap": _WRAP, b"sat": _SAT, b"fail": _FAIL}
_OVERFLOW_ERR = RedisError("ERR Invalid OVERFLOW type specified")


def _bf_type(arg):
    s = arg[:1]
    if s == b"i":
        signed = True
    elif s == b"u":
        signed = False
    else:
        raise _TYPE_ERR
    bits = _string2ll(arg[1:])
    if bits is None or bits < 1 or (signed and bits > 64) or (not signed and bits > 63):
        raise _TYPE_ERR
    return signed, bits


def bf_get(buf, off, bits, signed) -> int:
    sb = off >> 3
    eb = (off + bits - 1) >> 3
    nbytes = eb - sb + 1
    chunk = buf[sb:eb + 1]
    n = int.from_bytes(chunk, "big") << ((nbytes - len(chunk)) * 8)
    shift = nbytes * 8 - (off - sb * 8) - bits
    val = (n >> shift) & ((1 << bits) - 1)
    if signed and val >> (bits - 1):
        val -= 1 << bits
    return val


def bf_set(buf, off, bits, value):
    sb = off >> 3
    eb = (off + bits - 1) >> 3
    nbytes = eb - sb + 1
    n = int.from_bytes(buf[sb:eb + 1], "big")
    shift = nbytes * 8 - (off - sb * 8) - bits
    mask = ((1 << bits) - 1) << shift
    n = (n & ~mask) | ((value << shift) & mask)
    buf[sb:eb + 1] = n.to_bytes(nbytes, "big")


def _s64(x):
    x &= 0xFFFFFFFFFFFFFFFF
    return x - (1 << 64) if x >> 63 else x


def _overflow(value, incr, bits, signed, owtype):
    """checkSigned/UnsignedBitfieldOverflow, including the 64-bit wraparound
    of their intermediate values (a SET of a huge negative value to a signed
    field saturates high, as in Redis).
    Returns (overflowed, value to store or None for FAIL)."""
    if signed:
        hi = (1 << 63) - 1 if bits == 64 else (1 << (bits - 1)) - 1
        lo = -hi - 1
        maxincr = _s64(hi - value)
        minincr = _s64(lo - value)
        if value > hi or (bits != 64 and incr > maxincr) or (value >= 0 and incr > 0 and incr > maxincr):
            limit = hi
        elif value < lo or (bits != 64 and incr < minincr) or (value < 0 and incr < 0 and incr < minincr):
            limit = lo
        else:
            return False, value + incr
        if owtype == _WRAP:
            w = (value + incr) & ((1 << bits) - 1)
            if w >> (bits - 1):
                w -= 1 << bits
            return True, w
    else:
        hi = (1 << bits) - 1
        maxincr = _s64(hi - value)
        minincr = _s64(-value)
        if value > hi or (incr > 0 and incr > maxincr):
            limit = hi
        elif incr < 0 and incr < minincr:
            limit = 0
        else:
            return False, (value + incr) & 0xFFFFFFFFFFFFFFFF
        if owtype == _WRAP:
            return True, (value + incr) & hi
    if owtype == _SAT:
        return True, limit
    return True, None


def _bitfield(c, argv, readonly_cmd):
    ops = []
    owtype = _WRAP
    readonly = True
    highest = 0
    n = len(argv)
    j = 2
    while j < n:
        rem = n - j - 1
        sub = argv[j].lower()
        if sub == b"get" and rem >= 2:
            opcode = _GET
        elif sub == b"set" and rem >= 3:
            opcode = _SET
        elif sub == b"incrby" and rem >= 3:
            opcode = _INCRBY
        elif sub == b"overflow" and rem >= 1:
            owtype = parse_keyword(argv[j + 1], _OVERFLOW_TYPES, _OVERFLOW_ERR)
            j += 2
            continue
        else:
            raise SYNTAX
        signed, bits = _bf_type(argv[j + 1])
        off = bit_offset(c, argv[j + 2], True, bits)
        i64 = 0
        if opcode != _GET:
            readonly = False
            if highest < off + bits - 1:
                highest = off + bits - 1
            i64 = parse_int(argv[j + 3])
        ops.append((opcode, off, bits, signed, i64, owtype))
        j += 4 if opcode != _GET else 3
    key = argv[1]
    db = c.db
    if readonly:
        buf = db.lookup_read_typed(key, bytes)
        grown = False
    else:
        if readonly_cmd:
            raise RedisError("ERR BITFIELD_RO only supports the GET subcommand")
        buf, grown = _string_for_write(c, key, highest)
    out = [b"*%d\r\n" % len(ops)]
    changes = 0
    for opcode, off, bits, signed, i64, ow in ops:
        if opcode == _GET:
            out.append(integer(bf_get(buf, off, bits, signed) if buf is not None else 0))
            continue
        old = bf_get(buf, off, bits, signed)
        if opcode == _INCRBY:
            over, new = _overflow(old, i64, bits, signed, ow)
            ret = new
        else:
            value = i64 if signed else i64 & 0xFFFFFFFFFFFFFFFF
            over, new = _overflow(value, 0, bits, signed, ow)
            ret = old
        if over and ow == _FAIL:
            out.append(c.null)
            continue
        out.append(integer(ret))
        bf_set(buf, off, bits, new & ((1 << bits) - 1))
        if grown or old != new:
            changes += 1
    if changes:
        db.signal(key)
        notify.notify(_STRING, b"setbit", key, db.id)
        c.server.dirty += changes
    return b"".join(out)


@command("bitfield")
def bitfield(c, argv):
    return _bitfield(c, argv, False)


@command("bitfield_ro")
def bitfield_ro(c, argv):
    return _bitfield(c, argv, True)
