"""The embedded server (ophidis.embedded.Server) and the pytest plugin
(ophidis.pytest_plugin), the plugin run by pytester on small test projects
of their own in a pytest subprocess (TCP, unix socket, xdist workers, a
server that fails to start)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import urllib.request

import pytest
import redis
from support.servers import ROOT, SRC

import ophidis
from ophidis.embedded import Server, ServerStartError, free_port

pytest_plugins = ["pytester"]

# the plugin's runs test the plugin, not the request loop: once is enough
plugin_run = pytest.mark.skipif(os.environ.get("OPHIDIS_PURE") == "1",
                                reason="the plugin does not depend on the request loop (run without OPHIDIS_PURE)")


def test_import_ophidis_loads_no_server():
    out = subprocess.run(
        [sys.executable, "-c", "import sys, ophidis; print(sorted(m for m in sys.modules if m.startswith('ophidis')))"],
        env=dict(os.environ, PYTHONPATH=SRC), capture_output=True, text=True, timeout=30, check=True).stdout
    assert out.strip() == "['ophidis', 'ophidis.sysinfo']"
    assert ophidis.Server is Server and ophidis.ServerStartError is ServerStartError
    with pytest.raises(AttributeError):
        ophidis.NoSuchThing


def test_server_directives_context_manager_and_stop():
    srv = Server({"maxmemory-policy": "allkeys-lru"}, maxmemory="10mb", save="900 1 300 10", appendonly=True)
    with srv:
        assert srv.running and srv.url == "redis://127.0.0.1:%d" % srv.port
        r = srv.client()
        assert r.config_get("maxmemory")["maxmemory"] == "10485760"
        assert r.config_get("maxmemory-policy")["maxmemory-policy"] == "allkeys-lru"
        assert r.config_get("save")["save"] == "900 1 300 10"
        assert r.config_get("appendonly")["appendonly"] == "yes"
        assert r.config_get("dir")["dir"] == srv.dir
        assert r.set("k", "v") and r.get("k") == b"v"
        r.close()
        d = srv.dir
        assert os.path.isdir(d)
    assert not srv.running and srv.proc.returncode is not None
    assert not os.path.exists(d)        # the temporary directory is gone


def test_server_unix_socket_and_start_stop(tmp_path):
    srv = Server(unixsocket=True, dir=str(tmp_path))
    try:
        srv.start()
        assert srv.url == "unix://" + os.path.join(str(tmp_path), "ophidis.sock")
        r = srv.client()
        assert r.ping() and r.config_get("port")["port"] == "0"
        r.close()
        # redis-py's own URL parsing reaches the same server
        r = redis.Redis.from_url(srv.url)
        assert r.echo("x") == b"x"
        r.close()
    finally:
        srv.stop()
    assert not srv.running
    assert os.path.isdir(tmp_path)      # a directory the caller gave is kept


def test_server_start_failure_shows_the_log():
    srv = Server(maxmemory="lots")
    with pytest.raises(ServerStartError) as e:
        srv.start()
    assert "exited with status 1" in str(e.value)
    assert "FATAL CONFIG FILE ERROR" in str(e.value) and "argument must be a memory value" in str(e.value)
    assert not srv.running and not os.path.exists(srv.dir)
    with pytest.raises(TypeError):      # port, dir, bind, unixsocket are Server's own arguments
        Server({"port": 1})


def test_client_without_redis_py():
    code = ("import sys; sys.modules['redis'] = None; import ophidis\n"
            "try:\n    ophidis.Server().client()\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=SRC),
                         capture_output=True, text=True, timeout=30, check=True).stdout
    assert out.startswith("Server.client() needs redis-py: pip install redis")


def test_entry_point_declared():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        eps = tomllib.load(f)["project"]["entry-points"]["pytest11"]
    assert eps == {"ophidis.pytest_plugin": "ophidis.pytest_plugin"}


PROJECT = '''
import os, sys

def test_set(ophidis_client, ophidis_server):
    assert ophidis_client.set("k", "1")
    assert ophidis_client.config_get("maxmemory-policy")["maxmemory-policy"] == "allkeys-lru"
    assert ophidis_client.config_get("hz")["hz"] == "25"
    with open(os.path.join(os.environ["OUT_DIR"], "%d" % ophidis_server.pid), "w") as f:
        f.write(ophidis_server.url)

def test_flushed(ophidis_client):
    assert ophidis_client.get("k") is None       # flushed before each test

def test_factory(ophidis_server_factory, ophidis_server):
    other = ophidis_server_factory(maxmemory="1mb")
    assert other.port != ophidis_server.port
    assert other.client().config_get("maxmemory")["maxmemory"] == "1048576"
'''


def _project(pytester, monkeypatch, tmp_path, conf="hz 25\n"):
    # the subprocess runs this checkout's ophidis, the plugin loaded by name
    # (and no other: hypothesis's alone takes seconds to import)
    monkeypatch.setenv("PYTHONPATH", SRC)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("OUT_DIR", str(tmp_path))
    pytester.makeini("[pytest]\naddopts = -p ophidis.pytest_plugin -p no:cacheprovider\n")
    pytester.makefile(".conf", server=conf)
    pytester.makepyfile(test_app=PROJECT)


@plugin_run
def test_plugin_tcp_with_xdist_workers(pytester, monkeypatch, tmp_path):
    _project(pytester, monkeypatch, tmp_path)
    res = pytester.runpytest_subprocess("--ophidis-config", "server.conf", "--ophidis-arg",
                                        "maxmemory-policy=allkeys-lru", "-p", "xdist.plugin", "-n", "2", "--dist", "each",
                                        "-k", "not factory", timeout=120)
    res.assert_outcomes(passed=4)
    urls = [open(os.path.join(tmp_path, p)).read() for p in os.listdir(tmp_path)]
    assert len(urls) == 2 and len(set(urls)) == 2        # one server per worker
    assert all(u.startswith("redis://127.0.0.1:") for u in urls)


@plugin_run
def test_plugin_unix_socket(pytester, monkeypatch, tmp_path):
    _project(pytester, monkeypatch, tmp_path)
    res = pytester.runpytest_subprocess("--ophidis-config", "server.conf", "--ophidis-arg",
                                        "maxmemory-policy=allkeys-lru", "--ophidis-unixsocket", timeout=120)
    res.assert_outcomes(passed=3)
    (url,) = [open(os.path.join(tmp_path, p)).read() for p in os.listdir(tmp_path)]
    assert url.startswith("unix://") and url.endswith("/ophidis.sock")


@plugin_run
def test_plugin_start_failure_shows_the_server_log(pytester, monkeypatch, tmp_path):
    _project(pytester, monkeypatch, tmp_path, conf="hz 25\nno-such-directive yes\n")
    res = pytester.runpytest_subprocess("--ophidis-config", "server.conf", "-k", "flushed", timeout=120)
    res.assert_outcomes(errors=1, deselected=2)
    res.stdout.fnmatch_lines(["*ServerStartError*exited with status 1*", "*FATAL CONFIG FILE ERROR*",
                              "*no-such-directive*", "*Bad directive or wrong number of arguments*"])


def test_server_with_metrics_is_ready_when_metrics_listen():
    port = free_port()
    with Server(metrics_port=port) as srv:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as resp:
            assert b"redis_up 1.0" in resp.read()
        assert srv.running
