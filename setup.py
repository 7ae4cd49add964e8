"""Builds the optional compiled hot loop (src/ophidis/net/_speedups.pyx).

Everything else is declared in pyproject.toml.  Without Cython or a C
compiler the package installs as pure Python: client.py then runs the same
loop in Python (and does so too when the build is stale or OPHIDIS_PURE=1).
"""

import hashlib
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

PYX = os.path.join("src", "ophidis", "net", "_speedups.pyx")


class OptionalBuildExt(build_ext):
    """A failed compile leaves the pure-Python package, with a warning."""

    def run(self):
        try:
            super().run()
        except Exception as e:  # noqa: BLE001
            self._skip(e)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001
            self._skip(e)

    @staticmethod
    def _skip(e):
        sys.stderr.write("warning: ophidis.net._speedups not built (%s); the pure-Python loop is used\n" % e)


def extensions():
    if os.environ.get("OPHIDIS_PURE") == "1":
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        sys.stderr.write("warning: Cython not available; ophidis installs without _speedups\n")
        return []
    with open(PYX, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    from setuptools import Extension
    ext = Extension("ophidis.net._speedups", [PYX], extra_compile_args=["-O2"])
    return cythonize([ext], compile_time_env={"PYX_HASH": digest}, quiet=True,
                     compiler_directives={"language_level": 3})


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
