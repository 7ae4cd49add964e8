"""CLIENT PAUSE / UNPAUSE (pauseClients): which commands wait, and resuming them."""

from __future__ import annotations

import time

from ..commands.scripting import script_writes
from ..net.client import Client


class Pause:
    """Part of ``Server`` (a mixin: the state is declared there)."""

    __slots__ = ()

    def _paused_for(self, cmd, c, argv=None) -> bool:
        if time.monotonic() >= self.pause_end:
            self.unpause()
            return False
        if self.pause_type == "all":
            return True
        base = cmd.parent.name if cmd.parent is not None else cmd.name
        if base == "exec":
            return bool(c.multi) and any(q[0].write or q[0].may_replicate for q in c.multi)
        if base in ("eval", "evalsha", "fcall") and argv is not None:
            # A script declaring no-writes is not a write (evalGetCommandFlags).
            if script_writes(self, base, argv) is False:
                return False
            return True
        return cmd.write or cmd.may_replicate

    def postpone(self, c: Client, argv):
        c.paused_queue = argv
        self.paused_clients.append(c)

    def pause(self, kind: str, until: float):
        # A pause can only be extended or made stricter, as in Redis.
        if self.pause_type == "all" and kind == "write" and self.pause_end > time.monotonic():
            self.pause_end = max(self.pause_end, until)
            return
        self.pause_type = kind
        self.pause_end = max(until, self.pause_end)
        self.paused_expire = True
        self.update_server_slow()

    def unpause(self):
        self.pause_type = None
        self.pause_end = 0.0
        self.paused_expire = False
        self.update_server_slow()
        waiting = list(self.paused_clients)
        self.paused_clients.clear()
        for c in waiting:
            argv = c.paused_queue
            c.paused_queue = None
            if c.closing:
                continue
            r = self.process_command(c, argv)
            if r is not None:
                c.write([r])
            c.resume()
