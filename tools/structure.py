#!/usr/bin/env python3
"""The structure figures of the source tree (``make lint``).

Usage: python3 tools/structure.py [src/ophidis] [--check] [--json]

Prints one line per figure (the details below it) and, with ``--json``, the
figures as JSON last:

- import cycles between project modules, at module level (the ones that can
  break an import), and counting imports inside functions too;
- imports of project modules inside functions (an import inside a function
  needs a reason: an optional dependency or start-up cost);
- ``getattr``/``hasattr`` probes on the server object (the server is one
  declared contract: a subsystem that is off is a declared None, never a
  missing attribute);
- the largest modules, counting .py, .pyx and .pxd lines;
- upward imports: a module outside ``commands/`` (the command families)
  importing ``commands`` or one of its modules.  The families sit on the top
  floor; what other packages need of the command table is ``cmdtable/``.
  The one allowed exception is the server package importing ``load_all``
  (the top floor that assembles the server); a compiled twin in commands/
  (``commands/_*.pyx``, not a family) is listed apart.

The modules are the .py files and the compiled ones (a .pyx with its .pxd).
Imports are read with ``ast`` from .py files and line by line from .pyx/.pxd
files (``import``, ``from ... import``, ``cimport``); loads by a constant
name count as imports (``importlib.import_module("ophidis.x")``, and
``compiled.load("x")``, the compiled layer's pick).  The script is standard
library only and imports nothing of the tree it measures.

``--check`` exits with status 1 when there is a module-level cycle, an
upward import not allowed, or a probe on the server (tests/test_structure.py
runs it on src/ophidis).
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys
from collections import defaultdict

# The families' package, relative to the measured package.
FAMILIES = "commands"
# The one upward import allowed, relative to the measured package: a module
# of the server package (the top floor, assembling the server) importing
# load_all from the families' package, and nothing else of it.
ALLOWED_UPWARD = ("server", "commands", ("load_all",))
# Names a probe on the server object is made through (getattr(srv, ...),
# getattr(self.server, ...), hasattr(c.server, ...)).
SERVER_NAMES = {"server", "srv"}
LARGEST = 8

_PYX_FROM = re.compile(r"^(\s*)from\s+([.\w]+)\s+c?import\s+\(?([^#]*)")
_PYX_IMPORT = re.compile(r"^(\s*)c?import\s+([^#]*)")
_PYX_DEF = re.compile(r"^(?:async\s+def|def|cdef|cpdef)\b(?!\s+(?:class|extern|struct|enum|union|packed)\b)"
                      r"(?!\s+(?:public\s+|readonly\s+)?[\w.*\[\], ]+\s*(?:=|$))")


def find_modules(root: str) -> dict:
    """Dotted module name (the package's own name first) -> its files: a .py
    file, or a compiled module's .pyx (and its .pxd)."""
    parent = os.path.dirname(os.path.abspath(root).rstrip(os.sep))
    mods = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for f in sorted(files):
            stem, ext = os.path.splitext(f)
            if ext not in (".py", ".pyx", ".pxd"):
                continue
            path = os.path.join(d, f)
            name = os.path.relpath(os.path.join(os.path.abspath(d), stem), parent).replace(os.sep, ".")
            if name.endswith(".__init__"):
                name = name[:-len(".__init__")]
            mods.setdefault(name, []).append(path)
    return mods


def _is_package(mods, name) -> bool:
    return any(os.path.basename(p).startswith("__init__.") for p in mods.get(name, ()))


def _absolute(mods, cur: str, level: int, module: str) -> str:
    if not level:
        return module
    base = cur.split(".")
    if not _is_package(mods, cur):
        base = base[:-1]
    if level > 1:
        base = base[:len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _targets(mods, cur: str, names) -> list:
    """The project modules that dotted names name ("import a.b.c" imports a
    and a.b too: the deepest project module counts)."""
    out = []
    for n in names:
        while n and n not in mods and "." in n:
            n = n.rsplit(".", 1)[0]
        if n in mods and n != cur and n not in out:
            out.append(n)
    return out


def _is_server(node) -> bool:
    if isinstance(node, ast.Name):
        return node.id in SERVER_NAMES
    return isinstance(node, ast.Attribute) and node.attr == "server"


def _load_by_name(node, pkg: str):
    """The module a call loads by a constant name, or None:
    importlib.import_module("a.b"), __import__("a.b"), compiled.load("x.y")
    (relative to the package)."""
    if not (len(node.args) == 1 and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)):
        return None
    f, arg = node.func, node.args[0].value
    if (isinstance(f, ast.Attribute) and f.attr == "import_module") or (
            isinstance(f, ast.Name) and f.id in ("import_module", "__import__")):
        return arg
    if isinstance(f, ast.Attribute) and f.attr == "load" and isinstance(f.value, ast.Name) \
            and f.value.id == "compiled":
        return pkg + "." + arg
    return None


class _Visitor(ast.NodeVisitor):
    """One .py module's imports (per statement) and probes on the server."""

    def __init__(self, mods, name):
        self.mods, self.name = mods, name
        self.depth = 0
        self.imports = []       # (targets, line, inside a function, names) per statement
        self.probes = []        # lines

    def _function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def _add(self, targets, line, names=None):
        if targets:
            self.imports.append((targets, line, self.depth > 0, names))

    def visit_Import(self, node):
        self._add(_targets(self.mods, self.name, [a.name for a in node.names]), node.lineno)

    def visit_ImportFrom(self, node):
        mod = _absolute(self.mods, self.name, node.level, node.module or "")
        targets = _targets(self.mods, self.name, [mod] + [mod + "." + a.name for a in node.names])
        # the names of "from x import a, b" that are not modules themselves
        names = tuple(a.name for a in node.names if mod + "." + a.name not in self.mods)
        self._add(targets, node.lineno, names if targets and targets[0] == mod else None)

    def visit_Call(self, node):
        loaded = _load_by_name(node, self.name.split(".")[0])
        if loaded is not None:
            self._add(_targets(self.mods, self.name, [loaded]), node.lineno)
        f = node.func
        if (isinstance(f, ast.Name) and f.id in ("getattr", "hasattr") and node.args
                and _is_server(node.args[0])):
            self.probes.append(node.lineno)
        self.generic_visit(node)


def _compiled_imports(mods, name, path) -> list:
    """A .pyx/.pxd file's imports and cimports, read line by line:
    (targets, line, inside a function, names)."""
    out = []
    in_def = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip() and not line[0].isspace():
                in_def = bool(_PYX_DEF.match(line))
            m = _PYX_FROM.match(line)
            if m:
                indent, module, what = m.groups()
                level = len(module) - len(module.lstrip("."))
                mod = _absolute(mods, name, level, module[level:])
                items = [w.split(" as ")[0].strip() for w in what.replace(")", "").split(",") if w.strip()]
                targets = _targets(mods, name, [mod] + [mod + "." + i for i in items])
                names = tuple(i for i in items if mod + "." + i not in mods)
                if targets:
                    out.append((targets, lineno, bool(indent) and in_def,
                                names if targets[0] == mod else None))
                continue
            m = _PYX_IMPORT.match(line)
            if m:
                indent, what = m.groups()
                items = [w.split(" as ")[0].strip() for w in what.split(",") if w.strip()]
                targets = _targets(mods, name, items)
                if targets:
                    out.append((targets, lineno, bool(indent) and in_def, None))
    return out


def _cycles(graph: dict, nodes) -> list:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def push(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        return (v, iter(sorted(graph.get(v, ()))))

    for root in sorted(nodes):
        if root in index:
            continue
        work = [push(root)]
        while work:
            u, it = work[-1]
            for w in it:
                if w not in index:
                    work.append(push(w))
                    break
                if w in on:
                    low[u] = min(low[u], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[u])
                if low[u] == index[u]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == u:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def _lines(path: str) -> int:
    with open(path, encoding="utf-8", errors="replace") as f:
        return sum(1 for _ in f)


def _allowed(importer: str, targets: list, names) -> bool:
    floor, families, only = ALLOWED_UPWARD
    return ((importer == floor or importer.startswith(floor + ".")) and targets == [families]
            and bool(names) and set(names) <= set(only))


def measure(root: str = "src/ophidis") -> dict:
    """The figures of the package at ``root`` (see the module docstring)."""
    root = root.rstrip("/" + os.sep) or root
    mods = find_modules(root)
    pkg = os.path.basename(os.path.abspath(root))
    parent = os.path.dirname(os.path.abspath(root))
    top, every = defaultdict(set), defaultdict(set)
    inner, probes, upward, allowed, twins = [], [], [], [], []
    families = pkg + "." + FAMILIES
    for name, paths in sorted(mods.items()):
        for path in paths:
            rel = os.path.relpath(os.path.abspath(path), parent)
            if path.endswith(".py"):
                with open(path, encoding="utf-8") as f:
                    tree = ast.parse(f.read(), path)
                v = _Visitor(mods, name)
                v.visit(tree)
                imports = v.imports
                probes += ["%s:%d" % (rel, line) for line in v.probes]
            else:
                imports = _compiled_imports(mods, name, path)
            for targets, line, in_function, names in imports:
                every[name].update(targets)
                if in_function:
                    inner.append("%s:%d %s" % (rel, line, " ".join(targets)))
                else:
                    top[name].update(targets)
                if name == families or name.startswith(families + "."):
                    continue
                up = [t for t in targets if t == families or t.startswith(families + ".")]
                if not up:
                    continue
                where = "%s:%d %s" % (rel, line, " ".join(up))
                local = [t[len(pkg) + 1:] for t in up]
                if _allowed(name[len(pkg) + 1:], local, names):
                    allowed.append(where)
                elif all(t.rsplit(".", 1)[-1].startswith("_") and t != families for t in up):
                    twins.append(where)
                else:
                    upward.append(where)
    sizes = {}
    for paths in mods.values():
        for path in paths:
            sizes[os.path.relpath(path, root)] = _lines(path)
    largest = sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))[:LARGEST]
    return {
        "modules": len(mods),
        "cycles_top": _cycles(top, mods),
        "cycles_all": _cycles(every, mods),
        "inner_imports": inner,
        "server_probes": probes,
        "largest": largest,
        "upward_imports": upward,
        "upward_allowed": allowed,
        "compiled_twins": twins,
    }


def failures(fig: dict) -> list:
    """What ``--check`` fails on."""
    out = []
    out += ["import cycle: %s" % " <-> ".join(c) for c in fig["cycles_top"]]
    out += ["upward import into %s/: %s" % (FAMILIES, u) for u in fig["upward_imports"]]
    out += ["getattr/hasattr probe on the server: %s" % p for p in fig["server_probes"]]
    return out


def report(fig: dict) -> str:
    def items(xs):
        return "".join("\n    %s" % x for x in xs)
    ca = fig["cycles_all"]
    return "\n".join([
        "modules (.py, and .pyx with its .pxd): %d" % fig["modules"],
        "module-level import cycles: %d%s" % (len(fig["cycles_top"]), items(" ".join(c) for c in fig["cycles_top"])),
        "cycles counting imports inside functions: %d, largest: %d%s" % (
            len(ca), max((len(c) for c in ca), default=0), items(" ".join(c) for c in ca)),
        "imports of project modules inside functions: %d%s" % (len(fig["inner_imports"]),
                                                                items(fig["inner_imports"])),
        "getattr/hasattr probes on the server object: %d%s" % (len(fig["server_probes"]),
                                                               items(fig["server_probes"])),
        "largest modules (.py, .pyx, .pxd lines): %s" % ", ".join("%s %d" % kv for kv in fig["largest"]),
        "upward imports into %s/: %d%s" % (FAMILIES, len(fig["upward_imports"]), items(fig["upward_imports"])),
        "  allowed (the server assembling itself): %d%s" % (len(fig["upward_allowed"]),
                                                           items(fig["upward_allowed"])),
        "  of compiled twins in %s/ (not families): %d%s" % (FAMILIES, len(fig["compiled_twins"]),
                                                            items(fig["compiled_twins"])),
    ])


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    as_json = "--json" in args
    paths = [a for a in args if not a.startswith("--")]
    fig = measure(paths[0] if paths else "src/ophidis")
    print(report(fig))
    if as_json:
        print(json.dumps({"modules": fig["modules"], "cycles_top": len(fig["cycles_top"]),
                          "cycles_all": len(fig["cycles_all"]), "inner_imports": len(fig["inner_imports"]),
                          "server_probes": len(fig["server_probes"]), "largest": fig["largest"][0][1],
                          "upward_imports": len(fig["upward_imports"])}))
    if check:
        bad = failures(fig)
        for b in bad:
            print("FAIL " + b, file=sys.stderr)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
