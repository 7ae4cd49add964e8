"""The permission check (acl.c's ACLCheckAllUserCommandPerm and its
helpers): may a user run this command line, with these keys and these
channels?  Used by dispatch (processCommand), EXEC, scripts' redis.call,
ACL DRYRUN, SORT's BY/GET and redis.acl_check_cmd.

Keys come from the command table's key specs (their ACCESS / INSERT /
DELETE / UPDATE flags decide whether a read or a write permission is
needed), channels from the ``channels=`` rule of the command's registration.
"""

from __future__ import annotations

from ..cmdtable.keys import get_keys_with_flags, has_keys, key_extractor, range_last, spec_kinds
from ..util import stringmatch
from .users import ALL_PERMS, READ, WRITE

# Results, ordered as Redis's ACL_DENIED_* (the most relevant one is kept).
OK = 0
DENIED_CMD = 1
DENIED_KEY = 2
DENIED_AUTH = 3
DENIED_CHANNEL = 4



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


# -- the request loop's check ------------------------------------------------
#
# For a restricted user, the fast path of the request loop (client.py's
# _run_requests, net/_client.pyx) runs a command directly when fast_plan has
# decided, once per user and command, that check_command can only answer OK
# or deny a key, and the command line's keys all match: then check_command
# would have said OK.  Anything else (a command not allowed, a subcommand
# allowed by its first argument, channels, several selectors, keys found by
# keywords or counts, glob patterns, a key the patterns refuse) takes the
# general path, where check_command decides and ACL LOG records a denial.

def fast_plan(user, cmd):
    """False when the loop cannot decide for this user and command, else a
    tuple with one entry per key spec: (first, lastkey, step, limit, star,
    exact, prefixes), the range of key positions as the key spec's
    begin_search index / find_keys range give it, and the patterns that
    grant the spec's permission: ``*`` (any non-empty key), exact names,
    prefixes (``abc*``)."""
    if len(user.selectors) != 1:
        return False
    sel = user.selectors[0]
    if not sel.allcommands and not cmd.noauth and cmd not in sel.allowed:
        return False
    ch = cmd.channels
    if ch is not None and not sel.allchannels and ch[0] & 3:
        return False
    if sel.allkeys or not has_keys(cmd):
        return ()
    varflags = spec_kinds(cmd)[1]
    if not varflags and key_extractor(cmd) is not None:
        return False
    plan = []
    for spec in cmd.key_specs:
        flags = spec.get("flags", ())
        if "NOT_KEY" in flags:
            continue
        bs, fk = spec["begin_search"], spec["find_keys"]
        if "INCOMPLETE" in flags or "index" not in bs or "range" not in fk:
            return False
        # The key positions are the spec's; with VARIABLE_FLAGS (SET's GET,
        # BITFIELD's SET) the arguments decide what is needed: a pattern
        # granting both permissions is asked for (else the general path).
        need = ALL_PERMS if varflags else _key_perm(flags)
        star, exact, prefixes = False, set(), []
        for pat, fl in sel.patterns:
            if fl & need != need:
                continue
            body = pat[:-1] if pat.endswith(b"*") else pat
            if any(c in _GLOB for c in body):
                return False
            if pat == b"*":
                star = True
            elif body is pat:
                exact.add(pat)
            else:
                prefixes.append(body)
        r = fk["range"]
        plan.append((bs["index"]["pos"], r["lastkey"], r["step"], r["limit"], star, frozenset(exact),
                     tuple(prefixes)))
    return tuple(plan)


def fast_allows(fast, user, cmd, argv) -> bool:
    """May the request loop run argv directly for this restricted user?
    (``fast``: user.fast, the plans by command).  net/_client.pyx has the same
    check compiled (_acl_ok)."""
    plan = fast.get(cmd)
    if plan is None:
        plan = fast[cmd] = fast_plan(user, cmd)
    if plan is False:
        return False
    argc = len(argv)
    for first, lastkey, step, limit, star, exact, prefixes in plan:
        last = range_last(first, lastkey, limit, argc)
        if last >= argc or last < first or first >= argc:
            return False
        for i in range(first, last + 1, step):
            k = argv[i]
            if not ((star and k) or k in exact or any(k.startswith(p) for p in prefixes)):
                return False
    return True


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


def error_message(result, user_name: bytes, cmd, value: bytes = b"", verbose=False) -> bytes:
    """getAclErrorMessage (Redis 7.2+): who may not do what; the key or
    channel is named only in the verbose form (ACL DRYRUN)."""
    if result == DENIED_CMD:
        return b"User %s has no permissions to run the '%s' command" % (user_name, cmd.fullname.encode())
    what = b"key" if result == DENIED_KEY else b"channel"
    if verbose:
        return b"User %s has no permissions to access the '%s' %s" % (user_name, value, what)
    return b"No permissions to access a %s" % what


def noperm_text(result, cmd, user_name: bytes) -> bytes:
    """processCommand's -NOPERM replies."""
    return b"NOPERM " + error_message(result, user_name, cmd)


def exec_noperm_text(result) -> str:
    """EXEC's reply for a queued command the rules no longer allow."""
    reason = {
        DENIED_CMD: "no permission to execute the command or subcommand",
        DENIED_KEY: "no permission to touch the specified keys",
        DENIED_CHANNEL: "no permission to access one of the channels used as arguments",
    }.get(result, "no permission")
    return ("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC "
            "call. This command is no longer allowed for the following reason: %s" % reason)


def script_noperm_text(result, cmd, user_name: bytes) -> bytes:
    """scriptVerifyACL's error (the caller adds ERR)."""
    return b"ACL failure in script: " + error_message(result, user_name, cmd)
