"""Waiting for a condition, with a deadline (never a bare sleep)."""

from __future__ import annotations

import os
import socket
import time

from ophidis.embedded import ping_reply


def wait_until(condition, timeout=20.0, interval=0.02, what=None):
    """Call condition() until it returns something true; return that value.
    AssertionError after timeout seconds (naming ``what`` when given)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %ss waiting for %s"
                                 % (timeout, what or getattr(condition, "__name__", "condition")))
        time.sleep(interval)


def port_open(port, host="127.0.0.1", unix=None) -> bool:
    try:
        if unix:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(unix)
        else:
            socket.create_connection((host, port), timeout=0.5).close()
    except OSError:
        return False
    return True


def serving(port, host="127.0.0.1", unix=None) -> bool:
    """The server on port answers a PING with anything but -LOADING (it
    listens while it loads its files, as redis-server does)."""
    reply = ping_reply(host, port, unix, timeout=2)
    return reply is not None and not reply.startswith(b"-LOADING")


def _answering_pid(port, host="127.0.0.1"):
    """The process_id INFO server gives on port; None when it cannot be
    read (a password, a reply we do not know)."""
    try:
        with socket.create_connection((host, port), timeout=2) as s:
            s.sendall(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")
            buf = b""
            while b"process_id:" not in buf or b"\r\n" not in buf.split(b"process_id:", 1)[1]:
                chunk = s.recv(65536)
                if not chunk or buf.startswith(b"-"):
                    return None
                buf += chunk
    except OSError:
        return None
    try:
        return int(buf.split(b"process_id:", 1)[1].split(b"\r\n", 1)[0])
    except ValueError:
        return None


def wait_port(port, proc=None, timeout=15.0, unix=None, log=None):
    """Wait until a server accepts connections on port (or the unix socket)
    and has loaded its files.  RuntimeError when proc exits first or the
    timeout passes; log (a callable returning the server's output) goes
    into the message."""
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("server exited with %s%s" % (proc.returncode, _tail(log)))
        if port_open(port, unix=unix) and serving(port, unix=unix):
            # the server answering is proc itself, not another test's that
            # took the port first (proc then exits: address in use)
            if proc is None or unix or _answering_pid(port) in (None, proc.pid):
                return
        if time.monotonic() >= deadline:
            raise RuntimeError("server did not start on port %s%s" % (port, _tail(log)))
        time.sleep(0.05)


def _tail(log):
    if log is None:
        return ""
    try:
        text = log()
    except OSError:
        return ""
    return "\n--- server output (tail) ---\n" + text[-4000:]


# /proc/<pid>/wchan names where a process's main thread waits in the kernel
HAS_WCHAN = os.path.exists("/proc/self/wchan")


def in_sleep(pid) -> bool:
    """The process's main thread sleeps in the kernel's nanosleep (a
    server in DEBUG SLEEP: time.sleep); False once it is gone."""
    try:
        with open("/proc/%d/wchan" % pid) as f:
            return "nanosleep" in f.read()
    except OSError:
        return False
