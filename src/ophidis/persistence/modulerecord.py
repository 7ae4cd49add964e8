"""Redis 8's built-in types (JSON, the probabilistic types, time series,
vector sets) as RDB module-type records (RDB_TYPE_MODULE_2), the way Redis
stores a module's value: the 64-bit module id (its 9-character type name
and encoding version), then the value as a stream of typed items, each an
opcode and its payload (unsigned / signed integer as an RDB length, float
as 4 bytes, double as 8 bytes, string as an RDB string), then the EOF
opcode.

A value class takes part by registering itself in
``keyspace.db.MODULE_TYPES`` (``register_module_type``) and providing:

- ``MODULE_NAME`` (the 9-character type name, also TYPE's reply),
  ``MODULE_ENCVER`` (the encoding version written) and ``MODULE_ENCVERS``
  (the versions it can read);
- ``rdb_save(self, w)``: its items, through a ``ModuleWriter``;
- ``rdb_load(cls, r, encver)`` (a classmethod): the value read through a
  ``ModuleReader``; it raises ``ModuleFormatError`` (or lets the reader
  raise it) for a record it cannot read.

Encoding and decoding of the items are here, once; the type's module says
only which items, in which order (its own layout, as the Redis module of
that type defines it).
"""

from __future__ import annotations

import struct

from ..keyspace.db import MODULE_TYPES
from .rdbcodec import enc_len, enc_string
from .rdbformat import module_id, module_name

OP_EOF = 0
OP_SINT = 1
OP_UINT = 2
OP_FLOAT = 3
OP_DOUBLE = 4
OP_STRING = 5

_pack_f = struct.Struct("<f").pack
_pack_d = struct.Struct("<d").pack
_unpack_f = struct.Struct("<f").unpack
_unpack_d = struct.Struct("<d").unpack
_ids: dict = {}


class ModuleFormatError(Exception):
    """A module record that does not read as its type's layout."""


class ModuleWriter:
    """The items of one module record, in order (RedisModule_Save*)."""

    __slots__ = ("out", "compress")

    def __init__(self, compress=True):
        self.out = []
        self.compress = compress

    def uint(self, x: int):
        self.out.append(b"\x02" + enc_len(x))

    def sint(self, x: int):
        # RedisModule_SaveSigned: the unsigned item (its opcode too) of the
        # value's 64-bit pattern
        self.out.append(b"\x02" + enc_len(x & 0xFFFFFFFFFFFFFFFF))

    def float(self, x: float):
        self.out.append(b"\x03" + _pack_f(x))

    def double(self, x: float):
        self.out.append(b"\x04" + _pack_d(x))

    def string(self, s):
        self.out.append(b"\x05" + enc_string(bytes(s), self.compress))


class ModuleReader:
    """Reads the items of one module record from an RDB ``ValueReader``
    (RedisModule_Load*); each checks the item's opcode."""

    __slots__ = ("src",)

    def __init__(self, src):
        self.src = src

    def _op(self, want):
        op = self.src.load_len()
        if op != want:
            raise ModuleFormatError("module opcode %d where %d was expected" % (op, want))

    def uint(self) -> int:
        self._op(OP_UINT)
        return self.src.load_len()

    def sint(self) -> int:
        # RedisModule_LoadSigned reads an unsigned item; the signed opcode,
        # which Redis never writes, is read too
        op = self.src.load_len()
        if op != OP_UINT and op != OP_SINT:
            raise ModuleFormatError("module opcode %d where %d was expected" % (op, OP_UINT))
        v = self.src.load_len()
        return v - (1 << 64) if v >= 1 << 63 else v

    def float(self) -> float:
        self._op(OP_FLOAT)
        return _unpack_f(self.src.read(4))[0]

    def double(self) -> float:
        self._op(OP_DOUBLE)
        return _unpack_d(self.src.read(8))[0]

    def string(self) -> bytes:
        self._op(OP_STRING)
        return self.src.load_string()


def encode(v, compress=True) -> bytes:
    """The body of an RDB_TYPE_MODULE_2 value: module id, items, EOF."""
    cls = v.__class__
    mid = _ids.get(cls)
    if mid is None:
        mid = _ids[cls] = enc_len(module_id(cls.MODULE_NAME, cls.MODULE_ENCVER))
    w = ModuleWriter(compress)
    w.out.append(mid)
    v.rdb_save(w)
    w.out.append(b"\x00")
    return b"".join(w.out)


def known(mid: int):
    """The value class for module id ``mid`` when it is one of ours and its
    encoding version is one we read, else None."""
    cls = MODULE_TYPES.get(module_name(mid))
    if cls is not None and (mid & 1023) in cls.MODULE_ENCVERS:
        return cls
    return None


def decode(src, cls, mid: int):
    """A value of ``cls`` read after its module id; ``src`` (a ValueReader)
    fails with Redis's message when the record is not ``cls``'s layout."""
    start = src.pos
    try:
        v = cls.rdb_load(ModuleReader(src), mid & 1023)
        if src.load_len() != OP_EOF:
            raise ModuleFormatError("no EOF opcode")
    except (ModuleFormatError, ValueError, IndexError, OverflowError):
        src.fail("Error loading %s module value" % cls.MODULE_NAME, start)
    return v
