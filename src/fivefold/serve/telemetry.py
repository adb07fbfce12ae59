"""Prometheus metrics of the server (``/metrics``).

With several worker processes each keeps its own counters, so the exposition merges them from
``PROMETHEUS_MULTIPROC_DIR`` (set by ``fivefold serve`` before the workers start, as
prometheus-client's multiprocess mode requires); one process exposes its registry directly.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from fivefold.serve.budget import TokenBudget
from fivefold.types import RecallResult

__all__ = ["CONTENT_TYPE", "Telemetry"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Recall stages run from tens of microseconds (a cache hit) to tens of milliseconds.
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0)


class _StoreSize(Collector):
    """The store's size, read at scrape time (a gauge kept per worker would go stale)."""

    def __init__(self, size: Callable[[], int]) -> None:
        self._size = size

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily("fivefold_store_bytes", "Size of the store on disk", self._size())


class _Budget(Collector):
    """The embedding budget's word pieces held now and at most, read at scrape time (this
    worker's: each worker has a budget of its own)."""

    def __init__(self, budget: TokenBudget | None) -> None:
        self._budget = budget

    def collect(self) -> Iterator[GaugeMetricFamily]:
        if self._budget is None:
            return
        held, peak, total = self._budget.held, self._budget.peak, self._budget.total
        yield GaugeMetricFamily(
            "fivefold_embed_tokens_in_flight", "Word pieces being embedded now", held
        )
        yield GaugeMetricFamily(
            "fivefold_embed_tokens_peak", "Most word pieces embedded at once so far", peak
        )
        yield GaugeMetricFamily(
            "fivefold_embed_tokens_budget", "Word pieces embedded at once at most", total
        )


class Telemetry:
    def __init__(self, store_size: Callable[[], int], budget: TokenBudget | None = None) -> None:
        self._registry = CollectorRegistry()
        self._store_size = _StoreSize(store_size)
        self._budget = _Budget(budget)
        self.requests = self._seconds(
            "fivefold_http_request_seconds",
            "HTTP request latency by endpoint and status",
            ["endpoint", "status"],
        )
        self.recalls = Counter(
            "fivefold_recalls", "Recalls by plan", ["plan"], registry=self._registry
        )
        self.recall_seconds = self._seconds(
            "fivefold_recall_seconds", "Recall latency inside the engine by plan", ["plan"]
        )
        self.stage_seconds = self._seconds(
            "fivefold_recall_stage_seconds",
            "Time per recall stage and retriever leg (parse, embed, semantic, lexical, ...)",
            ["stage"],
        )
        self.cache_hits = Counter(
            "fivefold_cache_hits", "Recalls answered from the result cache", registry=self._registry
        )
        self.writes = Counter(
            "fivefold_writes", "Memories written", ["kind"], registry=self._registry
        )
        self.errors = Counter(
            "fivefold_errors", "Error responses by code", ["code"], registry=self._registry
        )
        self._registry.register(self._store_size)
        self._registry.register(self._budget)

    def _seconds(self, name: str, documentation: str, labels: list[str]) -> Histogram:
        return Histogram(name, documentation, labels, buckets=_BUCKETS, registry=self._registry)

    def recalled(self, result: RecallResult) -> None:
        plan = result.plan.name.value
        self.recalls.labels(plan).inc()
        if result.cached:
            self.cache_hits.inc()
        timings: Mapping[str, float] = result.timings
        self.recall_seconds.labels(plan).observe(timings.get("total", 0.0) / 1000.0)
        for stage, ms in timings.items():
            if stage != "total":
                self.stage_seconds.labels(stage).observe(ms / 1000.0)

    def exposition(self) -> bytes:
        if not os.environ.get(_MULTIPROC_ENV):
            return generate_latest(self._registry)
        merged = CollectorRegistry()
        MultiProcessCollector(merged)  # type: ignore[no-untyped-call]
        merged.register(self._store_size)
        merged.register(self._budget)
        return generate_latest(merged)
