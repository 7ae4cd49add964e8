"""ACL users and selectors: the rule language of ACL SETUSER, the ``user``
lines of the configuration and of the ACL file, and the descriptions ACL
LIST / GETUSER / SAVE give back (acl.c's ACLSetUser, ACLSetSelector,
ACLDescribeUser).

A selector's command permissions are a set of Command objects (the
commands and subcommands of the one table, cmdtable.registry.TABLE) plus the
"future commands" mark that +@all sets; categories come from each
command's registration (``Command.acl``).  Names, passwords and patterns
are bytes; passwords are kept as SHA-256 hex strings.
"""

from __future__ import annotations

import hashlib

from ..cmdtable.registry import ACL_CATEGORIES, TABLE, lookup_by_name
from ..protocol.resp import split_args

# The categories in Redis's order (ACL CAT, COMMAND INFO, descriptions): the
# command table's list.
CATEGORIES = ACL_CATEGORIES
_CATSET = frozenset(CATEGORIES)

# Key pattern permissions.
READ = 1
WRITE = 2
ALL_PERMS = 3

# Why a rule was refused: the text of ACLSetUserStringError.
ERR_UNKNOWN = "Unknown command or category name in ACL"
ERR_SYNTAX = "Syntax error"
ERR_KEYS_AFTER_ALL = ("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not "
                      "have any effect. Try 'resetkeys' to start with an empty list of patterns")
ERR_CHANNELS_AFTER_ALL = ("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does "
                          "not have any effect. Try 'resetchannels' to start with an empty list of channels")
ERR_NO_SUCH_PASS = "The password you are trying to remove from the user does not exist"
ERR_BAD_HASH = ("The password hash must be exactly 64 characters and contain only lowercase hexadecimal "
                "characters")
ERR_DUPLICATE = "Duplicate user found. A user can only be defined once in config files"
ERR_FIRSTARG_SUB = "Allowing first-arg of a subcommand is not supported"


class RuleError(Exception):
    """A rule that could not be applied; ``reason`` is Redis's text."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


# -- the command table, as ACL sees it -----------------------------------------------

_CACHE = {}
# fullname -> Command taken out of the table (MODULE UNLOAD): the selectors
# keep its permission, as Redis keeps a command name's ACL id, so the
# command loaded again is allowed (or not) as before
RETIRED: dict = {}


# Told (no arguments) whenever a user's rules change (User._update makes
# its ``fast`` anew): the compiled request loop keeps each client's
# ``user.fast`` until then (net/client.py sets it; None: nothing to tell).
_rules_changed = None


def set_rules_hook(fn):
    global _rules_changed
    _rules_changed = fn


def table_changed():
    """Commands were added to or removed from the table (modules)."""
    _CACHE.clear()


def top_commands() -> list:
    """The top-level commands of the table, each once (server.orig_commands)."""
    lst = _CACHE.get("top")
    if lst is None:
        seen = set()
        lst = []
        for name, cmd in TABLE.items():
            if id(cmd) in seen or name != name.lower():
                continue
            seen.add(id(cmd))
            lst.append(cmd)
        _CACHE["top"] = lst
    return lst


def all_commands() -> list:
    """Every command and subcommand, parents before their subcommands."""
    lst = _CACHE.get("all")
    if lst is None:
        lst = []
        for cmd in top_commands():
            lst.append(cmd)
            lst.extend(cmd.subcommands.values())
        _CACHE["all"] = lst
    return lst


def category_commands(cat: str) -> list:
    """The commands (and subcommands) of a category, in table order."""
    key = "cat:" + cat
    lst = _CACHE.get(key)
    if lst is None:
        lst = [c for c in all_commands() if cat in c.acl]
        _CACHE[key] = lst
    return lst


def hash_password(pw: bytes) -> bytes:
    return hashlib.sha256(pw).hexdigest().encode()


def valid_hash(h: bytes) -> bool:
    return len(h) == 64 and all(48 <= c <= 57 or 97 <= c <= 102 for c in h)


def _password_hash(op: bytes) -> bytes:
    """The hash a password rule names: >pw and <pw hash the clear text,
    #hash and !hash give it (64 lowercase hex digits)."""
    if op[:1] in (b">", b"<"):
        return hash_password(op[1:])
    h = op[1:]
    if not valid_hash(h):
        raise RuleError(ERR_BAD_HASH)
    return h


def has_spaces(s: bytes) -> bool:
    """ACLStringHasSpaces: a blank (isspace) or a NUL byte."""
    return any(c in b" \t\n\v\f\r\x00" for c in s)


# -- selectors -----------------------------------------------------------------------

class Selector:
    """A set of permissions: commands, key patterns, channel patterns.  The
    root selector of a user holds the rules given outside parentheses."""

    __slots__ = ("root", "allkeys", "allchannels", "allcommands", "future", "allowed", "firstargs",
                 "patterns", "channels", "rules")

    def __init__(self, root=False, pubsub_all=False):
        self.root = root
        self.allkeys = False
        self.allchannels = pubsub_all     # acl-pubsub-default
        self.allcommands = False
        self.future = False               # +@all given: future commands too
        self.allowed = set()              # Command objects
        self.firstargs = None             # Command -> [first arg (bytes)], or None
        self.patterns = []                # [pattern, READ|WRITE]
        self.channels = []                # patterns
        # the command and category rules as given since the last +@all or
        # -@all, in order (Redis 7.2+ keeps and reports them so; a rule
        # given again moves to the end): b"+get", b"-@geo", b"+select|0"
        self.rules = []

    def copy(self) -> "Selector":
        s = Selector(self.root)
        s.allkeys = self.allkeys
        s.allchannels = self.allchannels
        s.allcommands = self.allcommands
        s.future = self.future
        s.allowed = set(self.allowed)
        s.firstargs = {k: list(v) for k, v in self.firstargs.items()} if self.firstargs else None
        s.patterns = [list(p) for p in self.patterns]
        s.channels = list(self.channels)
        s.rules = list(self.rules)
        return s

    # -- command bits --
    def _set_bit(self, cmd, value):
        if value:
            self.allowed.add(cmd)
        else:
            self.allowed.discard(cmd)
            self.allcommands = False

    def change_perm(self, cmd, allow):
        """ACLChangeSelectorPerm: a command and all its subcommands."""
        self._set_bit(cmd, allow)
        if self.firstargs:
            self.firstargs.pop(cmd, None)
        for sub in cmd.subcommands.values():
            self._set_bit(sub, allow)

    def set_category(self, cat: str, allow):
        for cmd in top_commands():
            if cat in cmd.acl:
                self.change_perm(cmd, allow)
            for sub in cmd.subcommands.values():
                if cat in sub.acl:
                    self.change_perm(sub, allow)

    def _add_rule(self, name: bytes, allow: bool):
        """ACLUpdateCommandRules: drop the earlier rules for ``name`` (either
        sign; for a whole command, its subcommands' and first args' rules
        too), then append this one."""
        name = name.lower()
        sub = name + b"|"
        self.rules = [r for r in self.rules if r[1:] != name and not r[1:].startswith(sub)]
        self.rules.append((b"+" if allow else b"-") + name)

    def all_cmds(self, allow):
        if allow:
            self.allowed = set(all_commands())
            self.allowed.update(RETIRED.values())
            self.allcommands = True
            self.future = True
        else:
            self.allowed = set()
            self.allcommands = False
            self.future = False
        self.firstargs = None
        self.rules = []

    def recompute(self):
        """ACLRecomputeCommandBitsFromCommandRulesAllUsers, for this
        selector: the command bits rebuilt from +@all/-@all and the rules
        in order (a module's commands came or went).  A rule naming a
        command that is gone is kept, for when it comes back."""
        rules = self.rules
        self.all_cmds(self.future)
        for r in rules:
            try:
                self.apply(r)
            except RuleError:
                self.rules.append(r)

    def command_added(self, cmd, old):
        """``cmd`` was put in the table (MODULE LOAD): allowed as ``old``,
        the retired command of that name, was; a name never seen is
        allowed when +@all (future commands) holds, as Redis's bitmap
        filled by +@all allows ids not yet given."""
        if old is not None:
            allow = old in self.allowed
            self.allowed.discard(old)
            if self.firstargs and old in self.firstargs:
                self.firstargs[cmd] = self.firstargs.pop(old)
        else:
            allow = self.future
        if allow:
            self.allowed.add(cmd)

    def apply(self, op: bytes):
        """ACLSetSelector: one rule; RuleError when refused."""
        low = op.lower()
        if low in (b"allkeys", b"~*"):
            self.allkeys = True
            self.patterns = []
        elif low == b"resetkeys":
            self.allkeys = False
            self.patterns = []
        elif low in (b"allchannels", b"&*"):
            self.allchannels = True
            self.channels = []
        elif low == b"resetchannels":
            self.allchannels = False
            self.channels = []
        elif low in (b"allcommands", b"+@all"):
            self.all_cmds(True)
        elif low in (b"nocommands", b"-@all"):
            self.all_cmds(False)
        elif op[:1] in (b"~", b"%"):
            if self.allkeys:
                raise RuleError(ERR_KEYS_AFTER_ALL)
            flags = 0
            off = 1
            if op[:1] == b"%":
                n = len(op)
                while off < n:
                    ch = op[off:off + 1].upper()
                    if ch == b"R" and not flags & READ:
                        flags |= READ
                    elif ch == b"W" and not flags & WRITE:
                        flags |= WRITE
                    elif ch == b"~":
                        off += 1
                        break
                    else:
                        raise RuleError(ERR_SYNTAX)
                    off += 1
                if not flags:
                    raise RuleError(ERR_SYNTAX)
            else:
                flags = ALL_PERMS
            pat = op[off:]
            if has_spaces(pat):
                raise RuleError(ERR_SYNTAX)
            for p in self.patterns:
                if p[0] == pat:
                    p[1] |= flags
                    break
            else:
                self.patterns.append([pat, flags])
            self.allkeys = False
        elif op[:1] == b"&":
            if self.allchannels:
                raise RuleError(ERR_CHANNELS_AFTER_ALL)
            pat = op[1:]
            if has_spaces(pat):
                raise RuleError(ERR_SYNTAX)
            if pat not in self.channels:
                self.channels.append(pat)
            self.allchannels = False
        elif op[:1] == b"+" and op[1:2] != b"@":
            if b"|" not in op:
                cmd = lookup_by_name(op[1:])
                if cmd is None:
                    raise RuleError(ERR_UNKNOWN)
                self.change_perm(cmd, True)
                self._add_rule(cmd.fullname.encode(), True)
            else:
                base, _, sub = op[1:].rpartition(b"|")
                cmd = lookup_by_name(base)
                if cmd is None:
                    raise RuleError(ERR_UNKNOWN)
                if cmd.parent is not None:
                    raise RuleError(ERR_FIRSTARG_SUB)
                if not sub:
                    raise RuleError(ERR_SYNTAX)
                if cmd.subcommands:
                    subcmd = lookup_by_name(op[1:])
                    if subcmd is None:
                        raise RuleError(ERR_UNKNOWN)
                    self.change_perm(subcmd, True)
                else:
                    if self.firstargs is None:
                        self.firstargs = {}
                    lst = self.firstargs.setdefault(cmd, [])
                    if sub.lower() not in (x.lower() for x in lst):
                        lst.append(sub)
                self._add_rule(op[1:], True)
        elif op[:1] == b"-" and op[1:2] != b"@":
            cmd = lookup_by_name(op[1:])
            if cmd is None:
                raise RuleError(ERR_UNKNOWN)
            self.change_perm(cmd, False)
            self._add_rule(cmd.fullname.encode(), False)
        elif op[:1] in (b"+", b"-") and op[1:2] == b"@":
            cat = low[2:].decode("latin-1")
            if cat not in _CATSET:
                raise RuleError(ERR_UNKNOWN)
            self._add_rule(low[1:], op[:1] == b"+")
            self.set_category(cat, op[:1] == b"+")
        else:
            raise RuleError(ERR_SYNTAX)

    # -- descriptions --
    def describe_commands(self) -> bytes:
        """ACLDescribeSelectorCommandRules (Redis 7.2+): +@all or -@all,
        then the command and category rules in the order they were given
        (each rule once, at its latest place)."""
        head = b"+@all" if self.future else b"-@all"
        return b" ".join([head] + self.rules)

    def keys_description(self) -> bytes:
        if self.allkeys:
            return b"~*"
        return b" ".join(_pattern_string(p) for p in self.patterns)

    def channels_description(self) -> bytes:
        if self.allchannels:
            return b"&*"
        return b" ".join(b"&" + p for p in self.channels)

    def describe(self) -> bytes:
        """ACLDescribeSelector."""
        out = []
        if self.allkeys:
            out.append(b"~*")
        else:
            out.extend(_pattern_string(p) for p in self.patterns)
        if self.allchannels:
            out.append(b"&*")
        else:
            out.append(b"resetchannels")
            out.extend(b"&" + p for p in self.channels)
        out.append(self.describe_commands())
        return b" ".join(out)


def _pattern_string(p) -> bytes:
    pat, fl = p
    if fl == ALL_PERMS:
        return b"~" + pat
    if fl == READ:
        return b"%R~" + pat
    return b"%W~" + pat


# -- users ---------------------------------------------------------------------------

# Flags that exclude each other: rule -> (flag set, flag cleared).
_EXCLUSIVE = {
    b"on": ("on", "off"), b"off": ("off", "on"),
    b"skip-sanitize-payload": ("skip-sanitize-payload", "sanitize-payload"),
    b"sanitize-payload": ("sanitize-payload", "skip-sanitize-payload"),
}

# User flags in the order descriptions give them.
USER_FLAGS = ("on", "off", "nopass", "skip-sanitize-payload", "sanitize-payload")


class User:
    """An ACL user.  ``unrestricted``: may run every command on every key and
    channel (the default user as shipped).  ``fast``: None for such a user,
    else the request loop's cache of check.fast_plan per command (a new
    dict whenever the rules change)."""

    __slots__ = ("name", "flags", "passwords", "selectors", "acl_string", "unrestricted", "pubsub_all", "fast")

    def __init__(self, name: bytes, pubsub_all=False):
        self.name = name
        # Redis 7.2+ (ACLCreateUser): a new user, the default user too, is
        # "off" and "sanitize-payload", which descriptions show
        self.flags = {"off", "sanitize-payload"}
        self.passwords = []          # SHA-256 hex (bytes)
        self.pubsub_all = pubsub_all
        self.selectors = [Selector(True, pubsub_all)]
        self.acl_string = None
        self.unrestricted = False
        self.fast = {}

    @property
    def root(self) -> Selector:
        return self.selectors[0]

    @property
    def enabled(self) -> bool:
        return "on" in self.flags

    @property
    def nopass(self) -> bool:
        return "nopass" in self.flags

    def copy_from(self, src: "User"):
        """ACLCopyUser: the rules of src (the name stays)."""
        self.flags = set(src.flags)
        self.passwords = list(src.passwords)
        self.selectors = [s.copy() for s in src.selectors]
        self.acl_string = src.acl_string
        self._update()

    def clone(self, name=None) -> "User":
        u = User(self.name if name is None else name, self.pubsub_all)
        u.copy_from(self)
        return u

    def commands_changed(self):
        """The command table changed (a module loaded or unloaded): the
        description and the request loop's plans are made anew."""
        self.acl_string = None
        self._update()

    def _update(self):
        r = self.selectors[0]
        self.unrestricted = (len(self.selectors) == 1 and r.allcommands and r.allkeys and r.allchannels)
        self.fast = None if self.unrestricted else {}
        if _rules_changed is not None:
            _rules_changed()

    def apply(self, op: bytes, pubsub_all=None):
        """ACLSetUser: one rule; RuleError when refused."""
        self.acl_string = None
        try:
            self._apply(op, pubsub_all)
        finally:
            self._update()

    def _apply(self, op, pubsub_all):
        if not op:
            return
        low = op.lower()
        pair = _EXCLUSIVE.get(low)
        if pair is not None:
            self.flags.discard(pair[1])
            self.flags.add(pair[0])
        elif low == b"nopass":
            self.flags.add("nopass")
            self.passwords = []
        elif low == b"resetpass":
            self.flags.discard("nopass")
            self.passwords = []
        elif op[:1] in (b">", b"#"):
            h = _password_hash(op)
            if h not in self.passwords:
                self.passwords.append(h)
            self.flags.discard("nopass")
        elif op[:1] in (b"<", b"!"):
            h = _password_hash(op)
            if h not in self.passwords:
                raise RuleError(ERR_NO_SUCH_PASS)
            self.passwords.remove(h)
        elif op[:1] == b"(" and op[-1:] == b")":
            args = split_args(op[1:-1])
            s = Selector(False, self.pubsub_all if pubsub_all is None else pubsub_all)
            for a in args or ():
                s.apply(a)
            self.selectors.append(s)
        elif low == b"clearselectors":
            del self.selectors[1:]
        elif low == b"reset":
            pa = self.pubsub_all if pubsub_all is None else pubsub_all
            self._apply(b"resetpass", pa)
            r = self.selectors[0]
            r.apply(b"resetkeys")
            r.apply(b"resetchannels")
            if pa:
                r.apply(b"allchannels")
            self._apply(b"off", pa)
            self._apply(b"sanitize-payload", pa)
            del self.selectors[1:]
            r.apply(b"-@all")
        else:
            self.selectors[0].apply(op)

    def check_password(self, pw: bytes) -> bool:
        if "nopass" in self.flags:
            return True
        h = hash_password(pw)
        return h in self.passwords

    def describe(self) -> bytes:
        """ACLDescribeUser (cached until the next change)."""
        s = self.acl_string
        if s is not None:
            return s
        out = [f.encode() for f in USER_FLAGS if f in self.flags]
        out.extend(b"#" + p for p in self.passwords)
        text = b" ".join(out)
        if text:
            text += b" "
        for sel in self.selectors:
            d = sel.describe()
            text += d if sel.root else b" (" + d + b")"
        self.acl_string = text
        return text


def merge_selector_args(args: list):
    """ACLMergeSelectorArguments: a selector spread over several arguments
    ("(+get", "~x)") becomes one.  Returns (merged, None) or (None, index
    of the unmatched opening argument)."""
    out = []
    cur = None
    start = -1
    for j, op in enumerate(args):
        # an opening argument inside an open selector is part of it (Redis
        # 7.2+): "(+ping (+del )" is one selector, refused as a whole
        if start == -1 and op[:1] == b"(" and op[-1:] != b")":
            cur = op
            start = j
            continue
        if start != -1:
            cur = cur + b" " + op
            if op[-1:] == b")":
                start = -1
                out.append(cur)
            continue
        out.append(op)
    if start != -1:
        return None, start
    return out, None
