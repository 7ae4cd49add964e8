# The C fields of server.Server (the one declaration of the field list:
# server/__init__.py's pure twin takes its slots from this file).
cdef class ServerCore:
    cdef public object config, maxmemory, min_replicas, monitors, dirty, lastbgsave_ok, is_replica
    cdef public object lua_eval, lua_scripts, functions, cluster, script_busy
    # the normal class's output limit (0: none), read for every client read
    cdef public object obuf_normal_limit
