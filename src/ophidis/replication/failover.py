"""FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms]: a coordinated
switch of roles between this master and one of its replicas
(replication.c's failoverCommand / updateFailoverStatus / abortFailover).

1. Writes are paused (``waiting-for-sync``).
2. Once the target (or, without TO, any replica) has acknowledged the whole
   stream, this master becomes a replica of it and asks
   ``PSYNC <replid> <offset> FAILOVER`` (``failover-in-progress``); the
   target promotes itself on that request and continues us partially.
3. The PSYNC reply ends the failover and the pause.  A timeout without
   FORCE, a refused PSYNC or FAILOVER ABORT give the role back.
"""

from __future__ import annotations

import time

from .. import log
from ..errors import SYNTAX, RedisError
from ..util import parse_int
from . import replica

NO_FAILOVER = "no-failover"
WAIT_FOR_SYNC = "waiting-for-sync"
IN_PROGRESS = "failover-in-progress"


class Failover:
    def __init__(self, feed):
        self.feed = feed
        self.server = feed.server
        self.state = NO_FAILOVER
        self.host = None
        self.port = 0
        self.end = 0.0              # time.time() deadline, 0: none
        self.force = False

    # -- the command ------------------------------------------------------------------
    def command(self, c, argv) -> bytes:
        srv = self.server
        feed = self.feed
        if len(argv) == 2 and argv[1].lower() == b"abort":
            if self.state == NO_FAILOVER:
                raise RedisError("ERR No failover in progress.")
            self.abort("Failover manually aborted")
            return b"+OK\r\n"
        timeout = 0
        force = False
        host = None
        port = 0
        j = 1
        n = len(argv)
        while j < n:
            opt = argv[j].lower()
            if opt == b"timeout" and j + 1 < n and timeout == 0:
                timeout = parse_int(argv[j + 1])
                if timeout <= 0:
                    raise RedisError("ERR FAILOVER timeout must be greater than 0")
                j += 2
            elif opt == b"to" and j + 2 < n and host is None:
                port = parse_int(argv[j + 2])
                host = argv[j + 1].decode("utf-8", "replace")
                j += 3
            elif opt == b"force" and not force:
                force = True
                j += 1
            else:
                raise SYNTAX
        if self.state != NO_FAILOVER:
            raise RedisError("ERR FAILOVER already in progress.")
        if srv.replica_link is not None:
            raise RedisError("ERR FAILOVER is not valid when server is a replica.")
        feed.prune()
        if not feed.replicas:
            raise RedisError("ERR FAILOVER requires connected replicas.")
        if force and (not timeout or host is None):
            raise RedisError("ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
        if host is not None:
            r = self._find(host, port)
            if r is None:
                raise RedisError("ERR FAILOVER target HOST and PORT is not a replica.")
            if r.repl.state != "online":
                raise RedisError("ERR FAILOVER target replica is not online.")
            self.host, self.port = host, port
            log.notice("FAILOVER requested to %s:%d." % (host, port))
        else:
            log.notice("FAILOVER requested to any replica.")
        self.end = time.time() + timeout / 1000.0 if timeout else 0.0
        self.force = force
        self.state = WAIT_FOR_SYNC
        srv.pause("write", float("inf"))
        return b"+OK\r\n"

    def _find(self, host, port):
        for r in self.feed.replicas:
            st = r.repl
            if st.ip == host and st.port == port and not r.closing:
                return r
        return None

    # -- progress ----------------------------------------------------------------------
    def update(self):
        """updateFailoverStatus: called from the cron and after ACKs."""
        if self.state != WAIT_FOR_SYNC:
            return
        feed = self.feed
        if self.end and self.end <= time.time():
            if self.force:
                log.notice("FAILOVER to %s:%d time out exceeded, failing over." % (self.host, self.port))
                self._switch()
            else:
                self.abort("Replica never caught up before timeout")
            return
        if self.host is not None:
            r = self._find(self.host, self.port)
        else:
            r = None
            for x in feed.replicas:
                if x.repl.ack_off == feed.offset and not x.closing:
                    r = x
                    self.host = x.repl.ip
                    self.port = x.repl.port
                    break
        if r is not None and r.repl.ack_off == feed.offset:
            log.notice("Failover target %s:%d is synced, failing over." % (self.host, self.port))
            self._switch()

    def _switch(self):
        self.state = IN_PROGRESS
        replica.set_master(self.server, self.host, self.port)

    def psync_reply(self, accepted: bool):
        """The target answered our PSYNC ... FAILOVER."""
        if self.state != IN_PROGRESS:
            return
        if accepted:
            self.clear()
        else:
            self.abort("Failover target rejected psync request")

    def abort(self, reason: str):
        if self.state == NO_FAILOVER:
            return
        if self.host is not None:
            log.notice("FAILOVER to %s:%d aborted: %s" % (self.host, self.port, reason))
        else:
            log.notice("FAILOVER to any replica aborted: %s" % reason)
        if self.state == IN_PROGRESS:
            replica.unset_master(self.server)
        self.clear()

    def clear(self):
        self.state = NO_FAILOVER
        self.host = None
        self.port = 0
        self.end = 0.0
        self.force = False
        self.server.unpause()
