"""Command line of ophidis-server, modelled on redis-server's:

    ophidis-server [/path/to/redis.conf] [--directive value ...]
    ophidis-server -            (configuration from standard input)
    ophidis-server --check-system [/path/to/redis.conf] [--directive value ...]
                                (the system doctor, doctor.py, for that configuration)
"""

from __future__ import annotations

import asyncio
import os
import sys

from . import doctor, log
from .config import Config, ConfigError
from .protocol.resp import sdscatrepr, split_args
from .sysinfo import OPHIDIS_VERSION, REDIS_VERSION, arch_bits, python_version


def usage():
    sys.stderr.write(
        "Usage: ./ophidis-server [/path/to/redis.conf] [options] [-]\n"
        "       ./ophidis-server - (read config from stdin)\n"
        "       ./ophidis-server -v or --version\n"
        "       ./ophidis-server -h or --help\n"
        "       ./ophidis-server --check-system [/path/to/redis.conf] [options]\n\n"
        "Examples:\n"
        "       ./ophidis-server (run the server with default conf)\n"
        "       ./ophidis-server /etc/redis/6379.conf\n"
        "       ./ophidis-server --port 7777\n"
        "       ./ophidis-server /etc/myredis.conf --loglevel verbose -\n"
        "       ./ophidis-server /etc/myredis.conf --loglevel verbose\n")
    sys.exit(1)


def build_options(args):
    """Turn ``--name value ...`` arguments into config lines, as redis-server
    7.0 does: an option name alone (``--port``, not ``"--port 6380"``) takes
    the next argument as its value even when it starts with ``--``; a bare
    ``--save`` followed by an option or last means ``save ""``."""
    out = ""
    handled = True          # the last option name got a value
    n = len(args)
    for j, a in enumerate(args):
        if handled and a.startswith("--"):
            if out:
                out += "\n"
            out += a[2:] + " "
            parts = split_args(os.fsencode(a))
            if parts is not None and len(parts) == 1:
                handled = False
                if a.lower() == "--save" and (j == n - 1 or args[j + 1].startswith("--")):
                    out += '""'
                    handled = True
            else:
                handled = True      # "--port 6380": name and value in one argument
        else:
            out += sdscatrepr(os.fsencode(a)).decode("ascii") + " "
            handled = True
    return out


def fatal_config(e: ConfigError):
    sys.stderr.write("\n*** FATAL CONFIG FILE ERROR (Redis %s) ***\n" % REDIS_VERSION)
    if len(e.args) == 3:
        linenum, line, msg = e.args
        if linenum is not None:
            sys.stderr.write("Reading the configuration file, at line %d\n" % linenum)
            sys.stderr.write(">>> '%s'\n" % line)
    else:
        msg = str(e)
    sys.stderr.write("%s\n" % msg)
    sys.exit(1)


def load_config(argv):
    cfg = Config()
    config_file = None
    text = ""
    args = list(argv)
    if args and args[0] in ("-v", "--version"):
        print("Ophidis server v=%s (Redis %s compatible) bits=%d python=%s" % (
            OPHIDIS_VERSION, REDIS_VERSION, arch_bits(), python_version()))
        sys.exit(0)
    if args and args[0] in ("-h", "--help"):
        usage()
    if args and not args[0].startswith("--") and args[0] != "-":
        config_file = args.pop(0)
    read_stdin = False
    if args and args[-1] == "-":
        read_stdin = True
        args.pop()
    elif args and args[0] == "-":
        read_stdin = True
        args.pop(0)
    if config_file:
        try:
            with open(config_file, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
        except OSError as e:
            sys.stderr.write("Fatal error, can't open config file '%s': %s\n" % (
                os.path.abspath(config_file), e.strerror))
            sys.exit(1)
        cfg.config_file = os.path.abspath(config_file)
    if read_stdin:
        text += "\n" + sys.stdin.read()
    opts = build_options(args)
    if opts:
        text += "\n" + opts
    try:
        cfg.load_text(text)
    except ConfigError as e:
        fatal_config(e)
    return cfg, config_file, bool(text.strip())


def daemonize():
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    fd = os.open(os.devnull, os.O_RDWR)
    for i in (0, 1, 2):
        os.dup2(fd, i)
    if fd > 2:
        os.close(fd)


def check_system(argv) -> int:
    """--check-system: the machine against the advice for this configuration."""
    cfg = load_config(argv)[0]
    text, code = doctor.report(doctor.system_findings(cfg["tcp-backlog"], cfg["maxclients"]))
    sys.stdout.write(text)
    return code


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "--check-system":
        return check_system(argv[1:])
    cfg, config_file, had_config = load_config(argv)
    if cfg["daemonize"]:
        daemonize()
    log.configure(cfg["loglevel"], cfg["logfile"] or None)
    log.warning("oO0OoO0OoO0Oo Ophidis is starting oO0OoO0OoO0Oo")
    log.warning("Ophidis version=%s (Redis %s compatible), bits=%d, pid=%d, just started" % (
        OPHIDIS_VERSION, REDIS_VERSION, arch_bits(), os.getpid()))
    if config_file:
        log.warning("Configuration loaded")
    elif not had_config:
        log.warning("Warning: no config file specified, using the default config. In order to specify a "
                    "config file use %s /path/to/redis.conf" % (sys.argv[0] or "ophidis-server"))
    else:
        log.warning("Configuration loaded")
    pidfile = cfg["pidfile"]
    if cfg["daemonize"] and not pidfile:
        pidfile = "/var/run/redis.pid"
        cfg.values["pidfile"] = pidfile
    if pidfile:
        try:
            with open(pidfile, "w") as f:
                f.write("%d\n" % os.getpid())
        except OSError as e:
            log.warning("Failed to write PID file: %s" % e.strerror)
    try:
        import uvloop
        use_uvloop = True
    except ImportError:
        use_uvloop = False
    # imported here: --version, --help and a bad configuration answer
    # without loading the whole server
    from .server.server import Server
    try:
        server = Server(cfg)           # ``user`` lines are checked as the ACL subsystem starts
    except ConfigError as e:
        fatal_config(e)
    server.config_file = cfg.config_file
    if use_uvloop:
        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(server.run())
    except SystemExit as e:        # a port could not be listened on (logged)
        return e.code or 1
    try:
        loop.run_forever()
        # what is still under way (connection attempts of the cluster bus,
        # a replica's link ...) is cancelled and given a moment to end, so
        # nothing runs on (or complains about) a closed loop
        pending = asyncio.all_tasks(loop)
        for t in pending:
            t.cancel()
        if pending:
            loop.run_until_complete(asyncio.wait(pending, timeout=1))
    finally:
        try:
            loop.close()
        except Exception:  # noqa: BLE001
            pass
    return server.exit_code


if __name__ == "__main__":
    sys.exit(main())
