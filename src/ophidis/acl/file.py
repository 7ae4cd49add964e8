"""Users from files: the ACL file (ACL LOAD / SAVE, ``aclfile``) and the
``user`` lines of the configuration file (validated as the configuration
is read, applied at start-up, written back by CONFIG REWRITE)."""

from __future__ import annotations

import os
import time

from .. import log
from .users import ERR_DUPLICATE, ERR_UNKNOWN, RuleError, User, has_spaces, merge_selector_args


def user_line(u: User) -> bytes:
    return b"user " + u.name + b" " + u.describe()


def validate_user_line(argv, seen, pubsub_all):
    """ACLAppendUserForLoading: the rules of a ``user`` configuration line
    (bytes arguments, "user" first) -> None, or (index, reason) of the bad
    argument (unknown commands are accepted here, as in Redis)."""
    if len(argv) < 2 or argv[0].lower() != b"user":
        return 0, "Wrong format"
    if argv[1] in seen:
        return 1, ERR_DUPLICATE
    merged, bad = merge_selector_args(argv[2:])
    if merged is None:
        return bad, "Wrong format"
    fake = User(b"__fakeuser__", pubsub_all)
    for j, op in enumerate(merged):
        try:
            fake.apply(op, pubsub_all)
        except RuleError as e:
            if e.reason != ERR_UNKNOWN:
                return j, e.reason
    seen.add(argv[1])
    return None


def parse_acl_file(path: str, fname_for_errors: str, pubsub_all, make_default):
    """ACLLoadFromFile's parsing: (users by name, None) or (None, errors)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return None, "Error loading ACLs, opening file '%s': %s" % (path, e.strerror)
    users = {}
    errors = ""
    fn = fname_for_errors
    for i, line in enumerate(data.split(b"\n")):
        linenum = i + 1
        line = line.strip(b" \t\r\n")
        if not line:
            continue
        argv = line.split(b" ")
        if argv[0] != b"user" or len(argv) < 2:
            errors += "%s:%d should start with user keyword followed by the username. " % (fn, linenum)
            continue
        name = argv[1]
        if has_spaces(name):
            errors += "'%s:%d: username '%s' contains invalid characters. " % (
                fn, linenum, name.decode("utf-8", "replace"))
            continue
        if name in users:
            errors += "WARNING: Duplicate user '%s' found on line %d. " % (name.decode("utf-8", "replace"), linenum)
            continue
        u = User(name, pubsub_all)
        users[name] = u
        merged, _ = merge_selector_args(argv[2:])
        if merged is None:
            errors += "%s:%d: Unmatched parenthesis in selector definition." % (fn, linenum)
            continue
        syntax_error = False
        for op in merged:
            op = op.strip(b"\t\r\n")
            try:
                u.apply(op, pubsub_all)
            except RuleError as e:
                if e.reason == ERR_UNKNOWN:
                    errors += "%s:%d: Error in applying operation '%s': %s. " % (
                        fn, linenum, op.decode("utf-8", "replace"), e.reason)
                elif not syntax_error:
                    errors += "%s:%d: %s. " % (fn, linenum, e.reason)
                    syntax_error = True
    if errors:
        return None, errors + ("WARNING: ACL errors detected, no change to the previously active ACL rules "
                               "was performed")
    if b"default" not in users:
        users[b"default"] = make_default()
    return users, None


def save_acl_file(path: str, users) -> bool:
    """ACLSaveToFile: a temporary file renamed over the old one."""
    text = b"".join(user_line(users[n]) + b"\n" for n in sorted(users))
    tmp = "%s.tmp-%d-%d" % (path, os.getpid(), int(time.time() * 1000))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT, 0o644)
    except OSError as e:
        log.warning("Opening temp ACL file for ACL SAVE: %s" % e.strerror)
        return False
    try:
        try:
            os.write(fd, text)
        except OSError as e:
            log.warning("Writing ACL file for ACL SAVE: %s" % e.strerror)
            return False
        finally:
            os.close(fd)
        try:
            os.rename(tmp, path)
        except OSError as e:
            log.warning("Renaming ACL file for ACL SAVE: %s" % e.strerror)
            return False
        tmp = None
        return True
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
