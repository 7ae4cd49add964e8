"""TLS (tls-port, tls-auth-clients, tls-replication, tls-cluster, CONFIG SET
of the TLS files) against real clients (redis-cli --tls, redis-py ssl=True,
ophidis-cli/-benchmark --tls) and Debian's redis-server built with TLS, with
certificates made by openssl for the session (support/tls.py)."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys

import pytest
import redis

from support.cluster import cluster_ports
from support.resp import RespConn
from support.servers import (REDIS_CLI, REDIS_SERVER, RedisServerProc, ServerProc, compiled_run_only, free_port,
                             server_env)
from support.tls import OPENSSL, Certs
from support.wait import port_open, wait_until

pytestmark = pytest.mark.skipif(OPENSSL is None, reason="openssl is not installed")


@pytest.fixture(scope="module")
def certs():
    with Certs() as c:
        yield c


@pytest.fixture(scope="module")
def srv(certs):
    """One ophidis-server with a TLS port for the tests that restore what
    they change."""
    with start(certs) as s:
        yield s


def tls_sock(certs, port, cert="client", ca="ca", timeout=10):
    """A TLS connection (the handshake done) to port, with ``cert`` as
    the client certificate (None: none)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.load_verify_locations(certs.path(ca + ".crt"))
    if cert:
        ctx.load_cert_chain(certs.path(cert + ".crt"), certs.path(cert + ".key"))
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        return ctx.wrap_socket(s)
    except BaseException:
        s.close()
        raise


def tls_conn(certs, port, **kw) -> RespConn:
    return RespConn(sock=tls_sock(certs, port, **kw))


def refused(certs, port, cert) -> bool:
    """The server refuses a TLS client with ``cert`` (None: no
    certificate): the handshake or the first command fails."""
    try:
        c = tls_conn(certs, port, cert=cert)
    except (ssl.SSLError, OSError):
        return True
    try:
        c.send(b"PING")
        return c.read() != b"+PONG\r\n"
    except (ssl.SSLError, OSError, EOFError, ConnectionError):
        return True
    finally:
        c.close()


def tls_client(certs, port, cert="client") -> redis.Redis:
    kw = {"ssl_certfile": certs.path(cert + ".crt"), "ssl_keyfile": certs.path(cert + ".key")} if cert else {}
    return redis.Redis(port=port, ssl=True, ssl_ca_certs=certs.path("ca.crt"), ssl_check_hostname=False,
                       socket_timeout=10, **kw)


def start(certs, *args, cert="redis", **kw) -> ServerProc:
    """An ophidis-server with a plaintext port (for the start-up wait)
    and a TLS port (``.tls_port``)."""
    tls_port = free_port()
    s = ServerProc(["--tls-port", str(tls_port)] + certs.server_args(cert) + list(args), **kw)
    s.tls_port = tls_port
    return s


def start_ref(certs, *args) -> RedisServerProc:
    tls_port = free_port()
    s = RedisServerProc(["--tls-port", str(tls_port)] + certs.server_args() + list(args))
    s.tls_port = tls_port
    return s


def cli(certs, port, *args, cert="client", tool=None):
    cmd = (tool or [REDIS_CLI]) + ["-p", str(port)] + certs.cli_args(cert) + list(args)
    return subprocess.run(cmd, capture_output=True, timeout=30, env=server_env())


OPHIDIS_CLI = [sys.executable, "-m", "ophidis.tools.cli"]
OPHIDIS_BENCH = [sys.executable, "-m", "ophidis.tools.benchmark"]


# -- clients ------------------------------------------------------------------------------------------
@pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")
def test_redis_cli_and_redis_py_over_tls(certs, srv):
    s = srv
    p = cli(certs, s.tls_port, "SET", "k", "v")
    assert p.stdout == b"OK\n", p.stderr
    assert cli(certs, s.tls_port, "GET", "k").stdout == b"v\n"
    r = tls_client(certs, s.tls_port)
    big = os.urandom(3 << 20)          # many TLS records each way
    r.set("big", big)
    assert r.get("big") == big
    pipe = r.pipeline(transaction=False)
    for i in range(2000):
        pipe.incr("n")
    assert pipe.execute()[-1] == 2000
    assert s.client().get("k") == b"v"          # the plaintext port serves the same data
    info = r.client_info()
    assert info["laddr"].endswith(":%d" % s.tls_port)
    # pub/sub pushes over TLS
    sub = tls_client(certs, s.tls_port).pubsub()
    sub.subscribe("ch")
    assert sub.get_message(timeout=5)["type"] == "subscribe"
    assert r.publish("ch", "hello") == 1
    assert wait_until(lambda: sub.get_message(timeout=0.2), 5)["data"] == b"hello"
    sub.close()
    r.close()


def test_tls_auth_clients_user_cn(certs, srv):
    """Redis 8.6's certificate login: with tls-auth-clients-user CN a TLS
    client whose certificate's Common Name is an enabled user is that user
    without AUTH; any other certificate (no such user, a disabled one) or a
    plaintext client starts as the default user; off (the default) ignores
    the certificate."""
    certs.client_cert("cn-user", "test_user")
    certs.client_cert("cn-off", "off_user")
    admin = srv.client()
    admin.execute_command("ACL", "SETUSER", "test_user", "on", ">clientpass", "~*", "+acl", "+get")
    admin.execute_command("ACL", "SETUSER", "off_user", "off", ">x", "~*", "+@all")
    try:
        assert admin.config_get("tls-auth-clients-user") == {"tls-auth-clients-user": "off"}
        with tls_client(certs, srv.tls_port, cert="cn-user") as c:
            assert c.acl_whoami() == "default"
        admin.config_set("tls-auth-clients-user", "CN")
        with tls_client(certs, srv.tls_port, cert="cn-user") as c:
            assert c.acl_whoami() == "test_user"
            with pytest.raises(redis.exceptions.NoPermissionError):
                c.set("k", "v")
        for cert in ("cn-off", "client"):
            with tls_client(certs, srv.tls_port, cert=cert) as c:
                assert c.acl_whoami() == "default"
        assert admin.acl_whoami() == "default"
        admin.config_set("tls-auth-clients-user", "uri")      # no URI name in these certificates
        assert admin.config_get("tls-auth-clients-user") == {"tls-auth-clients-user": "URI"}
        with tls_client(certs, srv.tls_port, cert="cn-user") as c:
            assert c.acl_whoami() == "default"
        with pytest.raises(redis.ResponseError, match="must be one of the following: CN, URI, off"):
            admin.config_set("tls-auth-clients-user", "SAN")
    finally:
        admin.config_set("tls-auth-clients-user", "off")
        admin.execute_command("ACL", "DELUSER", "test_user", "off_user")


def test_tls_only_server(certs):
    """port 0: TLS only; INFO's tcp_port and the start-up line show the
    TLS port, as Redis's."""
    tls_port = free_port()
    s = ServerProc(["--port", "0", "--tls-port", str(tls_port)] + certs.server_args(), wait=False)
    try:
        wait_until(lambda: port_open(tls_port) or s.proc.poll() is not None, 15, what="the TLS port")
        r = tls_client(certs, tls_port)
        wait_until(lambda: r.ping(), 10)
        assert r.info("server")["tcp_port"] == tls_port
        assert "Running mode=standalone, port=%d." % tls_port in s.output()
        r.close()
    finally:
        s.stop()


def test_tls_auth_clients_yes_optional_no(certs, srv):
    s = srv
    try:
        r = tls_client(certs, s.tls_port)
        # yes (the default): no certificate, or one our CA did not sign, is refused
        assert refused(certs, s.tls_port, None)
        assert refused(certs, s.tls_port, "stranger")
        assert not refused(certs, s.tls_port, "client")
        wait_until(lambda: "Error accepting a client connection: error:0A0000C7:SSL routines::peer did not "
                           "return a certificate" in s.output(), 5)
        r.config_set("tls-auth-clients", "optional")
        assert not refused(certs, s.tls_port, None)
        assert refused(certs, s.tls_port, "stranger")      # one given is still verified
        r.config_set("tls-auth-clients", "no")
        assert not refused(certs, s.tls_port, None)
        assert not refused(certs, s.tls_port, "stranger")
        assert r.ping()           # the connection made under "yes" is untouched
        r.close()
    finally:
        s.client().config_set("tls-auth-clients", "yes")


def test_bad_handshakes_never_hurt_other_clients(certs, srv):
    s = srv
    good = tls_conn(certs, s.tls_port)
    good.send(b"SET", b"a", b"1")
    assert good.read() == b"+OK\r\n"
    # plaintext RESP to the TLS port
    plain = RespConn(s.tls_port)
    plain.send_raw(b"*1\r\n$4\r\nPING\r\n")
    assert plain.read_until_closed() == b""
    # a connection that never finishes its handshake, half a ClientHello, garbage
    idle = socket.create_connection(("127.0.0.1", s.tls_port))
    half = socket.create_connection(("127.0.0.1", s.tls_port))
    half.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
    junk = socket.create_connection(("127.0.0.1", s.tls_port))
    junk.sendall(os.urandom(4096))
    # a client that closes in the middle of its handshake
    raw = socket.create_connection(("127.0.0.1", s.tls_port))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    outgoing = ssl.MemoryBIO()
    obj = ctx.wrap_bio(ssl.MemoryBIO(), outgoing)
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    raw.sendall(outgoing.read())        # the ClientHello, then nothing
    raw.close()
    for _ in range(3):
        good.send(b"INCR", b"a")
        good.read()
    good.send(b"GET", b"a")
    assert good.read() == b"$1\r\n4\r\n"
    assert s.client().ping()
    wait_until(lambda: "SSL routines::wrong version number (conn: fd=" in s.output(), 5)
    for sk in (idle, half, junk):
        sk.close()
    good.close()
    assert s.proc.poll() is None


class _NoTables:
    """OpenSSL's error tables, unreadable (a libcrypto ctypes cannot reach)."""
    ok = False


def test_openssl_error_texts_with_and_without_openssl_tables(certs):
    # the texts OpenSSL's ERR_error_string_n gives (and Redis logs) for real
    # errors raised by Python's ssl: read from OpenSSL's own tables, and
    # from the fallback's known codes when those cannot be read
    from ophidis.net import sslnative
    from ophidis.net.tls import error_string
    assert sslnative.error_tables().ok
    errors = []
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    for data in (b"GET / HTTP/1.1\r\n\r\n", b"\x00" * 50):
        incoming = ssl.MemoryBIO()
        obj = ctx.wrap_bio(incoming, ssl.MemoryBIO(), server_side=True)
        incoming.write(data)
        with pytest.raises(ssl.SSLError) as e:
            obj.do_handshake()
        errors.append(e.value)
    with pytest.raises(ssl.SSLError) as e:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(certs.path("redis.crt"), certs.path("ca.key"))
    errors.append(e.value)
    want = ["error:0A00009C:SSL routines::http request",
            "error:0A00010B:SSL routines::wrong version number",
            "error:05800074:x509 certificate routines::key values mismatch"]
    assert [error_string(x) for x in errors] == want
    assert [error_string(x, _NoTables()) for x in errors] == want
    # an error the fallback does not know keeps its library and text
    incoming = ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, ssl.MemoryBIO(), server_side=True)
    incoming.write(b"\x16\x03\x01\x00\x05hello" + b"x" * 40)
    with pytest.raises(ssl.SSLError) as e:
        obj.do_handshake()
    assert error_string(e.value) == "error:0A0000F4:SSL routines::unexpected message"
    assert error_string(e.value, _NoTables()) == "error:0A000000:SSL routines::unexpected message"


# -- configuration --------------------------------------------------------------------------------------
def _config_errors(r, certs):
    out = []
    for name, value in (("tls-cert-file", "/nonexistent"), ("tls-key-file", certs.path("client.key")),
                        ("tls-protocols", "TLSv9"), ("tls-ciphers", "nosuchcipher"),
                        ("tls-ciphersuites", "nosuchsuite"), ("tls-ca-cert-file", "/nonexistent"),
                        ("tls-dh-params-file", "/nonexistent"), ("tls-auth-clients", "maybe")):
        with pytest.raises(redis.ResponseError) as e:
            r.config_set(name, value)
        out.append(str(e.value))
    return out


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")
def test_config_set_errors_and_log_lines_as_redis(certs, srv):
    s = srv
    ref = start_ref(certs)
    try:
        ours = _config_errors(s.client(), certs)
        theirs = _config_errors(ref.client(), certs)
        assert ours == theirs
        assert ours[0] == ("CONFIG SET failed (possibly related to argument 'tls-cert-file') - "
                           "Unable to update TLS configuration. Check server logs.")
        lines = ["Failed to load certificate: /nonexistent: error:80000002:system library::No such file or directory",
                 "Failed applying new configuration. Possibly related to new tls-cert-file setting. "
                 "Restoring previous settings.",
                 "Failed to load private key: %s: error:05800074:x509 certificate routines::key values mismatch"
                 % certs.path("client.key"),
                 "Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.",
                 "Failed to configure ciphers: nosuchcipher", "Failed to configure ciphersuites: nosuchsuite",
                 "Failed to configure CA certificate(s) file/directory: error:80000002:system library::"
                 "No such file or directory",
                 "Failed to load /nonexistent: No such file or directory"]
        for line in lines:
            assert line in ref.output(), line
            assert line in s.output(), line
        # nothing changed: the same certificate serves new connections
        assert s.client().config_get("tls-cert-file")["tls-cert-file"] == certs.path("redis.crt")
        assert not refused(certs, s.tls_port, "client")
    finally:
        ref.stop()


def test_config_set_cert_file_reloads_for_new_connections(certs, srv):
    s = srv
    try:
        r = s.client()
        old = tls_sock(certs, s.tls_port)
        assert dict(x[0] for x in old.getpeercert()["subject"])["commonName"] == "Generic-cert"
        # the same file name is read again (a volatile directive): a file
        # replaced in place is picked up
        assert r.config_set("tls-cert-file", certs.path("redis.crt"))
        r.execute_command("CONFIG", "SET", "tls-cert-file", certs.path("server.crt"),
                          "tls-key-file", certs.path("server.key"))
        new = tls_sock(certs, s.tls_port)
        assert dict(x[0] for x in new.getpeercert()["subject"])["commonName"] == "Server-only"
        conn = RespConn(sock=old)          # the connection made before still works
        conn.send(b"PING")
        assert conn.read() == b"+PONG\r\n"
        conn.close()
        new.close()
        # CONFIG SET tls-port listens on the new port, the old one stops
        p2 = free_port()
        r.config_set("tls-port", p2)
        assert tls_client(certs, p2).ping()
        wait_until(lambda: not port_open(s.tls_port), 5)
        assert r.config_get("tls-port")["tls-port"] == str(p2)
        s.tls_port = p2
    finally:
        s.client().execute_command("CONFIG", "SET", "tls-cert-file", certs.path("redis.crt"),
                                   "tls-key-file", certs.path("redis.key"))


def test_bad_tls_configuration_at_start(certs):
    s = ServerProc(["--tls-port", str(free_port()), "--tls-cert-file", "/nonexistent",
                    "--tls-key-file", certs.path("redis.key"), "--tls-ca-cert-file", certs.path("ca.crt")],
                   wait=False)
    try:
        assert s.proc.wait(30) == 1
        out = s.output()
        assert "Failed to load certificate: /nonexistent: error:80000002:system library::" \
               "No such file or directory" in out
        assert "Failed to configure TLS. Check logs for more info." in out
    finally:
        s.stop()


# -- the tools ------------------------------------------------------------------------------------------
def test_ophidis_cli_and_benchmark_tls(certs, srv):
    s = srv
    p = cli(certs, s.tls_port, "SET", "k", "v", tool=OPHIDIS_CLI)
    assert p.stdout == b"OK\n", p.stderr
    p = subprocess.run(OPHIDIS_CLI + ["-u", "rediss://127.0.0.1:%d" % s.tls_port, "--cacert",
                                      certs.path("ca.crt"), "--cert", certs.path("client.crt"),
                                      "--key", certs.path("client.key"), "GET", "k"],
                       capture_output=True, timeout=30, env=server_env())
    assert p.stdout == b"v\n", p.stderr
    p = subprocess.run(OPHIDIS_CLI + ["-p", str(s.tls_port), "--tls", "--cacert", certs.path("other-ca.crt"),
                                      "PING"], capture_output=True, timeout=30, env=server_env())
    assert b"Could not connect to Redis at 127.0.0.1:%d: SSL_connect failed: certificate verify failed" \
           % s.tls_port in p.stderr
    p = subprocess.run(OPHIDIS_CLI + ["-p", str(s.tls_port), "--tls", "--cacert", "/nonexistent", "PING"],
                       capture_output=True, timeout=30, env=server_env())
    assert b"Could not negotiate a TLS connection: Invalid CA Certificate File/Directory" in p.stderr
    p = cli(certs, s.tls_port, "-n", "300", "-c", "5", "-t", "set,get", "-q", tool=OPHIDIS_BENCH)
    assert p.returncode == 0, p.stderr
    assert b"SET: " in p.stdout and b"GET: " in p.stdout


# -- replication ----------------------------------------------------------------------------------------
@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")
@compiled_run_only
def test_replication_over_tls_with_redis_server_both_ways(certs):
    both = ["--tls-replication", "yes", "--repl-diskless-sync-delay", "0"]
    ref = start_ref(certs, *both)
    ours = start(certs, *both)
    try:
        m = ref.client()
        m.set("from-redis", "1")
        m.rpush("list", *range(500))
        r = ours.client()
        r.replicaof("127.0.0.1", ref.tls_port)
        wait_until(lambda: r.info("replication")["master_link_status"] == "up", 15)
        m.set("streamed", "2")
        wait_until(lambda: r.get("streamed") == b"2", 10)
        assert r.llen("list") == 500
        # our announced port is the TLS one
        assert m.info("replication")["slave0"]["port"] == ours.tls_port
        # the other way: redis-server replicates from us (diskless, then from disk)
        r.replicaof("no", "one")
        r.set("from-ophidis", "3")
        for diskless in ("yes", "no"):
            r.config_set("repl-diskless-sync", diskless)
            m.replicaof("no", "one")
            m.flushall()
            m.replicaof("127.0.0.1", ours.tls_port)
            wait_until(lambda: m.info("replication")["master_link_status"] == "up", 15)
            r.set("after-" + diskless, "4")
            wait_until(lambda: m.get("after-" + diskless) == b"4", 10)
            assert m.get("from-ophidis") == b"3" and m.llen("list") == 500
        assert "Synchronization with replica 127.0.0.1:%d succeeded" % ref.tls_port in ours.output()
    finally:
        ours.stop()
        ref.stop()


# -- cluster bus ----------------------------------------------------------------------------------------
@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")
@compiled_run_only
def test_tls_cluster_bus_with_redis_server(certs):
    """An Ophidis node and a redis-server node meet over the TLS bus
    (the bus port is the TLS port + 10000); CLUSTER NODES / SLOTS and
    MOVED give TLS clients the TLS ports, plaintext clients the plaintext
    ones."""
    tp_ours, tp_ref = cluster_ports(2)
    common = ["--cluster-enabled", "yes", "--cluster-node-timeout", "2000", "--tls-cluster", "yes",
              "--tls-replication", "yes"]
    ours = ServerProc(["--tls-port", str(tp_ours)] + certs.server_args() + common)
    ref = RedisServerProc(["--tls-port", str(tp_ref)] + certs.server_args() + common)
    try:
        ta = tls_client(certs, tp_ours)
        tb = tls_client(certs, tp_ref)
        ta.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 8191)
        tb.execute_command("CLUSTER", "ADDSLOTSRANGE", 8192, 16383)
        ta.execute_command("CLUSTER", "MEET", "127.0.0.1", tp_ref)
        wait_until(lambda: ta.execute_command("CLUSTER", "INFO").decode().count("cluster_state:ok") and
                   tb.execute_command("CLUSTER", "INFO").decode().count("cluster_state:ok"), 20)
        for client in (ta, tb):
            nodes = client.execute_command("CLUSTER", "NODES").decode()
            assert "127.0.0.1:%d@%d" % (tp_ours, tp_ours + 10000) in nodes
            assert "127.0.0.1:%d@%d" % (tp_ref, tp_ref + 10000) in nodes
        plain_nodes = ours.client().execute_command("CLUSTER", "NODES").decode()
        assert "127.0.0.1:%d@%d" % (ours.port, tp_ours + 10000) in plain_nodes
        assert "127.0.0.1:%d@%d" % (ref.port, tp_ref + 10000) in plain_nodes
        assert [line.endswith("connected 0-8191") or line.endswith("connected 8192-16383")
                for line in plain_nodes.splitlines()] == [True, True]
        # slot of "b" is 3300 (ours), "a" 15495 (redis-server's)
        with pytest.raises(redis.ResponseError) as e:
            ta.get("a")
        assert str(e.value) == "15495 127.0.0.1:%d" % tp_ref
        with pytest.raises(redis.ResponseError) as e:
            ours.client().get("a")
        assert str(e.value) == "15495 127.0.0.1:%d" % ref.port
        ours_slots = ta.execute_command("CLUSTER", "SLOTS")
        ref_slots = tb.execute_command("CLUSTER", "SLOTS")
        assert sorted(x[:3] for x in ours_slots) == sorted(x[:3] for x in ref_slots)
        assert ta.execute_command("CLUSTER", "SHARDS") and \
            sorted(_shard_ports(ta)) == sorted(_shard_ports(tb)) == sorted(
                [(ours.port, tp_ours), (ref.port, tp_ref)])
        # MIGRATE between the two over TLS (tls-cluster: to the target's TLS port)
        ta.set("b", "v1")
        ta.set("{b}2", "v2")
        ida, idb = (c.execute_command("CLUSTER", "MYID").decode() for c in (ta, tb))
        tb.execute_command("CLUSTER", "SETSLOT", 3300, "IMPORTING", ida)
        ta.execute_command("CLUSTER", "SETSLOT", 3300, "MIGRATING", idb)
        assert ta.execute_command("MIGRATE", "127.0.0.1", tp_ref, "", 0, 5000, "KEYS", "b", "{b}2") == b"OK"
        assert ta.execute_command("CLUSTER", "COUNTKEYSINSLOT", 3300) == 0
        assert tb.execute_command("CLUSTER", "COUNTKEYSINSLOT", 3300) == 2
        for c in (tb, ta):
            c.execute_command("CLUSTER", "SETSLOT", 3300, "NODE", idb)
        # and back: redis-server's MIGRATE to our TLS port
        ta.execute_command("CLUSTER", "SETSLOT", 3300, "IMPORTING", idb)
        tb.execute_command("CLUSTER", "SETSLOT", 3300, "MIGRATING", ida)
        assert tb.execute_command("MIGRATE", "127.0.0.1", tp_ours, "b", 0, 5000) == b"OK"
        assert ta.execute_command("CLUSTER", "COUNTKEYSINSLOT", 3300) == 1
        assert tb.execute_command("CLUSTER", "COUNTKEYSINSLOT", 3300) == 1
        for c in (ta, tb):
            c.close()
    finally:
        ours.stop()
        ref.stop()


def _shard_ports(c):
    out = []
    for shard in c.execute_command("CLUSTER", "SHARDS"):
        d = dict(zip(shard[::2], shard[1::2]))
        for node in d[b"nodes"]:
            n = dict(zip(node[::2], node[1::2]))
            out.append((n[b"port"], n[b"tls-port"]))
    return out

