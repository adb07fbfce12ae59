"""What the two retrievers share: the recall they make, and a hit as framework metadata."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fivefold.async_client import AsyncClient
from fivefold.client import Client
from fivefold.memory import Memory
from fivefold.types import Hit, RecallResult

__all__ = ["RecallOptions", "Source", "hit_metadata", "missing", "source_of"]

Source = Memory | Client | AsyncClient


def missing(extra: str, package: str) -> ImportError:
    """The error of an integration whose framework is not installed, naming the extra."""
    return ImportError(
        f"fivefold.integrations.{extra} needs the {package} package: "
        f'pip install "fivefold[{extra}]"'
    )


def source_of(memory: Memory | None, client: Client | AsyncClient | None) -> Source:
    """The one memory a retriever recalls from: an embedded ``Memory`` or a served one."""
    if (memory is None) == (client is None):
        raise ValueError("give a retriever either memory= (a fivefold.Memory) or client=")
    if memory is not None and not isinstance(memory, Memory):
        raise TypeError(f"memory= takes a fivefold.Memory, got {type(memory).__name__}")
    if client is not None and not isinstance(client, Client | AsyncClient):
        raise TypeError(
            f"client= takes a fivefold.Client or AsyncClient, got {type(client).__name__}"
        )
    source = memory if memory is not None else client
    assert source is not None
    return source


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallOptions:
    """``Memory.recall``'s arguments a retriever passes on every query."""

    k: int = 4
    namespace: str = "default"
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    types: Sequence[str] | None = None
    budget: str = "mid"
    min_confidence: float | None = None

    @classmethod
    def of(cls, retriever: object) -> RecallOptions:
        """The options a retriever holds as its attributes of the same names."""
        return cls(**{f.name: getattr(retriever, f.name) for f in dataclasses.fields(cls)})

    def _fields(self) -> dict[str, Any]:
        fields = {
            "namespace": self.namespace,
            "user_id": self.user_id,
            "agent_id": self.agent_id,
            "session_id": self.session_id,
            "types": None if self.types is None else list(self.types),
            "budget": self.budget,
            "min_confidence": self.min_confidence,
        }
        return {name: value for name, value in fields.items() if value is not None}

    def recall(self, source: Source, query: str) -> RecallResult:
        if isinstance(source, AsyncClient):
            raise TypeError(
                "an AsyncClient answers only the async calls (ainvoke, aretrieve); "
                "give a fivefold.Client for the blocking ones"
            )
        return source.recall(query, self.k, **self._fields())

    async def arecall(self, source: Source, query: str) -> RecallResult:
        if isinstance(source, AsyncClient):
            return await source.recall(query, self.k, **self._fields())
        # A blocking memory answers on a worker thread; the event loop goes on meanwhile.
        return await asyncio.to_thread(self.recall, source, query)


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """A hit as JSON-ready metadata: its ids, rank evidence and the memory's own fields."""
    memory = hit.memory
    return {
        "id": memory.id,
        "score": hit.score,
        "confidence": hit.confidence,
        "sources": dict(hit.sources),
        "type": str(memory.type),
        "created_at": memory.created_at.isoformat(),
        "event_at": None if memory.event_at is None else memory.event_at.isoformat(),
        "namespace": memory.namespace,
        "user_id": memory.user_id,
        "agent_id": memory.agent_id,
        "session_id": memory.session_id,
        "speaker": memory.speaker,
        "entities": list(memory.entities),
        "superseded_by": memory.superseded_by,
        "metadata": dict(memory.metadata),
    }
