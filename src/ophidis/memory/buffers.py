"""A client's query and reply buffers as Redis sizes them: the figures
CLIENT LIST shows (``qbuf-free``, ``rbs``, ``rbp``) and INFO's
``reply_buffer_shrinks``/``expands``.

We keep no such buffers (the reader holds only the bytes not yet run, the
transport what is not yet sent), so their sizes are modelled from what
the connection does, by Redis 7.0's rules:

- The query buffer (an sds) is allocated at the first read with room for
  one read (16 KB, PROTO_IOBUF_LEN); an argument of 32 KB or more
  (PROTO_MBULK_BIG_ARG) gets a buffer of its own length, which stays the
  query buffer once the argument is taken.  The clients cron
  (clientsCronResizeQueryBuffer) frees the unused room of a client idle
  for more than 2 seconds, and trims a buffer of more than 32 KB that is
  over twice the peak use since the previous pass (not below a big
  argument still arriving: 7.2+).  A read since the
  previous look is known from ``Client.last_time``, a big argument from
  ``RequestReader.big`` (noted when a request spans reads).
- The reply buffer starts at 16 KB (PROTO_REPLY_CHUNK_BYTES); the cron
  (clientsCronResizeOutputBuffer) halves it towards the peak use when the
  peak is under half of it (not below 1 KB), and doubles it (up to 16 KB)
  when a batch of replies filled it.  The peak is the largest write since
  it was last reset (``Client.rb_peak``, kept by the write paths), reset
  every ``reply_buffer_peak_reset_time`` ms (DEBUG REPLYBUFFER).

The state of one client is kept in its ``memory.clients.Usage``; the
cron that visits the clients is ``ClientMemory.buffers_cron``.
"""

from __future__ import annotations

import time

from ..net.client import REPLY_CHUNK     # PROTO_REPLY_CHUNK_BYTES: a new client's reply buffer

IOBUF_LEN = 16 * 1024             # PROTO_IOBUF_LEN: what one read makes room for
RESIZE_THRESHOLD = 32 * 1024      # PROTO_RESIZE_THRESHOLD
REPLY_MIN = 1024                  # PROTO_REPLY_MIN_BYTES

_monotonic = time.monotonic


class BufState:
    """One client's modelled buffers (in its Usage)."""
    __slots__ = ("qb_alloc", "qb_peak", "qb_seen", "rb_size", "rb_reset")

    def __init__(self, c):
        self.qb_alloc = 0            # sdsalloc(querybuf): 0 until the first read
        self.qb_peak = 0             # querybuf_peak
        self.qb_seen = c.ctime       # Client.last_time when last folded in
        self.rb_size = REPLY_CHUNK   # buf_usable_size
        self.rb_reset = c.ctime      # buf_peak_last_reset_time (monotonic seconds)


def _fold_reads(c, b: BufState):
    """What the client read since the previous look."""
    if c.last_time != b.qb_seen:
        b.qb_seen = c.last_time
        if b.qb_alloc < IOBUF_LEN:
            b.qb_alloc = IOBUF_LEN
        if b.qb_peak < IOBUF_LEN:
            b.qb_peak = IOBUF_LEN
    reader = c.reader
    big = reader.big
    if big:
        reader.big = 0
        # the argument's own buffer became the query buffer
        b.qb_alloc = big
        if big > b.qb_peak:
            b.qb_peak = big


def query_free(c, b: BufState, qbuf: int) -> int:
    """qbuf-free: the room left in the modelled query buffer."""
    _fold_reads(c, b)
    return max(b.qb_alloc, qbuf) - qbuf


def reply_figures(c, b: BufState):
    """(rbs, rbp) of CLIENT LIST."""
    return b.rb_size, min(c.rb_peak, b.rb_size)


def resize_query(c, b: BufState, now: float):
    """clientsCronResizeQueryBuffer."""
    _fold_reads(c, b)
    reader = c.reader
    pend = reader.pend
    qlen = len(pend) if pend is not None else 0
    # the big argument being read (Redis's bulklen + 2): its buffer is kept
    # whole while it arrives, and is the peak (7.2+)
    bulk = 0
    if qlen:
        qbuf, _, _, held = reader.layout()
        if held > qlen:
            bulk = held - (qlen - qbuf)
    alloc = b.qb_alloc if b.qb_alloc > qlen else qlen
    if alloc - qlen > 4 * 1024:
        if int(now - c.last_time) > 2:
            alloc = qlen                        # idle: all the free room goes
        elif alloc > RESIZE_THRESHOLD and alloc // 2 > b.qb_peak:
            alloc = max(qlen, b.qb_peak, bulk)  # too big for the recent peak
    b.qb_alloc = alloc
    b.qb_peak = max(qlen, bulk)


def resize_reply(c, b: BufState, now: float, reset_ms: int) -> int:
    """clientsCronResizeOutputBuffer (when resizing is enabled): -1 when
    the buffer shrank, 1 when it grew, else 0.  ``reset_ms``:
    reply_buffer_peak_reset_time (-1: never)."""
    size = b.rb_size
    peak = c.rb_peak
    if peak > size:
        peak = size
    new = done = 0
    if size // 2 >= REPLY_MIN and peak < size // 2:
        new = max(REPLY_MIN, peak + 1)
        done = -1
    elif size * 2 < REPLY_CHUNK * 2 and peak == size:
        new = min(REPLY_CHUNK, size * 2)
        done = 1
    if reset_ms >= 0 and (now - b.rb_reset) * 1000 >= reset_ms:
        peak = 0                                # what the buffer holds between loops
        b.rb_reset = now
    c.rb_peak = peak
    if new:
        b.rb_size = new
    return done
