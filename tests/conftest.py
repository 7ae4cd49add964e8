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
from support.resp import RespConn
from support.servers import (REDIS_SERVER, ROOT, SRC, RedisServerProc, ServerProc, Starter,  # noqa: F401
                             free_port, logs_of, running_server, server_env)
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
    starter = Starter()
    try:
        yield starter
    finally:
        starter.stop_all()


@pytest.fixture(scope="session")
def redis_server():
    """Debian's redis-server 7.0, the reference implementation."""
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (make test installs it)")
    ref = RedisServerProc()
    try:
        yield ref
    finally:
        ref.stop(remove=True)


@pytest.fixture
def ref(redis_server):
    c = redis_server.client(socket_timeout=10)
    c.flushall()
    yield c
    c.close()


@pytest.fixture
def ref_raw(ref, redis_server, connect):
    return connect(redis_server.port)


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
