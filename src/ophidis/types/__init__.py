"""Value classes of the non-string data types.

Each class is the in-memory form of one Redis type; the families' command
modules (commands/lists.py ...) operate on them, and persistence (RDB,
DUMP/RESTORE) reads and builds them through the small interface documented
on each class.  Strings are plain ``bytes`` / ``bytearray`` (see db.py).
"""
