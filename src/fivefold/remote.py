"""The requests of ``fivefold.Client`` and ``fivefold.AsyncClient``, built and answered once.

Each function here turns a ``Memory`` method's arguments into a ``Call``: the HTTP request and
how its JSON answer becomes the engine's result type. The two clients only send calls (one
blocking, one awaiting), so they cannot come to differ in what they send or return.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

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

__all__ = [
    "Call",
    "alias",
    "answer",
    "browse",
    "explain",
    "feedback",
    "forget",
    "forget_scope",
    "get",
    "headers",
    "history",
    "recall",
    "relate",
    "remember",
    "remember_many",
    "remember_messages",
    "stats",
    "supersede",
    "train",
    "unreachable",
]

T = TypeVar("T")
JSON_HEADERS = {"content-type": "application/json"}


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request and the decoding of its answer. ``path`` None: nothing to send (an empty
    batch), ``decode(None)`` is the result."""

    method: str
    path: str | None
    decode: Callable[[Any], T]
    params: dict[str, Any] | None = None
    content: bytes | None = None

    @property
    def headers(self) -> dict[str, str] | None:
        return JSON_HEADERS if self.content is not None else None


def headers(api_key: str | None) -> dict[str, str]:
    """What every request of a client carries: its key, when it has one."""
    return {"authorization": f"Bearer {api_key}"} if api_key else {}


def answer(call: Call[T], response: httpx.Response, url: str) -> T:
    """The result of ``call`` from the server's ``response``, or the error it names."""
    if response.status_code == 204:
        return call.decode(None)
    try:
        data = response.json()
    except ValueError as exc:
        raise StoreError(
            f"{url}{call.path} answered {response.status_code} without JSON: "
            "is this a fivefold server?"
        ) from exc
    if response.is_error:
        raise _error(response.status_code, data)
    return call.decode(data)


def unreachable(url: str, exc: httpx.HTTPError) -> StoreError:
    return StoreError(f"cannot reach the fivefold server at {url}: {exc}")


# -- the calls, one per method of Memory (same arguments) ---------------------------------------
def remember(content: str, fields: Mapping[str, Any]) -> Call[MemoryRecord]:
    return _post("/v1/memories", {"content": content, **fields}, _one(MemoryRecord))


def remember_many(items: Iterable[Mapping[str, Any]]) -> Call[list[MemoryRecord]]:
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise InvalidInput(f"items must be a list of dicts, got {type(items).__name__}")
    batch = []
    for position, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InvalidInput(f"item {position} is a {type(item).__name__}, not a dict")
        batch.append(_body(item))
    if not batch:
        return Call("POST", None, lambda _: [])
    return Call("POST", "/v1/memories/batch", _many(MemoryRecord), content=_json({"items": batch}))


def relate(source: str, relation: str, target: str, fields: Mapping[str, Any]) -> Call[Edge]:
    body = {"source": source, "relation": relation, "target": target, **fields}
    return _post("/v1/relate", body, _one(Edge))


def alias(name: str, alias: str, namespace: str | None) -> Call[Entity]:
    body = {"name": name, "alias": alias, "namespace": namespace}
    return _post("/v1/aliases", body, _one(Entity))


def forget(memory_id: int, scope: Mapping[str, Any]) -> Call[None]:
    return _query("DELETE", f"/v1/memories/{_id(memory_id)}", scope, _nothing)


def remember_messages(
    messages: Sequence[Mapping[str, Any]], fields: Mapping[str, Any]
) -> Call[list[MemoryRecord]]:
    return _post("/v1/messages", {"messages": list(messages), **fields}, _many(MemoryRecord))


def supersede(old_id: int, new_id: int, scope: Mapping[str, Any]) -> Call[None]:
    return _post("/v1/supersede", {"old_id": _id(old_id), "new_id": _id(new_id), **scope}, _nothing)


def forget_scope(namespace: str, scope: Mapping[str, Any]) -> Call[int]:
    return _post("/v1/forget", {"namespace": namespace, **scope}, lambda d: _id(d["forgotten"]))


def history(memory_id: int, scope: Mapping[str, Any]) -> Call[list[MemoryRecord]]:
    return _query("GET", f"/v1/memories/{_id(memory_id)}/history", scope, _many(MemoryRecord))


def get(memory_id: int, scope: Mapping[str, Any]) -> Call[MemoryRecord]:
    return _query("GET", f"/v1/memories/{_id(memory_id)}", scope, _one(MemoryRecord))


def browse(limit: int, before: int | None, scope: Mapping[str, Any]) -> Call[list[MemoryRecord]]:
    fields = {"limit": limit, "before": before, **scope}
    return _query("GET", "/v1/memories", fields, _many(MemoryRecord))


def recall(query: str, k: int, fields: Mapping[str, Any]) -> Call[RecallResult]:
    return _post("/v1/recall", {"query": query, "k": k, **fields}, _one(RecallResult))


def explain(query: str, k: int, fields: Mapping[str, Any]) -> Call[Explanation]:
    return _post("/v1/explain", {"query": query, "k": k, **fields}, _one(Explanation))


def feedback(recall_id: str, relevant: Sequence[int], used: Sequence[int]) -> Call[int]:
    body = {"recall_id": recall_id, "relevant": list(relevant), "used": list(used)}
    return _post("/v1/feedback", body, lambda d: _id(d["id"]))


def train(namespace: str | None) -> Call[TrainReport]:
    return _post("/v1/train", {"namespace": namespace}, _one(TrainReport))


def stats(namespace: str | None) -> Call[StoreStats]:
    return _query("GET", "/v1/stats", {"namespace": namespace}, _one(StoreStats))


# -- building blocks -----------------------------------------------------------------------------
def _post(path: str, fields: Mapping[str, Any], decode: Callable[[Any], T]) -> Call[T]:
    return Call("POST", path, decode, content=_json(_body(fields)))


def _query(
    method: str, path: str, fields: Mapping[str, Any], decode: Callable[[Any], T]
) -> Call[T]:
    """A call whose arguments go in the query string (GET, DELETE)."""
    return Call(method, path, decode, params=_body(fields))


def _one(kind: type[T]) -> Callable[[Any], T]:
    return lambda data: from_json(kind, data)


def _many(kind: type[T]) -> Callable[[Any], list[T]]:
    return lambda data: [from_json(kind, item) for item in data]


def _nothing(data: Any) -> None:
    return None


def _json(body: Any) -> bytes:
    # Encoded here, before anything is sent: what JSON cannot carry is bad input, as in Memory
    # (numpy's numbers as Memory takes them).
    try:
        return json.dumps(body, allow_nan=False, default=json_number).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInput(f"the request cannot be sent as JSON: {exc}") from exc


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
