"""A batch is written in a statement per table, with its session context worked out in memory:
whatever the batch boundaries, the store ends up holding exactly the same rows."""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

import fivefold
from fivefold.read.retrieve.lexical import DEFAULT_WEIGHTS
from fivefold.types import Scope

PEOPLE = ["Priya Patel", "priya  patel", "Marco", "Dana Lee", "Ørjan", "Acme Corp", "Zed"]
WORDS = "budget launch painting lake support group kitchen deadline migration invoice".split()
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

TABLES = {
    "memories": "SELECT id, namespace, user_id, agent_id, session_id, content, predicate, type, "
    "event_at, created_at, importance, speaker, context_near, context_far FROM memories",
    "entities": "SELECT id, namespace, name, norm, mentions, created_at FROM entities",
    "mentions": "SELECT entity_id, memory_id, joined FROM mentions",
    "edges": "SELECT namespace, user_id, agent_id, source_id, target_id, relation, kind, support, "
    "created_at FROM edges",
    "sessions": "SELECT namespace, user_id, agent_id, session_id, started_at, last_seen_at "
    "FROM sessions",
    "namespaces": "SELECT namespace, memories FROM namespaces",
}
VECTORS = {
    "sqlite": "SELECT memory_id, embedding, context FROM vectors",
    "postgres": "SELECT id, embedding::text, searched::text FROM memories",
}


def _items(seed: int, n: int) -> list[dict[str, Any]]:
    """Turns of a few sessions in two namespaces and two users, interleaved, some naming
    entities (two spellings of one person among them), some with none."""
    rng = random.Random(seed)
    items = []
    for i in range(n):
        item: dict[str, Any] = {
            "content": f"turn {i}: " + " ".join(rng.choices(WORDS, k=rng.randint(2, 8))),
            "namespace": rng.choice(["a", "a", "b"]),
            # Not in write order: a co-mention edge dates from the first memory written.
            "created_at": (T0 + timedelta(minutes=rng.randint(0, 10_000))).isoformat(),
            "type": rng.choice(["fact", "event", "preference"]),
        }
        if rng.random() < 0.8:
            item["session_id"] = f"s{rng.randint(1, 4)}"
        if rng.random() < 0.5:
            item["user_id"] = "u1"
        if rng.random() < 0.7:
            item["entities"] = rng.sample(PEOPLE, rng.randint(1, 4))
        if item["type"] == "event":
            item["event_at"] = (T0 + timedelta(days=i % 9)).isoformat()
        items.append(item)
    return items


def _dump(mem: fivefold.Memory) -> dict[str, list[tuple[Any, ...]]]:
    pool = getattr(mem.store._core, "pool", None)
    queries = {**TABLES, "vectors": VECTORS["postgres" if pool else "sqlite"]}
    out: dict[str, list[tuple[Any, ...]]] = {}
    if pool is not None:
        with pool.connection() as conn:
            for name, sql in queries.items():
                out[name] = sorted(tuple(r) for r in conn.execute(sql).fetchall())
        return out
    conn: sqlite3.Connection = mem.store._core.conn  # type: ignore[attr-defined]
    for name, sql in queries.items():
        out[name] = sorted(tuple(r) for r in conn.execute(sql).fetchall())
    return out


def _write(
    url: str, items: Sequence[dict[str, Any]], cuts: Sequence[int]
) -> dict[str, list[tuple[Any, ...]]]:
    with fivefold.Memory.open(url, embedder=fivefold.HashingEmbedder()) as mem:
        mem.alias("Dana Lee", "DL", namespace="a")  # an alias wins over a new entity
        start = 0
        for end in [*cuts, len(items)]:
            if end > start:
                mem.remember_many(items[start:end])
            start = end
        return _dump(mem)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_batch_boundaries_do_not_change_what_is_stored(
    new_store: Callable[[], str], seed: int
) -> None:
    items = _items(seed, 60)
    for item in items[::7]:
        item.setdefault("entities", []).append("DL")
    whole = _write(new_store(), items, [])
    one_by_one = _write(new_store(), items, list(range(1, len(items))))
    rng = random.Random(seed)
    chunks = _write(new_store(), items, sorted(rng.sample(range(1, len(items)), 6)))
    assert whole["memories"]
    assert whole["edges"]
    assert whole["mentions"]
    assert any(row[12] for row in whole["memories"])  # session context was written
    for dump in (whole, one_by_one, chunks):  # the alias's entity dates from alias()
        dump["entities"] = [r[:5] if r[2] == "Dana Lee" else r for r in dump["entities"]]
    for name in whole:
        assert whole[name] == one_by_one[name], name
        assert whole[name] == chunks[name], name


def test_ids_are_never_reused_after_forgetting_the_newest(store_url: str) -> None:
    with fivefold.Memory.open(store_url, embedder=fivefold.HashingEmbedder()) as mem:
        first, newest = mem.remember_many([{"content": "one"}, {"content": "two"}])
        mem.forget(newest.id)
        again = mem.remember_many([{"content": "three"}, {"content": "four"}])
        assert [r.id for r in again] == [newest.id + 1, newest.id + 2]
        assert {h.memory.content for h in mem.recall("one two three four", k=10).hits} == {
            "one",
            "three",
            "four",
        }
        assert first.id < newest.id


def test_a_batch_written_under_given_ids(store_url: str) -> None:
    """A copy keeps its source's ids (``fivefold migrate``): given ids ascend, none below the
    store's next, and the store's own ids go on above them; a refused batch writes nothing."""
    from fivefold.store.records import NewMemory
    from fivefold.types import MemoryType, Scope

    def new(text: str, session: str | None = None) -> NewMemory:
        return NewMemory(
            content=text,
            type=MemoryType.FACT,
            predicate=None,
            event_at=None,
            created_at=datetime.now(UTC),
            entities=(),
            importance=0.5,
            scope=Scope("default"),
            session_id=session,
        )

    with fivefold.Memory.open(store_url, embedder=fivefold.HashingEmbedder()) as mem:
        vectors = mem.embedder.embed(["a", "b", "c"])
        first = mem.remember("the store's own first")
        made = mem.store.writes.insert_memories(
            [new("Priya leads Kestrel", "s"), new("Kestrel ships in May", "s")],
            vectors[:2],
            ids=[first.id + 10, first.id + 25],
        )
        assert [r.id for r in made] == [first.id + 10, first.id + 25]
        assert mem.get(first.id + 25).content == "Kestrel ships in May"
        assert mem.recall("when does Kestrel ship?").hits[0].memory.id == first.id + 25
        for ids in ([first.id + 40, first.id + 30], [first.id + 20, first.id + 50], [1, 2]):
            with pytest.raises(fivefold.InvalidInput, match=r"ascend|below"):
                mem.store.writes.insert_memories([new("x"), new("y")], vectors[:2], ids=ids)
        assert mem.stats().memories == 3
        assert mem.remember("the store's own again").id == first.id + 26


def test_a_batch_is_found_by_every_leg_as_written(store_url: str) -> None:
    """Context written with the row (not after it): the lexical leg finds a turn, and the two
    before it, by the new turn's word."""
    with fivefold.Memory.open(store_url, embedder=fivefold.HashingEmbedder()) as mem:
        before = mem.remember("Caroline: I went to the support group.", session_id="s")
        batch = mem.remember_many(
            [
                {"content": "Melanie: How did it go?", "session_id": "s"},
                {"content": "Caroline: Wonderful, zebras everywhere.", "session_id": "s"},
            ]
        )
        scope = Scope("default")
        hits = [
            i
            for i, _ in mem.store.search.lexical_search(
                scope, ["zebras"], 10, weights=DEFAULT_WEIGHTS
            )
        ]
        assert hits[0] == batch[1].id
        assert set(hits) == {before.id, batch[0].id, batch[1].id}


@pytest.mark.slow
def test_a_writer_racing_into_the_same_session_waits_for_the_batch(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Postgres: batch A takes its session's lock and its ids; B, writing turns of the same
    session meanwhile, waits for A to commit, then takes ids after A's and finds A's turns:
    every context is as if they had written one after the other."""
    from fivefold.store.postgres.writer import Writer

    with (
        fivefold.Memory.open(pg_url, embedder=fivefold.HashingEmbedder()) as a,
        fivefold.Memory.open(pg_url, embedder=fivefold.HashingEmbedder()) as b,
    ):
        *_, last = a.remember_many([{"content": f"old {i}", "session_id": "s"} for i in range(3)])
        old = last.id
        newest = Writer._newest
        written: list[Any] = []
        other = threading.Thread(
            target=lambda: written.extend(
                b.remember_many([{"content": c, "session_id": "s"} for c in ("B1", "B2")])
            )
        )

        def racing(conn: Any, wanted: Any, limit: int, types: Any) -> Any:
            if not other.is_alive() and not written:
                other.start()
                time.sleep(0.5)  # time enough for B to write, were it not waiting
                assert not written
            return newest(conn, wanted, limit, types)

        monkeypatch.setattr(Writer, "_newest", staticmethod(racing))
        first, second = a.remember_many(
            [{"content": "A1", "session_id": "s"}, {"content": "A2", "session_id": "s"}]
        )
        monkeypatch.setattr(Writer, "_newest", staticmethod(newest))
        other.join(timeout=30)
        assert [r.content for r in written] == ["B1", "B2"]
        assert written[0].id > second.id
        with a.store._core.pool.connection() as conn:  # type: ignore[attr-defined]
            rows = {
                int(i): (str(n), str(f))
                for i, n, f in conn.execute(
                    "SELECT id, context_near, context_far FROM memories WHERE id = ANY(%s)",
                    ([old, first.id, second.id],),
                )
            }
        assert rows[old] == ("old 1\nA1", "old 0\nA2")
        assert rows[first.id] == ("old 2\nA2", "old 1\nB1")
        assert rows[second.id] == ("A1\nB1", "old 2\nB2")


def test_the_records_a_write_returns_are_the_ones_read_back(store_url: str) -> None:
    """``remember_many`` builds its records from what it wrote (nothing is read after the
    commit): they must equal what ``get`` reads, field by field, whatever the entities'
    spellings (an existing entity's name, an alias, two spellings of one), metadata, times
    and scopes."""
    with fivefold.Memory.open(store_url, embedder=fivefold.HashingEmbedder(dim=16)) as mem:
        mem.remember("Priya Patel leads Kestrel", entities=["Priya Patel", "Kestrel"])
        mem.alias("Kestrel", "KST")
        mem.remember("Dana Lee", namespace="other", entities=["DANA lee"])
        rng = random.Random(5)
        items: list[dict[str, Any]] = []
        for n in range(60):
            item: dict[str, Any] = {
                "content": f"note {n} about {rng.choice(WORDS)} and {rng.choice(WORDS)}",
                "namespace": rng.choice(["default", "other"]),
                "entities": rng.sample([*PEOPLE, "KST", "kestrel", "dana LEE"], rng.randint(0, 4)),
                "importance": -0.0 if n == 1 else rng.random(),  # SQLite reads -0.0 as 0.0
                "metadata": {"n": n, "x": [1, 2.5, {"b": None}], "ü": "ß", "f": rng.random()},
            }
            if n % 3 == 0:
                offset = timezone(timedelta(hours=rng.randint(-11, 12), minutes=30))
                item["event_at"] = datetime(2025, 3, 1, 8, 0, 0, rng.randrange(10**6), offset)
            if n % 4 == 0:
                item |= {"user_id": f"u{n % 2}", "session_id": f"s{n % 3}", "speaker": "Priya"}
            if n % 5 == 0:
                item |= {"agent_id": "bot", "type": "preference", "predicate": "likes"}
            items.append(item)
        written = mem.remember_many(items)
        assert len(written) == len(items)
        for record in written:
            assert mem.get(record.id, namespace=record.namespace) == record
        priya = [r for r in written if "Priya Patel" in r.entities]
        assert priya  # the entity the first memory created, by its stored spelling
        assert all("priya  patel" not in r.entities for r in written)
        named = [r for r, i in zip(written, items, strict=True) if "KST" in i["entities"]]
        assert all("Kestrel" in r.entities for r in named if r.namespace == "default")


def test_an_alias_cannot_name_two_entities(new_store: Callable[[], str]) -> None:
    """Accepted, an alias that is another entity's name linked writes naming it to one entity
    while queries naming it resolved to the other."""
    with fivefold.Memory.open(new_store(), embedder=fivefold.HashingEmbedder()) as mem:
        mem.remember("Bob Jones moved", entities=["Bob Jones"])
        mem.alias("Ann Smith", "AS")
        with pytest.raises(fivefold.InvalidInput, match="already names the entity 'Ann Smith'"):
            mem.alias("Bob Jones", "as")  # another entity's alias
        assert mem.alias("Ann Smith", "AS").aliases == ("AS",)  # again: the same entity
        assert mem.alias("AS", "ann smith").name == "Ann Smith"  # its own name
        record = mem.remember("Bob Jones moved to Bergen", entities=["Bob Jones"])
        assert list(record.entities) == ["Bob Jones"]
        assert list(mem.remember("AS called", entities=["AS"]).entities) == ["Ann Smith"]


def test_a_relation_joins_two_entities(new_store: Callable[[], str]) -> None:
    """Two names of one entity (its spellings, an alias) made a self-edge: refused, and the memory
    that would record it is not kept."""
    with fivefold.Memory.open(new_store(), embedder=fivefold.HashingEmbedder()) as mem:
        mem.alias("Priya Sharma", "PS")
        for target in ("PRIYA sharma!", "PS"):
            with pytest.raises(fivefold.InvalidInput, match="name one entity"):
                mem.relate("Priya Sharma", "knows", target)
        assert mem.stats().memories == 0
        assert mem.relate("Priya Sharma", "knows", "Dana Lee").target == "Dana Lee"


def test_forgetting_a_sessions_memories_takes_its_span_with_them(
    new_store: Callable[[], str],
) -> None:
    """A session's row kept the times of memories forgotten (its last one's too), and "since
    we last talked" counted from them."""
    times = [T0 + timedelta(hours=h) for h in (0, 1, 5)]
    with fivefold.Memory.open(new_store(), embedder=fivefold.HashingEmbedder()) as mem:
        made = mem.remember_many(
            [
                {"content": "first turn", "session_id": "s1", "created_at": times[0].isoformat()},
                {"content": "second turn", "session_id": "s1", "created_at": times[1].isoformat()},
                {"content": "another day", "session_id": "s2", "created_at": times[2].isoformat()},
            ]
        )
        store = mem.store
        assert store.reads.last_session_end(Scope(), None) == times[2]
        mem.forget(made[2].id)  # s2's only memory: the session goes
        assert store.reads.last_session_end(Scope(), None) == times[1]
        mem.forget(made[1].id)  # s1's newest: its span ends at the one left
        assert store.reads.last_session_end(Scope(), None) == times[0]
        assert store.reads.last_session_end(Scope(), "s1") is None
