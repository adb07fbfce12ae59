"""The rule-based optimizer (Mode A): a pure function from a parsed query and its features to a
plan. No I/O; well under a millisecond. Rules are tried in this order, the first that holds wins:

1. spec >= precise_threshold                      -> precise
2. an entity ref with confidence > entity_conf_min -> entity_centric (if the entity is specific
   enough to anchor: see OptimizerConfig.entity_anchor_min_specificity)
3. a temporal window                              -> temporal
4. lexical rarity >= precision_rarity              -> precision
5. spec < exploratory_threshold                    -> exploratory
6. otherwise                                       -> balanced
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType

from fivefold.config import FusionConfig, OptimizerConfig
from fivefold.read.plan.features import Features
from fivefold.read.plan.inputs import has_input
from fivefold.types import (
    EntityRef,
    MemoryType,
    ParsedQuery,
    Plan,
    PlanName,
    RetrieverName,
    TypeFilterMode,
)

S, L, G, T, Y = (
    RetrieverName.SEMANTIC,
    RetrieverName.LEXICAL,
    RetrieverName.GRAPH,
    RetrieverName.TEMPORAL,
    RetrieverName.TYPE,
)


def choose_plan(
    query: ParsedQuery,
    features: Features,
    *,
    type_hints: Sequence[MemoryType],
    specificity: Mapping[int, float],
    config: OptimizerConfig,
    fusion: FusionConfig,
    forced_types: Sequence[MemoryType] = (),
) -> tuple[Plan, ParsedQuery]:
    """Pick the plan; return it with the query's ``type_hints`` and ``specificity`` filled in
    (only the optimizer sets those)."""
    q = features.quantized(config.quantum)
    spec = q.specificity
    query = replace(query, type_hints=tuple(type_hints), specificity=spec)
    signature = (
        f"ed={q.entity_density:.2f} tp={q.temporal_precision:.2f} "
        f"lr={q.lexical_rarity:.2f} tc={q.type_cues:.2f} spec={spec:.2f}"
    )
    anchors = [
        r
        for r in query.entity_refs
        if r.confidence > config.entity_confidence_min
        and specificity.get(r.entity_id, 1.0) >= config.entity_anchor_min_specificity
    ]
    if spec >= config.precise_threshold:
        plan = _precise(query, config)
    elif anchors:
        plan = _entity_centric(query, anchors, spec, config)
    elif query.temporal_window is not None:
        why = f"a time window ({query.temporal_window.expression!r})"
        # Temporal + semantic, and BM25 too: a time question still names what happened, in
        # words the lexical leg finds.
        plan = _named(PlanName.TEMPORAL, [T, S, L], why)
    elif q.lexical_rarity >= config.precision_rarity:
        plan = _named(
            PlanName.PRECISION,
            [L, S, *([G] if query.entity_refs else [])],
            f"rare terms (lexical rarity {q.lexical_rarity:.2f})",
        )
    elif spec < config.exploratory_threshold:
        plan = _exploratory(query, spec, config)
    else:
        # _finish drops the legs without input.
        plan = _named(PlanName.BALANCED, [S, L, G, T], "no rule fired")
    plan = _finish(plan, query, spec, config, fusion, forced_types, specificity)
    return replace(plan, reasons=(f"features {signature}", *plan.reasons)), query


def _named(name: PlanName, retrievers: list[RetrieverName], why: str) -> Plan:
    return Plan(
        name=name, retrievers=tuple(retrievers), weights={}, reasons=(f"{name.value}: {why}",)
    )


def _precise(query: ParsedQuery, config: OptimizerConfig) -> Plan:
    plan = _named(
        PlanName.PRECISE,
        [S, *([G] if query.entity_refs else [])],
        f"specificity >= {config.precise_threshold}; semantic top {config.precise_semantic_depth}",
    )
    return replace(plan, depths=MappingProxyType({S: config.precise_semantic_depth}))


def _entity_centric(
    query: ParsedQuery, anchors: Sequence[EntityRef], spec: float, config: OptimizerConfig
) -> Plan:
    best = max(anchors, key=lambda r: r.confidence)
    # An attribute of a well-resolved entity ("Sarah's manager") is answered by the graph and
    # BM25 in SQL, so the embedding call may be skipped (skip_embedding_for_attributes).
    # Without an attribute to look up ("who is on the backend team?") semantic stays, for
    # members described in prose.
    skip = (
        config.skip_embedding_for_attributes
        and spec >= config.entity_skip_embedding_min
        and bool(query.predicate_hints)
    )
    retrievers = [G, L] if skip else [G, L, S]
    why = f"{best.name!r} resolved at {best.confidence:.2f}"
    if skip:
        why += "; attribute lookup, embedding skipped"
    plan = _named(PlanName.ENTITY_CENTRIC, retrievers, why)
    if query.temporal_window is not None:
        plan = replace(
            plan,
            temporal_post_filter=True,
            reasons=(*plan.reasons, "time window applied as a post-filter, not a retriever"),
        )
    return plan


def _exploratory(query: ParsedQuery, spec: float, config: OptimizerConfig) -> Plan:
    retrievers = [S, L, *([G] if query.entity_refs else [])]
    plan = _named(PlanName.EXPLORATORY, retrievers, f"low specificity ({spec:.2f})")
    return replace(plan, rerank=True, mmr=config.mmr)


def _finish(
    plan: Plan,
    query: ParsedQuery,
    spec: float,
    config: OptimizerConfig,
    fusion: FusionConfig,
    forced_types: Sequence[MemoryType],
    specificity: Mapping[int, float],
) -> Plan:
    """Weights, the fusion constant, the type filter, the safety semantic leg, rewrites; drop
    legs with no input and the graph leg when no query entity is specific enough to walk from."""
    retrievers = [r for r in plan.retrievers if has_input(r, query)]
    reasons = list(plan.reasons)
    if G in retrievers and plan.name is not PlanName.ENTITY_CENTRIC:
        common = _common_entities(query.entity_refs, specificity, config.graph_min_specificity)
        if common is not None:
            retrievers.remove(G)
            reasons.append(f"graph skipped: only common entities ({common})")
    skipped_on_purpose = plan.name is PlanName.ENTITY_CENTRIC and S not in plan.retrievers
    if S not in retrievers and not skipped_on_purpose and query.focus.strip():
        retrievers.append(S)
        reasons.append("safety semantic leg added")
    typed = forced_types or (
        query.type_hints if config.type_filter is not TypeFilterMode.OFF else ()
    )
    if typed and plan.name in _TYPED_PLANS:
        retrievers.append(Y)
        reasons.append(f"type filter ({config.type_filter.value}) {[t.value for t in typed]}")
    weights = {r: fusion.weights.get(r, 1.0) for r in retrievers}
    if plan.name is PlanName.ENTITY_CENTRIC:
        weights[G] = config.entity_graph_weight
    rewrites = spec < config.precise_threshold and S in retrievers and config.rewrites
    return replace(
        plan,
        retrievers=tuple(retrievers),
        weights=MappingProxyType(weights),
        rewrites=rewrites,
        reasons=tuple(reasons),
        fusion_k=config.fusion_k,
        graph_frontier=config.graph_frontier,
    )


def _common_entities(
    refs: Sequence[EntityRef], specificity: Mapping[int, float], floor: float
) -> str | None:
    """``None`` when some entity is at least ``floor`` specific (unknown counts as specific),
    else the entities with their specificity, for the plan's reasons."""
    if any(specificity.get(r.entity_id, 1.0) >= floor for r in refs):
        return None
    return ", ".join(f"{r.name} {specificity.get(r.entity_id, 1.0):.2f}" for r in refs)


_TYPED_PLANS = frozenset({PlanName.ENTITY_CENTRIC, PlanName.EXPLORATORY, PlanName.BALANCED})
