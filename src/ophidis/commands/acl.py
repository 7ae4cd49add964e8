"""ACL: users and their rules (SETUSER GETUSER DELUSER USERS LIST CAT WHOAMI
DRYRUN GENPASS LOG LOAD SAVE HELP), over the server's ``acl`` subsystem
(acl/)."""

from __future__ import annotations

import os

from ..acl.check import DENIED_CHANNEL, DENIED_CMD, DENIED_KEY, check_command, error_message
from ..acl.users import CATEGORIES, all_commands, has_spaces
from ..cmdtable.registry import REDACTED, command, lookup_argv
from ..errors import NOT_INT, RedisError
from ..protocol.resp import OK, array_header, bulk, bulk_array, integer, map_header, null, set_header
from ..util import parse_int
from .streams import help_reply


def _syntax(argv):
    """addReplySubcommandSyntaxError."""
    return RedisError("ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP." % (
        argv[1][:128].decode("utf-8", "replace"), argv[0].decode("utf-8", "replace").upper()))


def redact_users(argv):
    """SLOWLOG / MONITOR: nothing of a user's definition, nor the names
    ACL SETUSER, DELUSER (7.4) and GETUSER (7.4) are given."""
    return argv[:2] + [REDACTED] * (len(argv) - 2)


@command("acl|setuser", redact=redact_users)
def acl_setuser(c, argv):
    name = argv[2]
    if has_spaces(name):
        raise RedisError("ERR Usernames can't contain spaces or null characters")
    err = c.server.acl.set_user(name, argv[3:], c)
    if err is not None:
        raise RedisError("ERR " + err)
    return OK


@command("acl|deluser", redact=redact_users)
def acl_deluser(c, argv):
    names = argv[2:]
    if b"default" in names:
        raise RedisError("ERR The 'default' user cannot be removed")
    return integer(c.server.acl.delete_users(names, c))


def _selector_fields(resp, s) -> list:
    return [bulk(b"commands"), bulk(s.describe_commands()),
            bulk(b"keys"), bulk(s.keys_description()),
            bulk(b"channels"), bulk(s.channels_description())]


@command("acl|getuser", redact=redact_users)
def acl_getuser(c, argv):
    u = c.server.acl.get(argv[2])
    resp = c.resp
    if u is None:
        return null(resp)
    flags = [f.encode() for f in ("on", "off", "nopass", "skip-sanitize-payload", "sanitize-payload")
             if f in u.flags]
    out = [map_header(resp, 6), bulk(b"flags"), set_header(resp, len(flags))]
    out += [bulk(f) for f in flags]
    out += [bulk(b"passwords"), bulk_array(u.passwords)]
    out += _selector_fields(resp, u.root)
    out += [bulk(b"selectors"), array_header(len(u.selectors) - 1)]
    for s in u.selectors[1:]:
        out.append(map_header(resp, 3))
        out += _selector_fields(resp, s)
    return b"".join(out)


@command("acl|users")
def acl_users(c, argv):
    return bulk_array(sorted(c.server.acl.users))


@command("acl|list")
def acl_list(c, argv):
    users = c.server.acl.users
    return bulk_array([b"user " + n + b" " + users[n].describe() for n in sorted(users)])


@command("acl|whoami")
def acl_whoami(c, argv):
    return bulk(c.user.name)


_NO_FILE = RedisError(
    "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL "
    "SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in "
    "order to store users in the Redis configuration.")


@command("acl|load")
def acl_load(c, argv):
    acl = c.server.acl
    if not c.server.config["aclfile"]:
        raise _NO_FILE
    err = acl.load_file(c)
    if err is not None:
        raise RedisError("ERR " + err)
    return OK


@command("acl|save")
def acl_save(c, argv):
    acl = c.server.acl
    if not c.server.config["aclfile"]:
        raise _NO_FILE
    if not acl.save_file():
        raise RedisError("ERR There was an error trying to save the ACLs. Please check the server logs for more "
                         "information")
    return OK


@command("acl|cat")
def acl_cat(c, argv):
    if len(argv) == 2:
        return bulk_array([x.encode() for x in CATEGORIES])
    if len(argv) != 3:
        raise _syntax(argv)
    cat = argv[2].lower().decode("latin-1")
    if cat not in CATEGORIES:
        raise RedisError("ERR Unknown category '%s'" % argv[2][:128].decode("utf-8", "replace"))
    return bulk_array([x.fullname.encode() for x in all_commands() if cat in x.acl])


@command("acl|genpass")
def acl_genpass(c, argv):
    bits = 256
    if len(argv) == 3:
        bits = parse_int(argv[2], NOT_INT)
    elif len(argv) > 3:
        raise _syntax(argv)
    if bits <= 0 or bits > 4096:
        raise RedisError("ERR ACL GENPASS argument must be the number of bits for the output password, a positive "
                         "number up to 4096")
    chars = (bits + 3) // 4
    return bulk(os.urandom((chars + 1) // 2).hex()[:chars].encode())


@command("acl|log")
def acl_log(c, argv):
    log = c.server.acl.log
    count = 10
    if len(argv) == 3:
        if argv[2].lower() == b"reset":
            log.reset()
            return OK
        count = parse_int(argv[2], NOT_INT)
        if count < 0:
            count = 0
    elif len(argv) > 3:
        raise _syntax(argv)
    return log.reply(c.resp, count)


@command("acl|dryrun")
def acl_dryrun(c, argv):
    u = c.server.acl.get(argv[2])
    if u is None:
        raise RedisError("ERR User '%s' not found" % argv[2].decode("utf-8", "replace"))
    args = argv[3:]
    cmd = lookup_argv(args)
    if cmd is None:
        raise RedisError("ERR Command '%s' not found" % argv[3].decode("utf-8", "replace"))
    a = cmd.arity
    if (a > 0 and a != len(args)) or len(args) < -a:
        raise RedisError("ERR wrong number of arguments for '%s' command" % cmd.fullname)
    res, idx = check_command(u, cmd, args)
    if res in (DENIED_CMD, DENIED_KEY, DENIED_CHANNEL):
        return bulk(error_message(res, u.name, cmd, args[idx] if res != DENIED_CMD else b"", verbose=True))
    return OK


@command("acl|help")
def acl_help(c, argv):
    return help_reply(b"ACL", b"""\
CAT [<category>]
    List all commands that belong to <category>, or all command categories
    when no category is specified.
DELUSER <username> [<username> ...]
    Delete a list of users.
DRYRUN <username> <command> [<arg> ...]
    Returns whether the user can execute the given command without executing the command.
GETUSER <username>
    Get the user's details.
GENPASS [<bits>]
    Generate a secure 256-bit user password. The optional `bits` argument can
    be used to specify a different size.
LIST
    Show users details in config file format.
LOAD
    Reload users from the ACL file.
LOG [<count> | RESET]
    Show the ACL log entries.
SAVE
    Save the current config to the ACL file.
SETUSER <username> <attribute> [<attribute> ...]
    Create or modify a user with the specified attributes.
USERS
    List all the registered usernames.
WHOAMI
    Return the current connection username.
""")
