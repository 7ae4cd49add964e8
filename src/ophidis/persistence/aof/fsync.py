"""The AOF's background thread (bio.c's BIO_AOF_FSYNC and BIO_CLOSE_FILE jobs):
fsyncs for appendfsync everysec, closing replaced files, deleting history files."""

from __future__ import annotations

import errno as errno_mod
import os
import threading
import time
from collections import deque

from .common import fdatasync


class Bio:
    """One thread doing the AOF's slow system calls in order: fsync of the
    current file (everysec), fsync + close of a file being replaced, and
    unlink of history files.  It never logs and never takes a lock the
    forked rewrite child could need."""

    def __init__(self):
        self.cv = threading.Condition()
        self.jobs = deque()
        self.pending_fsync = 0      # INFO aof_pending_bio_fsync
        self.busy = 0               # jobs queued or running
        self.fsync_errno = 0        # errno of a failed background fsync (0: ok)
        # the replication offset the last completed fsync covers (WAITAOF),
        # and what to call then (from this thread)
        self.fsynced_reploff = 0
        self.on_fsynced = None
        self.thread = None

    def _submit(self, kind, arg):
        with self.cv:
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="aof-bio", daemon=True)
                self.thread.start()
            self.jobs.append((kind, arg))
            self.busy += 1
            if kind == "fsync":
                self.pending_fsync += 1
            self.cv.notify()

    def fsync(self, fd, reploff=0):
        """fsync fd; reploff: the replication offset written to it so far."""
        self._submit("fsync", (fd, reploff))

    def close(self, fd):
        self._submit("close", fd)

    def unlink(self, path):
        self._submit("unlink", path)

    def _run(self):
        while True:
            with self.cv:
                while not self.jobs:
                    self.cv.wait()
                kind, arg = self.jobs.popleft()
            try:
                if kind == "fsync":
                    fd, reploff = arg
                    try:
                        fdatasync(fd)
                        self.fsync_errno = 0
                        self.fsynced_reploff = reploff
                        cb = self.on_fsynced
                        if cb is not None:
                            try:
                                cb()
                            except Exception:  # noqa: BLE001 - the thread must live on
                                pass
                    except OSError as e:
                        if e.errno not in (errno_mod.EBADF, errno_mod.EINVAL):
                            self.fsync_errno = e.errno or errno_mod.EIO
                elif kind == "close":
                    try:
                        fdatasync(arg)
                    except OSError:
                        pass
                    os.close(arg)
                else:
                    os.unlink(arg)
            except OSError:
                pass
            finally:
                with self.cv:
                    self.busy -= 1
                    if kind == "fsync":
                        self.pending_fsync -= 1
                    self.cv.notify_all()

    def drain(self, timeout=5.0):
        deadline = time.monotonic() + timeout
        with self.cv:
            while self.busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cv.wait(left)
        return True
