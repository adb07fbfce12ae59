"""``fivefold bench serve`` serves a copy of the built store: the copy must carry the store's
index folders, or the server's first recalls rebuild them inside the timed run."""

from __future__ import annotations

from pathlib import Path

from fivefold import HashingEmbedder, Memory
from fivefold.bench.serve import _copy_store
from fivefold.store.sqlite import lexical


def _lexical(memory: Memory) -> lexical.LexicalIndexes:
    return memory.store._core.lexical  # type: ignore[attr-defined,no-any-return]


def test_the_served_copy_keeps_its_lexical_index(tmp_path: Path) -> None:
    built = tmp_path / "built.db"
    with Memory.open(built, embedder=HashingEmbedder()) as memory:
        memory.remember_many([{"content": f"note {i} about the zephyr project"} for i in range(40)])
        assert memory.recall("zephyr", k=3).hits
        assert _lexical(memory).rebuilds == 1  # the first read built and saved it
    served = tmp_path / "served.db"
    _copy_store(built, served)
    with Memory.open(served, embedder=HashingEmbedder()) as memory:
        assert memory.recall("zephyr", k=3).hits
        assert _lexical(memory).rebuilds == 0
