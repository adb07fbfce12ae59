"""The result cache (Mode B): TTL, LRU bound, version invalidation and hit rate on the cache
itself, then through ``Memory``: every write in a namespace is visible to the very next recall
there, and other namespaces keep their entries."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import pytest

import fivefold
from fivefold.config import Config, OptimizerConfig
from fivefold.read.cache import ResultCache
from fivefold.types import OptimizerMode, ParsedQuery, Plan, PlanName, RecallResult


@dataclass
class FakeClock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


def result(name: str) -> RecallResult:
    plan = Plan(name=PlanName.BALANCED, retrievers=(), weights={})
    return RecallResult((), plan, ParsedQuery(original=name), MappingProxyType({}))


# -- the cache on its own --------------------------------------------------------------------------
def test_an_entry_lives_for_the_ttl_and_no_longer() -> None:
    clock = FakeClock()
    cache = ResultCache(ttl_seconds=30, max_entries=10, clock=clock)
    cache.put("q", 1, result("q"))
    clock.now = 29.9
    assert cache.get("q", 1) == result("q")
    clock.now = 30.0
    assert cache.get("q", 1) is None
    assert len(cache) == 0


def test_the_least_recently_used_entry_is_evicted_first() -> None:
    cache = ResultCache(ttl_seconds=30, max_entries=2, clock=FakeClock())
    cache.put("a", 1, result("a"))
    cache.put("b", 1, result("b"))
    assert cache.get("a", 1) is not None  # "a" is now the most recently used
    cache.put("c", 1, result("c"))
    assert cache.get("b", 1) is None
    assert cache.get("a", 1) == result("a")
    assert cache.get("c", 1) == result("c")
    assert len(cache) == 2


def test_a_put_of_an_existing_key_refreshes_it() -> None:
    clock = FakeClock()
    cache = ResultCache(ttl_seconds=30, max_entries=2, clock=clock)
    cache.put("a", 1, result("old"))
    cache.put("b", 1, result("b"))
    clock.now = 20.0
    cache.put("a", 2, result("new"))
    cache.put("c", 2, result("c"))
    clock.now = 45.0
    assert cache.get("a", 2) == result("new")
    assert cache.get("b", 1) is None


def test_another_version_is_a_miss_and_drops_the_entry() -> None:
    cache = ResultCache(ttl_seconds=30, max_entries=10, clock=FakeClock())
    cache.put("q", 1, result("q"))
    assert cache.get("q", 2) is None
    assert cache.get("q", 1) is None
    assert len(cache) == 0


def test_hit_rate_counts_hits_and_misses() -> None:
    cache = ResultCache(ttl_seconds=30, max_entries=10, clock=FakeClock())
    assert cache.hit_rate == 0.0
    assert cache.get("q", 1) is None
    cache.put("q", 1, result("q"))
    assert cache.get("q", 1) is not None
    assert cache.get("q", 1) is not None
    assert cache.get("other", 1) is None
    assert (cache.hits, cache.misses) == (2, 2)
    assert cache.hit_rate == 0.5


@pytest.mark.parametrize(("ttl", "size"), [(0.0, 10), (30.0, 0)])
def test_a_zero_ttl_or_size_disables_the_cache(ttl: float, size: int) -> None:
    cache = ResultCache(ttl_seconds=ttl, max_entries=size, clock=FakeClock())
    cache.put("q", 1, result("q"))
    assert cache.get("q", 1) is None
    assert len(cache) == 0


def test_keys_tell_apart_what_repr_tells_apart() -> None:
    assert ResultCache.key("q", "ns", None) == ResultCache.key("q", "ns", None)
    assert ResultCache.key("q", "ns", None) != ResultCache.key("q", "ns", "None")
    assert ResultCache.key("q", "a b") != ResultCache.key("q a", "b")


# -- through Memory ------------------------------------------------------------------------------
NOW = datetime(2026, 3, 20, 17, 0, tzinfo=UTC)
QUERY = "what is my badge ID?"


@pytest.fixture
def mem() -> Iterator[fivefold.Memory]:
    config = Config(optimizer=OptimizerConfig(mode=OptimizerMode.CACHED))
    with fivefold.Memory.open(
        ":memory:", embedder=fivefold.HashingEmbedder(), config=config
    ) as memory:
        memory.remember("My badge ID is 47821")
        memory.remember("Priya Patel leads the platform team")
        memory.remember("Project Kestrel ships in May", entities=["Project Kestrel"])
        memory.remember("My badge ID is 47821", namespace="other")
        yield memory


def ids(res: fivefold.RecallResult) -> list[int]:
    return [hit.memory.id for hit in res.hits]


def test_a_repeated_recall_is_served_from_the_cache(mem: fivefold.Memory) -> None:
    first = mem.recall(QUERY)
    second = mem.recall(QUERY)
    assert first.cached is False
    assert second.cached is True
    assert second.hits == first.hits
    assert second.plan == first.plan
    assert ids(second)
    metrics = mem.metrics()
    assert (metrics.cache_hits, metrics.cache_misses) == (1, 1)
    assert metrics.cache_hit_rate == 0.5


def test_queries_the_parser_reads_apart_are_not_served_each_others_answer(
    mem: fivefold.Memory,
) -> None:
    """The key lowercased and dropped punctuation, which the parser reads: a date and three
    numbers, a month and a verb, were one key. Whitespace still folds."""
    now = datetime(2024, 7, 1, tzinfo=UTC)
    dated = mem.recall("what did I do on 2024-03-05?", now=now)
    assert dated.query.temporal_window is not None
    numbers = mem.recall("what did I do on 2024 03 05?", now=now)
    assert numbers.cached is False
    assert numbers.query.temporal_window is None
    assert mem.recall("what  did I do on\t2024-03-05? ", now=now).cached is True
    assert mem.recall("Kestrel ships in May", now=now).cached is False
    assert mem.recall("kestrel ships in may", now=now).cached is False


def test_explain_takes_recalls_arguments(mem: fivefold.Memory) -> None:
    """``explain(query, **same_args)`` takes what recall takes: min_confidence was refused as
    unknown."""
    assert mem.explain(QUERY, min_confidence=0.2).hits
    with pytest.raises(fivefold.InvalidInput, match="min_confidence"):
        mem.explain(QUERY, min_confidence=2.0)


def test_the_cache_is_off_in_the_other_modes() -> None:
    for mode in (OptimizerMode.OFF, OptimizerMode.RULE):
        config = Config(optimizer=OptimizerConfig(mode=mode))
        with fivefold.Memory.open(
            ":memory:", embedder=fivefold.HashingEmbedder(), config=config
        ) as memory:
            memory.remember("My badge ID is 47821")
            memory.recall(QUERY)
            assert memory.recall(QUERY).cached is False
            assert memory.metrics().cache_hits + memory.metrics().cache_misses == 0


def test_remember_is_seen_by_the_next_recall(mem: fivefold.Memory) -> None:
    mem.recall("where is the parking garage?")
    assert mem.recall("where is the parking garage?").cached is True
    new = mem.remember("The parking garage is under building C")
    res = mem.recall("where is the parking garage?")
    assert res.cached is False
    assert new.id in ids(res)


def test_forget_is_seen_by_the_next_recall(mem: fivefold.Memory) -> None:
    before = mem.recall(QUERY)
    gone = before.hits[0].memory.id
    assert mem.recall(QUERY).cached is True
    mem.forget(gone)
    res = mem.recall(QUERY)
    assert res.cached is False
    assert gone not in ids(res)


def test_relate_is_seen_by_the_next_recall(mem: fivefold.Memory) -> None:
    query = "who does Sarah Chen report to?"
    mem.recall(query)
    assert mem.recall(query).cached is True
    edge = mem.relate("Sarah Chen", "reports_to", "Priya Patel")
    res = mem.recall(query)
    assert res.cached is False
    assert edge.memory_id in ids(res)


def test_relate_without_a_record_is_seen_by_the_next_recall(mem: fivefold.Memory) -> None:
    """Only an edge is written: the graph now walks from Sarah Chen to Priya Patel."""
    query = "Sarah Chen"
    leads = next(h.memory.id for h in mem.recall("Priya Patel leads").hits)

    def graph_found(res: fivefold.RecallResult) -> bool:
        return any(h.memory.id == leads and "graph" in h.sources for h in res.hits)

    assert not graph_found(mem.recall(query))
    assert mem.recall(query).cached is True
    mem.relate("Sarah Chen", "reports_to", "Priya Patel", record=False)
    res = mem.recall(query)
    assert res.cached is False
    assert graph_found(res)


def test_alias_is_seen_by_the_next_recall(mem: fivefold.Memory) -> None:
    query = "when does Falcon ship?"
    assert mem.recall(query).query.entity_refs == ()
    assert mem.recall(query).cached is True
    mem.alias("Project Kestrel", "Falcon")
    res = mem.recall(query)
    assert res.cached is False
    assert [ref.name for ref in res.query.entity_refs] == ["Project Kestrel"]


def test_a_write_elsewhere_keeps_this_namespace_entry(mem: fivefold.Memory) -> None:
    mem.recall(QUERY)
    other = mem.recall(QUERY, namespace="other")
    assert other.cached is False  # the namespace is part of the key
    mem.remember("My badge ID changed to 99999", namespace="other")
    mem.relate("Sarah Chen", "reports_to", "Priya Patel", namespace="other")
    mem.alias("Priya Patel", "PP", namespace="other")
    mem.forget(other.hits[0].memory.id, namespace="other")
    assert mem.recall(QUERY).cached is True
    assert mem.recall(QUERY, namespace="other").cached is False


@pytest.mark.parametrize(
    "variant",
    [
        {"k": 3},
        {"types": ["fact"]},
        {"user_id": "u1"},
        {"agent_id": "a1"},
        {"budget": "high"},
        {"session_id": "s1"},
        {"now": NOW},
    ],
    ids=lambda v: next(iter(v)),
)
def test_other_recall_arguments_are_other_entries(
    mem: fivefold.Memory, variant: dict[str, Any]
) -> None:
    mem.recall(QUERY)
    assert mem.recall(QUERY, **variant).cached is False
    assert mem.recall(QUERY, **variant).cached is True
    assert mem.recall(QUERY).cached is True


def test_spacing_shares_an_entry_case_and_punctuation_do_not(mem: fivefold.Memory) -> None:
    """Folding case and punctuation too would share an entry between queries the parser reads
    apart (the test above), so the key keeps what the parser reads (CHANGELOG, Decisions)."""
    first = mem.recall(QUERY)
    for variant in (f"  {QUERY}", QUERY.replace(" ", "   ")):
        res = mem.recall(variant)
        assert res.cached is True
        assert res.hits == first.hits
    for other in ("What is my badge ID", "what is my badge-ID", "what was my badge ID?"):
        assert mem.recall(other).cached is False


def test_editing_a_hits_nested_metadata_changes_no_later_recall(mem: fivefold.Memory) -> None:
    """The metadata is read-only at its top level; its nested lists and objects were the
    cached result's, so an edit of one came back in the next recalls."""
    made = mem.remember("Kestrel uses Postgres", metadata={"owner": {"name": "Priya"}, "t": ["db"]})
    for _ in range(3):  # the result put in the cache, then two served from it
        hit = next(h for h in mem.recall("Kestrel Postgres").hits if h.memory.id == made.id)
        assert dict(hit.memory.metadata) == {"owner": {"name": "Priya"}, "t": ["db"]}
        hit.memory.metadata["owner"]["name"] = "MALLORY"
        hit.memory.metadata["t"].append("pwned")
    assert mem.recall("Kestrel Postgres").cached


def test_the_key_folds_case_and_punctuation_but_keeps_what_the_parser_reads() -> None:
    from fivefold.text import normalize_query

    assert normalize_query("What's my badge number?") == normalize_query("whats my  badge number")
    assert normalize_query("What is on 2024-03-05?") != normalize_query("what is on 2024 03 05")
    assert normalize_query("Where does Mark work?") != normalize_query("where does mark work")
    assert normalize_query("May plans") == normalize_query("may plans")  # opening: says nothing
