"""Recall with time in mind: a question about the present is answered by the current statement
of a fact, a question about the past may be answered by what held then.

For the present, a superseded candidate yields its place to the memory that superseded it (the
newest of its chain: brought in when no leg found it, with the evidence that found the older
one) and sinks below it. For the past, a candidate that replaced a memory brings that memory in
just above itself ("where did I work before St Brigid's?" finds the statement St Brigid's
replaced); nothing sinks. ``include_superseded=False`` leaves the superseded out entirely.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import numpy as np

from fivefold.extract.frames import frames, slot_keys
from fivefold.extract.topic import same_topic
from fivefold.read.fuse import Fused
from fivefold.store.protocol import Reads, Store
from fivefold.store.records import MemoryAttributes
from fivefold.text import update_cue
from fivefold.types import MemoryRecord, Scope

# A superseded memory keeps this share of its score for a question about the present: found
# still, below what replaced it.
SUPERSEDED_WEIGHT = 0.5
# Chains are short; a longer walk is a store edited by hand into a loop.
MAX_CHAIN = 16
# A statement that says it changed, or speaks of the same thing, is weighed against the ones
# ranked above it among this many, and moves above one it is at least this similar to: two facts
# that coexist ("Pieter's extension", "Noor's extension") are as similar as a fact and its
# change, and rarely say "now" or "moved" or pass ``same_topic``.
SIBLING_DEPTH = 10
SIBLING_SIMILARITY = 0.6


def follow(
    ranked: Sequence[Fused],
    attributes: Mapping[int, MemoryAttributes],
    read: Callable[[Sequence[int]], Mapping[int, MemoryAttributes]],
    replaced: Callable[[Sequence[int]], Mapping[int, Sequence[int]]],
    *,
    past: bool,
    include_superseded: bool,
) -> tuple[list[Fused], dict[int, int]]:
    """The ranking after the history policy, and per superseded memory kept, the current
    memory that replaced it. ``read``: attributes of memories not among the candidates;
    ``replaced``: per memory, the ones it superseded."""
    known = dict(attributes)
    current = _current_of([f.id for f in ranked if _superseded(known.get(f.id))], known, read)
    if past and include_superseded:
        return _with_predecessors(ranked, replaced), current
    out: dict[int, Fused] = {}
    for fused in ranked:
        newest = current.get(fused.id)
        if newest is None:
            if fused.id not in out or out[fused.id].score < fused.score:
                out[fused.id] = fused
            continue
        standing = out.get(newest)
        if standing is None or standing.score < fused.score:
            # The current statement takes over the standing of the one it replaced.
            out[newest] = Fused(newest, fused.score, fused.terms)
        if include_superseded and not past:
            kept = Fused(fused.id, fused.score * SUPERSEDED_WEIGHT, fused.terms)
            out[fused.id] = kept
    ranking = sorted(out.values(), key=lambda f: (-f.score, f.id))
    if not include_superseded:
        ranking = [f for f in ranking if f.id not in current]
    return ranking, {i: c for i, c in current.items() if i in out}


def _with_predecessors(
    ranked: Sequence[Fused], replaced: Callable[[Sequence[int]], Mapping[int, Sequence[int]]]
) -> list[Fused]:
    """Each memory a candidate replaced, ranked just above that candidate (or where it stood,
    when higher)."""
    older = replaced([f.id for f in ranked])
    if not older:
        return list(ranked)
    out = {f.id: f for f in ranked}
    for fused in ranked:
        for memory_id in older.get(fused.id, ()):
            standing = out.get(memory_id)
            above = math.nextafter(fused.score, math.inf)
            if standing is None or standing.score < above:
                out[memory_id] = Fused(memory_id, above, fused.terms)
    return sorted(out.values(), key=lambda f: (-f.score, f.id))


def _superseded(found: MemoryAttributes | None) -> bool:
    return found is not None and found.superseded_by is not None


def _current_of(
    ids: Sequence[int],
    known: dict[int, MemoryAttributes],
    read: Callable[[Sequence[int]], Mapping[int, MemoryAttributes]],
) -> dict[int, int]:
    """Per superseded memory, the newest memory of its chain (a forgotten link ends it)."""
    out: dict[int, int] = {}
    for memory_id in ids:
        at, steps = memory_id, 0
        while (next_id := known[at].superseded_by) is not None and steps < MAX_CHAIN:
            if next_id not in known:
                known.update(read([next_id]))
                if next_id not in known:
                    break
            at, steps = next_id, steps + 1
        if at != memory_id:
            out[memory_id] = at
    return out


def chain(reads: Reads, record: MemoryRecord) -> list[MemoryRecord]:
    """A memory's supersession chain, oldest first: the memories it replaced (and theirs), it,
    and the memories that replaced it in turn."""
    namespace = record.namespace
    found = {record.id: record}
    frontier = [record.id]
    while frontier and len(found) < MAX_CHAIN * 4:
        replaced = reads.replaced(namespace, frontier)
        older = [i for ids in replaced.values() for i in ids if i not in found]
        found.update(reads.get_memories(namespace, older))
        frontier = [i for i in older if i in found]
    at = record
    for _ in range(MAX_CHAIN):
        if at.superseded_by is None or at.superseded_by in found:
            break
        newer = reads.get_memories(namespace, [at.superseded_by]).get(at.superseded_by)
        if newer is None:
            break
        found[newer.id] = at = newer
    return sorted(found.values(), key=lambda r: (r.event_at or r.created_at, r.id))


def newer_first(
    ranked: Sequence[Fused],
    attributes: Mapping[int, MemoryAttributes],
    store: Store,
    scope: Scope,
) -> tuple[list[Fused], int]:
    """For a question about the present: a newer statement that says it changed ("we moved",
    "now", "instead"), or that speaks of the same thing in other words ("Handicap 19 after the
    spring season" after "My handicap is 21"), goes just above a similar older statement the
    write path did not link to it and did not judge (``_siblings``). The ranking, and how many
    moved. Conversation turns (they have a speaker) and superseded
    memories take no part: a turn is no statement of a fact, and a superseded memory has its
    successor already.
    """
    head = [
        f
        for f in ranked[:SIBLING_DEPTH]
        if (a := attributes.get(f.id)) is not None and a.speaker is None and a.superseded_by is None
    ]
    if len(head) < 2:
        return list(ranked), 0
    said = store.reads.get_memories(scope.namespace, [f.id for f in head])
    cued = {f.id for f in head if f.id in said and update_cue(said[f.id].content)}
    vector = store.search.vectors(scope.namespace, [f.id for f in head])
    scores = {f.id: f.score for f in ranked}
    moved = 0
    # Oldest first, each above its older siblings as they stand by then: of a chain of three,
    # the middle one goes above the oldest and the newest above both, whatever order they
    # were found in.
    for newer in sorted(head, key=lambda f: _when(attributes[f.id])):
        if newer.id not in vector or newer.id not in said:
            continue
        when = _when(attributes[newer.id])
        above = [
            scores[older.id]
            for older in head
            if older.id in vector
            and older.id in said
            and _when(attributes[older.id]) < when
            and scores[older.id] >= scores[newer.id]
            and _same_owner(said[older.id], said[newer.id])
            and _siblings(
                said[older.id].content,
                said[newer.id].content,
                float(np.dot(vector[older.id], vector[newer.id])),
                cued=newer.id in cued,
            )
        ]
        if above:
            scores[newer.id] = math.nextafter(max(above), math.inf)
            moved += 1
    if not moved:
        return list(ranked), 0
    out = [Fused(f.id, scores[f.id], f.terms) for f in ranked]
    return sorted(out, key=lambda f: (-f.score, f.id)), moved


def _siblings(older: str, newer: str, similarity: float, *, cued: bool) -> bool:
    """Whether a newer statement this similar to an older one is its change, where the write
    path has not judged the pair (it reads no value of one slot from both): it says it changed
    and the write path could not read one of the two, or it speaks of the same thing."""
    if similarity < SIBLING_SIMILARITY or _judged(older, newer):
        return False
    if cued and not (_read(older) and _read(newer)):
        return True
    return same_topic(older, newer)


def _same_owner(older: MemoryRecord, newer: MemoryRecord) -> bool:
    """One user's and one agent's: a recall across users is no place to read one user's words as
    the change of another's."""
    return (older.user_id, older.agent_id) == (newer.user_id, newer.agent_id)


def _judged(older: str, newer: str) -> bool:
    return bool(set(_slots(older)) & set(_slots(newer)))


@functools.lru_cache(maxsize=4096)  # the same candidates come back for recall after recall
def _slots(text: str) -> tuple[str, ...]:
    return slot_keys(frames(text))


@functools.lru_cache(maxsize=4096)  # the same candidates come back for recall after recall
def _read(text: str) -> bool:
    """Whether the write path reads anything the text states: of two statements it reads, an
    update cue alone does not say which thing changed."""
    return bool(frames(text))


def _when(attributes: MemoryAttributes) -> datetime:
    return attributes.event_at or attributes.created_at
