"""RESP2/RESP3 reply encoding and request parsing helpers.

Pure functions over bytes: no I/O happens here.  The fast path of request
parsing is hiredis (see client.py); this module provides what hiredis does not:
inline commands (``sdssplitargs`` rules), Redis's own validation of multibulk
headers (so protocol errors get Redis's exact texts), and reply encoders.
"""

from __future__ import annotations

from .. import compiled
from ..dtoa import d2string

# the compiled twin (protocol/_resp.pyx), picked here
_c = compiled.load("protocol._resp")

# ---------------------------------------------------------------------------
# Shared replies
# ---------------------------------------------------------------------------
OK = b"+OK\r\n"
PONG = b"+PONG\r\n"
QUEUED = b"+QUEUED\r\n"
NULL_BULK = b"$-1\r\n"
NULL_ARRAY = b"*-1\r\n"
NULL3 = b"_\r\n"
EMPTY_ARRAY = b"*0\r\n"
EMPTY_BULK = b"$0\r\n\r\n"
CRLF = b"\r\n"

_INT_CACHE = [b":%d\r\n" % i for i in range(10001)]
_BULK_HDR = [b"$%d\r\n" % i for i in range(1025)]
_ARR_HDR = [b"*%d\r\n" % i for i in range(1025)]
ZERO = _INT_CACHE[0]
ONE = _INT_CACHE[1]
MINUS_ONE = b":-1\r\n"
MINUS_TWO = b":-2\r\n"


def integer(n: int) -> bytes:
    if 0 <= n <= 10000:
        return _INT_CACHE[n]
    return b":%d\r\n" % n


def bulk(b: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(b), b)


def bulk_or_null(b) -> bytes:
    if b is None:
        return NULL_BULK
    return b"$%d\r\n%s\r\n" % (len(b), b)


def array_header(n: int) -> bytes:
    if n < 1025:
        return _ARR_HDR[n]
    return b"*%d\r\n" % n


def bulk_array(items) -> bytes:
    """Array of bulk strings; items are bytes (None gives a null bulk)."""
    parts = [b"*%d\r\n" % len(items)]
    ap = parts.append
    for b in items:
        if b is None:
            ap(NULL_BULK)
        else:
            ap(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(parts)


def raw_array(encoded) -> bytes:
    """Array of already-encoded replies."""
    return b"*%d\r\n" % len(encoded) + b"".join(encoded)


def simple(s: bytes) -> bytes:
    return b"+%s\r\n" % s


def help_reply(name: bytes, text: bytes) -> bytes:
    """addReplyHelp: a container command's HELP reply, its header, the lines
    of ``text`` (each subcommand, then its indented description) and HELP's
    own, as status replies."""
    lines = [b"%s <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" % name]
    lines += text.splitlines()
    lines += (b"HELP", b"    Print this help.")
    return b"*%d\r\n" % len(lines) + b"".join([b"+%s\r\n" % x for x in lines])


def error(msg: bytes) -> bytes:
    return b"-%s\r\n" % msg


def verbatim(resp: int, text: bytes, fmt: bytes = b"txt") -> bytes:
    if resp >= 3:
        return b"=%d\r\n%s:%s\r\n" % (len(text) + 4, fmt, text)
    return b"$%d\r\n%s\r\n" % (len(text), text)


def map_header(resp: int, n: int) -> bytes:
    """Header of a map of n pairs (RESP2: flat array of 2n)."""
    if resp >= 3:
        return b"%%%d\r\n" % n
    return b"*%d\r\n" % (2 * n)


def set_header(resp: int, n: int) -> bytes:
    if resp >= 3:
        return b"~%d\r\n" % n
    return b"*%d\r\n" % n


def push_header(resp: int, n: int) -> bytes:
    if resp >= 3:
        return b">%d\r\n" % n
    return b"*%d\r\n" % n


def null(resp: int) -> bytes:
    return NULL3 if resp >= 3 else NULL_BULK


def null_array(resp: int) -> bytes:
    return NULL3 if resp >= 3 else NULL_ARRAY


def boolean(resp: int, v: bool) -> bytes:
    if resp >= 3:
        return b"#t\r\n" if v else b"#f\r\n"
    return ONE if v else ZERO


def format_double(d: float) -> bytes:
    """A double in a reply (addReplyDouble): Redis 7.2+'s d2string."""
    return d2string(d)


def double(resp: int, d: float) -> bytes:
    """addReplyDouble: RESP3's "," double or a bulk string, as d2string."""
    s = d2string(d)
    if resp >= 3:
        return b",%s\r\n" % s
    return b"$%d\r\n%s\r\n" % (len(s), s)


# ---------------------------------------------------------------------------
# Inline commands: Redis's sdssplitargs rules
# ---------------------------------------------------------------------------
_SPACE = frozenset(b" \n\r\t\f\v")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_ESC = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("b"): 8, ord("a"): 7}


def split_args(line: bytes):
    """Split a line as Redis's sdssplitargs does.  Returns a list of bytes or
    None for unbalanced quotes / a closing quote not followed by a space."""
    if b'"' not in line and b"'" not in line:
        return line.split()
    args = []
    i = 0
    n = len(line)
    while True:
        while i < n and line[i] in _SPACE:
            i += 1
        if i >= n:
            return args
        cur = bytearray()
        inq = insq = False
        while True:
            if inq:
                if i >= n:
                    return None
                c = line[i]
                if (c == 92 and i + 3 < n and line[i + 1] == 120
                        and line[i + 2] in _HEX and line[i + 3] in _HEX):
                    cur.append(int(line[i + 2:i + 4], 16))
                    i += 3
                elif c == 92 and i + 1 < n:
                    i += 1
                    cur.append(_ESC.get(line[i], line[i]))
                elif c == 34:
                    if i + 1 < n and line[i + 1] not in _SPACE:
                        return None
                    i += 1
                    break
                else:
                    cur.append(c)
            elif insq:
                if i >= n:
                    return None
                c = line[i]
                if c == 92 and i + 1 < n and line[i + 1] == 39:
                    i += 1
                    cur.append(39)
                elif c == 39:
                    if i + 1 < n and line[i + 1] not in _SPACE:
                        return None
                    i += 1
                    break
                else:
                    cur.append(c)
            else:
                if i >= n:
                    break
                c = line[i]
                if c in _SPACE:
                    break
                if c == 34:
                    inq = True
                elif c == 39:
                    insq = True
                else:
                    cur.append(c)
            i += 1
        args.append(bytes(cur))


PROTO_INLINE_MAX_SIZE = 64 * 1024
# Redis reads inline requests 16 KB at a time and refuses one whose newline
# is not in its buffer once that holds more than PROTO_INLINE_MAX_SIZE: in
# practice (measured on redis-server 7.0.15) a line whose newline lies at
# this offset or beyond is "too big", however the bytes arrive.
INLINE_LINE_MAX = 81910
INT_MAX = 2**31 - 1


class ProtocolError(Exception):
    """A request that breaks the protocol: reply the text, close the link."""


def _parse_ll(b: bytes):
    """Redis's string2ll: strict decimal, no leading zeros/plus/spaces."""
    if not b or len(b) > 20:
        return None
    if b == b"0":
        return 0
    s = b[1:] if b[:1] == b"-" else b
    if not s or not s.isdigit() or s[:1] == b"0":
        return None
    v = int(b)
    if v < -(2**63) or v > 2**63 - 1:
        return None
    return v


def _bulk_len(buf, p, n, max_bulk, auth_required):
    """The length of the bulk string whose "$<len>\\r\\n" header is at p
    and where its data starts; (None, p) while the header is not whole.
    Redis's protocol errors for a bad header."""
    cr = buf.find(b"\r", p)
    if cr < 0:
        if n - p > PROTO_INLINE_MAX_SIZE:
            raise ProtocolError("too big bulk count string")
        return None, p
    if cr > n - 2:
        return None, p
    if buf[p] != 36:
        raise ProtocolError("expected '$', got '%s'" % chr(buf[p]))
    bl = _parse_ll(bytes(buf[p + 1:cr]))
    if bl is None or bl < 0 or bl > max_bulk:
        raise ProtocolError("invalid bulk length")
    if bl > 16384 and auth_required:
        raise ProtocolError("unauthenticated bulk length")
    return bl, cr + 2


def parse_request(buf, pos: int, max_bulk: int, auth_required: bool):
    """Parse one request from buf[pos:] exactly as Redis does.

    Returns (argv, newpos) when complete (argv may be [] for an empty or
    negative-count request), (None, pos) when more data is needed.  Raises
    ProtocolError with Redis's message on bad input.  Used for inline requests
    and to validate/diagnose data the hiredis fast path cannot take.
    """
    n = len(buf)
    if pos >= n:
        return None, pos
    if buf[pos] != 42:  # inline
        nl = buf.find(b"\n", pos)
        if nl >= 0 and buf.find(b"\x00", pos, nl) >= 0:
            nl = -1         # Redis looks for the newline with strchr: a NUL hides it
        elif nl - pos >= INLINE_LINE_MAX:
            raise ProtocolError("too big inline request")
        if nl < 0:
            if n - pos > PROTO_INLINE_MAX_SIZE:
                raise ProtocolError("too big inline request")
            return None, pos
        end = nl
        if end > pos and buf[end - 1] == 13:
            end -= 1
        argv = split_args(bytes(buf[pos:end]))
        if argv is None:
            raise ProtocolError("unbalanced quotes in request")
        return argv, nl + 1
    cr = buf.find(b"\r", pos)
    if cr < 0:
        if n - pos > PROTO_INLINE_MAX_SIZE:
            raise ProtocolError("too big mbulk count string")
        return None, pos
    if cr > n - 2:
        return None, pos
    ll = _parse_ll(bytes(buf[pos + 1:cr]))
    if ll is None or ll > INT_MAX:
        raise ProtocolError("invalid multibulk length")
    if ll > 10 and auth_required:
        raise ProtocolError("unauthenticated multibulk length")
    p = cr + 2
    if ll <= 0:
        return [], p
    argv = []
    for _ in range(ll):
        bl, q = _bulk_len(buf, p, n, max_bulk, auth_required)
        if bl is None:
            return None, pos
        p = q
        if n - p < bl + 2:
            return None, pos
        argv.append(bytes(buf[p:p + bl]))
        p += bl + 2
    return argv, p


def check_partial(buf, state, max_bulk: int, auth_required: bool):
    """Validate a request hiredis holds incompletely, resuming where the
    previous call on the same (grown) buffer stopped.

    Same rules and errors as ``parse_request(buf, 0, ...)``; ``state`` is
    None at the start of a request or what the previous call returned.
    Returns (complete, state): complete is True when Redis's rules see a
    whole request; state resumes the check once more bytes arrived.  Keeps
    a request that arrives in many reads from being parsed again and again
    from its first byte.
    """
    n = len(buf)
    if state is None:
        if not n or buf[0] != 42:
            argv, _ = parse_request(buf, 0, max_bulk, auth_required)
            return argv is not None, None
        cr = buf.find(b"\r")
        if cr < 0:
            if n > PROTO_INLINE_MAX_SIZE:
                raise ProtocolError("too big mbulk count string")
            return False, None
        if cr > n - 2:
            return False, None
        ll = _parse_ll(bytes(buf[1:cr]))
        if ll is None or ll > INT_MAX:
            raise ProtocolError("invalid multibulk length")
        if ll > 10 and auth_required:
            raise ProtocolError("unauthenticated multibulk length")
        if ll <= 0:
            return True, None
        p = cr + 2
        left = ll
    else:
        p, left = state
    while left:
        bl, q = _bulk_len(buf, p, n, max_bulk, auth_required)
        if bl is None:
            return False, (p, left)
        if n - q < bl + 2:
            return False, (p, left)
        p = q + bl + 2
        left -= 1
    return True, None


def request_size(req) -> int:
    """Bytes a canonically encoded multibulk request occupies."""
    size = len(b"*%d\r\n" % len(req))
    for a in req:
        la = len(a)
        size += la + len(str(la)) + 5
    return size


def _arg_bytes(a) -> bytes:
    """A request argument that is not ``bytes`` as the bytes sent for it."""
    if isinstance(a, str):
        return a.encode("utf-8", "surrogateescape")
    if isinstance(a, (bytes, bytearray, memoryview)):
        return bytes(a)
    if isinstance(a, int):
        return b"%d" % a
    if isinstance(a, float):
        return repr(a).encode()
    return str(a).encode()


def encode_argv(argv) -> bytes:
    """A command as a RESP multibulk request (an array of bulk strings): the
    one request encoder, used by propagation (AOF, replicas), the replica's
    handshake, the tools and the tests.  ``bytes`` arguments take the fast
    path; str (UTF-8, surrogateescape), int, float and buffers are converted."""
    n = len(argv)
    out = [_ARR_HDR[n] if n < 1025 else b"*%d\r\n" % n]
    ap = out.append
    for a in argv:
        if a.__class__ is not bytes:
            a = _arg_bytes(a)
        la = len(a)
        ap(_BULK_HDR[la] if la < 1025 else b"$%d\r\n" % la)
        ap(a)
        ap(CRLF)
    return b"".join(out)


def encode_request(*args) -> bytes:
    """``encode_argv(args)``, for callers that spell the arguments out."""
    return encode_argv(args)


# ---------------------------------------------------------------------------
# sdscatrepr: the quoted form of a string Redis writes to MONITOR, the config
# file (CONFIG REWRITE, command-line options), the AOF manifest and redis-cli's
# output.  The inverse of split_args' quoting.
# ---------------------------------------------------------------------------
_REPR_ESCAPES = {0x5C: b"\\\\", 0x22: b'\\"', 0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t",
                 0x07: b"\\a", 0x08: b"\\b"}
# C's isprint() in the C locale: 0x20 to 0x7e.
_REPR_TABLE = tuple(_REPR_ESCAPES[i] if i in _REPR_ESCAPES else
                    bytes((i,)) if 0x20 <= i <= 0x7E else b"\\x%02x" % i for i in range(256))
_REPR_VERBATIM = bytes(i for i in range(256) if _REPR_TABLE[i] == bytes((i,)))
# sdsneedsrepr: what needs quoting, which adds isspace() to what needs escapes.
_REPR_BARE = bytes(i for i in _REPR_VERBATIM if i != 0x20)


def sdscatrepr(s) -> bytes:
    r"""``s`` (bytes-like) in double quotes with Redis's escapes: \\ \" \n
    \r \t \a \b, and \xNN for every other byte outside 0x20-0x7e."""
    s = bytes(s)
    if not s.translate(None, _REPR_VERBATIM):
        return b'"' + s + b'"'
    return b'"' + b"".join(map(_REPR_TABLE.__getitem__, s)) + b'"'


def sds_needs_repr(s) -> bool:
    """sdsneedsrepr: whether ``s`` has a byte that needs quoting (a space,
    a quote, a backslash or anything sdscatrepr escapes)."""
    return bool(bytes(s).translate(None, _REPR_BARE))


# b"$<len>" (a bulk header without its CRLF) for the usual element sizes.
_HDR = [b"$%d" % _i for _i in range(16384)]
_hdr = _HDR.__getitem__


def bulk_items_py(items) -> bytes:
    """RESP array of bulk strings from a list of bytes, built in C: the
    ``$len`` headers and the elements are interleaved by slice assignment
    and joined with CRLF once."""
    n = len(items)
    if not n:
        return EMPTY_ARRAY
    out = [b""] * (2 * n + 2)
    out[0] = b"*%d" % n
    try:
        out[1:-1:2] = map(_hdr, map(len, items))
    except IndexError:      # an element of 16k or more
        out[1:-1:2] = [b"$%d" % len(x) for x in items]
    out[2:-1:2] = items
    return b"\r\n".join(out)


# compiled (protocol/_resp.pyx): one bytes object written in place, no list
# of parts
bulk_items = _c.bulk_items if _c is not None else bulk_items_py


def _encode_bytes_argv(argv) -> bytes:
    # encode_argv, compiled for a list of bytes objects
    if argv.__class__ is list:
        enc = _c.encode_bytes_argv(argv)
        if enc is not None:
            return enc
    return encode_argv(argv)


# a command as a RESP array of bulk strings (propagation's encoder):
# compiled for a list of bytes
encode_command = _encode_bytes_argv if _c is not None else encode_argv
