"""VSIM's FILTER expressions, with the language of Redis 8's vector sets
(expr.c): values are numbers, strings ('..' or "..",
with backslash escapes), tuples ``[1, "a"]``, ``null`` and selectors
``.field`` (a top-level field of the element's JSON attributes); operators,
from the tightest: ``!``/``not``, ``**`` (right-associative), ``* / %``,
``+ -``, comparisons ``> >= < <= == != in`` (``in``: membership in a tuple,
or a string within a string), ``and``/``&&``, ``or``/``||``.

An expression compiles into a postfix program (a shunting-yard pass that
also checks that every operator has its operands); running it against an
attribute string gives true or false.  A selector whose field is missing
(or is an object), or attributes that are not JSON, make the whole
expression false; there are no run-time errors.
"""

from __future__ import annotations

import functools
import json
import math

NUM, STR, TUPLE, SEL, OP, NULL = range(6)

# opcode -> (precedence, arity)
_OPS = {
    "(": (7, 0), ")": (7, 0), "!": (6, 1), "**": (5, 2), "*": (4, 2), "/": (4, 2), "%": (4, 2),
    "+": (3, 2), "-": (3, 2), ">": (2, 2), ">=": (2, 2), "<": (2, 2), "<=": (2, 2), "==": (2, 2),
    "!=": (2, 2), "in": (2, 2), "and": (1, 2), "or": (0, 2),
}
# spelling -> opcode
_SPELLINGS = {"(": "(", ")": ")", "!": "!", "not": "!", "**": "**", "*": "*", "/": "/", "%": "%",
              "+": "+", "-": "-", ">": ">", ">=": ">=", "<": "<", "<=": "<=", "==": "==", "!=": "!=",
              "in": "in", "and": "and", "&&": "and", "or": "or", "||": "or"}
_OP_CHARS = "+-*%/!()<>=|&"
_SEL_EXTRA = "_-"


class FilterSyntaxError(Exception):
    def __init__(self, pos: int):
        super().__init__(pos)
        self.pos = pos


def _is_sel(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c in _SEL_EXTRA)


def _isalpha(c: str) -> bool:
    return c.isascii() and c.isalpha()


def _isdigit(c: str) -> bool:
    return "0" <= c <= "9"


def _strtod(s: str):
    """C's strtod over the whole string, else None."""
    if "_" in s or not s or s != s.strip():
        s2 = s.lstrip()
        if "_" in s2 or not s2 or s2 != s2.rstrip():
            return None
        s = s2
    try:
        return float(s)
    except ValueError:
        return None


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def _unescape(text: str) -> str:
    """A string literal's escapes: \\n \\t \\r \\b \\f, and a backslash before
    any other character stands for that character."""
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


class _Lexer:
    def __init__(self, text: str):
        self.s = text
        self.p = 0

    def at(self, k=0):
        i = self.p + k
        return self.s[i] if i < len(self.s) else ""

    def number(self):
        start = self.p
        while True:
            c = self.at()
            if c and (_isdigit(c) or c in ".eE" or (self.p == start and c == "-")):
                self.p += 1
            else:
                break
        text = self.s[start:self.p]
        if len(text) >= 255:
            return None
        v = _strtod(text)
        return None if v is None else (NUM, v)

    def string(self):
        quote = self.at()
        self.p += 1
        start = self.p
        while self.p < len(self.s):
            c = self.s[self.p]
            if c == "\\" and self.p + 1 < len(self.s):
                self.p += 2
                continue
            if c == quote:
                text = self.s[start:self.p]
                self.p += 1
                if "\\" in text:
                    text = _unescape(text)
                return (STR, text)
            self.p += 1
        return None

    def selector(self):
        self.p += 1
        start = self.p
        while self.at() and _is_sel(self.at()):
            self.p += 1
        return (SEL, self.s[start:self.p])

    def tuple(self):
        self.p += 1
        items = []
        while True:
            self.skip()
            if self.at() == "]":
                self.p += 1
                return (TUPLE, items)
            c = self.at()
            if c and (_isdigit(c) or c == "-"):
                t = self.number()
            elif c in ("'", '"') and c:
                t = self.string()
            else:
                return None
            if t is None:
                return None
            items.append(t)
            self.skip()
            if self.at() == "]":
                self.p += 1
                return (TUPLE, items)
            if self.at() != ",":
                return None
            self.p += 1

    def operator(self):
        start = self.p
        while self.at() and (_isalpha(self.at()) or self.at() in _OP_CHARS):
            self.p += 1
        word = self.s[start:self.p]
        if word == "null":
            return (NULL, None)
        best = ""
        for spelling in _SPELLINGS:
            if len(spelling) > len(best) and word.startswith(spelling):
                best = spelling
        if not best:
            return None
        self.p = start + len(best)
        return (OP, _SPELLINGS[best])

    def skip(self):
        while self.p < len(self.s) and self.s[self.p] in " \t\n\v\f\r":
            self.p += 1

    def tokens(self):
        out = []
        while True:
            self.skip()
            last = out[-1] if out else None
            minus_is_number = last is None or (last[0] == OP and last[1] != ")")
            c = self.at()
            if not c:
                return out
            if _isdigit(c) or (minus_is_number and c == "-" and _isdigit(self.at(1))):
                t = self.number()
            elif c in ("'", '"'):
                t = self.string()
            elif c == "." and self.at(1) and _is_sel(self.at(1)):
                t = self.selector()
            elif c == "[":
                t = self.tuple()
            elif _isalpha(c) or c in _OP_CHARS:
                t = self.operator()
            else:
                t = None
            if t is None:
                raise FilterSyntaxError(self.p)
            out.append(t)


def compile_filter(text: str) -> list:
    """The postfix program of an expression; FilterSyntaxError (with the
    position Redis reports: where the tokenizer stopped, else 0) when it
    is not one."""
    tokens = _Lexer(text).tokens()
    program = []
    ops = []
    depth = 0       # values on the stack when the program runs

    def emit(op):
        nonlocal depth
        arity = _OPS[op][1]
        if depth < arity:
            raise FilterSyntaxError(0)
        program.append((OP, op))
        depth = depth - arity + 1

    for t in tokens:
        if t[0] != OP:
            program.append(t)
            depth += 1
            continue
        op = t[1]
        if op == "(":
            ops.append(op)
            continue
        if op == ")":
            while True:
                if not ops:
                    raise FilterSyntaxError(0)
                top = ops.pop()
                if top == "(":
                    break
                emit(top)
            continue
        prec = _OPS[op][0]
        while ops and ops[-1] != "(":
            top_prec = _OPS[ops[-1]][0]
            if top_prec < prec or (op == "**" and top_prec <= prec):
                break
            emit(ops.pop())
        ops.append(op)
    while ops:
        top = ops.pop()
        if top == "(":
            raise FilterSyntaxError(0)
        emit(top)
    if depth != 1:
        raise FilterSyntaxError(0)
    return program


def _num(t) -> float:
    if t[0] == NUM:
        return t[1]
    if t[0] == STR and len(t[1]) < 256:
        v = _strtod(t[1])
        return 0.0 if v is None else v
    return 0.0


def _truth(t) -> bool:
    if t[0] == NUM:
        return t[1] != 0
    if t[0] == STR:
        return len(t[1]) != 0
    return t[0] != NULL


def _equal(a, b) -> bool:
    if a[0] == STR and b[0] == STR:
        return a[1] == b[1]
    if a[0] == NUM and b[0] == NUM:
        return a[1] == b[1]
    if a[0] == NULL or b[0] == NULL:
        return a[0] == b[0]
    return _num(a) == _num(b)


def _from_json(v):
    """A JSON value as an expression value (None: not usable)."""
    if v is True:
        return (NUM, 1.0)
    if v is False:
        return (NUM, 0.0)
    if v is None:
        return (NULL, None)
    if isinstance(v, (int, float)):
        return (NUM, float(v))
    if isinstance(v, str):
        return (STR, v)
    if isinstance(v, list):
        items = []
        for x in v:
            t = _from_json(x)
            if t is None or t[0] not in (NUM, STR):
                return None
            items.append(t)
        return (TUPLE, items)
    return None


def _pow(a, b):
    try:
        return math.pow(a, b)
    except (OverflowError, ValueError):
        try:
            r = a ** b
            return r if isinstance(r, float) else float("nan")
        except (OverflowError, ZeroDivisionError):
            return float("inf")


def _div(a, b):
    if b == 0:
        if a == 0 or a != a:
            return float("nan")
        return math.copysign(float("inf"), a) * math.copysign(1.0, b)
    return a / b


def _mod(a, b):
    if b == 0 or math.isinf(a) or a != a or b != b:
        return float("nan")
    return math.fmod(a, b)


@functools.lru_cache(maxsize=4096)
def _parse_attrib(attrib: bytes):
    """The attributes as a dict (None when they are not a JSON object);
    cached: a filtered search tests the same elements again and again.
    The dicts are shared, never modified."""
    try:
        doc = json.loads(attrib)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def run_filter(program: list, attrib: bytes) -> bool:
    """Whether the attributes (JSON text) pass the program."""
    doc = None
    stack = []
    for t in program:
        kind = t[0]
        if kind == SEL:
            if doc is None:
                doc = _parse_attrib(attrib)
                if doc is None:
                    return False
            if not t[1] or t[1] not in doc:
                return False
            v = _from_json(doc[t[1]])
            if v is None:
                return False
            stack.append(v)
            continue
        if kind != OP:
            stack.append(t)
            continue
        op = t[1]
        b = stack.pop()
        if op == "!":
            stack.append((NUM, 0.0 if _truth(b) else 1.0))
            continue
        a = stack.pop()
        if op == "**":
            r = _pow(_num(a), _num(b))
        elif op == "*":
            r = _num(a) * _num(b)
        elif op == "/":
            r = _div(_num(a), _num(b))
        elif op == "%":
            r = _mod(_num(a), _num(b))
        elif op == "+":
            r = _num(a) + _num(b)
        elif op == "-":
            r = _num(a) - _num(b)
        elif op == ">":
            r = float(_num(a) > _num(b))
        elif op == ">=":
            r = float(_num(a) >= _num(b))
        elif op == "<":
            r = float(_num(a) < _num(b))
        elif op == "<=":
            r = float(_num(a) <= _num(b))
        elif op == "==":
            r = float(_equal(a, b))
        elif op == "!=":
            r = float(not _equal(a, b))
        elif op == "in":
            # membership in a tuple, or a string within a string
            if b[0] == TUPLE:
                r = float(any(_equal(a, x) for x in b[1]))
            else:
                r = float(a[0] == STR and b[0] == STR and a[1] in b[1])
        elif op == "and":
            r = float(_truth(a) and _truth(b))
        else:
            r = float(_truth(a) or _truth(b))
        stack.append((NUM, r))
    return bool(stack) and _truth(stack.pop())
