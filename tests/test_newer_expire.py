"""Redis 7.0 leftovers of unit/expire (the TCL suite in full mode): the
lazy expiry of SCAN and RANDOMKEY (TOUCHES_ARBITRARY_KEYS commands)
propagates each deletion on its own, not wrapped in MULTI/EXEC, while a
command of fixed keys that expires several of them (MGET) is one unit."""

import time

import pytest
from support.replication import SyncStream


def _stream_of(server, r, command):
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        r.flushall()
        r.set("foo1", "bar", px=1)
        r.set("foo2", "bar", px=1)
        time.sleep(0.01)
        s = SyncStream(server.port)
        try:
            r.execute_command(*command)
            r.set("end", "1")
            out = []
            while not out or out[-1][0].lower() != b"set":
                out.append(s.read_command())
            return [[c[0].lower()] + c[1:] for c in out]
        finally:
            s.close()
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")


@pytest.mark.parametrize("command", [["SCAN", "0"], ["RANDOMKEY"]])
def test_lazy_expire_of_arbitrary_keys_is_not_a_transaction(server, r, command):
    cmds = _stream_of(server, r, command)
    assert cmds[0] == [b"select", b"0"]
    assert sorted(cmds[1:3]) == [[b"del", b"foo1"], [b"del", b"foo2"]]
    assert cmds[3:] == [[b"set", b"end", b"1"]]


def test_lazy_expire_of_a_multi_key_read_is_one_unit(server, r):
    cmds = _stream_of(server, r, ["MGET", "foo1", "foo2"])
    # Redis 7.2+: the SELECT goes inside the MULTI (7.0 sent it before)
    assert cmds == [[b"multi"], [b"select", b"0"], [b"del", b"foo1"], [b"del", b"foo2"], [b"exec"],
                    [b"set", b"end", b"1"]]
