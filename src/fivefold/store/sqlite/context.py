"""Session context: a memory of a session knows its neighbours.

A conversation turn indexed alone has lost the context its meaning lives in ("Yes! Last Friday."
answers the turn before it). So each memory that has a ``session_id`` carries, as derived
columns, the text of its session neighbours at distance 1 (``context_near``) and 2
(``context_far``), which BM25 scores at lower column weights, and a searched embedding smoothed
with its neighbours' (``own + sum_d w_d x neighbours at distance d``, re-normalised). Neighbours
are the memories of the same namespace, user, agent and session in write order (id order), so
context never crosses a scope. Memories without a session get none: consecutive writes of
unrelated facts are not a conversation. A memory's own content never changes; only these
derived columns do, when a neighbour is written or forgotten.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from fivefold.embed.base import Vectors
from fivefold.store.sqlite.lexical import LexicalTables

MAX_WINDOW = 2  # distance 1 and 2 have columns of their own; a whole session measured worse

_GROUP = "SELECT namespace, user_id, agent_id, session_id FROM memories WHERE id = ?"
_SIDE = """
SELECT m.id, m.content, v.embedding FROM memories m JOIN vectors v ON v.memory_id = m.id
WHERE m.namespace = ? AND m.user_id = ? AND m.agent_id = ? AND m.session_id = ?
  AND m.id {op} ? ORDER BY m.id {order} LIMIT ?
"""
_BEFORE = _SIDE.format(op="<", order="DESC")
_AFTER = _SIDE.format(op=">", order="ASC")
_ROW = "SELECT context_near, context_far FROM memories WHERE id = ?"
_SET_TEXT = "UPDATE memories SET context_near = ?, context_far = ? WHERE id = ?"
_SET_VECTOR = "UPDATE vectors SET context = ? WHERE memory_id = ?"

Group = tuple[str, str, str, str]
Neighbour = tuple[int, str, bytes]


@dataclass(frozen=True, slots=True)
class Smoothing:
    """How far a memory's context reaches (0: no context; at most ``MAX_WINDOW``) and the
    weights of the neighbours at distance 1 and 2 in the searched embedding (0 = off)."""

    window: int
    near: float
    far: float

    @property
    def active(self) -> bool:
        return self.window > 0 and (self.near > 0.0 or self.far > 0.0)


def group_of(conn: sqlite3.Connection, memory_id: int) -> Group | None:
    row = conn.execute(_GROUP, (memory_id,)).fetchone()
    if row is None or row[3] is None:
        return None
    return (str(row[0]), str(row[1]), str(row[2]), str(row[3]))


def neighbours(
    conn: sqlite3.Connection, group: Group, memory_id: int, window: int = MAX_WINDOW
) -> tuple[list[Neighbour], list[Neighbour]]:
    """The ``window`` memories before (nearest first) and after (nearest first) ``memory_id``."""
    before = conn.execute(_BEFORE, (*group, memory_id, window)).fetchall()
    after = conn.execute(_AFTER, (*group, memory_id, window)).fetchall()
    return before, after


def affected_by_insert(
    conn: sqlite3.Connection, group: Group, new_ids: Sequence[int], window: int
) -> list[int]:
    """New memories are the newest of their session: they and the ``window`` before them
    change."""
    before, _ = neighbours(conn, group, min(new_ids), window)
    return [int(row[0]) for row in before] + list(new_ids)


def refresh(
    conn: sqlite3.Connection,
    ids: Iterable[int],
    *,
    dim: int,
    smoothing: Smoothing,
    lexical: LexicalTables,
) -> dict[int, Vectors]:
    """Recompute the context columns (and the namespace's context FTS entry) of each memory in
    ``ids``; return the searched embedding of each, for the dense index."""
    searched: dict[int, Vectors] = {}
    for memory_id in dict.fromkeys(ids):
        group = group_of(conn, memory_id)
        if group is None:
            continue
        before, after = neighbours(conn, group, memory_id, smoothing.window)
        at: dict[int, list[Neighbour]] = {1: [], 2: []}  # distance -> neighbours
        for side in (before, after):
            for distance, row in enumerate(side, start=1):
                at[distance].append(row)
        near = "\n".join(str(r[1]) for r in at[1])
        far = "\n".join(str(r[1]) for r in at[2])
        old = conn.execute(_ROW, (memory_id,)).fetchone()
        if (old[0], old[1]) != (near, far):
            namespace = group[0]
            if old[0] or old[1]:
                lexical.delete_context(namespace, memory_id, old[0], old[1])
            conn.execute(_SET_TEXT, (near, far, memory_id))
            if near or far:
                lexical.insert_context(namespace, memory_id, near, far)
        own = conn.execute("SELECT embedding FROM vectors WHERE memory_id = ?", (memory_id,))
        vector = _smoothed(own.fetchone()[0], at[1], at[2], dim, smoothing)
        conn.execute(_SET_VECTOR, (None if vector is None else vector.tobytes(), memory_id))
        if vector is not None:
            searched[memory_id] = vector
    return searched


def _smoothed(
    own: bytes,
    near: Sequence[Neighbour],
    far: Sequence[Neighbour],
    dim: int,
    smoothing: Smoothing,
) -> Vectors | None:
    if not smoothing.active or not (near or far):
        return None
    total = np.frombuffer(own, dtype=np.float32).astype(np.float64)
    for weight, rows in ((smoothing.near, near), (smoothing.far, far)):
        for row in rows:
            total += weight * np.frombuffer(row[2], dtype=np.float32).reshape(dim)
    norm = float(np.linalg.norm(total))
    if norm == 0.0:
        return None
    return (total / norm).astype(np.float32)


def rebuild_all(
    conn: sqlite3.Connection, *, dim: int, smoothing: Smoothing, lexical: LexicalTables
) -> None:
    """Recompute every session memory's context (schema migration, changed smoothing)."""
    rows = conn.execute("SELECT id FROM memories WHERE session_id IS NOT NULL ORDER BY id")
    ids = [int(r[0]) for r in rows.fetchall()]
    refresh(conn, ids, dim=dim, smoothing=smoothing, lexical=lexical)


__all__ = ["MAX_WINDOW", "Smoothing", "affected_by_insert", "group_of", "neighbours", "refresh"]
