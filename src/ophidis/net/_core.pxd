# The C fields of net.client.Client (the one declaration of the field list:
# client.py's pure twin takes its slots from this file, see util.pxd_fields).
cdef class ClientCore:
    cdef public object server, transport, reader, db, resp, authenticated, slow, closing
    cdef public object close_after_reply, blocked, paused_queue, last_time, last_cmd, user
    cdef public object pending_writes, push_buf, pubsub_channels, pubsub_patterns, pubsub_shard
    cdef public object in_script, multi, reply_mode, script_caller, lua_debug
    cdef public Py_ssize_t rb_peak     # the largest write since the reply buffer's peak reset
