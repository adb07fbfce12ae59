"""A change the write path did not link: a newer statement that says what changed ranks above
the older one on the same topic for a question about the present, and only then. The model is
the packaged one (the rule weighs the memories' similarity). The sentences are written for
these tests and the frames read no slot from them, so nothing is marked superseded."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

import fivefold
from fivefold import Memory
from fivefold.config import Config, WriteConfig
from fivefold.types import Supersession

OLD = "I keep my climbing shoes in the hallway cupboard."
NEW = "Moved my climbing shoes to the garage shelf."
FILLER = [
    "I water the balcony tomatoes every second evening.",
    "Our quarterly planning doc lives in the shared drive.",
    "The coffee machine on the third floor needs descaling monthly.",
]
QUESTION = "Where do I keep my climbing shoes?"
T0 = datetime(2026, 3, 1, tzinfo=UTC)
T1 = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture
def memory(store_url: str, minilm: fivefold.MiniLMEmbedder) -> Iterator[Memory]:
    with Memory.open(store_url, embedder=minilm) as mem:
        yield mem


def _write(memory: Memory, new: str = NEW) -> tuple[int, int]:
    items = [{"content": text, "created_at": T0, "user_id": "ana"} for text in FILLER]
    old = memory.remember_many([*items, {"content": OLD, "created_at": T0, "user_id": "ana"}])[-1]
    newer = memory.remember_many([{"content": new, "created_at": T1, "user_id": "ana"}])[0]
    assert old.superseded_by is None  # the rule under test is the read path's, not a link
    return old.id, newer.id


def _ids(memory: Memory, query: str) -> list[int]:
    return [h.memory.id for h in memory.recall(query, user_id="ana", k=5).hits]


def test_the_newer_statement_of_a_change_comes_first(memory: Memory) -> None:
    old, new = _write(memory)
    ranked = _ids(memory, QUESTION)
    assert ranked.index(new) < ranked.index(old)
    reasons = memory.recall(QUESTION, user_id="ana", k=5).plan.reasons
    assert any("newer statement" in reason for reason in reasons)


def test_a_question_about_the_past_keeps_the_older_first(memory: Memory) -> None:
    old, new = _write(memory)
    ranked = _ids(memory, "Where did I keep my climbing shoes before?")
    assert ranked.index(old) < ranked.index(new)


def test_a_newer_statement_of_the_same_thing_without_a_cue_comes_first(memory: Memory) -> None:
    old, new = _write(memory, "My climbing shoes sit on the garage shelf.")
    ranked = _ids(memory, QUESTION)
    assert ranked.index(new) < ranked.index(old)


@pytest.mark.parametrize(
    "other",
    [
        "My running shoes sit on the garage shelf.",  # another pair of shoes
        "I also keep climbing shoes on the garage shelf.",  # says it adds
        "Tom's climbing shoes sit on the garage shelf.",  # someone else's
    ],
)
def test_a_newer_statement_of_another_thing_without_a_cue_moves_nothing(
    memory: Memory, other: str
) -> None:
    old, new = _write(memory, other)
    ranked = _ids(memory, QUESTION)
    assert ranked.index(old) < ranked.index(new)


def test_supersession_off_moves_nothing(store_url: str, minilm: fivefold.MiniLMEmbedder) -> None:
    config = Config(write=WriteConfig(supersede=Supersession.OFF))
    with Memory.open(store_url, embedder=minilm, config=config) as memory:
        old, new = _write(memory)
        ranked = _ids(memory, QUESTION)
        assert ranked.index(old) < ranked.index(new)


def test_another_users_statement_is_not_the_change(memory: Memory) -> None:
    items = [{"content": text, "created_at": T0, "user_id": "ana"} for text in FILLER]
    old = memory.remember_many([*items, {"content": OLD, "created_at": T0, "user_id": "ana"}])[-1]
    new = memory.remember_many(
        [
            {
                "content": "My climbing shoes sit on the garage shelf.",
                "created_at": T1,
                "user_id": "ben",
            }
        ]
    )[0]
    ranked = [h.memory.id for h in memory.recall(QUESTION, k=5).hits]  # both users' memories
    assert ranked.index(old.id) < ranked.index(new.id)


def test_of_three_statements_found_out_of_order_the_newest_comes_first(memory: Memory) -> None:
    """Found oldest, newest, middle: the middle goes above the oldest, the newest above both
    (not level with the middle, where the lower id would win)."""
    from fivefold.read import history
    from fivefold.read.fuse import Fused
    from fivefold.types import Scope

    texts = [
        (OLD, T0),
        ("My climbing shoes sit on the garage shelf.", T1),
        ("My climbing shoes sit in the car boot now.", datetime(2026, 9, 1, tzinfo=UTC)),
    ]
    oldest, middle, newest = (
        memory.remember_many([{"content": text, "created_at": at, "user_id": "ana"}])[0].id
        for text, at in texts
    )
    ranked = [Fused(oldest, 0.3, ()), Fused(newest, 0.2, ()), Fused(middle, 0.1, ())]
    attributes = memory.store.reads.attributes("default", [oldest, middle, newest])
    assert all(a.superseded_by is None for a in attributes.values())
    out, moved = history.newer_first(ranked, attributes, memory.store, Scope("default"))
    assert [f.id for f in out] == [newest, middle, oldest]
    assert moved == 2
