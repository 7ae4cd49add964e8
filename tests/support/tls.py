"""Test certificates made with ``openssl`` (the layout of Redis's
utils/gen-test-certs.sh): a CA, a server-only certificate, a client-only
certificate and a generic one, each with its key, in one directory made
once per test session."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

OPENSSL = shutil.which("openssl")

# v3 extensions as X.509 strict verification wants them (Python 3.13's
# ssl.create_default_context, which redis-py uses, sets VERIFY_X509_STRICT):
# a CA with critical basicConstraints and keyUsage, leaves naming their
# issuer's key
_EXT = """[ ca_cert ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash

[ generic_cert ]
basicConstraints = CA:FALSE
keyUsage = digitalSignature, keyEncipherment
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
""" + "".join("""
[ %s_cert ]
basicConstraints = CA:FALSE
keyUsage = digitalSignature, keyEncipherment
nsCertType = %s
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
""" % (kind, kind) for kind in ("server", "client"))


def _run(*args, cwd):
    subprocess.run([OPENSSL, *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=60)


class Certs:
    """Paths of ca.crt, server.{crt,key}, client.{crt,key}, redis.{crt,key}
    in ``dir``; ``other_ca`` signs ``stranger.{crt,key}`` (a certificate
    our CA did not sign)."""

    def __init__(self, dir=None):
        self.dir = dir or tempfile.mkdtemp(prefix="ophidis-tls-")
        d = self.dir
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "openssl.cnf"), "w") as f:
            f.write(_EXT)
        for ca in ("ca", "other-ca"):
            _run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", ca + ".key", cwd=d)
            _run("req", "-x509", "-new", "-nodes", "-sha256", "-key", ca + ".key", "-days", "3650",
                 "-subj", "/O=Ophidis Test/CN=Certificate Authority " + ca, "-config", "openssl.cnf",
                 "-extensions", "ca_cert", "-out", ca + ".crt", cwd=d)
        self._cert("server", "Server-only", "ca", "server_cert")
        self._cert("client", "Client-only", "ca", "client_cert")
        self._cert("redis", "Generic-cert", "ca", "generic_cert")
        self._cert("stranger", "Stranger", "other-ca", "generic_cert")

    def client_cert(self, name, cn):
        """A client certificate ``name``.{crt,key} of our CA whose Common
        Name is ``cn`` (tls-auth-clients-user CN)."""
        self._cert(name, cn, "ca", "client_cert")

    def _cert(self, name, cn, ca, ext):
        d = self.dir
        _run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", name + ".key", cwd=d)
        _run("req", "-new", "-sha256", "-subj", "/O=Ophidis Test/CN=" + cn, "-key", name + ".key",
             "-out", name + ".csr", cwd=d)
        _run("x509", "-req", "-sha256", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
             "-CAcreateserial", "-days", "365", "-out", name + ".crt", "-extfile", "openssl.cnf",
             "-extensions", ext, cwd=d)

    def path(self, name) -> str:
        return os.path.join(self.dir, name)

    def server_args(self, cert="redis") -> list:
        """The tls-* arguments of a server using ``cert``."""
        return ["--tls-cert-file", self.path(cert + ".crt"), "--tls-key-file", self.path(cert + ".key"),
                "--tls-ca-cert-file", self.path("ca.crt")]

    def cli_args(self, cert="client") -> list:
        """redis-cli's TLS options with ``cert`` as the client certificate."""
        return ["--tls", "--cert", self.path(cert + ".crt"), "--key", self.path(cert + ".key"),
                "--cacert", self.path("ca.crt")]

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
