"""BGREWRITEAOF: the forked child writes the new base (an RDB preamble or RESP
commands), the parent opens the next incr file, installs the result and
writes the manifest."""

from __future__ import annotations

import os
import signal
import time
from time import perf_counter

from ... import log, proctitle
from ...keyspace.db import EmbStr
from ...net import client as client_mod
from ...protocol.resp import bulk as _bulk
from ...protocol.resp import encode_argv
from ...types.containers import HashValue, ListValue, SetValue
from ...types.zset import ZSetValue
from .. import child
from ...dtoa import fpconv
from ..rdb import function_codes, write_snapshot
from ..rdbpayload import dump_payload
from .common import (AOF_OFF, AOF_ON, AOF_WAIT_REWRITE, REWRITE_LIMIT_MAX_MINUTES, REWRITE_LIMIT_THRESHOLD,
                     fdatasync, file_size, strerror, unlink_quiet)
from .manifest import temp_incr_name

ITEMS_PER_CMD = 64                  # elements per RPUSH/SADD/ZADD/HMSET of a rewrite


AUTOSYNC_BYTES = 4 * 1024 * 1024    # aof-rewrite-incremental-fsync step


def _score(s: float) -> bytes:
    return fpconv(s)


def _variadic(w, name: bytes, key: bytes, items, count: int, width: int):
    """RPUSH/SADD/ZADD/HMSET key ... with at most ITEMS_PER_CMD elements
    per command.  ``items`` yields already encoded elements (``width``
    bulk strings each)."""
    head = _bulk(name) + _bulk(key)
    left = count
    n = 0
    for enc in items:
        if n == 0:
            batch = ITEMS_PER_CMD if left > ITEMS_PER_CMD else left
            w(b"*%d\r\n" % (2 + batch * width) + head)
        w(enc)
        n += 1
        left -= 1
        if n == ITEMS_PER_CMD:
            n = 0


def rewrite_resp(w, server, key_delay=0, progress=None):
    """Write commands rebuilding the whole dataset of ``server`` with
    ``w(bytes)`` (rewriteAppendOnlyFileRio)."""
    if server.config["aof-timestamp-enabled"]:
        w(b"#TS:%d\r\n" % int(time.time()))
    for code in function_codes(server):
        w(b"*3\r\n$8\r\nFUNCTION\r\n$4\r\nLOAD\r\n" + _bulk(code))
    done = 0
    cfg = server.config
    for db in server.dbs:
        d = db.d
        if not d:
            continue
        w(b"*2\r\n$6\r\nSELECT\r\n" + _bulk(b"%d" % db.id))
        exp = db.expires
        for key, val in d.items():
            cls = val.__class__
            if cls is bytes or cls is EmbStr or cls is bytearray:
                w(b"*3\r\n$3\r\nSET\r\n" + _bulk(key) + _bulk(bytes(val)))
            elif cls is ListValue:
                _variadic(w, b"RPUSH", key, map(_bulk, val), len(val), 1)
            elif cls is SetValue:
                _variadic(w, b"SADD", key, map(_bulk, val), len(val), 1)
            elif cls is HashValue:
                t = val.ttl
                if t:
                    # fields with TTLs (rewriteHashObject): each field alone, then its time
                    kb = _bulk(key)
                    for f, v in val.items():
                        w(b"*4\r\n$5\r\nHMSET\r\n" + kb + _bulk(f) + _bulk(v))
                        when = t.get(f)
                        if when is not None:
                            w(b"*6\r\n$10\r\nHPEXPIREAT\r\n" + kb + _bulk(b"%d" % when) + b"$6\r\nFIELDS\r\n$1\r\n1\r\n"
                              + _bulk(f))
                else:
                    _variadic(w, b"HMSET", key, (_bulk(f) + _bulk(v) for f, v in val.items()), len(val), 2)
            elif cls is ZSetValue or isinstance(val, ZSetValue):
                _variadic(w, b"ZADD", key, (_bulk(_score(s)) + _bulk(m) for s, m in val.sl), len(val), 2)
            else:
                # other types (streams) say how to rebuild themselves; a
                # value that cannot is restored from its DUMP payload
                rw = getattr(val, "rewrite_commands", None)
                if rw is not None:
                    for argv in rw(key):
                        w(encode_argv(argv))
                else:
                    payload = dump_payload(val, cfg)
                    w(b"*4\r\n$7\r\nRESTORE\r\n" + _bulk(key) + b"$1\r\n0\r\n" + _bulk(payload))
            if exp:
                when = exp.get(key)
                if when is not None:
                    w(b"*3\r\n$9\r\nPEXPIREAT\r\n" + _bulk(key) + _bulk(b"%d" % when))
            done += 1
            if key_delay:
                time.sleep(key_delay / 1e6)
            if progress is not None and not done & 1023:
                progress(done)


class _SyncingWriter:
    """A file wrapper that fsyncs every AUTOSYNC_BYTES written
    (aof-rewrite-incremental-fsync), so that the final fsync is short."""

    def __init__(self, f, autosync):
        self.f = f
        self.autosync = autosync
        self.since = 0

    def write(self, b):
        self.f.write(b)
        if self.autosync:
            self.since += len(b)
            if self.since >= AUTOSYNC_BYTES:
                self.since = 0
                self.f.flush()
                fdatasync(self.f.fileno())


def write_base(server, filename, progress=None) -> bool:
    """rewriteAppendOnlyFile: the dataset into ``filename`` through a temp
    file, fsynced and renamed.  Logs failures as Redis does."""
    cfg = server.config
    tmp = "temp-rewriteaof-%d.aof" % os.getpid()
    try:
        f = open(tmp, "wb", buffering=1 << 16)
    except OSError as e:
        log.warning("Opening the temp file for AOF rewrite in rewriteAppendOnlyFile(): %s" % strerror(e))
        return False
    delay = max(0, cfg["rdb-key-save-delay"])
    try:
        with f:
            w = _SyncingWriter(f, cfg["aof-rewrite-incremental-fsync"])
            if cfg["aof-use-rdb-preamble"]:
                old = server.rdb_aof_base
                server.rdb_aof_base = 1
                try:
                    write_snapshot(w, server, progress=progress, key_delay=delay)
                finally:
                    server.rdb_aof_base = old
            else:
                rewrite_resp(w.write, server, key_delay=delay, progress=progress)
            f.flush()
            os.fsync(f.fileno())
    except (OSError, TypeError, ValueError) as e:
        log.warning("Write error writing append only file on disk: %s" % strerror(e))
        unlink_quiet(tmp)
        return False
    try:
        os.rename(tmp, filename)
    except OSError as e:
        log.warning("Error moving temp append only file on the final destination: %s" % strerror(e))
        unlink_quiet(tmp)
        return False
    return True


class Rewrite(child.ChildJob):
    """Part of ``Aof`` (a mixin: the state is declared there)."""

    __slots__ = ()
    CHILD_TYPE = "aof"

    def rewrite_background(self) -> bool:
        """rewriteAppendOnlyFileBackground."""
        srv = self.server
        if self.child_active():
            return False
        if not self.make_dir():
            self.lastbgrewrite_ok = False
            return False
        # the new incr file starts with a SELECT
        self.selected_db = -1
        self.flush(True)
        if not self.open_new_incr():
            self.lastbgrewrite_ok = False
            return False
        self.rewrites += 1
        if self.state == AOF_WAIT_REWRITE:
            # the first rewrite of an AOF turned on: what propagated so far
            # is in its base once it is done (WAITAOF's local offset)
            self.fsynced_pending = srv.repl_feed.offset
            self.fsynced_reploff = 0
        if not hasattr(os, "fork"):
            log.warning("Can't rewrite append only file in background: fork: not supported")
            self.lastbgrewrite_ok = False
            return False
        try:
            ch = child.fork(srv, self._child_main, what="AOF rewrite child", title=proctitle.AOF_REWRITE)
        except OSError as e:
            log.warning("Can't rewrite append only file in background: fork: %s" % strerror(e))
            self.lastbgrewrite_ok = False
            return False
        pid = ch.pid
        self.child = ch
        self.child_pid = pid
        srv.child_type = "aof"
        log.notice("Background append only file rewriting started by pid %d" % pid)
        self.rewrite_scheduled = False
        self.rewrite_time_start = time.time()
        return True

    def _child_main(self, ctx) -> int:
        """rewriteAppendOnlyFileBackground's child: the new base goes to a
        temporary file that the parent renames (an orphan's file is never
        installed)."""
        tmp = "temp-rewriteaof-bg-%d.aof" % os.getpid()
        if not write_base(self.server, tmp, progress=ctx.progress):
            return 1
        log.notice("Successfully created the temporary AOF base file %s" % tmp)
        cow = child.private_dirty()
        peak, avg = ctx.cow_summary(cow)
        log.notice("Fork CoW for AOF rewrite: current %d MB, peak %d MB, average %d MB" % (
            cow >> 20, peak >> 20, avg >> 20))
        ctx.send_info(b"%d\n" % cow)
        return 0

    def _remove_temp_files(self, pid):
        unlink_quiet("temp-rewriteaof-bg-%d.aof" % pid)
        unlink_quiet("temp-rewriteaof-%d.aof" % pid)

    def kill_child(self):
        """killAppendOnlyChild."""
        pid = self.child_pid
        if pid is None:
            return
        log.notice("Killing running AOF rewrite child: %d" % pid)
        self.child.kill(signal.SIGUSR1)
        self._remove_temp_files(pid)
        self._child_gone()
        self.rewrite_time_start = -1

    def check_child(self):
        done = self.exited_child()
        if done is not None:
            self._rewrite_done(*done)

    def _rewrite_done(self, pid, status):
        """backgroundRewriteDoneHandler."""
        t_start = time.perf_counter()
        exited = os.WIFEXITED(status)
        code = os.WEXITSTATUS(status) if exited else 0
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        self._child_gone()
        installed = False
        if exited and code == 0:
            log.notice("Background AOF rewrite terminated with success")
            installed = self._install_rewrite(pid)
            log.verbose("Background AOF rewrite signal handler took %dus" % int(
                (time.perf_counter() - t_start) * 1e6))
        elif exited:
            self.lastbgrewrite_ok = False
            self.consecutive_failures += 1
            log.warning("Background AOF rewrite terminated with error")
        else:
            if sig != signal.SIGUSR1:
                self.lastbgrewrite_ok = False
                self.consecutive_failures += 1
            log.warning("Background AOF rewrite terminated by signal %d" % sig)
        # cleanup
        self._remove_temp_files(pid)
        if self.state == AOF_WAIT_REWRITE:
            self.buf = []
            name = temp_incr_name(self.filename)
            log.notice("Removing the temp incr aof file %s in the background" % name)
            self.bio.unlink(self.path(name))
        self.rewrite_time_last = int(time.time() - self.rewrite_time_start) if self.rewrite_time_start >= 0 else -1
        self.rewrite_time_start = -1
        if self.state == AOF_WAIT_REWRITE:
            self.rewrite_scheduled = True
        self.backup.rewrite_done(installed)

    def _fail_install(self):
        self.lastbgrewrite_ok = False
        self.consecutive_failures += 1

    def _install_rewrite(self, pid):
        tmp = "temp-rewriteaof-bg-%d.aof" % pid
        am = self.manifest.copy()
        base_name = am.new_base(self.filename, self.server.config["aof-use-rdb-preamble"])
        base_path = self.path(base_name)
        if not self._rename_temp("base", tmp, base_path, tmp, base_name):
            self._fail_install()
            return False
        incr_path = None
        if self.state == AOF_WAIT_REWRITE:
            temp_name = temp_incr_name(self.filename)
            temp_path = self.path(temp_name)
            incr_name = am.new_incr(self.filename)
            incr_path = self.path(incr_name)
            if not self._rename_temp("incr", temp_path, incr_path, temp_name, incr_name):
                self.bio.unlink(base_path)
                self._fail_install()
                return False
        am.incrs_to_history(keep_last=self.fd is not None)
        if not self.persist_manifest(am):
            self.bio.unlink(base_path)
            if incr_path is not None:
                self.bio.unlink(incr_path)
            self._fail_install()
            return False
        self.manifest = am
        if self.state != AOF_OFF:
            self.current_size = file_size(base_path) + self.last_incr_size
            self.base_size = self.current_size
        self.del_history_files()
        self.lastbgrewrite_ok = True
        self.consecutive_failures = 0
        log.notice("Background AOF rewrite finished successfully")
        if self.state == AOF_WAIT_REWRITE:
            self.state = AOF_ON
            # WAITAOF's local offset is valid from now on
            self.fsynced_reploff = self.fsynced_pending
            feed = self.server.repl_feed
            if feed.waiting:
                feed.check_waiting()
        return True

    def _rename_temp(self, kind, src, dst, src_name, dst_name) -> bool:
        """Rename the temporary AOF ``kind`` file ``src`` into ``dst`` (its
        time is the aof-rename latency event), with Redis's log lines (which
        name them ``src_name`` and ``dst_name`` on success); False when the
        rename fails."""
        t0 = perf_counter()
        try:
            os.rename(src, dst)
        except OSError as e:
            log.warning("Error trying to rename the temporary AOF %s file %s into %s: %s" % (
                kind, src, dst, strerror(e)))
            return False
        dt = perf_counter() - t0
        lt = client_mod._LATENCY_MONITOR
        if lt is not None and dt >= lt:
            self.server.latency_add("aof-rename", int(dt * 1000))
        log.notice("Successfully renamed the temporary AOF %s file %s into %s" % (kind, src_name, dst_name))
        return True

    def rewrite_limited(self) -> bool:
        """aofRewriteLimited: after 3 failures in a row the automatic
        rewrite waits 1, 2, 4 ... 60 minutes between attempts."""
        if self.consecutive_failures < REWRITE_LIMIT_THRESHOLD:
            self.limit_next_delay = 0
            self.limit_next_time = 0
            return False
        now = int(time.time())
        if self.limit_next_time:
            if now < self.limit_next_time:
                return True
            self.limit_next_time = 0
            return False
        self.limit_next_delay = 1 if not self.limit_next_delay else self.limit_next_delay * 2
        if self.limit_next_delay > REWRITE_LIMIT_MAX_MINUTES:
            self.limit_next_delay = REWRITE_LIMIT_MAX_MINUTES
        self.limit_next_time = now + self.limit_next_delay * 60
        log.warning("Background AOF rewrite has repeatedly failed and triggered the limit, will retry in %d "
                    "minutes" % self.limit_next_delay)
        return True

    def bgrewriteaof(self, in_exec=False) -> str:
        """BGREWRITEAOF: 'started', 'scheduled', 'in-progress' or 'error'."""
        srv = self.server
        if srv.child_type == "aof":
            return "in-progress"
        if self.child_active() or in_exec or self.backup.holds_incr():
            self.rewrite_scheduled = True
            self.consecutive_failures = 0
            return "scheduled"
        if self.rewrite_background():
            return "started"
        return "error"
