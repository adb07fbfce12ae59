"""In-process recall metrics: nearest-rank percentiles checked against numpy, plan counts and
latency per plan after real recalls, cache hit rate, rerank latency only when a rerank ran, and
how the CLI renders them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

import fivefold
from fivefold.cli.render import metrics_json, print_metrics
from fivefold.config import Config, OptimizerConfig
from fivefold.read.metrics import Metrics, percentile, summarize
from fivefold.types import OptimizerMode

QUERIES = (
    "what is my badge ID?",
    "where does Priya Patel work?",
    "what did I eat yesterday?",
    "tell me something",
)


def open_memory(mode: OptimizerMode) -> fivefold.Memory:
    config = Config(optimizer=OptimizerConfig(mode=mode))
    mem = fivefold.Memory.open(":memory:", embedder=fivefold.HashingEmbedder(), config=config)
    mem.remember("My badge ID is 47821")
    mem.remember("Priya Patel works at Acme on the platform team")
    mem.remember("Had ramen for lunch", type="event", event_at="2026-03-19T12:00:00+00:00")
    return mem


@pytest.fixture(params=list(OptimizerMode))
def mem(request: pytest.FixtureRequest) -> Iterator[fivefold.Memory]:
    with open_memory(request.param) as memory:
        yield memory


# -- percentiles -----------------------------------------------------------------------------------
@pytest.mark.slow
@given(st.lists(st.floats(0.0, 1e4, allow_nan=False), min_size=1, max_size=200))
def test_percentiles_are_numpys_nearest_rank(samples: list[float]) -> None:
    ordered = sorted(samples)
    for q in (1, 50, 90, 99, 100):
        assert percentile(ordered, q) == np.percentile(ordered, q, method="inverted_cdf")


def test_summary_of_known_samples() -> None:
    summary = summarize([float(v) for v in range(100, 0, -1)])
    assert summary.count == 100
    assert summary.p50_ms == 50.0
    assert summary.p99_ms == 99.0
    assert summary.mean_ms == 50.5
    assert percentile([], 50) == 0.0


def test_the_recorder_counts_plans_and_keeps_latency_per_plan() -> None:
    metrics = Metrics()
    for ms in (1.0, 2.0, 3.0):
        metrics.record("balanced", ms)
    metrics.record("precise", 10.0, rerank_ms=4.0)
    snapshot = metrics.snapshot(cache_hits=1, cache_misses=3)
    assert snapshot.recalls == 4
    assert snapshot.plans == {"balanced": 3, "precise": 1}
    assert snapshot.latency["balanced"].p50_ms == 2.0
    assert snapshot.latency["precise"].p99_ms == 10.0
    assert snapshot.cache_hit_rate == 0.25
    assert snapshot.rerank is not None
    assert snapshot.rerank.count == 1


# -- through Memory --------------------------------------------------------------------------------
def test_no_recalls_no_metrics(mem: fivefold.Memory) -> None:
    snapshot = mem.metrics()
    assert snapshot.recalls == 0
    assert snapshot.plans == {}
    assert snapshot.latency == {}
    assert snapshot.cache_hit_rate == 0.0
    assert snapshot.rerank is None


def test_every_recall_counts_under_the_plan_it_ran(mem: fivefold.Memory) -> None:
    plans = [mem.recall(q).plan.name.value for q in QUERIES]
    snapshot = mem.metrics()
    assert snapshot.recalls == len(QUERIES)
    assert snapshot.plans == {p: plans.count(p) for p in set(plans)}
    for plan, count in snapshot.plans.items():
        latency = snapshot.latency[plan]
        assert latency.count == count
        assert 0.0 < latency.p50_ms <= latency.p99_ms


def test_mode_off_runs_only_the_balanced_plan() -> None:
    with open_memory(OptimizerMode.OFF) as mem:
        for query in QUERIES:
            mem.recall(query)
        assert mem.metrics().plans == {"balanced": len(QUERIES)}


def test_cache_hits_count_apart_from_the_plans() -> None:
    with open_memory(OptimizerMode.CACHED) as mem:
        plan = mem.recall(QUERIES[0]).plan.name.value
        mem.recall(QUERIES[0])
        mem.recall(QUERIES[0])
        mem.recall(QUERIES[1])
        snapshot = mem.metrics()
    assert snapshot.recalls == 4
    assert snapshot.plans["cache"] == 2
    assert snapshot.plans[plan] >= 1
    assert (snapshot.cache_hits, snapshot.cache_misses) == (2, 2)
    assert snapshot.cache_hit_rate == 0.5


def test_no_rerank_latency_without_a_reranker() -> None:
    """An exploratory plan asks for rerank; with no model configured none runs, so there is no
    rerank latency (the rerank tests cover the case with a model)."""
    with open_memory(OptimizerMode.RULE) as mem:
        res = mem.recall("tell me something")
        assert res.plan.rerank
        assert mem.metrics().rerank is None


# -- rendering -------------------------------------------------------------------------------------
def test_metrics_render_as_a_table_and_as_json() -> None:
    with open_memory(OptimizerMode.CACHED) as mem:
        mem.recall(QUERIES[0])
        mem.recall(QUERIES[0])
        snapshot = mem.metrics()
    console = Console(record=True, width=120)
    print_metrics(console, snapshot)
    text = console.export_text()
    assert "recall metrics of this process (2 recalls)" in text
    assert "served from cache" in text
    assert "cache hit rate 50% (1 of 2 lookups)" in text
    assert "rerank: none ran" in text
    payload = json.loads(json.dumps(metrics_json(snapshot)))
    assert payload["scope"] == "this process"
    assert payload["recalls"] == 2
    assert payload["cache_hit_rate"] == 0.5
    assert payload["latency"]["cache"]["count"] == 1


def test_empty_metrics_say_they_cover_this_process() -> None:
    console = Console(record=True, width=200)
    print_metrics(console, Metrics().snapshot(cache_hits=0, cache_misses=0))
    assert "cover this process only" in console.export_text()
