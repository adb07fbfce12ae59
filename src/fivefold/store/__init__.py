"""Storage backends behind one ``Store`` protocol, chosen once from the URL scheme."""

from __future__ import annotations

import os
from pathlib import Path

from fivefold.config import Config
from fivefold.errors import InvalidInput, UnsupportedBackend
from fivefold.store.base import Store

__all__ = ["Store", "default_path", "open_store"]


def default_path() -> Path:
    """The embedded default: one SQLite file in the user's data directory."""
    from platformdirs import user_data_path

    return user_data_path("fivefold", appauthor=False) / "memory.db"


def open_store(
    target: str | Path | None, *, embedding_model: str, dim: int, config: Config
) -> Store:
    """Open the store a path or URL names: a file path, ``sqlite:///path``, ``:memory:``, or
    (a later release) ``postgresql://``."""
    if target is not None and not isinstance(target, str | os.PathLike):
        raise InvalidInput(f"a store is named by a path or URL string, got {type(target).__name__}")
    location = str(default_path() if target is None else target)
    scheme, sep, rest = location.partition("://")
    if not sep or scheme == "file":
        path = location if not sep else rest
    elif scheme == "sqlite":
        path = rest or ":memory:"
    elif scheme in ("postgresql", "postgres"):
        raise UnsupportedBackend(
            "the PostgreSQL backend is not part of this release yet; use a file path "
            "(the embedded SQLite store) for now"
        )
    else:
        raise UnsupportedBackend(
            f"unknown store URL scheme {scheme!r}: give a file path, ':memory:' or sqlite:///path"
        )
    from fivefold.store.sqlite import SQLiteStore

    return SQLiteStore(path, embedding_model=embedding_model, dim=dim, config=config)
