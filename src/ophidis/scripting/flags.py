"""What a script declares: the shebang of an EVAL script (``#!lua
flags=...``), and what the declared flags of a script or a function make of
its command's flags where processCommand reads them (getCommandFlags), also
for EXEC's queued commands together (multi.c's mstate flags).
"""

from __future__ import annotations

from ..cmdtable.registry import SCRIPT_CALLS
from ..errors import RedisError
from ..protocol.resp import split_args
from . import engine as lua_mod


def shebang_args(code: bytes, invalid: str, empty: str):
    """The arguments of the ``#!`` first line of a script or a library
    (sdssplitargs) and where that line ends; RedisError(invalid) when the
    line has no end, RedisError(empty) when it holds no argument."""
    end = code.find(b"\n")
    if end < 0:
        raise RedisError(invalid)
    parts = split_args(code[:end])
    if not parts:
        raise RedisError(empty)
    return parts, end


def extract_shebang(body: bytes):
    """Returns (flags, compat_mode, shebang_len); raises RedisError."""
    if not body.startswith(b"#!"):
        return [], True, 0
    parts, end = shebang_args(body, "ERR Invalid script shebang", "ERR Invalid engine in script shebang")
    if parts[0] != b"#!lua":
        raise RedisError(b"ERR Unexpected engine in script shebang: " + parts[0])
    flags = []
    for p in parts[1:]:
        if p.startswith(b"flags="):
            v = p[6:]
            for f in (v.split(b",") if v else []):
                name = f.decode("latin-1")
                if name not in lua_mod.SCRIPT_FLAGS:
                    raise RedisError(b"ERR Unexpected flag in script shebang: " + f)
                flags.append(name)
        else:
            raise RedisError(b"ERR Unknown lua shebang option: " + p)
    return flags, False, end


class CmdFlags:
    """The flags processCommand reads when they are not the command's own
    (getCommandFlags): a script call that declares its flags, or EXEC's
    queued commands together (multi.c's mstate flags)."""

    __slots__ = ("write", "denyoom", "stale", "may_replicate")

    def __init__(self, write, denyoom, stale, may_replicate):
        self.write = write
        self.denyoom = denyoom
        self.stale = stale
        self.may_replicate = may_replicate


def _declared_flags(srv, name: str, argv):
    """The flags EVAL / EVALSHA / FCALL (and their _RO forms) argv's script
    declares (a shebang, a function), or None when the command's own flags
    apply (no shebang, a script not found, a malformed shebang)."""
    if len(argv) < 2:
        return None
    try:
        if name in ("eval", "eval_ro"):
            s = srv.lua_scripts.get(lua_mod.sha1hex(argv[1]))
            flags, compat = (s.flags, s.compat) if s is not None else extract_shebang(argv[1])[:2]
        elif name in ("evalsha", "evalsha_ro"):
            if len(argv[1]) != 40:
                return None
            s = srv.lua_scripts.get(argv[1].lower())
            if s is None:
                return None
            flags, compat = s.flags, s.compat
        else:
            f = srv.functions.functions.get(argv[1].lower())
            if f is None:
                return None
            flags, compat = f.flags, False
    except (RedisError, UnicodeDecodeError):
        return None
    return None if compat else flags


def command_flags(srv, cmd, argv):
    """getCommandFlags: ``cmd`` itself (its write / denyoom / stale /
    may_replicate attributes) or, for a script call whose script declares
    flags, a CmdFlags of scriptFlagsToCmdFlags: write unless no-writes,
    deny-oom unless allow-oom or no-writes, stale only with allow-stale,
    never may-replicate."""
    if cmd.name not in SCRIPT_CALLS:
        return cmd
    flags = _declared_flags(srv, cmd.name, argv)
    if flags is None:
        return cmd
    nw = "no-writes" in flags
    return CmdFlags(not nw, not (nw or "allow-oom" in flags), "allow-stale" in flags, False)


def exec_flags(srv, cmd, queued) -> CmdFlags:
    """EXEC's flags with its queued commands': any write, deny-oom or
    may-replicate one counts; stale only if all are."""
    write = denyoom = mayrep = False
    stale = cmd.stale
    for qc, qargv in queued:
        f = command_flags(srv, qc, qargv)
        write = write or f.write
        denyoom = denyoom or f.denyoom
        mayrep = mayrep or f.may_replicate
        stale = stale and f.stale
    return CmdFlags(write, denyoom or cmd.denyoom, stale, mayrep or cmd.may_replicate)
