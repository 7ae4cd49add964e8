"""Values to RDB bytes, as Redis 7.0 writes them (rdbSaveObject): the
encodings Redis would choose (listpack, intset, quicklist nodes filled by
``list-max-listpack-size`` and compressed by ``list-compress-depth``),
strings compressed with LZF (``rdbcompression``).

``Encoder.type_and_value`` gives a value's type byte and its bytes; the
file (rdb.py) and the DUMP payload (rdbpayload.py) are built from it.
"""

from __future__ import annotations

import math
import struct

from ..dtoa import fpconv
from ..keyspace.db import MODULE_CLASSES, EmbStr
from ..types.array import KIND_FLOAT, KIND_INT, ArrayValue, value_kind
from ..types.containers import HashValue, ListValue, SetValue
from ..types.stream import IDMP_DURATION, IDMP_MAXSIZE, MASK64, Idmp, StreamValue, id_key
from ..types.zset import ZSetValue
from .listpack import intset_encode, lp_build, lp_encode, lp_entry
from .rdbcodec import enc_len, enc_string, redis_lzf
from . import modulerecord
from .rdbformat import (T_MODULE_2,
                        QL_PACKED, QL_PLAIN, T_ARRAY, T_HASH, T_HASH_LISTPACK, T_HASH_LISTPACK_EX, T_HASH_METADATA,
                        T_LIST_QUICKLIST_2, T_SET, T_SET_INTSET, T_STREAM_LISTPACKS_2, T_STREAM_LISTPACKS_3,
                        T_STREAM_LISTPACKS_4, T_STREAM_LISTPACKS_5, T_STRING, T_ZSET_2, T_ZSET_LISTPACK)


def _score_entry(d: float) -> bytes:
    if not math.isinf(d) and -(2 ** 62) <= d <= 2 ** 62 and d == int(d):
        return lp_entry(int(d))
    return lp_entry(fpconv(d))


def _pairs_listpack(pairs, second, compress) -> bytes:
    """The listpack of a hash's fields and values (a zset's members and
    scores): each pair's first as an entry, then ``second(its second)``."""
    ents = []
    for first, other in pairs:
        ents.append(lp_entry(first))
        ents.append(second(other))
    return enc_string(lp_build(ents), compress)


def hash_with_ttls(v, compress):
    """Redis 7.4's hash with field TTLs: RDB_TYPE_HASH_LISTPACK_EX (the
    earliest expiry in ms, then a listpack of field, value, expiry time with
    0 for none) or RDB_TYPE_HASH_METADATA (the earliest expiry, the count,
    then per field its TTL as a length, 0 for none or 1 + the time after
    the earliest, the field, the value)."""
    t = v.ttl
    lo = min(t.values())
    if not v.ht:
        ents = []
        for f, val in v.items():
            ents.append(lp_entry(f))
            ents.append(lp_entry(val))
            ents.append(lp_entry(t.get(f, 0)))
        return T_HASH_LISTPACK_EX, lo.to_bytes(8, "little") + enc_string(lp_build(ents), compress)
    out = [lo.to_bytes(8, "little"), enc_len(len(v))]
    for f, val in v.items():
        w = t.get(f)
        out.append(enc_len(0 if w is None else w - lo + 1))
        out.append(enc_string(f, compress))
        out.append(enc_string(val, compress))
    return T_HASH_METADATA, b"".join(out)


_OPT = (4096, 8192, 16384, 32768, 65536)


def quicklist_nodes(items, fill=-2):
    """Split list items into listpacks the way quicklistPushTail fills nodes
    (a list built by RPUSH).  Returns a list of (container, bytes)."""
    nodes = []
    cur = []        # encoded entries
    cur_sz = 0      # lpBytes of the current node
    limit = _OPT[-fill - 1] if fill < 0 and -fill - 1 < len(_OPT) else None
    for it in items:
        sz = len(it)
        if sz >= 1 << 30:
            if cur:
                nodes.append((QL_PACKED, lp_build(cur)))
                cur, cur_sz = [], 0
            nodes.append((QL_PLAIN, bytes(it)))
            continue
        allow = False
        if cur:
            new_sz = cur_sz + sz + 8
            if limit is not None:
                allow = new_sz <= limit
            elif new_sz > 8192:
                allow = False
            else:
                allow = len(cur) < fill
        e = lp_entry(it)
        if allow:
            cur.append(e)
            cur_sz += len(e)
        else:
            if cur:
                nodes.append((QL_PACKED, lp_build(cur)))
            cur = [e]
            cur_sz = 7 + len(e)
    if cur:
        nodes.append((QL_PACKED, lp_build(cur)))
    return nodes


def _lzf_node(lp):
    """quicklist node compression (list-compress-depth): None if not worth it."""
    if len(lp) < 48:
        return None
    comp = redis_lzf(lp, len(lp))
    if not comp or len(comp) + 8 >= len(lp):
        return None
    return comp


class Encoder:
    """Value serializer bound to the settings that affect encodings."""

    def __init__(self, config=None, compress=None):
        g = (lambda k, d: config[k]) if config is not None else (lambda k, d: d)
        self.compress = g("rdbcompression", True) if compress is None else compress
        self.list_fill = g("list-max-listpack-size", -2)
        self.list_depth = g("list-compress-depth", 0)

    def type_and_value(self, v):
        """(type byte, serialized value) for an in-memory value."""
        cls = v.__class__
        compress = self.compress
        if cls is bytes or cls is bytearray or cls is EmbStr:
            return T_STRING, enc_string(bytes(v) if cls is EmbStr else v, compress)
        if cls is ListValue:
            # a listpack-encoded list: one node, as rdbSaveObject writes it
            nodes = quicklist_nodes(v, self.list_fill) if v.quick or not v else [(QL_PACKED, lp_encode(v))]
            out = [enc_len(len(nodes))]
            depth = self.list_depth
            nn = len(nodes)
            for i, (container, data) in enumerate(nodes):
                out.append(enc_len(container))
                comp = None
                if depth > 0 and container == QL_PACKED and depth <= i < nn - depth:
                    comp = _lzf_node(data)
                if comp is not None:
                    out.append(b"\xc3" + enc_len(len(comp)) + enc_len(len(data)) + comp)
                else:
                    out.append(enc_string(data, compress))
            return T_LIST_QUICKLIST_2, b"".join(out)
        if cls is HashValue:
            if v.ttl:
                return hash_with_ttls(v, compress)
            if not v.ht:
                return T_HASH_LISTPACK, _pairs_listpack(v.items(), lp_entry, compress)
            out = [enc_len(len(v))]
            for f, val in v.items():
                out.append(enc_string(f, compress))
                out.append(enc_string(val, compress))
            return T_HASH, b"".join(out)
        if cls is SetValue:
            if v.enc == b"intset":
                return T_SET_INTSET, enc_string(intset_encode(sorted(int(x) for x in v)), compress)
            out = [enc_len(len(v))]
            for m in v:
                out.append(enc_string(m, compress))
            return T_SET, b"".join(out)
        if cls is ZSetValue or isinstance(v, ZSetValue):
            if not v.skiplist:
                return T_ZSET_LISTPACK, _pairs_listpack(v.items(), _score_entry, compress)
            out = [enc_len(len(v))]
            pack = struct.Struct("<d").pack
            for s, m in reversed(v.sl):
                out.append(enc_string(m, compress))
                out.append(pack(s))
            return T_ZSET_2, b"".join(out)
        if cls is StreamValue:
            t = stream_type(v)
            return t, stream_body(v, compress, t)
        if cls is ArrayValue:
            return T_ARRAY, array_body(v, compress)
        if cls in MODULE_CLASSES:
            return T_MODULE_2, modulerecord.encode(v, compress)
        if isinstance(v, (bytes, bytearray)):
            return T_STRING, enc_string(bytes(v), compress)
        if isinstance(v, ListValue):
            n = ListValue(v)
            n.quick = v.quick
            return self.type_and_value(n)
        raise TypeError("cannot serialize value of type %s" % cls.__name__)


_pack_ms = struct.Struct("<q").pack
_pack_d = struct.Struct("<d").pack


def array_body(v, compress=True) -> bytes:
    """An array as RDB_TYPE_ARRAY: the element count, 1 and the insert
    cursor or 0 when there is none, then each element in ascending index
    order as its index, its tag and its payload (an inline integer as 8
    little-endian bytes, an inline decimal as its 8-byte double, a string as
    an RDB string)."""
    out = [enc_len(len(v))]
    ap = out.append
    if v.insert_idx is None:
        ap(b"\x00")
    else:
        ap(b"\x01" + enc_len(v.insert_idx))
    for i, x in v.items():
        kind, val = value_kind(x)
        ap(enc_len(i) + enc_len(kind))
        if kind == KIND_INT:
            ap(_pack_ms(val))
        elif kind == KIND_FLOAT:
            ap(_pack_d(val))
        else:
            ap(enc_string(x, compress))
    return b"".join(out)


def stream_type(v) -> int:
    """The RDB type a stream is written as: Redis 7.0's (19) unless it
    holds state only a newer type carries: entries XNACK released (27,
    Redis 8.8) or idempotency state (26, Redis 8.6)."""
    if v.groups:
        for g in v.groups.values():
            if g.nacked and any(n.consumer is None for n in g.pel.values()):
                return T_STREAM_LISTPACKS_5
    im = v.idmp
    if im is not None and (im.producers or im.added or im.duplicates
                           or (im.duration, im.maxsize) != (IDMP_DURATION, IDMP_MAXSIZE)):
        return T_STREAM_LISTPACKS_4
    return T_STREAM_LISTPACKS_2


def stream_body(v, compress=True, t=T_STREAM_LISTPACKS_2) -> bytes:
    """A stream as RDB type t (RDB_TYPE_STREAM_LISTPACKS_2 unless given):
    the radix tree's listpacks keyed by master ID, the stream's counters,
    then the consumer groups (global PEL with delivery times/counts,
    consumers with their PEL IDs; from type 21 their active times, from
    27 the entries XNACK released), from type 26 the idempotency state."""
    out = [enc_len(len(v.nodes))]
    ap = out.append
    for node in v.nodes:
        ap(enc_string(id_key(node.master), compress))
        ap(enc_string(node.to_listpack(), compress))
    for x in (v.length, v.last_id >> 64, v.last_id & MASK64, v.first_id >> 64,
              v.first_id & MASK64, v.max_deleted >> 64, v.max_deleted & MASK64,
              v.entries_added):
        ap(enc_len(x))
    groups = v.sorted_groups()
    ap(enc_len(len(groups)))
    for name, g in groups:
        ap(enc_string(name, compress))
        ap(enc_len(g.last_id >> 64))
        ap(enc_len(g.last_id & MASK64))
        ap(enc_len(g.entries_read & MASK64))
        # entries XNACK released (no owner) only from type 27: before it
        # each pending entry is in a consumer's PEL
        owned = [(i, nack) for i, nack in g.pel.items()
                 if nack.consumer is not None or t >= T_STREAM_LISTPACKS_5]
        ap(enc_len(len(owned)))
        for i, nack in owned:
            ap(id_key(i))
            ap(_pack_ms(nack.delivery_time))
            ap(enc_len(nack.delivery_count))
        consumers = g.sorted_consumers()
        ap(enc_len(len(consumers)))
        for cons in consumers:
            ap(enc_string(cons.name, compress))
            ap(_pack_ms(cons.seen_time))
            if t >= T_STREAM_LISTPACKS_3:
                ap(_pack_ms(cons.active_time))
            ap(enc_len(len(cons.pel)))
            for i in cons.pel:
                ap(id_key(i))
        if t >= T_STREAM_LISTPACKS_5:
            pel = g.pel
            nacked = [i for i in g.nacked if i in pel and pel[i].consumer is None]
            ap(enc_len(len(nacked)))
            for i in nacked:
                ap(id_key(i))
    if t >= T_STREAM_LISTPACKS_4:
        im = v.idmp or Idmp()
        ap(enc_len(im.duration))
        ap(enc_len(im.maxsize))
        ap(enc_len(len(im.producers)))
        for pid, m in im.producers.items():
            ap(enc_string(pid, compress))
            ap(enc_len(len(m)))
            for iid, (i, _) in m.items():
                ap(enc_string(iid, compress))
                ap(enc_len(i >> 64))
                ap(enc_len(i & MASK64))
        ap(enc_len(im.added))
        ap(enc_len(im.duplicates))
    return b"".join(out)

