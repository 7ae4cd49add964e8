"""Typed command errors carrying Redis's exact error texts.

A command raises ``RedisError(text)``; the dispatcher encodes ``-text\\r\\n``,
counts it in errorstats (by the first word, as Redis does) and in the
command's failed_calls.
"""


class RedisError(Exception):
    __slots__ = ("msg",)

    def __init__(self, msg):
        if isinstance(msg, str):
            msg = msg.encode()
        # Redis never lets \r or \n into an error line.
        if b"\r" in msg or b"\n" in msg:
            msg = msg.replace(b"\r", b" ").replace(b"\n", b" ")
        if not msg.startswith(b"-") and not msg[:1].isupper():
            msg = b"ERR " + msg
        self.msg = msg.lstrip(b"-")

    @property
    def code(self) -> bytes:
        return self.msg.split(b" ", 1)[0]

    def __str__(self):
        return self.msg.decode("utf-8", "replace")


def err(text):
    return RedisError(text)


def arity_error(name: str) -> RedisError:
    """Redis's wrong-number-of-arguments error for the command ``name``
    (lower case, as the command table spells it)."""
    return RedisError("ERR wrong number of arguments for '%s' command" % name)


WRONGTYPE = RedisError("WRONGTYPE Operation against a key holding the wrong kind of value")
SYNTAX = RedisError("ERR syntax error")
NOT_INT = RedisError("ERR value is not an integer or out of range")
NOT_FLOAT = RedisError("ERR value is not a valid float")
OUT_OF_RANGE = RedisError("ERR value is out of range")
NO_SUCH_KEY = RedisError("ERR no such key")
INDEX_OUT_OF_RANGE = RedisError("ERR index out of range")
SAME_OBJECT = RedisError("ERR source and destination objects are the same")
NOAUTH = RedisError("NOAUTH Authentication required.")
OOM = RedisError("OOM command not allowed when used memory > 'maxmemory'.")
EXECABORT = RedisError("EXECABORT Transaction discarded because of previous errors.")
BUSYKEY = RedisError("BUSYKEY Target key name already exists.")
LOADING = RedisError("LOADING Redis is loading the dataset in memory")
NOSCRIPT = RedisError("NOSCRIPT No matching script. Please use EVAL.")
INVALID_EXPIRE = "ERR invalid expire time in '%s' command"
MISCONF = RedisError(
    "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist "
    "to disk. Commands that may modify the data set are disabled, because this instance is "
    "configured to report errors during writes if RDB snapshotting fails "
    "(stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.")
TIMEOUT_NEGATIVE = RedisError("ERR timeout is negative")
TIMEOUT_NOT_FLOAT = RedisError("ERR timeout is not a float or out of range")
