"""The default embedder: real model, offline, batched, normalized, deterministic."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import fivefold
from fivefold.embed.base import Embedder


def test_minilm_embeds_meaning(minilm: fivefold.MiniLMEmbedder) -> None:
    vectors = minilm.embed(
        [
            "Priya recommended Postgres for Project Kestrel",
            "Which database did Priya suggest?",
            "I love hiking in the mountains",
        ]
    )
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    related, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert related > 0.4 > unrelated


@pytest.mark.slow
def test_batching_and_order_do_not_change_vectors(minilm: fivefold.MiniLMEmbedder) -> None:
    texts = [f"memory number {i} " + "word " * (i % 17) for i in range(150)]
    together = minilm.embed(texts)
    one_by_one = np.stack([minilm.embed([t])[0] for t in texts[:5]])
    assert np.allclose(together[:5], one_by_one, atol=1e-5)
    assert minilm.embed([]).shape == (0, 384)


def test_long_text_is_truncated_not_rejected(minilm: fivefold.MiniLMEmbedder) -> None:
    assert minilm.embed(["word " * 5000]).shape == (1, 384)


def test_embedders_satisfy_the_protocol(minilm: fivefold.MiniLMEmbedder) -> None:
    assert isinstance(minilm, Embedder)
    assert isinstance(fivefold.HashingEmbedder(), Embedder)
    assert minilm.name != fivefold.HashingEmbedder().name


def test_hashing_embedder_shares_words() -> None:
    vectors = fivefold.HashingEmbedder(dim=256).embed(["red apple pie", "apple pie", "blue car"])
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])


@pytest.mark.slow
def test_concurrent_callers_and_one_worker_get_the_same_vectors(
    minilm: fivefold.MiniLMEmbedder,
) -> None:
    texts = [f"note {i}: " + "the quick brown fox " * (i % 9) for i in range(200)]
    expected = minilm.embed(texts)
    with ThreadPoolExecutor(4) as pool:
        parts = list(pool.map(lambda i: minilm.embed(texts[i::4]), range(4)))
    for i, part in enumerate(parts):
        assert np.allclose(part, expected[i::4], atol=1e-5)
    serial = fivefold.MiniLMEmbedder(threads=1)  # one intra-op thread
    assert np.allclose(serial.embed(texts), expected, atol=1e-5)
