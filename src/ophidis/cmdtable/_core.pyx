# cython: language_level=3
"""The C fields of a command (cmdtable/_core.pxd declares them): what the
request loop and the script bridge read of a registered command."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH


cdef class CommandCore:
    """The fields of a command that the request loop uses, as C fields
    (Command derives from this class when the compiled layer is built)."""
