"""MULTI / EXEC / DISCARD / WATCH / UNWATCH (multi.c).

Queuing happens in Server.process_command: while ``c.multi`` is a list,
commands other than EXEC/DISCARD/MULTI/WATCH/QUIT/RESET are checked and
appended.  A rejected command (unknown, arity, OOM ...) flags the
transaction so that EXEC answers -EXECABORT.

WATCH keeps, per database, ``watched_keys: key -> [clients]``; every
modification of a key (db.signal / set_key / delete ...) marks the watching
clients ``dirty_cas``.
"""

from __future__ import annotations

from ..acl.check import DENIED_CMD, check_command, exec_noperm_text
from ..acl.log import CTX_MULTI
from ..cmdtable.registry import command
from ..errors import EXECABORT, RedisError
from ..keyspace.db import freeze_clock, mstime, thaw_clock
from ..keyspace.watch import discard_transaction, logically_expired, unwatch_all, watch_key
from ..protocol.resp import OK


@command("multi", flags=("no_queue",), propagate=False)
def multi(c, argv):
    if c.multi is not None:
        raise RedisError("ERR MULTI calls can not be nested")
    c.multi = []
    c.multi_error = False
    c.update_slow()
    return OK


@command("discard", flags=("no_queue", "ends_multi"), propagate=False)
def discard(c, argv):
    if c.multi is None:
        raise RedisError("ERR DISCARD without MULTI")
    discard_transaction(c)
    return OK


def _watched_key_expired(c) -> bool:
    now = mstime()
    for w in c.watched or ():
        if not w.expired and logically_expired(w.db, w.key, now):
            return True
    return False


@command("exec", flags=("no_queue", "ends_multi"), propagate=False)
def exec_(c, argv):
    if c.multi is None:
        raise RedisError("ERR EXEC without MULTI")
    if _watched_key_expired(c):
        c.dirty_cas = True
    if c.multi_error or c.dirty_cas:
        aborted = c.multi_error
        discard_transaction(c)
        if aborted:
            raise EXECABORT
        return c.null_array
    queued = c.multi
    c.multi = None
    unwatch_all(c)
    srv = c.server
    out = [b"*%d\r\n" % len(queued)]
    c.in_exec = True
    # Pushes to this client (pub/sub confirmations, keyspace notifications)
    # belong inside the EXEC reply, before the reply of their command, as
    # in Redis's single output buffer.
    saved = c.pending_writes
    # the commands run at EXEC's time (Redis 7.2's command time snapshot:
    # expiry, TTLs, TIME)
    clock = freeze_clock()
    try:
        for cmd, qargv in queued:
            c.pending_writes = out
            if not c.user.unrestricted:
                # the rules may have changed since the command was queued
                res, idx = check_command(c.user, cmd, qargv)
                if res:
                    srv.acl.log_denial(c, res, CTX_MULTI, cmd.fullname.encode() if res == DENIED_CMD else qargv[idx])
                    out.append(c.error_reply(RedisError(exec_noperm_text(res))))
                    continue
            r = srv.call(c, cmd, qargv)
            if r is None:
                r = c.null
            out.append(r)
    finally:
        thaw_clock(clock)
        c.pending_writes = saved
        c.in_exec = False
    c.multi_error = False
    c.dirty_cas = False
    c.update_slow()
    if srv.ready_keys:
        # The transaction propagates before what serving blocked clients
        # propagates (Redis serves them after the EXEC call).
        srv.propagator.flush()
        srv.handle_ready_keys()
    return b"".join(out)


@command("watch", flags=("no_queue", "no_touch"))
def watch(c, argv):
    if c.multi is not None:
        raise RedisError("ERR WATCH inside MULTI is not allowed")
    if c.dirty_cas:
        return OK
    for key in argv[1:]:
        watch_key(c, c.db, key)
    return OK


@command("unwatch")
def unwatch(c, argv):
    unwatch_all(c)
    c.dirty_cas = False
    return OK
