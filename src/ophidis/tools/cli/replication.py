"""ophidis-cli as a replica: --replica (print the master's command stream)
and --rdb (fetch an RDB snapshot over SYNC).
"""

from __future__ import annotations

import os
import sys

from ophidis.tools.resp import ConnectionClosed
from ophidis.tools.cli.output import OUT_CSV, err, fatal, flush, format_csv, out


def _send_sync(cli):
    """Send SYNC, return (payload_size or None for EOF-marked, eofmark)."""
    conn = cli.conn
    conn.send_raw(b"SYNC\r\n")
    line = b""
    while True:
        ch = conn.sock.recv(1)
        if not ch:
            fatal("Error reading bulk length while SYNCing\n")
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

def replica_mode(cli):
    size, mark = _send_sync(cli)
    sock = cli.conn.sock
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
    cli.cfg.output = OUT_CSV
    while True:
        r = cli.conn.read_reply()
        out(format_csv(r) + b"\n")
        flush()

def get_rdb(cli, filename):
    conn = cli.conn
    for args in (("REPLCONF", "capa", "eof"), ("REPLCONF", "rdb-only", "1")):
        err("sending %s\n" % " ".join(args))
        try:
            r = conn.command(*args)
        except (OSError, ConnectionClosed):
            fatal("\nI/O error\n")
        if r.is_error:
            err("REPLCONF %s error: %s\n" % (args[1], r.value.decode(errors="replace")))
    size, mark = _send_sync(cli)
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
            fatal("Error opening '%s': %s\n" % (filename, e.strerror))
    sock = conn.sock
    total = 0
    tail = b""
    remaining = size
    while remaining is None or remaining > 0:
        want = 65536 if remaining is None else min(65536, remaining)
        d = sock.recv(want)
        if not d:
            fatal("I/O Error reading RDB payload from socket\n")
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
    cli.conn = None
    if not to_stdout:
        os.fsync(fd)
        os.close(fd)
    sys.exit(0)
