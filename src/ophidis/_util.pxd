# C helpers shared by the compiled modules (inline: nothing to import).
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_SET_ITEM
from cpython.long cimport PyLong_AsLongLong, PyLong_FromLongLong
from cpython.ref cimport Py_DECREF, Py_INCREF
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


cdef inline int _hist_add(list hist, double dt) except -1:
    # a command's latency histogram (latency-tracking): hist[slot] += 1 for
    # dt seconds, slot the bit length of its microseconds (1/1024 ms units,
    # as Redis's hdr buckets); the counters are ints, replaced in the list
    # without the generic number protocol
    cdef long long us = <long long>(dt * 976562.5)
    cdef int slot = 64 - __builtin_clzll(<unsigned long long>us) if us > 0 else 0
    if slot >= PyList_GET_SIZE(hist) or type(<object>PyList_GET_ITEM(hist, slot)) is not int:
        hist[slot] += 1
        return 0
    old = <object>PyList_GET_ITEM(hist, slot)
    new = PyLong_FromLongLong(PyLong_AsLongLong(old) + 1)
    Py_INCREF(new)
    PyList_SET_ITEM(hist, slot, new)    # (steals new; the list's reference to old is dropped below)
    Py_DECREF(old)
    return 0
