"""Output of ophidis-cli: stdout/stderr writes and the reply formats of
redis-cli (TTY, raw, CSV, JSON).  Strings are quoted with Redis's
sdscatrepr (ophidis.protocol.resp).
"""

from __future__ import annotations

import sys

from ophidis.protocol.resp import sdscatrepr
from ophidis.tools import resp
from ophidis.tools.resp import Reply

OUT_STANDARD, OUT_RAW, OUT_CSV, OUT_JSON, OUT_QUOTED_JSON = range(5)


def out(s):
    if isinstance(s, str):
        s = s.encode("utf-8", "surrogateescape")
    sys.stdout.buffer.write(s)


def flush():
    sys.stdout.buffer.flush()


def err(s):
    sys.stdout.buffer.flush()
    sys.stderr.write(s)
    sys.stderr.flush()


def fatal(s):
    """err(s), then exit with status 1."""
    err(s)
    sys.exit(1)


def _is_multiline(r: Reply):
    if r.kind in (resp.ARRAY, resp.SET, resp.PUSH):
        if not r.value:
            return False
        return len(r.value) > 1 or _is_multiline(r.value[0])
    if r.kind == resp.MAP:
        if not r.value:
            return False
        return len(r.value) > 2 or _is_multiline(r.value[1])
    return False


def format_tty(r: Reply, prefix=b"") -> bytes:
    k = r.kind
    if k == resp.ERROR:
        return b"(error) " + r.value + b"\n"
    if k == resp.STATUS:
        return r.value + b"\n"
    if k == resp.INTEGER:
        return b"(integer) %d\n" % r.value
    if k == resp.DOUBLE:
        return b"(double) " + r.value + b"\n"
    if k == resp.BIGNUM:
        return b"(big number) " + r.value + b"\n"
    if k == resp.BULK:
        return sdscatrepr(r.value) + b"\n"
    if k == resp.VERB:
        return r.value + b"\n"
    if k == resp.NIL:
        return b"(nil)\n"
    if k == resp.BOOL:
        return b"(true)\n" if r.value else b"(false)\n"
    items = r.value
    if not items:
        return {resp.ARRAY: b"(empty array)\n", resp.MAP: b"(empty hash)\n",
                resp.SET: b"(empty set)\n", resp.PUSH: b"(empty push)\n"}[k]
    n = len(items) // 2 if k == resp.MAP else len(items)
    idxlen = len(str(n))
    sub_prefix = prefix + b" " * (idxlen + 2)
    sep = b"~" if k == resp.SET else b"#" if k == resp.MAP else b")"
    parts = []
    i = 0
    while i < len(items):
        human = (i // 2 if k == resp.MAP else i) + 1
        parts.append((b"" if i == 0 else prefix) + b"%*d" % (idxlen, human) + sep + b" ")
        parts.append(format_tty(items[i], sub_prefix))
        if k == resp.MAP:
            i += 1
            parts[-1] = parts[-1][:-1] + b" => "
            if _is_multiline(items[i]):
                parts.append(b"\n" + sub_prefix)
            parts.append(format_tty(items[i], sub_prefix))
        i += 1
    return b"".join(parts)


def format_raw(r: Reply, mb_delim=b"\n") -> bytes:
    k = r.kind
    if k == resp.NIL:
        return b""
    if k == resp.ERROR:
        return r.value + b"\n"
    if k in (resp.STATUS, resp.BULK, resp.VERB, resp.DOUBLE, resp.BIGNUM):
        return r.value
    if k == resp.BOOL:
        return b"(true)" if r.value else b"(false)"
    if k == resp.INTEGER:
        return b"%d" % r.value
    items = r.value
    if k == resp.MAP:
        return mb_delim.join(format_raw(items[i], mb_delim) + b" " + format_raw(items[i + 1], mb_delim)
                             for i in range(0, len(items), 2))
    return mb_delim.join(format_raw(e, mb_delim) for e in items)


def _scalar(r: Reply, error: bytes, text, nil: bytes):
    """A scalar reply as CSV and JSON output write it (``error`` before an
    error's text, ``text(bytes)`` for strings, ``nil`` for a nil); None for
    an aggregate."""
    k = r.kind
    if k == resp.ERROR:
        return error + text(r.value)
    if k in (resp.STATUS, resp.BULK, resp.VERB):
        return text(r.value)
    if k == resp.INTEGER:
        return b"%d" % r.value
    if k in (resp.DOUBLE, resp.BIGNUM):
        return r.value
    if k == resp.NIL:
        return nil
    if k == resp.BOOL:
        return b"true" if r.value else b"false"
    return None


def format_csv(r: Reply) -> bytes:
    out = _scalar(r, b"ERROR,", sdscatrepr, b"NULL")
    if out is not None:
        return out
    return b",".join(format_csv(e) for e in r.value)


def _json_str(b: bytes, quoted: bool) -> bytes:
    if quoted:
        return sdscatrepr(b).replace(b"\\", b"\\\\")
    o = [b'"']
    for c in b:
        if c in (0x5c, 0x22):
            o.append(b"\\" + bytes([c]))
        elif c in (0x0a, 0x0c, 0x0d, 0x09, 0x08):
            o.append({0x0a: b"\\n", 0x0c: b"\\f", 0x0d: b"\\r", 0x09: b"\\t", 0x08: b"\\b"}[c])
        elif c <= 0x1f:
            o.append(b"\\u%04x" % c)
        else:
            o.append(bytes([c]))
    o.append(b'"')
    return b"".join(o)


def format_json(r: Reply, quoted=False) -> bytes:
    out = _scalar(r, b"error:", lambda v: _json_str(v, quoted), b"null")
    if out is not None:
        return out
    k = r.kind
    items = r.value
    if k == resp.MAP:
        parts = []
        for i in range(0, len(items), 2):
            key = format_json(items[i], quoted)
            if not key.startswith(b'"'):
                key = b'"' + key + b'"'
            parts.append(key + b":" + format_json(items[i + 1], quoted))
        return b"{" + b",".join(parts) + b"}"
    return b"[" + b",".join(format_json(e, quoted) for e in items) + b"]"
