# cython: language_level=3
"""The C fields of the server (server/_core.pxd declares them): what the
compiled command bodies and the script bridge read of server.Server, which
derives from ServerCore when the compiled layer is built."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH


cdef class ServerCore:
    """The fields of server.Server that the compiled commands and the
    script run read, as C fields (declared in _core.pxd)."""
