"""CLIENT TRACKING (server-assisted client-side caching) over real sockets:
RESP3 pushes, RESP2 redirection through __redis__:invalidate, BCAST,
OPTIN/OPTOUT, NOLOOP, flushes, expiry, eviction, the table limit."""

from __future__ import annotations

import pytest
import redis

from support.resp import Error, Map, Push, RespConn, Simple
from support.servers import ServerProc
from support.wait import wait_until


@pytest.fixture(scope="module")
def tsrv():
    s = ServerProc(["--enable-debug-command", "yes"])
    yield s
    s.stop()


@pytest.fixture
def w(tsrv):
    c = tsrv.client()
    c.flushall()
    c.config_set("maxmemory", "0")
    c.config_set("tracking-table-max-keys", "1000000")
    yield c
    c.close()


def _shape(v):
    """A decoded reply in the shapes these tests compare with: simple
    strings and errors as text with their sign, pushes as ("push", items),
    maps flattened."""
    if isinstance(v, Simple):
        return "+" + v.decode()
    if isinstance(v, Error):
        return "-" + v.decode()
    if isinstance(v, Push):
        return ("push", [_shape(x) for x in v])
    if isinstance(v, Map):
        return [_shape(x) for kv in v.items() for x in kv]
    if isinstance(v, list):
        return [_shape(x) for x in v]
    return v


class Conn(RespConn):
    """A raw connection reading RESP2/RESP3 replies and pushes in order."""

    def __init__(self, port):
        super().__init__(port, timeout=5)

    def read(self, timeout=None):
        return _shape(self.read_value(timeout))

    def nothing_pending(self, wait=0.2) -> bool:
        return self.nothing_within(wait)


def resp3(port):
    c = Conn(port)
    c.call("HELLO", "3")
    return c


def test_resp3_invalidation_push(tsrv, w):
    c = resp3(tsrv.port)
    assert c.call("CLIENT", "TRACKING", "on") == "+OK"
    w.set("k", "1")
    assert c.call("GET", "k") == b"1"
    w.set("k", "2")
    assert c.read() == ("push", [b"invalidate", [b"k"]])
    # the key is forgotten once invalidated: no second message
    w.set("k", "3")
    assert c.nothing_pending()
    # a write that changes nothing (SADD of a member present) invalidates nothing
    w.sadd("s", "a")
    assert c.call("SMEMBERS", "s") == [b"a"]
    w.sadd("s", "a")
    assert c.nothing_pending()
    w.sadd("s", "b")
    assert c.read() == ("push", [b"invalidate", [b"s"]])
    info = w.info()
    assert info["tracking_clients"] == 1
    c.close()


def test_own_write_invalidates_after_the_reply(tsrv, w):
    c = resp3(tsrv.port)
    c.call("CLIENT", "TRACKING", "on")
    w.hset("h", mapping={"a": "1", "b": "2"})
    assert c.call("HGET", "h", "a") == b"1"
    assert c.call("HDEL", "h", "a") == 1                  # the reply first
    assert c.read() == ("push", [b"invalidate", [b"h"]])  # then the message
    # in a transaction the messages follow EXEC's reply
    c.call("GET", "x")
    c.call("MULTI")
    c.call("SET", "x", "1")
    c.call("GET", "x")
    assert c.call("EXEC") == ["+OK", b"1"]
    assert c.read() == ("push", [b"invalidate", [b"x"]])
    c.close()


def test_noloop_hides_own_writes(tsrv, w):
    c = resp3(tsrv.port)
    c.call("CLIENT", "TRACKING", "on", "NOLOOP")
    c.call("GET", "n")
    c.call("SET", "n", "mine")
    assert c.nothing_pending()
    c.call("GET", "n")
    w.set("n", "theirs")
    assert c.read() == ("push", [b"invalidate", [b"n"]])
    c.close()


def test_resp2_redirect_to_invalidate_channel(tsrv, w):
    sub = Conn(tsrv.port)
    sub_id = sub.call("CLIENT", "ID")
    assert sub.call("SUBSCRIBE", "__redis__:invalidate") == [b"subscribe", b"__redis__:invalidate", 1]
    c = Conn(tsrv.port)
    assert c.call("CLIENT", "TRACKING", "on", "REDIRECT", sub_id) == "+OK"
    assert c.call("CLIENT", "GETREDIR") == sub_id
    c.call("MGET", "r1", "r2")
    w.mset({"r1": "1", "r2": "2"})
    got = {tuple(sub.read()[2]) for _ in range(2)}
    assert got == {(b"r1",), (b"r2",)}
    # the redirect target goes away: the client is flagged broken
    sub.close()
    wait_until(lambda: b"id=%d " % sub_id not in w.execute_command("CLIENT", "LIST"), 20,
               what="the redirect target gone")
    c.call("GET", "r1")
    w.set("r1", "x")
    info = c.call("CLIENT", "TRACKINGINFO")
    assert b"broken_redirect" in info[1]
    assert "R" in c.call("CLIENT", "INFO").decode().split("flags=")[1].split()[0]
    c.close()


def test_redirect_errors_and_options(tsrv, w):
    c = Conn(tsrv.port)
    assert c.call("CLIENT", "TRACKING", "on", "REDIRECT", "999999") == \
        "-ERR The client ID you want redirect to does not exist"
    assert c.call("CLIENT", "TRACKING", "on", "PREFIX", "a") == \
        "-ERR PREFIX option requires BCAST mode to be enabled"
    assert c.call("CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT") == \
        "-ERR You can't specify both OPTIN mode and OPTOUT mode"
    assert c.call("CLIENT", "TRACKING", "on", "BCAST", "OPTIN") == \
        "-ERR OPTIN and OPTOUT are not compatible with BCAST"
    assert c.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "ab", "PREFIX", "abc") == \
        "-ERR Prefix 'ab' overlaps with another provided prefix 'abc'. Prefixes for a single client " \
        "must not overlap."
    assert c.call("CLIENT", "TRACKING", "maybe") == "-ERR syntax error"
    assert c.call("CLIENT", "CACHING", "yes") == \
        "-ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or " \
        "OPTOUT mode enabled"
    assert c.call("CLIENT", "TRACKING", "on", "OPTOUT") == "+OK"
    assert c.call("CLIENT", "CACHING", "yes") == \
        "-ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
    assert c.call("CLIENT", "TRACKING", "on", "BCAST") == \
        "-ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then " \
        "re-enabling it with a different mode."
    assert c.call("CLIENT", "TRACKINGINFO") == [b"flags", [b"on", b"optout"], b"redirect", 0,
                                                 b"prefixes", []]
    assert c.call("CLIENT", "TRACKING", "off") == "+OK"
    assert c.call("CLIENT", "TRACKINGINFO") == [b"flags", [b"off"], b"redirect", -1, b"prefixes", []]
    assert c.call("CLIENT", "GETREDIR") == -1
    c.close()


def test_optin_and_optout(tsrv, w):
    c = resp3(tsrv.port)
    c.call("CLIENT", "TRACKING", "on", "OPTIN")
    c.call("GET", "o1")                        # not cached: no CACHING yes
    assert c.call("CLIENT", "CACHING", "yes") == "+OK"
    c.call("GET", "o2")                        # cached
    c.call("GET", "o3")                        # CACHING applied to one command only
    w.mset({"o1": "1", "o2": "2", "o3": "3"})
    assert c.read() == ("push", [b"invalidate", [b"o2"]])
    assert c.nothing_pending()
    c.call("CLIENT", "TRACKING", "off")
    c.call("CLIENT", "TRACKING", "on", "OPTOUT")
    c.call("GET", "o1")
    c.call("CLIENT", "CACHING", "no")
    c.call("GET", "o2")                        # excluded
    w.mset({"o1": "1", "o2": "2"})
    assert c.read() == ("push", [b"invalidate", [b"o1"]])
    assert c.nothing_pending()
    c.close()


def test_bcast_prefixes(tsrv, w):
    c = resp3(tsrv.port)
    assert c.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:", "PREFIX", "cart:", "NOLOOP") == "+OK"
    w.set("user:1", "a")
    w.set("other", "x")
    msg = c.read()
    assert msg == ("push", [b"invalidate", [b"user:1"]])
    p = w.pipeline(transaction=False)
    p.set("cart:9", "1")
    p.set("user:2", "b")
    p.execute()
    keys = set()
    while len(keys) < 2:
        keys |= set(c.read()[1][1])
    assert keys == {b"cart:9", b"user:2"}
    c.call("SET", "user:3", "own write, NOLOOP")
    assert c.nothing_pending()
    assert w.info()["tracking_total_prefixes"] == 2
    info = c.call("CLIENT", "TRACKINGINFO")
    assert info[1] == [b"on", b"bcast", b"noloop"] and sorted(info[5]) == [b"cart:", b"user:"]
    c.close()


def test_flush_expiry_and_table_limit(tsrv, w):
    c = resp3(tsrv.port)
    c.call("CLIENT", "TRACKING", "on")
    c.call("GET", "f")
    w.flushall()
    assert c.read() == ("push", [b"invalidate", None])
    w.set("e", "1", px=50)
    c.call("GET", "e")
    assert c.read(timeout=20) == ("push", [b"invalidate", [b"e"]])   # the active expiry cycle
    for i in range(10):
        c.call("GET", "t%d" % i)
    assert w.info()["tracking_total_keys"] == 10
    w.config_set("tracking-table-max-keys", "4")
    got = set()
    while len(got) < 6:
        got |= set(c.read()[1][1])
    assert w.info()["tracking_total_keys"] == 4
    c.close()


def test_evicted_keys_are_invalidated_before_the_reply(tsrv, w):
    c = resp3(tsrv.port)
    c.call("CLIENT", "TRACKING", "on")
    w.set("victim", "x", ex=1000)
    c.call("GET", "victim")
    used = w.info("memory")["used_memory"]
    w.config_set("maxmemory-policy", "volatile-random")
    w.config_set("maxmemory", str(used + 100 * 1024))
    try:
        c.call("SETBIT", "big", 1600000, 0)       # 200 KB: over the limit
        c.send("GETBIT", "big", 0)                  # eviction runs before it
        assert c.read() == ("push", [b"invalidate", [b"victim"]])
        assert c.read() == 0
    finally:
        w.config_set("maxmemory", "0")
        w.config_set("maxmemory-policy", "noeviction")
    c.close()


def test_scripts_track_the_keys_they_read(tsrv, w):
    # Redis 7.2+: the keys the script's read-only commands read, not the
    # keys it declared (7.0's rule)
    c = resp3(tsrv.port)
    c.call("CLIENT", "TRACKING", "on")
    c.call("EVAL", "redis.call('set', 'k3', 'bar')", 2, "k1", "k2")   # no read: nothing tracked
    w.mset({"k1": "1", "k2": "2", "k3": "3"})
    assert c.nothing_pending()
    c.call("EVAL", "redis.call('get', 'k3'); redis.call('mget', 'k4', 'k5')", 2, "k1", "k2")
    w.mset({"k1": "1", "k2": "2"})
    assert c.nothing_pending()
    w.mset({"k3": "1", "k5": "2"})
    got = set(c.read()[1][1]) | set(c.read()[1][1])
    assert got == {b"k3", b"k5"}
    c.call("EVAL_RO", "return redis.call('get', KEYS[1])", 1, "k6")     # the command, not EVAL_RO's keys
    w.set("k6", "1")
    assert c.read()[1][1] == [b"k6"]
    c.close()


def test_disconnect_and_reset_stop_tracking(tsrv, w):
    c = resp3(tsrv.port)
    c.call("CLIENT", "TRACKING", "on")
    assert w.info()["tracking_clients"] == 1
    assert c.call("RESET") == "+RESET"
    assert w.info()["tracking_clients"] == 0
    c.call("CLIENT", "TRACKING", "on")
    c.close()
    wait_until(lambda: w.info()["tracking_clients"] == 0, 20, what="the closed client's tracking to stop")
    # with nobody tracking, the fast path is back: writes still work
    assert w.set("after", "1") and w.get("after") == b"1"


def test_resp2_redis_py_client_unaffected(tsrv, w):
    """redis-py with a RESP2 connection can turn tracking on (it just gets
    no messages without a redirect) and keeps working."""
    c = tsrv.client()
    assert c.execute_command("CLIENT", "TRACKING", "on") == b"OK"
    assert c.get("nope") is None
    w.set("nope", "1")
    assert c.get("nope") == b"1"
    c.close()
    with pytest.raises(redis.exceptions.ResponseError):
        w.execute_command("CLIENT", "TRACKING", "on", "REDIRECT", "abc")
