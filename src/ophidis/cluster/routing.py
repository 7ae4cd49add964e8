"""Which node serves a command (getNodeByQuery) and the redirection errors
(clusterRedirectClient): -MOVED, -ASK, -CROSSSLOT, -TRYAGAIN, -CLUSTERDOWN.
The keys come from the one command table (cmdtable.keys.cluster_keys);
a transaction is routed as a whole at EXEC (and its commands as they are
queued)."""

from __future__ import annotations

from ..cmdtable.keys import cluster_keys
from ..errors import RedisError
from .bus import STATE_OK
from .slots import key_hash_slot

REDIR_NONE = 0
REDIR_CROSS_SLOT = 1
REDIR_UNSTABLE = 2
REDIR_ASK = 3
REDIR_MOVED = 4
REDIR_DOWN_STATE = 5
REDIR_DOWN_UNBOUND = 6
REDIR_DOWN_RO_STATE = 7

CROSSSLOT = RedisError("CROSSSLOT Keys in request don't hash to the same slot")
TRYAGAIN = RedisError("TRYAGAIN Multiple keys request during rehashing of slot")
DOWN = RedisError("CLUSTERDOWN The cluster is down")
DOWN_RO = RedisError("CLUSTERDOWN The cluster is down and only accepts read commands")
DOWN_UNBOUND = RedisError("CLUSTERDOWN Hash slot not served")

_SHARD_PUBSUB = frozenset(("ssubscribe", "sunsubscribe", "spublish"))


def may_have_keys(cmd) -> bool:
    """processCommand's condition for routing: key specs, a key
    extractor, or EXEC."""
    return bool(cmd.key_specs) or cmd.fullname == "exec" or cmd.getkeys_proc is not None


def get_node_by_query(cluster, c, cmd, argv, asking: bool, write=None):
    """(node, slot, error code): node is None on an error, else the node
    that must serve the command (ours: no redirection); slot is -1 when
    the command has no keys."""
    myself = cluster.myself
    if cmd.fullname == "exec":
        if c.multi is None:
            return myself, -1, REDIR_NONE
        commands = c.multi
    else:
        commands = ((cmd, argv),)
    # (7.2: a transaction with sharded pub/sub in it is one, as the command)
    pubsubshard = False
    first = None
    slot = 0
    n = None
    multiple = False
    migrating = importing = False
    missing = existing = 0
    db = c.server.dbs[0]
    for mcmd, margv in commands:
        if not pubsubshard and mcmd.fullname in _SHARD_PUBSUB:
            pubsubshard = True
        for key in cluster_keys(mcmd, margv):
            this = key_hash_slot(key)
            if first is None:
                first = key
                slot = this
                n = cluster.slots[slot]
                if n is None:
                    return None, slot, REDIR_DOWN_UNBOUND
                if n is myself and slot in cluster.migrating:
                    migrating = True
                elif slot in cluster.importing:
                    importing = True
            elif key != first:
                if slot != this:
                    return None, slot, REDIR_CROSS_SLOT
                multiple = True
            if (migrating or importing) and not pubsubshard:
                if db.is_live(key):
                    existing += 1
                else:
                    missing += 1
    if n is None:
        return myself, -1, REDIR_NONE
    if write is None:       # (the caller knows better for scripts: their declared flags)
        write = cmd.write or (cmd.fullname == "exec" and any(q[0].write for q in commands))
    if cluster.state != STATE_OK:
        cfg = c.server.config
        if pubsubshard:
            if not cfg["cluster-allow-pubsubshard-when-down"]:
                return None, slot, REDIR_DOWN_STATE
        elif not cfg["cluster-allow-reads-when-down"]:
            return None, slot, REDIR_DOWN_STATE
        elif write:
            return None, slot, REDIR_DOWN_RO_STATE
    if (migrating or importing) and cmd.fullname == "migrate":
        return myself, slot, REDIR_NONE
    if migrating and missing:
        if existing:
            return None, slot, REDIR_UNSTABLE
        return cluster.migrating[slot], slot, REDIR_ASK
    if importing and (asking or "asking" in cmd.flags):
        if multiple and missing:
            return None, slot, REDIR_UNSTABLE
        return myself, slot, REDIR_NONE
    if (c.cluster_readonly or pubsubshard) and not write and myself.is_slave and myself.slaveof is n:
        return myself, slot, REDIR_NONE
    return n, slot, (REDIR_MOVED if n is not myself else REDIR_NONE)


def script_cluster_check(cluster, ctx, cmd, argv):
    """scriptVerifyClusterState: the error text (bytes) for a command a
    script may not run here, else None."""
    node, slot, code = get_node_by_query(cluster, ctx.caller, cmd, argv, False)
    if node is not cluster.myself:
        if code == REDIR_DOWN_RO_STATE:
            return b"ERR Script attempted to execute a write command while the cluster is down and readonly"
        if code == REDIR_DOWN_STATE:
            return b"ERR Script attempted to execute a command while the cluster is down"
        return b"ERR Script attempted to access a non local key in a cluster node"
    if slot != -1 and not ctx.cross_slot:
        if ctx.slot == -1:
            ctx.slot = slot
        elif ctx.slot != slot:
            return b"ERR Script attempted to access keys that do not hash to the same slot"
    return None


def redirect_error(cluster, c, node, slot: int, code: int) -> RedisError:
    """clusterRedirectClient's error."""
    if code == REDIR_CROSS_SLOT:
        return CROSSSLOT
    if code == REDIR_UNSTABLE:
        return TRYAGAIN
    if code == REDIR_DOWN_STATE:
        return DOWN
    if code == REDIR_DOWN_RO_STATE:
        return DOWN_RO
    if code == REDIR_DOWN_UNBOUND:
        return DOWN_UNBOUND
    return RedisError("%s %d %s:%d" % ("ASK" if code == REDIR_ASK else "MOVED", slot,
                                       cluster.preferred_endpoint(node),
                                       node.pport if node.pport and cluster.use_pport(c) else node.port))


def blocked_redirect(cluster, c):
    """clusterRedirectBlockedClientIfNeeded: the error a client blocked on
    keys gets when their slot is no longer ours (or the cluster is down),
    else None."""
    if cluster.state != STATE_OK:
        return DOWN
    key = c.bstate.keys[0]
    slot = key_hash_slot(key)
    node = cluster.slots[slot]
    myself = cluster.myself
    last = c.last_cmd
    if c.cluster_readonly and last is not None and not last.write and myself.is_slave and myself.slaveof is node:
        node = myself
    if node is not myself and slot not in cluster.importing:
        if node is None:
            return DOWN_UNBOUND
        return redirect_error(cluster, c, node, slot, REDIR_MOVED)
    return None


def redirect_blocked_clients(cluster):
    """Clients blocked on keys of a slot we no longer serve (or while the
    cluster is down) get the redirection and are unblocked."""
    srv = cluster.srv
    bh = srv.blocking_handler
    if not bh.nblocked:
        return
    for c in list(srv.clients.values()):
        st = c.bstate
        if st is None or not st.keys or c.closing:
            continue
        e = blocked_redirect(cluster, c)
        if e is not None:
            bh.finish(c, c.error_reply(e, c.last_cmd))
