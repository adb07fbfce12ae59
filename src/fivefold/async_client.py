"""``fivefold.AsyncClient``: ``fivefold.Client`` for asyncio code, each method a coroutine.

The same methods, arguments, results and errors as ``fivefold.Client`` (both send the calls of
``fivefold.remote``)::

    async with fivefold.AsyncClient("http://127.0.0.1:8420", api_key="ff_...") as mem:
        await mem.remember("Priya recommended Postgres for Project Kestrel")
        result = await mem.recall("what did Priya recommend?")
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

__all__ = ["AsyncClient"]

T = TypeVar("T")


class AsyncClient:
    """A remote memory for one event loop (httpx's connection pool is bound to it); an async
    context manager."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._url = url.rstrip("/")
        self._http = httpx.AsyncClient(
            base_url=self._url,
            headers=remote.headers(api_key),
            timeout=timeout,
            transport=transport,
        )

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- writes ----------------------------------------------------------------------------------
    async def remember(self, content: str, **fields: Any) -> MemoryRecord:
        """``Memory.remember`` (same keyword arguments)."""
        return await self._send(remote.remember(content, fields))

    async def remember_many(self, items: Iterable[Mapping[str, Any]]) -> list[MemoryRecord]:
        """``Memory.remember_many``: one request, all or nothing."""
        return await self._send(remote.remember_many(items))

    async def relate(self, source: str, relation: str, target: str, **fields: Any) -> Edge:
        return await self._send(remote.relate(source, relation, target, fields))

    async def alias(self, name: str, alias: str, *, namespace: str | None = None) -> Entity:
        return await self._send(remote.alias(name, alias, namespace))

    async def forget(self, memory_id: int, **scope: Any) -> None:
        await self._send(remote.forget(memory_id, scope))

    async def remember_messages(
        self, messages: Sequence[Mapping[str, Any]], **fields: Any
    ) -> list[MemoryRecord]:
        return await self._send(remote.remember_messages(messages, fields))

    async def supersede(self, old_id: int, new_id: int, **scope: Any) -> None:
        await self._send(remote.supersede(old_id, new_id, scope))

    async def forget_scope(self, namespace: str, **scope: Any) -> int:
        return await self._send(remote.forget_scope(namespace, scope))

    # -- reads -----------------------------------------------------------------------------------
    async def history(self, memory_id: int, **scope: Any) -> list[MemoryRecord]:
        return await self._send(remote.history(memory_id, scope))

    async def get(self, memory_id: int, **scope: Any) -> MemoryRecord:
        return await self._send(remote.get(memory_id, scope))

    async def browse(
        self, *, limit: int = 50, before: int | None = None, **scope: Any
    ) -> list[MemoryRecord]:
        return await self._send(remote.browse(limit, before, scope))

    async def recall(self, query: str, k: int = 10, **fields: Any) -> RecallResult:
        return await self._send(remote.recall(query, k, fields))

    async def explain(self, query: str, k: int = 10, **fields: Any) -> Explanation:
        return await self._send(remote.explain(query, k, fields))

    async def feedback(
        self, recall_id: str, *, relevant: Sequence[int] = (), used: Sequence[int] = ()
    ) -> int:
        return await self._send(remote.feedback(recall_id, relevant, used))

    async def train(self, *, namespace: str | None = None) -> TrainReport:
        return await self._send(remote.train(namespace))

    async def stats(self, *, namespace: str | None = None) -> StoreStats:
        return await self._send(remote.stats(namespace))

    # -- the wire --------------------------------------------------------------------------------
    async def _send(self, call: remote.Call[T]) -> T:
        if call.path is None:
            return call.decode(None)
        try:
            response = await self._http.request(
                call.method,
                call.path,
                params=call.params,
                content=call.content,
                headers=call.headers,
            )
        except httpx.HTTPError as exc:
            raise remote.unreachable(self._url, exc) from exc
        return remote.answer(call, response, self._url)
