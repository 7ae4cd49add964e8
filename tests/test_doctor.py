"""The system doctor: ophidis-server --check-system and ophidis-cli --doctor
find what the test itself reads from /proc/sys, /sys/kernel/mm and the
process's limits, with the fixes, and exit 1 exactly when something is
wrong."""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile

from support.servers import compiled_run_only, free_port, server_env, wait_exit
from support.wait import wait_port

from ophidis.sysinfo import REDIS_VERSION

pytestmark = compiled_run_only     # the request loop plays no part


def read(path):
    try:
        with open(path) as f:
            return f.readline().strip()
    except OSError:
        return None


def statuses(text) -> dict:
    return dict(re.findall(r"^\[([a-zA-Z-]+)\]\.\.\.(OK|WARNING|skipped)", text, re.M))


def machine_expectations(tcp_backlog=511):
    """What this machine should get, from the files read here."""
    want = {}
    v = read("/proc/sys/vm/overcommit_memory")
    want["overcommit"] = "skipped" if v is None else ("OK" if v == "1" else "WARNING")
    v = read("/sys/kernel/mm/transparent_hugepage/enabled")
    want["THP"] = "skipped" if v is None else ("WARNING" if "[always]" in v else "OK")
    v = read("/proc/sys/net/core/somaxconn")
    want["somaxconn"] = "skipped" if v is None else ("OK" if int(v) >= tcp_backlog else "WARNING")
    v = read("/proc/sys/net/ipv4/tcp_tw_reuse")
    want["tcp-tw-reuse"] = "skipped" if v is None else ("WARNING" if v == "0" else "OK")
    v = read("/sys/devices/system/clocksource/clocksource0/current_clocksource")
    want["xen-clocksource"] = "skipped" if v is None else ("WARNING" if v == "xen" else "OK")
    return want


def check_system(*args, nofile=None):
    def limit():
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    return subprocess.run([sys.executable, "-m", "ophidis", "--check-system", *args], env=server_env(),
                          capture_output=True, text=True, timeout=60, preexec_fn=limit)


def test_check_system_matches_this_machine():
    p = check_system()
    got = statuses(p.stdout)
    want = machine_expectations()
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    want["open-files"] = "OK" if soft == resource.RLIM_INFINITY or soft >= 10032 else "WARNING"
    assert got == want, p.stdout
    assert p.returncode == (1 if "WARNING" in want.values() else 0)
    if want["overcommit"] == "WARNING":
        assert "    fix now:  sysctl -w vm.overcommit_memory=1\n" in p.stdout
        assert "add 'vm.overcommit_memory = 1' to /etc/sysctl.conf" in p.stdout
    else:
        assert "vm.overcommit_memory" not in p.stdout
    if want["THP"] == "WARNING":
        assert "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled" in p.stdout
    assert p.stdout.endswith("No problems found.\n" if p.returncode == 0 else "found.\n")


def test_check_system_reads_the_configuration():
    somax = int(read("/proc/sys/net/core/somaxconn"))
    p = check_system("--tcp-backlog", str(somax + 1), "--maxclients", "1000", nofile=256)
    got = statuses(p.stdout)
    assert got["somaxconn"] == "WARNING" and got["open-files"] == "WARNING"
    assert p.returncode == 1
    assert "net.core.somaxconn is %d, lower than tcp-backlog %d" % (somax, somax + 1) in p.stdout
    assert "fix now:  sysctl -w net.core.somaxconn=%d\n" % (somax + 1) in p.stdout
    assert "The open-file limit (this shell's) is 256, lower than maxclients 1000 + 32" in p.stdout
    assert "fix now:  ulimit -n 1032" in p.stdout and "systemd:  LimitNOFILE=1032" in p.stdout
    p = check_system("--tcp-backlog", str(somax), "--maxclients", "100", nofile=256)
    got = statuses(p.stdout)
    assert got["somaxconn"] == "OK" and got["open-files"] == "OK"
    # a configuration file and a bad directive, as the server reads them
    p = check_system("--no-such-directive", "1")
    assert p.returncode == 1 and "FATAL CONFIG FILE ERROR" in p.stderr


def test_cli_doctor_reads_the_server_and_its_process():
    port = free_port()
    d = tempfile.mkdtemp(prefix="ophidis-doctor-")

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (300, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    log = open(os.path.join(d, "stdout.log"), "w")
    proc = subprocess.Popen([sys.executable, "-m", "ophidis", "--port", str(port), "--save", "", "--dir", d,
                             "--maxclients", "2000", "--bind", "0.0.0.0", "--protected-mode", "no"],
                            cwd=d, stdout=log, stderr=subprocess.STDOUT, env=server_env(), preexec_fn=limit)
    try:
        wait_port(port, proc)
        p = subprocess.run([sys.executable, "-m", "ophidis.tools.cli", "-p", str(port), "--doctor"],
                           env=server_env(), capture_output=True, text=True, timeout=60)
        got = statuses(p.stdout)
        want = machine_expectations()
        for name, st in want.items():
            assert got[name] == st, (name, p.stdout)
        assert p.stdout.startswith("Server 127.0.0.1:%d: Redis %s, pid %d\n" % (port, REDIS_VERSION, proc.pid))
        assert got["open-files"] == "WARNING"
        assert ("The open-file limit (of the server process %d) is 300, lower than maxclients 2000 + 32"
                % proc.pid) in p.stdout
        assert "systemd:  LimitNOFILE=2032" in p.stdout
        with open("/proc/%d/status" % proc.pid) as f:
            swap = [int(line.split()[1]) for line in f if line.startswith("VmSwap:")]
        assert got["swap"] == ("skipped" if not swap else ("OK" if swap[0] == 0 else "WARNING"))
        assert got["persistence"] == "OK"
        assert got["protected-mode"] == "WARNING" and "CONFIG SET requirepass" in p.stdout
        assert p.returncode == 1
    finally:
        proc.terminate()
        wait_exit(proc, 20)
        log.close()
        shutil.rmtree(d, ignore_errors=True)
