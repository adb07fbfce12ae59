"""The embedded store's feedback and learned models, per namespace."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime

from fivefold.store.records import Feedback
from fivefold.store.shared.notes import labels_found
from fivefold.store.shared.rows import feedback_entries
from fivefold.store.shared.timeconv import to_ts
from fivefold.store.shared.translate import Role
from fivefold.store.sqlite import schema
from fivefold.store.sqlite.core import Core
from fivefold.store.sqlite.schema import BY_ID


class SQLiteModels(Role[Core]):
    def add_feedback(
        self,
        namespace: str,
        query: str,
        args: str,
        labels: Mapping[int, float],
        created_at: datetime,
    ) -> int:
        conn = self._core.conn
        with self._core.transaction():
            ids = json.dumps(sorted(labels))
            found = conn.execute(f"SELECT id FROM memories WHERE {BY_ID}", (namespace, ids))
            labels_found(labels, (int(r[0]) for r in found))
            row = conn.execute(
                schema.INSERT_FEEDBACK, (namespace, query, args, to_ts(created_at))
            ).fetchone()
            conn.executemany(
                schema.INSERT_LABEL, [(row[0], int(i), float(v)) for i, v in sorted(labels.items())]
            )
        return int(row[0])

    def feedback(self, namespace: str) -> list[Feedback]:
        rows = self._core.rows(schema.SELECT_FEEDBACK, (namespace,))
        return feedback_entries(rows)

    def save_model(
        self, namespace: str, payload: str, *, accepted: bool, user_id: str | None = None
    ) -> int:
        now = to_ts(datetime.now().astimezone())
        conn = self._core.conn
        with self._core.transaction():
            row = conn.execute(
                schema.INSERT_MODEL,
                (namespace, int(accepted), now, payload, user_id or "", namespace),
            ).fetchone()
            # The next recall of the namespace sees the new model (readers cache by generation).
            conn.execute(schema.BUMP_NAMESPACE, (namespace, 0, 0))
        return int(row[0])

    def learned_model(self, namespace: str, user_id: str | None = None) -> tuple[int, str] | None:
        row = self._core.row(schema.SELECT_MODEL, (namespace, user_id or ""))
        return None if row is None else (int(row[0]), str(row[1]))

    def model_users(self, namespace: str) -> list[str]:
        rows = self._core.rows(schema.SELECT_MODEL_USERS, (namespace,))
        return [str(r[0]) for r in rows]
