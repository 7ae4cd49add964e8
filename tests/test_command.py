"""COMMAND and its subcommands, compared with a real Redis 7.0 where possible.

The comparison is generic: it covers every command our table holds (other
families add commands over time), so COMMAND INFO / DOCS of a new command
is checked as soon as it is registered.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
import redis
from support.clients import outcomes

from ophidis.cmdtable.registry import ALL, META, NEWER, Command
from ophidis.cmdtable.describe import _KEY_FLAG_OUT, _KEY_FLAGS
from ophidis.cmdtable.docs import SUMMARIES
from ophidis.cmdtable.keys import get_keys, get_keys_with_flags
from ophidis.commands import load_all


def unparsed(client):
    """A client whose COMMAND replies are not post-processed by redis-py."""
    client.response_callbacks.pop("COMMAND", None)
    return client


@pytest.fixture
def rr(r):
    return unparsed(r)


@pytest.fixture
def refr(ref):
    return unparsed(ref)


def _norm(x):
    """Order-insensitive form (Redis's command dict has no stable order)."""
    if isinstance(x, dict):
        return {_norm(k): _norm(v) for k, v in x.items()}
    if isinstance(x, (list, set, tuple)):
        return sorted((_norm(i) for i in x), key=repr)
    return x


def _todict(d):
    if isinstance(d, list):
        return dict(zip(d[::2], d[1::2]))
    return d


def _is_newer(name) -> bool:
    return (name.decode() if isinstance(name, bytes) else name).upper() in NEWER


def _without_newer_subs(info):
    """COMMAND INFO of a container without the subcommands whose metadata is
    newer than 7.0's (compared with valkey-server instead)."""
    out = []
    for entry in info:
        if isinstance(entry, list) and len(entry) > 9 and isinstance(entry[9], list):
            entry = entry[:9] + [[sub for sub in entry[9] if not _is_newer(sub[0])]] + entry[10:]
        out.append(entry)
    return out


# Where Valkey's metadata differs from Redis's (src/commands/*.json), ours
# follows Redis: {name: why}
REDIS_NOT_VALKEY = {
    "cluster|myshardid": "Redis flags it STALE only, Valkey LOADING and STALE",
}


def _without_display_text(args):
    """COMMAND DOCS arguments without Redis 7.2's display_text (7.0 has none)."""
    out = []
    for a in args:
        a = dict(_todict(a))
        a.pop(b"display_text", None)
        if b"arguments" in a:
            a[b"arguments"] = _without_display_text(a[b"arguments"])
        out.append(a)
    return out


def _strip_docs(d):
    # We ship no complexity/history texts and use our own summaries.
    d = dict(_todict(d))
    for k in (b"summary", b"complexity", b"history"):
        d.pop(k, None)
    if b"arguments" in d:
        d[b"arguments"] = _without_display_text(d[b"arguments"])
    if b"subcommands" in d:
        d[b"subcommands"] = {k: _strip_docs(v) for k, v in _todict(d[b"subcommands"]).items()
                             if not _is_newer(k)}
    return d


def _our_names(c):
    """Our commands whose metadata is Redis 7.0's (those Redis changed or
    added later, data/commands/, are compared with valkey-server below)."""
    containers = {k.split("|")[0] for k in NEWER if "|" in k}    # subcommands changed
    return [n.decode() for n in c.execute_command("COMMAND", "LIST")
            if n.decode().upper() not in NEWER and n.decode().upper() not in containers]


def _newer_names(c, ref):
    """Our commands with newer metadata that the reference server has too."""
    theirs = {n.decode() for n in ref.execute_command("COMMAND", "LIST")}
    return [n.decode() for n in c.execute_command("COMMAND", "LIST")
            if n.decode().upper() in NEWER and n.decode() in theirs]


# Flags Valkey added to a command that Redis 8.x does not have (Redis's
# command JSON files are the reference there).
VALKEY_ONLY_FLAGS = {
    "client|setinfo": {b"allow_busy"},
    "client|no-touch": {b"allow_busy"},
}


@pytest.mark.parametrize("proto", [2, 3])
def test_newer_commands_info_matches_valkey(server, valkey_server, proto):
    """Arity, flags, first/last key, step, ACL categories and key specs of
    the commands Redis changed or added after 7.0, where Valkey 9.1 has them
    (its subcommand list is an array where Redis's is a set: not compared)."""
    a = unparsed(server.client(protocol=proto))
    b = unparsed(valkey_server.client(protocol=proto))
    diffs = []
    for n in _newer_names(a, b):
        if n in REDIS_NOT_VALKEY:
            continue
        x = a.execute_command("COMMAND", "INFO", n)[0]
        y = b.execute_command("COMMAND", "INFO", n)[0]
        extra = VALKEY_ONLY_FLAGS.get(n)
        if extra:
            y = [y[0], y[1], [f for f in y[2] if f not in extra]] + y[3:]
        if _norm(x[:9]) != _norm(y[:9]):
            diffs.append((n, x, y))
    assert not diffs


@pytest.mark.parametrize("proto", [2, 3])
def test_info_matches_redis_for_every_command(server, redis_server, proto):
    a = unparsed(server.client(protocol=proto))
    b = unparsed(redis_server.client(protocol=proto))
    names = _our_names(a)
    assert len(names) > 20
    diffs = []
    for n in names:
        x = _without_newer_subs(a.execute_command("COMMAND", "INFO", n))
        y = _without_newer_subs(b.execute_command("COMMAND", "INFO", n))
        if _norm(x) != _norm(y):
            diffs.append((n, x, y))
    assert not diffs


@pytest.mark.parametrize("proto", [2, 3])
def test_docs_match_redis_for_every_command(server, redis_server, proto):
    a = unparsed(server.client(protocol=proto))
    b = unparsed(redis_server.client(protocol=proto))
    diffs = []
    for n in _our_names(a):
        x = _todict(a.execute_command("COMMAND", "DOCS", n))
        y = _todict(b.execute_command("COMMAND", "DOCS", n))
        assert list(x) == [n.encode()]
        # every command has a summary (redis-cli's help needs one)
        assert _todict(x[n.encode()])[b"summary"]
        if _norm(_strip_docs(x[n.encode()])) != _norm(_strip_docs(y[n.encode()])):
            diffs.append(n)
    assert not diffs


def test_command_all_and_count(rr):
    allc = rr.execute_command("COMMAND")
    count = rr.execute_command("COMMAND", "COUNT")
    assert len(allc) == count
    names = {e[0] for e in allc}
    assert {b"get", b"set", b"command", b"setbit", b"lcs"} <= names
    assert all(b"|" not in n for n in names)
    # COMMAND INFO with no names is the same as COMMAND
    assert _norm(rr.execute_command("COMMAND", "INFO")) == _norm(allc)
    # COMMAND DOCS with no names covers every top-level command
    docs = _todict(rr.execute_command("COMMAND", "DOCS"))
    assert set(docs) == names


def test_info_shape_exact(rr):
    e = rr.execute_command("COMMAND", "INFO", "get")[0]
    assert e[:7] == [b"get", 2, [b"readonly", b"fast"], 1, 1, 1, [b"@read", b"@string", b"@fast"]]
    assert e[7] == []
    assert e[9] == []
    spec = _todict(e[8][0])
    assert spec[b"flags"] == [b"RO", b"access"]
    # unknown names give nil entries; subcommand names with a pipe work
    r = rr.execute_command("COMMAND", "INFO", "nosuchcmd", "config|get", "get|x", "config|nosuch")
    assert r[0] is None and r[2] is None and r[3] is None
    assert r[1][0] == b"config|get"


def test_info_movablekeys_and_legacy_range(rr):
    names = set(_our_names(rr))
    cases = {"mset": (1, -1, 2), "del": (1, -1, 1), "get": (1, 1, 1), "ping": (0, 0, 0)}
    for name, (f, l, s) in cases.items():
        if name not in names:
            continue
        e = rr.execute_command("COMMAND", "INFO", name)[0]
        assert (e[3], e[4], e[5]) == (f, l, s), name
    if "set" in names:
        assert b"movablekeys" not in rr.execute_command("COMMAND", "INFO", "set")[0][2]


def test_docs_unknown_and_subcommands(rr):
    assert _todict(rr.execute_command("COMMAND", "DOCS", "nosuch")) == {}
    d = _todict(rr.execute_command("COMMAND", "DOCS", "config"))[b"config"]
    d = _todict(d)
    assert b"config|get" in _todict(d[b"subcommands"])
    d = _todict(_todict(rr.execute_command("COMMAND", "DOCS", "debug"))[b"debug"])
    assert d[b"doc_flags"] == [b"syscmd"]


def test_list_filters(rr, refr):
    names = {n.decode() for n in rr.execute_command("COMMAND", "LIST")}
    assert "config|get" in names and "get" in names
    assert len(names) == len(rr.execute_command("COMMAND", "LIST"))
    pat = {n.decode() for n in rr.execute_command("COMMAND", "LIST", "FILTERBY", "PATTERN", "CONFIG*")}
    assert pat == {n for n in names if n.startswith("config")}
    cat = {n.decode() for n in rr.execute_command("COMMAND", "LIST", "FILTERBY", "ACLCAT", "bitmap")}
    ref_cat = {n.decode() for n in refr.execute_command("COMMAND", "LIST", "FILTERBY", "ACLCAT", "bitmap")}
    assert cat == ref_cat & names
    assert "setbit" in cat
    assert rr.execute_command("COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuch") == []
    assert rr.execute_command("COMMAND", "LIST", "FILTERBY", "MODULE", "x") == []
    for bad in (["FILTERBY", "FOO", "x"], ["FILTERBY", "PATTERN"], ["FOO"]):
        with pytest.raises(redis.ResponseError, match="^syntax error$"):
            rr.execute_command("COMMAND", "LIST", *bad)


GETKEYS_LINES = [
    ["get", "k"], ["set", "k", "v"], ["set", "k", "v", "GET"], ["mset", "a", "1", "b", "2"],
    ["mget", "a", "b", "c"], ["del", "a", "b"], ["rename", "a", "b"], ["incr", "x"],
    ["setbit", "k", "1", "1"], ["bitop", "and", "dest", "s1", "s2"], ["bitcount", "k"],
    ["bitfield", "k", "get", "u8", "0"], ["bitfield", "k", "set", "u8", "0", "1"],
    ["bitfield", "k", "incrby", "u8", "0", "1"], ["bitfield", "k", "overflow", "wrap", "get", "u4", "0"],
    ["bitfield_ro", "k", "get", "u8", "0"], ["lcs", "a", "b"], ["lcs", "a", "b", "LEN"],
    ["eval", "return 1", "2", "a", "b", "c"], ["eval", "return 1", "0"],
    ["zunionstore", "d", "2", "a", "b"], ["zunion", "2", "a", "b"], ["zinterstore", "d", "2", "a", "b", "WEIGHTS", "1", "2"],
    ["sintercard", "2", "a", "b"], ["lmpop", "2", "a", "b", "LEFT"], ["blmpop", "0", "2", "a", "b", "LEFT"],
    ["sort", "k"], ["sort", "k", "STORE", "d"], ["sort", "k", "BY", "x", "STORE", "d", "LIMIT", "0", "1"],
    ["sort_ro", "k"], ["xread", "STREAMS", "s1", "s2", "0", "0"], ["xread", "COUNT", "2", "STREAMS", "s", "0"],
    ["xreadgroup", "GROUP", "g", "c", "STREAMS", "s", ">"],
    ["georadius", "k", "1", "2", "3", "m", "STORE", "d"], ["georadius", "k", "1", "2", "3", "m"],
    ["migrate", "h", "1", "k", "0", "10"], ["migrate", "h", "1", "", "0", "10", "KEYS", "a", "b"],
    ["object", "encoding", "k"], ["memory", "usage", "k"], ["xinfo", "stream", "s"],
    ["copy", "a", "b"], ["smove", "a", "b", "m"], ["lmove", "a", "b", "left", "right"],
    ["getex", "k", "EX", "1"], ["touch", "a", "b"], ["exists", "a", "b"],
    ["fcall", "f", "2", "a", "b", "x"], ["fcall_ro", "f", "0"], ["evalsha_ro", "x", "1", "a"],
    ["zmpop", "2", "a", "b", "MIN"], ["bzmpop", "0", "2", "a", "b", "MAX", "COUNT", "2"],
    ["zdiff", "2", "a", "b"], ["zdiffstore", "d", "2", "a", "b"], ["zintercard", "2", "a", "b"],
    ["zinter", "2", "a", "b", "WITHSCORES"], ["zrangestore", "d", "s", "0", "-1"],
    ["bzpopmin", "a", "b", "0"], ["sunionstore", "d", "a", "b"], ["hset", "h", "f", "v"],
]

GETKEYS_ERRORS = [
    ["nosuchcommand", "a"], ["ping"], ["ping", "x"], ["get", "a", "b"], ["get"], ["get", "a", "b"], ["config", "get", "x"],
    ["eval", "return 1", "5", "a"], ["eval", "return 1", "-1"], ["zunionstore", "d", "0", "a"],
    ["fcall", "f", "3", "a"], ["zmpop", "5", "a", "MIN"], ["zmpop", "0", "MIN"], ["zdiff", "x", "a"],
    ["bzmpop", "0", "-1", "a", "MIN"], ["sintercard", "0", "a"], ["zinter", "2", "a"],
    ["mset", "a"], ["xread", "STREAMS", "s"], ["time"],
]


def test_getkeys_matches_redis(rr, refr):
    names = set(_our_names(rr))
    checked = 0
    for line in GETKEYS_LINES + GETKEYS_ERRORS:
        base = line[0]
        sub = "%s|%s" % (line[0], line[1]) if len(line) > 1 else None
        if base not in names and base != "nosuchcommand":
            continue
        if sub and sub.split("|")[0] in ("object", "memory", "xinfo") and sub not in names:
            continue
        if len(line) == 1:
            continue    # Redis 7.2's arity (-3): test_getkeys_of_a_bare_command
        for which in ("GETKEYS", "GETKEYSANDFLAGS"):
            ours, theirs = outcomes(rr, refr, "COMMAND", which, *line)
            assert ours == theirs, (which, line)
            checked += 1
    assert checked >= 30


def test_getkeys_of_a_bare_command(rr, vk):
    # Redis 7.2 lowered COMMAND GETKEYS's arity to -3: a command named alone
    # is judged (7.0: wrong number of arguments); compared with valkey 9.1,
    # which shares 7.2's rules
    vkr = unparsed(vk)
    for line in (["ping"], ["time"], ["get"], ["nosuchcommand"], ["lmove"]):
        for which in ("GETKEYS", "GETKEYSANDFLAGS"):
            ours, theirs = outcomes(rr, vkr, "COMMAND", which, *line)
            assert ours == theirs, (which, line)
    with pytest.raises(redis.ResponseError, match="^The command has no key arguments$"):
        rr.execute_command("COMMAND", "GETKEYS", "ping")
    with pytest.raises(redis.ResponseError, match="^Invalid number of arguments specified for command$"):
        rr.execute_command("COMMAND", "GETKEYSANDFLAGS", "get")


def test_getkeys_errors_exact(rr):
    with pytest.raises(redis.ResponseError, match="^Invalid command specified$"):
        rr.execute_command("COMMAND", "GETKEYS", "nosuch", "a")
    with pytest.raises(redis.ResponseError, match="^The command has no key arguments$"):
        rr.execute_command("COMMAND", "GETKEYS", "ping", "x")
    with pytest.raises(redis.ResponseError, match="^Invalid number of arguments specified for command$"):
        rr.execute_command("COMMAND", "GETKEYS", "get", "a", "b")
    names = set(_our_names(rr))
    for line in (["zunionstore", "d", "9", "a"], ["lmpop", "7", "a", "LEFT"], ["zmpop", "5", "a", "MIN"],
                 ["sintercard", "3", "a"]):
        if line[0] in names:
            with pytest.raises(redis.ResponseError, match="^Invalid arguments specified for command$"):
                rr.execute_command("COMMAND", "GETKEYS", *line)
    # EVAL/FCALL are no_mandatory_keys: Redis 7.0.15 replies an empty array
    # (not an error) when numkeys does not fit (commandGetKeysCommand)
    for line in (["eval", "return 1", "5", "a"], ["eval", "return 1", "-1"], ["fcall", "f", "3", "a"]):
        if line[0] in names:
            assert rr.execute_command("COMMAND", "GETKEYS", *line) == []
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'command\\|getkeys'"):
        rr.execute_command("COMMAND", "GETKEYS")


def test_get_keys_helper():
    load_all()
    assert get_keys(ALL["mset"], [b"mset", b"a", b"1", b"b", b"2"]) == [b"a", b"b"]
    assert get_keys(ALL["set"], [b"set", b"k", b"v"]) == [b"k"]
    assert get_keys(ALL["bitop"], [b"bitop", b"or", b"d", b"x", b"y"]) == [b"d", b"x", b"y"]
    assert get_keys(ALL["ping"], [b"ping"]) == []


def test_help_and_unknown_subcommand(rr):
    h = rr.execute_command("COMMAND", "HELP")
    assert h[0].startswith(b"COMMAND <subcommand>")
    assert any(x.startswith(b"GETKEYSANDFLAGS") for x in h)
    with pytest.raises(redis.ResponseError, match="^unknown subcommand 'FOO'. Try COMMAND HELP.$"):
        rr.execute_command("COMMAND", "FOO")


def test_redis_cli_uses_command_docs(server):
    cli = shutil.which("redis-cli")
    if cli is None:
        pytest.skip("redis-cli not installed")
    # redis-cli builds its help table from COMMAND DOCS; HELP <cmd> prints it.
    env = dict(os.environ, TERM="dumb")
    p = subprocess.run([cli, "-p", str(server.port)], input=b"HELP SETBIT\nHELP @bitmap\nPING\n",
                       capture_output=True, timeout=20, env=env)
    out = re.sub(r"\x1b\[[0-9;]*m", "", p.stdout.decode())
    assert p.returncode == 0, p.stderr
    assert "SETBIT key offset value" in out
    assert "Set or clear a bit at an offset" in out
    assert "PONG" in out
    p = subprocess.run([cli, "-p", str(server.port), "COMMAND", "COUNT"], capture_output=True, timeout=20)
    assert p.stdout.strip().isdigit()


def test_key_extraction_matches_redis_for_all_metadata(refr):
    """get_keys over Redis's metadata for every command line above, including
    commands other families have not registered yet (keynum, keyword and
    command-specific extractors), against COMMAND GETKEYSANDFLAGS of Redis."""
    extra = [
        ["eval", "s", "3", "a", "b", "c", "d"], ["fcall", "f", "1", "k", "arg"], ["evalsha_ro", "x", "0"],
        ["zinter", "2", "a", "b", "WITHSCORES"], ["zdiffstore", "d", "1", "a"], ["bzmpop", "1", "2", "a", "b", "MIN"],
        ["georadiusbymember", "k", "m", "1", "km", "STOREDIST", "d"], ["xreadgroup", "GROUP", "g", "c", "COUNT", "1",
                                                                     "STREAMS", "a", "b", "0", "0"],
        ["sort", "k", "GET", "#", "STORE", "d1", "STORE", "d2"], ["migrate", "h", "1", "", "0", "10", "COPY", "AUTH",
                                                                  "pw", "KEYS", "a", "b"],
        ["pfcount", "a", "b"], ["pfmerge", "d", "a", "b"], ["xadd", "s", "*", "f", "v"], ["smove", "a", "b", "m"],
        ["geosearchstore", "d", "s", "FROMMEMBER", "m", "BYRADIUS", "1", "km"], ["lmpop", "x", "a", "LEFT"],
        ["blmove", "a", "b", "LEFT", "RIGHT", "0"], ["zrangestore", "d", "s", "0", "1"], ["restore", "k", "0", "x"],
    ]
    checked = 0
    for line in GETKEYS_LINES + extra:
        name = line[0].upper()
        meta = META.get(name)
        if meta is None:
            continue
        if "%s|%s" % (name, line[1].upper() if len(line) > 1 else "") in META:
            full = "%s|%s" % (line[0], line[1].lower())
            meta = META[full.upper()]
        else:
            full = line[0]
        cmd = Command(full, None, meta)
        argv = [a.encode() for a in line]
        try:
            theirs = refr.execute_command("COMMAND", "GETKEYSANDFLAGS", *line)
        except redis.ResponseError:
            theirs = None
        keys = get_keys_with_flags(cmd, argv)
        if not keys:
            ours = None if not ("no_mandatory_keys" in cmd.flags) else []
        else:
            ours = [[argv[p], [_KEY_FLAG_OUT[f] for f in _KEY_FLAGS if f in set(fl)]] for p, fl in keys]
        assert ours == theirs, line
        checked += 1
    assert checked >= 50


def test_help_first_and_last_lines_match_redis(rr, refr, vk):
    """Every container's HELP: our own wording, but Redis's first line
    ("<NAME> <subcommand> [<arg> ...]. Subcommands are:") and closing
    HELP entry (addReplyHelp's; Redis 7.2 changed 7.0's "Prints this help."
    to "Print this help.", which valkey 9.1 says too)."""
    checked = 0
    for n in _our_names(rr):
        subs = rr.execute_command("COMMAND", "INFO", n)[0][9]
        if ("%s|help" % n).encode() not in [sub[0] for sub in subs]:
            continue
        try:
            ours = rr.execute_command(n, "HELP")
        except redis.ResponseError as e:
            # (CLUSTER HELP without cluster-enabled: Redis's error, the same)
            with pytest.raises(redis.ResponseError) as e2:
                refr.execute_command(n, "HELP")
            assert str(e) == str(e2.value), n
            continue
        theirs = refr.execute_command(n, "HELP")
        assert ours[0] == theirs[0], n
        assert theirs[-2:] == [b"HELP", b"    Prints this help."], n
        assert ours[-2:] == [b"HELP", b"    Print this help."], n
        checked += 1
    assert vk.execute_command("CONFIG", "HELP")[-2:] == [b"HELP", b"    Print this help."]
    assert checked >= 5


def test_every_redis_command_has_its_own_summary():
    """Families register commands over time: every command of Redis 7.0's
    table and every newer one we have (sentinel's own excepted) has a
    written summary."""
    missing = []

    def walk(name, m):
        # (a newer command's entry, data/commands/, may carry its own)
        if name not in SUMMARIES and not m.get("summary"):
            missing.append(name)
        for sn, sm in (m.get("subcommands") or {}).items():
            walk("%s|%s" % (name, sn.lower().split("|")[-1]), sm)
    for k, m in META.items():
        if m.get("group") != "sentinel":
            walk(k.lower(), m)
    assert not missing


# -- the registration is where a command's rules are read from ----------------------------

def test_registration_rejects_unknown_flags():
    from ophidis.cmdtable.registry import META, Command
    with pytest.raises(ValueError, match="no_such_flag"):
        Command("get", lambda c, argv: b"", META["GET"], ("no_such_flag",))


def test_script_runners_are_the_commands_redis_marks_so(rr):
    """Redis 8.10 marks the commands that run a script or a function
    SCRIPT_RUNNER (data/commands/scripting.json); the server's script
    handling (a script's declared flags standing for the command's, the
    fast path's re-reading) applies to exactly those.  The flag is
    internal: COMMAND INFO lists the six with 7.0's flags."""
    from ophidis.cmdtable.registry import SCRIPT_CALLS
    load_all()
    marked = {n.lower() for n, m in META.items() if "SCRIPT_RUNNER" in m.get("command_flags", ())}
    assert marked == SCRIPT_CALLS == {"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"}
    for name in sorted(marked):
        assert "script_runner" in ALL[name].flags
        flags = rr.execute_command("COMMAND", "INFO", name)[0][2]
        assert b"script_runner" not in flags and b"noscript" in flags


def test_state_changing_commands_never_take_the_fast_path():
    """Commands that change what the general path checks (transactions,
    authentication, protocol, subscriptions, scripts, blocking) are not
    fast-path commands: Command.fastpath is derived from their flags
    (script calls excepted, with the loop's re-reading)."""
    from ophidis.cmdtable.registry import ALL
    from ophidis.commands import load_all
    load_all()
    for name in ("multi", "exec", "discard", "watch", "unwatch", "hello", "auth", "reset", "quit",
                 "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe",
                 "sunsubscribe",
                 "script", "function", "client", "config", "debug", "monitor", "shutdown", "xread",
                 "xreadgroup", "wait", "blpop"):
        assert not ALL[name].fastpath, name
    for name in ("get", "set", "incr", "lpush", "ping", "xadd", "zadd"):
        assert ALL[name].fastpath == 1, name
    # script calls run directly, the loop reading its switches again after
    # them (tests/test_speedups_scripting.py: a script that changes them)
    for name in ("eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"):
        assert ALL[name].fastpath == 2, name


def _display_texts(docs, prefix=()):
    """{(command, arg name, ...): display_text} of a COMMAND DOCS entry."""
    out = {}
    d = _todict(docs)
    for a in d.get(b"arguments", []):
        a = _todict(a)
        path = prefix + (a[b"name"],)
        if b"display_text" in a:
            out[path] = a[b"display_text"]
        out.update(_display_texts(a, path))
    for sub, sd in _todict(d.get(b"subcommands", {})).items():
        out.update(_display_texts(sd, (sub,)))
    return out


def test_docs_display_text_as_valkey(server, valkey_server):
    # Redis 7.2's display_text: every argument but oneof/block ones carries
    # it (its name, or the metadata's text: CLIENT KILL's ip:port ...);
    # compared with valkey 9.1 wherever both name the same argument path
    a = unparsed(server.client())
    b = unparsed(valkey_server.client())
    theirs_names = {n for n in b.execute_command("COMMAND", "LIST")}
    ours = theirs = None
    compared = 0
    mismatched = []
    for n in a.execute_command("COMMAND", "LIST"):
        if n not in theirs_names:
            continue
        ours = _display_texts(_todict(a.execute_command("COMMAND", "DOCS", n))[n], (n,))
        theirs = _display_texts(_todict(b.execute_command("COMMAND", "DOCS", n))[n], (n,))
        for path, text in ours.items():
            if path in theirs:
                compared += 1
                if theirs[path] != text:
                    mismatched.append((path, text, theirs[path]))
    assert compared > 500
    assert not mismatched
    d = _todict(a.execute_command("COMMAND", "DOCS", "client|kill"))[b"client|kill"]
    assert _display_texts(d)[(b"filter", b"old-format")] == b"ip:port"
    get = [_todict(x) for x in _todict(_todict(a.execute_command("COMMAND", "DOCS", "get"))[b"get"])[b"arguments"]]
    assert get == [{b"name": b"key", b"type": b"key", b"display_text": b"key", b"key_spec_index": 0}]
