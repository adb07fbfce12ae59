"""What one recall costs besides its wall time: the process's CPU time, and how many store calls
it makes and how much CPU they and the query embedding take.

The bench wraps the store's read roles and the embedder in counting proxies (``profiled``); the
engine itself carries no counter, so a recall outside the bench pays nothing for them. CPU time
is ``time.process_time`` around the recall (every thread of the process: the legs run on
threads of their own) and ``time.thread_time`` inside each store or embedder call (SQLite runs
on the calling thread; so does ONNX Runtime with one intra-op thread, while with more its
pool's threads are not counted: the bench's ``--embed-threads 1`` measures the whole of it).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fivefold.config import Config
from fivefold.embed.base import Embedder, Vectors
from fivefold.memory import Memory
from fivefold.store.protocol import Store

__all__ = ["Profile", "RecallCost", "costed", "profiled"]

T = TypeVar("T")

# The roles a recall reads through; writes and admin are not asked during the timed queries.
_ROLES = ("reads", "search", "models")


@dataclass(slots=True)
class Profile:
    """What the proxies saw since the last ``take``; shared by the threads of a recall."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: Counter[str] = field(default_factory=Counter)
    call_cpu: dict[str, float] = field(default_factory=dict)
    store_cpu: float = 0.0
    embed_cpu: float = 0.0
    embeds: int = 0

    def add_call(self, name: str, cpu: float) -> None:
        with self.lock:
            self.calls[name] += 1
            self.call_cpu[name] = self.call_cpu.get(name, 0.0) + cpu
            self.store_cpu += cpu

    def add_embed(self, cpu: float) -> None:
        with self.lock:
            self.embeds += 1
            self.embed_cpu += cpu

    def take(self, cpu_ms: float) -> RecallCost:
        with self.lock:
            store_ms, embed_ms = self.store_cpu * 1000.0, self.embed_cpu * 1000.0
            cost = RecallCost(
                cpu_ms=cpu_ms,
                store_cpu_ms=store_ms,
                embed_cpu_ms=embed_ms,
                other_cpu_ms=max(cpu_ms - store_ms - embed_ms, 0.0),
                store_calls=sum(self.calls.values()),
                embeds=self.embeds,
                calls=dict(self.calls),
                call_cpu_ms={name: cpu * 1000.0 for name, cpu in self.call_cpu.items()},
            )
            self.calls.clear()
            self.call_cpu.clear()
            self.store_cpu = self.embed_cpu = 0.0
            self.embeds = 0
        return cost


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallCost:
    """One recall: CPU milliseconds of the process, of its store calls and of its query
    embeddings (the rest is Python: parsing, planning, fusion, the policies), and its calls."""

    cpu_ms: float
    store_cpu_ms: float
    embed_cpu_ms: float
    other_cpu_ms: float
    store_calls: int
    embeds: int
    calls: dict[str, int]
    call_cpu_ms: dict[str, float]


class _Role:
    def __init__(self, role: object, prefix: str, profile: Profile) -> None:
        self._role, self._prefix, self._profile = role, prefix, profile

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._role, name)
        if not callable(target):
            return target
        label, profile = f"{self._prefix}.{name}", self._profile

        def counted(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time()
            try:
                return target(*args, **kwargs)
            finally:
                profile.add_call(label, time.thread_time() - start)

        return counted


class _Store:
    """The store with its read roles counted; everything else is the store's own."""

    def __init__(self, store: Store, profile: Profile) -> None:
        self._store = store
        for role in _ROLES:
            setattr(self, role, _Role(getattr(store, role), role, profile))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


class _Embedder:
    def __init__(self, embedder: Embedder, profile: Profile) -> None:
        self._embedder, self._profile = embedder, profile

    @property
    def name(self) -> str:
        return self._embedder.name

    @property
    def dim(self) -> int:
        return self._embedder.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        start = time.thread_time()
        try:
            return self._embedder.embed(texts)
        finally:
            self._profile.add_embed(time.thread_time() - start)


def profiled(mem: Memory, config: Config) -> tuple[Memory, Profile]:
    """A second facade over ``mem``'s open store and embedder whose store reads and embeddings
    are counted. Closing ``mem`` closes the store; the second one is only dropped."""
    profile = Profile()
    store: Any = _Store(mem.store, profile)
    return Memory(store, _Embedder(mem.embedder, profile), config), profile


def costed(call: Callable[[], T], profile: Profile) -> tuple[T, RecallCost]:
    """``call``'s result and its cost; the profile is emptied first."""
    profile.take(0.0)
    start = time.process_time()
    out = call()
    return out, profile.take((time.process_time() - start) * 1000.0)
