"""``fivefold doctor``: every index of an SQLite store checked against the rows, and rebuilt
from them with ``repair``. The rows themselves can only be checked: a damaged page needs a
backup or a re-import, and the finding says so."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from fivefold.model import Finding

__all__ = [
    "check_database",
    "check_saved_graph",
    "older_saved_graph",
]


def check_database(conn: sqlite3.Connection) -> Finding:
    rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check")]
    if rows == ["ok"]:
        return Finding("database", True, "pages and rows consistent")
    detail = "; ".join(rows[:3]) + " (restore a backup or re-import; indexes cannot fix rows)"
    return Finding("database", False, detail)


def check_saved_graph(path: Path, namespace: str, *, valid: bool, repair: bool) -> Finding:
    part = f"saved HNSW graph of namespace {namespace!r}"
    if valid:
        return Finding(part, True, "checksum and contents match the rows")
    if repair:
        path.unlink(missing_ok=True)
        path.with_suffix(".json").unlink(missing_ok=True)
    detail = "damaged or out of step (it is not used; it is rebuilt when next needed)"
    return Finding(part, repair, detail, repair)


def older_saved_graph(namespace: str) -> Finding:
    """A sound graph saved before graphs were built on one thread (``dense.GRAPH_BUILD``): not
    a problem, but not used either (it may hold nodes no search reaches)."""
    return Finding(
        f"saved HNSW graph of namespace {namespace!r}",
        True,
        "saved by an older version (built on several threads): built again when the "
        "namespace is next loaded",
    )
