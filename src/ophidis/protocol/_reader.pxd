# What the request loop (net/_client.pyx) uses of protocol/_reader.pyx.

# The C fields of protocol/reader.py's RequestReader (the one declaration
# of the field list: the pure twin takes its slots from this file): what
# the per-read path reads of every read.
cdef class ReaderCore:
    cdef public object pend


cdef class ReadFeed:
    cdef bytes data
    cdef Py_ssize_t pos
    cdef bint inline
    cdef object rd
    cdef object gets             # hiredis's, once the rest went to it

    cdef object take(self)
    cdef object _line(self, const char *p, Py_ssize_t n)


cdef ReadFeed _read_feed(bytes data, rd, bint inline)
cdef ReadFeed _feed_at(ReadFeed f, bytes data, rd, bint inline)    # reused for a new read
cdef void _feed_clear(ReadFeed f) noexcept
cdef bint _plain_lines(bytes data) noexcept
