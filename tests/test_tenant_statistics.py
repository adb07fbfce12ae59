"""Per-tenant statistics: what one namespace writes moves nothing another namespace sees.

BM25 document frequencies, memory counts and entity specificity come from the caller's namespace
only. Before they did, 3,000 memories written into namespace A moved namespace B's lexical
rarity from 0.70 to 0.45 and B's BM25 scores, visible in B's plan reasons and ``explain``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import fivefold
from fivefold.wire import to_json

pytestmark = pytest.mark.slow

NOW = datetime(2026, 5, 1, 12, tzinfo=UTC)
WORDS = "budget kestrel launch review coffee design roadmap hiring vendor invoice".split()
PEOPLE = ["Priya Patel", "Sarah Chen", "Tom Okafor"]
QUERIES = [
    "What did Priya say about the Kestrel budget?",
    "kestrel launch review",
    "Who handles vendor invoices?",
    "What happened last week with the roadmap?",
    "coffee",
]


def _open(url: str) -> fivefold.Memory:
    return fivefold.Memory.open(url, embedder=fivefold.HashingEmbedder())


def _tenant_b(memory: fivefold.Memory) -> None:
    rng = random.Random(7)
    items = []
    for n in range(40):
        person = PEOPLE[n % len(PEOPLE)]
        words = " ".join(rng.sample(WORDS, 4))
        items.append(
            {
                "content": f"{person}: the {words} note {n}",
                "namespace": "b",
                "session_id": f"s{n // 8}",
                "event_at": NOW - timedelta(days=n % 12),
                "type": "event",
            }
        )
    memory.remember_many(items)
    memory.relate("Priya Patel", "works_on", "Kestrel", namespace="b")


def _fill_a(memory: fivefold.Memory, count: int) -> None:
    # The same words, people and sessions as B's, so that shared statistics would move.
    rng = random.Random(11)
    items = [
        {
            "content": f"{PEOPLE[n % 3]}: {' '.join(rng.choices(WORDS[:3], k=6))} filler {n}",
            "namespace": "a",
            "session_id": f"s{n // 8}",
            "event_at": NOW - timedelta(days=n % 30),
        }
        for n in range(count)
    ]
    for start in range(0, count, 500):
        memory.remember_many(items[start : start + 500])
    for n in range(50):
        memory.relate(PEOPLE[n % 3], "works_on", "Kestrel", namespace="a")


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _without_timings(v) for k, v in value.items() if k not in ("timings", "elapsed_ms")
        }
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def _what_b_sees(path: str) -> list[Any]:
    # A fresh process's view (no cache), everything B's calls return but their timings.
    with _open(path) as memory:
        seen: list[Any] = []
        for query in QUERIES:
            result = memory.recall(query, namespace="b", k=10, now=NOW)
            seen.append(_without_timings(to_json(result)))
            explained = memory.explain(query, namespace="b", k=10, now=NOW)
            seen.append(_without_timings(to_json(explained)))
        # The file's size is the file's (the server leaves it out of a tenant's stats).
        seen.append({**to_json(memory.stats(namespace="b")), "size_bytes": None, "parts": None})
        seen.append(memory.store.reads.term_document_frequencies("b", WORDS))
        return seen


def test_filling_another_namespace_changes_nothing_this_one_sees(
    new_store: Callable[[], str],
) -> None:
    path = new_store()
    with _open(path) as memory:
        _tenant_b(memory)
    before = _what_b_sees(path)
    with _open(path) as memory:
        _fill_a(memory, 3000)
    after = _what_b_sees(path)
    assert len(before) == len(after) == 2 * len(QUERIES) + 2
    for n, (old, new) in enumerate(zip(before, after, strict=True)):
        assert old == new, f"view {n} changed"


def test_each_namespace_counts_its_own_memories_and_terms(new_store: Callable[[], str]) -> None:
    with _open(new_store()) as memory:
        _tenant_b(memory)
        _fill_a(memory, 600)
        total_b, df_b = memory.store.reads.term_document_frequencies("b", ["budget", "filler"])
        total_a, df_a = memory.store.reads.term_document_frequencies("a", ["budget", "filler"])
        assert (total_b, df_b["filler"]) == (41, 0)  # 40 memories and the relate's fact
        assert (total_a, df_a["filler"]) == (650, 600)
        assert memory.store.reads.term_document_frequencies("nobody", ["budget"]) == (
            0,
            {"budget": 0},
        )
