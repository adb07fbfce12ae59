"""The SQLite rows behind the session context rules (``store/context.py``)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

import numpy as np

from fivefold.embed.base import Vectors
from fivefold.store.shared import context
from fivefold.store.shared.context import (
    Group,
    Neighbour,
    SessionRow,
    Smoothing,
    group_from_row,
    neighbour_rows,
)

_GROUP = "SELECT namespace, user_id, agent_id, session_id FROM memories WHERE id = ?"
_SIDE = """
SELECT m.id, m.content, v.embedding FROM memories m JOIN vectors v ON v.memory_id = m.id
WHERE m.namespace = ? AND m.user_id = ? AND m.agent_id = ? AND m.session_id = ?
  AND m.id {op} ? ORDER BY m.id {order} LIMIT ?
"""
_BEFORE = _SIDE.format(op="<", order="DESC")
# Per (session, id) wanted, the session's newest rows below that id: one statement for a
# batch's hundreds of sessions, each an index range read backwards (memories_session ends in
# the rowid).
_NEWEST = """
WITH wanted(k, ns, usr, agt, ses, below) AS (
    SELECT key, json_extract(value, '$[0]'), json_extract(value, '$[1]'),
           json_extract(value, '$[2]'), json_extract(value, '$[3]'), json_extract(value, '$[4]')
    FROM json_each(:wanted)
)
SELECT w.k, m.id, m.content, v.embedding, m.context_near, m.context_far
FROM wanted w
JOIN memories m ON m.id IN (
    SELECT id FROM memories
    WHERE namespace = w.ns AND user_id = w.usr AND agent_id = w.agt AND session_id = w.ses
      AND id < w.below
    ORDER BY id DESC LIMIT :limit
)
JOIN vectors v ON v.memory_id = m.id
"""
_AFTER = _SIDE.format(op=">", order="ASC")


class SQLiteContextRows:
    def __init__(self, conn: sqlite3.Connection, dim: int) -> None:
        self._conn = conn
        self._dim = dim

    def group_of(self, memory_id: int) -> Group | None:
        return group_from_row(self._conn.execute(_GROUP, (memory_id,)).fetchone())

    def neighbours(
        self, group: Group, memory_id: int, window: int
    ) -> tuple[list[Neighbour], list[Neighbour]]:
        before, after = (
            neighbour_rows(self._conn.execute(sql, (*group, memory_id, window)), self._vector)
            for sql in (_BEFORE, _AFTER)
        )
        return before, after

    def newest(
        self, wanted: Sequence[tuple[Group, int]], limit: int
    ) -> dict[Group, list[tuple[int, SessionRow]]]:
        """For each (session, id) wanted, the session's ``limit`` newest rows below that id, in
        id order."""
        out: dict[Group, list[tuple[int, SessionRow]]] = {}
        if not wanted:
            return out
        spec = json.dumps([[*group, before] for group, before in wanted])
        for k, i, c, v, n, f in self._conn.execute(_NEWEST, {"wanted": spec, "limit": limit}):
            row = (int(i), SessionRow(str(c), self._vector(v), (str(n), str(f))))
            out.setdefault(wanted[int(k)][0], []).append(row)
        for rows in out.values():
            rows.sort(key=lambda r: r[0])  # sorting a few rows here is cheaper than in SQL
        return out

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
