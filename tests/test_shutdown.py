"""Shutdown asked by signals (sigShutdownHandler, serverCron, SHUTDOWN
ABORT), each scenario run against Ophidis and redis-server: a SIGTERM is
performed by the cron (DEBUG PAUSE-CRON holds it, SHUTDOWN ABORT cancels
it), a second SIGINT during the final save exits at once and removes the
save's temp file, a second SIGTERM does not."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
import redis

from support.servers import REDIS_SERVER, RedisServerProc, ServerProc
from support.wait import wait_until

KINDS = ["ours", pytest.param("redis", marks=pytest.mark.skipif(REDIS_SERVER is None,
                                                                 reason="redis-server is not installed"))]


def _start(kind, tmp_path, *args):
    if kind == "ours":
        return ServerProc(("--enable-debug-command", "yes") + args)
    return RedisServerProc(list(args), dir=str(tmp_path))


def _exit_code(proc, timeout=30):
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


@pytest.mark.parametrize("kind", KINDS)
def test_shutdown_abort_cancels_a_pending_sigterm(kind, tmp_path):
    s = _start(kind, tmp_path)
    try:
        c = s.client()
        with pytest.raises(redis.ResponseError, match="^No shutdown in progress.$"):
            c.execute_command("SHUTDOWN", "ABORT")
        c.execute_command("DEBUG", "PAUSE-CRON", "1")
        os.kill(s.pid, signal.SIGTERM)
        assert wait_until(lambda: "Received SIGTERM scheduling shutdown..." in s.output(), 10)
        time.sleep(0.3)                       # several cron periods: nothing happens
        assert c.ping()
        assert c.execute_command("SHUTDOWN", "ABORT") is True      # +OK
        assert "Shutdown manually aborted." in s.output()
        c.execute_command("DEBUG", "PAUSE-CRON", "0")
        time.sleep(0.3)
        assert c.ping() and s.proc.poll() is None
        with pytest.raises(redis.ResponseError, match="^No shutdown in progress.$"):
            c.execute_command("SHUTDOWN", "ABORT")
        # without the pause the cron performs it
        os.kill(s.pid, signal.SIGTERM)
        assert _exit_code(s.proc) == 0
        assert "ready to exit, bye bye" in s.output()
    finally:
        s.stop()


def _slow_save_server(kind, tmp_path):
    s = _start(kind, tmp_path, "--save", "900 1", "--rdb-key-save-delay", "100000")
    c = s.client()
    for i in range(20):                     # 20 keys x 100 ms: a 2 s save
        c.set(b"k%d" % i, b"v")
    return s


@pytest.mark.parametrize("kind", KINDS)
def test_second_sigint_during_the_final_save_exits_at_once(kind, tmp_path):
    s = _slow_save_server(kind, tmp_path)
    try:
        temp = os.path.join(s.dir, "temp-%d.rdb" % s.pid)
        os.kill(s.pid, signal.SIGINT)
        assert wait_until(lambda: os.path.exists(temp), 10)
        os.kill(s.pid, signal.SIGINT)
        assert _exit_code(s.proc) == 1
        assert not os.path.exists(temp)
        assert not os.path.exists(os.path.join(s.dir, "dump.rdb"))
        out = s.output()
        assert "Received SIGINT scheduling shutdown..." in out
        assert "You insist... exiting now." in out
    finally:
        s.stop()


@pytest.mark.parametrize("kind", KINDS)
def test_second_sigterm_lets_the_final_save_finish(kind, tmp_path):
    s = _slow_save_server(kind, tmp_path)
    try:
        temp = os.path.join(s.dir, "temp-%d.rdb" % s.pid)
        os.kill(s.pid, signal.SIGTERM)
        assert wait_until(lambda: os.path.exists(temp), 10)
        os.kill(s.pid, signal.SIGTERM)
        assert _exit_code(s.proc) == 0
        out = s.output()
        assert "You insist" not in out and "DB saved on disk" in out
        assert os.path.getsize(os.path.join(s.dir, "dump.rdb")) > 0
    finally:
        s.stop()
    # every acknowledged write is in the snapshot
    s2 = _start(kind, tmp_path) if kind == "redis" else ServerProc(cwd=s.dir)
    try:
        assert s2.client().dbsize() == 20
    finally:
        s2.stop()
