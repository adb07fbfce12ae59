"""What only the Postgres backend has: the schema's versions, statements shaped for sharding,
pgvector's HNSW under a scope filter, several processes at once, and its statistics check. The
contract every backend keeps is tested on both through the ``hashing_mem`` and ``new_store``
fixtures."""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import numpy as np
import psycopg
import pytest

import fivefold
from fivefold import Memory, Scope
from fivefold.config import Config, IndexConfig, OptimizerConfig
from fivefold.read.retrieve.lexical import DEFAULT_WEIGHTS as W
from fivefold.store.postgres.placement import search_path
from fivefold.types import MemoryType, OptimizerMode

NOW = datetime(2026, 3, 20, 17, tzinfo=UTC)
BALANCED = Config(optimizer=OptimizerConfig(mode=OptimizerMode.OFF))


@pytest.fixture
def url(pg_url: str) -> str:
    return pg_url


def _open(url: str, config: Config = BALANCED, dim: int = 64) -> Memory:
    return Memory.open(url, embedder=fivefold.HashingEmbedder(dim=dim), config=config)


def _seed(memory: Memory, namespace: str) -> None:
    memory.remember_many(
        [
            {
                "content": f"{who}: the Kestrel budget review, part {n}",
                "namespace": namespace,
                "session_id": f"s{n // 4}",
                "type": "event",
                "event_at": NOW - timedelta(days=n % 5),
                "entities": [who, "Kestrel"],
            }
            for n, who in enumerate(["Priya Patel", "Sarah Chen"] * 6)
        ]
    )
    memory.relate("Priya Patel", "leads", "Kestrel", namespace=namespace)


@pytest.mark.slow
def test_every_statement_of_a_recall_names_one_namespace(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Citus every table is distributed on the namespace: a recall must be single-shard, so
    every statement it issues filters on the caller's namespace and no other."""
    with _open(url) as memory:
        _seed(memory, "tenant-a")
        _seed(memory, "tenant-b")
        issued: list[tuple[str, Any]] = []
        original = psycopg.Connection.execute

        def spy(self: psycopg.Connection, query: Any, params: Any = None, **kw: Any) -> Any:
            issued.append((str(query), params))
            return original(self, query, params, **kw)

        monkeypatch.setattr(psycopg.Connection, "execute", spy)
        for text, types in [
            ("What did Priya Patel say about the Kestrel budget last week?", None),
            ("kestrel review", ["event"]),
            ("who leads Kestrel?", None),
        ]:
            memory.recall(text, namespace="tenant-b", now=NOW, types=types)
            memory.explain(text, namespace="tenant-b", now=NOW, types=types)
        monkeypatch.undo()
    statements = [
        (q, p)
        for q, p in issued
        if not q.lstrip().upper().startswith(("SET LOCAL", "SET TRANSACTION"))
    ]
    assert len(statements) > 30
    for query, params in statements:
        assert "namespace" in query, query
        values = list(params.values()) if isinstance(params, dict) else list(params or ())
        assert "tenant-b" in values, query
        assert "tenant-a" not in json.dumps(values, default=str), query


def test_the_schema_is_versioned_and_a_newer_one_refused(url: str) -> None:
    with _open(url) as memory:
        memory.remember("one memory")
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT value FROM fivefold_meta WHERE key = 'schema_version'")
        assert row.fetchone() == ("11",)
        conn.execute("UPDATE fivefold_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(fivefold.NotAFivefoldStore, match="schema version 99"):
        _open(url)
    for value in ("abc", "-3", ""):  # another program's: a raw ValueError, or -3 indexed
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "UPDATE fivefold_meta SET value = %s WHERE key = 'schema_version'", (value,)
            )
        with pytest.raises(fivefold.NotAFivefoldStore, match="schema_version"):
            _open(url)


AS_VERSION_1 = """
DROP TABLE feedback;
DROP TABLE feedback_labels;
DROP TABLE models;
DROP INDEX edges_source;
DROP INDEX edges_target;
ALTER TABLE edges DROP COLUMN strength;
CREATE INDEX edges_source ON edges (namespace, source_id);
CREATE INDEX edges_target ON edges (namespace, target_id);
DROP TABLE postings;
DROP TABLE term_stats;
CREATE TABLE postings (namespace text NOT NULL, field smallint NOT NULL, term text NOT NULL,
    memory_id bigint NOT NULL, first real NOT NULL, second real NOT NULL,
    length integer NOT NULL, PRIMARY KEY (namespace, field, term, memory_id));
CREATE TABLE term_stats (namespace text NOT NULL, field smallint NOT NULL, term text NOT NULL,
    df integer NOT NULL, PRIMARY KEY (namespace, field, term));
ALTER TABLE memories DROP COLUMN tokens, ADD COLUMN own_tokens integer NOT NULL DEFAULT 0,
    ADD COLUMN context_tokens integer NOT NULL DEFAULT 0;
ALTER TABLE namespaces DROP COLUMN tokens, ADD COLUMN own_tokens bigint NOT NULL DEFAULT 0,
    ADD COLUMN context_docs bigint NOT NULL DEFAULT 0,
    ADD COLUMN context_tokens bigint NOT NULL DEFAULT 0;
UPDATE fivefold_meta SET value = '1' WHERE key = 'schema_version';
"""


@pytest.mark.slow
def test_a_version_1_store_is_reindexed_on_open(url: str) -> None:
    """Schema 2 scores each column with tantivy's statistics: opening a schema 1 store derives
    its posting rows again from the memories, and it ranks as if written under schema 2."""
    terms = ["kestrel", "budget", "priya", "part"]
    with _open(url) as memory:
        _seed(memory, "default")
        _seed(memory, "other")
        before = {
            ns: memory.store.search.lexical_search(Scope(ns), terms, 20, weights=W)
            for ns in ("default", "other")
        }
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(AS_VERSION_1)
    with _open(url) as memory:
        after = {
            ns: memory.store.search.lexical_search(Scope(ns), terms, 20, weights=W)
            for ns in ("default", "other")
        }
        assert all(f.ok for f in memory.store.admin.check())
    assert after == before
    assert len(before["default"]) == 13


# Schema 8's postings: a row per posting (schema 9 packs each list, a row per part).
AS_VERSION_8 = """
DROP TABLE postings;
CREATE TABLE postings (namespace text NOT NULL, field smallint NOT NULL, term text NOT NULL,
    memory_id bigint NOT NULL, first real NOT NULL, second real NOT NULL, norm1 integer NOT NULL,
    norm2 integer NOT NULL, type text NOT NULL, PRIMARY KEY (namespace, field, term, memory_id)
    INCLUDE (first, second, norm1, norm2, type));
UPDATE fivefold_meta SET value = '8' WHERE key = 'schema_version';
"""


@pytest.mark.slow
def test_a_version_8_store_gets_packed_lists_on_open(url: str) -> None:
    """Schema 9 keeps each list packed, a row per part: opening a schema 8 store makes them
    from the memories, and it ranks as before."""
    terms = ["kestrel", "budget", "priya", "part"]
    with _open(url) as memory:
        _seed(memory, "default")
        _seed(memory, "other")
        before = [
            memory.store.search.lexical_search(Scope(ns), terms, 20, types, weights=W)
            for ns in ("default", "other")
            for types in ((), (MemoryType.EVENT,))
        ]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(AS_VERSION_8)
    with _open(url) as memory:
        after = [
            memory.store.search.lexical_search(Scope(ns), terms, 20, types, weights=W)
            for ns in ("default", "other")
            for types in ((), (MemoryType.EVENT,))
        ]
        assert all(f.ok for f in memory.store.admin.check())
    assert after == before
    assert len(before[0]) == 13
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM postings").fetchone() != (0,)


@pytest.mark.slow
def test_a_version_3_store_gets_its_windows_on_open(url: str) -> None:
    """Schema 4 keeps a memory's window (own text and session context, one column) where
    schema 3 kept its context at distance 1 and 2: opening a schema 3 store derives the
    postings again from the memories."""
    terms = ["kestrel", "budget", "priya", "part"]
    with _open(url) as memory:
        _seed(memory, "default")
        memory.remember_many(
            [{"content": f"turn {i} about the Kestrel budget", "session_id": "s"} for i in range(5)]
        )
        before = memory.store.search.lexical_search(Scope("default"), terms, 20, weights=W)
    with psycopg.connect(url, autocommit=True) as conn:
        # What schema 3 held in field 1 is not a window: gone, and the version set back.
        conn.execute(AS_VERSION_8)
        conn.execute("DELETE FROM postings WHERE field = 1")
        conn.execute("DELETE FROM term_stats WHERE field = 1")
        conn.execute("UPDATE fivefold_meta SET value = '3' WHERE key = 'schema_version'")
    with _open(url) as memory:
        assert memory.store.search.lexical_search(Scope("default"), terms, 20, weights=W) == before
        assert all(f.ok for f in memory.store.admin.check())


AS_VERSION_4 = """
DROP INDEX IF EXISTS postings_impact;
DROP INDEX mentions_type;
ALTER TABLE mentions DROP COLUMN type;
ALTER TABLE postings DROP CONSTRAINT postings_pkey;
ALTER TABLE postings DROP COLUMN type;
ALTER TABLE postings ADD PRIMARY KEY (namespace, field, term, memory_id)
    INCLUDE (first, second, norm1, norm2);
UPDATE fivefold_meta SET value = '4' WHERE key = 'schema_version';
"""


@pytest.mark.slow
def test_a_version_4_store_gets_types_on_open(url: str) -> None:
    """Schema 5 keeps each memory's type on its postings and mentions: opening a schema 4 store
    (through 9's packed lists) adds them, and it ranks as before."""
    terms = ["kestrel", "budget", "priya", "part"]
    events = (MemoryType.EVENT,)

    def searches(memory: Memory) -> list[object]:
        found: list[object] = []
        for types in ((), events, (MemoryType.FACT,)):
            found.append(
                memory.store.search.lexical_search(Scope("default"), terms, 20, types, weights=W)
            )
            hits = memory.recall("Kestrel budget review", k=20, now=NOW, types=list(types) or None)
            found.append([h.memory.id for h in hits.hits])
        return found

    with _open(url) as memory:
        _seed(memory, "default")
        before = searches(memory)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(AS_VERSION_8)
        conn.execute(AS_VERSION_4)
    with _open(url) as memory:
        assert searches(memory) == before
        assert all(f.ok for f in memory.store.admin.check())
    pages, visible = _visibility(url, "postings")  # rebuilt, then vacuumed
    assert visible == pages > 0
    with psycopg.connect(url) as conn:
        untyped = conn.execute(
            "SELECT count(*) FROM mentions mn JOIN memories m ON m.id = mn.memory_id "
            "WHERE mn.type <> m.type"
        ).fetchone()
        assert untyped == (0,)
        assert conn.execute("SELECT count(*) FROM postings").fetchone() != (0,)
    assert (len(before[2]), len(before[4])) == (12, 1)  # 12 events, the fact of relate()


def test_another_embedding_model_is_refused(url: str) -> None:
    with _open(url) as memory:
        memory.remember("one memory")
    with pytest.raises(fivefold.EmbeddingModelMismatch):
        _open(url, dim=32)


def test_a_table_fivefold_did_not_make_is_not_taken_over(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE memories (id int)")
    with pytest.raises(fivefold.NotAFivefoldStore, match="did not make"):
        _open(url)


def test_a_schema_the_url_names_is_the_stores_even_when_it_did_not_exist(
    postgres_server: str,
) -> None:
    """Postgres skips a missing schema of ``search_path``: the tables went to ``public``, and
    two stores meant apart were one."""
    tag = uuid.uuid4().hex[:8]
    separator = "&" if "?" in postgres_server else "?"
    names = [f"app_one_{tag}", f'"AppTwo_{tag}"']  # quoted: its case is kept
    urls = [f"{postgres_server}{separator}options=-csearch_path%3D{quote(n)},public" for n in names]
    with _open(urls[0]) as memory:
        memory.remember("the root password is tulip42")
    with _open(urls[1]) as memory:
        assert not memory.recall("root password").hits
        memory.remember("another store's memory")
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        held = conn.execute(
            "SELECT table_schema FROM information_schema.tables WHERE table_name = 'memories' "
            "AND table_schema IN (%s, %s, 'public')",
            (f"app_one_{tag}", f"AppTwo_{tag}"),
        ).fetchall()
    assert sorted(r[0] for r in held) == sorted([f"AppTwo_{tag}", f"app_one_{tag}"])
    with _open(urls[0]) as memory:
        assert [h.memory.content for h in memory.recall("root password").hits] == [
            "the root password is tulip42"
        ]


def _other(server: str, *, user: str | None = None, database: str | None = None) -> str:
    """The test server's URL as another role, or for another database."""
    parts = urlsplit(server)
    netloc = parts.netloc if user is None else f"{user}:@{parts.netloc.split('@', 1)[1]}"
    path = parts.path if database is None else f"/{database}"
    return urlunsplit(parts._replace(netloc=netloc, path=path))


def _with_path(url: str, path: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{quote(path)}"


@pytest.mark.slow
def test_stores_in_their_own_schemas_share_a_database_without_pgvector(
    postgres_server: str,
) -> None:
    """The extension is made in ``public`` (made in the first store's new schema, the others
    could not name the type), and a store that cannot see where it is says
    so."""
    database = f"fresh_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {database}")
    fresh = _other(postgres_server, database=database)
    with pytest.raises(fivefold.StoreError, match="'public', is not in the URL's search_path"):
        _open(_with_path(fresh, "app_zero"))  # not the type's raw error from a CREATE TABLE
    for name in ("app_one", "app_two"):
        with _open(_with_path(fresh, f"{name},public")) as memory:
            memory.remember(f"a note of {name}")
            assert [h.memory.content for h in memory.recall("note").hits] == [f"a note of {name}"]
    with _open(fresh) as memory:  # no search_path: public, as ever
        assert memory.stats().memories == 0
    again = f"again_{uuid.uuid4().hex[:8]}"  # three fresh stores at once: one makes pgvector
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {again}")
    failed: list[BaseException] = []
    start = threading.Barrier(3)

    def first_open(name: str) -> None:
        start.wait()
        try:
            with _open(_with_path(_other(postgres_server, database=again), f"{name},public")):
                pass
        except BaseException as exc:
            failed.append(exc)

    openers = [threading.Thread(target=first_open, args=(f"s{n}",)) for n in range(3)]
    for opener in openers:
        opener.start()
    for opener in openers:
        opener.join(timeout=60)
    assert failed == []  # two of three failed: CREATE EXTENSION at once
    with psycopg.connect(fresh, autocommit=True) as conn:
        where = conn.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
            "ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
        ).fetchone()
        assert where == ("public",)
        conn.execute("CREATE SCHEMA ext")
        conn.execute("ALTER EXTENSION vector SET SCHEMA ext")
    with pytest.raises(fivefold.StoreError, match="pgvector extension is in the schema 'ext'"):
        _open(_with_path(fresh, "app_three,public"))


@pytest.mark.slow
def test_a_role_s_own_schema_it_cannot_use_is_skipped_as_postgres_skips_it(
    postgres_server: str,
) -> None:
    """With no search_path, ``$user`` names a schema of the role's name: Postgres skips one the
    role may not use, and so must the store (it tried to make it, and was refused: a review's
    find). A schema name past 63 bytes is cut as Postgres cuts it."""
    role = f"r_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"CREATE SCHEMA {role}")  # the server's owner's: no USAGE for the role
        conn.execute(f"CREATE SCHEMA {role}_own AUTHORIZATION {role}")
        conn.execute(f"GRANT CREATE ON DATABASE postgres TO {role}")
    url = _with_path(_other(postgres_server, user=role), f"{role}_own,public")
    with _open(url) as memory:  # its own schema, named
        memory.remember("mine")
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"GRANT CREATE ON SCHEMA public TO {role}")
    with _open(_other(postgres_server, user=role)) as memory:  # "$user", public
        memory.remember("in public")
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        assert conn.execute(f"SELECT count(*) FROM {role}_own.memories").fetchone() == (1,)
        held = conn.execute("SELECT count(*) FROM public.memories WHERE content = 'in public'")
        assert held.fetchone() == (1,)
    long = f"s{'x' * 70}"
    with _open(_with_path(postgres_server, f"{long},public")) as memory:
        memory.remember("in a schema of a long name")
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        assert conn.execute(
            "SELECT 1 FROM pg_namespace WHERE nspname = %s", (long[:63],)
        ).fetchone()


def test_a_search_path_reads_as_postgres_reads_it() -> None:
    assert search_path('"$user", public') == ["$user", "public"]
    assert search_path("App_One ,  public") == ["app_one", "public"]
    assert search_path('"My ""Store"", here",x') == ['My "Store", here', "x"]
    assert search_path("") == []
    assert search_path("a" * 70) == ["a" * 63]
    assert search_path('"' + "é" * 40 + '"') == ["é" * 31]  # 62 bytes: not half a character


@pytest.mark.slow
def test_hnsw_applies_the_scope_filter_and_finds_what_exact_search_finds(url: str) -> None:
    config = Config(
        optimizer=OptimizerConfig(mode=OptimizerMode.OFF), index=IndexConfig(hnsw_threshold=100)
    )
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(600, 64)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with _open(url, config) as memory:
        records = memory.remember_many(
            {
                "content": f"memory {n}",
                "vector": vectors[n].tolist(),
                "user_id": "u1" if n % 3 == 0 else "u2",
                "type": "event" if n % 2 else "fact",
            }
            for n in range(600)
        )
        ids = np.asarray([r.id for r in records])
        agree = 0
        for n in range(0, 600, 37):
            scope, types = Scope(user_id="u1"), (MemoryType.EVENT,)
            found = memory.store.search.vector_search(scope, vectors[n][None, :], 10, types)[0]
            allowed = [i for i in range(600) if i % 3 == 0 and i % 2 == 1]
            assert {i for i, _ in found} <= set(ids[allowed].tolist())
            assert len(found) == 10  # iterative scans keep going until k rows pass the filter
            exact = ids[allowed][np.argsort(-(vectors[allowed] @ vectors[n]))[:10]]
            agree += len({i for i, _ in found} & set(exact.tolist()))
        assert agree >= 0.9 * 10 * len(range(0, 600, 37))


def _has_index(url: str, name: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexname = %s",
            (name,),
        ).fetchone()
    return row is not None


def _has_searched_index(url: str) -> bool:
    return _has_index(url, "memories_searched")


def _unit_rows(count: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(count, 64)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


HNSW_AT_100 = Config(
    optimizer=OptimizerConfig(mode=OptimizerMode.OFF), index=IndexConfig(hnsw_threshold=100)
)


def test_the_hnsw_index_is_built_by_the_first_search_that_needs_it(url: str) -> None:
    vectors = _unit_rows(301, seed=5)
    items = [{"content": f"memory {n}", "vector": vectors[n].tolist()} for n in range(301)]
    with _open(url, HNSW_AT_100) as memory:
        records = memory.remember_many(items[:60])
        assert not _has_searched_index(url)  # writes insert into no graph
        assert (
            memory.store.search.vector_search(Scope(), vectors[3][None, :], 5)[0][0][0]
            == records[3].id
        )
        assert not _has_searched_index(url)  # below the threshold the search is exact
        records += memory.remember_many(items[60:300])
        found = memory.store.search.vector_search(Scope(), vectors[7][None, :], 5)[0]
        assert _has_searched_index(url)
        assert found[0][0] == records[7].id
        # From now on each write goes into the graph, and a search finds it there.
        last = memory.remember_many(items[300:])[0]
        assert (
            memory.store.search.vector_search(Scope(), vectors[300][None, :], 5)[0][0][0] == last.id
        )
    with psycopg.connect(url) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = conn.execute(
            "EXPLAIN SELECT id FROM memories ORDER BY searched <#> %s::vector LIMIT 5",
            (str(vectors[0].tolist()),),
        ).fetchall()
    assert "memories_searched" in " ".join(str(r[0]) for r in plan)  # the operator's index


def test_a_search_through_the_hnsw_index_is_not_sorted_again_by_the_server(url: str) -> None:
    from fivefold.store.postgres.schema import scope_sql
    from fivefold.store.postgres.search import _vector_sql

    vectors = _unit_rows(300, seed=9)
    with _open(url, HNSW_AT_100) as memory:
        memory.remember_many(
            {"content": f"memory {n}", "vector": v.tolist()} for n, v in enumerate(vectors)
        )
        memory.store.search.vector_search(Scope(), vectors[:1], 5)  # builds the index
    where, params = scope_sql(Scope())
    plans = {}
    with psycopg.connect(url) as conn:
        # A table this small is cheaper to read and sort whole; the question is whether the
        # statement needs a sort above the index, as at 100k, where the planner takes it.
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET enable_sort = off")
        for exact in (False, True):
            rows = conn.execute(
                "EXPLAIN " + _vector_sql(where, exact=exact),
                {**params, "q": str(vectors[0].tolist()), "k": 10},
            ).fetchall()
            plans[exact] = " ".join(str(r[0]) for r in rows)
    # An incremental sort for a tie-break above the index scan doubled the scan's reads.
    assert "memories_searched" in plans[False]
    assert "Sort" not in plans[False]
    assert "memories_searched" not in plans[True]  # below the threshold: exact, in id order


def test_a_failed_index_build_leaves_searches_working_and_is_tried_again_later(
    url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A statement timeout, a lock timeout or too little memory for the build: the search
    # answers without the index (the exact order), and the build is not tried again on every
    # search.
    from fivefold.store.postgres import schema, search

    good = schema.CREATE_SEARCHED_INDEX
    monkeypatch.setattr(
        schema, "CREATE_SEARCHED_INDEX", "CREATE INDEX memories_searched ON memories (no_such)"
    )
    vectors = _unit_rows(150, seed=8)
    terms = ["kestrel", "budget"]
    with _open(url, HNSW_AT_100) as memory:
        records = memory.remember_many(
            {"content": f"Kestrel budget note {n}", "vector": vectors[n].tolist()}
            for n in range(150)
        )
        for _ in range(2):
            found = memory.store.search.vector_search(Scope(), vectors[9][None, :], 3)[0]
            assert found[0][0] == records[9].id
            lexical = memory.store.search.lexical_search(Scope(), terms, 5, weights=W)
            assert len(lexical) == 5
        warnings = [r for r in caplog.records if "searches go on without it" in r.message]
        assert len(warnings) == 1  # the second search did not try again
        assert not _has_searched_index(url)
        monkeypatch.setattr(schema, "CREATE_SEARCHED_INDEX", good)
        monkeypatch.setattr(search, "BUILD_RETRY_S", 0.0)
        assert memory.store.search.vector_search(Scope(), vectors[9][None, :], 3)[0] == found
        assert memory.store.search.lexical_search(Scope(), terms, 5, weights=W) == lexical
        assert _has_searched_index(url)


@pytest.mark.slow
def test_first_searches_in_several_processes_build_one_index_while_a_writer_waits(
    url: str,
) -> None:
    vectors = _unit_rows(400, seed=6)
    with _open(url, HNSW_AT_100) as memory:
        records = memory.remember_many(
            {"content": f"memory {n}", "vector": vectors[n].tolist()} for n in range(400)
        )
    stores = [_open(url, HNSW_AT_100) for _ in range(3)]  # a pool each, as processes have
    start = threading.Barrier(len(stores) + 1)
    found: dict[int, int] = {}
    errors: list[BaseException] = []

    def search(n: int) -> None:
        try:
            start.wait()
            found[n] = stores[n].store.search.vector_search(Scope(), vectors[n][None, :], 3)[0][0][
                0
            ]
        except BaseException as exc:  # reported below
            errors.append(exc)

    def write() -> None:
        try:
            start.wait()
            stores[0].remember("written while the index is built")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=search, args=(n,)) for n in range(1, 3)]
    threads.append(threading.Thread(target=write))
    try:
        for t in threads:
            t.start()
        start.wait()
        for t in threads:
            t.join(60)
        assert not errors
        assert found == {1: records[1].id, 2: records[2].id}
        assert stores[0].stats().memories == 401
        assert _has_searched_index(url)
    finally:
        for s in stores:
            s.close()


@pytest.mark.slow
def test_an_empty_store_of_schema_5_drops_its_derived_indexes_and_a_full_one_keeps_them(
    url: str,
) -> None:
    from fivefold.store.postgres import schema

    def as_version_5_with_index() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(AS_VERSION_8)
            conn.execute(schema.CREATE_SEARCHED_INDEX)
            conn.execute(schema._IMPACT_INDEX)
            conn.execute("UPDATE fivefold_meta SET value = '5' WHERE key = 'schema_version'")

    with _open(url):
        pass
    as_version_5_with_index()
    with _open(url):
        assert not _has_searched_index(url)  # rebuilt, from the loaded rows, when needed
        assert not _has_index(url, "postings_impact")
    with _open(url) as memory:
        memory.remember("one memory")
    as_version_5_with_index()
    with _open(url):
        assert _has_searched_index(url)  # rebuilding it would cost the first search
        assert not _has_index(url, "postings_impact")  # its table is gone at schema 9


@pytest.mark.slow
def test_a_store_that_indexed_tokens_past_255_characters_is_reindexed_at_schema_7(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tokens are cut at 255 characters since schema 7: a store that indexed a longer one
    whole would keep its rows past a forget (which cuts it) and miscount it on a context
    update. Its postings are made again from the rows when it opens."""
    from fivefold.store.shared import tokens

    long = "".join(chr(ord("a") + (n * 7) % 26) for n in range(300))
    monkeypatch.setattr(tokens, "_TERM", "term")  # the whole token, as before schema 7
    with _open(url) as memory:
        first = memory.remember(f"attachment {long} received", session_id="s1")
    monkeypatch.undo()
    with psycopg.connect(url, autocommit=True) as conn:
        longest = "SELECT max(char_length(term)) FROM term_stats"
        assert conn.execute(longest).fetchone() == (300,)
        conn.execute("UPDATE fivefold_meta SET value = '6' WHERE key = 'schema_version'")
    with _open(url) as memory:
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute(longest).fetchone() == (tokens.MAX_TOKEN_CHARS,)
        assert memory.recall(long).hits[0].memory.id == first.id
        second = memory.remember(f"a reply about {long}", session_id="s1")  # a context update
        assert all(f.ok for f in memory.store.admin.check())
        memory.forget(first.id)
        memory.forget(second.id)
        assert all(f.ok for f in memory.store.admin.check())
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM postings").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM term_stats").fetchone() == (0,)


def _retype_postings(conn: psycopg.Connection, memory_id: int, mtype: str) -> None:
    """Give a memory's postings another type, by hand (in their packed lists)."""
    from fivefold.store.postgres import packed

    rows = conn.execute("SELECT ctid::text, field, packed FROM postings").fetchall()
    for ctid, field, value in rows:
        postings = packed.decode(field, value).copy()
        postings["type"][postings["id"] == memory_id] = packed.type_code(mtype)
        conn.execute(
            "UPDATE postings SET packed = %s WHERE ctid = %s::tid", (postings.tobytes(), ctid)
        )


@pytest.mark.slow
def test_a_mention_or_posting_of_another_type_is_found_and_retyped(url: str) -> None:
    """A type-filtered read finds a memory's mentions (``mentions_type``) and postings by the
    type they carry: one that is not its memory's is missed (the embedded store's check, now
    here too)."""
    from fivefold.store.scoring import EntityScore, mentions

    facts = (MemoryType.FACT,)

    def reads(memory: Memory) -> tuple[list[int], list[int]]:
        (entity,) = [e for e in memory.store.reads.catalog("default") if e.name == "Dana Lee"]
        dana = EntityScore(entity_id=entity.entity_id, score=0.9, hops=0, rarity=1.0)
        mentioned = [h.memory_id for h in mentions(memory.store.search, Scope(), [dana], 10, facts)]
        found = memory.store.search.lexical_search(Scope(), ["kestrel"], 10, facts, weights=W)
        return mentioned, [i for i, _ in found]

    def types(memory: Memory, repair: bool = False) -> dict[str, fivefold.types.Finding]:
        return {f.part: f for f in memory.store.admin.check(repair=repair) if "types" in f.part}

    with _open(url) as memory:
        made = memory.remember(
            "Dana Lee joined Kestrel", type="fact", entities=["Dana Lee", "Kestrel"]
        )
        assert reads(memory) == ([made.id], [made.id])
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE mentions SET type = 'event' WHERE memory_id = %s", (made.id,))
        _retype_postings(conn, made.id, "event")
    with _open(url) as memory:
        assert reads(memory) == ([], [])
        found = types(memory)
        assert "2 mentions carry another type" in found["mentions' memory types"].detail
        assert not found["postings' memory types"].ok
        assert all(f.repaired for f in types(memory, repair=True).values())
        assert all(f.ok for f in memory.store.admin.check())
        assert reads(memory) == ([made.id], [made.id])


@pytest.mark.slow
def test_the_statistics_check_finds_and_repairs_drift(url: str) -> None:
    with _open(url) as memory:
        _seed(memory, "default")
        assert all(f.ok for f in memory.store.admin.check())
        before = memory.recall("kestrel budget review", now=NOW)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE term_stats SET df2 = df2 + 5 WHERE term = 'kestrel'")
        conn.execute("UPDATE namespaces SET tokens[2] = tokens[2] + 100")
    with _open(url) as memory:
        findings = {f.part: f for f in memory.store.admin.check()}
        assert not findings["lexical statistics of namespace 'default'"].ok
        repaired = {f.part: f for f in memory.store.admin.check(repair=True)}
        assert repaired["lexical statistics of namespace 'default'"].repaired
        assert all(f.ok for f in memory.store.admin.check())
        after = memory.recall("kestrel budget review", now=NOW)
    assert [(h.memory.id, h.score) for h in after.hits] == [
        (h.memory.id, h.score) for h in before.hits
    ]


WRITER = textwrap.dedent(
    """
    import sys
    import fivefold
    url, name = sys.argv[1], sys.argv[2]
    with fivefold.Memory.open(url, embedder=fivefold.HashingEmbedder(dim=64)) as memory:
        for n in range(40):
            memory.remember_many(
                [
                    {{"content": f"{{name}} wrote note {{n}}.{{i}} about Priya Patel and Kestrel",
                      "session_id": f"{{name}}-{{n % 3}}", "entities": ["Priya Patel", "Kestrel"]}}
                    for i in range(3)
                ]
            )
            memory.recall("what about Priya and Kestrel?")
    print("done")
    """
)


@pytest.mark.slow
def test_several_processes_and_threads_write_and_read_at_once(
    url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from fivefold.store.postgres import schema

    # This process's writers vacuum at every step from 256 (the other processes do not): the
    # vacuums and analyzes of several writers at once, beside other processes' writes.
    monkeypatch.setattr(schema, "VACUUM_FROM", schema.ANALYZE_FROM)
    with _open(url) as memory:
        memory.remember("the first memory")
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER.format(), url, f"p{n}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(3)
    ]
    errors: list[BaseException] = []
    with _open(url) as memory:

        def thread_work(name: str) -> None:
            try:
                for n in range(30):
                    memory.remember(f"{name} thread note {n} on Kestrel", session_id=name)
                    memory.recall("Kestrel notes")
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=thread_work, args=(f"t{n}",)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        outputs = [w.communicate(timeout=300) for w in writers]
        assert errors == []
        for writer, (out, err) in zip(writers, outputs, strict=True):
            assert writer.returncode == 0, err
            assert out.strip() == "done"
        assert memory.stats().memories == 1 + 3 * 40 * 3 + 4 * 30
        assert all(f.ok for f in memory.store.admin.check())
        assert "the upkeep after a write failed" not in caplog.text
        priya = next(e for e in memory.store.reads.catalog("default") if e.name == "Priya Patel")
        assert memory.store.reads.entity_frequencies("default", [priya.entity_id]) == {
            priya.entity_id: 3 * 40 * 3
        }


def _visibility(url: str, table: str) -> tuple[int, int]:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT relpages, relallvisible FROM pg_class WHERE oid = %s::regclass", (table,)
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _filler(count: int) -> list[dict[str, Any]]:
    return [
        {"content": f"note {n} about the Kestrel budget", "session_id": f"s{n // 10}"}
        for n in range(count)
    ]


def test_growth_steps_come_eight_times_a_doubling() -> None:
    from fivefold.store.postgres.schema import ANALYZE_FROM, growth_step

    steps = [growth_step(n) for n in range(4 * ANALYZE_FROM)]
    assert set(steps[:ANALYZE_FROM]) == {0}
    assert steps == sorted(steps)
    assert len(set(steps[ANALYZE_FROM : 2 * ANALYZE_FROM])) == 8
    assert len(set(steps[2 * ANALYZE_FROM :])) == 8


def test_statistics_at_each_doubling_and_a_vacuum_at_each_eighth_of_a_large_namespace() -> None:
    from fivefold.store.postgres.context_rows import Growth
    from fivefold.store.postgres.schema import ANALYZE_FROM, VACUUM_FROM

    def growth(before: int, now: int) -> tuple[bool, bool]:
        g = Growth()
        g.add("ns", before, now)
        assert g.compact == (frozenset({"ns"}) if g.analyze or g.vacuum else frozenset())
        return g.analyze, g.vacuum

    assert growth(0, ANALYZE_FROM - 1) == (False, False)
    assert growth(ANALYZE_FROM - 1, ANALYZE_FROM) == (True, False)
    assert growth(ANALYZE_FROM, ANALYZE_FROM + ANALYZE_FROM // 8) == (False, False)  # small
    assert growth(VACUUM_FROM - 1, VACUUM_FROM) == (True, True)
    step = VACUUM_FROM // 8
    assert growth(VACUUM_FROM, VACUUM_FROM + step - 1) == (False, False)
    assert growth(VACUUM_FROM + step - 1, VACUUM_FROM + step) == (False, True)
    assert growth(2 * VACUUM_FROM - 1, 2 * VACUUM_FROM) == (True, True)


def test_a_namespace_growing_a_step_has_its_postings_vacuumed(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Index-only scans of the postings skip the heap only for pages the visibility map covers.
    from fivefold.store.postgres import schema

    monkeypatch.setattr(schema, "VACUUM_FROM", schema.ANALYZE_FROM)  # 16k memories is slow
    with _open(url) as memory:
        memory.remember_many(_filler(300))  # 0 -> 300: past the first step (256)
    pages, visible = _visibility(url, "postings")
    assert pages > 0
    assert visible == pages


def test_a_failing_vacuum_neither_fails_nor_repeats_the_write(
    url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from fivefold.store.postgres import schema

    monkeypatch.setattr(schema, "VACUUM_FROM", schema.ANALYZE_FROM)
    monkeypatch.setattr(schema, "VACUUM", "VACUUM no_such_table")
    with _open(url) as memory:
        records = memory.remember_many(_filler(300))
        assert len(records) == 300
        assert memory.stats().memories == 300
    assert "the upkeep after a write failed" in caplog.text


def test_a_vacuum_step_alone_refreshes_no_statistics(
    url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Planner statistics at each doubling only (ANALYZE at each eighth's vacuum too was 9 %
    of a bulk load); a failing ANALYZE shows which growth runs it."""
    from fivefold.store.postgres import schema
    from fivefold.store.postgres.context_rows import Growth

    monkeypatch.setattr(schema, "ANALYZE", "ANALYZE no_such_table")
    with _open(url) as memory:
        upkeep = memory.store._core.upkeep  # type: ignore[attr-defined]
        upkeep.run(Growth(vacuum=True))
        assert "the upkeep after a write failed" not in caplog.text
        upkeep.run(Growth(analyze=True))
        assert "the upkeep after a write failed" in caplog.text


@pytest.mark.slow
def test_a_write_does_not_wait_for_the_upkeep_its_growth_asks_for(
    url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The vacuum a growth step asks for runs after the write has returned (it read the whole
    postings table while the write waited); close waits for it a while, then cancels it."""
    from fivefold.store.postgres import schema, upkeep

    lock = "SELECT pg_advisory_lock(4242), pg_advisory_unlock(4242)"
    monkeypatch.setattr(schema, "VACUUM_FROM", schema.ANALYZE_FROM)
    monkeypatch.setattr(schema, "VACUUM", lock)  # the upkeep waits while this test holds it

    def waiting() -> int:
        with psycopg.connect(url) as probe:
            row = probe.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE query = %s AND wait_event_type = "
                "'Lock'",
                (lock,),
            ).fetchone()
        return int(row[0]) if row else 0

    with psycopg.connect(url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(4242)")
        with _open(url) as memory:
            wrote = threading.Thread(target=memory.remember_many, args=(_filler(300),))
            wrote.start()
            wrote.join(60)
            returned = not wrote.is_alive()
            if not returned:  # it waits for the upkeep: let it end, then fail
                holder.execute("SELECT pg_advisory_unlock(4242)")
                wrote.join()
            assert returned
            assert memory.stats().memories == 300
            deadline = time.monotonic() + 30
            while not waiting() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert waiting() == 1  # the upkeep, behind the lock
            assert memory.recall("Kestrel budget").hits  # the store serves meanwhile
            holder.execute("SELECT pg_advisory_unlock(4242)")
        assert "the upkeep after a write failed" not in caplog.text
        # Held for good: close cancels it after its wait.
        monkeypatch.setattr(upkeep, "CLOSE_WAIT_S", 0.2)
        holder.execute("SELECT pg_advisory_lock(4242)")
        with caplog.at_level(logging.INFO, logger="fivefold.store"), _open(url) as memory:
            memory.remember_many(_filler(300))  # 300 -> 600: the next step
            deadline = time.monotonic() + 30
            while not waiting() and time.monotonic() < deadline:
                time.sleep(0.05)
        assert waiting() == 0
        assert "cancelled" in caplog.text


@pytest.mark.slow
def test_the_upkeep_outlives_its_failures_and_an_interrupted_close(
    url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The statistics run before the vacuum, and a failing vacuum takes neither them nor the
    next upkeep along (an error that was not psycopg's ended the thread and kept its slot: no
    upkeep ran again); a close interrupted while it waits leaves the store open with its
    upkeep."""
    from fivefold.store.postgres import schema

    lock = "SELECT pg_advisory_lock(4243), pg_advisory_unlock(4243)"
    monkeypatch.setattr(schema, "VACUUM_FROM", schema.ANALYZE_FROM)
    monkeypatch.setattr(schema, "ANALYZE", lock)  # waits while this test holds the lock
    monkeypatch.setattr(schema, "VACUUM", None)  # not even a statement: a TypeError
    real_join = threading.Thread.join

    def join(self: threading.Thread, timeout: float | None = None) -> None:
        if self.name == "fivefold-upkeep":
            raise KeyboardInterrupt
        real_join(self, timeout)

    def waiting() -> int:
        with psycopg.connect(url) as probe:
            row = probe.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE query = %s", (lock,)
            ).fetchone()
        return int(row[0]) if row else 0

    with psycopg.connect(url, autocommit=True) as holder, _open(url) as memory:
        holder.execute("SELECT pg_advisory_lock(4243)")
        memory.remember_many(_filler(300))  # 0 -> 300: statistics, then a vacuum
        deadline = time.monotonic() + 30
        while not waiting() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert waiting() == 1  # the statistics first, behind the lock
        monkeypatch.setattr(threading.Thread, "join", join)
        with pytest.raises(KeyboardInterrupt):
            memory.close()
        monkeypatch.setattr(threading.Thread, "join", real_join)
        holder.execute("SELECT pg_advisory_unlock(4243)")
        assert memory.stats().memories == 300  # still open
        memory.remember_many(_filler(300))  # 300 -> 600: both again, by the same upkeep
    assert caplog.text.count("the upkeep after a write failed") == 2


def test_a_namespace_copy_would_read_as_separators_is_written_as_it_is(url: str) -> None:
    """Postings go by COPY's text format: a tab, newline or backslash in a namespace must
    arrive as itself, not split the row."""
    odd = "team\\a\tb\nc\rd \\N"
    with _open(url) as memory:
        _seed(memory, odd)
        _seed(memory, "plain")
        found = memory.store.search.lexical_search(Scope(odd), ["kestrel", "priya"], 20, weights=W)
        plain = memory.store.search.lexical_search(
            Scope("plain"), ["kestrel", "priya"], 20, weights=W
        )
        assert len(found) == 13  # 12 and the fact of the relation
        assert [s for _, s in found] == [s for _, s in plain]
        assert all(f.ok for f in memory.store.admin.check())
    with psycopg.connect(url) as conn:
        namespaces = {r[0] for r in conn.execute("SELECT DISTINCT namespace FROM postings")}
    assert namespaces == {odd, "plain"}


@pytest.mark.slow
def test_two_writers_starting_one_session_at_once_link_their_turns(url: str) -> None:
    """Neither writer could read the other's uncommitted turns: each linked its own as if the
    session were new, and the two runs of turns stayed strangers for good (118 of
    180 contexts wrong). A session is written by one writer at a time."""
    rounds = 10
    barrier = threading.Barrier(2)
    with _open(url) as memory:

        def write(tag: str) -> None:
            for r in range(rounds):
                barrier.wait()
                memory.remember_many(
                    [{"content": f"{tag} {r} turn {j}", "session_id": f"s{r}"} for j in range(3)]
                )

        threads = [threading.Thread(target=write, args=(tag,)) for tag in ("alpha", "beta")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert all(f.ok for f in memory.store.admin.check())
    with psycopg.connect(url) as conn:
        for r in range(rounds):
            rows = conn.execute(
                "SELECT content, context_near, context_far FROM memories "
                "WHERE session_id = %s ORDER BY id",
                (f"s{r}",),
            ).fetchall()
            texts = [row[0] for row in rows]
            assert len(texts) == 6
            for i, (_, near, far) in enumerate(rows):
                # As a sequential write leaves them: the turns at distance 1, then at 2.
                around = [
                    "\n".join(texts[j] for j in (i - d, i + d) if 0 <= j < len(texts))
                    for d in (1, 2)
                ]
                assert [near, far] == around


def test_postings_arrive_whole_over_a_connection_in_another_encoding(url: str) -> None:
    """COPY's text is sent as UTF-8 whatever the connection's encoding: a LATIN1 client
    stored "näm" as "nÃ¤m" in the postings alone, and the namespace's search found nothing."""
    latin = f"{url}%20-cclient_encoding%3DLATIN1"
    with _open(latin) as memory:
        memory.remember("café crème brûlée for Zoë", namespace="näm")
        found = memory.store.search.lexical_search(Scope("näm"), ["café", "zoë"], 5, weights=W)
        assert len(found) == 1
        assert all(f.ok for f in memory.store.admin.check())


def test_a_write_that_lost_a_neighbour_is_retried_whole(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fivefold.store.postgres import context_rows
    from fivefold.store.postgres import writer as write

    real = write.copy_parts
    calls = {"n": 0}

    def once_gone(*args: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise context_rows.MemoryGone("a neighbour was deleted meanwhile")
        real(*args)

    monkeypatch.setattr(write, "copy_parts", once_gone)
    with _open(url) as memory:
        records = memory.remember_many(_filler(5))
        assert memory.stats().memories == 5  # the first attempt rolled back, the second wrote
        assert [r.id for r in records] == sorted(r.id for r in records)
        assert all(f.ok for f in memory.store.admin.check())


@pytest.mark.slow
def test_a_neighbour_forgotten_while_a_batch_writes_waits_for_it(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The batch reads the session's earlier turns, then another writer forgets one of them:
    # the forget waits for the batch (the session's lock), then refreshes its neighbours, so no
    # context keeps the forgotten text and no posting counts a memory that is gone.
    from fivefold.store.postgres.writer import Writer

    with _open(url) as memory:
        first = memory.remember("the Kestrel kickoff was on Monday", session_id="s")
        real = Writer._newest
        forgot: list[bool] = []

        def forget() -> None:
            with _open(url) as other:  # another process's store, say
                other.forget(first.id)
                forgot.append(True)

        other = threading.Thread(target=forget)

        def read_then_lose(conn: Any, wanted: Any, limit: int, types: Any) -> Any:
            rows = real(conn, wanted, limit, types)
            if not other.is_alive() and not forgot:
                other.start()
                time.sleep(0.5)  # time enough to forget, were it not waiting
                assert not forgot
            return rows

        monkeypatch.setattr(Writer, "_newest", staticmethod(read_then_lose))
        later = memory.remember("the Kestrel budget was approved", session_id="s")
        other.join(timeout=30)
        assert forgot == [True]
        assert memory.stats().memories == 1
        assert memory.get(later.id) is not None
        assert all(f.ok for f in memory.store.admin.check())
    with psycopg.connect(url) as conn:
        context = conn.execute(
            "SELECT context_near, context_far FROM memories WHERE id = %s", (later.id,)
        ).fetchone()
    assert context == ("", "")


@pytest.mark.slow
def test_two_writers_adding_turns_to_one_session_keep_postings_and_statistics_right(
    url: str,
) -> None:
    # Each batch rewrites the context of the session's turns before it; two writers read the
    # same turns at once. The second to update a turn finds it rewritten and starts again (it
    # used to remove and add postings for a context the row no longer had: a duplicate key,
    # or statistics out of step with the posting rows).
    stores = [_open(url), _open(url)]
    errors: list[BaseException] = []

    def write(n: int) -> None:
        for turn in range(40):
            try:
                stores[n].remember(f"writer {n} turn {turn} word{n}x{turn}", session_id="shared")
            except BaseException as exc:  # reported below
                errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors
        assert stores[0].stats().memories == 80
        assert all(f.ok for f in stores[0].store.admin.check())
    finally:
        for s in stores:
            s.close()


@pytest.mark.slow
def test_a_write_that_keeps_losing_neighbours_fails_clearly_and_writes_nothing(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fivefold.store.postgres import context_rows
    from fivefold.store.postgres import writer as write

    def always_gone(*args: Any) -> None:
        raise context_rows.MemoryGone("a neighbour was deleted meanwhile; try again")

    monkeypatch.setattr(write, "copy_parts", always_gone)
    with _open(url) as memory:
        with pytest.raises(fivefold.StoreError, match="try again"):
            memory.remember_many(_filler(5))
        assert memory.stats().memories == 0


def test_text_with_a_nul_character_is_refused_before_writing(url: str) -> None:
    with _open(url) as memory:
        memory.remember("kept")
        with pytest.raises(fivefold.InvalidInput, match="item 1: content contains a NUL"):
            memory.remember_many([{"content": "fine"}, {"content": "a \x00 b"}])
        with pytest.raises(fivefold.InvalidInput, match="NUL"):
            memory.relate("Priya\x00", "leads", "Kestrel")
        with pytest.raises(fivefold.InvalidInput, match="NUL"):
            memory.alias("Priya", "P\x00")
        assert memory.stats().memories == 1
        assert memory.stats().entities == 0


KILLED_WRITER = textwrap.dedent(
    """
    import sys
    import fivefold
    url, start = sys.argv[1], int(sys.argv[2])
    with fivefold.Memory.open(url, embedder=fivefold.HashingEmbedder(dim=64)) as memory:
        n = start
        while True:
            records = memory.remember_many(
                [{{"content": f"tok{{n + i}}x turn of a long session", "session_id": "s"}}
                 for i in range(5)]
            )
            # acknowledged: remember_many has returned, so the batch is committed
            print(" ".join(f"{{r.id}}:{{n + i}}" for i, r in enumerate(records)), flush=True)
            n += 5
    """
)


@pytest.mark.slow
def test_sigkill_during_writes_loses_no_acknowledged_memory(url: str) -> None:
    """A writer killed mid-transaction: Postgres rolls the open batch back; every batch it
    acknowledged is there, found by the lexical and the dense leg, with its session context."""
    with _open(url) as memory:
        memory.remember("before the writers")
    acknowledged: dict[int, int] = {}
    start = 0
    for kill in range(6):
        writer = subprocess.Popen(
            [sys.executable, "-c", KILLED_WRITER.format(), url, str(start)],
            stdout=subprocess.PIPE,
            text=True,
        )
        first = writer.stdout.readline() if writer.stdout else ""
        time.sleep(0.3 + 0.25 * kill)
        writer.send_signal(signal.SIGKILL)
        out, _ = writer.communicate(timeout=60)
        for line in [first, *out.splitlines()]:
            for pair in line.split():
                memory_id, n = pair.split(":")
                acknowledged[int(memory_id)] = int(n)
        start = max(acknowledged.values(), default=0) + 1000
    assert len(acknowledged) >= 30
    probe = fivefold.HashingEmbedder(dim=64).embed(["a turn of a long session"])
    with _open(url) as memory:
        assert all(f.ok for f in memory.store.admin.check())
        records = memory.store.reads.get_memories("default", list(acknowledged))
        assert set(records) == set(acknowledged)
        for memory_id, n in acknowledged.items():
            lexical = memory.store.search.lexical_search(Scope(), [f"tok{n}x"], 5, weights=W)
            assert memory_id in {i for i, _ in lexical}
        # Every acknowledged memory is in the dense leg (its searched vector was written in
        # the batch's own transaction), whatever its rank among near-identical turns. A batch
        # committed just before its kill is there too, unacknowledged: ask for every memory.
        total = memory.stats().memories
        everyone = memory.store.search.vector_search(Scope(), probe, total)[0]
        assert len(everyone) == total
        assert set(acknowledged) <= {i for i, _ in everyone}


@pytest.mark.slow
@pytest.mark.parametrize("threaded_from", [1, 10**9], ids=["threaded", "inline"])
def test_a_failing_copy_fails_the_whole_write(
    url: str, monkeypatch: pytest.MonkeyPatch, threaded_from: int
) -> None:
    """A bulk write works out its older rows beside its COPYs (``Beside``), a small one
    inline: a failing COPY either way fails the write, and nothing of the batch stays."""
    from fivefold.errors import StoreError
    from fivefold.store.postgres import writer as pg_write

    def failing_copy(conn: psycopg.Connection, *args: Any) -> None:
        conn.execute("SELECT 1 / 0")

    monkeypatch.setattr(pg_write, "THREADED_FROM", threaded_from)
    with _open(url) as memory:
        _seed(memory, "default")
        before = memory.stats().memories
        threads = threading.active_count()
        with monkeypatch.context() as patched:
            patched.setattr(pg_write, "copy_parts", failing_copy)
            with pytest.raises(StoreError, match="division by zero"):
                memory.remember_many(_filler(40))
        assert memory.stats().memories == before
        assert memory.store.search.lexical_search(Scope("default"), ["note"], 50, weights=W) == []
        assert all(f.ok for f in memory.store.admin.check())
        assert len(memory.remember_many(_filler(40))) == 40  # the store still takes writes
        time.sleep(0.2)  # an abandoned computation ends on its own
        assert threading.active_count() == threads  # the thread beside is gone


LATE_WRITER = textwrap.dedent(
    """
    import sys, threading, time
    import fivefold
    url = sys.argv[1]
    memory = fivefold.Memory.open(url, embedder=fivefold.HashingEmbedder(dim=64))

    def late() -> None:
        time.sleep(0.5)  # the main thread has returned: the interpreter is shutting down
        items = [{{"content": f"late note {{n}}", "session_id": "s"}} for n in range({n})]
        print("ok", len(memory.remember_many(items)), flush=True)
        memory.close()

    threading.Thread(target=late).start()
    """
)


@pytest.mark.slow
def test_a_bulk_write_from_a_thread_outliving_the_main_one_is_written(url: str) -> None:
    """Whether or not a thread can start once the interpreter shuts down, the write is done."""
    from fivefold.store.postgres.beside import THREADED_FROM

    done = subprocess.run(
        [sys.executable, "-c", LATE_WRITER.format(n=THREADED_FROM), url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", str(THREADED_FROM)]
    with _open(url) as memory:
        assert memory.stats().memories == THREADED_FROM


INTERRUPTED_WRITE = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    import fivefold
    from fivefold.store.postgres import writer as pg_write

    url = sys.argv[1]
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even as a background job's
    real = pg_write.copy_parts
    copying = threading.Event()

    def slow_copy(conn, *args):  # a slow server
        copying.set()
        time.sleep(0.5)
        real(conn, *args)

    def interrupt():
        copying.wait(60)
        time.sleep(0.15)  # the writer is waiting for its COPYs by now
        os.kill(os.getpid(), signal.SIGINT)

    items = [
        {{"content": f"turn {{n}} about the Kestrel budget", "session_id": f"s{{n % 7}}"}}
        for n in range({n})
    ]
    with fivefold.Memory.open(url, embedder=fivefold.HashingEmbedder(dim=64)) as memory:
        memory.remember_many(items[:10])
        pg_write.copy_parts = slow_copy
        threading.Thread(target=interrupt, daemon=True).start()
        try:
            memory.remember_many(items)
            print("written")
        except KeyboardInterrupt:
            print("interrupted")
        time.sleep(1.5)  # anything left running on the connection would have run by now
        pg_write.copy_parts = real
        print(memory.stats().memories, all(f.ok for f in memory.store.admin.check()), flush=True)
    """
)


@pytest.mark.slow
def test_a_bulk_write_interrupted_while_its_postings_go_leaves_no_postings(url: str) -> None:
    """Ctrl-C as a bulk write waits for its COPYs: the write is rolled back whole, and no
    posting of it is committed after the rollback (2,401 were)."""
    from fivefold.store.postgres.beside import THREADED_FROM

    done = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_WRITE.format(n=THREADED_FROM + 44), url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["interrupted", "10", "True"]
    with psycopg.connect(url) as conn:
        ids = {int(r[0]) for r in conn.execute("SELECT id FROM memories")}
    assert _posting_ids(url) == ids  # no posting of a memory the rollback took


def _posting_ids(url: str) -> set[int]:
    """The memory ids of every posting in the store (its lists decoded)."""
    from fivefold.store.postgres import packed

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT field, packed FROM postings").fetchall()
    return {int(i) for field, value in rows for i in packed.decode(field, value)["id"]}


def test_work_beside_returns_its_value_or_its_error_whether_threaded_or_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fivefold.store.postgres.beside import Beside

    where: list[str] = []

    def work() -> int:
        where.append(threading.current_thread().name)
        return 42

    def failing() -> int:
        raise ValueError("the work's")

    assert Beside(work, threaded=True).result() == 42
    assert Beside(work, threaded=False).result() == 42
    assert where == ["fivefold-beside", threading.current_thread().name]
    for threaded in (True, False):
        with pytest.raises(ValueError, match="the work's"):
            Beside(failing, threaded=threaded).result()

    def no_thread(self: threading.Thread) -> None:
        raise RuntimeError("can't create new thread at interpreter shutdown")

    monkeypatch.setattr(threading.Thread, "start", no_thread)
    where.clear()
    assert Beside(work, threaded=True).result() == 42  # inline
    assert where == [threading.current_thread().name]


def test_a_batch_whose_entity_a_concurrent_forget_drops_is_retried(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch finds entity "Bob"; before it writes the mention, another process forgets
    Bob's last memory, which drops Bob. The batch's mention would point at nothing and its
    record would name an entity ``get`` does not show (a reviewer's repro): it starts again and
    makes Bob anew."""
    from fivefold.store.shared import batch

    with _open(url) as memory, _open(url) as other:
        first = memory.remember("first note about Bob", entities=["Bob"])
        real = batch.mentions
        forgot: list[bool] = []

        def forget_first(*args: Any, **kwargs: Any) -> Any:
            if not forgot:
                forgot.append(True)
                worker = threading.Thread(target=lambda: other.forget(first.id))
                worker.start()
                worker.join(30)
            return real(*args, **kwargs)

        monkeypatch.setattr(batch, "mentions", forget_first)
        second = memory.remember("second note about Bob", entities=["Bob"])
        monkeypatch.setattr(batch, "mentions", real)
        assert forgot == [True]
        assert second.entities == ("Bob",)
        assert memory.get(second.id) == second
        assert memory.stats().memories == 1
        assert all(f.ok for f in memory.store.admin.check())
    with psycopg.connect(url) as conn:
        dangling = conn.execute(
            "SELECT count(*) FROM mentions m WHERE NOT EXISTS "
            "(SELECT 1 FROM entities e WHERE e.namespace = m.namespace AND e.id = m.entity_id)"
        ).fetchone()
    assert dangling == (0,)


def _declare_at_once(memory: Memory, names: Sequence[str], key: str) -> list[str]:
    """Each of ``names`` given the alias ``key`` from a thread of its own, at once."""
    start = threading.Barrier(len(names))
    outcomes: list[str] = []

    def declare(name: str) -> None:
        start.wait()
        try:
            memory.alias(name, key)
            outcomes.append("made")
        except fivefold.InvalidInput:
            outcomes.append("refused")

    threads = [threading.Thread(target=declare, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return outcomes


def test_two_aliases_of_one_name_at_once_name_one_entity(url: str) -> None:
    """Each passed the check before the other was committed: one of them
    is refused, every time."""
    with _open(url) as memory:
        memory.remember("Ann Smith and Bob Jones met", entities=["Ann Smith", "Bob Jones"])
        for n in range(12):
            outcomes = _declare_at_once(memory, ["Ann Smith", "Bob Jones"], f"nick {n}")
            assert sorted(outcomes) == ["made", "refused"]


@pytest.mark.slow
def test_an_alias_and_a_write_of_the_same_name_at_once_name_one_entity(url: str) -> None:
    """The write made the name an entity while the alias made it another's alias (each
    passed its check before the other committed: 14 of 80 tries)."""
    with _open(url) as memory:
        memory.remember("Alpha One started", entities=["Alpha One"])
        for n in range(30):
            start = threading.Barrier(2)

            def alias(key: str = f"Zed{n}", gate: threading.Barrier = start) -> None:
                gate.wait()
                with contextlib.suppress(fivefold.InvalidInput):
                    memory.alias("Alpha One", key)

            def write(key: str = f"Zed{n}", gate: threading.Barrier = start) -> None:
                gate.wait()
                memory.remember(f"a note of {key}", entities=[key])

            pair = [threading.Thread(target=alias), threading.Thread(target=write)]
            for thread in pair:
                thread.start()
            for thread in pair:
                thread.join(timeout=30)
    with psycopg.connect(url) as conn:
        both = conn.execute(
            "SELECT a.alias FROM aliases a JOIN entities e ON e.namespace = a.namespace "
            "AND e.norm = a.norm AND e.id <> a.entity_id"
        ).fetchall()
    assert both == []


@pytest.mark.slow
def test_a_stores_migration_holds_back_only_that_store(postgres_server: str) -> None:
    """One lock for the whole database held every store back while one migrated (a reindex
    can take minutes); the lock is per schema now."""
    tag = uuid.uuid4().hex[:8]
    held, other = f"held_{tag}", f"other_{tag}"
    with psycopg.connect(postgres_server, autocommit=True) as lock:
        lock.execute(
            "SELECT pg_advisory_lock(hashtextextended('fivefold schema ' || %s, 0))", (held,)
        )
        opened: list[str] = []

        def open_it(name: str) -> None:
            with _open(_with_path(postgres_server, f"{name},public")):
                opened.append(name)

        waiting = threading.Thread(target=open_it, args=(held,))
        waiting.start()
        open_it(other)  # not held back
        time.sleep(0.5)
        assert opened == [other]
        assert waiting.is_alive()  # its own schema's lock: it waits
        lock.execute(
            "SELECT pg_advisory_unlock(hashtextextended('fivefold schema ' || %s, 0))", (held,)
        )
        waiting.join(timeout=60)
    assert opened == [other, held]


@pytest.mark.slow
def test_reads_after_the_servers_connections_were_cut_succeed(url: str) -> None:
    """After a restart (here: the store's connections terminated, as a restart ends them),
    each idle pooled connection failed its next call: 8 calls in a row. A read that meets one is
    made again once the pool has replaced them."""
    with psycopg.connect(url, autocommit=True) as admin:
        began = admin.execute("SELECT now()").fetchone()[0]
    with _open(url) as memory:
        memory.remember("Priya leads Kestrel")
        _fill_the_pool(memory)
        assert _cut_idle(url, began) >= 2
        for _ in range(10):
            assert memory.recall("who leads Kestrel?").hits
            assert memory.get(1).content == "Priya leads Kestrel"


def _fill_the_pool(memory: Memory) -> None:
    """Six recalls at once: several connections into the pool."""
    start = threading.Barrier(6)

    def busy() -> None:
        start.wait()
        memory.recall("who leads Kestrel?")

    threads = [threading.Thread(target=busy) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)


def _cut_idle(url: str, began: Any) -> int:
    """Terminate this store's idle connections (those started since ``began``), as a restart
    ends them; how many."""
    with psycopg.connect(url, autocommit=True) as admin:
        cut = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND backend_type = 'client backend' AND state = 'idle' "
            "AND backend_start >= %s",  # this store's: not another test's
            (began,),
        ).fetchone()
    assert cut is not None
    return int(cut[0])


@pytest.mark.slow
def test_writes_after_the_servers_connections_were_cut_succeed(url: str) -> None:
    """A write that did not read first (forget, alias) met the dead pooled connections one
    after the other: 7 forgets failed after a restart. A write whose BEGIN
    meets one starts again once the pool has replaced them."""
    with psycopg.connect(url, autocommit=True) as admin:
        began = admin.execute("SELECT now()").fetchone()[0]
    with _open(url) as memory:
        notes = [{"content": f"note {n} about Kestrel"} for n in range(8)]
        ids = [r.id for r in memory.remember_many(notes)]
        _fill_the_pool(memory)
        assert _cut_idle(url, began) >= 2
        for memory_id in ids:
            memory.forget(memory_id)
        memory.alias("Kestrel", "the falcon project")
        assert memory.stats().memories == 0


@pytest.mark.slow
def test_calls_after_an_idle_spell_succeed_under_an_idle_session_timeout(url: str) -> None:
    """With ``idle_session_timeout`` (managed servers, proxies), every call after a pause met a
    connection the server had ended while it idled: reads, writes, all of them. (The ended
    connection's code, 57P05, is what this checks; a write's own retry is the test above's:
    each write here reads first.)"""
    timed = url.replace("options=", "options=-cidle_session_timeout%3D500%20", 1)
    assert timed != url
    with _open(timed) as memory:
        made = memory.remember("Priya leads Kestrel")
        for _ in range(3):
            time.sleep(0.8)
            assert memory.recall("who leads Kestrel?").hits
            time.sleep(0.8)
            memory.remember("another note")
            time.sleep(0.8)
            assert memory.get(made.id).content == "Priya leads Kestrel"


@pytest.mark.slow
def test_a_write_that_times_out_on_a_lock_starts_again(url: str) -> None:
    """``lock_timeout`` rolls a write back as a deadlock does: it is tried again (it was a
    ``StoreError``: 78 of 120 writes of one session with a 5 ms timeout)."""
    with _open(url) as memory:
        memory.remember("the namespace row exists")
    timed = url.replace("options=", "options=-clock_timeout%3D50%20", 1)
    with psycopg.connect(url) as holder, _open(timed) as memory:
        holder.execute("SELECT 1 FROM namespaces WHERE namespace = 'default' FOR UPDATE")
        threading.Timer(0.4, holder.commit).start()  # every write updates that row
        made = memory.remember("written once the row is free")
    with _open(url) as memory:
        assert memory.get(made.id).content == "written once the row is free"


@pytest.mark.slow
def test_doctor_finds_a_column_dropped_or_retyped_by_hand(
    url: str, minilm: fivefold.MiniLMEmbedder
) -> None:
    """Every write failed (``column "importance" does not exist``) while doctor printed only
    ``ok`` lines and exited 0. The tables are compared with those this
    version makes, made afresh as temporary tables and rolled back."""
    from click.testing import CliRunner

    from fivefold.cli.main import cli

    with Memory.open(url, embedder=minilm) as memory:  # the command line's model
        memory.remember("Priya leads Kestrel")
        findings = {f.part: f for f in memory.store.admin.check()}
        assert findings["tables"].ok, findings["tables"]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER TABLE memories DROP COLUMN importance")
        conn.execute("ALTER TABLE aliases ALTER COLUMN alias TYPE varchar(200)")
        conn.execute("DROP TABLE feedback_labels")
        conn.execute("ALTER TABLE memories ALTER COLUMN content DROP NOT NULL")
        conn.execute("ALTER TABLE memories ADD COLUMN extra int NOT NULL DEFAULT 0")
        conn.execute("ALTER TABLE memories ALTER COLUMN extra DROP DEFAULT")
        conn.execute("DROP SEQUENCE fivefold_edge_ids CASCADE")
    with Memory.open(url, embedder=minilm) as memory:
        findings = {f.part: f for f in memory.store.admin.check()}
    assert not findings["tables"].ok
    assert "memories.importance is missing" in findings["tables"].detail
    assert "aliases.alias is character varying(200), not text" in findings["tables"].detail
    assert "table feedback_labels is missing" in findings["tables"].detail
    assert "feedback_labels." not in findings["tables"].detail  # the table once, not each column
    assert "memories.content is not NOT NULL" in findings["tables"].detail
    assert "memories.extra is an added NOT NULL column with no default" in findings["tables"].detail
    assert "sequence fivefold_edge_ids is missing" in findings["tables"].detail
    assert not findings["rows"].ok  # not read from tables that are not whole
    result = CliRunner().invoke(cli, ["--db", url, "doctor"])
    assert result.exit_code == 4, result.output
    assert "problem: tables: differ from the schema: " in result.output
    assert "--repair" not in result.output


@pytest.mark.slow
def test_given_ids_wait_for_a_writer_that_took_ids(url: str) -> None:
    """A copy's given ids were checked against the sequence while another writer, between its
    ``nextval`` and its commit, held one of them: two memories of one id (in two namespaces,
    the key allows it), and the sequence set back under them. The copy now
    waits for such a writer and then sees its ids."""
    from fivefold.store.postgres import write_sql
    from fivefold.store.records import NewMemory
    from fivefold.types import MemoryType

    with _open(url) as memory:
        memory.remember("the first")
        writer = psycopg.connect(url)  # a writer in the middle of its transaction
        writer.execute(write_sql.IDS_SHARED)
        taken = writer.execute("SELECT nextval('fivefold_memory_ids')").fetchone()[0]
        new = NewMemory(
            content="copied under its own id",
            type=MemoryType.FACT,
            predicate=None,
            event_at=None,
            created_at=NOW,
            entities=(),
            importance=0.5,
            scope=Scope("copy"),
            session_id=None,
        )
        outcome: list[BaseException | int] = []

        def copy() -> None:
            try:
                made = memory.store.writes.insert_memories(
                    [new], memory.embedder.embed([new.content]), ids=[taken]
                )
                outcome.append(made[0].id)
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=copy)
        thread.start()
        time.sleep(0.5)
        assert outcome == []  # waits for the writer
        writer.execute(
            "INSERT INTO memories (namespace, id, content, type, created_at, importance, "
            "searched, embedding) SELECT 'other', %s, 'the writer''s', 'fact', 0, 0.5, "
            "searched, embedding FROM memories LIMIT 1",
            (taken,),
        )
        writer.commit()
        writer.close()
        thread.join(timeout=60)
        assert len(outcome) == 1
        assert isinstance(outcome[0], fivefold.InvalidInput), outcome
        assert "below this store's next id" in str(outcome[0])
        assert memory.remember("after both").id > taken


@pytest.mark.slow
def test_a_writer_waits_while_ids_are_given(url: str) -> None:
    """The other side of the ids lock: a write that takes ids from the sequence waits while a
    copy's batch holds it (its ids checked and the sequence moved past them), then takes ids
    above."""
    from fivefold.store.postgres import write_sql

    with _open(url) as memory:
        memory.remember("the first")
        copying = psycopg.connect(url)
        copying.execute(write_sql.IDS_EXCLUSIVE)
        copying.execute("SELECT setval('fivefold_memory_ids', 500, false)")
        made: list[int] = []
        thread = threading.Thread(target=lambda: made.append(memory.remember("waits").id))
        thread.start()
        time.sleep(0.5)
        assert made == []  # waits for the copy's batch
        copying.commit()
        copying.close()
        thread.join(timeout=60)
        assert made == [500]


@pytest.mark.slow
def test_doctor_checks_the_tables_with_pgvector_elsewhere_and_no_right_to_make_schemas(
    postgres_server: str,
) -> None:
    """The tables check made its scratch tables in a schema of its own, on a path of that
    schema and ``public``: with pgvector in another schema (as README allows) it could not
    name the vector type, and a role that may not make schemas could not run it (both
    healthy stores doctor failed, exit 4). Temporary tables on the store's own path now."""
    database = f"doc_{uuid.uuid4().hex[:8]}"
    role = f"r_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {database}")
        conn.execute(f"CREATE ROLE {role} LOGIN")
    owner = _other(postgres_server, database=database)
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA ext")
        conn.execute("CREATE EXTENSION vector SCHEMA ext")
        conn.execute(f"REVOKE CREATE ON DATABASE {database} FROM PUBLIC")
        conn.execute(f"CREATE SCHEMA app AUTHORIZATION {role}")
        conn.execute(f"GRANT USAGE ON SCHEMA ext TO {role}")
    url = _with_path(_other(postgres_server, user=role, database=database), "app,ext")
    with _open(url) as memory:
        memory.remember("Priya leads Kestrel")
        findings = {f.part: f for f in memory.store.admin.check()}
    assert findings["tables"].ok, findings["tables"]
    assert findings["tables"].detail == "match the schema"
    assert all(f.ok for f in findings.values()), findings
