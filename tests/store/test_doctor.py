"""``fivefold doctor``: a clean store passes; a lexical index out of step with the rows (and
not caught on open: its count agrees) and a damaged saved graph are found, and ``--repair``
rebuilds them from the rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tantivy
from click.testing import CliRunner

import fivefold
from fivefold import Memory, Scope
from fivefold.cli.main import cli
from fivefold.config import Config, IndexConfig
from fivefold.read.retrieve.lexical import DEFAULT_WEIGHTS as W
from fivefold.store.scoring import EntityScore, mentions

HNSW = Config(index=IndexConfig(hnsw_threshold=100))


def _store(path: Path) -> list[fivefold.MemoryRecord]:
    rng = np.random.default_rng(3)
    with Memory.open(path, embedder=fivefold.HashingEmbedder(dim=16), config=HNSW) as memory:
        records = memory.remember_many(
            [
                {"content": f"turn {i} about kestrel", "session_id": "s1", "vector": v}
                for i, v in enumerate(rng.standard_normal((150, 16)).tolist())
            ]
        )
        memory.store.search.vector_search(Scope(), np.ones((1, 16), dtype=np.float32) / 4, 3)
    return records


def _doctor(path: Path, *args: str) -> tuple[int, str]:
    # The CLI opens the store with the default model: check it with the store's own.
    result = CliRunner().invoke(cli, ["--db", str(path), "doctor", *args])
    return result.exit_code, result.output


def _check(path: Path, repair: bool = False) -> list[fivefold.types.Finding]:
    with Memory.open(path, embedder=fivefold.HashingEmbedder(dim=16), config=HNSW) as memory:
        return memory.store.admin.check(repair=repair)


def test_a_clean_store_passes(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    _store(path)
    findings = _check(path)
    assert all(f.ok for f in findings), findings
    parts = {f.part for f in findings}
    assert {"database", "lexical index of namespace 'default'"} <= parts
    assert "dense index of namespace 'default'" in parts
    assert "saved HNSW graph of namespace 'default'" in parts


def _swap_in_lexical_index(path: Path, lost: int, stranger: int) -> None:
    """The index on disk loses one memory and holds one the rows do not (as a copy of another
    store's folder would): the count still agrees, the contents do not."""
    (folder,) = [p for p in Path(f"{path}.lexical").iterdir() if p.is_dir()]
    index = tantivy.Index.open(str(folder))
    writer = index.writer(15_000_000, 1)
    writer.delete_documents_by_query(tantivy.Query.term_query(index.schema, "id", lost))
    document = tantivy.Document()
    document.add_unsigned("id", stranger)
    document.add_text("content", "stranger")
    writer.add_document(document)
    writer.commit()
    writer.wait_merging_threads()


def test_a_lexical_index_out_of_step_is_found_and_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    records = _store(path)
    lost = records[42]
    _swap_in_lexical_index(path, lost.id, 10_000)
    findings = {f.part: f for f in _check(path)}
    assert not findings["lexical index of namespace 'default'"].ok
    repaired = {f.part: f for f in _check(path, repair=True)}
    assert repaired["lexical index of namespace 'default'"].repaired
    assert repaired["lexical index of namespace 'default'"].ok
    with Memory.open(path, embedder=fivefold.HashingEmbedder(dim=16), config=HNSW) as memory:
        found = memory.store.search.lexical_search(Scope(), ["turn", "42"], 5, weights=W)
    assert lost.id in {i for i, _ in found}


def test_a_damaged_saved_graph_is_found_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    _store(path)
    graph = next((tmp_path / "m.db.vindex").glob("*.usearch"))
    data = bytearray(graph.read_bytes())
    for at in range(200, len(data), 97):
        data[at] ^= 0xFF
    graph.write_bytes(bytes(data))
    findings = {f.part: f for f in _check(path)}
    assert not findings["saved HNSW graph of namespace 'default'"].ok
    repaired = {f.part: f for f in _check(path, repair=True)}
    assert repaired["saved HNSW graph of namespace 'default'"].repaired
    # Removed, then built again from the rows by the dense check that followed.
    assert all(f.ok for f in _check(path))


@pytest.mark.slow
def test_the_command_prints_one_line_per_part_and_exits_by_outcome(tmp_path: Path) -> None:
    path = tmp_path / "cli.db"
    with Memory.open(path) as memory:  # the default model, as the command opens it
        memory.remember("Priya recommended Postgres for Kestrel")
    code, out = _doctor(path)
    assert code == 0, out
    assert out.count("ok: ") >= 3
    _swap_in_lexical_index(path, 1, 10_000)
    code, out = _doctor(path)
    assert code == 4
    assert "problem: lexical index of namespace 'default'" in out
    code, out = _doctor(path, "--repair")
    assert code == 0, out
    assert "repaired: lexical index of namespace 'default'" in out


def test_a_mention_of_another_type_than_its_memorys_is_found_and_retyped(tmp_path: Path) -> None:
    """The type is in a mention's key (schema 6): one that is not its memory's is missed by
    every read of its entity."""
    path = tmp_path / "m.db"
    with Memory.open(path, embedder=fivefold.HashingEmbedder(dim=16)) as memory:
        made = memory.remember("Dana Lee joined Kestrel", entities=["Dana Lee", "Kestrel"])
        memory.store._core.conn.execute(  # type: ignore[attr-defined]
            "UPDATE mentions SET type = '' WHERE memory_id = ?", (made.id,)
        )

    def types(findings: list[fivefold.types.Finding]) -> fivefold.types.Finding:
        return next(f for f in findings if f.part == "mentions' memory types")

    def read(memory: Memory) -> list[int]:  # the graph leg's read of Dana Lee's mentions
        (entity,) = [e for e in memory.store.reads.catalog("default") if e.name == "Dana Lee"]
        dana = EntityScore(entity_id=entity.entity_id, score=0.9, hops=0, rarity=1.0)
        return [hit.memory_id for hit in mentions(memory.store.search, Scope(), [dana], 10)]

    with Memory.open(path, embedder=fivefold.HashingEmbedder(dim=16)) as memory:
        assert read(memory) == []
        assert not types(memory.store.admin.check()).ok
        assert "2 mentions" in types(memory.store.admin.check()).detail
        assert types(memory.store.admin.check(repair=True)).repaired
        assert types(memory.store.admin.check()).ok
        assert read(memory) == [made.id]
        # A mistyped twin of a well-typed mention: retyped, it broke the key and the whole
        # repair failed; it goes.
        memory.store._core.conn.execute(  # type: ignore[attr-defined]
            "INSERT INTO mentions (entity_id, type, memory_id, joined) "
            "SELECT entity_id, 'preference', memory_id, joined FROM mentions WHERE memory_id = ?",
            (made.id,),
        )
        assert "2 mentions" in types(memory.store.admin.check()).detail
        assert all(f.ok for f in memory.store.admin.check(repair=True))
        assert read(memory) == [made.id]
