"""Snapshots on disk: SAVE, BGSAVE in a forked child, save points checked
by cron, loading at start-up, DEBUG RELOAD, INFO persistence.

The server creates one ``Persistence`` (``server.persistence``); it
registers on the server's hooks:
  startup_hooks   loading dump.rdb before accepting clients
  cron_hooks      reaping the BGSAVE child, save points
  shutdown_hooks  killing a BGSAVE child still running
and the server calls ``shutdown_save`` (SHUTDOWN / SIGTERM), ``flushall``
(FLUSHALL saves when save points exist) and ``info_lines`` (INFO
persistence).

A save never leaves a torn ``dbfilename``: the snapshot goes to
``temp-<pid>.rdb``, is fsynced, renamed over the target and the directory
fsynced.  A load parses the whole file into fresh dictionaries and swaps
them in only when the file was read completely and its checksum matched.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
import time

from .. import log, proctitle
from ..keyspace import hfe
from ..tools import check_rdb
from . import child
from .rdb import RdbReader, write_snapshot
from .rdbdecode import LoadAborted, LoadSettings
from .rdbformat import RdbError

BGSAVE_RETRY_DELAY = 5


class LoadError(Exception):
    pass


class Persistence(child.ChildJob):
    CHILD_TYPE = "rdb"

    def __init__(self, server):
        self.server = server
        self.child_pid = None
        self.child_start = 0.0
        self.child = None              # child.Child while a BGSAVE runs
        self.child_socket = False      # the child writes to replicas (diskless), not the file
        self.dirty_before = 0
        self.last_bgsave_time = -1
        self.saves = 0
        self.last_cow = 0
        self.last_try = 0
        self.scheduled = False
        self.keys_loaded = 0
        self.keys_expired = 0
        self.last_fork_usec = 0
        self.loading_start = 0.0     # while loading: INFO's loading_* fields
        self.loading_total = 0
        self.loaded_aux = {}         # the aux fields of the last file loaded
        self.loaded_expired = []     # and the (dbid, key) it held already expired
        self.loading_reader = None   # the RdbReader at work (its position: loading_loaded_bytes)
        server.startup_hooks.append(self.load_at_startup)
        server.cron_hooks.append(self.cron)
        server.shutdown_hooks.append(self.on_shutdown)

    # -- helpers ------------------------------------------------------------------
    @property
    def filename(self):
        return self.server.config["dbfilename"]

    def other_child_active(self) -> bool:
        t = self.server.child_type
        return t is not None and t != "rdb"

    def _set_status(self, ok: bool):
        srv = self.server
        srv.lastbgsave_ok = ok
        srv.last_bgsave_status_ok = ok
        srv.update_server_slow()

    # -- saving ---------------------------------------------------------------------
    def write_file(self, filename, ctx=None, rename=os.rename) -> bool:
        """Write the snapshot to ``filename`` atomically.  Logs like rdbSave.
        A forked child passes its ``ctx`` (progress reports) and
        ``rename=ctx.rename`` (no rename once its parent is gone)."""
        srv = self.server
        tmp = "temp-%d.rdb" % os.getpid()
        try:
            f = open(tmp, "wb")
        except OSError as e:
            log.warning("Failed opening the temp RDB file %s (in server root dir %s) for saving: %s" % (
                tmp, os.getcwd(), e.strerror))
            return False
        op = "rdbSaveRio"
        try:
            with f:
                progress = ctx.progress if ctx is not None else None
                write_snapshot(f, srv, progress=progress, key_delay=srv.config["rdb-key-save-delay"])
                op = "fflush"
                f.flush()
                op = "fsync"
                os.fsync(f.fileno())
                op = "fclose"
        except OSError as e:
            log.warning("Write error saving DB on disk(%s): %s" % (op, e.strerror or e))
            _unlink(tmp)
            return False
        try:
            if rename(tmp, filename) is False:      # a child whose parent is gone
                return False
        except OSError as e:
            log.warning("Error moving temp DB file %s on the final destination %s (in server root dir %s): %s" % (
                tmp, filename, os.getcwd(), e.strerror))
            _unlink(tmp)
            return False
        try:
            dfd = os.open(os.path.dirname(os.path.abspath(filename)), os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError as e:
            log.warning("Write error saving DB on disk(fsyncFileDir): %s" % e.strerror)
            return False
        log.notice("DB saved on disk")
        return True

    def save(self) -> bool:
        """Synchronous save (SAVE, SHUTDOWN, FLUSHALL, DEBUG RELOAD)."""
        srv = self.server
        if self.write_file(self.filename):
            srv.dirty = 0
            srv.lastsave = int(time.time())
            self._set_status(True)
            return True
        return False

    def bgsave(self, to_fd=None) -> bool:
        """Fork a child writing the snapshot: to the RDB file, or (the
        diskless replication transfer) to the pipe ``to_fd``, which the
        caller closes on its side and reads from."""
        srv = self.server
        if self.child_pid is not None or self.other_child_active():
            return False
        socket = to_fd is not None
        if not socket:
            self.saves += 1
            self.dirty_before = srv.dirty
            self.last_try = int(time.time())
        try:
            if socket:
                ch = child.fork(srv, lambda ctx: self._child_to_pipe(ctx, to_fd), what="RDB transfer child",
                                title=proctitle.RDB_TO_REPLICAS)
            else:
                ch = child.fork(srv, self._child_main, what="Background save child", title=proctitle.BGSAVE)
        except OSError as e:
            log.warning("Can't save in background: fork: %s" % e.strerror)
            if not socket:
                self._set_status(False)
            return False
        self.last_fork_usec = ch.fork_usec
        self.child = ch
        self.child_pid = ch.pid
        self.child_socket = socket
        self.child_start = time.time()
        srv.bgsave_in_progress = True
        srv.child_type = "rdb"
        if socket:
            log.notice("Background RDB transfer started by pid %d" % ch.pid)
        else:
            log.notice("Background saving started by pid %d" % ch.pid)
        return True

    def _child_to_pipe(self, ctx, fd) -> int:
        """rdbSaveToSlavesSockets' child: the snapshot into the pipe."""
        srv = self.server
        try:
            with os.fdopen(fd, "wb", buffering=1 << 16) as f:
                write_snapshot(f, srv, key_delay=srv.config["rdb-key-save-delay"])
        except (BrokenPipeError, OSError):
            return 1
        ctx.send_info(b"%d 0\n" % child.private_dirty())
        return 0

    def _child_main(self, ctx) -> int:
        """rdbSaveBackground's child: write the snapshot, publish it only
        while the parent lives (ctx.rename), report copy-on-write."""
        ok = self.write_file(self.filename, ctx=ctx, rename=ctx.rename)
        cow = child.private_dirty()
        peak, avg = ctx.cow_summary(cow)
        if ok:
            log.notice("Fork CoW for RDB: current %d MB, peak %d MB, average %d MB" % (
                cow >> 20, peak >> 20, avg >> 20))
        ctx.send_info(b"%d %d\n" % (cow, peak))
        return 0 if ok else 1

    def kill_child(self):
        pid = self.child_pid
        if pid is None:
            return
        self.child.kill(signal.SIGUSR1)
        _unlink("temp-%d.rdb" % pid)
        socket = self.child_socket
        self._child_gone()
        self.server.repl_feed.bgsave_done(False, socket)

    def _child_gone(self):
        super()._child_gone()
        self.server.bgsave_in_progress = False

    def check_child(self):
        done = self.exited_child()
        if done is None:
            return
        pid, status = done
        srv = self.server
        now = time.time()
        self.last_bgsave_time = int(now - self.child_start)
        socket = self.child_socket
        if socket:
            # the diskless replication transfer (backgroundSaveDoneHandlerSocket)
            ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
            if ok:
                log.notice("Background RDB transfer terminated with success")
            elif os.WIFEXITED(status):
                log.warning("Background transfer error")
            else:
                log.warning("Background transfer terminated by signal %d" % (
                    os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0))
            self._child_gone()
            srv.repl_feed.bgsave_done(ok, True)
            return
        if os.WIFEXITED(status):
            code = os.WEXITSTATUS(status)
            if code == 0:
                log.notice("Background saving terminated with success")
                srv.dirty = srv.dirty - self.dirty_before
                srv.lastsave = int(now)
                self._child_gone()
                self._set_status(True)
            else:
                log.warning("Background saving error")
                self._child_gone()
                self._set_status(False)
        else:
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
            log.warning("Background saving terminated by signal %d" % sig)
            _unlink("temp-%d.rdb" % pid)
            self._child_gone()
            if sig != signal.SIGUSR1:
                self._set_status(False)
        srv.repl_feed.bgsave_done(srv.lastbgsave_ok, False)

    # -- cron ---------------------------------------------------------------------------
    def cron(self):
        srv = self.server
        if self.child_pid is not None:
            self.check_child()
            return
        if self.other_child_active() or srv.loading:
            return          # no save of a dataset being replaced (Redis's cron waits for the load)
        now = int(time.time())
        for secs, changes in srv.config["save"]:
            if (srv.dirty >= changes and now - srv.lastsave > secs
                    and (now - self.last_try > BGSAVE_RETRY_DELAY or srv.lastbgsave_ok)):
                log.notice("%d changes in %d seconds. Saving..." % (changes, secs))
                self.bgsave()
                return
        if self.scheduled and (now - self.last_try > BGSAVE_RETRY_DELAY or srv.lastbgsave_ok):
            if self.bgsave():
                self.scheduled = False

    # -- hooks ---------------------------------------------------------------------------
    def shutdown_save(self):
        if self.child_pid is not None:
            log.warning("There is a child saving an .rdb. Killing it!")
            self.kill_child()
        if not self.save():
            raise OSError("save failed")

    def on_shutdown(self):
        if self.child_pid is not None:
            log.warning("There is a child saving an .rdb. Killing it!")
            self.kill_child()

    def flushall(self):
        if self.child_pid is not None:
            self.kill_child()
        if self.server.config["save"]:
            self.save()

    # -- loading --------------------------------------------------------------------------
    def reader(self, data=b"", source=None):
        """An RdbReader for a load into this server: over ``data``, or
        streaming from ``source`` (loading-process-events-interval-bytes
        at a time)."""
        srv = self.server
        cfg = srv.config
        return RdbReader(data, LoadSettings(cfg), ndbs=len(srv.dbs), skip_expired=srv.i_am_master(),
                         verify_checksum=cfg["rdbchecksum"], log=lambda lvl, msg: getattr(log, lvl)(msg),
                         source=source, chunk=cfg["loading-process-events-interval-bytes"])

    def parse(self, data):
        return self._run_reader(self.reader(data))

    @staticmethod
    def _run_reader(reader):
        # without the cyclic GC: its collections would walk the growing
        # keyspace again and again (half the time of a load of small
        # hashes, sets and zsets); the values loaded form no cycles, so
        # they go to the permanent generation after (gc.freeze)
        gc_on = gc.isenabled()
        gc.disable()
        try:
            res = reader.load()
        except (RdbError, LoadAborted):
            raise
        except Exception as e:  # noqa: BLE001
            raise RdbError("Internal error while parsing: %r" % e, reader.offset) from None
        finally:
            if gc_on:
                gc.enable()
        if gc_on:
            gc.freeze()
        return res

    def apply(self, res, merge=False, allow_dup=True):
        """Swap the parsed databases in (or merge them into the live ones).
        A merge with ``allow_dup`` False fails on a library that already
        exists (DEBUG RELOAD NOFLUSH without MERGE)."""
        srv = self.server
        fn = srv.functions
        if not merge:
            # a full load replaces the libraries too (emptyData flushes them)
            fn.clear()
        if res.functions:
            if merge:
                fn.rdb_load(res.functions, replace=allow_dup)
            else:
                fn.rdb_load(res.functions, allow_dup)
        for db, (d, exps) in zip(srv.dbs, res.dbs):
            if merge:
                for k, v in d.items():
                    db.d[k] = v
                    db.expires.pop(k, None)
                db.expires.update(exps)
                continue
            db.flush()
            db.d = d if d.__class__ is db.d.__class__ else db.d.__class__(d)
            db.expires = exps
            db._expire_snapshot = None
            db._scan_cache = {}
        for dbid, key in res.hfe:
            db = srv.dbs[dbid]
            hfe.track_value(db, key, db.d.get(key))
        mem = srv.memory
        for dbid, key, idle in res.lru:
            mem.set_idle(srv.dbs[dbid], key, idle)
        for dbid, key, freq in res.lfu:
            mem.set_freq(srv.dbs[dbid], key, freq)
        self.keys_loaded = res.keys_loaded
        self.keys_expired = res.keys_expired

    def _log_aux(self, res):
        a = res.aux
        for k, v in a.items():
            if k[:1] == b"%":
                log.notice("RDB '%s': %s" % (k.decode("utf-8", "replace"), v.decode("utf-8", "replace")))
        if b"redis-ver" in a:
            log.notice("Loading RDB produced by version %s" % a[b"redis-ver"].decode("utf-8", "replace"))
        if b"ctime" in a:
            try:
                age = max(0, int(time.time()) - int(a[b"ctime"]))
                log.notice("RDB age %d seconds" % age)
            except ValueError:
                pass
        if b"used-mem" in a:
            try:
                log.notice("RDB memory usage when created %.2f Mb" % (int(a[b"used-mem"]) / (1024 * 1024)))
            except ValueError:
                pass
        if a.get(b"aof-base", b"0") not in (b"0", b""):
            log.notice("RDB is base AOF")

    def _log_done(self, res):
        if res.empty_skipped:
            log.warning("Done loading RDB, keys loaded: %d, keys expired: %d, empty keys skipped: %d." % (
                res.keys_loaded, res.keys_expired, res.empty_skipped))
        else:
            log.notice("Done loading RDB, keys loaded: %d, keys expired: %d." % (
                res.keys_loaded, res.keys_expired))
        if res.checksum == "disabled":
            log.warning("RDB file was saved with checksum disabled: no check performed.")

    def _open_for_load(self, path):
        """The file opened, None when it does not exist; LoadError (logged)."""
        try:
            return open(path, "rb")
        except FileNotFoundError:
            return None
        except OSError as e:
            log.warning("Fatal error loading the DB: %s. Exiting." % e.strerror)
            raise LoadError(e.strerror) from None

    def _read_for_load(self, path):
        """The file's bytes, None when it does not exist; LoadError (logged)."""
        f = self._open_for_load(path)
        if f is None:
            return None
        with f:
            return f.read()

    def _set_loading(self, on, total=0):
        srv = self.server
        srv.loading = on
        srv.update_server_slow()
        if on:
            self.loading_start = time.time()
            self.loading_total = total

    def _parse_checked(self, reader, path=None, socket=False, then=None):
        """reader.load(), with Redis's log lines for a file that cannot be
        read (LoadError); ``then(reader)`` after a good parse (the EOF mark
        of a diskless payload).  Touches no server state: it may run in a
        thread.  A payload read from the master's ``socket`` that is cut
        short is only logged; a corrupt one ends the server, as Redis."""
        try:
            res = self._run_reader(reader)
            if then is not None:
                then(reader)
            return res
        except RdbError as e:
            if e.offset in (0, 5) and ("signature" in e.msg or "version" in e.msg) and not socket:
                log.warning(e.msg)
                log.warning("Fatal error loading the DB: Invalid argument. Exiting.")
                raise LoadError(e.msg) from None
            if e.truncated:
                log.warning("Short read or OOM loading DB. Unrecoverable error, aborting now.")
            msg = "Internal error in RDB reading offset %d, function at rdb.py -> %s" % (e.offset or 0, e.msg)
            if socket:
                if e.truncated:
                    log.warning(msg + ". Failure loading rdb format from socket, assuming connection error, "
                                "resuming operation.")
                    raise LoadError(str(e)) from None
                log.warning(msg + ". Failure loading rdb format")
                log.warning("Terminating server after rdb file reading failure.")
                log.flush_and_exit(1)
            log.warning(msg)
            if not e.truncated and path is not None:
                # as rdbReportError: the file is corrupt, show the RDB
                # check's report of it (on stdout, as Redis prints it)
                sys.stdout.flush()
                check_rdb.check(path, sys.stdout)
                sys.stdout.flush()
            raise LoadError(str(e)) from None

    def _install(self, res, merge, allow_dup):
        self._log_aux(res)
        self.loaded_aux = res.aux
        self.loaded_expired = res.expired
        try:
            self.apply(res, merge=merge, allow_dup=allow_dup)
        except Exception as e:  # noqa: BLE001
            log.warning("Failed loading the RDB: %s" % e)
            raise LoadError(str(e)) from None
        self._log_done(res)
        return True

    def load_file(self, path, merge=False, allow_dup=True):
        """Load ``path`` into the keyspace.  Returns True when loaded, False
        when the file does not exist; raises LoadError (logged) otherwise."""
        data = self._read_for_load(path)
        if data is None:
            return False
        reader = self.reader(data)
        self._set_loading(True, len(data))
        self.loading_reader = reader
        try:
            return self._install(self._parse_checked(reader, path), merge, allow_dup)
        finally:
            self.loading_reader = None
            self._set_loading(False)

    async def load_serving(self, reader, total, path=None, socket=False, then=None, tick=None):
        """Parse with ``reader`` while the event loop serves clients (as
        Redis processes events while loading; ``total`` bytes known under
        loading-process-events-interval-bytes are parsed at once, no event
        served, as Redis): the parse runs in a thread,
        commands without the ``loading`` flag get -LOADING meanwhile (INFO
        shows the progress), a SIGTERM/SIGINT ends the server without
        saving (whileBlockedCron), ``tick()`` runs every 100 ms.  Returns
        the LoadResult for the loop to install; LoadError (logged) when it
        cannot be read.  Cancelled, it stops the parse (LoadAborted)."""
        srv = self.server
        self._set_loading(True, total)
        await srv.serve_clients()       # at start-up, the listeners accept from here
        if not socket and 0 < total < srv.config["loading-process-events-interval-bytes"]:
            # Redis processes events each time the bytes loaded pass a
            # multiple of the interval: a smaller file or payload is
            # loaded before any client is served (no -LOADING seen)
            try:
                return self._parse_checked(reader, path, socket, then)
            finally:
                self._set_loading(False)
        self.loading_reader = reader
        fut = srv.loop.run_in_executor(None, self._parse_checked, reader, path, socket, then)
        try:
            while not fut.done():
                await asyncio.wait([fut], timeout=0.1)
                if not fut.done():
                    srv.shutdown_while_loading()
                    if tick is not None:
                        tick()
            return fut.result()
        finally:
            if not fut.done():
                reader.aborted = True
                fut.add_done_callback(_retrieved)
            if self.loading_reader is reader:
                self.loading_reader = None
            self._set_loading(False)

    async def _load_serving(self, path):
        """The file at start-up, streamed from disk while serving."""
        f = self._open_for_load(path)
        if f is None:
            return False
        with f:
            try:
                total = os.fstat(f.fileno()).st_size
            except OSError:
                total = 0
            res = await self.load_serving(self.reader(source=f.read), total, path=path)
        return self._install(res, False, True)

    def load_at_startup(self):
        """A startup hook: the loading coroutine, None with appendonly yes."""
        cfg = self.server.config
        if cfg["appendonly"] or cfg["preload-file"]:   # the AOF (or preload-file) holds the data
            return None
        return self._load_at_startup()

    async def _load_at_startup(self):
        t0 = time.time()
        try:
            loaded = await self._load_serving(self.filename)
        except LoadError:
            log.warning("Terminating server after rdb file reading failure.")
            log.flush_and_exit(1)
        if loaded:
            log.notice("DB loaded from disk: %.3f seconds" % (time.time() - t0))
            self.server.repl_feed.restore(self.loaded_aux, self.loaded_expired)
            self.loaded_expired = []

    # -- INFO ----------------------------------------------------------------------------
    def info_lines(self):
        srv = self.server
        now = time.time()
        inprog = self.child_pid is not None
        cur = self.child if self.child is not None else srv.aof.child     # the running child
        if cur is not None:
            cur.update()
        lines = [
            "loading:%d" % int(srv.loading and not srv.async_loading),
            "async_loading:%d" % int(srv.async_loading),
            "current_cow_peak:%d" % (cur.cow_peak if cur else 0),
            "current_cow_size:%d" % (cur.cow if cur else 0),
            "current_cow_size_age:%d" % (int(time.monotonic() - cur.cow_time) if cur and cur.cow_time else 0),
            "current_fork_perc:%.2f" % (cur.fork_perc() if cur else 0.0),
            "current_save_keys_processed:%d" % (cur.keys_processed if cur else 0),
            "current_save_keys_total:%d" % (cur.keys_total if cur else 0),
            "rdb_changes_since_last_save:%d" % srv.dirty,
            "rdb_bgsave_in_progress:%d" % int(inprog),
            "rdb_last_save_time:%d" % srv.lastsave,
            "rdb_last_bgsave_status:%s" % ("ok" if srv.lastbgsave_ok else "err"),
            "rdb_last_bgsave_time_sec:%d" % self.last_bgsave_time,
            "rdb_current_bgsave_time_sec:%d" % (int(now - self.child_start) if inprog else -1),
            "rdb_saves:%d" % self.saves,
            "rdb_last_cow_size:%d" % self.last_cow,
            "rdb_last_load_keys_expired:%d" % self.keys_expired,
            "rdb_last_load_keys_loaded:%d" % self.keys_loaded,
        ]
        lines += srv.aof.info_lines()
        lines += ["module_fork_in_progress:0", "module_fork_last_cow_size:0"]
        lines += srv.aof.info_extra_lines()
        if srv.loading:
            reader = self.loading_reader
            loaded = reader.progress if reader is not None else 0
            used_mem = reader.used_mem if reader is not None else 0
            total = self.loading_total
            perc = 0.0
            remaining = 1
            if total:
                perc = loaded * 100.0 / total
                remaining = total - loaded
            elif used_mem:
                # the creator's used memory: a (bad) guess of the size
                perc = min(99.99, loaded * 100.0 / used_mem)
                remaining = max(1, used_mem - loaded)
            elapsed = int(now) - int(self.loading_start or now)
            lines += [
                "loading_start_time:%d" % int(self.loading_start or now),
                "loading_total_bytes:%d" % total,
                "loading_rdb_used_mem:%d" % used_mem,
                "loading_loaded_bytes:%d" % loaded,
                "loading_loaded_perc:%.2f" % perc,
                "loading_eta_seconds:%d" % (elapsed * remaining // (loaded + 1) if elapsed else 1),
            ]
        return lines


def _retrieved(fut):
    """A parse given up on: its end (LoadAborted, most likely) is nobody's."""
    if not fut.cancelled():
        fut.exception()


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def debug_reload(server, merge=False, noflush=False, nosave=False):
    """DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save (unless NOSAVE), then
    reload the file.  Returns None on success or the error text to reply."""
    p = server.persistence
    if not nosave:
        if not p.save():
            return "ERR"    # Redis 7.0 replies shared.err
    try:
        # MERGE alone still flushes first (as Redis does); NOFLUSH keeps the
        # live data, and without MERGE a library that exists is an error
        ok = p.load_file(p.filename, merge=noflush, allow_dup=merge)
    except LoadError:
        return "Error trying to load the RDB dump"
    if not ok:
        return "Error trying to load the RDB dump"
    log.warning("DB reloaded by DEBUG RELOAD")
    return None


def del_sync_file(server):
    """rdb-del-sync-files: remove the RDB used for a replication sync when
    persistence is off (called by replication after a sync)."""
    cfg = server.config
    if cfg["rdb-del-sync-files"] and not cfg["save"] and not cfg["appendonly"]:
        log.notice("Removing the RDB file used to feed replicas in a persistence-less instance")
        _unlink(cfg["dbfilename"])
        return True
    return False
