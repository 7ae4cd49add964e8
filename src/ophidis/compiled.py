"""The compiled layer: one decision, compiled or pure, for the whole server.

Every compiled module (``_*.pyx`` beside its pure twin, e.g.
net/_client.pyx beside net/client.py, types/_quicklist.pyx beside
types/containers.py) is built from the same sources (``MODULES``), and the
twins share C declarations (``.pxd``): a field list declared for one is read
by the others.  So they are used together or not at all: ``enabled()`` is
True when every module is built, from the sources next to it (one digest of
them all, which a leaf module carries).  A
missing build (no compiler, or OPHIDIS_PURE=1 at build time), OPHIDIS_PURE=1
at run time and a free-threaded interpreter (the compiled code counts on the
GIL) give the pure-Python layer; a stale build (a .pyx or .pxd changed
since) is ignored with a warning rather than run.

Each concept picks its twin in one place, with ``load``::

    _c = compiled.load("types._quicklist")     # the module, or None
    ListValue = _c.QuickList if _c is not None else PyListValue

``fields`` reads a field list from a ``.pxd``: the pure twins take their
``__slots__`` from the declaration the compiled twin is built from.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import os
import re
import sysconfig

ROOT = os.path.dirname(os.path.abspath(__file__))

# module (relative to the package) -> what it is the compiled twin of
MODULES = {
    "net._core": "the client's C fields (net/client.py's Client)",
    "server._core": "the server's C fields (server.Server)",
    "keyspace._core": "the keyspace's C fields (keyspace/db.py's Stats, Database)",
    "keyspace._keyspace": "Keyspace, a database's key -> value table (keyspace/db.py's dict)",
    "cmdtable._core": "a command's C fields (the command table's Command)",
    "types._containers": "sets' and hashes' C fields, HashCore (types/containers.py), ZDict (types/zset.py)",
    "types._quicklist": "QuickList, the list value (types/containers.py)",
    "types._zindex": "ZIndex, the sorted set's ordered index (types/zindex.py)",
    "protocol._resp": "RESP array encoding (protocol/resp.py)",
    "protocol._reader": "the request reader's checks and C parser (protocol/reader.py)",
    "acl._check": "the fast path's ACL check (acl/check.py)",
    "cluster._slots": "key slots and SlotKeys (cluster/slots.py)",
    "commands._bodies": "the compiled command bodies (commands/strings.py, lists.py, ...)",
    "net._client": "the request loop and per-read path (net/client.py)",
    "net._sock": "the plain client connections' transport (net/accept.py; else the event loop's)",
    "scripting._bridge": "redis.call's bridge and the script run (scripting/engine.py)",
    "scripting._evalcmds": "EVALSHA's and FCALL's command procs (commands/scripting.py)",
    "persistence._listpack": "listpack decoding (persistence/listpack.py)",
    "persistence._rdb": "the RDB writer's and loader's hot loops (persistence/rdb.py)",
}


def sources() -> list:
    """The compiled layer's source files (.pyx, .pxd), sorted: what its
    SOURCE_HASH is computed over (setup.py uses the same list)."""
    out = []
    for dirpath, _dirs, files in os.walk(ROOT):
        for f in files:
            if f.startswith("_") and f.endswith((".pyx", ".pxd")) and f != "_lzf.pyx":
                out.append(os.path.join(dirpath, f))
    return sorted(out, key=lambda p: os.path.relpath(p, ROOT))


def source_hash() -> str | None:
    """The SHA-256 of the compiled layer's sources (None: a .pyx is
    missing, as in an install without its sources)."""
    for name in MODULES:
        if not os.path.exists(os.path.join(ROOT, *name.split(".")) + ".pyx"):
            return None
    h = hashlib.sha256()
    for path in sources():
        h.update(os.path.relpath(path, ROOT).replace(os.sep, "/").encode() + b"\0")
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def _decide() -> bool:
    # compiled or pure, for all the modules at once, without running them
    # (a module is imported by the first concept that loads it: importing
    # them all here would import the server's modules out of order)
    if os.environ.get("OPHIDIS_PURE") == "1" or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return False
    # every module built (looked for as files: importing a package to ask
    # would run its __init__, and the server's packages import each other)
    for name in MODULES:
        base = os.path.join(ROOT, *name.split("."))
        if not any(os.path.exists(base + suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES):
            return False
    # built together from one digest: a leaf module (no imports, in a
    # package whose __init__ imports nothing) carries it
    try:
        built = importlib.import_module("ophidis.net._core").SOURCE_HASH
    except ImportError:
        return False
    digest = source_hash()
    if digest is not None and built != digest:
        import warnings
        warnings.warn("ophidis's compiled modules were built from other sources than the .pyx/.pxd "
                      "next to them: using the pure-Python layer (rebuild with `pip install -e .`)")
        return False
    return True


_ENABLED: bool | None = None


def enabled() -> bool:
    """Does the compiled layer run?"""
    global _ENABLED
    if _ENABLED is None:
        _ENABLED = _decide()
    return _ENABLED


def load(name: str):
    """The compiled module ``ophidis.<name>`` (one of MODULES), or None when
    the pure-Python layer runs."""
    if name not in MODULES:
        raise KeyError("not a compiled module: %s" % name)
    if not enabled():
        return None
    return importlib.import_module("ophidis." + name)


def fields(pxd: str, cls: str) -> tuple:
    """The fields class ``cls`` declares in ``pxd`` (a path relative to the
    package, e.g. "net/_core.pxd"), in order: the field list both twins are
    built from (less those whose comment says "(compiled only)")."""
    with open(os.path.join(ROOT, pxd), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^cdef class %s\b[^\n]*:\n((?:[ \t]+[^\n]*\n|\n)*)" % re.escape(cls), text, re.M)
    if m is None:
        raise LookupError("%s declares no class %s" % (pxd, cls))
    out = []
    for line in m.group(1).splitlines():
        code, _, comment = line.partition("#")
        words = code.split()
        if words[:1] != ["cdef"] or "(" in code or "(compiled only)" in comment:
            continue            # not a field (a method, a comment), or C storage the twin has not
        parts = " ".join(w for w in words[1:] if w not in ("public", "readonly")).split(",")
        # "<type words> name, name, ...": the first name ends the type
        out.append(parts[0].split()[-1].lstrip("*"))
        out += [p.strip().lstrip("*") for p in parts[1:]]
    return tuple(out)
