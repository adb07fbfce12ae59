"""Temporal retriever: a B-tree range scan on ``event_at`` over Event memories in the window.

The window is a filter, not a ranking: every event inside is equally in, with confidence 1.0. A
list still needs an order; we use recency (latest first), so a cut at ``depth`` keeps the events
closest to the end of the window, which is what "last week" or "recently" usually wants. Facts
and preferences never appear here (no created_at fallback).
"""

from __future__ import annotations

from fivefold.store.protocol import Search
from fivefold.types import Scope, Scored, TimeWindow


def temporal_search(
    search: Search, scope: Scope, window: TimeWindow, *, depth: int
) -> tuple[Scored, ...]:
    events = search.events_between(scope, window.start, window.end, depth)
    return tuple(Scored(memory_id, 1.0) for memory_id, _ in events)
