"""Ophidis: a Redis-compatible in-memory data store in Python."""

from .sysinfo import OPHIDIS_VERSION as __version__  # noqa: F401
