"""/metrics: Prometheus metrics served by the server itself (an Ophidis
extension; no separate redis_exporter process).

With ``metrics-port <port>`` (0, the default, is off) the server's
``metrics`` slot holds a ``Metrics``: an asyncio HTTP listener on
``metrics-bind`` (default 127.0.0.1) on the server's own event loop.  A
``GET /metrics`` builds the text from the server's state at that moment:
INFO ALL, CLUSTER INFO, LATENCY LATEST and the slowlog, read as a client's
INFO would read them, through a prometheus_client ``CollectorRegistry``
holding one custom collector (families.py: redis_exporter's names).  Nothing
is counted per command beyond what INFO already counts, so the request
loop does not change; a scrape costs about one ``INFO ALL``.

prometheus-client is an optional dependency (``pip install
'ophidis[metrics]'``): without it the server starts as usual while
metrics-port is 0, and refuses to start, saying so, when it is set.
"""

from __future__ import annotations

import asyncio
import time

from .. import log
from ..info import gen_info

try:
    from prometheus_client import exposition
    from prometheus_client.registry import CollectorRegistry

    from . import families
except ImportError as e:      # optional dependency: only metrics-port needs it
    exposition = CollectorRegistry = families = None
    MISSING = str(e)
else:
    MISSING = None

# a request larger than this (request line and headers) is refused
MAX_REQUEST = 16384
REQUEST_TIMEOUT = 10.0


class _Collector:
    """The registry's one collector: the server's state as metric families."""

    def __init__(self, server):
        self.server = server

    def collect(self):
        return families.families(snapshot(self.server))


def snapshot(srv) -> "families.Snapshot":
    """What a scrape reads, as a client's INFO ALL, CLUSTER INFO, LATENCY
    LATEST, SLOWLOG GET 1 / LEN and CONFIG GET would."""
    latest = []
    for name, ev in srv.latency_events.items():
        t, ms = ev["samples"][-1] if ev["samples"] else (0, 0)
        latest.append((name, t, ms, ev["max"]))
    last = srv.slowlog[0] if srv.slowlog else None
    return families.Snapshot(
        info=gen_info(srv, [b"all"]),
        cluster_info=srv.cluster.info_text() if srv.cluster is not None else "",
        latency_latest=latest,
        slowlog_length=len(srv.slowlog),
        slowlog_last_id=last.id if last is not None else 0,
        last_slow_execution_usec=last.duration if last is not None else 0,
        config={"maxmemory": srv.config["maxmemory"], "maxclients": srv.config["maxclients"]},
        now=time.time())


def _response(status: str, ctype: str, body: bytes, head_only=False) -> bytes:
    return (("HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
             % (status, ctype, len(body))).encode("latin-1") + (b"" if head_only else body))


INDEX = (b"<html><head><title>Ophidis metrics</title></head><body><h1>Ophidis</h1>"
         b"<p><a href=\"/metrics\">Metrics</a></p></body></html>\n")


class Metrics:
    """The server's ``metrics`` slot while metrics-port is set."""

    def __init__(self, server):
        self.server = server
        if MISSING is not None:
            log.warning("metrics-port is set but the prometheus-client package is missing (%s): "
                        "install it with pip install 'ophidis[metrics]', or set metrics-port 0." % MISSING)
            log.flush_and_exit(1)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Collector(server))
        self.listener = None
        self.scrapes = 0
        server.startup_hooks.insert(0, self.start)     # scrapes answer while the data loads
        server.shutdown_hooks.append(self.stop)

    @property
    def address(self):
        return self.server.config["metrics-bind"], self.server.config["metrics-port"]

    async def start(self):
        host, port = self.address
        try:
            self.listener = await asyncio.start_server(self._serve, host, port, limit=MAX_REQUEST)
        except OSError as e:
            log.warning("Could not create the metrics listening socket %s:%d: %s" % (host, port, e.strerror))
            log.flush_and_exit(1)
        log.notice("Serving Prometheus metrics on http://%s:%d/metrics" % (host, port))

    def stop(self):
        if self.listener is not None:
            self.listener.close()
            self.listener = None

    def render(self, accept: str = "") -> tuple:
        """(content type, body) of a scrape."""
        encoder, ctype = exposition.choose_encoder(accept)
        self.scrapes += 1
        return ctype, encoder(self.registry)

    async def _serve(self, reader, writer):
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REQUEST_TIMEOUT)
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split()
        headers = {}
        for line in lines[1:]:
            k, sep, v = line.partition(":")
            if sep:
                headers[k.strip().lower()] = v.strip()
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            out = _response("400 Bad Request", "text/plain", b"Bad Request\n")
        elif parts[0] not in ("GET", "HEAD"):
            out = _response("405 Method Not Allowed", "text/plain", b"Method Not Allowed\n")
        else:
            path = parts[1].split("?", 1)[0]
            head_only = parts[0] == "HEAD"
            if path == "/metrics":
                ctype, body = self.render(headers.get("accept", ""))
                out = _response("200 OK", ctype, body, head_only)
            elif path == "/":
                out = _response("200 OK", "text/html", INDEX, head_only)
            else:
                out = _response("404 Not Found", "text/plain", b"Not Found\n", head_only)
        try:
            writer.write(out)
            await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()
