"""Append-only file in Redis 7.0's multi-part layout.

With ``appendonly yes`` the directory ``appenddirname`` (under ``dir``)
holds:

* ``<appendfilename>.manifest``: one line per file, ``file <name> seq <n>
  type <b|h|i>`` (base, history, incr), base first, then history, then the
  incr files in increasing sequence;
* one base file, ``<appendfilename>.<seq>.base.rdb`` (an RDB with the
  ``aof-base`` aux field, ``aof-use-rdb-preamble yes``) or ``.base.aof``
  (RESP commands rebuilding the dataset);
* incr files ``<appendfilename>.<seq>.incr.aof``: every propagated write as
  a RESP array, a SELECT whenever the database changes, MULTI ... EXEC
  around transactions and scripts, their SELECTs inside (see propagate.py).

Writing.  ``Aof`` is a target of the server's Propagator: ``feed`` appends
the encoded commands to an in-memory buffer.  The buffer is written (one
``write`` for all the commands of a read batch) before any reply leaves the
server: ``client.set_before_reply`` makes ``Client.write`` call
``before_reply`` first, the counterpart of Redis writing the AOF buffer in
beforeSleep before handling clients' writes.  Writes that no reply follows
(active expiry, evictions) are written by a callback at the end of the
event-loop iteration.  ``appendfsync always`` fdatasyncs before the reply;
``everysec`` hands an fsync per second to a background thread (Redis's bio);
``no`` leaves it to the kernel.

Rewriting.  BGREWRITEAOF (and the automatic rewrite of
``auto-aof-rewrite-percentage`` / ``-min-size``) forks a child that writes a
new base into ``temp-rewriteaof-bg-<pid>.aof`` while the parent opens a new
incr file (recorded in the manifest at once).  When the child succeeds the
temp file becomes the next base, the older base and incr files become
history in a new manifest (written to a temp file, fsynced, renamed) and are
deleted.  CONFIG SET appendonly yes starts in the "wait rewrite" state: the
writes after the fork accumulate in ``temp-<appendfilename>.incr``, which
becomes the first incr file when the rewrite succeeds.

Loading.  At start-up the manifest is read (even with appendonly no, as
Redis does: a bad manifest is fatal); with appendonly yes its base and incr
files are replayed in order instead of dump.rdb, through a client that never
replies.  An old single-file ``appendonly.aof`` in ``dir`` is moved into the
directory as the base of a new manifest.  A truncated last file is cut at
the last complete command with ``aof-load-truncated yes``.

The package: ``Aof`` here (configuration, the propagation target, writing
and fsync, opening files, start/stop at run time, a replica's sync, cron,
shutdown, INFO), with its ``Rewrite`` (rewrite.py) and ``Loader``
(loader.py) halves as mixins; manifest.py (the manifest and file names),
fsync.py (the background thread), common.py (states, load results, file
helpers).
"""

from __future__ import annotations

import errno as errno_mod
import os
import time
from time import perf_counter

from ... import log
from ...config import ConfigError
from ...errors import RedisError
from ...keyspace.db import stats
from ...net import client as client_mod
from ...replication.propagate import EXEC, MULTI, TO_AOF, select_cmd
from .common import (AOF_OFF, AOF_ON, AOF_WAIT_REWRITE, LOAD_EMPTY, LOAD_OK, WRITE_ERROR_LOG_RATE, fdatasync,
                     fsync_dir, strerror, unlink_quiet)
from .fsync import Bio
from .backup import Backup
from .loader import Loader
from .manifest import TEMP_PREFIX, Manifest, manifest_name, temp_incr_name
from .rewrite import Rewrite

# -- the AOF ----------------------------------------------------------------------------------

class Aof(Rewrite, Loader):
    bit = TO_AOF

    def __init__(self, server):
        self.server = server
        cfg = server.config
        self.state = AOF_OFF
        self.manifest = Manifest()
        self.fd = None
        self.selected_db = -1
        self.buf = []
        self.flush_scheduled = False
        self.bio = Bio()
        self.bio.on_fsynced = self._bio_fsynced
        # WAITAOF: the replication offset the file has fsynced (-1 while the
        # AOF is off; 0 until the first rewrite of an AOF turned on is done),
        # and the offset the last fsync covered, applied to it while on
        self.fsynced_reploff = -1
        self.fsynced_pending = 0
        # sizes / fsync bookkeeping
        self.current_size = 0
        self.base_size = 0                # aof_rewrite_base_size
        self.last_incr_size = 0
        self.last_incr_fsync_offset = 0
        self.last_fsync = int(time.time())
        self.flush_postponed_start = 0
        self.delayed_fsync = 0
        self.last_write_ok = True
        self.last_write_errno = 0
        self.last_write_error_log = 0
        self.cur_timestamp = 0
        # rewrite bookkeeping
        self.child_pid = None
        self.child = None              # child.Child while a rewrite runs
        self.rewrite_scheduled = False
        self.rewrite_time_start = -1
        self.rewrite_time_last = -1
        self.lastbgrewrite_ok = True
        self.rewrites = 0
        self.consecutive_failures = 0
        self.last_cow = 0
        self.limit_next_delay = 0
        self.limit_next_time = 0
        self.last_error_retry = 0
        # cached configuration
        self.fsync_mode = cfg["appendfsync"]
        self.ts_enabled = cfg["aof-timestamp-enabled"]
        cfg.on_change("appendfsync", self._set_fsync_mode)
        cfg.on_change("aof-timestamp-enabled", self._set_ts)
        cfg.on_change("appendonly", self._on_appendonly)
        cfg.on_change("aof-disable-auto-gc", self._on_auto_gc)
        self.backup = Backup(self)     # BACKUP (8.10): online backups of BASE + INCR
        server.startup_hooks.append(self.startup)
        server.cron_hooks.append(self.cron)
        server.shutdown_hooks.append(self.on_shutdown)
        server.shutdown_checks.append(self.shutdown_check)

    # -- configuration ----------------------------------------------------------------------
    @property
    def filename(self):
        return self.server.config["appendfilename"]

    @property
    def dirname(self):
        return self.server.config["appenddirname"]

    def path(self, name):
        return os.path.join(self.dirname, name)

    def _set_fsync_mode(self, v):
        self.fsync_mode = v

    def _set_ts(self, v):
        self.ts_enabled = bool(v)

    def _on_appendonly(self, v):
        if v and self.state == AOF_OFF:
            if not self.start():
                raise ConfigError("Unable to turn on AOF. Check server logs.")
        elif not v and self.state != AOF_OFF and not self.backup.temp_aof:
            self.stop()         # (an appendonly-no backup's AOF runs until its SEAL)

    def _on_auto_gc(self, v):
        if not v:
            self.del_history_files()

    # -- children ----------------------------------------------------------------------------
    def child_active(self) -> bool:
        return self.server.child_type is not None

    # -- propagation target ------------------------------------------------------------------
    def feed(self, ops, wrap):
        """Append what one command (transaction, script) propagated."""
        rf = self.server.repl_feed
        if rf.backlog is None:
            rf.count_unfed(ops, wrap)
        if not (self.state == AOF_ON or (self.state == AOF_WAIT_REWRITE and self.child_pid is not None)):
            return
        buf = self.buf
        if not buf and not self.flush_scheduled:
            self.flush_scheduled = True
            self.server.loop.call_soon(self._flush_soon)
        if self.ts_enabled:
            now = int(time.time())
            if self.cur_timestamp < now:
                self.cur_timestamp = now
                buf.append(b"#TS:%d\r\n" % now)
        sel = self.selected_db
        if wrap:
            # Redis 7.2+: the transaction's SELECTs go inside it
            buf.append(MULTI)
        for dbid, data, mask in ops:
            if mask & TO_AOF:
                if dbid != sel:
                    buf.append(select_cmd(dbid))
                    sel = dbid
                buf.append(data)
        if wrap:
            buf.append(EXEC)
        self.selected_db = sel

    def before_reply(self):
        """Runs before a client's replies are written (client.set_before_reply)."""
        if self.buf:
            self.flush(False)

    def _flush_soon(self):
        self.flush_scheduled = False
        if self.buf:
            self.flush(False)

    # -- writing (flushAppendOnlyFile) -------------------------------------------------------------
    def flush(self, force):
        if self.fd is None:
            return
        t0 = time.monotonic()
        try:
            self._flush(force)
        finally:
            stats.el_aof += time.monotonic() - t0       # INFO debug's eventloop_duration_aof_sum

    def _flush(self, force):
        fd = self.fd
        if fd is None:
            return
        mode = self.fsync_mode
        now = int(time.time())
        sync_in_progress = False
        buf = self.buf
        if not buf:
            # everysec: data written in an earlier second is still not
            # fsynced; always: the policy changed from everysec.
            if mode == "everysec" and self.last_incr_fsync_offset != self.last_incr_size \
                    and now > self.last_fsync and not self.bio.pending_fsync:
                pass
            elif mode == "always" and self.last_incr_fsync_offset != self.last_incr_size:
                pass
            else:
                # everything written is fsynced: what propagated since (to
                # replicas only) needs nothing more from the file
                if mode != "no" and self.last_incr_fsync_offset == self.last_incr_size \
                        and not self.bio.pending_fsync:
                    self.fsynced_pending = self.server.repl_feed.offset
                self._apply_fsynced()
                return
        else:
            if mode == "everysec":
                sync_in_progress = self.bio.pending_fsync != 0
                if sync_in_progress and not force:
                    # the background fsync would block our write(2): wait
                    # for it, up to two seconds
                    if self.flush_postponed_start == 0:
                        self.flush_postponed_start = now
                        return
                    if now - self.flush_postponed_start < 2:
                        return
                    self.delayed_fsync += 1
                    log.notice("Asynchronous AOF fsync is taking too long (disk is busy?). Writing the AOF "
                               "buffer without waiting for fsync to complete, this may slow down Redis.")
            data = b"".join(buf) if len(buf) != 1 else buf[0]
            t0 = perf_counter()
            written = 0
            err = None
            try:
                mv = memoryview(data)
                while written < len(data):
                    try:
                        written += os.write(fd, mv[written:])
                    except InterruptedError:
                        continue
            except OSError as e:
                err = e
            dt = perf_counter() - t0
            lt = client_mod._LATENCY_MONITOR
            if lt is not None and dt >= lt:
                ms = int(dt * 1000)
                if sync_in_progress:
                    self.server.latency_add("aof-write-pending-fsync", ms)
                elif self.child_active():
                    self.server.latency_add("aof-write-active-child", ms)
                else:
                    self.server.latency_add("aof-write-alone", ms)
                self.server.latency_add("aof-write", ms)
            self.flush_postponed_start = 0
            if written != len(data):
                self._write_failed(err, written, len(data), data, now)
                return
            if not self.last_write_ok:
                log.warning("AOF write error looks solved, Redis can write again.")
                self.last_write_ok = True
                self._update_denied()
            self.current_size += written
            self.last_incr_size += written
            self.buf = []
        # try_fsync
        if self.server.config["no-appendfsync-on-rewrite"] and self.child_active():
            return
        reploff = self.server.repl_feed.offset
        if mode == "always":
            t0 = perf_counter()
            try:
                fdatasync(fd)
            except OSError as e:
                log.warning("Can't persist AOF for fsync error when the AOF fsync policy is 'always': %s. "
                            "Exiting..." % strerror(e))
                log.flush_and_exit(1)
            dt = perf_counter() - t0
            lt = client_mod._LATENCY_MONITOR
            if lt is not None and dt >= lt:
                self.server.latency_add("aof-fsync-always", int(dt * 1000))
            self.last_incr_fsync_offset = self.last_incr_size
            self.last_fsync = now
            self.fsynced_pending = reploff
            self._apply_fsynced()
        elif mode == "everysec" and now > self.last_fsync:
            if not sync_in_progress and not self.bio.pending_fsync:
                self.bio.fsync(fd, reploff)
                self.last_incr_fsync_offset = self.last_incr_size
            self.last_fsync = now

    # -- WAITAOF's local offset --------------------------------------------------------------------
    def _bio_fsynced(self):
        """A background fsync completed (called from the bio thread)."""
        loop = self.server.loop
        if loop is None:
            return      # not serving yet: the next flush applies the offset
        try:
            loop.call_soon_threadsafe(self._bio_applied)
        except RuntimeError:
            pass        # the loop is closed: shutting down

    def _bio_applied(self):
        off = self.bio.fsynced_reploff
        if off > self.fsynced_pending:
            self.fsynced_pending = off
        self._apply_fsynced()

    def _apply_fsynced(self):
        """fsynced_reploff follows what the fsyncs covered while the AOF is
        on (not during the first rewrite of an AOF just turned on: its data
        is not all in the files yet); blocked WAITAOF clients are checked."""
        if self.state == AOF_ON and self.fsynced_reploff != -1 \
                and self.fsynced_pending != self.fsynced_reploff:
            self.fsynced_reploff = self.fsynced_pending
            feed = self.server.repl_feed
            if feed.waiting:
                feed.check_waiting()

    def _write_failed(self, err, written, total, data, now):
        can_log = now - self.last_write_error_log > WRITE_ERROR_LOG_RATE
        if can_log:
            self.last_write_error_log = now
        if written == 0 and err is not None:
            if can_log:
                log.warning("Error writing to the AOF file: %s" % strerror(err))
            self.last_write_errno = err.errno or errno_mod.EIO
        else:
            if can_log:
                log.warning("Short write while writing to the AOF file: (nwritten=%d, expected=%d)" % (
                    written, total))
            try:
                os.ftruncate(self.fd, self.last_incr_size)
                written = 0        # the partial data is gone
            except OSError as e:
                if can_log:
                    log.warning("Could not remove short write from the append-only file.  Redis may refuse "
                                "to load the AOF the next time it starts.  ftruncate: %s" % strerror(e))
            self.last_write_errno = errno_mod.ENOSPC
        if self.fsync_mode == "always":
            log.warning("Can't recover from AOF write error when the AOF fsync policy is 'always'. "
                        "Exiting...")
            log.flush_and_exit(1)
        self.last_write_ok = False
        if written > 0:
            self.current_size += written
            self.last_incr_size += written
            self.buf = [data[written:]]
        else:
            self.buf = [data]
        self._update_denied()

    def write_error(self):
        """The MISCONF error refusing writes while the AOF cannot be
        written (writeCommandsDeniedByDiskError), or None."""
        if self.state == AOF_OFF:
            return None
        if not self.last_write_ok or self.bio.fsync_errno:
            code = self.last_write_errno if not self.last_write_ok else self.bio.fsync_errno
            return RedisError("MISCONF Errors writing to the AOF file: %s" % os.strerror(code))
        return None

    def _update_denied(self):
        srv = self.server
        srv.write_denied = self.write_error()
        srv.update_server_slow()     # writes refused: the checking path for everyone

    # -- opening files -------------------------------------------------------------------------------
    def persist_manifest(self, am) -> bool:
        """persistAofManifest: temp file, fsync, rename, fsync of the directory."""
        if not am.dirty:
            return True
        name = manifest_name(self.filename)
        tmp_name = TEMP_PREFIX + name
        path = self.path(name)
        tmp = self.path(tmp_name)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC | os.O_CREAT, 0o644)
        except OSError as e:
            log.warning("Can't open the AOF manifest file %s: %s" % (tmp_name, strerror(e)))
            return False
        try:
            data = am.text()
            try:
                mv = memoryview(data)
                done = 0
                while done < len(data):
                    done += os.write(fd, mv[done:])
            except OSError as e:
                log.warning("Error trying to write the temporary AOF manifest file %s: %s" % (
                    tmp_name, strerror(e)))
                return False
            try:
                os.fsync(fd)
            except OSError as e:
                log.warning("Fail to fsync the temp AOF file %s: %s." % (tmp_name, strerror(e)))
                return False
        finally:
            os.close(fd)
        try:
            os.rename(tmp, path)
        except OSError as e:
            log.warning("Error trying to rename the temporary AOF manifest file %s into %s: %s" % (
                tmp_name, name, strerror(e)))
            return False
        try:
            fsync_dir(path)
        except OSError as e:
            log.warning("Fail to fsync AOF directory %s: %s." % (path, strerror(e)))
            return False
        am.dirty = False
        return True

    def make_dir(self) -> bool:
        try:
            os.makedirs(self.dirname, exist_ok=True)
            if not os.path.isdir(self.dirname):
                raise NotADirectoryError(errno_mod.ENOTDIR, os.strerror(errno_mod.ENOTDIR))
        except OSError as e:
            log.warning("Can't open or create append-only dir %s: %s" % (self.dirname, strerror(e)))
            return False
        return True

    def open_new_incr(self) -> bool:
        """openNewIncrAofForAppend: called when a rewrite starts."""
        if self.state == AOF_OFF:
            return True
        am = None
        if self.state == AOF_WAIT_REWRITE:
            name = temp_incr_name(self.filename)
        else:
            am = self.manifest.copy()
            name = am.new_incr(self.filename)
        try:
            fd = os.open(self.path(name), os.O_WRONLY | os.O_TRUNC | os.O_CREAT, 0o644)
        except OSError as e:
            log.warning("Can't open the append-only file %s: %s" % (name, strerror(e)))
            return False
        if am is not None and not self.persist_manifest(am):
            os.close(fd)
            return False
        log.notice("Creating AOF incr file %s on background rewrite" % name)
        if self.fd is not None:
            # the old file is complete: fsync and close it off the loop
            self.bio.close(self.fd)
            self.last_fsync = int(time.time())
        self.fd = fd
        self.last_incr_size = 0
        self.last_incr_fsync_offset = 0
        if am is not None:
            self.manifest = am
        return True

    def del_history_files(self) -> bool:
        am = self.manifest
        if am is None or self.server.config["aof-disable-auto-gc"] or not am.history:
            return True
        for info in am.history:
            log.notice("Removing the history file %s in the background" % info.name)
            self.bio.unlink(self.path(info.name))
        am.history = []
        am.dirty = True
        return self.persist_manifest(am)

    # -- start / stop at run time ------------------------------------------------------------
    def _activate(self):
        self.server.propagator.attach(self)
        client_mod.set_before_reply(self.before_reply)

    def _deactivate(self):
        self.server.propagator.detach(self)
        client_mod.set_before_reply(None)

    def start(self) -> bool:
        """CONFIG SET appendonly yes (startAppendOnly)."""
        srv = self.server
        self.state = AOF_WAIT_REWRITE
        # writes propagate from now on: those after the fork go to the
        # temp incr file
        self._activate()
        child = srv.child_type
        if child is not None and child != "aof":
            self.rewrite_scheduled = True
            log.warning("AOF was enabled but there is already another background operation. An AOF "
                        "background was scheduled to start when possible.")
        elif any(c.in_exec for c in srv.clients.values()):
            # forking now would put the transaction's first effects both in
            # the new base and in the incr file
            self.rewrite_scheduled = True
            log.warning("AOF was enabled during a transaction. An AOF background was scheduled to start "
                        "when possible.")
        else:
            if child == "aof":
                log.warning("AOF was enabled but there is already an AOF rewriting in background. Stopping "
                            "background AOF and starting a rewrite now.")
                self.kill_child()
            if not self.rewrite_background():
                self.state = AOF_OFF
                self._deactivate()
                log.warning("Redis needs to enable the AOF but can't trigger a background AOF rewrite "
                            "operation. Check the above logs for more info about the error.")
                return False
        self.last_fsync = int(time.time())
        if self.bio.fsync_errno:
            log.warning("AOF reopen, just ignore the AOF fsync error in bio job")
            self.bio.fsync_errno = 0
        if not self.last_write_ok:
            log.warning("AOF reopen, just ignore the last error.")
            self.last_write_ok = True
        self._update_denied()
        return True

    def stop(self):
        """CONFIG SET appendonly no (stopAppendOnly)."""
        self.backup.aof_stopped()
        self.flush(True)
        if self.fd is not None:
            try:
                fdatasync(self.fd)
                self.last_fsync = int(time.time())
            except OSError as e:
                log.warning("Fail to fsync the AOF file: %s" % strerror(e))
            os.close(self.fd)
        self.fd = None
        was_waiting = self.state == AOF_WAIT_REWRITE
        self.selected_db = -1
        self.state = AOF_OFF
        self.rewrite_scheduled = False
        self.last_incr_size = 0
        self.last_incr_fsync_offset = 0
        self.fsynced_reploff = -1
        self.fsynced_pending = 0
        self.kill_child()
        if was_waiting:
            unlink_quiet(self.path(temp_incr_name(self.filename)))
        self.buf = []
        self._deactivate()
        self._update_denied()
        feed = self.server.repl_feed
        if feed.waiting:
            feed.check_waiting()      # WAITAOF numlocal: an error now

    # -- a replica's full synchronisation ---------------------------------------------------
    def stop_for_sync(self):
        """The dataset is about to be replaced by the master's: the files
        written so far describe the old one (readSyncBulkPayload)."""
        if self.state != AOF_OFF:
            self.stop()

    def restart_after_sync(self):
        """restartAOFAfterSYNC: a rewrite of the new dataset, then the
        master's stream appended after it."""
        if not self.server.config["appendonly"]:
            return
        for _ in range(10):
            if self.state != AOF_OFF or self.start():
                return
            log.warning("Failed enabling the AOF after successful master synchronization! "
                        "Trying it again in one second.")
            time.sleep(1)
        log.warning("FATAL: this replica instance finished the synchronization with its master, but the "
                    "AOF can't be turned on. Exiting now.")
        log.flush_and_exit(1)

    # -- cron --------------------------------------------------------------------------------------------
    def cron(self):
        srv = self.server
        backup = self.backup
        held = backup.holds_incr()       # no rewrite while a backup's INCR is pinned
        if not self.child_active() and self.rewrite_scheduled and not held and not self.rewrite_limited():
            self.rewrite_background()
        if backup.state != "idle":
            backup.cron()
        if self.child_pid is not None:
            self.check_child()
        elif not self.child_active() and self.state == AOF_ON and not held:
            perc = srv.config["auto-aof-rewrite-percentage"]
            if perc and self.current_size > srv.config["auto-aof-rewrite-min-size"]:
                base = self.base_size or 1
                growth = self.current_size * 100 // base - 100
                if growth >= perc and not self.rewrite_limited():
                    log.notice("Starting automatic rewriting of AOF on %d%% growth" % growth)
                    self.rewrite_background()
        if self.state != AOF_OFF:
            now = int(time.time())
            if not self.last_write_ok:
                if now != self.last_error_retry:
                    self.last_error_retry = now
                    self.flush(False)
            else:
                # a postponed write, or an everysec fsync still owed
                self.flush(False)
            # a background fsync may have failed (or succeeded again)
            if bool(self.bio.fsync_errno or not self.last_write_ok) != (srv.write_denied is not None):
                self._update_denied()

    # -- shutdown ------------------------------------------------------------------------------------------
    def shutdown_check(self, force):
        """Refuse to exit while the first AOF is being written (its data
        would be lost): prepareForShutdown's AOF_WAIT_REWRITE case."""
        # (not a backup's AOF of an appendonly-no server: no data depends on it)
        if self.child_pid is not None and self.state == AOF_WAIT_REWRITE and not self.backup.temp_aof:
            if force:
                log.warning("Writing initial AOF. Exit anyway.")
                return None
            log.warning("Writing initial AOF, can't exit.")
            return "error"
        return None

    def on_shutdown(self):
        if self.child_pid is not None:
            log.warning("There is a child rewriting the AOF. Killing it!")
            self.kill_child()
        if self.state != AOF_OFF:
            log.notice("Calling fsync() on the AOF file.")
            self.flush(True)
            if self.fd is not None:
                try:
                    fdatasync(self.fd)
                except OSError as e:
                    log.warning("Fail to fsync the AOF file: %s." % strerror(e))
        self.bio.drain()

    # -- INFO --------------------------------------------------------------------------------------------------
    def info_lines(self):
        now = time.time()
        inprog = self.child_pid is not None
        ok = self.last_write_ok and not self.bio.fsync_errno
        return [
            "aof_enabled:%d" % int(self.state != AOF_OFF),
            "aof_rewrite_in_progress:%d" % int(inprog),
            "aof_rewrite_scheduled:%d" % int(self.rewrite_scheduled),
            "aof_last_rewrite_time_sec:%d" % self.rewrite_time_last,
            "aof_current_rewrite_time_sec:%d" % (int(now - self.rewrite_time_start) if inprog else -1),
            "aof_last_bgrewrite_status:%s" % ("ok" if self.lastbgrewrite_ok else "err"),
            "aof_rewrites:%d" % self.rewrites,
            "aof_rewrites_consecutive_failures:%d" % self.consecutive_failures,
            "aof_last_write_status:%s" % ("ok" if ok else "err"),
            "aof_last_cow_size:%d" % self.last_cow,
            "backup_in_progress:%d" % self.backup.in_progress(),
        ]

    def info_extra_lines(self):
        if not self.server.config["appendonly"]:
            return []
        return [
            "aof_current_size:%d" % self.current_size,
            "aof_base_size:%d" % self.base_size,
            "aof_pending_rewrite:%d" % int(self.rewrite_scheduled),
            "aof_buffer_length:%d" % sum(map(len, self.buf)),
            "aof_pending_bio_fsync:%d" % self.bio.pending_fsync,
            "aof_delayed_fsync:%d" % self.delayed_fsync,
        ]


def debug_loadaof(server):
    """DEBUG LOADAOF: write what is buffered, empty the dataset and load
    the AOF files again (the manifest is read from disk again)."""
    a = server.aof
    if a.state != AOF_OFF:
        a.flush(True)
    for db in server.dbs:
        db.flush()
    trk = server.tracking
    if trk.nclients or trk.table:
        trk.on_flush()          # tracking clients see the dataset emptied
    server.functions.clear()
    a.load_manifest_from_disk()
    a.del_history_files()
    ret = a.load_files()
    if ret not in (LOAD_OK, LOAD_EMPTY):
        log.flush_and_exit(1)
    server.dirty = 0
    log.warning("Append Only File loaded by DEBUG LOADAOF")
    return None
