"""The embedded store: one SQLite file (WAL), a tantivy index per namespace for BM25, a B-tree on
``event_at``, entity and edge tables, and the dense index derived from the vectors it holds.
Assembled as every backend is: a core (``core.py``), the schema brought up to date
(``migrations.py``), and one object per role."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from fivefold.store.protocol import StoreSettings
from fivefold.store.sqlite import files
from fivefold.store.sqlite.admin import SQLiteAdmin
from fivefold.store.sqlite.core import Core
from fivefold.store.sqlite.migrations import open_schema
from fivefold.store.sqlite.models import SQLiteModels
from fivefold.store.sqlite.reads import SQLiteReads
from fivefold.store.sqlite.search import SQLiteSearch
from fivefold.store.sqlite.writes import SQLiteWrites


class SQLiteStore:
    """Thread-safe: one connection, serialized by a lock, and one for the graph walk."""

    keyed_names = False  # any text, NUL included, under any name (``Store.keyed_names``)

    def __init__(
        self, path: str, *, embedding_model: str, dim: int, settings: StoreSettings
    ) -> None:
        self._created = False
        if path != ":memory:" and not os.path.lexists(path):
            self._created = files.create_file(
                Path(path), files.meta(embedding_model, dim, settings.smoothing.tag)
            )
        try:
            core = Core(path, embedding_model=embedding_model, dim=dim, settings=settings)
        except UnicodeDecodeError as exc:  # SQLite quoting damaged schema text
            raise files.translate(exc, path, opened=False) from exc
        try:
            store_id = open_schema(core)
            # Only once the file is known to be ours: never switch a stranger's database to WAL.
            if path != ":memory:" and not core.read_only:
                core.conn.execute("PRAGMA journal_mode = WAL")
                synced = "FULL" if settings.write.durable else "NORMAL"  # (``WriteConfig``)
                core.conn.execute(f"PRAGMA synchronous = {synced}")
            core.attach(store_id)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            core.conn.close()
            raise files.translate(exc, path, opened=False) from exc
        except BaseException:
            core.conn.close()
            raise
        self._core = core
        self.reads = SQLiteReads(core)
        self.search = SQLiteSearch(core)
        self.writes = SQLiteWrites(core)
        self.admin = SQLiteAdmin(core)
        self.models = SQLiteModels(core)

    @property
    def embedding_model(self) -> str:
        return self._core.model

    @property
    def location(self) -> str:
        return self._core.path

    @property
    def created(self) -> bool:
        return self._created

    @property
    def read_only(self) -> bool:
        return self._core.read_only

    def close(self) -> None:
        self._core.close()


__all__ = ["SQLiteStore"]
