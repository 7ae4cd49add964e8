# cython: language_level=3, boundscheck=False, wraparound=False
"""Listpack decoding in C: lp_decode_fast, the compiled twin of
persistence/listpack.py's lp_decode (None for anything but a valid
listpack: the Python decoder then decides, and gives the error)."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdio cimport snprintf


cdef inline bint _cf_lp_backlen_ok(const unsigned char *s, Py_ssize_t n) noexcept:
    """The backlen bytes at s are listpack._backlen(n)."""
    cdef Py_ssize_t k = _lp_backlen_size(n), i
    if k == 1:
        return s[0] == n
    # most significant 7-bit group first; all but the first have bit 7 set
    if s[0] != n >> (7 * (k - 1)):
        return False
    for i in range(1, k):
        if s[i] != ((n >> (7 * (k - 1 - i))) & 127) | 128:
            return False
    return True


def lp_decode_fast(buf, bint strict_count=True):
    """listpack.lp_decode_py of a bytes object (integers as decimal bytes),
    or None when anything is off (not bytes, a bad entry, a count mismatch):
    then the Python decoder gives the error."""
    cdef const unsigned char *s
    cdef Py_ssize_t n, p = 6, end, size, ln, w, i
    cdef unsigned int count
    cdef unsigned char b
    cdef long long v
    cdef unsigned long long u
    cdef char tmp[24]
    cdef int k
    cdef list out
    if not PyBytes_Check(buf):
        return None
    s = <const unsigned char *>PyBytes_AS_STRING(buf)
    n = PyBytes_GET_SIZE(buf)
    if n < 7:
        return None
    if <Py_ssize_t>(s[0] | (s[1] << 8) | (s[2] << 16) | (<unsigned int>s[3] << 24)) != n:
        return None
    count = s[4] | (s[5] << 8)
    end = n - 1
    out = []
    while p < end:
        b = s[p]
        if b < 0x80:
            k = snprintf(tmp, sizeof(tmp), "%d", <int>b)
            out.append(PyBytes_FromStringAndSize(tmp, k))
            size = 1
        elif b < 0xC0:
            size = 1 + (b & 0x3F)
            if p + size > end:
                return None
            out.append(PyBytes_FromStringAndSize(<const char *>s + p + 1, size - 1))
        elif b < 0xE0:
            if p + 2 > end:
                return None
            v = ((b & 0x1F) << 8) | s[p + 1]
            if v >= 1 << 12:
                v -= 1 << 13
            k = snprintf(tmp, sizeof(tmp), "%lld", v)
            out.append(PyBytes_FromStringAndSize(tmp, k))
            size = 2
        elif b < 0xF0:
            if p + 2 > end:
                return None
            ln = ((b & 0x0F) << 8) | s[p + 1]
            size = 2 + ln
            if p + size > end:
                return None
            out.append(PyBytes_FromStringAndSize(<const char *>s + p + 2, ln))
        elif b == 0xF0:
            if p + 5 > end:
                return None
            ln = s[p + 1] | (s[p + 2] << 8) | (s[p + 3] << 16) | (<Py_ssize_t>s[p + 4] << 24)
            size = 5 + ln
            if p + size > end:
                return None
            out.append(PyBytes_FromStringAndSize(<const char *>s + p + 5, ln))
        elif b <= 0xF4:
            w = 8 if b == 0xF4 else b - 0xF1 + 2
            size = 1 + w
            if p + size > end:
                return None
            u = 0
            for i in range(w):
                u |= (<unsigned long long>s[p + 1 + i]) << (8 * i)
            if w < 8 and u >> (8 * w - 1):
                u |= ~0ULL << (8 * w)           # sign extension
            k = snprintf(tmp, sizeof(tmp), "%lld", <long long>u)
            out.append(PyBytes_FromStringAndSize(tmp, k))
        else:
            return None
        w = _lp_backlen_size(size)
        if p + size + w > end or not _cf_lp_backlen_ok(s + p + size, size):
            return None
        p += size + w
    if p != end or s[end] != 0xFF:
        return None
    if strict_count and count != 65535 and count != len(out):
        return None
    return out

