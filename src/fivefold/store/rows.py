"""Rows as every backend reads them back: the memory columns in one order, one conversion."""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from fivefold.model import MemoryRecord, MemoryType
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
