"""Candidates' attributes kept across recalls: on the cache itself (a moved generation drops a
namespace's entries, namespaces apart, the bound), then through ``Memory`` on both backends:
a write between two recalls is seen by the second."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

import fivefold
from fivefold import Memory
from fivefold.read.cache import AttributeCache
from fivefold.store.records import MemoryAttributes
from fivefold.types import MemoryType

AT = datetime(2026, 1, 1, tzinfo=UTC)


def attrs(importance: float, superseded_by: int | None = None) -> MemoryAttributes:
    return MemoryAttributes(importance, MemoryType.FACT, None, AT, None, 10, superseded_by)


def test_entries_serve_only_the_generation_they_were_read_at() -> None:
    cache = AttributeCache(100)
    cache.put("a", 3, {1: attrs(0.5), 2: attrs(0.7)})
    assert cache.get("a", 3, [1, 2, 9]) == {1: attrs(0.5), 2: attrs(0.7)}
    assert cache.get("a", 4, [1, 2]) == {}
    cache.put("a", 4, {1: attrs(0.9, superseded_by=2)})
    assert cache.get("a", 4, [1, 2]) == {1: attrs(0.9, superseded_by=2)}
    assert cache.get("a", 3, [1, 2]) == {}  # the older generation's entries are gone


def test_namespaces_are_kept_apart() -> None:
    cache = AttributeCache(100)
    cache.put("a", 1, {1: attrs(0.5)})
    cache.put("b", 1, {2: attrs(0.6)})
    assert cache.get("a", 1, [1, 2]) == {1: attrs(0.5)}
    assert cache.get("b", 1, [1, 2]) == {2: attrs(0.6)}


def test_past_the_bound_the_least_recent_namespace_goes_first() -> None:
    cache = AttributeCache(3)
    cache.put("a", 1, {1: attrs(0.1), 2: attrs(0.2)})
    cache.put("b", 1, {3: attrs(0.3)})
    assert cache.get("a", 1, [1]) == {1: attrs(0.1)}  # "a" is now the more recent
    cache.put("c", 1, {4: attrs(0.4)})
    assert cache.get("b", 1, [3]) == {}
    assert cache.get("a", 1, [1, 2]) == {1: attrs(0.1), 2: attrs(0.2)}
    assert cache.get("c", 1, [4]) == {4: attrs(0.4)}
    assert AttributeCache(0).get("a", 1, [1]) == {}


@pytest.fixture
def memory(store_url: str) -> Iterator[Memory]:
    with Memory.open(store_url, embedder=fivefold.HashingEmbedder()) as mem:
        yield mem


def test_a_supersession_between_two_recalls_is_seen_by_the_second(memory: Memory) -> None:
    old = memory.remember("My badge number is 4411", user_id="lena")
    new = memory.remember("The front desk issued badge 5520 to me", user_id="lena")
    first = memory.recall("badge number", user_id="lena")
    assert {old.id, new.id} <= {h.memory.id for h in first.hits}
    memory.supersede(old.id, new.id, user_id="lena")
    second = memory.recall("badge number", user_id="lena", include_superseded=False)
    assert old.id not in [h.memory.id for h in second.hits]
    assert new.id in [h.memory.id for h in second.hits]
    memory.forget(new.id)
    third = memory.recall("badge number", user_id="lena", include_superseded=False)
    assert [h.memory.id for h in third.hits] == [old.id]
