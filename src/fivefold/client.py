"""``fivefold.Client``: the methods and result types of ``fivefold.Memory``, over HTTP.

Code moves from embedded to served by changing the line that opens the memory::

    mem = fivefold.Client("http://127.0.0.1:8420", api_key="ff_...")
    mem.remember("Priya recommended Postgres for Project Kestrel")
    mem.recall("what did Priya recommend?").hits[0].memory.content

Errors come back as the same ``FivefoldError`` classes the engine raises (an unreachable
server is a ``StoreError``; a refused key an ``AccessDenied``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

import httpx

from fivefold.errors import FivefoldError, InvalidInput, StoreError
from fivefold.serve.errors import ERRORS
from fivefold.types import (
    Edge,
    Entity,
    Explanation,
    MemoryRecord,
    RecallResult,
    StoreStats,
    TrainReport,
)
from fivefold.validate import json_number
from fivefold.wire import from_json

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
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self._url, headers=headers, timeout=timeout, transport=transport
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
        body = _body({"content": content, **fields})
        return from_json(MemoryRecord, self._call("POST", "/v1/memories", json=body))

    def remember_many(self, items: Iterable[Mapping[str, Any]]) -> list[MemoryRecord]:
        """``Memory.remember_many``: one request, all or nothing."""
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise InvalidInput(f"items must be a list of dicts, got {type(items).__name__}")
        batch = []
        for position, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise InvalidInput(f"item {position} is a {type(item).__name__}, not a dict")
            batch.append(_body(item))
        if not batch:
            return []
        data = self._call("POST", "/v1/memories/batch", json={"items": batch})
        return [from_json(MemoryRecord, record) for record in data]

    def relate(self, source: str, relation: str, target: str, **fields: Any) -> Edge:
        body = _body({"source": source, "relation": relation, "target": target, **fields})
        return from_json(Edge, self._call("POST", "/v1/relate", json=body))

    def alias(self, name: str, alias: str, *, namespace: str | None = None) -> Entity:
        body = _body({"name": name, "alias": alias, "namespace": namespace})
        return from_json(Entity, self._call("POST", "/v1/aliases", json=body))

    def forget(self, memory_id: int, **scope: Any) -> None:
        self._call("DELETE", f"/v1/memories/{_id(memory_id)}", params=_body(scope))

    def remember_messages(
        self, messages: Sequence[Mapping[str, Any]], **fields: Any
    ) -> list[MemoryRecord]:
        body = _body({"messages": list(messages), **fields})
        return [from_json(MemoryRecord, r) for r in self._call("POST", "/v1/messages", json=body)]

    def supersede(self, old_id: int, new_id: int, **scope: Any) -> None:
        body = _body({"old_id": _id(old_id), "new_id": _id(new_id), **scope})
        self._call("POST", "/v1/supersede", json=body)

    def forget_scope(self, namespace: str, **scope: Any) -> int:
        body = _body({"namespace": namespace, **scope})
        return _id(self._call("POST", "/v1/forget", json=body)["forgotten"])

    # -- reads -----------------------------------------------------------------------------------
    def history(self, memory_id: int, **scope: Any) -> list[MemoryRecord]:
        path = f"/v1/memories/{_id(memory_id)}/history"
        return [from_json(MemoryRecord, r) for r in self._call("GET", path, params=_body(scope))]

    def get(self, memory_id: int, **scope: Any) -> MemoryRecord:
        data = self._call("GET", f"/v1/memories/{_id(memory_id)}", params=_body(scope))
        return from_json(MemoryRecord, data)

    def browse(
        self, *, limit: int = 50, before: int | None = None, **scope: Any
    ) -> list[MemoryRecord]:
        params = _body({"limit": limit, "before": before, **scope})
        return [
            from_json(MemoryRecord, r) for r in self._call("GET", "/v1/memories", params=params)
        ]

    def recall(self, query: str, k: int = 10, **fields: Any) -> RecallResult:
        body = _body({"query": query, "k": k, **fields})
        return from_json(RecallResult, self._call("POST", "/v1/recall", json=body))

    def explain(self, query: str, k: int = 10, **fields: Any) -> Explanation:
        body = _body({"query": query, "k": k, **fields})
        return from_json(Explanation, self._call("POST", "/v1/explain", json=body))

    def feedback(
        self, recall_id: str, *, relevant: Sequence[int] = (), used: Sequence[int] = ()
    ) -> int:
        body = {"recall_id": recall_id, "relevant": list(relevant), "used": list(used)}
        return _id(self._call("POST", "/v1/feedback", json=body)["id"])

    def train(self, *, namespace: str | None = None) -> TrainReport:
        body = _body({"namespace": namespace})
        return from_json(TrainReport, self._call("POST", "/v1/train", json=body))

    def stats(self, *, namespace: str | None = None) -> StoreStats:
        return from_json(
            StoreStats, self._call("GET", "/v1/stats", params=_body({"namespace": namespace}))
        )

    # -- the wire --------------------------------------------------------------------------------
    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        if "json" in kwargs:  # encoded here: what JSON cannot carry is bad input, as in Memory
            try:
                body = kwargs.pop("json")  # numpy's numbers as Memory takes them
                kwargs["content"] = json.dumps(body, allow_nan=False, default=json_number).encode()
            except (TypeError, ValueError, RecursionError) as exc:
                raise InvalidInput(f"the request cannot be sent as JSON: {exc}") from exc
            kwargs["headers"] = {"content-type": "application/json"}
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise StoreError(f"cannot reach the fivefold server at {self._url}: {exc}") from exc
        if response.status_code == 204:
            return None
        try:
            data = response.json()
        except ValueError as exc:
            raise StoreError(
                f"{self._url}{path} answered {response.status_code} without JSON: "
                "is this a fivefold server?"
            ) from exc
        if response.is_error:
            raise _error(response.status_code, data)
        return data


def _error(status: int, data: Any) -> FivefoldError:
    error = data.get("error", {}) if isinstance(data, dict) else {}
    kind = ERRORS.get(str(error.get("code")), FivefoldError)
    return kind(str(error.get("message") or f"the server answered {status}"))


def _id(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"a memory id is an integer, got {value!r}")
    return value


def _body(fields: Mapping[str, Any]) -> dict[str, Any]:
    """JSON of the arguments: datetimes as ISO 8601, sequences as lists, a single type name as
    a list (as ``Memory.recall`` accepts), ``None`` left out so the server's default applies."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None:
            continue
        if isinstance(value, datetime):
            value = value.isoformat()
        elif name == "types" and isinstance(value, str):
            value = [value]
        elif name == "vector" and hasattr(value, "tolist"):
            value = value.tolist()
        elif isinstance(value, Sequence) and not isinstance(value, str | bytes):
            value = list(value)
        out[name] = value
    return out
