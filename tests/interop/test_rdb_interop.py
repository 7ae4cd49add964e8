"""RDB interoperability with Debian's redis-server 7.0.15 and redis-check-rdb.

Redis -> Ophidis: a dataset with every type and encoding, TTLs and several
databases is built in redis-server, reloaded there (so both sides hold the
encodings Redis picks at load), saved and loaded by Ophidis; every key's
DUMP payload must be byte-identical (hashtable encodings, which serialize
in hash order, are compared by value and encoding).

Ophidis -> Redis: Ophidis saves the same data; redis-check-rdb accepts the
file and redis-server loads it with the same payloads.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from ophidis.persistence.listpack import lp_entry_size
from ophidis.persistence.rdbencode import quicklist_nodes
from support.rdb import build_dataset, order_dependent, payload_value
from support.servers import REDIS_CHECK_RDB, REDIS_SERVER, RedisServerProc

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


@pytest.fixture(scope="module")
def reference():
    """redis-server holding the dataset, reloaded, with its dump.rdb."""
    rp = RedisServerProc()
    c = rp.client()
    keys = build_dataset(c)
    c.execute_command("DEBUG", "RELOAD")
    c.save()
    payloads = {}
    encodings = {}
    ttls = {}
    for db, k in keys:
        cc = rp.client(db)
        payloads[(db, k)] = cc.dump(k)
        encodings[(db, k)] = cc.object("encoding", k)
        ttls[(db, k)] = cc.pttl(k)
        cc.close()
    yield rp, keys, payloads, encodings, ttls
    rp.stop()
    shutil.rmtree(rp.dir, ignore_errors=True)


def _compare(client_for_db, keys, payloads, encodings=None, ours=False):
    mismatches = []
    for db, k in keys:
        c = client_for_db(db)
        mine = c.dump(k)
        ref = payloads[(db, k)]
        assert mine is not None, (db, k)
        if order_dependent(ref):
            if payload_value(mine) != payload_value(ref):
                mismatches.append((db, k))
        elif mine != ref:
            mismatches.append((db, k))
        if encodings is not None:
            want = encodings[(db, k)]
            assert c.object("encoding", k) == (_encoding_since_72(c, k, want) if ours else want), (db, k)
    assert mismatches == []


def _encoding_since_72(c, k, enc70):
    """The encoding Redis 7.2+ gives a value redis-server 7.0 reported as
    enc70: a hashtable set within set-max-listpack-entries (128) members of
    at most set-max-listpack-value (64) bytes loads as a listpack since 7.2
    (rdbLoadObject), and so does a list the file holds as one packed node
    within list-max-listpack-size (-2: 8 KB); the rest as 7.0."""
    if enc70 == b"hashtable" and c.type(k) == b"set":
        members = c.smembers(k)
        if len(members) <= 128 and all(len(m) <= 64 for m in members):
            return b"listpack"
    if enc70 == b"quicklist":
        items = c.lrange(k, 0, -1)
        if len(quicklist_nodes(items, -2)) == 1 and 7 + sum(map(lp_entry_size, items)) <= 8192:
            return b"listpack"
    return enc70


def test_redis_rdb_loaded_by_ophidis(reference, start_server, tmp_path):
    rp, keys, payloads, encodings, ttls = reference
    shutil.copy(os.path.join(rp.dir, "dump.rdb"), str(tmp_path / "dump.rdb"))
    s = start_server(cwd=str(tmp_path))
    clients = {}

    def cl(db):
        if db not in clients:
            clients[db] = s.client(db=db)
        return clients[db]

    total = sum(1 for _ in keys)
    assert sum(cl(db).dbsize() for db in (0, 1, 5, 15)) == total
    _compare(cl, keys, payloads, encodings, ours=True)
    for (db, k), ttl in ttls.items():
        mine = cl(db).pttl(k)
        if ttl < 0:
            assert mine == ttl
        else:
            assert 0 < mine <= ttl and ttl - mine < 60_000
    out = s.output()
    assert "Loading RDB produced by version 7.0.15" in out
    assert "Done loading RDB, keys loaded: %d, keys expired: 0." % total in out
    assert "DB loaded from disk:" in out
    info = cl(0).info("persistence")
    assert info["rdb_last_load_keys_loaded"] == total


def test_ophidis_rdb_loaded_by_redis(reference, start_server, tmp_path):
    rp, keys, payloads, encodings, ttls = reference
    d0 = str(tmp_path / "oph")
    os.makedirs(d0)
    shutil.copy(os.path.join(rp.dir, "dump.rdb"), os.path.join(d0, "dump.rdb"))
    s = start_server(cwd=d0)
    c = s.client()
    assert c.save()
    path = os.path.join(s.dir, "dump.rdb")
    assert open(path, "rb").read(9) == b"REDIS0010"
    if REDIS_CHECK_RDB:
        out = subprocess.run([REDIS_CHECK_RDB, path], capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "RDB looks OK" in out.stdout
        assert "Checksum OK" in out.stdout
    d = str(tmp_path / "redis")
    os.makedirs(d)
    shutil.copy(path, os.path.join(d, "dump.rdb"))
    rp2 = RedisServerProc(dir=d)
    try:
        _compare(lambda db: rp2.client(db), keys, payloads, encodings)
        for (db, k), ttl in ttls.items():
            mine = rp2.client(db).pttl(k)
            assert (mine < 0) == (ttl < 0)
    finally:
        rp2.stop()


def test_dump_payloads_restored_into_redis(reference, start_server):
    """Payloads made by Ophidis are accepted by Redis's RESTORE and give back
    the same DUMP there."""
    rp, keys, payloads, encodings, ttls = reference
    s = start_server()
    c = s.client()
    for (db, k), p in payloads.items():
        c.restore(b"copy:" + k, 0, p, replace=True)
    rc = rp.client()
    try:
        for (db, k), p in payloads.items():
            mine = c.dump(b"copy:" + k)
            rc.restore(b"back:" + k, 0, mine, replace=True)
            back = rc.dump(b"back:" + k)
            if order_dependent(p):
                assert payload_value(back) == payload_value(p)
            else:
                assert back == p == mine, k
    finally:
        for (db, k) in payloads:
            rc.delete(b"back:" + k)


def test_string_dump_identical_to_redis(ref, r):
    values = [b"", b"0", b"-1", b"127", b"128", b"-129", b"32768", b"2147483647", b"2147483648",
              b"-2147483649", b"12345678901", b"123456789012", b"00", b"1.5", b" 1", b"a" * 20,
              b"a" * 21, b"abc" * 100, os.urandom(64), b"x" * 16384, b"\x00" * 70000]
    for i, v in enumerate(values):
        ref.set(b"k%d" % i, v)
        r.set(b"k%d" % i, v)
        assert r.dump(b"k%d" % i) == ref.dump(b"k%d" % i), v[:30]


def test_rdbcompression_no_matches_redis(ref, r):
    ref.config_set("rdbcompression", "no")
    r.config_set("rdbcompression", "no")
    try:
        ref.set(b"k", b"abc" * 100)
        r.set(b"k", b"abc" * 100)
        assert r.dump(b"k") == ref.dump(b"k")
        assert b"abc" * 100 in r.dump(b"k")
    finally:
        ref.config_set("rdbcompression", "yes")
        r.config_set("rdbcompression", "yes")


def test_list_nodes_match_redis_for_other_fill(reference, start_server):
    """list-max-listpack-size changes the node split; follow Redis."""
    rp, keys, payloads, _, _ = reference
    s = start_server("--list-max-listpack-size", "5")
    c = s.client()
    rc = rp.client()
    rc.config_set("list-max-listpack-size", "5")
    try:
        rc.delete(b"fill5")
        rc.rpush(b"fill5", *[b"e%d" % i for i in range(23)])
        p = rc.dump(b"fill5")
        c.restore(b"fill5", 0, p)
        assert c.dump(b"fill5") == p
    finally:
        rc.config_set("list-max-listpack-size", "-2")
        rc.delete(b"fill5")
