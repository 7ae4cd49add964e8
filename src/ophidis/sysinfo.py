"""What the server and the tools say about themselves, in one place.

The Redis version we implement and report (INFO's redis_version, HELLO,
the Lua ``redis.REDIS_VERSION``, the RDB's redis-ver aux field, the tools'
``--version``, the start-up banner and FATAL CONFIG lines), our own
version, and the build and platform facts INFO's server section lists.
Ophidis is not built from Redis's tree, so the git and build fields have the
values Redis reports for a build outside a git checkout.
"""

from __future__ import annotations

import os
import sys

REDIS_VERSION = "8.10.2"
REDIS_VERSION_BYTES = REDIS_VERSION.encode()
# The version as Lua's redis.REDIS_VERSION_NUM gives it: 0x00MMmmpp.
REDIS_VERSION_NUM = int.from_bytes(bytes(int(x) for x in REDIS_VERSION.split(".")), "big")

OPHIDIS_VERSION = "0.1.0"

GIT_SHA1 = "00000000"
GIT_DIRTY = 0
BUILD_ID = "0"
GCC_VERSION = "0.0.0"


def arch_bits() -> int:
    return 64 if sys.maxsize > 2**32 else 32


def os_string() -> str:
    u = os.uname()
    return "%s %s %s" % (u.sysname, u.release, u.machine)


def python_version() -> str:
    return sys.version.split()[0]
