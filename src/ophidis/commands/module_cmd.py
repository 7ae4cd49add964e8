"""MODULE HELP / LIST / LOAD / LOADEX / UNLOAD over the server's ``modules``
subsystem (modules/__init__.py).  LOAD, LOADEX and UNLOAD are PROTECTED:
the dispatcher refuses them unless ``enable-module-command`` allows.
"""

from __future__ import annotations

from .. import log
from ..cmdtable.registry import command
from ..errors import RedisError
from ..protocol.resp import OK, help_reply

LOAD_FAILED = RedisError("ERR Error loading the extension. Please check the server logs.")


def _path(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def parse_loadex(args: list):
    """parseLoadexArguments: MODULE LOADEX's [CONFIG name value ...] [ARGS
    arg ...] -> (configs {lower-case name: value}, args), or None (logged)."""
    configs = {}
    i = 0
    n = len(args)
    while i < n:
        a = args[i].lower()
        if a == b"config":
            if i + 2 >= n:
                log.notice("CONFIG specified without name value pair")
                return None
            configs[args[i + 1].decode("utf-8", "surrogateescape").lower()] = args[i + 2]
            i += 3
        elif a == b"args":
            return configs, list(args[i + 1:])
        else:
            log.notice("Syntax Error from arguments to loadex around %s." % args[i].decode("utf-8", "replace"))
            return None
    return configs, []


@command("module|help")
def module_help(c, argv):
    return help_reply(b"MODULE", b"""\
LIST
    Name, version, path and arguments of each loaded module.
LOAD <path> [<arg> ...]
    Load the Python module at <path>, giving it the arguments.
LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]
    Load a module with configuration values and arguments.
UNLOAD <name>
    Unload a module and remove its commands.
""")


@command("module|list")
def module_list(c, argv):
    return c.server.modules.list_reply(c.resp)


@command("module|load")
def module_load(c, argv):
    if not c.server.modules.load(_path(argv[2]), argv[3:]):
        raise LOAD_FAILED
    return OK


@command("module|loadex")
def module_loadex(c, argv):
    parsed = parse_loadex(argv[3:])
    if parsed is None or not c.server.modules.load(_path(argv[2]), parsed[1], parsed[0]):
        raise LOAD_FAILED
    return OK


@command("module|unload")
def module_unload(c, argv):
    why = c.server.modules.unload(_path(argv[2]))
    if why is not None:
        raise RedisError("ERR Error unloading module: %s" % why)
    return OK
