"""A byte-exact RESP client for tests: replies are returned as the raw bytes
the server sent, so formatting (doubles, nulls, RESP3 types) is compared
exactly."""

from __future__ import annotations

import socket


def encode(*args) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, (int, float)):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def reply_end(buf: bytes, pos: int = 0):
    """Index just past the reply starting at pos, or None if incomplete."""
    nl = buf.find(b"\r\n", pos)
    if nl < 0:
        return None
    t = buf[pos:pos + 1]
    line = buf[pos + 1:nl]
    after = nl + 2
    if t in (b"+", b"-", b":", b",", b"_", b"#", b"("):
        return after
    if t in (b"$", b"=", b"!"):
        n = int(line)
        if n < 0:
            return after
        end = after + n + 2
        return end if len(buf) >= end else None
    if t in (b"*", b"~", b">", b"%", b"|"):
        n = int(line)
        if n < 0:
            return after
        if t in (b"%", b"|"):
            n *= 2
        p = after
        for _ in range(n):
            p = reply_end(buf, p)
            if p is None:
                return None
        return p
    raise ValueError("bad reply type %r" % buf[pos:pos + 20])


class RawConn:
    def __init__(self, port, timeout=10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def send(self, *args):
        self.sock.sendall(encode(*args))

    def read(self, timeout=None) -> bytes:
        if timeout is not None:
            self.sock.settimeout(timeout)
        while True:
            end = reply_end(self.buf) if self.buf else None
            if end is not None:
                r, self.buf = self.buf[:end], self.buf[end:]
                return r
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed")
            self.buf += data

    def cmd(self, *args) -> bytes:
        self.send(*args)
        return self.read()

    def close(self):
        self.sock.close()
