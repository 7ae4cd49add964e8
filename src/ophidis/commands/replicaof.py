"""REPLICAOF / SLAVEOF and ROLE (the replica side lives in ophidis.replication.replica)."""

from __future__ import annotations

from .. import log
from ..cmdtable.registry import command
from ..errors import RedisError
from ..protocol.resp import OK, bulk, integer
from ..replication import replica


@command("slaveof")      # an alias, as in Redis's command table
@command("replicaof")
def replicaof(c, argv):
    srv = c.server
    if srv.cluster is not None:
        raise RedisError("ERR REPLICAOF not allowed in cluster mode.")
    if srv.repl_feed.failover.state != "no-failover":
        raise RedisError("ERR REPLICAOF not allowed while failing over.")
    if argv[1].lower() == b"no" and argv[2].lower() == b"one":
        if srv.replica_link is not None:
            replica.unset_master(srv)
            log.notice("MASTER MODE enabled (user request from '%s')" % c.info_string())
        return OK
    if c.is_master:
        raise RedisError("ERR Command is not valid when client is a replica.")
    try:
        port = int(argv[2])
    except ValueError:
        port = -1
    if not 0 <= port <= 65535 or argv[2].strip() != argv[2] or not argv[2].lstrip(b"-").isdigit():
        raise RedisError("ERR Invalid master port")
    host = argv[1].decode("utf-8", "replace")
    link = srv.replica_link
    if link is not None and link.host.lower() == host.lower() and link.port == port:
        log.notice("REPLICAOF would result into synchronization with the master we are already "
                   "connected with. No operation performed.")
        return b"+OK Already connected to specified master\r\n"
    replica.set_master(srv, host, port)
    log.notice("REPLICAOF %s:%d enabled (user request from '%s')" % (host, port, c.info_string()))
    return OK


@command("failover")
def failover(c, argv):
    return c.server.repl_feed.failover.command(c, argv)


@command("role")
def role(c, argv):
    srv = c.server
    link = srv.replica_link
    if link is not None:
        return b"*5\r\n" + bulk(b"slave") + bulk(link.host.encode()) + integer(link.port) + \
            bulk(link.role()) + integer(link.offset)
    feed = srv.repl_feed
    feed.prune()
    replicas = []
    for r in feed.replicas:
        st = r.repl
        if st.state != "online":
            continue
        host = st.ip.encode()
        replicas.append(b"*3\r\n" + bulk(host) + bulk(b"%d" % st.port) + bulk(b"%d" % st.ack_off))
    return b"*3\r\n" + bulk(b"master") + integer(feed.offset) + b"*%d\r\n" % len(replicas) + b"".join(replicas)
