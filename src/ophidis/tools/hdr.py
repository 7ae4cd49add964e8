"""A small HDR (high dynamic range) histogram, enough for the benchmark reports.

Same bucketing as HdrHistogram (log2 buckets of linear sub-buckets sized by the
number of significant figures, values below ``lowest`` folded into units), so
that percentiles and "highest equivalent values" match redis-benchmark's
(which records microseconds with lowest discernible value 10 and 3 significant
figures: 8 us resolution up to 16 ms).  Values are recorded into a plain dict
(value -> count) by the load generator; the histogram is built once, at the
end, from the merged dicts.
"""

from __future__ import annotations

import math


class Histogram:
    def __init__(self, lowest=10, highest=3_000_000, sigfigs=3):
        self.lowest = lowest
        self.highest = highest
        self.sigfigs = sigfigs
        largest_single_unit = 2 * 10 ** sigfigs
        sub_bucket_count_magnitude = int(math.ceil(math.log2(largest_single_unit)))
        self.sub_bucket_half_count_magnitude = max(sub_bucket_count_magnitude, 1) - 1
        self.unit_magnitude = int(math.floor(math.log2(lowest)))
        self.sub_bucket_count = 1 << (self.sub_bucket_half_count_magnitude + 1)
        self.sub_bucket_half_count = self.sub_bucket_count // 2
        self.sub_bucket_mask = (self.sub_bucket_count - 1) << self.unit_magnitude
        smallest_untrackable = self.sub_bucket_count << self.unit_magnitude
        buckets_needed = 1
        while smallest_untrackable <= highest:
            if smallest_untrackable > (1 << 62):
                buckets_needed += 1
                break
            smallest_untrackable <<= 1
            buckets_needed += 1
        self.bucket_count = buckets_needed
        self.counts_len = (buckets_needed + 1) * (self.sub_bucket_count // 2)
        self.counts = {}
        self.total = 0
        self.min_value = None
        self.max_value = 0

    # -- index arithmetic --------------------------------------------------
    def _bucket_index(self, v):
        pow2ceiling = (v | self.sub_bucket_mask).bit_length()
        return pow2ceiling - self.unit_magnitude - (self.sub_bucket_half_count_magnitude + 1)

    def _sub_bucket_index(self, v, bi):
        return v >> (bi + self.unit_magnitude)

    def counts_index_for(self, v):
        bi = self._bucket_index(v)
        sbi = self._sub_bucket_index(v, bi)
        base = (bi + 1) << self.sub_bucket_half_count_magnitude
        return base + (sbi - self.sub_bucket_half_count)

    def value_at_index(self, idx):
        bi = (idx >> self.sub_bucket_half_count_magnitude) - 1
        sbi = (idx & (self.sub_bucket_half_count - 1)) + self.sub_bucket_half_count
        if bi < 0:
            sbi -= self.sub_bucket_half_count
            bi = 0
        return sbi << (bi + self.unit_magnitude)

    def size_of_range(self, v):
        bi = self._bucket_index(v)
        sbi = self._sub_bucket_index(v, bi)
        adjusted = bi + 1 if sbi >= self.sub_bucket_count else bi
        return 1 << (self.unit_magnitude + adjusted)

    def lowest_equivalent(self, v):
        bi = self._bucket_index(v)
        sbi = self._sub_bucket_index(v, bi)
        return sbi << (bi + self.unit_magnitude)

    def highest_equivalent(self, v):
        return self.lowest_equivalent(v) + self.size_of_range(v) - 1

    def median_equivalent(self, v):
        return self.lowest_equivalent(v) + (self.size_of_range(v) >> 1)

    # -- recording -----------------------------------------------------------
    def record(self, v, count=1):
        if v < 0:
            v = 0
        if v > self.highest:
            v = self.highest
        idx = self.counts_index_for(v)
        self.counts[idx] = self.counts.get(idx, 0) + count
        self.total += count
        if self.min_value is None or v < self.min_value:
            self.min_value = v
        if v > self.max_value:
            self.max_value = v

    def record_dict(self, d):
        for v, c in d.items():
            self.record(v, c)

    # -- queries ---------------------------------------------------------------
    def min(self):
        if self.min_value is None:
            return 0
        return self.lowest_equivalent(self.min_value)

    def max(self):
        return self.highest_equivalent(self.max_value) if self.total else 0

    def _sorted(self):
        return sorted(self.counts.items())

    def value_at_percentile(self, p):
        if not self.total:
            return 0
        p = min(p, 100.0)
        want = int(p / 100 * self.total + 0.5)
        want = max(want, 1)
        run = 0
        for idx, c in self._sorted():
            run += c
            if run >= want:
                v = self.value_at_index(idx)
                return self.lowest_equivalent(v) if p == 0.0 else self.highest_equivalent(v)
        return self.max()

    def mean(self):
        if not self.total:
            return 0.0
        t = 0
        for idx, c in self.counts.items():
            t += c * self.median_equivalent(self.value_at_index(idx))
        return t / self.total

    def stddev(self):
        if not self.total:
            return 0.0
        m = self.mean()
        t = 0.0
        for idx, c in self.counts.items():
            d = self.median_equivalent(self.value_at_index(idx)) - m
            t += d * d * c
        return math.sqrt(t / self.total)

    # -- iterators (HdrHistogram's percentile and linear iterations) ------------
    def _walk_state(self):
        """What both iterators walk: (total count, counts by index, number of indexes)."""
        return self.total, self.counts, self.counts_len

    def iter_percentiles(self, ticks_per_half_distance=1):
        """Yield (percentile, highest_equivalent_value, cumulative_count) as
        HdrHistogram's percentile iterator does (ending with a 100% step)."""
        total, counts, end = self._walk_state()
        if not total:
            return
        idx = -1
        cum = count = 0
        to = 0.0
        while True:
            if cum >= total:
                yield 100.0, self.highest_equivalent(self.value_at_index(idx)), cum
                return
            if idx == -1:
                idx = 0
                count = counts.get(0, 0)
                cum += count
            while True:
                if count and to <= 100.0 * cum / total:
                    yield to, self.highest_equivalent(self.value_at_index(idx)), cum
                    temp = int(math.log(100 / (100.0 - to)) / math.log(2)) + 1
                    to += 100.0 / (ticks_per_half_distance * 2 ** temp)
                    break
                if cum >= total or idx + 1 >= end:
                    return
                idx += 1
                count = counts.get(idx, 0)
                cum += count

    def iter_linear(self, units_per_bucket, switch_after=None, switch_units=None):
        """Yield (highest_equivalent_value_of_current_index, cumulative_count).

        HdrHistogram's linear iteration as redis-benchmark uses it: reporting
        levels every ``units_per_bucket``; once a reported value is above
        ``switch_after`` the step becomes ``switch_units``.
        """
        total, counts, end = self._walk_state()
        if not total:
            return
        idx = -1
        cum = 0
        value = 0
        level = step = units_per_bucket
        level_low = self.lowest_equivalent(level)
        while cum < total or (idx + 1 < end and self.value_at_index(idx + 1) > level_low):
            while True:
                if value >= level_low:
                    hev = self.highest_equivalent(value) if idx >= 0 else 0
                    level += step
                    level_low = self.lowest_equivalent(level)
                    yield hev, cum
                    if switch_after is not None and hev > switch_after:
                        step = switch_units
                    break
                idx += 1
                if idx >= end:
                    return
                cum += counts.get(idx, 0)
                value = self.value_at_index(idx)

    def percentile_distribution_text(self, scale=1000.0, ticks=5, digits=3):
        """HdrHistogram's classic text output (values divided by ``scale``)."""
        lines = ["%12s %14s %10s %14s\n\n" % ("Value", "Percentile", "TotalCount", "1/(1-Percentile)")]
        for p, v, cum in self.iter_percentiles(ticks):
            frac = p / 100.0
            if frac < 1.0:
                lines.append("%12.*f %14.6f %10d %14.2f\n" % (digits, v / scale, frac, cum, 1 / (1 - frac)))
            else:
                lines.append("%12.*f %14.6f %10d\n" % (digits, v / scale, frac, cum))
        lines.append("#[Mean    = %12.*f, StdDeviation   = %12.*f]\n"
                     % (digits, self.mean() / scale, digits, self.stddev() / scale))
        lines.append("#[Max     = %12.*f, Total count    = %12d]\n" % (digits, self.max() / scale, self.total))
        lines.append("#[Buckets = %12d, SubBuckets     = %12d]\n" % (self.bucket_count, self.sub_bucket_count))
        return "".join(lines)
