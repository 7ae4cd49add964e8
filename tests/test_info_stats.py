"""INFO latencystats and commandstats of blocking commands: each test runs on
ophidis-server and on Debian's redis-server (``each_server``), with the
same assertions (Redis 7.0.15's updateStatsOnUnblock is the spec)."""

from __future__ import annotations

import pytest

from support.wait import wait_until


@pytest.fixture
def c(each_server):
    cl = each_server.client()
    cl.flushall()
    cl.config_set("latency-tracking", "yes")
    cl.config_set("latency-tracking-info-percentiles", "50 99 99.9")
    cl.config_resetstat()
    yield cl
    cl.config_set("latency-tracking", "yes")
    cl.close()


def _blocked(c, n=1):
    wait_until(lambda: c.info("clients")["blocked_clients"] == n, timeout=10)


def _blpop_stat(c):
    return c.info("commandstats").get("cmdstat_blpop")


def test_latencystats_section_empty_while_tracking_off(c):
    c.config_set("latency-tracking", "no")
    c.set("a", "b")
    assert c.info("latencystats") == {}
    c.config_set("latency-tracking", "yes")
    c.set("a", "b")
    assert "latency_percentiles_usec_set" in c.info("latencystats")


def test_blocked_command_latency_recorded_when_served(each_server, c):
    b = each_server.conn()
    try:
        b.send("BLPOP", "list1", 0)
        _blocked(c)
        # blocked, not yet served: no latency sample
        assert "latency_percentiles_usec_blpop" not in c.info("latencystats")
        c.lpush("list1", "a")
        assert b.read() == b"*2\r\n$5\r\nlist1\r\n$1\r\na\r\n"
        lat = c.info("latencystats")["latency_percentiles_usec_blpop"]
        assert set(lat) == {"p50", "p99", "p99.9"}
        st = _blpop_stat(c)
        assert (st["calls"], st["failed_calls"]) == (1, 0)
    finally:
        b.close()


def test_timed_out_blocked_command_latency_sample(each_server, c):
    # Redis 7.0 records no latency for a blocked command that timed out;
    # Redis 7.2 (Ophidis) does (replyToBlockedClientTimedOut's
    # updateStatsOnUnblock)
    b = each_server.conn()
    try:
        b.send("BLPOP", "list1", "0.05")
        assert b.read() == b"*-1\r\n"
        old = c.info("server")["redis_version"].startswith("7.0")
        assert ("latency_percentiles_usec_blpop" in c.info("latencystats")) is not old
        st = _blpop_stat(c)
        assert (st["calls"], st["failed_calls"]) == (1, 0)
    finally:
        b.close()


@pytest.mark.parametrize("reason", ["error", "timeout"])
def test_client_unblock_counts_a_failed_call(each_server, c, reason):
    # Redis 7.0 counts a call ended by CLIENT UNBLOCK as failed with
    # either reason, Redis 7.2 (Ophidis) with ERROR only (TIMEOUT is
    # unblockClientOnTimeout); the latency is recorded
    failed = 1 if reason == "error" or c.info("server")["redis_version"].startswith("7.0") else 0
    b = each_server.conn()
    try:
        cid = b.call_value("CLIENT", "ID")
        b.send("BLPOP", "list1", 0)
        _blocked(c)
        assert c.execute_command("CLIENT", "UNBLOCK", cid, reason) == 1
        if reason == "error":
            assert b.read() == b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
            assert c.info("errorstats")["errorstat_UNBLOCKED"] == {"count": 1}
            assert c.info("stats")["total_error_replies"] == 1
        else:
            assert b.read() == b"*-1\r\n"
            assert c.info("stats")["total_error_replies"] == 0
        st = _blpop_stat(c)
        assert (st["calls"], st["rejected_calls"], st["failed_calls"]) == (1, 0, failed)
        assert "latency_percentiles_usec_blpop" in c.info("latencystats")
    finally:
        b.close()
