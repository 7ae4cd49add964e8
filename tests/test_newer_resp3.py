"""RESP3 everywhere (issue 32): one or more representative calls of every
command of Redis 7.0, with data set up first, sent to Ophidis and to
Debian's redis-server 7.0.15 over RESP3 (and RESP2: the fixture does both),
the reply bytes compared exactly (support.differential.same_replies).

Doubles: Redis 7.2 prints doubles as the shortest text that reads back the
same value, 7.0 with %.17g; the values here are chosen so that both texts
agree (integers, 1.5, 0.25, inf), or the reply is normalised by value.

Replies whose element order follows hash-table iteration are compared
parsed and sorted, element by element, with their RESP3 type markers kept
(``unordered``).  Fields that legitimately differ between two servers (ids,
times, memory figures, version strings) are normalised by ``redact``.

The commands left out (``EXCLUDED``) cannot be compared this way; the
reason is given beside each.  Pub/Sub pushes, client-tracking invalidation
pushes, MULTI/EXEC and Lua conversions have their own tests below.
"""

import json
import os
import re

import pytest

from support.resp import RespConn, parse

COMMANDS_JSON = os.path.join(os.path.dirname(__file__), "..", "src", "ophidis", "data", "commands.json")


# -- normalisers -------------------------------------------------------------------

def _chunks(buf):
    """The header line and the exact bytes of each top-level element of an
    aggregate reply."""
    nl = buf.index(b"\r\n")
    head = buf[:nl + 2]
    n = int(buf[1:nl])
    pos = nl + 2
    out = []
    for _ in range(max(n, 0) * (2 if buf[:1] == b"%" else 1)):
        _, end = parse(buf, pos)
        out.append(buf[pos:end])
        pos = end
    return head, out, buf[pos:]


def unordered(buf):
    """An aggregate with its elements (a map: its pairs) sorted by their
    bytes; the markers of every element stay as sent."""
    if buf[:1] not in (b"*", b"~", b"%") or buf.startswith(b"*-1"):
        return buf
    head, items, rest = _chunks(buf)
    if buf[:1] == b"%":
        items = [items[i] + items[i + 1] for i in range(0, len(items), 2)]
    return head + b"".join(sorted(items)) + rest


def pairs_unordered(buf):
    """A flat RESP2 field/value array (or a RESP3 array of pairs) sorted by pair."""
    head, items, rest = _chunks(buf)
    if items and items[0][:1] == b"*":
        return head + b"".join(sorted(items)) + rest
    items = [items[i] + items[i + 1] for i in range(0, len(items), 2)]
    return head + b"".join(sorted(items)) + rest


def redact(*patterns):
    """Replace each regular expression's group 1 (or match) with ``#``, and
    fix up the bulk lengths it changes."""
    def norm(buf):
        for p in patterns:
            buf = re.sub(p, lambda m: m.group(0).replace(m.group(1), b"#") if m.groups() else b"#", buf)
        return _fix_lengths(buf)
    return norm


def _fix_lengths(buf):
    """Re-count every bulk / verbatim string's length (after a redaction)."""
    out = []
    pos = 0
    while pos < len(buf):
        nl = buf.find(b"\r\n", pos)
        if nl < 0:
            out.append(buf[pos:])
            break
        t = buf[pos:pos + 1]
        if t in (b"$", b"=", b"!") and buf[pos + 1:nl] != b"-1":
            # the body runs to the next line that starts a RESP element at
            # this depth: find it by the original length first, else scan
            n = int(buf[pos + 1:nl])
            body_start = nl + 2
            end = body_start + n
            if buf[end:end + 2] == b"\r\n" and (end + 2 == len(buf) or buf[end + 2:end + 3] in b"$=!*~%>:,#_(+-"):
                out.append(buf[pos:end + 2])
                pos = end + 2
                continue
            # the length changed: the body ends at the last CRLF before the
            # next element marker line
            j = body_start
            while True:
                k = buf.find(b"\r\n", j)
                if k < 0 or k + 2 == len(buf) or buf[k + 2:k + 3] in b"$=!*~%>:,#_(":
                    break
                j = k + 2
            body = buf[body_start:k]
            out.append(t + b"%d\r\n" % len(body) + body + b"\r\n")
            pos = k + 2
            continue
        out.append(buf[pos:nl + 2])
        pos = nl + 2
    return b"".join(out)


def help_shape(buf):
    """A HELP reply: its texts are our own words, its shape (an array of
    simple strings) is Redis's."""
    head, items, rest = _chunks(buf)
    assert all(i[:1] == b"+" for i in items) and not rest, buf
    return b"*help\r\n"


def docs_shape(buf):
    """COMMAND DOCS: our summaries are our own words and we keep no
    complexity texts; the rest (the map/array shape) must agree."""
    buf = re.sub(rb"\$7\r\nsummary\r\n\$\d+\r\n[^\r]*\r\n", b"", buf)
    buf = re.sub(rb"\$10\r\ncomplexity\r\n\$\d+\r\n[^\r]*\r\n", b"", buf)
    # Redis 7.2's display_text (7.0 has none): dropped, with the size of the
    # argument's map (test_command.py compares it with valkey)
    buf = re.sub(rb"\$12\r\ndisplay_text\r\n\$\d+\r\n[^\r]*\r\n", b"", buf)
    buf = re.sub(rb"(\$9\r\narguments\r\n\*\d+\r\n)[*%]\d+", lambda m: m.group(1) + b"#", buf)
    return re.sub(rb"^([*%]\d+\r\n\$3\r\nget\r\n)[*%]\d+", lambda m: m.group(1) + b"#", buf)


def without_fields(*names):
    """Redis 7.2+ / 8.x fields of a reply 7.0 lacks (XINFO CONSUMERS'
    inactive, XINFO STREAM's idempotency fields): each name/integer pair
    dropped, and the header of the map (or flat array) holding it counted
    down, so the rest compares with 7.0's reply."""
    pats = [re.compile(rb"\$%d\r\n%s\r\n:-?\d+\r\n" % (len(n), re.escape(n.encode()))) for n in names]

    def norm(buf):
        # the headers of maps / flat field arrays, each with the pairs it
        # holds directly: walk the reply and rebuild it
        def walk(p):
            t = buf[p:p + 1]
            nl = buf.index(b"\r\n", p)
            if t not in (b"*", b"%", b"~", b">") or buf[p + 1:nl] == b"-1":
                _, end = parse(buf, p)
                return buf[p:end], end
            n = int(buf[p + 1:nl])
            count = n * 2 if t == b"%" else n
            q = nl + 2
            parts = []
            dropped = 0
            i = 0
            while i < count:
                m = None
                if i % 2 == 0 and (t == b"%" or t == b"*"):
                    for pat in pats:
                        m = pat.match(buf, q)
                        if m:
                            break
                if m:
                    q = m.end()
                    dropped += 1
                    i += 2
                    continue
                part, q = walk(q)
                parts.append(part)
                i += 1
            n2 = n - dropped if t == b"%" else n - 2 * dropped
            return t + b"%d\r\n" % n2 + b"".join(parts), q
        rebuilt, end = walk(0)
        return rebuilt + buf[end:]
    return norm


def without_sanitize_payload(buf):
    """Redis 7.2+'s sanitize-payload, the flag of every new user (7.0's
    users have none): taken out of ACL LIST's lines and of ACL GETUSER's
    flags (their count lowered)."""
    buf = re.sub(rb"([~*])(\d+)(\r\n(?:\$\d+\r\n[a-z-]+\r\n)*?)\$16\r\nsanitize-payload\r\n",
                 lambda m: m.group(1) + b"%d" % (int(m.group(2)) - 1) + m.group(3), buf)
    return _fix_lengths(buf.replace(b" sanitize-payload", b""))


def number(buf):
    """An integer reply whose value differs between servers: its type only."""
    return re.sub(rb"^:-?\d+", b":#", buf)


def doubles_by_value(buf):
    """Every RESP3 double rewritten as repr(float) of its value."""
    return re.sub(rb",([^\r]+)\r\n", lambda m: b",%r\r\n" % float(m.group(1)) if m.group(1) not in (b"inf", b"-inf", b"nan") else m.group(0), buf)


# XINFO's fields Redis added after 7.0
XINFO_NEW = without_fields("inactive", "idmp-duration", "idmp-maxsize", "pids-tracked", "iids-tracked",
                           "iids-added", "iids-duplicates")

# -- the commands --------------------------------------------------------------------

STRINGS = [
    ["SET", "k", "v"], ["GET", "k"], ["GET", "nokey"], ["SET", "k", "w", "GET"], ["SET", "k", "x", "NX"],
    ["SET", "nk", "x", "NX", "GET"], ["SET", "k", "y", "XX", "EX", "100"], ["GETEX", "k", "PERSIST"],
    ["GETEX", "nokey"], ["GETDEL", "k"], ["GETDEL", "k"], ["SETEX", "s", "100", "v"], ["SETEX", "s", "0", "v"],
    ["PSETEX", "p", "100000", "v"], ["SETNX", "s", "v"], ["SETNX", "n", "v"], ["SET", "r", "Hello World"],
    ["GETRANGE", "r", "0", "4"], ["GETRANGE", "r", "-5", "-1"], ["SUBSTR", "r", "0", "-1"], ["GETRANGE", "nokey", "0", "1"],
    ["SETRANGE", "r", "6", "Redis"], ["SETRANGE", "r2", "3", "x"], ["GET", "r2"], ["STRLEN", "r"], ["STRLEN", "nokey"],
    ["APPEND", "a", "x"], ["APPEND", "a", "yz"], ["GETSET", "a", "new"], ["GETSET", "nokey2", "v"],
    ["INCR", "i"], ["INCRBY", "i", "10"], ["DECR", "i"], ["DECRBY", "i", "3"], ["INCR", "r"], ["INCRBY", "i", "x"],
    ["INCRBYFLOAT", "f", "1.5"], ["INCRBYFLOAT", "f", "0.25"], ["INCRBYFLOAT", "f", "1e3"], ["INCRBYFLOAT", "r", "1"],
    ["MSET", "m1", "a", "m2", "b"], ["MGET", "m1", "m2", "nokey", "i"], ["MSETNX", "m1", "x", "m3", "y"],
    ["MSETNX", "m3", "y", "m4", "z"], ["MSET", "m1"],
    ["SET", "l1", "ohmytext"], ["SET", "l2", "mynewtext"], ["LCS", "l1", "l2"], ["LCS", "l1", "l2", "LEN"],
    ["LCS", "l1", "l2", "IDX"], ["LCS", "l1", "l2", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"],
    ["LCS", "l1", "l2", "IDX", "WITHMATCHLEN"], ["LCS", "nokey", "l2", "IDX"], ["LCS", "l1", "l2", "LEN", "IDX"],
    ["GET", "i", "x"], ["SET", "k"],
]

BITMAPS = [
    ["SETBIT", "b", "7", "1"], ["SETBIT", "b", "7", "0"], ["SETBIT", "b", "100", "1"], ["GETBIT", "b", "100"],
    ["GETBIT", "b", "5000"], ["GETBIT", "nokey", "1"], ["SET", "bs", "foobar"], ["BITCOUNT", "bs"],
    ["BITCOUNT", "bs", "1", "1"], ["BITCOUNT", "bs", "5", "30", "BIT"], ["BITCOUNT", "nokey"],
    ["BITPOS", "bs", "1"], ["BITPOS", "bs", "0", "2", "-1", "BYTE"], ["BITPOS", "nokey", "1"],
    ["BITOP", "AND", "dest", "bs", "b"], ["BITOP", "NOT", "dest", "bs"], ["GET", "dest"], ["BITOP", "NOT", "d", "a", "b"],
    ["BITFIELD", "bf", "SET", "i8", "0", "100", "GET", "u4", "0", "INCRBY", "i5", "100", "1"],
    ["BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "i8", "0", "1000"], ["BITFIELD", "bf"],
    ["BITFIELD_RO", "bf", "GET", "i8", "0", "GET", "u16", "#1"], ["BITFIELD_RO", "bf", "SET", "i8", "0", "1"],
    ["SETBIT", "b", "1", "2"],
]

KEYS = [
    ["MSET", "a", "1", "b", "2", "c", "3"], ["DEL", "a", "nokey"], ["UNLINK", "b", "nokey"], ["EXISTS", "c", "c", "a"],
    ["TYPE", "c"], ["TYPE", "nokey"], ["RPUSH", "l", "x"], ["TYPE", "l"], ["RENAME", "c", "c2"], ["RENAME", "nokey", "x"],
    ["SET", "d", "1"], ["RENAMENX", "c2", "d"], ["RENAMENX", "c2", "e"], ["COPY", "e", "f"], ["COPY", "e", "f"],
    ["COPY", "e", "f", "REPLACE"], ["COPY", "e", "f", "DB", "1"], ["MOVE", "f", "2"], ["MOVE", "f", "2"], ["TOUCH", "d", "e", "x"],
    ["EXPIRE", "d", "100"], ["EXPIRE", "d", "200", "NX"], ["EXPIRE", "d", "200", "GT"], ["EXPIRE", "nokey", "1"],
    ["PEXPIRE", "e", "100000"], ["EXPIREAT", "d", "4000000000"], ["PEXPIREAT", "e", "4000000000000"],
    ["EXPIRETIME", "d"], ["PEXPIRETIME", "e"], ["EXPIRETIME", "l"], ["EXPIRETIME", "nokey"], ["TTL", "nokey"],
    ["TTL", "l"], (["TTL", "d"], number), (["PTTL", "e"], number), ["PERSIST", "d"], ["PERSIST", "d"], ["TTL", "d"],
    ["EXPIRE", "d", "x"], ["EXPIRE", "d", "1", "NX", "XX"],
    (["KEYS", "*"], unordered), ["KEYS", "zz*"], (["SCAN", "0", "COUNT", "100"], lambda b: b[:b.index(b"*", 2)] + unordered(b[b.index(b"*", 2):])),
    ["SCAN", "0", "MATCH", "nomatch*"], ["SCAN", "0", "TYPE", "list"], ["SCAN", "x"],
    ["DBSIZE"], ["SELECT", "1"], ["DBSIZE"], ["RANDOMKEY"], ["SELECT", "0"], ["SELECT", "100"], ["SWAPDB", "0", "1"],
    ["DBSIZE"], ["SWAPDB", "0", "1"], ["FLUSHDB"], ["FLUSHALL", "SYNC"], ["FLUSHALL", "x"], ["RANDOMKEY"], ["SET", "o", "12345"], ["OBJECT", "ENCODING", "o"],
    ["OBJECT", "ENCODING", "nokey"], ["OBJECT", "REFCOUNT", "o"], (["OBJECT", "IDLETIME", "o"], number),
    ["OBJECT", "FREQ", "o"], ["DUMP", "nokey"], ["RESTORE", "o", "0", "bad"], ["SET", "str", "v"],
    ["RPUSH", "sl", "3", "1", "2"], ["SORT", "sl"], ["SORT", "sl", "DESC", "LIMIT", "0", "2"], ["SORT_RO", "sl", "ALPHA"],
    ["SORT", "sl", "STORE", "dst"], ["LRANGE", "dst", "0", "-1"], ["SORT", "sl", "BY", "nosort", "GET", "#", "GET", "w_*"],
    ["SORT", "nokey"], ["SORT", "str"],
]

HASHES = [
    ["HSET", "h", "f1", "v1", "f2", "2", "f3", "1.5"], ["HSETNX", "h", "f1", "x"], ["HSETNX", "h", "f4", "x"],
    ["HMSET", "h", "f5", "v5"], ["HGET", "h", "f1"], ["HGET", "h", "nofield"], ["HGET", "nokey", "f"],
    ["HMGET", "h", "f1", "nofield", "f2"], ["HMGET", "nokey", "a"], ["HGETALL", "h"], ["HGETALL", "nokey"],
    ["HKEYS", "h"], ["HVALS", "h"], ["HKEYS", "nokey"], ["HLEN", "h"], ["HDEL", "h", "f4", "nofield"], ["HEXISTS", "h", "f1"],
    ["HEXISTS", "h", "x"], ["HSTRLEN", "h", "f1"], ["HINCRBY", "h", "f2", "5"], ["HINCRBY", "h", "f1", "1"],
    ["HINCRBYFLOAT", "h", "f3", "1"], ["HINCRBYFLOAT", "h", "f3", "0.25"], ["HINCRBYFLOAT", "h", "f1", "1"],
    ["HSET", "one", "only", "1"], ["HRANDFIELD", "one"], ["HRANDFIELD", "one", "2"], ["HRANDFIELD", "one", "-2", "WITHVALUES"],
    ["HRANDFIELD", "one", "1", "WITHVALUES"], ["HRANDFIELD", "nokey"], ["HRANDFIELD", "nokey", "2"],
    ["HRANDFIELD", "nokey", "2", "WITHVALUES"], ["HRANDFIELD", "one", "0", "WITHVALUES"],
    ["HSCAN", "h", "0"], ["HSCAN", "nokey", "0"], ["HSCAN", "h", "0", "MATCH", "f1"],
    ["HSET", "h"], ["HSET", "h", "a"], ["HGET", "str", "f"],
]

LISTS = [
    ["RPUSH", "l", "a", "b", "c", "a"], ["LPUSH", "l", "z"], ["LPUSHX", "nokey", "a"], ["RPUSHX", "l", "d"],
    ["LRANGE", "l", "0", "-1"], ["LRANGE", "nokey", "0", "-1"], ["LINDEX", "l", "1"], ["LINDEX", "l", "100"],
    ["LINSERT", "l", "BEFORE", "b", "x"], ["LINSERT", "l", "AFTER", "nope", "x"], ["LINSERT", "nokey", "AFTER", "a", "x"],
    ["LLEN", "l"], ["LLEN", "nokey"], ["LREM", "l", "1", "a"], ["LSET", "l", "0", "Z"], ["LSET", "l", "100", "Z"],
    ["LSET", "nokey", "0", "x"], ["LPOS", "l", "b"], ["LPOS", "l", "nope"], ["LPOS", "l", "b", "COUNT", "0"],
    ["LPOS", "l", "nope", "COUNT", "2"], ["LPOS", "nokey", "a", "COUNT", "1"], ["LPOP", "l"], ["RPOP", "l", "2"],
    ["LPOP", "nokey"], ["LPOP", "nokey", "2"], ["LPOP", "l", "0"], ["LTRIM", "l", "0", "1"],
    ["RPUSH", "src", "1", "2", "3"], ["LMOVE", "src", "dst", "LEFT", "RIGHT"], ["LMOVE", "nokey", "dst", "LEFT", "RIGHT"],
    ["RPOPLPUSH", "src", "dst"], ["RPOPLPUSH", "nokey", "dst"], ["LMPOP", "2", "nokey", "dst", "LEFT", "COUNT", "5"],
    ["LMPOP", "1", "nokey", "RIGHT"], ["RPUSH", "bl", "1", "2", "3", "4"], ["BLPOP", "nokey", "bl", "0"],
    ["BRPOP", "bl", "0"], ["BLMOVE", "bl", "dst", "RIGHT", "LEFT", "0"], ["BRPOPLPUSH", "bl", "dst", "0"],
    ["BLMPOP", "0", "1", "dst", "LEFT", "COUNT", "2"], ["BLPOP", "nokey", "0.01"], ["BLMPOP", "0.01", "1", "nokey", "LEFT"],
    ["BRPOPLPUSH", "nokey", "dst", "0.01"], ["BLMOVE", "nokey", "dst", "LEFT", "LEFT", "0.01"],
    ["LPOP", "str"], ["LPOP", "l", "-1"],
]

SETS = [
    ["SADD", "s", "3", "1", "2"], ["SADD", "s", "1"], ["SADD", "t", "2", "3", "4"], ["SREM", "t", "4", "9"],
    ["SCARD", "s"], ["SCARD", "nokey"], ["SISMEMBER", "s", "1"], ["SISMEMBER", "s", "9"], ["SMISMEMBER", "s", "1", "9"],
    ["SMISMEMBER", "nokey", "1"], ["SMEMBERS", "s"], ["SMEMBERS", "nokey"], ["SINTER", "s", "t"], ["SINTER", "s", "nokey"],
    ["SINTERCARD", "2", "s", "t"], ["SINTERCARD", "2", "s", "t", "LIMIT", "1"], ["SINTERSTORE", "i", "s", "t"],
    ["SUNION", "s", "t"], ["SUNIONSTORE", "u", "s", "t"], ["SDIFF", "s", "t"], ["SDIFF", "nokey", "s"],
    ["SDIFFSTORE", "d", "s", "t"], ["SMEMBERS", "d"], ["SMOVE", "s", "t", "1"], ["SMOVE", "s", "t", "1"],
    ["SADD", "one", "x"], ["SRANDMEMBER", "one"], ["SRANDMEMBER", "one", "3"], ["SRANDMEMBER", "one", "-2"],
    ["SRANDMEMBER", "nokey"], ["SRANDMEMBER", "nokey", "3"], ["SPOP", "one"], ["SPOP", "one"], ["SPOP", "nokey", "2"],
    ["SADD", "one", "y"], ["SPOP", "one", "5"], ["SPOP", "one", "0"], ["SSCAN", "s", "0"], ["SSCAN", "nokey", "0"],
    ["SET", "str", "v"], ["SMEMBERS", "str"], ["SINTERCARD", "0", "s"],
]

ZSETS = [
    ["ZADD", "z", "1", "a", "2.5", "b", "3", "c", "-inf", "m", "inf", "p"], ["ZADD", "z", "INCR", "1", "a"],
    ["ZADD", "z", "NX", "INCR", "1", "a"], ["ZADD", "z", "XX", "CH", "5", "a"], ["ZADD", "z", "1", "nan"],
    ["ZINCRBY", "z", "0.25", "c"], ["ZINCRBY", "z", "1", "nosuch"], ["ZCARD", "z"], ["ZCARD", "nokey"],
    ["ZCOUNT", "z", "-inf", "+inf"], ["ZCOUNT", "z", "(1", "3"], ["ZLEXCOUNT", "z", "-", "+"],
    ["ZSCORE", "z", "a"], ["ZSCORE", "z", "m"], ["ZSCORE", "z", "nosuch"], ["ZSCORE", "nokey", "a"],
    ["ZMSCORE", "z", "a", "nosuch", "p"], ["ZMSCORE", "nokey", "a"], ["ZRANK", "z", "b"], ["ZRANK", "z", "nosuch"],
    ["ZREVRANK", "z", "b"], ["ZRANGE", "z", "0", "-1"], ["ZRANGE", "z", "0", "-1", "WITHSCORES"],
    ["ZRANGE", "z", "(1", "3", "BYSCORE", "WITHSCORES"], ["ZRANGE", "z", "0", "-1", "REV", "WITHSCORES"],
    ["ZRANGE", "nokey", "0", "-1", "WITHSCORES"], ["ZREVRANGE", "z", "0", "1", "WITHSCORES"],
    ["ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES", "LIMIT", "1", "2"], ["ZREVRANGEBYSCORE", "z", "+inf", "2"],
    ["ZADD", "lex", "0", "a", "0", "b", "0", "c"], ["ZRANGEBYLEX", "lex", "[a", "(c"], ["ZREVRANGEBYLEX", "lex", "+", "-"],
    ["ZRANGESTORE", "zd", "z", "0", "1"], ["ZRANGE", "zd", "0", "-1", "WITHSCORES"], ["ZREM", "zd", "m", "x"],
    ["ZREMRANGEBYRANK", "zd", "0", "0"], ["ZREMRANGEBYSCORE", "z", "10", "20"], ["ZREMRANGEBYLEX", "lex", "[a", "[a"],
    ["ZADD", "z2", "1", "a", "2", "x"], ["ZUNION", "2", "z", "z2", "WITHSCORES"], ["ZINTER", "2", "z", "z2", "WITHSCORES"],
    ["ZINTER", "2", "z", "z2"], ["ZDIFF", "2", "z", "z2", "WITHSCORES"], ["ZINTERCARD", "2", "z", "z2"],
    ["ZUNIONSTORE", "zu", "2", "z", "z2", "WEIGHTS", "1", "2"], ["ZINTERSTORE", "zi", "2", "z", "z2", "AGGREGATE", "MAX"],
    ["ZDIFFSTORE", "zf", "2", "z", "z2"], ["ZRANGE", "zu", "0", "-1", "WITHSCORES"],
    ["ZPOPMIN", "z"], ["ZPOPMIN", "z", "2"], ["ZPOPMAX", "z"], ["ZPOPMAX", "nokey"], ["ZPOPMAX", "nokey", "2"],
    ["ZPOPMIN", "z", "0"], ["ZMPOP", "2", "nokey", "z2", "MIN", "COUNT", "5"], ["ZMPOP", "1", "nokey", "MAX"],
    ["ZADD", "bz", "1", "a", "2", "b", "3", "c"], ["BZPOPMIN", "nokey", "bz", "0"], ["BZPOPMAX", "bz", "0"],
    ["BZMPOP", "0", "1", "bz", "MIN"], ["BZPOPMIN", "nokey", "0.01"], ["BZMPOP", "0.01", "1", "nokey", "MAX"],
    ["ZADD", "one", "1.5", "only"], ["ZRANDMEMBER", "one"], ["ZRANDMEMBER", "one", "2", "WITHSCORES"],
    ["ZRANDMEMBER", "one", "-2", "WITHSCORES"], ["ZRANDMEMBER", "nokey"], ["ZRANDMEMBER", "nokey", "2", "WITHSCORES"],
    ["ZRANDMEMBER", "one", "0", "WITHSCORES"], ["ZSCAN", "one", "0"], ["ZSCAN", "nokey", "0"],
    ["ZADD", "z", "x", "a"], ["ZRANGE", "z", "0"],
]

GEO = [
    ["GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"],
    ["GEOADD", "g", "CH", "13.361389", "38.115556", "Palermo"], ["GEODIST", "g", "Palermo", "Catania"],
    ["GEODIST", "g", "Palermo", "Catania", "km"], ["GEODIST", "g", "Palermo", "nosuch"], ["GEOHASH", "g", "Palermo", "nosuch"],
    ["GEOPOS", "g", "Palermo", "nosuch"], ["GEOPOS", "nokey", "a"],
    ["GEORADIUS", "g", "15", "37", "200", "km", "WITHDIST", "WITHCOORD", "WITHHASH", "ASC"],
    ["GEORADIUS", "g", "15", "37", "200", "km", "ASC"], ["GEORADIUS_RO", "g", "15", "37", "200", "km", "WITHDIST", "ASC"],
    ["GEORADIUSBYMEMBER", "g", "Palermo", "200", "km", "WITHDIST", "ASC"],
    ["GEORADIUSBYMEMBER_RO", "g", "Palermo", "200", "km", "WITHCOORD", "COUNT", "1", "ASC"],
    ["GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km", "ASC", "WITHDIST", "WITHHASH"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "m"], ["GEOSEARCH", "nokey", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"],
    ["GEOSEARCHSTORE", "gs", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC", "STOREDIST"],
    ["ZRANGE", "g", "0", "-1", "WITHSCORES"], ["GEORADIUS", "g", "15", "37", "200", "km", "STORE", "gs2"],
    ["GEOADD", "g", "200", "100", "x"],
]

HLL = [
    ["PFADD", "h", "a", "b", "c"], ["PFADD", "h", "a"], ["PFADD", "h2"], ["PFCOUNT", "h"], ["PFCOUNT", "h", "nokey"],
    ["PFADD", "h3", "x", "a"], ["PFMERGE", "hm", "h", "h3"], ["PFCOUNT", "hm"], ["PFDEBUG", "ENCODING", "h"],
    ["PFDEBUG", "GETREG", "h2"], ["PFDEBUG", "DECODE", "h"], ["SET", "str", "v"], ["PFCOUNT", "str"], ["PFSELFTEST"],
]

STREAMS = [
    ["XADD", "s", "1-1", "f", "v"], ["XADD", "s", "2-1", "f", "v", "g", "w"], ["XADD", "s", "1-1", "f", "v"],
    ["XADD", "s", "NOMKSTREAM", "3-0", "a", "b"], ["XADD", "nokey", "NOMKSTREAM", "*", "a", "b"],
    ["XLEN", "s"], ["XLEN", "nokey"], ["XRANGE", "s", "-", "+"], ["XRANGE", "s", "-", "+", "COUNT", "1"],
    ["XRANGE", "nokey", "-", "+"], ["XREVRANGE", "s", "+", "-"], ["XREAD", "COUNT", "10", "STREAMS", "s", "0"],
    ["XREAD", "STREAMS", "s", "nokey", "0", "0"], ["XREAD", "STREAMS", "s", "$"], ["XREAD", "STREAMS", "nokey", "0"],
    ["XREAD", "BLOCK", "10", "STREAMS", "nokey", "$"],
    ["XGROUP", "CREATE", "s", "g", "0"], ["XGROUP", "CREATE", "s", "g", "0"], ["XGROUP", "CREATE", "nokey", "g", "$"],
    ["XGROUP", "CREATE", "s2", "g", "$", "MKSTREAM"], ["XGROUP", "CREATECONSUMER", "s", "g", "c0"],
    ["XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "s", ">"], ["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", "0"],
    ["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s2", ">"], ["XREADGROUP", "GROUP", "g", "c1", "BLOCK", "10", "STREAMS", "s2", ">"],
    ["XREADGROUP", "GROUP", "nog", "c1", "STREAMS", "s", ">"],
    ["XPENDING", "s", "g"], ["XPENDING", "s2", "g"], ["XPENDING", "s", "g", "-", "+", "10", "c0"],
    (["XPENDING", "s", "g", "-", "+", "10"], redact(rb"c1\r\n:(\d+)\r\n")),
    ["XACK", "s", "g", "1-1", "9-9"], ["XCLAIM", "s", "g", "c2", "0", "2-1", "JUSTID"], ["XCLAIM", "s", "g", "c2", "0", "2-1"],
    ["XCLAIM", "s", "g", "c2", "0", "9-9"], ["XAUTOCLAIM", "s", "g", "c3", "0", "0-0"], ["XAUTOCLAIM", "s", "g", "c3", "0", "0-0", "JUSTID"],
    ["XDEL", "s", "1-1"], ["XAUTOCLAIM", "s", "g", "c3", "0", "0-0"],
    ["XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "1"], ["XGROUP", "DELCONSUMER", "s", "g", "c0"],
    ["XINFO", "GROUPS", "s"], (["XINFO", "CONSUMERS", "s", "g"], lambda b: redact(rb"(?:seen-time|idle)\r\n:(\d+)")(XINFO_NEW(b))),
    (["XINFO", "STREAM", "s"], XINFO_NEW), (["XINFO", "STREAM", "s", "FULL"], lambda b: redact(
        rb"(?:seen-time|delivery-time)\r\n:(\d+)", rb"\*3\r\n\$3\r\n2-1\r\n:(\d+)",
        rb"\*4\r\n\$3\r\n2-1\r\n\$2\r\nc3\r\n:(\d+)")(without_fields("active-time")(b))),
    ["XINFO", "STREAM", "nokey"], ["XGROUP", "DESTROY", "s", "g"], ["XGROUP", "DESTROY", "s", "g"],
    ["XTRIM", "s", "MAXLEN", "1"], ["XTRIM", "s", "MINID", "5-0"], ["XSETID", "s", "10-0"], ["XSETID", "s", "10-0", "ENTRIESADDED", "1"],
    ["XSETID", "s2", "11-0", "ENTRIESADDED", "5", "MAXDELETEDID", "2-2"], (["XINFO", "STREAM", "s2"], XINFO_NEW), ["XADD", "s", "*"],
]

SERVER = [
    ["PING"], ["PING", "hi"], ["ECHO", "x"], (["TIME"], redact(rb"\$\d+\r\n(\d+)")),
    (["LASTSAVE"], number), ["DBSIZE"],
    ["CONFIG", "GET", "maxmemory"], (["CONFIG", "GET", "maxmemory*"], unordered),
    ["CONFIG", "GET", "nosuch"], ["CONFIG", "SET", "maxmemory-samples", "5"], ["CONFIG", "SET", "nosuch", "1"],
    ["CONFIG", "RESETSTAT"], ["COMMAND", "INFO", "get", "nosuch"], (["COMMAND", "DOCS", "get"], docs_shape),
    ["COMMAND", "GETKEYS", "SET", "a", "b"], ["COMMAND", "GETKEYSANDFLAGS", "LMOVE", "a", "b", "LEFT", "RIGHT"],
    ["COMMAND", "GETKEYS", "PING", "x"], ["COMMAND", "INFO", "config|get"], ["COMMAND", "DOCS", "nosuch"],
    (["COMMAND", "COUNT"], number), (["CLIENT", "ID"], number), ["CLIENT", "GETNAME"], ["CLIENT", "SETNAME", "me"],
    ["CLIENT", "GETNAME"], ["CLIENT", "SETNAME", "a b"], ["CLIENT", "GETREDIR"], ["CLIENT", "TRACKINGINFO"],
    ["CLIENT", "NO-EVICT", "on"], ["CLIENT", "NO-EVICT", "off"], ["CLIENT", "KILL", "ID", "999999"],
    ["CLIENT", "KILL", "127.0.0.1:1"], ["CLIENT", "UNBLOCK", "999999"], ["CLIENT", "CACHING", "yes"],
    ["CLIENT", "TRACKING", "on"], ["CLIENT", "TRACKINGINFO"], ["CLIENT", "TRACKING", "off"],
    ["CLIENT", "UNPAUSE"], ["ACL", "WHOAMI"], ["ACL", "USERS"], ["ACL", "SETUSER", "u1", "on", ">pw", "+get", "~k*"],
    (["ACL", "GETUSER", "u1"], without_sanitize_payload), ["ACL", "GETUSER", "nosuch"],
    (["ACL", "LIST"], without_sanitize_payload), ["ACL", "DRYRUN", "u1", "GET", "k1"],
    ["ACL", "DELUSER", "u1", "nosuch"], (["ACL", "CAT", "geo"], unordered),
    (["ACL", "GENPASS"], redact(rb"\r\n([0-9a-f]{64})\r\n")), ["ACL", "GENPASS", "x"], ["ACL", "LOG", "RESET"], ["ACL", "LOG"],
    ["ACL", "SAVE"], ["ACL", "LOAD"], ["SET", "mem", "v"], (["MEMORY", "USAGE", "mem"], number), ["MEMORY", "USAGE", "nokey"],
    ["MEMORY", "PURGE"], ["LATENCY", "LATEST"], ["LATENCY", "HISTORY", "command"], ["LATENCY", "RESET"],
    ["LATENCY", "HISTOGRAM", "nosuch"], ["LATENCY", "GRAPH", "command"], ["SLOWLOG", "RESET"],
    ["SLOWLOG", "GET", "0"], (["ROLE"], redact(rb"master\r\n:(\d+)\r\n")), ["WAIT", "0", "0"], ["READONLY"], ["READWRITE"],
    ["PUBSUB", "CHANNELS"], ["PUBSUB", "NUMSUB", "a", "b"], ["PUBSUB", "NUMPAT"], ["PUBSUB", "SHARDCHANNELS"],
    ["PUBSUB", "SHARDNUMSUB", "a"], ["PUBLISH", "ch", "m"], ["SPUBLISH", "ch", "m"], ["SAVE"],
    (["OBJECT", "HELP"], help_shape), (["CLIENT", "HELP"], help_shape), (["COMMAND", "HELP"], help_shape),
    ["ECHO"], ["NOSUCHCOMMAND", "x"], ["GET"], ["CONFIG"], ["CONFIG", "NOSUCH"], ["AUTH", "x"], ["AUTH", "u", "x"],
    (["SLOWLOG", "LEN"], number), ["RESET"],
]

SCRIPTING = [
    ["EVAL", "return {1, 'two', {3}}", "0"], ["EVAL", "return redis.call('GET', 'nokey')", "0"],
    ["EVAL", "return {err='boom'}", "0"], ["EVAL", "return redis.status_reply('FINE')", "0"],
    ["EVAL", "return 3.99", "0"], ["EVAL", "return true", "0"], ["EVAL", "return false", "0"],
    ["EVAL", "return {1, nil, 3}", "0"], ["EVAL", "return redis.call('INCR', KEYS[1])", "1", "n"],
    ["EVAL_RO", "return redis.call('GET', KEYS[1])", "1", "n"], ["EVAL_RO", "return redis.call('SET', KEYS[1], 1)", "1", "n"],
    ["SCRIPT", "LOAD", "return 'x'"], ["EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"],
    ["EVALSHA_RO", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"], ["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"],
    ["SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "ffffffffffffffffffffffffffffffffffffffff"],
    ["SCRIPT", "FLUSH"], ["SCRIPT", "KILL"], ["EVAL", "return redis.call('nosuch')", "0"],
    ["EVAL", "return redis.pcall('HGET', 'n', 'x')", "0"],
    ["FUNCTION", "FLUSH"],
    ["FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function(k, a) return a[1] end)"],
    ["FUNCTION", "LOAD", "#!lua name=lib2\n"
     "redis.register_function{function_name='g', callback=function() return 1 end, flags={'no-writes'}}"],
    ["FCALL", "f", "0", "arg"], ["FCALL_RO", "g", "0"], ["FCALL_RO", "f", "0", "x"], ["FCALL", "nosuch", "0"],
    ["FUNCTION", "LIST", "LIBRARYNAME", "lib2"], ["FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "lib2"], ["FUNCTION", "STATS"],
    ["FUNCTION", "KILL"], ["FUNCTION", "DELETE", "lib"], ["FUNCTION", "DELETE", "lib"], ["FUNCTION", "LIST"],
    ["FUNCTION", "RESTORE", "bad"],
]

TRANSACTIONS = [
    ["MULTI"], ["SET", "a", "1"], ["INCR", "a"], ["HGETALL", "a"], ["GET", "nokey"], ["ZADD", "z", "1.5", "m"],
    ["ZSCORE", "z", "m"], ["HSET", "h", "f", "v"], ["HGETALL", "h"], ["SMISMEMBER", "nokey", "a"], ["EXEC"],
    ["MULTI"], ["NOSUCH"], ["SET", "a", "2"], ["EXEC"], ["GET", "a"], ["MULTI"], ["MULTI"], ["DISCARD"], ["DISCARD"],
    ["EXEC"], ["WATCH", "a"], ["UNWATCH"], ["MULTI"], ["WATCH", "a"], ["DISCARD"], ["MULTI"], ["EXEC"],
]


@pytest.mark.parametrize("name,cmds", [
    ("strings", STRINGS), ("bitmaps", BITMAPS), ("keys", KEYS), ("hashes", HASHES), ("lists", LISTS),
    ("sets", SETS), ("zsets", ZSETS), ("geo", GEO), ("hll", HLL), ("streams", STREAMS), ("server", SERVER),
    ("scripting", SCRIPTING), ("transactions", TRANSACTIONS),
])
def test_every_command_same_as_redis(name, cmds, same_as_redis):
    same_as_redis(cmds)


def text_kind(buf):
    """A free-text reply (INFO, CLIENT LIST, MEMORY DOCTOR, ...): its RESP
    type and, for a verbatim string, its format; not its text."""
    if buf[:1] == b"=":
        return b"=" + buf[buf.index(b"\r\n") + 2:][:4]
    return buf[:1]


def map_keys(buf):
    """A map (RESP3) or flat field/value array (RESP2): its header, its keys
    in order and the RESP type of each value, not the values."""
    head, items, rest = _chunks(buf)
    out = [head[:1]]
    for i in range(0, len(items), 2):
        out.append(items[i] + items[i + 1][:1])
    return b"|".join(out) + rest


# MEMORY STATS' fields of Redis 7.4 (test_newer_info.py checks them): left
# out of the comparison with 7.0.15
_MEMORY_STATS_74 = (b"overhead.db.hashtable.lut", b"overhead.db.hashtable.rehashing",
                    b"db.dict.rehashing.count", b"allocator.muzzy")


def memory_stats_70(buf):
    return b"|".join(p for p in map_keys(buf).split(b"|") if not any(f in p for f in _MEMORY_STATS_74))


INTROSPECTION = [
    (["INFO"], text_kind), (["INFO", "server", "clients"], text_kind), (["INFO", "nosuchsection"], None),
    (["CLIENT", "INFO"], text_kind), (["CLIENT", "LIST"], text_kind), (["CLIENT", "LIST", "ID", "1"], None),
    (["MEMORY", "DOCTOR"], text_kind), (["LATENCY", "DOCTOR"], text_kind), (["MEMORY", "MALLOC-STATS"], text_kind),
    (["MEMORY", "STATS"], memory_stats_70), (["HELLO"], map_keys), (["HELLO", "3"], map_keys), (["HELLO", "4"], None),
    (["FUNCTION", "DUMP"], text_kind), (["LOLWUT", "VERSION", "5", "1", "1", "1"], text_kind),
    (["COMMAND", "LIST"], lambda b: b[:1]), (["COMMAND", "LIST", "FILTERBY", "PATTERN", "xr*"], unordered),
    (["COMMAND", "LIST", "FILTERBY", "ACLCAT", "hyperloglog"], unordered), (["COMMAND"], lambda b: b[:1]),
    (["COMMAND", "DOCS"], lambda b: b[:1]), (["CONFIG", "GET", "maxmemory", "save", "appendonly"], unordered),
    (["LATENCY", "HISTOGRAM", "set"], map_keys),
]


def test_introspection_same_as_redis(same_as_redis):
    same_as_redis([c[0] if c[1] is None else c for c in INTROSPECTION])


# -- which commands the test covers -----------------------------------------------------

# Not comparable by sending one command on one connection to two servers:
EXCLUDED = {
    "SHUTDOWN": "ends the server", "DEBUG": "server internals; its subcommands differ by design",
    "MONITOR": "the connection then streams other clients' commands", "SYNC": "replication stream",
    "PSYNC": "replication stream", "REPLCONF": "replication handshake", "REPLICAOF": "changes the server's role",
    "SLAVEOF": "changes the server's role", "FAILOVER": "needs a replica", "MIGRATE": "needs a second server",
    "ASKING": "cluster only", "RESTORE-ASKING": "cluster only", "CLUSTER": "cluster only (cluster mode off)",
    "SENTINEL": "sentinel only", "MODULE": "modules are not loadable", "QUIT": "closes the connection",
    "BGSAVE": "reply depends on a save in progress", "BGREWRITEAOF": "reply depends on a rewrite in progress",
    "CLIENT|PAUSE": "pauses the other clients of the shared server", "CLIENT|REPLY": "suppresses its own reply",
    "SUBSCRIBE": "push messages: test_pubsub_pushes", "PSUBSCRIBE": "push messages: test_pubsub_pushes",
    "SSUBSCRIBE": "push messages: test_pubsub_pushes", "UNSUBSCRIBE": "push messages: test_pubsub_pushes",
    "PUNSUBSCRIBE": "push messages: test_pubsub_pushes", "SUNSUBSCRIBE": "push messages: test_pubsub_pushes",
    "SCRIPT|DEBUG": "starts the Lua debugger session", "ACL|HELP": "our own help text (shape as OBJECT HELP)",
    "CONFIG|REWRITE": "needs a config file", "FUNCTION|HELP": "our own help text",
    "SCRIPT|HELP": "our own help text", "SLOWLOG|HELP": "our own help text", "LATENCY|HELP": "our own help text",
    "MEMORY|HELP": "our own help text", "PUBSUB|HELP": "our own help text", "XGROUP|HELP": "our own help text",
    "XINFO|HELP": "our own help text", "CONFIG|HELP": "our own help text",
}

def test_every_command_is_covered_or_excluded():
    groups = [STRINGS, BITMAPS, KEYS, HASHES, LISTS, SETS, ZSETS, GEO, HLL, STREAMS, SERVER, SCRIPTING, MORE,
              TRANSACTIONS, INTROSPECTION, LUA]
    with open(COMMANDS_JSON) as f:
        names = set(json.load(f))
    covered = set()
    for group in groups:
        for c in group:
            argv = c[0] if isinstance(c, tuple) else c
            name = argv[0].upper()
            covered.add(name)
            if len(argv) > 1:
                covered.add("%s|%s" % (name, argv[1].upper()))
    missing = sorted(n for n in names if n not in covered and n not in EXCLUDED
                     and not (n.split("|")[0] in EXCLUDED))
    assert missing == []


# -- MULTI/EXEC and Lua in RESP3 -------------------------------------------------------

def test_multi_exec_shapes_same_as_redis(same_as_redis):
    same_as_redis([
        ["WATCH", "a"], ["SET", "a", "1"], ["MULTI"], ["GET", "a"], ["EXEC"],
        ["MULTI"], ["SET", "a"], ["GET", "a"], ["EXEC"],
        ["MULTI"], ["HSET", "h", "f", "1"], ["HGETALL", "h"], ["SMEMBERS", "nokey"], ["ZSCORE", "nokey", "m"],
        ["ZADD", "z", "1.5", "m"], ["ZRANGE", "z", "0", "-1", "WITHSCORES"], ["CONFIG", "GET", "maxmemory"],
        ["LPOP", "h"], ["EVAL", "return {map={a=1}}", "0"], ["EXEC"],
        ["MULTI"], ["SUBSCRIBE", "x"], ["EXEC"], ["MULTI"], ["EXEC", "x"], ["DISCARD"],
    ])


LUA = [
    # values from commands, converted with redis.setresp(3) (and without)
    ["HSET", "h", "f", "v"], ["SADD", "s", "1"], ["ZADD", "z", "1.5", "m"],
    ["EVAL", "redis.setresp(3); return redis.call('HGETALL', KEYS[1])", "1", "h"],
    ["EVAL", "redis.setresp(3); local t = redis.call('HGETALL', KEYS[1]); return t['map']['f']", "1", "h"],
    ["EVAL", "redis.setresp(3); return redis.call('SMEMBERS', KEYS[1])", "1", "s"],
    ["EVAL", "redis.setresp(3); local t = redis.call('SMEMBERS', KEYS[1]); return type(t['set'])", "1", "s"],
    ["EVAL", "redis.setresp(3); return redis.call('ZSCORE', KEYS[1], 'm')", "1", "z"],
    ["EVAL", "redis.setresp(3); return redis.call('ZSCORE', KEYS[1], 'm')['double']", "1", "z"],
    ["EVAL", "redis.setresp(3); return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')", "1", "z"],
    ["EVAL", "redis.setresp(3); return redis.call('GET', 'nokey')", "0"],
    ["EVAL", "redis.setresp(3); return redis.call('GET', 'nokey') == nil", "0"],
    ["EVAL", "redis.setresp(3); return redis.call('SISMEMBER', KEYS[1], '1')", "1", "s"],
    ["EVAL", "redis.setresp(3); return redis.call('CLIENT', 'TRACKINGINFO')", "0"],
    ["EVAL", "redis.setresp(3); local t = redis.call('LATENCY', 'DOCTOR'); return t['verbatim_string']['format']", "0"],
    ["EVAL", "redis.setresp(2); return redis.call('HGETALL', KEYS[1])", "1", "h"],
    ["EVAL", "redis.setresp(2); return redis.call('ZSCORE', KEYS[1], 'm')", "1", "z"],
    ["EVAL", "redis.setresp(4)", "0"],
    ["EVAL", "redis.setresp(3); return redis.pcall('HGET', KEYS[1], 'f')", "1", "z"],
    # values built in Lua, sent as RESP3 (or their RESP2 forms)
    ["EVAL", "return {map={a=1}}", "0"], ["EVAL", "return {set={a=true}}", "0"],
    ["EVAL", "return {double=1.5}", "0"], ["EVAL", "return {double=0.25}", "0"], ["EVAL", "return {double=3}", "0"],
    ["EVAL", "return {big_number='123456789012345678901234567890'}", "0"],
    ["EVAL", "return {verbatim_string={format='txt', string='hello'}}", "0"],
    ["EVAL", "redis.setresp(3); return true", "0"], ["EVAL", "redis.setresp(3); return false", "0"],
    ["EVAL", "return true", "0"], ["EVAL", "return false", "0"], ["EVAL", "return nil", "0"],
    ["EVAL", "return {1, {map={x={set={'y'}}}}, {double=2.5}}", "0"],
    ["EVAL", "return {err='ERR custom'}", "0"], ["EVAL", "return {ok='fine'}", "0"],
    ["EVAL", "return redis.error_reply('My Error')", "0"],
]


def test_lua_resp3_conversions_same_as_redis(same_as_redis):
    same_as_redis(LUA)


# -- push messages -----------------------------------------------------------------------

def _pubsub_scenario(port, proto):
    out = []
    a = RespConn(port, resp3=(proto == 3))
    b = RespConn(port)
    try:
        rd = a.read
        a.send("SUBSCRIBE", "c1", "c2")
        out += [rd(), rd()]
        a.send("PSUBSCRIBE", "p*")
        out.append(rd())
        a.send("SSUBSCRIBE", "s1")
        out.append(rd())
        a.send("PING")
        out.append(rd())
        a.send("PING", "x")
        out.append(rd())
        a.send("GET", "k")
        out.append(rd())
        out.append(b.call("PUBLISH", "c1", "hello"))
        out.append(rd())
        out.append(b.call("PUBLISH", "p1", "pm"))
        out.append(rd())
        out.append(b.call("SPUBLISH", "s1", "sm"))
        out.append(rd())
        out.append(b.call("PUBSUB", "NUMSUB", "c1", "c9"))
        out.append(b.call("PUBSUB", "SHARDNUMSUB", "s1"))
        out.append(b.call("PUBSUB", "NUMPAT"))
        a.send("UNSUBSCRIBE", "c1")
        out.append(rd())
        a.send("UNSUBSCRIBE")
        out.append(rd())
        a.send("PUNSUBSCRIBE")
        out.append(rd())
        a.send("SUNSUBSCRIBE")
        out.append(rd())
        a.send("UNSUBSCRIBE")
        out.append(rd())
        a.send("PUNSUBSCRIBE", "q*")
        out.append(rd())
        a.send("SUNSUBSCRIBE")
        out.append(rd())
        a.send("PING")
        out.append(rd())
        # keyspace notifications are pushes too
        out.append(b.call("CONFIG", "SET", "notify-keyspace-events", "KEA"))
        try:
            a.send("SUBSCRIBE", "__keyspace@0__:nk")
            out.append(rd())
            out.append(b.call("SET", "nk", "v"))
            out.append(rd())
            a.send("PSUBSCRIBE", "__keyevent@0__:*")
            out.append(rd())
            out.append(b.call("DEL", "nk"))
            out += [rd(), rd()]
        finally:
            b.call("CONFIG", "SET", "notify-keyspace-events", "")
    finally:
        a.close()
        b.close()
    return out


def _tracking_scenario(port, proto):
    out = []
    a = RespConn(port, resp3=True)
    b = RespConn(port)
    r = RespConn(port, resp3=(proto == 3))
    try:
        b.call("FLUSHALL")
        b.call("MSET", "k1", "v", "k2", "v")
        out.append(a.call("CLIENT", "TRACKING", "on"))
        out.append(a.call("GET", "k1"))
        out.append(a.call("MGET", "k1", "k2"))
        out.append(b.call("SET", "k1", "w"))
        out.append(a.read())
        out.append(b.call("DEL", "k2"))
        out.append(a.read())
        out.append(a.call("GET", "k1"))
        out.append(b.call("FLUSHALL"))
        out.append(a.read())
        # the tracking client's own write (no NOLOOP): the push and the reply
        out.append(a.call("GET", "k3"))
        a.send("SET", "k3", "x")
        out += [a.read(), a.read()]
        out.append(a.call("CLIENT", "TRACKING", "off"))
        out.append(a.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p:"))
        out.append(b.call("SET", "p:1", "x"))
        out.append(a.read())
        out.append(b.call("MSET", "p:2", "x", "q", "y"))
        out.append(a.read())
        out.append(a.call("CLIENT", "TRACKING", "off"))
        # redirected to a connection of protocol ``proto`` subscribed to
        # __redis__:invalidate (RESP2: a pub/sub message)
        rid = r.call_value("CLIENT", "ID")
        r.send("SUBSCRIBE", "__redis__:invalidate")
        out.append(r.read())
        out.append(a.call("CLIENT", "TRACKING", "on", "REDIRECT", str(rid)))
        out.append(a.call("GET", "k1"))
        out.append(b.call("SET", "k1", "z"))
        out.append(r.read())
        out.append(b.call("FLUSHALL"))
        out.append(r.read())
        out.append(a.call("CLIENT", "TRACKING", "off"))
    finally:
        a.close()
        b.close()
        r.close()
    return out


def _tracking_multi_script_scenario(port, proto):
    """Invalidations of the tracking client's own writes in MULTI/EXEC and
    scripts come after the reply (the pushes a RESP3 client gets)."""
    a = RespConn(port, resp3=(proto == 3))
    b = RespConn(port)
    out = []
    try:
        b.call("FLUSHALL")
        if proto == 2:
            rid = b.call_value("CLIENT", "ID")
            b.send("SUBSCRIBE", "__redis__:invalidate")
            out.append(b.read())
            out.append(a.call("CLIENT", "TRACKING", "on", "REDIRECT", str(rid)))
            rd = b.read
        else:
            out.append(a.call("CLIENT", "TRACKING", "on"))
            rd = a.read
        out.append(a.call("GET", "k"))
        a.send("MULTI")
        a.send("SET", "k", "1")
        a.send("GET", "k")
        a.send("EXEC")
        out += [a.read() for _ in range(4)]
        out.append(rd())
        out.append(a.call("GET", "k"))
        a.send("EVAL", "redis.call('SET', 'k', 2); return redis.call('GET', 'k')", "1", "k")
        out.append(a.read())
        out.append(rd())
        out.append(a.call("GET", "k"))
        a.send("EVAL", "redis.call('SET', 'k', 2); redis.call('GET', 'k'); redis.call('SET', 'k', 3); return 1", "1", "k")
        out.append(a.read())
        out += [rd(), rd()]
        out.append(a.call("CLIENT", "TRACKING", "off"))
    finally:
        a.close()
        b.close()
    return out


@pytest.mark.parametrize("scenario", [_pubsub_scenario, _tracking_scenario, _tracking_multi_script_scenario])
@pytest.mark.parametrize("proto", [2, 3])
def test_pushes_same_as_redis(scenario, proto, server, redis_server):
    ours = scenario(server.port, proto)
    theirs = scenario(redis_server.port, proto)
    diffs = ["%d:\n  ours:      %r\n  reference: %r" % (i, a, b)
             for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
    assert len(ours) == len(theirs) and not diffs, "\n".join(diffs)


# -- more shapes: every RESP3 type DEBUG PROTOCOL makes, SLOWLOG entries, tracking info --

def slowlog_entries(buf):
    """SLOWLOG GET: ids, times, durations and the client's address/name
    redacted; the shapes and the logged arguments kept."""
    buf = re.sub(rb"\*6\r\n:\d+\r\n:\d+\r\n:\d+\r\n", b"*6\r\n:#\r\n:#\r\n:#\r\n", buf)
    # ours: Redis 8.10's 7th field, the argument count (test_slowlog_argc checks it)
    buf = re.sub(rb"\*7\r\n:\d+\r\n:\d+\r\n:\d+\r\n(\*\d+\r\n(?:\$\d+\r\n[^\r]*\r\n)*\$\d+\r\n[^\r]*\r\n"
                 rb"\$\d+\r\n[^\r]*\r\n):\d+\r\n", rb"*6\r\n:#\r\n:#\r\n:#\r\n\1", buf)
    return _fix_lengths(re.sub(rb"\r\n\$\d+\r\n(127\.0\.0\.1:\d+)\r\n", b"\r\n$1\r\n#\r\n", buf))


MORE = [
    ["DEBUG", "PROTOCOL", "string"], ["DEBUG", "PROTOCOL", "integer"], ["DEBUG", "PROTOCOL", "double"],
    ["DEBUG", "PROTOCOL", "bignum"], ["DEBUG", "PROTOCOL", "null"], ["DEBUG", "PROTOCOL", "array"],
    ["DEBUG", "PROTOCOL", "set"], ["DEBUG", "PROTOCOL", "map"], ["DEBUG", "PROTOCOL", "true"],
    ["DEBUG", "PROTOCOL", "false"], ["DEBUG", "PROTOCOL", "verbatim"], ["DEBUG", "PROTOCOL", "nosuch"],
    ["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a", "PREFIX", "b", "NOLOOP"],
    (["CLIENT", "TRACKINGINFO"], None), ["CLIENT", "TRACKING", "off"], ["CLIENT", "TRACKING", "on", "OPTIN"],
    ["CLIENT", "CACHING", "yes"], ["CLIENT", "TRACKINGINFO"], ["CLIENT", "CACHING", "no"], ["CLIENT", "TRACKING", "off"],
    ["CLIENT", "TRACKING", "on", "OPTOUT"], ["CLIENT", "TRACKINGINFO"], ["CLIENT", "TRACKING", "off"],
    ["CLIENT", "TRACKING", "on", "REDIRECT", "999999"], ["CLIENT", "TRACKINGINFO"],
    ["CONFIG", "SET", "slowlog-log-slower-than", "0"], ["SLOWLOG", "RESET"], ["SET", "sk", "v"], ["CLIENT", "SETNAME", "nm"],
    ["HSET", "sh", "f", "v"], ["CONFIG", "SET", "slowlog-log-slower-than", "10000"],
    (["SLOWLOG", "GET", "3"], slowlog_entries), ["SLOWLOG", "RESET"],
    (["HELLO", "3", "SETNAME", "hn"], map_keys), ["CLIENT", "GETNAME"], (["HELLO", "3", "AUTH", "default", "any"], map_keys),
    ["HELLO", "2", "AUTH", "nosuch", "x"], ["HELLO", "x"],
    # an object starts at the LFU counter's initial value; the first access
    # raises it for certain (LFU_INIT_VAL: probability 1); re-created keys
    # start afresh
    ["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"], ["SET", "lf", "v"], ["OBJECT", "FREQ", "lf"],
    ["HSET", "lh", "f", "v"], ["OBJECT", "FREQ", "lh"], ["GET", "lf"], ["OBJECT", "FREQ", "lf"], ["DEL", "lf"],
    ["SET", "lf", "v", "EX", "100"], ["OBJECT", "FREQ", "lf"], ["CONFIG", "SET", "maxmemory-policy", "noeviction"],
    ["XADD", "st", "MAXLEN", "=", "2", "1-0", "a", "1"], ["XADD", "st", "2-0", "a", "2"], ["XADD", "st", "3-0", "a", "3"],
    ["XDEL", "st", "2-0"], (["XINFO", "STREAM", "st"], XINFO_NEW), ["XGROUP", "CREATE", "st", "g", "0"],
    ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "st", ">"], ["XDEL", "st", "3-0"],
    ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "st", "0"], ["XCLAIM", "st", "g", "c", "0", "3-0"],
    ["XAUTOCLAIM", "st", "g", "c", "0", "0-0", "COUNT", "1"], ["XINFO", "GROUPS", "st"],
    ["ZADD", "zz", "1", "a", "2", "b"], ["ZRANGE", "zz", "0", "-1", "WITHSCORES", "REV"],
    ["ZRANGEBYSCORE", "zz", "-inf", "+inf", "WITHSCORES"], ["ZREVRANGEBYSCORE", "zz", "+inf", "-inf", "WITHSCORES"],
    ["ZUNION", "1", "zz", "WITHSCORES", "AGGREGATE", "SUM"], ["ZPOPMIN", "zz", "5"], ["ZPOPMAX", "zz", "5"],
    ["ZADD", "zz", "1", "a", "2", "b"], ["ZMPOP", "1", "zz", "MAX", "COUNT", "2"], ["ZADD", "zz", "inf", "a"],
    ["ZSCORE", "zz", "a"], ["ZINCRBY", "zz", "-inf", "a"], ["ZADD", "zz", "-inf", "b"], ["ZMSCORE", "zz", "b"],
    ["ZRANGE", "zz", "0", "-1", "WITHSCORES"],
    ["GEOADD", "g", "0", "0", "origin"], ["GEOPOS", "g", "origin"], ["GEODIST", "g", "origin", "origin"],
    ["GEOSEARCH", "g", "FROMMEMBER", "origin", "BYRADIUS", "1", "km", "WITHCOORD", "WITHDIST"],
]


def test_more_shapes_same_as_redis(same_as_redis):
    same_as_redis([c[0] if isinstance(c, tuple) and c[1] is None else c for c in MORE])


def _own_pushes_scenario(port, proto):
    """Messages a client's own command sends to itself (PUBLISH to its own
    channel, notifications of its own writes; in MULTI and scripts too):
    Redis 7.2+ writes them after the command's reply (7.0 wrote them
    before it, inside EXEC's array even)."""
    out = []
    a = RespConn(port, resp3=(proto == 3))
    b = RespConn(port)
    try:
        rd = a.read
        b.call("FLUSHALL")
        if proto == 3:
            a.send("SUBSCRIBE", "ch")
            out.append(rd())
            a.send("PUBLISH", "ch", "m")
            out += [rd(), rd()]
            a.send("SSUBSCRIBE", "sch")
            out.append(rd())
            a.send("SPUBLISH", "sch", "m")
            out += [rd(), rd()]
            a.send("PSUBSCRIBE", "c*")
            out.append(rd())
            a.send("PUBLISH", "ch", "m2")
            out += [rd(), rd(), rd()]
            a.send("EVAL", "return redis.call('PUBLISH', 'ch', 'm4')", "0")
            out += [rd(), rd(), rd()]
            out.append(b.call("CONFIG", "SET", "notify-keyspace-events", "KEA"))
            try:
                a.send("SUBSCRIBE", "__keyspace@0__:k")
                out.append(rd())
                a.send("SET", "k", "v")
                out += [rd(), rd()]
                a.send("MULTI")
                out.append(rd())
                for cmd in (("SET", "k", "w"), ("PUBLISH", "ch", "m3"), ("DEL", "k")):
                    a.send(*cmd)
                    out.append(rd())
                a.send("EXEC")
                out += [rd() for _ in range(5)]
            finally:
                b.call("CONFIG", "SET", "notify-keyspace-events", "")
            a.send("RESET")
            out.append(rd())
        # a transaction that subscribes, then publishes to itself
        a.send("MULTI")
        out.append(rd())
        for cmd in (("SUBSCRIBE", "x"), ("PUBLISH", "x", "hi"), ("PUBLISH", "x", "again")):
            a.send(*cmd)
            out.append(rd())
        a.send("EXEC")
        out += [rd(), rd(), rd()]
        a.send("PING")
        out.append(rd())
    finally:
        a.close()
        b.close()
    return out


@pytest.mark.parametrize("proto", [2, 3])
def test_own_pushes_follow_the_reply_same_as_valkey(proto, server, valkey_server):
    ours = _own_pushes_scenario(server.port, proto)
    theirs = _own_pushes_scenario(valkey_server.port, proto)
    diffs = ["%d:\n  ours:      %r\n  reference: %r" % (i, a, b)
             for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
    assert len(ours) == len(theirs) and not diffs, "\n".join(diffs)
