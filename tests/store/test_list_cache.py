"""``ListCache``, the Postgres store's kept posting lists: what it keeps, for which version of a
namespace, and what it drops."""

from __future__ import annotations

import numpy as np
import pytest

from fivefold.store.postgres import lists
from fivefold.store.postgres.lists import ENTRY_BYTES, ListCache


def _postings(count: int) -> np.ndarray:
    return np.zeros(count, dtype=[("id", ">i8"), ("first", ">f4"), ("norm1", ">i4")])


def test_the_least_recently_used_list_goes_first_past_the_limit() -> None:
    one = lists._cost((0, "a"), _postings(100))  # 1,600 bytes of postings, and the rest
    cache = ListCache(limit=2 * one)
    version = (1, 7)
    for term in ("a", "b"):
        cache.put("ns", version, (0, term), _postings(100))
    assert cache.get("ns", version, (0, "a")) is not None  # now "b" is the oldest
    cache.put("ns", version, (0, "c"), _postings(100))
    assert cache.get("ns", version, (0, "b")) is None
    assert cache.get("ns", version, (0, "a")) is not None
    assert cache.size_bytes == 2 * one
    assert cache.evicted == 1
    kept = cache.get("ns", version, (0, "c"))
    assert kept is not None
    assert not kept.flags.writeable


def test_a_list_is_only_for_the_version_it_was_read_at() -> None:
    cache = ListCache()
    cache.put("ns", (5, 100), (0, "a"), _postings(3))
    assert cache.get("ns", (5, 100), (0, "a")) is not None
    assert cache.get("ns", (4, 90), (0, "a")) is None  # an older snapshot
    cache.put("ns", (4, 90), (0, "b"), _postings(3))  # not kept: older
    assert cache.get("ns", (5, 100), (0, "b")) is None
    # The same generation in another row version: the namespace was made again.
    cache.put("ns", (5, 200), (0, "b"), _postings(3))
    assert cache.get("ns", (5, 200), (0, "a")) is None
    assert cache.get("ns", (5, 200), (0, "b")) is not None
    cache.put("ns", (6, 210), (0, "c"), _postings(3))  # a write: the older lists go
    assert cache.get("ns", (6, 210), (0, "b")) is None
    assert cache.size_bytes == lists._cost((0, "c"), _postings(3))


def test_namespaces_are_kept_apart() -> None:
    cache = ListCache()
    cache.put("a", (1, 1), (0, "t"), _postings(3))
    cache.put("b", (1, 1), (0, "t"), np.ones(2, dtype=_postings(0).dtype))
    cache.put("b", (2, 2), (0, "u"), _postings(3))  # b moves on; a's list stays
    found = cache.get("a", (1, 1), (0, "t"))
    assert found is not None
    assert len(found) == 3


def test_a_list_larger_than_the_cache_is_not_kept() -> None:
    cache = ListCache(limit=10 * lists._cost((0, "x"), _postings(100)))
    cache.put("ns", (2, 2), (0, "small"), _postings(100))
    cache.put("ns", (2, 2), (0, "huge"), _postings(10_000))
    assert cache.get("ns", (2, 2), (0, "huge")) is None
    assert cache.get("ns", (2, 2), (0, "small")) is not None  # not evicted for it
    assert cache.evicted == 0


def test_past_the_bound_the_least_recently_searched_namespace_goes_with_its_lists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lists, "MAX_NAMESPACES", 3)
    cache = ListCache()
    for name in ("n1", "n2", "n3"):
        cache.put(name, (1, 1), (0, "t"), _postings(2))
    cache.get("n1", (1, 1), (0, "t"))  # n2 is now the least recently searched
    cache.put("n4", (1, 1), (0, "t"), _postings(2))
    assert len(cache._versions) == 3
    assert cache.get("n2", (1, 1), (0, "t")) is None
    assert cache.get("n1", (1, 1), (0, "t")) is not None
    assert cache.size_bytes == 3 * lists._cost((0, "t"), _postings(2))


def test_a_list_is_counted_with_its_term_and_equal_names_are_held_once() -> None:
    cache = ListCache()
    long_term = "x" * 4_000
    cache.put("ns", (1, 1), (0, long_term), _postings(1))
    assert cache.size_bytes >= 4_000 + ENTRY_BYTES + _postings(1).nbytes
    twins = ["".join(["n", "s"]) for _ in range(3)]  # equal names, distinct strings
    for n, name in enumerate(twins):
        cache.put(name, (1, 1), (0, f"t{n}"), _postings(1))
    assert len({id(name) for name, _ in cache._lists}) == 1
