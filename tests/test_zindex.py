"""The sorted set's ordered index (types/zindex.py and its compiled twin
types/_zindex.pyx, each) against a model: a plain sorted list of (score,
member) tuples.  Random operations (adds, removals,
pops, slice deletions, searches, positional reads) with a small sublist size
so that splits, merges, emptied sublists and the positional tree's rebuilds
and updates all happen; after each step every read agrees with the model."""

from __future__ import annotations

import bisect
import random

import pytest

from ophidis import compiled
from ophidis.types import zindex

_c = compiled.load("types._zindex")
TWINS = ["pure"] + (["compiled"] if _c is not None else [])

_SCORES = [-2.5, -1.0, -0.0, 0.0, 1.0, 1.5, 3.0, 1e300, -float("inf"), float("inf")]


def _member(rnd):
    return rnd.choice([b"", b"a", b"b", b"ab", b"a\x00", b"\xff", b"m%d" % rnd.randrange(60)])


def _check(ix, model):
    assert len(ix) == len(model)
    assert list(ix) == model
    assert list(reversed(ix)) == model[::-1]
    assert ix.members() == [m for _, m in model]
    if model:
        assert ix[0] == model[0] and ix[-1] == model[-1]


@pytest.fixture(params=TWINS)
def twin(request):
    """The ZIndex class of one twin."""
    return zindex.ZIndex if request.param == "pure" else _c.ZIndex


@pytest.fixture
def small_load(twin, monkeypatch):
    """That class, with blocks of 4 (so that splits and merges happen)."""
    if twin is zindex.ZIndex:
        monkeypatch.setattr(zindex, "LOAD", 4)
        yield twin
    else:
        old = _c.set_load(4)
        yield twin
        _c.set_load(old)


@pytest.mark.parametrize("seed", range(12))
def test_random_operations_match_a_sorted_list(small_load, seed):
    rnd = random.Random(seed)
    ix = small_load()
    model = []
    members = {}
    for step in range(1500):
        op = rnd.random()
        if op < 0.45 or not model:
            m = _member(rnd)
            s = rnd.choice(_SCORES) if rnd.random() < 0.5 else float(rnd.randrange(-20, 20))
            if m in members:
                old = members[m]
                ix.remove(old, m)
                model.remove((old, m))
            ix.add(s, m)
            bisect.insort(model, (s, m))
            members[m] = s
        elif op < 0.6:
            m = rnd.choice(list(members))
            s = members.pop(m)
            ix.remove(s, m)
            model.remove((s, m))
        elif op < 0.7:
            i = rnd.randrange(-len(model), len(model))
            got = ix.pop(i)
            assert got == model.pop(i)
            del members[got[1]]
        elif op < 0.75:
            a = rnd.randrange(len(model) + 1)
            b = rnd.randrange(a, len(model) + 1)
            del ix[a:b]
            for s, m in model[a:b]:
                del members[m]
            del model[a:b]
        elif op < 0.8:
            new = {}
            for _ in range(rnd.choice([1, 3, 40])):
                m = b"u%d" % rnd.randrange(400)
                if m not in members and m not in new:
                    new[m] = float(rnd.randrange(-30, 30))
            ix.update((s, m) for m, s in new.items())
            for m, s in new.items():
                bisect.insort(model, (s, m))
                members[m] = s
        else:
            s = rnd.choice(_SCORES + [float(rnd.randrange(-25, 25))])
            m = _member(rnd)
            assert ix.score_left(s) == bisect.bisect_left(model, (s,))
            assert ix.score_right(s) == bisect.bisect_left(model, (s, b"\xff" * 100))
            assert ix.index_left(s, m) == bisect.bisect_left(model, (s, m))
            assert ix.index_right(s, m) == bisect.bisect_right(model, (s, m))
            if model:
                i = rnd.randrange(len(model))
                assert ix[i] == model[i]
                a = rnd.randrange(len(model) + 1)
                b = rnd.randrange(a, len(model) + 1)
                assert list(ix.islice(a, b)) == model[a:b]
                assert list(ix.islice(a, b, reverse=True)) == model[a:b][::-1]
                assert ix.members(a, b) == [m for _, m in model[a:b]]
        if step % 50 == 0:
            _check(ix, model)
    _check(ix, model)


def test_missing_pairs_raise(small_load):
    ZIndex = small_load
    ix = ZIndex([(1.0, b"a"), (2.0, b"b")])
    with pytest.raises(ValueError):
        ix.remove(1.0, b"b")
    with pytest.raises(ValueError):
        ix.remove(3.0, b"a")
    with pytest.raises(IndexError):
        ix[2]
    with pytest.raises(IndexError):
        ZIndex().pop()
    assert list(ix) == [(1.0, b"a"), (2.0, b"b")]


def test_negative_zero_keeps_its_sign(twin):
    ix = twin()
    ix.add(-0.0, b"a")
    ix.add(0.0, b"b")
    assert [str(s) for s, _ in ix] == ["-0.0", "0.0"]


def test_a_million_pairs_stay_logarithmic(twin):
    n = 1_000_000
    ix = twin((float(i // 3), b"m%07d" % i) for i in range(n))
    if twin is zindex.ZIndex:
        assert len(ix._mem) == n // zindex.LOAD
    else:
        assert ix.nbytes() <= 17 * n          # 16 bytes a pair, blocks filled when built
    for k in range(0, n, 9973):
        s = float(k // 3)
        assert ix.index_left(s, b"m%07d" % k) == k
        assert ix[k] == (s, b"m%07d" % k)
    ix.add(0.5, b"x")
    assert ix.index_left(0.5, b"x") == 3
    assert ix[n] == (float((n - 1) // 3), b"m%07d" % (n - 1))


def test_compiled_iterators_refuse_a_changed_index():
    if _c is None:
        pytest.skip("the pure-Python layer runs")
    ix = _c.ZIndex([(1.0, b"a"), (2.0, b"b")])
    it = iter(ix)
    assert next(it) == (1.0, b"a")
    ix.add(3.0, b"c")
    with pytest.raises(RuntimeError):
        next(it)
    with pytest.raises(TypeError):
        ix.add(1.0, "not bytes")
    assert list(ix) == [(1.0, b"a"), (2.0, b"b"), (3.0, b"c")]
    assert ix.pop(0) == (1.0, b"a") and ix.pop() == (3.0, b"c")
    import pickle
    assert list(pickle.loads(pickle.dumps(ix))) == [(2.0, b"b")]
