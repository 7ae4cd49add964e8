"""The compiled list value (net/_speedups.pyx's QuickList) against its pure
twin (types.containers.PyListValue, a deque): random sequences of the
operations the server uses give the same results, the same exceptions and
the same contents.  Elements straddle the entry encodings (under and over
128 bytes) and the 8 KB node size, so pushes, inserts and deletes split,
grow, re-centre and drop nodes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ophidis.commands import lists
from ophidis import compiled
from ophidis.types import containers
from ophidis.persistence.listpack import lp_entry, lp_entry_size
from ophidis.types.containers import PyListValue

native = compiled.load("types._quicklist")
pytestmark = pytest.mark.skipif(native is None, reason="the compiled module is not built (or OPHIDIS_PURE=1)")


def test_list_value_is_the_compiled_class():
    assert containers.ListValue is native.QuickList
    v = containers.ListValue([b"a"])
    # a new list is a listpack (Redis 7.2+; the commands move the encoding)
    assert v.quick is False and v.__class__ is containers.ListValue


_sizes = st.sampled_from([0, 1, 3, 14, 127, 128, 129, 300, 4000, 8190, 9000])
# (integer-looking ones too: their listpack entries are integers, lpb)
elements = st.one_of(
    st.builds(lambda c, n: bytes([c]) * n, st.sampled_from([97, 98, 0, 255]), _sizes),
    st.sampled_from([b"0", b"7", b"127", b"128", b"-1", b"-4096", b"4095", b"32767", b"-32769",
                     b"8388607", b"2147483648", b"9223372036854775807", b"-9223372036854775808",
                     b"9223372036854775808", b"01", b"-0", b"+1", b"1" * 20, b"1" * 21]))
idx = st.integers(-40, 40)

ops = st.one_of(
    st.tuples(st.just("append"), elements),
    st.tuples(st.just("appendleft"), elements),
    st.tuples(st.just("extend"), st.lists(elements, max_size=30)),
    st.tuples(st.just("extendleft"), st.lists(elements, max_size=30)),
    st.tuples(st.just("pop")),
    st.tuples(st.just("popleft")),
    st.tuples(st.just("popn"), st.integers(0, 40), st.booleans()),
    st.tuples(st.just("getitem"), idx),
    st.tuples(st.just("setitem"), idx, elements),
    st.tuples(st.just("delitem"), idx),
    st.tuples(st.just("insert"), idx, elements),
    st.tuples(st.just("remove"), elements),
    st.tuples(st.just("index"), elements),
    st.tuples(st.just("count"), elements),
    st.tuples(st.just("contains"), elements),
    st.tuples(st.just("rotate"), st.integers(-5, 5)),
    st.tuples(st.just("range"), idx, idx),
    st.tuples(st.just("iter")),
    st.tuples(st.just("reversed")),
    st.tuples(st.just("copy")),
    st.tuples(st.just("clear")),
)


def _apply(v, op):
    name = op[0]
    if name == "getitem":
        return v[op[1]]
    if name == "setitem":
        v[op[1]] = op[2]
        return None
    if name == "delitem":
        del v[op[1]]
        return None
    if name == "contains":
        return op[1] in v
    if name == "range":
        return v.range(op[1], op[2])
    if name == "iter":
        return list(v)
    if name == "reversed":
        return list(reversed(v))
    if name == "copy":
        c = v.copy()
        assert c.__class__ is v.__class__ and c.quick == v.quick
        return list(c)
    return getattr(v, name)(*op[1:])


def _outcome(v, op):
    try:
        return ("ok", _apply(v, op))
    except (IndexError, ValueError) as e:
        return ("error", type(e))


@settings(max_examples=300, deadline=None)
@given(st.lists(elements, max_size=60), st.lists(ops, max_size=60))
def test_compiled_list_matches_deque_twin(initial, seq):
    q = native.QuickList(initial)
    d = PyListValue(initial)
    for op in seq:
        assert _outcome(q, op) == _outcome(d, op), op
        assert len(q) == len(d)
        assert bool(q) == bool(d)
        assert q.lpb == d.lpb, op
    assert list(q) == list(d)
    assert q.lpb == sum(map(lp_entry_size, d))
    assert list(reversed(q)) == list(reversed(d))
    for s in range(-3, 3):
        for e in range(-3, 3):
            assert q.bulk_range(s, e) == lists._py_range_reply(d, s, e)
    assert q.bulk_range(0, -1) == lists._py_range_reply(d, 0, -1)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from([b"x", b"yy" * 70, b"z" * 5000]), min_size=500, max_size=3000),
       st.lists(st.tuples(st.integers(-4000, 4000), st.integers(-4000, 4000)), max_size=20))
def test_ranges_of_many_nodes(items, spans):
    """LRANGE's reply and range() over lists of many nodes, from both ends."""
    q = native.QuickList()
    d = PyListValue()
    for i, x in enumerate(items):
        (q.append if i % 3 else q.appendleft)(x)
        (d.append if i % 3 else d.appendleft)(x)
    for s, e in spans:
        assert q.range(s, e) == d.range(s, e)
        assert q.bulk_range(s, e) == lists._py_range_reply(d, s, e)
    assert q.index(b"z" * 5000) == d.index(b"z" * 5000) if b"z" * 5000 in d else True


def test_mutation_during_iteration_raises_as_deque_does():
    for cls in (native.QuickList, PyListValue):
        v = cls([b"a", b"b", b"c"])
        it = iter(v)
        next(it)
        v.append(b"d")
        with pytest.raises(RuntimeError):
            next(it)


def test_elements_read_out_are_new_bytes_and_other_buffers_are_taken():
    v = native.QuickList([bytearray(b"ab"), memoryview(b"cd"), b"ef"])
    assert list(v) == [b"ab", b"cd", b"ef"]
    assert all(type(x) is bytes for x in v)
    with pytest.raises(TypeError):
        v.append(7)
    assert list(v) == [b"ab", b"cd", b"ef"]


def test_equality_and_sizes():
    a = native.QuickList([b"x"] * 1000)
    b = a.copy()
    assert a == b and not (a != b)
    b[500] = b"y"
    assert a != b
    # about 3 bytes an element packed (1-byte element, 1-byte length each side)
    assert 3000 <= a.nbytes() < 3000 + 2048


@given(st.one_of(elements, st.binary(max_size=30), st.integers(-(1 << 64), 1 << 64).map(lambda i: b"%d" % i)))
def test_listpack_entry_sizes(x):
    """lp_entry_size (the pure twin of the compiled _lp_entry_size, which lpb
    sums) is the length of the entry lp_entry writes."""
    assert lp_entry_size(x) == len(lp_entry(x))
    assert native.QuickList([x]).lpb == len(lp_entry(x)) == PyListValue([x]).lpb


def test_listpack_entry_sizes_at_the_backlen_boundaries():
    for n in (62, 63, 64, 125, 126, 127, 4093, 4094, 4095, 4096, 16377, 16378, 16379):
        x = b"s" * n
        assert lp_entry_size(x) == len(lp_entry(x)) == native.QuickList([x]).lpb
