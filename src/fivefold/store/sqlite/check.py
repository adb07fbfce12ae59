"""``fivefold doctor``: every index of an SQLite store checked against the rows, and rebuilt
from them with ``repair``. The rows themselves can only be checked: a damaged page needs a
backup or a re-import, and the finding says so."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from fivefold.model import Finding
from fivefold.store.sqlite.lexical import LexicalTables

__all__ = ["check_database", "check_lexical", "check_saved_graph"]


def check_database(conn: sqlite3.Connection) -> Finding:
    rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check")]
    if rows == ["ok"]:
        return Finding("database", True, "pages and rows consistent")
    detail = "; ".join(rows[:3]) + " (restore a backup or re-import; indexes cannot fix rows)"
    return Finding("database", False, detail)


def _fts_ok(conn: sqlite3.Connection, table: str, rank: int) -> bool:
    try:
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', ?)", (rank,))
    except sqlite3.DatabaseError:
        return False
    return True


def check_lexical(
    conn: sqlite3.Connection, lexical: LexicalTables, *, repair: bool
) -> list[Finding]:
    """Each namespace's own-text table against its rows (rank 1: content included); its
    context table holds only the memories that have a context, so it is checked for its own
    consistency (rank 0). A repair rebuilds both from the rows."""
    out = []
    for namespace, tables in list(lexical.every()):
        part = f"lexical index of namespace {namespace!r}"
        if _fts_ok(conn, tables.own, 1) and _fts_ok(conn, tables.context, 0):
            out.append(Finding(part, True, "matches the rows"))
            continue
        if repair:
            conn.execute("BEGIN IMMEDIATE")
            lexical.rebuild(tables)
            conn.execute("COMMIT")
        fixed = repair and _fts_ok(conn, tables.own, 1) and _fts_ok(conn, tables.context, 0)
        out.append(Finding(part, fixed, "out of step with the rows", fixed))
    return out


def check_saved_graph(path: Path, namespace: str, *, valid: bool, repair: bool) -> Finding:
    part = f"saved HNSW graph of namespace {namespace!r}"
    if valid:
        return Finding(part, True, "checksum and contents match the rows")
    if repair:
        path.unlink(missing_ok=True)
        path.with_suffix(".json").unlink(missing_ok=True)
    detail = "damaged or out of step (it is not used; it is rebuilt when next needed)"
    return Finding(part, repair, detail, repair)
