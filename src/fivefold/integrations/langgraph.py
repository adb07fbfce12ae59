"""``FivefoldStore``: a LangGraph ``BaseStore`` whose search is fivefold's recall.

How LangGraph's items live in fivefold (every part can be read back from the memory alone):

- a namespace tuple ``("users", "u1")`` is the fivefold namespace ``"langgraph.users.u1"``
  (``prefix``, then the labels, joined by "."; LangGraph refuses a "." inside a label, so the
  name splits back into the tuple). Each tuple is a tenant of its own: no recall, statistic or
  learned model of one tuple sees another's items;
- a key is the memory's ``agent_id``, as ``"key:"`` and the SHA-256 of the key (any string
  fits, and a get or put finds its item by an indexed lookup);
- the item is one memory: its content is the text of the indexed fields (the store's
  ``index={"fields": [...]}``, or the put's ``index=``; by default the whole value as JSON),
  and its metadata ``{"langgraph": {"namespace", "key", "value", "created_at", "indexed"}}``
  holds the value itself (JSON, at most 64 KiB) and when the key was first put. ``updated_at``
  is when the memory was written. A put writes the new memory, then forgets the one it
  replaces; a put of the same value again writes nothing.

``search(prefix, query=...)`` recalls in each namespace under the prefix (``offset + limit``
hits of each, or 100 when a filter is given, and never more than 100), applies the filter to
the values, and merges them by score; without a query it lists the newest items first. An
item put with ``index=False`` is stored and listed, never recalled. Embeddings are fivefold's
own model, so an ``index`` config's ``embed`` and ``dims`` are refused rather than ignored.
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from fivefold.client import Client
from fivefold.errors import InvalidInput
from fivefold.integrations.recall import missing
from fivefold.memory import Memory
from fivefold.types import Hit, MemoryRecord

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        get_text_at_path,
        validate_op_namespace,
    )
except ImportError as exc:
    raise missing("langgraph", "langgraph") from exc

__all__ = ["FivefoldStore"]

FIELD = "langgraph"
PAGE = 100  # memories a listing reads at once, and the hits a filtered query looks at
Namespace = tuple[str, ...]


class FivefoldStore(BaseStore):
    """LangGraph's long-term store on a fivefold ``Memory`` or ``Client``. Thread-safe when
    its memory is; the async calls run the blocking ones on a worker thread."""

    def __init__(
        self,
        memory: Memory | Client,
        *,
        index: IndexConfig | None = None,
        prefix: str = "langgraph",
    ) -> None:
        if not isinstance(memory, Memory | Client):
            raise TypeError(
                f"FivefoldStore takes a fivefold.Memory or Client, got {type(memory).__name__}"
            )
        refused = sorted({"embed", "dims"} & set(index or {}))
        if refused:
            raise ValueError(
                f"FivefoldStore embeds with the memory's own model; leave out {refused} "
                "(index= reads only 'fields')"
            )
        if not prefix or "." in prefix:
            raise ValueError(f"prefix must be a non-empty name without '.', got {prefix!r}")
        self._memory = memory
        self._fields = list((index or {}).get("fields") or ["$"])
        self._prefix = prefix

    @property
    def memory(self) -> Memory | Client:
        return self._memory

    # -- the mapping ------------------------------------------------------------------------------
    def namespace_of(self, namespace: Namespace) -> str:
        """The fivefold namespace of a LangGraph namespace tuple."""
        return ".".join((self._prefix, *namespace))

    def tuple_of(self, name: str) -> Namespace | None:
        """The LangGraph namespace of a fivefold namespace; None for one that is not this
        store's."""
        head, dot, rest = name.partition(".")
        return tuple(rest.split(".")) if head == self._prefix and dot and rest else None

    # -- BaseStore --------------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order: a read sees the puts before it in the same batch."""
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                results.append(self._get(op.namespace, op.key))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown operation: {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # -- the operations ---------------------------------------------------------------------------
    def _get(self, namespace: Namespace, key: str) -> Item | None:
        for record in self._records(namespace, key):
            item = _item(record)
            if item is not None and item.key == key:
                return item
        return None

    def _records(self, namespace: Namespace, key: str) -> list[MemoryRecord]:
        """The memories of a key, newest first: one, or two while a put replaces it."""
        return self._memory.browse(
            limit=PAGE, namespace=self.namespace_of(namespace), agent_id=_agent(key)
        )

    def _put(self, op: PutOp) -> None:
        if op.ttl is not None:
            raise NotImplementedError("FivefoldStore keeps items until deleted (no ttl)")
        name, agent = self.namespace_of(op.namespace), _agent(op.key)
        old = self._records(op.namespace, op.key)
        if op.value is None:
            if old:
                self._memory.forget_scope(name, agent_id=agent)
            return
        first = next((item for item in map(_item, old) if item is not None), None)
        value = _json_value(op.value)
        text = self._text(value, op.index)
        meta = {
            "namespace": list(op.namespace),
            "key": op.key,
            "value": value,
            "created_at": (first.created_at if first else datetime.now(UTC)).isoformat(),
            "indexed": text is not None,
        }
        # With nothing to index, the memory still needs text: the value's JSON, never recalled.
        content = text if text is not None else get_text_at_path(value, "$")[0]
        record = self._memory.remember(
            content, namespace=name, agent_id=agent, metadata={FIELD: meta}
        )
        for stale in old:
            if stale.id != record.id:  # an identical put is the stored memory itself
                self._memory.forget(stale.id, namespace=name, agent_id=agent)

    def _text(self, value: dict[str, Any], index: Sequence[str] | bool | None) -> str | None:
        if index is False:
            return None
        paths = self._fields if index is None or index is True else list(index)
        texts = [text for path in paths for text in get_text_at_path(value, path)]
        joined = "\n".join(text for text in texts if text.strip())
        return joined or None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        wanted = op.offset + op.limit
        if op.limit <= 0 or op.offset < 0:
            return []
        names = [
            ns for ns in self._namespaces() if ns[: len(op.namespace_prefix)] == op.namespace_prefix
        ]
        if op.query:
            found: Iterator[SearchItem] = heapq.merge(
                *(self._recall(ns, op.query, wanted, op.filter) for ns in names),
                key=lambda item: -(item.score or 0.0),
            )
        else:
            # Unfiltered, a page of offset + limit memories holds every item wanted.
            size = PAGE if op.filter else min(wanted, PAGE)
            found = (item for ns in names for item in self._listing(ns, op.filter, size))
        out = []
        for position, item in enumerate(found):
            if position >= wanted:
                break
            if position >= op.offset:
                out.append(item)
        return out

    def _recall(
        self, namespace: Namespace, query: str, wanted: int, where: Mapping[str, Any] | None
    ) -> list[SearchItem]:
        k = PAGE if where else min(wanted, PAGE)
        result = self._memory.recall(query, k, namespace=self.namespace_of(namespace))
        items = (_search_item(hit.memory, hit) for hit in result.hits if _indexed(hit.memory))
        return [item for item in items if item is not None and _matches(item.value, where)]

    def _listing(
        self, namespace: Namespace, where: Mapping[str, Any] | None, size: int
    ) -> Iterator[SearchItem]:
        before: int | None = None
        while True:
            page = self._memory.browse(
                limit=size, before=before, namespace=self.namespace_of(namespace)
            )
            for record in page:
                item = _search_item(record, None)
                if item is not None and _matches(item.value, where):
                    yield item
            if len(page) < size:
                return
            before = page[-1].id

    def _namespaces(self) -> list[Namespace]:
        """This store's namespaces that hold a memory, sorted."""
        counts = self._memory.stats().namespaces
        names = (self.tuple_of(name) for name, count in counts.items() if count > 0)
        return sorted(ns for ns in names if ns is not None)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        names = [
            ns
            for ns in self._namespaces()
            if all(_match(condition, ns) for condition in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            names = sorted({ns[: op.max_depth] for ns in names})
        return names[op.offset : op.offset + op.limit]


def _json_value(value: Mapping[str, Any]) -> dict[str, Any]:
    # The value is kept as JSON: what JSON cannot carry is refused before anything is written.
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(
            f"a LangGraph value must be JSON to be stored in fivefold: {exc}"
        ) from exc
    return dict(value)


def _agent(key: str) -> str:
    return "key:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _item(record: MemoryRecord) -> Item | None:
    """The LangGraph item a memory holds; None for a memory this store did not write."""
    meta = record.metadata.get(FIELD)
    if not isinstance(meta, Mapping):
        return None
    return Item(
        value=dict(meta["value"]),
        key=str(meta["key"]),
        namespace=tuple(meta["namespace"]),
        created_at=datetime.fromisoformat(meta["created_at"]),
        updated_at=record.created_at,
    )


def _search_item(record: MemoryRecord, hit: Hit | None) -> SearchItem | None:
    item = _item(record)
    if item is None:
        return None
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=None if hit is None else hit.score,
    )


def _indexed(record: MemoryRecord) -> bool:
    meta = record.metadata.get(FIELD)
    return isinstance(meta, Mapping) and bool(meta.get("indexed", True))


def _match(condition: MatchCondition, namespace: Namespace) -> bool:
    """LangGraph's namespace match: a prefix or suffix of labels, "*" matching any one."""
    path = tuple(condition.path)
    if not path:
        return True
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(want in ("*", have) for want, have in zip(path, part, strict=True))


def _matches(value: Mapping[str, Any], where: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter on a value: equal, or compared by ``$eq $ne $gt $gte $lt $lte``."""
    return all(_compare(value.get(name), wanted) for name, wanted in (where or {}).items())


def _compare(have: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(name).startswith("$") for name in wanted):
            return all(_operator(have, name, bound) for name, bound in wanted.items())
        return isinstance(have, Mapping) and all(
            _compare(have.get(name), inner) for name, inner in wanted.items()
        )
    if isinstance(wanted, list | tuple):
        return (
            isinstance(have, list | tuple)
            and len(have) == len(wanted)
            and all(_compare(h, w) for h, w in zip(have, wanted, strict=True))
        )
    return bool(have == wanted)


def _operator(have: Any, name: str, bound: Any) -> bool:
    if name == "$eq":
        return bool(have == bound)
    if name == "$ne":
        return bool(have != bound)
    if name not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"unsupported filter operator: {name}")
    try:
        left, right = float(have), float(bound)
    except (TypeError, ValueError):
        return False
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[
        name
    ]
