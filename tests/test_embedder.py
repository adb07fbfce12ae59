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


def test_the_packaged_model_embeds_one_text_a_call(
    minilm: fivefold.MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its products run in int8 with the activations quantized over each call's input, so a
    text's vector would depend on its neighbours in a batch: each text runs alone, and a call
    of many gives the vectors of one call each."""
    from fivefold.embed import minilm as module

    texts = [
        f"note {n}: " + "the Kestrel review moved to Thursday " * (1 + n % 9) for n in range(4)
    ]
    alone = np.vstack([minilm.embed([t]) for t in texts])
    rows: list[int] = []
    infer = module.MiniLMEmbedder._infer

    def counted(
        self: module.MiniLMEmbedder, ids: np.ndarray, mask: np.ndarray, options: object
    ) -> np.ndarray:
        rows.append(ids.shape[0])
        return infer(self, ids, mask, options)

    monkeypatch.setattr(module.MiniLMEmbedder, "_infer", counted)
    together = minilm.embed(texts)
    assert rows == [1, 1, 1, 1]
    assert np.array_equal(together, alone)


def test_the_int8_products_stay_close_to_the_float_model(minilm: fivefold.MiniLMEmbedder) -> None:
    """The rewritten model against the file as it is (its weights folded to float32)."""
    import onnxruntime as ort

    from fivefold.embed import minilm as module

    float_session = ort.InferenceSession(
        str(module.packaged_model_file()),
        module.session_options(1),
        providers=["CPUExecutionProvider"],
    )
    texts = ["Which city do I live in?", "We moved to Utrecht in January, by the canal."]
    got = minilm.embed(texts)
    for text, vector in zip(texts, got, strict=True):
        ids = np.array([minilm._tokenizer.encode(text).ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        feeds["token_type_ids"] = np.zeros_like(ids)
        pooled = float_session.run(None, feeds)[0].mean(axis=1)[0]
        assert float(vector @ pooled / np.linalg.norm(pooled)) > 0.97


def test_a_large_call_gives_the_arena_back_after_its_last_batch_only() -> None:
    """A call with a batch of ``RELEASE_TOKENS`` word pieces or more runs its last batch with
    the arena's shrinkage, and no other; a small call never does (its arena stays warm)."""
    from fivefold.embed import minilm as module

    small = module.Released()
    assert small.options(module.RELEASE_TOKENS - 1, last=False) is None
    assert small.options(10, last=True) is None
    large = module.Released()
    assert large.options(module.RELEASE_TOKENS, last=False) is None
    assert large.options(10, last=False) is None
    assert large.options(10, last=True) is not None


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
