"""ophidis-cli --pipe: mass insertion of raw RESP read from stdin.
"""

from __future__ import annotations

import random
import selectors
import sys
import time

from ophidis.tools import resp
from ophidis.tools.cli.output import err, fatal, flush, out


def pipe_mode(cli):
    """Send raw RESP from stdin, read replies concurrently, then an ECHO marker."""
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
                    fatal("Error reading replies from server\n")
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
                        fatal("Error writing to the server: %s\n" % e.strerror)
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
