"""The ophidis-cli session: the connection (AUTH, SELECT, HELLO, cluster
redirections), sending commands and printing their replies, the
non-interactive ways of running commands (arguments, stdin, --eval), and
what the special modes share (reconnecting, stopping on Ctrl-C).
"""

from __future__ import annotations

import signal
import sys
import time

from ophidis.protocol import resp as protocol
from ophidis.tools import resp
from ophidis.tools.cli.help import output_help
from ophidis.tools.cli.options import Config
from ophidis.tools.cli.output import (OUT_CSV, OUT_QUOTED_JSON, OUT_RAW, OUT_STANDARD, err, fatal, flush,
                                      format_csv, format_json, format_raw, format_tty, out)
from ophidis.tools.cli.replication import replica_mode
from ophidis.tools.defaults import Defaults
from ophidis.tools.resp import ConnectionClosed, Reply, atoi


def _wants_raw(argv):
    a = [x.lower() for x in argv[:2]]
    n = len(argv)
    cmd = a[0]
    sub = a[1] if n >= 2 else b""
    if cmd in (b"info", b"lolwut"):
        return True
    if cmd == b"debug" and n >= 2 and sub in (b"htstats", b"htstats-key", b"client-eviction"):
        return True
    if cmd == b"memory" and n >= 2 and sub in (b"malloc-stats", b"doctor"):
        return True
    if cmd == b"cluster" and n == 2 and sub in (b"nodes", b"info"):
        return True
    if cmd == b"client" and n >= 2 and sub in (b"list", b"info"):
        return True
    if cmd == b"latency" and ((n == 3 and sub == b"graph") or (n == 2 and sub == b"doctor")):
        return True
    if cmd == b"proxy" and n >= 2 and sub == b"info":
        return True
    return False


class CLI(Defaults):
    DEFAULTS = {"conn": None, "help_entries": None, "editor": None, "last_kind": None,
                "reissue": False, "send_asking": False}

    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg

    # -- connection --------------------------------------------------------
    def addr(self):
        if self.cfg.socket:
            return self.cfg.socket
        h = self.cfg.host
        if ":" in h:
            return "[%s]:%d" % (h, self.cfg.port)
        return "%s:%d" % (h, self.cfg.port)

    def prompt(self):
        c = self.cfg
        if self.conn is None:
            return "not connected> "
        p = ("redis %s" % c.socket) if c.socket else self.addr()
        if c.dbnum != 0:
            p += "[%d]" % c.dbnum
        if c.in_multi:
            p += "(TX)"
        return p + "> "

    def connect(self, force=False, quiet=False):
        c = self.cfg
        if self.conn is not None and not force:
            return True
        if self.conn is not None:
            self.conn.close()
            self.conn = None
            c.dbnum = 0
            c.in_multi = False
        try:
            if c.socket and not (c.cluster and self.reissue):
                conn = resp.Connection(unix=c.socket)
            else:
                conn = resp.Connection(c.host, c.port)
        except resp.TlsSetupError as e:
            err("Could not negotiate a TLS connection: %s\n" % e)
            return False
        except OSError as e:
            if not quiet:
                where = c.socket if (c.socket and not (c.cluster and self.reissue)) else "%s:%d" % (c.host, c.port)
                err("Could not connect to Redis at %s: %s\n" % (where, resp.connect_error(e)))
            return False
        self.conn = conn
        try:
            if c.auth is not None:
                args = ["AUTH", c.user, c.auth] if c.user else ["AUTH", c.auth]
                r = conn.command(*args)
                if r.is_error:
                    err("AUTH failed: %s\n" % r.value.decode(errors="replace"))
                    return False
            if c.input_dbnum != c.dbnum:
                r = conn.command("SELECT", str(c.input_dbnum))
                if r.is_error:
                    err("SELECT %d failed: %s\n" % (c.input_dbnum, r.value.decode(errors="replace")))
                    return False
                c.dbnum = c.input_dbnum
            if c.resp3:
                r = conn.command("HELLO", "3")
                if r.is_error:
                    err("HELLO 3 failed: %s\n" % r.value.decode(errors="replace"))
                    if c.resp3 == 1:
                        return False
        except (OSError, ConnectionClosed):
            err("\nI/O error\n")
            self.conn = None
            return False
        return True

    def drop(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    # -- output ------------------------------------------------------------
    def format(self, r: Reply, output_raw=False) -> bytes:
        c = self.cfg
        if output_raw:
            return format_raw(r, c.mb_delim)
        if c.output == OUT_STANDARD:
            return format_tty(r)
        if c.output == OUT_RAW:
            return format_raw(r, c.mb_delim) + c.cmd_delim
        if c.output == OUT_CSV:
            return format_csv(r) + b"\n"
        return format_json(r, c.output == OUT_QUOTED_JSON) + b"\n"

    def read_reply(self, output_raw=False, output=True):
        """Read one reply and print it.  Returns the Reply; raises on I/O errors."""
        c = self.cfg
        while True:
            r = self.conn.read_reply()
            if r.kind == resp.PUSH and not self.pubsub:
                # Out of band RESP3 push (e.g. tracking invalidation).
                if c.push_output:
                    out(self.format(r))
                    flush()
                continue
            break
        self.last_kind = r.kind
        if c.cluster and r.is_error and (r.value.startswith(b"MOVED ") or r.value.startswith(b"ASK ")):
            parts = r.value.split(b" ")
            slot = int(parts[1])
            host, _, port = parts[2].decode().rpartition(":")
            c.host, c.port = host, int(port)
            if c.interactive:
                out("-> Redirected to slot [%d] located at %s:%d\n" % (slot, c.host, c.port))
            self.reissue = True
            if r.value.startswith(b"ASK "):
                self.send_asking = True
            return r
        if not c.interactive and c.set_errcode and r.is_error:
            fatal(r.value.decode(errors="replace") + "\n")
        if output:
            out(self.format(r, output_raw))
            flush()
        return r

    pubsub = False

    # -- commands ----------------------------------------------------------
    def send_command(self, argv, repeat):
        """argv: list of bytes.  Returns True on success, False on I/O error."""
        c = self.cfg
        name = argv[0].lower()
        output_raw = _wants_raw(argv)
        monitor = name == b"monitor"
        pubsub = name in (b"subscribe", b"psubscribe", b"ssubscribe")
        while repeat < 0 or repeat > 0:
            if repeat > 0:
                repeat -= 1
            self.conn.send(argv)
            if monitor:
                while True:
                    r = self.read_reply(output_raw)
                    if r.is_error:
                        return True
            if pubsub:
                if c.output != OUT_RAW:
                    out("Reading messages... (press Ctrl-C to quit)\n")
                    flush()
                self.pubsub = True
                try:
                    while True:
                        r = self.read_reply(output_raw)
                        if r.is_error:
                            break
                finally:
                    self.pubsub = False
                continue
            if name in (b"sync", b"psync"):
                out("Entering replica output mode...  (press Ctrl-C to quit)\n")
                flush()
                replica_mode(self)
                return False
            r = self.read_reply(output_raw)
            ok = not r.is_error
            if name == b"select" and len(argv) == 2 and ok:
                c.input_dbnum = c.dbnum = atoi(argv[1].decode(errors="replace"))
            elif name == b"auth" and len(argv) in (2, 3):
                if c.input_dbnum != c.dbnum:
                    self.conn.command("SELECT", str(c.input_dbnum))
                    c.dbnum = c.input_dbnum
            elif name == b"multi" and len(argv) == 1 and ok:
                c.in_multi = True
                c.pre_multi_dbnum = c.dbnum
            elif name == b"exec" and len(argv) == 1 and c.in_multi:
                c.in_multi = False
                if r.kind in (resp.ERROR, resp.NIL):
                    c.input_dbnum = c.dbnum = c.pre_multi_dbnum
            elif name == b"discard" and len(argv) == 1 and ok:
                c.in_multi = False
                c.input_dbnum = c.dbnum = c.pre_multi_dbnum
            elif name == b"reset" and len(argv) == 1 and ok:
                c.in_multi = False
                c.dbnum = c.input_dbnum = 0
                c.resp3 = 0
            elif name == b"hello" and len(argv) >= 2 and ok and argv[1] in (b"2", b"3"):
                c.resp3 = 1 if argv[1] == b"3" else 0
            if self.reissue:
                break
            if c.interval:
                time.sleep(c.interval)
            flush()
        return True

    def issue_command(self, argv, repeat):
        c = self.cfg
        if argv[0].lower() in (b"help", b"?"):
            output_help(self, [a.decode("utf-8", "surrogateescape") for a in argv[1:]])
            return True
        while True:
            if self.reissue or self.conn is None:
                if not self.connect(force=True):
                    self.reissue = False
                    return False
            self.reissue = False
            if self.send_asking:
                self.send_asking = False
                try:
                    r = self.conn.command("ASKING")
                except (OSError, ConnectionClosed):
                    return False
                if r.is_error:
                    err("ASKING failed: %s\n" % r.value.decode(errors="replace"))
                    return False
            try:
                ok = self.send_command(argv, repeat)
            except (OSError, ConnectionClosed) as e:
                msg = str(e) if isinstance(e, ConnectionClosed) else (e.strerror or str(e))
                if not c.interactive:
                    err("Error: %s\n" % msg)
                    self.drop()
                    return False
                err("Error: %s\n" % msg)
                self.drop()
                return False
            if not ok:
                self.drop()
                return False
            if c.cluster and self.reissue:
                continue
            return True

    # -- non interactive ---------------------------------------------------
    def noninteractive(self, args):
        c = self.cfg
        if c.quoted_input:
            argv = []
            for a in args:
                p = protocol.split_args(a.encode("utf-8", "surrogateescape"))
                if p is None or len(p) != 1:
                    out("Invalid quoted string\n")
                    return 1
                argv.append(p[0])
        else:
            argv = [a.encode("utf-8", "surrogateescape") for a in args]
        if c.stdin_lastarg:
            argv.append(sys.stdin.buffer.read())
        elif c.stdin_tag:
            tag = c.stdin_tag.encode("utf-8", "surrogateescape")
            for i, a in enumerate(argv):
                if a == tag:
                    argv[i] = sys.stdin.buffer.read()
                    break
            else:
                err("Using -X option but stdin tag not match.\n")
                return 1
        return 0 if self.issue_command(argv, c.repeat) else 1

    def stdin_commands(self):
        """No arguments and stdin is not a tty: run each line of stdin."""
        rc = 0
        while True:
            line = sys.stdin.buffer.readline()
            if not line:
                break
            line = line.rstrip(b"\r\n")
            argv = protocol.split_args(line)
            if argv is None:
                out("Invalid argument(s)\n")
                flush()
                continue
            if not argv:
                continue
            if argv[0].lower() in (b"quit", b"exit"):
                break
            if not self.issue_command(argv, 1):
                rc = 1
        return rc

    def eval_mode(self, args):
        try:
            with open(self.cfg.eval, "rb") as f:
                script = f.read()
        except OSError as e:
            fatal("Can't open file '%s': %s\n" % (self.cfg.eval, e.strerror))
        keys, argvs, got_comma = [], [], False
        for a in args:
            b = a.encode("utf-8", "surrogateescape")
            if b == b"," and not got_comma:
                got_comma = True
                continue
            if not got_comma and b.endswith(b",") and len(b) > 1:
                keys.append(b[:-1])
                got_comma = True
                continue
            (argvs if got_comma else keys).append(b)
        argv = [b"EVAL", script, b"%d" % len(keys)] + keys + argvs
        return 0 if self.issue_command(argv, 1) else 1


_stop = False


def _sigint_stop(*_):
    global _stop
    _stop = True


def stop_on_sigint():
    """From now on Ctrl-C sets the flag ``stop_requested`` reads (the modes
    that scan or sample finish their report instead of dying)."""
    signal.signal(signal.SIGINT, _sigint_stop)


def stop_requested() -> bool:
    return _stop


class Reconnecting:
    """Send a command, reconnecting (redis-cli's "Reconnecting... N") on I/O errors."""

    def __init__(self, cli):
        self.cli = cli

    def command(self, *args):
        cli = self.cli
        tries = 0
        while True:
            while cli.conn is None:
                tries += 1
                out("\r\x1b[0KReconnecting... %d\r" % tries)
                flush()
                cli.connect(force=True, quiet=True)
                time.sleep(1)
            try:
                r = cli.conn.command(*args)
            except (OSError, ConnectionClosed):
                cli.drop()
                continue
            if tries:
                out("\r\x1b[0K")
            return r
