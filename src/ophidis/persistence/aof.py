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
  around transactions and scripts (see propagate.py).

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
"""

from __future__ import annotations

import errno as errno_mod
import os
import re
import signal
import threading
import time
from collections import deque
from time import perf_counter

from .. import client as client_mod
from .. import log
from ..db import EmbStr
from ..propagate import EXEC, MULTI, TO_AOF, propagator, select_cmd
from ..protocol import bulk as _bulk, encode_argv, sdscatrepr, sds_needs_repr, split_args
from ..types.containers import HashValue, ListValue, SetValue
from ..types.zset import ZSetValue
from . import child
from .rdb import LoadSettings, RdbError, RdbReader, dump_payload, function_codes, write_snapshot

AOF_OFF, AOF_ON, AOF_WAIT_REWRITE = 0, 1, 2

BASE_SUFFIX = ".base"
INCR_SUFFIX = ".incr"
RDB_FORMAT_SUFFIX = ".rdb"
AOF_FORMAT_SUFFIX = ".aof"
MANIFEST_SUFFIX = ".manifest"
TEMP_PREFIX = "temp-"

TYPE_BASE, TYPE_HIST, TYPE_INCR = "b", "h", "i"

ITEMS_PER_CMD = 64                  # elements per RPUSH/SADD/ZADD/HMSET of a rewrite
AUTOSYNC_BYTES = 4 * 1024 * 1024    # aof-rewrite-incremental-fsync step
MANIFEST_MAX_LINE = 1024
ANNOTATION_LINE_MAX = 1024
WRITE_ERROR_LOG_RATE = 30
REWRITE_LIMIT_THRESHOLD = 3
REWRITE_LIMIT_MAX_MINUTES = 60

# results of loading
LOAD_OK, LOAD_NOT_EXIST, LOAD_EMPTY, LOAD_OPEN_ERR, LOAD_FAILED, LOAD_TRUNCATED = range(6)

_fdatasync = getattr(os, "fdatasync", os.fsync)


def _strerror(e) -> str:
    if isinstance(e, OSError):
        return e.strerror or str(e)
    return str(e)


# -- manifest ---------------------------------------------------------------------------

class ManifestError(Exception):
    def __init__(self, msg, linenum=0, line=None):
        super().__init__(msg)
        self.msg = msg
        self.linenum = linenum
        self.line = line


_LEADING_INT = re.compile(rb"\s*([+-]?\d+)")


def _atol(b: bytes) -> int:
    """C's atoll/strtol: leading blanks, a sign, digits; 0 if none."""
    m = _LEADING_INT.match(b)
    return int(m.group(1)) if m else 0


class AofInfo:
    __slots__ = ("name", "seq", "type")

    def __init__(self, name, seq, type_):
        self.name = name      # str (file system encoding)
        self.seq = seq
        self.type = type_

    def copy(self):
        return AofInfo(self.name, self.seq, self.type)

    def line(self) -> bytes:
        name = os.fsencode(self.name)
        if sds_needs_repr(name):
            name = sdscatrepr(name)
        return b"file %s seq %d type %s\n" % (name, self.seq, self.type.encode())


class Manifest:
    """The in-memory form of the manifest (aofManifest)."""

    def __init__(self):
        self.base = None
        self.incrs = []
        self.history = []
        self.base_seq = 0
        self.incr_seq = 0
        self.dirty = False

    def copy(self):
        m = Manifest()
        m.base = self.base.copy() if self.base is not None else None
        m.incrs = [i.copy() for i in self.incrs]
        m.history = [i.copy() for i in self.history]
        m.base_seq = self.base_seq
        m.incr_seq = self.incr_seq
        m.dirty = self.dirty
        return m

    def text(self) -> bytes:
        out = []
        if self.base is not None:
            out.append(self.base.line())
        out += [i.line() for i in self.history]
        out += [i.line() for i in self.incrs]
        return b"".join(out)

    @classmethod
    def parse(cls, data: bytes) -> "Manifest":
        """Redis's manifest rules; raises ManifestError with its texts."""
        am = cls()
        maxseq = 0
        pos = 0
        n = len(data)
        linenum = 0
        if not n:
            raise ManifestError("Found an empty AOF manifest")
        while pos < n:
            e = data.find(b"\n", pos, pos + MANIFEST_MAX_LINE)
            end = e + 1 if e >= 0 else min(n, pos + MANIFEST_MAX_LINE)
            raw = data[pos:end]
            pos = end
            linenum += 1
            if raw[:1] == b"#":
                continue
            if e < 0:
                raise ManifestError("The AOF manifest file contains too long line")
            line = raw.strip(b" \t\r\n")
            shown = line.decode("utf-8", "replace")
            if not line:
                raise ManifestError("Invalid AOF manifest file format", linenum, shown)
            argv = split_args(line)
            if argv is None or len(argv) < 6 or len(argv) % 2:
                raise ManifestError("Invalid AOF manifest file format", linenum, shown)
            name = None
            seq = 0
            typ = None
            for i in range(0, len(argv), 2):
                k = argv[i].lower()
                v = argv[i + 1]
                if k == b"file":
                    if b"/" in v or b"\\" in v:
                        raise ManifestError("File can't be a path, just a filename", linenum, shown)
                    name = os.fsdecode(v)
                elif k == b"seq":
                    seq = _atol(v)
                elif k == b"type":
                    typ = v[:1].decode("latin-1") if v else ""
            if not name or not seq or not typ:
                raise ManifestError("Invalid AOF manifest file format", linenum, shown)
            info = AofInfo(name, seq, typ)
            if typ == TYPE_BASE:
                if am.base is not None:
                    raise ManifestError("Found duplicate base file information", linenum, shown)
                am.base = info
                am.base_seq = seq
            elif typ == TYPE_HIST:
                am.history.append(info)
            elif typ == TYPE_INCR:
                if seq <= maxseq:
                    raise ManifestError("Found a non-monotonic sequence number", linenum, shown)
                am.incrs.append(info)
                am.incr_seq = seq
                maxseq = seq
            else:
                raise ManifestError("Unknown AOF file type", linenum, shown)
        if linenum == 0:
            raise ManifestError("Found an empty AOF manifest")
        return am

    # -- naming (getNewBaseFileNameAndMarkPreAsHistory & co) ------------------------------
    def new_base(self, filename, rdb: bool) -> str:
        if self.base is not None:
            self.base.type = TYPE_HIST
            self.history.insert(0, self.base)
        self.base_seq += 1
        name = "%s.%d%s%s" % (filename, self.base_seq, BASE_SUFFIX,
                              RDB_FORMAT_SUFFIX if rdb else AOF_FORMAT_SUFFIX)
        self.base = AofInfo(name, self.base_seq, TYPE_BASE)
        self.dirty = True
        return name

    def new_incr(self, filename) -> str:
        self.incr_seq += 1
        name = "%s.%d%s%s" % (filename, self.incr_seq, INCR_SUFFIX, AOF_FORMAT_SUFFIX)
        self.incrs.append(AofInfo(name, self.incr_seq, TYPE_INCR))
        self.dirty = True
        return name

    def last_incr(self, filename) -> str:
        if not self.incrs:
            return self.new_incr(filename)
        return self.incrs[-1].name

    def incrs_to_history(self, keep_last: bool):
        """After a successful rewrite: the incr files the new base covers
        become history (all but the one being written when AOF is on)."""
        if not self.incrs:
            return
        keep = self.incrs[-1:] if keep_last else []
        moved = self.incrs[:-1] if keep_last else self.incrs
        for info in reversed(moved):
            h = info.copy()
            h.type = TYPE_HIST
            self.history.insert(0, h)
        self.incrs = keep
        self.dirty = True


def manifest_name(filename) -> str:
    return filename + MANIFEST_SUFFIX


def temp_incr_name(filename) -> str:
    return TEMP_PREFIX + filename + INCR_SUFFIX


# -- background jobs (Redis's bio threads for the AOF) -----------------------------------

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

    def fsync(self, fd):
        self._submit("fsync", fd)

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
                    try:
                        _fdatasync(arg)
                        self.fsync_errno = 0
                    except OSError as e:
                        if e.errno not in (errno_mod.EBADF, errno_mod.EINVAL):
                            self.fsync_errno = e.errno or errno_mod.EIO
                elif kind == "close":
                    try:
                        _fdatasync(arg)
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


# -- the rewrite: a dataset as RESP commands ------------------------------------------------

def _score(s: float) -> bytes:
    return b"%.17g" % s




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
                _fdatasync(self.f.fileno())


def write_base(server, filename, progress=None) -> bool:
    """rewriteAppendOnlyFile: the dataset into ``filename`` through a temp
    file, fsynced and renamed.  Logs failures as Redis does."""
    cfg = server.config
    tmp = "temp-rewriteaof-%d.aof" % os.getpid()
    try:
        f = open(tmp, "wb", buffering=1 << 16)
    except OSError as e:
        log.warning("Opening the temp file for AOF rewrite in rewriteAppendOnlyFile(): %s" % _strerror(e))
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
        log.warning("Write error writing append only file on disk: %s" % _strerror(e))
        _unlink(tmp)
        return False
    try:
        os.rename(tmp, filename)
    except OSError as e:
        log.warning("Error moving temp append only file on the final destination: %s" % _strerror(e))
        _unlink(tmp)
        return False
    return True


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _fsync_dir(path):
    dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


# -- the AOF ----------------------------------------------------------------------------------

class Aof:
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
        from ..config import ConfigError
        if v and self.state == AOF_OFF:
            if not self.start():
                raise ConfigError("Unable to turn on AOF. Check server logs.")
        elif not v and self.state != AOF_OFF:
            self.stop()

    def _on_auto_gc(self, v):
        if not v:
            self.del_history_files()

    # -- children ----------------------------------------------------------------------------
    def child_active(self) -> bool:
        return self.server.child_type is not None

    # -- propagation target ------------------------------------------------------------------
    def feed(self, ops, wrap):
        """Append what one command (transaction, script) propagated."""
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
            dbid = ops[0][0]
            if dbid != sel:
                buf.append(select_cmd(dbid))
                sel = dbid
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
        if mode == "always":
            t0 = perf_counter()
            try:
                _fdatasync(fd)
            except OSError as e:
                log.warning("Can't persist AOF for fsync error when the AOF fsync policy is 'always': %s. "
                            "Exiting..." % _strerror(e))
                log.flush_and_exit(1)
            dt = perf_counter() - t0
            lt = client_mod._LATENCY_MONITOR
            if lt is not None and dt >= lt:
                self.server.latency_add("aof-fsync-always", int(dt * 1000))
            self.last_incr_fsync_offset = self.last_incr_size
            self.last_fsync = now
        elif mode == "everysec" and now > self.last_fsync:
            if not sync_in_progress and not self.bio.pending_fsync:
                self.bio.fsync(fd)
                self.last_incr_fsync_offset = self.last_incr_size
            self.last_fsync = now

    def _write_failed(self, err, written, total, data, now):
        can_log = now - self.last_write_error_log > WRITE_ERROR_LOG_RATE
        if can_log:
            self.last_write_error_log = now
        if written == 0 and err is not None:
            if can_log:
                log.warning("Error writing to the AOF file: %s" % _strerror(err))
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
                                "to load the AOF the next time it starts.  ftruncate: %s" % _strerror(e))
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
            from ..errors import RedisError
            return RedisError("MISCONF Errors writing to the AOF file: %s" % os.strerror(code))
        return None

    def _update_denied(self):
        self.server.write_denied = self.write_error()

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
            log.warning("Can't open the AOF manifest file %s: %s" % (tmp_name, _strerror(e)))
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
                    tmp_name, _strerror(e)))
                return False
            try:
                os.fsync(fd)
            except OSError as e:
                log.warning("Fail to fsync the temp AOF file %s: %s." % (tmp_name, _strerror(e)))
                return False
        finally:
            os.close(fd)
        try:
            os.rename(tmp, path)
        except OSError as e:
            log.warning("Error trying to rename the temporary AOF manifest file %s into %s: %s" % (
                tmp_name, name, _strerror(e)))
            return False
        try:
            _fsync_dir(path)
        except OSError as e:
            log.warning("Fail to fsync AOF directory %s: %s." % (path, _strerror(e)))
            return False
        am.dirty = False
        return True

    def make_dir(self) -> bool:
        try:
            os.makedirs(self.dirname, exist_ok=True)
            if not os.path.isdir(self.dirname):
                raise NotADirectoryError(errno_mod.ENOTDIR, os.strerror(errno_mod.ENOTDIR))
        except OSError as e:
            log.warning("Can't open or create append-only dir %s: %s" % (self.dirname, _strerror(e)))
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
            log.warning("Can't open the append-only file %s: %s" % (name, _strerror(e)))
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
        propagator(self.server).attach(self)
        client_mod.set_before_reply(self.before_reply)

    def _deactivate(self):
        propagator(self.server).detach(self)
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
        self.flush(True)
        if self.fd is not None:
            try:
                _fdatasync(self.fd)
                self.last_fsync = int(time.time())
            except OSError as e:
                log.warning("Fail to fsync the AOF file: %s" % _strerror(e))
            os.close(self.fd)
        self.fd = None
        was_waiting = self.state == AOF_WAIT_REWRITE
        self.selected_db = -1
        self.state = AOF_OFF
        self.rewrite_scheduled = False
        self.last_incr_size = 0
        self.last_incr_fsync_offset = 0
        self.kill_child()
        if was_waiting:
            _unlink(self.path(temp_incr_name(self.filename)))
        self.buf = []
        self._deactivate()
        self._update_denied()

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

    # -- background rewrite ---------------------------------------------------------------------
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
        if not hasattr(os, "fork"):
            log.warning("Can't rewrite append only file in background: fork: not supported")
            self.lastbgrewrite_ok = False
            return False
        try:
            ch = child.fork(srv, self._child_main, what="AOF rewrite child")
        except OSError as e:
            log.warning("Can't rewrite append only file in background: fork: %s" % _strerror(e))
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
        if not write_base(self.server, tmp):
            return 1
        log.notice("Successfully created the temporary AOF base file %s" % tmp)
        cow = child.private_dirty()
        log.notice("Fork CoW for AOF rewrite: current %d MB, peak %d MB, average %d MB" % (
            cow >> 20, cow >> 20, cow >> 20))
        ctx.send_info(b"%d\n" % cow)
        return 0

    def _read_cow(self):
        if self.child is None:
            return
        try:
            parts = self.child.read_info().split()
            if parts:
                self.last_cow = int(parts[0])
        except ValueError:
            pass

    def _child_gone(self):
        if self.child is not None:
            self.child.close()
        self.child = None
        self.child_pid = None
        srv = self.server
        if srv.child_type == "aof":
            srv.child_type = None

    def _remove_temp_files(self, pid):
        _unlink("temp-rewriteaof-bg-%d.aof" % pid)
        _unlink("temp-rewriteaof-%d.aof" % pid)

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
        pid = self.child_pid
        if pid is None:
            return
        status = self.child.poll()
        if status is None:
            return
        self._read_cow()
        self._rewrite_done(pid, status)

    def _rewrite_done(self, pid, status):
        """backgroundRewriteDoneHandler."""
        t_start = time.perf_counter()
        exited = os.WIFEXITED(status)
        code = os.WEXITSTATUS(status) if exited else 0
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        self._child_gone()
        if exited and code == 0:
            log.notice("Background AOF rewrite terminated with success")
            self._install_rewrite(pid)
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

    def _fail_install(self):
        self.lastbgrewrite_ok = False
        self.consecutive_failures += 1

    def _install_rewrite(self, pid):
        tmp = "temp-rewriteaof-bg-%d.aof" % pid
        am = self.manifest.copy()
        base_name = am.new_base(self.filename, self.server.config["aof-use-rdb-preamble"])
        base_path = self.path(base_name)
        t0 = perf_counter()
        try:
            os.rename(tmp, base_path)
        except OSError as e:
            log.warning("Error trying to rename the temporary AOF base file %s into %s: %s" % (
                tmp, base_path, _strerror(e)))
            self._fail_install()
            return
        self._rename_latency(t0)
        log.notice("Successfully renamed the temporary AOF base file %s into %s" % (tmp, base_name))
        incr_path = None
        if self.state == AOF_WAIT_REWRITE:
            temp_name = temp_incr_name(self.filename)
            temp_path = self.path(temp_name)
            incr_name = am.new_incr(self.filename)
            incr_path = self.path(incr_name)
            t0 = perf_counter()
            try:
                os.rename(temp_path, incr_path)
            except OSError as e:
                log.warning("Error trying to rename the temporary AOF incr file %s into %s: %s" % (
                    temp_path, incr_path, _strerror(e)))
                self.bio.unlink(base_path)
                self._fail_install()
                return
            self._rename_latency(t0)
            log.notice("Successfully renamed the temporary AOF incr file %s into %s" % (temp_name, incr_name))
        am.incrs_to_history(keep_last=self.fd is not None)
        if not self.persist_manifest(am):
            self.bio.unlink(base_path)
            if incr_path is not None:
                self.bio.unlink(incr_path)
            self._fail_install()
            return
        self.manifest = am
        if self.state != AOF_OFF:
            self.current_size = _size(base_path) + self.last_incr_size
            self.base_size = self.current_size
        self.del_history_files()
        self.lastbgrewrite_ok = True
        self.consecutive_failures = 0
        log.notice("Background AOF rewrite finished successfully")
        if self.state == AOF_WAIT_REWRITE:
            self.state = AOF_ON

    def _rename_latency(self, t0):
        dt = perf_counter() - t0
        lt = client_mod._LATENCY_MONITOR
        if lt is not None and dt >= lt:
            self.server.latency_add("aof-rename", int(dt * 1000))

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
        if self.child_active() or in_exec:
            self.rewrite_scheduled = True
            self.consecutive_failures = 0
            return "scheduled"
        if self.rewrite_background():
            return "started"
        return "error"

    # -- cron --------------------------------------------------------------------------------------------
    def cron(self):
        srv = self.server
        if not self.child_active() and self.rewrite_scheduled and not self.rewrite_limited():
            self.rewrite_background()
        if self.child_pid is not None:
            self.check_child()
        elif not self.child_active() and self.state == AOF_ON:
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
        if self.child_pid is not None and self.state == AOF_WAIT_REWRITE:
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
                    _fdatasync(self.fd)
                except OSError as e:
                    log.warning("Fail to fsync the AOF file: %s." % _strerror(e))
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

    # -- loading ---------------------------------------------------------------------------------------------
    def load_manifest_from_disk(self):
        """aofLoadManifestFromDisk: a missing directory or manifest is an
        empty manifest; anything wrong with an existing one is fatal."""
        self.manifest = Manifest()
        if not os.path.isdir(self.dirname):
            log.debug("The AOF directory %s doesn't exist" % self.dirname)
            return
        name = manifest_name(self.filename)
        path = self.path(name)
        if not os.path.exists(path):
            log.debug("The AOF manifest file %s doesn't exist" % name)
            return
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            log.warning("Fatal error: can't open the AOF manifest file %s for reading: %s" % (
                path, _strerror(e)))
            log.flush_and_exit(1)
        try:
            self.manifest = Manifest.parse(data)
        except ManifestError as e:
            log.warning("*** FATAL AOF MANIFEST FILE ERROR ***")
            if e.line is not None:
                log.warning("Reading the manifest file, at line %d" % e.linenum)
                log.warning(">>> '%s'" % e.line)
            log.warning(e.msg)
            log.flush_and_exit(1)

    def upgrade_prepare(self):
        """aofUpgradePrepare: an old single-file AOF becomes the base of a
        new manifest in the AOF directory."""
        if not self.make_dir():
            log.flush_and_exit(1)
        am = self.manifest
        am.base = AofInfo(self.filename, 1, TYPE_BASE)
        am.base_seq = 1
        am.dirty = True
        if not self.persist_manifest(am):
            log.flush_and_exit(1)
        try:
            os.rename(self.filename, self.path(self.filename))
        except OSError as e:
            log.warning("Error trying to move the old AOF file %s into dir %s: %s" % (
                self.filename, self.dirname, _strerror(e)))
            log.flush_and_exit(1)
        log.notice("Successfully migrated an old-style AOF file (%s) into the AOF directory (%s)." % (
            self.filename, self.dirname))

    def load_files(self) -> int:
        """loadAppendOnlyFiles."""
        srv = self.server
        am = self.manifest
        fn = self.filename
        if os.path.isfile(fn):
            if (not os.path.isdir(self.dirname)
                    or (am.base is None and not am.incrs)
                    or (am.base is not None and not am.incrs and am.base.name == fn
                        and not os.path.exists(self.path(fn)))):
                self.upgrade_prepare()
        if am.base is None and not am.incrs:
            return LOAD_NOT_EXIST
        files = ([am.base] if am.base is not None else []) + list(am.incrs)
        total = 0
        for info in files:
            try:
                total += os.stat(self.path(info.name)).st_size
            except OSError as e:
                log.warning("Unable to obtain the AOF file %s length. stat: %s" % (info.name, _strerror(e)))
                return LOAD_FAILED if e.errno == errno_mod.ENOENT else LOAD_OPEN_ERR
        if total == 0:
            return LOAD_EMPTY
        srv.loading = True
        srv.update_server_slow()
        p = srv.persistence
        p.loading_start = time.time()
        p.loading_total = total
        ret = LOAD_OK
        base_size = 0
        try:
            for i, info in enumerate(files):
                last = i == len(files) - 1
                is_base = info.type == TYPE_BASE
                if is_base:
                    base_size = _size(self.path(info.name))
                t0 = time.time()
                ret = self.load_single(info.name, last)
                if ret == LOAD_OK or (ret == LOAD_TRUNCATED and last):
                    log.notice("DB loaded from %s file %s: %.3f seconds" % (
                        "base" if is_base else "incr", info.name, time.time() - t0))
                if ret == LOAD_EMPTY and not is_base:
                    ret = LOAD_OK
                if ret == LOAD_TRUNCATED and not last:
                    ret = LOAD_FAILED
                    log.warning("Fatal error: the truncated file is not the last file")
                if ret in (LOAD_OPEN_ERR, LOAD_FAILED):
                    return ret
            self.current_size = total
            self.base_size = base_size
            return ret
        finally:
            srv.loading = False
            srv.update_server_slow()

    def load_single(self, name, last=True) -> int:
        """loadSingleAppendOnlyFile: replay one file (an RDB base, or RESP
        commands, or an old RDB-preamble file: RDB then commands).  Only
        the ``last`` file of the manifest may be cut at its last complete
        command (aof-load-truncated); no other file is ever written."""
        srv = self.server
        path = self.path(name)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError as e:
            log.warning("The append log file %s doesn't exist: %s" % (name, _strerror(e)))
            return LOAD_NOT_EXIST
        except OSError as e:
            log.warning("Fatal error: can't open the append log file %s for reading: %s" % (name, _strerror(e)))
            return LOAD_OPEN_ERR
        if not data:
            return LOAD_EMPTY
        truncated_ok = srv.config["aof-load-truncated"]
        pos = 0
        valid_up_to = 0
        if data[:5] == b"REDIS":
            old_style = name == self.filename
            if old_style:
                log.notice("Reading RDB preamble from AOF file...")
            else:
                log.notice("Reading RDB base file on AOF loading...")
            p = srv.persistence
            reader = RdbReader(data, LoadSettings(srv.config), ndbs=len(srv.dbs), skip_expired=False,
                               verify_checksum=srv.config["rdbchecksum"],
                               log=lambda lvl, msg: getattr(log, lvl)(msg))
            try:
                try:
                    res = reader.load()
                except RdbError:
                    raise
                except Exception as e:  # noqa: BLE001
                    raise RdbError("Internal error while parsing: %r" % e, reader.pos) from None
            except RdbError as e:
                # An RDB part (preamble or base) that cannot be read whole
                # is fatal and the file is left as it is: aof-load-truncated
                # only ever cuts a RESP tail (see _unexpected_eof).
                if e.offset in (0, 5) and ("signature" in e.msg or "version" in e.msg):
                    log.warning(e.msg)
                else:
                    if e.truncated:
                        log.warning("Short read or OOM loading DB. Unrecoverable error, aborting now.")
                    log.warning("Internal error in RDB reading offset %d, function at rdb.py -> %s" % (
                        e.offset or 0, e.msg))
                if old_style:
                    log.warning("Error reading the RDB preamble of the AOF file %s, AOF loading aborted" % name)
                else:
                    log.warning("Error reading the RDB base file %s, AOF loading aborted" % name)
                return LOAD_FAILED
            p._log_aux(res)
            p.apply(res)
            p._log_done(res)
            pos = valid_up_to = reader.pos
            if old_style:
                log.notice("Reading the remaining AOF tail...")
        return self._replay(data, pos, valid_up_to, name, path, truncated_ok and last, truncated_ok)

    def _replay(self, data, pos, valid_up_to, name, path, truncated_ok, load_truncated) -> int:
        """Run the RESP commands of ``data`` from ``pos`` with Redis's AOF
        reader rules (lines read up to 1023 bytes, ``#`` annotations
        skipped, numbers read as atoi does, the CRLF after a bulk not
        checked)."""
        srv = self.server
        from ..client import Client
        from ..commands import lookup
        from ..errors import RedisError
        c = Client(srv)
        c.authenticated = True
        c.slow = False
        c.addr = c.laddr = ""
        n = len(data)
        find = data.find
        lmax = ANNOTATION_LINE_MAX - 1
        valid_before_multi = 0
        delay = srv.config["key-load-delay"]
        cache = {}      # argv[0] -> (command, has subcommands, kind)
        while pos < n:
            first = data[pos]
            e = find(b"\n", pos, pos + lmax)
            end = e + 1 if e >= 0 else min(n, pos + lmax)
            if first != 42:              # '*'
                if first == 35:          # '#': an annotation
                    pos = end
                    continue
                return self._bad_format(name)
            if end == pos + 1 and end >= n:
                return self._unexpected_eof(name, path, valid_up_to, truncated_ok, load_truncated)
            try:
                argc = int(data[pos + 1:end])
            except ValueError:
                argc = _atol(data[pos + 1:end])
            if argc < 1:
                return self._bad_format(name)
            argv = []
            append = argv.append
            p = end
            for _ in range(argc):
                if p >= n:
                    return self._unexpected_eof(name, path, valid_up_to, truncated_ok, load_truncated)
                if data[p] != 36:        # '$'
                    return self._bad_format(name)
                e = find(b"\n", p, p + lmax)
                end = e + 1 if e >= 0 else min(n, p + lmax)
                try:
                    ln = int(data[p + 1:end])
                except ValueError:
                    ln = _atol(data[p + 1:end])
                if ln < 0:
                    return self._bad_format(name)
                q = end + ln
                if q + 2 > n:
                    return self._unexpected_eof(name, path, valid_up_to, truncated_ok, load_truncated)
                append(data[end:q])
                p = q + 2
            ent = cache.get(argv[0])
            if ent is None:
                base = lookup(argv[0])
                if base is not None:
                    kind = {"multi": 1, "exec": 2}.get(base.name, 3 if "blocking" in base.flags else 0)
                    ent = cache[argv[0]] = (base, bool(base.subcommands), kind)
            cmd = None
            if ent is not None:
                cmd, container, kind = ent
                if container and argc > 1:
                    cmd = cmd.subcommands.get(argv[1].lower())
                    kind = 3 if cmd is not None and "blocking" in cmd.flags else 0
            if cmd is None:
                log.warning("Unknown command '%s' reading the append only file %s" % (
                    argv[0].decode("utf-8", "replace"), name))
                return LOAD_FAILED
            if kind == 1:
                valid_before_multi = valid_up_to
            if c.multi is not None and kind != 2:
                c.multi.append((cmd, argv))
            else:
                if kind == 3:
                    c.in_exec = True        # never block (CLIENT_DENY_BLOCKING)
                try:
                    cmd.proc(c, argv)
                except RedisError:
                    pass
                except Exception as ex:  # noqa: BLE001
                    log.warning("Error replaying '%s' from the append only file %s: %r" % (
                        cmd.fullname, name, ex))
                if kind == 3:
                    c.in_exec = False
            pos = p
            if truncated_ok:
                valid_up_to = pos
            if delay:
                _key_delay(delay)
        if c.multi is not None:
            log.warning("Revert incomplete MULTI/EXEC transaction in AOF file %s" % name)
            return self._unexpected_eof(name, path, valid_before_multi, truncated_ok, load_truncated)
        return LOAD_OK

    def _bad_format(self, name):
        log.warning("Bad file format reading the append only file %s: make a backup of your AOF file, then use "
                    "./redis-check-aof --fix <filename.manifest>" % name)
        return LOAD_FAILED

    def _unexpected_eof(self, name, path, valid_up_to, truncated_ok, load_truncated):
        """``truncated_ok``: the file may be cut at ``valid_up_to`` (the last
        file of the manifest, aof-load-truncated yes).  ``load_truncated``:
        aof-load-truncated is on (a file that is not the last one is then
        reported truncated, left as it is, and loading fails)."""
        if load_truncated and not truncated_ok:
            log.warning("!!! Warning: short read while loading the AOF file %s!!!" % name)
            return LOAD_TRUNCATED
        if truncated_ok:
            log.warning("!!! Warning: short read while loading the AOF file %s!!!" % name)
            log.warning("!!! Truncating the AOF %s at offset %d !!!" % (name, valid_up_to))
            try:
                os.truncate(path, valid_up_to)
            except OSError as e:
                log.warning("Error truncating the AOF file %s: %s" % (name, _strerror(e)))
            else:
                log.warning("AOF %s loaded anyway because aof-load-truncated is enabled" % name)
                return LOAD_TRUNCATED
        log.warning("Unexpected end of file reading the append only file %s. You can: 1) Make a backup of your "
                    "AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can "
                    "set the 'aof-load-truncated' configuration option to yes and restart the server." % name)
        return LOAD_FAILED

    # -- start-up ---------------------------------------------------------------------------------------------
    def open_on_start(self):
        """aofOpenIfNeededOnServerStart."""
        if self.state != AOF_ON:
            return
        if not self.make_dir():
            log.flush_and_exit(1)
        am = self.manifest
        had_incrs = bool(am.incrs)
        if am.base is None and not am.incrs:
            base_name = am.new_base(self.filename, self.server.config["aof-use-rdb-preamble"])
            if not write_base(self.server, self.path(base_name)):
                log.flush_and_exit(1)
            log.notice("Creating AOF base file %s on server start" % base_name)
        name = am.last_incr(self.filename)
        try:
            self.fd = os.open(self.path(name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as e:
            log.warning("Can't open the append-only file %s: %s" % (name, _strerror(e)))
            log.flush_and_exit(1)
        if not self.persist_manifest(am):
            log.flush_and_exit(1)
        self.last_incr_size = _size(self.path(name))
        self.last_incr_fsync_offset = self.last_incr_size
        if had_incrs:
            log.notice("Opening AOF incr file %s on server start" % name)
        else:
            log.notice("Creating AOF incr file %s on server start" % name)

    def startup(self):
        srv = self.server
        self.state = AOF_ON if srv.config["appendonly"] else AOF_OFF
        self.load_manifest_from_disk()
        if self.state == AOF_ON:
            t0 = time.time()
            ret = self.load_files()
            if ret in (LOAD_FAILED, LOAD_OPEN_ERR):
                log.flush_and_exit(1)
            if ret != LOAD_NOT_EXIST:
                log.notice("DB loaded from append only file: %.3f seconds" % (time.time() - t0))
        self.open_on_start()
        self.del_history_files()
        if self.state != AOF_OFF:
            self._activate()


def _size(path) -> int:
    try:
        return os.stat(path).st_size
    except OSError as e:
        log.warning("Unable to obtain the AOF file %s length. stat: %s" % (os.path.basename(path), _strerror(e)))
        return 0


def _key_delay(us):
    if us < 0:
        # negative: nanoseconds (debugDelay)
        time.sleep(-us / 1e9)
    else:
        time.sleep(us / 1e6)




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
