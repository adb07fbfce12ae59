"""``fivefold bench calibration``: fit and check the hit confidence of ``fivefold.read.calibrate``.

Every LoCoMo question (categories 1-5) is asked in its own conversation, and asked again in the
next conversation, where nothing answers it ("unstored"). Each top-k hit is a sample: its
features (``calibrate.result_features``) and whether it is one of the question's evidence turns.
The model is fit on categories 1-4 and the unstored questions of one half of the conversations
and scored on the other half, both ways round, so every figure is held out; category 5
(adversarial) is never fit, only reported. The coefficients printed last are fit on every
conversation: they are what ``calibrate.COEFFICIENTS`` ships.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fivefold.bench.datasets import Dataset, Doc
from fivefold.bench.learning import cross_validate
from fivefold.bench.runner import ingest
from fivefold.bench.table import table
from fivefold.learn.logistic import fit_logistic
from fivefold.memory import Memory
from fivefold.read.calibrate import FEATURES, result_features

UNSTORED = "unstored"
ADVERSARIAL = "5"
LEARNED_FROM = ("1", "2", "3", "4")  # the categories the quality benchmark scores
BINS = 10


@dataclass(frozen=True, slots=True)
class Sample:
    features: npt.NDArray[np.float64]
    relevant: bool
    namespace: str
    kind: str  # the LoCoMo category, or "unstored"
    rank: int


@dataclass(frozen=True, slots=True)
class Calibration:
    held_out: tuple[float, ...]  # each sample's confidence from the model fit on the other half
    samples: tuple[Sample, ...]
    coefficients: tuple[float, ...]  # fit on every conversation


def collect(mem: Memory, dataset: Dataset, doc_of: dict[int, Doc], *, k: int) -> list[Sample]:
    spaces = list(dict.fromkeys(doc.namespace for doc in dataset.docs))
    samples: list[Sample] = []
    for query in dataset.queries:
        elsewhere = spaces[(spaces.index(query.namespace) + 1) % len(spaces)]
        for namespace, kind in ((query.namespace, query.category), (elsewhere, UNSTORED)):
            explained = mem.explain(query.text, k=k, namespace=namespace, now=query.now)
            features = result_features([(h.terms, h.final) for h in explained.hits])
            for rank, (hit, x) in enumerate(zip(explained.hits, features, strict=True), start=1):
                relevant = kind != UNSTORED and doc_of[hit.id].id in query.relevant
                samples.append(Sample(x, relevant, query.namespace, kind, rank))
    return samples


def calibrate(samples: Sequence[Sample]) -> Calibration:
    spaces = list(dict.fromkeys(s.namespace for s in samples))
    first = set(spaces[: (len(spaces) + 1) // 2])
    held_out = np.zeros(len(samples))
    for half in (True, False):
        train = [i for i, s in enumerate(samples) if (s.namespace in first) is half and _fit(s)]
        test = [i for i, s in enumerate(samples) if (s.namespace in first) is not half]
        weights = _fit_on(samples, train)
        x = np.stack([samples[i].features for i in test])
        held_out[test] = 1.0 / (1.0 + np.exp(-np.clip(x @ weights, -50.0, 50.0)))
    every = _fit_on(samples, [i for i, s in enumerate(samples) if _fit(s)])
    return Calibration(
        held_out=tuple(float(p) for p in held_out),
        samples=tuple(samples),
        coefficients=tuple(round(float(w), 4) for w in every),
    )


def _fit(sample: Sample) -> bool:
    return sample.kind != ADVERSARIAL


def _fit_on(samples: Sequence[Sample], rows: Sequence[int]) -> npt.NDArray[np.float64]:
    x = np.stack([samples[i].features for i in rows])
    y = np.array([float(samples[i].relevant) for i in rows])
    return fit_logistic(x, y)


def reliability(calibration: Calibration) -> tuple[str, float]:
    """The held-out reliability table (answerable and unstored questions) and its expected
    calibration error."""
    pairs = [
        (p, s.relevant)
        for p, s in zip(calibration.held_out, calibration.samples, strict=True)
        if _fit(s)
    ]
    rows, ece = [], 0.0
    for b in range(BINS):
        low, high = b / BINS, (b + 1) / BINS
        chosen = [(p, r) for p, r in pairs if low <= p < high or (b == BINS - 1 and p == 1.0)]
        if not chosen:
            continue
        predicted = statistics.fmean(p for p, _ in chosen)
        observed = statistics.fmean(float(r) for _, r in chosen)
        ece += len(chosen) / len(pairs) * abs(predicted - observed)
        rows.append(
            [f"{low:.1f}-{high:.1f}", f"{len(chosen):,}", f"{predicted:.3f}", f"{observed:.3f}"]
        )
    header = ["confidence", "hits", "mean confidence", "share relevant"]
    return table(header, rows), ece


def top_hit_table(calibration: Calibration) -> str:
    """The held-out confidence of each question's top hit, by kind of question."""
    tops: dict[str, list[float]] = {}
    for p, s in zip(calibration.held_out, calibration.samples, strict=True):
        if s.rank == 1:
            kind = s.kind if s.kind in (ADVERSARIAL, UNSTORED) else "answerable (1-4)"
            tops.setdefault(kind, []).append(p)
    rows = []
    for kind, values in sorted(tops.items()):
        ordered = sorted(values)
        rows.append(
            [
                kind,
                f"{len(values):,}",
                f"{statistics.fmean(values):.3f}",
                f"{_quantile(ordered, 0.1):.3f}",
                f"{statistics.median(values):.3f}",
                f"{_quantile(ordered, 0.9):.3f}",
                f"{sum(v >= 0.5 for v in values) / len(values):.1%}",
            ]
        )
    header = ["questions", "n", "mean", "p10", "median", "p90", "top >= 0.5"]
    return table(header, rows)


def _quantile(ordered: Sequence[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(dataset: Dataset, mem: Memory, *, k: int = 10, learned: bool = False) -> Calibration:
    """With ``learned``, each conversation is first given the learned model fit on the others'
    feedback (``bench.learning``), and ``mem`` (in learned mode) ranks with it: the confidence
    is fit on what learned fusion ranks, never by a model that saw the conversation."""
    doc_of = ingest(mem, dataset)
    if learned:
        scored = [q for q in dataset.queries if q.category in LEARNED_FROM]
        memory_of = {doc.id: memory_id for memory_id, doc in doc_of.items()}
        cross_validate(mem, scored, memory_of, k_max=50, budget="mid")
    return calibrate(collect(mem, dataset, doc_of, k=k))


def coefficients_line(calibration: Calibration, *, learned: bool = False) -> str:
    named = ", ".join(f"{n}={w:g}" for n, w in zip(FEATURES, calibration.coefficients, strict=True))
    name = "LEARNED_COEFFICIENTS" if learned else "COEFFICIENTS"
    return f"{name} = {calibration.coefficients!r}  # {named}"


__all__ = [
    "Calibration",
    "Sample",
    "calibrate",
    "coefficients_line",
    "collect",
    "reliability",
    "run",
    "top_hit_table",
]
