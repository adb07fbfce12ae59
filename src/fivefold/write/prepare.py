"""Turn one ``remember`` call (or one item of ``remember_many``) into a fully resolved
``NewMemory``: validate every field, then infer what the caller left out."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np

from fivefold import validate
from fivefold.errors import InvalidInput
from fivefold.extract.entities import extract_entities
from fivefold.extract.infer import infer_predicate, infer_type
from fivefold.extract.speaker import infer_speaker
from fivefold.read.parse.temporal import infer_event_at
from fivefold.store.records import NewMemory, Supersedes
from fivefold.text import repeat_key
from fivefold.types import MemoryType

FIELDS = frozenset(
    {
        "content",
        "type",
        "predicate",
        "event_at",
        "entities",
        "importance",
        "namespace",
        "user_id",
        "agent_id",
        "session_id",
        "metadata",
        "created_at",
        "speaker",
        "supersedes",
    }
)
OUTRIGHT = "said outright"  # the reason of a supersession the caller names
MAX_PREDICATE_CHARS = 500
VECTOR_FIELD = "vector"  # an item's precomputed embedding (``remember_many``)


def prepare(
    item: Mapping[str, Any],
    *,
    known: Mapping[str, str] | Callable[[str], Mapping[str, str]],
    now: datetime,
    default_importance: float,
    max_entities: int,
) -> NewMemory:
    unknown = set(item) - FIELDS
    if unknown:
        raise InvalidInput(f"unknown field(s) {sorted(unknown)}; accepted: {sorted(FIELDS)}")
    content = validate.stored_text(item.get("content"), "content").strip()
    created = validate.when(item.get("created_at"), "created_at") or now
    given_event = validate.when(item.get("event_at"), "event_at")
    given_type = validate.memory_type(item.get("type"))
    predicate = validate.optional_stored_text(
        item.get("predicate"), "predicate", max_chars=MAX_PREDICATE_CHARS
    )
    importance = item.get("importance")
    entities = validate.names(item.get("entities"), "entities")
    if entities is not None and len(entities) > max_entities:
        raise InvalidInput(
            f"entities has {len(entities)} names; a memory links at most {max_entities} "
            "(write.max_entities): split it, or name the ones that matter"
        )
    speaker = validate.optional_name(item.get("speaker"), "speaker")
    replaced = item.get("supersedes")
    superseded = () if replaced is None else (validate.memory_id(replaced, "supersedes"),)

    # A date in the text matters only to decide the type, or to date an event: a memory given
    # as a fact, say, is not scanned (a tenth of a bulk write's time).
    scan = given_event is None and given_type in (None, MemoryType.EVENT)
    inferred_event = given_event or (infer_event_at(content, reference=created) if scan else None)
    mtype = given_type or infer_type(content, has_event_date=inferred_event is not None)
    event_at = given_event
    if mtype is MemoryType.EVENT and event_at is None:
        # An event with no date in it happened when it was said (a conversation turn).
        event_at = inferred_event or created
    if predicate is None:
        predicate = infer_predicate(content)
    if entities is None:
        text = f"{content}\n{predicate or ''}"
        # A callable reads the names the text may link as they are needed (``NamesByKey``).
        entities = tuple(extract_entities(text, known(text) if callable(known) else known))
    return NewMemory(
        content=content,
        type=mtype,
        predicate=predicate,
        event_at=event_at,
        created_at=created,
        entities=entities,
        importance=(
            default_importance
            if importance is None
            else validate.unit_interval(importance, "importance")
        ),
        scope=validate.scope(
            item.get("namespace", "default"),
            item.get("user_id"),
            item.get("agent_id"),
            written=True,
        ),
        session_id=validate.optional_name(item.get("session_id"), "session_id"),
        metadata=validate.metadata(item.get("metadata")),
        speaker=speaker.strip() if speaker else infer_speaker(content),
        repeat_key=None if item.get("session_id") is not None else repeat_key(content),
        supersedes=tuple(Supersedes(i, OUTRIGHT, outright=True) for i in superseded),
    )


def check(item: object, *, max_entities: int | None = None, dim: int | None = None) -> None:
    """Raise ``InvalidInput`` for what ``remember`` refuses in an item's own fields, writing
    nothing, so a caller can refuse a bad item before it opens a store (a refused write at a
    new path left an empty store there). ``max_entities`` and ``dim`` (the embedder's: a given
    vector's length) are the store's to say; None leaves them unchecked. The store's rules (an
    alias, a name's key) are not checked here."""
    if not isinstance(item, Mapping):
        raise InvalidInput(f"must be a dict, got {type(item).__name__}")
    if VECTOR_FIELD in item:
        given_vector(item[VECTOR_FIELD], dim)
    prepare(
        {k: v for k, v in item.items() if k != VECTOR_FIELD},
        known={},
        now=datetime.now(UTC),
        default_importance=0.5,
        max_entities=sys.maxsize if max_entities is None else max_entities,
    )


def given_vector(raw: object, dim: int | None) -> np.ndarray:
    """A precomputed vector as float64 numbers (a float32 cast would turn 1e39 into inf and its
    square into a zero norm): ``dim`` of them (any number when None), finite, not all zero."""
    count = "a list of" if dim is None else str(dim)
    try:
        vector = np.asarray(raw, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInput(f"vector must be {count} numbers") from None
    if (dim is not None and vector.shape != (dim,)) or not np.all(np.isfinite(vector)):
        raise InvalidInput(f"vector must be {count} finite numbers")
    if not np.any(vector):
        raise InvalidInput("vector is all zeros")
    return vector
