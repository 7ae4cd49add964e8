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
  The one allowed exception is the server package calling ``load_all()``
  (the top floor that assembles the server).

``--check`` exits with status 1 when there is a module-level cycle, an
upward import not allowed, or a probe on the server (tests/test_structure.py
runs it on src/ophidis).  The script is standard library only and imports
nothing of the tree it measures: it reads the sources with ``ast``.
"""

from __future__ import annotations

import ast
import json
import os
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


def find_modules(root: str) -> dict:
    """Dotted module name (the package's own name first) -> path of .py files."""
    parent = os.path.dirname(os.path.abspath(root).rstrip(os.sep))
    mods = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(d, f)
            name = os.path.relpath(os.path.abspath(path), parent)[:-3].replace(os.sep, ".")
            if name.endswith(".__init__"):
                name = name[:-len(".__init__")]
            mods[name] = path
    return mods


def _resolve(mods: dict, cur: str, node) -> list:
    """The project modules an import statement (or a constant
    importlib.import_module call) names: the module and, for ``from X
    import y``, X.y when y is a module."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = cur.split(".")
            if not mods.get(cur, "").endswith("__init__.py"):
                base = base[:-1]
            if node.level > 1:
                base = base[:len(base) - (node.level - 1)]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        names = [mod] + [mod + "." + a.name for a in node.names]
    else:       # a call of importlib.import_module("a.b.c")
        names = [node.args[0].value]
    out = []
    for n in names:
        # "import a.b.c" imports a and a.b too: the deepest project module counts
        while n and n not in mods and "." in n:
            n = n.rsplit(".", 1)[0]
        if n in mods and n != cur and n not in out:
            out.append(n)
    return out


def _is_import_module(node) -> bool:
    f = node.func
    return (isinstance(node, ast.Call) and len(node.args) == 1 and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and ((isinstance(f, ast.Attribute) and f.attr == "import_module")
                 or (isinstance(f, ast.Name) and f.id in ("import_module", "__import__"))))


def _is_server(node) -> bool:
    if isinstance(node, ast.Name):
        return node.id in SERVER_NAMES
    return isinstance(node, ast.Attribute) and node.attr == "server"


class _Visitor(ast.NodeVisitor):
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

    def _import(self, node):
        targets = _resolve(self.mods, self.name, node)
        if not targets:
            return
        # the names of "from x import a, b" that are not modules themselves
        names = None
        if isinstance(node, ast.ImportFrom):
            names = tuple(a.name for a in node.names if targets[0] + "." + a.name not in self.mods)
        self.imports.append((targets, node.lineno, self.depth > 0, names))

    visit_Import = visit_ImportFrom = _import

    def visit_Call(self, node):
        if _is_import_module(node):
            self._import(node)
        f = node.func
        if (isinstance(f, ast.Name) and f.id in ("getattr", "hasattr") and node.args
                and _is_server(node.args[0])):
            self.probes.append(node.lineno)
        self.generic_visit(node)


def _cycles(graph: dict, nodes) -> list:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(graph.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            u, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
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

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def _allowed(importer: str, targets: list, names) -> bool:
    floor, families, only = ALLOWED_UPWARD
    return ((importer == floor or importer.startswith(floor + ".")) and targets == [families]
            and bool(names) and set(names) <= set(only))


def _lines(path: str) -> int:
    with open(path, encoding="utf-8", errors="replace") as f:
        return sum(1 for _ in f)


def measure(root: str = "src/ophidis") -> dict:
    """The figures of the package at ``root`` (see the module docstring)."""
    root = root.rstrip("/" + os.sep) or root
    mods = find_modules(root)
    pkg = os.path.basename(os.path.abspath(root))
    top, every = defaultdict(set), defaultdict(set)
    inner, probes, upward, allowed = [], [], [], []
    families = pkg + "." + FAMILIES
    for name, path in sorted(mods.items()):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        v = _Visitor(mods, name)
        v.visit(tree)
        rel = os.path.relpath(path, os.path.dirname(os.path.abspath(root)))
        for targets, line, in_function, names in v.imports:
            every[name].update(targets)
            if in_function:
                inner.append("%s:%d %s" % (rel, line, " ".join(targets)))
            else:
                top[name].update(targets)
            if name == families or name.startswith(families + "."):
                continue
            up = [t for t in targets if t == families or t.startswith(families + ".")]
            if up:
                where = "%s:%d %s" % (rel, line, " ".join(up))
                local = [t[len(pkg) + 1:] for t in up]
                (allowed if _allowed(name[len(pkg) + 1:], local, names) else upward).append(where)
        probes += ["%s:%d" % (rel, line) for line in v.probes]
    sizes = {p: n for p, n in ((os.path.relpath(path, root), _lines(path)) for path in mods.values())}
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        for f in files:
            if f.endswith((".pyx", ".pxd")):
                path = os.path.join(d, f)
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
        "modules: %d" % fig["modules"],
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
