"""The server contract: every piece of server state is a declared slot of
``Server``, set by ``__init__``; nothing can add an attribute from outside,
and no module probes the server with getattr/hasattr."""

from __future__ import annotations

import os
import re

import pytest

from ophidis.config import Config
from ophidis.server import server as server_mod
from ophidis.server.server import Server

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src", "ophidis")


@pytest.fixture(scope="module")
def srv():
    return Server(Config())


def test_every_slot_is_set_by_init(srv):
    unset = [name for name in Server.__slots__ if not hasattr(srv, name)]
    assert unset == []


def test_every_field_is_a_slot_or_a_c_field():
    """FIELDS is the contract; the compiled base's C fields are some of it
    (and then not slots), the rest are slots."""
    fields = set(server_mod.FIELDS)
    assert len(fields) == len(server_mod.FIELDS)
    assert set(Server.__slots__) | set(server_mod._C_FIELDS) == fields
    assert not set(Server.__slots__) & set(server_mod._C_FIELDS)
    assert set(server_mod._C_FIELDS) <= fields


def test_undeclared_attribute_cannot_be_set(srv):
    with pytest.raises(AttributeError):
        srv.some_new_subsystem = object()
    assert not hasattr(srv, "__dict__")


def test_subsystems_are_installed(srv):
    for name in ("blocking_handler", "pubsub", "propagator", "functions", "persistence", "aof",
                 "tracking", "memory", "lazyfree", "repl_feed"):
        assert getattr(srv, name) is not None, name
    assert srv.replica_link is None
    assert srv.lazyfree is srv.memory.lazyfree


_PROBE = re.compile(r"\b(?:getattr|hasattr|setattr)\((?:self\.)?(?:server|srv|c\.server|client\.server)\s*,")


def test_no_module_probes_the_server():
    found = []
    for d, _, files in os.walk(SRC):
        for f in files:
            if f.endswith(".py"):
                p = os.path.join(d, f)
                with open(p, encoding="utf-8") as fh:
                    for i, line in enumerate(fh, 1):
                        if _PROBE.search(line):
                            found.append("%s:%d: %s" % (os.path.relpath(p, SRC), i, line.strip()))
    assert found == []
