"""``FivefoldRetriever``: a LlamaIndex retriever that recalls from a fivefold memory.

Each ``NodeWithScore`` is one memory: a ``TextNode`` with its content, its id as the node id,
and the hit's score as the node's score; its metadata carries the hit's ``confidence`` and
``sources`` and the memory's type, times, scope and own metadata (only the type, times and
speaker are shown to an LLM or an embedder)::

    from fivefold.integrations.llamaindex import FivefoldRetriever

    retriever = FivefoldRetriever(memory=mem, k=4, namespace="support")
    nodes = retriever.retrieve("what database did Priya recommend?")

``client=`` takes a ``fivefold.Client`` or a ``fivefold.AsyncClient`` (``aretrieve`` only).
"""

from __future__ import annotations

from collections.abc import Sequence

from fivefold.async_client import AsyncClient
from fivefold.client import Client
from fivefold.integrations.recall import RecallOptions, hit_metadata, missing, source_of
from fivefold.memory import Memory
from fivefold.types import RecallResult

try:
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:
    raise missing("llamaindex", "llama-index-core") from exc

__all__ = ["FivefoldRetriever"]

# What a prompt or an embedding gains from; ids, ranks and scope are for the program.
SHOWN = ("type", "created_at", "event_at", "speaker")


class FivefoldRetriever(BaseRetriever):
    """The ``k`` memories of a scope that best answer the query, best first."""

    def __init__(
        self,
        *,
        memory: Memory | None = None,
        client: Client | AsyncClient | None = None,
        k: int = 4,
        namespace: str = "default",
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        types: Sequence[str] | None = None,
        budget: str = "mid",
        min_confidence: float | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        self._source = source_of(memory, client)
        self._options = RecallOptions(
            k=k,
            namespace=namespace,
            user_id=user_id,
            agent_id=agent_id,
            session_id=session_id,
            types=types,
            budget=budget,
            min_confidence=min_confidence,
        )
        super().__init__(callback_manager=callback_manager)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return _nodes(self._options.recall(self._source, query_bundle.query_str))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return _nodes(await self._options.arecall(self._source, query_bundle.query_str))


def _nodes(result: RecallResult) -> list[NodeWithScore]:
    nodes = []
    for hit in result.hits:
        metadata = hit_metadata(hit)
        hidden = [name for name in metadata if name not in SHOWN]
        node = TextNode(
            id_=str(hit.memory.id),
            text=hit.memory.content,
            metadata=metadata,
            excluded_llm_metadata_keys=hidden,
            excluded_embed_metadata_keys=hidden,
        )
        nodes.append(NodeWithScore(node=node, score=hit.score))
    return nodes
