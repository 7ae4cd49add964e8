"""EVAL / EVALSHA / *_RO, SCRIPT, FCALL / FCALL_RO, FUNCTION (eval.c, functions.c).

The Lua engines live in ``ophidis.scripting.engine``.  Server attributes used:

* ``server.lua_scripts``: sha (lowercase hex bytes) -> ``Script``;
  ``server.cached_scripts`` is its size (INFO's number_of_cached_scripts).
* ``server.lua_scripts_lru``: the shas of the scripts EVAL compiled (not
  SCRIPT LOAD), least recently run first: past EVAL_SCRIPTS_MAX the oldest
  is dropped (Redis 7.4's eval script eviction; INFO's evicted_scripts).
* ``server.functions``: the ``Functions`` registry (scripting/functions.py).

A script's shebang and its declared flags: scripting/flags.py.
"""

from __future__ import annotations

from collections import OrderedDict

from .. import compiled, log
from ..cluster.slots import key_hash_slot
from ..cmdtable.registry import TABLE, command
from ..errors import NOSCRIPT, RedisError
from ..keyspace.db import stats
from ..memory.sizes import LAZYFREE_THRESHOLD
from ..persistence import child as child_mod
from ..persistence.rdb import NotAFunction, RdbError, functions_payload, load_functions_payload, verify_payload
from ..protocol.resp import NULL3, NULL_BULK, OK, bulk, integer, map_header, set_header, simple
from ..scripting import engine as lua_mod
from ..scripting.flags import extract_shebang
from ..scripting.functions import Functions
from ..scripting.ldb import LDB_CHILDREN, Ldb
from ..util import parse_int, stringmatch

SCRIPT_FLAGS = lua_mod.SCRIPT_FLAGS
_UNKILLABLE = ("UNKILLABLE Sorry the script already executed write commands against the dataset. "
               "You can either wait the script termination or kill the server in a hard way "
               "using the SHUTDOWN NOSAVE command.")


# Script's fields are C fields of the compiled layer's base when it is
# built (its EVALSHA reads them), slots otherwise (Function's:
# scripting/functions.py). (one field list each: scripting/_bridge.pxd)
_bridge = lua_mod._bridge
if _bridge is not None:
    _ScriptBase, _SCRIPT_SLOTS = _bridge.ScriptCore, ()
else:
    _ScriptBase, _SCRIPT_SLOTS = object, compiled.fields("scripting/_bridge.pxd", "ScriptCore")


class Script(_ScriptBase):
    __slots__ = _SCRIPT_SLOTS

    def __init__(self, sha, body, fn, flags, compat, lru):
        self.sha = sha
        self.body = body
        self.fn = fn
        self.flags = flags
        self.compat = compat
        self.lru = lru      # server.lua_scripts_lru for a script EVAL made, else None


# the scripts EVAL compiled that are kept (eval.c's LRU_LIST_LENGTH)
EVAL_SCRIPTS_MAX = 500


# -- engines --------------------------------------------------------------------------------

def eval_engine(srv) -> lua_mod.LuaEngine:
    """The EVAL engine, created on first use (SCRIPT FLUSH drops it)."""
    eng = srv.lua_eval
    if eng is None:
        eng = srv.lua_eval = lua_mod.LuaEngine(srv, "eval")
        srv.lua_scripts = {}
        srv.lua_scripts_lru = OrderedDict()
        srv.cached_scripts = 0
    return eng


def script_kill(c, is_eval: bool):
    ctx = c.server.running_script()
    if ctx is None:
        raise RedisError("NOTBUSY No scripts in execution right now.")
    if ctx.write_dirty:
        raise RedisError(_UNKILLABLE)
    if is_eval and not ctx.eval_mode:
        raise RedisError(lua_mod.BUSY_FUNCTION)
    if not is_eval and ctx.eval_mode:
        raise RedisError(lua_mod.BUSY_EVAL)
    ctx.killed = True
    return OK


def _help(name, lines):
    lines = ["%s <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" % name] + lines + [
        "HELP", "    Print this help."]
    return b"*%d\r\n" % len(lines) + b"".join(simple(x.encode()) for x in lines)


def create_script(srv, body: bytes, by_eval: bool) -> Script:
    """The script of body, compiled and cached where it is not yet (by_eval:
    EVAL's, which may be evicted, else SCRIPT LOAD's, which stays; a script
    already there stays as it was made)."""
    eng = eval_engine(srv)
    sha = lua_mod.sha1hex(body)
    scripts = srv.lua_scripts
    s = scripts.get(sha)
    if s is not None:
        return s
    flags, compat, sblen = extract_shebang(body)
    fn, err = eng.compile(body[sblen:], b"@user_script")
    if fn is None:
        raise RedisError(b"ERR Error compiling script (new function): " + err)
    lru = None
    if by_eval:
        lru = srv.lua_scripts_lru
        while len(lru) >= EVAL_SCRIPTS_MAX:
            del scripts[lru.popitem(last=False)[0]]
            stats.evicted_scripts += 1
        lru[sha] = None
    s = Script(sha, body, fn, flags, compat, lru)
    scripts[sha] = s
    srv.cached_scripts = len(scripts)
    return s


def script_ran(s: Script) -> None:
    """A script EVAL made ran: the most recently used (evalGenericCommand's
    LRU step, after the run)."""
    lru = s.lru
    if lru is not None and s.sha in lru:
        lru.move_to_end(s.sha)


def prepare(c, flags, compat: bool, ro: bool):
    """scriptPrepareForRun's checks; returns (readonly, allow_oom)."""
    srv = c.server
    if compat:                                  # (an EVAL without shebang)
        if srv.is_replica and srv.running_stale():
            raise RedisError("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")
        return ro, False
    if (not flags and not ro and not srv.is_replica and srv.lastbgsave_ok and not srv.min_replicas
            and not srv.maxmemory):
        return False, False                     # nothing declared, nothing of the checks below applies
    if "no-cluster" in flags and srv.cluster is not None:
        raise RedisError("ERR Can not run script on cluster, 'no-cluster' flag is set.")
    if "allow-stale" not in flags and srv.running_stale():
        raise RedisError("MASTERDOWN Link with MASTER is down, replica-serve-stale-data is set to 'no' "
                         "and 'allow-stale' flag is not set on the script.")
    if "no-writes" not in flags:
        if srv.is_replica and srv.config["replica-read-only"] and not c.is_master:
            raise RedisError("READONLY Can not run script with write flag on readonly replica")
        if (not srv.lastbgsave_ok and srv.config["stop-writes-on-bgsave-error"]
                and srv.config["save"]):
            raise RedisError(
                "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to "
                "persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only "
                "scripts.")
        if ro:
            raise RedisError("ERR Can not execute a script with write flag using *_ro command.")
        if not srv.is_replica and srv.min_replicas and srv.good_replicas() < srv.min_replicas:
            raise RedisError("NOREPLICAS Not enough good replicas to write.")
    if srv.maxmemory and "allow-oom" not in flags and "no-writes" not in flags:
        if srv.memory.evict_hook():
            raise RedisError("OOM allow-oom flag is not set on the script, can not run it when "
                             "used memory > 'maxmemory'")
    return ro or "no-writes" in flags, "allow-oom" in flags


_BAD_NUMKEYS = RedisError("ERR Bad number of keys provided")


def _numkeys(c, argv, bad=None):
    b = argv[2]
    if len(b) == 1 and 48 <= b[0] <= 57:
        n = b[0] - 48           # one digit: the common case, canonical
    else:
        n = parse_int(b) if bad is None else parse_int(b, bad)
    if n > len(argv) - 3:
        raise RedisError("ERR Number of keys can't be greater than number of args")
    if n < 0:
        raise RedisError("ERR Number of keys can't be negative")
    return n


def _failed(argv, reply: bytes) -> bytes:
    """The reply of a script run: an error reply counts as a failed call of
    EVAL/FCALL (a raised error is counted by the dispatcher)."""
    if reply[:1] == b"-":
        cmd = TABLE.get(argv[0].lower())
        if cmd is not None:
            cmd.failed_calls += 1
    return reply


def _cluster_ctx(ctx, cross_slot: bool, argv, numkeys: int):
    """A script in cluster mode: may it touch keys of several slots, and
    the slot of its declared keys (processCommand routed it by them)."""
    ctx.cross_slot = cross_slot
    ctx.slot = key_hash_slot(argv[3]) if numkeys else -1


# -- EVAL ---------------------------------------------------------------------------------------

def _eval(c, argv, evalsha: bool, ro: bool):
    srv = c.server
    if srv.monitors:
        srv.feed_monitors(c, argv)
    if evalsha and len(argv[1]) != 40:
        raise NOSCRIPT
    if c.lua_debug is not None:
        if evalsha:
            raise RedisError("ERR Please use EVAL instead of EVALSHA for debugging")
        return _eval_debugging(c, argv, ro)
    return _eval_run(c, argv, evalsha, ro)


def _eval_run(c, argv, evalsha: bool, ro: bool):
    srv = c.server
    eng = srv.lua_eval or eval_engine(srv)
    numkeys = _numkeys(c, argv)
    if evalsha:
        s = srv.lua_scripts.get(argv[1].lower())
        if s is None:
            raise NOSCRIPT
    else:
        s = srv.lua_scripts.get(lua_mod.sha1hex(argv[1]))
        if s is None:
            s = create_script(srv, argv[1], True)
    readonly, allow_oom = prepare(c, s.flags, s.compat, ro)
    ctx = lua_mod.RunCtx(c, s.sha, True, readonly, allow_oom, argv)
    if srv.cluster is not None:
        _cluster_ctx(ctx, s.compat or "allow-cross-slot-keys" in s.flags, argv, numkeys)
    r = eng.run(ctx, s.fn, argv[3:3 + numkeys], argv[3 + numkeys:], c.resp)
    if s.lru is not None:
        script_ran(s)
    return _failed(argv, r)


# -- the Lua debugger (SCRIPT DEBUG YES|SYNC; scripting/ldb.py) ---------------------------

def _eval_debugging(c, argv, ro: bool):
    """evalGenericCommandWithDebugging: SYNC debugs here, the server
    blocked; YES forks a child that debugs, and this side drops the client."""
    srv = c.server
    if c.lua_debug == "sync":
        log.warning("Redis synchronous debugging eval session started")
        reply = _debug_run(c, argv, ro, False)
        log.warning("Redis synchronous debugging eval session ended")
        c.close_after_reply = True
        return reply

    def body(ctx):
        log.warning("Redis forked for debugging eval")
        reply = _debug_run(c, argv, ro, True)
        Ldb(c.fd, b"", True).write(reply)
        log.warning("Lua debugging session child exiting")
        return 0
    try:
        LDB_CHILDREN.append(child_mod.fork(srv, body, "Lua debugging session"))
    except OSError as e:
        c.lua_debug = None
        raise RedisError("ERR Fork() failed: can't run EVAL in debugging mode: %s" % e.strerror)
    c.close()
    return None


def _debug_run(c, argv, ro: bool, forked: bool) -> bytes:
    """The EVAL under the debugger, then <endsession>; the EVAL reply."""
    srv = c.server
    eng = eval_engine(srv)
    ldb = eng.ldb = Ldb(c.fd, argv[1], forked)
    ldb.stop_requested = lambda: srv.shutdown_asap is not None
    try:
        reply = _eval_run(c, argv, False, ro)
    except RedisError as e:
        reply = c.error_reply(e)
    finally:
        eng.ldb = None
    ldb.log(b"<endsession>")
    ldb.send()
    return reply


@command("eval", propagate=False)
def eval_cmd(c, argv):
    return _eval(c, argv, False, False)


@command("eval_ro", flags=("not_tracked",), propagate=False)
def eval_ro_cmd(c, argv):
    return _eval(c, argv, False, True)


def _evalsha(c, argv, ro: bool):
    """EVALSHA: _eval's steps in one frame while no MONITOR, debugger or
    cluster applies (the same checks in the same order), else _eval."""
    srv = c.server
    if srv.monitors or c.lua_debug is not None or srv.cluster is not None:
        return _eval(c, argv, True, ro)
    sha = argv[1]
    if len(sha) != 40:
        raise NOSCRIPT
    eng = srv.lua_eval or eval_engine(srv)
    numkeys = _numkeys(c, argv)
    s = srv.lua_scripts.get(sha.lower())
    if s is None:
        raise NOSCRIPT
    readonly, allow_oom = prepare(c, s.flags, s.compat, ro)
    r = eng.run(lua_mod.RunCtx(c, s.sha, True, readonly, allow_oom, argv), s.fn, argv[3:3 + numkeys],
                argv[3 + numkeys:], c.resp)
    if s.lru is not None:
        script_ran(s)
    return _failed(argv, r)


def evalsha_cmd(c, argv):
    return _evalsha(c, argv, False)


def evalsha_ro_cmd(c, argv):
    return _evalsha(c, argv, True)


# -- SCRIPT ---------------------------------------------------------------------------------------

@command("script|load", propagate=False)
def script_load(c, argv):
    s = create_script(c.server, argv[2], False)
    return bulk(s.sha)


@command("script|exists")
def script_exists(c, argv):
    srv = c.server
    eval_engine(srv)
    out = [b"*%d\r\n" % (len(argv) - 2)]
    for sha in argv[2:]:
        out.append(integer(1 if sha.lower() in srv.lua_scripts else 0))
    return b"".join(out)


@command("script|flush", propagate=False)
def script_flush(c, argv):
    if len(argv) == 3 and argv[2].lower() in (b"sync", b"async"):
        pass
    elif len(argv) != 2:
        raise RedisError("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
    srv = c.server
    srv.lua_eval = None
    eval_engine(srv)
    return OK


@command("script|kill", propagate=False)
def script_kill_cmd(c, argv):
    return script_kill(c, True)


@command("script|debug")
def script_debug(c, argv):
    t = c.transport
    if t is not None and t.get_write_buffer_size():
        raise RedisError("ERR SCRIPT DEBUG must be called outside a pipeline")
    mode = argv[2].lower()
    if mode == b"no":
        c.lua_debug = None
    elif mode == b"yes":
        c.lua_debug = "fork"
    elif mode == b"sync":
        c.lua_debug = "sync"
    else:
        raise RedisError("ERR Use SCRIPT DEBUG YES/SYNC/NO")
    return OK


@command("script|help")
def script_help(c, argv):
    return _help("SCRIPT", [
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed.",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
    ])


# -- functions ----------------------------------------------------------------------------------

def _fcall(c, argv, ro):
    srv = c.server
    reg = srv.functions
    if srv.monitors:
        srv.feed_monitors(c, argv)
    f = reg.functions.get(argv[1].lower())
    if f is None:
        raise RedisError("ERR Function not found")
    numkeys = _numkeys(c, argv, _BAD_NUMKEYS)
    readonly, allow_oom = prepare(c, f.flags, False, ro)
    ctx = lua_mod.RunCtx(c, f.name, False, readonly, allow_oom, argv)
    if srv.cluster is not None:
        _cluster_ctx(ctx, "allow-cross-slot-keys" in f.flags, argv, numkeys)
    r = reg.engine.run(ctx, f.fn, argv[3:3 + numkeys], argv[3 + numkeys:], c.resp)
    return _failed(argv, r)


def fcall_cmd(c, argv):
    return _fcall(c, argv, False)


def fcall_ro_cmd(c, argv):
    return _fcall(c, argv, True)


# EVALSHA's and FCALL's commands: the compiled twins' procs
# (scripting/_evalcmds.pyx's evalsha_cmd ... fcall_ro_cmd: the common case in
# C, no Python frame in between) where built, the four above otherwise.
_PROCS = (evalsha_cmd, evalsha_ro_cmd, fcall_cmd, fcall_ro_cmd)
_evalcmds = compiled.load("scripting._evalcmds")
if _evalcmds is not None:
    _evalcmds.eval_setup(_eval, _fcall, eval_engine, _numkeys, prepare, _failed, NOSCRIPT, _BAD_NUMKEYS,
                         script_ran)
    _PROCS = (_evalcmds.evalsha_cmd, _evalcmds.evalsha_ro_cmd, _evalcmds.fcall_cmd, _evalcmds.fcall_ro_cmd)
command("evalsha", propagate=False)(_PROCS[0])
command("evalsha_ro", flags=("not_tracked",), propagate=False)(_PROCS[1])
command("fcall", propagate=False)(_PROCS[2])
command("fcall_ro", flags=("not_tracked",), propagate=False)(_PROCS[3])


@command("function|load")
def function_load(c, argv):
    replace = False
    i = 2
    n = len(argv)
    while i < n - 1:
        a = argv[i]
        i += 1
        if a.lower() == b"replace":
            replace = True
            continue
        raise RedisError(b"ERR Unknown option given: " + a)
    if i >= n:
        raise RedisError("ERR Function code is missing")
    name = c.server.functions.create(argv[i], replace)
    c.server.dirty += 1
    return bulk(name)


@command("function|delete")
def function_delete(c, argv):
    reg = c.server.functions
    lib = reg.libraries.get(argv[2])
    if lib is None:
        raise RedisError("ERR Library not found")
    reg._unlink(lib)
    c.server.dirty += 1
    return OK


def _subcommand_syntax(argv, container):
    return RedisError("ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP." % (
        argv[1][:128].decode("utf-8", "replace"), container))


@command("function|flush")
def function_flush(c, argv):
    if len(argv) > 3:
        raise _subcommand_syntax(argv, "FUNCTION")
    if len(argv) == 3 and argv[2].lower() not in (b"sync", b"async"):
        raise RedisError("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
    srv = c.server
    lazy = argv[2].lower() == b"async" if len(argv) == 3 else srv.config["lazyfree-lazy-user-flush"]
    big = len(srv.functions.functions) > LAZYFREE_THRESHOLD
    n = srv.functions.flush()
    if lazy and big:
        # freeFunctionsAsync: counted in lazyfreed_objects (freed at once here)
        srv.lazyfree.count_freed(n)
    srv.dirty += 1
    return OK


@command("function|kill", propagate=False)
def function_kill(c, argv):
    return script_kill(c, False)


@command("function|stats", propagate=False)
def function_stats(c, argv):
    srv = c.server
    ctx = srv.running_script()
    if ctx is not None and ctx.eval_mode:
        raise RedisError(lua_mod.BUSY_EVAL)
    reg = srv.functions
    resp = c.resp
    out = [map_header(resp, 2), bulk(b"running_script")]
    if ctx is None:
        out.append(c.null)
    else:
        import time as _time
        out.append(map_header(resp, 3))
        out.append(bulk(b"name"))
        out.append(bulk(ctx.name))
        out.append(bulk(b"command"))
        out.append(b"*%d\r\n" % len(ctx.argv))
        out.extend(bulk(a) for a in ctx.argv)
        out.append(bulk(b"duration_ms"))
        out.append(integer(int((_time.monotonic() - ctx.start) * 1000)))
    out.append(bulk(b"engines"))
    out.append(map_header(resp, 1))
    out.append(bulk(b"LUA"))
    out.append(map_header(resp, 2))
    out.append(bulk(b"libraries_count"))
    out.append(integer(len(reg.libraries)))
    out.append(bulk(b"functions_count"))
    out.append(integer(len(reg.functions)))
    return b"".join(out)


@command("function|list", propagate=False)
def function_list(c, argv):
    with_code = False
    pattern = None
    i = 2
    n = len(argv)
    while i < n:
        a = argv[i]
        if not with_code and a.lower() == b"withcode":
            with_code = True
            i += 1
            continue
        if pattern is None and a.lower() == b"libraryname":
            if i >= n - 1:
                raise RedisError("ERR library name argument was not given")
            pattern = argv[i + 1]
            i += 2
            continue
        raise RedisError(b"ERR Unknown argument " + a)
    reg = c.server.functions
    resp = c.resp
    libs = [lib for lib in reg.libraries.values()
            if pattern is None or stringmatch(pattern, lib.name, True)]
    out = [b"*%d\r\n" % len(libs)]
    null = NULL3 if resp >= 3 else NULL_BULK
    for lib in libs:
        out.append(map_header(resp, 4 if with_code else 3))
        out.append(bulk(b"library_name"))
        out.append(bulk(lib.name))
        out.append(bulk(b"engine"))
        out.append(bulk(lib.engine))
        out.append(bulk(b"functions"))
        out.append(b"*%d\r\n" % len(lib.functions))
        for f in lib.functions.values():
            out.append(map_header(resp, 3))
            out.append(bulk(b"name"))
            out.append(bulk(f.name))
            out.append(bulk(b"description"))
            out.append(bulk(f.desc) if f.desc is not None else null)
            out.append(bulk(b"flags"))
            fl = [x for x in SCRIPT_FLAGS if x in f.flags]
            out.append(set_header(resp, len(fl)))
            out.extend(simple(x.encode()) for x in fl)
        if with_code:
            out.append(bulk(b"library_code"))
            out.append(bulk(lib.code))
    return b"".join(out)


def dump_functions(srv) -> bytes:
    """FUNCTION DUMP's payload (Redis's format, built by persistence.rdb)."""
    return functions_payload([lib.code for lib in srv.functions.libraries.values()])


@command("function|dump", propagate=False)
def function_dump(c, argv):
    return bulk(dump_functions(c.server))


@command("function|restore")
def function_restore(c, argv):
    if len(argv) > 4:
        raise _subcommand_syntax(argv, "FUNCTION")
    policy = b"append"
    if len(argv) == 4:
        policy = argv[3].lower()
        if policy not in (b"append", b"replace", b"flush"):
            raise RedisError("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
    data = argv[2]
    if not verify_payload(data, c.server.skip_checksum_validation):
        raise RedisError("ERR DUMP payload version or checksum are wrong")
    try:
        codes = load_functions_payload(data)
    except NotAFunction:
        raise RedisError("ERR given type is not a function")
    except RdbError:
        raise RedisError("ERR failed loading the given functions payload")
    srv = c.server
    reg = srv.functions
    # Build the new libraries in a scratch registry sharing the engine.
    scratch = Functions.__new__(Functions)
    scratch.server = srv
    scratch.engine = reg.engine
    scratch.libraries = {}
    scratch.functions = {}
    for code in codes:
        try:
            scratch.create(code, False, timeout=0)
        except RedisError as e:
            raise RedisError(e.msg)
    if policy == b"flush":
        reg.libraries = scratch.libraries
        reg.functions = scratch.functions
    else:
        old_libs = dict(reg.libraries)
        old_funcs = dict(reg.functions)
        for name, lib in scratch.libraries.items():
            old = reg.libraries.get(name)
            if old is not None:
                if policy != b"replace":
                    raise RedisError(b"ERR Library " + name + b" already exists")
                reg._unlink(old)
        for fname in scratch.functions:
            if fname in reg.functions:
                reg.libraries = old_libs
                reg.functions = old_funcs
                raise RedisError(b"ERR Function " + fname + b" already exists")
        for lib in scratch.libraries.values():
            reg._link(lib)
    srv.dirty += 1
    return OK


@command("function|help", propagate=False)
def function_help(c, argv):
    return _help("FUNCTION", [
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored using "
        "FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a restore "
        "policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace "
        "the old",
        "      libraries with the new libraries (notice that even on this option there is a chance of "
        "failure",
        "      in case of functions name collision with another library).",
    ])
