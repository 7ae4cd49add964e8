"""The suite tests the install it means to: the compiled request loop or the
pure one (OPHIDIS_PURE=1, or an install without a compiler), this checkout's
src/ (`make test`) or an installed wheel or sdist (`make test-pythons` sets
OPHIDIS_TEST_EXPECT and runs with ``-o pythonpath=tests``)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig

from support.servers import ROOT, SRC, server_env

import ophidis
from ophidis import compiled


def _expected() -> str:
    expect = os.environ.get("OPHIDIS_TEST_EXPECT")
    if expect:
        return expect
    if os.environ.get("OPHIDIS_PURE") == "1" or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return "pure"
    return "compiled"


def test_install_is_the_expected_one():
    expect = _expected()
    assert expect in ("compiled", "pure")
    assert (compiled.enabled()) == (expect == "compiled")
    # the servers the tests start run the same package, the same way
    out = subprocess.run([sys.executable, "-c", "import ophidis, sys; from ophidis import compiled; "
                          "print(ophidis.__file__); print(compiled.enabled())"],
                         env=server_env(), capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert out == [ophidis.__file__, str(expect == "compiled")]
    assert ophidis.__file__.startswith(SRC + os.sep)
    checkout = os.path.join(ROOT, "src")
    if os.environ.get("OPHIDIS_TEST_EXPECT"):
        assert SRC != checkout          # an install, not the checkout
    else:
        assert SRC == checkout
