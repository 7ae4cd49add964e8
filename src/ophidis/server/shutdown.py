"""SHUTDOWN and the signals that ask for it (prepareForShutdown / finishShutdown)."""

from __future__ import annotations

import os
import time

from .. import log

WAITING = "waiting"


class Shutdown:
    """Part of ``Server`` (a mixin: the state is declared there)."""

    __slots__ = ()

    def request_shutdown(self, nosave=False, save=False, now=False, force=False, from_signal=False,
                         waiter=None):
        """prepareForShutdown.  Returns None on success (the loop stops),
        an error text, or WAITING: replicas lag behind, writes are paused
        and the shutdown finishes when they caught up or after
        shutdown-timeout (the cron calls ``shutdown_cron``); ``waiter``, the
        client of SHUTDOWN, gets its reply then."""
        if self.shutdown_wait is not None:
            if waiter is None:
                return "in-progress"
            self.shutdown_wait[2].append(waiter)    # it gets the same outcome
            return WAITING
        if not from_signal:
            log.warning("User requested shutdown...")
        flags = (nosave, save, now, force)
        tmo = self.config["shutdown-timeout"]
        if not now and tmo and not self.repl_feed.all_in_sync():
            self.shutdown_wait = (time.time() + tmo, flags, [] if waiter is None else [waiter])
            self.repl_feed.send_getack_now()
            self.pause("write", float("inf"))
            log.notice("Waiting for replicas before shutting down.")
            return WAITING
        return self.finish_shutdown(flags)

    def shutdown_cron(self):
        w = self.shutdown_wait
        if w is None:
            return
        deadline, flags, waiters = w
        if time.time() < deadline and not self.repl_feed.all_in_sync():
            return
        err = self.finish_shutdown(flags)
        if err:
            # cancelShutdown: the clients of SHUTDOWN get the error
            self.shutdown_wait = None
            self.unpause()
            for c in waiters:
                if not c.closing and c.bstate is not None:
                    self.blocking_handler.finish(c, b"-ERR %s\r\n" % err.encode())

    def abort_shutdown(self) -> bool:
        """SHUTDOWN ABORT (abortShutdown)."""
        w = self.shutdown_wait
        if w is not None:
            self.shutdown_wait = None
            self.unpause()
            for c in w[2]:
                if not c.closing and c.bstate is not None:
                    self.blocking_handler.finish(c, b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n")
        elif self.shutdown_asap is not None:
            self.shutdown_asap = None
        else:
            return False
        log.notice("Shutdown manually aborted.")
        return True

    def finish_shutdown(self, flags):
        """finishShutdown: save, run the hooks, stop."""
        nosave, save, now, force = flags
        self.repl_feed.log_lagging()
        do_save = (self.config["save"] and not nosave) or save
        if self.loading:
            do_save = False
        for check in self.shutdown_checks:
            if check(force):
                log.warning("Errors trying to shut down the server. Check the logs for more information.")
                return "Errors trying to SHUTDOWN. Check logs."
        if do_save:
            log.notice("Saving the final RDB snapshot before exiting.")
            try:
                self.persistence.shutdown_save()
            except Exception as e:  # noqa: BLE001
                if force:
                    log.warning("Error trying to save the DB. Exit anyway.")
                else:
                    log.warning("Error trying to save the DB, can't exit.")
                    log.warning("Errors trying to shut down the server. Check the logs for more information.")
                    return "Errors trying to SHUTDOWN. Check logs."
        for h in self.shutdown_hooks:
            try:
                h()
            except Exception:  # noqa: BLE001
                pass
        pidfile = self.config["pidfile"]
        if pidfile:
            log.notice("Removing the pid file.")
            try:
                os.unlink(pidfile)
            except OSError:
                pass
        self.close_listeners()
        log.warning("Redis is now ready to exit, bye bye...")
        self._stopping = True
        for c in list(self.clients.values()):
            c.close()
        self.loop.call_soon(self.loop.stop)
        return None

    def _signal(self, signame):
        if self._stopping:
            return
        if self.shutdown_asap == signame:
            log.warning("You insist... exiting now.")
            os._exit(1)
        self.shutdown_asap = signame
        # handle promptly rather than waiting for the cron tick
        self.loop.call_soon(self._handle_signal_now)

    def _handle_signal_now(self):
        sig = self.shutdown_asap
        if sig is None or self._stopping:
            return
        self.shutdown_asap = None
        log.warning("Received %s scheduling shutdown..." % sig)
        err = self.request_shutdown(from_signal=True)
        if err and err is not WAITING:
            self.shutdown_asap = None
