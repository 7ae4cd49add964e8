"""LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN].

The dynamic programming table of Redis is represented by bit-parallel rows
(Hyyro's algorithm on Python integers): row i is an integer whose bit j is
0 when LCS(i, j+1) = LCS(i, j) + 1, so LCS(i, j) = j - popcount(row_i & (2^j-1)).
This costs a few big-integer operations per byte of the first string
instead of one Python step per table cell, and the backtracking walks the
same path as Redis's (same tie-breaking), so IDX output is identical.
"""

from __future__ import annotations

from ..cmdtable.registry import command
from ..errors import SYNTAX, RedisError
from ..keyspace.db import EmbStr
from ..protocol.resp import bulk, integer, map_header
from ..util import parse_int

_STR = (bytes, bytearray, EmbStr)

_WRONG = RedisError("ERR The specified keys must contain string values")


def _match_masks(a: bytes, b: bytes):
    """For each byte value in a, an integer with bit k set where b[k] equals it."""
    rb = bytes(b[::-1])
    masks = {}
    for ch in set(a):
        if ch not in masks:
            tbl = bytearray(b"0" * 256)
            tbl[ch] = 49  # '1'
            s = rb.translate(tbl)
            masks[ch] = int(s, 2) if s else 0
    return masks


def lcs_rows(a: bytes, b: bytes, keep: bool):
    """Run the bit-parallel LCS; returns (length, rows) where rows[i] is the
    row after i bytes of a (rows is None unless keep)."""
    m = len(b)
    full = (1 << m) - 1
    v = full
    masks = _match_masks(a, b)
    rows = [v] if keep else None
    for ch in a:
        u = v & masks[ch]
        v = ((v + u) | (v - u)) & full
        if keep:
            rows.append(v)
    return m - v.bit_count(), rows


@command("lcs")
def lcs(c, argv):
    db = c.db
    va = db.lookup_read(argv[1])
    vb = db.lookup_read(argv[2])
    if (va is not None and va.__class__ not in _STR) or \
            (vb is not None and vb.__class__ not in _STR):
        raise _WRONG
    a = bytes(va) if va is not None else b""
    b = bytes(vb) if vb is not None else b""
    getlen = getidx = withmatchlen = False
    minmatchlen = 0
    n = len(argv)
    j = 3
    while j < n:
        opt = argv[j].upper()
        more = n - 1 - j
        if opt == b"IDX":
            getidx = True
        elif opt == b"LEN":
            getlen = True
        elif opt == b"WITHMATCHLEN":
            withmatchlen = True
        elif opt == b"MINMATCHLEN" and more:
            minmatchlen = parse_int(argv[j + 1])
            if minmatchlen < 0:
                minmatchlen = 0
            j += 1
        else:
            raise SYNTAX
        j += 1
    if getlen and getidx:
        raise RedisError("ERR If you want both the length and indexes, please just use IDX.")
    alen, blen = len(a), len(b)
    if alen >= 2**32 - 2 or blen >= 2**32 - 2:
        raise RedisError("ERR String too long for LCS")
    if (alen + 1) * (blen + 1) * 4 > c.server.proto_max_bulk_len:
        raise RedisError("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
    computelcs = getidx or not getlen
    total, rows = lcs_rows(a, b, computelcs)
    if not computelcs:
        return integer(total)

    def L(i, jj):
        return jj - (rows[i] & ((1 << jj) - 1)).bit_count()

    result = bytearray(total)
    idx = total
    matches = []
    ar_start = alen  # alen: no open range
    ar_end = br_start = br_end = 0
    i, jj = alen, blen
    while i > 0 and jj > 0:
        emit = False
        if a[i - 1] == b[jj - 1]:
            result[idx - 1] = a[i - 1]
            if ar_start == alen:
                ar_start = ar_end = i - 1
                br_start = br_end = jj - 1
            elif ar_start == i and br_start == jj:
                ar_start -= 1
                br_start -= 1
            else:
                emit = True
            if ar_start == 0 or br_start == 0:
                emit = True
            idx -= 1
            i -= 1
            jj -= 1
        else:
            if L(i - 1, jj) > L(i, jj - 1):
                i -= 1
            else:
                jj -= 1
            if ar_start != alen:
                emit = True
        if emit:
            mlen = ar_end - ar_start + 1
            if getidx and (minmatchlen == 0 or mlen >= minmatchlen):
                matches.append((ar_start, ar_end, br_start, br_end, mlen))
            ar_start = alen
    if getidx:
        out = [map_header(c.resp, 2), bulk(b"matches"), b"*%d\r\n" % len(matches)]
        for a0, a1, b0, b1, ml in matches:
            out.append(b"*%d\r\n*2\r\n%s%s*2\r\n%s%s" % (
                3 if withmatchlen else 2, integer(a0), integer(a1), integer(b0), integer(b1)))
            if withmatchlen:
                out.append(integer(ml))
        out.append(bulk(b"len"))
        out.append(integer(total))
        return b"".join(out)
    return bulk(bytes(result))
