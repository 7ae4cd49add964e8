"""HOTKEYS (Redis 8.6): a tracking session that charges each keyed
command's time and network bytes to its keys, for the top K of each.

A session (``HotKeys.session``) starts with HOTKEYS START and stays
readable (HOTKEYS GET) after STOP or its DURATION until RESET.  While one
is active this is a command wrapper (``cmdtable.registry.WRAPPERS``): every
command's proc is wrapped, as memory accounting and client-side caching
wrap them, so nothing runs on the request path when no session is active.

What a command costs, as Redis counts it: its run time in microseconds
(CPU) and the bytes of its request (as RESP) plus its reply (NET), split
evenly among its keys (the remainder is dropped, as Redis does).  Commands
without keys are not counted; commands run by a script are not (the
script's own command is, with its keys), those of a transaction are, one
by one.  Redis keeps the per-key totals in a probabilistic top-K sketch
(10 x K candidates); here they are exact sums, pruned to the largest
100 x K entries when the table passes 1000 x K.
"""

from __future__ import annotations

import resource
import time
from random import random

from .cluster.slot_stats import request_bytes
from .cluster.slots import key_hash_slot
from .cmdtable.keys import get_keys
from .cmdtable.registry import WRAPPERS, rewrap

CPU = 1
NET = 2
NSLOTS = 16384

_perf_ns = time.perf_counter_ns


class Session:
    """One tracking session: its parameters, totals and per-key sums."""
    __slots__ = ("metrics", "count", "duration_ms", "sample", "slots", "active", "start_ms",
                 "ru_start", "cpu", "net", "time_all", "net_all", "time_sel", "net_sel",
                 "time_sampled", "net_sampled", "net_total", "slotset")

    def __init__(self, metrics, count, duration_ms, sample, slots):
        self.metrics = metrics
        self.count = count
        self.duration_ms = duration_ms      # 0: until STOP; after STOP: how long it ran
        self.sample = sample
        self.slots = slots                  # sorted slot list, or None (all of ours)
        self.slotset = frozenset(slots) if slots is not None else None
        self.active = True
        self.start_ms = int(time.time() * 1000)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        self.ru_start = (ru.ru_utime, ru.ru_stime)
        self.cpu = {} if metrics & CPU else None
        self.net = {} if metrics & NET else None
        self.time_all = self.net_all = 0
        self.time_sel = self.net_sel = 0
        self.time_sampled = self.net_sampled = 0
        self.net_total = 0                   # what the NET top-K was given

    def elapsed_ms(self) -> int:
        if not self.active:
            return self.duration_ms
        return int(time.time() * 1000) - self.start_ms

    def cpu_ms(self):
        """User and system CPU time of the process since the start, in ms."""
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return (int((ru.ru_utime - self.ru_start[0]) * 1000), int((ru.ru_stime - self.ru_start[1]) * 1000))

    def top(self, table):
        items = sorted(table.items(), key=lambda kv: kv[1], reverse=True)
        return [kv for kv in items[:self.count] if kv[1] > 0]

    def _prune(self, table):
        keep = sorted(table.items(), key=lambda kv: kv[1], reverse=True)[:self.count * 100]
        table.clear()
        table.update(keep)

    def _charge(self, table, keys, per):
        """Add ``per`` to each key's sum (nothing when the share is 0),
        pruning the table once it passes 1000 x K entries."""
        if per:
            for k in keys:
                table[k] = table.get(k, 0) + per
            if len(table) > self.count * 1000:
                self._prune(table)

    def record(self, keys, slot, us, nbytes):
        n = len(keys)
        self.time_all += us
        self.net_all += nbytes
        selected = self.slotset is None or slot in self.slotset
        sampled = self.sample == 1 or random() < 1.0 / self.sample
        if selected:
            self.time_sel += us
            self.net_sel += nbytes
            if sampled and self.sample > 1:
                self.time_sampled += us
                self.net_sampled += nbytes
        if not (selected and sampled):
            return
        if self.cpu is not None:
            self._charge(self.cpu, keys, us // n)
        if self.net is not None:
            per = nbytes // n
            self._charge(self.net, keys, per)
            self.net_total += per * n


class HotKeys:
    """The server's hotkeys tracking (``server.hotkeys``)."""

    def __init__(self, srv):
        self.srv = srv
        self.session = None
        self.wrap_active = False
        srv.cron_hooks.append(self.cron)
        WRAPPERS.append(self)

    def tracking(self) -> bool:
        """A session is in progress (started, not stopped or run out)."""
        return self.session is not None and self.session.active

    def start(self, session):
        self.session = session
        self._activate(True)

    def stop(self):
        s = self.session
        s.active = False
        s.duration_ms = int(time.time() * 1000) - s.start_ms
        self._activate(False)

    def reset(self):
        self.session = None

    def cron(self):
        """A session started with DURATION stops once it has run that long."""
        s = self.session
        if self.tracking() and s.duration_ms and s.elapsed_ms() >= s.duration_ms:
            s.active = False
            self._activate(False)

    def _activate(self, on):
        if on != self.wrap_active:
            self.wrap_active = on
            rewrap()

    def my_slot_ranges(self):
        """The slots this node serves as [start, end] ranges (all of them
        outside cluster mode)."""
        cl = self.srv.cluster
        if cl is None:
            return [(0, NSLOTS - 1)]
        me = cl.myself
        return slot_ranges([s for s in range(NSLOTS) if cl.slots[s] is me])

    # -- the per-command wrapper ------------------------------------------------------------
    def wrap(self, cmd, proc):
        if not cmd.key_specs and cmd.getkeys_proc is None:
            return proc
        hk = self

        def hot(c, argv):
            s = hk.session
            if s is None or not s.active or c.in_script:
                return proc(c, argv)
            t0 = _perf_ns()
            r = None
            try:
                r = proc(c, argv)
                return r
            finally:
                # (an error reply raised by the command counts its time and
                # request, as Redis counts a command that failed)
                us = (_perf_ns() - t0) // 1000
                keys = get_keys(cmd, argv)
                if keys:
                    nbytes = request_bytes(argv)
                    if r:
                        nbytes += len(r)
                    s.record(keys, key_hash_slot(keys[0]) if s.slotset is not None else 0, us, nbytes)
        return hot


def slot_ranges(slots):
    """Sorted slot numbers as merged [start, end] ranges."""
    out = []
    for s in slots:
        if out and out[-1][1] == s - 1:
            out[-1][1] = s
        else:
            out.append([s, s])
    return [tuple(r) for r in out]
