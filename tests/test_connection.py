"""Connection commands, auth, protected mode, limits, unix sockets."""

import os
import socket
import struct
import subprocess
import time

import pytest
import redis
from redis.exceptions import AuthenticationError, ResponseError

from support.resp import RespConn, exchange
from support.wait import wait_port, wait_until


def err(fn, *a):
    with pytest.raises(ResponseError) as e:
        fn(*a)
    return str(e.value)


def test_ping_echo(r, raw):
    assert r.ping() is True
    assert raw("PING", "hello") == b"$5\r\nhello\r\n"
    assert r.echo("x") == b"x"
    assert err(r.execute_command, "PING", "a", "b") == "wrong number of arguments for 'ping' command"


def test_select(r, server, raw):
    assert raw("SELECT", "1") == b"+OK\r\n"
    assert err(r.execute_command, "SELECT", 16) == "DB index is out of range"
    assert err(r.execute_command, "SELECT", "x") == "value is not an integer or out of range"
    assert err(r.execute_command, "SELECT", -1) == "DB index is out of range"


def test_quit(server):
    s = RespConn(server.port)
    s.send_raw(b"QUIT\r\n")
    assert s.read_until_closed() == b"+OK\r\n"      # and closed


def test_reset(server, raw):
    out = exchange(server.port, b"SELECT 2\r\nCLIENT SETNAME foo\r\nRESET\r\nCLIENT GETNAME\r\n")
    assert out == b"+OK\r\n+OK\r\n+RESET\r\n$-1\r\n"


def test_hello(server, raw):
    s = RespConn(server.port)
    s.send_raw(b"HELLO 3 SETNAME myname\r\n")
    out = s.read()
    assert out.startswith(b"%7\r\n")
    assert b"$5\r\nproto\r\n:3\r\n" in out
    s.send_raw(b"CLIENT GETNAME\r\n")
    assert s.quit_and_read() == b"$6\r\nmyname\r\n"
    assert raw("HELLO", "4") == b"-NOPROTO unsupported protocol version\r\n"
    assert raw("HELLO", "x") == b"-ERR Protocol version is not an integer or out of range\r\n"
    assert raw("HELLO", "2", "FOO") == b"-ERR Syntax error in HELLO option 'FOO'\r\n"
    out = raw("HELLO")
    assert out.startswith(b"*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n")


def test_requirepass(start_server):
    s = start_server("--requirepass", "secret")
    # without CLIENT SETINFO at connect: since Redis 7.2 it is a command that
    # needs authentication, so its NOAUTH would fail redis-py's handshake
    c = s.client(lib_name=None, lib_version=None)
    with pytest.raises(AuthenticationError) as e:
        c.get("x")
    assert str(e.value) == "Authentication required."
    raw0 = RespConn(s.port)
    raw0.send_raw(b"GET x\r\n")
    assert raw0.quit_and_read() == b"-NOAUTH Authentication required.\r\n"
    with pytest.raises(AuthenticationError):
        c.execute_command("AUTH", "wrong")
    assert c.execute_command("AUTH", "secret") is True
    assert c.set("x", 1) is True
    c2 = s.client(password="secret")
    assert c2.get("x") == b"1"
    c3 = s.client(username="default", password="secret")
    assert c3.ping()
    raw = RespConn(s.port)
    raw.send_raw(b"HELLO 3\r\n")
    assert raw.read().startswith(b"-NOAUTH HELLO must be called with the client already authenticated")
    raw.send_raw(b"HELLO 3 AUTH default secret\r\n")
    assert raw.read().startswith(b"%7")
    assert raw.quit_and_read() == b""
    raw2 = RespConn(s.port)
    raw2.send_raw(b"*11\r\n" + b"$1\r\nx\r\n" * 11)
    assert raw2.read_until_closed() == b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    raw3 = RespConn(s.port)
    raw3.send_raw(b"*2\r\n$4\r\nAUTH\r\n$20000\r\n")
    assert raw3.read_until_closed() == b"-ERR Protocol error: unauthenticated bulk length\r\n"


def test_auth_without_password(r, raw):
    assert raw("AUTH", "x") == (
        b"-ERR AUTH <password> called without any password configured for the default user. "
        b"Are you sure your configuration is correct?\r\n")
    assert raw("AUTH", "default", "anything") == b"+OK\r\n"
    assert raw("AUTH", "nouser", "x") == b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"


def test_maxclients(start_server):
    s = start_server("--maxclients", "2")
    a = RespConn(s.port)
    b = RespConn(s.port)
    # both are the server's clients once they are answered
    assert a.call("PING") == b"+PONG\r\n" and b.call("PING") == b"+PONG\r\n"
    c = RespConn(s.port)
    assert c.read_until_closed() == b"-ERR max number of clients reached\r\n"
    a.send_raw(b"PING\r\n")
    assert a.quit_and_read() == b"+PONG\r\n"
    b.close()


def test_idle_timeout(start_server):
    s = start_server("--timeout", "1")
    a = RespConn(s.port)
    a.send_raw(b"PING\r\n")
    assert a.read() == b"+PONG\r\n"
    assert a.read_until_closed(5) == b""


def test_unix_socket(start_server, tmp_path):
    path = str(tmp_path / "o.sock")
    s = start_server("--unixsocket", path, "--unixsocketperm", "700")
    wait_port(None, s.proc, 10, unix=path)  # TCP listens first
    c = redis.Redis(unix_socket_path=path)
    assert c.ping()
    assert oct(os.stat(path).st_mode & 0o777) == "0o700"
    info = c.client_info()
    assert "U" in info["flags"]


def test_protected_mode_refuses_non_loopback(start_server):
    # Find a non-loopback address of this machine to connect from.
    addr = None
    try:
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.connect(("10.255.255.255", 1))  # no traffic is sent for UDP connect
        addr = probe.getsockname()[0]
        probe.close()
    except OSError:
        pass
    if not addr or addr.startswith("127."):
        pytest.skip("no non-loopback address on this machine")
    s = start_server("--bind", "127.0.0.1 " + addr)
    # start_server waits for 127.0.0.1; the second address listens a moment later
    def connected():
        try:
            return RespConn(s.port, addr, timeout=5)
        except ConnectionRefusedError:
            return None
    c = wait_until(connected, 5, 0.05, what="the second address")
    out = c.read_until_closed()
    assert out.startswith(b"-DENIED Redis is running in protected mode")


def _from_127_0_0_2(port) -> bytes:
    """What a server on 127.0.0.1:port sends a client whose address is
    127.0.0.2 (loopback for Linux, not for Redis's islocalClient) before
    it closes."""
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.connect(("127.0.0.1", port))
    return RespConn(sock=s).read_until_closed()


def test_protected_mode_denied_text_as_redis_server(start_server, redis_server):
    """Protected mode (no password for the default user): a connection
    from 127.0.0.2 gets Redis's DENIED text, byte for byte, and is closed;
    it is counted as rejected, not as received; 127.0.0.1 is served."""
    ours = start_server()
    replies = []
    for port in (ours.port, redis_server.port):
        c = redis.Redis(port=port)
        before = c.info("stats")
        replies.append(_from_127_0_0_2(port))
        after = c.info("stats")
        assert after["rejected_connections"] == before["rejected_connections"] + 1
        # the INFO connection counts, the refused one does not
        assert after["total_connections_received"] == before["total_connections_received"]
        assert c.ping()
        c.close()
    assert replies[0] == replies[1]
    assert replies[0].startswith(b"-DENIED Redis is running in protected mode because protected mode is enabled")
    # a password for the default user (ACL SETUSER as well as requirepass),
    # or protected-mode no: served
    for port in (ours.port, redis_server.port):
        redis.Redis(port=port).execute_command("ACL", "SETUSER", "default", ">pw")
        s = socket.socket()
        s.bind(("127.0.0.2", 0))
        s.connect(("127.0.0.1", port))
        c = RespConn(sock=s)
        c.send(b"PING")
        assert c.read() == b"-NOAUTH Authentication required.\r\n"
        c.close()
        redis.Redis(port=port, password="pw").execute_command("ACL", "SETUSER", "default", "nopass")
    ours.client().config_set("protected-mode", "no")
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.connect(("127.0.0.1", ours.port))
    c = RespConn(sock=s)
    c.send(b"PING")
    assert c.read() == b"+PONG\r\n"
    c.close()


def test_client_commands(r, server):
    cid = r.client_id()
    assert isinstance(cid, int)
    assert r.client_setname("conn1") is True
    assert r.client_getname() == b"conn1" or r.client_getname() == "conn1"
    assert err(r.execute_command, "CLIENT", "SETNAME", "a b") == \
        "Client names cannot contain spaces, newlines or special characters."
    lst = r.execute_command("CLIENT", "LIST")
    assert b"name=conn1" in lst and b"id=%d" % cid in lst
    info = r.execute_command("CLIENT", "INFO")
    assert info.startswith(b"id=%d addr=" % cid)
    assert b"cmd=client|info" in info
    other = server.client()
    other.ping()
    oid = other.client_id()
    assert r.execute_command("CLIENT", "KILL", "ID", oid) == 1
    wait_until(lambda: b"id=%d " % oid not in r.execute_command("CLIENT", "LIST"), 20, what="the killed client gone")
    assert err(r.execute_command, "CLIENT", "KILL", "1.2.3.4:5") == "No such client"
    assert err(r.execute_command, "CLIENT", "LIST", "TYPE", "foo") == "Unknown client type 'foo'"
    assert err(r.execute_command, "CLIENT", "PAUSE", "100", "FOO") == "CLIENT PAUSE mode must be WRITE or ALL"
    assert err(r.execute_command, "CLIENT", "FOO") == "unknown subcommand 'FOO'. Try CLIENT HELP."
    assert err(r.execute_command, "CLIENT", "KILL") == "wrong number of arguments for 'client|kill' command"


def test_client_reply(server):
    s = RespConn(server.port)
    s.send_raw(b"CLIENT REPLY OFF\r\nPING\r\nCLIENT REPLY ON\r\nPING\r\n")
    assert s.read_replies(2) == b"+OK\r\n+PONG\r\n"
    s.send_raw(b"CLIENT REPLY SKIP\r\nPING\r\nECHO a\r\n")
    assert s.quit_and_read() == b"$1\r\na\r\n"    # nothing more from the first batch either


def test_client_pause(r, server):
    other = server.client()
    t0 = time.time()                # the pause starts after this
    r.execute_command("CLIENT", "PAUSE", "3000", "WRITE")
    assert other.get("x") is None  # reads are not paused
    assert time.time() - t0 < 2.5   # (a paused read would wait for the 3 s)
    other.set("x", 1)
    assert time.time() - t0 >= 2.95
    r.execute_command("CLIENT", "PAUSE", "5000")
    r.execute_command("CLIENT", "UNPAUSE")
    t0 = time.time()
    assert other.get("x") == b"1"
    assert time.time() - t0 < 4     # (a generous bound, under the pause's 5 s)


def test_many_pipelined_commands(r):
    p = r.pipeline(transaction=False)
    for i in range(5000):
        p.incr("counter")
    res = p.execute()
    assert res[-1] == 5000


def test_redis_cli_works(server):
    out = subprocess.run(["redis-cli", "-p", str(server.port), "SET", "clik", "v"], capture_output=True, text=True)
    assert out.stdout.strip() == "OK"
    out = subprocess.run(["redis-cli", "-p", str(server.port), "GET", "clik"], capture_output=True, text=True)
    assert out.stdout.strip() == "v"


def test_config_set_bind_on_the_same_port(start_server):
    """New addresses on the same port replace the listeners (the old ones
    are closed first, as Redis's changeBindAddr); addresses that cannot be
    bound give the error and the old listeners come back."""
    s = start_server("--bind", "* -::*")
    c = s.client()
    assert c.config_set("bind", "127.0.0.1 -::1")
    assert c.config_get("bind") == {"bind": "127.0.0.1 -::1"}
    with pytest.raises(redis.ResponseError, match="Failed to bind to specified addresses"):
        c.config_set("bind", "192.0.2.1")
    assert c.config_get("bind") == {"bind": "127.0.0.1 -::1"}
    assert redis.Redis(port=s.port).ping()      # a new connection is served


def test_config_set_bind_empty_stops_listening(start_server):
    s = start_server("--unixsocket", "ophidis.sock")
    c = s.client()
    assert c.config_set("bind", "")
    assert c.config_get("bind") == {"bind": ""}
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=s.port, socket_connect_timeout=2).ping()
    u = redis.Redis(unix_socket_path=os.path.join(s.dir, "ophidis.sock"))
    assert u.ping()                  # the unix socket still serves
    assert c.ping()                  # and so do the connections already open


@pytest.mark.parametrize("request_bytes", [
    b"*3\r\n$5\r\nBLPOP\r\n$4\r\nlist\r\n$1\r\n0\r\n",     # a command nothing answers yet
    b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nabc",           # a command not complete
])
def test_a_peer_reset_behind_unanswered_bytes_ends_the_client(start_server, request_bytes):
    """A client whose last bytes and reset (RST) reach the server together:
    the bytes are read, nothing answers them, and the reset must still end
    the client (uvloop stops watching a socket with an error after one more
    read callback, so the compiled transport reads again until the socket
    is empty)."""
    s = start_server("--enable-debug-command", "yes")
    r = s.client()
    c = socket.create_connection(("127.0.0.1", s.port))
    try:
        c.sendall(b"PING\r\n")
        assert c.recv(100) == b"+PONG\r\n"
        # keep the server busy while the bytes and the reset arrive
        busy = socket.create_connection(("127.0.0.1", s.port))
        busy.sendall(b"DEBUG SLEEP 0.5\r\n")
        time.sleep(0.1)
        c.sendall(request_bytes)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()                    # RST at once
        assert busy.recv(100) == b"+OK\r\n"
        busy.close()
        wait_until(lambda: len(r.client_list()) == 1, timeout=10, what="the reset client to be gone")
        assert r.info("clients")["blocked_clients"] == 0
    finally:
        c.close()
        r.close()
