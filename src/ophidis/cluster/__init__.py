"""Redis Cluster (cluster.c): this node's view of the cluster and its part in
it.  ``Cluster`` is the server's ``cluster`` subsystem (None unless
``cluster-enabled yes``):

  state.py     the state (``Cluster``): nodes, slot owners, importing/migrating slots,
               epochs, the cluster state (ok/fail), nodes.conf (locked,
               written atomically), CLUSTER RESET, the work to do "before
               sleep" (save the config, update the state)
  node.py      a node (clusterNode), its CLUSTER NODES line, nodes.conf's parser
  slots.py     key -> hash slot, the per-slot key index of database 0
  bus.py       the cluster bus messages, byte for byte (pure functions)
  links.py     the bus connections (listener, outbound links, framing)
  gossip.py    what a received message does (clusterProcessPacket) and the
               messages we send (PING/PONG/MEET gossip, FAIL, UPDATE, PUBLISH)
  failover.py  failure detection, replica elections, manual failover,
               replica migration, the 100 ms cron
  routing.py   which node serves a command (getNodeByQuery), the redirections
  slot_stats.py  CLUSTER SLOT-STATS's per-slot counters (dispatch feeds them)
  asm.py       atomic slot migration (CLUSTER MIGRATION, CLUSTER SYNCSLOTS)

The CLUSTER command family is commands/cluster.py.
"""

from __future__ import annotations

from .slots import SLOTS, key_hash_slot, pattern_hash_slot

__all__ = ["SLOTS", "key_hash_slot", "pattern_hash_slot"]

# the "before sleep" work (clusterDoBeforeSleep's flags), asked for by the
# state, the message handlers, the cron and the CLUSTER commands
TODO_HANDLE_FAILOVER = 1
TODO_UPDATE_STATE = 2
TODO_SAVE_CONFIG = 4
TODO_FSYNC_CONFIG = 8
TODO_HANDLE_MANUALFAILOVER = 16

MF_TIMEOUT = 5000       # a manual failover's time limit (ms)
