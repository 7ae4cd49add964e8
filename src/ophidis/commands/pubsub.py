"""The pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE,
SSUBSCRIBE, SUNSUBSCRIBE, PUBLISH, SPUBLISH and PUBSUB's subcommands.  The
subscriptions themselves are the server's ``PubSub`` (ophidis/pubsub).
"""

from __future__ import annotations

from ..cmdtable.registry import CHANNEL_PATTERN, CHANNEL_PUBLISH, CHANNEL_SUBSCRIBE, CHANNEL_UNSUBSCRIBE, command
from ..errors import RedisError
from ..protocol.resp import integer
from ..replication.propagate import TO_REPL, force_propagation
from ..util import stringmatch


def _after(c):
    """Recompute the subscriber state (RESP2 subscriber mode, CLIENT LIST)."""
    if not c.pubsub_channels:
        c.pubsub_channels = None
    if not c.pubsub_patterns:
        c.pubsub_patterns = None
    if not c.pubsub_shard:
        c.pubsub_shard = None
    c.update_slow()
    # Returning b"" (not None) lets CLIENT REPLY SKIP account for this command
    # while the confirmations themselves were pushed.
    return b""


@command("subscribe", flags=("pubsub_context",), channels=(CHANNEL_SUBSCRIBE, 1, -1))
def subscribe(c, argv):
    if c.in_script:
        raise RedisError("ERR SUBSCRIBE isn't allowed for a DENY BLOCKING client")
    ps = c.server.pubsub
    for ch in argv[1:]:
        ps.subscribe(c, ch)
    return _after(c)


@command("unsubscribe", flags=("pubsub_context",), channels=(CHANNEL_UNSUBSCRIBE, 1, -1))
def unsubscribe(c, argv):
    ps = c.server.pubsub
    if len(argv) == 1:
        ps.unsubscribe_all_channels(c)
    else:
        for ch in argv[1:]:
            ps.unsubscribe(c, ch)
    return _after(c)


@command("psubscribe", flags=("pubsub_context",), channels=(CHANNEL_PATTERN | CHANNEL_SUBSCRIBE, 1, -1))
def psubscribe(c, argv):
    if c.in_script:
        raise RedisError("ERR PSUBSCRIBE isn't allowed for a DENY BLOCKING client")
    ps = c.server.pubsub
    for pat in argv[1:]:
        ps.psubscribe(c, pat)
    return _after(c)


@command("punsubscribe", flags=("pubsub_context",), channels=(CHANNEL_PATTERN | CHANNEL_UNSUBSCRIBE, 1, -1))
def punsubscribe(c, argv):
    ps = c.server.pubsub
    if len(argv) == 1:
        ps.unsubscribe_all_patterns(c)
    else:
        for pat in argv[1:]:
            ps.punsubscribe(c, pat)
    return _after(c)


@command("ssubscribe", flags=("pubsub_context",), channels=(CHANNEL_SUBSCRIBE, 1, -1))
def ssubscribe(c, argv):
    if c.in_exec or c.in_script:
        raise RedisError("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
    ps = c.server.pubsub
    for ch in argv[1:]:
        ps.subscribe(c, ch, shard=True)
    return _after(c)


@command("sunsubscribe", flags=("pubsub_context",), channels=(CHANNEL_UNSUBSCRIBE, 1, -1))
def sunsubscribe(c, argv):
    ps = c.server.pubsub
    if len(argv) == 1:
        ps.unsubscribe_all_channels(c, shard=True)
    else:
        for ch in argv[1:]:
            ps.unsubscribe(c, ch, shard=True)
    return _after(c)


@command("publish", channels=(CHANNEL_PUBLISH, 1, 1))
def publish(c, argv):
    srv = c.server
    n = srv.pubsub.publish(argv[1], argv[2])
    if srv.cluster is not None:
        srv.cluster.propagate_publish(argv[1], argv[2], False)
    else:
        force_propagation(c, TO_REPL)      # replicas' subscribers get it too
    return integer(n)


@command("spublish", channels=(CHANNEL_PUBLISH, 1, 1))
def spublish(c, argv):
    srv = c.server
    n = srv.pubsub.publish(argv[1], argv[2], shard=True)
    if srv.cluster is not None:
        srv.cluster.propagate_publish(argv[1], argv[2], True)
    return integer(n)


def _channel_list(table, pat):
    items = list(table)
    if pat is not None:
        items = [ch for ch in items if stringmatch(pat, ch)]
    out = [b"*%d\r\n" % len(items)]
    for ch in items:
        out.append(b"$%d\r\n%s\r\n" % (len(ch), ch))
    return b"".join(out)


def _numsub(table, names):
    out = [b"*%d\r\n" % (2 * len(names))]
    for ch in names:
        subs = table.get(ch)
        out.append(b"$%d\r\n%s\r\n:%d\r\n" % (len(ch), ch, len(subs) if subs else 0))
    return b"".join(out)


def _syntax(argv):
    return RedisError("ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP." % (
        argv[1][:128].decode("utf-8", "replace"), argv[0].decode("utf-8", "replace").upper()))


@command("pubsub|channels")
def pubsub_channels(c, argv):
    if len(argv) > 3:
        raise _syntax(argv)
    return _channel_list(c.server.pubsub.channels, argv[2] if len(argv) > 2 else None)


@command("pubsub|shardchannels")
def pubsub_shardchannels(c, argv):
    if len(argv) > 3:
        raise _syntax(argv)
    return _channel_list(c.server.pubsub.shard, argv[2] if len(argv) > 2 else None)


@command("pubsub|numsub")
def pubsub_numsub(c, argv):
    return _numsub(c.server.pubsub.channels, argv[2:])


@command("pubsub|shardnumsub")
def pubsub_shardnumsub(c, argv):
    return _numsub(c.server.pubsub.shard, argv[2:])


@command("pubsub|numpat")
def pubsub_numpat(c, argv):
    return integer(len(c.server.pubsub.patterns))


_HELP = [
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
]


@command("pubsub|help")
def pubsub_help(c, argv):
    out = [b"*%d\r\n" % len(_HELP)]
    for line in _HELP:
        out.append(b"+%s\r\n" % line.encode())
    return b"".join(out)
