"""JSONPath for the JSON type, as RedisJSON evaluates it: ``$`` rooted
paths with ``.name``, ``['name', ...]``, ``[index, ...]`` (negative from the
end), slices ``[start:end:step]``, wildcards ``*``, recursive descent ``..``
and filters ``[?(expr)]`` (``@`` / ``$`` operands, ``== != < <= > >= =~``,
``&& || !``, parentheses); and the legacy (RedisJSON 1.x) paths, ``.a.b``,
``a[0]``, rewritten to ``$`` paths (``to_query``).

``compile`` parses once; ``Query.run(doc)`` returns the matches as (path,
value) pairs, a path being the list of object keys (str) and array indexes
(int) from the root, in document order.
"""

from __future__ import annotations

import re
from functools import partialmethod


class PathError(Exception):
    pass


def is_jsonpath(p: str) -> bool:
    return p[:1] == "$" and (len(p) == 1 or p[1] in ".[~")


def to_query(p: str):
    """(query text, legacy) of a path argument."""
    if is_jsonpath(p):
        return p, False
    if p == ".":
        return "$", True
    if p.startswith("."):
        return "$" + p, True
    return "$." + p, True


_NAME_END = set(".[]()=!<>&|, \t")


class Query:
    __slots__ = ("steps", "text")

    def __init__(self, steps, text):
        self.steps = steps
        self.text = text

    def is_static(self) -> bool:
        return all(s[0] in ("key", "idx") and len(s[1]) == 1 for s in self.steps)

    def run(self, doc):
        cur = [([], doc)]
        for step in self.steps:
            nxt = []
            for path, v in cur:
                _apply(step, path, v, nxt, doc)
            cur = nxt
        return cur


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
            if stp is not None and stp <= 0:
                return
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


# --- filters -----------------------------------------------------------------

def _operand(op, cur, root):
    kind = op[0]
    if kind == "lit":
        return [op[1]]
    base = cur if kind == "@" else root
    return [x for _, x in Query(op[1], "").run(base)]


def _num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _cmp(a, op, b) -> bool:
    if op == "=~":
        if not isinstance(a, str) or not isinstance(b, str):
            return False
        try:
            return re.search(b, a) is not None
        except re.error:
            return False
    if _num(a) and _num(b):
        pass
    elif type(a) is not type(b):
        return op == "!="
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if isinstance(a, (list, dict)) or a is None or isinstance(a, bool):
        return False
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    return a >= b


def _truth(e, cur, root) -> bool:
    kind = e[0]
    if kind == "or":
        return _truth(e[1], cur, root) or _truth(e[2], cur, root)
    if kind == "and":
        return _truth(e[1], cur, root) and _truth(e[2], cur, root)
    if kind == "not":
        return not _truth(e[1], cur, root)
    if kind == "exists":
        return bool(_operand(e[1], cur, root))
    a = _operand(e[1], cur, root)
    b = _operand(e[3], cur, root)
    if not a or not b:
        return False
    return _cmp(a[0], e[2], b[0])


# --- parser ------------------------------------------------------------------

class _P:
    __slots__ = ("s", "i")

    def __init__(self, s):
        self.s = s
        self.i = 0

    def fail(self):
        # RedisJSON's text names the tokens its grammar expected here;
        # ours says where only
        raise PathError("Error occurred at position %d, Error at position %d: parsing error" % (self.i, self.i))

    def peek(self, n=1):
        return self.s[self.i:self.i + n]

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def eat(self, t):
        if self.s.startswith(t, self.i):
            self.i += len(t)
            return True
        return False

    def steps(self, in_filter=False):
        out = []
        while self.i < len(self.s):
            c = self.s[self.i]
            if self.s.startswith("..", self.i):
                self.i += 2
                if self.peek() == "[":
                    out.append(("desc", self.bracket()))
                elif self.eat("*"):
                    out.append(("desc", ("all",)))
                else:
                    out.append(("desc", ("key", [self.name()])))
            elif c == ".":
                self.i += 1
                if self.eat("*"):
                    out.append(("all",))
                elif self.peek() == "[":
                    out.append(self.bracket())
                else:
                    out.append(("key", [self.name()]))
            elif c == "[":
                out.append(self.bracket())
            elif in_filter:
                break
            else:
                self.fail()
        return out

    def name(self):
        j = self.i
        while self.i < len(self.s) and self.s[self.i] not in _NAME_END:
            self.i += 1
        if self.i == j:
            self.fail()
        return self.s[j:self.i]

    def string(self):
        q = self.s[self.i]
        self.i += 1
        out = []
        while True:
            if self.i >= len(self.s):
                self.fail()
            c = self.s[self.i]
            if c == "\\" and self.i + 1 < len(self.s):
                out.append(self.s[self.i + 1])
                self.i += 2
                continue
            self.i += 1
            if c == q:
                return "".join(out)
            out.append(c)

    def int_(self):
        m = re.compile(r"-?\d+").match(self.s, self.i)
        if not m:
            return None
        self.i = m.end()
        return int(m.group())

    def bracket(self):
        self.i += 1
        self.ws()
        if self.eat("*"):
            self.ws()
            if not self.eat("]"):
                self.fail()
            return ("all",)
        if self.eat("?"):
            self.ws()
            if not self.eat("("):
                self.fail()
            e = self.expr()
            self.ws()
            if not self.eat(")"):
                self.fail()
            self.ws()
            if not self.eat("]"):
                self.fail()
            return ("filter", e)
        if self.peek() in ("'", '"'):
            keys = []
            while True:
                self.ws()
                if self.peek() not in ("'", '"'):
                    self.fail()
                keys.append(self.string())
                self.ws()
                if self.eat("]"):
                    return ("key", keys)
                if not self.eat(","):
                    self.fail()
        first = self.int_()
        self.ws()
        if self.peek() == ":":
            self.i += 1
            self.ws()
            end = self.int_()
            self.ws()
            stp = None
            if self.eat(":"):
                self.ws()
                stp = self.int_()
                self.ws()
            if not self.eat("]"):
                self.fail()
            return ("slice", (first, end, stp))
        if first is None:
            self.fail()
        idx = [first]
        while self.eat(","):
            self.ws()
            n = self.int_()
            if n is None:
                self.fail()
            idx.append(n)
            self.ws()
        if not self.eat("]"):
            self.fail()
        return ("idx", idx)

    # filter expressions
    def chain(self, op, name, operand):
        """The method operand's parse, then (op operand)*, grouped from the
        left as (name, left, right)."""
        parse = getattr(self, operand)
        left = parse()
        while True:
            self.ws()
            if self.eat(op):
                left = (name, left, parse())
            else:
                return left

    # partial methods, so that a level of nesting costs as many Python
    # frames (and meets the recursion limit as soon) as before
    expr = partialmethod(chain, "||", "or", "and_")
    and_ = partialmethod(chain, "&&", "and", "unary")

    def unary(self):
        self.ws()
        if self.peek() == "!" and self.peek(2) != "!=":
            self.i += 1
            return ("not", self.unary())
        if self.peek() == "(":
            save = self.i
            self.i += 1
            try:
                e = self.expr()
                self.ws()
                if self.eat(")"):
                    return e
            except PathError:
                pass
            self.i = save
        a = self.operand()
        self.ws()
        for op in ("==", "!=", "<=", ">=", "=~", "<", ">"):
            if self.eat(op):
                self.ws()
                return ("cmp", a, op, self.operand())
        if a[0] == "lit":
            self.fail()
        return ("exists", a)

    def operand(self):
        self.ws()
        c = self.peek()
        if c in ("@", "$"):
            self.i += 1
            return (c, self.steps(in_filter=True))
        if c in ("'", '"'):
            return ("lit", self.string())
        for word, val in (("true", True), ("false", False), ("null", None)):
            if self.s.startswith(word, self.i):
                self.i += len(word)
                return ("lit", val)
        m = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?").match(self.s, self.i)
        if m:
            self.i = m.end()
            t = m.group()
            return ("lit", float(t) if ("." in t or "e" in t or "E" in t) else int(t))
        self.fail()


_CACHE = {}


def compile(text: str) -> Query:
    q = _CACHE.get(text)
    if q is not None:
        return q
    p = _P(text)
    if not p.eat("$"):
        p.fail()
    q = Query(p.steps(), text)
    if len(_CACHE) > 1000:
        _CACHE.clear()
    _CACHE[text] = q
    return q
