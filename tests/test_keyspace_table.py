"""The compiled keyspace table (keyspace/_keyspace.pyx's Keyspace: a
database's key -> value map with each key's bytes in its entry) against
its pure twin, a plain dict of bytes -> value: random sequences of dict
operations give the same results, the same exceptions and the same
contents, in the same order."""

from __future__ import annotations

import copy
import pickle
import sys
from collections.abc import MutableMapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.mapping_model import check_iteration_while_modifying, check_twin, mapping_ops

from ophidis import compiled

native = compiled.load("keyspace._keyspace")
pytestmark = pytest.mark.skipif(native is None, reason="the compiled module is not built (or OPHIDIS_PURE=1)")

_keys = st.one_of(st.sampled_from([b"", b"a", b"key:000000000001", b"key:000000000002", b"\x00\xff", b"k" * 300,
                                   b"x" * 5000]),
                  st.binary(max_size=3))
_values = st.one_of(st.sampled_from([b"", b"xxx", b"v" * 100]), st.binary(max_size=4),
                    st.integers(-3, 3), st.lists(st.binary(max_size=2), max_size=2).map(tuple))
# lookups and deletions also see keys of other types (never found)
_others = st.one_of(_keys, st.sampled_from([7, "a", "key:000000000001", None, (b"a",), 1.0, bytearray(b"a")]))

ops = mapping_ops(_keys, _values, _others)


def _fill(i):
    # the value of the i-th key of the "many" run
    return b"v%d" % (i % 30)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=20), st.lists(ops, max_size=60))
def test_compiled_map_matches_dict_twin(initial, seq):
    h = check_twin(native.Keyspace, initial, seq, _fill)
    assert all(type(k) is bytes for k in h)


def test_keys_are_copied_into_the_entries():
    h = native.Keyspace()
    keys = [b"key:%012d" % i for i in range(1000)]
    vals = [b"v%d" % i for i in range(1000)]
    for k, v in zip(keys, vals):
        h[k] = v
    # iteration makes new key objects, equal to the stored ones; the values
    # are the very objects stored
    assert list(h) == keys and not any(a is b for a, b in zip(h, keys))
    assert all(a is b for a, b in zip(h.values(), vals))
    assert all(h[k] is v for k, v in zip(keys, vals))
    # the table's size: its index (2048 4-byte slots for 1000 keys), room
    # for 1365 entry pointers, and a 16-byte header + the key in each entry
    empty = sys.getsizeof(native.Keyspace())
    assert sys.getsizeof(h) == empty - 8 * 4 - 5 * 8 + 2048 * 4 + 1365 * 8 + 1000 * (16 + 16)
    assert isinstance(h, MutableMapping) and not isinstance(h, dict)


def test_errors_are_dicts():
    for make in (native.Keyspace, dict):
        h = make({b"a": 1})
        with pytest.raises(KeyError) as e:
            h[b"b"]
        assert e.value.args == (b"b",)
        with pytest.raises(KeyError):
            del h["a"]
        with pytest.raises(TypeError):
            h[[1]]
        with pytest.raises(TypeError):
            [1] in h
        with pytest.raises(TypeError):
            h.get({})
        assert h.get("a") is None and "a" not in h and h.pop(7, 0) == 0
        with pytest.raises(KeyError) as e:
            make().popitem()
        assert e.value.args == ("popitem(): dictionary is empty",)
        with pytest.raises(ValueError):
            make().update([(b"a", 1, 2)])
        with pytest.raises(TypeError):
            hash(h)
    # the server's keys are bytes: nothing else is stored
    h = native.Keyspace()
    for bad in ("a", 7, None, bytearray(b"a"), memoryview(b"a")):
        with pytest.raises(TypeError):
            h[bad] = 1
        with pytest.raises(TypeError):
            h.setdefault(bad, 1)
    assert len(h) == 0


def test_growth_deletes_and_reinserts_keep_dict_order():
    h, d = native.Keyspace(), {}
    for i in range(20000):
        h[b"f%d" % i] = d[b"f%d" % i] = i
    for i in range(0, 20000, 3):
        del h[b"f%d" % i]
        del d[b"f%d" % i]
    for i in range(0, 20000, 7):
        h[b"f%d" % i] = d[b"f%d" % i] = -i
    for _ in range(100):
        assert h.popitem() == d.popitem()
    for i in range(20000, 30000):
        h[b"f%d" % i] = d[b"f%d" % i] = i
    assert list(h.items()) == list(d.items()) and len(h) == len(d)
    for k in list(d):
        assert h.pop(k) == d.pop(k)
    assert len(h) == 0 and list(h) == [] and not h
    h[b"a"] = 1
    assert list(h.items()) == [(b"a", 1)]
    # a churn of adds and deletes at a constant size: the holes are packed
    # away, the order stays
    h, d = native.Keyspace(), {}
    for i in range(10000):
        k = b"c%d" % i
        h[k] = d[k] = i
        if i >= 50:
            old = b"c%d" % (i - 50)
            del h[old]
            del d[old]
    assert list(h.items()) == list(d.items()) and h.slots() <= 170


def test_big_and_empty_keys():
    h = native.Keyspace()
    big = b"\x00k" * 600000
    h[big] = b"big"
    h[b""] = b"empty"
    h[big[:-1]] = b"shorter"
    assert h[big] == b"big" and h[b""] == b"empty" and h[big[:-1]] == b"shorter"
    assert list(h) == [big, b"", big[:-1]]
    assert h.pop(big) == b"big" and big not in h and b"" in h


def test_iteration_while_modifying_is_a_dicts():
    for make in (native.Keyspace, dict):
        check_iteration_while_modifying(make, 1, 2)


def test_copies_pickles_and_operators():
    h = native.Keyspace({b"a": 1, b"b": 2})
    d = {b"b": 3, b"c": 4}
    assert h | d == {b"a": 1, b"b": 3, b"c": 4} and type(h | d) is native.Keyspace
    assert list((d | h).items()) == list((d | dict(h)).items())
    big = native.Keyspace({b"m%d" % i: i for i in range(3000)})
    for c in (copy.copy(big), copy.deepcopy(big), pickle.loads(pickle.dumps(big)), big.copy(), native.Keyspace(big),
              big.__class__(big)):
        assert type(c) is native.Keyspace and c == big and list(c.items()) == list(big.items())
        c[b"m1"] = -1
        assert big[b"m1"] == 1
    assert big != native.Keyspace({b"m%d" % i: i for i in range(2999)})
    assert big == {b"m%d" % i: i for i in range(3000)}
    bigger = dict(big)
    bigger[b"m5"] = 9
    assert big != bigger and not (big == native.Keyspace(bigger))
    assert type(big.__class__()) is native.Keyspace and not big.__class__()


def test_positions():
    h = native.Keyspace({b"k%d" % i: i for i in range(10)})
    assert h.slots() == 10 and [h.key_at(i) for i in range(10)] == list(h)
    assert h.key_at(-1) is None and h.key_at(10) is None
    del h[b"k3"]
    assert h.key_at(3) is None and h.slots() == 10
    got, pos = [], 0
    while True:
        pos, keys = h.scan(pos, 4)
        got += keys
        if pos == 0:
            break
    assert got == list(h)
    assert h.scan(0, 100) == (0, list(h)) and native.Keyspace().scan(0, 10) == (0, [])
    gen = h.generation
    for i in range(10, 100):
        h[b"k%d" % i] = i
    assert h.generation != gen and h.slots() == len(h)
