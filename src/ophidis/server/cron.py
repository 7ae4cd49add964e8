"""serverCron: the periodic work (instantaneous metrics, active expiry, client
timeouts, blocked clients' timeouts, pauses, the subsystems' cron hooks)."""

from __future__ import annotations

import asyncio
import time

from .. import log
from ..cmdtable.registry import ALL
from ..crash import watchdog_schedule
from ..keyspace import dictshape, hfe
from ..keyspace.db import stats
from ..net import client as client_mod


class Cron:
    """Part of ``Server`` (a mixin: the state is declared there)."""

    __slots__ = ()

    async def cron(self):
        while not self._stopping:
            await asyncio.sleep(1.0 / self.hz)
            t0 = time.monotonic()
            try:
                self.cron_once()
            except Exception:  # noqa: BLE001
                import traceback
                log.warning("cron error: %s" % traceback.format_exc().replace("\n", " | "))
            # a cron run is one of the event loop's cycles (eventloop_*)
            d = time.monotonic() - t0
            stats.el_cron_cycles += 1
            stats.el_duration += d
            stats.el_cron += d
            if d > stats.el_max:
                stats.el_max = d

    def cron_once(self):
        if self.pause_cron:
            return
        self.cron_loops += 1
        if not self.loading:
            watchdog_schedule()     # the software watchdog (watchdog-period)
        now = time.monotonic()
        # instantaneous metrics every 100ms
        ops = self.total_commands()
        cycles = stats.total_reads_processed + stats.el_cron_cycles
        sample = (now, ops, stats.net_input_bytes, stats.net_output_bytes, cycles, stats.el_duration)
        last = self._last_sample
        if last is not None:
            dt = now - last[0]
            if dt > 0:
                self.ops_samples.append((ops - last[1]) / dt)
                self.net_in_samples.append((sample[2] - last[2]) / dt)
                self.net_out_samples.append((sample[3] - last[3]) / dt)
                # eventloop cycles per second, and the mean cycle in usec
                n = cycles - last[4]
                self.el_samples.append(n / dt)
                self.el_dur_samples.append((sample[5] - last[5]) * 1e6 / n if n > 0 else 0.0)
        self._last_sample = sample
        # active expiry: 25% of the cycle time at most
        if self.active_expire_enabled:
            self.active_expire_cycle()
        # databasesCron: the tables' resizing and the rehash's end (the
        # cron's incrementallyRehash, or without activerehashing the steps
        # of the accesses meanwhile); not while a child runs
        if self.child_type is None:
            dictshape.look_all(self, True)
        # client timeouts
        tmo = self.config["timeout"]
        if tmo and self.cron_loops % max(1, self.hz // 10 or 1) == 0:
            for c in list(self.clients.values()):
                if (not c.blocked and not c.monitor and not (c.pubsub_channels or c.pubsub_patterns)
                        and now - c.last_time > tmo):
                    log.verbose("Closing idle client")
                    c.close()
        for c in list(self.clients.values()):
            if c.blocked:
                self.blocking_handler.check_timeouts(now)
                break
        if self.pause_type is not None and now >= self.pause_end:
            self.unpause()
        for h in self.cron_hooks:
            h()
        if self.shutdown_asap is not None:
            self.shutdown_from_cron()
        if self.shutdown_wait is not None:
            self.shutdown_cron()

    def active_expire_cycle(self):
        if self.is_replica and self.replica_link is not None and not self.paused_expire:
            self.replica_link.expire_own_keys()
        if self.is_replica or self.paused_expire:
            return
        effort = self.config["active-expire-effort"] - 1
        keys_per_loop = 20 + 20 // 4 * effort
        stale = 10 - effort
        budget = (25 + 2 * effort) / 100.0 / self.hz
        t0 = time.time()
        deadline = t0 + budget
        total_sampled = total_expired = 0
        timed_out = False
        for db in self.dbs:
            if db.hfe_heap:
                hfe.active_expire(self, db, deadline)
            if not db.expires:
                continue
            s, e, to = db.active_expire(deadline, keys_per_loop, stale)
            total_sampled += s
            total_expired += e
            if to:
                timed_out = True
                break
        elapsed = time.time() - t0
        stats.expired_keys_active += total_expired
        stats.expire_cycle_cpu_milliseconds += int(elapsed * 1000)
        lt = client_mod._LATENCY_MONITOR
        if lt is not None and elapsed >= lt:
            self.latency_add("expire-cycle", int(elapsed * 1000))
        if timed_out:
            stats.expired_time_cap_reached_count += 1
        if total_sampled:
            cur = total_expired / total_sampled
            stats.expired_stale_perc = cur * 0.05 + stats.expired_stale_perc * 0.95

    def total_commands(self) -> int:
        return sum(c.calls for c in ALL.values())

    def instantaneous(self, samples) -> float:
        if not samples:
            return 0.0
        return sum(samples) / len(samples)
