"""`make test-pythons`: Ophidis as users install it, on every CPython here.

Builds the sdist once, then for each interpreter found (the one running
this script and every CPython 3.11+ under ~/.pyenv/versions, free-threaded
builds included, or the paths in $PYTHONS):

1. builds a wheel from the sdist (pip, build isolation: the compiler
   path) and checks it carries the compiled module (not on a
   free-threaded build, where the pure loop is the install);
2. installs the wheel with its test extras into a new virtualenv and runs
   the smoke selection of the suite (``-m smoke``) against that install
   (``-o pythonpath=tests``: the checkout's src/ is not on the path),
   once with the compiled loop and once with OPHIDIS_PURE=1;
3. installs the sdist into another virtualenv with no C compiler
   (CC=false: the install must succeed, say it is pure Python, and
   serve): the start-up and embedded-server smoke tests run there.

Each run sets OPHIDIS_TEST_EXPECT (compiled / pure), which the smoke test
``test_install_is_the_expected_one`` checks, so a run that silently fell
back to the pure loop, or imported the checkout instead of the install,
fails.  Standard library only; run with the interpreter of `make test`.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIN = (3, 11)


def interpreters() -> list:
    """(label, path) of each CPython to test, oldest first."""
    if os.environ.get("PYTHONS"):
        paths = os.environ["PYTHONS"].split()
    else:
        # the interpreter running this (its venv's base), then pyenv's
        paths = [os.path.realpath(sys.executable)]
        paths += glob.glob(os.path.expanduser("~/.pyenv/versions/*/bin/python3"))
        paths += glob.glob(os.path.expanduser("~/.pyenv/versions/*/bin/python3.*t"))
    found = {}
    for p in paths:
        out = subprocess.run([p, "-c", "import sys, sysconfig; print(sys.implementation.name, "
                              "'%d.%d.%d' % sys.version_info[:3], "
                              "int(bool(sysconfig.get_config_var('Py_GIL_DISABLED'))))"],
                             capture_output=True, text=True)
        if out.returncode:
            continue
        impl, version, ft = out.stdout.split()
        v = tuple(int(x) for x in version.split("."))
        if impl != "cpython" or v[:2] < MIN:
            continue
        found.setdefault(version + ("t" if ft == "1" else ""), (v, ft == "1", os.path.realpath(p)))
    return [(label, path, ft) for label, (v, ft, path) in sorted(found.items(), key=lambda kv: kv[1][:2])]


def run(cmd, env=None, **kw):
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, env=env, check=True, **kw)


def venv(py, path) -> str:
    run([py, "-m", "venv", path])
    vpy = os.path.join(path, "bin", "python")
    run([vpy, "-m", "pip", "install", "-q", "--upgrade", "pip"])
    return vpy


FAILED = []


def pytest(vpy, expect, extra_env=None, args=()):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("OPHIDIS_PURE", None)
    env.update(extra_env or {}, OPHIDIS_TEST_EXPECT=expect)
    cmd = [vpy, "-m", "pytest", "-m", "smoke", "-n", "2", "--dist", "loadfile", "-p", "no:cacheprovider",
           "-o", "pythonpath=tests", *args, "tests"]
    print("+ " + " ".join(cmd), flush=True)
    if subprocess.run(cmd, env=env, cwd=ROOT).returncode:
        FAILED.append("%s %s" % (vpy, expect))


def main() -> int:
    pythons = interpreters()
    if not pythons:
        print("no CPython %d.%d+ found" % MIN)
        return 1
    print("interpreters: " + ", ".join("%s (%s)" % (label, path) for label, path, _ in pythons), flush=True)
    work = tempfile.mkdtemp(prefix="ophidis-pythons-")
    times = []
    try:
        run([sys.executable, "-m", "build", "--sdist", "-o", os.path.join(work, "dist"), ROOT])
        sdist = glob.glob(os.path.join(work, "dist", "ophidis-*.tar.gz"))[0]
        for label, py, ft in pythons:
            t0 = time.monotonic()
            tag = re.sub(r"\W", "_", label)
            wheels = os.path.join(work, "wheels-" + tag)
            run([py, "-m", "pip", "wheel", "-q", "--no-deps", "--no-cache-dir", "-w", wheels, sdist])
            wheel = glob.glob(os.path.join(wheels, "ophidis-*.whl"))[0]
            compiled = any("/net/_client." in n and n.endswith(".so") for n in zipfile.ZipFile(wheel).namelist())
            if compiled == ft:
                print("%s: the wheel %s the compiled module" % (wheel, "carries" if compiled else "lacks"))
                return 1
            vpy = venv(py, os.path.join(work, "venv-" + tag))
            run([vpy, "-m", "pip", "install", "-q", wheel + "[test]"])
            if not ft:
                pytest(vpy, "compiled")
            pytest(vpy, "pure", {"OPHIDIS_PURE": "1"})
            # the sdist on a machine without a C compiler: pure, with the warning
            vpy = venv(py, os.path.join(work, "venv-nocc-" + tag))
            out = subprocess.run([vpy, "-m", "pip", "install", "-v", "--no-cache-dir", sdist + "[test]"],
                                 env=dict(os.environ, CC="false", CXX="false"), capture_output=True, text=True)
            if out.returncode or "ophidis installs without its compiled layer" not in out.stdout + out.stderr \
                    and "the pure-Python layer is used" not in out.stdout + out.stderr:
                print(out.stdout[-3000:], out.stderr[-3000:])
                print("%s: the sdist did not install as pure Python without a compiler" % label)
                return 1
            pytest(vpy, "pure", args=["-k", "startup_log or embedded or install_is"])
            times.append("%s %.0f s" % (label, time.monotonic() - t0))
    except subprocess.CalledProcessError as e:
        print("failed: %s (exit %d)" % (" ".join(e.cmd), e.returncode))
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("test-pythons: " + ", ".join(times))
    if FAILED:
        print("failed smoke runs: " + "; ".join(FAILED))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
