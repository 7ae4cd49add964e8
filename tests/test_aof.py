"""Append-only file (Redis 7.0 multi-part layout): what is written, when,
how it is rewritten and loaded, and interoperability with Debian's
redis-server / redis-check-aof in both directions.  Real servers, real
files."""

from __future__ import annotations

import io
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
import redis

from ophidis.tools import check_aof
from support.rdb import build_dataset, payload_value
from support.resp import RespConn, command, encode, parse
from support.servers import REDIS_SERVER, RedisServerProc, ServerProc, port_of, server_env
from support.wait import HAS_WCHAN, in_sleep, wait_until

try:
    import resource
except ImportError:          # not on Windows
    resource = None

REDIS_CHECK_AOF = shutil.which("redis-check-aof")
needs_redis = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

AOF = ("--appendonly", "yes", "--enable-debug-command", "yes")
# Tests that read the incr file right after a reply: with everysec a write
# may wait for a running background fsync (up to 2 s, as in Redis), with
# "no" it is always written before the reply.
AOF_NOW = AOF + ("--appendfsync", "no")


# -- helpers ------------------------------------------------------------------------------------

def aofdir(s):
    return os.path.join(s.dir, "appendonlydir")


def manifest(d):
    with open(os.path.join(d, "appendonly.aof.manifest")) as f:
        return [line.split() for line in f.read().splitlines()]


def manifest_files(d):
    """[(name, seq, type)] from a manifest."""
    return [(m[1], int(m[3]), m[5]) for m in manifest(d)]


def last_incr(d):
    incrs = [m for m in manifest_files(d) if m[2] == "i"]
    return os.path.join(d, incrs[-1][0])


def parse_resp(data: bytes):
    """Commands of a RESP AOF file (annotations skipped)."""
    out = []
    pos = 0
    while pos < len(data):
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        assert data[pos:pos + 1] == b"*", data[pos:pos + 40]
        argv, pos = parse(data, pos)
        out.append(argv)
    return out


def read_cmds(path):
    with open(path, "rb") as f:
        return parse_resp(f.read())


def restart(start_server, s, *args):
    s.stop()
    return start_server("--dir", s.dir, *args, cwd=s.dir)


def kill9(s):
    s.proc.kill()
    s.proc.wait()
    s.log.close()


def info(c):
    return c.info("persistence")


def wait_rewrite(c, timeout=20):
    assert wait_until(lambda: info(c)["aof_rewrite_in_progress"] == 0
                    and info(c)["aof_rewrite_scheduled"] == 0, timeout)


def _raw_replies(port, db, *cmds):
    """The decoded replies to cmds, run in db."""
    with RespConn(port) as c:
        c.call(b"SELECT", b"%d" % db)
        return [c.call_value(*cmd) for cmd in cmds]


_STREAM_KEEP = (b"length", b"last-generated-id", b"max-deleted-entry-id", b"entries-added",
                b"recorded-first-entry-id", b"entries", b"groups")
_GROUP_KEEP = (b"name", b"last-delivered-id", b"entries-read", b"lag", b"pel-count", b"pending", b"consumers")
_CONSUMER_KEEP = (b"name", b"pel-count", b"pending")      # not seen-time: XCLAIM sets it


def _pairs(flat, keep):
    return {k: v for k, v in zip(flat[::2], flat[1::2]) if k in keep}


def stream_canon(port, db, key):
    """What a stream holds, from XINFO STREAM FULL, without the node layout
    and consumers' seen times (a rebuild by commands changes those)."""
    info_, = _raw_replies(port, db, (b"XINFO", b"STREAM", key, b"FULL"))
    d = _pairs(info_, _STREAM_KEEP)
    groups = []
    for g in d.pop(b"groups"):
        gd = _pairs(g, _GROUP_KEEP)
        gd[b"consumers"] = [_pairs(cons, _CONSUMER_KEEP) for cons in gd[b"consumers"]]
        groups.append(gd)
    d[b"groups"] = groups
    return ("stream", d)


def snapshot(c, dbs=(0, 1, 5, 15)):
    """{(db, key): (canonical value, has ttl)} through DUMP (XINFO for streams)."""
    out = {}
    for db in dbs:
        c.execute_command("SELECT", db)
        for k in c.keys():
            if c.type(k) == b"stream":
                v = stream_canon(port_of(c), db, k)
            else:
                v = payload_value(c.dump(k))
            out[(db, k)] = (v, c.pttl(k) > 0)
    c.execute_command("SELECT", 0)
    return out


def add_streams(c):
    """Streams with deleted entries, groups, consumers with and without
    pending entries, and an empty stream that remembers its last ID."""
    c.xadd(b"st", {b"a": b"1"}, id=b"1-1")
    c.execute_command("XADD", b"st", b"2-1", b"b", b"2", b"b", b"3")     # repeated field
    c.xadd(b"st", {b"c": b"3"}, id=b"3-1")
    c.xadd(b"st", {b"d": b"4"}, id=b"4-1")
    c.xdel(b"st", b"2-1")
    c.xgroup_create(b"st", b"g1", id=b"0")
    c.xreadgroup(b"g1", b"alice", {b"st": b">"}, count=2)
    c.xgroup_createconsumer(b"st", b"g1", b"bob")
    c.xgroup_create(b"st", b"g2", id=b"$")
    c.xadd(b"st-empty", {b"x": b"y"}, id=b"7-7")
    c.xtrim(b"st-empty", maxlen=0)


def wait_dead(proc, timeout=15):
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


# -- what the incr file receives --------------------------------------------------------------

def test_layout_on_empty_start_and_writes_before_replies(start_server):
    """An empty start creates base 1 (RDB) + incr 1 + manifest; a write is
    in the incr file before its reply leaves (even with appendfsync no)."""
    s = start_server(*AOF, "--appendfsync", "no")
    d = aofdir(s)
    assert manifest(d) == [["file", "appendonly.aof.1.base.rdb", "seq", "1", "type", "b"],
                           ["file", "appendonly.aof.1.incr.aof", "seq", "1", "type", "i"]]
    with open(os.path.join(d, "appendonly.aof.1.base.rdb"), "rb") as f:
        base = f.read()
    assert base.startswith(b"REDIS0010") and b"aof-base\xc0\x01" in base
    assert "Creating AOF base file appendonly.aof.1.base.rdb on server start" in s.output()
    # A client blocked on BLPOP is answered while another client's
    # pipeline runs, before the loop sleeps in DEBUG SLEEP: its reply must
    # not leave before the AOF holds the push that served it.
    waiter = RespConn(s.port)
    waiter.send_raw(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n")
    c = s.client()
    assert wait_until(lambda: c.info("clients")["blocked_clients"] == 1)
    pusher = RespConn(s.port)
    sleep = 5 if HAS_WCHAN else 2
    pusher.send_raw(b"*3\r\n$5\r\nRPUSH\r\n$1\r\nq\r\n$2\r\nv1\r\n*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$1\r\n%d\r\n"
                    % sleep)
    assert waiter.read().endswith(b"v1\r\n")
    t_reply = time.time()
    cmds = read_cmds(last_incr(d))        # the server is still sleeping
    if HAS_WCHAN:
        # the sleep is not over, however long the read took: the server's
        # main thread is (or is about to be) in the kernel's nanosleep,
        # which it enters once only
        wait_until(lambda: in_sleep(s.pid), 20, 0.005,
                   what="the server in its DEBUG SLEEP")
    else:
        assert time.time() - t_reply < 1.5
    assert [b"RPUSH", b"q", b"v1"] in cmds
    assert [b"LPOP", b"q"] in cmds
    pusher.close()
    waiter.close()


def _propagation_script(c, now_ms):
    """Commands whose AOF form Redis 7.0 rewrites (relative TTLs, float
    increments, pops, transactions, scripts, database changes)."""
    x = c.execute_command
    x("SET", "s1", "v")
    x("SET", "s2", "v", "EX", "100")
    x("SET", "s2b", "v", "PX", "100000", "NX")
    x("SETEX", "s3", "100", "v")
    x("PSETEX", "s4", "100000", "v")
    x("EXPIRE", "s1", "200")
    x("PEXPIRE", "s1", "200000")
    x("EXPIREAT", "s1", str(now_ms // 1000 + 300))
    x("SET", "s5", "w", "KEEPTTL")
    x("SET", "s6", "w", "GET", "XX")
    x("SET", "s7", "w", "PXAT", str(now_ms + 100_000), "GET")
    x("GETSET", "s6", "z")
    x("EXPIRE", "s6", "100", "NX")
    x("EXPIRE", "s6", "100", "NX")               # has a TTL now: nothing
    x("PEXPIREAT", "s6", str(now_ms + 500_000), "GT")
    x("EXPIRE", "s7", "-1")                      # in the past: DEL
    x("SET", "s8", "v")
    x("GETEX", "s8", "PXAT", "1000")             # in the past: DEL
    x("INCRBYFLOAT", "f", "1.5")
    x("HINCRBYFLOAT", "h", "fld", "2.5")
    x("GETEX", "s1", "PERSIST")
    x("GETEX", "s2", "EX", "50")
    x("GETDEL", "s5")
    x("DEL", "nosuchkey")                     # changes nothing: not propagated
    x("RPUSH", "l", "a", "b", "c")
    x("LPOP", "l")
    x("BLPOP", "l", "0")
    x("LMOVE", "l", "l2", "LEFT", "RIGHT")
    x("ZADD", "z", "1", "a", "2", "b")
    x("BZPOPMIN", "z", "0")
    x("RPUSH", "mp", "1", "2", "3")
    x("LMPOP", "2", "nolist", "mp", "LEFT", "COUNT", "2")
    x("BLMPOP", "0", "1", "mp", "RIGHT")
    x("ZADD", "zm", "1", "a", "2", "b", "3", "c")
    x("ZMPOP", "1", "zm", "MAX", "COUNT", "2")
    x("BZMPOP", "0", "1", "zm", "MIN")
    x("RPUSH", "bl", "x")
    x("BRPOPLPUSH", "bl", "bl2", "0")
    x("COPY", "bl2", "bl3", "DB", "4")
    x("RENAME", "bl2", "bl4")
    x("MOVE", "bl4", "5")
    x("SETRANGE", "sr", "3", "abc")
    x("PERSIST", "s1")
    x("SADD", "st", "only")
    x("SPOP", "st")
    x("SET", "rs", "v")
    payload = x("DUMP", "rs")
    x("RESTORE", "rs2", "100000", payload)                   # -> absolute time, ABSTTL
    x("RESTORE", "rs", "1", payload, "REPLACE", "ABSTTL")     # in the past: DEL
    x("XADD", "xs", "*", "f", "v")
    x("XADD", "xs", "MAXLEN", "~", "100", "9999999999999-1", "f", "v")
    x("XGROUP", "CREATE", "xs", "grp", "0")
    x("XREADGROUP", "GROUP", "grp", "c1", "STREAMS", "xs", ">")
    x("XACK", "xs", "grp", "9999999999999-1")
    x("XCLAIM", "xs", "grp", "c2", "0", "9999999999999-1")
    x("XGROUP", "CREATECONSUMER", "xs", "grp", "c3")
    x("XTRIM", "xs", "MAXLEN", "1")
    x("MULTI")
    x("SET", "t1", "1")
    x("INCR", "t1")
    x("EXPIRE", "t1", "100")
    x("EXEC")
    x("MULTI")
    x("SET", "t2", "1")
    x("EXEC")
    x("EVAL", "redis.call('set', KEYS[1], 'x'); redis.call('lpush', KEYS[2], 'y'); return 1", "2", "e1", "e2")
    x("EVAL", "return redis.call('set', KEYS[1], 'x')", "1", "e3")
    x("EVAL", "redis.set_repl(redis.REPL_REPLICA) redis.call('set', KEYS[1], '1') "
      "redis.set_repl(redis.REPL_ALL) redis.call('set', KEYS[2], '2') "
      "redis.set_repl(redis.REPL_NONE) redis.call('set', KEYS[3], '3')", "3", "r1", "r2", "r3")
    x("EVAL", "redis.set_repl(redis.REPL_AOF) redis.call('set', KEYS[1], '1')", "1", "r4")
    x("SELECT", "3")
    x("SET", "in3", "v", "EX", "100")
    x("SELECT", "0")
    x("SET", "back0", "v")
    x("SWAPDB", "0", "3")
    x("FLUSHDB")
    # an empty database's FLUSHDB / FLUSHALL still propagates
    x("FLUSHDB")
    x("FLUSHDB", "ASYNC")
    x("MULTI")
    x("FLUSHDB")
    x("EXEC")
    x("FLUSHALL")
    x("FLUSHALL")
    x("SET", "after-flush", "v")


def _mask(cmds, now_ms):
    out = []
    for argv in cmds:
        m = []
        for a in argv:
            if re.fullmatch(rb"1\d{12}", a) and abs(int(a) - now_ms) < 3_600_000:
                a = b"<ms>"
            elif re.fullmatch(rb"1\d{12}-\d+", a) and abs(int(a[:13]) - now_ms) < 3_600_000:
                a = b"<id>"
            m.append(a)
        out.append(m)
    return out


@needs_redis
def test_incr_file_matches_redis_server(start_server, tmp_path):
    """The same commands give the same incr file as redis-server 7.0.15
    (absolute times masked)."""
    now_ms = int(time.time() * 1000)
    s = start_server(*AOF_NOW)
    c = redis.Redis(port=s.port, single_connection_client=True, socket_timeout=10)
    _propagation_script(c, now_ms)
    ours = _mask(read_cmds(last_incr(aofdir(s))), now_ms)
    our_sizes = (info(c)["aof_current_size"], info(c)["aof_base_size"])
    rp = RedisServerProc(["--appendonly", "yes", "--appendfsync", "no"], dir=str(tmp_path))
    try:
        rc = redis.Redis(port=rp.port, single_connection_client=True, socket_timeout=10)
        _propagation_script(rc, now_ms)
        theirs = _mask(read_cmds(last_incr(str(tmp_path / "appendonlydir"))), now_ms)
        their_sizes = (info(rc)["aof_current_size"], info(rc)["aof_base_size"])
    finally:
        rp.stop()
    # Redis 7.2 propagates XREADGROUP's XGROUP SETID without NOACK too
    # (redis-server 7.0 only with NOACK): the one difference of our file
    setid = [b"XGROUP", b"SETID", b"xs", b"grp", b"9999999999999-1", b"ENTRIESREAD", b"2"]
    assert setid in ours and setid not in theirs
    extra = len(b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in setid)) + len(b"*7\r\n")
    ours.remove(setid)
    # Redis 7.2+ propagates a SET given PXAT as it was sent (7.0 rewrote it
    # to SET key value PXAT <ms>, dropping GET): "GET" more in ours
    pxat_get = [b"SET", b"s7", b"w", b"PXAT", b"<ms>", b"GET"]
    i = ours.index(pxat_get)
    assert theirs[i] == pxat_get[:-1]
    ours[i] = pxat_get[:-1]
    extra += len(b"$3\r\nGET\r\n")
    assert ours == theirs
    assert (our_sizes[0] - extra, our_sizes[1]) == their_sizes and our_sizes[0] > 1000
    # spot checks of the forms themselves
    assert [b"SET", b"s2", b"v", b"PXAT", b"<ms>"] in ours
    assert [b"PEXPIREAT", b"s1", b"<ms>"] in ours
    assert ours.count([b"MULTI"]) == 3            # 2 transactions, XREADGROUP's XCLAIM + SETID


def _monitor_script(port, now_ms):
    """Commands that propagate in another form, seen by MONITOR."""
    mon = socket.create_connection(("127.0.0.1", port), timeout=10)
    mon.sendall(b"*1\r\n$7\r\nMONITOR\r\n")
    assert mon.recv(5) == b"+OK\r\n"
    # (no CLIENT SETINFO at connect: MONITOR shows it where it exists, 7.2+)
    c = redis.Redis(port=port, single_connection_client=True, socket_timeout=10, lib_name=None,
                    lib_version=None)
    x = c.execute_command
    x("SADD", "s", "a")
    x("SPOP", "s")
    x("RPUSH", "l", "a")
    x("BLPOP", "l", "0")
    x("HINCRBYFLOAT", "h", "f", "1.5")
    x("SET", "k", "v", "EX", "100")
    payload = x("DUMP", "k")
    x("RESTORE", "k2", "100000", payload)
    x("RESTORE", "k", "1", payload, "REPLACE", "ABSTTL")
    x("PING")
    seen = b""
    while b'"PING"' not in seen:
        seen += mon.recv(65536)
    mon.close()
    lines = [line.split(b"] ", 1)[1] for line in seen.split(b"\r\n") if b"] " in line]
    return _mask([line.split(b" ", 1) for line in lines if not line.startswith(b'"DUMP"')], now_ms)


@needs_redis
def test_monitor_shows_commands_as_sent_while_propagating(start_server, tmp_path):
    """A command that propagates rewritten (SPOP -> SREM, BLPOP -> LPOP,
    RESTORE -> ABSTTL / DEL ...) shows in MONITOR as the client sent it, as
    in redis-server (its original argv), while the AOF has the rewrite."""
    now_ms = int(time.time() * 1000)
    s = start_server(*AOF_NOW)
    ours = _monitor_script(s.port, now_ms)
    rp = RedisServerProc(["--appendonly", "yes", "--appendfsync", "no"], dir=str(tmp_path))
    try:
        theirs = _monitor_script(rp.port, now_ms)
    finally:
        rp.stop()
    assert ours == theirs
    assert [b'"SPOP"', b'"s"'] in ours and [b'"BLPOP"', b'"l" "0"'] in ours
    aof = read_cmds(last_incr(aofdir(s)))
    assert [b"SREM", b"s", b"a"] in aof and [b"LPOP", b"l"] in aof and [b"DEL", b"k"] in aof


def test_expirations_stay_absolute(start_server):
    s = start_server(*AOF_NOW)
    c = s.client()
    t0 = time.time()
    c.set(b"k", b"v", ex=100)
    t1 = time.time()
    c.expire(b"k2", 5)                          # no such key: nothing
    c.set(b"k3", b"v")
    c.pexpire(b"k3", 50_000)
    cmds = read_cmds(last_incr(aofdir(s)))
    when = int(cmds[1][4])
    assert cmds[1][:4] == [b"SET", b"k", b"v", b"PXAT"]
    assert t0 * 1000 + 100_000 - 5 <= when <= t1 * 1000 + 100_000 + 5
    assert cmds[-1][0] == b"PEXPIREAT"
    time.sleep(1.2)
    s2 = restart(start_server, s, *AOF)
    c2 = s2.client()
    # the time spent down counts: the TTL is not reset to 100 s (however
    # long the restart took: the TTL is what is left until ``when``)
    t2 = time.time()
    pttl = c2.pttl(b"k")
    t3 = time.time()
    assert when - int(t3 * 1000) - 5 <= pttl <= when - int(t2 * 1000) + 50
    assert pttl < 98_900


def test_timestamp_annotations(start_server):
    s = start_server(*AOF_NOW, "--aof-timestamp-enabled", "yes", "--aof-use-rdb-preamble", "no")
    c = s.client()
    c.set(b"a", b"1")
    with open(last_incr(aofdir(s)), "rb") as f:
        data = f.read()
    assert re.match(rb"#TS:\d{10}\r\n\*2\r\n\$6\r\nSELECT", data)
    assert c.bgrewriteaof()
    wait_rewrite(c)
    base = [m for m in manifest_files(aofdir(s)) if m[2] == "b"][0][0]
    assert base.endswith(".base.aof")
    with open(os.path.join(aofdir(s), base), "rb") as f:
        assert f.read().startswith(b"#TS:")
    c.set(b"b", b"2")
    s2 = restart(start_server, s, *AOF)
    assert s2.client().mget(b"a", b"b") == [b"1", b"2"]


def _threads(pid):
    return len(os.listdir("/proc/%d/task" % pid))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs /proc")
@pytest.mark.parametrize("mode", ["everysec", "no"])
def test_everysec_fsyncs_off_the_event_loop(start_server, mode):
    s = start_server(*AOF, "--appendfsync", mode)
    c = s.client()
    n0 = _threads(s.proc.pid)
    c.set(b"a", b"1")
    time.sleep(1.1)                     # the next second: an fsync is due
    c.set(b"b", b"2")
    if mode == "everysec":
        # the fsync went to the background thread (started on first use)
        assert wait_until(lambda: _threads(s.proc.pid) == n0 + 1, 20)
    else:
        time.sleep(0.3)
        assert _threads(s.proc.pid) == n0
    assert info(c)["aof_pending_bio_fsync"] in (0, 1)


# -- durability and round trips ----------------------------------------------------------------------

def test_kill9_with_appendfsync_always_loses_nothing(start_server):
    s = start_server(*AOF, "--appendfsync", "always")
    c = s.client()
    keys = build_dataset(c)
    c.execute_command("FUNCTION", "LOAD", "#!lua name=lib1\nredis.register_function('f1', function() return 1 end)")
    p = c.pipeline(transaction=True)
    p.incr(b"counter")
    p.rpush(b"tx", b"a", b"b")
    p.execute()
    c.eval("redis.call('set', KEYS[1], 'x') redis.call('incr', KEYS[2])", 2, b"sc1", b"sc2")
    before = snapshot(c)
    digest = c.execute_command("DEBUG", "DIGEST")
    kill9(s)
    s2 = start_server("--dir", s.dir, *AOF, cwd=s.dir)
    c2 = s2.client()
    assert c2.execute_command("DEBUG", "DIGEST") == digest
    assert snapshot(c2) == before
    assert len(before) == len(keys) + 4
    assert c2.fcall("f1", 0) == 1
    out = s2.output()
    assert "DB loaded from base file appendonly.aof.1.base.rdb" in out
    assert "DB loaded from incr file appendonly.aof.1.incr.aof" in out
    assert "DB loaded from append only file" in out
    assert c2.info("persistence")["aof_current_size"] > 0


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_every_type_round_trips_through_rewrite(start_server, preamble):
    s = start_server(*AOF, "--aof-use-rdb-preamble", preamble)
    c = s.client()
    build_dataset(c)
    add_streams(c)
    c.execute_command("FUNCTION", "LOAD", "#!lua name=lib1\nredis.register_function('f1', function() return 1 end)")
    before = snapshot(c)
    assert before[(0, b"st")][0][1][b"groups"][0][b"pending"]       # alice holds entries
    assert c.bgrewriteaof()
    wait_rewrite(c)
    d = aofdir(s)
    suffix = "rdb" if preamble == "yes" else "aof"
    assert manifest_files(d) == [("appendonly.aof.2.base.%s" % suffix, 2, "b"),
                                 ("appendonly.aof.2.incr.aof", 2, "i")]
    assert wait_until(lambda: sorted(os.listdir(d)) == sorted(
        ["appendonly.aof.2.base.%s" % suffix, "appendonly.aof.2.incr.aof", "appendonly.aof.manifest"]))
    if preamble == "no":
        with open(os.path.join(d, "appendonly.aof.2.base.aof"), "rb") as f:
            base = parse_resp(f.read())
        assert base[0][:2] == [b"FUNCTION", b"LOAD"]
        names = {a[0] for a in base}
        assert names == {b"FUNCTION", b"SELECT", b"SET", b"RPUSH", b"HMSET", b"SADD", b"ZADD", b"PEXPIREAT",
                         b"XADD", b"XSETID", b"XGROUP", b"XCLAIM"}
        # at most 64 elements per command
        assert max(len(a) for a in base if a[0] == b"RPUSH") == 66
    # DEBUG LOADAOF replays the directory in place (DEBUG DIGEST is not
    # compared: a stream rebuilt by commands has new consumer seen-times)
    assert c.execute_command("DEBUG", "LOADAOF") == b"OK"
    assert snapshot(c) == before
    s2 = restart(start_server, s, *AOF)
    c2 = s2.client()
    assert snapshot(c2) == before
    assert c2.fcall("f1", 0) == 1


def test_rewrite_under_write_load_loses_nothing(start_server):
    s = start_server(*AOF, "--appendfsync", "always")
    c = s.client()
    for i in range(300):
        c.set(b"pre%d" % i, b"x" * 100)
    c.config_set("rdb-key-save-delay", "2000")     # each rewrite takes ~0.6 s
    stop = threading.Event()
    acked = {"n": 0}

    def writer():
        w = s.client()
        while not stop.is_set():
            n = w.incr(b"counter")
            w.rpush(b"log", n)
            acked["n"] = n
    t = threading.Thread(target=writer)
    t.start()
    try:
        for _ in range(3):
            assert wait_until(lambda: info(c)["aof_rewrite_in_progress"] == 0)
            assert c.bgrewriteaof()
            assert info(c)["aof_rewrite_in_progress"] == 1
            wait_rewrite(c)
    finally:
        stop.set()
        t.join()
    assert info(c)["aof_rewrites"] == 3
    assert info(c)["aof_last_bgrewrite_status"] == "ok"
    n = acked["n"]
    assert n > 50
    digest = c.execute_command("DEBUG", "DIGEST")
    assert manifest_files(aofdir(s)) == [("appendonly.aof.4.base.rdb", 4, "b"),
                                         ("appendonly.aof.4.incr.aof", 4, "i")]
    kill9(s)
    s2 = start_server("--dir", s.dir, *AOF, cwd=s.dir)
    c2 = s2.client()
    assert int(c2.get(b"counter")) == n
    assert c2.lrange(b"log", 0, -1) == [b"%d" % i for i in range(1, n + 1)]
    assert c2.execute_command("DEBUG", "DIGEST") == digest


def _limited_server(tmp_path, limit, *args):
    """A server whose files cannot grow beyond ``limit`` bytes (RLIMIT_FSIZE:
    writes past it fail as on a full disk; Python ignores SIGXFSZ)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        s = ServerProc(AOF + args, cwd=str(tmp_path), wait=False)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    s.wait_ready()
    return s


@pytest.mark.skipif(not hasattr(resource, "prlimit"), reason="needs resource.prlimit")
def test_write_errors_refuse_writes_until_solved(tmp_path):
    (tmp_path / "a").mkdir()
    s = _limited_server(tmp_path / "a", 128 * 1024)
    try:
        c = s.client()
        acked = []
        err = None
        for i in range(400):
            try:
                c.set(b"k%d" % i, b"x" * 1000)
                acked.append(i)
            except redis.ResponseError as e:
                err = str(e)
                break
        assert err == "MISCONF Errors writing to the AOF file: No space left on device"
        assert info(c)["aof_last_write_status"] == "err"
        assert c.get(b"k0") == b"x" * 1000              # reads still work
        assert "Short write while writing to the AOF file" in s.output()
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        resource.prlimit(s.proc.pid, resource.RLIMIT_FSIZE, (hard, hard))
        assert wait_until(lambda: info(c)["aof_last_write_status"] == "ok")
        assert "AOF write error looks solved, Redis can write again." in s.output()
        c.set(b"after", b"1")
        expected = c.execute_command("DEBUG", "DIGEST")
    finally:
        s.stop()
    s2 = _wait_start(ServerProc(AOF, cwd=str(tmp_path / "a"), wait=False))
    try:
        c2 = s2.client()
        assert c2.execute_command("DEBUG", "DIGEST") == expected
        assert c2.dbsize() == len(acked) + 1
    finally:
        s2.stop()
    # with appendfsync always the server cannot go on
    (tmp_path / "b").mkdir()
    s3 = _limited_server(tmp_path / "b", 64 * 1024, "--appendfsync", "always")
    sock = RespConn(s3.port)
    replies = b""
    for i in range(200):
        try:
            replies += sock.call(b"SET", b"k%d" % i, b"x" * 1000)
        except OSError:      # the server exited (ConnectionError included)
            break
    sock.close()
    assert 0 < replies.count(b"+OK\r\n") < 200 and b"-" not in replies
    assert wait_dead(s3.proc) == 1
    assert ("Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting..."
            in s3.output())
    s3.log.close()


# -- loading ---------------------------------------------------------------------------------------------

def _write_dir(d, files, manifest_lines):
    os.makedirs(d, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    with open(os.path.join(d, "appendonly.aof.manifest"), "w") as f:
        f.write("".join(line + "\n" for line in manifest_lines))


def _start_on(tmp_path, *args):
    return ServerProc(("--appendonly", "yes") + args, cwd=str(tmp_path), wait=False)


def _wait_start(s):
    s.wait_ready()
    return s


def test_truncated_tail_loaded_with_aof_load_truncated_yes(tmp_path):
    d = str(tmp_path / "appendonlydir")
    good = encode(b"SET", b"foo", b"hello") + encode(b"SET", b"n", b"1")
    _write_dir(d, {"appendonly.aof.1.incr.aof": good + encode(b"SET", b"bar", b"world")[:-3]},
               ["file appendonly.aof.1.incr.aof seq 1 type i"])
    s = _wait_start(_start_on(tmp_path, "--appendfsync", "no"))
    try:
        c = s.client()
        assert c.get(b"foo") == b"hello" and c.get(b"bar") is None
        out = s.output()
        assert "!!! Warning: short read while loading the AOF file appendonly.aof.1.incr.aof!!!" in out
        assert "!!! Truncating the AOF appendonly.aof.1.incr.aof at offset %d !!!" % len(good) in out
        assert "AOF appendonly.aof.1.incr.aof loaded anyway because aof-load-truncated is enabled" in out
        # the tail is cut and new writes follow the last complete command
        c.set(b"after", b"1")
        with open(os.path.join(d, "appendonly.aof.1.incr.aof"), "rb") as f:
            data = f.read()
        assert data.startswith(good + encode(b"SELECT", b"0"))
        assert parse_resp(data)[-1] == [b"SET", b"after", b"1"]
    finally:
        s.stop()


def test_truncated_tail_refused_with_aof_load_truncated_no(tmp_path):
    d = str(tmp_path / "appendonlydir")
    data = encode(b"SET", b"foo", b"hello") + encode(b"SET", b"bar", b"world")[:-1]
    _write_dir(d, {"appendonly.aof.1.incr.aof": data}, ["file appendonly.aof.1.incr.aof seq 1 type i"])
    s = _start_on(tmp_path, "--aof-load-truncated", "no")
    assert wait_dead(s.proc) == 1
    out = s.output()
    assert ("Unexpected end of file reading the append only file appendonly.aof.1.incr.aof. You can: "
            "1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. "
            "2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and "
            "restart the server.") in out
    with open(os.path.join(d, "appendonly.aof.1.incr.aof"), "rb") as f:
        assert f.read() == data                 # untouched
    s.log.close()


def test_unfinished_multi_is_reverted_and_truncated_base_is_fatal(tmp_path):
    d = str(tmp_path / "appendonlydir")
    ok = encode(b"SET", b"foo", b"hello")
    _write_dir(d, {"appendonly.aof.1.incr.aof": ok + encode(b"MULTI") + encode(b"SET", b"bar", b"world")},
               ["file appendonly.aof.1.incr.aof seq 1 type i"])
    s = _wait_start(_start_on(tmp_path))
    try:
        assert s.client().get(b"foo") == b"hello"
        assert s.client().get(b"bar") is None
        assert "Revert incomplete MULTI/EXEC transaction in AOF file appendonly.aof.1.incr.aof" in s.output()
    finally:
        s.stop()
    # a truncated file that is not the last one cannot be repaired
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    _write_dir(d, {"appendonly.aof.1.base.aof": ok[:-2], "appendonly.aof.1.incr.aof": ok},
               ["file appendonly.aof.1.base.aof seq 1 type b", "file appendonly.aof.1.incr.aof seq 1 type i"])
    s = _start_on(tmp_path)
    assert wait_dead(s.proc) == 1
    assert "Fatal error: the truncated file is not the last file" in s.output()
    s.log.close()


@pytest.mark.parametrize("lines,error", [
    (["file appendonly.aof.2.incr.aof seq 2 type i", "file appendonly.aof.1.incr.aof seq 1 type i"],
     "Found a non-monotonic sequence number"),
    (["file appendonly.aof.1.incr.aof seq 1 type i", "", "file appendonly.aof.3.incr.aof seq 3 type i"],
     "Invalid AOF manifest file format"),
    (["file appendonly.aof.1.incr.aof seq 1 type x"], "Unknown AOF file type"),
    (["file appendonly.aof.1.incr.aof seq 1"], "Invalid AOF manifest file format"),
    (["file a/b seq 1 type i"], "File can't be a path, just a filename"),
    (["file appendonly.aof.1.incr.aof seq 1 type i", "file appendonly.aof.2.incr.aof seq 2 type i"],
     "appendonly.aof.2.incr.aof length. stat: No such file or directory"),
])
def test_bad_manifest_or_missing_file_is_fatal(tmp_path, lines, error):
    d = str(tmp_path / "appendonlydir")
    _write_dir(d, {"appendonly.aof.1.incr.aof": encode(b"SET", b"k", b"v"),
                   "appendonly.aof.3.incr.aof": encode(b"SET", b"k3", b"v")}, lines)
    s = _start_on(tmp_path)
    assert wait_dead(s.proc) == 1
    assert error in s.output()
    s.log.close()


def test_unknown_command_and_bad_format(tmp_path):
    d = str(tmp_path / "appendonlydir")
    _write_dir(d, {"appendonly.aof.1.incr.aof": encode(b"SET", b"k", b"v") + encode(b"bla", b"x")},
               ["file appendonly.aof.1.incr.aof seq 1 type i"])
    s = _start_on(tmp_path)
    assert wait_dead(s.proc) == 1
    assert "Unknown command 'bla' reading the append only file appendonly.aof.1.incr.aof" in s.output()
    s.log.close()
    _write_dir(d, {"appendonly.aof.1.incr.aof": encode(b"SET", b"k", b"v") + b"!!!\r\n"},
               ["file appendonly.aof.1.incr.aof seq 1 type i"])
    s = _start_on(tmp_path)
    assert wait_dead(s.proc) == 1
    assert "Bad file format reading the append only file appendonly.aof.1.incr.aof" in s.output()
    s.log.close()


def _bad_format_dir(d):
    _write_dir(d, {"appendonly.aof.1.incr.aof": encode(b"SET", b"k", b"v") + b"!!!\r\n"},
               ["file appendonly.aof.1.incr.aof seq 1 type i"])


def _pid_line_before(out, pid, error):
    """The logo's PID line is in ``out`` and comes before ``error``."""
    lines = out.splitlines()
    at_pid = [i for i, line in enumerate(lines) if re.search(r" PID: %d\b" % pid, line)]
    at_err = [i for i, line in enumerate(lines) if error in line]
    assert at_pid and at_err and at_pid[0] < at_err[0], out
    init = [i for i, line in enumerate(lines) if line.endswith("# Server initialized")]
    assert init and at_pid[0] < init[0] < at_err[0], out


def test_logo_is_logged_before_loading(tmp_path):
    """As redis-server, the logo (with its " PID: " line, how Redis's test
    suite recognises a started server) and "Server initialized" come
    before the files are loaded: a server that then fails to load has
    logged them."""
    d = str(tmp_path / "appendonlydir")
    _bad_format_dir(d)
    s = _start_on(tmp_path, "--always-show-logo", "yes")
    assert wait_dead(s.proc) == 1
    _pid_line_before(s.output(), s.pid, "Bad file format reading the append only file")
    s.log.close()


@needs_redis
def test_redis_server_logs_logo_before_loading_too(tmp_path):
    d = str(tmp_path / "appendonlydir")
    _bad_format_dir(d)
    rp = RedisServerProc(["--appendonly", "yes", "--always-show-logo", "yes"], dir=str(tmp_path), wait=False)
    try:
        assert wait_dead(rp.proc) == 1
        _pid_line_before(rp.output(), rp.pid, "Bad file format reading the append only file")
    finally:
        rp.stop()


@pytest.mark.parametrize("preamble", [False, True])
def test_old_single_file_aof_is_upgraded(tmp_path, preamble):
    if preamble:
        # an old-style file: an RDB holding k1, then commands
        (tmp_path / "src").mkdir()
        src = ServerProc((), cwd=str(tmp_path / "src"))
        try:
            src.client().set(b"k1", b"v1")
            assert src.client().save()
        finally:
            src.stop()
        head = (tmp_path / "src" / "dump.rdb").read_bytes()
    else:
        head = encode(b"SET", b"k1", b"v1") + b"#TS:1628217470\r\n"
    with open(tmp_path / "appendonly.aof", "wb") as f:
        f.write(head + encode(b"SET", b"k2", b"v2"))
    s = _wait_start(_start_on(tmp_path))
    try:
        c = s.client()
        assert c.mget(b"k1", b"k2") == [b"v1", b"v2"]
        if preamble:
            assert "Reading RDB preamble from AOF file..." in s.output()
            assert "Reading the remaining AOF tail..." in s.output()
        assert not os.path.exists(tmp_path / "appendonly.aof")
        d = str(tmp_path / "appendonlydir")
        assert manifest_files(d) == [("appendonly.aof", 1, "b"), ("appendonly.aof.1.incr.aof", 1, "i")]
        assert ("Successfully migrated an old-style AOF file (appendonly.aof) into the AOF directory "
                "(appendonlydir).") in s.output()
        c.set(b"k3", b"v3")
        assert c.bgrewriteaof()
        wait_rewrite(c)
        assert manifest_files(d) == [("appendonly.aof.2.base.rdb", 2, "b"), ("appendonly.aof.2.incr.aof", 2, "i")]
    finally:
        s.stop()
    s2 = _wait_start(_start_on(tmp_path))
    try:
        assert s2.client().mget(b"k1", b"k2", b"k3") == [b"v1", b"v2", b"v3"]
    finally:
        s2.stop()


def test_appendfilename_with_spaces_quotes_and_newlines(start_server):
    name = ' file seq \n"x.aof '
    s = start_server(*AOF, "--appendfilename", name)
    c = s.client()
    c.set(b"a", b"1")
    d = aofdir(s)
    with open(os.path.join(d, name + ".manifest"), "rb") as f:
        assert f.read() == (b'file " file seq \\n\\"x.aof .1.base.rdb" seq 1 type b\n'
                            b'file " file seq \\n\\"x.aof .1.incr.aof" seq 1 type i\n')
    if REDIS_CHECK_AOF is not None:
        out = subprocess.run([REDIS_CHECK_AOF, os.path.join(d, name + ".manifest")], capture_output=True, text=True)
        assert out.returncode == 0 and "All AOF files and manifest are valid" in out.stdout, out.stdout
    s2 = restart(start_server, s, *AOF, "--appendfilename", name)
    assert s2.client().get(b"a") == b"1"
    # a backslash makes a path, as for Redis
    with pytest.raises(redis.ResponseError, match="can't set immutable config"):
        s2.client().config_set("appendfilename", "x")
    bad = ServerProc(("--appendfilename", "a\\b"), wait=False)
    assert wait_dead(bad.proc) == 1
    assert "appendfilename can't be a path, just a filename" in bad.output()
    bad.log.close()


# -- BGREWRITEAOF, scheduling, CONFIG SET appendonly --------------------------------------------------------

def test_bgrewriteaof_replies_and_scheduling_with_bgsave(start_server):
    s = start_server(*AOF)
    c = s.client()
    for i in range(400):
        c.set(b"k%d" % i, b"v")
    c.config_set("rdb-key-save-delay", "4000")       # ~1.6 s per child
    assert c.bgsave()
    assert command(s.port, "BGREWRITEAOF") == b"+Background append only file rewriting scheduled\r\n"
    assert info(c)["aof_rewrite_scheduled"] == 1
    assert info(c)["aof_pending_rewrite"] == 1
    rewrites = info(c)["aof_rewrites"]
    # it starts once the BGSAVE child is gone
    assert wait_until(lambda: info(c)["aof_rewrite_in_progress"] == 1, 10)
    assert info(c)["rdb_bgsave_in_progress"] == 0
    assert command(s.port, "BGREWRITEAOF") == b"-ERR Background append only file rewriting already in progress\r\n"
    assert command(s.port, "BGSAVE").startswith(b"-ERR Another child process is active (AOF?): can't BGSAVE")
    wait_rewrite(c)
    assert info(c)["aof_rewrites"] == rewrites + 1
    assert info(c)["aof_last_rewrite_time_sec"] >= 0
    # inside a transaction: scheduled
    sock = RespConn(s.port)
    sock.send_raw(b"MULTI\r\nBGREWRITEAOF\r\nEXEC\r\n")
    reply = sock.read_replies(3)
    assert reply == b"+OK\r\n+QUEUED\r\n*1\r\n+Background append only file rewriting scheduled\r\n"
    sock.close()
    wait_rewrite(c)
    c.config_set("rdb-key-save-delay", "0")
    out = s.output()
    assert re.search(r"Background append only file rewriting started by pid \d+", out)
    assert "Background AOF rewrite finished successfully" in out


def test_killed_rewrite_keeps_files_and_reopens_incr(start_server):
    s = start_server(*AOF)
    c = s.client()
    for i in range(400):
        c.set(b"k%d" % i, b"v")
    c.config_set("rdb-key-save-delay", "100000")
    assert c.bgrewriteaof()
    assert wait_until(lambda: info(c)["aof_rewrite_in_progress"] == 1)
    child = int(re.search(r"rewriting started by pid (\d+)", s.output()).group(1))
    c.set(b"during", b"1")
    os.kill(child, signal.SIGKILL)
    assert wait_until(lambda: info(c)["aof_rewrite_in_progress"] == 0)
    assert info(c)["aof_last_bgrewrite_status"] == "err"
    assert info(c)["aof_rewrites_consecutive_failures"] == 1
    assert not os.path.exists(os.path.join(s.dir, "temp-rewriteaof-bg-%d.aof" % child))
    assert manifest_files(aofdir(s)) == [("appendonly.aof.1.base.rdb", 1, "b"),
                                         ("appendonly.aof.1.incr.aof", 1, "i"),
                                         ("appendonly.aof.2.incr.aof", 2, "i")]
    c.config_set("rdb-key-save-delay", "0")
    digest = c.execute_command("DEBUG", "DIGEST")
    s2 = restart(start_server, s, *AOF)
    assert s2.client().execute_command("DEBUG", "DIGEST") == digest


def test_config_set_appendonly_at_runtime(start_server):
    s = start_server("--enable-debug-command", "yes", "--appendfsync", "no")
    c = s.client()
    for i in range(300):
        c.set(b"k%d" % i, b"v")
    c.config_set("rdb-key-save-delay", "5000")      # the first rewrite takes 1.5 s
    assert info(c)["aof_enabled"] == 0
    assert "aof_current_size" not in info(c)
    assert c.config_set("appendonly", "yes")
    assert info(c)["aof_enabled"] == 1
    assert info(c)["aof_rewrite_in_progress"] == 1
    d = aofdir(s)
    assert not os.path.exists(os.path.join(d, "appendonly.aof.manifest"))
    c.set(b"during", b"1")                       # goes to the temp incr file
    assert os.path.exists(os.path.join(d, "temp-appendonly.aof.incr"))
    wait_rewrite(c)
    c.config_set("rdb-key-save-delay", "0")
    assert manifest_files(d) == [("appendonly.aof.1.base.rdb", 1, "b"), ("appendonly.aof.1.incr.aof", 1, "i")]
    assert [b"SET", b"during", b"1"] in read_cmds(os.path.join(d, "appendonly.aof.1.incr.aof"))
    c.set(b"after", b"2")
    digest = c.execute_command("DEBUG", "DIGEST")
    assert c.config_set("appendonly", "no")
    assert info(c)["aof_enabled"] == 0
    c.set(b"not-in-aof", b"3")
    assert b"not-in-aof" not in open(os.path.join(d, "appendonly.aof.1.incr.aof"), "rb").read()
    c.delete(b"not-in-aof")
    c.set(b"only-in-base", b"4")
    # with appendonly no, BGREWRITEAOF still writes a base and drops the incr files
    assert command(s.port, "BGREWRITEAOF") == b"+Background append only file rewriting started\r\n"
    wait_rewrite(c)
    assert manifest_files(d) == [("appendonly.aof.2.base.rdb", 2, "b")]
    assert wait_until(lambda: not os.path.exists(os.path.join(d, "appendonly.aof.1.incr.aof")))
    digest = c.execute_command("DEBUG", "DIGEST")
    s2 = restart(start_server, s, *AOF)
    assert s2.client().execute_command("DEBUG", "DIGEST") == digest


def test_config_set_appendonly_inside_transaction_is_scheduled(start_server):
    s = start_server("--enable-debug-command", "yes")
    c = s.client()
    c.set(b"x", b"0")
    p = c.pipeline(transaction=True)
    p.incr(b"x")
    p.config_set("appendonly", "yes")
    p.incr(b"x")
    p.execute()
    assert "AOF was enabled during a transaction. An AOF background was scheduled" in s.output()
    wait_rewrite(c)
    assert info(c)["aof_enabled"] == 1
    c.incr(b"x")
    s2 = restart(start_server, s, *AOF)
    assert s2.client().get(b"x") == b"3"


def test_automatic_rewrite_on_growth(start_server):
    s = start_server(*AOF, "--auto-aof-rewrite-percentage", "100", "--auto-aof-rewrite-min-size", "20kb")
    c = s.client()
    assert info(c)["aof_rewrites"] == 0
    for i in range(60):
        c.set(b"k%d" % (i % 5), b"x" * 1000)
    assert wait_until(lambda: info(c)["aof_rewrites"] >= 1)
    wait_rewrite(c)
    assert re.search(r"Starting automatic rewriting of AOF on \d+% growth", s.output())
    st = info(c)
    # the new base holds 5 keys: far smaller than the 60 writes
    assert st["aof_base_size"] < 20_000
    assert st["aof_current_size"] >= st["aof_base_size"]


NEWER_PERSISTENCE_FIELDS = ("backup_in_progress",)


@needs_redis
def test_info_persistence_fields_as_redis(start_server, tmp_path):
    s = start_server(*AOF)
    ours = list(s.client().info("persistence"))
    rp = RedisServerProc(["--appendonly", "yes"], dir=str(tmp_path))
    try:
        theirs = list(rp.client().info("persistence"))
    finally:
        rp.stop()
    # Redis 7.0's fields, in its order; then what 8.x adds
    assert [f for f in ours if f not in NEWER_PERSISTENCE_FIELDS] == theirs
    assert "aof_pending_bio_fsync" in ours


def test_shutdown_refused_while_first_aof_is_written(start_server):
    s = start_server("--enable-debug-command", "yes")
    c = s.client()
    for i in range(400):
        c.set(b"k%d" % i, b"v")
    c.config_set("rdb-key-save-delay", "100000")
    c.config_set("appendonly", "yes")
    with pytest.raises(redis.ResponseError, match="^Errors trying to SHUTDOWN. Check logs.$"):
        c.shutdown()
    assert "Writing initial AOF, can't exit." in s.output()
    c.config_set("appendonly", "no")               # kills the child
    assert info(c)["aof_rewrite_in_progress"] == 0


# -- interoperability with redis-server ----------------------------------------------------------------

@needs_redis
@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_redis_server_loads_ophidis_directory(start_server, tmp_path, preamble):
    s = start_server(*AOF, "--aof-use-rdb-preamble", preamble, cwd=str(tmp_path))
    c = s.client()
    build_dataset(c)
    add_streams(c)
    c.execute_command("FUNCTION", "LOAD", "#!lua name=lib1\nredis.register_function('f1', function() return 7 end)")
    assert c.bgrewriteaof()
    wait_rewrite(c)
    c.rpush(b"l:small", b"more")
    c.hset(b"h:lp", b"added", b"after-rewrite")
    c.execute_command("SELECT", 5)
    c.set(b"db5:late", b"v", ex=1000)
    c.execute_command("SELECT", 0)
    expected = snapshot(c)
    s.stop()
    rp = RedisServerProc(["--appendonly", "yes"], dir=str(tmp_path))
    try:
        assert snapshot(rp.client()) == expected
        assert rp.client().fcall("f1", 0) == 7
    finally:
        rp.stop()


@needs_redis
@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_ophidis_loads_redis_server_directory(start_server, tmp_path, preamble):
    rp = RedisServerProc(["--appendonly", "yes", "--aof-use-rdb-preamble", preamble], dir=str(tmp_path))
    try:
        rc = rp.client()
        build_dataset(rc)
        add_streams(rc)
        rc.bgrewriteaof()
        assert wait_until(lambda: rc.info("persistence")["aof_rewrite_in_progress"] == 0
                        and rc.info("persistence")["aof_rewrite_scheduled"] == 0)
        rc.lpush(b"l:long", b"head")
        p = rc.pipeline(transaction=True)
        p.zadd(b"z:lp", {b"new": 7})
        p.sadd(b"set:ht", b"zz")
        p.execute()
        rc.eval("redis.call('set', KEYS[1], 'x') redis.call('expire', KEYS[1], 500)", 1, b"scripted")
        rc.xadd(b"st", {b"e": b"5"}, id=b"5-1")
        rc.xreadgroup(b"g2", b"carol", {b"st": b">"})
        rc.xack(b"st", b"g1", b"1-1")
        live = snapshot(rc)
    finally:
        rp.stop()           # SIGTERM: redis-server writes and fsyncs the AOF
    # what redis-server itself loads from its directory (a stream group's
    # entries-read is not replayed exactly by Redis's own commands)
    rp = RedisServerProc(["--appendonly", "yes", "--aof-use-rdb-preamble", preamble], dir=str(tmp_path))
    try:
        expected = snapshot(rp.client())
    finally:
        rp.stop()
    assert len(expected) == len(live) and expected[(0, b"l:long")] == live[(0, b"l:long")]
    s = start_server(*AOF, cwd=str(tmp_path))
    assert snapshot(s.client()) == expected
    files = manifest_files(str(tmp_path / "appendonlydir"))
    assert files[0][2] == "b" and files[0][0].endswith("rdb" if preamble == "yes" else "aof")


@needs_redis
def test_replica_aof_restarts_after_full_sync(start_server, tmp_path):
    """A replica with appendonly yes rewrites its AOF from the dataset it
    received, then appends the master's stream: restarted alone, it has the
    master's data (not what it held before the sync)."""
    rp = RedisServerProc(["--repl-diskless-sync-delay", "0"], dir=str(tmp_path))
    try:
        m = rp.client()
        m.set(b"before", b"1")
        m.rpush(b"l", b"a", b"b")
        s = start_server(*AOF)
        c = s.client()
        c.set(b"replica-only", b"x")
        c.execute_command("REPLICAOF", "127.0.0.1", rp.port)

        def caught_up():
            r = c.info("replication")
            return r.get("master_link_status") == "up" and \
                r.get("slave_repl_offset") == m.info("replication")["master_repl_offset"]
        assert wait_until(caught_up)
        wait_rewrite(c)
        m.set(b"after", b"2", ex=1000)
        m.lpop(b"l")
        m.incr(b"n")
        assert wait_until(caught_up)
        expected = snapshot(m)
        assert snapshot(c) == expected
        assert "Background AOF rewrite finished successfully" in s.output()
    finally:
        rp.stop()
    s2 = restart(start_server, s, *AOF)
    assert snapshot(s2.client()) == expected
    assert s2.client().exists(b"replica-only") == 0


# -- check tools --------------------------------------------------------------------------------------------

def _ophidis_check(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "ophidis.tools.check_aof", *args], capture_output=True,
                          text=True, env=server_env(), input=stdin)


def _ophidis_check_inproc(*args, stdin=""):
    out = io.StringIO()
    rc = check_aof.main(list(args), out=out, stdin=io.StringIO(stdin))
    return subprocess.CompletedProcess(args, rc, out.getvalue(), "")


def _populated_dir(start_server, preamble="yes"):
    s = start_server(*AOF, "--aof-use-rdb-preamble", preamble)
    c = s.client()
    build_dataset(c)
    assert c.bgrewriteaof()
    wait_rewrite(c)
    p = c.pipeline(transaction=True)
    p.set(b"a", b"1")
    p.incr(b"b")
    p.execute()
    s.stop()
    return aofdir(s)


@pytest.mark.skipif(REDIS_CHECK_AOF is None, reason="redis-check-aof is not installed")
@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_redis_check_aof_accepts_ophidis_directory(start_server, preamble):
    d = _populated_dir(start_server, preamble)
    out = subprocess.run([REDIS_CHECK_AOF, os.path.join(d, "appendonly.aof.manifest")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout
    assert "All AOF files and manifest are valid" in out.stdout
    assert "Start to check BASE AOF (%s format)." % ("RDB" if preamble == "yes" else "RESP") in out.stdout


def _tool_cases(tmp_path):
    """(name, path, stdin, args) cases for both check tools."""
    d = tmp_path / "appendonlydir"
    d.mkdir()
    ok = encode(b"SET", b"foo", b"hello")
    (d / "appendonly.aof.1.base.aof").write_bytes(b"#TS:1628217470\r\n" + ok + encode(b"MULTI") + ok
                                                  + encode(b"EXEC") + b"#TS:1628217474\r\n" + ok)
    (d / "appendonly.aof.1.incr.aof").write_bytes(ok + encode(b"SET", b"bar", b"world")[:-4])
    (d / "appendonly.aof.manifest").write_text("file appendonly.aof.1.base.aof seq 1 type b\n"
                                               "file appendonly.aof.1.incr.aof seq 1 type i\n")
    (tmp_path / "old.aof").write_bytes(ok + b"!!!")
    (tmp_path / "multi.aof").write_bytes(ok + encode(b"MULTI") + ok)
    (tmp_path / "nested.aof").write_bytes(encode(b"MULTI") + encode(b"MULTI"))
    return [
        ["%s/appendonlydir/appendonly.aof.manifest"],
        ["--fix", "%s/appendonlydir/appendonly.aof.manifest"],
        ["%s/appendonlydir/appendonly.aof.manifest"],
        ["%s/old.aof"],
        ["--fix", "%s/old.aof"],
        ["%s/old.aof"],
        ["%s/multi.aof"],
        ["%s/nested.aof"],
        ["--truncate-to-timestamp", "1628217471", "%s/appendonlydir/appendonly.aof.manifest"],
        ["--bogus"],
    ]


@pytest.mark.skipif(REDIS_CHECK_AOF is None, reason="redis-check-aof is not installed")
def test_check_aof_tool_agrees_with_redis_check_aof(tmp_path):
    """Same verdicts, messages, repairs and exit codes as redis-check-aof
    on valid, truncated, malformed and timestamped files."""
    results = {}
    for tool in ("redis", "ophidis"):
        base = tmp_path / tool
        base.mkdir()
        runs = []
        for args in _tool_cases(base):
            args = [a % base if "%s" in a else a for a in args]
            if tool == "redis":
                out = subprocess.run([REDIS_CHECK_AOF, *args], capture_output=True, text=True, input="y\n")
            else:
                out = _ophidis_check_inproc(*args, stdin="y\n")
            text = out.stdout.replace(str(base), "<dir>").replace("redis-check-aof", "<tool>") \
                .replace("ophidis-check-aof", "<tool>")
            runs.append((out.returncode, text))
        files = {p.relative_to(base).as_posix(): p.read_bytes() for p in base.rglob("*") if p.is_file()}
        results[tool] = (runs, files)
    (r_runs, r_files), (o_runs, o_files) = results["redis"], results["ophidis"]
    for i, (r, o) in enumerate(zip(r_runs, o_runs)):
        assert r == o, "case %d" % i
    assert r_files == o_files


def test_check_aof_tool_on_rdb_preamble_directory(start_server):
    d = _populated_dir(start_server, "yes")
    out = _ophidis_check(os.path.join(d, "appendonly.aof.manifest"))
    assert out.returncode == 0, out.stdout
    assert "Start to check BASE AOF (RDB format)." in out.stdout
    assert "RDB preamble is OK, proceeding with AOF tail..." in out.stdout
    assert "All AOF files and manifest are valid" in out.stdout


def test_check_aof_tool_old_style_file_with_manifest_like_data(tmp_path):
    """Redis 7.2+'s redis-check-aof: a file is a manifest only when its
    first line that is not a comment starts with "file"; an old-style AOF
    whose data holds manifest-like lines is checked as an AOF (Debian's 7.0
    tool takes it for a broken manifest)."""
    line = b"file appendonly.aof.2.base.rdb seq 2 type b"
    aof = tmp_path / "appendonly.aof"
    aof.write_bytes(encode(b"SET", b"file", b"file") + encode(b"SET", line, line))
    out = _ophidis_check_inproc(str(aof))
    assert out.returncode == 0, out.stdout
    assert out.stdout.startswith("Start checking Old-Style AOF\n") and "is valid" in out.stdout
    # a manifest led by comments is still one
    d = tmp_path / "appendonlydir"
    d.mkdir()
    (d / "appendonly.aof.1.base.aof").write_bytes(encode(b"SET", b"k", b"v"))
    (d / "appendonly.aof.manifest").write_text("# a comment\nfile appendonly.aof.1.base.aof seq 1 type b\n")
    out = _ophidis_check_inproc(str(d / "appendonly.aof.manifest"))
    assert out.returncode == 0 and out.stdout.startswith("Start checking Multi Part AOF\n"), out.stdout


@pytest.mark.parametrize("kind", ["ours", pytest.param("redis", marks=needs_redis)])
def test_flushall_with_save_points_always_propagates(start_server, tmp_path, kind):
    """FLUSHALL saves when save points exist, which resets the change
    counter: every FLUSHALL still reaches the AOF, as with redis-server."""
    args = ["--appendonly", "yes", "--appendfsync", "always", "--save", "3600 1"]
    s = start_server(*args) if kind == "ours" else RedisServerProc(args, dir=str(tmp_path))
    d = aofdir(s) if kind == "ours" else str(tmp_path / "appendonlydir")
    try:
        c = redis.Redis(port=s.port, socket_timeout=20)
        c.set(b"key", b"v")
        for _ in range(4):
            c.flushall()
        c.set(b"key", b"v2")
        c.flushdb()
        c.flushdb()
        assert read_cmds(last_incr(d)) == [[b"SELECT", b"0"], [b"SET", b"key", b"v"]] + [[b"FLUSHALL"]] * 4 + [
            [b"SET", b"key", b"v2"], [b"FLUSHDB"], [b"FLUSHDB"]]
    finally:
        s.stop()
