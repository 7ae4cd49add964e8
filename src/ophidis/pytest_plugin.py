"""The pytest plugin (entry point ``pytest11``: installed with ophidis, it is
active in every pytest run of that environment; nothing starts until a
test asks for a fixture).

Fixtures:

- ``ophidis_server``: an ``ophidis.embedded.Server`` for the whole session
  (under pytest-xdist, one per worker: each worker is its own session);
- ``ophidis_client``: a redis-py client on it, the server flushed
  (FLUSHALL) before each test;
- ``ophidis_server_factory``: ``make(**directives)`` starts more servers
  (the same arguments as ``Server``), all stopped at the test's end.

Options: ``--ophidis-config FILE`` (a redis.conf the session's server reads
first), ``--ophidis-arg NAME=VALUE`` (a directive, repeatable; the value's
words as in redis.conf), ``--ophidis-unixsocket`` (serve the session's
server on a unix socket instead of TCP).  The same can be set in the ini
file as ``ophidis_config``, ``ophidis_args`` (lines of NAME=VALUE) and
``ophidis_unixsocket``.
"""

from __future__ import annotations

import pytest

from .embedded import Server


def pytest_addoption(parser):
    group = parser.getgroup("ophidis", "ophidis-server fixtures")
    group.addoption("--ophidis-config", metavar="FILE", default=None,
                    help="redis.conf for the ophidis_server fixture")
    group.addoption("--ophidis-arg", metavar="NAME=VALUE", action="append", default=[],
                    help="a configuration directive for the ophidis_server fixture (repeatable)")
    group.addoption("--ophidis-unixsocket", action="store_true", default=None,
                    help="serve the ophidis_server fixture on a unix socket instead of TCP")
    parser.addini("ophidis_config", "redis.conf for the ophidis_server fixture", default=None)
    parser.addini("ophidis_args", "configuration directives (NAME=VALUE lines) for ophidis_server",
                  type="linelist", default=[])
    parser.addini("ophidis_unixsocket", "serve ophidis_server on a unix socket", type="bool", default=False)


def _directives(items) -> dict:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise pytest.UsageError("--ophidis-arg wants NAME=VALUE, got %r" % item)
        out[name.strip()] = value.strip()
    return out


def session_server(config) -> Server:
    """The Server the options and ini settings describe (not started)."""
    conf = config.getoption("ophidis_config") or config.getini("ophidis_config") or None
    unix = config.getoption("ophidis_unixsocket")
    if unix is None:
        unix = config.getini("ophidis_unixsocket")
    directives = _directives(list(config.getini("ophidis_args")) + config.getoption("ophidis_arg"))
    return Server(directives, config_file=conf, unixsocket=bool(unix))


@pytest.fixture(scope="session")
def ophidis_server(pytestconfig):
    srv = session_server(pytestconfig)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def ophidis_client(ophidis_server):
    client = ophidis_server.client()
    client.flushall()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def ophidis_server_factory():
    started = []

    def make(config=None, **kw) -> Server:
        srv = Server(config, **kw)
        started.append(srv)
        return srv.start()

    try:
        yield make
    finally:
        for srv in started:
            srv.stop()
