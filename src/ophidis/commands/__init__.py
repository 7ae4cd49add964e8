"""The command families: one module per family (strings, lists, ...), each
registering its commands in the one table (``ophidis.cmdtable``, which holds
the registry, the ``@command`` decorator and key extraction, and imports
none of the families).

``load_all()`` imports the families (the server calls it once at start-up);
each module only registers its functions, so families stay independent of
each other, and nothing outside this package imports them.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..keyspace import db as _dbm
from ..keyspace import notify as _notify
from ..net.speedups import native
from ..types.containers import HashValue, SetValue
from ..types.zset import ZSetValue

# Runs before load_all() registers the families' commands (a Command's cbody
# is only found once the compiled bodies are synced).
if native is not None:
    # what the compiled command bodies read (see _speedups.BODIES)
    native.sync_bodies(_notify, _dbm, _dbm.stats, SetValue, HashValue)
    native.sync_zset(ZSetValue)

_loaded = False


def load_all():
    global _loaded
    if _loaded:
        return
    _loaded = True
    pkg = __name__
    for mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        importlib.import_module("%s.%s" % (pkg, mod))
