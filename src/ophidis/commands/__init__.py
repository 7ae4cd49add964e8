"""The command families: one module per family (strings, lists, ...), each
registering its commands in the one table (``ophidis.cmdtable``, which holds
the registry, the ``@command`` decorator and key extraction, and imports
none of the families); _bodies.pyx: the compiled bodies of the common
commands (cmdtable.registry loads it for Command.cbody).

``load_all()`` imports the families (the server calls it once at start-up);
each module only registers its functions, so families stay independent of
each other, and nothing outside this package imports them.
"""

from __future__ import annotations

import importlib
import pkgutil

_loaded = False


def load_all():
    global _loaded
    if _loaded:
        return
    _loaded = True
    pkg = __name__
    # the families (not the compiled bodies, _bodies, which compiled.load loads)
    for mod in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
        importlib.import_module("%s.%s" % (pkg, mod))
