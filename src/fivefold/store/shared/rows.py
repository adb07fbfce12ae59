"""Rows as every backend reads them back: the memory columns in one order, one conversion."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from types import MappingProxyType
from typing import Any

from fivefold.errors import InvalidInput
from fivefold.store.records import Feedback, MemoryAttributes, NewEdge
from fivefold.store.shared.timeconv import from_ts, to_ts
from fivefold.text import normalize_name
from fivefold.types import Edge, EdgeKind, MemoryRecord, MemoryType, Scope

COMENTION = "co_mentioned"  # the relation of the edges co-mentions derive
# A recall converts a few hundred rows: a dict look-up costs a fraction of the enum's call,
# which still reports a type this version does not know.
_TYPES = {t.value: t for t in MemoryType}
_KINDS = {k.value: k for k in EdgeKind}


def scope_columns(scope: Scope) -> tuple[str, str, str]:
    """A scope as its rows hold it: (namespace, user, agent), with no user or agent as ''."""
    return (scope.namespace, scope.user_id or "", scope.agent_id or "")


# The columns a memory row is read with: its own (id to speaker), then its history, which a
# new row has as ``FRESH`` (said once, current).
MEMORY_COLUMNS = 13
FRESH: tuple[Any, ...] = (1, None, None, None)


def with_history(row: Sequence[Any]) -> list[Any]:
    """A row of a memory's own columns gets a new row's history; one read with it keeps its."""
    return [*row, *FRESH[len(row) - MEMORY_COLUMNS :]]


def memory_record(row: Sequence[Any], entities: list[str]) -> MemoryRecord:
    """A memory from its row: its own columns, with or without the history columns after."""
    (
        memory_id,
        namespace,
        user,
        agent,
        session,
        content,
        predicate,
        mtype,
        event_at,
        created_at,
        importance,
        metadata,
        speaker,
        seen,
        last_seen_at,
        superseded_by,
        valid_to,
    ) = with_history(row)  # each backend's MEMORY_COLUMNS, in order
    return MemoryRecord(
        id=int(memory_id),
        content=content,
        type=_TYPES.get(mtype) or MemoryType(mtype),
        predicate=predicate,
        event_at=None if event_at is None else from_ts(event_at),
        created_at=from_ts(created_at),
        entities=tuple(entities),
        importance=float(importance),
        namespace=namespace,
        user_id=user or None,
        agent_id=agent or None,
        session_id=session,
        # Read-only: a cached result must not change under a caller who edits it.
        metadata=MappingProxyType(json.loads(metadata)),
        speaker=speaker,
        seen=int(seen),
        last_seen_at=None if last_seen_at is None else from_ts(last_seen_at),
        superseded_by=None if superseded_by is None else int(superseded_by),
        valid_to=None if valid_to is None else from_ts(valid_to),
    )


def memory_attributes(rows: Sequence[Sequence[Any]]) -> dict[int, MemoryAttributes]:
    """Rows of (id, importance, type, event_at, created_at, speaker, content length,
    superseded_by), by id."""
    return {
        int(i): MemoryAttributes(
            float(v),
            _TYPES.get(t) or MemoryType(t),
            None if e is None else from_ts(e),
            from_ts(c),
            s,
            int(n),
            None if u is None else int(u),
        )
        for i, v, t, e, c, s, n, u in rows
    }


def edge_kind(value: str) -> EdgeKind:
    """An edge's stored kind, read the way ``_TYPES`` reads a memory's type."""
    return _KINDS.get(value) or EdgeKind(value)


def relation_from_row(namespace: str, row: Sequence[Any]) -> NewEdge:
    """An explicit edge as the backends' SELECT_RELATIONS read it."""
    source, relation, target, kind, confidence, valid_from, valid_to, user, agent, memory = row
    return NewEdge(
        source=str(source),
        relation=str(relation),
        target=str(target),
        kind=EdgeKind(kind),
        confidence=float(confidence),
        valid_from=None if valid_from is None else from_ts(valid_from),
        valid_to=None if valid_to is None else from_ts(valid_to),
        scope=Scope(namespace, user or None, agent or None),
        memory_id=None if memory is None else int(memory),
    )


def edge_values(
    edge: NewEdge, source: int, target: int, memory_id: int | None, now: float
) -> tuple[Any, ...]:
    """The columns of a new explicit edge, in the backends' INSERT_EDGE order."""
    scope = edge.scope
    return (
        scope.namespace,
        scope.user_id or "",
        scope.agent_id or "",
        source,
        target,
        edge.relation,
        edge.kind.value,
        edge.confidence,
        None if edge.valid_from is None else to_ts(edge.valid_from),
        None if edge.valid_to is None else to_ts(edge.valid_to),
        memory_id,
        now,
    )


def stored_edge(edge: NewEdge, edge_id: int, memory_id: int | None) -> Edge:
    return Edge(
        id=edge_id,
        namespace=edge.scope.namespace,
        source=edge.source,
        relation=edge.relation,
        target=edge.target,
        kind=edge.kind,
        confidence=edge.confidence,
        valid_from=edge.valid_from,
        valid_to=edge.valid_to,
        memory_id=memory_id,
    )


def refuse_self_edge(edge: NewEdge, source: object, target: object) -> None:
    """A relation joins two entities: two names of one (its spellings, an alias) are refused
    before the edge (or the memory recording it) is kept. ``source`` and ``target``: the
    entities' ids, or before a store is read the names' keys (one key is one entity)."""
    if source == target:
        raise InvalidInput(
            f"{edge.source!r} and {edge.target!r} name one entity: a relation joins two"
        )


def taken_by(
    alias: str, entity_id: int, taken: Sequence[Sequence[Any]], *, merge: bool
) -> list[int]:
    """The entities to fold into ``entity_id`` before ``alias`` can name it: another entity
    whose own name the alias is (with ``merge``). An alias names one entity: refused when it is
    another entity's alias, or (without ``merge``) its name (``taken``: (entity id, entity
    name, whether the key is an alias) rows). Accepted, a write naming it would link to one
    entity and a query naming it resolve to the other."""
    folded = []
    for other, name, is_alias in taken:
        if int(other) == entity_id:
            continue
        if is_alias or not merge:
            what = "an alias of" if is_alias else "the name of"
            raise InvalidInput(
                f"{alias!r} already names the entity {str(name)!r} ({what} it): an alias names "
                "one entity; merge_entities folds two into one"
            )
        folded.append(int(other))
    return folded


def new_keys(rows: Sequence[Sequence[Any]]) -> list[tuple[str, Any, str]]:
    """(key now, the rest of the row, key stored) for each (name, *rest, key stored) row whose
    key ``normalize_name`` now makes otherwise: a name written with combining marks, which
    split its words before (SQLite schema 7, Postgres 8). Such a key should meet no other row's
    (an older key held no combining mark; what was a word break still is one, and a mark that
    made the older key lose a letter keeps it now); the migrations keep a row's older key
    where one would, rather than fail the store's opening."""
    out = []
    for name, *rest, stored in rows:
        key = normalize_name(str(name))
        if key and key != stored:
            out.append((key, tuple(rest), str(stored)))
    return out


def ids_by_key(rows: Iterable[Sequence[Any]]) -> dict[str, list[int]]:
    """(key, memory id) rows as key -> memory ids, in the rows' order (a slot's holders newest
    first, a repeat key's memories oldest first)."""
    out: dict[str, list[int]] = {}
    for key, memory_id in rows:
        out.setdefault(str(key), []).append(int(memory_id))
    return out


def feedback_entries(rows: Sequence[Sequence[Any]]) -> list[Feedback]:
    """Feedback from (id, query, args, created_at, memory_id, label) rows ordered by id: one
    entry per id (a memory id of None: every label of it has been forgotten)."""
    entries: dict[int, tuple[str, str, float, dict[int, float]]] = {}
    for feedback_id, query, args, created, memory_id, label in rows:
        entry = entries.setdefault(int(feedback_id), (str(query), str(args), float(created), {}))
        if memory_id is not None:
            entry[3][int(memory_id)] = float(label)
    return [
        Feedback(i, query, args, MappingProxyType(labels), from_ts(created))
        for i, (query, args, created, labels) in entries.items()
    ]
