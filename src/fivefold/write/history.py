"""What a batch does to the memories already stored, decided before it is written: an exact
repeat of a stored memory (or of one earlier in the batch) writes nothing and is counted as
seen again; a memory that gives a new value for what an older memory of its scope states
supersedes it (``frames.py`` decides, from what each one states), as does one the caller says
replaces another. Conversation turns are utterances: neither repeats nor supersessions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from fivefold.extract.frames import Statement, frames, slot_keys, supersedes
from fivefold.store.protocol import Reads
from fivefold.store.records import NewMemory, Supersedes
from fivefold.types import MemoryRecord, Scope

# Older memories of a slot weighed for each new one: the newest current ones.
SLOT_CANDIDATES = 16


@dataclass(frozen=True, slots=True)
class Repeat:
    """A batch position that repeats a stored memory, or an earlier position of the batch."""

    stored: MemoryRecord | None = None
    earlier: int | None = None


@dataclass(slots=True)
class Plan:
    """The batch as it will be written: the new memories (with their slots, supersessions and
    repeat counts) and, per position, what each item became."""

    fresh: list[NewMemory] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)  # of each fresh memory in the batch
    repeats: dict[int, Repeat] = field(default_factory=dict)

    @property
    def seen(self) -> list[tuple[str, int]]:
        """(namespace, id) of the stored memories the batch repeats, once per repeat."""
        return [
            (r.stored.namespace, r.stored.id) for r in self.repeats.values() if r.stored is not None
        ]


def plan(reads: Reads, batch: Sequence[NewMemory], *, dedup: bool, detect: bool) -> Plan:
    """Each memory of the batch: a repeat (``dedup``), or new, with what it supersedes
    (``detect``: what it states, against the older memories of its slots)."""
    stored = _stored_repeats(reads, batch) if dedup else {}
    out = Plan()
    fresh_by_key: dict[tuple[Scope, str], int] = {}  # an earlier fresh memory's index in out
    for position, memory in enumerate(batch):
        key = (memory.scope, memory.repeat_key or "")
        earlier = fresh_by_key.get(key) if dedup and memory.repeat_key else None
        if earlier is not None and _same(out.fresh[earlier], memory):
            out.fresh[earlier] = replace(out.fresh[earlier], seen=out.fresh[earlier].seen + 1)
            out.repeats[position] = Repeat(earlier=out.positions[earlier])
            continue
        found = stored.get(position)
        if found is not None:
            out.repeats[position] = Repeat(stored=found)
            continue
        if memory.repeat_key:
            fresh_by_key.setdefault(key, len(out.fresh))
        out.positions.append(position)
        out.fresh.append(memory)
    if detect:
        out.fresh = _superseding(reads, out.fresh)
    return out


def statement(content: str, said_at: datetime) -> Statement:
    """What ``frames`` reads of a memory's text, dated."""
    return Statement(content, frames(content), said_at)


def _stored_repeats(reads: Reads, batch: Sequence[NewMemory]) -> dict[int, MemoryRecord]:
    """Per position, the stored (current) memory it repeats exactly."""
    wanted: dict[Scope, set[str]] = {}
    for memory in batch:
        if memory.repeat_key:
            wanted.setdefault(memory.scope, set()).add(memory.repeat_key)
    out: dict[int, MemoryRecord] = {}
    for scope, keys in wanted.items():
        held = reads.repeats(scope, sorted(keys))
        ids = sorted({i for found in held.values() for i in found})
        records = reads.get_memories(scope.namespace, ids)
        for position, memory in enumerate(batch):
            if memory.scope != scope or not memory.repeat_key:
                continue
            for memory_id in held.get(memory.repeat_key, ()):
                record = records.get(memory_id)
                # A superseded memory said again is said anew: it may supersede in turn.
                if record is not None and record.superseded_by is None and _same(record, memory):
                    out[position] = record
                    break
    return out


def _same(held: MemoryRecord | NewMemory, new: NewMemory) -> bool:
    """Nothing new: the same type, predicate, date, metadata and speaker (the text and scope
    match by the repeat key)."""
    return (
        held.type is new.type
        and held.predicate == new.predicate
        and held.event_at == new.event_at
        and dict(held.metadata) == dict(new.metadata)
        and held.speaker == new.speaker
    )


def _superseding(reads: Reads, fresh: list[NewMemory]) -> list[NewMemory]:
    """Each new memory outside a session with its slots and what it supersedes: the current
    stored memories of its slots, then the ones earlier in the batch still current."""
    said = {i: statement(m.content, m.said_at) for i, m in enumerate(fresh) if not m.session_id}
    slots = {i: slot_keys(s.frames) for i, s in said.items()}
    stored = _slot_holders(reads, fresh, slots)
    current: dict[int, Statement] = {}  # batch positions not superseded within the batch
    # Earlier positions per (scope, slot), so a memory weighs only those sharing a slot.
    by_slot: dict[tuple[Scope, str], list[int]] = {}
    out = list(fresh)
    for i, memory in enumerate(fresh):
        if i not in said:
            continue
        new = said[i]
        told = {s.target for s in memory.supersedes}
        found = [
            Supersedes(old.id, decision.reason)
            for old in stored.get(i, ())
            if old.id not in told
            and old.said_at_ts <= new.said_at.timestamp()
            and (decision := supersedes(old.statement, new)) is not None
        ]
        earlier = []
        keys = [(memory.scope, key) for key in slots[i]]
        for j in sorted({j for key in keys for j in by_slot.get(key, ())}):
            old_statement = current.get(j)
            if old_statement is not None and (decision := supersedes(old_statement, new)):
                earlier.append(Supersedes(j, decision.reason))
                del current[j]
        current[i] = new
        for key in keys:
            by_slot.setdefault(key, []).append(i)
        out[i] = replace(
            memory,
            slots=slots[i],
            supersedes=memory.supersedes + tuple(found),
            supersedes_batch=tuple(earlier),
        )
    return out


@dataclass(frozen=True, slots=True)
class _Held:
    id: int
    statement: Statement
    said_at_ts: float


def _slot_holders(
    reads: Reads, fresh: Sequence[NewMemory], slots: Mapping[int, tuple[str, ...]]
) -> dict[int, list[_Held]]:
    """Per new memory, the newest current stored memories of its scope sharing a slot with
    it: one read of the holders per scope, each holder read and parsed once per batch."""
    keys_by_scope: dict[Scope, set[str]] = {}
    for i, keys in slots.items():
        keys_by_scope.setdefault(fresh[i].scope, set()).update(keys)
    by_slot = {
        scope: reads.slot_holders(scope, sorted(keys), SLOT_CANDIDATES)
        for scope, keys in keys_by_scope.items()
        if keys
    }
    wanted: dict[int, list[int]] = {}
    for i, keys in slots.items():
        holders = by_slot.get(fresh[i].scope, {})
        found = {j for key in keys for j in holders.get(key, ())}
        wanted[i] = sorted(found, reverse=True)[:SLOT_CANDIDATES]
    ids_by_namespace: dict[str, set[int]] = {}
    for i, ids in wanted.items():
        ids_by_namespace.setdefault(fresh[i].scope.namespace, set()).update(ids)
    held: dict[tuple[str, int], _Held] = {}
    for namespace, held_ids in ids_by_namespace.items():
        for r in reads.get_memories(namespace, sorted(held_ids)).values():
            at = r.event_at or r.created_at
            held[namespace, r.id] = _Held(r.id, statement(r.content, at), at.timestamp())
    out: dict[int, list[_Held]] = {}
    for i, ids in wanted.items():
        namespace = fresh[i].scope.namespace
        out[i] = [held[namespace, j] for j in ids if (namespace, j) in held]
    return out
