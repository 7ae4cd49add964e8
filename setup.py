"""Builds the optional compiled modules: the hot loop
(src/ophidis/net/_speedups.pyx) and the others in OTHERS.

Everything else is declared in pyproject.toml.  Without Cython or a C
compiler (or on a free-threaded interpreter) the package installs as pure
Python: client.py then runs the same loop in Python (and does so too when
the build is stale or OPHIDIS_PURE=1).
"""

import hashlib
import os
import sys
import sysconfig

from setuptools import setup
from setuptools.command.build_ext import build_ext

PYX = os.path.join("src", "ophidis", "net", "_speedups.pyx")
# the other compiled modules (pure functions over bytes, each with a pure
# twin or fallback): module name -> source
OTHERS = {"ophidis.persistence._lzf": os.path.join("src", "ophidis", "persistence", "_lzf.pyx")}


class OptionalBuildExt(build_ext):
    """A failed compile leaves the pure-Python package, with a warning."""

    def run(self):
        try:
            super().run()
        except Exception as e:  # noqa: BLE001
            self._skip(e, "ophidis.net._speedups")

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001
            self._skip(e, ext.name)

    @staticmethod
    def _skip(e, name):
        what = "loop" if name.endswith("_speedups") else "code"
        sys.stderr.write("warning: %s not built (%s); the pure-Python %s is used\n" % (name, e, what))


def extensions():
    if os.environ.get("OPHIDIS_PURE") == "1":
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        sys.stderr.write("warning: Cython not available; ophidis installs without _speedups\n")
        return []
    from setuptools import Extension
    exts = [Extension(name, [src], extra_compile_args=["-O2"]) for name, src in OTHERS.items()
            if os.path.exists(src)]
    digest = ""
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        # the compiled loop reads objects through borrowed references
        # under the GIL: a free-threaded interpreter runs the pure loop
        sys.stderr.write("warning: free-threaded Python: ophidis installs without _speedups\n")
    else:
        with open(PYX, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        exts.append(Extension("ophidis.net._speedups", [PYX], extra_compile_args=["-O2"]))
    return cythonize(exts, compile_time_env={"PYX_HASH": digest}, quiet=True,
                     compiler_directives={"language_level": 3})


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
