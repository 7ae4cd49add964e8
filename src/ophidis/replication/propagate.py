"""Propagation of write commands to the AOF and to replicas (server.c's
call / alsoPropagate / propagatePendingCommands).

One ``Propagator`` per server collects what a command changed, as Redis
7.0 propagates it, and hands each finished unit to its targets (the AOF,
the replication feed): the one stream AOF and replicas read.

The API for commands (each a no-op while no target is attached):

* ``rewrite_argv(c, argv)`` -- rewriteClientCommandVector: the running
  command propagates as ``argv`` instead of its own argv (SPOP -> SREM,
  BLPOP -> LPOP, HINCRBYFLOAT -> HSET ...).  MONITOR and SLOWLOG still
  see the command as it was sent (Redis's original_argv).
* ``also_propagate(server, argv, db, target)`` -- alsoPropagate: one more
  command in the unit being collected (effects of a command beyond its
  own, a blocked client being served); delivered when the running command
  ends, or by ``propagate_pending``.
* ``propagate_deletion(server, db, key)`` -- propagateDeletion: a key
  deleted by expiry or eviction.
* ``propagate_pending(server)`` -- propagatePendingCommands: deliver what
  was collected now (a blocked client served outside any command).
* ``force_propagation(c, target)`` -- forceCommandPropagation: the running
  command propagates (to the AOF and/or the replicas) even though it changed
  nothing (FLUSHDB of an empty db; PUBLISH, to the replicas only).
* ``propagating(server)`` -- is any target attached (to skip building
  argvs nobody reads).

Per-command rules live on the command's registration (commands/__init__'s
``@command(..., propagate=...)``): ``propagate=False`` for commands that
are never propagated themselves (their effects are: EXEC, EVAL ...; or
they have none a replica should see), or a function
``fn(server, db, argv) -> argv | None`` returning the form the command
propagates as after it ran (relative expire times made absolute: SET ...
PXAT, PEXPIREAT, RESTORE ... ABSTTL; GETDEL -> DEL ...; None: nothing).

``Server.call`` hands each command that changed the dataset
(``server.dirty``) to ``Propagator.after_call``.  A unit is what one
top-level command produced: the effects of a transaction or a script are
wrapped in MULTI ... EXEC when they are more than one command (not for
commands touching arbitrary keys, nor for effects produced outside any
command, such as active expiry).  Each propagated command is encoded as
RESP once; targets receive ``feed(ops, wrap)`` with ops a list of
``(dbid, encoded, mask)`` and emit their own SELECTs: as in Redis 7.2+,
a transaction's SELECTs go inside it (MULTI, SELECT, ..., EXEC; 7.0 put
the first before the MULTI).  ``mask``: 1 = AOF,
2 = replicas (a script's ``redis.set_repl``); a target's ``bit`` says
which one it is.

``server.propagate_hooks`` is non-empty only while a target is attached,
so a server without AOF and replicas pays nothing per command.  The request
loop's fast path propagates too (Server.update_server_slow hands it the
Propagator, client.set_propagator, while a target is attached): after a
command it calls ``after_call`` when the command changed the dataset,
forced propagation, rewrote its argv or left effects pending (lazy
expiry's DELs), as ``Server.call`` does.
"""

from __future__ import annotations

from ..protocol.resp import encode_command

TO_AOF = 1
TO_REPL = 2


# a command as a RESP array of bulk strings (compiled for a list of bytes)
resp = encode_command


class Propagator:
    def __init__(self, server):
        self.server = server
        self.targets = []
        self.active = 0          # TO_AOF | TO_REPL of the attached targets
        self.pending = []        # (dbid, argv, mask)
        self.flush_scheduled = False
        self.arbitrary = False   # a command touching arbitrary keys: no MULTI
        self.rewritten = None    # rewrite_argv of the running command
        self.forced = 0          # force_propagation of the running command: its targets

    # -- targets -----------------------------------------------------------------------
    def attach(self, target):
        if target not in self.targets:
            self.targets.append(target)
        self.active |= target.bit
        srv = self.server
        if self.after_call not in srv.propagate_hooks:
            srv.propagate_hooks.append(self.after_call)
            srv.update_server_slow()

    def detach(self, target):
        if target in self.targets:
            self.targets.remove(target)
        self.active = 0
        for t in self.targets:
            self.active |= t.bit
        if not self.targets:
            self.pending = []
            self.rewritten = None
            srv = self.server
            if self.after_call in srv.propagate_hooks:
                srv.propagate_hooks.remove(self.after_call)
                srv.update_server_slow()

    # -- collecting ----------------------------------------------------------------------
    def after_call(self, c, cmd, argv, dirty):
        """The end of ``Server.call`` while a target is attached: the
        command propagates (in its rewritten form, if any) when it changed
        the dataset; a top-level command's unit is delivered."""
        rule = cmd.propagate
        rw = self.rewritten
        if rw is not None:
            # the command's final form: no rule of the command applies to it
            self.rewritten = None
            argv = rw
            if rule is not False:
                rule = None
        forced = self.forced
        if not dirty:
            if not forced:
                # What the command's lookups propagated (lazy expiry's
                # DELs) is its unit: delivered as its call ends, as Redis's
                # call() does, not merged into the next command's.
                if self.pending and not c.in_exec and not c.in_script:
                    # SCAN, RANDOMKEY (TOUCHES_ARBITRARY_KEYS): each
                    # deletion on its own, not in a MULTI/EXEC
                    if cmd.touches_arbitrary_keys:
                        self.arbitrary = True
                    if self.flush():
                        c.woff = self.server.repl_feed.offset
                return
        self.forced = 0
        srv = self.server
        if srv.loading:
            return          # replaying a file: nothing is propagated (as Redis)
        dbid = c.db.id
        in_script = c.in_script
        if rule is not False:
            out = list(argv) if rule is None else rule(srv, srv.dbs[dbid], argv)
            if out:         # (an empty rewrite: the command does not propagate)
                mask = TO_AOF | TO_REPL if dirty else forced
                if in_script:
                    ctx = srv.running_script()
                    if ctx is not None:
                        mask &= ctx.repl_flags
                # a command for no attached target does not count (nor
                # make a transaction of a script's effects)
                if mask & self.active:
                    if not self.pending and not c.in_exec and not in_script:
                        # a unit of one command (the common case): delivered now
                        self.arbitrary = False
                        self._deliver([(dbid, resp(out), mask)], False)
                        c.woff = srv.repl_feed.offset
                        return
                    self.pending.append((dbid, out, mask))
        if not c.in_exec and not in_script:
            if cmd.touches_arbitrary_keys:
                self.arbitrary = True
            if self.flush():
                c.woff = srv.repl_feed.offset
        elif not self.flush_scheduled:
            self.flush_scheduled = True
            srv.loop.call_soon(self._scheduled_flush)

    def also(self, argv, db, target=TO_AOF | TO_REPL):
        """alsoPropagate: ``argv`` joins the unit being collected."""
        if self.server.loading:
            return
        if target & self.active:
            self.pending.append((db if db.__class__ is int else db.id, list(argv), target))
        if not self.flush_scheduled:
            # delivered by the running command's end, else on its own
            self.flush_scheduled = True
            self.server.loop.call_soon(self._scheduled_flush)

    def _scheduled_flush(self):
        # What is left is from outside any command (active expire) or from a
        # read command's lazy expiry: each deletion propagates on its own.
        self.flush_scheduled = False
        self.arbitrary = True
        self.flush()

    # -- delivering -------------------------------------------------------------------------
    def flush(self) -> bool:
        """Deliver the unit collected; False when there was none."""
        ops = self.pending
        arbitrary = self.arbitrary
        self.arbitrary = False
        if not ops:
            return False
        self.pending = []
        wrap = len(ops) > 1 and not arbitrary
        self._deliver([(dbid, resp(argv), mask) for dbid, argv, mask in ops], wrap)
        return True

    def _deliver(self, enc, wrap):
        targets = self.targets
        if len(targets) == 1:
            targets[0].feed(enc, wrap)
        else:
            for t in list(targets):
                t.feed(enc, wrap)


MULTI = resp([b"MULTI"])
EXEC = resp([b"EXEC"])


def select_cmd(dbid: int) -> bytes:
    s = b"%d" % dbid
    return b"*2\r\n$6\r\nSELECT\r\n$%d\r\n%s\r\n" % (len(s), s)


# -- the API for commands ------------------------------------------------------------------

def propagating(server) -> bool:
    """Whether anything is propagated (an AOF or replication target attached)."""
    return bool(server.propagate_hooks)


def rewrite_argv(c, argv):
    """rewriteClientCommandVector: the command ``c`` is running propagates
    as ``argv`` (a list of bytes) instead of the argv it was called with."""
    srv = c.server
    if srv.propagate_hooks:
        srv.propagator.rewritten = argv


def force_propagation(c, target=TO_AOF | TO_REPL):
    """forceCommandPropagation: the command ``c`` is running propagates
    (to ``target``: TO_AOF and/or TO_REPL) even when it changed nothing."""
    srv = c.server
    if srv.propagate_hooks:
        srv.propagator.forced |= target


def also_propagate(server, argv, db, target=TO_AOF | TO_REPL):
    """alsoPropagate: propagate ``argv`` in database ``db`` (a Database or
    its id) as part of the unit being collected; ``target`` TO_AOF and/or
    TO_REPL."""
    if server.propagate_hooks:
        server.propagator.also(argv, db, target)


def propagate_deletion(server, db, key):
    """propagateDeletion: a key of ``db`` deleted by expiry or eviction."""
    if server.propagate_hooks:
        server.propagator.also([b"DEL", key], db)


def propagate_pending(server):
    """propagatePendingCommands: deliver the collected unit now."""
    if server.propagate_hooks:
        server.propagator.flush()
