"""The reranker protocol: what the read pipeline asks of a cross-encoder, local or remote."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Reranker(Protocol):
    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """A relevance score per passage, in the passages' order (higher is better)."""
        ...
