"""The process title, as redis-server sets it (redisSetProcTitle): what
``ps`` and ``/proc/PID/cmdline`` show for the server and for its forked
children.

The title is ``proc-title-template`` expanded (``Config.proc_title``: the
variables ``{title}``, ``{listen-addr}``, ``{server-mode}``, ``{port}``,
``{tls-port}``, ``{unixsocket}``, ``{config-file}``).  ``{title}`` is the
server's name as it was invoked (:func:`invoked_as`) or a child's name
(``redis-rdb-bgsave``, ``redis-aof-rewrite``, ``redis-rdb-to-slaves``:
the names Redis gives its children, which monitoring tools look for).

When it is set, as Redis: at start-up once the listeners exist and after a
CONFIG SET of ``port``, ``tls-port`` or ``bind`` (both only with
``set-proc-title yes``); after a CONFIG SET of ``proc-title-template``, and
in a forked child (both whatever ``set-proc-title`` says).

Rewriting the title needs the process's argv memory rewritten, which the
``setproctitle`` package's C module does (it is called from the main
thread: the event loop's, or a forked child's only one).  It is an optional dependency:
where it cannot be imported, or was installed without its C module (its
sources built without a compiler leave a no-op stand-in), no title is set,
logged once at verbose level; the directives are still validated.
"""

from __future__ import annotations

import inspect
import sys

from . import log

try:   # optional: without it the title is left alone (see the docstring)
    import setproctitle as _spt
except ImportError:
    _spt = None

# the C implementation (its functions are builtins; the stand-in that the
# package installs when its C module could not be built is Python code)
AVAILABLE = _spt is not None and inspect.isbuiltin(_spt.setproctitle)

BGSAVE = "redis-rdb-bgsave"            # BGSAVE's child (rdbSaveBackground)
AOF_REWRITE = "redis-aof-rewrite"      # BGREWRITEAOF's child
RDB_TO_REPLICAS = "redis-rdb-to-slaves"   # a diskless transfer's child (full sync, slot migration)

_unavailable_logged = [False]
_comm = []      # the process's name (/proc/PID/comm) before the first title


def invoked_as() -> str:
    """``{title}`` of the server: argv[0] as redis-server keeps it.  For the
    ``ophidis-server`` script that is ``sys.argv[0]``, the script's path as
    the kernel ran it (for a script found in PATH its full path, since the
    interpreter line passes the script's path on, not the name typed); run
    as ``python -m ophidis`` the words that started it (``python -m
    ophidis``), as ``sys.argv[0]`` is then the path of the package's
    ``__main__.py``."""
    argv = sys.argv
    if sys.modules["__main__"].__spec__ is not None:    # python -m ...
        orig = sys.orig_argv
        return " ".join(orig[:len(orig) - len(argv) + 1])
    return argv[0] if argv else ""


def usable() -> bool:
    """Whether a title can be set here; when not, said once in the log (the
    server asks at start-up, so its forked children inherit that it was)."""
    if not AVAILABLE and not _unavailable_logged[0]:
        _unavailable_logged[0] = True
        log.verbose("The process title is not set: the setproctitle package%s." % (
            " is not installed" if _spt is None else " has no C module here"))
    return AVAILABLE


def apply(config, title: str) -> bool:
    """Set the process title: the template expanded with ``title``; False
    when the template does not expand (never, as it is validated)."""
    text = config.proc_title(config["proc-title-template"], title)
    if text is None:
        return False
    if usable():
        # setproctitle also names the calling thread (prctl PR_SET_NAME) after
        # the title's first 15 bytes; Redis leaves that name alone (what
        # top, pidof and killall show: the program's name), so it is put back
        if not _comm:
            _comm.append(_spt.getthreadtitle())
        _spt.setproctitle(text)
        _spt.setthreadtitle(_comm[0])
    return True
