"""The SQLite rows behind the session context rules (``store/context.py``)."""

from __future__ import annotations

import sqlite3

import numpy as np

from fivefold.embed.base import Vectors
from fivefold.store import context
from fivefold.store.context import Group, Neighbour, SessionRow, Smoothing

_GROUP = "SELECT namespace, user_id, agent_id, session_id FROM memories WHERE id = ?"
_SIDE = """
SELECT m.id, m.content, v.embedding FROM memories m JOIN vectors v ON v.memory_id = m.id
WHERE m.namespace = ? AND m.user_id = ? AND m.agent_id = ? AND m.session_id = ?
  AND m.id {op} ? ORDER BY m.id {order} LIMIT ?
"""
_BEFORE = _SIDE.format(op="<", order="DESC")
_NEWEST = """
SELECT m.id, m.content, v.embedding, m.context_near, m.context_far
FROM memories m JOIN vectors v ON v.memory_id = m.id
WHERE m.namespace = ? AND m.user_id = ? AND m.agent_id = ? AND m.session_id = ? AND m.id < ?
ORDER BY m.id DESC LIMIT ?
"""
_AFTER = _SIDE.format(op=">", order="ASC")


class SQLiteContextRows:
    def __init__(self, conn: sqlite3.Connection, dim: int) -> None:
        self._conn = conn
        self._dim = dim

    def group_of(self, memory_id: int) -> Group | None:
        row = self._conn.execute(_GROUP, (memory_id,)).fetchone()
        if row is None or row[3] is None:
            return None
        return (str(row[0]), str(row[1]), str(row[2]), str(row[3]))

    def neighbours(
        self, group: Group, memory_id: int, window: int
    ) -> tuple[list[Neighbour], list[Neighbour]]:
        sides = []
        for sql in (_BEFORE, _AFTER):
            rows = self._conn.execute(sql, (*group, memory_id, window)).fetchall()
            sides.append([(int(i), str(c), self._vector(v)) for i, c, v in rows])
        return sides[0], sides[1]

    def newest(self, group: Group, before: int, limit: int) -> list[tuple[int, SessionRow]]:
        """The session's ``limit`` newest rows below id ``before``, in id order."""
        rows = self._conn.execute(_NEWEST, (*group, before, limit)).fetchall()
        return [
            (int(i), SessionRow(str(c), self._vector(v), (str(n), str(f))))
            for i, c, v, n, f in reversed(rows)
        ]

    def context_of(self, memory_id: int) -> tuple[str, str]:
        row = self._conn.execute(
            "SELECT context_near, context_far FROM memories WHERE id = ?", (memory_id,)
        ).fetchone()
        return (str(row[0]), str(row[1]))

    def set_context(
        self, group: Group, memory_id: int, old: tuple[str, str], new: tuple[str, str]
    ) -> None:
        # The lexical index learns of it from the log (a trigger on these columns).
        if old != new:
            self._conn.execute(
                "UPDATE memories SET context_near = ?, context_far = ? WHERE id = ?",
                (*new, memory_id),
            )

    def own_vector(self, memory_id: int) -> Vectors:
        row = self._conn.execute(
            "SELECT embedding FROM vectors WHERE memory_id = ?", (memory_id,)
        ).fetchone()
        return self._vector(row[0])

    def set_searched(self, memory_id: int, vector: Vectors | None) -> None:
        blob = None if vector is None else np.asarray(vector, np.float32).tobytes()
        self._conn.execute("UPDATE vectors SET context = ? WHERE memory_id = ?", (blob, memory_id))

    def rebuild_all(self, smoothing: Smoothing) -> None:
        """Recompute every session memory's context (schema migration, changed smoothing)."""
        rows = self._conn.execute(
            "SELECT id FROM memories WHERE session_id IS NOT NULL ORDER BY id"
        )
        context.refresh(self, [int(r[0]) for r in rows.fetchall()], smoothing)

    def _vector(self, blob: bytes) -> Vectors:
        return np.frombuffer(blob, dtype=np.float32).reshape(self._dim)
