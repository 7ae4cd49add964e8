"""Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN, XREAD BLOCK ...).

A blocking command that finds nothing to serve calls::

    block(c, keys, timeout_deadline, on_ready, on_timeout)

``on_ready(c, db, key) -> bytes | None`` is called when a key it waits on
may have data (after the command that pushed to it): it returns the reply
(having done the pop/move) or None when it still cannot be served (the
client stays blocked); a RedisError it raises is the client's reply.
``on_timeout(c) -> bytes`` gives the timeout reply.  ``on_ready`` only runs
while the key exists, unless the client blocked with ``serve_missing=True``
(XREADGROUP: a deleted stream ends the wait with an error).

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
from .db import stats


class BlockState:
    __slots__ = ("db", "keys", "deadline", "on_ready", "on_timeout", "since", "also",
                 "serve_missing", "argv", "duration")

    def __init__(self, db, keys, deadline, on_ready, on_timeout, also=(), serve_missing=False):
        self.db = db
        self.serve_missing = serve_missing
        self.keys = keys
        self.also = also     # other keys serving may write (BLMOVE's destination)
        self.argv = None     # the blocked command (SLOWLOG logs it when served)
        self.deadline = deadline
        self.on_ready = on_ready
        self.on_timeout = on_timeout
        self.since = time.monotonic()
        self.duration = 0.0  # seconds the blocking call itself ran (Server.call sets it)


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


def parse_timeout(b, seconds=True) -> float:
    """Redis's getTimeoutFromObjectOrReply: returns an absolute deadline as
    monotonic seconds, or 0 for "block forever"."""
    if seconds:
        v = _strtold(b)
        if v is None:
            raise RedisError("ERR timeout is not a float or out of range")
        ms = v * 1000.0
        if ms != ms or ms >= 9.2233720368547758e18 or ms < -9.2233720368547758e18:
            # (long long) of an out of range value: LLONG_MIN on x86.
            raise RedisError("ERR timeout is negative")
        ms = math.ceil(ms)
    else:
        ms = parse_int(b, RedisError("ERR timeout is not an integer or out of range"))
    if ms < 0:
        raise RedisError("ERR timeout is negative")
    if ms == 0:
        return 0
    return time.monotonic() + ms / 1000.0


class BlockingHandler:
    def __init__(self, server):
        self.server = server
        self.nblocked = 0

    # -- blocking ---------------------------------------------------------------
    def block(self, c, keys, deadline, on_ready, on_timeout, also=(), serve_missing=False):
        db = c.db
        keys = list(dict.fromkeys(keys))
        c.bstate = BlockState(db, keys, deadline, on_ready, on_timeout, also, serve_missing)
        c.bstate.argv = c.block_argv
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
                st = c.bstate
                loop.call_later(max(0.0, delay), self._timeout_cb, c, st)

    def _timeout_cb(self, c, st):
        if c.bstate is st and not c.closing:
            self.finish(c, st.on_timeout(c))

    def _remove(self, c):
        st = c.bstate
        if st is None:
            return
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
        ``served``: the seconds serving it took (the client was served or
        unblocked by CLIENT UNBLOCK, not timed out): Redis's
        updateStatsOnUnblock then records the call's latency (the blocking
        call's own time plus that), and ``failed`` counts a failed call."""
        st = c.bstate
        argv = st.argv if st is not None else None
        self._remove(c)
        st_cmd = c.last_cmd
        if st_cmd is not None:
            st_cmd.calls += 1
            if served is not None:
                if failed:
                    st_cmd.failed_calls += 1
                if client_mod._LATENCY_TRACKING:
                    dt = served + (st.duration if st is not None else 0.0)
                    st_cmd.hist[int(dt * 976562.5).bit_length()] += 1
            # the command is logged when it completes, as it was sent
            # (Redis's updateStatsOnUnblock; its execution time is tiny)
            if argv is not None and client_mod._SLOWLOG_THRESHOLD == 0 and not st_cmd.skip_slowlog:
                self.server.slowlog_add(c, argv, 0.0, st_cmd)
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
            stats.total_error_replies += 1
            stats.errorstats["UNBLOCKED"] = stats.errorstats.get("UNBLOCKED", 0) + 1
            reply = b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
        else:
            reply = st.on_timeout(c)
        # Redis 7.0 counts a call unblocked this way as failed, with either
        # reason (updateStatsOnUnblock(target, 0, 0, 1))
        self.finish(c, reply, served=0.0, failed=True)

    def disconnect_all_blocked(self):
        """disconnectAllBlockedClients: the instance becomes a replica, the
        blocked clients get an error and are closed after it."""
        if not self.nblocked:
            return
        for c in list(self.server.clients.values()):
            if c.bstate is not None and not c.closing:
                c.close_after_reply = True
                self.finish(c, b"-UNBLOCKED force unblock from blocking operation, "
                               b"instance state changed (master -> replica?)\r\n")

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
                    if c.bstate is None or c.bstate.db is not db:
                        continue
                    if db.lookup_nostats(key) is None and not c.bstate.serve_missing:
                        continue
                    # served outside a command of its own: memory accounting
                    # and tracking invalidations are done here
                    mkeys = (key,) + tuple(c.bstate.also)
                    mt = srv.mem_track
                    if mt is not None:
                        mtok = mt.measure(db, mkeys)
                    dirty = srv.dirty
                    t0 = perf_counter()
                    try:
                        reply = c.bstate.on_ready(c, db, key)
                    except RedisError as e:
                        reply = c.error_reply(e, c.last_cmd)   # counts the failed call
                    if mt is not None:
                        mt.account(db, mkeys, mtok)
                    if reply is not None:
                        self.finish(c, reply, served=perf_counter() - t0)
                    trk = srv.tracking
                    if trk.wrap_active and (reply is not None or srv.dirty != dirty):
                        for k in mkeys:
                            trk.invalidate(k, False)


def install(server):
    return BlockingHandler(server)
