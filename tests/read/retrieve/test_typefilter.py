"""Type filter: hints restrict the semantic and lexical legs and widen when too few survive;
types forced by the caller never widen and filter every leg."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

import fivefold
from fivefold.read.parse.entities import EntityResolver
from fivefold.read.parse.query import parse_query
from fivefold.read.pipeline import Question, ReadPipeline, Retrieval
from fivefold.read.plan import balanced_plan
from fivefold.read.retrieve import type_list
from fivefold.read.stats import RecallStats
from fivefold.types import MemoryType, RetrieverName, RetrieverRun, Scope, Scored

NOW = datetime(2026, 3, 20, 17, 0, tzinfo=UTC)
PREF, FACT, EVENT = MemoryType.PREFERENCE, MemoryType.FACT, MemoryType.EVENT


def add(memory: fivefold.Memory, items: Sequence[tuple[str, str]]) -> dict[int, MemoryType]:
    records = memory.remember_many(
        [
            {"content": content, "type": kind, "event_at": NOW - timedelta(days=3)}
            for content, kind in items
        ]
    )
    return {r.id: r.type for r in records}


def run_with_hints(
    memory: fivefold.Memory,
    query: str,
    hints: Sequence[MemoryType],
    forced: Sequence[MemoryType] = (),
) -> Retrieval:
    config = memory.config
    parsed = parse_query(
        query,
        now=NOW,
        resolver=EntityResolver(memory.store.reads.catalog("default")),
        temporal=config.temporal,
    )
    parsed = dataclasses.replace(parsed, type_hints=tuple(hints))
    plan = balanced_plan(parsed, config.fusion, forced_types=forced)
    pipeline = ReadPipeline(memory.store, fivefold.HashingEmbedder(), config)
    stats = RecallStats(memory.store.reads, "default")
    return pipeline.run(Question(parsed, plan, Scope(), stats, 100, NOW, tuple(forced)))


def runs_by_name(runs: Sequence[RetrieverRun]) -> dict[RetrieverName, RetrieverRun]:
    return {run.name: run for run in runs}


COFFEE_PREFS = [
    ("I prefer oat milk in my coffee", "preference"),
    ("I like my coffee black in the morning", "preference"),
    ("My favorite coffee is a flat white", "preference"),
    ("I want decaf coffee after 3pm", "preference"),
    ("I love coffee from the corner cafe", "preference"),
    ("I like coffee beans from Ethiopia", "preference"),
]
COFFEE_OTHERS = [
    ("The office coffee machine broke", "fact"),
    ("Coffee costs 3 euros at the cafe", "fact"),
    ("Had coffee with Ana on Monday", "event"),
    ("Bought a new coffee grinder", "event"),
]


def test_hints_restrict_semantic_and_lexical(hashing_mem: fivefold.Memory) -> None:
    types = add(hashing_mem, COFFEE_PREFS + COFFEE_OTHERS)
    retrieval = run_with_hints(hashing_mem, "coffee", [PREF])
    runs = runs_by_name(retrieval.runs)
    for name in (RetrieverName.SEMANTIC, RetrieverName.LEXICAL):
        assert runs[name].items
        assert {types[s.id] for s in runs[name].items} == {PREF}
    type_run = runs[RetrieverName.TYPE]
    assert type_run.notes == ()
    assert {s.id for s in type_run.items} == {i for i, t in types.items() if t is PREF}
    assert all(s.confidence == 1.0 for s in type_run.items)


def test_too_few_survivors_widen_and_say_so(hashing_mem: fivefold.Memory) -> None:
    types = add(hashing_mem, COFFEE_PREFS[:2] + COFFEE_OTHERS)
    retrieval = run_with_hints(hashing_mem, "coffee", [PREF])
    runs = runs_by_name(retrieval.runs)
    type_run = runs[RetrieverName.TYPE]
    assert len(type_run.notes) == 1
    assert type_run.notes[0].startswith("widened")
    for name in (RetrieverName.SEMANTIC, RetrieverName.LEXICAL):
        assert {types[s.id] for s in runs[name].items} == {PREF, FACT, EVENT}
    # The type list still favours the hinted type, softly, through fusion.
    assert {s.id for s in type_run.items} == {i for i, t in types.items() if t is PREF}
    assert len(retrieval.ranked) == len(types)


def test_widening_threshold_is_configurable(hashing_mem: fivefold.Memory) -> None:
    config = dataclasses.replace(
        hashing_mem.config,
        retrieval=dataclasses.replace(hashing_mem.config.retrieval, type_widen_below=2),
    )
    with fivefold.Memory.open(":memory:", embedder=fivefold.HashingEmbedder(), config=config) as m:
        types = add(m, COFFEE_PREFS[:2] + COFFEE_OTHERS)
        runs = runs_by_name(run_with_hints(m, "coffee", [PREF]).runs)
        assert runs[RetrieverName.TYPE].notes == ()
        assert {types[s.id] for s in runs[RetrieverName.SEMANTIC].items} == {PREF}


def test_forced_types_never_widen_and_filter_every_leg(hashing_mem: fivefold.Memory) -> None:
    records = hashing_mem.remember_many(
        [
            {"content": "I prefer Ana's coffee recipe", "type": "preference", "entities": ["Ana"]},
            {"content": "Ana brews coffee daily", "type": "fact", "entities": ["Ana"]},
            {
                "content": "Coffee with Ana",
                "type": "event",
                "entities": ["Ana"],
                "event_at": NOW - timedelta(days=1),
            },
            {"content": "coffee beans are roasted", "type": "fact"},
        ]
    )
    pref = records[0].id
    explanation = hashing_mem.explain("coffee with Ana yesterday", types=["preference"], now=NOW)
    runs = runs_by_name(explanation.runs)
    assert RetrieverName.GRAPH in runs
    assert RetrieverName.TEMPORAL not in runs  # events are excluded, so no temporal leg
    for run in explanation.runs:
        assert [s.id for s in run.items] == [pref], run.name
        assert not any(n.startswith("widened") for n in run.notes)
    assert [h.id for h in explanation.hits] == [pref]
    result = hashing_mem.recall("coffee with Ana yesterday", types=["preference"], now=NOW)
    assert [h.memory.id for h in result.hits] == [pref]


def test_forced_event_type_keeps_the_temporal_leg(hashing_mem: fivefold.Memory) -> None:
    records = hashing_mem.remember_many(
        [
            {"content": "Coffee with Ana", "type": "event", "event_at": NOW - timedelta(days=1)},
            {"content": "Ana likes coffee", "type": "preference"},
        ]
    )
    explanation = hashing_mem.explain("coffee yesterday", types=["event"], now=NOW)
    runs = runs_by_name(explanation.runs)
    assert [s.id for s in runs[RetrieverName.TEMPORAL].items] == [records[0].id]
    assert [h.id for h in explanation.hits] == [records[0].id]


def test_forced_types_and_hints_together_do_not_widen(hashing_mem: fivefold.Memory) -> None:
    types = add(hashing_mem, COFFEE_PREFS[:1] + COFFEE_OTHERS)
    retrieval = run_with_hints(hashing_mem, "coffee", [FACT], forced=[PREF])
    for run in retrieval.runs:
        assert {types[s.id] for s in run.items} <= {PREF}
        assert not run.notes
    assert {types[f.id] for f in retrieval.ranked} == {PREF}


def scored(*ids: int) -> tuple[Scored, ...]:
    return tuple(Scored(i, 0.5) for i in ids)


@pytest.mark.parametrize(
    ("legs", "expected"),
    [
        # best rank in either leg, ties by id
        ([scored(1, 2, 3), scored(3, 4)], [1, 3, 4]),
        ([scored(4, 3), scored(2, 1)], [4, 1, 3]),
        ([scored(2), scored()], []),
        ([], []),
    ],
)
def test_type_list_orders_on_type_memories_by_best_rank(
    legs: list[tuple[Scored, ...]], expected: list[int]
) -> None:
    kinds = {1: PREF, 2: FACT, 3: PREF, 4: PREF}
    items = type_list(legs, {PREF}, kinds)
    assert [s.id for s in items] == expected
    assert all(s.confidence == 1.0 for s in items)


def test_legs_filtered_by_the_types_need_no_type_read() -> None:
    """``None``: the legs admitted only the wanted types (the pipeline's pre-filter), so every
    item is kept, by its best rank, and no memory's type is read."""
    items = type_list([scored(4, 3), scored(2, 4)], {PREF}, None)
    assert [s.id for s in items] == [2, 4, 3]


def test_a_filtered_type_leg_reads_no_attributes(
    hashing_mem: fivefold.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    types = add(hashing_mem, COFFEE_PREFS + COFFEE_OTHERS)
    callers: list[str] = []
    read = hashing_mem.store.reads.attributes

    def spy(namespace: str, ids: Sequence[int]) -> object:
        callers.extend(frame.function for frame in inspect.stack())
        return read(namespace, ids)

    monkeypatch.setattr(hashing_mem.store.reads, "attributes", spy)
    runs = runs_by_name(run_with_hints(hashing_mem, "coffee", [PREF]).runs)
    assert {s.id for s in runs[RetrieverName.TYPE].items} == {
        i for i, t in types.items() if t is PREF
    }
    assert "_fuse" in callers  # the spy sees reads: fusion reads the fused head
    assert "_text_legs" not in callers
    with fivefold.Memory.open(":memory:", embedder=fivefold.HashingEmbedder()) as widened:
        add(widened, COFFEE_PREFS[:2] + COFFEE_OTHERS)
        read = widened.store.reads.attributes
        monkeypatch.setattr(widened.store.reads, "attributes", spy)
        callers.clear()
        run_with_hints(widened, "coffee", [PREF])  # too few: the legs ran again unfiltered
        assert "_text_legs" in callers
