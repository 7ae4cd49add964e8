# cython: language_level=3
"""The C fields of a client (net/_core.pxd declares them): what the request
loop (net/_client.pyx), the command bodies and the script bridge read of a
client.  net.client.Client derives from ClientCore when the compiled layer
is built, from a class with the same slots otherwise."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH


cdef class ClientCore:
    """The fields of net.client.Client that the per-read path and the
    request loop read, as C fields (declared in _core.pxd)."""
