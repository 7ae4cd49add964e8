"""Small server behaviours found by Redis's own test suite."""

from support.resp import RespConn
from support.wait import wait_until


def _info_blocked(r):
    return r.info("clients")["blocked_clients"]


def _wait_one_blocked(r):
    wait_until(lambda: _info_blocked(r) == 1, 5, 0.01, what="one blocked client")


def test_clients_postponed_by_pause_count_as_blocked(server, r):
    r.execute_command("CLIENT", "PAUSE", 60000, "WRITE")
    s = RespConn(server.port, timeout=5)
    try:
        s.send_raw(b"*3\r\n$3\r\nSET\r\n$3\r\nFOO\r\n$3\r\nBAR\r\n")
        _wait_one_blocked(r)
        r.execute_command("CLIENT", "UNPAUSE")
        assert s.read() == b"+OK\r\n"
        assert _info_blocked(r) == 0
    finally:
        r.execute_command("CLIENT", "UNPAUSE")
        s.close()


def test_pause_write_postpones_exec_of_a_write_transaction(server, r):
    s = RespConn(server.port, timeout=5)
    try:
        s.send_raw(b"MULTI\r\nSET FOO BAR\r\n")
        assert s.read_replies(2) == b"+OK\r\n+QUEUED\r\n"
        r.execute_command("CLIENT", "PAUSE", 60000, "WRITE")
        s.send_raw(b"EXEC\r\n")
        _wait_one_blocked(r)
        r.execute_command("CLIENT", "UNPAUSE")
        assert s.read() == b"*1\r\n+OK\r\n"
    finally:
        r.execute_command("CLIENT", "UNPAUSE")
        s.close()


def test_pause_write_lets_no_writes_scripts_run(server, r):
    r.function_load("#!lua name=f1\nredis.register_function{function_name='f1', "
                    "callback=function() return 'hello' end, flags={'no-writes'}}", replace=True)
    r.execute_command("CLIENT", "PAUSE", 60000, "WRITE")
    try:
        c = server.client()
        assert c.eval("#!lua flags=no-writes\nreturn 'unique script'", 0) == b"unique script"
        sha = c.script_load("#!lua flags=no-writes\nreturn 2")
        assert c.evalsha(sha, 0) == 2
        assert c.fcall("f1", 0) == b"hello"
        c.close()
        # A script without the flag waits for the end of the pause.
        s = RespConn(server.port, timeout=5)
        s.send_raw(b"EVAL \"return 1\" 0\r\n")
        _wait_one_blocked(r)
        r.execute_command("CLIENT", "UNPAUSE")
        assert s.read() == b":1\r\n"
        s.close()
    finally:
        r.execute_command("CLIENT", "UNPAUSE")
        r.function_flush()


def test_pause_write_runs_queued_no_writes_scripts(server, r):
    """EXEC of no-writes scripts is not a write: it runs during the pause."""
    r.execute_command("CLIENT", "PAUSE", 60000, "WRITE")
    s = RespConn(server.port, timeout=5)
    try:
        assert s.call("MULTI") == b"+OK\r\n"
        for n in (12, 13):
            assert s.call("EVAL", "#!lua flags=no-writes\nreturn %d" % n, 0) == b"+QUEUED\r\n"
        assert s.call("EXEC") == b"*2\r\n:12\r\n:13\r\n"
    finally:
        r.execute_command("CLIENT", "UNPAUSE")
        s.close()


def test_keys_expire_for_readers_but_stay_during_a_pause(r, ref):
    """While clients are paused, an expired key reads as missing but is not
    deleted (no DEL to propagate); the pause over, it is."""
    for c in (r, ref):
        c.config_resetstat()
        p = c.pipeline(transaction=True)
        p.set("foo", "bar", px=10)
        p.set("bar", "foo", px=10)
        p.execute_command("CLIENT", "PAUSE", 50000, "WRITE")
        p.execute()
        try:
            wait_until(lambda: c.get("foo") is None and c.get("bar") is None, 5, 0.01)
            assert c.info("stats")["expired_keys"] == 0
            assert c.dbsize() == 2
        finally:
            c.execute_command("CLIENT", "UNPAUSE")
        assert c.get("foo") is None and c.get("bar") is None
        assert c.info("stats")["expired_keys"] == 2


def _fields(line):
    return dict(kv.split("=", 1) for kv in line.split())


def test_client_list_and_info_count_the_running_command_in_qbuf(r):
    info = _fields(r.execute_command("CLIENT", "INFO").decode().strip())
    assert (info["qbuf"], info["argv-mem"], info["cmd"]) == ("26", "10", "client|info")
    myid = r.client_id()
    lines = r.execute_command("CLIENT", "LIST", "ID", myid, 999999).decode().splitlines()
    me = _fields(lines[0])
    # *5 $6 client $4 list $2 id $N <id> $6 999999
    sid = str(myid)
    expected = 4 + 12 + 10 + 8 + len("$%d\r\n" % len(sid)) + len(sid) + 2 + 12
    assert me["qbuf"] == str(expected)
    assert me["argv-mem"] == str(6 + 4 + 2 + len(sid) + 6)
