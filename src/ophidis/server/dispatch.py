"""Command dispatch: ``process_command`` is Redis's processCommand (every check
a request goes through before it runs: unknown command, arity, auth, ACL, MULTI
queueing, pub/sub context, OOM, MISCONF, replicas, loading, busy scripts,
pauses); ``call`` runs a command and accounts for it (commandstats,
slowlog, latency, MONITOR, propagation, unblocked clients).  The client's
fast path (net/client.py) skips it only when none of those checks can apply."""

from __future__ import annotations

from time import perf_counter

from .. import log
from ..acl.check import DENIED_CMD, check_command, noperm_text
from ..acl.log import CTX_MULTI, CTX_TOPLEVEL
from ..cluster.routing import get_node_by_query, may_have_keys, redirect_error
from ..cluster.slot_stats import MULTI_BYTES, request_bytes
from ..cmdtable.registry import SCRIPT_CALLS, TABLE
from ..errors import LOADING, MISCONF, NOAUTH, OOM, RedisError
from ..keyspace.db import stats
from ..keyspace.watch import discard_transaction
from ..net import client as client_mod
from ..net.client import Client
from ..protocol.resp import QUEUED
from ..scripting.flags import command_flags, exec_flags
from .clients import is_loopback

READONLY = RedisError("READONLY You can't write against a read only replica.")


NOREPLICAS = RedisError("NOREPLICAS Not enough good replicas to write.")


MASTERDOWN = RedisError("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")


def _printable(b: bytes) -> str:
    s = b.decode("utf-8", "replace")
    return s.replace("\r", " ").replace("\n", " ")


class Dispatch:
    """Part of ``Server`` (a mixin: the state is declared there)."""

    __slots__ = ()

    def process_command(self, c: Client, argv):
        if c.repl is not None:
            return self._replica_request(c, argv)
        trk = self.tracking
        if trk.wrap_active and trk.max_keys and len(trk.table) > trk.max_keys:
            trk.limit()
        name = argv[0]
        cmd = TABLE.get(name)
        if cmd is None:
            cmd = TABLE.get(name.lower())
        if cmd is not None and cmd.subcommands and len(argv) > 1:
            sub = cmd.subcommands.get(argv[1].lower())
            if sub is None:
                return self.reject(c, None, RedisError(
                    "ERR unknown subcommand '%s'. Try %s HELP." % (
                        _printable(argv[1][:128]), cmd.name.upper())))
            cmd = sub
        if cmd is None:
            args = ""
            for a in argv[1:]:
                if len(args) >= 128:
                    break
                args += "'%s' " % _printable(a)[:128 - len(args)]
            return self.reject(c, None, RedisError(
                "ERR unknown command '%s', with args beginning with: %s" % (
                    _printable(name[:128]), args)))
        a = cmd.arity
        n = len(argv)
        if (a > 0 and a != n) or n < -a:
            return self.reject(c, cmd, RedisError(
                "ERR wrong number of arguments for '%s' command" % cmd.fullname))
        if cmd.protected:
            # DEBUG, MODULE LOAD/LOADEX/UNLOAD: enable-debug-command / enable-module-command
            which = cmd.parent.name if cmd.parent is not None else cmd.name
            if not self.protected_allowed(c, "enable-%s-command" % which):
                return self.reject(c, cmd, RedisError(
                    "ERR %s command not allowed. If the enable-%s-command option is set to \"local\", "
                    "you can run it from a local connection, otherwise you need to set this option in the "
                    "configuration file, and then restart the server." % (which.upper(), which)))
        if not c.authenticated and not cmd.noauth:
            return self.reject(c, cmd, NOAUTH)
        in_multi = c.multi is not None
        if in_multi and cmd.nomulti:
            return self.reject(c, cmd, RedisError("ERR Command not allowed inside a transaction"))
        if not c.user.unrestricted:
            res, idx = check_command(c.user, cmd, argv)
            if res:
                c.last_cmd = cmd       # the client info ACL LOG keeps names it (Redis's lastcmd)
                self.acl.log_denial(c, res, CTX_MULTI if in_multi else CTX_TOPLEVEL,
                                    cmd.fullname.encode() if res == DENIED_CMD else argv[idx])
                return self.reject(c, cmd, RedisError(noperm_text(res, cmd, c.user.name)))
        base = cmd.parent.name if cmd.parent is not None else cmd.name
        # getCommandFlags: a script's declared flags, EXEC's with its queue
        if base in SCRIPT_CALLS:
            f = command_flags(self, cmd, argv)
        elif base == "exec" and c.multi:
            f = exec_flags(self, cmd, c.multi)
        else:
            f = cmd
        stat_slot = -1      # CLUSTER SLOT-STATS: the slot this command counts for
        cl = self.cluster
        if cl is not None:
            asking = c.cluster_asking
            if asking and (c.multi is None or base == "exec") and base != "asking":
                c.cluster_asking = False     # ASKING is for the next command (or transaction)
                c.update_slow()
            if cmd.blocking:
                # and for that command run again if it blocks (Redis resets
                # the flag when the command completes)
                self.blocking_handler.asked = c if asking else None
            if not c.is_master and may_have_keys(cmd):
                write = f.write if f is not cmd else None
                node, slot, code = get_node_by_query(cl, c, cmd, argv, asking, write)
                if node is None or node is not cl.myself:
                    if base == "exec":
                        discard_transaction(c)
                    elif in_multi:
                        c.multi_error = True
                    cmd.rejected_calls += 1
                    e = redirect_error(cl, c, node, slot, code)
                    return self.filter_reply(c, c.error_reply(e))
                if cl.asm.paused and slot in cl.asm.paused and (not in_multi or base == "exec") \
                        and (f.write or f.may_replicate):
                    cl.asm.hold(c, argv)        # a slot migration's handoff: the write waits
                    return None
                if cl.slot_stats_on:
                    stat_slot = slot
        if self.maxmemory and not c.in_script:
            oom = self.memory.evict_hook()
            if oom:
                reject = f.denyoom
                if in_multi and not cmd.ends_multi:
                    reject = True
                if reject:
                    return self.reject(c, cmd, OOM)
        if (not self.lastbgsave_ok and self.config["stop-writes-on-bgsave-error"] and self.config["save"]) \
                or self.write_denied is not None:
            if f.write or base == "ping":
                rdb = not self.lastbgsave_ok and self.config["stop-writes-on-bgsave-error"] and self.config["save"]
                return self.reject(c, cmd, MISCONF if rdb else self.write_denied)
        if f.write:
            if not self.is_replica and self.min_replicas and self.good_replicas() < self.min_replicas:
                return self.reject(c, cmd, NOREPLICAS)
            if self.is_replica and not c.is_master and self.config["replica-read-only"]:
                return self.reject(c, cmd, READONLY)
        if c.resp == 2 and (c.pubsub_channels or c.pubsub_patterns or c.pubsub_shard) \
                and not cmd.pubsub_context:
            return self.reject(c, cmd, RedisError(
                "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
                "are allowed in this context" % cmd.fullname))
        if not f.stale and not c.is_master and self.running_stale():
            return self.reject(c, cmd, MASTERDOWN)
        if self.loading and not cmd.loading and not self.async_loading:
            return self.reject(c, cmd, LOADING)
        if self.async_loading and "no_async_loading" in cmd.flags:
            return self.reject(c, cmd, LOADING)
        if self.script_busy is not None and not cmd.allow_busy:
            return self.reject(c, cmd, RedisError(self.script_busy))
        if self.pause_type is not None and (not in_multi or base == "exec") \
                and self._paused_for(f):
            self.postpone(c, argv)
            return None
        if in_multi and not cmd.no_queue:
            if not (c.multi_error or c.dirty_cas):   # no memory for a doomed EXEC
                c.multi.append((cmd, argv))
            if stat_slot >= 0:
                cl.slot_stats.account(stat_slot, 0, request_bytes(argv), None)
            return QUEUED
        if stat_slot >= 0:
            return self._call_counted(c, cmd, argv, stat_slot, base == "exec")
        return self.call(c, cmd, argv)

    def _call_counted(self, c, cmd, argv, slot, is_exec):
        """call, its time and bytes counted for slot (CLUSTER SLOT-STATS;
        EXEC counts its MULTI too)."""
        t0 = perf_counter()
        r = self.call(c, cmd, argv)
        size = request_bytes(argv) + (MULTI_BYTES if is_exec else 0)
        self.cluster.slot_stats.account(slot, perf_counter() - t0, size, r)
        return r

    def _replica_request(self, c: Client, argv):
        """A command from one of our replicas: only what produces no reply
        (REPLCONF ACK) is fine; anything touching the keyspace is refused,
        and a replica that gets a reply is disconnected (its link carries
        the replication stream only)."""
        cmd = TABLE.get(argv[0].lower())
        if cmd is not None and cmd.subcommands and len(argv) > 1:
            cmd = cmd.subcommands.get(argv[1].lower(), cmd)
        name = cmd.fullname if cmd is not None else _printable(argv[0][:128]).lower()
        if cmd is not None and (cmd.write or cmd.readonly or cmd.may_replicate):
            log.warning("== CRITICAL == This master is sending an error to its replica: 'Replica can't "
                        "interact with the keyspace' after processing the command '%s'" % name)
            r = b"-ERR Replica can't interact with the keyspace\r\n"
        elif cmd is not None and cmd.fullname == "replconf":
            r = self.call(c, cmd, argv)   # ACKs: no reply
        else:
            st = c.repl
            c.repl = None          # run it as any client's command
            try:
                r = self.process_command(c, argv)
            finally:
                c.repl = st
                c.update_slow()
        if r is None:
            return None
        log.warning("Replica generated a reply to command '%s', disconnecting it: %s" % (name, c.info_string()))
        c.close()
        return None

    def running_stale(self) -> bool:
        """A replica whose link is down while replica-serve-stale-data is no."""
        return self.is_replica and not self.config["replica-serve-stale-data"] \
            and self.replica_link is not None and self.replica_link.state != "connected"

    def good_replicas(self) -> int:
        """Online replicas within min-replicas-max-lag (min-replicas-to-write)."""
        return self.repl_feed.good_replicas()

    def protected_allowed(self, c, directive="enable-protected-configs") -> bool:
        v = self.config[directive]
        if v == "yes":
            return True
        if v == "local":
            return c.is_unix or is_loopback(c.addr.rsplit(":", 1)[0].strip("[]"))
        return False

    def reject(self, c: Client, cmd, e: RedisError):
        if c.multi is not None:
            c.multi_error = True
        if cmd is not None:
            cmd.rejected_calls += 1
        msg = e.msg
        if cmd is not None and cmd.name == "exec":
            # EXEC itself refused (arity, OOM, MISCONF ...), in a transaction
            # or not: any transaction is over (WATCHes dropped too) and the
            # reason follows EXECABORT, without the ERR code Redis's
            # formatted rejections do not carry.
            discard_transaction(c)
            if msg.startswith(b"ERR "):
                msg = msg[4:]
            msg = b"EXECABORT Transaction discarded because of: " + msg
            if self.monitors:
                self.feed_monitors(c, [b"exec"])
        sp = msg.find(b" ", 0, 32)
        code = msg[:sp].decode("utf-8", "replace") if sp > 0 else "ERR"
        stats.count_error(code)
        stats.total_error_replies += 1
        return self.filter_reply(c, b"-%s\r\n" % msg)

    def filter_reply(self, c, r):
        """CLIENT REPLY OFF (1) / SKIP: 2 = set by the current command,
        becomes 3 = suppress the reply of the next command."""
        m = c.reply_mode
        if m == 0:
            return r
        if m == 3:
            c.reply_mode = 0
            c.update_slow()
            return None
        if m == 2:
            c.reply_mode = 3
            return None
        return None

    def call(self, c: Client, cmd, argv):
        """Run a command and account for it (commandstats, slowlog, latency,
        MONITOR, propagation)."""
        c.last_cmd = cmd
        if cmd.blocking:
            c.block_argv = argv
        dirty0 = self.dirty
        t0 = perf_counter()
        try:
            r = cmd.proc(c, argv)
        except RedisError as e:
            r = c.error_reply(e, cmd)
        except Exception as e:  # noqa: BLE001
            r = c.internal_error(e, cmd, argv)
        dt = perf_counter() - t0
        carry = None
        if cmd.blocking:
            bh = self.blocking_handler
            bh.asked = None
            if bh.reprocessing is c:
                carry = bh.carry   # the command run again after it blocked
        # MONITOR sees the command after it ran (the db after SELECT, the
        # queued commands of a transaction before its EXEC), as in Redis;
        # once: not when it runs again after blocking.
        if carry is None:
            if self.monitors and not cmd.skip_monitor and not cmd.admin:
                self.feed_monitors(c, cmd.redact(argv) if cmd.redact is not None else argv)
            # CLIENT LIST's tot-cmds (a script's commands count for its caller)
            sc = c.script_caller if c.in_script else None
            (c if sc is None else sc[0]).tot_cmds += 1
        if c.in_exec or c.in_script:
            # a transaction's or a script's command: its time is already in
            # its EXEC's / EVAL's (eventloop_duration_cmd_sum counts the
            # top-level commands, info.py)
            stats.el_nested += dt
        th = client_mod._SLOW_CHECK
        if c.blocked:
            # counted when it completes (run again, timed out, unblocked):
            # its time so far is kept (Redis's c->duration)
            st = c.bstate
            if st is not None:
                st.duration += dt
            if th is not None and dt >= th:
                self.slow_call(c, cmd, None, dt)
        else:
            cmd.calls += 1
            total = dt
            if carry is not None:
                total += carry.duration     # the calls that blocked count too
                argv0 = carry.argv          # the SLOWLOG shows it as sent
                if th is not None and (dt >= th or total >= th):
                    self.slow_call(c, cmd, argv0, dt, total)
            elif th is not None and dt >= th:
                self.slow_call(c, cmd, argv, dt)
            cmd.usec += total
            if client_mod._LATENCY_TRACKING:
                cmd.hist[int(total * 976562.5).bit_length()] += 1
        if self.propagate_hooks:
            self.propagator.after_call(c, cmd, argv, self.dirty != dirty0)
        if self.is_replica and cmd.write and not c.is_master and self.replica_link is not None:
            self.replica_link.remember_expires(c, cmd, argv)     # a writable replica's own keys
        if self.ready_keys and not c.in_exec and not c.in_script:
            self.handle_ready_keys()
        if c.reply_mode:
            r = self.filter_reply(c, r)
        if c.push_after is not None and not c.in_exec and not c.in_script:
            # messages the command raised for its own client follow its reply
            data = b"".join(c.push_after)
            c.push_after = None
            if r is None:
                c.push(data)
            else:
                r += data
        return r

    def handle_ready_keys(self):
        # Not while a busy script lets other clients in (isInsideYieldingLongCommand):
        # its pushes are served once it ends.
        if self.script_busy is None:
            self.blocking_handler.handle_ready_keys()
