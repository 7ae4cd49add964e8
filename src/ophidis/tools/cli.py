"""ophidis-cli: a command line client compatible with redis-cli 7.0.

Usage follows redis-cli: ``ophidis-cli [OPTIONS] [cmd [arg [arg ...]]]``.
See docs/TOOLS.md for what is implemented.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time

from ophidis import protocol
from ophidis.tools import resp
from ophidis.tools.resp import Reply, ConnectionClosed

VERSION = "7.0.15"
HISTFILE_DEFAULT = ".ophidiscli_history"
HISTFILE_ENV = "OPHIDISCLI_HISTFILE"
AUTH_ENV = "REDISCLI_AUTH"

OUT_STANDARD, OUT_RAW, OUT_CSV, OUT_JSON, OUT_QUOTED_JSON = range(5)

SPECTRUM_COLOR = [0, 233, 234, 235, 237, 239, 241, 243, 245, 247, 144, 143, 142, 184, 226, 214,
                  208, 202, 196]
SPECTRUM_MONO = [0, 233, 234, 235, 237, 239, 241, 243, 245, 247, 249, 251, 253]


def out(s):
    if isinstance(s, str):
        s = s.encode("utf-8", "surrogateescape")
    sys.stdout.buffer.write(s)


def flush():
    sys.stdout.buffer.flush()


def err(s):
    sys.stdout.buffer.flush()
    sys.stderr.write(s)
    sys.stderr.flush()


# ---------------------------------------------------------------------------
# Reply formatting (redis-cli's TTY / raw / CSV / JSON formats)
# ---------------------------------------------------------------------------
_REPR_ESC = {0x5c: b"\\\\", 0x22: b'\\"', 0x0a: b"\\n", 0x0d: b"\\r", 0x09: b"\\t",
             0x07: b"\\a", 0x08: b"\\b"}
_REPR_TABLE = [(_REPR_ESC[i] if i in _REPR_ESC else
                bytes([i]) if 0x20 <= i <= 0x7e else b"\\x%02x" % i) for i in range(256)]


def repr_bytes(b: bytes) -> bytes:
    """Quote a string as redis-cli does (sdscatrepr)."""
    return b'"' + b"".join(_REPR_TABLE[c] for c in b) + b'"'


def _is_multiline(r: Reply):
    if r.kind in (resp.ARRAY, resp.SET, resp.PUSH):
        if not r.value:
            return False
        return len(r.value) > 1 or _is_multiline(r.value[0])
    if r.kind == resp.MAP:
        if not r.value:
            return False
        return len(r.value) > 2 or _is_multiline(r.value[1])
    return False


def format_tty(r: Reply, prefix=b"") -> bytes:
    k = r.kind
    if k == resp.ERROR:
        return b"(error) " + r.value + b"\n"
    if k == resp.STATUS:
        return r.value + b"\n"
    if k == resp.INTEGER:
        return b"(integer) %d\n" % r.value
    if k == resp.DOUBLE:
        return b"(double) " + r.value + b"\n"
    if k == resp.BIGNUM:
        return b"(big number) " + r.value + b"\n"
    if k == resp.BULK:
        return repr_bytes(r.value) + b"\n"
    if k == resp.VERB:
        return r.value + b"\n"
    if k == resp.NIL:
        return b"(nil)\n"
    if k == resp.BOOL:
        return b"(true)\n" if r.value else b"(false)\n"
    items = r.value
    if not items:
        return {resp.ARRAY: b"(empty array)\n", resp.MAP: b"(empty hash)\n",
                resp.SET: b"(empty set)\n", resp.PUSH: b"(empty push)\n"}[k]
    n = len(items) // 2 if k == resp.MAP else len(items)
    idxlen = len(str(n))
    sub_prefix = prefix + b" " * (idxlen + 2)
    sep = b"~" if k == resp.SET else b"#" if k == resp.MAP else b")"
    parts = []
    i = 0
    while i < len(items):
        human = (i // 2 if k == resp.MAP else i) + 1
        parts.append((b"" if i == 0 else prefix) + b"%*d" % (idxlen, human) + sep + b" ")
        parts.append(format_tty(items[i], sub_prefix))
        if k == resp.MAP:
            i += 1
            parts[-1] = parts[-1][:-1] + b" => "
            if _is_multiline(items[i]):
                parts.append(b"\n" + sub_prefix)
            parts.append(format_tty(items[i], sub_prefix))
        i += 1
    return b"".join(parts)


def format_raw(r: Reply, mb_delim=b"\n") -> bytes:
    k = r.kind
    if k == resp.NIL:
        return b""
    if k == resp.ERROR:
        return r.value + b"\n"
    if k in (resp.STATUS, resp.BULK, resp.VERB, resp.DOUBLE, resp.BIGNUM):
        return r.value
    if k == resp.BOOL:
        return b"(true)" if r.value else b"(false)"
    if k == resp.INTEGER:
        return b"%d" % r.value
    items = r.value
    if k == resp.MAP:
        return mb_delim.join(format_raw(items[i], mb_delim) + b" " + format_raw(items[i + 1], mb_delim)
                             for i in range(0, len(items), 2))
    return mb_delim.join(format_raw(e, mb_delim) for e in items)


def format_csv(r: Reply) -> bytes:
    k = r.kind
    if k == resp.ERROR:
        return b"ERROR," + repr_bytes(r.value)
    if k in (resp.STATUS, resp.BULK, resp.VERB):
        return repr_bytes(r.value)
    if k == resp.INTEGER:
        return b"%d" % r.value
    if k in (resp.DOUBLE, resp.BIGNUM):
        return r.value
    if k == resp.NIL:
        return b"NULL"
    if k == resp.BOOL:
        return b"true" if r.value else b"false"
    return b",".join(format_csv(e) for e in r.value)


def _json_str(b: bytes, quoted: bool) -> bytes:
    if quoted:
        return repr_bytes(b).replace(b"\\", b"\\\\")
    o = [b'"']
    for c in b:
        if c in (0x5c, 0x22):
            o.append(b"\\" + bytes([c]))
        elif c in (0x0a, 0x0c, 0x0d, 0x09, 0x08):
            o.append({0x0a: b"\\n", 0x0c: b"\\f", 0x0d: b"\\r", 0x09: b"\\t", 0x08: b"\\b"}[c])
        elif c <= 0x1f:
            o.append(b"\\u%04x" % c)
        else:
            o.append(bytes([c]))
    o.append(b'"')
    return b"".join(o)


def format_json(r: Reply, quoted=False) -> bytes:
    k = r.kind
    if k == resp.ERROR:
        return b"error:" + _json_str(r.value, quoted)
    if k in (resp.STATUS, resp.BULK, resp.VERB):
        return _json_str(r.value, quoted)
    if k == resp.INTEGER:
        return b"%d" % r.value
    if k in (resp.DOUBLE, resp.BIGNUM):
        return r.value
    if k == resp.NIL:
        return b"null"
    if k == resp.BOOL:
        return b"true" if r.value else b"false"
    items = r.value
    if k == resp.MAP:
        parts = []
        for i in range(0, len(items), 2):
            key = format_json(items[i], quoted)
            if not key.startswith(b'"'):
                key = b'"' + key + b'"'
            parts.append(key + b":" + format_json(items[i + 1], quoted))
        return b"{" + b",".join(parts) + b"}"
    return b"[" + b",".join(format_json(e, quoted) for e in items) + b"]"


# ---------------------------------------------------------------------------
# Command help built from COMMAND DOCS
# ---------------------------------------------------------------------------
class HelpEntry:
    __slots__ = ("argv", "full", "is_group", "params", "summary", "since", "group")

    def __init__(self, argv, is_group=False, params="", summary="", since=None, group=""):
        self.argv = argv
        self.full = " ".join(argv)
        self.is_group = is_group
        self.params = params
        self.summary = summary
        self.since = since
        self.group = group


def _arg_flags(spec):
    flags = spec.get("flags") or []
    return ("optional" in flags or spec.get("optional") is True,
            "multiple" in flags or spec.get("multiple") is True,
            "multiple_token" in flags or spec.get("multiple_token") is True)


def _or_empty(s):
    return s if s != "" else '""'


def render_argument(spec) -> str:
    name = spec.get("name", "")
    typ = spec.get("type", "")
    token = spec.get("token")
    optional, multiple, multiple_token = _arg_flags(spec)
    token_part = _or_empty(token) if token is not None else ""
    sub = spec.get("arguments") or []
    if typ in ("key", "string", "integer", "double", "pattern", "unix-time", "token"):
        repeat = _or_empty(name)
    elif typ == "oneof":
        repeat = "|".join(render_argument(a) for a in sub)
    elif typ == "block":
        repeat = " ".join(render_argument(a) for a in sub)
    else:
        repeat = ""
    if token_part and typ != "pure-token":
        token_part += " "
    s = "[" if optional else ""
    s += token_part + repeat
    if multiple:
        s += " [" + (token_part if multiple_token else "") + repeat + " ...]"
    if optional:
        s += "]"
    return s


def _reply_to_doc(r: Reply):
    """Convert a COMMAND DOCS reply node (RESP2 arrays or RESP3 maps) to Python."""
    if r.kind in (resp.MAP,):
        v = r.value
        return {_reply_to_doc(v[i]): _reply_to_doc(v[i + 1]) for i in range(0, len(v), 2)}
    if r.kind in (resp.ARRAY, resp.SET):
        return [_reply_to_doc(e) for e in r.value]
    if r.kind in (resp.BULK, resp.STATUS, resp.VERB):
        return r.value.decode("utf-8", "replace")
    return r.value


def _pairs_to_dict(x):
    if isinstance(x, dict):
        return x
    if isinstance(x, list) and len(x) % 2 == 0 and all(isinstance(x[i], str) for i in range(0, len(x), 2)):
        return {x[i]: x[i + 1] for i in range(0, len(x), 2)}
    return {}


def _normalize_args(args):
    outl = []
    for a in args or []:
        a = _pairs_to_dict(a)
        if "arguments" in a:
            a = dict(a)
            a["arguments"] = _normalize_args(a["arguments"])
        outl.append(a)
    return outl


def build_help(docs: dict):
    """docs: {name: {summary, since, group, arguments, subcommands}} -> sorted HelpEntry list."""
    entries = []
    groups = set()

    def add(name, sub, spec):
        spec = _pairs_to_dict(spec)
        argv = [name.upper()]
        if sub:
            argv.append(sub.split("|", 1)[1].upper())
        e = HelpEntry(argv)
        e.summary = spec.get("summary", "Help not available")
        e.since = spec.get("since")
        e.group = spec.get("group", "generic")
        groups.add(e.group)
        e.params = " ".join(render_argument(a) for a in _normalize_args(spec.get("arguments")))
        entries.append(e)
        subs = _pairs_to_dict(spec.get("subcommands") or {})
        for sname, sspec in subs.items():
            add(name, sname, sspec)

    for name, spec in docs.items():
        add(name, None, spec)
    for g in groups:
        entries.append(HelpEntry(["@" + g], is_group=True))
    entries.sort(key=lambda e: e.full)
    return entries


def docs_from_bundled():
    """Fallback docs: the Redis 7.0 command metadata shipped with Ophidis."""
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "commands.json")
    try:
        with open(path) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return {}
    docs = {}
    for full, spec in meta.items():
        spec = dict(spec)
        spec.setdefault("summary", "Help not available")
        if "|" in full:
            parent, _sub = full.split("|", 1)
            docs.setdefault(parent.lower(), {"summary": "Help not available", "group": spec.get("group", ""),
                                             "since": spec.get("since")})
            docs[parent.lower()].setdefault("subcommands", {})[full.lower()] = spec
        else:
            docs.setdefault(full.lower(), {}).update(spec)
    return docs


# ---------------------------------------------------------------------------
# The client
# ---------------------------------------------------------------------------


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


class Config:
    def __init__(self):
        self.host = "127.0.0.1"
        self.port = 6379
        self.socket = None
        self.repeat = 1
        self.interval = 0.0
        self.input_dbnum = 0
        self.dbnum = 0
        self.auth = None
        self.user = None
        self.no_auth_warning = False
        self.askpass = False
        tty = os.isatty(1) or os.environ.get("FAKETTY") is not None
        self.output = OUT_STANDARD if tty else OUT_RAW
        self.push_output = tty
        self.mb_delim = b"\n"
        self.cmd_delim = b"\n"
        self.stdin_lastarg = False
        self.stdin_tag = None
        self.resp3 = 0
        self.cluster = False
        self.set_errcode = False
        self.quoted_input = False
        self.latency = self.latency_history = self.latency_dist = False
        self.intrinsic = None
        self.stat = self.scan = self.bigkeys = self.memkeys = self.hotkeys = False
        self.memkeys_samples = 0
        self.pattern = None
        self.rdb = None
        self.pipe = False
        self.pipe_timeout = 30
        self.eval = None
        self.mono = False
        self.verbose = False
        self.interactive = False
        self.in_multi = False
        self.pre_multi_dbnum = 0
        self.hints = True


def usage(code=0):
    prog = "ophidis-cli"
    text = """%(p)s %(v)s (Ophidis)

Usage: %(p)s [OPTIONS] [cmd [arg [arg ...]]]
  -h <hostname>      Server hostname (default: 127.0.0.1).
  -p <port>          Server port (default: 6379).
  -s <socket>        Server socket (overrides hostname and port).
  -a <password>      Password to use when connecting to the server.
                     The REDISCLI_AUTH environment variable is also read.
  --user <username>  Used to send ACL style 'AUTH username pass'. Needs -a.
  --pass <password>  Alias of -a for consistency with the new --user option.
  --askpass          Force user to input password with mask from STDIN.
  -u <uri>           Server URI: redis://[[user]:password@]host[:port][/db]
  -r <repeat>        Execute specified command N times.
  -i <interval>      When -r is used, waits <interval> seconds per command.
                     Sub-second times like -i 0.1 are allowed.
  -n <db>            Database number.
  -3                 Start session in RESP3 protocol mode.
  -x                 Read last argument from STDIN.
  -X <tag>           Read <tag> argument from STDIN.
  -d <delimiter>     Delimiter between response bulks for raw formatting (default: \\n).
  -D <delimiter>     Delimiter between responses for raw formatting (default: \\n).
  -c                 Enable cluster mode (follow -ASK and -MOVED redirections).
  -e                 Return exit error code when command execution fails.
  --raw              Use raw formatting for replies (default when STDOUT is
                     not a tty).
  --no-raw           Force formatted output even when STDOUT is not a tty.
  --quoted-input     Force input to be handled as quoted strings.
  --csv              Output in CSV format.
  --json             Output in JSON format (default RESP3, use -2 if you want to use with RESP2).
  --quoted-json      Same as --json, but produce ASCII-safe quoted strings, not Unicode.
  --show-pushes <yn> Whether to print RESP3 PUSH messages.  Enabled by default
                     when STDOUT is a tty but can be overridden with --show-pushes no.
  --stat             Print rolling stats about server: mem, clients, ...
  --latency          Enter a special mode continuously sampling latency.
  --latency-history  Like --latency but tracking latency changes over time.
                     Default time interval is 15 sec. Change it using -i.
  --latency-dist     Shows latency as a spectrum, requires xterm 256 colors.
                     Default time interval is 1 sec. Change it using -i.
  --mono             Use the grey palette in --latency-dist.
  --rdb <filename>   Transfer an RDB dump from remote server to local file.
                     Use filename of "-" to write to stdout.
  --pipe             Transfer raw Redis protocol from stdin to server.
  --pipe-timeout <n> In --pipe mode, abort with error if after sending all data
                     no reply is received within <n> seconds (default 30).
  --bigkeys          Sample keys looking for keys with many elements (complexity).
  --memkeys          Sample keys looking for keys consuming a lot of memory.
  --memkeys-samples <n> Like --memkeys, sampling N elements of nested values.
  --hotkeys          Sample keys looking for hot keys (needs an LFU maxmemory-policy).
  --scan             List all keys using the SCAN command.
  --pattern <pat>    Keys pattern when using the --scan, --bigkeys or --hotkeys
                     options (default: *).
  --quoted-pattern <pat> Same as --pattern, but the pattern is a quoted string.
  --intrinsic-latency <sec> Run a test to measure intrinsic system latency.
                     The test will run for the specified amount of seconds.
  --eval <file>      Send an EVAL command using the Lua script at <file>.
  --no-auth-warning  Don't show warning message when using password on command
                     line interface.
  --help             Output this help and exit.
  --version          Output version and exit.

Examples:
  cat /etc/passwd | %(p)s -x set mypasswd
  %(p)s -r 100 lpush mylist x
  %(p)s -r 100 -i 1 info | grep used_memory_human:
  %(p)s --eval myscript.lua key1 key2 , arg1 arg2 arg3
  %(p)s --scan --pattern '*:12345*'

  (Note: when using --eval the comma separates KEYS[] from ARGV[] items)

When no command is given, %(p)s starts in interactive mode.
Type "help" in interactive mode for information on available commands
and settings.
""" % {"p": prog, "v": VERSION}
    (sys.stderr if code else sys.stdout).write(text)
    sys.exit(code)


def parse_redis_uri(uri, cfg):
    low = uri.lower()
    if low.startswith("rediss://"):
        err("rediss:// is only supported when ophidis-cli is compiled with OpenSSL\n")
        sys.exit(1)
    if not low.startswith("redis://"):
        err("Invalid URI scheme\n")
        sys.exit(1)
    from urllib.parse import unquote
    cur = uri[len("redis://"):]
    if not cur:
        return
    at = cur.find("@")
    if at >= 0:
        userinfo = cur[:at]
        colon = userinfo.find(":")
        if colon >= 0:
            cfg.user = unquote(userinfo[:colon]) or None
            userinfo = userinfo[colon + 1:]
        cfg.auth = unquote(userinfo)
        cur = cur[at + 1:]
    if not cur:
        return
    slash = cur.find("/")
    hostport = cur if slash < 0 else cur[:slash]
    if hostport:
        if ":" in hostport:
            h, p = hostport.rsplit(":", 1)
            cfg.port = _atoi(p)
            cfg.host = h
        else:
            cfg.host = hostport
    if slash >= 0 and cur[slash + 1:]:
        cfg.input_dbnum = _atoi(cur[slash + 1:])


def _atoi(s):
    s = s.strip()
    i = 0
    if s[:1] in "+-":
        i = 1
    j = i
    while j < len(s) and s[j].isdigit():
        j += 1
    try:
        return int(s[:j]) if j > i else 0
    except ValueError:
        return 0


def _atof(s):
    try:
        return float(s)
    except ValueError:
        return 0.0


def parse_options(argv, cfg):
    i = 0
    n = len(argv)
    while i < n:
        a = argv[i]
        last = i == n - 1
        if not a.startswith("-"):
            break
        nxt = (lambda: argv[i + 1])
        if a == "-h" and not last:
            cfg.host = nxt(); i += 1
        elif a == "-h" and last:
            usage(0)
        elif a == "--help":
            usage(0)
        elif a == "-x":
            cfg.stdin_lastarg = True
        elif a == "-X" and not last:
            cfg.stdin_tag = nxt(); i += 1
        elif a == "-p" and not last:
            cfg.port = _atoi(nxt()); i += 1
        elif a == "-s" and not last:
            cfg.socket = nxt(); i += 1
        elif a == "-r" and not last:
            cfg.repeat = _atoi(nxt()); i += 1
        elif a == "-i" and not last:
            cfg.interval = _atof(nxt()); i += 1
        elif a == "-n" and not last:
            cfg.input_dbnum = _atoi(nxt()); i += 1
        elif a == "--no-auth-warning":
            cfg.no_auth_warning = True
        elif a == "--askpass":
            cfg.askpass = True
        elif a in ("-a", "--pass") and not last:
            cfg.auth = nxt(); i += 1
        elif a == "--user" and not last:
            cfg.user = nxt(); i += 1
        elif a == "-u" and not last:
            parse_redis_uri(nxt(), cfg); i += 1
        elif a == "--raw":
            cfg.output = OUT_RAW
        elif a == "--no-raw":
            cfg.output = OUT_STANDARD
        elif a == "--quoted-input":
            cfg.quoted_input = True
        elif a == "--csv":
            cfg.output = OUT_CSV
        elif a in ("--json", "--quoted-json"):
            if cfg.resp3 == 0:
                cfg.resp3 = 2
            cfg.output = OUT_JSON if a == "--json" else OUT_QUOTED_JSON
        elif a == "--latency":
            cfg.latency = True
        elif a == "--latency-dist":
            cfg.latency_dist = True
        elif a == "--mono":
            cfg.mono = True
        elif a == "--latency-history":
            cfg.latency = cfg.latency_history = True
        elif a == "--stat":
            cfg.stat = True
        elif a == "--scan":
            cfg.scan = True
        elif a == "--pattern" and not last:
            cfg.pattern = nxt().encode("utf-8", "surrogateescape"); i += 1
        elif a == "--quoted-pattern" and not last:
            p = protocol.split_args(nxt().encode("utf-8", "surrogateescape"))
            if not p or len(p) != 1:
                err("Invalid quoted string specified for --quoted-pattern.\n")
                sys.exit(1)
            cfg.pattern = p[0]; i += 1
        elif a == "--intrinsic-latency" and not last:
            cfg.intrinsic = _atoi(nxt()); i += 1
        elif a == "--rdb" and not last:
            cfg.rdb = nxt(); i += 1
        elif a == "--pipe":
            cfg.pipe = True
        elif a == "--pipe-timeout" and not last:
            cfg.pipe_timeout = _atoi(nxt()); i += 1
        elif a == "--bigkeys":
            cfg.bigkeys = True
        elif a == "--memkeys":
            cfg.memkeys = True
            cfg.memkeys_samples = 0
        elif a == "--memkeys-samples" and not last:
            cfg.memkeys = True
            cfg.memkeys_samples = _atoi(nxt()); i += 1
        elif a == "--hotkeys":
            cfg.hotkeys = True
        elif a == "--eval" and not last:
            cfg.eval = nxt(); i += 1
        elif a == "-c":
            cfg.cluster = True
        elif a == "-d" and not last:
            cfg.mb_delim = nxt().encode(); i += 1
        elif a == "-D" and not last:
            cfg.cmd_delim = nxt().encode(); i += 1
        elif a == "-e":
            cfg.set_errcode = True
        elif a == "--verbose":
            cfg.verbose = True
        elif a == "-2":
            cfg.resp3 = 0
        elif a == "-3":
            cfg.resp3 = 1
        elif a == "--show-pushes" and not last:
            v = nxt().lower(); i += 1
            cfg.push_output = v in ("yes", "1", "true", "y")
        elif a in ("-v", "--version"):
            print("ophidis-cli %s" % VERSION)
            sys.exit(0)
        else:
            if a.startswith("-") and len(a) > 1:
                err('Unrecognized option or bad number of args for: \'%s\'\n' % a)
                sys.exit(1)
            break
        i += 1
    if cfg.auth is not None and not cfg.no_auth_warning:
        err("Warning: Using a password with '-a' or '-u' option on the command line interface "
            "may not be safe.\n")
    if cfg.stdin_lastarg and cfg.stdin_tag:
        err("Options -x and -X are mutually exclusive.\n")
        sys.exit(1)
    return i


class CLI:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.conn = None
        self.help_entries = None
        self.editor = None
        self.last_kind = None
        self.reissue = False
        self.send_asking = False

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
        except OSError as e:
            if not quiet:
                where = c.socket if (c.socket and not (c.cluster and self.reissue)) else "%s:%d" % (c.host, c.port)
                err("Could not connect to Redis at %s: %s\n" % (where, e.strerror or str(e)))
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
            err(r.value.decode(errors="replace") + "\n")
            sys.exit(1)
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
                self.replica_mode()
                return False
            r = self.read_reply(output_raw)
            ok = not r.is_error
            if name == b"select" and len(argv) == 2 and ok:
                c.input_dbnum = c.dbnum = _atoi(argv[1].decode(errors="replace"))
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
            self.output_help([a.decode("utf-8", "surrogateescape") for a in argv[1:]])
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

    # -- help ------------------------------------------------------------
    def init_help(self):
        docs = None
        if self.conn is not None or self.connect(quiet=True):
            try:
                r = self.conn.command("COMMAND", "DOCS")
                if r.kind in (resp.ARRAY, resp.MAP) and not r.is_error:
                    d = _reply_to_doc(r)
                    docs = _pairs_to_dict(d) if isinstance(d, list) else d
            except (OSError, ConnectionClosed):
                self.drop()
        if not docs:
            docs = docs_from_bundled()
        self.help_entries = build_help(docs)

    def output_help(self, args):
        if not args:
            out("ophidis-cli %s\n"
                "To get help about commands type:\n"
                "      \"help @<group>\" to get a list of commands in <group>\n"
                "      \"help <command>\" for help on <command>\n"
                "      \"help <tab>\" to get a list of possible help topics\n"
                "      \"quit\" to exit\n"
                "\n"
                "To set ophidis-cli preferences:\n"
                "      \":set hints\" enable online hints\n"
                "      \":set nohints\" disable online hints\n" % VERSION)
            flush()
            return
        if self.help_entries is None:
            self.init_help()
        group = args[0][1:] if args[0].startswith("@") else None
        buf = []
        for e in self.help_entries:
            if e.is_group:
                continue
            if group is None:
                if len(args) <= len(e.argv) and all(a.lower() == b.lower() for a, b in zip(args, e.argv)):
                    buf.append(self._cmd_help(e, True))
            elif group.lower() == (e.group or "").lower():
                buf.append(self._cmd_help(e, False))
        buf.append("\r\n")
        out("".join(buf))
        flush()

    @staticmethod
    def _cmd_help(e, show_group):
        s = "\r\n  \x1b[1m%s\x1b[0m \x1b[90m%s\x1b[0m\r\n" % (e.full, e.params)
        s += "  \x1b[33msummary:\x1b[0m %s\r\n" % e.summary
        if e.since:
            s += "  \x1b[33msince:\x1b[0m %s\r\n" % e.since
        if show_group:
            s += "  \x1b[33mgroup:\x1b[0m %s\r\n" % e.group
        return s

    def completions(self, buf):
        if self.help_entries is None:
            return []
        start = 0
        allow_groups = False
        if buf[:5].lower() == "help ":
            start = 5
            while start < len(buf) and buf[start].isspace():
                start += 1
            allow_groups = True
        frag = buf[start:].lower()
        res = []
        for e in self.help_entries:
            if e.is_group and not allow_groups:
                continue
            if e.full.lower().startswith(frag):
                res.append(buf[:start] + e.full)
        return res

    def hint(self, buf):
        if not self.cfg.hints or self.help_entries is None:
            return None
        argv = protocol.split_args(buf.encode("utf-8", "surrogateescape"))
        if not argv:
            return None
        argv = [a.decode("utf-8", "surrogateescape") for a in argv]
        best, matchlen = None, 0
        for e in self.help_entries:
            if e.is_group:
                continue
            n = len(e.argv)
            if n <= len(argv) and n > matchlen and all(e.argv[j].lower() == argv[j].lower() for j in range(n)):
                best, matchlen = e, n
        if best is None:
            return None
        hint = best.params
        toremove = len(argv) - matchlen
        while toremove > 0 and hint:
            if hint[0] == "[":
                break
            if hint[0] == " ":
                toremove -= 1
            hint = hint[1:]
        if not buf[-1:].isspace():
            hint = " " + hint
        return hint

    # -- interactive ------------------------------------------------------
    def repl(self):
        from ophidis.tools.lineedit import LineEditor
        c = self.cfg
        self.init_help()
        c.interactive = True
        ed = LineEditor(completion=self.completions, hints=self.hint)
        self.editor = ed
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
                line = ed.readline(self.prompt())
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
                c.port = _atoi(argv[2].decode())
                c.socket = None
                self.connect(force=True)
                self.init_help()
                continue
            if name == b"clear" and len(argv) == 1:
                out("\x1b[H\x1b[2J")
                flush()
                continue
            t0 = time.monotonic()
            try:
                self.issue_command(cmdargs, repeat)
            except KeyboardInterrupt:
                # Abort a blocking state (MONITOR, SUBSCRIBE, BLPOP ...) and reconnect.
                out("\n")
                self.drop()
                self.connect(force=True)
            elapsed = time.monotonic() - t0
            if elapsed >= 0.5 and c.output == OUT_STANDARD:
                out("(%.2fs)\n" % elapsed)
                flush()
        sys.exit(0)

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
        c = self.cfg
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
            err("Can't open file '%s': %s\n" % (self.cfg.eval, e.strerror))
            sys.exit(1)
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

    # -- replica / rdb ---------------------------------------------------
    def _send_sync(self):
        """Send SYNC, return (payload_size or None for EOF-marked, eofmark)."""
        conn = self.conn
        conn.send_raw(b"SYNC\r\n")
        line = b""
        while True:
            ch = conn.sock.recv(1)
            if not ch:
                err("Error reading bulk length while SYNCing\n")
                sys.exit(1)
            if ch == b"\n" and line:
                break
            if ch != b"\n":
                line += ch
        line = line.rstrip(b"\r")
        if line[:1] == b"-":
            err("SYNC with master failed: %s\n" % line.decode(errors="replace"))
            if b"unknown command" in line:
                err("The server does not implement replication (SYNC): no RDB can be transferred.\n")
            sys.exit(1)
        if line[1:5] == b"EOF:" and len(line) >= 5 + 40:
            return None, line[5:45]
        return int(line[1:] or b"0"), None

    def replica_mode(self):
        size, mark = self._send_sync()
        sock = self.conn.sock
        if size is None:
            err("SYNC with master, discarding bytes of bulk transfer until EOF marker...\n")
            tail = b""
            while True:
                d = sock.recv(65536)
                if not d:
                    return
                tail = (tail + d)[-40:]
                if tail == mark:
                    break
        else:
            err("SYNC with master, discarding %d bytes of bulk transfer...\n" % size)
            while size > 0:
                d = sock.recv(min(size, 65536))
                if not d:
                    return
                size -= len(d)
        err("SYNC done. Logging commands from master.\n")
        self.cfg.output = OUT_CSV
        while True:
            r = self.conn.read_reply()
            out(format_csv(r) + b"\n")
            flush()

    def get_rdb(self, filename):
        conn = self.conn
        for args in (("REPLCONF", "capa", "eof"), ("REPLCONF", "rdb-only", "1")):
            err("sending %s\n" % " ".join(args))
            try:
                r = conn.command(*args)
            except (OSError, ConnectionClosed):
                err("\nI/O error\n")
                sys.exit(1)
            if r.is_error:
                err("REPLCONF %s error: %s\n" % (args[1], r.value.decode(errors="replace")))
        size, mark = self._send_sync()
        if size is None:
            err("SYNC sent to master, writing bytes of bulk transfer until EOF marker to '%s'\n" % filename)
        else:
            err("SYNC sent to master, writing %d bytes to '%s'\n" % (size, filename))
        to_stdout = filename == "-"
        if to_stdout:
            fd = 1
        else:
            try:
                fd = os.open(filename, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
            except OSError as e:
                err("Error opening '%s': %s\n" % (filename, e.strerror))
                sys.exit(1)
        sock = conn.sock
        total = 0
        tail = b""
        remaining = size
        while remaining is None or remaining > 0:
            want = 65536 if remaining is None else min(65536, remaining)
            d = sock.recv(want)
            if not d:
                err("I/O Error reading RDB payload from socket\n")
                sys.exit(1)
            os.write(fd, d)
            total += len(d)
            if remaining is not None:
                remaining -= len(d)
            else:
                tail = (tail + d)[-40:]
                if tail == mark:
                    break
        if size is None:
            total -= 40
            if not to_stdout:
                os.ftruncate(fd, total)
            err("Transfer finished with success after %d bytes\n" % total)
        else:
            err("Transfer finished with success.\n")
        conn.close()
        self.conn = None
        if not to_stdout:
            os.fsync(fd)
            os.close(fd)
        sys.exit(0)




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


# ---------------------------------------------------------------------------
# Special modes
# ---------------------------------------------------------------------------
_stop = False


def _sigint_stop(*_):
    global _stop
    _stop = True


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


def latency_mode(cli):
    c = cli.cfg
    rc = Reconnecting(cli)
    history_interval = c.interval * 1000 if c.interval else 15000
    interval_ms = c.interval * 1000 if c.interval else 1000
    mn = mx = tot = count = 0
    hist_start = time.monotonic()

    def show():
        avg = tot / count if count else 0.0
        if c.output == OUT_STANDARD:
            out("min: %d, max: %d, avg: %.2f (%d samples)" % (mn, mx, avg, count))
            flush()
        elif c.output == OUT_CSV:
            out("%d,%d,%.2f,%d\n" % (mn, mx, avg, count))
        elif c.output == OUT_RAW:
            out("%d %d %.2f %d\n" % (mn, mx, avg, count))
        else:
            out('{"min": %d, "max": %d, "avg": %.2f, "count": %d}\n' % (mn, mx, avg, count))
        flush()

    while True:
        t0 = time.monotonic()
        rc.command("PING")
        lat = int(time.monotonic() * 1000) - int(t0 * 1000)
        count += 1
        if count == 1:
            mn = mx = tot = lat
        else:
            mn = min(mn, lat)
            mx = max(mx, lat)
            tot += lat
        now = time.monotonic()
        if c.output == OUT_STANDARD:
            out("\x1b[0G\x1b[2K")
            show()
        elif c.latency_history:
            show()
        elif (now - hist_start) * 1000 > interval_ms:
            show()
            sys.exit(0)
        if c.latency_history and (now - hist_start) * 1000 > history_interval:
            out(" -- %.2f seconds range\n" % (now - hist_start))
            flush()
            hist_start = time.monotonic()
            mn = mx = tot = count = 0
        time.sleep(0.010)


def latency_dist_mode(cli):
    c = cli.cfg
    rc = Reconnecting(cli)
    palette = SPECTRUM_MONO if c.mono else SPECTRUM_COLOR
    buckets = [(10, "."), (125, "-"), (250, "*"), (500, "#")] + \
        [(i * 1000, str(i)) for i in range(1, 10)] + \
        [(10000, "A"), (20000, "B"), (30000, "C"), (40000, "D"), (50000, "E"),
         (100000, "F"), (200000, "G"), (300000, "H"), (400000, "I"), (500000, "J"),
         (1000000, "K"), (2000000, "L"), (4000000, "M"), (8000000, "N"), (16000000, "O"),
         (30000000, "P"), (60000000, "Q"), (0, "?")]
    counts = [0] * len(buckets)
    interval = c.interval * 1000 if c.interval else 1000
    outputs = 0
    count = 0
    start = time.monotonic()
    import math
    while True:
        t0 = time.monotonic()
        rc.command("PING")
        lat = int((time.monotonic() - t0) * 1e6)
        count += 1
        for j, (mxv, _ch) in enumerate(buckets):
            if mxv == 0 or lat <= mxv:
                counts[j] += 1
                break
        if count and (time.monotonic() - start) * 1000 > interval:
            if outputs % 20 == 0:
                out("---------------------------------------------\n"
                    ". - * #          .01 .125 .25 .5 milliseconds\n"
                    "1,2,3,...,9      from 1 to 9     milliseconds\n"
                    "A,B,C,D,E        10,20,30,40,50  milliseconds\n"
                    "F,G,H,I,J        .1,.2,.3,.4,.5       seconds\n"
                    "K,L,M,N,O,P,Q,?  1,2,4,8,16,30,60,>60 seconds\n"
                    "From 0 to 100%: ")
                out("".join("\x1b[48;5;%dm " % p for p in palette) + "\x1b[0m\n")
                out("---------------------------------------------\n")
            outputs += 1
            line = ["\x1b[38;5;0m"]
            for j, (_mxv, ch) in enumerate(buckets):
                idx = int(math.ceil(counts[j] / count * (len(palette) - 1)))
                line.append("\x1b[48;5;%dm%s" % (palette[idx], ch))
                counts[j] = 0
            line.append("\x1b[0m\n")
            out("".join(line))
            flush()
            start = time.monotonic()
            count = 0
        time.sleep(0.010)


def _compute_something_fast():
    # A tiny fixed amount of work: the test measures how long the process
    # is kept from running, not how fast this is.
    x = 0
    for i in range(8):
        x ^= i * 2654435761
    return x


def intrinsic_latency_mode(seconds):
    run_time = seconds * 1_000_000
    ns = time.perf_counter_ns
    test_end = ns() // 1000 + run_time
    max_lat = 0
    runs = 0
    signal.signal(signal.SIGINT, _sigint_stop)
    while True:
        start = ns()
        _compute_something_fast()
        end = ns()
        lat = (end - start) // 1000
        runs += 1
        if lat <= 0:
            if end // 1000 > test_end or _stop:
                pass
            else:
                continue
        if lat > max_lat:
            max_lat = lat
            out("Max latency so far: %d microseconds.\n" % max_lat)
            flush()
        avg_us = run_time / runs
        if _stop or end // 1000 > test_end:
            out("\n%d total runs (avg latency: %.4f microseconds / %.2f nanoseconds per run).\n"
                % (runs, avg_us, avg_us * 1e3))
            out("Worst run took %.0fx longer than the average latency.\n" % (max_lat / avg_us))
            flush()
            sys.exit(0)


def _bytes_to_human(n):
    sign = ""
    if n < 0:
        sign, n = "-", -n
    if n < 1024:
        return "%s%dB" % (sign, n)
    if n < 1024 ** 2:
        return "%s%.2fK" % (sign, n / 1024)
    if n < 1024 ** 3:
        return "%s%.2fM" % (sign, n / 1024 ** 2)
    return "%s%.2fG" % (sign, n / 1024 ** 3)


def _info_field(info: bytes, field: bytes):
    p = info.find(field + b":")
    if p < 0:
        # redis-cli uses strstr on "dbN:keys"
        p = info.find(field)
        if p < 0:
            return None
        p += len(field) + 1
    else:
        p += len(field) + 1
    e1 = info.find(b"\r", p)
    if e1 < 0:
        e1 = len(info)
    e2 = info.find(b",", p)
    if 0 <= e2 < e1:
        e1 = e2
    v = info[p:e1]
    try:
        return int(v.split(b".")[0] or b"0")
    except ValueError:
        return 0


def stat_mode(cli):
    c = cli.cfg
    rc = Reconnecting(cli)
    interval = c.interval or 1.0
    requests = 0
    i = 0
    while True:
        r = rc.command("INFO")
        if r.is_error:
            err("ERROR: %s\n" % r.value.decode(errors="replace"))
            sys.exit(1)
        info = r.value
        if i % 20 == 0:
            out("------- data ------ --------------------- load -------------------- - child -\n"
                "keys       mem      clients blocked requests            connections          \n")
        i += 1
        keys = 0
        for j in range(20):
            k = _info_field(info, b"db%d:keys" % j)
            if k is not None:
                keys += k
        line = "%-11s" % keys
        line += "%-8s" % _bytes_to_human(_info_field(info, b"used_memory") or 0)
        line += " %-8s" % (_info_field(info, b"connected_clients") or 0)
        line += "%-8s" % (_info_field(info, b"blocked_clients") or 0)
        req = _info_field(info, b"total_commands_processed") or 0
        line += "%-19s" % ("%d (+%d)" % (req, 0 if requests == 0 else req - requests))
        requests = req
        line += " %-12s" % (_info_field(info, b"total_connections_received") or 0)
        child = (_info_field(info, b"rdb_bgsave_in_progress") or 0) | \
            ((_info_field(info, b"aof_rewrite_in_progress") or 0) << 1) | \
            ((_info_field(info, b"loading") or 0) << 2)
        line += {0: "", 1: "SAVE", 2: "AOF", 3: "SAVE+AOF", 4: "LOAD"}.get(child, "")
        out(line + "\n")
        flush()
        time.sleep(interval)


def _send_scan(cli, cursor):
    args = ["SCAN", str(cursor)]
    if cli.cfg.pattern is not None:
        args += ["MATCH", cli.cfg.pattern]
    try:
        r = cli.conn.command(*args)
    except (OSError, ConnectionClosed):
        err("\nI/O error\n")
        sys.exit(1)
    if r.is_error:
        err("SCAN error: %s\n" % r.value.decode(errors="replace"))
        sys.exit(1)
    if r.kind != resp.ARRAY:
        err("Non ARRAY response from SCAN!\n")
        sys.exit(1)
    if len(r.value) != 2:
        err("Invalid element count from SCAN!\n")
        sys.exit(1)
    return int(r.value[0].value), [e.value for e in r.value[1].value]


def scan_mode(cli):
    signal.signal(signal.SIGINT, _sigint_stop)
    cur = 0
    while True:
        cur, keys = _send_scan(cli, cur)
        for k in keys:
            if cli.cfg.output == OUT_STANDARD:
                out(repr_bytes(k) + b"\n")
            else:
                out(k + b"\n")
        flush()
        if cli.cfg.interval:
            time.sleep(cli.cfg.interval)
        if _stop or cur == 0:
            break
    sys.exit(0)


def _dbsize(cli):
    r = cli.conn.command("DBSIZE")
    if r.is_error:
        err("Couldn't determine DBSIZE: %s\n" % r.value.decode(errors="replace"))
        sys.exit(1)
    if r.kind != resp.INTEGER:
        err("Non INTEGER response from DBSIZE!\n")
        sys.exit(1)
    return r.value


def _pipeline(cli, commands):
    conn = cli.conn
    conn.send_raw(b"".join(resp.encode_command(a) for a in commands))
    return [conn.read_reply() for _ in commands]


# In the order redis-cli's summary lists them (its dict iteration order).
TYPE_INFO = [("list", "LLEN", "items"), ("hash", "HLEN", "fields"), ("string", "STRLEN", "bytes"),
             ("stream", "XLEN", "entries"), ("set", "SCARD", "members"), ("zset", "ZCARD", "members")]


def bigkeys_mode(cli, memkeys=False, samples=0):
    signal.signal(signal.SIGINT, _sigint_stop)
    types = {}
    for name, cmd, unit in TYPE_INFO:
        types[name] = {"name": name, "cmd": cmd, "unit": unit, "biggest": 0, "count": 0,
                       "total": 0, "key": None}
    total_keys = _dbsize(cli)
    out("\n# Scanning the entire keyspace to find biggest keys as well as\n"
        "# average sizes per key type.  You can use -i 0.1 to sleep 0.1 sec\n"
        "# per 100 SCAN commands (not usually needed).\n\n")
    sampled = totlen = 0
    cur = 0
    loops = 0
    pct = 0.0
    while True:
        pct = 100 * sampled / total_keys if total_keys else 0.0
        cur, keys = _send_scan(cli, cur)
        loops += 1
        treplies = _pipeline(cli, [("TYPE", k) for k in keys])
        ktypes = []
        for k, tr in zip(keys, treplies):
            if tr.kind != resp.STATUS:
                if tr.is_error:
                    err("TYPE returned an error: %s\n" % tr.value.decode(errors="replace"))
                else:
                    err("Invalid reply type (%s) for TYPE on key '%s'!\n" % (tr.kind, k.decode(errors="replace")))
                sys.exit(1)
            t = tr.value.decode()
            if t == "none":
                ktypes.append(None)
                continue
            if t not in types:
                types[t] = {"name": t, "cmd": None, "unit": "?", "biggest": 0, "count": 0,
                            "total": 0, "key": None}
            ktypes.append(types[t])
        cmds = []
        for k, t in zip(keys, ktypes):
            if t is None or (t["cmd"] is None and not memkeys):
                continue
            if not memkeys:
                cmds.append((t["cmd"], k))
            elif samples == 0:
                cmds.append(("MEMORY", "USAGE", k))
            else:
                cmds.append(("MEMORY", "USAGE", k, "SAMPLES", str(samples)))
        sreplies = iter(_pipeline(cli, cmds))
        for k, t in zip(keys, ktypes):
            if t is None:
                continue
            size = 0
            if t["cmd"] is not None or memkeys:
                sr = next(sreplies)
                if sr.kind != resp.INTEGER:
                    err("Warning:  %s on '%s' failed (may have changed type)\n"
                        % ("MEMORY USAGE" if memkeys else t["cmd"], k.decode(errors="replace")))
                else:
                    size = sr.value
            t["total"] += size
            t["count"] += 1
            totlen += len(k)
            sampled += 1
            if t["biggest"] < size:
                t["key"] = repr_bytes(k)
                out(b"[%05.2f%%] Biggest %-6s found so far '%s' with %d %s\n"
                    % (pct, t["name"].encode(), t["key"], size,
                       b"bytes" if memkeys else t["unit"].encode()))
                t["biggest"] = size
            if sampled % 1000000 == 0:
                out("[%05.2f%%] Sampled %d keys so far\n" % (pct, sampled))
        flush()
        if cli.cfg.interval and loops % 100 == 0:
            time.sleep(cli.cfg.interval)
        if _stop or cur == 0:
            break
    out("\n-------- summary -------\n\n")
    if _stop:
        out("[%05.2f%%] " % pct)
    out("Sampled %d keys in the keyspace!\n" % sampled)
    out("Total key length in bytes is %d (avg len %.2f)\n\n" % (totlen, totlen / sampled if totlen else 0))
    for t in types.values():
        if t["key"] is not None:
            out(b"Biggest %6s found '%s' has %d %s\n" % (t["name"].encode(), t["key"], t["biggest"],
                                                         b"bytes" if memkeys else t["unit"].encode()))
    out("\n")
    for t in types.values():
        out("%d %ss with %d %s (%05.2f%% of keys, avg size %.2f)\n"
            % (t["count"], t["name"], t["total"], "bytes" if memkeys else t["unit"],
               100 * t["count"] / sampled if sampled else 0,
               t["total"] / t["count"] if t["count"] else 0))
    flush()
    sys.exit(0)


def hotkeys_mode(cli):
    signal.signal(signal.SIGINT, _sigint_stop)
    NS = 16
    counters = [0] * NS
    hot = [None] * NS
    total_keys = _dbsize(cli)
    out("\n# Scanning the entire keyspace to find hot keys as well as\n"
        "# average sizes per key type.  You can use -i 0.1 to sleep 0.1 sec\n"
        "# per 100 SCAN commands (not usually needed).\n\n")
    sampled = 0
    cur = 0
    loops = 0
    pct = 0.0
    while True:
        pct = 100 * sampled / total_keys if total_keys else 0.0
        cur, keys = _send_scan(cli, cur)
        loops += 1
        replies = _pipeline(cli, [("OBJECT", "FREQ", k) for k in keys])
        for k, r in zip(keys, replies):
            if r.is_error:
                err("Error: %s\n" % r.value.decode(errors="replace"))
                sys.exit(1)
            freq = r.value if r.kind == resp.INTEGER else 0
            sampled += 1
            if sampled % 1000000 == 0:
                out("[%05.2f%%] Sampled %d keys so far\n" % (pct, sampled))
            i = 0
            while i < NS and freq > counters[i]:
                i += 1
            if i == 0:
                continue
            i -= 1
            if i == 0 or counters[i] == 0:
                pass
            else:
                counters[:i] = counters[1:i + 1]
                hot[:i] = hot[1:i + 1]
            counters[i] = freq
            hot[i] = repr_bytes(k)
            out(b"[%05.2f%%] Hot key '%s' found so far with counter %d\n" % (pct, hot[i], freq))
        flush()
        if cli.cfg.interval and loops % 100 == 0:
            time.sleep(cli.cfg.interval)
        if _stop or cur == 0:
            break
    out("\n-------- summary -------\n\n")
    if _stop:
        out("[%05.2f%%] " % pct)
    out("Sampled %d keys in the keyspace!\n" % sampled)
    for i in range(NS - 1, -1, -1):
        if counters[i] > 0:
            out(b"hot key found with counter: %d\tkeyname: %s\n" % (counters[i], hot[i]))
    flush()
    sys.exit(0)


def pipe_mode(cli):
    """Send raw RESP from stdin, read replies concurrently, then an ECHO marker."""
    import selectors
    c = cli.cfg
    sock = cli.conn.sock
    sock.setblocking(False)
    parser = cli.conn.parser
    sel = selectors.DefaultSelector()
    errors = replies = 0
    obuf = b""
    eof = False
    done = False
    magic = bytes(random.getrandbits(8) for _ in range(20))
    last_read = time.monotonic()
    stdin = sys.stdin.buffer.raw if hasattr(sys.stdin.buffer, "raw") else sys.stdin.buffer
    sel.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE)
    while not done:
        mask = selectors.EVENT_READ
        if not eof or obuf:
            mask |= selectors.EVENT_WRITE
        sel.modify(sock, mask)
        events = sel.select(1.0)
        ev = events[0][1] if events else 0
        if ev & selectors.EVENT_READ:
            read_error = False
            try:
                data = sock.recv(1 << 16)
                if not data:
                    read_error = True
                else:
                    parser.feed(data)
            except BlockingIOError:
                pass
            except OSError:
                read_error = True
            while True:
                try:
                    r = parser.get()
                except ValueError:
                    err("Error reading replies from server\n")
                    sys.exit(1)
                if r is None:
                    break
                last_read = time.monotonic()
                if r.is_error:
                    err(r.value.decode(errors="replace") + "\n")
                    errors += 1
                elif eof and r.kind == resp.BULK and len(r.value) == 20 and r.value == magic:
                    out("Last reply received from server.\n")
                    flush()
                    done = True
                    replies -= 1
                replies += 1
            if read_error:
                sys.exit(1)
        if ev & selectors.EVENT_WRITE:
            written = 0
            while True:
                if obuf:
                    try:
                        n = sock.send(obuf)
                    except BlockingIOError:
                        n = 0
                    except OSError as e:
                        err("Error writing to the server: %s\n" % e.strerror)
                        sys.exit(1)
                    obuf = obuf[n:]
                    written += n
                    if obuf:
                        break
                if not obuf and not eof:
                    data = stdin.read(1 << 16)
                    if not data:
                        eof = True
                        obuf = b"\r\n*2\r\n$4\r\nECHO\r\n$20\r\n" + magic + b"\r\n"
                        out("All data transferred. Waiting for the last reply...\n")
                        flush()
                    else:
                        obuf = data
                if (not obuf and eof) or written > 128 * 1024:
                    break
        if eof and c.pipe_timeout > 0 and time.monotonic() - last_read > c.pipe_timeout:
            err("No replies for %d seconds: exiting.\n" % c.pipe_timeout)
            errors += 1
            break
    out("errors: %d, replies: %d\n" % (errors, replies))
    flush()
    sys.exit(1 if errors else 0)


# ---------------------------------------------------------------------------
def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    cfg = Config()
    first = parse_options(argv, cfg)
    args = argv[first:]
    if cfg.auth is None and os.environ.get(AUTH_ENV):
        cfg.auth = os.environ[AUTH_ENV]
    if cfg.askpass:
        import getpass
        cfg.auth = getpass.getpass("Please input password: ")
    cli = CLI(cfg)
    try:
        return _run(cli, cfg, args)
    except BrokenPipeError:
        try:
            sys.stdout = None
        except Exception:
            pass
        return 1
    except KeyboardInterrupt:
        return 130


def _need_conn(cli):
    if not cli.connect():
        sys.exit(1)


def _run(cli, cfg, args):
    if cfg.latency:
        _need_conn(cli)
        latency_mode(cli)
    if cfg.latency_dist:
        _need_conn(cli)
        latency_dist_mode(cli)
    if cfg.rdb is not None:
        _need_conn(cli)
        cli.get_rdb(cfg.rdb)
    if cfg.pipe:
        _need_conn(cli)
        pipe_mode(cli)
    if cfg.bigkeys:
        _need_conn(cli)
        bigkeys_mode(cli)
    if cfg.memkeys:
        _need_conn(cli)
        bigkeys_mode(cli, True, cfg.memkeys_samples)
    if cfg.hotkeys:
        _need_conn(cli)
        hotkeys_mode(cli)
    if cfg.stat:
        _need_conn(cli)
        stat_mode(cli)
    if cfg.scan:
        _need_conn(cli)
        scan_mode(cli)
    if cfg.intrinsic is not None:
        intrinsic_latency_mode(cfg.intrinsic)
    if not args and cfg.eval is None:
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        cli.connect()
        if not os.isatty(0):
            # Commands from a pipe or file: one per line, no prompt (as
            # redis-cli's line editor does when stdin is not a terminal).
            cfg.interactive = True
            return cli.stdin_commands()
        cli.repl()
        return 0
    if cfg.eval is not None:
        _need_conn(cli)
        return cli.eval_mode(args)
    cli.connect(quiet=True)
    return cli.noninteractive(args)


if __name__ == "__main__":
    sys.exit(main())
