"""MIGRATE (cluster.c's migrateCommand) and its cache of connections to
target instances (Redis's migrate_cached_sockets).

``MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
[AUTH password] [AUTH2 username password] [KEYS key ...]`` sends, on one
connection to the target, an optional AUTH, a SELECT when the connection's
last database differs, then one ``RESTORE key ttl payload [REPLACE]`` per
key (``RESTORE-ASKING`` when cluster mode is on), with the relative TTL the
key has left and the DUMP payload; it reads one reply line per command
sent.  Each key the target acknowledged is deleted here unless COPY, and
the command propagates as ``DEL`` of exactly those keys.

As in Redis the exchange is synchronous: the event loop waits for the
target, but never longer than ``timeout`` milliseconds per step (connect,
each 64 KB written, each reply byte awaited), as syncio.c's helpers do.
A failure on a cached connection that may simply have been closed by the
target is retried once on a new connection (not after a timeout).

``MigrateSockets`` (the server's ``migrate_sockets`` slot) keeps at most
64 connections keyed by ``host:port``; the cron closes those idle for more
than 10 seconds.  The cluster reuses both pieces.
"""

from __future__ import annotations

import errno
import random
import select
import socket
import ssl
import time

from ..cmdtable import REDACTED, command
from ..errors import SYNTAX, RedisError
from ..keyspace import notify
from ..persistence.rdb import dump_payload
from ..protocol.resp import OK, encode_argv, simple
from ..replication.propagate import rewrite_argv
from ..util import atoi, parse_int

CACHE_ITEMS = 64          # MIGRATE_SOCKET_CACHE_ITEMS
CACHE_TTL = 10            # MIGRATE_SOCKET_CACHE_TTL, seconds
WRITE_CHUNK = 64 * 1024   # the command is written in chunks of this size
LINE_MAX = 1023           # a reply line is read into a 1024-byte buffer
_RESOLUTION = 10          # syncio.c's wait resolution, milliseconds

NOKEY = simple(b"NOKEY")
CONNECT_ERR = RedisError("IOERR error or timeout connecting to the client")
KEYS_NEED_EMPTY = RedisError("ERR When using MIGRATE KEYS option, the key argument "
                             "must be set to the empty string")


def _mstime() -> int:
    return int(time.time() * 1000)


if hasattr(select, "poll"):
    def _wait(sock, writable: bool, ms: int) -> bool:
        """aeWait: True when the socket is ready (or in error) within ms."""
        p = select.poll()
        p.register(sock, select.POLLOUT if writable else select.POLLIN)
        return bool(p.poll(ms))
else:  # pragma: no cover - platforms without poll (Windows)
    def _wait(sock, writable: bool, ms: int) -> bool:
        r, w, x = select.select([] if writable else [sock], [sock] if writable else [], [sock],
                                ms / 1000.0)
        return bool(r or w or x)


def _handshake(sock, tls, timeout_ms: int):
    """The TLS client handshake on a connected non-blocking socket within
    timeout_ms: the SSL socket, or None (the socket closed)."""
    try:
        ssock = tls.wrap_socket(sock, do_handshake_on_connect=False)
    except (OSError, ValueError):
        sock.close()
        return None
    deadline = _mstime() + timeout_ms
    while True:
        try:
            ssock.do_handshake()
            return ssock
        except ssl.SSLWantReadError:
            writable = False
        except ssl.SSLWantWriteError:
            writable = True
        except (OSError, ValueError):
            break
        left = deadline - _mstime()
        if left <= 0 or not _wait(ssock, writable, left):
            break
    ssock.close()
    return None


class SocketFailure(Exception):
    """A write or read on a target connection failed; ``timed_out`` is
    Redis's ``errno == ETIMEDOUT`` (a timeout is never retried)."""

    def __init__(self, timed_out: bool):
        super().__init__("timeout" if timed_out else "socket error")
        self.timed_out = timed_out


class TargetConn:
    """One connection to a target instance (migrateCachedSocket): a
    non-blocking socket driven synchronously, with syncio.c's timeouts."""

    __slots__ = ("sock", "last_dbid", "last_use", "buf")

    def __init__(self, sock):
        self.sock = sock
        self.last_dbid = -1        # the database selected on it (-1: unknown)
        self.last_use = int(time.time())
        self.buf = bytearray()     # reply bytes read and not consumed yet

    @classmethod
    def connect(cls, host: bytes, port: int, timeout_ms: int, tls=None):
        """A connection to host:port, or None when no address could even
        be tried (connBlockingConnect).  As in Redis, a connection that is
        refused or not established within the timeout is still returned:
        the first write reports it.  With tls (an SSLContext: tls-cluster),
        the handshake is part of connecting: None when it fails or does not
        end within the timeout."""
        try:
            addrs = socket.getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM)
        except (OSError, UnicodeError, ValueError, OverflowError):
            return None
        for family, kind, proto, _, addr in addrs:
            try:
                sock = socket.socket(family, kind, proto)
            except OSError:
                continue
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.setblocking(False)
                rc = sock.connect_ex(addr)
            except OSError:
                sock.close()
                continue
            if rc in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
                break
            sock.close()
        else:
            return None
        _wait(sock, True, timeout_ms)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        if tls is not None:
            sock = _handshake(sock, tls, timeout_ms)
            if sock is None:
                return None
        return cls(sock)

    def _until(self, writable: bool, timeout_ms: int, step):
        # syncio.c's loop: try step() (True when done), else wait for the
        # socket; SocketFailure(timed out) when timeout_ms passed in all
        start = _mstime()
        remaining = timeout_ms
        while not step():
            _wait(self.sock, writable, max(remaining, _RESOLUTION))
            elapsed = _mstime() - start
            if elapsed >= timeout_ms:
                raise SocketFailure(True)
            remaining = timeout_ms - elapsed

    def write(self, data, timeout_ms: int):
        """syncWrite: all of data within timeout_ms, else SocketFailure."""
        view = memoryview(data)

        def step():
            nonlocal view
            try:
                n = self.sock.send(view)
            except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                return False
            except OSError:
                raise SocketFailure(False) from None
            view = view[n:]
            return not view
        self._until(True, timeout_ms, step)

    def _fill(self, timeout_ms: int):
        # syncRead: more bytes within timeout_ms; the end of the stream fails

        def step():
            try:
                data = self.sock.recv(16384)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                return False
            except OSError:
                raise SocketFailure(False) from None
            if not data:
                raise SocketFailure(False)
            self.buf += data
            return True
        self._until(False, timeout_ms, step)

    def readline(self, timeout_ms: int) -> bytes:
        """syncReadLine into a 1024-byte buffer: one reply line without its
        CR LF (at most 1023 bytes; a longer line is returned in pieces).
        An empty line counts as a failure, as Redis's ``<= 0`` test does."""
        buf = self.buf
        while True:
            i = buf.find(b"\n", 0, LINE_MAX)
            if i >= 0:
                line = bytes(buf[:i])
                del buf[:i + 1]
                break
            if len(buf) >= LINE_MAX:
                line = bytes(buf[:LINE_MAX])
                del buf[:LINE_MAX]
                break
            self._fill(timeout_ms)
        if not line:
            raise SocketFailure(False)
        return line[:-1] if line[-1:] == b"\r" else line

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class MigrateSockets:
    """The cache of connections to targets (``host:port`` -> TargetConn)."""

    __slots__ = ("server", "cache", "next_check")

    def __init__(self, server):
        self.server = server
        self.cache: dict = {}
        self.next_check = 0.0
        server.cron_hooks.append(self.cron)

    def __len__(self) -> int:
        return len(self.cache)

    def get(self, host: bytes, port: bytes, timeout_ms: int):
        """migrateGetSocket: the cached connection to host:port or a new
        one (dropping a random one when the cache is full); None when it
        cannot be created."""
        name = host + b":" + port
        cs = self.cache.get(name)
        if cs is not None:
            cs.last_use = int(time.time())
            return cs
        if len(self.cache) >= CACHE_ITEMS:
            victim = random.choice(list(self.cache))
            self.cache.pop(victim).close()
        srv = self.server
        tls = srv.tls.client_context() if srv.config["tls-cluster"] else None
        cs = TargetConn.connect(host, _atoi(port), timeout_ms, tls)
        if cs is None:
            return None
        self.cache[name] = cs
        return cs

    def close(self, host: bytes, port: bytes):
        """migrateCloseSocket (nothing when host:port has no connection)."""
        cs = self.cache.pop(host + b":" + port, None)
        if cs is not None:
            cs.close()

    def close_idle(self, now: int):
        """migrateCloseTimedoutSockets."""
        for name, cs in list(self.cache.items()):
            if now - cs.last_use > CACHE_TTL:
                del self.cache[name]
                cs.close()

    def cron(self):
        # once a second, as serverCron's run_with_period(1000)
        if not self.cache:
            return
        now = time.monotonic()
        if now >= self.next_check:
            self.next_check = now + 1.0
            self.close_idle(int(time.time()))


def _atoi(b: bytes) -> int:
    """C's atoi, clamped to an int of 32 bits."""
    return max(-(1 << 31), min((1 << 31) - 1, atoi(b)))


class Options:
    """MIGRATE's options after destination-db and timeout."""

    __slots__ = ("copy", "replace", "username", "password", "first_key", "num_keys")

    def __init__(self, argv, secrets=None):
        """Parse argv[6:] (SYNTAX or KEYS_NEED_EMPTY on error); the indexes
        of credentials are appended to ``secrets`` as they are parsed."""
        self.copy = self.replace = False
        self.username = self.password = None
        self.first_key, self.num_keys = 3, 1
        n = len(argv)
        j = 6
        while j < n:
            opt = argv[j].lower()
            more = n - 1 - j
            if opt == b"copy":
                self.copy = True
            elif opt == b"replace":
                self.replace = True
            elif opt == b"auth":
                if not more:
                    raise SYNTAX
                j += 1
                self.password = argv[j]
                if secrets is not None:
                    secrets.append(j)
            elif opt == b"auth2":
                if more < 2:
                    raise SYNTAX
                self.username, self.password = argv[j + 1], argv[j + 2]
                if secrets is not None:
                    secrets += (j + 1, j + 2)
                j += 2
            elif opt == b"keys":
                if argv[3]:
                    raise KEYS_NEED_EMPTY
                self.first_key, self.num_keys = j + 1, n - j - 1
                break
            else:
                raise SYNTAX
            j += 1


def redact_migrate(argv):
    """SLOWLOG and MONITOR do not show AUTH's password nor AUTH2's
    username and password (those parsed before an error, as Redis)."""
    secrets = []
    try:
        Options(argv, secrets)
    except RedisError:
        pass
    out = list(argv)
    for i in secrets:
        out[i] = REDACTED
    return out


@command("migrate", redact=redact_migrate)
def migrate(c, argv):
    opts = Options(argv)
    timeout = parse_int(argv[5])
    dbid = parse_int(argv[4])
    if timeout <= 0:
        timeout = 1000

    # The keys that are here; none at all is not an error (they may just
    # have expired meanwhile).
    db = c.db
    keys = []
    for key in argv[opts.first_key:opts.first_key + opts.num_keys]:
        v = db.lookup_read(key)
        if v is not None:
            keys.append((key, v))
    if not keys:
        return NOKEY

    srv = c.server
    sockets = srv.migrate_sockets
    host, port = argv[1], argv[2]
    restore = b"RESTORE-ASKING" if srv.config["cluster-enabled"] else b"RESTORE"
    auth = None
    if opts.password is not None:
        auth = encode_argv([b"AUTH", opts.password] if opts.username is None
                           else [b"AUTH", opts.username, opts.password])
    may_retry = True
    while True:
        cs = sockets.get(host, port, timeout)
        if cs is None:
            raise CONNECT_ERR
        out = [] if auth is None else [auth]
        select_db = cs.last_dbid != dbid
        if select_db:
            out.append(encode_argv([b"SELECT", b"%d" % dbid]))
        # One RESTORE per key still alive, with the TTL it has left (keys
        # that expired since the lookup are dropped, for a retry too).
        alive = []
        for key, v in keys:
            ttl = 0
            when = db.expires.get(key)
            if when is not None:
                ttl = when - _mstime()
                if ttl < 0:
                    continue
                if ttl < 1:
                    ttl = 1
            alive.append((key, v))
            cmd = [restore, key, b"%d" % ttl, dump_payload(v, srv.config)]
            if opts.replace:
                cmd.append(b"REPLACE")
            out.append(encode_argv(cmd))
        keys = alive
        data = memoryview(b"".join(out))
        out = None
        write_error = False
        try:
            for pos in range(0, len(data), WRITE_CHUNK):
                cs.write(data[pos:pos + WRITE_CHUNK], timeout)
        except SocketFailure as e:
            failure, write_error = e, True
        else:
            try:
                auth_line = cs.readline(timeout) if auth is not None else b""
                select_line = cs.readline(timeout) if select_db else b""
            except SocketFailure as e:
                failure = e
            else:
                error, failure, replies = _restore_replies(c, cs, keys, auth_line, select_line,
                                                           opts.copy, timeout)
                if failure is None or error is not None or replies:
                    if failure is not None:
                        sockets.close(host, port)
                    if error is not None:
                        raise error
                    if failure is None:
                        cs.last_dbid = dbid
                        return OK
                    may_retry = False      # some keys moved: reported, never retried
        # A socket error: once more on a new connection (the cached one may
        # just have been closed by the target), unless it was a timeout.
        sockets.close(host, port)
        if may_retry and not failure.timed_out:
            may_retry = False
            continue
        raise RedisError("IOERR error or timeout %s to target instance"
                         % ("writing" if write_error else "reading"))


def _restore_replies(c, cs, keys, auth_line, select_line, copy, timeout):
    """Read one reply per RESTORE sent; delete (unless COPY) each key the
    target acknowledged, and propagate exactly those as DEL.  Returns
    (the target's first error as ours or None, the SocketFailure that
    stopped the reading or None, the number of replies read)."""
    db = c.db
    srv = c.server
    error = failure = None
    acked = []
    read = 0
    for key, _ in keys:
        try:
            line = cs.readline(timeout)
        except SocketFailure as e:
            failure = e
            break
        read += 1
        if auth_line[:1] == b"-" or select_line[:1] == b"-" or line[:1] == b"-":
            if error is None:
                cs.last_dbid = -1      # what is selected there is unknown now
                if auth_line[:1] == b"-":
                    line = auth_line
                elif select_line[:1] == b"-":
                    line = select_line
                error = RedisError(b"ERR Target instance replied with error: " + line[1:])
        elif not copy:
            db.server_delete(key)
            db.signal(key)
            notify.notify(notify.GENERIC, b"del", key, db.id)
            srv.dirty += 1
            acked.append(key)
    if acked:
        rewrite_argv(c, [b"DEL"] + acked)
    return error, failure, read
