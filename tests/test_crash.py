"""Crash reports (debug.c's bug report): a fatal signal sent to the server,
DEBUG SEGFAULT / ASSERT / PANIC.  The server logs Redis's markers and
section titles, then dies by the signal as redis-server does; the same
scenario is run against redis-server to check the markers are Redis's."""

from __future__ import annotations

import os
import signal
import time

import pytest
import redis

from support.servers import REDIS_SERVER, VALKEY_SERVER, RedisServerProc, ServerProc, ValkeyServerProc, wait_exit
from support.wait import HAS_WCHAN, in_sleep, wait_until

from ophidis.sysinfo import REDIS_VERSION

needs_redis = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")
needs_valkey = pytest.mark.skipif(VALKEY_SERVER is None, reason="valkey-server is not installed")
KINDS = ["ours", pytest.param("redis", marks=needs_redis)]

START = "=== REDIS BUG REPORT START: Cut & paste starting from here ==="
END = "=== REDIS BUG REPORT END. Make sure to include from START to END. ==="
SECTIONS = ("------ STACK TRACE ------", "------ INFO OUTPUT ------", "------ CLIENT LIST OUTPUT ------",
            "------ CONFIG DEBUG OUTPUT ------")


def _crash(server, *cmd):
    c = redis.Redis(port=server.port, socket_timeout=20)
    c.set(b"k", b"v")
    with pytest.raises(redis.ConnectionError):
        c.execute_command(*cmd)


def _ours(*args):
    return ServerProc(("--enable-debug-command", "yes") + args)


def _theirs(tmp_path, *args):
    return RedisServerProc(list(args), dir=str(tmp_path))


def _in_order(out, *parts):
    at = -1
    for p in parts:
        i = out.find(p, at + 1)
        assert i > at, "%r missing or out of order in:\n%s" % (p, out[-4000:])
        at = i


def _check_segfault(out, full=True, version=REDIS_VERSION):
    """``full``: the whole report.  Debian's redis-server sometimes faults
    again inside its own report (after the INFO section has begun): its
    side is checked up to there."""
    if not full:
        _in_order(out, START, "Redis %s crashed by signal: 11, si_code: 2" % version, *SECTIONS[:2])
        return
    _in_order(out, START, "Redis %s crashed by signal: 11, si_code: 2" % version, *SECTIONS[:3])
    _in_order(out, "------ CURRENT CLIENT INFO ------", "argv[0]: '\"DEBUG\"'", "argv[1]: '\"SEGFAULT\"'")
    _in_order(out, "------ CONFIG DEBUG OUTPUT ------", "lazyfree-lazy-eviction no", END)
    assert out.count(START) == 1


def test_debug_segfault_logs_the_report_and_dies_by_sigsegv():
    s = _ours()
    try:
        _crash(s, "DEBUG", "SEGFAULT")
        assert wait_exit(s.proc) == -signal.SIGSEGV
        out = s.output()
        _check_segfault(out)
        assert "debug.py" in out.split("------ STACK TRACE ------")[1]    # where it crashed
    finally:
        s.stop()


@needs_redis
def test_redis_server_debug_segfault_report_has_the_same_markers(tmp_path):
    r = _theirs(tmp_path)
    try:
        _crash(r, "DEBUG", "SEGFAULT")
        assert wait_exit(r.proc) == -signal.SIGSEGV
        _check_segfault(r.output(), full=False, version="7.0.15")
    finally:
        r.stop()


@pytest.mark.parametrize("kind", KINDS)
def test_sigabrt_logs_the_report_and_dies_by_it(tmp_path, kind):
    s = _ours() if kind == "ours" else _theirs(tmp_path)
    try:
        redis.Redis(port=s.port, socket_timeout=20).ping()
        os.kill(s.pid, signal.SIGABRT)
        status = wait_exit(s.proc)
        # as in test_debug_assert_and_panic: Debian's redis-server sometimes
        # faults in its own report first (SIGSEGV); ours must abort
        assert status == -signal.SIGABRT or (kind == "redis" and status == -signal.SIGSEGV)
        out = s.output()
        if kind == "redis":       # see _check_segfault
            _in_order(out, START, "Redis 7.0.15 crashed by signal: 6, si_code: 0", *SECTIONS[:2])
            return
        _in_order(out, START, "Redis %s crashed by signal: 6, si_code: 0" % REDIS_VERSION, *SECTIONS)
        _in_order(out, "------ CONFIG DEBUG OUTPUT ------", END)
    finally:
        s.stop()


@pytest.mark.parametrize("kind", KINDS)
def test_debug_assert_and_panic(tmp_path, kind):
    for sub, lines in (("ASSERT", ["=== ASSERTION FAILED CLIENT CONTEXT ===", "client->argc = 2",
                                   "client->argv[1] = \"ASSERT\" (refcount: 1)",
                                   "=== ASSERTION FAILED OBJECT CONTEXT ===", "Object type: 0",
                                   "=== ASSERTION FAILED ===", "'1 == 2' is not true"]),
                       ("PANIC", ["!!! Software Failure. Press left mouse button to continue",
                                  "Guru Meditation: DEBUG PANIC called at Unix time "])):
        d = tmp_path / sub
        d.mkdir()
        s = _ours() if kind == "ours" else _theirs(d)
        try:
            t0 = int(time.time())
            _crash(s, "DEBUG", sub)
            status = wait_exit(s.proc)
            # redis-server aborts, though Debian's build sometimes faults in
            # its own report first (SIGSEGV)
            assert status == -signal.SIGABRT or (kind == "redis" and status == -signal.SIGSEGV)
            out = s.output()
            _in_order(out, START, *lines)
            if sub == "PANIC":
                at = int(out.split("called at Unix time ")[1].split()[0])
                assert t0 <= at <= t0 + 60
            if kind == "redis":       # see _check_segfault
                _in_order(out, lines[-1], *SECTIONS[:2])
                continue
            _in_order(out, lines[-1], *SECTIONS[:3])
            _in_order(out, "------ CONFIG DEBUG OUTPUT ------", END)
            assert out.count(START) == 1 and "crashed by signal" not in out     # one report, no second one
        finally:
            s.stop()


def test_crash_log_disabled_means_no_report():
    s = _ours("--crash-log-enabled", "no")
    try:
        c = s.client()
        c.ping()
        os.kill(s.pid, signal.SIGABRT)
        assert wait_exit(s.proc) == -signal.SIGABRT
        assert START not in s.output()
    finally:
        s.stop()
    # and it follows CONFIG SET
    s = _ours()
    try:
        c = s.client()
        c.config_set("crash-log-enabled", "no")
        os.kill(s.pid, signal.SIGABRT)
        assert wait_exit(s.proc) == -signal.SIGABRT
        assert START not in s.output()
    finally:
        s.stop()


@pytest.mark.skipif(not HAS_WCHAN, reason="needs /proc/<pid>/wchan")
def test_report_during_a_long_command():
    """A signal that arrives while a command runs (DEBUG SLEEP) is
    reported when Python regains control, with that command's stack."""
    s = _ours()
    try:
        conn = s.conn()
        assert conn.call(b"PING") is not None
        # a long sleep (the signal ends it): the signal is sent once the
        # server is in it, however long the command took to start
        conn.send_raw(b"*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$2\r\n60\r\n")
        wait_until(lambda: in_sleep(s.pid), 20, what="the server in DEBUG SLEEP")
        os.kill(s.pid, signal.SIGABRT)
        assert wait_exit(s.proc) == -signal.SIGABRT
        conn.close()
        trace = s.output().split("------ STACK TRACE ------")[1].split("------ INFO OUTPUT ------")[0]
        assert "debug.py" in trace and "time.sleep" in trace
    finally:
        s.stop()


@pytest.mark.skipif(not HAS_WCHAN, reason="needs /proc/<pid>/wchan")
@pytest.mark.parametrize("kind", ["ours", pytest.param("valkey", marks=needs_valkey)])
def test_sigalrm_sent_logs_stacks_and_goes_on(tmp_path, kind):
    """A SIGALRM sent to the server (Redis 7.2+, valkey as well) logs
    "Received SIGALRM" from the signal handler with the stack trace, with
    no watchdog configured; the running command ends normally and the
    server goes on."""
    s = _ours() if kind == "ours" else ValkeyServerProc(dir=str(tmp_path))
    try:
        conn = s.conn()
        conn.send_raw(b"*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$1\r\n2\r\n")
        wait_until(lambda: in_sleep(s.pid), 20, what="the server in DEBUG SLEEP")
        os.kill(s.pid, signal.SIGALRM)
        assert conn.read_reply(timeout=10).raw == b"+OK\r\n"
        out = s.output()
        _in_order(out, ":signal-handler (", "Received SIGALRM", "------ STACK TRACE ------",
                  "------ STACK TRACE DONE ------", "--------")
        assert "WATCHDOG" not in out and START not in out
        if kind == "ours":
            trace = out.split("------ STACK TRACE ------")[1].split("------ STACK TRACE DONE ------")[0]
            assert "debug.py" in trace and "time.sleep" in trace
        assert conn.call(b"PING") == b"+PONG\r\n"
        conn.close()
    finally:
        s.stop()


@pytest.mark.parametrize("kind", KINDS)
def test_software_watchdog(tmp_path, kind):
    """watchdog-period: a command that keeps the server from its cron
    longer than the period logs WATCHDOG TIMER EXPIRED from the signal
    handler (with a stack trace) and the server goes on; 0 turns it off."""
    s = _ours() if kind == "ours" else _theirs(tmp_path, "--enable-debug-command", "yes")
    try:
        c = redis.Redis(port=s.port, socket_timeout=20)
        assert c.config_set("watchdog-period", 200)
        c.execute_command("DEBUG", "SLEEP", "1")
        assert c.ping()
        out = s.output()
        _in_order(out, ":signal-handler (", "--- WATCHDOG TIMER EXPIRED ---", "--------")
        n = out.count("WATCHDOG TIMER EXPIRED")
        assert c.config_set("watchdog-period", 0)
        c.execute_command("DEBUG", "SLEEP", "0.6")
        assert c.ping()
        assert s.output().count("WATCHDOG TIMER EXPIRED") == n
    finally:
        s.stop()
