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


class WatchedKey:
    """One WATCHed key of one client; listed both in ``c.watched`` and in
    ``db.watched_keys[key]``.  ``expired``: the key was already logically
    expired (but not yet deleted) when WATCH ran, so its deletion is no
    change."""

    __slots__ = ("client", "db", "key", "expired")

    def __init__(self, client, db, key, expired):
        self.client = client
        self.db = db
        self.key = key
        self.expired = expired


def _is_expired(db, key, now_ms) -> bool:
    when = db.expires.get(key)
    return when is not None and when <= now_ms and key in db.d


def _watched_key_expired(c) -> bool:
    now = time.time() * 1000
    for w in c.watched or ():
        if not w.expired and _is_expired(w.db, w.key, now):
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
    # Pushes to this client (pub/sub confirmations, keyspace notifications)
    # belong inside the EXEC reply, before the reply of their command, as
    # in Redis's single output buffer.
    saved = c.pending_writes
    try:
        for cmd, qargv in queued:
            c.pending_writes = out
            r = srv.call(c, cmd, qargv)
            if r is None:
                r = c.null
            out.append(r)
    finally:
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


def watch_key(c, db, key):
    if c.watched is None:
        c.watched = []
    for w in c.watched:
        if w.db is db and w.key == key:
            return
    lst = db.watched_keys.get(key)
    if lst is None:
        lst = db.watched_keys[key] = []
    w = WatchedKey(c, db, key, _is_expired(db, key, time.time() * 1000))
    lst.append(w)
    c.watched.append(w)


def unwatch_all(c):
    if not c.watched:
        c.watched = None
        return
    for w in c.watched:
        db = w.db
        lst = db.watched_keys.get(w.key)
        if lst is not None:
            try:
                lst.remove(w)
            except ValueError:
                pass
            if not lst:
                del db.watched_keys[w.key]
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
    """The keyspace of ``db`` is emptied (FLUSHDB/FLUSHALL) or replaced by
    ``other``'s (SWAPDB): dirty the clients watching keys whose logical
    existence changes.  Keys watched while already expired stay untouched
    when they are just removed, or replaced by another expired key."""
    if not db.watched_keys:
        return
    now = time.time() * 1000
    for key, entries in list(db.watched_keys.items()):
        in_db = key in db.d
        in_other = other is not None and key in other.d
        if not (in_db or in_other):
            continue
        for w in entries:
            if w.expired:
                if not in_other:
                    w.expired = False
                    continue
                if _is_expired(other, key, now):
                    continue
            elif not in_db and _is_expired(other, key, now):
                w.expired = True
                continue
            w.client.dirty_cas = True
