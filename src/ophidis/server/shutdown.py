"""SHUTDOWN and the signals that ask for it (prepareForShutdown / finishShutdown)."""

from __future__ import annotations

import os
import signal

from .. import log


class Shutdown:
    """Part of ``Server`` (a mixin: the state is declared there)."""

    __slots__ = ()

    def request_shutdown(self, nosave=False, save=False, now=False, force=False, from_signal=False):
        """Returns None on success (the loop stops) or an error text."""
        if not from_signal:
            log.warning("User requested shutdown...")
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
        if self.loading:
            # SHUTDOWN or a signal while the dataset loads (a thread may be
            # parsing it, start-up is not finished): exit now, as Redis
            log.flush_and_exit(self.exit_code or 0)
        self._stopping = True
        for c in list(self.clients.values()):
            c.close()
        self.loop.call_soon(self.loop.stop)
        return None

    def on_shutdown_signal(self, sig, frame=None):
        """sigShutdownHandler: SIGTERM / SIGINT ask for a shutdown, which
        the cron performs (not while DEBUG PAUSE-CRON holds it; SHUTDOWN
        ABORT can still cancel it).  A Python signal handler: it runs in
        the main thread as soon as Python regains control, even in the
        middle of a long synchronous task (a SAVE on shutdown), so a
        second SIGINT can exit at once, removing the temp file of a save
        in progress."""
        if self._stopping:
            return
        name = "SIGINT" if sig == signal.SIGINT else "SIGTERM" if sig == signal.SIGTERM else None
        if self.shutdown_asap is not None and sig == signal.SIGINT:
            log.warning("You insist... exiting now.")
            try:
                os.unlink("temp-%d.rdb" % os.getpid())
            except OSError:
                pass
            log.flush_and_exit(1)   # not a clean shutdown
        if self.loading:
            msg = "Received shutdown signal during loading, scheduling shutdown."
        elif name is None:
            msg = "Received shutdown signal, scheduling shutdown..."
        else:
            msg = "Received %s scheduling shutdown..." % name
        log.warning(msg)
        self.shutdown_asap = name or "signal"

    def shutdown_while_loading(self):
        """whileBlockedCron's part: a signal asked for a shutdown while the
        dataset is being loaded: exit now, without saving."""
        if self.shutdown_asap is None or self._stopping:
            return
        if self.request_shutdown(nosave=True, from_signal=True) is None:
            log.flush_and_exit(0)          # (request_shutdown exits first while loading)
        log.warning("SIGTERM received but errors trying to shut down the server, check the logs for more "
                    "information")
        self.shutdown_asap = None

    def shutdown_from_cron(self):
        """serverCron's part: perform the shutdown a signal asked for."""
        if self.shutdown_asap is None or self._stopping:
            return
        err = self.request_shutdown(from_signal=True)
        if err:
            # prepareForShutdown failed: keep serving (Redis clears the flag)
            self.shutdown_asap = None

    def abort_shutdown(self) -> bool:
        """abortShutdown: cancel a shutdown a signal asked for and the cron
        has not performed yet.  False: none is pending."""
        if self.shutdown_asap is None:
            return False
        self.shutdown_asap = None
        log.warning("Shutdown manually aborted.")
        return True
