"""Posting lists a process has read, kept for the searches after it while the namespace does
not change.

A lexical search reads each of its (field, token) lists whole (``lexical.Lexical``); at 100k
memories the longest hold 50,000-100,000 postings (~1.4 MB), and queries share their common
tokens. A list is kept with the version of the namespace's row in the snapshot that read it:
its generation, which every write that changes a posting bumps in the same transaction
(``Deltas.flush``), and the row version's ``xmin``, which tells a namespace made again (a
schema dropped and created) from the one the lists came from, though its generations restart.
(A point-in-time restore under a running process could bring both back with other postings:
restart such processes after one.) A search whose snapshot sees the same version sees the same
postings: a list kept for it is the list it would read. A newer version drops the namespace's
lists; a search from an older snapshot neither reads nor keeps any. The ids of a user's or an
agent's memories (``Lexical._scope_ids``) are kept the same way, under a key of their own.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict

import numpy as np

__all__ = ["LIST_CACHE_BYTES", "ListCache", "Version"]

# Per store object. A list costs 14 bytes a posting (19 in the field with two columns): the
# longest at 100k memories is ~1.4 MB, all of them together ~90 MB.
LIST_CACHE_BYTES = 64 << 20
# Counted for each list besides its postings and its term: the entry, its key and the array's
# header (some 860 bytes a one-posting list, all told). An empty list is not free.
ENTRY_BYTES = 1_024
# Namespaces remembered (version), least recently searched out with their lists.
MAX_NAMESPACES = 4_096

ListKey = tuple[int, str]  # field, term (field -1: a scope's memory ids)
Version = tuple[int, int]  # the namespace row's generation and xmin


class ListCache:
    """Whole posting lists per namespace, least recently used first out past ``limit`` bytes.
    Thread-safe; the arrays it hands out are read-only."""

    def __init__(self, limit: int = LIST_CACHE_BYTES) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._lists: OrderedDict[tuple[str, ListKey], np.ndarray] = OrderedDict()
        self._keys: dict[str, set[ListKey]] = {}  # per namespace, to drop its lists at once
        # Least recently searched first.
        self._versions: OrderedDict[str, Version] = OrderedDict()
        self._names: dict[str, str] = {}
        self._bytes = 0
        self.evicted = 0

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def get(self, namespace: str, version: Version, key: ListKey) -> np.ndarray | None:
        with self._lock:
            if self._versions.get(namespace) != version:
                return None
            self._versions.move_to_end(namespace)
            found = self._lists.get((namespace, key))
            if found is not None:
                self._lists.move_to_end((namespace, key))
            return found

    def put(self, namespace: str, version: Version, key: ListKey, postings: np.ndarray) -> None:
        size = _cost(key, postings)
        with self._lock:
            if size > self._limit or not self._at(namespace, version):
                return
            name = self._canonical(namespace)
            postings.flags.writeable = False
            old = self._lists.pop((name, key), None)
            self._bytes += size - (0 if old is None else _cost(key, old))
            self._lists[(name, key)] = postings
            self._keys.setdefault(name, set()).add(key)
            while self._bytes > self._limit:
                (owner, evicted), array = self._lists.popitem(last=False)
                self._bytes -= _cost(evicted, array)
                self._keys[owner].discard(evicted)
                self.evicted += 1

    def _canonical(self, namespace: str) -> str:
        """One string per name, however many equal ones callers pass (entries hold it)."""
        return self._names.setdefault(namespace, namespace)

    def _at(self, namespace: str, version: Version) -> bool:
        """Under the lock: move ``namespace`` to ``version`` unless it is older than the one
        held (its lists dropped); whether the cache is at it. Past ``MAX_NAMESPACES``, the
        least recently searched namespace goes, with its lists."""
        held = self._versions.get(namespace)
        if held is not None and version[0] < held[0]:
            return False  # an older snapshot's (or a namespace made again: its lists are not)
        if held != version:
            self._forget(namespace)
            if len(self._versions) >= MAX_NAMESPACES:
                self._forget(next(iter(self._versions)))
            self._versions[self._canonical(namespace)] = version
        self._versions.move_to_end(namespace)
        return True

    def _forget(self, namespace: str) -> None:
        name = self._canonical(namespace)
        for key in self._keys.pop(name, set()):
            self._bytes -= _cost(key, self._lists.pop((name, key)))
        self._versions.pop(name, None)
        self._names.pop(name, None)


def _cost(key: ListKey, postings: np.ndarray) -> int:
    """The bytes a kept list is counted for: its postings, its term and ``ENTRY_BYTES``."""
    return postings.nbytes + sys.getsizeof(key[1]) + ENTRY_BYTES
