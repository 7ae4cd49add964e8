"""The payloads of DUMP/RESTORE (and MIGRATE) and of FUNCTION DUMP/RESTORE
(Redis's createDumpPayload / verifyDumpPayload): a value, or function
libraries, in RDB encoding followed by the RDB version and a CRC-64.
"""

from __future__ import annotations

from .rdbcodec import crc64, enc_string
from .rdbdecode import UnsupportedType, ValueReader
from .rdbencode import Encoder
from .rdbformat import (HFE_TYPES, OP_FUNCTION2, RDB_VERSION, RDB_VERSION_HFE, T_ARRAY, T_STREAM_LISTPACKS_2,
                        T_STREAM_LISTPACKS_4, T_STREAM_LISTPACKS_5, TYPE_NAMES, RdbError)


def dump_payload(v, config=None) -> bytes:
    """The DUMP serialization: type, value, RDB version (2 bytes LE), CRC64."""
    t, data = Encoder(config).type_and_value(v)
    # a hash with field TTLs goes as Redis 7.4 dumps it (its version with it)
    ver = RDB_VERSION_HFE if t in HFE_TYPES else RDB_VERSION
    body = bytes((t,)) + data + ver.to_bytes(2, "little")
    return body + crc64(body).to_bytes(8, "little")


def verify_payload(p: bytes, skip_checksum=False) -> bool:
    """verifyDumpPayload: a footer, a version we write, the CRC-64 (not
    checked with DEBUG SET-SKIP-CHECKSUM-VALIDATION 1)."""
    if len(p) < 10:
        return False
    ver = p[-10] | (p[-9] << 8)
    if ver > RDB_VERSION_HFE:
        return False
    if skip_checksum:
        return True
    return crc64(p[:-8]) == int.from_bytes(p[-8:], "little")


def functions_payload(codes) -> bytes:
    """FUNCTION DUMP's payload: each library's code after OP_FUNCTION2 (as an
    RDB string, not compressed), then the RDB version and the CRC-64."""
    body = b"".join([b"\xf5" + enc_string(code, False) for code in codes])
    body += RDB_VERSION.to_bytes(2, "little")
    return body + crc64(body).to_bytes(8, "little")


class NotAFunction(Exception):
    """A FUNCTION RESTORE payload holding something other than libraries."""


def load_functions_payload(p: bytes) -> list:
    """The library codes of a FUNCTION RESTORE payload already checked by
    ``verify_payload``; raises NotAFunction for another opcode, RdbError
    when a string does not decode."""
    r = ValueReader(memoryview(p)[:-10])
    codes = []
    while r.pos < r.n:
        if r.byte() != OP_FUNCTION2:
            raise NotAFunction()
        codes.append(r.load_string())
    return codes


def load_payload(payload: bytes, settings=None, log=None):
    """Decode a DUMP payload (already verified).  Returns the value or
    raises RdbError (RESTORE's Bad data format).  As Redis's, the reader
    runs over the whole payload, its version and CRC footer included; the
    types are Redis 7.0's (the payload's version is at most 10, so the
    listpack set and the 7.2 stream cannot appear)."""
    r = ValueReader(memoryview(payload), settings, log=log)
    t = r.byte()
    # the newer types we write ourselves (an array, hashes with field TTLs, a
    # stream with Redis 8.6/8.8 state) are read back too
    if t not in TYPE_NAMES or (t > T_STREAM_LISTPACKS_2 and t != T_ARRAY and t not in HFE_TYPES
                               and t not in (T_STREAM_LISTPACKS_4, T_STREAM_LISTPACKS_5)):
        raise RdbError("Unknown RDB encoding type %d" % t, 0, quiet=True)
    try:
        v = r.load_object(t)
    except UnsupportedType as e:
        raise RdbError("The RDB file contains module data I can't load: no matching module type %s"
                       % e.args[0].split(" ", 1)[-1], 0) from None
    if v is None:
        raise RdbError("Empty key", r.pos, quiet=True)
    return v
