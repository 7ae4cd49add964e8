# The listpack entry primitives in C, the compiled twins of
# persistence/listpack.py's canonical_int, lp_backlen_size and lp_entry_size:
# persistence/_listpack.pyx (decoding), persistence/_rdb.pyx (the writer's
# entries and int encodings) and types/_quicklist (a list's listpack bytes)
# cimport them.


cdef inline Py_ssize_t _lp_backlen_size(Py_ssize_t e) noexcept nogil:
    # the bytes of the back-length of an entry of e bytes (lpEncodeBacklen)
    if e <= 127:
        return 1
    if e < 16383:
        return 2
    if e < 2097151:
        return 3
    if e < 268435455:
        return 4
    return 5


cdef inline bint _lp_canon(const char *p, Py_ssize_t n, long long *out) noexcept nogil:
    # p (n bytes) is the canonical decimal form of an int64 (canonical_int):
    # its value in out
    cdef const unsigned char *s = <const unsigned char *>p
    cdef Py_ssize_t i = 0
    cdef bint neg = False
    cdef unsigned long long v = 0
    cdef unsigned char c
    if n == 0 or n > 20:
        return False
    if s[0] == 45:
        neg = True
        i = 1
    if n - i == 0 or n - i > 19:
        return False
    if s[i] == 48:
        if neg or n != 1:
            return False
        out[0] = 0
        return True
    while i < n:
        c = s[i]
        if c < 48 or c > 57:
            return False
        v = v * 10 + (c - 48)
        i += 1
    if neg:
        if v > 9223372036854775808ULL:
            return False
        out[0] = -<long long>(v - 1) - 1
    else:
        if v > 9223372036854775807ULL:
            return False
        out[0] = <long long>v
    return True


cdef inline Py_ssize_t _lp_entry_size(const char *p, Py_ssize_t n) noexcept nogil:
    # the bytes element p (n bytes) takes as a listpack entry (lp_entry_size)
    cdef long long v
    cdef Py_ssize_t e
    if 0 < n <= 20 and (48 <= <unsigned char>p[0] <= 57 or p[0] == 45) and _lp_canon(p, n, &v):
        if 0 <= v <= 127:
            return 2
        if -4096 <= v <= 4095:
            return 3
        if -32768 <= v <= 32767:
            return 4
        if -8388608 <= v <= 8388607:
            return 5
        if -2147483648 <= v <= 2147483647:
            return 6
        return 10
    e = n + (1 if n < 64 else 2 if n < 4096 else 5)
    return e + _lp_backlen_size(e)
