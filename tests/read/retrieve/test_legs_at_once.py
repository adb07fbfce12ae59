"""How a recall schedules its legs: the lexical leg runs beside the semantic one (on Postgres
both wait on the server, so one after the other they cost their sum)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import fivefold


def test_the_lexical_leg_runs_beside_the_semantic_leg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with fivefold.Memory.open(tmp_path / "m.db", embedder=fivefold.HashingEmbedder()) as mem:
        mem.remember_many([{"content": f"Kestrel budget note {n}"} for n in range(20)])
        store = mem.store.search
        semantic_started = threading.Event()
        lexical_calls: list[bool] = []
        vector_search, lexical_search = store.vector_search, store.lexical_search

        def semantic(*args: Any, **kwargs: Any) -> Any:
            semantic_started.set()
            return vector_search(*args, **kwargs)

        def lexical(*args: Any, **kwargs: Any) -> Any:
            # Run one after the other, the semantic leg would start only after this returns.
            lexical_calls.append(semantic_started.wait(10))
            return lexical_search(*args, **kwargs)

        monkeypatch.setattr(store, "vector_search", semantic)
        monkeypatch.setattr(store, "lexical_search", lexical)
        result = mem.recall("Kestrel budget note", k=3)
    assert result.hits
    assert lexical_calls
    assert all(lexical_calls)
