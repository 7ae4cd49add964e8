"""The permission check (acl.c's ACLCheckAllUserCommandPerm and its
helpers): may a user run this command line, with these keys and these
channels?  Used by dispatch (processCommand), EXEC, scripts' redis.call,
ACL DRYRUN, SORT's BY/GET and redis.acl_check_cmd.

Keys come from the command table's key specs (their ACCESS / INSERT /
DELETE / UPDATE flags decide whether a read or a write permission is
needed), channels from the ``channels=`` rule of the command's registration.
"""

from __future__ import annotations

from ..commands.command_cmd import get_keys_with_flags, has_keys
from ..util import stringmatch
from .users import READ, WRITE

# Results, ordered as Redis's ACL_DENIED_* (the most relevant one is kept).
OK = 0
DENIED_CMD = 1
DENIED_KEY = 2
DENIED_AUTH = 3
DENIED_CHANNEL = 4

# getAclErrorMessage
MESSAGES = {
    DENIED_CMD: "can't run this command or subcommand",
    DENIED_KEY: "can't access at least one of the keys mentioned in the command arguments",
    DENIED_CHANNEL: "can't publish to the channel mentioned in the command",
}


_PERMS = {}      # id of a key spec's flag list (the table's, static) -> (flags, permission)


def _key_perm(flags) -> int:
    got = _PERMS.get(id(flags))
    if got is not None and got[0] is flags:
        return got[1]
    need = 0
    for f in flags:
        if f == "ACCESS":
            need |= READ
        elif f in ("INSERT", "DELETE", "UPDATE"):
            need |= WRITE
    _PERMS[id(flags)] = (flags, need)
    return need


_MATCHERS = {}   # key pattern -> a function matching a key as stringmatch does
_GLOB = b"*?[\\"


def _matcher(pat: bytes):
    """The pattern's matcher, as stringmatch decides: equality, a prefix
    test (``abc*``) or ``*`` without the glob engine, stringmatch for
    anything else."""
    m = _MATCHERS.get(pat)
    if m is None:
        body = pat[:-1] if pat.endswith(b"*") else pat
        if any(c in _GLOB for c in body):
            def m(k, p=pat):
                return stringmatch(p, k)
        elif pat == b"*":
            m = bool            # (stringmatch's "*" does not match an empty key)
        elif body is not pat:
            m = _prefix(body)
        else:
            m = pat.__eq__
        if len(_MATCHERS) < 65536:
            _MATCHERS[pat] = m
    return m


def _prefix(p):
    def m(k):
        return k.startswith(p)
    return m


def _check_key(sel, key: bytes, need: int) -> bool:
    if sel.allkeys:
        return True
    for pat, fl in sel.patterns:
        if fl & need == need and _matcher(pat)(key):
            return True
    return False


def channel_allowed(patterns, channel: bytes, is_pattern: bool) -> bool:
    """ACLCheckChannelAgainstList: a channel matches the user's patterns as
    a glob; a PSUBSCRIBE pattern only matches an equal pattern."""
    for p in patterns:
        if (p == channel) if is_pattern else stringmatch(p, channel):
            return True
    return False


def _check_selector(sel, cmd, argv, keys_cache):
    """ACLSelectorCheckCmd -> (result, argument index)."""
    if not sel.allcommands and not cmd.noauth and cmd not in sel.allowed:
        fa = sel.firstargs
        lst = fa.get(cmd) if fa else None
        if lst is None or len(argv) < 2:
            return DENIED_CMD, 0
        arg = argv[2 if cmd.parent is not None else 1].lower()
        if not any(a.lower() == arg for a in lst):
            return DENIED_CMD, 0
    if not sel.allkeys and has_keys(cmd):
        keys = keys_cache[0]
        if keys is None:
            keys = keys_cache[0] = get_keys_with_flags(cmd, argv) or ()
        for pos, flags in keys:
            if not _check_key(sel, argv[pos], _key_perm(flags)):
                return DENIED_KEY, pos
    ch = cmd.channels
    if ch is not None and not sel.allchannels and ch[0] & 3:
        fl, start, count = ch
        stop = len(argv) if count < 0 else min(len(argv), start + count)
        for i in range(start, stop):
            if not channel_allowed(sel.channels, argv[i], bool(fl & 8)):
                return DENIED_CHANNEL, i
    return OK, 0


def check_command(user, cmd, argv):
    """ACLCheckAllUserCommandPerm -> (result, index of the key or channel)."""
    if user.unrestricted:
        return OK, 0
    best, best_idx = DENIED_CMD, 0
    cache = [None]
    for sel in user.selectors:
        r, idx = _check_selector(sel, cmd, argv, cache)
        if r == OK:
            return OK, 0
        if r > best or (r == best and idx > best_idx):
            best, best_idx = r, idx
    return best, best_idx


def check_key(user, key: bytes, need: int) -> bool:
    """ACLUserCheckKeyPerm."""
    if user.unrestricted:
        return True
    return any(_check_key(s, key, need) for s in user.selectors)


def check_channel(user, channel: bytes, is_pattern: bool) -> bool:
    """ACLUserCheckChannelPerm."""
    for s in user.selectors:
        if s.allchannels or channel_allowed(s.channels, channel, is_pattern):
            return True
    return False


def _unrestricted_keys(sel, need) -> bool:
    if sel.allkeys:
        return True
    return any(fl & need == need and pat == b"*" for pat, fl in sel.patterns)


def check_unrestricted_keys(user, cmd, argv, need=READ) -> bool:
    """ACLUserCheckCmdWithUnrestrictedKeyAccess (SORT's BY and GET)."""
    if user.unrestricted:
        return True
    cache = [None]
    for s in user.selectors:
        if _check_selector(s, cmd, argv, cache)[0] == OK and _unrestricted_keys(s, need):
            return True
    return False


def noperm_text(result, cmd) -> str:
    """processCommand's -NOPERM replies."""
    if result == DENIED_CMD:
        return "NOPERM this user has no permissions to run the '%s' command" % cmd.fullname
    if result == DENIED_KEY:
        return "NOPERM this user has no permissions to access one of the keys used as arguments"
    if result == DENIED_CHANNEL:
        return "NOPERM this user has no permissions to access one of the channels used as arguments"
    return "ERR no permission"


def exec_noperm_text(result) -> str:
    """EXEC's reply for a queued command the rules no longer allow."""
    reason = {
        DENIED_CMD: "no permission to execute the command or subcommand",
        DENIED_KEY: "no permission to touch the specified keys",
        DENIED_CHANNEL: "no permission to access one of the channels used as arguments",
    }.get(result, "no permission")
    return ("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC "
            "call. This command is no longer allowed for the following reason: %s" % reason)


def script_noperm_text(result) -> str:
    return "The user executing the script %s" % MESSAGES.get(result, "lacking the permissions for the command")
