"""What Redis 7.4's own persistence and robustness tests check that 7.0's
did not: the deep checks of a hash listpack with field TTLs (listpackex)
in a RESTORE payload.

Debian's redis-server 7.0 knows no field TTLs and valkey-server writes
them in its own format, so the expectations here are Redis 7.4.1's
(rdb.c: the listpackex's entry validation)."""

from __future__ import annotations

import time

import pytest
import redis

from ophidis.persistence.listpack import lp_build, lp_entry
from ophidis.persistence.rdbcodec import crc64, enc_len
from ophidis.persistence.rdbformat import RDB_VERSION_HFE, T_HASH_LISTPACK_EX
from support.replication import propagated
from support.wait import wait_until

BAD = "Bad data format"
FUTURE_MS = 4102444800000          # 2100-01-01


def listpackex_payload(triples):
    """A DUMP payload of a listpackex hash: (field, value, expiry ms or 0)."""
    ents = [lp_entry(x) for t in triples for x in t]
    blob = lp_build(ents)
    times = [t[2] for t in triples if t[2]]
    body = (min(times) if times else 0).to_bytes(8, "little") + enc_len(len(blob)) + blob
    p = bytes((T_HASH_LISTPACK_EX,)) + body + RDB_VERSION_HFE.to_bytes(2, "little")
    return p + crc64(p).to_bytes(8, "little")


def _restore(c, p):
    try:
        return c.execute_command("RESTORE", "k", 0, p, "REPLACE")
    except redis.ResponseError as e:
        return "ERR " + str(e)


UNORDERED = [(b"f2", b"v2", FUTURE_MS + 2000), (b"f1", b"v1", FUTURE_MS + 1000), (b"f3", b"v3", 0)]
TTL_AFTER_NONE = [(b"f1", b"v1", 0), (b"f2", b"v2", FUTURE_MS), (b"f3", b"v3", 0)]


@pytest.mark.parametrize("triples", [UNORDERED, TTL_AFTER_NONE], ids=["unordered", "ttl-after-none"])
def test_listpackex_order_is_a_deep_check(r, config, triples):
    # 7.4: with deep sanitisation the fields with a TTL must come first, by
    # expiry time; the payload is refused and nothing enters the keyspace
    p = listpackex_payload(triples)
    config.set(r, "sanitize-dump-payload", "yes")
    assert BAD in _restore(r, p)
    assert r.exists("k") == 0
    assert r.ping()
    # without it Redis takes the listpack as it is; Ophidis takes it and
    # keeps its fields in the listpackex order
    config.set(r, "sanitize-dump-payload", "no")
    assert _restore(r, p) == b"OK"
    assert r.object("encoding", "k") == b"listpackex"
    with_ttl = sorted((t for t in triples if t[2]), key=lambda t: t[2])
    assert r.hkeys("k") == [t[0] for t in with_ttl] + [t[0] for t in triples if not t[2]]
    assert r.execute_command("HPEXPIRETIME", "k", "FIELDS", 3, b"f1", b"f2", b"f3") == [
        dict((t[0], t[2] or -1) for t in triples)[f] for f in (b"f1", b"f2", b"f3")]


def test_listpackex_in_order_restores_in_both_modes(r, config):
    ok = [(b"a", b"1", FUTURE_MS), (b"b", b"2", FUTURE_MS), (b"c", b"3", FUTURE_MS + 5), (b"d", b"4", 0),
          (b"e", b"5", 0)]
    for mode in ("yes", "no"):
        config.set(r, "sanitize-dump-payload", mode)
        assert _restore(r, listpackex_payload(ok)) == b"OK"
        assert r.hkeys("k") == [b"a", b"b", b"c", b"d", b"e"]
        assert r.execute_command("HPEXPIRETIME", "k", "FIELDS", 2, b"c", b"d") == [FUTURE_MS + 5, -1]


# -- repl-timeout changed while the replica waits ---------------------------------------

def test_repl_timeout_set_during_handshake_applies(start_server):
    # the replica waits for the PSYNC reply (the master delays its diskless
    # sync) when its repl-timeout is lowered; the master then stops answering
    # (DEBUG SLEEP: no keep-alive newlines): the replica gives up after the
    # new limit, as Redis's replicationCron checks the directive each second
    master = start_server("--enable-debug-command", "yes", "--repl-diskless-sync", "yes",
                          "--repl-diskless-sync-delay", "1000")
    replica = start_server()
    rc = replica.client()
    rc.replicaof("127.0.0.1", master.port)
    wait_until(lambda: b"handshake" in rc.role()[3], what="handshake")
    sleeper = master.conn()
    wait_until(lambda: b"state=wait_bgsave" in sleeper.call("INFO", "replication"), what="wait_bgsave")
    rc.config_set("repl-timeout", 2)
    sleeper.send("DEBUG", "SLEEP", "8")
    t0 = time.monotonic()
    wait_until(lambda: "Timeout connecting to the MASTER..." in replica.output(), timeout=6,
               what="the replica's timeout")
    assert time.monotonic() - t0 < 6
    sleeper.close()


# -- SPOP with a count propagates SREMs of 1024 members at most --------------------------

def _spop_stream(port, client):
    def workload(c):
        c.sadd("myset", *range(1, 4001))
        for n in (1023, 1024, 1025):
            c.spop("myset", n)
        c.set("end", 1)
    cmds = propagated(port, client, workload, lower=True)
    # each command's name and, for SREM, its key and count of members
    return [(a[0], a[1], len(a) - 2) if a[0] == b"srem" else (a[0],) for a in cmds if a[0] not in (b"select", b"ping")]


def test_spop_count_propagates_srem_batches(server, r, valkey_server, vk, config):
    # Redis 7.2+ (valkey 9.1 as well): one SREM per 1024 popped members, the
    # SREMs of one SPOP in a MULTI when there are several; the replica runs
    # 4 SREMs for these 3 SPOPs
    for c in (r, vk):
        config(c, repl_diskless_sync="no", repl_ping_replica_period=3600)
    ours = _spop_stream(server.port, r)
    assert ours == _spop_stream(valkey_server.port, vk)
    assert ours == [(b"sadd",), (b"srem", b"myset", 1023), (b"srem", b"myset", 1024), (b"multi",),
                    (b"srem", b"myset", 1024), (b"srem", b"myset", 1), (b"exec",), (b"set",)]
    assert r.scard("myset") == 928
