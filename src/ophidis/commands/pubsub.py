"""The pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE,
SSUBSCRIBE, SUNSUBSCRIBE, PUBLISH, SPUBLISH and PUBSUB's subcommands.  The
subscriptions themselves are the server's ``PubSub`` (ophidis/pubsub).
"""

from __future__ import annotations

from functools import partial

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


def _subscribe(c, argv, name, add, no_exec=False):
    # SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE: add(c, target) for each argument
    if c.in_script or (no_exec and c.in_exec):
        raise RedisError("ERR %s isn't allowed for a DENY BLOCKING client" % name)
    for target in argv[1:]:
        add(c, target)
    return _after(c)


def _unsubscribe(c, argv, remove_all, remove):
    # UNSUBSCRIBE, PUNSUBSCRIBE, SUNSUBSCRIBE: all of them, or the arguments
    if len(argv) == 1:
        remove_all(c)
    else:
        for target in argv[1:]:
            remove(c, target)
    return _after(c)


@command("subscribe", flags=("pubsub_context",), channels=(CHANNEL_SUBSCRIBE, 1, -1))
def subscribe(c, argv):
    return _subscribe(c, argv, "SUBSCRIBE", c.server.pubsub.subscribe)


@command("unsubscribe", flags=("pubsub_context",), channels=(CHANNEL_UNSUBSCRIBE, 1, -1))
def unsubscribe(c, argv):
    ps = c.server.pubsub
    return _unsubscribe(c, argv, ps.unsubscribe_all_channels, ps.unsubscribe)


@command("psubscribe", flags=("pubsub_context",), channels=(CHANNEL_PATTERN | CHANNEL_SUBSCRIBE, 1, -1))
def psubscribe(c, argv):
    return _subscribe(c, argv, "PSUBSCRIBE", c.server.pubsub.psubscribe)


@command("punsubscribe", flags=("pubsub_context",), channels=(CHANNEL_PATTERN | CHANNEL_UNSUBSCRIBE, 1, -1))
def punsubscribe(c, argv):
    ps = c.server.pubsub
    return _unsubscribe(c, argv, ps.unsubscribe_all_patterns, ps.punsubscribe)


@command("ssubscribe", flags=("pubsub_context",), channels=(CHANNEL_SUBSCRIBE, 1, -1))
def ssubscribe(c, argv):
    return _subscribe(c, argv, "SSUBSCRIBE", partial(c.server.pubsub.subscribe, shard=True), no_exec=True)


@command("sunsubscribe", flags=("pubsub_context",), channels=(CHANNEL_UNSUBSCRIBE, 1, -1))
def sunsubscribe(c, argv):
    ps = c.server.pubsub
    return _unsubscribe(c, argv, partial(ps.unsubscribe_all_channels, shard=True), partial(ps.unsubscribe, shard=True))


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
    "    Print this help.",
]


@command("pubsub|help")
def pubsub_help(c, argv):
    out = [b"*%d\r\n" % len(_HELP)]
    for line in _HELP:
        out.append(b"+%s\r\n" % line.encode())
    return b"".join(out)
