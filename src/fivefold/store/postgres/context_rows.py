"""The Postgres rows behind the session context rules (``store/context.py``), inside one write
transaction. Document-frequency, posting-list and namespace changes are gathered and applied at
the end, in sorted order (``Deltas.flush``), so concurrent writers lock shared rows in the same
order."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import psycopg

from fivefold.embed.base import Vectors
from fivefold.errors import StoreError
from fivefold.store.postgres import schema
from fivefold.store.postgres.packed import Rewrites
from fivefold.store.shared.context import Group, Neighbour, group_from_row, neighbour_rows
from fivefold.store.shared.tokens import Counted, Tokenizer

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
class Growth:
    """What a write's growth asks of the tables after its transaction: planner statistics, a
    vacuum, and the namespaces whose lists are to be compacted (``PostgresStore.compact``)."""

    analyze: bool = False
    vacuum: bool = False
    compact: frozenset[str] = frozenset()

    def add(self, namespace: str, before: int, now: int) -> None:
        """A namespace that went from ``before`` to ``now`` memories."""
        before = max(before, 0)
        grew = False
        if now >= schema.ANALYZE_FROM and now.bit_length() > before.bit_length():
            self.analyze = grew = True
        if now >= schema.VACUUM_FROM and schema.growth_step(now) > schema.growth_step(before):
            self.vacuum = grew = True
        if grew:
            self.compact |= {namespace}

    def __or__(self, other: Growth) -> Growth:
        return Growth(
            self.analyze or other.analyze,
            self.vacuum or other.vacuum,
            self.compact | other.compact,
        )

    def __bool__(self) -> bool:
        return self.analyze or self.vacuum or bool(self.compact)


@dataclass
class Deltas:
    """Per namespace: document-frequency changes by (field, term) and column, the memory count
    and each column's token total (``schema.COLUMNS`` order); and the postings of memories
    written before the transaction that it removes or adds (``lists``)."""

    terms: dict[tuple[str, int], dict[str, list[int]]] = field(default_factory=dict)
    memories: Counter[str] = field(default_factory=Counter)
    tokens: dict[str, list[int]] = field(default_factory=dict)
    lists: Rewrites = field(default_factory=Rewrites)

    def add(self, namespace: str, kind: int, counted: Counted, sign: int) -> None:
        """A memory's text of field ``kind`` counted in (``sign`` 1) or out (-1)."""
        table = self.terms.setdefault((namespace, kind), {})
        for column, counter in enumerate((counted.first, counted.second)):
            for term in counter:
                entry = table.get(term)
                if entry is None:  # not ``setdefault``: a list made for every term
                    entry = table[term] = [0, 0]
                entry[column] += sign
        totals = self.tokens.setdefault(namespace, [0, 0, 0, 0])
        base = 0 if kind == schema.OWN else 2
        totals[base] += sign * counted.first_length
        totals[base + 1] += sign * counted.second_length

    def add_documents(
        self,
        namespace: str,
        kind: int,
        documents: dict[str, tuple[int, int]],
        lengths: tuple[int, int],
        sign: int = 1,
    ) -> None:
        """Memories' text of field ``kind`` counted in (``sign`` 1) or out (-1) at once: per
        term the memories holding it in each column (``Grouped.documents``), and their
        columns' token totals."""
        table = self.terms.setdefault((namespace, kind), {})
        for term, (n1, n2) in documents.items():
            entry = table.get(term)
            if entry is None:
                table[term] = [sign * n1, sign * n2]
            else:
                entry[0] += sign * n1
                entry[1] += sign * n2
        totals = self.tokens.setdefault(namespace, [0, 0, 0, 0])
        base = 0 if kind == schema.OWN else 2
        totals[base] += sign * lengths[0]
        totals[base + 1] += sign * lengths[1]

    def flush(self, conn: psycopg.Connection) -> Growth:
        """Apply the deltas. The ``term_stats`` row of every list merged is locked with the
        counts (by an update adding 0 where its count does not change) before the merge reads
        the list: a merge of the same list waits for this transaction. Returns what the
        namespaces' growth asks of the tables: planner statistics when one crossed a power of
        two (from ``schema.ANALYZE_FROM``), a vacuum when one of ``schema.VACUUM_FROM``
        memories or more grew into a new ``schema.growth_step``."""
        for namespace, kind in sorted(set(self.terms) | set(self.lists.keys())):
            table = self.terms.get((namespace, kind), {})
            merged = self.lists.terms(namespace, kind)
            changed = sorted((t, d[0], d[1]) for t, d in table.items() if d[0] or d[1])
            changed += [(t, 0, 0) for t in merged if not any(table.get(t, (0, 0)))]
            if not changed:
                continue
            changed.sort()
            columns = [list(c) for c in zip(*changed, strict=True)]
            conn.execute(schema.BUMP_TERMS, (namespace, kind, *columns))
            gone = [t for t, d1, d2 in changed if d1 <= 0 and d2 <= 0]
            if gone:
                conn.execute(
                    "DELETE FROM term_stats WHERE namespace = %s AND field = %s "
                    "AND term = ANY(%s::text[]) AND df1 <= 0 AND df2 <= 0",
                    (namespace, kind, gone),
                )
        self.lists.flush(conn)
        growth = Growth()
        for namespace in sorted(set(self.memories) | set(self.tokens)):
            tokens = self.tokens.get(namespace, [0, 0, 0, 0])
            row = conn.execute(
                schema.BUMP_NAMESPACE, (namespace, self.memories[namespace], tokens)
            ).fetchone()
            now = int(row[0]) if row else 0
            before = now - self.memories[namespace]
            growth.add(namespace, before, now)
        return growth


class MemoryGone(StoreError):
    """A row this write read has been deleted or rewritten by another transaction since: an
    entity a batch names, or a session neighbour whose context changed under the write. The
    write is retried; what reaches the caller after
    the last attempt is a ``StoreError`` that says so."""


class PostgresContextRows:
    """Rows read with a statement each (forgetting a memory, rebuilding every context); the
    writes wait for ``flush``: one pipelined statement per kind instead of one each. A batch of
    new memories works its context out in memory instead (``context.BatchRows``)."""

    def __init__(
        self, conn: psycopg.Connection, tokenizer: Tokenizer, deltas: Deltas, dim: int
    ) -> None:
        self._conn = conn
        self._tokenizer = tokenizer
        self._deltas = deltas
        self._dim = dim
        self.namespace = ""  # set by the caller: context never crosses a namespace
        # id -> ns, near, far, the window's token count and its unused second column's (0)
        self._texts: dict[int, tuple[str, str, str, int, int]] = {}
        self._contents: dict[int, tuple[str, str]] = {}  # id -> content, type: read with context
        self._searched: dict[int, tuple[str, Vectors | None]] = {}

    def group_of(self, memory_id: int) -> Group | None:
        return group_from_row(self._conn.execute(_GROUP, (self.namespace, memory_id)).fetchone())

    def neighbours(
        self, group: Group, memory_id: int, window: int
    ) -> tuple[list[Neighbour], list[Neighbour]]:
        before, after = (
            neighbour_rows(self._conn.execute(sql, (*group, memory_id, window)), as_array)
            for sql in (_BEFORE, _AFTER)
        )
        return before, after

    def context_of(self, memory_id: int) -> tuple[str, str]:
        if memory_id in self._texts:
            return self._texts[memory_id][1:3]
        row = self._conn.execute(
            "SELECT context_near, context_far, content, type FROM memories "
            "WHERE namespace = %s AND id = %s",
            (self.namespace, memory_id),
        ).fetchone()
        if row is None:
            raise KeyError(memory_id)
        self._contents[memory_id] = (str(row[2]), str(row[3]))  # for its window (set_context)
        return (str(row[0]), str(row[1]))

    def set_context(
        self, group: Group, memory_id: int, old: tuple[str, str], new: tuple[str, str]
    ) -> None:
        namespace = group[0]
        known = self._contents.get(memory_id)
        if known is None:
            row = self._conn.execute(
                "SELECT content, type FROM memories WHERE namespace = %s AND id = %s",
                (namespace, memory_id),
            ).fetchone()
            if row is None:
                raise KeyError(memory_id)
            known = (str(row[0]), str(row[1]))
        content, mtype = known
        # Its window (own text and context) changes with its context.
        before, after = self._tokenizer.windows([(content, *old), (content, *new)])
        self._deltas.lists.remove(namespace, schema.CONTEXT, memory_id, before)
        self._deltas.add(namespace, schema.CONTEXT, before, -1)
        self._deltas.lists.add(namespace, schema.CONTEXT, memory_id, after, mtype)
        self._deltas.add(namespace, schema.CONTEXT, after, 1)
        lengths = (after.first_length, after.second_length)
        self._texts[memory_id] = (namespace, *new, *lengths)

    def own_vector(self, memory_id: int) -> Vectors:
        row = self._conn.execute(
            "SELECT embedding FROM memories WHERE namespace = %s AND id = %s",
            (self.namespace, memory_id),
        ).fetchone()
        if row is None:
            raise KeyError(memory_id)
        return as_array(row[0])

    def set_searched(self, memory_id: int, vector: Vectors | None) -> None:
        self._searched[memory_id] = (self.namespace, vector)

    def flush(self) -> None:
        """Write what the refreshes decided, a statement per kind for the whole batch (the
        postings at the end of the transaction: ``Deltas.flush``)."""
        with self._conn.cursor() as cur:
            if self._texts:
                cur.executemany(
                    "UPDATE memories SET context_near = %s, context_far = %s, "
                    "tokens = ARRAY[tokens[1], tokens[2], %s, %s] "
                    "WHERE namespace = %s AND id = %s",
                    [
                        (near, far, n1, n2, ns, i)
                        for i, (ns, near, far, n1, n2) in self._texts.items()
                    ],
                )
            if self._searched:
                # One write of each searched vector: each is an insertion into the HNSW graph.
                cur.executemany(
                    "UPDATE memories SET searched = coalesce(%s::vector, embedding) "
                    "WHERE namespace = %s AND id = %s",
                    [
                        (None if v is None else np.asarray(v, np.float32), ns, i)
                        for i, (ns, v) in self._searched.items()
                    ],
                )
        self._texts, self._searched = {}, {}


def as_array(value: object) -> Vectors:
    """A vector as pgvector returns it (its ``Vector``, or an array) as float32 numpy."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32)
