"""The command table (see commands/__init__.py)."""
