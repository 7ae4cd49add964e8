"""SHUTDOWN and the signals that ask for it (prepareForShutdown / finishShutdown)."""

from __future__ import annotations

import os
import signal
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
        deadline, flags, _ = w
        if time.time() < deadline and not self.repl_feed.all_in_sync():
            return
        err = self.finish_shutdown(flags)
        if err:
            self._cancel_shutdown_wait(err)

    def _cancel_shutdown_wait(self, err: str):
        """cancelShutdown: writes resume, the clients of SHUTDOWN get err."""
        waiters = self.shutdown_wait[2]
        self.shutdown_wait = None
        self.unpause()
        for c in waiters:
            if not c.closing and c.bstate is not None:
                self.blocking_handler.finish(c, b"-ERR %s\r\n" % err.encode())

    def abort_shutdown(self) -> bool:
        """SHUTDOWN ABORT (abortShutdown): cancel a shutdown waiting for
        replicas, or one a signal asked for that the cron has not performed
        yet.  False: none is pending."""
        if self.shutdown_wait is not None:
            self._cancel_shutdown_wait("Errors trying to SHUTDOWN. Check logs.")
        elif self.shutdown_asap is not None:
            self.shutdown_asap = None
        else:
            return False
        log.notice("Shutdown manually aborted.")
        return True

    def finish_shutdown(self, flags):
        """finishShutdown: save, run the hooks, stop."""
        nosave, save, now, force = flags
        self.repl_feed.flush_replicas()     # flushSlavesOutputBuffers
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
            except Exception:  # noqa: BLE001
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
        if self.replica_link is not None:
            self.replica_link.stop()      # no reconnection while the loop winds down
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
        if err and err is not WAITING:
            # prepareForShutdown failed: keep serving (Redis clears the flag)
            self.shutdown_asap = None
