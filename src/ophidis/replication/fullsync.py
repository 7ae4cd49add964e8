"""Full synchronisation of replicas through the forked RDB child
(replication.c's startBgsaveForReplication, rdbSaveToSlavesSockets and
updateSlavesWaitingBgsave).

A replica that cannot continue partially waits (``wait_bgsave_start``)
for the next snapshot child; several replicas can share one:

* **diskless** (``repl-diskless-sync yes`` and every waiting replica has
  the ``eof`` capability): after ``repl-diskless-sync-delay`` seconds (or
  once ``repl-diskless-sync-max-replicas`` wait) the child writes the RDB
  into a pipe; the parent forwards it to the replicas as
  ``$EOF:<mark>`` ... ``<mark>``.  The stream produced meanwhile is held
  and starts after the replica's first ``REPLCONF ACK`` (so the mark stays
  the last bytes of the payload as the replica reads it).
* **disk**: a BGSAVE of the RDB file (an already running one is shared when
  another replica already waits for its end); when it ends, the file is
  sent as ``$<len>`` and the held stream right after.

``+FULLRESYNC <replid> <offset>`` goes out when the child forks: the offset
is the stream's at that moment, and everything after it stays in the shared
replication buffer for the replica (the backlog grows past its size
meanwhile) until its payload is delivered.
"""

from __future__ import annotations

import os
import time

from .. import log
from ..persistence.child import close_quietly

# ReplicaState.state (INFO replication shows both waits as wait_bgsave)
WAIT_BGSAVE_START = "wait_bgsave_start"
WAIT_BGSAVE = "wait_bgsave_end"
SEND_BULK = "send_bulk"
ONLINE = "online"
STATE_NAMES = {WAIT_BGSAVE_START: "wait_bgsave", WAIT_BGSAVE: "wait_bgsave",
               SEND_BULK: "send_bulk", ONLINE: "online"}

# stop reading the child's pipe while a replica has this much unsent
PIPE_PAUSE_BYTES = 8 << 20


class FullSync:
    def __init__(self, feed):
        self.feed = feed
        self.server = feed.server
        self.rfd = None            # the diskless child's pipe
        self.mark = b""
        self.targets = []          # replicas the diskless child is writing to
        self.reading = False
        self.progress = {}         # client id -> (unsent bytes, time they last went down)

    # -- requests -------------------------------------------------------------------
    def request(self, c):
        """syncCommand's full-resynchronisation branch for replica ``c``."""
        srv = self.server
        cfg = srv.config
        feed = self.feed
        st = c.repl
        st.state = WAIT_BGSAVE_START
        st.since = time.time()
        p = srv.persistence
        if p.child_pid is not None and not p.child_socket:
            # a BGSAVE to disk is running: usable if another replica already
            # collects the stream since its fork
            other = None
            for r in feed.replicas:
                if r is not c and r.repl.state == WAIT_BGSAVE and not r.repl.socket:
                    other = r
                    break
            if other is not None:
                self._setup(c, other.repl.initial_offset, False)    # the same stream from its fork
                log.notice("Waiting for end of BGSAVE for SYNC")
            else:
                log.notice("Can't attach the replica to the current BGSAVE. Waiting for next BGSAVE for SYNC")
        elif p.child_pid is not None:
            log.notice("Current BGSAVE has socket target. Waiting for next BGSAVE for SYNC")
        elif cfg["repl-diskless-sync"] and st.capa_eof and cfg["repl-diskless-sync-delay"]:
            log.notice("Delay next BGSAVE for diskless SYNC")
        elif srv.child_type is None:
            self.start()
        else:
            log.notice("No BGSAVE in progress, but another BG operation is active. "
                       "BGSAVE for replication delayed")

    def _waiting(self):
        return [r for r in self.feed.replicas if r.repl.state == WAIT_BGSAVE_START and not r.closing]

    def cron(self):
        """replicationStartPendingFork: start the child for the replicas
        that wait, once the diskless delay has passed."""
        srv = self.server
        if self.targets:
            self.check_stuck()
        if srv.child_type is not None:
            return
        waiting = self._waiting()
        if not waiting:
            return
        cfg = srv.config
        if cfg["repl-diskless-sync"] and all(r.repl.capa_eof for r in waiting):
            idle = max(time.time() - r.repl.since for r in waiting)
            most = cfg["repl-diskless-sync-max-replicas"]
            if idle < cfg["repl-diskless-sync-delay"] and not (most and len(waiting) >= most):
                return
        self.start()

    # -- the child ------------------------------------------------------------------
    def start(self):
        srv = self.server
        feed = self.feed
        waiting = self._waiting()
        if not waiting:
            return
        socket = srv.config["repl-diskless-sync"] and all(r.repl.capa_eof for r in waiting)
        log.notice("Starting BGSAVE for SYNC with target: %s" % ("replicas sockets" if socket else "disk"))
        feed.flush()
        p = srv.persistence
        if socket:
            rfd, wfd = os.pipe()
            ok = p.bgsave(to_fd=wfd)
            os.close(wfd)
            if not ok:
                os.close(rfd)
        else:
            ok = p.bgsave()
        if not ok:
            log.warning("BGSAVE for replication failed")
            for r in waiting:
                r.repl.state = None
                feed.replicas.remove(r)
                r.repl = None
                r.push(b"-ERR BGSAVE failed, replication can't continue\r\n")
                r.close_after_reply = True
                r.close()
            return
        off = feed.offset
        for r in waiting:
            self._setup(r, off, socket)
        if socket:
            self.rfd = rfd
            self.mark = os.urandom(20).hex().encode()
            self.targets = list(waiting)
            for r in waiting:
                # wait_bgsave_end until the payload is through (as Redis shows it)
                r.push(b"$EOF:%s\r\n" % self.mark)
            os.set_blocking(rfd, False)
            self._resume_reading()

    def _setup(self, c, off, socket):
        """replicationSetupSlaveForFullResync: +FULLRESYNC now, the stream
        after ``off`` held for the replica, a SELECT first."""
        st = c.repl
        st.state = WAIT_BGSAVE
        st.initial_offset = off
        st.ack_off = off
        st.socket = socket
        st.hold = off + 1           # the stream from here waits in the shared buffer
        self.feed.last_db = -1
        if not st.pre_psync:
            c.push(b"+FULLRESYNC %s %d\r\n" % (self.server.replid.encode(), off))

    def _resume_reading(self):
        if self.rfd is not None and not self.reading:
            self.reading = True
            self.server.loop.add_reader(self.rfd, self._read)

    def _pause_reading(self):
        if self.reading:
            self.reading = False
            self.server.loop.remove_reader(self.rfd)

    def _read(self):
        """The diskless child's output, forwarded to its replicas."""
        try:
            data = os.read(self.rfd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._transfer_done()
            return
        live = [r for r in self.targets if not r.closing]
        self.targets = live
        if not live:
            log.warning("Diskless rdb transfer, last replica dropped, killing fork child.")
            self._close_pipe()
            self.server.persistence.kill_child()
            return
        big = False
        for r in live:
            r.push(data)
            t = r.transport
            if t is not None and t.get_write_buffer_size() > PIPE_PAUSE_BYTES:
                big = True
        if big:
            self._pause_reading()
            self.server.loop.call_later(0.01, self._check_drained)

    def _check_drained(self):
        if self.rfd is None:
            return
        self.check_stuck()
        for r in self.targets:
            t = r.transport
            if not r.closing and t is not None and t.get_write_buffer_size() > PIPE_PAUSE_BYTES:
                self.server.loop.call_later(0.01, self._check_drained)
                return
        self._resume_reading()

    def check_stuck(self):
        """A replica that takes nothing of the payload for repl-timeout
        seconds is dropped, so it cannot hold the others back."""
        now = time.time()
        timeout = self.server.config["repl-timeout"]
        for r in self.targets:
            t = r.transport
            if r.closing or t is None:
                continue
            size = t.get_write_buffer_size()
            last = self.progress.get(r.id)
            if last is None or size < last[0] or size == 0:
                self.progress[r.id] = (size, now)
            elif now - last[1] > timeout:
                log.warning("Disconnecting timedout replica (full sync): %s" % self.feed.replica_name(r))
                r.close()
                t.abort()             # its unsent payload goes too

    def _close_pipe(self):
        self._pause_reading()
        self.progress = {}
        if self.rfd is not None:
            close_quietly(self.rfd)
        self.rfd = None

    def _transfer_done(self):
        """The child closed the pipe: the payload is complete."""
        self._close_pipe()
        live = [r for r in self.targets if not r.closing]
        self.targets = []
        log.notice("Diskless rdb transfer, done reading from pipe, %d replicas still up." % len(live))
        for r in live:
            r.push(self.mark)
            # the stream starts with the replica's first ACK
            self.feed.put_online(r, hold=True)

    def _send_file(self, r, f):
        """sendBulkToSlave: the RDB file in chunks, as fast as the replica
        takes them (its output buffer stays small), then the held stream."""
        if r.closing:
            f.close()
            return
        t = r.transport
        while t is None or t.get_write_buffer_size() < PIPE_PAUSE_BYTES:
            chunk = f.read(1 << 16)
            if not chunk:
                f.close()
                self.feed.put_online(r, hold=False)
                return
            r.push(chunk)
        self.server.loop.call_later(0.01, self._send_file, r, f)

    def done(self, ok: bool, socket: bool):
        """The RDB child ended (updateSlavesWaitingBgsave)."""
        feed = self.feed
        if socket:
            if self.rfd is not None:
                if ok:
                    # what is left in the pipe, then the end of the payload
                    os.set_blocking(self.rfd, True)
                    while self.rfd is not None:
                        self._read()
                else:
                    self._close_pipe()
                    for r in self.targets:
                        r.close()
                    self.targets = []
        else:
            waiting = [r for r in feed.replicas if r.repl.state == WAIT_BGSAVE and not r.repl.socket]
            for r in waiting:
                if not ok:
                    log.warning("SYNC failed. BGSAVE child returned an error")
                    r.close()
                    continue
                try:
                    f = open(self.server.persistence.filename, "rb")
                    size = os.fstat(f.fileno()).st_size
                except OSError as e:
                    log.warning("SYNC failed. Can't open/stat DB after BGSAVE: %s" % e.strerror)
                    r.close()
                    continue
                r.repl.state = SEND_BULK
                r.push(b"$%d\r\n" % size)
                self._send_file(r, f)
        feed.prune()
        # replicas that arrived meanwhile get the next child
        if self._waiting() and self.server.child_type is None:
            self.cron()

