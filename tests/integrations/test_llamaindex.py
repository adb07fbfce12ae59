"""``FivefoldRetriever`` through LlamaIndex's retriever API (``retrieve``, ``aretrieve``), on
an embedded memory, a ``Client`` and an ``AsyncClient`` of a real server."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore
from tests.serve.conftest import Server

import fivefold
from fivefold.integrations.llamaindex import FivefoldRetriever


def test_retrieve_returns_scored_nodes(memory: fivefold.Memory) -> None:
    kept = memory.remember("Priya recommended Postgres for Project Kestrel", namespace="team")
    memory.remember("The standup moved to 9:30", namespace="team")
    retriever = FivefoldRetriever(memory=memory, k=2, namespace="team")
    assert isinstance(retriever, BaseRetriever)

    nodes = retriever.retrieve("what database did Priya recommend?")
    hits = memory.recall("what database did Priya recommend?", 2, namespace="team").hits
    assert all(isinstance(n, NodeWithScore) for n in nodes)
    assert [n.node.node_id for n in nodes] == [str(hit.memory.id) for hit in hits]
    top, expected = nodes[0], hits[0]
    assert top.node.node_id == str(kept.id)
    assert top.node.get_content() == kept.content
    assert top.score == expected.score
    assert top.node.metadata["confidence"] == expected.confidence
    assert top.node.metadata["sources"] == dict(expected.sources)
    # An LLM sees the memory and when it was said, not the ids and ranks.
    shown = top.node.get_content(metadata_mode=MetadataMode.LLM)
    assert kept.content in shown
    assert "created_at" in shown
    assert "confidence" not in shown
    assert "sources" not in shown


def test_scopes_never_cross(memory: fivefold.Memory) -> None:
    memory.remember("My badge ID is 47821", user_id="sam")
    memory.remember("My badge ID is 11111", user_id="alex")
    nodes = FivefoldRetriever(memory=memory, k=5, user_id="sam").retrieve("badge ID")
    assert [n.node.get_content() for n in nodes] == ["My badge ID is 47821"]
    nodes = FivefoldRetriever(memory=memory, k=5, namespace="empty").retrieve("badge ID")
    assert nodes == []


def test_aretrieve_on_an_embedded_memory(memory: fivefold.Memory) -> None:
    memory.remember("The standup moved to 9:30")
    nodes = asyncio.run(FivefoldRetriever(memory=memory, k=1).aretrieve("standup"))
    assert [n.node.get_content() for n in nodes] == ["The standup moved to 9:30"]


def test_a_served_memory_sync_and_async(server: Server, client: fivefold.Client) -> None:
    namespace = f"li-{uuid.uuid4().hex}"
    badge = client.remember("My badge ID is 47821", namespace=namespace)
    standup = client.remember("The standup moved to 9:30", namespace=namespace)
    retriever = FivefoldRetriever(client=client, k=1, namespace=namespace)
    assert [n.node.node_id for n in retriever.retrieve("my badge ID?")] == [str(badge.id)]

    async def run() -> list[NodeWithScore]:
        async with fivefold.AsyncClient(server.url) as remote:
            native = FivefoldRetriever(client=remote, k=1, namespace=namespace)
            with pytest.raises(TypeError, match="AsyncClient"):
                native.retrieve("badge")
            return await native.aretrieve("when is the standup?")

    assert [n.node.node_id for n in asyncio.run(run())] == [str(standup.id)]


def test_exactly_one_memory_is_given(memory: fivefold.Memory) -> None:
    with pytest.raises(ValueError, match="either memory"):
        FivefoldRetriever()
    with pytest.raises(TypeError, match="Memory"):
        FivefoldRetriever(memory="memory.db")  # type: ignore[arg-type]
