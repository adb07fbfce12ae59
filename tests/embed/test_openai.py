"""The openai provider against a real HTTP server on a loopback port: batching, the API key
from its variable, retries with backoff, a timeout, and every wrong answer refused before
anything is written. Through the library and the command line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from tests.embed.fake_openai import DIM, MODEL, FakeEndpoint, embed_toml, fake_endpoint

import fivefold
import fivefold.embed.endpoint
from fivefold.config import Config, EmbedConfig, EmbedProvider
from fivefold.config.file import config_from_toml
from fivefold.embed.providers import build_embedder
from fivefold.errors import ConfigError, EmbedderError


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEndpoint]:
    monkeypatch.setattr(fivefold.embed.endpoint, "FIRST_BACKOFF_S", 0.01)
    with fake_endpoint() as fake:
        yield fake


def settings(endpoint: FakeEndpoint, **changes: object) -> Config:
    embed = EmbedConfig(
        provider=EmbedProvider.OPENAI, url=endpoint.url, model=MODEL, dim=DIM, **changes
    )
    return Config(embed=embed)


TEXTS = [
    "Priya recommended Postgres for Project Kestrel",
    "Tane adopted a grey cat named Miso",
    "The team moved the standup to Tuesdays",
    "Kofi is allergic to peanuts",
    "Maya runs the Berlin office",
]


def test_memories_are_embedded_in_batches_and_recalled(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    config = settings(endpoint, batch_size=2)
    with fivefold.Memory.open(tmp_path / "m.db", config=config) as mem:
        assert mem.embedder.name == f"openai:{MODEL}"
        assert mem.embedder.dim == DIM
        mem.remember_many([{"content": t} for t in TEXTS])
        assert endpoint.batches == [2, 2, 1]
        hits = mem.recall("which cat did Tane adopt?").hits
        assert hits[0].memory.content == TEXTS[1]
    assert endpoint.batches[-1] == 1  # the query
    assert endpoint.authorization == [None] * endpoint.requests  # no key variable: no key sent
    assert not mem.embedder._endpoint.open  # type: ignore[attr-defined]  # closed with the memory


def test_a_given_embedder_stays_open_after_the_memory(endpoint: FakeEndpoint) -> None:
    from fivefold.embed.providers import build_embedder

    embedder = build_embedder(settings(endpoint).embed)
    with fivefold.Memory.open(":memory:", embedder=embedder) as mem:
        mem.remember(TEXTS[0])
    assert embedder.embed([TEXTS[1]]).shape == (1, DIM)  # the caller's to close


def test_vectors_are_the_endpoints_in_input_order(endpoint: FakeEndpoint) -> None:
    embedder = build_embedder(settings(endpoint, batch_size=3).embed)
    got = embedder.embed(TEXTS)
    # Re-normalized here: equal to the float32 rounding of the JSON numbers.
    assert np.allclose(got, fivefold.HashingEmbedder(DIM).embed(TEXTS), atol=1e-6)


def test_the_key_comes_from_the_variable_it_names(
    endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_EMBED_KEY", "sk-test-123")
    embedder = build_embedder(settings(endpoint, api_key_env="FAKE_EMBED_KEY").embed)
    embedder.embed(["hello"])
    assert endpoint.authorization == ["Bearer sk-test-123"]


def test_a_missing_key_variable_is_refused_before_a_store_is_made(
    endpoint: FakeEndpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FAKE_EMBED_KEY", raising=False)
    config = settings(endpoint, api_key_env="FAKE_EMBED_KEY")
    with pytest.raises(ConfigError, match="FAKE_EMBED_KEY is not set"):
        fivefold.Memory.open(tmp_path / "m.db", config=config)
    assert not (tmp_path / "m.db").exists()
    assert endpoint.requests == 0


def test_a_503_is_retried_until_it_passes(endpoint: FakeEndpoint) -> None:
    endpoint.fail_with = [503, 429]
    vectors = build_embedder(settings(endpoint, retries=2).embed).embed(["hello there"])
    assert vectors.shape == (1, DIM)
    assert endpoint.requests == 3


def test_retries_run_out_with_the_last_status_said(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    endpoint.fail_with = [503, 503, 503]
    with fivefold.Memory.open(tmp_path / "m.db", config=settings(endpoint, retries=1)) as mem:
        with pytest.raises(EmbedderError, match="answered 503"):
            mem.remember("Kofi is allergic to peanuts")
        assert mem.stats().memories == 0
    assert endpoint.requests == 2


def test_a_client_error_is_not_retried(endpoint: FakeEndpoint) -> None:
    endpoint.fail_with = [401]
    with pytest.raises(EmbedderError, match="answered 401"):
        build_embedder(settings(endpoint, retries=3).embed).embed(["hello"])
    assert endpoint.requests == 1


def test_an_endpoint_that_stalls_times_out_after_its_retries(endpoint: FakeEndpoint) -> None:
    endpoint.delay_s = 1.0
    embedder = build_embedder(settings(endpoint, timeout_s=0.2, retries=1).embed)
    with pytest.raises(EmbedderError, match=r"did not answer within 0\.2 s \(2 tries\)"):
        embedder.embed(["hello"])
    assert endpoint.requests == 2


def test_a_wrong_dimension_is_refused_and_nothing_written(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.dim = 8
    with fivefold.Memory.open(tmp_path / "m.db", config=settings(endpoint)) as mem:
        with pytest.raises(EmbedderError, match=r"8-d vectors .* embed\.dim is 32"):
            mem.remember_many([{"content": t} for t in TEXTS])
        assert mem.stats().memories == 0


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"<html>not json</html>", "no JSON body"),
        (b'{"object": "list"}', "no data list"),
        (b'{"data": [{"index": 0, "embedding": [1, 2]}]}', "for 2 texts"),
        (b'{"data": [{"index": 0, "embedding": "x"}, {"index": 1}]}', "not a list of numbers"),
        (json.dumps({"data": [{"index": 0, "embedding": [0.5] * DIM}] * 2}).encode(), "index"),
    ],
)
def test_a_malformed_answer_is_an_error(endpoint: FakeEndpoint, body: bytes, said: str) -> None:
    endpoint.body = body
    with pytest.raises(EmbedderError, match=said):
        build_embedder(settings(endpoint).embed).embed(["one", "two"])


def test_the_store_refuses_another_model_and_says_how_to_move(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    path = tmp_path / "m.db"
    with fivefold.Memory.open(path, config=settings(endpoint)) as mem:
        mem.remember("Maya runs the Berlin office")
    with pytest.raises(fivefold.EmbeddingModelMismatch) as info:
        fivefold.Memory.open(path, embedder=fivefold.HashingEmbedder(DIM))
    message = str(info.value)
    assert f"openai:{MODEL}" in message
    assert "hashing-bow-32" in message
    assert "fivefold reembed" in message


def test_the_config_file_spells_the_provider(endpoint: FakeEndpoint) -> None:
    config = config_from_toml(embed_toml(endpoint, 'api_key_env = "K"\nbatch_size = 8\n'))
    assert config.embed == settings(endpoint, api_key_env="K", batch_size=8).embed
    with pytest.raises(ConfigError, match=r'embed\.model: the "openai" provider needs it'):
        config_from_toml(f'[embed]\nprovider = "openai"\nurl = "{endpoint.url}"\ndim = 8\n')
    with pytest.raises(ConfigError, match=r"embed\.url: 'ftp://x' is not an http"):
        config_from_toml('[embed]\nprovider = "openai"\nurl = "ftp://x"\nmodel = "m"\ndim = 8\n')


# -- the command line, as a user runs it -----------------------------------------------------------
def cli(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "from fivefold.cli.main import main; main()"]
    command += ["--db", str(tmp_path / "m.db"), "--config", str(tmp_path / "config.toml"), *args]
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FIVEFOLD_")}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, env={**clean, **(env or {})}
    )


def test_the_cli_remembers_and_recalls_through_the_endpoint(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    (tmp_path / "config.toml").write_text(embed_toml(endpoint, 'api_key_env = "FAKE_KEY"\n'))
    env = {"FAKE_KEY": "sk-cli"}
    for text in TEXTS[:3]:
        done = cli(tmp_path, "remember", text, env=env)
        assert done.returncode == 0, done.stderr
    done = cli(tmp_path, "recall", "which cat did Tane adopt?", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert TEXTS[1] in done.stdout
    assert endpoint.requests == 4
    assert set(endpoint.authorization) == {"Bearer sk-cli"}
    done = cli(tmp_path, "stats")
    assert done.returncode == 1
    assert "FAKE_KEY is not set" in done.stderr
    (tmp_path / "config.toml").write_text("")  # back to the packaged model
    done = cli(tmp_path, "recall", "cat")
    assert done.returncode == 4
    assert "fivefold reembed" in done.stderr
    assert f"openai:{MODEL}" in done.stderr


def test_the_docs_example_is_a_valid_file() -> None:
    guide = Path(__file__).resolve().parents[2] / "docs" / "guides" / "embedders.md"
    found = re.search(
        r"# Choosing the embedding model.*?```toml\n(.*?)```", guide.read_text(), re.DOTALL
    )
    assert found is not None
    embed = config_from_toml(found.group(1), source="embedders.md").embed
    assert embed.provider is EmbedProvider.OPENAI
    assert embed.url == "http://localhost:11434/v1"
    assert embed.dim == 768


def test_a_url_that_is_not_the_apis_base_is_said(endpoint: FakeEndpoint) -> None:
    config = settings(endpoint).embed
    wrong = replace(config, url=f"{endpoint.url}/embeddings")
    with pytest.raises(EmbedderError, match=r"answered 404 \(embed\.url is the API's base"):
        build_embedder(wrong).embed(["hello"])
