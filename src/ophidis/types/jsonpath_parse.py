"""JSONPath's parser, as RedisJSON 8.10 reads paths and filter expressions
(types/jsonpath.py is the front, jsonpath_eval.py the evaluation):
``parse`` turns a path's text into a ``Query``, its filters and
projections into expression nodes, or raises ``PathError``.

The grammar is RedisJSON's (a PEG: the first alternative that matches is
taken, spaces allowed between tokens).
"""

from __future__ import annotations

import re

from .jsonpath_eval import I64_MAX, I64_MIN, PathError, Query

_MAX_NESTING = 128


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
            b = self.bracket()
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
            b = self.bracket()
            if b is not None:
                return b
            self.i = start
            return None
        b = self.bracket()
        if b is not None:
            return b
        self.i = start
        return None

    def bracket(self):
        """``[``, the bracket's contents and ``]``: the step, or None (after a
        ``[``, the position is then left after it)."""
        if not self.eat("["):
            return None
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
            b = self.slice_end()
            return ("slice", (a, b, self.step()))
        if not self.eat(":"):
            return None
        b = self.slice_end()
        return ("slice", (None, b, self.step()))

    def slice_end(self):
        """After a slice's first ``:``: its end, or None with the position
        left after the colon."""
        after = self.i
        self.ws()
        b = self.number()
        if b is None:
            self.i = after
        return b

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
        return (tag, self.more(item, [a]))

    def more(self, item, out):
        """After a list's first item: each further ``, item()`` appended to
        out (a trailing comma is left unread); out."""
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
            return out

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
            self.more(parse, out)
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
    if I64_MIN <= n <= I64_MAX:
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


def parse(text: str) -> Query:
    """The Query of a path's (or a projection's) text; PathError when it
    does not parse or nests too deep."""
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
