# cython: language_level=3, boundscheck=False, wraparound=False
"""RESP encoding in C: the compiled twin of protocol/resp.py's encoders of
arrays of bulk strings (bulk_items, encode_bytes_argv); _resp.pxd has the
inline length writers the command bodies share.  fpconv and d2string are
dtoa.py's, in C (ophidis/_dtoa.pxd)."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.string cimport memcpy

from ophidis.protocol._resp cimport _ndigits, _put_len
from ophidis._dtoa cimport _dtoa_d2string, _dtoa_fpconv


def fpconv(double d):
    cdef char buf[40]
    return PyBytes_FromStringAndSize(buf, _dtoa_fpconv(d, buf))


def d2string(double d):
    cdef char buf[40]
    return PyBytes_FromStringAndSize(buf, _dtoa_d2string(d, buf))


def bulk_items(items):
    """commands.lists.bulk_items compiled: the RESP array of bulk strings
    of a sequence of bytes (or other buffers), written into one bytes object."""
    cdef list parts = items if type(items) is list else list(items)
    cdef Py_ssize_t n = len(parts), i, ln, total
    cdef char *p
    for i in range(n):
        if not PyBytes_Check(parts[i]):
            parts = [x if PyBytes_Check(x) else bytes(x) for x in parts]
            break
    total = 3 + _ndigits(n)
    for i in range(n):
        ln = PyBytes_GET_SIZE(<bytes>parts[i])
        total += ln + 5 + _ndigits(ln)
    out = PyBytes_FromStringAndSize(NULL, total)
    p = _put_len(PyBytes_AS_STRING(out), 42, n)
    for i in range(n):
        x = <bytes>parts[i]
        ln = PyBytes_GET_SIZE(x)
        p = _put_len(p, 36, ln)
        memcpy(p, PyBytes_AS_STRING(x), ln)
        p[ln] = 13
        p[ln + 1] = 10
        p += ln + 2
    return out


def encode_bytes_argv(list argv):
    """protocol.resp.encode_argv for a list of bytes objects (None when an
    element is anything else: the Python encoder converts those)."""
    for x in argv:
        if not PyBytes_Check(x):
            return None
    return bulk_items(argv)

