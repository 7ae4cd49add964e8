"""The compiled set (types/_containers.pyx's SetCore, the base of
types.containers.SetValue in compiled installs: NOT a set subclass, its
members, bytes, in its own table) against its twins: random sequences of
the set operations the server uses give the same results and exceptions as
on a plain set (the pure SetValue is a set subclass), and iterate in the
order of a dict of the members (the table is dict's layout: insertion
order, a deleted member re-added goes last, pop takes the last).  Whatever
CPython's set algebra could do with it either works through iteration
(set(s), set().union(s), frozenset(s), set.intersection(x, s)) or raises
TypeError (s & x, x | s, s <= x): never a silent wrong answer."""

from __future__ import annotations

import copy
import pickle
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ophidis import compiled
from ophidis.types import containers

native = compiled.load("types._containers")
pytestmark = pytest.mark.skipif(native is None, reason="the compiled module is not built (or OPHIDIS_PURE=1)")

_members = st.one_of(st.sampled_from([b"", b"a", b"member:1", b"member:2", b"\x00\xff", b"m" * 300, b"1", b"-7"]),
                     st.binary(max_size=2))
_others = st.one_of(_members, st.sampled_from([7, "member:1", None, (b"a",), 1.0]))
# the other operand of update/intersection/...: how it is given
_shapes = st.sampled_from(["list", "set", "frozenset", "core", "gen", "self", "dict"])

ops = st.one_of(
    st.tuples(st.just("add"), _members),
    st.tuples(st.just("add"), _members),
    st.tuples(st.just("discard"), _others),
    st.tuples(st.just("remove"), _others),
    st.tuples(st.just("pop")),
    st.tuples(st.just("clear")),
    st.tuples(st.just("contains"), _others),
    st.tuples(st.just("update"), st.lists(st.tuples(_shapes, st.lists(_members, max_size=6)), max_size=3)),
    st.tuples(st.just("difference_update"), st.lists(st.tuples(_shapes, st.lists(_members, max_size=6)),
                                                     max_size=3)),
    st.tuples(st.just("intersection"), st.lists(st.tuples(_shapes, st.lists(_members, max_size=6)), max_size=3)),
    st.tuples(st.just("union"), st.lists(st.tuples(_shapes, st.lists(_members, max_size=6)), max_size=3)),
    st.tuples(st.just("difference"), st.lists(st.tuples(_shapes, st.lists(_members, max_size=6)), max_size=3)),
    st.tuples(st.just("eq"), st.lists(_members, max_size=6)),
    st.tuples(st.just("copy")),
    st.tuples(st.just("many"), st.integers(0, 3000)),
)


def _operand(s, shape, items, make):
    if shape == "self":
        return s
    if shape == "set":
        return set(items)
    if shape == "frozenset":
        return frozenset(items)
    if shape == "core":
        return make(items)
    if shape == "gen":
        return (m for m in items)
    if shape == "dict":
        return dict.fromkeys(items)
    return list(items)


def _apply(s, op, make):
    name = op[0]
    if name == "add":
        return s.add(op[1])
    if name == "discard":
        return s.discard(op[1])
    if name == "remove":
        return s.remove(op[1])
    if name == "pop":
        return s.pop()
    if name == "clear":
        return s.clear()
    if name == "contains":
        return op[1] in s
    if name in ("update", "difference_update", "intersection", "union", "difference"):
        args = [_operand(s, shape, items, make) for shape, items in op[1]]
        r = getattr(s, name)(*args)
        if r is not None:
            assert type(r) is set
            return sorted(r)
        return None
    if name == "eq":
        t = set(op[1])
        return (s == t, t == s, s != t, s == make(op[1]), s == s)
    if name == "copy":
        c = s.copy()
        assert type(c) is type(s) and c == s and c is not s
        return sorted(c)
    if name == "many":
        for i in range(op[1]):
            s.add(b"k%d" % i)
        for i in range(0, op[1], 2):
            s.discard(b"k%d" % i)
        return None
    raise AssertionError(op)


def _outcome(s, op, make):
    try:
        r = _apply(s, op, make)
    except (KeyError, TypeError) as e:
        return ("error", type(e), e.args if type(e) is KeyError and op[0] != "pop" else None)
    return ("ok", r)


def _model(d, op):
    """The dict of the members in order, after op (as the table keeps them)."""
    name = op[0]
    if name == "add":
        d.setdefault(op[1])
    elif name in ("discard", "remove") and isinstance(op[1], bytes):
        d.pop(op[1], None)
    elif name == "clear":
        d.clear()
    elif name == "many":
        for i in range(op[1]):
            d.setdefault(b"k%d" % i)
        for i in range(0, op[1], 2):
            d.pop(b"k%d" % i, None)
    elif name == "update":
        for shape, items in op[1]:
            for m in list(_operand(d, shape, items, dict.fromkeys)):
                d.setdefault(m)
    elif name == "difference_update":
        for shape, items in op[1]:
            for m in list(_operand(d, shape, items, dict.fromkeys)):
                d.pop(m, None)


@settings(max_examples=400, deadline=None)
@given(st.lists(_members, max_size=20), st.lists(ops, max_size=50))
def test_compiled_set_matches_its_twins(initial, seq):
    s = containers.SetValue(initial)
    t = set(initial)
    d = dict.fromkeys(initial)
    assert isinstance(s, native.SetCore) and not isinstance(s, (set, frozenset))
    for op in seq:
        if op[0] == "pop":
            if not d:
                assert _outcome(s, op, containers.SetValue) == _outcome(t, op, set)
                continue
            # an arbitrary member in both: the table's last, as dict.popitem
            m = s.pop()
            assert m == d.popitem()[0]
            t.remove(m)
        else:
            assert _outcome(s, op, containers.SetValue) == _outcome(t, op, set), op
            _model(d, op)
        assert len(s) == len(t) == len(d)
        assert bool(s) == bool(t)
        assert list(s) == list(d)
    assert s == t and t == s and not (s != t)
    assert set(s) == t and frozenset(s) == t and set().union(s) == t
    assert set.intersection(t, s) == t and set.difference(t, s) == set()
    assert {*s} == t and sorted(s) == sorted(t)
    assert all(type(m) is bytes for m in s)


def test_set_value_uses_the_compiled_set():
    assert containers.SetValue.__mro__[1] is native.SetCore
    s = containers.SetValue([b"b", b"a"])
    assert s.enc == b"intset" and s._aux is None
    s.enc = b"hashtable"
    c = s.copy()
    assert type(c) is containers.SetValue and c == s and c.enc == b"hashtable"
    c.add(b"z")
    assert b"z" not in s


def test_set_algebra_never_answers_wrong():
    """CPython's set operations read a set subclass's own storage: SetCore
    is no set, so each of them either iterates it (right) or refuses it."""
    s = containers.SetValue([b"a", b"b", b"c"])
    p = {b"b", b"c", b"d"}
    for bad in (lambda: s & p, lambda: p & s, lambda: s | p, lambda: p | s, lambda: s - p, lambda: p - s,
                lambda: s ^ p, lambda: p ^ s, lambda: s <= p, lambda: p <= s, lambda: s < p, lambda: s >= p,
                lambda: hash(s), lambda: {s}):
        with pytest.raises(TypeError):
            bad()
    assert s.intersection(p) == {b"b", b"c"} and p.intersection(s) == {b"b", b"c"}
    assert set.intersection(p, s, [b"c"]) == {b"c"}
    assert s.union(p) == p.union(s) == {b"a", b"b", b"c", b"d"}
    assert s.difference(p) == {b"a"} and p.difference(s) == {b"d"}
    assert p.issubset(set(s) | p) and p.isdisjoint(containers.SetValue([b"x"]))
    assert not p.isdisjoint(s) and set(s).issubset(s) and p.issuperset(containers.SetValue([b"d"]))
    q = set(p)
    q.update(s)
    assert q == {b"a", b"b", b"c", b"d"}
    q.difference_update(s)
    assert q == {b"d"}
    q = set(p)
    q.intersection_update(s)
    assert q == {b"b", b"c"}
    assert s == {b"a", b"b", b"c"} and {b"a", b"b", b"c"} == s and frozenset([b"a", b"b", b"c"]) == s
    assert s != p and p != s and s != [b"a", b"b", b"c"] and s != containers.SetValue([b"a"])


def test_storage_is_the_table():
    s = native.SetCore()
    members = [b"member:%d" % i for i in range(1000)]
    for m in members:
        s.add(m)
    # the members are the very objects stored, in insertion order
    assert all(a is b for a, b in zip(s, members))
    # 2048 4-byte slots for 1000 members, room for 1365 pointers
    assert sys.getsizeof(s) == sys.getsizeof(native.SetCore()) + 2048 * 4 + 1365 * 8
    # members are bytes: a subclass is stored as bytes, anything else refused
    class B(bytes):
        pass
    s.add(B(b"sub"))
    assert type([m for m in s if m == b"sub"][0]) is bytes and B(b"sub") in s
    for bad in ("str", 1, None, (b"a",)):
        with pytest.raises(TypeError):
            s.add(bad)
        with pytest.raises(TypeError):
            s.update([bad])
        assert bad not in s
        s.discard(bad)
    with pytest.raises(TypeError):
        [] in s
    assert len(s) == 1001


def test_growth_deletes_and_reinserts_keep_dict_order():
    s, d = native.SetCore(), {}
    for i in range(5000):
        s.add(b"f%d" % i)
        d[b"f%d" % i] = None
    for i in range(0, 5000, 3):
        s.remove(b"f%d" % i)
        del d[b"f%d" % i]
    for i in range(0, 5000, 7):
        s.add(b"f%d" % i)
        d.setdefault(b"f%d" % i)
    for _ in range(100):
        assert s.pop() == d.popitem()[0]
    assert list(s) == list(d) and len(s) == len(d)
    for m in list(d):
        s.remove(m)
    assert len(s) == 0 and list(s) == [] and not s
    with pytest.raises(KeyError):
        s.pop()
    with pytest.raises(KeyError):
        s.remove(b"x")
    s.add(b"a")
    assert list(s) == [b"a"]


def test_iteration_while_modifying_is_a_sets():
    for make in (native.SetCore, set):
        for change in (lambda s: s.add(b"new"), lambda s: s.discard(b"f3"), lambda s: s.pop(), lambda s: s.clear(),
                       lambda s: s.update([b"x", b"y"])):
            s = make([b"f%d" % i for i in range(50)])
            it = iter(s)
            next(it)
            change(s)
            with pytest.raises(RuntimeError):
                next(it)
        s = make([b"a", b"b"])
        s.update(s)
        s.difference_update(s)
        assert len(s) == 0


def test_copies_and_pickles():
    big = containers.SetValue([b"m%d" % i for i in range(3000)])
    big.enc = b"hashtable"
    for c in (copy.copy(big), copy.deepcopy(big), pickle.loads(pickle.dumps(big)), big.copy()):
        assert type(c) is containers.SetValue and c == big and list(c) == list(big) and c.enc == b"hashtable"
        c.discard(b"m1")
        assert b"m1" in big


def test_rdb_round_trip():
    from ophidis.persistence import rdbpayload
    for n, enc, fmt in ((300, b"hashtable", b"m%d"), (5, b"intset", b"%d")):
        s = containers.SetValue([fmt % (i * 7 - 9) for i in range(n)])
        s.enc = enc
        back = rdbpayload.load_payload(rdbpayload.dump_payload(s))
        assert type(back) is containers.SetValue and back == s and back.enc == enc
