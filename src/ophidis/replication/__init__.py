"""Replication: the propagation API and the one stream of propagated
commands (propagate.py), the master side's feed (master.py), the replica
side's link (replica.py)."""
