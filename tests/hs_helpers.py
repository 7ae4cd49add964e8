"""Helpers shared by the hash and set tests: a raw RESP connection that
returns reply bytes exactly, config overrides that are restored, and
keyspace-notification capture (skipped while pub/sub is absent)."""

from __future__ import annotations

import contextlib
import socket
import time

import hiredis
import pytest



def encode_request(*args) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = b"%d" % a
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Raw:
    """One connection; ``call`` returns the exact bytes of one reply."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.reader = hiredis.Reader()

    def call(self, *args) -> bytes:
        self.sock.sendall(encode_request(*args))
        buf = b""
        while True:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("closed")
            buf += data
            self.reader.feed(data)
            if self.reader.gets() is not False:
                return buf

    def close(self):
        self.sock.close()


@contextlib.contextmanager
def config(client, **settings):
    """CONFIG SET name value ... for the block, restoring the old values."""
    old = {}
    for name, value in settings.items():
        name = name.replace("_", "-")
        old[name] = list(client.config_get(name).values())[0]
        client.config_set(name, value)
    try:
        yield
    finally:
        for name, value in old.items():
            client.config_set(name, value)


def port_of(client) -> int:
    return client.connection_pool.connection_kwargs["port"]


class Events:
    """Keyspace notifications received by a subscriber on a server."""

    def __init__(self, client):
        self.client = client
        raw = Raw(port_of(client))
        reply = raw.call("PSUBSCRIBE", "__key*__:*")
        if reply.startswith(b"-"):
            raw.close()
            pytest.skip("pub/sub is not available in this build")
        self.raw = raw
        self.raw.sock.settimeout(0.3)

    def collect(self):
        """Events since the last call: list of (channel, message)."""
        time.sleep(0.05)
        buf = b""
        try:
            while True:
                data = self.raw.sock.recv(1 << 16)
                if not data:
                    break
                buf += data
        except socket.timeout:
            pass
        reader = hiredis.Reader()
        reader.feed(buf)
        out = []
        while True:
            msg = reader.gets()
            if msg is False:
                break
            if msg[0] == b"pmessage":
                out.append((msg[2], msg[3]))
        return out

    def close(self):
        self.raw.close()


_INPROCESS = r'''
import json, sys
from ophidis import notify
from ophidis.commands import TABLE, load_all
from ophidis.config import Config
from ophidis.errors import RedisError
from ophidis.server import Server

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
    interpreter with a stub client, capturing keyspace notifications (works
    without pub/sub).  Returns (events as (channel, message) bytes, replies),
    or the whole result dict with full=True.  hooks=True pretends a
    propagation target (AOF/replica) is attached: argvs are then what would
    be propagated (the argv as called, or as the command rewrote it with
    propagate.rewrite_argv)."""
    import json
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(root, "src")
    out = subprocess.run([sys.executable, "-c", _INPROCESS],
                         input=json.dumps({"commands": commands, "hooks": hooks}),
                         capture_output=True, text=True, env=env, timeout=60, check=True)
    data = json.loads(out.stdout)
    if full:
        return data
    events = [(c.encode(), m.encode()) for c, m in data["events"]]
    return events, data["replies"]
