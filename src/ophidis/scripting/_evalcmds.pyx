# cython: language_level=3, boundscheck=False, wraparound=False
"""EVALSHA's, EVALSHA_RO's, FCALL's and FCALL_RO's command procs in C: the
compiled twins of commands/scripting.py's evalsha_cmd ... fcall_ro_cmd
(its _evalsha and _fcall stay the definition), calling the script run of
scripting/_bridge.pyx directly for the common case.
tests/test_speedups_scripting.py runs the same scripts through both."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.list cimport PyList_GetSlice
from cpython.ref cimport Py_REFCNT
from libc.string cimport memcmp

from ophidis.net._core cimport ClientCore
from ophidis.server._core cimport ServerCore
from ophidis.scripting._bridge cimport EngineCore, FunctionCore, RunCtx, ScriptCore, _ctx_init, _script_run


# EVALSHA and FCALL (commands/scripting.py's _evalsha and _fcall, the
# definitions): the same steps for the common case, calling script_run
# directly; with MONITOR, a debugger or a cluster, the Python ones.

cdef object _ev_eval = None         # commands.scripting._eval
cdef object _ev_fcall = None        # commands.scripting._fcall (the Python one)
cdef object _ev_engine = None       # commands.scripting.eval_engine
cdef object _ev_numkeys = None      # commands.scripting._numkeys
cdef object _ev_prepare = None      # commands.scripting.prepare
cdef object _ev_failed = None       # commands.scripting._failed
cdef object _ev_noscript = None     # errors.NOSCRIPT
cdef object _ev_bad_numkeys = None  # commands.scripting._BAD_NUMKEYS
cdef object _ev_ran = None          # commands.scripting.script_ran


def eval_setup(eval_, fcall, engine, numkeys, prepare, failed, noscript, bad_numkeys, ran):
    global _ev_eval, _ev_fcall, _ev_engine, _ev_numkeys, _ev_prepare, _ev_failed, _ev_noscript, _ev_bad_numkeys
    global _ev_ran
    _ev_ran = ran
    _ev_eval = eval_
    _ev_fcall = fcall
    _ev_engine = engine
    _ev_numkeys = numkeys
    _ev_prepare = prepare
    _ev_failed = failed
    _ev_noscript = noscript
    _ev_bad_numkeys = bad_numkeys


cdef int _ev_prep(c, ServerCore srv, flags, bint compat, bint ro) except -1:
    # prepare's (readonly, allow_oom) as bits 1 and 2: its two fast exits on
    # a master, else prepare
    if not srv.is_replica:
        if compat:
            return 1 if ro else 0
        if not flags and not ro and srv.lastbgsave_ok and not srv.min_replicas and not srv.maxmemory:
            return 0
    p = _ev_prepare(c, flags, compat, ro)
    return (1 if p[0] else 0) | (2 if p[1] else 0)


cdef Py_ssize_t _ev_nkeys(c, list argv, bad) except -1:
    # _numkeys's one-digit case, else _numkeys
    cdef bytes b = <bytes>argv[2]
    cdef Py_ssize_t n
    if len(b) == 1:
        n = (<unsigned char *>PyBytes_AS_STRING(b))[0] - 48
        if 0 <= n <= 9 and n <= len(argv) - 3:
            return n
    return _ev_numkeys(c, argv) if bad is None else _ev_numkeys(c, argv, bad)


def evalsha_cmd(ClientCore c, list argv):
    """EVALSHA's command proc (commands/scripting.py's evalsha_cmd)."""
    return _evalsha(c, argv, False)


def evalsha_ro_cmd(ClientCore c, list argv):
    """EVALSHA_RO's command proc (commands/scripting.py's evalsha_ro_cmd)."""
    return _evalsha(c, argv, True)


def fcall_cmd(ClientCore c, list argv):
    """FCALL's command proc (commands/scripting.py's fcall_cmd)."""
    return _fcall(c, argv, False)


def fcall_ro_cmd(ClientCore c, list argv):
    """FCALL_RO's command proc (commands/scripting.py's fcall_ro_cmd)."""
    return _fcall(c, argv, True)


cdef object _evalsha(ClientCore c, list argv, bint ro):
    cdef ServerCore srv = <ServerCore>c.server
    cdef int p
    if srv.monitors or c.lua_debug is not None or srv.cluster is not None:
        return _ev_eval(c, argv, True, ro)
    cdef ScriptCore s
    sha = argv[1]
    if len(sha) != 40:
        raise _ev_noscript
    eng = srv.lua_eval or _ev_engine(srv)
    cdef Py_ssize_t n = _ev_nkeys(c, argv, None)
    cdef dict scripts = srv.lua_scripts
    so = scripts.get(_ev_same(sha, _ev_key))     # the keys are lower case (and so, mostly, is the sha sent)
    if so is None:
        so = scripts.get(sha.lower())
        if so is None:
            raise _ev_noscript
    s = <ScriptCore>so              # (lua_scripts holds Script objects)
    global _ev_key
    _ev_key = s.sha                 # (lua_scripts' key: create_script stores a script under its sha)
    p = _ev_prep(c, srv, s.flags, s.compat, ro)
    ctx = _ctx_init(_ev_take(), c, s.sha, True, p & 1, p & 2, argv)
    r = _script_run(<EngineCore>eng, ctx, s.fn, PyList_GetSlice(argv, 3, 3 + n), argv, 3 + n, c.resp)
    _ev_give(ctx)
    if s.lru is not None:           # (a script EVAL made: the most recently used now)
        _ev_ran(s)
    if _ev_is_error(r):
        return _ev_failed(argv, r)
    return r


cdef object _fcall(ClientCore c, list argv, bint ro):
    cdef ServerCore srv = <ServerCore>c.server
    cdef int p
    if srv.monitors or srv.cluster is not None:
        return _ev_fcall(c, argv, ro)
    reg = srv.functions
    cdef dict fns = reg.functions
    cdef FunctionCore f
    global _fc_key
    name = _ev_same(argv[1], _fc_key)
    fo = fns.get(name)              # the names are kept in lower case
    if fo is None:
        name = argv[1].lower()
        fo = fns.get(name)
        if fo is None:
            return _ev_fcall(c, argv, ro)
    f = <FunctionCore>fo            # (the registry holds Function objects)
    _fc_key = f.key                 # (its key in the registry, for the next call)
    cdef Py_ssize_t n = _ev_nkeys(c, argv, _ev_bad_numkeys)
    p = _ev_prep(c, srv, f.flags, False, ro)
    ctx = _ctx_init(_ev_take(), c, f.name, False, p & 1, p & 2, argv)
    eng = reg._engine               # (the engine property makes it where it is missing)
    if eng is None:
        eng = reg.engine
    r = _script_run(<EngineCore?>eng, ctx, f.fn, PyList_GetSlice(argv, 3, 3 + n), argv, 3 + n, c.resp)
    _ev_give(ctx)
    if _ev_is_error(r):
        return _ev_failed(argv, r)
    return r


cdef object _ev_key = None      # the sha (lua_scripts' key object) EVALSHA found last
cdef object _fc_key = None      # the name (the registry's key object) FCALL found last


cdef inline object _ev_same(b, k):
    # k where both are bytes and equal (k: a dict's own key object, its
    # lookup then stops at the identity), else b
    if (type(b) is bytes and type(k) is bytes and PyBytes_GET_SIZE(<bytes>k) == PyBytes_GET_SIZE(<bytes>b)
            and memcmp(PyBytes_AS_STRING(<bytes>k), PyBytes_AS_STRING(<bytes>b), PyBytes_GET_SIZE(<bytes>b)) == 0):
        return k
    return b


cdef RunCtx _ev_spare = None   # a RunCtx nothing holds any more, for the next EVALSHA/FCALL


cdef inline RunCtx _ev_take():
    global _ev_spare
    ctx = _ev_spare
    if ctx is None:
        return RunCtx.__new__(RunCtx)
    _ev_spare = None
    return ctx


cdef inline int _ev_give(RunCtx ctx) except -1:
    # ctx back as the spare where the run kept no reference to it (its
    # references dropped: the caller, its name and its argv)
    global _ev_spare
    if Py_REFCNT(ctx) == 1:
        ctx.caller = ctx.name = ctx.argv = None
        _ev_spare = ctx
    return 0


cdef inline bint _ev_is_error(r):
    # (<bytes>r)[:1] == b"-"
    return PyBytes_GET_SIZE(<bytes>r) > 0 and PyBytes_AS_STRING(<bytes>r)[0] == 45
