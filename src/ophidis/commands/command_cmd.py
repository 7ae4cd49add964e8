"""COMMAND and its subcommands (COUNT, INFO, DOCS, LIST, GETKEYS,
GETKEYSANDFLAGS, HELP).

Everything is derived from the one command table (``cmdtable``): the
interface facts come from Redis 7.0's metadata (``data/commands.json``), so
COMMAND INFO / DOCS describe exactly the commands this server implements
(their replies: ``cmdtable.describe``; key extraction: ``cmdtable.keys``).
"""

from __future__ import annotations

from ..cmdtable.describe import command_docs_reply, command_info_reply, key_flags_reply
from ..cmdtable.keys import get_keys_with_flags, has_keys, key_extractor
from ..cmdtable.registry import ACL_CATEGORIES, command, lookup_argv, lookup_by_name, top_level
from ..errors import SYNTAX, RedisError
from ..protocol.resp import bulk, integer, map_header, simple
from ..util import stringmatch


# -- the commands -------------------------------------------------------------------------------

@command("command")
def command_(c, argv):
    cmds = top_level()
    return b"*%d\r\n" % len(cmds) + b"".join(command_info_reply(x, c.resp) for x in cmds)


@command("command|count")
def command_count(c, argv):
    return integer(len(top_level()))


@command("command|info")
def command_info(c, argv):
    if len(argv) == 2:
        return command_(c, argv)
    return b"*%d\r\n" % (len(argv) - 2) + b"".join(
        command_info_reply(lookup_by_name(n), c.resp) for n in argv[2:])


@command("command|docs")
def command_docs(c, argv):
    if len(argv) == 2:
        cmds = top_level()
    else:
        cmds = [x for x in (lookup_by_name(n) for n in argv[2:]) if x is not None]
    return map_header(c.resp, len(cmds)) + b"".join(
        bulk(x.fullname.encode()) + command_docs_reply(x, c.resp) for x in cmds)


def _all_with_subs():
    for x in top_level():
        yield x
        for s in x.subcommands.values():
            yield s


@command("command|list")
def command_list(c, argv):
    filt = None
    i = 2
    n = len(argv)
    while i < n:
        more = n - 1 - i
        if argv[i].lower() == b"filterby" and more == 2:
            kind = argv[i + 1].lower()
            if kind not in (b"module", b"aclcat", b"pattern"):
                raise SYNTAX
            filt = (kind, argv[i + 2])
            i += 3
        else:
            raise SYNTAX
    names = []
    for x in _all_with_subs():
        name = x.fullname.encode()
        if filt is not None:
            kind, arg = filt
            if kind == b"module":
                # (a built-in data type's commands count as the module Redis
                # 8 reports them as: their entry's "module")
                mod = x.module if x.module is not None else x.meta.get("module")
                if mod is None or mod.lower().encode() != arg.lower():
                    continue
            elif kind == b"aclcat":
                cat = arg.lower().decode("latin-1")
                if cat not in ACL_CATEGORIES or cat not in x.acl:
                    continue
            elif not stringmatch(arg, name, True):
                continue
        names.append(name)
    return b"*%d\r\n" % len(names) + b"".join(bulk(x) for x in names)


def _getkeys_impl(c, argv, with_flags):
    args = argv[2:]
    cmd = lookup_argv(args)
    if cmd is None:
        raise RedisError("ERR Invalid command specified")
    if not has_keys(cmd):
        raise RedisError("ERR The command has no key arguments")
    a = cmd.arity
    n = len(args)
    if (a > 0 and a != n) or n < -a:
        raise RedisError("ERR Invalid number of arguments specified for command")
    keys = get_keys_with_flags(cmd, args)
    if keys is None or (not keys and not key_extractor(cmd)):
        # keyspecs failed and no extractor: Redis's "0 keys" result
        keys = keys or []
    if not keys:
        if "no_mandatory_keys" in cmd.flags:
            return b"*0\r\n"
        raise RedisError("ERR Invalid arguments specified for command")
    out = [b"*%d\r\n" % len(keys)]
    for pos, flags in keys:
        if with_flags:
            out.append(b"*2\r\n" + bulk(args[pos]) + key_flags_reply(c.resp, flags))
        else:
            out.append(bulk(args[pos]))
    return b"".join(out)


@command("command|getkeys")
def command_getkeys(c, argv):
    return _getkeys_impl(c, argv, False)


@command("command|getkeysandflags")
def command_getkeysandflags(c, argv):
    return _getkeys_impl(c, argv, True)


@command("command|help")
def command_help(c, argv):
    lines = [
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)",
        "    Describe every command of this server.",
        "COUNT",
        "    Number of commands of this server.",
        "LIST [FILTERBY (MODULE <name>|ACLCAT <category>|PATTERN <pattern>)]",
        "    Names of the commands, optionally filtered.",
        "INFO [<command-name> ...]",
        "    Describe the given commands (all commands without names).",
        "DOCS [<command-name> ...]",
        "    Documentation of the given commands (all commands without names).",
        "GETKEYS <full-command>",
        "    Key names in a full command line.",
        "GETKEYSANDFLAGS <full-command>",
        "    Key names and their access flags in a full command line.",
        "HELP",
        "    Print this help.",
    ]
    return b"*%d\r\n" % len(lines) + b"".join(simple(x.encode()) for x in lines)
