"""Corrupt RESTORE payloads and RDB values, Ophidis beside Debian's
redis-server: the same reply for every corruption of every encoding
(listpack, ziplist, intset, zipmap, quicklist, streams, the plain types),
with sanitize-dump-payload yes and no, the integrity message in both logs,
nothing entering the keyspace, and a file holding a corrupt value refused
at start-up and left as it was.

Payloads are built here from the encoders' primitives (with a valid CRC)
and then broken one way each.  Where Redis only finds a corruption with
deep sanitisation (and, without it, takes the payload and fails later on
access, by an assertion), Ophidis refuses the payload in both modes: it
decodes every value when loading it, so the case is compared with
sanitize-dump-payload yes and Ophidis's refusal is checked with no.
"""

from __future__ import annotations

import hashlib
import os
import struct

import pytest
import redis

from ophidis.persistence.listpack import lp_build, lp_entry
from ophidis.persistence.rdbcodec import crc64, enc_len
from support.servers import REDIS_SERVER, RedisServerProc, ServerProc
from support.wait import wait_until

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

BAD = "Bad data format"


# -- building payloads --------------------------------------------------------------

def payload(t, body, version=10):
    """A DUMP payload: type, value, RDB version, CRC-64."""
    p = bytes((t,)) + body + version.to_bytes(2, "little")
    return p + crc64(p).to_bytes(8, "little")


def s(b):
    """An RDB string, never compressed or integer-encoded (exact bytes)."""
    return enc_len(len(b)) + b


def lp(items, count=None):
    raw = lp_build([lp_entry(x) for x in items])
    if count is not None:
        raw = raw[:4] + count.to_bytes(2, "little") + raw[6:]
    return raw


def zl_entry(prevlen, data):
    """A ziplist string entry (data < 64 bytes)."""
    return bytes((prevlen, len(data))) + data


def zl(items, tail=None, count=None, prevlens=None):
    """A ziplist of short strings; tail/count/prevlens override the
    correct header fields and back-lengths."""
    ents = []
    prev = 0
    for i, it in enumerate(items):
        e = zl_entry(prev if prevlens is None else prevlens[i], it)
        ents.append(e)
        prev = len(e)
    body = b"".join(ents)
    last = 10 + len(body) - len(ents[-1]) if ents else 10
    return struct.pack("<IIH", 10 + len(body) + 1, last if tail is None else tail,
                       len(items) if count is None else count) + body + b"\xff"


def intset(width, vals, count=None):
    fmt = {2: "h", 4: "i", 8: "q"}[width]
    return struct.pack("<II%d%s" % (len(vals), fmt), width, len(vals) if count is None else count, *vals)


def zipmap(pairs, count=None):
    out = bytes((len(pairs) if count is None else count,))
    for f, v in pairs:
        out += bytes((len(f),)) + f + bytes((len(v), 0)) + v
    return out + b"\xff"


def sid(ms, seq=0):
    return ms.to_bytes(8, "big") + seq.to_bytes(8, "big")


def stream_lp(ms_delta=0, lp_count=4):
    """One node: master entry (1 live, 0 deleted, field "f"), one entry with
    the master's fields (flags SAMEFIELDS), value "v"."""
    return lp([1, 0, 1, b"f", 0, 2, ms_delta, 0, b"v", lp_count])


def stream(node=None, groups=b"\x00", nodes=1):
    body = enc_len(nodes)
    for _ in range(nodes):
        body += s(sid(1000)) + s(stream_lp() if node is None else node)
    body += enc_len(1) + enc_len(1000) + enc_len(0)       # length, last id
    return body + groups


def group(name=b"g", pel=(1000,), consumers=((b"alice", (1000,)),)):
    out = s(name) + enc_len(1000) + enc_len(0) + enc_len(len(pel))
    for ms in pel:
        out += sid(ms) + (1).to_bytes(8, "little") + enc_len(1)
    out += enc_len(len(consumers))
    for cname, ids in consumers:
        out += s(cname) + (1).to_bytes(8, "little") + enc_len(len(ids))
        for ms in ids:
            out += sid(ms)
    return out


def groups(*gs):
    return enc_len(len(gs)) + b"".join(gs)


HASH_LP = [b"a", b"1", b"b", b"2"]
GOOD_LP = lp(HASH_LP)
bad_backlen = bytearray(GOOD_LP)
bad_backlen[6 + 2] = 9                      # "a"'s back-length
too_long = bytearray(GOOD_LP)
too_long[6] = 0x80 | 40                     # "a" claims 40 bytes

# (name, payload, deep_only): deep_only when Redis refuses it only with
# sanitize-dump-payload yes
CASES = [
    # listpack (hash, zset, quicklist node)
    ("lp truncated", payload(16, s(GOOD_LP[:-1])), False),
    ("lp header size", payload(16, s(struct.pack("<I", len(GOOD_LP) + 3) + GOOD_LP[4:])), False),
    ("lp no terminator", payload(16, s(GOOD_LP[:-1] + b"\x00")), False),
    ("lp entry too long", payload(16, s(bytes(too_long))), True),
    ("lp bad backlen", payload(16, s(bytes(bad_backlen))), True),
    ("lp bad encoding byte", payload(16, s(GOOD_LP[:6] + b"\xf7" + GOOD_LP[7:])), True),
    ("lp count header", payload(16, s(lp(HASH_LP, count=6))), True),
    ("lp hash duplicate field", payload(16, s(lp([b"a", b"1", b"a", b"2"]))), True),
    ("lp hash odd count", payload(16, s(lp([b"a", b"1", b"b"]))), True),
    ("lp hash empty", payload(16, s(lp([]))), False),
    ("lp zset duplicate member", payload(17, s(lp([b"m", 1, b"m", 2]))), True),
    ("lp zset empty", payload(17, s(lp([]))), False),
    ("quicklist2 bad container", payload(18, enc_len(1) + enc_len(3) + s(lp([b"x"]))), False),
    ("quicklist2 empty node", payload(18, enc_len(1) + enc_len(2) + s(b"")), False),
    ("quicklist2 empty listpack", payload(18, enc_len(1) + enc_len(2) + s(lp([]))), False),
    ("quicklist2 lp bad backlen", payload(18, enc_len(1) + enc_len(2) + s(bytes(bad_backlen))), True),
    ("quicklist zero nodes", payload(18, enc_len(0)), False),
    # ziplist (always validated deeply by Redis)
    ("zl list prevlen", payload(10, s(zl([b"a", b"b"], prevlens=[0, 7]))), False),
    ("zl list first prevlen", payload(10, s(zl([b"a"], prevlens=[2]))), False),
    ("zl list tail offset", payload(10, s(zl([b"a", b"b"], tail=10))), False),
    ("zl list tail out of range", payload(10, s(zl([b"a"], tail=200))), False),
    ("zl list count", payload(10, s(zl([b"a", b"b"], count=3))), False),
    ("zl list header size", payload(10, s(zl([b"a"])[:-1] + b"\x00\xff")), False),
    ("zl list empty", payload(10, s(zl([]))), False),
    ("zl quicklist node prevlen", payload(14, enc_len(1) + s(zl([b"a", b"b"], prevlens=[0, 1]))), False),
    ("zl hash duplicate field", payload(13, s(zl([b"a", b"1", b"a", b"2"]))), False),
    ("zl hash odd count", payload(13, s(zl([b"a", b"1", b"b"]))), False),
    ("zl zset duplicate member", payload(12, s(zl([b"m", b"1", b"m", b"2"]))), False),
    # intset
    ("intset empty", payload(11, s(intset(2, []))), False),
    ("intset bad width", payload(11, s(struct.pack("<II", 3, 1) + b"\x01\x00\x00")), False),
    ("intset size", payload(11, s(intset(2, [1, 2], count=3))), False),
    ("intset unsorted", payload(11, s(intset(2, [5, 1]))), True),
    ("intset duplicate", payload(11, s(intset(4, [7, 7]))), True),
    # zipmap
    ("zipmap empty", payload(9, s(b"\x00\xff")), False),
    ("zipmap count", payload(9, s(zipmap([(b"f", b"v")], count=3))), False),
    ("zipmap entry overflow", payload(9, s(b"\x01\x01f\x30\x00v\xff")), False),
    ("zipmap duplicate field", payload(9, s(zipmap([(b"f", b"1"), (b"f", b"2")]))), False),
    # plain encodings
    ("set duplicate member", payload(2, enc_len(2) + s(b"x") + s(b"x")), False),
    ("set empty", payload(2, enc_len(0)), False),
    ("hash duplicate field", payload(4, enc_len(2) + s(b"f") + s(b"1") + s(b"f") + s(b"2")), True),
    ("hash big duplicate field", payload(4, enc_len(2) + s(b"f") + s(b"x" * 70) + s(b"f") + s(b"2")), False),
    ("zset NaN score", payload(5, enc_len(1) + s(b"m") + struct.pack("<d", float("nan"))), False),
    ("zset duplicate member", payload(5, enc_len(2) + (s(b"m") + struct.pack("<d", 1.0)) * 2), False),
    ("list truncated", payload(1, enc_len(3) + s(b"a")), False),
    ("string length past the end", payload(0, enc_len(5000) + b"abc"), False),
    ("bad LZF", payload(0, b"\xc3" + enc_len(4) + enc_len(20) + b"\x1f\x00\x00\x00"), False),
    ("unknown type", payload(30, b"\x00"), False),
    ("7.2 set listpack type", payload(20, s(lp([b"a"]))), False),
    # streams
    ("stream node key size", payload(15, enc_len(1) + s(b"short") + s(stream_lp()) + enc_len(1)
                                      + enc_len(1000) + enc_len(0) + b"\x00"), False),
    ("stream bad lp-count", payload(15, stream(stream_lp(lp_count=5))), True),
    ("stream truncated node", payload(15, stream(lp([1, 0, 1, b"f", 0, 2, 0, 0]))), True),
    ("stream empty listpack", payload(15, stream(lp([]))), False),
    ("stream duplicate node", payload(15, stream(nodes=2)), False),
    ("stream length without nodes", payload(15, enc_len(0) + enc_len(3) + enc_len(1000) + enc_len(0)
                                             + b"\x00"), False),
    ("stream duplicate group", payload(15, stream(groups=groups(group(), group()))), False),
    ("stream duplicate global PEL", payload(15, stream(groups=groups(group(pel=(1000, 1000))))), False),
    ("stream duplicate consumer", payload(15, stream(groups=groups(group(
        consumers=((b"alice", (1000,)), (b"alice", ())))))), False),
    ("stream consumer PEL not in group PEL", payload(15, stream(groups=groups(group(
        consumers=((b"alice", (1000, 2000)),))))), False),
    ("stream PEL without consumer", payload(15, stream(groups=groups(group(consumers=((b"bob", ()),))))),
     True),
]

VALID = [
    ("hash listpack", payload(16, s(GOOD_LP))),
    ("list ziplist", payload(10, s(zl([b"a", b"b", b"c"])))),
    ("hash ziplist", payload(13, s(zl([b"f", b"v"])))),
    ("intset", payload(11, s(intset(2, [1, 5, 9])))),
    ("zipmap", payload(9, s(zipmap([(b"f", b"v"), (b"g", b"w")])))),
    ("stream with group", payload(15, stream(groups=groups(group())))),
]


# -- the two servers ----------------------------------------------------------------

@pytest.fixture(scope="module")
def pair():
    o = ServerProc(["--enable-debug-command", "yes", "--loglevel", "verbose"])
    try:
        r = RedisServerProc(["--loglevel", "verbose"])
    except BaseException:
        o.stop()
        raise
    try:
        yield {"ophidis": o, "redis": r}
    finally:
        o.stop()
        r.stop()


def _restore(c, p, key="k"):
    try:
        return c.execute_command("RESTORE", key, 0, p, "REPLACE")
    except redis.ResponseError as e:
        return "ERR " + str(e)


def _log(srv):
    if isinstance(srv, ServerProc):
        return srv.output()
    with open(srv.logpath, errors="replace") as f:
        return f.read()


def _both(pair, mode, p, key="k"):
    out = {}
    for name, srv in pair.items():
        c = srv.client()
        c.config_set("sanitize-dump-payload", mode)
        out[name] = _restore(c, p, key)
        out[name + "_exists"] = c.exists(key)
        c.delete(key)
    return out


@pytest.mark.parametrize("name,p,deep_only", CASES, ids=[c[0] for c in CASES])
def test_corrupt_payload_same_reply(pair, name, p, deep_only):
    modes = ("yes",) if deep_only else ("yes", "no")
    for mode in modes:
        out = _both(pair, mode, p)
        assert out["ophidis"] == out["redis"], (mode, out)
        if out["redis"] != b"OK":
            assert out["ophidis_exists"] == 0
    if deep_only and name != "lp count header":
        # Redis takes it without deep sanitisation (and asserts later);
        # Ophidis refuses it in every mode
        c = pair["ophidis"].client()
        c.config_set("sanitize-dump-payload", "no")
        assert BAD in str(_restore(c, p))
        assert c.exists("k") == 0


def test_count_header_is_a_deep_check(pair):
    # a listpack whose element count header is wrong: Redis (and Ophidis)
    # only look at it with deep sanitisation
    p = payload(16, s(lp(HASH_LP, count=6)))
    assert _both(pair, "no", p) == {"ophidis": b"OK", "ophidis_exists": 1, "redis": b"OK", "redis_exists": 1}
    out = _both(pair, "yes", p)
    assert BAD in out["ophidis"] and out["ophidis"] == out["redis"]


def test_clients_mode_follows_the_users_flag(pair):
    # sanitize-dump-payload clients: a user's sanitize-payload (every new
    # user's flag) checks deeply, skip-sanitize-payload does not
    p = payload(16, s(lp(HASH_LP, count=6)))
    for rules, ok in ((("skip-sanitize-payload",), True), (("sanitize-payload",), False)):
        for srv in pair.values():
            assert srv.client().execute_command("ACL", "SETUSER", "default", *rules) == b"OK"
        out = _both(pair, "clients", p)
        assert out["ophidis"] == out["redis"] and (out["redis"] == b"OK") == ok, (rules, out)


@pytest.mark.parametrize("name,p", VALID, ids=[v[0] for v in VALID])
def test_valid_payloads_restore_alike(pair, name, p):
    for mode in ("yes", "no"):
        got = {}
        for srv_name, srv in pair.items():
            c = srv.client()
            c.config_set("sanitize-dump-payload", mode)
            assert _restore(c, p, "v") == b"OK", (srv_name, mode)
            t = c.type("v")
            if t == b"hash":
                got[srv_name] = sorted(c.hgetall("v").items())
            elif t == b"list":
                got[srv_name] = c.lrange("v", 0, -1)
            elif t == b"set":
                got[srv_name] = sorted(c.smembers("v"))
            else:
                got[srv_name] = (c.xrange("v"), c.xinfo_groups("v")[0]["pending"])
            c.delete("v")
        assert got["ophidis"] == got["redis"]


def test_stream_last_id_behind_its_entries(pair):
    # last ID 1000-0 but the entry is 5000-0: Redis takes it (and a later
    # XADD * would append before the entry); Ophidis refuses it
    body = enc_len(1) + s(sid(5000)) + s(stream_lp()) + enc_len(1) + enc_len(1000) + enc_len(0) + b"\x00"
    p = payload(15, body)
    out = _both(pair, "yes", p)
    assert out["redis"] == b"OK"
    assert BAD in out["ophidis"] and out["ophidis_exists"] == 0
    ok = payload(15, enc_len(1) + s(sid(1000)) + s(stream_lp()) + enc_len(1) + enc_len(5000) + enc_len(0)
                 + b"\x00")
    assert _both(pair, "yes", ok)["ophidis"] == b"OK"


def test_integrity_message_in_both_logs(pair):
    checks = [(payload(16, s(bytes(bad_backlen))), "Hash listpack integrity check failed."),
              (payload(10, s(zl([b"a", b"b"], prevlens=[0, 7]))), "List ziplist integrity check failed."),
              (payload(11, s(intset(2, [5, 1]))), "Intset integrity check failed."),
              (payload(9, s(b"\x00\xff")), "Zipmap integrity check failed."),
              (payload(15, stream(stream_lp(lp_count=5))), "Stream listpack integrity check failed."),
              (payload(15, stream(groups=groups(group(consumers=((b"alice", (1000,)), (b"alice", ())))))),
               "Duplicate stream consumer detected.")]
    for p, msg in checks:
        for srv in pair.values():
            srv.client().config_set("sanitize-dump-payload", "yes")
            assert BAD in str(_restore(srv.client(), p))
            wait_until(lambda: msg in _log(srv), timeout=20, what=msg)
            line = [x for x in _log(srv).splitlines() if msg in x][-1]
            assert "Internal error in RDB reading offset" in line and " - " in line   # verbose


def test_sanitizations_stat(pair):
    def stat(c):
        return c.info("stats")["dump_payload_sanitizations"]

    # a hash listpack, an intset, a quicklist of two listpacks, a stream node
    ps = [payload(16, s(GOOD_LP)), payload(11, s(intset(2, [1, 2]))),
          payload(18, enc_len(2) + (enc_len(2) + s(lp([b"x"]))) * 2), payload(15, stream())]
    for mode, per in (("yes", [1, 1, 2, 1]), ("no", [0, 0, 0, 0]), ("clients", [1, 1, 2, 1])):
        for name, srv in pair.items():
            c = srv.client()
            c.config_set("sanitize-dump-payload", mode)
            for p, n in zip(ps, per):
                before = stat(c)
                assert _restore(c, p, "st") == b"OK"
                assert stat(c) - before == n, (name, mode)
            c.delete("st")


def test_skip_checksum_validation(pair):
    p = bytearray(payload(16, s(GOOD_LP)))
    p[-1] ^= 0xFF
    for name, srv in pair.items():
        c = srv.client()
        assert _restore(c, bytes(p)) == "ERR DUMP payload version or checksum are wrong"
        c.execute_command("DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", 1)
        try:
            assert _restore(c, bytes(p)) == b"OK"
            # a payload newer than the server's RDB version (7.0: 10; ours
            # reads Redis 7.4-8.x's 11 and 12)
            newer_version = 11 if name == "redis" else 13
            newer = bytes(p[:-10]) + newer_version.to_bytes(2, "little") + bytes(p[-8:])
            assert _restore(c, newer) == "ERR DUMP payload version or checksum are wrong"
        finally:
            c.execute_command("DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", 0)
        c.delete("k")


# -- a corrupt value in the RDB file at start-up ------------------------------------

def _rdb_file(records):
    body = b"REDIS0010" + b"\xfe\x00" + records + b"\xff"
    return body + crc64(body).to_bytes(8, "little")


@pytest.mark.parametrize("sanitize", ["no", "yes"])
def test_corrupt_rdb_refused_at_startup(tmp_path, sanitize):
    # a ziplist hash whose second entry's prevlen is wrong: refused in both
    # modes (Redis validates ziplists deeply whatever the setting)
    data = _rdb_file(b"\x00" + s(b"ok") + s(b"v")
                     + b"\x0d" + s(b"bad") + s(zl([b"f", b"v"], prevlens=[0, 9])))
    outcome = {}
    for name in ("ophidis", "redis"):
        d = tmp_path / name
        d.mkdir()
        (d / "dump.rdb").write_bytes(data)
        digest = hashlib.sha1(data).hexdigest()
        args = ["--dbfilename", "dump.rdb", "--sanitize-dump-payload", sanitize]
        if name == "ophidis":
            srv = ServerProc(args, cwd=str(d), wait=False)
        else:
            srv = RedisServerProc(args, dir=str(d), wait=False)
        try:
            code = srv.proc.wait(30)
            log = _log(srv)
        finally:
            srv.stop()
        outcome[name] = code
        assert "Hash ziplist integrity check failed." in log, log
        assert "Terminating server after rdb file reading failure." in log, log
        assert hashlib.sha1((d / "dump.rdb").read_bytes()).hexdigest() == digest
        assert sorted(os.listdir(d)) in (["dump.rdb"], ["dump.rdb", "redis.log"], ["dump.rdb", "stdout.log"])
    assert outcome == {"ophidis": 1, "redis": 1}


def test_empty_keys_skipped_at_startup(tmp_path):
    # empty values in a file are skipped (with Redis's log lines), not refused
    data = _rdb_file(b"\x02" + s(b"eset") + enc_len(0)
                     + b"\x10" + s(b"ehash") + s(lp([]))
                     + b"\x00" + s(b"kept") + s(b"v"))
    (tmp_path / "dump.rdb").write_bytes(data)
    srv = ServerProc(["--dbfilename", "dump.rdb"], cwd=str(tmp_path))
    try:
        c = srv.client()
        assert c.keys("*") == [b"kept"]
        log = srv.output()
        assert "rdbLoadObject skipping empty key: eset" in log
        assert "rdbLoadObject skipping empty key: ehash" in log
        assert "empty keys skipped: 2" in log
    finally:
        srv.stop()
