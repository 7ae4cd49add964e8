"""CONFIG SET overrides that are always restored."""

from __future__ import annotations

import contextlib


def _name(name: str) -> str:
    return name.replace("_", "-")


class ConfigOverrides:
    """Directives set with CONFIG SET on one or more servers; ``restore()``
    sets every one back to the value CONFIG GET gave before the first
    change, newest first.  As the ``config`` fixture, restore runs at
    teardown whatever the test's outcome.

        config(r, maxmemory="1mb", maxmemory_policy="allkeys-lru")
        config.set(r, "hash-max-listpack-entries", 1)
        config.keep(r, "hz")          # the test sets it itself

    (underscores in keyword names become dashes)."""

    def __init__(self):
        self._saved = []   # (client, name, old value), in order of change
        self._seen = set()

    def keep(self, client, *names):
        """Restore these directives at the end, whatever sets them meanwhile
        (the test's own CONFIG SET commands included)."""
        for name in names:
            name = _name(name)
            key = (id(client), name)
            if key not in self._seen:
                got = client.config_get(name)
                old = {(k.decode() if isinstance(k, bytes) else k): v for k, v in got.items()}
                assert name in old, "CONFIG GET %s returned %r" % (name, got)
                self._saved.append((client, name, old[name]))
                self._seen.add(key)

    def set(self, client, name, value):
        self.keep(client, name)
        client.config_set(_name(name), value)

    def __call__(self, client, **settings):
        for name, value in settings.items():
            self.set(client, name, value)

    def restore(self):
        errors = []
        while self._saved:
            client, name, old = self._saved.pop()
            try:
                client.config_set(name, old)
            except Exception as e:  # restore the others anyway
                errors.append(e)
        self._seen.clear()
        if errors:
            raise errors[0]


@contextlib.contextmanager
def overrides(client, **settings):
    """CONFIG SET name value ... for the block, restoring the old values."""
    c = ConfigOverrides()
    try:
        c(client, **settings)
        yield c
    finally:
        c.restore()
