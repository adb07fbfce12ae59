"""The PostgreSQL store (psycopg 3, a connection pool, pgvector). Ranking matches the embedded
store: BM25 with the same formula over the same tokens (``shared/tokens.py``), per-namespace
statistics, the same graph scoring and the same context rules. Assembled as every backend is: a
core (``core.py``), the schema brought up to date (``migrations.py``), and one object per
role."""

from __future__ import annotations

import psycopg

from fivefold.errors import FivefoldError, StoreError
from fivefold.store.postgres.admin import PostgresAdmin
from fivefold.store.postgres.context_rows import Growth
from fivefold.store.postgres.core import Core
from fivefold.store.postgres.migrations import open_schema, rebuild_context
from fivefold.store.postgres.models import PostgresModels
from fivefold.store.postgres.reads import PostgresReads
from fivefold.store.postgres.search import PostgresSearch
from fivefold.store.postgres.upkeep import Upkeep
from fivefold.store.postgres.writes import PostgresWrites
from fivefold.store.protocol import StoreSettings


class PostgresStore:
    keyed_names = True  # index rows of 2,704 bytes at most; text without NUL

    def __init__(
        self, url: str, *, embedding_model: str, dim: int, settings: StoreSettings
    ) -> None:
        core = Core(url, embedding_model=embedding_model, dim=dim, settings=settings)
        try:
            rebuild, reindexed, self._created = open_schema(core)
            core.connect()
        except FivefoldError:
            raise
        except (psycopg.Error, OSError) as exc:
            raise StoreError(f"cannot open the store at {core.location}: {exc}") from exc
        self._core = core
        self.reads = PostgresReads(core)
        self.search = PostgresSearch(core)
        self.writes = PostgresWrites(core)
        self.admin = PostgresAdmin(core)
        self.models = PostgresModels(core)
        core.upkeep = Upkeep(core.pool.connection, core.location, self.admin.compact_namespace)
        if rebuild:
            rebuild_context(core)
        if reindexed:  # every posting row is new: no page of them is marked all-visible yet
            core.upkeep.run(Growth(analyze=True, vacuum=True))

    @property
    def embedding_model(self) -> str:
        return self._core.model

    @property
    def location(self) -> str:
        """The URL without its password."""
        return self._core.location

    @property
    def created(self) -> bool:
        return self._created

    def close(self) -> None:
        self._core.close()


__all__ = ["PostgresStore"]
