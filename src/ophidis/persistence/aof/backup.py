"""Online backups (BACKUP, Redis 8.10) over the multi-part AOF.

A backup is a BASE produced by an AOF rewrite plus the INCR file the
writes after it went to, hard-linked into ``backupdirname`` (a directory
under ``dir``) with a manifest of its own naming just those two files: a
multi-part AOF directory a server can load as it is.  The states:

    idle -> pending (a rewrite cannot start yet) -> snapshotting (the
    rewrite runs) -> incrementing (BASE pinned, writes go to the INCR)
    -> sealed (INCR and manifest pinned, the live AOF moved to a new
    INCR) -> idle (CLEANUP, or backup-sealed-ttl seconds after sealing)

ABORT (pending .. incrementing) and errors lead to ``failed``, which
CLEANUP or a new START leave.  With ``appendonly no`` the backup runs the
AOF machinery for its window (the configuration stays ``no``) and stops it
at SEAL, removing what it wrote under ``appenddirname`` unless that
directory existed before; if ``appendonly yes`` is set meanwhile the AOF
simply stays on.  No rewrite starts while a BASE is pinned (BGREWRITEAOF
is scheduled for after SEAL), so the pinned INCR is the one being written.
"""

from __future__ import annotations

import os
import time

from ... import log
from .common import AOF_OFF, AOF_ON, fdatasync, fsync_dir, unlink_quiet
from .manifest import TYPE_BASE, TYPE_INCR, AofInfo, Manifest, manifest_name

IDLE, PENDING, SNAPSHOTTING, INCREMENTING, SEALED, FAILED = (
    "idle", "pending", "snapshotting", "incrementing", "sealed", "failed")
ACTIVE = (PENDING, SNAPSHOTTING, INCREMENTING)


class BackupError(Exception):
    pass


class Backup:
    """The backup state machine of one server (``server.aof.backup``)."""

    def __init__(self, aof):
        self.aof = aof
        self.state = IDLE
        self.error = ""
        self.start_time = 0
        self.end_time = 0
        self.base = None            # the pinned BASE's name
        self.incr = None            # the INCR its writes go to
        self.pinned = []            # absolute paths, in pinning order
        self.temp_aof = False       # this backup turned the AOF machinery on
        self.aofdir_existed = True  # ... and appenddirname was there before
        self.stopping = False       # the backup itself stops the AOF

    # -- paths ------------------------------------------------------------------------------
    def dirpath(self) -> str:
        return os.path.abspath(self.aof.server.config["backupdirname"])

    def _clear_dir(self):
        """Remove what the backup put in its directory (the directory stays)."""
        d = self.dirpath()
        try:
            names = os.listdir(d)
        except OSError:
            return
        for n in names:
            unlink_quiet(os.path.join(d, n))

    # -- transitions -----------------------------------------------------------------------
    def holds_incr(self) -> bool:
        """A BASE is pinned and its INCR still open: no rewrite may start."""
        return self.state == INCREMENTING

    def start(self, in_exec=False):
        if self.state in ACTIVE:
            raise BackupError("ERR A backup is already in progress")
        if self.state == SEALED:
            raise BackupError("ERR A sealed backup exists, use BACKUP CLEANUP first")
        if self.state == FAILED:
            self._clear_dir()
        d = self.dirpath()
        try:
            if os.path.isdir(d):
                if os.listdir(d):
                    raise BackupError("ERR Backup directory '%s' is not empty" % d)
            else:
                os.makedirs(d)
        except OSError as e:
            raise BackupError("ERR Can't create the backup directory '%s': %s" % (d, e.strerror))
        aof = self.aof
        srv = aof.server
        self.error = ""
        self.start_time = int(time.time())
        self.end_time = 0
        self.base = self.incr = None
        self.pinned = []
        self.temp_aof = aof.state == AOF_OFF
        if self.temp_aof:
            adir = aof.dirname
            self.aofdir_existed = os.path.isdir(adir) and bool(os.listdir(adir))
            self.state = PENDING
            if not aof.start():
                self._fail("can't start the AOF rewrite")
                return
        elif srv.child_type == "aof":
            self.state = SNAPSHOTTING        # the running rewrite makes our BASE
            return
        else:
            self.state = PENDING
            if srv.child_type is not None or in_exec or aof.rewrite_scheduled:
                aof.rewrite_scheduled = True  # the cron starts it when it can
            elif not aof.rewrite_background():
                self._fail("can't start the AOF rewrite")
                return
        if aof.child_pid is not None:
            self.state = SNAPSHOTTING

    def _fail(self, why):
        log.warning("Backup failed: %s" % why)
        self._clear_dir()
        self.pinned = []
        self._stop_temp_aof()
        self.state = FAILED
        self.error = why

    def _stop_temp_aof(self):
        """The AOF this backup turned on goes off again (unless appendonly
        was set meanwhile), and its files unless appenddirname existed."""
        aof = self.aof
        if not self.temp_aof:
            return
        self.temp_aof = False
        if aof.server.config["appendonly"] or aof.state == AOF_OFF:
            return
        self.stopping = True
        try:
            aof.stop()
        finally:
            self.stopping = False
        aof.manifest = Manifest()
        if not self.aofdir_existed:
            adir = aof.dirname
            try:
                for n in os.listdir(adir):
                    unlink_quiet(os.path.join(adir, n))
                os.rmdir(adir)
            except OSError:
                pass

    def rewrite_done(self, ok):
        """An AOF rewrite ended (installed when ok): it is our BASE."""
        if self.state not in (PENDING, SNAPSHOTTING):
            return
        if not ok:
            if self.aof.state != AOF_ON and not self.temp_aof:
                return
            self._fail("AOF rewrite failed")
            return
        aof = self.aof
        am = aof.manifest
        if am.base is None or not am.incrs:
            self._fail("no AOF base after the rewrite")
            return
        base = am.base.name
        try:
            os.link(aof.path(base), os.path.join(self.dirpath(), base))
        except OSError as e:
            self._fail("can't link %s: %s" % (base, e.strerror))
            return
        self.base = base
        self.incr = am.incrs[-1].name
        self.pinned = [os.path.join(self.dirpath(), base)]
        self.state = INCREMENTING
        log.notice("Backup: BASE %s pinned, writes go to %s" % (base, self.incr))

    def seal(self):
        if self.state != INCREMENTING:
            raise BackupError("ERR No backup ready to seal")
        aof = self.aof
        d = self.dirpath()
        aof.flush(True)
        try:
            if aof.fd is not None:
                fdatasync(aof.fd)
            os.link(aof.path(self.incr), os.path.join(d, self.incr))
            m = Manifest()
            m.base = AofInfo(self.base, _seq(self.base), TYPE_BASE)
            m.incrs = [AofInfo(self.incr, _seq(self.incr), TYPE_INCR)]
            mpath = os.path.join(d, manifest_name(aof.filename))
            with open(mpath, "wb") as f:
                f.write(m.text())
                f.flush()
                os.fsync(f.fileno())
            fsync_dir(mpath)
        except OSError as e:
            self._fail("can't seal: %s" % e.strerror)
            raise BackupError("ERR Backup seal failed: %s" % e.strerror)
        self.pinned = [os.path.join(d, self.base), os.path.join(d, self.incr), mpath]
        if self.temp_aof and not aof.server.config["appendonly"]:
            self._stop_temp_aof()
        else:
            self.temp_aof = False
            aof.open_new_incr()         # the pinned INCR grows no more
        self.state = SEALED
        self.end_time = int(time.time())
        log.notice("Backup sealed in %s" % d)

    def abort(self):
        if self.state not in ACTIVE:
            raise BackupError("ERR No backup in progress")
        self._fail("aborted by user")

    def cleanup(self):
        if self.state in ACTIVE:
            raise BackupError("ERR A backup is in progress, use BACKUP ABORT first")
        self._clear_dir()
        self.state = IDLE
        self.error = ""
        self.start_time = self.end_time = 0
        self.base = self.incr = None
        self.pinned = []

    def aof_stopped(self):
        """The AOF carrying a backup's writes stops (appendonly no; a
        replica's full sync, whose new dataset the backup cannot follow)."""
        if self.stopping or self.state not in ACTIVE:
            return
        self.temp_aof = False       # being stopped by the caller already
        self._fail("appendonly is stopped")

    def cron(self):
        aof = self.aof
        if self.state == PENDING and aof.child_pid is not None:
            self.state = SNAPSHOTTING
        elif self.state == SEALED:
            ttl = aof.server.config["backup-sealed-ttl"]
            if ttl and time.time() - self.end_time >= ttl:
                log.notice("Backup: the sealed backup is %d seconds old, cleaning it up" % ttl)
                self.cleanup()

    def in_progress(self) -> int:
        return 1 if self.state in ACTIVE else 0


def _seq(name) -> int:
    """The sequence number in an AOF file name (appendonly.aof.<seq>.base.rdb)."""
    parts = name.split(".")
    for p in reversed(parts):
        if p.isdigit():
            return int(p)
    return 0
