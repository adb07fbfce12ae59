"""The balanced plan: every retriever whose inputs are present, equal weights. With the
optimizer off (``optimizer.mode = "off"``) every recall runs it: the baseline the benchmark
measures the optimizer against."""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

from fivefold.config import FusionConfig
from fivefold.model import MemoryType, ParsedQuery, Plan, PlanName, RetrieverName


def balanced_plan(
    query: ParsedQuery, fusion: FusionConfig, *, forced_types: Sequence[MemoryType] = ()
) -> Plan:
    retrievers: list[RetrieverName] = []
    reasons = ["balanced plan: the optimizer is off; every retriever with inputs runs"]
    if query.focus.strip():
        retrievers.append(RetrieverName.SEMANTIC)
    else:
        reasons.append("semantic skipped: nothing left to embed after removing negations")
    if query.terms:
        retrievers.append(RetrieverName.LEXICAL)
    else:
        reasons.append("lexical skipped: no content terms")
    if query.entity_refs:
        retrievers.append(RetrieverName.GRAPH)
    else:
        reasons.append("graph skipped: no entity of the store named in the query")
    if query.temporal_window is not None:
        retrievers.append(RetrieverName.TEMPORAL)
    else:
        reasons.append("temporal skipped: no time window in the query")
    if query.type_hints or forced_types:
        retrievers.append(RetrieverName.TYPE)
    else:
        reasons.append("type filter skipped: no type hints")
    weights = {name: fusion.weights.get(name, 1.0) for name in retrievers}
    return Plan(
        name=PlanName.BALANCED,
        retrievers=tuple(retrievers),
        weights=MappingProxyType(weights),
        reasons=tuple(reasons),
    )
