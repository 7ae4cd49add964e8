"""Run commands in-process on a real Database, for data that other branches'
commands would create (lists, sets, hashes) and for observing internals
(keyspace notifications, dirty counter)."""

from __future__ import annotations

import os
import sys

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)

from ophidis import notify  # noqa: E402
from ophidis.commands import ALL, load_all, lookup  # noqa: E402
from ophidis.config import Config  # noqa: E402
from ophidis.db import Database  # noqa: E402
from ophidis.errors import RedisError  # noqa: E402
from ophidis.server import Server  # noqa: E402
from ophidis.types.containers import HashValue, ListValue, SetValue  # noqa: E402

load_all()


class FakeClient:
    """A stand-in client on a real (not listening) Server."""

    def __init__(self):
        self.server = Server(Config())
        self.db = self.server.dbs[0]
        self.resp = 2
        self.in_exec = False
        self.in_script = False
        self.multi = None

    @property
    def null(self):
        return b"_\r\n" if self.resp >= 3 else b"$-1\r\n"

    @property
    def null_array(self):
        return b"_\r\n" if self.resp >= 3 else b"*-1\r\n"

    def run(self, *args) -> bytes:
        argv = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        cmd = lookup(argv[0])
        assert cmd is not None, argv[0]
        try:
            return cmd.proc(self, argv)
        except RedisError as e:
            return b"-" + e.msg + b"\r\n"

    # helpers creating values of other families
    def put_list(self, key, items):
        v = ListValue(i.encode() if isinstance(i, str) else i for i in items)
        self.db.d[key.encode() if isinstance(key, str) else key] = v

    def put_set(self, key, items, enc=b"hashtable"):
        v = SetValue(i.encode() if isinstance(i, str) else i for i in items)
        v.enc = enc
        self.db.d[key.encode() if isinstance(key, str) else key] = v

    def put_hash(self, key, mapping):
        v = HashValue({(k.encode() if isinstance(k, str) else k): (x.encode() if isinstance(x, str) else x)
                       for k, x in mapping.items()})
        self.db.d[key.encode() if isinstance(key, str) else key] = v

    def put(self, key, value):
        self.db.d[key.encode() if isinstance(key, str) else key] = value.encode() if isinstance(value, str) else value


class Events:
    """Capture keyspace notifications (all classes, keyevent form)."""

    def __init__(self):
        self.events = []

    def __enter__(self):
        self._old_flags = notify.flags
        self._old_pub = notify._publish
        notify.flags = notify.ALL | notify.KEYEVENT
        notify.set_publisher(self._pub)
        return self

    def _pub(self, channel, msg):
        self.events.append((channel.split(b":", 1)[1], msg))

    def __exit__(self, *exc):
        notify.flags = self._old_flags
        notify.set_publisher(self._old_pub)


__all__ = ["FakeClient", "Events", "ALL"]
