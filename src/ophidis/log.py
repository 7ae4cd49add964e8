"""Redis-format logging: "pid:M 29 Nov 2026 22:21:20.123 * message".

Levels as Redis: debug ".", verbose "-", notice "*", warning "#".
Logging never sits on the hot path: callers check ``enabled(level)`` first
for anything expensive.
"""

from __future__ import annotations

import os
import sys
import time

DEBUG, VERBOSE, NOTICE, WARNING, NOTHING = 0, 1, 2, 3, 4
# "nothing" (7.2) logs nothing at all
LEVELS = {"debug": DEBUG, "verbose": VERBOSE, "notice": NOTICE, "warning": WARNING, "nothing": NOTHING}
_MARK = ".-*#"

level = NOTICE
_file = None          # None -> stdout
_path = ""
role = "M"


def configure(loglevel: str, logfile: str | None):
    global level, _file, _path
    level = LEVELS.get(loglevel, NOTICE)
    if logfile != _path:
        if _file is not None:
            try:
                _file.close()
            except OSError:
                pass
        _file = None
        _path = logfile or ""
        if _path:
            _file = open(_path, "a", buffering=1, encoding="utf-8", errors="replace")


def set_level(loglevel: str):
    global level
    level = LEVELS.get(loglevel, NOTICE)


def enabled(lvl: int) -> bool:
    return lvl >= level


def log(lvl: int, msg: str, raw: bool = False):
    if lvl < level:
        return
    if raw:
        line = msg
    else:
        now = time.time()
        t = time.localtime(now)
        line = "%d:%s %s.%03d %s %s" % (
            os.getpid(), role, time.strftime("%d %b %Y %H:%M:%S", t), int((now % 1) * 1000),
            _MARK[lvl], msg)
    _write(line + "\n")


def _write(text: str):
    """One log line to the log file (or stdout) at once, as serverLog's
    fprintf + fflush: straight to the descriptor (no buffer a signal
    handler logging in the middle of another line could find busy, and
    nothing left behind when the process ends); through the stream's own
    write where it has no descriptor (an embedding program's stdout)."""
    f = _file if _file is not None else sys.stdout
    try:
        fd = f.fileno()
    except (OSError, ValueError, AttributeError):
        fd = -1
    try:
        if fd < 0:
            f.write(text)
            f.flush()
            return
        try:
            f.flush()                   # what was written through the stream, first
        except RuntimeError:            # a handler interrupting that very flush
            pass
        data = text.encode("utf-8", "replace")
        while data:
            n = os.write(fd, data)
            data = data[n:]
    except (OSError, ValueError, RuntimeError):
        # RuntimeError: a reentrant call into a stream's buffer
        pass


def stream():
    """The file the log goes to (the log file, else stdout)."""
    return _file if _file is not None else sys.stdout


def flush():
    try:
        stream().flush()
    except (OSError, ValueError):
        pass


def debug(msg):
    log(DEBUG, msg)


def verbose(msg):
    log(VERBOSE, msg)


def notice(msg):
    log(NOTICE, msg)


def warning(msg):
    log(WARNING, msg)


def child_failed(what: str) -> int:
    """In a forked child (BGSAVE, AOF rewrite): log the exception being
    handled; returns the exit code for flush_and_exit."""
    import traceback
    try:
        warning("%s failed: %s" % (what, traceback.format_exc().replace("\n", " | ")))
    except Exception:  # noqa: BLE001
        pass
    return 1


def flush_and_exit(code: int):
    """Flush what was logged, then os._exit (forked children, fatal start-up errors)."""
    try:
        sys.stdout.flush()
        if _file is not None:
            _file.flush()
    except Exception:  # noqa: BLE001
        pass
    os._exit(code)


def fatal(msg):
    """``msg`` at the warning level, then flush_and_exit(1): a fatal error
    at start-up (Redis's serverLog(LL_WARNING, ...) then exit(1))."""
    warning(msg)
    flush_and_exit(1)
