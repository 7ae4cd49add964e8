"""What the operator tools (cli, benchmark, memtier) share to talk to a
server: where to connect (``parse_redis_uri``, redis-cli's ``atoi``), TLS
(``TLS``: redis-cli's --tls options, the context of the whole run), the
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
import ssl
import sys
from urllib.parse import unquote

from ophidis.net.sslnative import set_ciphersuites
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


class TlsSetupError(OSError):
    """The TLS options cannot be used (redis-cli: "Could not negotiate a
    TLS connection: <text>")."""


class TlsOptions:
    """redis-cli's and redis-benchmark's TLS options (cliSSLconfig) and
    the one client context they make (cliSecureConnection): the peer's
    chain verified unless --insecure, never its name."""

    VALUED = {"--sni": "sni", "--cacert": "cacert", "--cacertdir": "cacertdir", "--cert": "cert",
              "--key": "key", "--tls-ciphers": "ciphers", "--tls-ciphersuites": "ciphersuites"}
    HELP = """  --tls              Establish a secure TLS connection.
  --sni <host>       Server name indication for TLS.
  --cacert <file>    CA Certificate file to verify with.
  --cacertdir <dir>  Directory where trusted CA certificates are stored.
                     If neither cacert nor cacertdir are specified, the default
                     system-wide trusted root certs configuration will apply.
  --insecure         Allow insecure TLS connection by skipping cert validation.
  --cert <file>      Client certificate to authenticate with.
  --key <file>       Private key file to authenticate with.
  --tls-ciphers <list> Sets the list of preferred ciphers (TLSv1.2 and below)
                     in order of preference from highest to lowest separated by colon (":").
                     See the ciphers(1ssl) manpage for more information about the syntax of this string.
  --tls-ciphersuites <list> Sets the list of preferred ciphersuites (TLSv1.3)
                     in order of preference from highest to lowest separated by colon (":").
                     See the ciphers(1ssl) manpage for more information about the syntax of this string,
                     and specifically for TLSv1.3 ciphersuites.
"""

    def __init__(self):
        self.enabled = False
        self.insecure = False
        self.sni = self.cacert = self.cacertdir = self.cert = self.key = None
        self.ciphers = self.ciphersuites = None
        self._ctx = None

    def parse(self, argv, i):
        """The option at argv[i]: the index of its last argument, or None
        when it is not a TLS option (or its value is missing)."""
        a = argv[i]
        if a == "--tls":
            self.enabled = True
            return i
        if a == "--insecure":
            self.insecure = True
            return i
        attr = self.VALUED.get(a)
        if attr is None or i + 1 >= len(argv):
            return None
        setattr(self, attr, argv[i + 1])
        return i + 1

    def context(self) -> ssl.SSLContext:
        if self._ctx is not None:
            return self._ctx
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE if self.insecure else ssl.CERT_REQUIRED
        try:
            if self.cacert or self.cacertdir:
                ctx.load_verify_locations(cafile=self.cacert, capath=self.cacertdir)
            else:
                ctx.load_default_certs()
        except (ssl.SSLError, OSError):
            raise TlsSetupError("Invalid CA Certificate File/Directory"
                                if self.cacert or self.cacertdir else "Failed to use default CA paths")
        if self.cert:
            try:
                ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cafile=self.cert)
            except (ssl.SSLError, OSError):
                raise TlsSetupError("Invalid client certificate")
        if self.cert or self.key:
            try:
                ctx.load_cert_chain(self.cert or self.key, keyfile=self.key)
            except (ssl.SSLError, OSError):
                raise TlsSetupError("Invalid private key" if self.key else "Invalid client certificate")
        if self.ciphers:
            try:
                ctx.set_ciphers(self.ciphers)
            except ssl.SSLError:
                raise TlsSetupError("Error while configuring ciphers")
        if self.ciphersuites and not set_ciphersuites(ctx, self.ciphersuites):
            raise TlsSetupError("Error while setting cypher suites")
        self._ctx = ctx
        return ctx

    def connect_kwargs(self, host) -> dict:
        """The event loop's create_connection arguments for TLS (none
        when it is off)."""
        if not self.enabled:
            return {}
        return {"ssl": self.context(), "server_hostname": self.sni or host}

    def wrap(self, sock, host):
        """The TLS connection over ``sock`` (the handshake done)."""
        return self.context().wrap_socket(sock, server_hostname=self.sni or host)


def connect_error(e: OSError) -> str:
    """hiredis's errstr of a failed connection (a failed handshake:
    "SSL_connect failed: <reason>")."""
    if isinstance(e, ssl.SSLCertVerificationError):
        return "SSL_connect failed: certificate verify failed"
    if isinstance(e, ssl.SSLError):
        text = str(e.args[1]) if len(e.args) > 1 else str(e)
        if "] " in text:
            text = text.split("] ", 1)[1]
        return "SSL_connect failed: " + text.rsplit(" (_ssl.c", 1)[0]
    return e.strerror or str(e)


# The TLS options of this run (set by the tools' option parsers); every
# TCP Connection uses them.
TLS = TlsOptions()


# the peer closed a TLS connection without a close_notify (a server that
# refused our certificate after the handshake): what hiredis reports
def _reset():
    return ConnectionResetError(104, "Connection reset by peer")


class Connection:
    """A blocking connection speaking RESP (over TLS when the run's
    ``TLS`` options ask for it and this is a TCP connection)."""

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
            if TLS.enabled:
                try:
                    s = TLS.wrap(s, host)
                except BaseException:
                    s.close()
                    raise
        s.settimeout(None)
        self.sock = s
        self.parser = Parser()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, args):
        self.send_raw(encode_argv(args))

    def send_raw(self, data: bytes):
        try:
            self.sock.sendall(data)
        except ssl.SSLEOFError:
            raise _reset()

    def read_reply(self):
        while True:
            r = self.parser.get()
            if r is not None:
                return r
            try:
                data = self.sock.recv(65536)
            except ssl.SSLEOFError:
                raise _reset()
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
        TLS.enabled = True
        cur = uri[len("rediss://"):]
    elif low.startswith("redis://"):
        cur = uri[len("redis://"):]
    else:
        _fail("Invalid URI scheme\n")
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
