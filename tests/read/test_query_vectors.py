from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import fivefold
from fivefold.embed.base import HashingEmbedder, Vectors
from fivefold.read.query_vectors import QueryVectors


class CountingEmbedder:
    """The hashing embedder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        self._inner = HashingEmbedder()
        self._lock = threading.Lock()
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            self.texts.extend(texts)
        return self._inner.embed(texts)


def test_a_kept_text_is_not_embedded_again_and_gets_the_same_vector() -> None:
    embedder = CountingEmbedder()
    kept = QueryVectors(embedder)
    first = kept.embed("ns", "where does Ada live?")
    again = kept.embed("ns", "where does Ada live?")
    assert embedder.texts == ["where does Ada live?"]
    assert again is first
    assert np.array_equal(first, HashingEmbedder().embed(["where does Ada live?"]))
    assert kept.cached("ns", "where does Ada live?") is first
    assert kept.cached("ns", "where does Ada work?") is None
    assert (kept.hits, kept.misses) == (2, 1)


def test_the_exact_text_is_the_key() -> None:
    embedder = CountingEmbedder()
    kept = QueryVectors(embedder)
    for text in ("Ada", "ada", "Ada ", "Ada"):
        kept.embed("ns", text)
    assert embedder.texts == ["Ada", "ada", "Ada "]


def test_kept_vectors_are_read_only() -> None:
    vector = QueryVectors(CountingEmbedder()).embed("ns", "a question")
    with pytest.raises(ValueError, match="read-only"):
        vector[0, 0] = 1.0


def test_the_least_recently_used_text_goes_first_and_the_bound_holds() -> None:
    embedder = CountingEmbedder()
    kept = QueryVectors(embedder, max_entries=3)
    for text in ("a", "b", "c"):
        kept.embed("ns", text)
    kept.embed("ns", "a")  # used again: "b" is now the oldest
    kept.embed("ns", "d")
    assert len(kept) == 3
    assert kept.cached("ns", "b") is None
    assert all(kept.cached("ns", t) is not None for t in ("a", "c", "d"))
    for n in range(20):
        kept.embed("ns", f"text {n}")
    assert len(kept) == 3


def test_no_entries_keeps_nothing() -> None:
    embedder = CountingEmbedder()
    kept = QueryVectors(embedder, max_entries=0)
    kept.embed("ns", "a")
    kept.embed("ns", "a")
    assert embedder.texts == ["a", "a"]
    assert len(kept) == 0


def test_threads_share_it_within_its_bound() -> None:
    embedder = CountingEmbedder()
    kept = QueryVectors(embedder, max_entries=8)
    texts = [f"question {n}" for n in range(16)]
    expected = {t: HashingEmbedder().embed([t]) for t in texts}
    wrong: list[str] = []
    start = threading.Barrier(8)

    def ask(offset: int) -> None:
        start.wait()
        for round_ in range(200):
            text = texts[(offset + round_) % len(texts)]
            if not np.array_equal(kept.embed("ns", text), expected[text]):
                wrong.append(text)

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
    assert len(kept) <= 8
    assert kept.hits + kept.misses == 8 * 200


def test_a_recall_asked_again_embeds_once_and_answers_the_same(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    with fivefold.Memory.open(tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember("Ada Lovelace wrote the first program")
        mem.remember("Grace Hopper wrote the first compiler")
        embedder.texts.clear()
        first = mem.recall("who wrote the first program?")
        again = mem.recall("who wrote the first program?")
        assert len(embedder.texts) == 1
        assert [(h.memory.id, h.score) for h in again.hits] == [
            (h.memory.id, h.score) for h in first.hits
        ]
        assert "embed" not in again.timings  # nothing embedded: no stage to time


def test_a_memory_written_after_a_recall_is_found_by_the_next(tmp_path: Path) -> None:
    with fivefold.Memory.open(tmp_path / "m.db", embedder=CountingEmbedder()) as mem:
        mem.remember("Ada Lovelace wrote the first program")
        before = mem.recall("the Analytical Engine")
        new = mem.remember("The Analytical Engine was designed by Charles Babbage")
        after = mem.recall("the Analytical Engine")
        assert new.id not in [h.memory.id for h in before.hits]
        assert after.hits[0].memory.id == new.id


def test_one_namespace_never_answers_from_another_namespaces_entries() -> None:
    embedder = CountingEmbedder()
    kept = QueryVectors(embedder)
    kept.embed("tenant-a", "what is Ada's salary?")
    assert kept.cached("tenant-b", "what is Ada's salary?") is None
    kept.embed("tenant-b", "what is Ada's salary?")
    assert embedder.texts == ["what is Ada's salary?", "what is Ada's salary?"]
    assert (kept.hits, kept.misses) == (0, 2)


def test_a_recall_in_another_namespace_embeds_the_query_again(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    with fivefold.Memory.open(tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember("Ada Lovelace wrote the first program", namespace="a")
        mem.remember("Grace Hopper wrote the first compiler", namespace="b")
        embedder.texts.clear()
        mem.recall("who wrote the first program?", namespace="a")
        mem.recall("who wrote the first program?", namespace="b")
        mem.recall("who wrote the first program?", namespace="a")
        assert len(embedder.texts) == 2
