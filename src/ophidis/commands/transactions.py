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

import time

from ..errors import EXECABORT, RedisError
from ..protocol import OK
from . import command


@command("multi")
def multi(c, argv):
    if c.multi is not None:
        raise RedisError("ERR MULTI calls can not be nested")
    c.multi = []
    c.multi_error = False
    c.update_slow()
    return OK


def discard_transaction(c):
    c.multi = None
    c.multi_error = False
    c.dirty_cas = False
    unwatch_all(c)
    c.update_slow()


@command("discard")
def discard(c, argv):
    if c.multi is None:
        raise RedisError("ERR DISCARD without MULTI")
    discard_transaction(c)
    return OK


def _watched_key_expired(c) -> bool:
    now = time.time() * 1000
    for db, key, expired_at_watch in c.watched or ():
        if expired_at_watch:
            continue
        when = db.expires.get(key)
        if when is not None and when <= now and key in db.d:
            return True
    return False


@command("exec")
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
    try:
        for cmd, qargv in queued:
            r = srv.call(c, cmd, qargv)
            if r is None:
                r = c.null
            out.append(r)
    finally:
        c.in_exec = False
    c.multi_error = False
    c.dirty_cas = False
    c.update_slow()
    if srv.ready_keys:
        srv.handle_ready_keys()
    return b"".join(out)


def watch_key(c, db, key):
    if c.watched is None:
        c.watched = []
    for d, k, _ in c.watched:
        if d is db and k == key:
            return
    lst = db.watched_keys.get(key)
    if lst is None:
        lst = db.watched_keys[key] = []
    lst.append(c)
    when = db.expires.get(key)
    expired = when is not None and when <= time.time() * 1000
    c.watched.append((db, key, expired))


def unwatch_all(c):
    if not c.watched:
        c.watched = None
        return
    for db, key, _ in c.watched:
        lst = db.watched_keys.get(key)
        if lst is not None:
            try:
                lst.remove(c)
            except ValueError:
                pass
            if not lst:
                del db.watched_keys[key]
    c.watched = None


@command("watch")
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


def touch_all_watched_in_db(db, other=None):
    """FLUSHDB/FLUSHALL/SWAPDB: dirty the clients watching keys that exist
    (in db, or in ``other`` for SWAPDB)."""
    for key, clients in list(db.watched_keys.items()):
        exists = key in db.d or (other is not None and key in other.d)
        if exists:
            for cl in clients:
                cl.dirty_cas = True
