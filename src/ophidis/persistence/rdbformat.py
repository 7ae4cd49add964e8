"""The numbers of the RDB format (Redis's rdb.h): the version we write and
the versions we read, the value types, the opcodes, the quicklist node
containers; ``RdbError``, what every reader raises; module type names.

The encodings of the values are in rdbencode.py (writing) and
rdbdecode.py (reading), their primitives in rdbcodec.py and listpack.py;
the file is rdb.py, the DUMP and FUNCTION DUMP payloads rdbpayload.py.
"""

from __future__ import annotations

RDB_VERSION = 10
MAX_READ_VERSION = 12
# the version of a file (or DUMP payload) holding a hash with field TTLs
# (Redis 7.4's types 24 and 25); everything else is still written as 7.0's
RDB_VERSION_HFE = 12

# value types
T_STRING = 0
T_LIST = 1
T_SET = 2
T_ZSET = 3
T_HASH = 4
T_ZSET_2 = 5
T_MODULE = 6
T_MODULE_2 = 7
T_HASH_ZIPMAP = 9
T_LIST_ZIPLIST = 10
T_SET_INTSET = 11
T_ZSET_ZIPLIST = 12
T_HASH_ZIPLIST = 13
T_LIST_QUICKLIST = 14
T_STREAM_LISTPACKS = 15
T_HASH_LISTPACK = 16
T_ZSET_LISTPACK = 17
T_LIST_QUICKLIST_2 = 18
T_STREAM_LISTPACKS_2 = 19
T_SET_LISTPACK = 20
T_STREAM_LISTPACKS_3 = 21
T_HASH_METADATA_PRE_GA = 22         # hashes with field TTLs (7.4 release candidates: absolute TTLs,
T_HASH_LISTPACK_EX_PRE_GA = 23      # no min-expire before the value)
T_HASH_METADATA = 24                # hash table: min expire, then [ttl][field][value] (ttl relative)
T_HASH_LISTPACK_EX = 25             # listpack of field, value, ttl after a min expire
HFE_TYPES = (T_HASH_METADATA_PRE_GA, T_HASH_LISTPACK_EX_PRE_GA, T_HASH_METADATA, T_HASH_LISTPACK_EX)
# Redis 8.6's stream with its idempotency state (after the groups: duration,
# max size, producers with their (iid, entry ID) records, the two counters)
# and 8.8's with XNACK's released entries (per group, after the consumers)
T_STREAM_LISTPACKS_4 = 26
T_STREAM_LISTPACKS_5 = 27
# Redis 8.8's array (rdb.h RDB_TYPE_ARRAY): count, an insert-cursor flag and
# cursor, then (index, element tag, element) in ascending index order
T_ARRAY = 28

TYPE_NAMES = {
    T_STRING: "string", T_LIST: "list", T_SET: "set", T_ZSET: "zset", T_HASH: "hash",
    T_ZSET_2: "zset", T_MODULE: "module", T_MODULE_2: "module", T_HASH_ZIPMAP: "hash",
    T_LIST_ZIPLIST: "list", T_SET_INTSET: "set", T_ZSET_ZIPLIST: "zset", T_HASH_ZIPLIST: "hash",
    T_LIST_QUICKLIST: "list", T_STREAM_LISTPACKS: "stream", T_HASH_LISTPACK: "hash",
    T_ZSET_LISTPACK: "zset", T_LIST_QUICKLIST_2: "list", T_STREAM_LISTPACKS_2: "stream",
    T_SET_LISTPACK: "set", T_STREAM_LISTPACKS_3: "stream",
    T_HASH_METADATA_PRE_GA: "hash", T_HASH_LISTPACK_EX_PRE_GA: "hash", T_HASH_METADATA: "hash",
    T_HASH_LISTPACK_EX: "hash", T_ARRAY: "array",
    T_STREAM_LISTPACKS_4: "stream", T_STREAM_LISTPACKS_5: "stream",
}

# opcodes
OP_FUNCTION2 = 245
OP_FUNCTION = 246
OP_MODULE_AUX = 247
OP_IDLE = 248
OP_FREQ = 249
OP_AUX = 250
OP_RESIZEDB = 251
OP_EXPIRETIME_MS = 252
OP_EXPIRETIME = 253
OP_SELECTDB = 254
OP_EOF = 255


QL_PLAIN, QL_PACKED = 1, 2


class RdbError(Exception):
    """A corrupt or truncated RDB (or DUMP payload)."""

    def __init__(self, msg, offset=None, truncated=False, quiet=False):
        super().__init__(msg)
        self.msg = msg
        self.offset = offset
        self.truncated = truncated
        self.quiet = quiet      # refused by RESTORE without a log line (an unknown type, an empty value)

    def __str__(self):
        if self.offset is None:
            return self.msg
        return "%s (at offset %d)" % (self.msg, self.offset)



_MODULE_CHARSET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def module_name(mid: int) -> str:
    mid >>= 10
    out = []
    for _ in range(9):
        out.append(_MODULE_CHARSET[mid & 63])
        mid >>= 6
    return "".join(reversed(out))


def module_id(name: str, encver: int) -> int:
    """moduleTypeEncodeId: 9 characters of 6 bits each, then 10 bits of
    encoding version."""
    mid = 0
    for ch in name:
        mid = (mid << 6) | _MODULE_CHARSET.index(ch)
    return (mid << 10) | encver


