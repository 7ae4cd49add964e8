"""SLOWLOG, INFO sections and counters, TIME/LASTSAVE/WAIT, start-up warnings."""

import threading
import time

import pytest
from redis.exceptions import ResponseError

from ophidis.sysinfo import REDIS_VERSION
from support.resp import RespConn, command
from support.servers import RedisServerProc
from support.wait import wait_until


def test_slowlog(r):
    r.config_set("slowlog-log-slower-than", 0)
    try:
        r.slowlog_reset()
        r.set("a", "b" * 200)
        r.execute_command("MGET", *["x"] * 40)
        entries = r.execute_command("SLOWLOG", "GET", "-1")
        assert r.slowlog_len() >= 2
        # newest first: [id, time, duration, argv, addr, name]
        argvs = [e[3] for e in entries]
        echo = [a for a in argvs if a[0] == b"MGET"][0]
        assert len(echo) == 32 and echo[-1] == b"... (10 more arguments)"
        setargs = [a for a in argvs if a[0].upper() == b"SET"][0]
        assert setargs[2] == b"b" * 128 + b"... (72 more bytes)"
        e = entries[0]
        assert isinstance(e[0], int) and abs(e[1] - time.time()) < 5 and e[2] >= 0
        assert e[4].startswith(b"127.0.0.1:")
        assert len(r.execute_command("SLOWLOG", "GET", "1")) == 1
        with pytest.raises(ResponseError) as ex:
            r.execute_command("SLOWLOG", "GET", "-2")
        assert str(ex.value) == "count should be greater than or equal to -1"
        r.config_set("slowlog-max-len", 3)
        for i in range(10):
            r.ping()
        assert r.slowlog_len() == 3
        assert r.slowlog_reset()
        assert r.slowlog_len() in (0, 1)
    finally:
        r.config_set("slowlog-log-slower-than", 10000)
        r.config_set("slowlog-max-len", 128)


def test_slowlog_threshold_respected(r, config):
    config.keep(r, "slowlog-log-slower-than")
    r.config_set("slowlog-log-slower-than", 100000)
    r.slowlog_reset()
    r.set("x", 1)
    assert r.slowlog_len() == 0
    r.config_set("slowlog-log-slower-than", -1)
    r.execute_command("DEBUG", "SLEEP", "0.01")
    assert r.slowlog_len() == 0


EXPORTER_FIELDS = {
    "server": ["redis_version", "ophidis_version", "redis_mode", "os", "arch_bits", "process_id", "tcp_port",
               "uptime_in_seconds", "uptime_in_days", "hz", "configured_hz", "executable", "config_file", "run_id"],
    "clients": ["connected_clients", "blocked_clients", "maxclients", "tracking_clients"],
    "memory": ["used_memory", "used_memory_human", "used_memory_rss", "used_memory_peak", "maxmemory",
               "maxmemory_policy", "mem_fragmentation_ratio", "total_system_memory", "used_memory_dataset"],
    "persistence": ["loading", "rdb_changes_since_last_save", "rdb_bgsave_in_progress", "rdb_last_save_time",
                    "rdb_last_bgsave_status", "aof_enabled"],
    "stats": ["total_connections_received", "total_commands_processed", "instantaneous_ops_per_sec",
              "total_net_input_bytes", "total_net_output_bytes", "rejected_connections", "expired_keys",
              "evicted_keys", "keyspace_hits", "keyspace_misses", "pubsub_channels", "pubsub_patterns",
              "total_error_replies", "expired_stale_perc"],
    "replication": ["role", "connected_slaves", "master_repl_offset", "master_replid"],
    "cpu": ["used_cpu_sys", "used_cpu_user"],
}


def test_info_sections_and_fields(r):
    info = r.info("everything")
    for section, fields in EXPORTER_FIELDS.items():
        sec = r.info(section)
        for f in fields:
            assert f in sec, (section, f)
            assert f in info
    assert info["redis_version"] == REDIS_VERSION
    assert info["redis_mode"] == "standalone"
    raw = raw_info(r, "server", "clients")
    assert raw.startswith(b"# Server\r\n") and b"\r\n\r\n# Clients\r\n" in raw
    assert b"# Keyspace" not in raw
    default = raw_info(r)
    assert b"# Commandstats" not in default and b"# Keyspace" in default
    assert b"# Commandstats" in raw_info(r, "all")


def raw_info(r, *sections):
    out = command(r.connection_pool.connection_kwargs["port"], "INFO", *sections)
    assert out.startswith(b"$")
    return out.split(b"\r\n", 1)[1]


def test_info_counters(r, server):
    r.config_resetstat()
    r.set("k", "v")
    r.get("k")
    r.get("missing")
    with pytest.raises(ResponseError):
        r.execute_command("INCR", "k")
    with pytest.raises(ResponseError):
        r.execute_command("NOSUCHCMD")
    st = r.info("stats")
    assert st["keyspace_hits"] == 1 and st["keyspace_misses"] == 1
    assert st["total_error_replies"] == 2
    errs = r.info("errorstats")
    assert errs["errorstat_ERR"]["count"] == 2
    cs = r.info("commandstats")
    assert cs["cmdstat_get"]["calls"] == 2
    assert cs["cmdstat_incr"]["failed_calls"] == 1
    assert cs["cmdstat_set"]["calls"] == 1 and cs["cmdstat_set"]["usec"] >= 0
    before = st["total_net_input_bytes"]
    r.set("x", "y" * 1000)
    assert r.info("stats")["total_net_input_bytes"] >= before + 1000
    # instantaneous_ops_per_sec under load
    c = server.client()
    t0 = time.time()
    while time.time() - t0 < 1.0:
        p = c.pipeline(transaction=False)
        for _ in range(200):
            p.ping()
        p.execute()
    assert r.info("stats")["instantaneous_ops_per_sec"] > 0
    assert r.info("commandstats")["cmdstat_ping"]["calls"] >= 200


def test_time_lastsave_wait(r):
    sec, usec = r.time()
    assert abs(sec - time.time()) < 5 and 0 <= usec < 1000000
    assert abs(r.lastsave().timestamp() - time.time()) < 3600 * 24 * 365
    assert r.execute_command("WAIT", 0, 100) == 0
    with pytest.raises(ResponseError) as e:
        r.execute_command("WAIT", 0, -1)
    assert str(e.value) == "timeout is negative"


def test_startup_logo_has_redis_fields(start_server):
    """always-show-logo yes: the logo's fields are redis-server's (Redis's
    test suite finds a started server by its " PID: <pid>" line), not the
    one-line "Running mode=" notice."""
    s = start_server("--always-show-logo", "yes")
    wait_until(lambda: "Ready to accept connections" in s.output(), 10, what="start-up")
    out = s.output()
    assert " PID: %d\n" % s.pid in out
    assert "Port: %d\n" % s.port in out and "Running in standalone mode" in out
    assert "Running mode=" not in out
    ref = RedisServerProc(["--always-show-logo", "yes"])
    try:
        theirs = ref.output()
    finally:
        ref.stop(remove=True)
    for field in ("PID: ", "Port: ", "Running in standalone mode", " 64 bit"):
        assert field in theirs and field in out


def test_startup_log_and_warnings(start_server):
    s = start_server()
    out = s.output()
    assert "Ready to accept connections" in out
    assert "Running mode=standalone, port=%d." % s.port in out
    with open("/proc/sys/vm/overcommit_memory") as f:
        overcommit = f.read().strip()
    assert ("overcommit_memory" in out) == (overcommit != "1")
    try:
        with open("/proc/sys/net/core/somaxconn") as f:
            somax = int(f.read())
    except OSError:
        somax = None
    if somax is not None:
        assert ("TCP backlog setting of 511" in out) == (somax < 511)


def test_sensitive_arguments_redacted_as_redis_74(r):
    """Redis 7.4 made tls-key-file-pass and tls-client-key-file-pass
    sensitive (CONFIG SET of them shows (redacted)) and hides the user
    names ACL GETUSER and ACL DELUSER are given, in SLOWLOG (MONITOR shows
    no admin command)."""
    r.config_set("slowlog-log-slower-than", "0")
    try:
        r.slowlog_reset()
        r.config_set("tls-key-file-pass", "")
        r.config_set("tls-client-key-file-pass", "")
        r.config_set("tls-ciphersuites", "")
        r.execute_command("ACL", "SETUSER", "slowlog-test-user", "+get")
        r.execute_command("ACL", "GETUSER", "slowlog-test-user")
        r.execute_command("ACL", "DELUSER", "slowlog-test-user", "non-existing-user")
        r.echo("end")
        cmds = [e["command"] for e in r.slowlog_get(10)][::-1]
    finally:
        r.config_set("slowlog-log-slower-than", "10000")
    assert cmds[1:] == [b"CONFIG SET tls-key-file-pass (redacted)",
                        b"CONFIG SET tls-client-key-file-pass (redacted)",
                        b"CONFIG SET tls-ciphersuites ",        # (not sensitive: as given)
                        b"ACL SETUSER (redacted) (redacted)", b"ACL GETUSER (redacted)",
                        b"ACL DELUSER (redacted) (redacted)", b"ECHO end"], cmds


def test_slowlog_and_monitor_redact_secrets(start_server):
    """Passwords never reach SLOWLOG or MONITOR: AUTH, HELLO ... AUTH and
    sensitive CONFIG SET values show as (redacted), as in Redis 7.0."""
    s = start_server("--requirepass", "pw")
    c = s.client(password="pw")
    mon = RespConn(s.port)
    mon.send_raw(b"AUTH pw\r\nMONITOR\r\n")
    assert mon.read_replies(2) == b"+OK\r\n+OK\r\n"
    c.config_set("slowlog-log-slower-than", "0")
    c.config_set("masterauth", "topsecret")
    c.execute_command("HELLO", "2", "AUTH", "default", "pw", "SETNAME", "n1")
    c.execute_command("AUTH", "pw")
    c.execute_command("ECHO", "monitor-end")
    seen = b""
    while b'"ECHO" "monitor-end"' not in seen:
        seen += mon.read()
    mon.close()
    log = c.slowlog_get(20)
    args = [a for e in log for a in e["command"].split()]
    assert b"pw" not in args and b"topsecret" not in args
    assert b"masterauth (redacted)" in b" ".join(e["command"] for e in log)
    assert b'"HELLO" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "n1"' in seen
    assert b'"AUTH" "(redacted)"' in seen and b"pw" not in seen.replace(b"(redacted)", b"")


def test_slowlog_logs_a_served_blocked_command_as_sent(server, r):
    r.config_set("slowlog-log-slower-than", "0")
    try:
        other = server.client()
        got = []
        th = threading.Thread(target=lambda: got.append(other.blpop("bl", 0)))
        th.start()
        wait_until(lambda: r.info("clients")["blocked_clients"], 5, 0.01, what="BLPOP to block")
        r.slowlog_reset()
        r.lpush("bl", "foo")
        th.join(5)
        other.close()
        assert got == [(b"bl", b"foo")]
        assert r.slowlog_get(1)[0]["command"] == b"BLPOP bl 0"
    finally:
        r.config_set("slowlog-log-slower-than", "10000")


def _errorstats_after_1100_codes(c):
    c.config_resetstat()
    script = "return redis.error_reply(string.format('%s my error message', ARGV[1]))"
    for j in range(1, 1101):
        with pytest.raises(ResponseError, match="^%d my error message" % j):
            c.eval(script, 0, j)
    c.set("x", "y")
    with pytest.raises(ResponseError):
        c.incr("x")
    return c.info("errorstats"), c.info("stats")["total_error_replies"]


def test_errorstats_stop_at_128_codes(start_server):
    # incrementErrorCount (7.2+): past 128 error codes the table is
    # dropped for one ERRORSTATS_DISABLED entry, counting stops (an
    # existing code too) until CONFIG RESETSTAT, and the codes are logged
    # (Redis 7.4.1's unit/info "limit errors will not increase
    # indefinitely"; valkey-server 9.1 has no such limit)
    s = start_server()
    c = s.client()
    assert _errorstats_after_1100_codes(c) == ({"errorstat_ERRORSTATS_DISABLED": {"count": 1}}, 1101)
    out = s.output()
    assert out.count("Errorstats stopped adding new errors because the number of errors reached the limit") == 1
    codes = [ln for ln in out.splitlines() if "Current errors code list: " in ln]
    assert len(codes) == 1 and codes[0].endswith("Current errors code list: %s"
                                                 % ", ".join(sorted(str(j) for j in range(1, 129))))
    # the dropped table (more than 64 codes) counts as freed in the background
    assert c.info("memory")["lazyfreed_objects"] == 128
    c.config_resetstat()
    with pytest.raises(ResponseError):
        c.incr("x")
    assert c.info("errorstats") == {"errorstat_ERR": {"count": 1}}
