"""What the parts of the AOF share: its states, the results of loading, the
limits of rewrites and annotations, and small file helpers."""

from __future__ import annotations

import os

from ... import log

AOF_OFF, AOF_ON, AOF_WAIT_REWRITE = 0, 1, 2


ANNOTATION_LINE_MAX = 1024
WRITE_ERROR_LOG_RATE = 30
REWRITE_LIMIT_THRESHOLD = 3
REWRITE_LIMIT_MAX_MINUTES = 60

# results of loading
LOAD_OK, LOAD_NOT_EXIST, LOAD_EMPTY, LOAD_OPEN_ERR, LOAD_FAILED, LOAD_TRUNCATED = range(6)

fdatasync = getattr(os, "fdatasync", os.fsync)


def strerror(e) -> str:
    if isinstance(e, OSError):
        return e.strerror or str(e)
    return str(e)


def unlink_quiet(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def fsync_dir(path):
    dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def file_size(path) -> int:
    try:
        return os.stat(path).st_size
    except OSError as e:
        log.warning("Unable to obtain the AOF file %s length. stat: %s" % (os.path.basename(path), strerror(e)))
        return 0
