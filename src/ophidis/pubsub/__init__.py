"""Pub/Sub (pubsub.c): channels, patterns and shard channels.

``PubSub`` is the server's registry of subscriptions (``server.pubsub``);
the commands (SUBSCRIBE ... PUBLISH, PUBSUB) are commands/pubsub.py.
Subscribers are kept in insertion-ordered dicts (client -> None) so that
delivery order follows subscription order, as Redis's lists do, and removal
is O(1).

PUBLISH encodes a message once per protocol (RESP2 array, RESP3 push) and
hands the same bytes to every subscriber.  A message for the client that is
running the current command (the publisher, or the writer of a key whose
notification it is subscribed to) waits in ``Client.push_after`` and follows
the reply of that command (``Server.call``; a transaction's or a script's
messages follow the reply of EXEC or EVAL), as Redis 7.2 orders them.  Subscription confirmations are pushes too: they
are delivered even under CLIENT REPLY OFF, like Redis's CLIENT_PUSHING.
"""

from __future__ import annotations

from .. import compiled
from ..keyspace import notify
from ..util import compile_glob

# the compiled fan-out (net/_client.pyx: it writes into the clients' buffers)
_client_c = compiled.load("net._client")

_SUBSCRIBE2 = b"*3\r\n$9\r\nsubscribe\r\n"
_SUBSCRIBE3 = b">3\r\n$9\r\nsubscribe\r\n"
_UNSUBSCRIBE2 = b"*3\r\n$11\r\nunsubscribe\r\n"
_UNSUBSCRIBE3 = b">3\r\n$11\r\nunsubscribe\r\n"
_PSUBSCRIBE2 = b"*3\r\n$10\r\npsubscribe\r\n"
_PSUBSCRIBE3 = b">3\r\n$10\r\npsubscribe\r\n"
_PUNSUBSCRIBE2 = b"*3\r\n$12\r\npunsubscribe\r\n"
_PUNSUBSCRIBE3 = b">3\r\n$12\r\npunsubscribe\r\n"
_SSUBSCRIBE2 = b"*3\r\n$10\r\nssubscribe\r\n"
_SSUBSCRIBE3 = b">3\r\n$10\r\nssubscribe\r\n"
_SUNSUBSCRIBE2 = b"*3\r\n$12\r\nsunsubscribe\r\n"
_SUNSUBSCRIBE3 = b">3\r\n$12\r\nsunsubscribe\r\n"


def _deliver(c, data: bytes):
    """Out-of-band data for one client, in order with its pending replies."""
    if c.closing:
        return
    pw = c.pending_writes
    if pw is not None:
        pw.append(data)
    else:
        c.write([data])


def _confirm(c, hdr2, hdr3, name, count):
    """A (un)subscribe confirmation; name None gives a null (mass
    unsubscribe while subscribed to nothing)."""
    if name is None:
        mid = b"$-1\r\n" if c.resp == 2 else b"_\r\n"
    else:
        mid = b"$%d\r\n%s\r\n" % (len(name), name)
    _deliver(c, (hdr2 if c.resp == 2 else hdr3) + mid + b":%d\r\n" % count)


def _matcher(pattern: bytes):
    # Unlike KEYS/SCAN, a lone "*" gets no shortcut in pub/sub: like every
    # pattern it needs at least one byte of channel name.
    if pattern == b"*":
        return bool
    return compile_glob(pattern)


def _count(c) -> int:
    """Channels + patterns of a client (the count in confirmations)."""
    return len(c.pubsub_channels or ()) + len(c.pubsub_patterns or ())


class PubSub:
    """Server-wide subscriptions: channel -> {client: None}."""

    def __init__(self, server):
        self.server = server
        self.channels: dict = {}
        self.patterns: dict = {}      # pattern -> [matcher, {client: None}]
        self.shard: dict = {}
        notify.set_publisher(self.publish)

    # -- INFO ----------------------------------------------------------------
    def num_channels(self) -> int:
        return len(self.channels)

    def num_patterns(self) -> int:
        return len(self.patterns)

    def num_shard_channels(self) -> int:
        return len(self.shard)

    # -- subscriptions -----------------------------------------------------------
    def subscribe(self, c, channel, shard=False):
        mine = c.pubsub_shard if shard else c.pubsub_channels
        if mine is None:
            mine = {}
            if shard:
                c.pubsub_shard = mine
            else:
                c.pubsub_channels = mine
        if channel not in mine:
            mine[channel] = None
            table = self.shard if shard else self.channels
            subs = table.get(channel)
            if subs is None:
                subs = table[channel] = {}
            subs[c] = None
        if shard:
            _confirm(c, _SSUBSCRIBE2, _SSUBSCRIBE3, channel, len(mine))
        else:
            _confirm(c, _SUBSCRIBE2, _SUBSCRIBE3, channel, _count(c))

    def unsubscribe(self, c, channel, notify_client=True, shard=False) -> bool:
        mine = c.pubsub_shard if shard else c.pubsub_channels
        found = False
        if mine and channel in mine:
            found = True
            del mine[channel]
            table = self.shard if shard else self.channels
            subs = table.get(channel)
            if subs is not None:
                subs.pop(c, None)
                if not subs:
                    del table[channel]
        if notify_client:
            if shard:
                _confirm(c, _SUNSUBSCRIBE2, _SUNSUBSCRIBE3, channel, len(mine or ()))
            else:
                _confirm(c, _UNSUBSCRIBE2, _UNSUBSCRIBE3, channel, _count(c))
        return found

    def psubscribe(self, c, pattern):
        mine = c.pubsub_patterns
        if mine is None:
            mine = c.pubsub_patterns = {}
        if pattern not in mine:
            mine[pattern] = None
            ent = self.patterns.get(pattern)
            if ent is None:
                ent = self.patterns[pattern] = [_matcher(pattern), {}]
            ent[1][c] = None
        _confirm(c, _PSUBSCRIBE2, _PSUBSCRIBE3, pattern, _count(c))

    def punsubscribe(self, c, pattern, notify_client=True) -> bool:
        mine = c.pubsub_patterns
        found = False
        if mine and pattern in mine:
            found = True
            del mine[pattern]
            ent = self.patterns.get(pattern)
            if ent is not None:
                ent[1].pop(c, None)
                if not ent[1]:
                    del self.patterns[pattern]
        if notify_client:
            _confirm(c, _PUNSUBSCRIBE2, _PUNSUBSCRIBE3, pattern, _count(c))
        return found

    def unsubscribe_shard_channels(self, channels):
        """pubsubUnsubscribeShardChannels: every subscriber of these shard
        channels is unsubscribed (and told so); the cluster does this for a
        slot that moved away."""
        for ch in channels:
            for c in list(self.shard.get(ch) or ()):
                self.unsubscribe(c, ch, True, shard=True)

    def unsubscribe_all_channels(self, c, notify_client=True, shard=False) -> int:
        mine = c.pubsub_shard if shard else c.pubsub_channels
        n = 0
        for ch in list(mine or ()):
            n += self.unsubscribe(c, ch, notify_client, shard)
        if notify_client and n == 0:
            if shard:
                _confirm(c, _SUNSUBSCRIBE2, _SUNSUBSCRIBE3, None, 0)
            else:
                _confirm(c, _UNSUBSCRIBE2, _UNSUBSCRIBE3, None, _count(c))
        return n

    def unsubscribe_all_patterns(self, c, notify_client=True) -> int:
        n = 0
        for pat in list(c.pubsub_patterns or ()):
            n += self.punsubscribe(c, pat, notify_client)
        if notify_client and n == 0:
            _confirm(c, _PUNSUBSCRIBE2, _PUNSUBSCRIBE3, None, _count(c))
        return n

    def unsubscribe_all(self, c, notify=False):
        """Disconnect / RESET: drop every subscription silently."""
        if c.pubsub_channels:
            self.unsubscribe_all_channels(c, notify)
        if c.pubsub_patterns:
            self.unsubscribe_all_patterns(c, notify)
        if c.pubsub_shard:
            self.unsubscribe_all_channels(c, notify, shard=True)
        c.pubsub_channels = c.pubsub_patterns = c.pubsub_shard = None
        c.update_slow()

    # -- publishing ----------------------------------------------------------------
    def publish(self, channel: bytes, message: bytes, shard=False) -> int:
        receivers = 0
        subs = (self.shard if shard else self.channels).get(channel)
        body = None
        if subs:
            body = b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(channel), channel, len(message), message)
            kind = b"$8\r\nsmessage\r\n" if shard else b"$7\r\nmessage\r\n"
            receivers = self._fanout(subs, b"*3\r\n" + kind + body, b">3\r\n" + kind + body)
        if shard or not self.patterns:
            return receivers
        if body is None:
            body = b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(channel), channel, len(message), message)
        for pat, (match, psubs) in list(self.patterns.items()):
            if not match(channel):
                continue
            tail = b"$8\r\npmessage\r\n$%d\r\n%s\r\n%s" % (len(pat), pat, body)
            receivers += self._fanout(psubs, b"*4\r\n" + tail, b">4\r\n" + tail)
        return receivers

    def _fanout(self, subs, m2: bytes, m3: bytes) -> int:
        """Hand one pre-encoded message to every subscriber (compiled:
        net/_client.pyx's fanout, the same steps)."""
        if _client_c is not None:
            n = _client_c.fanout(subs, m2, m3)
            if n >= 0:
                return n
        n = 0
        for c in list(subs):
            n += 1
            if c.closing:
                continue
            m = m2 if c.resp == 2 else m3
            if c.pending_writes is not None:
                # the client whose command published: after that command's
                # reply (Server.call), as Redis 7.2 orders them
                pa = c.push_after
                if pa is None:
                    c.push_after = [m]
                else:
                    pa.append(m)
                continue
            c.queue_push(m)
        return n
