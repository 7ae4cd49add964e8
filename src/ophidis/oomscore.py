"""The process's OOM-killer score (Redis's setOOMScoreAdj, Linux only).

With ``oom-score-adj`` on, the server writes one of the three
``oom-score-adj-values`` to /proc/self/oom_score_adj: the first while it is
a master, the second while it is a replica, the third in a forked child
(BGSAVE, AOF rewrite, full sync).  ``relative`` (``yes``) adds the value to
the score the process had before the server first took control of it;
``absolute`` writes the value itself; either is clamped to -1000..1000.
Turning the directive off puts that earlier score back.

The state is per process, as Redis's two statics: a forked child inherits
it with the rest of its parent's memory.  A leaf module (logging only), so
that the configuration hooks, the replication link and the fork helper can
all call :func:`apply`.
"""

from __future__ import annotations

import os

from . import log

# the classes, the indices into oom-score-adj-values
MASTER, REPLICA, BGCHILD = 0, 1, 2

PROC_FILE = "/proc/self/oom_score_adj"

# True once we have written a score of our own; _base is the score the
# process had before that (put back when the directive is turned off)
_adjusted = False
_base = 0


def apply(mode: str, values, process_class: int) -> bool:
    """Write the score ``mode`` (the oom-score-adj directive: no, yes,
    relative, absolute) and ``values`` (oom-score-adj-values) give the
    class; False when /proc could not be read or written (logged as Redis
    does), True otherwise, also when there is nothing to do."""
    global _adjusted, _base
    if mode != "no":
        if not _adjusted:
            try:
                with open(PROC_FILE, "rb") as f:
                    raw = f.read(63)
            except OSError as e:
                log.warning("Unable to read oom_score_adj: %s" % (e.strerror or e))
                return False
            _adjusted = True
            _base = _atoi(raw)
        val = values[process_class]
        if mode != "absolute":
            val += _base
        val = max(-1000, min(1000, val))
    elif _adjusted:
        _adjusted = False
        val = _base
    else:
        return True
    try:
        fd = os.open(PROC_FILE, os.O_WRONLY)
    except OSError as e:
        log.warning("Unable to write oom_score_adj: %s" % (e.strerror or e))
        return False
    try:
        os.write(fd, b"%d\n" % val)
    except OSError as e:
        log.warning("Unable to write oom_score_adj: %s" % (e.strerror or e))
        return False
    finally:
        os.close(fd)
    return True


def _atoi(raw: bytes) -> int:
    """C's atoi: the leading integer, 0 when there is none."""
    s = raw.strip()
    end = 1 if s[:1] in (b"-", b"+") else 0
    while end < len(s) and 48 <= s[end] <= 57:
        end += 1
    try:
        return int(s[:end])
    except ValueError:
        return 0
