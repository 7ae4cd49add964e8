"""The one sdscatrepr (ophidis.protocol.resp) against Redis's: MONITOR lines of
the same command on both servers, and redis-cli's quoting of a value."""

import subprocess

from support.resp import RespConn

from ophidis.protocol.resp import sds_needs_repr, sdscatrepr

EVERY_BYTE = bytes(range(256))


def _monitor_args(port, *argv) -> bytes:
    with RespConn(port) as mon, RespConn(port) as c:
        assert mon.call("MONITOR") == b"+OK\r\n"
        c.call(*argv)
        line = mon.read()       # a MONITOR line is a simple-string reply
    # +<time> [<db> <addr>] <args>\r\n
    return line[line.index(b"] ") + 2:-2]


def test_monitor_quoting_matches_redis(server, redis_server):
    argv = (b"SET", b"k \"q\" \\", EVERY_BYTE)
    ours = _monitor_args(server.port, *argv)
    theirs = _monitor_args(redis_server.port, *argv)
    assert ours == theirs
    assert ours == b" ".join(sdscatrepr(a) for a in argv)


def test_cli_quoting_matches_redis_cli(ref):
    ref.set("v", EVERY_BYTE)
    port = ref.connection_pool.connection_kwargs["port"]
    out = subprocess.run(["redis-cli", "-p", str(port), "--no-raw", "GET", "v"],
                         capture_output=True, check=True).stdout
    assert out == sdscatrepr(EVERY_BYTE) + b"\n"


def test_needs_repr():
    assert not sds_needs_repr(b"appendonly.aof.1.incr.aof")
    assert not sds_needs_repr(b"")
    for ch in b" \"\\\n\r\t\a\b\x00\x7f\x80\xff":
        assert sds_needs_repr(b"a%cb" % ch)
