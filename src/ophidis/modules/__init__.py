"""Modules: commands written in Python, loaded at run time (module.c).

``Modules`` is the server's ``modules`` slot: the loaded modules by name,
MODULE LOAD / LOADEX / UNLOAD / LIST (commands/module_cmd.py calls it),
``loadmodule`` lines (loaded as the server is built, before the ACL users
and the data files, as Redis's moduleLoadFromQueue), their CONFIG REWRITE
lines and INFO's module lines.  A module's commands are ``cmdtable.registry.Command``
objects of the one table (``cmdtable.registry.register`` / ``unregister``); the API a
module sees is ``modules/api.py`` (docs/MODULES.md).

Only Python files are loaded: a Redis C module (an ELF shared object), or
any file whose name does not end in ``.py``, fails with Redis's error reply
and a log line saying so.
"""

from __future__ import annotations

import sys
import traceback
import types

from .. import log
from ..cmdtable.registry import register, unregister
from ..cmdtable.describe import forget
from ..protocol.resp import bulk, integer, map_header
from .api import API_VERSION, ModuleContext

ELF_MAGIC = b"\x7fELF"
# Redis 8's built-in data types that MODULE LIST and INFO modules report as
# modules (name, version, path, options): RedisJSON 8.10.0 as Redis 8.10
# loads it; ours are part of the server (types/json.py), nothing is loaded.
BUILTIN = (
    ("ReJSON", 81000, "/usr/local/lib/redis/modules//rejson.so", "handle-io-errors"),
    ("bf", 81000, "/usr/local/lib/redis/modules//redisbloom.so", "handle-io-errors"),
    ("timeseries", 81000, "/usr/local/lib/redis/modules//redistimeseries.so", "handle-io-errors"),
    ("vectorset", 1, "", "handle-io-errors|handle-repl-async-load"),
)


class Module:
    """A loaded module (Redis's RedisModule plus its loadmod entry)."""

    __slots__ = ("name", "ver", "path", "args", "commands", "pymod", "ctx")

    def __init__(self, ctx: ModuleContext, pymod):
        self.name = ctx.name
        self.ver = ctx.version
        self.path = ctx.path
        self.args = ctx.args
        self.commands = ctx.commands
        self.pymod = pymod
        self.ctx = ctx


def _why(e: BaseException, path: str) -> str:
    """An exception as one log line: its type, text and where the module's
    code raised it (else where it was raised)."""
    tb = traceback.extract_tb(e.__traceback__)
    mine = [f for f in tb if f.filename == path] or tb
    where = " (%s:%d)" % (mine[-1].filename, mine[-1].lineno) if mine else ""
    return "%s: %s%s" % (type(e).__name__, e, where)


class Modules:
    def __init__(self, server):
        self.server = server
        self.loaded: dict = {}        # lower-case name -> Module (names compare without case, as Redis's)
        self._seq = 0
        cfg = server.config
        cfg.set_rewrite_provider("loadmodule", self._rewrite_lines)
        for path, args in cfg.pending_modules:
            if not self.load(path, args):
                log.warning("Can't load module from %s: server aborting" % path)
                raise SystemExit(1)

    # -- loading ---------------------------------------------------------------------------
    def load(self, path: str, args: list, configs: dict | None = None) -> bool:
        """moduleLoad: True when loaded; False after logging why not."""
        try:
            with open(path, "rb") as f:
                source = f.read()
        except OSError as e:
            log.warning("Module %s failed to load: %s: %s" % (path, path, e.strerror))
            return False
        if source[:4] == ELF_MAGIC or not path.endswith(".py"):
            log.warning("Module %s failed to load: Ophidis supports Python modules only (a .py file "
                        "defining register(ctx, args)), not Redis C modules or other files" % path)
            return False
        self._seq += 1
        modname = "ophidis_module_%d" % self._seq
        pymod = types.ModuleType(modname)
        pymod.__file__ = path
        sys.modules[modname] = pymod
        ok = False
        try:
            ok = self._load(path, source, pymod, args, configs or {})
        finally:
            if not ok:
                sys.modules.pop(modname, None)
        return ok

    def _load(self, path, source, pymod, args, configs) -> bool:
        try:
            exec(compile(source, path, "exec"), pymod.__dict__)
        except (Exception, SystemExit) as e:  # noqa: BLE001 - whatever the module's code raises
            log.warning("Module %s failed to load: %s" % (path, _why(e, path)))
            return False
        reg = getattr(pymod, "register", None)
        if not callable(reg):
            log.warning("Module %s does not define register(ctx, args). Module not loaded." % path)
            return False
        ctx = ModuleContext(self.server, path, args, configs, self.is_busy)
        try:
            r = reg(ctx, list(args))
            if ctx.name is None:
                raise RuntimeError("register() did not call ctx.init(name)")
        except (Exception, SystemExit) as e:  # noqa: BLE001
            log.warning("Module %s register() failed: %s" % (path, _why(e, path)))
            r = False
        if r is False:
            log.warning("Module %s initialization failed. Module not loaded" % path)
            return False
        if configs:
            log.warning("Loadex configurations were not applied, likely due to invalid arguments. "
                        "Unloading the module.")
            return False
        m = Module(ctx, pymod)
        for cmd in m.commands:
            register(cmd)
        acl = self.server.acl
        if acl is not None:     # (None while loadmodule lines load: the users are made after)
            acl.commands_added(m.commands)
        self.loaded[m.name.lower()] = m
        log.notice("Module '%s' loaded from %s" % (m.name, path))
        return True

    def is_busy(self, name: str) -> bool:
        return name.lower() in self.loaded

    # -- unloading -------------------------------------------------------------------------
    def unload(self, name: str):
        """moduleUnload: None when unloaded, else Redis's reason (the text
        after "Error unloading module: ")."""
        m = self.loaded.get(name.lower())
        if m is None:
            return "no such module with that name"
        on_unload = getattr(m.pymod, "unload", None)
        if callable(on_unload):
            try:
                refused = on_unload(m.ctx) is False
            except Exception as e:  # noqa: BLE001
                log.warning("Module %s unload() failed: %s" % (m.name, _why(e, m.path)))
                refused = True
            if refused:
                log.warning("Module %s OnUnload failed.  Unload canceled." % m.name)
                return "operation not possible."
        for cmd in m.commands:
            unregister(cmd)
            forget(cmd)
        self.server.acl.commands_removed(m.commands)
        del self.loaded[name.lower()]
        sys.modules.pop(m.pymod.__name__, None)
        log.notice("Module %s unloaded" % m.name)
        return None

    # -- what is shown ---------------------------------------------------------------------
    def list_reply(self, resp: int) -> bytes:
        """addReplyLoadedModules (MODULE LIST, HELLO's modules); Redis 8's
        built-in data types first, as the modules it reports them as."""
        out = [b"*%d\r\n" % (len(self.loaded) + len(BUILTIN))]
        for name, ver, path, _opts in BUILTIN:
            out += [map_header(resp, 4), bulk(b"name"), bulk(name.encode()), bulk(b"ver"), integer(ver),
                    bulk(b"path"), bulk(path.encode()), bulk(b"args"), b"*0\r\n"]
        for m in self.loaded.values():
            out += [map_header(resp, 4), bulk(b"name"), bulk(m.name.encode()), bulk(b"ver"), integer(m.ver),
                    bulk(b"path"), bulk(m.path.encode("utf-8", "surrogateescape")), bulk(b"args"),
                    b"*%d\r\n" % len(m.args)]
            out += [bulk(a) for a in m.args]
        return b"".join(out)

    def info_lines(self) -> list:
        """genModulesInfoString: INFO's Modules section."""
        return (["module:name=%s,ver=%d,api=1,filters=0,usedby=[],using=[],options=[%s]" % (name, ver, opts)
                 for name, ver, _path, opts in BUILTIN]
                + ["module:name=%s,ver=%d,api=%d,filters=0,usedby=[],using=[],options=[]" % (
                    m.name, m.ver, API_VERSION) for m in self.loaded.values()])

    def _rewrite_lines(self) -> list:
        """rewriteConfigLoadmoduleOption: the path and arguments as loaded,
        joined by spaces (unquoted, as Redis writes them)."""
        return ["loadmodule " + " ".join([m.path] + [a.decode("utf-8", "surrogateescape") for a in m.args])
                for m in self.loaded.values()]
