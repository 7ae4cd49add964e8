# cython: language_level=3, boundscheck=False, wraparound=False
"""The request loop and the per-read path in C: the compiled twin of
net/client.py (Client.data_received, _run_requests, write, flush_pushes)
and of PubSub._fanout's delivery into clients.

``run`` is the request loop of ``Client._data_received`` (client.py's
``_run_requests`` is the same loop in Python, used with the pure layer).
What the compiled loop saves is the interpreter's work around each command:
the clock is read with clock_gettime instead of a boxed float, the
histogram slot is computed in C, the switches of client.py and the fields
of the command (CommandCore) are C fields; a restricted ACL user's key
patterns are matched in C (acl/_check.pyx), and the common case of the hot
commands runs in C (commands/_bodies.pyx).  Everything else a command does
runs in Python.  Keep the two loops identical in behaviour:
tests/test_speedups.py runs the same traffic through both."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_SIZE
from cpython.object cimport PyObject
from libc.string cimport memcmp

import hiredis

from ophidis._util cimport _all_bytes, _hist_add, _now
from ophidis.acl._check cimport _acl_ok
from ophidis.cluster._slots cimport _cluster, _cluster_local
from ophidis.cmdtable._core cimport CommandCore, _table_gen
from ophidis.commands._bodies cimport _Ctx, _body, _flush, _load
from ophidis.keyspace._core cimport StatsCore
from ophidis.net._core cimport ClientCore
from ophidis.net._sock cimport SockConn, set_direct
from ophidis.protocol._reader cimport ReadFeed, ReaderCore, _feed_at, _feed_clear, _plain_lines, _read_feed
from ophidis.protocol._reader import ends_with_request
from ophidis.server._core cimport ServerCore

from ..cmdtable.registry import TABLE as _TABLE
from ..errors import RedisError
from ..keyspace.db import stats as _stats

# setup.py passes the SHA-256 of the compiled layer's sources; ophidis.compiled
# compares it with the files next to them and ignores a stale build.
SOURCE_HASH = PYX_HASH


cdef object _ProtocolError = hiredis.ProtocolError
cdef object _CGETS = type(hiredis.Reader().gets)     # a parser's own gets (no Python code)

# client.py's switches (client._sync keeps them equal to its globals; C
# globals: the loop reads them for every request)
cdef bint _server_slow = False
cdef double _slow_check = 0.01
cdef bint _latency_tracking = True
cdef list _ready = []

cdef object _propagator = None     # replication.propagate.Propagator while a target is attached


def sync(bint server_slow, double slow_check, bint latency_tracking, list ready, propagator):
    global _server_slow, _slow_check, _latency_tracking, _ready, _propagator
    _server_slow = server_slow
    _slow_check = slow_check
    _latency_tracking = latency_tracking
    _ready = ready
    _propagator = propagator

def run(ClientCore client, gets, list out, dict table, bint slow, double t0):
    """Run the requests hiredis has ready (see client._run_requests).
    Returns (nreq, last): the number of requests taken off the parser and
    the last one; nreq is ~n when the Python parser must take over after
    n requests (hiredis refused the stream, or the request is not an array
    of bulk strings)."""
    cdef _Ctx x = _Ctx.__new__(_Ctx)
    try:
        nreq = _run(client, gets, out, table, slow, t0, x)
        return nreq, x.req_last
    finally:
        _flush(x)


cdef dict _dr_table = _TABLE       # the command table (the loop's table is always this one)


# The last command name looked up (at most 32 bytes) and its command, while
# the table's generation is _name_gen (cmdtable/_core.pyx's table_changed):
# the C parser gives a repeated name as this very object (protocol/_reader.pyx's
# _name0), another equal name is compared; a new name is looked up
cdef bytes _name_key = None
cdef object _name_cmd = None
cdef unsigned long long _name_gen = 0


cdef inline object _lookup(dict table, bytes name):
    # table.get(name), through the cache above for the command table
    global _name_key, _name_cmd, _name_gen
    cdef Py_ssize_t n
    if name is not _name_key:
        n = PyBytes_GET_SIZE(name)
        if _name_key is None or n != PyBytes_GET_SIZE(_name_key) \
                or memcmp(PyBytes_AS_STRING(name), PyBytes_AS_STRING(_name_key), n) != 0 \
                or table is not _dr_table:
            c = table.get(name)
            if n <= 32 and table is _dr_table:
                _name_key = name
                _name_cmd = c
                _name_gen = _table_gen
            return c
    elif table is not _dr_table:
        return table.get(name)
    if _name_gen != _table_gen:
        _name_cmd = table.get(_name_key)
        _name_gen = _table_gen
    return _name_cmd


# The ACL rules' generation: acl/users.py tells acl_changed whenever a
# user's rules change (User._update, which makes its ``fast`` anew)
cdef unsigned long long _acl_gen = 1


def acl_changed():
    global _acl_gen
    _acl_gen += 1


cdef inline object _user_fast(ClientCore client):
    # client.user.fast (a getattr on the User costs ~130 instructions),
    # taken again when the client's user or any user's rules changed
    u = client.user
    if u is not client.acl_user or client.acl_gen != _acl_gen:
        client.acl_fast = u.fast
        client.acl_user = u
        client.acl_gen = _acl_gen
    return client.acl_fast


cdef Py_ssize_t _run(ClientCore client, gets, list out, dict table, bint slow, double t0, _Ctx x) except? -1:
    # returns nreq (see run); the last request taken goes in x.req_last
    cdef Py_ssize_t nreq = 0, n
    cdef double t1, dt
    cdef CommandCore cmd
    last = None
    fast = _user_fast(client)
    prop = _propagator
    cdef ServerCore srv = client.server
    dirty0 = None
    # a gets in Python (client._bounded_gets: writes, may close the client)
    # sees the state as the Python loop leaves it
    cdef ReadFeed feed = gets if type(gets) is ReadFeed else None
    cdef bint py_gets = feed is None and type(gets) is not _CGETS
    while True:
        if py_gets:
            _flush(x)
        try:
            req = feed.take() if feed is not None else gets()
        except _ProtocolError:
            x.req_last = last
            return ~nreq
        if req is False:
            break
        nreq += 1
        last = req
        if type(req) is list and <list>req and _all_bytes(<list>req):
            # a repeated command name's lookup is kept until the table changes
            c = _lookup(table, <bytes>(<list>req)[0])
            n = len(<list>req)
            if c is not None and not slow and (<CommandCore>c).fastpath \
                    and (<CommandCore>c).amin <= n <= (<CommandCore>c).amax \
                    and (not _cluster or _cluster_local(<CommandCore>c, <list>req)) \
                    and (fast is None or _acl_ok(<dict>fast, client, <CommandCore>c, <list>req)):
                cmd = <CommandCore>c
                # The fast path: no check of processCommand can apply.
                if prop is not None:
                    _flush(x)
                    dirty0 = srv.dirty
                try:
                    r = None
                    if cmd.cbody:
                        if not x.valid:
                            _load(x, client)
                        x.last_cmd = cmd
                        r = _body(cmd.cbody, x, <list>req)
                    if r is None:
                        _flush(x)
                        client.last_cmd = cmd
                        r = cmd.proc(client, req)
                    out.append(r)
                except RedisError as e:
                    _flush(x)
                    client.last_cmd = cmd
                    out.append(client.error_reply(e, cmd))
                except Exception as e:  # never let a command kill the link
                    _flush(x)
                    client.last_cmd = cmd
                    out.append(client.internal_error(e, cmd, req))
                t1 = _now()
                dt = t1 - t0
                t0 = t1
                cmd.calls += 1
                cmd.usec += dt
                client.tot_cmds += 1
                if dt >= _slow_check:
                    _flush(x)
                    client.server.slow_call(client, cmd, req, dt)
                if _latency_tracking:
                    _hist_add(cmd.hist, dt)
                if prop is not None:
                    # Server.call's propagation (client._propagate)
                    _flush(x)
                    d = srv.dirty != dirty0
                    if d or prop.forced or prop.rewritten is not None or prop.pending:
                        prop.after_call(client, cmd, req, d)
                if _ready:
                    _flush(x)
                    srv.handle_ready_keys()
                if cmd.fastpath != 2:
                    continue
                # a script ran: it may have changed what the loop read
                if client.blocked or client.close_after_reply or client.paused_queue is not None \
                        or client.closing:
                    break
                slow = client.slow or _server_slow
                fast = _user_fast(client)
                prop = _propagator
                continue
            _flush(x)
            r = client.process_request(req)
        else:
            x.req_last = last
            return ~(nreq - 1)           # Redis's parser takes over (RequestReader.taken)
        if r is not None:
            out.append(r)
        if client.blocked or client.close_after_reply or client.paused_queue is not None or client.closing:
            break
        slow = client.slow or _server_slow
        fast = _user_fast(client)
        prop = _propagator
        t0 = _now()
    x.req_last = last
    return nreq


# ===========================================================================
# Client.data_received compiled
# ===========================================================================
# The per-read work around the request loop (client.py's data_received,
# _data_received and _run_read) for the common read: a client that may run
# requests, multibulk input hiredis can take, no output limit for the
# normal class.  Anything else, and whatever the loop leaves for
# RequestReader.taken, goes to the Python methods (the definition).

cdef StatsCore _dr_stats = _stats
cdef object _dr_client_mem = None   # client.set_client_memory's function


cdef object _dr_before_reply = None  # client.set_before_reply's function
cdef Py_ssize_t _dr_floor = 0         # client.set_output_floor's
cdef Py_ssize_t _dr_unauth_limit = 0  # client.UNAUTH_OUTPUT_LIMIT


def data_setup(Py_ssize_t unauth_limit):
    global _dr_unauth_limit
    _dr_unauth_limit = unauth_limit


def set_write_switches(before_reply, Py_ssize_t floor):
    global _dr_before_reply, _dr_floor
    _dr_before_reply = before_reply
    _dr_floor = floor


cdef _dr_write(ClientCore client, list out):
    # Client.write (with _write_after_barrier's function first when set)
    cdef Py_ssize_t n, held
    if _dr_before_reply is not None:
        _dr_before_reply()
    if client.closing:
        return
    t = client.transport
    if client.push_buf is not None:
        # messages queued for this client go out first, in order
        out = <list>client.push_buf + out
        client.push_buf = None
    data = b"".join(out) if len(out) != 1 else out[0]
    n = PyBytes_GET_SIZE(data) if type(data) is bytes else len(data)
    if n > client.rb_peak:
        client.rb_peak = n
    if client.t_of is not t:
        client.t_write = t.write
        client.t_wbs = t.get_write_buffer_size
        try:
            client.t_high = t.get_write_buffer_limits()[1]
        except Exception:
            client.t_high = -1
        client.t_of = t
    try:
        if _dr_floor and (client.wpaused or client.t_high < 0 or n + client.t_high >= _dr_floor
                          or client.out_extra is not None):
            held = client.t_wbs()
            if (held + n >= _dr_floor or client.out_extra is not None) \
                    and client.server.check_output_limits(client, held, n):
                return
        if type(t) is SockConn and type(data) is bytes:
            (<SockConn>t).c_write(<bytes>data)     # (net/_sock.pyx's write, no Python call)
        else:
            client.t_write(data)
    except Exception:
        client.closing = True
        return
    _dr_stats.net_output_bytes += n
    _dr_stats.total_writes_processed += 1
    client.net_out += n
    if client.close_after_reply:
        client.close()
    elif not client.authenticated:
        if t.get_write_buffer_size() > _dr_unauth_limit:
            client.server.close_over_limit(client, False)
    elif _dr_client_mem is not None and client.pending_writes is None:
        _dr_client_mem(client)


def set_client_memory(fn):
    global _dr_client_mem
    _dr_client_mem = fn


def data_received(ClientCore client, data):
    """Client.data_received (asyncio.Protocol's) compiled."""
    _dr_data(client, data)


cdef object _dr_direct(object client, object data):
    # data_received for net/_sock.pyx's SockConn, called from C
    return _dr_data(<ClientCore>client, data)


set_direct(_dr_direct, data_received)


cdef object _dr_data(ClientCore client, data):
    cdef Py_ssize_t nb = PyBytes_GET_SIZE(data) if type(data) is bytes else len(data)
    _dr_stats.net_input_bytes += nb
    _dr_stats.total_reads_processed += 1
    client.net_in += nb
    client.read_events += 1
    # time.monotonic() (CLOCK_MONOTONIC, as _now)
    cdef double t0 = _now()
    client.last_time = t0
    cdef long long n0 = client.tot_cmds
    try:
        _dr_read(client, data, t0)
    finally:
        # Pushes (pub/sub, notifications) for this client go into the
        # pending reply list only while its requests are being run.
        client.pending_writes = None
    cdef long long n = client.tot_cmds - n0
    if n:
        # the read's batch of commands (parse-batch-cmd-sum / -cnt)
        client.pl_sum += n
        client.pl_cnt += 1
        _dr_stats.pb_sum += n
        _dr_stats.pb_cnt += 1
        if n > _dr_stats.pb_max:
            _dr_stats.pb_max = n
    if _dr_client_mem is not None:
        _dr_client_mem(client)    # after the read's requests and replies
    cdef double d = _now() - t0
    _dr_stats.el_duration += d
    if d > _dr_stats.el_max:
        _dr_stats.el_max = d


cdef _Ctx _dr_ctx = _Ctx.__new__(_Ctx)
cdef bint _dr_ctx_busy = False
cdef ReadFeed _dr_feed = ReadFeed.__new__(ReadFeed)     # reused as _dr_ctx (a new one if reads nest)
cdef list _dr_out = []      # the read's reply list, reused with _dr_feed (a new one once given away)
cdef bint _dr_feed_busy = False
cdef type _dr_rd_type = None    # the last class of client.reader seen to derive from ReaderCore


cdef extern from "Python.h":
    void Py_SET_SIZE(object o, Py_ssize_t size)
    PyObject *_list_item "PyList_GET_ITEM" (object l, Py_ssize_t i)
    void _decref "Py_DECREF" (PyObject *o)


cdef bint _list_empty(list l) noexcept:
    # l emptied keeping its storage (del l[:] frees it, and the next append
    # allocates again); False: too long, not emptied
    cdef PyObject *items[16]
    cdef Py_ssize_t i, n = PyList_GET_SIZE(l)
    if n > 16:
        return False
    for i in range(n):
        items[i] = _list_item(l, i)
    Py_SET_SIZE(l, 0)
    for i in range(n):
        _decref(items[i])
    return True


cdef _dr_read(ClientCore client, data, double t0):
    if client.closing or client.close_after_reply:
        return
    if (client.blocked or client.paused_queue is not None or type(data) is not bytes
            or PyBytes_GET_SIZE(data) == 0 or not client.authenticated):
        client._data_received(data)
        return
    rd = client.reader
    cdef bint inline = PyBytes_AS_STRING(data)[0] != 42
    global _dr_rd_type
    if type(rd) is not _dr_rd_type:
        # (isinstance walks the reader class's MRO: its answer is kept per class)
        if not isinstance(rd, ReaderCore):
            client._data_received(data)
            return
        _dr_rd_type = type(rd)
    if (<ReaderCore>rd).pend is not None \
            or (<ServerCore>client.server).obuf_normal_limit or (inline and not _plain_lines(data)):
        client._data_received(data)
        return
    # at a request boundary: hiredis holds nothing (a multibulk header it
    # would pre-size is looked for in what the C parser leaves to it)
    global _dr_feed_busy, _dr_out
    cdef ReadFeed feed
    cdef list out
    cdef bint own_feed = not _dr_feed_busy, kept = False
    if own_feed:
        feed = _feed_at(_dr_feed, <bytes>data, rd, inline)
        out = _dr_out
        _dr_feed_busy = True
    else:
        feed = _read_feed(<bytes>data, rd, inline)
        out = []
    try:
        kept = _dr_run(client, <bytes>data, rd, inline, feed, out, t0)
    finally:
        if own_feed:
            _feed_clear(feed)
            if not kept or not _list_empty(out):
                _dr_out = []
            _dr_feed_busy = False


cdef int _dr_run(ClientCore client, bytes data, rd, bint inline, ReadFeed feed, list out, double t0) except -1:
    # _dr_read's run of the read's requests (feed: its C parser; out: the
    # reply list, empty): 1 when out may be reused, 0 when it went to Python
    # code that may keep it
    client.pending_writes = out
    # (run's body, called in C: no Python call, no argument parsing; the
    # bodies' context object reused, a new one if a read ever nests)
    global _dr_ctx_busy
    cdef _Ctx x
    cdef Py_ssize_t nreq
    cdef bint shared = not _dr_ctx_busy
    if shared:
        x = _dr_ctx
        _dr_ctx_busy = True
    else:
        x = _Ctx.__new__(_Ctx)
    try:
        nreq = _run(client, feed, out, _dr_table, client.slow or _server_slow, t0, x)
        last = x.req_last
    finally:
        _flush(x)
        x.req_last = None
        if shared:
            x.client = None     # (no closed client kept alive by the shared context)
            _dr_ctx_busy = False
    cdef bint stopped = client.blocked or client.close_after_reply or client.paused_queue is not None
    if inline:
        # _python_input's case of a read of plain inline lines
        if stopped or client.closing:
            rd.buf = data
            if rd.lines_stopped(nreq, client.blocked, client.closing) is not None:
                if out:
                    _dr_write(client, out)
                client._qbuf_limit()
                return 1
        if out:
            _dr_write(client, out)
        return 1
    if nreq > 0 and (<ReaderCore>rd).pend is None and (
            (feed.gets is None and feed.pos == PyBytes_GET_SIZE(data))    # all taken here
            or (type(last) is list and <list>last and not stopped and ends_with_request(data, <list>last))):
        # the read ended with the last request: nothing is left
        if out:
            _dr_write(client, out)
        return 1
    if client._taken(data, nreq, last, out):
        client._python_then()
    return 0


# =====================================================================================
# Pub/sub fan-out (issue 17): PubSub._fanout and client.flush_pushes compiled
# =====================================================================================
# A message goes into the pending reply list of a subscriber whose requests
# are running, else into its push_buf, written with the others of the same
# event-loop iteration by flush_pushes (one write per subscriber per
# iteration).  The Python functions stay the definition (pure installs run
# them); a subscriber of another class than client.Client takes them too.

cdef list _push_flush = None        # client._FLUSH
cdef object _push_flush_fn = None   # client.flush_pushes
cdef type _push_client = None       # client.Client


def push_setup(list flush, flush_fn, type client_type):
    global _push_flush, _push_flush_fn, _push_client
    _push_flush = flush
    _push_flush_fn = flush_fn
    _push_client = client_type


def fanout(dict subs, bytes m2, bytes m3):
    """PubSub._fanout: the number of subscribers, or -1 (not all of them
    are client.Client: the Python function runs, nothing was done)."""
    cdef list clients = list(subs)
    cdef ClientCore c
    cdef Py_ssize_t n = len(clients)
    for o in clients:
        if type(o) is not _push_client:
            return -1
    for o in clients:
        c = <ClientCore>o
        if c.closing:
            continue
        m = m2 if c.resp == 2 else m3
        if c.pending_writes is not None:
            # the publisher itself (or the client whose command raised a
            # notification): after its command's reply
            pa = c.push_after
            if pa is None:
                c.push_after = [m]
            else:
                (<list>pa).append(m)
            continue
        buf = c.push_buf
        if buf is None:
            c.push_buf = [m]
            _push_flush.append(c)
            if len(_push_flush) == 1:
                c.server.loop.call_soon(_push_flush_fn)
        else:
            (<list>buf).append(m)
    return n


def flush_pushes():
    """client.flush_pushes compiled."""
    cdef list clients = list(_push_flush)
    cdef ClientCore c
    del _push_flush[:]
    for o in clients:
        if type(o) is not _push_client:
            if o.push_buf is not None and not o.closing:
                o.write([])
            else:
                o.push_buf = None
            continue
        c = <ClientCore>o
        if c.push_buf is not None and not c.closing:
            _dr_write(c, [])
        else:
            c.push_buf = None


