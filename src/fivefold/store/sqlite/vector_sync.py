"""Keeping a namespace's dense index in step with SQLite, the source of truth.

Every change to a searched vector is in ``vector_log`` (written by triggers, schema.py). An
index knows the last log entry it applied (``log_seq``): after writes by this process,
another process or a crash, it applies the entries since then, touching only the memories
they name, and a saved HNSW graph is adopted the same way (patched from the log since it was
saved). The namespace is read whole only when the index is new to this process without a
usable saved graph, or when the log no longer reaches back to the index (pruned, or written by
a version without the log); a final count check catches anything the log missed.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np

from fivefold.config import IndexConfig
from fivefold.store.sqlite import schema
from fivefold.store.sqlite.dense import NamespaceIndex

__all__ = ["catch_up", "has_log", "load_index"]

LOAD_BATCH = 8_192


def has_log(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vector_log'"
    ).fetchone()
    return row is not None


def _changes(conn: sqlite3.Connection, namespace: str, since: int) -> dict[int, bool] | None:
    """Memory id -> deleted, for the entries after ``since``; None when the log does not
    reach back that far."""
    oldest, _ = conn.execute(schema.VECTOR_LOG_BOUNDS).fetchone()
    if oldest and since < oldest - 1:
        return None
    last: dict[int, bool] = {}
    for _, memory_id, deleted in conn.execute(schema.VECTOR_LOG_SINCE, (namespace, since)):
        last[int(memory_id)] = bool(deleted)
    return last


def catch_up(
    conn: sqlite3.Connection, index: NamespaceIndex, namespace: str, expected: int
) -> bool:
    """Apply the log since ``index.log_seq``; False when it cannot (then reload). ``expected``
    is the namespace's memory count, which the caught-up index must hold."""
    changes = _changes(conn, namespace, index.log_seq)
    if changes is None:
        return False
    _apply(conn, index, changes)
    index.log_seq = int(conn.execute(schema.VECTOR_LOG_BOUNDS).fetchone()[1])
    return len(index) == expected


def _apply(conn: sqlite3.Connection, index: NamespaceIndex, changes: dict[int, bool]) -> None:
    for memory_id in changes:
        index.remove(memory_id)
    upserted = [memory_id for memory_id, deleted in changes.items() if not deleted]
    for chunk in range(0, len(upserted), 10_000):
        rows = conn.execute(
            schema.SELECT_SEARCHED_VECTORS, (json.dumps(upserted[chunk : chunk + 10_000]),)
        ).fetchall()
        if rows:
            dim = index.dim
            index.add(
                [int(r[0]) for r in rows],
                np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(-1, dim),
                [r[2] for r in rows],
                [r[3] for r in rows],
                [r[4] for r in rows],
            )


def load_index(
    conn: sqlite3.Connection,
    namespace: str,
    *,
    dim: int,
    config: IndexConfig,
    generation: int,
    saved: Path | None,
    store_id: str,
    logged: bool,
) -> tuple[NamespaceIndex, bool]:
    """The namespace read whole; above the HNSW threshold its saved graph is adopted and
    patched from the log when it can be, else built: then True, for the caller to save it (an
    adopted graph's patches are saved at close)."""
    index = NamespaceIndex(dim, config, generation)
    index.log_seq = int(conn.execute(schema.VECTOR_LOG_BOUNDS).fetchone()[1]) if logged else 0
    held = conn.execute(
        "SELECT memories FROM namespaces WHERE namespace = ?", (namespace,)
    ).fetchone()
    last = conn.execute("SELECT max(id) FROM memories").fetchone()[0]
    most = held is not None and last is not None and 2 * int(held[0]) >= int(last)
    statement = schema.SCAN_NAMESPACE_VECTORS if most else schema.SELECT_NAMESPACE_VECTORS
    expected = int(held[0]) if held is not None else 0
    if expected >= config.hnsw_threshold:
        index.compact()
    # Headroom: the first catch-up after a load must not copy the whole matrix to grow it
    # (for one new memory, a copy that costs far more than a search).
    index.reserve(expected + max(1024, expected // 8))
    # A batch at a time into the index's own matrix: the rows of a million memories held at
    # once, then joined, took three times the matrix (and the heap kept much of it).
    cursor = conn.execute(statement, {"ns": namespace})
    while rows := cursor.fetchmany(LOAD_BATCH):
        index.add(
            [r[0] for r in rows],
            np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(-1, dim),
            [r[2] for r in rows],
            [r[3] for r in rows],
            [r[4] for r in rows],
            auto_hnsw=False,
        )
    large = len(index) >= config.hnsw_threshold
    adopted = (
        large and saved is not None and _adopt(conn, index, namespace, saved, store_id, logged)
    )
    if large and not adopted:
        index.build_hnsw()
        return index, True
    return index, False


def _adopt(
    conn: sqlite3.Connection,
    index: NamespaceIndex,
    namespace: str,
    saved: Path,
    store_id: str,
    logged: bool,
) -> bool:
    """Restore the saved graph and re-add what changed since it was saved."""
    saved_seq = index.load_hnsw(saved, store_id)
    if saved_seq is None:
        return False
    if saved_seq == index.log_seq:
        return index.hnsw_consistent()
    changes = _changes(conn, namespace, saved_seq) if logged else None
    if changes is None:
        index.drop_hnsw()
        return False
    index.patch_hnsw(changes)
    return index.hnsw_consistent()
