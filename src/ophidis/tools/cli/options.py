"""Command-line options of ophidis-cli (redis-cli's): the settings of a run
(``Config``), ``--help`` and the option parser.
"""

from __future__ import annotations

import os
import sys

from ophidis.protocol import resp as protocol
from ophidis.sysinfo import REDIS_VERSION
from ophidis.tools.cli.cluster import ManagerOptions, parse_manager_option
from ophidis.tools.cli.output import OUT_CSV, OUT_JSON, OUT_QUOTED_JSON, OUT_RAW, OUT_STANDARD, err, fatal
from ophidis.tools.defaults import Defaults
from ophidis.tools.resp import TLS, atof, atoi, parse_redis_uri

HISTFILE_DEFAULT = ".ophidiscli_history"
HISTFILE_ENV = "OPHIDISCLI_HISTFILE"
AUTH_ENV = "REDISCLI_AUTH"


class Config(Defaults):
    DEFAULTS = {
        "host": "127.0.0.1", "port": 6379, "socket": None, "repeat": 1, "interval": 0.0,
        "input_dbnum": 0, "dbnum": 0, "auth": None, "user": None, "no_auth_warning": False, "askpass": False,
        "mb_delim": b"\n", "cmd_delim": b"\n", "stdin_lastarg": False, "stdin_tag": None, "resp3": 0,
        "cluster": False, "set_errcode": False, "quoted_input": False,
        "latency": False, "latency_history": False, "latency_dist": False, "intrinsic": None,
        "stat": False, "scan": False, "bigkeys": False, "memkeys": False, "hotkeys": False, "doctor": False,
        "memkeys_samples": 0, "pattern": None, "rdb": None, "pipe": False, "pipe_timeout": 30, "eval": None,
        "mono": False, "verbose": False, "interactive": False, "in_multi": False, "pre_multi_dbnum": 0,
        "hints": True,
    }

    def __init__(self):
        super().__init__()
        tty = os.isatty(1) or os.environ.get("FAKETTY") is not None
        self.output = OUT_STANDARD if tty else OUT_RAW
        self.push_output = tty
        self.cluster_manager = ManagerOptions()


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
%(tls)s  --raw              Use raw formatting for replies (default when STDOUT is
                     not a tty).
  --no-raw           Force formatted output even when STDOUT is not a tty.
  --quoted-input     Force input to be handled as quoted strings.
  --csv              Output in CSV format.
  --json             Output in JSON format (default RESP3, use -2 if you want to use with RESP2).
  --quoted-json      Same as --json, but produce ASCII-safe quoted strings, not Unicode.
  --show-pushes <yn> Whether to print RESP3 PUSH messages.  Enabled by default
                     when STDOUT is a tty but can be overridden with --show-pushes no.
  --stat             Print rolling stats about server: mem, clients, ...
  --doctor           Check the server's settings and this machine's against the
                     production advice, with the fix for each finding (exit
                     status 1 when something is wrong).
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
  --cluster <command> [args...] [opts...]
                     Cluster Manager command and arguments (see below).
  --no-auth-warning  Don't show warning message when using password on command
                     line interface.
  --help             Output this help and exit.
  --version          Output version and exit.

Cluster Manager Commands:
  Use --cluster help to list all available cluster manager commands.

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
""" % {"p": prog, "v": REDIS_VERSION, "tls": TLS.HELP}
    (sys.stderr if code else sys.stdout).write(text)
    sys.exit(code)


# Options that only switch a setting on: option -> Config attribute.
_FLAGS = {
    "-x": "stdin_lastarg", "--no-auth-warning": "no_auth_warning", "--askpass": "askpass",
    "--quoted-input": "quoted_input", "--latency": "latency", "--latency-dist": "latency_dist",
    "--mono": "mono", "--stat": "stat", "--scan": "scan", "--pipe": "pipe", "--bigkeys": "bigkeys",
    "--hotkeys": "hotkeys", "-c": "cluster", "-e": "set_errcode", "--verbose": "verbose",
    "--doctor": "doctor",
}


def parse_options(argv, cfg):
    i = 0
    n = len(argv)
    while i < n:
        a = argv[i]
        last = i == n - 1
        j = parse_manager_option(argv, i, cfg, usage)
        if j is not None:
            i = j + 1
            continue
        if not a.startswith("-"):
            break
        nxt = (lambda: argv[i + 1])
        j = TLS.parse(argv, i)
        if j is not None:
            i = j
        elif a in _FLAGS:
            setattr(cfg, _FLAGS[a], True)
        elif a == "-h" and not last:
            cfg.host = nxt(); i += 1
        elif a == "-h" and last:
            usage(0)
        elif a == "--help":
            usage(0)
        elif a == "-X" and not last:
            cfg.stdin_tag = nxt(); i += 1
        elif a == "-p" and not last:
            cfg.port = atoi(nxt()); i += 1
        elif a == "-s" and not last:
            cfg.socket = nxt(); i += 1
        elif a == "-r" and not last:
            cfg.repeat = atoi(nxt()); i += 1
        elif a == "-i" and not last:
            cfg.interval = atof(nxt()); i += 1
        elif a == "-n" and not last:
            cfg.input_dbnum = atoi(nxt()); i += 1
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
        elif a == "--csv":
            cfg.output = OUT_CSV
        elif a in ("--json", "--quoted-json"):
            if cfg.resp3 == 0:
                cfg.resp3 = 2
            cfg.output = OUT_JSON if a == "--json" else OUT_QUOTED_JSON
        elif a == "--latency-history":
            cfg.latency = cfg.latency_history = True
        elif a == "--pattern" and not last:
            cfg.pattern = nxt().encode("utf-8", "surrogateescape"); i += 1
        elif a == "--quoted-pattern" and not last:
            p = protocol.split_args(nxt().encode("utf-8", "surrogateescape"))
            if not p or len(p) != 1:
                fatal("Invalid quoted string specified for --quoted-pattern.\n")
            cfg.pattern = p[0]; i += 1
        elif a == "--intrinsic-latency" and not last:
            cfg.intrinsic = atoi(nxt()); i += 1
        elif a == "--rdb" and not last:
            cfg.rdb = nxt(); i += 1
        elif a == "--pipe-timeout" and not last:
            cfg.pipe_timeout = atoi(nxt()); i += 1
        elif a == "--memkeys":
            cfg.memkeys = True
            cfg.memkeys_samples = 0
        elif a == "--memkeys-samples" and not last:
            cfg.memkeys = True
            cfg.memkeys_samples = atoi(nxt()); i += 1
        elif a == "--eval" and not last:
            cfg.eval = nxt(); i += 1
        elif a == "-d" and not last:
            cfg.mb_delim = nxt().encode(); i += 1
        elif a == "-D" and not last:
            cfg.cmd_delim = nxt().encode(); i += 1
        elif a == "-2":
            cfg.resp3 = 0
        elif a == "-3":
            cfg.resp3 = 1
        elif a == "--show-pushes" and not last:
            v = nxt().lower(); i += 1
            cfg.push_output = v in ("yes", "1", "true", "y")
        elif a in ("-v", "--version"):
            print("ophidis-cli %s" % REDIS_VERSION)
            sys.exit(0)
        else:
            if a.startswith("-") and len(a) > 1:
                fatal('Unrecognized option or bad number of args for: \'%s\'\n' % a)
            break
        i += 1
    if cfg.auth is not None and not cfg.no_auth_warning:
        err("Warning: Using a password with '-a' or '-u' option on the command line interface "
            "may not be safe.\n")
    if cfg.stdin_lastarg and cfg.stdin_tag:
        fatal("Options -x and -X are mutually exclusive.\n")
    return i
