from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from fivefold.bench import synthetic
from fivefold.bench.synthetic import NOW, QueryKind, SyntheticCorpus
from fivefold.read.parse.temporal import find_window
from fivefold.text import content_terms
from fivefold.types import EdgeKind, MemoryType


@pytest.fixture(scope="module")
def corpus() -> SyntheticCorpus:
    return SyntheticCorpus(3000, seed=11)


def test_public_names() -> None:
    assert sorted(synthetic.__all__) == [
        "GENERATOR_VERSION",
        "NOW",
        "QueryKind",
        "SyntheticAlias",
        "SyntheticCorpus",
        "SyntheticMemory",
        "SyntheticQuery",
        "SyntheticRelation",
    ]


def test_same_seed_gives_a_byte_identical_corpus() -> None:
    first, second = SyntheticCorpus(400, seed=3), SyntheticCorpus(400, seed=3)
    assert list(first.lines()) == list(second.lines())
    assert first.digest() == second.digest()
    assert first.queries(50) == second.queries(50)


def test_another_seed_gives_another_corpus() -> None:
    assert SyntheticCorpus(400, seed=3).digest() != SyntheticCorpus(400, seed=4).digest()
    assert SyntheticCorpus(400, seed=3).queries(20) != SyntheticCorpus(400, seed=4).queries(20)


def test_any_memory_can_be_regenerated_on_its_own(corpus: SyntheticCorpus) -> None:
    streamed = list(corpus.memories(1000, 1010))
    assert [corpus.memory(i) for i in range(1000, 1010)] == streamed
    assert [m.index for m in streamed] == list(range(1000, 1010))
    with pytest.raises(IndexError):
        corpus.memory(corpus.size)


def test_every_memory_type_and_template_occurs(corpus: SyntheticCorpus) -> None:
    memories = list(corpus.memories())
    assert {m.type for m in memories} == set(MemoryType)
    assert {m.template for m in memories} == {t.name for t in synthetic.TEMPLATES}
    share = Counter(m.type for m in memories)
    assert all(count > 0.1 * corpus.size for count in share.values())


def test_entities_are_named_in_their_memory(corpus: SyntheticCorpus) -> None:
    people = {p.name for p in corpus.world.people}
    with_people = 0
    for memory in corpus.memories(0, 500):
        assert all(name in memory.content for name in memory.entities)
        with_people += any(name in people for name in memory.entities)
    assert with_people > 150


def test_identifiers_are_unique_and_in_the_text(corpus: SyntheticCorpus) -> None:
    identifiers = [m.identifier for m in corpus.memories() if m.identifier is not None]
    assert len(identifiers) > 0.08 * corpus.size
    assert len(set(identifiers)) == len(identifiers)
    for memory in corpus.memories(0, 300):
        if memory.identifier is not None:
            assert memory.identifier in memory.content
            assert memory.predicate is not None
            assert memory.identifier in memory.predicate


def test_events_carry_dates_spread_over_two_years(corpus: SyntheticCorpus) -> None:
    memories = list(corpus.memories())
    events = [m.event_at for m in memories if m.type is MemoryType.EVENT]
    assert all(m.event_at is None for m in memories if m.type is not MemoryType.EVENT)
    dates = [e for e in events if e is not None]
    assert len(dates) == len(events)
    assert min(dates) >= NOW - timedelta(days=synthetic.SPAN_DAYS + 1)
    assert max(dates) < NOW
    assert max(dates) - min(dates) > timedelta(days=650)
    assert all(m.created_at <= NOW for m in memories)


def test_text_is_varied_enough_for_realistic_document_frequencies(
    corpus: SyntheticCorpus,
) -> None:
    frequencies: Counter[str] = Counter()
    for memory in corpus.memories():
        frequencies.update(set(content_terms(memory.content)))
    common = [t for t, n in frequencies.items() if n > 0.2 * corpus.size]
    assert len(common) <= 2, common
    assert len(frequencies) > 800
    assert sum(n == 1 for n in frequencies.values()) > 200  # a long tail of rare terms


def test_relations_cover_every_edge_kind_and_name_world_entities(
    corpus: SyntheticCorpus,
) -> None:
    world = corpus.world
    names = {p.name for p in world.people} | set(world.orgs) | set(world.projects)
    relations = corpus.relations()
    assert {r.kind for r in relations} == {k.value for k in EdgeKind}
    assert {"reports_to", "works_at", "member_of", "owned_by", "mentors"} <= {
        r.relation for r in relations
    }
    assert all(r.source in names for r in relations)
    assert any(r.valid_to is not None and r.valid_to < NOW for r in relations)
    aliases = corpus.aliases()
    assert {a.name for a in aliases} <= names
    assert len({a.alias for a in aliases}) == len(aliases)


def test_the_query_mix_covers_every_kind_without_repeats(corpus: SyntheticCorpus) -> None:
    queries = corpus.queries(300)
    assert len(queries) == 300
    assert {q.kind for q in queries} == set(QueryKind)
    assert len({(q.text, q.types) for q in queries}) == 300
    warm = corpus.queries(30, salt="warm-up")
    assert warm != queries[:30]


def test_identifier_queries_point_at_the_memory_that_answers_them(
    corpus: SyntheticCorpus,
) -> None:
    lookups = [q for q in corpus.queries(300) if q.kind is QueryKind.IDENTIFIER]
    assert lookups
    for query in lookups:
        assert query.target is not None
        identifier = corpus.memory(query.target).identifier
        assert identifier is not None
        assert identifier in query.text


def test_entity_queries_name_generated_entities(corpus: SyntheticCorpus) -> None:
    world = corpus.world
    words = {w for p in world.people for w in p.name.split()}
    words |= {w for name in (*world.orgs, *world.projects) for w in name.split()}
    kinds = (QueryKind.ENTITY, QueryKind.RELATION)
    for query in (q for q in corpus.queries(300) if q.kind in kinds):
        assert words & set(query.text.rstrip("?").split()), query.text


def test_temporal_queries_parse_to_a_window(corpus: SyntheticCorpus) -> None:
    temporal = [q for q in corpus.queries(300) if q.kind is QueryKind.TEMPORAL]
    assert len(temporal) > 20
    for query in temporal:
        assert find_window(query.text, now=NOW) is not None, query.text


def test_typed_queries_force_a_type_and_type_cued_ones_do_not(corpus: SyntheticCorpus) -> None:
    queries = corpus.queries(300)
    typed = [q for q in queries if q.kind is QueryKind.TYPED]
    assert typed
    assert all(q.types and set(q.types) <= {t.value for t in MemoryType} for q in typed)
    assert all(not q.types for q in queries if q.kind is not QueryKind.TYPED)


def test_items_leave_fields_to_the_engine_only_when_asked() -> None:
    memory = SyntheticCorpus(50, seed=1).memory(7)
    full, bare = memory.item("ns"), memory.item("ns", inferred=True)
    assert full["type"] == memory.type.value
    assert full["entities"] == list(memory.entities)
    assert {"type", "entities", "predicate"}.isdisjoint(bare)
    assert bare["content"] == full["content"] == memory.content
    assert bare["namespace"] == "ns"
