"""Lua scripting engine (Redis's script_lua.c / script.c / eval.c) on lupa.

lupa 2.8 offers Lua 5.1 (``lupa.lua51``), the version Redis embeds, so the
language semantics match.  Redis patches its Lua with read-only tables; the
sandbox (``sandbox.lua``) emulates them with proxies, see that file.

One ``LuaEngine`` per Lua state: the EVAL engine (scripts cached by SHA1,
compiled once into Lua functions) and the FUNCTION engine (libraries).
``redis.call`` goes through ``LuaEngine._call`` which applies Redis's
script checks and runs the command with ``Server.call`` on the engine's
fake client (``in_script = True``, sharing the caller's db at start).

Busy scripts: a Lua count hook calls ``_interrupt`` every 100000
instructions.  Past ``busy-reply-threshold`` the server enters the busy
state (``server.script_busy``: every command but the allow-busy ones gets
-BUSY) and the hook polls the clients' sockets itself (the event loop is
blocked under us), so SCRIPT KILL / FUNCTION KILL / SHUTDOWN NOSAVE from
other connections are served.  The caller's own socket is not read
(Redis's protectClient).
"""

from __future__ import annotations

import hashlib
import os
import select
import socket
import time
from functools import partial

import lupa.lua51 as _lupa

from .. import compiled, log, sysinfo
from ..acl.check import DENIED_CMD, check_command, script_noperm_text
from ..acl.log import CTX_LUA
from ..cluster.routing import script_cluster_check
from ..dtoa import d2string
from ..errors import MISCONF, OOM
from ..keyspace import db as _db_mod
from ..keyspace.db import stats
from ..net.client import Client
from ..protocol.resp import sdscatrepr
from . import libs as lua_libs
from .bridge import count_error, error_text, lookup, lua_argv, reply_value, resp_int, script_call
from .ldb import Ldb

REDIS_VERSION = sysinfo.REDIS_VERSION_BYTES
REDIS_VERSION_NUM = sysinfo.REDIS_VERSION_NUM

BUSY_EVAL = ("BUSY Redis is busy running a script. You can only call SCRIPT KILL "
             "or SHUTDOWN NOSAVE.")
BUSY_FUNCTION = ("BUSY Redis is busy running a script. You can only call FUNCTION KILL "
                 "or SHUTDOWN NOSAVE.")
KILLED_MSG = b"ERR Script killed by user with SCRIPT KILL..."
LOAD_TIMEOUT_MSG = b"ERR FUNCTION LOAD timeout"
LOAD_TIMEOUT = 0.5
GC_CYCLE_PERIOD = 50           # luaGC: a collector step every this many loads (script_lua.c)

SCRIPT_FLAGS = ("no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys")

_SANDBOX_PATH = os.path.join(os.path.dirname(__file__), "sandbox.lua")
with open(_SANDBOX_PATH, "rb") as _f:
    _SANDBOX_SRC = _f.read()

_lua_type = _lupa.lua_type
_monotonic = time.monotonic


def sha1hex(b: bytes) -> bytes:
    return hashlib.sha1(b).hexdigest().encode()


def _deny_attributes(obj, name, is_setting):
    raise AttributeError("access denied")


# the compiled twin (scripting/_bridge.pyx: redis.call's bridge, the run,
# EVALSHA/FCALL's common case), picked here
_bridge = compiled.load("scripting._bridge")


class RunCtx:
    __slots__ = compiled.fields("scripting/_bridge.pxd", "RunCtx")

    def __init__(self, caller, name, eval_mode, readonly, allow_oom, argv):
        self.caller = caller
        self.name = name
        self.start = _monotonic()
        self.last_poll = 0.0
        self.eval_mode = eval_mode
        self.readonly = readonly
        self.allow_oom = allow_oom
        self.write_dirty = self.oom_at_start = self.killed = self.timedout = False
        self.repl_flags = 3
        self.argv = argv
        self.threshold = 1e9
        self.cross_slot = True    # may access keys of several slots (cluster)
        self.slot = -1            # the slot of the keys accessed so far (cluster)


if _bridge is not None:
    RunCtx = _bridge.RunCtx     # noqa: F811 - the same fields as C fields (script_call reads them)


class ScriptError(Exception):
    """A script could not be prepared or run: ``reply`` is the raw error reply."""


# The fields the compiled run reads (server, client, ctx, ldb, _link) are C
# fields of its base class when the module is built.
_EngineBase = _bridge.EngineCore if _bridge is not None else object


class LuaEngine(_EngineBase):
    def __init__(self, server, mode: str):
        self.server = server
        self.mode = mode
        self.ctx: RunCtx | None = None
        self.load_deadline = None
        self.registering = None     # list collecting register_function calls
        self.ldb: Ldb | None = None  # the Lua debugger's session while an EVAL is debugged
        sc = Client(server)
        sc.in_script = True
        sc.authenticated = True
        sc.slow = False
        sc.addr = ""
        sc.laddr = ""
        sc.name = None
        self.client = sc
        self._link = None       # the compiled bridge's LuaLink (scripting/_bridge.pyx)
        self.lua = lua = _lupa.LuaRuntime(
            encoding=None, unpack_returned_tuples=True, register_eval=False,
            register_builtins=False, attribute_filter=_deny_attributes)
        if _bridge is None:
            call, pcall = self._redis_call, self._redis_pcall
        else:       # the compiled bridge: Lua C functions where lupa's C API is there
            self._bridges = call, pcall = _bridge.ScriptBridge(self, True), _bridge.ScriptBridge(self, False)
            self._link = _bridge.lua_functions(lua, os.fsencode(_lupa.__file__), call, pcall)
            if self._link is not None:
                call, pcall = self._link.call, self._link.pcall
        py = lua.table_from({
            b"raw": lua.table_from({b"call": call, b"pcall": pcall, b"sha1hex": self._sha1hex}),
            b"unwrap": self._unwrap,
            b"interrupt": self._interrupt,
            b"log": self._log,
            b"sha1hex": sha1hex,
            b"d2string": d2string,
            b"setresp": self._setresp,
            b"set_repl": self._set_repl,
            b"running": self._running,
            b"acl_check": self._acl_check,
            b"register": self._register,
            b"valid_flag": self._valid_flag,
            b"ldb_line": self._ldb_line,
            b"ldb_next": self._ldb_next,
            b"ldb_done": self._ldb_done,
            b"ldb_resumed": self._ldb_resumed,
            b"ldb_log": self._ldb_log,
            b"ldb_log_max": self._ldb_log_max,
            b"ldb_source_line": self._ldb_source_line,
            b"ldb_repr": sdscatrepr,
            b"ldb_active": self._ldb_active,
            b"ldb_debug": self._ldb_debug,
            b"ldb_breakpoint": self._ldb_breakpoint,
            b"version": REDIS_VERSION,
            b"version_num": REDIS_VERSION_NUM,
            b"bit": lua_libs.make_bit(lua),
            b"cjson": lua_libs.make_cjson(lua),
            b"cmsgpack": lua_libs.make_cmsgpack(lua),
            b"struct": lua_libs.make_struct(lua),
        })
        wrap = lua.eval(
            "function(t) local w = {} for k, v in pairs(t) do "
            "if type(v) == 'userdata' then local f = v w[k] = function(...) return f(...) end "
            "else w[k] = v end end return w end")
        py = wrap(py)
        loader = lua.execute("return loadstring(...)", _SANDBOX_SRC, b"=ophidis")
        h = loader(mode.encode(), py)
        self.h = h
        self._run = h[b"run"]
        self._run_t = h[b"run_t"]
        self._ldb_run_t = h[b"ldb_run_t"] if mode == "eval" else None
        self._compile = h[b"compile"]
        self._encode = h[b"encode_reply"]
        self._mk_ok = h[b"mk_ok"]
        self._mk_oks = h[b"mk_oks"]
        self._ok_pool = []
        if _bridge is not None:      # the compiled twin of LuaEngine.run
            self.run = partial(_bridge.script_run, self)
            if self._link is not None:
                self._link.bind(h[b"run_prep_t"], h[b"G"], h[b"err_handler"], h[b"error_info"], self._encode,
                                count_error, mode == "eval")
        self._mk_err = h[b"mk_err"]
        self._mk_double = h[b"mk_double"]
        self._mk_big = h[b"mk_big"]
        self._mk_verbatim = h[b"mk_verbatim"]
        self._mk_err_plain = lua.eval("function(s) return {err = s} end")
        self._mk_liberr = lua.eval("function(s) return {liberr = s} end")
        self._tostring = lua.eval("tostring")
        self._mk_map = lua.eval("function(t) return {map = t} end")
        self._mk_set = lua.eval("function(t) return {set = t} end")
        self._gc_count = lua.eval("function() return collectgarbage('count') end")
        # luaGC: a collector step of 50 every 50 library loads
        self._gc_step = lua.eval("function() collectgarbage('step', %d) end" % GC_CYCLE_PERIOD)
        self._gc_loads = 0
        lua.execute("collectgarbage('collect')")    # (the set-up's garbage out of the base)
        self._base_memory = self.lua_memory()
        self._table_from = lua.table_from
        self._table = lua.table

    def lua_memory(self) -> int:
        """luaMemory: the bytes the Lua state holds (its collector's count)."""
        return int(self._gc_count() * 1024)

    def gc_after_load(self):
        """Redis's luaGC after loading code: every GC_CYCLE_PERIOD loads, a
        collector step of that size (what the loads left behind is freed
        as they go, not when the state has doubled)."""
        self._gc_loads += 1
        if self._gc_loads >= GC_CYCLE_PERIOD:
            self._gc_loads = 0
            self._gc_step()

    def memory_growth(self) -> int:
        """What the Lua state grew since it was set up: the libraries and
        scripts loaded into it (and their garbage, until it is collected)."""
        return max(0, self.lua_memory() - self._base_memory)

    # -- compile / run ----------------------------------------------------------------
    def compile(self, body: bytes, chunkname: bytes):
        """Returns (function, None) or (None, error message)."""
        r = self._compile(body, chunkname)
        if r.__class__ is tuple:
            return None, r[1]
        return r, None

    def run(self, ctx: RunCtx, fn, keys, args, caller_resp: int) -> bytes:
        """Run fn with KEYS/ARGV (or keys/args parameters); return the reply."""
        srv = self.server
        sc = self.client
        caller = ctx.caller
        sc.db = caller.db
        sc.script_caller = (caller, keys)
        sc.resp = 2
        sc.user = caller.user
        th = srv.config.values["busy-reply-threshold"]
        ctx.threshold = th / 1000.0 if th > 0 else 1e9
        if srv.maxmemory:
            try:
                ctx.oom_at_start = bool(srv.memory.evict_hook())
            except Exception:  # noqa: BLE001
                ctx.oom_at_start = False
        self.ctx = ctx
        # The time is frozen while a script runs: keys expire, TTLs and TIME
        # are judged at the time it started (Redis's command time snapshot).
        prev_time = _db_mod.freeze_clock()
        try:
            if self.ldb is not None:
                ctx.threshold = 1e9          # a debugged script is never busy
                tf = self._table_from
                r = self._ldb_run_t(fn, tf(list(keys)), tf(list(args)))
            elif len(keys) + len(args) <= 64:
                r = self._run(fn, len(keys), *keys, *args)
            else:
                tf = self._table_from
                r = self._run_t(fn, tf(list(keys)), tf(list(args)))
        finally:
            _db_mod.thaw_clock(prev_time)
            self.ctx = None
            if ctx.timedout:
                srv.script_busy = None
                srv.update_server_slow()
        if r[0]:
            v = r[1]
            t = v.__class__
            if t is bytes:
                return b"$%d\r\n%s\r\n" % (len(v), v)
            if t is int or t is float:
                return resp_int(v)
            return self._reply(v, caller_resp)
        return self._run_error(ctx, r)

    def _reply(self, v, caller_resp: int) -> bytes:
        """A script's return value other than a string or a number, encoded."""
        out, ign = self._encode(v, caller_resp, self.client.resp)
        if out[:1] == b"-" and not ign:
            count_error(out)
        return out

    def _run_error(self, ctx: RunCtx, r) -> bytes:
        """The error reply of a script that failed: r is (False, msg, source, line, ignore)."""
        msg = r[1] if len(r) > 1 else None
        src = r[2] if len(r) > 2 else None
        line = r[3] if len(r) > 3 else None
        ign = r[4] if len(r) > 4 else False
        if msg is None:
            msg = b"ERR Error running script %s, execution failure" % ctx.name
        if src is not None and line is not None:
            msg = b"%s script: %s, on %s:%s." % (msg, ctx.name, src, line)
        msg = msg.replace(b"\r", b" ").replace(b"\n", b" ")
        out = b"-%s\r\n" % msg
        if not ign:
            count_error(out)
        return out

    # -- the Lua debugger's callbacks (sandbox.lua's ldb_hook and commands) -------------
    def _ldb_line(self, is_count, line):
        ldb, ctx = self.ldb, self.ctx
        if ldb is None or ctx is None:
            return 0
        th = self.server.config["busy-reply-threshold"]
        return ldb.on_line(bool(is_count), int(line or 0), ctx.start,
                           (th if th > 0 else 5000) / 1000.0)

    def _ldb_next(self):
        """The next command for the Lua side: ("closed"), ("error", text) or
        (verb, its arguments); the other commands are run here."""
        ldb = self.ldb
        while ldb is not None:
            argv = ldb.read_command()
            if argv is None:
                return b"closed"
            if argv.__class__ is str:
                return b"error", argv.encode()
            verb = ldb.command(argv)
            if verb is not None:
                return verb.encode(), self._table_from(argv[1:])
        return b"closed"

    def _ldb_done(self, verb):
        ldb = self.ldb
        if ldb is not None:
            if verb == b"redis":
                ldb.step = False
            ldb.send()

    def _ldb_resumed(self):
        if self.ctx is not None:
            self.ctx.start = _monotonic()

    def _ldb_log(self, s):
        if self.ldb is not None:
            self.ldb.log(bytes(s))

    def _ldb_log_max(self, s):
        if self.ldb is not None:
            self.ldb.log_maxlen(bytes(s))

    def _ldb_source_line(self, n):
        if self.ldb is not None:
            self.ldb.log_source_line(int(n or 0))

    def _ldb_active(self):
        return self.ldb is not None

    def _ldb_debug(self, s):
        ldb = self.ldb
        if ldb is not None:
            ldb.log(b"<debug> line %d: %s" % (ldb.currentline, bytes(s)))

    def _ldb_breakpoint(self):
        if self.ldb is None:
            return False
        self.ldb.luabp = True
        return True

    # -- Python callbacks (called from Lua; must never raise) ---------------------------
    def _running(self):
        return self.ctx is not None

    def _log(self, level, msg):
        try:
            if log.enabled(int(level)):
                log.log(int(level), msg.decode("utf-8", "replace") if isinstance(msg, bytes) else str(msg),
                        raw=True)
        except Exception:  # noqa: BLE001
            pass

    def _setresp(self, n):
        self.client.resp = int(n)

    def _set_repl(self, f):
        if self.ctx is not None:
            self.ctx.repl_flags = int(f)

    def _valid_flag(self, f):
        low = f.lower()
        for name in SCRIPT_FLAGS:
            if low == name.encode():
                return name.encode()
        return None

    def _register(self, name, cb, desc, flags):
        reg = self.registering
        if reg is None:
            return b"ERR redis.register_function can only be called on FUNCTION LOAD command"
        if not _valid_name(name):
            return (b"ERR Library names can only contain letters, numbers, or underscores(_) "
                    b"and must be at least one character long")
        if name in reg:
            return b"ERR Function already exists in the library"
        fl = []
        for i in range(1, 100):
            x = flags[i]
            if x is None:
                break
            fl.append(x.decode())
        reg[name] = (cb, desc, fl)
        return None

    def _acl_check(self, *args):
        if not args:
            return 3, b"ERR Please specify at least one argument for this redis lib call"
        argv = lua_argv(args)
        if argv is None:
            return 3, b"ERR Lua redis lib command arguments must be strings or integers"
        cmd = lookup(argv)
        if cmd is None:
            return 3, b"ERR Invalid command passed to redis.acl_check_cmd()"
        ctx = self.ctx
        user = ctx.caller.user if ctx is not None else self.client.user
        return 0, check_command(user, cmd, argv)[0] == 0

    def _redis_call(self, *args):
        r = script_call(self, args)
        if r[0] == 0:
            return r[1]
        return self._call_failed(r, True)

    def _redis_pcall(self, *args):
        r = script_call(self, args)
        if r[0] == 0:
            return r[1]
        return self._call_failed(r, False)

    def _call_failed(self, r, raise_: bool):
        """redis.call / redis.pcall given script_call's (kind, value) other
        than a plain value: a status table, or the error raised (call) or
        returned (pcall)."""
        kind, v = r
        if kind == 2:
            if v != b"OK":
                return self._mk_ok(v)
            # +OK's table, fresh each time as in Redis: made 64 at a time
            # (one call into Lua instead of one a reply)
            pool = self._ok_pool
            if not pool:
                pool.extend(self._mk_oks(64))
            return pool.pop()
        if kind == 3 and self.ldb is not None:
            self._ldb_error(v)
        e = self._mk_err(v) if kind == 1 else self._mk_err_plain(v)
        if raise_:
            raise _lupa.LuaError(e)
        return e

    def _sha1hex(self, *args):
        if len(args) != 1:
            raise _lupa.LuaError(self._mk_err_plain(b"ERR wrong number of arguments"))
        s = args[0]
        t = s.__class__
        if t is int or t is float:
            s = self._tostring(s)
        elif t is not bytes:
            s = b""
        return sha1hex(s)

    def _unwrap(self, e):
        if isinstance(e, _lupa.LuaError) and e.args:
            a = e.args[0]
            if _lua_type(a) == "table":
                return a
            if a.__class__ is bytes:
                return self._mk_liberr(a)
        if isinstance(e, BaseException):
            return ("ERR %s" % e).encode()
        return None

    def _ldb_error(self, msg: bytes):
        """While stepping, the errors redis.call raises itself are logged."""
        if self.ldb.step:
            self.ldb.log(b"<error> " + (msg[4:] if msg.startswith(b"ERR ") else msg))

    def _reject(self, cmd, msg: bytes):
        if self.ldb is not None:
            self._ldb_error(msg)
        stats.total_error_replies += 1
        code = msg.split(b" ", 1)[0].decode("utf-8", "replace")
        stats.count_error(code)
        if cmd is not None:
            cmd.rejected_calls += 1
        return 1, msg

    def _run_call(self, cmd, argv):
        """The checks of scriptCall that depend on the server's state (the
        ones script_call skips while the fast path's _SERVER_SLOW is off),
        then the call; a (kind, value) of script_call."""
        ctx = self.ctx
        srv = self.server
        if not cmd.stale and srv.running_stale():
            return self._reject(cmd, b"ERR Can not execute the command on a stale replica")
        user = self.client.user
        if not user.unrestricted:
            res, idx = check_command(user, cmd, argv)
            if res:
                srv.acl.log_denial(self.client, res, CTX_LUA, cmd.fullname.encode() if res == DENIED_CMD
                                   else argv[idx])
                return self._reject(cmd, b"ERR " + script_noperm_text(res, cmd, user.name))
        if cmd.write or cmd.may_replicate:
            if ctx.readonly:
                return self._reject(cmd, b"ERR Write commands are not allowed from read-only scripts.")
            # scriptVerifyWriteCommandAllow: nothing stops a script that wrote already
            if cmd.write and not ctx.write_dirty:
                if srv.is_replica and srv.config["replica-read-only"] and not ctx.caller.is_master:
                    return self._reject(cmd, b"READONLY You can't write against a read only replica.")
                if (not srv.lastbgsave_ok and srv.config["stop-writes-on-bgsave-error"]
                        and srv.config["save"]):
                    return self._reject(cmd, MISCONF.msg)
                if srv.write_denied is not None:
                    return self._reject(cmd, srv.write_denied.msg)
                if not srv.is_replica and srv.min_replicas and srv.good_replicas() < srv.min_replicas:
                    return self._reject(cmd, b"NOREPLICAS Not enough good replicas to write.")
        if (not ctx.allow_oom and srv.maxmemory and not ctx.write_dirty and ctx.oom_at_start
                and cmd.denyoom):
            return self._reject(cmd, OOM.msg)
        if cmd.write:
            ctx.write_dirty = True
        if srv.cluster is not None and not ctx.caller.is_master:
            e = script_cluster_check(srv.cluster, ctx, cmd, argv)
            if e is not None:
                return self._reject(cmd, e)
        return self._call_reply(cmd, argv)

    def _call_reply(self, cmd, argv):
        """Server.call on the script's client; the reply as script_call's
        (kind, value) (the reply types other than the four common ones are
        parsed by _parse)."""
        try:
            r = self.server.call(self.client, cmd, argv)
        except Exception as e:  # noqa: BLE001
            return 3, ("ERR internal error: %s" % e).encode()
        if r is None:
            return 0, None
        ldb = self.ldb
        if ldb is not None and ldb.step:
            if r[:1] == b"-":       # (an error reply becomes a Lua error first)
                ldb.log(b"<error> " + r[:-2])
            ldb.log_reply(r)
        return reply_value(self, r)

    def _parse(self, r, pos):
        """One RESP2/RESP3 reply at pos -> (Lua value, next pos)."""
        end = r.index(b"\r\n", pos)
        t = r[pos]
        line = r[pos + 1:end]
        pos = end + 2
        if t == 36:   # $
            n = int(line)
            if n < 0:
                return False, pos
            return r[pos:pos + n], pos + n + 2
        if t == 58:   # :
            return int(line), pos
        if t == 43:   # +
            return self._mk_ok(line), pos
        if t == 45:   # -
            return self._mk_err(error_text(line)), pos
        if t == 42 or t == 62:   # * >
            n = int(line)
            if n < 0:
                return False, pos
            items = []
            for _ in range(n):
                v, pos = self._parse(r, pos)
                items.append(v)
            return self._table_from(items), pos
        if t == 37:   # %
            n = int(line)
            inner = self._table()
            for _ in range(n):
                k, pos = self._parse(r, pos)
                v, pos = self._parse(r, pos)
                if k is not None:
                    inner[k] = v
            return self._mk_map(inner), pos
        if t == 126:  # ~
            n = int(line)
            inner = self._table()
            for _ in range(n):
                k, pos = self._parse(r, pos)
                if k is not None:
                    inner[k] = True
            return self._mk_set(inner), pos
        if t == 95:   # _
            return None, pos
        if t == 35:   # #
            return line == b"t", pos
        if t == 44:   # ,
            return self._mk_double(float(line)), pos
        if t == 40:   # (
            return self._mk_big(line), pos
        if t == 61:   # =
            n = int(line)
            s = r[pos:pos + n]
            return self._mk_verbatim(s[:3], s[4:]), pos + n + 2
        if t == 124:  # | attributes: skipped
            n = int(line)
            for _ in range(2 * n):
                _, pos = self._parse(r, pos)
            return self._parse(r, pos)
        raise ValueError("bad reply type %r" % chr(t))

    # -- busy scripts -------------------------------------------------------------------
    def _interrupt(self):
        try:
            if _bridge is not None:
                _bridge.freeze_clock()      # the run's time snapshot (the compiled run installs it late)
            msg = self._interrupt_inner()
            if msg is not None and self._link is not None:
                self._link.disarm()     # the sandbox's hook now raises (run_prep_t resets it)
            return msg
        except Exception:  # noqa: BLE001
            import traceback
            log.warning("script interrupt error: %s" % traceback.format_exc().replace("\n", " | "))
            return None

    def _interrupt_inner(self):
        ctx = self.ctx
        if ctx is None:
            if self.load_deadline is not None and _monotonic() > self.load_deadline:
                return LOAD_TIMEOUT_MSG
            return None
        srv = self.server
        if not ctx.timedout:
            threshold = srv.config["busy-reply-threshold"]
            elapsed = _monotonic() - ctx.start
            if threshold <= 0 or elapsed * 1000 < threshold:
                return None
            log.warning(
                "Slow script detected: still in execution after %d milliseconds. "
                "You can try killing the script using the %s command. Script name is: %s." % (
                    int(elapsed * 1000), "SCRIPT KILL" if ctx.eval_mode else "FUNCTION KILL",
                    ctx.name.decode("utf-8", "replace")))
            ctx.timedout = True
            srv.script_busy = BUSY_EVAL if ctx.eval_mode else BUSY_FUNCTION
            srv.update_server_slow()
        now = _monotonic()
        if not ctx.killed and now - ctx.last_poll >= 0.001:
            ctx.last_poll = now
            process_events_while_blocked(srv, ctx.caller)
            if srv._stopping:
                ctx.killed = True
        if ctx.killed:
            log.warning("Lua script killed by user with SCRIPT KILL.")
            return KILLED_MSG
        return None


def _valid_name(name: bytes) -> bool:
    if not name:
        return False
    for ch in name:
        if not (48 <= ch <= 57 or 65 <= ch <= 90 or 97 <= ch <= 122 or ch == 95):
            return False
    return True


# -- processing other clients while a script is busy ------------------------------------

def process_events_while_blocked(srv, caller):
    """Serve other connections while a busy script runs on the event loop:
    read what they sent and run it (commands other than the allow-busy ones
    are answered -BUSY by process_command); accept new connections."""
    poller = select.poll()
    fds = {}
    for c in list(srv.clients.values()):
        if c is caller or c.closing or c.fd < 0:
            continue
        fds[c.fd] = c
        poller.register(c.fd, select.POLLIN)
    lsocks = {}
    for kind, lsrv in srv.listeners:
        for s in getattr(lsrv, "sockets", None) or ():
            try:
                fd = s.fileno()
            except Exception:  # noqa: BLE001
                continue
            lsocks[fd] = s
            poller.register(fd, select.POLLIN)
    try:
        events = poller.poll(0)
    except InterruptedError:
        return
    for fd, ev in events:
        if fd in lsocks:
            _accept_while_blocked(srv, fd)
            continue
        c = fds.get(fd)
        if c is None or c.closing:
            continue
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            continue
        except OSError:
            data = b""
        if not data:
            c.close()
            continue
        try:
            c.data_received(data)
        except Exception:  # noqa: BLE001
            import traceback
            log.warning("error serving a client during a busy script: %s" %
                        traceback.format_exc().replace("\n", " | "))
        if srv._stopping:
            return


def _accept_while_blocked(srv, lfd):
    lsock = socket.socket(fileno=os.dup(lfd))
    try:
        lsock.setblocking(False)
        try:
            conn, _ = lsock.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return
    finally:
        lsock.close()
    c = Client(srv)
    SockTransport(srv.loop, conn, c)


class SockTransport:
    """A minimal transport for connections accepted while a script is busy
    (the event loop cannot accept them for us then).  Reads through
    loop.add_reader once the loop runs again."""

    def __init__(self, loop, sock, protocol):
        self._loop = loop
        self._sock = sock
        self._fd = sock.fileno()
        self._protocol = protocol
        self._buf = bytearray()
        self._closing = False
        self._closed = False
        self._reading = False
        self._writing = False
        sock.setblocking(False)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        protocol.connection_made(self)
        if not protocol.closing:
            self.resume_reading()

    def get_extra_info(self, name, default=None):
        try:
            if name == "socket":
                return self._sock
            if name == "peername":
                return self._sock.getpeername()
            if name == "sockname":
                return self._sock.getsockname()
        except OSError:
            return default
        return default

    def _read_ready(self):
        if self._closed:
            return
        try:
            data = self._sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._force_close()
            return
        self._protocol.data_received(data)

    def write(self, data):
        if self._closed or self._closing:
            return
        if not self._buf:
            try:
                n = self._sock.send(data)
            except (BlockingIOError, InterruptedError):
                n = 0
            except OSError:
                self._force_close()
                return
            data = data[n:]
            if not data:
                return
        self._buf += data
        if not self._writing:
            self._writing = True
            self._loop.add_writer(self._fd, self._write_ready)

    def _write_ready(self):
        if self._closed:
            return
        try:
            n = self._sock.send(self._buf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._force_close()
            return
        del self._buf[:n]
        if not self._buf:
            self._loop.remove_writer(self._fd)
            self._writing = False
            if self._closing:
                self._force_close()

    def get_write_buffer_size(self):
        return len(self._buf)

    def is_closing(self):
        return self._closing or self._closed

    def close(self):
        if self._closed:
            return
        self._closing = True
        self.pause_reading()
        if not self._buf:
            self._force_close()

    def abort(self):
        self._force_close()

    def pause_reading(self):
        if self._reading and not self._closed:
            self._loop.remove_reader(self._fd)
            self._reading = False

    def resume_reading(self):
        if not self._reading and not self._closed:
            self._loop.add_reader(self._fd, self._read_ready)
            self._reading = True

    def set_write_buffer_limits(self, high=None, low=None):
        pass

    def _force_close(self):
        if self._closed:
            return
        self._closed = True
        self._closing = True
        try:
            if self._reading:
                self._loop.remove_reader(self._fd)
            if self._writing:
                self._loop.remove_writer(self._fd)
        except Exception:  # noqa: BLE001
            pass
        self._reading = self._writing = False
        try:
            self._sock.close()
        except OSError:
            pass
        self._loop.call_soon(self._protocol.connection_lost, None)

