"""The dense index's two modes on real usearch graphs: below the threshold, exact float32 search
(what every small store ranks with); above it, a half-precision copy and an i8 or f16 graph
whose candidates are re-scored exactly. Checked against numpy's exact search: recall, scores,
filters, deletes, and a graph saved, reloaded and rebuilt when the setting changes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import fivefold
from fivefold import Memory, Scope
from fivefold.config import Config, GraphVectors, IndexConfig
from fivefold.store.sqlite.dense import NamespaceIndex

DIM = 48
COUNT = 3_000
Matrix = npt.NDArray[np.float32]


def _clustered(count: int, seed: int = 3) -> Matrix:
    """Unit vectors in 30 tight clusters: near neighbours differ in the last digits, where a
    coarse graph orders them wrongly."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((30, DIM)).astype(np.float32)
    rows = centers[rng.integers(0, 30, count)] + 0.35 * rng.standard_normal((count, DIM))
    rows = rows.astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _queries(count: int) -> Matrix:
    base = _clustered(count, seed=11)
    return np.asarray(base, dtype=np.float32)


def _exact(matrix: Matrix, ids: npt.NDArray[np.int64], query: Matrix, k: int) -> list[int]:
    sims = matrix @ query
    order = np.lexsort((ids, -sims))[:k]
    return [int(ids[i]) for i in order]


def _index(vectors: GraphVectors, threshold: int = 1_000) -> NamespaceIndex:
    config = IndexConfig(hnsw_threshold=threshold, hnsw_vectors=vectors)
    return NamespaceIndex(DIM, config)


def _fill(index: NamespaceIndex, matrix: Matrix) -> npt.NDArray[np.int64]:
    ids = np.arange(1, len(matrix) + 1, dtype=np.int64)
    users = [f"u{i % 3}" for i in range(len(matrix))]
    types = ["fact" if i % 7 else "event" for i in range(len(matrix))]
    index.add(ids.tolist(), matrix, users, ["a"] * len(matrix), types)
    return ids


@pytest.mark.parametrize("vectors", list(GraphVectors))
def test_the_graph_finds_what_exact_search_finds(vectors: GraphVectors) -> None:
    matrix = _clustered(COUNT)
    index = _index(vectors)
    ids = _fill(index, matrix)
    assert index.uses_hnsw
    queries = _queries(60)
    found = index.search(queries, 10, user=None, agent=None)
    shares = []
    for query, hits in zip(queries, found, strict=True):
        truth = _exact(matrix, ids, query, 10)
        shares.append(len({i for i, _ in hits} & set(truth)) / 10)
        # Scores are cosines re-computed from the half-precision copy, not the graph's.
        for memory_id, score in hits:
            assert score == pytest.approx(float(matrix[memory_id - 1] @ query), abs=2e-3)
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert np.mean(shares) >= 0.98


def test_below_the_threshold_search_stays_exact_float32() -> None:
    matrix = _clustered(500)
    index = _index(GraphVectors.I8)
    ids = _fill(index, matrix)
    assert not index.uses_hnsw
    for query in _queries(20):
        hits = index.search(query[None, :], 10, user=None, agent=None)[0]
        assert [i for i, _ in hits] == _exact(matrix, ids, query, 10)
        expected = [float(matrix[i - 1] @ query) for i, _ in hits]
        assert [s for _, s in hits] == pytest.approx(expected, abs=1e-6)


def test_filters_deletes_and_the_exact_subset_agree_with_numpy() -> None:
    matrix = _clustered(COUNT)
    index = _index(GraphVectors.I8)
    ids = _fill(index, matrix)
    removed = set(range(1, COUNT + 1, 5))
    for memory_id in removed:
        assert index.remove(memory_id)
    users = np.array([i % 3 for i in range(COUNT)])
    events = np.array([i % 7 == 0 for i in range(COUNT)])
    alive = np.array([int(i) not in removed for i in ids])
    for query in _queries(20):
        everyone = index.search(query[None, :], 10, user=None, agent=None)[0]
        assert not {i for i, _ in everyone} & removed
        # A small admitted subset (about 290 events of user u1) is scanned exactly.
        hits = index.search(query[None, :], 10, user="u1", agent=None, types=["event"])[0]
        keep = alive & (users == 1) & events
        assert [i for i, _ in hits] == _exact(matrix[keep], ids[keep], query, 10)


def _store(path: Path, vectors: GraphVectors) -> Memory:
    config = Config(index=IndexConfig(hnsw_threshold=1_000, hnsw_vectors=vectors))
    return Memory.open(path, embedder=fivefold.HashingEmbedder(dim=DIM), config=config)


def _nearest(memory: Memory, queries: Matrix) -> list[list[int]]:
    found = memory.store.search.vector_search(Scope(), queries, 10)
    return [[i for i, _ in hits] for hits in found]


def _saved_meta(path: Path) -> dict[str, object]:
    (meta,) = Path(str(path) + ".vindex").glob("*.json")
    loaded: dict[str, object] = json.loads(meta.read_text(encoding="utf-8"))
    return loaded


def test_a_saved_graph_is_reloaded_patched_and_rebuilt_for_another_setting(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.db"
    matrix = _clustered(COUNT)
    queries = _queries(30)
    with _store(db, GraphVectors.I8) as memory:
        items = [{"content": f"note {i}", "vector": v.tolist()} for i, v in enumerate(matrix)]
        records = memory.remember_many(items)
        before = _nearest(memory, queries)
    assert _saved_meta(db)["vectors"] == "i8"
    gone = {records[i].id for i in range(0, COUNT, 4)}
    (graph,) = Path(str(db) + ".vindex").glob("*.usearch")
    saved_at = graph.stat().st_mtime_ns
    with _store(db, GraphVectors.I8) as memory:
        assert _nearest(memory, queries) == before
        assert graph.stat().st_mtime_ns == saved_at  # adopted, not built again
        for memory_id in gone:
            memory.forget(memory_id)
        after = _nearest(memory, queries)
    assert all(not set(hits) & gone for hits in after)
    with _store(db, GraphVectors.I8) as memory:
        assert _nearest(memory, queries) == after  # the deletes were saved or caught up
    with _store(db, GraphVectors.F16) as memory:
        rebuilt = _nearest(memory, queries)
    assert _saved_meta(db)["vectors"] == "f16"
    ids = np.array([r.id for r in records], dtype=np.int64)
    alive = np.array([int(i) not in gone for i in ids])
    truth = [_exact(matrix[alive], ids[alive], q, 10) for q in queries]
    for found in (after, rebuilt):
        shares = [len(set(f) & set(t)) / 10 for f, t in zip(found, truth, strict=True)]
        assert np.mean(shares) >= 0.98
