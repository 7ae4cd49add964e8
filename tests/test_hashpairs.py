"""The compiled hash value (types/_containers.pyx's HashCore: a dict
subclass keeping HashPair objects, a field and its value each, in its own
table) against its pure twin, a plain dict of bytes -> bytes: random
sequences of the dict operations the server uses give the same results,
the same exceptions and the same contents, in the same order.  Fields and values straddle the pairs' room (updates in
place, and updates that need a new pair), include the empty string,
binary bytes and values over 64 KB."""

from __future__ import annotations

import copy
import pickle
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.mapping_model import check_twin, mapping_ops

from ophidis import compiled
from ophidis.types import containers
from ophidis.types.containers import HashValue

native = compiled.load("types._containers")
pytestmark = pytest.mark.skipif(native is None, reason="the compiled module is not built (or OPHIDIS_PURE=1)")

_sizes = st.sampled_from([0, 1, 2, 7, 12, 13, 24, 25, 40, 100, 70000])
_fields = st.one_of(st.sampled_from([b"", b"a", b"field:1", b"field:2", b"\x00\xff", b"f" * 300]),
                    st.binary(max_size=3))
_values = st.one_of(st.builds(lambda c, n: bytes([c]) * n, st.sampled_from([118, 0, 255]), _sizes),
                    st.binary(max_size=20))
_others = st.one_of(_fields, st.sampled_from([7, "field:1", None, (b"a",)]))

ops = mapping_ops(_fields, _values, _others)


def _fill(i):
    # the value of the i-th key of the "many" run
    return b"x" * (i % 30)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_fields, _values, max_size=20), st.lists(ops, max_size=60))
def test_compiled_hash_matches_dict_twin(initial, seq):
    h = check_twin(HashValue, initial, seq, _fill)
    assert all(type(f) is bytes for f in h) and all(type(v) is bytes for v in h.values())


def test_hash_value_is_the_compiled_class():
    assert containers.HashValue.__mro__[1] is native.HashCore
    h = HashValue([(b"f", b"v")])
    assert h.ht is False and h._aux is None and h.__class__ is HashValue
    c = h.copy()
    assert c.__class__ is HashValue and c == h and c is not h


def test_storage_is_one_pair_per_field():
    h = HashValue()
    for i in range(1000):
        h[b"field:%d" % i] = b"value:%d" % i
    pairs = native.hash_pairs(h)
    assert all(type(p) is native.HashPair for p in pairs) and len(pairs) == 1000
    # the pairs live in HashCore's own table: the dict's storage is empty
    assert dict.__len__(h) == 0 and list(dict.keys(h)) == []
    # a 12-byte field and a 12-byte value: one 64-byte pymalloc block
    p = pairs[500]
    assert sys.getsizeof(p) == 64
    assert hash(p) == hash(b"field:500") and p == b"field:500" and not (p != b"field:500")
    assert p != b"field:501" and p != "field:500"
    # the table: 2048 4-byte slots for 1000 fields, room for 1365 pairs
    assert sys.getsizeof(h) == sys.getsizeof(HashValue()) + 2048 * 4 + 1365 * 8


def _pair(h, f):
    return next(p for p in native.hash_pairs(h) if p == f)


def test_updates_in_place_and_beyond_the_room():
    h = HashValue({b"f": b"1", b"g": b"2", b"h": b"3"})
    pid = id(_pair(h, b"g"))
    h[b"g"] = b"xy"              # fits the 16-byte rounded room: same object
    assert id(_pair(h, b"g")) == pid and h[b"g"] == b"xy"
    held = _pair(h, b"g")
    h[b"g"] = b"ab"              # a pair someone else holds is never written
    assert repr(held) == "HashPair(b'g', b'xy')" and h[b"g"] == b"ab"
    del held
    h[b"g"] = b"z" * 1000        # a new pair; the field keeps its position
    assert list(h.items()) == [(b"f", b"1"), (b"g", b"z" * 1000), (b"h", b"3")]
    h[b"g"] = b""
    h[b"g"] = b"w" * 500
    assert list(h.items()) == [(b"f", b"1"), (b"g", b"w" * 500), (b"h", b"3")]
    del h[b"g"]
    assert list(h) == [b"f", b"h"] and b"g" not in h
    h[b"g"] = b"4"               # back at the end, as in a dict
    assert list(h) == [b"f", b"h", b"g"]


def test_growth_deletes_and_reinserts_keep_dict_order():
    # many fields (the table grows several times), deletes (holes packed
    # away when it grows again), popitem, reinserted fields: the same
    # order and contents as a dict
    h, d = HashValue(), {}
    for i in range(5000):
        h[b"f%d" % i] = d[b"f%d" % i] = b"v%d" % i
    for i in range(0, 5000, 3):
        del h[b"f%d" % i]
        del d[b"f%d" % i]
    for i in range(0, 5000, 7):
        h[b"f%d" % i] = d[b"f%d" % i] = b"w%d" % i
    for _ in range(100):
        assert h.popitem() == d.popitem()
    for i in range(5000, 9000):
        h[b"f%d" % i] = d[b"f%d" % i] = b"x" * (i % 40)
    assert list(h.items()) == list(d.items()) and len(h) == len(d)
    for f in list(d):
        assert h.pop(f) == d.pop(f)
    assert len(h) == 0 and list(h) == [] and not h
    h[b"a"] = b"1"
    assert list(h.items()) == [(b"a", b"1")]


def test_iteration_while_modifying_is_a_dicts():
    for make in (HashValue, dict):
        # updating values while iterating: allowed, every field seen once
        h = make({b"f%d" % i: b"v" for i in range(50)})
        seen = []
        for f in h:
            h[f] = b"w" * 100
            seen.append(f)
        assert seen == [b"f%d" % i for i in range(50)] and set(h.values()) == {b"w" * 100}
        # adding or deleting: RuntimeError at the next step
        for change in (lambda h: h.__setitem__(b"new", b"1"), lambda h: h.__delitem__(b"f3"),
                       lambda h: h.pop(b"f4"), lambda h: h.popitem(), lambda h: h.clear()):
            for view in (None, "keys", "values", "items"):
                h = make({b"f%d" % i: b"v" for i in range(50)})
                it = iter(h) if view is None else iter(getattr(h, view)())
                next(it)
                change(h)
                with pytest.raises(RuntimeError):
                    next(it)
        # a delete then an add (the size unchanged): "keys changed" once
        # more fields than there were are met
        h = make({b"a": b"1", b"b": b"2"})
        it = iter(h)
        assert next(it) == b"a"
        del h[b"a"]
        h[b"c"] = b"3"
        assert next(it) == b"b"
        with pytest.raises(RuntimeError):
            next(it)


def test_dict_operators_and_copies():
    h = HashValue({b"a": b"1", b"b": b"2"})
    d = {b"b": b"3", b"c": b"4"}
    assert h | d == {b"a": b"1", b"b": b"3", b"c": b"4"} and type(h | d) is dict
    assert d | h == {b"b": b"2", b"c": b"4", b"a": b"1"}
    assert list((d | h).items()) == list((d | dict(h)).items())
    h2 = h.copy()
    h2 |= d
    assert h2 == {b"a": b"1", b"b": b"3", b"c": b"4"} and type(h2) is HashValue
    assert h == {b"a": b"1", b"b": b"2"}
    assert isinstance(h, dict) and dict(h) == {b"a": b"1", b"b": b"2"} and {**h} == dict(h)
    c = copy.copy(h)
    assert type(c) is HashValue and c == h and list(c) == list(h)
    c[b"a"] = b"9"
    assert h[b"a"] == b"1"
    big = HashValue({b"f%d" % i: b"v%d" % i for i in range(3000)})
    big.ht = True
    for c in (copy.deepcopy(big), pickle.loads(pickle.dumps(big)), big.copy()):
        assert type(c) is HashValue and c == big and list(c.items()) == list(big.items()) and c.ht is True
    assert sys.getsizeof(big) > sys.getsizeof({}) and big.nbytes() > sys.getsizeof(big)


def test_long_and_binary_fields_and_values():
    big = bytes(range(256)) * 300         # 76,800 bytes
    h = HashValue({big: big, b"": b"", b"\x00": b"\r\n"})
    assert h[big] == big and h[b""] == b"" and h[b"\x00"] == b"\r\n"
    assert big in h and (big + b"x") not in h
    h[b""] = big
    assert h[b""] == big and list(h) == [big, b"", b"\x00"]


def test_errors_are_dicts():
    h = HashValue()
    with pytest.raises(KeyError):
        h[b"x"]
    with pytest.raises(KeyError):
        del h[b"x"]
    with pytest.raises(KeyError):
        h.pop(b"x")
    with pytest.raises(KeyError):
        h.popitem()
    with pytest.raises(TypeError):
        h[bytearray(b"x")]
    with pytest.raises(TypeError):
        h[b"x"] = 7
    assert len(h) == 0
    h[b"a"] = b"1"
    it = iter(h)
    next(it)
    h[b"b"] = b"2"
    with pytest.raises(RuntimeError):
        next(it)


def test_pickle_and_rdb_round_trip():
    from ophidis.persistence import rdbpayload
    h = HashValue({b"field:%d" % i: b"value:%d" % i for i in range(300)})
    h.ht = True
    back = pickle.loads(pickle.dumps(h))
    assert back == h and back.__class__ is HashValue and back.ht is True
    small = HashValue({b"a": b"1", b"": b"", b"b" * 70000: b"x"})
    for v in (h, small):
        back = rdbpayload.load_payload(rdbpayload.dump_payload(v))
        assert back.__class__ is HashValue and back == v and list(back.items()) == list(v.items())


def test_nbytes_counts_the_pairs():
    h = HashValue()
    assert h.nbytes() == sys.getsizeof(h)
    for i in range(1000):
        h[b"field:%d" % i] = b"value:%d" % i
    assert h.nbytes() == sys.getsizeof(h) + 64 * 1000
    d = containers.PyHashBase(dict(h))
    assert d.nbytes() > h.nbytes()      # two bytes objects a field, 90 bytes or so
