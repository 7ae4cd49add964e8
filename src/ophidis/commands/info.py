"""INFO: the server's sections as text (ophidis/info.py builds it)."""

from __future__ import annotations

from ..cmdtable.registry import command
from ..info import gen_info
from ..protocol.resp import verbatim


@command("info")
def info(c, argv):
    text = gen_info(c.server, argv[1:])
    return verbatim(c.resp, text.encode("utf-8", "replace"))
