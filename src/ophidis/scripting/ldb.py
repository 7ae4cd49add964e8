"""The Lua debugger (eval.c's LDB): the session of an EVAL run under
SCRIPT DEBUG YES (a forked child debugs, the parent drops the client) or
SYNC (the server is blocked while the script is debugged).

A session talks to the debugging client over its socket directly, with
blocking I/O, as Redis does: commands arrive as RESP multibulks (the
debugger's own forgiving parser), answers leave as a multibulk of status
lines (the log).  This object holds the session's state (breakpoints,
step mode, the log, the source split into lines) and does everything that
needs no Lua stack; the line hook and the commands that read the stack
(print, eval, redis, trace, abort) live in sandbox.lua, which calls the
engine's ``ldb_*`` callbacks.  The session ends with ``<endsession>`` and
the client is closed after the EVAL reply.

The socket is used as a plain file descriptor: a TLS client cannot debug.
"""

from __future__ import annotations

import os
import select
from time import monotonic

from ..protocol.resp import sdscatrepr
from ..util import atoi, try_int

MAX_LEN_DEFAULT = 256       # LDB_MAX_LEN_DEFAULT: replies / values trimmed to this
BREAKPOINTS_MAX = 64
SEND_TIMEOUT = 5.0          # connSendTimeout of the session
MAX_CBUF = 1 << 20

HELP = (
    "Redis Lua debugger help:",
    "[h]elp               Show this help.",
    "[s]tep               Run current line and stop again.",
    "[n]ext               Alias for step.",
    "[c]ontinue           Run till next breakpoint.",
    "[l]ist               List source code around current line.",
    "[l]ist [line]        List source code around [line].",
    "                     line = 0 means: current position.",
    "[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
    "                     to show before/after [line].",
    "[w]hole              List all source code. Alias for 'list 1 1000000'.",
    "[p]rint              Show all the local variables.",
    "[p]rint <var>        Show the value of the specified variable.",
    "                     Can also show global vars KEYS and ARGV.",
    "[b]reak              Show all breakpoints.",
    "[b]reak <line>       Add a breakpoint to the specified line.",
    "[b]reak -<line>      Remove breakpoint from the specified line.",
    "[b]reak 0            Remove all breakpoints.",
    "[t]race              Show a backtrace.",
    "[e]val <code>        Execute some Lua code (in a different callframe).",
    "[r]edis <cmd>        Execute a Redis command.",
    "[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
    "                     Specifying zero as <len> means unlimited.",
    "[a]bort              Stop the execution of the script. In sync",
    "                     mode dataset changes will be retained.",
    "",
    "Debugger functions you can call from Lua scripts:",
    "redis.debug()        Produce logs in the debugger console.",
    "redis.breakpoint()   Stop execution like if there was a breakpoint in the",
    "                     next line of code.",
)
_HELP = tuple(s.encode() for s in HELP)

# command name -> the verb sandbox.lua performs (None: done here)
_VERBS = {b"s": "step", b"step": "step", b"n": "step", b"next": "step",
          b"c": "continue", b"continue": "continue", b"t": "trace", b"trace": "trace",
          b"e": "eval", b"eval": "eval", b"a": "abort", b"abort": "abort",
          b"r": "redis", b"redis": "redis", b"p": "print", b"print": "print"}
UNKNOWN = b"<error> Unknown Redis Lua debugger command or wrong number of arguments."


class Ldb:
    """One debugging session (the ``ldb`` struct of eval.c)."""

    def __init__(self, fd: int, source: bytes, forked: bool):
        self.fd = fd
        self.forked = forked
        self.logs: list = []
        self.bp: list = []
        self.step = True
        self.luabp = False
        src = source.rstrip(b"\r\n")
        self.lines = src.split(b"\n") if src else []
        self.currentline = 0
        self.cbuf = b""
        self.maxlen = MAX_LEN_DEFAULT
        self.hint_sent = False
        self.closed = False        # the client went away (no more reads)
        self.stop_requested = None  # a callable: True when the server must stop (shutdown)

    # -- the log -------------------------------------------------------------------
    def log(self, entry: bytes):
        self.logs.append(entry)

    def log_maxlen(self, entry: bytes):
        """ldbLogWithMaxLen: trimmed to maxlen, with a hint the first time."""
        if self.maxlen and len(entry) > self.maxlen:
            self.logs.append(entry[:self.maxlen] + b" ...")
            if not self.hint_sent:
                self.hint_sent = True
                self.logs.append(b"<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.")
        else:
            self.logs.append(entry)

    def send(self):
        """The log as a multibulk of status lines (newlines become spaces)."""
        logs, self.logs = self.logs, []
        out = [b"*%d\r\n" % len(logs)]
        for e in logs:
            out.append(b"+" + e.replace(b"\r", b" ").replace(b"\n", b" ") + b"\r\n")
        self.write(b"".join(out))

    def write(self, data: bytes):
        """A blocking write, given up after SEND_TIMEOUT (errors are left
        for the next read to notice, as Redis does)."""
        if self.closed:
            return
        deadline = monotonic() + SEND_TIMEOUT
        view = memoryview(data)
        p = select.poll()
        p.register(self.fd, select.POLLOUT)
        while view:
            left = deadline - monotonic()
            if left <= 0:
                return
            try:
                if not p.poll(left * 1000):
                    continue
                n = os.write(self.fd, view)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                return
            view = view[n:]

    # -- source --------------------------------------------------------------------
    def source_line(self, n: int) -> bytes:
        if 1 <= n <= len(self.lines):
            return self.lines[n - 1]
        return b"<out of range source code line>"

    def log_source_line(self, n: int):
        bp = n in self.bp
        cur = n == self.currentline
        prefix = b"->#" if cur and bp else b"-> " if cur else b"  #" if bp else b"   "
        self.log(b"%s%-3d %s" % (prefix, n, self.source_line(n)))

    def list(self, around: int, context: int):
        for j in range(1, len(self.lines) + 1):
            if around != 0 and abs(around - j) > context:
                continue
            self.log_source_line(j)

    # -- reading commands ----------------------------------------------------------
    def _parse(self):
        """ldbReplParseCommand: argv, None (read more) or the error text."""
        buf = self.cbuf
        if not buf:
            return None
        p = buf.find(b"*")
        if p < 0:
            return "protocol error"
        h = _bounded_length(buf, p)
        if h is None or h.__class__ is str:
            return h
        argc, p = h
        argv = []
        while len(argv) < argc:
            if p >= len(buf) or buf[p] == 0:
                return None
            if buf[p] != 36:      # '$'
                return "protocol error"
            h = _bounded_length(buf, p)
            if h is None or h.__class__ is str:
                return h
            n, p = h
            if p + n + 2 > len(buf):
                return None
            argv.append(buf[p:p + n])
            p += n
            if buf[p:p + 2] != b"\r\n":
                return "protocol error"
            p += 2
        return argv

    def read_command(self):
        """The next command (a list of bytes), None once the client is gone
        (the script then runs on without stopping), or an error text the
        script must fail with."""
        while True:
            r = self._parse()
            if r.__class__ is list:
                self.cbuf = b""
                return r
            if r is not None:
                return r
            data = self._read()
            if not data:
                self.closed = True
                self.step = False
                self.bp = []
                return None
            self.cbuf += data
            if len(self.cbuf) > MAX_CBUF:
                self.cbuf = b""
                return "max client buffer reached"

    def _read(self) -> bytes:
        if self.closed:
            return b""
        p = select.poll()
        p.register(self.fd, select.POLLIN)
        while True:
            stop = self.stop_requested
            if stop is not None and stop():
                return b""      # as a read interrupted by the shutdown signal
            try:
                if not p.poll(100):
                    continue
                return os.read(self.fd, 1024)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                return b""

    # -- the line hook and commands --------------------------------------------------
    def on_line(self, is_count: bool, line: int, started: float, timelimit: float) -> int:
        """luaLdbLineHook's decision at a line of the script: 0 go on, 1
        stopped (the log sent, the REPL follows), 2 stopped because the
        script ran too long."""
        self.currentline = line
        bp = line in self.bp or self.luabp
        timeout = False
        if is_count and not self.step and not bp:
            if monotonic() - started < timelimit:
                return 0
            timeout = True
            self.step = True
        if not (self.step or bp):
            return 0
        if bp:
            reason = b"redis.breakpoint() called" if self.luabp else b"break point"
        elif timeout:
            reason = b"timeout reached, infinite loop?"
        else:
            reason = b"step over"
        self.step = False
        self.luabp = False
        self.log(b"* Stopped at %d, stop reason = %s" % (line, reason))
        self.log_source_line(line)
        self.send()
        return 2 if timeout else 1

    def command(self, argv) -> str | None:
        """Run a debugger command that needs no Lua stack (the log is sent);
        return the verb sandbox.lua performs otherwise."""
        name = argv[0].lower()
        verb = _VERBS.get(name)
        if verb == "redis" and len(argv) == 1:
            verb = None
        elif verb is not None:
            if verb == "step":
                self.step = True
            elif verb == "redis":
                self.step = True      # redis.call logs the command and its reply
            return verb
        if name in (b"h", b"help"):
            self.logs.extend(_HELP)
        elif name in (b"m", b"maxlen"):
            self._maxlen(argv)
        elif name in (b"b", b"break"):
            self._break(argv)
        elif name in (b"l", b"list"):
            around, ctx = self.currentline, 5
            if len(argv) > 1:
                num = atoi(argv[1])
                if num > 0:
                    around = num
            if len(argv) > 2:
                ctx = atoi(argv[2])
            self.list(around, ctx)
        elif name in (b"w", b"whole"):
            self.list(1, 1000000)
        else:
            self.log(UNKNOWN)
        self.send()
        return None

    def _maxlen(self, argv):
        if len(argv) == 2:
            n = atoi(argv[1])
            self.hint_sent = True
            if n != 0 and n <= 60:
                n = 60
            self.maxlen = n
        if self.maxlen:
            self.log(b"<value> replies are truncated at %d bytes." % self.maxlen)
        else:
            self.log(b"<value> replies are unlimited.")

    def _break(self, argv):
        if len(argv) == 1:
            if not self.bp:
                self.log(b"No breakpoints set. Use 'b <line>' to add one.")
                return
            self.log(b"%d breakpoints set:" % len(self.bp))
            for n in self.bp:
                self.log_source_line(n)
            return
        for arg in argv[1:]:
            line = try_int(arg)
            if line is None:
                self.log(b"Invalid argument:'%s'" % arg)
            elif line == 0:
                self.bp = []
                self.log(b"All breakpoints removed.")
            elif line > 0:
                if len(self.bp) == BREAKPOINTS_MAX:
                    self.log(b"Too many breakpoints set.")
                elif 0 < line <= len(self.lines) and line not in self.bp:
                    self.bp.append(line)
                    self.list(line, 1)
                else:
                    self.log(b"Wrong line number.")
            elif -line in self.bp:
                self.bp.remove(-line)
                self.log(b"Breakpoint removed.")
            else:
                self.log(b"No breakpoint in the specified line.")

    # -- what redis.call logs while stepping ------------------------------------------
    def log_redis_command(self, argv):
        parts = [b"<redis>"]
        for j, a in enumerate(argv):
            if j == 10:
                parts.append(b" ... (%d more)" % (len(argv) - j - 1))
                break
            parts.append(b" " + a)
        self.log(b"".join(parts))

    def log_reply(self, reply: bytes):
        out = []
        try:
            _human(reply, 0, out)
        except (ValueError, IndexError):
            pass
        self.log_maxlen(b"<reply> " + b"".join(out))


def _length(buf: bytes, p: int):
    """The number after the type byte at p, and where its line ends
    (after the CRLF); None when the line is not complete."""
    e = buf.find(b"\r\n", p)
    if e < 0:
        return None
    return atoi(buf[p + 1:e]), e + 2


def _bounded_length(buf, p):
    # _length, and the error text when the count is not in 1..1024 (the
    # debugger's limits for a command's arguments and their lengths)
    h = _length(buf, p)
    if h is not None and not 0 < h[0] <= 1024:
        return "protocol error"
    return h


def _human(r: bytes, pos: int, out: list) -> int:
    """ldbRedisProtocolToHuman: one reply at pos appended to out in the
    debugger's notation; returns the position after it."""
    end = r.index(b"\r\n", pos)
    t = r[pos]
    line = r[pos + 1:end]
    nxt = end + 2
    if t == 58:                         # :
        out.append(line)
    elif t == 36:                       # $
        n = int(line)
        if n == -1:
            out.append(b"NULL")
        else:
            out.append(sdscatrepr(r[nxt:nxt + n]))
            nxt += n + 2
    elif t == 43 or t == 45:            # + -
        out.append(sdscatrepr(r[pos:end]))
    elif t == 42 or t == 126:           # * ~
        n = int(line)
        if n == -1:
            out.append(b"NULL")
            return nxt
        out.append(b"[" if t == 42 else b"~(")
        for j in range(n):
            nxt = _human(r, nxt, out)
            if j != n - 1:
                out.append(b",")
        out.append(b"]" if t == 42 else b")")
    elif t == 37:                       # %
        n = int(line)
        out.append(b"{")
        for j in range(n):
            nxt = _human(r, nxt, out)
            out.append(b" => ")
            nxt = _human(r, nxt, out)
            if j != n - 1:
                out.append(b",")
        out.append(b"}")
    elif t == 95:                       # _
        out.append(b"(null)")
    elif t == 35:                       # #
        out.append(b"#true" if line[:1] == b"t" else b"#false")
    elif t == 44:                       # ,
        out.append(b"(double) " + line)
    elif t == 61:                       # = (verbatim: not shown, skipped)
        nxt += int(line) + 2
    return nxt


# The forked debugging sessions still running (SCRIPT DEBUG YES; ldb.children).
LDB_CHILDREN: list = []


def reap_ldb_children():
    """Cron: reap the forked debugging sessions that ended."""
    for ch in LDB_CHILDREN[:]:
        if ch.poll() is not None:
            LDB_CHILDREN.remove(ch)
