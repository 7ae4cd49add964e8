# cython: language_level=3, boundscheck=False, wraparound=False
"""The request reader's hot spots in C: the compiled twin of
protocol/reader.py's checks (long_header: the guard against multibulk
headers hiredis would pre-size; suspicious; ends_with_request: the
read-boundary check of RequestReader.taken) and a parser of the canonical
multibulk form and of plain inline lines (ReadFeed) that the request loop
(net/_client.pyx) takes a read's requests from."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from libc.string cimport memchr, memcmp

import hiredis

from ophidis.protocol._resp cimport _put_len

from .resp import INLINE_LINE_MAX

cdef object _ProtocolError = hiredis.ProtocolError

def long_header(data):
    """True when data holds "*" followed by seven characters of [-0-9]."""
    if type(data) is not bytes:
        data = bytes(data)
    cdef const char *p = PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    cdef Py_ssize_t i = 0, j
    cdef const char *hit
    cdef char ch
    while i < n:
        hit = <const char *>memchr(p + i, 42, n - i)
        if hit == NULL:
            return False
        i = hit - p + 1
        if i + 7 > n:
            return False
        for j in range(i, i + 7):
            ch = p[j]
            if ch != 45 and (ch < 48 or ch > 57):
                break
        else:
            return True
    return False


def suspicious(data):
    """reader.suspicious compiled: a multibulk header of seven characters or
    more of [-0-9], or "*" starting the last line of an unterminated read
    (searched from 8 bytes before its end, Python's rfind start rules)
    followed only by such characters."""
    if type(data) is not bytes:
        data = bytes(data)
    if long_header(data):
        return True
    cdef const char *p = PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), start, j, k
    cdef char ch
    if n >= 2 and p[n - 2] == 13 and p[n - 1] == 10:
        return False
    start = n - 8
    if start < 0:
        start += n
        if start < 0:
            start = 0
    j = n - 1
    while j >= start and p[j] != 42:
        j -= 1
    if j < start:
        return False
    if j != 0 and p[j - 1] != 10:
        return False
    for k in range(j + 1, n):
        ch = p[k]
        if ch != 45 and (ch < 48 or ch > 57):
            return False
    return True


cdef inline Py_ssize_t _ends_with_header(const char *p, Py_ssize_t end, char kind, Py_ssize_t n):
    # the length of the "<kind><n>\r\n" line ending p[:end], or -1
    cdef char buf[32]
    cdef Py_ssize_t hl = _put_len(buf, kind, n) - buf
    if hl > end or memcmp(p + end - hl, buf, hl) != 0:
        return -1
    return hl


def ends_with_request(data, list req):
    """Does data end with the multibulk encoding of req (reader.py's
    _ends_with_request)?"""
    if type(data) is not bytes:
        data = bytes(data)
    cdef const char *p = PyBytes_AS_STRING(data)
    cdef Py_ssize_t end = PyBytes_GET_SIZE(data)
    cdef Py_ssize_t i, la, hl
    for i in range(len(req) - 1, -1, -1):
        a = req[i]
        if type(a) is not bytes:
            return False
        la = PyBytes_GET_SIZE(a)
        if end < la + 2 or p[end - 1] != 10 or p[end - 2] != 13:
            return False
        end -= 2
        if memcmp(p + end - la, PyBytes_AS_STRING(a), la) != 0:
            return False
        end -= la
        hl = _ends_with_header(p, end, 36, la)
        if hl < 0:
            return False
        end -= hl
    return _ends_with_header(p, end, 42, len(req)) >= 0


# -- the read's requests, parsed in C ----------------------------------------------
# A read at a request boundary (hiredis holds nothing) is parsed here while
# its requests are in the canonical multibulk form ("*<n>\r\n" then n times
# "$<len>\r\n<len bytes>\r\n", lengths without sign or leading zero) or, for
# a read of plain inline lines (RequestReader.feed's ``lines`` case), split
# at whitespace as bytes.split() does.  At the first request that is not
# whole and canonical, the rest of the read goes to hiredis and the loop
# goes on with its gets: the requests taken are the ones hiredis would have
# given (tests/test_speedups.py compares them on random input), so what
# RequestReader.taken works out from the request count stays true.

cdef inline bint _ws(char c) noexcept:
    # bytes.split()'s whitespace (and Redis's isspace for inline arguments)
    return c == 32 or 9 <= c <= 13


cdef inline Py_ssize_t _len_line(const char *p, Py_ssize_t i, Py_ssize_t n, Py_ssize_t *out) noexcept:
    # "<digits>\r\n" at i (no sign, no leading zero, at most 9 digits):
    # the position after it, -1 if not there whole
    cdef Py_ssize_t v = 0, j = i
    if j >= n or not (48 <= p[j] <= 57):
        return -1
    if p[j] == 48:
        j += 1
    else:
        while j < n and 48 <= p[j] <= 57 and j - i < 9:
            v = v * 10 + (p[j] - 48)
            j += 1
    if j + 1 >= n or p[j] != 13 or p[j + 1] != 10:
        return -1
    out[0] = v
    return j + 2


cdef class ReaderCore:
    """The fields of protocol.reader.RequestReader the per-read path reads,
    as C fields (RequestReader derives from this class when the module is
    built; declared in _reader.pxd)."""


cdef class ReadFeed:
    """One read's requests for the request loop (see above)."""

    cdef object take(self):
        if self.gets is not None:
            return self.gets()
        cdef Py_ssize_t n = PyBytes_GET_SIZE(self.data), pos = self.pos
        if pos >= n:
            return False
        cdef const char *p = PyBytes_AS_STRING(self.data)
        cdef Py_ssize_t end = -1
        if self.inline:
            return self._line(p, n)
        r = _mbulk(p, pos, n, &end)
        if r is not None:
            self.pos = end
            return r
        rest = self.data[pos:] if pos else self.data
        if suspicious(rest):
            # a header hiredis would pre-size: Redis's parser takes the rest
            # (RequestReader.taken's case of a request hiredis refused)
            raise _ProtocolError("handed over to the Python parser")
        h = self.rd.hiredis
        if h is None:
            h = self.rd.new_hiredis()
        h.feed(rest)
        self.gets = h.gets
        return self.gets()

    cdef object _line(self, const char *p, Py_ssize_t n):
        # the next non-empty line's words (the read ends with "\n")
        cdef Py_ssize_t pos = self.pos, nl, i, j
        cdef list argv
        while pos < n:
            nl = <Py_ssize_t>(<const char *>memchr(p + pos, 10, n - pos) - p)
            argv = None
            i = pos
            while True:
                while i < nl and _ws(p[i]):
                    i += 1
                if i >= nl:
                    break
                j = i
                while j < nl and not _ws(p[j]):
                    j += 1
                if argv is None:
                    argv = []
                argv.append(PyBytes_FromStringAndSize(p + i, j - i))
                i = j
            pos = nl + 1
            if argv is not None:
                self.pos = pos
                return argv
        self.pos = pos
        return False


# The last command name _mbulk made (at most 32 bytes): a request whose
# first argument has the same bytes gets this object again (bytes are
# immutable: a copy would be equal in everything but identity), so that a
# connection repeating its command allocates no name and the request loop
# finds its cached lookup by identity (net/_client.pyx's _name_key).
cdef bytes _name0 = None


cdef object _mbulk(const char *p, Py_ssize_t pos, Py_ssize_t n, Py_ssize_t *end):
    # the canonical multibulk request at pos, whole, or None
    global _name0
    cdef Py_ssize_t argc, i, q, bl
    if p[pos] != 42:
        return None
    q = _len_line(p, pos + 1, n, &argc)
    if q < 0 or argc == 0 or q + 6 * argc > n:
        return None
    cdef list req = PyList_New(argc)
    for i in range(argc):
        if p[q] != 36:
            return None
        q = _len_line(p, q + 1, n, &bl)
        if q < 0 or q + bl + 2 > n or p[q + bl] != 13 or p[q + bl + 1] != 10:
            return None
        if i == 0:
            a = _name0
            if a is None or PyBytes_GET_SIZE(a) != bl or memcmp(PyBytes_AS_STRING(a), p + q, bl) != 0:
                a = PyBytes_FromStringAndSize(p + q, bl)
                if bl <= 32:
                    _name0 = a
        else:
            a = PyBytes_FromStringAndSize(p + q, bl)
        Py_INCREF(a)
        PyList_SET_ITEM(req, i, a)
        q += bl + 2
    end[0] = q
    return req


cdef ReadFeed _read_feed(bytes data, rd, bint inline):
    return _feed_at(ReadFeed.__new__(ReadFeed), data, rd, inline)


cdef ReadFeed _feed_at(ReadFeed f, bytes data, rd, bint inline):
    # f made the feed of a new read (the per-read path reuses one feed)
    f.data = data
    f.pos = 0
    f.rd = rd
    f.inline = inline
    f.gets = None
    return f


cdef void _feed_clear(ReadFeed f) noexcept:
    # f done with: nothing of the read kept alive
    f.data = None
    f.rd = None
    f.gets = None


def parse_requests(bytes data):
    """The requests the C parser takes off data before it hands over, and
    the position of the hand-over (the test of its agreement with hiredis)."""
    cdef list reqs = []
    cdef Py_ssize_t pos = 0, end = 0, n = PyBytes_GET_SIZE(data)
    while pos < n:
        r = _mbulk(PyBytes_AS_STRING(data), pos, n, &end)
        if r is None:
            break
        reqs.append(r)
        pos = end
    return reqs, pos


cdef Py_ssize_t _inline_max = INLINE_LINE_MAX


cdef bint _plain_lines(bytes data) noexcept:
    # RequestReader.feed's case of plain inline lines
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    cdef const char *p = PyBytes_AS_STRING(data)
    return (p[n - 1] == 10 and n < _inline_max and memchr(p, 42, n) == NULL and memchr(p, 34, n) == NULL
            and memchr(p, 39, n) == NULL and memchr(p, 0, n) == NULL)


def inline_requests(bytes data):
    """The requests of a read of plain inline lines, as the C parser takes
    them (None: not such a read); the test of its agreement with reader.py."""
    if not PyBytes_GET_SIZE(data) or not _plain_lines(data):
        return None
    cdef ReadFeed f = _read_feed(data, None, True)
    cdef list reqs = []
    while True:
        r = f.take()
        if r is False:
            return reqs
        reqs.append(r)


