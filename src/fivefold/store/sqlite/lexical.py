"""BM25 tables per namespace, so that a tenant's lexical statistics are its own.

FTS5's ``bm25()`` takes the memory count, average column lengths and document frequencies from
the whole table it scores. With one table for the store, writing 3,000 memories into namespace A
moved namespace B's rarities (0.70 -> 0.45) and B's BM25 scores, visible in B's plan reasons and
``explain``. So each namespace gets, on its first write:

- ``lex_src_<n>``: a view of the namespace's rows (the external content of both tables below,
  so FTS5's 'rebuild' and 'integrity-check' see exactly this namespace);
- ``fts_<n>``: the memory's own ``predicate`` and ``content``;
- ``ctx_<n>``: its session neighbours' text (``context_near``, ``context_far``), only for the
  memories that have some (``context.py``), so its statistics are those of contexts.

``lexical_tables`` maps a namespace to ``n`` (AUTOINCREMENT: a number is never reused). Every
namespace adds a view and two FTS5 tables to the schema: thousands of tenants in one file make
opening it slower (the PostgreSQL backend keeps per-namespace statistics in rows instead).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

from fivefold.store.tokens import TOKENIZE


@dataclass(frozen=True, slots=True)
class Tables:
    """The FTS5 tables of one namespace."""

    number: int

    @property
    def own(self) -> str:
        return f"fts_{self.number}"

    @property
    def context(self) -> str:
        return f"ctx_{self.number}"

    @property
    def source(self) -> str:
        return f"lex_src_{self.number}"


class LexicalTables:
    """Finds (and, inside a write transaction, creates) a namespace's tables, and keeps them in
    step with its rows. Names are cached; ``forget`` drops the cache after a rollback, which
    may have undone a creation."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._known: dict[str, Tables] = {}

    def find(self, namespace: str) -> Tables | None:
        tables = self._known.get(namespace)
        if tables is None:
            row = self._conn.execute(
                "SELECT id FROM lexical_tables WHERE namespace = ?", (namespace,)
            ).fetchone()
            if row is None:
                return None
            tables = self._known[namespace] = Tables(int(row[0]))
        return tables

    def ensure(self, namespace: str) -> Tables:
        """The namespace's tables, created when it has none (call inside a transaction)."""
        tables = self.find(namespace)
        if tables is not None:
            return tables
        cur = self._conn.execute("INSERT INTO lexical_tables (namespace) VALUES (?)", (namespace,))
        tables = Tables(int(cur.lastrowid or 0))
        literal = "'" + namespace.replace("'", "''") + "'"
        self._conn.execute(
            f"CREATE VIEW {tables.source} AS SELECT id, predicate, content, context_near, "
            f"context_far FROM memories WHERE namespace = {literal}"
        )
        for table, columns in ((tables.own, "predicate, content"), (tables.context, _CTX)):
            self._conn.execute(
                f"CREATE VIRTUAL TABLE {table} USING fts5({columns}, content='{tables.source}', "
                f"content_rowid='id', tokenize='{TOKENIZE}')"
            )
        return tables

    def forget(self) -> None:
        self._known.clear()

    def every(self) -> Iterator[tuple[str, Tables]]:
        rows = self._conn.execute("SELECT namespace, id FROM lexical_tables ORDER BY id")
        for namespace, number in rows.fetchall():
            yield str(namespace), Tables(int(number))

    # -- keeping them in step (inside the caller's transaction) ---------------------------------
    def insert(self, namespace: str, memory_id: int, predicate: str, content: str) -> None:
        table = self.ensure(namespace).own
        self._conn.execute(
            f"INSERT INTO {table} (rowid, predicate, content) VALUES (?, ?, ?)",
            (memory_id, predicate, content),
        )

    def delete(self, namespace: str, memory_id: int, predicate: str, content: str) -> None:
        table = self.ensure(namespace).own
        self._conn.execute(
            f"INSERT INTO {table} ({table}, rowid, predicate, content) VALUES ('delete', ?, ?, ?)",
            (memory_id, predicate, content),
        )

    def insert_context(self, namespace: str, memory_id: int, near: str, far: str) -> None:
        table = self.ensure(namespace).context
        self._conn.execute(
            f"INSERT INTO {table} (rowid, {_CTX}) VALUES (?, ?, ?)", (memory_id, near, far)
        )

    def delete_context(self, namespace: str, memory_id: int, near: str, far: str) -> None:
        table = self.ensure(namespace).context
        self._conn.execute(
            f"INSERT INTO {table} ({table}, rowid, {_CTX}) VALUES ('delete', ?, ?, ?)",
            (memory_id, near, far),
        )

    def rebuild(self, tables: Tables) -> None:
        """Both tables of a namespace rebuilt from its rows (migration, ``doctor --repair``)."""
        self._conn.execute(f"INSERT INTO {tables.own} ({tables.own}) VALUES ('rebuild')")
        ctx = tables.context
        self._conn.execute(f"INSERT INTO {ctx} ({ctx}) VALUES ('delete-all')")
        self._conn.execute(
            f"INSERT INTO {ctx} (rowid, {_CTX}) SELECT id, {_CTX} FROM {tables.source} "
            "WHERE context_near != '' OR context_far != ''"
        )


_CTX = "context_near, context_far"

__all__ = ["LexicalTables", "Tables"]
