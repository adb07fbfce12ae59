"""Ordering shared by every retriever: confidence descending, then id ascending."""

from __future__ import annotations

from collections.abc import Iterable

from fivefold.types import Scored


def ranked(items: Iterable[Scored]) -> tuple[Scored, ...]:
    return tuple(sorted(items, key=lambda s: (-s.confidence, s.id)))


def clip01(value: float) -> float:
    return 0.0 if value < 0.0 else 1.0 if value > 1.0 else value
