"""Negations in a query: the negated phrases, and the focus text with those clauses removed."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fivefold.read.parse.negation import find_negations
from fivefold.text import content_terms, tokens

NEGATED = [
    # (query, negated phrases, content terms left in the focus)
    ("what did I do that wasn't related to the frontend?", ["frontend"], []),
    ("what did I do that was not related to the frontend?", ["frontend"], []),
    ("everything except Kestrel", ["kestrel"], ["everything"]),
    ("everything except for Kestrel", ["kestrel"], ["everything"]),
    ("languages other than Python", ["python"], ["languages"]),
    ("which languages other than Python do I use?", ["python"], ["languages", "use"]),
    ("notes not about the Berlin office", ["berlin office"], ["notes"]),
    ("meetings without Sarah", ["sarah"], ["meetings"]),
    ("aside from Berlin, where did I travel?", ["berlin"], ["travel"]),
    ("how many hours did I log not counting Kestrel?", ["kestrel"], ["many", "hours", "log"]),
    ("which incidents weren't caused by Kestrel?", ["kestrel"], ["incidents"]),
    ("everything excluding Falcon", ["falcon"], ["everything"]),
    ("apart from Berlin, where did I travel?", ["berlin"], ["travel"]),
    ("any projects but not Kestrel", ["kestrel"], ["projects"]),
    ("stuff not related to frontend work", ["frontend work"], ["stuff"]),
    ("NOT ABOUT THE FRONTEND", ["frontend"], []),
    ("Ann's beagle, not the one from Spain", ["spain"], ["ann", "beagle"]),
    ("Ann's beagle but not the rescue from Spain", ["rescue spain"], ["ann", "beagle"]),
    ("trips that weren’t about work", ["work"], ["trips"]),  # typographic apostrophe
    # several negations in one query
    ("not Kestrel, not Falcon", ["kestrel", "falcon"], []),
    (
        "projects except Kestrel and not related to the frontend",
        ["kestrel", "frontend"],
        ["projects"],
    ),
    ("meetings without Sarah, excluding Berlin", ["sarah", "berlin"], ["meetings"]),
]


@pytest.mark.parametrize(("query", "negated", "focus_terms"), NEGATED)
def test_negations_are_found_and_removed_from_focus(
    query: str, negated: list[str], focus_terms: list[str]
) -> None:
    found, focus = find_negations(query)
    assert found == negated
    assert content_terms(focus) == focus_terms
    negated_words = {w for phrase in found for w in phrase.split()}
    assert not negated_words & set(tokens(focus))


def test_focus_keeps_the_text_before_the_clause() -> None:
    _, focus = find_negations("what did I do that wasn't related to the frontend?")
    assert focus.startswith("what did I do that")
    assert "related" not in focus


NOT_NEGATED = [
    "did I not finish the OAuth PR?",  # a verb negation, not a topic
    "I didn't finish the migration",
    "I never use tabs",
    "I don't know what happened",
    "what did Sarah not like about the design?",
    "what did I do last Tuesday?",
    "what's my badge ID?",
    "who reports to Sarah Chen?",
    "notes on the Kestrel launch",
]


@pytest.mark.parametrize("query", NOT_NEGATED)
def test_no_topic_negation(query: str) -> None:
    assert find_negations(query) == ([], query)


_CUES = re.compile(r"not|n't|n’t|never|except|excluding|other|apart|without", flags=re.IGNORECASE)


@given(st.text(max_size=300))
def test_negation_parsing_is_total_and_consistent(text: str) -> None:
    found, focus = find_negations(text)
    assert len(focus) <= len(text)
    assert focus == focus.strip()
    words = set(tokens(text))
    for phrase in found:
        assert phrase
        assert set(phrase.split()) <= words
    if not _CUES.search(text):
        assert found == []
        assert focus == " ".join(text.split())


@given(
    st.sampled_from(["everything except", "notes not about", "meetings without"]),
    st.sampled_from(["Kestrel", "Berlin", "Postgres", "Sarah"]),
)
def test_topic_after_a_strong_cue_is_always_negated(cue: str, topic: str) -> None:
    found, focus = find_negations(f"{cue} {topic}")
    assert found == [topic.lower()]
    assert topic not in focus


@pytest.mark.parametrize(
    ("query", "negated"),
    [
        ("Which units do I cover other than 7 West?", ["7 west"]),
        # a name that is also an auxiliary, capitalized right after the cue
        ("Other than Will, which engineers are on Platform with me?", ["will"]),
    ],
)
def test_numbers_and_names_after_a_strong_cue(query: str, negated: list[str]) -> None:
    assert find_negations(query)[0] == negated


@pytest.mark.parametrize(
    "query",
    [
        # "besides" is no cue: what it sets aside is often named by the answer as well
        "Besides Rhino, what software do I use for renders?",
        "did I not take 3 days off?",  # an amount after a bare "not"
        "everything except when it rains",  # a lower-case auxiliary still ends the object
    ],
)
def test_besides_and_amounts_rule_nothing_out(query: str) -> None:
    assert find_negations(query)[0] == []
