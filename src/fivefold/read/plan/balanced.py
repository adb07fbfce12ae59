"""The balanced plan: every retriever whose inputs are present, equal weights. With the
optimizer off (``optimizer.mode = "off"``) every recall runs it: the baseline the benchmark
measures the optimizer against."""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

from fivefold.config import FusionConfig
from fivefold.read.plan.inputs import MISSING_INPUT, has_input
from fivefold.types import MemoryType, ParsedQuery, Plan, PlanName, RetrieverName


def balanced_plan(
    query: ParsedQuery, fusion: FusionConfig, *, forced_types: Sequence[MemoryType] = ()
) -> Plan:
    retrievers: list[RetrieverName] = []
    reasons = ["balanced plan: the optimizer is off; every retriever with inputs runs"]
    for retriever, missing in MISSING_INPUT.items():
        if has_input(retriever, query):
            retrievers.append(retriever)
        else:
            reasons.append(f"{retriever.value} skipped: {missing}")
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
