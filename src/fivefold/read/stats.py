"""What one recall knows of its namespace, read from the store once: its memory count and
generation (the caches key on it), and the document frequencies of the terms it weighs (the
optimizer's rarity, BM25's squash, negation and rewrites ask for the same few terms; a term
not asked before is read then, with the rest in one call)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from fivefold.store.protocol import Reads


class RecallStats:
    """Shared by a recall's legs, which may run on other threads."""

    def __init__(self, reads: Reads, namespace: str) -> None:
        self._reads = reads
        self.namespace = namespace
        state = reads.state(namespace)
        self.memories = state.memories
        self.generation = state.generation
        self._lock = threading.Lock()
        self._total: int | None = None
        self._frequencies: dict[str, int] = {}

    def frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The namespace's indexed memory count and each term's document frequency."""
        with self._lock:
            missing = [t for t in dict.fromkeys(terms) if t not in self._frequencies]
            if missing or self._total is None:
                total, found = self._reads.term_document_frequencies(self.namespace, missing)
                self._total = total
                self._frequencies.update(found)
            return self._total, {t: self._frequencies[t] for t in terms}
