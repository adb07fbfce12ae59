"""``fivefold doctor``: every index of an SQLite store checked against the rows, and rebuilt
from them with ``repair``. The rows themselves can only be checked: a damaged page needs a
backup or a re-import, and the finding says so."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from fivefold.types import Finding

__all__ = [
    "check_database",
    "check_saved_graph",
    "check_unopened",
    "older_saved_graph",
    "unchecked_indexes",
]


def check_database(conn: sqlite3.Connection) -> Finding:
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:  # damage the check itself cannot read past
        rows = [str(exc)]
    except UnicodeDecodeError as exc:  # SQLite's message quoting schema text that is not UTF-8
        rows = [f"schema text is not UTF-8: {bytes(exc.object).decode('utf-8', 'replace')}"]
    if rows == ["ok"]:
        return Finding("database", True, "pages and rows consistent")
    # A row can hold several lines, under a "*** in database main ***" heading: one line here.
    found = [line for row in rows for line in row.splitlines() if line and line[:3] != "***"]
    more = f" and {len(found) - 3:,} more" if len(found) > 3 else ""
    detail = (
        f"{'; '.join(found[:3])}{more} (restore a backup or re-import; indexes cannot fix rows)"
    )
    return Finding("database", False, detail)


def check_unopened(file: Path) -> list[Finding] | None:
    """The findings on a store too damaged to open, read only: its pages' check, and its
    indexes unchecked; None when the file's pages are sound (what kept it from opening is not
    damage) or it is no SQLite database at all."""
    try:
        if not file.is_file():  # a FIFO's open would wait for a writer
            return None
        # SQLite reads the header (no file that is not SQLite's has its pages checked): a
        # handle of ours, once closed, would drop the locks of any connection of this
        # process on the file (``files.connect``).
        with contextlib.closing(
            sqlite3.connect(f"{file.absolute().as_uri()}?mode=ro", uri=True)
        ) as conn:
            found = check_database(conn)
    except (OSError, sqlite3.Error):
        return None
    return None if found.ok else [found, unchecked_indexes()]


def unchecked_indexes() -> Finding:
    return Finding(
        "indexes",
        False,
        "not checked: they are built from the rows, which the database check found damaged",
    )


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
    """A sound graph saved before graphs were built on one thread (``dense.GRAPH_BUILD``), or
    built with other settings than the configured ones: not a problem, but not used either
    (it may hold nodes no search reaches, or is not the graph the settings ask for)."""
    return Finding(
        f"saved HNSW graph of namespace {namespace!r}",
        True,
        "saved by an older version (built on several threads) or with other index settings: "
        "built again when the namespace is next loaded",
    )
