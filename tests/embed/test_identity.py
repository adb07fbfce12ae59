"""A store keeps the embedding model it was built with, on both backends: opened with another
(name or dimension), it is refused, says which model it holds and how to move, and is left as
it was."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

import fivefold
from fivefold import HashingEmbedder, Memory
from fivefold.embed.base import Vectors


class Renamed:
    """The same vectors under another name: the name alone must refuse the store."""

    name = "another-model-v2"
    dim = 32

    def embed(self, texts: Sequence[str]) -> Vectors:
        return HashingEmbedder(32).embed(texts)


@pytest.mark.parametrize("other", [HashingEmbedder(64), Renamed()], ids=["dim", "name"])
def test_another_model_is_refused_with_the_way_to_move(
    new_store: Callable[[], str], other: fivefold.Embedder
) -> None:
    location = new_store()
    with Memory.open(location, embedder=HashingEmbedder(32)) as mem:
        mem.remember("Tane adopted a grey cat named Miso")
    with pytest.raises(fivefold.EmbeddingModelMismatch) as info:
        Memory.open(location, embedder=other)
    assert info.value.stored_model == "hashing-bow-32"
    assert info.value.stored_dim == 32
    message = str(info.value)
    assert "'hashing-bow-32' (32-d)" in message
    assert f"{other.name!r} ({other.dim}-d)" in message
    assert "fivefold reembed" in message
    with Memory.open(location, embedder=HashingEmbedder(32)) as mem:
        assert mem.stats().memories == 1
        assert mem.stats().embedding_model == "hashing-bow-32"
