# What the request loop (net/_client.pyx) uses of protocol/_reader.pyx.
cdef class ReadFeed:
    cdef bytes data
    cdef Py_ssize_t pos
    cdef bint inline
    cdef object rd
    cdef object gets             # hiredis's, once the rest went to it

    cdef object take(self)
    cdef object _line(self, const char *p, Py_ssize_t n)


cdef ReadFeed _read_feed(bytes data, rd, bint inline)
cdef bint _plain_lines(bytes data) noexcept
