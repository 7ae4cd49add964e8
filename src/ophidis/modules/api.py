"""The API of Ophidis modules: commands written in Python (docs/MODULES.md).

A module is a ``.py`` file loaded with ``MODULE LOAD path [args ...]`` or a
``loadmodule path [args ...]`` line.  It defines ``register(ctx, args)``,
called once with a ``ModuleContext`` and the load arguments (bytes); there
it names itself (``ctx.init``) and registers its commands
(``ctx.command``).  It may define ``unload(ctx)``, called by MODULE UNLOAD
(returning False refuses the unload).

A command handler is what a built-in command is: ``handler(c, argv) ->
bytes``, ``c`` the calling client (``c.db`` its selected Database,
``c.server`` the server, ``c.resp`` its protocol version), ``argv`` the
arguments as bytes (``argv[0]`` the name); it returns an encoded reply
(the helpers below) or raises ``RedisError`` with the error text.  Its
registration goes into the one command table of the built-in commands, so
COMMAND, ACL, cluster routing, MONITOR, SLOWLOG, commandstats and
propagation treat it as one of them.

Everything a module may use is imported from here; the rest of the package
is internal.
"""

from __future__ import annotations

import time

from .. import log as _log
from ..cmdtable.registry import ACL_CATEGORIES, Command
from ..errors import NOT_INT, SYNTAX, WRONGTYPE, RedisError
from ..keyspace import notify
from ..keyspace.db import check_string, signal_modified
from ..protocol.resp import (EMPTY_ARRAY, NULL_BULK, OK, array_header, boolean, bulk, bulk_array, bulk_or_null, double,
                             integer, map_header, null, simple)
from ..replication.propagate import also_propagate as _also_propagate
from ..replication.propagate import rewrite_argv
from ..util import parse_float, parse_int

__all__ = [
    # errors (raise them, or RedisError("ERR ...") with your own text)
    "RedisError", "WRONGTYPE", "SYNTAX", "NOT_INT", "ModuleError",
    # replies: encoded RESP, as the built-in commands return them
    "OK", "NULL_BULK", "EMPTY_ARRAY", "integer", "bulk", "bulk_or_null", "simple", "bulk_array",
    "array_header", "map_header", "null", "boolean", "double",
    # arguments and values
    "parse_int", "parse_float", "check_string", "now_ms",
    # changes and propagation
    "modified", "notify", "propagate_as", "also_propagate",
    "ModuleContext", "API_VERSION",
]

API_VERSION = 1


class ModuleError(ValueError):
    """A registration refused (bad flags, a busy name ...): register()
    fails and the module is not loaded."""


# -- helpers for command handlers -----------------------------------------------------------

def now_ms() -> int:
    """The time in milliseconds, as the keyspace's expiry sees it."""
    return int(time.time() * 1000)


def modified(c, key: bytes, event: bytes = b"", type_=notify.GENERIC):
    """After a handler changed ``key`` in ``c.db``: counts the change (so
    the command is propagated, and client-side caching invalidates the
    command's keys), invalidates WATCH on it, fires the keyspace event
    ``event`` (of class ``type_``) when given."""
    db = c.db
    c.server.dirty += 1
    signal_modified(db, key)
    if event and notify.flags:
        notify.notify(type_, event, key, db.id)


def propagate_as(c, argv: list):
    """The command ``c`` runs reaches the AOF and the replicas as ``argv``
    (a list of bytes) instead of as called (Redis's command-vector rewrite:
    a relative expiry becomes an absolute one, for instance)."""
    rewrite_argv(c, argv)


def also_propagate(c, argv: list):
    """Propagate one more command (``argv``, in the client's database)
    with the one running."""
    _also_propagate(c.server, argv, c.db)


# -- registration ---------------------------------------------------------------------------

# RedisModule_CreateCommand's flag words (and COMMAND INFO's spellings of
# the same flags) -> commands.json's command_flags; None: accepted, no flag.
_FLAGS = {
    "write": "WRITE", "readonly": "READONLY", "admin": "ADMIN",
    "deny-oom": "DENYOOM", "denyoom": "DENYOOM",
    "deny-script": "NOSCRIPT", "noscript": "NOSCRIPT",
    "allow-loading": "LOADING", "loading": "LOADING",
    "pubsub": "PUBSUB", "random": None,
    "allow-stale": "STALE", "stale": "STALE",
    "no-monitor": "SKIP_MONITOR", "skip_monitor": "SKIP_MONITOR",
    "no-slowlog": "SKIP_SLOWLOG", "skip_slowlog": "SKIP_SLOWLOG",
    "fast": "FAST", "no-auth": "NO_AUTH", "no_auth": "NO_AUTH",
    "may-replicate": "MAY_REPLICATE", "may_replicate": "MAY_REPLICATE",
    "no-mandatory-keys": "NO_MANDATORY_KEYS", "no_mandatory_keys": "NO_MANDATORY_KEYS",
    "allow-busy": "ALLOW_BUSY", "allow_busy": "ALLOW_BUSY",
    "no-cluster": "no-cluster",
}
_KEY_FLAGS = ("RO", "RW", "OW", "RM", "ACCESS", "UPDATE", "INSERT", "DELETE", "NOT_KEY", "INCOMPLETE")


def _words(v) -> list:
    if v is None:
        return []
    if isinstance(v, str):
        return v.split()
    return list(v)


def _key_specs(name, keys, key_flags, key_specs):
    if key_specs is not None:
        if keys is not None:
            raise ModuleError("%s: give keys= or key_specs=, not both" % name)
        for s in key_specs:
            bs, fk = s.get("begin_search", {}), s.get("find_keys", {})
            if not ("index" in bs or "keyword" in bs) or not ("range" in fk or "keynum" in fk):
                raise ModuleError("%s: a key spec needs begin_search (index or keyword) and "
                                  "find_keys (range or keynum)" % name)
            bad = set(s.get("flags", ())) - set(_KEY_FLAGS)
            if bad:
                raise ModuleError("%s: unknown key spec flags %s" % (name, sorted(bad)))
        return [dict(s) for s in key_specs]
    if keys is None or keys == (0, 0, 0):
        return []
    first, last, step = keys
    if first <= 0 or step <= 0 or (0 <= last < first):
        raise ModuleError("%s: keys=(first, last, step) needs first >= 1, step >= 1 and last >= first "
                          "(or negative: from the end)" % name)
    flags = [f.upper() for f in _words(key_flags)]
    bad = set(flags) - set(_KEY_FLAGS)
    if bad:
        raise ModuleError("%s: unknown key flags %s" % (name, sorted(bad)))
    # RedisModule_CreateCommand's legacy range as one key spec
    return [{"flags": flags, "begin_search": {"index": {"pos": first}},
             "find_keys": {"range": {"lastkey": last if last < 0 else last - first, "step": step, "limit": 0}}}]


def _check_reply(handler, name):
    def proc(c, argv):
        r = handler(c, argv)
        if r.__class__ is not bytes:
            raise TypeError("module command %s returned %s, not an encoded reply (bytes)" % (
                name, type(r).__name__))
        return r
    proc.__name__ = getattr(handler, "__name__", "proc")
    return proc


class ModuleContext:
    """What ``register(ctx, args)`` receives (it stays valid while the
    module is loaded): ``server``, ``path``, ``args``, and, after
    ``init``, ``name`` and ``version``."""

    def __init__(self, server, path: str, args: list, configs: dict, busy=None):
        self.server = server
        self.path = path
        self.args = list(args)
        self.name = None
        self.version = 0
        self.commands = []           # Command objects, put in the table once register() succeeds
        self._configs = configs      # LOADEX's CONFIG name value pairs (lower-case names), consumed by config()
        self._busy = busy            # fn(name) -> bool: a module of that name is loaded

    def init(self, name: str, version: int = 1):
        """Name the module (RedisModule_Init); call it first.  The name is
        what MODULE LIST shows and MODULE UNLOAD takes."""
        if self.name is not None:
            raise ModuleError("init() called twice")
        if not name or not isinstance(name, str) or any(ch in name for ch in " \t\r\n|"):
            raise ModuleError("invalid module name %r" % (name,))
        if self._busy is not None and self._busy(name):
            raise ModuleError("a module named %r is already loaded" % name)
        self.name = name
        self.version = int(version)

    def command(self, name: str, handler, arity: int = -1, flags="", keys=None, key_flags="RW ACCESS UPDATE",
                key_specs=None, acl="", summary=None, since=None, complexity=None):
        """Register the command ``name`` (RedisModule_CreateCommand):

        - ``handler(c, argv) -> bytes``;
        - ``arity``: as COMMAND INFO's (n: exactly n arguments with the
          name, -n: at least n);
        - ``flags``: Redis's module flag words ("write", "readonly",
          "deny-oom", "fast", "admin", "deny-script", "allow-loading",
          "allow-stale", "no-monitor", "no-slowlog", "no-auth",
          "may-replicate", "no-mandatory-keys", "allow-busy",
          "no-cluster", "pubsub", "random"), a string or a list;
        - ``keys=(first, last, step)``: where the keys are (last -1: the
          last argument), with ``key_flags`` (default Redis's for module
          commands, "RW ACCESS UPDATE"; "RO ACCESS" for a read-only
          command); or ``key_specs``, a list in the form of COMMAND INFO's
          (commands.json's) key specs;
        - ``acl``: ACL categories besides those the flags imply ("string",
          "hash" ...; write/read/fast/slow/admin/dangerous come from the
          flags);
        - ``summary``, ``since``, ``complexity``: COMMAND DOCS."""
        if self.name is None:
            raise ModuleError("call ctx.init(name) before registering commands")
        if not callable(handler):
            raise ModuleError("%s: the handler is not callable" % name)
        lname = name.lower() if isinstance(name, str) else ""
        if not lname or any(ch in lname for ch in " \t\r\n|"):
            raise ModuleError("invalid command name %r" % (name,))
        if lname.encode() in self.server.command_table or any(x.fullname == lname for x in self.commands):
            raise ModuleError("command name %r is busy" % name)
        cflags = []
        for w in _words(flags):
            f = _FLAGS.get(w.lower(), False)
            if f is False:
                raise ModuleError("%s: unknown command flag %r" % (name, w))
            if f == "no-cluster":
                if self.server.config["cluster-enabled"]:
                    raise ModuleError("%s: flagged no-cluster, and cluster mode is on" % name)
            elif f is not None and f not in cflags:
                cflags.append(f)
        cflags.append("MODULE")
        cats = []
        for w in _words(acl):
            cat = w.lower().lstrip("@")
            if cat not in ACL_CATEGORIES:
                raise ModuleError("%s: unknown ACL category %r" % (name, w))
            cats.append(cat.upper())
        if not isinstance(arity, int) or arity == 0:
            raise ModuleError("%s: arity must be a non-zero integer" % name)
        meta = {"arity": arity, "group": "module", "command_flags": cflags, "acl_categories": cats,
                "key_specs": _key_specs(name, keys, key_flags, key_specs)}
        for k, v in (("summary", summary), ("since", since), ("complexity", complexity)):
            if v is not None:
                meta[k] = str(v)
        cmd = Command(lname, _check_reply(handler, lname), meta, module=self.name)
        self.commands.append(cmd)
        return cmd

    def config(self, name: str, default=None):
        """The value (str) given for ``<module name>.<name>`` by MODULE
        LOADEX's CONFIG arguments, else ``default``.  A CONFIG no
        config() call asked for fails the load, as Redis's LOADEX."""
        if self.name is None:
            raise ModuleError("call ctx.init(name) before reading configs")
        v = self._configs.pop(("%s.%s" % (self.name, name)).lower(), None)
        return default if v is None else v.decode("utf-8", "surrogateescape")

    def log(self, msg: str, level: str = "notice"):
        """A line in the server log, "<name> msg" as RedisModule_Log."""
        _log.log(_log.LEVELS.get(level, _log.NOTICE), "<%s> %s" % (self.name or "module", msg))

