"""``FivefoldRetriever`` through LangChain's runnable API (``invoke``, ``ainvoke``, ``batch``),
on an embedded memory, a ``Client`` and an ``AsyncClient`` of a real server."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from tests.serve.conftest import Server

import fivefold
from fivefold.integrations.langchain import FivefoldRetriever

FACTS = [
    "Priya recommended Postgres for Project Kestrel",
    "The standup moved to 9:30",
    "My badge ID is 47821",
]


def remember_all(mem: fivefold.Memory | fivefold.Client, namespace: str) -> list[int]:
    return [mem.remember(text, namespace=namespace).id for text in FACTS]


def test_invoke_returns_documents_with_the_hits_evidence(memory: fivefold.Memory) -> None:
    ids = remember_all(memory, "team")
    retriever = FivefoldRetriever(memory=memory, k=2, namespace="team")
    assert isinstance(retriever, BaseRetriever)

    docs = retriever.invoke("what database did Priya recommend?")
    hits = memory.recall("what database did Priya recommend?", 2, namespace="team").hits
    assert all(isinstance(doc, Document) for doc in docs)
    assert [doc.metadata["id"] for doc in docs] == [hit.memory.id for hit in hits]
    top, expected = docs[0], hits[0]
    assert top.page_content == FACTS[0]
    assert top.id == str(ids[0])
    assert top.metadata["id"] == ids[0]
    assert top.metadata["score"] == expected.score
    assert top.metadata["confidence"] == expected.confidence
    assert 0 <= top.metadata["confidence"] <= 1
    assert top.metadata["sources"] == dict(expected.sources)
    assert top.metadata["sources"]
    assert top.metadata["type"] == "fact"
    assert top.metadata["namespace"] == "team"
    assert top.metadata["created_at"] == expected.memory.created_at.isoformat()
    assert "Priya" in top.metadata["entities"]


def test_scopes_never_cross(memory: fivefold.Memory) -> None:
    memory.remember("My badge ID is 47821", user_id="sam")
    memory.remember("My badge ID is 11111", user_id="alex")
    memory.remember("My badge ID is 99999", namespace="other")
    sam = FivefoldRetriever(memory=memory, k=5, user_id="sam")
    assert [d.page_content for d in sam.invoke("badge ID")] == ["My badge ID is 47821"]
    other = FivefoldRetriever(memory=memory, k=5, namespace="other")
    assert [d.page_content for d in other.invoke("badge ID")] == ["My badge ID is 99999"]
    everyone = FivefoldRetriever(memory=memory, k=5)
    assert {d.metadata["user_id"] for d in everyone.invoke("badge ID")} == {"sam", "alex"}


def test_recall_arguments(memory: fivefold.Memory) -> None:
    memory.remember("I prefer dark roast coffee")
    memory.remember("We shipped the coffee grinder on March 3rd 2026")
    prefs = FivefoldRetriever(memory=memory, k=5, types=["preference"])
    assert [d.metadata["type"] for d in prefs.invoke("coffee")] == ["preference"]
    strict = FivefoldRetriever(memory=memory, k=5, min_confidence=1.0)
    assert strict.invoke("coffee") == []


def test_ainvoke_and_batch_on_an_embedded_memory(memory: fivefold.Memory) -> None:
    remember_all(memory, "default")
    retriever = FivefoldRetriever(memory=memory, k=1)
    docs = asyncio.run(retriever.ainvoke("when is the standup?"))
    assert [d.page_content for d in docs] == ["The standup moved to 9:30"]
    both = retriever.batch(["when is the standup?", "what is my badge ID?"])
    assert [d[0].page_content for d in both] == ["The standup moved to 9:30", FACTS[2]]


def test_a_served_memory_sync_and_async(server: Server, client: fivefold.Client) -> None:
    namespace = f"lc-{uuid.uuid4().hex}"
    ids = remember_all(client, namespace)
    retriever = FivefoldRetriever(client=client, k=1, namespace=namespace)
    assert [d.metadata["id"] for d in retriever.invoke("what is my badge ID?")] == [ids[2]]
    assert [d.metadata["id"] for d in asyncio.run(retriever.ainvoke("badge"))] == [ids[2]]

    async def run() -> list[Document]:
        async with fivefold.AsyncClient(server.url) as remote:
            native = FivefoldRetriever(client=remote, k=1, namespace=namespace)
            with pytest.raises(TypeError, match="AsyncClient"):
                native.invoke("badge")
            return await native.ainvoke("when is the standup?")

    assert [d.metadata["id"] for d in asyncio.run(run())] == [ids[1]]


def test_exactly_one_memory_is_given(memory: fivefold.Memory, client: fivefold.Client) -> None:
    with pytest.raises(ValueError, match="either memory"):
        FivefoldRetriever(k=1)
    with pytest.raises(ValueError, match="either memory"):
        FivefoldRetriever(memory=memory, client=client)
