"""The replication stream as a replica sees it: SYNC, the RDB payload, then
the propagated commands."""

from __future__ import annotations

from support.resp import Incomplete, RespConn, parse


PING = b"*1\r\n$4\r\nPING\r\n"


class SyncStream:
    """A SYNC connection: ``payload`` (the RDB), then ``read_command()`` for
    each propagated command (its argv as bytes).  The master's PINGs (sent
    every repl-ping-replica-period, at wall-clock times) are skipped."""

    def __init__(self, port, timeout=5.0):
        self.conn = RespConn(port, timeout=timeout)
        self.sock = self.conn.sock
        self.conn.send_raw(b"SYNC\r\n")
        self._skip_newlines()
        while b"\r\n" not in self.conn.buf:
            self.conn.recv_more()
            self._skip_newlines()
        head, rest = self.conn.buf.split(b"\r\n", 1)
        assert head[:1] == b"$", head
        n = int(head[1:])
        self.conn.buf = rest
        while len(self.conn.buf) < n:
            self.conn.recv_more()
        self.payload, self.conn.buf = self.conn.buf[:n], self.conn.buf[n:]

    def _skip_newlines(self):
        # the master sends bare newlines while it prepares the payload
        self.conn.buf = self.conn.buf.lstrip(b"\r\n")

    def read_command(self) -> list:
        while True:
            self._skip_newlines()
            if self.conn.buf:
                try:
                    argv, end = parse(self.conn.buf)
                except Incomplete:
                    pass
                else:
                    assert self.conn.buf[:1] == b"*", self.conn.buf[:40]
                    self.conn.buf = self.conn.buf[end:]
                    if argv != [b"PING"]:
                        return argv
                    continue
            self.conn.recv_more()

    def commands(self, n) -> list:
        return [self.read_command() for _ in range(n)]

    def read_until(self, name=b"set") -> list:
        """The commands up to and including the first named name (any case)."""
        out = []
        while True:
            out.append(self.read_command())
            if out[-1][0].lower() == name:
                return out

    def read_until_closed(self, timeout=5.0) -> bytes:
        """What came before the master closed the stream, PINGs left out."""
        return self.conn.read_until_closed(timeout).replace(PING, b"")

    def close(self):
        self.conn.close()


def propagated(port, client, workload, last=b"set", lower=False):
    """Flush, attach a SYNC stream to the server on port, run
    workload(client) and return the commands propagated up to and including
    the first whose name is ``last`` (any case); lower=True: command names
    lower-cased."""
    client.flushall()
    s = SyncStream(port)
    try:
        workload(client)
        cmds = s.read_until(last)
        return [[c[0].lower()] + c[1:] for c in cmds] if lower else cmds
    finally:
        s.close()


def same_stream(server, r, redis_server, ref, config, workload):
    """The commands ``workload(client)`` propagates on redis-server and on
    ours (names lower-cased), asserted equal; returns ours.  Replication
    PINGs are kept out of the streams (``config``: the test's overrides)."""
    for c in (ref, r):
        config(c, repl_diskless_sync="no", repl_ping_replica_period=3600)
    theirs = propagated(redis_server.port, ref, workload, lower=True)
    ours = propagated(server.port, r, workload, lower=True)
    assert ours == theirs
    return ours
