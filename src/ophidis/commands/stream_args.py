"""The stream commands' common ground (t_stream.c; the commands are in
streams.py and stream_groups.py): the errors they share, stream IDs and
intervals as arguments, entry replies, and propagation: the ops that
replicate instead of a command (XCLAIM ... FORCE JUSTID LASTID, XGROUP
SETID), as Redis's alsoPropagate.
"""

from __future__ import annotations

from ..errors import RedisError
from ..protocol.resp import EMPTY_ARRAY, bulk_items
from ..replication.propagate import also_propagate, propagating, rewrite_argv
from ..types.stream import MASK64, MAX_ID, id_bytes

INVALID_ID = RedisError("ERR Invalid stream ID specified as stream command argument")
BAD_START = RedisError("ERR invalid start ID for the interval")
BAD_END = RedisError("ERR invalid end ID for the interval")
NO_SUCH_KEY = RedisError("ERR no such key")

_SPACE = frozenset(b" \t\n\v\f\r")


# ---------------------------------------------------------------------------
# IDs
# ---------------------------------------------------------------------------
def _string2ull(s: bytes):
    """Redis's string2ull: a canonical signed 64-bit value that is not
    negative, else whatever strtoull(s, 10) accepts in full (leading spaces,
    a sign, leading zeros; a '-' negates modulo 2^64).  None if invalid."""
    if s.isdigit():
        v = int(s)
        return v if v <= MASK64 else None
    n = len(s)
    if not n:
        return None
    i = 0
    while i < n and s[i] in _SPACE:
        i += 1
    neg = False
    if i < n and s[i] in b"+-":
        neg = s[i] == 45
        i += 1
    digits = s[i:]
    if not digits.isdigit():
        return None
    v = int(digits)
    if v > MASK64:
        return None
    if neg:
        if i == 1 and n < 21 and digits[0] != 48 and v <= 1 << 63:
            return None       # string2ll took it: a negative number
        return (-v) & MASK64
    return v


def parse_id(b: bytes, missing_seq=0, strict=False, seq_star=False, err=INVALID_ID):
    """streamGenericParseIDOrReply -> (id, seq_given).  With seq_star the
    ``<ms>-*`` form is accepted (seq_given False).  err is mostly shared
    (XCLAIM's options end its ids by it): its traceback is reset before
    each raise, as parse_int's."""
    if len(b) > 127:
        raise err.with_traceback(None)
    s = b.split(b"\0", 1)[0] if b"\0" in b else b
    if s == b"-" or s == b"+":
        if strict:
            raise err.with_traceback(None)
        return (0 if s == b"-" else MAX_ID), True
    dash = s.find(b"-")
    if dash < 0:
        ms = _string2ull(s)
        if ms is None:
            raise err.with_traceback(None)
        return (ms << 64) | missing_seq, True
    ms = _string2ull(s[:dash])
    if ms is None:
        raise err.with_traceback(None)
    rest = s[dash + 1:]
    if seq_star and rest == b"*":
        return ms << 64, False
    seq = _string2ull(rest)
    if seq is None:
        raise err.with_traceback(None)
    return (ms << 64) | seq, True


def parse_interval(b: bytes, missing_seq: int):
    """streamParseIntervalIDOrReply -> (id, exclusive)."""
    if len(b) > 1 and b[0] == 40:        # "("
        return parse_id(b[1:], missing_seq, strict=True)[0], True
    return parse_id(b, missing_seq)[0], False


def range_args(start_arg, end_arg):
    start, sx = parse_interval(start_arg, 0)
    if sx:
        if start == MAX_ID:
            raise BAD_START
        start += 1
    end, ex = parse_interval(end_arg, MASK64)
    if ex:
        if end == 0:
            raise BAD_END
        end -= 1
    return start, end


# ---------------------------------------------------------------------------
# Replies
# ---------------------------------------------------------------------------
def bulk_str(b: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(b), b)


def id_reply(i: int) -> bytes:
    s = b"%d-%d" % (i >> 64, i & MASK64)
    return b"$%d\r\n%s\r\n" % (len(s), s)


def entry_reply(i: int, fv) -> bytes:
    s = b"%d-%d" % (i >> 64, i & MASK64)
    return b"*2\r\n$%d\r\n%s\r\n" % (len(s), s) + bulk_items(fv)


def entries_reply(items) -> bytes:
    if not items:
        return EMPTY_ARRAY
    parts = [b"*%d\r\n" % len(items)]
    ap = parts.append
    for i, fv in items:
        s = b"%d-%d" % (i >> 64, i & MASK64)
        ap(b"*2\r\n$%d\r\n%s\r\n" % (len(s), s))
        ap(bulk_items(fv))
    return b"".join(parts)


# ---------------------------------------------------------------------------
# Propagation
# ---------------------------------------------------------------------------
def propagate_ops(c, argv, ops, dirty0):
    """Redis's alsoPropagate + preventCommandPropagation for a command run
    by ``Server.call``: ``ops`` replicate instead of the command (in one
    MULTI/EXEC when there are several).  The last op takes the command's
    place (propagate.rewrite_argv, as for BLPOP); earlier ones join the
    unit first.  With no ops nothing may replicate, so the dirty counter
    goes back to where it was."""
    srv = c.server
    if not propagating(srv):
        return
    if not ops:
        srv.dirty = dirty0
        return
    if srv.dirty == dirty0:
        srv.dirty += 1
    db = c.db
    for op in ops[:-1]:
        also_propagate(srv, op, db)
    rewrite_argv(c, ops[-1])


def xclaim_op(key, gname, g, idarg, nack):
    return [b"XCLAIM", key, gname, nack.consumer.name if nack.consumer is not None else b"", b"0", idarg,
            b"TIME",
            b"%d" % nack.delivery_time, b"RETRYCOUNT", b"%d" % nack.delivery_count,
            b"FORCE", b"JUSTID", b"LASTID", id_bytes(g.last_id)]


def setid_op(key, gname, g):
    return [b"XGROUP", b"SETID", key, gname, id_bytes(g.last_id), b"ENTRIESREAD",
            b"%d" % g.entries_read]
