"""Temporal retriever: Event memories whose ``event_at`` lies in the window, latest first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import fivefold
from fivefold.config import TemporalConfig
from fivefold.read.parse.temporal import find_window
from fivefold.read.retrieve import temporal_search
from fivefold.types import MemoryType, RetrieverName, Scope, TimeWindow

NOW = datetime(2026, 3, 20, 17, 0, tzinfo=UTC)
START = datetime(2026, 3, 17, tzinfo=UTC)
END = datetime(2026, 3, 17, 23, 59, 59, tzinfo=UTC)
WINDOW = TimeWindow(START, END, "last Tuesday", 1.0)


def add(memory: fivefold.Memory, content: str, **fields: object) -> int:
    return memory.remember_many([{"content": content, **fields}])[0].id


def ids(memory: fivefold.Memory, window: TimeWindow = WINDOW, **kwargs: object) -> list[int]:
    scope = kwargs.pop("scope", Scope())
    depth = kwargs.pop("depth", 50)
    return [s.id for s in temporal_search(memory.store.search, scope, window, depth=depth)]


def test_only_events_inside_the_window_latest_first(hashing_mem: fivefold.Memory) -> None:
    morning = add(
        hashing_mem, "standup with the team", type="event", event_at=START + timedelta(hours=9)
    )
    evening = add(
        hashing_mem, "dinner with Ana", type="event", event_at=START + timedelta(hours=19)
    )
    add(hashing_mem, "flew to Berlin", type="event", event_at=START - timedelta(days=1))
    add(hashing_mem, "gave a talk", type="event", event_at=END + timedelta(days=2))
    assert ids(hashing_mem) == [evening, morning]


def test_window_bounds_are_inclusive(hashing_mem: fivefold.Memory) -> None:
    first = add(hashing_mem, "midnight deploy", type="event", event_at=START)
    last = add(hashing_mem, "late call", type="event", event_at=END)
    add(hashing_mem, "just before", type="event", event_at=START - timedelta(seconds=1))
    add(hashing_mem, "just after", type="event", event_at=END + timedelta(seconds=1))
    assert ids(hashing_mem) == [last, first]


def test_confidence_is_one_for_every_event(hashing_mem: fivefold.Memory) -> None:
    for hour in (8, 12, 16):
        add(hashing_mem, f"event at {hour}", type="event", event_at=START + timedelta(hours=hour))
    results = temporal_search(hashing_mem.store.search, Scope(), WINDOW, depth=50)
    assert [s.confidence for s in results] == [1.0, 1.0, 1.0]
    assert all(s.hops is None for s in results)


def test_same_instant_is_ordered_by_id(hashing_mem: fivefold.Memory) -> None:
    at = START + timedelta(hours=10)
    a = add(hashing_mem, "first", type="event", event_at=at)
    b = add(hashing_mem, "second", type="event", event_at=at)
    assert ids(hashing_mem) == [a, b]


def test_facts_and_preferences_created_in_the_window_are_never_returned(
    hashing_mem: fivefold.Memory,
) -> None:
    inside = START + timedelta(hours=12)
    add(hashing_mem, "My badge ID is 47821.", type="fact", created_at=inside)
    add(hashing_mem, "I prefer dark mode", type="preference", created_at=inside)
    add(hashing_mem, "Sarah Chen is the engineering manager", type="entity", created_at=inside)
    add(hashing_mem, "A fact with a date", type="fact", event_at=inside, created_at=inside)
    event = add(hashing_mem, "Lunch with the team", type="event", created_at=inside)
    assert ids(hashing_mem) == [event]


def test_event_without_a_date_uses_created_at(hashing_mem: fivefold.Memory) -> None:
    inside = add(hashing_mem, "I went to the climbing gym", created_at=START + timedelta(hours=18))
    add(hashing_mem, "I went to the cinema", created_at=START + timedelta(days=1, hours=1))
    assert hashing_mem.get(inside).type is MemoryType.EVENT
    assert ids(hashing_mem) == [inside]


def test_parsed_window_selects_the_events_of_that_day(hashing_mem: fivefold.Memory) -> None:
    tuesday = add(
        hashing_mem,
        "reviewed the Kestrel design",
        type="event",
        event_at=START + timedelta(hours=14),
    )
    add(
        hashing_mem,
        "reviewed the Falcon design",
        type="event",
        event_at=START + timedelta(days=1, hours=14),
    )
    window = find_window("what did I do last Tuesday?", now=NOW, config=TemporalConfig())
    assert window is not None
    assert ids(hashing_mem, window) == [tuesday]


def test_recall_runs_temporal_only_with_a_window(hashing_mem: fivefold.Memory) -> None:
    tuesday = add(
        hashing_mem,
        "reviewed the Kestrel design",
        type="event",
        event_at=START + timedelta(hours=14),
    )
    explanation = hashing_mem.explain("what did I do last Tuesday?", now=NOW)
    (run,) = [r for r in explanation.runs if r.name is RetrieverName.TEMPORAL]
    assert [s.id for s in run.items] == [tuesday]
    no_window = hashing_mem.explain("which service runs on port 8080?", now=NOW)
    assert RetrieverName.TEMPORAL not in {r.name for r in no_window.runs}


def test_depth_keeps_the_latest(hashing_mem: fivefold.Memory) -> None:
    made = [
        add(hashing_mem, f"event {h}", type="event", event_at=START + timedelta(hours=h))
        for h in range(1, 6)
    ]
    assert ids(hashing_mem, depth=2) == [made[4], made[3]]


def test_scope_applies(hashing_mem: fivefold.Memory) -> None:
    at = START + timedelta(hours=10)
    mine = add(hashing_mem, "my event", type="event", event_at=at, user_id="u1")
    theirs = add(hashing_mem, "their event", type="event", event_at=at, user_id="u2")
    add(hashing_mem, "elsewhere", type="event", event_at=at, namespace="other")
    assert ids(hashing_mem, scope=Scope(user_id="u1")) == [mine]
    assert ids(hashing_mem) == [mine, theirs]


def test_window_in_another_timezone_selects_the_same_instants(hashing_mem: fivefold.Memory) -> None:
    tokyo = timezone(timedelta(hours=9))
    event = add(hashing_mem, "call", type="event", event_at=datetime(2026, 3, 17, 3, tzinfo=UTC))
    window = TimeWindow(
        datetime(2026, 3, 17, 9, tzinfo=tokyo), datetime(2026, 3, 17, 13, tzinfo=tokyo), "x", 1.0
    )
    assert ids(hashing_mem, window) == [event]


def test_the_window_boost_puts_what_is_dated_inside_the_window_first() -> None:
    """Rules: a memory the lexical and semantic legs find inside the query's window outranks
    a slightly better match from outside it (``fusion.window_boost``); 0 turns it off."""
    from fivefold.config import Config, FusionConfig, OptimizerConfig
    from fivefold.types import OptimizerMode

    def top(window_boost: float) -> str:
        config = Config(
            optimizer=OptimizerConfig(mode=OptimizerMode.RULE),
            fusion=FusionConfig(window_boost=window_boost),
        )
        with fivefold.Memory.open(
            ":memory:", embedder=fivefold.HashingEmbedder(), config=config
        ) as mem:
            mem.remember_many(
                [
                    {
                        "content": "Kestrel schema changes: a schema version field",
                        "type": "fact",
                        "created_at": NOW - timedelta(days=60),
                    },
                    {
                        "content": "Kestrel schema changes reviewed with Noor",
                        "type": "fact",
                        "created_at": NOW - timedelta(days=3),
                    },
                ]
            )
            result = mem.recall("what Kestrel schema changes happened last week?", now=NOW)
            assert result.plan.name.value == "temporal"
            return result.hits[0].memory.content

    assert top(0.0).startswith("Kestrel schema changes: a schema version")
    assert top(0.5).startswith("Kestrel schema changes reviewed")
