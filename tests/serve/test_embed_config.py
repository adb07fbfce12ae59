"""``fivefold serve`` embeds with the model the config names: a real server process, over a
real socket, against a real OpenAI-compatible endpoint of the test's."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.embed.fake_openai import FakeEndpoint, embed_toml, fake_endpoint
from tests.serve.conftest import free_port, start_server


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    with fake_endpoint() as fake:
        yield fake


def test_the_server_embeds_through_the_configured_endpoint(
    endpoint: FakeEndpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SERVE_KEY", "sk-serve")
    settings = embed_toml(endpoint, 'api_key_env = "FAKE_SERVE_KEY"\n')
    server = start_server(tmp_path, settings=settings)
    try:
        before = endpoint.requests  # the start-up's warm-up embedding, at least
        with httpx.Client(base_url=f"{server.url}/v1", timeout=30) as http:
            made = http.post("/memories", json={"content": "Tane adopted a grey cat named Miso"})
            assert made.status_code == 201
            http.post("/memories", json={"content": "Kofi is allergic to peanuts"})
            found = http.post("/recall", json={"query": "which cat did Tane adopt?"})
        assert found.status_code == 200
        assert found.json()["hits"][0]["memory"]["id"] == made.json()["id"]
        assert endpoint.requests == before + 3
        assert set(endpoint.authorization) == {"Bearer sk-serve"}
    finally:
        server.stop()


def test_a_server_without_its_key_variable_says_so_in_one_line(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f"[serve]\nport = {free_port()}\n"
        + embed_toml(endpoint, 'api_key_env = "NO_SUCH_KEY_VAR"\n')
    )
    command = [sys.executable, "-c", "from fivefold.cli.main import main; main()"]
    command += ["--db", str(tmp_path / "m.db"), "--config", str(config), "serve"]
    env = {k: v for k, v in os.environ.items() if k != "NO_SUCH_KEY_VAR"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 1
    assert done.stderr.startswith("error: embed.api_key_env: the environment variable")
    assert done.stderr.count("\n") == 1
    assert endpoint.requests == 0
