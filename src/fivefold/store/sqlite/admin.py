"""The embedded store's administration: ``fivefold doctor``'s checks and repairs, a copy's mark
and ids (``fivefold migrate``), export, upkeep of the lexical indexes, and the counts."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

from fivefold.errors import InvalidInput
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
from fivefold.store.sqlite import check as sqlite_check
from fivefold.store.sqlite import schema, write_sql
from fivefold.store.sqlite.core import Core
from fivefold.store.sqlite.dense import NamespaceIndex
from fivefold.types import Finding, StoreStats


class SQLiteAdmin(Role[Core]):
    def check(self, *, repair: bool = False) -> list[Finding]:
        """Every index against the rows; ``repair`` rebuilds what is out of step. The rows
        themselves are checked, not repaired (but for a mention's type, a copy of its
        memory's)."""
        core = self._core
        if repair:
            core.refuse_write()
        with core.lock:
            findings = [sqlite_check.check_database(core.conn)]
            if not findings[0].ok:
                # The indexes are built from the rows: read from damaged pages, the check
                # failed with SQLite's error in place of these findings.
                return [*findings, sqlite_check.unchecked_indexes()]
            if (note := self.copy_mark()) is not None:
                findings.append(unfinished_copy(note, self.stats().memories))
            mistyped = int(core.execute(schema.MISTYPED_MENTIONS).fetchone()[0])
            if mistyped and repair:
                with core.transaction():
                    core.conn.execute(schema.DROP_MISTYPED_TWINS)
                    core.conn.execute(schema.RETYPE_MENTIONS)
            findings.append(mistyped_rows("mentions", mistyped, repaired=repair))
            namespaces = [str(r[0]) for r in core.execute(schema.SELECT_NAMESPACES)]
            findings += core.lexical.check(namespaces, repair=repair)
            for namespace in namespaces:
                findings += self._check_dense(namespace, repair=repair)
            return findings

    def _check_dense(self, namespace: str, *, repair: bool) -> list[Finding]:
        """The saved graph first (loading the index would replace a damaged one), then the
        index this process searches against the rows."""
        core = self._core
        findings = []
        saved = core.hnsw_path(namespace)
        if saved is not None and saved.exists():
            probe = NamespaceIndex(core.dim, core.settings.index)
            valid = probe.load_hnsw(saved, core.store_id) is not None
            if not valid and probe.load_hnsw(saved, core.store_id, any_build=True) is not None:
                findings.append(sqlite_check.older_saved_graph(namespace))
                valid = True  # sound, only built the older way: its next search builds it
            else:
                findings.append(
                    sqlite_check.check_saved_graph(saved, namespace, valid=valid, repair=repair)
                )
            if not valid and not repair:
                return findings  # leave the files as they were found
        part = f"dense index of namespace {namespace!r}"
        rows = {int(r[0]) for r in core.execute(schema.SELECT_NAMESPACE_IDS, (namespace,))}
        held = core.dense_index(namespace).ids()
        if held == rows:
            return [*findings, Finding(part, True, f"{len(rows):,} vectors, as in the rows")]
        detail = f"{len(held - rows)} extra and {len(rows - held)} missing vectors"
        repaired = False
        if repair:
            del core.dense[namespace]
            repaired = core.dense_index(namespace).ids() == rows
        return [*findings, Finding(part, repaired, detail, repaired)]

    def stats(self, namespace: str | None = None) -> StoreStats:
        core = self._core
        folders = {}
        if core.lexical.folder is not None:
            folders = {
                "lexical index": _folder_size(core.lexical.folder),
                "dense index": _folder_size(Path(core.path + ".vindex")),
            }
        with core.lock:
            one = core.conn.execute
            # With a namespace every count is that namespace's (a tenant sees only its own).
            where, params = (
                ("", ()) if namespace is None else (" WHERE namespace = ?", (namespace,))
            )
            namespaces = dict(one(f"SELECT namespace, memories FROM namespaces{where}", params))
            types = dict(one(f"SELECT type, count(*) FROM memories{where} GROUP BY type", params))

            def count(table: str) -> int:
                return int(one(f"SELECT count(*) FROM {table}{where}", params).fetchone()[0])

            counts = {table: count(table) for table in ("memories", "entities", "edges")}
        size = 0
        if core.path != ":memory:":
            size = sum(
                os.path.getsize(p)
                for p in (core.path, core.path + "-wal", core.path + "-shm")
                if os.path.exists(p)
            )
        return StoreStats(
            memories=counts["memories"],
            entities=counts["entities"],
            edges=counts["edges"],
            namespaces={str(k): int(v) for k, v in sorted(namespaces.items()) if v},
            types={str(k): int(v) for k, v in sorted(types.items())},
            embedding_model=core.model,
            size_bytes=size + sum(folders.values()),
            location=core.path,
            parts={"database": size, **folders},
        )

    def relations(self, namespace: str) -> list[NewEdge]:
        rows = self._core.rows(schema.SELECT_RELATIONS, (namespace,))
        return [relation_from_row(namespace, row) for row in rows]

    def aliases(self, namespace: str) -> list[tuple[str, str]]:
        rows = self._core.rows(schema.SELECT_ALIASES, (namespace,))
        return [(str(name), str(alias)) for name, alias in rows]

    def supersession_reasons(self, namespace: str, ids: Sequence[int]) -> dict[int, str]:
        rows = self._core.rows(
            "SELECT id, supersession FROM memories WHERE namespace = ? AND supersession "
            "IS NOT NULL AND id IN (SELECT value FROM json_each(?))",
            (namespace, json.dumps([int(i) for i in ids])),
        )
        return {int(i): str(why) for i, why in rows}

    def held_namespaces(self) -> list[str]:
        return sorted(str(r[0]) for r in self._core.rows(HELD_NAMESPACES))

    def mark_copy(self, note: str | None) -> None:
        core = self._core
        with core.transaction():
            if note is None:
                core.conn.execute("DELETE FROM meta WHERE key = ?", (COPY_MARK,))
                return
            marked = core.conn.execute("SELECT 1 FROM meta WHERE key = ?", (COPY_MARK,))
            held = core.conn.execute(f"SELECT 1 FROM ({HELD_NAMESPACES}) LIMIT 1")
            if marked.fetchone() is not None or held.fetchone() is not None:
                raise InvalidInput(f"{core.path}: {COPY_REFUSED}")
            core.conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (COPY_MARK, note))

    def copy_mark(self) -> str | None:
        row = self._core.row("SELECT value FROM meta WHERE key = ?", (COPY_MARK,))
        return None if row is None else str(row[0])

    def progress(self, key: str) -> str | None:
        row = self._core.row("SELECT value FROM meta WHERE key = ?", (PROGRESS_PREFIX + key,))
        return None if row is None else str(row[0])

    def next_memory_id(self, *, at_least: int | None = None) -> int:
        core = self._core
        if at_least is None:
            with core.lock:
                return int(core.execute(write_sql.NEXT_MEMORY_ID).fetchone()[0])
        with core.transaction():
            now = int(core.conn.execute(write_sql.NEXT_MEMORY_ID).fetchone()[0])
            if at_least > now:  # AUTOINCREMENT's counter: the next id is one above it
                core.conn.execute("DELETE FROM sqlite_sequence WHERE name = 'memories'")
                core.conn.execute(
                    "INSERT INTO sqlite_sequence (name, seq) VALUES ('memories', ?)",
                    (at_least - 1,),
                )
        return max(now, at_least)

    def compact(self) -> int:
        """The lexical indexes that deleted documents are rebuilt (tantivy's BM25 statistics
        count a deleted document until a merge drops it); in memory on a read-only store."""
        with self._core.lock:
            namespaces = [str(r[0]) for r in self._core.execute(schema.SELECT_NAMESPACES)]
            return self._core.lexical.compact(namespaces)


def _folder_size(folder: Path) -> int:
    """Bytes of the files under ``folder`` (0 when missing; a file removed while counting
    counts 0: another process may be merging segments)."""
    total = 0
    for path in folder.rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file():
                total += path.stat().st_size
    return total
