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

This module is the front (which arguments are JSONPath, the legacy paths'
rewriting, ``compile`` and its cache); the parser is in jsonpath_parse.py
(RedisJSON's grammar), ``Query`` and the evaluation of steps, filters and
projections in jsonpath_eval.py.
"""

from __future__ import annotations

import re

from .jsonpath_eval import PROJECTION_READONLY, PathError, Query
from .jsonpath_parse import parse

__all__ = ["PROJECTION_READONLY", "PathError", "Query", "compile", "is_jsonpath", "to_query"]


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


_CACHE = {}


def compile(text: str) -> Query:
    q = _CACHE.get(text)
    if q is not None:
        return q
    q = parse(text)
    if len(_CACHE) > 1000:
        _CACHE.clear()
    _CACHE[text] = q
    return q
