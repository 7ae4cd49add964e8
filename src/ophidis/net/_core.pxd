# The C fields of net.client.Client (the one declaration of the field list:
# client.py's pure twin takes its slots from this file, see util.pxd_fields).
cdef class ClientCore:
    cdef public object server, transport, reader, db, resp, authenticated, slow, closing
    cdef public object close_after_reply, blocked, paused_queue, last_cmd, user
    cdef public double last_time   # the clock (time.monotonic) at the client's last read
    cdef public object pending_writes, push_buf, pubsub_channels, pubsub_patterns, pubsub_shard
    cdef public object in_script, multi, reply_mode, script_caller, lua_debug
    cdef public Py_ssize_t rb_peak     # the largest write since the reply buffer's peak reset
    # CLIENT LIST's tot-net-in, tot-net-out, tot-cmds (Redis 8)
    cdef public long long net_in, net_out, tot_cmds
    # Redis 8.8's read-events, parse-batch-cmd-sum and parse-batch-cnt: the
    # reads, and the commands and count of the reads that ran commands
    cdef public long long read_events, pl_sum, pl_cnt
    # pub/sub messages for this client raised by its own running command:
    # they follow the command's reply (Redis 7.2), see Server.call
    cdef public object push_after
    # the compiled write's bound methods of the transport they were taken
    # from (a method looked up on uvloop's transport per write costs ~700
    # instructions)
    cdef public object t_of, t_write, t_wbs
    # the transport's high-water mark (-1: unknown) and whether it asked us
    # to pause writing (pause_writing): not paused, it holds no more than
    # the mark, so a small write needs no look at its buffer; out_extra:
    # output held outside the transport (client-output-buffer-limit)
    cdef public Py_ssize_t t_high
    cdef public bint wpaused
    cdef public object out_extra
    # the compiled loop's copy of user.fast (net/_client.pyx's _user_fast):
    # taken from acl_user while the ACL rules' generation was acl_gen
    cdef object acl_user, acl_fast       # (compiled only)
    cdef unsigned long long acl_gen      # (compiled only)
