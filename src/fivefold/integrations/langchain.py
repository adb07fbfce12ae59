"""``FivefoldRetriever``: a LangChain retriever that recalls from a fivefold memory.

Each ``Document`` is one memory: its content as ``page_content`` and, in ``metadata``, its id,
the hit's ``score``, ``confidence`` and ``sources`` (each retriever's rank), and the memory's
type, times, scope, speaker, entities and own metadata::

    from fivefold.integrations.langchain import FivefoldRetriever

    retriever = FivefoldRetriever(memory=mem, k=4, namespace="support")
    docs = retriever.invoke("what database did Priya recommend?")

``client=`` takes a ``fivefold.Client`` (both ``invoke`` and ``ainvoke``) or a
``fivefold.AsyncClient`` (``ainvoke`` only, awaited on the caller's loop).
"""

from __future__ import annotations

from fivefold.async_client import AsyncClient
from fivefold.client import Client
from fivefold.integrations.recall import RecallOptions, Source, hit_metadata, missing, source_of
from fivefold.memory import Memory
from fivefold.types import RecallResult

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from pydantic import model_validator
except ImportError as exc:
    raise missing("langchain", "langchain-core") from exc

__all__ = ["FivefoldRetriever"]


class FivefoldRetriever(BaseRetriever):
    """The ``k`` memories of a scope that best answer the query, best first."""

    memory: Memory | None = None
    client: Client | AsyncClient | None = None
    k: int = 4
    namespace: str = "default"
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    types: list[str] | None = None
    budget: str = "mid"
    min_confidence: float | None = None

    @model_validator(mode="after")
    def _one_source(self) -> FivefoldRetriever:
        source_of(self.memory, self.client)
        return self

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return _documents(self._options().recall(self._source(), query))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return _documents(await self._options().arecall(self._source(), query))

    def _source(self) -> Source:
        return source_of(self.memory, self.client)

    def _options(self) -> RecallOptions:
        return RecallOptions.of(self)


def _documents(result: RecallResult) -> list[Document]:
    return [
        Document(page_content=hit.memory.content, metadata=hit_metadata(hit), id=str(hit.memory.id))
        for hit in result.hits
    ]
