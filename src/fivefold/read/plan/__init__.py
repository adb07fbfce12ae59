"""Stage 2 of the read path: features -> specificity -> a rule DAG picks a plan template."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fivefold.config import Config
from fivefold.read.plan.balanced import balanced_plan
from fivefold.read.plan.features import Features, entity_density, lexical_rarity, type_cues
from fivefold.read.plan.rules import choose_plan
from fivefold.types import MemoryType, OptimizerMode, ParsedQuery, Plan

__all__ = ["Features", "balanced_plan", "choose_plan", "features_of", "plan_query"]


def features_of(
    query: ParsedQuery,
    *,
    total: int,
    frequencies: dict[str, int],
    specificity: Mapping[int, float],
) -> tuple[Features, tuple[MemoryType, ...]]:
    cues, hinted = type_cues(query.focus)
    window = query.temporal_window
    features = Features(
        entity_density=entity_density(query, specificity),
        temporal_precision=window.precision if window is not None else 0.0,
        lexical_rarity=lexical_rarity(query.terms, total, frequencies),
        type_cues=cues,
    )
    return features, hinted


def plan_query(
    query: ParsedQuery,
    *,
    total: int,
    frequencies: dict[str, int],
    specificity: Mapping[int, float],
    config: Config,
    forced_types: Sequence[MemoryType] = (),
) -> tuple[Plan, ParsedQuery, Features]:
    """The optimizer's entry point: pure given the store's term and entity statistics
    (``specificity``: entity id -> ln(N/df)/ln(N))."""
    features, hinted = features_of(
        query, total=total, frequencies=frequencies, specificity=specificity
    )
    # Report what the rules read: the quantized vector.
    features = features.quantized(config.optimizer.quantum)
    if config.optimizer.mode is OptimizerMode.OFF:
        plan = balanced_plan(query, config.fusion, forced_types=forced_types)
        return plan, query, features
    plan, query = choose_plan(
        query,
        features,
        type_hints=hinted,
        specificity=specificity,
        config=config.optimizer,
        fusion=config.fusion,
        forced_types=forced_types,
    )
    return plan, query, features
