# What the request loop (net/_client.pyx) uses of commands/_bodies.pyx:
# the bodies' view of the client (_Ctx: loaded by _load before a run of
# bodies, written back by _flush before any Python code runs; _reload:
# _load keeping the configuration's fields of x's last _load) and _body,
# which runs the body of a command (CommandCore.cbody).
from ophidis.net._core cimport ClientCore
from ophidis.server._core cimport ServerCore


cdef class _Ctx:
    cdef object db, d, ex, wk, bk, last_cmd
    cdef ClientCore client
    cdef ServerCore srv
    cdef long long flags, dirty, hits, misses
    cdef int resp
    cdef bint lazy, valid


cdef int _load(_Ctx x, ClientCore client) except -1
cdef int _reload(_Ctx x, ClientCore client) except -1
cdef int _flush(_Ctx x) except -1
cdef object _body(int code, _Ctx x, list req)
