# cython: language_level=3, boundscheck=False, wraparound=False
"""redis.call's bridge and the script run in C: the compiled twin of
scripting/engine.py's script_call/reply_value/LuaEngine.run (Lua C
functions registered through lupa's Lua state where its C API is there);
EVALSHA/FCALL's command procs that call the run are scripting/_evalcmds.pyx.
tests/test_speedups_scripting.py runs the same scripts through both."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem, PyDict_GetItemWithError, PyDict_SetItem
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_GetSlice, PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_AsLongLong, PyLong_FromLongLong
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_REFCNT
from libc.stdio cimport snprintf
from libc.string cimport memchr, memcmp, memcpy

from ophidis._dtoa cimport _dtoa_d2string, _dtoa_fpconv
from ophidis._util cimport _all_bytes, _hist_add, _now
from ophidis.protocol._resp cimport _digits
from ophidis.cmdtable._core cimport CommandCore
from ophidis.commands._bodies cimport _Ctx, _body, _flush, _load, _reload
from ophidis.net._client cimport _latency_tracking, _propagator, _server_slow, _slow_check
from ophidis.net._core cimport ClientCore
from ophidis.server._core cimport ServerCore
from ophidis.keyspace._core cimport StatsCore

from posix.time cimport clock_gettime, timespec, CLOCK_REALTIME

from ..cmdtable.registry import TABLE
from ..errors import OOM, RedisError
from ..keyspace import db as _db_mod
from .bridge import reply_value, resp_int, script_call

# ---------------------------------------------------------------------------------------
# Scripting: redis.call's bridge (scripting/engine.py's script_call is the pure twin;
# tests/test_speedups_scripting.py runs the same scripts through both).
# ---------------------------------------------------------------------------------------

cdef class EngineCore:
    """The fields of scripting.engine.LuaEngine the compiled run reads and
    writes, as C fields (LuaEngine derives from this class when the module
    is built)."""


cdef class ScriptCore:
    """The fields of commands.scripting.Script, as C fields (Script derives
    from this class when the module is built)."""


cdef class FunctionCore:
    """The fields of commands.scripting.Function, as C fields (Function
    derives from this class when the module is built)."""


cdef class RunCtx:
    """scripting.engine.RunCtx with C fields (the same fields and
    constructor; engine.RunCtx is this class when the module is built)."""

    def __init__(self, caller, name, eval_mode, readonly, allow_oom, argv):
        _ctx_init(self, caller, name, eval_mode, readonly, allow_oom, argv)


cdef RunCtx _ctx_init(RunCtx self, caller, name, bint eval_mode, bint readonly, bint allow_oom, argv):
    self.caller = caller
    self.name = name
    self.start = _now()     # time.monotonic's clock (CLOCK_MONOTONIC)
    self.last_poll = 0.0
    self.eval_mode = eval_mode
    self.readonly = readonly
    self.allow_oom = allow_oom
    self.write_dirty = self.oom_at_start = self.killed = self.timedout = False
    self.repl_flags = 3
    self.argv = argv
    self.threshold = 1e9
    self.cross_slot = True
    self.slot = -1
    return self


cdef dict _s_table = TABLE
cdef object _s_pure = script_call
cdef object _s_pure_reply = reply_value
cdef bytes _s_oom = OOM.msg
cdef dict _s_db_vars = vars(_db_mod)    # keyspace.db's globals (its _time: the script's frozen clock)
if "_time" not in _s_db_vars:
    raise ImportError("scripting._bridge: keyspace.db has no _time")
cdef object _s_clock = _s_db_vars["_time"]     # the clock itself (time.time), while no unit is frozen
cdef object _s_resp_int = resp_int
cdef StatsCore _s_stats = _db_mod.stats     # the one Stats (commands/_bodies.pyx holds it too)
cdef _Ctx _s_x = None       # the bodies' context _s_call loads for each redis.call (one object, reused)
cdef bint _s_x_fresh = False    # _s_x's configuration fields (notify flags, lazy free) were loaded
                                # in this run, and no Python code ran since (_s_freeze)


cdef object _s_reply(eng, bytes r):
    # engine.reply_value, compiled
    cdef const char *p = PyBytes_AS_STRING(r)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(r)
    cdef const char *nl
    cdef char b0 = p[0] if n else 0
    if b0 == 58:        # ':'
        return 0, int(r[1:n - 2])
    if b0 == 36:        # '$'
        if n > 1 and p[1] == 45:
            return 0, False
        nl = <const char *>memchr(p, 10, n)
        if nl != NULL:
            return 0, PyBytes_FromStringAndSize(nl + 1, n - 2 - (nl + 1 - p))
    elif b0 == 43:      # '+'
        return 2, PyBytes_FromStringAndSize(p + 1, n - 3)
    return _s_pure_reply(eng, r)    # errors, aggregates, RESP3 types


cdef class ScriptBridge:
    """redis.call (raise_ true) or redis.pcall bound to its engine:
    LuaEngine._redis_call / _redis_pcall compiled.  lua_functions makes it
    the upvalue of a Lua C function (_lc_call: no lupa conversion); where
    the Lua C API cannot be had, lupa calls the bridge itself (__call__)."""
    cdef object eng
    cdef bint raise_
    cdef object pending     # a reply only Python holds as a Lua value (take)
    cdef object link        # the LuaLink whose C function calls this bridge

    def __init__(self, eng, bint raise_):
        self.eng = eng
        self.raise_ = raise_

    def take(self):
        v = self.pending
        self.pending = None
        return v

    def __call__(self, *args):
        eng = self.eng
        r = _script_call(eng, list(args), False)
        k = (<tuple>r)[0]
        if k == 0:
            return (<tuple>r)[1]
        if k == 2 and (<tuple>r)[1] == b"OK":
            pool = <list>eng._ok_pool
            if pool:
                return pool.pop()
        return eng._call_failed(r, self.raise_)


cdef object _script_call(eng, list argv, bint raw):
    """engine.script_call compiled: the same checks and replies; while the
    fast path's _SERVER_SLOW is off (no stale replica link, no MISCONF, no
    min-replicas, not a replica), the script's client's user is unrestricted,
    the server is not a cluster node and no debugger runs, the checks of
    LuaEngine._run_call that cannot apply are skipped and the call and its
    reply conversion run here.  argv: the arguments as Lua gave them.
    raw: the command's RESP reply (bytes) is returned as it is, not as
    (4, reply)."""
    cdef EngineCore e = <EngineCore?>eng
    cdef ServerCore srv
    c = e.ctx
    if c is None or type(c) is not RunCtx or e.ldb is not None:
        _s_freeze()
        return _s_pure(eng, argv)
    srv = e.server
    sc = e.client
    return _s_run_call(eng, <RunCtx>c, srv, sc, srv.cluster is None and sc.user.unrestricted, argv, raw)


cdef object _s_run_call(eng, RunCtx ctx, ServerCore srv, ClientCore sc, bint plain, list argv, bint raw):
    # _script_call's steps once the run's context is known (plain: not a
    # cluster node, an unrestricted user)
    cdef Py_ssize_t n, a
    cdef CommandCore cc
    cdef bint write
    cdef PyObject *pc
    if not argv or not _all_bytes(argv):
        _s_freeze()
        return _s_pure(eng, argv)
    if ctx.timedout or _now() - ctx.start > ctx.threshold:
        _s_freeze()
        return _s_pure(eng, argv)
    name = <bytes>argv[0]
    pc = PyDict_GetItemWithError(_s_table, name)
    if pc == NULL:
        pc = PyDict_GetItemWithError(_s_table, name.lower())
    cmd = <object>pc if pc != NULL else None
    n = len(argv)
    if cmd is None:
        _s_freeze()
        return _s_pure(eng, argv)
    cc = <CommandCore>cmd
    if cc.subcommands and n > 1:
        _s_freeze()
        return _s_pure(eng, argv)
    a = cc.arity
    if (a > 0 and a != n) or n < -a:
        _s_freeze()
        return eng._reject(cmd, b"ERR Wrong number of args calling Redis command from script")
    if cc.noscript and not srv.script_disable_deny_script:
        _s_freeze()
        return eng._reject(cmd, b"ERR This Redis command is not allowed from script")
    if _server_slow or not plain:
        _s_freeze()
        return eng._run_call(cmd, argv)
    write = cc.write
    if write or cc.may_replicate:
        if ctx.readonly:
            _s_freeze()
            return eng._reject(cmd, b"ERR Write commands are not allowed from read-only scripts.")
    if (ctx.oom_at_start and cc.denyoom and not ctx.allow_oom and not ctx.write_dirty
            and srv.maxmemory):
        _s_freeze()
        return eng._reject(cmd, _s_oom)
    if write:
        ctx.write_dirty = True
    try:
        if _propagator is not None or cc.blocking or sc.reply_mode:
            _s_freeze()
            r = srv.call(sc, cmd, argv)
        else:
            r = _s_call(srv, sc, cc, argv)
    except Exception as e:
        return 3, ("ERR internal error: %s" % e).encode()
    if r is None:
        return 0, None
    if raw:
        return r        # the RESP reply itself (every other outcome is a (kind, value) tuple)
    return _s_reply(eng, <bytes>r)


cdef object _s_call(srv, ClientCore sc, CommandCore cmd, list argv):
    # Server.call (server/dispatch.py) for a script's command when only its
    # accounting applies: no MONITOR (_server_slow is off), no propagation
    # target, not a replica, CLIENT REPLY on, a command that does not block.
    cdef double t0, dt
    cdef _Ctx x
    global _s_x, _s_x_fresh
    sc.last_cmd = cmd
    t0 = _now()
    try:
        r = None
        if cmd.cbody:
            x = _s_x
            if x is None or x.valid:    # (valid: in use further up the stack)
                x = _s_x = _Ctx.__new__(_Ctx)
                _load(x, sc)
            elif _s_x_fresh:
                _reload(x, sc)
            else:
                _load(x, sc)
                _s_x_fresh = True
            x.last_cmd = cmd
            try:
                r = _body(cmd.cbody, x, argv)
            finally:
                _flush(x)
        if r is None:
            _s_freeze()
            r = cmd.proc(sc, argv)
    except RedisError as e:
        r = sc.error_reply(e, cmd)
    except Exception as e:
        r = sc.internal_error(e, cmd, argv)
    dt = _now() - t0
    blocked = sc.blocked
    if not blocked:
        cmd.calls += 1
    elif sc.bstate is not None:
        sc.bstate.duration = dt
    cmd.usec += dt
    _s_stats.el_nested += dt      # inside its EVAL's time (eventloop_duration_cmd_sum)
    caller = sc.script_caller
    if caller is not None:
        (<ClientCore>(<tuple>caller)[0]).tot_cmds += 1     # CLIENT LIST's tot-cmds: the caller's
    if dt >= _slow_check:
        srv.slow_call(sc, cmd, argv, dt)
    if _latency_tracking and not blocked:
        _hist_add(cmd.hist, dt)
    return r


# ---------------------------------------------------------------------------
# redis.call / redis.pcall as Lua C functions
# ---------------------------------------------------------------------------
# lupa's crossing from Lua into a Python callable (argument tuple, result
# conversion, its error plumbing) costs more than the command itself.  lupa
# links the Lua 5.1 C API into its lua51 module and exports it: the few
# functions below are looked up there at run time (lua_functions), and
# _lc_call, registered as a C closure whose upvalues are its ScriptBridge
# and the bridge's take (lupa-wrapped), reads the arguments, runs
# _script_call and pushes the reply itself.  Being a C function, it keeps
# the caller's frame in "return redis.call(...)" (error positions), as
# lupa's as_function closures do.

cdef extern from "dlfcn.h":
    void *dlopen(const char *filename, int flag) nogil
    void *dlsym(void *handle, const char *symbol) nogil
    int RTLD_NOW
    int RTLD_NOLOAD

from libc.math cimport isinf as _lc_isinf
from libc.stdlib cimport strtoll as _lc_strtoll

ctypedef int (*_lua_CF)(void *L) noexcept nogil
ctypedef int (*_lf_i)(void *L) noexcept nogil
ctypedef int (*_lf_ii)(void *L, int i) noexcept nogil
ctypedef void (*_lf_vi)(void *L, int i) noexcept nogil
ctypedef void (*_lf_vii)(void *L, int a, int b) noexcept nogil
ctypedef void (*_lf_v)(void *L) noexcept nogil
ctypedef const char *(*_lf_tolstring)(void *L, int i, size_t *n) noexcept nogil
ctypedef double (*_lf_tonumber)(void *L, int i) noexcept nogil
ctypedef void *(*_lf_touserdata)(void *L, int i) noexcept nogil
ctypedef void (*_lf_pushlstring)(void *L, const char *s, size_t n) noexcept nogil
ctypedef void (*_lf_pushnumber)(void *L, double d) noexcept nogil
ctypedef void (*_lf_field)(void *L, int i, const char *k) noexcept nogil
ctypedef void (*_lf_pushcclosure)(void *L, _lua_CF f, int n) noexcept nogil
ctypedef void (*_lf_pushlud)(void *L, void *p) noexcept nogil

cdef _lf_i _L_gettop = NULL
cdef _lf_i _L_error = NULL
cdef _lf_ii _L_type = NULL
cdef _lf_ii _L_checkstack = NULL
cdef _lf_vi _L_settop = NULL
cdef _lf_vi _L_pushvalue = NULL
cdef _lf_vi _L_pushboolean = NULL
cdef _lf_vii _L_createtable = NULL
cdef _lf_vii _L_rawseti = NULL
cdef _lf_vii _L_call = NULL
cdef _lf_v _L_pushnil = NULL
cdef _lf_tolstring _L_tolstring = NULL
cdef _lf_tonumber _L_tonumber = NULL
cdef _lf_touserdata _L_touserdata = NULL
cdef _lf_pushlstring _L_pushlstring = NULL
cdef _lf_pushnumber _L_pushnumber = NULL
cdef _lf_field _L_setfield = NULL
cdef _lf_field _L_getfield = NULL
cdef _lf_pushcclosure _L_pushcclosure = NULL
cdef _lf_pushlud _L_pushlightuserdata = NULL
cdef int _lc_state = 0       # 0 not tried, 1 the API is there, -1 it is not

cdef enum:
    # Lua 5.1's pseudo-indices (the globals, a C closure's upvalues), types
    _LUA_REGISTRY = -10000
    _LUA_GLOBALS = -10002
    _LUA_UP1 = -10003
    _LUA_UP2 = -10004
    _LUA_TNUMBER = 3
    _LUA_TSTRING = 4


ctypedef void *(*_lf_newthread)(void *L) noexcept nogil
ctypedef int (*_lf_pcall)(void *L, int nargs, int nres, int errf) noexcept nogil

cdef _lf_vii _L_rawgeti = NULL
cdef _lf_ii _L_ref = NULL
cdef _lf_vii _L_unref = NULL
cdef _lf_ii _L_toboolean = NULL
cdef _lf_newthread _L_newthread = NULL
cdef _lf_pcall _L_pcall = NULL
cdef _lf_vi _L_rawset = NULL


cdef bint _lc_load(bytes path):
    # The functions above from lupa's module (already loaded: RTLD_NOLOAD)
    global _lc_state
    cdef void *h
    cdef void *f
    cdef void **slots[27]
    cdef int i
    if _lc_state:
        return _lc_state > 0
    _lc_state = -1
    h = dlopen(path, RTLD_NOW | RTLD_NOLOAD)
    if h == NULL:
        return False
    names = [b"lua_gettop", b"lua_error", b"lua_type", b"lua_checkstack", b"lua_settop", b"lua_pushvalue",
             b"lua_pushboolean", b"lua_createtable", b"lua_rawseti", b"lua_call", b"lua_pushnil",
             b"lua_tolstring", b"lua_tonumber", b"lua_touserdata", b"lua_pushlstring", b"lua_pushnumber",
             b"lua_setfield", b"lua_getfield", b"lua_pushcclosure", b"lua_pushlightuserdata",
             b"lua_rawgeti", b"luaL_ref", b"luaL_unref", b"lua_toboolean", b"lua_newthread", b"lua_pcall",
             b"lua_rawset"]
    slots[0] = <void **>&_L_gettop
    slots[1] = <void **>&_L_error
    slots[2] = <void **>&_L_type
    slots[3] = <void **>&_L_checkstack
    slots[4] = <void **>&_L_settop
    slots[5] = <void **>&_L_pushvalue
    slots[6] = <void **>&_L_pushboolean
    slots[7] = <void **>&_L_createtable
    slots[8] = <void **>&_L_rawseti
    slots[9] = <void **>&_L_call
    slots[10] = <void **>&_L_pushnil
    slots[11] = <void **>&_L_tolstring
    slots[12] = <void **>&_L_tonumber
    slots[13] = <void **>&_L_touserdata
    slots[14] = <void **>&_L_pushlstring
    slots[15] = <void **>&_L_pushnumber
    slots[16] = <void **>&_L_setfield
    slots[17] = <void **>&_L_getfield
    slots[18] = <void **>&_L_pushcclosure
    slots[19] = <void **>&_L_pushlightuserdata
    slots[20] = <void **>&_L_rawgeti
    slots[21] = <void **>&_L_ref
    slots[22] = <void **>&_L_unref
    slots[23] = <void **>&_L_toboolean
    slots[24] = <void **>&_L_newthread
    slots[25] = <void **>&_L_pcall
    slots[26] = <void **>&_L_rawset
    for i in range(27):
        f = dlsym(h, <bytes>names[i])
        if f == NULL:
            for i in range(27):
                slots[i][0] = NULL
            return False
        slots[i][0] = f
    _lc_state = 1
    return True


_LC_THREAD = (b"local co = coroutine.create(function() coroutine.yield(tostring(coroutine.running())) end) "
              b"local _, s = coroutine.resume(co) return co, s")


cdef class LuaLink:
    """The compiled layer's direct use of a LuaRuntime: redis.call and
    redis.pcall as Lua C functions (call, pcall) and, once bound to the
    sandbox's run_t and encode_reply, a script run without lupa's call
    (_lc_exec).  T is a thread of the runtime anchored in its registry: it
    shares the globals, and C code can run functions on it."""
    cdef void *T
    cdef object lua
    cdef readonly object call
    cdef readonly object pcall
    cdef int run_ref             # the sandbox's run_prep_t (0: not bound)
    cdef int g_ref               # its globals table (KEYS and ARGV of an EVAL) ...
    cdef int keys_ref, argv_ref  # ... and the strings "KEYS" and "ARGV"
    cdef bint armed              # the thread's count hook is set and no kill is pending
                                 # (else _lc_exec calls run_prep_t; disarm)
    cdef int errh_ref            # its err_handler
    cdef int einfo_ref           # its error_info
    cdef int enc_ref             # its encode_reply
    cdef bint eval_mode
    cdef dict refs              # id(Lua function) -> (the function, its registry ref)
    cdef object last_fn         # the function fn_ref was last asked for (in refs) ...
    cdef int last_ref           # ... and its ref
    # while script_run runs a script through the link: what _script_call
    # would look up on the engine for each redis.call (none of it changes
    # while a script runs)
    cdef object run_ctx
    cdef ServerCore run_srv
    cdef ClientCore run_sc
    cdef bint run_plain
    # the command names redis.call was given last (argv[0] as bytes whose
    # hash is known, the command table's lookup then finds it by identity),
    # by the address of the Lua string; replaced in turn (name_next)
    cdef const char *name_at[8]
    cdef list names
    cdef int name_next
    cdef object count_error

    def bind(self, prep, globals_, err_handler, error_info, encode, count_error, bint eval_mode):
        """The sandbox's run_prep_t, its globals, err_handler, error_info and
        encode_reply (the steps of its run_t, see _lc_exec),
        engine._count_error, and whether scripts get KEYS and ARGV as
        globals (EVAL) or arguments."""
        self.g_ref = self._ref(globals_)
        self.keys_ref = self._ref(b"KEYS")
        self.argv_ref = self._ref(b"ARGV")
        self.armed = False
        self.run_ref = self._ref(prep)
        self.errh_ref = self._ref(err_handler)
        self.einfo_ref = self._ref(error_info)
        self.enc_ref = self._ref(encode)
        self.count_error = count_error
        self.eval_mode = eval_mode

    def disarm(self):
        """The sandbox's hook raises a kill (its kill_msg is set, its hook
        fires on every line): the next run calls run_prep_t."""
        self.armed = False

    cdef int _ref(self, v) except? -1:
        # a registry reference to a Lua value lupa holds (through a global)
        g = self.lua.globals()
        g[b"__ophidis_v"] = v
        _L_getfield(self.T, _LUA_GLOBALS, b"__ophidis_v")
        g[b"__ophidis_v"] = None
        return _L_ref(self.T, _LUA_REGISTRY)

    cdef int fn_ref(self, fn) except? -1:
        cdef int r
        if fn is self.last_fn:
            return self.last_ref
        e = self.refs.get(id(fn))
        if e is not None:
            return <int>(<tuple>e)[1]
        if len(self.refs) >= 4096:      # scripts come and go (SCRIPT FLUSH, FUNCTION LOAD REPLACE)
            for e in self.refs.values():
                _L_unref(self.T, _LUA_REGISTRY, <int>(<tuple>e)[1])
            self.refs.clear()
            self.last_fn = None
        r = self._ref(fn)
        self.refs[id(fn)] = (fn, r)
        self.last_fn = fn
        self.last_ref = r
        return r


def lua_functions(lua, bytes so_path, call, pcall):
    """A LuaLink for the LuaRuntime lua whose redis.call and redis.pcall
    are the two ScriptBridges, or None where the C API of lupa's module at
    so_path cannot be had.  The lua_State comes from a suspended coroutine
    (it shares the runtime's globals): tostring(thread) is its address."""
    cdef void *L
    cdef LuaLink link
    if not _lc_load(so_path):
        return None
    if type(call) is not ScriptBridge or type(pcall) is not ScriptBridge:
        return None
    co, s = lua.execute(_LC_THREAD)
    if type(s) is not bytes or not (<bytes>s).startswith(b"thread: 0x"):
        return None
    L = <void *><size_t>int((<bytes>s)[10:], 16)
    link = LuaLink.__new__(LuaLink)
    link.lua = lua
    link.refs = {}
    link.names = [b""] * 8
    link.T = _L_newthread(L)
    _L_ref(L, _LUA_REGISTRY)        # anchors the thread (popped)
    g = lua.globals()
    out = []
    for b in (call, pcall):
        g[b"__ophidis_v"] = (<ScriptBridge>b).take
        lua.execute(b"__ophidis_v = python.as_function(__ophidis_v)")
        (<ScriptBridge>b).link = link
        _L_pushlightuserdata(L, <void *>b)
        _L_getfield(L, _LUA_GLOBALS, b"__ophidis_v")
        _L_pushcclosure(L, _lc_call, 2)
        _L_setfield(L, _LUA_GLOBALS, b"__ophidis_v")
        out.append(g[b"__ophidis_v"])
    g[b"__ophidis_v"] = None
    del co
    link.call, link.pcall = out
    return link


cdef int _lc_call(void *L) noexcept nogil:
    cdef int r
    if _L_type(L, _LUA_UP1) != 2:      # not the light userdata lua_functions set (never from scripts)
        return 0
    with gil:
        r = _lc_body(L)
    if r == -1:             # the error table on top: raise it (redis.call)
        return _L_error(L)
    if r == -2:             # a reply only Python holds as a Lua value
        _L_pushvalue(L, _LUA_UP2)
        _L_call(L, 0, 1)
        return 1
    return r


cdef int _lc_body(void *L) noexcept:
    cdef ScriptBridge b = <ScriptBridge>(<object><PyObject *>_L_touserdata(L, _LUA_UP1))
    cdef LuaLink link = <LuaLink>b.link
    cdef int n, i
    try:
        n = _L_gettop(L)
        argv = PyList_New(n)
        for i in range(n):
            a = _lc_name(L, link) if i == 0 else _lc_arg(L, i + 1)
            Py_INCREF(a)
            PyList_SET_ITEM(argv, i, a)
        if link.run_ctx is not None:
            r = _s_run_call(b.eng, <RunCtx>link.run_ctx, link.run_srv, link.run_sc, link.run_plain, argv, True)
        else:
            r = _script_call(b.eng, argv, True)
        return _lc_push(L, b, r)
    except BaseException as e:
        try:
            m = ("ERR internal error: %s" % e).encode()
        except BaseException:
            m = b"ERR internal error"
        _L_createtable(L, 0, 1)
        _L_pushlstring(L, PyBytes_AS_STRING(m), PyBytes_GET_SIZE(m))
        _L_setfield(L, -2, b"err")
        return -1 if b.raise_ else 1


cdef object _lc_name(void *L, LuaLink link):
    # the first argument (the command's name): the bytes of the last call
    # with the same Lua string where its text is the same
    cdef size_t ln
    cdef const char *p
    cdef Py_ssize_t k
    if _L_type(L, 1) != _LUA_TSTRING:
        return _lc_arg(L, 1)
    p = _L_tolstring(L, 1, &ln)
    for k in range(8):
        if link.name_at[k] == p:
            b = <bytes>link.names[k]
            if <size_t>PyBytes_GET_SIZE(b) == ln and memcmp(PyBytes_AS_STRING(b), p, ln) == 0:
                return b
            break
    else:
        k = link.name_next
        link.name_next = (k + 1) & 7
    b = _s_canonical(PyBytes_FromStringAndSize(p, ln))
    link.names[k] = b
    link.name_at[k] = p
    return b


cdef dict _s_canon = {}     # a command's name -> the command table's own key object


cdef bytes _s_canonical(bytes b):
    # b, or the command table's key equal to it (the table's lookup of a
    # key it holds stops at the identity; an equal object is compared)
    k = _s_canon.get(b)
    if k is not None:
        return <bytes>k
    if b in _s_table:
        for k in _s_table:
            if k == b:
                if len(_s_canon) < 4096:
                    _s_canon[b] = k
                return <bytes>k
    hash(b)
    return b


cdef inline bytes _lc_str(void *L, int i):
    # the string at i as bytes
    cdef size_t ln
    cdef const char *p = _L_tolstring(L, i, &ln)
    return PyBytes_FromStringAndSize(p, ln)


cdef object _lc_arg(void *L, int i):
    # An argument as lupa gives it and bridge.lua_argv makes it: a string's
    # bytes; a number as dtoa.lua_number's text (Redis 7.2+).  Anything
    # else is None: script_call answers it in its own order of checks.
    cdef double d
    cdef int t = _L_type(L, i)
    cdef char buf[40]
    cdef int k
    if t == _LUA_TSTRING:
        return _lc_str(L, i)
    if t == _LUA_TNUMBER:
        d = _L_tonumber(L, i)
        if d == 0:
            return b"0"
        if d != d:
            k = _dtoa_fpconv(d, buf)
        else:
            k = _dtoa_d2string(d, buf)
        return PyBytes_FromStringAndSize(buf, k)
    return None


cdef int _lc_push(void *L, ScriptBridge b, r) except -3:
    # script_call's (kind, value), or the command's reply (bytes, raw), onto
    # the Lua stack: 1 (a value pushed), -1 (an error table pushed to raise),
    # -2 (b.pending holds the value)
    cdef int base
    cdef const char *p
    cdef const char *end
    if type(r) is bytes:    # a reply in RESP: the common types here, the rest in Python
        base = _L_gettop(L)
        p = PyBytes_AS_STRING(<bytes>r)
        end = p + PyBytes_GET_SIZE(<bytes>r)
        if _lc_resp(L, &p, end, 0) and p == end:
            return 1
        _L_settop(L, base)
        r = _s_reply(b.eng, <bytes>r)
    k = (<tuple>r)[0]
    v = (<tuple>r)[1]
    if k == 0:
        t = type(v)
        if v is None:
            _L_pushnil(L)
        elif t is bytes:
            _L_pushlstring(L, PyBytes_AS_STRING(<bytes>v), PyBytes_GET_SIZE(<bytes>v))
        elif t is bool:
            _L_pushboolean(L, v is True)
        elif t is int or t is float:
            _L_pushnumber(L, <double>v)
        else:
            b.pending = v
            return -2
        return 1
    if k == 2:
        _L_createtable(L, 0, 1)
        _L_pushlstring(L, PyBytes_AS_STRING(<bytes>v), PyBytes_GET_SIZE(<bytes>v))
        _L_setfield(L, -2, b"ok")
        return 1
    eng = b.eng
    if k == 3 and eng.ldb is not None:
        eng._ldb_error(v)
    _L_createtable(L, 0, 2)
    _L_pushlstring(L, PyBytes_AS_STRING(<bytes>v), PyBytes_GET_SIZE(<bytes>v))
    _L_setfield(L, -2, b"err")
    if k == 1:      # an error reply of the command: its stats are counted
        _L_pushboolean(L, 1)
        _L_setfield(L, -2, b"ignore_error_stats_update")
    return -1 if b.raise_ else 1


cdef inline long long _lc_int(const char *p, const char *e) noexcept:
    # the integer at p (up to e, the \r): a sign and up to 18 digits here,
    # anything else as strtoll reads it
    cdef long long n = 0
    cdef bint neg = p < e and p[0] == 45
    cdef const char *q = p + 1 if neg else p
    if q == e or e - q > 18:
        return _lc_strtoll(p, NULL, 10)
    while q < e:
        if not (48 <= q[0] <= 57):
            return _lc_strtoll(p, NULL, 10)
        n = n * 10 + (q[0] - 48)
        q += 1
    return -n if neg else n


cdef bint _lc_resp(void *L, const char **pp, const char *end, int depth) noexcept:
    # One RESP2 reply at pp[0] pushed as engine._parse makes it (bulk, null,
    # integer, status, array of these); False for anything else (the caller
    # resets the stack and asks Python).
    cdef const char *p = pp[0]
    cdef const char *nl
    cdef long long n, i
    cdef char c
    if end - p < 3:
        return False
    nl = <const char *>memchr(p, 10, end - p)
    if nl == NULL or nl - p < 2 or (nl - 1)[0] != 13:
        return False
    c = p[0]
    if c == 36 or c == 42 or c == 58:       # '$' '*' ':'
        n = _lc_int(p + 1, nl - 1)
        if c == 58:
            _L_pushnumber(L, <double>n)
            pp[0] = nl + 1
            return True
        if n < 0:
            _L_pushboolean(L, 0)
            pp[0] = nl + 1
            return True
        if c == 36:
            if end - (nl + 1) < n + 2:
                return False
            _L_pushlstring(L, nl + 1, <size_t>n)
            pp[0] = nl + 1 + n + 2
            return True
        if depth > 32 or n > 0x7fffffff or not _L_checkstack(L, 2):
            return False
        _L_createtable(L, <int>n, 0)
        pp[0] = nl + 1
        for i in range(n):
            if not _lc_resp(L, pp, end, depth + 1):
                return False
            _L_rawseti(L, -2, <int>(i + 1))
        return True
    if c == 43:     # '+'
        _L_createtable(L, 0, 1)
        _L_pushlstring(L, p + 1, <size_t>(nl - 1 - (p + 1)))
        _L_setfield(L, -2, b"ok")
        pp[0] = nl + 1
        return True
    return False


cdef object _lc_exec(LuaLink link, eng, ctx, fn, list keys, list args, Py_ssize_t a0, int caller_resp):
    # The sandbox's run_t(fn, KEYS, ARGV) on the link's thread, step by step
    # (run_prep_t, fn under err_handler, error_info), and its outcome as
    # script_run makes it from lupa's: the reply, or None (nothing run)
    # where an argument is not bytes.  ARGV: args[a0:].
    cdef void *T = link.T
    cdef int i, top, st
    cdef Py_ssize_t j
    cdef size_t ln
    cdef const char *p
    for v in keys:
        if type(v) is not bytes:
            return None
    for j in range(a0, len(args)):
        if type(args[j]) is not bytes:
            return None
    fref = link.fn_ref(fn)
    if not _L_checkstack(T, 8):
        return None
    # the stack: 1 KEYS, 2 ARGV, 3 err_handler, 4 fn (then its result)
    _L_settop(T, 0)
    _lc_strings(T, keys, 0)
    _lc_strings(T, args, a0)
    try:
        # run_prep_t's steps: KEYS and ARGV (EVAL) here while the link is
        # armed (the count hook set, no kill pending), else run_prep_t
        if link.armed:
            if link.eval_mode:
                _L_rawgeti(T, _LUA_REGISTRY, link.g_ref)
                _L_rawgeti(T, _LUA_REGISTRY, link.keys_ref)
                _L_pushvalue(T, 1)
                _L_rawset(T, 3)
                _L_rawgeti(T, _LUA_REGISTRY, link.argv_ref)
                _L_pushvalue(T, 2)
                _L_rawset(T, 3)
                _L_settop(T, 2)
        else:
            _L_rawgeti(T, _LUA_REGISTRY, link.run_ref)
            _L_pushvalue(T, 1)
            _L_pushvalue(T, 2)
            if _L_pcall(T, 2, 0, 0):
                raise RuntimeError(_lc_value(T, -1))
            link.armed = True
        _L_rawgeti(T, _LUA_REGISTRY, link.errh_ref)
        _L_rawgeti(T, _LUA_REGISTRY, fref)
        if link.eval_mode:
            st = _L_pcall(T, 0, 1, 3)
        else:
            _L_pushvalue(T, 1)
            _L_pushvalue(T, 2)
            st = _L_pcall(T, 2, 1, 3)
        if st:      # the error as err_handler made it: (false, msg, source, line, ignore)
            _L_rawgeti(T, _LUA_REGISTRY, link.einfo_ref)
            _L_pushvalue(T, 4)
            if _L_pcall(T, 1, -1, 0):
                raise RuntimeError(_lc_value(T, -1))
            top = _L_gettop(T)
            return eng._run_error(ctx, tuple([_lc_value(T, i) for i in range(5, top + 1)]))
        i = _L_type(T, 4)
        if i == _LUA_TSTRING:
            p = _L_tolstring(T, 4, &ln)
            return _lc_bulk(p, ln)
        if i == _LUA_TNUMBER:
            return _s_resp_int(_lc_value(T, 4))
        # anything else: the sandbox's encode_reply, as LuaEngine._reply
        _L_rawgeti(T, _LUA_REGISTRY, link.enc_ref)
        _L_pushvalue(T, 4)
        _L_pushnumber(T, caller_resp)
        _L_pushnumber(T, (<ClientCore>(<EngineCore>eng).client).resp)
        if _L_pcall(T, 3, 2, 0):
            raise RuntimeError(_lc_value(T, -1))
        out = _lc_value(T, -2)
        if (<bytes>out)[:1] == b"-" and not _L_toboolean(T, -1):
            link.count_error(out)
        return out
    finally:
        _L_settop(T, 0)


cdef int _lc_strings(void *T, list items, Py_ssize_t start) except -1:
    # a Lua array of the bytes in items[start:] (KEYS, ARGV) pushed on T
    cdef Py_ssize_t j, n = len(items)
    cdef bytes v
    _L_createtable(T, <int>(n - start if n > start else 0), 0)
    for j in range(start, n):
        v = <bytes>items[j]
        _L_pushlstring(T, PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v))
        _L_rawseti(T, -2, <int>(j - start + 1))
    return 0


cdef bytes _lc_bulk(const char *p, size_t ln):
    # "$<ln>\r\n<p>\r\n"
    cdef char digits[24]
    cdef Py_ssize_t d = _digits(digits, ln)
    cdef Py_ssize_t k = 24 - d
    cdef bytes out = PyBytes_FromStringAndSize(NULL, k + 3 + ln + 2)
    cdef char *o = PyBytes_AS_STRING(out)
    o[0] = 36
    memcpy(o + 1, digits + d, k)
    o[k + 1] = 13
    o[k + 2] = 10
    memcpy(o + k + 3, p, ln)
    o[k + 3 + ln] = 13
    o[k + 3 + ln + 1] = 10
    return out


cdef object _lc_value(void *T, int i):
    # A string, number, boolean or nil at i as lupa gives it to Python
    cdef double d
    cdef int t = _L_type(T, i)
    if t == _LUA_TSTRING:
        return _lc_str(T, i)
    if t == _LUA_TNUMBER:
        d = _L_tonumber(T, i)
        if -9.2e18 < d < 9.2e18 and d == <double><long long>d:
            return <long long>d
        return d
    if t == 1:
        return _L_toboolean(T, i) != 0
    if t <= 0:
        return None
    return "<%d>" % t


def script_run(EngineCore eng, RunCtx ctx, fn, keys, args, int caller_resp):
    """LuaEngine.run compiled (the same steps; a debugged script and more
    than 64 keys and arguments go to the Python one)."""
    return _script_run(eng, ctx, fn, keys, args, 0, caller_resp)


cdef class _Frozen:
    """The script time snapshot: keyspace.db._time while a script runs."""
    cdef object t

    def __call__(self):
        return self.t


cdef inline double _time_now() noexcept:
    # time.time(), as CPython computes it (CLOCK_REALTIME in nanoseconds / 1e9)
    cdef timespec ts
    cdef long long ns
    clock_gettime(CLOCK_REALTIME, &ts)
    ns = <long long>ts.tv_sec * 1000000000 + ts.tv_nsec
    if ns % 1000000000 == 0:
        return <double>(ns // 1000000000)
    return <double>ns / 1e9


# Keys do not expire while a script runs (Redis's script time snapshot):
# keyspace.db._time is a _Frozen then.  The command bodies read no clock,
# so _script_run only notes the time (_s_freeze_due) and the snapshot is
# installed before the first Python code of the run that may read it
# (_s_freeze: a command's Python function, Server.call, the pure bridge,
# the hook's poll through freeze_clock), and taken out at the run's end.
cdef object _s_cfg = None         # the server's Config, and its values
cdef dict _s_cfg_values = None
cdef _Frozen _s_frozen = None     # the snapshot (one object, reused)
cdef object _s_frozen_prev = None     # keyspace.db._time before it was installed
cdef bint _s_freeze_due = False       # a run's snapshot is not installed yet


cdef inline int _s_freeze() except -1:
    # Python code may run next: the time snapshot installed, _s_x's
    # configuration fields to be read again
    global _s_freeze_due, _s_frozen_prev, _s_x_fresh
    _s_x_fresh = False
    if _s_freeze_due:
        _s_freeze_due = False
        _s_frozen_prev = <object>PyDict_GetItem(_s_db_vars, "_time")
        PyDict_SetItem(_s_db_vars, "_time", _s_frozen)
    return 0


def freeze_clock():
    """The running script's time snapshot installed (LuaEngine._interrupt,
    before the other clients are served)."""
    _s_freeze()


cdef object _script_run(EngineCore eng, RunCtx ctx, fn, keys, args, Py_ssize_t a0, int caller_resp):
    # LuaEngine.run(ctx, fn, keys, args[a0:], caller_resp)
    cdef ClientCore sc, caller
    cdef ServerCore srv
    cdef _Frozen frozen
    global _s_x_fresh
    if a0 and (type(args) is not list or a0 > len(args)):
        raise TypeError("script_run: a0 needs a list")
    if eng.ldb is not None or len(keys) + len(args) - a0 > 64:
        if a0:
            args = PyList_GetSlice(args, a0, len(args))
        _s_x_fresh = False
        try:
            return type(eng).run(eng, ctx, fn, keys, args, caller_resp)    # LuaEngine.run
        finally:
            _s_x_fresh = False
    srv = <ServerCore>eng.server        # (a LuaEngine's, set once)
    sc = <ClientCore>eng.client
    caller = <ClientCore?>ctx.caller
    sc.db = caller.db
    sc.script_caller = (caller, keys)
    sc.resp = 2
    sc.user = caller.user
    global _s_cfg, _s_cfg_values
    cfg = srv.config
    if cfg is not _s_cfg:
        _s_cfg_values = cfg.values      # (Config's dict of values, made once)
        _s_cfg = cfg
    cdef long long th = _s_cfg_values["busy-reply-threshold"]
    ctx.threshold = th / 1000.0 if th > 0 else 1e9
    if srv.maxmemory:
        try:
            ctx.oom_at_start = bool(srv.memory.evict_hook())
        except Exception:
            ctx.oom_at_start = False
    eng.ctx = ctx
    # the time snapshot (above): noted, installed by _s_freeze; a run inside
    # a run (never from a script; kept safe) installs its own at once
    global _s_frozen, _s_frozen_prev, _s_freeze_due
    _s_x_fresh = False
    nested = _s_freeze_due or _s_frozen_prev is not None
    # (a script inside an execution unit, EXEC's, keeps the unit's time)
    cur = <object>PyDict_GetItem(_s_db_vars, "_time")
    if nested:
        prev_time = cur
        frozen = _Frozen.__new__(_Frozen)
        frozen.t = _time_now() if cur is _s_clock else cur()
        PyDict_SetItem(_s_db_vars, "_time", frozen)
    else:
        if _s_frozen is None:
            _s_frozen = _Frozen.__new__(_Frozen)
        _s_frozen.t = _time_now() if cur is _s_clock else cur()
        _s_freeze_due = True
    link = eng._link
    out = None
    try:
        if link is not None and (<LuaLink>link).run_ref and type(keys) is list and type(args) is list:
            lk = <LuaLink>link
            lk.run_ctx = ctx
            lk.run_srv = srv
            lk.run_sc = sc
            lk.run_plain = srv.cluster is None and sc.user.unrestricted
            out = _lc_exec(lk, eng, ctx, fn, keys, args, a0, caller_resp)
        if out is None:
            _s_freeze()
            if a0:
                args = PyList_GetSlice(args, a0, len(args))
            r = eng._run(fn, len(keys), *keys, *args)
    finally:
        if link is not None:
            (<LuaLink>link).run_ctx = (<LuaLink>link).run_srv = (<LuaLink>link).run_sc = None
        _s_x_fresh = False
        if nested:
            PyDict_SetItem(_s_db_vars, "_time", prev_time)
        else:
            _s_freeze_due = False
            if _s_frozen_prev is not None:
                PyDict_SetItem(_s_db_vars, "_time", _s_frozen_prev)
                _s_frozen_prev = None
        eng.ctx = None
        if ctx.timedout:
            srv.script_busy = None
            srv.update_server_slow()
    if out is not None:
        return out
    if r[0]:
        v = r[1]
        if type(v) is bytes:
            return b"$%d\r\n%s\r\n" % (len(<bytes>v), v)
        if type(v) is int or type(v) is float:
            return _s_resp_int(v)
        return eng._reply(v, caller_resp)
    return eng._run_error(ctx, r)
