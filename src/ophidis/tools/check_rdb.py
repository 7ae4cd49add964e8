"""ophidis-check-rdb: validate an RDB file and summarize it, in the manner
of redis-check-rdb.

    ophidis-check-rdb <rdb-file-name>

Exit status 0 when the file is valid, 1 otherwise.
"""

from __future__ import annotations

import sys
import time

from ..persistence.rdb import RdbReader
from ..persistence.rdbformat import TYPE_NAMES, RdbError


def check(path, out=sys.stdout) -> int:
    out.write("[offset 0] Checking RDB file %s\n" % path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        out.write("--- RDB ERROR DETECTED ---\n")
        out.write("[offset 0] Cannot open file: %s\n" % e.strerror)
        return 1
    return check_data(data, out)[0]


def check_data(data, out=sys.stdout, tail_ok=False):
    """Check an RDB held in ``data``; with ``tail_ok`` it may continue after
    the RDB (an AOF with an RDB preamble).  Returns (status, end offset)."""
    def p(msg):
        out.write(msg + "\n")

    def trace(ev, off, info):
        if ev == "aux":
            k, v = info
            p("[offset %d] AUX FIELD %s = '%s'" % (off, k.decode("utf-8", "replace"),
                                                   v.decode("utf-8", "replace")))
        elif ev == "selectdb":
            p("[offset %d] Selecting DB ID %d" % (off, info))

    def info(lvl, msg):
        if not (tail_ok and msg.endswith("trailing bytes after the RDB end")):
            p("[info] %s" % msg)

    reader = RdbReader(data, ndbs=1024, skip_expired=False, now_ms=int(time.time() * 1000),
                       log=info, trace=trace)
    res = None
    err = None
    try:
        res = reader.load(unsupported_ok=True)
    except RdbError as e:
        err = e
    except Exception as e:  # noqa: BLE001
        err = RdbError("Internal error while parsing: %r" % e, reader.pos)
    if err is not None:
        p("--- RDB ERROR DETECTED ---")
        p("[offset %d] %s" % (err.offset or 0, err.msg))
        if reader.key is not None or reader.key_type is not None:
            t = reader.key_type
            if reader.key is not None:
                p("[additional info] Reading key '%s'" % reader.key.decode("utf-8", "replace"))
            if t is not None:
                p("[additional info] Reading type %d (%s)" % (t, TYPE_NAMES.get(t, "unknown")))
            p("[additional info] Entry starts at offset %d" % reader.entry_start)
        return 1, reader.pos
    n = sum(len(d) for d, _ in res.dbs)
    if res.checksum == "ok":
        p("[offset %d] Checksum OK" % res.end_offset)
    elif res.checksum == "disabled":
        p("[offset %d] RDB file was saved with checksum disabled: no check performed." % res.end_offset)
    p("[offset %d] \\o/ RDB looks OK! \\o/" % res.end_offset)
    p("[info] %d keys read" % (res.keys_loaded + res.keys_expired))
    p("[info] %d expires" % res.expires)
    p("[info] %d already expired" % res.already_expired)
    for t in sorted(res.type_counts):
        p("[info] %d keys of type %s" % (res.type_counts[t], t))
    for i, (d, _) in enumerate(res.dbs):
        if d:
            p("[info] db%d: %d keys" % (i, len(d)))
    if res.functions:
        p("[info] %d function libraries" % len(res.functions))
    if res.module_aux_skipped:
        p("[info] %d module AUX records skipped" % res.module_aux_skipped)
    _ = n
    return 0, reader.pos


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    if len(argv) != 1:
        sys.stderr.write("Usage: ophidis-check-rdb <rdb-file-name>\n")
        return 1
    return check(argv[0])


if __name__ == "__main__":
    sys.exit(main())
