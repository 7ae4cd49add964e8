"""Server surface Redis 7.2/7.4 added outside the data types: INFO's new
clients fields (pubsub_clients, watching_clients, total_watched_keys,
total_blocking_keys, total_blocking_keys_on_nokey), the ACL denial counters
of INFO stats, and the directives loglevel nothing, locale-collate and
max-new-(tls-)connections-per-cycle (compared with valkey-server 9.1)."""

from support.resp import RespConn, encode
from support.wait import wait_until


def _info(conn, section) -> dict:
    raw = conn.call("INFO", section)
    body = raw.split(b"\r\n", 1)[1].decode()
    out = {}
    for line in body.split("\r\n"):
        if ":" in line and not line.startswith("#"):
            k, _, v = line.partition(":")
            out[k] = v
    return out


def _fields(conn, section) -> list:
    raw = conn.call("INFO", section).split(b"\r\n", 1)[1].decode()
    return [line.split(":")[0] for line in raw.split("\r\n") if ":" in line]


def test_info_clients_fields_of_74(start_server):
    s = start_server()
    with RespConn(s.port) as c, RespConn(s.port) as sub, RespConn(s.port) as w, \
            RespConn(s.port) as b1, RespConn(s.port) as b2:
        f = _info(c, "clients")
        assert [f[k] for k in ("pubsub_clients", "watching_clients", "total_watched_keys",
                               "total_blocking_keys", "total_blocking_keys_on_nokey")] == ["0"] * 5
        names = _fields(c, "clients")
        assert names.index("tracking_clients") < names.index("pubsub_clients") \
            < names.index("watching_clients") < names.index("clients_in_timeout_table") \
            < names.index("total_watched_keys") < names.index("total_blocking_keys") \
            < names.index("total_blocking_keys_on_nokey")
        sub.call("SUBSCRIBE", "a")
        sub.send_raw(encode("PSUBSCRIBE", "b*"))
        w.call("WATCH", "k1", "k2")
        c.call("XADD", "s", "1-1", "f", "v")
        c.call("XGROUP", "CREATE", "s", "g", "$")
        b1.send_raw(encode("BLPOP", "l1", "l2", "0"))
        b2.send_raw(encode("XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "s", ">"))
        wait_until(lambda: _info(c, "clients")["blocked_clients"] == "2", 20)
        f = _info(c, "clients")
        assert (f["pubsub_clients"], f["watching_clients"], f["total_watched_keys"],
                f["total_blocking_keys"], f["total_blocking_keys_on_nokey"]) == ("1", "1", "2", "3", "1")
        w.call("UNWATCH")
        c.call("RPUSH", "l1", "x")
        assert b1.read(timeout=10) == b"*2\r\n$2\r\nl1\r\n$1\r\nx\r\n"
        f = _info(c, "clients")
        assert (f["watching_clients"], f["total_watched_keys"], f["total_blocking_keys"],
                f["total_blocking_keys_on_nokey"]) == ("0", "0", "1", "1")


def test_info_stats_acl_denials(start_server):
    s = start_server()
    with RespConn(s.port) as c, RespConn(s.port) as u:
        assert c.call("ACL", "SETUSER", "bob", "on", ">pw", "~k*", "&ch*", "+get", "+publish",
                      "+auth") == b"+OK\r\n"
        names = _fields(c, "stats")
        assert names[-4:] == ["acl_access_denied_auth", "acl_access_denied_cmd", "acl_access_denied_key",
                              "acl_access_denied_channel"]
        assert names.index("client_output_buffer_limit_disconnections") < names.index("reply_buffer_shrinks")
        assert u.call("AUTH", "bob", "nope").startswith(b"-WRONGPASS")
        assert u.call("AUTH", "bob", "pw") == b"+OK\r\n"
        assert u.call("SET", "k1", "v").startswith(b"-NOPERM")
        assert u.call("GET", "other").startswith(b"-NOPERM")
        assert u.call("GET", "k1") == b"$-1\r\n"
        assert u.call("PUBLISH", "nope", "m").startswith(b"-NOPERM")
        assert u.call("PUBLISH", "chan", "m") == b":0\r\n"
        f = _info(c, "stats")
        assert [f["acl_access_denied_" + k] for k in ("auth", "cmd", "key", "channel")] == ["1", "1", "1", "1"]
        # CONFIG RESETSTAT leaves them (Redis counts them since start-up)
        c.call("CONFIG", "RESETSTAT")
        assert _info(c, "stats")["acl_access_denied_auth"] == "1"


def test_newer_directives_same_as_valkey(same_as_valkey):
    same_as_valkey([
        ["CONFIG", "GET", "max-new-connections-per-cycle"],
        ["CONFIG", "GET", "max-new-tls-connections-per-cycle"],
        ["CONFIG", "SET", "max-new-connections-per-cycle", "0"],
        ["CONFIG", "SET", "max-new-connections-per-cycle", "1001"],
        ["CONFIG", "SET", "max-new-tls-connections-per-cycle", "x"],
        ["CONFIG", "SET", "max-new-connections-per-cycle", "20"],
        ["CONFIG", "GET", "max-new-connections-per-cycle"],
        ["CONFIG", "SET", "max-new-connections-per-cycle", "10"],
        ["CONFIG", "GET", "locale-collate"],
        ["CONFIG", "SET", "locale-collate", "no-such-locale"],
        ["CONFIG", "SET", "locale-collate", "C"],
        ["CONFIG", "GET", "locale-collate"],
        ["CONFIG", "SET", "locale-collate", ""],
        ["CONFIG", "SET", "loglevel", "loud"],
        ["CONFIG", "GET", "loglevel"],
    ])


def test_loglevel_nothing_logs_nothing(start_server):
    s = start_server()
    with RespConn(s.port) as c:
        assert c.call("CONFIG", "SET", "loglevel", "nothing") == b"+OK\r\n"
        assert c.call("CONFIG", "GET", "loglevel") == b"*2\r\n$8\r\nloglevel\r\n$7\r\nnothing\r\n"
        before = s.output()
        # a warning that would be logged at any other level
        assert c.call("CONFIG", "SET", "maxmemory", "1") == b"+OK\r\n"
        c.call("CONFIG", "SET", "maxmemory", "0")
        # a line is written before the reply that caused it leaves
        assert s.output() == before
        assert c.call("CONFIG", "SET", "loglevel", "warning") == b"+OK\r\n"
        c.call("CONFIG", "SET", "maxmemory", "1")
        c.call("CONFIG", "SET", "maxmemory", "0")
        assert s.output().count("WARNING: the new maxmemory value") == 1


def test_hide_user_data_from_log_redacts_arguments_in_crash_reports(start_server):
    s = start_server("--enable-debug-command", "yes", "--hide-user-data-from-log", "yes")
    with RespConn(s.port) as c:
        assert c.call("CONFIG", "GET", "hide-user-data-from-log") == \
            b"*2\r\n$23\r\nhide-user-data-from-log\r\n$3\r\nyes\r\n"
        c.send_raw(encode("DEBUG", "ASSERT", "secret-arg"))
        c.read_until_closed()
    wait_until(lambda: s.proc.poll() is not None, 30, what="the server's exit")
    out = s.output()
    assert "client->argv[0] = \"DEBUG\" (refcount: 1)" in out
    assert "client->argv[1] = *redacted*" in out and "client->argv[2] = *redacted*" in out
    assert "argv[0]: '\"DEBUG\"'" in out and "argv[1]: *redacted*" in out
    assert "secret-arg" not in out and "ASSERT\"" not in out


def test_info_server_listener_lines(start_server, tmp_path):
    s = start_server()
    with RespConn(s.port) as c:
        f = _info(c, "server")
        assert f["listener0"] == "name=tcp,bind=*,bind=-::*,port=%d" % s.port
        assert "listener1" not in f and "listener2" not in f
    sock = str(tmp_path / "o.sock")
    u = start_server("--bind", "127.0.0.1", "--unixsocket", sock)
    with RespConn(u.port) as c:
        names = _fields(c, "server")
        assert names[-2:] == ["listener0", "listener1"]
        f = _info(c, "server")
        assert (f["listener0"], f["listener1"]) == ("name=tcp,bind=127.0.0.1,port=%d" % u.port,
                                                    "name=unix,bind=%s" % sock)
