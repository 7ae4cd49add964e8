"""What Python's ``ssl`` has no API for, through the OpenSSL that ``_ssl``
is linked with: TLS 1.3 ciphersuites (SSL_CTX_set_ciphersuites), the
server session cache's mode, size and timeout, and OpenSSL's error codes
(``error_code``: the numbers in Redis's "error:0A00010B:SSL routines::..."
log lines, which the ``ssl`` module's errors carry only as names).  Only
OpenSSL's public functions are called; nothing of ``_ssl`` but the file
its libraries are reached through.  Imports nothing of the project (the
tools use it too)."""

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


# OpenSSL 3's ERR_LIB_* numbers (err.h: public, stable) by the library
# names an ssl.SSLError carries, with ERR_lib_error_string's text
LIBRARIES = {
    "SYS": (2, "system library"), "BN": (3, "bignum routines"), "RSA": (4, "rsa routines"),
    "DH": (5, "Diffie-Hellman routines"), "EVP": (6, "digital envelope routines"),
    "BUF": (7, "memory buffer routines"), "OBJ": (8, "object identifier routines"),
    "PEM": (9, "PEM routines"), "DSA": (10, "dsa routines"), "X509": (11, "x509 certificate routines"),
    "ASN1": (13, "asn1 encoding routines"), "CONF": (14, "configuration file routines"),
    "CRYPTO": (15, "common libcrypto routines"), "EC": (16, "elliptic curve routines"),
    "SSL": (20, "SSL routines"), "BIO": (32, "BIO routines"), "PKCS7": (33, "PKCS7 routines"),
    "X509V3": (34, "X509 V3 routines"), "PKCS12": (35, "PKCS12 routines"),
    "RAND": (36, "random number generator"), "OSSL_STORE": (44, "STORE routines"),
    "PROV": (57, "Provider routines"), "OSSL_ENCODER": (59, "ENCODER routines"),
    "OSSL_DECODER": (60, "DECODER routines"),
}

# reason codes of the errors Redis's TLS paths meet most, for an OpenSSL
# whose error tables cannot be read (error_code's fallback)
_KNOWN_REASONS = {
    (20, "wrong version number"): 267, (20, "peer did not return a certificate"): 199,
    (20, "http request"): 156, (20, "no shared cipher"): 193, (20, "unsupported protocol"): 258,
    (20, "certificate verify failed"): 134, (20, "tlsv1 alert unknown ca"): 1048,
    (20, "sslv3 alert bad certificate"): 1042, (20, "ca md too weak"): 398,
    (11, "key values mismatch"): 116, (9, "no start line"): 108, (20, "ca key too small"): 397,
}


class _ErrorTables:
    """ERR_lib_error_string / ERR_reason_error_string of the libcrypto
    that _ssl is linked with, read once per library into text -> reason
    code (OpenSSL 3 packs an error as library << 23 | reason)."""

    def __init__(self):
        self.ok = False
        self._reasons = {}
        if ssl.OPENSSL_VERSION_INFO < (3,):
            return
        try:
            lib = ctypes.CDLL(_ssl.__file__)
            self.reason_string = lib.ERR_reason_error_string
            self.lib_string = lib.ERR_lib_error_string
        except (OSError, AttributeError):
            return
        for f in (self.reason_string, self.lib_string):
            f.restype = ctypes.c_char_p
            f.argtypes = [ctypes.c_ulong]
        # libssl loads its error strings with its first SSL_CTX
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        # the table is the right one when it names the SSL library as we do
        self.ok = self.lib_string(20 << 23) == b"SSL routines"

    def reason_code(self, lib: int, text: str) -> int:
        table = self._reasons.get(lib)
        if table is None:
            table = {}
            for r in range(1, 4096):
                s = self.reason_string((lib << 23) | r)
                if s:
                    table.setdefault(s.decode("latin-1"), r)
            self._reasons[lib] = table
        return table.get(text, 0)


_errors = None


def error_tables():
    global _errors
    if _errors is None:
        _errors = _ErrorTables()
    return _errors


def error_code(library: str, reason_text: str, tables=None) -> tuple:
    """(packed code, library text) of an OpenSSL error given as an
    ssl.SSLError gives it (its ``library`` and its message's reason text,
    "wrong version number"): from OpenSSL's own tables when they can be
    read, else from the known codes (0 for the reason of an unknown one)."""
    lib, lib_text = LIBRARIES.get(library, (0, library))
    t = error_tables() if tables is None else tables
    if t.ok and lib:
        reason = t.reason_code(lib, reason_text)
    else:
        reason = _KNOWN_REASONS.get((lib, reason_text), 0)
    return (lib << 23) | reason, lib_text
