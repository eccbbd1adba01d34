"""Small statistics for reports: Wilson intervals, Newcombe differences, bounded percentiles."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

Z95 = 1.959963984540054


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (0, 1) when n == 0. ``successes`` may be
    fractional (an estimated split of ``n`` between two behaviours)."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_diff(s1: float, n1: int, s2: float, n2: int, z: float = Z95) -> tuple[float, float, float]:
    """Difference p1 - p2 of two independent proportions and its Newcombe (hybrid Wilson) interval
    (the successes may be fractional, as in :func:`wilson`)."""
    if n1 <= 0 or n2 <= 0:
        return 0.0, -1.0, 1.0
    p1, p2 = s1 / n1, s2 / n2
    l1, u1 = wilson(s1, n1, z)
    l2, u2 = wilson(s2, n2, z)
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return d, max(-1.0, low), min(1.0, high)


def newcombe_paired_diff(both: int, first_only: int, second_only: int, neither: int,
                         z: float = Z95) -> tuple[float, float, float]:
    """Difference p1 - p2 of two proportions measured on the same items, and its Newcombe interval.

    The counts are the 2x2 table of paired outcomes: success under both, under the first only,
    under the second only, under neither. The interval is Newcombe's (1998) method 10: Wilson
    intervals of the two margins, combined with the phi correlation of the pairs (its numerator
    reduced by n/2 when positive, as Newcombe does).
    """
    n = both + first_only + second_only + neither
    if n <= 0:
        return 0.0, -1.0, 1.0
    p1, p2 = (both + first_only) / n, (both + second_only) / n
    l1, u1 = wilson(both + first_only, n, z)
    l2, u2 = wilson(both + second_only, n, z)
    cross = both * neither - first_only * second_only
    denom = (both + first_only) * (second_only + neither) * (both + second_only) * (first_only + neither)
    numerator = max(cross - n / 2, 0.0) if cross > 0 else cross
    phi = numerator / math.sqrt(denom) if denom else 0.0
    d = p1 - p2
    delta = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    epsilon = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return d, max(-1.0, d - delta), min(1.0, d + epsilon)



BOOTSTRAP_RESAMPLES = 10_000


def bootstrap_mean_ci(values: list[float], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0,
                      level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (seeded, so a report reproduces).

    For a paired difference pass the per-item differences. (0, 0) for no values; a single value
    (or identical ones) gives a zero-width interval. The resamples are ``random.Random(seed)``'s
    ``randrange`` draws, taken in bulk (:func:`resample_indices`), each mean summed left to right.
    """
    import numpy as np

    n = len(values)
    if n == 0:
        return 0.0, 0.0
    picks = np.asarray(values, dtype=np.float64)[resample_indices(n, n * resamples, seed).reshape(resamples, n)]
    means = np.sort(np.cumsum(picks, axis=1)[:, -1] / n)  # cumsum adds in order, as sum() does
    tail = (1 - level) / 2
    return float(means[int(tail * (resamples - 1))]), float(means[int(math.ceil((1 - tail) * (resamples - 1)))])


def resample_indices(n: int, count: int, seed: int) -> Any:
    """The first ``count`` values of ``random.Random(seed).randrange(n)``, drawn in bulk (a numpy array).

    CPython draws each from one 32-bit word of the generator (for ``n`` below 2**32): it keeps the
    word's top ``n.bit_length()`` bits and draws again while they are not below ``n``. One
    ``getrandbits(32 * m)`` gives the next ``m`` words, least significant first; more than needed
    are drawn (over half are kept), the rest of the generator is not used again.
    """
    import numpy as np

    rng = random.Random(seed)
    k = n.bit_length()
    if k > 32:  # never for a table's rows; the draws one at a time
        return np.array([rng.randrange(n) for _ in range(count)], dtype=np.int64)
    kept: list[Any] = []
    have = 0
    while have < count:
        m = max(1024, int((count - have) * 2.2))
        words = np.frombuffer(rng.getrandbits(32 * m).to_bytes(4 * m, "little"), dtype="<u4")
        picks = words >> np.uint32(32 - k)
        picks = picks[picks < n]
        kept.append(picks)
        have += len(picks)
    return np.concatenate(kept)[:count].astype(np.int64)


@dataclass
class Reservoir:
    """Values for percentiles with bounded memory.

    Exact up to ``capacity`` values; beyond that a uniform reservoir sample (Algorithm R,
    seeded). Merging two reservoirs keeps each kept value's weight (how many records it stands
    for), so percentiles of merged samples stay unbiased. ``count``, ``total`` and ``maximum``
    are always exact.
    """

    capacity: int = 10_000
    seed: int = 0
    values: list[float] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    count: int = 0
    maximum: float | None = None
    total: float = 0.0

    def add(self, value: float) -> None:
        """Count ``value`` and keep it in the sample with the reservoir's probability."""
        self.total += value
        if self.maximum is None or value > self.maximum:
            self.maximum = value
        self._offer(value)

    def _offer(self, value: float) -> None:
        """One step of Algorithm R: keep ``value`` while there is room, else replace at random."""
        self.count += 1
        if len(self.values) < self.capacity:
            self.values.append(value)
            self.weights.append(1.0)
            return
        j = self._rng().randrange(self.count)
        if j < self.capacity:
            self.values[j] = value
            self.weights[j] = 1.0

    def _offer_many(self, values: list[float]) -> None:
        """Algorithm R over a batch, vectorised: only the few values that win a slot cost Python time."""
        room = self.capacity - len(self.values)
        if room > 0:
            head = values[:room]
            self.values.extend(head)
            self.weights.extend([1.0] * len(head))
            self.count += len(head)
            values = values[room:]
        if not values:
            return
        import numpy as np

        gen = getattr(self, "_np_random", None)
        if gen is None:
            gen = self._np_random = np.random.default_rng(self.seed)
        k = len(values)
        seen = np.arange(self.count + 1, self.count + k + 1)
        kept = np.nonzero(gen.random(k) < self.capacity / seen)[0]
        slots = gen.integers(0, self.capacity, size=len(kept))
        for j, slot in zip(kept.tolist(), slots.tolist()):
            self.values[slot] = values[j]
            self.weights[slot] = 1.0
        self.count += k

    def _rng(self) -> random.Random:
        rng = getattr(self, "_random", None)
        if rng is None:
            rng = random.Random(self.seed)
            self._random = rng
        return rng

    def _mass(self) -> list[float]:
        """Records each kept value stands for."""
        kept = sum(self.weights)
        scale = self.count / kept if kept else 0.0
        return [w * scale for w in self.weights]

    def merge(self, other: Reservoir) -> None:
        """Fold another reservoir in.

        An exact reservoir (all its values kept, e.g. one evaluation chunk) continues this one's
        stream value by value, costing O(its size); a subsampled one is merged by weighted sampling.
        """
        if other.count == 0:
            return
        if other.count == len(other.values) and len(set(self.weights)) <= 1:
            self._offer_many(other.values)
            self.total += other.total
            if other.maximum is not None and (self.maximum is None or other.maximum > self.maximum):
                self.maximum = other.maximum
            return
        pool = list(zip(self.values, self._mass())) + list(zip(other.values, other._mass()))
        if len(pool) > self.capacity:
            rng = self._rng()  # weighted sampling without replacement (Efraimidis-Spirakis)
            pool = sorted(pool, key=lambda vw: rng.random() ** (1.0 / vw[1]), reverse=True)[: self.capacity]
            pool = [(v, 1.0) for v, _ in pool]
        self.values = [v for v, _ in pool]
        self.weights = [w for _, w in pool]
        self.count += other.count
        self.total += other.total
        if other.maximum is not None and (self.maximum is None or other.maximum > self.maximum):
            self.maximum = other.maximum

    def percentile(self, q: float) -> float | None:
        """Percentile (0-100) of the kept values, weighted; linear interpolation when unweighted."""
        if not self.values:
            return None
        if len(set(self.weights)) <= 1:
            data = sorted(self.values)
            k = (len(data) - 1) * q / 100
            lo, hi = math.floor(k), math.ceil(k)
            return data[lo] + (data[hi] - data[lo]) * (k - lo)
        pairs = sorted(zip(self.values, self.weights))
        target = sum(self.weights) * q / 100
        acc = 0.0
        for value, weight in pairs:
            acc += weight
            if acc >= target:
                return value
        return pairs[-1][0]

    def summary(self) -> dict[str, float | int | None]:
        """Count, mean, max and sample percentiles (None where there are no values)."""
        return {
            "n": self.count,
            "mean": (self.total / self.count) if self.count else None,
            "p50": self.percentile(50),
            "p90": self.percentile(90),
            "p95": self.percentile(95),
            "max": self.maximum,
            "exact": self.count == len(self.values),
        }
