"""JSON commands (Redis 8's built-in RedisJSON): JSON.SET GET MGET MSET DEL
FORGET TYPE CLEAR TOGGLE MERGE NUMINCRBY NUMMULTBY NUMPOWBY STRAPPEND STRLEN
ARRAPPEND ARRINDEX ARRINSERT ARRLEN ARRPOP ARRTRIM OBJKEYS OBJLEN RESP DEBUG.

The value is a ``JsonValue`` (types/json.py) and paths are compiled by
types/jsonpath.py.  As RedisJSON: a ``$`` path (JSONPath) answers with one
entry per match (nil where a match has the wrong type); a legacy path
(``.a``, ``a[0]``) answers for its match alone (for writes, the last of its
matches) with an error when there is none.  Keyspace events are RedisJSON's
names (``json.set`` ...) in the module class ``d``; commands propagate as
called.
"""

from __future__ import annotations

import math
from functools import cmp_to_key

from ..cmdtable.registry import command
from ..errors import RedisError, arity_error
from ..keyspace import notify
from ..protocol.resp import (OK, array_header, bulk, double, integer, map_header, null,
                             simple)
from ..types import jsonpath
from ..types.json import (I64_MAX, I64_MIN, MAX_DEPTH, U64_MAX, FphaError, JsonError, JsonValue, TypedList,
                          deep_copy, depth, dumps, float_width, fpha, fpha_error_text, memory, narrow, number_kind,
                          parse,
                          remove_key, settle, strict_eq, type_name)
from ..util import parse_int, try_int

_MODULE = notify.MODULE
_GENERIC = notify.GENERIC

_NO_KEY = RedisError("ERR could not perform this operation on a key that doesn't exist")
_NO_PATH = RedisError("ERR Path does not exist")
_PROJECTION = RedisError(jsonpath.PROJECTION_READONLY)
_AT_ROOT = RedisError("ERR new objects must be created at the root")
_SYNTAX = RedisError("ERR syntax error")
_NOT_NUMBER = RedisError("ERR result is not a number")
_OVERFLOW = RedisError("ERR numeric overflow")
# redis-module-rs's argument errors, replied as they are (no ERR)
_BAD_INT = RedisError("Couldn't parse as integer")


def _expected(what: str):
    return RedisError("WRONGTYPE wrong type of path value - expected %s" % what)


def _path_or(what: str):
    return RedisError("ERR Path does not exist or %s" % what)


def _text(b: bytes) -> str:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        raise RedisError("Couldn't parse as UTF-8 string") from None


def _doc(b: bytes):
    try:
        return parse(b)
    except JsonError as e:
        raise RedisError("-" + str(e)) from None


class _Path:
    __slots__ = ("q", "legacy", "root", "proj")

    def __init__(self, arg):
        if arg is None:
            text, self.legacy = "$", True
        else:
            text, self.legacy = jsonpath.to_query(_text(arg))
        self.root = text == "$"
        try:
            self.q = jsonpath.compile(text)
        except jsonpath.PathError as e:
            raise RedisError("-" + str(e)) from None
        # a computed expression ($.a + 1, $.arr.length()): reads only
        self.proj = self.q.proj is not None

    def run(self, doc):
        if self.proj:
            raise _PROJECTION
        return self.q.run(doc)

    def project(self, doc):
        return self.q.project(doc)


def _opt_path(argv, name: str) -> _Path:
    """The path of a ``<key> [path]`` command; left out, the root as a
    legacy path."""
    if len(argv) > 3:
        raise arity_error(name)
    return _Path(argv[2] if len(argv) > 2 else None)


def _read_doc(c, argv, name: str):
    """A ``<key> [path]`` read's path and document (None when no key)."""
    path = _opt_path(argv, name)
    return path, c.db.lookup_read_typed(argv[1], JsonValue)


def _i64(b: bytes) -> int:
    return parse_int(b, _BAD_INT)


def _s(text: str) -> bytes:
    return bulk(text.encode("utf-8"))


def _arr(items) -> bytes:
    return array_header(len(items)) + b"".join(items)


def _done(c, key, event: bytes):
    db = c.db
    db.signal(key)
    notify.notify(_MODULE, event, key, db.id)
    c.server.dirty += 1


def _parent(doc, path):
    v = doc
    for k in path[:-1]:
        v = v[k]
    return v


def _set_at(jv, path, value):
    if not path:
        jv.v = value
    else:
        parent = _parent(jv.v, path)
        parent[path[-1]] = value
        if parent.__class__ is TypedList:
            settle(parent)


_MISSING = object()


def _resolve(doc, path):
    """The value at path, or _MISSING when an earlier write of the same
    command removed or replaced what led to it."""
    v = doc
    for k in path:
        if isinstance(k, int):
            if not isinstance(v, list) or k >= len(v):
                return _MISSING
        elif not isinstance(v, dict) or k not in v:
            return _MISSING
        v = v[k]
    return v


def _get_at(doc, path):
    v = doc
    for k in path:
        v = v[k]
    return v


def _mutation_cmp(a, b) -> int:
    """RedisJSON's order of the paths a write visits: where one path goes
    deeper than the other it comes first, members by name before array
    indexes, higher indexes first, so one change never moves another's
    target."""
    for x, y in zip(a, b):
        xi, yi = isinstance(x, int), isinstance(y, int)
        if xi and yi:
            if x != y:
                return -1 if x > y else 1
        elif xi:
            return 1
        elif yi:
            return -1
        elif x != y:
            return -1 if x < y else 1
    if len(a) == len(b):
        return 0
    return -1 if len(a) > len(b) else 1


def _mutation_order(paths):
    return sorted(paths, key=cmp_to_key(_mutation_cmp))


def _prune_nested(paths):
    """Drop paths inside another of the list (deleting the outer one does)."""
    out = []
    for p in sorted(paths, key=len):
        if not any(len(o) <= len(p) and p[:len(o)] == o for o in out):
            out.append(p)
    return out


def _num_reply(c, v) -> bytes:
    if v is None:
        return null(c.resp)
    if isinstance(v, bool):
        return null(c.resp)
    if isinstance(v, int):
        return integer(v)
    return double(c.resp, v)


def _read_each(c, path, jv, kind, reply, no_key, legacy_no_key, no_match, wrong):
    """The reply of a read of the values of one kind at path: a legacy
    path's one match as reply(value), a JSONPath's array of them with nil
    where a match is of another kind.  no_key (JSONPath) and legacy_no_key
    are what a missing key gives, no_match what a legacy path without a
    match gives: an error to raise, or None for a nil reply; wrong is the
    error of a legacy match of another kind."""
    if jv is None:
        err = legacy_no_key if path.legacy else no_key
        if err is None:
            return null(c.resp)
        raise err
    res = path.run(jv.v)
    if path.legacy:
        if not res:
            if no_match is None:
                return null(c.resp)
            raise no_match
        v = res[0][1]
        if not isinstance(v, kind):
            raise wrong
        return reply(v)
    return _arr([reply(v) if isinstance(v, kind) else null(c.resp) for _, v in res])


# ---------------------------------------------------------------------------
# JSON.SET / JSON.MSET / JSON.MERGE
# ---------------------------------------------------------------------------

def _set_targets(doc, path: _Path, nx: bool, xx: bool):
    """The paths to write for JSON.SET at a non-root path of an existing
    document: existing matches (unless NX), else the one new member a
    static path names (unless XX)."""
    if not nx:
        found = [p for p, _ in path.run(doc)]
        if found:
            # a match inside another is replaced with it
            return _prune_nested(found), []
    if xx:
        return [], []
    if path.proj:
        raise _PROJECTION
    q = path.q
    if not q.is_static():
        raise RedisError("Err wrong static path")
    if not q.steps:
        raise RedisError("Err path must end with object key to set")
    last = q.steps[-1]
    if last[0] == "idx":
        if not jsonpath.Query(q.steps, q.text).run(doc):
            raise RedisError("ERR array index out of range")
        return [], []
    parents = jsonpath.Query(q.steps[:-1], q.text).run(doc)
    k = last[1][0]
    adds = [(p, k) for p, v in parents if isinstance(v, dict) and k not in v]
    return [], adds


def _apply_set(jv, value, found, adds) -> tuple:
    """Write value at each path (found) and as each new member (adds), as
    RedisJSON applies a JSON.SET / JSON.MSET: a target it cannot write (the
    document would nest too deep, or an earlier write of the command removed
    its place) is skipped and the others still written.  (number of
    targets written, whether all were)."""
    d = depth(value)
    n = 0
    for p in found:
        if len(p) + d >= MAX_DEPTH or _resolve(jv.v, p) is _MISSING:
            continue
        _set_at(jv, p, _copy(value))
        n += 1
    for p, k in adds:
        parent = _resolve(jv.v, p) if p else jv.v
        if len(p) + 1 + d >= MAX_DEPTH or not isinstance(parent, dict):
            continue
        parent[k] = _copy(value)
        n += 1
    return n, n == len(found) + len(adds)


_copy = deep_copy
_TOO_DEEP = RedisError("ERR recursion limit exceeded")


def _check_depth(at: int, value):
    """A value placed ``at`` levels below the root must keep the document
    within RedisJSON's nesting limit."""
    if at + depth(value) >= MAX_DEPTH:
        raise _TOO_DEEP


_FPHA = {b"BF16", b"FP16", b"FP32", b"FP64"}


def _check_format(b: bytes):
    """The value of JSON.SET's and JSON.MERGE's FORMAT (case counts)."""
    if b not in (b"STRING", b"JSON", b"BSON"):
        raise RedisError("ERR wrong format")


def _create(c, key, path: _Path, value, event: bytes):
    """A write to a key that does not exist: a new document, made only at
    the root."""
    if not path.root:
        raise _AT_ROOT
    c.db.set_key(key, JsonValue(value), keepttl=True)
    _done(c, key, event)
    return OK


@command("json.set")
def json_set(c, argv):
    key = argv[1]
    path = _Path(argv[2])
    raw = argv[3]
    nx = xx = False
    ftype = None
    i = 4
    while i < len(argv):
        a = argv[i].upper()
        if a == b"NX" and not (nx or xx):
            nx = True
        elif a == b"XX" and not (nx or xx):
            xx = True
        elif a == b"FORMAT":
            if i + 1 >= len(argv):
                raise arity_error("json.set")
            i += 1
            _check_format(argv[i])
        elif a == b"FPHA":
            if i + 1 >= len(argv):
                raise arity_error("json.set")
            i += 1
            ftype = argv[i].upper()
            if ftype not in _FPHA:
                raise RedisError("ERR invalid FPHA type")
            ftype = ftype.decode()
        else:
            raise _SYNTAX
        i += 1
    db = c.db
    jv = db.lookup_write_typed(key, JsonValue)
    value = _doc(raw)
    if ftype is not None:
        # numeric arrays narrowed to the width (ijson's typed arrays)
        try:
            value = fpha(value, ftype)
        except FphaError as e:
            raise RedisError("-" + fpha_error_text(raw.decode("utf-8"), e.path, ftype)) from None
    if jv is None:
        if xx:
            return null(c.resp)
        return _create(c, key, path, value, b"json.set")
    if path.root:
        if nx:
            return null(c.resp)
        jv.v = value
        _done(c, key, b"json.set")
        return OK
    found, adds = _set_targets(jv.v, path, nx, xx)
    if not found and not adds:
        return null(c.resp)
    n, every = _apply_set(jv, value, found, adds)
    if n:
        _done(c, key, b"json.set")
    # OK only when every target was written (RedisJSON)
    return OK if every else null(c.resp)


@command("json.mset")
def json_mset(c, argv):
    if len(argv) < 4 or (len(argv) - 1) % 3:
        raise arity_error("json.mset")
    db = c.db
    plan = []
    for i in range(1, len(argv), 3):
        key = argv[i]
        jv = db.lookup_write_typed(key, JsonValue)
        path = _Path(argv[i + 1])
        if path.root:
            targets = None
        elif jv is not None:
            targets = _set_targets(jv.v, path, False, False)
        else:
            raise _AT_ROOT
        value = _doc(argv[i + 2])
        plan.append((key, targets, value))
    every = True
    for key, targets, value in plan:
        if targets is None:
            jv = db.lookup_write_typed(key, JsonValue)
            if jv is None:
                db.set_key(key, JsonValue(value), keepttl=True)
            else:
                jv.v = value
            _done(c, key, b"json.mset")
        else:
            jv = db.lookup_write_typed(key, JsonValue)
            found, adds = targets
            # the places were found before any write: an earlier triple may
            # have removed one (that triple's write fails, the rest go on)
            n, ok = _apply_set(jv, value, found, adds)
            if n:
                _done(c, key, b"json.mset")
            every = every and ok and n > 0
    return OK if every else null(c.resp)


def _merge(target, patch):
    """RFC 7396 merge patch."""
    if not isinstance(patch, dict):
        return _copy(patch)
    target = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            if k in target:
                remove_key(target, k)
        else:
            target[k] = _merge(target.get(k), v)
    return target


@command("json.merge")
def json_merge(c, argv):
    key = argv[1]
    path = _Path(argv[2])
    i = 4
    while i < len(argv):
        if argv[i].upper() == b"FORMAT" and i + 1 < len(argv):
            _check_format(argv[i + 1])
            i += 2
        else:
            raise _SYNTAX
    db = c.db
    jv = db.lookup_write_typed(key, JsonValue)
    value = _doc(argv[3])
    if jv is None:
        # a new document is the value as given (its nulls kept)
        return _create(c, key, path, value, b"json.merge")
    if path.root:
        m = _merge(jv.v, value)
        # a merge that would nest too deep is not made (RedisJSON still
        # answers OK at the root)
        if depth(m) < MAX_DEPTH:
            jv.v = m
        _done(c, key, b"json.merge")
        return OK
    found = [p for p, _ in path.run(jv.v)]
    if found:
        merged = False
        for p in found:
            # a match an earlier one removed, or one the merge would nest
            # too deep, is skipped: OK when any was merged, else nil
            cur = _resolve(jv.v, p)
            if cur is _MISSING:
                continue
            m = _merge(cur, value)
            if len(p) + depth(m) >= MAX_DEPTH:
                continue
            _set_at(jv, p, m)
            merged = True
        if not merged:
            return null(c.resp)
        _done(c, key, b"json.merge")
        return OK
    found, adds = _set_targets(jv.v, path, True, False)
    if not adds:
        return null(c.resp)
    # a new member takes the value as given
    for p, _k in adds:
        _check_depth(len(p) + 1, value)
    _apply_set(jv, value, [], adds)
    _done(c, key, b"json.merge")
    return OK


# ---------------------------------------------------------------------------
# JSON.GET / JSON.MGET / JSON.RESP / JSON.TYPE
# ---------------------------------------------------------------------------

_GET_OPTS = (b"INDENT", b"NEWLINE", b"SPACE")


def _values(p: _Path, doc):
    """The values a path selects, or those a projection computes."""
    if p.proj:
        return p.project(doc)
    return [v for _, v in p.run(doc)]


@command("json.get")
def json_get(c, argv):
    fmt = {}
    paths = []
    names = []
    i = 2
    n = len(argv)
    while i < n:
        a = argv[i]
        u = a.upper() if len(a) <= 8 else a
        if u in _GET_OPTS:
            if i + 1 >= n:
                raise arity_error("json.get")
            fmt[u] = _text(argv[i + 1])
            i += 2
            continue
        if u == b"FORMAT":
            if c.resp < 3 and not paths:
                raise RedisError("ERR FORMAT argument is not supported on RESP2")
            if i + 1 >= n:
                raise arity_error("json.get")
            f = argv[i + 1].upper()
            if f not in (b"STRING", b"EXPAND1", b"EXPAND"):
                raise RedisError("ERR wrong reply format")
            fmt[b"FORMAT"] = f
            i += 2
            continue
        if u == b"NOESCAPE":
            i += 1
            continue
        # the path as given names its entry in a multi-path reply
        names.append(_text(a))
        paths.append(_Path(a))
        i += 1
    if not paths:
        paths.append(_Path(None))
    jv = c.db.lookup_read_typed(argv[1], JsonValue)
    if jv is None:
        return null(c.resp)
    ind, nl, sp = fmt.get(b"INDENT"), fmt.get(b"NEWLINE"), fmt.get(b"SPACE")
    doc = jv.v
    form = fmt.get(b"FORMAT", b"STRING")
    if c.resp >= 3 and form != b"STRING":
        # one array per path, of its matches as RESP3 values (legacy
        # paths too)
        expand = form == b"EXPAND"
        return _arr([_arr([_resp3(c, v, expand, ind, nl, sp) for v in _values(p, doc)]) for p in paths])
    legacy = all(p.legacy for p in paths)
    if len(paths) == 1:
        p = paths[0]
        if p.proj:
            # a projection answers with the list of what it computed
            return _s(dumps(p.project(doc), ind, nl, sp))
        res = p.run(doc)
        if legacy:
            if not res:
                raise _NO_PATH
            return _s(dumps(res[0][1], ind, nl, sp))
        return _s(dumps([v for _, v in res], ind, nl, sp))
    out = {}
    for p, name in zip(paths, names):
        if p.proj:
            out[name] = p.project(doc)
            continue
        res = p.run(doc)
        if legacy:
            if not res:
                raise _NO_PATH
            out[name] = res[0][1]
        else:
            out[name] = [v for _, v in res]
    return _s(dumps(out, ind, nl, sp))


@command("json.mget")
def json_mget(c, argv):
    if len(argv) < 3:
        raise arity_error("json.mget")
    _text(argv[-1])
    try:
        path = _Path(argv[-1])
    except RedisError:
        # as RedisJSON: a path that does not parse fails each key (nil)
        path = None
    db = c.db
    out = []
    for key in argv[1:-1]:
        v = db.lookup_read(key)
        if v is None or v.__class__ is not JsonValue or path is None:
            out.append(null(c.resp))
            continue
        if path.proj:
            out.append(_s(dumps(path.project(v.v))))
            continue
        res = path.run(v.v)
        if path.legacy:
            out.append(_s(dumps(res[0][1])) if res else null(c.resp))
        else:
            out.append(_s(dumps([x for _, x in res])))
    return _arr(out)


# the replies of false and true: RESP3 booleans, or JSON.RESP's simple strings
_RESP3_BOOLS = (b"#f\r\n", b"#t\r\n")
_RESP_BOOLS = (simple(b"false"), simple(b"true"))


def _scalar(c, v, bools):
    """The reply of a scalar (bools: those of false and true), or None
    for an array or object."""
    if v is None:
        return null(c.resp)
    if v is True or v is False:
        return bools[1] if v else bools[0]
    if isinstance(v, int):
        return integer(v)
    if isinstance(v, float):
        return double(c.resp, v)
    if isinstance(v, str):
        return _s(v)
    return None


def _resp3(c, v, expand, ind=None, nl=None, sp=None) -> bytes:
    """A value as RESP3 (FORMAT EXPAND: containers as arrays and maps;
    EXPAND1: containers as their JSON text)."""
    r = _scalar(c, v, _RESP3_BOOLS)
    if r is not None:
        return r
    if not expand:
        return _s(dumps(v, ind, nl, sp))
    if isinstance(v, list):
        return _arr([_resp3(c, x, True) for x in v])
    return map_header(c.resp, len(v)) + b"".join(_s(k) + _resp3(c, x, True) for k, x in v.items())


def _resp(c, v) -> bytes:
    r = _scalar(c, v, _RESP_BOOLS)
    if r is not None:
        return r
    if isinstance(v, list):
        return array_header(len(v) + 1) + simple(b"[") + b"".join(_resp(c, x) for x in v)
    parts = [simple(b"{")]
    for k, x in v.items():
        parts.append(_s(k))
        parts.append(_resp(c, x))
    return _arr(parts)


@command("json.resp")
def json_resp(c, argv):
    path, jv = _read_doc(c, argv, "json.resp")
    if path.proj and jv is not None:
        return _arr([_resp(c, v) for v in path.project(jv.v)])
    # every value is an object: no match is of the wrong kind
    return _read_each(c, path, jv, object, lambda v: _resp(c, v), None, None, _NO_PATH, None)


@command("json.type")
def json_type(c, argv):
    path, jv = _read_doc(c, argv, "json.type")
    if path.legacy:
        if path.proj:
            raise _PROJECTION
        if jv is None:
            r = null(c.resp)
        else:
            res = path.run(jv.v)
            r = _s(type_name(res[0][1])) if res else null(c.resp)
    else:
        if jv is None:
            r = null(c.resp)
        else:
            r = _arr([_s(type_name(v)) for _, v in path.run(jv.v)])
    if c.resp >= 3:
        return array_header(1) + r
    return r


# ---------------------------------------------------------------------------
# JSON.DEL / JSON.FORGET / JSON.CLEAR / JSON.TOGGLE
# ---------------------------------------------------------------------------

def _del(c, argv, name):
    key = argv[1]
    path = _opt_path(argv, name)
    db = c.db
    jv = db.lookup_write_typed(key, JsonValue)
    if jv is None:
        return integer(0)
    if path.root:
        deleted = 1
    else:
        found = _prune_nested([p for p, _ in path.run(jv.v) if p])
        for p in _mutation_order(found):
            parent = _parent(jv.v, p)
            if isinstance(parent, dict):
                remove_key(parent, p[-1])
            else:
                del parent[p[-1]]
        deleted = len(found)
    if deleted:
        v = jv.v
        # the whole document, or a container emptied by the deletion,
        # goes with its key (RedisJSON deletes it; no "del" event)
        if path.root or (isinstance(v, (dict, list)) and not v):
            db.delete(key)
        else:
            db.signal(key)
        notify.notify(_MODULE, b"json.del", key, db.id)
        c.server.dirty += 1
    return integer(deleted)


@command("json.del")
def json_del(c, argv):
    return _del(c, argv, "json.del")


@command("json.forget")
def json_forget(c, argv):
    return _del(c, argv, "json.forget")


def _write_root(c, key):
    jv = c.db.lookup_write_typed(key, JsonValue)
    if jv is None:
        raise _NO_KEY
    return jv


def _write_targets(c, key, path, kind, what):
    """The document to write (its key must exist), the matches of path and
    the paths of those of the given kind; a legacy path must have one
    (else "Path does not exist or <what>")."""
    jv = _write_root(c, key)
    res = path.run(jv.v)
    hits = [p for p, v in res if isinstance(v, kind)]
    if path.legacy and not hits:
        raise _path_or(what)
    return jv, res, hits


def _array_targets(c, key, path):
    return _write_targets(c, key, path, list, "not an array")


@command("json.clear")
def json_clear(c, argv):
    key = argv[1]
    path = _opt_path(argv, "json.clear")
    jv = _write_root(c, key)
    n = 0
    for p, _ in path.run(jv.v):
        v = _resolve(jv.v, p)
        if isinstance(v, (dict, list)) and v:
            v.clear()
            n += 1
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and v != 0:
            _set_at(jv, p, 0)
            n += 1
    if n:
        _done(c, key, b"json.clear")
    return integer(n)


@command("json.toggle")
def json_toggle(c, argv):
    key = argv[1]
    path = _opt_path(argv, "json.toggle")
    jv = _write_root(c, key)
    res = path.run(jv.v)
    if path.legacy:
        hits = [p for p, v in res if v is True or v is False]
        if not hits:
            raise _path_or("not a bool")
        last = None
        for p in hits:
            last = not _get_at(jv.v, p)
            _set_at(jv, p, last)
        _done(c, key, b"json.toggle")
        return _s("true" if last else "false")
    out = []
    changed = False
    for p, v in res:
        if v is True or v is False:
            _set_at(jv, p, not v)
            out.append(integer(0 if v else 1))
            changed = True
        else:
            out.append(null(c.resp))
    if changed:
        _done(c, key, b"json.toggle")
    return _arr(out)


# ---------------------------------------------------------------------------
# JSON.NUMINCRBY / JSON.NUMMULTBY
# ---------------------------------------------------------------------------

def _isnum(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _num_text(v) -> str:
    return dumps(v)


def _int_op(op, v, by, top=I64_MAX):
    """The integer result of v op by, or None when it overflows (beyond
    top) (or, for a power, when the exponent is negative or beyond 32
    bits)."""
    if op == "add":
        r = v + by
    elif op == "mul":
        r = v * by
    else:
        if not 0 <= by < 1 << 32:
            return None
        if v in (0, 1, -1) or by == 0:
            r = v ** (by if by < 2 else 2 + (by & 1))
        elif by > 64:
            return None
        else:
            r = v ** by
    return r if I64_MIN <= r <= top else None


def _float_op(op, v, by):
    try:
        if op == "add":
            r = v + by
        elif op == "mul":
            r = v * by
        else:
            r = math.pow(v, by)
    except (OverflowError, ValueError, ZeroDivisionError):
        return None
    return r if math.isfinite(r) else None


def _num_op(c, argv, name, event, op):
    if len(argv) != 4:
        raise arity_error(name)
    key = argv[1]
    path = _Path(argv[2])
    jv = _write_root(c, key)
    by = _doc(argv[3])
    if not _isnum(by):
        raise RedisError("-bad input number")
    res = path.run(jv.v)
    results = []
    for p, v in res:
        if not _isnum(v):
            results.append(None)
            continue
        # an array item is held as ijson holds the array: a typed integer
        # array computes up to u64, a typed float array keeps its width
        parent = _parent(jv.v, p) if p else None
        kind = number_kind(parent) if isinstance(parent, list) else ""
        if kind == "int" and isinstance(by, int):
            r = _int_op(op, v, by, U64_MAX)
            if r is None:
                raise _OVERFLOW
        elif isinstance(v, int) and isinstance(by, int) and I64_MIN <= by <= I64_MAX and v <= I64_MAX:
            r = _int_op(op, v, by)
            if r is None:
                raise _OVERFLOW
        else:
            r = _float_op(op, float(v), float(by))
            if r is None:
                raise _OVERFLOW if kind == "float" else _NOT_NUMBER
            if kind:
                ft = parent.ftype if parent.__class__ is TypedList else None
                if ft is None:
                    # ijson holds an array of floats at the narrowest width
                    # that keeps them all (FPHA or not): made explicit here
                    ft = float_width(parent)
                    if ft is not None and ft != "FP64":
                        parent = TypedList(parent, ft)
                        _set_at(jv, p[:-1], parent)
                if ft is not None and ft != "FP64":
                    # the result is stored (and answered) at the width
                    # when it fits, else the array widens to hold it
                    r = narrow(r, ft) or r
        results.append(r)
    hits = [(p, r) for (p, _), r in zip(res, results) if r is not None]
    if path.legacy and c.resp < 3 and not hits:
        raise _path_or("does not contains a number")
    for p, r in hits:
        _set_at(jv, p, r)
    if hits:
        _done(c, key, event)
    if c.resp >= 3:
        return _arr([_num_reply(c, r) for r in results])
    if path.legacy:
        return _s(_num_text(hits[-1][1]))
    return _s(dumps(results))


@command("json.numincrby")
def json_numincrby(c, argv):
    return _num_op(c, argv, "json.numincrby", b"json.numincrby", "add")


@command("json.nummultby")
def json_nummultby(c, argv):
    return _num_op(c, argv, "json.nummultby", b"json.nummultby", "mul")


@command("json.numpowby")
def json_numpowby(c, argv):
    return _num_op(c, argv, "json.numpowby", b"json.numpowby", "pow")


# ---------------------------------------------------------------------------
# JSON.STRAPPEND / JSON.STRLEN
# ---------------------------------------------------------------------------

@command("json.strappend")
def json_strappend(c, argv):
    if len(argv) > 4:
        raise arity_error("json.strappend")
    key = argv[1]
    if len(argv) == 4:
        path, raw = _Path(argv[2]), argv[3]
    else:
        path, raw = _Path(None), argv[2]
    jv, res, hits = _write_targets(c, key, path, str, "not a string")
    if hits:
        add = _doc(raw)
        if not isinstance(add, str):
            raise _expected("string")
    out = []
    for p, v in res:
        if isinstance(v, str):
            nv = _get_at(jv.v, p) + add
            _set_at(jv, p, nv)
            out.append(len(nv.encode("utf-8")))
        else:
            out.append(None)
    if hits:
        _done(c, key, b"json.strappend")
    if path.legacy:
        return integer([x for x in out if x is not None][-1])
    return _arr([null(c.resp) if x is None else integer(x) for x in out])


@command("json.strlen")
def json_strlen(c, argv):
    path, jv = _read_doc(c, argv, "json.strlen")
    return _read_each(c, path, jv, str, lambda v: integer(len(v.encode("utf-8"))),
                      _NO_KEY, None, _NO_PATH, _expected("string"))


# ---------------------------------------------------------------------------
# arrays
# ---------------------------------------------------------------------------

def _list_reply(c, path, res, vals):
    """JSONPath's array of integers (nil where no array) or a legacy
    path's last value."""
    if path.legacy:
        return integer(vals[-1])
    out = []
    it = iter(vals)
    for _, v in res:
        out.append(integer(next(it)) if isinstance(v, list) else null(c.resp))
    return _arr(out)


def _lens_reply(c, key, event, path, res, hits, lens):
    """After a write in mutation order that left lens[tuple(p)] the length
    of each array hit: the event when anything was hit, then the reply (a
    legacy path's is the length of the array written last)."""
    vals = [lens[tuple(p)] for p in hits]
    if hits:
        _done(c, key, event)
    if path.legacy:
        return integer(lens[tuple(_mutation_order(hits)[-1])])
    return _list_reply(c, path, res, vals)


@command("json.arrappend")
def json_arrappend(c, argv):
    if len(argv) < 4:
        raise arity_error("json.arrappend")
    key = argv[1]
    path = _Path(argv[2])
    values = [_doc(a) for a in argv[3:]]
    jv, res, hits = _array_targets(c, key, path)
    for p in hits:
        for x in values:
            _check_depth(len(p) + 1, x)
    vals = []
    for p in hits:
        arr = _get_at(jv.v, p)
        arr.extend(_copy(x) for x in values)
        if arr.__class__ is TypedList:
            settle(arr)
        vals.append(len(arr))
    if hits:
        _done(c, key, b"json.arrappend")
    return _list_reply(c, path, res, vals)


def _norm_start(i, n):
    return max(0, n + i) if i < 0 else min(i, n - 1)


def _json_eq(a, b) -> bool:
    # an integer never equals a float (RedisJSON compares the kinds first)
    return strict_eq(a, b)


@command("json.arrindex")
def json_arrindex(c, argv):
    if len(argv) < 4 or len(argv) > 6:
        raise arity_error("json.arrindex")
    path = _Path(argv[2])
    want = _doc(argv[3])
    start = _i64(argv[4]) if len(argv) > 4 else 0
    end = _i64(argv[5]) if len(argv) > 5 else 0
    jv = c.db.lookup_read_typed(argv[1], JsonValue)

    def find(arr):
        n = len(arr)
        if n == 0:
            return -1
        s = _norm_start(start, n)
        e = n if end == 0 else (max(0, n + end) if end < 0 else min(end, n))
        for i in range(s, e):
            if _json_eq(arr[i], want):
                return i
        return -1

    return _read_each(c, path, jv, list, lambda v: integer(find(v)),
                      _NO_PATH, _NO_PATH, _NO_PATH, _expected("array"))


@command("json.arrinsert")
def json_arrinsert(c, argv):
    if len(argv) < 5:
        raise arity_error("json.arrinsert")
    key = argv[1]
    path = _Path(argv[2])
    idx = _i64(argv[3])
    values = [_doc(a) for a in argv[4:]]
    jv, res, hits = _array_targets(c, key, path)
    for p in hits:
        arr = _get_at(jv.v, p)
        n = len(arr)
        j = n + idx if idx < 0 else idx
        if not 0 <= j <= n:
            raise RedisError("ERR index out of bounds")
        for x in values:
            _check_depth(len(p) + 1, x)
    lens = {}
    for p in _mutation_order(hits):
        arr = _get_at(jv.v, p)
        j = len(arr) + idx if idx < 0 else idx
        arr[j:j] = [_copy(x) for x in values]
        if arr.__class__ is TypedList:
            settle(arr)
        lens[tuple(p)] = len(arr)
    return _lens_reply(c, key, b"json.arrinsert", path, res, hits, lens)


@command("json.arrlen")
def json_arrlen(c, argv):
    path, jv = _read_doc(c, argv, "json.arrlen")
    return _read_each(c, path, jv, list, lambda v: integer(len(v)),
                      _NO_KEY, None, _NO_PATH, _path_or("not an array"))


@command("json.arrpop")
def json_arrpop(c, argv):
    key = argv[1]
    rest = list(argv[2:])
    form = b"STRINGS"
    if len(rest) >= 2 and rest[0].upper() == b"FORMAT":
        form = rest[1].upper()
        if form not in (b"STRINGS", b"EXPAND1", b"EXPAND"):
            raise RedisError("ERR wrong reply format")
        if c.resp < 3:
            raise RedisError("ERR FORMAT argument is not supported on RESP2")
        rest = rest[2:]
    path = _Path(rest[0] if rest else None)
    if len(rest) > 1:
        index = try_int(rest[1])
        if index is None:
            index = -1
    else:
        index = I64_MAX if not rest else -1
    if path.legacy and form != b"STRINGS":
        raise RedisError("Legacy paths are supported only with FORMAT STRINGS")
    jv, res, hits = _array_targets(c, key, path)
    popped = {}
    for p in _mutation_order(hits):
        arr = _get_at(jv.v, p)
        if arr:
            popped[tuple(p)] = arr.pop(_norm_start(index, len(arr)))
    if popped:
        _done(c, key, b"json.arrpop")
    if path.legacy:
        last = tuple(_mutation_order(hits)[-1])
        return _s(dumps(popped[last])) if last in popped else null(c.resp)
    out = []
    for p, v in res:
        t = tuple(p)
        if t not in popped:
            out.append(null(c.resp))
        elif form == b"STRINGS":
            out.append(_s(dumps(popped[t])))
        else:
            out.append(_resp3(c, popped[t], form == b"EXPAND"))
    return _arr(out)


@command("json.arrtrim")
def json_arrtrim(c, argv):
    if len(argv) != 5:
        raise arity_error("json.arrtrim")
    key = argv[1]
    path = _Path(argv[2])
    start = _i64(argv[3])
    stop = _i64(argv[4])
    jv, res, hits = _array_targets(c, key, path)
    lens = {}
    for p in _mutation_order(hits):
        arr = _get_at(jv.v, p)
        n = len(arr)
        e = _norm_start(stop, n)
        s = _norm_start(start, n) if (start < 0 or start < n) else e + 1
        if s > e or n == 0:
            del arr[:]
        else:
            arr[:] = arr[s:e + 1]
        lens[tuple(p)] = len(arr)
    return _lens_reply(c, key, b"json.arrtrim", path, res, hits, lens)


# ---------------------------------------------------------------------------
# objects, JSON.DEBUG
# ---------------------------------------------------------------------------

@command("json.objkeys")
def json_objkeys(c, argv):
    path, jv = _read_doc(c, argv, "json.objkeys")
    return _read_each(c, path, jv, dict, lambda v: _arr([_s(k) for k in v]),
                      _NO_KEY, None, None, _path_or("not an object"))


@command("json.objlen")
def json_objlen(c, argv):
    path, jv = _read_doc(c, argv, "json.objlen")
    return _read_each(c, path, jv, dict, lambda v: integer(len(v)),
                      _path_or("not an object"), None, None, _expected("object"))


@command("json.debug")
def json_debug(c, argv):
    sub = argv[1].upper()
    if sub == b"MEMORY":
        if len(argv) < 3 or len(argv) > 4:
            raise arity_error("json.debug|memory")
        path = _Path(argv[3] if len(argv) > 3 else None)
        jv = c.db.lookup_read_typed(argv[2], JsonValue)
        if path.legacy:
            if jv is None:
                return integer(0)
            res = path.run(jv.v)
            if not res:
                raise _NO_PATH
            return integer(memory(res[0][1]))
        if jv is None:
            return array_header(0)
        return _arr([integer(memory(v)) for _, v in path.run(jv.v)])
    if sub == b"DEFRAG_INFO":
        # RedisJSON's defragmentation counters: we never defragment
        return map_header(c.resp, 3) + b"".join(
            _s(k) + integer(0) for k in ("defrag_started", "defrag_ended", "keys_defrag"))
    if sub == b"HELP":
        return _arr([_s("MEMORY <key> [path] - reports memory usage"),
                     _s("HELP                - this message")])
    raise RedisError("ERR unknown subcommand - try `JSON.DEBUG HELP`")
