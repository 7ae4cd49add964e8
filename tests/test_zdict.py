"""The compiled member -> score map of a sorted set (types/_containers.pyx's
ZDict: a dict subclass keeping its members and their scores, as doubles,
in its own table) against its pure twin, a plain dict of bytes -> float:
random sequences of the dict operations the server uses give the same
results, the same exceptions and the same contents, in the same order."""

from __future__ import annotations

import copy
import math
import pickle
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.mapping_model import check_iteration_while_modifying, check_twin, mapping_ops

from ophidis import compiled
from ophidis.types import zset

native = compiled.load("types._containers")
pytestmark = pytest.mark.skipif(native is None, reason="the compiled module is not built (or OPHIDIS_PURE=1)")

_members = st.one_of(st.sampled_from([b"", b"a", b"member:1", b"member:2", b"\x00\xff", b"m" * 300]),
                     st.binary(max_size=3))
_scores = st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.5, math.inf, -math.inf, 1e300, 5e-324]),
                    st.floats(allow_nan=False))
_others = st.one_of(_members, st.sampled_from([7, "member:1", None, (b"a",), 1.0]))

ops = mapping_ops(_members, _scores, _others)


def _fill(i):
    # the value of the i-th key of the "many" run
    return float(i % 30)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_members, _scores, max_size=20), st.lists(ops, max_size=60))
def test_compiled_map_matches_dict_twin(initial, seq):
    h = check_twin(native.ZDict, initial, seq, _fill)
    assert all(type(m) is bytes for m in h) and all(type(s) is float for s in h.values())


def test_zset_value_uses_the_compiled_map():
    z = zset.ZSetValue()
    assert zset.ZDict is native.ZDict and type(z.dict) is native.ZDict
    z.add(b"a", 1.0)
    z.add(b"b", 2.0)
    z.add(b"a", 3.0)
    assert list(z.items()) == [(b"b", 2.0), (b"a", 3.0)] and z.dict == {b"a": 3.0, b"b": 2.0}
    c = z.copy()
    assert type(c.dict) is native.ZDict and c.dict == z.dict
    f = zset.ZSetValue.from_dict({b"x": 1.0, b"y": -1.0})
    assert type(f.dict) is native.ZDict and list(f.items()) == [(b"y", -1.0), (b"x", 1.0)]
    assert f.remove(b"y") and not f.remove(b"y") and len(f) == 1


def test_storage_is_the_table():
    z = native.ZDict()
    members = [b"member:%d" % i for i in range(1000)]
    for i, m in enumerate(members):
        z[m] = float(i)
    # the members are the very objects stored; the dict's storage is empty
    assert all(a is b for a, b in zip(z, members))
    assert dict.__len__(z) == 0 and list(dict.keys(z)) == []
    # 2048 4-byte slots for 1000 members, room for 1365 (member, score)
    assert sys.getsizeof(z) == sys.getsizeof(native.ZDict()) + 2048 * 4 + 1365 * 16
    # an int score is kept as a float; anything else is refused
    z[b"i"] = 7
    assert type(z[b"i"]) is float and z[b"i"] == 7.0
    with pytest.raises(TypeError):
        z[b"s"] = "1"
    with pytest.raises(TypeError):
        z["s"] = 1.0
    with pytest.raises(TypeError):
        z[[1]]
    assert b"s" not in z


def test_growth_deletes_and_reinserts_keep_dict_order():
    h, d = native.ZDict(), {}
    for i in range(5000):
        h[b"f%d" % i] = d[b"f%d" % i] = float(i)
    for i in range(0, 5000, 3):
        del h[b"f%d" % i]
        del d[b"f%d" % i]
    for i in range(0, 5000, 7):
        h[b"f%d" % i] = d[b"f%d" % i] = -float(i)
    for _ in range(100):
        assert h.popitem() == d.popitem()
    for i in range(5000, 9000):
        h[b"f%d" % i] = d[b"f%d" % i] = i / 7
    assert list(h.items()) == list(d.items()) and len(h) == len(d)
    for f in list(d):
        assert h.pop(f) == d.pop(f)
    assert len(h) == 0 and list(h) == [] and not h
    h[b"a"] = 1.0
    assert list(h.items()) == [(b"a", 1.0)]


def test_iteration_while_modifying_is_a_dicts():
    for make in (native.ZDict, dict):
        check_iteration_while_modifying(make, 1.0, 2.0)


def test_copies_pickles_and_operators():
    h = native.ZDict({b"a": 1.0, b"b": 2.0})
    d = {b"b": 3.0, b"c": 4.0}
    assert h | d == {b"a": 1.0, b"b": 3.0, b"c": 4.0} and type(h | d) is dict
    assert list((d | h).items()) == list((d | dict(h)).items())
    big = native.ZDict({b"m%d" % i: i * 0.5 for i in range(3000)})
    for c in (copy.copy(big), copy.deepcopy(big), pickle.loads(pickle.dumps(big)), big.copy(), native.ZDict(big)):
        assert type(c) is native.ZDict and c == big and list(c.items()) == list(big.items())
        c[b"m1"] = -1.0
        assert big[b"m1"] == 0.5
    assert big != native.ZDict({b"m%d" % i: i * 0.5 for i in range(2999)})
    assert big == {b"m%d" % i: i * 0.5 for i in range(3000)}
    bigger = dict(big)
    bigger[b"m5"] = 9.0
    assert big != bigger and not (big == native.ZDict(bigger))


def test_rdb_round_trip():
    from ophidis.persistence import rdbpayload
    for n, skiplist in ((300, True), (3, False)):
        z = zset.ZSetValue.from_dict({b"member:%d" % i: i * 1.5 - 7 for i in range(n)})
        z.skiplist = skiplist
        back = rdbpayload.load_payload(rdbpayload.dump_payload(z))
        assert type(back.dict) is native.ZDict and back.dict == z.dict
        assert list(back.items()) == list(z.items())
