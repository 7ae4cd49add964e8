"""A Hierarchical Navigable Small World graph (Malkov and Yashunin) for
vector sets, organised as Redis 8's vector sets keep theirs (hnsw.c):

- vectors are L2-normalized on insert, so the distance is ``1 - dot``
  (cosine distance, 0 for the same direction, 2 for opposite ones), and are
  stored quantized: int8 with a per-vector range (Q8, the default), sign
  bits (BIN, distance from the Hamming distance) or float32 (NOQUANT);
- every link is bidirectional, so a node can really be deleted: its
  neighbours lose the link and are relinked among themselves;
- a node's level is drawn with probability 0.25 per extra level (at most
  16); layer 0 holds up to 2*M links, the upper layers up to M;
- nodes have increasing ids, which the RDB layout uses for the links.

The vectors of all nodes live in one numpy matrix (a row per node, kept
dense: a deleted row is filled with the last one), so the distances from
one vector to a node's neighbours, or to the whole set (TRUTH), are one
vectorized operation.  The graph walk itself is Python.
"""

from __future__ import annotations

import heapq
import random
import struct

import numpy as np

QUANT_NONE = 0
QUANT_Q8 = 1
QUANT_BIN = 2
QUANT_NAMES = {QUANT_NONE: b"f32", QUANT_Q8: b"int8", QUANT_BIN: b"bin"}

DEFAULT_M = 16
MIN_M = 4
MAX_M = 4096
MAX_LEVEL = 16
LEVEL_P = 0.25
EF_CONSTRUCTION = 200
SER_VERSION = 1          # node serialization version written (worst-link info)

_F32 = np.float32
_INF = float("inf")
_f2u = struct.Struct("<f")
_u32 = struct.Struct("<I")


def f32_bits(x: float) -> int:
    return _u32.unpack(_f2u.pack(x))[0]


def bits_f32(b: int) -> float:
    return _f2u.unpack(_u32.pack(b & 0xFFFFFFFF))[0]


def clamp(d: float) -> float:
    """A distance as reported (scores): within [0, 2]."""
    return 0.0 if d < 0.0 else (2.0 if d > 2.0 else d)


class GraphError(Exception):
    """A serialized graph that does not hold together."""


class Node:
    __slots__ = ("id", "level", "links", "row", "l2", "qrange", "item", "attrib")

    def __init__(self, id, level, item, attrib):
        self.id = id
        self.level = level
        self.links = [[] for _ in range(level + 1)]
        self.row = -1
        self.l2 = 1.0
        self.qrange = 0.0
        self.item = item
        self.attrib = attrib


def normalize(vec: np.ndarray):
    """The unit vector of vec (float32) and its L2 norm; a zero vector stays
    as it is (norm 1, as Redis leaves it)."""
    l2 = float(np.sqrt(np.dot(vec, vec)))
    if l2 == 0.0:
        return vec, 1.0
    l2 = float(_F32(l2))
    return (vec / _F32(l2)).astype(_F32), l2


def quantize_q8(vec: np.ndarray):
    """int8 quants of a unit vector and its range (the largest magnitude):
    each component scaled to [-127, 127] and rounded half away from zero."""
    m = float(np.max(np.abs(vec))) if len(vec) else 0.0
    if m == 0.0:
        return np.zeros(len(vec), dtype=np.int8), 0.0
    x = vec * (_F32(127.0) / _F32(m))
    q = np.trunc(x + np.copysign(_F32(0.5), x)).astype(np.int8)
    return q, m


def quantize_bin(vec: np.ndarray, words: int):
    """Sign bits (1 for a positive component) in 64-bit little-endian words."""
    packed = np.packbits(vec > 0, bitorder="little")
    out = np.zeros(words * 8, dtype=np.uint8)
    out[:len(packed)] = packed
    return out.view("<u8")


class HNSW:
    __slots__ = ("dim", "quant", "M", "nodes", "rows", "vecs", "fvecs", "entry", "max_level",
                 "last_id", "width")

    def __init__(self, dim: int, quant: int = QUANT_Q8, M: int = DEFAULT_M):
        self.dim = dim
        self.quant = quant
        self.M = M
        self.nodes = {}          # id -> Node
        self.rows = []           # row -> Node (dense)
        if quant == QUANT_NONE:
            dtype, self.width = _F32, dim
        elif quant == QUANT_Q8:
            dtype, self.width = np.int8, dim
        else:
            dtype, self.width = np.dtype("<u8"), (dim + 63) // 64
        # vecs: the stored form (RDB, VEMB RAW); fvecs: the same as float32
        # for the arithmetic (Q8: quants * range / 127; BIN: +1/-1), one
        # matrix product giving the dot products the distances come from
        self.vecs = np.zeros((8, self.width), dtype=dtype)
        self.fvecs = self.vecs if quant == QUANT_NONE else np.zeros((8, dim), dtype=_F32)
        self.entry = None
        self.max_level = 0
        self.last_id = 0

    # -- sizes -------------------------------------------------------------

    def __len__(self):
        return len(self.rows)

    def quant_bytes(self) -> int:
        if self.quant == QUANT_NONE:
            return self.dim * 4
        if self.quant == QUANT_Q8:
            return self.dim
        return self.width * 8

    def cap(self, layer: int) -> int:
        return self.M * 2 if layer == 0 else self.M

    # -- vector storage ------------------------------------------------------

    def encode(self, vec: np.ndarray):
        """A float32 vector (the set's dimension) as stored: the normalized
        and quantized form, its range (Q8) and its L2 norm."""
        # huge or infinite components give NaNs and zeros as C's float
        # arithmetic does (Redis's too), without numpy's warnings
        with np.errstate(all="ignore"):
            unit, l2 = normalize(vec)
            if self.quant == QUANT_Q8:
                q, r = quantize_q8(unit)
                return q, r, l2
            if self.quant == QUANT_BIN:
                return quantize_bin(unit, self.width), 0.0, l2
            return unit, 0.0, l2

    def compute_form(self, q, qrange: float) -> np.ndarray:
        """The float32 vector the distances are computed with."""
        if self.quant == QUANT_Q8:
            return q.astype(_F32) * _F32(qrange / 127.0)
        if self.quant == QUANT_BIN:
            bits = np.unpackbits(np.ascontiguousarray(q).view(np.uint8), bitorder="little")[:self.dim]
            return np.where(bits == 1, _F32(1.0), _F32(-1.0)).astype(_F32)
        return q

    def query(self, vec: np.ndarray) -> np.ndarray:
        """A query vector as the graph compares it (normalized and quantized
        as the stored ones: hnsw.c quantizes its queries too)."""
        q, qrange, _ = self.encode(vec)
        return self.compute_form(q, qrange)

    def _store(self, node: Node, q, qrange: float):
        n = len(self.rows)
        if n == len(self.vecs):
            self.vecs = np.concatenate([self.vecs, np.zeros_like(self.vecs)])
            self.fvecs = self.vecs if self.quant == QUANT_NONE else np.concatenate(
                [self.fvecs, np.zeros_like(self.fvecs)])
        self.vecs[n] = q
        if self.quant != QUANT_NONE:
            self.fvecs[n] = self.compute_form(q, qrange)
        node.row = n
        node.qrange = qrange
        self.rows.append(node)

    def _unstore(self, node: Node):
        r = node.row
        last = self.rows.pop()
        n = len(self.rows)
        if last is not node:
            self.vecs[r] = self.vecs[n]
            if self.quant != QUANT_NONE:
                self.fvecs[r] = self.fvecs[n]
            self.rows[r] = last
            last.row = r
        node.row = -1
        if len(self.vecs) > 64 and n < len(self.vecs) // 4:
            half = len(self.vecs) // 2
            self.vecs = self.vecs[:half].copy()
            self.fvecs = self.vecs if self.quant == QUANT_NONE else self.fvecs[:half].copy()

    def raw_vector(self, node: Node) -> bytes:
        """The stored vector's bytes (VEMB RAW, RDB)."""
        return self.vecs[node.row].tobytes()

    def node_vector(self, node: Node) -> np.ndarray:
        """The approximate original vector: dequantized and scaled back by
        the norm (BIN: +1/-1 components, not scaled)."""
        row = self.vecs[node.row]
        if self.quant == QUANT_BIN:
            return self.fvecs[node.row].copy()
        with np.errstate(all="ignore"):
            if self.quant == QUANT_Q8:
                v = (row.astype(_F32) * _F32(node.qrange)) / _F32(127.0)
            else:
                v = row.copy()
            return (v * _F32(node.l2)).astype(_F32)

    # -- distances -------------------------------------------------------------

    def _finish(self, dot: np.ndarray) -> np.ndarray:
        """Distances from dot products: 1 - dot; BIN: the share of
        differing signs, times 2.  Rounding may step a hair outside
        [0, 2]: ``clamp`` is for the figures shown."""
        if self.quant == QUANT_BIN:
            return (_F32(self.dim) - dot) / _F32(self.dim)
        return _F32(1.0) - dot

    def dists(self, qf: np.ndarray, rows) -> np.ndarray:
        """Distances (float32) from the compute-form vector qf to the given
        rows (a list of row numbers or a slice)."""
        return self._finish(self.fvecs[rows] @ qf)

    def node_dists(self, node: Node, others) -> list:
        if not others:
            return []
        return self.dists(self.fvecs[node.row], [o.row for o in others]).tolist()

    def distance(self, a: Node, b: Node) -> float:
        return self.node_dists(a, [b])[0]

    def _pairwise(self, rows) -> np.ndarray:
        m = self.fvecs[rows]
        return self._finish(m @ m.T)

    # -- search ----------------------------------------------------------------

    def search_layer(self, q, ep: Node, ef: int, layer: int, accept=None, max_effort=0):
        """The (up to) ef nodes nearest to q found from ep on one layer, as
        a list of (distance, node) nearest first.  With ``accept`` (a
        predicate on nodes) only accepted nodes are results, the walk goes
        on through the others, and ``max_effort`` bounds the candidates
        expanded."""
        if accept is None and ef >= 32:
            return self._walk_wide(q, ep, ef, layer)
        heappush, heappop, heapreplace = heapq.heappush, heapq.heappop, heapq.heapreplace
        fvecs = self.fvecs
        binary = self.quant == QUANT_BIN
        dim = _F32(self.dim)
        one = _F32(1.0)
        d0 = float(self.dists(q, [ep.row])[0])
        visited = {ep}
        cand = [(d0, ep.id, ep)]
        res = []
        if accept is None or accept(ep):
            res.append((-d0, ep.id, ep))
        effort = 1
        while cand:
            if accept is not None and max_effort and effort >= max_effort:
                break
            cd, _, cur = heappop(cand)
            effort += 1
            if len(res) >= ef and cd > -res[0][0]:
                break
            fresh = [n for n in cur.links[layer] if n not in visited]
            if not fresh:
                continue
            visited.update(fresh)
            dot = fvecs[[n.row for n in fresh]] @ q
            ds = ((dim - dot) / dim if binary else one - dot).tolist()
            furthest = -res[0][0] if res else _INF
            if accept is None:
                for n, d in zip(fresh, ds):
                    if d < furthest or len(res) < ef:
                        heappush(cand, (d, n.id, n))
                        if len(res) < ef:
                            heappush(res, (-d, n.id, n))
                        else:
                            heapreplace(res, (-d, n.id, n))
                        furthest = -res[0][0]
            else:
                for n, d in zip(fresh, ds):
                    if d < furthest or len(cand) < ef:
                        heappush(cand, (d, n.id, n))
                    if (d < furthest or len(res) < ef) and accept(n):
                        if len(res) < ef:
                            heappush(res, (-d, n.id, n))
                        else:
                            heapreplace(res, (-d, n.id, n))
                        furthest = -res[0][0]
        out = [(-nd, i, n) for nd, i, n in res]
        out.sort()
        return [(d, n) for d, _, n in out]

    def _walk_wide(self, q, ep: Node, ef: int, layer: int, batch: int = 4):
        """search_layer without a filter, expanding up to ``batch`` of the
        nearest candidates at a time (those still within the results'
        bound): the same walk in fewer, larger vector products."""
        heappush, heappop, heapreplace = heapq.heappush, heapq.heappop, heapq.heapreplace
        fvecs = self.fvecs
        binary = self.quant == QUANT_BIN
        dim = _F32(self.dim)
        one = _F32(1.0)
        d0 = float(self.dists(q, [ep.row])[0])
        visited = {ep}
        cand = [(d0, ep.id, ep)]
        res = [(-d0, ep.id, ep)]
        while cand:
            furthest = -res[0][0]
            full = len(res) >= ef
            fresh = []
            taken = 0
            while cand and taken < batch:
                if full and cand[0][0] > furthest:
                    break
                cur = heappop(cand)[2]
                taken += 1
                for n in cur.links[layer]:
                    if n not in visited:
                        visited.add(n)
                        fresh.append(n)
            if not taken:
                break
            if not fresh:
                continue
            dot = fvecs[[n.row for n in fresh]] @ q
            ds = ((dim - dot) / dim if binary else one - dot).tolist()
            for n, d in zip(fresh, ds):
                if d < furthest or len(res) < ef:
                    heappush(cand, (d, n.id, n))
                    if len(res) < ef:
                        heappush(res, (-d, n.id, n))
                    else:
                        heapreplace(res, (-d, n.id, n))
                    furthest = -res[0][0]
        out = [(-nd, i, n) for nd, i, n in res]
        out.sort()
        return [(d, n) for d, _, n in out]

    def _descend(self, q, to_layer: int):
        ep = self.entry
        for layer in range(self.max_level, to_layer, -1):
            ep = self.search_layer(q, ep, 1, layer)[0][1]
        return ep

    def search(self, q, k: int, accept=None, max_effort=0):
        """k approximate nearest neighbours of the query q (``query()``), as
        (distance, node) nearest first."""
        if self.entry is None or k <= 0:
            return []
        ep = self._descend(q, 0)
        return self.search_layer(q, ep, k, 0, accept, max_effort)[:k]

    def ground_truth(self, q, k: int, accept=None):
        """The exact k nearest (linear scan: VSIM TRUTH)."""
        n = len(self.rows)
        if not n or k <= 0:
            return []
        d = self.dists(q, slice(0, n))
        order = np.argsort(d, kind="stable")
        out = []
        rows = self.rows
        for i in order.tolist():
            node = rows[i]
            if accept is None or accept(node):
                out.append((float(d[i]), node))
                if len(out) >= k:
                    break
        return out

    # -- insertion -------------------------------------------------------------

    def _select(self, cands, m: int) -> list:
        """Neighbour selection (the paper's heuristic): a candidate is kept
        when it is nearer to the new node than to every one kept so far;
        the nearest left over fill the remaining places."""
        if len(cands) <= m:
            return [n for _, n in cands]
        cands = cands[:4 * m]
        pw = self._pairwise([n.row for _, n in cands]).tolist()
        keep = []
        for i, (d, _) in enumerate(cands):
            row = pw[i]
            for k in keep:
                if row[k] <= d:
                    break
            else:
                keep.append(i)
                if len(keep) >= m:
                    break
        if len(keep) < m:
            chosen = set(keep)
            for i in range(len(cands)):
                if i not in chosen:
                    keep.append(i)
                    if len(keep) >= m:
                        break
        return [cands[i][1] for i in keep]

    def _link(self, a: Node, b: Node, layer: int, d_ab: float, force=False, limit=0) -> bool:
        """Link a and b both ways on layer.  A full b gives up its least
        useful link for a when a is worth more (``_least_useful``; with
        ``force`` its farthest link, whatever a is worth), and the node it
        dropped is linked to a when it is left with few links: the graph
        stays connected.  ``limit``: at most that many links for a (a new
        node gets M on every layer, as Redis's)."""
        al, bl = a.links[layer], b.links[layer]
        cap = self.cap(layer)
        room = min(cap, limit) if limit else cap
        if a in bl or len(al) >= room:
            return False
        if len(bl) < cap:
            al.append(b)
            bl.append(a)
            return True
        if len(al) + 2 > room:
            return False
        w = self._least_useful(b, bl, a, d_ab)
        if w < 0:
            if not force:
                return False
            ds = self.node_dists(b, bl)
            w = max(range(len(ds)), key=ds.__getitem__)
        drop = bl[w]
        bl[w] = a
        al.append(b)
        dl = drop.links[layer]
        dl.remove(b)
        # b-drop becomes b-a-drop when drop is left with few links (always
        # when forced): nobody loses its way into the graph
        if (force or len(dl) < self.M // 2) and drop not in al and len(al) < room:
            al.append(drop)
            dl.append(a)
        return True

    def _least_useful(self, b: Node, bl: list, a: Node, d_ab: float) -> int:
        """Which of b's links (an index in bl) to give up for a, or -1 to
        keep them all: the selection heuristic run over bl and a, nearest
        first, keeps the diverse ones; the farthest of those it passes over
        goes (a itself: -1)."""
        cands = bl + [a]
        rows = [n.row for n in cands]
        ds = self.dists(self.fvecs[b.row], rows).tolist()
        ds[-1] = d_ab
        order = sorted(range(len(cands)), key=ds.__getitem__)
        pw = self._pairwise(rows).tolist()
        keep = []
        passed = []
        for i in order:
            row, d = pw[i], ds[i]
            for k in keep:
                if row[k] <= d:
                    passed.append(i)
                    break
            else:
                keep.append(i)
        w = passed[-1] if passed else order[-1]
        return -1 if w == len(bl) else w

    def insert(self, vec: np.ndarray, item: bytes, attrib, ef: int = EF_CONSTRUCTION) -> Node:
        q, qrange, l2 = self.encode(vec)
        level = 0
        while level < MAX_LEVEL and random.random() < LEVEL_P:
            level += 1
        self.last_id += 1
        node = Node(self.last_id, level, item, attrib)
        node.l2 = l2
        self._store(node, q, qrange)
        self.nodes[node.id] = node
        if self.entry is None:
            self.entry = node
            self.max_level = level
            return node
        q = self.fvecs[node.row]
        ep = self._descend(q, level)
        for layer in range(min(level, self.max_level), -1, -1):
            cands = [(d, n) for d, n in self.search_layer(q, ep, max(ef, 1), layer) if n is not node]
            if not cands:
                continue
            for n in self._select(cands, self.M):
                self._link(node, n, layer, self.distance(node, n), limit=self.M)
            want = min(max(1, self.M // 4), len(cands))
            for d, n in cands:
                if len(node.links[layer]) >= want:
                    break
                self._link(node, n, layer, d, force=True, limit=self.M)
            ep = cands[0][1]
        if level > self.max_level:
            self.entry = node
            self.max_level = level
        return node

    # -- deletion --------------------------------------------------------------

    def delete(self, node: Node):
        """Remove node for real: its neighbours lose the link and each is
        offered a link to the nearest of the other orphaned neighbours."""
        del self.nodes[node.id]
        self._unstore(node)
        if self.entry is node:
            self.entry = None
            best = None
            for n in self.rows:
                if best is None or n.level > best.level:
                    best = n
            self.entry = best
            self.max_level = best.level if best is not None else 0
        for layer in range(node.level + 1):
            orphans = node.links[layer]
            for n in orphans:
                n.links[layer].remove(node)
            if len(orphans) > 1:
                self._relink(orphans, layer)
            for n in orphans:
                if not n.links[layer] and self.entry is not None and self.entry is not n:
                    self._reconnect(n, layer)
        node.links = [[] for _ in node.links]

    def _relink(self, orphans, layer):
        pw = self._pairwise([n.row for n in orphans])
        cap = self.cap(layer)
        for i, a in enumerate(orphans):
            if len(a.links[layer]) >= cap:
                continue
            order = np.argsort(pw[i]).tolist()
            for j in order:
                b = orphans[j]
                if b is a or b in a.links[layer] or len(b.links[layer]) >= cap:
                    continue
                a.links[layer].append(b)
                b.links[layer].append(a)
                break

    def _reconnect(self, n: Node, layer: int):
        if layer > self.max_level:
            return
        q = self.fvecs[n.row]
        ep = self._descend(q, layer)
        cands = [(d, x) for d, x in self.search_layer(q, ep, EF_CONSTRUCTION, layer)
                 if x is not n and x.level >= layer]
        for d, x in cands[:self.M]:
            self._link(n, x, layer, d)

    # -- serialization (the params list of hnsw.c's node layout) -----------------

    def node_params(self, node: Node) -> list:
        p = [node.id, (node.level & 0xFF) | (SER_VERSION << 24)]
        for layer in range(node.level + 1):
            links = node.links[layer]
            p.append(len(links))
            p.append(self.cap(layer))
            p.extend(n.id for n in links)
            if links:
                ds = self.node_dists(node, links)
                w = max(range(len(ds)), key=ds.__getitem__)
                p.append((f32_bits(ds[w]) << 32) | w)
            else:
                p.append(0)
        p.append((f32_bits(node.qrange) << 32) | f32_bits(node.l2))
        return p

    def load_node(self, vector: bytes, params: list, item: bytes, attrib) -> Node:
        if len(params) < 2 or len(vector) != self.quant_bytes():
            raise GraphError("bad node")
        nid = params[0]
        level = params[1] & 0xFF
        version = (params[1] >> 24) & 0xFF
        if version > SER_VERSION or nid == 0 or level > MAX_LEVEL or nid in self.nodes:
            raise GraphError("bad node")
        node = Node(nid, level, item, attrib)
        i = 2
        worst = 1 if version > 0 else 0
        for layer in range(level + 1):
            if i + 2 + worst > len(params):
                raise GraphError("bad node")
            nlinks, maxl = params[i], params[i + 1]
            i += 2
            if nlinks > maxl or maxl > MAX_M * 4 or i + nlinks + worst > len(params):
                raise GraphError("bad node")
            node.links[layer] = list(params[i:i + nlinks])
            i += nlinks + worst
        if i >= len(params):
            raise GraphError("bad node")
        lr = params[i]
        node.l2 = bits_f32(lr & 0xFFFFFFFF)
        qrange = bits_f32(lr >> 32)
        if self.quant == QUANT_NONE:
            q = np.frombuffer(vector, dtype="<f4")
            qrange = 0.0
        elif self.quant == QUANT_Q8:
            q = np.frombuffer(vector, dtype=np.int8)
        else:
            q = np.frombuffer(vector, dtype="<u8")
            qrange = 0.0
        self._store(node, q, qrange)
        self.nodes[nid] = node
        if nid > self.last_id:
            self.last_id = nid
        if self.entry is None or level > self.max_level:
            self.entry = node
            self.max_level = level
        return node

    def resolve(self):
        """After loading: link ids become nodes; a link to an unknown node,
        to itself, twice, or without its link back is a corrupt graph."""
        nodes = self.nodes
        for node in self.rows:
            for layer, ids in enumerate(node.links):
                if len(set(ids)) != len(ids):
                    raise GraphError("duplicated link")
                out = []
                for i in ids:
                    other = nodes.get(i)
                    if other is None or other is node or other.level < layer:
                        raise GraphError("bad link")
                    out.append(other)
                node.links[layer] = out
        for node in self.rows:
            for layer, links in enumerate(node.links):
                for other in links:
                    if node not in other.links[layer]:
                        raise GraphError("link without its link back")
