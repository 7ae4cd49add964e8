"""RDB persistence: encoders, round trips, SAVE/BGSAVE/save points,
start-up loading, crash safety, corrupt files, DUMP/RESTORE."""

from __future__ import annotations

import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st
from support.rdb import build_dataset, canonical, order_dependent, payload_value
from support.resp import RespConn
from support.servers import REDIS_CHECK_RDB, REDIS_SERVER, RedisServerProc, ServerProc, server_env
from support.wait import wait_until

from ophidis.config import Config
from ophidis.persistence import rdb as R
from ophidis.persistence.rdbcodec import crc64, enc_len, enc_string
from ophidis.persistence.rdbformat import T_HASH, T_SET, T_ZSET_2, RdbError
from ophidis.persistence.rdbpayload import dump_payload, load_payload, verify_payload
from ophidis.persistence import snapshot
from ophidis.persistence.listpack import canonical_int, intset_decode, intset_encode, lp_decode, lp_encode, zl_decode
from ophidis.server.server import Server
from ophidis.types.containers import HashValue, ListValue, SetValue
from ophidis.types.zset import ZSetValue

needs_redis = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


# -- encoders (no server) ---------------------------------------------------------

def test_crc64_check_value():
    assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA
    assert crc64(b"56789", crc64(b"1234")) == 0xE9C6D914C4B8D9CA


def test_length_encoding():
    assert enc_len(0) == b"\x00"
    assert enc_len(63) == b"\x3f"
    assert enc_len(64) == b"\x40\x40"
    assert enc_len(16383) == b"\x7f\xff"
    assert enc_len(16384) == b"\x80\x00\x00\x40\x00"
    assert enc_len(1 << 32) == b"\x81" + (1 << 32).to_bytes(8, "big")


def test_string_encodings():
    assert enc_string(b"-7") == b"\xc0\xf9"
    assert enc_string(b"3000") == b"\xc1\xb8\x0b"
    assert enc_string(b"-2000000000") == b"\xc2" + struct.pack("<i", -2000000000)
    assert enc_string(b"2147483648") == b"\x0a2147483648"     # beyond 32 bits: text
    assert enc_string(b"007") == b"\x03007"                   # not canonical
    assert enc_string(b"-0") == b"\x02-0"
    comp = enc_string(b"ab" * 100)
    assert comp[0] == 0xC3 and len(comp) < 200
    assert enc_string(b"ab" * 100, compress=False) == b"\x40\xc8" + b"ab" * 100
    # LZF is used only when it saves at least 4 bytes
    rnd = os.urandom(100)
    assert enc_string(rnd) == b"\x40\x64" + rnd


def test_canonical_int():
    assert canonical_int(b"0") == 0
    assert canonical_int(b"-9223372036854775808") == -(1 << 63)
    for bad in (b"", b"-", b"-0", b"01", b"+1", b" 1", b"1 ", b"9223372036854775808", b"1_0", b"1.0"):
        assert canonical_int(bad) is None, bad


@given(st.lists(st.one_of(st.binary(max_size=5000), st.integers(-(1 << 63), (1 << 63) - 1).map(
    lambda i: b"%d" % i)), max_size=60))
@settings(max_examples=150, deadline=None)
def test_listpack_round_trip(items):
    assert lp_decode(lp_encode(items)) == items


def test_listpack_entry_bytes():
    # one entry of every integer width + the three string headers
    lp = lp_encode([b"5", b"-1", b"300", b"-32768", b"8388607", b"-2147483648", b"4294967296",
                    b"a", b"b" * 64, b"c" * 4096])
    assert lp[6:8] == b"\x05\x01"
    assert lp[8:11] == b"\xdf\xff\x02"           # -1 as 13-bit
    assert lp[11:14] == b"\xc1\x2c\x02"          # 300 as 13-bit
    assert lp[14:18] == b"\xf1\x00\x80\x03"
    assert lp[-1] == 0xFF
    assert struct.unpack("<I", lp[:4])[0] == len(lp)


def test_intset_widths():
    for vals, width in (([1, 2, 32767], 2), ([-70000, 1], 4), ([-(1 << 50), 5], 8)):
        blob = intset_encode(vals)
        assert struct.unpack("<I", blob[:4])[0] == width
        assert intset_decode(blob) == vals


def test_corrupt_listpack_rejected():
    lp = bytearray(lp_encode([b"abc", b"12345"]))
    for i in range(len(lp)):
        bad = bytearray(lp)
        bad[i] ^= 0xFF
        try:
            out = lp_decode(bytes(bad))
        except Exception as e:  # noqa: BLE001
            assert type(e).__name__ == "EncodingError"
        else:
            assert len(out) == 2


def test_ziplist_decoding():
    # ziplist of "a", 12 (4-bit immediate), 1000 (int16), "hello"
    entries = [b"\x00\x01a", b"\x03\xfd", b"\x02\xc0\xe8\x03", b"\x04\x05hello"]
    body = b"".join(entries)
    tail = 10 + len(body) - len(entries[-1])      # the last entry's offset
    zl = struct.pack("<IIH", 10 + len(body) + 1, tail, 4) + body + b"\xff"
    assert zl_decode(zl) == [b"a", b"12", b"1000", b"hello"]


def _mk_values():
    lst = ListValue([b"a", b"1", b"x" * 5000])
    h = HashValue({b"f": b"v", b"n": b"7"})
    hh = HashValue({b"f%d" % i: b"v" for i in range(200)})
    hh.ht = True
    s = SetValue([b"1", b"2", b"-3"])
    sh = SetValue([b"a%d" % i for i in range(200)])
    sh.enc = b"hashtable"
    sl = SetValue([b"a", b"b"])
    sl.enc = b"listpack"
    z = ZSetValue()
    for m, sc in ((b"a", 1.0), (b"b", 0.5), (b"c", float("inf"))):
        z.add(m, sc)
    zs = ZSetValue()
    for i in range(200):
        zs.add(b"m%d" % i, i / 3)
    zs.skiplist = True
    return [b"plain", b"12", b"y" * 1000, lst, h, hh, s, sh, sl, z, zs]


def test_payload_round_trip_every_encoding():
    for v in _mk_values():
        p = dump_payload(v)
        assert verify_payload(p)
        back = load_payload(p)
        c1, c2 = canonical(v), canonical(back)
        assert c1[:2] == c2[:2]
        if not isinstance(v, ListValue):
            assert c1 == c2


def test_payload_version_and_checksum():
    p = dump_payload(b"hello")
    assert p[-10:-8] == b"\x0a\x00"
    bad = bytearray(p)
    bad[1] ^= 1
    assert not verify_payload(bytes(bad))
    # versions up to Redis 7.4's (12: hashes with field TTLs) are taken
    v12 = p[:-10] + b"\x0c\x00"
    v12 += crc64(v12).to_bytes(8, "little")
    assert verify_payload(v12)
    v13 = p[:-10] + b"\x0d\x00"
    v13 += crc64(v13).to_bytes(8, "little")
    assert not verify_payload(v13)


# -- server: SAVE, restart, encodings ------------------------------------------------

def _restart(start_server, s, *args):
    s.stop()
    return start_server("--dir", s.dir, *args, cwd=s.dir)


def test_save_and_reload_round_trip(start_server):
    s = start_server()
    c = s.client()
    payloads = {}
    for i, v in enumerate(_mk_values()):
        c.restore(b"k%d" % i, 0, dump_payload(v))
    c.set(b"bin\x00\r\nkey", b"\x00\xff")
    c.set(b"big", os.urandom(3 << 20))
    c.set(b"ttl", b"v", px=600_000)
    c.execute_command("SELECT", 9)
    c.set(b"in9", b"nine")
    c.execute_command("SELECT", 0)
    for k in c.keys():
        payloads[k] = c.dump(k)
    assert c.save()
    t0 = c.pttl(b"ttl")
    s2 = _restart(start_server, s)
    c2 = s2.client()
    assert sorted(c2.keys()) == sorted(payloads)
    for k, p in payloads.items():
        mine = c2.dump(k)
        if order_dependent(p):
            assert payload_value(mine) == payload_value(p)
        else:
            assert mine == p, k
    assert 0 < c2.pttl(b"ttl") <= t0
    assert s2.client(db=9).get(b"in9") == b"nine"
    assert "Done loading RDB, keys loaded: %d, keys expired: 0." % (len(payloads) + 1) in s2.output()


def test_encodings_after_load_follow_thresholds(start_server):
    s = start_server("--hash-max-listpack-entries", "4", "--set-max-intset-entries", "3",
                     "--zset-max-listpack-entries", "2")
    c = s.client()
    h = HashValue({b"f%d" % i: b"v" for i in range(5)})      # listpack in the file
    c.restore(b"h", 0, dump_payload(h))
    c.restore(b"s", 0, dump_payload(SetValue([b"1", b"2", b"3", b"4"])))
    z = ZSetValue()
    for i in range(3):
        z.add(b"m%d" % i, i)
    c.restore(b"z", 0, dump_payload(z))
    c.restore(b"l", 0, dump_payload(ListValue([b"a"])))
    big = ListValue([b"x" * 100] * 100)
    big.quick = True            # (quicklist nodes in the file: 2 of them)
    c.restore(b"lbig", 0, dump_payload(big))
    assert c.object("encoding", b"h") == b"hashtable"
    assert c.object("encoding", b"s") == b"hashtable"
    assert c.object("encoding", b"z") == b"skiplist"
    # Redis 7.2+: one packed node within the limits loads as a listpack
    # (7.0 loaded every list as a quicklist)
    assert c.object("encoding", b"l") == b"listpack"
    assert c.object("encoding", b"lbig") == b"quicklist"
    # and the saved file uses the hashtable/skiplist types
    assert c.dump(b"h")[0] == T_HASH
    assert c.dump(b"s")[0] == T_SET
    assert c.dump(b"z")[0] == T_ZSET_2


def test_expired_keys_skipped_at_load(start_server):
    s = start_server()
    c = s.client()
    c.set(b"short", b"v", px=300)
    c.set(b"long", b"v", px=600_000)
    c.set(b"forever", b"v")
    c.config_set("hz", "1")
    assert c.save()
    time.sleep(0.5)
    s2 = _restart(start_server, s)
    c2 = s2.client()
    assert c2.exists(b"short") == 0
    assert c2.exists(b"long", b"forever") == 2
    assert "keys loaded: 2, keys expired: 1." in s2.output()
    assert c2.info("persistence")["rdb_last_load_keys_expired"] == 1


def test_rdbchecksum_no(start_server):
    s = start_server("--rdbchecksum", "no")
    c = s.client()
    c.set(b"a", b"1")
    assert c.save()
    data = open(os.path.join(s.dir, "dump.rdb"), "rb").read()
    assert data[-8:] == b"\x00" * 8
    s2 = _restart(start_server, s, "--rdbchecksum", "yes")
    assert s2.client().get(b"a") == b"1"
    assert "RDB file was saved with checksum disabled: no check performed." in s2.output()


def test_dbfilename_and_dir(start_server, tmp_path):
    s = start_server("--enable-protected-configs", "yes")
    c = s.client()
    other = tmp_path / "other"
    other.mkdir()
    c.config_set("dir", str(other))
    c.config_set("dbfilename", "custom.rdb")
    c.set(b"x", b"y")
    assert c.save()
    assert (other / "custom.rdb").exists()
    assert not (other / "dump.rdb").exists()
    assert not [f for f in os.listdir(other) if f.startswith("temp-")]


# -- BGSAVE ---------------------------------------------------------------------------

def _fill(c, n, prefix=b"k"):
    p = c.pipeline(transaction=False)
    for i in range(n):
        p.set(b"%s%d" % (prefix, i), b"v%d" % i)
        if i % 1000 == 999:
            p.execute()
    p.execute()


def _bgsave_done(c):
    return c.info("persistence")["rdb_bgsave_in_progress"] == 0


def test_bgsave_serves_clients_and_reports(start_server):
    s = start_server()
    c = s.client()
    _fill(c, 2000)
    c.config_set("rdb-key-save-delay", "500")     # 0.5 ms per key: about 1 s
    assert c.bgsave() is True
    info = c.info("persistence")
    assert info["rdb_bgsave_in_progress"] == 1
    with pytest.raises(redis.ResponseError, match="^Background save already in progress$"):
        c.bgsave()
    with pytest.raises(redis.ResponseError, match="^Background save already in progress$"):
        c.execute_command("BGSAVE", "SCHEDULE")
    with pytest.raises(redis.ResponseError, match="^Background save already in progress$"):
        c.save()
    # the parent keeps serving while the child writes: the child (its pid
    # logged before BGSAVE's reply) is stopped meanwhile, so it is still
    # at work however long the writes take
    child = int(re.search(r"Background saving started by pid (\d+)", s.output()).group(1))
    os.kill(child, signal.SIGSTOP)
    try:
        for i in range(200):
            c.set(b"during%d" % i, b"x")
        assert c.info("persistence")["rdb_bgsave_in_progress"] == 1
    finally:
        os.kill(child, signal.SIGCONT)
    assert wait_until(lambda: _bgsave_done(c), 60)
    info = c.info("persistence")
    assert info["rdb_last_bgsave_status"] == "ok"
    assert info["rdb_saves"] == 1
    assert info["rdb_changes_since_last_save"] == 200
    assert info["rdb_last_bgsave_time_sec"] >= 0
    out = s.output()
    assert re.search(r"Background saving started by pid \d+", out)
    assert re.search(r"\d+:C .* DB saved on disk", out)
    assert "Background saving terminated with success" in out
    c.config_set("rdb-key-save-delay", "0")
    s2 = _restart(start_server, s)
    c2 = s2.client()
    assert c2.dbsize() == 2000
    assert c2.get(b"k1999") == b"v1999"


def test_bgsave_syntax_and_multi(start_server):
    s = start_server()
    c = s.client()
    with pytest.raises(redis.ResponseError, match="syntax error"):
        c.execute_command("BGSAVE", "NOW")
    sock = RespConn(s.port)
    sock.send_raw(b"MULTI\r\nBGSAVE\r\nEXEC\r\n")
    assert sock.quit_and_read() == b"+OK\r\n+QUEUED\r\n*1\r\n+Background saving scheduled\r\n"
    sock.close()
    assert wait_until(lambda: os.path.exists(os.path.join(s.dir, "dump.rdb")))
    assert wait_until(lambda: _bgsave_done(c))


def test_save_points_trigger_bgsave(start_server):
    s = start_server("--save", "1", "2")
    c = s.client()
    c.set(b"a", b"1")
    time.sleep(1.2)
    assert not os.path.exists(os.path.join(s.dir, "dump.rdb"))    # one change only
    c.set(b"b", b"2")
    assert wait_until(lambda: "2 changes in 1 seconds. Saving..." in s.output(), timeout=20)
    assert wait_until(lambda: "Background saving terminated with success" in s.output())
    assert wait_until(lambda: c.info("persistence")["rdb_changes_since_last_save"] == 0)


def test_save_disabled_with_empty_string(start_server):
    s = start_server("--save", "")
    c = s.client()
    c.set(b"a", b"1")
    time.sleep(1.5)
    assert not os.path.exists(os.path.join(s.dir, "dump.rdb"))
    assert c.config_get("save") == {"save": ""}


def test_failed_bgsave_sets_misconf(start_server):
    s = start_server("--save", "3600", "1", "--enable-protected-configs", "yes")
    c = s.client()
    os.mkdir(os.path.join(s.dir, "isadir"))
    c.config_set("dbfilename", "isadir")       # rename onto a directory fails
    c.bgsave()
    assert wait_until(lambda: c.info("persistence")["rdb_last_bgsave_status"] == "err")
    assert "Background saving error" in s.output()
    with pytest.raises(redis.ResponseError, match="^MISCONF"):
        c.set(b"a", b"1")
    assert c.get(b"a") is None                 # reads still work
    c.config_set("stop-writes-on-bgsave-error", "no")
    assert c.set(b"a", b"1")
    c.config_set("stop-writes-on-bgsave-error", "yes")
    c.config_set("dbfilename", "dump.rdb")
    c.bgsave()
    assert wait_until(lambda: c.info("persistence")["rdb_last_bgsave_status"] == "ok")
    assert c.set(b"b", b"2")


def shut_down(s, c):
    """SHUTDOWN without arguments (the save points decide) through client c
    of server s, and its exit."""
    try:
        c.shutdown()
    except redis.ConnectionError:
        pass
    s.proc.wait(10)


def test_shutdown_saves_when_save_points(start_server):
    s = start_server("--save", "3600", "1")
    c = s.client()
    c.set(b"persist", b"me")
    shut_down(s, c)
    assert "Saving the final RDB snapshot before exiting." in s.output()
    s2 = start_server("--dir", s.dir, cwd=s.dir)
    assert s2.client().get(b"persist") == b"me"


def test_sigterm_saves(start_server):
    s = start_server("--save", "3600", "1")
    c = s.client()
    c.set(b"persist", b"sig")
    s.proc.send_signal(signal.SIGTERM)
    s.proc.wait(10)
    s2 = start_server("--dir", s.dir, cwd=s.dir)
    assert s2.client().get(b"persist") == b"sig"


def test_shutdown_nosave_and_no_save_points(start_server):
    s = start_server()
    c = s.client()
    c.set(b"a", b"1")
    shut_down(s, c)
    assert not os.path.exists(os.path.join(s.dir, "dump.rdb"))


def test_flushall_saves_when_save_points(start_server):
    s = start_server("--save", "3600", "1000")
    c = s.client()
    c.set(b"a", b"1")
    assert c.save()
    size_before = os.path.getsize(os.path.join(s.dir, "dump.rdb"))
    c.flushall()
    path = os.path.join(s.dir, "dump.rdb")
    assert os.path.getsize(path) < size_before
    res = R.RdbReader(open(path, "rb").read()).load()
    assert res.keys_loaded == 0
    # the save reset the count, as redis-server's (test_flushall_dirty_counter_like_redis)
    assert c.info("persistence")["rdb_changes_since_last_save"] == 0


# -- crash safety and corrupt files -------------------------------------------------

def test_kill9_during_bgsave_keeps_previous_dump(start_server):
    s = start_server()
    c = s.client()
    c.set(b"old", b"value")
    assert c.save()
    path = os.path.join(s.dir, "dump.rdb")
    before = open(path, "rb").read()
    _fill(c, 3000)
    c.config_set("rdb-key-save-delay", "10000")     # 30 s: killed long before it is done
    c.bgsave()
    m = None
    assert wait_until(lambda: re.search(r"Background saving started by pid (\d+)", s.output()))
    m = re.search(r"Background saving started by pid (\d+)", s.output())
    child = int(m.group(1))
    # the child is writing
    assert wait_until(lambda: [f for f in os.listdir(s.dir) if f.startswith("temp-")], 20,
                      what="the child's temp file")
    os.kill(child, signal.SIGKILL)
    os.kill(s.proc.pid, signal.SIGKILL)
    s.proc.wait(10)
    assert open(path, "rb").read() == before
    s2 = start_server("--dir", s.dir, cwd=s.dir)
    c2 = s2.client()
    assert c2.dbsize() == 1 and c2.get(b"old") == b"value"


def test_bgsave_child_killed_by_signal(start_server):
    s = start_server()
    c = s.client()
    _fill(c, 3000)
    c.config_set("rdb-key-save-delay", "10000")     # 30 s: killed long before it is done
    c.bgsave()
    assert wait_until(lambda: re.search(r"Background saving started by pid (\d+)", s.output()))
    child = int(re.search(r"Background saving started by pid (\d+)", s.output()).group(1))
    # killed while it writes (its temp file is there, the parent removes it)
    assert wait_until(lambda: [f for f in os.listdir(s.dir) if f.startswith("temp-")], 20,
                      what="the child's temp file")
    os.kill(child, signal.SIGKILL)
    assert wait_until(lambda: "Background saving terminated by signal 9" in s.output())
    assert c.info("persistence")["rdb_last_bgsave_status"] == "err"
    assert not [f for f in os.listdir(s.dir) if f.startswith("temp-")]
    assert not os.path.exists(os.path.join(s.dir, "dump.rdb"))


def _saved_file(start_server, n=50):
    s = start_server()
    c = s.client()
    for i in range(n):
        c.set(b"key:%d" % i, b"value-%d" % i * 3)
    c.restore(b"list", 0, dump_payload(ListValue([b"e%d" % i for i in range(100)])))
    assert c.save()
    data = open(os.path.join(s.dir, "dump.rdb"), "rb").read()
    s.stop()
    return data


def _start_with(start_server, tmp_path, name, data):
    d = tmp_path / name
    d.mkdir()
    (d / "dump.rdb").write_bytes(data)
    s = start_server(cwd=str(d), wait=False)
    try:
        rc = s.proc.wait(30)
    except subprocess.TimeoutExpired:
        rc = None
    return s, rc


def test_truncated_files_refused(start_server, tmp_path):
    data = _saved_file(start_server)
    for cut in (5, 9, 30, len(data) // 2, len(data) - 9, len(data) - 1):
        s, rc = _start_with(start_server, tmp_path, "cut%d" % cut, data[:cut])
        out = s.output()
        assert rc == 1, (cut, out)
        assert "Terminating server after rdb file reading failure." in out or \
            "Fatal error loading the DB" in out
        if cut >= 9:
            assert re.search(r"Internal error in RDB reading offset \d+", out), out
            assert "Ready to accept connections" not in out


def test_bit_flipped_file_refused(start_server, tmp_path):
    data = _saved_file(start_server)
    for pos in (len(data) // 3, len(data) // 2, len(data) - 3):
        bad = bytearray(data)
        bad[pos] ^= 0x10
        s, rc = _start_with(start_server, tmp_path, "flip%d" % pos, bytes(bad))
        assert rc == 1, s.output()
        assert "Internal error in RDB reading offset" in s.output()


def test_wrong_signature_refused(start_server, tmp_path):
    s, rc = _start_with(start_server, tmp_path, "sig", b"NOTREDIS0010\xff" + b"\x00" * 8)
    assert rc == 1
    assert "Wrong signature trying to load DB from file" in s.output()
    s, rc = _start_with(start_server, tmp_path, "ver", b"REDIS0013\xff" + b"\x00" * 8)
    assert rc == 1
    assert "Can't handle RDB format version 13" in s.output()


def test_failed_load_leaves_keyspace_untouched(tmp_path):
    """A load that fails halfway (DEBUG RELOAD path) never swaps anything in."""
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        srv = Server(Config())
        db = srv.dbs[0]
        db.d[b"live"] = b"data"
        for i in range(100):
            srv.dbs[1].d[b"k%d" % i] = b"v"
        assert srv.persistence.save()
        data = (tmp_path / "dump.rdb").read_bytes()
        (tmp_path / "dump.rdb").write_bytes(data[:len(data) - 40])
        db.d[b"extra"] = b"x"
        err = snapshot.debug_reload(srv, nosave=True)
        assert err == "Error trying to load the RDB dump"     # debug.c's text in 7.0.15
        assert db.d == {b"live": b"data", b"extra": b"x"}
        assert len(srv.dbs[1].d) == 100
        # and a good reload replaces the keyspace with the file's contents
        err = snapshot.debug_reload(srv)
        assert err is None
        assert db.d == {b"live": b"data", b"extra": b"x"}
        del db.d[b"extra"]
        (tmp_path / "dump.rdb").write_bytes(data)
        assert snapshot.debug_reload(srv, nosave=True) is None
        assert db.d == {b"live": b"data"}
    finally:
        os.chdir(cwd)


# -- DUMP / RESTORE ------------------------------------------------------------------

def test_dump_missing_key(r):
    assert r.dump(b"nope") is None


def test_restore_errors(r):
    r.set(b"src", b"hello")
    p = r.dump(b"src")
    with pytest.raises(redis.ResponseError, match="^BUSYKEY Target key name already exists.$"):
        r.restore(b"src", 0, p)
    with pytest.raises(redis.ResponseError, match="^DUMP payload version or checksum are wrong$"):
        r.restore(b"dst", 0, p[:-1] + bytes([p[-1] ^ 1]))
    with pytest.raises(redis.ResponseError, match="Invalid TTL value, must be >= 0"):
        r.restore(b"dst", -1, p)
    with pytest.raises(redis.ResponseError, match="value is not an integer"):
        r.execute_command("RESTORE", b"dst", b"abc", p)
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("RESTORE", b"dst", 0, p, "BOGUS")
    with pytest.raises(redis.ResponseError, match="Invalid IDLETIME value, must be >= 0"):
        r.execute_command("RESTORE", b"dst", 0, p, "IDLETIME", -1)
    with pytest.raises(redis.ResponseError, match="Invalid FREQ value, must be >= 0 and <= 255"):
        r.execute_command("RESTORE", b"dst", 0, p, "FREQ", 256)
    body = b"\x0e\x01\x02junk" + b"\x0a\x00"    # valid checksum, bad body
    with pytest.raises(redis.ResponseError, match="^Bad data format$"):
        r.restore(b"dst", 0, body + crc64(body).to_bytes(8, "little"))
    assert r.exists(b"dst") == 0


def test_restore_replace_ttl_absttl(r):
    r.set(b"src", b"hello")
    p = r.dump(b"src")
    assert r.restore(b"src", 0, p, replace=True)
    assert r.restore(b"t", 5000, p)
    assert 4000 < r.pttl(b"t") <= 5000
    at = int(time.time() * 1000) + 100_000
    assert r.restore(b"a", at, p, absttl=True)
    assert 90_000 < r.pttl(b"a") <= 100_000
    # an absolute TTL in the past: OK but no key (and REPLACE deletes the old one)
    assert r.restore(b"src", 1, p, replace=True, absttl=True)
    assert r.exists(b"src") == 0
    assert r.execute_command("RESTORE", b"i", 0, p, "IDLETIME", 10) == b"OK"


def test_dump_restore_every_encoding(r):
    for i, v in enumerate(_mk_values()):
        p = dump_payload(v)
        r.restore(b"k%d" % i, 0, p)
        got = r.dump(b"k%d" % i)
        if order_dependent(p):
            assert payload_value(got) == payload_value(p)
        else:
            assert got == p


def test_info_persistence_fields(r):
    info = r.info("persistence")
    for f in ("loading", "rdb_changes_since_last_save", "rdb_bgsave_in_progress", "rdb_last_save_time",
              "rdb_last_bgsave_status", "rdb_last_bgsave_time_sec", "rdb_saves", "rdb_last_cow_size",
              "rdb_last_load_keys_loaded", "aof_enabled"):
        assert f in info
    before = r.info("persistence")["rdb_changes_since_last_save"]
    r.set(b"x", b"1")
    assert r.info("persistence")["rdb_changes_since_last_save"] == before + 1
    assert r.save()
    assert r.info("persistence")["rdb_changes_since_last_save"] == 0
    assert abs(r.lastsave().timestamp() - time.time()) < 5


# -- ophidis-check-rdb ---------------------------------------------------------------

def _check(path):
    return subprocess.run([sys.executable, "-m", "ophidis.tools.check_rdb", str(path)],
                          capture_output=True, text=True, env=server_env())


def test_check_rdb_tool(start_server, tmp_path):
    data = _saved_file(start_server)
    good = tmp_path / "good.rdb"
    good.write_bytes(data)
    out = _check(good)
    assert out.returncode == 0, out.stdout
    assert "Checksum OK" in out.stdout
    assert "\\o/ RDB looks OK! \\o/" in out.stdout
    assert "[info] 51 keys read" in out.stdout
    assert "[info] 50 keys of type string" in out.stdout
    assert "[info] 1 keys of type list" in out.stdout
    bad = tmp_path / "bad.rdb"
    bad.write_bytes(data[:len(data) // 2])
    out = _check(bad)
    assert out.returncode == 1
    assert "--- RDB ERROR DETECTED ---" in out.stdout
    assert re.search(r"\[offset \d+\] Unexpected EOF reading RDB file", out.stdout)


@needs_redis
def test_check_rdb_tool_on_redis_file(tmp_path):
    rp = RedisServerProc(dir=str(tmp_path))
    try:
        c = rp.client()
        build_dataset(c)
        c.save()
    finally:
        rp.stop()
    out = _check(tmp_path / "dump.rdb")
    assert out.returncode == 0, out.stdout
    assert "AUX FIELD redis-ver = '7.0.15'" in out.stdout
    assert "Selecting DB ID 15" in out.stdout


@needs_redis
@pytest.mark.skipif(REDIS_CHECK_RDB is None, reason="redis-check-rdb is not installed")
def test_redis_check_rdb_accepts_ophidis_file(start_server, tmp_path):
    data = _saved_file(start_server)
    p = tmp_path / "o.rdb"
    p.write_bytes(data)
    out = subprocess.run([REDIS_CHECK_RDB, str(p)], capture_output=True, text=True)
    assert out.returncode == 0 and "RDB looks OK" in out.stdout, out.stdout


def _rdb_file(body: bytes, version=10) -> bytes:
    data = b"REDIS%04d" % version + body + b"\xff"
    return data + crc64(data).to_bytes(8, "little")


def test_reader_string_records_and_duplicates():
    rec = b"".join(b"\x00" + enc_string(b"k%d" % i) + enc_string(b"v%d" % i) for i in range(100))
    rec += b"\x00" + enc_string(b"n") + enc_string(b"12345")        # integer encoded value
    rec += b"\xfc" + (2**62).to_bytes(8, "little") + b"\x00\x01t\x01x"   # with an expire
    res = R.RdbReader(_rdb_file(b"\xfe\x00" + rec)).load()
    d, exps = res.dbs[0]
    assert len(d) == 102 and d[b"k99"] == b"v99" and d[b"n"] == b"12345"
    assert exps == {b"t": 2**62}
    assert res.keys_loaded == 102 and res.type_counts == {"string": 102}
    dup = b"\xfe\x00" + rec + b"\x00\x02k5\x01z"
    with pytest.raises(RdbError, match="RDB has duplicated key 'k5' in DB 0"):
        R.RdbReader(_rdb_file(dup)).load()
    # an old-format (version 9) file with a ziplist hash and seconds expiry
    ents = [b"\x00\x01f", b"\x03\x01v"]
    body = b"".join(ents)
    zl = struct.pack("<IIH", 10 + len(body) + 1, 10 + len(ents[0]), 2) + body + b"\xff"
    v9 = b"\xfe\x00\xfd" + (2**31 - 1).to_bytes(4, "little") + b"\x0d\x01h" + enc_string(zl)
    res = R.RdbReader(_rdb_file(v9, 9)).load()
    h = res.dbs[0][0][b"h"]
    assert isinstance(h, HashValue) and dict(h) == {b"f": b"v"} and not h.ht
    assert res.dbs[0][1][b"h"] == (2**31 - 1) * 1000


def test_reader_crc_mismatch_and_trailing_truncation():
    good = _rdb_file(b"\xfe\x00\x00\x01a\x01b")
    bad = good[:-1] + bytes([good[-1] ^ 1])
    with pytest.raises(RdbError, match="RDB CRC error"):
        R.RdbReader(bad).load()
    with pytest.raises(RdbError, match="Unexpected EOF") as ei:
        R.RdbReader(good[:-3]).load()
    assert ei.value.offset == len(good) - 3


def test_module_aux_skipped_and_module_value_refused():
    mid = (12345 << 10) | 1
    aux = (b"\xf7" + enc_len(mid) + enc_len(2) + enc_len(2)
           + enc_len(2) + enc_len(7) + enc_len(5) + enc_string(b"blob") + enc_len(4)
           + b"\x00" * 8 + enc_len(0))
    res = R.RdbReader(_rdb_file(aux + b"\xfe\x00\x00\x01a\x01b")).load()
    assert res.module_aux_skipped == 1 and res.dbs[0][0] == {b"a": b"b"}
    modval = b"\xfe\x00\x07\x01m" + enc_len(mid) + enc_len(2) + enc_len(3) + enc_len(0)
    with pytest.raises(RdbError, match="value of type module"):
        R.RdbReader(_rdb_file(modval)).load()
    res = R.RdbReader(_rdb_file(modval)).load(unsupported_ok=True)
    assert res.type_counts == {"module": 1}


def test_function_libraries_written_and_read(tmp_path):
    code = b"#!lua name=mylib\nredis.register_function('f', function() return 1 end)"
    srv = Server(Config())
    srv.functions.rdb_load([code])
    srv.dbs[0].d[b"k"] = b"v"
    path = tmp_path / "f.rdb"
    with open(path, "wb") as f:
        R.write_snapshot(f, srv)
    data = path.read_bytes()
    assert b"\xf5" + enc_string(code) in data
    res = R.RdbReader(data).load()
    assert res.functions == [code]
    assert res.dbs[0][0] == {b"k": b"v"}


@needs_redis
def test_reads_functions_from_redis_file(tmp_path):
    rp = RedisServerProc(dir=str(tmp_path))
    code = "#!lua name=lib1\nredis.register_function('f1', function() return 1 end)"
    try:
        c = rp.client()
        c.execute_command("FUNCTION", "LOAD", code)
        c.set("a", "b")
        c.save()
    finally:
        rp.stop()
    res = R.RdbReader((tmp_path / "dump.rdb").read_bytes()).load()
    assert res.functions == [code.encode()]


# -- a running child's progress in INFO (CHILD_INFO_TYPE_CURRENT_INFO) ------------------------

_CURRENT = ("current_cow_peak", "current_cow_size", "current_cow_size_age", "current_fork_perc",
            "current_save_keys_processed", "current_save_keys_total")


def _progress_seen(c, start, in_progress_field):
    """Run ``start`` (BGSAVE / BGREWRITEAOF) on 4000 keys written 1 ms
    apart; returns the INFO samples taken while the child ran."""
    c.config_set("rdb-key-save-delay", "1000")
    start()
    samples = []
    deadline = time.time() + 60
    while time.time() < deadline:
        i = c.info("persistence")
        if not i[in_progress_field]:
            break
        samples.append(i)
        time.sleep(0.2)
    c.config_set("rdb-key-save-delay", "0")
    return samples, c.info("persistence")


@pytest.mark.parametrize("kind", ["ours", pytest.param("redis", marks=needs_redis)])
@pytest.mark.parametrize("what", ["bgsave", "bgrewriteaof"])
def test_child_progress_in_info(start_server, tmp_path, kind, what):
    """While a BGSAVE / AOF rewrite child runs, INFO shows the keys it
    wrote out of the keys at the fork and its copy-on-write size, as
    redis-server does; all back to 0 when it is done."""
    s = start_server("--enable-debug-command", "yes") if kind == "ours" else RedisServerProc(dir=str(tmp_path))
    try:
        c = redis.Redis(port=s.port, socket_timeout=20)
        c.execute_command("DEBUG", "POPULATE", "4000", "key", "100")
        if what == "bgsave":
            samples, after = _progress_seen(c, c.bgsave, "rdb_bgsave_in_progress")
        else:
            samples, after = _progress_seen(c, c.bgrewriteaof, "aof_rewrite_in_progress")
        assert len(samples) >= 3
        assert all(x["current_save_keys_total"] == 4000 for x in samples)
        done = [x["current_save_keys_processed"] for x in samples]
        assert done == sorted(done) and 0 < done[-1] < 4000 and len(set(done)) >= 2
        late = samples[-1]
        assert late["current_cow_size"] > 0 and late["current_cow_peak"] >= late["current_cow_size"]
        assert 0 < late["current_fork_perc"] < 100
        assert abs(late["current_fork_perc"] - late["current_save_keys_processed"] * 100 / 4000) < 0.01
        assert late["current_cow_size_age"] <= 10      # (the niced child may be slow on a busy machine)
        assert all(after[f] == 0 for f in _CURRENT), after
    finally:
        s.stop()


# -- serving clients while dump.rdb loads --------------------------------------------------------

def _big_rdb(start_server_or_dir, kind, tmp_path):
    """A dump.rdb of 60000 keys of 1000 bytes in a fresh directory."""
    d = str(tmp_path / ("rdb-" + kind))
    os.makedirs(d)
    s = RedisServerProc(dir=d) if REDIS_SERVER else start_server_or_dir("--enable-debug-command", "yes", cwd=d)
    try:
        c = redis.Redis(port=s.port, socket_timeout=60)
        c.config_set("rdbcompression", "no")
        c.execute_command("DEBUG", "POPULATE", "60000", "key", "1000")
        c.save()
    finally:
        s.stop()
    return d


@pytest.mark.parametrize("kind", ["ours", pytest.param("redis", marks=needs_redis)])
def test_clients_are_served_while_loading(start_server, tmp_path, kind):
    """As redis-server processes events while it loads: INFO says
    loading:1 (with the bytes loaded so far), commands without the
    "loading" flag get -LOADING, DEBUG LOG runs, clients that disconnect
    are freed, a SIGTERM ends the server without saving; after the load
    every key is there."""
    d = _big_rdb(start_server, kind, tmp_path)
    # 200 us a key: a load of 12 s or more, still running while the test
    # looks at it (however loaded the machine: it ends with a SIGTERM)
    args = ["--key-load-delay", "200", "--loading-process-events-interval-bytes", "1024"]
    if kind == "ours":
        s = ServerProc(["--enable-debug-command", "yes"] + args, cwd=d, wait=False)
    else:
        s = RedisServerProc(args, dir=d, wait=False)
    try:
        assert wait_until(lambda: _connects(s.port), 30)
        c = redis.Redis(port=s.port, socket_timeout=20)
        i = c.info("persistence")
        assert i["loading"] == 1 and i["loading_total_bytes"] > 60_000_000
        with RespConn(s.port) as raw:
            assert raw.call(b"GET", b"key:1") == b"-LOADING Redis is loading the dataset in memory\r\n"
        others = [RespConn(s.port) for _ in range(5)]
        for o in others:
            assert o.call(b"DEBUG", b"LOG", b"bla") == b"+OK\r\n"
        for o in others:
            o.close()
        assert wait_until(lambda: c.info("clients")["connected_clients"] < 3, 30)
        i = c.info("persistence")
        assert i["loading"] == 1 and 0 < i["loading_loaded_bytes"] <= i["loading_total_bytes"]
        assert "DEBUG LOG: bla" in s.output()
        os.kill(s.pid, signal.SIGTERM)
        assert s.proc.wait(30) == 0
        assert "Received shutdown signal during loading, scheduling shutdown." in s.output()
        assert "Saving the final RDB snapshot" not in s.output()
    finally:
        s.stop()


@pytest.mark.parametrize("kind", ["ours", pytest.param("redis", marks=needs_redis)])
def test_shutdown_command_while_loading(start_server, tmp_path, kind):
    """SHUTDOWN during the load exits at once without saving (status 0)."""
    d = _big_rdb(start_server, kind, tmp_path)
    size = os.path.getsize(os.path.join(d, "dump.rdb"))
    args = ["--key-load-delay", "200", "--save", "3600 1"]     # a load of 12 s or more
    if kind == "ours":
        s = ServerProc(args, cwd=d, wait=False)
    else:
        s = RedisServerProc(args, dir=d, wait=False)
    try:
        assert wait_until(lambda: _connects(s.port), 30)
        with RespConn(s.port) as raw:
            assert b"loading:1" in raw.call(b"INFO", b"persistence")
            raw.send_raw(b"*1\r\n$8\r\nSHUTDOWN\r\n")
            assert s.proc.wait(30) == 0
        assert os.path.getsize(os.path.join(d, "dump.rdb")) == size
        assert "Saving the final RDB snapshot" not in s.output()
    finally:
        s.stop()


def test_every_key_is_there_after_loading_while_serving(start_server, tmp_path):
    d = _big_rdb(start_server, "ours", tmp_path)
    s = ServerProc(["--key-load-delay", "5"], cwd=d, wait=False)
    try:
        assert wait_until(lambda: _connects(s.port), 30)
        c = redis.Redis(port=s.port, socket_timeout=20)
        assert wait_until(lambda: c.info("persistence")["loading"] == 0, 120)
        assert c.dbsize() == 60000
        assert c.get(b"key:59999").startswith(b"value:59999")
    finally:
        s.stop()


def _connects(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server")
def test_flushall_dirty_counter_like_redis():
    """FLUSHALL with save points saves the (empty) keyspace and leaves
    rdb_changes_since_last_save at 0; without them it counts the keys
    removed (unit/other's two FLUSHALL tests), as redis-server."""
    got = []
    for cls in (ServerProc, RedisServerProc):
        for save in ("3600 1 300 100 60 10000", ""):
            s = cls(["--save", save])
            try:
                r = redis.Redis(port=s.port)
                r.mset({"k1": "v", "k2": "v"})
                r.flushall()
                got.append((save, r.info("persistence")["rdb_changes_since_last_save"]))
            finally:
                s.stop()
    assert got[:2] == got[2:]
    assert got[0] == ("3600 1 300 100 60 10000", 0) and got[1][1] > 0
