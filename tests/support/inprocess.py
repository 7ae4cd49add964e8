"""Commands run on this checkout's command table without a listening server:
``FakeClient`` runs them in this process on a real Server's database (to build values
directly and to observe internals: keyspace notifications with ``Events``,
the dirty counter); ``run_inprocess`` runs them in a separate interpreter
(notifications, replies, dirty counter, what would be propagated)."""

from __future__ import annotations

import json
import subprocess
import sys

from support.servers import server_env

from ophidis.cmdtable.registry import ALL, lookup
from ophidis.commands import load_all
from ophidis.config import Config
from ophidis.errors import RedisError
from ophidis.keyspace import notify
from ophidis.server.server import Server
from ophidis.types.containers import HashValue, ListValue, SetValue

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
        self.user = self.server.acl.default

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


__all__ = ["FakeClient", "Events", "ALL", "run_inprocess"]


_INPROCESS = r'''
import json, sys
from ophidis.keyspace import notify
from ophidis.cmdtable.registry import TABLE
from ophidis.commands import load_all
from ophidis.config import Config
from ophidis.errors import RedisError
from ophidis.server.server import Server

load_all()
srv = Server(Config())
events = []
notify.set_publisher(lambda ch, msg: events.append([ch.decode(), msg.decode()]))
notify.flags = notify.parse_flags("KEA")


class Client:
    resp = 2
    null = b"$-1\r\n"
    server = srv
    db = srv.dbs[0]
    last_cmd = None
    in_exec = False
    in_script = False
    multi = None


replies = []
argvs = []
spec = json.loads(sys.stdin.read())
if spec["hooks"]:
    srv.propagate_hooks.append(lambda *a, **kw: None)
for args in spec["commands"]:
    argv = [a.encode() for a in args]
    cmd = TABLE[argv[0].lower()]
    Client.last_cmd = cmd
    try:
        replies.append(cmd.proc(Client, argv).decode())
    except RedisError as e:
        replies.append("-" + str(e))
    argvs.append(srv.propagator.rewritten or argv)
    srv.propagator.rewritten = None
print(json.dumps({"events": events, "replies": replies, "dirty": srv.dirty,
                  "argvs": [[a.decode() for a in v] for v in argvs]}))
'''


def run_inprocess(commands, hooks=False, full=False):
    """Run commands against this checkout's command table in a separate
    interpreter with a stub client, capturing keyspace notifications.
    Returns (events as (channel, message) bytes, replies), or the whole
    result dict with full=True.  hooks=True pretends a propagation target
    (AOF/replica) is attached: argvs are then what would be propagated (the
    argv as called, or as the command rewrote it with
    propagate.rewrite_argv)."""
    out = subprocess.run([sys.executable, "-c", _INPROCESS],
                         input=json.dumps({"commands": commands, "hooks": hooks}),
                         capture_output=True, text=True, env=server_env(), timeout=60, check=True)
    data = json.loads(out.stdout)
    if full:
        return data
    events = [(c.encode(), m.encode()) for c, m in data["events"]]
    return events, data["replies"]
