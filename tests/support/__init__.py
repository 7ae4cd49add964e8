"""Test support: the byte-exact RESP client (resp), server processes
(servers), waits (wait), CONFIG SET overrides that are restored (config),
the replication stream of SYNC (replication), in-process command runs on
this checkout's code (inprocess) and the RDB helpers (rdb).

tests/conftest.py turns these into fixtures; test files import what they
use from here, e.g. ``from support.resp import RespConn, bulk``."""
