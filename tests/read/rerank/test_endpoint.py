"""The http rerank provider against a real HTTP server on a loopback port: scores mapped to the
passages by index, the API key from its variable, retries with backoff, a timeout, every wrong
answer refused, and a recall through ``Memory`` configured by a TOML file reranked in the
endpoint's order."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.read.rerank.fake_rerank import MODEL, FakeReranker, fake_reranker, relevance

import fivefold
import fivefold.embed.endpoint
from fivefold.config import Config, RerankConfig, RerankProvider
from fivefold.config.file import config_from_toml, config_to_toml, load_config
from fivefold.errors import ConfigError, RerankerError
from fivefold.read.rerank.base import Reranker
from fivefold.read.rerank.providers import build_reranker


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeReranker]:
    monkeypatch.setattr(fivefold.embed.endpoint, "FIRST_BACKOFF_S", 0.01)
    with fake_reranker() as fake:
        yield fake


def settings(endpoint: FakeReranker, **changes: object) -> RerankConfig:
    return RerankConfig(provider=RerankProvider.HTTP, url=endpoint.url, model=MODEL, **changes)


def reranker(endpoint: FakeReranker, **changes: object) -> Reranker:
    built = build_reranker(settings(endpoint, **changes), environ={})
    assert built is not None
    return built


def _results(*items: object) -> bytes:
    return json.dumps({"results": list(items)}).encode()


PASSAGES = [
    "Notes about the API gateway rollout.",
    "Notes about the API.",
    "Notes about the API and the beagle that sleeps under my desk.",
    "API notes.",
]


def test_scores_map_to_the_passages_by_index(endpoint: FakeReranker) -> None:
    scores = reranker(endpoint).score("notes about the API", PASSAGES)
    # The endpoint answers most relevant first (3, 1, 0, 2): each score lands on its passage.
    assert scores == [relevance(p) for p in PASSAGES]
    assert endpoint.sent == [
        {"model": MODEL, "query": "notes about the API", "documents": PASSAGES, "top_n": 4}
    ]
    assert endpoint.authorization == [None]  # no key variable: no key sent


def test_results_in_any_order_are_read_by_index(endpoint: FakeReranker) -> None:
    endpoint.body = _results(
        {"index": 2, "relevance_score": 0.1},
        {"index": 0, "relevance_score": 0.9},
        {"index": 1, "relevance_score": 3},
    )
    assert reranker(endpoint).score("q", ["a", "b", "c"]) == [0.9, 3.0, 0.1]


def test_no_passages_ask_nothing(endpoint: FakeReranker) -> None:
    assert reranker(endpoint).score("q", []) == []
    assert endpoint.requests == 0


def test_the_key_comes_from_the_variable_it_names(endpoint: FakeReranker) -> None:
    config = settings(endpoint, api_key_env="FAKE_RERANK_KEY")
    built = build_reranker(config, environ={"FAKE_RERANK_KEY": "sk-rerank-1"})
    assert built is not None
    built.score("q", ["a"])
    assert endpoint.authorization == ["Bearer sk-rerank-1"]
    with pytest.raises(ConfigError, match="FAKE_RERANK_KEY is not set"):
        build_reranker(config, environ={})


def test_a_missing_key_variable_is_refused_before_a_store_is_made(
    endpoint: FakeReranker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FAKE_RERANK_KEY", raising=False)
    config = Config(rerank=settings(endpoint, api_key_env="FAKE_RERANK_KEY"))
    with pytest.raises(ConfigError, match="FAKE_RERANK_KEY is not set"):
        fivefold.Memory.open(tmp_path / "m.db", embedder=fivefold.HashingEmbedder(), config=config)
    assert not (tmp_path / "m.db").exists()


def test_a_503_and_a_429_are_retried_until_it_passes(endpoint: FakeReranker) -> None:
    endpoint.fail_with = [503, 429]
    assert reranker(endpoint, retries=2).score("q", ["a", "bb"]) == [
        relevance("a"),
        relevance("bb"),
    ]
    assert endpoint.requests == 3


def test_retries_run_out_with_the_last_status_said(endpoint: FakeReranker) -> None:
    endpoint.fail_with = [503, 503, 503]
    with pytest.raises(RerankerError, match="answered 503"):
        reranker(endpoint, retries=1).score("q", ["a"])
    assert endpoint.requests == 2


def test_a_client_error_is_not_retried(endpoint: FakeReranker) -> None:
    endpoint.fail_with = [401]
    with pytest.raises(RerankerError, match="answered 401"):
        reranker(endpoint, retries=3).score("q", ["a"])
    assert endpoint.requests == 1


def test_an_endpoint_that_stalls_times_out_after_its_retries(endpoint: FakeReranker) -> None:
    endpoint.delay_s = 1.0
    with pytest.raises(RerankerError, match=r"did not answer within 0\.2 s \(2 tries\)"):
        reranker(endpoint, timeout_s=0.2, retries=1).score("q", ["a"])
    assert endpoint.requests == 2


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"<html>not json</html>", "no JSON body"),
        (b'{"data": []}', "no results list"),
        (_results({"index": 0, "relevance_score": 1.0}), "1 results for 2 documents"),
        (_results({"relevance_score": 1.0}, {"index": 1, "relevance_score": 0.5}), r"results\[0\]"),
        (
            _results({"index": 1, "relevance_score": 1}, {"index": 1, "relevance_score": 0}),
            "repeat",
        ),
        (_results({"index": 0, "relevance_score": 1}, {"index": 2, "relevance_score": 0}), "range"),
        (
            _results({"index": 0, "relevance_score": 1}, {"index": True, "relevance_score": 0}),
            "index",
        ),
        (
            _results({"index": 0, "relevance_score": "high"}, {"index": 1, "relevance_score": 0}),
            "finite",
        ),
        (
            _results({"index": 0, "relevance_score": None}, {"index": 1, "relevance_score": 0}),
            "finite",
        ),
        (
            b'{"results": [{"index": 0, "relevance_score": NaN}, '
            b'{"index": 1, "relevance_score": 0}]}',
            "finite",
        ),
    ],
)
def test_a_malformed_answer_is_an_error(endpoint: FakeReranker, body: bytes, said: str) -> None:
    endpoint.body = body
    with pytest.raises(RerankerError, match=said):
        reranker(endpoint).score("q", ["one", "two"])


def test_a_url_that_is_not_the_apis_base_is_said(endpoint: FakeReranker) -> None:
    wrong = RerankConfig(provider=RerankProvider.HTTP, url=f"{endpoint.url}/rerank", model=MODEL)
    built = build_reranker(wrong, environ={})
    assert built is not None
    with pytest.raises(RerankerError, match=r"answered 404 \(rerank\.url is the API's base"):
        built.score("q", ["a"])


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('provider = "http"\nmodel = "m"', r'rerank\.url: the "http" provider needs it'),
        ('provider = "http"\nurl = "http://x/v1"', r'rerank\.model: the "http" provider needs it'),
        (
            'provider = "http"\nurl = "ftp://x"\nmodel = "m"',
            r"rerank\.url: 'ftp://x' is not an http",
        ),
        (
            'provider = "http"\nurl = "http://x"\nmodel = "m"\nmodel_path = "ce"',
            r'rerank\.model_path: not a setting of the "http" provider',
        ),
        (
            'provider = "http"\nurl = "http://x"\nmodel = "m"\nmax_tokens = 512',
            r'rerank\.max_tokens: not a setting of the "http" provider',
        ),
        ('url = "http://x"', r'rerank\.url: not a setting of the "onnx" provider'),
        (
            'provider = "http"\nurl = "http://x"\nmodel = "m"\napi_key_env = "sk-123"',
            r"rerank\.api_key_env: 'sk-123' is not the name of an environment variable",
        ),
        (
            'provider = "http"\nurl = "http://x"\nmodel = "m"\ntimeout_s = 0',
            r"rerank\.timeout_s: 0\.0 is out of range",
        ),
        (
            'provider = "http"\nurl = "http://x"\nmodel = "m"\napi_key = "k"',
            "never goes in this file",
        ),
        ('provider = "cohere"', r'expected one of "onnx", "http"'),
    ],
)
def test_the_config_file_checks_the_provider(table: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        config_from_toml(f"[rerank]\n{table}\n")


def test_the_settings_go_back_to_the_file_they_came_from() -> None:
    toml = '[rerank]\nprovider = "http"\nurl = "https://api.cohere.com/v2"\nmodel = "rerank-v3.5"\n'
    config = config_from_toml(toml + 'api_key_env = "CO_API_KEY"\ndepth = 20\nretries = 0\n')
    assert config.rerank == RerankConfig(
        provider=RerankProvider.HTTP,
        url="https://api.cohere.com/v2",
        model="rerank-v3.5",
        api_key_env="CO_API_KEY",
        depth=20,
        retries=0,
    )
    assert config_from_toml(config_to_toml(config)) == config
    assert Config().rerank.provider is RerankProvider.ONNX
    assert build_reranker(Config().rerank) is None  # no model folder: no rerank, as before


# -- through a Memory, configured by a file -------------------------------------------------------
CORPUS = [
    "Notes about the API gateway rollout and the canary hosts we used for it.",
    "Notes about the API rate limits.",
    "Notes about the API and the beagle that sleeps under my desk.",
    "Notes about the API versioning policy, written for the partner teams.",
]


def test_a_recall_is_reranked_in_the_endpoints_order(
    endpoint: FakeReranker, tmp_path: Path
) -> None:
    path = tmp_path / "config.toml"
    # The balanced plan reranks only on budget "high": a recall without it shows the fused order.
    path.write_text(
        '[optimizer]\nmode = "off"\n\n'
        f'[rerank]\nprovider = "http"\nurl = "{endpoint.url}"\nmodel = "{MODEL}"\ndepth = 10\n'
    )
    config = load_config(path)
    shortest_first = sorted(CORPUS, key=len)
    with fivefold.Memory.open(
        tmp_path / "m.db", embedder=fivefold.HashingEmbedder(), config=config
    ) as mem:
        mem.remember_many([{"content": c} for c in CORPUS])
        plain = mem.recall("notes about the API", k=4)
        assert endpoint.requests == 0
        assert [h.memory.content for h in plain.hits] != shortest_first
        ranked = mem.recall("notes about the API", k=4, budget="high")
        assert [h.memory.content for h in ranked.hits] == shortest_first
        assert "rerank" in ranked.timings
        [sent] = endpoint.sent
        assert sent["model"] == MODEL
        assert sorted(sent["documents"]) == sorted(CORPUS)  # type: ignore[type-var]
        assert sent["top_n"] == 4
        endpoint.body = _results({"index": 0, "relevance_score": 1.0})
        with pytest.raises(RerankerError, match="1 results for 4 documents"):
            mem.recall("notes about the API rate limits", k=4, budget="high")
    assert not mem._reranker._endpoint.open  # type: ignore[attr-defined]  # closed with the memory


def test_the_docs_example_is_a_valid_file() -> None:
    guide = (Path(__file__).resolve().parents[3] / "docs/guides/embedders.md").read_text()
    found = re.search(r"## Rerank\n.*?```toml\n(.*?)```", guide, re.DOTALL)
    assert found is not None
    rerank = config_from_toml(found.group(1), source="embedders.md").rerank
    assert rerank.provider is RerankProvider.HTTP
    assert rerank.url == "https://api.cohere.com/v2"
    assert rerank.api_key_env == "CO_API_KEY"
