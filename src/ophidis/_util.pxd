# C helpers shared by the compiled modules (inline: nothing to import).
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec


cdef extern from *:
    int __builtin_clzll(unsigned long long x) nogil


cdef inline double _now() noexcept nogil:
    # time.perf_counter() is CLOCK_MONOTONIC on Linux: the loop's times and
    # the t0 client.py passes in come from the same clock.
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <double>ts.tv_sec + <double>ts.tv_nsec * 1e-9


cdef inline bint _all_bytes(list req):
    # hiredis gives ints, lists, None ... for non-bulk elements of a
    # request; such requests are parsed again by Redis's rules.
    cdef Py_ssize_t i
    for i in range(len(req)):
        if type(req[i]) is not bytes:
            return False
    return True
