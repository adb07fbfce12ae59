"""Ranking metrics over one ranked list of ids and one set of relevant ids, and their means.

Pure functions with trec_eval's definitions, so the tests can check them against ir-measures:

- ``recall``: fraction of the relevant ids found in the top k (trec_eval's ``recall_k``; LoCoMo's
  "recall accuracy", i.e. partial credit);
- ``recall_any`` / ``recall_all``: 1 if any / all relevant ids are in the top k (LongMemEval);
- ``ndcg``: binary gains, log2 discount, ideal ranking over min(k, |relevant|) hits;
- ``mrr``: reciprocal rank of the first relevant id, 0 if none (within the top k, if given).

A ranked list must not repeat an id (a retriever returning duplicates is a bug the harness should
surface, not average over), and the relevant set must not be empty (every metric is undefined
then). Session-level variants map doc ids to sessions first and keep each session's first
occurrence, which is what LongMemEval's turn-to-session scoring does by widening k until k
distinct sessions are seen.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from fivefold.errors import InvalidInput

__all__ = [
    "Mean",
    "Metric",
    "Summary",
    "mrr",
    "ndcg",
    "recall",
    "recall_all",
    "recall_any",
    "score",
    "session_ranking",
    "session_score",
    "summarize",
]


class Metric(StrEnum):
    """The metrics ``score`` knows, named as reports print them."""

    RECALL = "recall"
    RECALL_ANY = "recall_any"
    RECALL_ALL = "recall_all"
    NDCG = "ndcg"
    MRR = "mrr"


def recall(ranked: Sequence[str], relevant: AbstractSet[str], k: int) -> float:
    """Fraction of ``relevant`` found in the top ``k`` of ``ranked`` (partial credit)."""
    return _hits(ranked, relevant, k) / len(relevant)


def recall_any(ranked: Sequence[str], relevant: AbstractSet[str], k: int) -> float:
    """1.0 if at least one relevant id is in the top ``k``, else 0.0."""
    return 1.0 if _hits(ranked, relevant, k) > 0 else 0.0


def recall_all(ranked: Sequence[str], relevant: AbstractSet[str], k: int) -> float:
    """1.0 if every relevant id is in the top ``k``, else 0.0."""
    return 1.0 if _hits(ranked, relevant, k) == len(relevant) else 0.0


def ndcg(ranked: Sequence[str], relevant: AbstractSet[str], k: int) -> float:
    """nDCG@k with binary gains: DCG over the top ``k`` divided by the DCG of a ranking that puts
    min(k, |relevant|) relevant ids first."""
    _check(ranked, relevant, k)
    gain = sum(1.0 / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k]) if doc in relevant)
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(k, len(relevant))))
    return gain / ideal


def mrr(ranked: Sequence[str], relevant: AbstractSet[str], k: int | None = None) -> float:
    """1 / rank of the first relevant id (ranks from 1), 0.0 if none is in the top ``k`` (or in
    the whole list when ``k`` is None). Averaged over queries this is the mean reciprocal rank."""
    _check(ranked, relevant, 1 if k is None else k)
    for rank, doc in enumerate(ranked[:k], start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


_METRICS: Mapping[Metric, Callable[[Sequence[str], AbstractSet[str], int], float]] = {
    Metric.RECALL: recall,
    Metric.RECALL_ANY: recall_any,
    Metric.RECALL_ALL: recall_all,
    Metric.NDCG: ndcg,
    Metric.MRR: mrr,
}


def score(metric: Metric, ranked: Sequence[str], relevant: AbstractSet[str], *, k: int) -> float:
    """``metric`` at cutoff ``k``, for callers that loop over a list of metrics."""
    return _METRICS[metric](ranked, relevant, k)


def session_ranking(ranked: Sequence[str], session_of: Mapping[str, str]) -> list[str]:
    """Sessions of the ranked doc ids, each kept at its first (best) position."""
    sessions: dict[str, None] = {}
    for doc in ranked:
        session = session_of.get(doc)
        if session is None:
            raise InvalidInput(f"doc id {doc!r} has no session: cannot score it at session level")
        sessions.setdefault(session, None)
    return list(sessions)


def session_score(
    metric: Metric,
    ranked: Sequence[str],
    relevant_sessions: AbstractSet[str],
    *,
    session_of: Mapping[str, str],
    k: int,
) -> float:
    """``metric`` at cutoff ``k`` over ``session_ranking(ranked, session_of)``."""
    return score(metric, session_ranking(ranked, session_of), relevant_sessions, k=k)


@dataclass(frozen=True, slots=True, kw_only=True)
class Mean:
    value: float
    n: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    """Mean over all questions and per category (categories in sorted order, read-only)."""

    overall: Mean
    by_category: Mapping[str, Mean]


def summarize(scores: Sequence[float], categories: Sequence[str]) -> Summary:
    """Mean of per-question ``scores`` overall and per category; ``categories[i]`` labels
    ``scores[i]``."""
    if len(scores) != len(categories):
        raise InvalidInput(f"{len(scores)} scores but {len(categories)} categories")
    if not scores:
        raise InvalidInput("no scores to summarize")
    if not all(math.isfinite(value) for value in scores):
        raise InvalidInput("scores must be finite numbers")
    grouped: dict[str, list[float]] = {}
    for value, category in zip(scores, categories, strict=True):
        grouped.setdefault(category, []).append(value)
    by_category = {name: _mean(grouped[name]) for name in sorted(grouped)}
    return Summary(overall=_mean(scores), by_category=MappingProxyType(by_category))


def _mean(values: Sequence[float]) -> Mean:
    return Mean(value=math.fsum(values) / len(values), n=len(values))


def _hits(ranked: Sequence[str], relevant: AbstractSet[str], k: int) -> int:
    _check(ranked, relevant, k)
    return sum(1 for doc in ranked[:k] if doc in relevant)


def _check(ranked: Sequence[str], relevant: AbstractSet[str], k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"the cutoff k must be a positive integer, got {k!r}")
    if not relevant:
        raise InvalidInput("the relevant set is empty: the metric is undefined")
    if len(set(ranked)) != len(ranked):
        raise InvalidInput("the ranked list repeats an id")
