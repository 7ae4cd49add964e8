"""Loading the AOF at start-up: the manifest, then the base and incr files
replayed in order (loadAppendOnlyFiles / loadSingleAppendOnlyFile), with
Redis's rules for truncated and corrupt files."""

from __future__ import annotations

import errno as errno_mod
import os
import time

from ... import log
from ...cmdtable.registry import lookup
from ...errors import RedisError
from ...net.client import Client
from ..rdb import RdbReader, debug_delay
from ..rdbdecode import LoadSettings
from ..rdbformat import RdbError
from .common import (ANNOTATION_LINE_MAX, AOF_OFF, AOF_ON, LOAD_EMPTY, LOAD_FAILED, LOAD_NOT_EXIST, LOAD_OK,
                     LOAD_OPEN_ERR, LOAD_TRUNCATED, file_size, strerror)
from .manifest import TYPE_BASE, AofInfo, Manifest, _atol, manifest_name, read_manifest
from .rewrite import write_base


class Loader:
    """Part of ``Aof`` (a mixin: the state is declared there)."""

    __slots__ = ()

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
        self.manifest = read_manifest(path, log.warning, log.fatal)

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
                self.filename, self.dirname, strerror(e)))
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
                log.warning("Unable to obtain the AOF file %s length. stat: %s" % (info.name, strerror(e)))
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
                    base_size = file_size(self.path(info.name))
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
            log.warning("The append log file %s doesn't exist: %s" % (name, strerror(e)))
            return LOAD_NOT_EXIST
        except OSError as e:
            log.warning("Fatal error: can't open the append log file %s for reading: %s" % (name, strerror(e)))
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
        c = Client(srv)
        c.authenticated = True
        c.user = srv.acl.superuser     # no ACL checks on the AOF's commands
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
                except RedisError as e:
                    e.__traceback__ = None      # (a shared instance would keep every raise's frames)
                except Exception as ex:  # noqa: BLE001
                    log.warning("Error replaying '%s' from the append only file %s: %r" % (
                        cmd.fullname, name, ex))
                if kind == 3:
                    c.in_exec = False
            pos = p
            if truncated_ok:
                valid_up_to = pos
            if delay:
                debug_delay(delay)
            if srv.shutdown_asap is not None:
                srv.shutdown_while_loading()     # a SIGTERM meanwhile
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
                log.warning("Error truncating the AOF file %s: %s" % (name, strerror(e)))
            else:
                log.warning("AOF %s loaded anyway because aof-load-truncated is enabled" % name)
                return LOAD_TRUNCATED
        log.warning("Unexpected end of file reading the append only file %s. You can: 1) Make a backup of your "
                    "AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can "
                    "set the 'aof-load-truncated' configuration option to yes and restart the server." % name)
        return LOAD_FAILED

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
            log.warning("Can't open the append-only file %s: %s" % (name, strerror(e)))
            log.flush_and_exit(1)
        if not self.persist_manifest(am):
            log.flush_and_exit(1)
        self.last_incr_size = file_size(self.path(name))
        self.last_incr_fsync_offset = self.last_incr_size
        if had_incrs:
            log.notice("Opening AOF incr file %s on server start" % name)
        else:
            log.notice("Creating AOF incr file %s on server start" % name)

    def preload(self) -> bool:
        """preload-file (8.10): load only the file it names (an RDB, or a
        multi-part AOF manifest whose files are beside it), instead of
        dump.rdb or the local AOF.  True when it replaced the normal
        loading (False: the manifest named is our own AOF's)."""
        spec = self.server.config["preload-file"]
        kind, _, path = spec.partition(":")
        path = os.path.abspath(path)
        if kind == "aof" and path == os.path.abspath(self.path(manifest_name(self.filename))):
            return False
        if kind == "rdb":
            am = Manifest()
            am.base = AofInfo(path, 1, TYPE_BASE)
        else:
            am = read_manifest(path, log.warning, log.fatal)
            here = os.path.dirname(path)
            for info in ([am.base] if am.base is not None else []) + am.incrs:
                info.name = os.path.join(here, info.name)
        local = self.manifest
        self.manifest = am
        t0 = time.time()
        try:
            ret = self.load_files()
        finally:
            self.manifest = local
        if ret in (LOAD_FAILED, LOAD_OPEN_ERR, LOAD_NOT_EXIST):
            log.warning("Fatal error: the preload file %s could not be loaded" % path)
            log.flush_and_exit(1)
        log.notice("DB loaded from the preload file %s: %.3f seconds" % (path, time.time() - t0))
        self.current_size = self.base_size = 0
        return True

    def startup(self):
        srv = self.server
        self.state = AOF_ON if srv.config["appendonly"] else AOF_OFF
        self.fsynced_reploff = 0 if self.state == AOF_ON else -1
        self.load_manifest_from_disk()
        if srv.config["preload-file"] and self.preload():
            # the local AOF describes another dataset: it is rewritten
            # from the preloaded one (its files become history)
            if self.state == AOF_ON:
                self.state = AOF_OFF
                if not self.start():
                    log.flush_and_exit(1)
            return
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
