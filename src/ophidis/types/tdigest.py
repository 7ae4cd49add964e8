"""t-digest (Redis 8's built-in RedisBloom ``TDIS-TYPE``), as RedisBloom's
t-digest-c (the revision Redis 8.0-8.10 ship) computes it: a merging digest
of centroids (mean, integer weight) with a buffer of unmerged samples.

``cap`` = 6 * compression + 10 node slots; a sample goes into the buffer and
when merged plus buffered nodes reach cap - 1 the buffer is compressed:
all nodes sorted by mean (the library's quicksort: middle pivot, Lomuto
partition, so equal means end in the same order as there), then neighbours
merged left to right while the merged weight stays within the k-scale bound
``weight * compression / (2 pi W log W) <= q (1 - q)`` at both ends.  A
digest whose total weight is at most 1 is never compressed (as in that
library revision: one sample stays unmerged, and the quantile functions,
which read only merged centroids, answer nan for it).  Quantile, CDF,
trimmed-mean and rank interpolation follow the library step for step, in
the same double arithmetic, so the replies are the same numbers.

The RDB record is the module's (encoding version 0): after a compress,
compression, min and max as doubles; cap, merged and unmerged node counts
and the compression count as signed items; merged and unmerged weight as
doubles; then the merged means and the merged weights (as doubles).
"""

from __future__ import annotations

import math

from ..keyspace.db import ENCODINGS, register_module_type

DBL_MAX = 1.7976931348623157e308
LLONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1
INF = math.inf
NAN = math.nan


class Overflow(Exception):
    """The library's EDOM: a weight sum past what it can hold."""


def c_round(x: float) -> float:
    """C's round(): halves away from zero."""
    if x != x or x in (INF, -INF):
        return x
    t = float(math.trunc(x))
    if abs(x - t) >= 0.5:
        t += math.copysign(1.0, x)
    return t


def half_round_down(x: float) -> float:
    """RedisBloom's _halfRoundDown: a fraction of exactly one half goes
    towards zero, more than half away from it."""
    frac, whole = math.modf(x)
    if abs(frac) <= 0.5:
        return whole
    return whole + 1.0 if whole >= 0.0 else whole - 1.0


def capacity(compression: float) -> int:
    """Node slots for a compression; 0 when the library refuses it."""
    c = int(compression)
    if c > (((1 << 64) - 1) // 8 // 6) - 10:
        return 0
    return 6 * c + 10


def _qsort(means, weights, lo, hi):
    """t-digest-c's td_qsort over [lo, hi] (inclusive), iteratively: the
    same pivots and swaps, so runs of equal means come out as there."""
    stack = [(lo, hi)]
    while stack:
        start, end = stack.pop()
        if start >= end:
            continue
        if end - start == 1:
            if means[start] > means[end]:
                means[start], means[end] = means[end], means[start]
                weights[start], weights[end] = weights[end], weights[start]
            continue
        low = min(means[start:end + 1])
        if means[(end + start) // 2] == low:
            # the pivot is the smallest mean: the partition compares in
            # vain, swaps the middle to the end and the end to the front,
            # and goes on with the rest; done here without the comparisons
            # for as long as the middle holds that smallest mean
            while end - start > 1 and means[(end + start) // 2] == low:
                p = (end + start) // 2
                means[p], means[end] = means[end], means[p]
                weights[p], weights[end] = weights[end], weights[p]
                means[start], means[end] = means[end], means[start]
                weights[start], weights[end] = weights[end], weights[start]
                start += 1
            stack.append((start, end))
            continue
        p = (end + start) // 2
        pivot = means[p]
        means[p], means[end] = means[end], means[p]
        weights[p], weights[end] = weights[end], weights[p]
        i = start - 1
        for j in range(start, end):
            if means[j] < pivot:
                i += 1
                means[i], means[j] = means[j], means[i]
                weights[i], weights[j] = weights[j], weights[i]
        i += 1
        means[i], means[end] = means[end], means[i]
        weights[i], weights[end] = weights[end], weights[i]
        if i > start:
            stack.append((start, i - 1))
        stack.append((i + 1, end))


def _sort(means, weights):
    """Sort the parallel node lists by mean as td_qsort leaves them.  When
    no two equal means carry different weights the order among equals
    cannot matter, and Python's sort gives the same lists."""
    order = sorted(range(len(means)), key=means.__getitem__)
    sm = [means[i] for i in order]
    sw = [weights[i] for i in order]
    for a in range(1, len(sm)):
        if sm[a] == sm[a - 1] and sw[a] != sw[a - 1]:
            _qsort(means, weights, 0, len(means) - 1)
            return
    means[:] = sm
    weights[:] = sw


def _check_overflow(unmerged: float, total: float):
    if unmerged == INF or total == INF:
        raise Overflow()
    if total > 0 and 2 * math.pi * total * math.log(total) == INF:
        raise Overflow()


def _weighted_average(x1, w1, x2, w2):
    if x1 <= x2:
        x = (x1 * w1 + x2 * w2) / (w1 + w2)
        return max(x1, min(x, x2))
    x = (x2 * w2 + x1 * w1) / (w2 + w1)
    return max(x2, min(x, x1))


class TDigest:
    __slots__ = ("compression", "min", "max", "cap", "merged_nodes", "unmerged_nodes",
                 "total_compressions", "merged_weight", "unmerged_weight", "means", "weights")
    MODULE_NAME = "TDIS-TYPE"
    MODULE_ENCVER = 0
    MODULE_ENCVERS = (0,)

    def __init__(self, compression: float):
        self.compression = float(compression)
        self.cap = capacity(compression)
        # the nodes in use (merged first, then the buffer)
        self.means = []
        self.weights = []
        self.reset()

    def reset(self):
        self.min = DBL_MAX
        self.max = -DBL_MAX
        self.merged_nodes = 0
        self.merged_weight = 0
        self.unmerged_nodes = 0
        self.unmerged_weight = 0
        self.total_compressions = 0
        del self.means[:]
        del self.weights[:]

    def size(self) -> int:
        return self.merged_weight + self.unmerged_weight

    # -- adding and merging ----------------------------------------------
    def add(self, mean: float, weight: int = 1):
        """td_add: raises Overflow (the library's EDOM)."""
        if self.merged_nodes + self.unmerged_nodes >= self.cap - 1:
            self.compress()
        pos = self.merged_nodes + self.unmerged_nodes
        if pos >= self.cap:
            raise Overflow()
        new_unmerged = self.unmerged_weight + weight
        if new_unmerged > LLONG_MAX:
            raise Overflow()
        new_total = new_unmerged + self.merged_weight
        if new_total > LLONG_MAX:
            raise Overflow()
        _check_overflow(float(new_unmerged), float(new_total))
        if mean < self.min:
            self.min = mean
        if mean > self.max:
            self.max = mean
        # a node slot past the lists (left by a loaded record's buffer)
        # is overwritten in place, as the library's array is
        if pos < len(self.means):
            self.means[pos] = mean
            self.weights[pos] = weight
        else:
            self.means.append(mean)
            self.weights.append(weight)
        self.unmerged_nodes += 1
        self.unmerged_weight = new_unmerged

    def add_many(self, values):
        """``add(v, 1)`` for each value, in runs: the buffer is filled up to
        the point where ``add`` would compress, then compressed, and so on
        (the same nodes, extremes and compressions as one at a time)."""
        i = 0
        n = len(values)
        while i < n:
            room = self.cap - 1 - (self.merged_nodes + self.unmerged_nodes)
            if room <= 0 or self.unmerged_weight + self.merged_weight + n - i > LLONG_MAX \
                    or len(self.means) != self.merged_nodes + self.unmerged_nodes:
                # a compress is due (or a limit is near): one at a time
                self.add(values[i], 1)
                i += 1
                continue
            run = values[i:i + room]
            k = len(run)
            low = min(run)
            high = max(run)
            if low < self.min:
                self.min = low
            if high > self.max:
                self.max = high
            self.means.extend(run)
            self.weights.extend([1] * k)
            self.unmerged_nodes += k
            self.unmerged_weight += k
            i += k

    def compress(self):
        """td_compress: raises Overflow (EDOM)."""
        if self.unmerged_nodes == 0:
            return
        n = self.merged_nodes + self.unmerged_nodes
        means = self.means
        weights = self.weights
        if len(means) > n:
            del means[n:]
            del weights[n:]
        _sort(means, weights)
        total = float(self.merged_weight) + float(self.unmerged_weight)
        _check_overflow(float(self.unmerged_weight), total)
        if total <= 1:
            return
        denom = 2 * math.pi * total * math.log(total)
        if denom == INF:
            raise Overflow()
        normalizer = self.compression / denom
        if normalizer == INF:
            raise Overflow()
        cur = 0
        so_far = 0.0
        wcur = weights[0]
        mcur = means[0]
        for i in range(1, n):
            wi = weights[i]
            proposed = float(wcur) + float(wi)
            z = proposed * normalizer
            q0 = so_far / total
            q2 = (so_far + proposed) / total
            if z <= q0 * (1 - q0) and z <= q2 * (1 - q2):
                wcur += wi
                mcur += ((means[i] - mcur) * wi) / wcur
            else:
                means[cur] = mcur
                weights[cur] = wcur
                so_far += wcur
                cur += 1
                wcur = wi
                mcur = means[i]
        means[cur] = mcur
        weights[cur] = wcur
        del means[cur + 1:]
        del weights[cur + 1:]
        self.merged_nodes = cur + 1
        self.merged_weight = int(total)
        self.unmerged_nodes = 0
        self.unmerged_weight = 0
        self.total_compressions += 1

    def merge_from(self, other: "TDigest"):
        """td_merge: both compressed, then other's nodes added as samples
        of their weights."""
        self.compress()
        other.compress()
        n = other.merged_nodes + other.unmerged_nodes
        for i in range(n):
            m = other.means[i] if i < len(other.means) else 0.0
            w = other.weights[i] if i < len(other.weights) else 0
            self.add(m, w)

    # -- estimates -------------------------------------------------------
    def cdf(self, val: float) -> float:
        self.compress()
        n = self.merged_nodes
        if n == 0:
            return NAN
        if val < self.min:
            return 0.0
        if val > self.max:
            return 1.0
        means = self.means
        weights = self.weights
        if n == 1:
            width = self.max - self.min
            if val - self.min <= width:
                return 0.5
            return (val - self.min) / width
        left_mean = means[0]
        left_w = float(weights[0])
        mw = float(self.merged_weight)
        if val < left_mean:
            width = left_mean - self.min
            if width > 0:
                if val == self.min:
                    return 0.5 / mw
                return (1 + (val - self.min) / width * (left_w / 2 - 1)) / mw
            return 0.0
        right_mean = means[n - 1]
        right_w = float(weights[n - 1])
        if val > right_mean:
            width = self.max - right_mean
            if width > 0:
                if val == self.max:
                    return 1 - 0.5 / mw
                dq = (1 + (self.max - val) / width * (right_w / 2 - 1)) / mw
                return 1 - dq
            return 1.0
        so_far = 0.0
        it = 0
        while it < n - 1:
            if means[it] == val:
                dw = 0.0
                while it < n and means[it] == val:
                    dw += float(weights[it])
                    it += 1
                return (so_far + dw / 2) / mw
            if means[it] <= val < means[it + 1]:
                nw = float(weights[it])
                nwn = float(weights[it + 1])
                nm = means[it]
                nmn = means[it + 1]
                if nmn - nm > 0:
                    left_ex = 0.0
                    right_ex = 0.0
                    if nw == 1:
                        if nwn == 1:
                            return (so_far + 1) / mw
                        left_ex = 0.5
                    elif nwn == 1:
                        right_ex = 0.5
                    dw = (nw + nwn) / 2
                    dw_ns = dw - left_ex - right_ex
                    base = so_far + nw / 2 + left_ex
                    return (base + dw_ns * (val - nm) / (nmn - nm)) / mw
                dw = (nw + nwn) / 2
                return (so_far + dw) / mw
            so_far += float(weights[it])
            it += 1
        return 1 - 0.5 / mw

    def _at_index(self, index: float, left_w: float, n: int, state):
        """td_internal_iterate_centroids_to_index; ``state`` is the
        [weight so far, node position] pair carried between sorted calls."""
        means = self.means
        weights = self.weights
        if left_w > 1 and index < left_w / 2:
            return self.min + (index - 1) / (left_w / 2 - 1) * (means[0] - self.min)
        if index > self.merged_weight - 1:
            return self.max
        right_w = float(weights[n - 1])
        right_mean = means[n - 1]
        mw = float(self.merged_weight)
        if right_w > 1 and mw - index <= right_w / 2:
            return self.max - (mw - index - 1) / (right_w / 2 - 1) * (self.max - right_mean)
        so_far, pos = state
        while pos < n - 1:
            nw = float(weights[pos])
            nwn = float(weights[pos + 1])
            nm = means[pos]
            nmn = means[pos + 1]
            dw = (nw + nwn) / 2
            if so_far + dw > index:
                state[0], state[1] = so_far, pos
                left_unit = 0.0
                if nw == 1:
                    if index - so_far < 0.5:
                        return nm
                    left_unit = 0.5
                right_unit = 0.0
                if nwn == 1:
                    if so_far + dw - index <= 0.5:
                        return nmn
                    right_unit = 0.5
                z1 = index - so_far - left_unit
                z2 = so_far + dw - index - right_unit
                return _weighted_average(nm, z2, nmn, z1)
            so_far += dw
            pos += 1
        state[0], state[1] = so_far, pos
        z1 = index - self.merged_weight - right_w / 2.0
        z2 = right_w / 2 - z1
        return _weighted_average(right_mean, z1, self.max, z2)

    def quantile(self, q: float) -> float:
        self.compress()
        if q < 0.0 or q > 1.0 or self.merged_nodes == 0:
            return NAN
        if self.merged_nodes == 1:
            return self.means[0]
        index = q * float(self.merged_weight)
        if index < 1:
            return self.min
        left_w = float(self.weights[0])
        return self._at_index(index, left_w, self.merged_nodes, [left_w / 2, 0])

    def quantiles(self, qs):
        """td_quantiles over ascending ``qs`` (one walk of the centroids)."""
        self.compress()
        n = self.merged_nodes
        if n == 0:
            return [NAN] * len(qs)
        if n == 1:
            return [NAN if q < 0.0 or q > 1.0 else self.means[0] for q in qs]
        left_w = float(self.weights[0])
        state = [left_w / 2, 0]
        mw = float(self.merged_weight)
        return [self._at_index(q * mw, left_w, n, state) for q in qs]

    def trimmed_mean(self, low: float, high: float) -> float:
        self.compress()
        if self.merged_nodes == 0 or not (0.0 <= low <= 1.0) or not (0.0 <= high <= 1.0):
            return NAN
        if self.merged_nodes == 1:
            return self.means[0]
        mw = float(self.merged_weight)
        left = math.floor(mw * low)
        right = math.ceil(mw * high)
        done = 0.0
        tsum = 0.0
        tcount = 0.0
        for i in range(self.merged_nodes):
            w = float(self.weights[i])
            add = w
            add -= min(max(0, left - done), add)
            add = min(max(0, right - done), add)
            done += w
            tsum += self.means[i] * add
            tcount += add
            if done >= right:
                break
        if tcount == 0:
            return NAN if tsum == 0 else math.copysign(INF, tsum)
        return tsum / tcount

    # -- module-type record and the generic commands ---------------------
    def copy(self):
        t = TDigest.__new__(TDigest)
        for f in self.__slots__:
            setattr(t, f, getattr(self, f))
        t.means = list(self.means)
        t.weights = list(self.weights)
        return t

    def rdb_save(self, w):
        self.compress()
        w.double(self.compression)
        w.double(self.min)
        w.double(self.max)
        w.sint(self.cap)
        w.sint(self.merged_nodes)
        w.sint(self.unmerged_nodes)
        w.sint(self.total_compressions)
        w.double(float(self.merged_weight))
        w.double(float(self.unmerged_weight))
        n = self.merged_nodes
        for x in self.means[:n]:
            w.double(x)
        for x in self.weights[:n]:
            w.double(float(x))

    @classmethod
    def rdb_load(cls, r, encver):
        compression = r.double()
        if not (compression >= 1) or capacity(compression) == 0 or capacity(compression) > INT_MAX:
            raise ValueError("compression")
        t = cls(compression)
        t.min = r.double()
        t.max = r.double()
        t.cap = r.sint()
        t.merged_nodes = r.sint()
        t.unmerged_nodes = r.sint()
        t.total_compressions = r.sint()
        t.merged_weight = _to_ll(r.double())
        t.unmerged_weight = _to_ll(r.double())
        if t.merged_nodes < 0 or t.merged_nodes > t.cap or t.unmerged_nodes < 0 \
                or t.merged_nodes + t.unmerged_nodes > capacity(compression):
            raise ValueError("node counts")
        n = t.merged_nodes
        t.means = [r.double() for _ in range(n)]
        t.weights = [_to_ll(r.double()) for _ in range(n)]
        # buffered nodes are not in the record: the library's zeroed slots
        t.means += [0.0] * t.unmerged_nodes
        t.weights += [0] * t.unmerged_nodes
        return t

    def mem_usage(self) -> int:
        # the module's estimate: the struct and two arrays of cap slots
        return 80 + 16 * self.cap

    def digest(self) -> bytes:
        # RedisBloom gives this type no digest callback, so Redis's DEBUG
        # DIGEST takes nothing from the value: only the key counts
        return b""


def _to_ll(x: float) -> int:
    if x != x or x in (INF, -INF) or abs(x) >= 2.0 ** 63:
        raise ValueError("weight")
    return int(x)


register_module_type(TDigest, b"TDIS-TYPE")
ENCODINGS[TDigest] = lambda v, cfg: b"raw"
