"""fivefold: a long-term memory engine for AI agents.

Every recall fans out to five retrievers (semantic, lexical, graph, temporal, type), fuses their
ranked lists with score-weighted reciprocal rank fusion, and returns the few memories that answer
the question. The embedded default is one SQLite file::

    import fivefold
    with fivefold.Memory.open("memory.db") as mem:
        mem.remember("Priya recommended Postgres for Project Kestrel")
        res = mem.recall("what database did Priya recommend for Kestrel?")
"""

from typing import TYPE_CHECKING

from fivefold.config import Config
from fivefold.embed import Embedder, HashingEmbedder, MiniLMEmbedder
from fivefold.errors import (
    AccessDenied,
    ConfigError,
    EmbedderError,
    EmbeddingModelMismatch,
    FivefoldError,
    InvalidInput,
    NotAFivefoldStore,
    NotFound,
    RerankerError,
    StoreError,
    TooLarge,
    Unauthenticated,
    UnsupportedBackend,
)
from fivefold.memory import Memory
from fivefold.types import (
    Budget,
    Edge,
    EdgeKind,
    Entity,
    EntityRef,
    Explanation,
    Hit,
    MemoryRecord,
    MemoryType,
    ParsedQuery,
    Plan,
    PlanName,
    RecallResult,
    RetrieverName,
    Scope,
    TimeWindow,
    TrainReport,
)
from fivefold.version import __version__

if TYPE_CHECKING:  # the real classes to type checkers; at run time they load on first use
    from fivefold.async_client import AsyncClient
    from fivefold.client import Client


def __getattr__(name: str) -> object:
    # The HTTP clients are imported on first use: embedded users never load httpx.
    if name == "Client":
        from fivefold.client import Client

        return Client
    if name == "AsyncClient":
        from fivefold.async_client import AsyncClient

        return AsyncClient
    raise AttributeError(f"module 'fivefold' has no attribute {name!r}")


__all__ = [
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
]
