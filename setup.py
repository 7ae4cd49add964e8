"""Builds the optional compiled modules: the compiled layer (each concept's
_*.pyx beside its pure twin, listed in src/ophidis/compiled.py's MODULES)
and the others in OTHERS.

Everything else is declared in pyproject.toml.  Without Cython or a C
compiler (or on a free-threaded interpreter) the package installs as pure
Python: the pure twins run (as they do when the build is stale or
OPHIDIS_PURE=1).
"""

import importlib.util
import os
import sys
import sysconfig

from setuptools import setup
from setuptools.command.build_ext import build_ext

SRC = os.path.join("src", "ophidis")
# the other compiled modules (pure functions over bytes, each with a pure
# twin or fallback): module name -> source
OTHERS = {"ophidis.persistence._lzf": os.path.join("src", "ophidis", "persistence", "_lzf.pyx")}


class OptionalBuildExt(build_ext):
    """A failed compile leaves the pure-Python package, with a warning."""

    def run(self):
        try:
            super().run()
        except Exception as e:  # noqa: BLE001
            self._skip(e, "ophidis's compiled layer")

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001
            self._skip(e, ext.name)

    @staticmethod
    def _skip(e, name):
        what = "code" if name in OTHERS else "layer"
        sys.stderr.write("warning: %s not built (%s); the pure-Python %s is used\n" % (name, e, what))


def _compiled():
    # src/ophidis/compiled.py (no project imports): MODULES and source_hash
    spec = importlib.util.spec_from_file_location("_ophidis_compiled", os.path.join(SRC, "compiled.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _drop_stale_c(c_file, digest):
    # every module carries the digest of all the layer's sources, which
    # cythonize's own dependency check does not see: a C file generated
    # with another digest is generated again
    try:
        with open(c_file, "rb") as f:
            if digest.encode() in f.read():
                return
    except OSError:
        return
    os.remove(c_file)


def extensions():
    if os.environ.get("OPHIDIS_PURE") == "1":
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        sys.stderr.write("warning: Cython not available; ophidis installs without its compiled layer\n")
        return []
    from setuptools import Extension
    exts = [Extension(name, [src], extra_compile_args=["-O2"]) for name, src in OTHERS.items()
            if os.path.exists(src)]
    digest = ""
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        # the compiled layer reads objects through borrowed references
        # under the GIL: a free-threaded interpreter runs the pure twins
        sys.stderr.write("warning: free-threaded Python: ophidis installs without its compiled layer\n")
    else:
        compiled = _compiled()
        digest = compiled.source_hash() or ""
        for name in compiled.MODULES:
            src = os.path.join(SRC, *name.split(".")) + ".pyx"
            exts.append(Extension("ophidis." + name, [src], extra_compile_args=["-O2"]))
            _drop_stale_c(src[:-4] + ".c", digest)
    return cythonize(exts, compile_time_env={"PYX_HASH": digest}, quiet=True, include_path=["src"],
                     compiler_directives={"language_level": 3}, nthreads=os.cpu_count() or 1)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
