"""What the operator tools (cli, benchmark, memtier) share to talk to a
server: where to connect (``parse_redis_uri``, redis-cli's ``atoi``), the
request encoder (``ophidis.protocol.resp.encode_argv``, the one for the whole
code base), a small typed RESP2/RESP3 client connection, and the event loop
of the load generators.

hiredis folds status and bulk strings into the same Python type and loses the
text of doubles; ophidis-cli must format each reply type as redis-cli does, so
the CLI parses replies itself into :class:`Reply` nodes.  Performance does not
matter here (the load generators parse with hiredis).
"""

from __future__ import annotations

import socket
import sys
from urllib.parse import unquote

from ophidis.protocol.resp import encode_argv

# Reply kinds
STATUS, ERROR, INTEGER, BULK, NIL, ARRAY, MAP, SET, PUSH, DOUBLE, BOOL, VERB, BIGNUM = (
    "status", "error", "integer", "bulk", "nil", "array", "map", "set", "push",
    "double", "bool", "verb", "bignum")
AGGREGATES = (ARRAY, MAP, SET, PUSH)


class Reply:
    __slots__ = ("kind", "value")

    def __init__(self, kind, value=None):
        self.kind = kind
        self.value = value   # bytes / int / bool / list of Reply

    def __repr__(self):
        return "Reply(%s, %r)" % (self.kind, self.value)

    @property
    def is_error(self):
        return self.kind == ERROR

    def to_py(self):
        """Plain Python value (bytes, int, list, dict, None)."""
        k = self.kind
        if k in (ARRAY, SET, PUSH):
            return [e.to_py() for e in self.value]
        if k == MAP:
            v = self.value
            return {v[i].to_py(): v[i + 1].to_py() for i in range(0, len(v), 2)}
        if k == NIL:
            return None
        return self.value


class ConnectionClosed(Exception):
    pass


class Parser:
    """Incremental RESP parser: feed() bytes, get() returns a Reply or None."""

    def __init__(self):
        self.buf = bytearray()
        self.pos = 0

    def feed(self, data: bytes):
        if self.pos > 65536 and self.pos > len(self.buf) // 2:
            del self.buf[:self.pos]
            self.pos = 0
        self.buf += data

    def get(self):
        try:
            r, p = self._parse(self.pos)
        except IndexError:
            return None
        if r is None:
            return None
        self.pos = p
        return r

    def _line(self, p):
        e = self.buf.find(b"\r\n", p)
        if e < 0:
            raise IndexError
        return bytes(self.buf[p:e]), e + 2

    def _parse(self, p):
        buf = self.buf
        if p >= len(buf):
            raise IndexError
        t = buf[p]
        line, p = self._line(p + 1)
        if t == 43:    # +
            return Reply(STATUS, line), p
        if t == 45:    # -
            return Reply(ERROR, line), p
        if t == 58:    # :
            return Reply(INTEGER, int(line)), p
        if t == 36 or t == 61:   # $ or = (verbatim)
            n = int(line)
            if n < 0:
                return Reply(NIL), p
            if len(buf) < p + n + 2:
                raise IndexError
            data = bytes(buf[p:p + n])
            if t == 61:
                return Reply(VERB, data[4:]), p + n + 2
            return Reply(BULK, data), p + n + 2
        if t in (42, 37, 126, 62):   # * % ~ >
            n = int(line)
            if n < 0:
                return Reply(NIL), p
            kind = {42: ARRAY, 37: MAP, 126: SET, 62: PUSH}[t]
            if kind == MAP:
                n *= 2
            items = []
            for _ in range(n):
                r, p = self._parse(p)
                items.append(r)
            return Reply(kind, items), p
        if t == 95:    # _
            return Reply(NIL), p
        if t == 44:    # ,
            return Reply(DOUBLE, line), p
        if t == 35:    # #
            return Reply(BOOL, line == b"t"), p
        if t == 40:    # (
            return Reply(BIGNUM, line), p
        if t == 124:   # | attribute: skip it, return the following reply
            n = int(line) * 2
            for _ in range(n):
                _r, p = self._parse(p)
            return self._parse(p)
        if t == 33:    # ! blob error
            n = int(line)
            if len(buf) < p + n + 2:
                raise IndexError
            return Reply(ERROR, bytes(buf[p:p + n])), p + n + 2
        raise ValueError("Protocol error, got %r as reply type byte" % chr(t))


class Connection:
    """A blocking connection speaking RESP."""

    def __init__(self, host="127.0.0.1", port=6379, unix=None, timeout=None):
        self.host, self.port, self.unix = host, port, unix
        if unix:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(timeout)
            s.connect(unix)
        else:
            s = socket.create_connection((host, port), timeout=timeout)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        s.settimeout(None)
        self.sock = s
        self.parser = Parser()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, args):
        self.sock.sendall(encode_argv(args))

    def send_raw(self, data: bytes):
        self.sock.sendall(data)

    def read_reply(self):
        while True:
            r = self.parser.get()
            if r is not None:
                return r
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionClosed("Server closed the connection")
            self.parser.feed(data)

    def command(self, *args):
        self.send(args)
        return self.read_reply()

    def pending_data(self) -> bytes:
        """Bytes received but not parsed (for raw protocol modes)."""
        d = bytes(self.parser.buf[self.parser.pos:])
        self.parser.buf = bytearray()
        self.parser.pos = 0
        return d


def new_loop():
    """An event loop for the load generators (uvloop when installed).
    asyncio is imported here, not at the top: ophidis-cli, which uses this
    module too, does not need it and would pay ~0.1 s more at each start."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is optional
        import asyncio
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def atoi(s) -> int:
    """C's atoi, as redis-cli and redis-benchmark read numeric options:
    leading blanks, a sign and digits; 0 when there are none."""
    s = s.strip()
    i = 0
    if s[:1] in "+-":
        i = 1
    j = i
    while j < len(s) and s[j].isdigit():
        j += 1
    try:
        return int(s[:j]) if j > i else 0
    except ValueError:
        return 0


def atof(s) -> float:
    try:
        return float(s)
    except ValueError:
        return 0.0


def parse_redis_uri(uri, cfg):
    """Apply ``redis://[[user]:password@]host[:port][/db]`` to ``cfg`` (its
    host, port, user, auth and input_dbnum), as redis-cli's -u does; exits
    with redis-cli's message for another scheme."""
    low = uri.lower()
    if low.startswith("rediss://"):
        _fail("rediss:// is only supported when ophidis-cli is compiled with OpenSSL\n")
    if not low.startswith("redis://"):
        _fail("Invalid URI scheme\n")
    cur = uri[len("redis://"):]
    if not cur:
        return
    at = cur.find("@")
    if at >= 0:
        userinfo = cur[:at]
        colon = userinfo.find(":")
        if colon >= 0:
            cfg.user = unquote(userinfo[:colon]) or None
            userinfo = userinfo[colon + 1:]
        cfg.auth = unquote(userinfo)
        cur = cur[at + 1:]
    if not cur:
        return
    slash = cur.find("/")
    hostport = cur if slash < 0 else cur[:slash]
    if hostport:
        if ":" in hostport:
            h, p = hostport.rsplit(":", 1)
            cfg.port = atoi(p)
            cfg.host = h
        else:
            cfg.host = hostport
    if slash >= 0 and cur[slash + 1:]:
        cfg.input_dbnum = atoi(cur[slash + 1:])


def _fail(msg):
    sys.stdout.flush()
    sys.stderr.write(msg)
    sys.stderr.flush()
    sys.exit(1)
