"""What a batch of new memories writes besides its rows, worked out once for every backend.

A batch is written in a few statements, not a few per memory: its entity names are resolved
together, and its mentions, mention counts, co-mention edges and session spans are gathered
here first, with the rules of one memory at a time (the first ``max_entities`` names, co-mention
edges among the first ``max_comention_entities`` distinct entities). Each backend turns these
into its own statements.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any

from fivefold.embed.base import Vectors
from fivefold.errors import InvalidInput
from fivefold.store.records import NewMemory
from fivefold.store.shared import context
from fivefold.store.shared.context import Group, SessionRow
from fivefold.store.shared.rows import memory_record, scope_columns
from fivefold.store.shared.timeconv import to_ts
from fivefold.text import normalize_name
from fivefold.types import MemoryRecord

Named = list[tuple[str, str]]  # (spelling, key) of each name of a memory, in order
Stored = tuple[int, SessionRow]  # a stored session row: id, row
PairKey = tuple[str, str, str, int, int]  # namespace, user, agent, entity a < entity b


def entity_keys(names: Sequence[str]) -> Named:
    """Each name with its key, in order; a name without letters or digits is refused before
    anything is written."""
    out = []
    for name in names:
        key = normalize_name(name)
        if not key:
            raise InvalidInput(f"entity name {name!r} has no letters or digits")
        out.append((name.strip(), key))
    return out


def first_spellings(
    memories: Sequence[NewMemory], named: Sequence[Named]
) -> dict[tuple[str, str], tuple[str, float]]:
    """(namespace, key) -> the spelling and creation time an entity is created with: those of
    the first memory naming it, in the order keys are first met (new entities get their ids in
    that order)."""
    first: dict[tuple[str, str], tuple[str, float]] = {}
    for memory, names in zip(memories, named, strict=True):
        for name, key in names:
            first.setdefault((memory.scope.namespace, key), (name, to_ts(memory.created_at)))
    return first


@dataclass
class Mentions:
    """``rows``: (namespace, entity, memory, joined, type); ``bumps``: mentions gained per
    (namespace, entity); ``pairs``: per co-mention edge, the support gained and the creation
    time of the first memory giving it (a new edge's, as if written one at a time)."""

    rows: list[tuple[str, int, int, bool, str]] = field(default_factory=list)
    bumps: Counter[tuple[str, int]] = field(default_factory=Counter)
    pairs: dict[PairKey, tuple[int, float]] = field(default_factory=dict)


def mentions(
    memories: Sequence[NewMemory],
    ids: Sequence[int],
    named: Sequence[Named],
    resolved: Mapping[tuple[str, str], int],
    max_comention: int,
) -> Mentions:
    """Each memory's distinct entities (two spellings of one entity are one mention); the
    first ``max_comention`` of them, sorted, are joined pairwise by co-mention edges."""
    out = Mentions()
    for memory, memory_id, names in zip(memories, ids, named, strict=True):
        scope = memory.scope
        namespace = scope.namespace
        entity_ids = list(dict.fromkeys(resolved[namespace, key] for _, key in names))
        joined = sorted(entity_ids[:max_comention])
        for entity_id in entity_ids:
            out.rows.append(
                (namespace, entity_id, memory_id, entity_id in joined, memory.type.value)
            )
            out.bumps[namespace, entity_id] += 1
        created = to_ts(memory.created_at)
        user, agent = scope.user_id or "", scope.agent_id or ""
        for i, a in enumerate(joined):
            for b in joined[i + 1 :]:
                support, first = out.pairs.get((namespace, user, agent, a, b), (0, created))
                out.pairs[namespace, user, agent, a, b] = (support + 1, first)
    return out


def memory_values(memory: NewMemory) -> tuple[Any, ...]:
    """A memory's columns as both backends write them, after its id: namespace, user and agent
    ('' for none), session, content, predicate, type, event and creation times, importance,
    metadata (JSON), speaker."""
    scope = memory.scope
    return (
        scope.namespace,
        scope.user_id or "",
        scope.agent_id or "",
        memory.session_id,
        memory.content,
        memory.predicate,
        memory.type.value,
        None if memory.event_at is None else to_ts(memory.event_at),
        to_ts(memory.created_at),
        memory.importance,
        json.dumps(dict(memory.metadata)),
        memory.speaker,
    )


def history_values(memory: NewMemory) -> tuple[Any, ...]:
    """A new row's repeat key, how often its batch said it, and when last (its creation)."""
    said_again = to_ts(memory.created_at) if memory.seen > 1 else None
    return (memory.repeat_key, memory.seen, said_again)


def slot_rows(memories: Sequence[NewMemory], ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """(namespace, user, agent, slot, memory id) of each slot of the batch's memories."""
    return [
        (*scope_columns(m.scope), slot, memory_id)
        for m, memory_id in zip(memories, ids, strict=True)
        for slot in m.slots
    ]


def supersessions(memories: Sequence[NewMemory], ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """What the batch's memories supersede, as the backends' ``SUPERSEDE`` takes it: (new id,
    valid_to, reason, old id, namespace, user, agent, new id, outright). ``valid_to`` is when
    the newer one holds from; a position earlier in the batch is its id."""
    out = []
    for memory, memory_id in zip(memories, ids, strict=True):
        scope = memory.scope
        where = scope_columns(scope)
        for old in memory.supersedes + tuple(
            replace(s, target=ids[s.target]) for s in memory.supersedes_batch
        ):
            out.append(
                (memory_id, to_ts(memory.said_at), old.reason, old.target, *where, memory_id,
                 old.outright)
            )  # fmt: skip
    return out


def folded_pairs(pairs: Sequence[Sequence[Any]], keep: int, gone: int) -> list[tuple[Any, ...]]:
    """Co-mention edges of ``gone`` (namespace, user, agent, source, target, support, created)
    as edges of ``keep``, each pair ordered (a < b); an edge between the two goes."""
    out = []
    for namespace, user, agent, source, target, support, created in pairs:
        a, b = sorted(keep if e == gone else int(e) for e in (source, target))
        if a != b:
            out.append((namespace, user, agent, a, b, int(support), created))
    return out


def refuse_cycle(old: int, new: int, successor: Callable[[int], int | None]) -> None:
    """``old`` may not be superseded by ``new`` when ``new`` is itself, through the memories
    that superseded it in turn, superseded by ``old``: that would make a cycle."""
    if old == new:
        raise InvalidInput(f"memory {old} cannot supersede itself")
    seen, at = {new}, successor(new)
    while at is not None and at not in seen:
        if at == old:
            raise InvalidInput(
                f"memory {new} is superseded by {old} (through the memories after it): "
                f"{old} cannot be superseded by {new}"
            )
        seen.add(at)
        at = successor(at)


def records(
    rows: Sequence[Sequence[Any]], found: Mentions, names: Mapping[int, str]
) -> list[MemoryRecord]:
    """The batch's records as a read of what it wrote returns them, from its rows (each an id
    then its ``memory_values``, as written), its mentions and its entities' stored names
    (id -> name), with the read's conversions (``rows.memory_record``) and its order of
    entities (by id). Built, not read back: once the write has committed, nothing may fail
    its caller (a store closed, or a Ctrl-C, between the commit and a read-back told the
    caller that a stored write failed)."""
    held: dict[int, list[int]] = {}
    for _, entity_id, memory_id, _, _ in found.rows:
        held.setdefault(memory_id, []).append(entity_id)
    return [
        memory_record(row, [names[e] for e in sorted(held.get(int(row[0]), ()))]) for row in rows
    ]


def fresh_records(
    memories: Sequence[NewMemory], records: Sequence[MemoryRecord]
) -> list[MemoryRecord]:
    """The records of a batch's new rows with what their batch said of their history."""
    return [
        r if m.seen == 1 else replace(r, seen=m.seen, last_seen_at=m.created_at)
        for m, r in zip(memories, records, strict=True)
    ]


def group_of(memory: NewMemory) -> Group | None:
    """The session a memory belongs to (None: it has none)."""
    if not memory.session_id:
        return None
    return (*scope_columns(memory.scope), memory.session_id)


def sessions(memories: Sequence[NewMemory]) -> dict[Group, tuple[float, float]]:
    """Each session the batch writes to, with the earliest and latest creation time in it."""
    spans: dict[Group, tuple[float, float]] = {}
    for memory in memories:
        group = group_of(memory)
        if group is not None:
            created = to_ts(memory.created_at)
            low, high = spans.get(group, (created, created))
            spans[group] = (min(low, created), max(high, created))
    return spans


def session_members(memories: Sequence[NewMemory], ids: Sequence[int]) -> dict[Group, list[int]]:
    """The new memories of each session, in write order."""
    groups: dict[Group, list[int]] = {}
    for memory, memory_id in zip(memories, ids, strict=True):
        group = group_of(memory)
        if group is not None:
            groups.setdefault(group, []).append(memory_id)
    return groups


def session_context(
    memories: Sequence[NewMemory],
    ids: Sequence[int],
    vectors: Vectors,
    smoothing: context.Smoothing,
    newest: Callable[[Sequence[tuple[Group, int]], int], dict[Group, list[Stored]]],
) -> context.BatchRows:
    """The session context of a batch not yet written: new session memories get their
    neighbours' text and vectors, and become context of the ones before them. ``newest(wanted,
    n)`` reads, for each (session, id) wanted, the session's ``n`` newest stored rows below
    that id, in id order (below: another writer's rows of the same session, committed since
    this batch took its ids, come after it)."""
    rows = context.BatchRows()
    members = session_members(memories, ids)
    if smoothing.window == 0 or not members:
        return rows
    position = {memory_id: i for i, memory_id in enumerate(ids)}
    wanted = [(group, new_ids[0]) for group, new_ids in members.items()]
    stored = newest(wanted, 2 * smoothing.window)
    affected: list[int] = []
    for group, new_ids in members.items():
        before = stored.get(group, [])
        rows.add(group, before, whole=len(before) < 2 * smoothing.window)
        fresh = [memories[position[i]] for i in new_ids]
        rows.add(
            group,
            [
                (i, SessionRow(m.content, vectors[position[i]], ("", "")))
                for i, m in zip(new_ids, fresh, strict=True)
            ],
            whole=False,
        )
        affected += context.affected_by_insert(rows, group, new_ids, smoothing.window)
    context.refresh(rows, affected, smoothing)  # every session at once: one smoothing pass
    return rows


__all__ = [
    "IdTaken",
    "Mentions",
    "Named",
    "entity_keys",
    "first_spellings",
    "given_ids",
    "group_of",
    "memory_values",
    "mentions",
    "records",
    "session_context",
    "session_members",
    "sessions",
]


def check_vectors(memories: Sequence[NewMemory], vectors: Vectors, dim: int) -> None:
    """One vector of the store's width per memory, refused before anything is written."""
    if len(memories) != len(vectors):
        raise InvalidInput("one vector per memory is required")
    if len(vectors) and vectors.shape[1] != dim:
        raise InvalidInput(f"vectors must have {dim} dimensions, got {vectors.shape[1]}")


class IdTaken(InvalidInput):
    """A given id the store has given before (or passed: ids are never given twice)."""


def given_ids(ids: Sequence[int], count: int, next_id: int) -> list[int]:
    """Ids a caller gives a batch (a copy keeps its source's), held to what the store's own
    would be: one a memory, ascending (a session's newest has its highest id), none below the
    store's next (no id given twice, and a later write's own ids stay above them)."""
    given = [int(i) for i in ids]
    if len(given) != count:
        raise InvalidInput(f"{len(given)} ids given for {count} memories")
    if any(b <= a for a, b in pairwise(given)):
        raise InvalidInput("given ids must ascend")
    if given and given[0] < next_id:
        raise IdTaken(f"id {given[0]} is below this store's next id, {next_id}")
    return given
