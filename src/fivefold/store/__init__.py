"""Storage backends behind one ``Store`` protocol, chosen once from the URL scheme."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from fivefold.errors import InvalidInput, StoreError, UnsupportedBackend
from fivefold.store.protocol import Store, StoreSettings

__all__ = [
    "Store",
    "StoreSettings",
    "default_path",
    "local_file",
    "open_store",
    "store_exists",
]


def default_path() -> Path:
    """The embedded default: one SQLite file in the user's data directory."""
    from platformdirs import user_data_path

    return user_data_path("fivefold", appauthor=False) / "memory.db"


def _sqlite(location: str, *, embedding_model: str, dim: int, settings: StoreSettings) -> Store:
    from fivefold.store.sqlite.backend import SQLiteStore

    file = local_file(location)
    path = ":memory:" if file is None else str(file)
    return SQLiteStore(path, embedding_model=embedding_model, dim=dim, settings=settings)


def store_exists(target: str | Path | None) -> bool:
    """Whether the store a path or URL names is there, found without making anything: a
    file, or a Postgres schema holding fivefold's tables (an in-memory store always is)."""
    location = str(default_path() if target is None else target)
    scheme, sep, _ = location.partition("://")
    if sep and BACKENDS.get(scheme.lower()) is _postgres:
        try:
            from fivefold.store.postgres.placement import holds_store
        except ModuleNotFoundError as exc:  # the `postgres` extra is not installed
            if exc.name is None or exc.name.split(".")[0] not in ("psycopg", "pgvector"):
                raise
            raise UnsupportedBackend(
                f"the PostgreSQL backend needs the postgres extra: pip install "
                f"'fivefold[postgres]' ({exc})"
            ) from exc
        return holds_store(f"{scheme.lower()}://{location.partition('://')[2]}")
    file = local_file(location)
    return file is None or file_exists(file)


def file_exists(file: Path) -> bool:
    """``file.exists()``, with a path the system refuses (a name past its length limit) a
    ``StoreError`` rather than a raw ``OSError``."""
    try:
        return file.exists()
    except OSError as exc:
        raise StoreError(f"cannot use {file}: {exc.strerror or exc}") from exc


def local_file(target: str | Path | None) -> Path | None:
    """The file an embedded store's location names (``~`` expanded); None for an in-memory
    store or a server's URL."""
    location = str(default_path() if target is None else target)
    scheme, sep, rest = location.partition("://")
    if sep and BACKENDS.get(scheme.lower()) is not _sqlite:
        return None
    path = (rest or ":memory:") if sep else location
    # ``sqlite:///:memory:`` is SQLAlchemy's spelling of an in-memory database (it made a file
    # named ``/:memory:``).
    in_memory = path == ":memory:" or (bool(sep) and path == "/:memory:")
    return None if in_memory else Path(path).expanduser()


def _postgres(location: str, *, embedding_model: str, dim: int, settings: StoreSettings) -> Store:
    try:
        from fivefold.store.postgres.backend import PostgresStore
    except ModuleNotFoundError as exc:  # the `postgres` extra is not installed
        if exc.name is None or exc.name.split(".")[0] not in (
            "psycopg",
            "psycopg_pool",
            "pgvector",
        ):
            raise
        raise UnsupportedBackend(
            f"the PostgreSQL backend needs the postgres extra: pip install 'fivefold[postgres]' "
            f"({exc})"
        ) from exc
    return PostgresStore(location, embedding_model=embedding_model, dim=dim, settings=settings)


Opener = Callable[..., Store]
# URL scheme -> backend; a bare path (no scheme) is a SQLite file. Backends import lazily, so
# the embedded default never loads a Postgres driver.
BACKENDS: dict[str, Opener] = {
    "": _sqlite,
    "file": _sqlite,
    "sqlite": _sqlite,
    "postgresql": _postgres,
    "postgres": _postgres,
}


def keyed_names(target: str | Path | None) -> bool:
    """Whether the store a location names keys names in index rows (``Store.keyed_names``),
    known before it is opened: a Postgres one."""
    scheme, sep, _ = str(default_path() if target is None else target).partition("://")
    return bool(sep) and BACKENDS.get(scheme.lower()) is _postgres


def open_store(
    target: str | Path | None,
    *,
    embedding_model: str,
    dim: int,
    settings: StoreSettings | None = None,
) -> Store:
    """Open the store a path or URL names: a file path, ``sqlite:///path``, ``:memory:`` or
    ``postgresql://...``."""
    if target is not None and not isinstance(target, str | os.PathLike):
        raise InvalidInput(f"a store is named by a path or URL string, got {type(target).__name__}")
    location = str(default_path() if target is None else target)
    scheme, sep, rest = location.partition("://")
    if sep:  # a scheme's case does not matter (libpq reads it in lower case only)
        scheme = scheme.lower()
        location = f"{scheme}://{rest}"
    opener = BACKENDS.get(scheme if sep else "")
    if opener is None:
        raise UnsupportedBackend(
            f"unknown store URL scheme {scheme!r}: give a file path, ':memory:', sqlite:///path "
            "or postgresql://..."
        )
    return opener(
        location, embedding_model=embedding_model, dim=dim, settings=settings or StoreSettings()
    )
