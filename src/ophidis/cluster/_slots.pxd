# What the request loop (net/_client.pyx) uses of cluster/_slots.pyx:
# cluster mode's switch and the map of the slots served here
# (sync_cluster), and the fast path's check of a command's key.
from ophidis.cmdtable._core cimport CommandCore

cdef bint _cluster
cdef object _owned


cdef bint _cluster_local(CommandCore cmd, list req) except -1
