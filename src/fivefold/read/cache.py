"""The result cache (Mode B): fused, post-policy results keyed by the normalized query,
the scope and the recall arguments; TTL 30 s, 1,000 entries, LRU. And the candidates'
attributes, which recalls of one namespace share until a write in it.

Invalidation is by version: an entry remembers the namespace generation it was computed at, and
every write in the namespace (remember, forget, relate, alias) bumps that generation in the
store itself, so a stale result is never served, even after a write by another process.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from fivefold.store.records import MemoryAttributes
from fivefold.types import RecallResult

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class _Entry:
    version: int
    expires: float
    result: RecallResult


class ResultCache:
    def __init__(
        self, *, ttl_seconds: float, max_entries: int, clock: Clock = time.monotonic
    ) -> None:
        self._ttl = ttl_seconds
        self._max = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(*parts: object) -> str:
        return hashlib.sha256("\x1f".join(repr(p) for p in parts).encode()).hexdigest()

    def get(self, key: str, version: int) -> RecallResult | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.version != version or entry.expires <= self._clock():
                if entry is not None:
                    del self._entries[key]
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry.result

    def put(self, key: str, version: int, result: RecallResult) -> None:
        if self._max <= 0 or self._ttl <= 0:
            return
        with self._lock:
            self._entries[key] = _Entry(version, self._clock() + self._ttl, result)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


class AttributeCache:
    """Memories' attributes by namespace, as of one generation of it: a recall reads a few
    hundred, mostly the same ones as the recall before, and any write that could change one
    (a new, forgotten or superseded memory) moves the generation. A namespace's entries go
    whole when its generation moves; the least recent namespace goes first past
    ``max_entries`` in all."""

    def __init__(self, max_entries: int) -> None:
        self._max = max_entries
        self._spaces: OrderedDict[str, tuple[int, dict[int, MemoryAttributes]]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(
        self, namespace: str, generation: int, ids: Iterable[int]
    ) -> dict[int, MemoryAttributes]:
        with self._lock:
            held = self._spaces.get(namespace)
            if held is None or held[0] != generation:
                return {}
            self._spaces.move_to_end(namespace)
            known = held[1]
            return {i: known[i] for i in ids if i in known}

    def put(self, namespace: str, generation: int, found: Mapping[int, MemoryAttributes]) -> None:
        if self._max <= 0 or not found:
            return
        with self._lock:
            held = self._spaces.get(namespace)
            if held is None or held[0] != generation:
                if held is not None:
                    self._size -= len(held[1])
                held = (generation, {})
                self._spaces[namespace] = held
            known = held[1]
            before = len(known)
            known.update(found)
            self._size += len(known) - before
            self._spaces.move_to_end(namespace)
            while self._size > self._max and self._spaces:
                _, (_, gone) = self._spaces.popitem(last=False)
                self._size -= len(gone)
