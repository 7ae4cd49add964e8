"""Property tests of Redis 8's types against Python models (issue 33):
JSONPath's static selections (names, indexes, slices, wildcards) against
a direct walk of the document, the Count-Min sketch against exact counts
(never below, bounded above), Top-K against exact counts (an item counted
far ahead of all others is listed), and t-digest against the sorted
sample (exact min/max/ranks at the ends, monotonic CDF and quantiles)."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# derandomize: the same examples every run (a property test must not flake in CI)
SETTINGS = settings(max_examples=30, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

# -- JSONPath ---------------------------------------------------------------------------------

_leaf = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text("abc", max_size=3))
_doc = st.recursive(_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)),
    max_leaves=12)


def _step(nodes, step):
    """The model: one selector applied to each node, in document order."""
    kind, arg = step
    out = []
    for n in nodes:
        if kind == "name" and isinstance(n, dict) and arg in n:
            out.append(n[arg])
        elif kind == "index" and isinstance(n, list) and -len(n) <= arg < len(n):
            out.append(n[arg])
        elif kind == "slice" and isinstance(n, list):
            out.extend(n[arg[0]:arg[1]])
        elif kind == "wild":
            if isinstance(n, dict):
                out.extend(n.values())
            elif isinstance(n, list):
                out.extend(n)
    return out


def _path(steps) -> str:
    p = "$"
    for kind, arg in steps:
        p += {"name": lambda a: ".%s" % a, "index": lambda a: "[%d]" % a,
              "slice": lambda a: "[%d:%d]" % a, "wild": lambda a: "[*]"}[kind](arg)
    return p


_steps = st.lists(st.one_of(
    st.tuples(st.just("name"), st.sampled_from(["a", "b", "c"])),
    st.tuples(st.just("index"), st.integers(-3, 3)),
    st.tuples(st.just("slice"), st.tuples(st.integers(0, 3), st.integers(0, 4))),
    st.tuples(st.just("wild"), st.none())), min_size=1, max_size=3)


@SETTINGS
@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), _doc, max_size=3), _steps)
def test_jsonpath_static_selections_match_a_walk(r, doc, steps):
    r.execute_command("JSON.SET", "pj", "$", json.dumps(doc))
    got = json.loads(r.execute_command("JSON.GET", "pj", _path(steps)))
    assert got == _step_all([doc], steps), _path(steps)
    # the number of matches is what JSON.TYPE answers for
    assert len(r.execute_command("JSON.TYPE", "pj", _path(steps)) or []) == len(got)


def _step_all(nodes, steps):
    for s in steps:
        nodes = _step(nodes, s)
    return nodes


# -- Count-Min sketch ---------------------------------------------------------------------------

@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 20)), min_size=1, max_size=60))
def test_cms_never_counts_below_the_truth(r, incs):
    r.delete("pc")
    r.execute_command("CMS.INITBYPROB", "pc", "0.01", "0.01")
    truth = {}
    for item, n in incs:
        r.execute_command("CMS.INCRBY", "pc", "i%d" % item, n)
        truth[item] = truth.get(item, 0) + n
    total = sum(truth.values())
    items = sorted(truth)
    got = r.execute_command("CMS.QUERY", "pc", *["i%d" % i for i in items])
    for i, g in zip(items, got):
        # at least the truth; above it by at most error * total (the
        # sketch's bound holds with probability 1 - 0.01: a margin of 3x)
        assert truth[i] <= g <= truth[i] + 3 * math.ceil(0.01 * total) + 1
    info = r.execute_command("CMS.INFO", "pc")
    assert info[info.index(b"count") + 1] == total


# -- Top-K ------------------------------------------------------------------------------------

@SETTINGS
@given(st.lists(st.integers(0, 30), min_size=1, max_size=100), st.integers(0, 30))
def test_topk_lists_an_item_far_ahead(r, noise, heavy):
    r.delete("pk")
    r.execute_command("TOPK.RESERVE", "pk", "3", "50", "5", "0.9")
    truth = {}
    for i in noise:
        r.execute_command("TOPK.ADD", "pk", "i%d" % i)
        truth[i] = truth.get(i, 0) + 1
    # the heavy item gets more than all the others together
    extra = sum(truth.values()) + 1
    r.execute_command("TOPK.INCRBY", "pk", "i%d" % heavy, extra)
    truth[heavy] = truth.get(heavy, 0) + extra
    listed = r.execute_command("TOPK.LIST", "pk")
    assert b"i%d" % heavy in listed and len(listed) <= 3
    # a listed item's count never exceeds its true count (HeavyKeeper only decays)
    counts = r.execute_command("TOPK.LIST", "pk", "WITHCOUNT")
    for name, count in zip(counts[::2], counts[1::2]):
        assert count <= truth[int(name[1:])]


# -- t-digest -----------------------------------------------------------------------------------

@SETTINGS
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=300))
def test_tdigest_against_the_sorted_sample(r, values):
    r.delete("pt")
    r.execute_command("TDIGEST.CREATE", "pt", "COMPRESSION", "100")
    r.execute_command("TDIGEST.ADD", "pt", *[repr(v) for v in values])
    s = sorted(values)
    assert float(r.execute_command("TDIGEST.MIN", "pt")) == s[0]
    assert float(r.execute_command("TDIGEST.MAX", "pt")) == s[-1]
    qs = [float(x) for x in r.execute_command("TDIGEST.QUANTILE", "pt", "0", "0.1", "0.5", "0.9", "1")]
    if len(values) == 1:
        # t-digest-c (the revision RedisBloom 8.10 pins) merges nothing while
        # the total weight is 1, so a one-sample digest answers nan, as Redis
        assert all(math.isnan(q) for q in qs)
        return
    assert qs[0] == s[0] and qs[-1] == s[-1]
    assert all(a <= b for a, b in zip(qs, qs[1:]))
    assert all(s[0] <= q <= s[-1] for q in qs)
    probes = sorted({s[0], s[len(s) // 2], s[-1]})
    cdf = [float(x) for x in r.execute_command("TDIGEST.CDF", "pt", *[repr(p) for p in probes])]
    assert all(0 <= c <= 1 for c in cdf) and all(a <= b for a, b in zip(cdf, cdf[1:]))
    # ranks at the ends are exact: below the minimum -1, above the maximum the count
    lo, hi = r.execute_command("TDIGEST.RANK", "pt", repr(s[0] - 1), repr(s[-1] + 1))
    assert (lo, hi) == (-1, len(values))
