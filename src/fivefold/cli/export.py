"""``fivefold export`` and the import of what it writes: a store (or a scope of it) as JSONL
that ``fivefold import`` reads back into an equal store.

The first line is a header (``{"kind": "header", "format": "fivefold-export", ...}``); then
one ``memory`` line per memory, oldest first, with every field and its history (how often it
was said and when last, and the memory that superseded it, from when and why); then the
``relation`` lines (``relate``'s edges) and, for a whole namespace, its ``alias`` lines. Ids
are the source's own, which the destination does not take: a line names another memory by its
position among the file's memory lines (0 the first).

Export streams the memories a page at a time; only their ids are held. Import reads the file
twice: the first pass checks every line (a bad one is named and nothing is written), the
second writes in batches, holding only the ids the positions became.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import numpy as np

from fivefold import validate
from fivefold.errors import InvalidInput
from fivefold.extract.frames import slot_keys
from fivefold.memory import Memory
from fivefold.store.protocol import Store
from fivefold.store.records import NewEdge, NewMemory
from fivefold.text import repeat_key
from fivefold.types import MemoryRecord, Scope
from fivefold.write.history import statement
from fivefold.write.prepare import FIELDS, MAX_PREDICATE_CHARS
from fivefold.write.relations import alias_of, relation_of
from fivefold.write.vectors import embed_text

FORMAT = "fivefold-export"
VERSION = 1
PAGE = 500


@dataclass(frozen=True, slots=True)
class ExportScope:
    """What an export takes: one namespace (None: every one), narrowed to a user, an agent or
    a session."""

    namespace: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None

    @property
    def whole(self) -> bool:
        return self.user_id is None and self.agent_id is None and self.session_id is None


@dataclass(frozen=True, slots=True)
class Counts:
    memories: int = 0
    relations: int = 0
    aliases: int = 0


def is_export(first_line: str) -> bool:
    """Whether a JSONL file's first line is an export's header."""
    try:
        value = json.loads(first_line)
    except (json.JSONDecodeError, RecursionError):
        return False
    return isinstance(value, dict) and value.get("format") == FORMAT


def export_store(mem: Memory, out: IO[str], scope: ExportScope) -> Counts:
    """Write the scope's memories, relations and (whole namespaces) aliases to ``out``."""
    store = mem.store
    if scope.namespace is not None:
        namespaces = [validate.read_name(scope.namespace, "namespace")]
    else:
        namespaces = store.admin.held_namespaces()
    _line(out, {"kind": "header", "format": FORMAT, "version": VERSION})
    listed = [(ns, _kept_ids(store, ns, scope)) for ns in namespaces]
    # A memory's position in the file: its namespace's offset, then its place there (ids
    # ascend within a namespace).
    offsets, at = {}, 0
    for ns, ids in listed:
        offsets[ns] = at
        at += len(ids)

    by_namespace = dict(listed)

    def position(namespace: str, memory_id: int | None) -> int | None:
        ids = by_namespace.get(namespace, [])
        if memory_id is None:
            return None
        place = bisect.bisect_left(ids, memory_id)
        found = place < len(ids) and ids[place] == memory_id
        return offsets[namespace] + place if found else None

    for ns, ids in listed:
        for start in range(0, len(ids), PAGE):
            page = ids[start : start + PAGE]
            records = store.reads.get_memories(ns, page)
            replaced = [i for i, r in records.items() if r.superseded_by is not None]
            reasons = store.admin.supersession_reasons(ns, replaced)
            for memory_id in page:
                if (record := records.get(memory_id)) is not None:
                    successor = position(ns, record.superseded_by)
                    _line(out, _memory_line(record, successor, reasons.get(memory_id)))
    relations = aliases = 0
    for ns, _ in listed:
        for edge in store.admin.relations(ns):
            if not _admits(scope, ns, edge.scope.user_id, edge.scope.agent_id):
                continue
            _line(out, _relation_line(edge, position(ns, edge.memory_id)))
            relations += 1
        if scope.whole:  # a namespace's names, not any one user's
            for name, alias in store.admin.aliases(ns):
                _line(out, {"kind": "alias", "namespace": ns, "name": name, "alias": alias})
                aliases += 1
    return Counts(at, relations, aliases)


def _kept_ids(store: Store, namespace: str, scope: ExportScope) -> list[int]:
    """The scope's memory ids in the namespace, ascending."""
    wanted = Scope(namespace, scope.user_id, scope.agent_id)
    ids: list[int] = []
    before: int | None = None
    while page := store.reads.recent_ids(wanted, limit=PAGE, before=before):
        before = page[-1]
        if scope.session_id is not None:
            records = store.reads.get_memories(namespace, page)
            page = [i for i in page if i in records and records[i].session_id == scope.session_id]
        ids.extend(page)
    return ids[::-1]


def _admits(scope: ExportScope, namespace: str, user: str | None, agent: str | None) -> bool:
    if scope.session_id is not None:  # an edge belongs to no session
        return False
    return Scope(namespace, scope.user_id, scope.agent_id).admits(namespace, user, agent)


def _memory_line(
    record: MemoryRecord, superseded_by: int | None, why: str | None
) -> dict[str, Any]:
    # A successor outside the export (another session) is not named: the copy is current.
    replaced = superseded_by is not None
    return {
        "kind": "memory",
        "content": record.content,
        "type": record.type.value,
        "predicate": record.predicate,
        "event_at": _iso(record.event_at),
        "created_at": _iso(record.created_at),
        "entities": list(record.entities),
        "importance": record.importance,
        "namespace": record.namespace,
        "user_id": record.user_id,
        "agent_id": record.agent_id,
        "session_id": record.session_id,
        "speaker": record.speaker,
        "metadata": _plain(record.metadata),
        "seen": record.seen,
        "last_seen_at": _iso(record.last_seen_at),
        "superseded_by": superseded_by,
        "valid_to": _iso(record.valid_to) if replaced else None,
        "why": why if replaced else None,
    }


def _relation_line(edge: NewEdge, memory: int | None) -> dict[str, Any]:
    return {
        "kind": "relation",
        "namespace": edge.scope.namespace,
        "user_id": edge.scope.user_id,
        "agent_id": edge.scope.agent_id,
        "source": edge.source,
        "relation": edge.relation,
        "target": edge.target,
        "edge_kind": edge.kind.value,
        "confidence": edge.confidence,
        "valid_from": _iso(edge.valid_from),
        "valid_to": _iso(edge.valid_to),
        "memory": memory,
    }


def _line(out: IO[str], value: Mapping[str, Any]) -> None:
    out.write(json.dumps(value, ensure_ascii=False) + "\n")


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _plain(value: object) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


# -- import -------------------------------------------------------------------------------------
# A memory line holds what ``remember`` takes (but ``supersedes``: the line says it the other
# way round) and what the store learned since.
MEMORY_KEYS = (FIELDS - {"supersedes"}) | {
    "kind",
    "seen",
    "last_seen_at",
    "superseded_by",
    "valid_to",
    "why",
}


@dataclass(frozen=True, slots=True)
class _Read:
    """A memory line as it is written, with its history apart."""

    memory: NewMemory
    seen: int
    last_seen_at: datetime | None
    superseded_by: int | None
    why: str | None


def import_export(
    opened: Callable[[], Memory], path: Path, *, max_entities: int, batch: int = 256
) -> Counts:
    """Write an export into the store ``opened()`` returns: every line checked first
    (``InvalidInput`` naming the first bad one; nothing written, no store made), then
    written. ``max_entities``: the store's bound on a memory's entities."""
    for _ in _lines(path, max_entities):  # the check: nothing is kept
        pass
    mem = opened()
    store = mem.store
    ids: list[int] = []
    pending: list[_Read] = []
    supersessions: list[tuple[Scope, int, int, str]] = []
    relations = aliases = 0

    def flush() -> None:
        if not pending:
            return
        memories = [r.memory for r in pending]
        vectors = mem.embedder.embed([embed_text(m) for m in memories])
        written = store.writes.insert_memories(memories, np.asarray(vectors, np.float32))
        for read, record in zip(pending, written, strict=True):
            if read.seen > 1 and read.last_seen_at is not None:
                # Said once more at that time: the count and the time both as exported.
                store.writes.insert_memories(
                    [],
                    np.zeros((0, mem.embedder.dim), np.float32),
                    seen=[(record.namespace, record.id)],
                    seen_at=read.last_seen_at,
                )
        ids.extend(r.id for r in written)
        pending.clear()

    for _, value in _lines(path, max_entities):
        if isinstance(value, _Read):
            pending.append(value)
            if value.superseded_by is not None:
                scope = value.memory.scope
                supersessions.append((scope, len(ids) + len(pending) - 1, value.superseded_by,
                                      value.why or "imported"))  # fmt: skip
            if len(pending) >= batch:
                flush()
            continue
        flush()
        if isinstance(value, NewEdge):
            memory = None if value.memory_id is None else ids[value.memory_id]
            store.writes.add_edge(NewEdge(**{**_fields(value), "memory_id": memory}))
            relations += 1
        else:
            store.writes.add_alias(*value, merge=False)
            aliases += 1
    flush()
    for scope, old, new, why in supersessions:
        store.writes.supersede(scope, ids[old], ids[new], why)
    return Counts(len(ids), relations, aliases)


def _fields(edge: NewEdge) -> dict[str, Any]:
    return {name: getattr(edge, name) for name in NewEdge.__dataclass_fields__}


def _lines(
    path: Path, max_entities: int
) -> Iterator[tuple[str, _Read | NewEdge | tuple[str, str, str]]]:
    """Each line after the header, read and checked; a position must name a memory line of
    the file (one of the same scope, for a supersession)."""
    memories = 0
    scopes: list[Scope] = []
    wanted: list[tuple[str, int, Scope | None]] = []  # (where, position, scope it must have)
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}: line {number}"
            if not raw.strip():
                continue
            try:
                value = validate.json_line(raw, number)
                kind = value.get("kind")
                if number == 1 or kind == "header":
                    _header(value, number)
                    continue
                if kind == "memory":
                    read = _memory(value, max_entities)
                    if read.superseded_by is not None:
                        wanted.append((where, read.superseded_by, read.memory.scope))
                    scopes.append(read.memory.scope)
                    memories += 1
                    yield where, read
                elif kind == "relation":
                    edge = _relation(value)
                    if edge.memory_id is not None and edge.memory_id >= memories:
                        raise InvalidInput(f"memory {edge.memory_id} is not an earlier memory line")
                    yield where, edge
                elif kind == "alias":
                    yield where, alias_of(value.get("name"), value.get("alias"),
                                          namespace=value.get("namespace"))  # fmt: skip
                else:
                    raise InvalidInput(f"unknown kind {kind!r} (memory, relation or alias)")
            except InvalidInput as exc:
                raise InvalidInput(f"{where}: {exc.detail}; nothing imported") from None
    for where, position, scope in wanted:
        if position >= memories or scopes[position] != scope:
            raise InvalidInput(
                f"{where}: superseded_by {position} names no memory line of the same scope; "
                "nothing imported"
            )


def _header(value: Mapping[str, Any], number: int) -> None:
    if value.get("format") != FORMAT or number != 1:
        raise InvalidInput(f"not a {FORMAT} file (its first line is the header)")
    if value.get("version") != VERSION:
        raise InvalidInput(f"version {value.get('version')!r} of {FORMAT} is not read here")


def _memory(value: Mapping[str, Any], max_entities: int) -> _Read:
    unknown = set(value) - MEMORY_KEYS
    if unknown:
        raise InvalidInput(f"unknown field(s) {sorted(unknown)}")
    created = validate.when(value.get("created_at"), "created_at")
    if created is None:
        raise InvalidInput("created_at is required")
    memory_type = validate.memory_type(value.get("type"))
    if memory_type is None:
        raise InvalidInput("type is required")
    session = validate.optional_name(value.get("session_id"), "session_id")
    content = validate.text(value.get("content"), "content")
    entities = validate.names(value.get("entities"), "entities") or ()
    seen = _count(value.get("seen", 1))
    last_seen = validate.when(value.get("last_seen_at"), "last_seen_at")
    if len(entities) > max_entities:
        raise InvalidInput(f"entities has more than {max_entities} names (write.max_entities)")
    memory = NewMemory(
        content=content,
        type=memory_type,
        predicate=validate.optional_text(
            value.get("predicate"), "predicate", max_chars=MAX_PREDICATE_CHARS
        ),
        event_at=validate.when(value.get("event_at"), "event_at"),
        created_at=created,
        entities=entities,
        importance=validate.unit_interval(value.get("importance", 0.5), "importance"),
        scope=validate.scope(
            value.get("namespace"), value.get("user_id"), value.get("agent_id"), written=True
        ),
        session_id=session,
        metadata=validate.metadata(value.get("metadata")),
        speaker=validate.optional_name(value.get("speaker"), "speaker"),
        # As a write keys it: a conversation turn has no repeats.
        repeat_key=None if session is not None else repeat_key(content),
        # One saying less when it was said again later: the import says it then, once more.
        seen=seen - 1 if seen > 1 and last_seen is not None else seen,
    )
    # What it states a value of, as a write reads it: a later statement may replace it.
    if session is None:
        said = statement(memory.content, memory.said_at)
        memory = replace(memory, slots=slot_keys(said.frames))
    replaced = value.get("superseded_by")
    why = value.get("why")
    if why is not None and not isinstance(why, str):
        raise InvalidInput("why must be a string")
    return _Read(
        memory=memory,
        seen=seen,
        last_seen_at=last_seen,
        superseded_by=None if replaced is None else _position(replaced, "superseded_by"),
        why=why,
    )


def _relation(value: Mapping[str, Any]) -> NewEdge:
    edge, _ = relation_of(
        value.get("source"),
        value.get("relation"),
        value.get("target"),
        kind=value.get("edge_kind", "structural"),
        confidence=value.get("confidence", 1.0),
        valid_from=value.get("valid_from"),
        valid_to=value.get("valid_to"),
        namespace=value.get("namespace"),
        user_id=value.get("user_id"),
        agent_id=value.get("agent_id"),
        record=False,
    )
    memory = value.get("memory")
    return (
        edge
        if memory is None
        else NewEdge(**{**_fields(edge), "memory_id": _position(memory, "memory")})
    )


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"seen must be a whole number of at least 1, got {value!r}")
    return value


def _position(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{name} must be a memory line's position (0 the first), got {value!r}")
    return value


__all__ = ["Counts", "ExportScope", "export_store", "import_export", "is_export"]
