"""Random dict operations for the compiled maps' twin tests (HashCore in
tests/test_hashpairs.py, ZDict in tests/test_zdict.py): each runs the same
operations on the compiled map and on a plain dict and compares.

``mapping_ops(keys, values, others)`` is the hypothesis strategy of
operations (``others``: keys of any type, looked up or deleted);
``apply_op(h, op, make, fill)`` runs one on h (``make(d)``: a map of the
kind under test holding d; ``fill(i)``: the value of the i-th key of the
"many" run) and returns what it gave.  ``check_twin(make, initial, seq, fill)`` runs a sequence on the map and on a
dict and compares them step by step; ``check_iteration_while_modifying(make,
one, two)``: the map's iterators and views raise as dict's do when it
changes under them (``one``, ``two``: two distinct values)."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import strategies as st


def mapping_ops(keys, values, others):
    return st.one_of(
        st.tuples(st.just("setitem"), keys, values),
        st.tuples(st.just("setitem"), keys, values),
        st.tuples(st.just("getitem"), others),
        st.tuples(st.just("get"), others),
        st.tuples(st.just("get_default"), keys),
        st.tuples(st.just("delitem"), others),
        st.tuples(st.just("pop"), keys),
        st.tuples(st.just("pop_default"), keys),
        st.tuples(st.just("popitem")),
        st.tuples(st.just("setdefault"), keys, values),
        st.tuples(st.just("update_dict"), st.dictionaries(keys, values, max_size=5)),
        st.tuples(st.just("update_pairs"), st.lists(st.tuples(keys, values), max_size=5)),
        st.tuples(st.just("update_same"), st.dictionaries(keys, values, max_size=5)),
        st.tuples(st.just("contains"), others),
        st.tuples(st.just("keys_contains"), others),
        st.tuples(st.just("items_contains"), keys, values),
        st.tuples(st.just("values_contains"), values),
        st.tuples(st.just("iter")),
        st.tuples(st.just("reversed")),
        st.tuples(st.just("keys")),
        st.tuples(st.just("values")),
        st.tuples(st.just("items")),
        st.tuples(st.just("copy_then_set"), keys, values),
        st.tuples(st.just("eq"), st.dictionaries(keys, values, max_size=3)),
        st.tuples(st.just("clear")),
        st.tuples(st.just("or"), st.dictionaries(keys, values, max_size=3)),
        st.tuples(st.just("ior"), st.dictionaries(keys, values, max_size=3)),
        st.tuples(st.just("pickle")),
        st.tuples(st.just("many"), st.integers(0, 40), st.integers(0, 40)),
    )


def apply_op(h, op, make, fill):
    name = op[0]
    if name == "setitem":
        h[op[1]] = op[2]
        return None
    if name == "getitem":
        return h[op[1]]
    if name == "get":
        return h.get(op[1])
    if name == "get_default":
        return h.get(op[1], b"default")
    if name == "delitem":
        del h[op[1]]
        return None
    if name == "pop":
        return h.pop(op[1])
    if name == "pop_default":
        return h.pop(op[1], None)
    if name == "popitem":
        return h.popitem()
    if name == "setdefault":
        return h.setdefault(op[1], op[2])
    if name in ("update_dict", "update_pairs"):
        h.update(op[1])
        return None
    if name == "update_same":
        h.update(make(op[1]))
        return None
    if name == "contains":
        return op[1] in h
    if name == "keys_contains":
        return op[1] in h.keys()
    if name == "items_contains":
        return (op[1], op[2]) in h.items()
    if name == "values_contains":
        return op[1] in h.values()
    if name == "iter":
        return list(h)
    if name == "reversed":
        return list(reversed(h))
    if name == "keys":
        return list(h.keys()), len(h.keys())
    if name == "values":
        return list(h.values()), len(h.values())
    if name == "items":
        return list(h.items()), len(h.items())
    if name == "copy_then_set":
        # a copy shares nothing with its original: writing one (in place
        # or not) leaves the other as it was
        c = h.copy()
        assert c == h and c.__class__ is h.__class__
        before = list(h.items())
        c[op[1]] = op[2]
        assert list(h.items()) == before
        return list(c.items())
    if name == "eq":
        return h == op[1], op[1] == h, h != op[1], h == make(op[1])
    if name == "clear":
        h.clear()
        return None
    if name == "or":
        return list((h | op[1]).items()), list((op[1] | h).items())
    if name == "ior":
        h |= op[1]
        return None
    if name == "pickle":
        c = pickle.loads(pickle.dumps(h))
        assert c.__class__ is h.__class__
        return list(c.items())
    if name == "many":
        # a run of new keys (the table grows), then some of them deleted
        for i in range(op[1]):
            h[b"many:%d" % i] = fill(i)
        for i in range(0, op[1], 2 if op[2] % 2 else 3):
            if i < op[2]:
                del h[b"many:%d" % i]
        return None
    raise AssertionError(name)


def check_iteration_while_modifying(make, one, two):
    h = make({b"f%d" % i: one for i in range(50)})
    seen = []
    for f in h:
        h[f] = two
        seen.append(f)
    assert seen == [b"f%d" % i for i in range(50)] and set(h.values()) == {two}
    for change in (lambda h: h.__setitem__(b"new", one), lambda h: h.__delitem__(b"f3"),
                   lambda h: h.pop(b"f4"), lambda h: h.popitem(), lambda h: h.clear()):
        for view in (None, "keys", "values", "items"):
            h = make({b"f%d" % i: one for i in range(50)})
            it = iter(h) if view is None else iter(getattr(h, view)())
            next(it)
            change(h)
            with pytest.raises(RuntimeError):
                next(it)
    h = make({b"a": one, b"b": two})
    it = iter(h)
    assert next(it) == b"a"
    del h[b"a"]
    h[b"c"] = one
    assert next(it) == b"b"
    with pytest.raises(RuntimeError):
        next(it)


def _outcome(h, op, make, fill):
    # an operation's result (its repr: floats' -0.0 told from 0.0) or its error
    try:
        r = apply_op(h, op, make, fill)
    except (KeyError, TypeError) as e:
        return ("error", type(e), e.args if type(e) is KeyError else None)
    return ("ok", repr(r))


def check_twin(make, initial, seq, fill):
    """Run the operations ``seq`` on ``make(initial)`` and on a dict holding
    ``initial``: each operation's outcome, then the size, truth and items,
    agree after every step, and the whole maps at the end.  Returns the map
    (its own types are the caller's to check)."""
    h = make(initial)
    d = dict(initial)
    for op in seq:
        assert _outcome(h, op, make, fill) == _outcome(d, op, dict, fill), op
        assert len(h) == len(d)
        assert bool(h) == bool(d)
        assert repr(list(h.items())) == repr(list(d.items()))
    assert h == d and d == h and not (h != d)
    assert dict(h) == d and list(dict(h)) == list(d)
    assert {**h} == d
    assert sorted(h) == sorted(d)
    assert repr(h) == repr(d)
    return h
