"""Crash reports: what Redis's debug.c logs when the server dies by a fatal
signal, a failed assertion or a panic (the "bug report"), with Redis's
markers and section titles, so that tools and Redis's test suite that grep
a log for them ("crashed by signal", "ASSERTION FAILED", "STACK TRACE",
"Guru Meditation") find them.

What differs from a C server:

* A fatal signal *sent* to the process (``kill -ABRT``) runs a Python
  handler that writes the full report, then the process dies by the same
  signal (default action), as Redis's bugReportEnd does.  Python handlers
  get no siginfo: the header's ``si_code`` is 0 (SI_USER, what a signal
  from kill(2) carries) and there is no "Killed by PID" line.
* A real fault in C code (SIGSEGV, SIGBUS, SIGFPE, SIGILL) cannot run
  Python code (a Python handler would return to the faulting instruction
  forever): ``faulthandler`` writes the Python traceback of every thread to
  the log instead, then the process dies by the signal.
* The STACK TRACE section holds the Python stacks of the threads; there is
  no REGISTERS section, no code dump and no memory test.

``crash-log-enabled no`` leaves the signals' default actions (no report);
an assertion or a panic then logs its header lines only, as Redis.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
import time
import traceback

from . import log, sysinfo
from .info import gen_info
from .keyspace.db import type_name
from .protocol.resp import sdscatrepr

# Signals that get the full report when they are sent to us.
_HANDLED = (signal.SIGABRT,)
# Faults that only faulthandler can report (no Python code can run).
_FAULTS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL)

_state = {"server": None, "started": False}

# Redis's object type numbers (OBJ_STRING ...), as its reports print them
_OBJ_TYPES = {b"string": 0, b"list": 1, b"set": 2, b"zset": 3, b"hash": 4, b"stream": 6}


def _obj_type(v) -> str:
    n = _OBJ_TYPES.get(type_name(v))
    return "%d" % n if n is not None else type(v).__name__


def install(server):
    """setupSignalHandlers' crash half; follows ``crash-log-enabled``; the
    software watchdog follows ``watchdog-period``."""
    _state["server"] = server
    _apply(server.config["crash-log-enabled"])
    server.config.on_change("crash-log-enabled", _apply)
    watchdog_apply(server.config["watchdog-period"])
    server.config.on_change("watchdog-period", watchdog_apply)


# -- SIGALRM and the software watchdog (debug.c) ----------------------------------------------
# With watchdog-period N (ms), SIGALRM is scheduled N ms ahead by every cron
# run (watchdog_schedule); when the event loop does not get back to its cron
# in time, or while a payload or file loads (Redis's cron does not run then
# either), the signal logs WATCHDOG TIMER EXPIRED with the threads' stacks.
# A SIGALRM sent to the process (kill) logs "Received SIGALRM" and the
# stacks, whatever the period, and the server goes on, as Redis's
# sigalrmSignalHandler.  Python's handlers get no siginfo (Redis tells the
# two apart by its si_pid): a signal that comes while our timer is still
# armed, or with no watchdog, was sent.  A signal interrupting a system
# call is retried (EINTR, PEP 475).

_watchdog = {"period": 0}


def watchdog_apply(period):
    """applyWatchdogPeriod: 0 stops the timer; a period below two cron
    ticks is raised to that."""
    signal.signal(signal.SIGALRM, _on_sigalrm)
    if not period:
        _watchdog["period"] = 0
        signal.setitimer(signal.ITIMER_REAL, 0)
        return
    server = _state["server"]
    _watchdog["period"] = max(period, (1000 // server.hz) * 2 if server is not None else 0)
    watchdog_schedule()


def watchdog_schedule():
    """watchdogScheduleSignal: SIGALRM one period from now (nothing when off)."""
    p = _watchdog["period"]
    if p:
        signal.setitimer(signal.ITIMER_REAL, p / 1000.0)


def _from_handler(msg):
    """serverLogFromHandler's line: pid:signal-handler (unix time) msg."""
    _raw("%d:signal-handler (%d) %s\n" % (os.getpid(), int(time.time()), msg))


def _on_sigalrm(sig, frame):
    expired = _watchdog["period"] and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    _from_handler("\n--- WATCHDOG TIMER EXPIRED ---" if expired else "\nReceived SIGALRM")
    _stack_trace()
    _from_handler("--------\n")


def _apply(enabled):
    if enabled:
        for sig in _HANDLED:
            signal.signal(sig, _on_signal)
        out = log.stream()
        try:
            faulthandler.enable(file=out, all_threads=True)
        except (ValueError, OSError, AttributeError):
            pass                                # no usable descriptor
        for sig in _HANDLED:                    # faulthandler took SIGABRT too
            signal.signal(sig, _on_signal)
    else:
        _remove_handlers()


def _remove_handlers():
    """removeSignalHandlers: the default actions again."""
    faulthandler.disable()
    for sig in _HANDLED + _FAULTS:
        signal.signal(sig, signal.SIG_DFL)


def _on_signal(sig, frame):
    server = _state["server"]
    report_signal(server, sig, 0)


# -- the report ------------------------------------------------------------------------------

def _raw(text):
    """serverLogRaw: text as it is (log.log adds the final newline)."""
    log.log(log.WARNING, text[:-1] if text.endswith("\n") else text, raw=True)


def _start():
    """bugReportStart: the START marker, once."""
    if not _state["started"]:
        _state["started"] = True
        _raw("\n\n=== REDIS BUG REPORT START: Cut & paste starting from here ===\n")


def _stack_trace():
    _raw("\n------ STACK TRACE ------\n")
    _raw("\nBacktrace:\n")
    names = {t.ident: t.name for t in threading.enumerate()}
    me = threading.get_ident()
    frames = sys._current_frames()
    # the crashing thread first, as Redis's backtrace is of the crashing thread
    for ident in sorted(frames, key=lambda i: i != me):
        _raw("Thread %s (%d)%s:\n" % (names.get(ident, "?"), ident, " (crashed)" if ident == me else ""))
        stack = [fs for fs in traceback.extract_stack(frames[ident]) if fs.filename != __file__]
        _raw("".join(traceback.format_list(stack)))
    _raw("\n------ STACK TRACE DONE ------\n")


def _server_info(server):
    """logServerInfo: INFO all and CLIENT LIST."""
    _raw("\n------ INFO OUTPUT ------\n")
    try:
        _raw(gen_info(server, [b"all"]) + "\r\n")
    except Exception as e:  # noqa: BLE001 -- the report must go on
        _raw("(INFO failed: %r)\n" % e)
    _raw("\n------ CLIENT LIST OUTPUT ------\n")
    try:
        _raw("".join(c.info_string() + "\n" for c in list(server.clients.values())))
    except Exception as e:  # noqa: BLE001
        _raw("(CLIENT LIST failed: %r)\n" % e)


def _args_to_log(server, argv) -> int:
    """How many of a command's arguments a report shows: only its name
    with hide-user-data-from-log (7.4)."""
    try:
        hide = server.config["hide-user-data-from-log"]
    except Exception:  # noqa: BLE001 - a report never fails on this
        hide = False
    return 1 if hide else len(argv)


def _current_client(server, client, argv):
    """logCurrentClient: the client whose command was running, its
    arguments and what its first key holds."""
    if client is None:
        return
    _raw("\n------ CURRENT CLIENT INFO ------\n")
    try:
        _raw(client.info_string() + "\n")
    except Exception as e:  # noqa: BLE001
        _raw("(client info failed: %r)\n" % e)
    argv = argv or []
    shown = _args_to_log(server, argv)
    for j, a in enumerate(argv):
        if j >= shown:
            _raw("argv[%d]: *redacted*\n" % j)
            continue
        _raw("argv[%d]: '%s'\n" % (j, sdscatrepr(a[:128]).decode("latin-1")))
        if a.lower() in (b"auth", b"auth2"):
            break           # never the password
    if len(argv) > 1:
        db = client.db
        key = argv[1]
        if key in db.d:
            log.warning("key '%s' found in DB containing the following object:" % key.decode("utf-8", "replace"))
            log.warning("Object type: %s" % _obj_type(db.d[key]))


def _config_debug(server):
    """logConfigDebugInfo: the directives flagged "debug", as CONFIG
    REWRITE would write them."""
    _raw("\n------ CONFIG DEBUG OUTPUT ------\n")
    cfg = server.config
    lines = []
    for name in sorted(cfg.directives):
        if "debug" in cfg.directives[name].flags:
            try:
                lines += cfg.render_rewrite(name)[0]
            except Exception:  # noqa: BLE001
                continue
    _raw("".join(line + "\n" for line in lines))


def _crash_report(server, client=None, argv=None):
    """printCrashReport."""
    if server is None:
        return
    _server_info(server)
    _current_client(server, client, argv)
    _raw("\n------ MODULES INFO OUTPUT ------\n")
    _config_debug(server)


def _end():
    """bugReportEnd's text."""
    _raw("\n=== REDIS BUG REPORT END. Make sure to include from START to END. ===\n\n"
         "       This is Ophidis %s (Redis %s compatible): please report the crash\n"
         "       to the Ophidis project, with this log from START to END.\n"
         % (sysinfo.OPHIDIS_VERSION, sysinfo.REDIS_VERSION))
    _unlink_pidfile()
    log.flush()


def _unlink_pidfile():
    server = _state["server"]
    if server is None:
        return
    cfg = server.config
    if cfg["daemonize"] and cfg["pidfile"]:
        try:
            os.unlink(cfg["pidfile"])
        except OSError:
            pass


def _die(sig):
    """Exit by ``sig`` with its default action (a core dump when enabled)."""
    _remove_handlers()
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)


def report_signal(server, sig, si_code, client=None, argv=None):
    """sigsegvHandler: the report of a fatal signal, then death by it."""
    _start()
    log.warning("Redis %s crashed by signal: %d, si_code: %d" % (sysinfo.REDIS_VERSION, sig, si_code))
    _stack_trace()
    _crash_report(server, client, argv)
    _end()
    _die(sig)


def _crashlog_enabled(server):
    return server is None or server.config["crash-log-enabled"]


def assert_failed(server, expr, where, client=None, argv=None, obj=None):
    """_serverAssertWithInfo: an internal invariant is broken; ``where``
    is "file:line".  Logs the client and object context when given, the
    report, then aborts."""
    _start()
    if client is not None:
        log.warning("=== ASSERTION FAILED CLIENT CONTEXT ===")
        log.warning("client->conn = fd=%d" % client.fd)
        argv = argv or []
        log.warning("client->argc = %d" % len(argv))
        shown = _args_to_log(server, argv)
        for j, a in enumerate(argv):
            if j >= shown:
                log.warning("client->argv[%d] = *redacted*" % j)
                continue
            log.warning("client->argv[%d] = \"%s\" (refcount: 1)" % (j, a.decode("utf-8", "replace")))
    if obj is not None:
        log.warning("=== ASSERTION FAILED OBJECT CONTEXT ===")
        log.warning("Object type: %s" % _obj_type(obj))
    log.warning("=== ASSERTION FAILED ===")
    log.warning("==> %s '%s' is not true" % (where, expr))
    _fail(server, client, argv)


def panic(server, msg, where, client=None, argv=None):
    """_serverPanic: a state the server cannot go on from."""
    _start()
    log.warning("------------------------------------------------")
    log.warning("!!! Software Failure. Press left mouse button to continue")
    log.warning("Guru Meditation: %s #%s" % (msg, where))
    _fail(server, client, argv)


def _fail(server, client, argv):
    if _crashlog_enabled(server):
        _stack_trace()
        _crash_report(server, client, argv)
    _end()
    _die(signal.SIGABRT)         # abort() with the handlers removed
