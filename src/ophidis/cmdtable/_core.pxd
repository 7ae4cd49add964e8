# The C fields of a command of the command table (the one declaration of
# the field list: the pure twin, _CommandCore, takes its slots from here).
cdef class CommandCore:
    cdef public object proc
    cdef public int fastpath      # 0: general path; 1: direct; 2: direct, switches re-read after
    cdef public Py_ssize_t amin, amax
    cdef public long long calls
    cdef public double usec
    cdef public list hist         # latency histogram: hist[k] = calls taking <= 1.024us * 2^k
    cdef public Py_ssize_t cluster_key
    cdef public int cbody         # a compiled body (commands/_bodies.pyx's BODIES), 0: none
    # what the script bridge reads of a command run by redis.call
    cdef public Py_ssize_t arity
    cdef public bint write, may_replicate, noscript, denyoom, blocking
    cdef public dict subcommands


# The command table's generation (table_changed bumps it whenever
# cmdtable/registry.py changes TABLE): what the request loop checks its
# cached lookup of a command name against.
cdef unsigned long long _table_gen
