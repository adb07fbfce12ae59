"""Type filter: the optimizer's type hints (or the caller's forced ``types``) become a hard
pre-filter on the semantic and lexical legs; the pipeline widens when fewer than 5 results
survive. Its own list holds the on-type memories those legs found, ordered by their
best rank in either leg, confidence 1.0: after a widening it is what still favours the hinted
type, softly, through fusion."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from fivefold.types import MemoryType, Scored


def type_list(
    legs: Sequence[Sequence[Scored]],
    types: Collection[MemoryType],
    memory_types: Mapping[int, MemoryType] | None,
) -> tuple[Scored, ...]:
    """``memory_types`` None: the legs were filtered by ``types``, every item is on-type."""
    best_rank: dict[int, int] = {}
    for leg in legs:
        for rank, item in enumerate(leg, start=1):
            if memory_types is None or memory_types.get(item.id) in types:
                best_rank[item.id] = min(rank, best_rank.get(item.id, rank))
    order = sorted(best_rank, key=lambda i: (best_rank[i], i))
    return tuple(Scored(i, 1.0) for i in order)
