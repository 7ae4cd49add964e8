"""Server commands: FLUSHDB FLUSHALL SWAPDB TIME LASTSAVE CONFIG SHUTDOWN
MONITOR SLOWLOG WAIT DEBUG."""

from __future__ import annotations

from .. import log
from ..cmdtable.registry import ALL, REDACTED, command
from ..config import ConfigError
from ..config.table import DIRECTIVES
from ..errors import LOADING, SYNTAX, RedisError
from ..keyspace.blocking import parse_timeout
from ..keyspace.db import cmd_time, stats
from ..keyspace.watch import touch_all_watched_in_db
from ..protocol.resp import OK, bulk, bulk_array, help_reply, integer, map_header
from ..replication.propagate import force_propagation
from ..util import parse_int


def _flush_flags(argv, srv=None):
    if len(argv) > 2:
        raise SYNTAX
    if len(argv) == 2:
        m = argv[1].lower()
        if m == b"sync":
            return False
        if m == b"async":
            return True
        raise SYNTAX
    return bool(srv is not None and srv.config["lazyfree-lazy-user-flush"])


def _flush_mode(c, argv):
    """(lazy, blocking) for FLUSHALL/FLUSHDB: getFlushCommandFlags, and
    Redis 7.4's SYNC run as a blocking ASYNC (the dataset is emptied at
    once, the client waits for the background free: flushCommandCommon)
    unless the client may not block (CLIENT_AVOID_BLOCKING_ASYNC_FLUSH:
    MULTI, scripts, the Lua debugger, the AOF's commands).  Our master
    link's client frees in the background without waiting (Redis blocks
    it too: its stream waits; here the replica applies on)."""
    if _flush_flags(argv, c.server):
        return True, False
    if c.in_exec or c.in_script or c.lua_debug or c.transport is None:
        return False, False
    return True, not c.is_master


def _tracking_flush(srv):
    trk = srv.tracking
    if trk.nclients or trk.table:
        trk.on_flush()


def _flush_db(srv, db, lazy):
    """Empty db; with lazy, its old contents are freed incrementally."""
    d, exp = db.d, db.expires
    n = db.flush()
    if lazy:
        srv.lazyfree.free_db(d, exp)
        for s in db.shapes:
            s.drop(db.dels)
    return n


def _flushed(c, blocking):
    if not blocking:
        return OK
    srv = c.server
    srv.blocking_handler.block_lazyfree(c, srv.lazyfree)
    return None


@command("flushdb", flags=("touches_dbs", "may_block"))
def flushdb(c, argv):
    lazy, blocking = _flush_mode(c, argv)
    db = c.db
    n = _flush_db(c.server, db, lazy)
    _tracking_flush(c.server)
    c.server.dirty += n
    force_propagation(c)          # even an empty db's FLUSHDB reaches AOF and replicas
    return _flushed(c, blocking)


@command("flushall", flags=("touches_dbs", "may_block"))
def flushall(c, argv):
    srv = c.server
    lazy, blocking = _flush_mode(c, argv)
    n = 0
    for db in srv.dbs:
        n += _flush_db(srv, db, lazy)
    _tracking_flush(srv)
    srv.dirty += n
    srv.persistence.flushall()    # with save points: an RDB save, which resets the dirty count
    force_propagation(c)          # (so the command is propagated all the same)
    return _flushed(c, blocking)


@command("swapdb", flags=("touches_dbs",))
def swapdb(c, argv):
    srv = c.server
    if srv.config["cluster-enabled"]:
        raise RedisError("ERR SWAPDB is not allowed in cluster mode")
    a = parse_int(argv[1], RedisError("ERR invalid first DB index"))
    b = parse_int(argv[2], RedisError("ERR invalid second DB index"))
    if a < -(2**31) or a > 2**31 - 1:
        raise RedisError("ERR invalid first DB index")
    if b < -(2**31) or b > 2**31 - 1:
        raise RedisError("ERR invalid second DB index")
    n = len(srv.dbs)
    if a < 0 or a >= n or b < 0 or b >= n:
        raise RedisError("ERR DB index is out of range")
    if a != b:
        da, db_ = srv.dbs[a], srv.dbs[b]
        touch_all_watched_in_db(da, db_)
        touch_all_watched_in_db(db_, da)
        da.d, db_.d = db_.d, da.d
        da.expires, db_.expires = db_.expires, da.expires
        da.hfe, db_.hfe = db_.hfe, da.hfe
        da.hfe_heap, db_.hfe_heap = db_.hfe_heap, da.hfe_heap
        da.avg_ttl, db_.avg_ttl = db_.avg_ttl, da.avg_ttl
        da.shapes, db_.shapes = db_.shapes, da.shapes
        da.dels += 1
        db_.dels += 1
        da._expire_snapshot = db_._expire_snapshot = None
        da._scan_cache = {}
        db_._scan_cache = {}
        # Keys that now hold data may serve their clients, and a stream that
        # went away ends the wait of XREADGROUP clients: signal them all.
        for d in (da, db_):
            for key in d.blocking_keys:
                srv.ready_keys.append((d, key))
    srv.dirty += 1
    return OK


@command("time")
def time_(c, argv):
    t = cmd_time()      # a script's, or EXEC's, start (Redis 7.2: the cached time)
    sec = int(t)
    usec = int((t - sec) * 1e6)
    return bulk_array([b"%d" % sec, b"%d" % usec])


@command("lastsave")
def lastsave(c, argv):
    return integer(c.server.lastsave)


@command("wait")
def wait(c, argv):
    """WAIT numreplicas timeout: the replicas that acknowledged the stream
    up to this client's last write, blocking until enough did or the
    timeout passed."""
    srv = c.server
    if srv.replica_link is not None:
        raise RedisError("ERR WAIT cannot be used with replica instances. Please also note that since "
                         "Redis 4.0 if a replica is configured to be writable (which is not the default) "
                         "writes to replicas are just local and are not propagated.")
    num = parse_int(argv[1])
    deadline = parse_timeout(argv[2], seconds=False)
    feed = srv.repl_feed
    off = c.woff        # the client's own last write (and all before it)
    n = feed.count_acks(off)
    if n >= num or c.in_exec or c.in_script:     # (a script's WAIT answers at once, 7.2)
        return integer(n)

    def timed_out(c):
        feed.drop_waiting(c)
        return integer(feed.count_acks(off))

    srv.blocking_handler.block(c, (), deadline, None, timed_out)
    feed.add_waiting(c, off, num)
    return None


@command("waitaof")
def waitaof(c, argv):
    """WAITAOF numlocal numreplicas timeout (7.2): whether our AOF has
    fsynced everything written so far, and how many replicas' AOFs have
    (their REPLCONF ACK ... FACK), blocking until both are reached or the
    timeout passed.  As WAIT, for the client's last write and what preceded it."""
    srv = c.server
    numlocal = parse_int(argv[1])
    if not 0 <= numlocal <= 1:
        raise RedisError("ERR value is out of range, value must between 0 and 1")
    num = parse_int(argv[2], _NOT_POSITIVE)
    if num < 0:
        raise _NOT_POSITIVE
    deadline = parse_timeout(argv[3], seconds=False)
    if srv.replica_link is not None:
        raise RedisError("ERR WAITAOF cannot be used with replica instances. Please also note that writes to "
                         "replicas are just local and are not propagated.")
    aof = srv.aof
    if numlocal and not srv.config["appendonly"]:     # (server.aof_enabled: on, even with its rewrite postponed)
        raise RedisError("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.")
    feed = srv.repl_feed
    off = c.woff
    n = feed.count_aof_acks(off)
    local = int(aof.fsynced_reploff >= off)
    if (n >= num and local >= numlocal) or c.in_exec or c.in_script:
        return b"*2\r\n:%d\r\n:%d\r\n" % (local, n)

    def timed_out(c):
        feed.drop_waiting(c)
        return b"*2\r\n:%d\r\n:%d\r\n" % (int(aof.fsynced_reploff >= off), feed.count_aof_acks(off))

    srv.blocking_handler.block(c, (), deadline, None, timed_out)
    feed.add_waiting(c, off, num, numlocal)
    return None


_NOT_POSITIVE = RedisError("ERR value is out of range, must be positive")


# -- CONFIG ---------------------------------------------------------------------------

@command("config|get")
def config_get(c, argv):
    pats = [a.decode("utf-8", "surrogateescape") for a in argv[2:]]
    items = c.server.config.get_matching(pats)
    out = [map_header(c.resp, len(items))]
    for k, v in items:
        out.append(bulk(k.encode()))
        out.append(bulk(v.encode("utf-8", "surrogateescape")))
    return b"".join(out)


def _sensitive_directives():
    out = set()
    for d in DIRECTIVES:
        if "sensitive" in d[3]:
            out.add(d[0].encode())
            if d[1]:
                out.add(d[1].encode())
    return frozenset(out)


_SENSITIVE = _sensitive_directives()


def redact_config_set(argv):
    """The values of sensitive directives never show in SLOWLOG/MONITOR."""
    out = list(argv)
    for i in range(2, len(out) - 1, 2):
        if out[i].lower() in _SENSITIVE:
            out[i + 1] = REDACTED
    return out


# directives CONFIG SET refuses while loading (DENY_LOADING_CONFIG)
_DENY_LOADING = {d[0] for d in DIRECTIVES if "deny_loading" in d[3]}


@command("config|set", propagate=False, redact=redact_config_set)
def config_set(c, argv):
    if len(argv) % 2:
        raise SYNTAX
    pairs = [(argv[i].decode("utf-8", "surrogateescape"), argv[i + 1].decode("utf-8", "surrogateescape"))
             for i in range(2, len(argv), 2)]
    srv = c.server
    try:
        if srv.loading or srv.async_loading:
            for name, _ in pairs:
                if name.lower() in _DENY_LOADING:
                    raise LOADING
        srv.config.set_many_atomic(pairs, check_protected=lambda: srv.protected_allowed(c))
    except ConfigError as e:
        raise RedisError("ERR %s" % e)
    return OK


@command("config|resetstat")
def config_resetstat(c, argv):
    srv = c.server
    stats.reset()
    for cmd in ALL.values():
        cmd.calls = 0
        cmd.usec = 0
        cmd.rejected_calls = 0
        cmd.failed_calls = 0
        cmd.slowlog_stats = None
        cmd.hist = [0] * 64
    srv.ops_samples.clear()
    srv.el_samples.clear()
    srv.el_dur_samples.clear()
    srv._last_sample = None
    srv.latency_events.clear()
    if srv.cluster is not None:
        srv.cluster.slot_stats.reset()     # clusterSlotStatResetAll
    return OK


@command("config|rewrite")
def config_rewrite(c, argv):
    cfg = c.server.config
    if not cfg.config_file:
        raise RedisError("ERR The server is running without a config file")
    try:
        cfg.rewrite(cfg.config_file)
    except OSError as e:
        log.warning("CONFIG REWRITE failed: %s" % e.strerror)
        raise RedisError("ERR Rewriting config file: %s" % e.strerror)
    log.notice("CONFIG REWRITE executed with success.")
    return OK


@command("config|help")
def config_help(c, argv):
    return help_reply(b"CONFIG", b"""\
GET <pattern>
    Return parameters matching the glob-like <pattern> and their values.
SET <directive> <value>
    Set the configuration <directive> to <value>.
RESETSTAT
    Reset statistics reported by the INFO command.
REWRITE
    Rewrite the configuration file.
""")


# -- SHUTDOWN ---------------------------------------------------------------------------

@command("shutdown")
def shutdown(c, argv):
    nosave = save = now = force = abort = False
    for a in argv[1:]:
        o = a.lower()
        if o == b"nosave":
            nosave = True
        elif o == b"save":
            save = True
        elif o == b"now":
            now = True
        elif o == b"force":
            force = True
        elif o == b"abort":
            abort = True
        else:
            raise SYNTAX
    if (abort and len(argv) != 2) or (nosave and save):
        raise SYNTAX
    srv = c.server
    if abort:
        if srv.abort_shutdown():
            return OK
        raise RedisError("ERR No shutdown in progress.")
    if srv.script_busy is not None and not nosave:
        raise RedisError(srv.script_busy)
    if c.multi is not None or c.in_script:
        pass
    err = srv.request_shutdown(nosave=nosave, save=save, now=now, force=force, waiter=c)
    if err == "waiting":
        # replicas are catching up: the reply comes when the shutdown ends
        srv.blocking_handler.block(c, (), 0, None, lambda c: None)
        return None
    if err == "in-progress":
        raise RedisError("ERR Errors trying to SHUTDOWN. Check logs.")
    if err:
        raise RedisError("ERR %s" % err)
    c.close_after_reply = True
    return None


# -- MONITOR ------------------------------------------------------------------------------

@command("monitor")
def monitor(c, argv):
    if c.monitor:
        return OK
    c.monitor = True
    c.server.monitors.append(c)
    c.server.update_server_slow()
    return OK


# -- SLOWLOG ------------------------------------------------------------------------------

@command("slowlog|get")
def slowlog_get(c, argv):
    srv = c.server
    count = 10
    if len(argv) == 3:
        count = parse_int(argv[2], RedisError("ERR count should be greater than or equal to -1"))
        if count < -1:
            raise RedisError("ERR count should be greater than or equal to -1")
        if count == -1:
            count = len(srv.slowlog)
    entries = list(srv.slowlog)[:count]
    out = [b"*%d\r\n" % len(entries)]
    for e in entries:
        # Redis 8.10: a 7th field, the command's argument count before the
        # entry trimmed its arguments
        out.append(b"*7\r\n")
        out.append(integer(e.id))
        out.append(integer(e.time))
        out.append(integer(e.duration))
        out.append(bulk_array(e.argv))
        out.append(bulk(e.addr))
        out.append(bulk(e.name))
        out.append(integer(e.argc))
    return b"".join(out)


@command("slowlog|len")
def slowlog_len(c, argv):
    return integer(len(c.server.slowlog))


@command("slowlog|reset")
def slowlog_reset(c, argv):
    c.server.slowlog.clear()
    return OK


@command("slowlog|help")
def slowlog_help(c, argv):
    return help_reply(b"SLOWLOG", b"""\
GET [<count>]
    Return top <count> entries from the slowlog (default: 10, -1 mean all).
    Entries are made of:
    id, timestamp, time in microseconds, arguments array, client IP and port,
    client name
LEN
    Return the length of the slowlog.
RESET
    Reset the slowlog.
""")
