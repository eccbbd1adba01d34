"""Small statistics for reports: Wilson intervals, Newcombe differences, bounded percentiles."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (0, 1) when n == 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_diff(s1: int, n1: int, s2: int, n2: int, z: float = Z95) -> tuple[float, float, float]:
    """Difference p1 - p2 of two independent proportions and its Newcombe (hybrid Wilson) interval."""
    if n1 <= 0 or n2 <= 0:
        return 0.0, -1.0, 1.0
    p1, p2 = s1 / n1, s2 / n2
    l1, u1 = wilson(s1, n1, z)
    l2, u2 = wilson(s2, n2, z)
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return d, max(-1.0, low), min(1.0, high)


@dataclass
class Reservoir:
    """Values for percentiles with bounded memory: exact up to ``capacity`` values, then a
    uniform reservoir sample (Algorithm R, seeded). ``max`` and ``count`` stay exact."""

    capacity: int = 20_000
    seed: int = 0
    values: list[float] = field(default_factory=list)
    count: int = 0
    maximum: float | None = None
    total: float = 0.0

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        if self.maximum is None or value > self.maximum:
            self.maximum = value
        if len(self.values) < self.capacity:
            self.values.append(value)
            return
        j = self._rng().randrange(self.count)
        if j < self.capacity:
            self.values[j] = value

    def _rng(self) -> random.Random:
        rng = getattr(self, "_random", None)
        if rng is None:
            rng = random.Random(self.seed)
            self._random = rng
        return rng

    def merge(self, other: Reservoir) -> None:
        """Fold another reservoir in (exact while the union fits, else a weighted sample)."""
        if other.count == 0:
            return
        if self.count + other.count <= self.capacity:
            self.values.extend(other.values)
        else:
            rng = self._rng()
            pool = [(v, self.count / max(len(self.values), 1)) for v in self.values]
            pool += [(v, other.count / max(len(other.values), 1)) for v in other.values]
            keys = sorted(pool, key=lambda vw: rng.random() ** (1.0 / vw[1]), reverse=True)
            self.values = [v for v, _ in keys[: self.capacity]]
        self.count += other.count
        self.total += other.total
        if other.maximum is not None and (self.maximum is None or other.maximum > self.maximum):
            self.maximum = other.maximum

    def percentile(self, q: float) -> float | None:
        """Linear-interpolated percentile (0-100) of the kept values; None when empty."""
        if not self.values:
            return None
        data = sorted(self.values)
        k = (len(data) - 1) * q / 100
        lo, hi = math.floor(k), math.ceil(k)
        return data[lo] + (data[hi] - data[lo]) * (k - lo)

    def summary(self) -> dict[str, float | int | None]:
        return {
            "n": self.count,
            "mean": (self.total / self.count) if self.count else None,
            "p50": self.percentile(50),
            "p90": self.percentile(90),
            "p95": self.percentile(95),
            "max": self.maximum,
            "exact": self.count <= self.capacity,
        }
