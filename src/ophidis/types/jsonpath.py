"""JSONPath for the JSON type, as RedisJSON 8.10 reads and evaluates it.

Paths: ``$`` rooted, with ``.name``, ``['name', ...]``, ``[index, ...]``
(negative from the end), slices ``[start:end:step]``, wildcards ``*``,
recursive descent ``..`` and filters ``[?expr]`` / ``[?(expr)]``; the
legacy (RedisJSON 1.x) paths ``.a.b``, ``a[0]`` are rewritten to ``$``
paths (``to_query``).

Filters (RedisJSON 8.10's extensions): operands are ``@`` / ``$`` paths,
numbers, strings, ``true`` / ``false`` / ``null``, JSON array and object
literals, function calls (``length(@.a)``), method chains
(``@.a.length()``, ``@.obj~``) and arithmetic (``+ - * / %``, unary
``-``/``+``, which must be spaced since ``+ - / %`` may be part of a field
name); comparisons ``== != < <= > >= =~``, ``in nin subsetof anyof noneof
size sizeof empty``; ``&& || !`` and parentheses.

A query that is not a plain ``$`` path (``$.a + 1``, ``$.arr.length()``,
``$.obj~``) is a projection: it computes values instead of naming places
in the document, so only reads (JSON.GET, JSON.MGET, JSON.RESP) accept it.

``compile`` parses once; ``Query.run(doc)`` returns the matches of a path as
(path, value) pairs, a path being the list of object keys (str) and array
indexes (int) from the root, in document order; ``Query.project(doc)`` the
values of a projection.

The grammar is RedisJSON's (a PEG: the first alternative that matches is
taken, spaces allowed between tokens); the evaluation follows its rules:
an operand that selects nothing, or arithmetic on a non-number, is
"Nothing", which no comparison matches; an operand that selects several
values matches when any of them does.
"""

from __future__ import annotations

import math
import re

from .json import strict_eq

_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
_MAX_NESTING = 128

PROJECTION_READONLY = ("ERR computed/projection expressions are only supported by "
                       "JSON.GET/JSON.MGET/JSON.RESP")


class PathError(Exception):
    pass


def _rooted_or_paren(p: str, i: int) -> bool:
    c = p[i:i + 1]
    if c == "$":
        return i + 1 >= len(p) or p[i + 1] in ".[~"
    return c == "("


_NAME_RUN = re.compile(r"[A-Za-z0-9_]*")


def is_jsonpath(p: str) -> bool:
    """Whether a path argument is JSONPath rather than a legacy path: ``$``
    alone or followed by ``.``, ``[`` or ``~`` (``$a`` is the legacy field
    ``$a``), or a projection that cannot be a legacy path: a parenthesised
    group, a sign before a rooted path or a group, a function call."""
    c = p[:1]
    if c == "$":
        return _rooted_or_paren(p, 0)
    if c == "(":
        return True
    if c in ("-", "+"):
        i = 1
        while p[i:i + 1] == " ":
            i += 1
        return _rooted_or_paren(p, i)
    if c.isascii() and (c.isalpha() or c == "_"):
        i = _NAME_RUN.match(p).end()
        while p[i:i + 1] == " ":
            i += 1
        return p[i:i + 1] == "("
    return False


def to_query(p: str):
    """(query text, legacy) of a path argument."""
    if is_jsonpath(p):
        return p, False
    if p == ".":
        return "$", True
    if p.startswith("."):
        return "$" + p, True
    return "$." + p, True


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
        cur = [([], doc)]
        for step in self.steps:
            nxt = []
            for path, v in cur:
                _apply(step, path, v, nxt, doc)
            cur = nxt
        return cur

    def values(self, base, root):
        """The values the path selects from base (filters' ``$`` is root)."""
        cur = [([], base)]
        for step in self.steps:
            nxt = []
            for path, v in cur:
                _apply(step, path, v, nxt, root)
            cur = nxt
        return [v for _, v in cur]

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
        return x if _I64_MIN <= x <= _I64_MAX else float(x)
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
    n = _as_number(b)
    if n is None:
        return False
    if n.__class__ is float:
        n = _f64_to_i64(math.trunc(n) if math.isfinite(n) else n)
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
            if _I64_MIN <= r <= _I64_MAX:
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
        if y == 0 or (x == _I64_MIN and y == -1):
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
        if n.__class__ is int and n == _I64_MIN:
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
        if x is None or x == _I64_MIN and x.__class__ is int:
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
        i = _as_number(args[1])
        if i is None:
            return NOTHING
        if i.__class__ is float:
            i = _f64_to_i64(math.trunc(i) if math.isfinite(i) else i)
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


# --- parser --------------------------------------------------------------------
#
# Each rule returns its node, or None with the position unchanged when it
# does not match (RedisJSON's grammar is a PEG: an alternative that matches
# is final).  Spaces may stand between any two tokens.

_LITERAL = re.compile(r"[A-Za-z0-9\-_`+#%$^/:]+")
_FUNC = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_NUMBER = re.compile(r"-?(?:[1-9][0-9]*|[0-9])")
_POS_NUMBER = re.compile(r"[1-9][0-9]*")
_DECIMAL = re.compile(r"-?(?:[1-9][0-9]*|[0-9])(?:\.[0-9]+)?")
_WORD_END = re.compile(r"[A-Za-z0-9_]")
_KEYWORD = re.compile(r"(?:in|nin|subsetof|anyof|noneof|sizeof|size|empty)(?![A-Za-z0-9_])")
_WORD_OPS = ("in", "nin", "subsetof", "anyof", "noneof", "sizeof", "size", "empty")
_SYM_OPS = (">=", ">", "<=", "<", "==", "!=", "=~")


class _P:
    __slots__ = ("s", "i", "far")

    def __init__(self, s):
        self.s = s
        self.i = 0
        self.far = 0

    def miss(self, at=None):
        at = self.i if at is None else at
        if at > self.far:
            self.far = at
        return None

    def fail(self):
        # RedisJSON's text names the tokens its grammar expected here;
        # ours says where only
        p = self.far
        raise PathError("Error occurred at position %d, Error at position %d: parsing error" % (p, p))

    def ws(self):
        s, i = self.s, self.i
        while i < len(s) and s[i] == " ":
            i += 1
        self.i = i

    def eat(self, t):
        if self.s.startswith(t, self.i):
            self.i += len(t)
            return True
        self.miss()
        return False

    def rx(self, pattern):
        m = pattern.match(self.s, self.i)
        if m is None:
            self.miss()
            return None
        self.i = m.end()
        return m.group()

    # paths

    def root(self):
        """The steps after ``$`` / ``@``: an element or a bare first
        segment, then elements."""
        save = self.i
        self.ws()
        st = self.element()
        if st is None:
            if _KEYWORD.match(self.s, self.i):
                st = None
                self.miss()
            else:
                name = self.rx(_LITERAL)
                if name is not None:
                    st = ("key", [name])
            if st is None and self.eat("*"):
                st = ("all",)
            if st is None:
                self.i = save
                return []
        steps = [st]
        while True:
            save = self.i
            self.ws()
            st = self.element()
            if st is None:
                self.i = save
                return steps
            steps.append(st)

    def element(self):
        s = self.s
        start = self.i
        if s.startswith("..", start):
            # ".name" is tried first: it fails on "..", as RedisJSON's
            self.i += 2
            self.ws()
            name = self.rx(_LITERAL)
            if name is not None:
                return ("desc", ("key", [name]))
            if self.eat("*"):
                return ("desc", ("all",))
            if self.eat("["):
                b = self.bracket_body()
                if b is not None:
                    return ("desc", b)
            self.i = start
            return None
        if self.eat("."):
            self.ws()
            at = self.i
            m = _FUNC.match(s, at)
            is_call = False
            if m:
                self.i = m.end()
                self.ws()
                is_call = s.startswith("(", self.i)
                self.i = at
            if not is_call:
                name = self.rx(_LITERAL)
                if name is not None:
                    return ("key", [name])
            if self.eat("*"):
                return ("all",)
            if self.eat("["):
                b = self.bracket_body()
                if b is not None:
                    return b
            self.i = start
            return None
        if self.eat("["):
            b = self.bracket_body()
            if b is not None:
                return b
            self.i = start
        return None

    def bracket_body(self):
        """After ``[``: the bracket's contents and ``]``."""
        start = self.i
        self.ws()
        for alt in (self.range_, self.numbers, self.strings, self.star, self.filter_):
            self.i = start
            self.ws()
            b = alt()
            if b is not None:
                self.ws()
                if self.eat("]"):
                    return b
                # an alternative that matched is final
                self.i = start
                return None
        self.i = start
        return None

    def star(self):
        return ("all",) if self.eat("*") else None

    def filter_(self):
        if not self.eat("?"):
            return None
        self.ws()
        f = self.filter()
        return None if f is None else ("filter", f)

    def number(self):
        t = self.rx(_NUMBER)
        return None if t is None else int(t)

    def step(self):
        """The optional ``:step`` / ``:`` ending a slice."""
        save = self.i
        self.ws()
        if self.eat(":"):
            after = self.i
            self.ws()
            t = self.rx(_POS_NUMBER)
            if t is not None:
                return int(t)
            self.i = after
            return None
        self.i = save
        return None

    def range_(self):
        start = self.i
        # start:end, :end, :, start:
        a = self.number()
        if a is not None:
            self.ws()
            if not self.eat(":"):
                self.i = start
                return None
            after = self.i
            self.ws()
            b = self.number()
            if b is None:
                self.i = after
            return ("slice", (a, b, self.step()))
        if not self.eat(":"):
            return None
        after = self.i
        self.ws()
        b = self.number()
        if b is None:
            self.i = after
        return ("slice", (None, b, self.step()))

    def numbers(self):
        return self.listed(self.number, "idx")

    def strings(self):
        return self.listed(self.string, "key")

    def listed(self, item, tag: str):
        """A comma-separated list of item()s, as (tag, [items]); None when
        the first is missing (a trailing comma is left unread)."""
        a = item()
        if a is None:
            return None
        out = [a]
        while True:
            save = self.i
            self.ws()
            if self.eat(","):
                self.ws()
                n = item()
                if n is not None:
                    out.append(n)
                    continue
            self.i = save
            return (tag, out)

    def string(self):
        """A quoted string: without escapes, or with ``\\\\`` and ``\\"``
        (``\\'`` in single quotes) as the only escapes."""
        s, i = self.s, self.i
        q = s[i:i + 1]
        if q not in ("'", '"'):
            return self.miss()
        j = i + 1
        out = []
        n = len(s)
        while j < n:
            c = s[j]
            if c == q:
                self.i = j + 1
                return "".join(out)
            if c == "\\":
                if j + 1 < n and s[j + 1] in (q, "\\"):
                    out.append(s[j + 1])
                    j += 2
                    continue
                return self.miss(j)
            out.append(c)
            j += 1
        return self.miss(j)

    # filters

    def filter(self):
        left = self.inner_filter()
        if left is None:
            return None
        ors = []
        while True:
            save = self.i
            self.ws()
            rel = "and" if self.eat("&&") else "or" if self.eat("||") else None
            if rel is not None:
                self.ws()
                right = self.inner_filter()
                if right is not None:
                    if rel == "and":
                        left = ("and", left, right)
                    else:
                        ors.append(left)
                        left = right
                    continue
            self.i = save
            break
        for o in reversed(ors):
            left = ("or", o, left)
        return left

    def inner_filter(self):
        start = self.i
        if self.eat("!"):
            self.ws()
            f = self.inner_filter()
            if f is not None:
                return ("not", f)
            self.i = start
        f = self.single_filter()
        if f is not None:
            return f
        self.i = start
        return self.parenthesized(self.filter)

    def parenthesized(self, inner):
        """``(`` inner() ``)``, spaces allowed inside; None with the
        position unchanged when it is not there."""
        start = self.i
        if self.eat("("):
            self.ws()
            e = inner()
            if e is not None:
                self.ws()
                if self.eat(")"):
                    return e
            self.i = start
        return None

    def single_filter(self):
        a = self.arith()
        if a is None:
            return None
        save = self.i
        self.ws()
        op = self.op()
        if op is not None:
            self.ws()
            b = self.arith()
            if b is not None:
                return ("cmp", a, op, b)
        self.i = save
        return ("test", a)

    def op(self):
        s, i = self.s, self.i
        for o in _SYM_OPS:
            if s.startswith(o, i):
                self.i = i + len(o)
                return o
        for o in _WORD_OPS:
            if s.startswith(o, i) and not _WORD_END.match(s, i + len(o)):
                self.i = i + len(o)
                return o
        return self.miss()

    # arithmetic

    def arith(self):
        return self.binary(self.arith_term, ("+", "-"))

    def arith_term(self):
        return self.binary(self.factor, ("*", "/", "%"))

    def binary(self, operand, ops):
        """operand (op operand)*, left-associative: ("bin", op, left, right);
        an operator without an operand after it is left unread."""
        left = operand()
        if left is None:
            return None
        while True:
            save = self.i
            self.ws()
            c = self.s[self.i:self.i + 1]
            if c in ops:
                self.i += 1
                self.ws()
                right = operand()
                if right is not None:
                    left = ("bin", c, left, right)
                    continue
            self.i = save
            return left

    def factor(self):
        start = self.i
        c = self.s[start:start + 1]
        if c in ("-", "+"):
            self.i += 1
            self.ws()
            p = self.primary()
            if p is None:
                self.i = start
                return None
            return ("un", c, p)
        return self.primary()

    def primary(self):
        e = self.parenthesized(self.arith)
        if e is not None:
            return e
        t = self.term()
        if t is None:
            return None
        after = self.i
        # term ~ "~"
        self.ws()
        if self.eat("~"):
            return ("chain", t, [("keys", [])])
        self.i = after
        # term ~ postfix_method+
        methods = []
        while True:
            save = self.i
            self.ws()
            m = self.method()
            if m is None:
                self.i = save
                break
            methods.append(m)
        if methods:
            return ("chain", t, methods)
        return t

    def method(self):
        start = self.i
        if not self.eat("."):
            return None
        self.ws()
        name = self.rx(_FUNC)
        if name is not None:
            self.ws()
            if self.eat("("):
                args = self.args(self.arith)
                if args is not None:
                    return (name, args)
        self.i = start
        return None

    def args(self, parse):
        """After ``(``: comma-separated arguments and ``)``."""
        start = self.i
        self.ws()
        out = []
        a = parse()
        if a is not None:
            out.append(a)
            while True:
                save = self.i
                self.ws()
                if self.eat(","):
                    self.ws()
                    b = parse()
                    if b is not None:
                        out.append(b)
                        continue
                self.i = save
                break
        self.ws()
        if self.eat(")"):
            return out
        self.i = start
        return None

    def term(self):
        s, i = self.s, self.i
        c = s[i:i + 1]
        if c == "@" or c == "$":
            self.i += 1
            steps = self.root()
            return (c, Query(steps, "") if steps else None)
        t = self.rx(_DECIMAL)
        if t is not None:
            return ("lit", float(t) if "." in t else _lit_int(t))
        v = self.string()
        if v is not None:
            return ("lit", v)
        for word, val in (("true", True), ("false", False), ("null", None)):
            if s.startswith(word, i):
                self.i = i + len(word)
                return ("lit", val)
        if c == "[" or c == "{":
            v = self.json_value()
            if v is not None:
                return ("lit", v[0])
            return None
        name = self.rx(_FUNC)
        if name is not None:
            self.ws()
            if self.eat("("):
                args = self.args(self.term)
                if args is not None:
                    return ("fn", name, args)
            self.i = i
        return None

    def json_value(self):
        """A JSON literal in a filter, as (value,), or None."""
        s, i = self.s, self.i
        t = self.rx(_DECIMAL)
        if t is not None:
            return (float(t) if "." in t else _lit_int(t),)
        v = self.string()
        if v is not None:
            return (v,)
        for word, val in (("true", True), ("false", False), ("null", None)):
            if s.startswith(word, i):
                self.i = i + len(word)
                return (val,)
        c = s[i:i + 1]
        if c not in ("[", "{"):
            return self.miss()
        self.i += 1
        close = "]" if c == "[" else "}"
        out = [] if c == "[" else {}
        self.ws()
        if self.eat(close):
            return (out,)
        while True:
            if c == "[":
                v = self.json_value()
                if v is None:
                    break
                out.append(v[0])
            else:
                k = self.string()
                if k is None:
                    break
                self.ws()
                if not self.eat(":"):
                    break
                self.ws()
                v = self.json_value()
                if v is None:
                    break
                out[k] = v[0]
            self.ws()
            if self.eat(close):
                return (out,)
            if not self.eat(","):
                break
            self.ws()
        self.i = i
        return None


def _lit_int(t: str):
    n = int(t)
    if _I64_MIN <= n <= _I64_MAX:
        return n
    return float(n)


def _max_depth(text: str) -> int:
    """The deepest nesting of brackets and parentheses, quoted strings
    aside."""
    depth = top = 0
    quote = None
    escaped = False
    for ch in text:
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in ("'", '"'):
            quote = ch
        elif ch in ("(", "["):
            depth += 1
            if depth > top:
                top = depth
        elif ch in (")", "]") and depth:
            depth -= 1
    return top


def _parse(text: str) -> Query:
    if _max_depth(text) > _MAX_NESTING:
        raise PathError("Error occurred at position 0, JSONPath nesting too deep (max depth %d)"
                        % _MAX_NESTING)
    p = _P(text)
    p.ws()
    try:
        e = p.arith()
    except RecursionError:
        raise PathError("Error occurred at position 0, JSONPath nesting too deep (max depth %d)"
                        % _MAX_NESTING) from None
    if e is not None:
        p.ws()
        if p.i < len(text):
            p.miss()
            e = None
    if e is None:
        p.fail()
    # a lone $ path (in parentheses or not) is a path; anything else computes
    if e[0] == "$":
        return Query(e[1].steps if e[1] is not None else [], text)
    return Query([], text, e)


_CACHE = {}


def compile(text: str) -> Query:
    q = _CACHE.get(text)
    if q is not None:
        return q
    q = _parse(text)
    if len(_CACHE) > 1000:
        _CACHE.clear()
    _CACHE[text] = q
    return q
