"""Keyspace notifications as a subscriber receives them.

``KeyspaceEvents`` pattern-subscribes a raw connection (default
``__key*__:*``) and also subscribes a marker channel: ``collect()`` publishes
on the marker and returns the messages received before it, so the end of
the events is known from the server's own ordering, not from a pause.
``events_of`` runs commands on a client and returns the events they fire."""

from __future__ import annotations

import redis

from support.resp import RespConn
from support.servers import port_of

MARKER = b"__test_support_marker__"


class KeyspaceEvents:
    def __init__(self, target, pattern="__key*__:*"):
        """target: a port or a redis-py client on the server."""
        port = port_of(target)
        self.sub = RespConn(port)
        self.pub = RespConn(port)
        try:
            assert self.sub.call_value("PSUBSCRIBE", pattern)[0] == b"psubscribe"
            assert self.sub.call_value("SUBSCRIBE", MARKER)[0] == b"subscribe"
        except BaseException:
            self.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def collect_raw(self) -> list:
        """The exact bytes of each message received since the last call."""
        self.pub.call("PUBLISH", MARKER, "end")
        out = []
        while True:
            reply = self.sub.read_reply()
            v = reply.value
            if v[0] == b"message" and v[1] == MARKER:
                return out
            out.append(reply.raw)

    def collect(self) -> list:
        """(channel, message) of each pmessage received since the last call."""
        self.pub.call("PUBLISH", MARKER, "end")
        out = []
        while True:
            v = self.sub.read_value()
            if v[0] == b"message" and v[1] == MARKER:
                return out
            if v[0] == b"pmessage":
                out.append((v[2], v[3]))

    def close(self):
        self.sub.close()
        self.pub.close()


def events_of(client, commands, errors_ok=False) -> list:
    """(channel, message) of every event the ``commands`` (argv lists) run
    on ``client`` fire, with notify-keyspace-events KEA while they run (and
    "" again after).  A command's error reply fails the call unless
    ``errors_ok``."""
    client.config_set("notify-keyspace-events", "KEA")
    try:
        with KeyspaceEvents(client) as ev:
            for args in commands:
                try:
                    client.execute_command(*args)
                except redis.ResponseError:
                    if not errors_ok:
                        raise
            return ev.collect()
    finally:
        client.config_set("notify-keyspace-events", "")
