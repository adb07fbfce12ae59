"""Which candidates a query favours: those inside its time window, and those a person it names
said. Fusion boosts them; learned fusion reads them as features."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from fivefold.store.records import MemoryAttributes
from fivefold.text import normalize_name
from fivefold.types import ParsedQuery


def dated_within(query: ParsedQuery, attributes: Mapping[int, MemoryAttributes]) -> set[int]:
    """Candidates dated (or, undated, recorded) inside the query's time window."""
    window = query.temporal_window
    if window is None:
        return set()
    return {i for i, a in attributes.items() if window.start <= when(a) <= window.end}


def spoken_by_named(query: ParsedQuery, attributes: Mapping[int, MemoryAttributes]) -> set[int]:
    """Candidates whose speaker is a person the query names: by the entity's name, the words
    the query used for it, or its first name ("Caroline" for "Caroline Diaz")."""
    names: set[str] = set()
    for ref in query.entity_refs:
        for text in (ref.name, ref.text):
            norm = normalize_name(text)
            if norm:
                names.update((norm, norm.split()[0]))
    if not names:
        return set()
    return {
        i
        for i, a in attributes.items()
        if a.speaker is not None and normalize_name(a.speaker) in names
    }


def when(attributes: MemoryAttributes) -> datetime:
    """When a memory happened, or else when it was recorded: an undated memory is placed in
    time by its recording."""
    return attributes.event_at or attributes.created_at
