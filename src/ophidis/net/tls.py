"""TLS as Redis's tls.c, with Python's ``ssl`` and the event loop's SSL
transport.

``Tls`` (the server's ``tls`` slot) turns the tls-* directives into SSL
contexts (tlsConfigure): one server context per ``tls-auth-clients`` mode
(a connection takes the one of the mode at its accept, as Redis sets the
verify mode on each new SSL), a context for the connections we open
(replication and the cluster bus: the client certificate when
tls-client-cert-file/-key-file are set, else the server's), and the bus
listener's (client certificates always required).  Configuration is
atomic: a bad file leaves the contexts as they were, with Redis's log
lines and CONFIG SET error; a good one serves the connections accepted
after it.

A TLS listener accepts plain TCP and upgrades each connection with
``loop.start_tls`` (``accept``): the Client it then serves is the same
class as for plaintext (its ``transport`` is the SSL transport), so the
request loop, compiled or not, is unchanged and plaintext or unix clients
pay nothing.  What Python's ``ssl`` has no API for (TLS 1.3 ciphersuites,
the session cache's size and timeout) is set on the SSL_CTX through the
OpenSSL functions ``_ssl`` itself is linked with (``_native``).
"""

from __future__ import annotations

import asyncio
import os
import ssl

from .. import log
from ..config import ConfigError
from .accept import Acceptor
from .sslnative import error_code, native, set_ciphersuites

# tls-protocols words -> versions (Redis's default: TLSv1.2 and TLSv1.3)
PROTOCOLS = {"tlsv1": ssl.TLSVersion.TLSv1, "tlsv1.1": ssl.TLSVersion.TLSv1_1,
             "tlsv1.2": ssl.TLSVersion.TLSv1_2, "tlsv1.3": ssl.TLSVersion.TLSv1_3}
DEFAULT_PROTOCOLS = [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3]


AUTH_MODES = ("no", "yes", "optional")
_VERIFY = {"no": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL, "yes": ssl.CERT_REQUIRED}

# the directives whose change reconfigures (applyTlsCfg); tls-port listens too
DIRECTIVES = ("tls-cert-file", "tls-key-file", "tls-key-file-pass", "tls-client-cert-file",
              "tls-client-key-file", "tls-client-key-file-pass", "tls-dh-params-file", "tls-ca-cert-file",
              "tls-ca-cert-dir", "tls-protocols", "tls-ciphers", "tls-ciphersuites",
              "tls-prefer-server-ciphers", "tls-session-caching", "tls-session-cache-size",
              "tls-session-cache-timeout", "tls-cluster", "tls-replication")


def is_tls(c) -> bool:
    """The client's connection is a TLS one (connGetType == CONN_TYPE_TLS)."""
    t = c.transport
    return t is not None and t.get_extra_info("sslcontext") is not None


class TlsError(Exception):
    """A configuration that cannot be used; the text is Redis's log line."""


def error_string(e: BaseException, tables=None) -> str:
    """OpenSSL's ERR_error_string_n text of an ssl or OS error, as Redis
    logs it ("error:0A00010B:SSL routines::wrong version number");
    ``tables`` stands in for OpenSSL's error tables (tests)."""
    if isinstance(e, ssl.SSLError) and e.library and e.reason:
        text = str(e.args[1]) if len(e.args) > 1 else e.reason
        if "] " in text:
            text = text.split("] ", 1)[1]
        text = text.rsplit(" (_ssl.c", 1)[0]
        code, lib_text = error_code(e.library, text, tables)
        return "error:%08X:%s::%s" % (code, lib_text, text)
    if isinstance(e, OSError) and e.errno and not isinstance(e, ssl.SSLError):
        return "error:%08X:system library::%s" % (0x80000000 | e.errno, os.strerror(e.errno))
    text = str(e.args[1]) if isinstance(e, ssl.SSLError) and len(e.args) > 1 else str(e)
    return text.rsplit(" (_ssl.c", 1)[0]


def parse_protocols(s):
    """tls-protocols (parseProtocolsConfig): the versions, or TlsError."""
    if not s:
        return DEFAULT_PROTOCOLS
    out = []
    for tok in s.split(" "):
        v = PROTOCOLS.get(tok.lower())
        if v is None:
            raise TlsError("Invalid tls-protocols specified. "
                           "Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.")
        out.append(v)
    return out


_SSL_CTRL_SET_SESS_CACHE_SIZE = 42
_SSL_CTRL_SET_SESS_CACHE_MODE = 44
_SSL_SESS_CACHE_OFF = 0
_SSL_SESS_CACHE_SERVER = 2


def _base_context(cfg, versions, client: bool, verify: str = "yes"):
    """createSSLContext: certificate and key (the client ones for a
    client context when both are set), CAs, ciphers; TlsError with
    Redis's log line."""
    if client:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False      # Redis verifies the chain, not the name
        ctx.verify_mode = ssl.CERT_REQUIRED
    else:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.verify_mode = _VERIFY[verify]
    ctx.minimum_version = min(versions)
    ctx.maximum_version = max(versions)
    ctx.options |= ssl.OP_NO_COMPRESSION
    if client and cfg["tls-client-cert-file"] and cfg["tls-client-key-file"]:
        cert, key, pw = cfg["tls-client-cert-file"], cfg["tls-client-key-file"], cfg["tls-client-key-file-pass"]
    else:
        cert, key, pw = cfg["tls-cert-file"], cfg["tls-key-file"], cfg["tls-key-file-pass"]
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_verify_locations(cafile=cert)
    except (ssl.SSLError, OSError) as e:
        raise TlsError("Failed to load certificate: %s: %s" % (cert, error_string(e)))
    try:
        ctx.load_cert_chain(cert, keyfile=key, password=lambda: (pw or "").encode())
    except (ssl.SSLError, OSError) as e:
        raise TlsError("Failed to load private key: %s: %s" % (key, error_string(e)))
    ca_file, ca_dir = cfg["tls-ca-cert-file"], cfg["tls-ca-cert-dir"]
    if ca_file or ca_dir:
        try:
            ctx.load_verify_locations(cafile=ca_file, capath=ca_dir)
        except (ssl.SSLError, OSError) as e:
            raise TlsError("Failed to configure CA certificate(s) file/directory: %s" % error_string(e))
    ciphers = cfg["tls-ciphers"]
    try:
        ctx.set_ciphers(ciphers or "DEFAULT")
    except ssl.SSLError:
        raise TlsError("Failed to configure ciphers: %s" % ciphers)
    suites = cfg["tls-ciphersuites"]
    if suites:
        if not set_ciphersuites(ctx, suites):
            raise TlsError("Failed to configure ciphersuites: %s" % suites)
    return ctx


def _server_settings(ctx, cfg):
    """What tlsConfigure adds to the server context: the session cache,
    server cipher preference, DH parameters."""
    n = native()
    p = n.pointer(ctx) if n.ok else None
    if cfg["tls-session-caching"]:
        if p is not None:
            n.ctrl(p, _SSL_CTRL_SET_SESS_CACHE_MODE, _SSL_SESS_CACHE_SERVER, None)
            n.ctrl(p, _SSL_CTRL_SET_SESS_CACHE_SIZE, cfg["tls-session-cache-size"], None)
            n.set_timeout(p, cfg["tls-session-cache-timeout"])
            n.set_sid_ctx(p, b"redis", 5)
    else:
        ctx.options |= ssl.OP_NO_TICKET
        if p is not None:
            n.ctrl(p, _SSL_CTRL_SET_SESS_CACHE_MODE, _SSL_SESS_CACHE_OFF, None)
    if cfg["tls-prefer-server-ciphers"]:
        ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    else:
        ctx.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
    dh = cfg["tls-dh-params-file"]
    if dh:
        try:
            with open(dh, "rb"):
                pass
        except OSError as e:
            raise TlsError("Failed to load %s: %s" % (dh, e.strerror))
        try:
            ctx.load_dh_params(dh)
        except (ssl.SSLError, OSError):
            raise TlsError("%s: failed to read DH params." % dh)


def build(cfg):
    """tlsConfigure: {auth mode: server context}, the client context, or
    TlsError with Redis's log line."""
    if not cfg["tls-cert-file"]:
        raise TlsError("No tls-cert-file configured!")
    if not cfg["tls-key-file"]:
        raise TlsError("No tls-key-file configured!")
    if ((cfg["tls-auth-clients"] != "no" or cfg["tls-cluster"] or cfg["tls-replication"])
            and not cfg["tls-ca-cert-file"] and not cfg["tls-ca-cert-dir"]):
        raise TlsError("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, "
                       "tls-replication or tls-auth-clients are enabled!")
    versions = parse_protocols(cfg["tls-protocols"])
    servers = {}
    for mode in AUTH_MODES:
        ctx = _base_context(cfg, versions, False, mode)
        _server_settings(ctx, cfg)
        servers[mode] = ctx
    return servers, _base_context(cfg, versions, True)


class Tls:
    """The server's TLS contexts (None until configured) and the tls-port
    listener's accept."""

    __slots__ = ("server", "servers", "client")

    def __init__(self, server):
        self.server = server
        self.servers = None     # auth mode -> server SSLContext
        self.client = None      # SSLContext of the connections we open
        cfg = server.config
        if self.wanted() and not self.configure():
            log.warning("Failed to configure TLS. Check logs for more info.")
            log.flush_and_exit(1)
        for name in DIRECTIVES:
            cfg.on_change(name, self._apply)

    def wanted(self) -> bool:
        cfg = self.server.config
        return bool(cfg["tls-port"] or cfg["tls-replication"] or cfg["tls-cluster"])

    def configure(self) -> bool:
        """tlsConfigure: all or nothing; False (logged) when the
        configuration cannot be used."""
        try:
            self.servers, self.client = build(self.server.config)
        except TlsError as e:
            log.warning(str(e))
            return False
        return True

    def _apply(self, v):
        """applyTlsCfg (CONFIG SET of a tls-* directive)."""
        if self.wanted() and not self.configure():
            raise ConfigError("Unable to update TLS configuration. Check server logs.")

    def ensure(self):
        """applyTLSPort's first step: configured, or the ConfigError."""
        if self.servers is None and not self.configure():
            raise ConfigError("Unable to update TLS configuration. Check server logs.")

    def server_context(self):
        return self.servers[self.server.config["tls-auth-clients"]]

    def bus_context(self):
        """The cluster bus listener's: client certificates required."""
        return self.servers["yes"]

    def client_context(self):
        return self.client


class TlsListener(Acceptor):
    """The tls-port's listening sockets (acceptTLSHandler): each accepted
    connection is admitted (maxclients), then handed to the event loop's
    SSL transport with the context of the moment (connect_accepted_socket,
    the handshake first); ``make_client()`` is the Client it then serves.
    Accepts from the start unless ``start`` is false."""

    def __init__(self, server, socks, make_client, context=None, admit=True, start=True):
        self.context = context or server.tls.server_context    # the context of the moment
        self.admit = admit            # client connections count against maxclients
        super().__init__(server, socks, make_client, start)

    def accepted(self, conn):
        srv = self.server
        if self.admit and not srv.admit(conn):
            return
        srv.loop.create_task(self._handshake(conn))

    async def _handshake(self, conn):
        srv = self.server
        ctx = self.context()
        fd = conn.fileno()
        try:
            await srv.loop.connect_accepted_socket(self.make_client, conn, ssl=ctx,
                                                   ssl_handshake_timeout=srv.config["timeout"] or 60)
        except ssl.SSLError as e:
            if e.reason == "WRONG_VERSION_NUMBER":
                log.warning("Error accepting a client connection: %s (conn: fd=%d)" % (error_string(e), fd))
            else:
                log.warning("Error accepting a client connection: %s" % error_string(e))
            conn.close()
        except (OSError, asyncio.TimeoutError, RuntimeError) as e:
            log.verbose("Error accepting a client connection: %s" % (getattr(e, "strerror", None) or e))
            conn.close()
