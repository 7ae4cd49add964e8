"""Keyspace notifications (notify-keyspace-events) for string and generic
commands, every class flag's rendering, lazy and active expiry."""

import time

import pytest

from support.notify import KeyspaceEvents


class Events:
    """A redis-py pubsub listening to every keyspace/keyevent channel."""

    def __init__(self, server, flags, r):
        r.config_set("notify-keyspace-events", flags)
        self.c = server.client()
        self.p = self.c.pubsub()
        self.p.psubscribe("__key*__:*")
        assert self.p.get_message(timeout=2)["type"] == "psubscribe"

    def get(self, n, timeout=3.0):
        out = []
        deadline = time.time() + timeout
        while len(out) < n and time.time() < deadline:
            m = self.p.get_message(timeout=0.2)
            if m and m["type"] == "pmessage":
                out.append((m["channel"].decode(), m["data"].decode()))
        return out

    def none(self, wait=0.3):
        m = self.p.get_message(timeout=wait)
        while m is not None and m["type"] != "pmessage":
            m = self.p.get_message(timeout=wait)
        assert m is None

    def close(self):
        self.p.close()
        self.c.close()


@pytest.fixture
def events(server, r):
    made = []

    def make(flags):
        e = Events(server, flags, r)
        made.append(e)
        return e
    yield make
    for e in made:
        e.close()
    r.config_set("notify-keyspace-events", "")


# -- CONFIG rendering -----------------------------------------------------------
# (every class of 7.0 but not 'a': "A" in 7.0, spelled out since Redis 8.8,
# whose "A" includes the array class: test_config_rendering_examples)
@pytest.mark.parametrize("flags", ["K", "E", "g", "$", "l", "s", "h", "z", "x", "e", "t", "m", "d", "n",
                                   "A", "KEA", "AKE", "Kg$", "Elshzxetdn", "Ag", "gAm",
                                   "nKE", "mKE", "Km", "$lg", "KEA$n", ""])
def test_config_roundtrip_matches_redis(r, ref, flags, config):
    config(r, notify_keyspace_events=flags)
    config(ref, notify_keyspace_events=flags)
    got = r.config_get("notify-keyspace-events")["notify-keyspace-events"]
    assert got == ref.config_get("notify-keyspace-events")["notify-keyspace-events"]


def test_config_rendering_examples(r):
    # Redis 8.10's rendering: "A" needs the array class 'a' too (8.8); the
    # subkey channels follow K, E and m
    for given, shown in [("KEA", "AKE"), ("Elshzxetdng$a", "AE"), ("Elshzxetdng$", "g$lshzxetdnE"),
                         ("gK", "gK"), ("$lK", "$lK"), ("mE", "Em"), ("x", "x"), ("aocnK", "anocK"),
                         ("VITSmEK", "KEmSTIV"), ("hSAm", "AmS"),
                         # as Redis: with A, an 'n' (or 'o', 'c') is set but not rendered
                         ("nAK", "AK"), ("ocA", "A")]:
        r.config_set("notify-keyspace-events", given)
        assert r.config_get("notify-keyspace-events")["notify-keyspace-events"] == shown, given


def test_config_invalid_flag(r):
    with pytest.raises(Exception) as e:
        r.config_set("notify-keyspace-events", "KQ")
    assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - "
                            "Invalid event class character. Use 'Ag$lshzxeKEtmdnocaSTIV'.")


# -- payload format ---------------------------------------------------------------
def test_keyspace_and_keyevent_payloads(events, r):
    e = events("KE$")
    r.set("foo", "bar")
    assert e.get(2) == [("__keyspace@0__:foo", "set"), ("__keyevent@0__:set", "foo")]


def test_other_db_in_channel_name(events, server, r):
    e = events("KEg")
    c = server.client(db=5)
    c.set("k", "v")
    c.delete("k")
    assert e.get(2) == [("__keyspace@5__:k", "del"), ("__keyevent@5__:del", "k")]
    c.close()


def test_only_keyspace_or_only_keyevent(events, r):
    e = events("K$")
    r.set("a", "1")
    assert e.get(1) == [("__keyspace@0__:a", "set")]
    e.none()
    r.config_set("notify-keyspace-events", "E$")
    r.set("a", "2")
    assert e.get(1) == [("__keyevent@0__:set", "a")]
    e.none()


def test_class_without_k_or_e_sends_nothing(events, r):
    e = events("A")
    r.set("a", "1")
    e.none()


def test_class_filtering(events, r):
    e = events("Kg")       # generic only: no string events
    r.set("a", "1")
    r.delete("a")
    assert e.get(1) == [("__keyspace@0__:a", "del")]
    e.none()


# -- string events ---------------------------------------------------------------------
def test_string_events(events, r):
    e = events("E$")
    r.set("s", "1")
    r.setrange("s", 1, "xx")
    r.append("s", "yy")
    r.set("n", "1")
    r.incr("n")
    r.incrby("n", 5)
    r.decr("n")
    r.incrbyfloat("n", 1.5)
    r.mset({"m1": "a", "m2": "b"})
    r.getset("m1", "z")
    r.setex("t", 100, "v")
    assert e.get(12) == [
        ("__keyevent@0__:set", "s"), ("__keyevent@0__:setrange", "s"), ("__keyevent@0__:append", "s"),
        ("__keyevent@0__:set", "n"), ("__keyevent@0__:incrby", "n"), ("__keyevent@0__:incrby", "n"),
        ("__keyevent@0__:incrby", "n"), ("__keyevent@0__:incrbyfloat", "n"),
        ("__keyevent@0__:set", "m1"), ("__keyevent@0__:set", "m2"), ("__keyevent@0__:set", "m1"),
        ("__keyevent@0__:set", "t")]
    e.none()


def test_failed_commands_send_nothing(events, r):
    e = events("KEA")
    r.set("s", "x")
    e.get(2)
    with pytest.raises(Exception):
        r.incr("s")
    r.set("s", "y", nx=True)
    r.delete("missing")
    r.persist("s")
    e.none()


# -- generic events --------------------------------------------------------------------
def test_generic_events(events, server, r):
    e = events("Eg")
    r.set("a", "1")
    r.expire("a", 100)
    r.persist("a")
    r.rename("a", "b")
    r.copy("b", "c")
    r.move("c", 3)
    r.delete("b")
    assert e.get(8) == [
        ("__keyevent@0__:expire", "a"), ("__keyevent@0__:persist", "a"),
        ("__keyevent@0__:rename_from", "a"), ("__keyevent@0__:rename_to", "b"),
        ("__keyevent@0__:copy_to", "c"), ("__keyevent@0__:move_from", "c"),
        ("__keyevent@3__:move_to", "c"), ("__keyevent@0__:del", "b")]
    e.none()
    server.client(db=3).flushdb()


def test_set_with_expire_sends_set_then_expire(events, r):
    e = events("KEA")
    r.set("k", "v", ex=100)
    assert e.get(4) == [("__keyspace@0__:k", "set"), ("__keyevent@0__:set", "k"),
                        ("__keyspace@0__:k", "expire"), ("__keyevent@0__:expire", "k")]


def test_expire_in_the_past_deletes(events, r):
    e = events("Eg")
    r.set("k", "v")
    r.expire("k", -1)
    assert e.get(1) == [("__keyevent@0__:del", "k")]


def test_new_key_event(events, r):
    e = events("En$")
    r.set("k", "v")            # new + set
    r.set("k", "w")            # set only
    r.incr("cnt")              # new + incrby
    r.append("ap", "x")        # new + append
    r.setrange("sr", 2, "x")   # new + setrange
    r.mset({"m": "1"})         # new + set
    assert e.get(10) == [
        ("__keyevent@0__:new", "k"), ("__keyevent@0__:set", "k"), ("__keyevent@0__:set", "k"),
        ("__keyevent@0__:new", "cnt"), ("__keyevent@0__:incrby", "cnt"),
        ("__keyevent@0__:new", "ap"), ("__keyevent@0__:append", "ap"),
        ("__keyevent@0__:new", "sr"), ("__keyevent@0__:setrange", "sr"),
        ("__keyevent@0__:new", "m")]


def test_new_event_only_flag(events, r):
    e = events("En")
    r.set("only", "v")
    assert e.get(1) == [("__keyevent@0__:new", "only")]
    e.none()


def test_keymiss_event(events, r):
    e = events("Em")
    r.get("nokey")
    r.set("there", "v")       # writes never send keymiss
    r.get("there")
    assert e.get(1) == [("__keyevent@0__:keymiss", "nokey")]
    e.none()


@pytest.fixture
def no_active_expiry(r):
    """The session server with active expiry off for the test (DEBUG
    SET-ACTIVE-EXPIRE 0): an expired key is deleted by the lookup only."""
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        yield r
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_expired_event_lazy(events, no_active_expiry):
    c = no_active_expiry
    e = events("KEx")
    c.set("lazy", "v", px=30)
    time.sleep(0.06)
    assert c.get("lazy") is None
    assert e.get(2) == [("__keyspace@0__:lazy", "expired"), ("__keyevent@0__:expired", "lazy")]


def test_expired_event_active(events, r):
    e = events("Ex")
    r.set("active", "v", px=50)
    # nobody touches the key: the active cycle deletes it
    assert e.get(1, timeout=20) == [("__keyevent@0__:expired", "active")]
    assert r.exists("active") == 0


def test_overwriting_expired_key_sends_expired_then_new(events, no_active_expiry):
    c = no_active_expiry
    e = events("Ex$n")
    c.set("k", "v", px=30)
    assert e.get(2) == [("__keyevent@0__:new", "k"), ("__keyevent@0__:set", "k")]
    time.sleep(0.06)
    c.set("k", "w")
    assert e.get(3) == [("__keyevent@0__:expired", "k"), ("__keyevent@0__:new", "k"),
                        ("__keyevent@0__:set", "k")]


def test_events_match_redis(server, redis_server, r, ref, config):
    """The same command sequence yields the same events on Redis."""
    def run(srv, client):
        config(client, notify_keyspace_events="KEA")
        with KeyspaceEvents(srv.port) as ev:
            _events_workload(client)
            return ev.collect()
    ours = run(server, r)
    theirs = run(redis_server, ref)
    assert ours == theirs
    assert len(ours) > 30


def _events_workload(client):
    client.set("a", "1")
    client.set("a", "2", ex=100)
    client.append("a", "x")
    client.setrange("a", 0, "q")
    client.incr("n")
    client.incrbyfloat("n", "0.5")
    client.rename("a", "b")
    client.persist("b")
    client.expire("b", 10)
    client.copy("b", "c")
    client.getdel("c")
    client.getex("b", persist=True)
    client.delete("b", "n")
    client.msetnx({"x": "1", "y": "2"})
    client.unlink("x")
    client.psetex("y", 100000, "z")


# Key-creating commands of every family (each fires "new" through db.add/set_key).
_CREATING = [
    ["SET", "s", "1"], ["SET", "s", "2"], ["SETNX", "s2", "x"], ["MSET", "m1", "a", "m2", "b"],
    ["GETSET", "gs", "1"], ["SET", "sg", "v", "GET"], ["APPEND", "ap", "x"], ["SETRANGE", "sr", "3", "x"],
    ["INCRBY", "i", "5"], ["INCRBYFLOAT", "f", "1.5"], ["SETBIT", "b", "7", "1"], ["BITOP", "OR", "bo", "b", "s"],
    ["BITFIELD", "bf", "SET", "u8", "0", "1"],
    ["HSET", "h", "a", "1"], ["HSET", "h", "b", "1"], ["HSETNX", "h2", "a", "1"], ["HINCRBY", "h3", "a", "1"],
    ["HINCRBYFLOAT", "h4", "a", "1"], ["HDEL", "h4", "a"],
    ["SADD", "st", "a", "b"], ["SADD", "st2", "b", "c"], ["SMOVE", "st", "st3", "a"],
    ["SUNIONSTORE", "su", "st", "st2"], ["SINTERSTORE", "si", "st", "st2"], ["SDIFFSTORE", "sd", "st2", "st"],
    ["SUNIONSTORE", "su", "st", "st2"], ["SPOP", "st3"],
    ["ZADD", "z", "1", "a", "2", "b"], ["ZINCRBY", "z2", "1", "a"], ["ZUNIONSTORE", "zu", "1", "z"],
    ["ZINTERSTORE", "zi", "2", "z", "z2"], ["ZDIFFSTORE", "zd", "1", "z"], ["ZRANGESTORE", "zr", "z", "0", "-1"],
    ["ZPOPMIN", "zr", "5"],
    ["COPY", "z", "zc"], ["RENAME", "zc", "zc2"], ["RENAMENX", "zc2", "zc3"], ["MOVE", "zc3", "1"],
    ["SORT", "st2", "ALPHA", "STORE", "so"], ["SORT", "st2", "ALPHA", "STORE", "so"],
    ["EVAL", "redis.call('hset', KEYS[1], 'f', 'v') return 1", "1", "ev"],
]


@pytest.mark.parametrize("flags", ["KEA", "KEAn", "En"])
def test_new_event_every_type_matches_redis(server, redis_server, r, ref, flags, config):
    def run(srv, client):
        config(client, notify_keyspace_events=flags)
        out = []
        with KeyspaceEvents(srv.port) as ev:
            for cmd in _CREATING + [["RESTORE", "rs", "0", None]]:
                if cmd[0] == "RESTORE":
                    cmd[3] = client.dump("s")
                client.execute_command(*cmd)
                client.execute_command("PING")
                out.append((cmd[0], ev.collect()))
        return out
    ours = run(server, r)
    theirs = run(redis_server, ref)
    assert ours == theirs
