"""The Redis 7.0 leftovers of Redis's own TCL suite in full mode: the
behaviours its unit/oom-score-adj, querybuf, replybufsize, other,
introspection-2 and cluster/misc files check, here through real clients
against real server processes."""

from __future__ import annotations

import os

import pytest

from support.resp import RespConn
from support.servers import children_of
from support.wait import wait_until


def _oom(pid) -> int:
    with open("/proc/%d/oom_score_adj" % pid) as f:
        return int(f.read())


def _set_oom(pid, v):
    with open("/proc/%d/oom_score_adj" % pid, "w") as f:
        f.write("%d\n" % v)


linux_only = pytest.mark.skipif(not os.path.exists("/proc/self/oom_score_adj"), reason="Linux's /proc only")


@linux_only
def test_oom_score_adj_classes(start_server):
    s = start_server("--enable-debug-command", "yes")
    pid = s.proc.pid
    c = s.client()
    base = _oom(pid)
    # off (the default): the score is not touched
    assert c.config_get("oom-score-adj") == {"oom-score-adj": "no"}
    assert _oom(pid) == base
    c.config_set("oom-score-adj-values", "10 20 30")
    c.config_set("oom-score-adj", "yes")
    assert _oom(pid) == base + 10
    c.config_set("oom-score-adj-values", "15 20 30")
    assert _oom(pid) == base + 15
    # a replica's class, and back
    c.replicaof("localhost", 1)
    assert _oom(pid) == base + 20
    c.replicaof("no", "one")
    assert _oom(pid) == base + 15
    # a forked child's class
    c.set("key-a", "value-a")
    c.config_set("rdb-key-save-delay", 1000000)
    c.bgsave()
    kids = []
    wait_until(lambda: kids.extend(children_of(pid)) or kids, what="the BGSAVE child")
    wait_until(lambda: _oom(kids[0]) == base + 30, what="the child's score")
    assert _oom(pid) == base + 15
    c.config_set("rdb-key-save-delay", 0)
    os.kill(kids[0], 9)


@linux_only
def test_oom_score_adj_restored_relative_absolute(start_server):
    s = start_server()
    pid = s.proc.pid
    c = s.client()
    # values changed while off leave /proc alone
    _set_oom(pid, 22)
    c.config_set("oom-score-adj-values", "23 23 23")
    assert _oom(pid) == 22
    # relative to the score before we took control; put back when off
    c.config_set("oom-score-adj-values", "9 9 9", "oom-score-adj", "yes")
    assert _oom(pid) == 31
    c.config_set("oom-score-adj", "no")
    assert _oom(pid) == 22
    c.config_set("oom-score-adj-values", "9 9 9", "oom-score-adj", "relative")
    assert _oom(pid) == 31
    c.config_set("oom-score-adj", "absolute")
    assert _oom(pid) == 9
    # clamped to the kernel's range
    c.config_set("oom-score-adj-values", "2000 2000 2000")
    assert _oom(pid) == 1000
    c.config_set("oom-score-adj", "relative")
    assert _oom(pid) == 1000
    c.config_set("oom-score-adj", "no")
    assert _oom(pid) == 22


@linux_only
def test_oom_score_adj_refused(start_server):
    """Without CAP_SYS_RESOURCE the kernel refuses a score under the
    process's minimum (-1000 here): CONFIG SET fails and rolls back."""
    s = start_server()
    pid = s.proc.pid
    c = s.client()
    base = _oom(pid)
    c.config_set("oom-score-adj-values", "-1000 -1000 -1000")
    try:
        c.config_set("oom-score-adj", "absolute")
    except Exception as e:      # noqa: BLE001 - unprivileged: refused
        assert str(e) == ("CONFIG SET failed (possibly related to argument 'oom-score-adj') - "
                          "Failed to set current oom_score_adj. Check server logs.")
        assert c.config_get("oom-score-adj") == {"oom-score-adj": "no"}
        assert _oom(pid) == base
        c.config_set("oom-score-adj-values", "0 100 100")
        c.config_set("oom-score-adj", "absolute")
        with pytest.raises(Exception, match="Failed to set current oom_score_adj"):
            c.config_set("oom-score-adj-values", "-1000 -1000 -1000")
        assert c.config_get("oom-score-adj-values") == {"oom-score-adj-values": "0 100 100"}
        assert "Unable to write oom_score_adj: Permission denied" in s.output()
    else:                       # privileged
        assert _oom(pid) == -1000


@linux_only
def test_oom_score_adj_from_the_configuration(start_server):
    """Set at start-up (after loading), a replica's class with replicaof."""
    s = start_server("--oom-score-adj", "absolute", "--oom-score-adj-values", "11 12 13")
    assert _oom(s.proc.pid) == 11
    s2 = start_server("--oom-score-adj", "absolute", "--oom-score-adj-values", "11 12 13",
                      "--replicaof", "127.0.0.1", str(s.port))
    wait_until(lambda: _oom(s2.proc.pid) == 12, what="the replica's score")


def test_oom_score_adj_values_parsing(r, ref):
    """strtoll's rules, as redis-server: a sign and leading blanks pass."""
    try:
        for v in ("10 20", "a b c", "1 2 3 4", "+5 6 7", "", "9 9 9", "1  2 3", "\t1 2 3", "1 2 3x",
                  "-0 +0 0", "2000 -2000 1", "9223372036854775808 1 1"):
            got = []
            for c in (r, ref):
                try:
                    c.config_set("oom-score-adj-values", v)
                    got.append(c.config_get("oom-score-adj-values"))
                except Exception as e:      # noqa: BLE001
                    got.append(str(e))
            assert got[0] == got[1], v
    finally:
        for c in (r, ref):
            c.config_set("oom-score-adj-values", "0 200 800")


def test_oom_score_adj_values_errors(r):
    for bad in ("-2001 -2001 -2001", "2001 2001 2001", "1 2 x"):
        with pytest.raises(Exception, match="must be between -2000 and 2000"):
            r.config_set("oom-score-adj-values", bad)
    with pytest.raises(Exception, match="wrong number of arguments"):
        r.config_set("oom-score-adj-values", "1 2")


# -- the query and reply buffers' sizes (unit/querybuf, unit/replybufsize) ------------------

def _client_fields(c, name) -> dict:
    for line in c.execute_command("CLIENT", "LIST").decode().splitlines():
        f = dict(kv.split("=", 1) for kv in line.split(" "))
        if f["name"] == name:
            return f
    raise AssertionError("no client named %s" % name)


def _qbuf_room(c, name) -> int:
    f = _client_fields(c, name)
    return int(f["qbuf"]) + int(f["qbuf-free"])


def test_query_buffer_freed_when_idle(r, server):
    tc = server.client()
    try:
        tc.client_setname("qb_idle")
        room = _qbuf_room(r, "qb_idle")
        assert 16384 <= room < 32768
        wait_until(lambda: int(_client_fields(r, "qb_idle")["idle"]) >= 3 and _qbuf_room(r, "qb_idle") == 0,
                   timeout=15, what="the idle client's query buffer freed")
        # a read gives it its room again
        tc.ping()
        assert 16384 <= _qbuf_room(r, "qb_idle") < 32768
    finally:
        tc.close()


def test_query_buffer_of_a_big_argument_trimmed(r, server):
    tc = server.client()
    try:
        tc.client_setname("qb_big")
        tc.set("x", b"A" * 400000)
        big = _qbuf_room(r, "qb_big")
        assert big >= 400002
        # smaller requests: the buffer is trimmed to the recent peak, not freed
        def shrunk():
            tc.set("x", b"A" * 100)
            return 0 < _qbuf_room(r, "qb_big") < big
        wait_until(shrunk, timeout=5, interval=0.01, what="the query buffer trimmed")
    finally:
        tc.close()


def test_query_buffer_kept_for_a_big_argument_still_arriving(r, server, config):
    # clientsCronResizeQueryBuffer (7.2+): the buffer of a big argument
    # whose bytes have not all come is not trimmed below its length while
    # the client is active, only freed once it is idle for more than 2 s
    # (Redis 7.4.1's unit/querybuf "fat argv")
    config(r, hz=100)
    conn = RespConn(server.port)
    try:
        assert conn.call("CLIENT", "SETNAME", "qb_fat") == b"+OK\r\n"
        conn.send_raw(b"*3\r\n$3\r\nset\r\n$1\r\na\r\n$1000000\r\n")
        wait_until(lambda: _qbuf_room(r, "qb_fat") >= 1000000, what="the big argument's buffer")

        def a_second_idle():
            f = _client_fields(r, "qb_fat")
            assert int(f["qbuf"]) + int(f["qbuf-free"]) >= 1000000, f   # (a hundred cron passes)
            return int(f["idle"]) >= 1
        wait_until(a_second_idle, what="a second of the client idle")
        wait_until(lambda: int(_client_fields(r, "qb_fat")["idle"]) >= 3 and _qbuf_room(r, "qb_fat") < 1000000,
                   timeout=15, what="the idle client's query buffer freed")
    finally:
        conn.close()


def test_reply_buffer_shrinks_and_grows(r, server):
    r.execute_command("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", 100)
    tc = server.client()
    try:
        tc.client_setname("rb_test")
        before = r.info("stats")
        # a new client's reply buffer is 16 KB; idle, it shrinks to 1 KB
        wait_until(lambda: 1024 <= int(_client_fields(r, "rb_test")["rbs"]) < 2046, timeout=5,
                   what="the idle client's reply buffer shrunk")
        r.set("bigval", b"x" * 32768)
        r.execute_command("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "NEVER")

        def grown():
            tc.get("bigval")
            return 16384 <= int(_client_fields(r, "rb_test")["rbs"]) < 32768
        wait_until(grown, timeout=5, interval=0.05, what="the busy client's reply buffer grown")
        f = _client_fields(r, "rb_test")
        assert f["rbp"] == f["rbs"]
        after = r.info("stats")
        assert after["reply_buffer_shrinks"] > before["reply_buffer_shrinks"]
        assert after["reply_buffer_expands"] >= before["reply_buffer_expands"] + 4
        # resizing off: nothing moves
        r.execute_command("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", 100)
        r.execute_command("DEBUG", "REPLYBUFFER", "RESIZING", 0)
        tc.ping()
        n = r.info("stats")["reply_buffer_shrinks"]
        wait_until(lambda: int(_client_fields(r, "rb_test")["idle"]) >= 1, timeout=5)
        assert r.info("stats")["reply_buffer_shrinks"] == n
        assert int(_client_fields(r, "rb_test")["rbs"]) == 16384
    finally:
        r.execute_command("DEBUG", "REPLYBUFFER", "RESIZING", 1)
        r.execute_command("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "RESET")
        tc.close()


# -- DEBUG HTSTATS while a child runs (unit/other) ------------------------------------------

def test_no_rehash_while_a_child_runs(start_server):
    s = start_server("--enable-debug-command", "yes", "--save", "")
    c = s.client(db=9)
    pipe = c.pipeline(transaction=False)
    for i in range(4096):
        pipe.set("key:%d" % i, "v")
    pipe.execute()
    assert b"table size: 4096\n number of elements: 4096\n" in c.execute_command("DEBUG", "HTSTATS", 9)
    c.config_set("rdb-key-save-delay", 1000000)
    c.bgsave()
    wait_until(lambda: c.info("persistence")["rdb_bgsave_in_progress"] == 1, what="the BGSAVE child")
    c.mset({"k1": "v1", "k2": "v2"})
    text = c.execute_command("DEBUG", "HTSTATS", 9)
    assert b"table size: 4096\n number of elements: 4098\n" in text
    kids = children_of(s.proc.pid)
    assert kids
    for k in kids:
        os.kill(k, 9)
    wait_until(lambda: c.info("persistence")["rdb_bgsave_in_progress"] == 0, what="the child reaped")
    c.set("k3", "v3")
    # grown, rehashed by the cron (until then the new table is the
    # rehashing target: keyspace/dictshape.py)
    wait_until(lambda: b"table size: 8192\n number of elements: 4099\n" in c.execute_command("DEBUG", "HTSTATS", 9),
               what="the table grown and rehashed")


def test_tables_resize_by_the_cron_once_resizing_is_allowed_again(start_server):
    # Redis 7.4.1's unit/other "Redis can trigger resizing" / "can resize
    # empty dict": DEBUG DICT-RESIZING 0 keeps the tables as they are, the
    # cron shrinks them once it is 1 again; an emptied dict stays listed
    s = start_server("--enable-debug-command", "yes", "--save", "")
    c = s.client(db=9)
    c.mset({"{foo}%d" % j: "a" for j in range(1, 129)})
    assert b"table size: 128\n number of elements: 128\n" in c.execute_command("DEBUG", "HTSTATS", 9)
    assert c.execute_command("DEBUG", "DICT-RESIZING", 0) == b"OK"
    c.delete(*["{foo}%d" % j for j in range(1, 124)])
    cycles = c.info("stats")["eventloop_cycles"]
    wait_until(lambda: c.info("stats")["eventloop_cycles"] > cycles + 20, what="cron passes")
    assert b"table size: 128\n number of elements: 5\n" in c.execute_command("DEBUG", "HTSTATS", 9)
    assert c.execute_command("DEBUG", "DICT-RESIZING", 1) == b"OK"
    wait_until(lambda: b"table size: 8\n number of elements: 5\n" in c.execute_command("DEBUG", "HTSTATS", 9),
               what="the table shrunk")

    def main_overhead():
        flat = c.execute_command("MEMORY", "STATS")
        db9 = dict(zip(flat[0::2], flat[1::2]))[b"db.9"]
        return dict(zip(db9[0::2], db9[1::2]))[b"overhead.hashtable.main"]
    c.delete(*["{foo}%d" % j for j in range(124, 129)])
    wait_until(lambda: main_overhead() < 400, what="the emptied dict shrunk")
    assert b"[Dictionary HT]\nHash table 0 stats (main hash table):\nNo stats available for empty dictionaries\n" \
        in c.execute_command("DEBUG", "HTSTATS", 9)


# -- loading a small payload serves no event (unit/cluster/misc's -LOADING) ---------------

def test_small_sync_payload_loads_without_serving(start_server):
    """Redis serves events while loading only each time the bytes loaded
    pass a multiple of loading-process-events-interval-bytes: a replica
    loading a smaller payload answers nothing meanwhile, never -LOADING."""
    master = start_server("--enable-debug-command", "yes", "--repl-diskless-sync", "no")
    m = master.client()
    m.execute_command("DEBUG", "POPULATE", 400, "key", 10)
    # 400 keys at 2 ms each: the load takes about 0.8 s
    replica = start_server("--enable-debug-command", "yes", "--key-load-delay", "2000")
    r = replica.conn()
    assert r.call("REPLICAOF", "127.0.0.1", str(master.port)) == b"+OK\r\n"
    replies = set()

    def linked():
        replies.add(r.call("PING"))
        return b"master_link_status:up" in r.call("INFO", "replication")
    wait_until(linked, timeout=30, interval=0.005, what="the sync")
    assert replies == {b"+PONG\r\n"}
    assert r.call("DBSIZE") == b":400\r\n"
    assert "MASTER <-> REPLICA sync: Loading DB in memory" in replica.output()


# -- proc-title-template's validation (unit/other) ------------------------------------------

TEMPLATES = ["{invalid-var}", "{title", "", "x}", "{title} {server-mode}", "{title}", " {title} ",
             "{title} {listen-addr} {port} {tls-port} {unixsocket} {config-file}", "{{x}}", "{{",
             "a{", "{unixsocket}", "{port}", "{config-file}", "TEST {title} {listen-addr}", "{}"]


def _set_title(c, t):
    try:
        c.config_set("proc-title-template", t)
    except Exception as e:      # noqa: BLE001
        return "error: %s" % e
    return c.config_get("proc-title-template")


def test_proc_title_template_validation(r, ref):
    try:
        for t in TEMPLATES:
            assert _set_title(r, t) == _set_title(ref, t), t
        assert _set_title(r, "{invalid-var}") == (
            "error: CONFIG SET failed (possibly related to argument 'proc-title-template') - "
            "template format is invalid or contains unknown variables")
    finally:
        for c in (r, ref):
            c.config_set("proc-title-template", "{title} {listen-addr} {server-mode}")
