# The plain client connections' transport (net/_sock.pyx): what
# net/_client.pyx's read and write path reach in C.

ctypedef object (*sock_data_fn)(object protocol, object data)

cdef int set_direct(sock_data_fn fn, object py_fn) except -1


cdef class SockConn:
    cdef readonly int fd
    cdef object sock, loop, protocol, _data
    cdef sock_data_fn direct    # the protocol's data_received in C (set_direct), or NULL
    cdef list wbuf              # bytes not yet sent, the first from woff on
    cdef readonly Py_ssize_t wsize
    cdef Py_ssize_t woff, high, low
    cdef size_t nwrites         # writes asked for (c_write), to tell whether a read was answered
    cdef bint reading, writing, closing, closed, wpaused

    cdef int c_write(self, bytes data) except -1
    cdef _set_protocol(self, protocol)
    cdef _eof(self)
    cdef int _deliver(self, Py_ssize_t n) except -1
    cdef _stop_reading(self)
    cdef _fatal(self, int e, bint now)
    cdef _force(self, exc, bint now)
    cdef _finish(self, exc, bint now)
