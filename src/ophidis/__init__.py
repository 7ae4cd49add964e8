"""Ophidis: a Redis-compatible in-memory data store in Python.

``ophidis.Server`` is the embedded server (ophidis.embedded): it is loaded
on first use, so ``import ophidis`` stays as cheap as it was (the server
package and subprocess are not imported with it).
"""

import importlib

from .sysinfo import OPHIDIS_VERSION as __version__  # noqa: F401

__all__ = ["Server", "ServerStartError", "__version__"]

_LAZY = {"Server": "ophidis.embedded", "ServerStartError": "ophidis.embedded"}


def __getattr__(name):
    # loaded on first use for start-up cost (PEP 562), not at import time
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError("module 'ophidis' has no attribute %r" % name)
