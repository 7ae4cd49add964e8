"""The interactive mode of ophidis-cli: the prompt with line editing,
history, completion and hints (tools/lineedit.py), repeat counts and the
cli's own commands (quit, connect, clear, :set).
"""

from __future__ import annotations

import os
import sys
import time

from ophidis.protocol import resp as protocol
from ophidis.tools.cli.help import completions, hint, init_help
from ophidis.tools.cli.options import HISTFILE_DEFAULT, HISTFILE_ENV
from ophidis.tools.cli.output import OUT_STANDARD, flush, out
from ophidis.tools.lineedit import LineEditor
from ophidis.tools.resp import atoi


def _is_sensitive(argv):
    if not argv:
        return False
    n = argv[0].lower()
    if n in (b"auth",):
        return True
    if n == b"hello" and len(argv) > 2:
        return any(a.lower() == b"auth" for a in argv[2:])
    if n == b"migrate":
        return any(a.lower() in (b"auth", b"auth2") for a in argv[6:])
    if n == b"acl" and len(argv) > 1 and argv[1].lower() == b"setuser":
        return True
    if n == b"config" and len(argv) > 2 and argv[1].lower() == b"set":
        return any(a.lower() in (b"masterauth", b"masteruser", b"requirepass") for a in argv[2::2])
    return False


def repl(cli):
    c = cli.cfg
    init_help(cli)
    c.interactive = True
    ed = LineEditor(completion=lambda buf: completions(cli, buf), hints=lambda buf: hint(cli, buf))
    cli.editor = ed
    histfile = None
    if os.isatty(0):
        histfile = os.environ.get(HISTFILE_ENV)
        if histfile is None:
            home = os.environ.get("HOME")
            histfile = os.path.join(home, HISTFILE_DEFAULT) if home else None
        elif histfile in ("", "/dev/null"):
            histfile = None
        if histfile:
            ed.history_load(histfile)
    history = os.isatty(0)
    while True:
        try:
            line = ed.readline(cli.prompt())
        except KeyboardInterrupt:
            break       # Ctrl-C at the prompt quits, as in redis-cli

        if line is None:
            break
        if not line:
            continue
        argv = protocol.split_args(line.encode("utf-8", "surrogateescape"))
        if argv is None:
            out("Invalid argument(s)\n")
            flush()
            if history:
                ed.history_add(line)
                if histfile:
                    ed.history_save(histfile)
            continue
        if not argv:
            continue
        repeat = 1
        skip = 0
        first = argv[0].decode("latin-1")
        if len(argv) > 1 and first.lstrip("+-").isdigit():
            try:
                repeat = int(first)
            except ValueError:
                repeat = 0
            if repeat <= 0:
                out("Invalid redis-cli repeat command option value.\n")
                flush()
                continue
            skip = 1
        cmdargs = argv[skip:]
        if history and not _is_sensitive(cmdargs):
            ed.history_add(line)
            if histfile:
                ed.history_save(histfile)
        name = argv[0].lower()
        if name in (b"quit", b"exit"):
            sys.exit(0)
        if argv[0][:1] == b":":
            if name == b":set" and len(argv) >= 2:
                p = argv[1].lower()
                if p == b"hints":
                    c.hints = True
                elif p == b"nohints":
                    c.hints = False
                else:
                    out("unknown ophidis-cli preference '%s'\n" % argv[1].decode(errors="replace"))
            else:
                out("unknown ophidis-cli internal command '%s'\n" % argv[0].decode(errors="replace"))
            flush()
            continue
        if name == b"connect" and len(argv) == 3:
            c.host = argv[1].decode()
            c.port = atoi(argv[2].decode())
            c.socket = None
            cli.connect(force=True)
            init_help(cli)
            continue
        if name == b"clear" and len(argv) == 1:
            out("\x1b[H\x1b[2J")
            flush()
            continue
        t0 = time.monotonic()
        try:
            cli.issue_command(cmdargs, repeat)
        except KeyboardInterrupt:
            # Abort a blocking state (MONITOR, SUBSCRIBE, BLPOP ...) and reconnect.
            out("\n")
            cli.drop()
            cli.connect(force=True)
        elapsed = time.monotonic() - t0
        if elapsed >= 0.5 and c.output == OUT_STANDARD:
            out("(%.2fs)\n" % elapsed)
            flush()
    sys.exit(0)
