"""Post-fusion policies through the real pipeline: cross-encoder rerank (a tiny ONNX model built
here), MMR, rewrites (feedback and an OpenAI-compatible endpoint served locally), budgets."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

import fivefold
from fivefold.config import (
    Config,
    MMRConfig,
    OptimizerConfig,
    RerankConfig,
    RewriteConfig,
)
from fivefold.errors import ConfigError
from fivefold.read.rerank.cross_encoder import OnnxCrossEncoder
from fivefold.read.rerank.mmr import mmr_order
from fivefold.read.rerank.rewrite import RewriteError, feedback_rewrites, llm_rewrites
from fivefold.types import OptimizerMode

TOKENIZER = Path(fivefold.__file__).parent / "embed" / "tokenizer.json"


def build_cross_encoder(directory: Path, word: str) -> Path:
    """A cross-encoder whose relevance logit is how often ``word``'s token occurs in the pair:
    a real ONNX graph run by onnxruntime through the same code path as a trained model."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from tokenizers import Tokenizer

    token = Tokenizer.from_file(str(TOKENIZER)).token_to_id(word)
    assert token is not None
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    nodes = [
        helper.make_node(
            "Constant",
            [],
            ["target"],
            value=helper.make_tensor("t", TensorProto.INT64, [], [token]),
        ),
        helper.make_node("Equal", ["input_ids", "target"], ["hit"]),
        helper.make_node("Cast", ["hit"], ["hit_f"], to=TensorProto.FLOAT),
        helper.make_node(
            "Constant", [], ["axes"], value=helper.make_tensor("a", TensorProto.INT64, [1], [1])
        ),
        helper.make_node("ReduceSum", ["hit_f", "axes"], ["logits"], keepdims=1),
    ]
    graph = helper.make_graph(nodes, "tiny_cross_encoder", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    directory.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(directory / "model.onnx"))
    (directory / "tokenizer.json").write_bytes(TOKENIZER.read_bytes())
    return directory


CORPUS = [
    "Notes about the API gateway rollout.",
    "Notes about the API rate limits.",
    "Notes about the API and the beagle that sleeps under my desk.",
    "Notes about the API versioning policy.",
]


def _store(config: Config) -> fivefold.Memory:
    mem = fivefold.Memory.open(":memory:", embedder=fivefold.HashingEmbedder(), config=config)
    mem.remember_many([{"content": c} for c in CORPUS])
    return mem


def test_cross_encoder_scores_pairs(tmp_path: Path) -> None:
    model = OnnxCrossEncoder(build_cross_encoder(tmp_path / "ce", "desk"))
    scores = model.score("which room?", ["a desk", "a cat", "desk desk"])
    assert scores == [1.0, 0.0, 2.0]
    assert model.score("q", []) == []


def test_rerank_reorders_the_top_candidates(tmp_path: Path) -> None:
    directory = build_cross_encoder(tmp_path / "ce", "desk")
    # The balanced plan reranks only on budget "high" (exploratory plans always do).
    config = Config(
        optimizer=OptimizerConfig(mode=OptimizerMode.OFF),
        rerank=RerankConfig(model_path=str(directory), depth=10),
    )
    with _store(config) as mem:
        plain = mem.recall("notes about the API", k=4)
        assert "beagle" not in plain.hits[0].memory.content
        ranked = mem.recall("notes about the API", k=4, budget="high")
        assert "beagle" in ranked.hits[0].memory.content
        assert "rerank" in ranked.timings
        assert mem.metrics().rerank is not None


def test_rerank_without_a_model_says_so() -> None:
    with _store(Config()) as mem:
        result = mem.recall("notes about the API", budget="high")
    assert any("no cross-encoder is configured" in r for r in result.plan.reasons)


def test_an_exploratory_plans_rerank_is_opt_in() -> None:
    """Without a model, the rerank an exploratory plan asks for passes unremarked (it printed
    "no cross-encoder is configured" under every such recall of a default store)."""
    with _store(Config(optimizer=OptimizerConfig(mode=OptimizerMode.RULE))) as mem:
        result = mem.recall("notes about the API")
    assert result.plan.rerank
    assert not any("cross-encoder" in r for r in result.plan.reasons)


def test_a_bad_model_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"tokenizer\.json"):
        OnnxCrossEncoder(tmp_path)


def test_mmr_prefers_a_diverse_second_result() -> None:
    a = np.array([1.0, 0.0], dtype=np.float32)
    near_a = np.array([0.99, 0.141], dtype=np.float32)
    b = np.array([0.0, 1.0], dtype=np.float32)
    vectors = {1: a, 2: near_a / np.linalg.norm(near_a), 3: b}
    assert mmr_order([1, 2, 3], [1.0, 0.95, 0.9], vectors, lambda_=0.5, limit=3) == [1, 3, 2]
    # lambda 1.0 is pure relevance: the fused order stays.
    assert mmr_order([1, 2, 3], [1.0, 0.95, 0.9], vectors, lambda_=1.0, limit=3) == [1, 2, 3]
    # Memories without vectors follow, in their order.
    assert mmr_order([9, 1, 2], [2.0, 1.0, 0.5], {1: a, 2: b}, lambda_=0.5, limit=3) == [1, 2, 9]


def test_exploratory_plan_runs_mmr_and_rewrites() -> None:
    config = Config(
        optimizer=OptimizerConfig(mode=OptimizerMode.RULE, rewrites=True, mmr=True),
        mmr=MMRConfig(lambda_=0.5),
    )
    with _store(config) as mem:
        result = mem.recall("something about our API")
    assert result.plan.name.value == "exploratory"
    assert "mmr" in result.timings
    assert result.query.rewrites
    assert all(r.startswith("something about our API ") for r in result.query.rewrites)


def test_feedback_rewrites_add_rare_words_of_the_top_documents() -> None:
    frequencies = {"beagle": 1, "sleeps": 2, "desk": 9, "notes": 50, "gateway": 1}

    def lookup(terms: Any) -> tuple[int, dict[str, int]]:
        return 100, {t: frequencies.get(t, 0) for t in terms}

    rewrites = feedback_rewrites(
        "which dog do I have",
        ["Notes: the beagle sleeps under my desk", "Notes about the gateway"],
        frequencies=lookup,
        config=RewriteConfig(terms_per_rewrite=2),
    )
    assert rewrites[0].startswith("which dog do I have ")
    assert len(rewrites) == 2
    assert "under" not in rewrites[0]


class _FakeLLM(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _FakeLLM.requests.append(
            {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
        )
        reply = {"choices": [{"message": {"content": "1. what pet do I own\n2. my dog's breed\n"}}]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake_llm() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _FakeLLM)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _FakeLLM.requests = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.mark.slow
def test_llm_rewrites_from_an_openai_compatible_endpoint(fake_llm: str) -> None:
    config = RewriteConfig(endpoint=fake_llm, model="tiny", api_key="secret")
    assert llm_rewrites("which dog do I have", config) == ("what pet do I own", "my dog's breed")
    request = _FakeLLM.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["model"] == "tiny"
    assert request["auth"] == "Bearer secret"


@pytest.mark.slow
def test_llm_rewrites_feed_the_semantic_leg(fake_llm: str) -> None:
    config = Config(
        optimizer=OptimizerConfig(mode=OptimizerMode.RULE, rewrites=True),
        rewrite=RewriteConfig(endpoint=fake_llm),
    )
    with _store(config) as mem:
        result = mem.recall("something about our API")
    assert result.query.rewrites == ("what pet do I own", "my dog's breed")


def test_an_unreachable_endpoint_falls_back_to_feedback() -> None:
    with pytest.raises(RewriteError):
        llm_rewrites("q", RewriteConfig(endpoint="http://127.0.0.1:9/v1", timeout_seconds=0.5))
    config = Config(
        optimizer=OptimizerConfig(mode=OptimizerMode.RULE, rewrites=True),
        rewrite=RewriteConfig(endpoint="http://127.0.0.1:9/v1", timeout_seconds=0.5),
    )
    with _store(config) as mem:
        result = mem.recall("something about our API")
    assert result.query.rewrites
    assert any("used feedback rewrites" in r for r in result.plan.reasons)
