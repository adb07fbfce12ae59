"""Stage 1 of the read path: ``parse_query`` with a real ``EntityResolver`` and a fixed now."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fivefold.config import TemporalConfig
from fivefold.read.parse.entities import EntityResolver
from fivefold.read.parse.query import MAX_QUERY_CHARS, parse_query, predicate_hints
from fivefold.store.records import CatalogEntry
from fivefold.text import STOP_WORDS, normalize_name
from fivefold.types import ParsedQuery, Resolution

NOW = datetime(2026, 3, 20, 17, 0, tzinfo=UTC)  # a Friday
SARAH, PRIYA, KESTREL, MARCUS = 1, 2, 3, 4


def entry(entity_id: int, name: str, *, alias: bool = False) -> CatalogEntry:
    return CatalogEntry(entity_id, name, normalize_name(name), alias)


RESOLVER = EntityResolver(
    [
        entry(SARAH, "Sarah Chen"),
        entry(PRIYA, "Priya Patel"),
        entry(PRIYA, "Priya", alias=True),
        entry(KESTREL, "Project Kestrel"),
        entry(MARCUS, "Marcus Lee"),
    ]
)


def parse(text: str) -> ParsedQuery:
    return parse_query(text, now=NOW, resolver=RESOLVER, temporal=TemporalConfig())


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("what's my badge ID?", ("badge", "id")),
        ("what did Priya recommend for Kestrel?", ("priya", "recommend", "kestrel")),
        ("which service runs on port 8080?", ("service", "runs", "port", "8080")),
        ("everything about Kestrel except the frontend", ("everything", "kestrel")),
        ("what did I do that wasn't related to the frontend?", ()),
        ("what is the", ()),
        ("Tell me about Kestrel and Kestrel deadlines", ("kestrel", "deadlines")),
    ],
)
def test_terms_exclude_stop_words_and_negated_terms(text: str, terms: tuple[str, ...]) -> None:
    parsed = parse(text)
    assert parsed.terms == terms
    assert not set(parsed.terms) & STOP_WORDS


def test_negated_terms_are_not_searched_for() -> None:
    parsed = parse("Kestrel notes without the frontend")
    assert parsed.negations == ("frontend",)
    assert "frontend" not in parsed.terms
    assert "frontend" not in parsed.focus
    assert parsed.original == "Kestrel notes without the frontend"


def test_negated_entity_is_not_an_entity_ref() -> None:
    parsed = parse("everything except Kestrel")
    assert parsed.negations == ("kestrel",)
    assert parsed.entity_refs == ()


@pytest.mark.parametrize(
    ("text", "hints"),
    [
        ("what's my badge ID?", ("badge id",)),
        ("who is Sarah's manager?", ("manager",)),
        ("what's our deploy target for Kestrel?", ("deploy target",)),
        ("what is my favorite coffee order", ("favorite coffee order",)),
        ("what did Priya recommend?", ()),
        ("port 8080", ()),
    ],
)
def test_predicate_hints(text: str, hints: tuple[str, ...]) -> None:
    assert parse(text).predicate_hints == hints
    assert tuple(predicate_hints(text)) == hints


@pytest.mark.parametrize(
    ("text", "multi_hop"),
    [
        ("who is Sarah's manager's manager?", True),
        ("friends of Priya", True),
        ("who also knows Marcus?", True),
        ("people connected to Marcus Lee", True),
        ("who is Sarah's manager?", False),
        ("what did Priya recommend for Kestrel?", False),
        ("what's my badge ID?", False),
    ],
)
def test_multi_hop_detection(text: str, multi_hop: bool) -> None:
    assert parse(text).multi_hop is multi_hop


def test_entity_refs_come_from_the_resolver() -> None:
    parsed = parse("what did Priya recommend for Project Kestrel?")
    assert [(r.entity_id, r.confidence, r.resolution) for r in parsed.entity_refs] == [
        (KESTREL, 1.0, Resolution.EXACT),
        (PRIYA, 0.95, Resolution.ALIAS),
    ]


def test_last_tuesday_sets_a_one_day_window() -> None:
    window = parse("what did I do last Tuesday?").temporal_window
    assert window is not None
    assert window.start == datetime(2026, 3, 17, tzinfo=UTC)
    assert window.end == datetime(2026, 3, 17, 23, 59, 59, 999_999, tzinfo=UTC)
    assert window.expression == "last Tuesday"


@pytest.mark.parametrize(
    "text",
    [
        "which service runs on port 8080?",
        "what's my badge ID 47821?",
        "did we ship version 2.3.1?",
        "what's my badge ID?",
    ],
)
def test_no_window_from_digits_that_are_not_dates(text: str) -> None:
    window = parse(text).temporal_window
    # "did we ship ..." implies a recent window; the digits must never make one.
    assert window is None or not any(c.isdigit() for c in window.expression)


@pytest.mark.parametrize(
    ("text", "expression"),
    [
        ("Did I finish the OAuth PR?", "Did I finish"),
        ("have we shipped the release?", "have we shipped"),
    ],
)
def test_completion_questions_imply_a_recent_window(text: str, expression: str) -> None:
    window = parse(text).temporal_window
    assert window is not None
    assert window.expression == expression
    assert window.end - window.start == timedelta(days=30)
    assert window.precision == pytest.approx(0.3)


def test_time_words_are_not_bm25_terms() -> None:
    assert parse("what did I do last Tuesday at the gym?").terms == ("gym",)


@pytest.mark.parametrize(
    "text", ["what do I prefer for coffee?", "when did I go to Berlin?", "who is Sarah Chen?"]
)
def test_parser_never_sets_type_hints_or_specificity(text: str) -> None:
    parsed = parse(text)
    assert parsed.type_hints == ()
    assert parsed.specificity == 0.0
    assert parsed.rewrites == ()


def test_huge_query_is_truncated_and_parses_quickly() -> None:
    chunk = "what did Priya say about Kestrel last Tuesday, not the frontend, on port 8080? "
    text = (chunk * (100_000 // len(chunk) + 1))[:100_000]
    start = time.perf_counter()
    parsed = parse(text)
    elapsed = time.perf_counter() - start
    assert len(parsed.original) == MAX_QUERY_CHARS
    assert parsed.original == text[:MAX_QUERY_CHARS]
    assert elapsed < 2.0
    assert {r.entity_id for r in parsed.entity_refs} == {PRIYA, KESTREL}


@settings(deadline=None)
@given(st.text(max_size=500))
def test_parsing_is_total(text: str) -> None:
    parsed = parse(text)
    assert parsed.original == text[:MAX_QUERY_CHARS]
    assert len(parsed.terms) == len(set(parsed.terms))
    assert not set(parsed.terms) & STOP_WORDS
    negated = {t for phrase in parsed.negations for t in phrase.split()}
    assert not set(parsed.terms) & negated
    assert parsed.type_hints == ()
    window = parsed.temporal_window
    assert window is None or window.start <= window.end


@pytest.mark.parametrize(
    ("text", "past"),
    [
        ("What was my title when I joined?", True),
        ("Where did we live before Utrecht?", True),
        ("Who used to manage me?", True),
        ("What is my title?", False),
        ("Where do we live?", False),
        ("What app do I use to book shifts?", False),
        # A weekday names a recurring day here, not a time gone by.
        ("How many covers do we do on a Saturday?", False),
    ],
)
def test_a_question_about_the_past(text: str, past: bool) -> None:
    assert parse(text).asks_past is past


def test_more_recently_compares_and_opens_no_window() -> None:
    parsed = parse("Which pet did Jolene adopt more recently, Susie or Seraphim?")
    assert parsed.temporal_window is None
