# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# cython: freethreading_compatible=True
"""LZF as Redis 7.0 configures it (the optional compiled twin of rdbcodec's
pure code; Ophidis's own implementation of the format).

``compress(data, out_len)`` gives the bytes Redis's ``lzf_compress(in,
in_len, out, out_len)`` writes, or None where that returns 0 (no room in
``out_len`` bytes, by the same checks at the same points).  Redis's
configuration decides the bytes: a hash table of 2**16 slots (HLOG 16)
indexed by ``((h >> 8) - h * 5) & 0xffff`` over the rolling 3-byte value
``h`` (VERY_FAST), back references of 3 to 264 bytes (MAX_REF + 2) up to
8192 bytes back (MAX_OFF), literal runs of at most 32 bytes (MAX_LIT), the
first input byte never referenced, and after a match only the two
positions before its end entered in the table.  The table starts empty
here; Redis leaves it uninitialized (INIT_HTAB 0) and ignores only null
slots, so a stale pointer into the current input (from an earlier call
whose input was at the same address) could in principle make Redis take
a match this code does not.

``decompress(data, out_len)`` is Redis's lzf_decompress with CHECK_INPUT:
the ``out_len`` bytes, or None for data that is corrupt, truncated, or
does not decompress to exactly ``out_len`` bytes.

Every read and write is bounded by the lengths of the buffers.
"""

from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE

cdef extern from *:
    """
    /* one shared hash table: taken by one call at a time (a call that
       finds it taken, on a free-threaded interpreter, uses its own) */
    #if defined(_MSC_VER)
    #include <intrin.h>
    static volatile long oph_lzf_busy = 0;
    static int oph_lzf_take(void) { return _InterlockedExchange(&oph_lzf_busy, 1) == 0; }
    static void oph_lzf_give(void) { _InterlockedExchange(&oph_lzf_busy, 0); }
    #else
    static int oph_lzf_busy = 0;
    static int oph_lzf_take(void) { return __atomic_exchange_n(&oph_lzf_busy, 1, __ATOMIC_ACQUIRE) == 0; }
    static void oph_lzf_give(void) { __atomic_store_n(&oph_lzf_busy, 0, __ATOMIC_RELEASE); }
    #endif
    """
    int oph_lzf_take() nogil
    void oph_lzf_give() nogil

cdef extern from *:
    """
    #include <string.h>
    /* the first j in [j, end) where a[j] != b[j], else end: 8 bytes at a
       time, then byte by byte (reads only below end) */
    static inline Py_ssize_t oph_lzf_mismatch(const unsigned char *a, const unsigned char *b,
                                              Py_ssize_t j, Py_ssize_t end) {
        unsigned long long x, y;
        while (j + 8 <= end) {
            memcpy(&x, a + j, 8);
            memcpy(&y, b + j, 8);
            if (x != y)
                break;
            j += 8;
        }
        while (j < end && a[j] == b[j])
            j++;
        return j;
    }
    """
    Py_ssize_t oph_lzf_mismatch(const uint8_t *a, const uint8_t *b, Py_ssize_t j, Py_ssize_t end) nogil

cdef enum:
    HSIZE = 1 << 16          # HLOG 16
    MAX_LIT = 1 << 5         # 32 literal bytes per run
    MAX_OFF = 1 << 13        # 8192 bytes back at most
    MAX_REF = (1 << 8) + (1 << 3)
    BIG = 1 << 16            # from this size on the GIL is released meanwhile

# A slot holds base + an input position, where base is where the call's
# range of a running count starts: slots of earlier calls hold less than
# the base of the current one, so a call starts with an empty table
# without clearing it (2**64 bytes of input would wrap the count).
ctypedef struct Table:
    uint64_t slot[HSIZE]
    uint64_t next

cdef Table _shared


cdef inline uint32_t _idx(uint32_t h) noexcept nogil:
    return ((h >> 8) - h * 5) & (HSIZE - 1)


cdef inline bytes _as_bytes(data):
    if type(data) is bytes:
        return <bytes>data
    return bytes(data)


cdef inline Py_ssize_t _literal(uint8_t *out, Py_ssize_t o, uint8_t b, int *lit) noexcept nogil:
    """One literal byte at out[o]; a run reaching MAX_LIT gets its header
    and the next run's header is reserved.  The new output position."""
    out[o] = b
    o += 1
    lit[0] += 1
    if lit[0] == MAX_LIT:
        out[o - MAX_LIT - 1] = MAX_LIT - 1
        lit[0] = 0
        o += 1
    return o


cdef Py_ssize_t _compress(const uint8_t *src, Py_ssize_t n, uint8_t *out, Py_ssize_t out_len,
                          Table *t) noexcept nogil:
    """Redis's lzf_compress over src[0:n], at most out_len bytes (``out``
    holds min(out_len, n + n / 32 + 16): no more is ever written); the
    output size, or 0 when Redis's returns 0."""
    cdef Py_ssize_t i = 0, o = 1, r, off, maxlen
    cdef int lit = 0
    cdef Py_ssize_t length
    cdef uint32_t hval = 0, h
    cdef uint64_t base
    if t.next == 0:
        t.next = 1                       # 0 is an empty slot
    base = t.next
    t.next += <uint64_t>n + 1
    if n >= 3:
        hval = (<uint32_t>src[0] << 8) | src[1]
    while i < n - 2:
        hval = (hval << 8) | src[i + 2]
        h = _idx(hval)
        r = <Py_ssize_t>(t.slot[h] - base)  # < 0 for a slot of an earlier call
        t.slot[h] = base + <uint64_t>i
        if (r > 0 and i - r - 1 < MAX_OFF and src[r + 2] == src[i + 2]
                and src[r] == src[i] and src[r + 1] == src[i + 1]):
            # a match of 3 bytes or more at r
            off = i - r - 1
            maxlen = n - i - 2
            if maxlen > MAX_REF:
                maxlen = MAX_REF
            if o + 4 >= out_len and o - (lit == 0) + 4 >= out_len:
                return 0
            out[o - lit - 1] = <uint8_t>(lit - 1)     # close the literal run
            o -= (lit == 0)                           # (dropped when empty)
            # liblzf's scan: bytes 3 to 18 unconditionally when maxlen > 16
            # (so up to 19 bytes even if maxlen is 17 or 18), then on while
            # below maxlen; at least 3 bytes
            if maxlen > 16:
                length = oph_lzf_mismatch(src + r, src + i, 3, 19)
                if length == 19 and maxlen > 19:
                    length = oph_lzf_mismatch(src + r, src + i, 19, maxlen)
            elif maxlen > 3:
                length = oph_lzf_mismatch(src + r, src + i, 3, maxlen)
            else:
                length = 3
            length -= 2                               # copied bytes - 2
            i += 1
            if length < 7:
                out[o] = <uint8_t>((off >> 8) + (length << 5))
                o += 1
            else:
                out[o] = <uint8_t>((off >> 8) + (7 << 5))
                out[o + 1] = <uint8_t>(length - 7)
                o += 2
            out[o] = <uint8_t>off
            o += 2                                    # and reserve a run header
            lit = 0
            i += length + 1
            if i >= n - 2:
                break
            # the two positions before the match's end go in the table
            i -= 2
            hval = (<uint32_t>src[i] << 8) | src[i + 1]
            hval = (hval << 8) | src[i + 2]
            t.slot[_idx(hval)] = base + <uint64_t>i
            i += 1
            hval = (hval << 8) | src[i + 2]
            t.slot[_idx(hval)] = base + <uint64_t>i
            i += 1
        else:
            if o >= out_len:
                return 0
            o = _literal(out, o, src[i], &lit)
            i += 1
    if o + 3 > out_len:                  # Redis's check before the last (<= 2) bytes
        return 0
    while i < n:
        o = _literal(out, o, src[i], &lit)
        i += 1
    out[o - lit - 1] = <uint8_t>(lit - 1)
    o -= (lit == 0)
    return o


def compress(data, Py_ssize_t out_len):
    """The bytes Redis 7.0's lzf_compress(data, len(data), out, out_len)
    writes, or None where it returns 0 (empty data, or no room)."""
    cdef bytes b = _as_bytes(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(b), cap, size
    cdef const uint8_t *src = <const uint8_t *>PyBytes_AS_STRING(b)
    cdef uint8_t *out
    cdef Table *t
    cdef bint own
    if n == 0 or out_len <= 0:
        return None
    # the output never exceeds n + ceil(n / 32) + 1 bytes
    cap = n + n // 32 + 16
    if cap > out_len:
        cap = out_len
    out = <uint8_t *>malloc(cap)
    if out == NULL:
        raise MemoryError()
    own = not oph_lzf_take()
    if own:
        t = <Table *>calloc(1, sizeof(Table))
        if t == NULL:
            free(out)
            raise MemoryError()
    else:
        t = &_shared
    if n < BIG:
        size = _compress(src, n, out, out_len, t)
    else:
        with nogil:
            size = _compress(src, n, out, out_len, t)
    if own:
        free(t)
    else:
        oph_lzf_give()
    try:
        return PyBytes_FromStringAndSize(<char *>out, size) if size else None
    finally:
        free(out)


cdef Py_ssize_t _decompress(const uint8_t *src, Py_ssize_t n, uint8_t *out, Py_ssize_t out_len) noexcept nogil:
    """Redis's lzf_decompress (CHECK_INPUT): the output size, or -1."""
    cdef Py_ssize_t i = 0, o = 0, ref, length, ctrl
    while i < n:
        ctrl = src[i]
        i += 1
        if ctrl < 32:                    # a literal run of ctrl + 1 bytes
            ctrl += 1
            if o + ctrl > out_len or i + ctrl > n:
                return -1
            memcpy(out + o, src + i, ctrl)
            o += ctrl
            i += ctrl
        else:                            # a back reference
            length = ctrl >> 5
            ref = o - ((ctrl & 0x1f) << 8) - 1
            if i >= n:
                return -1
            if length == 7:
                length += src[i]
                i += 1
                if i >= n:
                    return -1
            ref -= src[i]
            i += 1
            length += 2
            if o + length > out_len or ref < 0:
                return -1
            if ref + length <= o:
                memcpy(out + o, out + ref, length)
                o += length
            else:                        # overlapping: byte by byte
                while length:
                    out[o] = out[ref]
                    o += 1
                    ref += 1
                    length -= 1
    return o


def decompress(data, Py_ssize_t out_len):
    """LZF-decompress ``data`` into exactly ``out_len`` bytes; None when it
    is corrupt or decompresses to another length."""
    cdef bytes b = _as_bytes(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(b), size
    cdef const uint8_t *src = <const uint8_t *>PyBytes_AS_STRING(b)
    cdef bytes res
    if out_len < 0:
        return None
    if out_len == 0:
        return b"" if n == 0 else None
    # at most 264 output bytes per 3 input bytes: a longer result cannot
    # come out of n bytes (and is not allocated for corrupt lengths)
    if out_len > (n // 3 + 1) * (MAX_REF + 2):
        return None
    res = PyBytes_FromStringAndSize(NULL, out_len)
    cdef uint8_t *out = <uint8_t *>PyBytes_AS_STRING(res)
    if out_len < BIG:
        size = _decompress(src, n, out, out_len)
    else:
        with nogil:
            size = _decompress(src, n, out, out_len)
    if size != out_len:
        return None
    return res
