"""The byte-exact RESP client of the test suite.

Requests: ``encode(*argv)`` is the multibulk form of a command (what every
client sends); ``RespConn.send_raw`` sends any bytes (inline commands,
malformed input).  Replies: ``parse(buf, pos)`` decodes exactly one RESP2 or
RESP3 reply, so a reader knows from the protocol when a reply is complete
(never from a moment of silence); ``RespConn.read`` returns the exact bytes
of one reply, ``read_reply`` the bytes and the decoded value.

To see *all* the replies to what was sent (extra ones included), send QUIT
after it and read until the server closes: ``quit_and_read`` /
``exchange``.  Only two helpers wait on purpose, and say so:
``read_until_closed`` (the server is expected to close the connection) and
``nothing_within`` / ``assert_nothing_within`` (nothing may arrive for a
while, e.g. a client that must stay blocked); ``read_until_quiet`` is the
last resort for input whose replies cannot be told in advance.

Expected replies are built with ``bulk``, ``array``, ``error``.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from typing import Any

DEFAULT_TIMEOUT = 10.0


# -- requests -----------------------------------------------------------------------

def arg_bytes(a) -> bytes:
    """One request argument as bytes: bytes as they are, str UTF-8, numbers
    as their decimal text (``str(x)``)."""
    if isinstance(a, (bytes, bytearray, memoryview)):
        return bytes(a)
    if isinstance(a, str):
        return a.encode()
    if isinstance(a, (int, float)) and not isinstance(a, bool):
        return str(a).encode()
    raise TypeError("cannot send %r as a request argument" % (a,))


def encode(*args) -> bytes:
    """A command as a RESP multibulk request: ``*<n>`` then one bulk string
    per argument."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = arg_bytes(a)
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def inline(*args) -> bytes:
    """A command in the inline form (space-separated, no quoting)."""
    return b" ".join(arg_bytes(a) for a in args) + b"\r\n"


# -- expected replies ---------------------------------------------------------------

def bulk(x) -> bytes:
    """A RESP2 bulk string (None: the null bulk string)."""
    if x is None:
        return b"$-1\r\n"
    x = arg_bytes(x)
    return b"$%d\r\n%s\r\n" % (len(x), x)


def array(*items) -> bytes:
    """A RESP2 array of bulk strings (None items: null bulk strings)."""
    return b"*%d\r\n" % len(items) + b"".join(bulk(i) for i in items)


def error(msg) -> bytes:
    """The error reply for msg (``-`` + msg + CRLF)."""
    return b"-" + arg_bytes(msg) + b"\r\n"


# -- decoded reply values -------------------------------------------------------------

class Simple(bytes):
    """A simple string reply (``+``)."""


class Error(bytes):
    """An error reply (``-`` or RESP3 blob error ``!``)."""


class Verbatim(bytes):
    """A RESP3 verbatim string (``=``): the text, with ``format`` (b"txt")."""
    format = b""


class Push(list):
    """A RESP3 push (``>``)."""


class Set(list):
    """A RESP3 set (``~``), in the order the server sent it."""


class Map(dict):
    """A RESP3 map (``%``); array keys become tuples."""


class BigNumber(int):
    """A RESP3 big number (``(``)."""


class Incomplete(Exception):
    """The buffer does not hold a complete reply yet."""


def _key(v):
    return tuple(_key(x) for x in v) if isinstance(v, list) else v


def parse(buf: bytes, pos: int = 0):
    """Decode the one reply starting at buf[pos]: (value, end offset).
    Raises Incomplete when buf ends before the reply does, ValueError on a
    byte that starts no RESP type.  An attribute (``|``) is skipped: the
    value is that of the reply it annotates (its bytes stay in the reply's
    exact bytes)."""
    nl = buf.find(b"\r\n", pos)
    if nl < 0:
        raise Incomplete
    t = buf[pos:pos + 1]
    line = bytes(buf[pos + 1:nl])
    after = nl + 2
    if t == b"+":
        return Simple(line), after
    if t == b"-":
        return Error(line), after
    if t == b":":
        return int(line), after
    if t == b"(":
        return BigNumber(int(line)), after
    if t == b",":
        return float(line), after
    if t == b"_":
        return None, after
    if t == b"#":
        return line == b"t", after
    if t in (b"$", b"=", b"!"):
        n = int(line)
        if n < 0:
            return None, after
        end = after + n
        if len(buf) < end + 2:
            raise Incomplete
        data = bytes(buf[after:end])
        if t == b"!":
            data = Error(data)
        elif t == b"=":
            fmt, data = data[:3], Verbatim(data[4:])
            data.format = fmt
        return data, end + 2
    if t in (b"*", b"~", b">", b"%", b"|"):
        n = int(line)
        if n < 0:
            return None, after
        p = after
        if t in (b"%", b"|"):
            pairs = []
            for _ in range(n):
                k, p = parse(buf, p)
                v, p = parse(buf, p)
                pairs.append((_key(k), v))
            if t == b"|":
                return parse(buf, p)
            return Map(pairs), p
        items = []
        for _ in range(n):
            v, p = parse(buf, p)
            items.append(v)
        if t == b">":
            return Push(items), p
        if t == b"~":
            return Set(items), p
        return items, p
    raise ValueError("not a RESP reply: %r" % bytes(buf[pos:pos + 40]))


# -- the connection -----------------------------------------------------------------

@dataclass
class Reply:
    """One reply: its exact bytes and its decoded value."""
    raw: bytes
    value: Any


class RespConn:
    """One raw connection to a server.  ``call(*argv)`` (also ``conn(*argv)``)
    sends a command and returns the exact bytes of its reply."""

    def __init__(self, port=None, host="127.0.0.1", *, unix=None, timeout=DEFAULT_TIMEOUT,
                 resp3=False, sock=None):
        if sock is None:
            if unix is not None:
                sock = socket.socket(socket.AF_UNIX)
                sock.settimeout(timeout)
                sock.connect(unix)
            else:
                sock = socket.create_connection((host, port), timeout=timeout)
        self.sock = sock
        self.timeout = timeout
        self.sock.settimeout(timeout)
        self.buf = b""
        if resp3:
            hello = self.call("HELLO", "3")
            assert hello.startswith(b"%"), hello

    # sending
    def send(self, *args):
        self.sock.sendall(encode(*args))

    def send_raw(self, data: bytes):
        self.sock.sendall(data)

    # receiving
    def recv_more(self, timeout=None):
        """Receive what the server sent next into the buffer (waits up to
        timeout seconds)."""
        self.sock.settimeout(self.timeout if timeout is None else timeout)
        data = self.sock.recv(1 << 20)
        if not data:
            raise ConnectionError("connection closed by the server; unread: %r" % self.buf[:200])
        self.buf += data

    def read_reply(self, timeout=None) -> Reply:
        """The next reply, complete (waits up to timeout seconds per recv;
        socket.timeout if it does not come)."""
        while True:
            if self.buf:
                try:
                    value, end = parse(self.buf)
                except Incomplete:
                    pass
                else:
                    raw, self.buf = self.buf[:end], self.buf[end:]
                    return Reply(raw, value)
            self.recv_more(timeout)

    def read(self, timeout=None) -> bytes:
        """The exact bytes of the next reply."""
        return self.read_reply(timeout).raw

    def read_value(self, timeout=None):
        """The decoded value of the next reply."""
        return self.read_reply(timeout).value

    def read_replies(self, n, timeout=None) -> bytes:
        """The exact bytes of the next n replies, concatenated."""
        return b"".join(self.read(timeout) for _ in range(n))

    def expect(self, expected: bytes, timeout=None) -> bytes:
        """Read whole replies until they are as long as expected, and assert
        they are expected (for a known sequence of replies or pushes)."""
        got = b""
        while len(got) < len(expected):
            got += self.read(timeout)
        assert got == expected, "expected %r, got %r" % (expected[:300], got[:300])
        return got

    def call(self, *args) -> bytes:
        self.send(*args)
        return self.read()

    __call__ = call

    def call_value(self, *args):
        self.send(*args)
        return self.read_value()

    def pipeline(self, *cmds) -> bytes:
        """Send every command (argv tuples) in one write, read one reply per
        command: the exact bytes, concatenated."""
        self.sock.sendall(b"".join(encode(*c) for c in cmds))
        return self.read_replies(len(cmds))

    # the helpers that wait on purpose
    def read_until_closed(self, timeout=DEFAULT_TIMEOUT) -> bytes:
        """Everything the server sends until it closes the connection (a
        reset counts as a close).  socket.timeout if it stays open."""
        deadline = time.monotonic() + timeout
        data, self.buf = self.buf, b""
        while True:
            self.sock.settimeout(max(0.001, deadline - time.monotonic()))
            try:
                more = self.sock.recv(1 << 20)
            except ConnectionResetError:
                return data
            if not more:
                return data
            data += more

    def quit_and_read(self, timeout=DEFAULT_TIMEOUT) -> bytes:
        """Send QUIT and return every byte the server sent before QUIT's
        +OK (and after the replies already read): the server closing the
        connection marks the end, so a test sees all the replies to what it
        sent, extra ones included, without waiting for a pause."""
        self.send("QUIT")
        data = self.read_until_closed(timeout)
        assert data.endswith(b"+OK\r\n"), "no +OK for QUIT at the end of %r" % data[-300:]
        return data[:-5]

    def read_until_quiet(self, seconds) -> bytes:
        """Everything that arrives until the server closes the connection or
        sends nothing for ``seconds``: only for input whose replies cannot
        be told in advance (malformed or cut requests compared between two
        servers); a pause is then the only end there is."""
        data, self.buf = self.buf, b""
        self.sock.settimeout(seconds)
        try:
            while True:
                more = self.sock.recv(1 << 20)
                if not more:
                    break
                data += more
        except (socket.timeout, ConnectionResetError):
            pass
        finally:
            self.sock.settimeout(self.timeout)
        return data

    def nothing_within(self, seconds) -> bool:
        """True when no byte arrives for ``seconds`` (and none is unread)."""
        if self.buf:
            return False
        self.sock.settimeout(max(seconds, 0.001))
        try:
            more = self.sock.recv(1 << 20)
        except socket.timeout:
            return True
        finally:
            self.sock.settimeout(self.timeout)
        if not more:
            raise ConnectionError("connection closed by the server")
        self.buf += more
        return False

    def assert_nothing_within(self, seconds):
        """Fail when any byte arrives within ``seconds``."""
        assert self.nothing_within(seconds), "unexpected data: %r" % self.buf[:200]

    def closed_within(self, seconds) -> bool:
        """True when the server closes the connection within ``seconds``
        (what it sends until then is discarded)."""
        try:
            self.read_until_closed(seconds)
        except socket.timeout:
            return False
        return True

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def slow_reader(port, name, timeout=DEFAULT_TIMEOUT) -> RespConn:
    """A connection with a small receive buffer (the kernel then holds
    little of what the server sends: its output stays in the server), named
    ``name`` with CLIENT SETNAME."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(timeout)
    sock.connect(("127.0.0.1", port))
    conn = RespConn(sock=sock, timeout=timeout)
    assert conn.call("CLIENT", "SETNAME", name) == b"+OK\r\n"
    return conn


def exchange(port, payload: bytes, timeout=DEFAULT_TIMEOUT) -> bytes:
    """On a new connection: send payload (requests, as bytes), then QUIT;
    everything the server replied to the payload (see quit_and_read)."""
    with RespConn(port, timeout=timeout) as c:
        c.send_raw(payload)
        return c.quit_and_read(timeout)


def command(port, *args, timeout=DEFAULT_TIMEOUT) -> bytes:
    """One command on a new connection: the exact bytes of its reply."""
    with RespConn(port, timeout=timeout) as c:
        return c.call(*args)
