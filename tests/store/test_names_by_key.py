"""A small write links the names of its namespace it mentions by reading them by key (the
(namespace, key) index of names and aliases), not the whole catalog: every relation to a new
entity changes the catalog, and the next write read all 10,000 names of a hub's namespace
again (~50 ms a relation)."""

from __future__ import annotations

import pytest

import fivefold
from fivefold import Memory
from fivefold.store.sqlite import schema as sqlite_schema


def _catalog_unread(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(namespace: str) -> None:
        raise AssertionError(f"the whole catalog of {namespace!r} was read")

    monkeypatch.setattr(memory.store.reads, "catalog", refused)


def test_a_small_write_links_known_names_and_aliases_without_the_catalog(
    hashing_mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(50):
        hashing_mem.relate("Hub", "knows", f"Person{n}", record=False)
    hashing_mem.alias("Priya Patel", "priya")
    hashing_mem.alias("Project Kestrel", "kestrel")
    _catalog_unread(hashing_mem, monkeypatch)
    record = hashing_mem.remember("priya reviewed the kestrel design with person7")
    assert sorted(record.entities) == ["Person7", "Priya Patel", "Project Kestrel"]
    edge = hashing_mem.relate("Hub", "knows", "Person51")  # a new name, and its fact
    assert edge.target == "Person51"
    batch = hashing_mem.remember_many([{"content": "Hub met priya"}, {"content": "Kestrel"}])
    assert [sorted(r.entities) for r in batch] == [["Hub", "Priya Patel"], ["Project Kestrel"]]


def test_names_by_key_reads_names_and_aliases_with_the_canonical_name(
    hashing_mem: Memory,
) -> None:
    hashing_mem.relate("Sarah Chen", "manages", "Tom", record=False)
    hashing_mem.alias("Sarah Chen", "sarah")
    found = hashing_mem.store.reads.names_by_key("default", ["sarah", "sarah chen", "tom", "x"])
    assert sorted((e.key, e.name, e.is_alias) for e in found) == [
        ("sarah", "Sarah Chen", True),
        ("sarah chen", "Sarah Chen", False),
        ("tom", "Tom", False),
    ]
    assert [e.is_alias for e in found] == sorted(e.is_alias for e in found)  # aliases last
    assert hashing_mem.store.reads.names_by_key("other", ["sarah"]) == []
    assert hashing_mem.store.reads.names_by_key("default", []) == []


def test_a_users_write_links_only_names_its_scope_carries(hashing_mem: Memory) -> None:
    hashing_mem.remember("Zephyrine joined the team", user_id="alice")
    record = hashing_mem.remember("zephyrine called", user_id="bob")
    assert record.entities == ()  # a lowercase name only alice's memories carry stays unknown
    assert hashing_mem.remember("zephyrine called", user_id="alice").entities == ("Zephyrine",)


def test_the_sqlite_statement_probes_the_key_indexes() -> None:
    with Memory.open(":memory:", embedder=fivefold.HashingEmbedder(dim=16)) as memory:
        conn = memory.store._core.conn  # type: ignore[attr-defined]
        plan = conn.execute(
            "EXPLAIN QUERY PLAN " + sqlite_schema.SELECT_NAMES_BY_KEY,
            {"ns": "default", "keys": '["sarah", "tom"]'},
        ).fetchall()
    details = [str(row[-1]) for row in plan]
    searched = [d for d in details if d.startswith("SEARCH")]
    assert any("entities USING INDEX" in d and "norm=?" in d for d in searched), details
    assert any(d.startswith("SEARCH a USING") and "norm=?" in d for d in searched), details
    assert not [d for d in details if d.startswith("SCAN") and "json_each" not in d], details


def test_the_postgres_statement_probes_the_key_indexes(pg_url: str) -> None:
    import psycopg

    from fivefold.store.postgres.reads import _NAMES_BY_KEY

    with Memory.open(pg_url, embedder=fivefold.HashingEmbedder(dim=16)) as memory:
        memory.relate("Sarah Chen", "manages", "Tom", record=False)
    with psycopg.connect(pg_url) as conn:
        conn.execute("SET enable_seqscan = off")  # a table this small is cheaper read whole
        rows = conn.execute(
            "EXPLAIN " + _NAMES_BY_KEY, {"ns": "default", "keys": ["sarah", "tom"]}
        ).fetchall()
    plan = " ".join(str(r[0]) for r in rows)
    assert "Seq Scan" not in plan, plan
    assert "Index" in plan, plan
    assert "on entities" in plan, plan
    assert "on aliases" in plan, plan
