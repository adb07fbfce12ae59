"""Rows as every backend reads them back: the memory columns in one order, one conversion."""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from fivefold.model import EdgeKind, MemoryRecord, MemoryType, NewEdge, Scope
from fivefold.store.timeconv import from_ts


def memory_record(row: Sequence[Any], entities: list[str]) -> MemoryRecord:
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
    ) = row  # the columns of each backend's MEMORY_COLUMNS, in this order
    return MemoryRecord(
        id=int(memory_id),
        content=content,
        type=MemoryType(mtype),
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
    )


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
