"""The system doctor: this machine (and a running server) against Redis's
start-up warnings and the usual production advice, each finding with its
exact fix.

``ophidis-server --check-system [conf] [--directive value ...]`` checks the
machine for a server with that configuration (tcp-backlog, maxclients);
``ophidis-cli --doctor`` also reads the server's INFO and CONFIG and, when
the server runs on this machine, its process (open-file limit, swap).  The
lines are redis-server --check-system's (``[name]...OK``, ``...WARNING:``
then what is wrong, ``...skipped``), each warning followed by the commands
or configuration lines that fix it; the exit status is 0 when nothing is
wrong, 1 otherwise.

The checks:

- ``xen-clocksource``: the xen clocksource makes time calls slow;
- ``overcommit``: vm.overcommit_memory must be 1 (a fork for BGSAVE, the
  AOF rewrite or a full sync may fail otherwise);
- ``THP``: transparent huge pages not ``always`` (latency and memory after
  each fork);
- ``somaxconn``: net.core.somaxconn >= tcp-backlog (the kernel cuts the
  listen backlog to it);
- ``open-files``: the open-file limit >= maxclients + 32 (the descriptors
  the server keeps for itself);
- ``tcp-tw-reuse``: net.ipv4.tcp_tw_reuse not 0 (many short connections
  otherwise exhaust local ports in TIME_WAIT);
- ``swap`` (a running server): none of its memory swapped out;
- ``persistence`` (a running server): its last BGSAVE and AOF write worked;
- ``protected-mode`` (a running server): not open to every address with
  neither protected-mode nor a password.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass, field

# descriptors the server keeps beyond its clients (Redis's CONFIG_MIN_RESERVED_FDS)
RESERVED_FDS = 32

OK, WARNING, SKIPPED = "OK", "WARNING", "skipped"

OVERCOMMIT = "/proc/sys/vm/overcommit_memory"
THP = "/sys/kernel/mm/transparent_hugepage/enabled"
SOMAXCONN = "/proc/sys/net/core/somaxconn"
TW_REUSE = "/proc/sys/net/ipv4/tcp_tw_reuse"
CLOCKSOURCE = "/sys/devices/system/clocksource/clocksource0/current_clocksource"


@dataclass
class Finding:
    name: str
    status: str
    text: str = ""                       # what is wrong (or why the check was skipped)
    fixes: list = field(default_factory=list)

    def render(self) -> str:
        if self.status == WARNING:
            out = "[%s]...WARNING:\n%s\n" % (self.name, self.text)
            out += "".join("    %s\n" % f for f in self.fixes)
            return out
        if self.status == SKIPPED and self.text:
            return "[%s]...skipped (%s)\n" % (self.name, self.text)
        return "[%s]...%s\n" % (self.name, self.status)


def read_value(path: str) -> str | None:
    """The first line of a /proc or /sys file, stripped; None when unreadable."""
    try:
        with open(path) as f:
            return f.readline().strip()
    except OSError:
        return None


def _sysctl_fixes(name: str, value) -> list:
    return ["fix now:  sysctl -w %s=%s" % (name, value),
            "keep it:  add '%s = %s' to /etc/sysctl.conf (or a file in /etc/sysctl.d/)" % (name, value)]


def check_xen_clocksource() -> Finding:
    cur = read_value(CLOCKSOURCE)
    if cur is None:
        return Finding("xen-clocksource", SKIPPED, "no clocksource information")
    if cur != "xen":
        return Finding("xen-clocksource", OK)
    return Finding("xen-clocksource", WARNING,
                   "The clocksource is 'xen': reading the time is slow, which slows every command.",
                   ["fix now:  echo tsc > %s   (as root, when 'tsc' is among the available clocksources)"
                    % CLOCKSOURCE,
                    "keep it:  add clocksource=tsc tsc=reliable to the kernel command line"])


def check_overcommit() -> Finding:
    v = read_value(OVERCOMMIT)
    if v is None:
        return Finding("overcommit", SKIPPED, "%s is not readable" % OVERCOMMIT)
    if v == "1":
        return Finding("overcommit", OK)
    return Finding("overcommit", WARNING,
                   "vm.overcommit_memory is %s: with it not 1, the fork of a background save, an AOF rewrite "
                   "or a replica's full sync can fail while memory is short." % v,
                   _sysctl_fixes("vm.overcommit_memory", 1))


def check_thp() -> Finding:
    v = read_value(THP)
    if v is None:
        return Finding("THP", SKIPPED, "no transparent huge page support")
    if "[always]" not in v:
        return Finding("THP", OK)
    return Finding("THP", WARNING,
                   "Transparent huge pages are 'always': after each fork (background save, AOF rewrite) "
                   "the copied pages are 2 MB each, which costs latency and memory.",
                   ["fix now:  echo madvise > %s   (as root; then restart the server)" % THP,
                    "keep it:  add transparent_hugepage=madvise to the kernel command line "
                    "(or the echo above to /etc/rc.local)"])


def check_somaxconn(tcp_backlog: int) -> Finding:
    v = read_value(SOMAXCONN)
    try:
        somax = int(v)
    except (TypeError, ValueError):
        return Finding("somaxconn", SKIPPED, "%s is not readable" % SOMAXCONN)
    if somax >= tcp_backlog:
        return Finding("somaxconn", OK)
    return Finding("somaxconn", WARNING,
                   "net.core.somaxconn is %d, lower than tcp-backlog %d: the kernel cuts the listen "
                   "backlog to %d, so bursts of new connections are refused." % (somax, tcp_backlog, somax),
                   _sysctl_fixes("net.core.somaxconn", tcp_backlog))


def check_open_files(maxclients: int, soft: int | None = None, whose="this shell's") -> Finding:
    """soft: the open-file limit to judge (default: this process's)."""
    if soft is None:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    need = maxclients + RESERVED_FDS
    if soft == resource.RLIM_INFINITY or soft >= need:
        return Finding("open-files", OK)
    return Finding("open-files", WARNING,
                   "The open-file limit (%s) is %d, lower than maxclients %d + %d: the server can serve "
                   "only %d clients." % (whose, soft, maxclients, RESERVED_FDS, max(soft - RESERVED_FDS, 0)),
                   ["fix now:  ulimit -n %d   (in the shell that starts the server)" % need,
                    "systemd:  LimitNOFILE=%d   (in the [Service] section of the server's unit)" % need,
                    "keep it:  add '* soft nofile %d' and '* hard nofile %d' to /etc/security/limits.conf"
                    % (need, need)])


def check_tcp_tw_reuse() -> Finding:
    v = read_value(TW_REUSE)
    if v is None:
        return Finding("tcp-tw-reuse", SKIPPED, "%s is not readable" % TW_REUSE)
    if v != "0":
        return Finding("tcp-tw-reuse", OK)
    return Finding("tcp-tw-reuse", WARNING,
                   "net.ipv4.tcp_tw_reuse is 0: clients that open many short connections run out of local "
                   "ports while old ones wait in TIME_WAIT.",
                   _sysctl_fixes("net.ipv4.tcp_tw_reuse", 1))


def process_limits(pid: int) -> int | None:
    """The soft open-file limit of process pid (from /proc/pid/limits)."""
    try:
        with open("/proc/%d/limits" % pid) as f:
            for line in f:
                if line.startswith("Max open files"):
                    soft = line.split()[3]
                    return resource.RLIM_INFINITY if soft == "unlimited" else int(soft)
    except (OSError, ValueError, IndexError):
        return None
    return None


def process_swap_kb(pid: int) -> int | None:
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmSwap:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_swap(pid: int) -> Finding:
    kb = process_swap_kb(pid)
    if kb is None:
        return Finding("swap", SKIPPED, "no swap information for process %d" % pid)
    if kb == 0:
        return Finding("swap", OK)
    return Finding("swap", WARNING,
                   "%d kB of the server's memory (pid %d) is swapped out: a command touching it waits "
                   "for the disk." % (kb, pid),
                   ["fix now:  lower maxmemory below the free RAM, or add RAM; "
                    "swapoff -a && swapon -a brings the pages back (needs that much free RAM)",
                    ] + _sysctl_fixes("vm.swappiness", 1))


def system_findings(tcp_backlog=511, maxclients=10000) -> list:
    """The machine's checks for a server with this configuration (--check-system)."""
    return [check_xen_clocksource(), check_overcommit(), check_thp(), check_somaxconn(tcp_backlog),
            check_open_files(maxclients), check_tcp_tw_reuse()]


def server_findings(info: dict, config: dict, local_pid: int | None) -> list:
    """A running server's checks: info holds INFO fields, config CONFIG GET
    values (strings); local_pid is its pid when it runs on this machine."""
    backlog = int(config.get("tcp-backlog", 511))
    maxclients = int(config.get("maxclients", 10000))
    out = [check_xen_clocksource(), check_overcommit(), check_thp(), check_somaxconn(backlog)]
    if local_pid is not None:
        out.append(check_open_files(maxclients, process_limits(local_pid),
                                    "of the server process %d" % local_pid))
    else:
        out.append(Finding("open-files", SKIPPED, "the server does not run on this machine"))
    out.append(check_tcp_tw_reuse())
    if local_pid is not None:
        out.append(check_swap(local_pid))
    else:
        out.append(Finding("swap", SKIPPED, "the server does not run on this machine"))
    bad = []
    if info.get("rdb_last_bgsave_status", "ok") != "ok":
        bad.append("the last background save failed")
    if info.get("aof_last_write_status", "ok") != "ok" or info.get("aof_last_bgrewrite_status", "ok") != "ok":
        bad.append("the last AOF write or rewrite failed")
    if bad:
        out.append(Finding("persistence", WARNING,
                           "%s (see the server's log)." % "; ".join(bad).capitalize(),
                           ["check:    free space and permissions of dir %s" % config.get("dir", "?"),
                            "then:     BGSAVE (and BGREWRITEAOF with appendonly yes) must reply OK"]))
    else:
        out.append(Finding("persistence", OK))
    binds = config.get("bind", "").split()
    open_to_all = not binds or any(b.lstrip("-") in ("*", "0.0.0.0", "::", "::*") for b in binds)
    if open_to_all and config.get("protected-mode") == "no" and not config.get("requirepass"):
        out.append(Finding("protected-mode", WARNING,
                           "The server listens on every address with protected-mode no and no password: "
                           "anyone who can reach the port can read and change everything.",
                           ["fix now:  CONFIG SET requirepass <a long password>   (or CONFIG SET "
                            "protected-mode yes, or bind 127.0.0.1)",
                            "keep it:  CONFIG REWRITE, or the same lines in the configuration file"]))
    else:
        out.append(Finding("protected-mode", OK))
    return out


def report(findings) -> tuple:
    """(text, exit status): 1 when any finding is a warning."""
    text = "".join(f.render() for f in findings)
    bad = sum(1 for f in findings if f.status == WARNING)
    text += ("%d problem%s found.\n" % (bad, "" if bad == 1 else "s")) if bad else "No problems found.\n"
    return text, 1 if bad else 0


def is_local_host(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


def local_pid(pid: int) -> bool:
    """pid is a process of this machine (its /proc entry exists)."""
    return os.path.exists("/proc/%d" % pid)
