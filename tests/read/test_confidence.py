"""Calibrated hit confidence and ``min_confidence`` (fivefold.read.calibrate)."""

from __future__ import annotations

import numpy as np
import pytest

import fivefold
from fivefold.learn.logistic import fit_logistic
from fivefold.read.calibrate import (
    COEFFICIENTS,
    FEATURES,
    confidence,
    result_features,
)
from fivefold.types import FusionTerm, RetrieverName


def _term(name: RetrieverName, confidence: float, rank: int = 1) -> FusionTerm:
    return FusionTerm(name, rank, confidence, 1.0, confidence / (10 + rank))


def test_features_follow_their_names() -> None:
    strong = [_term(RetrieverName.LEXICAL, 0.9), _term(RetrieverName.SEMANTIC, 0.6)]
    weak = [_term(RetrieverName.SEMANTIC, 0.3, rank=2)]
    first, second = result_features([(strong, 0.2), (weak, 0.05)])
    named = dict(zip(FEATURES, second, strict=True))
    assert len(COEFFICIENTS) == len(FEATURES)
    assert named["bias"] == 1.0
    assert named["relative_score"] == pytest.approx(0.25)
    assert named["log_rank"] == pytest.approx(np.log(2))
    assert (named["lexical"], named["semantic"], named["retrievers"]) == (0.0, 0.3, 1.0)
    assert (named["top_lexical"], named["top_semantic"]) == (0.9, 0.6)
    assert dict(zip(FEATURES, first, strict=True))["retrievers"] == 2.0
    assert result_features([]) == []


def test_confidence_is_a_probability_and_rises_with_evidence() -> None:
    weak = result_features([([_term(RetrieverName.SEMANTIC, 0.2)], 0.01)])[0]
    strong = result_features(
        [([_term(RetrieverName.LEXICAL, 0.95), _term(RetrieverName.SEMANTIC, 0.8)], 0.2)]
    )[0]
    assert 0.0 <= confidence(weak) < confidence(strong) <= 1.0
    assert confidence(np.full(len(FEATURES), -1e6), COEFFICIENTS) == 0.0


def test_fit_logistic_recovers_known_coefficients() -> None:
    rng = np.random.default_rng(0)
    x = np.column_stack([np.ones(20_000), rng.normal(size=(20_000, 2))])
    truth = np.array([-0.5, 2.0, -1.0])
    y = (rng.random(20_000) < 1.0 / (1.0 + np.exp(-(x @ truth)))).astype(float)
    assert np.allclose(fit_logistic(x, y, l2=0.0), truth, atol=0.1)


def test_hits_carry_confidence_and_min_confidence_drops_and_counts(
    mem: fivefold.Memory,
) -> None:
    mem.remember_many(
        [
            {"content": "My badge ID is 47821"},
            {"content": "Nia is allergic to peanuts"},
            {"content": "I prefer a flat white with oat milk"},
        ]
    )
    result = mem.recall("what is my badge ID?", k=3)
    assert result.dropped == 0
    assert all(0.0 <= h.confidence <= 1.0 for h in result.hits)
    assert result.hits[0].memory.content == "My badge ID is 47821"
    assert result.hits[0].confidence == max(h.confidence for h in result.hits)
    bar = (result.hits[0].confidence + result.hits[-1].confidence) / 2
    kept = mem.recall("what is my badge ID?", k=3, min_confidence=bar)
    assert [h.memory.id for h in kept.hits] == [
        h.memory.id for h in result.hits if h.confidence >= bar
    ]
    assert kept.dropped == len(result.hits) - len(kept.hits) > 0
    everything = mem.recall("what is my badge ID?", k=3, min_confidence=1.0)
    assert everything.hits == ()
    assert everything.dropped == len(result.hits)
    empty = mem.recall("anything", k=3, namespace="nobody", min_confidence=0.5)
    assert (empty.hits, empty.dropped) == ((), 0)


@pytest.mark.parametrize("bad", [-0.1, 1.5, "high", float("nan")])
def test_a_bad_min_confidence_is_refused(hashing_mem: fivefold.Memory, bad: object) -> None:
    with pytest.raises(fivefold.InvalidInput, match="min_confidence"):
        hashing_mem.recall("x", min_confidence=bad)  # type: ignore[arg-type]
