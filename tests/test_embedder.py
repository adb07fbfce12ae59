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


def test_a_batch_is_bounded_in_word_pieces_and_the_vectors_are_the_same(
    minilm: fivefold.MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """64 texts of 256 word pieces ran as one batch (1.5 GB at its peak); within the bound
    they run in smaller ones, which give the vectors one batch gave."""
    from fivefold.embed import minilm as module

    texts = [
        f"note {n}: " + "the Kestrel review moved to Thursday " * (1 + n % 40) for n in range(40)
    ]
    whole = minilm.embed(texts)
    sizes: list[int] = []
    infer = module.MiniLMEmbedder._infer

    def counted(
        self: module.MiniLMEmbedder, ids: np.ndarray, mask: np.ndarray, options: object
    ) -> np.ndarray:
        assert ids.shape[0] * ids.shape[1] <= 1024 or ids.shape[0] == 1
        sizes.append(ids.shape[0])
        return infer(self, ids, mask, options)

    monkeypatch.setattr(module, "MAX_BATCH_TOKENS", 1024)
    monkeypatch.setattr(module.MiniLMEmbedder, "_infer", counted)
    bounded = minilm.embed(texts)
    assert len(sizes) > 2
    assert sum(sizes) == len(texts)
    assert np.allclose(bounded, whole, atol=1e-6)


def test_a_large_call_gives_the_arena_back_after_its_last_batch_only(
    minilm: fivefold.MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call with a batch of ``RELEASE_TOKENS`` word pieces or more runs its last batch with
    the arena's shrinkage, and no other; a small call never does (its arena stays warm)."""
    from fivefold.embed import minilm as module

    shrinking: list[bool] = []
    infer = module.MiniLMEmbedder._infer

    def seen(
        self: module.MiniLMEmbedder, ids: np.ndarray, mask: np.ndarray, options: object
    ) -> np.ndarray:
        shrinking.append(options is not None)
        return infer(self, ids, mask, options)

    monkeypatch.setattr(module.MiniLMEmbedder, "_infer", seen)
    long = ["the Kestrel review moved to Thursday again " * 40 for _ in range(40)]
    before = minilm.embed(long[:1])
    assert shrinking == [False]  # one text of 256 word pieces: below the release
    shrinking.clear()
    minilm.embed(long)
    assert len(shrinking) > 2
    assert shrinking == [False] * (len(shrinking) - 1) + [True]
    shrinking.clear()
    minilm.embed(["a short query", "another one"])
    assert shrinking == [False]
    assert np.array_equal(minilm.embed(long[:1]), before)  # the same vector after a release


def test_token_batches_fill_each_batch_up_to_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from fivefold.embed import minilm as module

    monkeypatch.setattr(module, "MAX_BATCH_TOKENS", 100)
    lengths = np.array([10, 10, 20, 30, 40, 60, 200])
    batches = module._token_batches(lengths)
    assert [(b.start, b.stop) for b in batches] == [(0, 3), (3, 5), (5, 6), (6, 7)]
    assert module._token_batches(np.array([5] * 64)) == [
        slice(0, 20),
        slice(20, 40),
        slice(40, 60),
        slice(60, 64),
    ]
