"""Time series aggregators (RedisTimeSeries' aggregation classes): one
context class per aggregator, fed samples of one bucket in time order and
finalized into the bucket's value.  Compaction rules keep a live context
for their current bucket (saved in the RDB record as the module saves it);
TS.RANGE's AGGREGATION and GROUPBY's REDUCE run the same classes.

Numbering is the module's (TS_AGG_*), which its RDB record stores.
"""

from __future__ import annotations

import math

NAN = float("nan")
DBL_MAX = 1.7976931348623157e308

AGG_MIN, AGG_MAX, AGG_SUM, AGG_AVG, AGG_COUNT, AGG_FIRST, AGG_LAST, AGG_RANGE = range(1, 9)
AGG_STD_P, AGG_STD_S, AGG_VAR_P, AGG_VAR_S, AGG_TWA, AGG_COUNT_NAN, AGG_COUNT_ALL = range(9, 16)

# lower-case name -> number; number -> upper-case name (TS.INFO's rules)
BY_NAME = {b"min": AGG_MIN, b"max": AGG_MAX, b"sum": AGG_SUM, b"avg": AGG_AVG, b"count": AGG_COUNT,
           b"first": AGG_FIRST, b"last": AGG_LAST, b"range": AGG_RANGE, b"std.p": AGG_STD_P,
           b"std.s": AGG_STD_S, b"var.p": AGG_VAR_P, b"var.s": AGG_VAR_S, b"twa": AGG_TWA,
           b"countnan": AGG_COUNT_NAN, b"countall": AGG_COUNT_ALL}
NAMES = {v: k.upper() for k, v in BY_NAME.items()}
LOWER = {v: k for k, v in BY_NAME.items()}


class Agg:
    """The common shape: add(value, ts) for each accepted sample, value()
    for the bucket, empty() for an empty bucket's value (EMPTY), reset()
    between buckets; save/load: the module's context items."""
    __slots__ = ()
    kind = 0

    def __init__(self):
        self.reset()

    @staticmethod
    def accepts(v: float) -> bool:
        return v == v       # NaN samples are skipped by the usual aggregators

    def empty(self) -> float:
        return NAN


class _Single(Agg):
    __slots__ = ("v",)

    def reset(self):
        self.v = 0.0

    def value(self):
        return self.v

    def empty(self):
        return 0.0

    def save(self, w):
        w.double(self.v)

    def load(self, r, encver):
        self.v = r.double()
        if 3 <= encver < 7:
            r.uint()


class Sum(_Single):
    __slots__ = ()
    kind = AGG_SUM

    def add(self, v, ts):
        self.v += v


class Count(_Single):
    __slots__ = ()
    kind = AGG_COUNT

    def add(self, v, ts):
        self.v += 1


class CountNaN(Count):
    __slots__ = ()
    kind = AGG_COUNT_NAN

    @staticmethod
    def accepts(v):
        return v != v


class CountAll(Count):
    __slots__ = ()
    kind = AGG_COUNT_ALL

    @staticmethod
    def accepts(v):
        return True


class Last(_Single):
    __slots__ = ("ts", "fresh")
    kind = AGG_LAST

    def __init__(self):
        self.v = NAN
        self.ts = 0
        self.fresh = True

    def add(self, v, ts):
        if self.fresh or ts >= self.ts:
            self.v = v
            self.ts = ts
            self.fresh = False

    def reset(self):
        # the value stays: EMPTY buckets carry the last one forward
        self.fresh = True

    def empty(self):
        return self.v


class First(Agg):
    __slots__ = ("v", "ts", "unset")
    kind = AGG_FIRST

    def reset(self):
        self.v = 0.0
        self.ts = 0
        self.unset = True

    def add(self, v, ts):
        if self.unset or ts < self.ts:
            self.unset = False
            self.v = v
            self.ts = ts

    def value(self):
        return self.v

    def save(self, w):
        w.double(self.v)
        w.uint(1 if self.unset else 0)

    def load(self, r, encver):
        self.v = r.double()
        if encver >= 3:
            self.unset = bool(r.uint())


class _MaxMin(Agg):
    __slots__ = ("hi", "lo")

    def reset(self):
        self.hi = -DBL_MAX
        self.lo = DBL_MAX

    def add(self, v, ts):
        if v > self.hi:
            self.hi = v
        if v < self.lo:
            self.lo = v

    def save(self, w):
        w.double(self.hi)
        w.double(self.lo)

    def load(self, r, encver):
        self.hi = r.double()
        self.lo = r.double()
        if encver < 6:
            r.string()


class Max(_MaxMin):
    __slots__ = ()
    kind = AGG_MAX

    def value(self):
        return self.hi


class Min(_MaxMin):
    __slots__ = ()
    kind = AGG_MIN

    def value(self):
        return self.lo


class Range(_MaxMin):
    __slots__ = ()
    kind = AGG_RANGE

    def value(self):
        return self.hi - self.lo


class Avg(Agg):
    __slots__ = ("s", "n", "over")
    kind = AGG_AVG

    def reset(self):
        self.s = 0.0
        self.n = 0
        self.over = False

    def add(self, v, ts):
        self.n += 1
        n = self.n
        if self.over or ((self.s < 0.0) == (v < 0.0) and abs(self.s) > DBL_MAX - abs(v)):
            # a running mean once the sum would overflow
            m = self.s * (n - 1) / n if self.over else self.s / n
            self.s = m + v / n
            self.over = True
        else:
            self.s += v

    def value(self):
        if self.n == 0:
            return NAN
        return self.s if self.over else self.s / self.n

    def save(self, w):
        w.double(self.s)
        w.double(float(self.n))
        w.uint(1 if self.over else 0)

    def load(self, r, encver):
        self.s = r.double()
        self.n = int(r.double())
        self.over = bool(r.uint()) if encver >= 4 else False


class _Std(Agg):
    __slots__ = ("s", "s2", "n")

    def reset(self):
        self.s = 0.0
        self.s2 = 0.0
        self.n = 0

    def add(self, v, ts):
        self.n += 1
        self.s += v
        self.s2 += v * v

    def _var(self):
        n = self.n
        if n == 0:
            return 0.0
        s = self.s
        return (self.s2 - 2 * s * s / n + (s / n) ** 2 * n) / n

    def _var_s(self):
        n = self.n
        if n <= 1:
            return 0.0
        return self._var() * n / (n - 1)

    def save(self, w):
        w.double(self.s)
        w.double(self.s2)
        w.uint(self.n)

    def load(self, r, encver):
        self.s = r.double()
        self.s2 = r.double()
        self.n = r.uint()


class VarP(_Std):
    __slots__ = ()
    kind = AGG_VAR_P

    def value(self):
        return self._var()


class VarS(_Std):
    __slots__ = ()
    kind = AGG_VAR_S

    def value(self):
        return self._var_s()


class StdP(_Std):
    __slots__ = ()
    kind = AGG_STD_P

    def value(self):
        return math.sqrt(max(self._var(), 0.0))


class StdS(_Std):
    __slots__ = ()
    kind = AGG_STD_S

    def value(self):
        return math.sqrt(max(self._var_s(), 0.0))


class Twa(Agg):
    """Time-weighted average over [bucket start, bucket end): the area under
    the line through the samples (interpolated to the bucket's edges from
    the neighbouring buckets' samples when there are any) over its width."""
    __slots__ = ("res", "pts", "pv", "ta", "tb", "first", "last", "is_first", "n")
    kind = AGG_TWA

    def reset(self):
        self.res = 0.0
        self.pts = 0
        self.pv = 0.0
        self.ta = 0
        self.tb = 0
        self.first = 0
        self.last = 0
        self.is_first = True
        self.n = 0

    def bounds(self, ta, tb):
        self.ta = ta
        self.tb = tb

    def prev_sample(self, v, ts):
        """The previous bucket's last sample (interpolation at the start)."""
        self.pv = v
        self.pts = ts
        self.is_first = False

    def add(self, v, ts):
        t1, v1 = self.pts, self.pv
        if self.n == 0:
            if not self.is_first:
                ta = self.ta
                self.first = ta
                vab = v1 + (ta - t1) * (v - v1) / (ts - t1) if ts != t1 else v
                self.res += (vab + v) * (ts - ta) / 2.0
            else:
                self.first = ts
        else:
            self.res += (v1 + v) * (ts - t1) / 2.0
        self.last = self.pts = ts
        self.pv = v
        self.n += 1

    def next_sample(self, v, ts):
        """The next bucket's first sample (interpolation at the end)."""
        t1, v1 = self.pts, self.pv
        tb = self.tb
        vab = v1 + (tb - t1) * (v - v1) / (ts - t1) if ts != t1 else v
        self.res += (vab + v1) * (tb - t1) / 2.0
        self.last = tb

    def value(self):
        if self.last == self.first:
            return self.pv
        return self.res / abs(self.last - self.first)

    def save(self, w):
        w.double(self.res)
        w.uint(self.pts)
        w.double(self.pv)
        w.uint(self.ta)
        w.uint(self.tb)
        w.uint(self.first)
        w.uint(self.last)
        w.uint(1 if self.is_first else 0)
        w.uint(self.n)
        w.uint(0)

    def load(self, r, encver):
        self.res = r.double()
        self.pts = r.uint()
        self.pv = r.double()
        self.ta = r.uint()
        self.tb = r.uint()
        self.first = r.uint()
        self.last = r.uint()
        self.is_first = bool(r.uint())
        self.n = r.uint()
        r.uint()


CLASSES = {AGG_MIN: Min, AGG_MAX: Max, AGG_SUM: Sum, AGG_AVG: Avg, AGG_COUNT: Count,
           AGG_FIRST: First, AGG_LAST: Last, AGG_RANGE: Range, AGG_STD_P: StdP,
           AGG_STD_S: StdS, AGG_VAR_P: VarP, AGG_VAR_S: VarS, AGG_TWA: Twa,
           AGG_COUNT_NAN: CountNaN, AGG_COUNT_ALL: CountAll}


def new(kind: int) -> Agg:
    return CLASSES[kind]()


def reduce(kind: int, values) -> float:
    """One value of several (GROUPBY's REDUCE over the series' values at a
    timestamp)."""
    a = CLASSES[kind]()
    any_ = False
    for v in values:
        if a.accepts(v):
            a.add(v, 0)
            any_ = True
    return a.value() if any_ else a.empty()
