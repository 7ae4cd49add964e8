# What the request loop (net/_client.pyx) uses of acl/_check.pyx.
from ophidis.cmdtable._core cimport CommandCore


cdef bint _acl_ok(dict fast, client, CommandCore cmd, list req) except -1
