"""Posting lists a process has read, kept for the searches after it while the namespace does
not change.

A lexical search reads each of its (field, token) lists packed into one value (``schema.
BM25_POSTINGS``); at 100k memories the longest hold 50,000-100,000 postings, 10-22 ms each to
read and pack on the server, and queries share their common tokens. A list is kept with the
version of the namespace's row in the snapshot that read it: its generation, which every write
that changes a posting bumps in the same transaction (``Deltas.flush``), and the row version's
``xmin``, which tells a namespace made again (a schema dropped and created, a restore) from the
one the lists came from, though its generations restart. A search whose snapshot sees the same
version sees the same postings: a list kept for it is the list it would read. A newer version
drops the namespace's lists; a search from an older snapshot neither reads nor keeps any. Only
whole lists are kept: read without a scope, type or id filter.

Reading a list whole costs more than the pruned strategies' partial reads, once; kept, it costs
nothing after. So a namespace that is searched and not written (``STEADY_SEARCHES`` searches in
this process at one version) has its lists read whole and kept; one written between its
searches keeps the pruning (each write would make every list be read again), and so does one
whose lists do not stay kept (one larger than the cache, or evicted since the version began):
read whole every time, they would cost more than pruning.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

__all__ = ["LIST_CACHE_BYTES", "STEADY_SEARCHES", "ListCache", "Version"]

# Per store object. A list costs 16 bytes a posting (12 for one weighted column): the longest
# at 100k memories is ~1.5 MB, all of them together ~120 MB.
LIST_CACHE_BYTES = 64 << 20
ENTRY_BYTES = 256  # counted for each list besides its postings: an empty one is not free
STEADY_SEARCHES = 4
MAX_NAMESPACES = 4_096  # versions and counts remembered, past which those holding no list go

ListKey = tuple[int, str, bool]  # field, term, whether its second column is kept
Version = tuple[int, int]  # the namespace row's generation and xmin


class ListCache:
    """Whole posting lists per namespace, least recently used first out past ``limit`` bytes.
    Thread-safe; the arrays it hands out are read-only."""

    def __init__(self, limit: int = LIST_CACHE_BYTES) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._lists: OrderedDict[tuple[str, ListKey], np.ndarray] = OrderedDict()
        self._keys: dict[str, set[ListKey]] = {}  # per namespace, to drop its lists at once
        self._versions: dict[str, Version] = {}
        self._searches: dict[str, int] = {}  # searches at the namespace's version
        self._crowded: set[str] = set()  # a list of it refused or evicted at this version
        self._bytes = 0
        self.evicted = 0

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def steady(self, namespace: str, version: Version) -> bool:
        """Count a search of ``namespace`` at ``version``: whether ``STEADY_SEARCHES`` or more
        have seen it (this one included) and its lists have stayed kept."""
        with self._lock:
            if not self._at(namespace, version):
                return False
            self._searches[namespace] = self._searches.get(namespace, 0) + 1
            steady = self._searches[namespace] >= STEADY_SEARCHES
            return steady and namespace not in self._crowded

    def get(self, namespace: str, version: Version, key: ListKey) -> np.ndarray | None:
        with self._lock:
            if self._versions.get(namespace) != version:
                return None
            found = self._lists.get((namespace, key))
            if found is not None:
                self._lists.move_to_end((namespace, key))
            return found

    def put(self, namespace: str, version: Version, key: ListKey, postings: np.ndarray) -> None:
        size = postings.nbytes + ENTRY_BYTES
        with self._lock:
            if not self._at(namespace, version):
                return
            if size > self._limit:
                self._crowded.add(namespace)
                return
            postings.flags.writeable = False
            old = self._lists.pop((namespace, key), None)
            self._bytes += size - (0 if old is None else old.nbytes + ENTRY_BYTES)
            self._lists[(namespace, key)] = postings
            self._keys.setdefault(namespace, set()).add(key)
            while self._bytes > self._limit:
                (owner, evicted), array = self._lists.popitem(last=False)
                self._bytes -= array.nbytes + ENTRY_BYTES
                self._keys[owner].discard(evicted)
                self._crowded.add(owner)
                self.evicted += 1

    def _at(self, namespace: str, version: Version) -> bool:
        """Under the lock: move ``namespace`` to ``version`` unless it is older than the one
        held (its lists, count and crowding dropped); whether the cache is at it."""
        held = self._versions.get(namespace)
        if held is not None and version[0] < held[0]:
            return False  # an older snapshot's (or a namespace made again: its lists are not)
        if held != version:
            for key in self._keys.pop(namespace, set()):
                self._bytes -= self._lists.pop((namespace, key)).nbytes + ENTRY_BYTES
            if held is None and len(self._versions) >= MAX_NAMESPACES:
                for other in [n for n in self._versions if not self._keys.get(n)]:
                    del self._versions[other], self._searches[other]
                    self._keys.pop(other, None)
                    self._crowded.discard(other)
            self._versions[namespace] = version
            self._searches[namespace] = 0
            self._crowded.discard(namespace)
        return True
