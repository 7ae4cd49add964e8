# cython: language_level=3, boundscheck=False, wraparound=False
"""The plain client connections' transport in C: in a compiled install the
TCP and unix sockets of the clients (net/accept.py's PlainListener) are
read and written here, through the event loop's ``add_reader`` and
``add_writer``, instead of the loop's own stream transports.

Why: with one request per read (``redis-benchmark -P 1``) the loop's
stream transport costs more than the command (bench/io_floor.py: a
minimal uvloop Protocol server 4,049 instructions a request, the same
server reading and writing the socket from a Cython add_reader callback
1,425; redis-server's whole GET 4,962).

``SockConn`` is an asyncio transport for what the server asks of one
(net/client.py, server/clients.py, replication, memory): ``write``,
``close``, ``abort``, ``is_closing``, ``get_extra_info`` (socket, peername,
sockname), ``get_write_buffer_size``, ``get/set_write_buffer_limits``,
``pause_reading``/``resume_reading``, and calls its protocol's
``connection_made`` (the acceptor does, synchronously: a client is known
to the server as soon as it is accepted), ``data_received``,
``eof_received``, ``pause_writing``/``resume_writing`` (asyncio's water
marks, 64 KiB high and a quarter of it low, as the loops' defaults) and
``connection_lost`` (from the loop's next iteration, as asyncio does).
The pure install, TLS connections, the cluster bus and the replication
link keep the event loop's transports (the same interface)."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from libc.errno cimport EAGAIN, EINTR, errno

import os


cdef extern from "<sys/socket.h>" nogil:
    ssize_t recv(int fd, void *buf, size_t n, int flags)
    ssize_t send(int fd, const void *buf, size_t n, int flags)
    enum: MSG_NOSIGNAL


cdef enum:
    READ_SIZE = 262144      # one read at most (the loops' stream transports read 256 KiB)
    JOIN_MAX = 262144       # small pending chunks are joined up to this before a send
    HIGH_DEFAULT = 65536


cdef char _rbuf[READ_SIZE]     # the read buffer (a read's bytes are copied out at once)


cdef inline bint _again(int e) noexcept:
    # (EWOULDBLOCK is EAGAIN on Linux and the BSDs)
    return e == EAGAIN or e == EINTR


cdef sock_data_fn _direct_fn = NULL    # net/_client.pyx's data_received, callable from C
cdef object _direct_py = None           # ... and the Python function object it is


cdef int set_direct(sock_data_fn fn, object py_fn) except -1:
    """net/_client.pyx gives its data_received: a protocol whose class's
    data_received is ``py_fn`` gets its reads through ``fn``, in C."""
    global _direct_fn, _direct_py
    _direct_fn = fn
    _direct_py = py_fn
    return 0


cdef class SockConn:
    """One accepted plain connection (a non-blocking socket) and its
    protocol; reading starts with ``start()``.  (Fields: _sock.pxd.)"""

    def __cinit__(self, loop, sock, protocol):
        self.loop = loop
        self.sock = sock
        self.fd = sock.fileno()
        self._set_protocol(protocol)
        self.wbuf = []
        self.high = HIGH_DEFAULT
        self.low = HIGH_DEFAULT // 4

    def start(self):
        """Start reading (after connection_made, unless it closed us)."""
        if not self.closing and not self.reading:
            self.reading = True
            self.loop.add_reader(self.fd, self._read_ready)

    # -- reading ----------------------------------------------------------------------
    def _read_ready(self):
        # A read that nothing answers (a blocking command, a command not
        # complete yet, CLIENT REPLY OFF) is followed by another recv until
        # the socket has nothing more: uvloop, told by libuv that the socket
        # has an error (the peer reset it), calls the reader once more and
        # then stops watching it for good, so bytes still queued before the
        # reset would hide the reset from us and leave the client connected
        # (a blocked client would stay blocked forever).  An answered read
        # needs no more: the reply's send meets the reset.
        cdef ssize_t n
        cdef int e
        cdef size_t w0
        cdef int rounds = 0
        if self.closed:
            return
        while True:
            n = recv(self.fd, _rbuf, READ_SIZE, 0)
            if n > 0:
                w0 = self.nwrites
                self._deliver(n)
                rounds += 1
                if self.closed or not self.reading or self.nwrites != w0 or rounds == 64:
                    return
                continue
            if n == 0:
                self._eof()
                return
            e = errno
            if not _again(e):
                self._fatal(e, True)
            return

    cdef int _deliver(self, Py_ssize_t n) except -1:
        if self.direct != NULL:
            self.direct(self.protocol, PyBytes_FromStringAndSize(_rbuf, n))
        else:
            self._data(PyBytes_FromStringAndSize(_rbuf, n))
        return 0

    cdef _eof(self):
        self._stop_reading()
        if not self.protocol.eof_received():
            self.closing = True
            if self.wsize == 0:
                self._finish(None, True)

    def pause_reading(self):
        self._stop_reading()

    def resume_reading(self):
        if not self.closing:
            self.start()

    def is_reading(self):
        return self.reading

    cdef _stop_reading(self):
        if self.reading:
            self.reading = False
            self.loop.remove_reader(self.fd)

    # -- writing ----------------------------------------------------------------------
    def write(self, data):
        """Send at once what the socket takes; keep the rest, sent when the
        socket is writable again."""
        if type(data) is not bytes:
            data = bytes(data)
        self.c_write(<bytes>data)

    cdef int c_write(self, bytes data) except -1:
        # write(), for net/_client.pyx's replies (no Python call)
        cdef ssize_t n
        cdef Py_ssize_t ln
        cdef int e
        ln = PyBytes_GET_SIZE(data)
        if ln == 0 or self.closed:
            return 0
        self.nwrites += 1
        if self.wsize:
            self.wbuf.append(data)
            self.wsize += ln
        else:
            n = send(self.fd, PyBytes_AS_STRING(<bytes>data), ln, MSG_NOSIGNAL)
            if n == ln:
                return 0
            if n < 0:
                e = errno
                if not _again(e):
                    self._fatal(e, False)     # (the caller may still be running on the client)
                    return 0
                n = 0
            self.wbuf.append(data)
            self.woff = n
            self.wsize = ln - n
            self.writing = True
            self.loop.add_writer(self.fd, self._write_ready)
        if not self.wpaused and self.wsize > self.high:
            self.wpaused = True
            self.protocol.pause_writing()
        return 0

    def writelines(self, list_of_data):
        for d in list_of_data:
            self.write(d)

    def _write_ready(self):
        cdef ssize_t n
        cdef Py_ssize_t ln, left, k, total
        cdef int e
        cdef bytes d
        cdef list buf = self.wbuf
        if self.closed:
            return
        while buf:
            d = <bytes>PyList_GET_ITEM(buf, 0)
            if self.woff == 0 and PyList_GET_SIZE(buf) > 1 and PyBytes_GET_SIZE(d) < JOIN_MAX:
                # small chunks (replies, pushes) go out together
                k = 0
                total = 0
                while k < PyList_GET_SIZE(buf) and total < JOIN_MAX:
                    total += PyBytes_GET_SIZE(<bytes>PyList_GET_ITEM(buf, k))
                    k += 1
                if k > 1:
                    d = b"".join(buf[:k])
                    del buf[:k]
                    buf.insert(0, d)
            ln = PyBytes_GET_SIZE(d)
            left = ln - self.woff
            n = send(self.fd, PyBytes_AS_STRING(d) + self.woff, left, MSG_NOSIGNAL)
            if n < 0:
                e = errno
                if _again(e):
                    break
                self._fatal(e, True)
                return
            self.wsize -= n
            if n < left:
                self.woff += n
                break
            del buf[0]
            self.woff = 0
        if self.wsize == 0:
            if self.writing:
                self.writing = False
                self.loop.remove_writer(self.fd)
            if self.closing:
                self._finish(None, True)
                return
        if self.wpaused and self.wsize <= self.low:
            self.wpaused = False
            self.protocol.resume_writing()

    def get_write_buffer_size(self):
        return self.wsize

    def get_write_buffer_limits(self):
        return (self.low, self.high)

    def set_write_buffer_limits(self, high=None, low=None):
        if high is None:
            high = HIGH_DEFAULT if low is None else 4 * low
        if low is None:
            low = high // 4
        if not high >= low >= 0:
            raise ValueError("high (%r) must be >= low (%r) must be >= 0" % (high, low))
        self.high = high
        self.low = low

    # -- closing ----------------------------------------------------------------------
    def is_closing(self):
        return self.closing

    def close(self):
        """Stop reading; the socket closes once what is held is sent."""
        if self.closing:
            return
        self.closing = True
        self._stop_reading()
        if self.wsize == 0:
            self._finish(None, False)

    def abort(self):
        """Close now: what is held is dropped."""
        self._force(None, False)

    cdef _fatal(self, int e, bint now):
        self._force(OSError(e, os.strerror(e)), now)

    cdef _force(self, exc, bint now):
        if self.closed:
            return
        self.closing = True
        self._stop_reading()
        self.wbuf = []
        self.wsize = self.woff = 0
        self._finish(exc, now)

    cdef _finish(self, exc, bint now):
        # The socket is closed at once.  connection_lost: at once where the
        # peer ended the connection (seen by the loop's read or write
        # callback: a client that left no longer counts, as Redis frees it
        # in its read handler), from the loop's next iteration where the
        # server's own code closed it (as asyncio's transports: the caller
        # may still be running on the client)
        if self.closed:
            return
        self.closed = True
        if self.writing:
            self.writing = False
            self.loop.remove_writer(self.fd)
        self.sock.close()
        if now:
            self._lost(exc)
        else:
            self.loop.call_soon(self._lost, exc)

    def _lost(self, exc):
        p = self.protocol
        self.protocol = self._data = None
        if p is not None:
            p.connection_lost(exc)

    # -- what else asyncio transports tell -----------------------------------------------
    def get_extra_info(self, name, default=None):
        if name == "socket":
            return self.sock
        # asked of the socket (Client keeps the addresses it takes at
        # connection_made): not kept here, an idle connection holds less
        try:
            if name == "peername":
                return self.sock.getpeername()
            if name == "sockname":
                return self.sock.getsockname()
        except OSError:
            pass
        return default

    def get_protocol(self):
        return self.protocol

    def set_protocol(self, protocol):
        self._set_protocol(protocol)

    cdef _set_protocol(self, protocol):
        self.protocol = protocol
        self._data = protocol.data_received
        self.direct = _direct_fn if (_direct_fn != NULL and
                                     getattr(type(protocol), "data_received", None) is _direct_py) else NULL

    def can_write_eof(self):
        return False

    def __repr__(self):
        return "<SockConn fd=%d%s>" % (self.fd, " closed" if self.closed else " closing" if self.closing else "")
