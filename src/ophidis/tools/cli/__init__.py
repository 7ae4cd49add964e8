"""ophidis-cli: a command line client compatible with redis-cli 7.0.

Usage follows redis-cli: ``ophidis-cli [OPTIONS] [cmd [arg [arg ...]]]``.
See docs/TOOLS.md for what is implemented.  The modules: ``options``
(command line), ``session`` (connection, commands, replies), ``output``
(reply formats), ``help`` (HELP, completion, hints), ``repl`` (interactive
mode), and the special modes ``stats``, ``keyspace``, ``pipe`` and
``replication``.
"""

from __future__ import annotations

import getpass
import os
import signal
import sys

from ophidis.tools.cli import cluster_commands
from ophidis.tools.cli.doctor import doctor_mode
from ophidis.tools.cli.keyspace import bigkeys_mode, hotkeys_mode, scan_mode
from ophidis.tools.cli.options import AUTH_ENV, Config, parse_options
from ophidis.tools.cli.pipe import pipe_mode
from ophidis.tools.cli.repl import repl
from ophidis.tools.cli.replication import get_rdb
from ophidis.tools.cli.session import CLI
from ophidis.tools.cli.stats import intrinsic_latency_mode, latency_dist_mode, latency_mode, stat_mode


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    cfg = Config()
    first = parse_options(argv, cfg)
    args = argv[first:]
    if cfg.auth is None and os.environ.get(AUTH_ENV):
        cfg.auth = os.environ[AUTH_ENV]
    if cfg.askpass:
        cfg.auth = getpass.getpass("Please input password: ")
    if cfg.cluster_manager.name is not None:
        return cluster_commands.run(cfg)
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
    # The modes that need a connection, in redis-cli's order; each one exits.
    modes = ((cfg.latency, latency_mode), (cfg.latency_dist, latency_dist_mode),
             (cfg.rdb is not None, lambda cli: get_rdb(cli, cfg.rdb)), (cfg.pipe, pipe_mode),
             (cfg.bigkeys, bigkeys_mode), (cfg.memkeys, lambda cli: bigkeys_mode(cli, True, cfg.memkeys_samples)),
             (cfg.hotkeys, hotkeys_mode), (cfg.stat, stat_mode), (cfg.scan, scan_mode),
             (cfg.doctor, doctor_mode))
    for wanted, mode in modes:
        if wanted:
            _need_conn(cli)
            mode(cli)
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
        repl(cli)
        return 0
    if cfg.eval is not None:
        _need_conn(cli)
        return cli.eval_mode(args)
    cli.connect(quiet=True)
    return cli.noninteractive(args)


if __name__ == "__main__":
    sys.exit(main())
