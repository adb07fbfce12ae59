"""In-process recall metrics, the signals that show how the optimizer is doing: plans selected,
latency per plan, cache hit rate, rerank latency. Kept in memory, bounded; the HTTP server will
export them."""

from __future__ import annotations

import threading
from collections import Counter, deque
from dataclasses import dataclass, field

SAMPLES = 2048
# Recalls served by the result cache are counted under this name, apart from the plans.
CACHE_PLAN = "cache"


@dataclass(frozen=True, slots=True)
class LatencySummary:
    count: int
    p50_ms: float
    p99_ms: float
    mean_ms: float


@dataclass(frozen=True, slots=True)
class MetricsSnapshot:
    recalls: int
    plans: dict[str, int]
    latency: dict[str, LatencySummary]
    cache_hits: int
    cache_misses: int
    cache_hit_rate: float
    rerank: LatencySummary | None


@dataclass
class Metrics:
    _plans: Counter[str] = field(default_factory=Counter)
    _latency: dict[str, deque[float]] = field(default_factory=dict)
    _rerank: deque[float] = field(default_factory=lambda: deque(maxlen=SAMPLES))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, plan: str, elapsed_ms: float, rerank_ms: float | None = None) -> None:
        with self._lock:
            self._plans[plan] += 1
            self._latency.setdefault(plan, deque(maxlen=SAMPLES)).append(elapsed_ms)
            if rerank_ms is not None:
                self._rerank.append(rerank_ms)

    def snapshot(self, *, cache_hits: int, cache_misses: int) -> MetricsSnapshot:
        with self._lock:
            total = cache_hits + cache_misses
            return MetricsSnapshot(
                recalls=sum(self._plans.values()),
                plans=dict(self._plans),
                latency={p: summarize(list(v)) for p, v in self._latency.items() if v},
                cache_hits=cache_hits,
                cache_misses=cache_misses,
                cache_hit_rate=cache_hits / total if total else 0.0,
                rerank=summarize(list(self._rerank)) if self._rerank else None,
            )


def summarize(samples: list[float]) -> LatencySummary:
    ordered = sorted(samples)
    return LatencySummary(
        count=len(ordered),
        p50_ms=percentile(ordered, 50),
        p99_ms=percentile(ordered, 99),
        mean_ms=sum(ordered) / len(ordered),
    )


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not ordered:
        return 0.0
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(min(rank, len(ordered))) - 1]
