"""The tree's structure (tools/structure.py, ``make lint``): no module-level
import cycle, no upward import into the command families (commands/) but
the server's load_all, no getattr/hasattr probe on the server object.  The
second test checks that the script sees each of these in a small tree made
for it, so the guard cannot pass by seeing nothing."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tools", "structure.py")
SRC = os.path.join(ROOT, "src", "ophidis")


def _tool():
    spec = importlib.util.spec_from_file_location("structure_tool", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_tree_has_no_cycle_upward_import_or_probe():
    r = subprocess.run([sys.executable, SCRIPT, SRC, "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "module-level import cycles: 0" in r.stdout
    assert "upward imports into commands/: 0" in r.stdout
    assert "getattr/hasattr probes on the server object: 0" in r.stdout


def _write(root, files):
    for rel, text in files.items():
        path = os.path.join(root, *rel.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def test_the_script_sees_cycles_upward_imports_and_probes(tmp_path):
    pkg = os.path.join(str(tmp_path), "pkg")
    _write(pkg, {
        "__init__.py": "",
        "commands/__init__.py": "def load_all():\n    from . import fam\n",
        "commands/fam.py": "from ..table import command\n",
        "table.py": "def command(name):\n    return name\n",
        # a module-level cycle
        "a.py": "from . import b\n",
        "b.py": "from .a import *\n",
        # upward imports: a module of the families, the families' package
        # for something else than load_all, and one inside a function
        "net/__init__.py": "from ..commands import fam\n",
        "net/client.py": "from .. import commands\n",
        "acl.py": "def f():\n    from .commands.fam import command\n",
        # ... by name through the compiled layer's pick, and from a compiled module
        "loader.py": "from . import compiled\n_f = compiled.load('commands.fam')\n",
        "compiled.py": "def load(name):\n    return None\n",
        "net/_fast.pyx": ("from ..commands import fam\n" + "\n" * 2997
                          + "cdef int f():\n    from .. import a\n"),
        # a compiled twin in commands/ (not a family) is listed apart
        "net/_fast.pxd": "from pkg.commands._bodies cimport body\n",
        "commands/_bodies.pyx": "cdef int body():\n    return 0\n",
        # the allowed one: the server package's load_all
        "server/__init__.py": "from ..commands import load_all\nload_all()\n",
        # probes on the server
        "probe.py": "def f(srv, c):\n    return getattr(srv, 'x', None), hasattr(c.server, 'y')\n",
    })
    tool = _tool()
    fig = tool.measure(pkg)
    assert fig["cycles_top"] == [["pkg.a", "pkg.b"]]
    assert [u.split()[0] for u in fig["upward_imports"]] == [
        "pkg/acl.py:2", "pkg/loader.py:2", "pkg/net/__init__.py:1", "pkg/net/_fast.pyx:1", "pkg/net/client.py:1"]
    assert fig["upward_imports"][2] == "pkg/net/__init__.py:1 pkg.commands pkg.commands.fam"
    assert [u.split()[0] for u in fig["upward_allowed"]] == ["pkg/server/__init__.py:1"]
    assert fig["compiled_twins"] == ["pkg/net/_fast.pxd:1 pkg.commands._bodies"]
    assert fig["server_probes"] == ["pkg/probe.py:2", "pkg/probe.py:2"]
    assert [i.split()[0] for i in fig["inner_imports"]] == [
        "pkg/acl.py:2", "pkg/commands/__init__.py:2", "pkg/net/_fast.pyx:3000"]
    assert fig["largest"][0] == ("net/_fast.pyx", 3000)
    assert len(tool.failures(fig)) == 1 + 5 + 2
    r = subprocess.run([sys.executable, SCRIPT, pkg, "--check"], capture_output=True, text=True)
    assert r.returncode == 1
    assert "FAIL upward import into commands/: pkg/net/client.py:1 pkg.commands" in r.stderr
