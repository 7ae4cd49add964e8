"""MIGRATE (cluster.c's migrateCommand).

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
target is retried once on a new connection (not after a timeout).  The
connections are the server's ``migrate_sockets`` (cluster/migrate_sockets.py:
the cache and syncio.c's timed reads and writes).
"""

from __future__ import annotations

from ..cluster.migrate_sockets import SocketFailure
from ..cmdtable.registry import REDACTED, command
from ..errors import SYNTAX, RedisError
from ..keyspace import notify
from ..keyspace.db import mstime
from ..persistence.rdb import dump_payload
from ..protocol.resp import OK, encode_argv, simple
from ..replication.propagate import rewrite_argv
from ..util import parse_int

WRITE_CHUNK = 64 * 1024   # the command is written in chunks of this size

NOKEY = simple(b"NOKEY")
CONNECT_ERR = RedisError("IOERR error or timeout connecting to the client")
KEYS_NEED_EMPTY = RedisError("ERR When using MIGRATE KEYS option, the key argument "
                             "must be set to the empty string")


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
                ttl = when - mstime()
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
