"""Query-side entity resolution: the cascade exact -> alias -> partial -> trigram fuzzy, over
catalogs built by hand (no store involved)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fivefold.read.parse.entities import EntityResolver
from fivefold.store.records import CatalogEntry
from fivefold.text import normalize_name
from fivefold.types import Resolution

SARAH_CHEN, PRIYA, KESTREL, FALCON, OSPREY, SARAH_JONES, JOSE, BERLIN, INBOX3 = range(1, 10)
MAY_LEE, WILL_SMITH = 10, 11


def entry(entity_id: int, name: str, *, alias: bool = False) -> CatalogEntry:
    return CatalogEntry(entity_id, name, normalize_name(name), alias)


CATALOG = [
    entry(SARAH_CHEN, "Sarah Chen"),
    entry(PRIYA, "Priya Patel"),
    entry(PRIYA, "Priya", alias=True),
    entry(PRIYA, "PP", alias=True),
    entry(KESTREL, "Project Kestrel"),
    entry(FALCON, "Project Falcon"),
    entry(OSPREY, "Project Osprey"),
    entry(SARAH_JONES, "Sarah Jones"),
    entry(JOSE, "José Álvarez"),
    entry(BERLIN, "Berlin"),
    entry(INBOX3, "Inbox3"),
    entry(MAY_LEE, "May Lee"),
    entry(WILL_SMITH, "Will Smith"),
]


@pytest.fixture(scope="module")
def resolver() -> EntityResolver:
    return EntityResolver(CATALOG)


def summary(resolver: EntityResolver, query: str) -> list[tuple[int, float, Resolution]]:
    return [(r.entity_id, r.confidence, r.resolution) for r in resolver.resolve(query)]


@pytest.mark.parametrize(
    ("query", "entity_id", "text"),
    [
        ("who is Sarah Chen?", SARAH_CHEN, "Sarah Chen"),
        ("what did Priya Patel say", PRIYA, "Priya Patel"),
        ("status of Project Kestrel", KESTREL, "Project Kestrel"),
        ("the berlin office", BERLIN, "berlin"),
        ("did inbox3 ship?", INBOX3, "inbox3"),
        ("lunch with May Lee", MAY_LEE, "May Lee"),
    ],
)
def test_exact_name_resolves_with_confidence_one(
    resolver: EntityResolver, query: str, entity_id: int, text: str
) -> None:
    refs = resolver.resolve(query)
    assert [(r.entity_id, r.confidence, r.resolution, r.text) for r in refs] == [
        (entity_id, 1.0, Resolution.EXACT, text)
    ]


@pytest.mark.parametrize("query", ["what did Priya say?", "ask PP", "ask pp about it"])
def test_alias_resolves_to_canonical_with_095(resolver: EntityResolver, query: str) -> None:
    (ref,) = resolver.resolve(query)
    assert (ref.entity_id, ref.name, ref.confidence, ref.resolution) == (
        PRIYA,
        "Priya Patel",
        0.95,
        Resolution.ALIAS,
    )


@pytest.mark.parametrize(
    ("query", "entity_id"),
    [
        ("what did Chen decide", SARAH_CHEN),
        ("Patel's notes", PRIYA),
        ("is Kestrel on track?", KESTREL),
        ("kestrel deadline", KESTREL),
        ("Alvarez called", JOSE),
        ("Jones said so", SARAH_JONES),
    ],
)
def test_unique_partial_name_resolves_with_09(
    resolver: EntityResolver, query: str, entity_id: int
) -> None:
    assert summary(resolver, query) == [(entity_id, 0.9, Resolution.PARTIAL)]


def test_ambiguous_partial_name_splits_confidence_below_07(resolver: EntityResolver) -> None:
    refs = resolver.resolve("what did Sarah say about the launch?")
    assert [r.entity_id for r in refs] == [SARAH_CHEN, SARAH_JONES]
    assert all(r.resolution is Resolution.PARTIAL for r in refs)
    assert all(r.confidence == pytest.approx(0.45) for r in refs)
    assert all(r.confidence < 0.7 for r in refs)


@pytest.mark.parametrize("query", ["how is the project going?", "Project status", "projects"])
def test_word_shared_by_three_names_is_generic(resolver: EntityResolver, query: str) -> None:
    assert resolver.resolve(query) == []


def test_word_shared_by_two_names_is_still_a_partial_match() -> None:
    resolver = EntityResolver([entry(1, "Team Alpha"), entry(2, "Team Beta")])
    assert summary(resolver, "the Team") == [
        (1, 0.45, Resolution.PARTIAL),
        (2, 0.45, Resolution.PARTIAL),
    ]


@pytest.mark.parametrize(
    ("query", "entity_id"),
    [("how is Kestral going?", KESTREL), ("ask Priyaa", PRIYA), ("Berlinn trip", BERLIN)],
)
def test_fuzzy_typo_resolves_below_entity_centric_threshold(
    resolver: EntityResolver, query: str, entity_id: int
) -> None:
    (ref,) = resolver.resolve(query)
    assert ref.entity_id == entity_id
    assert ref.resolution is Resolution.FUZZY
    assert 0.0 < ref.confidence < 0.85


def test_fuzzy_does_not_match_unrelated_capitalized_word(resolver: EntityResolver) -> None:
    assert resolver.resolve("Zanzibar holiday") == []


def test_longest_match_wins(resolver: EntityResolver) -> None:
    # "Sarah" alone is ambiguous and "Chen" alone a partial; together they are one exact ref.
    refs = resolver.resolve("what did Sarah Chen and Priya Patel decide?")
    assert [(r.text, r.entity_id, r.confidence) for r in refs] == [
        ("Sarah Chen", SARAH_CHEN, 1.0),
        ("Priya Patel", PRIYA, 1.0),
    ]


def test_longest_match_prefers_canonical_over_shorter_alias(resolver: EntityResolver) -> None:
    (ref,) = resolver.resolve("priya patel")
    assert (ref.text, ref.resolution) == ("priya patel", Resolution.EXACT)


@pytest.mark.parametrize(
    "query",
    [
        "what will happen next?",  # "will" is a stop word; "Will Smith" exists
        "Who is in charge?",  # capitalized stop word at the start
        "can we meet in may?",  # "may" is a lowercase common word; "May Lee" exists
        "may I ask a question?",
    ],
)
def test_stop_words_and_lowercase_common_words_do_not_resolve(
    resolver: EntityResolver, query: str
) -> None:
    assert resolver.resolve(query) == []


def test_capitalized_common_word_may_still_name_the_entity(resolver: EntityResolver) -> None:
    assert [r.entity_id for r in resolver.resolve("what did May say?")] == [MAY_LEE]


GO, TIMES = 20, 21
WORDS_AS_NAMES = EntityResolver([entry(GO, "Go"), entry(TIMES, "Times"), entry(BERLIN, "Berlin")])


@pytest.mark.parametrize(
    "query",
    [
        "Where's my seat when I go in to the office?",  # after a subject: the verb
        "do we go by train?",
        "How many times a week do I climb?",  # after a count: the plural
        "how few times did it fail?",
        "did I buy a go board?",  # after "a": a common noun
    ],
)
def test_a_lowercase_word_after_a_subject_or_a_count_names_nothing(query: str) -> None:
    assert WORDS_AS_NAMES.resolve(query) == []


@pytest.mark.parametrize(
    ("query", "entity_id"),
    [
        ("when I use Go", GO),  # capitalized: the name
        ("I use go for the backend", GO),  # not right after the subject
        ("the times article", TIMES),
        ("did I like the berlin office?", BERLIN),
    ],
)
def test_the_same_words_elsewhere_still_resolve(query: str, entity_id: int) -> None:
    assert [r.entity_id for r in WORDS_AS_NAMES.resolve(query)] == [entity_id]


@pytest.mark.parametrize(
    "query", ["José Álvarez", "jose alvarez", "JOSÉ ÁLVAREZ", "Jose Alvarez", "josé ALVAREZ"]
)
def test_case_and_accents_are_folded(resolver: EntityResolver, query: str) -> None:
    assert summary(resolver, f"what did {query} say") == [(JOSE, 1.0, Resolution.EXACT)]


def test_empty_catalog_resolves_nothing() -> None:
    assert EntityResolver([]).resolve("Sarah Chen met Priya") == []


def test_refs_are_sorted_by_confidence_then_id(resolver: EntityResolver) -> None:
    refs = resolver.resolve("Chen, Priya and Sarah Jones")
    keys = [(-r.confidence, r.entity_id) for r in refs]
    assert keys == sorted(keys)
    assert [r.entity_id for r in refs] == [SARAH_JONES, PRIYA, SARAH_CHEN]


@given(st.text(max_size=200))
def test_resolution_never_fails_and_confidences_are_valid(text: str) -> None:
    resolver = EntityResolver(CATALOG)
    refs = resolver.resolve(text)
    ids = [r.entity_id for r in refs]
    assert len(ids) == len(set(ids))
    assert all(0.0 < r.confidence <= 1.0 for r in refs)
    keys = [(-r.confidence, r.entity_id) for r in refs]
    assert keys == sorted(keys)


@given(st.sampled_from([e for e in CATALOG if not e.is_alias]), st.sampled_from(["", "ask ", "?"]))
def test_every_canonical_name_resolves_exactly(name: CatalogEntry, prefix: str) -> None:
    refs = EntityResolver(CATALOG).resolve(f"{prefix}{name.name}")
    assert [(r.entity_id, r.confidence) for r in refs] == [(name.entity_id, 1.0)]
