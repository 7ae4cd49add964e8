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
