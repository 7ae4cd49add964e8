"""The vector set type (Redis 8's built-in vector sets): elements (strings)
each with a vector and optional JSON attributes, indexed by an HNSW graph
(types/hnsw.py) for similarity search.

``VectorSet`` holds the graph, the element -> node map, and the optional
projection matrix of REDUCE (a deterministic Hadamard-sign matrix scaled
by 1/sqrt(input dim), as Redis's, so that a replica computes the same one;
it is saved with the set anyway).

Persistence is Redis 8's module record "vectorset", encoding version 0, in
its order: dimension, element count, quantization | M << 8, flags
(projection, attributes), the projection (input dimension, float32 matrix
bytes), then per node: element, attributes (when any node has some; ""
for none), the stored vector's bytes and the node's parameters (id, level
and format version, per layer the link count, link capacity, linked ids
and the farthest link's distance and index, then the norm and the Q8
range as float bits).
"""

from __future__ import annotations

import numpy as np

from ..keyspace.db import ENCODINGS, register_module_type
from . import hnsw
from .hnsw import HNSW, GraphError

MAX_DIM = 1 << 16
FLAG_PROJECTION = 1
FLAG_ATTRIBS = 2

_next_uid = [0]


def projection_matrix(input_dim: int, output_dim: int) -> np.ndarray:
    """output_dim x input_dim: +-1/sqrt(input_dim), the sign being the parity
    of the set bits of row & column."""
    i = np.arange(output_dim, dtype=np.uint32)[:, None]
    j = np.arange(input_dim, dtype=np.uint32)[None, :]
    parity = np.bitwise_count(i & j) & 1
    scale = np.float32(1.0) / np.float32(np.sqrt(np.float64(input_dim)))
    return np.where(parity == 0, scale, -scale).astype(np.float32)


class VectorSet:
    __slots__ = ("graph", "elements", "proj", "proj_input", "numattribs", "uid")
    MODULE_NAME = "vectorset"
    MODULE_ENCVER = 0
    MODULE_ENCVERS = (0,)

    def __init__(self, dim: int, quant: int = hnsw.QUANT_Q8, M: int = hnsw.DEFAULT_M):
        self.graph = HNSW(dim, quant, M)
        self.elements = {}       # element bytes -> hnsw.Node
        self.proj = None         # float32 matrix (reduced dim x input dim) or None
        self.proj_input = 0
        self.numattribs = 0
        self.uid = _next_uid[0]
        _next_uid[0] += 1

    def __len__(self):
        return len(self.elements)

    @property
    def dim(self) -> int:
        return self.graph.dim

    def set_projection(self, input_dim: int):
        self.proj = projection_matrix(input_dim, self.graph.dim)
        self.proj_input = input_dim

    def project(self, vec: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return (self.proj @ vec).astype(np.float32)

    # -- elements --------------------------------------------------------------

    def add(self, vec: np.ndarray, item: bytes, attrib, ef: int) -> bool:
        """Insert item (True), or replace its vector (False: it was there;
        its attributes change only when ``attrib`` is given, "" removing
        them)."""
        node = self.elements.get(item)
        if node is not None:
            old = node.attrib
            self.graph.delete(node)
            node = self.graph.insert(vec, item, old, ef)
            self.elements[item] = node
            if attrib is not None:
                self.set_attrib(node, attrib)
            return False
        node = self.graph.insert(vec, item, attrib, ef)
        self.elements[item] = node
        if attrib is not None:
            self.numattribs += 1
        return True

    def remove(self, item: bytes) -> bool:
        node = self.elements.pop(item, None)
        if node is None:
            return False
        if node.attrib is not None:
            self.numattribs -= 1
        self.graph.delete(node)
        return True

    def set_attrib(self, node, attrib: bytes):
        """New attributes for a node ("" removes them)."""
        if node.attrib is not None:
            self.numattribs -= 1
        if attrib:
            node.attrib = attrib
            self.numattribs += 1
        else:
            node.attrib = None

    # -- the type's hooks ------------------------------------------------------

    def copy(self):
        w = _ListWriter()
        self.rdb_save(w)
        return VectorSet.rdb_load(_ListReader(w.items), 0)

    def rdb_save(self, w):
        g = self.graph
        w.uint(g.dim)
        w.uint(len(g))
        w.uint((g.quant & 0xFF) | ((g.M & 0xFFFF) << 8))
        flags = (FLAG_PROJECTION if self.proj is not None else 0) | (FLAG_ATTRIBS if self.numattribs else 0)
        w.uint(flags)
        if self.proj is not None:
            w.uint(self.proj_input)
            w.string(self.proj.astype("<f4").tobytes())
        # newest first, as Redis walks its node list
        for node in sorted(g.rows, key=_node_id, reverse=True):
            w.string(node.item)
            if self.numattribs:
                w.string(node.attrib if node.attrib is not None else b"")
            w.string(g.raw_vector(node))
            params = g.node_params(node)
            w.uint(len(params))
            for p in params:
                w.uint(p)

    @classmethod
    def rdb_load(cls, r, encver):
        dim = r.uint()
        count = r.uint()
        config = r.uint()
        quant, M = config & 0xFF, (config >> 8) & 0xFFFF
        if not 0 < dim <= MAX_DIM or quant not in hnsw.QUANT_NAMES:
            raise ValueError("bad vector set header")
        vs = cls(dim, quant, M or hnsw.DEFAULT_M)
        flags = r.uint()
        if flags & FLAG_PROJECTION:
            input_dim = r.uint()
            if input_dim == 0 or input_dim > MAX_DIM or dim > input_dim:
                raise ValueError("bad projection")
            blob = r.string()
            if len(blob) != 4 * input_dim * dim:
                raise ValueError("bad projection")
            vs.proj = np.frombuffer(bytes(blob), dtype="<f4").reshape(dim, input_dim).astype(np.float32)
            vs.proj_input = input_dim
        g = vs.graph
        try:
            for _ in range(count):
                item = bytes(r.string())
                attrib = None
                if flags & FLAG_ATTRIBS:
                    attrib = bytes(r.string()) or None
                vector = bytes(r.string())
                params = [r.uint() for _ in range(r.uint())]
                if item in vs.elements:
                    raise ValueError("duplicate element")
                node = g.load_node(vector, params, item, attrib)
                vs.elements[item] = node
                if attrib is not None:
                    vs.numattribs += 1
            g.resolve()
        except GraphError as e:
            raise ValueError(str(e)) from None
        return vs

    def mem_usage(self) -> int:
        """An estimate in the spirit of Redis's: nodes, vectors, links,
        elements and attributes."""
        g = self.graph
        n = len(g)
        size = 200
        if self.proj is not None:
            size += self.proj.nbytes
        if not n:
            return size
        size += n * (120 + g.quant_bytes() + 8 * 2 * g.M + (8 * g.M) // 3 + 32)
        sample = g.rows[:20]
        size += sum(len(x.item) + 16 for x in sample) * n // len(sample)
        if self.numattribs:
            with_attr = [x for x in sample if x.attrib is not None]
            avg = (sum(len(x.attrib) + 16 for x in with_attr) // len(with_attr)) if with_attr else 64
            size += avg * self.numattribs
        return size

    def digest(self) -> bytes:
        g = self.graph
        parts = [b"%d:%d" % (len(g), g.dim)]
        for node in sorted(g.rows, key=_node_item):
            parts.append(g.raw_vector(node))
            parts.append(node.item)
            if node.attrib is not None:
                parts.append(node.attrib)
        return b"\x00".join(parts)


def _node_id(node):
    return node.id


def _node_item(node):
    return node.item


class _ListWriter:
    """ModuleWriter's interface into a plain list (COPY)."""

    __slots__ = ("items",)

    def __init__(self):
        self.items = []

    def uint(self, x):
        self.items.append(x)

    string = uint


class _ListReader:
    __slots__ = ("items", "pos")

    def __init__(self, items):
        self.items = items
        self.pos = 0

    def uint(self):
        self.pos += 1
        return self.items[self.pos - 1]

    string = uint


register_module_type(VectorSet, b"vectorset")
ENCODINGS[VectorSet] = lambda v, cfg: b"raw"
