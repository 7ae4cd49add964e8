"""JSONPath's evaluation, as RedisJSON 8.10 does it (types/jsonpath.py is
the front, jsonpath_parse.py the parser): ``Query``, a compiled path or
projection, and how its steps select from a document (keys, indexes,
slices, wildcards, recursive descent, filters), then the filter
expressions and projections: operands, comparisons, arithmetic and the
functions and methods.

An operand that selects nothing, or arithmetic on a non-number, is
"Nothing", which no comparison matches; an operand that selects several
values matches when any of them does.
"""

from __future__ import annotations

import math
import re

from .json import strict_eq

I64_MIN = -(1 << 63)
I64_MAX = (1 << 63) - 1

PROJECTION_READONLY = ("ERR computed/projection expressions are only supported by "
                       "JSON.GET/JSON.MGET/JSON.RESP")


class PathError(Exception):
    pass


# --- a query and its steps ------------------------------------------------------

class Query:
    __slots__ = ("steps", "text", "proj")

    def __init__(self, steps, text, proj=None):
        self.steps = steps
        self.text = text
        # the expression of a projection; None for a path
        self.proj = proj

    def is_static(self) -> bool:
        return all(s[0] in ("key", "idx") and len(s[1]) == 1 for s in self.steps)

    def run(self, doc):
        if self.proj is not None:
            raise PathError(PROJECTION_READONLY)
        return self._select(doc, doc)

    def values(self, base, root):
        """The values the path selects from base (filters' ``$`` is root)."""
        return [v for _, v in self._select(base, root)]

    def _select(self, base, root):
        """The (path, value) pairs the steps select from base."""
        cur = [([], base)]
        for step in self.steps:
            nxt = []
            for path, v in cur:
                _apply(step, path, v, nxt, root)
            cur = nxt
        return cur

    def project(self, doc):
        """A projection's values (empty when it computes Nothing)."""
        return _outputs(_eval(self.proj, doc, doc))


def _children(path, v, out):
    if isinstance(v, dict):
        for k, x in v.items():
            out.append((path + [k], x))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out.append((path + [i], x))


def _apply(step, path, v, out, root):
    kind = step[0]
    if kind == "key":
        if isinstance(v, dict):
            for k in step[1]:
                if k in v:
                    out.append((path + [k], v[k]))
    elif kind == "idx":
        if isinstance(v, list):
            n = len(v)
            for i in step[1]:
                j = i + n if i < 0 else i
                if 0 <= j < n:
                    out.append((path + [j], v[j]))
    elif kind == "all":
        _children(path, v, out)
    elif kind == "slice":
        if isinstance(v, list):
            start, end, stp = step[1]
            for j in range(*slice(start, end, stp).indices(len(v))):
                out.append((path + [j], v[j]))
    elif kind == "filter":
        expr = step[1]
        if isinstance(v, list):
            items = enumerate(v)
        elif isinstance(v, dict):
            items = v.items()
        else:
            return
        for k, x in items:
            if _truth(expr, x, root):
                out.append((path + [k], x))
    elif kind == "desc":
        inner = step[1]
        stack = [(path, v)]
        while stack:
            p, x = stack.pop()
            _apply(inner, p, x, out, root)
            kids = []
            _children(p, x, kids)
            stack.extend(reversed(kids))


# --- evaluation of filter operands and projections ---------------------------
#
# An evaluated operand is NOTHING or a (kind, payload) pair:
#   "D": one value of the document;  "C": a computed or literal value;
#   "N": several values of the document (a path with more than one match);
#   "R": a computed list of values (keys(), ~, append()), spread in output.

NOTHING = ("", None)
_TRUE = ("C", True)
_FALSE = ("C", False)


def _num(x):
    """x as a number the way RedisJSON sees it (integers beyond i64 are
    doubles), or None."""
    t = x.__class__
    if t is int:
        return x if I64_MIN <= x <= I64_MAX else float(x)
    if t is float:
        return x
    return None


def _values_eq(a, b) -> bool:
    """Equality of two values for membership: numbers by value."""
    x, y = _num(a), _num(b)
    if x is not None and y is not None:
        return x == y
    return strict_eq(a, b)


def _cmp(x, y):
    """-1 / 0 / 1 comparing two scalars, None when not comparable."""
    a, b = _num(x), _num(y)
    if a is not None:
        if b is None:
            return None
    elif b is not None:
        return None
    else:
        tx = x.__class__
        if tx is not y.__class__ or tx not in (str, bool, type(None)):
            return None
        a, b = x, y
        if a is None:
            return 0
    return (a > b) - (a < b)


def _single(t):
    return t[0] == "D" or t[0] == "C"


def _each(t):
    """The single-value terms of a node list or computed list."""
    k = "D" if t[0] == "N" else "C"
    return [(k, v) for v in t[1]]


def _ord(a, b, pred) -> bool:
    if a[0] in ("N", "R"):
        return any(_ord(x, b, pred) for x in _each(a))
    if b[0] in ("N", "R"):
        return any(_ord(a, y, pred) for y in _each(b))
    if a is NOTHING or b is NOTHING:
        return False
    r = _cmp(a[1], b[1])
    return r is not None and pred(r)


def _eq(a, b) -> bool:
    if a[0] in ("N", "R"):
        return any(_eq(x, b) for x in _each(a))
    if b[0] in ("N", "R"):
        return any(_eq(a, y) for y in _each(b))
    if a is NOTHING or b is NOTHING:
        return False
    x, y = a[1], b[1]
    if isinstance(x, (list, dict)) or isinstance(y, (list, dict)):
        return strict_eq(x, y)
    return _cmp(x, y) == 0


def _as_number(t):
    if _single(t):
        return _num(t[1])
    return None


def _equals_value(t, other) -> bool:
    a, b = _as_number(t), _num(other)
    if a is not None and b is not None:
        return a == b
    k = t[0]
    if k == "D" or k == "C":
        if a is not None:
            return False
        return strict_eq(t[1], other)
    if k == "N":
        return any(strict_eq(v, other) for v in t[1])
    return False


def _seq(t):
    """The elements of an array-shaped operand, or None."""
    k = t[0]
    if k == "D" or k == "C":
        return t[1] if isinstance(t[1], list) else None
    if k == "N" or k == "R":
        return t[1]
    return None


def _member(a, arr) -> bool:
    items = _seq(arr)
    return items is not None and any(_equals_value(a, e) for e in items)


def _set_relate(a, b, require_all: bool) -> bool:
    if a[0] == "N":
        return any(_set_relate(("D", v), b, require_all) for v in a[1])
    items = _seq(a)
    if items is None:
        return False
    hay = _seq(b)
    if hay is None:
        hay = ()
    hits = (any(_values_eq(e, h) for h in hay) for e in items)
    return all(hits) if require_all else any(hits)


def _seq_len(t):
    if _single(t):
        v = t[1]
        if isinstance(v, (str, list, dict)):
            return len(v)
        return None
    if t[0] == "R":
        return len(t[1])
    return None


def _as_bool(t):
    if _single(t) and t[1].__class__ is bool:
        return t[1]
    return None


def _f64_to_i64(f):
    if math.isfinite(f) and -9223372036854775808.0 <= f < 9223372036854775808.0:
        return int(f)
    return None


def _as_int(t):
    """An operand as an integer (a double truncated, as Rust's f64 -> i64
    cast), or None: not a number, or a double outside i64."""
    n = _as_number(t)
    if n.__class__ is float:
        n = _f64_to_i64(math.trunc(n) if math.isfinite(n) else n)
    return n


def _any_node(pred):
    """pred(a, b) over operands that may be node lists ("N"): true when it
    holds for any node of a (with b), else of b (with a)."""
    def run(a, b):
        if a[0] == "N":
            return any(run(("D", v), b) for v in a[1])
        if b[0] == "N":
            return any(run(a, ("D", v)) for v in b[1])
        return pred(a, b)
    return run


@_any_node
def _size_of(a, b) -> bool:
    n = _as_int(b)
    if n is None:
        return False
    ln = _seq_len(a)
    return n >= 0 and ln is not None and ln == n


@_any_node
def _empty(a, b) -> bool:
    ln, want = _seq_len(a), _as_bool(b)
    if ln is None or want is None:
        return False
    return (ln == 0) == want


def _as_str(t):
    if _single(t) and t[1].__class__ is str:
        return t[1]
    return None


_REGEX = {}


def _regex(pattern: str, full: bool):
    key = (pattern, full)
    rx = _REGEX.get(key, False)
    if rx is False:
        try:
            rx = re.compile("^(?:%s)$" % pattern if full else pattern)
        except (re.error, RecursionError, OverflowError):
            rx = None
        if len(_REGEX) > 256:
            _REGEX.clear()
        _REGEX[key] = rx
    return rx


@_any_node
def _re(a, b) -> bool:
    s, p = _as_str(a), _as_str(b)
    if s is None or p is None:
        return False
    rx = _regex(p, False)
    return rx is not None and rx.search(s) is not None


def _arith(op, a, b):
    x, y = _as_number(a), _as_number(b)
    if x is None or y is None:
        return NOTHING
    ints = x.__class__ is int and y.__class__ is int
    if op in "+-*":
        if ints:
            r = x + y if op == "+" else x - y if op == "-" else x * y
            if I64_MIN <= r <= I64_MAX:
                return ("C", r)
        x, y = float(x), float(y)
        try:
            r = x + y if op == "+" else x - y if op == "-" else x * y
        except OverflowError:
            r = math.inf
        return ("C", r)
    if op == "/":
        if y == 0:
            return NOTHING
        return ("C", float(x) / float(y))
    # %: the remainder takes the dividend's sign (truncated division)
    if ints:
        if y == 0 or (x == I64_MIN and y == -1):
            return NOTHING
        r = abs(x) % abs(y)
        return ("C", -r if x < 0 else r)
    if y == 0:
        return NOTHING
    return ("C", math.fmod(x, y))


def _unary(op, t):
    n = _as_number(t)
    if n is None:
        return NOTHING
    if op == "-":
        if n.__class__ is int and n == I64_MIN:
            return ("C", -float(n))
        return ("C", -n)
    return ("C", n)


def _outputs(t):
    """A projection's result as the list of values of its reply."""
    k, v = t
    if k == "D" or k == "C":
        if v.__class__ is float and not math.isfinite(v):
            return []
        return [v]
    if k == "N":
        return [list(v)]
    if k == "R":
        return list(v)
    return []


def _numbers(t):
    items = _seq(t)
    if not items:
        return None
    out = []
    for e in items:
        n = _num(e)
        if n is None:
            return None
        out.append(float(n))
    return out


def _fsum(xs):
    s = 0.0
    for x in xs:
        s += x
    return s


def _agg(name, xs):
    if name == "sum":
        return _fsum(xs)
    if name == "min":
        return min(xs)
    if name == "max":
        return max(xs)
    mean = _fsum(xs) / len(xs)
    if name == "avg":
        return mean
    return math.sqrt(_fsum((x - mean) * (x - mean) for x in xs) / len(xs))


def _index(t, i):
    k = t[0]
    if k == "D" or k == "C":
        arr = t[1]
        if not isinstance(arr, list):
            return NOTHING
    elif k == "N" or k == "R":
        arr = t[1]
    else:
        return NOTHING
    n = len(arr)
    j = i + n if i < 0 else i
    if not 0 <= j < n:
        return NOTHING
    return ("C" if k in ("C", "R") else "D", arr[j])


def _keys(t):
    k = t[0]
    if k == "D" or k == "C":
        if isinstance(t[1], dict):
            return ("R", list(t[1]))
        return NOTHING
    if k == "N":
        out = []
        for v in t[1]:
            if isinstance(v, dict):
                out.extend(v)
        return ("R", out)
    return NOTHING


def _append(recv, x):
    if x is NOTHING:
        return NOTHING
    if x[0] == "N" or x[0] == "R":
        add = list(x[1])
    else:
        o = _outputs(x)
        if not o:
            return NOTHING
        add = o[0]
    k = recv[0]
    if k == "N" or k == "R":
        out = list(recv[1])
    elif k == "D" or k == "C":
        v = recv[1]
        out = list(v) if isinstance(v, list) else _outputs(recv)
    else:
        out = []
    out.append(add)
    return ("R", out)


_ARITY1 = frozenset(("length", "count", "ceiling", "floor", "abs", "sum", "min", "max",
                     "avg", "stddev", "first", "last", "keys"))


def _call(name, args):
    n = len(args)
    if name in _ARITY1:
        if n != 1:
            return NOTHING
    elif name in ("index", "append"):
        if n != 2:
            return NOTHING
    elif name == "concat" and not n:
        return NOTHING
    a = args[0] if args else NOTHING
    if name == "length":
        k = a[0]
        if k == "R":
            return ("C", len(a[1]))
        if k == "D" or k == "C":
            if isinstance(a[1], (str, list, dict)):
                return ("C", len(a[1]))
        return NOTHING
    if name == "count":
        k = a[0]
        if k == "N" or k == "R":
            return ("C", len(a[1]))
        return ("C", 0 if a is NOTHING else 1)
    if name == "value":
        if n != 1:
            return NOTHING
        if a[0] == "D":
            return a
        if a[0] == "R" and len(a[1]) == 1:
            return ("C", a[1][0])
        return NOTHING
    if name in ("ceiling", "floor"):
        x = _as_number(a)
        if x is None:
            return NOTHING
        if x.__class__ is int:
            return ("C", x)
        r = _f64_to_i64(math.ceil(x) if name == "ceiling" and math.isfinite(x)
                        else math.floor(x) if math.isfinite(x) else x)
        return NOTHING if r is None else ("C", r)
    if name == "abs":
        x = _as_number(a)
        if x is None or x == I64_MIN and x.__class__ is int:
            return NOTHING
        return ("C", abs(x))
    if name == "concat":
        parts = []
        for t in args:
            s = _as_str(t)
            if s is None:
                return NOTHING
            parts.append(s)
        return ("C", "".join(parts))
    if name in ("sum", "min", "max", "avg", "stddev"):
        xs = _numbers(a)
        if xs is None:
            return NOTHING
        return ("C", _agg(name, xs))
    if name == "keys":
        return _keys(a)
    if name == "append":
        return _append(a, args[1])
    if name == "first":
        return _index(a, 0)
    if name == "last":
        return _index(a, -1)
    if name == "index":
        i = _as_int(args[1])
        if i is None:
            return NOTHING
        return _index(a, i)
    if name in ("match", "search"):
        s = _as_str(a)
        p = _as_str(args[1]) if n > 1 else None
        if s is None or p is None:
            return _FALSE
        rx = _regex(p, name == "match")
        return _TRUE if rx is not None and rx.search(s) is not None else _FALSE
    return NOTHING


def _eval(e, cur, root):
    """An expression node's value with @ = cur and $ = root."""
    kind = e[0]
    if kind == "@" or kind == "$":
        q = e[1]
        base = cur if kind == "@" else root
        if q is None:
            return ("D", base)
        vals = q.values(base, root)
        n = len(vals)
        if n == 0:
            return NOTHING
        if n == 1:
            return ("D", vals[0])
        return ("N", vals)
    if kind == "lit":
        return ("C", e[1])
    if kind == "bin":
        return _arith(e[1], _eval(e[2], cur, root), _eval(e[3], cur, root))
    if kind == "un":
        return _unary(e[1], _eval(e[2], cur, root))
    if kind == "fn":
        return _call(e[1], [_eval(a, cur, root) for a in e[2]])
    # a method chain: each method takes the value so far as its first argument
    acc = _eval(e[1], cur, root)
    for name, args in e[2]:
        acc = _call(name, [acc] + [_eval(a, cur, root) for a in args])
    return acc


_CMP = {
    ">": lambda r: r > 0, ">=": lambda r: r >= 0,
    "<": lambda r: r < 0, "<=": lambda r: r <= 0,
}


def _truth(e, cur, root) -> bool:
    kind = e[0]
    if kind == "or":
        return _truth(e[1], cur, root) or _truth(e[2], cur, root)
    if kind == "and":
        return _truth(e[1], cur, root) and _truth(e[2], cur, root)
    if kind == "not":
        return not _truth(e[1], cur, root)
    a = _eval(e[1], cur, root)
    if kind == "test":
        # a bare operand: a boolean result counts as itself, a computed
        # list when not empty, anything else when it exists
        if a[0] == "C" and a[1].__class__ is bool:
            return a[1]
        if a[0] == "R":
            return bool(a[1])
        return a is not NOTHING
    op = e[2]
    b = _eval(e[3], cur, root)
    if op == "==":
        return _eq(a, b)
    if op == "!=":
        return not _eq(a, b)
    pred = _CMP.get(op)
    if pred is not None:
        return _ord(a, b, pred)
    if op == "=~":
        return _re(a, b)
    if op == "in":
        return _member(a, b)
    if op == "nin":
        return not _member(a, b)
    if op == "subsetof":
        return _set_relate(a, b, True)
    if op == "anyof":
        return _set_relate(a, b, False)
    if op == "noneof":
        return not _set_relate(a, b, False)
    if op == "size" or op == "sizeof":
        return _size_of(a, b)
    return _empty(a, b)
