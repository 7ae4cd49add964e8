"""HIMPORT (Redis 8.10): fieldsets kept on the connection, hashes made from
them, and what a replica sees (DEL of a replaced hash, then HSET)."""


from support.replication import SyncStream
from support.resp import RespConn


def test_prepare_set_discard(r, raw, connect):
    assert raw.call("HIMPORT", "PREPARE", "u", "name", "email", "age") == b"+OK\r\n"
    assert raw.call("HIMPORT", "SET", "user:1", "u", "alice", "a@x", "30") == b"+OK\r\n"
    assert raw.call("HIMPORT", "set", "user:2", "u", "bob", "b@x", "25") == b"+OK\r\n"
    assert r.hgetall("user:1") == {b"name": b"alice", b"email": b"a@x", b"age": b"30"}
    assert r.object("encoding", "user:2") == b"listpack"
    # the same name again replaces the fieldset
    assert raw.call("HIMPORT", "PREPARE", "u", "x") == b"+OK\r\n"
    assert raw.call("HIMPORT", "SET", "user:1", "u", "1") == b"+OK\r\n"
    assert r.hgetall("user:1") == {b"x": b"1"}       # the hash is replaced whole
    # a fieldset belongs to its connection
    other = connect()
    assert other.call("HIMPORT", "SET", "user:3", "u", "1") == b"-ERR no such fieldset\r\n"
    assert raw.call("HIMPORT", "PREPARE", "o", "id", "total") == b"+OK\r\n"
    assert raw.call("HIMPORT", "DISCARD", "u") == b":1\r\n"
    assert raw.call("HIMPORT", "DISCARD", "u") == b":0\r\n"
    assert raw.call("HIMPORT", "DISCARDALL") == b":1\r\n"
    assert raw.call("HIMPORT", "DISCARDALL") == b":0\r\n"
    assert raw.call("HIMPORT", "SET", "user:1", "o", "1", "2") == b"-ERR no such fieldset\r\n"


def test_errors(r, raw):
    raw.call("HIMPORT", "PREPARE", "f", "a", "b")
    r.set("s", "v")
    assert raw.call("HIMPORT", "SET", "s", "f", "1", "2").startswith(b"-WRONGTYPE ")
    assert r.get("s") == b"v"
    assert raw.call("HIMPORT", "SET", "h", "f", "1").startswith(b"-ERR ")
    assert raw.call("HIMPORT", "SET", "h", "f", "1", "2", "3").startswith(b"-ERR ")
    assert not r.exists("h")
    assert raw.call("HIMPORT", "PREPARE", "d", "a", "a").startswith(b"-ERR ")
    assert raw.call("HIMPORT", "PREPARE", "d") == (
        b"-ERR wrong number of arguments for 'himport|prepare' command\r\n")
    assert raw.call("HIMPORT", "SET", "h", "f") == b"-ERR wrong number of arguments for 'himport|set' command\r\n"
    assert raw.call("HIMPORT", "DISCARDALL", "x") == (
        b"-ERR wrong number of arguments for 'himport|discardall' command\r\n")
    assert raw.call("HIMPORT", "NOSUCH").startswith(b"-ERR unknown subcommand 'NOSUCH'")


def test_reset_forgets_fieldsets_and_ttl_is_cleared(r, raw):
    raw.call("HIMPORT", "PREPARE", "f", "a")
    r.hset("h", "old", "1")
    r.expire("h", 100)
    assert raw.call("HIMPORT", "SET", "h", "f", "1") == b"+OK\r\n"
    assert r.ttl("h") == -1 and r.hgetall("h") == {b"a": b"1"}
    assert raw.call("RESET") == b"+RESET\r\n"
    assert raw.call("HIMPORT", "SET", "h", "f", "1") == b"-ERR no such fieldset\r\n"


def test_in_multi_and_big_values(r, raw, config):
    raw.call("HIMPORT", "PREPARE", "f", "a", "b")
    assert raw.pipeline(("MULTI",), ("HIMPORT", "SET", "m", "f", "1", "x" * 100), ("EXEC",)) == (
        b"+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n")
    assert r.object("encoding", "m") == b"hashtable"
    assert r.hget("m", "b") == b"x" * 100


def test_command_info_and_acl(r, raw):
    info = raw.call_value("COMMAND", "INFO", "himport|set")[0]
    assert info[1] == -5 and info[3:6] == [2, 2, 1]
    assert b"@write" in info[6] and b"@hash" in info[6]
    assert raw.call_value("COMMAND", "GETKEYS", "HIMPORT", "SET", "k", "f", "v") == [b"k"]


def test_propagates_as_del_and_hset(server, r, config):
    config(r, repl_diskless_sync="no", repl_ping_replica_period=3600)
    r.hset("old", "z", "9")
    s = SyncStream(server.port)
    c = RespConn(server.port)
    try:
        c.call("HIMPORT", "PREPARE", "f", "a", "b")
        c.call("HIMPORT", "SET", "new", "f", "1", "2")
        c.call("HIMPORT", "SET", "old", "f", "3", "4")
        c.call("SET", "end", "1")
        cmds = [x for x in s.read_until(b"set") if x[0].upper() not in (b"SELECT", b"MULTI", b"EXEC")]
        assert cmds == [[b"HSET", b"new", b"a", b"1", b"b", b"2"], [b"DEL", b"old"],
                        [b"HSET", b"old", b"a", b"3", b"b", b"4"], [b"SET", b"end", b"1"]]
    finally:
        c.close()
        s.close()
