"""The Postgres rows behind the session context rules (``store/context.py``), inside one write
transaction. Document-frequency and namespace changes are gathered and applied at the end, in
sorted order (``Deltas.flush``), so concurrent writers lock shared rows in the same order."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import psycopg

from fivefold.embed.base import Vectors
from fivefold.store.context import Group, Neighbour
from fivefold.store.postgres import schema
from fivefold.store.postgres.tokens import Counted, Tokenizer

_GROUP = (
    "SELECT namespace, user_id, agent_id, session_id FROM memories WHERE namespace = %s AND id = %s"
)
_SIDE = """
SELECT id, content, embedding FROM memories
WHERE namespace = %s AND user_id = %s AND agent_id = %s AND session_id = %s
  AND id {op} %s ORDER BY id {order} LIMIT %s
"""
_BEFORE = _SIDE.format(op="<", order="DESC")
_AFTER = _SIDE.format(op=">", order="ASC")


@dataclass
class Deltas:
    """Per namespace: document-frequency changes by (field, term), and the namespace's counts."""

    terms: dict[tuple[str, int], Counter[str]] = field(default_factory=dict)
    memories: Counter[str] = field(default_factory=Counter)
    own_tokens: Counter[str] = field(default_factory=Counter)
    context_docs: Counter[str] = field(default_factory=Counter)
    context_tokens: Counter[str] = field(default_factory=Counter)

    def add_terms(self, namespace: str, kind: int, terms: set[str], sign: int) -> None:
        counter = self.terms.setdefault((namespace, kind), Counter())
        for term in terms:
            counter[term] += sign

    def flush(self, conn: psycopg.Connection) -> bool:
        """Apply the deltas; True when a namespace grew across a power of two (from
        ``schema.ANALYZE_FROM``): time to refresh the planner's statistics."""
        for (namespace, kind), counter in sorted(self.terms.items()):
            changed = sorted((t, n) for t, n in counter.items() if n)
            if not changed:
                continue
            terms, counts = [t for t, _ in changed], [n for _, n in changed]
            conn.execute(schema.BUMP_TERMS, (namespace, kind, terms, counts))
            gone = [t for t, n in changed if n < 0]
            if gone:
                conn.execute(
                    "DELETE FROM term_stats WHERE namespace = %s AND field = %s "
                    "AND term = ANY(%s::text[]) AND df <= 0",
                    (namespace, kind, gone),
                )
        touched = set(self.memories) | set(self.own_tokens) | set(self.context_docs)
        touched |= set(self.context_tokens)
        grew = False
        for namespace in sorted(touched):
            row = conn.execute(
                schema.BUMP_NAMESPACE,
                (
                    namespace,
                    self.memories[namespace],
                    self.own_tokens[namespace],
                    self.context_docs[namespace],
                    self.context_tokens[namespace],
                ),
            ).fetchone()
            now = int(row[0]) if row else 0
            before = now - self.memories[namespace]
            grew |= now >= schema.ANALYZE_FROM and now.bit_length() > max(before, 0).bit_length()
        return grew


def write_postings(
    conn: psycopg.Connection, namespace: str, kind: int, memory_id: int, counted: Counted
) -> None:
    terms = sorted(counted.terms)
    if terms:
        conn.execute(
            schema.INSERT_POSTINGS,
            (
                namespace,
                kind,
                memory_id,
                terms,
                [counted.first[t] for t in terms],
                [counted.second[t] for t in terms],
            ),
        )


def drop_postings(
    conn: psycopg.Connection, namespace: str, kind: int, memory_id: int, counted: Counted
) -> None:
    terms = sorted(counted.terms)
    if terms:
        conn.execute(schema.DELETE_POSTINGS, (namespace, kind, terms, memory_id))


class PostgresContextRows:
    def __init__(
        self, conn: psycopg.Connection, tokenizer: Tokenizer, deltas: Deltas, dim: int
    ) -> None:
        self._conn = conn
        self._tokenizer = tokenizer
        self._deltas = deltas
        self._dim = dim
        self.namespace = ""  # set by the caller: context never crosses a namespace

    def group_of(self, memory_id: int) -> Group | None:
        row = self._conn.execute(_GROUP, (self.namespace, memory_id)).fetchone()
        if row is None or row[3] is None:
            return None
        return (str(row[0]), str(row[1]), str(row[2]), str(row[3]))

    def neighbours(
        self, group: Group, memory_id: int, window: int
    ) -> tuple[list[Neighbour], list[Neighbour]]:
        sides = []
        for sql in (_BEFORE, _AFTER):
            rows = self._conn.execute(sql, (*group, memory_id, window)).fetchall()
            sides.append([(int(i), str(c), as_array(v)) for i, c, v in rows])
        return sides[0], sides[1]

    def context_of(self, memory_id: int) -> tuple[str, str]:
        row = self._conn.execute(
            "SELECT context_near, context_far FROM memories WHERE namespace = %s AND id = %s",
            (self.namespace, memory_id),
        ).fetchone()
        if row is None:
            raise KeyError(memory_id)
        return (str(row[0]), str(row[1]))

    def set_context(
        self, group: Group, memory_id: int, old: tuple[str, str], new: tuple[str, str]
    ) -> None:
        namespace = group[0]
        before, after = self._tokenizer.count([old, new])
        if old != ("", ""):
            drop_postings(self._conn, namespace, schema.CONTEXT, memory_id, before)
            self._deltas.add_terms(namespace, schema.CONTEXT, before.terms, -1)
            self._deltas.context_docs[namespace] -= 1
            self._deltas.context_tokens[namespace] -= before.length
        length = 0
        if new != ("", ""):
            write_postings(self._conn, namespace, schema.CONTEXT, memory_id, after)
            self._deltas.add_terms(namespace, schema.CONTEXT, after.terms, 1)
            self._deltas.context_docs[namespace] += 1
            self._deltas.context_tokens[namespace] += after.length
            length = after.length
        self._conn.execute(
            "UPDATE memories SET context_near = %s, context_far = %s, context_tokens = %s "
            "WHERE namespace = %s AND id = %s",
            (*new, length, namespace, memory_id),
        )

    def own_vector(self, memory_id: int) -> Vectors:
        row = self._conn.execute(
            "SELECT embedding FROM memories WHERE namespace = %s AND id = %s",
            (self.namespace, memory_id),
        ).fetchone()
        if row is None:
            raise KeyError(memory_id)
        return as_array(row[0])

    def set_searched(self, memory_id: int, vector: Vectors | None) -> None:
        if vector is None:
            self._conn.execute(
                "UPDATE memories SET searched = embedding WHERE namespace = %s AND id = %s",
                (self.namespace, memory_id),
            )
        else:
            self._conn.execute(
                "UPDATE memories SET searched = %s WHERE namespace = %s AND id = %s",
                (np.asarray(vector, np.float32), self.namespace, memory_id),
            )


def as_array(value: object) -> Vectors:
    """A vector as pgvector returns it (its ``Vector``, or an array) as float32 numpy."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32)
