"""The optimizer's plans for thirteen worked examples of routing, with the shipped defaults, on a
fresh store holding only the examples' own facts (no background that makes a word ordinary).
Where the plan differs from the one the examples derive, the row says why; BENCHMARKS.md
("Plans on a store of the examples' own facts") has the features of each."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

import fivefold
from fivefold.types import PlanName

NOW = datetime(2026, 4, 16, 10, tzinfo=UTC)  # a Thursday
MARCH_10, MARCH_24 = datetime(2026, 3, 10, tzinfo=UTC), datetime(2026, 3, 24, tzinfo=UTC)


def _ago(days: int) -> datetime:
    return NOW - timedelta(days=days)


FACTS: list[tuple[str, datetime, datetime | None]] = [
    ("My manager is Priya Patel.", _ago(120), None),
    (
        "Priya prefers short written updates over meetings and replies within the hour.",
        _ago(90),
        None,
    ),
    ("Sarah's manager is Tom Becker.", _ago(100), None),
    ("The Q2 planning doc is due on May 3.", _ago(10), None),
    ("The vendor contract deadline moved to April 30.", _ago(5), None),
    ("Priya said the MVP demo slips to next Friday.", _ago(1), _ago(1)),
    ("Opened the OAuth PR for the login flow.", _ago(12), _ago(12)),
    ("Merged the OAuth PR after review.", _ago(3), _ago(3)),
    ("Our public API is versioned in the URL path.", _ago(60), None),
    ("The API rate limit is 600 requests a minute.", _ago(40), None),
    ("My badge number is 40417.", _ago(200), None),
    ("Inbox3 launched its beta to 200 customers.", MARCH_10, MARCH_10),
    ("Inbox3 had a two-hour outage on the sync service.", MARCH_24, MARCH_24),
    ("Inbox3 pricing was announced in January.", datetime(2026, 1, 15, tzinfo=UTC), None),
    ("My API key for the Recall SDK is rk_live_4f9a.", _ago(30), None),
    ("Ana and Luis are on the backend team.", _ago(80), None),
    ("The backend team owns the billing service.", _ago(70), None),
    ("Worked on the billing migration all Tuesday.", _ago(2), _ago(2)),
    ("Wednesday I paired with Luis on the invoice exporter.", _ago(1), _ago(1)),
    ("I prefer dark mode and keyboard shortcuts.", _ago(150), None),
    ("I prefer tea to coffee in the afternoon.", _ago(140), None),
    ("Priya recommended Postgres for Project Kestrel.", _ago(45), None),
    ("Project Kestrel is the new routing engine.", _ago(50), None),
]

E, X, P, T, PR = (
    PlanName.ENTITY_CENTRIC,
    PlanName.EXPLORATORY,
    PlanName.PRECISION,
    PlanName.TEMPORAL,
    PlanName.PRECISE,
)
EXAMPLES = [
    # question, the examples' plan, the plan here
    # "my manager" is read as the manager the memories name, Priya Patel: an entity question.
    ("what's my manager's communication style?", E, E),
    # "deadline" is in one memory of 23 here: rare, so rare terms route it to precision.
    ("something about deadlines", X, P),
    # One entity in eight words gives entity density 0.6 and specificity 0.60, below 0.8.
    ("what did Priya say yesterday about the MVP?", PR, E),
    ("Who is Sarah's manager?", E, E),
    # The write path made "OAuth PR" an entity, so it resolves exactly (1.0 > 0.85).
    ("Did I finish the OAuth PR?", T, E),
    ("Something about our API", X, X),
    ("What's my badge number", P, P),
    ("What was happening with Inbox3 in March?", E, E),
    # "Recall SDK" is a capitalized product name: an entity of the store, resolved exactly.
    ("what's my API key for the Recall SDK?", P, E),
    ("who is on the backend team?", E, E),
    ("what did I work on last Tuesday and Wednesday?", T, T),
    ("what are my general preferences?", X, X),
    # Without a time window specificity is at most 0.35 + 0.25 + 0.15 = 0.75, below 0.8.
    ("what database did Priya recommend for Project Kestrel?", PR, E),
]


@pytest.fixture(scope="module")
def own_facts() -> Iterator[fivefold.Memory]:
    with fivefold.Memory.open(":memory:", embedder=fivefold.HashingEmbedder()) as mem:
        mem.remember_many(
            [{"content": c, "created_at": w, **({"event_at": e} if e else {})} for c, w, e in FACTS]
        )
        mem.relate("Ana", "member_of", "backend team")
        mem.relate("Luis", "member_of", "backend team")
        yield mem


@pytest.mark.parametrize(("question", "theirs", "ours"), EXAMPLES)
def test_the_plan_of_each_worked_example(
    own_facts: fivefold.Memory, question: str, theirs: PlanName, ours: PlanName
) -> None:
    assert own_facts.explain(question, k=5, now=NOW).plan.name is ours
