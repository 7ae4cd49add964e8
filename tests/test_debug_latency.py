"""DEBUG and LATENCY."""

from __future__ import annotations

import re
import time

import pytest
import redis

from support.wait import wait_until


def test_debug_digest(r):
    assert r.execute_command("DEBUG", "DIGEST") == b"0" * 40
    r.set("a", "1")
    d1 = r.execute_command("DEBUG", "DIGEST")
    assert d1 != b"0" * 40 and len(d1) == 40
    r.set("b", "2")
    d2 = r.execute_command("DEBUG", "DIGEST")
    assert d2 != d1
    r.delete("b")
    assert r.execute_command("DEBUG", "DIGEST") == d1
    r.expire("a", 100)
    assert r.execute_command("DEBUG", "DIGEST") != d1
    r.persist("a")
    assert r.execute_command("DEBUG", "DIGEST") == d1
    # same data in another database gives another digest
    r.flushall()
    r.execute_command("SELECT", 1)
    r.set("a", "1")
    assert r.execute_command("DEBUG", "DIGEST") != d1
    r.execute_command("SELECT", 0)


def test_debug_digest_value(r):
    r.set("a", "x")
    r.set("b", "x")
    va, vb, vn = r.execute_command("DEBUG", "DIGEST-VALUE", "a", "b", "nokey")
    assert va == vb != b"0" * 40
    assert vn == b"0" * 40
    assert r.execute_command("DEBUG", "DIGEST-VALUE") == []


def test_debug_object(r):
    r.set("k", "hello")
    s = r.execute_command("DEBUG", "OBJECT", "k")
    assert s.startswith(b"Value at:0x")
    for part in (b"refcount:1", b"encoding:embstr", b"serializedlength:", b"lru:", b"lru_seconds_idle:"):
        assert part in s
    with pytest.raises(redis.ResponseError, match="^no such key$"):
        r.execute_command("DEBUG", "OBJECT", "nokey")
    # INCR modifies a number "in place" as Redis does: the address stays
    r.set("n", 20000)
    r.incr("n")
    old = r.execute_command("DEBUG", "OBJECT", "n").split()[1]
    r.incr("n")
    assert r.execute_command("DEBUG", "OBJECT", "n").split()[1] == old


def test_debug_sleep_blocks_server(server, r):
    other = server.client()
    t = time.time()
    r.execute_command("DEBUG", "SLEEP", "0.3")
    assert time.time() - t >= 0.3
    assert other.ping()
    assert r.execute_command("DEBUG", "SLEEP", "0") == b"OK"


def test_debug_set_active_expire(r):
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        r.execute_command("PSETEX", "k", 50, "v")
        time.sleep(0.4)
        assert r.dbsize() == 1           # nobody touched it: still there
        assert r.get("k") is None        # lazy expiry still works
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    r.execute_command("PSETEX", "k2", 50, "v")
    wait_until(lambda: r.dbsize() == 0, 30, what="the active expiry")


def test_debug_populate(r):
    assert r.execute_command("DEBUG", "POPULATE", "10") == b"OK"
    assert r.dbsize() == 10
    assert r.get("key:3") == b"value:3"
    r.execute_command("DEBUG", "POPULATE", "3", "p", "20")
    assert r.get("p:1") == b"value:1" + b"\x00" * 13
    r.execute_command("DEBUG", "POPULATE", "2", "q", "4")
    assert r.get("q:0") == b"valu"
    with pytest.raises(redis.ResponseError, match="^value is out of range, must be positive$"):
        r.execute_command("DEBUG", "POPULATE", "-1")


@pytest.mark.parametrize("proto", [2, 3])
def test_debug_protocol_like_redis(server, redis_server, proto):
    a = server.client(protocol=proto)
    b = redis_server.client(protocol=proto)
    for t in ("string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib",
              "verbatim", "true", "false", "push", "nosuch"):
        out = []
        for c in (a, b):
            try:
                out.append(c.execute_command("DEBUG", "PROTOCOL", t))
            except redis.ResponseError as e:
                out.append(str(e))
        assert out[0] == out[1], t


def test_debug_misc_and_errors(r):
    for args in (["CHANGE-REPL-ID"], ["QUICKLIST-PACKED-THRESHOLD", "100"], ["SET-SKIP-CHECKSUM-VALIDATION", "1"],
                 ["SET-DISABLE-DENY-SCRIPTS", "0"], ["PAUSE-CRON", "0"], ["REPLYBUFFER", "RESIZING", "1"],
                 ["REPLYBUFFER", "PEAK-RESET-TIME", "NEVER"], ["LOG", "hello"], ["AOF-FLUSH-SLEEP", "0"]):
        assert r.execute_command("DEBUG", *args) == b"OK", args
    # back to the defaults: the session's server serves other test files
    # afterwards (a RESTORE with a bad checksum must still be refused)
    for args in (["SET-SKIP-CHECKSUM-VALIDATION", "0"], ["QUICKLIST-PACKED-THRESHOLD", "1gb"],
                 ["REPLYBUFFER", "PEAK-RESET-TIME", "RESET"]):
        assert r.execute_command("DEBUG", *args) == b"OK", args
    with pytest.raises(redis.ResponseError, match="^argument must be a memory value bigger than 1 and smaller than 4gb$"):
        r.execute_command("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "5gb")
    with pytest.raises(redis.ResponseError, match="^unknown subcommand or wrong number of arguments for 'nope'. Try DEBUG HELP.$"):
        r.execute_command("DEBUG", "nope")
    with pytest.raises(redis.ResponseError, match="^unknown subcommand or wrong number of arguments for 'SLEEP'. Try DEBUG HELP.$"):
        r.execute_command("DEBUG", "SLEEP")
    with pytest.raises(redis.ResponseError, match="^DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.$"):
        r.execute_command("DEBUG", "RELOAD", "FOO")
    with pytest.raises(redis.ResponseError, match="^MYERR custom message$"):
        r.execute_command("DEBUG", "ERROR", "MYERR custom message")
    with pytest.raises(redis.ResponseError, match="^Out of range database$"):
        r.execute_command("DEBUG", "HTSTATS", "99")
    assert b"[Dictionary HT]" in r.execute_command("DEBUG", "HTSTATS", "0")
    h = r.execute_command("DEBUG", "HELP")
    assert h[0].startswith(b"DEBUG <subcommand>") and h[-1] == b"    Print this help."  # addReplyHelp's line since 7.2


def test_debug_reload_keeps_the_data(r):
    r.set("x", "1")
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    assert r.get("x") == b"1"


def test_debug_pause_cron_stops_active_expire(r):
    r.execute_command("DEBUG", "PAUSE-CRON", "1")
    try:
        r.execute_command("PSETEX", "k", 30, "v")
        time.sleep(0.4)
        assert r.dbsize() == 1
    finally:
        r.execute_command("DEBUG", "PAUSE-CRON", "0")


def test_debug_not_allowed_when_disabled(start_server):
    s = start_server()
    c = s.client()
    with pytest.raises(redis.ResponseError, match="^DEBUG command not allowed"):
        c.execute_command("DEBUG", "DIGEST")
    with pytest.raises(redis.ResponseError, match="^DEBUG command not allowed"):
        c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")


# -- LATENCY ---------------------------------------------------------------------------------------

@pytest.fixture
def lat(r):
    r.execute_command("LATENCY", "RESET")
    r.config_set("latency-monitor-threshold", 100)
    yield r
    r.config_set("latency-monitor-threshold", 0)
    r.execute_command("LATENCY", "RESET")


def test_latency_monitor_records_command_events(lat):
    assert lat.execute_command("LATENCY", "LATEST") == []
    # both samples must fall in the same wall-clock second (samples are per
    # second): start early in a second so that 0.4s of sleeps fit in it,
    # and try again when a busy machine made them cross into the next one
    for _ in range(20):
        lat.execute_command("LATENCY", "RESET")
        while time.time() % 1 > 0.15:
            time.sleep(0.02)
        t0 = time.time()
        lat.execute_command("DEBUG", "SLEEP", "0.25")
        lat.execute_command("DEBUG", "SLEEP", "0.15")   # same second: max kept
        if int(time.time()) == int(t0):
            break
    else:
        pytest.fail("the two sleeps never fitted in one second")
    latest = lat.execute_command("LATENCY", "LATEST")
    assert len(latest) == 1
    name, ts, last, mx = latest[0]
    assert name == b"command" and abs(ts - time.time()) < 60
    assert 250 <= mx < 10000 and last == mx        # milliseconds
    hist = lat.execute_command("LATENCY", "HISTORY", "command")
    assert len(hist) == 1 and hist[0][1] >= 250
    assert lat.execute_command("LATENCY", "HISTORY", "nosuch") == []


def test_latency_below_threshold_not_recorded(lat):
    # far above the 10 ms command, however busy the machine
    lat.config_set("latency-monitor-threshold", 5000)
    lat.execute_command("DEBUG", "SLEEP", "0.01")
    lat.get("x")
    assert lat.execute_command("LATENCY", "LATEST") == []


def test_latency_fast_command_event(server, lat):
    # A fast command taking long is a "fast-command" event.  Make GET slow
    # by asking for a huge value.
    lat.config_set("latency-monitor-threshold", 1)
    lat.set("big", b"x" * 50_000_000)
    for _ in range(5):
        lat.get("big")
    events = {e[0] for e in lat.execute_command("LATENCY", "LATEST")}
    lat.delete("big")
    assert b"fast-command" in events or b"command" in events


def test_latency_reset_graph_doctor(lat):
    lat.execute_command("DEBUG", "SLEEP", "0.12")
    g = lat.execute_command("LATENCY", "GRAPH", "command")
    assert g.startswith(b"command - high ") and b"(all time high " in g
    with pytest.raises(redis.ResponseError, match="^No samples available for event 'nosuch'$"):
        lat.execute_command("LATENCY", "GRAPH", "nosuch")
    doc = lat.execute_command("LATENCY", "DOCTOR")
    assert b"command" in doc
    assert lat.execute_command("LATENCY", "RESET", "nosuch") == 0
    assert lat.execute_command("LATENCY", "RESET", "COMMAND") == 1
    assert lat.execute_command("LATENCY", "LATEST") == []
    assert lat.execute_command("LATENCY", "DOCTOR")


def test_latency_help_and_errors(r):
    h = r.execute_command("LATENCY", "HELP")
    assert h[0].startswith(b"LATENCY <subcommand>") and h[-1] == b"    Print this help."  # addReplyHelp's line since 7.2
    with pytest.raises(redis.ResponseError, match="^unknown subcommand 'FOO'. Try LATENCY HELP.$"):
        r.execute_command("LATENCY", "FOO")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'latency\\|history' command"):
        r.execute_command("LATENCY", "HISTORY")


@pytest.mark.parametrize("proto", [2, 3])
def test_latency_histogram_shape(server, proto):
    c = server.client(protocol=proto)
    c.config_resetstat()
    for _ in range(10):
        c.set("a", "b")
    c.execute_command("CONFIG", "GET", "maxmemory")
    h = c.execute_command("LATENCY", "HISTOGRAM", "set", "config", "nosuch")
    if proto == 2:
        h = dict(zip(h[::2], h[1::2]))
        h = {k: dict(zip(v[::2], v[1::2])) for k, v in h.items()}
    assert set(h) == {b"set", b"config|get", b"config|resetstat"}
    s = h[b"set"]
    assert s[b"calls"] == 10
    cdf = s[b"histogram_usec"]
    if proto == 2:
        cdf = dict(zip(cdf[::2], cdf[1::2]))
    keys = sorted(cdf)
    assert all(k >= 1 for k in keys) and max(cdf.values()) == 10
    assert [cdf[k] for k in keys] == sorted(cdf[k] for k in keys)   # cumulative
    # every bucket boundary is a power of two step of 1.024us
    assert all(k in {(1024 << i) // 1000 for i in range(40)} for k in keys)
    allh = c.execute_command("LATENCY", "HISTOGRAM")
    assert len(allh) >= (2 if proto == 3 else 4)
    c.config_set("latency-tracking", "no")
    try:
        c.config_resetstat()
        c.set("a", "b")
        assert not c.execute_command("LATENCY", "HISTOGRAM", "set")
    finally:
        c.config_set("latency-tracking", "yes")


def test_info_latencystats(r):
    r.config_resetstat()
    r.set("a", "b")
    info = r.info("latencystats")
    assert "latency_percentiles_usec_set" in info
    assert set(info["latency_percentiles_usec_set"]) == {"p50", "p99", "p99.9"}


def test_expire_cycle_event(lat):
    # Many keys expiring at once make the active cycle take measurable time.
    lat.config_set("latency-monitor-threshold", 1)
    lat.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        pipe = lat.pipeline(transaction=False)
        for i in range(200_000):
            pipe.psetex("k%d" % i, 100, "v")
        pipe.execute()
        time.sleep(0.2)
    finally:
        lat.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    wait_until(lambda: lat.dbsize() == 0, 60, what="the active expiry of 200000 keys")
    events = {e[0] for e in lat.execute_command("LATENCY", "LATEST")}
    assert b"expire-cycle" in events


def _doctor_report(c, threshold, slower, sleep):
    """LATENCY DOCTOR's text on c for: no events (threshold 0), then after a
    DEBUG SLEEP with the given thresholds; numbers masked (ms and periods
    differ from run to run)."""
    c.execute_command("LATENCY", "RESET")
    c.config_set("latency-monitor-threshold", 0)
    out = [c.execute_command("LATENCY", "DOCTOR")]
    c.config_set("latency-monitor-threshold", threshold)
    c.config_set("slowlog-log-slower-than", slower)
    out.append(c.execute_command("LATENCY", "DOCTOR"))
    c.execute_command("DEBUG", "SLEEP", sleep)
    out.append(c.execute_command("LATENCY", "DOCTOR"))
    c.execute_command("LATENCY", "RESET")
    c.config_set("latency-monitor-threshold", 0)
    c.config_set("slowlog-log-slower-than", 10000)
    return [re.sub(rb"\d+(\.\d+)?", b"N", t) for t in out]


def test_latency_doctor_reports_as_redis(r, ref):
    """The same events give redis-server's report (advice texts included)."""
    for slower in (100000, -1):
        ours = _doctor_report(r, 10, slower, "0.03")
        theirs = _doctor_report(ref, 10, slower, "0.03")
        assert ours == theirs
    assert ours[0].startswith(b"I'm sorry, Dave, I can't do that.")
    assert ours[1].startswith(b"Dave, no latency spike was observed")
    assert b"N. command: N latency spikes" in ours[2] and b"I have a few advices for you:" in ours[2]
    assert b"- Check your Slow Log to understand" in ours[2]
    assert b"Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than N'" in ours[2]
