"""The result cache (Mode B): fused, post-policy results keyed by the normalized query,
the scope and the recall arguments; TTL 30 s, 1,000 entries, LRU.

Invalidation is by version: an entry remembers the namespace generation it was computed at, and
every write in the namespace (remember, forget, relate, alias) bumps that generation in the
store itself, so a stale result is never served, even after a write by another process.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

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
