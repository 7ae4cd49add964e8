# The C fields of the script engine's objects (the one declaration of each
# field list: scripting/engine.py's and commands/scripting.py's pure twins
# take their slots from this file).

cdef class EngineCore:
    cdef public object server, client, ctx, ldb, _link


cdef class ScriptCore:
    cdef public object sha, body, fn, flags, compat, lru     # lru: the EVAL cache's order (None: SCRIPT LOAD's)


cdef class FunctionCore:
    cdef public object name, lib, fn, desc, flags, key     # key: its key in Functions.functions


cdef class RunCtx:
    cdef public object caller, name, argv, repl_flags
    cdef public double start, last_poll, threshold
    cdef public bint eval_mode, readonly, write_dirty, allow_oom, oom_at_start, killed, timedout, cross_slot
    cdef public Py_ssize_t slot


# the script run's entry points for scripting/_evalcmds.pyx (EVALSHA/FCALL)
cdef RunCtx _ctx_init(RunCtx self, caller, name, bint eval_mode, bint readonly, bint allow_oom, argv)
cdef object _script_run(EngineCore eng, RunCtx ctx, fn, keys, args, Py_ssize_t a0, int caller_resp)
