"""``fivefold.Client``: the methods and result types of ``fivefold.Memory``, over HTTP.

Code moves from embedded to served by changing the line that opens the memory::

    mem = fivefold.Client("http://127.0.0.1:8420", api_key="ff_...")
    mem.remember("Priya recommended Postgres for Project Kestrel")
    mem.recall("what did Priya recommend?").hits[0].memory.content

Errors come back as the same ``FivefoldError`` classes the engine raises (an unreachable
server is a ``StoreError``; a refused key an ``AccessDenied``). Asyncio code has
``fivefold.AsyncClient``, the same calls awaited.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import httpx

from fivefold import remote
from fivefold.types import (
    Edge,
    Entity,
    Explanation,
    MemoryRecord,
    RecallResult,
    StoreStats,
    TrainReport,
)

__all__ = ["Client"]

T = TypeVar("T")


class Client:
    """A remote memory. Thread-safe (one connection pool); a context manager."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self._url,
            headers=remote.headers(api_key),
            timeout=timeout,
            transport=transport,
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- writes ----------------------------------------------------------------------------------
    def remember(self, content: str, **fields: Any) -> MemoryRecord:
        """``Memory.remember`` (same keyword arguments)."""
        return self._send(remote.remember(content, fields))

    def remember_many(self, items: Iterable[Mapping[str, Any]]) -> list[MemoryRecord]:
        """``Memory.remember_many``: one request, all or nothing."""
        return self._send(remote.remember_many(items))

    def relate(self, source: str, relation: str, target: str, **fields: Any) -> Edge:
        return self._send(remote.relate(source, relation, target, fields))

    def alias(self, name: str, alias: str, *, namespace: str | None = None) -> Entity:
        return self._send(remote.alias(name, alias, namespace))

    def forget(self, memory_id: int, **scope: Any) -> None:
        self._send(remote.forget(memory_id, scope))

    def remember_messages(
        self, messages: Sequence[Mapping[str, Any]], **fields: Any
    ) -> list[MemoryRecord]:
        return self._send(remote.remember_messages(messages, fields))

    def supersede(self, old_id: int, new_id: int, **scope: Any) -> None:
        self._send(remote.supersede(old_id, new_id, scope))

    def forget_scope(self, namespace: str, **scope: Any) -> int:
        return self._send(remote.forget_scope(namespace, scope))

    # -- reads -----------------------------------------------------------------------------------
    def history(self, memory_id: int, **scope: Any) -> list[MemoryRecord]:
        return self._send(remote.history(memory_id, scope))

    def get(self, memory_id: int, **scope: Any) -> MemoryRecord:
        return self._send(remote.get(memory_id, scope))

    def browse(
        self, *, limit: int = 50, before: int | None = None, **scope: Any
    ) -> list[MemoryRecord]:
        return self._send(remote.browse(limit, before, scope))

    def recall(self, query: str, k: int = 10, **fields: Any) -> RecallResult:
        return self._send(remote.recall(query, k, fields))

    def explain(self, query: str, k: int = 10, **fields: Any) -> Explanation:
        return self._send(remote.explain(query, k, fields))

    def feedback(
        self, recall_id: str, *, relevant: Sequence[int] = (), used: Sequence[int] = ()
    ) -> int:
        return self._send(remote.feedback(recall_id, relevant, used))

    def train(self, *, namespace: str | None = None) -> TrainReport:
        return self._send(remote.train(namespace))

    def stats(self, *, namespace: str | None = None) -> StoreStats:
        return self._send(remote.stats(namespace))

    # -- the wire --------------------------------------------------------------------------------
    def _send(self, call: remote.Call[T]) -> T:
        if call.path is None:
            return call.decode(None)
        try:
            response = self._http.request(
                call.method,
                call.path,
                params=call.params,
                content=call.content,
                headers=call.headers,
            )
        except httpx.HTTPError as exc:
            raise remote.unreachable(self._url, exc) from exc
        return remote.answer(call, response, self._url)
