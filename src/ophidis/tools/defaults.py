"""Option objects of the tools whose defaults are declared once, as a table."""

from __future__ import annotations

import copy
from typing import ClassVar


class Defaults:
    """Base of an options object: ``__init__`` sets every name of the class's
    ``DEFAULTS`` table to its value (a shallow copy, so that a mutable default
    such as a list is not shared between instances)."""

    DEFAULTS: ClassVar[dict] = {}

    def __init__(self):
        for name, value in self.DEFAULTS.items():
            setattr(self, name, copy.copy(value))
