"""Posting lists a process has read, kept for the searches after it while the namespace does
not change.

A lexical search reads each of its (field, token) lists packed into one value (``schema.
BM25_POSTINGS``); at 100k memories the longest hold 50,000-100,000 postings, 10-22 ms each to
read and pack on the server, and queries share their common tokens. A list is kept with the
namespace's generation of the snapshot that read it. Every write that changes a posting bumps
that generation in the same transaction (``Deltas.flush``), so a search whose snapshot sees the
same generation sees the same postings: a list kept for it is the list it would read. A newer
generation drops the namespace's lists; a search from an older snapshot neither reads nor
keeps any. Only whole lists are kept: read without a scope, type or id filter.

Reading a list whole costs more than the pruned strategies' partial reads, once; kept, it costs
nothing after. So a namespace that is searched and not written (``STEADY_SEARCHES`` searches in
this process at one generation) has its lists read whole and kept; one written between its
searches keeps the pruning (each write would make every list be read again).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

__all__ = ["LIST_CACHE_BYTES", "STEADY_SEARCHES", "ListCache"]

# Per store object. A list costs 16 bytes a posting (12 for one weighted column): the longest
# at 100k memories is ~1.5 MB, all of them together ~120 MB.
LIST_CACHE_BYTES = 64 << 20
STEADY_SEARCHES = 4
MAX_NAMESPACES = 4_096  # generations and counts remembered, past which those holding no list go

ListKey = tuple[int, str, bool]  # field, term, whether its second column is kept


class ListCache:
    """Whole posting lists per namespace, least recently used first out past ``limit`` bytes.
    Thread-safe; the arrays it hands out are read-only."""

    def __init__(self, limit: int = LIST_CACHE_BYTES) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._lists: OrderedDict[tuple[str, ListKey], np.ndarray] = OrderedDict()
        self._generations: dict[str, int] = {}
        self._searches: dict[str, int] = {}  # searches at the namespace's generation
        self._bytes = 0

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def steady(self, namespace: str, generation: int) -> bool:
        """Count a search of ``namespace`` at ``generation``: whether ``STEADY_SEARCHES`` or
        more have seen it (this one included)."""
        if self._limit <= 0:
            return False  # nothing read whole would be kept
        with self._lock:
            if not self._at(namespace, generation):
                return False
            self._searches[namespace] = self._searches.get(namespace, 0) + 1
            return self._searches[namespace] >= STEADY_SEARCHES

    def get(self, namespace: str, generation: int, key: ListKey) -> np.ndarray | None:
        with self._lock:
            if self._generations.get(namespace) != generation:
                return None
            found = self._lists.get((namespace, key))
            if found is not None:
                self._lists.move_to_end((namespace, key))
            return found

    def put(self, namespace: str, generation: int, key: ListKey, postings: np.ndarray) -> None:
        size = postings.nbytes
        if size > self._limit:
            return
        with self._lock:
            if not self._at(namespace, generation):
                return
            postings.flags.writeable = False
            old = self._lists.pop((namespace, key), None)
            self._bytes += size - (0 if old is None else old.nbytes)
            self._lists[(namespace, key)] = postings
            while self._bytes > self._limit:
                _, evicted = self._lists.popitem(last=False)
                self._bytes -= evicted.nbytes

    def _at(self, namespace: str, generation: int) -> bool:
        """Under the lock: move ``namespace`` to ``generation`` if it is newer (its lists and
        count dropped); whether the cache is at it (False: an older snapshot's)."""
        held = self._generations.get(namespace)
        if held is not None and generation < held:
            return False
        if held != generation:
            for entry in [e for e in self._lists if e[0] == namespace]:
                self._bytes -= self._lists.pop(entry).nbytes
            if held is None and len(self._generations) >= MAX_NAMESPACES:
                holding = {e[0] for e in self._lists}
                for other in [n for n in self._generations if n not in holding]:
                    del self._generations[other], self._searches[other]
            self._generations[namespace] = generation
            self._searches[namespace] = 0
        return True
