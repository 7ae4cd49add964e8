# cython: language_level=3
"""The C fields of the keyspace (keyspace/_core.pxd declares them): the
INFO counters the request loop and the bodies add to, and what the bodies
read of a database."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH


cdef class StatsCore:
    """The INFO stats counters the per-read path and the bodies add to, as
    C fields (keyspace.db.Stats derives from this class when the compiled
    layer is built, from object otherwise)."""


cdef class DbCore:
    """The fields of keyspace.db.Database the bodies read, as C fields
    (Database derives from this class when the compiled layer is built)."""
