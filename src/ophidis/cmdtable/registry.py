"""The command registry: every command is a function ``proc(client, argv) ->
bytes`` registered with ``@command("name")`` (subcommands as
``"container|sub"``).  Its interface facts (arity, flags, key specs, ACL
categories, argument grammar) come from Redis 7.0's command metadata shipped
in ``ophidis/data/commands.json``, with what 7.2-8.10 added or changed in
``ophidis/data/commands/<family>.json``; the decorator adds the facts Redis keeps
in code rather than in the metadata (``flags=``, see EXTRA_FLAGS) and the
command's propagation and redaction rules (``propagate=``, ``redact=``).
COMMAND, arity checks, key extraction, the dispatcher's checks, the
fast-path switch, propagation, memory accounting and client-side caching all
read this one table: a command's rules are read from its registration, never
from name lists elsewhere."""

from __future__ import annotations

import json
import os

from .. import compiled
from ..errors import RedisError

# the compiled twins: a command's C fields (cmdtable/_core.pyx) and the
# command bodies (commands/_bodies.pyx), picked here
_core = compiled.load("cmdtable._core")
# (_bodies: at the end of this module, once TABLE exists: loading
# commands._bodies imports the commands package, which reads TABLE)

_DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
with open(os.path.join(_DATA, "commands.json"), "rb") as _f:
    META: dict = json.load(_f)


# name -> the data/commands/ file whose entry replaced or added it
NEWER: dict = {}


def _load_newer(folder: str) -> None:
    """The commands and arguments Redis added after 7.0 (7.2-8.10): one file
    per family in ``data/commands/`` (``{"NAME": entry}``, subcommands as
    ``"CONTAINER|SUB"``), written for Ophidis from the facts of Redis's
    metadata and command pages (arity, flags, key specs, arguments, since).
    An entry replaces 7.0's entry of the same name whole; files are read in
    name order and two files naming one command is a mistake."""
    seen = NEWER
    for fn in sorted(os.listdir(folder)):
        if not fn.endswith(".json"):
            continue
        with open(os.path.join(folder, fn), "rb") as f:
            entries = json.load(f)
        for name, entry in entries.items():
            if name in seen:
                raise ValueError("command %s in both %s and %s" % (name, seen[name], fn))
            seen[name] = fn
            META[name] = entry


_load_newer(os.path.join(_DATA, "commands"))

# The ACL categories, in Redis's order (ACL CAT, COMMAND INFO).
ACL_CATEGORIES = ("keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
                  "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
                  "blocking", "dangerous", "connection", "transaction", "scripting", "array", "json",
                  "bloom", "cuckoo", "cms", "topk", "tdigest",
                  "timeseries", "vectorset")


# Implicit ACL categories, as Redis derives them from the command flags.
def _acl_categories(meta) -> list:
    cats = [c.lower() for c in meta.get("acl_categories", [])]
    if meta.get("module_acl"):
        # a module command's categories are exactly what its registration
        # gives (RedisModule_SetCommandACLCategories): nothing implied
        return cats
    flags = meta.get("command_flags", [])
    if "WRITE" in flags:
        cats.append("write")
    if "READONLY" in flags and "scripting" not in cats:
        cats.append("read")
    if "ADMIN" in flags:
        cats += ["admin", "dangerous"]
    if "PUBSUB" in flags:
        cats.append("pubsub")
    if "FAST" in flags:
        cats.append("fast")
    if "BLOCKING" in flags:
        cats.append("blocking")
    if "fast" not in cats:
        cats.append("slow")
    out = []
    for c in cats:
        if c not in out:
            out.append(c)
    return out


# Flags the decorator may add (facts Redis 7.0 keeps in code, not in the
# command metadata):
EXTRA_FLAGS = frozenset((
    # processCommand: allowed while a RESP2 client is in subscriber mode
    # ("only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET ...")
    "pubsub_context",
    # processCommand: run at once inside MULTI instead of being queued
    "no_queue",
    # processCommand: ends the transaction, so not refused inside MULTI when
    # over maxmemory (EXEC, DISCARD, QUIT, RESET)
    "ends_multi",
    # the doc flag SYSCMD (COMMAND DOCS): an internal command
    "syscmd",
    # does not touch the access time of its keys (Redis's LOOKUP_NOTOUCH,
    # or no lookup at all)
    "no_touch",
    # changes more than its keys: another database or whole databases
    # (memory accounting measures the databases around it)
    "touches_dbs",
    # read-only, but CLIENT TRACKING does not remember its keys (scripts
    # remember the keys of the commands they run instead; call()'s list)
    "not_tracked",
    # may block the client although Redis reports no BLOCKING flag for it
    # (a module command blocking on keys: TS.READ ... BLOCK); kept off the
    # client's fast path as blocking commands are
    "may_block",
))


# Channel argument kinds (``channels=`` on a registration; Redis's CMD_CHANNEL_*).
CHANNEL_PUBLISH = 1
CHANNEL_SUBSCRIBE = 2
CHANNEL_UNSUBSCRIBE = 4
CHANNEL_PATTERN = 8

# What SLOWLOG and MONITOR show in place of a secret (a ``redact=`` hook).
REDACTED = b"(redacted)"


class _CommandCore:
    """The fields the client's request loop uses (C fields of
    cmdtable/_core.pyx's CommandCore when the compiled layer is built;
    cmdtable/_core.pxd declares them for both)."""
    __slots__ = compiled.fields("cmdtable/_core.pxd", "CommandCore")


def _cluster_key(cmd) -> int:
    specs = cmd.key_specs
    if not specs:
        return 0 if cmd.fullname != "exec" else -1
    if len(specs) == 1:
        s = specs[0]
        bs, fk = s["begin_search"], s["find_keys"]
        if "index" in bs and "range" in fk and fk["range"]["lastkey"] == 0 and "NOT_KEY" not in s.get(
                "flags", ()):
            return bs["index"]["pos"]
    return -1


class Command(_core.CommandCore if _core is not None else _CommandCore):
    __slots__ = (
        "name", "fullname", "flags", "meta", "acl", "group",
        "parent", "key_specs",
        "rejected_calls", "failed_calls",
        # None, or [count, ms, max ms] of its slowlog entries (commandstats, 8.8)
        "slowlog_stats",
        # fast flag booleans used by the dispatcher
        "readonly", "noauth", "loading", "stale",
        "nomulti", "pubsub", "admin", "fast",
        "skip_monitor", "skip_slowlog", "protected", "allow_busy",
        "touches_arbitrary_keys", "pubsub_context", "no_queue", "ends_multi",
        "getkeys_proc",
        # propagation: None = as called (or as rewritten by the command with
        # propagate.rewrite_argv), False = never propagated itself, or
        # fn(server, db, argv) -> argv | None (see propagate.py)
        "propagate",
        # None, or fn(argv) -> argv with secrets replaced (SLOWLOG, MONITOR:
        # Redis's redactClientCommandArgument)
        "redact",
        # None, or (flags, first, count) of the channel arguments ACL checks
        # (db.c's commands_with_channels; CHANNEL_* bits, count -1: all the rest)
        "channels",
        # None for a built-in command, else the name of the module (MODULE
        # LOAD) that registered it
        "module",
    )

    def __init__(self, fullname: str, proc, meta: dict, extra_flags=(), propagate=None, redact=None,
                 channels=None, module=None):
        bad = set(extra_flags) - EXTRA_FLAGS
        if bad:
            raise ValueError("unknown command flags %r for %r" % (sorted(bad), fullname))
        self.fullname = fullname
        self.name = fullname.split("|")[-1]
        self.proc = proc
        self.meta = meta
        self.arity = meta.get("arity", -1)
        self.flags = frozenset(f.lower() for f in meta.get("command_flags", [])) | frozenset(extra_flags)
        self.acl = _acl_categories(meta)
        self.group = meta.get("group", "server")
        self.key_specs = meta.get("key_specs", [])
        self.subcommands: dict = {}
        self.parent = None
        self.getkeys_proc = None
        self.propagate = propagate
        self.redact = redact
        self.channels = channels
        self.module = module
        self.calls = 0
        self.usec = 0
        self.rejected_calls = 0
        self.failed_calls = 0
        self.slowlog_stats = None
        self.hist = [0] * 64
        f = self.flags
        self.write = "write" in f
        self.readonly = "readonly" in f
        self.denyoom = "denyoom" in f
        self.noauth = "no_auth" in f
        self.loading = "loading" in f
        self.stale = "stale" in f
        self.nomulti = "no_multi" in f
        self.noscript = "noscript" in f
        self.pubsub = "pubsub" in f
        self.admin = "admin" in f
        self.blocking = "blocking" in f
        self.fast = "fast" in f
        self.skip_monitor = "skip_monitor" in f
        self.skip_slowlog = "skip_slowlog" in f
        self.protected = "protected" in f
        self.may_replicate = "may_replicate" in f
        self.allow_busy = "allow_busy" in f
        self.touches_arbitrary_keys = "touches_arbitrary_keys" in f
        self.pubsub_context = "pubsub_context" in f
        self.no_queue = "no_queue" in f
        self.ends_multi = "ends_multi" in f
        a = self.arity
        self.amin = a if a > 0 else -a
        self.amax = a if a > 0 else 1 << 30
        # May the client's fast path run it directly?  Not when it could
        # change the client's or server's state that the general path checks
        # (or block, or not reply): blocking, admin and pub/sub commands, and
        # the noscript ones (transactions, AUTH/HELLO/RESET/QUIT, scripts,
        # WAIT ...); nor containers (their subcommands are resolved by the
        # general path; see command()).
        # Script calls (EVAL, EVALSHA, FCALL and their _RO forms) too: what
        # their declared flags decide (OOM, MISCONF, min-replicas, a replica's
        # read-only and stale states, pauses) only applies while the server
        # is slow, when nothing takes the fast path; but a script may change
        # the switches the loop reads (2: the loop reads them again after it).
        self.fastpath = (proc is not None and not self.blocking and not self.admin and not self.pubsub
                         and not self.noscript and "may_block" not in f)
        if proc is not None and fullname in SCRIPT_CALLS:
            self.fastpath = 2
        # In cluster mode the fast path also needs the command's keys to be
        # served here: cluster_key is the position of its one key (the loop
        # checks that slot), 0 for a command without keys, -1 when the
        # general path must route it (several keys, movable keys).
        self.cluster_key = _cluster_key(self)
        self.cbody = self.body_code()

    def body_code(self):
        """The compiled body of the command as it stands: none while a
        wrapper (memory accounting, client-side caching) replaces its proc,
        since the body would bypass the wrapper."""
        if _bodies is None or self.wrapped():
            return 0
        return _bodies.body_code(self.fullname, self.module)

    def rewrapped(self):
        """Its proc was (un)wrapped: no compiled body under a wrapper, and
        a script call takes the general path then (maxmemory's checks of
        its declared flags are processCommand's)."""
        self.cbody = self.body_code()
        if self.fullname in SCRIPT_CALLS and self.proc is not None:
            self.fastpath = 0 if self.wrapped() else 2

    def wrapped(self) -> bool:
        return self in _ORIG and self.proc is not _ORIG[self]

    def __repr__(self):
        return "<Command %s>" % self.fullname


# name (lowercase bytes) -> Command, for top-level commands; also upper-case keys.
# Changed only here (_table_changed after each change).
TABLE: dict = {}
# The commands that run a script (their flags may be the script's own):
# those Redis 8.10 marks SCRIPT_RUNNER (an internal flag, not listed by
# COMMAND INFO, like MAY_REPLICATE)
SCRIPT_CALLS = frozenset(name.lower() for name, meta in META.items()
                         if "SCRIPT_RUNNER" in meta.get("command_flags", ()))
# fullname (lowercase str) -> Command, includes subcommands "client|kill".
ALL: dict = {}


def _table_changed():
    # the compiled request loop keeps a name's lookup until TABLE changes
    if _core is not None:
        _core.table_changed()


def _container_proc(container: Command):
    subs = container.subcommands
    upper = container.name.upper()

    def dispatch(c, argv):  # only reached through the general path
        sub = subs.get(argv[1].lower()) if len(argv) > 1 else None
        if sub is None:
            raise RedisError("ERR unknown subcommand '%s'. Try %s HELP." % (
                argv[1][:128].decode("utf-8", "replace") if len(argv) > 1 else "", upper))
        a = sub.arity
        n = len(argv)
        if (a > 0 and a != n) or n < -a:
            raise RedisError("ERR wrong number of arguments for '%s' command" % sub.fullname)
        c.subcmd = sub
        return sub.proc(c, argv)

    return dispatch


def _get_container(name: str) -> Command:
    cmd = ALL.get(name)
    if cmd is None:
        meta = META.get(name.upper(), {"arity": -2, "group": "server"})
        cmd = Command(name, None, meta)
        cmd.proc = _container_proc(cmd)
        ALL[name] = cmd
        bname = name.encode()
        TABLE[bname] = cmd
        TABLE[bname.upper()] = cmd
        _table_changed()
    return cmd


def command(name: str, flags=(), meta: dict | None = None, propagate=None, redact=None, channels=None):
    """Register ``proc`` as the implementation of ``name`` ("get", "client|kill").

    ``flags``: names from EXTRA_FLAGS; ``propagate``: False (never
    propagated itself) or ``fn(server, db, argv) -> argv | None`` (the form
    it propagates as; None: nothing); ``redact``: ``fn(argv) -> argv`` for
    SLOWLOG and MONITOR; ``channels``: ``(CHANNEL_* flags, first, count)``,
    the arguments that are pub/sub channels (ACL's channel check)."""
    name = name.lower()

    def deco(proc):
        m = meta if meta is not None else META.get(name.upper())
        if m is None:
            raise KeyError("no metadata for command %r (data/commands.json, data/commands/)" % name)
        register(Command(name, proc, m, flags, propagate, redact, channels))
        return proc

    return deco


def register(cmd: Command):
    """Put ``cmd`` into the table (``@command`` for built-ins, MODULE LOAD
    for a module's commands); the active command wrappers wrap it."""
    name = cmd.fullname
    ALL[name] = cmd
    if "|" in name:
        parent_name, sub = name.split("|", 1)
        parent = _get_container(parent_name)
        cmd.parent = parent
        parent.subcommands[sub.encode()] = cmd
        parent.fastpath = False  # subcommands are resolved by the general path
    else:
        bname = name.encode()
        TABLE[bname] = cmd
        TABLE[bname.upper()] = cmd
        _table_changed()
    active = [w for w in WRAPPERS if w.wrap_active]
    if active and cmd.proc is not None:     # as rewrap() would have wrapped it
        _ORIG[cmd] = p = cmd.proc
        for w in active:
            p = w.wrap(cmd, p)
        cmd.proc = p
        cmd.rewrapped()


def unregister(cmd: Command):
    """Take a top-level command out of the table (MODULE UNLOAD)."""
    bname = cmd.fullname.encode()
    if TABLE.get(bname) is cmd:
        del TABLE[bname]
        TABLE.pop(bname.upper(), None)
        _table_changed()
    if ALL.get(cmd.fullname) is cmd:
        del ALL[cmd.fullname]
    _ORIG.pop(cmd, None)


def getkeys(name: str):
    """Register a custom key extractor for a command with movable keys."""
    def deco(fn):
        ALL[name.lower()].getkeys_proc = fn
        return fn
    return deco


def lookup(name: bytes):
    cmd = TABLE.get(name)
    if cmd is None:
        cmd = TABLE.get(name.lower())
    return cmd


def lookup_fullname(argv):
    """Resolve argv to a Command including subcommands (None if unknown)."""
    cmd = lookup(argv[0])
    if cmd is not None and cmd.subcommands and len(argv) > 1:
        return cmd.subcommands.get(argv[1].lower())
    return cmd


def top_level():
    return [c for name, c in ALL.items() if "|" not in name]


def lookup_by_name(name: bytes):
    """Redis's lookupCommandBySds: "get" or "config|get" (strict)."""
    parts = name.split(b"|")
    if len(parts) > 2:
        return None
    cmd = TABLE.get(parts[0]) or TABLE.get(parts[0].lower())
    if cmd is None:
        return None
    if len(parts) == 1:
        return cmd
    if not cmd.subcommands:
        return None
    return cmd.subcommands.get(parts[1].lower())


def lookup_argv(argv):
    """Redis's lookupCommand (non strict) over a command line."""
    cmd = TABLE.get(argv[0]) or TABLE.get(argv[0].lower())
    if cmd is None or len(argv) == 1 or not cmd.subcommands:
        return cmd
    return cmd.subcommands.get(argv[1].lower())


def rename_command(old: bytes, new: bytes):
    """rename-command (a configuration line): the command is called ``new``
    from now on (removed when ``new`` is empty); Redis's error text, or None."""
    cmd = TABLE.get(old.lower())
    if cmd is None:
        return "No such command in rename-command"
    for k in [k for k, v in TABLE.items() if v is cmd and k.lower() == old.lower()]:
        del TABLE[k]
    _table_changed()
    if new:
        if new.lower() in TABLE:
            return "Target command name already exists"
        TABLE[new.lower()] = TABLE[new.upper()] = cmd
        _table_changed()
    return None


# -- command wrappers --------------------------------------------------------------------
# Subsystems that must see every command while they are active (memory
# accounting under maxmemory, client-side caching) replace each command's
# proc by a wrapper around the original, so that the fast path and the
# general path both run them with no check while they are inactive.  A
# provider has ``wrap_active`` (bool) and ``wrap(cmd, proc) -> proc``; the
# later providers wrap the earlier ones.
WRAPPERS: list = []
_ORIG: dict = {}


def rewrap():
    """Rebuild every command's proc from its original and the active
    wrappers (call after a provider's wrap_active changed)."""
    active = [w for w in WRAPPERS if w.wrap_active]
    for cmd in ALL.values():
        base = _ORIG.get(cmd)
        if base is None:
            if cmd.proc is None or cmd.subcommands:
                continue
            base = _ORIG[cmd] = cmd.proc
        p = base
        for w in active:
            p = w.wrap(cmd, p)
        cmd.proc = p
        cmd.rewrapped()


# The compiled command bodies (Command.body_code), loaded last: see _core above.
_bodies = compiled.load("commands._bodies")
