"""Shutdown asked by signals (sigShutdownHandler, serverCron, SHUTDOWN
ABORT), each scenario run against Ophidis and redis-server: a SIGTERM is
performed by the cron (DEBUG PAUSE-CRON holds it, SHUTDOWN ABORT cancels
it), a second SIGINT during the final save exits at once and removes the
save's temp file, a second SIGTERM does not."""

from __future__ import annotations

import os
import signal
import time

import pytest
import redis

from support.servers import REDIS_SERVER, RedisServerProc, ServerProc, wait_exit
from support.wait import wait_until

KINDS = ["ours", pytest.param("redis", marks=pytest.mark.skipif(REDIS_SERVER is None,
                                                                 reason="redis-server is not installed"))]


def _start(kind, tmp_path, *args):
    if kind == "ours":
        return ServerProc(("--enable-debug-command", "yes") + args)
    return RedisServerProc(list(args), dir=str(tmp_path))


@pytest.mark.parametrize("kind", KINDS)
def test_shutdown_abort_cancels_a_pending_sigterm(kind, tmp_path):
    s = _start(kind, tmp_path)
    try:
        c = s.client()
        with pytest.raises(redis.ResponseError, match="^No shutdown in progress.$"):
            c.execute_command("SHUTDOWN", "ABORT")
        c.execute_command("DEBUG", "PAUSE-CRON", "1")
        os.kill(s.pid, signal.SIGTERM)
        assert wait_until(lambda: "Received SIGTERM scheduling shutdown..." in s.output(), 20)
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
        assert wait_exit(s.proc) == 0
        assert "ready to exit, bye bye" in s.output()
    finally:
        s.stop()


def _slow_save_server(kind, tmp_path, delay_us=100000):
    s = _start(kind, tmp_path, "--save", "900 1", "--rdb-key-save-delay", str(delay_us))
    c = s.client()
    for i in range(20):                     # 20 keys x 100 ms: a 2 s save
        c.set(b"k%d" % i, b"v")
    return s


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_second_signal_during_the_final_save(kind, tmp_path, sig):
    """A second SIGINT exits at once (status 1) and removes the save's
    temp file; a second SIGTERM lets the save finish and every
    acknowledged write is in the snapshot."""
    # the second SIGINT must come while the save runs (however busy the
    # machine): a 20 s save, cut short by it
    s = _slow_save_server(kind, tmp_path, 1000000 if sig == signal.SIGINT else 100000)
    name = "SIGINT" if sig == signal.SIGINT else "SIGTERM"
    try:
        temp = os.path.join(s.dir, "temp-%d.rdb" % s.pid)
        os.kill(s.pid, sig)
        assert wait_until(lambda: os.path.exists(temp), 20)
        os.kill(s.pid, sig)
        assert wait_exit(s.proc) == (1 if sig == signal.SIGINT else 0)
        out = s.output()
        assert "Received %s scheduling shutdown..." % name in out
        dump = os.path.join(s.dir, "dump.rdb")
        if sig == signal.SIGINT:
            assert "You insist... exiting now." in out
            assert not os.path.exists(temp) and not os.path.exists(dump)
            return
        assert "You insist" not in out and "DB saved on disk" in out
        assert os.path.getsize(dump) > 0
    finally:
        s.stop()
    s2 = _start(kind, tmp_path) if kind == "redis" else ServerProc(cwd=s.dir)
    try:
        assert s2.client().dbsize() == 20
    finally:
        s2.stop()
