"""The AOF manifest (aofManifest): its in-memory form, its file format
(parsing with Redis's errors, writing, reading a file), and the names of
base/incr/history files."""

from __future__ import annotations

import os
import re

from ...protocol.resp import sds_needs_repr, sdscatrepr, split_args
from .common import strerror

BASE_SUFFIX = ".base"

TYPE_BASE, TYPE_HIST, TYPE_INCR = "b", "h", "i"


INCR_SUFFIX = ".incr"


RDB_FORMAT_SUFFIX = ".rdb"


AOF_FORMAT_SUFFIX = ".aof"


MANIFEST_SUFFIX = ".manifest"


TEMP_PREFIX = "temp-"


MANIFEST_MAX_LINE = 1024


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


def read_manifest(path, report, fail) -> Manifest:
    """The manifest in the file ``path``, what is wrong with it reported as
    aofLoadManifestFromFile does: ``report(text)`` for each line but the
    last, ``fail(text)`` (which does not return) for the last."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        fail("Fatal error: can't open the AOF manifest file %s for reading: %s" % (path, strerror(e)))
    try:
        return Manifest.parse(data)
    except ManifestError as e:
        report("*** FATAL AOF MANIFEST FILE ERROR ***")
        if e.line is not None:
            report("Reading the manifest file, at line %d" % e.linenum)
            report(">>> '%s'" % e.line)
        fail(e.msg)
