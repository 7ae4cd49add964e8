"""The compiled layer's layout (src/ophidis/compiled.py): one declaration per
field list, read by both twins, and one decision, compiled or pure.

A field list is declared once, in a .pxd: the compiled class is built from
it and the pure twin takes its slots from it (compiled.fields).  These tests
fail when the two disagree: a field added to a .pxd and not seen by the
parser, a pure twin that does not take its slots from the declaration, a
compiled class built from another declaration."""

import os

import pytest

from ophidis import compiled
from ophidis.cmdtable.registry import _CommandCore
from ophidis.keyspace import db
from ophidis.net import client
from ophidis.scripting import engine
from ophidis.server import server
from ophidis.types import containers

# (the .pxd, the class, the compiled module, the pure twin's slots or None)
DECLARED = [
    ("net/_core.pxd", "ClientCore", "net._core", client._ClientCore.__slots__),
    ("server/_core.pxd", "ServerCore", "server._core", None),
    ("keyspace/_core.pxd", "StatsCore", "keyspace._core", None),
    ("keyspace/_core.pxd", "DbCore", "keyspace._core", None),
    ("cmdtable/_core.pxd", "CommandCore", "cmdtable._core", _CommandCore.__slots__),
    ("types/_containers.pxd", "SetCore", "types._containers", None),
    ("types/_containers.pxd", "HashCore", "types._containers", None),
    ("scripting/_bridge.pxd", "EngineCore", "scripting._bridge", None),
    ("scripting/_bridge.pxd", "ScriptCore", "scripting._bridge", None),
    ("scripting/_bridge.pxd", "FunctionCore", "scripting._bridge", None),
    ("scripting/_bridge.pxd", "RunCtx", "scripting._bridge", None),
]


def _descriptors(cls) -> set:
    # a cdef class's public C fields are getset descriptors of the class
    return {k for k, v in vars(cls).items() if type(v).__name__ == "getset_descriptor"}


@pytest.mark.parametrize("pxd,cls,mod,pure", DECLARED, ids=[d[1] for d in DECLARED])
def test_twins_have_one_field_list(pxd, cls, mod, pure):
    fields = compiled.fields(pxd, cls)
    assert fields and len(set(fields)) == len(fields)
    if pure is not None:
        assert tuple(pure) == fields
    m = compiled.load(mod)
    if m is not None:
        assert _descriptors(getattr(m, cls)) == set(fields)


def test_pure_twins_take_their_slots_from_the_declarations():
    """With the compiled layer, the classes derive from the C classes and add
    no slot of theirs; without, the slots are the declared fields."""
    pairs = [(db.Database, "keyspace/_core.pxd", "DbCore"),
             (containers.HashValue, "types/_containers.pxd", "HashCore"),
             (containers.SetValue, "types/_containers.pxd", "SetCore")]
    for cls, pxd, name in pairs:
        fields = set(compiled.fields(pxd, name))
        own = set(cls.__slots__)
        if compiled.enabled():
            assert not own & fields, cls
            assert _descriptors(cls.__mro__[1]) == fields or any(
                _descriptors(b) == fields for b in cls.__mro__), cls
        else:
            assert fields <= own | {s for b in cls.__mro__ for s in getattr(b, "__slots__", ())}, cls
    # the server: every declared C field is one of its declared fields
    assert set(compiled.fields("server/_core.pxd", "ServerCore")) <= set(server.FIELDS)
    ctx = engine.RunCtx(None, "x", True, False, False, [])
    for f in compiled.fields("scripting/_bridge.pxd", "RunCtx"):
        getattr(ctx, f)


def test_fields_reads_every_declaration_form(tmp_path, monkeypatch):
    """The parser of compiled.fields: several names a line, C types of
    several words, pointers, comments, methods (not fields), readonly."""
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "_t.pxd").write_text(
        "cdef class A:\n"
        "    cdef public object a, b   # two (with a comment: see (this))\n"
        "    cdef unsigned long long c\n"
        "    cdef _node *d\n"
        "    cdef readonly Py_ssize_t e, f\n"
        "    # cdef object not_a_field\n"
        "\n"
        "    cdef int method(self, Py_ssize_t i) except -1\n"
        "\n\n"
        "cdef class B:\n"
        "    cdef public bint g\n")
    monkeypatch.setattr(compiled, "ROOT", str(tmp_path))
    assert compiled.fields("x/_t.pxd", "A") == ("a", "b", "c", "d", "e", "f")
    assert compiled.fields("x/_t.pxd", "B") == ("g",)
    with pytest.raises(LookupError):
        compiled.fields("x/_t.pxd", "C")


def test_every_compiled_module_sits_beside_its_pure_twin():
    """A concept's compiled half is in the concept's folder, built from a
    .pyx there; the layer's sources are what its digest covers."""
    root = compiled.ROOT
    srcs = {os.path.relpath(p, root) for p in compiled.sources()}
    for name in compiled.MODULES:
        parts = name.split(".")
        pyx = os.path.join(*parts) + ".pyx"
        assert pyx in srcs, pyx
        folder = os.path.join(root, *parts[:-1])
        assert any(f.endswith(".py") and not f.startswith("_") or f == "__init__.py"
                   for f in os.listdir(folder)), folder


def test_one_decision_for_the_whole_layer():
    """Every compiled module runs, or none: the pure twins of one concept
    never meet the compiled twins of another."""
    mods = [compiled.load(n) for n in compiled.MODULES]
    if os.environ.get("OPHIDIS_PURE") == "1":
        assert not compiled.enabled() and mods == [None] * len(mods)
    else:
        assert all(m is None for m in mods) or all(m is not None for m in mods)
        assert all(m is None or m.SOURCE_HASH == compiled.source_hash() for m in mods)
