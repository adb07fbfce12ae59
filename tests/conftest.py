"""Shared fixtures: the real default embedder (loaded once), in-memory stores, a fixed clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

import fivefold
from fivefold.config import Config, OptimizerConfig
from fivefold.model import OptimizerMode


@pytest.fixture(autouse=True)
def _no_user_config(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """CLI tests must not pick up a developer's own ~/.config/fivefold/config.toml."""
    import fivefold.config_file

    missing = tmp_path_factory.mktemp("no-config") / "config.toml"
    monkeypatch.setattr(fivefold.config_file, "default_config_path", lambda: missing)
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


@pytest.fixture
def hashing_mem() -> Iterator[fivefold.Memory]:
    """A throwaway store with the fast, deterministic (not semantic) hashing embedder, read with
    the optimizer off: the balanced plan runs every retriever that has inputs, which is what
    the retriever, store and isolation tests exercise. Optimizer tests set their own mode."""
    config = Config(optimizer=OptimizerConfig(mode=OptimizerMode.OFF))
    with fivefold.Memory.open(
        ":memory:", embedder=fivefold.HashingEmbedder(), config=config
    ) as memory:
        yield memory


@pytest.fixture
def now() -> datetime:
    """A fixed reference time for relative dates ("last week", "yesterday")."""
    return datetime(2026, 3, 20, 17, 0, tzinfo=UTC)
