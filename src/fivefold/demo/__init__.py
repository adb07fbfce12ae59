"""The bundled demo corpus: a few hundred memories of a fictional engineer, Sam Okafor, over six
months, with an org chart, codenamed projects, dated events, preferences and identifiers, plus
queries of every kind the optimizer plans for, each with the memory that should come first."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from fivefold.memory import Memory

NAMESPACE = "demo"
# The demo's "today": its queries ("last Tuesday", "yesterday") are read against this moment.
NOW = datetime(2026, 3, 20, 17, 0, tzinfo=UTC)
# Undated memories (facts, preferences) are taken as known since the corpus starts.
EPOCH = datetime(2025, 9, 1, 9, 0, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class DemoQuery:
    query: str
    kind: str
    expect: str | None


def _read(name: str) -> str:
    return resources.files("fivefold.demo").joinpath(name).read_text(encoding="utf-8")


def memories() -> list[dict[str, Any]]:
    items = [json.loads(line) for line in _read("memories.jsonl").splitlines() if line.strip()]
    # Session times come from the events said in them, so "since we last talked" has a
    # session log that matches the story rather than the moment the demo was loaded.
    session_time: dict[str, str] = {}
    for item in items:
        if item.get("session_id") and item.get("event_at"):
            previous = session_time.get(item["session_id"], "")
            session_time[item["session_id"]] = max(previous, item["event_at"])
    for item in items:
        item["created_at"] = (
            item.get("event_at") or session_time.get(item.get("session_id", "")) or EPOCH
        )
    return items


def queries() -> list[DemoQuery]:
    return [
        DemoQuery(q["query"], q["kind"], q.get("expect")) for q in json.loads(_read("queries.json"))
    ]


def load(mem: Memory, *, namespace: str = NAMESPACE) -> int:
    """Load the corpus into ``mem``: aliases first (so extraction maps "Priya" to "Priya
    Patel"), then memories in one batch, then the relations (their facts are already memories,
    so the edges are added without recording new ones). Returns the number of memories."""
    graph = json.loads(_read("relations.json"))
    for name, alias in graph["aliases"]:
        mem.alias(name, alias, namespace=namespace)
    items = memories()
    mem.remember_many([{**item, "namespace": namespace} for item in items])
    for rel in graph["relations"]:
        mem.relate(
            rel["source"],
            rel["relation"],
            rel["target"],
            kind=rel.get("kind", "structural"),
            confidence=rel.get("confidence", 1.0),
            valid_from=rel.get("valid_from"),
            valid_to=rel.get("valid_to"),
            namespace=namespace,
            record=False,
        )
    return len(items)


def first_hit_matches(contents: Sequence[str], expect: str | None) -> bool | None:
    """Whether the first hit is the expected memory; None when the query has no single answer."""
    if expect is None:
        return None
    return bool(contents) and expect in contents[0]
