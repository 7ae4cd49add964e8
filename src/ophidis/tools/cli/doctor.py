"""ophidis-cli --doctor: the system doctor (ophidis.doctor) for the server
the CLI connects to: its INFO and CONFIG, the machine's settings and, when
the server runs on this machine, its process (open-file limit, swap)."""

from __future__ import annotations

import sys

from ophidis import doctor
from ophidis.tools.cli.output import fatal, out

CONFIG_NAMES = ("tcp-backlog", "maxclients", "dir", "bind", "protected-mode", "requirepass")


def _info(text: bytes) -> dict:
    info = {}
    for line in text.decode("utf-8", "replace").split("\r\n"):
        k, sep, v = line.partition(":")
        if sep and not line.startswith("#"):
            info[k] = v
    return info


def doctor_mode(cli):
    r = cli.conn.command("INFO", "all")
    if r.is_error:
        fatal("ERROR: %s\n" % r.value.decode(errors="replace"))
    info = _info(r.value)
    config = {}
    for name in CONFIG_NAMES:
        r = cli.conn.command("CONFIG", "GET", name)
        if not r.is_error and len(r.value) == 2:
            config[name] = r.value[1].value.decode("utf-8", "replace")
    pid = int(info.get("process_id", "0") or 0)
    local = bool(cli.cfg.socket) or doctor.is_local_host(cli.cfg.host)
    local_pid = pid if (local and pid and doctor.local_pid(pid)) else None
    out("Server %s: Redis %s, pid %d%s\n" % (
        cli.addr(), info.get("redis_version", "?"), pid, "" if local_pid else " (not on this machine)"))
    text, code = doctor.report(doctor.server_findings(info, config, local_pid))
    out(text)
    sys.exit(code)
