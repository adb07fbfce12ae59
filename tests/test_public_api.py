"""The public names are a contract: this pins them."""

from __future__ import annotations

import inspect
import subprocess
import sys

import fivefold

PUBLIC = {
    "AccessDenied",
    "AsyncClient",
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
    "RerankerError",
    "RetrieverName",
    "Scope",
    "StoreError",
    "TimeWindow",
    "TooLarge",
    "TrainReport",
    "Unauthenticated",
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


def test_every_error_a_client_raises_is_public() -> None:
    from fivefold.serve.errors import ERRORS

    for kind in {*ERRORS.values()}:
        assert getattr(fivefold, kind.__name__) is kind


def test_the_async_client_has_the_methods_of_the_client() -> None:
    sync, asynchronous = fivefold.Client, fivefold.AsyncClient
    names = {n for n in vars(sync) if not n.startswith("_")} - {"close"}
    assert names == {n for n in vars(asynchronous) if not n.startswith("_")} - {"aclose"}
    for name in names:
        method = getattr(asynchronous, name)
        assert inspect.iscoroutinefunction(method), name
        assert inspect.signature(method) == inspect.signature(getattr(sync, name)), name
    # The same options; only the transport's type differs (httpx's async one).
    opened = inspect.signature(asynchronous.__init__).parameters
    assert list(opened) == list(inspect.signature(sync.__init__).parameters)


def test_the_clients_load_httpx_only_when_first_used() -> None:
    code = (
        "import sys, fivefold; assert 'httpx' not in sys.modules; "
        "assert fivefold.AsyncClient.__name__ == 'AsyncClient'; assert 'httpx' in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


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
