"""The keyspace: databases of key -> value with expiry.

Values are plain Python objects chosen for speed and memory:
  - strings: ``bytes`` (``bytearray`` once modified in place by APPEND /
    SETRANGE / SETBIT, which is what Redis reports as the ``raw`` encoding;
    ``EmbStr``, a bytes subclass, for an integer-looking value that Redis
    keeps as embstr: INCRBYFLOAT's result), all three of type "string";
  - other types register their classes in ``TYPE_NAMES`` (see types/).

Commands reach their values through the typed lookups
``Database.lookup_read_typed`` / ``lookup_write_typed`` (lookupKeyRead /
lookupKeyWrite + checkType): the class of the expected type's values is
given, a value of another type raises WRONGTYPE.

Expiry follows Redis: lazily on access, plus an active cycle driven by
``hz`` (see ``active_expire_cycle``) that visits keys with a TTL
incrementally and never runs longer than its time budget.

Every modification of a key should call ``signal_modified(db, key)`` (WATCH
and friends), and write commands fire keyspace notifications through
``notify.notify``.
"""

from __future__ import annotations

import random
import time
from itertools import islice

from .. import log
from ..errors import RedisError
from ..replication.propagate import propagate_deletion
from .. import compiled
from . import notify as _notify
from .dictshape import Shape
from .watch import touch_all_watched_in_db

_time = time.time
_NEW = _notify.NEW
_OVERWRITTEN = _notify.OVERWRITTEN
_TYPE_CHANGED = _notify.TYPE_CHANGED
_KEY_MISS = _notify.KEY_MISS


# lazyfree-lazy-server-del (kept current by the server's config hook,
# through set_lazy_server_del)
lazy_server_del = False
_lazy_watchers = []     # told after set_lazy_server_del (the compiled bodies' copy)


def set_lazy_server_del(v: bool):
    global lazy_server_del
    lazy_server_del = v
    for fn in _lazy_watchers:
        fn()


def watch_lazy_server_del(fn):
    """fn() is called whenever set_lazy_server_del changes the setting."""
    _lazy_watchers.append(fn)


# The command time snapshot (Redis 7.2's commandTimeSnapshot): while an
# execution unit runs (a script, EXEC's commands) _time is frozen at the
# time it started, and every time a command reads through cmd_time /
# mstime (expiry decisions, TTLs, expiry arguments, TIME, stream IDs and
# delivery times) is that one.  Otherwise _time is the clock.
def cmd_time() -> float:
    """The command time snapshot, in seconds (as time.time)."""
    return _time()


def mstime() -> int:
    """The command time snapshot, in milliseconds."""
    return int(_time() * 1000)


def freeze_clock():
    """An execution unit starts: cmd_time/mstime stay at its start (a unit
    inside one keeps the outer one's time).  Returns what thaw_clock takes."""
    global _time
    prev = _time
    t = prev()
    _time = lambda: t
    return prev


def thaw_clock(prev) -> None:
    """The execution unit that freeze_clock started ended."""
    global _time
    _time = prev


# the C fields of the compiled twin (keyspace/_core.pxd), or slots
_core = compiled.load("keyspace._core")
# a database's key -> value map: the keyspace table (keyspace/_keyspace.pyx:
# each key's bytes in its entry) when the compiled layer is built, else a dict
_ks = compiled.load("keyspace._keyspace")
KeyTable = _ks.Keyspace if _ks is not None else dict
if _core is not None:
    StatsCore = _core.StatsCore
    DbCore = _core.DbCore
    DB_SLOTS = ()
else:
    StatsCore = DbCore = object
    DB_SLOTS = compiled.fields("keyspace/_core.pxd", "DbCore")


class Stats(StatsCore):
    """Server-wide counters (INFO stats).  Module-level singleton ``stats``.
    The counters the per-read path adds to are C fields of StatsCore when
    the compiled module is built."""

    def __init__(self):
        self.lazyfree_pending = 0    # objects the background free still holds (a gauge, not reset)
        self.errorstats = {}
        self.reset()

    # the integer counters, 0 after a reset (CONFIG RESETSTAT)
    COUNTERS = (
        "keyspace_hits", "keyspace_misses", "expired_keys", "expired_keys_active",
        "expired_time_cap_reached_count", "expire_cycle_cpu_milliseconds", "evicted_keys", "evicted_clients", "evicted_scripts", "net_input_bytes",
        "net_output_bytes", "connections_received", "rejected_connections", "total_error_replies",
        "numcommands_base", "unexpected_error_replies", "total_reads_processed", "total_writes_processed",
        "io_threaded_reads_processed", "client_qbuf_limit_disconnections",
        "client_outbuf_limit_disconnections", "dump_payload_sanitizations", "total_forks", "sync_full",
        "sync_partial_ok", "sync_partial_err", "expired_subkeys", "el_cron_cycles", "pb_sum", "pb_cnt", "pb_max",
        "slowlog_count", "slowlog_ms_max", "lazyfreed_objects")

    def reset(self):
        old_errors = self.errorstats
        for name in self.COUNTERS:
            setattr(self, name, 0)
        self.expired_stale_perc = 0.0
        self.el_duration = 0.0       # seconds handling reads and cron runs (eventloop_duration_sum)
        self.el_nested = 0.0         # seconds of the commands run by EXEC and scripts
        self.el_max = 0.0            # the longest cycle (INFO debug)
        self.el_cron = 0.0           # seconds in cron runs (INFO debug)
        self.el_aof = 0.0            # seconds writing the AOF (INFO debug)
        self.slowlog_ms = 0.0        # milliseconds of the commands that went to the slowlog
        self._drop_errors(old_errors)
        self.errors_enabled = True

    def count_error(self, code: str):
        """incrementErrorCount: one more error reply of this code (the
        reply's first word) in INFO ERRORSTATS.  At most 128 codes are
        kept: a new one past them logs the codes, drops the table for one
        ERRORSTATS_DISABLED entry and stops the counting until CONFIG
        RESETSTAT (a misused Lua error_reply cannot grow it for ever)."""
        if not self.errors_enabled:
            return
        es = self.errorstats
        n = es.get(code)
        if n is not None:
            es[code] = n + 1
        elif len(es) < ERROR_STATS_NUMBER:
            es[code] = 1
        else:
            log.warning("Errorstats stopped adding new errors because the number of errors reached the limit, "
                        "may be misuse of lua error_reply, please check INFO ERRORSTATS, this can be re-enabled "
                        "via CONFIG RESETSTAT.")
            log.warning("Current errors code list: %s" % ", ".join(sorted(es)))     # (a radix tree's order)
            self._drop_errors(es)
            self.errorstats = {"ERRORSTATS_DISABLED": 1}
            self.errors_enabled = False

    def _drop_errors(self, es):
        """resetErrorTableStats: a table of more than LAZYFREE_THRESHOLD
        codes is freed by the background free (counted in lazyfreed_objects,
        one object a code; a radix tree has at least a node a key)."""
        self.errorstats = {}
        if len(es) > 64:
            self.lazyfreed_objects += len(es)


ERROR_STATS_NUMBER = 128


stats = Stats()

# type -> TYPE name; data type modules add their classes.
class EmbStr(bytes):
    """A string that reads as an integer but that Redis keeps with the embstr
    encoding rather than as a shared/int object (INCRBYFLOAT's result): only
    OBJECT ENCODING and OBJECT REFCOUNT tell it from plain ``bytes``."""
    __slots__ = ()


TYPE_NAMES = {bytes: b"string", bytearray: b"string", EmbStr: b"string"}
# type -> fn(value, config) -> OBJECT ENCODING name; data type modules add theirs.
ENCODINGS = {}
# Redis 8's built-in types stored as module records (persistence/modulerecord.py):
# RDB module type name -> value class, and value class -> name.
MODULE_TYPES = {}
MODULE_CLASSES = {}


def register_module_type(cls, type_name: bytes):
    """A built-in type stored as a module record: TYPE's name for it, its
    RDB record's type name (``cls.MODULE_NAME``)."""
    TYPE_NAMES[cls] = type_name
    MODULE_TYPES[cls.MODULE_NAME] = cls
    MODULE_CLASSES[cls] = cls.MODULE_NAME


# Value classes whose removal (DEL, overwrite, expiry, FLUSHDB ...) wakes the
# clients blocked on the key, as Redis does for streams (XREADGROUP then
# fails with -UNBLOCKED / -NOGROUP instead of waiting forever).
DELETE_SIGNALS = set()


def type_name(v) -> bytes:
    return TYPE_NAMES.get(type(v), b"none")


class Database(DbCore):
    __slots__ = ("id",) + DB_SLOTS + ("dels", "avg_ttl", "_expire_snapshot", "_expire_pos", "_scan_cache",
                 "server", "hfe", "hfe_heap", "shapes")

    def __init__(self, id: int, server=None):
        self.id = id
        self.d = KeyTable()
        self.expires: dict = {}
        self.watched_keys: dict = {}     # key -> list of WatchedKey (WATCH)
        self.blocking_keys: dict = {}    # key -> list of blocked clients
        self.dels = 0                    # deletions counter (SCAN cursor safety)
        self.avg_ttl = 0
        self._expire_snapshot = None
        self._expire_pos = 0
        self._scan_cache = {}
        self.server = server
        self.hfe: dict = {}              # key -> earliest field expiry of its hash (keyspace/hfe.py)
        self.hfe_heap: list = []         # (that time, key), a heap
        self.shapes = (Shape(), Shape())  # Redis's tables for keys and expires (keyspace/dictshape.py)

    # -- lookup -------------------------------------------------------------
    def lookup_read(self, key):
        """Value for a read command: lazy expiry, keyspace hits/misses."""
        v = self.d.get(key)
        if v is None:
            stats.keyspace_misses += 1
            if _notify.flags & _KEY_MISS:
                _notify.notify(_KEY_MISS, b"keymiss", key, self.id)
            return None
        if self.expires:
            when = self.expires.get(key)
            if when is not None and when <= _time() * 1000 and self.expire_if_needed(key):
                stats.keyspace_misses += 1
                if _notify.flags & _KEY_MISS:
                    _notify.notify(_KEY_MISS, b"keymiss", key, self.id)
                return None
        stats.keyspace_hits += 1
        return v

    def lookup_read_nonotify(self, key):
        """Value for a read without a keymiss event (lookupKeyReadWithFlags
        with LOOKUP_NONOTIFY, as SCAN's TYPE filter looks keys up): lazy
        expiry, keyspace hits/misses."""
        v = self.d.get(key)
        if v is not None and self.expires:
            when = self.expires.get(key)
            if when is not None and when <= _time() * 1000 and self.expire_if_needed(key):
                v = None
        if v is None:
            stats.keyspace_misses += 1
        else:
            stats.keyspace_hits += 1
        return v

    def lookup_write(self, key):
        v = self.d.get(key)
        if v is None:
            return None
        if self.expires:
            when = self.expires.get(key)
            if when is not None and when <= _time() * 1000 and self.expire_if_needed(key, True):
                return None
        return v

    # -- typed lookup: lookupKeyRead/lookupKeyWrite + checkType ------------
    # What every command family uses to reach its value: ``cls`` is the
    # value class of the type the command works on (types/: ListValue,
    # HashValue, ...; ``bytes`` for strings, whose bytearray and EmbStr
    # values are of the same type).  The common case (a key without a TTL,
    # of the expected class) costs one call, as the inline code it replaces.
    def lookup_read_typed(self, key, cls):
        """Value of key for a read command (lazy expiry, keyspace
        hits/misses and keymiss events, as lookup_read), None when there is
        none; WRONGTYPE when it holds another type than ``cls``'s."""
        v = self.d.get(key)
        if v is None or (self.expires and key in self.expires):
            v = self.lookup_read(key)
            if v is None:
                return None
        else:
            stats.keyspace_hits += 1
        if v.__class__ is not cls:
            check_type(v, cls)
        return v

    def lookup_write_typed(self, key, cls, create=False):
        """Value of key for a write command (lazy expiry, no stats, as
        lookup_write), None when there is none; WRONGTYPE when it holds
        another type than ``cls``'s.  With ``create``, a missing key gets a
        new empty ``cls()`` (added as by ``add``: hashTypeLookupWriteOrCreate,
        setTypeCreate ...)."""
        v = self.d.get(key)
        if v is not None and self.expires and key in self.expires:
            v = self.lookup_write(key)
        if v is None:
            if create:
                v = cls()
                self.add(key, v)
            return v
        if v.__class__ is not cls:
            check_type(v, cls)
        return v

    def lookup_nostats(self, key):
        return self.lookup_write(key)

    def exists(self, key) -> bool:
        return self.lookup_write(key) is not None

    def is_live(self, key) -> bool:
        """key is present and its TTL has not passed; no stats, no
        notification, no deletion (cluster routing counts keys so)."""
        if key not in self.d:
            return False
        when = self.expires.get(key) if self.expires else None
        return when is None or when > _time() * 1000

    def expire_if_needed(self, key, write=False) -> bool:
        """Delete key if its TTL passed.  Returns True if it was deleted
        (or, on a replica, is to be seen as gone).  ``write``: a write
        command's lookup, which deletes it even on a writable replica."""
        when = self.expires.get(key)
        if when is None:
            return False
        srv = self.server
        if srv is not None and srv.loading:
            return False
        if when > _time() * 1000:
            return False
        if srv is not None and (srv.is_replica or srv.paused_expire):
            # A replica waits for the master's DEL (and, running the
            # master's commands, sees keys as the master does), except for
            # a write of its own on a writable replica; while clients are
            # paused the dataset stays as it is, but readers see the key
            # as expired (a write, which only a transaction begun before
            # the pause can make, deletes it).
            if not srv.is_replica:
                if not write and srv.still_paused():
                    return True
            elif srv.applying_master:
                return False
            elif not (write and not srv.config["replica-read-only"]):
                return True
        self._delete_expired(key)
        return True

    def _delete_expired(self, key):
        srv = self.server
        mt = srv.mem_track
        if mt is not None:
            v = self.d.get(key)
            if v is not None:
                mt.deleted(self, key, v)
        v = self.d.pop(key, None)
        self.expires.pop(key, None)
        if v.__class__ in DELETE_SIGNALS:
            signal_key_ready(self, key)
        if v is not None and srv.config["lazyfree-lazy-expire"]:
            srv.lazyfree.free(v)
        self.dels += 1
        stats.expired_keys += 1
        signal_modified(self, key)
        trk = srv.tracking
        if trk.wrap_active:
            trk.invalidate(key, False)
        _notify.notify(_notify.EXPIRED, b"expired", key, self.id)
        propagate_deletion(srv, self, key)

    # -- writes ---------------------------------------------------------------
    def set_key(self, key, value, keepttl=False):
        """Set key to value (overwrite), clearing its TTL unless keepttl."""
        if lazy_server_del:
            self.lazy_overwrite(key)
        bk = self.blocking_keys
        if bk and key in bk:
            self.overwrite_signal(key)
        if _notify.flags:
            # Redis's setKey: an expired key is deleted first ("expired"),
            # and a key that did not exist is announced ("new").
            if self.expires and key in self.expires:
                self.lookup_write(key)
            old = self.d.get(key)
            if old is None:
                if _notify.flags & _NEW:
                    self.d[key] = value
                    _notify.notify(_NEW, b"new", key, self.id)
            elif _notify.flags & (_OVERWRITTEN | _TYPE_CHANGED):
                # Redis 8.2: "overwritten", and "type_changed" when the
                # new value is of another type
                _notify.notify(_OVERWRITTEN, b"overwritten", key, self.id)
                if type_name(old) != type_name(value):
                    _notify.notify(_TYPE_CHANGED, b"type_changed", key, self.id)
        self.d[key] = value
        if not keepttl and self.expires:
            self.expires.pop(key, None)
        wk = self.watched_keys
        if wk and key in wk:
            touch_watched(self, key)

    def add(self, key, value):
        """Add a key that the caller knows does not exist."""
        self.d[key] = value
        if _notify.flags & _NEW:
            _notify.notify(_NEW, b"new", key, self.id)
        wk = self.watched_keys
        if wk and key in wk:
            touch_watched(self, key)
        bk = self.blocking_keys
        if bk and key in bk and self.server is not None:
            self.server.ready_keys.append((self, key))

    def overwrite_signal(self, key):
        """key (which clients are blocked on) is about to be replaced."""
        if self.d.get(key).__class__ in DELETE_SIGNALS:
            signal_key_ready(self, key)

    def signal(self, key):
        """The value of key changed in place: invalidate WATCHes on it."""
        wk = self.watched_keys
        if wk and key in wk:
            touch_watched(self, key)

    def delete(self, key, lazy=False) -> bool:
        """Remove key.  With lazy, a big value is freed incrementally (only
        when nothing else refers to it: not for a value being moved)."""
        v = self.d.pop(key, None)
        if v is None:
            return False
        if self.expires:
            self.expires.pop(key, None)
        self.dels += 1
        wk = self.watched_keys
        if wk and key in wk:
            touch_watched(self, key)
        if v.__class__ in DELETE_SIGNALS:
            signal_key_ready(self, key)
        if lazy and v.__class__ is not bytes:
            self.server.lazyfree.free(v)
        return True

    def store(self, key, value):
        """A STORE command's result (setKey): overwrites key (its TTL goes;
        clients blocked on it are served) or adds it."""
        if self.lookup_write(key) is not None:
            self.set_key(key, value)
            signal_key_ready(self, key)
        else:
            self.add(key, value)

    def delete_if_empty(self, key, v) -> bool:
        """After elements were removed from v, the value of key: an empty v
        goes with its key (a "del" event), otherwise the change is
        signalled (WATCH).  True when the key was deleted."""
        if v:
            self.signal(key)
            return False
        self.delete(key)
        _notify.notify(_notify.GENERIC, b"del", key, self.id)
        return True

    def delete_destination(self, key) -> bool:
        """The empty result of a STORE command (SINTERSTORE, ZRANGESTORE,
        SORT ... STORE, GEOSEARCHSTORE ...): the destination key goes, with
        a "del" event and a change counted.  True when there was one."""
        if self.lookup_write(key) is not None and self.server_delete(key):
            _notify.notify(_notify.GENERIC, b"del", key, self.id)
            self.server.dirty += 1
            return True
        return False

    def server_delete(self, key) -> bool:
        """A deletion implied by a command (RENAME's or a STORE's
        destination ...): lazy when lazyfree-lazy-server-del is set."""
        return self.delete(key, lazy_server_del)

    def lazy_overwrite(self, key):
        """key is about to be overwritten and lazyfree-lazy-server-del is
        set: hand a big old value to the lazy freer."""
        v = self.d.get(key)
        if v is not None and v.__class__ is not bytes:
            self.server.lazyfree.free(v)

    def set_expire(self, key, when_ms: int):
        self.expires[key] = when_ms

    def persist(self, key) -> bool:
        return self.expires.pop(key, None) is not None

    def get_expire(self, key) -> int:
        return self.expires.get(key, -1)

    def flush(self):
        """Empty the database (FLUSHDB).  Returns the removed count."""
        n = len(self.d)
        if self.watched_keys:
            touch_all_watched_in_db(self)
        if self.blocking_keys:
            d = self.d
            for key in self.blocking_keys:
                if d.get(key).__class__ in DELETE_SIGNALS:
                    signal_key_ready(self, key)
        self.d = self.d.__class__()      # the cluster's SlotKeys stays one
        self.expires = {}
        for s in self.shapes:
            s.empty()
        self.hfe = {}
        self.hfe_heap = []
        self.dels += n
        self._expire_snapshot = None
        self._scan_cache = {}
        return n

    def random_key(self):
        """A random non-expired key or None (RANDOMKEY)."""
        d = self.d
        if not d:
            return None
        tries = 0
        n = len(d)
        while True:
            key = random_key_of(d, n)
            if key in self.expires:
                tries += 1
                if self.expires[key] <= _time() * 1000:
                    if tries > 100 and len(self.expires) == len(d):
                        # All keys volatile and (apparently) expired: give
                        # up like Redis does on replicas/paused.
                        return key
                    if self.expire_if_needed(key):
                        d = self.d
                        n = len(d)
                        if not n:
                            return None
                        continue
            return key

    # -- SCAN ---------------------------------------------------------------
    def scan(self, cursor: int, count: int):
        """Incremental iteration in insertion order (see dict_scan).
        Returns (next_cursor, keys)."""
        return dict_scan(self.d, self.dels, self._scan_cache, None, cursor, count)

    # -- active expiry -------------------------------------------------------
    def active_expire(self, deadline: float, keys_per_loop=20, acceptable_stale=10):
        """Visit keys with TTLs incrementally, deleting expired ones, until the
        stale ratio of a batch is acceptable or the deadline passes.
        Returns (sampled, expired, timed_out)."""
        expires = self.expires
        if not expires:
            self._expire_snapshot = None
            return 0, 0, False
        sampled = expired = 0
        while True:
            snap = self._expire_snapshot
            if snap is None or self._expire_pos >= len(snap):
                snap = self._expire_snapshot = list(expires)
                self._expire_pos = 0
            batch = snap[self._expire_pos:self._expire_pos + keys_per_loop]
            self._expire_pos += keys_per_loop
            now = _time() * 1000
            exp_batch = 0
            for key in batch:
                when = expires.get(key)
                if when is not None and when <= now:
                    self._delete_expired(key)
                    exp_batch += 1
            sampled += len(batch)
            expired += exp_batch
            if not expires:
                self._expire_snapshot = None
                return sampled, expired, False
            if _time() > deadline:
                return sampled, expired, True
            if exp_batch * 100 <= len(batch) * acceptable_stale or sampled >= len(expires):
                return sampled, expired, False


def random_key_of(d, n):
    """A key of the non-empty map d (n keys), picked at random: by position
    in a keyspace table (its holes skipped: a few tries), else by walking."""
    if KeyTable is not dict and isinstance(d, KeyTable):
        slots = d.slots()
        for _ in range(32):
            key = d.key_at(random.randrange(slots))
            if key is not None:
                return key
    return next(islice(iter(d), random.randrange(n), None))


def dict_scan(d, dels, cache, tag, cursor: int, count: int):
    """One step of an incremental walk over dict d in insertion order (SCAN,
    ZSCAN of a big zset).

    The cursor encodes the position reached plus the deletions counter
    (``dels``) at that time.  Deletions shift later keys left, so the next
    call starts that many positions earlier: every key present for the whole
    iteration is returned (duplicates are possible, as in Redis).  ``cache``
    keeps the iterators of recent steps under (tag, cursor), so that a walk
    without deletions continues where it stopped.  Returns (next_cursor,
    keys)."""
    pos = cursor & 0xFFFFFFFFFF
    rewind = (dels - (cursor >> 40)) & 0xFFFFFF if cursor else 0
    start = max(0, pos - rewind)
    cached = cache.pop((tag, cursor), None)
    keys = None
    if cached is not None:
        it, dels0, size0, d0 = cached
        if d0 is d and dels0 == dels and size0 == len(d) and rewind == 0:
            try:
                keys = list(islice(it, count))
            except RuntimeError:
                keys = None
    if keys is None:
        it = iter(d)
        keys = list(islice(it, start, start + count))
    newpos = start + len(keys)
    if newpos >= len(d) or not keys:
        return 0, keys
    nxt = ((dels & 0xFFFFFF) << 40) | newpos
    if len(cache) > 64:
        cache.clear()
    cache[(tag, nxt)] = (it, dels, len(d), d)
    return nxt, keys


def touch_watched(db: Database, key):
    for w in db.watched_keys.get(key, ()):
        if w.expired:
            if key not in db.d:
                # Watched while already expired, now deleted: no change.
                w.expired = False
                continue
        w.client.dirty_cas = True


def signal_modified(db: Database, key):
    """Called after a key changed: invalidates WATCH on it."""
    wk = db.watched_keys
    if wk and key in wk:
        touch_watched(db, key)


def signal_key_ready(db: Database, key):
    """A list/zset/stream got elements: clients blocked on it may be served."""
    bk = db.blocking_keys
    if bk and key in bk and db.server is not None:
        db.server.ready_keys.append((db, key))


def check_type(v, cls):
    """checkType for a value found otherwise than by a typed lookup: v
    (not None) unless it is of another type than ``cls``'s (WRONGTYPE)."""
    if v.__class__ is not cls and TYPE_NAMES.get(v.__class__) != TYPE_NAMES[cls]:
        raise WRONGTYPE_ERR
    return v


def check_string(v):
    """check_type for strings (the modules' API)."""
    return check_type(v, bytes)


WRONGTYPE_ERR = RedisError("WRONGTYPE Operation against a key holding the wrong kind of value")
