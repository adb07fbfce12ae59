"""The Postgres backend's packed posting lists (``store/postgres/packed.py``): whatever writes,
rewrites, forgets and compactions they went through, from however many writers at once, they
hold exactly the postings the memories' rows make (a namespace indexed again from its rows
scores the same), and the chunks small writes split are merged back."""

from __future__ import annotations

import random
import threading
from typing import Any

import numpy as np
import psycopg
import pytest

import fivefold
from fivefold import Memory
from fivefold.config import Config, OptimizerConfig
from fivefold.read.retrieve.lexical import DEFAULT_WEIGHTS, OWN_TEXT_WEIGHTS
from fivefold.store.postgres import admin as pg_admin
from fivefold.store.postgres import packed, schema
from fivefold.types import ColumnWeights, MemoryType, OptimizerMode, Scope

BALANCED = Config(optimizer=OptimizerConfig(mode=OptimizerMode.OFF))
# A Zipfian vocabulary: a few tokens in most memories, most in a few.
VOCAB = [f"w{i}" for i in range(80)]
ZIPF = [1.0 / (rank + 1) for rank in range(len(VOCAB))]
WINDOW_ONLY = ColumnWeights(predicate=0.0, content=0.0, context=1.0)
TYPES = ["fact", "event", "preference"]


def _open(url: str) -> Memory:
    return Memory.open(url, embedder=fivefold.HashingEmbedder(dim=32), config=BALANCED)


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(VOCAB, weights=ZIPF, k=rng.randint(2, 10)))


def _item(rng: random.Random, namespace: str = "default") -> dict[str, Any]:
    item: dict[str, Any] = {"content": _text(rng), "type": rng.choice(TYPES)}
    item["namespace"] = namespace
    item["user_id"] = rng.choice(["ana", "bo"])
    if rng.random() < 0.8:
        item["session_id"] = f"s{rng.randrange(6)}"
    if rng.random() < 0.3:
        item["predicate"] = rng.choice(VOCAB[:12])
    return item


def _searches(memory: Memory, namespace: str = "default") -> list[object]:
    """Every kind of lexical search: the weights, a type, an id list, a user's scope."""
    store = memory.store
    found: list[object] = []
    ids = sorted(store.reads.recent_ids(Scope(namespace), limit=10_000))
    for terms in (["w0", "w3", "w17"], ["w1", "w2", "w40", "w41"], ["w5"]):
        for weights in (DEFAULT_WEIGHTS, OWN_TEXT_WEIGHTS, WINDOW_ONLY):
            found.append(store.search.lexical_search(Scope(namespace), terms, 15, weights=weights))
        found.append(
            store.search.lexical_search(
                Scope(namespace), terms, 15, [MemoryType.EVENT], weights=DEFAULT_WEIGHTS
            )
        )
        found.append(
            store.search.lexical_search(
                Scope(namespace), terms, 15, within=ids[::3], weights=WINDOW_ONLY
            )
        )
        found.append(
            store.search.lexical_search(
                Scope(namespace, user_id="ana"), terms, 15, weights=DEFAULT_WEIGHTS
            )
        )
    return found


def _indexed_again(memory: Memory, namespace: str = "default") -> None:
    """The namespace's lists and statistics made again from its rows alone."""
    memory.store.admin._reindex(namespace)  # type: ignore[attr-defined]


def _part_rows(url: str) -> tuple[int, int]:
    """The store's part rows, and the most parts a list has in one chunk."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT sum(n), max(n) FROM (SELECT count(*) AS n FROM postings "
            f"GROUP BY namespace, field, term, part >> {schema.CHUNK_BITS}) AS c"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


@pytest.mark.slow
def test_lists_after_writes_rewrites_and_forgets_are_the_rows_lists(pg_url: str) -> None:
    rng = random.Random(5)
    with _open(pg_url) as memory:
        live: list[int] = []
        for round_ in range(12):
            size = rng.choice([1, 1, 3, 40])
            live += [r.id for r in memory.remember_many([_item(rng) for _ in range(size)])]
            if round_ % 3 == 2:  # a forget rewrites its session neighbours' windows
                for memory_id in rng.sample(live, 3):
                    memory.forget(memory_id)
                    live.remove(memory_id)
        assert all(f.ok for f in memory.store.admin.check())
        before = _searches(memory)
        assert sum(len(hits) for hits in before) > 100  # type: ignore[arg-type]
        _indexed_again(memory)
        assert _searches(memory) == before


@pytest.mark.slow
def test_two_writers_of_one_namespace_merging_the_same_lists_lose_nothing(pg_url: str) -> None:
    """Writers of different sessions rewrite windows with the same common terms, in the same
    chunks: a merge waits for the other's on the terms' rows and reads what it wrote."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(3)
    with _open(pg_url) as memory, _open(pg_url) as other:

        def write(store: Memory, seed: int) -> None:
            rng = random.Random(seed)
            try:
                barrier.wait()
                for _ in range(15):
                    items = [_item(rng) for _ in range(rng.choice([1, 2, 5]))]
                    for item in items:
                        item["session_id"] = f"own{seed}-{rng.randrange(3)}"
                    records = store.remember_many(items)
                    if rng.random() < 0.2:
                        store.forget(records[0].id)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [
            threading.Thread(target=write, args=(store, seed))
            for store, seed in ((memory, 1), (other, 2), (memory, 3))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not errors
        assert all(f.ok for f in memory.store.admin.check())
        before = _searches(memory)
        _indexed_again(memory)
        assert _searches(memory) == before


@pytest.mark.slow
def test_small_writes_split_chunks_that_compact_merges(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(8)
    with _open(pg_url) as memory:
        for _ in range(60):  # one part per list a write is in
            memory.remember(**_item(rng))
        before = _searches(memory)
        split, most = _part_rows(pg_url)
        assert most > pg_admin.COMPACT_PARTS
        merged = memory.store.admin.compact()
        assert merged > 0
        rows, most = _part_rows(pg_url)
        assert rows <= split - merged  # each chunk merged was two parts or more
        assert most <= pg_admin.COMPACT_PARTS
        assert memory.store.admin.compact() == 0  # nothing left to merge
        assert _searches(memory) == before
        assert all(f.ok for f in memory.store.admin.check())


@pytest.mark.slow
def test_a_namespace_crossing_a_growth_step_has_its_lists_compacted(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(schema, "ANALYZE_FROM", 32)
    rng = random.Random(9)
    with _open(pg_url) as memory:
        for _ in range(31):
            memory.remember(**_item(rng))
        assert _part_rows(pg_url)[1] > pg_admin.COMPACT_PARTS
        memory.remember(**_item(rng))  # the 32nd: a power of two from ANALYZE_FROM
    assert _part_rows(pg_url)[1] <= pg_admin.COMPACT_PARTS  # closing waited for the upkeep


@pytest.mark.slow
def test_a_compaction_stops_when_told_and_a_writer_beside_it_loses_nothing(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_admin, "COMPACT_BATCH", 5)
    rng = random.Random(10)
    with _open(pg_url) as memory:
        for _ in range(40):
            memory.remember(**_item(rng))
        store = memory.store
        calls = {"n": 0}

        def stop() -> bool:
            calls["n"] += 1
            return calls["n"] > 2

        assert store.admin.compact_namespace("default", stop) == 10  # type: ignore[attr-defined]
        done = threading.Event()

        def writes() -> None:
            while not done.is_set():
                memory.remember(**_item(rng))

        writer = threading.Thread(target=writes)
        writer.start()
        try:
            store.admin.compact()
        finally:
            done.set()
            writer.join(60)
        assert all(f.ok for f in store.admin.check())
        before = _searches(memory)
        _indexed_again(memory)
        assert _searches(memory) == before


@pytest.mark.slow
def test_the_check_finds_a_posting_of_no_memory_and_a_posting_twice(pg_url: str) -> None:
    with _open(pg_url) as memory:
        made = memory.remember("the kestrel budget review")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        ctid, field, value = conn.execute(
            "SELECT ctid::text, field, packed FROM postings WHERE field = 0 LIMIT 1"
        ).fetchone()  # type: ignore[misc]
        postings = packed.decode(field, value)
        ghost = postings.copy()
        ghost["id"] = made.id + 1_000
        conn.execute(
            "UPDATE postings SET packed = %s WHERE ctid = %s::tid",
            (np.concatenate([postings, postings, ghost]).tobytes(), ctid),
        )
    with _open(pg_url) as memory:
        (found,) = [f for f in memory.store.admin.check() if f.part.startswith("lexical")]
        assert not found.ok
        assert "2 postings of no memory, or twice in a list" in found.detail
        (fixed,) = [
            f for f in memory.store.admin.check(repair=True) if f.part.startswith("lexical")
        ]
        assert fixed.repaired
        assert all(f.ok for f in memory.store.admin.check())


def test_parts_pack_each_term_and_chunk_once_in_id_order() -> None:
    from collections import Counter

    from fivefold.store.shared.tokens import Counted

    low = packed.CHUNK - 2
    entries = [
        (low + 3, Counted(Counter(a=1), Counter(b=2)), 0),
        (low, Counted(Counter(), Counter(a=1, b=1)), 2),
        (low + 1, Counted(Counter(a=4), Counter()), 1),
    ]
    rows = sorted(packed.parts(schema.OWN, entries), key=lambda row: (row[0], row[1]))
    assert [(term, part, p["id"].tolist()) for term, part, p in rows] == [
        ("a", low, [low, low + 1]),
        ("a", low + 3, [low + 3]),  # the next chunk
        ("b", low, [low]),
        ("b", low + 3, [low + 3]),
    ]
    first = {t: p for t, part, p in rows if part == low}
    assert first["a"]["first"].tolist() == [0.0, 4.0]
    assert first["a"]["second"].tolist() == [1.0, 0.0]
    assert first["a"]["type"].tolist() == [2, 1]


@pytest.mark.slow
def test_a_repair_makes_a_lost_namespace_row_again(pg_url: str) -> None:
    """The repair makes the namespace's lists and statistics from its rows: its row in
    ``namespaces`` too, when that was lost (it was then made with 0 memories)."""
    rng = random.Random(12)
    with _open(pg_url) as memory:
        memory.remember_many([_item(rng, "dx") for _ in range(5)])
        before = _searches(memory, "dx")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM namespaces WHERE namespace = 'dx'")
    with _open(pg_url) as memory:
        assert not all(f.ok for f in memory.store.admin.check())
        assert all(f.ok for f in memory.store.admin.check(repair=True))
        assert all(f.ok for f in memory.store.admin.check())
        assert memory.stats(namespace="dx").memories == 5
        assert _searches(memory, "dx") == before
