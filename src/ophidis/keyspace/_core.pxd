# The C fields of keyspace.db's Stats and Database (the one declaration of
# the field lists: keyspace/db.py's pure twins take their slots from here).
cdef class StatsCore:
    cdef public long long keyspace_hits, keyspace_misses, net_input_bytes, net_output_bytes
    # reads and writes on client sockets (INFO's total_reads/writes_processed,
    # the threads section) and the seconds spent handling the reads (the
    # eventloop_* fields, see info.py; el_nested: the seconds of the commands
    # run by EXEC and scripts, added by the script bridge for each redis.call)
    cdef public long long total_reads_processed, total_writes_processed
    # commands run by the reads that ran any, and those reads (8.8's
    # commands_per_parse_batch_*)
    cdef public long long pb_sum, pb_cnt, pb_max
    cdef public double el_duration, el_max, el_nested


cdef class DbCore:
    cdef public object d, expires, watched_keys, blocking_keys
