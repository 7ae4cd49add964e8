"""Small server behaviours found by Redis's own test suite."""

import socket
import time


def _info_blocked(r):
    return r.info("clients")["blocked_clients"]


def test_clients_postponed_by_pause_count_as_blocked(server, r):
    r.execute_command("CLIENT", "PAUSE", 60000, "WRITE")
    s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        s.sendall(b"*3\r\n$3\r\nSET\r\n$3\r\nFOO\r\n$3\r\nBAR\r\n")
        deadline = time.time() + 5
        while _info_blocked(r) != 1 and time.time() < deadline:
            time.sleep(0.01)
        assert _info_blocked(r) == 1
        r.execute_command("CLIENT", "UNPAUSE")
        assert s.recv(100) == b"+OK\r\n"
        assert _info_blocked(r) == 0
    finally:
        r.execute_command("CLIENT", "UNPAUSE")
        s.close()


def test_pause_write_postpones_exec_of_a_write_transaction(server, r):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        s.sendall(b"MULTI\r\nSET FOO BAR\r\n")
        got = b""
        while got.count(b"\r\n") < 2:
            got += s.recv(100)
        assert got == b"+OK\r\n+QUEUED\r\n"
        r.execute_command("CLIENT", "PAUSE", 60000, "WRITE")
        s.sendall(b"EXEC\r\n")
        deadline = time.time() + 5
        while _info_blocked(r) != 1 and time.time() < deadline:
            time.sleep(0.01)
        assert _info_blocked(r) == 1
        r.execute_command("CLIENT", "UNPAUSE")
        assert s.recv(100) == b"*1\r\n+OK\r\n"
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
        s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        s.sendall(b"EVAL \"return 1\" 0\r\n")
        deadline = time.time() + 5
        while _info_blocked(r) != 1 and time.time() < deadline:
            time.sleep(0.01)
        assert _info_blocked(r) == 1
        r.execute_command("CLIENT", "UNPAUSE")
        assert s.recv(100) == b":1\r\n"
        s.close()
    finally:
        r.execute_command("CLIENT", "UNPAUSE")
        r.function_flush()


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
