"""Maximal marginal relevance (Carbonell and Goldstein, 1998) over memory embeddings.

Greedy: each step takes the candidate maximizing
``lambda * relevance(d) - (1 - lambda) * max_{s in selected} cos(d, s)``, where relevance is
the fused score min-max normalized over the candidates (fusion already mixes every signal;
re-deriving relevance from the query vector alone would undo it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from fivefold.embed.base import Vectors


def mmr_order(
    ids: Sequence[int],
    scores: Sequence[float],
    vectors: Mapping[int, Vectors],
    *,
    lambda_: float,
    limit: int,
) -> list[int]:
    """Reorder ``ids`` (best first by ``scores``); memories without a vector keep their place
    relative to each other and follow the diversified ones."""
    with_vectors = [i for i in ids if i in vectors]
    if len(with_vectors) < 2 or limit <= 1:
        return list(ids)
    score_of = dict(zip(ids, scores, strict=True))
    low, high = min(score_of.values()), max(score_of.values())
    span = (high - low) or 1.0
    relevance = np.array([(score_of[i] - low) / span for i in with_vectors])
    matrix = np.stack([vectors[i] for i in with_vectors])
    similarity = matrix @ matrix.T
    chosen: list[int] = []
    redundancy = np.full(len(with_vectors), -np.inf)
    remaining = np.ones(len(with_vectors), dtype=bool)
    for _ in range(min(limit, len(with_vectors))):
        penalty = np.where(np.isfinite(redundancy), redundancy, 0.0)
        value = lambda_ * relevance - (1.0 - lambda_) * penalty
        value[~remaining] = -np.inf
        pick = int(np.argmax(value))
        chosen.append(pick)
        remaining[pick] = False
        redundancy = np.maximum(redundancy, similarity[pick])
    picked = [with_vectors[p] for p in chosen]
    rest = [i for i in ids if i not in set(picked)]
    return picked + rest
