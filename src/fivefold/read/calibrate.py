"""Calibrated confidence: the probability that a recalled memory answers the query.

A fused score says which memory ranks first, not whether any memory answers at all: the top hit
of a question about something never stored scores as "first" as the top hit of an answerable
one. So every hit also gets a confidence from a logistic model over what recall already knows
about it (pure arithmetic, no I/O): how close its fused score is to the top hit's, its rank,
the lexical and semantic evidence for it, how many retrievers found it, and how strong the best
lexical and semantic evidence of the whole result is.

The coefficients are fit by ``fivefold bench calibration`` on the public LoCoMo conversations
(every question, categories 1-5, and every question asked again in another conversation, where
nothing answers it): a hit is positive when it is one of the question's evidence turns. The
bench reports the fit on each half of the conversations from a model fit on the other half
(reliability table, expected calibration error) and prints the coefficients fit on all of them,
which are the ones below.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from fivefold.types import FusionTerm, RetrieverName

FEATURES = (
    "bias",
    "relative_score",
    "log_rank",
    "lexical",
    "semantic",
    "retrievers",
    "top_lexical",
    "top_semantic",
)
# Fit by `fivefold bench calibration` (see the module docstring and BENCHMARKS.md): for results
# the rules ranked, and for results learned fusion ranked (its scores are probabilities, so
# ``relative_score`` means another thing there), fit on recalls ranked by models that never
# saw the recall's conversation (`--optimizer learned`).
COEFFICIENTS = (-9.1217, 1.908, -0.7058, 5.571, -0.0041, 0.1213, -0.0794, 5.0424)
LEARNED_COEFFICIENTS = (-8.6988, 1.7029, -0.6656, 1.9713, 0.6555, 0.1856, 3.4866, 4.1844)


def hit_features(
    terms: Sequence[FusionTerm],
    *,
    rank: int,
    score: float,
    top_score: float,
    top_lexical: float,
    top_semantic: float,
) -> npt.NDArray[np.float64]:
    """The feature vector of one hit (``rank`` from 1), in ``FEATURES`` order."""
    lexical = max((t.confidence for t in terms if t.retriever is RetrieverName.LEXICAL), default=0)
    semantic = max(
        (t.confidence for t in terms if t.retriever is RetrieverName.SEMANTIC), default=0
    )
    return np.array(
        [
            1.0,
            score / top_score if top_score > 0.0 else 0.0,
            math.log(rank),
            lexical,
            semantic,
            float(len({t.retriever for t in terms})),
            top_lexical,
            top_semantic,
        ]
    )


def result_features(
    ranked: Sequence[tuple[Sequence[FusionTerm], float]],
) -> list[npt.NDArray[np.float64]]:
    """The feature vector of each hit of one result, given each hit's fusion terms and final
    score, best first."""
    top_lexical, top_semantic = best_evidence([terms for terms, _ in ranked])
    top_score = ranked[0][1] if ranked else 0.0
    return [
        hit_features(
            terms,
            rank=rank,
            score=score,
            top_score=top_score,
            top_lexical=top_lexical,
            top_semantic=top_semantic,
        )
        for rank, (terms, score) in enumerate(ranked, start=1)
    ]


def best_evidence(hits_terms: Sequence[Sequence[FusionTerm]]) -> tuple[float, float]:
    """The strongest lexical and semantic confidence among a result's hits."""
    lexical = semantic = 0.0
    for terms in hits_terms:
        for term in terms:
            if term.retriever is RetrieverName.LEXICAL:
                lexical = max(lexical, term.confidence)
            elif term.retriever is RetrieverName.SEMANTIC:
                semantic = max(semantic, term.confidence)
    return lexical, semantic


def confidence(
    features: npt.NDArray[np.float64], coefficients: Sequence[float] = COEFFICIENTS
) -> float:
    z = float(np.dot(features, np.asarray(coefficients, dtype=np.float64)))
    return 1.0 / (1.0 + math.exp(-z)) if z > -700.0 else 0.0


__all__ = [
    "COEFFICIENTS",
    "FEATURES",
    "LEARNED_COEFFICIENTS",
    "best_evidence",
    "confidence",
    "hit_features",
    "result_features",
]
