"""SHUTDOWN and the signals that ask for it (prepareForShutdown / finishShutdown)."""

from __future__ import annotations

import os

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
        if err:
            self.shutdown_asap = None
