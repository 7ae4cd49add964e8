"""What the server records about the commands it runs: MONITOR lines, the
slowlog, the latency monitor's events."""

from __future__ import annotations

import time
from collections import deque

from ..keyspace.db import stats
from ..net import client as client_mod
from ..net.client import Client
from ..protocol.resp import sdscatrepr


class SlowlogEntry:
    __slots__ = ("id", "time", "duration", "argv", "addr", "name", "argc")


class Monitor:
    """Part of ``Server`` (a mixin: the state is declared there)."""

    __slots__ = ()

    def feed_monitors(self, c: Client, argv):
        now = time.time()
        sec = int(now)
        if c.in_script:
            origin = "%d lua" % c.db.id
        elif c.is_unix:
            origin = "%d unix:%s" % (c.db.id, self.unix_path or "")
        else:
            origin = "%d %s" % (c.db.id, c.addr)
        line = b"+%d.%06d [%s] %s\r\n" % (
            sec, min(int((now - sec) * 1e6), 999999), origin.encode("latin-1", "replace"),
            b" ".join([sdscatrepr(a) for a in argv]))
        for m in list(self.monitors):
            m.push(line)

    def slowlog_add(self, c, argv, dt, cmd=None):
        # 8.8's slowlog_commands_* (INFO stats) and, for the command,
        # commandstats' slowlog_* (entries trimmed later count too)
        ms = dt * 1000
        stats.slowlog_count += 1
        stats.slowlog_ms += ms
        if ms > stats.slowlog_ms_max:
            stats.slowlog_ms_max = int(ms)
        if cmd is not None:
            st = cmd.slowlog_stats
            if st is None:
                st = cmd.slowlog_stats = [0, 0.0, 0]
            st[0] += 1
            st[1] += ms
            if ms > st[2]:
                st[2] = int(ms)
        e = SlowlogEntry()
        e.id = self.slowlog_next_id
        self.slowlog_next_id += 1
        e.time = int(time.time())
        e.duration = int(dt * 1e6)
        n = len(argv)
        # at most slowlog-max-argc arguments (8.10's directive; 7.0 kept 32),
        # the last kept one saying how many more there were
        keep = self.config["slowlog-max-argc"]
        args = []
        for i, a in enumerate(argv[:keep]):
            if i == keep - 1 and n > keep:
                args.append(b"... (%d more arguments)" % (n - keep + 1))
                break
            if len(a) > 128:
                a = a[:128] + b"... (%d more bytes)" % (len(a) - 128)
            args.append(a)
        e.argv = args
        e.addr = c.addr.encode()
        e.name = c.name or b""
        e.argc = n
        self.slowlog.appendleft(e)
        maxlen = self.config["slowlog-max-len"]
        while len(self.slowlog) > maxlen:
            self.slowlog.pop()

    def slow_call(self, c, cmd, argv, dt, total=None):
        """A call took at least the slowlog or latency-monitor threshold.
        A command that blocked is logged when it completes (argv None
        before), with the time of all its calls (``total``); the latency
        monitor samples each call."""
        th = client_mod._SLOWLOG_THRESHOLD
        if total is None:
            total = dt
        if th is not None and argv is not None and total >= th and not cmd.skip_slowlog:
            self.slowlog_add(c, cmd.redact(argv) if cmd.redact is not None else argv, total, cmd)
        lt = client_mod._LATENCY_MONITOR
        if lt is not None and dt >= lt:
            self.latency_add("fast-command" if cmd.fast else "command", int(dt * 1000))

    def latency_add(self, event: str, ms: int):
        ev = self.latency_events.get(event)
        now = int(time.time())
        if ev is None:
            ev = self.latency_events[event] = {"samples": deque(maxlen=160), "max": 0}
        ev["max"] = max(ev["max"], ms)
        s = ev["samples"]
        if s and s[-1][0] == now:
            if s[-1][1] < ms:
                s[-1] = (now, ms)
        else:
            s.append((now, ms))
