"""What Python's ``ssl`` has no API for, through the OpenSSL that ``_ssl``
is linked with: TLS 1.3 ciphersuites (SSL_CTX_set_ciphersuites) and the
server session cache's mode, size and timeout.  Imports nothing of the
project (the tools use it too)."""

from __future__ import annotations

import _ssl
import ctypes
import ssl
import sys


class _Native:
    """SSL_CTX functions of the libssl that _ssl is linked with, on the
    SSL_CTX of an SSLContext (CPython's PySSLContext keeps it right after
    the object header; ``ok`` says whether that was verified)."""

    def __init__(self):
        self.ok = False
        try:
            lib = ctypes.CDLL(_ssl.__file__)
            self.get_options = lib.SSL_CTX_get_options
            self.get_options.restype = ctypes.c_uint64
            self.get_options.argtypes = [ctypes.c_void_p]
            self.set_ciphersuites = lib.SSL_CTX_set_ciphersuites
            self.set_ciphersuites.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
            self.ctrl = lib.SSL_CTX_ctrl
            self.ctrl.restype = ctypes.c_long
            self.ctrl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
            self.set_timeout = lib.SSL_CTX_set_timeout
            self.set_timeout.restype = ctypes.c_long
            self.set_timeout.argtypes = [ctypes.c_void_p, ctypes.c_long]
            self.set_sid_ctx = lib.SSL_CTX_set_session_id_context
            self.set_sid_ctx.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint]
        except (OSError, AttributeError):
            return
        probe = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        probe.options |= ssl.OP_NO_TICKET
        p = self.pointer(probe)
        self.ok = p is not None and self.get_options(p) == int(probe.options)

    @staticmethod
    def pointer(ctx):
        if sys.implementation.name != "cpython":
            return None
        p = ctypes.c_void_p.from_address(id(ctx) + object.__basicsize__).value
        return p or None


_native = None


def native():
    global _native
    if _native is None:
        _native = _Native()
    return _native


def set_ciphersuites(ctx, suites: str) -> bool:
    """SSL_CTX_set_ciphersuites on ``ctx``; False when refused (or when
    the SSL_CTX cannot be reached)."""
    n = native()
    p = n.pointer(ctx) if n.ok else None
    return p is not None and bool(n.set_ciphersuites(p, suites.encode()))
