# cython: language_level=3, boundscheck=False, wraparound=False
"""The ACL check of the request loop's fast path in C: acl/check.py's
fast_allows, compiled (may the fast path run a request for a restricted
user?)."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject
from libc.string cimport memcmp

from ophidis.cmdtable._core cimport CommandCore

from .check import fast_plan as _fast_plan



cdef inline bint _has_prefix(bytes k, tuple prefixes) noexcept:
    cdef Py_ssize_t n = PyBytes_GET_SIZE(k), m
    cdef bytes p
    for p in prefixes:
        m = PyBytes_GET_SIZE(p)
        if m <= n and memcmp(PyBytes_AS_STRING(k), PyBytes_AS_STRING(p), m) == 0:
            return True
    return False


cdef bint _acl_ok(dict fast, client, CommandCore cmd, list req) except -1:
    # acl.check.fast_allows, compiled: may the fast path run req for this
    # restricted user (fast: user.fast, the plans by command)?
    cdef PyObject *got = PyDict_GetItem(fast, cmd)
    cdef Py_ssize_t argc = len(req), first, lastkey, step, limit, last, i
    cdef tuple spec
    cdef bytes k
    cdef bint star
    if got is NULL:
        plan = _fast_plan(client.user, cmd)
        fast[cmd] = plan
    else:
        plan = <object>got
    if plan is False:
        return False
    for spec in <tuple>plan:
        first = spec[0]
        lastkey = spec[1]
        step = spec[2]
        limit = spec[3]
        star = spec[4] is True
        if lastkey >= 0:
            last = first + lastkey
        elif not limit:
            last = argc + lastkey
        else:
            last = first + ((argc - first) // limit + lastkey)
        if last >= argc or last < first or first >= argc:
            return False
        i = first
        while i <= last:
            k = <bytes>req[i]
            if not ((star and PyBytes_GET_SIZE(k)) or k in <frozenset>spec[5] or _has_prefix(k, <tuple>spec[6])):
                return False
            i += step
    return True


def acl_ok(dict fast, client, cmd, list req):
    """The compiled check of the fast path (acl.check.fast_allows)."""
    return _acl_ok(fast, client, <CommandCore>cmd, req)

