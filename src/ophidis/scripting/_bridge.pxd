# The C fields of the script engine's objects (the one declaration of each
# field list: scripting/engine.py's and commands/scripting.py's pure twins
# take their slots from this file).

cdef class EngineCore:
    cdef public object server, client, ctx, ldb, _link


cdef class ScriptCore:
    cdef public object sha, body, fn, flags, compat


cdef class FunctionCore:
    cdef public object name, lib, fn, desc, flags, key     # key: its key in Functions.functions


cdef class RunCtx:
    cdef public object caller, name, argv, repl_flags
    cdef public double start, last_poll, threshold
    cdef public bint eval_mode, readonly, write_dirty, allow_oom, oom_at_start, killed, timedout, cross_slot
    cdef public Py_ssize_t slot
