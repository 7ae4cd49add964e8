# cython: language_level=3
"""The C fields of a command (cmdtable/_core.pxd declares them): what the
request loop and the script bridge read of a registered command."""

# setup.py passes the SHA-256 of the compiled layer's sources (ophidis.compiled)
SOURCE_HASH = PYX_HASH


cdef class CommandCore:
    """The fields of a command that the request loop uses, as C fields
    (Command derives from this class when the compiled layer is built)."""


# The command table's generation: bumped by cmdtable/registry.py whenever
# TABLE changes (a command registered, unregistered or renamed), so that
# the request loop (net/_client.pyx) may keep a name's lookup across reads.
cdef unsigned long long _table_gen = 1


def table_changed():
    """TABLE changed: the lookups cached by the request loop are stale."""
    global _table_gen
    _table_gen += 1
