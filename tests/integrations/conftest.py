"""Stores for the integration tests: an embedded SQLite file with the real model, and a real
``fivefold serve`` on a loopback port for the served paths."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.serve.conftest import Server, start_server

import fivefold


@pytest.fixture
def memory(tmp_path: Path, minilm: fivefold.MiniLMEmbedder) -> Iterator[fivefold.Memory]:
    with fivefold.Memory.open(tmp_path / "memory.db", embedder=minilm) as mem:
        yield mem


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """No keys (loopback only): the store names its own namespaces."""
    served = start_server(tmp_path_factory.mktemp("integrations-server"))
    yield served
    served.stop()


@pytest.fixture
def client(server: Server) -> Iterator[fivefold.Client]:
    with fivefold.Client(server.url) as remote:
        yield remote
