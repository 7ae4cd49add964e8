"""redis.call's bridge in Python: from a Lua call to a command run on the
script's client and back (scriptCall).  scripting/_bridge.pyx is its
compiled twin (the common case in C, Lua C functions where lupa's C API is
there); tests/test_speedups_scripting.py runs the same scripts through
both.  The checks that depend on the server's state and the run itself are
LuaEngine's (engine.py)."""

from __future__ import annotations

import time

from ..cmdtable.registry import TABLE
from ..dtoa import fpconv, lua_number
from ..keyspace.db import stats

_LLONG_MIN = -(1 << 63)
_LLONG_MAX = (1 << 63) - 1
_monotonic = time.monotonic


def resp_int(v) -> bytes:
    """Lua number -> Redis integer reply, as C's (long long) cast."""
    if v.__class__ is int:
        if _LLONG_MIN <= v <= _LLONG_MAX:
            return b":%d\r\n" % v
        return b":%d\r\n" % _LLONG_MIN
    if v != v or v in (float("inf"), float("-inf")):
        return b":%d\r\n" % _LLONG_MIN
    i = int(v)
    if not _LLONG_MIN <= i <= _LLONG_MAX:
        i = _LLONG_MIN
    return b":%d\r\n" % i


def lua_argv(args):
    """The arguments of redis.call as Lua gave them, as bytes (None: one is
    neither a string nor a number)."""
    argv = []
    ap = argv.append
    for a in args:
        t = a.__class__
        if t is bytes:
            ap(a)
        elif t is int:
            ap(b"%d" % a if -2**62 <= a <= 2**62 else fpconv(float(a)))
        elif t is float:
            ap(lua_number(a))
        else:
            return None
    return argv



def script_call(eng, args):
    """redis.call / redis.pcall (scriptCall): args as Lua gave them; returns
    (kind, value): 0 a Lua value, 1 an error reply's text ({err=...} that
    counts no error stat again), 2 a status reply's text, 3 an error of the
    call itself.  The checks that depend on the server's state are
    LuaEngine._run_call's; the compiled twin skips them while the fast
    path's _SERVER_SLOW is off and none of them can apply."""
    ctx = eng.ctx
    if ctx is None:
        return 3, b"ERR redis.call/pcall can only be called inside a script invocation"
    if not args:
        return 3, b"ERR Please specify at least one argument for this redis lib call"
    # Scripts spending their time in redis.call() run few Lua
    # instructions: check for the busy state here as well.
    if ctx.timedout or _monotonic() - ctx.start > ctx.threshold:
        m = eng._interrupt_inner()
        if m is not None:
            return 3, m
    argv = lua_argv(args)
    if argv is None:
        return 3, b"ERR Lua redis lib command arguments must be strings or integers"
    ldb = eng.ldb
    if ldb is not None and ldb.step:
        ldb.log_redis_command(argv)
    cmd = lookup(argv)
    if cmd is None:
        return eng._reject(None, b"ERR Unknown Redis command called from script")
    a = cmd.arity
    n = len(argv)
    if (a > 0 and a != n) or n < -a:
        return eng._reject(cmd, b"ERR Wrong number of args calling Redis command from script")
    if cmd.noscript and not eng.server.script_disable_deny_script:
        return eng._reject(cmd, b"ERR This Redis command is not allowed from script")
    return eng._run_call(cmd, argv)


def reply_value(eng, r: bytes):
    """A command's reply inside a script as script_call's (kind, value)."""
    b0 = r[0]
    if b0 == 58:        # ':'
        return 0, int(r[1:-2])
    if b0 == 36:        # '$'
        if r[1] == 45:
            return 0, False
        return 0, r[r.index(b"\n") + 1:-2]
    if b0 == 43:        # '+'
        return 2, r[1:-2]
    if b0 == 45:        # '-'
        return 1, error_text(r[1:-2])
    try:
        v, _ = eng._parse(r, 0)
    except Exception as e:  # noqa: BLE001
        return 3, ("ERR internal error parsing reply: %s" % e).encode()
    return 0, v


def lookup(argv):
    cmd = TABLE.get(argv[0]) or TABLE.get(argv[0].lower())
    if cmd is not None and cmd.subcommands and len(argv) > 1:
        cmd = cmd.subcommands.get(argv[1].lower())
    return cmd


def error_text(s: bytes) -> bytes:
    """An error reply line (without '-') as Redis stores it in {err=...}."""
    if b" " not in s:
        return b"ERR " + s
    return s.strip(b"\r\n")


def count_error(reply: bytes):
    sp = reply.find(b" ", 0, 33)
    code = reply[1:sp].decode("utf-8", "replace") if sp > 1 else "ERR"
    stats.count_error(code)
    stats.total_error_replies += 1
