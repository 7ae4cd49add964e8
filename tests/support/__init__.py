"""Test support, imported by tests/conftest.py and the test files
(``tests`` and ``src`` are on sys.path through pyproject's pytest
``pythonpath``):

- resp: the byte-exact RESP client (RespConn), encode/inline, parse,
  expected-reply builders (bulk, array, error), exchange, command;
- servers: ServerProc (ophidis-server of this checkout), RedisServerProc
  (Debian's redis-server), Starter (the start_server fixture), free_port,
  server_env, port_of, ROOT/SRC;
- wait: wait_until, wait_port (open and done loading), port_open, serving;
- config: ConfigOverrides (the config fixture), overrides (a with-block);
- notify: KeyspaceEvents (keyspace notifications up to a marker);
- replication: SyncStream (SYNC payload and command stream), propagated;
- clients: outcomes (one command on two servers), scan_to_end;
- inprocess: FakeClient/Events (commands on a Database in this process),
  run_inprocess (in a separate interpreter);
- rdb: the every-type dataset and DUMP payload decoding of the RDB tests;
- modtypes: the tests of Redis 8's built-in types: module_id (their RDB
  records' ids), err, AOF and the round trips (rewrite_aof, aof_base,
  restart, rdb_restart, follow).
"""
