"""The Postgres store's feedback and learned models, per namespace."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import psycopg

from fivefold.store.postgres import schema
from fivefold.store.postgres.context_rows import Deltas
from fivefold.store.postgres.core import Core
from fivefold.store.postgres.write_rows import no_nul
from fivefold.store.records import Feedback
from fivefold.store.shared.notes import labels_found
from fivefold.store.shared.rows import feedback_entries
from fivefold.store.shared.timeconv import to_ts
from fivefold.store.shared.translate import Role


class PostgresModels(Role[Core]):
    def add_feedback(
        self,
        namespace: str,
        query: str,
        args: str,
        labels: Mapping[int, float],
        created_at: datetime,
    ) -> int:
        no_nul(None, query=query, args=args)

        def run(conn: psycopg.Connection, deltas: Deltas) -> int:
            # Locked until the commit: a forget of one waits for this write, whose label it
            # then deletes, or this one for the forget, after which the memory is not found.
            found = conn.execute(
                "SELECT id FROM memories WHERE namespace = %s AND id = ANY(%s::bigint[]) "
                "FOR KEY SHARE",
                (namespace, sorted(labels)),
            )
            labels_found(labels, (int(r[0]) for r in found))
            row = conn.execute(
                "INSERT INTO feedback (namespace, query, args, created_at) "
                "VALUES (%s, %s, %s, %s) RETURNING id",
                (namespace, query, args, to_ts(created_at)),
            ).fetchone()
            feedback_id = int(row[0]) if row else 0
            ordered = sorted(labels.items())
            conn.execute(
                "INSERT INTO feedback_labels (namespace, feedback_id, memory_id, label) "
                "SELECT %s, %s, t.m, t.l FROM unnest(%s::bigint[], %s::float8[]) AS t(m, l) "
                "ON CONFLICT (namespace, feedback_id, memory_id) "
                "DO UPDATE SET label = excluded.label",
                (
                    namespace,
                    feedback_id,
                    [int(i) for i, _ in ordered],
                    [float(v) for _, v in ordered],
                ),
            )
            return feedback_id

        return self._core.write(run)

    def feedback(self, namespace: str) -> list[Feedback]:
        rows = self._core.rows(
            "SELECT f.id, f.query, f.args, f.created_at, l.memory_id, l.label FROM feedback f "
            "LEFT JOIN feedback_labels l ON l.namespace = f.namespace AND l.feedback_id = f.id "
            "WHERE f.namespace = %s ORDER BY f.id, l.memory_id",
            (namespace,),
        )
        return feedback_entries(rows)

    def save_model(
        self, namespace: str, payload: str, *, accepted: bool, user_id: str | None = None
    ) -> int:
        no_nul(None, user_id=user_id or "")

        def run(conn: psycopg.Connection, deltas: Deltas) -> int:
            # One version at a time per namespace: the next number is taken under a lock.
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s::int, hashtext(%s))",
                (schema.MODEL_LOCK, namespace),
            )
            row = conn.execute(
                "INSERT INTO models (namespace, version, accepted, created_at, payload, user_id) "
                "SELECT %s, coalesce(max(version), 0) + 1, %s, %s, %s, %s FROM models "
                "WHERE namespace = %s RETURNING version",
                (
                    namespace,
                    accepted,
                    to_ts(datetime.now().astimezone()),
                    payload,
                    user_id or "",
                    namespace,
                ),
            ).fetchone()
            deltas.memories[namespace] += 0  # the namespace's generation moves: readers reload
            return int(row[0]) if row else 0

        return self._core.write(run)

    def learned_model(self, namespace: str, user_id: str | None = None) -> tuple[int, str] | None:
        row = self._core.row(
            "SELECT version, payload FROM models WHERE namespace = %s AND user_id = %s "
            "AND accepted ORDER BY version DESC LIMIT 1",
            (namespace, user_id or ""),
        )
        return None if row is None else (int(row[0]), str(row[1]))

    def model_users(self, namespace: str) -> list[str]:
        rows = self._core.rows(
            "SELECT DISTINCT user_id FROM models WHERE namespace = %s AND user_id <> '' "
            "AND accepted ORDER BY user_id",
            (namespace,),
        )
        return [str(r[0]) for r in rows]
