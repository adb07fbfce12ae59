"""Session context: neighbours' text and vectors, kept within one scope and session."""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fivefold
from fivefold.config import Config, ContextConfig, IndexConfig
from fivefold.read.retrieve.lexical import DEFAULT_WEIGHTS as W
from fivefold.read.retrieve.lexical import OWN_TEXT_WEIGHTS as OWN
from fivefold.store.scoring import EntityScore, mentions
from fivefold.store.sqlite import schema
from fivefold.types import MemoryType, Scope

# The FTS5 tokenizer of the schemas these tests build (before combining marks were word
# characters).
OLD_TOKENIZE = "porter unicode61 remove_diacritics 2"

TURNS = [
    "Caroline: I went to the support group yesterday.",
    "Melanie: How did it go?",
    "Caroline: Wonderful, everyone was kind.",
    "Melanie: Yes! Last Friday I painted a lake.",
    "Caroline: Show me the painting sometime.",
]


def _context(mem: fivefold.Memory, memory_id: int) -> tuple[str, str]:
    """The stored context columns, read from the backend's own rows."""
    sql = "SELECT context_near, context_far FROM memories WHERE id = {}"
    pool = getattr(mem.store._core, "pool", None)
    if pool is not None:  # Postgres
        with pool.connection() as conn:
            row = conn.execute(sql.format("%s"), (memory_id,)).fetchone()
    else:
        conn: sqlite3.Connection = mem.store._core.conn  # type: ignore[attr-defined]
        row = conn.execute(sql.format("?"), (memory_id,)).fetchone()
    return str(row[0]), str(row[1])


def _lexical(mem: fivefold.Memory, scope: Scope, word: str, *, context: bool = True) -> list[int]:
    return [
        i
        for i, _ in mem.store.search.lexical_search(
            scope, [word], 50, weights=W if context else OWN
        )
    ]


def test_neighbours_at_distance_one_and_two(hashing_mem: fivefold.Memory) -> None:
    ids = [
        r.id for r in hashing_mem.remember_many([{"content": t, "session_id": "s1"} for t in TURNS])
    ]
    near, far = _context(hashing_mem, ids[2])
    assert near.splitlines() == [TURNS[1], TURNS[3]]
    assert far.splitlines() == [TURNS[0], TURNS[4]]
    assert _context(hashing_mem, ids[0]) == (TURNS[1], TURNS[2])
    # The content itself never changes.
    assert hashing_mem.get(ids[2]).content == TURNS[2]


def test_one_at_a_time_equals_a_batch(hashing_mem: fivefold.Memory) -> None:
    batch = [
        r.id for r in hashing_mem.remember_many([{"content": t, "session_id": "a"} for t in TURNS])
    ]
    single = [hashing_mem.remember(t, session_id="b").id for t in TURNS]
    assert [_context(hashing_mem, i) for i in batch] == [_context(hashing_mem, i) for i in single]


def test_a_turn_is_found_through_its_neighbour(hashing_mem: fivefold.Memory) -> None:
    ids = [
        r.id for r in hashing_mem.remember_many([{"content": t, "session_id": "s"} for t in TURNS])
    ]
    found = _lexical(hashing_mem, Scope(), "sometime")
    assert found[0] == ids[4]  # its own text first: the context column weighs less
    assert set(found) == {ids[2], ids[3], ids[4]}
    assert _lexical(hashing_mem, Scope(), "sometime", context=False) == [ids[4]]


def test_memories_without_a_session_have_no_context(hashing_mem: fivefold.Memory) -> None:
    ids = [r.id for r in hashing_mem.remember_many([{"content": t} for t in TURNS])]
    assert all(_context(hashing_mem, i) == ("", "") for i in ids)


def test_forget_removes_the_text_from_its_neighbours(hashing_mem: fivefold.Memory) -> None:
    ids = [
        r.id for r in hashing_mem.remember_many([{"content": t, "session_id": "s"} for t in TURNS])
    ]
    hashing_mem.forget(ids[4])
    assert _lexical(hashing_mem, Scope(), "sometime") == []
    assert _context(hashing_mem, ids[3]) == (TURNS[2], TURNS[1])


def test_smoothed_vectors_are_searched_and_own_vectors_kept(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    with fivefold.Memory.open(path, embedder=fivefold.HashingEmbedder()) as mem:
        ids = [r.id for r in mem.remember_many([{"content": t, "session_id": "s"} for t in TURNS])]
        conn: sqlite3.Connection = mem.store._core.conn  # type: ignore[attr-defined]
        own, searched = conn.execute(
            "SELECT embedding, context FROM vectors WHERE memory_id = ?", (ids[2],)
        ).fetchone()
        vectors = {
            i: np.frombuffer(b, np.float32)
            for i, b in conn.execute("SELECT memory_id, embedding FROM vectors")
        }
        expected = vectors[ids[2]] + 0.25 * (
            vectors[ids[1]] + vectors[ids[3]] + vectors[ids[0]] + vectors[ids[4]]
        )
        expected /= np.linalg.norm(expected)
        assert np.allclose(np.frombuffer(searched, np.float32), expected, atol=1e-6)
        assert np.allclose(
            np.frombuffer(own, np.float32), mem.store.search.vectors("default", [ids[2]])[ids[2]]
        )
        hit = mem.store.search.vector_search(Scope(), expected[None, :], 1)[0][0]
        assert hit[0] == ids[2]
        assert hit[1] > 0.999
    # Other smoothing weights re-smooth the store when it is opened.
    config = Config(context=ContextConfig(vector_near=0.0, vector_far=0.0))
    with fivefold.Memory.open(path, embedder=fivefold.HashingEmbedder(), config=config) as mem:
        conn = mem.store._core.conn  # type: ignore[attr-defined]
        assert (
            conn.execute("SELECT count(*) FROM vectors WHERE context IS NOT NULL").fetchone()[0]
            == 0
        )


_scopes = st.tuples(
    st.sampled_from(["n1", "n2"]),
    st.sampled_from([None, "u1", "u2"]),
    st.sampled_from([None, "a1"]),
    st.sampled_from([None, "s1", "s2"]),
)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(writes=st.lists(st.lists(_scopes, min_size=1, max_size=4), min_size=1, max_size=6))
def test_context_never_crosses_a_scope_or_session(
    writes: list[list[tuple[str, str | None, str | None, str | None]]],
) -> None:
    """Batches of memories in random scopes and sessions, each with a word of its own: a
    memory is found through a word only if it holds the word or sits within two places of
    the memory that does, in the same namespace, user, agent and session."""
    with fivefold.Memory.open(":memory:", embedder=fivefold.HashingEmbedder()) as mem:
        where: dict[int, tuple[str, str | None, str | None, str | None]] = {}
        word: dict[int, str] = {}
        serial = 0
        for batch in writes:
            items = []
            for namespace, user, agent, session in batch:
                serial += 1
                items.append(
                    {
                        "content": f"memory zq{serial}x",
                        "namespace": namespace,
                        "user_id": user,
                        "agent_id": agent,
                        "session_id": session,
                    }
                )
            for record, key in zip(mem.remember_many(items), batch, strict=True):
                where[record.id] = key
                word[record.id] = record.content.split()[1]
        scopes = {
            Scope(k[0], u, a) for k in where.values() for u in (None, k[1]) for a in (None, k[2])
        }
        for scope in scopes:
            for memory_id, key in where.items():
                for other in _lexical(mem, scope, word[memory_id]):
                    found = where[other]
                    assert found[0] == scope.namespace
                    assert scope.user_id in (None, found[1] or None)
                    assert scope.agent_id in (None, found[2] or None)
                    if other == memory_id:
                        continue
                    # Found through context: the same scope and session, two places at most.
                    assert key[3] is not None
                    assert found == key
                    peers = sorted(i for i, k in where.items() if k == key)
                    assert abs(peers.index(other) - peers.index(memory_id)) <= 2


def as_schema_7(conn: sqlite3.Connection) -> None:
    """What schema 7 wrote: no catalog versions."""
    for (name,) in conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE '%_catalog'"
    ).fetchall():
        conn.execute(f"DROP TRIGGER {name}")
    conn.executescript(
        """
        ALTER TABLE namespaces DROP COLUMN catalog_version;
        UPDATE meta SET value = '7' WHERE key = 'schema_version';
        """
    )


def as_schema_5(conn: sqlite3.Connection) -> None:
    """What schema 5 wrote: mentions keyed (entity, memory), with an index on (entity, type,
    memory)."""
    as_schema_7(conn)
    conn.executescript(
        """
        CREATE TABLE mentions_5 (
            entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            joined    INTEGER NOT NULL DEFAULT 1,
            type      TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (entity_id, memory_id)
        ) WITHOUT ROWID;
        INSERT INTO mentions_5 SELECT entity_id, memory_id, joined, type FROM mentions;
        DROP TABLE mentions; ALTER TABLE mentions_5 RENAME TO mentions;
        CREATE INDEX mentions_memory ON mentions(memory_id, entity_id);
        CREATE INDEX mentions_type ON mentions(entity_id, type, memory_id);
        UPDATE meta SET value = '5' WHERE key = 'schema_version';
        """
    )


def as_schema_4(conn: sqlite3.Connection) -> None:
    """What schema 4 wrote: mentions without their memory's type, edges without a strength."""
    as_schema_5(conn)
    conn.executescript(
        """
        DROP INDEX mentions_type; ALTER TABLE mentions DROP COLUMN type;
        DROP INDEX edges_source; DROP INDEX edges_target; ALTER TABLE edges DROP COLUMN strength;
        CREATE INDEX edges_source ON edges(source_id);
        CREATE INDEX edges_target ON edges(target_id);
        UPDATE meta SET value = '4' WHERE key = 'schema_version';
        """
    )


def _without_lexical_log(path: Path) -> sqlite3.Connection:
    """The store as schemas 2 and 3 left it: no lexical log, no tantivy indexes."""
    shutil.rmtree(str(path) + ".lexical")
    conn = sqlite3.connect(path)
    as_schema_4(conn)
    conn.executescript(
        """
        DROP TRIGGER lexical_log_insert; DROP TRIGGER lexical_log_update;
        DROP TRIGGER lexical_log_delete; DROP TABLE lexical_log; DROP TABLE lexical_pruned;
        """
    )
    return conn


def _as_schema_2(path: Path) -> None:
    """Turn a store back into what schema 2 wrote: one pair of FTS5 tables for every namespace."""
    conn = _without_lexical_log(path)
    conn.executescript(
        f"""
        CREATE VIRTUAL TABLE memories_fts USING fts5(predicate, content, content='memories',
            content_rowid='id', tokenize='{OLD_TOKENIZE}');
        CREATE VIRTUAL TABLE context_fts USING fts5(context_near, context_far,
            content='memories', content_rowid='id', tokenize='{OLD_TOKENIZE}');
        INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');
        INSERT INTO context_fts (rowid, context_near, context_far)
            SELECT id, context_near, context_far FROM memories
            WHERE context_near != '' OR context_far != '';
        UPDATE meta SET value = '2' WHERE key = 'schema_version';
        """
    )
    conn.close()


def _as_schema_3(path: Path) -> None:
    """What schema 3 wrote: a view and a pair of FTS5 tables per namespace."""
    conn = _without_lexical_log(path)
    conn.execute(
        "CREATE TABLE lexical_tables (id INTEGER PRIMARY KEY AUTOINCREMENT, "
        "namespace TEXT NOT NULL UNIQUE)"
    )
    for (namespace,) in conn.execute("SELECT DISTINCT namespace FROM memories").fetchall():
        n = conn.execute(
            "INSERT INTO lexical_tables (namespace) VALUES (?)", (namespace,)
        ).lastrowid
        conn.executescript(
            f"""
            CREATE VIEW lex_src_{n} AS SELECT id, predicate, content, context_near, context_far
                FROM memories WHERE namespace = '{namespace}';
            CREATE VIRTUAL TABLE fts_{n} USING fts5(predicate, content, content='lex_src_{n}',
                content_rowid='id', tokenize='{OLD_TOKENIZE}');
            CREATE VIRTUAL TABLE ctx_{n} USING fts5(context_near, context_far,
                content='lex_src_{n}', content_rowid='id', tokenize='{OLD_TOKENIZE}');
            INSERT INTO fts_{n} (fts_{n}) VALUES ('rebuild');
            """
        )
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()


def _schema_version(mem: fivefold.Memory) -> str:
    conn: sqlite3.Connection = mem.store._core.conn  # type: ignore[attr-defined]
    return str(conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])


def test_a_version_1_store_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with fivefold.Memory.open(str(path), embedder=fivefold.HashingEmbedder()) as mem:
        ids = [r.id for r in mem.remember_many([{"content": t, "session_id": "s"} for t in TURNS])]
    _as_schema_2(path)
    # Then back into what schema 1 wrote: no context or speaker columns.
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        DROP TABLE context_fts;
        DROP INDEX memories_session;
        ALTER TABLE memories DROP COLUMN context_near;
        ALTER TABLE memories DROP COLUMN context_far;
        ALTER TABLE memories DROP COLUMN speaker;
        ALTER TABLE mentions DROP COLUMN joined;
        ALTER TABLE vectors DROP COLUMN context;
        UPDATE meta SET value = '1' WHERE key = 'schema_version';
        DELETE FROM meta WHERE key = 'context_smoothing';
        """
    )
    conn.close()
    with fivefold.Memory.open(str(path), embedder=fivefold.HashingEmbedder()) as mem:
        assert mem.get(ids[0]).speaker == "Caroline"
        assert _context(mem, ids[2])[0].splitlines() == [TURNS[1], TURNS[3]]
        assert set(_lexical(mem, Scope(), "sometime")) == {ids[2], ids[3], ids[4]}
        assert _schema_version(mem) == str(schema.SCHEMA_VERSION)
        assert all(f.ok for f in mem.store.admin.check())


@pytest.mark.parametrize("version", [2, 3])
def test_an_fts5_store_moves_to_lexical_indexes_per_namespace(tmp_path: Path, version: int) -> None:
    path = tmp_path / "old.db"
    items = [{"content": t, "session_id": "s"} for t in TURNS]
    with fivefold.Memory.open(str(path), embedder=fivefold.HashingEmbedder()) as mem:
        mine = [r.id for r in mem.remember_many([{**i, "namespace": "a"} for i in items])]
        theirs = [r.id for r in mem.remember_many([{**i, "namespace": "b"} for i in items[:3]])]
        before = {ns: _bm25(mem, ns) for ns in ("a", "b")}
    (_as_schema_2 if version == 2 else _as_schema_3)(path)
    with fivefold.Memory.open(str(path), embedder=fivefold.HashingEmbedder()) as mem:
        assert _schema_version(mem) == str(schema.SCHEMA_VERSION)
        assert {ns: _bm25(mem, ns) for ns in ("a", "b")} == before
        conn: sqlite3.Connection = mem.store._core.conn  # type: ignore[attr-defined]
        leftovers = conn.execute(
            "SELECT name FROM sqlite_master WHERE name LIKE '%fts%' OR name LIKE 'lex%_src%' "
            "OR name = 'lexical_tables'"
        ).fetchall()
        assert leftovers == []
        assert {i for i, _ in before["a"]} <= set(mine)
        assert {i for i, _ in before["b"]} <= set(theirs)
        assert all(f.ok for f in mem.store.admin.check())


def _bm25(mem: fivefold.Memory, namespace: str) -> list[tuple[int, float]]:
    scope = Scope(namespace)
    return mem.store.search.lexical_search(scope, ["sometime", "caroline"], 10, weights=W)


def test_explain_says_when_a_hit_matched_through_its_context(
    hashing_mem: fivefold.Memory,
) -> None:
    ids = [
        r.id for r in hashing_mem.remember_many([{"content": t, "session_id": "s"} for t in TURNS])
    ]
    hits = {h.id: h for h in hashing_mem.explain("sometime", k=10).hits}
    assert not hits[ids[4]].via_context
    assert hits[ids[3]].via_context


def test_an_hnsw_index_follows_context_changes_and_forgets(tmp_path: Path) -> None:
    config = Config(index=IndexConfig(hnsw_threshold=10))
    path = str(tmp_path / "h.db")
    with fivefold.Memory.open(path, embedder=fivefold.HashingEmbedder(), config=config) as mem:
        mem.remember_many(
            [{"content": f"turn {i} about topic{i}", "session_id": "s"} for i in range(30)]
        )
        assert mem.recall("topic5").hits[0].memory.content == "turn 5 about topic5"
        assert mem.store._core.dense["default"].uses_hnsw  # type: ignore[attr-defined]
        # One at a time: each write re-smooths the two before it in the loaded index.
        for i in range(30, 40):
            mem.remember(f"turn {i} about topic{i}", session_id="s")
        hit = mem.recall("topic35").hits[0]
        assert hit.memory.content == "turn 35 about topic35"
        mem.forget(hit.memory.id)
        assert mem.recall("topic36").hits[0].memory.content == "turn 36 about topic36"
        assert all("topic35" not in h.memory.content for h in mem.recall("topic35").hits)


def _one_at_a_time(own, near, far, smoothing):  # type: ignore[no-untyped-def]
    """The searched embedding as it was computed a memory at a time."""
    if not (near or far):
        return None
    total = np.asarray(own, dtype=np.float64).copy()
    for weight, neighbours in ((smoothing.near, near), (smoothing.far, far)):
        for row in neighbours:
            total += weight * np.asarray(row[2], dtype=np.float64)
    norm = float(np.linalg.norm(total))
    return None if norm == 0.0 else (total / norm).astype(np.float32)


@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.booleans()), max_size=40),
    st.sampled_from([(0.25, 0.25), (0.5, 0.0), (0.0, 0.3), (0.0, 0.0)]),
    st.integers(0, 2**16),
)
@settings(max_examples=100, deadline=None)
def test_a_batch_smooths_each_vector_exactly_as_alone(
    shapes: list[tuple[int, int, bool]], weights: tuple[float, float], seed: int
) -> None:
    from fivefold.store.shared.context import Smoothing, smoothed

    rng = np.random.default_rng(seed)
    smoothing = Smoothing(2, *weights)

    def vector(zero: bool = False) -> np.ndarray:
        # The model's width: the norms' dot runs in blocks wider than a few floats.
        return np.zeros(384, np.float32) if zero else rng.normal(size=384).astype(np.float32)

    jobs = [
        (
            vector(zero),
            [(1, "", vector(zero)) for _ in range(near)],
            [(2, "", vector(zero)) for _ in range(far)],
        )
        for near, far, zero in shapes
    ]
    for got, job in zip(smoothed(jobs, smoothing), jobs, strict=True):
        want = _one_at_a_time(*job, smoothing) if smoothing.active else None
        if want is None:
            assert got is None
        else:
            assert got is not None
            assert got.dtype == np.float32
            assert np.array_equal(got, want)  # bit for bit: the same searches


def test_a_version_5_store_gets_mentions_keyed_by_type_on_open(tmp_path: Path) -> None:
    """Schema 6 keys a mention (entity, type, memory), without schema 5's second tree: the
    graph leg's reads of an entity's newest mentions, every type or a forced one, find the
    same memories after the migration."""
    path = tmp_path / "old.db"
    kinds = ["fact", "event", "preference", "fact", "entity"]
    items = [
        {"content": f"note {n} about Orion and Vega", "type": kinds[n % 5], "user_id": f"u{n % 2}"}
        for n in range(40)
    ]
    entities = [EntityScore(entity_id=e, score=0.9, hops=0, rarity=1.0) for e in (1, 2)]
    reached = [EntityScore(entity_id=1, score=0.5, hops=1, rarity=1.0)]  # its newest k/4 only
    scopes = [Scope(), Scope(user_id="u1")]
    asked = [(), (MemoryType.EVENT,), (MemoryType.FACT, MemoryType.ENTITY)]

    def reads(mem: fivefold.Memory) -> list[object]:
        return [
            mentions(mem.store.search, s, e, 12, t)
            for e in (reached, entities)
            for s in scopes
            for t in asked
        ]

    with fivefold.Memory.open(str(path), embedder=fivefold.HashingEmbedder()) as mem:
        ids = [r.id for r in mem.remember_many(items)]
        before = reads(mem)
    # Every type is read: the newest mentions, whatever their memories' types.
    assert {hit.memory_id for hit in before[0]} == set(ids[-3:])  # type: ignore[attr-defined]
    conn = sqlite3.connect(path)
    as_schema_5(conn)
    conn.commit()
    conn.close()
    with fivefold.Memory.open(str(path), embedder=fivefold.HashingEmbedder()) as mem:
        assert _schema_version(mem) == str(schema.SCHEMA_VERSION)
        assert reads(mem) == before
        assert all(f.ok for f in mem.store.admin.check())
        conn = mem.store._core.conn  # type: ignore[attr-defined]
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "mentions_type" not in names
    assert before[0]  # the reads found something to compare
    assert before[1]


@pytest.mark.slow
def test_two_openers_of_an_old_store_migrate_it_once(tmp_path: Path) -> None:
    """Both read its version, then wait for the write lock (held here): the second must find
    it migrated, not migrate it again (schema 4's step then failed: a duplicate column)."""
    path = tmp_path / "old.db"
    with fivefold.Memory.open(str(path), embedder=fivefold.HashingEmbedder()) as mem:
        mem.remember_many([{"content": t, "session_id": "s"} for t in TURNS])
    conn = sqlite3.connect(path, isolation_level=None)
    as_schema_4(conn)
    conn.execute("BEGIN IMMEDIATE")  # the openers queue behind this lock
    errors: list[BaseException] = []
    versions: list[str] = []

    def open_it() -> None:
        try:
            with fivefold.Memory.open(str(path), embedder=fivefold.HashingEmbedder()) as mem:
                versions.append(_schema_version(mem))
        except BaseException as exc:
            errors.append(exc)

    openers = [threading.Thread(target=open_it) for _ in range(2)]
    for opener in openers:
        opener.start()
    time.sleep(2.0)  # both have read version 4 and wait for the lock
    conn.execute("COMMIT")
    conn.close()
    for opener in openers:
        opener.join(timeout=60)
    assert errors == []
    assert versions == [str(schema.SCHEMA_VERSION)] * 2
