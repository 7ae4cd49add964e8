"""Functions (functions.c): the libraries registry, ``server.functions``.

Every server has one ``Functions`` (installed at start); its Lua state is
only created when a library is first loaded or called.  Each ``Library``
keeps its full code string (``code``) so that RDB/AOF can store libraries
and load them back (``rdb_load``, ``functions_load``).  The commands
(FUNCTION ..., FCALL) are commands/scripting.py.
"""

from __future__ import annotations

import time

from .. import compiled
from ..errors import RedisError
from . import engine as lua_mod
from .flags import shebang_args
from .ldb import reap_ldb_children

# Function's fields are C fields of the compiled layer's base when it is
# built (its FCALL reads them), slots otherwise.
# (one field list each: scripting/_bridge.pxd)
_bridge = lua_mod._bridge
if _bridge is not None:
    _FunctionBase, _FUNCTION_SLOTS = _bridge.FunctionCore, ()
else:
    _FunctionBase, _FUNCTION_SLOTS = object, compiled.fields("scripting/_bridge.pxd", "FunctionCore")

# used_memory_vm_functions of a Redis 7.4 whose functions VM is new
FUNCTIONS_VM_BYTES = 32768

_BAD_NAME = ("ERR Library names can only contain letters, numbers, or underscores(_) and must be "
             "at least one character long")


class Function(_FunctionBase):
    __slots__ = _FUNCTION_SLOTS

    def __init__(self, name, lib, fn, desc, flags):
        self.name = name
        self.lib = lib
        self.fn = fn
        self.desc = desc
        self.flags = flags
        self.key = name.lower()     # its key in Functions.functions (FCALL's compiled twin reuses the object)


class Library:
    __slots__ = ("name", "engine", "code", "functions")

    def __init__(self, name, engine, code):
        self.name = name
        self.engine = engine
        self.code = code
        self.functions = {}


class Functions:
    """The libraries registry (functions.c's functionsLibCtx).

    Every server has one (``server.functions``, installed at start); its Lua
    state is only created when a library is first loaded or called.
    """

    # (slots: FCALL's compiled twin reads functions and _engine on each call)
    __slots__ = ("server", "_engine", "libraries", "functions")

    def __init__(self, srv):
        self.server = srv
        self._engine = None
        self.libraries: dict = {}
        self.functions: dict = {}
        srv.cron_hooks.append(reap_ldb_children)    # (EVAL's debugging sessions)

    @property
    def engine(self) -> lua_mod.LuaEngine:
        e = self._engine
        if e is None:
            e = self._engine = self.server.lua_functions = lua_mod.LuaEngine(self.server, "function")
        return e

    @engine.setter
    def engine(self, e):
        self._engine = e

    def clear(self):
        self.libraries = {}
        self.functions = {}

    def flush(self) -> int:
        """FUNCTION FLUSH (functionsLibCtxClearCurrent): the libraries go
        with their Lua state; the next use makes a new one.  Returns what
        Redis's lazy free would count for them (the functions and the
        engine)."""
        n = len(self.functions) + (self._engine is not None)
        self.clear()
        self._engine = self.server.lua_functions = None
        return n

    def vm_memory(self) -> int:
        """used_memory_vm_functions: a new functions VM of Redis's size, plus
        what our Lua state grew since it was made."""
        e = self._engine
        return FUNCTIONS_VM_BYTES + (e.memory_growth() if e is not None else 0)

    # -- persistence interface (RDB FUNCTION2 records) --

    def rdb_codes(self) -> list:
        """The code of every library, as RDB files store them."""
        return [lib.code for lib in self.libraries.values()]

    def rdb_load(self, codes, replace: bool = False):
        """Create the libraries of an RDB file (no load timeout, as in Redis);
        ``replace`` lets a library replace one of the same name (DEBUG
        RELOAD MERGE).  Raises RedisError on a library that cannot load."""
        for code in codes:
            self.create(code, replace, timeout=0)

    def _unlink(self, lib):
        for fname in lib.functions:
            self.functions.pop(fname.lower(), None)
        self.libraries.pop(lib.name, None)

    def _link(self, lib):
        self.libraries[lib.name] = lib
        # Function names are case-insensitive (FCALL TEST finds "test").
        for fname, f in lib.functions.items():
            self.functions[f.key] = f

    @staticmethod
    def metadata(code: bytes):
        if not code.startswith(b"#!"):
            raise RedisError("ERR Missing library metadata")
        parts, end = shebang_args(code, "ERR Invalid library metadata", "ERR Invalid library metadata")
        engine = parts[0][2:]
        name = None
        for p in parts[1:]:
            if p[:5].lower() == b"name=":
                if name is not None:
                    raise RedisError("ERR Invalid metadata value, name argument was given multiple times")
                name = p[5:]
                continue
            raise RedisError(b"ERR Invalid metadata value given: " + p)
        if name is None:
            raise RedisError("ERR Library name was not given")
        return name, engine, code[end:]

    def create(self, code: bytes, replace: bool, timeout=lua_mod.LOAD_TIMEOUT) -> bytes:
        name, engine, body = self.metadata(code)
        if not lua_mod._valid_name(name):
            raise RedisError(_BAD_NAME)
        if engine.upper() != b"LUA":
            raise RedisError(b"ERR Engine '" + engine + b"' not found")
        old = self.libraries.get(name)
        if old is not None and not replace:
            raise RedisError(b"ERR Library '" + name + b"' already exists")
        if old is not None:
            self._unlink(old)
        try:
            lib = self._build(name, code, body, timeout)
            for fname in lib.functions:
                if fname.lower() in self.functions:
                    raise RedisError(b"ERR Function " + fname + b" already exists")
        except BaseException:
            if old is not None:
                self._link(old)
            raise
        self._link(lib)
        return name

    def _build(self, name, code, body, timeout):
        eng = self.engine
        eng.registering = {}
        eng.load_deadline = time.monotonic() + timeout if timeout else None
        try:
            r = eng.h[b"load_library"](body)
        finally:
            reg = eng.registering
            eng.registering = None
            eng.load_deadline = None
            eng.gc_after_load()
        if r.__class__ is tuple and not r[0]:
            kind, msg = r[1], r[2] if len(r) > 2 else None
            if msg is None:
                msg = b"ERR (null)"
            if kind == b"compile":
                raise RedisError(b"ERR Error compiling function: " + msg)
            raise RedisError(b"ERR Error registering functions: " + msg)
        if not reg:
            raise RedisError("ERR No functions registered")
        lib = Library(name, b"LUA", code)
        for fname, (fn, desc, flags) in reg.items():
            lib.functions[fname] = Function(fname, lib, fn, desc, flags)
        return lib


def functions_load(srv, code: bytes, replace: bool = False) -> bytes:
    """Load a library (FUNCTION LOAD, RDB and AOF loading); raises RedisError."""
    return srv.functions.create(code, replace)
