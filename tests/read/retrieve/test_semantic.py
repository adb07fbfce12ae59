"""Semantic retriever: cosine over stored embeddings, clipped to [0, 1], max over rewrites."""

from __future__ import annotations

import numpy as np
import pytest

import fivefold
from fivefold.read.retrieve import semantic_search
from fivefold.types import MemoryType, Scope

CORPUS = [
    "We bought groceries for the weekend barbecue",
    "The cat knocked a glass off the kitchen table",
    "I set up OAuth2 login with JWT tokens for the API gateway",
    "Priya recommended Postgres for Project Kestrel",
    "My badge ID is 47821",
    "I prefer dark mode in every editor",
    "The quarterly budget review moved to Thursday",
]


@pytest.mark.parametrize(
    ("query", "answer"),
    [
        ("how did I handle user authentication?", 2),
        ("what database was suggested for Kestrel?", 3),
        ("which color theme do I like in my IDE?", 5),
        ("what did we get for the cookout?", 0),
    ],
)
def test_paraphrase_ranks_first_with_minilm(
    mem: fivefold.Memory, minilm: fivefold.MiniLMEmbedder, query: str, answer: int
) -> None:
    ids = [r.id for r in mem.remember_many([{"content": c} for c in CORPUS])]
    results = semantic_search(mem.store.search, Scope(), minilm.embed([query]), depth=10)
    assert results[0].id == ids[answer]
    assert len(results) == len(CORPUS)
    assert all(0.0 <= r.confidence <= 1.0 for r in results)
    keys = [(-r.confidence, r.id) for r in results]
    assert keys == sorted(keys)
    assert all(r.hops is None for r in results)


def unit(*values: float, dim: int = 64) -> list[float]:
    vector = np.zeros(dim, dtype=np.float32)
    vector[: len(values)] = values
    return list(vector / np.linalg.norm(vector))


def store_vectors(
    memory: fivefold.Memory, vectors: list[list[float]], **fields: object
) -> list[int]:
    items = [
        {"content": f"memory number {i}", "vector": v, **fields} for i, v in enumerate(vectors)
    ]
    return [r.id for r in memory.remember_many(items)]


def test_cosines_are_exact_and_negative_ones_clip_to_zero(hashing_mem: fivefold.Memory) -> None:
    a, b, c, d = store_vectors(hashing_mem, [unit(1, 0), unit(0.6, 0.8), unit(0, 1), unit(-1, 0)])
    query = np.array([unit(1, 0)], dtype=np.float32)
    results = semantic_search(hashing_mem.store.search, Scope(), query, depth=10)
    assert [r.id for r in results] == [a, b, c, d]  # c and d tie at 0.0: by id
    assert [r.confidence for r in results] == pytest.approx([1.0, 0.6, 0.0, 0.0], abs=1e-6)


def test_ties_are_broken_by_id(hashing_mem: fivefold.Memory) -> None:
    ids = store_vectors(hashing_mem, [unit(0.6, 0.8)] * 3 + [unit(1, 0)])
    query = np.array([unit(0, 1)], dtype=np.float32)
    results = semantic_search(hashing_mem.store.search, Scope(), query, depth=10)
    assert [r.id for r in results] == [*ids[:3], ids[3]]
    assert results[0].confidence == results[1].confidence == results[2].confidence


def test_rewrites_take_the_max_per_memory(hashing_mem: fivefold.Memory) -> None:
    a, b, c, d = store_vectors(hashing_mem, [unit(1, 0), unit(0.6, 0.8), unit(0, 1), unit(-1, 0)])
    queries = np.array([unit(1, 0), unit(0, 1)], dtype=np.float32)
    results = semantic_search(hashing_mem.store.search, Scope(), queries, depth=10)
    assert [r.id for r in results] == [a, c, b, d]
    assert [r.confidence for r in results] == pytest.approx([1.0, 1.0, 0.8, 0.0], abs=1e-6)
    singles = [
        {
            r.id: r.confidence
            for r in semantic_search(hashing_mem.store.search, Scope(), q[None], depth=10)
        }
        for q in queries
    ]
    assert {r.id: r.confidence for r in results} == {
        i: max(s.get(i, 0.0) for s in singles) for i in (a, b, c, d)
    }


def test_depth_cuts_the_list(hashing_mem: fivefold.Memory) -> None:
    a, b, _, _ = store_vectors(hashing_mem, [unit(1, 0), unit(0.6, 0.8), unit(0, 1), unit(-1, 0)])
    queries = np.array([unit(1, 0), unit(1, 0.1)], dtype=np.float32)
    results = semantic_search(hashing_mem.store.search, Scope(), queries, depth=2)
    assert [r.id for r in results] == [a, b]


def test_no_query_vectors_no_results(hashing_mem: fivefold.Memory) -> None:
    store_vectors(hashing_mem, [unit(1, 0)])
    empty = np.zeros((0, 64), dtype=np.float32)
    assert semantic_search(hashing_mem.store.search, Scope(), empty, depth=10) == ()


def test_empty_store_returns_nothing(hashing_mem: fivefold.Memory) -> None:
    query = np.array([unit(1, 0)], dtype=np.float32)
    assert semantic_search(hashing_mem.store.search, Scope(), query, depth=10) == ()


def test_type_filter_and_scope_apply(hashing_mem: fivefold.Memory) -> None:
    (pref,) = store_vectors(hashing_mem, [unit(0.6, 0.8)], type="preference", user_id="u1")
    (fact,) = store_vectors(hashing_mem, [unit(1, 0)], type="fact", user_id="u1")
    (other,) = store_vectors(hashing_mem, [unit(1, 0)], type="preference", user_id="u2")
    query = np.array([unit(1, 0)], dtype=np.float32)
    store = hashing_mem.store.search
    assert [r.id for r in semantic_search(store, Scope(user_id="u1"), query, depth=10)] == [
        fact,
        pref,
    ]
    prefs = semantic_search(
        store, Scope(user_id="u1"), query, depth=10, types=[MemoryType.PREFERENCE]
    )
    assert [r.id for r in prefs] == [pref]
    assert {r.id for r in semantic_search(store, Scope(), query, depth=10)} == {pref, fact, other}
    assert semantic_search(store, Scope(namespace="elsewhere"), query, depth=10) == ()
