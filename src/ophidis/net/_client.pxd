# What the script bridge (scripting/_bridge.pyx) reads of net/_client.pyx:
# client.py's switches, kept equal to its globals by sync().
cdef bint _server_slow
cdef double _slow_check
cdef bint _latency_tracking
cdef list _ready
cdef object _propagator
