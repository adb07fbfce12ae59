"""The public names are a contract (DESIGN §1): this pins them."""

from __future__ import annotations

import fivefold

PUBLIC = {
    "AccessDenied",
    "Budget",
    "Client",
    "Config",
    "ConfigError",
    "Edge",
    "EdgeKind",
    "Embedder",
    "EmbedderError",
    "EmbeddingModelMismatch",
    "Entity",
    "EntityRef",
    "Explanation",
    "FivefoldError",
    "HashingEmbedder",
    "Hit",
    "InvalidInput",
    "Memory",
    "MemoryRecord",
    "MemoryType",
    "MiniLMEmbedder",
    "NotAFivefoldStore",
    "NotFound",
    "ParsedQuery",
    "Plan",
    "PlanName",
    "RecallResult",
    "RetrieverName",
    "Scope",
    "StoreError",
    "TimeWindow",
    "TrainReport",
    "UnsupportedBackend",
    "__version__",
}


def test_public_names_are_pinned() -> None:
    assert set(fivefold.__all__) == PUBLIC
    for name in fivefold.__all__:
        assert hasattr(fivefold, name)


def test_every_error_is_a_fivefold_error() -> None:
    for name in fivefold.__all__:
        value = getattr(fivefold, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, fivefold.FivefoldError)


def test_retriever_and_plan_names_match_the_design() -> None:
    assert {r.value for r in fivefold.RetrieverName} == {
        "semantic",
        "lexical",
        "graph",
        "temporal",
        "type",
    }
    assert {p.value for p in fivefold.PlanName} == {
        "precise",
        "entity_centric",
        "temporal",
        "precision",
        "exploratory",
        "balanced",
    }
