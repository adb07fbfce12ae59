"""Frozen settings with the seeds' defaults.

The library never reads files or the environment on its own; entry points (the CLI, later the
servers) build a ``Config`` and hand it to ``Memory.open``. Every number here is named after the
seed or DESIGN section that fixes it, so a reader can check it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from fivefold.model import Budget, RetrieverName


@dataclass(frozen=True, slots=True)
class TemporalConfig:
    """Windows for fuzzy expressions (seed 000): "recently"/"lately" = the last 30 days,
    "a few months ago" = 90 to 30 days ago."""

    recent_days: int = 30
    few_months_from_days: int = 90
    few_months_to_days: int = 30


@dataclass(frozen=True, slots=True)
class LexicalConfig:
    """BM25 column weights. Seed 000 states the intent that a predicate term counts 4x a
    content term (its A/B letters say the opposite; DESIGN follows the intent)."""

    predicate_weight: float = 4.0
    content_weight: float = 1.0


@dataclass(frozen=True, slots=True)
class GraphConfig:
    """Hop scores and edge priors of seed 000 / DESIGN §2."""

    hop_scores: tuple[float, ...] = (1.0, 0.6, 0.35, 0.15)
    structural_prior: float = 1.0
    semantic_prior: float = 0.9
    lifecycle_prior: float = 1.0
    expired_freshness: float = 0.3
    max_hops: int = 2
    multi_hop_max_hops: int = 3
    # Below this resolution confidence every candidate entity is a traversal root.
    ambiguous_below: float = 0.7


@dataclass(frozen=True, slots=True)
class FusionConfig:
    """Score-weighted RRF (seed 000): ``w * sqrt(c) / (k + rank)``."""

    k: int = 60
    weights: Mapping[RetrieverName, float] = field(
        default_factory=lambda: MappingProxyType(
            {
                RetrieverName.SEMANTIC: 1.0,
                RetrieverName.LEXICAL: 1.0,
                RetrieverName.GRAPH: 1.0,
                RetrieverName.TEMPORAL: 1.0,
                RetrieverName.TYPE: 1.0,
            }
        )
    )
    graph_multi_hop_weight: float = 0.8
    temporal_speculative_weight: float = 0.5
    # final = fused * (importance_floor + (1 - importance_floor) * importance)  (seed 002)
    importance_floor: float = 0.7


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """Candidate depth per retriever for each recall budget, and the type filter's widening."""

    depth: Mapping[Budget, int] = field(
        default_factory=lambda: MappingProxyType(
            {Budget.LOW: 50, Budget.MID: 100, Budget.HIGH: 200}
        )
    )
    type_widen_below: int = 5
    negation_threshold: float = 0.6


@dataclass(frozen=True, slots=True)
class IndexConfig:
    """Exact numpy search below this many vectors in a namespace, HNSW (usearch) above it."""

    hnsw_threshold: int = 20_000
    hnsw_connectivity: int = 16
    hnsw_expansion_add: int = 128
    hnsw_expansion_search: int = 64


@dataclass(frozen=True, slots=True)
class Config:
    temporal: TemporalConfig = field(default_factory=TemporalConfig)
    namespace_temporal: Mapping[str, TemporalConfig] = field(
        default_factory=lambda: MappingProxyType({})
    )
    lexical: LexicalConfig = field(default_factory=LexicalConfig)
    graph: GraphConfig = field(default_factory=GraphConfig)
    fusion: FusionConfig = field(default_factory=FusionConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    default_importance: float = 0.5

    def temporal_for(self, namespace: str) -> TemporalConfig:
        return self.namespace_temporal.get(namespace, self.temporal)
