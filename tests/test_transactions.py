"""MULTI / EXEC / DISCARD / WATCH / UNWATCH, and MONITOR's output format."""

import re
import time

import pytest
import redis

from support.resp import RespConn, encode, exchange
from support.servers import RedisServerProc

from ophidis.modules import BUILTIN
from ophidis.sysinfo import REDIS_VERSION


def replies_to(port, *cmds) -> bytes:
    """Everything the server replies to the commands cmds (argv tuples),
    sent in one write."""
    return exchange(port, b"".join(encode(*c) for c in cmds))


# Sequences compared byte for byte with Redis.
SEQUENCES = [
    [("MULTI",), ("SET", "a", "1"), ("INCR", "a"), ("GET", "a"), ("EXEC",)],
    [("MULTI",), ("SET", "a", "1"), ("NOSUCHCMD", "x"), ("EXEC",), ("GET", "a")],
    [("MULTI",), ("SET", "a"), ("EXEC",), ("GET", "a")],
    [("MULTI",), ("SET", "a", "x"), ("INCR", "a"), ("SET", "b", "2"), ("EXEC",), ("MGET", "a", "b")],
    [("MULTI",), ("MULTI",), ("EXEC",)],
    [("EXEC",), ("DISCARD",)],
    [("MULTI",), ("WATCH", "x"), ("EXEC",)],
    [("MULTI",), ("SET", "a", "1"), ("DISCARD",), ("GET", "a"), ("EXEC",)],
    [("MULTI",), ("EXEC",)],
    [("MULTI",), ("PING",), ("ECHO", "hi"), ("SELECT", "1"), ("SET", "k", "v"), ("EXEC",), ("SELECT", "0"),
     ("GET", "k")],
    [("MULTI",), ("SELECT", "99"), ("EXEC",)],
    [("WATCH", "w"), ("SET", "w", "1"), ("MULTI",), ("PING",), ("EXEC",)],
    [("WATCH", "w"), ("MULTI",), ("PING",), ("EXEC",)],
    [("WATCH", "w"), ("UNWATCH",), ("SET", "w", "1"), ("MULTI",), ("PING",), ("EXEC",)],
    [("WATCH",), ("UNWATCH", "x")],
    [("MULTI",), ("SET", "a", "1"), ("SET", "a", "1", "XX", "NX"), ("GET", "a"), ("EXEC",)],
    [("MULTI",), ("SET", "a", "1"), ("GET",), ("EXEC",), ("GET", "a")],
    [("MULTI",), ("SUBSCRIBE", "c"), ("EXEC",), ("PING",)],
    [("HELLO", "3"), ("WATCH", "w"), ("SET", "w", "2"), ("MULTI",), ("PING",), ("EXEC",)],
    [("MULTI",), ("EXPIRE", "a", "0"), ("SET", "a", "1", "EX", "0"), ("EXEC",)],
    [("MULTI",), ("DEL", "a"), ("EXEC",)],
    [("MULTI",), ("SET", "a", "1"), ("WATCH", "b"), ("EXEC",), ("GET", "a")],
]


@pytest.mark.parametrize("seq", SEQUENCES, ids=[" ".join(c[0] for c in s) for s in SEQUENCES])
def test_sequences_match_redis(server, redis_server, r, ref, seq):
    ours = replies_to(server.port, *seq)
    theirs = replies_to(redis_server.port, *seq)
    ours = re.sub(rb"\$2\r\nid\r\n:\d+\r\n", b"ID", ours)
    theirs = re.sub(rb"\$2\r\nid\r\n:\d+\r\n", b"ID", theirs)
    # HELLO's modules: ours lists Redis 8's built-in data types (ReJSON, bf ...), 7.0 none
    ours = re.sub(rb"modules\r\n\*%d\r\n(?:[%%*][48]\r\n\$4\r\nname\r\n.*?\$4\r\nargs\r\n\*0\r\n){%d}"
                  % (len(BUILTIN), len(BUILTIN)), b"modules\r\n*0\r\n", ours, flags=re.S)
    # HELLO's version: ours Redis 8.10's, the reference 7.0.15
    ours = ours.replace(b"$7\r\nversion\r\n$%d\r\n%s\r\n" % (len(REDIS_VERSION), REDIS_VERSION.encode()), b"VERSION")
    theirs = theirs.replace(b"$7\r\nversion\r\n$6\r\n7.0.15\r\n", b"VERSION")
    assert ours == theirs


def test_queued_replies_and_exec(server, r):
    out = replies_to(server.port, ("MULTI",), ("SET", "a", "1"), ("INCR", "a"), ("GET", "a"), ("EXEC",))
    assert out == b"+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n+OK\r\n:2\r\n$1\r\n2\r\n"


def test_execabort_after_queue_errors(server, r):
    out = replies_to(server.port, ("MULTI",), ("SET", "a", "1"), ("FOO",), ("EXEC",), ("GET", "a"))
    assert out == (b"+OK\r\n+QUEUED\r\n-ERR unknown command 'FOO', with args beginning with: \r\n"
                   b"-EXECABORT Transaction discarded because of previous errors.\r\n$-1\r\n")
    out = replies_to(server.port, ("MULTI",), ("INCR",), ("EXEC",))
    assert out == (b"+OK\r\n-ERR wrong number of arguments for 'incr' command\r\n"
                   b"-EXECABORT Transaction discarded because of previous errors.\r\n")


def test_runtime_errors_do_not_abort(server, r):
    out = replies_to(server.port, ("SET", "s", "x"), ("MULTI",), ("INCR", "s"), ("SET", "t", "1"), ("EXEC",))
    assert out == (b"+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n-ERR value is not an integer or out of range\r\n"
                   b"+OK\r\n")
    assert r.get("t") == b"1"


def test_commands_not_allowed_in_multi(server):
    out = replies_to(server.port, ("MULTI",), ("WATCH", "x"), ("MULTI",), ("PING",), ("EXEC",))
    assert out == (b"+OK\r\n-ERR WATCH inside MULTI is not allowed\r\n-ERR MULTI calls can not be nested\r\n"
                   b"+QUEUED\r\n*1\r\n+PONG\r\n")
    # errors of MULTI/WATCH themselves do not abort the transaction
    out = replies_to(server.port, ("EXEC",), ("DISCARD",))
    assert out == b"-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n"


def test_multi_flag_in_client_list(server, r):
    s = RespConn(server.port)
    s.pipeline(("CLIENT", "SETNAME", "txclient"), ("MULTI",), ("PING",))
    entry = [c for c in r.client_list() if c["name"] == "txclient"][0]
    assert "x" in entry["flags"] and entry["multi"] == "1"
    s.close()


# -- WATCH ----------------------------------------------------------------------
def _watch_exec(server, key, modify):
    w = server.client()
    p = w.pipeline(transaction=True)
    p.watch(key)
    modify()
    p.multi()
    p.ping()
    try:
        res = p.execute()
    except redis.WatchError:
        res = None
    finally:
        p.reset()
        w.close()
    return res


def test_watch_modified_key_aborts(server, r):
    assert _watch_exec(server, "w", lambda: r.set("w", "1")) is None


def test_watch_unmodified_key_runs(server, r):
    r.set("w", "1")
    assert _watch_exec(server, "w", lambda: r.set("other", "1")) == [True]


def test_watch_touched_by_in_place_change(server, r):
    r.set("w", "1")
    assert _watch_exec(server, "w", lambda: r.append("w", "x")) is None
    assert _watch_exec(server, "w", lambda: r.incr("n")) == [True]
    r.set("n", 1)
    assert _watch_exec(server, "n", lambda: r.incr("n")) is None


def test_watch_expire_touches(server, r):
    r.set("w", "1")
    assert _watch_exec(server, "w", lambda: r.expire("w", 100)) is None


def test_watch_key_expiring_before_exec(server, r):
    # the key must be WATCHed before its 100 ms are over (a key already
    # expired when WATCHed is another case): again when a busy machine
    # made the WATCH late
    for _ in range(20):
        t0 = time.monotonic()
        r.set("w", "1", px=100)
        watched = []

        def modify():
            watched.append(time.monotonic() - t0)    # WATCH has been answered
            time.sleep(0.2)
        res = _watch_exec(server, "w", modify)
        if watched[0] < 0.1:
            break
    else:
        pytest.fail("WATCH never came within 100 ms of the SET")
    assert res is None


def test_watch_stale_key_does_not_fail(server, r, start_server):
    # a key already expired when WATCHed, then deleted: no logical change
    srv = start_server("--hz", "1")
    c = srv.client()
    c.set("x", "foo", px=1)
    time.sleep(0.01)
    p = c.pipeline(transaction=True)
    p.watch("x")
    assert c.exists("x") == 0           # lazy expiry deletes it
    p.multi()
    p.ping()
    assert p.execute() == [True]
    c.close()


def test_watch_flushdb_touches_existing_keys_only(server, r):
    r.set("w", "1")
    assert _watch_exec(server, "w", lambda: r.flushdb()) is None
    # FLUSHDB of an empty db, or of keys not watched, does not touch
    assert _watch_exec(server, "w", lambda: r.flushdb()) == [True]
    assert _watch_exec(server, "w", lambda: r.flushall()) == [True]


def test_watch_flushall_touches(server, r):
    r.set("w", "1")
    assert _watch_exec(server, "w", lambda: r.flushall()) is None


def test_watch_swapdb(server, r):
    r.set("w", "1")
    # the key disappears from db 0
    assert _watch_exec(server, "w", lambda: r.swapdb(0, 1)) is None
    # the key appears in db 0 (swapped back)
    assert _watch_exec(server, "w", lambda: r.swapdb(0, 1)) is None
    r.flushall()
    # neither db has it: no change
    assert _watch_exec(server, "w", lambda: r.swapdb(0, 1)) == [True]


def test_watch_remembers_db(server, r):
    c = server.client(db=2)
    c.set("w", "1")
    p = c.pipeline(transaction=True)
    p.watch("w")
    r.set("w", "changed-in-db0")
    p.multi()
    p.ping()
    assert p.execute() == [True]
    p.watch("w")
    c2 = server.client(db=2)
    c2.set("w", "2")
    p.multi()
    p.ping()
    with pytest.raises(redis.WatchError):
        p.execute()
    c.flushdb()
    c.close()
    c2.close()


def test_discard_clears_watch(server, r):
    s = RespConn(server.port)
    s.send_raw(encode("WATCH", "w"))
    assert s.read() == b"+OK\r\n"
    r.set("w", "1")
    s.send_raw(encode("MULTI") + encode("DISCARD") + encode("MULTI") + encode("PING") + encode("EXEC"))
    assert s.quit_and_read() == b"+OK\r\n+OK\r\n+OK\r\n+QUEUED\r\n*1\r\n+PONG\r\n"


def test_after_exec_key_no_longer_watched(server, r):
    s = RespConn(server.port)
    s.send_raw(encode("WATCH", "w") + encode("MULTI") + encode("PING") + encode("EXEC"))
    assert s.read_replies(4) == b"+OK\r\n+OK\r\n+QUEUED\r\n*1\r\n+PONG\r\n"
    r.set("w", "x")
    s.send_raw(encode("MULTI") + encode("PING") + encode("EXEC"))
    assert s.quit_and_read() == b"+OK\r\n+QUEUED\r\n*1\r\n+PONG\r\n"     # nothing more before either


def test_exec_with_dirty_watch_resp3_null(server, r):
    s = RespConn(server.port)
    s.send_raw(encode("HELLO", "3") + encode("WATCH", "w"))
    s.read_replies(2)
    r.set("w", "x")
    s.send_raw(encode("MULTI") + encode("PING") + encode("EXEC"))
    assert s.quit_and_read() == b"+OK\r\n+QUEUED\r\n_\r\n"


# -- redis-py -----------------------------------------------------------------------
def test_redis_py_transactional_pipeline(r):
    with r.pipeline() as p:
        p.set("a", 1).incr("a").incrby("a", 10).get("a")
        assert p.execute() == [True, 2, 12, b"12"]


def test_redis_py_transaction_helper(server, r):
    r.set("counter", 0)
    calls = []

    def work(pipe):
        v = int(pipe.get("counter"))
        if not calls:
            r.set("counter", 100)          # concurrent change: retried
        calls.append(v)
        pipe.multi()
        pipe.set("counter", v + 1)

    r.transaction(work, "counter")
    assert calls == [0, 100]
    assert r.get("counter") == b"101"


def test_redis_py_pipeline_error_inside(r):
    r.set("s", "notanumber")
    with r.pipeline() as p:
        p.incr("s").set("ok", 1)
        with pytest.raises(redis.ResponseError):
            p.execute()
    assert r.get("ok") == b"1"


# -- NOAUTH / OOM ------------------------------------------------------------------------
def test_noauth_inside_multi(start_server):
    srv = start_server("--requirepass", "secret")
    out = replies_to(srv.port, ("MULTI",), ("AUTH", "secret"), ("MULTI",), ("SET", "a", "1"), ("EXEC",))
    assert out == (b"-NOAUTH Authentication required.\r\n+OK\r\n+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n")


def test_oom_execabort(start_server, redis_server):
    """A denyoom command queued over maxmemory (noeviction) is refused with
    -OOM and EXEC aborts; reads are still queued.  Same bytes as Redis."""
    seq = (("SET", "pre", "x"), ("CONFIG", "SET", "maxmemory", "1"), ("MULTI",), ("GET", "pre"),
           ("SET", "a", "1"), ("EXEC",), ("CONFIG", "SET", "maxmemory", "0"), ("GET", "a"))
    ours = start_server("--maxmemory-policy", "noeviction")
    ref = RedisServerProc(["--maxmemory-policy", "noeviction"], debug=False)
    try:
        a = replies_to(ours.port, *seq)
        b = replies_to(ref.port, *seq)
    finally:
        ref.stop(remove=True)
    assert b"-OOM command not allowed when used memory > 'maxmemory'.\r\n" in b
    assert b"-EXECABORT" in b
    assert a == b


# -- MONITOR --------------------------------------------------------------------------------
_MON = re.compile(rb"^\+(\d+)\.(\d{6}) \[(\d+) ([^\]]+)\] (.*)$")


def _monitor_lines(port, actions):
    """(db, command) of each line MONITOR shows for actions; a last ECHO of
    a marker ends them (it is left out)."""
    m = RespConn(port)
    assert m.call("MONITOR") == b"+OK\r\n"
    c = RespConn(port)
    c.pipeline(*actions, ("ECHO", "monitor-end"))
    shown = []
    while True:
        line = m.read()
        if line.endswith(b'"ECHO" "monitor-end"\r\n'):
            break
        shown.append(line[:-2])
    m.close()
    c.close()
    lines = []
    for line in shown:
        mm = _MON.match(line)
        assert mm, line
        lines.append((int(mm.group(3)), mm.group(5)))
    return lines


MONITOR_ACTIONS = [
    ("SET", "k", "v"), ("GET", "k"), ("SET", "bin", b"a\x00\"\\\n\r\t\x07\x08\xff\x7f z"),
    ("SELECT", "3"), ("PING",), ("SELECT", "0"), ("NOSUCHCMD",), ("MULTI",), ("INCR", "n"), ("EXEC",),
    ("CONFIG", "GET", "maxmemory"), ("ECHO", "12345"), ("DEL", "k", "bin", "n"),
]


def test_monitor_format_matches_redis(server, redis_server, r, ref):
    ours = _monitor_lines(server.port, MONITOR_ACTIONS)
    theirs = _monitor_lines(redis_server.port, MONITOR_ACTIONS)
    assert ours == theirs
    assert (3, b'"SELECT" "3"') in ours and (0, b'"EXEC"') in ours


def test_monitor_line_shape(server, r):
    m = RespConn(server.port)
    assert m.call("MONITOR") == b"+OK\r\n"
    c = RespConn(server.port)
    c.call("SET", "key", "va lue")
    local = c.sock.getsockname()
    line = m.read()
    t = time.time()
    mm = re.match(rb'^\+(\d+\.\d{6}) \[0 127\.0\.0\.1:(\d+)\] "SET" "key" "va lue"\r\n$', line)
    assert mm, line
    assert abs(float(mm.group(1)) - t) < 5
    assert int(mm.group(2)) == local[1]
    m.close()
    c.close()
