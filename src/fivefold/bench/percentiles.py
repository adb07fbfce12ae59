"""Latency percentiles, as the latency benchmark and its peer comparison report them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True, kw_only=True)
class Percentiles:
    """Milliseconds. Percentiles interpolate linearly (numpy's default): with fewer than 100
    samples p99 is close to the maximum, and ``count`` says how many there were."""

    count: int
    mean: float
    p50: float
    p95: float
    p99: float
    max: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Percentiles:
        if not samples:
            return cls(count=0, mean=0.0, p50=0.0, p95=0.0, p99=0.0, max=0.0)
        p50, p95, p99 = (float(v) for v in np.percentile(samples, [50, 95, 99]))
        mean, top = float(np.mean(samples)), float(np.max(samples))
        return cls(count=len(samples), mean=mean, p50=p50, p95=p95, p99=p99, max=top)
