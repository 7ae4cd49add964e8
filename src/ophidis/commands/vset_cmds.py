"""Vector set commands (Redis 8's built-in vector sets): VADD VREM VSIM
VCARD VDIM VEMB VGETATTR VSETATTR VINFO VLINKS VRANDMEMBER VISMEMBER
VRANGE.

The value is a ``VectorSet`` (types/vectorset.py) over an HNSW graph
(types/hnsw.py); FILTER expressions are types/vsetexpr.py.  Replies,
errors and the order of the checks are those of Redis 8's vector sets
module.  VADD's CAS and VSIM's NOTHREAD are accepted and change nothing:
every command runs on the event loop.  As the module, the commands emit no
keyspace events of their own (creating a key gives "new"); a changed set
propagates as called.
"""

from __future__ import annotations

import random

import numpy as np

from ..cmdtable.registry import command
from ..errors import RedisError, arity_error
from ..protocol.resp import (EMPTY_ARRAY, array_header, boolean, bulk, double, integer, map_header,
                             null, null_array, simple)
from ..types import hnsw
from ..types.vectorset import MAX_DIM, VectorSet
from ..types.vsetexpr import FilterSyntaxError, compile_filter, run_filter
from ..util import LLONG_MAX, try_int
from .numparse import string2d

DEFAULT_EF_BUILD = 200
DEFAULT_EF_SEARCH = 100
DEFAULT_COUNT = 10
MAX_EF = 1000000             # EF's bound, in VADD and VSIM

_BAD_VECTOR = RedisError("ERR invalid vector specification")


def _int_option(arg, name: str, lo: int, hi: int) -> int:
    """A VADD/VSIM option's integer in [lo, hi], else ``ERR invalid <name>``."""
    v = try_int(arg)
    if v is None or v < lo or v > hi:
        raise RedisError("ERR invalid " + name)
    return v


def _parse_vector(argv, start: int, allow_reduce: bool):
    """[REDUCE dim] FP32 blob | VALUES n v1 .. vn at argv[start:]: the
    vector (float32), the REDUCE dimension (0 for none) and the number of
    arguments used; None when it is not a valid specification."""
    argc = len(argv)
    used = 0
    reduce_dim = 0
    if allow_reduce and argc > start + 2 and argv[start].upper() == b"REDUCE":
        reduce_dim = try_int(argv[start + 1])
        if reduce_dim is None or reduce_dim <= 0:
            return None
        start += 2
        used += 2
    if start >= argc:
        return None
    fmt = argv[start].upper()
    if fmt == b"FP32":
        if argc < start + 2:
            return None
        blob = argv[start + 1]
        if len(blob) % 4 or len(blob) < 4 or len(blob) // 4 > MAX_DIM:
            return None
        vec = np.frombuffer(bytes(blob), dtype="<f4").astype(np.float32)
        used += 2
    elif fmt == b"VALUES":
        if argc < start + 2:
            return None
        n = try_int(argv[start + 1])
        if n is None or n < 1 or n > MAX_DIM or argc < start + 2 + n:
            return None
        vals = []
        for a in argv[start + 2:start + 2 + n]:
            v = string2d(a)
            if v is None:
                return None
            vals.append(v)
        with np.errstate(over="ignore"):
            vec = np.array(vals, dtype=np.float32)
        used += n + 2
    else:
        return None
    if reduce_dim and reduce_dim > len(vec):
        return None
    return vec, reduce_dim, used


def _vset_read(c, key):
    return c.db.lookup_read_typed(key, VectorSet)


def _element(c, argv):
    """(the vector set at argv[1], its element argv[2]'s node): (None, None)
    without the set, (the set, None) without the element."""
    vs = _vset_read(c, argv[1])
    if vs is None:
        return None, None
    return vs, vs.elements.get(argv[2])


def _changed(c, key):
    c.db.signal(key)
    c.server.dirty += 1


# ---------------------------------------------------------------------------
# VADD / VREM / VSETATTR
# ---------------------------------------------------------------------------

@command("vadd")
def vadd(c, argv):
    parsed = _parse_vector(argv, 2, True)
    if parsed is None:
        raise _BAD_VECTOR
    vec, reduce_dim, used = parsed
    argc = len(argv)
    if argc - 2 - used < 1:
        raise arity_error("vadd")
    item = argv[2 + used]
    ef = DEFAULT_EF_BUILD
    M = hnsw.DEFAULT_M
    quant = hnsw.QUANT_Q8
    attrib = None
    j = 3 + used
    while j < argc:
        opt = argv[j].upper()
        if opt == b"CAS":
            pass
        elif opt == b"EF" and j + 1 < argc:
            ef = _int_option(argv[j + 1], "EF", 1, MAX_EF)
            j += 1
        elif opt == b"M" and j + 1 < argc:
            M = _int_option(argv[j + 1], "M", hnsw.MIN_M, hnsw.MAX_M)
            j += 1
        elif opt == b"SETATTR" and j + 1 < argc:
            attrib = bytes(argv[j + 1])
            j += 1
        elif opt == b"NOQUANT":
            quant = hnsw.QUANT_NONE
        elif opt == b"BIN":
            quant = hnsw.QUANT_BIN
        elif opt == b"Q8":
            quant = hnsw.QUANT_Q8
        else:
            raise RedisError("ERR invalid option after element")
        j += 1
    key = argv[1]
    db = c.db
    vs = db.lookup_write_typed(key, VectorSet)
    dim = len(vec)
    if vs is None:
        vs = VectorSet(reduce_dim or dim, quant, M)
        if reduce_dim:
            vs.set_projection(dim)
            vec = vs.project(vec)
        vs.add(vec, bytes(item), attrib, ef)
        db.add(key, vs)
        _changed(c, key)
        return boolean(c.resp, True)
    g = vs.graph
    if g.quant != quant:
        raise RedisError("ERR asked quantization mismatch with existing vector set")
    if g.M != M:
        raise RedisError("ERR asked M value mismatch with existing vector set")
    if (vs.proj is None and g.dim != dim) or (vs.proj is not None and g.dim != reduce_dim):
        raise RedisError("ERR Vector dimension mismatch - got %d but set has %d" % (dim, g.dim))
    if reduce_dim:
        if vs.proj is None:
            raise RedisError("ERR cannot add projection to existing set without projection")
        if reduce_dim != g.dim:
            raise RedisError("ERR projection dimension mismatch with existing set")
    if vs.proj is not None:
        if dim != vs.proj_input:
            raise RedisError("ERR Input dimension mismatch for projection - got %d but projection expects %d"
                             % (dim, vs.proj_input))
        vec = vs.project(vec)
    added = vs.add(vec, bytes(item), attrib, ef)
    # an update changes the set too: propagated (Redis's module replicates
    # only an addition)
    _changed(c, key)
    return boolean(c.resp, added)


@command("vrem")
def vrem(c, argv):
    key = argv[1]
    db = c.db
    vs = db.lookup_write_typed(key, VectorSet)
    if vs is None or not vs.remove(bytes(argv[2])):
        return boolean(c.resp, False)
    if not vs.elements:
        db.delete(key)
    else:
        db.signal(key)
    c.server.dirty += 1
    return boolean(c.resp, True)


@command("vsetattr")
def vsetattr(c, argv):
    key = argv[1]
    vs = c.db.lookup_write_typed(key, VectorSet)
    if vs is None:
        return boolean(c.resp, False)
    node = vs.elements.get(argv[2])
    if node is None:
        return boolean(c.resp, False)
    vs.set_attrib(node, bytes(argv[3]))
    _changed(c, key)
    return boolean(c.resp, True)


# ---------------------------------------------------------------------------
# VSIM
# ---------------------------------------------------------------------------

@command("vsim")
def vsim(c, argv):
    argc = len(argv)
    vs = _vset_read(c, argv[1])
    if vs is None:
        return EMPTY_ARRAY
    g = vs.graph
    kind = argv[2].upper()
    if kind == b"ELE":
        node = vs.elements.get(argv[3])
        if node is None:
            raise RedisError("ERR element not found in set")
        vec = g.node_vector(node)
        j = 4
    else:
        parsed = _parse_vector(argv, 2, False)
        if parsed is None:
            raise _BAD_VECTOR
        vec, _, used = parsed
        if vs.proj is not None and len(vec) != g.dim:
            if len(vec) != vs.proj_input:
                raise RedisError("ERR Input dimension mismatch for projection - got %d but projection expects %d"
                                 % (len(vec), vs.proj_input))
            vec = vs.project(vec)
        j = 2 + used
    if len(vec) != g.dim:
        raise RedisError("ERR Vector dimension mismatch - got %d but set has %d" % (len(vec), g.dim))
    withscores = withattribs = truth = False
    count = DEFAULT_COUNT
    ef = 0
    epsilon = 2.0
    filter_ef = 0
    program = None
    while j < argc:
        opt = argv[j].upper()
        if opt == b"WITHSCORES":
            withscores = True
        elif opt == b"WITHATTRIBS":
            withattribs = True
        elif opt == b"TRUTH":
            truth = True
        elif opt == b"NOTHREAD":
            pass
        elif opt == b"COUNT" and j + 1 < argc:
            count = _int_option(argv[j + 1], "COUNT", 1, LLONG_MAX)
            j += 1
        elif opt == b"EPSILON" and j + 1 < argc:
            epsilon = string2d(argv[j + 1])
            if epsilon is None or epsilon <= 0:
                raise RedisError("ERR invalid EPSILON")
            j += 1
        elif opt == b"EF" and j + 1 < argc:
            ef = _int_option(argv[j + 1], "EF", 1, MAX_EF)
            j += 1
        elif opt == b"FILTER-EF" and j + 1 < argc:
            filter_ef = _int_option(argv[j + 1], "FILTER-EF", 1, LLONG_MAX)
            j += 1
        elif opt == b"FILTER" and j + 1 < argc:
            raw = bytes(argv[j + 1])
            text = raw.decode("utf-8", "surrogateescape")
            try:
                program = compile_filter(text)
            except FilterSyntaxError as e:
                pos = e.pos if e.pos < len(text) else 0
                raise RedisError("ERR syntax error in FILTER expression near: %s"
                                 % text[pos:].encode("utf-8", "surrogateescape").decode("utf-8", "replace")) from None
            j += 1
        else:
            raise RedisError("ERR syntax error in VSIM command")
        j += 1
    if filter_ef == 0:
        filter_ef = count * 100
    if ef == 0:
        ef = DEFAULT_EF_SEARCH
    if count > ef:
        ef = count
    if ef > len(g):
        ef = len(g)
    accept = None
    if program is not None:
        def accept(node, program=program):
            return node.attrib is not None and run_filter(program, node.attrib)
    q = g.query(vec)
    if truth:
        found = g.ground_truth(q, ef, accept)
    else:
        found = g.search(q, ef, accept, filter_ef if accept is not None else 0)
    resp = c.resp
    out = []
    n = 0
    for d, node in found[:count]:
        if hnsw.clamp(d) / 2 > epsilon:
            break
        n += 1
        out.append(bulk(node.item))
        if resp >= 3 and withscores and withattribs:
            out.append(b"*2\r\n")
        if withscores:
            out.append(double(resp, 1.0 - hnsw.clamp(d) / 2.0))
        if withattribs:
            out.append(bulk(node.attrib) if node.attrib is not None else null(resp))
    if resp >= 3 and (withscores or withattribs):
        head = map_header(resp, n)
    else:
        head = array_header(n * (1 + withscores + withattribs))
    return head + b"".join(out)


# ---------------------------------------------------------------------------
# Reads
# ---------------------------------------------------------------------------

@command("vdim")
def vdim(c, argv):
    vs = _vset_read(c, argv[1])
    if vs is None:
        raise RedisError("ERR key does not exist")
    return integer(vs.graph.dim)


@command("vcard")
def vcard(c, argv):
    vs = _vset_read(c, argv[1])
    return integer(len(vs) if vs is not None else 0)


@command("vemb")
def vemb(c, argv):
    raw = False
    for a in argv[3:]:
        if a.upper() == b"RAW":
            raw = True
        else:
            raise RedisError("ERR invalid option")
    vs, node = _element(c, argv)
    resp = c.resp
    if node is None:
        return null(resp)
    g = vs.graph
    if raw:
        q8 = g.quant == hnsw.QUANT_Q8
        out = [array_header(3 + q8), simple(hnsw.QUANT_NAMES[g.quant]), bulk(g.raw_vector(node)),
               double(resp, node.l2)]
        if q8:
            out.append(double(resp, node.qrange))
        return b"".join(out)
    vec = g.node_vector(node).tolist()
    return array_header(len(vec)) + b"".join([double(resp, x) for x in vec])


@command("vgetattr")
def vgetattr(c, argv):
    _vs, node = _element(c, argv)
    if node is None or node.attrib is None:
        return null(c.resp)
    return bulk(node.attrib)


@command("vismember")
def vismember(c, argv):
    vs = _vset_read(c, argv[1])
    return boolean(c.resp, vs is not None and argv[2] in vs.elements)


@command("vlinks")
def vlinks(c, argv):
    withscores = False
    if len(argv) > 4:
        raise arity_error("vlinks")
    if len(argv) == 4:
        if argv[3].upper() != b"WITHSCORES":
            raise arity_error("vlinks")
        withscores = True
    vs, node = _element(c, argv)
    resp = c.resp
    if node is None:
        return null(resp)
    g = vs.graph
    out = [array_header(node.level + 1)]
    for layer in range(node.level, -1, -1):
        links = node.links[layer]
        if withscores:
            out.append(map_header(resp, len(links)))
            for other, d in zip(links, g.node_dists(node, links)):
                out.append(bulk(other.item))
                out.append(double(resp, 1.0 - hnsw.clamp(d) / 2.0))
        else:
            out.append(array_header(len(links)))
            out.extend(bulk(other.item) for other in links)
    return b"".join(out)


@command("vinfo")
def vinfo(c, argv):
    vs = _vset_read(c, argv[1])
    resp = c.resp
    if vs is None:
        return null_array(resp)
    g = vs.graph
    fields = (
        (b"quant-type", simple(hnsw.QUANT_NAMES[g.quant])),
        (b"hnsw-m", integer(g.M)),
        (b"vector-dim", integer(g.dim)),
        (b"projection-input-dim", integer(vs.proj_input)),
        (b"size", integer(len(g))),
        (b"max-level", integer(g.max_level)),
        (b"attributes-count", integer(vs.numattribs)),
        (b"vset-uid", integer(vs.uid)),
        (b"hnsw-max-node-uid", integer(g.last_id)),
    )
    out = [map_header(resp, len(fields))]
    for k, v in fields:
        out.append(simple(k))
        out.append(v)
    return b"".join(out)


@command("vrandmember")
def vrandmember(c, argv):
    if len(argv) > 3:
        raise arity_error("vrandmember")
    with_count = len(argv) == 3
    count = 1
    if with_count:
        count = try_int(argv[2])
        if count is None:
            raise RedisError("ERR COUNT value is not an integer")
        if count == 0:
            return EMPTY_ARRAY
    vs = _vset_read(c, argv[1])
    if vs is None or not vs.elements:
        return EMPTY_ARRAY if with_count else null(c.resp)
    rows = vs.graph.rows
    if not with_count:
        return bulk(random.choice(rows).item)
    if count < 0:
        picks = [random.choice(rows) for _ in range(-count)]
    else:
        picks = random.sample(rows, min(count, len(rows)))
    return array_header(len(picks)) + b"".join([bulk(n.item) for n in picks])


def _range_op(arg: bytes):
    """A VRANGE boundary: ("-"|"+"|None, inclusive, element) or None."""
    if not arg:
        return None
    if arg == b"-":
        return ("-", True, b"")
    if arg == b"+":
        return ("+", True, b"")
    if arg[:1] in (b"[", b"(") and len(arg) > 1:
        return (None, arg[:1] == b"[", bytes(arg[1:]))
    return None


@command("vrange")
def vrange(c, argv):
    if len(argv) > 5:
        raise arity_error("vrange")
    count = -1
    if len(argv) == 5:
        count = try_int(argv[4])
        if count is None:
            raise RedisError("ERR invalid COUNT value")
    start = _range_op(argv[2])
    if start is None:
        raise RedisError("ERR invalid start range format")
    end = _range_op(argv[3])
    if end is None:
        raise RedisError("ERR invalid end range format")
    if start[0] == "+" or end[0] == "-":
        raise RedisError("ERR '-' can only be used as first argument, '+' only as second")
    vs = _vset_read(c, argv[1])
    if vs is None:
        return EMPTY_ARRAY
    out = []
    for item in sorted(vs.elements):
        if start[0] is None and (item < start[2] or (item == start[2] and not start[1])):
            continue
        if count >= 0 and len(out) >= count:
            break
        if end[0] is None and (item > end[2] or (item == end[2] and not end[1])):
            break
        out.append(bulk(item))
    return array_header(len(out)) + b"".join(out)
