"""ophidis-check-aof: validate (and repair) an append-only file, in the
manner of redis-check-aof.

    ophidis-check-aof [--fix|--truncate-to-timestamp $timestamp] <file.manifest|file.aof>

The argument is a manifest of a multi-part AOF (its base and incr files are
checked in order, relative to the manifest's directory), or a single
old-style file (RESP commands, possibly after an RDB preamble).  ``--fix``
truncates an invalid tail, after confirmation on stdin, but only of the last
file.  ``--truncate-to-timestamp`` cuts the last file at the first ``#TS:``
annotation later than the given unix time.  Exit status 0 when valid (or
repaired), 1 otherwise.
"""

from __future__ import annotations

import os
import sys

from ..persistence.aof.common import ANNOTATION_LINE_MAX
from ..persistence.aof.manifest import MANIFEST_MAX_LINE, read_manifest
from .check_rdb import check_data

CHECK_OK, CHECK_EMPTY, CHECK_TRUNCATED, CHECK_TIMESTAMP_TRUNCATED = range(4)


class Abort(Exception):
    """The check stops with exit status 1 (the message was printed)."""


class Checker:
    def __init__(self, out=sys.stdout, stdin=sys.stdin, to_timestamp=0):
        self.out = out
        self.stdin = stdin
        self.to_timestamp = to_timestamp
        self.line = 1           # counted across files, as redis-check-aof does
        self.error = ""
        self.epos = 0

    def p(self, msg):
        self.out.write(msg + "\n")

    def fail(self, msg):
        self.p(msg)
        raise Abort()

    def set_error(self, msg):
        self.error = "0x%16x: %s" % (self.epos, msg)

    # -- RESP records ------------------------------------------------------------------------
    def _newline(self, data, at) -> bool:
        if data[at:at + 2] != b"\r\n":
            got = data[at:at + 2] + b"\0\0"
            self.set_error("Expected \\r\\n, got: %02x%02x" % (got[0], got[1]))
            return False
        self.line += 1
        return True

    def _read_long(self, data, pos, prefix):
        """(value, next position) or None."""
        self.epos = pos
        n = len(data)
        if pos >= n:
            return None
        e = data.find(b"\n", pos, pos + 127)
        end = e + 1 if e >= 0 else min(n, pos + 127)
        if data[pos] != prefix:
            self.set_error("Expected prefix '%s', got: '%s'" % (chr(prefix), chr(data[pos])))
            return None
        j = pos + 1
        k = j
        if k < end and data[k] in b"+-":
            k += 1
        while k < end and 48 <= data[k] <= 57:
            k += 1
        try:
            value = int(data[j:k]) if k > j and data[j:k] not in (b"+", b"-") else 0
        except ValueError:
            value = 0
        if not self._newline(data[:end], k):
            return None
        return value, end

    def _process_resp(self, data, pos, name, multi):
        """One command.  Returns (next position, multi depth) or None."""
        r = self._read_long(data, pos, 42)
        if r is None:
            return None
        argc, pos = r
        for i in range(argc):
            r = self._read_long(data, pos, 36)
            if r is None:
                return None
            ln, pos = r
            if ln < 0 or ln > (1 << 63) - 3:
                self.set_error("Expected to read string of %d bytes, which is not in the suitable range" % ln)
                return None
            self.epos = pos
            real = min(len(data) - pos, ln + 2)
            if real != ln + 2:
                self.set_error("Expected to read %d bytes, got %d bytes" % (ln + 2, real))
                return None
            if not self._newline(data, pos + ln):
                return None
            if i == 0:
                word = data[pos:pos + ln].lower()
                if word == b"multi":
                    multi += 1
                    if multi > 1:
                        self.set_error("Unexpected MULTI in AOF %s" % name)
                        return None
                elif word == b"exec":
                    multi -= 1
                    if multi:
                        self.set_error("Unexpected EXEC in AOF %s" % name)
                        return None
            pos += ln + 2
        return pos, multi

    def _annotation(self, data, pos, path, last_file):
        """Returns the next position, or None when the file was truncated at
        this annotation (--truncate-to-timestamp)."""
        self.epos = pos
        e = data.find(b"\n", pos, pos + ANNOTATION_LINE_MAX - 1)
        end = e + 1 if e >= 0 else min(len(data), pos + ANNOTATION_LINE_MAX - 1)
        line = data[pos:end]
        if self.to_timestamp and line.startswith(b"#TS:"):
            digits = line[4:]
            k = 0
            if digits[:1] in (b"+", b"-"):
                k = 1
            while k < len(digits) and 48 <= digits[k] <= 57:
                k += 1
            if k == 0 or digits[k:k + 1] != b"\r":
                self.fail("Invalid timestamp annotation")
            ts = int(digits[:k])
            if ts <= self.to_timestamp:
                return end
            if pos == 0:
                self.fail("AOF %s has nothing before timestamp %d, aborting..." % (path, self.to_timestamp))
            if not last_file:
                self.p("Failed to truncate AOF %s to timestamp %d to offset %d because it is not the last file."
                       % (path, self.to_timestamp, pos))
                self.fail("If you insist, please delete all files after this file according to the manifest "
                          "file and delete the corresponding records in manifest file manually. Then re-run "
                          "redis-check-aof.")
            try:
                os.truncate(path, pos)
            except OSError:
                self.fail("Failed to truncate AOF %s to timestamp %d" % (path, self.to_timestamp))
            return None
        return end

    # -- one file ------------------------------------------------------------------------------------
    def check_single(self, name, path, last_file, fix, preamble) -> int:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            self.fail("Cannot open file %s: %s, aborting..." % (path, e.strerror))
        size = len(data)
        if size == 0:
            return CHECK_EMPTY
        pos = 0
        start = 0
        if preamble:
            self.p("[offset 0] Checking RDB file %s" % name)
            status, start = check_data(data, self.out, tail_ok=True)
            if status != 0:
                self.fail("RDB preamble of AOF file is not sane, aborting.")
            self.p("RDB preamble is OK, proceeding with AOF tail...")
        self.error = ""
        multi = 0
        cur = start
        pos = start
        eof = False
        while True:
            if not multi:
                pos = cur
            if cur >= size:
                eof = True
                break
            first = data[cur]
            if first == 35:
                nxt = self._annotation(data, cur, path, last_file)
                if nxt is None:
                    return CHECK_TIMESTAMP_TRUNCATED
                cur = nxt
            elif first == 42:
                r = self._process_resp(data, cur, path, multi)
                if r is None:
                    # without an error text the data simply ended
                    eof = not self.error
                    break
                cur, multi = r
            else:
                self.p("AOF %s format error" % name)
                break
        if eof and multi and not self.error:
            self.set_error("Reached EOF before reading EXEC for MULTI")
        if self.error:
            self.p(self.error)
        diff = size - pos
        if diff == 0 and self.to_timestamp:
            self.p("Truncate nothing in AOF %s to timestamp %d" % (name, self.to_timestamp))
            return CHECK_OK
        self.p("AOF analyzed: filename=%s, size=%d, ok_up_to=%d, ok_up_to_line=%d, diff=%d" % (
            name, size, pos, self.line, diff))
        if diff > 0:
            if fix:
                if not last_file:
                    self.fail("Failed to truncate AOF %s because it is not the last file" % name)
                self.p("This will shrink the AOF %s from %d bytes, with %d bytes, to %d bytes" % (
                    name, size, diff, pos))
                self.out.write("Continue? [y/N]: ")
                self.out.flush()
                answer = self.stdin.readline()
                if not answer[:1].lower() == "y":
                    self.fail("Aborting...")
                try:
                    os.truncate(path, pos)
                except OSError:
                    self.fail("Failed to truncate AOF %s" % name)
                return CHECK_TRUNCATED
            self.fail("AOF %s is not valid. Use the --fix option to try fixing it." % name)
        return CHECK_OK

    def report(self, kind, name, ret):
        if ret == CHECK_OK:
            self.p("%s %s is valid" % (kind, name))
        elif ret == CHECK_EMPTY:
            self.p("%s %s is empty" % (kind, name))
        elif ret == CHECK_TIMESTAMP_TRUNCATED:
            self.p("Successfully truncated AOF %s to timestamp %d" % (name, self.to_timestamp))
        elif ret == CHECK_TRUNCATED:
            self.p("Successfully truncated AOF %s" % name)

    # -- whole inputs ------------------------------------------------------------------------------------
    def check_multi_part(self, dirpath, manifest_path, fix):
        self.p("Start checking Multi Part AOF")
        am = read_manifest(manifest_path, self.p, self.fail)
        files = ([am.base] if am.base is not None else []) + list(am.incrs)
        num = 0
        if am.base is not None:
            num += 1
            name = am.base.name
            path = os.path.join(dirpath, name)
            preamble = _is_rdb(path, self)
            self.p("Start to check BASE AOF (%s format)." % ("RDB" if preamble else "RESP"))
            self.report("BASE AOF", name, self.check_single(name, path, num == len(files), fix, preamble))
        if am.incrs:
            self.p("Start to check INCR files.")
            for info in am.incrs:
                num += 1
                path = os.path.join(dirpath, info.name)
                self.report("INCR AOF", info.name, self.check_single(info.name, path, num == len(files), fix,
                                                                      False))
        self.p("All AOF files and manifest are valid")

    def check_old_style(self, path, fix, preamble):
        self.p("Start checking Old-Style AOF")
        self.report("AOF", path, self.check_single(path, path, True, fix, preamble))


def _is_rdb(path, checker) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as e:
        checker.fail("Cannot open file %s: %s" % (path, e.strerror))
    return len(head) >= 8 and head[:5] == b"REDIS"


def _is_manifest(path, checker) -> bool:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        checker.fail("Cannot open file %s: %s" % (path, e.strerror))
    pos = 0
    found = False
    while pos < len(data):
        e = data.find(b"\n", pos, pos + MANIFEST_MAX_LINE)
        end = e + 1 if e >= 0 else min(len(data), pos + MANIFEST_MAX_LINE)
        chunk = data[pos:end]
        pos = end
        if chunk[:1] == b"#":
            continue
        if not chunk.startswith(b"file"):
            # (7.2+) the first other line ends the look: an old-style AOF
            # holding "file ..." as data is not a manifest
            break
        found = True
    return found


USAGE = "Usage: %s [--fix|--truncate-to-timestamp $timestamp] <file.manifest|file.aof>"


def main(argv=None, out=sys.stdout, stdin=sys.stdin) -> int:
    prog = "ophidis-check-aof"
    if argv is None:
        argv = sys.argv[1:]
    fix = False
    to_ts = 0
    if len(argv) == 1:
        path = argv[0]
    elif len(argv) == 2 and argv[0] == "--fix":
        fix = True
        path = argv[1]
    elif len(argv) == 3 and argv[0] == "--truncate-to-timestamp":
        try:
            to_ts = int(argv[1])
        except ValueError:
            out.write("Invalid timestamp, aborting...\n")
            return 1
        path = argv[2]
    else:
        out.write(USAGE % prog + "\n")
        return 1
    ck = Checker(out, stdin, to_ts)
    try:
        if _is_manifest(path, ck):
            ck.check_multi_part(os.path.dirname(path) or ".", path, fix)
        else:
            ck.check_old_style(path, fix, _is_rdb(path, ck))
    except Abort:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
