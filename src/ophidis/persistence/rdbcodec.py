"""RDB's primitive encodings, the only copy of each: CRC-64 (Redis's crc64,
the Jones polynomial, reflected), LZF, lengths and strings.

Used by RDB files, DUMP/RESTORE payloads and FUNCTION DUMP/RESTORE (all in
rdb.py).  anycrc (a C extension, in the dependencies) and Ophidis's own
compiled LZF (_lzf.pyx, built at install time when a C compiler is there)
do the work when they are installed; without them a pure-Python install
still reads and writes every format: CRC-64 and LZF decompression fall
back to the Python versions below, and strings are written uncompressed
(valid for every reader: LZF is only ever an option of the writer).  The
compiled LZF is a codec, not a twin of Python code: OPHIDIS_PURE=1, which
asks for the pure twins (ophidis/compiled.py), still uses it, as it
uses hiredis and anycrc.
"""

from __future__ import annotations

try:
    import anycrc
except ImportError:  # a pure-Python install
    anycrc = None

from .listpack import canonical_int


try:
    from . import _lzf
except ImportError:  # a pure-Python install
    _lzf = None

ENC_INT8, ENC_INT16, ENC_INT32, ENC_LZF = 0, 1, 2, 3


# -- CRC-64 -------------------------------------------------------------------------

def _crc64_table():
    poly = 0x95AC9329AC4BC9B5      # 0xad93d23594c935a9, reflected
    t = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        t.append(crc)
    return t


if anycrc is not None:
    _CRC = anycrc.Model("CRC64-REDIS")

    def crc64(data, init=None) -> int:
        """CRC-64 of ``data``, continuing from ``init`` (a previous result)."""
        if init is None:
            return _CRC.calc(data)
        return _CRC.calc(data, init)
else:
    _CRC64_TABLE = _crc64_table()

    def crc64(data, init=None) -> int:
        """CRC-64 of ``data``, continuing from ``init`` (a previous result)."""
        crc = init or 0
        t = _CRC64_TABLE
        for b in bytes(data):
            crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
        return crc


# -- LZF ----------------------------------------------------------------------------

def _lzf_decompress_py(src, outlen: int):
    out = bytearray()
    i = 0
    n = len(src)
    try:
        while i < n:
            ctrl = src[i]
            i += 1
            if ctrl < 32:
                if i + ctrl + 1 > n:
                    return None
                out += src[i:i + ctrl + 1]
                i += ctrl + 1
            else:
                ln = ctrl >> 5
                ref = len(out) - ((ctrl & 0x1F) << 8) - 1
                if ln == 7:
                    ln += src[i]
                    i += 1
                ref -= src[i]
                i += 1
                if ref < 0:
                    return None
                for _ in range(ln + 2):
                    out.append(out[ref])
                    ref += 1
            if len(out) > outlen:
                return None
    except IndexError:
        return None
    return bytes(out)


def lzf_decompress(src, outlen: int):
    """LZF-decompress ``src`` into exactly ``outlen`` bytes; None when the
    data is corrupt or does not decompress to that length."""
    if _lzf is not None:
        return _lzf.decompress(src, outlen)
    out = _lzf_decompress_py(src, outlen)
    if out is None or len(out) != outlen:
        return None
    return out


def redis_lzf(data, out_len):
    """lzf_compress(data, len(data), out, out_len) as Redis 7.0's liblzf
    does it: the compressed bytes, or None where it returns 0 (no room in
    out_len bytes, by its own checks); always None without the compiled
    _lzf."""
    if _lzf is None or out_len <= 0:
        return None
    return _lzf.compress(data, out_len)


# -- lengths and strings ------------------------------------------------------------

_LEN1 = [bytes((i,)) for i in range(64)]


def enc_len(n: int) -> bytes:
    """rdbSaveLen: 6-bit, 14-bit, 32-bit or 64-bit length."""
    if n < 64:
        return _LEN1[n]
    if n < 16384:
        return bytes(((n >> 8) | 0x40, n & 0xFF))
    if n <= 0xFFFFFFFF:
        return b"\x80" + n.to_bytes(4, "big")
    return b"\x81" + n.to_bytes(8, "big")


def _enc_int(v):
    if -128 <= v <= 127:
        return b"\xc0" + (v & 0xFF).to_bytes(1, "little")
    if -32768 <= v <= 32767:
        return b"\xc1" + (v & 0xFFFF).to_bytes(2, "little")
    if -2147483648 <= v <= 2147483647:
        return b"\xc2" + (v & 0xFFFFFFFF).to_bytes(4, "little")
    return None


def enc_string(s, compress=True) -> bytes:
    """A string as rdbSaveRawString writes it: integer encoding when the
    string is a canonical 32-bit integer, LZF when it saves space."""
    n = len(s)
    if n <= 11 and n:
        c = s[0]
        if 48 <= c <= 57 or c == 45:
            v = canonical_int(s)
            if v is not None:
                e = _enc_int(v)
                if e is not None:
                    return e
    if compress and n > 20:
        comp = redis_lzf(s, n - 4)
        if comp:
            return b"\xc3" + enc_len(len(comp)) + enc_len(n) + comp
    if n < 64:
        return _LEN1[n] + s
    return enc_len(n) + s
