"""A memory's history on both backends: exact repeats stored once and counted, supersession said
outright (and forgetting the newer one), the chain, recall with time in mind, chats in, and a
scope forgotten whole."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

import fivefold
from fivefold import InvalidInput, Memory, NotFound
from fivefold.config import Config, WriteConfig
from fivefold.types import Dedup

NOW = datetime(2026, 10, 1, tzinfo=UTC)
LISBON = "I live in a flat in Lisbon near the river"
UTRECHT = "We moved to Utrecht in January; the new place is by the canal"


@pytest.fixture
def memory(store_url: str) -> Iterator[Memory]:
    with Memory.open(store_url, embedder=fivefold.HashingEmbedder()) as mem:
        yield mem


def test_an_exact_repeat_is_stored_once_and_counted(memory: Memory) -> None:
    first = memory.remember(LISBON, user_id="lena")
    again = memory.remember(f"  {LISBON.upper()}\n", user_id="lena")  # spaces and case folded
    assert first.created
    assert not again.created
    assert again.id == first.id
    assert (again.seen, memory.get(first.id).seen) == (2, 2)
    assert again.last_seen_at is not None
    assert memory.get(first.id) == again
    assert memory.stats().memories == 1


@pytest.mark.parametrize(
    "other",
    [
        {"user_id": "omar"},  # another scope
        {"user_id": "lena", "metadata": {"source": "mail"}},  # something new
        {"user_id": "lena", "type": "preference"},
        {"user_id": "lena", "event_at": "2025-01-01T00:00:00+00:00"},
        {"user_id": "lena", "predicate": "lives in Lisbon"},
    ],
)
def test_the_same_words_with_something_new_are_another_memory(
    memory: Memory, other: dict[str, object]
) -> None:
    first = memory.remember(LISBON, user_id="lena")
    second = memory.remember(LISBON, **other)  # type: ignore[arg-type]
    assert second.created
    assert second.id != first.id


def test_conversation_turns_saying_the_same_words_are_both_kept(memory: Memory) -> None:
    items = [{"content": "Yes!", "session_id": "s1"}, {"content": "Yes!", "session_id": "s1"}]
    a, b = memory.remember_many(items)
    assert a.id != b.id
    assert (a.created, b.created) == (True, True)


def test_a_batch_repeating_itself_stores_each_memory_once(memory: Memory) -> None:
    records = memory.remember_many(
        [{"content": "note one"}, {"content": "Note  one"}, {"content": "note two"}]
    )
    assert [r.created for r in records] == [True, False, True]
    assert records[0].id == records[1].id
    assert records[0].seen == 2
    assert memory.get(records[0].id).seen == 2
    stored = memory.remember("note two")
    assert not stored.created
    assert stored.seen == 2


def test_dedup_off_stores_every_write(store_url: str) -> None:
    config = Config(write=WriteConfig(dedup=Dedup.OFF))
    with Memory.open(store_url, embedder=fivefold.HashingEmbedder(), config=config) as memory:
        a, b = memory.remember("twice"), memory.remember("twice")
    assert a.id != b.id
    assert b.created


def test_supersedes_said_outright_and_forgetting_the_newer_restores_the_older(
    memory: Memory,
) -> None:
    old = memory.remember(LISBON, user_id="lena")
    new = memory.remember(UTRECHT, user_id="lena", supersedes=old.id)
    stale = memory.get(old.id)
    assert stale.superseded_by == new.id
    assert stale.valid_to == new.created_at
    assert memory.get(new.id).superseded_by is None
    assert [r.id for r in memory.history(old.id)] == [old.id, new.id]
    assert [r.id for r in memory.history(new.id)] == [old.id, new.id]
    memory.forget(new.id)
    restored = memory.get(old.id)
    assert (restored.superseded_by, restored.valid_to) == (None, None)


def test_forgetting_the_middle_of_a_chain_hands_the_oldest_to_the_newest(memory: Memory) -> None:
    a = memory.remember("badge A-1")
    b = memory.remember("badge B-2", supersedes=a.id)
    c = memory.remember("badge C-3", supersedes=b.id)
    memory.forget(b.id)
    assert memory.get(a.id).superseded_by == c.id
    assert [r.id for r in memory.history(c.id)] == [a.id, c.id]


def test_supersede_checks_scope_and_cycles_and_writes_nothing_when_refused(
    memory: Memory,
) -> None:
    lena = memory.remember("desk 12", user_id="lena")
    omar = memory.remember("desk 14", user_id="omar")
    with pytest.raises(NotFound):
        memory.remember("desk 15", user_id="lena", supersedes=omar.id)
    assert memory.stats().memories == 2
    with pytest.raises(NotFound):
        memory.supersede(lena.id, omar.id, user_id="lena")
    newer = memory.remember("desk 16", user_id="lena")
    memory.supersede(lena.id, newer.id, user_id="lena")
    with pytest.raises(InvalidInput, match="is superseded by"):
        memory.supersede(newer.id, lena.id, user_id="lena")
    with pytest.raises(InvalidInput):
        memory.supersede(lena.id, lena.id, user_id="lena")
    assert memory.get(newer.id, user_id="lena").superseded_by is None


def test_recall_about_the_present_puts_the_current_value_first(memory: Memory) -> None:
    old = memory.remember(LISBON, user_id="lena")
    new = memory.remember(UTRECHT, user_id="lena", supersedes=old.id)
    present = memory.recall("I live in a flat in Lisbon", user_id="lena", now=NOW)
    ids = [h.memory.id for h in present.hits]
    assert ids.index(new.id) < ids.index(old.id)
    by_id = {h.memory.id: h for h in present.hits}
    assert by_id[old.id].memory.superseded_by == new.id
    left_out = memory.recall("I live in Lisbon", user_id="lena", include_superseded=False)
    assert old.id not in [h.memory.id for h in left_out.hits]
    past = memory.recall("Where did I live before?", user_id="lena", now=NOW)
    assert past.query.asks_past
    assert old.id in [h.memory.id for h in past.hits]


def test_a_question_about_the_past_finds_what_a_candidate_replaced_just_above_it(
    memory: Memory,
) -> None:
    old = memory.remember("I'm an ICU nurse at Northgate General Hospital.", user_id="amara")
    new = memory.remember(
        "New job at St Brigid's Hospital in Salford starts Monday.",
        user_id="amara",
        supersedes=old.id,
    )
    memory.remember("St Brigid's uses MedChart 8 for patient records.", user_id="amara")
    memory.remember("Outreach covers the St Brigid's main site.", user_id="amara")
    past = memory.recall("Where did I work before St Brigid's?", user_id="amara", now=NOW)
    ids = [h.memory.id for h in past.hits]
    assert ids.index(old.id) == ids.index(new.id) - 1


def test_a_new_value_said_later_supersedes_the_old_one_by_itself(memory: Memory) -> None:
    old = memory.remember(LISBON, user_id="lena")
    new = memory.remember(UTRECHT, user_id="lena")
    other = memory.remember(UTRECHT, user_id="omar")  # another user's scope: untouched
    assert memory.get(old.id).superseded_by == new.id
    assert memory.get(new.id).superseded_by is None
    assert memory.get(other.id).superseded_by is None
    present = memory.recall("Which city do I live in?", user_id="lena", now=NOW)
    assert present.hits[0].memory.id == new.id


def test_include_superseded_must_be_a_bool(memory: Memory) -> None:
    with pytest.raises(InvalidInput, match="include_superseded"):
        memory.recall("x", include_superseded="no")  # type: ignore[arg-type]


def test_a_chat_comes_in_as_turns_of_one_session(memory: Memory) -> None:
    chat = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "name": "Lena", "content": "I moved to Utrecht"},
        {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "t1"}]},  # no text
    ]
    records = memory.remember_messages(chat, user_id="lena", at="2026-02-01T10:00:00+00:00")
    assert [(r.content, r.speaker) for r in records] == [
        ("be brief", "system"),
        ("I moved to Utrecht", "Lena"),
        ("Noted.", "assistant"),
    ]
    assert len({r.session_id for r in records}) == 1
    assert all(r.created_at == datetime(2026, 2, 1, 10, tzinfo=UTC) for r in records)
    again = memory.remember_messages(chat[:2], session_id="s2", user_id="lena")
    assert {r.session_id for r in again} == {"s2"}


@pytest.mark.parametrize(
    ("bad", "index"),
    [
        ([{"role": "user", "content": "ok"}, {"content": "no role"}], 1),
        ([{"role": "user", "content": 5}], 0),
        ([{"role": "user", "content": "a"}, {"role": "user", "content": [{"text": "x"}]}], 1),
        ([{"role": "user", "content": "a"}, {"role": "user", "name": "", "content": "b"}], 1),
    ],
)
def test_a_malformed_message_names_its_index_and_nothing_is_written(
    memory: Memory, bad: list[dict[str, object]], index: int
) -> None:
    with pytest.raises(InvalidInput, match=f"message {index}"):
        memory.remember_messages(bad)
    assert memory.stats().memories == 0


def test_forget_scope_removes_a_users_every_trace_and_nothing_of_another(
    memory: Memory,
) -> None:
    memory.remember("Lena's badge is 40417", user_id="lena")
    memory.remember_messages([{"role": "user", "content": "hello Omar"}], user_id="lena")
    memory.relate("Lena Hoffmann", "works_at", "Harbor Labs", user_id="lena")
    kept = memory.remember("Omar's badge is 51832", user_id="omar")
    result = memory.recall("badge", user_id="lena")
    memory.feedback(result.recall_id, used=[result.hits[0].memory.id])
    assert memory.forget_scope("default", user_id="lena") == 3  # the note, the turn, the fact
    assert [r.id for r in memory.browse(user_id="lena")] == []
    assert [r.id for r in memory.browse()] == [kept.id]
    assert memory.stats().edges == 0
    assert {e.name for e in memory.store.reads.catalog("default")} <= {"Omar"}
    assert memory.store.models.feedback("default") == []
    assert memory.forget_scope("default", user_id="lena") == 0


def test_forget_scope_of_a_session_keeps_the_rest(memory: Memory) -> None:
    memory.remember_messages([{"role": "user", "content": "one"}], session_id="s1")
    memory.remember_messages([{"role": "user", "content": "two"}], session_id="s2")
    assert memory.forget_scope("default", session_id="s1") == 1
    assert [r.content for r in memory.browse()] == ["two"]


def test_an_alias_that_is_another_entitys_name_folds_the_two_into_one(memory: Memory) -> None:
    a = memory.remember("Priya Patel leads Kestrel", entities=["Priya Patel", "Kestrel"])
    b = memory.remember("Priya reviewed the Kestrel budget", entities=["Priya", "Kestrel"])
    c = memory.remember("Priya and Omar pair on Atlas", entities=["Priya", "Omar", "Atlas"])
    before = {e.name for e in memory.store.reads.catalog("default") if not e.is_alias}
    assert {"Priya Patel", "Priya"} <= before
    entity = memory.alias("Priya Patel", "Priya")
    assert entity.name == "Priya Patel"
    assert "Priya" in entity.aliases
    names = {e.name for e in memory.store.reads.catalog("default") if not e.is_alias}
    assert "Priya" not in names
    for record in (a, b, c):
        assert "Priya Patel" in memory.get(record.id).entities
    # The co-mention edges of both met: Priya Patel and Kestrel are named together twice.
    found = memory.recall("Priya Patel", k=10)
    assert {a.id, b.id, c.id} <= {h.memory.id for h in found.hits}
    assert memory.remember("Priya called", entities=["Priya"]).entities == ("Priya Patel",)


def test_merge_entities_names_both_or_fails_and_keeps_the_store(memory: Memory) -> None:
    memory.remember("Sam and Samuel Okafor", entities=["Sam", "Samuel Okafor"])
    with pytest.raises(NotFound, match="Nobody"):
        memory.merge_entities("Samuel Okafor", "Nobody")
    merged = memory.merge_entities("Samuel Okafor", "Sam")
    assert (merged.name, merged.aliases) == ("Samuel Okafor", ("Sam",))
    assert memory.stats().entities == 1
    assert memory.stats().edges == 0  # their co-mention was a self-edge after the fold
