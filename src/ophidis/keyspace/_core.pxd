# The C fields of keyspace.db's Stats and Database (the one declaration of
# the field lists: keyspace/db.py's pure twins take their slots from here).
cdef class StatsCore:
    cdef public long long keyspace_hits, keyspace_misses, net_input_bytes, net_output_bytes


cdef class DbCore:
    cdef public object d, expires, watched_keys, blocking_keys
