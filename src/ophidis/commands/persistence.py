"""Persistence commands: SAVE BGSAVE BGREWRITEAOF DUMP RESTORE (rdb.c, aof.c, cluster.c)."""

from __future__ import annotations


from .. import log
from ..cmdtable.registry import command
from ..errors import SYNTAX, RedisError
from ..keyspace import hfe, notify
from ..keyspace.db import mstime
from ..persistence.rdb import LoadSettings, RdbError, dump_payload, load_payload, verify_payload
from ..protocol.resp import OK, bulk, simple
from ..replication.propagate import rewrite_argv
from ..util import parse_int

BUSYKEY = RedisError("BUSYKEY Target key name already exists.")
BAD_DATA = RedisError("ERR Bad data format")


def restore_deep(c):
    """Whether RESTORE validates the payload deeply (sanitize-dump-payload:
    yes always, clients for every client but our master's link, the AOF
    being loaded and a user with the skip-sanitize-payload flag)."""
    mode = c.server.config["sanitize-dump-payload"]
    if mode == "clients":
        return not (c.server.loading or c.is_master or "skip-sanitize-payload" in c.user.flags)
    return mode == "yes"


def _reader_log(level, msg):
    log.log(log.LEVELS[level], msg)


@command("save", propagate=False)
def save(c, argv):
    srv = c.server
    p = srv.persistence
    if p.child_pid is not None:
        raise RedisError("ERR Background save already in progress")
    p.saves += 1
    if p.save():
        return OK
    raise RedisError("ERR")


@command("bgsave", propagate=False)
def bgsave(c, argv):
    schedule = False
    if len(argv) > 1:
        if len(argv) == 2 and argv[1].lower() == b"schedule":
            schedule = True
        else:
            raise SYNTAX
    srv = c.server
    p = srv.persistence
    if p.child_pid is not None:
        raise RedisError("ERR Background save already in progress")
    if p.other_child_active() or c.in_exec:
        if schedule or c.in_exec:
            p.scheduled = True
            return simple(b"Background saving scheduled")
        raise RedisError("ERR Another child process is active (AOF?): can't BGSAVE right now. "
                         "Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.")
    if p.bgsave():
        return simple(b"Background saving started")
    raise RedisError("ERR")


@command("bgrewriteaof", propagate=False)
def bgrewriteaof(c, argv):
    r = c.server.aof.bgrewriteaof(in_exec=c.in_exec)
    if r == "started":
        return simple(b"Background append only file rewriting started")
    if r == "scheduled":
        return simple(b"Background append only file rewriting scheduled")
    if r == "in-progress":
        raise RedisError("ERR Background append only file rewriting already in progress")
    raise RedisError("ERR Can't execute an AOF background rewriting. "
                     "Please check the server logs for more information.")


@command("dump")
def dump(c, argv):
    v = c.db.lookup_read(argv[1])
    if v is None:
        return c.null
    return bulk(dump_payload(v, c.server.config))


def propagate_restore(srv, db, argv):
    """A relative TTL replicates as the absolute time with ABSTTL."""
    opts = [a.lower() for a in argv[4:]]
    if b"absttl" not in opts and argv[2] not in (b"0",):
        when = db.expires.get(argv[1])
        if when is not None:
            out = list(argv)
            out[2] = b"%d" % when
            out.append(b"ABSTTL")
            return out
    return list(argv)


@command("restore", propagate=propagate_restore)
def restore(c, argv):
    srv = c.server
    db = c.db
    key = argv[1]
    replace = absttl = False
    lru_idle = lfu_freq = -1
    j = 4
    n = len(argv)
    while j < n:
        opt = argv[j].lower()
        additional = n - j - 1
        if opt == b"replace":
            replace = True
        elif opt == b"absttl":
            absttl = True
        elif opt == b"idletime" and additional >= 1 and lfu_freq == -1:
            lru_idle = parse_int(argv[j + 1])
            if lru_idle < 0:
                raise RedisError("ERR Invalid IDLETIME value, must be >= 0")
            j += 1
        elif opt == b"freq" and additional >= 1 and lru_idle == -1:
            lfu_freq = parse_int(argv[j + 1])
            if lfu_freq < 0 or lfu_freq > 255:
                raise RedisError("ERR Invalid FREQ value, must be >= 0 and <= 255")
            j += 1
        else:
            raise SYNTAX
        j += 1
    if not replace and db.lookup_write(key) is not None:
        raise BUSYKEY
    ttl = parse_int(argv[2])
    if ttl < 0:
        raise RedisError("ERR Invalid TTL value, must be >= 0")
    payload = argv[3]
    if not verify_payload(payload, srv.skip_checksum_validation):
        raise RedisError("ERR DUMP payload version or checksum are wrong")
    try:
        obj = load_payload(payload, LoadSettings(srv.config, restore_deep(c)), _reader_log)
    except RdbError as e:
        if not (e.truncated or e.quiet):
            # rdbReportCorruptRDB in a RESTORE: logged at verbose, not fatal
            log.verbose("Internal error in RDB reading offset 0, function at rdb.py -> %s" % e.msg)
        raise BAD_DATA from None
    except Exception as e:  # noqa: BLE001 - a decoder bug must not take the server down
        log.verbose("Internal error in RDB reading offset 0, function at rdb.py -> %r" % e)
        raise BAD_DATA from None
    deleted = False
    if replace:
        deleted = db.lookup_write(key) is not None and db.server_delete(key)
    now = mstime()
    if ttl and not absttl:
        ttl += now
    if ttl and ttl <= now and not srv.loading and not srv.is_replica:
        if deleted:
            # (7.2+: UNLINK under lazyfree-lazy-server-del)
            rewrite_argv(c, [b"UNLINK" if srv.config["lazyfree-lazy-server-del"] else b"DEL", key])
            db.signal(key)
            notify.notify(notify.GENERIC, b"del", key, db.id)
            srv.dirty += 1
        return OK
    db.add(key, obj)
    hfe.track_value(db, key, obj)
    if ttl:
        db.set_expire(key, ttl)     # propagates with ABSTTL (propagate_restore)
    if lru_idle != -1:
        srv.memory.set_idle(db, key, lru_idle, by_command=True)
    elif lfu_freq != -1:
        srv.memory.set_freq(db, key, lfu_freq, by_command=True)
    db.signal(key)
    notify.notify(notify.GENERIC, b"restore", key, db.id)
    srv.dirty += 1
    return OK


# RESTORE-ASKING: RESTORE as MIGRATE sends it in cluster mode (the ASKING
# flag lets it reach a slot being imported); the same command otherwise.
command("restore-asking", flags=("syscmd",), propagate=propagate_restore)(restore)
