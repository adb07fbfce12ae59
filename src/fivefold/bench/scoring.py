"""Scoring shared by the quality benchmark's systems and its policy runs: the metric columns,
per-question scores, means per category and the paired test of one system against another."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from fivefold.bench.datasets import Query
from fivefold.bench.metrics import Metric, score, session_ranking
from fivefold.bench.stats import paired_bootstrap

__all__ = [
    "Comparison",
    "MetricSpec",
    "by_category",
    "compare",
    "mean",
    "metric_specs",
    "per_question",
    "significance_label",
]

RECALL_CUTOFFS = (1, 5, 10, 25, 50)


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricSpec:
    """One column: ``metric`` at cutoff ``k`` on turns, or on sessions when ``session``."""

    label: str
    metric: Metric
    k: int
    session: bool = False


def metric_specs(k_max: int) -> tuple[MetricSpec, ...]:
    """Partial-credit recall at every standard cutoff up to ``k_max``, recall_any@10, nDCG@10,
    MRR over the whole ``k_max`` list and session-level recall@10."""
    ten = min(10, k_max)
    recalls = [c for c in RECALL_CUTOFFS if c <= k_max]
    if k_max not in recalls:
        recalls.append(k_max)
    return (
        *(MetricSpec(label=f"R@{c}", metric=Metric.RECALL, k=c) for c in recalls),
        MetricSpec(label=f"any@{ten}", metric=Metric.RECALL_ANY, k=ten),
        MetricSpec(label=f"nDCG@{ten}", metric=Metric.NDCG, k=ten),
        MetricSpec(label="MRR", metric=Metric.MRR, k=k_max),
        MetricSpec(label=f"sR@{ten}", metric=Metric.RECALL, k=ten, session=True),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """A system against the engine on per-question ``metric``: mean(system - engine), its 95 %
    paired-bootstrap interval and two-sided p-value."""

    metric: str
    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    n: int

    @property
    def significant(self) -> bool:
        return self.p_value < 0.05


def significance_label(k_max: int) -> str:
    """The per-question metric every system is tested on against the engine."""
    return f"R@{min(10, k_max)}"


def per_question(
    rankings: Sequence[tuple[str, ...]],
    queries: Sequence[Query],
    session_of: Mapping[str, str],
    specs: Sequence[MetricSpec],
) -> dict[str, tuple[float | None, ...]]:
    """Metric label -> per-question scores; None where the question does not define the metric
    (turn-level metrics of a question with session-level evidence only, and the reverse)."""
    columns: dict[str, list[float | None]] = {spec.label: [] for spec in specs}
    for ranked, query in zip(rankings, queries, strict=True):
        sessions = session_ranking(ranked, session_of) if query.relevant_sessions else None
        for spec in specs:
            value: float | None = None
            if spec.session and sessions is not None:
                value = score(spec.metric, sessions, query.relevant_sessions, k=spec.k)
            elif not spec.session and query.relevant:
                value = score(spec.metric, ranked, query.relevant, k=spec.k)
            columns[spec.label].append(value)
    return {label: tuple(values) for label, values in columns.items()}


def mean(values: Sequence[float | None]) -> float | None:
    defined = [v for v in values if v is not None]
    return math.fsum(defined) / len(defined) if defined else None


def by_category(
    scores: Mapping[str, Sequence[float | None]], categories: Sequence[str]
) -> Mapping[str, Mapping[str, float | None]]:
    out: dict[str, Mapping[str, float | None]] = {}
    for category in sorted(set(categories)):
        picked = {
            label: mean([v for v, c in zip(values, categories, strict=True) if c == category])
            for label, values in scores.items()
        }
        out[category] = MappingProxyType(picked)
    return MappingProxyType(out)


def compare(
    system: Sequence[float | None],
    engine: Sequence[float | None],
    label: str,
    resamples: int,
) -> Comparison | None:
    pairs = [(a, b) for a, b in zip(system, engine, strict=True) if a is not None and b is not None]
    if not pairs:
        return None
    ours, theirs = zip(*pairs, strict=True)
    test = paired_bootstrap(ours, theirs, resamples=resamples, seed=0)
    return Comparison(
        metric=label,
        mean_diff=test.mean_diff,
        ci_low=test.ci_low,
        ci_high=test.ci_high,
        p_value=test.p_value,
        n=test.n,
    )
