"""Loads the optional compiled module ``_speedups`` (see _speedups.pyx).

``native`` is the module when it was built from the source next to it, else
None: a missing build (no compiler, or OPHIDIS_PURE=1 at build time) and
OPHIDIS_PURE=1 at run time, and a free-threaded interpreter (the compiled
code counts on the GIL) give the pure-Python code; a stale build (the
.pyx changed since) is ignored with a warning rather than run.
"""

import hashlib
import os
import sysconfig


def _load():
    if os.environ.get("OPHIDIS_PURE") == "1" or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return None
    try:
        from . import _speedups
    except ImportError:
        return None
    pyx = os.path.join(os.path.dirname(__file__), "_speedups.pyx")
    try:
        with open(pyx, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return _speedups            # installed without its source
    if digest != _speedups.SOURCE_HASH:
        import warnings
        warnings.warn("ophidis.net._speedups was built from another version of _speedups.pyx: "
                      "using the pure-Python loop (rebuild with `pip install -e .`)")
        return None
    return _speedups


native = _load()
