"""Query embeddings kept for the next recall of the same text: an agent asks the same question
again (a retry, a second turn, the same prompt template), and the embedding is most of a
recall's CPU.

Keyed by the namespace and the exact text the model embeds, one text a call: a text embedded
alone gets the same vector every time, while in a batch its padding could move its last bits;
one tenant's questions never answer (or speed up) another's, so the time a recall takes tells
nobody what another namespace asked. A text's vector does
not depend on the store, so no write invalidates it; the entries are bounded, least recently
used out first. The vectors handed out are read-only: a caller cannot change the next one's.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from fivefold.embed.base import Embedder, Vectors

__all__ = ["MAX_QUERY_VECTORS", "QueryVectors"]

# 1,024 MiniLM vectors are 1.5 MiB.
MAX_QUERY_VECTORS = 1024


class QueryVectors:
    """Thread-safe. Two threads missing the same text at once both embed it (the same vector):
    the model does not run under the lock."""

    def __init__(self, embedder: Embedder, *, max_entries: int = MAX_QUERY_VECTORS) -> None:
        self._embedder = embedder
        self._max = max_entries
        self._entries: OrderedDict[tuple[str, str], Vectors] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def cached(self, namespace: str, text: str) -> Vectors | None:
        """``text``'s vector (shape ``(1, dim)``) if ``namespace`` keeps it; nothing embedded."""
        key = (namespace, text)
        with self._lock:
            vector = self._entries.get(key)
            if vector is not None:
                self._entries.move_to_end(key)
                self.hits += 1
            return vector

    def embed(self, namespace: str, text: str) -> Vectors:
        """``text``'s vector, shape ``(1, dim)``: kept for ``namespace``, or embedded and kept."""
        vector = self.cached(namespace, text)
        if vector is not None:
            return vector
        vector = self._embedder.embed([text])
        vector.flags.writeable = False
        with self._lock:
            self.misses += 1
            if self._max <= 0:
                return vector
            self._entries[namespace, text] = vector
            self._entries.move_to_end((namespace, text))
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
        return vector

    def __len__(self) -> int:
        return len(self._entries)
