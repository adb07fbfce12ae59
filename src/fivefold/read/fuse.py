"""Fusion of ranked lists: pure functions, no I/O.

The default is score-weighted RRF: ``score(d) = sum_i w_i * sqrt(c_i(d)) / (k + r_i(d))``
with ``k = 60`` (``fusion.k``, the balanced plan's; the optimizer's plans pass
``optimizer.fusion_k``, 10) and ranks from 1. Graph evidence beyond 0 hops is weighted 0.8 of
the graph weight. The challengers (plain RRF, convex combination with min-max normalization)
live here too, so the benchmark can swap them in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from fivefold.types import FusionTerm, RetrieverName, RetrieverRun


@dataclass(frozen=True, slots=True)
class Fused:
    id: int
    score: float
    terms: tuple[FusionTerm, ...]


def weighted_rrf(
    runs: Sequence[RetrieverRun],
    weights: Mapping[RetrieverName, float],
    *,
    k: int = 60,
    multi_hop_factor: float = 0.8,
) -> list[Fused]:
    """Score-weighted RRF. A retriever missing from ``weights`` weighs 1.0."""
    terms: dict[int, list[FusionTerm]] = {}
    # Summed as the terms come, in the same order a sum over each id's terms would add them:
    # the same floats, without a second pass over a few hundred candidates.
    scores: dict[int, float] = {}
    sqrt = math.sqrt
    for run in runs:
        base = weights.get(run.name, 1.0)
        hop_weight = base * multi_hop_factor
        name = run.name
        for rank, item in enumerate(run.items, start=1):
            weight = hop_weight if item.hops else base
            confidence = item.confidence
            contribution = weight * sqrt(max(confidence, 0.0)) / (k + rank)
            term = FusionTerm(name, rank, confidence, weight, contribution)
            found = terms.get(item.id)
            if found is None:
                terms[item.id] = [term]
                scores[item.id] = 0.0 + contribution
            else:
                found.append(term)
                scores[item.id] += contribution
    order = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
    return [Fused(i, score, tuple(terms[i])) for i, score in order]


def plain_rrf(runs: Sequence[RetrieverRun], *, k: int = 60) -> list[Fused]:
    """Cormack et al. 2009: ``sum_i 1 / (k + r_i(d))``; scores and weights ignored."""
    terms: dict[int, list[FusionTerm]] = {}
    for run in runs:
        for rank, item in enumerate(run.items, start=1):
            terms.setdefault(item.id, []).append(
                FusionTerm(run.name, rank, item.confidence, 1.0, 1.0 / (k + rank))
            )
    return _sorted(terms, lambda ts: sum(t.contribution for t in ts))


def convex(runs: Sequence[RetrieverRun], weights: Mapping[RetrieverName, float]) -> list[Fused]:
    """Convex combination of min-max normalized confidences (Bruch et al.), a challenger to
    RRF. A list with one distinct score normalizes to 1.0."""
    terms: dict[int, list[FusionTerm]] = {}
    total = sum(weights.get(run.name, 1.0) for run in runs) or 1.0
    for run in runs:
        if not run.items:
            continue
        values = [item.confidence for item in run.items]
        low, high = min(values), max(values)
        weight = weights.get(run.name, 1.0) / total
        for rank, item in enumerate(run.items, start=1):
            norm = 1.0 if high == low else (item.confidence - low) / (high - low)
            terms.setdefault(item.id, []).append(
                FusionTerm(run.name, rank, item.confidence, weight, weight * norm)
            )
    return _sorted(terms, lambda ts: sum(t.contribution for t in ts))


def apply_prior(
    fused: Sequence[Fused], importance: Mapping[int, float], floor: float
) -> list[Fused]:
    """``final = fused x (floor + (1 - floor) x importance)``: importance is a prior on the
    fused score, not a list of its own. Unknown ids keep importance 0.5."""
    out = [
        Fused(f.id, f.score * (floor + (1.0 - floor) * importance.get(f.id, 0.5)), f.terms)
        for f in fused
    ]
    return sorted(out, key=lambda f: (-f.score, f.id))


def boost(fused: Sequence[Fused], chosen: Collection[int], factor: float) -> list[Fused]:
    """``score x (1 + factor)`` for the ``chosen`` ids, re-sorted (ties by id)."""
    if not chosen or factor == 0.0:
        return list(fused)
    out = [Fused(f.id, f.score * (1.0 + factor), f.terms) if f.id in chosen else f for f in fused]
    return sorted(out, key=lambda f: (-f.score, f.id))


def _sorted(
    terms: Mapping[int, list[FusionTerm]], total: Callable[[list[FusionTerm]], float]
) -> list[Fused]:
    fused = [Fused(i, total(ts), tuple(ts)) for i, ts in terms.items()]
    return sorted(fused, key=lambda f: (-f.score, f.id))
