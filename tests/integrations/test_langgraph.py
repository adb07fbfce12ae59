"""``FivefoldStore`` through LangGraph's own API: the store's methods, their async versions,
``batch``, a compiled graph, on an embedded store and on a served one."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import TypedDict

import pytest
from langgraph.graph import START, StateGraph
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

import fivefold
from fivefold.integrations.langgraph import FivefoldStore

U1 = ("users", "u1", "memories")
U2 = ("users", "u2", "memories")


@pytest.fixture
def store(memory: fivefold.Memory) -> FivefoldStore:
    return FivefoldStore(memory, index={"fields": ["text"]})


def test_put_get_replace_and_delete(store: FivefoldStore) -> None:
    assert store.get(U1, "coffee") is None
    store.put(U1, "coffee", {"text": "I prefer dark roast coffee", "rating": 4})
    first = store.get(U1, "coffee")
    assert isinstance(first, Item)
    assert (first.namespace, first.key) == (U1, "coffee")
    assert first.value == {"text": "I prefer dark roast coffee", "rating": 4}
    assert first.created_at.tzinfo is not None
    assert first.updated_at >= first.created_at

    time.sleep(0.01)
    store.put(U1, "coffee", {"text": "I switched to espresso", "rating": 5})
    second = store.get(U1, "coffee")
    assert second is not None
    assert second.value == {"text": "I switched to espresso", "rating": 5}
    assert second.created_at == first.created_at  # the key's first put
    assert second.updated_at > first.updated_at
    # One memory per key: the replaced one is forgotten, not kept beside it.
    assert store.memory.stats(namespace=store.namespace_of(U1)).memories == 1

    store.delete(U1, "coffee")
    assert store.get(U1, "coffee") is None
    assert store.memory.stats(namespace=store.namespace_of(U1)).memories == 0
    store.delete(U1, "coffee")  # deleting what is not there is no error


def test_the_same_value_put_again_keeps_one_item(store: FivefoldStore) -> None:
    store.put(U1, "a", {"text": "The standup is at 9:30"})
    store.put(U1, "a", {"text": "The standup is at 9:30"})
    store.put(U1, "b", {"text": "The standup is at 9:30"})  # the same text under another key
    assert store.get(U1, "a") is not None
    assert store.get(U1, "b") is not None
    assert store.memory.stats(namespace=store.namespace_of(U1)).memories == 2
    store.delete(U1, "a")
    assert store.get(U1, "b") is not None


def test_keys_of_any_text_are_their_own_items(store: FivefoldStore) -> None:
    keys = ["Key", "key", " key", "ключ", "a/b?c=d", "x" * 1000]
    for position, key in enumerate(keys):
        store.put(U1, key, {"text": f"item number {position}"})
    for position, key in enumerate(keys):
        item = store.get(U1, key)
        assert item is not None
        assert item.key == key
        assert item.value == {"text": f"item number {position}"}


def test_search_by_query_is_a_recall_in_the_namespace(store: FivefoldStore) -> None:
    store.put(U1, "coffee", {"text": "I prefer dark roast coffee"})
    store.put(U1, "editor", {"text": "I write code in Neovim"})
    store.put(U1, "badge", {"text": "My badge ID is 47821"})
    store.put(U2, "coffee", {"text": "I only drink green tea"})

    hits = store.search(U1, query="what is my badge ID?")
    assert hits[0].key == "badge"
    assert hits[0].namespace == U1
    assert all(hit.namespace == U1 for hit in hits)
    scores = [hit.score for hit in hits]
    assert all(isinstance(score, float) for score in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert store.search(U1, query="what coffee do I like?", limit=1)[0].key == "coffee"

    # limit and offset page through the same ranking
    everything = [hit.key for hit in store.search(U1, query="my code, coffee and badge")]
    assert [h.key for h in store.search(U1, query="my code, coffee and badge", limit=1)] == (
        everything[:1]
    )
    paged = store.search(U1, query="my code, coffee and badge", limit=2, offset=1)
    assert [h.key for h in paged] == everything[1:3]


def test_a_prefix_search_spans_its_namespaces_and_no_other(store: FivefoldStore) -> None:
    store.put(U1, "drink", {"text": "I drink dark roast coffee"})
    store.put(U2, "drink", {"text": "I drink green tea every morning"})
    store.put(("teams", "t1"), "drink", {"text": "The team drinks coffee at standup"})

    found = store.search(("users",), query="what do I drink?")
    assert {hit.namespace for hit in found} == {U1, U2}
    assert [hit.namespace for hit in store.search(U2, query="coffee")] == [U2]
    assert {hit.namespace for hit in store.search((), query="coffee")} == {U1, U2, ("teams", "t1")}


def test_namespaces_are_isolated(store: FivefoldStore) -> None:
    store.put(U1, "pet", {"text": "My dog is called Biscuit"})
    before = store.search(U1, query="what is my dog called?")
    for position in range(20):
        store.put(U2, f"pet{position}", {"text": f"My dog is called Rex number {position}"})
    store.put(U2, "pet", {"text": "My dog is called Rex"})

    after = store.search(U1, query="what is my dog called?")
    assert [(h.key, h.value, h.score) for h in after] == [(h.key, h.value, h.score) for h in before]
    item = store.get(U1, "pet")
    assert item is not None
    assert item.value == {"text": "My dog is called Biscuit"}
    assert {hit.namespace for hit in store.search(U2, query="Biscuit")} <= {U2}
    store.delete(U2, "pet")
    assert store.get(U1, "pet") is not None


def test_search_without_a_query_lists_and_filters(store: FivefoldStore) -> None:
    for position in range(5):
        store.put(
            U1,
            f"k{position}",
            {"text": f"note {position}", "n": position, "tag": "odd"[position % 2 :]},
        )
    store.put(U1, "nested", {"text": "nested", "n": 10, "meta": {"lang": "en", "tags": ["a", "b"]}})

    listed = store.search(U1)
    assert [item.key for item in listed] == ["nested", "k4", "k3", "k2", "k1", "k0"]  # newest first
    assert all(item.score is None for item in listed)
    assert [item.key for item in store.search(U1, limit=2, offset=1)] == ["k4", "k3"]
    assert {i.key for i in store.search(U1, filter={"n": {"$gte": 2, "$lt": 4}})} == {"k2", "k3"}
    assert {i.key for i in store.search(U1, filter={"n": {"$ne": 0}, "tag": "odd"})} == {"k2", "k4"}
    assert [i.key for i in store.search(U1, filter={"meta": {"lang": "en"}})] == ["nested"]
    assert [i.key for i in store.search(U1, filter={"meta": {"tags": ["a", "b"]}})] == ["nested"]
    assert store.search(U1, filter={"n": {"$gt": 100}}) == []
    # a filter applies to a query search too
    hits = store.search(U1, query="note", filter={"n": {"$lte": 1}})
    assert {hit.key for hit in hits} == {"k0", "k1"}


def test_list_namespaces_is_exact(store: FivefoldStore) -> None:
    for namespace in [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("x", "y"),
    ]:
        store.put(namespace, "k", {"text": "something"})
    # Another user of the same fivefold store is none of LangGraph's business.
    store.memory.remember("not an item", namespace="default")

    assert store.list_namespaces() == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("x", "y"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("d", "*")) == [
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
    ]
    assert store.list_namespaces(max_depth=1) == [("a",), ("x",)]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]

    store.delete(("x", "y"), "k")  # a namespace with no item left is not listed
    assert ("x", "y") not in store.list_namespaces()


def test_batch_runs_every_op_in_order(store: FivefoldStore) -> None:
    results = store.batch(
        [
            PutOp(U1, "a", {"text": "alpha"}),
            GetOp(U1, "a"),
            PutOp(U2, "b", {"text": "beta"}),
            SearchOp(("users",), None, 10, 0, None),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("users",)),)),
            PutOp(U1, "a", None),
            GetOp(U1, "a"),
        ]
    )
    assert results[0] is None
    assert results[2] is None
    assert results[5] is None
    got = results[1]
    assert isinstance(got, Item)
    assert got.value == {"text": "alpha"}
    assert isinstance(results[3], list)
    assert {i.key for i in results[3] if isinstance(i, Item)} == {"a", "b"}
    assert len(results[3]) == 2
    assert results[4] == [U1, U2]
    assert results[6] is None

    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("users.u1",), "a")])  # a "." would address another namespace


def test_the_async_calls(store: FivefoldStore) -> None:
    async def run() -> None:
        await store.aput(U1, "coffee", {"text": "I prefer dark roast coffee"})
        await store.aput(U1, "editor", {"text": "I write code in Neovim"})
        item = await store.aget(U1, "coffee")
        assert item is not None
        assert item.value == {"text": "I prefer dark roast coffee"}
        hits = await store.asearch(U1, query="which editor do I use?", limit=1)
        assert [hit.key for hit in hits] == ["editor"]
        assert await store.alist_namespaces(prefix=("users",)) == [U1]
        await store.adelete(U1, "coffee")
        assert await store.aget(U1, "coffee") is None
        results = await store.abatch([GetOp(U1, "editor"), SearchOp(U1, query="Neovim")])
        assert isinstance(results[0], Item)
        assert results[0].key == "editor"

    asyncio.run(run())


def test_index_false_and_other_fields(store: FivefoldStore) -> None:
    store.put(U1, "secret", {"text": "The vault code is 90210"}, index=False)
    store.put(U1, "title", {"title": "Quarterly vault audit", "text": "ignored"}, index=["title"])
    store.put(U1, "empty", {"other": "no text field"})  # nothing to index under "text"
    assert store.get(U1, "secret") is not None
    hits = store.search(U1, query="vault code 90210 audit other text field")
    assert {hit.key for hit in hits} == {"title"}
    assert {item.key for item in store.search(U1)} == {"secret", "title", "empty"}


def test_the_default_index_is_the_whole_value(memory: fivefold.Memory) -> None:
    store = FivefoldStore(memory)
    store.put(U1, "x", {"kind": "preference", "content": {"food": "Ramen with extra garlic"}})
    store.put(U1, "y", {"kind": "preference", "content": {"food": "Plain rice"}})
    assert store.search(U1, query="garlic", limit=1)[0].key == "x"


def test_items_outlive_the_process(tmp_path: Path, minilm: fivefold.MiniLMEmbedder) -> None:
    with fivefold.Memory.open(tmp_path / "kept.db", embedder=minilm) as mem:
        FivefoldStore(mem).put(U1, "k", {"text": "kept"})
    with fivefold.Memory.open(tmp_path / "kept.db", embedder=minilm) as mem:
        item = FivefoldStore(mem).get(U1, "k")
        assert item is not None
        assert item.value == {"text": "kept"}


def test_what_the_store_refuses(memory: fivefold.Memory) -> None:
    with pytest.raises(ValueError, match="own model"):
        FivefoldStore(memory, index={"dims": 384, "embed": "openai:text-embedding-3-small"})
    with pytest.raises(ValueError, match="prefix"):
        FivefoldStore(memory, prefix="a.b")
    with pytest.raises(TypeError, match=r"fivefold\.Memory or Client"):
        FivefoldStore("memory.db")  # type: ignore[arg-type]
    store = FivefoldStore(memory)
    with pytest.raises(NotImplementedError):
        store.put(U1, "k", {"text": "x"}, ttl=5)
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "x"), "k", {"text": "x"})
    with pytest.raises(fivefold.InvalidInput):
        store.put(U1, "k", {"when": object()})  # not JSON


class State(TypedDict):
    user: str
    question: str
    answer: str


def answer(state: State, *, store: BaseStore) -> dict[str, str]:
    hits = store.search(("users", state["user"]), query=state["question"], limit=1)
    return {"answer": hits[0].value["text"] if hits else "I don't know"}


def remember(state: State, *, store: BaseStore) -> dict[str, str]:
    store.put(("users", state["user"]), "last-question", {"text": state["question"]})
    return {}


def test_a_graph_reads_and_writes_the_store(store: FivefoldStore) -> None:
    store.put(("users", "u1"), "badge", {"text": "My badge ID is 47821"})
    store.put(("users", "u2"), "badge", {"text": "My badge ID is 11111"})
    builder = StateGraph(State).add_node(answer).add_node(remember)
    graph = builder.add_edge(START, "answer").add_edge("answer", "remember").compile(store=store)

    result = graph.invoke({"user": "u1", "question": "what is my badge ID?", "answer": ""})
    assert result["answer"] == "My badge ID is 47821"
    item = store.get(("users", "u1"), "last-question")
    assert item is not None
    assert item.value == {"text": "what is my badge ID?"}
    assert store.get(("users", "u2"), "last-question") is None

    later = asyncio.run(graph.ainvoke({"user": "u2", "question": "my badge?", "answer": ""}))
    assert later["answer"] == "My badge ID is 11111"


def test_the_store_on_a_served_memory(client: fivefold.Client) -> None:
    store = FivefoldStore(client, prefix=f"t{uuid.uuid4().hex}")
    other = FivefoldStore(client, prefix=f"t{uuid.uuid4().hex}")
    store.put(U1, "coffee", {"text": "I prefer dark roast coffee"})
    store.put(U1, "badge", {"text": "My badge ID is 47821"})
    store.put(U2, "badge", {"text": "My badge ID is 11111"})
    other.put(U1, "badge", {"text": "Another store's badge 55555"})

    item = store.get(U1, "badge")
    assert item is not None
    assert item.value == {"text": "My badge ID is 47821"}
    assert store.search(U1, query="what is my badge ID?", limit=1)[0].key == "badge"
    assert {hit.namespace for hit in store.search(("users",), query="badge")} == {U1, U2}
    assert store.list_namespaces() == [U1, U2]
    store.put(U1, "badge", {"text": "My badge ID is 47822"})
    assert store.memory.stats(namespace=store.namespace_of(U1)).memories == 2
    store.delete(U1, "coffee")
    assert [i.key for i in store.search(U1)] == ["badge"]

    async def run() -> None:
        got = await store.aget(U1, "badge")
        assert got is not None
        assert got.value == {"text": "My badge ID is 47822"}
        assert await other.alist_namespaces() == [U1]

    asyncio.run(run())


def test_a_listing_pages_through_every_item(tmp_path: Path) -> None:
    with fivefold.Memory.open(tmp_path / "many.db", embedder=fivefold.HashingEmbedder()) as mem:
        store = FivefoldStore(mem)
        store.batch([PutOp(U1, f"k{n:03}", {"n": n}) for n in range(130)])
        listed = store.search(U1, limit=500)
        assert [item.key for item in listed] == [f"k{n:03}" for n in reversed(range(130))]
        assert [item.key for item in store.search(U1, limit=3, offset=126)] == [
            "k003",
            "k002",
            "k001",
        ]
        last = store.search(U1, filter={"n": {"$gte": 120}}, limit=500)
        assert [item.value["n"] for item in last] == list(reversed(range(120, 130)))
        low = store.search(U1, filter={"n": {"$lt": 2}})
        assert [item.value["n"] for item in low] == [1, 0]
