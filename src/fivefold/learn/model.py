"""Learned fusion (Mode C): a logistic model that ranks a recall's candidates from what
the retrievers already computed, trained on feedback (``Memory.feedback``, ``Memory.train``).

Every candidate any leg found gets a feature vector (``FEATURES``): per leg its confidence,
reciprocal rank, whether it found the memory at all and its confidence scaled to the leg's own
list (min-max); whether the memory's own text matches the query, not only its session
neighbours', and how well; whether a person the query names said it; whether it falls in the
query's time window; its importance, its length, and its rank in the rule fusion. The model is
pointwise logistic regression on standardized features (``fit``), scored as a dot product: no
I/O, well under a millisecond for a few hundred candidates.

The features, and a pointwise loss over a pairwise one, were chosen on conversations held out
from training (BENCHMARKS.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from fivefold.errors import InvalidInput
from fivefold.learn.logistic import fit_logistic
from fivefold.store.records import MemoryAttributes
from fivefold.types import RetrieverName, RetrieverRun, TimeWindow

__all__ = [
    "FEATURES",
    "Candidates",
    "Example",
    "LearnedModel",
    "candidate_features",
    "fit",
    "recall_at",
]

LEGS = (
    RetrieverName.SEMANTIC,
    RetrieverName.LEXICAL,
    RetrieverName.GRAPH,
    RetrieverName.TEMPORAL,
)
PER_LEG = ("confidence", "reciprocal_rank", "found", "relative")
FEATURES: tuple[str, ...] = (
    "bias",
    *(f"{leg.value}_{what}" for leg in LEGS for what in PER_LEG),
    "own_text",
    "own_text_score",
    "speaker",
    "in_window",
    "window",
    "importance",
    "rule_reciprocal_rank",
    "log_length",
    "log_length_squared",
    "graph_direct",
)
FORMAT = 1  # of a model's JSON: another format is not loaded (the rules answer instead)
Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Candidates:
    """One recall's candidates (ids in rule-fusion order) and their feature rows."""

    ids: tuple[int, ...]
    features: Matrix


@dataclass(frozen=True, slots=True)
class Example:
    """Candidates with labels: 1.0 where the memory answers (feedback said it was relevant or
    used), 0.0 elsewhere. ``group`` keeps one recall's rows together when splitting."""

    candidates: Candidates
    labels: npt.NDArray[np.float64]
    group: int


def candidate_features(
    runs: Sequence[RetrieverRun],
    rule_order: Sequence[int],
    attributes: Mapping[int, MemoryAttributes],
    *,
    spoken: set[int],
    window: TimeWindow | None,
    own_text: Mapping[int, float],
) -> Candidates:
    """``rule_order``: every candidate, best first by the rule fusion; ``own_text``: the
    squashed BM25 of a candidate's own text (absent: no match)."""
    found: dict[RetrieverName, dict[int, tuple[int, float, int | None]]] = {}
    spans: dict[RetrieverName, tuple[float, float]] = {}
    for run in runs:
        if run.name not in LEGS or not run.items:
            continue
        found[run.name] = {
            item.id: (rank, item.confidence, item.hops)
            for rank, item in enumerate(run.items, start=1)
        }
        confidences = [item.confidence for item in run.items]
        spans[run.name] = (min(confidences), max(confidences))
    # Rows as lists, made into one matrix at the end: a row assigned into the matrix at a time
    # cost more than the features themselves.
    legs = [(found.get(leg), spans.get(leg, (0.0, 0.0))) for leg in LEGS]
    graph_hits = found.get(RetrieverName.GRAPH, {})
    windowed = 1.0 if window is not None else 0.0
    table: list[list[float]] = []
    for row, memory_id in enumerate(rule_order):
        values = [1.0]
        for hits, (low, high) in legs:
            hit = None if hits is None else hits.get(memory_id)
            if hit is None:
                values += [0.0, 0.0, 0.0, 0.0]
                continue
            rank, confidence, _ = hit
            relative = (confidence - low) / (high - low) if high > low else 1.0
            values += [confidence, 1.0 / rank, 1.0, relative]
        own = own_text.get(memory_id, 0.0)
        found_attributes = attributes.get(memory_id)
        when = None
        if found_attributes is not None:
            when = found_attributes.event_at or found_attributes.created_at
        inside = window is not None and when is not None and window.start <= when <= window.end
        length = math.log1p(found_attributes.length) if found_attributes is not None else 0.0
        graph = graph_hits.get(memory_id)
        values += [
            1.0 if own > 0.0 else 0.0,
            own,
            1.0 if memory_id in spoken else 0.0,
            1.0 if inside else 0.0,
            windowed,
            found_attributes.importance if found_attributes is not None else 0.5,
            1.0 / (row + 1),
            length,
            length * length,
            1.0 if graph is not None and graph[2] == 0 else 0.0,
        ]
        table.append(values)
    rows = np.array(table, dtype=np.float64).reshape(len(rule_order), len(FEATURES))
    return Candidates(tuple(rule_order), rows)


@dataclass(frozen=True, slots=True)
class LearnedModel:
    """Standardized logistic regression over ``features``: ``score`` is the estimated
    probability that a candidate answers the query. ``version`` 0 is the packaged model; a
    namespace's own models count from 1. ``turns_only``: it learned from conversations and
    ranks only where most candidates are conversation turns (the packaged one). ``report``
    says what it was trained on and how it did on held-out recalls."""

    features: tuple[str, ...]
    coefficients: tuple[float, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    version: int = 0
    turns_only: bool = False
    trained_at: datetime | None = None
    report: Mapping[str, float | str] = field(default_factory=dict)

    def score(self, candidates: Candidates) -> npt.NDArray[np.float64]:
        x = (candidates.features - np.asarray(self.means)) / np.asarray(self.scales)
        z = np.clip(x @ np.asarray(self.coefficients), -50.0, 50.0)
        scores: npt.NDArray[np.float64] = 1.0 / (1.0 + np.exp(-z))
        return scores

    def rank(self, candidates: Candidates) -> list[tuple[int, float]]:
        """(id, score) best first; equal scores in the rules' order (a model that cannot tell
        candidates apart leaves them as the rules ranked them, not by id)."""
        scores = self.score(candidates)
        order = sorted(range(len(candidates.ids)), key=lambda i: -scores[i])  # stable
        return [(candidates.ids[i], float(scores[i])) for i in order]

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": FORMAT,
                "features": list(self.features),
                "coefficients": list(self.coefficients),
                "means": list(self.means),
                "scales": list(self.scales),
                "version": self.version,
                "turns_only": self.turns_only,
                "trained_at": None if self.trained_at is None else self.trained_at.isoformat(),
                "report": dict(self.report),
            }
        )

    @classmethod
    def from_json(cls, text: str, *, version: int | None = None) -> LearnedModel | None:
        """The model, or None when it was saved in another format or for another feature set
        (a model trained by an older fivefold: the rules answer until it is trained again)."""
        try:
            data = json.loads(text)
            if data.get("format") != FORMAT or tuple(data["features"]) != FEATURES:
                return None
            n = len(FEATURES)
            columns = [tuple(float(v) for v in data[key]) for key in ("coefficients", "means")]
            scales = tuple(float(v) for v in data["scales"])
            if any(len(c) != n for c in columns) or len(scales) != n or min(scales) <= 0.0:
                return None
            when = data.get("trained_at")
            return cls(
                features=FEATURES,
                coefficients=columns[0],
                means=columns[1],
                scales=scales,
                version=int(data.get("version", 0)) if version is None else version,
                turns_only=bool(data.get("turns_only", False)),
                trained_at=None if when is None else datetime.fromisoformat(when),
                report=MappingProxyType(dict(data.get("report", {}))),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


def fit(examples: Sequence[Example], *, l2: float = 1.0) -> LearnedModel:
    """Pointwise logistic regression over every candidate row of ``examples``; features are
    standardized first, so one ridge penalty weighs them alike."""
    if not examples:
        raise InvalidInput("no examples to train on")
    x = np.vstack([e.candidates.features for e in examples])
    y = np.concatenate([e.labels for e in examples])
    if not y.any():
        raise InvalidInput("the examples hold no relevant memory to learn from")
    means = x.mean(axis=0)
    scales = x.std(axis=0)
    means[0], scales[0] = 0.0, 1.0  # the bias column stays 1
    scales[scales < 1e-9] = 1.0  # a constant feature: nothing to scale
    weights = fit_logistic((x - means) / scales, y, l2=l2)
    return LearnedModel(
        features=FEATURES,
        coefficients=tuple(float(w) for w in weights),
        means=tuple(float(m) for m in means),
        scales=tuple(float(s) for s in scales),
    )


def recall_at(ranked: Sequence[int], labels: Mapping[int, float], k: int = 10) -> float:
    """Share of the relevant memories in the first ``k`` of ``ranked``."""
    relevant = {i for i, v in labels.items() if v > 0.0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)
