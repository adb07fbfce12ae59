"""The dense leg's recall@k against exact search, on a latency benchmark store.

The store is opened twice: as configured (an HNSW graph above the threshold), and with the
threshold out of reach, so that the same index code searches every vector exactly (float32).
Each timed query asks both for its k nearest, with its own type filter; recall is the share of
the exact top k the configured index returns, averaged over the queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from fivefold.config import Config
from fivefold.embed.base import Embedder, Vectors
from fivefold.memory import Memory
from fivefold.types import MemoryType, Scope

__all__ = ["dense_recall"]

# Queries searched together: an exact search of a million vectors holds queries x vectors
# similarities at once.
GROUP = 16
# Far above any store: every namespace is searched exactly.
NEVER = 2**62


def dense_recall(
    path: Path | str,
    *,
    namespace: str,
    queries: Sequence[tuple[str, tuple[str, ...]]],
    embedder: Embedder,
    config: Config,
    k: int = 10,
) -> float:
    """Mean recall@k of the configured dense index against exact search over the same rows;
    ``queries`` are (text, types) pairs."""
    if not queries:
        return 1.0
    vectors = embedder.embed([text for text, _ in queries])
    kinds = [types for _, types in queries]
    approximate = _nearest(path, config, embedder, namespace, vectors, kinds, k)
    exact_config = replace(config, index=replace(config.index, hnsw_threshold=NEVER))
    exact = _nearest(path, exact_config, embedder, namespace, vectors, kinds, k)
    shares = [
        len(set(found) & set(truth)) / len(truth) if truth else 1.0
        for found, truth in zip(approximate, exact, strict=True)
    ]
    return sum(shares) / len(shares)


def _nearest(
    path: Path | str,
    config: Config,
    embedder: Embedder,
    namespace: str,
    vectors: Vectors,
    kinds: Sequence[tuple[str, ...]],
    k: int,
) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in kinds]
    by_kind: dict[tuple[str, ...], list[int]] = {}
    for position, types in enumerate(kinds):
        by_kind.setdefault(types, []).append(position)
    scope = Scope(namespace=namespace)
    with Memory.open(path, embedder=embedder, config=config) as mem:
        search = mem.store.search
        for types, positions in by_kind.items():
            wanted = [MemoryType(t) for t in types]
            for start in range(0, len(positions), GROUP):
                group = positions[start : start + GROUP]
                found = search.vector_search(scope, vectors[group], k, wanted)
                for position, hits in zip(group, found, strict=True):
                    out[position] = [memory_id for memory_id, _ in hits]
    return out
