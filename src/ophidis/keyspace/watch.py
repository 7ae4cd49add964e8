"""WATCH bookkeeping (multi.c's watch side): which clients watch which
keys, and dirtying them when the keyspace changes under them; and
``discard_transaction`` (a client leaves MULTI: its queue and its WATCHes
dropped), shared by DISCARD, EXEC and the dispatcher.  The commands (MULTI,
EXEC, DISCARD, WATCH, UNWATCH) live in commands/transactions.py; the
keyspace (db.py) calls ``touch_all_watched_in_db`` on FLUSH/SWAPDB."""

from __future__ import annotations

import time


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


def logically_expired(db, key, now_ms) -> bool:
    when = db.expires.get(key)
    return when is not None and when <= now_ms and key in db.d


def watch_key(c, db, key):
    if c.watched is None:
        c.watched = []
    for w in c.watched:
        if w.db is db and w.key == key:
            return
    lst = db.watched_keys.get(key)
    if lst is None:
        lst = db.watched_keys[key] = []
    w = WatchedKey(c, db, key, logically_expired(db, key, time.time() * 1000))
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


def discard_transaction(c):
    """multi.c's discardTransaction."""
    c.multi = None
    c.multi_error = False
    c.dirty_cas = False
    unwatch_all(c)
    c.update_slow()


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
                if logically_expired(other, key, now):
                    continue
            elif not in_db and logically_expired(other, key, now):
                w.expired = True
                continue
            w.client.dirty_cas = True
