"""The Postgres store's administration: ``fivefold doctor``'s checks (the tables against the
schema, every posting list decoded against the memories) and repairs, a copy's mark and ids
(``fivefold migrate``), export, the compaction of lists small writes split, and the counts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from fivefold.errors import InvalidInput
from fivefold.store.postgres import schema
from fivefold.store.postgres.context_rows import Deltas
from fivefold.store.postgres.core import Core
from fivefold.store.postgres.lexical import namespace_row
from fivefold.store.postgres.migrations import schema_drift
from fivefold.store.postgres.packed import decode, type_code
from fivefold.store.postgres.reindex import reindex
from fivefold.store.postgres.write_locks import move_memory_ids, next_memory_id
from fivefold.store.records import NewEdge
from fivefold.store.shared.notes import (
    COPY_MARK,
    COPY_REFUSED,
    PROGRESS_PREFIX,
    mistyped_rows,
    unfinished_copy,
)
from fivefold.store.shared.rows import relation_from_row
from fivefold.store.shared.translate import Role
from fivefold.store.sql import HELD_NAMESPACES
from fivefold.types import Finding, StoreStats

_TABLES = ("memories", "postings", "term_stats", "entities", "aliases", "mentions", "edges")


class PostgresAdmin(Role[Core], reads=("stats", "relations", "aliases")):
    def check(self, *, repair: bool = False) -> list[Finding]:
        """Per namespace, its posting lists against its memories (each posting's memory and
        type), its document frequencies and counts against both, and every mention's type
        against its memory's; ``repair`` makes the lists and statistics again from the
        memories."""
        findings = []
        with self._core.read() as conn:
            conn.execute("SELECT 1")
            findings.append(Finding("database", True, "reachable"))
        tables = self._tables_finding()
        findings.append(tables)
        if tables.detail.startswith("differ"):  # what follows reads those tables
            return [*findings, Finding("rows", False, "not checked: the tables are not whole")]
        if (note := self.copy_mark()) is not None:
            findings.append(unfinished_copy(note, self.stats().memories))
        with self._core.read() as conn:
            mentions = int((conn.execute(schema.MISTYPED).fetchone() or (0,))[0])
            namespaces = [
                str(r[0])
                for r in conn.execute(
                    "SELECT namespace FROM namespaces UNION SELECT DISTINCT namespace FROM memories"
                ).fetchall()
            ]
        if repair and mentions:
            self._core.write(lambda conn, _: conn.execute(schema.RETYPE).rowcount)
        findings.append(mistyped_rows("mentions", mentions, repaired=repair))
        lists = {namespace: self._lists_check(namespace) for namespace in sorted(namespaces)}
        mistyped = sum(found.mistyped for found in lists.values())
        findings.append(mistyped_rows("postings", mistyped, repaired=repair))
        for namespace, found in lists.items():
            part = f"lexical statistics of namespace {namespace!r}"
            if found.agree and not found.stray:
                if found.mistyped and repair:
                    self._reindex(namespace)
                findings.append(Finding(part, True, "match the rows"))
                continue
            if repair:
                self._reindex(namespace)
            after = self._lists_check(namespace) if repair else found
            fixed = repair and after.agree and not after.stray
            detail = "out of step with the rows"
            if found.stray:
                detail += f" ({found.stray:,} postings of no memory, or twice in a list)"
            findings.append(Finding(part, fixed, detail, fixed))
        return findings

    def _tables_finding(self) -> Finding:
        """The store's tables against those this version makes: a column dropped or retyped
        by hand fails every write, and doctor must not say all is well then."""
        try:
            with self._core.read() as conn:
                drift = schema_drift(conn, self._core.dim)
        except psycopg.Error as exc:  # a role without even TEMP: not a fault of the store
            return Finding("tables", True, f"not checked: {exc}".strip())
        if not drift:
            return Finding("tables", True, "match the schema")
        return Finding("tables", False, "differ from the schema: " + "; ".join(drift))

    def mark_copy(self, note: str | None) -> None:
        with self._core.pool.connection() as conn, conn.transaction():
            if note is None:
                conn.execute("DELETE FROM fivefold_meta WHERE key = %s", (COPY_MARK,))
                return
            # The key is unique: of two copies marking at once, the second finds the first's
            # row (it waits for it to commit) and inserts nothing.
            claimed = conn.execute(
                "INSERT INTO fivefold_meta (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO NOTHING RETURNING key",
                (COPY_MARK, note),
            ).fetchone()
            held = conn.execute(f"SELECT 1 FROM ({HELD_NAMESPACES}) AS held LIMIT 1").fetchone()
            if claimed is None or held is not None:
                raise InvalidInput(f"{self._core.location}: {COPY_REFUSED}")

    def held_namespaces(self) -> list[str]:
        return sorted(str(r[0]) for r in self._core.rows(HELD_NAMESPACES))

    def progress(self, key: str) -> str | None:
        row = self._core.row(
            "SELECT value FROM fivefold_meta WHERE key = %s", (PROGRESS_PREFIX + key,)
        )
        return None if row is None else str(row[0])

    def next_memory_id(self, *, at_least: int | None = None) -> int:
        if at_least is None:
            with self._core.read() as conn:
                return next_memory_id(conn)
        return self._core.write(lambda conn, _: move_memory_ids(conn, at_least))

    def copy_mark(self) -> str | None:
        row = self._core.row("SELECT value FROM fivefold_meta WHERE key = %s", (COPY_MARK,))
        return None if row is None else str(row[0])

    def compact(self) -> int:
        """Each list's parts of a chunk merged into one where a chunk holds more than
        ``COMPACT_PARTS`` (a small write adds a part to each list it is in; a search reads a
        list's parts as rows). Statistics change in the writing transaction: nothing else is
        left behind. Returns how many lists' chunks were merged."""
        found = self._core.rows("SELECT namespace FROM namespaces ORDER BY namespace")
        namespaces = [str(r[0]) for r in found]
        return sum(self.compact_namespace(namespace) for namespace in namespaces)

    def compact_namespace(self, namespace: str, stop: Callable[[], bool] = bool) -> int:
        """``compact`` for one namespace, ``COMPACT_BATCH`` chunks of lists a transaction (a
        writer of those lists waits for one), until none is left, ``stop()`` says so, or as
        many rounds as there were batches at first (writers may fragment lists as fast)."""
        params = {"ns": namespace, "parts": COMPACT_PARTS, "limit": COMPACT_BATCH}
        merged, rounds = 0, None
        while not stop():
            with self._core.read() as conn:
                if rounds is None:
                    held = conn.execute(
                        f"SELECT count(*) FROM ({schema.FRAGMENTED}) AS f",
                        {**params, "limit": None},
                    ).fetchone()
                    rounds = -(-int(held[0] if held else 0) // COMPACT_BATCH)
                groups = conn.execute(schema.FRAGMENTED, params).fetchall()
            if not groups or rounds <= 0:
                break

            def run(conn: psycopg.Connection, deltas: Deltas, found: list[Any] = groups) -> None:
                for kind, term, chunk in found:
                    deltas.lists.touch(namespace, int(kind), str(term), int(chunk))

            self._core.write(run)
            merged += len(groups)
            rounds -= 1
        return merged

    def _reindex(self, namespace: str) -> None:
        """A namespace's lists and statistics made again from its memories (doctor's repair)."""
        self._core.write(lambda conn, _: reindex(conn, self._core.tokenizer, namespace))

    def _lists_check(self, namespace: str) -> ListsCheck:
        """A namespace's lists against its memories, its document frequencies and counts
        against its lists and memories, in one snapshot (every list decoded here: the server
        cannot read them)."""
        with self._core.read() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            held = conn.execute(
                "SELECT id, type FROM memories WHERE namespace = %s ORDER BY id", (namespace,)
            ).fetchall()
            stats = conn.execute(
                "SELECT field, term, df1, df2 FROM term_stats "
                "WHERE namespace = %s AND (df1 > 0 OR df2 > 0)",
                (namespace,),
            ).fetchall()
            counted = conn.execute(_COUNTED_TOKENS, {"ns": namespace}).fetchone()
            kept = namespace_row(conn, namespace)
            ids = np.asarray([int(r[0]) for r in held], dtype=np.int64)
            codes = np.asarray([type_code(str(r[1])) for r in held], dtype=np.uint8)
            check = ListsCheck()
            documents: dict[tuple[int, str], tuple[int, int]] = {}
            # A list at a time, through a cursor on the server: a large namespace's lists
            # together are more than the client should hold.
            with conn.cursor(name="fivefold_lists", binary=True) as cursor:
                cursor.execute(
                    "SELECT field, term, string_agg(packed, ''::bytea) FROM postings "
                    "WHERE namespace = %s GROUP BY field, term",
                    (namespace,),
                )
                for kind, term, packed in cursor:
                    postings = decode(int(kind), packed)
                    at = np.minimum(np.searchsorted(ids, postings["id"]), max(len(ids) - 1, 0))
                    known = ids[at] == postings["id"] if len(ids) else np.zeros(len(postings), bool)
                    check.stray += int((~known).sum()) + len(postings)
                    check.stray -= len(np.unique(postings["id"]))
                    check.mistyped += int((codes[at[known]] != postings["type"][known]).sum())
                    wide = int(kind) == schema.OWN  # the window field has no second column
                    first = int((postings["first"] > 0).sum())
                    second = int((postings["second"] > 0).sum()) if wide else 0
                    if first or second:
                        documents[int(kind), str(term)] = (first, second)
        expected = tuple(int(v) for v in counted) if counted else (0, 0, 0, 0, 0)
        check.agree = (
            documents == {(int(f), str(t)): (int(d1), int(d2)) for f, t, d1, d2 in stats}
            and (kept[0], *kept[2:]) == expected
        )
        return check

    def relations(self, namespace: str) -> list[NewEdge]:
        rows = self._core.rows(schema.SELECT_RELATIONS, (namespace,))
        return [relation_from_row(namespace, row) for row in rows]

    def aliases(self, namespace: str) -> list[tuple[str, str]]:
        rows = self._core.rows(schema.SELECT_ALIASES, (namespace,))
        return [(str(name), str(alias)) for name, alias in rows]

    def supersession_reasons(self, namespace: str, ids: Sequence[int]) -> dict[int, str]:
        rows = self._core.rows(
            "SELECT id, supersession FROM memories WHERE namespace = %s AND supersession "
            "IS NOT NULL AND id = ANY(%s::bigint[])",
            (namespace, [int(i) for i in ids]),
        )
        return {int(i): str(why) for i, why in rows}

    def stats(self, namespace: str | None = None) -> StoreStats:
        where, params = (
            ("", {}) if namespace is None else (" WHERE namespace = %(ns)s", {"ns": namespace})
        )
        with self._core.read() as conn, conn.transaction():

            def count(table: str) -> int:
                row = conn.execute(f"SELECT count(*) FROM {table}{where}", params).fetchone()
                return int(row[0]) if row else 0

            namespaces = conn.execute(
                f"SELECT namespace, memories FROM namespaces{where}", params
            ).fetchall()
            types = conn.execute(
                f"SELECT type, count(*) FROM memories{where} GROUP BY type", params
            ).fetchall()
            size = conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(to_regclass(t))), 0) "
                "FROM unnest(%s::text[]) AS t",
                (list(_TABLES),),
            ).fetchone()
            return StoreStats(
                memories=count("memories"),
                entities=count("entities"),
                edges=count("edges"),
                namespaces={str(k): int(v) for k, v in sorted(namespaces) if v},
                types={str(k): int(v) for k, v in sorted(types)},
                embedding_model=self._core.model,
                size_bytes=int(size[0]) if size else 0,
                location=self._core.location,
                parts={"tables": int(size[0]) if size else 0},
            )


# A chunk's parts of a list are merged once there are more than this many (bulk writes leave
# one or two, which merging would only rewrite), ``COMPACT_BATCH`` lists' chunks a transaction.
COMPACT_PARTS = 4
COMPACT_BATCH = 2_000


@dataclass
class ListsCheck:
    """``PostgresStore._lists_check``'s findings on a namespace."""

    mistyped: int = 0  # postings carrying another type than their memory's
    stray: int = 0  # postings of no memory of the namespace, or a memory's second in a list
    agree: bool = True  # document frequencies and counts match the lists and the memories


# A namespace's memory count and each column's token total, from the memories.
_COUNTED_TOKENS = """
SELECT count(*), coalesce(sum(tokens[1]), 0), coalesce(sum(tokens[2]), 0),
       coalesce(sum(tokens[3]), 0), coalesce(sum(tokens[4]), 0)
FROM memories WHERE namespace = %(ns)s
"""
