"""CLIENT PAUSE / UNPAUSE (pauseClients): which commands wait, and resuming them."""

from __future__ import annotations

import time

from ..net.client import Client


class Pause:
    """Part of ``Server`` (a mixin: the state is declared there)."""

    __slots__ = ()

    def _paused_for(self, f) -> bool:
        """Whether a command with flags ``f`` (dispatch's getCommandFlags:
        the command, a script's declared flags, EXEC's queue) waits."""
        if time.monotonic() >= self.pause_end:
            self.unpause()
            return False
        if self.pause_type == "all":
            return True
        return f.write or f.may_replicate

    def still_paused(self) -> bool:
        """checkClientPauseTimeoutAndReturnIfPaused (a pause whose time is
        over counts as ended; the cron resumes its clients)."""
        return self.pause_type is not None and time.monotonic() < self.pause_end

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
            if c.is_master and self.replica_link is not None:
                self.replica_link.resume_after_pause(c)     # our master's stream
                continue
            argv = c.paused_queue
            c.paused_queue = None
            if c.closing:
                continue
            r = self.process_command(c, argv)
            if r is not None:
                c.write([r])
            c.resume()
