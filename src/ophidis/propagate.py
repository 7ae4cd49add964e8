"""Propagation of write commands to the AOF and to replicas (server.c's
alsoPropagate / propagatePendingCommands).

One ``Propagator`` per server collects what a command changed, as Redis
7.0 propagates it, and hands each finished unit to its targets (the AOF,
the replication feed):

* ``Server.call`` runs ``hook(c, cmd, argv)`` after a command that changed
  the dataset (``server.dirty``); deletions of expired or evicted keys
  arrive through ``Server.propagate_del`` with ``c`` None.  Commands that
  Redis replicates in another form rewrite their argv first (SPOP -> SREM,
  BLPOP -> LPOP, INCRBYFLOAT -> SET KEEPTTL ...) or feed the hooks directly
  (a blocked client served later).
* ``translate`` makes relative expire times absolute (SET ... PXAT,
  PEXPIREAT, RESTORE ... ABSTTL) as Redis's propagation does.
* A unit is what one top-level command produced: the effects of a
  transaction or a script are wrapped in MULTI ... EXEC when they are more
  than one command (not for commands touching arbitrary keys, nor for
  effects produced outside any command, such as active expiry).
* Each propagated command is encoded as RESP once; targets receive
  ``feed(ops, wrap)`` with ops a list of ``(dbid, encoded, mask)`` and emit
  their own SELECTs.  ``mask``: 1 = AOF, 2 = replicas (a script's
  ``redis.set_repl``); a target's ``bit`` says which one it is.

The hook is installed in ``server.propagate_hooks`` only while a target is
attached, so a server without AOF and replicas pays nothing per command.
"""

from __future__ import annotations

from .protocol import encode_argv

TO_AOF = 1
TO_REPL = 2

# Commands that are never propagated themselves: their effects are (the
# commands they run) or they have none a replica or the AOF should see.
NOT_PROPAGATED = frozenset((
    "exec", "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro",
    "script|load", "script|flush", "script|kill", "multi", "discard",
    "sync", "psync", "replconf", "debug", "save", "bgsave", "bgrewriteaof", "config|set",
))
_PROPAGATED_FUNCTION = frozenset(("function|load", "function|delete", "function|flush", "function|restore"))

_TTL_SET_OPTS = (b"ex", b"px", b"exat", b"pxat")


# A command as a RESP array of bulk strings.
resp = encode_argv


def _is_get(a) -> bool:
    return len(a) == 3 and a.lower() == b"get"


def translate(server, name, argv, dbid):
    """Redis 7.0's propagation rewrites (rewriteClientCommandVector and
    rewriteClientCommandArgument in the commands): relative expire times
    become absolute, and some commands propagate as their effect.
    Returns the argv to propagate, or None for nothing."""
    db = server.dbs[dbid]
    if name in ("expire", "pexpire", "expireat", "pexpireat"):
        key = argv[1]
        if key not in db.d:
            # the time was in the past: the key was deleted
            return [b"UNLINK" if server.config["lazyfree-lazy-expire"] else b"DEL", key]
        when = db.expires.get(key)
        if when is None:
            return list(argv)
        if name == "pexpireat":
            return list(argv)
        return [b"PEXPIREAT", key, b"%d" % when] + list(argv[3:])
    if name == "set" or name == "setex" or name == "psetex":
        if name == "set":
            key, val = argv[1], argv[2]
            expire = False
            get = False
            i = 3
            n = len(argv)
            while i < n:
                a = argv[i].lower()
                if a in _TTL_SET_OPTS and i + 1 < n:
                    expire = True
                    i += 2
                    continue
                if a == b"get":
                    get = True
                i += 1
        else:
            key, val = argv[1], argv[3]
            expire = True
            get = False
        if expire:
            when = db.expires.get(key)
            if when is not None:
                return [b"SET", key, val, b"PXAT", b"%d" % when]
            return list(argv)
        if get:
            return argv[:3] + [a for a in argv[3:] if not _is_get(a)]
        return list(argv)
    if name == "getset":
        return [b"SET"] + list(argv[1:])
    if name == "getex":
        key = argv[1]
        if key not in db.d:
            return [b"UNLINK" if server.config["lazyfree-lazy-expire"] else b"DEL", key]
        opts = [a.lower() for a in argv[2:]]
        if b"persist" in opts:
            return [b"PERSIST", key]
        when = db.expires.get(key)
        if when is not None and opts:
            return [b"PEXPIREAT", key, b"%d" % when]
        return None
    if name == "getdel":
        return [b"UNLINK" if server.config["lazyfree-lazy-user-del"] else b"DEL", argv[1]]
    if name == "incrbyfloat":
        # The result, not the float arithmetic (KEEPTTL: the TTL stays).
        v = db.d.get(argv[1])
        if v is not None and isinstance(v, (bytes, bytearray)):
            return [b"SET", argv[1], bytes(v), b"KEEPTTL"]
        return list(argv)
    if name == "restore":
        opts = [a.lower() for a in argv[4:]]
        if b"absttl" not in opts and argv[2] not in (b"0",):
            when = db.expires.get(argv[1])
            if when is not None:
                out = list(argv)
                out[2] = b"%d" % when
                out.append(b"ABSTTL")
                return out
        return list(argv)
    return list(argv)


class Propagator:
    def __init__(self, server):
        self.server = server
        self.targets = []
        self.active = 0          # TO_AOF | TO_REPL of the attached targets
        self.pending = []        # (dbid, argv, mask)
        self.flush_scheduled = False
        self.arbitrary = False   # a command touching arbitrary keys: no MULTI

    # -- targets -----------------------------------------------------------------------
    def attach(self, target):
        if target not in self.targets:
            self.targets.append(target)
        self.active |= target.bit
        srv = self.server
        if self.hook not in srv.propagate_hooks:
            srv.propagate_hooks.append(self.hook)
            srv.update_server_slow()

    def detach(self, target):
        if target in self.targets:
            self.targets.remove(target)
        self.active = 0
        for t in self.targets:
            self.active |= t.bit
        if not self.targets:
            self.pending = []
            srv = self.server
            if self.hook in srv.propagate_hooks:
                srv.propagate_hooks.remove(self.hook)
                srv.update_server_slow()

    # -- collecting ----------------------------------------------------------------------
    def hook(self, c, cmd, argv, db=None):
        srv = self.server
        if srv.loading:
            return          # replaying a file: nothing is propagated (as Redis)
        if db is None:
            dbid = c.db.id if c is not None else 0
        else:
            dbid = getattr(db, "id", db)
        name = cmd.fullname if cmd is not None else ""
        in_script = c is not None and c.in_script
        if name not in NOT_PROPAGATED and (not name.startswith("function|") or name in _PROPAGATED_FUNCTION):
            out = translate(srv, name, argv, dbid)
            if out is not None:
                mask = TO_AOF | TO_REPL
                if in_script:
                    from .commands.scripting import running_ctx
                    ctx = running_ctx(srv)
                    if ctx is not None:
                        mask = ctx.repl_flags & (TO_AOF | TO_REPL)
                # a command for no attached target does not count (nor
                # make a transaction of a script's effects)
                if mask & self.active:
                    self.pending.append((dbid, out, mask))
        if c is not None and not c.in_exec and not in_script and cmd is not None:
            if "touches_arbitrary_keys" in cmd.flags:
                self.arbitrary = True
            self.flush()
        elif not self.flush_scheduled:
            self.flush_scheduled = True
            srv.loop.call_soon(self._scheduled_flush)

    def _scheduled_flush(self):
        # What is left is from outside any command (active expire) or from a
        # read command's lazy expiry: each deletion propagates on its own.
        self.flush_scheduled = False
        self.arbitrary = True
        self.flush()

    # -- delivering -------------------------------------------------------------------------
    def flush(self):
        ops = self.pending
        arbitrary = self.arbitrary
        self.arbitrary = False
        if not ops:
            return
        self.pending = []
        wrap = len(ops) > 1 and not arbitrary
        enc = [(dbid, resp(argv), mask) for dbid, argv, mask in ops]
        for t in list(self.targets):
            t.feed(enc, wrap)


def propagator(server) -> Propagator:
    p = getattr(server, "propagator", None)
    if p is None:
        p = Propagator(server)
        server.propagator = p
    return p


MULTI = resp([b"MULTI"])
EXEC = resp([b"EXEC"])


def select_cmd(dbid: int) -> bytes:
    s = b"%d" % dbid
    return b"*2\r\n$6\r\nSELECT\r\n$%d\r\n%s\r\n" % (len(s), s)
