"""Ophidis: a Redis-compatible in-memory data store in Python."""

__version__ = "0.1.0"
REDIS_VERSION = "7.0.15"
