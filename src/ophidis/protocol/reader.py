"""The request reader of one connection: bytes in, requests out (sans-IO).

``RequestReader`` holds a connection's input state: hiredis (the fast
parser of canonical multibulk requests), the raw bytes of what is not yet
run (Redis's query buffer) and whether they are parsed by Redis's rules in
Python (``protocol.parse_request``).  It does no I/O and does not know the
client: the caller feeds each read, takes the requests off it, runs them,
and tells the reader what happened.  The limits it applies are read from
``limits`` at each use (``client_query_buffer_limit``,
``proto_max_bulk_len``: the server's values, so CONFIG SET applies at
once); whether the client is authenticated is an argument of the calls
that depend on it.

One read goes like this (client.py's ``Client._data_received``)::

    if stopped:                     # blocked, paused: nothing runs now
        reader.hold(data)
        return
    gets = reader.feed(data, authenticated)
    if gets is not None:            # hiredis parses: the request loop
        nreq, last = run(gets)      # calls gets() until False, runs each
        st = reader.taken(data, nreq, last, stopped_now, authenticated)
        # None: done.  PYTHON: the Python parser continues (below).
        # QBUF_LIMIT: close the client.  ProtocolError: Redis's error.
    else:                           # the Python parser (below)

    if reader.lines is not None:        # a read of plain inline lines,
        run each request of the list;   # already split; if one stops the
        reader.lines_stopped(k, blocked, closing)   # client after k of them
    else:
        while not stopped:
            argv = reader.next(authenticated)   # ProtocolError: Redis's error
            if argv is None: break              # needs more bytes
            if argv.__class__ is bytes:         # hiredis takes over from here:
                feed argv as a new read (a loop, not a recursion); break
            run argv
        st = reader.python_done(blocked, closing)   # None or QBUF_LIMIT

    at resume (no longer blocked or paused): if reader.resume(), the
    Python parser's loop above runs on the held bytes.

The two common cases, a read at a boundary that goes to hiredis and a
read that ends at a boundary, are inlined by the client (a Python call
costs about as much as the rest of the per-read work of a small request):
``reader.hiredis`` is fed directly when ``pend`` is None, the read starts
with ``*``, the client is authenticated and ``suspicious(data)`` is false;
``taken`` is skipped when ``pend`` is still None and the read ends with the
whole encoding of the last request (``ends_with_request``).  Nothing else
of the reader's state changes in those cases.

hiredis takes multibulk traffic of authenticated clients at a request
boundary.  Everything else goes through ``protocol.parse_request``, which
gives Redis's limits and exact ``Protocol error`` texts: inline commands,
unauthenticated clients (smaller limits), multibulk counts of seven digits
or more (hiredis pre-sizes arrays from the header: a ``*3000000000``
header must not cost gigabytes), input hiredis refuses, requests hiredis
returns in another shape than an array of bulk strings (integer, null or
nested elements, a top-level bulk), and bytes that arrive while the client
is blocked or paused (they wait in ``pend`` until ``resume``).  A multibulk
request at a boundary in Python mode goes back to hiredis.

While hiredis holds an incomplete request, ``pend`` mirrors its raw bytes
so that the query buffer limit and Redis's header validation apply
(``protocol.check_partial``, resumed where the previous read stopped: a big
request arriving in many reads costs linear time).  A read is known to end
at a request boundary when it ends with the whole encoding of the last
request hiredis returned; otherwise the rest is worked out exactly.
"""

from __future__ import annotations

import re

import hiredis

from .. import compiled
from .resp import INLINE_LINE_MAX, ProtocolError, check_partial, parse_request

# What taken() / python_done() return besides None (nothing more to do).
PYTHON = 1        # the Python parser continues: call next()
QBUF_LIMIT = 2    # the query buffer is over client-query-buffer-limit: close

_Reader = hiredis.Reader
# Redis's PROTO_MBULK_BIG_ARG: an argument this big gets a query buffer of
# its whole announced length as soon as its length line is read.
BIG_ARG = 32 * 1024


def _length(b) -> int:
    """The number of a length line already validated by check_partial."""
    try:
        return int(b)
    except ValueError:
        return -1
_DIGITS = bytes.maketrans(b"0123456789-", b"00000000000")
# "*" and seven digits (or "-"): a multibulk header hiredis would pre-size.
_LONG_HEADER = re.compile(rb"\*[-0-9]{7}").search


def _long_header(data) -> bool:
    return _LONG_HEADER(data) is not None


def _ends_with_request(data, req) -> bool:
    """Does data end with the multibulk encoding of req?  Compared in
    place from the end (no copy of big arguments)."""
    end = len(data)
    for a in reversed(req):
        if a.__class__ is not bytes or not data.endswith(b"\r\n", 0, end):
            return False
        end -= 2
        if not data.endswith(a, 0, end):
            return False
        end -= len(a)
        h = b"$%d\r\n" % len(a)
        if not data.endswith(h, 0, end):
            return False
        end -= len(h)
    return data.endswith(b"*%d\r\n" % len(req), 0, end)


# the compiled twin (protocol/_reader.pyx), picked here
_c = compiled.load("protocol._reader")
_ends_with_request_py = _ends_with_request
if _c is not None:
    _long_header = _c.long_header
    _ends_with_request = _c.ends_with_request
ends_with_request = _ends_with_request


def _suspicious(data) -> bool:
    """Could data hold a multibulk header of seven digits or more (or the
    start of one at its end)?  Such input goes through the Python parser
    (which applies Redis's limits) instead of hiredis.  C-level operations
    only: this runs once per read."""
    if _long_header(data):
        return True
    if not data.endswith(b"\r\n"):
        j = data.rfind(b"*", len(data) - 8)
        # a header starts a line: "*" at the start of the data or after "\n"
        if j >= 0 and (j == 0 or data[j - 1] == 10) \
                and not data[j + 1:].translate(_DIGITS).strip(b"0"):
            return True
    return False


suspicious = _suspicious_py = _suspicious
if _c is not None:
    suspicious = _c.suspicious


def _skip_requests(buf, nreq) -> int:
    """The position after the first nreq requests of buf (the ones hiredis
    returned)."""
    pos = 0
    for _ in range(nreq):
        try:
            argv, pos2 = parse_request(buf, pos, 2**63, False)
        except ProtocolError:
            break
        if argv is None:
            break
        pos = pos2
    return pos


if _c is not None:
    _ReaderBase, _C_FIELDS = _c.ReaderCore, frozenset(compiled.fields("protocol/_reader.pxd", "ReaderCore"))
else:
    _ReaderBase, _C_FIELDS = object, frozenset()


class RequestReader(_ReaderBase):
    """One connection's input: see the module's docstring.

    Attributes the request loop uses directly: ``hiredis`` (the parser
    whose ``gets`` ``feed`` returns; None until the connection's first
    multibulk read, and again whenever its state is thrown away: an idle
    connection costs no hiredis reader, about 1 KB).  ``pend`` is the query buffer: None
    at a request boundary, else a bytearray of the raw bytes not yet run
    (a request hiredis holds partly, or input for the Python parser).
    """

    __slots__ = tuple(n for n in ("hiredis", "pend", "check", "py", "limits",
                                  "buf", "pos", "first", "handback", "lines", "big") if n not in _C_FIELDS)

    def __init__(self, limits):
        self.hiredis = None     # made by the first read that needs it (new_hiredis)
        self.pend = None        # bytearray of unprocessed bytes, or None
        self.check = None       # (pend, state) of protocol.check_partial
        self.py = False         # pend is parsed in Python (hiredis is empty)
        self.limits = limits    # .client_query_buffer_limit, .proto_max_bulk_len
        # the Python parser's input: this read (bytes) or pend, and where it is
        self.buf = None
        self.pos = 0
        self.first = False      # the request at 0 must be parsed in Python
        self.handback = True    # a multibulk request may go back to hiredis
        self.lines = None       # requests of a read of plain inline lines, split
        # the largest big argument (BIG_ARG or more: its length + 2) seen
        # arriving in pieces since the owner last looked (memory/buffers.py
        # resets it): Redis makes it a query buffer of its own
        self.big = 0

    # -- input ------------------------------------------------------------------
    def feed(self, data, authenticated):
        """Take one read (non-empty bytes).  Returns hiredis's ``gets``
        when hiredis parses it (the request loop calls it until False and
        then ``taken``); None when the Python parser does (``next``)."""
        pend = self.pend
        if pend is None:
            # At a request boundary.  hiredis takes authenticated multibulk
            # traffic; anything else goes through Redis's rules in Python.
            # (Client._data_received inlines the hiredis case: a call costs
            # more than these checks.)
            if data[0] != 42 or not authenticated or suspicious(data):
                self.buf = data
                if (data[-1] == 10 and authenticated and 42 not in data and 34 not in data
                        and 39 not in data and 0 not in data and len(data) < INLINE_LINE_MAX):
                    # Plain inline commands in whole lines (telnet,
                    # redis-benchmark's PING_INLINE): split lines and words
                    # at C speed; the caller runs the list ``lines``
                    # instead of calling next(), and the reader is at a
                    # boundary again (unless lines_stopped says otherwise).
                    lines = data.split(b"\n")
                    lines.pop()  # the empty part after the last newline
                    reqs = []
                    for line in lines:
                        argv = line.split()
                        if argv:
                            reqs.append(argv)
                    self.lines = reqs
                    return None
                self.py = True
                self.first = False
                self.handback = True
                self.lines = None
                self.pos = 0
                return None
        elif self.py:
            pend += data
            self._python(pend, False)
            return None
        elif suspicious(data):
            pend += data
            self.hiredis = None
            self.py = True
            self._python(pend, False)
            return None
        else:
            pend += data
        h = self.hiredis
        if h is None:
            h = self.hiredis = _Reader()
        h.feed(data)
        return h.gets

    def new_hiredis(self):
        """The hiredis reader, made now (Client._data_received's inlined
        hiredis case, on a connection's first multibulk read)."""
        h = self.hiredis = _Reader()
        return h

    def hold(self, data):
        """Keep a read that arrives while nothing may run (the client is
        blocked or paused): it is parsed in Python at ``resume``."""
        pend = self.pend
        if pend is None:
            self.pend = bytearray(data)
            self.py = True
        else:
            pend += data
            if not self.py:
                self.hiredis = None
                self.py = True

    def resume(self) -> bool:
        """After a block or pause: True when held bytes wait for ``next``."""
        pend = self.pend
        if pend is None:
            return False
        if not self.py:
            self.hiredis = None
            self.py = True
        self._python(pend, False)
        return True

    def layout(self):
        """Redis's view of the query buffer (for CLIENT LIST and the client's
        memory): ``(qbuf, argv_len, argc, held)``.  Of an incomplete
        multibulk request, the arguments already whole are Redis's argv
        (argv_len bytes, argc of them) and qbuf is the rest from the data of
        the incomplete argument on (its header is consumed once read);
        ``held`` is the memory the query buffer stands for: the bytes kept,
        or for a big argument (BIG_ARG) the whole length it announced, which
        Redis allocates at once.  Anything else in ``pend`` is all qbuf."""
        pend = self.pend
        if pend is None:
            return 0, 0, 0, 0
        n = len(pend)
        if not n or pend[0] != 42:
            return n, 0, 0, n
        chk = self.check
        if chk is not None and chk[0] is pend:
            state = chk[1]
        else:
            try:
                state = check_partial(pend, None, 1 << 62, False)[1]
            except ProtocolError:
                state = None
        if state is None:
            return n, 0, 0, n
        p, left = state
        h = pend.find(b"\r\n")
        ll = _length(pend[1:h])
        if ll < left:
            return n, 0, 0, n
        argc = ll - left
        argv_len = 0
        if argc <= 64:
            i = h + 2
            for _ in range(argc):
                cr = pend.find(b"\r\n", i)
                bl = max(0, _length(pend[i + 1:cr]))
                argv_len += bl
                i = cr + 2 + bl + 2
        else:
            # many arguments: their framing ("$<len>" and two CRLFs) estimated
            argv_len = max(0, p - h - 2 - 8 * argc)
        cr = pend.find(b"\r\n", p)
        if cr < 0:
            return n - p, argv_len, argc, n
        q = cr + 2
        bl = max(0, _length(pend[p + 1:cr]))
        held = q + bl + 2 if bl >= BIG_ARG and q + bl + 2 > n else n
        return n - q, argv_len, argc, held

    def _over_limit(self, pend) -> bool:
        """Is the kept input (``pend``, the reader's) over
        client-query-buffer-limit as Redis's query buffer would be?  Of an
        incomplete request, the arguments already whole are Redis's argv,
        not its query buffer: what counts is from the incomplete argument's
        data on (``layout``'s qbuf)."""
        limit = self.limits.client_query_buffer_limit
        return len(pend) > limit and self.layout()[0] > limit

    def big_arg_over_limit(self, nbytes: int) -> bool:
        """Would nbytes more pass client-query-buffer-limit in Redis's query
        buffer?  Redis reads a big argument (BIG_ARG or more) being
        received into a buffer of its own, each read up to the argument's
        end at most, and checks that buffer after each read
        (readQueryFromClient): the argument's bytes alone count then, even
        when the read completes it.  (An incomplete request's other bytes
        are checked when kept: ``taken``, ``python_done``.)"""
        pend = self.pend
        if pend is None or len(pend) + nbytes <= self.limits.client_query_buffer_limit:
            return False
        qbuf, _, _, held = self.layout()
        n = len(pend)
        if held <= n:
            return False
        bulk = held - (n - qbuf)        # the argument's length + 2
        return min(qbuf + nbytes, bulk) > self.limits.client_query_buffer_limit

    def discard(self):
        """The connection is gone: drop the buffers."""
        self.hiredis = None
        self.pend = self.buf = self.check = self.lines = None

    # -- after hiredis's requests ran ------------------------------------------------
    def taken(self, data, nreq, last, stopped, authenticated):
        """The request loop took nreq requests off hiredis (last: the last
        one; nreq is ~n when hiredis refused the stream or gave a request
        that is not an array of bulk strings, after n requests).  stopped:
        the client may not run more now (blocked, paused, closing after the
        reply).  Returns None (wait for the next read), PYTHON (call
        ``next``, after writing the replies so far) or QBUF_LIMIT (close
        the connection; ``pend`` still holds the bytes, for the log line);
        raises ProtocolError with Redis's text."""
        if nreq < 0:
            # Continue in Python from the first unprocessed request (an
            # inline command after multibulk ones, or a malformed request
            # that gets Redis's error).
            pend = self.pend
            base = pend if pend is not None else data
            self.hiredis = None
            self.pend = bytearray(base[_skip_requests(base, ~nreq):])
            self.py = True
            self._python(self.pend, True)
            return PYTHON
        # Does hiredis hold the start of an incomplete request?  The common
        # case, the read ended with a whole request, is recognised by the
        # data ending with that request's whole encoding (its last argument
        # alone is not enough: the next request may end a read with an equal
        # argument).  Anything else is worked out exactly.
        if last.__class__ is list and last and not stopped and _ends_with_request(data, last):
            # (Client._data_received inlines this case when pend is None)
            if self.pend is not None:
                self.pend = None
                self.check = None
            return None
        return self._partial(data, nreq, stopped, authenticated)

    def _partial(self, data, nreq, stopped, authenticated):
        """Keep the raw bytes of the request hiredis has only partly seen (or
        of requests left unprocessed by a block/pause/close), so that limits
        are enforced and protocol errors get Redis's exact texts."""
        start = self.pend
        base = start if start is not None else data
        rest = base[_skip_requests(base, nreq):] if nreq else base
        if not rest:
            self.pend = None
            self.check = None
            return None
        pend = self.pend = rest if rest.__class__ is bytearray else bytearray(rest)
        if stopped:
            # The rest waits; it will be parsed again in Python.
            self.hiredis = None
            self.py = True
            return None
        limits = self.limits
        if self._over_limit(pend):
            return QBUF_LIMIT
        chk = self.check
        try:
            complete, state = check_partial(pend, chk[1] if chk is not None and chk[0] is pend else None,
                                            limits.proto_max_bulk_len, not authenticated)
        except ProtocolError:
            self.check = None
            raise
        self.check = (pend, state) if state is not None else None
        if state is not None:
            p = state[0]
            cr = pend.find(b"\r\n", p, p + 24)
            if cr > 0:
                bl = _length(pend[p + 1:cr]) + 2
                if bl - 2 >= BIG_ARG and bl > self.big:
                    self.big = bl
        if complete:
            # hiredis still waits on what Redis takes as complete (input
            # that is not canonical RESP): continue in Python.
            self.check = None
            self.hiredis = None
            self.py = True
            self._python(pend, True)
            return PYTHON
        return None

    # -- the Python parser ---------------------------------------------------------------
    def _python(self, buf, first):
        self.buf = buf
        self.pos = 0
        self.first = first
        self.handback = True
        self.lines = None

    def lines_stopped(self, k, blocked, closing):
        """The caller ran only the first k requests of ``lines`` (the client
        blocked or was paused, or closes): the rest of the read waits in
        ``pend``.  Returns None or QBUF_LIMIT (as python_done)."""
        self.lines = None
        data = self.buf
        pos = 0
        for line in data.split(b"\n"):
            pos += len(line) + 1
            if line.split():
                k -= 1
                if not k:
                    break
        self.buf = None
        if pos < len(data) and not closing:
            pend = self.pend = bytearray(data[pos:])
            self.py = True
            if len(pend) > self.limits.client_query_buffer_limit and not blocked:
                return QBUF_LIMIT
        return None

    def next(self, authenticated):
        """The next request for the Python parser: a list of bytes, None
        when more bytes are needed, or bytes: hiredis takes over from here
        (feed them as a new read; the reader is back at a boundary).
        Raises ProtocolError with Redis's text (the connection then closes
        after the replies before).  When feed() left a list in ``lines``,
        the caller runs that instead, and calls ``lines_stopped`` if it
        stops before the end (not next() nor python_done)."""
        buf = self.buf
        pos = self.pos
        n = len(buf)
        while pos < n:
            if (buf[pos] == 42 and self.handback and authenticated
                    and not (self.first and pos == 0)):
                rest = bytes(buf[pos:])
                if suspicious(rest):
                    # hiredis would send it straight back: stay in Python
                    # for this whole buffer (no ping-pong, no recursion).
                    self.handback = False
                    continue
                self.pend = self.buf = None
                self.py = False
                return rest
            argv, pos = parse_request(buf, pos, self.limits.proto_max_bulk_len, not authenticated)
            if argv is None:
                return None
            self.pos = pos
            if argv:
                return argv
        return None

    def python_done(self, blocked, closing):
        """The Python parser's caller stops (needs more bytes, or the client
        is blocked, paused or closing): keep what is left.  Returns None or
        QBUF_LIMIT (as in taken; blocked clients are exempt, as in Redis)."""
        buf = self.buf
        if buf is None:
            return None     # handed back to hiredis
        pos = self.pos
        self.buf = self.lines = None
        pend = self.pend
        if buf is pend:
            if pos:
                del buf[:pos]
            if not buf:
                self.pend = None
                self.py = False
            elif not blocked and self._over_limit(buf):
                return QBUF_LIMIT
        elif pend is None and not closing:
            # buf is the read itself: keep only the leftovers
            if pos < len(buf):
                pend = self.pend = bytearray(buf[pos:])
                if not blocked and self._over_limit(pend):
                    return QBUF_LIMIT
            else:
                self.py = False
        return None
