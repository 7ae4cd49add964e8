# RESP length lines written in C (inline: shared by protocol/_resp.pyx and
# the command bodies).
cimport cython


@cython.cdivision(True)
cdef inline Py_ssize_t _ndigits(Py_ssize_t v) noexcept:
    # v >= 0
    if v < 10:
        return 1
    if v < 100:
        return 2
    cdef Py_ssize_t d = 3
    v //= 1000
    while v:
        v //= 10
        d += 1
    return d


@cython.cdivision(True)
cdef inline char *_put_len(char *p, char kind, Py_ssize_t v) noexcept:
    # "<kind><v>\r\n" (v >= 0)
    p[0] = kind
    if v < 10:
        p[1] = <char>(48 + v)
        p[2] = 13
        p[3] = 10
        return p + 4
    cdef Py_ssize_t d = _ndigits(v), i
    for i in range(d, 0, -1):
        p[i] = <char>(48 + v % 10)
        v //= 10
    p[d + 1] = 13
    p[d + 2] = 10
    return p + d + 3




cdef inline Py_ssize_t _digits(char *buf, unsigned long long u) noexcept:
    # u's decimal digits at the end of buf[24]; returns where they start
    cdef Py_ssize_t k = 24
    while True:
        k -= 1
        buf[k] = <char>(48 + u % 10)
        u //= 10
        if u == 0:
            return k
