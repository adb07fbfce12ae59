"""The Postgres lexical leg's pruning (MaxScore) returns exactly the unpruned top k: the same
memories, scores and order, ties included, for every scope and filter."""

from __future__ import annotations

import random

import pytest

import fivefold
from fivefold.model import MemoryType, Scope
from fivefold.retrieve.lexical import DEFAULT_WEIGHTS
from fivefold.store.postgres import read

# A Zipfian vocabulary: a few tokens in most memories, most in a few.
VOCAB = [f"w{i}" for i in range(120)]
ZIPF = [1.0 / (rank + 1) for rank in range(len(VOCAB))]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(VOCAB, weights=ZIPF, k=rng.randint(3, 14)))


def test_pruned_top_k_is_the_exact_top_k(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(11)
    items = []
    for i in range(400):
        item = {
            "content": _text(rng),
            "type": rng.choice(["fact", "event", "preference"]),
            "session_id": f"s{i // 25}",
        }
        if i % 3 == 0:
            item["user_id"] = "u1"
        items.append(item)
    items += [dict(items[7]) for _ in range(3)]  # identical texts tie: id order decides
    queries = [" ".join(rng.sample(VOCAB[:40], rng.randint(2, 5))) for _ in range(60)]
    queries += ["w0 w1 w2", "w0 w39", "w1 w1 w7"]
    with fivefold.Memory.open(pg_url, embedder=fivefold.HashingEmbedder()) as mem:
        mem.remember_many(items)
        store = mem.store

        def search(scope: Scope, query: str, types: tuple[MemoryType, ...] = ()) -> object:
            return store.lexical_search(scope, query.split(), 10, types, weights=DEFAULT_WEIGHTS)

        cases = [
            (Scope("default"), ()),
            (Scope("default", user_id="u1"), ()),
            (Scope("default"), (MemoryType.EVENT,)),
        ]
        monkeypatch.setattr(read, "PRUNE_POSTINGS", 10**9)  # never prunes: scores every posting
        exact = [search(scope, q, types) for scope, types in cases for q in queries]
        assert store.lexical_pruned == 0
        monkeypatch.setattr(read, "PRUNE_POSTINGS", 60)
        pruned = [search(scope, q, types) for scope, types in cases for q in queries]
        assert pruned == exact
        assert store.lexical_pruned > len(exact) // 4  # the pruning answered, not the fallback
