"""Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN, XREAD BLOCK ...).

Since Redis 7.2 a command that blocks on keys is run again from scratch
when one of its keys is signalled, as if the client had just sent it: a
list/zset/stream command that finds nothing to serve calls::

    block_keys(c, keys, timeout_deadline, type_name, nokey=False, argv=None)

and returns None.  When a key it waits on is signalled (pushed to, added,
deleted, type changed, flushed, swapped, renamed, a consumer group
destroyed ...) and holds a value of ``type_name`` (or, with ``nokey``:
XREADGROUP, whatever it holds, if anything), the client is unblocked and
its command (``argv``, default the one it sent) goes through
``Server.process_command`` again: ACL, cluster redirections, the command's
own checks and errors, propagation, keyspace events, all as for a fresh
command.  It answers, or blocks again (keeping its first deadline).  The
command's calls, time and SLOWLOG entry are counted once, when it
completes (Redis's call() with CLIENT_BLOCKED / CLIENT_REPROCESSING_COMMAND).
A timeout answers with a null array (Redis's replyToBlockedClientTimedOut).

Other blocking (WAIT, WAITAOF, SHUTDOWN, and a module's command blocked on
a key, TS.READ) uses::

    block(c, keys, timeout_deadline, on_ready, on_timeout)

``on_ready(c, db, key) -> bytes | None`` is called when a key it waits on
may have data (a module's serving callback, as RM_BlockClientOnKeys): it
returns the reply or None when it still cannot be served (the client stays
blocked); a RedisError it raises is the client's reply.  ``on_timeout(c) ->
bytes`` gives the timeout reply.  ``on_ready`` only runs while the key
exists, unless the client blocked with ``serve_missing=True``.

Clients are served in the order they blocked (per key), after the writing
command (or the whole MULTI/EXEC or script) completes, as Redis does.
Keys become ready through ``db.signal_key_ready``/``Database.add`` which put
(db, key) on ``server.ready_keys``.
"""

from __future__ import annotations

import math
import time
from time import perf_counter

from ..errors import RedisError
from ..net import client as client_mod
from ..util import parse_int
from .db import TYPE_NAMES, stats


class BlockState:
    __slots__ = ("db", "keys", "deadline", "on_ready", "on_timeout", "since",
                 "serve_missing", "argv", "duration", "vtype", "rerun", "timer", "asking")

    def __init__(self, db, keys, deadline, on_ready, on_timeout, serve_missing=False):
        self.db = db
        self.serve_missing = serve_missing   # served (run again) when the key goes too
        self.keys = keys
        self.argv = None     # the blocked command as sent (SLOWLOG logs it when it completes)
        self.deadline = deadline
        self.on_ready = on_ready
        self.on_timeout = on_timeout
        self.since = time.monotonic()
        self.duration = 0.0  # seconds its calls ran so far (Server.call adds them)
        self.vtype = None    # block_keys: the type name its keys must hold to run it again
        self.rerun = None    # block_keys: the argv run again
        self.timer = None    # the event loop's timeout handle
        self.asking = False  # run after ASKING: run again so (cluster)


def _strtold(b):
    """Redis's string2ld: the whole argument must be a strtold number (decimal
    or hex, inf/infinity accepted), no surrounding spaces, NaN refused.
    Returns None when it is not a number."""
    if not b or len(b) >= 5120 or b[:1].isspace() or b[-1:].isspace() or b"_" in b:
        return None
    try:
        v = float(b)
    except (ValueError, TypeError):
        t = b.lstrip(b"+-")
        if t[:2].lower() != b"0x" or not t[2:3]:
            return None
        try:
            v = float.fromhex(b.decode("ascii"))
        except (ValueError, UnicodeDecodeError, OverflowError):
            return None
    if v != v:
        return None
    if (v in (_INF, -_INF) and b"inf" not in b.lower()) or (v == 0 and b.strip(b"+-0.").lower()[:1] not in (b"", b"e")):
        # Overflow or underflow of a double: judge by long double's range
        # (strtold's ERANGE makes Redis refuse the argument).
        try:
            from decimal import Decimal
            e = Decimal(b.decode("ascii")).adjusted()
        except Exception:  # noqa: BLE001 - hex forms: keep the double's verdict
            return v
        if e > 4931 or e < -4950:
            return None
    return v


_INF = float("inf")


_LLONG_MAX = 9223372036854775807
_TIMEOUT_RANGE = RedisError("ERR timeout is out of range")


def parse_timeout(b, seconds=True) -> float:
    """Redis's getTimeoutFromObjectOrReply: returns an absolute deadline as
    monotonic seconds, or 0 for "block forever".  Redis 7.2: a timeout
    beyond LLONG_MAX ms, or whose deadline (now + it, in ms since the
    epoch) would overflow, is out of range (7.0 took it as negative)."""
    if seconds:
        v = _strtold(b)
        if v is None:
            raise RedisError("ERR timeout is not a float or out of range")
        ms = v * 1000.0
        if ms > _LLONG_MAX:
            raise _TIMEOUT_RANGE
        if ms < -9.2233720368547758e18:
            # (long long) of an out of range value: LLONG_MIN on x86.
            raise RedisError("ERR timeout is negative")
        ms = math.ceil(ms)
    else:
        ms = parse_int(b, RedisError("ERR timeout is not an integer or out of range"))
    if ms < 0:
        raise RedisError("ERR timeout is negative")
    if ms == 0:
        return 0
    if ms > _LLONG_MAX - int(time.time() * 1000):
        raise _TIMEOUT_RANGE
    return time.monotonic() + ms / 1000.0


def _unblocked_error(msg):
    """An -UNBLOCKED error reply (unblockClientOnError), counted."""
    stats.total_error_replies += 1
    stats.count_error("UNBLOCKED")
    return b"-UNBLOCKED %s\r\n" % msg


def _null_array(c):
    return c.null_array


def _lazyfree_ok(c):
    return b"+OK\r\n"      # (no reason for a background free to fail)


class BlockingHandler:
    def __init__(self, server):
        self.server = server
        self.nblocked = 0
        self.handling = False     # serving ready keys (not re-entered: fairness)
        self.reprocessing = None  # the client whose blocked command runs again
        self.carry = None         # and the BlockState it blocked with
        self.asked = None         # the client whose blocking command runs after ASKING

    # -- blocking ---------------------------------------------------------------
    def block_keys(self, c, keys, deadline, vtype, nokey=False, argv=None):
        """blockForKeys: c's command (a list, zset or stream one) waits for
        one of keys to hold a ``vtype`` value (or, with ``nokey``, for any
        change of them), then runs again (``argv``: its arguments then,
        default those it was sent with)."""
        st = self.block(c, keys, deadline, None, _null_array, nokey)
        st.vtype = vtype
        st.rerun = argv if argv is not None else c.block_argv

    def block(self, c, keys, deadline, on_ready, on_timeout, serve_missing=False):
        db = c.db
        keys = list(dict.fromkeys(keys))
        st = c.bstate = BlockState(db, keys, deadline, on_ready, on_timeout, serve_missing)
        st.asking = self.asked is c
        prev = self.carry if self.reprocessing is c else None
        if prev is None:
            st.argv = c.block_argv
        else:
            # blocked again when run again: the first deadline still holds,
            # and the command is still the one the client sent
            st.argv = prev.argv
            st.deadline = deadline = prev.deadline
            st.since = prev.since
            st.duration = prev.duration
        c.blocked = True
        c.update_slow()
        bk = db.blocking_keys
        for key in keys:
            lst = bk.get(key)
            if lst is None:
                bk[key] = [c]
            else:
                lst.append(c)
        self.nblocked += 1
        if deadline:
            loop = self.server.loop
            delay = deadline - time.monotonic()
            # Far deadlines are left to the cron's check_timeouts.
            if loop is not None and delay < 86400 * 365:
                st.timer = loop.call_later(max(0.0, delay), self._timeout_cb, c, st)
        return st

    def block_lazyfree(self, c, lazyfree):
        """BLOCKED_LAZYFREE (7.4: FLUSHALL/FLUSHDB SYNC run as a blocking
        ASYNC): c waits, its next requests with it, until the background
        free has done everything queued so far, then gets +OK, its call
        counted with the time it waited (flushallSyncBgDone).  CLIENT
        UNBLOCK answers +OK at once (as a timeout) or -UNBLOCKED."""
        st = self.block(c, (), 0, None, _lazyfree_ok)
        t0 = perf_counter()

        def done():
            if c.bstate is st and not c.closing:
                self.finish(c, b"+OK\r\n", served=perf_counter() - t0)

        lazyfree.after(done)

    def _timeout_cb(self, c, st):
        if c.bstate is st and not c.closing:
            self.finish(c, st.on_timeout(c))

    def _remove(self, c):
        st = c.bstate
        if st is None:
            return
        if st.timer is not None:
            st.timer.cancel()
            st.timer = None
        bk = st.db.blocking_keys
        for key in st.keys:
            lst = bk.get(key)
            if lst is not None:
                try:
                    lst.remove(c)
                except ValueError:
                    pass
                if not lst:
                    del bk[key]
        c.bstate = None
        c.blocked = False
        c.update_slow()
        self.nblocked -= 1

    def finish(self, c, reply, served=None, failed=False):
        """Unblock c, send reply and continue with its pending requests.
        The call is counted now (Redis's updateStatsOnUnblock): its calls,
        its time (the blocking calls' own plus ``served``: the seconds
        serving it took) in commandstats and the latency histogram,
        ``failed`` a failed call, and the SLOWLOG entry, with the command
        as it was sent."""
        st = c.bstate
        self._remove(c)
        st_cmd = c.last_cmd
        if st_cmd is not None and st is not None:
            dt = st.duration + (served or 0.0)
            st_cmd.calls += 1
            st_cmd.usec += dt
            if failed:
                st_cmd.failed_calls += 1
            if client_mod._LATENCY_TRACKING:
                st_cmd.hist[int(dt * 976562.5).bit_length()] += 1
            th = client_mod._SLOWLOG_THRESHOLD
            if st.argv is not None and th is not None and dt >= th and not st_cmd.skip_slowlog:
                self.server.slowlog_add(c, st.argv, dt, st_cmd)
        if reply is not None:
            c.write([reply])
        self.server.loop.call_soon(c.resume)

    def forget(self, c):
        """The client disconnected while blocked."""
        self._remove(c)

    def unblock(self, c, error=False):
        """CLIENT UNBLOCK: as a timeout, or with an -UNBLOCKED error."""
        st = c.bstate
        if st is None:
            return
        if error:
            reply = _unblocked_error(b"client unblocked via CLIENT UNBLOCK")
        else:
            reply = st.on_timeout(c)
        # Redis 7.2: a failed call with ERROR only (unblockClientOnError),
        # TIMEOUT is a timeout (unblockClientOnTimeout)
        self.finish(c, reply, served=0.0, failed=error)

    def disconnect_all_blocked(self):
        """disconnectAllBlockedClients: the instance becomes a replica, the
        blocked clients get an error and are closed after it."""
        if not self.nblocked:
            return
        for c in list(self.server.clients.values()):
            st = c.bstate
            if st is not None and not c.closing:
                c.close_after_reply = True
                if st.on_timeout is _lazyfree_ok:
                    self.finish(c, _lazyfree_ok(c))
                    continue
                self.finish(c, _unblocked_error(b"force unblock from blocking operation, "
                                                b"instance state changed (master -> replica?)"),
                            failed=True)

    def check_timeouts(self, now=None):
        if not self.nblocked:
            return
        if now is None:
            now = time.monotonic()
        for c in list(self.server.clients.values()):
            st = c.bstate
            if st is not None and st.deadline and st.deadline <= now:
                self.finish(c, st.on_timeout(c))

    # -- serving ----------------------------------------------------------------
    def handle_ready_keys(self):
        """handleClientsBlockedOnKeys: serve the clients blocked on the
        keys signalled, key by key, each key's clients in the order they
        blocked (those there when its turn came: one that blocks again
        waits for the next signal).  Keys signalled meanwhile (BLMOVE's
        push) are served in the same pass; not re-entered."""
        if self.handling:
            return
        self.handling = True
        try:
            self._serve_ready()
        finally:
            self.handling = False

    def _serve_ready(self):
        srv = self.server
        ready = srv.ready_keys
        while ready:
            batch = list(ready)
            ready.clear()
            seen = set()
            for db, key in batch:
                k = (db.id, key)
                if k in seen:
                    continue
                seen.add(k)
                waiting = db.blocking_keys.get(key)
                if not waiting:
                    continue
                for c in list(waiting):
                    st = c.bstate
                    if st is None or st.db is not db or c.closing:
                        continue
                    # LOOKUP_NOEFFECTS: a key whose TTL passed is not
                    # there, and is not deleted here either
                    v = db.d.get(key) if db.is_live(key) else None
                    if st.on_ready is None:
                        if st.serve_missing or (v is not None and TYPE_NAMES.get(v.__class__) == st.vtype):
                            self.reprocess(c)
                    elif v is not None or st.serve_missing:
                        self._serve_module(c, db, key)

    def reprocess(self, c):
        """unblockClientOnKey: c's command runs again, through every check
        a new command goes through; it answers or blocks again."""
        st = c.bstate
        self._remove(c)
        srv = self.server
        self.reprocessing = c
        self.carry = st
        if st.asking:
            c.cluster_asking = True
            c.update_slow()
        try:
            r = srv.process_command(c, st.rerun)
        finally:
            self.reprocessing = None
            self.carry = None
        if c.bstate is not None or c.paused_queue is not None:
            return      # blocked again (or postponed by a pause)
        if c.cluster_asking:
            c.cluster_asking = False     # refused before it was routed
            c.update_slow()
        if r is not None:
            c.write([r])
        srv.loop.call_soon(c.resume)

    def _serve_module(self, c, db, key):
        """A module's command blocked on key: its callback serves it, outside
        a command of its own (memory accounting and tracking invalidations
        are done here)."""
        srv = self.server
        mt = srv.mem_track
        if mt is not None:
            mtok = mt.measure(db, (key,))
        dirty = srv.dirty
        t0 = perf_counter()
        try:
            reply = c.bstate.on_ready(c, db, key)
        except RedisError as e:
            reply = c.error_reply(e, c.last_cmd)   # counts the failed call
        if mt is not None:
            mt.account(db, (key,), mtok)
        if reply is not None:
            self.finish(c, reply, served=perf_counter() - t0)
        trk = srv.tracking
        if trk.wrap_active and (reply is not None or srv.dirty != dirty):
            trk.invalidate(key, False)


def install(server):
    return BlockingHandler(server)
